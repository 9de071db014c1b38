/*
 * engine.c - RDMC transfers over the rdma layer: READY, blocks, DONE.
 *
 * Each member runs its own plan (rdmc/plan.c): the block writes it must
 * post, in schedule order. A write goes out as soon as three things hold:
 * the member has the block (the sender has them all; a relay learns of each
 * arrival from the immediate of the write that brought it), the target has
 * said where its buffer is (READY), and fewer than send_window writes of
 * the transfer are in flight. Writes gather straight from the member's own
 * buffer at the block's offset into the target's buffer at the same
 * offset, so a block is never copied, wherever it is in the message.
 * Whatever the number of transfers under way, the block writes in flight
 * to any one member hold at most PEER_BYTES (one block when a block is
 * larger; never more than send_window blocks): they share its queue pair
 * with the SST's pushes and SMC's writes, which wait behind them, and a
 * heartbeat that waits out the suspicion timeout gets a live member
 * suspected. In the Soft-RoCE VM, 8 writes of 1 MB blocks per transfer
 * with many transfers under way held heartbeats back past a 2 s timeout
 * (tests/vm/rdmc_heartbeat3.sh).
 *
 * A transfer lives in one of RDMC_IMM_SLOTS slots of the engine; a
 * receiver's slot number is what writers put in their immediates, so an
 * arriving block finds its transfer by one index. A READY can arrive
 * before the member itself has heard of the transfer (the group layer
 * tells members at different times): it then opens the slot as "pending"
 * and rdmc_send/rdmc_expect later take it over.
 *
 * The sender moves nothing until every receiver has answered READY: if one
 * could not lease its buffer the transfer is cancelled before any block is
 * in flight, so no write can land in a buffer that was given back.
 */
#include <squall/rdmc.h>

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <squall/alloc.h>
#include <squall/rdma.h>
#include <squall/wire.h>

#include "rdma/hook.h"
#include "rdma/tags.h"
#include "rdmc/plan.h"

/* wr_id of RDMC's own posts: tag in the top byte, kind below it, then the
 * kind's data (a slot and its generation, or a buffer's region offset). */
#define WR_TAG SQUALL_WR_TAG_RDMC
#define WR_BLOCK 1ull
#define WR_CTL 2ull
#define WR_RECV 3ull
#define WR_DATA_MASK ((1ull << 52) - 1)

#define DEFAULT_RECV_DEPTH 32u
#define EARLY_MAX 256u
#define DEFAULT_WINDOW 8u
/* Block bytes in flight to one member, every transfer together: many
 * times a link's bandwidth-delay product, and what a push to that member
 * may wait behind. */
#define PEER_BYTES (1u << 20)

enum role {
	ROLE_FREE = 0,
	ROLE_PENDING,   /* READYs arrived, the member has not joined yet */
	ROLE_SEND,
	ROLE_RECV,
	ROLE_DEAD,      /* failed: waiting for its writes to drain */
};

/* What this member knows of another member, per transfer. */
struct mstate {
	uint64_t addr;      /* its buffer (READY) */
	uint64_t len;
	uint32_t rkey;
	uint32_t slot;      /* its slot for our immediates */
	bool ready;         /* READY with status 0 arrived */
	bool answered;      /* sender: READY (any status) arrived */
	bool have;          /* sender: DONE HAVE arrived */
	/* receiver (engine option windows): the window this member writes
	 * our buffer through, closed before the buffer is delivered or
	 * given back */
	struct rdma_sq_window *win;
};

struct xfer {
	enum role role;
	uint32_t gen;
	struct rdmc_group *g;
	uint64_t msg_id;
	unsigned sender;        /* member index of the sender */
	uint64_t size;
	struct buf_desc buf;
	bool leased;            /* receiver: buf is ours to give back */
	struct rdmc_plan plan;
	uint8_t *have;          /* receiver: per block */
	unsigned nhave;
	unsigned cursor;        /* next of plan.sends to post */
	unsigned inflight;
	bool started;           /* sender: every receiver answered OK */
	bool member_done;       /* receiver: received callback ran */
	bool refused;           /* receiver (pending): it could not take the
				   message and said so; the sender's ABORT
				   ends it with a received callback */
	unsigned nanswered, ndone;
	int fail;               /* first failure reported by a receiver */
	unsigned fail_member;
	/* sender, failed with writes still reading its buffer: the sent
	 * callback waits until they are done */
	bool owe_sent;
	/* receiver, told of a cancellation: its acknowledgement waits until
	 * its own writes are done (the sender's word that every receiver
	 * knows then means no block is on its way to anyone) */
	bool owe_aborted;
	/* receiver, failed holding part of the message: the slot and its
	 * buffer stay, since members that write into it may not know yet;
	 * they go when the sender says every receiver knows of the
	 * cancellation, or with the group (after the node: nothing lands) */
	bool held;
	int dead_status;
	char dead_why[200];
	struct mstate *m;       /* per member index */
};

struct rdmc_group {
	struct rdmc_engine *e;
	struct rdmc_group *next;
	uint32_t id;
	unsigned n, me;
	uint32_t *members;
	uint64_t block_size;
	enum rdmc_algorithm alg;
	struct rdmc_callbacks cb;
};

#define ABORTED_MAX 64
#define CANCEL_MAX RDMC_IMM_SLOTS

struct rdmc_engine {
	struct rdma_sq_node *node;
	struct alloc *a;
	struct rdmc_engine_options o;
	bool windows_closed;  /* rdmc_engine_drop_windows ran */
#ifdef SQUALL_TEST_HOOKS
	/* stray_rdmc (rdma/hook.h): the first hop's grant of the last
	 * message this member sent whole */
	struct { bool set; uint32_t peer, rkey; uint64_t addr, len; } stray;
#endif
	uint32_t rkey;          /* granted in READY */
	uint32_t my_id;
	char *base;             /* the allocator's region */
	size_t region_len;
	struct xfer x[RDMC_IMM_SLOTS];
	/* Block writes in flight per member (by member id), every transfer
	 * together: posted, their completion not yet taken. */
	struct peer_load { uint32_t id; unsigned inflight; }
		load[RDMA_SQ_MAX_MEMBERS];
	unsigned nload;
	struct rdmc_group *groups;
	/* own_recvs: the peers whose queue pairs have receives posted */
	uint32_t recv_peers[RDMA_SQ_MAX_MEMBERS];
	unsigned nrecv_peers;
	struct buf_desc recv_bufs[RDMA_SQ_MAX_MEMBERS];
	unsigned ctl_pending;    /* control sends not yet completed */
	/* Control messages that could not be posted yet (the send queue was
	 * full, or no buffer for them): sent in order by
	 * rdmc_engine_progress before any newer one. */
	struct outbox { struct outbox *next; uint32_t peer;
			struct rdmc_ctl c; } *out_head, **out_tail;
	int broken;             /* a control message was lost: the engine
				   cannot go on (rdmc_engine_progress) */
	bool wedged;            /* rdmc_engine_wedge: HAVEs held back */
	/* Control messages for a group this member has not created yet (a
	 * peer created it first): replayed by rdmc_group_create. */
	struct early { uint32_t peer; struct rdmc_ctl c; } early[EARLY_MAX];
	unsigned nearly;
	/* Messages this member saw aborted while it was pending on them:
	 * a READY for one that comes after the ABORT opens no slot (none
	 * would ever close it). A ring of the last ABORTED_MAX. */
	struct aborted { const struct rdmc_group *g; uint64_t msg_id; }
		aborted[ABORTED_MAX];
	unsigned naborted;
	/* Sender: transfers it cancelled, until every receiver acknowledged
	 * the cancellation (RDMC_DONE_ABORTED). Only then does any member
	 * pass the message over (the stable callback), so that none passes
	 * it while another does not know yet and would hold back what
	 * follows in the view change. */
	struct cancel { const struct rdmc_group *g; uint64_t msg_id;
			uint64_t acked; bool reaped; } cancel[CANCEL_MAX];
	struct rdmc_stats st;
	struct squall_error last;
};

