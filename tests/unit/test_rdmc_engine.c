/*
 * test_rdmc_engine.c - the RDMC engine (rdmc/engine.c, the real code)
 * between members in one process, over a transport model that delivers
 * what they post in an order drawn from a seed, and kills members.
 *
 * The model stands in for the queue pairs below the engine: a FIFO per
 * (poster, peer) pair, as a reliable connection keeps its requests in
 * order, interleaved at random with the other pairs and with each
 * member's completion handling. A block write copies its bytes (read from
 * the writer's memory when it lands, as a NIC does) to the address the
 * READY granted; a SEND lands in a posted receive. Killing a member
 * flushes every request of the survivors to it and every receive they
 * posted for it, the way a disconnected queue pair does; its own
 * requests still on the wire may land or not. Posts fail now and then as
 * a full send queue makes them fail.
 *
 * What each schedule checks:
 *  - a block write goes only into a buffer its receiver granted (READY)
 *    and has not given back since: the receiver's allocator never hands
 *    out memory a peer may still write (alloc_release and alloc_deliver
 *    are wrapped to watch the engine give buffers up);
 *  - every delivered message holds exactly the bytes its sender wrote, and
 *    a sender's buffer is unchanged when the engine hands it back;
 *  - with no death, every message a member could lease a buffer for is
 *    delivered at every member and becomes stable everywhere (the sent
 *    callback with status 0), or is cancelled everywhere.
 *
 * TEST_RDMC_SEEDS sets the number of schedules (default 2000), from
 * TEST_RDMC_FIRST (1); TEST_RDMC_ALL prints every failing seed (else the
 * first 5), TEST_RDMC_DUMP what each member holds after one, and
 * TEST_RDMC_TRACE every post, delivery and expect.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <squall/alloc.h>
#include <squall/rdma.h>
#include <squall/rdmc.h>
#include <squall/wire.h>

#include "rdmc/plan.h"

#define MAXM 5
#define MAXMSG 8          /* messages per sender */
#define BLOCK 1024u
#define REGION (2u << 20)

/* ---- the transport model ---------------------------------------------------- */

struct rdma_sq_node {
	unsigned idx;
};

struct rdma_sq_mr {
	uint32_t rkey;
};

enum { OP_WRITE, OP_SEND };

struct op {
	struct op *next;
	int kind;
	unsigned src, dst;
	uint64_t wr_id;
	const void *from;       /* writer's memory, read when it lands */
	uint32_t len;
	uint64_t raddr;
	uint32_t imm;
	int grant;              /* OP_WRITE: the grant it writes into */
};

struct recv {
	struct recv *next;
	void *ptr;
	uint32_t len;
	uint64_t wr_id;
};

struct wcq {
	struct rdma_sq_wc wc;
	struct wcq *next;
};

struct grant {
	unsigned owner;
	uint64_t addr, len;
	bool revoked;
};

struct msg {
	uint64_t id;
	size_t size;
	struct buf_desc d;
	bool sent, sent_ok, cancelled;
	bool got[MAXM], stable[MAXM], failed[MAXM];
};

struct member {
	struct rdma_sq_node node;
	struct alloc *a;
	struct rdmc_engine *e;
	struct rdmc_group *g;
	bool dead, wedged;
	bool knows_dead[MAXM];  /* a failed completion of that peer came */
	struct wcq *wc_head, **wc_tail;
	unsigned nwc;
	struct recv *rq[MAXM], **rq_tail[MAXM];
	struct msg m[MAXMSG];
	unsigned nmsg, next_send;
	bool expect_due[MAXM][MAXMSG]; /* receiver side: announced, not yet
					  expected */
};

static struct world {
	uint64_t rng;
	unsigned n;
	struct member mb[MAXM];
	struct op *ch_head[MAXM][MAXM], **ch_tail[MAXM][MAXM];
	unsigned nch[MAXM][MAXM];
	struct grant *grants;
	unsigned ngrants, grants_cap;
	unsigned deaths;
	unsigned kills_left;    /* deaths still to come, the first at step */
	unsigned kill_at, steps;
	bool disc_due[MAXM][MAXM];      /* [x][v]: v died, x not told yet */
	bool disconnected[MAXM][MAXM];
	char violation[512];
	bool cut;               /* the run is being torn down: no checks */
	bool faults;            /* set up: leases may fail */
} W;

