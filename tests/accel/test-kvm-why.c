// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The end of -timeout's line: where each vCPU was (kvm_why_add_places()),
 * as include/accel/kvm.h and README's -timeout rows describe it.  The
 * expected lines are written out whole.
 */
#include <string.h>

#include "accel/kvm.h"
#include "check.h"

/* What brisk's VM says before the places (hw/main.c; "brisk: " comes later). */
#define LINE "timeout: guest still running after 2 s"

static void add(char *why, size_t size, const char *start,
		const struct kvm_vcpu_place *p, unsigned n)
{
	snprintf(why, size, "%s", start);
	kvm_why_add_places(why, size, p, n);
}

static void test_places(void)
{
	const struct kvm_vcpu_place two[] = { { 0x100200, true }, { 0xfff0, true } };
	const struct kvm_vcpu_place second[] = { { 0x100200, false }, { 0xfff0, true } };
	const struct kvm_vcpu_place none[] = { { 0x100200, false }, { 0, false } };
	char why[256];

	add(why, sizeof(why), LINE, two, 2);
	CHECK(strcmp(why, LINE " (vCPU 0 at 0x100200, vCPU 1 at 0xfff0)") == 0);
	/* A vCPU whose place is unknown is left out, the others keep their numbers. */
	add(why, sizeof(why), LINE, second, 2);
	CHECK(strcmp(why, LINE " (vCPU 1 at 0xfff0)") == 0);
	add(why, sizeof(why), LINE, none, 2);
	CHECK(strcmp(why, LINE) == 0);
	add(why, sizeof(why), LINE, two, 0);
	CHECK(strcmp(why, LINE) == 0);
}

/*
 * At the edges: "t" and entries of 15 characters (" (vCPU 0 at 0x1",
 * ", vCPU 1 at 0x2", ...), each taken only with ", ...)" and the NUL (7
 * bytes) still free after it.
 */
static void test_edges(void)
{
	const struct kvm_vcpu_place p[] = { { 1, true }, { 2, true }, { 3, true } };
	char why[64];

	add(why, 53, "t", p, 3);	/* 1 + 3 * 15 + 7 */
	CHECK(strcmp(why, "t (vCPU 0 at 0x1, vCPU 1 at 0x2, vCPU 2 at 0x3)") == 0);
	add(why, 52, "t", p, 3);
	CHECK(strcmp(why, "t (vCPU 0 at 0x1, vCPU 1 at 0x2, ...)") == 0);
	add(why, 38, "t", p, 3);	/* 1 + 2 * 15 + 7 */
	CHECK(strcmp(why, "t (vCPU 0 at 0x1, vCPU 1 at 0x2, ...)") == 0);
	add(why, 37, "t", p, 3);
	CHECK(strcmp(why, "t (vCPU 0 at 0x1, ...)") == 0);
	add(why, 23, "t", p, 3);	/* 1 + 15 + 7 */
	CHECK(strcmp(why, "t (vCPU 0 at 0x1, ...)") == 0);
	add(why, 22, "t", p, 3);
	CHECK(strcmp(why, "t (...)") == 0);
	add(why, 8, "t", p, 3);		/* 1 + 7 */
	CHECK(strcmp(why, "t (...)") == 0);
	add(why, 7, "t", p, 3);
	CHECK(strcmp(why, "t") == 0);
}

/* As many as brisk's 256-byte line holds of 16 vCPUs in an x86 kernel. */
static void test_full(void)
{
	struct kvm_vcpu_place p[16];
	char why[256];

	for (unsigned i = 0; i < 16; i++)
		p[i] = (struct kvm_vcpu_place){ 0xffffffff81000000ull + i, true };
	add(why, sizeof(why), LINE, p, 16);
	CHECK(strcmp(why, LINE " (vCPU 0 at 0xffffffff81000000, vCPU 1 at 0xffffffff81000001, "
		     "vCPU 2 at 0xffffffff81000002, vCPU 3 at 0xffffffff81000003, "
		     "vCPU 4 at 0xffffffff81000004, vCPU 5 at 0xffffffff81000005, "
		     "vCPU 6 at 0xffffffff81000006, ...)") == 0);
	printf("# %s\n", why);
}

int main(void)
{
	RUN(test_places());
	RUN(test_edges());
	RUN(test_full());
	return check_done();
}
