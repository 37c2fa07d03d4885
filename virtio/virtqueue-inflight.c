// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vhost-user's inflight region for a split ring, taken up at the ring's
 * start: QEMU's docs/interop/vhost-user.rst, "Inflight I/O tracking".  The
 * hot path's part (marking heads taken and used) is in virtqueue-split.c.
 *
 * The region is the front-end's: every field read from it is bounded
 * before use, and one that cannot be right refuses the region.
 */
#include <string.h>

#include "virtqueue-internal.h"

size_t virtqueue_inflight_size(unsigned int num)
{
	return sizeof(struct vq_inflight_region) + num * sizeof(struct vq_inflight_desc);
}

bool virtqueue_inflight_pending(const struct virtqueue *vq)
{
	return vq->ifl && vq->ifl->resubmitted < vq->ifl->nresubmit;
}

/*
 * A crash between publishing a batch of used heads and clearing their
 * inflight marks leaves the region's used index behind the ring's: the
 * batch list, from last_batch_head, names the heads to clear.
 */
static const char *settle_last_batch(struct vq_inflight_region *r, uint16_t used,
				     unsigned int num)
{
	uint16_t n = (uint16_t)(used - r->used_idx), i = r->last_batch_head;

	if (n > num)
		return "inflight region: its used index is further from the ring's than the "
		       "ring is long";
	for (uint16_t k = 0; k < n; k++) {
		if (i >= num)
			return "inflight region: a used batch names a head beyond the ring";
		r->desc[i].inflight = 0;
		i = r->desc[i].next;
	}
	r->used_idx = used;
	return NULL;
}

/* Sorts n heads by their region counters: insertion, n is at most num. */
static void sort_by_counter(uint16_t *h, unsigned int n, const struct vq_inflight_region *r)
{
	for (unsigned int i = 1; i < n; i++) {
		uint16_t x = h[i];
		unsigned int j = i;

		for (; j > 0 && r->desc[h[j - 1]].counter > r->desc[x].counter; j--)
			h[j] = h[j - 1];
		h[j] = x;
	}
}

const char *virtqueue_inflight_attach(struct virtqueue *vq, struct vq_inflight *ifl,
				      void *region, size_t size)
{
	struct vq_inflight_region *r = region;
	unsigned int num = vq->num, n = 0;
	uint64_t top = 0;
	uint16_t used;
	const char *why;
	bool fresh;

	if (vq->packed)
		return NULL;
	if (size < virtqueue_inflight_size(num))
		return "inflight region: too small for the ring";
	used = vq_ld16(&((struct vring_used *)vq->device)->idx);
	fresh = r->version == 0;
	if (fresh) {
		memset(r, 0, virtqueue_inflight_size(num));
		r->desc_num = (uint16_t)num;
		r->used_idx = used;
		vq_compiler_barrier();
		r->version = 1;
	} else if (r->version != 1) {
		return "inflight region: unknown version";
	} else if (r->desc_num != num) {
		return "inflight region: made for a ring of another size";
	} else if ((why = settle_last_batch(r, used, num))) {
		return why;
	}
	memset(ifl, 0, sizeof(*ifl));
	for (unsigned int i = 0; i < num; i++) {
		if (r->desc[i].inflight > 1)
			return "inflight region: a head is neither taken nor free";
		if (!r->desc[i].inflight)
			continue;
		ifl->resubmit[n++] = (uint16_t)i;
		if (r->desc[i].counter >= top)
			top = r->desc[i].counter + 1;
	}
	sort_by_counter(ifl->resubmit, n, r);
	ifl->region = r;
	ifl->nresubmit = (uint16_t)n;
	ifl->counter = top;
	ifl->taken_up = !fresh;
	if (!fresh) {
		/*
		 * Every head taken was either used or is in the list: the
		 * available ring goes on after both, whatever base the
		 * front-end sent.
		 */
		vq->last_avail_idx = vq->shadow_avail_idx = (uint16_t)(used + n);
		vq->used_idx = used;
		vq->signalled_used_valid = false;
	}
	vq->ifl = ifl;
	return NULL;
}
