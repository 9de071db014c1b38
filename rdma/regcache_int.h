/*
 * regcache_int.h - internals shared by the registration cache's files:
 * the entry, the RCU-published index (regcache_index.c) and the userfaultfd
 * monitor (regcache_monitor.c). Not installed.
 */
#ifndef SQUALL_RDMA_REGCACHE_INT_H
#define SQUALL_RDMA_REGCACHE_INT_H

/* The read lock inlined (_LGPL_SOURCE) except under AddressSanitizer
 * builds: liburcu 0.13 places its bulletproof reader records less aligned
 * than their type says, which UBSan's alignment check would report from
 * every inlined lock (harmless on x86; the library itself does the same
 * accesses uninstrumented). */
#ifndef __SANITIZE_ADDRESS__
#define _LGPL_SOURCE
#endif
#include <urcu-bp.h>
#include <urcu/compiler.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <squall/regcache.h>

/* ThreadSanitizer cannot see liburcu's grace periods and callbacks (they
 * rest on membarrier and uninstrumented code), so TSan builds state them:
 * a reader releases RC_TSAN_GP just before it leaves its read-side section, a
 * writer releases a snapshot before call_rcu(), the callback acquires both
 * and releases RC_TSAN_CB, which rcu_barrier()'s callers acquire.
 * Compiled out elsewhere. */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
extern char rc_tsan_sync[2];
#define RC_TSAN_GP (&rc_tsan_sync[0])
#define RC_TSAN_CB (&rc_tsan_sync[1])
#define RC_TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define RC_TSAN_RELEASE(p) __tsan_release((void *)(p))
#else
#define RC_TSAN_ACQUIRE(p) ((void)0)
#define RC_TSAN_RELEASE(p) ((void)0)
#endif

/* One registration. [start, end) is page aligned. Cached entries never
 * overlap. `ref` counts users plus one while the entry is published in the
 * index; that index reference is dropped only a grace period after the
 * entry left the index, so a reader inside rcu_read_lock() can always take
 * a reference safely, and the count reaching zero means nobody can find or
 * hold the entry any more. */
struct regcache_entry {
	/* The fields a hit touches come first: with the entry 64-byte
	 * aligned they share one cache line. */
	uintptr_t start;
	uintptr_t end;
	atomic_uint ref;
	atomic_bool invalid;      /* memory went away: readers must not use it */
	atomic_uint_fast64_t stamp; /* cache clock at the last use (LRU) */
	atomic_uint_fast64_t hits;  /* lookups served; summed by stats */
	void *handle;             /* from the reg callback */
	struct regcache *cache;
	/* Writer-only fields (under cache->wlock). */
	uint64_t seq;             /* insertion order: LRU tie-break */
	uint64_t heap_key;        /* stamp when (re)placed in the LRU heap */
	size_t heap_pos;          /* position in cache->heap, SIZE_MAX if none */
	bool unlink;              /* marked for removal by the current commit */
	bool cached;              /* published in the index (not one-shot) */
};

/* An immutable sorted snapshot: chunks of entries ordered by start, and the
 * first start of every chunk for the top-level search. Writers copy the
 * chunks they change and the top arrays, publish the new snapshot with
 * rcu_assign_pointer() and retire the old one with call_rcu(); unchanged
 * chunks are shared between snapshots. */
#define RC_CHUNK_MAX 128
#define RC_GROUP 8 /* starts per cache line */

/* A chunk's starts are searched in two steps that touch three cache lines:
 * the group summary (every RC_GROUP-th start, two lines), then the one
 * line of starts the address falls in. Chunks are 64-byte aligned. */
struct rc_chunk {
	_Alignas(64) uintptr_t sum[RC_CHUNK_MAX / RC_GROUP];
	_Alignas(64) uintptr_t start[RC_CHUNK_MAX];
	struct regcache_entry *e[RC_CHUNK_MAX];
	uint32_t n;
};

struct rc_index {
	size_t nchunks;
	size_t nentries;
	uintptr_t *first;            /* first[i] == chunks[i]->start[0] */
	struct rc_chunk **chunks;
	/* Filled when this snapshot is replaced: what becomes garbage a grace
	 * period later. */
	struct rcu_head rcu;
	struct rc_chunk **dead_chunks;
	size_t ndead_chunks;
	struct regcache_entry **dead_entries;
	size_t ndead_entries;
};

