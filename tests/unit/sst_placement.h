/*
 * sst_placement.h - SST pushes landing the way RDMA allows: each push's
 * bytes in random pieces and in random order, interleaved with the pieces
 * of the pushes in flight after it, and a reader polling between any two
 * pieces. Shared by the unit test of the validation rule
 * (tests/unit/test_sst_seal.c) and the SST benchmark (bench/sst.c).
 *
 * The writer's values make any mix visible: in push v, word 0 of every
 * segment it writes is v (a counter) and every other word is derived from
 * (v, segment, word). A reader that accepts a segment checks that its
 * words belong to one push, that this push wrote that segment, and that
 * the counter did not go back. With validation (sst_seal_take) no such
 * violation may ever appear; with it switched off (the landing bytes
 * copied once the sequence word moved) they must, or the simulation could
 * not tell.
 */
#ifndef SQUALL_TESTS_SST_PLACEMENT_H
#define SQUALL_TESTS_SST_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sst/seal.h"

/* splitmix64: one seeded stream drives the whole run. */
static inline uint64_t plc_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t plc_below(uint64_t *s, uint64_t n)
{
	return plc_rand(s) % n;
}

/* Word i of segment sg in push v. */
static inline uint64_t plc_word(uint64_t v, uint32_t sg, size_t i)
{
	uint64_t x = v ^ (uint64_t)sg << 48 ^ (uint64_t)i << 40;

	return i == 0 ? v : plc_rand(&x);
}

/* A declaration with segments of several shapes: one word, a run of
 * columns of one segment, an array larger than a cache line. */
static const struct sst_column plc_columns[] = {
	{ "counter", SST_COL_U64, 0, false },
	{ "received", SST_COL_U64_ARRAY, 5, false },
	{ "released", SST_COL_U64_ARRAY, 5, true },
	{ "trim", SST_COL_U64_ARRAY, 17, false },
	{ "mask", SST_COL_U64, 0, true },
	{ "tag", SST_COL_BYTES, 20, false },
};

#define PLC_INFLIGHT 3   /* writes whose pieces may interleave */
#define PLC_PIECE_MAX 24 /* bytes of one piece, at most */

struct plc_write {
	uint8_t *buf;                /* the sealed slot */
	uint32_t npieces, next;
	uint32_t off[1024], len[1024];
};

struct plc_result {
	uint64_t pushes;      /* writes placed */
	uint64_t pieces;      /* pieces placed */
	uint64_t polls;       /* reader looks at the table */
	uint64_t taken;       /* segments accepted */
	uint64_t torn;        /* looks that saw a segment fail its check */
	uint64_t violations;  /* accepted segments that no push wrote */
	uint64_t went_back;   /* accepted counters below an earlier one */
	uint64_t unfinished;  /* segments not at their last push at the end */
	char first[200];      /* the first violation, described */
};

struct plc_sim {
	const struct sst_layout *l;
	bool validate;
	uint64_t rng;
	uint64_t key[16];
	uint64_t seq[16];     /* per segment: last sequence sealed */
	uint64_t last_v[16];  /* per segment: last counter the reader took */
	uint64_t final_v[16]; /* per segment: last counter pushed */
	uint8_t *pushed[16];  /* per segment: bit v = push v wrote it */
	uint8_t *row, *land, *valid;
	uint64_t *scratch;
	struct plc_write w[PLC_INFLIGHT];
	uint32_t head, count; /* FIFO of writes in flight */
	struct plc_result *res;
};

static inline void plc_note(struct plc_sim *s, const char *what, uint32_t sg,
			    uint64_t v)
{
	if (!s->res->first[0])
		snprintf(s->res->first, sizeof(s->res->first),
			 "segment %u: %s (counter %llu)", sg, what,
			 (unsigned long long)v);
}

/* The reader judges segment sg as it now stands in `valid`. */
static inline void plc_judge(struct plc_sim *s, uint32_t sg)
{
	const struct sst_seg *g = &s->l->segs[sg];
	const uint64_t *w = (const uint64_t *)(const void *)(s->valid + g->lo);
	size_t n = (g->trailer - g->lo) / 8;
	uint64_t v = w[0];

	s->res->taken++;
	for (size_t i = 1; i < n; i++)
		if (w[i] != plc_word(v, sg, i)) {
			s->res->violations++;
			plc_note(s, "words of different pushes", sg, v);
			return;
		}
	if (v > s->final_v[sg] + 1 || !(s->pushed[sg][v / 8] >> (v % 8) & 1)) {
		s->res->violations++;
		plc_note(s, "a counter no push wrote", sg, v);
		return;
	}
	if (v < s->last_v[sg]) {
		s->res->went_back++;
		plc_note(s, "the counter went back", sg, v);
	}
	s->last_v[sg] = v;
}

static inline void plc_poll(struct plc_sim *s)
{
	s->res->polls++;
	for (uint32_t sg = 1; sg < s->l->nsegs; sg++) {
		const struct sst_seg *g = &s->l->segs[sg];

		if (s->validate) {
			enum sst_take r = sst_seal_take(g, s->key[sg], s->land,
							s->valid, s->scratch);

			if (r == SST_TAKE_NEW)
				plc_judge(s, sg);
			else if (r != SST_TAKE_SAME)
				s->res->torn++;
			continue;
		}
		/* Validation off: trust the bytes once the sequence moved. */
		if (memcmp(s->land + g->trailer, s->valid + g->trailer, 8)) {
			memcpy(s->valid + g->lo, s->land + g->lo,
			       sst_seg_end(g) - g->lo);
			plc_judge(s, sg);
		}
	}
}