static struct rdma_sq_mr grant_mr = { 0x5a5a };
static bool trace;              /* TEST_RDMC_TRACE, read once */

static uint64_t rnd(void)
{
	uint64_t x = (W.rng += 0x9e3779b97f4a7c15ull);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static unsigned below(unsigned n)
{
	return (unsigned)(rnd() % n);
}

static void violate(const char *fmt, ...)
{
	va_list ap;

	if (W.violation[0] || W.cut)
		return;
	va_start(ap, fmt);
	vsnprintf(W.violation, sizeof(W.violation), fmt, ap);
	va_end(ap);
}

static struct member *by_alloc(const struct alloc *a)
{
	for (unsigned i = 0; i < W.n; i++)
		if (W.mb[i].a == a)
			return &W.mb[i];
	return NULL;
}

static void revoke(struct alloc *a, const struct buf_desc *d)
{
	struct member *m = by_alloc(a);
	uint64_t lo = (uint64_t)(uintptr_t)d->ptr, hi = lo + d->len;

	if (!m)
		return;
	for (unsigned i = 0; i < W.ngrants; i++) {
		struct grant *g = &W.grants[i];

		if (g->owner == m->node.idx && !g->revoked &&
		    g->addr < hi && lo < g->addr + g->len)
			g->revoked = true;
	}
}

int __real_alloc_release(struct alloc *a, const struct buf_desc *d);
int __wrap_alloc_release(struct alloc *a, const struct buf_desc *d);
int __real_alloc_deliver(struct alloc *a, const struct buf_desc *d);
int __wrap_alloc_deliver(struct alloc *a, const struct buf_desc *d);

int __real_alloc_lease(struct alloc *a, size_t n, const size_t *sizes,
		       struct buf_desc *out);
int __wrap_alloc_lease(struct alloc *a, size_t n, const size_t *sizes,
		       struct buf_desc *out);

/* The engine's leases fail now and then, as in a full region: a receive
 * buffer (the receiver refuses the message) or a control message's (it
 * waits in the engine's outbox). The test's own leases call the real
 * one. */
int __wrap_alloc_lease(struct alloc *a, size_t n, const size_t *sizes,
		       struct buf_desc *out)
{
	if (W.faults && n == 1 && below(100) < (sizes[0] > RDMC_CTL_MAX ? 6 : 2))
		return -ENOMEM;
	return __real_alloc_lease(a, n, sizes, out);
}

int __wrap_alloc_release(struct alloc *a, const struct buf_desc *d)
{
	revoke(a, d);
	return __real_alloc_release(a, d);
}

int __wrap_alloc_deliver(struct alloc *a, const struct buf_desc *d)
{
	revoke(a, d);
	return __real_alloc_deliver(a, d);
}

static void push_wc(unsigned at, const struct rdma_sq_wc *wc)
{
	struct member *m = &W.mb[at];
	struct wcq *q = calloc(1, sizeof(*q));

	assert_non_null(q);
	q->wc = *wc;
	*m->wc_tail = q;
	m->wc_tail = &q->next;
	m->nwc++;
}

static void flush_wc(unsigned at, unsigned peer, uint64_t wr_id,
		     enum rdma_sq_opcode op)
{
	struct rdma_sq_wc wc = {
		.wr_id = wr_id, .peer = peer, .opcode = op,
		.status = -ECONNRESET, .ibv_status = 5,
		.status_text = "Work Request Flushed Error",
	};

	push_wc(at, &wc);
}

static int post(struct rdma_sq_node *node, uint32_t peer, struct op *o,
		struct squall_error *err)
{
	unsigned s = node->idx;

	if (peer >= W.n || peer == s)
		return squall_error_set(err, -EINVAL, "no such peer %u", peer);
	if (W.mb[s].knows_dead[peer])
		return squall_error_set(err, -ENOTCONN, "member %u is not "
					"connected", peer);
	if (W.faults && below(100) < 3)
		return squall_error_set(err, -ENOMEM, "send queue full");
	o = memcpy(malloc(sizeof(*o)), o, sizeof(*o));
	o->src = s;
	o->dst = peer;
	o->next = NULL;
	if (W.disconnected[s][peer]) {
		/* The queue pair is in error: the request flushes. */
		flush_wc(s, peer, o->wr_id, o->kind == OP_WRITE ?
			 RDMA_SQ_OP_WRITE_IMM : RDMA_SQ_OP_SEND);
		free(o);
		return 0;
	}
	*W.ch_tail[s][peer] = o;
	W.ch_tail[s][peer] = &o->next;
	W.nch[s][peer]++;
	return 0;
}

/* Windows (rdmc_engine_options.windows) are exercised over real verbs
 * (tests/vm); the engine here runs without them. */
int rdma_sq_window_open(struct rdma_sq_node *node, uint32_t peer, void *ptr,
			size_t len, struct rdma_sq_window **out,
			struct squall_error *err)
{
	(void)node; (void)peer; (void)ptr; (void)len; (void)out;
	return squall_error_set(err, -ENOSYS, "no windows in this test");
}

uint32_t rdma_sq_window_rkey(const struct rdma_sq_window *w)
{
	(void)w;
	return 0;
}

int rdma_sq_window_close(struct rdma_sq_node *node, struct rdma_sq_window *w)
{
	(void)node; (void)w;
	return 0;
}

int rdma_sq_write_imm(struct rdma_sq_node *node, uint32_t peer,
		      const struct rdma_sq_sge *sg, int nsge,
		      uint64_t remote_addr, uint32_t rkey, uint32_t imm,
		      uint64_t wr_id, unsigned flags, struct squall_error *err)
{
	struct op o = { .kind = OP_WRITE, .wr_id = wr_id, .raddr = remote_addr,
			.imm = imm, .grant = -1 };

	(void)flags;
	assert_int_equal(nsge, 1);
	assert_int_equal(rkey, grant_mr.rkey);
	o.from = sg[0].ptr;
	o.len = sg[0].len;
	/* The newest grant of that peer covering the target. */
	for (unsigned i = W.ngrants; i-- > 0;) {
		struct grant *g = &W.grants[i];

		if (peer < W.n && g->owner == peer && g->addr <= remote_addr &&
		    remote_addr + o.len <= g->addr + g->len) {
			o.grant = (int)i;
			break;
		}
	}
	if (peer < W.n && !W.mb[peer].dead &&
	    (o.grant < 0 || W.grants[o.grant].revoked))
		violate("member %u posts a block write of %u bytes to member "
			"%u at %#" PRIx64 ", memory that member %s", node->idx,
			o.len, peer, remote_addr, o.grant < 0 ? "never granted" :
			"gave back");
	return post(node, peer, &o, err);
}

int rdma_sq_send(struct rdma_sq_node *node, uint32_t peer,
		 const struct rdma_sq_sge *sg, int nsge, uint64_t wr_id,
		 unsigned flags, struct squall_error *err)
{
	struct op o = { .kind = OP_SEND, .wr_id = wr_id, .grant = -1 };
	struct rdmc_ctl c;
	int r;

	(void)flags;
	assert_int_equal(nsge, 1);
	o.from = sg[0].ptr;
	o.len = sg[0].len;
	r = post(node, peer, &o, err);
	if (trace) {
		struct rdmc_ctl t = { 0 };

		rdmc_ctl_decode(o.from, o.len, &t);
		printf("post %u->%u type %u flags %#x msg %#lx -> %d\n", node->idx,
		       peer, t.type, t.flags, (unsigned long)t.msg_id, r);
	}
	/* A READY that went out grants its buffer to its peer. */
	if (!r && rdmc_ctl_decode(sg[0].ptr, sg[0].len, &c) == 0 &&
	    c.type == WIRE_MSG_RDMC_READY && c.status == 0) {
		if (W.ngrants == W.grants_cap) {
			W.grants_cap = W.grants_cap ? 2 * W.grants_cap : 256;
			W.grants = realloc(W.grants, W.grants_cap * sizeof(*W.grants));
			assert_non_null(W.grants);
		}
		W.grants[W.ngrants++] = (struct grant){ node->idx, c.addr, c.len,
							false };
	}
	return r;
}

int rdma_sq_post_recv(struct rdma_sq_node *node, uint32_t peer,
		      const struct rdma_sq_sge *sg, int nsge, uint64_t wr_id,
		      struct squall_error *err)
{
	struct member *m = &W.mb[node->idx];
	struct recv *r;

	assert_int_equal(nsge, 1);
	if (peer >= W.n || m->knows_dead[peer])
		return squall_error_set(err, -ENOTCONN, "member %u is not "
					"connected", peer);
	if (W.disconnected[node->idx][peer]) {
		flush_wc(node->idx, peer, wr_id, RDMA_SQ_OP_RECV);
		return 0;
	}
	r = calloc(1, sizeof(*r));
	assert_non_null(r);
	*r = (struct recv){ NULL, sg[0].ptr, sg[0].len, wr_id };
	*m->rq_tail[peer] = r;
	m->rq_tail[peer] = &r->next;
	return 0;
}

uint32_t rdma_sq_my_id(const struct rdma_sq_node *node)
{
	return node->idx;
}

uint32_t rdma_sq_mr_rkey(const struct rdma_sq_mr *mr)
{
	return mr->rkey;
}

/* The engine's own polling loop (rdmc_engine_poll) is not used here:
 * the test hands each completion to rdmc_engine_handle_wc itself. */
int rdma_sq_poll(struct rdma_sq_node *node, struct rdma_sq_wc *out, int max)
{
	(void)node;
	(void)out;
	(void)max;
	return 0;
}

int rdma_sq_wait(struct rdma_sq_node *node, int timeout_ms)
{
	(void)node;
	(void)timeout_ms;
	return -ETIMEDOUT;
}

/* Whether the oldest request from s to d can land now: the receiver
 * must have a receive posted for it (without one the queue pair's
 * receiver-not-ready retries, set to retry for ever, hold it back). */
static bool deliverable(unsigned s, unsigned d)
{
	return W.nch[s][d] && !W.mb[d].dead && W.mb[d].rq[s];
}

/* Land the oldest request from s to d. */
static void deliver(unsigned s, unsigned d)
{
	struct op *o = W.ch_head[s][d];
	struct member *dm = &W.mb[d];
	struct recv *r = dm->rq[s];
	struct rdma_sq_wc wc = { .peer = s, .status_text = "success" };

	if (trace) {
		struct rdmc_ctl c = { 0 };

		if (o->kind == OP_SEND)
			rdmc_ctl_decode(o->from, o->len, &c);
		printf("deliver %u->%u kind %d len %u type %u flags %#x msg %#lx st %d\n",
		       s, d, o->kind, o->len, c.type, c.flags,
		       (unsigned long)c.msg_id, c.status);
	}
	W.ch_head[s][d] = o->next;
	if (!o->next)
		W.ch_tail[s][d] = &W.ch_head[s][d];
	W.nch[s][d]--;

	assert_non_null(r); /* deliverable() */
	dm->rq[s] = r->next;
	if (!r->next)
		dm->rq_tail[s] = &dm->rq[s];
	if (o->kind == OP_WRITE) {
		if (o->grant >= 0 && W.grants[o->grant].revoked)
			violate("member %u's block write of %u bytes lands in "
				"member %u's buffer at %#" PRIx64 " after that "
				"member gave it back", s, o->len, d, o->raddr);
		memcpy((void *)(uintptr_t)o->raddr, o->from, o->len);
		wc.opcode = RDMA_SQ_OP_RECV_IMM;
		wc.imm = o->imm;
		wc.byte_len = o->len;
	} else {
		assert_true(o->len <= r->len);
		memcpy(r->ptr, o->from, o->len);
		wc.opcode = RDMA_SQ_OP_RECV;
		wc.byte_len = o->len;
	}
	wc.wr_id = r->wr_id;
	free(r);
	push_wc(d, &wc);
	/* The writer's completion. */
	wc = (struct rdma_sq_wc){ .wr_id = o->wr_id, .peer = d,
				  .opcode = o->kind == OP_WRITE ?
				  RDMA_SQ_OP_WRITE_IMM : RDMA_SQ_OP_SEND,
				  .status_text = "success" };
	if (!W.mb[s].dead)
		push_wc(s, &wc);
	free(o);
}

/* v's process is gone: what it had on the wire may still land, until
 * each survivor's connection to it breaks (disconnect). */
static void kill_member(unsigned v)
{
	W.mb[v].dead = true;
	W.deaths++;
	for (unsigned x = 0; x < W.n; x++)
		if (x != v && !W.mb[x].dead)
			W.disc_due[x][v] = true;
}

/* x's queue pair to the dead v goes to the error state: nothing of v's
 * lands at x any more, and x's requests to v and its receives for v
 * flush. */
static void disconnect(unsigned x, unsigned v)
{
	struct op *o, *next;
	struct recv *r, *rn;

	W.disc_due[x][v] = false;
	W.disconnected[x][v] = true;
	for (o = W.ch_head[x][v]; o; o = next) {
		next = o->next;
		flush_wc(x, v, o->wr_id, o->kind == OP_WRITE ?
			 RDMA_SQ_OP_WRITE_IMM : RDMA_SQ_OP_SEND);
		free(o);
	}
	W.ch_head[x][v] = NULL;
	W.ch_tail[x][v] = &W.ch_head[x][v];
	W.nch[x][v] = 0;
	for (o = W.ch_head[v][x]; o; o = next) {
		next = o->next;
		free(o);
	}
	W.ch_head[v][x] = NULL;
	W.ch_tail[v][x] = &W.ch_head[v][x];
	W.nch[v][x] = 0;
	for (r = W.mb[x].rq[v]; r; r = rn) {
		rn = r->next;
		flush_wc(x, v, r->wr_id, RDMA_SQ_OP_RECV);
		free(r);
	}
	W.mb[x].rq[v] = NULL;
	W.mb[x].rq_tail[v] = &W.mb[x].rq[v];
}

/* ---- the application -------------------------------------------------------- */

static uint8_t pattern(uint64_t id, size_t i)
{
	return (uint8_t)((id * 0x9e3779b1u) >> (8 * (i % 4)) ^ i ^ (i >> 8));
}

static bool intact(const void *p, size_t len, uint64_t id)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i] != pattern(id, i))
			return false;
	return true;
}

