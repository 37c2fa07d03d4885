// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * MSI-X.  Every vector has an eventfd bound to an MSI route, so delivery is
 * one eventfd write from whichever thread completes the work.  Routes are
 * (re)programmed when a vector becomes unmasked, or when the guest rewrites
 * an unmasked entry, never on the delivery path.
 *
 * m->lock guards the table, the PBA and the cached enable/mask bits.  It is
 * taken from MMIO handlers (table/PBA), from config writes (under the PCI
 * bus lock) and from msix_notify() (any thread, maybe under a device
 * lock); it is innermost, and nothing is called with it held that could
 * take another brisk lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "hw/pci/msix.h"
#include "util/log.h"

#define ENTRY_SIZE 16
#define ENTRY_CTRL 12
#define  ENTRY_CTRL_MASKED 0x1
#define CTRL_ENABLE 0x8000
#define CTRL_FMASK 0x4000
#define MAX_VECTORS 2048

struct msix_vec {
	int efd;
	int route;		/* -1 until first unmasked */
	bool stale;		/* address/data changed since the route was set */
	bool external;		/* efd is written by another process too */
};

struct msix {
	pthread_mutex_t lock;
	const struct irq_chip *irq;
	struct pci_device *d;
	unsigned n;
	uint8_t *table;		/* n entries as the guest sees them */
	uint64_t *pba;
	struct msix_vec *vec;
	uint32_t pba_off;
	bool enabled, fmasked;
	bool route_error_reported;
};

static bool vec_masked(const struct msix *m, unsigned v)
{
	return !m->enabled || m->fmasked ||
	       (m->table[v * ENTRY_SIZE + ENTRY_CTRL] & ENTRY_CTRL_MASKED);
}

static void vec_sync_route(struct msix *m, unsigned v)
{
	struct msix_vec *x = &m->vec[v];
	const uint8_t *e = &m->table[v * ENTRY_SIZE];
	uint64_t addr = pci_get_long(e) | (uint64_t)pci_get_long(e + 4) << 32;
	uint32_t data = pci_get_long(e + 8);
	const struct irq_ops *ops = m->irq->ops;

	if (x->route >= 0 && !x->stale)
		return;
	if (x->route >= 0 && ops->msi_route_set(m->irq->opaque, x->route, addr, data) < 0) {
		ops->msi_route_del(m->irq->opaque, x->route);
		x->route = -1;
	}
	if (x->route < 0)
		x->route = ops->msi_route_add(m->irq->opaque, x->efd, addr, data,
					      pci_requester_id(m->d));
	if (x->route < 0)
		error_report_once(&m->route_error_reported,
				  "msix: cannot route vector %u (address %#llx data %#x)",
				  v, (unsigned long long)addr, data);
	x->stale = false;
}

/* Caller checked the vector is unmasked. */
static void vec_send(struct msix *m, unsigned v)
{
	vec_sync_route(m, v);
	if (m->vec[v].route < 0)
		return;
	/* EAGAIN means the counter is saturated: an interrupt is pending anyway. */
	while (eventfd_write(m->vec[v].efd, 1) < 0 && errno == EINTR)
		;
}

/* Something may have become unmasked: route it and send what is pending. */
static void msix_unmasked(struct msix *m)
{
	for (unsigned v = 0; v < m->n; v++) {
		if (vec_masked(m, v))
			continue;
		vec_sync_route(m, v);
		uint64_t bit = 1ull << (v % 64);

		if (m->pba[v / 64] & bit) {
			m->pba[v / 64] &= ~bit;
			vec_send(m, v);
		}
	}
}

/*
 * brisk itself holds a masked vector's message in the PBA; another
 * process writing efd cannot, so the vector's route (and irqfd) is taken
 * down while it is masked: the writes wait in the eventfd's counter, and
 * KVM delivers them when the route is set up again at unmask.
 */
static void msix_masked(struct msix *m)
{
	for (unsigned v = 0; v < m->n; v++) {
		struct msix_vec *x = &m->vec[v];

		if (x->external && x->route >= 0 && vec_masked(m, v)) {
			m->irq->ops->msi_route_del(m->irq->opaque, x->route);
			x->route = -1;
		}
	}
}

int msix_vector_fd(struct pci_device *d, unsigned v)
{
	struct msix *m = d->msix;

	if (!m || v >= m->n)
		return -1;
	pthread_mutex_lock(&m->lock);
	m->vec[v].external = true;
	msix_masked(m);
	pthread_mutex_unlock(&m->lock);
	return m->vec[v].efd;
}

void msix_notify(struct pci_device *d, unsigned v)
{
	struct msix *m = d->msix;

	if (!m || v >= m->n)
		return;
	pthread_mutex_lock(&m->lock);
	if (!m->enabled)
		;	/* no INTx: the message is lost, as the driver chose */
	else if (vec_masked(m, v))
		m->pba[v / 64] |= 1ull << (v % 64);
	else
		vec_send(m, v);
	pthread_mutex_unlock(&m->lock);
}

void msix_config_write(struct pci_device *d)
{
	struct msix *m = d->msix;
	uint16_t ctrl = pci_get_word(&d->cfg[d->msix_cap + 2]);

	pthread_mutex_lock(&m->lock);
	m->enabled = ctrl & CTRL_ENABLE;
	m->fmasked = ctrl & CTRL_FMASK;
	msix_unmasked(m);
	msix_masked(m);
	pthread_mutex_unlock(&m->lock);
}

