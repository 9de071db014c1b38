/*
 * lease.c - leases, their states, and the calls transports make on them.
 *
 * A lease of up to 64 KiB pops a slot from the calling thread's cache and
 * stores LEASED in its state byte; a release resolves the pointer in O(1)
 * (the page says which slab, a multiply gives the slot number), checks and
 * moves the state byte, and pushes the slot back on the cache. The state
 * byte is what keeps misuse harmless: a second release of a buffer, a
 * release of a submitted one or of a pointer that is no lease start is
 * refused before anything changes, so a slot never sits in the free pool
 * twice. The transport's calls change the byte with a compare-and-swap,
 * since they meet the application on the same buffer. Larger leases are
 * extents (extent.c) under one lock. A multi-lease takes its buffers one by
 * one and gives back what it took when one of them cannot be served.
 */
#include <stdlib.h>
#include <time.h>

#include "alloc_internal.h"

/* Where a pointer lives: its class (ALLOC_LARGE for extents), its state
 * index and its slot size. */
struct where {
	unsigned cls;
	uint32_t sidx;
	uint32_t first;     /* extents: first page */
	uint64_t off;
	uint64_t size;
	bool reserved;
};

/* Resolve the start of a lease in O(1): -EINVAL when ptr is outside the
 * region or not where a slot, extent or reservation starts. */
static inline int resolve(const struct alloc *a, const void *ptr,
			  struct where *w)
{
	uintptr_t off = (uintptr_t)ptr - (uintptr_t)a->h.base;
	const struct page *pg;
	uint32_t p, q;

	if (unlikely(off >= a->h.len))
		return -EINVAL;
	p = (uint32_t)(off >> ALLOC_PAGE_SHIFT);
	pg = &a->pages[p];
	q = pg->first;
	w->off = off;
	if (likely(pg->kind == RUN_SLAB)) {
		const struct class_info *c = &a->ci[pg->cls];
		uint64_t rel = off - ((uint64_t)q << ALLOC_PAGE_SHIFT);
		/* rel < 2^19 and magic <= 2^34 + 1: exact floor(rel / size)
		 * without a divide (the error term stays below 1 / size). */
		uint64_t idx = (rel * c->magic) >> 40;

		if (unlikely(idx * c->size != rel || idx >= c->nslots))
			return -EINVAL;
		w->cls = pg->cls;
		w->first = q;
		w->sidx = q * 64 + (uint32_t)idx;
		w->size = c->size;
		w->reserved = false;
		return 0;
	}
	if (pg->kind == RUN_FREE) {
		/* A released extent left a tombstone on its first page. */
		if (!(off & (ALLOC_PAGE_SIZE - 1)) &&
		    atomic_load_explicit(&a->state[p * 64],
					 memory_order_relaxed) == ALLOC_TOMB)
			return -EALREADY;
		return -EINVAL;
	}
	if (p != q || (off & (ALLOC_PAGE_SIZE - 1)))
		return -EINVAL;
	w->cls = ALLOC_LARGE;
	w->sidx = q * 64;
	w->first = q;
	w->size = (uint64_t)a->pages[q].npages << ALLOC_PAGE_SHIFT;
	w->reserved = pg->kind == RUN_RESERVED;
	return 0;
}

/* Move a state byte from one of the states in `from` (a bit mask) to `to`.
 * Returns 0, or the error that the state it found calls for. */
static inline int state_error(unsigned char s, int busy_err, int other_err)
{
	if (s == ALLOC_FREE)
		return -EALREADY;
	if (s == ALLOC_SUBMITTED)
		return busy_err;
	return other_err;
}

/* The application's own calls (release): a plain load and store. Every
 * sequence of calls is checked; two threads releasing one buffer at the
 * same instant is a data race of the application, which this path does not
 * arbitrate (a locked instruction here would cost a third of a lease plus
 * release; see alloc.h). */
