/*
 * post.c - posting RDMA WRITE, WRITE_WITH_IMM, READ, SEND and RECV.
 *
 * Callers hand (pointer, length) pieces; each is matched to the
 * registration that holds it (the region first: one range check, the
 * common case; then extra registrations; then the registration cache) so
 * that payloads go to the wire straight from where they lie. A piece found
 * through the cache holds its registration until the request's completion
 * is polled: the holds of a request are kept on the node, keyed by peer
 * and wr_id, and released by the completion dispatcher. A post to a peer
 * that is not up fails at once with -ENOTCONN and the reason the peer
 * died, instead of queueing work that never finishes.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/node.h"

static bool inside(const void *base, size_t len, const void *ptr, uint32_t n)
{
	uintptr_t b = (uintptr_t)base, p = (uintptr_t)ptr;

	return p >= b && p - b <= len && n <= len - (p - b);
}

static int lkey_of(const struct rdma_sq_node *node, const void *ptr,
		   uint32_t len, uint32_t *lkey)
{
	if (inside(node->region, node->region_len, ptr, len)) {
		*lkey = node->region_mr->lkey;
		return 0;
	}
	for (const struct rdma_sq_mr *m = node->mrs; m; m = m->next) {
		if (inside(m->mr->addr, m->mr->length, ptr, len)) {
			*lkey = m->mr->lkey;
			return 0;
		}
	}
	return -EFAULT;
}

static void put_all(struct rdma_sq_node *node, struct rdma_sq_hold *h)
{
	for (int i = 0; i < h->n; i++)
		regcache_put(node->cache, h->reg[i]);
	h->n = 0;
}

/* A piece outside the region and the extra registrations: get it from
 * the cache, holding the registration in h. */
static int lkey_cached(struct rdma_sq_node *node, const void *ptr,
		       uint32_t len, struct rdma_sq_hold *h, uint32_t *lkey)
{
	struct regcache_reg *r;
	int ret = regcache_get(node->cache, ptr, len, &r);

	if (ret)
		return ret;
	assert(h->n < RDMA_SQ_HOLD_MAX);
	h->reg[h->n++] = r;
	*lkey = ((struct ibv_mr *)regcache_reg_handle(r))->lkey;
	return 0;
}

/* Check the peer and build the verbs SGE list. Pieces in foreign memory
 * are registered through the cache and held in h (h NULL: not allowed). */
static int prepare(struct rdma_sq_node *node, uint32_t peer,
		   const struct rdma_sq_sge *sg, int nsge, struct ibv_sge *out,
		   struct rdma_sq_peer **pp, const char *what,
		   struct rdma_sq_hold *h, struct squall_error *err)
{
	struct rdma_sq_peer *p = rdma_sq_peer_by_id(node, peer);
	enum rdma_sq_peer_state st;
	int ret;

	if (!p)
		return squall_error_set(err, -ENOENT, "%s: %u is not a peer of member %u",
					what, peer, node->my_id);
	st = rdma_sq_peer_state(p);
	if (st != PEER_UP)
		return squall_error_set(err, -ENOTCONN, "%s to %s: %s", what, p->who,
			st == PEER_DEAD ? p->error : "not connected");
	if (nsge < 0 || (uint32_t)nsge > node->opt.max_sge || (nsge && !sg))
		return squall_error_set(err, -EINVAL,
			"%s to %s: %d pieces (at most %u)", what, p->who, nsge,
			node->opt.max_sge);
	for (int i = 0; i < nsge; i++) {
		out[i].addr = (uint64_t)(uintptr_t)sg[i].ptr;
		out[i].length = sg[i].len;
		if (!lkey_of(node, sg[i].ptr, sg[i].len, &out[i].lkey))
			continue;
		ret = h ? lkey_cached(node, sg[i].ptr, sg[i].len, h,
				      &out[i].lkey) : -EFAULT;
		if (ret) {
			if (h)
				put_all(node, h);
			return squall_error_set(err, ret == -EINVAL ? -EFAULT : ret,
				"%s to %s: piece %d (%p, %u bytes) is not in registered memory%s%s",
				what, p->who, i, sg[i].ptr, sg[i].len,
				h ? " and could not be registered: " :
				    " (foreign memory needs a signaled request)",
				h ? strerror(-ret) : "");
		}
	}
	*pp = p;
	return 0;
}