/* Find the entry covering [a, b) in the snapshot, or NULL. Caller is inside
 * urcu_bp_read_lock(). Branch-free binary searches: a hit costs two short
 * searches and one entry load. */
static inline struct regcache_entry *rc_index_lookup(const struct rc_index *x,
						     uintptr_t a, uintptr_t b)
{
	size_t n = x->nchunks;
	if (caa_unlikely(n == 0 || a < x->first[0]))
		return NULL;
	const uintptr_t *base = x->first;
	while (n > 1) {
		size_t half = n / 2;
		base = base[half] <= a ? base + half : base;
		n -= half;
	}
	const struct rc_chunk *ch = x->chunks[base - x->first];
	/* ch->sum[0] == ch->start[0] <= a: the group search cannot fail. */
	const uintptr_t *g = ch->sum;
	n = (ch->n + RC_GROUP - 1) / RC_GROUP;
	while (n > 1) {
		size_t half = n / 2;
		g = g[half] <= a ? g + half : g;
		n -= half;
	}
	size_t first = (size_t)(g - ch->sum) * RC_GROUP;
	const uintptr_t *s = ch->start + first;
	n = ch->n - first < RC_GROUP ? ch->n - first : RC_GROUP;
	while (n > 1) {
		size_t half = n / 2;
		s = s[half] <= a ? s + half : s;
		n -= half;
	}
	struct regcache_entry *e = ch->e[s - ch->start];
	return b <= e->end ? e : NULL;
}

/* Index edits, under the cache's writer lock. */
struct rc_index *rc_index_empty(void);
/* Position of the last entry with start <= a (chunk, slot); false if none. */
bool rc_index_floor(const struct rc_index *x, uintptr_t a, size_t *ci,
		    size_t *si);
/* The entry after (ci, si) in order, advancing the position; NULL at end. */
struct regcache_entry *rc_index_next(const struct rc_index *x, size_t *ci,
				     size_t *si);
/* Build the snapshot that follows x: entries with e->unlink set are left
 * out, the `nadd` entries in `add` (sorted by start, not overlapping the
 * kept ones) are put in. Returns NULL on -ENOMEM (x unchanged). The unlinked
 * entries and replaced chunks are recorded in x's dead lists. */
struct rc_index *rc_index_commit(struct rc_index *x,
				 struct regcache_entry **unlinked, size_t nunlinked,
				 struct regcache_entry **add, size_t nadd);
/* Free a snapshot that was never published or whose dead lists were
 * handled; `deep` also frees every chunk it references (final teardown). */
void rc_index_free(struct rc_index *x, bool deep);

/* The process-wide userfaultfd monitor. */
struct rc_monitor_sub {
	struct regcache *cache;
	struct rc_monitor_sub *next;
};
/* Join the monitor (start it if first). Returns 0, or a negative errno with
 * why filled when the kernel refuses; the cache then runs without it. */
int rc_monitor_join(struct regcache *c, struct squall_error *why);
void rc_monitor_leave(struct regcache *c);
/* Keep liburcu and the monitor sane across fork() (pthread_atfork, once). */
void rc_fork_safety(void);
/* Ask the kernel to report unmaps of [s, e). False if it refuses. */
bool rc_monitor_watch(uintptr_t s, uintptr_t e);
/* The batch counter readers compare with their cache's applied batch. */
extern atomic_uint_fast64_t rc_monitor_started;
/* Wait until batch `target` has been logged; then copy ranges logged since
 * *pos into the callback. Returns false if the log wrapped past *pos (the
 * caller must drop everything). */
bool rc_monitor_drain(uint64_t target, uint64_t *pos,
		      void (*fn)(void *arg, uintptr_t s, uintptr_t e), void *arg);
/* Current log position, for a cache that joins. */
uint64_t rc_monitor_log_pos(void);

/* Give c's callbacks other contexts (cfg.ctx and cfg.log_ctx) from now
 * on: when it returns, no call_rcu callback runs with the old ones, and
 * every later call gets the new. No other thread may get or put on c
 * meanwhile (a put that drops the last reference calls back on its own
 * thread). For a cache that outlives the object its callbacks were made
 * for (a node's cache kept for the member's next node, while the group's
 * view change holds every sender out). */
void regcache_rebind(struct regcache *c, void *ctx, void *log_ctx);

/* Called by the monitor's worker: apply pending events to cache c. */
void regcache_apply_events(struct regcache *c);

#endif /* SQUALL_RDMA_REGCACHE_INT_H */
