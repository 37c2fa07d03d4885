// SPDX-License-Identifier: GPL-2.0-or-later
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hw/machine.h"
#include "kvm-internal.h"
#include "util/log.h"

static void kick_handler(int sig)
{
	(void)sig;
}

/* What every architecture needs; kvm_arch_caps adds its own. */
static const struct kvm_cap_req required_caps[] = {
	{ KVM_CAP_USER_MEMORY, "USER_MEMORY" },
	{ KVM_CAP_IRQ_ROUTING, "IRQ_ROUTING" },
	{ KVM_CAP_IRQFD, "IRQFD" },
	{ KVM_CAP_IOEVENTFD, "IOEVENTFD" },
	{ KVM_CAP_IMMEDIATE_EXIT, "IMMEDIATE_EXIT" },
};

static int check_caps(struct kvm_vm *vm, const struct kvm_cap_req *caps,
		      unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, caps[i].cap) <= 0) {
			error_report("this KVM lacks KVM_CAP_%s, which brisk needs",
				     caps[i].name);
			return -1;
		}
	}
	return 0;
}

static int kvm_open(struct kvm_vm *vm)
{
	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0) {
		if (errno == ENOENT)
			error_report("no /dev/kvm: load kvm_intel or kvm_amd, or run "
				     "through tests/kvm/with-kvm");
		else
			error_report("cannot open /dev/kvm: %s (are you in the kvm "
				     "group?)", strerror(errno));
		return -1;
	}
	int version = ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0);

	if (version < 0) {
		error_report("/dev/kvm is not a KVM device (%s): load kvm_intel "
			     "or kvm_amd, or run through tests/kvm/with-kvm",
			     strerror(errno));
		return -1;
	}
	if (version != KVM_API_VERSION) {
		error_report("/dev/kvm speaks API version %d, brisk needs %d",
			     version, KVM_API_VERSION);
		return -1;
	}
	if (check_caps(vm, required_caps, ARRAY_SIZE(required_caps)) ||
	    check_caps(vm, kvm_arch_caps, kvm_arch_nr_caps))
		return -1;
	int size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);

	if (size < (int)sizeof(struct kvm_run)) {
		error_report("KVM_GET_VCPU_MMAP_SIZE failed: %s", strerror(errno));
		return -1;
	}
	vm->run_size = size;
	return 0;
}


static int kvm_create_vm(struct kvm_vm *vm, uint64_t ram_end)
{
	int type = kvm_arch_vm_type(vm, ram_end);

	if (type < 0)
		return -1;
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, (unsigned long)type);
	if (vm->vm_fd < 0) {
		error_report("KVM_CREATE_VM failed: %s", strerror(errno));
		return -1;
	}
	fcntl(vm->vm_fd, F_SETFD, FD_CLOEXEC);
	return kvm_arch_vm_init(vm);
}

static void kvm_shutdown(struct machine *m, int status, const char *why)
{
	struct kvm_vm *vm = m->priv;
	uint64_t one = 1;

	pthread_mutex_lock(&vm->stop_lock);
	if (vm->stopping) {
		pthread_mutex_unlock(&vm->stop_lock);
		return;
	}
	__atomic_store_n(&vm->stopping, true, __ATOMIC_SEQ_CST);
	vm->status = status;
	snprintf(vm->why, sizeof(vm->why), "%s", why ? why : "");
	/*
	 * immediate_exit before the signal: a vCPU that has not yet entered
	 * KVM_RUN returns from it at once, one inside is kicked out.
	 */
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct kvm_vcpu *v = &vm->vcpus[i];

		if (!v->started)
			continue;
		__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
		pthread_kill(v->thread, SIG_VCPU_KICK);
	}
	pthread_mutex_unlock(&vm->stop_lock);
	if (write(vm->done_fd, &one, sizeof(one)) < 0)
		abort();	/* an eventfd write of 1 cannot fail */
}

struct kvm_vm *kvm_vm_new(struct machine *m, uint64_t ram_end)
{
	struct kvm_vm *vm = calloc(1, sizeof(*vm));
	struct sigaction sa = { .sa_handler = kick_handler };

	if (!vm) {
		error_report("out of memory");
		return NULL;
	}
	vm->m = m;
	vm->kvm_fd = vm->vm_fd = -1;
	pthread_mutex_init(&vm->stop_lock, NULL);
	vm->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* No SA_RESTART: the kick must make KVM_RUN fail with EINTR. */
	sigemptyset(&sa.sa_mask);
	if (vm->done_fd < 0 || sigaction(SIG_VCPU_KICK, &sa, NULL)) {
		error_report("cannot set up vCPU signalling: %s", strerror(errno));
		goto fail;
	}
	if (kvm_open(vm) || kvm_create_vm(vm, ram_end) ||
	    kvm_irq_init(vm))
		goto fail;
	m->priv = vm;
	m->shutdown = kvm_shutdown;
	m->stop_fd = vm->done_fd;
	return vm;
fail:
	kvm_vm_free(vm);
	return NULL;
}

unsigned kvm_max_vcpus(struct kvm_vm *vm)
{
	int n = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_MAX_VCPUS);

	if (n <= 0)
		n = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_NR_VCPUS);
	return n > 0 ? (unsigned)n : 4;
}