/* Keep h's registrations until the request's completion: published before
 * the post, since another thread may poll the completion at once. */
static struct rdma_sq_hold *hold_keep(struct rdma_sq_node *node,
				      struct rdma_sq_hold *h, uint32_t peer,
				      uint64_t wr_id, bool recv)
{
	struct rdma_sq_hold *k;

	if (!h->n)
		return NULL;
	k = malloc(sizeof(*k));
	if (!k)
		return NULL;
	*k = *h;
	k->peer = peer;
	k->wr_id = wr_id;
	k->recv = recv;
	pthread_mutex_lock(&node->hold_lock);
	k->next = node->holds;
	node->holds = k;
	__atomic_add_fetch(&node->nholds, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&node->hold_lock);
	return k;
}

/* Take k back after a failed post. */
static void hold_drop(struct rdma_sq_node *node, struct rdma_sq_hold *k)
{
	struct rdma_sq_hold **pp;

	pthread_mutex_lock(&node->hold_lock);
	for (pp = &node->holds; *pp && *pp != k; pp = &(*pp)->next)
		;
	assert(*pp);
	*pp = k->next;
	__atomic_sub_fetch(&node->nholds, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&node->hold_lock);
	put_all(node, k);
	free(k);
}

/* Keep h for the request, or report why not (then h is released). */
static int hold_start(struct rdma_sq_node *node, struct rdma_sq_hold *h,
		      struct rdma_sq_peer *p, uint64_t wr_id, bool recv,
		      struct rdma_sq_hold **kept, struct squall_error *err)
{
	*kept = hold_keep(node, h, p->id, wr_id, recv);
	if (h->n && !*kept) {
		put_all(node, h);
		return squall_error_set(err, -ENOMEM,
			"post to %s: out of memory for a registration hold", p->who);
	}
	return 0;
}

