// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <linux/magic.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "util/guest-mem.h"

/*
 * KVM maps guest RAM with large NPT/EPT entries only where a transparent
 * huge page of ours lines up with a 2 MiB guest-physical frame; a mapping
 * that is merely page aligned (mmap's default before Linux 6.7) pins every
 * guest access to 4 KiB entries, and each first touch to its own fault.
 * So the mapping is carved out of a larger one at a 2 MiB boundary.
 */
static void *ram_map(uint64_t size, int fd)
{
	uint64_t len = size + GUEST_RAM_ALIGN;
	uint8_t *p, *start;

	if (size == 0 || len < size || len != (size_t)len) {
		errno = ENOMEM;
		return NULL;
	}
	/* Reserve an aligned range first, then put the RAM there. */
	p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	start = (uint8_t *)(((uintptr_t)p + GUEST_RAM_ALIGN - 1) &
			    ~(uintptr_t)(GUEST_RAM_ALIGN - 1));
	if (mmap(start, size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_NORESERVE |
		 (fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED), fd, 0) == MAP_FAILED) {
		int err = errno;

		munmap(p, len);
		errno = err;
		return NULL;
	}
	if (start > p)
		munmap(p, start - p);
	if (p + len > start + size)
		munmap(start + size, p + len - (start + size));
	madvise(start, size, MADV_HUGEPAGE);	/* best effort: THP may be off */
	return start;
}

void *guest_ram_alloc(uint64_t size)
{
	return ram_map(size, -1);
}

void *guest_ram_alloc_shared(uint64_t size, int *fd)
{
	void *p;
	int err;

	*fd = memfd_create("brisk-guest-ram", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0)
		return NULL;
	/*
	 * Sealed at its size: a back-end that maps it can trust it not to
	 * shrink under its accesses (a SIGBUS there would end the back-end).
	 */
	if (size != (uint64_t)(off_t)size || ftruncate(*fd, (off_t)size) < 0 ||
	    fcntl(*fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto fail;
	p = ram_map(size, *fd);
	if (p)
		return p;
fail:
	err = errno;
	close(*fd);
	*fd = -1;
	errno = err;
	return NULL;
}

int guest_mem_add(struct guest_mem *mem, uint64_t gpa, uint64_t size, void *hva)
{
	return guest_mem_add_fd(mem, gpa, size, hva, -1, 0);
}

int guest_mem_add_fd(struct guest_mem *mem, uint64_t gpa, uint64_t size, void *hva,
		     int fd, uint64_t offset)
{
	if (mem->nr_regions == GUEST_MEM_MAX_REGIONS || size == 0 ||
	    gpa + size < gpa)
		return -1;
	for (unsigned i = 0; i < mem->nr_regions; i++) {
		const struct guest_region *r = &mem->region[i];

		if (gpa < r->gpa + r->size && r->gpa < gpa + size)
			return -1;
	}
	mem->region[mem->nr_regions++] = (struct guest_region){
		.gpa = gpa, .size = size, .hva = hva, .fd = fd, .fd_offset = offset,
	};
	mem->ram_size += size;
	return 0;
}

static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/*
 * A peer's file that may shrink under us (not sealed against it, and not
 * sealable by us: a tmpfs or hugetlbfs file, a memfd made without
 * sealing) turns our next access past its new end into a SIGBUS, which
 * would end the whole process with every other peer's disk.  Such
 * mappings are listed here; the handler puts anonymous memory in place of
 * the faulting one, so the access completes (on zeros, or into memory
 * nobody sees), and tells the region's owner through its eventfd, which
 * then drops that peer.  A signal handler has only process-wide state to
 * go on: hence this one table, written under a lock, read lock-free.
 */
#define FRAGILE_MAX 256
struct fragile {
	uintptr_t start;	/* 0: a free slot */
	size_t len;
	size_t page;		/* the mapping's page size: huge on hugetlbfs */
	int fault_fd;
};
static struct fragile fragile[FRAGILE_MAX];
static pthread_mutex_t fragile_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction sigbus_before;
static bool sigbus_installed;	/* under fragile_lock */

/*
 * A slot is read without the lock.  Its mapping stays while the handler
 * may run on it: the owner unmaps only after every thread that touches
 * the region (the rings' I/O threads) has stopped with it, and a slot is
 * emptied before its mapping goes.
 */
static void sigbus_handler(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	int saved = errno;

	/* A file that shrank faults with BUS_ADRERR; no other kind is ours. */
	for (unsigned i = 0; si->si_code == BUS_ADRERR && i < FRAGILE_MAX; i++) {
		uintptr_t start = __atomic_load_n(&fragile[i].start, __ATOMIC_ACQUIRE);
		size_t len = __atomic_load_n(&fragile[i].len, __ATOMIC_RELAXED);
		size_t page = __atomic_load_n(&fragile[i].page, __ATOMIC_RELAXED);
		uint64_t one = 1;

		if (!start || a - start >= len)
			continue;
		/* The faulting page alone: the rest of the file may still be there. */
		if (mmap((void *)(start + ((a - start) & ~(page - 1))), page,
			 PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS |
			 MAP_NORESERVE, -1, 0) == MAP_FAILED)
			break;
		/* Fails only if the count would overflow: the owner knows already. */
		(void)!write(fragile[i].fault_fd, &one, sizeof(one));
		errno = saved;
		return;
	}
	/* Not a peer's memory: as if this handler were not there. */
	if (sigbus_before.sa_flags & SA_SIGINFO) {
		sigbus_before.sa_sigaction(sig, si, uc);
	} else if (sigbus_before.sa_handler != SIG_DFL &&
		   sigbus_before.sa_handler != SIG_IGN) {
		sigbus_before.sa_handler(sig);
	} else if (sigbus_before.sa_handler == SIG_DFL || si->si_code > 0) {
		/* The default (a fault cannot be ignored): the end, as ever. */
		signal(SIGBUS, SIG_DFL);
		if (si->si_code <= 0)
			raise(SIGBUS);	/* sent, not a fault that strikes again */
	}
	errno = saved;
}

static int fragile_add(void *start, size_t len, size_t page, int fault_fd)
{
	int ret = -1;

	pthread_mutex_lock(&fragile_lock);
	if (!sigbus_installed) {
		struct sigaction sa = { .sa_sigaction = sigbus_handler,
					.sa_flags = SA_SIGINFO };

		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGBUS, &sa, &sigbus_before) == 0)
			sigbus_installed = true;
	}
	for (unsigned i = 0; sigbus_installed && i < FRAGILE_MAX; i++) {
		if (fragile[i].start)
			continue;
		fragile[i].len = len;
		fragile[i].page = page;
		fragile[i].fault_fd = fault_fd;
		__atomic_store_n(&fragile[i].start, (uintptr_t)start, __ATOMIC_RELEASE);
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&fragile_lock);
	return ret;
}

