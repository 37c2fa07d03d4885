// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The end of -timeout's line: where each vCPU was (kvm_why_add_places()),
 * as include/accel/kvm.h and README's -timeout rows describe it.
 */
#include <string.h>

#include "accel/kvm.h"
#include "check.h"

#define LINE "brisk: timeout: guest still running after 2 s"

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

/* More vCPUs than the line holds: whole entries, in order, then "...". */
static void test_full(void)
{
	struct kvm_vcpu_place p[16];
	char why[256], want[512] = LINE;
	size_t len;
	unsigned fit = 0;

	for (unsigned i = 0; i < 16; i++)
		p[i] = (struct kvm_vcpu_place){ 0xffffffff81000000ull + i, true };
	add(why, sizeof(why), LINE, p, 16);
	len = strlen(why);
	CHECK(len < sizeof(why));
	/* Exactly the entries that fit whole with ", ...)" after them. */
	for (unsigned i = 0; i < 16; i++) {
		char one[64];
		size_t l = strlen(want);

		snprintf(one, sizeof(one), "%svCPU %u at 0x%llx", i ? ", " : " (", i,
			 0xffffffff81000000ull + i);
		if (l + strlen(one) + strlen(", ...)") + 1 > sizeof(why))
			break;
		strcat(want, one);
		fit++;
	}
	strcat(want, ", ...)");
	CHECK(fit > 0 && fit < 16);
	CHECK(strcmp(why, want) == 0);
	if (strcmp(why, want) != 0)
		printf("# got  %s\n# want %s\n", why, want);
}

/* Not even the first fits: the line says only that there were some. */
static void test_none_fits(void)
{
	const struct kvm_vcpu_place one[] = { { 0xffffffff81000000ull, true } };
	char why[64];

	memset(why, 'x', 50);
	why[50] = '\0';
	kvm_why_add_places(why, sizeof(why), one, 1);
	CHECK(strlen(why) == 50 + strlen(" (...)"));
	CHECK(strcmp(why + 50, " (...)") == 0);
}

int main(void)
{
	RUN(test_places());
	RUN(test_full());
	RUN(test_none_fits());
	return check_done();
}
