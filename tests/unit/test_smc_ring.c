/*
 * test_smc_ring.c - the SMC ring: geometry, record reservation and flow
 * control, write plans (scatter/gather of header cells and payloads, runs,
 * wrap-around), the receiver's parsing of completed runs, slot release,
 * and the sender's flow accounting.
 *
 * Where a test needs "the write happened", it gathers the plan's
 * scatter/gather list into a receiver buffer at the plan's offset, which is
 * exactly the placement an RDMA write performs; the point is to check the
 * two sides of the ring agree, not to stand in for a NIC.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "smc/flow.h"
#include "smc/ring.h"

struct pair {
	struct smc_ring_geom g;
	struct smc_ring_tx tx;
	struct smc_ring_rx rx;
	uint8_t *hdr;
	struct smc_tx_slot *slots;
	uint8_t *ring;
	uint8_t *rel;
};

/* Both sides start (again) over the pair's ring memory, whatever it holds
 * (a new view's rings, not cleared), both with seal. */
static void pair_restart(struct pair *p, uint64_t seal)
{
	smc_ring_tx_init(&p->tx, &p->g, p->hdr, p->slots, seal);
	smc_ring_rx_init(&p->rx, &p->g, p->ring, p->rel, seal);
}

/* A pair whose two sides use seal (the same on both). */
static void pair_init_sealed(struct pair *p, uint32_t window,
			     uint32_t max_payload, uint64_t seal)
{
	assert_int_equal(smc_ring_geom_init(&p->g, window, max_payload), 0);
	p->hdr = malloc((size_t)window * SMC_HDR_CELL);
	p->slots = malloc((size_t)window * sizeof(*p->slots));
	p->ring = malloc(p->g.cap);
	p->rel = malloc(window);
	assert_non_null(p->hdr);
	assert_non_null(p->slots);
	assert_non_null(p->ring);
	assert_non_null(p->rel);
	/* Garbage everywhere: nothing may depend on zeroed memory. */
	memset(p->ring, 0xa5, p->g.cap);
	pair_restart(p, seal);
}

static void pair_init(struct pair *p, uint32_t window, uint32_t max_payload)
{
	pair_init_sealed(p, window, max_payload, 0);
}

static void pair_fini(struct pair *p)
{
	free(p->hdr);
	free(p->slots);
	free(p->ring);
	free(p->rel);
}

/* What an RDMA write of plan w does at the receiver. */
static void place(struct pair *p, const struct smc_write *w)
{
	uint64_t off = w->remote_off, total = 0;

	for (uint32_t i = 0; i < w->nsge; i++) {
		assert_true(off + w->sge[i].len <= p->g.cap);
		memcpy(p->ring + off, w->sge[i].addr, w->sge[i].len);
		off += w->sge[i].len;
		total += w->sge[i].len;
	}
	assert_int_equal(total, w->bytes);
}

static void test_geom(void **state)
{
	struct smc_ring_geom g;

	(void)state;
	assert_int_equal(smc_ring_geom_init(&g, 0, 64), -EINVAL);
	assert_int_equal(smc_ring_geom_init(&g, 8, 0), -EINVAL);
	assert_int_equal(smc_ring_geom_init(&g, (1u << 20) + 1, 64), -EINVAL);
	assert_int_equal(smc_ring_geom_init(&g, 8, 1000), 0);
	assert_int_equal(g.stride, 16 + 1000);
	assert_int_equal(g.cap, 9 * 1016);
	assert_int_equal(smc_ring_geom_init(&g, 4, 13), 0);
	assert_int_equal(g.stride, 16 + 16);
	assert_int_equal(smc_rec_bytes(0), 16);
	assert_int_equal(smc_rec_bytes(1), 24);
	assert_int_equal(smc_rec_bytes(8), 24);
	assert_int_equal(smc_rec_bytes(9), 32);
}