static struct msg *find_msg(uint64_t id)
{
	unsigned s = (unsigned)(id >> 8), k = (unsigned)(id & 0xff);

	if (s >= W.n || k >= W.mb[s].nmsg)
		return NULL;
	return &W.mb[s].m[k];
}

static void on_received(void *arg, struct rdmc_group *g, uint64_t id,
			uint32_t sender, const struct buf_desc *d, int status,
			const char *why)
{
	struct member *m = arg;
	struct msg *x = find_msg(id);

	(void)g;
	(void)why;
	assert_non_null(x);
	assert_int_equal(sender, id >> 8);
	if (status) {
		x->failed[m->node.idx] = true;
		return;
	}
	if (x->got[m->node.idx])
		violate("member %u received message %#" PRIx64 " twice",
			m->node.idx, id);
	x->got[m->node.idx] = true;
	if (d->len != x->size || !intact(d->ptr, d->len, id))
		violate("member %u received message %#" PRIx64 " (%zu bytes) "
			"with bytes its sender did not write", m->node.idx, id,
			x->size);
	alloc_release(m->a, d);
}

static void on_sent(void *arg, struct rdmc_group *g, uint64_t id,
		    const struct buf_desc *d, int status, const char *why)
{
	struct member *m = arg;
	struct msg *x = find_msg(id);

	(void)g;
	(void)why;
	assert_non_null(x);
	if (x->sent)
		violate("member %u: sent callback of %#" PRIx64 " twice",
			m->node.idx, id);
	x->sent = true;
	x->sent_ok = status == 0;
	if (!intact(d->ptr, d->len, id))
		violate("member %u's buffer of message %#" PRIx64 " changed "
			"while the engine held it", m->node.idx, id);
	alloc_complete(m->a, d);
}

