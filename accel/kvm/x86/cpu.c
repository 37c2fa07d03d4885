// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * An x86 vCPU: CPUID with a consistent topology, the MSRs and LAPIC mode
 * firmware would leave, 64-bit entry state; port I/O exits.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "../kvm-internal.h"
#include "accel/kvm-x86.h"
#include "hw/machine.h"
#include "util/log.h"
#include "x86.h"

#define MSR_IA32_MISC_ENABLE 0x1a0
#define MSR_MTRR_DEF_TYPE 0x2ff
#define MISC_ENABLE_FAST_STRING 1
#define MTRR_ENABLE_WB ((1u << 11) | 6)	/* MTRRs on, default write-back */

#define CR0_PE 0x1u
#define CR0_MP 0x2u
#define CR0_ET 0x10u
#define CR0_NE 0x20u
#define CR0_WP 0x10000u
#define CR0_AM 0x40000u
#define CR0_PG 0x80000000u
#define CR4_PAE 0x20u
#define EFER_LME 0x100u
#define EFER_LMA 0x400u

#define APIC_LVT0 0x350
#define APIC_LVT1 0x360
#define APIC_MODE_NMI 4
#define APIC_MODE_EXTINT 7

/* Smallest b with (1 << b) >= n. */
static unsigned order(unsigned n)
{
	unsigned b = 0;

	while ((1u << b) < n)
		b++;
	return b;
}

static struct kvm_cpuid_entry2 *cpuid_find(struct kvm_cpuid2 *c, uint32_t fn,
					   uint32_t index)
{
	for (unsigned i = 0; i < c->nent; i++)
		if (c->entries[i].function == fn && c->entries[i].index == index)
			return &c->entries[i];
	return NULL;
}

/* Replaces the leaf's subleaves with x2APIC topology: 1 thread per core. */
static void cpuid_topology_leaf(struct kvm_cpuid2 *c, unsigned max, uint32_t fn,
				unsigned id, unsigned ncpus)
{
	unsigned n = 0;

	for (unsigned i = 0; i < c->nent; i++)
		if (c->entries[i].function != fn)
			c->entries[n++] = c->entries[i];
	c->nent = n;
	if (n + 3 > max)
		return;
	for (unsigned level = 0; level < 3; level++) {
		struct kvm_cpuid_entry2 *e = &c->entries[c->nent++];

		*e = (struct kvm_cpuid_entry2){
			.function = fn, .index = level,
			.flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX, .edx = id,
		};
		if (level == 0) {		/* SMT: shift 0, one thread */
			e->ebx = 1;
			e->ecx = 1u << 8;
		} else if (level == 1) {	/* core: all vCPUs, one package */
			e->eax = order(ncpus);
			e->ebx = ncpus;
			e->ecx = 2u << 8 | 1;
		} else {			/* end of the list */
			e->ecx = level;
		}
	}
}

/*
 * One package of ncpus cores with one thread each, APIC id = vCPU index,
 * described consistently in every leaf Linux derives topology from.
 */
void kvm_cpuid_patch(struct kvm_cpuid2 *c, unsigned max, unsigned id,
		     unsigned ncpus)
{
	unsigned bits = order(ncpus), span = 1u << bits;
	struct kvm_cpuid_entry2 *e;
	uint32_t max_basic = 0, max_ext = 0;

	if ((e = cpuid_find(c, 0, 0)))
		max_basic = e->eax;
	if ((e = cpuid_find(c, 0x80000000, 0)))
		max_ext = e->eax;
	for (unsigned i = 0; i < c->nent; i++) {
		e = &c->entries[i];
		switch (e->function) {
		case 1:
			e->ebx = (e->ebx & 0xffff) | id << 24 |
				 (span > 255 ? 255 : span) << 16;
			if (ncpus > 1)
				e->edx |= 1u << 28;	/* HTT: ebx count valid */
			e->ecx |= 1u << 31;		/* running on a hypervisor */
			break;
		case 4: {
			unsigned cache_level = (e->eax >> 5) & 7;
			unsigned share = cache_level >= 3 ? span - 1 : 0;

			e->eax &= 0x3fff;
			e->eax |= (span - 1 > 63 ? 63 : span - 1) << 26 |
				  (share > 0xfff ? 0xfff : share) << 14;
			break;
		}
		case 0x80000008:
			e->ecx = (e->ecx & ~0xf0ffu) | bits << 12 | (ncpus - 1);
			break;
		case 0x8000001e:
			e->eax = id;
			e->ebx = (e->ebx & ~0xffffu) | id;	/* one thread per core */
			e->ecx = 0;				/* one node */
			break;
		}
	}
	if (max_basic >= 0xb)
		cpuid_topology_leaf(c, max, 0xb, id, ncpus);
	if (max_basic >= 0x1f)
		cpuid_topology_leaf(c, max, 0x1f, id, ncpus);
	(void)max_ext;
}

