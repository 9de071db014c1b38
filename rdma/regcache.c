/*
 * regcache.c - the registration cache: lock-free hits, serialized misses,
 * merging, reference counts per registration, LRU limits, invalidation.
 *
 * A hit is: compare the monitor's batch counter with the batch this cache
 * has applied (equal unless memory went away since), search the published
 * snapshot under rcu_read_lock(), take a reference on the entry and stamp
 * it with the cache clock. Everything else takes the writer lock: it first
 * applies pending unmap events, then registers (merging with every cached
 * entry that overlaps or touches the new pages into one registration),
 * publishes a new snapshot and evicts past the limits. Entries leave the
 * snapshot at once; their registration is dropped when the last reference
 * goes, which for the index's own reference is a grace period later.
 *
 * LRU: readers never write a shared line, so recency is the cache clock,
 * which writers advance at every change; uses between two changes count as
 * equally recent (ties go to the older insertion). The writer keeps a
 * min-heap keyed by the stamp each entry had when it was last placed; a
 * stale key is refreshed when it reaches the top, so the entry popped with
 * an up-to-date key is the least recently used one.
 */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdma/regcache_int.h"

#if defined(__SANITIZE_THREAD__)
char rc_tsan_sync[2];
#endif

struct regcache {
	/* Read by every lookup; written rarely. */
	/* RCU-published snapshot. A C11 atomic pointer rather than
	 * rcu_assign_pointer()/rcu_dereference(): the same instructions on
	 * x86, and visible to ThreadSanitizer as release/acquire. Writers
	 * read it relaxed under wlock. */
	_Atomic(struct rc_index *) index;
	atomic_uint_fast64_t *ev_src;      /* &rc_monitor_started or &ev_none */
	atomic_uint_fast64_t ev_applied;   /* last monitor batch applied */
	atomic_uint_fast64_t clock;        /* LRU time, advanced by writers */

	struct regcache_config cfg;        /* its ctx and log_ctx NULL */
	/* cfg.ctx and cfg.log_ctx as the callbacks get them: regcache_rebind
	 * changes them while call_rcu callbacks may run. */
	_Atomic(void *) ctx, log_ctx;
	uintptr_t page;
	atomic_uint_fast64_t ev_none;      /* stays 0: no monitor */

	/* Writer state, under wlock. */
	pthread_mutex_t wlock;
	uint64_t log_pos;                  /* monitor log applied up to here */
	struct regcache_entry **heap;      /* LRU min-heap of cached entries */
	size_t heap_n, heap_cap;
	uint64_t seq;
	size_t entries, bytes;
	struct regcache_stats st;          /* writer-side counters */
	uint64_t hits_gone;                /* hits of entries that left */
	atomic_bool over;                  /* past a limit, all held: the
					      put that frees one evicts */
	bool warned_unwatched;

	/* Counters touched outside the lock (last puts, call_rcu). */
	atomic_uint_fast64_t deregs, dereg_fails;

	enum regcache_monitor_status mon_status;
	struct squall_error mon_why;
};

