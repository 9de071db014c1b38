/*
 * alloc_internal.h - the allocator's data structures, shared by the files of alloc/.
 *
 * The region is cut into 4 KiB pages. A page table outside the region says,
 * for every page, which run (slab, extent, reservation or free run) it
 * belongs to, so any pointer resolves to its run in O(1). Every 64-byte
 * window of the region has one state byte in a side table indexed by "state
 * index" = offset / 64: a slot is at least 64 bytes, so at most one slot or
 * extent starts in a window, and the byte of the window where it starts
 * holds its state and where in the window it starts. Slabs keep a free
 * bitmap with one bit per window (one 64-bit word per page of the slab).
 * No allocator metadata lives in the region itself: a stray write into a
 * free buffer, by the application or a peer, cannot corrupt it.
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
#define ALLOC_MAG_MAX 128            /* per-thread cache depth, small classes:
					half of it is two pages of 64 B slots */
#define ALLOC_NIL UINT32_MAX
#define ALLOC_PRESSURE_MS 100        /* bypass caches this long after a
					failed lease */
#define ALLOC_MAX_REGION (64ull << 30) /* slot offsets are kept in 16-byte
					  units in 32 bits */

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* A state byte: 0 when nothing starts in its window. Otherwise bits 4-5
 * hold bits 4-5 of the start's offset (a start is 16-byte aligned, so
 * these and the window say where it is) and the rest its state:
 *
 *   leased 0x80, delivered 0xc0     the states a release accepts: bits 0-3
 *                                   clear, bit 7 set
 *   free 0x01, submitted 0x02       bit 7 clear, bits 0-3 not
 *   tomb 0x03                       a released extent's first page
 *
 * so that "the exact start of a lease that may be released" is one masked
 * compare of the byte against the pointer's offset (st_releasable()):
 * an offset whose low four bits are not zero, or whose bits 4-5 name
 * another start, cannot match, nor can any other state. Reservations hold
 * the free byte; their pages say what they are. */
#define ST_POS 0x30u
#define ST_LEASED 0x80u
#define ST_DELIVERED 0xc0u
#define ST_FREE 0x01u
#define ST_SUBMITTED 0x02u

/* State byte of the first page of a released extent: a second release of
 * the same pointer finds it and gets -EALREADY rather than -EINVAL. It
 * reads as free, and differs from a free slot's byte so that a stale
 * pointer to a slot of a slab given back still gets -EINVAL. Every run
 * that reuses the page clears it. */
#define ALLOC_TOMB 0x03u

/* The byte of a slot or extent starting at off, in state st (free,
 * leased, submitted or delivered). off may also be the start's old byte,
 * whose bits 4-5 are the offset's. */
static inline unsigned char st_byte(uint64_t off, unsigned st)
{
	unsigned code = st == ALLOC_LEASED ? ST_LEASED :
			st == ALLOC_DELIVERED ? ST_DELIVERED :
			st == ALLOC_SUBMITTED ? ST_SUBMITTED : ST_FREE;

	return (unsigned char)(code | (off & ST_POS));
}

/* The enum alloc_buf_state of a start's byte. */
static inline unsigned st_state(unsigned char s)
{
	if (s & ST_LEASED)
		return s & 0x40 ? ALLOC_DELIVERED : ALLOC_LEASED;
	return (s & 0x0f) == ST_SUBMITTED ? ALLOC_SUBMITTED : ALLOC_FREE;
}

/* True when s is the byte of a lease starting exactly at off, leased or
 * delivered: what a release may free. */
static inline bool st_releasable(unsigned char s, uint64_t off)
{
	return ((s ^ (off & 0x3f)) & 0xbf) == ST_LEASED;
}

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

/* What a release reads of a page besides its state byte, in one word:
 * slab pages hold (slot size + 1) << 8 | class, every other page 0, so
 * "len <= slot size of a slab page" is one compare (len < word >> 8). */
static inline uint32_t pinfo_slab(unsigned cls, uint32_t size)
{
	return (size + 1) << 8 | cls;
}

/* The constants of a size class that resolve() reads, packed together. */
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
	/* The tag of the thread cache that last took slots from it, 0 for
	 * none: where refills look first (slab_refill()). A hint only,
	 * written under the class lock; cleared under it when that cache
	 * takes from another slab of the class (a cache marks one slab per
	 * class), and without it when the cache's thread exits: nothing
	 * depends on it but where slots come from. */
	atomic_uint_fast64_t owner;
};

