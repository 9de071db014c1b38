/*
 * test_smc_core.c - the SMC engine of several members driven together,
 * with the byte moving done by the test: this checks the protocol (rings,
 * runs, stability, round-robin order, null messages, flow control, slot
 * ownership, payload return), not RDMA; tests/vm/smc_order.sh does that on
 * a real device.
 *
 * The test's "network" keeps each posted write in a FIFO per (sender,
 * receiver), as an RC QP does, and performs the placement only when it
 * chooses to deliver it, gathering from the scatter/gather list at that
 * moment: a payload handed back too early would be poisoned by then and
 * fail the receivers' checksums (and AddressSanitizer). Completions at the
 * sender come later still, from a second FIFO. SST rows travel with random
 * delays.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "smc/core.h"

#define MAXN 4

/* A write in flight, with the checksum of the bytes it placed. */
struct flight {
	struct smc_write w;
	uint64_t sum;
};

struct fifo {
	struct flight *w;
	size_t head, tail, cap;
};

struct sim;

struct held_msg {
	struct smc_msg m;
	uint64_t sum;
};

struct member {
	struct sim *sim;
	uint32_t id;
	struct smc_core *c;
	uint8_t *hdr;
	uint8_t *rings[MAXN];
	uint64_t pub_recv[MAXN], pub_rel[MAXN]; /* published SST row */
	uint64_t view_recv[MAXN * MAXN], view_rel[MAXN * MAXN];
	uint64_t hash, delivered, per_sender[MAXN];
	uint64_t sent, to_send;
	uint64_t leases_out, bad;
	/* Holding: keep every message while `hold` is set. */
	bool hold;
	struct held_msg held[256];
	uint32_t nheld;
	bool lazy; /* a lazy change withheld (withhold_lazy) */
};

struct sim {
	uint32_t n;
	uint32_t max_payload;
	struct member m[MAXN];
	struct fifo wire[MAXN][MAXN]; /* writes in flight src -> dst */
	struct fifo acks[MAXN][MAXN]; /* completions on their way back */
	unsigned seed;
	/* Publish a row only when the core says a sender waits for it
	 * (SMC_ROW_URGENT): what is only SMC_ROW_LAZY goes out with the
	 * next urgent change, or never. */
	bool withhold_lazy;
};

/* Writes may be posted by an application thread (a blocking send that
 * wakes up) while the test's thread moves others. */
static pthread_mutex_t wire_lock = PTHREAD_MUTEX_INITIALIZER;

static void fifo_push(struct fifo *f, const struct flight *w)
{
	pthread_mutex_lock(&wire_lock);
	if (f->tail - f->head == f->cap) {
		size_t ncap = f->cap ? 2 * f->cap : 16;
		struct flight *nw = malloc(ncap * sizeof(*nw));

		assert_non_null(nw);
		for (size_t i = f->head; i < f->tail; i++)
			nw[i % ncap] = f->w[i % f->cap];
		free(f->w);
		f->w = nw;
		f->cap = ncap;
	}
	f->w[f->tail++ % f->cap] = *w;
	pthread_mutex_unlock(&wire_lock);
}

static bool fifo_pop(struct fifo *f, struct flight *w)
{
	bool got = false;

	pthread_mutex_lock(&wire_lock);
	if (f->head != f->tail) {
		*w = f->w[f->head++ % f->cap];
		got = true;
	}
	pthread_mutex_unlock(&wire_lock);
	return got;
}

/* Payload of message k of sender s: length and bytes both derive from
 * (s, k), so any receiver can check them. */
static uint32_t msg_len(uint32_t s, uint64_t k, uint32_t maxp)
{
	uint64_t x = (k + 1) * 0x9e3779b97f4a7c15ull ^ s;

	return (uint32_t)(x >> 17) % (maxp + 1);
}

static uint8_t msg_byte(uint32_t s, uint64_t k, uint32_t i)
{
	return (uint8_t)(k * 31 + i * 7 + s * 101 + (i >> 8));
}

