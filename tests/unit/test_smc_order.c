/*
 * test_smc_order.c - the stability and round-robin delivery rule on
 * recorded inputs: received-count matrices as members would publish them,
 * idle senders covered by null records, wrap-around of the per-sender
 * queues, batched collection, and members that see the same records in
 * different interleavings and with different (lagging) views of each
 * other's counters yet deliver the same sequence; a member passing its own
 * null rounds before the others say they hold them; and the ragged end
 * of a view (collect up to a per-sender trim).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "smc/order.h"
#include "smc/ring.h"

static struct smc_order_rec msg(uint64_t rec, uint64_t round)
{
	return (struct smc_order_rec){
	    .rec = rec, .round = round, .len = 1, .nrounds = 1};
}

static struct smc_order_rec null_rec(uint64_t rec, uint64_t round,
				     uint16_t nrounds)
{
	return (struct smc_order_rec){.rec = rec,
				      .round = round,
				      .nrounds = nrounds,
				      .flags = SMC_REC_NULL};
}

/* Stability needs every member: the recorded matrices below are rows of
 * three members (row j: what member j holds of senders 0, 1, 2). */
static void test_frontier_recorded(void **state)
{
	(void)state;
	const uint64_t none[9] = {0};
	/* Everyone has message 0 of sender 0 except member 2. */
	const uint64_t two_of_three[9] = {1, 0, 0, 1, 0, 0, 0, 0, 0};
	const uint64_t all_three[9] = {1, 0, 0, 1, 0, 0, 1, 0, 0};
	/* Sender 0 at 5 rounds, sender 1 at 2, sender 2 at 3, everywhere;
	 * sender 1's round 2 (position 7) is the first gap. */
	const uint64_t uneven[9] = {5, 2, 3, 5, 2, 3, 5, 2, 3};
	/* The same, but member 1 lags on sender 2 (1 round). */
	const uint64_t lag[9] = {5, 2, 3, 5, 2, 1, 5, 2, 3};

	assert_int_equal(smc_order_frontier(none, 3), 0);
	assert_int_equal(smc_order_frontier(two_of_three, 3), 0);
	assert_int_equal(smc_order_frontier(all_three, 3), 1);
	assert_int_equal(smc_order_frontier(uneven, 3), 7);
	assert_int_equal(smc_order_frontier(lag, 3), 5);
	/* One member alone: everything it sent is stable. */
	const uint64_t solo[1] = {4};
	assert_int_equal(smc_order_frontier(solo, 1), 4);
}

static void test_round_robin(void **state)
{
	struct smc_order o;
	struct smc_order_event ev[16];
	const uint64_t full[9] = {2, 2, 2, 2, 2, 2, 2, 2, 2};

	(void)state;
	assert_int_equal(smc_order_init(&o, 3, 4), 0);
	/* Arrival order does not matter, only positions do. */
	for (int s = 2; s >= 0; s--)
		for (int r = 0; r < 2; r++)
			assert_int_equal(smc_order_push(&o, s,
							&(struct smc_order_rec){
							    .rec = r,
							    .round = r,
							    .len = 10 * s + r,
							    .nrounds = 1}),
					 0);
	assert_int_equal(
	    smc_order_collect(&o, smc_order_frontier(full, 3), ev, 16), 6);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(ev[i].seq, i);
		assert_int_equal(ev[i].sender, i % 3);
		assert_int_equal(ev[i].rec.round, i / 3);
		assert_int_equal(ev[i].rec.len, 10 * (i % 3) + i / 3);
	}
	assert_int_equal(o.delivered, 6);
	assert_int_equal(smc_order_collect(&o, 6, ev, 16), 0);
	smc_order_fini(&o);
}