/* Place one piece of one of the writes in flight (the oldest, or one of
 * the newer ones), then maybe let the reader look. */
static inline void plc_step(struct plc_sim *s)
{
	uint32_t pick = (uint32_t)plc_below(&s->rng, s->count);
	uint32_t at = (s->head + pick) % PLC_INFLIGHT;
	struct plc_write *w = &s->w[at];
	uint32_t i = w->next++;

	memcpy(s->land + w->off[i], w->buf + w->off[i], w->len[i]);
	s->res->pieces++;
	if (w->next == w->npieces) {
		/* Done: close the gap in the FIFO. */
		for (uint32_t k = pick; k + 1 < s->count; k++) {
			struct plc_write tmp = s->w[(s->head + k) % PLC_INFLIGHT];

			s->w[(s->head + k) % PLC_INFLIGHT] =
				s->w[(s->head + k + 1) % PLC_INFLIGHT];
			s->w[(s->head + k + 1) % PLC_INFLIGHT] = tmp;
		}
		s->count--;
		s->res->pushes++;
	}
	if (plc_below(&s->rng, 2))
		plc_poll(s);
}

/* Push v: write segments [slo, shi) of the row, seal them into a slot and
 * cut the slot's bytes into shuffled pieces. */
static inline void plc_push(struct plc_sim *s, uint64_t v, uint32_t slo,
			    uint32_t shi)
{
	const struct sst_seg *segs = s->l->segs;
	struct plc_write *w;
	uint32_t lo = segs[slo].lo, hi = sst_seg_end(&segs[shi - 1]), n = 0;

	while (s->count == PLC_INFLIGHT)
		plc_step(s);
	w = &s->w[(s->head + s->count) % PLC_INFLIGHT];
	for (uint32_t sg = slo; sg < shi; sg++) {
		size_t nw = (segs[sg].trailer - segs[sg].lo) / 8;
		uint64_t *rw = (uint64_t *)(void *)(s->row + segs[sg].lo);

		for (size_t i = 0; i < nw; i++)
			rw[i] = plc_word(v, sg, i);
		sst_seal(&segs[sg], s->key[sg], ++s->seq[sg], s->row, w->buf);
		s->pushed[sg][v / 8] |= (uint8_t)(1u << (v % 8));
		s->final_v[sg] = v;
	}
	for (uint32_t off = lo; off < hi; n++) {
		uint32_t len = 1 + (uint32_t)plc_below(&s->rng, PLC_PIECE_MAX);

		if (len > hi - off)
			len = hi - off;
		w->off[n] = off;
		w->len[n] = len;
		off += len;
	}
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = (uint32_t)plc_below(&s->rng, i), t;

		t = w->off[i - 1]; w->off[i - 1] = w->off[j]; w->off[j] = t;
		t = w->len[i - 1]; w->len[i - 1] = w->len[j]; w->len[j] = t;
	}
	w->npieces = n;
	w->next = 0;
	s->count++;
}

/* Run `pushes` pushes of random runs of segments with placement seed
 * `seed`, then one push of every segment with nothing else in flight,
 * after which every segment must stand at its last push. Returns 0, or -1
 * when memory ran out. */
static inline int plc_run(uint64_t pushes, uint64_t seed, bool validate,
			  struct plc_result *res)
{
	struct sst_layout *l;
	struct plc_sim s;
	size_t row;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (sst_layout_create(plc_columns, sizeof(plc_columns) /
			      sizeof(plc_columns[0]), &l, NULL))
		return -1;
	memset(&s, 0, sizeof(s));
	s.l = l;
	s.validate = validate;
	s.rng = seed;
	s.res = res;
	row = sst_layout_row_size(l);
	s.row = calloc(1, row);
	s.land = calloc(1, row);
	s.valid = calloc(1, row);
	s.scratch = calloc(1, row);
	for (uint32_t i = 0; i < PLC_INFLIGHT; i++)
		s.w[i].buf = calloc(1, row);
	for (uint32_t sg = 0; sg < l->nsegs && sg < 16; sg++) {
		s.key[sg] = sst_seal_key(seed, sst_layout_fingerprint(l), 1, sg);
		s.pushed[sg] = calloc(1, (size_t)(pushes + 2) / 8 + 1);
		if (!s.pushed[sg])
			goto out;
	}
	if (!s.row || !s.land || !s.valid || !s.scratch || l->nsegs > 16)
		goto out;
	for (uint32_t i = 0; i < PLC_INFLIGHT; i++)
		if (!s.w[i].buf)
			goto out;
	for (uint64_t v = 1; v <= pushes; v++) {
		uint32_t slo = 1 + (uint32_t)plc_below(&s.rng, l->nsegs - 1);
		uint32_t shi = slo + 1 + (uint32_t)plc_below(&s.rng,
							   l->nsegs - slo);

		plc_push(&s, v, slo, shi);
	}
	while (s.count)
		plc_step(&s);
	plc_push(&s, pushes + 1, 1, l->nsegs);
	while (s.count)
		plc_step(&s);
	plc_poll(&s);
	for (uint32_t sg = 1; sg < l->nsegs; sg++)
		if (s.last_v[sg] != pushes + 1)
			res->unfinished++;
	rc = 0;
out:
	for (uint32_t sg = 0; sg < 16; sg++)
		free(s.pushed[sg]);
	for (uint32_t i = 0; i < PLC_INFLIGHT; i++)
		free(s.w[i].buf);
	free(s.row);
	free(s.land);
	free(s.valid);
	free(s.scratch);
	sst_layout_destroy(l);
	return rc;
}

#endif /* SQUALL_TESTS_SST_PLACEMENT_H */