static inline int app_change(atomic_uchar *st, unsigned from, unsigned char to,
			     int busy_err, int other_err)
{
	unsigned char s = atomic_load_explicit(st, memory_order_relaxed);

	if (unlikely(!(from & (1u << s))))
		return state_error(s, busy_err, other_err);
	/* release: the holder's writes to the buffer happen before the next
	 * holder (which finds the slot through a lock) sees it. */
	atomic_store_explicit(st, to, memory_order_release);
	return 0;
}

/* The transport's calls (submit, complete, deliver) meet the application
 * and the progress thread on one buffer: a compare-and-swap decides. */
static int xport_change(atomic_uchar *st, unsigned from, unsigned char to,
			int busy_err, int other_err)
{
	unsigned char s = atomic_load_explicit(st, memory_order_relaxed);

	for (;;) {
		if (!(from & (1u << s)))
			return state_error(s, busy_err, other_err);
		if (atomic_compare_exchange_weak_explicit(st, &s, to,
				memory_order_acq_rel, memory_order_relaxed))
			return 0;
	}
}

void alloc_wake_waiters(struct alloc *a)
{
	pthread_mutex_lock(&a->wait_lock);
	a->wait_seq++;
	pthread_cond_broadcast(&a->wait_cond);
	pthread_mutex_unlock(&a->wait_lock);
}

/* Extents. */

static void large_free(struct alloc *a, const struct where *w)
{
	pthread_mutex_lock(&a->ext_lock);
	a->large_releases++;
	a->large_bytes -= w->size;
	atomic_store_explicit(&a->state[w->sidx], ALLOC_TOMB,
			      memory_order_relaxed);
	ext_free(a, w->first);
	pthread_mutex_unlock(&a->ext_lock);
	if (atomic_load_explicit(&a->waiters, memory_order_relaxed))
		alloc_wake_waiters(a);
}

/* Give this thread's cached slots and every empty slab back, so the pages
 * can serve a request that failed. */
static void scavenge(struct alloc *a, struct tcache *tc)
{
	if (tc)
		tcache_flush_all(a, tc);
	slab_reclaim_empty(a);
}

/* A run of pages for a large lease or a reservation, or ALLOC_NIL. */
static uint32_t run_get(struct alloc *a, struct tcache *tc, uint64_t len,
			uint32_t align_pages, uint8_t kind, unsigned char state)
{
	uint64_t np;
	uint32_t first = ALLOC_NIL;
	int tries;

	if (len > a->h.len)  /* also keeps the rounding below from wrapping */
		return ALLOC_NIL;
	np = (len + ALLOC_PAGE_SIZE - 1) >> ALLOC_PAGE_SHIFT;
	for (tries = 0; tries < 2 && first == ALLOC_NIL; tries++) {
		if (tries)
			scavenge(a, tc);
		pthread_mutex_lock(&a->ext_lock);
		first = ext_alloc(a, (uint32_t)np, align_pages);
		if (first != ALLOC_NIL) {
			ext_mark(a, first, (uint32_t)np, kind, 0);
			atomic_store_explicit(&a->state[first * 64], state,
					      memory_order_relaxed);
			if (kind == RUN_LARGE) {
				a->large_leases++;
				a->large_bytes += np << ALLOC_PAGE_SHIFT;
				if (a->large_bytes > a->large_hwm)
					a->large_hwm = a->large_bytes;
			} else {
				a->reserved_bytes += np << ALLOC_PAGE_SHIFT;
			}
		}
		pthread_mutex_unlock(&a->ext_lock);
	}
	return first;
}

/* Slots. */

static uint64_t mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* A lease failed for want of space: for a while, releases from every
 * thread go straight back to the shared pool, with the releasing thread's
 * whole cache, so free slots do not hide in caches while someone needs
 * them. Only slots cached by threads that stay idle remain out of reach. */
static void pressure_on(struct alloc *a)
{
	atomic_store_explicit(&a->pressure_until, mono_ms() + ALLOC_PRESSURE_MS,
			      memory_order_relaxed);
}

/* Called from a release while someone waits or the region was short of
 * space recently: give this thread's cache back, or end the pressure. */