static void test_hdr_and_imm_codec(void **state)
{
	uint8_t buf[16];
	struct smc_rec_hdr h;
	uint32_t imm;

	(void)state;
	smc_rec_hdr_encode(buf, 0x0102030405060708ull, 0xa0b0c0d0, 7,
			   SMC_REC_NULL);
	/* Little-endian on the wire, whatever the host. */
	assert_int_equal(buf[0], 0x08);
	assert_int_equal(buf[7], 0x01);
	assert_int_equal(buf[8], 0xd0);
	assert_int_equal(buf[12], 7);
	assert_int_equal(buf[14], SMC_REC_NULL);
	smc_rec_hdr_decode(buf, &h);
	assert_int_equal(h.round, 0x0102030405060708ull);
	assert_int_equal(h.len, 0xa0b0c0d0);
	assert_int_equal(h.nrounds, 7);
	assert_int_equal(h.flags, SMC_REC_NULL);

	imm = smc_imm_encode(4095, 0x123456789ull);
	assert_true(smc_imm_is_smc(imm));
	assert_int_equal(smc_imm_nrec(imm), 4095);
	assert_int_equal(smc_imm_first16(imm), 0x6789);
	assert_false(smc_imm_is_smc(0x10000001));
}

/* A run of mixed records goes out as one write: header cells carry the
 * previous record's padding, payloads come straight from the caller's
 * buffers (the same addresses: no copy). */
static void test_plan_one_run(void **state)
{
	struct pair p;
	struct smc_write w;
	uint8_t a[64], b[5], c[100];
	struct smc_rx_rec out[8];

	(void)state;
	pair_init(&p, 8, 128);
	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	memset(c, 'c', sizeof(c));
	assert_int_equal(smc_ring_tx_reserve(&p.tx, a, 64, 1, 0, NULL), 0);
	assert_int_equal(smc_ring_tx_reserve(&p.tx, b, 5, 1, 0, NULL), 1);
	assert_int_equal(
	    smc_ring_tx_reserve(&p.tx, NULL, 0, 3, SMC_REC_NULL, NULL), 2);
	assert_int_equal(smc_ring_tx_reserve(&p.tx, c, 100, 1, 0, NULL), 3);
	assert_int_equal(p.tx.next_round, 6);

	assert_true(smc_ring_tx_plan(&p.tx, 32, &w));
	assert_int_equal(w.first_rec, 0);
	assert_int_equal(w.nrec, 4);
	assert_int_equal(w.remote_off, 0);
	assert_int_equal(w.nsge, 7);
	assert_int_equal(w.sge[0].kind, SMC_SGE_HDR);
	assert_int_equal(w.sge[0].len, 16);
	assert_ptr_equal(w.sge[1].addr, a);
	assert_int_equal(w.sge[1].kind, SMC_SGE_PAYLOAD);
	assert_int_equal(w.sge[2].len, 16); /* 64 needs no padding */
	assert_ptr_equal(w.sge[3].addr, b);
	assert_int_equal(w.sge[4].len, 16 + 3); /* b's 3 padding bytes */
	assert_int_equal(w.sge[5].len, 16);	/* the null had none */
	assert_ptr_equal(w.sge[6].addr, c);
	assert_int_equal(w.bytes, 80 + 24 + 16 + 116);
	assert_int_equal(w.imm, smc_imm_encode(4, 0));
	assert_false(smc_ring_tx_plan(&p.tx, 32, &w));

	place(&p, &w);
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 8), 4);
	assert_int_equal(out[0].len, 64);
	assert_memory_equal(out[0].data, a, 64);
	assert_int_equal(out[1].round, 1);
	assert_memory_equal(out[1].data, b, 5);
	assert_int_equal(out[2].flags, SMC_REC_NULL);
	assert_int_equal(out[2].nrounds, 3);
	assert_int_equal(out[3].round, 5);
	assert_memory_equal(out[3].data, c, 100);
	assert_int_equal(p.rx.next_round, 6);
	assert_int_equal((uintptr_t)out[3].data % 8, (uintptr_t)p.ring % 8);
	pair_fini(&p);
}

