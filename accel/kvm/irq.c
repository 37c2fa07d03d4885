// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * struct irq_ops on KVM's in-kernel irqchip.  Legacy lines go through
 * KVM_IRQ_LINE; MSIs are GSI routes fed by irqfds, so a device thread
 * raises an interrupt with one eventfd write and no vCPU exit.
 *
 * KVM_SET_GSI_ROUTING replaces the whole table, so every commit re-sends
 * the architecture's fixed routes (accel/kvm/<arch>/irq.c) ahead of the
 * MSI routes, which take GSIs from kvm_arch_first_msi_gsi up.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "hw/machine.h"
#include "kvm-internal.h"
#include "util/log.h"

static void kvm_set_irq(void *opaque, unsigned line, int level)
{
	struct kvm_vm *vm = opaque;

	if (kvm_arch_irq_line(vm, line, level) < 0)
		error_report_once(&vm->irq_line_failed, "KVM_IRQ_LINE(%u) failed: %s",
				  line, strerror(errno));
}

static int kvm_routes_commit(struct kvm_vm *vm)
{
	struct kvm_irq_routing *r = vm->routing;
	unsigned n = kvm_arch_fixed_routes(r->entries);

	for (unsigned i = 0; i < KVM_NR_MSI_ROUTES; i++) {
		const struct kvm_msi_route *m = &vm->msi[i];

		if (!m->used)
			continue;
		r->entries[n++] = (struct kvm_irq_routing_entry){
			.gsi = kvm_arch_first_msi_gsi + i, .type = KVM_IRQ_ROUTING_MSI,
			.flags = kvm_arch_msi_devid ? KVM_MSI_VALID_DEVID : 0,
			.u.msi = { .address_lo = (uint32_t)m->addr,
				   .address_hi = m->addr >> 32, .data = m->data,
				   .devid = kvm_arch_msi_devid ? m->devid : 0 },
		};
	}
	r->nr = n;
	r->flags = 0;
	return ioctl(vm->vm_fd, KVM_SET_GSI_ROUTING, r) < 0 ? -1 : 0;
}

static int kvm_irqfd(struct kvm_vm *vm, unsigned i, bool assign)
{
	struct kvm_irqfd f = {
		.fd = vm->msi[i].efd, .gsi = kvm_arch_first_msi_gsi + i,
		.flags = assign ? 0 : KVM_IRQFD_FLAG_DEASSIGN,
	};

	return ioctl(vm->vm_fd, KVM_IRQFD, &f) < 0 ? -1 : 0;
}

static int kvm_msi_route_add(void *opaque, int efd, uint64_t addr, uint32_t data,
			     uint32_t devid)
{
	struct kvm_vm *vm = opaque;
	int ret = -1;

	pthread_mutex_lock(&vm->route_lock);
	for (unsigned i = 0; i < KVM_NR_MSI_ROUTES; i++) {
		if (vm->msi[i].used)
			continue;
		vm->msi[i] = (struct kvm_msi_route){
			.used = true, .efd = efd, .addr = addr, .data = data,
			.devid = devid,
		};
		if (kvm_routes_commit(vm) == 0 && kvm_irqfd(vm, i, true) == 0) {
			ret = i;
		} else {
			vm->msi[i].used = false;
			kvm_routes_commit(vm);
		}
		break;
	}
	pthread_mutex_unlock(&vm->route_lock);
	return ret;
}

static int kvm_msi_route_set(void *opaque, int route, uint64_t addr, uint32_t data)
{
	struct kvm_vm *vm = opaque;
	int ret = -1;

	pthread_mutex_lock(&vm->route_lock);
	if (route >= 0 && route < KVM_NR_MSI_ROUTES && vm->msi[route].used) {
		vm->msi[route].addr = addr;
		vm->msi[route].data = data;
		ret = kvm_routes_commit(vm);
	}
	pthread_mutex_unlock(&vm->route_lock);
	return ret;
}

static void kvm_msi_route_del(void *opaque, int route)
{
	struct kvm_vm *vm = opaque;

	pthread_mutex_lock(&vm->route_lock);
	if (route >= 0 && route < KVM_NR_MSI_ROUTES && vm->msi[route].used) {
		kvm_irqfd(vm, route, false);
		vm->msi[route].used = false;
		kvm_routes_commit(vm);
	}
	pthread_mutex_unlock(&vm->route_lock);
}

static int kvm_ioeventfd(void *opaque, bool assign, uint64_t addr, unsigned len,
			 int efd)
{
	struct kvm_vm *vm = opaque;
	struct kvm_ioeventfd io = {
		.addr = addr, .len = len, .fd = efd,
		.flags = assign ? 0 : KVM_IOEVENTFD_FLAG_DEASSIGN,
	};

	return ioctl(vm->vm_fd, KVM_IOEVENTFD, &io) < 0 ? -1 : 0;
}

static const struct irq_ops kvm_irq_ops = {
	.set_irq = kvm_set_irq,
	.msi_route_add = kvm_msi_route_add,
	.msi_route_set = kvm_msi_route_set,
	.msi_route_del = kvm_msi_route_del,
	.ioeventfd = kvm_ioeventfd,
};

int kvm_irq_init(struct kvm_vm *vm)
{
	size_t max = KVM_ARCH_MAX_FIXED_ROUTES + KVM_NR_MSI_ROUTES;

	pthread_mutex_init(&vm->route_lock, NULL);
	vm->routing = calloc(1, sizeof(*vm->routing) +
			     max * sizeof(vm->routing->entries[0]));
	if (!vm->routing || kvm_routes_commit(vm)) {
		error_report("cannot set up KVM interrupt routing: %s",
			     strerror(errno));
		return -1;
	}
	vm->m->irq = (struct irq_chip){ .ops = &kvm_irq_ops, .opaque = vm };
	return 0;
}

void kvm_irq_fini(struct kvm_vm *vm)
{
	free(vm->routing);
	vm->routing = NULL;
	pthread_mutex_destroy(&vm->route_lock);
}
