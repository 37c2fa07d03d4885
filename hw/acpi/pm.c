// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ACPI fixed hardware: the PM1a event block (status, enable), the PM1a
 * control block and the reset register, laid out in one I/O range at
 * ACPI_PM_BASE as the FADT describes.  brisk never sleeps or reboots in
 * place: S5 and reset both end the process with status 0.
 */
#include <pthread.h>
#include <stdlib.h>

#include "hw/acpi/acpi.h"
#include "hw/machine.h"
#include "util/log.h"

#define PM1_STS (ACPI_PM1_EVT_BLK - ACPI_PM_BASE)
#define PM1_EN (PM1_STS + ACPI_PM1_EVT_LEN / 2)
#define PM1_CNT (ACPI_PM1_CNT_BLK - ACPI_PM_BASE)
#define RESET (ACPI_RESET_REG - ACPI_PM_BASE)

/* Status/enable bits of events that could exist; the rest read as 0. */
#define PM1_EVT_MASK 0x8731	/* TMR BM GBL PWRBTN SLPBTN RTC WAK */
#define PM1_CNT_SCI_EN 0x0001
#define PM1_CNT_RW_MASK 0x0006	/* BM_RLD, GBL_RLS */
#define PM1_CNT_SLP_TYP_SHIFT 10
#define PM1_CNT_SLP_TYP_MASK 0x7
#define PM1_CNT_SLP_EN 0x2000

struct acpi_pm {
	struct machine *m;
	pthread_mutex_t lock;
	uint16_t sts, en, cnt;
};

static uint8_t pm_read_byte(struct acpi_pm *pm, unsigned off)
{
	unsigned shift = (off & 1) * 8;

	switch (off & ~1u) {
	case PM1_STS:
		return pm->sts >> shift;
	case PM1_EN:
		return pm->en >> shift;
	case PM1_CNT:
		/* Always in ACPI mode: there is no SMM to hand over from. */
		return (pm->cnt | PM1_CNT_SCI_EN) >> shift;
	}
	return 0;		/* reset register and holes */
}

static void pm_write_cnt(struct acpi_pm *pm, uint16_t v)
{
	unsigned typ = (v >> PM1_CNT_SLP_TYP_SHIFT) & PM1_CNT_SLP_TYP_MASK;

	/* SLP_EN is write-only; SLP_TYP is kept for the read-back. */
	pm->cnt = v & (PM1_CNT_RW_MASK |
		       PM1_CNT_SLP_TYP_MASK << PM1_CNT_SLP_TYP_SHIFT);
	/* Only S5 is offered by the DSDT; any other sleep type is ignored. */
	if ((v & PM1_CNT_SLP_EN) && typ == ACPI_SLP_TYP_S5)
		pm->m->shutdown(pm->m, BRISK_EXIT_OK, NULL);
}

static void pm_write_byte(struct acpi_pm *pm, unsigned off, uint8_t v, bool last)
{
	unsigned shift = (off & 1) * 8;
	uint16_t mask = 0xff << shift;

	switch (off & ~1u) {
	case PM1_STS:
		pm->sts &= ~(((uint16_t)v << shift) & mask);	/* write 1 to clear */
		break;
	case PM1_EN:
		pm->en = (pm->en & ~mask) | (((uint16_t)v << shift) & PM1_EVT_MASK);
		break;
	case PM1_CNT:
		/*
		 * SLP_EN sits in the high byte: act once the whole access is
		 * merged, so a 16-bit write is seen as one.
		 */
		pm->cnt = (pm->cnt & ~mask) | ((uint16_t)v << shift);
		if (last || shift)
			pm_write_cnt(pm, pm->cnt);
		break;
	case RESET:
		if (off == RESET && v == ACPI_RESET_VALUE)
			pm->m->shutdown(pm->m, BRISK_EXIT_OK, NULL);
		break;
	}
}

static uint64_t pm_read(void *opaque, uint64_t offset, unsigned size)
{
	struct acpi_pm *pm = opaque;
	uint64_t v = 0;

	pthread_mutex_lock(&pm->lock);
	for (unsigned i = 0; i < size && offset + i < ACPI_PM_LEN; i++)
		v |= (uint64_t)pm_read_byte(pm, offset + i) << (8 * i);
	pthread_mutex_unlock(&pm->lock);
	return v;
}

static void pm_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
	struct acpi_pm *pm = opaque;

	pthread_mutex_lock(&pm->lock);
	for (unsigned i = 0; i < size && offset + i < ACPI_PM_LEN; i++)
		pm_write_byte(pm, offset + i, value >> (8 * i), i + 1 == size);
	pthread_mutex_unlock(&pm->lock);
}

static const struct bus_ops pm_ops = {
	.read = pm_read,
	.write = pm_write,
};

struct acpi_pm *acpi_pm_new(struct machine *m)
{
	struct acpi_pm *pm = calloc(1, sizeof(*pm));

	if (!pm) {
		error_report("acpi: out of memory");
		return NULL;
	}
	pm->m = m;
	pthread_mutex_init(&pm->lock, NULL);
	if (bus_register(&m->pio, ACPI_PM_BASE, ACPI_PM_LEN, &pm_ops, pm) < 0) {
		error_report("acpi: ports 0x%x-0x%x are taken", ACPI_PM_BASE,
			     ACPI_PM_BASE + ACPI_PM_LEN - 1);
		pthread_mutex_destroy(&pm->lock);
		free(pm);
		return NULL;
	}
	return pm;
}

void acpi_pm_free(struct acpi_pm *pm)
{
	if (!pm)
		return;
	bus_unregister(&pm->m->pio, ACPI_PM_BASE, pm);
	pthread_mutex_destroy(&pm->lock);
	free(pm);
}