/* The device's scatter/gather limit splits a run. */
static void test_plan_sge_limit(void **state)
{
	struct pair p;
	struct smc_write w;
	uint8_t buf[16] = {0};

	(void)state;
	pair_init(&p, 16, 64);
	for (int i = 0; i < 10; i++)
		assert_int_equal(
		    smc_ring_tx_reserve(&p.tx, buf, 16, 1, 0, NULL), i);
	assert_true(smc_ring_tx_plan(&p.tx, 5, &w));
	assert_int_equal(w.nrec, 2);
	assert_int_equal(w.nsge, 4);
	assert_true(smc_ring_tx_plan(&p.tx, 8, &w));
	assert_int_equal(w.first_rec, 2);
	assert_int_equal(w.nrec, 4);
	assert_int_equal(w.remote_off, 2 * 32);
	assert_true(smc_ring_tx_plan(&p.tx, 100, &w)); /* capped at 32 */
	assert_int_equal(w.nrec, 4);
	assert_false(smc_ring_tx_plan(&p.tx, 100, &w));
	pair_fini(&p);
}

static void test_reserve_limits(void **state)
{
	struct pair p;
	struct smc_write w;
	uint8_t buf[64] = {0};

	(void)state;
	pair_init(&p, 3, 64);
	assert_int_equal(smc_ring_tx_reserve(&p.tx, buf, 65, 1, 0, NULL),
			 -EMSGSIZE);
	for (int i = 0; i < 3; i++)
		assert_int_equal(
		    smc_ring_tx_reserve(&p.tx, buf, 64, 1, 0, NULL), i);
	assert_int_equal(smc_ring_tx_free_slots(&p.tx), 0);
	assert_int_equal(smc_ring_tx_reserve(&p.tx, buf, 1, 1, 0, NULL),
			 -EAGAIN);
	assert_true(smc_ring_tx_plan(&p.tx, 32, &w));
	/* Releases only move forward. */
	smc_ring_tx_set_released(&p.tx, 1);
	smc_ring_tx_set_released(&p.tx, 0);
	assert_int_equal(p.tx.released_rec, 1);
	assert_int_equal(smc_ring_tx_free_slots(&p.tx), 1);
	assert_int_equal(smc_ring_tx_reserve(&p.tx, buf, 64, 1, 0, NULL), 3);
	pair_fini(&p);
}

/* Bytes, not only slots, bound a ring: small records pack, and a run
 * stops at the end of the ring. */
static void test_wrap_rule(void **state)
{
	struct pair p;
	struct smc_write w;
	uint8_t buf[64] = {0};
	struct smc_rx_rec out[8];

	(void)state;
	pair_init(&p, 2, 64); /* stride 80, cap 240 */
	assert_int_equal(p.g.cap, 240);
	assert_int_equal(smc_ring_tx_reserve(&p.tx, buf, 64, 1, 0, NULL), 0);
	assert_int_equal(smc_ring_tx_reserve(&p.tx, buf, 64, 1, 0, NULL), 1);
	assert_true(smc_ring_tx_plan(&p.tx, 32, &w));
	place(&p, &w);
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 8), 2);
	assert_true(smc_ring_rx_release(&p.rx, 0));
	smc_ring_tx_set_released(&p.tx, p.rx.released_rec);
	/* 80 bytes remain before the end: a full record still fits there. */
	assert_int_equal(smc_ring_tx_reserve(&p.tx, buf, 64, 1, 0, NULL), 2);
	assert_int_equal(smc_ring_tx_slot(&p.tx, 2)->voff, 160);
	assert_true(smc_ring_tx_plan(&p.tx, 32, &w));
	assert_int_equal(w.remote_off, 160);
	place(&p, &w);
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 8), 1);
	assert_true(smc_ring_rx_release(&p.rx, 1));
	smc_ring_tx_set_released(&p.tx, p.rx.released_rec);
	/* Nothing remains at the end: the next record opens lap 2. */
	assert_int_equal(smc_ring_tx_reserve(&p.tx, buf, 8, 1, 0, NULL), 3);
	assert_int_equal(smc_ring_tx_slot(&p.tx, 3)->voff, 240);
	assert_true(smc_ring_tx_plan(&p.tx, 32, &w));
	assert_int_equal(w.remote_off, 0);
	place(&p, &w);
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 8), 1);
	assert_ptr_equal(out[0].data, p.ring + 16);
	pair_fini(&p);
}

