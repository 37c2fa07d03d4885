// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Other image formats' headers, which a raw disk must not be mistaken
 * for: served raw, a qcow2 image's guest would overwrite its metadata;
 * and a guest must not make its raw disk look like one, or whoever next
 * opens the image without saying its format (QEMU, qemu-img, brisk
 * before it refused) would follow what the guest wrote there (a backing
 * file on the host).  Each format's magic and where it sits come from
 * its own specification; the first BLK_PROBE_LEN bytes decide, as
 * QEMU's probe does.
 */
#include <string.h>

#include "block-int.h"
#include "util/compiler.h"
#include "util/iov.h"

static const struct {
	const char *name;
	unsigned off, len;
	const char *magic;
} image_magics[] = {
	{ "qcow2", 0, 4, "QFI\xfb" },		/* version 1: qcow */
	{ "qed", 0, 4, "QED\0" },
	{ "vmdk", 0, 4, "KDMV" },		/* hosted sparse extent */
	{ "vmdk", 0, 4, "COWD" },		/* ESX sparse extent */
	{ "vmdk", 0, 21, "# Disk DescriptorFile" },
	{ "vdi", 0x40, 4, "\x7f\x10\xda\xbe" },
	{ "vhdx", 0, 8, "vhdxfile" },
	{ "vpc", 0, 8, "conectix" },
	{ "luks", 0, 6, "LUKS\xba\xbe" },
};

/*
 * A VMDK text descriptor need not start with its comment: after blank
 * space and '#' lines, a "version=1" to "3" line makes one.
 */
static bool vmdk_descriptor(const uint8_t *buf, size_t n)
{
	const char *p = (const char *)buf, *end = p + n;

	while (p < end) {
		if (*p == '#') {
			while (p < end && *p != '\n')
				p++;
		} else if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
			p++;
		} else {
			break;
		}
	}
	return end - p >= 10 && !strncmp(p, "version=", 8) && p[8] >= '1' && p[8] <= '3' &&
	       (p[9] == '\n' || (p[9] == '\r' && end - p >= 11 && p[10] == '\n'));
}

const char *blk_probe_format(const uint8_t *buf, size_t n)
{
	if (n > BLK_PROBE_LEN)
		n = BLK_PROBE_LEN;
	for (unsigned i = 0; i < ARRAY_SIZE(image_magics); i++) {
		if (n < image_magics[i].off + image_magics[i].len ||
		    memcmp(buf + image_magics[i].off, image_magics[i].magic, image_magics[i].len))
			continue;
		/* qcow's version, big-endian at 4: 1 is the old qcow. */
		if (i == 0 && n >= 8 && !buf[4] && !buf[5] && !buf[6] && buf[7] == 1)
			return "qcow";
		return image_magics[i].name;
	}
	return vmdk_descriptor(buf, n) ? "vmdk" : NULL;
}

int blk_probe_write(const struct blk_req *req)
{
	uint8_t sector[BLK_PROBE_LEN];

	/* Guests write whole 512-byte sectors; anything else is not theirs. */
	if (req->offset || req->len < sizeof(sector))
		return -EINVAL;
	iov_copy(req->iov, (unsigned)req->iovcnt, 0, sector, sizeof(sector), true);
	return blk_probe_format(sector, sizeof(sector)) ? -EPERM : 0;
}