static void test_push_errors(void **state)
{
	struct smc_order o;
	struct smc_order_rec r;

	(void)state;
	assert_int_equal(smc_order_init(&o, 0, 4), -EINVAL);
	assert_int_equal(smc_order_init(&o, 2, 2), 0);
	r = msg(0, 1);
	assert_int_equal(smc_order_push(&o, 0, &r), -EPROTO); /* gap */
	r = msg(0, 0);
	assert_int_equal(smc_order_push(&o, 0, &r), 0);
	assert_int_equal(smc_order_push(&o, 0, &r), -EPROTO); /* overlap */
	r = null_rec(1, 1, 4);
	assert_int_equal(smc_order_push(&o, 0, &r), 0);
	assert_int_equal(smc_order_received(&o, 0), 5);
	r = msg(2, 5);
	assert_int_equal(smc_order_push(&o, 0, &r), -ENOBUFS);
	smc_order_fini(&o);
}

/*
 * One sender busy, two idle: without nulls nothing past position 0 is
 * stable; with the null rounds the rule asks for, every message of the busy
 * sender is delivered, and the nulls are passed without an upcall.
 */
static void test_idle_senders_nulls(void **state)
{
	struct smc_order o;
	struct smc_order_event ev[16];
	uint64_t recv[9] = {0};
	uint64_t n1, n2;
	uint32_t got;

	(void)state;
	assert_int_equal(smc_order_init(&o, 3, 8), 0);
	for (int r = 0; r < 5; r++) {
		struct smc_order_rec m = msg(r, r);
		assert_int_equal(smc_order_push(&o, 0, &m), 0);
	}
	for (int j = 0; j < 3; j++)
		recv[j * 3 + 0] = 5;
	assert_int_equal(smc_order_frontier(recv, 3), 1);
	assert_int_equal(smc_order_collect(&o, 1, ev, 16), 1);
	assert_int_equal(ev[0].seq, 0);

	/* Member 1 holds {5, 0, 0}: sender 0's round 4 (position 12) needs
	 * only its rounds 0..3, but it covers round 4 too, so that sender 0's
	 * round 5 will find member 1's rounds before it known already. Member
	 * 2 then sees member 1's nulls and covers the same rounds. */
	n1 = smc_order_null_rounds((uint64_t[]){5, 0, 0}, 3, 1);
	assert_int_equal(n1, 5);
	n2 = smc_order_null_rounds((uint64_t[]){5, 5, 0}, 3, 2);
	assert_int_equal(n2, 5);
	/* Nothing to do once caught up, and nulls never pass the latest round
	 * another member sent: idle members do not chase each other. */
	assert_int_equal(smc_order_null_rounds((uint64_t[]){5, 5, 5}, 3, 2), 0);
	assert_int_equal(smc_order_null_rounds((uint64_t[]){5, 5, 5}, 3, 1), 0);
	assert_int_equal(smc_order_null_rounds((uint64_t[]){0, 0, 0}, 3, 0), 0);
	/* Sender 0 is behind senders 1 and 2 by one round each. */
	assert_int_equal(smc_order_null_rounds((uint64_t[]){2, 3, 3}, 3, 0), 1);
	/* Sender 2 is behind sender 1's latest round, not only sender 0's. */
	assert_int_equal(smc_order_null_rounds((uint64_t[]){2, 4, 1}, 3, 2), 3);

	struct smc_order_rec a = null_rec(0, 0, (uint16_t)n1);
	struct smc_order_rec b = null_rec(0, 0, (uint16_t)n2);
	assert_int_equal(smc_order_push(&o, 1, &a), 0);
	assert_int_equal(smc_order_push(&o, 2, &b), 0);
	for (int j = 0; j < 3; j++) {
		recv[j * 3 + 1] = n1;
		recv[j * 3 + 2] = n2;
	}
	assert_int_equal(smc_order_frontier(recv, 3), 15);
	got = smc_order_collect(&o, 15, ev, 16);
	/* Messages at 3, 6, 9, 12 and the two null records once passed:
	 * sender 1's last null round at 13, sender 2's at 14. */
	assert_int_equal(got, 6);
	uint64_t want_seq[6] = {3, 6, 9, 12, 13, 14};
	uint32_t want_sender[6] = {0, 0, 0, 0, 1, 2};
	for (uint32_t i = 0; i < got; i++) {
		assert_int_equal(ev[i].seq, want_seq[i]);
		assert_int_equal(ev[i].sender, want_sender[i]);
	}
	assert_true(ev[4].rec.flags & SMC_REC_NULL);
	assert_true(ev[5].rec.flags & SMC_REC_NULL);
	assert_int_equal(o.delivered, 5);
	smc_order_fini(&o);
}

