/*
 * test_rdmc_schedule.c - every RDMC schedule, simulated step by step.
 *
 * For every algorithm, every n in 2..64 and every k in 1..256 the test runs
 * the schedule and checks, step by step: every receive meets the matching
 * send at its peer and every send its receive; a member sends only blocks
 * it received in an earlier step (rank 0 has them all); nobody receives a
 * block twice; each member sends and receives at most one block a step
 * (the API has room for no more); at the end every member holds all k
 * blocks; and the step count (the binomial pipeline is held to
 * k + ceil(log2 n) - 1 steps for every n, powers of two or not).
 *
 * The binomial and chain schedules are run asking every member about every
 * step. The sequential ones (k * (n - 1) steps, two members busy in each)
 * are run the way a member that skips its idle steps runs them: each
 * member asks only about the steps rdmc_schedule_next_active() names; a
 * busy step it skipped would leave a peer unmatched or a block missing.
 * test_idle_steps compares next_active() with get() on every (step, rank)
 * for a spread of sizes, and runs binomial and chain the skipping way too.
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

/* Check the transfers of one step among the busy members list[0..nb) and
 * deliver the blocks received. Every receive must meet the matching send
 * at its peer, from a peer that had the block before this step, of a block
 * the receiver lacks; as many sends as receives then means every send met
 * its receive too. Returns the blocks delivered. */
static unsigned check_step(enum rdmc_algorithm alg, unsigned n, unsigned k,
			   unsigned step, const unsigned *list, unsigned nb)
{
	unsigned sends = 0, recvs = 0;

	for (unsigned j = 0; j < nb; j++) {
		unsigned r = list[j], p = rcv[r].peer, b = rcv[r].block;

		sends += snd[r].peer != RDMC_NONE;
		if (p == RDMC_NONE)
			continue;
		recvs++;
		CHECK(p < n && p != r && b < k, "receive of a bad peer or block");
		CHECK(stamp[p] == step + 1 && snd[p].peer == r &&
		      snd[p].block == b, "receive without the matching send");
		CHECK(p == 0 || (have[p][b] != 0 && have[p][b] <= step),
		      "sends a block it does not have yet");
		CHECK(have[r][b] == 0, "block received twice");
		have[r][b] = step + 1;
		nhave[r]++;
	}
	if (sends != recvs)
		fail_at(alg, n, k, step, RDMC_NONE,
			"send without the matching receive");
	return recvs;
}

/* Run one schedule and check everything. With `every`, every member is
 * asked about every step; without, each member is asked only about the
 * steps rdmc_schedule_next_active() names, the way a member that skips its
 * idle steps runs it. */
static void simulate(enum rdmc_algorithm alg, unsigned n, unsigned k,
		     bool every)
{
	static unsigned list[N_ALLOC];
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
	if (!every) {
		for (step = 0; step <= steps; step++)
			bucket_head[step] = NIL;
		for (r = 0; r < n; r++) {
			unsigned first = rdmc_schedule_next_active(s, r, 0);
			CHECK(first <= steps, "next_active beyond the end");
			push(first, r);
		}
	}

	for (step = 0; step < steps; step++) {
		unsigned nb = 0;
		if (every) {
			for (r = 0; r < n; r++) {
				rdmc_schedule_get(s, step, r, &snd[r], &rcv[r]);
				if (busy(&snd[r], &rcv[r])) {
					stamp[r] = step + 1;
					list[nb++] = r;
				}
			}
		} else {
			for (r = bucket_head[step]; r != NIL; r = bucket_next[r]) {
				CHECK(rdmc_schedule_get(s, step, r, &snd[r],
							&rcv[r]) == 0, "get");
				CHECK(busy(&snd[r], &rcv[r]),
				      "next_active named an idle step");
				stamp[r] = step + 1;
				list[nb++] = r;
			}
		}
		received += check_step(alg, n, k, step, list, nb);
		if (nb)
			last_busy = step;
		for (unsigned j = 0; !every && j < nb; j++) {
			unsigned next;
			r = list[j];
			next = rdmc_schedule_next_active(s, r, step + 1);
			CHECK(next > step && next <= steps,
			      "next_active went backwards");
			push(next, r);
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

/* Every n in 2..64 and k in 1..256 for one algorithm. */
static void every_schedule(enum rdmc_algorithm alg)
{
	for (unsigned n = 2; n <= N_MAX; n++)
		for (unsigned k = 1; k <= K_MAX; k++)
			simulate(alg, n, k, alg != RDMC_SEQUENTIAL);
}

static void test_every_binomial(void **state)
{
	(void)state;
	every_schedule(RDMC_BINOMIAL);
}

static void test_every_chain(void **state)
{
	(void)state;
	every_schedule(RDMC_CHAIN);
}

static void test_every_sequential(void **state)
{
	(void)state;
	every_schedule(RDMC_SEQUENTIAL);
}

static void test_idle_steps(void **state)
{
	static const unsigned ks[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 31, 64, 256 };

	(void)state;
	for (unsigned a = 0; a < sizeof(algs) / sizeof(algs[0]); a++)
		for (unsigned n = 2; n <= N_MAX; n++)
			for (unsigned j = 0; j < sizeof(ks) / sizeof(ks[0]); j++)
				if (algs[a] != RDMC_SEQUENTIAL || n <= 16)
					check_idle_steps(algs[a], n, ks[j]);
	/* the busy-steps-only run of the binomial and chain schedules */
	for (unsigned n = 2; n <= N_MAX; n++)
		for (unsigned j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
			simulate(RDMC_BINOMIAL, n, ks[j], false);
			simulate(RDMC_CHAIN, n, ks[j], false);
		}
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
		cmocka_unit_test(test_every_binomial),
		cmocka_unit_test(test_every_chain),
		cmocka_unit_test(test_every_sequential),
		cmocka_unit_test(test_idle_steps),
		cmocka_unit_test(test_larger_groups),
	};
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