static bool access_ok(uint64_t off, unsigned size, uint64_t len)
{
	return (size == 4 || size == 8) && off % size == 0 && off + size <= len;
}

static uint64_t msix_bar_read(void *opaque, uint64_t off, unsigned size)
{
	struct msix *m = opaque;
	uint64_t v = 0;

	pthread_mutex_lock(&m->lock);
	if (access_ok(off, size, (uint64_t)m->n * ENTRY_SIZE)) {
		memcpy(&v, &m->table[off], size);
	} else if (off >= m->pba_off &&
		   access_ok(off - m->pba_off, size, ((m->n + 63) / 64) * 8)) {
		uint64_t o = off - m->pba_off;

		v = m->pba[o / 8];
		if (size == 4)
			v = (uint32_t)(v >> (o % 8 * 8));
	}
	pthread_mutex_unlock(&m->lock);
	return v;
}

static void msix_table_write(struct msix *m, uint64_t off, uint64_t val, unsigned size)
{
	unsigned v = off / ENTRY_SIZE;
	bool was_masked = vec_masked(m, v);
	bool changed = false;

	for (unsigned i = 0; i < size; i++) {
		unsigned field = (off + i) % ENTRY_SIZE;
		uint8_t mask = field == 0 ? 0xfc :	/* address is dword aligned */
			       field < ENTRY_CTRL ? 0xff :
			       field == ENTRY_CTRL ? ENTRY_CTRL_MASKED : 0;
		uint8_t *p = &m->table[off + i];
		uint8_t nv = (*p & ~mask) | ((uint8_t)(val >> (8 * i)) & mask);

		if (field < ENTRY_CTRL && nv != *p)
			changed = true;
		*p = nv;
	}
	if (changed)
		m->vec[v].stale = true;
	/* Rewritten while live: retarget now, the next delivery must follow. */
	if (!vec_masked(m, v) && (changed || was_masked))
		msix_unmasked(m);
	else if (vec_masked(m, v) && !was_masked)
		msix_masked(m);
}

static void msix_bar_write(void *opaque, uint64_t off, uint64_t val, unsigned size)
{
	struct msix *m = opaque;

	/* The PBA is read-only; writes to it or past the table are dropped. */
	if (!access_ok(off, size, (uint64_t)m->n * ENTRY_SIZE))
		return;
	pthread_mutex_lock(&m->lock);
	msix_table_write(m, off, val, size);
	pthread_mutex_unlock(&m->lock);
}

static const struct bus_ops msix_bar_ops = {
	.read = msix_bar_read, .write = msix_bar_write,
};

static void msix_release(struct msix *m)
{
	for (unsigned v = 0; v < m->n; v++) {
		if (m->vec[v].route >= 0)
			m->irq->ops->msi_route_del(m->irq->opaque, m->vec[v].route);
		if (m->vec[v].efd >= 0)
			close(m->vec[v].efd);
	}
	pthread_mutex_destroy(&m->lock);
	free(m->vec);
	free(m->pba);
	free(m->table);
	free(m);
}

int msix_init(struct pci_device *d, unsigned bar, unsigned nr_vectors,
	      const struct irq_chip *irq)
{
	if (nr_vectors == 0 || nr_vectors > MAX_VECTORS || d->msix)
		return -1;
	struct msix *m = calloc(1, sizeof(*m));

	if (!m)
		return -1;
	pthread_mutex_init(&m->lock, NULL);
	m->irq = irq;
	m->d = d;
	m->n = nr_vectors;
	m->pba_off = nr_vectors * ENTRY_SIZE;
	m->table = calloc(nr_vectors, ENTRY_SIZE);
	m->pba = calloc((nr_vectors + 63) / 64, sizeof(uint64_t));
	m->vec = calloc(nr_vectors, sizeof(*m->vec));
	if (!m->table || !m->pba || !m->vec) {
		free(m->table);
		free(m->pba);
		free(m->vec);
		free(m);
		return -1;
	}
	for (unsigned v = 0; v < nr_vectors; v++) {
		m->table[v * ENTRY_SIZE + ENTRY_CTRL] = ENTRY_CTRL_MASKED;
		m->vec[v].route = -1;
		m->vec[v].efd = -1;
	}
	for (unsigned v = 0; v < nr_vectors; v++) {
		m->vec[v].efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (m->vec[v].efd < 0)
			goto fail;
	}
	uint64_t bar_size = m->pba_off + ((nr_vectors + 63) / 64) * 8;

	if (pci_device_add_bar(d, bar, bar_size, 0, &msix_bar_ops, m) < 0)
		goto fail;
	int cap = pci_device_add_cap(d, PCI_CAP_ID_MSIX, 12);

	if (cap < 0) {
		d->bar[bar] = (struct pci_bar){ 0 };
		goto fail;
	}
	pci_set_word(&d->cfg[cap + 2], nr_vectors - 1);
	pci_set_word(&d->wmask[cap + 2], CTRL_ENABLE | CTRL_FMASK);
	pci_set_long(&d->cfg[cap + 4], 0 | bar);
	pci_set_long(&d->cfg[cap + 8], m->pba_off | bar);
	d->msix = m;
	d->msix_cap = cap;
	return 0;
fail:
	msix_release(m);
	return -1;
}

void msix_free(struct pci_device *d)
{
	if (!d->msix)
		return;
	msix_release(d->msix);
	d->msix = NULL;
}

unsigned msix_nr_vectors(const struct pci_device *d)
{
	return d->msix ? d->msix->n : 0;
}
