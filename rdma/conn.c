/*
 * conn.c - connecting every pair of members with rdma_cm, and noticing when
 * a connection dies.
 *
 * The rule that makes all-to-all setup race-free: the member with the lower
 * id connects, the higher one accepts. A connecting member keeps trying
 * (peers start in any order) until the group's connect timeout. Each side's
 * private data is a hello (rdma/conn_data.h): the connect request carries the
 * requester's, the accept or the version reject carries the responder's,
 * so both sides can name both versions when they differ.
 *
 * In a group with a key (group.key_file), the hellos carry a fresh nonce
 * each and no region target. Once the connection is up, the requester
 * sends its proof of the key (rdma/auth.h) as the first SEND on the queue
 * pair; the acceptor checks it and answers with its own proof and its
 * region target; the requester checks that and sends its target. A peer
 * is up only then, so no memory key ever reaches a process that did not
 * prove it holds the group key. An acceptor refuses a requester whose
 * proof is wrong and goes on waiting for the real member; a requester
 * refused so, or answered with a wrong proof, fails with the reason.
 *
 * All rdma_cm events arrive on one non-blocking event channel per node.
 * Each event is copied out and acknowledged first, then handled, so that a
 * handler may destroy the id the event was for.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <squall/wire.h>

#include "rdma/auth.h"
#include "rdma/node.h"

#define RESOLVE_TIMEOUT_MS 2000
/* Backoff between active attempts, doubling from the first: members of
 * a group's first view start by hand or by a launcher, seconds apart; in
 * a later view (epoch > 0) every peer is a running process between its
 * old view's teardown and its new listener, milliseconds away, and a
 * first retry 100 ms out was most of a view change's connecting (bench
 * membership). The n-th retry waits min << n (capped). */
#define RETRY_MIN_MS 50
#define RETRY_VIEW_MIN_MS 5
#define RETRY_MAX_MS 500

/* What a handler needs of an event, valid after the ack. */
struct cm_event {
	enum rdma_cm_event_type type;
	struct rdma_cm_id *id;
	int status;
	bool has_hello;
	struct rdma_sq_hello hello;
};

struct rdma_sq_peer *rdma_sq_peer_by_id(struct rdma_sq_node *node, uint32_t id)
{
	for (uint32_t i = 0; i < node->npeers; i++)
		if (node->peers[i].id == id && (int)i != node->my_index)
			return &node->peers[i];
	return NULL;
}

/* My region target: in the hello without a group key, else with my
 * proof (auth_send). */
static void my_target(const struct rdma_sq_node *node, struct wire_target *t)
{
	*t = (struct wire_target){
		.purpose = WIRE_TARGET_REGION,
		.addr = (uint64_t)(uintptr_t)node->region,
		.rkey = node->region_mr ? node->region_mr->rkey : 0,
		.len = node->region_len,
	};
}

/* My hello with `nonce` (0 without a group key) and `flags`. */
static void hello_with(const struct rdma_sq_node *node, uint64_t nonce,
		       uint32_t flags, uint8_t *buf)
{
	struct wire_target t = { 0 };
	struct rdma_sq_hello h;

	if (!node->has_key && !(flags & RDMA_SQ_HELLO_BUSY))
		my_target(node, &t);
	h = (struct rdma_sq_hello){
		.major = node->opt.wire_major,
		.minor = node->opt.wire_minor,
		.member_id = node->my_id,
		.rkey = t.rkey,
		.addr = t.addr,
		.len = t.len,
		.cfg_fp = node->cookie,
		.nonce = nonce,
		.flags = flags,
	};
	rdma_sq_hello_encode(&h, buf);
}

static void my_hello(const struct rdma_sq_node *node, uint64_t nonce,
		     uint8_t *buf)
{
	hello_with(node, nonce, 0, buf);
}

static bool node_stopped(const struct rdma_sq_node *node)
{
	return __atomic_load_n(&node->stopped, __ATOMIC_ACQUIRE);
}

/* A refusal's hello that says "alive, ask again" (RDMA_SQ_HELLO_BUSY), or
 * once the member stopped, "gone for good" as well (RDMA_SQ_HELLO_STOPPED,
 * which an asker built before it does not read): no region target,
 * whoever asked. */
static void busy_hello(const struct rdma_sq_node *node, uint8_t *buf)
{
	hello_with(node, node->has_key ? squall_auth_nonce() : 0,
		   RDMA_SQ_HELLO_BUSY |
		   (node_stopped(node) ? RDMA_SQ_HELLO_STOPPED : 0), buf);
}

void rdma_sq_stop(struct rdma_sq_node *node)
{
	if (node && !__atomic_exchange_n(&node->stopped, true, __ATOMIC_ACQ_REL))
		rdma_sq_log(node, RDMA_SQ_LOG_INFO, "this member has stopped: "
			    "connection requests are refused as from a member "
			    "that is gone");
}

/* Both sides have a group key, or neither. */
static int check_keyed(const struct rdma_sq_node *node,
		       const struct rdma_sq_peer *p,
		       const struct rdma_sq_hello *h, struct squall_error *err)
{
	if (node->has_key && !h->nonce)
		return squall_error_set(err, -EACCES, "%s does not authenticate "
			"(its group file names no group.key_file); %s requires "
			"the group key", p->who, node->name);
	if (!node->has_key && h->nonce)
		return squall_error_set(err, -EACCES, "%s authenticates with a "
			"group key, and this member has none: set group.key_file "
			"in %s", p->who, node->name);
	return 0;
}

/* A peer's hello must speak our major version, come from the same group
 * file and agree on authentication. */
static int check_hello(const struct rdma_sq_node *node,
		       const struct rdma_sq_peer *p,
		       const struct rdma_sq_hello *h, struct squall_error *err)
{
	int ret = rdma_sq_hello_check_version(h, node->opt.wire_major,
					      node->opt.wire_minor, p->who, err);

	if (!ret)
		ret = rdma_sq_hello_check_cfg(h, node->cookie, p->who,
					      node->name, err);
	return ret ? ret : check_keyed(node, p, h, err);
}

