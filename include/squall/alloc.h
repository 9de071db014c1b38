/*
 * alloc.h - the member's registered region and the allocator that carves it.
 *
 * Every byte a transport touches lives in one region per member: mapped and
 * populated at start, registered once with the NIC through a callback that
 * rdma/ supplies. The allocator hands out pieces of it:
 *
 *   - leases: alloc_lease() hands out n buffers of any sizes at once, all or
 *     none; an application may hold as many leases as it likes, fill them
 *     from any thread and release them (or give them to a send) in any order.
 *     Sizes up to ALLOC_MAX_CLASS_SIZE come from size-class slabs with
 *     per-thread caches; larger ones are page-granular extents.
 *   - typed objects: alloc_new()/alloc_delete().
 *   - reservations: alloc_reserve() carves a permanent, page-aligned area
 *     (the SST table, SMC rings) that is never released.
 *
 * A buffer is described by a struct buf_desc. Each lease has a state:
 *
 *   free      --alloc_lease-->    leased     (application)
 *   leased    --alloc_release-->  free       (application)
 *   leased    --alloc_submit-->   submitted  (transport: the app sent it)
 *   submitted --alloc_complete--> free       (transport: done with it)
 *   leased    --alloc_deliver-->  delivered  (transport: a received message)
 *   delivered --alloc_release-->  free       (application)
 *   delivered --alloc_submit-->   submitted  (the app forwards the message)
 *
 * Misuse never corrupts the allocator: releasing a buffer twice returns
 * -EALREADY, releasing (or submitting again) a submitted buffer returns
 * -EBUSY, and a pointer that is not the start of a lease, or lies outside the
 * region, returns -EINVAL, as every call that returns an error code does
 * for a NULL allocator. Reserved areas return -EPERM to every state call.
 * The checks are O(1): a state byte per slot in a side table.
 *
 * Thread safety: every call except alloc_create/alloc_destroy may be made by
 * any number of threads at once. Every sequence of calls on a buffer is
 * checked, whichever threads make them. Not arbitrated: a release racing,
 * at the same instant, with another call on the same buffer from another
 * application thread (two releases, or a release and a submit). That is a
 * data race in the application, as two simultaneous free() calls are; the
 * release path checks the state byte with a plain load and store because a
 * locked instruction there costs about a third of a lease plus release.
 * The transport's calls (submit, complete, deliver) change the state with a
 * compare-and-swap, so they never both succeed on one buffer.
 *
 * A group owns one allocator and hands it out with group_get_allocator();
 * alloc_create() builds a standalone one.
 */
#ifndef SQUALL_ALLOC_H
#define SQUALL_ALLOC_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <squall/error.h>

/* libsquall's ABI: the library is built with hidden visibility, and the
 * calls declared below are what it exports (squall.map lists them). */
#pragma GCC visibility push(default)

/* A buffer in the region: where it starts and how many bytes the holder
 * asked for (the slot behind it may be larger). */
struct buf_desc {
	void *ptr;
	size_t len;
};

struct alloc;

/* Register [base, base+len) with the NIC; fill the local and remote keys.
 * Returns 0 or a negative errno. Called once, by alloc_create(). */
typedef int (*alloc_reg_fn)(void *ctx, void *base, size_t len,
			    uint32_t *lkey, uint32_t *rkey);
/* Undo the registration; called once, by alloc_destroy(). */
typedef void (*alloc_dereg_fn)(void *ctx);

struct alloc_params {
	uint64_t region_size;  /* bytes; rounded up to the page (or huge page)
				  size; 64 KiB .. 64 GiB */
	bool huge_pages;       /* try 2 MiB huge pages (MAP_HUGETLB), fall back
				  to transparent huge pages, then small pages;
				  alloc_region_note() says what happened */
	alloc_reg_fn reg;      /* NULL: the region is not registered, keys 0 */
	alloc_dereg_fn dereg;  /* may be NULL */
	void *reg_ctx;         /* passed to reg and dereg */
};