static void __attribute__((noinline)) bypass(struct alloc *a, struct tcache *tc)
{
	uint64_t until = atomic_load_explicit(&a->pressure_until,
					      memory_order_relaxed);

	if (!atomic_load_explicit(&a->waiters, memory_order_relaxed) &&
	    until && mono_ms() > until) {
		atomic_compare_exchange_strong(&a->pressure_until, &until, 0);
		return;
	}
	tcache_flush_all(a, tc);
}

/* Push a freed slot on this thread's cache (or straight to the pool when
 * the thread has none, or someone waits for space). */
static inline void slot_put(struct alloc *a, struct tcache *tc,
			    const struct where *w)
{
	const struct class_info *c = &a->ci[w->cls];
	struct magazine *m;

	if (unlikely(!tc)) {
		mag_ent e = ent_make(w->off, w->sidx);

		slab_flush(a, w->cls, &e, 1);
		return;
	}
	m = &tc->mag[w->cls];
	if (unlikely(m->n >= c->mag_cap)) {
		/* Give back the oldest half; the newest slots are the ones
		 * still in this core's cache. */
		unsigned give = m->n - c->mag_cap / 2;

		slab_flush(a, w->cls, m->ent, give);
		memmove(m->ent, m->ent + give, (m->n - give) * sizeof(m->ent[0]));
		m->n -= give;
	}
	m->ent[m->n++] = ent_make(w->off, w->sidx);
	/* Someone needs space: cached slots must not hide it. */
	if (unlikely(atomic_load_explicit(&a->waiters, memory_order_relaxed) |
		     (atomic_load_explicit(&a->pressure_until,
					   memory_order_relaxed) != 0)))
		bypass(a, tc);
}

/* Give back a buffer whose state byte is already FREE. */
static inline void give_back(struct alloc *a, const struct where *w)
{
	struct tcache *tc;

	if (unlikely(w->cls == ALLOC_LARGE)) {
		large_free(a, w);
		return;
	}
	tc = tcache_get(a);
	if (tc)
		count_add(&tc->cnt[w->cls].releases, 1);
	else
		tcache_count_orphan(a, w->cls);
	slot_put(a, tc, w);
}

static bool refill(struct alloc *a, struct tcache *tc, unsigned cls)
{
	struct magazine *m = &tc->mag[cls];
	unsigned want = a->cls[cls].mag_cap / 2;

	m->n = slab_refill(a, cls, m->ent, want);
	if (m->n == 0) {
		scavenge(a, tc);
		m->n = slab_refill(a, cls, m->ent, want);
	}
	return m->n > 0;
}

static inline int lease_one(struct alloc *a, struct tcache *tc, size_t len,
			    struct buf_desc *out)
{
	struct magazine *m;
	mag_ent e;
	unsigned cls;

	if (unlikely(len > ALLOC_MAX_CLASS_SIZE)) {
		uint32_t first = run_get(a, tc, len, 1, RUN_LARGE, ALLOC_LEASED);

		if (first == ALLOC_NIL)
			return -ENOMEM;
		out->ptr = a->h.base + ((uint64_t)first << ALLOC_PAGE_SHIFT);
		out->len = len;
		return 0;
	}
	cls = size_to_class(len);
	m = &tc->mag[cls];
	if (unlikely(m->n == 0) && !refill(a, tc, cls))
		return -ENOMEM;
	e = m->ent[--m->n];
	/* The slot is this thread's alone until it hands the pointer out:
	 * a plain store is enough. */
	assert(atomic_load_explicit(&a->state[ent_sidx(e)], memory_order_relaxed) ==
	       ALLOC_FREE);
	atomic_store_explicit(&a->state[ent_sidx(e)], ALLOC_LEASED,
			      memory_order_relaxed);
	count_add(&tc->cnt[cls].leases, 1);
	out->ptr = a->h.base + ent_off(e);
	out->len = len;
	return 0;
}

