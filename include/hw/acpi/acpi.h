/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_ACPI_ACPI_H
#define BRISK_HW_ACPI_ACPI_H

#include <stdint.h>

struct machine;

/*
 * Fixed-hardware power management in I/O space.  The FADT built by
 * acpi_build() points at these; the DSDT's \_S5 uses ACPI_SLP_TYP_S5.
 */
#define ACPI_PM_BASE 0x600
#define ACPI_PM1_EVT_BLK (ACPI_PM_BASE + 0x0)	/* PM1a_STS, PM1a_EN: 2 + 2 */
#define ACPI_PM1_EVT_LEN 4
#define ACPI_PM1_CNT_BLK (ACPI_PM_BASE + 0x4)
#define ACPI_PM1_CNT_LEN 2
#define ACPI_RESET_REG (ACPI_PM_BASE + 0x8)
#define ACPI_RESET_VALUE 0x01
#define ACPI_PM_LEN 0x10
#define ACPI_SLP_TYP_S5 5
#define ACPI_SCI_IRQ 9

/*
 * The PM1 and reset registers: SLP_EN with SLP_TYP S5 and a write of
 * ACPI_RESET_VALUE end brisk with 0.  NULL (one error line) on failure.
 */
struct acpi_pm;
struct acpi_pm *acpi_pm_new(struct machine *m);
void acpi_pm_free(struct acpi_pm *pm);

/*
 * Writes RSDP, XSDT, FADT, MADT and DSDT into guest RAM [base, base + size)
 * for m->ncpus CPUs.  Returns the RSDP's guest-physical address, or 0 (with
 * one error line) if they do not fit or the range is not RAM.  The RSDP is
 * placed first, 16-byte aligned at base: put base in the BIOS area
 * [0xE0000, 0x100000) for Linux to find it by scanning.
 */
uint64_t acpi_build(struct machine *m, uint64_t base, uint64_t size);

#endif