/* A slot in a per-thread cache: its address. A lease hands it out as it
 * is; its state byte is at state_at + address / 64 (the region starts on a
 * page), its position bits are bits 4-5 of the address. */
typedef uintptr_t mag_ent;

/* A thread's cache for one allocator. Class i's free slots are
 * ent[i][0 .. n-1], newest last. Where its top is and the thread's lease
 * counter share one word, mw[i] = leases << 16 | top, top being the byte
 * offset in struct tcache of ent[i][n], so that a lease (top - 8, leases
 * + 1) is one add and a release (top + 8) another: no counter of its own
 * on either path, and the slot's address is the cache's plus top, with
 * no index to compute. The class is empty when top is lo[i] (the offset
 * of ent[i][0]) and full when it is hi[i] (ent[i][cap]): one compare of
 * the word's low 16 bits each. Releases follow from the invariant "pushes
 * - pops = n - net_in[i]", where net_in counts slots refilled from the pool
 * minus slots flushed to it (slow paths only): releases = leases + n -
 * net_in. The words are written by the owner only (a relaxed load and
 * store, no locked instruction) and read by alloc_stats(). */
#define MAG_TOP_BITS 16
#define MAG_TOP(w) ((uint32_t)((w) & ((1u << MAG_TOP_BITS) - 1)))
#define MAG_LEASE ((uint64_t)1 << MAG_TOP_BITS)
#define MAG_STEP ((uint64_t)sizeof(mag_ent))  /* top's move per slot */

/* What the hit paths read of a cache: the class words, then the allocator
 * it serves and the classes' bounds. A thread with no cache points at
 * tcache_none, whose `a` no allocator matches, so the TLS pointer is
 * never NULL and the hit paths test one word. (The words come first: with
 * `a` at offset 0 a lease plus release took about 5 % longer in
 * bench/alloc, with the same instructions.) */
struct tcache_head {
	atomic_uint_fast64_t mw[ALLOC_NCLASSES];
	/* The allocator served; TCACHE_DEAD once that is destroyed, so
	 * that a later allocator at the same address never matches. Never
	 * NULL, so that a NULL allocator argument never matches either.
	 * A plain pointer, which the hit paths compare straight from memory:
	 * alloc_destroy() sets it from another thread, but no thread may use
	 * the allocator meanwhile (alloc.h), and whatever hands this thread
	 * its next allocator orders that store before its next read. */
	struct alloc *a;
	uint16_t lo[ALLOC_NCLASSES];  /* top of class i when empty */
	uint16_t hi[ALLOC_NCLASSES];  /* top of class i when full */
};
extern struct tcache_head tcache_none;
#define TCACHE_DEAD ((struct alloc *)(void *)&tcache_none)

struct tcache {
	struct tcache_head h;       /* must stay first: see tcache_hit() */
	uint64_t aid;               /* id of the allocator it serves */
	uint64_t tag;               /* unique per cache, never 0: the slabs
				       it takes from (struct slab) */
	uint32_t own[ALLOC_NCLASSES];/* per class, the one slab marked with
				       the tag (ALLOC_NIL: none), so that
				       an exit clears just those */
	struct tcache *a_next;      /* in a->tcs, under the registry lock */
	struct tcache *a_prev;
	struct tcache *t_next;      /* in the owning thread's list */
	atomic_int_fast64_t net_in[ALLOC_NCLASSES];
	mag_ent ent[ALLOC_NCLASSES][ALLOC_MAG_MAX];
};
_Static_assert(sizeof(struct tcache) < (1u << MAG_TOP_BITS),
	       "a cache's offsets fit the word's top bits");

static inline uint64_t mag_word(struct tcache *tc, size_t cls)
{
	return atomic_load_explicit(&tc->h.mw[cls], memory_order_relaxed);
}

static inline void mag_set(struct tcache *tc, size_t cls, uint64_t w)
{
	atomic_store_explicit(&tc->h.mw[cls], w, memory_order_relaxed);
}

/* Slots in class cls of tc, of its word w. */
static inline unsigned mag_n(const struct tcache *tc, size_t cls, uint64_t w)
{
	return (unsigned)((MAG_TOP(w) - tc->h.lo[cls]) / MAG_STEP);
}

