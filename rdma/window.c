/*
 * window.c - what a peer may write in a member's region, and nothing else.
 *
 * With rdma_sq_options.peer_windows the region is registered for local
 * access (and window binding) only: its own key lets no peer write it.
 * Every range a peer must write gets a window of its own, for that peer
 * alone: a type-2 memory window bound to the peer's queue pair over
 * exactly the range, so that the key is good on that connection only and
 * dies with ibv_dealloc_mw. Where the device has no memory windows, or
 * does not hold a write through one to the window's range (rxe checks it
 * against the registration under the window), the range gets a
 * registration of its own instead (its key is sent to that peer alone,
 * and dies with ibv_dereg_mr). The node says once which path it runs.
 *
 * The group's standing ranges (a peer's row in this member's SST, its SMC
 * ring) are granted once per view, right after connect_all: for each peer
 * the node opens a window per purpose and sends their keys in one GRANT
 * message, posted after the binds on the same queue pair (so a key is
 * never used before its bind ran), and takes the peer's GRANT in turn,
 * into a receive posted with the queue pair, before the connection was
 * up: a peer that is done connecting sooner sends at once, and a GRANT
 * that found no receive would wait for the device's "receiver not ready"
 * retries (655 ms each before the connection's timer is shortened). A
 * peer whose GRANT does not come within the timeout, or does not parse,
 * is failed with the reason; the others go on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <squall/wire.h>

#include "rdma/node.h"

struct rdma_sq_window {
	uint32_t peer;
	struct ibv_mw *mw;   /* the window path */
	struct ibv_mr *mr;   /* the registration path */
	uint32_t rkey;
	struct rdma_sq_window *next;
};

/* A GRANT's purposes are the wire's numbers. */
_Static_assert((int)RDMA_SQ_TARGET_SST_ROW == (int)WIRE_TARGET_SST_ROW &&
	       (int)RDMA_SQ_TARGET_SMC_RING == (int)WIRE_TARGET_SMC_RING,
	       "rdma_sq_target and the wire's targets differ");

#define GRANT_MSG_MAX RDMA_SQ_CTL_MSG_MAX
#define GRANT_RECV RDMA_SQ_GRANT_RECV
#define GRANT_SEND RDMA_SQ_GRANT_SEND

/* Decide (once) and say which path this node's windows take. */
static bool use_mw(struct rdma_sq_node *node)
{
	if (!node->win_path_said) {
		node->win_path_said = true;
		rdma_sq_log(node, RDMA_SQ_LOG_INFO, "member %u: peers write its "
			    "region through %s", node->my_id, node->win_mw ?
			    "memory windows bound to their queue pairs" :
			    node->win_rxe ? "registrations of their own per "
			    "range (rxe checks a write through a memory window "
			    "against the registration under it, not the "
			    "window's range)" : "registrations of their own per "
			    "range (the device has no memory windows)");
	}
	return node->win_mw;
}

int rdma_sq_window_open(struct rdma_sq_node *node, uint32_t peer, void *ptr,
			size_t len, struct rdma_sq_window **out,
			struct squall_error *err)
{
	struct rdma_sq_peer *p = rdma_sq_peer_by_id(node, peer);
	struct rdma_sq_window *w;
	uintptr_t b = (uintptr_t)node->region, a = (uintptr_t)ptr;

	if (!p)
		return squall_error_set(err, -ENOENT, "window: %u is not a peer",
					peer);
	if (!len || a < b || a - b > node->region_len ||
	    len > node->region_len - (a - b))
		return squall_error_set(err, -EFAULT, "window for %s: [%p, +%zu) "
					"is not inside the region", p->who, ptr,
					len);
	if (rdma_sq_peer_state(p) != PEER_UP)
		return squall_error_set(err, -ENOTCONN, "window for %s: %s",
					p->who, rdma_sq_peer_state(p) == PEER_DEAD ?
					p->error : "not connected");
	w = calloc(1, sizeof(*w));
	if (!w)
		return squall_error_set(err, -ENOMEM, "out of memory for a window");
	w->peer = peer;
	if (use_mw(node)) {
		struct ibv_send_wr wr = { 0 }, *bad;
		int ret;

		w->mw = ibv_alloc_mw(node->pd, IBV_MW_TYPE_2);
		if (!w->mw) {
			ret = errno ? -errno : -ENOMEM;
			free(w);
			return squall_error_set(err, ret, "window for %s: "
				"ibv_alloc_mw(type 2): %s", p->who, strerror(-ret));
		}
		/* Unsignaled: a bind that fails breaks the connection, and the
		 * peer is failed like any other. A fresh key per bind. */
		wr.opcode = IBV_WR_BIND_MW;
		wr.bind_mw.mw = w->mw;
		wr.bind_mw.rkey = ibv_inc_rkey(w->mw->rkey);
		wr.bind_mw.bind_info.mr = node->region_mr;
		wr.bind_mw.bind_info.addr = (uint64_t)a;
		wr.bind_mw.bind_info.length = len;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		ret = ibv_post_send(p->qp, &wr, &bad);
		if (ret) {
			ibv_dealloc_mw(w->mw);
			free(w);
			return squall_error_set(err, -ret, "window for %s: bind of "
				"a memory window: %s", p->who, strerror(ret));
		}
		w->rkey = wr.bind_mw.rkey;
	} else {
		w->mr = ibv_reg_mr(node->pd, ptr, len, IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE);
		if (!w->mr) {
			int ret = errno ? -errno : -EIO;

			free(w);
			return squall_error_set(err, ret, "window for %s: "
				"ibv_reg_mr(%p, %zu bytes): %s", p->who, ptr,
				len, strerror(-ret));
		}
		w->rkey = w->mr->rkey;
	}
	pthread_mutex_lock(&node->win_lock);
	w->next = node->windows;
	node->windows = w;
	pthread_mutex_unlock(&node->win_lock);
	*out = w;
	return 0;
}