static uint64_t sum_of(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* Percent of posts refused as a full send queue would (-ENOMEM). */
static unsigned queue_full_pct;
static unsigned queue_seed = 7;

static int sim_post(void *ctx, uint32_t dest, const struct smc_write *w)
{
	struct member *m = ctx;

	if (queue_full_pct && (unsigned)rand_r(&queue_seed) % 100 < queue_full_pct)
		return -ENOMEM;
	fifo_push(&m->sim->wire[m->id][dest], &(struct flight){.w = *w});
	return 0;
}

static void sim_payload_done(void *ctx, void *cookie, const void *payload,
			     uint32_t len)
{
	struct member *m = ctx;
	uint8_t *buf = cookie;

	if (len)
		assert_ptr_equal(payload, cookie);
	/* Poison, then free: a late gather would show. */
	memset(buf, 0xdd, 8);
	free(buf);
	m->leases_out--;
}

/* Copy-path leases come from malloc here; fail_leases makes them fail. */
static bool fail_leases;

static int sim_lease(void *ctx, uint32_t len, int timeout_ms, void **ptr,
		     void **cookie)
{
	struct member *m = ctx;

	(void)timeout_ms;
	if (fail_leases)
		return -ENOMEM;
	*ptr = *cookie = malloc(len);
	if (!*ptr)
		return -ENOMEM;
	m->leases_out++;
	return 0;
}

static void sim_unlease(void *ctx, void *cookie, void *ptr, uint32_t len)
{
	struct member *m = ctx;

	(void)ptr;
	(void)len;
	free(cookie);
	m->leases_out--;
}

/* The commit step refuses this cookie (a stand-in for a lease that is not
 * in a state to be sent). */
static void *refused_cookie;

static int sim_commit(void *ctx, void *cookie, const void *payload,
		      uint32_t len)
{
	(void)ctx;
	(void)payload;
	(void)len;
	return cookie == refused_cookie ? -EBUSY : 0;
}

static const struct smc_core_ops sim_ops = {
    .post_write = sim_post,
    .payload_done = sim_payload_done,
    .lease = sim_lease,
    .unlease = sim_unlease,
    .commit = sim_commit,
};

static bool sim_deliver(void *arg, const struct smc_msg *msg)
{
	struct member *m = arg;
	uint64_t k = m->per_sender[msg->sender]++;
	const uint8_t *p = msg->data;

	if (msg->len != msg_len(msg->sender, k, m->sim->max_payload))
		m->bad++;
	for (size_t i = 0; i < msg->len; i++)
		if (p[i] != msg_byte(msg->sender, k, (uint32_t)i))
			m->bad++;
	m->hash = (m->hash ^ msg->seq) * 0x100000001b3ull;
	m->hash = (m->hash ^ sum_of(p, msg->len)) * 0x100000001b3ull;
	m->delivered++;
	if (m->hold && m->nheld < 256) {
		m->held[m->nheld++] =
		    (struct held_msg){*msg, sum_of(p, msg->len)};
		return true;
	}
	return false;
}

static void sim_init(struct sim *sim, uint32_t n, uint32_t window,
		     uint32_t maxp, uint32_t max_sge, uint32_t inflight)
{
	memset(sim, 0, sizeof(*sim));
	sim->n = n;
	sim->max_payload = maxp;
	sim->seed = 42;
	for (uint32_t j = 0; j < n; j++) {
		struct member *m = &sim->m[j];
		struct smc_core_params p = {
		    .nmembers = n,
		    .me = j,
		    .window = window,
		    .max_payload = maxp,
		    .max_sge = max_sge,
		    .max_inflight = inflight,
		    .deliver = sim_deliver,
		    .deliver_arg = m,
		    .seal = 0x5eed0000c0ffeeull,
		};
		struct smc_ring_geom g;

		m->sim = sim;
		m->id = j;
		m->hash = 0xcbf29ce484222325ull;
		assert_int_equal(smc_ring_geom_init(&g, window, maxp), 0);
		m->hdr = malloc(smc_core_hdr_area_size(window));
		for (uint32_t s = 0; s < n; s++) {
			m->rings[s] = malloc(g.cap);
			memset(m->rings[s], 0x5a, g.cap);
		}
		assert_int_equal(
		    smc_core_create(&p, &sim_ops, m, m->hdr,
				    (const uint8_t *const *)m->rings, &m->c),
		    0);
	}
}

static void sim_fini(struct sim *sim)
{
	for (uint32_t j = 0; j < sim->n; j++) {
		struct member *m = &sim->m[j];

		smc_core_destroy(m->c);
		assert_int_equal(m->leases_out, 0);
		free(m->hdr);
		for (uint32_t s = 0; s < sim->n; s++)
			free(m->rings[s]);
		for (uint32_t d = 0; d < sim->n; d++) {
			free(sim->wire[j][d].w);
			free(sim->acks[j][d].w);
		}
	}
}

/* Gather a write's scatter/gather list: what the sending NIC reads. */
static uint64_t gather(const struct smc_write *w, uint8_t *at)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (uint32_t i = 0; i < w->nsge; i++) {
		const uint8_t *p = w->sge[i].addr;

		for (uint32_t k = 0; k < w->sge[i].len; k++) {
			if (at)
				*at++ = p[k];
			h = (h ^ p[k]) * 0x100000001b3ull;
		}
	}
	return h;
}

