/*
 * bench/regcache.c - what a registration cache hit costs: squall's
 * regcache against UCX's rcache, same memory layout, same access pattern.
 *
 * Usage: regcache {squall|ucx} N [LOOKUPS]. Caches N one-page regions
 * separated by one-page gaps (a registration callback that does nothing),
 * then times LOOKUPS get+put pairs on random regions (64 bytes inside the
 * page) in 9 rounds. Prints one line: "impl=... entries=N insert_ns=...
 * hit_ns=... hit_ns_median=...": hit_ns is the best round (the machine is
 * shared; the best round is the one least disturbed), the median is shown
 * for comparison. One implementation per process, so
 * UCX's memory hooks and squall's userfaultfd monitor never meet.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <squall/regcache.h>

#ifdef HAVE_UCX
#include <ucm/api/ucm.h>
#include <ucs/memory/rcache.h>
#endif

#define ROUNDS 9

static size_t pg;

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static char *region_ptr(char *base, uint32_t i)
{
	return base + (size_t)i * 2 * pg + (i * 64u) % (pg - 64);
}

/* Random region indices, drawn before timing. */
static uint32_t *draw(size_t lookups, uint32_t n)
{
	uint32_t *idx = malloc(lookups * sizeof(*idx));
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; idx && i < lookups; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		idx[i] = (uint32_t)(x % n);
	}
	return idx;
}

static void report(const char *impl, uint32_t n, double insert_ns,
		   double rounds[ROUNDS])
{
	qsort(rounds, ROUNDS, sizeof(rounds[0]), cmp_double);
	printf("impl=%s entries=%u insert_ns=%.0f hit_ns=%.1f hit_ns_median=%.1f\n",
	       impl, n, insert_ns, rounds[0], rounds[ROUNDS / 2]);
}

/* ---- squall ---- */

static int noop_reg(void *ctx, void *addr, size_t len, void **h)
{
	(void)ctx;
	(void)len;
	*h = addr;
	return 0;
}

static int noop_dereg(void *ctx, void *h)
{
	(void)ctx;
	(void)h;
	return 0;
}

static int run_squall(char *base, uint32_t n, size_t lookups)
{
	struct regcache_config cfg = {.reg = noop_reg, .dereg = noop_dereg};
	struct regcache *c;
	struct squall_error err;
	if (regcache_create(&cfg, &c, &err)) {
		fprintf(stderr, "regcache_create: %s\n", err.msg);
		return 1;
	}
	if (regcache_monitor_status(c, &err) != REGCACHE_MONITOR_ACTIVE)
		fprintf(stderr, "note: no userfaultfd monitor: %s\n", err.msg);
	struct regcache_reg *r;
	double t0 = now_ns();
	for (uint32_t i = 0; i < n; i++) {
		if (regcache_get(c, region_ptr(base, i), 64, &r)) {
			fprintf(stderr, "regcache_get failed\n");
			return 1;
		}
		regcache_put(c, r);
	}
	double insert_ns = (now_ns() - t0) / n;
	struct regcache_stats st;
	regcache_stats(c, &st);
	if (st.entries != n) {
		fprintf(stderr, "expected %u entries, have %lu\n", n,
			(unsigned long)st.entries);
		return 1;
	}
	uint32_t *idx = draw(lookups, n);
	double rounds[ROUNDS];
	uintptr_t check = 0;
	for (int k = 0; k < ROUNDS; k++) {
		t0 = now_ns();
		for (size_t i = 0; i < lookups; i++) {
			regcache_get(c, region_ptr(base, idx[i]), 64, &r);
			check += (uintptr_t)regcache_reg_handle(r);
			regcache_put(c, r);
		}
		rounds[k] = (now_ns() - t0) / (double)lookups;
	}
	regcache_stats(c, &st);
	if (st.misses != n || check == 0) {
		fprintf(stderr, "lookups missed: %lu misses\n",
			(unsigned long)st.misses);
		return 1;
	}
	report("squall", n, insert_ns, rounds);
	free(idx);
	regcache_destroy(c);
	return 0;
}

/* ---- UCX ---- */