/*
 * Two members, member 0 sending, member 1 idle and caught up on nulls:
 * when member 0's next round arrives at member 1, member 0's pushed row
 * still says it sent one round less. Credited with what arrived of it,
 * member 1 finds the round stable at once; only other members' rows
 * count against it.
 */
static void test_credit_senders(void **state)
{
	/* Member 1's view: it holds 3 rounds of member 0 and sent 2 nulls;
	 * member 0's last pushed row says {2, 2}. */
	uint64_t recv[4] = {2, 2, 3, 2};
	/* Three members: member 2's row still lacks member 0's round 2. */
	uint64_t recv3[9] = {2, 3, 3, 3, 3, 3, 2, 3, 3};

	(void)state;
	assert_int_equal(smc_order_frontier(recv, 2), 4);
	smc_order_credit_senders(recv, 2, 1);
	assert_int_equal(recv[0], 3);
	assert_int_equal(recv[3], 2); /* member 1's own row is left */
	assert_int_equal(smc_order_frontier(recv, 2), 5);
	/* Credit never lowers what a row says. */
	recv[0] = 7;
	smc_order_credit_senders(recv, 2, 1);
	assert_int_equal(recv[0], 7);

	smc_order_credit_senders(recv3, 3, 1);
	assert_int_equal(recv3[0], 3);
	assert_int_equal(smc_order_frontier(recv3, 3), 6);
}

/*
 * Two members; member 1's engine. Its own null for round 0 has not reached
 * member 0's row yet: by the counters alone position 1 is not stable, but
 * a null delivers nothing, so smc_order_frontier_here passes it, and
 * sender 0's next message does not wait for member 0 to say it holds the
 * null (nor after the null left the queue). A message of its own is not
 * passed that way: it waits for member 0's row. Nor is another member's
 * null: member 0's, held here, waits for member 0's row too.
 */
