/*
 * link.c - the group's parts on one node: SMC's transport operations and
 * the hooks through which the SST's progress thread hands over every
 * completion that is not the SST's own.
 *
 * The idea: one completion queue, one thread, dispatch by tag. Requests
 * carry a tag in the top byte of their wr_id (SST 'S', RDMC 'R', SMC runs
 * 'M', point-to-point sends 'P', their READs of use-once regions 'U');
 * arrivals are told apart by their immediate (SST pushes carry the
 * pusher's rank, SMC runs SMC_IMM_TAG in the top nibble, RDMC blocks the
 * top bit) or, for SENDs, by the wire message type (RDMC's READY and
 * DONE, the group's P2P and P2P_DONE). The receives
 * themselves are the SST's, each with a buffer for SENDs, and are posted
 * again as soon as their completion is handled.
 *
 * Each hook the SST runs on its progress thread starts by recording that
 * thread (group_progress_enter). Also here: the SST's suspicions, the
 * drain of a view's node before it goes, and the SMC steps of a view's
 * build (the core, and the exchange of where the rings lie).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <squall/wire.h>

#include "group/group_int.h"
#include "rdma/hook.h"

static uint64_t smc_wrid(uint32_t rank, uint64_t end_rec)
{
	/* The low 40 bits of the record count the write completes: the
	 * core compares it only against recent record numbers. */
	return GROUP_WR_SMC << 56 | (uint64_t)(rank & 0xffff) << 40 |
	       (end_rec & 0xffffffffffull);
}

/* ---- SMC's transport ---------------------------------------------------- */

static int op_post_write(void *ctx, uint32_t dest, const struct smc_write *w)
{
	struct group *g = ctx;
	struct rdma_sq_sge sg[SMC_MAX_SGE];
	struct squall_error err = { 0 };
	uint64_t raddr = g->v.raddr[dest] + w->remote_off;

	for (uint32_t i = 0; i < w->nsge; i++)
		sg[i] = (struct rdma_sq_sge){ (void *)w->sge[i].addr,
					      w->sge[i].len };
	if (squall_hook_fail("stray_ring"))
		raddr += g->geom.cap;
	return rdma_sq_write_imm(g->v.node, g->v.ids[dest], sg, (int)w->nsge,
				 raddr, g->v.rkey[dest], w->imm,
				 smc_wrid(dest, w->first_rec + w->nrec),
				 RDMA_SQ_SIGNALED, &err);
}

/* A sent payload is free: the application's lease (or the group's own
 * announcement or copy) goes back to the slab. */
static void op_payload_done(void *ctx, void *cookie, const void *payload,
			    uint32_t len)
{
	struct group *g = ctx;
	struct buf_desc d = { (void *)payload, len };

	(void)cookie;
	alloc_complete(g->a, &d);
}

static int op_commit(void *ctx, void *cookie, const void *payload,
		     uint32_t len)
{
	struct group *g = ctx;
	struct buf_desc d = { (void *)payload, len };

	(void)cookie;
	/* A message sent again in a new view was submitted the first time. */
	if (g->resending)
		return 0;
	return alloc_submit(g->a, &d);
}

static int op_lease(void *ctx, uint32_t len, int timeout_ms, void **ptr,
		    void **cookie)
{
	struct group *g = ctx;
	size_t sz = len;
	struct buf_desc d;
	int r;

	if (timeout_ms == 0)
		r = alloc_lease(g->a, 1, &sz, &d);
	else
		r = alloc_lease_wait(g->a, 1, &sz, &d,
				     timeout_ms < 0 ? UINT32_MAX
						    : (unsigned)timeout_ms);
	if (r)
		return r;
	*ptr = *cookie = d.ptr;
	return 0;
}

static void op_unlease(void *ctx, void *cookie, void *ptr, uint32_t len)
{
	struct group *g = ctx;
	struct buf_desc d = { ptr, len };

	(void)cookie;
	alloc_release(g->a, &d);
}

const struct smc_core_ops group_smc_ops = {
	.post_write = op_post_write,
	.payload_done = op_payload_done,
	.commit = op_commit,
	.lease = op_lease,
	.unlease = op_unlease,
};

/* ---- dispatch hooks ----------------------------------------------------- */