static void say(struct regcache *c, enum regcache_log_level lvl,
		const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(struct regcache *c, enum regcache_log_level lvl,
		const char *fmt, ...)
{
	if (!c->cfg.log)
		return;
	char buf[SQUALL_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	c->cfg.log(atomic_load(&c->log_ctx), lvl, buf);
}

/* The current snapshot, for writers (under wlock). */
static struct rc_index *idx(struct regcache *c)
{
	return atomic_load_explicit(&c->index, memory_order_relaxed);
}

/* Wait for every call_rcu() callback queued so far. */
static void rc_barrier(void)
{
	urcu_bp_barrier();
	RC_TSAN_ACQUIRE(RC_TSAN_CB);
}

/* ---- entries and their references ---- */

static void entry_release(struct regcache *c, struct regcache_entry *e)
{
	int rc = c->cfg.dereg(atomic_load(&c->ctx), e->handle);
	atomic_fetch_add(&c->deregs, 1);
	if (rc) {
		atomic_fetch_add(&c->dereg_fails, 1);
		say(c, REGCACHE_LOG_WARN,
		    "regcache: deregistering [%#lx, %#lx) failed: %s",
		    (unsigned long)e->start, (unsigned long)e->end,
		    strerror(rc < 0 ? -rc : rc));
	}
	free(e);
}

static void entry_unref(struct regcache *c, struct regcache_entry *e)
{
	/* Acquire-release: the thread that frees sees every use before. */
	if (atomic_fetch_sub_explicit(&e->ref, 1, memory_order_acq_rel) == 1)
		entry_release(c, e);
}

/* Take a reference on an entry found in a snapshot. The index's reference
 * keeps the count above zero while any reader can see the entry, so the
 * increment is always safe; an invalidated entry is given back. */
static inline bool entry_try_hold(struct regcache_entry *e)
{
	atomic_fetch_add_explicit(&e->ref, 1, memory_order_acquire);
	if (caa_unlikely(atomic_load_explicit(&e->invalid, memory_order_acquire))) {
		atomic_fetch_sub_explicit(&e->ref, 1, memory_order_release);
		return false;
	}
	return true;
}

static inline void entry_touch(struct regcache *c, struct regcache_entry *e)
{
	uint64_t now = atomic_load_explicit(&c->clock, memory_order_relaxed);
	/* Only write the stamp when it changes: the line is ours anyway
	 * (the reference count), but the clock line stays shared. */
	if (atomic_load_explicit(&e->stamp, memory_order_relaxed) != now)
		atomic_store_explicit(&e->stamp, now, memory_order_relaxed);
	atomic_fetch_add_explicit(&e->hits, 1, memory_order_relaxed);
}

/* ---- the LRU heap (writer only) ---- */

static bool heap_less(const struct regcache_entry *a,
		      const struct regcache_entry *b)
{
	return a->heap_key != b->heap_key ? a->heap_key < b->heap_key
					  : a->seq < b->seq;
}

static void heap_set(struct regcache *c, size_t i, struct regcache_entry *e)
{
	c->heap[i] = e;
	e->heap_pos = i;
}

static void heap_up(struct regcache *c, size_t i)
{
	struct regcache_entry *e = c->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!heap_less(e, c->heap[p]))
			break;
		heap_set(c, i, c->heap[p]);
		i = p;
	}
	heap_set(c, i, e);
}

static void heap_down(struct regcache *c, size_t i)
{
	struct regcache_entry *e = c->heap[i];
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		const struct regcache_entry *best = e;
		if (l < c->heap_n && heap_less(c->heap[l], best))
			m = l, best = c->heap[l];
		if (l + 1 < c->heap_n && heap_less(c->heap[l + 1], best))
			m = l + 1;
		if (m == i)
			break;
		heap_set(c, i, c->heap[m]);
		i = m;
	}
	heap_set(c, i, e);
}