static void test_frontier_here(void **state)
{
	struct smc_order o;
	struct smc_order_event ev[8];
	struct smc_order_rec r;
	/* Member 1's view, its own row fresh, sender 0 credited. */
	uint64_t recv[4] = {1, 0, 1, 1};

	(void)state;
	assert_int_equal(smc_order_init(&o, 2, 8), 0);
	r = msg(0, 0);
	assert_int_equal(smc_order_push(&o, 0, &r), 0);
	r = null_rec(0, 0, 1);
	assert_int_equal(smc_order_push(&o, 1, &r), 0);
	assert_int_equal(smc_order_frontier(recv, 2), 1);
	assert_int_equal(smc_order_frontier_here(&o, recv, 1), 2);
	assert_int_equal(smc_order_collect(&o, 2, ev, 8), 2);
	assert_int_equal(ev[0].seq, 0);
	assert_true(ev[1].rec.flags & SMC_REC_NULL);

	/* Sender 0's round 1 arrives; member 0's row still says {1, 0}. */
	r = msg(1, 1);
	assert_int_equal(smc_order_push(&o, 0, &r), 0);
	recv[2] = 2;
	smc_order_credit_senders(recv, 2, 1);
	assert_int_equal(smc_order_frontier(recv, 2), 1);
	assert_int_equal(smc_order_frontier_here(&o, recv, 1), 3);
	assert_int_equal(smc_order_collect(&o, 3, ev, 8), 1);
	assert_int_equal(ev[0].seq, 2);

	/* A message of member 1's own at round 1: held here, not by member 0
	 * (its row now has the null): not passed before member 0 has it. */
	r = msg(1, 1);
	assert_int_equal(smc_order_push(&o, 1, &r), 0);
	recv[1] = 1;
	recv[3] = 2;
	assert_int_equal(smc_order_frontier_here(&o, recv, 1), 3);
	assert_int_equal(smc_order_collect(&o, 3, ev, 8), 0);
	recv[1] = 2;
	assert_int_equal(smc_order_frontier_here(&o, recv, 1), 4);
	assert_int_equal(smc_order_collect(&o, 4, ev, 8), 1);
	assert_int_equal(ev[0].seq, 3);
	smc_order_fini(&o);

	/* Three members, member 1's engine: member 2's null, held here but
	 * not yet by member 0, stays unpassed. */
	uint64_t recv3[9] = {1, 1, 0, 1, 1, 1, 1, 1, 1};

	assert_int_equal(smc_order_init(&o, 3, 8), 0);
	r = msg(0, 0);
	assert_int_equal(smc_order_push(&o, 0, &r), 0);
	r = null_rec(0, 0, 1);
	assert_int_equal(smc_order_push(&o, 1, &r), 0);
	assert_int_equal(smc_order_push(&o, 2, &r), 0);
	assert_int_equal(smc_order_frontier_here(&o, recv3, 1), 2);
	assert_int_equal(smc_order_collect(&o, 2, ev, 8), 2);
	recv3[2] = 1;
	assert_int_equal(smc_order_frontier_here(&o, recv3, 1), 3);
	smc_order_fini(&o);
}

/* Queues hold cap records; record numbers and rounds keep growing while the
 * storage index wraps, and a collection limited to a batch size resumes
 * exactly where it stopped. */
static void test_wrap_and_batches(void **state)
{
	struct smc_order o;
	struct smc_order_event ev[5];
	uint64_t recv[4];
	uint64_t next_seq = 0, rounds[2] = {0, 0}, recs[2] = {0, 0};

	(void)state;
	assert_int_equal(smc_order_init(&o, 2, 3), 0);
	for (int step = 0; step < 1000; step++) {
		/* Sender 0 sends messages; sender 1 alternates between a
		 * message and a null covering two rounds. */
		while (o.q[0].tail - o.q[0].head < 3) {
			struct smc_order_rec m = msg(recs[0]++, rounds[0]++);
			assert_int_equal(smc_order_push(&o, 0, &m), 0);
		}
		while (o.q[1].tail - o.q[1].head < 3) {
			struct smc_order_rec m;
			if (recs[1] % 2)
				m = null_rec(recs[1], rounds[1], 2);
			else
				m = msg(recs[1], rounds[1]);
			recs[1]++;
			rounds[1] += m.nrounds;
			assert_int_equal(smc_order_push(&o, 1, &m), 0);
		}
		recv[0] = recv[2] = rounds[0];
		recv[1] = recv[3] = rounds[1];
		uint32_t got =
		    smc_order_collect(&o, smc_order_frontier(recv, 2), ev, 5);
		assert_true(got > 0);
		for (uint32_t i = 0; i < got; i++) {
			assert_true(ev[i].seq >= next_seq);
			assert_int_equal(ev[i].seq % 2, ev[i].sender);
			assert_int_equal(ev[i].seq / 2, ev[i].rec.round +
							    ev[i].rec.nrounds -
							    1);
			next_seq = ev[i].seq + 1;
		}
	}
	assert_true(recs[0] > 3 * 100);
	smc_order_fini(&o);
}

/*
 * Three members, the same records (each sender's stream fixed in advance,
 * nulls included), but each member receives them in its own random
 * interleaving and sees the others' counters late by a random amount (as
 * SST pushes arrive). Every member must deliver the identical sequence.
 */