static void on_stable(void *arg, struct rdmc_group *g, uint64_t id,
		      uint32_t sender)
{
	struct member *m = arg;
	struct msg *x = find_msg(id);

	(void)g;
	(void)sender;
	assert_non_null(x);
	x->stable[m->node.idx] = true;
}

/* Member s leases, fills and sends its next message; every other member
 * is told of it (the order's announcement) and expects it later. */
static void app_send(unsigned s)
{
	struct member *m = &W.mb[s];
	struct msg *x;
	struct squall_error err;
	int r;

	/* A wedged member sends nothing new (the view is ending). */
	if (m->next_send == m->nmsg || m->wedged)
		return;
	x = &m->m[m->next_send];
	r = __real_alloc_lease(m->a, 1, &x->size, &x->d);
	if (r)
		return; /* no room now: try again later */
	for (size_t i = 0; i < x->size; i++)
		((uint8_t *)x->d.ptr)[i] = pattern(x->id, i);
	r = rdmc_send(m->g, x->id, &x->d, &err);
	if (r == -EBUSY) {
		alloc_release(m->a, &x->d);
		return;
	}
	assert_int_equal(r, 0);
	m->next_send++;
	for (unsigned i = 0; i < W.n; i++)
		if (i != s)
			W.mb[i].expect_due[s][x - m->m] = true;
}