/* A record that ends exactly at the end of the ring closes the run: the
 * next one is contiguous in virtual offsets but starts at physical 0. */
static void test_run_ends_at_ring_end(void **state)
{
	struct pair p;
	struct smc_write w;
	uint8_t buf[8] = {9, 9, 9, 9, 9, 9, 9, 9};
	struct smc_rx_rec out[8];

	(void)state;
	pair_init(&p, 4, 8); /* stride 24, cap 120 */
	for (int i = 0; i < 4; i++)
		smc_ring_tx_reserve(&p.tx, buf, 8, 1, 0, NULL);
	assert_true(smc_ring_tx_plan(&p.tx, 32, &w));
	place(&p, &w);
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 8), 4);
	for (int i = 0; i < 4; i++)
		smc_ring_rx_release(&p.rx, i);
	smc_ring_tx_set_released(&p.tx, p.rx.released_rec);
	assert_int_equal(smc_ring_tx_reserve(&p.tx, buf, 8, 1, 0, NULL), 4);
	assert_int_equal(smc_ring_tx_reserve(&p.tx, buf, 8, 1, 0, NULL), 5);
	assert_int_equal(smc_ring_tx_slot(&p.tx, 5)->voff, 120);
	assert_true(smc_ring_tx_plan(&p.tx, 32, &w));
	assert_int_equal(w.nrec, 1);
	assert_int_equal(w.remote_off, 96);
	place(&p, &w);
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 8), 1);
	assert_true(smc_ring_tx_plan(&p.tx, 32, &w));
	assert_int_equal(w.first_rec, 5);
	assert_int_equal(w.remote_off, 0);
	place(&p, &w);
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 8), 1);
	assert_ptr_equal(out[0].data, p.ring + 16);
	assert_memory_equal(out[0].data, buf, 8);
	pair_fini(&p);
}

/* A receiver never accepts what does not continue the sequence, and a
 * refused run leaves its state untouched. */
static void test_rx_protocol_errors(void **state)
{
	struct pair p;
	struct smc_write w;
	uint8_t buf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	struct smc_rx_rec out[8];

	(void)state;
	pair_init(&p, 4, 64);
	assert_int_equal(smc_ring_tx_reserve(&p.tx, buf, 8, 1, 0, NULL), 0);
	assert_int_equal(smc_ring_tx_reserve(&p.tx, buf, 8, 1, 0, NULL), 1);
	assert_true(smc_ring_tx_plan(&p.tx, 32, &w));
	/* Completion before data (impossible on RC, made up here): the
	 * garbage header is refused. */
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 8), -EPROTO);
	assert_int_equal(p.rx.next_rec, 0);
	place(&p, &w);
	assert_int_equal(
	    smc_ring_rx_accept(&p.rx, smc_imm_encode(2, 5), out, 8), -EPROTO);
	assert_int_equal(smc_ring_rx_accept(&p.rx, 0x12345678, out, 8),
			 -EPROTO);
	/* More records than the window allows. */
	assert_int_equal(
	    smc_ring_rx_accept(&p.rx, smc_imm_encode(5, 0), out, 8), -EPROTO);
	assert_int_equal(p.rx.next_rec, 0);
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 8), 2);
	assert_int_equal(p.rx.next_round, 2);
	/* The same run again is a replay. */
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 8), -EPROTO);
	pair_fini(&p);
}

/* Start the pair again under seal and plan one run of two records, x's
 * first 24 bytes and y's 40, without placing it. */
static void restart_two(struct pair *p, uint64_t seal, const uint8_t *x,
			const uint8_t *y, struct smc_write *w)
{
	pair_restart(p, seal);
	assert_int_equal(smc_ring_tx_reserve(&p->tx, x, 24, 1, 0, NULL), 0);
	assert_int_equal(smc_ring_tx_reserve(&p->tx, y, 40, 1, 0, NULL), 1);
	assert_true(smc_ring_tx_plan(&p->tx, 32, w));
}

/* A ring is not cleared between uses: the records the last use left sit
 * exactly where this use's first records go. A run whose bytes never
 * arrived (a misdirected write) must not pass on them, whatever they are.
 * Under the same seal it would (shown first: the hole the seal closes);
 * under the next use's seal the stale headers are refused. */