static int heap_reserve(struct regcache *c, size_t extra)
{
	if (c->heap_n + extra <= c->heap_cap)
		return 0;
	size_t cap = c->heap_cap ? c->heap_cap : 64;
	while (cap < c->heap_n + extra)
		cap *= 2;
	struct regcache_entry **h = realloc(c->heap, cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	c->heap = h;
	c->heap_cap = cap;
	return 0;
}

static void heap_push(struct regcache *c, struct regcache_entry *e)
{
	assert(c->heap_n < c->heap_cap);
	e->heap_key = atomic_load_explicit(&e->stamp, memory_order_relaxed);
	heap_set(c, c->heap_n++, e);
	heap_up(c, e->heap_pos);
}

static void heap_remove(struct regcache *c, struct regcache_entry *e)
{
	size_t i = e->heap_pos;
	assert(i < c->heap_n && c->heap[i] == e);
	struct regcache_entry *last = c->heap[--c->heap_n];
	e->heap_pos = SIZE_MAX;
	if (last == e)
		return;
	heap_set(c, i, last);
	heap_up(c, i);
	heap_down(c, last->heap_pos);
}

/* ---- publishing snapshots (writer only) ---- */


static void retire_cb(struct rcu_head *head)
{
	struct rc_index *x = caa_container_of(head, struct rc_index, rcu);
	RC_TSAN_ACQUIRE(x);
	RC_TSAN_ACQUIRE(RC_TSAN_GP);
	for (size_t i = 0; i < x->ndead_entries; i++) {
		struct regcache_entry *e = x->dead_entries[i];
		entry_unref(e->cache, e);
	}
	rc_index_free(x, false);
	RC_TSAN_RELEASE(RC_TSAN_CB);  /* seen by rc_barrier() */
}

/* Replace the snapshot: drop `gone` (already out of the heap and the
 * totals), add `add` (sorted). Returns 0 or -ENOMEM (nothing changed). */
static int commit(struct regcache *c, struct regcache_entry **gone,
		  size_t ngone, struct regcache_entry **add, size_t nadd)
{
	struct rc_index *x = idx(c);
	for (size_t i = 0; i < ngone; i++)
		gone[i]->unlink = true;
	struct rc_index *nx = rc_index_commit(x, gone, ngone, add, nadd);
	if (!nx) {
		for (size_t i = 0; i < ngone; i++)
			gone[i]->unlink = false;
		return -ENOMEM;
	}
	for (size_t i = 0; i < ngone; i++)
		c->hits_gone += atomic_load_explicit(&gone[i]->hits,
						     memory_order_relaxed);
	/* Release: readers that see nx see the entries and chunks in it. */
	atomic_store_explicit(&c->index, nx, memory_order_release);
	RC_TSAN_RELEASE(x);
	urcu_bp_call_rcu(&x->rcu, retire_cb);
	/* Uses from now on are more recent than anything placed so far. */
	atomic_fetch_add_explicit(&c->clock, 1, memory_order_relaxed);
	return 0;
}

/* Where a walk of x over the entries from address s starts: the last
 * entry starting at or before s, else the first (cursor in ci, si). */
static struct regcache_entry *walk_from(struct rc_index *x, uintptr_t s,
					size_t *ci, size_t *si)
{
	if (rc_index_floor(x, s, ci, si))
		return x->chunks[*ci]->e[*si];
	*ci = *si = 0;
	return x->nchunks ? x->chunks[0]->e[0] : NULL;
}

/* Entries overlapping [s, e), or also touching it when `touch`, in order. */
static int collect(struct regcache *c, uintptr_t s, uintptr_t e, bool touch,
		   struct regcache_entry ***out, size_t *n)
{
	struct rc_index *x = idx(c);
	size_t ci = 0, si = 0, cap = 0;
	struct regcache_entry *cur;
	*out = NULL;
	*n = 0;
	for (cur = walk_from(x, s, &ci, &si); cur;
	     cur = rc_index_next(x, &ci, &si)) {
		bool hit = touch ? cur->end >= s && cur->start <= e
				 : cur->end > s && cur->start < e;
		if (cur->start > e)
			break;
		if (!hit)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			struct regcache_entry **v = realloc(*out, cap * sizeof(*v));
			if (!v) {
				free(*out);
				*out = NULL;
				return -ENOMEM;
			}
			*out = v;
		}
		(*out)[(*n)++] = cur;
	}
	return 0;
}

/* Take entries out of the LRU and the totals before they are unlinked. */
static void forget(struct regcache *c, struct regcache_entry **v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		heap_remove(c, v[i]);
		c->entries--;
		c->bytes -= v[i]->end - v[i]->start;
	}
}

static void remember(struct regcache *c, struct regcache_entry *e)
{
	heap_push(c, e);
	c->entries++;
	c->bytes += e->end - e->start;
}