static void fragile_del(void *start)
{
	pthread_mutex_lock(&fragile_lock);
	for (unsigned i = 0; i < FRAGILE_MAX; i++)
		if (fragile[i].start == (uintptr_t)start)
			__atomic_store_n(&fragile[i].start, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fragile_lock);
}

/*
 * Whether fd can no longer shrink: sealed so by its owner, or now by us
 * (a memfd made with sealing allowed and not yet sealed against it).
 */
static bool cannot_shrink(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0)
		return false;
	if (seals & F_SEAL_SHRINK)
		return true;
	return !(seals & F_SEAL_SEAL) && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0;
}

int guest_mem_map_fd(struct guest_mem *mem, uint64_t gpa, uint64_t size,
		     uint64_t uva, int fd, uint64_t offset, int fault_fd, const char **why)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t delta, len = size + offset % pg;
	struct guest_region *r;
	struct statfs fs;
	struct stat st;
	bool fragile;
	uint8_t *p;

	*why = NULL;
	if (mem->nr_regions == GUEST_MEM_MAX_REGIONS)
		*why = "too many memory regions";
	else if (size == 0)
		*why = "empty memory region";
	else if (gpa + size < gpa || uva + size < uva || offset + size < offset ||
		 len < size || len != (size_t)len)
		*why = "memory region wraps around";
	for (unsigned i = 0; !*why && i < mem->nr_regions; i++) {
		r = &mem->region[i];
		if (ranges_overlap(gpa, size, r->gpa, r->size))
			*why = "memory regions overlap in guest-physical space";
		else if (r->map && ranges_overlap(uva, size, r->uva, r->size))
			*why = "memory regions overlap in the front-end's address space";
	}
	if (*why)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fstatfs(fd, &fs) < 0) {
		*why = "memory region fd is not a regular file";
		return -1;
	}
	/*
	 * Sealed (or found unsealable) before its size is read: sealed after,
	 * it could have shrunk in between, for good.  A hugetlbfs file is
	 * watched even sealed: a hole punched in it faults once the huge
	 * page pool is empty.
	 */
	fragile = !cannot_shrink(fd) || fs.f_type == HUGETLBFS_MAGIC;
	if (fs.f_type == HUGETLBFS_MAGIC && st.st_blksize > 0 &&
	    !((uint64_t)st.st_blksize & ((uint64_t)st.st_blksize - 1)))
		pg = (uint64_t)st.st_blksize;
	/* Whole pages: the kernel maps and unmaps hugetlbfs files so. */
	delta = offset % pg;
	len = (size + delta + pg - 1) & ~(pg - 1);
	if (len < size || len != (size_t)len) {
		*why = "memory region wraps around";
		return -1;
	}
	/* A mapping beyond the end of the file faults on first touch. */
	if ((uint64_t)st.st_size < offset + size) {
		*why = "memory region extends beyond the end of its file";
		return -1;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd,
		 (off_t)(offset - delta));
	if (p == MAP_FAILED) {
		*why = "cannot map a memory region";
		return -1;
	}
	if (fragile && (fault_fd < 0 || fragile_add(p, len, pg, fault_fd) < 0)) {
		munmap(p, len);
		*why = "memory region file may shrink (no F_SEAL_SHRINK) and cannot be watched";
		return -1;
	}
	r = &mem->region[mem->nr_regions++];
	*r = (struct guest_region){
		.gpa = gpa, .size = size, .hva = p + delta, .uva = uva,
		.map = p, .map_len = len, .fd = -1, .fragile = fragile,
	};
	mem->ram_size += size;
	return 0;
}