/* ---- the key exchange ----------------------------------------------------- */

static void drop_conn(struct rdma_sq_peer *p);

#define AUTH_MSG_MAX RDMA_SQ_CTL_MSG_MAX

void rdma_sq_ctl_io_free(struct rdma_sq_ctl_io **io)
{
	if (!*io)
		return;
	if ((*io)->mr)
		ibv_dereg_mr((*io)->mr);
	free(*io);
	*io = NULL;
}

int rdma_sq_ctl_io_new(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		       struct rdma_sq_ctl_io **io, const char *what,
		       struct squall_error *err)
{
	rdma_sq_ctl_io_free(io);
	*io = calloc(1, sizeof(**io));
	if (!*io)
		return squall_error_set(err, -ENOMEM, "out of memory for the %s "
					"with %s", what, p->who);
	(*io)->mr = ibv_reg_mr(node->pd, *io, sizeof(**io),
			       IBV_ACCESS_LOCAL_WRITE);
	if (!(*io)->mr)
		return squall_error_set(err, -errno, "ibv_reg_mr for the %s with "
					"%s: %s", what, p->who, strerror(errno));
	return 0;
}

/* Before the connection is up: the receives for the peer's messages of
 * the exchange (the acceptor takes two: proof, then target). */
static int auth_setup(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		      struct squall_error *err)
{
	unsigned n = p->active ? 1 : 2;
	int ret;

	rdma_sq_ctl_io_free(&p->aio);
	p->auth_got = 0;
	p->auth_early = 0;
	if (!node->has_key)
		return 0;
	ret = rdma_sq_ctl_io_new(node, p, &p->aio, "key exchange", err);
	if (ret)
		return ret;
	for (unsigned i = 0; i < n; i++) {
		struct ibv_sge sg = { (uintptr_t)p->aio->recv[i], AUTH_MSG_MAX,
				      p->aio->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = rdma_sq_ctl_wr_id(p, i), .sg_list = &sg,
					  .num_sge = 1 }, *bad;

		ret = ibv_post_recv(p->qp, &wr, &bad);
		if (ret)
			return squall_error_set(err, -ret, "ibv_post_recv for the "
						"key exchange with %s: %s", p->who,
						strerror(ret));
	}
	return 0;
}

/* The exchange's context as seen by `from` proving to `to`. */
static struct squall_auth_ctx auth_ctx(const struct rdma_sq_node *node,
				       const struct rdma_sq_peer *p, bool mine)
{
	uint64_t req = p->active ? p->nonce : p->remote.nonce;
	uint64_t acc = p->active ? p->remote.nonce : p->nonce;

	return (struct squall_auth_ctx){
		.label = "rdma",
		.fingerprint = node->cookie,
		.epoch = node->epoch,
		.from = mine ? node->my_id : p->id,
		.to = mine ? p->id : node->my_id,
		.nonce_req = req,
		.nonce_acc = acc,
	};
}

/* Send my proof (with my target when `target`), or my target alone. */
static int auth_send(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		     bool proof, bool target)
{
	unsigned slot = proof ? 0 : 1;
	uint8_t *buf = p->aio->send[slot];
	struct wire_ext ext = { .type = WIRE_EXT_TARGET,
				.len = WIRE_EXT_TARGET_LEN };
	struct squall_auth_ctx c = auth_ctx(node, p, true);
	struct ibv_sge sg;
	struct ibv_send_wr wr = { 0 }, *bad;
	int hl, ret;

	my_target(node, &ext.u.target);
	hl = wire_encode(buf, AUTH_MSG_MAX, proof ? WIRE_MSG_AUTH :
			 WIRE_MSG_GRANT, 0, target ? &ext : NULL, target ? 1 : 0,
			 proof ? SQUALL_MAC_LEN : 0, NULL);
	if (hl < 0 || (proof && (size_t)hl + SQUALL_MAC_LEN > AUTH_MSG_MAX))
		return -ENOSPC;
	if (proof && squall_auth_prove(node->key, p->active ?
				       SQUALL_AUTH_REQUESTER : SQUALL_AUTH_ACCEPTOR,
				       &c, buf + hl))
		return -EIO;
	sg = (struct ibv_sge){ (uintptr_t)buf,
			       (uint32_t)hl + (proof ? SQUALL_MAC_LEN : 0),
			       p->aio->mr->lkey };
	wr.wr_id = rdma_sq_ctl_wr_id(p, 2 + slot);
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	ret = ibv_post_send(p->qp, &wr, &bad);
	return -ret;
}

/* The acceptor turns away a requester whose proof is wrong and waits for
 * the real member (a stranger must not stop it). */
/* Count and say a refusal of a process claiming to be p (rdma_sq_refused,
 * the log, and p's last try, which a timeout reports). */
static void note_refusal(struct rdma_sq_node *node, struct rdma_sq_peer *p,
			 const char *why)
{
	__atomic_fetch_add(&node->refused, 1, __ATOMIC_RELAXED);
	rdma_sq_log(node, RDMA_SQ_LOG_ERROR, "member %u refused a connection "
		    "claiming to be %s: %s", node->my_id, p->who, why);
	snprintf(p->last_try, sizeof(p->last_try), "a connection claiming to "
		 "be it was refused: %.200s", why);
}

static void auth_refuse(struct rdma_sq_node *node, struct rdma_sq_peer *p,
			const char *why)
{
	note_refusal(node, p, why);
	if (p->cm)
		rdma_disconnect(p->cm);
	drop_conn(p);
	rdma_sq_ctl_io_free(&p->aio);
	p->state = PEER_IDLE;
}

static void auth_fail(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		      const char *why)
{
	if (p->active)
		rdma_sq_peer_fail(node, p, "member %u: %s", node->my_id, why);
	else
		auth_refuse(node, p, why);
}