static void remember_abort(struct rdmc_engine *e, const struct rdmc_group *g,
			   uint64_t msg_id)
{
	e->aborted[e->naborted++ % ABORTED_MAX] =
		(struct aborted){ g, msg_id };
}

static bool was_aborted(const struct rdmc_engine *e,
			const struct rdmc_group *g, uint64_t msg_id)
{
	unsigned n = e->naborted < ABORTED_MAX ? e->naborted : ABORTED_MAX;

	for (unsigned i = 0; i < n; i++)
		if (e->aborted[i].g == g && e->aborted[i].msg_id == msg_id)
			return true;
	return false;
}

static struct cancel *cancel_find(struct rdmc_engine *e,
				  const struct rdmc_group *g, uint64_t msg_id)
{
	for (unsigned i = 0; i < CANCEL_MAX; i++)
		if (e->cancel[i].g == g && e->cancel[i].msg_id == msg_id)
			return &e->cancel[i];
	return NULL;
}

static uint64_t wr_id(uint64_t kind, uint64_t data)
{
	return WR_TAG << 56 | kind << 52 | (data & WR_DATA_MASK);
}

/* A block write's wr_id: slot, block and the slot's generation (low 20
 * bits: enough to tell a transfer from the one before it in the slot). */
#define GEN_MASK 0xfffffu

static uint64_t block_wr_data(unsigned slot, uint32_t block, uint32_t gen)
{
	return (uint64_t)slot << 44 | (uint64_t)block << 20 | (gen & GEN_MASK);
}

static uint64_t region_off(const struct rdmc_engine *e, const void *p)
{
	return (uint64_t)((const char *)p - e->base);
}

static uint32_t member_id(const struct rdmc_group *g, unsigned idx)
{
	return g->members[idx];
}

static int member_index(const struct rdmc_group *g, uint32_t id)
{
	for (unsigned i = 0; i < g->n; i++)
		if (g->members[i] == id)
			return (int)i;
	return -1;
}

/* Schedule rank of member idx when member `sender` sends, and back. */
static unsigned rank_of(const struct rdmc_group *g, unsigned sender,
			unsigned idx)
{
	return (idx + g->n - sender) % g->n;
}

static unsigned index_of_rank(const struct rdmc_group *g, unsigned sender,
			      unsigned rank)
{
	return (rank + sender) % g->n;
}

static void note(struct rdmc_engine *e, int code, const struct squall_error *err)
{
	squall_error_set(&e->last, code, "%s", err && err->msg[0] ? err->msg :
			 strerror(-code));
}

/* ---- control messages ---------------------------------------------------- */

/* Post one control message: 0, -ENOMEM / -EAGAIN when there is no room
 * now (no buffer, or a full send queue: retry), or the post's error. */
static int ctl_post(struct rdmc_engine *e, uint32_t peer,
		    const struct rdmc_ctl *c)
{
	size_t sz = RDMC_CTL_MAX;
	struct buf_desc d;
	struct squall_error err;
	struct rdma_sq_sge sg;
	int len, ret;

	ret = alloc_lease(e->a, 1, &sz, &d);
	if (ret)
		return ret;
	len = rdmc_ctl_encode(d.ptr, RDMC_CTL_MAX, c);
	assert(len > 0);
	sg = (struct rdma_sq_sge){ d.ptr, (uint32_t)len };
	ret = rdma_sq_send(e->node, peer, &sg, 1, wr_id(WR_CTL, region_off(e, d.ptr)),
			   RDMA_SQ_SIGNALED, &err);
	if (ret) {
		alloc_release(e->a, &d);
		if (ret != -ENOMEM && ret != -EAGAIN)
			note(e, ret, &err);
		return ret;
	}
	e->st.ctl_sent++;
	e->ctl_pending++;
	return 0;
}

/* Send a control message now, or keep it for rdmc_engine_progress: one
 * that cannot be posted yet is never dropped (a lost READY or DONE would
 * stall its transfer for ever), and none overtakes it. */
static int ctl_send(struct rdmc_engine *e, uint32_t peer,
		    const struct rdmc_ctl *c)
{
	struct outbox *o;
	int ret = -EAGAIN;

	if (!e->out_head) {
		ret = ctl_post(e, peer, c);
		if (ret != -ENOMEM && ret != -EAGAIN)
			return ret;
	}
	o = malloc(sizeof(*o));
	if (!o) {
		e->broken = -ENOMEM;
		return squall_error_set(&e->last, -ENOMEM, "rdmc: out of memory "
			"keeping a control message to member %u", peer);
	}
	o->next = NULL;
	o->peer = peer;
	o->c = *c;
	if (!e->out_head)
		e->out_tail = &e->out_head;
	*e->out_tail = o;
	e->out_tail = &o->next;
	e->st.ctl_deferred++;
	return 0;
}

static int send_ready(struct rdmc_engine *e, const struct xfer *x,
		      unsigned slot, uint32_t to, int status)
{
	struct rdmc_ctl c = {
		.type = WIRE_MSG_RDMC_READY, .group = x->g->id,
		.msg_id = x->msg_id, .slot = slot, .status = status,
	};

	if (!status) {
		int i = member_index(x->g, to);

		c.addr = (uint64_t)(uintptr_t)x->buf.ptr;
		/* With windows, a member that does not write here (the sender
		 * outside the plan's sources) gets no key at all. */
		c.rkey = !e->o.windows ? e->rkey :
			 i >= 0 && x->m ? rdma_sq_window_rkey(x->m[i].win) : 0;
		c.len = x->size;
	}
	return ctl_send(e, to, &c);
}

