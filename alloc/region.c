/*
 * region.c - map, populate and register the member's one region.
 *
 * The region is mapped once at start with MAP_POPULATE, so no page fault
 * (and no registration surprise) happens on the data path. With huge pages
 * asked for, explicit 2 MiB pages (MAP_HUGETLB) come first; when the system
 * has none reserved the region falls back to small pages with
 * madvise(MADV_HUGEPAGE), and alloc_region_note() says so in one line.
 * Registration goes through a callback pair that rdma/ supplies, so the
 * allocator never calls verbs. The bookkeeping (page table, state bytes,
 * bitmaps) lives outside the region.
 */
#include <stdlib.h>
#include <sys/mman.h>

#include "alloc_internal.h"

#define HUGE_PAGE_SIZE (2ull << 20)

static atomic_uint_fast64_t next_alloc_id = 1;

static uint64_t round_up(uint64_t x, uint64_t to)
{
	return (x + to - 1) / to * to;
}

/* Map len bytes; try huge pages first when asked. Fills a->note on a
 * fallback. Returns the mapping or MAP_FAILED with errno set. */
static void *map_region(struct alloc *a, uint64_t size, bool huge)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE;
	void *p;

	a->map_len = round_up(size, ALLOC_PAGE_SIZE);
	if (huge) {
		uint64_t hlen = round_up(size, HUGE_PAGE_SIZE);
		int e;

		p = mmap(NULL, hlen, PROT_READ | PROT_WRITE,
			 flags | MAP_HUGETLB, -1, 0);
		if (p != MAP_FAILED) {
			a->map_len = hlen;
			a->huge = true;
			return p;
		}
		e = errno;
		p = mmap(NULL, a->map_len, PROT_READ | PROT_WRITE, flags, -1, 0);
		if (p == MAP_FAILED)
			return p;
		if (madvise(p, a->map_len, MADV_HUGEPAGE) == 0)
			snprintf(a->note, sizeof(a->note),
				 "huge pages asked for but mmap(MAP_HUGETLB, %llu bytes) failed (%s; see HugePages_Free in /proc/meminfo): using 4 KiB pages with transparent huge pages advised",
				 (unsigned long long)hlen, strerror(e));
		else
			snprintf(a->note, sizeof(a->note),
				 "huge pages asked for but mmap(MAP_HUGETLB, %llu bytes) failed (%s; see HugePages_Free in /proc/meminfo) and transparent huge pages are unavailable: using 4 KiB pages",
				 (unsigned long long)hlen, strerror(e));
		return p;
	}
	return mmap(NULL, a->map_len, PROT_READ | PROT_WRITE, flags, -1, 0);
}

/* The side tables: page table, state bytes, slab bitmaps and headers. */
static int alloc_tables(struct alloc *a)
{
	size_t n = a->npages;

	a->pages = calloc(n, sizeof(*a->pages));
	a->pinfo = calloc(n, sizeof(*a->pinfo));
	/* Mapped, so that it is page aligned (a page's state bytes are one
	 * cache line) and zero without being touched. */
	a->state = mmap(NULL, n * 64, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a->state == MAP_FAILED)
		a->state = NULL;
	a->freebits = calloc(n, sizeof(*a->freebits));
	a->slabs = calloc(n / ALLOC_SLAB_MIN_PAGES + 1, sizeof(*a->slabs));
	if (!a->pages || !a->pinfo || !a->state || !a->freebits || !a->slabs)
		return -ENOMEM;
	return 0;
}

static void free_tables(struct alloc *a)
{
	free(a->pages);
	free(a->pinfo);
	if (a->state)
		munmap((void *)a->state, a->npages * (size_t)64);
	free(a->freebits);
	free(a->slabs);
}

static void init_sync(struct alloc *a)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&a->ext_lock, NULL);
	pthread_mutex_init(&a->wait_lock, NULL);
	/* Timed waits use CLOCK_MONOTONIC so a clock change cannot stretch
	 * them. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->wait_cond, &ca);
	pthread_condattr_destroy(&ca);
}

static int check_params(const struct alloc_params *p, struct squall_error *err)
{
	if (!p)
		return squall_error_set(err, -EINVAL, "alloc_create: no parameters");
	if (p->region_size < ALLOC_MAX_CLASS_SIZE ||
	    p->region_size > ALLOC_MAX_REGION)
		return squall_error_set(err, -EINVAL,
			"alloc_create: region_size %llu out of range (%u .. %llu bytes)",
			(unsigned long long)p->region_size, ALLOC_MAX_CLASS_SIZE,
			(unsigned long long)ALLOC_MAX_REGION);
	return 0;
}

int alloc_create(const struct alloc_params *p, struct alloc **out,
		 struct squall_error *err)
{
	struct alloc *a;
	void *base;
	int rc;

	rc = check_params(p, err);
	if (rc)
		return rc;
	a = calloc(1, sizeof(*a));
	if (!a)
		return squall_error_set(err, -ENOMEM, "alloc_create: out of memory");
	base = map_region(a, p->region_size, p->huge_pages);
	if (base == MAP_FAILED) {
		rc = -errno;
		squall_error_set(err, rc, "alloc_create: mmap of %llu bytes: %s",
				 (unsigned long long)p->region_size, strerror(errno));
		free(a);
		return rc;
	}
	a->h.base = base;
	a->h.len = a->map_len;
	atomic_init(&a->hit_len, a->h.len);
	a->npages = (uint32_t)(a->map_len >> ALLOC_PAGE_SHIFT);
	a->id = atomic_fetch_add(&next_alloc_id, 1);
	rc = alloc_tables(a);
	if (rc) {
		squall_error_set(err, rc, "alloc_create: out of memory for the tables of a %zu-byte region",
				 a->map_len);
		goto fail;
	}
	a->state_at = (uintptr_t)a->state - (uintptr_t)base / 64;
	init_sync(a);
	slab_init_classes(a);
	ext_init(a);
	if (p->reg) {
		rc = p->reg(p->reg_ctx, base, a->map_len, &a->h.lkey, &a->h.rkey);
		if (rc) {
			squall_error_set(err, rc < 0 ? rc : -EIO,
				"alloc_create: registering the %zu-byte region failed (%d)",
				a->map_len, rc);
			rc = rc < 0 ? rc : -EIO;
			goto fail;
		}
		a->registered = true;
		a->dereg = p->dereg;
		a->reg_ctx = p->reg_ctx;
	}
	*out = a;
	return 0;
fail:
	free_tables(a);
	munmap(base, a->map_len);
	free(a);
	return rc;
}

void alloc_destroy(struct alloc *a)
{
	unsigned i;

	if (!a)
		return;
	tcache_detach_all(a);
	if (a->registered && a->dereg)
		a->dereg(a->reg_ctx);
	munmap(a->h.base, a->map_len);
	for (i = 0; i < ALLOC_NCLASSES; i++)
		pthread_mutex_destroy(&a->cls[i].lock);
	pthread_mutex_destroy(&a->ext_lock);
	pthread_mutex_destroy(&a->wait_lock);
	pthread_cond_destroy(&a->wait_cond);
	free_tables(a);
	free(a);
}

const char *alloc_region_note(const struct alloc *a)
{
	return a->note;
}

bool alloc_huge_pages(const struct alloc *a)
{
	return a->huge;
}