uint32_t rdma_sq_window_rkey(const struct rdma_sq_window *w)
{
	return w ? w->rkey : 0;
}

static int window_kill(struct rdma_sq_window *w)
{
	int ret = 0;

	if (w->mw)
		ret = ibv_dealloc_mw(w->mw);
	if (w->mr)
		ret = ibv_dereg_mr(w->mr);
	return -ret;
}

int rdma_sq_window_close(struct rdma_sq_node *node, struct rdma_sq_window *w)
{
	struct rdma_sq_window **pp;
	int ret;

	if (!w)
		return 0;
	pthread_mutex_lock(&node->win_lock);
	for (pp = &node->windows; *pp && *pp != w; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = w->next;
	pthread_mutex_unlock(&node->win_lock);
	ret = window_kill(w);
	free(w);
	return ret;
}

void rdma_sq_window_destroy_all(struct rdma_sq_node *node)
{
	while (node->windows) {
		struct rdma_sq_window *w = node->windows;

		node->windows = w->next;
		window_kill(w);
		free(w);
	}
}

/* ---- the standing grants of a view ---------------------------------------- */

static const char *purpose_name(enum rdma_sq_target t)
{
	switch (t) {
	case RDMA_SQ_TARGET_REGION: return "region";
	case RDMA_SQ_TARGET_SST_ROW: return "SST row";
	case RDMA_SQ_TARGET_SMC_RING: return "SMC ring";
	default: return "unknown";
	}
}

int rdma_sq_grant_setup(struct rdma_sq_node *node, struct rdma_sq_peer *p,
			struct squall_error *err)
{
	struct ibv_sge sg;
	struct ibv_recv_wr rwr = { 0 }, *rbad;
	int ret;

	p->granted = false;
	if (!node->opt.peer_windows) {
		rdma_sq_ctl_io_free(&p->gio);
		return 0;
	}
	ret = rdma_sq_ctl_io_new(node, p, &p->gio, "grants", err);
	if (ret)
		return ret;
	sg = (struct ibv_sge){ (uintptr_t)p->gio->recv[0], GRANT_MSG_MAX,
			       p->gio->mr->lkey };
	rwr.wr_id = rdma_sq_ctl_wr_id(p, GRANT_RECV);
	rwr.sg_list = &sg;
	rwr.num_sge = 1;
	ret = ibv_post_recv(p->qp, &rwr, &rbad);
	if (ret)
		return squall_error_set(err, -ret, "ibv_post_recv for the grants "
					"of %s: %s", p->who, strerror(ret));
	return 0;
}

/* Open p's windows (fn) and send their keys in my GRANT (the receive for
 * p's was posted with its queue pair: rdma_sq_grant_setup). */
static int grant_one(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		     rdma_sq_grant_fn fn, void *arg, struct squall_error *err)
{
	struct wire_ext ext[RDMA_SQ_TARGET_COUNT];
	struct ibv_sge sg;
	struct ibv_send_wr wr = { 0 }, *bad;
	unsigned n = 0;
	int hl, ret;

	if (!p->gio)
		return squall_error_set(err, -EPROTO, "no receive for the "
					"grants of %s", p->who);
	for (int t = RDMA_SQ_TARGET_SST_ROW; t < RDMA_SQ_TARGET_COUNT; t++) {
		struct rdma_sq_window *w;
		void *ptr = NULL;
		size_t len = 0;

		ret = fn(arg, p->id, (enum rdma_sq_target)t, &ptr, &len);
		if (ret)
			return squall_error_set(err, ret, "the %s %s may write: %s",
						purpose_name(t), p->who,
						strerror(-ret));
		if (!len)
			continue;
		ret = rdma_sq_window_open(node, p->id, ptr, len, &w, err);
		if (ret)
			return ret;
		ext[n++] = (struct wire_ext){
			.type = WIRE_EXT_TARGET, .len = WIRE_EXT_TARGET_LEN,
			.u.target = { .purpose = (uint32_t)t,
				      .addr = (uint64_t)(uintptr_t)ptr,
				      .rkey = rdma_sq_window_rkey(w),
				      .len = len },
		};
	}
	hl = wire_encode(p->gio->send[0], GRANT_MSG_MAX, WIRE_MSG_GRANT, 0, ext, n,
			 0, err);
	if (hl < 0)
		return hl;
	sg = (struct ibv_sge){ (uintptr_t)p->gio->send[0], (uint32_t)hl,
			       p->gio->mr->lkey };
	wr.wr_id = rdma_sq_ctl_wr_id(p, GRANT_SEND);
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	ret = ibv_post_send(p->qp, &wr, &bad);
	if (ret)
		return squall_error_set(err, -ret, "sending its grants to %s: %s",
					p->who, strerror(ret));
	return 0;
}

/* p's GRANT arrived (len bytes): take its targets. */
static void grant_recv(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		       uint32_t len)
{
	struct squall_error e = { 0 };
	struct wire_msg m;
	struct wire_ext ext;
	uint32_t pos = 0;
	int r;

	if (wire_decode(p->gio->recv[0], len, &m, &e) || m.type != WIRE_MSG_GRANT) {
		rdma_sq_peer_fail(node, p, "member %u: %s sent no grants but %s "
				  "(%u bytes%s%s)", node->my_id, p->who,
				  e.code ? "a malformed message" :
				  wire_msg_type_name(m.type), len,
				  e.code ? ": " : "", e.code ? e.msg : "");
		return;
	}
	while ((r = wire_ext_next(&m, &pos, &ext)) == 1) {
		uint32_t t;

		if (ext.type != WIRE_EXT_TARGET)
			continue;
		t = ext.u.target.purpose;
		if (t != RDMA_SQ_TARGET_SST_ROW && t != RDMA_SQ_TARGET_SMC_RING) {
			rdma_sq_peer_fail(node, p, "member %u: %s granted a "
					  "target of unknown purpose %u",
					  node->my_id, p->who, t);
			return;
		}
		p->grant[t].addr = ext.u.target.addr;
		p->grant[t].rkey = ext.u.target.rkey;
		p->grant[t].len = ext.u.target.len;
		p->grant[t].set = true;
	}
	p->granted = true;
}

void rdma_sq_grant_wc(struct rdma_sq_node *node, const struct ibv_wc *wc)
{
	uint32_t id = (uint32_t)wc->wr_id;
	unsigned what = (unsigned)(wc->wr_id >> 32) & 0xff;
	struct rdma_sq_peer *p = rdma_sq_peer_by_id(node, id);

	if (!p || !p->gio || p->qp_num != wc->qp_num)
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		/* A connection that fails before it is up is the connecting
		 * code's to retry or refuse. */
		if (rdma_sq_peer_state(p) != PEER_UP)
			return;
		rdma_sq_peer_fail(node, p, "member %u: the exchange of grants "
				  "with %s failed: %s", node->my_id, p->who,
				  ibv_wc_status_str(wc->status));
		return;
	}
	if (what == GRANT_RECV)
		grant_recv(node, p, wc->byte_len);
}

