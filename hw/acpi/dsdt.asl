/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * brisk's DSDT.  Everything that depends on the command line (-smp, -m)
 * lives in the tables built at run time (acpi.c); this part is fixed.
 */
DefinitionBlock ("", "DSDT", 2, "BRISK", "BRISKDSD", 1)
{
    /*
     * SLP_TYPa/SLP_TYPb written to PM1a_CNT for soft-off; hw/acpi/pm.c
     * ends brisk on this value (ACPI_SLP_TYP_S5 in include/hw/acpi/acpi.h).
     */
    Name (_S5, Package (4) { 5, 5, 0, 0 })

    Scope (\_SB)
    {
        /*
         * With ACPI in charge Linux scans PCI only below a host bridge
         * it finds in the namespace, so bus 0 must be described here.
         * Config space is type-1 at 0xcf8; the windows are the I/O ports
         * outside that, and the 32-bit MMIO hole of the board map.
         */
        Device (PCI0)
        {
            Name (_HID, EisaId ("PNP0A03"))
            Name (_UID, 0)
            Name (_SEG, 0)
            Name (_BBN, 0)
            Name (_CRS, ResourceTemplate ()
            {
                WordBusNumber (ResourceProducer, MinFixed, MaxFixed, PosDecode,
                    0x0000, 0x0000, 0x0000, 0x0000, 0x0001)
                IO (Decode16, 0x0CF8, 0x0CF8, 0x01, 0x08)
                WordIO (ResourceProducer, MinFixed, MaxFixed, PosDecode, EntireRange,
                    0x0000, 0x0000, 0x0CF7, 0x0000, 0x0CF8)
                WordIO (ResourceProducer, MinFixed, MaxFixed, PosDecode, EntireRange,
                    0x0000, 0x0D00, 0xFFFF, 0x0000, 0xF300)
                DWordMemory (ResourceProducer, PosDecode, MinFixed, MaxFixed,
                    NonCacheable, ReadWrite,
                    0x00000000, 0xC0000000, 0xFEBFFFFF, 0x00000000, 0x3EC00000)
            })

            /* Ports the devices below claim are decoded by this bridge. */
            Device (COM1)
            {
                Name (_HID, EisaId ("PNP0501"))
                Name (_UID, 1)
                Method (_STA, 0, NotSerialized) { Return (0x0F) }
                Name (_CRS, ResourceTemplate ()
                {
                    IO (Decode16, 0x03F8, 0x03F8, 0x00, 0x08)
                    IRQNoFlags () {4}
                })
            }

            Device (KBD)
            {
                Name (_HID, EisaId ("PNP0303"))
                Method (_STA, 0, NotSerialized) { Return (0x0F) }
                Name (_CRS, ResourceTemplate ()
                {
                    IO (Decode16, 0x0060, 0x0060, 0x01, 0x01)
                    IO (Decode16, 0x0064, 0x0064, 0x01, 0x01)
                    IRQNoFlags () {1}
                })
            }

            /*
             * The CMOS clock; its century byte is named in the FADT.
             * Linux's rtc_cmos takes its ports and alarm interrupt here.
             */
            Device (RTC)
            {
                Name (_HID, EisaId ("PNP0B00"))
                Method (_STA, 0, NotSerialized) { Return (0x0F) }
                Name (_CRS, ResourceTemplate ()
                {
                    IO (Decode16, 0x0070, 0x0070, 0x01, 0x02)
                    IRQNoFlags () {8}
                })
            }

            /* pvpanic: the guest reports a panic by writing port 0x505. */
            Device (PEVT)
            {
                Name (_HID, "QEMU0001")
                Method (_STA, 0, NotSerialized) { Return (0x0F) }
                Name (_CRS, ResourceTemplate ()
                {
                    IO (Decode16, 0x0505, 0x0505, 0x01, 0x01)
                })
            }
        }
    }
}