/* ---- registering ---- */

static bool monitored(const struct regcache *c)
{
	return c->mon_status == REGCACHE_MONITOR_ACTIVE;
}

/* Register [s, t) into a new entry holding `refs` references. */
static int entry_new(struct regcache *c, uintptr_t s, uintptr_t t,
		     unsigned refs, struct regcache_entry **out)
{
	/* Aligned so that the fields a hit touches share one cache line. */
	size_t sz = (sizeof(struct regcache_entry) + 63) & ~(size_t)63;
	struct regcache_entry *e = aligned_alloc(64, sz);
	if (!e)
		return -ENOMEM;
	memset(e, 0, sz);
	int rc = c->cfg.reg(atomic_load(&c->ctx), (void *)s, t - s, &e->handle);
	if (rc) {
		c->st.reg_failures++;
		free(e);
		return rc < 0 ? rc : -rc;
	}
	c->st.registrations++;
	e->start = s;
	e->end = t;
	e->cache = c;
	e->seq = c->seq++;
	e->heap_pos = SIZE_MAX;
	atomic_init(&e->ref, refs);
	atomic_init(&e->stamp, atomic_load(&c->clock));
	*out = e;
	return 0;
}

/* The kernel will not watch [s, t): serve this use with a registration of
 * its own that the last put deregisters. */
static int one_shot(struct regcache *c, uintptr_t s, uintptr_t t,
		    struct regcache_entry **out)
{
	if (!c->warned_unwatched) {
		c->warned_unwatched = true;
		say(c, REGCACHE_LOG_WARN,
		    "regcache: the kernel refuses to watch [%#lx, %#lx) "
		    "(file mapping or another userfaultfd?): such memory is "
		    "registered per use, not cached",
		    (unsigned long)s, (unsigned long)t);
	}
	int rc = entry_new(c, s, t, 1, out);
	if (rc == 0)
		c->st.uncached++;
	return rc;
}

static void evict(struct regcache *c);

/* Miss on the pages [s, t): register them merged with every entry that
 * overlaps or touches them; if that registration fails (a neighbour's
 * memory may be gone), register [s, t) alone and drop only what overlaps
 * it. Returns the new entry with one reference for the caller. */
static int insert(struct regcache *c, uintptr_t s, uintptr_t t,
		  struct regcache_entry **out)
{
	struct regcache_entry **old, *e = NULL;
	size_t nold;
	int rc = collect(c, s, t, true, &old, &nold);
	if (rc)
		return rc;
	uintptr_t us = nold && old[0]->start < s ? old[0]->start : s;
	uintptr_t ut = nold && old[nold - 1]->end > t ? old[nold - 1]->end : t;
	bool merged = nold > 0;
	if (monitored(c) && !rc_monitor_watch(us, ut)) {
		merged = false;
		if (!rc_monitor_watch(s, t)) {
			free(old);
			return one_shot(c, s, t, out);
		}
	}
	rc = heap_reserve(c, 1);
	if (rc == 0 && merged && entry_new(c, us, ut, 2, &e))
		e = NULL; /* try the asked pages alone */
	if (rc == 0 && !e) {
		rc = entry_new(c, s, t, 2, &e);
		if (rc == 0) {
			/* Keep neighbours that merely touch [s, t). */
			size_t k = 0;
			for (size_t i = 0; i < nold; i++)
				if (old[i]->end > s && old[i]->start < t)
					old[k++] = old[i];
			nold = k;
			merged = false;
		}
	}
	if (rc) {
		free(old);
		return rc;
	}
	forget(c, old, nold);
	/* Overlapped without being merged: their pages changed under them.
	 * Marked before the commit, which may free them once unlinked. One
	 * already invalid stays so whatever happens: those go first in the
	 * list, and only the ones after nbad are marked here. */
	size_t nbad = 0;
	for (size_t i = 0; i < nold; i++)
		if (atomic_load(&old[i]->invalid)) {
			struct regcache_entry *swap = old[nbad];
			old[nbad++] = old[i];
			old[i] = swap;
		}
	if (!merged)
		for (size_t i = nbad; i < nold; i++)
			atomic_store(&old[i]->invalid, true);
	rc = commit(c, old, nold, &e, 1);
	if (rc) {
		for (size_t i = 0; i < nold; i++) {
			if (i >= nbad)
				atomic_store(&old[i]->invalid, false);
			remember(c, old[i]);
		}
		free(old);
		c->cfg.dereg(atomic_load(&c->ctx), e->handle);
		atomic_fetch_add(&c->deregs, 1);
		free(e);
		return rc;
	}
	e->cached = true;
	remember(c, e);
	if (merged)
		c->st.merges += nold;
	else
		c->st.invalidations += nold;
	free(old);
	evict(c);
	*out = e;
	return 0;
}