#define SIM_N	 3
#define SIM_RECS 3000

struct stream {
	struct smc_order_rec r[SIM_RECS];
	uint64_t rounds;
};

static void make_stream(struct stream *st, unsigned *seed)
{
	uint64_t round = 0;

	for (int i = 0; i < SIM_RECS; i++) {
		if (rand_r(seed) % 3 == 0)
			st->r[i] = null_rec(i, round,
					    (uint16_t)(1 + rand_r(seed) % 5));
		else
			st->r[i] = msg(i, round);
		st->r[i].len = (uint32_t)(round & 0xffff);
		round += st->r[i].nrounds;
	}
	st->rounds = round;
}

static uint64_t hash_step(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;
}

static void test_members_agree(void **state)
{
	static struct stream st[SIM_N];
	struct smc_order o[SIM_N];
	uint64_t pushed[SIM_N][SIM_N] = {{0}}; /* member j has recs of s */
	uint64_t seen[SIM_N][SIM_N * SIM_N];   /* j's view of the matrix */
	uint64_t hash[SIM_N], count[SIM_N];
	struct smc_order_event ev[7];
	unsigned seed = 777;
	bool busy = true;

	(void)state;
	memset(seen, 0, sizeof(seen));
	for (int s = 0; s < SIM_N; s++)
		make_stream(&st[s], &seed);
	for (int j = 0; j < SIM_N; j++) {
		assert_int_equal(smc_order_init(&o[j], SIM_N, SIM_RECS), 0);
		hash[j] = 0xcbf29ce484222325ull;
		count[j] = 0;
	}
	while (busy) {
		int j = rand_r(&seed) % SIM_N;
		int s = rand_r(&seed) % SIM_N;
		int k = rand_r(&seed) % SIM_N;

		busy = false;
		/* Member j receives a few records of sender s. */
		for (int i = rand_r(&seed) % 4;
		     i > 0 && pushed[j][s] < SIM_RECS; i--)
			assert_int_equal(
			    smc_order_push(&o[j], s, &st[s].r[pushed[j][s]++]),
			    0);
		/* j publishes its own row at once; k's row reaches j late. */
		for (int t = 0; t < SIM_N; t++) {
			seen[j][j * SIM_N + t] = smc_order_received(&o[j], t);
			seen[j][k * SIM_N + t] = smc_order_received(&o[k], t);
		}
		uint32_t got = smc_order_collect(
		    &o[j], smc_order_frontier_here(&o[j], seen[j], (uint32_t)j),
		    ev, 7);
		for (uint32_t i = 0; i < got; i++) {
			if (ev[i].rec.flags & SMC_REC_NULL)
				continue;
			hash[j] = hash_step(hash[j], ev[i].seq);
			hash[j] = hash_step(hash[j], ev[i].rec.len);
			count[j]++;
		}
		for (int a = 0; a < SIM_N; a++)
			for (int b = 0; b < SIM_N; b++)
				if (pushed[a][b] < SIM_RECS)
					busy = true;
		if (!busy) {
			/* Final exchange of every row; drain. */
			for (int a = 0; a < SIM_N; a++) {
				for (int b = 0; b < SIM_N; b++)
					for (int t = 0; t < SIM_N; t++)
						seen[a][b * SIM_N + t] =
						    smc_order_received(&o[b],
								       t);
				while ((got = smc_order_collect(
					    &o[a],
					    smc_order_frontier_here(
						&o[a], seen[a], (uint32_t)a),
					    ev, 7)) > 0)
					for (uint32_t i = 0; i < got; i++) {
						if (ev[i].rec.flags &
						    SMC_REC_NULL)
							continue;
						hash[a] = hash_step(hash[a],
								    ev[i].seq);
						hash[a] = hash_step(
						    hash[a], ev[i].rec.len);
						count[a]++;
					}
			}
		}
	}
	for (int j = 1; j < SIM_N; j++) {
		assert_int_equal(hash[j], hash[0]);
		assert_int_equal(count[j], count[0]);
		assert_int_equal(o[j].next_seq, o[0].next_seq);
	}
	/* All positions up to the shortest stream's end were passed. */
	uint64_t min_rounds = st[0].rounds;
	for (int s = 1; s < SIM_N; s++)
		if (st[s].rounds < min_rounds)
			min_rounds = st[s].rounds;
	assert_true(o[0].next_seq >= min_rounds * SIM_N);
	assert_true(count[0] > SIM_RECS);
	for (int j = 0; j < SIM_N; j++)
		smc_order_fini(&o[j]);
}