/* A message of the exchange from p arrived in its receive `slot`. */
static void auth_recv(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		      unsigned slot, uint32_t len)
{
	const uint8_t *buf = p->aio->recv[slot];
	struct squall_auth_ctx c = auth_ctx(node, p, false);
	bool want_proof = p->active || p->auth_got == 0;
	bool want_target = p->active || p->auth_got == 1;
	struct wire_msg m;
	struct wire_ext ext;
	char why[SQUALL_ERRMSG_MAX];

	bool malformed = wire_decode(buf, len, &m, NULL) != 0;

	p->auth_got++;
	if (malformed || m.type != (want_proof ? WIRE_MSG_AUTH : WIRE_MSG_GRANT)) {
		snprintf(why, sizeof(why), "%s sent no proof of the group key "
			 "(a %s message of %u bytes)", p->who,
			 malformed ? "malformed" : wire_msg_type_name(m.type),
			 len);
		auth_fail(node, p, why);
		return;
	}
	if (want_proof &&
	    !squall_auth_check(node->key, p->active ? SQUALL_AUTH_ACCEPTOR
					      : SQUALL_AUTH_REQUESTER,
			       &c, m.payload, m.payload_len)) {
		snprintf(why, sizeof(why), "%s's proof of the group key is "
			 "wrong: it holds another key than %.160s (group.key_file "
			 "of %.160s)", p->who, node->key_file,
			 node->name);
		auth_fail(node, p, why);
		return;
	}
	if (want_target) {
		if (wire_ext_find(&m, WIRE_EXT_TARGET, &ext) ||
		    ext.len < WIRE_EXT_TARGET_LEN ||
		    ext.u.target.purpose != WIRE_TARGET_REGION) {
			snprintf(why, sizeof(why), "%s proved the group key but "
				 "sent no region target", p->who);
			auth_fail(node, p, why);
			return;
		}
		p->remote.addr = ext.u.target.addr;
		p->remote.rkey = ext.u.target.rkey;
		p->remote.len = ext.u.target.len;
	}
	if (p->active) {
		/* Proven: my target now, then the peer is up. */
		if (auth_send(node, p, false, true)) {
			rdma_sq_peer_fail(node, p, "member %u: sending its "
					  "region target to %s failed", node->my_id,
					  p->who);
			return;
		}
	} else if (want_proof) {
		if (auth_send(node, p, true, true)) {
			rdma_sq_peer_fail(node, p, "member %u: sending its proof "
					  "of the group key to %s failed",
					  node->my_id, p->who);
			return;
		}
		return; /* its target comes next */
	}
	rdma_sq_set_state(p, PEER_UP);
	rdma_sq_log(node, RDMA_SQ_LOG_INFO, "connected to %s (qp %u), each "
		    "proved the group key", p->who, p->qp_num);
}

/* The requester: the acceptor closed the connection during the
 * exchange, which it does when this member's proof is wrong. */
static void lost_in_exchange(struct rdma_sq_node *node, struct rdma_sq_peer *p)
{
	rdma_sq_peer_fail(node, p, "member %u: %s closed the connection during "
			  "the key exchange: it did not accept this member's "
			  "proof of the group key (does %.160s hold the group's "
			  "key?)", node->my_id, p->who, node->key_file);
}

void rdma_sq_auth_wc(struct rdma_sq_node *node, const struct ibv_wc *wc)
{
	uint32_t id = (uint32_t)wc->wr_id;
	unsigned what = (unsigned)(wc->wr_id >> 32) & 0xff;
	struct rdma_sq_peer *p;

	if (what == RDMA_SQ_GRANT_RECV || what == RDMA_SQ_GRANT_SEND) {
		rdma_sq_grant_wc(node, wc);
		return;
	}
	p = rdma_sq_peer_by_id(node, id);
	if (what == RDMA_SQ_DRAIN_SEND) {
		if (p && p->qp_num == wc->qp_num)
			p->drain_marked = false;
		return;
	}
	if (!p || !p->aio || p->qp_num != wc->qp_num)
		return; /* a connection since dropped */
	if (wc->status != IBV_WC_SUCCESS) {
		if (p->state == PEER_AUTH && p->active)
			lost_in_exchange(node, p);
		else if (p->state == PEER_AUTH)
			auth_refuse(node, p, "the connection failed during the "
				    "key exchange");
		return;
	}
	if (what < 2 && p->state == PEER_AUTH) {
		auth_recv(node, p, what, wc->byte_len);
	} else if (what < 2 && p->state == PEER_ACCEPTING && !p->auth_early) {
		/* The requester's proof can complete here before this side's
		 * ESTABLISHED event is read: kept for on_established. */
		p->auth_early = what + 1;
		p->auth_early_len = wc->byte_len;
	}
}

void rdma_sq_ctl_poll(struct rdma_sq_node *node)
{
	struct ibv_wc wc[8];
	int n;

	while ((n = ibv_poll_cq(node->cq, 8, wc)) > 0)
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id >> 56 == RDMA_SQ_WR_AUTH)
				rdma_sq_auth_wc(node, &wc[i]);
			else if (node->stash_n < (int)(sizeof(node->stash) /
						      sizeof(node->stash[0])))
				node->stash[node->stash_n++] = wc[i];
		}
}

static void drop_conn(struct rdma_sq_peer *p)
{
	if (!p->cm)
		return;
	if (p->cm->qp)
		rdma_destroy_qp(p->cm);
	rdma_destroy_id(p->cm);
	p->cm = NULL;
	p->qp = NULL;
	p->qp_num = 0;
}

void rdma_sq_peer_fail(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		       const char *fmt, ...)
{
	va_list ap;

	if (p->state == PEER_DEAD)
		return;
	va_start(ap, fmt);
	vsnprintf(p->error, sizeof(p->error), fmt, ap);
	va_end(ap);
	rdma_sq_log(node, RDMA_SQ_LOG_ERROR, "%s", p->error);
	/* rdma_disconnect moves the QP to the error state: every request
	 * still queued completes (flushed) instead of waiting forever. The
	 * QP itself stays until destroy, so late completions still map to a
	 * peer. */
	if (p->cm && p->state == PEER_UP)
		rdma_disconnect(p->cm);
	/* A peer that fails once its connection was up (it died, or closed,
	 * meanwhile) did not refuse anything: while connect_all waits for
	 * the others, it counts as found gone (-EHOSTDOWN), a failure for
	 * the view to deal with. */
	if (p->state == PEER_UP)
		p->gone = true;
	rdma_sq_set_state(p, PEER_DEAD);
}