/* Past a limit: drop least recently used entries that nobody holds. */
static void evict(struct regcache *c)
{
	size_t max_e = c->cfg.max_entries, max_b = c->cfg.max_bytes;
	struct regcache_entry **victims = NULL, **aside = NULL;
	size_t nv = 0, na = 0;
	while (c->heap_n && ((max_e && c->entries > max_e) ||
			     (max_b && c->bytes > max_b))) {
		struct regcache_entry *e = c->heap[0];
		uint64_t st = atomic_load_explicit(&e->stamp, memory_order_relaxed);
		if (st != e->heap_key) {
			e->heap_key = st;       /* used since it was placed */
			heap_down(c, 0);
			continue;
		}
		struct regcache_entry ***list = atomic_load(&e->ref) > 1 ? &aside : &victims;
		size_t *len = list == &aside ? &na : &nv;
		struct regcache_entry **v = realloc(*list, (*len + 1) * sizeof(*v));
		if (!v)
			break;
		*list = v;
		v[(*len)++] = e;
		heap_remove(c, e);
		if (list == &victims) {
			c->entries--;
			c->bytes -= e->end - e->start;
		}
	}
	for (size_t i = 0; i < na; i++)
		heap_push(c, aside[i]); /* room: they were just removed */
	free(aside);
	atomic_store(&c->over, (max_e && c->entries > max_e) ||
			       (max_b && c->bytes > max_b));
	if (nv == 0)
		return;
	/* The index wants removals in any order; commit once. */
	if (commit(c, victims, nv, NULL, 0)) {
		for (size_t i = 0; i < nv; i++)
			remember(c, victims[i]);
	} else {
		c->st.evictions += nv;
	}
	free(victims);
}

/* No memory to list the entries overlapping [s, t): mark them invalid
 * where they are (never served again), as invalidate_locked()'s last
 * resort does; a later insert or eviction takes them out. */
static void mark_invalid(struct regcache *c, uintptr_t s, uintptr_t t)
{
	struct rc_index *x = idx(c);
	size_t ci = 0, si = 0;
	for (struct regcache_entry *cur = walk_from(x, s, &ci, &si);
	     cur && cur->start < t; cur = rc_index_next(x, &ci, &si))
		if (cur->end > s && !atomic_load(&cur->invalid)) {
			atomic_store(&cur->invalid, true);
			c->st.invalidations++;
		}
}

/* Drop every entry touching the pages [s, t); re-register the parts of
 * them outside [s, t) as entries of their own. */