/* The smallest and the largest slab size class; larger leases are extents. */
#define ALLOC_MIN_CLASS_SIZE 64u
#define ALLOC_MAX_CLASS_SIZE 65536u
/* Granularity of extents and reservations. */
#define ALLOC_PAGE_SIZE 4096u

/* States of a buffer, as alloc_state() reports them. */
enum alloc_buf_state {
	ALLOC_FREE = 0,
	ALLOC_LEASED = 1,
	ALLOC_SUBMITTED = 2,
	ALLOC_DELIVERED = 3,
	ALLOC_RESERVED = 4,
};

/* The fixed head of every struct alloc, read by the inline calls below.
 * Never written after alloc_create(). */
struct alloc_head {
	char *base;     /* first byte of the region */
	size_t len;     /* bytes in the region */
	uint32_t lkey;  /* from the registration callback */
	uint32_t rkey;
};

/* Map, populate and register a region as p describes, and build its
 * allocator. Returns 0 and *out, or a negative errno with err saying what
 * failed (-EINVAL bad parameters, -ENOMEM the mapping, or the registration
 * callback's code). Nothing is left mapped or registered on failure. */
int alloc_create(const struct alloc_params *p, struct alloc **out,
		 struct squall_error *err);

/* Deregister and unmap the region and free the allocator. No other thread
 * may use a at the same time; every lease becomes invalid. NULL is a no-op. */
void alloc_destroy(struct alloc *a);

/* One line on how the region was mapped, e.g. why huge pages were not used;
 * "" when everything went as asked. Valid until alloc_destroy(). */
const char *alloc_region_note(const struct alloc *a);

/* True when the region is backed by explicit (hugetlbfs) huge pages. */
bool alloc_huge_pages(const struct alloc *a);

/* The region: its first byte and its length. */
static inline void alloc_region(const struct alloc *a, void **base, size_t *len)
{
	const struct alloc_head *h = (const struct alloc_head *)a;

	*base = h->base;
	*len = h->len;
}

/* The keys the registration callback returned (0 when unregistered). */
static inline uint32_t alloc_lkey(const struct alloc *a)
{
	return ((const struct alloc_head *)a)->lkey;
}

static inline uint32_t alloc_rkey(const struct alloc *a)
{
	return ((const struct alloc_head *)a)->rkey;
}

/* True when [ptr, ptr+len) lies inside the region. O(1). */
static inline bool alloc_owns(const struct alloc *a, const void *ptr, size_t len)
{
	const struct alloc_head *h = (const struct alloc_head *)a;
	uintptr_t off = (uintptr_t)ptr - (uintptr_t)h->base;

	/* Unsigned wrap-around turns a pointer below base into a huge offset. */
	return off < h->len && len <= h->len - off;
}

/* Resolve a descriptor to its offset in the region and the local key, for
 * building a scatter/gather entry. O(1). Returns 0, or -EINVAL when the
 * described range is not inside the region. */
static inline int alloc_desc_resolve(const struct alloc *a,
				     const struct buf_desc *d,
				     uint64_t *offset, uint32_t *lkey)
{
	const struct alloc_head *h = (const struct alloc_head *)a;

	if (!alloc_owns(a, d->ptr, d->len))
		return -EINVAL;
	*offset = (uint64_t)((const char *)d->ptr - h->base);
	*lkey = h->lkey;
	return 0;
}

/* Lease n buffers; buffer i holds at least sizes[i] bytes (sizes[i] > 0) and
 * is aligned to 16 bytes (to the page when larger than
 * ALLOC_MAX_CLASS_SIZE). Fills out[0..n-1] with len = sizes[i]. All or none:
 * on failure nothing is leased and out is left undefined. Returns 0,
 * -EINVAL (a NULL allocator, n == 0, a NULL array, a size of 0) or
 * -ENOMEM (not enough space; the failure is counted in the statistics). */