/* Place one write at its receiver (the data, then the completion). */
static bool sim_arrive(struct sim *sim, uint32_t src, uint32_t dst)
{
	struct flight f;

	if (!fifo_pop(&sim->wire[src][dst], &f))
		return false;
	f.sum = gather(&f.w, sim->m[dst].rings[src] + f.w.remote_off);
	assert_int_equal(smc_core_on_recv(sim->m[dst].c, src, f.w.imm), 0);
	fifo_push(&sim->acks[src][dst], &f);
	return true;
}

/* The sender's completion. Until it, an RC NIC may read the sources again
 * (a retransmission after a lost acknowledgement): they must be unchanged
 * and still allocated. */
static bool sim_ack(struct sim *sim, uint32_t src, uint32_t dst)
{
	struct flight f;

	if (!fifo_pop(&sim->acks[src][dst], &f))
		return false;
	assert_int_equal(gather(&f.w, NULL), f.sum);
	smc_core_on_write_done(sim->m[src].c, dst, f.w.first_rec + f.w.nrec);
	return true;
}

/* One member's progress pass, then it publishes its row when the core
 * says it changed, as the group does (what the others need must never
 * move without that), then its nulls. */
static int sim_progress(struct sim *sim, uint32_t j)
{
	struct member *m = &sim->m[j];
	int r = smc_core_progress(m->c, m->view_recv, m->view_rel);
	uint64_t recv[MAXN], rel[MAXN];
	enum smc_row_change ch;

	assert_true(r >= 0);
	ch = smc_core_take_row(m->c, recv, rel);
	if (ch == SMC_ROW_LAZY && sim->withhold_lazy)
		m->lazy = true;
	else if (ch != SMC_ROW_SAME) {
		memcpy(m->pub_recv, recv, sizeof(recv));
		memcpy(m->pub_rel, rel, sizeof(rel));
		m->lazy = false;
	}
	assert_int_equal(smc_core_nulls(m->c, m->view_recv), 0);
	return r;
}

/* Row k's latest published values reach member j. */
static void sim_push_row(struct sim *sim, uint32_t k, uint32_t j)
{
	uint32_t n = sim->n;

	memcpy(&sim->m[j].view_recv[k * n], sim->m[k].pub_recv,
	       n * sizeof(uint64_t));
	memcpy(&sim->m[j].view_rel[k * n], sim->m[k].pub_rel,
	       n * sizeof(uint64_t));
}

/* One random step of the whole system. Returns true if anything moved. */
static bool sim_step(struct sim *sim)
{
	uint32_t n = sim->n;
	uint32_t a = rand_r(&sim->seed) % n, b = rand_r(&sim->seed) % n;
	bool moved = false;

	switch (rand_r(&sim->seed) % 4) {
	case 0:
		for (int i = rand_r(&sim->seed) % 4; i >= 0; i--)
			moved |= sim_arrive(sim, a, b);
		break;
	case 1:
		moved |= sim_ack(sim, a, b);
		break;
	case 2:
		moved |= sim_progress(sim, a) > 0;
		break;
	default:
		sim_push_row(sim, a, b);
		break;
	}
	return moved;
}

/* Deliver everything in flight until nothing changes. */
static void sim_drain(struct sim *sim)
{
	bool moved = true;

	for (int guard = 0; moved; guard++) {
		/* Null messages must not chase each other for ever. */
		assert_true(guard < 100000);
		moved = false;
		for (uint32_t a = 0; a < sim->n; a++) {
			for (uint32_t b = 0; b < sim->n; b++) {
				while (sim_arrive(sim, a, b))
					moved = true;
				while (sim_ack(sim, a, b))
					moved = true;
			}
			if (sim_progress(sim, a) > 0)
				moved = true;
		}
		for (uint32_t b = 0; b < sim->n; b++) {
			struct member *m = &sim->m[b];
			uint64_t r[MAXN * MAXN], l[MAXN * MAXN];

			memcpy(r, m->view_recv, sizeof(r));
			memcpy(l, m->view_rel, sizeof(l));
			for (uint32_t a = 0; a < sim->n; a++)
				sim_push_row(sim, a, b);
			if (memcmp(r, m->view_recv, sizeof(r)) ||
			    memcmp(l, m->view_rel, sizeof(l)))
				moved = true;
		}
	}
}

