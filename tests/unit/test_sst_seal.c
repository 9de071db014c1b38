/*
 * test_sst_seal.c - the rule that keeps a torn SST row from being read:
 * sealing and taking a segment (sst/seal.c), under simulated placement
 * (tests/unit/sst_placement.h) with validation on and off, and the sending
 * side: a row written while its pushes are in flight.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sst_placement.h"

#define PLACEMENT_PUSHES 1000000

static struct sst_layout *layout(void)
{
	struct sst_layout *l = NULL;

	assert_int_equal(sst_layout_create(plc_columns, sizeof(plc_columns) /
					   sizeof(plc_columns[0]), &l, NULL), 0);
	return l;
}

/* Seal, take, take again; any changed byte, an old segment or another key
 * is refused. */
static void test_take_rules(void **state)
{
	(void)state;
	struct sst_layout *l = layout();
	size_t row = sst_layout_row_size(l);
	uint8_t *src = calloc(1, row), *land = calloc(1, row);
	uint8_t *valid = calloc(1, row), *old = calloc(1, row);
	uint64_t *scratch = calloc(1, row);
	const struct sst_seg *g = &l->segs[2];
	uint64_t key = sst_seal_key(7, sst_layout_fingerprint(l), 1, 2);

	for (uint32_t i = g->lo; i < g->trailer; i++)
		src[i] = (uint8_t)(i * 31);
	/* Nothing landed yet: a zeroed segment is never taken. */
	assert_int_equal(sst_seal_take(g, key, land, valid, scratch),
			 SST_TAKE_SAME);
	sst_seal(g, key, 1, src, old);
	src[g->lo] ^= 0x5a;
	sst_seal(g, key, 2, src, land);
	assert_int_equal(sst_seal_take(g, key, land, valid, scratch),
			 SST_TAKE_NEW);
	assert_memory_equal(valid + g->lo, src + g->lo, g->trailer - g->lo);
	assert_int_equal(sst_seal_taken_seq(g, valid), 2);
	assert_int_equal(sst_seal_take(g, key, land, valid, scratch),
			 SST_TAKE_SAME);
	/* Every single byte that differs from what was sealed, the trailer
	 * included, fails the check of a reader that has not taken it. */
	for (uint32_t i = g->lo; i < sst_seg_end(g); i++) {
		uint8_t keep = land[i];

		for (unsigned bit = 0; bit < 8; bit++) {
			memset(old, 0, row);
			land[i] = keep ^ (uint8_t)(1u << bit);
			/* (a sequence flipped to 0 reads as nothing landed) */
			assert_int_equal(sst_seal_take(g, key, land, old,
						       scratch),
				*(uint64_t *)(void *)(land + g->trailer) ?
				SST_TAKE_TORN : SST_TAKE_SAME);
		}
		land[i] = keep;
	}
	/* Bytes changing under a sequence already taken are not looked at:
	 * the copy taken stays (a new write is landing; its sequence will
	 * move). */
	land[g->lo + 3] ^= 1;
	assert_int_equal(sst_seal_take(g, key, land, valid, scratch),
			 SST_TAKE_SAME);
	assert_memory_equal(valid + g->lo, src + g->lo, g->trailer - g->lo);
	land[g->lo + 3] ^= 1;
	src[g->lo] ^= 0x5a;
	sst_seal(g, key, 1, src, old);
	src[g->lo] ^= 0x5a;
	/* A whole but older segment is not taken. */
	assert_int_equal(sst_seal_take(g, key, old, valid, scratch),
			 SST_TAKE_STALE);
	/* Sealed for another rank, segment or seed: never valid here. */
	const uint64_t other[] = {
		sst_seal_key(7, sst_layout_fingerprint(l), 0, 2),
		sst_seal_key(7, sst_layout_fingerprint(l), 1, 3),
		sst_seal_key(8, sst_layout_fingerprint(l), 1, 2),
	};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		sst_seal(g, other[i], 3, src, land);
		assert_int_equal(sst_seal_take(g, key, land, valid, scratch),
				 SST_TAKE_TORN);
	}
	assert_int_equal(sst_seal_taken_seq(g, valid), 2);
	free(src);
	free(land);
	free(valid);
	free(old);
	free(scratch);
	sst_layout_destroy(l);
}

static void print_result(const char *what, const struct plc_result *r)
{
	printf("%s: pushes=%llu pieces=%llu polls=%llu taken=%llu torn=%llu "
	       "violations=%llu went_back=%llu unfinished=%llu%s%s\n", what,
	       (unsigned long long)r->pushes, (unsigned long long)r->pieces,
	       (unsigned long long)r->polls, (unsigned long long)r->taken,
	       (unsigned long long)r->torn, (unsigned long long)r->violations,
	       (unsigned long long)r->went_back,
	       (unsigned long long)r->unfinished, r->first[0] ? ": first " : "",
	       r->first);
}

