/*
 * cq.c - the one completion dispatcher: every queue pair of a node shares
 * one completion queue, so one poll sees all work, and each completion is
 * tagged with the member id of its queue pair's peer.
 *
 * A failed completion is how a dead peer usually shows itself (transport
 * retries exceeded); it marks the peer dead so later posts fail fast. The
 * rdma_cm channel (where a peer's disconnect arrives) is checked when the
 * completion queue is idle, and is one of the two descriptors a blocking
 * wait sleeps on. A completion also ends the request's holds on cached
 * registrations.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdma/node.h"

/* How a receive says the SEND carried an invalidation. libibverbs names it
 * IBV_WC_WITH_INV (bit 3), but providers that hand the kernel's completion
 * through unchanged (rxe) set the kernel's IB_WC_WITH_INVALIDATE, bit 2,
 * which libibverbs calls IBV_WC_IP_CSUM_OK. A checksum flag means nothing
 * on a reliable connection, so on RC receives either bit means an
 * invalidation (and the key it names is checked by the owner). */
#define RECV_WITH_INV (IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK)

/* Empty polls between two looks at the rdma_cm channel (a system call). */
#define CM_CHECK_EVERY 256

static enum rdma_sq_opcode map_opcode(const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS)
		return RDMA_SQ_OP_UNKNOWN;
	switch (wc->opcode) {
	case IBV_WC_RDMA_WRITE:
		/* verbs reports WRITE_WITH_IMM as a plain write on the
		 * sender's side; the flag tells them apart */
		return wc->wc_flags & IBV_WC_WITH_IMM ? RDMA_SQ_OP_WRITE_IMM :
							 RDMA_SQ_OP_WRITE;
	case IBV_WC_SEND:
		return RDMA_SQ_OP_SEND;
	case IBV_WC_RDMA_READ:
		return RDMA_SQ_OP_READ;
	case IBV_WC_RECV:
		return RDMA_SQ_OP_RECV;
	case IBV_WC_RECV_RDMA_WITH_IMM:
		return RDMA_SQ_OP_RECV_IMM;
	case IBV_WC_BIND_MW:
		return RDMA_SQ_OP_BIND_MW;
	default:
		return RDMA_SQ_OP_UNKNOWN;
	}
}

static struct rdma_sq_peer *peer_of_qp(struct rdma_sq_node *node, uint32_t qpn)
{
	for (uint32_t i = 0; i < node->npeers; i++)
		if (node->peers[i].qp && node->peers[i].qp_num == qpn)
			return &node->peers[i];
	return NULL;
}

static void convert(struct rdma_sq_node *node, const struct ibv_wc *wc,
		    struct rdma_sq_wc *out)
{
	struct rdma_sq_peer *p = peer_of_qp(node, wc->qp_num);

	memset(out, 0, sizeof(*out));
	out->wr_id = wc->wr_id;
	out->peer = p ? p->id : UINT32_MAX;
	out->opcode = map_opcode(wc);
	out->ibv_status = wc->status;
	out->status_text = ibv_wc_status_str(wc->status);
	out->byte_len = wc->byte_len;
	if (wc->status == IBV_WC_SUCCESS && (wc->wc_flags & IBV_WC_WITH_IMM))
		out->imm = ntohl(wc->imm_data);
	if (wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_RECV &&
	    (wc->wc_flags & RECV_WITH_INV)) {
		out->flags |= RDMA_SQ_WC_INVALIDATED;
		out->inv_rkey = wc->invalidated_rkey;
	}
	if (p)
		rdma_sq_hold_release(node, wc, p->id);
	if (wc->status == IBV_WC_SUCCESS)
		return;
	out->status = -ECONNRESET;
	if (wc->status == IBV_WC_REM_ACCESS_ERR)
		out->flags |= RDMA_SQ_WC_REMOTE_ACCESS;
	if (p && wc->status != IBV_WC_WR_FLUSH_ERR)
		rdma_sq_peer_fail(node, p,
			"request %llu to %s failed: %s (vendor error 0x%x)",
			(unsigned long long)wc->wr_id, p->who,
			ibv_wc_status_str(wc->status), wc->vendor_err);
	else if (p)
		rdma_sq_peer_fail(node, p, "requests to %s were flushed: "
				  "the connection is in the error state", p->who);
}