/* The slot at offset top of tc (a word's MAG_TOP, or one step below). */
static inline mag_ent *mag_at(struct tcache *tc, uint32_t top)
{
	return (mag_ent *)(void *)((char *)tc + top);
}

/* Slots moved from the pool into class cls of tc (negative: back). */
static inline void mag_net(struct tcache *tc, unsigned cls, int64_t k)
{
	atomic_store_explicit(&tc->net_in[cls],
		atomic_load_explicit(&tc->net_in[cls], memory_order_relaxed) + k,
		memory_order_relaxed);
}

/* The counts of class cls in tc, read by the owner or under the registry
 * lock (a racy snapshot then, as any counter read while it moves). */
static inline void mag_counts(struct tcache *tc, unsigned cls,
			      uint64_t *leases, uint64_t *releases)
{
	uint64_t w = mag_word(tc, cls);
	int64_t net = atomic_load_explicit(&tc->net_in[cls],
					   memory_order_relaxed);

	*leases = w >> MAG_TOP_BITS;
	*releases = *leases + mag_n(tc, cls, w) - (uint64_t)net;
}

struct alloc {
	struct alloc_head h;        /* must stay first: alloc.h reads it */
	/* The bound a release's hit path checks offsets against: h.len, or
	 * 0 while there is pressure (pressure_until), so that no release
	 * takes the hit path then and the path needs no test of its own for
	 * it (lease.c). Beside h.base: the path reads both. */
	atomic_uint_fast64_t hit_len;
	uint64_t id;                /* unique per allocator in the process */
	struct page *pages;         /* npages */
	uint32_t *pinfo;            /* npages: pinfo_slab() or 0 */
	atomic_uchar *state;        /* npages * 64 state bytes, a page's 64
				       in one cache line */
	uintptr_t state_at;         /* state - base / 64: the byte of the
				       window at address p is state_at + p / 64 */
	atomic_int waiters;         /* threads in alloc_lease_wait() */
	/* CLOCK_MONOTONIC ms until which releases bypass thread caches,
	 * because a lease failed for want of space; 0: no pressure. */
	atomic_uint_fast64_t pressure_until;
	/* Class of a request of len bytes: lut[(len-1)/16]. */
	uint8_t lut[ALLOC_MAX_CLASS_SIZE / 16];
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

static inline mag_ent ent_make(const struct alloc *a, uint64_t off)
{
	return (uintptr_t)a->h.base + off;
}

static inline uint64_t ent_off(const struct alloc *a, mag_ent e)
{
	return e - (uintptr_t)a->h.base;
}

/* The state byte of the slot e. */
static inline atomic_uchar *ent_state(const struct alloc *a, mag_ent e)
{
	return (atomic_uchar *)(a->state_at + (e >> 6));
}

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

/* The class of a request of 1 .. ALLOC_MAX_CLASS_SIZE bytes, from a table
 * (size_to_class() would take more registers and instructions than a
 * lease's hit path has; one table for every size costs one compare less
 * than a second, coarser one above 4 KiB). */
static inline size_t class_of(const struct alloc *a, size_t len)
{
	return a->lut[(len - 1) >> 4];
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
unsigned slab_refill(struct alloc *a, unsigned cls, uint64_t tag,
		     uint32_t *own, mag_ent *out, unsigned want, unsigned max);
void slab_disown(struct alloc *a, uint64_t tag, const uint32_t *own);
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

/* The head of this thread's current cache, or &tcache_none. */
extern __thread struct tcache_head *alloc_tls_head
	__attribute__((tls_model("initial-exec")));

/* True when h (alloc_tls_head) serves a, never for a NULL a; h is then
 * the first member of a struct tcache. The hit paths test this alone. */
static inline bool tcache_serves(struct tcache_head *h, struct alloc *a)
{
	return h->a == a;
}

/* This thread's cache for a, when the TLS pointer holds it, else NULL. */
static inline struct tcache *tcache_hit(struct alloc *a)
{
	struct tcache_head *h = alloc_tls_head;

	return likely(tcache_serves(h, a)) ? (struct tcache *)h : NULL;
}

static inline struct tcache *tcache_get(struct alloc *a)
{
	struct tcache *tc = tcache_hit(a);

	return likely(tc) ? tc : tcache_slow(a);
}

/* lease.c: wake the threads waiting for space, if any (called after a
 * give-back). */
void alloc_wake_waiters(struct alloc *a);

#endif /* SQUALL_ALLOC_INTERNAL_H */