static int send_done_id(struct rdmc_engine *e, const struct rdmc_group *g,
			uint64_t msg_id, uint32_t to, uint16_t flags, int status)
{
	struct rdmc_ctl c = {
		.type = WIRE_MSG_RDMC_DONE, .flags = flags, .group = g->id,
		.msg_id = msg_id, .status = status,
	};

	return ctl_send(e, to, &c);
}

static int send_done(struct rdmc_engine *e, const struct xfer *x, uint32_t to,
		     uint16_t flags, int status)
{
	return send_done_id(e, x->g, x->msg_id, to, flags, status);
}

/* ---- transfer slots ------------------------------------------------------- */

static struct xfer *find(struct rdmc_engine *e, const struct rdmc_group *g,
			 uint64_t msg_id)
{
	for (unsigned i = 0; i < RDMC_IMM_SLOTS; i++) {
		struct xfer *x = &e->x[i];

		if (x->role != ROLE_FREE && x->g == g && x->msg_id == msg_id)
			return x;
	}
	return NULL;
}

static struct xfer *open_slot(struct rdmc_engine *e, struct rdmc_group *g,
			      uint64_t msg_id)
{
	for (unsigned i = 0; i < RDMC_IMM_SLOTS; i++) {
		struct xfer *x = &e->x[i];

		if (x->role != ROLE_FREE)
			continue;
		x->m = calloc(g->n, sizeof(*x->m));
		if (!x->m)
			return NULL;
		x->role = ROLE_PENDING;
		x->g = g;
		x->msg_id = msg_id;
		return x;
	}
	return NULL;
}

/* Receiver: kill the keys of the windows the writers of x had (their
 * writes fail from now on), before its buffer goes anywhere. */
static void close_windows(struct rdmc_engine *e, struct xfer *x)
{
	if (!x->m || !x->g)
		return;
	for (unsigned i = 0; i < x->g->n; i++)
		if (x->m[i].win) {
			rdma_sq_window_close(e->node, x->m[i].win);
			x->m[i].win = NULL;
			e->st.windows_closed++;
		}
}

static void close_slot(struct xfer *x)
{
	uint32_t gen = x->gen + 1;

	assert(x->inflight == 0);
	if (x->g)
		close_windows(x->g->e, x);
	rdmc_plan_free(&x->plan);
	free(x->have);
	free(x->m);
	memset(x, 0, sizeof(*x));
	x->gen = gen; /* completions of the old transfer no longer match */
}

static unsigned slot_of(const struct rdmc_engine *e, const struct xfer *x)
{
	return (unsigned)(x - e->x);
}

/* ---- moving blocks -------------------------------------------------------- */

static void fail_xfer(struct rdmc_engine *e, struct xfer *x, int status,
		      const char *why);

static bool holds(const struct xfer *x, uint32_t block)
{
	return x->role == ROLE_SEND || x->have[block];
}

/* The count of block writes in flight to member id (a new entry at 0:
 * at most RDMA_SQ_MAX_MEMBERS members write through one node). */
static unsigned *load_of(struct rdmc_engine *e, uint32_t id)
{
	for (unsigned i = 0; i < e->nload; i++)
		if (e->load[i].id == id)
			return &e->load[i].inflight;
	assert(e->nload < RDMA_SQ_MAX_MEMBERS);
	e->load[e->nload] = (struct peer_load){ id, 0 };
	return &e->load[e->nload++].inflight;
}

/* Post every write of the plan that may go now, in plan order. */
static void pump(struct rdmc_engine *e, struct xfer *x)
{
	struct rdmc_group *g = x->g;
	unsigned window = e->o.send_window;
	uint64_t per_peer;

	if (x->role == ROLE_SEND ? !x->started : x->role != ROLE_RECV)
		return;
	/* This group's blocks to one member: PEER_BYTES' worth, at least 1. */
	per_peer = PEER_BYTES / g->block_size;
	if (per_peer < 1)
		per_peer = 1;
	if (per_peer > window)
		per_peer = window;
	while (x->cursor < x->plan.nsends && x->inflight < window) {
		struct rdmc_send_op op = x->plan.sends[x->cursor];
		unsigned t = index_of_rank(g, x->sender, op.peer);
		struct mstate *m = &x->m[t];
		uint64_t off, len;
		struct rdma_sq_sge sg;
		struct squall_error err;
		unsigned *load;
		uint64_t raddr;
		uint32_t rkey;
		int ret;

		if (!holds(x, op.block) || !m->ready)
			return;
		/* That member's queue pair carries enough blocks already:
		 * the completion of one of them pumps again (pump_all). */
		load = load_of(e, member_id(g, t));
		if (*load >= per_peer)
			return;
		rdmc_block_span(x->size, g->block_size, op.block, &off, &len);
		if (m->len < x->size) {
			char why[160];

			snprintf(why, sizeof(why), "member %u granted %" PRIu64
				 " bytes for a %" PRIu64 "-byte message",
				 member_id(g, t), m->len, x->size);
			fail_xfer(e, x, -EPROTO, why);
			return;
		}
		raddr = m->addr + off;
		rkey = m->rkey;
#ifdef SQUALL_TEST_HOOKS
		if (e->stray.set && e->stray.peer == member_id(g, t) &&
		    squall_hook_fail("stray_rdmc")) {
			raddr = e->stray.addr;
			rkey = e->stray.rkey;
			if (len > e->stray.len)
				len = e->stray.len;
		}
#endif
		sg = (struct rdma_sq_sge){ (char *)x->buf.ptr + off, (uint32_t)len };
		ret = rdma_sq_write_imm(e->node, member_id(g, t), &sg, 1,
					raddr, rkey,
					rdmc_imm_encode(m->slot, op.block),
					wr_id(WR_BLOCK, block_wr_data(slot_of(e, x),
								      op.block, x->gen)),
					RDMA_SQ_SIGNALED, &err);
		if (ret == -ENOMEM)
			return; /* send queue full: a completion will pump again */
		if (ret) {
			note(e, ret, &err);
			fail_xfer(e, x, ret, err.msg);
			return;
		}
		x->cursor++;
		x->inflight++;
		(*load)++;
	}
}

/* Sender: every receiver answered; start, or cancel the transfer. */
static void sender_check(struct rdmc_engine *e, struct xfer *x)
{
	struct rdmc_group *g = x->g;

	if (x->role != ROLE_SEND || x->started || x->nanswered < g->n - 1)
		return;
	if (x->fail) {
		char why[200];

		snprintf(why, sizeof(why), "member %u could not lease a %" PRIu64
			 "-byte buffer for message %" PRIu64 ": %s",
			 member_id(g, x->fail_member), x->size, x->msg_id,
			 strerror(-x->fail));
		fail_xfer(e, x, x->fail, why);
		return;
	}
	x->started = true;
}

