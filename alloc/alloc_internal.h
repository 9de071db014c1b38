/*
 * alloc_internal.h - the allocator's data structures, shared by the files of alloc/.
 *
 * The region is cut into 4 KiB pages. A page table outside the region says,
 * for every page, which run (slab, extent, reservation or free run) it
 * belongs to, so any pointer resolves to its run in O(1). Slabs keep a free
 * bitmap (one 64-bit word per page of the slab) and every slot or extent has
 * one state byte in a side table indexed by "state index" = first page of
 * the run * 64 + slot number (a slot is at least 64 bytes, so a run of n
 * pages never needs more than 64 n indices). No allocator metadata lives in
 * the region itself: a stray write into a free buffer, by the application or
 * a peer, cannot corrupt it.
 */
#ifndef SQUALL_ALLOC_INTERNAL_H
#define SQUALL_ALLOC_INTERNAL_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <squall/alloc.h>

#define ALLOC_PAGE_SHIFT 12
#define ALLOC_NCLASSES 41            /* 64 B .. 64 KiB, four per doubling */
#define ALLOC_LARGE ALLOC_NCLASSES   /* the stats slot of extents */
#define ALLOC_SLAB_MIN_PAGES 16      /* every slab spans >= 64 KiB, so a
					slab's id is its first page / 16 */
#define ALLOC_MAG_MAX 64             /* per-thread cache depth, small classes */
#define ALLOC_NIL UINT32_MAX
#define ALLOC_PRESSURE_MS 100        /* bypass caches this long after a
					failed lease */
#define ALLOC_MAX_REGION (64ull << 30) /* slot offsets are kept in 16-byte
					  units in 32 bits */

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* State byte of the first page of a released extent: a second release of
 * the same pointer finds it and gets -EALREADY rather than -EINVAL. Every
 * run that reuses the page clears it. */
#define ALLOC_TOMB 0x7f

enum run_kind {
	RUN_FREE = 0,
	RUN_SLAB = 1,
	RUN_LARGE = 2,
	RUN_RESERVED = 3,
};

/* One per page. `first`, `kind` and `cls` are valid on every page (kind is
 * RUN_FREE on every page of a free run), so a pointer resolves with one
 * load. `npages` is valid on a run's first page; free runs also keep it, with
 * `first`, on their last page, so that a freed neighbour finds where the run
 * starts; `next` and `prev` link free runs in their size bin. */
struct page {
	uint32_t first;   /* first page of the run */
	uint8_t kind;     /* enum run_kind */
	uint8_t cls;      /* slab runs: the size class */
	uint32_t npages;  /* pages in the run */
	uint32_t next;
	uint32_t prev;
};

/* The constants of a size class that the hot path reads, packed together. */
struct class_info {
	uint32_t size;      /* slot bytes */
	uint32_t nslots;    /* slots per slab */
	uint32_t mag_cap;   /* per-thread cache depth */
	uint64_t magic;     /* floor(2^40 / size) + 1: offset / size by multiply */
};

/* A size class: constants, then the shared pool under its lock. */
struct size_class {
	uint32_t size;      /* slot bytes */
	uint32_t npages;    /* pages per slab */
	uint32_t nslots;    /* slots per slab */
	uint32_t mag_cap;   /* per-thread cache depth */
	uint64_t magic;     /* floor(2^40 / size) + 1: offset / size by multiply */

	pthread_mutex_t lock;
	uint32_t partial;   /* slabs with free slots (id list), ALLOC_NIL */
	uint32_t nslabs;    /* slabs of this class */
	uint32_t nempty;    /* slabs with every slot free */
	uint64_t out;       /* slots outside the pool: leased or thread-cached */
	uint64_t high_water;/* peak of out * size */
	atomic_uint_fast64_t failures;
} __attribute__((aligned(64)));

/* A slab, indexed by its first page / ALLOC_SLAB_MIN_PAGES. */
struct slab {
	uint32_t first;     /* first page */
	uint32_t nfree;     /* free slots in the pool (not cached by threads) */
	uint32_t next, prev;/* partial list of its class */
	uint8_t on_list;
};

/* A slot in a per-thread cache: its offset in the region / 16 (low half)
 * and its state index (high half), in one word, so that pushing a slot and
 * popping it right away is one store and one load of the same size (two
 * half-word stores read back as one word stall store forwarding). */
typedef uint64_t mag_ent;

static inline mag_ent ent_make(uint64_t off, uint32_t sidx)
{
	return (uint64_t)sidx << 32 | (uint32_t)(off >> 4);
}

static inline uint64_t ent_off(mag_ent e)
{
	return (uint64_t)(uint32_t)e << 4;
}

static inline uint32_t ent_sidx(mag_ent e)
{
	return (uint32_t)(e >> 32);
}

struct magazine {
	uint32_t n;
	mag_ent ent[ALLOC_MAG_MAX];
};

/* Counters a thread keeps for itself: written by the owner only (a relaxed
 * load and store, no locked instruction), read by alloc_stats(). */
struct tc_counts {
	atomic_uint_fast64_t leases;
	atomic_uint_fast64_t releases;
};

