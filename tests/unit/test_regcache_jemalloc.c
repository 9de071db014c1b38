/*
 * test_regcache_jemalloc.c - the jemalloc arena registered as it grows:
 * memory from mallocx on the arena is already in the cache (a send's
 * lookup is a hit, not a registration), frees keep it registered for
 * reuse, and destroying the arena takes every extent out of the cache
 * before unmapping it. The register callback only counts (no NIC).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jemalloc/jemalloc.h>

#include <squall/regcache.h>
#include <squall/regcache_jemalloc.h>

struct counter {
	long regs, deregs;
};

static int count_reg(void *ctx, void *addr, size_t len, void **h)
{
	struct counter *k = ctx;

	(void)addr;
	(void)len;
	__atomic_add_fetch(&k->regs, 1, __ATOMIC_RELAXED);
	*h = k;
	return 0;
}

static int count_dereg(void *ctx, void *h)
{
	struct counter *k = ctx;

	(void)h;
	__atomic_add_fetch(&k->deregs, 1, __ATOMIC_RELAXED);
	return 0;
}

static void test_arena_memory_is_registered(void **state)
{
	struct counter k = { 0 };
	struct regcache_config cfg = {
		.reg = count_reg,
		.dereg = count_dereg,
		.ctx = &k,
		.monitor = REGCACHE_MONITOR_OFF,
	};
	struct regcache *c;
	struct regcache_arena *a;
	struct regcache_arena_stats as;
	struct regcache_stats before, after;
	struct regcache_reg *r;
	struct squall_error err;
	void *p[16];
	int flags;

	(void)state;
	assert_int_equal(regcache_create(&cfg, &c, &err), 0);
	assert_int_equal(regcache_arena_create(c, &a, &err), 0);
	flags = MALLOCX_ARENA(regcache_arena_index(a)) | MALLOCX_TCACHE_NONE;

	/* Small and large allocations, written to. */
	for (int i = 0; i < 16; i++) {
		size_t sz = (size_t)64 << i;

		p[i] = mallocx(sz, flags);
		assert_non_null(p[i]);
		memset(p[i], i, sz);
	}
	regcache_arena_stats(a, &as);
	assert_true(as.extents > 0);
	assert_int_equal(as.reg_failures, 0);
	assert_true(k.regs > 0);

	/* A send's lookup of any of them is a hit: nothing new registered. */
	regcache_stats(c, &before);
	for (int i = 0; i < 16; i++) {
		assert_int_equal(regcache_get(c, p[i], (size_t)64 << i, &r), 0);
		regcache_put(c, r);
	}
	regcache_stats(c, &after);
	assert_int_equal(after.misses, before.misses);
	assert_int_equal(after.hits, before.hits + 16);
	assert_int_equal(after.registrations, before.registrations);

	/* Freed memory stays mapped and registered for the next mallocx. */
	for (int i = 0; i < 16; i++)
		dallocx(p[i], flags);
	regcache_stats(c, &after);
	assert_int_equal(after.invalidations, 0);

	/* Destroying the arena takes its extents out of the cache. */
	regcache_arena_stats(a, &as);
	regcache_arena_destroy(a);
	regcache_stats(c, &after);
	assert_true(after.invalidations > 0);
	assert_int_equal(after.entries, 0);
	regcache_sync(c);
	regcache_destroy(c);
	assert_int_equal(k.regs, k.deregs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arena_memory_is_registered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