static void invalidate_locked(struct regcache *c, uintptr_t s, uintptr_t t)
{
	struct regcache_entry **old, **add = NULL;
	size_t nold, nadd = 0;
	if (collect(c, s, t, false, &old, &nold)) {
		mark_invalid(c, s, t);
		return;
	}
	if (nold == 0) {
		free(old);
		return;
	}
	for (size_t i = 0; i < nold; i++)
		atomic_store(&old[i]->invalid, true);
	forget(c, old, nold);
	add = calloc(2 * nold, sizeof(*add));
	for (size_t i = 0; add && i < nold; i++) {
		uintptr_t part[2][2] = {{old[i]->start, s}, {t, old[i]->end}};
		for (int k = 0; k < 2; k++) {
			struct regcache_entry *e;
			if (part[k][0] >= part[k][1])
				continue;
			if (monitored(c) && !rc_monitor_watch(part[k][0], part[k][1]))
				continue;
			if (heap_reserve(c, nadd + 1) ||
			    entry_new(c, part[k][0], part[k][1], 1, &e))
				continue;
			add[nadd++] = e;
		}
	}
	if (commit(c, old, nold, add, nadd)) {
		/* Out of memory: the entries must still disappear, so retry
		 * without the survivors, which costs nothing to allocate
		 * beyond the chunks; as a last resort keep them marked
		 * invalid (never served) until the next write succeeds. */
		for (size_t i = 0; i < nadd; i++) {
			c->cfg.dereg(atomic_load(&c->ctx), add[i]->handle);
			atomic_fetch_add(&c->deregs, 1);
			free(add[i]);
		}
		nadd = 0;
		if (commit(c, old, nold, NULL, 0)) {
			for (size_t i = 0; i < nold; i++)
				remember(c, old[i]);
			free(old);
			free(add);
			return;
		}
	}
	for (size_t i = 0; i < nadd; i++) {
		add[i]->cached = true;
		remember(c, add[i]);
	}
	c->st.invalidations += nold;
	c->st.splits += nadd;
	free(old);
	free(add);
	evict(c);
}

/* ---- applying the kernel monitor's events ---- */

struct rangevec {
	uintptr_t (*r)[2];
	size_t n, cap;
	bool oom;
};

static void range_push(void *arg, uintptr_t s, uintptr_t e)
{
	struct rangevec *v = arg;
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		uintptr_t(*r)[2] = realloc(v->r, cap * sizeof(*r));
		if (!r) {
			v->oom = true;
			return;
		}
		v->r = r;
		v->cap = cap;
	}
	v->r[v->n][0] = s;
	v->r[v->n][1] = e;
	v->n++;
}

static void catch_up(struct regcache *c)
{
	uint64_t target = atomic_load_explicit(c->ev_src, memory_order_acquire);
	if (target == atomic_load_explicit(&c->ev_applied, memory_order_relaxed))
		return;
	struct rangevec v = {0};
	bool whole = !rc_monitor_drain(target, &c->log_pos, range_push, &v);
	if (whole || v.oom) {
		/* The log overflowed (or no memory to copy it): drop all. */
		invalidate_locked(c, 0, UINTPTR_MAX);
		c->st.events++;
	} else {
		for (size_t i = 0; i < v.n; i++) {
			uintptr_t s = v.r[i][0] & ~(c->page - 1);
			uintptr_t e = (v.r[i][1] + c->page - 1) & ~(c->page - 1);
			invalidate_locked(c, s, e);
		}
		c->st.events += v.n;
	}
	free(v.r);
	/* Release: a reader that sees the new batch sees the new snapshot. */
	atomic_store_explicit(&c->ev_applied, target, memory_order_release);
}

void regcache_apply_events(struct regcache *c)
{
	pthread_mutex_lock(&c->wlock);
	catch_up(c);
	pthread_mutex_unlock(&c->wlock);
}

/* ---- the public calls ---- */

