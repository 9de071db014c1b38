/*
 * post.c - posting RDMA WRITE, WRITE_WITH_IMM, READ, SEND and RECV.
 *
 * Callers hand (pointer, length) pieces; each is matched to the
 * registration that holds it (the region first: one range check, the
 * common case) so that payloads go to the wire straight from where they
 * lie. A post to a peer that is not up fails at once with -ENOTCONN and
 * the reason the peer died, instead of queueing work that never finishes.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "rdma/node.h"

#define MAX_SGE 16

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

/* Check the peer and build the verbs SGE list. */
static int prepare(struct rdma_sq_node *node, uint32_t peer,
		   const struct rdma_sq_sge *sg, int nsge, struct ibv_sge *out,
		   struct rdma_sq_peer **pp, const char *what,
		   struct squall_error *err)
{
	struct rdma_sq_peer *p = rdma_sq_peer_by_id(node, peer);
	enum rdma_sq_peer_state st;

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
		if (lkey_of(node, sg[i].ptr, sg[i].len, &out[i].lkey))
			return squall_error_set(err, -EFAULT,
				"%s to %s: piece %d (%p, %u bytes) is not in registered memory",
				what, p->who, i, sg[i].ptr, sg[i].len);
	}
	*pp = p;
	return 0;
}

static int post_send(struct rdma_sq_node *node, uint32_t peer,
		     const struct rdma_sq_sge *sg, int nsge,
		     enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
		     uint32_t imm, uint64_t wr_id, unsigned flags,
		     const char *what, struct squall_error *err)
{
	struct ibv_sge sges[MAX_SGE];
	struct ibv_send_wr wr, *bad;
	struct rdma_sq_peer *p;
	int ret = prepare(node, peer, sg, nsge, sges, &p, what, err);

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
	if (op != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	ret = ibv_post_send(p->qp, &wr, &bad);
	if (ret)
		return squall_error_set(err, -ret, "ibv_post_send(%s) to %s: %s",
					what, p->who, strerror(ret));
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

int rdma_sq_post_recv(struct rdma_sq_node *node, uint32_t peer,
		      const struct rdma_sq_sge *sg, int nsge, uint64_t wr_id,
		      struct squall_error *err)
{
	struct ibv_sge sges[MAX_SGE];
	struct ibv_recv_wr wr, *bad;
	struct rdma_sq_peer *p;
	int ret = prepare(node, peer, sg, nsge, sges, &p, "RECV", err);

	if (ret)
		return ret;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sges;
	wr.num_sge = nsge;
	ret = ibv_post_recv(p->qp, &wr, &bad);
	if (ret)
		return squall_error_set(err, -ret, "ibv_post_recv from %s: %s",
					p->who, strerror(ret));
	return 0;
}