static void check_done(struct rdmc_engine *e, struct xfer *x)
{
	struct rdmc_group *g = x->g;

	if (x->inflight || x->cursor < x->plan.nsends)
		return;
	if (x->role == ROLE_SEND && x->started && x->ndone == g->n - 1) {
		struct buf_desc d = x->buf;
		uint64_t id = x->msg_id;

		for (unsigned i = 0; i < g->n; i++)
			if (i != g->me)
				send_done(e, x, member_id(g, i), RDMC_DONE_ALL, 0);
#ifdef SQUALL_TEST_HOOKS
		if (x->plan.nsends) {
			unsigned t = index_of_rank(g, x->sender,
						   x->plan.sends[0].peer);

			e->stray.set = true;
			e->stray.peer = member_id(g, t);
			e->stray.addr = x->m[t].addr;
			e->stray.rkey = x->m[t].rkey;
			e->stray.len = x->m[t].len;
		}
#endif
		e->st.transfers_sent++;
		close_slot(x);
		g->cb.sent(g->cb.arg, g, id, &d, 0, "");
		return;
	}
	if (x->role == ROLE_RECV && !x->member_done && x->nhave == x->plan.k) {
		int ret;

		close_windows(e, x);
		ret = alloc_deliver(e->a, &x->buf);

		assert(ret == 0);
		(void)ret;
		x->member_done = true;
		x->leased = false;
		e->st.transfers_received++;
		/* Wedged: what this member holds now is for the view change
		 * to agree on; telling the sender would let members that are
		 * not wedged yet deliver it past that agreement. */
		if (!e->wedged)
			send_done(e, x, member_id(g, x->sender), RDMC_DONE_HAVE, 0);
		g->cb.received(g->cb.arg, g, x->msg_id, member_id(g, x->sender),
			       &x->buf, 0, "");
	}
}

/* Sender: once every receiver acknowledged a cancellation and the
 * sent callback ran, tell every receiver that all of them know, and pass
 * it over here too (the stable callback). */
static void cancel_check(struct rdmc_engine *e, struct rdmc_group *g,
			 struct cancel *k)
{
	uint64_t all = ((1ull << (g->n - 1)) << 1) - 1;
	uint64_t id = k->msg_id;

	all &= ~(1ull << g->me);
	if (!k->reaped || (k->acked & all) != all)
		return;
	k->g = NULL;
	for (unsigned i = 0; i < g->n; i++)
		if (i != g->me)
			send_done_id(e, g, id, member_id(g, i),
				     RDMC_DONE_ALL | RDMC_DONE_ABORT, 0);
	if (g->cb.stable)
		g->cb.stable(g->cb.arg, g, id, member_id(g, g->me));
}

/* A failed transfer with nothing of this member's in flight. On the
 * sender, hand the buffer to the application and free the slot. On a
 * receiver, acknowledge a cancellation now; a buffer it leased is kept
 * (held) with the slot: other members may still be writing into it, and
 * a stray block must find neither memory given to someone else nor a
 * slot reused by another transfer. */
static void reap_dead(struct rdmc_engine *e, struct xfer *x)
{
	struct rdmc_group *g = x->g;
	struct buf_desc d = x->buf;
	uint64_t id = x->msg_id;
	bool owe = x->owe_sent;
	int status = x->dead_status;
	char why[sizeof(x->dead_why)];

	assert(x->role == ROLE_DEAD && x->inflight == 0);
	if (x->owe_aborted) {
		/* Wedged: like HAVE, the acknowledgement would let members
		 * not wedged yet pass the message over while the view change
		 * may hold it back. */
		x->owe_aborted = false;
		if (!e->wedged)
			send_done_id(e, g, id, member_id(g, x->sender),
				     RDMC_DONE_ABORTED, 0);
	}
	if (x->leased) {
		x->held = true;
		return;
	}
	memcpy(why, x->dead_why, sizeof(why));
	close_slot(x);
	if (owe) {
		struct cancel *k = cancel_find(e, g, id);

		g->cb.sent(g->cb.arg, g, id, &d, status, why);
		if (k) {
			k->reaped = true;
			cancel_check(e, g, k);
		}
	}
}

/* End a transfer with an error: tell the application, cancel the others'
 * part when this member is the sender, and free the slot once nothing of
 * it is in flight (the sender's buffer goes back to the application only
 * then, since the NIC may still be reading it). */
static void fail_xfer(struct rdmc_engine *e, struct xfer *x, int status,
		      const char *why)
{
	struct rdmc_group *g = x->g;
	enum role was = x->role;

	if (was == ROLE_DEAD || was == ROLE_FREE)
		return;
	x->role = ROLE_DEAD;
	x->dead_status = status;
	snprintf(x->dead_why, sizeof(x->dead_why), "%s", why);
	e->st.transfers_failed++;
	if (was == ROLE_SEND) {
		struct cancel *k = NULL;

		for (unsigned i = 0; i < CANCEL_MAX && !k; i++)
			if (!e->cancel[i].g)
				k = &e->cancel[i];

		/* As many cancellations waiting for acknowledgements as
		 * there are slots: one more could never complete, so the
		 * engine stops rather than stall its group silently. */
		if (k) {
			*k = (struct cancel){ .g = g, .msg_id = x->msg_id };
		} else {
			e->broken = -ENOBUFS;
			squall_error_set(&e->last, -ENOBUFS, "rdmc: %u "
					 "cancelled transfers wait for their "
					 "receivers' acknowledgement",
					 CANCEL_MAX);
		}
		for (unsigned i = 0; i < g->n; i++)
			if (i != g->me)
				send_done(e, x, member_id(g, i), RDMC_DONE_ABORT, status);
		x->owe_sent = true;
	} else if (was == ROLE_RECV && !x->member_done) {
		g->cb.received(g->cb.arg, g, x->msg_id, member_id(g, x->sender),
			       NULL, status, why);
	}
	if (!x->inflight)
		reap_dead(e, x);
}

/* ---- events ----------------------------------------------------------------- */

static struct rdmc_group *group_by_id(struct rdmc_engine *e, uint32_t id)
{
	for (struct rdmc_group *g = e->groups; g; g = g->next)
		if (g->id == id)
			return g;
	return NULL;
}

static void on_ready(struct rdmc_engine *e, struct rdmc_group *g, unsigned from,
		     const struct rdmc_ctl *c)
{
	struct xfer *x = find(e, g, c->msg_id);
	struct mstate *m;

	if (!x && was_aborted(e, g, c->msg_id)) {
		/* The message died before this READY arrived. */
		e->st.strays++;
		return;
	}
	if (!x)
		x = open_slot(e, g, c->msg_id);
	if (!x) {
		squall_error_set(&e->last, -EBUSY, "rdmc: no slot for the READY of "
				 "message %" PRIu64 " from member %u", c->msg_id,
				 member_id(g, from));
		e->st.strays++;
		return;
	}
	if (x->role == ROLE_DEAD)
		return;
	m = &x->m[from];
	if (m->answered) {
		e->st.strays++;
		return;
	}
	m->answered = true;
	if (c->status == 0) {
		m->ready = true;
		m->addr = c->addr;
		m->rkey = c->rkey;
		m->slot = c->slot;
		m->len = c->len;
	} else if (!x->fail) {
		if (x->role == ROLE_SEND)
			squall_hook("rdmc_refused");
		x->fail = c->status < 0 ? c->status : -EPROTO;
		x->fail_member = from;
	}
	x->nanswered++;
	sender_check(e, x);
	if (x->role == ROLE_SEND || x->role == ROLE_RECV) {
		pump(e, x);
		check_done(e, x);
	}
}