/* A completion of one of the group's requests (or RDMC's), by the tag of
 * its wr_id. Progress thread, or the drain once it stopped. */
static bool take_wc(struct group *g, const struct rdma_sq_wc *wc)
{
	uint64_t tag = wc->wr_id >> 56;
	int r;

	group_assert_progress_or_none(g);
	if (tag == GROUP_WR_SMC) {
		r = group_config_member_index(&g->vcfg, wc->peer);
		if (wc->status) {
			/* The peer failed: the SST suspects it too, and the
			 * view change decides what the write carried. */
			return true;
		}
		if (r >= 0)
			smc_core_on_write_done(g->v.core, (uint32_t)r,
					       wc->wr_id & 0xffffffffffull);
		return true;
	}
	if (tag == GROUP_WR_P2P) {
		group_p2p_done(g, wc);
		return true;
	}
	if (tag == GROUP_WR_P2P_READ) {
		group_p2p_read_done(g, wc);
		return true;
	}
	if (g->v.e && rdmc_engine_handle_wc(g->v.e, wc))
		return true;
	return false;
}

static bool on_wc(void *arg, const struct rdma_sq_wc *wc)
{
	struct group *g = arg;

	group_progress_enter(g);
	return take_wc(g, wc);
}

static void misbehaved(struct group *g, uint32_t rank, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Member rank sent what this member cannot take: it is removed, not this
 * member. Suspected like a failed member (every survivor learns it from
 * this member's row, and the view change that follows removes it; the
 * failure upcall gives the reason). Its connection is not cut at once:
 * the cut would make it suspect this member, and a third member that
 * read that before this member's suspicion would count both gone and
 * lose its majority (a VM run of view_flood3 did). The SST stops pushing
 * to it, and its connections close when the view that removes it is
 * installed. Progress thread. */
static void misbehaved(struct group *g, uint32_t rank, const char *fmt, ...)
{
	char why[sizeof(g->v.suspect_why[0])];
	int len = snprintf(why, sizeof(why), "member %u misbehaved: ",
			   g->v.ids[rank]);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why + len, sizeof(why) - (size_t)len, fmt, ap);
	va_end(ap);
	atomic_fetch_add(&g->st_misbehaved, 1);
	/* The SST's suspect callback (group_on_suspect) keeps why for the
	 * failure upcall. */
	sst_suspect(g->v.t, rank, why);
}

static bool on_imm(void *arg, uint32_t rank, uint32_t imm)
{
	struct group *g = arg;

	group_progress_enter(g);
	if (smc_imm_is_smc(imm)) {
		if (smc_core_on_recv(g->v.core, rank, imm))
			misbehaved(g, rank, "its SMC run (immediate 0x%08x) "
				   "does not continue its ring", imm);
		return true;
	}
	if (g->v.e && rdmc_engine_on_imm(g->v.e, g->v.ids[rank], imm) == 0)
		return true;
	misbehaved(g, rank, "it wrote with immediate 0x%08x, which no part "
		   "of this member knows", imm);
	return true;
}

static bool on_message(void *arg, uint32_t rank, const void *buf, uint32_t len)
{
	struct group *g = arg;
	struct squall_error err = { 0 };
	char why[SQUALL_ERRMSG_MAX];
	struct wire_msg m;
	int r;

	group_progress_enter(g);
	if (g->v.e) {
		r = rdmc_engine_on_message(g->v.e, g->v.ids[rank], buf, len);
		if (r && r != -ENOMSG)
			misbehaved(g, rank, "it sent a message this member "
				   "cannot read (%u bytes): %s", len,
				   strerror(-r));
		if (r != -ENOMSG)
			return true;
	}
	r = wire_decode(buf, len, &m, &err);
	if (r || (m.type != WIRE_MSG_P2P && m.type != WIRE_MSG_P2P_DONE)) {
		misbehaved(g, rank, "it sent a message this member cannot "
			   "read (%u bytes): %s", len,
			   r ? err.msg : "not a point-to-point message");
		return true;
	}
	/* A message, or the answer to a use-once region of mine. */
	r = m.type == WIRE_MSG_P2P ?
		    group_p2p_receive(g, rank, &m, why, sizeof(why)) :
		    group_p2p_answer(g, rank, &m, why, sizeof(why));
	if (r)
		misbehaved(g, rank, "%s", why);
	return true;
}

