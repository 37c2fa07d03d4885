// SPDX-License-Identifier: GPL-2.0-or-later
/* The split virtqueue against a hostile driver; input layout in fuzz-vq.h. */
#include "fuzz-vq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_vq_run(data, size, false);
}