static void on_done(struct rdmc_engine *e, struct rdmc_group *g, unsigned from,
		    const struct rdmc_ctl *c)
{
	struct xfer *x;

	if (c->flags & RDMC_DONE_ABORTED) {
		/* Sender: a receiver knows the message is cancelled. */
		struct cancel *k = cancel_find(e, g, c->msg_id);

		if (!k) {
			e->st.strays++;
			return;
		}
		k->acked |= 1ull << from;
		cancel_check(e, g, k);
		return;
	}
	if ((c->flags & (RDMC_DONE_ALL | RDMC_DONE_ABORT)) ==
	    (RDMC_DONE_ALL | RDMC_DONE_ABORT)) {
		/* Every receiver knows it is cancelled, and every write of
		 * it is done (each acknowledged once its own were): a buffer
		 * held for it goes back; pass the message over. */
		if (!was_aborted(e, g, c->msg_id)) {
			e->st.strays++;
			return;
		}
		x = find(e, g, c->msg_id);
		if (x && x->held) {
			close_windows(e, x);
			alloc_release(e->a, &x->buf);
			close_slot(x);
		}
		if (g->cb.stable)
			g->cb.stable(g->cb.arg, g, c->msg_id, member_id(g, from));
		return;
	}
	x = find(e, g, c->msg_id);
	if (!x) {
		e->st.strays++;
		return;
	}
	if (c->flags & RDMC_DONE_HAVE) {
		if (x->role != ROLE_SEND || x->m[from].have) {
			e->st.strays++;
			return;
		}
		x->m[from].have = true;
		x->ndone++;
		check_done(e, x);
	} else if (c->flags & RDMC_DONE_ABORT) {
		char why[160];
		uint32_t sender = member_id(g, from);
		uint64_t id = c->msg_id;
		int status = c->status < 0 ? c->status : -ECANCELED;
		bool told = false;

		if (x->role == ROLE_SEND)
			return;
		snprintf(why, sizeof(why), "member %u cancelled message %" PRIu64
			 ": %s", sender, id, strerror(-c->status));
		/* Other receivers' READYs may still be on their way: they
		 * must not open a slot nothing closes; and the sender's word
		 * that every receiver knows finds it here. */
		remember_abort(e, g, id);
		if (x->role == ROLE_PENDING) {
			/* This member refused it: it learns its fate now. */
			told = x->refused;
			close_slot(x);
			if (told)
				g->cb.received(g->cb.arg, g, id, sender, NULL,
					       status, why);
			/* Acknowledged once the callback ran. Wedged: like
			 * HAVE, the acknowledgement would let members not
			 * wedged yet pass the message over while the view
			 * change may hold it back. */
			if (told && !e->wedged)
				send_done_id(e, g, id, sender,
					     RDMC_DONE_ABORTED, 0);
		} else if (x->role == ROLE_RECV && !x->member_done) {
			/* Acknowledged once the callback ran and this
			 * member's writes are done (reap_dead). */
			x->owe_aborted = true;
			fail_xfer(e, x, status, why);
		} else {
			fail_xfer(e, x, status, why);
		}
	} else if (c->flags & RDMC_DONE_ALL) {
		uint32_t sender;

		if (x->role != ROLE_RECV || !x->member_done) {
			e->st.strays++;
			return;
		}
		sender = member_id(g, x->sender);
		close_slot(x);
		if (g->cb.stable)
			g->cb.stable(g->cb.arg, g, c->msg_id, sender);
	}
}

static void on_ctl(struct rdmc_engine *e, struct rdmc_group *g, uint32_t peer,
		   const struct rdmc_ctl *c)
{
	int from = member_index(g, peer);

	if (from < 0 || (unsigned)from == g->me) {
		e->st.strays++;
		return;
	}
	if (c->type == WIRE_MSG_RDMC_READY)
		on_ready(e, g, (unsigned)from, c);
	else
		on_done(e, g, (unsigned)from, c);
}

int rdmc_engine_on_message(struct rdmc_engine *e, uint32_t peer,
			   const void *buf, size_t len)
{
	struct rdmc_ctl c;
	struct rdmc_group *g;
	int ret = rdmc_ctl_decode(buf, len, &c);

	if (ret)
		return ret;
	e->st.ctl_received++;
	g = group_by_id(e, c.group);
	if (!g) {
		if (e->nearly == EARLY_MAX) {
			e->st.strays++;
			return 0;
		}
		e->early[e->nearly++] = (struct early){ peer, c };
		return 0;
	}
	on_ctl(e, g, peer, &c);
	return 0;
}

int rdmc_engine_on_imm(struct rdmc_engine *e, uint32_t peer, uint32_t imm)
{
	uint32_t slot, block;
	struct xfer *x;
	uint64_t off, len;

	if (!rdmc_imm_decode(imm, &slot, &block))
		return -ENOMSG;
	x = &e->x[slot];
	if (x->role != ROLE_RECV || block >= x->plan.k || x->have[block]) {
		squall_error_set(&e->last, -EPROTO, "rdmc: block %u from member %u "
				 "for slot %u matches no transfer", block, peer, slot);
		e->st.strays++;
		return 0;
	}
	rdmc_block_span(x->size, x->g->block_size, block, &off, &len);
	x->have[block] = 1;
	x->nhave++;
	if (x->plan.k >= 2 && x->nhave == x->plan.k / 2)
		squall_hook("rdmc_mid");
	e->st.blocks_received++;
	e->st.bytes_received += len;
	pump(e, x);
	check_done(e, x);
	return 0;
}

/* A block write completed, which made room on its member's queue pair:
 * every transfer with writes still to post may go on (those that waited
 * for that room have no completion of their own to pump them). */
static void pump_all(struct rdmc_engine *e)
{
	for (unsigned i = 0; i < RDMC_IMM_SLOTS; i++) {
		struct xfer *x = &e->x[i];

		if ((x->role == ROLE_SEND || x->role == ROLE_RECV) &&
		    x->cursor < x->plan.nsends)
			pump(e, x);
	}
}