/* A SEND that arrived after the progress thread's last pass (its receive
 * completed before the drain stopped the queue pairs, so the sender was
 * told it was taken): a point-to-point message is kept for the next view
 * (group_p2p_receive keeps it while the view is not live) and delivered
 * there as any other. The rest (RDMC's control messages, answers to
 * use-once regions) ends with the view, as the drain ends what it
 * answers. */
static void drain_message(struct group *g, uint32_t rank, const void *buf,
			  uint32_t len)
{
	struct squall_error err = { 0 };
	char why[SQUALL_ERRMSG_MAX];
	struct wire_msg m;

	if (rank >= g->v.n || rank == g->v.me ||
	    wire_decode(buf, len, &m, &err) || m.type != WIRE_MSG_P2P)
		return;
	group_p2p_receive(g, rank, &m, why, sizeof(why));
}

static void drain_wc(void *arg, const struct rdma_sq_wc *wc)
{
	struct group *g = arg;
	struct sst_options so = { 0 };
	uint32_t rank;
	void *buf;

	/* The thread that tears the view down takes its completions, after
	 * the progress thread: the view thread in an install, or
	 * group_close's. The SST is gone; its receives are taken here. */
	group_sst_recv_options(g, &so);
	buf = sst_recv_landing(&so, wc->wr_id, &rank);
	if (buf) {
		if (!wc->status && wc->opcode == RDMA_SQ_OP_RECV)
			drain_message(g, rank, buf, wc->byte_len);
		return;
	}
	take_wc(g, wc);
}

void group_drain(struct group *g)
{
	uint64_t left = 0;

	group_assert_no_progress(g);

	/* The progress thread is gone: what the view's requests still hold
	 * (point-to-point buffers and headers, RDMC control messages and
	 * transfers) comes back through their flushed completions. */
	rdma_sq_drain(g->v.node, 1000, drain_wc, g);
	/* Use-once transfers still open end here (their keys die, their
	 * buffers come back, their senders are told): not abandoned. */
	group_p2p_drain(g);
	for (uint32_t i = 0; i < GROUP_CONFIG_MAX_MEMBERS; i++)
		left += atomic_exchange(&g->v.p2p_inflight[i], 0);
	atomic_fetch_add(&g->st_p2p_abandoned, left);
}

/* The node's hooks; the build adds the progress pass and the group. */
const struct sst_dispatch group_node_hooks = {
	.on_wc = on_wc,
	.on_imm = on_imm,
	.on_message = on_message,
};

/* The SST suspects a member (or, rank == mine, a peer suspects this
 * member): report it; the view change is group_view_pass's. */
void group_on_suspect(struct sst *t, uint32_t rank, uint32_t by,
		      const char *why, void *arg)
{
	struct group *g = arg;

	/* Once every member has flushed, members leaving is the plan. */
	if (atomic_load(&g->quiet))
		return;
	if (rank == g->v.me && sst_refusal(t)[0]) {
		/* A peer refused a write of ours, and it was us that went. */
		group_fail(g, -EPROTO, "%s, and member %u suspects this member, "
			   "which stops: a write outside what a peer granted "
			   "removes the writer from view %" PRIu64,
			   sst_refusal(t), g->v.ids[by], g->vcfg.epoch);
		sst_leave(t);
		group_call_failure(g, g->my_id, g->fail_msg);
		return;
	}
	if (rank == g->v.me) {
		group_fail(g, -ENOTCONN, "member %u suspects this member, which "
			   "is cut off from view %" PRIu64 " and stops (only a "
			   "side with a majority of the view may go on)",
			   g->v.ids[by], g->vcfg.epoch);
		/* The others count it gone at once. */
		sst_leave(t);
		group_call_failure(g, g->my_id, g->fail_msg);
		return;
	}
	/* Reported once the view change that removes it is decided
	 * (view.c): a member suspected because its links closed while it
	 * installs the next view is no failure, and stays. */
	if (!g->v.suspect_why[rank][0])
		snprintf(g->v.suspect_why[rank], sizeof(g->v.suspect_why[rank]),
			 "%s", why);
}

/* ---- SMC set-up ----------------------------------------------------------- */