void rdma_sq_hold_release(struct rdma_sq_node *node, const struct ibv_wc *wc,
			  uint32_t peer)
{
	bool ok = wc->status == IBV_WC_SUCCESS;
	bool recv = ok && (wc->opcode & IBV_WC_RECV);
	struct rdma_sq_hold **pp, *k = NULL;

	if (!__atomic_load_n(&node->nholds, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&node->hold_lock);
	/* A failed completion does not say whether it was a receive: any
	 * hold of that request will do, the queue pair is flushing all. */
	for (pp = &node->holds; *pp; pp = &(*pp)->next) {
		if ((*pp)->peer == peer && (*pp)->wr_id == wc->wr_id &&
		    (!ok || (*pp)->recv == recv)) {
			k = *pp;
			*pp = k->next;
			__atomic_sub_fetch(&node->nholds, 1, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_mutex_unlock(&node->hold_lock);
	if (k) {
		put_all(node, k);
		free(k);
	}
}

void rdma_sq_hold_release_all(struct rdma_sq_node *node)
{
	while (node->holds) {
		struct rdma_sq_hold *k = node->holds;

		node->holds = k->next;
		put_all(node, k);
		free(k);
	}
	node->nholds = 0;
}

static int post_send(struct rdma_sq_node *node, uint32_t peer,
		     const struct rdma_sq_sge *sg, int nsge,
		     enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
		     uint32_t imm, uint64_t wr_id, unsigned flags,
		     const char *what, struct squall_error *err)
{
	struct ibv_sge sges[RDMA_SQ_MAX_SGE];
	struct ibv_send_wr wr, *bad;
	struct rdma_sq_peer *p;
	struct rdma_sq_hold h = { .n = 0 }, *kept;
	int ret = prepare(node, peer, sg, nsge, sges, &p, what,
			  flags & RDMA_SQ_SIGNALED ? &h : NULL, err);

	if (!ret)
		ret = hold_start(node, &h, p, wr_id, false, &kept, err);
	if (ret)
		return ret;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sges;
	wr.num_sge = nsge;
	wr.opcode = op;
	if (flags & RDMA_SQ_SIGNALED)
		wr.send_flags |= IBV_SEND_SIGNALED;
	if (flags & RDMA_SQ_INLINE)
		wr.send_flags |= IBV_SEND_INLINE;
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htonl(imm);
	if (op == IBV_WR_SEND_WITH_INV)
		wr.invalidate_rkey = rkey;
	else if (op != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	ret = ibv_post_send(p->qp, &wr, &bad);
	if (ret) {
		if (kept)
			hold_drop(node, kept);
		return squall_error_set(err, -ret, "ibv_post_send(%s) to %s: %s",
					what, p->who, strerror(ret));
	}
	return 0;
}

int rdma_sq_write(struct rdma_sq_node *node, uint32_t peer,
		  const struct rdma_sq_sge *sg, int nsge,
		  uint64_t remote_addr, uint32_t rkey, uint64_t wr_id,
		  unsigned flags, struct squall_error *err)
{
	return post_send(node, peer, sg, nsge, IBV_WR_RDMA_WRITE, remote_addr,
			 rkey, 0, wr_id, flags, "RDMA WRITE", err);
}

int rdma_sq_write_imm(struct rdma_sq_node *node, uint32_t peer,
		      const struct rdma_sq_sge *sg, int nsge,
		      uint64_t remote_addr, uint32_t rkey, uint32_t imm,
		      uint64_t wr_id, unsigned flags,
		      struct squall_error *err)
{
	return post_send(node, peer, sg, nsge, IBV_WR_RDMA_WRITE_WITH_IMM,
			 remote_addr, rkey, imm, wr_id, flags,
			 "RDMA WRITE_WITH_IMM", err);
}

int rdma_sq_read(struct rdma_sq_node *node, uint32_t peer,
		 const struct rdma_sq_sge *sg, int nsge,
		 uint64_t remote_addr, uint32_t rkey, uint64_t wr_id,
		 unsigned flags, struct squall_error *err)
{
	return post_send(node, peer, sg, nsge, IBV_WR_RDMA_READ, remote_addr,
			 rkey, 0, wr_id, flags & ~RDMA_SQ_INLINE, "RDMA READ", err);
}

int rdma_sq_send(struct rdma_sq_node *node, uint32_t peer,
		 const struct rdma_sq_sge *sg, int nsge, uint64_t wr_id,
		 unsigned flags, struct squall_error *err)
{
	return post_send(node, peer, sg, nsge, IBV_WR_SEND, 0, 0, 0, wr_id,
			 flags, "SEND", err);
}

int rdma_sq_send_inv(struct rdma_sq_node *node, uint32_t peer,
		     const struct rdma_sq_sge *sg, int nsge, uint32_t inv_rkey,
		     uint64_t wr_id, unsigned flags, struct squall_error *err)
{
	return post_send(node, peer, sg, nsge, IBV_WR_SEND_WITH_INV, 0,
			 inv_rkey, 0, wr_id, flags, "SEND_WITH_INV", err);
}

int rdma_sq_post_recv(struct rdma_sq_node *node, uint32_t peer,
		      const struct rdma_sq_sge *sg, int nsge, uint64_t wr_id,
		      struct squall_error *err)
{
	struct ibv_sge sges[RDMA_SQ_MAX_SGE];
	struct ibv_recv_wr wr, *bad;
	struct rdma_sq_peer *p;
	struct rdma_sq_hold h = { .n = 0 }, *kept;
	int ret = prepare(node, peer, sg, nsge, sges, &p, "RECV", &h, err);

	if (!ret)
		ret = hold_start(node, &h, p, wr_id, true, &kept, err);
	if (ret)
		return ret;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sges;
	wr.num_sge = nsge;
	ret = ibv_post_recv(p->qp, &wr, &bad);
	if (ret) {
		if (kept)
			hold_drop(node, kept);
		return squall_error_set(err, -ret, "ibv_post_recv from %s: %s",
					p->who, strerror(ret));
	}
	return 0;
}