int alloc_lease(struct alloc *a, size_t n, const size_t *sizes,
		struct buf_desc *out);

/* Like alloc_lease(), but when the region has no room it waits up to
 * timeout_ms for other threads to give space back before failing with
 * -ENOMEM (-ETIMEDOUT is never returned: the caller only needs one code).
 * While a thread waits, every release goes straight to the shared pool
 * (with the releasing thread's whole cache) and wakes it.
 *
 * About caches: before failing, a lease gives back its own thread's cached
 * slots and every empty slab. After a failure (of a size the region could
 * hold), and while anyone waits, every release (for 100 ms after the last
 * such failure, or as long as the wait lasts) goes straight to the shared
 * pool together with the releasing thread's whole cache. Free slots cached earlier by a thread that stays
 * idle (at most 256 KiB per class, 4 slots for the largest classes) come
 * back when it next releases or exits. Threads take a class's slots from
 * slabs of their own (64 KiB or more each) while the region has room for
 * them, so a class may hold one partly used slab per thread that leases
 * from it; a thread's slabs serve the others once it exits. */
int alloc_lease_wait(struct alloc *a, size_t n, const size_t *sizes,
		     struct buf_desc *out, unsigned timeout_ms);

/* Give a leased or delivered buffer back. d->ptr must be the start of the
 * lease and d->len at most its size. Returns 0, -EALREADY (already free),
 * -EBUSY (submitted: the transport still owns it), -EPERM (a reservation)
 * or -EINVAL (a NULL allocator, not the start of a lease, outside the
 * region, len too long). */
int alloc_release(struct alloc *a, const struct buf_desc *d);

/* One buffer, the descriptor by value: what alloc_lease() with n = 1 and
 * alloc_release() do, with the same checks, but the descriptor travels in
 * registers rather than through memory, as malloc()'s size and pointer
 * do, which takes instructions off every call. alloc_lease_one()
 * returns { ptr, len }, or { NULL, 0 } with errno EINVAL (len 0, a NULL
 * allocator) or ENOMEM (not enough space; counted in the statistics).
 * alloc_release_one() returns what alloc_release() would. A buffer leased
 * by either form may be released by either. */
struct buf_desc alloc_lease_one(struct alloc *a, size_t len);
int alloc_release_one(struct alloc *a, struct buf_desc d);

/* The descriptor calls take the by-value path where they can, in the
 * caller: alloc_lease() with n a constant 1 and the arrays not NULL
 * becomes alloc_lease_one() (its errno stays set on a failure), and
 * alloc_release() passes *d by value to alloc_release_one(). The results
 * are the same; a descriptor the caller keeps in a local then never goes
 * through memory. Write (alloc_lease)(...) or take the function's address
 * for the exported call as it is, or #undef the macros to have it
 * everywhere (they expand any alloc_lease( and alloc_release( that follows
 * the header, a struct member's name too). */
static inline __attribute__((always_inline)) int
alloc_lease_inline(struct alloc *a, size_t n, const size_t *sizes,
		   struct buf_desc *out)
{
	if (__builtin_constant_p(n) && n == 1 && sizes && out) {
		struct buf_desc d = alloc_lease_one(a, sizes[0]);

		*out = d;
		/* errno is EINVAL or ENOMEM then; a failure is never 0. */
		return d.ptr ? 0 : errno > 0 ? -errno : -ENOMEM;
	}
	return (alloc_lease)(a, n, sizes, out);
}

static inline __attribute__((always_inline)) int
alloc_release_inline(struct alloc *a, const struct buf_desc *d)
{
	return alloc_release_one(a, *d);
}

/* Variadic, so that an argument may hold commas: a compound literal. */
#define alloc_lease(...) alloc_lease_inline(__VA_ARGS__)
#define alloc_release(...) alloc_release_inline(__VA_ARGS__)

