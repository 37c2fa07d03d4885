// SPDX-License-Identifier: GPL-2.0-or-later
#include "hw/x86/pc.h"

/*
 * RAM up to 3 GiB stays below the PCI hole; beyond that the rest moves
 * above 4 GiB, so 32-bit BARs, the IOAPIC and the LAPIC never overlap RAM.
 */
void pc_layout(uint64_t ram_size, struct pc_layout *l)
{
	l->low_size = ram_size < PC_LOW_RAM_MAX ? ram_size : PC_LOW_RAM_MAX;
	l->high_size = ram_size - l->low_size;
}