int kvm_vm_add_ram(struct kvm_vm *vm, uint64_t gpa, uint64_t size)
{
	int fd = -1;
	void *hva = vm->m->ram_shared ? guest_ram_alloc_shared(size, &fd) :
		    guest_ram_alloc(size);

	if (!hva) {
		error_report("cannot allocate %llu MiB of %sguest RAM: %s",
			     (unsigned long long)(size >> 20),
			     vm->m->ram_shared ? "shared " : "", strerror(errno));
		return -1;
	}

	struct kvm_userspace_memory_region r = {
		.slot = vm->nr_slots, .guest_phys_addr = gpa,
		.memory_size = size, .userspace_addr = (uintptr_t)hva,
	};

	if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0) {
		error_report("KVM_SET_USER_MEMORY_REGION failed: %s", strerror(errno));
		munmap(hva, size);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (guest_mem_add_fd(&vm->m->mem, gpa, size, hva, fd, 0)) {
		error_report("too many guest RAM regions");
		return -1;
	}
	vm->nr_slots++;
	return 0;
}

int kvm_vcpus_create(struct kvm_vm *vm, const struct cpu_entry *entry)
{
	unsigned n = vm->m->ncpus, max = kvm_max_vcpus(vm);

	if (n == 0 || n > max) {
		error_report("-smp %u: this host's KVM allows 1 to %u vCPUs", n, max);
		return -1;
	}
	vm->vcpus = calloc(n, sizeof(*vm->vcpus));
	vm->stops = calloc(n, sizeof(*vm->stops));
	if (!vm->vcpus || !vm->stops) {
		error_report("out of memory");
		return -1;
	}
	for (unsigned i = 0; i < n; i++) {
		vm->vcpus[i].fd = -1;
		vm->vcpus[i].run = MAP_FAILED;
	}
	vm->nr_vcpus = n;
	for (unsigned i = 0; i < n; i++)
		if (kvm_vcpu_init(vm, &vm->vcpus[i], i == 0 ? entry : NULL))
			return -1;
	return kvm_arch_vcpus_ready(vm);
}

int kvm_vcpus_start(struct kvm_vm *vm)
{
	int ret = 0;

	pthread_mutex_lock(&vm->stop_lock);
	for (unsigned i = 0; i < vm->nr_vcpus && !vm->stopping; i++) {
		struct kvm_vcpu *v = &vm->vcpus[i];

		ret = pthread_create(&v->thread, NULL, kvm_vcpu_thread, v);
		if (ret) {
			error_report("cannot start vCPU thread: %s", strerror(ret));
			ret = -1;
			break;
		}
		v->started = true;
	}
	pthread_mutex_unlock(&vm->stop_lock);
	return ret;
}

int kvm_vm_done_fd(struct kvm_vm *vm)
{
	return vm->done_fd;
}

/*
 * A guest that ran out of time is a hang someone must find: its line
 * says where each vCPU was (an idle loop waiting for an interrupt, a
 * spin, a fault loop), with as many vCPUs as the line holds.
 */
void kvm_why_add_places(char *why, size_t size, const struct kvm_vcpu_place *p,
			unsigned n)
{
	/* What a cut line ends with; each entry leaves room for it. */
	static const char cut[] = ", ...)";
	size_t len = strlen(why);
	bool any = false;

	assert(len < size);
	for (unsigned i = 0; i < n; i++) {
		char one[48];
		int k;

		if (!p[i].known)
			continue;
		k = snprintf(one, sizeof(one), "%svCPU %u at 0x%llx", any ? ", " : " (", i,
			     (unsigned long long)p[i].pc);
		if (len + (size_t)k + sizeof(cut) > size) {
			/* " (...)" is as long as cut: it fits wherever an entry did. */
			if (len + sizeof(cut) <= size)
				memcpy(why + len, any ? cut : " (...)", sizeof(cut));
			return;
		}
		memcpy(why + len, one, (size_t)k + 1);
		len += (size_t)k;
		any = true;
	}
	if (any)
		memcpy(why + len, ")", 2);
}

int kvm_vm_stop(struct kvm_vm *vm, const char **why)
{
	/* Also the error path: a VM nobody shut down stops as a failure. */
	kvm_shutdown(vm->m, BRISK_EXIT_FAILURE, NULL);
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i].started)
			pthread_join(vm->vcpus[i].thread, NULL);
	if (vm->status == BRISK_EXIT_TIMEOUT)
		kvm_why_add_places(vm->why, sizeof(vm->why), vm->stops, vm->nr_vcpus);
	*why = vm->why[0] ? vm->why : NULL;
	return vm->status;
}

void kvm_vm_free(struct kvm_vm *vm)
{
	if (!vm)
		return;
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct kvm_vcpu *v = &vm->vcpus[i];

		assert(!v->started || vm->stopping);
		if (v->run != MAP_FAILED)
			munmap(v->run, vm->run_size);
		if (v->fd >= 0)
			close(v->fd);
	}
	free(vm->vcpus);
	free(vm->stops);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	for (unsigned i = 0; i < vm->m->mem.nr_regions; i++) {
		munmap(vm->m->mem.region[i].hva, vm->m->mem.region[i].size);
		if (vm->m->mem.region[i].fd >= 0)
			close(vm->m->mem.region[i].fd);
	}
	vm->m->mem.nr_regions = 0;
	if (vm->routing)
		kvm_irq_fini(vm);
	if (vm->done_fd >= 0)
		close(vm->done_fd);
	kvm_arch_vm_free(vm);
	pthread_mutex_destroy(&vm->stop_lock);
	free(vm);
}