/* Try one send from member j (never blocking). */
static int sim_try_send(struct sim *sim, uint32_t j)
{
	struct member *m = &sim->m[j];
	uint32_t len = msg_len(j, m->sent, sim->max_payload);
	uint8_t *buf = malloc(len ? len : 1);
	int r;

	assert_non_null(buf);
	for (uint32_t i = 0; i < len; i++)
		buf[i] = msg_byte(j, m->sent, i);
	r = smc_core_send(m->c, buf, len, buf, 0, false);
	if (r == 0) {
		m->sent++;
		m->leases_out++;
	} else {
		free(buf);
	}
	return r;
}

/* Every member sends `per` messages, each try at random beside random
 * steps of the whole system, until all are sent (not yet delivered). */
static void send_all(struct sim *sim, uint64_t per)
{
	for (uint32_t j = 0; j < sim->n; j++)
		sim->m[j].to_send = per;
	for (int iter = 0; iter < 10000000; iter++) {
		bool left = false;

		for (uint32_t j = 0; j < sim->n; j++) {
			if (sim->m[j].sent < sim->m[j].to_send) {
				left = true;
				if (rand_r(&sim->seed) % 3 == 0)
					sim_try_send(sim, j);
			}
		}
		sim_step(sim);
		if (!left)
			break;
	}
}

static void check_agreement(struct sim *sim, uint64_t total)
{
	for (uint32_t j = 0; j < sim->n; j++) {
		struct smc_stats st;

		assert_int_equal(sim->m[j].bad, 0);
		assert_int_equal(sim->m[j].delivered, total);
		assert_int_equal(sim->m[j].hash, sim->m[0].hash);
		smc_core_stats(sim->m[j].c, &st);
		assert_int_equal(st.delivered, total);
		assert_int_equal(st.payload_copies, 0);
		assert_int_equal(st.sends, sim->m[j].sent);
		assert_int_equal(st.leases_returned, sim->m[j].sent);
		assert_int_equal(sim->m[j].leases_out, 0);
	}
}

/* Three members all sending random sizes up to max_payload; small windows
 * so the rings wrap many times. */
static void test_all_send(void **state)
{
	struct sim sim;
	const uint64_t per = 3000;
	uint64_t total = 0;
	struct smc_stats st;

	(void)state;
	sim_init(&sim, 3, 8, 300, 8, 2);
	send_all(&sim, per);
	sim_drain(&sim);
	for (uint32_t j = 0; j < 3; j++)
		total += sim.m[j].sent;
	assert_int_equal(total, 3 * per);
	check_agreement(&sim, total);
	smc_core_stats(sim.m[0].c, &st);
	/* Runs carried several records per write. */
	assert_true(st.records_written > st.writes);
	/* Every delivered message was timed once: its own sender's from the
	 * send, the others' from their arrival, each later than its stamp. */
	for (uint32_t j = 0; j < 3; j++) {
		smc_core_stats(sim.m[j].c, &st);
		assert_int_equal(st.own_waited, sim.m[j].sent);
		assert_int_equal(st.own_waited + st.rx_waited, st.delivered);
		assert_int_equal(st.delivered, total);
		assert_true(st.own_wait_ns > 0 && st.rx_wait_ns > 0);
	}
	sim_fini(&sim);
}

/* Send queues that are often full (another user of the queue pair, e.g.
 * a flood of point-to-point messages, took the room): posts are put off
 * and made later, to every member, in order; nothing is lost and the
 * core never fails for it. */