int rdma_sq_poll(struct rdma_sq_node *node, struct rdma_sq_wc *out, int max)
{
	int n = 0;

	while (n < max && node->stash_pos < node->stash_n) {
		const struct ibv_wc *wc = &node->stash[node->stash_pos++];

		if (wc->wr_id >> 56 == RDMA_SQ_WR_AUTH)
			rdma_sq_auth_wc(node, wc);
		else
			convert(node, wc, &out[n++]);
	}
	while (n < max) {
		struct ibv_wc wc[16];
		int want = max - n < 16 ? max - n : 16;
		int got = ibv_poll_cq(node->cq, want, wc);

		if (got < 0)
			return -EIO;
		for (int i = 0; i < got; i++) {
			/* The key exchange's own, late (a send of it that
			 * completed after connect_all returned): not for the
			 * caller. */
			if (wc[i].wr_id >> 56 == RDMA_SQ_WR_AUTH) {
				rdma_sq_auth_wc(node, &wc[i]);
				continue;
			}
			convert(node, &wc[i], &out[n++]);
		}
		if (got < want)
			break;
	}
	if (n == 0 && ++node->idle_polls >= CM_CHECK_EVERY)
		node->events_wanted = true;
	/* Only once the queue is empty (n < max: the last poll came up
	 * short), so that no completion that came before an event is taken
	 * after it. */
	if (n < max && node->events_wanted) {
		node->idle_polls = 0;
		node->events_wanted = false;
		rdma_sq_events(node);
	}
	return n;
}

void rdma_sq_want_events(struct rdma_sq_node *node)
{
	node->events_wanted = true;
}

static uint64_t drain_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* rdma_sq_drain's marker behind p's last request: an empty signaled SEND,
 * flushed like every request before it. 0, or the post's error (a device
 * that takes no request in the error state, a full send queue). */
static int post_marker(struct rdma_sq_peer *p)
{
	struct ibv_send_wr wr = {
		.wr_id = rdma_sq_ctl_wr_id(p, RDMA_SQ_DRAIN_SEND),
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;

	return ibv_post_send(p->qp, &wr, &bad);
}

/* Every marker's completion came (rdma_sq_auth_wc took it). */
static bool markers_in(const struct rdma_sq_node *node)
{
	for (uint32_t i = 0; i < node->npeers; i++)
		if (node->peers[i].drain_marked)
			return false;
	return true;
}

int rdma_sq_drain(struct rdma_sq_node *node, int timeout_ms,
		  void (*fn)(void *arg, const struct rdma_sq_wc *wc), void *arg)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	uint64_t start = drain_now_ms(), quiet = start;
	bool marked = true;
	int total = 0;

	for (uint32_t i = 0; i < node->npeers; i++) {
		struct rdma_sq_peer *p = &node->peers[i];

		p->drain_marked = false;
		if (!p->qp)
			continue;
		ibv_modify_qp(p->qp, &qa, IBV_QP_STATE);
		if (post_marker(p))
			marked = false;
		else
			p->drain_marked = true;
	}
	for (;;) {
		struct rdma_sq_wc wc[32];
		int n = rdma_sq_poll(node, wc, 32);
		uint64_t now;

		if (n < 0)
			return n;
		for (int i = 0; i < n; i++)
			fn(arg, &wc[i]);
		total += n;
		now = drain_now_ms();
		if (n)
			quiet = now;
		if (marked && markers_in(node))
			break;
		if (n)
			continue;
		if (now - quiet >= 20 || now - start >= (uint64_t)timeout_ms)
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return total;
}

int rdma_sq_wait(struct rdma_sq_node *node, int timeout_ms)
{
	struct pollfd pfd[3] = {
		{ .fd = node->cch->fd, .events = POLLIN },
		/* none once its listener left with it (poll skips -1) */
		{ .fd = node->ech ? node->ech->fd : -1, .events = POLLIN },
		{ .fd = node->wake_fd, .events = POLLIN },
	};
	int ret;

	if (node->stash_pos < node->stash_n)
		return 0;
	if (!node->cq_armed) {
		ret = ibv_req_notify_cq(node->cq, 0);
		if (ret)
			return -ret;
		node->cq_armed = true;
	}
	/* A completion that arrived before the arm raises no event: look
	 * once more after arming, keeping what we find for rdma_sq_poll. */
	node->stash_pos = 0;
	node->stash_n = ibv_poll_cq(node->cq, 32, node->stash);
	if (node->stash_n < 0) {
		node->stash_n = 0;
		return -EIO;
	}
	if (node->stash_n > 0)
		return 0;
	ret = poll(pfd, 3, timeout_ms);
	if (ret < 0)
		return errno == EINTR ? 0 : -errno;
	if (ret == 0)
		return -ETIMEDOUT;
	if (pfd[0].revents & POLLIN) {
		struct ibv_cq *cq;
		void *ctx;

		if (ibv_get_cq_event(node->cch, &cq, &ctx) == 0) {
			ibv_ack_cq_events(cq, 1);
			node->cq_armed = false;
		}
	}
	if (pfd[1].revents & POLLIN)
		rdma_sq_events(node);
	if (pfd[2].revents & POLLIN) {
		uint64_t v;

		/* Drained here: a wake asked before this wait began ended it
		 * at once, one asked after it still pending for the next. */
		if (read(node->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			return -errno;
	}
	return 0;
}

void rdma_sq_wake(struct rdma_sq_node *node)
{
	uint64_t one = 1;

	/* A full counter (2^64 - 2 wakes unread) is still a pending wake. */
	if (write(node->wake_fd, &one, sizeof(one)) < 0)
		return;
}