static void on_block_sent(struct rdmc_engine *e, const struct rdma_sq_wc *wc)
{
	uint64_t data = wc->wr_id & WR_DATA_MASK, off, len;
	unsigned slot = (unsigned)(data >> 44);
	uint32_t block = (uint32_t)(data >> 20) & (RDMC_MAX_BLOCKS - 1);
	struct xfer *x = &e->x[slot];
	unsigned *load = load_of(e, wc->peer);

	assert(slot < RDMC_IMM_SLOTS);
	/* Every posted block write completes once, flushed or not, even
	 * after its transfer was dropped. */
	assert(*load > 0);
	if (*load)
		(*load)--;
	if ((x->gen & GEN_MASK) != (data & GEN_MASK) || !x->inflight) {
		e->st.strays++;
		pump_all(e);
		return;
	}
	x->inflight--;
	if (wc->status) {
		int t = member_index(x->g, wc->peer);
		const struct mstate *m = t >= 0 ? &x->m[t] : NULL;
		char why[240];

		/* Where it went: a remote access error names the bytes. */
		rdmc_block_span(x->size, x->g->block_size, block, &off, &len);
		snprintf(why, sizeof(why), "write of block %u ([%#" PRIx64 ", +%"
			 PRIu64 ") key %#x) to member %u failed: %s", block,
			 m ? m->addr + off : 0, len, m ? m->rkey : 0, wc->peer,
			 wc->status_text);
		fail_xfer(e, x, wc->status, why);
	} else if (x->role != ROLE_DEAD) {
		rdmc_block_span(x->size, x->g->block_size, block, &off, &len);
		e->st.blocks_sent++;
		e->st.bytes_sent += len;
	}
	if (x->role == ROLE_DEAD) {
		if (!x->inflight)
			reap_dead(e, x);
	} else {
		pump(e, x);
		check_done(e, x);
	}
	pump_all(e);
}

static int repost(struct rdmc_engine *e, uint32_t peer, void *buf)
{
	struct rdma_sq_sge sg = { buf, RDMC_CTL_MAX };
	struct squall_error err;
	int ret = rdma_sq_post_recv(e->node, peer, &sg, 1,
				    wr_id(WR_RECV, region_off(e, buf)), &err);

	if (ret)
		note(e, ret, &err);
	return ret;
}

int rdmc_engine_handle_wc(struct rdmc_engine *e, const struct rdma_sq_wc *wc)
{
	uint64_t kind = wc->wr_id >> 52 & 0xf;
	void *buf;

	if (wc->wr_id >> 56 != WR_TAG) {
		if (wc->opcode == RDMA_SQ_OP_RECV_IMM &&
		    rdmc_engine_on_imm(e, wc->peer, wc->imm) == 0)
			return 1;
		return 0;
	}
	buf = e->base + (wc->wr_id & WR_DATA_MASK);
	switch (kind) {
	case WR_BLOCK:
		on_block_sent(e, wc);
		return 1;
	case WR_CTL: {
		struct buf_desc d = { buf, RDMC_CTL_MAX };

		alloc_release(e->a, &d);
		assert(e->ctl_pending > 0);
		e->ctl_pending--;
		if (wc->status)
			squall_error_set(&e->last, wc->status, "rdmc: control message "
					 "to member %u failed: %s", wc->peer,
					 wc->status_text);
		return 1;
	}
	case WR_RECV:
		if (wc->status)
			return 1; /* flushed: the peer is gone */
		if (wc->opcode == RDMA_SQ_OP_RECV_IMM)
			rdmc_engine_on_imm(e, wc->peer, wc->imm);
		else if (rdmc_engine_on_message(e, wc->peer, buf, wc->byte_len))
			e->st.strays++;
		repost(e, wc->peer, buf);
		return 1;
	default:
		return 0;
	}
}

int rdmc_engine_poll(struct rdmc_engine *e, int timeout_ms)
{
	struct rdma_sq_wc wc[32];
	int n;

	if (!e->o.own_recvs)
		return -EINVAL;
	n = rdma_sq_poll(e->node, wc, 32);
	if (n == 0 && timeout_ms != 0) {
		int ret = rdma_sq_wait(e->node, timeout_ms);

		if (ret == -ETIMEDOUT)
			return 0;
		if (ret)
			return ret;
		n = rdma_sq_poll(e->node, wc, 32);
	}
	for (int i = 0; i < n; i++)
		if (!rdmc_engine_handle_wc(e, &wc[i]))
			e->st.strays++;
	return n;
}

/* ---- the calls ------------------------------------------------------------- */

static int check_size(const struct rdmc_group *g, uint64_t size,
		      struct squall_error *err)
{
	if (size == 0)
		return squall_error_set(err, -EINVAL, "rdmc: empty message");
	if (rdmc_block_count(size, g->block_size) > RDMC_MAX_BLOCKS)
		return squall_error_set(err, -E2BIG, "rdmc: %" PRIu64 " bytes make "
			"more than %u blocks of %" PRIu64, size, RDMC_MAX_BLOCKS,
			g->block_size);
	return 0;
}

/* Take over a pending slot or open one for msg_id. */
static struct xfer *claim(struct rdmc_engine *e, struct rdmc_group *g,
			  uint64_t msg_id, struct squall_error *err, int *ret)
{
	struct xfer *x = find(e, g, msg_id);

	if (x && x->role != ROLE_PENDING) {
		*ret = squall_error_set(err, -EEXIST, "rdmc: message %" PRIu64
					" of group %u is already in flight", msg_id, g->id);
		return NULL;
	}
	if (!x)
		x = open_slot(e, g, msg_id);
	if (!x)
		*ret = squall_error_set(err, -EBUSY, "rdmc: all %u transfer slots "
					"are in use", RDMC_IMM_SLOTS);
	return x;
}

/* How a sender's buffer is held: a lease to submit, one submitted
 * already, or memory outside the region that stays its owner's. */
enum send_mode { SEND_LEASE, SEND_SUBMITTED, SEND_FOREIGN };

static int send_buf(struct rdmc_group *g, uint64_t msg_id,
		    const struct buf_desc *d, enum send_mode mode,
		    struct squall_error *err)
{
	struct rdmc_engine *e = g->e;
	bool submit = mode == SEND_LEASE;
	struct xfer *x;
	int ret;

	squall_error_clear(err);
	if (mode == SEND_FOREIGN &&
	    (g->n < 2 || !d || !d->ptr || !d->len || alloc_owns(e->a, d->ptr, d->len)))
		return squall_error_set(err, -EINVAL, "rdmc_send_foreign: the "
			"buffer must lie outside the member's region, to a group "
			"of 2 or more");
	if (mode != SEND_FOREIGN &&
	    (g->n < 2 || !d || !alloc_owns(e->a, d->ptr, d->len)))
		return squall_error_set(err, -EINVAL, "rdmc_send: the buffer must be "
			"a lease from the member's allocator, to a group of 2 or more");
	ret = check_size(g, d->len, err);
	if (ret)
		return ret;
	x = claim(e, g, msg_id, err, &ret);
	if (!x)
		return ret;
	ret = rdmc_plan_build(g->alg, g->n,
			      (unsigned)rdmc_block_count(d->len, g->block_size), 0,
			      &x->plan);
	if (!ret && submit)
		ret = alloc_submit(e->a, d);
	if (ret) {
		rdmc_plan_free(&x->plan);
		if (x->nanswered == 0)
			close_slot(x);
		return squall_error_set(err, ret, "rdmc_send: message %" PRIu64
					": %s", msg_id, strerror(-ret));
	}
	x->role = ROLE_SEND;
	x->sender = g->me;
	x->size = d->len;
	x->buf = *d;
	sender_check(e, x);
	pump(e, x);
	return 0;
}

