/*
 * test_regcache_oom.c - the registration cache when memory runs out: an
 * invalidation must never be lost and an entry once invalid must never be
 * served again, whichever allocation fails. The cache's sources
 * (rdma/regcache.c and rdma/regcache_index.c) are built into this test with
 * their allocations routed through functions that fail on demand: the
 * cache's own reallocs (the list of entries an invalidation collects) and
 * every allocation of the index (a new snapshot, so a commit).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static int fail_rc_reallocs;    /* regcache.c: fail the next n reallocs */
static bool fail_index;         /* regcache_index.c: fail every allocation */

static void *rc_realloc(void *p, size_t n)
{
	if (fail_rc_reallocs > 0) {
		fail_rc_reallocs--;
		return NULL;
	}
	return realloc(p, n);
}

static void *idx_malloc(size_t n)
{
	return fail_index ? NULL : malloc(n);
}

static void *idx_calloc(size_t k, size_t n)
{
	return fail_index ? NULL : calloc(k, n);
}

static void *idx_realloc(void *p, size_t n)
{
	return fail_index ? NULL : realloc(p, n);
}

static void *idx_aligned_alloc(size_t a, size_t n)
{
	return fail_index ? NULL : aligned_alloc(a, n);
}

#define malloc idx_malloc
#define calloc idx_calloc
#define realloc idx_realloc
#define aligned_alloc idx_aligned_alloc
#include "../../rdma/regcache_index.c"
#undef malloc
#undef calloc
#undef realloc
#undef aligned_alloc

#define realloc rc_realloc
#include "../../rdma/regcache.c"
#undef realloc

#include "regcache_harness.h"

/* An invalidation whose list of entries cannot be allocated: the entries
 * it names must still never be served again. */
static void test_invalidate_without_memory(void **state)
{
	struct counter k = { 0 };
	struct regcache *c = mk(&k, REGCACHE_MONITOR_OFF, 0, 0);
	char *a = arena(16);

	(void)state;
	assert_false(use(c, &k, a, 8 * pg));
	assert_true(use(c, &k, a + pg, pg));
	fail_rc_reallocs = 1;
	assert_int_equal(regcache_invalidate(c, a + 3 * pg, pg), 0);
	fail_rc_reallocs = 0;
	regcache_sync(c);
	/* The pages changed: whatever serves them now is registered anew. */
	assert_false(use(c, &k, a + 3 * pg, pg));
	regcache_destroy(c);
	rc_barrier();
	assert_int_equal(atomic_load(&k.live), 0);
	munmap(a, 16 * pg);
}

/* An entry left invalid in the index (its invalidation could not be
 * committed), then an insert beside it whose commit fails too: the entry
 * must stay invalid, never be served. */
static void test_invalid_entry_stays_invalid(void **state)
{
	struct counter k = { 0 };
	struct regcache *c = mk(&k, REGCACHE_MONITOR_OFF, 0, 0);
	char *a = arena(16);

	(void)state;
	assert_false(use(c, &k, a, 4 * pg));
	/* Both commits of the invalidation fail: the entry stays in the
	 * index, marked invalid. */
	fail_index = true;
	assert_int_equal(regcache_invalidate(c, a, 4 * pg), 0);
	fail_index = false;
	assert_false(use(c, &k, a + pg, pg));
	/* That miss's insert took the invalid entry's place. Again, and
	 * now the insert next to the invalid entry (touching it) cannot
	 * commit either. */
	regcache_destroy(c);
	rc_barrier();

	c = mk(&k, REGCACHE_MONITOR_OFF, 0, 0);
	assert_false(use(c, &k, a, 4 * pg));
	fail_index = true;
	assert_int_equal(regcache_invalidate(c, a, 4 * pg), 0);
	{
		struct regcache_reg *r;

		/* The insert touching [a, a + 4 pages) cannot commit. */
		assert_int_not_equal(regcache_get(c, a + 4 * pg, pg, &r), 0);
	}
	fail_index = false;
	regcache_sync(c);
	assert_false(use(c, &k, a + pg, pg));
	regcache_destroy(c);
	rc_barrier();
	assert_int_equal(atomic_load(&k.live), 0);
	munmap(a, 16 * pg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalidate_without_memory),
		cmocka_unit_test(test_invalid_entry_stays_invalid),
	};

	pg = (size_t)sysconf(_SC_PAGESIZE);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