#ifdef HAVE_UCX
static ucs_status_t ucx_reg(void *ctx, ucs_rcache_t *rc, void *arg,
			    ucs_rcache_region_t *region, uint16_t flags)
{
	(void)ctx, (void)rc, (void)arg, (void)region, (void)flags;
	return UCS_OK;
}

static void ucx_dereg(void *ctx, ucs_rcache_t *rc, ucs_rcache_region_t *region)
{
	(void)ctx, (void)rc, (void)region;
}

static void ucx_dump(void *ctx, ucs_rcache_t *rc, ucs_rcache_region_t *region,
		     char *buf, size_t max)
{
	(void)ctx, (void)rc, (void)region;
	if (max)
		buf[0] = '\0';
}

static const ucs_rcache_ops_t ucx_ops = {ucx_reg, ucx_dereg, ucx_dump};

static int run_ucx(char *base, uint32_t n, size_t lookups)
{
	ucs_rcache_params_t p;
	memset(&p, 0, sizeof(p));
	p.region_struct_size = sizeof(ucs_rcache_region_t);
	p.alignment = UCS_RCACHE_MIN_ALIGNMENT;
	p.max_alignment = pg;
	p.ucm_events = UCM_EVENT_VM_UNMAPPED;   /* as UCX's own transports */
	p.ucm_event_priority = 1000;
	p.ops = &ucx_ops;
	p.flags = UCS_RCACHE_FLAG_NO_PFN_CHECK;
	p.max_regions = (unsigned long)-1;
	p.max_size = (size_t)-1;
	p.max_unreleased = (size_t)-1;
	ucs_rcache_t *rc;
	if (ucs_rcache_create(&p, "bench", NULL, &rc) != UCS_OK) {
		fprintf(stderr, "ucs_rcache_create failed\n");
		return 1;
	}
	ucs_rcache_region_t *r;
	int prot = PROT_READ | PROT_WRITE;
	double t0 = now_ns();
	for (uint32_t i = 0; i < n; i++) {
		if (ucs_rcache_get(rc, region_ptr(base, i), 64, prot, NULL, &r) !=
		    UCS_OK) {
			fprintf(stderr, "ucs_rcache_get failed\n");
			return 1;
		}
		ucs_rcache_region_put(rc, r);
	}
	double insert_ns = (now_ns() - t0) / n;
	uint32_t *idx = draw(lookups, n);
	double rounds[ROUNDS];
	uintptr_t check = 0;
	for (int k = 0; k < ROUNDS; k++) {
		t0 = now_ns();
		for (size_t i = 0; i < lookups; i++) {
			ucs_rcache_get(rc, region_ptr(base, idx[i]), 64, prot,
				       NULL, &r);
			check += r->super.start;
			ucs_rcache_region_put(rc, r);
		}
		rounds[k] = (now_ns() - t0) / (double)lookups;
	}
	if (check == 0)
		return 1;
	report("ucx", n, insert_ns, rounds);
	free(idx);
	ucs_rcache_destroy(rc);
	return 0;
}
#endif

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s {squall|ucx} N [LOOKUPS]\n", argv[0]);
		return 2;
	}
	pg = (size_t)sysconf(_SC_PAGESIZE);
	uint32_t n = (uint32_t)strtoul(argv[2], NULL, 10);
	size_t lookups = argc > 3 ? strtoul(argv[3], NULL, 10) : 1000000;
	if (n == 0 || lookups == 0)
		return 2;
	/* One page each with a one-page gap: no two regions touch, so
	 * neither cache merges them. Never touched: the callbacks do not
	 * pin anything. */
	char *base = mmap(NULL, (size_t)n * 2 * pg, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (!strcmp(argv[1], "squall"))
		return run_squall(base, n, lookups);
#ifdef HAVE_UCX
	if (!strcmp(argv[1], "ucx"))
		return run_ucx(base, n, lookups);
#else
	if (!strcmp(argv[1], "ucx")) {
		fprintf(stderr, "built without UCX (libucx-dev)\n");
		return 3;
	}
#endif
	return 2;
}
