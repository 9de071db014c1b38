/*
 * test_rdmc_plan.c - the NIC-free arithmetic of an RDMC transfer.
 *
 * Blocks: a message whose size is not a multiple of the block size ends in
 * a short block, and the spans tile the message exactly. Immediates: slot
 * and block survive the round trip, and only RDMC's flag bit claims one.
 * Plans: every member's plan, built from the schedule, is run the way the
 * engine runs it (each member posts its sends in plan order, a send only
 * once the member holds the block, several writes in flight that land in
 * any order) under many random interleavings; every run must finish with
 * every member holding every block exactly once, no member stuck, and the
 * sources and targets of the plans must agree with the writes made.
 * Control messages: READY and DONE encode and decode, and malformed ones
 * are refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <squall/wire.h>

#include "rdmc/plan.h"

#define MiB (1024ull * 1024)

static void test_blocks(void **state)
{
	static const struct {
		uint64_t size, bs, k, last;
	} c[] = {
		{ 1, MiB, 1, 1 },
		{ MiB, MiB, 1, MiB },
		{ MiB + 1, MiB, 2, 1 },
		{ 7 * MiB / 2, MiB, 4, MiB / 2 },
		{ 16 * MiB, MiB, 16, MiB },
		{ 64 * MiB - 4096, MiB, 64, MiB - 4096 },
		{ 64 * MiB, 65536, 1024, 65536 },
		{ 1000, 7, 143, 6 },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint64_t k = rdmc_block_count(c[i].size, c[i].bs), next = 0;
		uint64_t off, len;

		assert_int_equal(k, c[i].k);
		for (uint64_t b = 0; b < k; b++) {
			rdmc_block_span(c[i].size, c[i].bs, b, &off, &len);
			assert_int_equal(off, next);
			assert_true(len > 0 && len <= c[i].bs);
			if (b + 1 < k)
				assert_int_equal(len, c[i].bs);
			else
				assert_int_equal(len, c[i].last);
			next = off + len;
		}
		assert_int_equal(next, c[i].size);
	}
}

static void test_imm(void **state)
{
	static const uint32_t slots[] = { 0, 1, 77, RDMC_IMM_SLOTS - 1 };
	static const uint32_t blocks[] = { 0, 1, 4095, RDMC_MAX_BLOCKS - 1 };
	uint32_t s, b;

	(void)state;
	for (unsigned i = 0; i < 4; i++) {
		for (unsigned j = 0; j < 4; j++) {
			uint32_t imm = rdmc_imm_encode(slots[i], blocks[j]);

			assert_true(imm & RDMC_IMM_FLAG);
			assert_true(rdmc_imm_decode(imm, &s, &b));
			assert_int_equal(s, slots[i]);
			assert_int_equal(b, blocks[j]);
		}
	}
	/* Immediates of other parts (flag clear) are not RDMC's. */
	assert_false(rdmc_imm_decode(0, &s, &b));
	assert_false(rdmc_imm_decode(0x7fffffffu, &s, &b));
}

static void test_plan_errors(void **state)
{
	struct rdmc_plan p;

	(void)state;
	assert_int_equal(rdmc_plan_build(RDMC_BINOMIAL, 4, 8, 4, &p), -EINVAL);
	assert_int_equal(rdmc_plan_build(RDMC_BINOMIAL, 4, RDMC_MAX_BLOCKS + 1, 0, &p),
			 -EINVAL);
	assert_int_equal(rdmc_plan_build(RDMC_CHAIN, 0, 8, 0, &p), -EINVAL);
	assert_int_equal(rdmc_plan_build(RDMC_CHAIN, 3, 0, 0, &p), -EINVAL);
	assert_int_equal(rdmc_plan_build((enum rdmc_algorithm)9, 3, 1, 0, &p), -EINVAL);
	/* One member: nothing to do. */
	assert_int_equal(rdmc_plan_build(RDMC_BINOMIAL, 1, 5, 0, &p), 0);
	assert_int_equal(p.nsends + p.nrecvs + p.nsources + p.ntargets, 0);
	rdmc_plan_free(&p);
}

/* ---- asynchronous execution of all plans of one transfer -------------- */

#define NMAX 17
#define KMAX 70
#define WINDOW 4

struct flight {
	unsigned from, to, block;
};

static uint64_t rng;

static unsigned rnd(unsigned below)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)((rng >> 33) % below);
}

static bool in(const uint32_t *a, unsigned n, uint32_t v)
{
	for (unsigned i = 0; i < n; i++)
		if (a[i] == v)
			return true;
	return false;
}

