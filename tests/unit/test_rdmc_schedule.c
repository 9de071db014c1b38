/*
 * test_rdmc_schedule.c - every RDMC schedule, simulated step by step.
 *
 * For every algorithm, every n in 2..64 and every k in 1..256 the test runs
 * the schedule as the members would: each member asks only about the steps
 * in which rdmc_schedule_next_active() says it is busy, and the test checks
 * that within a step every send meets the matching receive at its peer,
 * that a member only sends blocks it received in an earlier step (rank 0
 * has them all), that nobody receives a block twice, that every member ends
 * with all k blocks, and the step count. Skipping idle steps keeps the
 * sequential schedules (k * (n - 1) steps) cheap; that the skipped steps
 * really are idle is checked separately against rdmc_schedule_get() for
 * every (step, rank) of the binomial and chain schedules and of the smaller
 * sequential ones, and is implied for the rest: a skipped transfer would
 * leave its peer unmatched or a block missing. The binomial pipeline is
 * held to k + ceil(log2 n) - 1 steps for every n, powers of two or not.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <squall/rdmc.h>

#define N_MAX 64
#define N_ALLOC 1024 /* members in the larger spot checks */
#define K_MAX 256

static const enum rdmc_algorithm algs[] = {
	RDMC_BINOMIAL, RDMC_CHAIN, RDMC_SEQUENTIAL,
};

static unsigned ceil_log2(unsigned n)
{
	unsigned l = 0;

	while ((1u << l) < n)
		l++;
	return l;
}

/* Simulation state, reused across runs. */
static uint32_t have[N_ALLOC][K_MAX];   /* step + 1 a block arrived, 0 = not */
static unsigned nhave[N_ALLOC];
static struct rdmc_transfer snd[N_ALLOC], rcv[N_ALLOC];
static unsigned bucket_head[K_MAX * N_MAX + 1];
static unsigned bucket_next[N_ALLOC];
static uint32_t stamp[N_ALLOC];       /* step + 1 when busy in that step */
#define NIL UINT32_MAX

static void push(unsigned step, unsigned rank)
{
	bucket_next[rank] = bucket_head[step];
	bucket_head[step] = rank;
}

/* What the schedule must take. */
static unsigned expected_steps(enum rdmc_algorithm alg, unsigned n,
			       unsigned k)
{
	switch (alg) {
	case RDMC_BINOMIAL:
		return k + ceil_log2(n) - 1;
	case RDMC_CHAIN:
		return k + n - 2;
	case RDMC_SEQUENTIAL:
		return k * (n - 1);
	}
	return 0;
}

static void fail_at(enum rdmc_algorithm alg, unsigned n, unsigned k,
		    unsigned step, unsigned rank, const char *what)
{
	fail_msg("%s n=%u k=%u step=%u rank=%u: %s",
		 rdmc_algorithm_name(alg), n, k, step, rank, what);
}

#define CHECK(cond, what) \
	do { \
		if (!(cond)) \
			fail_at(alg, n, k, step, r, what); \
	} while (0)

static bool busy(const struct rdmc_transfer *s, const struct rdmc_transfer *r)
{
	return s->peer != RDMC_NONE || r->peer != RDMC_NONE;
}

/* Run one schedule the way its members would and check everything. With
 * `dense`, also ask every member about every step and check that the ones
 * next_active() skipped are idle. */