static bool app_expect(unsigned r)
{
	struct member *m = &W.mb[r];
	unsigned cand[MAXM * MAXMSG][2], nc = 0;
	struct squall_error err;

	for (unsigned s = 0; s < W.n; s++)
		for (unsigned k = 0; k < MAXMSG; k++)
			if (m->expect_due[s][k])
				cand[nc][0] = s, cand[nc++][1] = k;
	if (!nc)
		return false;
	nc = below(nc);
	m->expect_due[cand[nc][0]][cand[nc][1]] = false;
	{
		struct msg *x = &W.mb[cand[nc][0]].m[cand[nc][1]];

		/* A refusal (no room) is reported by the received callback
		 * once the sender cancels. */
		int rr = rdmc_expect(m->g, x->id, cand[nc][0], x->size, &err);

		if (trace)
			printf("expect %u %#lx -> %d %s\n", r, (unsigned long)x->id, rr, err.msg);
	}
	return true;
}

/* ---- one schedule ----------------------------------------------------------- */

static void setup(uint64_t seed)
{
	struct rdmc_callbacks cb = { on_received, on_sent, on_stable, NULL };
	struct rdmc_engine_options eo = { .own_recvs = true, .recv_depth = 16,
					  .send_window = 4, .grant_mr = &grant_mr };
	uint32_t ids[MAXM];
	struct squall_error err;

	free(W.grants);
	memset(&W, 0, sizeof(W));
	W.rng = seed * 0x2545f4914f6cdd1dull + 1;
	W.n = 3 + below(MAXM - 2);
	/* Half the schedules see a death, some of them two (the survivors
	 * stay at least two). */
	W.kills_left = below(2) ? 1 + (W.n > 3 && below(3) == 0) : 0;
	W.kill_at = below(1500);
	for (unsigned i = 0; i < W.n; i++) {
		struct member *m = &W.mb[i];
		struct alloc_params p = { .region_size = REGION };

		ids[i] = i;
		m->node.idx = i;
		m->wc_tail = &m->wc_head;
		for (unsigned j = 0; j < MAXM; j++) {
			m->rq_tail[j] = &m->rq[j];
			W.ch_tail[i][j] = &W.ch_head[i][j];
		}
		assert_int_equal(alloc_create(&p, &m->a, &err), 0);
		m->nmsg = 2 + below(MAXMSG - 1);
		for (unsigned k = 0; k < m->nmsg; k++) {
			m->m[k].id = (uint64_t)i << 8 | k;
			m->m[k].size = 1 + below(14 * BLOCK);
		}
	}
	for (unsigned i = 0; i < W.n; i++) {
		struct member *m = &W.mb[i];

		assert_int_equal(rdmc_engine_create(&m->node, m->a, &eo, &m->e,
						    &err), 0);
		cb.arg = m;
		assert_int_equal(rdmc_group_create(m->e, 7, ids, W.n, BLOCK,
						   RDMC_BINOMIAL, &cb, &m->g,
						   &err), 0);
	}
	W.faults = true;
}