/* One run: members post (in plan order, when they hold the block, up to
 * WINDOW in flight each) and writes land, all in a random order. */
static void run_async(enum rdmc_algorithm alg, unsigned n, unsigned k)
{
	static struct rdmc_plan p[NMAX];
	static bool have[NMAX][KMAX], wrote[NMAX][NMAX];
	static unsigned cursor[NMAX], inflight[NMAX], got[NMAX];
	static struct flight fl[NMAX * WINDOW];
	unsigned nfl = 0, done_members = 0;

	memset(have, 0, sizeof(have));
	memset(wrote, 0, sizeof(wrote));
	memset(cursor, 0, sizeof(cursor));
	memset(inflight, 0, sizeof(inflight));
	memset(got, 0, sizeof(got));
	for (unsigned r = 0; r < n; r++)
		assert_int_equal(rdmc_plan_build(alg, n, k, r, &p[r]), 0);
	for (unsigned b = 0; b < k; b++)
		have[0][b] = true;
	for (;;) {
		unsigned can[NMAX], ncan = 0;

		for (unsigned r = 0; r < n; r++)
			if (cursor[r] < p[r].nsends && inflight[r] < WINDOW &&
			    have[r][p[r].sends[cursor[r]].block])
				can[ncan++] = r;
		if (!ncan && !nfl)
			break;
		if (nfl && (!ncan || rnd(2))) {
			/* a write lands */
			unsigned i = rnd(nfl);
			struct flight f = fl[i];

			fl[i] = fl[--nfl];
			assert_false(have[f.to][f.block]); /* exactly once */
			have[f.to][f.block] = true;
			got[f.to]++;
			inflight[f.from]--;
			continue;
		}
		unsigned r = can[rnd(ncan)];
		struct rdmc_send_op op = p[r].sends[cursor[r]++];

		assert_true(op.peer < n && op.peer != r && op.peer != 0);
		assert_true(op.block < k);
		wrote[r][op.peer] = true;
		fl[nfl++] = (struct flight){ r, op.peer, op.block };
		inflight[r]++;
	}
	for (unsigned r = 0; r < n; r++) {
		/* no member stuck with sends left, every block everywhere */
		assert_int_equal(cursor[r], p[r].nsends);
		assert_int_equal(got[r], r ? k : 0);
		assert_int_equal(p[r].nrecvs, r ? k : 0);
		done_members += got[r] == (r ? k : 0);
		for (unsigned q = 0; q < n; q++) {
			assert_int_equal(wrote[r][q], in(p[r].targets, p[r].ntargets, q));
			assert_int_equal(wrote[q][r], in(p[r].sources, p[r].nsources, q));
		}
		for (unsigned i = 1; i < p[r].nsources; i++)
			assert_true(p[r].sources[i - 1] < p[r].sources[i]);
		rdmc_plan_free(&p[r]);
	}
	assert_int_equal(done_members, n);
}

static void test_plans_async(void **state)
{
	static const enum rdmc_algorithm algs[] = {
		RDMC_BINOMIAL, RDMC_CHAIN, RDMC_SEQUENTIAL,
	};
	static const unsigned ks[] = { 1, 2, 3, 4, 7, 16, 64, 70 };

	(void)state;
	rng = 42;
	for (unsigned a = 0; a < 3; a++)
		for (unsigned n = 2; n <= NMAX; n++)
			for (unsigned i = 0; i < sizeof(ks) / sizeof(ks[0]); i++)
				for (unsigned rep = 0; rep < 3; rep++)
					run_async(algs[a], n, ks[i]);
}

/* The 4-member binomial plan of the VM tests with 4 blocks, written out:
 * rank 0 feeds ranks 1 and 2 in turn (the last block to both), ranks 1 and
 * 2 pass theirs to 3, which passes each on to the one that lacks it. */
