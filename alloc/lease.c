/*
 * lease.c - leases, their states, and the calls transports make on them.
 *
 * A lease of up to 64 KiB finds its class in a table (one entry per 16
 * bytes), pops a slot (its address) from the calling thread's cache and
 * stores LEASED in its state byte.
 * A release reads two words in parallel, the byte of the pointer's 64-byte
 * window and its page's word (pinfo_slab()), and one compare each says
 * whether the pointer is the exact start of a leased or delivered slot and
 * whether the length fits; then it stores FREE and pushes the slot on the
 * cache. No lock, no locked instruction, no divide or multiply on either
 * path. Whatever fails those compares takes the slow path, which resolves
 * the pointer fully and says what is wrong; so does every release while
 * space is short (pressure_on()), which the bound a release checks its
 * offset against says, at no cost of its own. The one-buffer calls
 * (alloc_lease_one(), alloc_release_one()) take the same two paths with
 * the descriptor in registers. The state byte is what keeps
 * misuse harmless: a second release of a buffer, a release of a submitted
 * one or of a pointer that is no lease start is refused before anything
 * changes, so a slot never sits in the free pool twice. The transport's calls change the byte with a compare-and-swap,
 * since they meet the application on the same buffer. Larger leases are
 * extents (extent.c) under one lock. A multi-lease takes its buffers one by
 * one and gives back what it took when one of them cannot be served.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "alloc_internal.h"

/* Where a pointer lives: its class (ALLOC_LARGE for extents), its state
 * index and its slot size. */
struct where {
	size_t cls;
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
	uintptr_t off;
	const struct page *pg;
	uint32_t p, q;

	if (unlikely(!a))
		return -EINVAL;
	off = (uintptr_t)ptr - (uintptr_t)a->h.base;
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
		w->sidx = (uint32_t)(off >> 6);
		assert((atomic_load_explicit(&a->state[w->sidx],
					     memory_order_relaxed) & ST_POS) ==
		       (off & ST_POS));
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

/* The error that state s calls for, when a call does not accept it. */
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

	if (unlikely(!(from & (1u << st_state(s)))))
		return state_error(st_state(s), busy_err, other_err);
	/* release: the holder's writes to the buffer happen before the next
	 * holder (which finds the slot through a lock) sees it. */
	atomic_store_explicit(st, st_byte(s, to), memory_order_release);
	return 0;
}

/* The transport's calls (submit, complete, deliver) meet the application
 * and the progress thread on one buffer: a compare-and-swap decides. */
static int xport_change(atomic_uchar *st, unsigned from, unsigned char to,
			int busy_err, int other_err)
{
	unsigned char s = atomic_load_explicit(st, memory_order_relaxed);

	for (;;) {
		if (!(from & (1u << st_state(s))))
			return state_error(st_state(s), busy_err, other_err);
		if (atomic_compare_exchange_weak_explicit(st, &s, st_byte(s, to),
				memory_order_acq_rel, memory_order_relaxed))
			return 0;
	}
}