/* A million pushes landing in random pieces, interleaved, the reader
 * looking between pieces: it accepts only what was pushed, its counters
 * never go back, and it ends at the last push. */
static void test_placement_validated(void **state)
{
	(void)state;
	struct plc_result r;

	assert_int_equal(plc_run(PLACEMENT_PUSHES, 0x5157a11, true, &r), 0);
	print_result("validated", &r);
	assert_int_equal(r.pushes, PLACEMENT_PUSHES + 1);
	/* The reader did catch writes half placed... */
	assert_true(r.torn > PLACEMENT_PUSHES / 10);
	/* ...and never took one. */
	assert_int_equal(r.violations, 0);
	assert_int_equal(r.went_back, 0);
	assert_int_equal(r.unfinished, 0);
	assert_true(r.taken > PLACEMENT_PUSHES / 4);
}

/* The same run trusting the bytes once the sequence word moved: the
 * simulation must catch that, or it proves nothing. */
static void test_placement_unvalidated(void **state)
{
	(void)state;
	struct plc_result r;

	assert_int_equal(plc_run(PLACEMENT_PUSHES, 0x5157a11, false, &r), 0);
	print_result("unvalidated", &r);
	assert_true(r.violations > 1000);
	assert_true(r.went_back > 0);
}

/* ---- the sending side ----------------------------------------------------- */

/* Word i of the row, value v: v + i in both halves, so a word with bytes
 * of two stores shows (its halves differ). */
#define SEND_WORDS 8
#define SEND_SLOTS 4
#define SEND_PUSHES 10000
#define SEND_BYTES (SEND_WORDS * 8 + SST_TRAILER_SIZE)

static uint64_t send_word(uint64_t v, size_t i)
{
	return ((v + i) & 0xffffffffu) * 0x100000001ull;
}

struct send_sim {
	struct sst_seg seg;
	uint64_t key;
	bool snapshot;          /* false: the NIC reads the live row */
	/* Rows are cache-line aligned, as in a table. */
	_Alignas(64) uint8_t row[SEND_BYTES];
	_Alignas(64) uint8_t slot[SEND_SLOTS][SEND_BYTES];
	_Alignas(64) uint8_t land[SEND_BYTES];
	_Alignas(64) uint8_t valid[SEND_BYTES];
	atomic_uint_fast64_t written;  /* last value the writer stored */
	atomic_uint_fast64_t posted, placed;
	atomic_bool stop, nic_done;
	uint64_t taken, violations, went_back;
	uint64_t last[SEND_WORDS];
};

/* The application: stores every word, value after value, while pushes of
 * the row are in flight. A word holds its value in 32 bits, so the writer
 * stops short of 2^32 values and the row then stays as it is: a run slowed
 * down by a busy machine (sched_yield hands the writer the CPU) reached
 * it, and every word seemed to go back once per wrap (went_back 8 and 16,
 * violations 0). */
static void *send_writer(void *arg)
{
	struct send_sim *s = arg;
	uint64_t *w = (uint64_t *)(void *)s->row;

	for (uint64_t v = 1; !atomic_load(&s->stop) &&
	     v + SEND_WORDS <= UINT32_MAX; v++) {
		/* Said before the stores, so no word is ever ahead of it. */
		atomic_store(&s->written, v);
		for (size_t i = 0; i < SEND_WORDS; i++)
			__atomic_store_n(&w[i], send_word(v, i), __ATOMIC_RELAXED);
	}
	return NULL;
}

/* The NIC: sends each posted slot (or, without snapshots, the row as it
 * stands while it reads it) byte by byte in random order, giving way
 * between bytes as a slow device would. */
static void *send_nic(void *arg)
{
	struct send_sim *s = arg;
	uint64_t rng = 99;
	uint32_t order[SEND_BYTES];

	for (uint64_t k = 0;; k++) {
		const uint8_t *src;

		while (atomic_load(&s->posted) == k)
			if (atomic_load(&s->stop) &&
			    atomic_load(&s->posted) == k) {
				atomic_store(&s->nic_done, true);
				return NULL;
			} else {
				sched_yield();
			}
		src = s->snapshot ? s->slot[k % SEND_SLOTS] : s->row;
		for (uint32_t i = 0; i < SEND_BYTES; i++)
			order[i] = i;
		for (uint32_t i = SEND_BYTES; i > 1; i--) {
			uint32_t j = (uint32_t)plc_below(&rng, i), t = order[i - 1];

			order[i - 1] = order[j];
			order[j] = t;
		}
		for (uint32_t i = 0; i < SEND_BYTES; i++) {
			uint8_t b = __atomic_load_n(&src[order[i]],
						    __ATOMIC_RELAXED);

			__atomic_store_n(&s->land[order[i]], b, __ATOMIC_RELAXED);
			if (i % 8 == 7)
				sched_yield();
		}
		atomic_store(&s->placed, k + 1);
	}
}