static void test_full_send_queues(void **state)
{
	struct sim sim;
	const uint64_t per = 2000;
	uint64_t total = 0, deferred = 0;

	(void)state;
	queue_full_pct = 30;
	sim_init(&sim, 4, 8, 300, 8, 2);
	send_all(&sim, per);
	queue_full_pct = 0;
	sim_drain(&sim);
	for (uint32_t j = 0; j < 4; j++) {
		struct smc_stats st;

		total += sim.m[j].sent;
		smc_core_stats(sim.m[j].c, &st);
		deferred += st.posts_deferred;
		assert_int_equal(smc_core_error(sim.m[j].c), 0);
	}
	assert_int_equal(total, 4 * per);
	assert_true(deferred > 0);
	check_agreement(&sim, total);
	sim_fini(&sim);
}

/* One member sends, two stay idle: their null messages let every message
 * be delivered, and nothing else is delivered. */
static void test_one_sender_nulls(void **state)
{
	struct sim sim;
	struct smc_stats st1, st2;

	(void)state;
	sim_init(&sim, 3, 16, 64, 32, 4);
	sim.m[0].to_send = 2000;
	for (int guard = 0; sim.m[0].sent < sim.m[0].to_send; guard++) {
		/* Without nulls the window would stay full for ever. */
		assert_true(guard < 1000000);
		sim_try_send(&sim, 0);
		sim_step(&sim);
	}
	sim_drain(&sim);
	check_agreement(&sim, 2000);
	smc_core_stats(sim.m[1].c, &st1);
	smc_core_stats(sim.m[2].c, &st2);
	assert_true(st1.null_records > 0 && st2.null_records > 0);
	assert_int_equal(st1.sends, 0);
	/* Batched: far fewer null records than rounds they covered. */
	assert_true(st1.null_rounds >= 1999 &&
		    st1.null_records < st1.null_rounds);
	sim_fini(&sim);
}

/* No member waits for a change its core calls lazy: with rows published
 * only for urgent changes (lazy ones ride along, or never go), every
 * message is still delivered everywhere, in the same order, with one
 * sender or all, two members (whose null rounds are lazy) or three (whose
 * are not: a third member's messages wait for them). Windows wide enough
 * that flow control, which releases feed, never binds. */
static void test_lazy_rows_withheld(void **state)
{
	const uint64_t per = 300;

	(void)state;
	for (uint32_t n = 2; n <= 3; n++) {
		for (int all = 0; all <= 1; all++) {
			struct sim sim;
			uint64_t total = 0;
			bool lazy = false;

			sim_init(&sim, n, 2048, 64, 8, 4);
			sim.withhold_lazy = true;
			if (all) {
				send_all(&sim, per);
			} else {
				sim.m[0].to_send = per;
				for (int g = 0; sim.m[0].sent < per; g++) {
					assert_true(g < 1000000);
					sim_try_send(&sim, 0);
					sim_step(&sim);
				}
			}
			sim_drain(&sim);
			for (uint32_t j = 0; j < n; j++) {
				total += sim.m[j].sent;
				lazy |= sim.m[j].lazy;
			}
			assert_int_equal(total, all ? n * per : per);
			check_agreement(&sim, total);
			/* Something was withheld at the end: releases at
			 * least, so the test did withhold. */
			assert_true(lazy);
			sim_fini(&sim);
		}
	}
}

/* A receiver that keeps its slots makes the sender wait (-EAGAIN) instead
 * of overwriting them; kept payloads stay intact until released. */
static void test_holding_receiver(void **state)
{
	struct sim sim;
	struct member *h;
	struct smc_stats st;
	int r = 0;

	(void)state;
	sim_init(&sim, 3, 8, 128, 32, 4);
	h = &sim.m[2];
	h->hold = true;
	sim.m[0].to_send = 100;
	/* Send until the window is full and stays full. */
	for (int i = 0; i < 2000; i++) {
		r = sim_try_send(&sim, 0);
		sim_drain(&sim);
	}
	assert_int_equal(r, -EAGAIN);
	assert_int_equal(sim.m[0].sent, 8);
	assert_int_equal(h->nheld, 8);
	smc_core_stats(sim.m[0].c, &st);
	assert_true(st.send_eagain > 0);
	/* The other receivers got everything too and are not held back. */
	assert_int_equal(sim.m[1].delivered, 8);
	for (uint32_t i = 0; i < h->nheld; i++)
		assert_int_equal(sum_of(h->held[i].m.data, h->held[i].m.len),
				 h->held[i].sum);
	/* Release out of order: the window opens once the oldest goes. */
	h->hold = false;
	for (uint32_t i = h->nheld; i-- > 1;)
		smc_core_release(h->c, &h->held[i].m);
	sim_drain(&sim);
	assert_int_equal(sim_try_send(&sim, 0), -EAGAIN);
	smc_core_release(h->c, &h->held[0].m);
	h->nheld = 0;
	sim_drain(&sim);
	for (int guard = 0; sim.m[0].sent < sim.m[0].to_send; guard++) {
		/* Without nulls the window would stay full for ever. */
		assert_true(guard < 1000000);
		sim_try_send(&sim, 0);
		sim_step(&sim);
	}
	sim_drain(&sim);
	check_agreement(&sim, 100);
	sim_fini(&sim);
}