int rdmc_send(struct rdmc_group *g, uint64_t msg_id, const struct buf_desc *d,
	      struct squall_error *err)
{
	return send_buf(g, msg_id, d, SEND_LEASE, err);
}

int rdmc_send_submitted(struct rdmc_group *g, uint64_t msg_id,
			const struct buf_desc *d, struct squall_error *err)
{
	return send_buf(g, msg_id, d, SEND_SUBMITTED, err);
}

int rdmc_send_foreign(struct rdmc_group *g, uint64_t msg_id,
		      const struct buf_desc *d, struct squall_error *err)
{
	return send_buf(g, msg_id, d, SEND_FOREIGN, err);
}

int rdmc_expect(struct rdmc_group *g, uint64_t msg_id, uint32_t sender,
		uint64_t size, struct squall_error *err)
{
	struct rdmc_engine *e = g->e;
	int s = member_index(g, sender);
	struct xfer *x;
	size_t sz = size;
	unsigned slot;
	int ret;

	squall_error_clear(err);
	if (s < 0 || (unsigned)s == g->me)
		return squall_error_set(err, -EINVAL, "rdmc_expect: member %u is not "
					"another member of group %u", sender, g->id);
	ret = check_size(g, size, err);
	if (ret)
		return ret;
	x = claim(e, g, msg_id, err, &ret);
	if (!x)
		return ret;
	slot = slot_of(e, x);
	x->sender = (unsigned)s;
	x->size = size;
	ret = squall_hook_fail("rdmc_lease") ? -ENOMEM
					       : alloc_lease(e->a, 1, &sz, &x->buf);
	if (ret) {
		/* Tell the sender; the slot stays pending until its ABORT,
		 * which the received callback reports. */
		x->refused = true;
		send_ready(e, x, slot, sender, ret);
		return squall_error_set(err, ret, "rdmc_expect: could not lease a %"
					PRIu64 "-byte buffer for message %" PRIu64,
					size, msg_id);
	}
	x->leased = true;
	ret = rdmc_plan_build(g->alg, g->n,
			      (unsigned)rdmc_block_count(size, g->block_size),
			      rank_of(g, x->sender, g->me), &x->plan);
	x->have = ret ? NULL : calloc(x->plan.k, 1);
	if (ret || !x->have) {
		ret = ret ? ret : -ENOMEM;
		x->refused = true;
		send_ready(e, x, slot, sender, ret);
		alloc_release(e->a, &x->buf);
		x->leased = false;
		rdmc_plan_free(&x->plan);
		return squall_error_set(err, ret, "rdmc_expect: message %" PRIu64
					": %s", msg_id, strerror(-ret));
	}
	x->role = ROLE_RECV;
	/* READY to every member that writes here, and to the sender; with
	 * windows, each writer's READY carries the key of its own window
	 * over exactly this buffer, bound before the READY is posted. */
	for (unsigned i = 0; i < x->plan.nsources; i++) {
		unsigned idx = index_of_rank(g, x->sender, x->plan.sources[i]);
		struct squall_error we;

		if (e->o.windows && e->windows_closed) {
			ret = squall_error_set(&e->last, -ESHUTDOWN, "rdmc: "
					       "message %" PRIu64 ": the engine let "
					       "go of its windows (its node is "
					       "going)", msg_id);
			break;
		}
		if (e->o.windows) {
			ret = rdma_sq_window_open(e->node, member_id(g, idx),
						  x->buf.ptr, x->size,
						  &x->m[idx].win, &we);
			if (ret) {
				squall_error_set(&e->last, ret, "rdmc: message %"
						 PRIu64 ": %s", msg_id, we.msg);
				break;
			}
			e->st.windows_opened++;
		}
		ret = send_ready(e, x, slot, member_id(g, idx), 0);
		if (ret)
			break;
	}
	if (!ret && !(x->plan.nsources && x->plan.sources[0] == 0))
		ret = send_ready(e, x, slot, sender, 0);
	if (ret) {
		fail_xfer(e, x, ret, e->last.msg);
		return squall_error_set(err, ret, "rdmc_expect: %s", e->last.msg);
	}
	pump(e, x);
	return 0;
}

/* ---- set-up ----------------------------------------------------------------- */

static int post_recvs(struct rdmc_engine *e, uint32_t peer,
		      struct squall_error *err)
{
	unsigned depth = e->o.recv_depth;
	size_t sz = (size_t)depth * RDMC_CTL_MAX;
	struct buf_desc d;
	int ret;

	for (unsigned i = 0; i < e->nrecv_peers; i++)
		if (e->recv_peers[i] == peer)
			return 0;
	if (e->nrecv_peers == RDMA_SQ_MAX_MEMBERS)
		return squall_error_set(err, -ENOSPC, "rdmc: too many peers");
	ret = alloc_lease(e->a, 1, &sz, &d);
	if (ret)
		return squall_error_set(err, ret, "rdmc: no room for %u receive "
					"buffers for member %u", depth, peer);
	for (unsigned i = 0; i < depth; i++) {
		ret = repost(e, peer, (char *)d.ptr + (size_t)i * RDMC_CTL_MAX);
		if (ret)
			return squall_error_set(err, ret, "%s", e->last.msg);
	}
	e->recv_bufs[e->nrecv_peers] = d;
	e->recv_peers[e->nrecv_peers++] = peer;
	return 0;
}

int rdmc_engine_create(struct rdma_sq_node *node, struct alloc *a,
		       const struct rdmc_engine_options *o,
		       struct rdmc_engine **out, struct squall_error *err)
{
	struct rdmc_engine *e;
	void *base;

	squall_error_clear(err);
	if (!node || !a || !out)
		return squall_error_set(err, -EINVAL, "rdmc_engine_create: node, "
					"allocator and out are required");
	e = calloc(1, sizeof(*e));
	if (!e)
		return squall_error_set(err, -ENOMEM, "rdmc: out of memory");
	e->node = node;
	e->a = a;
	if (o)
		e->o = *o;
	if (!e->o.recv_depth)
		e->o.recv_depth = DEFAULT_RECV_DEPTH;
	if (!e->o.send_window)
		e->o.send_window = DEFAULT_WINDOW;
	e->rkey = e->o.grant_mr ? rdma_sq_mr_rkey(e->o.grant_mr) : alloc_rkey(a);
	if (!e->rkey && !e->o.windows) {
		free(e);
		return squall_error_set(err, -EINVAL, "rdmc: no rkey to grant for "
			"receive buffers (the allocator's region is unregistered "
			"and no grant_mr was given)");
	}
	alloc_region(a, &base, &e->region_len);
	e->base = base;
	e->my_id = rdma_sq_my_id(node);
	*out = e;
	return 0;
}