static void test_seal_refuses_stale_records(void **state)
{
	uint8_t a[40], b[40];
	struct smc_rx_rec out[4];
	struct smc_write w;
	struct pair p;

	(void)state;
	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	pair_init_sealed(&p, 8, 64, 0x9e3779b97f4a7c15ull);
	restart_two(&p, 0x9e3779b97f4a7c15ull, a, b, &w);
	place(&p, &w);
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 4), 2);
	/* The header in the ring is not the bare round. */
	assert_int_not_equal(((const uint64_t *)p.ring)[0], 0);

	/* Same seal again: the same two records, whose write went astray,
	 * are "found" in the stale bytes. */
	restart_two(&p, 0x9e3779b97f4a7c15ull, b, a, &w);
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 4), 2);
	assert_memory_equal(out[0].data, a, 24);

	/* The next use's seal: refused, the ring state unchanged. */
	restart_two(&p, 0x9e3779b97f4a7c16ull, b, a, &w);
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 4), -EPROTO);
	assert_int_equal(p.rx.next_rec, 0);
	/* Once the write lands, the same run is whole. */
	place(&p, &w);
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 4), 2);
	assert_memory_equal(out[0].data, b, 24);
	assert_memory_equal(out[1].data, a, 40);
	pair_fini(&p);
}

static void test_rx_release_prefix(void **state)
{
	struct pair p;
	struct smc_write w;
	uint8_t buf[8] = {0};
	struct smc_rx_rec out[8];

	(void)state;
	pair_init(&p, 4, 64);
	for (int i = 0; i < 4; i++)
		smc_ring_tx_reserve(&p.tx, buf, 8, 1, 0, NULL);
	assert_true(smc_ring_tx_plan(&p.tx, 32, &w));
	place(&p, &w);
	assert_int_equal(smc_ring_rx_accept(&p.rx, w.imm, out, 8), 4);
	/* A held slot (record 0) keeps everything after it unreleased. */
	assert_false(smc_ring_rx_release(&p.rx, 2));
	assert_false(smc_ring_rx_release(&p.rx, 1));
	assert_int_equal(p.rx.released_rec, 0);
	assert_true(smc_ring_rx_release(&p.rx, 0));
	assert_int_equal(p.rx.released_rec, 3);
	assert_true(smc_ring_rx_release(&p.rx, 3));
	assert_int_equal(p.rx.released_rec, 4);
	pair_fini(&p);
}

/*
 * Many laps with random sizes, runs and releases, one receiver that holds
 * some records for a while: every record arrives intact, no run crosses the
 * end of the ring, and no write ever touches the bytes of a record the
 * receiver still holds.
 */
#define LAPS_MSGS 20000
struct held {
	uint64_t rec;
	const uint8_t *data;
	uint32_t len;
	uint8_t fill;
};

static uint8_t fill_of(uint64_t rec)
{
	return (uint8_t)(rec * 131 + 7);
}