int regcache_create(const struct regcache_config *cfg, struct regcache **out,
		    struct squall_error *err)
{
	if (!cfg || !cfg->reg || !cfg->dereg || !out)
		return squall_error_set(err, -EINVAL,
			"regcache: register and deregister callbacks are required");
	struct regcache *c = calloc(1, sizeof(*c));
	struct rc_index *empty = c ? rc_index_empty() : NULL;
	if (!empty) {
		free(c);
		return squall_error_set(err, -ENOMEM, "regcache: out of memory");
	}
	rc_fork_safety();
	atomic_init(&c->index, empty);
	c->cfg = *cfg;
	atomic_init(&c->ctx, cfg->ctx);
	atomic_init(&c->log_ctx, cfg->log_ctx);
	/* Read through the atomics only: a copy here would go stale at the
	 * first regcache_rebind. */
	c->cfg.ctx = NULL;
	c->cfg.log_ctx = NULL;
	c->page = (uintptr_t)sysconf(_SC_PAGESIZE);
	pthread_mutex_init(&c->wlock, NULL);
	c->ev_src = &c->ev_none;
	if (cfg->monitor == REGCACHE_MONITOR_OFF) {
		c->mon_status = REGCACHE_MONITOR_DISABLED;
		squall_error_set(&c->mon_why, 0,
				 "regcache: monitor disabled by configuration");
	} else if (rc_monitor_join(c, &c->mon_why) == 0) {
		c->mon_status = REGCACHE_MONITOR_ACTIVE;
		c->log_pos = rc_monitor_log_pos();
		atomic_store(&c->ev_applied, atomic_load(&rc_monitor_started));
		c->ev_src = &rc_monitor_started;
	} else {
		c->mon_status = REGCACHE_MONITOR_UNAVAILABLE;
		say(c, REGCACHE_LOG_WARN,
		    "regcache: no kernel unmap monitor, call regcache_invalidate() "
		    "before giving memory back: %s", c->mon_why.msg);
	}
	*out = c;
	return 0;
}

void regcache_rebind(struct regcache *c, void *ctx, void *log_ctx)
{
	/* Writers call back under wlock; call_rcu callbacks without it:
	 * once those queued so far have run, none still holds the old
	 * contexts. */
	pthread_mutex_lock(&c->wlock);
	atomic_store(&c->ctx, ctx);
	atomic_store(&c->log_ctx, log_ctx);
	pthread_mutex_unlock(&c->wlock);
	rc_barrier();
}

void regcache_destroy(struct regcache *c)
{
	if (!c)
		return;
	if (c->mon_status == REGCACHE_MONITOR_ACTIVE)
		rc_monitor_leave(c);
	pthread_mutex_lock(&c->wlock);
	struct regcache_entry **all;
	size_t n;
	if (collect(c, 0, UINTPTR_MAX, false, &all, &n) == 0) {
		for (size_t i = 0; i < n; i++)
			assert(atomic_load(&all[i]->ref) == 1 &&
			       "regcache_destroy with registrations still held");
		forget(c, all, n);
		if (n && commit(c, all, n, NULL, 0)) {
			/* No memory for a new snapshot: release directly, no
			 * reader can run any more. */
			urcu_bp_synchronize_rcu();
			for (size_t i = 0; i < n; i++)
				entry_unref(c, all[i]);
		}
		free(all);
	}
	pthread_mutex_unlock(&c->wlock);
	rc_barrier();
	rc_index_free(idx(c), true);
	free(c->heap);
	pthread_mutex_destroy(&c->wlock);
	free(c);
}

static int get_slow(struct regcache *c, uintptr_t a, uintptr_t b,
		    struct regcache_reg **out)
{
	pthread_mutex_lock(&c->wlock);
	catch_up(c);
	struct regcache_entry *e = rc_index_lookup(idx(c), a, b);
	int rc = 0;
	if (e && entry_try_hold(e)) {
		entry_touch(c, e);
	} else {
		c->st.misses++;
		uintptr_t s = a & ~(c->page - 1);
		uintptr_t t = (b + c->page - 1) & ~(c->page - 1);
		rc = insert(c, s, t, &e);
	}
	pthread_mutex_unlock(&c->wlock);
	if (rc == 0)
		*out = (struct regcache_reg *)e;
	return rc;
}

