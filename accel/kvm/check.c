// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Is /dev/kvm worth booting on?  Opening it proves little: kvm_pvm, for
 * one, answers every query, yet runs only PVM-enabled kernels at hardware
 * speed and emulates anything else instruction by instruction (~1000x
 * slower), so an ordinary kernel spins silently for hours.  What decides
 * is a guest: a tiny loop entered exactly as brisk enters Linux, timed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "accel/kvm-arch.h"
#include "hw/machine.h"
#include "kvm-internal.h"
#include "util/clock.h"
#include "util/log.h"

/* Past this a run is cut short: no answer in time is an answer too. */
#define CHECK_RUN_CAP_NS (300 * 1000000ull)
#define CHECK_TRIES 3
#define CHECK_RAM (2u << 20)

static void timer_arm(timer_t t, uint64_t first_ns)
{
	/* Repeats, so a kick that lands just before KVM_RUN is not lost. */
	struct itimerspec its = {
		.it_value = { first_ns / 1000000000, first_ns % 1000000000 },
		.it_interval = { 0, 10 * 1000000 },
	};

	timer_settime(t, 0, &its, NULL);
}

/*
 * One run of the loop, from the entry state.  Returns its time in ns, 0
 * when it did not reach its OUT in time, -1 after saying why in c->why.
 */
static int64_t run_once(struct kvm_vcpu *v, const struct kvm_check_guest *g,
			const struct cpu_entry *entry, timer_t t,
			struct kvm_check *c)
{
	struct kvm_run *run = v->run;
	uint64_t t0, elapsed;

	if (kvm_arch_set_entry(v, entry)) {
		snprintf(c->why, sizeof(c->why),
			 "cannot set the test guest's registers: %s", strerror(errno));
		return -1;
	}
	timer_arm(t, CHECK_RUN_CAP_NS);
	t0 = clock_now_ns();
	for (;;) {
		int r = ioctl(v->fd, KVM_RUN, 0);

		elapsed = clock_now_ns() - t0;
		if (elapsed >= CHECK_RUN_CAP_NS)
			break;
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0) {
			snprintf(c->why, sizeof(c->why),
				 "KVM_RUN of a test guest failed: %s", strerror(errno));
			break;
		}
		if (kvm_arch_check_done(v, g->done_addr)) {
			timer_arm(t, 0);
			return elapsed ? (int64_t)elapsed : 1;
		}
		if (run->exit_reason == KVM_EXIT_INTERNAL_ERROR) {
			snprintf(c->why, sizeof(c->why),
				 "a plain test guest ended in a KVM "
				 "internal error (suberror %u)",
				 run->internal.suberror);
			break;
		}
		if (run->exit_reason != KVM_EXIT_INTR) {
			snprintf(c->why, sizeof(c->why),
				 "a test guest stopped with KVM exit "
				 "reason %u instead of its final write",
				 run->exit_reason);
			break;
		}
	}
	struct itimerspec off = { 0 };

	timer_settime(t, 0, &off, NULL);
	return c->why[0] ? -1 : 0;
}

/* The one line that says what backs /dev/kvm and what it means. */
static void judge(struct kvm_check *c, const struct kvm_check_guest *g,
		  int64_t best)
{
	char took[200];

	c->loop_ns = best > 0 ? (uint64_t)best : 0;
	c->usable = !c->why[0] && best > 0 && (uint64_t)best <= kvm_arch_check_limit_ns;
	if (c->why[0])
		snprintf(took, sizeof(took), "%s", c->why);
	else if (best > 0)
		snprintf(took, sizeof(took), "a test guest took %.2f ms for %u "
			 "loop iterations", best / 1e6, g->loops);
	else
		snprintf(took, sizeof(took), "a test guest did not finish %u "
			 "loop iterations in %llu ms", g->loops,
			 (unsigned long long)(CHECK_RUN_CAP_NS / 1000000));
	if (c->usable)
		snprintf(c->verdict, sizeof(c->verdict),
			 "/dev/kvm is %s: it runs ordinary guests (%s)",
			 kvm_arch_module_words(c), took);
	else if (!strcmp(c->module, "kvm_pvm"))
		snprintf(c->verdict, sizeof(c->verdict),
			 "/dev/kvm is %s: it runs only PVM-enabled guest kernels "
			 "(%s); use a host with kvm_intel/kvm_amd or nested "
			 "virtualization", kvm_arch_module_words(c), took);
	else
		snprintf(c->verdict, sizeof(c->verdict),
			 "/dev/kvm is %s but cannot run ordinary guests at "
			 "hardware speed (%s); use a host with %s or nested "
			 "virtualization", kvm_arch_module_words(c), took,
			 kvm_arch_hw_virt);
}

/* Whether another run could change the answer. */
static bool worth_another(int64_t best)
{
	/* A run cut short at the cap is answer enough; so is a fast one. */
	return best > 0 && (uint64_t)best > kvm_arch_check_limit_ns;
}

static int check_guest(struct kvm_check *c, const struct kvm_check_guest *g)
{
	struct machine m = { .ncpus = 1 };
	struct cpu_entry entry_state = { 0 }, *entry = &entry_state;
	struct kvm_vm *vm = kvm_vm_new(&m, CHECK_RAM);
	struct sigevent sev = {
		.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIG_VCPU_KICK,
		._sigev_un._tid = (pid_t)syscall(SYS_gettid),
	};
	timer_t t;
	int64_t best = 0;

	if (!vm)
		return -1;
	c->nested_state = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION,
				KVM_CAP_NESTED_STATE);
	if (kvm_vm_add_ram(vm, 0, CHECK_RAM) || g->load(&m.mem, entry) ||
	    kvm_vcpus_create(vm, entry)) {
		kvm_vm_free(vm);
		return -1;
	}
	if (timer_create(CLOCK_MONOTONIC, &sev, &t)) {
		error_report("timer_create: %s", strerror(errno));
		kvm_vm_free(vm);
		return -1;
	}
	/*
	 * The first run also pays for faulting in the guest's pages, and a
	 * busy host can stall any one run: the best of a few is the loop's
	 * own speed.
	 */
	for (unsigned i = 0; i < CHECK_TRIES; i++) {
		int64_t ns = run_once(&vm->vcpus[0], g, entry, t, c);

		if (ns < 0)
			break;
		if (i == 0 || (ns > 0 && ns < best))
			best = ns;
		if (!worth_another(best))
			break;
	}
	timer_delete(t);
	kvm_vm_free(vm);
	judge(c, g, best);
	return 0;
}

int kvm_check(struct kvm_check *c, const struct kvm_check_guest *g)
{
	*c = (struct kvm_check){ .nested_state = -1 };
	kvm_arch_check_host(c);
	return check_guest(c, g);
}