/* Undo the leases out[0..n-1] after a later one failed. */
static void unwind(struct alloc *a, struct tcache *tc, size_t n,
		   const struct buf_desc *out)
{
	struct where w;

	while (n--) {
		if (resolve(a, out[n].ptr, &w)) {
			assert(!"a lease just made resolves");
			continue;
		}
		atomic_store_explicit(&a->state[w.sidx], ALLOC_FREE,
				      memory_order_relaxed);
		if (w.cls == ALLOC_LARGE) {
			pthread_mutex_lock(&a->ext_lock);
			a->large_leases--;
			a->large_bytes -= w.size;
			ext_free(a, w.first);
			pthread_mutex_unlock(&a->ext_lock);
		} else {
			/* Not a lease after all: take it off the count. */
			count_add(&tc->cnt[w.cls].leases, (uint64_t)-1);
			slot_put(a, tc, &w);
		}
	}
}

static void count_failure(struct alloc *a, size_t len)
{
	pressure_on(a);
	if (len > ALLOC_MAX_CLASS_SIZE)
		atomic_fetch_add(&a->large_failures, 1);
	else
		atomic_fetch_add(&a->cls[size_to_class(len)].failures, 1);
}

static int lease_n(struct alloc *a, size_t n, const size_t *sizes,
		   struct buf_desc *out, bool count_fail)
{
	struct tcache *tc;
	size_t i;
	int rc;

	if (unlikely(!a || n == 0 || !sizes || !out))
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (unlikely(sizes[i] == 0))
			return -EINVAL;
	tc = tcache_get(a);
	if (unlikely(!tc))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		rc = lease_one(a, tc, sizes[i], &out[i]);
		if (unlikely(rc)) {
			unwind(a, tc, i, out);
			if (count_fail)
				count_failure(a, sizes[i]);
			return rc;
		}
	}
	return 0;
}

int alloc_lease(struct alloc *a, size_t n, const size_t *sizes,
		struct buf_desc *out)
{
	/* The common case, one slot, without the loops of lease_n(). */
	if (likely(n == 1 && sizes && out && a &&
		   sizes[0] - 1 < ALLOC_MAX_CLASS_SIZE)) {
		struct tcache *tc = tcache_get(a);

		if (likely(tc)) {
			int rc = lease_one(a, tc, sizes[0], out);

			if (unlikely(rc))
				count_failure(a, sizes[0]);
			return rc;
		}
	}
	return lease_n(a, n, sizes, out, true);
}

int alloc_lease_wait(struct alloc *a, size_t n, const size_t *sizes,
		     struct buf_desc *out, unsigned timeout_ms)
{
	struct timespec deadline;
	uint64_t seq;
	int rc;

	rc = lease_n(a, n, sizes, out, false);
	if (rc != -ENOMEM)
		return rc;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	atomic_fetch_add(&a->waiters, 1);
	for (;;) {
		/* Read the give-back count before trying, so a give-back
		 * between the try and the wait is not missed. */
		pthread_mutex_lock(&a->wait_lock);
		seq = a->wait_seq;
		pthread_mutex_unlock(&a->wait_lock);
		rc = lease_n(a, n, sizes, out, false);
		if (rc != -ENOMEM)
			break;
		pressure_on(a);
		pthread_mutex_lock(&a->wait_lock);
		while (a->wait_seq == seq && rc != ETIMEDOUT)
			rc = pthread_cond_timedwait(&a->wait_cond, &a->wait_lock,
						    &deadline);
		pthread_mutex_unlock(&a->wait_lock);
		if (rc == ETIMEDOUT) {
			rc = lease_n(a, n, sizes, out, true);
			break;
		}
	}
	atomic_fetch_sub(&a->waiters, 1);
	return rc;
}

int alloc_release(struct alloc *a, const struct buf_desc *d)
{
	struct where w;
	int rc = resolve(a, d->ptr, &w);

	if (unlikely(rc))
		return rc;
	if (unlikely(w.reserved))
		return -EPERM;
	if (unlikely(d->len > w.size))
		return -EINVAL;
	rc = app_change(&a->state[w.sidx],
		      1u << ALLOC_LEASED | 1u << ALLOC_DELIVERED,
		      ALLOC_FREE, -EBUSY, -EINVAL);
	if (unlikely(rc))
		return rc;
	give_back(a, &w);
	return 0;
}