/* alloc_release() for each of n descriptors. Every descriptor is tried;
 * returns 0 or the first error met (descriptors that failed are untouched). */
int alloc_release_n(struct alloc *a, size_t n, const struct buf_desc *d);

/* Transport: the application handed the leased (or delivered) buffer d to
 * a send; it belongs to the runtime until alloc_complete(). Returns 0,
 * -EBUSY (already submitted), -EALREADY (free), -EPERM or -EINVAL. */
int alloc_submit(struct alloc *a, const struct buf_desc *d);

/* Transport: the send d was submitted to was never posted (no room in
 * the send queue): it is the application's lease again. Returns 0 or
 * -EINVAL (not a submitted lease). */
int alloc_unsubmit(struct alloc *a, const struct buf_desc *d);

/* Transport: finished with the submitted buffer d; it returns to the free
 * pool. Returns 0, -EALREADY (free), -EPERM, or -EINVAL (not a lease, or
 * a lease that was never submitted). */
int alloc_complete(struct alloc *a, const struct buf_desc *d);

/* Transport, receive side: the leased buffer d now holds a message for the
 * application, who will alloc_release() it. Returns 0, -EBUSY (submitted),
 * -EALREADY (free or already delivered), -EPERM or -EINVAL. */
int alloc_deliver(struct alloc *a, const struct buf_desc *d);

/* The state of the lease that starts at ptr (enum alloc_buf_state), or
 * -EINVAL when ptr is not the start of a slot, extent or reservation. */
int alloc_state(struct alloc *a, const void *ptr);

/* Carve a permanent area of size bytes aligned to align (a power of two;
 * at least the page, at most 1 GiB) out of the region, for structures that
 * live as long as the member (the SST table, SMC rings). It is never
 * released; state calls on it return -EPERM. Returns 0, -EINVAL or -ENOMEM. */
int alloc_reserve(struct alloc *a, size_t size, size_t align,
		  struct buf_desc *out);

/* Typed objects in the region: zeroed memory for one object of `size`
 * bytes, or NULL when there is no room. Free it with alloc_obj_delete(),
 * which returns what alloc_release() would. */
void *alloc_obj_new(struct alloc *a, size_t size);
int alloc_obj_delete(struct alloc *a, void *obj);

#define alloc_new(a, type) ((type *)alloc_obj_new((a), sizeof(type)))
#define alloc_delete(a, obj) alloc_obj_delete((a), (obj))

/* Size classes: how many there are, and the slot size of class i. The last
 * "class" index alloc_nclasses() stands for extents in alloc_stats(). */
unsigned alloc_nclasses(void);
size_t alloc_class_size(unsigned i);

/* Counters of one size class (or of extents, i == alloc_nclasses()). */
struct alloc_class_stats {
	size_t size;            /* slot size; 0 for extents */
	uint64_t leases;        /* buffers handed out */
	uint64_t releases;      /* buffers given back (release or complete) */
	uint64_t bytes_in_use;  /* slot (or page) bytes leased right now */
	uint64_t high_water;    /* peak bytes taken from the shared pool:
				   leased, plus slots parked in per-thread
				   caches (at most one cache per thread above
				   the true peak of leased bytes) */
	uint64_t failures;      /* leases refused with -ENOMEM */
	uint64_t slabs;         /* slabs the class holds now (0 for extents) */
};

/* Fill st with the counters of class i (0 .. alloc_nclasses()). Counts of
 * other threads are read without stopping them (a snapshot's releases
 * never pass its leases). Returns 0 or -EINVAL. */
int alloc_stats(struct alloc *a, unsigned i, struct alloc_class_stats *st);

/* Print the region and one line per class that was ever used to f. This is
 * the only call of the allocator that writes anywhere. A NULL a prints a
 * line saying so; a NULL f prints nothing. */
void alloc_stats_print(struct alloc *a, FILE *f);

#pragma GCC visibility pop

#endif /* SQUALL_ALLOC_H */
