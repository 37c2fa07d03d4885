// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One virtqueue served on an I/O thread (include/virtio/virtio-server.h).
 * The device lock is taken once per round of pops and once per batch of
 * completions, never per request.
 */

#include "virtio/virtio-server.h"

void virtio_server_init(struct virtio_server *sv, const char *what, struct virtio_device *vdev,
			unsigned idx, const struct virtio_server_ops *ops, size_t size,
			unsigned max_cached)
{
	sv->what = what;
	sv->vdev = vdev;
	sv->idx = idx;
	sv->ops = ops;
	pthread_cond_init(&sv->drained, NULL);
	vq_elem_cache_init(&sv->cache, size, max_cached);
}

void virtio_server_destroy(struct virtio_server *sv)
{
	/* Nothing of this queue's is left on the thread to touch sv->done. */
	while (sv->done) {
		struct vs_req *r = sv->done;

		sv->done = r->next;
		vq_elem_put(&sv->cache, &r->elem);
	}
	pthread_cond_destroy(&sv->drained);
	vq_elem_cache_destroy(&sv->cache);
}

void virtio_server_close(struct virtio_server *sv)
{
	__atomic_store_n(&sv->closing, true, __ATOMIC_RELEASE);
}

/*
 * Polling: the I/O thread checks the avail ring and the back end's
 * completions itself while it spins, so the guest needs no kick (no VM
 * exit) for requests it adds meanwhile.
 */
bool virtio_server_poll_ready(void *opaque)
{
	struct virtio_server *sv = opaque;
	struct virtio_device *vdev = sv->vdev;
	bool work;

	if (sv->ops->backend_ready && sv->ops->backend_ready(sv))
		return true;
	pthread_mutex_lock(&vdev->lock);
	work = sv->serving && !vdev->broken &&
	       virtqueue_has_work(&vdev->queues[sv->idx].vq);
	pthread_mutex_unlock(&vdev->lock);
	return work;
}

void virtio_server_poll_quiesce(void *opaque, bool quiet)
{
	struct virtio_server *sv = opaque;
	struct virtio_device *vdev = sv->vdev;

	pthread_mutex_lock(&vdev->lock);
	sv->polling = quiet;
	if (sv->serving && !vdev->broken)
		virtqueue_set_notification(&vdev->queues[sv->idx].vq, !quiet);
	pthread_mutex_unlock(&vdev->lock);
}

void virtio_server_start_locked(struct virtio_server *sv, bool serving)
{
	sv->serving = serving;
}

void virtio_server_restart_locked(struct virtio_server *sv)
{
	sv->serving = true;
	/* The ring may still say "no kicks" from a poll before the stop. */
	virtqueue_set_notification(&sv->vdev->queues[sv->idx].vq, !sv->polling);
}

void virtio_server_reset_locked(struct virtio_server *sv)
{
	sv->serving = false;
	sv->gen++;
}

unsigned virtio_server_busy(const struct virtio_server *sv)
{
	return __atomic_load_n(&sv->in_backend, __ATOMIC_ACQUIRE);
}

void virtio_server_stop_locked(struct virtio_server *sv)
{
	sv->serving = false;
	sv->stopping = true;
	while (sv->outstanding)
		pthread_cond_wait(&sv->drained, &sv->vdev->lock);
	sv->stopping = false;
}