static void test_many_laps(void **state)
{
	struct pair p;
	uint32_t window = 7, maxp = 200;
	uint8_t *src;
	uint64_t sent = 0, got = 0, nsge_total = 0, writes = 0;
	struct held held[16];
	uint32_t nheld = 0;
	unsigned seed = 12345;

	(void)state;
	pair_init(&p, window, maxp);
	/* Payload storage per slot, like leases that live until release. */
	src = malloc((size_t)window * maxp);
	assert_non_null(src);
	while (got < LAPS_MSGS) {
		struct smc_write w;
		struct smc_rx_rec out[SMC_MAX_SGE];
		int burst = rand_r(&seed) % 5;

		for (int i = 0; i < burst && sent < LAPS_MSGS; i++) {
			uint32_t len = (uint32_t)(rand_r(&seed) % (maxp + 1));
			uint8_t *buf = src + (sent % window) * maxp;
			int64_t r;

			if (smc_ring_tx_free_slots(&p.tx) == 0)
				break;
			memset(buf, fill_of(sent), maxp);
			r = smc_ring_tx_reserve(&p.tx, len ? buf : NULL, len, 1,
						0, NULL);
			if (r == -EAGAIN)
				break;
			assert_int_equal(r, (int64_t)sent);
			sent++;
		}
		while (smc_ring_tx_plan(&p.tx, 2 + rand_r(&seed) % 9, &w)) {
			int n;

			assert_true(w.remote_off + w.bytes <= p.g.cap);
			place(&p, &w);
			writes++;
			nsge_total += w.nsge;
			n = smc_ring_rx_accept(&p.rx, w.imm, out, SMC_MAX_SGE);
			assert_int_equal(n, (int)w.nrec);
			for (int i = 0; i < n; i++) {
				assert_int_equal(out[i].rec, got);
				for (uint32_t b = 0; b < out[i].len; b++)
					assert_int_equal(out[i].data[b],
							 fill_of(got));
				/* Hold one in four for a while. */
				if (rand_r(&seed) % 4 == 0 && nheld < 16) {
					held[nheld++] = (struct held){
					    got, out[i].data, out[i].len,
					    fill_of(got)};
				} else {
					smc_ring_rx_release(&p.rx, got);
				}
				got++;
			}
		}
		/* Held records are intact whatever was written since. */
		for (uint32_t i = 0; i < nheld; i++)
			for (uint32_t b = 0; b < held[i].len; b++)
				assert_int_equal(held[i].data[b], held[i].fill);
		/* Let go of the oldest held ones now and then. */
		while (nheld && (rand_r(&seed) % 2 ||
				 smc_ring_tx_free_slots(&p.tx) == 0)) {
			smc_ring_rx_release(&p.rx, held[0].rec);
			memmove(held, held + 1, --nheld * sizeof(held[0]));
		}
		smc_ring_tx_set_released(&p.tx, p.rx.released_rec);
	}
	assert_int_equal(p.rx.next_round, LAPS_MSGS);
	assert_true(p.tx.head_v > 10 * p.g.cap); /* it did wrap, often */
	assert_true(writes < LAPS_MSGS);	 /* runs were batched */
	(void)nsge_total;
	free(src);
	pair_fini(&p);
}

static void test_flow(void **state)
{
	struct smc_flow f;

	(void)state;
	assert_int_equal(smc_flow_init(&f, 3, 3), -EINVAL);
	assert_int_equal(smc_flow_init(&f, 3, 1), 0);
	assert_int_equal(smc_flow_min_released(&f), 0);
	smc_flow_set_released(&f, 0, 5);
	smc_flow_set_released(&f, 2, 7);
	assert_int_equal(smc_flow_min_released(&f), 0);
	smc_flow_set_released(&f, 1, 6);
	assert_int_equal(smc_flow_min_released(&f), 5);
	smc_flow_set_released(&f, 0, 4); /* stale report */
	assert_int_equal(smc_flow_min_released(&f), 5);
	/* The payload waits for the writes and for the sender itself. */
	assert_int_equal(smc_flow_payload_done(&f), 0);
	smc_flow_set_completed(&f, 0, 9);
	smc_flow_set_completed(&f, 2, 3);
	assert_int_equal(smc_flow_payload_done(&f), 3);
	smc_flow_set_completed(&f, 2, 10);
	assert_int_equal(smc_flow_payload_done(&f), 6);
	smc_flow_set_completed(&f, 1, 2); /* its own entry: no write */
	assert_int_equal(smc_flow_payload_done(&f), 6);
	smc_flow_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_geom),
	    cmocka_unit_test(test_hdr_and_imm_codec),
	    cmocka_unit_test(test_plan_one_run),
	    cmocka_unit_test(test_plan_sge_limit),
	    cmocka_unit_test(test_reserve_limits),
	    cmocka_unit_test(test_wrap_rule),
	    cmocka_unit_test(test_run_ends_at_ring_end),
	    cmocka_unit_test(test_rx_protocol_errors),
	    cmocka_unit_test(test_seal_refuses_stale_records),
	    cmocka_unit_test(test_rx_release_prefix),
	    cmocka_unit_test(test_many_laps),
	    cmocka_unit_test(test_flow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