static int vcpu_set_cpuid(struct kvm_vcpu *v)
{
	const struct kvm_cpuid2 *host = v->vm->arch->cpuid;
	unsigned max = host->nent + 8;
	size_t size = sizeof(*host) + max * sizeof(host->entries[0]);
	struct kvm_cpuid2 *c = malloc(size);
	int ret;

	if (!c)
		return -1;
	memcpy(c, host, sizeof(*host) + host->nent * sizeof(host->entries[0]));
	kvm_cpuid_patch(c, max, v->id, v->vm->m->ncpus);
	ret = ioctl(v->fd, KVM_SET_CPUID2, c);
	free(c);
	return ret;
}

_Static_assert(offsetof(struct kvm_msrs, entries) == 8, "kvm_msrs layout");

static int vcpu_set_msrs(struct kvm_vcpu *v)
{
	/* struct kvm_msrs with room for two entries, in ISO C. */
	struct {
		__u32 nmsrs, pad;
		struct kvm_msr_entry e[2];
	} msrs = {
		.nmsrs = 2,
		.e = {
			{ .index = MSR_IA32_MISC_ENABLE, .data = MISC_ENABLE_FAST_STRING },
			{ .index = MSR_MTRR_DEF_TYPE, .data = MTRR_ENABLE_WB },
		},
	};

	return ioctl(v->fd, KVM_SET_MSRS, &msrs) == 2 ? 0 : -1;
}

static void lvt_mode(struct kvm_lapic_state *s, unsigned reg, unsigned mode)
{
	uint32_t v;

	memcpy(&v, s->regs + reg, 4);
	v = (v & ~0x700u) | mode << 8;
	memcpy(s->regs + reg, &v, 4);
}

/* Virtual-wire mode: the 8259 on LINT0, NMI on LINT1, as a BIOS leaves it. */
static int vcpu_set_lapic(struct kvm_vcpu *v)
{
	struct kvm_lapic_state s;

	if (ioctl(v->fd, KVM_GET_LAPIC, &s) < 0)
		return -1;
	lvt_mode(&s, APIC_LVT0, APIC_MODE_EXTINT);
	lvt_mode(&s, APIC_LVT1, APIC_MODE_NMI);
	return ioctl(v->fd, KVM_SET_LAPIC, &s);
}

static int vcpu_set_fpu(struct kvm_vcpu *v)
{
	struct kvm_fpu fpu = { .fcw = 0x37f, .mxcsr = 0x1f80 };

	return ioctl(v->fd, KVM_SET_FPU, &fpu);
}