static void retry_later(struct rdma_sq_node *node, struct rdma_sq_peer *p,
			const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* An active attempt failed in a way that a later try may fix (the peer is
 * not listening yet): forget the id and try again after a backoff. */
static void retry_later(struct rdma_sq_node *node, struct rdma_sq_peer *p,
			const char *fmt, ...)
{
	unsigned delay = (node->epoch ? RETRY_VIEW_MIN_MS : RETRY_MIN_MS)
			 << (p->attempts < 7 ? p->attempts : 7);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->last_try, sizeof(p->last_try), fmt, ap);
	va_end(ap);
	rdma_sq_log(node, RDMA_SQ_LOG_DEBUG, "%s: %s; retrying", p->who, p->last_try);
	drop_conn(p);
	if (delay > RETRY_MAX_MS)
		delay = RETRY_MAX_MS;
	p->retry_at_ms = rdma_sq_now_ms() + delay;
	p->state = PEER_RETRY_WAIT;
}

static int make_qp(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		   struct rdma_cm_id *id, struct squall_error *err)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = node->cq,
		.recv_cq = node->cq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
		.cap = {
			.max_send_wr = node->opt.max_send_wr,
			.max_recv_wr = node->opt.max_recv_wr,
			.max_send_sge = node->opt.max_sge,
			.max_recv_sge = node->opt.max_sge,
			.max_inline_data = node->opt.max_inline,
		},
	};
	int ret;

	if (id->verbs != node->ctx)
		return squall_error_set(err, -EXDEV,
			"%s is reached through RDMA device %s, not %s",
			p->who, ibv_get_device_name(id->verbs->device),
			rdma_sq_device_name(node));
	if (rdma_create_qp(id, node->pd, &qa))
		return squall_error_set(err, -errno,
			"rdma_create_qp for %s: %s", p->who, strerror(errno));
	p->qp = id->qp;
	p->qp_num = id->qp->qp_num;
	/* A fresh nonce per attempt: a proof is good for this one only. */
	p->nonce = node->has_key ? squall_auth_nonce() : 0;
	if (node->has_key && !p->nonce)
		return squall_error_set(err, -EIO, "libsodium could not start");
	ret = auth_setup(node, p, err);
	return ret ? ret : rdma_sq_grant_setup(node, p, err);
}

static void conn_param(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		       struct rdma_conn_param *cp, uint8_t *hello)
{
	memset(cp, 0, sizeof(*cp));
	my_hello(node, p->nonce, hello);
	cp->private_data = hello;
	cp->private_data_len = RDMA_SQ_WIRE_LEN;
	cp->responder_resources = (uint8_t)node->max_rd_atom;
	cp->initiator_depth = (uint8_t)node->max_rd_atom;
	cp->retry_count = node->opt.retry_count;
	/* Receives are posted by the caller after connect_all returns; a
	 * SEND that arrives first is retried by the NIC rather than lost. */
	cp->rnr_retry_count = 7;
}

static int start_connect(struct rdma_sq_node *node, struct rdma_sq_peer *p,
			 struct squall_error *err)
{
	struct sockaddr_in dst;
	uint8_t t = node->opt.ack_timeout;

	memset(&dst, 0, sizeof(dst));
	dst.sin_family = AF_INET;
	dst.sin_port = htons(p->m->port);
	if (inet_pton(AF_INET, p->m->address, &dst.sin_addr) != 1)
		return squall_error_set(err, -EINVAL,
			"%s: address is not an IPv4 literal", p->who);
	p->attempts++;
	if (rdma_create_id(node->ech, &p->cm, p, RDMA_PS_TCP))
		return squall_error_set(err, -errno, "rdma_create_id for %s: %s",
					p->who, strerror(errno));
	if (rdma_set_option(p->cm, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			    &t, sizeof(t)))
		return squall_error_set(err, -errno,
			"rdma_set_option(ACK_TIMEOUT) for %s: %s", p->who,
			strerror(errno));
	struct sockaddr_in src = node->my_addr;

	src.sin_port = 0;
	if (rdma_resolve_addr(p->cm, (struct sockaddr *)&src,
			      (struct sockaddr *)&dst, RESOLVE_TIMEOUT_MS)) {
		retry_later(node, p, "rdma_resolve_addr: %s", strerror(errno));
		return 0;
	}
	p->state = PEER_RESOLVING;
	return 0;
}

static int on_route_resolved(struct rdma_sq_node *node, struct rdma_sq_peer *p,
			     struct squall_error *err)
{
	struct rdma_conn_param cp;
	uint8_t hello[RDMA_SQ_WIRE_LEN];
	int ret = make_qp(node, p, p->cm, err);

	if (ret)
		return ret;
	conn_param(node, p, &cp, hello);
	if (rdma_connect(p->cm, &cp)) {
		retry_later(node, p, "rdma_connect: %s", strerror(errno));
		return 0;
	}
	p->state = PEER_CONNECTING;
	return 0;
}

/* A request that can no longer be taken (err says why; its sender gave
 * up on it or died before this member read it, which a kept listener
 * makes likelier: requests wait in it between views) ends that attempt,
 * not the wait: the peer asks again, or is found gone, or the wait ends
 * in a timeout whose error names this reason as the last try's. */
static int stale_request(struct rdma_sq_node *node, struct rdma_sq_peer *p,
			 struct squall_error *err)
{
	rdma_sq_log(node, RDMA_SQ_LOG_INFO, "dropping a connection request "
		    "of %s that is no longer open: %s", p->who, err->msg);
	snprintf(p->last_try, sizeof(p->last_try), "%.240s", err->msg);
	drop_conn(p);
	p->state = PEER_IDLE;
	squall_error_clear(err);
	return 0;
}