void guest_mem_unmap(struct guest_mem *mem)
{
	for (unsigned i = 0; i < mem->nr_regions; i++) {
		if (!mem->region[i].map)
			continue;
		/* Out of the table first: the address may be reused at once. */
		if (mem->region[i].fragile)
			fragile_del(mem->region[i].map);
		munmap(mem->region[i].map, mem->region[i].map_len);
	}
	*mem = (struct guest_mem){ 0 };
}

bool guest_mem_uva_to_gpa(const struct guest_mem *mem, uint64_t uva,
			  uint64_t len, uint64_t *gpa)
{
	if (len == 0)
		len = 1;
	for (unsigned i = 0; i < mem->nr_regions; i++) {
		const struct guest_region *r = &mem->region[i];
		uint64_t off = uva - r->uva;

		if (r->map && off < r->size && len <= r->size - off) {
			*gpa = r->gpa + off;
			return true;
		}
	}
	return false;
}

void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len)
{
	if (len == 0)
		len = 1;
	for (unsigned i = 0; i < mem->nr_regions; i++) {
		const struct guest_region *r = &mem->region[i];
		uint64_t off = gpa - r->gpa;

		/* Unsigned arithmetic: gpa below the region wraps to a huge off. */
		if (off < r->size && len <= r->size - off)
			return r->hva + off;
	}
	return NULL;
}

void *guest_mem_ptr_part(const struct guest_mem *mem, uint64_t gpa, uint64_t len,
			 uint64_t *part)
{
	for (unsigned i = 0; i < mem->nr_regions; i++) {
		const struct guest_region *r = &mem->region[i];
		uint64_t off = gpa - r->gpa;

		if (off < r->size) {
			*part = len < r->size - off ? len : r->size - off;
			return r->hva + off;
		}
	}
	return NULL;
}

bool guest_mem_read(const struct guest_mem *mem, uint64_t gpa, void *dst, size_t len)
{
	const void *p = guest_mem_ptr(mem, gpa, len);

	if (!p)
		return false;
	memcpy(dst, p, len);
	return true;
}

bool guest_mem_write(const struct guest_mem *mem, uint64_t gpa, const void *src, size_t len)
{
	void *p = guest_mem_ptr(mem, gpa, len);

	if (!p)
		return false;
	memcpy(p, src, len);
	return true;
}