void alloc_wake_waiters(struct alloc *a)
{
	if (!atomic_load_explicit(&a->waiters, memory_order_relaxed))
		return;
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
			atomic_store_explicit(&a->state[first * 64],
					      st_byte(0, state),
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
	/* The time first, then the release hit path's bound: see bypass(). */
	atomic_store(&a->pressure_until, mono_ms() + ALLOC_PRESSURE_MS);
	atomic_store(&a->hit_len, 0);
}

/* Open the release hit path again once the pressure ended, unless a
 * pressure_on() came since: it stores its time before its bound, and this
 * reads the time after storing the bound (all sequentially consistent),
 * so one of the two sees the other and the bound ends 0 under pressure. */
static void hit_path_open(struct alloc *a)
{
	atomic_store(&a->hit_len, a->h.len);
	if (atomic_load(&a->pressure_until))
		atomic_store(&a->hit_len, 0);
}

/* Called from a release while someone waits or the region was short of
 * space recently: give this thread's cache back, or end the pressure. */
static void __attribute__((noinline)) bypass(struct alloc *a, struct tcache *tc)
{
	uint64_t until = atomic_load_explicit(&a->pressure_until,
					      memory_order_relaxed);

	if (!atomic_load_explicit(&a->waiters, memory_order_relaxed) &&
	    until && mono_ms() > until) {
		if (atomic_compare_exchange_strong(&a->pressure_until, &until,
						   0))
			hit_path_open(a);
		return;
	}
	if (tc)
		tcache_flush_all(a, tc);
}

/* True while someone waits for space or a lease failed recently: a
 * waiter sets the pressure before its first wait, and bypass() keeps it
 * while anyone waits, so one word says both. */
static inline bool need_space(const struct alloc *a)
{
	return atomic_load_explicit(&a->pressure_until,
				    memory_order_relaxed) != 0;
}

/* Push a freed slot on this thread's cache (or straight to the pool when
 * the thread has none, or someone waits for space). */
static inline void slot_put(struct alloc *a, struct tcache *tc,
			    const struct where *w)
{
	unsigned cls = w->cls, n;
	mag_ent *ent;
	uint64_t mw;

	if (unlikely(!tc)) {
		mag_ent e = ent_make(a, w->off);

		slab_flush(a, cls, &e, 1);
		return;
	}
	ent = tc->ent[cls];
	mw = mag_word(tc, cls);
	n = mag_n(tc, cls, mw);
	if (unlikely(n >= a->cls[cls].mag_cap)) {
		/* Give back the oldest half; the newest slots are the ones
		 * still in this core's cache. */
		unsigned give = n - a->cls[cls].mag_cap / 2u;

		slab_flush(a, cls, ent, give);
		memmove(ent, ent + give, (n - give) * sizeof(ent[0]));
		mag_net(tc, cls, -(int64_t)give);
		mw -= give * MAG_STEP;
		n -= give;
	}
	ent[n] = ent_make(a, w->off);
	mag_set(tc, cls, mw + MAG_STEP);
	/* Someone needs space: cached slots must not hide it. */
	if (unlikely(need_space(a)))
		bypass(a, tc);
}

/* Give back a buffer whose state byte is already FREE. */
static inline void give_back(struct alloc *a, const struct where *w)
{
	struct tcache *tc;

	if (unlikely(w->cls == ALLOC_LARGE)) {
		large_free(a, w);
		/* Someone needs space: as for a slot (slot_put()), the
		 * thread's cached slots must not hide it. */
		if (unlikely(need_space(a)))
			bypass(a, tcache_hit(a));
		return;
	}
	tc = tcache_get(a);
	if (!tc)
		tcache_count_orphan(a, w->cls);
	slot_put(a, tc, w);
}

static bool refill(struct alloc *a, struct tcache *tc, unsigned cls)
{
	unsigned want = a->cls[cls].mag_cap / 2, got;

	assert(mag_n(tc, cls, mag_word(tc, cls)) == 0);
	got = slab_refill(a, cls, tc->tag, &tc->own[cls], tc->ent[cls], want,
			  a->cls[cls].mag_cap);
	if (got == 0) {
		scavenge(a, tc);
		got = slab_refill(a, cls, tc->tag, &tc->own[cls], tc->ent[cls],
				  want, a->cls[cls].mag_cap);
	}
	mag_net(tc, cls, got);
	mag_set(tc, cls, mag_word(tc, cls) + got * MAG_STEP);
	return got > 0;
}

/* Pop the newest slot of class cls (mw: its word, n > 0) and mark it
 * leased. The slot is this thread's alone until it hands the pointer out:
 * a plain store is enough. */
static inline mag_ent slot_pop(struct alloc *a, struct tcache *tc,
			       size_t cls, uint64_t mw)
{
	mag_ent e = mag_at(tc, MAG_TOP(mw))[-1];

	mag_set(tc, cls, mw - MAG_STEP + MAG_LEASE);
	assert(atomic_load_explicit(ent_state(a, e), memory_order_relaxed) ==
	       st_byte(e, ALLOC_FREE));
	atomic_store_explicit(ent_state(a, e), st_byte(e, ALLOC_LEASED),
			      memory_order_relaxed);
	return e;
}

static inline int lease_one(struct alloc *a, struct tcache *tc, size_t len,
			    struct buf_desc *out)
{
	mag_ent e;
	size_t cls;

	if (unlikely(len > ALLOC_MAX_CLASS_SIZE)) {
		uint32_t first = run_get(a, tc, len, 1, RUN_LARGE, ALLOC_LEASED);

		if (first == ALLOC_NIL)
			return -ENOMEM;
		out->ptr = a->h.base + ((uint64_t)first << ALLOC_PAGE_SHIFT);
		out->len = len;
		return 0;
	}
	cls = class_of(a, len);
	if (unlikely(MAG_TOP(mag_word(tc, cls)) == tc->h.lo[cls]) &&
	    !refill(a, tc, cls))
		return -ENOMEM;
	e = slot_pop(a, tc, cls, mag_word(tc, cls));
	out->ptr = (void *)e;
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
		atomic_store_explicit(&a->state[w.sidx], st_byte(w.off, ALLOC_FREE),
				      memory_order_relaxed);
		if (w.cls == ALLOC_LARGE) {
			pthread_mutex_lock(&a->ext_lock);
			a->large_leases--;
			a->large_bytes -= w.size;
			ext_free(a, w.first);
			pthread_mutex_unlock(&a->ext_lock);
			alloc_wake_waiters(a);
		} else {
			/* Not a lease after all: take it off the count. */
			mag_set(tc, w.cls, mag_word(tc, w.cls) - MAG_LEASE);
			slot_put(a, tc, &w);
		}
	}
}

