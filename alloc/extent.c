/*
 * extent.c - page-granular runs of the region: slabs, large leases and
 * reservations all come from here.
 *
 * Free runs sit in 32 bins by floor(log2(pages)) and carry boundary tags
 * (size and start on their first and last page), so freeing a run merges
 * it with a free neighbour on either side in O(1): the region never holds
 * two adjacent free runs. Allocation is first fit from the smallest bin
 * that can hold the request, with optional alignment; the leftovers on
 * either side go back as free runs. Everything here runs under ext_lock.
 */
#include "alloc_internal.h"

static unsigned bin_of(uint32_t npages)
{
	return 31u - (unsigned)__builtin_clz(npages);
}

static void bin_insert(struct alloc *a, uint32_t first, uint32_t n)
{
	struct page *pg = a->pages;
	unsigned b = bin_of(n);

	pg[first].kind = RUN_FREE;
	pg[first].first = first;
	pg[first].npages = n;
	pg[first + n - 1].kind = RUN_FREE;
	pg[first + n - 1].first = first;
	pg[first + n - 1].npages = n;
	pg[first].prev = ALLOC_NIL;
	pg[first].next = a->bins[b];
	if (a->bins[b] != ALLOC_NIL)
		pg[a->bins[b]].prev = first;
	a->bins[b] = first;
}

static void bin_remove(struct alloc *a, uint32_t first)
{
	struct page *pg = a->pages;
	struct page *r = &pg[first];

	if (r->prev != ALLOC_NIL)
		pg[r->prev].next = r->next;
	else
		a->bins[bin_of(r->npages)] = r->next;
	if (r->next != ALLOC_NIL)
		pg[r->next].prev = r->prev;
}

int ext_init(struct alloc *a)
{
	unsigned b;

	for (b = 0; b < 32; b++)
		a->bins[b] = ALLOC_NIL;
	bin_insert(a, 0, a->npages);
	return 0;
}

/* Where an aligned run of n pages starts inside free run r, or ALLOC_NIL. */
static uint32_t fit(const struct alloc *a, uint32_t r, uint32_t n,
		    uint32_t align)
{
	uint64_t start = r, end = (uint64_t)r + a->pages[r].npages;
	uintptr_t base = (uintptr_t)a->h.base >> ALLOC_PAGE_SHIFT;

	/* Alignment is of the address, not the page index: the region itself
	 * is only page aligned (2 MiB with huge pages). */
	if (align > 1)
		start = ((base + start + align - 1) & ~((uint64_t)align - 1)) - base;
	if (start + n > end)
		return ALLOC_NIL;
	return (uint32_t)start;
}

uint32_t ext_alloc(struct alloc *a, uint32_t n, uint32_t align)
{
	uint32_t r, s, rn;
	unsigned b;

	assert(n > 0);
	for (b = bin_of(n); b < 32; b++) {
		for (r = a->bins[b]; r != ALLOC_NIL; r = a->pages[r].next) {
			s = fit(a, r, n, align);
			if (s == ALLOC_NIL)
				continue;
			rn = a->pages[r].npages;
			bin_remove(a, r);
			if (s > r)
				bin_insert(a, r, s - r);
			if (s + n < r + rn)
				bin_insert(a, s + n, r + rn - (s + n));
			return s;
		}
	}
	return ALLOC_NIL;
}

void ext_mark(struct alloc *a, uint32_t first, uint32_t n, uint8_t kind,
	      uint8_t cls)
{
	uint32_t p, info = kind == RUN_SLAB ?
		pinfo_slab(cls, (uint32_t)class_size(cls)) : 0;

	for (p = first; p < first + n; p++) {
		a->pages[p].first = first;
		a->pages[p].kind = kind;
		a->pages[p].cls = cls;
		a->pinfo[p] = info;
		/* Clears a tombstone; a slab rewrites every byte of its run. */
		atomic_store_explicit(&a->state[p * 64], 0,
				      memory_order_relaxed);
	}
	a->pages[first].npages = n;
}

void ext_free(struct alloc *a, uint32_t first)
{
	struct page *pg = a->pages;
	uint32_t n = pg[first].npages;

	uint32_t p;

	assert(pg[first].kind != RUN_FREE && pg[first].first == first);
	/* Every page of a free run says so: a stale pointer into it resolves
	 * to nothing. */
	for (p = first; p < first + n; p++) {
		pg[p].kind = RUN_FREE;
		a->pinfo[p] = 0;
	}
	/* Merge with the free run that ends just before, then with the one
	 * that starts just after: their boundary tags say where they are. */
	if (first > 0 && pg[first - 1].kind == RUN_FREE) {
		uint32_t left = pg[first - 1].first;

		bin_remove(a, left);
		n += first - left;
		first = left;
	}
	if (first + n < a->npages && pg[first + n].kind == RUN_FREE) {
		uint32_t right = first + n;

		bin_remove(a, right);
		n += pg[right].npages;
	}
	bin_insert(a, first, n);
}
