/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_UTIL_GUEST_MEM_H
#define BRISK_UTIL_GUEST_MEM_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/* A vhost-user front-end may share up to 8 regions. */
#define GUEST_MEM_MAX_REGIONS 8

/* A range of guest-physical RAM backed by host memory at hva. */
struct guest_region {
	uint64_t gpa;
	uint64_t size;
	uint8_t *hva;
	/*
	 * Regions shared by another process (guest_mem_map_fd): where it
	 * sees gpa in its own address space, and our mapping to undo.
	 */
	uint64_t uva;
	void *map;		/* NULL: the caller owns hva */
	size_t map_len;
	bool fragile;		/* its file may shrink: watched for SIGBUS */
	/*
	 * Guest RAM of ours that another process may map too (a vhost-user
	 * back-end): the file hva maps, from fd_offset on; -1 otherwise.
	 */
	int fd;
	uint64_t fd_offset;
};

struct guest_mem {
	struct guest_region region[GUEST_MEM_MAX_REGIONS];
	unsigned nr_regions;
	uint64_t ram_size;	/* sum of region sizes */
};

#define GUEST_RAM_ALIGN (2u << 20)

/*
 * Anonymous memory for guest RAM, GUEST_RAM_ALIGN aligned so the host can
 * back it with huge pages; NULL on failure (errno set by mmap).  Free it
 * with munmap(p, size).
 */
void *guest_ram_alloc(uint64_t size);

/*
 * The same in a memfd, mapped shared, so that another process given *fd
 * can map it as well; NULL (errno set) on failure.  Free it with
 * munmap(p, size) and close(*fd).
 */
void *guest_ram_alloc_shared(uint64_t size, int *fd);

/* Regions must not overlap; returns -1 if the table is full. */
int guest_mem_add(struct guest_mem *mem, uint64_t gpa, uint64_t size, void *hva);
/* The same for RAM that fd maps from offset on (guest_ram_alloc_shared). */
int guest_mem_add_fd(struct guest_mem *mem, uint64_t gpa, uint64_t size, void *hva,
		     int fd, uint64_t offset);

/*
 * Maps size bytes of fd, starting offset bytes in, as the region at gpa
 * that the process sharing it knows at user address uva (a vhost-user
 * front-end's memory table entry).  The peer is not trusted: the three
 * ranges must not wrap, neither the guest-physical nor the user range may
 * overlap another region's, and fd must be a regular file (memfd, tmpfs,
 * hugetlbfs) at least offset + size long.  -1 with *why on refusal.
 *
 * The peer may also shrink the file under us.  A memfd sealed with
 * F_SEAL_SHRINK cannot; one that may still be sealed is sealed so here.
 * Any other file is mapped only with a fault_fd (an eventfd; -1: refuse
 * such files): an access past the file's end then reads zeros instead of
 * raising SIGBUS, and fault_fd is written, for the owner to drop the peer
 * and unmap.
 */
int guest_mem_map_fd(struct guest_mem *mem, uint64_t gpa, uint64_t size,
		     uint64_t uva, int fd, uint64_t offset, int fault_fd, const char **why);
/* Unmaps what guest_mem_map_fd() mapped and empties the table. */
void guest_mem_unmap(struct guest_mem *mem);
/*
 * A user address of the sharing process as a guest-physical address:
 * true when [uva, uva + len) lies inside one mapped region.
 */
bool guest_mem_uva_to_gpa(const struct guest_mem *mem, uint64_t uva,
			  uint64_t len, uint64_t *gpa);

/*
 * The one place where a guest-physical address becomes a host pointer.
 * Returns NULL unless [gpa, gpa + len) lies wholly inside one RAM region
 * without wrapping.  len == 0 is checked as a 1-byte access, so a returned
 * pointer always points into guest RAM.
 */
void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len);
/*
 * The same for a range that may span regions: the host pointer for gpa,
 * and in *part how much of [gpa, gpa + len) its region holds from there
 * (at least 1 byte, at most len, which must not be 0); NULL if gpa is in
 * no region.
 */
void *guest_mem_ptr_part(const struct guest_mem *mem, uint64_t gpa, uint64_t len,
			 uint64_t *part);

/* Copy helpers: false (and nothing copied) when the range is not RAM. */
bool guest_mem_read(const struct guest_mem *mem, uint64_t gpa, void *dst, size_t len);
bool guest_mem_write(const struct guest_mem *mem, uint64_t gpa, const void *src, size_t len);

#endif