/* A connect request from a lower member: check it, then accept or refuse. */
static int on_request(struct rdma_sq_node *node, const struct cm_event *ev,
		      struct squall_error *err)
{
	struct rdma_sq_peer *p = ev->has_hello ?
		rdma_sq_peer_by_id(node, ev->hello.member_id) : NULL;
	struct rdma_conn_param cp;
	uint8_t hello[RDMA_SQ_WIRE_LEN];
	int ret;

	if (!ev->has_hello) {
		rdma_sq_log(node, RDMA_SQ_LOG_ERROR, "refusing a connection "
			    "request (not a squall hello)");
		rdma_reject(ev->id, NULL, 0);
		rdma_destroy_id(ev->id);
		return 0;
	}
	if (node_stopped(node) || !p || p->active || p->state == PEER_UP ||
	    p->state == PEER_DEAD) {
		/* A member of the group, or one that says so, that this node
		 * cannot take now: not in this view (yet), or the side that
		 * connects (a higher member asking whether this one still
		 * listens: start_probe), or one whose last connection is
		 * still up or failed here (this member has not reached the
		 * asker's view). The refusal says this member is alive; once
		 * it stopped, that it is gone, and the asker waits no more
		 * (busy_hello). */
		if (node_stopped(node))
			rdma_sq_log(node, RDMA_SQ_LOG_INFO, "refusing a "
				    "connection request from member %u: this "
				    "member has stopped", ev->hello.member_id);
		else
			rdma_sq_log(node, p && p->active ? RDMA_SQ_LOG_DEBUG :
				    RDMA_SQ_LOG_INFO, "refusing a connection "
				    "request from member %u for now (%s)",
				    ev->hello.member_id, !p ? "not in this view" :
				    p->active ? "it asks whether this member "
				    "listens" : p->state == PEER_UP ?
				    "its last connection is up" :
				    "failed in this view");
		busy_hello(node, hello);
		rdma_reject(ev->id, hello, RDMA_SQ_WIRE_LEN);
		rdma_destroy_id(ev->id);
		return 0;
	}
	ret = check_hello(node, p, &ev->hello, err);
	if (ret && node->has_key) {
		/* With a group key, a stranger's request does not cost the
		 * real member its place: refused, and the wait goes on. The
		 * answer's nonce says this member authenticates. */
		my_hello(node, squall_auth_nonce(), hello);
		rdma_reject(ev->id, hello, RDMA_SQ_WIRE_LEN);
		rdma_destroy_id(ev->id);
		note_refusal(node, p, err->msg);
		squall_error_clear(err);
		return 0;
	}
	if (ret) {
		my_hello(node, 0, hello);
		rdma_reject(ev->id, hello, RDMA_SQ_WIRE_LEN);
		rdma_destroy_id(ev->id);
		rdma_sq_peer_fail(node, p, "%s", err->msg);
		return ret;
	}
	drop_conn(p);   /* a stale attempt the peer has given up on */
	ev->id->context = p;
	p->cm = ev->id;
	p->remote = ev->hello;
	ret = make_qp(node, p, ev->id, err);
	/* No queue pair on the request's identifier: the request is no
	 * longer open (its sender gave up or died before it was read). */
	if (ret && !p->qp && ret != -EXDEV)
		return stale_request(node, p, err);
	if (ret)
		return ret;
	conn_param(node, p, &cp, hello);
	if (rdma_accept(ev->id, &cp)) {
		squall_error_set(err, -errno, "rdma_accept for %s: %s",
				 p->who, strerror(errno));
		return stale_request(node, p, err);
	}
	p->state = PEER_ACCEPTING;
	return 0;
}

/* A refusal without a squall hello, with the status of a request nothing
 * listens for: the IB CM's "invalid service id" (8) where no one listens
 * on the port, or a consumer reject (28) where rdma_cm listens on the
 * port for other addresses (members sharing the device) but not for this
 * one. A live squall member answers with its hello (busy_hello). */
static bool no_listener(int status)
{
	return status == 8 || status == 28;
}

/* p is found gone (`why` follows its name): failed, and connect_all
 * waits no more. */
static void found_gone(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		       const char *why)
{
	if (p->probe)
		rdma_destroy_id(p->probe);
	p->probe = NULL;
	p->gone = true;
	rdma_sq_peer_fail(node, p, "%s %s", p->who, why);
}

/* A peer that kept its listener (opt.listening) has none: its process is
 * gone (or closed its group). */
static void peer_gone(struct rdma_sq_node *node, struct rdma_sq_peer *p)
{
	found_gone(node, p, "is gone: nothing listens at its address any "
		   "more, where it kept listening from its last view");
}

/* Whether a refusal's hello says its member p stopped for good
 * (RDMA_SQ_HELLO_STOPPED). */
static bool says_stopped(const struct rdma_sq_node *node,
			 const struct rdma_sq_peer *p, const struct cm_event *ev)
{
	return ev->has_hello && (ev->hello.flags & RDMA_SQ_HELLO_STOPPED) &&
	       ev->hello.major == node->opt.wire_major &&
	       ev->hello.member_id == p->id;
}

/* p refused us saying it stopped. */
static void peer_stopped(struct rdma_sq_node *node, struct rdma_sq_peer *p)
{
	found_gone(node, p, "has stopped: its group failed, and it refused "
		   "the connection saying so");
}

/* ---- probes: does a lower peer that kept its listener still listen? ---- */

static void probe_later(struct rdma_sq_peer *p)
{
	unsigned shift = p->probes < 7 ? p->probes : 7;
	unsigned delay = RETRY_VIEW_MIN_MS << shift;

	if (p->probe)
		rdma_destroy_id(p->probe);
	p->probe = NULL;
	p->probes++;
	p->probe_at_ms = rdma_sq_now_ms() +
			 (delay > RETRY_MAX_MS ? RETRY_MAX_MS : delay);
}