int regcache_get(struct regcache *c, const void *ptr, size_t len,
		 struct regcache_reg **out)
{
	uintptr_t a = (uintptr_t)ptr, b = a + len;
	if (caa_unlikely(len == 0 || b < a || b > UINTPTR_MAX - c->page))
		return -EINVAL;
	/* Acquire both: an unmap that returned before this call has bumped
	 * ev_src; an equal ev_applied was stored after the snapshot that
	 * applied it was published. */
	if (caa_likely(atomic_load_explicit(c->ev_src, memory_order_acquire) ==
		       atomic_load_explicit(&c->ev_applied, memory_order_acquire))) {
		urcu_bp_read_lock();
		struct regcache_entry *e =
			rc_index_lookup(atomic_load_explicit(&c->index,
							     memory_order_acquire), a, b);
		if (caa_likely(e && entry_try_hold(e))) {
			RC_TSAN_RELEASE(RC_TSAN_GP);
			urcu_bp_read_unlock();
			entry_touch(c, e);
			*out = (struct regcache_reg *)e;
			return 0;
		}
		RC_TSAN_RELEASE(RC_TSAN_GP);
		urcu_bp_read_unlock();
	}
	return get_slow(c, a, b, out);
}

void regcache_put(struct regcache *c, struct regcache_reg *r)
{
	struct regcache_entry *e = (struct regcache_entry *)r;
	unsigned left = atomic_fetch_sub_explicit(&e->ref, 1, memory_order_acq_rel);
	if (left == 1) {
		entry_release(c, e);
	} else if (caa_unlikely(left == 2 && atomic_load_explicit(&c->over,
						memory_order_relaxed))) {
		/* The cache is past its limit because everything was held;
		 * this entry just became evictable. */
		pthread_mutex_lock(&c->wlock);
		evict(c);
		pthread_mutex_unlock(&c->wlock);
	}
}

void *regcache_reg_handle(const struct regcache_reg *r)
{
	return ((const struct regcache_entry *)r)->handle;
}

void *regcache_reg_addr(const struct regcache_reg *r)
{
	return (void *)((const struct regcache_entry *)r)->start;
}

size_t regcache_reg_len(const struct regcache_reg *r)
{
	const struct regcache_entry *e = (const struct regcache_entry *)r;
	return e->end - e->start;
}

int regcache_invalidate(struct regcache *c, const void *ptr, size_t len)
{
	uintptr_t a = (uintptr_t)ptr, b = a + len;
	if (b < a || b > UINTPTR_MAX - c->page)
		return -EINVAL;
	if (len == 0)
		return 0;
	pthread_mutex_lock(&c->wlock);
	catch_up(c);
	invalidate_locked(c, a & ~(c->page - 1),
			  (b + c->page - 1) & ~(c->page - 1));
	pthread_mutex_unlock(&c->wlock);
	return 0;
}

void regcache_sync(struct regcache *c)
{
	regcache_apply_events(c);
	rc_barrier();
}

enum regcache_monitor_status regcache_monitor_status(const struct regcache *c,
						     struct squall_error *why)
{
	if (why)
		*why = c->mon_why;
	return c->mon_status;
}

void regcache_stats(struct regcache *c, struct regcache_stats *out)
{
	pthread_mutex_lock(&c->wlock);
	*out = c->st;
	uint64_t hits = c->hits_gone;
	const struct rc_index *x = idx(c);
	for (size_t i = 0; i < x->nchunks; i++)
		for (size_t k = 0; k < x->chunks[i]->n; k++)
			hits += atomic_load_explicit(&x->chunks[i]->e[k]->hits,
						     memory_order_relaxed);
	out->hits = hits;
	out->deregistrations = atomic_load(&c->deregs);
	out->dereg_failures = atomic_load(&c->dereg_fails);
	out->entries = c->entries;
	out->bytes = c->bytes;
	pthread_mutex_unlock(&c->wlock);
}