static void simulate(enum rdmc_algorithm alg, unsigned n, unsigned k,
		     bool dense)
{
	struct rdmc_schedule *s;
	unsigned steps, step = 0, r = 0, last_busy = 0, received = 0;

	assert_int_equal(rdmc_schedule_create(alg, n, k, &s), 0);
	steps = rdmc_schedule_steps(s);
	/* The bound asked of the binomial pipeline is k + ceil(log2 n) - 1,
	 * one more for non-powers of two; squall's meets the tighter one. */
	CHECK(steps == expected_steps(alg, n, k), "step count");
	if (alg == RDMC_BINOMIAL)
		CHECK(steps <= k + ceil_log2(n) - 1 + ((n & (n - 1)) != 0),
		      "binomial step bound");
	assert_true(steps <= K_MAX * N_MAX);

	for (r = 0; r < n; r++) {
		memset(have[r], 0, k * sizeof(have[r][0]));
		nhave[r] = 0;
		stamp[r] = 0;
	}
	for (unsigned b = 0; b < k; b++)
		have[0][b] = 1; /* the sender has every block: a receipt fails */
	for (step = 0; step <= steps; step++)
		bucket_head[step] = NIL;
	for (r = 0; r < n; r++) {
		unsigned first = rdmc_schedule_next_active(s, r, 0);
		CHECK(first <= steps, "next_active beyond the end");
		push(first, r);
	}

	for (step = 0; step < steps; step++) {
		/* Everyone busy in this step states its transfers. */
		for (r = bucket_head[step]; r != NIL; r = bucket_next[r]) {
			assert_int_equal(rdmc_schedule_get(s, step, r, &snd[r],
							   &rcv[r]), 0);
			CHECK(busy(&snd[r], &rcv[r]),
			      "next_active named an idle step");
			stamp[r] = step + 1;
		}
		for (r = 0; dense && r < n; r++) {
			struct rdmc_transfer x, y;
			if (stamp[r] == step + 1)
				continue;
			assert_int_equal(rdmc_schedule_get(s, step, r, &x, &y), 0);
			CHECK(!busy(&x, &y), "next_active skipped a busy step");
		}
		/* Both ends of every transfer agree; senders hold the block. */
		for (r = bucket_head[step]; r != NIL; r = bucket_next[r]) {
			struct rdmc_transfer *x = &snd[r], *y = &rcv[r];
			if (x->peer != RDMC_NONE) {
				unsigned p = x->peer;
				CHECK(p < n && p != r, "send to a bad peer");
				CHECK(x->block < k, "send of a bad block");
				CHECK(r == 0 || (have[r][x->block] != 0 &&
						 have[r][x->block] <= step),
				      "sends a block it does not have yet");
				CHECK(stamp[p] == step + 1,
				      "peer of a send is idle");
				CHECK(rcv[p].peer == r && rcv[p].block == x->block,
				      "send without the matching receive");
			}
			if (y->peer != RDMC_NONE) {
				unsigned p = y->peer;
				CHECK(p < n && p != r, "receive from a bad peer");
				CHECK(y->block < k, "receive of a bad block");
				CHECK(stamp[p] == step + 1,
				      "peer of a receive is idle");
				CHECK(snd[p].peer == r && snd[p].block == y->block,
				      "receive without the matching send");
			}
		}
		/* Deliver, then queue each member for its next busy step. */
		for (r = bucket_head[step]; r != NIL;) {
			unsigned nr = bucket_next[r], next;
			if (rcv[r].peer != RDMC_NONE) {
				CHECK(have[r][rcv[r].block] == 0,
				      "block received twice");
				have[r][rcv[r].block] = step + 1;
				nhave[r]++;
				received++;
			}
			next = rdmc_schedule_next_active(s, r, step + 1);
			CHECK(next > step && next <= steps,
			      "next_active went backwards");
			push(next, r);
			last_busy = step;
			r = nr;
		}
	}
	for (r = 1; r < n; r++)
		CHECK(nhave[r] == k, "member misses blocks at the end");
	CHECK(received == (n - 1) * k, "transfer count");
	CHECK(last_busy + 1 == steps, "last step idle: schedule not tight");
	rdmc_schedule_destroy(s);
}

/* Compare next_active() with rdmc_schedule_get() on every (step, rank),
 * starting from idle steps too. */
static void check_idle_steps(enum rdmc_algorithm alg, unsigned n, unsigned k)
{
	struct rdmc_schedule *s;
	struct rdmc_transfer x, y;
	unsigned steps, step, r;

	assert_int_equal(rdmc_schedule_create(alg, n, k, &s), 0);
	steps = rdmc_schedule_steps(s);
	for (r = 0; r < n; r++) {
		unsigned next = steps;
		/* walk backwards so `next` is the first busy step >= step */
		for (step = steps + 2; step-- > 0;) {
			assert_int_equal(rdmc_schedule_get(s, step, r, &x, &y), 0);
			if (busy(&x, &y))
				next = step;
			CHECK(step < steps || !busy(&x, &y),
			      "busy after the last step");
			CHECK(rdmc_schedule_next_active(s, r, step) ==
				      (step < steps ? next : steps),
			      "next_active disagrees with get");
		}
	}
	rdmc_schedule_destroy(s);
}

static void test_every_schedule(void **state)
{
	(void)state;
	for (unsigned a = 0; a < sizeof(algs) / sizeof(algs[0]); a++)
		for (unsigned n = 2; n <= N_MAX; n++)
			for (unsigned k = 1; k <= K_MAX; k++)
				simulate(algs[a], n, k,
					 algs[a] != RDMC_SEQUENTIAL || n <= 8 ||
						 k <= 4);
}

static void test_idle_steps(void **state)
{
	(void)state;
	for (unsigned a = 0; a < sizeof(algs) / sizeof(algs[0]); a++)
		for (unsigned n = 2; n <= 17; n++)
			for (unsigned k = 1; k <= 40; k++)
				check_idle_steps(algs[a], n, k);
}

/* The binomial pipeline on 4 members, 3 blocks, by hand: rank 0 sends
 * block s in step s along dimension s mod 2. */
