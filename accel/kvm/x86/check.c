// SPDX-License-Identifier: GPL-2.0-or-later
/* What the KVM check (../check.c) looks at on an x86 host. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../kvm-internal.h"

const char kvm_arch_hw_virt[] = "VT-x/AMD-V";

/*
 * Hardware runs the loop in well under a millisecond, a nested host
 * under QEMU's TCG (emulated SVM) in 1.5 to 11 ms, kvm_pvm's emulator in
 * 125 to 150 ms: the limit sits where neither side comes near it.
 */
const uint64_t kvm_arch_check_limit_ns = 20 * 1000000ull;

static const char *const modules[] = { "kvm_intel", "kvm_amd", "kvm_pvm" };

static void find_module(struct kvm_check *c)
{
	char path[64];

	for (unsigned i = 0; i < ARRAY_SIZE(modules); i++) {
		snprintf(path, sizeof(path), "/sys/module/%s", modules[i]);
		if (access(path, F_OK) == 0) {
			snprintf(c->module, sizeof(c->module), "%s", modules[i]);
			return;
		}
	}
}

/* vmx or svm among the host CPU's flags. */
static void find_cpu_virt(struct kvm_check *c)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[4096];

	snprintf(c->cpu_virt, sizeof(c->cpu_virt), "none");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		if (strstr(line, " vmx"))
			snprintf(c->cpu_virt, sizeof(c->cpu_virt), "vmx");
		else if (strstr(line, " svm"))
			snprintf(c->cpu_virt, sizeof(c->cpu_virt), "svm");
		break;
	}
	fclose(f);
}

void kvm_arch_check_host(struct kvm_check *c)
{
	find_module(c);
	find_cpu_virt(c);
}

const char *kvm_arch_module_words(const struct kvm_check *c)
{
	if (!strcmp(c->module, "kvm_intel"))
		return "kvm_intel (VT-x)";
	if (!strcmp(c->module, "kvm_amd"))
		return "kvm_amd (AMD-V)";
	if (!strcmp(c->module, "kvm_pvm"))
		return "kvm_pvm (software virtualization without VT-x/AMD-V)";
	return "an unknown KVM module";
}

/* The x86 test guest ends with an OUT to its port. */
bool kvm_arch_check_done(const struct kvm_vcpu *v, uint64_t port)
{
	return v->run->exit_reason == KVM_EXIT_IO && v->run->io.port == port;
}