/* The view ends: the nodes go first (nothing lands any more), then the
 * engines, then the regions. */
static void teardown(void)
{
	W.cut = true;
	W.faults = false;
	for (unsigned s = 0; s < W.n; s++)
		for (unsigned d = 0; d < W.n; d++)
			while (W.ch_head[s][d]) {
				struct op *o = W.ch_head[s][d];

				W.ch_head[s][d] = o->next;
				free(o);
			}
	for (unsigned i = 0; i < W.n; i++) {
		struct member *m = &W.mb[i];

		for (unsigned j = 0; j < MAXM; j++)
			while (m->rq[j]) {
				struct recv *r = m->rq[j];

				m->rq[j] = r->next;
				free(r);
			}
		while (m->wc_head) {
			struct wcq *q = m->wc_head;

			m->wc_head = q->next;
			free(q);
		}
		rdmc_engine_destroy(m->e);
		alloc_destroy(m->a);
	}
}

static bool step(void)
{
	unsigned live[MAXM], nl = 0, pick;
	unsigned chans[MAXM * MAXM][2], nc = 0;
	unsigned wcs[MAXM], nw = 0;

	for (unsigned i = 0; i < W.n; i++) {
		if (W.mb[i].dead)
			continue;
		live[nl++] = i;
		if (W.mb[i].nwc)
			wcs[nw++] = i;
	}
	for (unsigned s = 0; s < W.n; s++)
		for (unsigned d = 0; d < W.n; d++)
			if (deliverable(s, d))
				chans[nc][0] = s, chans[nc++][1] = d;
	W.steps++;
	if (W.kills_left && W.steps >= W.kill_at) {
		W.kills_left--;
		W.kill_at += below(400);
		kill_member(live[below(nl)]);
		return true;
	}
	pick = below(100);
	if (pick < 8 && W.deaths) {
		unsigned x = live[below(nl)];

		for (unsigned v = 0; v < W.n; v++)
			if (W.disc_due[x][v]) {
				disconnect(x, v);
				return true;
			}
	}
	if (pick < 10 && W.deaths) {
		struct member *m = &W.mb[live[below(nl)]];

		if (!m->wedged) {
			m->wedged = true;
			rdmc_engine_wedge(m->e);
			return true;
		}
	}
	if (pick < 18) {
		app_send(live[below(nl)]);
	} else if (pick < 30) {
		if (app_expect(live[below(nl)]))
			return true;
	} else if (pick < 65 && nc) {
		unsigned c = below(nc);

		deliver(chans[c][0], chans[c][1]);
		return true;
	} else if (nw) {
		struct member *m = &W.mb[wcs[below(nw)]];
		struct wcq *q = m->wc_head;

		m->wc_head = q->next;
		if (!q->next)
			m->wc_tail = &m->wc_head;
		m->nwc--;
		if (q->wc.status)
			m->knows_dead[q->wc.peer] = true;
		assert_int_equal(rdmc_engine_handle_wc(m->e, &q->wc), 1);
		free(q);
		return true;
	}
	{
		struct member *m = &W.mb[live[below(nl)]];
		bool work = false;
		int r = rdmc_engine_progress(m->e, &work);

		if (r)
			violate("member %u's engine broke: %s", m->node.idx,
				rdmc_engine_last_error(m->e));
		if (work)
			return true;
	}
	/* Anything left to do? */
	if (nc || nw)
		return true;
	for (unsigned x = 0; x < W.n; x++)
		for (unsigned v = 0; v < W.n; v++)
			if (W.disc_due[x][v] && !W.mb[x].dead) {
				disconnect(x, v);
				return true;
			}
	for (unsigned i = 0; i < nl; i++) {
		struct member *m = &W.mb[live[i]];

		if (W.deaths && !m->wedged) {
			/* The view change that follows a death wedges every
			 * survivor. */
			m->wedged = true;
			rdmc_engine_wedge(m->e);
			return true;
		}
		if (m->next_send < m->nmsg && !m->wedged)
			return true;
		for (unsigned s = 0; s < W.n; s++)
			for (unsigned k = 0; k < MAXMSG; k++)
				if (m->expect_due[s][k])
					return true;
	}
	/* Quiet: one more progress pass at every member, with no post
	 * failing, for what waits in an outbox. */
	W.faults = false;
	for (unsigned i = 0; i < nl; i++) {
		bool work = false;

		rdmc_engine_progress(W.mb[live[i]].e, &work);
		if (work || W.mb[live[i]].nwc) {
			W.faults = true;
			return true;
		}
	}
	W.faults = true;
	for (unsigned s = 0; s < W.n; s++)
		for (unsigned d = 0; d < W.n; d++)
			if (W.nch[s][d] && !W.mb[d].dead) {
				violate("member %u's requests to member %u wait "
					"for ever: no receive posted", s, d);
				return false;
			}
	return false;
}