/* Blocking and timed sends wait for a slot; -EMSGSIZE above max_payload. */
struct blocker {
	struct sim *sim;
	int result;
};

static void *blocking_send(void *arg)
{
	struct blocker *b = arg;
	struct member *m = &b->sim->m[0];
	uint32_t len = msg_len(0, 4, b->sim->max_payload);
	uint8_t *buf = malloc(len ? len : 1);

	for (uint32_t i = 0; i < len; i++)
		buf[i] = msg_byte(0, 4, i);
	b->result = smc_core_send(m->c, buf, len, buf, -1, false);
	return NULL;
}

static void test_blocking_and_timeout(void **state)
{
	struct sim sim;
	struct blocker b = {.sim = &sim};
	pthread_t th;
	uint8_t big[65];

	(void)state;
	sim_init(&sim, 2, 4, 64, 32, 4);
	assert_int_equal(smc_core_send(sim.m[0].c, big, 65, NULL, -1, false),
			 -EMSGSIZE);
	for (int i = 0; i < 4; i++)
		assert_int_equal(sim_try_send(&sim, 0), 0);
	/* Nothing has moved: the window is full. */
	assert_int_equal(sim_try_send(&sim, 0), -EAGAIN);
	uint8_t one = msg_byte(0, 4, 0);
	assert_int_equal(smc_core_send(sim.m[0].c, &one, 1, NULL, 30, false),
			 -ETIMEDOUT);
	pthread_create(&th, NULL, blocking_send, &b);
	usleep(20000);
	/* The sender blocks until the others have released. */
	sim_drain(&sim);
	pthread_join(th, NULL);
	assert_int_equal(b.result, 0);
	sim.m[0].sent++;
	sim.m[0].leases_out++;
	sim_drain(&sim);
	check_agreement(&sim, 5);
	sim_fini(&sim);
}

/* Payloads from outside the region are copied into a lease first, counted
 * apart; the lease comes back like any sent payload; oversized payloads and
 * failed leases are refused with nothing sent. */
static void test_copy_path(void **state)
{
	struct sim sim;
	struct smc_stats st;
	uint8_t big[129], src[128];

	(void)state;
	sim_init(&sim, 3, 8, 128, 32, 2);
	memset(big, 0, sizeof(big));
	assert_int_equal(smc_core_send_copy(sim.m[1].c, big, 129, -1),
			 -EMSGSIZE);
	fail_leases = true;
	assert_int_equal(smc_core_send_copy(sim.m[1].c, src, 10, 0), -ENOMEM);
	fail_leases = false;
	for (uint64_t k = 0; k < 300; k++) {
		uint32_t len = msg_len(1, k, 128);

		for (uint32_t i = 0; i < len; i++)
			src[i] = msg_byte(1, k, i);
		for (int guard = 0;; guard++) {
			int r = smc_core_send_copy(sim.m[1].c, src, len, 0);

			assert_true(guard < 100000);
			if (r == 0)
				break;
			assert_int_equal(r, -EAGAIN);
			sim_step(&sim);
		}
		/* The source is the caller's again at once. */
		memset(src, 0xee, sizeof(src));
		sim.m[1].sent++;
		sim_step(&sim);
	}
	sim_drain(&sim);
	for (uint32_t j = 0; j < 3; j++) {
		assert_int_equal(sim.m[j].bad, 0);
		assert_int_equal(sim.m[j].delivered, 300);
		assert_int_equal(sim.m[j].hash, sim.m[0].hash);
		assert_int_equal(sim.m[j].leases_out, 0);
	}
	smc_core_stats(sim.m[1].c, &st);
	assert_int_equal(st.sends, 300);
	/* Zero-length payloads need no copy. */
	assert_true(st.sends_copied < 300 && st.sends_copied > 250);
	assert_int_equal(st.payload_copies, st.sends_copied);
	sim_fini(&sim);
}