static void test_binomial_by_hand(void **state)
{
	struct rdmc_schedule *s;
	struct rdmc_transfer x, y;

	(void)state;
	assert_int_equal(rdmc_schedule_create(RDMC_BINOMIAL, 4, 3, &s), 0);
	assert_int_equal(rdmc_schedule_steps(s), 4);
	for (unsigned step = 0; step < 3; step++) {
		assert_int_equal(rdmc_schedule_get(s, step, 0, &x, &y), 0);
		assert_int_equal(x.block, step);
		assert_int_equal(x.peer, 1u << (step % 2));
		assert_int_equal(y.peer, RDMC_NONE);
		assert_int_equal(y.block, RDMC_NONE);
	}
	/* In the last step rank 2 still lacks block 2 (it was due along
	 * dimension 0, where rank 2 has no set bit): rank 0 sends it again
	 * along dimension 1, the only one left in time. */
	assert_int_equal(rdmc_schedule_get(s, 3, 0, &x, &y), 0);
	assert_int_equal(x.peer, 2);
	assert_int_equal(x.block, 2);
	assert_int_equal(rdmc_schedule_get(s, 3, 2, &x, &y), 0);
	assert_int_equal(y.peer, 0);
	assert_int_equal(y.block, 2);
	rdmc_schedule_destroy(s);
}

static void test_arguments(void **state)
{
	struct rdmc_schedule *s = NULL;
	struct rdmc_transfer x, y;

	(void)state;
	assert_int_equal(rdmc_schedule_create(RDMC_BINOMIAL, 0, 4, &s), -EINVAL);
	assert_int_equal(rdmc_schedule_create(RDMC_BINOMIAL, 4, 0, &s), -EINVAL);
	assert_int_equal(rdmc_schedule_create((enum rdmc_algorithm)7, 4, 4, &s),
			 -EINVAL);
	assert_int_equal(rdmc_schedule_create(RDMC_CHAIN,
					      RDMC_MAX_MEMBERS + 1, 4, &s),
			 -EINVAL);
	assert_int_equal(rdmc_schedule_create(RDMC_SEQUENTIAL, 70000, 70000,
					      &s), -EOVERFLOW);
	assert_null(s);

	/* One member: nothing to send. */
	for (unsigned a = 0; a < 3; a++) {
		assert_int_equal(rdmc_schedule_create(algs[a], 1, 5, &s), 0);
		assert_int_equal(rdmc_schedule_steps(s), 0);
		assert_int_equal(rdmc_schedule_next_active(s, 0, 0), 0);
		assert_int_equal(rdmc_schedule_get(s, 0, 0, &x, &y), 0);
		assert_int_equal(x.peer, RDMC_NONE);
		rdmc_schedule_destroy(s);
	}

	assert_int_equal(rdmc_schedule_create(RDMC_CHAIN, 5, 3, &s), 0);
	assert_int_equal(rdmc_schedule_algorithm(s), RDMC_CHAIN);
	assert_int_equal(rdmc_schedule_members(s), 5);
	assert_int_equal(rdmc_schedule_blocks(s), 3);
	assert_int_equal(rdmc_schedule_get(s, 0, 5, &x, &y), -EINVAL);
	assert_int_equal(rdmc_schedule_get(s, 0, 1, NULL, &y), 0);
	assert_int_equal(y.peer, 0);
	assert_int_equal(y.block, 0);
	assert_int_equal(rdmc_schedule_get(s, 1000, 1, &x, &y), 0);
	assert_int_equal(x.peer, RDMC_NONE);
	assert_int_equal(y.peer, RDMC_NONE);
	assert_int_equal(rdmc_schedule_next_active(s, 9, 0),
			 rdmc_schedule_steps(s));
	rdmc_schedule_destroy(s);
	rdmc_schedule_destroy(NULL);
}

/* Groups larger than the exhaustive range, a few shapes each. */
static void test_larger_groups(void **state)
{
	static const unsigned ns[] = { 65, 100, 127, 128, 129, 255, 256, 257,
				       1000, 1023, 1024 };
	static const unsigned ks[] = { 1, 2, 3, 7, 10, 64, 255 };

	(void)state;
	for (unsigned i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		for (unsigned j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
			simulate(RDMC_BINOMIAL, ns[i], ks[j], true);
			simulate(RDMC_CHAIN, ns[i], ks[j], true);
		}
}

static void test_names(void **state)
{
	(void)state;
	for (unsigned a = 0; a < 3; a++)
		assert_int_equal(rdmc_algorithm_from_name(
					 rdmc_algorithm_name(algs[a])),
				 (int)algs[a]);
	assert_string_equal(rdmc_algorithm_name(RDMC_BINOMIAL), "binomial");
	assert_null(rdmc_algorithm_name((enum rdmc_algorithm)3));
	assert_int_equal(rdmc_algorithm_from_name("tree"), -EINVAL);
	assert_int_equal(rdmc_algorithm_from_name(NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binomial_by_hand),
		cmocka_unit_test(test_arguments),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_every_schedule),
		cmocka_unit_test(test_idle_steps),
		cmocka_unit_test(test_larger_groups),
	};
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