/* With no death, every message sent ends everywhere. */
static void check_ends(void)
{
	if (W.deaths)
		return;
	for (unsigned s = 0; s < W.n; s++) {
		struct member *m = &W.mb[s];

		for (unsigned k = 0; k < m->next_send; k++) {
			struct msg *x = &m->m[k];

			if (!x->sent) {
				violate("message %#" PRIx64 " of member %u never "
					"came back to its sender", x->id, s);
				return;
			}
			for (unsigned i = 0; i < W.n; i++) {
				if (i == s)
					continue;
				if (x->sent_ok && !x->got[i])
					violate("message %#" PRIx64 " sent, but "
						"member %u never received it",
						x->id, i);
				if (!x->sent_ok && !x->failed[i] && !x->got[i])
					violate("message %#" PRIx64 " cancelled, "
						"but member %u never heard",
						x->id, i);
				if (!x->stable[i])
					violate("message %#" PRIx64 " never "
						"became stable at member %u",
						x->id, i);
			}
		}
	}
}

/* What each member still holds, after a schedule that did not end. */
static void dump(void)
{
	for (unsigned i = 0; i < W.n; i++) {
		struct member *m = &W.mb[i];

		printf("  member %u%s%s: sent %u of %u, %u completions queued\n",
		       i, m->dead ? " (dead)" : "", m->wedged ? " (wedged)" : "",
		       m->next_send, m->nmsg, m->nwc);
		for (unsigned k = 0; k < m->next_send; k++) {
			struct msg *x = &m->m[k];

			printf("    %#" PRIx64 " %zu bytes: sent=%d ok=%d got/stable/"
			       "failed:", x->id, x->size, x->sent, x->sent_ok);
			for (unsigned j = 0; j < W.n; j++)
				printf(" %d%d%d", x->got[j], x->stable[j],
				       x->failed[j]);
			printf("\n");
		}
	}
}