static void test_plan_binomial4(void **state)
{
	struct rdmc_plan p;

	(void)state;
	assert_int_equal(rdmc_plan_build(RDMC_BINOMIAL, 4, 4, 0, &p), 0);
	assert_int_equal(p.nrecvs, 0);
	assert_int_equal(p.nsources, 0);
	assert_int_equal(p.nsends, 5);   /* k + log2(n) - 1 = 5 steps */
	for (unsigned i = 0; i < p.nsends; i++) {
		assert_int_equal(p.sends[i].peer, 1 + i % 2);
		assert_int_equal(p.sends[i].block, i < 4 ? i : 3);
	}
	rdmc_plan_free(&p);
	assert_int_equal(rdmc_plan_build(RDMC_BINOMIAL, 4, 4, 1, &p), 0);
	assert_int_equal(p.nsends, 2);
	assert_int_equal(p.ntargets, 1);
	assert_int_equal(p.targets[0], 3);
	assert_int_equal(p.nsources, 2);
	assert_int_equal(p.sources[0], 0);
	assert_int_equal(p.sources[1], 3);
	rdmc_plan_free(&p);
	assert_int_equal(rdmc_plan_build(RDMC_BINOMIAL, 4, 4, 3, &p), 0);
	assert_int_equal(p.nrecvs, 4);
	assert_int_equal(p.nsends, 3);
	assert_int_equal(p.nsources, 2);
	assert_int_equal(p.sources[0], 1);
	assert_int_equal(p.sources[1], 2);
	rdmc_plan_free(&p);
}

/* ---- control messages -------------------------------------------------- */

static void test_ctl(void **state)
{
	uint8_t buf[RDMC_CTL_MAX];
	struct rdmc_ctl c = { .type = WIRE_MSG_RDMC_READY, .group = 7,
			      .msg_id = 0x123456789abcdefull, .slot = 127,
			      .addr = 0x7f0012345000ull, .rkey = 0xabcd,
			      .len = 7 * MiB / 2 };
	struct rdmc_ctl d;
	int len;

	(void)state;
	len = rdmc_ctl_encode(buf, sizeof(buf), &c);
	assert_true(len > 0 && len <= (int)RDMC_CTL_MAX);
	assert_int_equal(rdmc_ctl_decode(buf, (size_t)len, &d), 0);
	assert_memory_equal(&c, &d, sizeof(c));

	/* A failed READY carries no target. */
	c = (struct rdmc_ctl){ .type = WIRE_MSG_RDMC_READY, .group = 1,
			       .msg_id = 5, .status = -ENOMEM };
	len = rdmc_ctl_encode(buf, sizeof(buf), &c);
	assert_true(len > 0);
	assert_int_equal(rdmc_ctl_decode(buf, (size_t)len, &d), 0);
	assert_memory_equal(&c, &d, sizeof(c));

	c = (struct rdmc_ctl){ .type = WIRE_MSG_RDMC_DONE, .group = 3,
			       .flags = RDMC_DONE_ABORT, .msg_id = 9,
			       .status = -ENOMEM };
	len = rdmc_ctl_encode(buf, sizeof(buf), &c);
	assert_int_equal(rdmc_ctl_decode(buf, (size_t)len, &d), 0);
	assert_memory_equal(&c, &d, sizeof(c));

	/* Cut short, too small a buffer, another type, a bad slot. */
	assert_true(rdmc_ctl_decode(buf, (size_t)len - 1, &d) < 0);
	assert_int_equal(rdmc_ctl_encode(buf, 30, &c), -ENOSPC);
	c.type = WIRE_MSG_HELLO;
	assert_int_equal(rdmc_ctl_encode(buf, sizeof(buf), &c), -EINVAL);
	len = wire_encode(buf, sizeof(buf), WIRE_MSG_HELLO, 0, NULL, 0, 0, NULL);
	assert_int_equal(rdmc_ctl_decode(buf, (size_t)len, &d), -ENOMSG);
	c = (struct rdmc_ctl){ .type = WIRE_MSG_RDMC_READY, .slot = 128 };
	len = rdmc_ctl_encode(buf, sizeof(buf), &c);
	assert_int_equal(rdmc_ctl_decode(buf, (size_t)len, &d), -EBADMSG);
	/* A READY without its target is malformed. */
	len = wire_encode(buf, sizeof(buf), WIRE_MSG_RDMC_READY, 0, NULL, 0, 20, NULL);
	memset(buf + len, 0, 20);
	assert_int_equal(rdmc_ctl_decode(buf, (size_t)len + 20, &d), -EBADMSG);
	/* A DONE with too short a payload. */
	len = wire_encode(buf, sizeof(buf), WIRE_MSG_RDMC_DONE, 0, NULL, 0, 4, NULL);
	memset(buf + len, 0, 4);
	assert_int_equal(rdmc_ctl_decode(buf, (size_t)len + 4, &d), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_imm),
		cmocka_unit_test(test_plan_errors),
		cmocka_unit_test(test_plans_async),
		cmocka_unit_test(test_plan_binomial4),
		cmocka_unit_test(test_ctl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