static int push_rec(struct smc_order *o, uint32_t s, struct smc_order_rec r)
{
	return smc_order_push(o, s, &r);
}

/* The ragged end of a view: positions of each sender below its trim, in
 * the total order, skipping the rest; a null record the trim cuts is
 * reported (its slot is done with) and what lies past the trim stays. */
static void test_collect_trim(void **state)
{
	(void)state;
	struct smc_order o;
	struct smc_order_event ev[32];
	/* Sender 0: messages at rounds 0..3; sender 1: message 0, a null
	 * record over rounds 1..3; sender 2: messages 0..1. */
	const uint64_t trim[3] = { 3, 2, 1 };
	uint32_t got;

	assert_int_equal(smc_order_init(&o, 3, 8), 0);
	for (uint64_t r = 0; r < 4; r++)
		assert_int_equal(push_rec(&o, 0, msg(r, r)), 0);
	assert_int_equal(push_rec(&o, 1, msg(0, 0)), 0);
	assert_int_equal(push_rec(&o, 1, null_rec(1, 1, 3)), 0);
	assert_int_equal(push_rec(&o, 2, msg(0, 0)), 0);
	assert_int_equal(push_rec(&o, 2, msg(1, 1)), 0);
	/* Positions: 0 (s0 r0), 1 (s1 r0), 2 (s2 r0), 3 (s0 r1), 4 (s1 r1:
	 * null cut at its first round), 6 (s0 r2); sender 2's round 1 and
	 * sender 0's round 3 lie past the trim. */
	got = smc_order_collect_trim(&o, trim, ev, 32);
	assert_int_equal(got, 6);
	const uint64_t seqs[6] = { 0, 1, 2, 3, 4, 6 };
	const uint32_t senders[6] = { 0, 1, 2, 0, 1, 0 };
	for (uint32_t i = 0; i < got; i++) {
		assert_int_equal(ev[i].seq, seqs[i]);
		assert_int_equal(ev[i].sender, senders[i]);
	}
	assert_true(ev[4].rec.flags & SMC_REC_NULL);
	/* Nothing more below the trim; what is past it is still queued. */
	assert_int_equal(smc_order_collect_trim(&o, trim, ev, 32), 0);
	assert_int_equal(o.q[0].tail - o.q[0].head, 1);
	assert_int_equal(o.q[2].tail - o.q[2].head, 1);
	assert_int_equal(o.delivered, 5);
	smc_order_fini(&o);

	/* A trim of nothing delivers nothing. */
	const uint64_t zero[3] = { 0, 0, 0 };
	assert_int_equal(smc_order_init(&o, 3, 8), 0);
	assert_int_equal(push_rec(&o, 0, msg(0, 0)), 0);
	assert_int_equal(smc_order_collect_trim(&o, zero, ev, 32), 0);
	smc_order_fini(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frontier_recorded),
	    cmocka_unit_test(test_round_robin),
	    cmocka_unit_test(test_push_errors),
	    cmocka_unit_test(test_idle_senders_nulls),
	    cmocka_unit_test(test_credit_senders),
	    cmocka_unit_test(test_frontier_here),
	    cmocka_unit_test(test_wrap_and_batches),
	    cmocka_unit_test(test_members_agree),
	    cmocka_unit_test(test_collect_trim),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