int rdma_sq_grant_all(struct rdma_sq_node *node, rdma_sq_grant_fn fn,
		      void *arg, uint32_t timeout_ms, struct squall_error *err)
{
	uint64_t deadline = rdma_sq_now_ms() + timeout_ms;
	bool waiting;

	squall_error_clear(err);
	if (!node->opt.peer_windows)
		return 0;
	for (uint32_t i = 0; i < node->npeers; i++) {
		struct rdma_sq_peer *p = &node->peers[i];
		struct squall_error e;

		if ((int)i == node->my_index || rdma_sq_peer_state(p) != PEER_UP)
			continue;
		if (grant_one(node, p, fn, arg, &e))
			rdma_sq_peer_fail(node, p, "member %u: %s", node->my_id,
					  e.msg);
	}
	do {
		rdma_sq_ctl_poll(node);
		rdma_sq_events(node);
		waiting = false;
		for (uint32_t i = 0; i < node->npeers; i++) {
			struct rdma_sq_peer *p = &node->peers[i];

			if ((int)i != node->my_index &&
			    rdma_sq_peer_state(p) == PEER_UP && !p->granted)
				waiting = true;
		}
		if (waiting)
			nanosleep(&(struct timespec){ 0, 200000 }, NULL);
	} while (waiting && rdma_sq_now_ms() < deadline);
	for (uint32_t i = 0; i < node->npeers; i++) {
		struct rdma_sq_peer *p = &node->peers[i];

		if ((int)i != node->my_index &&
		    rdma_sq_peer_state(p) == PEER_UP && !p->granted)
			rdma_sq_peer_fail(node, p, "member %u: %s sent no grants "
					  "within %u ms of the connection",
					  node->my_id, p->who, timeout_ms);
	}
	return 0;
}