/* A send whose commit step refuses leaves no trace: the slot is taken
 * back, nothing is sent, and the next send takes the same slot. */
static void test_commit_refused(void **state)
{
	struct sim sim;
	uint8_t bad[4] = {0xff, 1, 2, 3};
	struct smc_stats st;

	(void)state;
	sim_init(&sim, 3, 4, 64, 16, 2);
	refused_cookie = bad;
	assert_int_equal(sim_try_send(&sim, 0), 0);
	assert_int_equal(smc_core_send(sim.m[0].c, bad, 4, bad, 0, false),
			 -EBUSY);
	for (int i = 1; i < 40; i++) {
		if (i % 3 == 0)
			sim_drain(&sim);
		int r = smc_core_send(sim.m[0].c, bad, 4, bad, 0, false);

		assert_true(r == -EBUSY || r == -EAGAIN);
		while (sim_try_send(&sim, 0) == -EAGAIN)
			sim_drain(&sim);
	}
	sim_drain(&sim);
	check_agreement(&sim, 40);
	smc_core_stats(sim.m[0].c, &st);
	assert_int_equal(st.sends, 40);
	sim_fini(&sim);
}

/* A group of one delivers its own messages at once. */
static void test_single_member(void **state)
{
	struct sim sim;

	(void)state;
	sim_init(&sim, 1, 4, 32, 32, 1);
	for (int i = 0; i < 50; i++) {
		assert_int_equal(sim_try_send(&sim, 0), 0);
		sim_progress(&sim, 0);
	}
	check_agreement(&sim, 50);
	sim_fini(&sim);
}

/* smc_core_take_own() hands the member's own messages over without the
 * core's lock held, so that what it hands them to may call the core: the
 * group's send_failed upcall (run from it when a member stops) may release
 * a delivery it kept or read the statistics. Each call here has another
 * thread read the core's statistics and waits up to 2 s for it. */
struct take_ctx {
	struct smc_core *c;
	struct member *m;
	unsigned calls, blocked;
	uint64_t rounds[8];
	pthread_t th[8];
};

static void *stats_reader(void *arg)
{
	struct smc_stats st;

	smc_core_stats(arg, &st);
	return NULL;
}

static void take_reads_stats(void *arg, const void *payload, uint32_t len,
			     void *cookie, uint8_t kind, uint64_t round)
{
	struct take_ctx *t = arg;
	struct timespec ts;

	(void)payload;
	(void)len;
	(void)kind;
	assert_true(t->calls < 8);
	t->rounds[t->calls] = round;
	assert_int_equal(pthread_create(&t->th[t->calls], NULL, stats_reader,
					t->c), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 2;
	if (pthread_timedjoin_np(t->th[t->calls], NULL, &ts))
		t->blocked++;
	else
		t->th[t->calls] = 0;
	/* The payload is the caller's now (payload_done will not come). */
	free(cookie);
	t->m->leases_out--;
	t->calls++;
}

static void test_take_own_unlocked(void **state)
{
	struct sim sim;
	struct take_ctx t = { 0 };

	(void)state;
	sim_init(&sim, 2, 8, 64, 16, 2);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sim_try_send(&sim, 0), 0);
	smc_core_wedge(sim.m[0].c);
	t.c = sim.m[0].c;
	t.m = &sim.m[0];
	smc_core_take_own(sim.m[0].c, take_reads_stats, &t);
	for (unsigned i = 0; i < t.calls; i++)
		if (t.th[i])
			pthread_join(t.th[i], NULL);
	assert_int_equal(t.calls, 3);
	assert_int_equal(t.blocked, 0);
	/* In send order. */
	assert_true(t.rounds[0] < t.rounds[1] && t.rounds[1] < t.rounds[2]);
	sim_fini(&sim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_all_send),
	    cmocka_unit_test(test_full_send_queues),
	    cmocka_unit_test(test_one_sender_nulls),
	    cmocka_unit_test(test_lazy_rows_withheld),
	    cmocka_unit_test(test_holding_receiver),
	    cmocka_unit_test(test_blocking_and_timeout),
	    cmocka_unit_test(test_copy_path),
	    cmocka_unit_test(test_commit_refused),
	    cmocka_unit_test(test_single_member),
	    cmocka_unit_test(test_take_own_unlocked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