/* Run one schedule; "" or what went wrong. */
static const char *run(uint64_t seed, unsigned *steps)
{
	static char out[600];
	unsigned k = 0;

	setup(seed);
	while (step() && !W.violation[0])
		if (++k > 400000) {
			violate("no end after %u steps", k);
			break;
		}
	if (!W.violation[0])
		check_ends();
	if (W.violation[0] && getenv("TEST_RDMC_DUMP"))
		dump();
	snprintf(out, sizeof(out), "%s", W.violation);
	teardown();
	*steps = k;
	return out;
}

static void test_schedules(void **state)
{
	const char *env = getenv("TEST_RDMC_SEEDS");
	unsigned seeds = env ? (unsigned)strtoul(env, NULL, 0) : 2000;
	const char *first = getenv("TEST_RDMC_FIRST");
	unsigned s0 = first ? (unsigned)strtoul(first, NULL, 0) : 1;
	unsigned bad = 0, with_deaths = 0;
	uint64_t steps = 0;

	(void)state;
	trace = getenv("TEST_RDMC_TRACE") != NULL;

	for (unsigned s = s0; s < s0 + seeds; s++) {
		unsigned k;
		const char *v = run(s, &k);

		steps += k;
		with_deaths += W.deaths != 0;
		if (v[0]) {
			if (bad++ < 5 || getenv("TEST_RDMC_ALL"))
				printf("seed %u (%u members, %u deaths): %s\n", s,
				       W.n, W.deaths, v);
		}
	}
	printf("rdmc engine: %u schedules (%u with deaths), %" PRIu64
	       " steps, %u violations\n", seeds, with_deaths, steps, bad);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schedules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
