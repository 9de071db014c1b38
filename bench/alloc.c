/*
 * alloc.c - lease+release cost of squall's allocator against glibc
 * malloc/free and jemalloc's malloc/free, on one workload.
 *
 * Each thread keeps 64 live buffers. One step releases a random one and
 * leases a new buffer of a random size in [lo, hi] in its place, and
 * writes its first byte (so no implementation can skip touching memory).
 * The random sizes and indices are drawn before timing. A round times
 * `iters` steps; the figures are the median over rounds of ns per step
 * (one lease plus one release), measured in the thread's CPU time so that
 * other processes on a shared machine do not count, and the throughput of
 * all threads together in wall-clock time.
 *
 * Built twice: `alloc` (squall and glibc; jemalloc not linked, because
 * Debian's libjemalloc replaces malloc in any process that links it) and
 * `alloc_jemalloc` (-DBENCH_JEMALLOC, jemalloc only), where malloc and free
 * are jemalloc's. Those are jemalloc's hit path (its inlined tcache fast
 * paths); mallocx/dallocx, even with no flags, take its general path,
 * about 1.5x slower per step, so they would flatter squall.
 *
 * `alloc` links libsquall.so, as applications do (and as `alloc_jemalloc`
 * links libjemalloc.so), so every call of either goes through the PLT.
 *
 * squall runs in two forms: `squall`, alloc_release() and alloc_lease()
 * with n = 1 as an application writes them (alloc.h takes both to the
 * by-value calls, so the descriptor stays in registers); `squall_one`,
 * alloc_release_one() and alloc_lease_one() called directly, the
 * descriptor by value, as malloc's size and pointer travel. Both keep
 * their live buffers as an array of descriptors (struct buf_desc), as an
 * application holds its leases, and the allocator in a local; malloc and
 * jemalloc keep an array of pointers.
 *
 * usage: alloc IMPL THREADS LO HI [ITERS [ROUNDS]]
 *   IMPL: squall | squall_one | malloc (in `alloc`), jemalloc (in
 *   `alloc_jemalloc`)
 * prints: impl=I threads=T lo=L hi=H ns=N mops=M
 * With ALLOC_BENCH_STATS set, the squall run also prints the allocator's
 * statistics (alloc_stats_print) to stderr at the end.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef BENCH_JEMALLOC
#include <jemalloc/jemalloc.h>
/* alloc.h's descriptor, which this build does not include: the squall
 * loop's live buffers, unused here. */
struct buf_desc {
	void *ptr;
	size_t len;
};
#else
#include <squall/alloc.h>
#endif

#define LIVE 64
#define NRAND 8192   /* pre-drawn sizes and indices, a power of two */
#define MAX_THREADS 8
#define MAX_ROUNDS 64

enum impl { IMPL_SQUALL, IMPL_SQUALL_ONE, IMPL_MALLOC, IMPL_JEMALLOC };

struct worker {
	pthread_t t;
	int id;
	double ns[MAX_ROUNDS];
	double secs[MAX_ROUNDS];
};

static enum impl impl;
static size_t lo, hi;
static long iters = 1000000;
static int rounds = 9, nthreads;
static pthread_barrier_t barrier;
#ifndef BENCH_JEMALLOC
static struct alloc *sq;
#endif