/* Ask p, which connects to this member, whether it still listens: a
 * connection request carrying this member's hello, which a live p
 * refuses with its own (busy_hello: it is the side that connects); a
 * refusal without one, for an address nothing listens at, says it is
 * gone. */
static void start_probe(struct rdma_sq_node *node, struct rdma_sq_peer *p)
{
	struct sockaddr_in dst = { .sin_family = AF_INET };
	struct sockaddr_in src = node->my_addr;

	src.sin_port = 0;
	dst.sin_port = htons(p->m->port);
	if (inet_pton(AF_INET, p->m->address, &dst.sin_addr) != 1 ||
	    rdma_create_id(node->ech, &p->probe, p, RDMA_PS_TCP)) {
		p->probe = NULL;
		probe_later(p);
		return;
	}
	if (rdma_resolve_addr(p->probe, (struct sockaddr *)&src,
			      (struct sockaddr *)&dst, RESOLVE_TIMEOUT_MS))
		probe_later(p);
}

static void on_probe_event(struct rdma_sq_node *node, struct rdma_sq_peer *p,
			   const struct cm_event *ev)
{
	struct rdma_conn_param cp = { 0 };
	uint8_t hello[RDMA_SQ_WIRE_LEN];

	switch (ev->type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(p->probe, RESOLVE_TIMEOUT_MS))
			probe_later(p);
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		my_hello(node, 0, hello);
		cp.private_data = hello;
		cp.private_data_len = RDMA_SQ_WIRE_LEN;
		cp.retry_count = node->opt.retry_count;
		if (rdma_connect(p->probe, &cp))
			probe_later(p);
		return;
	case RDMA_CM_EVENT_REJECTED:
		/* A refusal with its hello: alive, unless it says it stopped.
		 * Its own request may be on the way meanwhile: gone only while
		 * none came. */
		if (says_stopped(node, p, ev) && p->state == PEER_IDLE) {
			peer_stopped(node, p);
			return;
		}
		if (!ev->has_hello && no_listener(ev->status) &&
		    p->state == PEER_IDLE) {
			peer_gone(node, p);
			return;
		}
		probe_later(p);
		return;
	default:
		/* Accepted (it should not), unreachable, timed out: no
		 * answer either way; ask again later. */
		probe_later(p);
		return;
	}
}

static int on_rejected(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		       const struct cm_event *ev, struct squall_error *err)
{
	int ret;

	if (says_stopped(node, p, ev)) {
		drop_conn(p);
		peer_stopped(node, p);
		return 0;
	}
	if (ev->has_hello && (ev->hello.flags & RDMA_SQ_HELLO_BUSY) &&
	    ev->hello.major == node->opt.wire_major) {
		retry_later(node, p, "not now: it is alive, not in this view "
			    "yet or still in its last one");
		return 0;
	}
	if (ev->has_hello) {
		/* A squall peer refused us: only a version or group file
		 * mismatch does. */
		ret = check_hello(node, p, &ev->hello, err);
		if (!ret)
			ret = squall_error_set(err, -ECONNREFUSED,
				"%s refused the connection", p->who);
		drop_conn(p);
		rdma_sq_peer_fail(node, p, "%s", err->msg);
		return ret;
	}
	if (p->listens && no_listener(ev->status)) {
		drop_conn(p);
		peer_gone(node, p);
		return 0;
	}
	retry_later(node, p, "connection rejected (status %d: %s)", ev->status,
		    no_listener(ev->status) ?
		    "nobody listens on that address and port yet" :
		    "not by a squall member");
	return 0;
}

/* rdma_cm moves the queue pair to RTR with min_rnr_timer 0, which the
 * spec reads as 655 ms: a peer's SEND or WRITE_WITH_IMM that finds no
 * posted receive would wait that long before each retry. Ask for 0.64 ms
 * (code 12) instead; a device that refuses keeps the default, which is
 * slow but correct. */
static void shorten_rnr_wait(struct rdma_sq_node *node, struct rdma_sq_peer *p)
{
	struct ibv_qp_attr qa = { .min_rnr_timer = 12 };

	if (p->cm && p->cm->qp &&
	    ibv_modify_qp(p->cm->qp, &qa, IBV_QP_MIN_RNR_TIMER))
		rdma_sq_log(node, RDMA_SQ_LOG_INFO, "%s: min_rnr_timer stays at "
			    "the default (655 ms): %s", p->who, strerror(errno));
}

static int on_established(struct rdma_sq_node *node, struct rdma_sq_peer *p,
			  const struct cm_event *ev, struct squall_error *err)
{
	if (p->active) {
		int ret;

		if (!ev->has_hello) {
			drop_conn(p);
			rdma_sq_peer_fail(node, p, "%s accepted without a squall hello",
					  p->who);
			return squall_error_set(err, -EPROTO, "%s", p->error);
		}
		ret = check_hello(node, p, &ev->hello, err);
		if (ret) {
			rdma_disconnect(p->cm);
			rdma_sq_peer_fail(node, p, "%s", err->msg);
			return ret;
		}
		p->remote = ev->hello;
	}
	shorten_rnr_wait(node, p);
	if (node->has_key) {
		/* Up once each side proved the key (auth_recv). */
		rdma_sq_set_state(p, PEER_AUTH);
		if (p->active && auth_send(node, p, true, false)) {
			rdma_sq_peer_fail(node, p, "member %u: sending its proof "
					  "of the group key to %s failed",
					  node->my_id, p->who);
			return squall_error_set(err, -EIO, "%s", p->error);
		}
		if (p->auth_early) {
			unsigned slot = p->auth_early - 1;

			p->auth_early = 0;
			auth_recv(node, p, slot, p->auth_early_len);
		}
		return 0;
	}
	rdma_sq_set_state(p, PEER_UP);
	rdma_sq_log(node, RDMA_SQ_LOG_INFO, "connected to %s (qp %u)", p->who,
		    p->qp_num);
	return 0;
}