int alloc_release_n(struct alloc *a, size_t n, const struct buf_desc *d)
{
	int first_err = 0, rc;
	size_t i;

	for (i = 0; i < n; i++) {
		rc = alloc_release(a, &d[i]);
		if (rc && !first_err)
			first_err = rc;
	}
	return first_err;
}

/* Resolve d for a state call: -EPERM on reservations. */
static int resolve_desc(struct alloc *a, const struct buf_desc *d,
			struct where *w)
{
	int rc = resolve(a, d->ptr, w);

	if (rc)
		return rc;
	if (w->reserved)
		return -EPERM;
	if (d->len > w->size)
		return -EINVAL;
	return 0;
}

int alloc_submit(struct alloc *a, const struct buf_desc *d)
{
	struct where w;
	int rc = resolve_desc(a, d, &w);

	if (rc)
		return rc;
	return xport_change(&a->state[w.sidx],
			    1u << ALLOC_LEASED | 1u << ALLOC_DELIVERED,
			    ALLOC_SUBMITTED, -EBUSY, -EINVAL);
}

int alloc_unsubmit(struct alloc *a, const struct buf_desc *d)
{
	struct where w;
	int rc = resolve_desc(a, d, &w);

	if (rc)
		return rc;
	return xport_change(&a->state[w.sidx], 1u << ALLOC_SUBMITTED,
			    ALLOC_LEASED, -EINVAL, -EINVAL);
}

int alloc_complete(struct alloc *a, const struct buf_desc *d)
{
	struct where w;
	int rc = resolve_desc(a, d, &w);

	if (rc)
		return rc;
	rc = xport_change(&a->state[w.sidx], 1u << ALLOC_SUBMITTED,
			  ALLOC_FREE, -EINVAL, -EINVAL);
	if (rc)
		return rc;
	give_back(a, &w);
	return 0;
}

int alloc_deliver(struct alloc *a, const struct buf_desc *d)
{
	struct where w;
	int rc = resolve_desc(a, d, &w);

	if (rc)
		return rc;
	rc = xport_change(&a->state[w.sidx], 1u << ALLOC_LEASED,
			  ALLOC_DELIVERED, -EBUSY, -EALREADY);
	return rc;
}

int alloc_state(struct alloc *a, const void *ptr)
{
	struct where w;
	int rc = resolve(a, ptr, &w);

	if (rc == -EALREADY)
		return ALLOC_FREE;
	if (rc)
		return rc;
	if (w.reserved)
		return ALLOC_RESERVED;
	return atomic_load_explicit(&a->state[w.sidx], memory_order_acquire);
}

int alloc_reserve(struct alloc *a, size_t size, size_t align,
		  struct buf_desc *out)
{
	uint32_t first;

	if (size == 0 || align == 0 || (align & (align - 1)) ||
	    align > ((size_t)1 << 30) || !out)
		return -EINVAL;
	if (align < ALLOC_PAGE_SIZE)
		align = ALLOC_PAGE_SIZE;
	first = run_get(a, tcache_get(a), size,
			(uint32_t)(align >> ALLOC_PAGE_SHIFT), RUN_RESERVED,
			ALLOC_FREE);
	if (first == ALLOC_NIL)
		return -ENOMEM;
	out->ptr = a->h.base + ((uint64_t)first << ALLOC_PAGE_SHIFT);
	out->len = size;
	return 0;
}

void *alloc_obj_new(struct alloc *a, size_t size)
{
	struct buf_desc d;

	if (alloc_lease(a, 1, &size, &d))
		return NULL;
	memset(d.ptr, 0, size);
	return d.ptr;
}

int alloc_obj_delete(struct alloc *a, void *obj)
{
	struct buf_desc d = { obj, 0 };

	return alloc_release(a, &d);
}