/* The peer: takes what validates (or, without validation, what it finds
 * once the sequence moved) and judges every word. */
static void send_look(struct send_sim *s, uint64_t *scratch)
{
	const uint64_t *w = (const uint64_t *)(const void *)s->valid;

	if (s->snapshot) {
		if (sst_seal_take(&s->seg, s->key, s->land, s->valid, scratch) !=
		    SST_TAKE_NEW)
			return;
	} else {
		uint64_t seq = __atomic_load_n((uint64_t *)(void *)(s->land +
					       s->seg.trailer), __ATOMIC_RELAXED);

		if (seq == sst_seal_taken_seq(&s->seg, s->valid))
			return;
		for (size_t i = 0; i < sizeof(s->valid); i++)
			s->valid[i] = __atomic_load_n(&s->land[i], __ATOMIC_RELAXED);
	}
	s->taken++;
	for (size_t i = 0; i < SEND_WORDS; i++) {
		uint64_t v = (w[i] & 0xffffffffu) - i;

		if (w[i] >> 32 != (w[i] & 0xffffffffu) || v >
		    atomic_load(&s->written) || send_word(v, i) != w[i]) {
			s->violations++;
			continue;
		}
		if (v < s->last[i])
			s->went_back++;
		s->last[i] = v;
	}
}

static void send_run(struct send_sim *s, bool snapshot)
{
	uint64_t scratch[SEND_WORDS + 2];
	pthread_t writer, nic;

	memset(s, 0, sizeof(*s));
	s->seg = (struct sst_seg){ .lo = 0, .trailer = SEND_WORDS * 8 };
	s->key = sst_seal_key(3, 4, 1, 1);
	s->snapshot = snapshot;
	/* The row starts as value 0, stored whole. */
	for (size_t i = 0; i < SEND_WORDS; i++)
		((uint64_t *)(void *)s->row)[i] = send_word(0, i);
	assert_int_equal(pthread_create(&writer, NULL, send_writer, s), 0);
	assert_int_equal(pthread_create(&nic, NULL, send_nic, s), 0);
	/* This thread is the progress thread: seal into the next free slot
	 * (one whose write the NIC has placed), post, and look at what
	 * landed. */
	for (uint64_t k = 0; k < SEND_PUSHES; k++) {
		while (k - atomic_load(&s->placed) >= SEND_SLOTS) {
			send_look(s, scratch);
			sched_yield();
		}
		if (snapshot)
			sst_seal(&s->seg, s->key, k + 1, s->row,
				 s->slot[k % SEND_SLOTS]);
		else
			/* The trailer alone, the bytes left to the NIC. */
			*(uint64_t *)(void *)(s->row + s->seg.trailer) = k + 1;
		atomic_store(&s->posted, k + 1);
		send_look(s, scratch);
	}
	atomic_store(&s->stop, true);
	pthread_join(writer, NULL);
	while (!atomic_load(&s->nic_done))
		send_look(s, scratch);
	pthread_join(nic, NULL);
	send_look(s, scratch);
}

/* With snapshots and validation, every word the peer takes is one the
 * application stored whole, no word goes back, and the last push lands;
 * the NIC reading the live row without validation delivers words that
 * were never stored. */
static void test_sending_side(void **state)
{
	(void)state;
	struct send_sim *s = aligned_alloc(64, (sizeof(*s) + 63) / 64 * 64);

	assert_non_null(s);

	send_run(s, true);
	printf("snapshots: pushes=%d taken=%llu violations=%llu went_back=%llu "
	       "values_written=%llu\n", SEND_PUSHES,
	       (unsigned long long)s->taken, (unsigned long long)s->violations,
	       (unsigned long long)s->went_back,
	       (unsigned long long)atomic_load(&s->written));
	assert_int_equal(s->violations, 0);
	assert_int_equal(s->went_back, 0);
	assert_int_equal(sst_seal_taken_seq(&s->seg, s->valid), SEND_PUSHES);
	assert_true(s->taken > 0);

	send_run(s, false);
	printf("live row: pushes=%d taken=%llu violations=%llu went_back=%llu\n",
	       SEND_PUSHES, (unsigned long long)s->taken,
	       (unsigned long long)s->violations,
	       (unsigned long long)s->went_back);
	assert_true(s->violations > 0);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_rules),
		cmocka_unit_test(test_placement_validated),
		cmocka_unit_test(test_placement_unvalidated),
		cmocka_unit_test(test_sending_side),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