static void count_failure(struct alloc *a, size_t len)
{
	/* A size the region could never hold is no shortage of space:
	 * cached slots would not help it. */
	if (len <= a->h.len)
		pressure_on(a);
	if (len > ALLOC_MAX_CLASS_SIZE)
		atomic_fetch_add(&a->large_failures, 1);
	else
		atomic_fetch_add(&a->cls[class_of(a, len)].failures, 1);
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

/* alloc_lease() of everything but one slot from a warm cache. */
static int __attribute__((noinline)) lease_slow(struct alloc *a, size_t n,
						const size_t *sizes,
						struct buf_desc *out)
{
	/* One slot, without the loops of lease_n(). */
	if (n == 1 && sizes && out && a && sizes[0] - 1 < ALLOC_MAX_CLASS_SIZE) {
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

/* The lease hit path: a slot for len bytes from this thread's cache for a
 * in *p, or false (len 0 or above ALLOC_MAX_CLASS_SIZE, no cache for a, or
 * an empty one) for the caller's slow path. This path is a few dozen
 * instructions and each counts: the class as a size_t (an unsigned one
 * costs an instruction per index), the slot's address straight from the
 * cache. */
static inline __attribute__((always_inline)) bool lease_hit(struct alloc *a,
							    size_t len,
							    void **p)
{
	struct tcache_head *h = alloc_tls_head;

	if (likely(tcache_serves(h, a))) {
		struct tcache *tc = (struct tcache *)h;
		size_t cls;
		uint64_t mw;

		if (unlikely(len - 1 >= ALLOC_MAX_CLASS_SIZE))
			return false;
		cls = class_of(a, len);
		mw = mag_word(tc, cls);
		if (likely(MAG_TOP(mw) != h->lo[cls])) {
			*p = (void *)slot_pop(a, tc, cls, mw);
			return true;
		}
	}
	return false;
}

/* (Parenthesised: alloc.h's macro of the same name leads to the inline
 * path.) */
int (alloc_lease)(struct alloc *a, size_t n, const size_t *sizes,
		  struct buf_desc *out)
{
	void *p;

	/* The hit path: one buffer, a test of its own per argument. */
	if (unlikely(n != 1))
		goto slow;
	if (unlikely(!sizes))
		goto slow;
	if (unlikely(!out))
		goto slow;
	if (likely(lease_hit(a, sizes[0], &p))) {
		out->ptr = p;
		out->len = sizes[0];
		return 0;
	}
slow:
	return lease_slow(a, n, sizes, out);
}

static struct buf_desc __attribute__((noinline)) lease_one_slow(struct alloc *a,
								size_t len)
{
	struct buf_desc d;
	int rc = lease_slow(a, 1, &len, &d);

	if (rc) {
		errno = -rc;
		return (struct buf_desc){ NULL, 0 };
	}
	return d;
}

struct buf_desc alloc_lease_one(struct alloc *a, size_t len)
{
	void *p;

	if (likely(lease_hit(a, len, &p)))
		return (struct buf_desc){ p, len };
	return lease_one_slow(a, len);
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
	/* From here on releases bypass the caches (need_space()). */
	pressure_on(a);
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

/* alloc_release() of what the hit path below does not take: extents,
 * a full or missing cache, and every misuse, which resolve() and the state
 * byte sort out. */
static int __attribute__((noinline)) release_slow(struct alloc *a,
						  void *ptr, size_t len)
{
	struct where w;
	int rc = resolve(a, ptr, &w);

	if (unlikely(rc))
		return rc;
	if (unlikely(w.reserved))
		return -EPERM;
	if (unlikely(len > w.size))
		return -EINVAL;
	rc = app_change(&a->state[w.sidx],
		      1u << ALLOC_LEASED | 1u << ALLOC_DELIVERED,
		      ALLOC_FREE, -EBUSY, -EINVAL);
	if (unlikely(rc))
		return rc;
	give_back(a, &w);
	/* The hit path's bound is 0 only under pressure. A pressure_on()
	 * held up between its two stores while a bypass() ended that
	 * pressure as expired leaves it 0 after: open it here, on the slow
	 * path every release then takes. */
	if (unlikely(!atomic_load_explicit(&a->hit_len, memory_order_relaxed)) &&
	    !need_space(a))
		hit_path_open(a);
	return 0;
}

/* The release hit path: the exact start of a leased or delivered slot
 * whose slot holds len bytes, and room in this thread's cache. The byte
 * of the window and the page word are read in parallel; everything else,
 * misuse included, is false here and goes to release_slow(), before any
 * store. */
static inline __attribute__((always_inline)) bool release_hit(struct alloc *a,
							      void *ptr,
							      size_t len)
{
	struct tcache_head *h = alloc_tls_head;

	/* The cache test comes first: it is false for a NULL a (no cache
	 * serves NULL), so the hit path needs no test of a of its own. */
	if (likely(tcache_serves(h, a))) {
		uint64_t off = (uintptr_t)ptr - (uintptr_t)a->h.base;

		/* 0 under pressure: every release then goes through
		 * release_slow() and slot_put(), which give the cache back
		 * (bypass()). */
		if (likely(off < atomic_load_explicit(&a->hit_len,
						      memory_order_relaxed))) {
			/* The byte and the low bits from the address (the
			 * region starts on a page), the page from off. */
			atomic_uchar *st = ent_state(a, (uintptr_t)ptr);
			unsigned char s = atomic_load_explicit(st,
						memory_order_relaxed);
			uint32_t info = a->pinfo[off >> ALLOC_PAGE_SHIFT];
			struct tcache *tc = (struct tcache *)h;

			if (likely(st_releasable(s, (uintptr_t)ptr) &&
				   len < (info >> 8))) {
				size_t cls = info & 0xff;
				uint64_t mw = mag_word(tc, cls);

				if (likely(MAG_TOP(mw) != h->hi[cls])) {
					/* As in app_change(): the holder's
					 * writes happen before the next
					 * holder's. */
					atomic_store_explicit(st,
						st_byte(s, ALLOC_FREE),
						memory_order_release);
					*mag_at(tc, MAG_TOP(mw)) =
						(uintptr_t)ptr;
					mag_set(tc, cls, mw + MAG_STEP);
					return true;
				}
			}
		}
	}
	return false;
}

int (alloc_release)(struct alloc *a, const struct buf_desc *d)
{
	void *ptr = d->ptr;
	size_t len = d->len;

	if (likely(release_hit(a, ptr, len)))
		return 0;
	return release_slow(a, ptr, len);
}

int alloc_release_one(struct alloc *a, struct buf_desc d)
{
	if (likely(release_hit(a, d.ptr, d.len)))
		return 0;
	return release_slow(a, d.ptr, d.len);
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
	return (int)st_state(atomic_load_explicit(&a->state[w.sidx],
						  memory_order_acquire));
}

int alloc_reserve(struct alloc *a, size_t size, size_t align,
		  struct buf_desc *out)
{
	uint32_t first;

	if (!a || size == 0 || align == 0 || (align & (align - 1)) ||
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
