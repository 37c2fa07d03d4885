// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "hw/machine.h"
#include "kvm-internal.h"
#include "util/log.h"

void kvm_vcpu_stop(struct kvm_vcpu *v, const char *fmt, ...)
{
	char why[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	v->vm->m->shutdown(v->vm->m, BRISK_EXIT_FAILURE, why);
}

int kvm_vcpu_init(struct kvm_vm *vm, struct kvm_vcpu *v,
		  const struct cpu_entry *entry)
{
	const char *what;

	v->vm = vm;
	v->id = v - vm->vcpus;
	what = "KVM_CREATE_VCPU";
	v->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, (unsigned long)v->id);
	if (v->fd < 0)
		goto fail;
	what = "mmap of kvm_run";
	v->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      v->fd, 0);
	if (v->run == MAP_FAILED)
		goto fail;
	return kvm_arch_vcpu_init(v, entry);
fail:
	error_report("vCPU %u: %s failed: %s", v->id, what, strerror(errno));
	return -1;
}

static void vcpu_mmio(struct kvm_vcpu *v)
{
	struct kvm_run *run = v->run;
	struct bus *mmio = &v->vm->m->mmio;
	unsigned len = run->mmio.len;
	uint64_t addr = run->mmio.phys_addr, val = 0;

	if (len > sizeof(run->mmio.data) || len == 0) {
		kvm_vcpu_stop(v, "vCPU %u: malformed MMIO exit", v->id);
		return;
	}
	if (len == 1 || len == 2 || len == 4 || len == 8) {
		if (run->mmio.is_write) {
			memcpy(&val, run->mmio.data, len);
			bus_write(mmio, addr, val, len);
		} else {
			bus_read(mmio, addr, &val, len);
			memcpy(run->mmio.data, &val, len);
		}
		return;
	}
	/* Odd-sized pieces of a split access: byte by byte. */
	for (unsigned i = 0; i < len; i++) {
		if (run->mmio.is_write) {
			bus_write(mmio, addr + i, run->mmio.data[i], 1);
		} else {
			bus_read(mmio, addr + i, &val, 1);
			run->mmio.data[i] = val;
		}
	}
}

/* False once the vCPU must stop. */
static bool vcpu_exit(struct kvm_vcpu *v)
{
	struct kvm_run *run = v->run;
	struct machine *m = v->vm->m;

	switch (run->exit_reason) {
	case KVM_EXIT_MMIO:
		vcpu_mmio(v);
		return true;
	case KVM_EXIT_INTR:
		return true;
	case KVM_EXIT_SYSTEM_EVENT:
		/* PSCI SYSTEM_OFF/RESET on arm64; reset is no restart either. */
		if (run->system_event.type == KVM_SYSTEM_EVENT_CRASH)
			m->shutdown(m, BRISK_EXIT_FAILURE, "guest crashed");
		else
			m->shutdown(m, BRISK_EXIT_OK, NULL);
		return false;
	case KVM_EXIT_INTERNAL_ERROR:
		kvm_vcpu_stop(v, "vCPU %u: KVM internal error, suberror %u", v->id,
			      run->internal.suberror);
		return false;
	default:
		return kvm_arch_vcpu_exit(v);
	}
}

void *kvm_vcpu_thread(void *opaque)
{
	struct kvm_vcpu *v = opaque;
	struct kvm_vm *vm = v->vm;
	sigset_t kick;

	sigemptyset(&kick);
	sigaddset(&kick, SIG_VCPU_KICK);
	pthread_sigmask(SIG_UNBLOCK, &kick, NULL);
	while (!__atomic_load_n(&vm->stopping, __ATOMIC_SEQ_CST)) {
		if (ioctl(v->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			kvm_vcpu_stop(v, "vCPU %u: KVM_RUN failed: %s", v->id,
				  strerror(errno));
			break;
		}
		if (!vcpu_exit(v))
			break;
	}
	/* One ioctl at the end; kvm_vm_stop() reports it for a -timeout. */
	v->vm->stops[v->id].known = kvm_arch_vcpu_pc(v, &v->vm->stops[v->id].pc) == 0;
	return NULL;
}