/* A thread's cache for one allocator. */
struct tcache {
	uint64_t aid;               /* id of the allocator it serves */
	struct alloc *a;            /* NULL once the allocator is destroyed */
	struct tcache *a_next;      /* in a->tcs, under the registry lock */
	struct tcache *a_prev;
	struct tcache *t_next;      /* in the owning thread's list */
	struct magazine mag[ALLOC_NCLASSES];
	struct tc_counts cnt[ALLOC_NCLASSES];
};

struct alloc {
	struct alloc_head h;        /* must stay first: alloc.h reads it */
	uint64_t id;                /* unique per allocator in the process */
	struct page *pages;         /* npages */
	atomic_uchar *state;        /* npages * 64 state bytes */
	atomic_int waiters;         /* threads in alloc_lease_wait() */
	/* CLOCK_MONOTONIC ms until which releases bypass thread caches,
	 * because a lease failed for want of space; 0: no pressure. */
	atomic_uint_fast64_t pressure_until;
	struct class_info ci[ALLOC_NCLASSES];

	size_t map_len;             /* bytes mapped (region rounded up) */
	bool huge;
	char note[256];
	alloc_dereg_fn dereg;
	void *reg_ctx;
	bool registered;

	uint32_t npages;
	uint64_t *freebits;         /* npages words: slab free bitmaps */
	struct slab *slabs;         /* npages / 16 + 1 */

	struct size_class cls[ALLOC_NCLASSES];

	/* Extents: page runs, free runs in 32 bins by floor(log2(npages)). */
	pthread_mutex_t ext_lock;
	uint32_t bins[32];
	uint64_t large_leases, large_releases, large_bytes, large_hwm;
	uint64_t reserved_bytes;
	atomic_uint_fast64_t large_failures;

	/* Per-thread caches of this allocator, and counts of exited threads;
	 * both under the process-wide registry lock (tcache.c). */
	struct tcache *tcs;
	uint64_t retired_leases[ALLOC_NCLASSES];
	uint64_t retired_releases[ALLOC_NCLASSES];

	/* Waiting for space (alloc_lease_wait). While someone waits, releases
	 * go straight to the shared pool and wake the waiters. */
	pthread_mutex_t wait_lock;
	pthread_cond_t wait_cond;
	uint64_t wait_seq;          /* bumped, under wait_lock, on give-back */
};

/* Map a request size (1 .. ALLOC_MAX_CLASS_SIZE) to its class. */
static inline unsigned size_to_class(size_t len)
{
	size_t x;
	unsigned b;

	if (len <= ALLOC_MIN_CLASS_SIZE)
		return 0;
	x = len - 1;
	b = 63u - (unsigned)__builtin_clzll(x);  /* floor(log2(x)) >= 6 */
	return 1 + 4 * (b - 6) + (unsigned)((x >> (b - 2)) & 3);
}

/* Class i's slot size: 64, then 2^b * (1 + k/4) for k = 1..4. */
static inline size_t class_size(unsigned i)
{
	unsigned g, k;

	if (i == 0)
		return ALLOC_MIN_CLASS_SIZE;
	g = (i - 1) / 4;
	k = (i - 1) % 4 + 1;
	return ((size_t)1 << (g + 6)) + (size_t)k * ((size_t)1 << (g + 4));
}

/* extent.c: page runs. Callers hold ext_lock. */
int ext_init(struct alloc *a);
uint32_t ext_alloc(struct alloc *a, uint32_t npages, uint32_t align_pages);
void ext_free(struct alloc *a, uint32_t first);
void ext_mark(struct alloc *a, uint32_t first, uint32_t npages, uint8_t kind,
	      uint8_t cls);
/* slab.c: the shared pool of each class. */
void slab_init_classes(struct alloc *a);
unsigned slab_refill(struct alloc *a, unsigned cls, mag_ent *out,
		     unsigned want);
void slab_flush(struct alloc *a, unsigned cls, const mag_ent *ents,
		unsigned n);
void slab_reclaim_empty(struct alloc *a);

/* tcache.c: the calling thread's cache for a. */
struct tcache *tcache_slow(struct alloc *a);
void tcache_flush_all(struct alloc *a, struct tcache *tc);
void tcache_detach_all(struct alloc *a);
void tcache_count_orphan(struct alloc *a, unsigned i);
void tcache_counts(struct alloc *a, unsigned i, uint64_t *leases,
		   uint64_t *releases);

extern __thread struct tcache *alloc_tls_tc
	__attribute__((tls_model("initial-exec")));

static inline struct tcache *tcache_get(struct alloc *a)
{
	struct tcache *tc = alloc_tls_tc;

	if (likely(tc && tc->aid == a->id))
		return tc;
	return tcache_slow(a);
}

/* Relaxed counter bump by the only writer: a plain load and store. */
static inline void count_add(atomic_uint_fast64_t *c, uint64_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

/* lease.c: wake threads waiting for space (called after a give-back). */
void alloc_wake_waiters(struct alloc *a);

#endif /* SQUALL_ALLOC_INTERNAL_H */