/* A connection that was up (or being set up) went away. */
static void on_lost(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		    const struct cm_event *ev)
{
	if (p->state == PEER_UP || p->state == PEER_DEAD) {
		rdma_sq_peer_fail(node, p, "%s disconnected (%s)", p->who,
				  rdma_event_str(ev->type));
		return;
	}
	if (p->state == PEER_AUTH && p->active) {
		lost_in_exchange(node, p);
		return;
	}
	if (p->active) {
		retry_later(node, p, "%s (status %d)", rdma_event_str(ev->type),
			    ev->status);
		return;
	}
	/* Passive: wait for the peer to try again. */
	snprintf(p->last_try, sizeof(p->last_try), "%s (status %d)",
		 rdma_event_str(ev->type), ev->status);
	drop_conn(p);
	p->state = PEER_IDLE;
}

static int handle(struct rdma_sq_node *node, const struct cm_event *ev,
		  struct squall_error *err)
{
	struct rdma_sq_peer *p = ev->type == RDMA_CM_EVENT_CONNECT_REQUEST ?
		NULL : ev->id->context;

	if (ev->type == RDMA_CM_EVENT_CONNECT_REQUEST)
		return on_request(node, ev, err);
	if (ev->type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		for (uint32_t i = 0; i < node->npeers; i++)
			if ((int)i != node->my_index)
				rdma_sq_peer_fail(node, &node->peers[i],
					"RDMA device %s was removed",
					rdma_sq_device_name(node));
		return squall_error_set(err, -ENODEV, "RDMA device %s was removed",
					rdma_sq_device_name(node));
	}
	if (p && p->probe && p->probe == ev->id) {
		on_probe_event(node, p, ev);
		return 0;
	}
	if (!p || p->cm != ev->id)
		return 0;       /* an id we already dropped */
	switch (ev->type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(p->cm, RESOLVE_TIMEOUT_MS))
			retry_later(node, p, "rdma_resolve_route: %s", strerror(errno));
		return 0;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		return on_route_resolved(node, p, err);
	case RDMA_CM_EVENT_ESTABLISHED:
		return on_established(node, p, ev, err);
	case RDMA_CM_EVENT_REJECTED:
		return on_rejected(node, p, ev, err);
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_DISCONNECTED:
		on_lost(node, p, ev);
		return 0;
	default:
		return 0;
	}
}

/* Take one event off the channel. Returns 1 when one was handled, 0 when
 * the channel is empty, or a negative errno. */
static int one_event(struct rdma_sq_node *node, struct squall_error *err)
{
	struct rdma_cm_event *e;
	struct cm_event ev;

	if (rdma_get_cm_event(node->ech, &e)) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return squall_error_set(err, -errno, "rdma_get_cm_event: %s",
					strerror(errno));
	}
	memset(&ev, 0, sizeof(ev));
	ev.type = e->event;
	ev.id = e->id;
	ev.status = e->status;
	if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST ||
	    e->event == RDMA_CM_EVENT_ESTABLISHED ||
	    e->event == RDMA_CM_EVENT_REJECTED)
		ev.has_hello = !rdma_sq_hello_decode(e->param.conn.private_data,
						     e->param.conn.private_data_len,
						     &ev.hello);
	rdma_ack_cm_event(e);
	rdma_sq_log(node, RDMA_SQ_LOG_DEBUG, "rdma_cm event %s status %d",
		    rdma_event_str(ev.type), ev.status);
	int ret = handle(node, &ev, err);

	return ret ? ret : 1;
}

int rdma_sq_events(struct rdma_sq_node *node)
{
	struct squall_error err;
	int ret;

	/* Its channel left with its listener (rdma_sq_listener_keep): the
	 * events there are the next node's. */
	if (!node->ech)
		return 0;
	while ((ret = one_event(node, &err)) > 0)
		;
	return ret;
}

/* The first peer neither connected nor refused. */
static struct rdma_sq_peer *first_missing(struct rdma_sq_node *node)
{
	for (uint32_t i = 0; i < node->npeers; i++)
		if ((int)i != node->my_index && node->peers[i].state != PEER_UP &&
		    node->peers[i].state != PEER_DEAD)
			return &node->peers[i];
	return NULL;
}

/* The first refusal: a peer that failed while connecting. */
static int first_refusal(struct rdma_sq_node *node, struct squall_error *err)
{
	for (uint32_t i = 0; i < node->npeers; i++)
		if (node->peers[i].state == PEER_DEAD && !node->peers[i].gone)
			return squall_error_set(err, -ECONNREFUSED, "%s",
						node->peers[i].error);
	for (uint32_t i = 0; i < node->npeers; i++)
		if (node->peers[i].gone)
			return squall_error_set(err, -EHOSTDOWN, "%s",
						node->peers[i].error);
	return 0;
}

static int timeout_error(struct rdma_sq_node *node, struct rdma_sq_peer *p,
			 uint32_t ms, struct squall_error *err)
{
	if (p->active)
		return squall_error_set(err, -ETIMEDOUT,
			"member %u could not connect to %s within %u ms "
			"(%u attempts; last: %s)", node->my_id, p->who, ms,
			p->attempts, p->last_try[0] ? p->last_try : "no answer");
	return squall_error_set(err, -ETIMEDOUT,
		"member %u: %s did not connect within %u ms%s%s", node->my_id,
		p->who, ms, p->last_try[0] ? "; last: " : "", p->last_try);
}

/* Start every active attempt that is due; *next = ms until the next one
 * (-1: none pending). Returns 0 or a negative errno. */
static int kick(struct rdma_sq_node *node, uint64_t now, int *next,
		struct squall_error *err)
{
	*next = -1;