void rdmc_engine_drop_windows(struct rdmc_engine *e)
{
	if (!e)
		return;
	for (unsigned i = 0; i < RDMC_IMM_SLOTS; i++) {
		struct xfer *x = &e->x[i];

		for (unsigned j = 0; x->m && x->g && j < x->g->n; j++)
			x->m[j].win = NULL;
	}
	e->windows_closed = true;
}

void rdmc_engine_destroy(struct rdmc_engine *e)
{
	if (!e)
		return;
	while (e->groups)
		rdmc_group_destroy(e->groups);
	for (unsigned i = 0; i < RDMC_IMM_SLOTS; i++) {
		rdmc_plan_free(&e->x[i].plan);
		free(e->x[i].have);
		free(e->x[i].m);
	}
	while (e->out_head) {
		struct outbox *o = e->out_head;

		e->out_head = o->next;
		free(o);
	}
	/* Receive buffers stay leased: the queue pairs may still hold them
	 * until the node is destroyed, and the region goes with the
	 * allocator. */
	free(e);
}

int rdmc_group_create(struct rdmc_engine *e, uint32_t id,
		      const uint32_t *members, unsigned n, uint64_t block_size,
		      enum rdmc_algorithm alg, const struct rdmc_callbacks *cb,
		      struct rdmc_group **out, struct squall_error *err)
{
	struct rdmc_group *g;
	int me = -1, ret;

	squall_error_clear(err);
	if (!e || !members || !n || n > RDMA_SQ_MAX_MEMBERS || !block_size ||
	    block_size > UINT32_MAX || !cb || !cb->received || !cb->sent || !out ||
	    !rdmc_algorithm_name(alg))
		return squall_error_set(err, -EINVAL, "rdmc_group_create: bad argument");
	for (unsigned i = 0; i < n; i++) {
		if (members[i] == e->my_id)
			me = (int)i;
		for (unsigned j = 0; j < i; j++)
			if (members[j] == members[i])
				return squall_error_set(err, -EINVAL, "rdmc_group_create: "
					"member %u is listed twice", members[i]);
	}
	if (me < 0)
		return squall_error_set(err, -EINVAL, "rdmc_group_create: member %u "
					"is not in the group", e->my_id);
	if (group_by_id(e, id))
		return squall_error_set(err, -EEXIST, "rdmc_group_create: group %u "
					"exists", id);
	g = calloc(1, sizeof(*g));
	if (g)
		g->members = malloc(n * sizeof(*members));
	if (!g || !g->members) {
		free(g);
		return squall_error_set(err, -ENOMEM, "rdmc: out of memory");
	}
	memcpy(g->members, members, n * sizeof(*members));
	g->e = e;
	g->id = id;
	g->n = n;
	g->me = (unsigned)me;
	g->block_size = block_size;
	g->alg = alg;
	g->cb = *cb;
	for (unsigned i = 0; e->o.own_recvs && i < n; i++) {
		if (i == g->me)
			continue;
		ret = post_recvs(e, members[i], err);
		if (ret) {
			free(g->members);
			free(g);
			return ret;
		}
	}
	g->next = e->groups;
	e->groups = g;
	*out = g;
	/* Replay what peers sent before this member had the group. */
	for (unsigned i = 0; i < e->nearly;) {
		struct early m = e->early[i];

		if (m.c.group != id) {
			i++;
			continue;
		}
		/* keep the order they came in */
		memmove(&e->early[i], &e->early[i + 1],
			(--e->nearly - i) * sizeof(e->early[0]));
		on_ctl(e, g, m.peer, &m.c);
	}
	return 0;
}

void rdmc_group_destroy(struct rdmc_group *g)
{
	struct rdmc_group **pp;

	if (!g)
		return;
	for (unsigned i = 0; i < RDMC_IMM_SLOTS; i++) {
		struct xfer *x = &g->e->x[i];

		if (x->role != ROLE_FREE && x->g == g) {
			/* A receive buffer nobody was handed goes back. */
			if (x->leased)
				alloc_release(g->e->a, &x->buf);
			x->inflight = 0;
			close_slot(x);
		}
	}
	for (unsigned i = 0; i < CANCEL_MAX; i++)
		if (g->e->cancel[i].g == g)
			g->e->cancel[i].g = NULL;
	for (pp = &g->e->groups; *pp != g; pp = &(*pp)->next)
		;
	*pp = g->next;
	free(g->members);
	free(g);
}

void rdmc_engine_stats(const struct rdmc_engine *e, struct rdmc_stats *st)
{
	*st = e->st;
}

void rdmc_engine_wedge(struct rdmc_engine *e)
{
	e->wedged = true;
}

int rdmc_engine_progress(struct rdmc_engine *e, bool *work)
{
	while (e->out_head) {
		struct outbox *o = e->out_head;
		int ret = ctl_post(e, o->peer, &o->c);

		if (ret == -ENOMEM || ret == -EAGAIN)
			break;
		/* Sent, or its connection failed (that peer is suspected,
		 * and its transfers end with it). */
		e->out_head = o->next;
		free(o);
		*work = true;
	}
	/* Block writes a full send queue put off with nothing of theirs in
	 * flight (no completion of theirs would pump them). */
	for (unsigned i = 0; i < RDMC_IMM_SLOTS; i++) {
		struct xfer *x = &e->x[i];

		if ((x->role == ROLE_SEND || x->role == ROLE_RECV) &&
		    !x->inflight && x->cursor < x->plan.nsends) {
			unsigned cursor = x->cursor;

			pump(e, x);
			if (x->cursor != cursor)
				*work = true;
		}
	}
	return e->broken;
}

bool rdmc_engine_idle(const struct rdmc_engine *e)
{
	if (e->out_head)
		return false;
	if (e->ctl_pending)
		return false;
	for (unsigned i = 0; i < RDMC_IMM_SLOTS; i++)
		if (e->x[i].role != ROLE_FREE)
			return false;
	return true;
}

const char *rdmc_engine_last_error(const struct rdmc_engine *e)
{
	return e->last.msg;
}

uint32_t rdmc_group_id(const struct rdmc_group *g)
{
	return g->id;
}

unsigned rdmc_group_size(const struct rdmc_group *g)
{
	return g->n;
}

unsigned rdmc_group_my_index(const struct rdmc_group *g)
{
	return g->me;
}