/* The boot vCPU enters the kernel in 64-bit mode (hw/x86/boot.c). */
int kvm_arch_set_entry(struct kvm_vcpu *v, const struct cpu_entry *e)
{
	struct kvm_sregs s;
	struct kvm_segment code = {
		.limit = 0xffffffff, .selector = e->cs, .type = 11, .present = 1,
		.s = 1, .l = 1, .g = 1,
	};
	struct kvm_segment data = {
		.limit = 0xffffffff, .selector = e->ds, .type = 3, .present = 1,
		.s = 1, .db = 1, .g = 1,
	};
	struct kvm_regs regs = { .rflags = 2, .rip = e->rip, .rsi = e->rsi };

	if (ioctl(v->fd, KVM_GET_SREGS, &s) < 0)
		return -1;
	s.cs = code;
	s.ds = s.es = s.fs = s.gs = s.ss = data;
	s.tr = (struct kvm_segment){
		.limit = 0x67, .selector = 0x20, .type = 11, .present = 1,
	};
	s.gdt.base = e->gdt_base;
	s.gdt.limit = e->gdt_limit;
	s.idt.base = 0;
	s.idt.limit = 0;
	s.cr0 = CR0_PE | CR0_MP | CR0_ET | CR0_NE | CR0_WP | CR0_AM | CR0_PG;
	s.cr3 = e->cr3;
	s.cr4 = CR4_PAE;
	s.efer = EFER_LME | EFER_LMA;
	if (ioctl(v->fd, KVM_SET_SREGS, &s) < 0)
		return -1;
	return ioctl(v->fd, KVM_SET_REGS, &regs);
}

int kvm_arch_vcpu_pc(struct kvm_vcpu *v, uint64_t *pc)
{
	struct kvm_regs regs;

	if (ioctl(v->fd, KVM_GET_REGS, &regs) < 0)
		return -1;
	*pc = regs.rip;
	return 0;
}

int kvm_arch_vcpu_init(struct kvm_vcpu *v, const struct cpu_entry *entry)
{
	const char *what;

	what = "KVM_SET_CPUID2";
	if (vcpu_set_cpuid(v))
		goto fail;
	what = "KVM_SET_MSRS";
	if (vcpu_set_msrs(v))
		goto fail;
	what = "KVM_SET_FPU";
	if (vcpu_set_fpu(v))
		goto fail;
	what = "KVM_SET_LAPIC";
	if (vcpu_set_lapic(v))
		goto fail;
	what = "boot register setup";
	if (entry && kvm_arch_set_entry(v, entry))
		goto fail;
	return 0;
fail:
	error_report("vCPU %u: %s failed: %s", v->id, what, strerror(errno));
	return -1;
}

static void vcpu_pio(struct kvm_vcpu *v)
{
	struct kvm_run *run = v->run;
	unsigned size = run->io.size;
	uint64_t bytes = (uint64_t)size * run->io.count;
	struct bus *pio = &v->vm->m->pio;

	if ((size != 1 && size != 2 && size != 4) ||
	    run->io.data_offset > v->vm->run_size ||
	    bytes > v->vm->run_size - run->io.data_offset) {
		kvm_vcpu_stop(v, "vCPU %u: malformed port I/O exit", v->id);
		return;
	}
	uint8_t *data = (uint8_t *)run + run->io.data_offset;

	/* String I/O (rep ins/outs) arrives as count back-to-back accesses. */
	for (uint32_t i = 0; i < run->io.count; i++, data += size) {
		uint64_t val = 0;

		if (run->io.direction == KVM_EXIT_IO_OUT) {
			memcpy(&val, data, size);
			bus_write(pio, run->io.port, val, size);
		} else {
			bus_read(pio, run->io.port, &val, size);
			memcpy(data, &val, size);
		}
	}
}

bool kvm_arch_vcpu_exit(struct kvm_vcpu *v)
{
	struct machine *m = v->vm->m;

	switch (v->run->exit_reason) {
	case KVM_EXIT_IO:
		vcpu_pio(v);
		return true;
	case KVM_EXIT_HLT:		/* only without an in-kernel LAPIC */
	case KVM_EXIT_IRQ_WINDOW_OPEN:
		return true;
	case KVM_EXIT_SHUTDOWN:
		m->shutdown(m, BRISK_EXIT_FAILURE, "guest triple fault");
		return false;
	case KVM_EXIT_FAIL_ENTRY:
		kvm_vcpu_stop(v, "vCPU %u: KVM entry failed, hardware reason 0x%llx",
			      v->id, (unsigned long long)
			      v->run->fail_entry.hardware_entry_failure_reason);
		return false;
	}
	kvm_vcpu_stop(v, "vCPU %u: unexpected KVM exit reason %u", v->id,
		      v->run->exit_reason);
	return false;
}