	for (uint32_t i = 0; i < node->npeers; i++) {
		struct rdma_sq_peer *p = &node->peers[i];
		int ret;

		if ((int)i == node->my_index)
			continue;
		if (!p->active) {
			/* A lower peer that kept its listener and has not
			 * asked yet: is it still there? */
			if (!p->listens || p->state != PEER_IDLE)
				continue;
			if (!p->probe && p->probe_at_ms <= now)
				start_probe(node, p);
			if (!p->probe) {
				int d = (int)(p->probe_at_ms - now);

				if (*next < 0 || d < *next)
					*next = d < 0 ? 0 : d;
			}
			continue;
		}
		if (p->state == PEER_IDLE ||
		    (p->state == PEER_RETRY_WAIT && p->retry_at_ms <= now)) {
			ret = start_connect(node, p, err);
			if (ret)
				return ret;
		}
		if (p->state == PEER_RETRY_WAIT) {
			int d = (int)(p->retry_at_ms - now);

			if (*next < 0 || d < *next)
				*next = d < 0 ? 0 : d;
		}
	}
	return 0;
}

/* Hand back an error kept for later. */
static int keep(struct squall_error *err, const struct squall_error *kept)
{
	if (err)
		*err = *kept;
	return kept->code;
}

int rdma_sq_connect_all(struct rdma_sq_node *node, struct squall_error *err)
{
	struct squall_error refused = { 0 };
	uint32_t limit = node->connect_timeout_ms ? node->connect_timeout_ms : 10000;
	uint64_t deadline = rdma_sq_now_ms() + limit;
	struct rdma_sq_peer *p;

	squall_error_clear(err);
	/* A kept listener listens already, with its backlog. The backlog
	 * counts requests not yet read; one over it is refused as if
	 * nothing listened (a consumer reject without a hello), which a
	 * peer that kept its listener takes for "gone". Between views each
	 * peer may have two waiting (its connection and its probe). */
	if (!node->listening && rdma_listen(node->listen_id,
					    (int)(4 * RDMA_SQ_MAX_MEMBERS)))
		return squall_error_set(err, -errno, "rdma_listen on %s:%u: %s",
			node->members[node->my_index].address,
			node->members[node->my_index].port, strerror(errno));
	node->listening = true;
	/* The first probes go after a first retry's wait: the lower peers
	 * are expected to ask first. */
	for (uint32_t i = 0; i < node->npeers; i++)
		node->peers[i].probe_at_ms = rdma_sq_now_ms() +
					     2 * RETRY_VIEW_MIN_MS;
	/* A refusal does not end the loop: the other peers still get their
	 * answer (connected, or refused too), so that a peer refusing us, or
	 * refused by us, hears why from us instead of finding us gone. */
	while ((p = first_missing(node))) {
		uint64_t now = rdma_sq_now_ms();
		struct pollfd pfd = { .fd = node->ech->fd, .events = POLLIN };
		int wait, ret;

		if (now >= deadline)
			return refused.code ? keep(err, &refused) :
			       first_refusal(node, err) ?:
			       timeout_error(node, p, limit, err);
		ret = kick(node, now, &wait, err);
		if (ret)
			return ret;
		if (wait < 0 || (uint64_t)wait > deadline - now)
			wait = (int)(deadline - now);
		/* Key exchanges in progress: their completions come on the
		 * completion queue, not the rdma_cm channel. */
		if (node->has_key) {
			rdma_sq_ctl_poll(node);
			if (wait > 2)
				wait = 2;
		}
		ret = poll(&pfd, 1, wait);
		if (ret < 0 && errno != EINTR)
			return squall_error_set(err, -errno, "poll on the rdma_cm channel: %s",
						strerror(errno));
		while ((ret = one_event(node, err)) > 0)
			;
		/* A peer refused (or was refused for) its version or group
		 * file: it is marked dead; go on with the others. */
		if ((ret == -EPROTO || ret == -ECONNREFUSED || ret == -EACCES) &&
		    !refused.code)
			refused = err ? *err : (struct squall_error){ .code = ret };
		else if (ret < 0 && ret != -EPROTO && ret != -ECONNREFUSED &&
			 ret != -EACCES)
			return ret;
	}
	return refused.code ? keep(err, &refused) : first_refusal(node, err);
}

int rdma_sq_remote(const struct rdma_sq_node *node, uint32_t peer,
		   enum rdma_sq_target purpose, uint64_t *addr,
		   uint32_t *rkey, uint64_t *len)
{
	const struct rdma_sq_peer *p =
		rdma_sq_peer_by_id((struct rdma_sq_node *)node, peer);

	if (!p || (unsigned)purpose >= RDMA_SQ_TARGET_COUNT)
		return -ENOENT;
	if (rdma_sq_peer_state(p) != PEER_UP)
		return -ENOTCONN;
	if (purpose != RDMA_SQ_TARGET_REGION) {
		if (!p->grant[purpose].set)
			return -ENOENT;
		if (addr)
			*addr = p->grant[purpose].addr;
		if (rkey)
			*rkey = p->grant[purpose].rkey;
		if (len)
			*len = p->grant[purpose].len;
		return 0;
	}
	if (addr)
		*addr = p->remote.addr;
	if (rkey)
		*rkey = p->remote.rkey;
	if (len)
		*len = p->remote.len;
	return 0;
}

bool rdma_sq_peer_refuses_with_hello(const struct rdma_sq_node *node,
				     uint32_t peer)
{
	const struct rdma_sq_peer *p =
		rdma_sq_peer_by_id((struct rdma_sq_node *)node, peer);

	/* p->remote is the hello of its last connection here (0s: none). */
	return p && p->remote.major == node->opt.wire_major &&
	       p->remote.minor >= 1;
}

bool rdma_sq_peer_alive(const struct rdma_sq_node *node, uint32_t peer)
{
	const struct rdma_sq_peer *p =
		rdma_sq_peer_by_id((struct rdma_sq_node *)node, peer);

	return p && rdma_sq_peer_state(p) == PEER_UP;
}

const char *rdma_sq_peer_error(const struct rdma_sq_node *node, uint32_t peer)
{
	const struct rdma_sq_peer *p =
		rdma_sq_peer_by_id((struct rdma_sq_node *)node, peer);

	return p ? p->error : "not a member";
}
