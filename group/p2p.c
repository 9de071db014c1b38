/*
 * p2p.c - point-to-point messages: a lease sent to one member outside the
 * order, its completion, and its arrival (kept until the view is live
 * when it comes during set-up).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <squall/wire.h>

#include "group/group_int.h"
#include "rdma/hook.h"

/* ---- point to point --------------------------------------------------------- */

size_t group_p2p_max(const struct group *g)
{
	(void)g;
	return GROUP_RECV_BUF - WIRE_HDR_LEN;
}

static int p2p_send(struct group *g, uint32_t member, const struct buf_desc *d,
		    struct squall_error *err)
{
	int r, rank = group_config_member_index(&g->vcfg, member);
	struct rdma_sq_sge sg[2];
	uint8_t *hdr;
	int hlen;

	group_assert_in_view(g);
	squall_error_clear(err);
	if ((r = group_failed(g, err)))
		return r;
	if (rank < 0 || (uint32_t)rank == g->v.me)
		return squall_error_set(err, -ENOENT, "member %u: %u is not "
			"another member of the view", g->my_id, member);
	if (!d || !d->ptr || !alloc_owns(g->a, d->ptr, d->len))
		return squall_error_set(err, -EINVAL, "member %u: the buffer is "
			"not inside this member's region", g->my_id);
	if (d->len > group_p2p_max(g))
		return squall_error_set(err, -EMSGSIZE, "member %u: a "
			"point-to-point message of %zu bytes is larger than "
			"%zu", g->my_id, d->len, group_p2p_max(g));
	if (!rdma_sq_peer_alive(g->v.node, member))
		return squall_error_set(err, -ENOTCONN, "member %u: member %u "
			"is not connected: %s", g->my_id, member,
			rdma_sq_peer_error(g->v.node, member));
	if (atomic_fetch_add(&g->v.p2p_inflight[rank], 1) >=
	    GROUP_P2P_INFLIGHT) {
		atomic_fetch_sub(&g->v.p2p_inflight[rank], 1);
		return squall_error_set(err, -EAGAIN, "member %u: %u "
			"point-to-point messages to member %u are still in "
			"flight", g->my_id, GROUP_P2P_INFLIGHT, member);
	}
	hdr = alloc_obj_new(g->a, 64);
	if (!hdr) {
		atomic_fetch_sub(&g->v.p2p_inflight[rank], 1);
		return squall_error_set(err, -ENOMEM, "member %u: no room for a "
					"message header", g->my_id);
	}
	hlen = wire_encode(hdr, 32, WIRE_MSG_P2P, 0, NULL, 0,
			   (uint32_t)d->len, err);
	/* Test hook: a member that misbehaves sends what nobody can read. */
	if (hlen > 0 && squall_hook_fail("p2p_garbage"))
		memset(hdr, 0xa5, (size_t)hlen);
	r = hlen < 0 ? hlen : alloc_submit(g->a, d);
	if (r) {
		atomic_fetch_sub(&g->v.p2p_inflight[rank], 1);
		alloc_obj_delete(g->a, hdr);
		return squall_error_set(err, -EINVAL, "member %u: the buffer at "
			"%p is not a lease ready to send", g->my_id, d->ptr);
	}
	memcpy(hdr + 32, d, sizeof(*d));
	sg[0] = (struct rdma_sq_sge){ hdr, (uint32_t)hlen };
	sg[1] = (struct rdma_sq_sge){ d->ptr, (uint32_t)d->len };
	r = rdma_sq_send(g->v.node, member, sg, d->len ? 2 : 1,
			 GROUP_WR_P2P << 56 | (uint64_t)(hdr - (uint8_t *)g->base),
			 RDMA_SQ_SIGNALED, err);
	if (r) {
		/* Never posted: the buffer is the caller's again. */
		atomic_fetch_sub(&g->v.p2p_inflight[rank], 1);
		alloc_obj_delete(g->a, hdr);
		alloc_unsubmit(g->a, d);
		if (r == -ENOMEM || r == -EAGAIN)
			return squall_error_set(err, -EAGAIN, "member %u: the "
				"send queue to member %u is full", g->my_id,
				member);
		return r;
	}
	atomic_fetch_add(&g->st_p2p_sent, 1);
	return 0;
}

int group_p2p_send(struct group *g, uint32_t member, const struct buf_desc *d,
		   struct squall_error *err)
{
	bool self = group_lockless(g);
	int r;

	/* Not ordered: a wedged view's connections still carry it. */
	if (!self)
		group_epoch_rdlock(g);
	r = p2p_send(g, member, d, err);
	if (!self)
		group_epoch_rdunlock(g);
	return r;
}

/* A point-to-point SEND completed: its header object holds the lease. */
void group_p2p_done(struct group *g, const struct rdma_sq_wc *wc)
{
	uint8_t *hdr = (uint8_t *)g->base + (wc->wr_id & ((1ull << 48) - 1));
	struct buf_desc d;

	int rank = group_config_member_index(&g->vcfg, wc->peer);

	memcpy(&d, hdr + 32, sizeof(d));
	alloc_complete(g->a, &d);
	alloc_obj_delete(g->a, hdr);
	if (rank >= 0)
		atomic_fetch_sub(&g->v.p2p_inflight[rank], 1);
	/* A failed send means a failed peer: the SST suspects it and a view
	 * change follows; the message is lost with the connection. */
}

/* A point-to-point message from member rank (its SEND decoded into m),
 * on the progress thread. */
void group_p2p_receive(struct group *g, uint32_t rank, const struct wire_msg *m)
{
	atomic_fetch_add(&g->st_p2p_received, 1);
	if (!g->cb.p2p_receive)
		return;
	/* Not during set-up: the application does not have its group
	 * yet. Kept (the receive buffer is posted again on return) until
	 * the view is live. */
	if (!atomic_load_explicit(&g->ready, memory_order_acquire)) {
		struct group_early_p2p *e = malloc(sizeof(*e) + m->payload_len);

		if (!e) {
			group_fail(g, -ENOMEM, "out of memory keeping a "
				   "point-to-point message from member %u",
				   g->v.ids[rank]);
			return;
		}
		e->next = NULL;
		e->sender = g->v.ids[rank];
		e->len = m->payload_len;
		memcpy(e->payload, m->payload, m->payload_len);
		if (!g->early_p2p_tail)
			g->early_p2p_tail = &g->early_p2p;
		*g->early_p2p_tail = e;
		g->early_p2p_tail = &e->next;
		return;
	}
	group_early_p2p_deliver(g);
	g->cb.p2p_receive(g->ctx, g->v.ids[rank],
			  &(struct buf_desc){ (void *)m->payload,
					      m->payload_len });
}

bool group_early_p2p_deliver(struct group *g)
{
	struct group_early_p2p *e;
	bool any = g->early_p2p != NULL;

	group_assert_progress(g);

	while ((e = g->early_p2p)) {
		g->early_p2p = e->next;
		if (!g->early_p2p)
			g->early_p2p_tail = &g->early_p2p;
		g->cb.p2p_receive(g->ctx, e->sender,
				  &(struct buf_desc){ e->payload, e->len });
		free(e);
	}
	return any;
}

void group_early_p2p_free(struct group *g)
{
	struct group_early_p2p *e;

	group_assert_no_progress(g);

	while ((e = g->early_p2p)) {
		g->early_p2p = e->next;
		free(e);
	}
	g->early_p2p_tail = &g->early_p2p;
}

