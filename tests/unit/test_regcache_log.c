/*
 * test_regcache_log.c - the unmap log between the registration cache's
 * monitor and the caches (rdma/regcache_monitor.c, built into this test so
 * that its appends can be made and interrupted by hand): a drain that may
 * have read a slot the monitor was overwriting says so, and the cache then
 * drops everything rather than keep a stale registration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../rdma/regcache_monitor.c"

struct seen {
	uint64_t a, other;
};

static void count(void *arg, uintptr_t s, uintptr_t e)
{
	struct seen *v = arg;

	if (s == 0xa000 && e == 0xb000)
		v->a++;
	else
		v->other++;
}

/* Fill the log from empty: event A first, then n - 1 others. */
static void fill(uint64_t n)
{
	atomic_store(&mon_log_head, 0);
	log_append(0xa000, 0xb000);
	for (uint64_t i = 1; i < n; i++)
		log_append(0x1000, 0x2000);
	atomic_store(&mon_done, 1);
}

/* As many events as the log holds less one, nothing overwritten: every
 * one is read and the drain is good. */
static void test_full_log_read(void **state)
{
	struct seen v = { 0 };
	uint64_t pos = 0;

	(void)state;
	fill(RC_LOG_SIZE - 1);
	assert_true(rc_monitor_drain(1, &pos, count, &v));
	assert_int_equal(v.a, 1);
	assert_int_equal(v.other, RC_LOG_SIZE - 2);
	assert_int_equal(pos, RC_LOG_SIZE - 1);
}

/* The log full to its size, and the monitor half way through the next
 * append: it wrote event A's slot and has not moved the head yet. A drain
 * from A then cannot have read A: it must say so. */
static void test_overwrite_in_progress(void **state)
{
	struct seen v = { 0 };
	uint64_t pos = 0;

	(void)state;
	fill(RC_LOG_SIZE);
	atomic_store(&mon_log[0].s, 0xc000);
	atomic_store(&mon_log[0].e, 0xd000);
	assert_false(rc_monitor_drain(1, &pos, count, &v) && v.a == 0);
	assert_int_equal(pos, RC_LOG_SIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_log_read),
		cmocka_unit_test(test_overwrite_in_progress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