static double clock_s(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One implementation's loop, specialised by the compiler for each `which`
 * (always_inline + a constant argument), so no call through a pointer
 * sits between the workload and the allocator. */
static inline __attribute__((always_inline)) void
run(enum impl which, void **live, struct buf_desc *bufs, const size_t *sizes,
    const uint8_t *idx, long n)
{
#ifndef BENCH_JEMALLOC
	struct alloc *a = sq;
#endif
	long i;

	(void)bufs;
	for (i = 0; i < n; i++) {
		char *touch;
		unsigned k = idx[i & (NRAND - 1)];
		size_t sz = sizes[i & (NRAND - 1)];

		switch (which) {
#ifdef BENCH_JEMALLOC
		case IMPL_JEMALLOC:
			free(live[k]);
			touch = live[k] = malloc(sz);
			break;
#else
		case IMPL_SQUALL: {
			struct buf_desc *d = &bufs[k];

			if (alloc_release(a, d) || alloc_lease(a, 1, &sz, d))
				abort();
			touch = d->ptr;
			break;
		}
		case IMPL_SQUALL_ONE: {
			struct buf_desc d;

			if (alloc_release_one(a, bufs[k]))
				abort();
			d = alloc_lease_one(a, sz);
			if (!d.ptr)
				abort();
			bufs[k] = d;
			touch = d.ptr;
			break;
		}
		case IMPL_MALLOC:
			free(live[k]);
			touch = live[k] = malloc(sz);
			break;
#endif
		default:
			abort();
		}
		*(volatile char *)touch = (char)i;
	}
}

/* The first lease of one live slot: a descriptor for squall, a pointer for
 * the others. */
static void lease_first(void **live, struct buf_desc *bufs, size_t sz)
{
	(void)bufs;
	switch (impl) {
#ifdef BENCH_JEMALLOC
	case IMPL_JEMALLOC:
		*live = malloc(sz);
		return;
#else
	case IMPL_SQUALL:
	case IMPL_SQUALL_ONE:
		if (alloc_lease(sq, 1, &sz, bufs))
			abort();
		return;
	case IMPL_MALLOC:
		*live = malloc(sz);
		return;
#endif
	default:
		abort();
	}
}

static void release_last(void *live, struct buf_desc *bufs)
{
	switch (impl) {
#ifdef BENCH_JEMALLOC
	case IMPL_JEMALLOC:
		free(live);
		break;
#else
	case IMPL_SQUALL:
	case IMPL_SQUALL_ONE:
		if (alloc_release(sq, bufs))
			abort();
		break;
	case IMPL_MALLOC:
		free(live);
		break;
#endif
	default:
		abort();
	}
	(void)bufs;
}

static void *worker(void *arg)
{
	struct worker *w = arg;
	static __thread void *live[LIVE];
	static __thread struct buf_desc bufs[LIVE];
	size_t *sizes = malloc(NRAND * sizeof(*sizes));
	uint8_t *idx = malloc(NRAND);
	uint64_t seed = 0x2545f4914f6cdd1dull * (uint64_t)(w->id + 1);
	int i, r;

	for (i = 0; i < NRAND; i++) {
		sizes[i] = lo + xorshift(&seed) % (hi - lo + 1);
		idx[i] = (uint8_t)(xorshift(&seed) % LIVE);
	}
	for (i = 0; i < LIVE; i++)
		lease_first(&live[i], &bufs[i], sizes[i]);
	for (r = -1; r < rounds; r++) {
		double t0, c0;

		pthread_barrier_wait(&barrier);
		t0 = clock_s(CLOCK_MONOTONIC);
		c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		switch (impl) {
#ifdef BENCH_JEMALLOC
		case IMPL_JEMALLOC:
			run(IMPL_JEMALLOC, live, bufs, sizes, idx, iters);
			break;
#else
		case IMPL_SQUALL:
			run(IMPL_SQUALL, live, bufs, sizes, idx, iters);
			break;
		case IMPL_SQUALL_ONE:
			run(IMPL_SQUALL_ONE, live, bufs, sizes, idx, iters);
			break;
		case IMPL_MALLOC:
			run(IMPL_MALLOC, live, bufs, sizes, idx, iters);
			break;
#endif
		default:
			abort();
		}
		/* Round -1 warms caches and pools and is not counted. */
		if (r >= 0) {
			w->ns[r] = (clock_s(CLOCK_THREAD_CPUTIME_ID) - c0) * 1e9 /
				   iters;
			w->secs[r] = clock_s(CLOCK_MONOTONIC) - t0;
		}
	}
	for (i = 0; i < LIVE; i++)
		release_last(live[i], &bufs[i]);
	free(sizes);
	free(idx);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int parse_impl(const char *s)
{
#ifdef BENCH_JEMALLOC
	if (!strcmp(s, "jemalloc"))
		return IMPL_JEMALLOC;
#else
	if (!strcmp(s, "squall"))
		return IMPL_SQUALL;
	if (!strcmp(s, "squall_one"))
		return IMPL_SQUALL_ONE;
	if (!strcmp(s, "malloc"))
		return IMPL_MALLOC;
#endif
	return -1;
}

int main(int argc, char **argv)
{
	struct worker w[MAX_THREADS];
	double ns[MAX_ROUNDS], mops[MAX_ROUNDS];
	int i, r, which;

	if (argc < 5 || (which = parse_impl(argv[1])) < 0) {
		fprintf(stderr, "usage: %s IMPL THREADS LO HI [ITERS [ROUNDS]]\n",
			argv[0]);
		return 2;
	}
	impl = (enum impl)which;
	nthreads = atoi(argv[2]);
	lo = strtoul(argv[3], NULL, 0);
	hi = strtoul(argv[4], NULL, 0);
	if (argc > 5)
		iters = atol(argv[5]);
	if (argc > 6)
		rounds = atoi(argv[6]);
	if (nthreads < 1 || nthreads > MAX_THREADS || lo < 1 || hi < lo ||
	    iters < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "%s: bad arguments\n", argv[0]);
		return 2;
	}
#ifndef BENCH_JEMALLOC
	if (impl == IMPL_SQUALL || impl == IMPL_SQUALL_ONE) {
		struct alloc_params p = { .region_size = 128ull << 20 };
		struct squall_error err;

		if (alloc_create(&p, &sq, &err)) {
			fprintf(stderr, "alloc_create: %s\n", err.msg);
			return 1;
		}
	}
#endif
	pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
	for (i = 0; i < nthreads; i++) {
		w[i].id = i;
		pthread_create(&w[i].t, NULL, worker, &w[i]);
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(w[i].t, NULL);
	/* Per round: the slowest thread's time sets the throughput; ns is
	 * the mean over threads of each one's ns per step. */
	for (r = 0; r < rounds; r++) {
		double sum = 0, slowest = 0;

		for (i = 0; i < nthreads; i++) {
			sum += w[i].ns[r];
			if (w[i].secs[r] > slowest)
				slowest = w[i].secs[r];
		}
		ns[r] = sum / nthreads;
		mops[r] = nthreads * (double)iters / slowest / 1e6;
	}
	printf("impl=%s threads=%d lo=%zu hi=%zu ns=%.2f mops=%.2f\n", argv[1],
	       nthreads, lo, hi, median(ns, rounds), median(mops, rounds));
#ifndef BENCH_JEMALLOC
	if ((impl == IMPL_SQUALL || impl == IMPL_SQUALL_ONE) &&
	    getenv("ALLOC_BENCH_STATS"))
		alloc_stats_print(sq, stderr);
	alloc_destroy(sq);
#endif
	return 0;
}