/* The rings' seal for view `epoch` (smc/ring.h): a bijective mix of the
 * epoch, so distinct views get distinct seals with unrelated bits. A
 * view's rings are leased without being cleared: a header an earlier view
 * left there decodes to its round XOR both seals, which is the round
 * expected at that place only by a 64-bit coincidence. */
static uint64_t rings_seal(uint64_t epoch)
{
	uint64_t x = epoch + 0x9e3779b97f4a7c15ull;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

int group_smc_setup(struct group *g, struct squall_error *err)
{
	const uint8_t *rings[GROUP_CONFIG_MAX_MEMBERS];
	int r;

	for (uint32_t j = 0; j < g->v.n; j++)
		rings[j] = (uint8_t *)g->v.rings.ptr + (size_t)j * g->geom.cap;
	r = smc_core_create(&(struct smc_core_params){
				    .nmembers = g->v.n,
				    .me = g->v.me,
				    .window = g->cfg.smc_window,
				    .max_payload = g->cfg.smc_max_payload,
				    .max_sge = rdma_sq_max_sge(g->v.node),
				    /* A run takes two entries per record (16
				     * records with rxe's 32). Up to 16 writes
				     * in flight per receiver: a sender whose
				     * progress thread waits for a CPU still
				     * has runs on the wire (bench/smc, one
				     * sender: 4 carried 4-20 % less than 16,
				     * 2 less still). */
				    .max_inflight = 16,
				    .deliver = group_smc_deliver,
				    .deliver_arg = g,
				    .seal = rings_seal(g->vcfg.epoch),
			    },
			    &group_smc_ops, g, g->hdr.ptr, rings, &g->v.core);
	if (r)
		return squall_error_set(err, r, "smc: engine set-up failed: %s",
					strerror(-r));
	return 0;
}

/* Publish where my rings lie in my region and learn where each peer's
 * ring for my messages lies in its region (the same offset on every
 * member, by construction; the exchange checks it). */
int group_rings_exchange(struct group *g, struct squall_error *err)
{
	uint64_t mine = (uint64_t)((char *)g->v.rings.ptr - (char *)g->base);
	uint32_t col = (uint32_t)g->v.col[COL_SMC_RING];
	uint64_t deadline = group_now_ms() + g->vcfg.connect_timeout_ms;

	sst_set(g->v.t, col, mine + 1);
	sst_push_cols(g->v.t, col, 1);
	for (uint32_t j = 0; j < g->v.n; j++) {
		uint64_t off, addr, rlen;
		int r;

		if (j == g->v.me)
			continue;
		while ((off = sst_get(g->v.t, j, col)) == 0) {
			/* In a later view, a survivor that did not come back
			 * is left to the next view change. */
			if (g->vcfg.epoch && (sst_suspected(g->v.t, j) ||
					      group_now_ms() > deadline))
				break;
			if (group_now_ms() > deadline)
				return squall_error_set(err, -ETIMEDOUT,
					"member %u did not publish its SMC rings "
					"within %u ms", g->v.ids[j],
					g->vcfg.connect_timeout_ms);
			group_nap();
		}
		if (off == 0)
			continue;
		/* A window over exactly my ring there, when it granted one. */
		r = rdma_sq_remote(g->v.node, g->v.ids[j], RDMA_SQ_TARGET_SMC_RING,
				   &addr, &g->v.rkey[j], &rlen);
		if (r == 0) {
			if (rlen != g->geom.cap)
				return squall_error_set(err, -EPROTO,
					"member %u granted %" PRIu64 " bytes for "
					"this member's SMC ring of %" PRIu64,
					g->v.ids[j], rlen, g->geom.cap);
			g->v.raddr[j] = addr;
			continue;
		}
		r = rdma_sq_remote(g->v.node, g->v.ids[j], RDMA_SQ_TARGET_REGION,
				   &addr, &g->v.rkey[j], &rlen);
		if (r)
			return squall_error_set(err, r, "no RDMA target in "
						"member %u's region",
						g->v.ids[j]);
		off -= 1;
		if (off + (uint64_t)g->v.n * g->geom.cap > rlen)
			return squall_error_set(err, -EPROTO,
				"member %u's SMC rings lie outside its region",
				g->v.ids[j]);
		g->v.raddr[j] = addr + off + (uint64_t)g->v.me * g->geom.cap;
	}
	return 0;
}
