/*
 * use_once.c - use-once regions: a peer may RDMA-read exactly one range of
 * foreign memory, once, and then the key is dead.
 *
 * The preferred way is a type-2 memory window bound over the range of the
 * cached registration that covers it. The window belongs to one queue pair
 * (the peer's), spans exactly the bytes asked for, and the peer kills it
 * with its answer (SEND_WITH_INV), so the owner needs no call on the
 * critical path and the cached registration stays for the next send. Where
 * the device has no type-2 windows the region is a registration of its own
 * (never cached: its rkey must die), deregistered when the owner closes it.
 * Each region records which path it took; the node counts both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/node.h"

struct rdma_sq_use_once {
	enum rdma_sq_use_once_path path;
	uint32_t peer;
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	struct ibv_mw *mw;            /* WINDOW */
	struct regcache_reg *reg;     /* WINDOW: the registration under it */
	struct ibv_mr *mr;            /* REGISTRATION */
	struct rdma_sq_use_once *next;
};

static void link_in(struct rdma_sq_node *node, struct rdma_sq_use_once *uo)
{
	uo->next = node->use_once;
	node->use_once = uo;
}

static void unlink_uo(struct rdma_sq_node *node, struct rdma_sq_use_once *uo)
{
	struct rdma_sq_use_once **pp;

	for (pp = &node->use_once; *pp && *pp != uo; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = uo->next;
}

/* Remember (and log once) why windows are not used on this node. */
static void no_window(struct rdma_sq_node *node, const char *why)
{
	if (node->mw_why[0])
		return;
	snprintf(node->mw_why, sizeof(node->mw_why), "%s", why);
	rdma_sq_log(node, RDMA_SQ_LOG_INFO,
		    "use-once regions take the registration path: %s", why);
}

static int open_registration(struct rdma_sq_node *node,
			     struct rdma_sq_use_once *uo, const void *ptr,
			     struct squall_error *err)
{
	uo->mr = ibv_reg_mr(node->pd, (void *)ptr, uo->len,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!uo->mr) {
		int ret = errno ? -errno : -EIO;

		return squall_error_set(err, ret,
			"use-once region: ibv_reg_mr(%p, %llu bytes): %s", ptr,
			(unsigned long long)uo->len, strerror(-ret));
	}
	uo->path = RDMA_SQ_USE_ONCE_REGISTRATION;
	uo->rkey = uo->mr->rkey;
	node->uo_stats.registrations++;
	return 0;
}

/* Post the bind of uo->mw over the cached registration to the peer's QP. */
static int bind_window(struct rdma_sq_peer *p,
		       struct rdma_sq_use_once *uo, uint64_t wr_id,
		       struct squall_error *err)
{
	struct ibv_send_wr wr, *bad;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = uo->mw;
	/* a fresh key for every bind: a key read by an earlier peer is
	 * never valid again */
	wr.bind_mw.rkey = ibv_inc_rkey(uo->mw->rkey);
	wr.bind_mw.bind_info.mr = regcache_reg_handle(uo->reg);
	wr.bind_mw.bind_info.addr = uo->addr;
	wr.bind_mw.bind_info.length = uo->len;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	ret = ibv_post_send(p->qp, &wr, &bad);
	if (ret)
		return squall_error_set(err, -ret,
			"use-once region: bind of a memory window for %s: %s",
			p->who, strerror(ret));
	uo->rkey = wr.bind_mw.rkey;
	return 0;
}

/* The WINDOW path. Returns 1 when windows are not available here (the
 * caller falls back), 0 when bound, or a negative errno. */
static int open_window(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		       struct rdma_sq_use_once *uo, const void *ptr,
		       uint64_t wr_id, struct squall_error *err)
{
	int ret;

	if (!node->mw_bind) {
		no_window(node, "the device has no memory windows");
		return 1;
	}
	uo->mw = ibv_alloc_mw(node->pd, IBV_MW_TYPE_2);
	if (!uo->mw) {
		char why[128];

		snprintf(why, sizeof(why), "ibv_alloc_mw(type 2): %s",
			 strerror(errno));
		no_window(node, why);
		return 1;
	}
	ret = regcache_get(node->cache, ptr, uo->len, &uo->reg);
	if (ret) {
		ibv_dealloc_mw(uo->mw);
		return squall_error_set(err, ret,
			"use-once region: registering %p (%llu bytes): %s", ptr,
			(unsigned long long)uo->len, strerror(-ret));
	}
	ret = bind_window(p, uo, wr_id, err);
	if (ret) {
		ibv_dealloc_mw(uo->mw);
		regcache_put(node->cache, uo->reg);
		return ret;
	}
	uo->path = RDMA_SQ_USE_ONCE_WINDOW;
	node->uo_stats.windows++;
	return 0;
}

int rdma_sq_use_once_open(struct rdma_sq_node *node, uint32_t peer,
			  const void *ptr, size_t len, unsigned flags,
			  uint64_t wr_id, struct rdma_sq_use_once **out,
			  struct squall_error *err)
{
	struct rdma_sq_peer *p;
	struct rdma_sq_use_once *uo;
	int ret = 1;

	if (!node || !ptr || !len || !out || (uintptr_t)ptr + len < (uintptr_t)ptr)
		return squall_error_set(err, -EINVAL, "use-once region: bad arguments");
	p = rdma_sq_peer_by_id(node, peer);
	if (!p)
		return squall_error_set(err, -ENOENT, "use-once region: %u is not a peer",
					peer);
	if (rdma_sq_peer_state(p) != PEER_UP)
		return squall_error_set(err, -ENOTCONN, "use-once region for %s: %s",
			p->who, rdma_sq_peer_state(p) == PEER_DEAD ? p->error :
			"not connected");
	uo = calloc(1, sizeof(*uo));
	if (!uo)
		return squall_error_set(err, -ENOMEM, "out of memory for a use-once region");
	uo->peer = peer;
	uo->addr = (uint64_t)(uintptr_t)ptr;
	uo->len = len;
	if (!(flags & RDMA_SQ_USE_ONCE_NO_WINDOW))
		ret = open_window(node, p, uo, ptr, wr_id, err);
	if (ret == 1)
		ret = open_registration(node, uo, ptr, err);
	if (ret) {
		free(uo);
		return ret;
	}
	link_in(node, uo);
	*out = uo;
	return 0;
}

/* Free what uo holds. A window the peer did not invalidate dies with
 * ibv_dealloc_mw (its key with it) before the registration under it is
 * put. */
static int release(struct rdma_sq_node *node, struct rdma_sq_use_once *uo,
		   struct squall_error *err)
{
	int ret = 0;

	if (uo->mw) {
		ret = ibv_dealloc_mw(uo->mw);
		if (ret)
			squall_error_set(err, -ret, "ibv_dealloc_mw: %s", strerror(ret));
		regcache_put(node->cache, uo->reg);
	}
	if (uo->mr) {
		ret = ibv_dereg_mr(uo->mr);
		if (ret)
			squall_error_set(err, -ret,
				"use-once region: ibv_dereg_mr: %s", strerror(ret));
	}
	return -ret;
}

int rdma_sq_use_once_close(struct rdma_sq_node *node,
			   struct rdma_sq_use_once *uo,
			   const struct rdma_sq_wc *answer,
			   struct squall_error *err)
{
	bool invalidated = false;
	int ret;

	if (!uo)
		return 0;
	if (uo->path == RDMA_SQ_USE_ONCE_WINDOW) {
		invalidated = answer && (answer->flags & RDMA_SQ_WC_INVALIDATED) &&
			      answer->inv_rkey == uo->rkey;
		if (invalidated)
			node->uo_stats.remote_invalidations++;
		else
			node->uo_stats.local_invalidations++;
	}
	unlink_uo(node, uo);
	ret = release(node, uo, err);
	if (!ret && uo->path == RDMA_SQ_USE_ONCE_WINDOW && answer && !invalidated)
		ret = squall_error_set(err, -EPROTO,
			"use-once region %#x: member %u answered without invalidating it%s",
			uo->rkey, uo->peer,
			answer->flags & RDMA_SQ_WC_INVALIDATED ?
			" (it invalidated another key)" : "");
	free(uo);
	return ret;
}

void rdma_sq_use_once_destroy_all(struct rdma_sq_node *node)
{
	while (node->use_once) {
		struct rdma_sq_use_once *uo = node->use_once;

		node->use_once = uo->next;
		release(node, uo, NULL);
		free(uo);
	}
}

uint64_t rdma_sq_use_once_addr(const struct rdma_sq_use_once *uo)
{
	return uo->addr;
}

uint32_t rdma_sq_use_once_rkey(const struct rdma_sq_use_once *uo)
{
	return uo->rkey;
}

uint64_t rdma_sq_use_once_len(const struct rdma_sq_use_once *uo)
{
	return uo->len;
}

enum rdma_sq_use_once_path rdma_sq_use_once_path(const struct rdma_sq_use_once *uo)
{
	return uo->path;
}

const char *rdma_sq_use_once_path_name(enum rdma_sq_use_once_path path)
{
	switch (path) {
	case RDMA_SQ_USE_ONCE_WINDOW:
		return "window";
	case RDMA_SQ_USE_ONCE_REGISTRATION:
		return "registration";
	}
	return "unknown";
}

const char *rdma_sq_use_once_why_not_window(const struct rdma_sq_node *node)
{
	return node->mw_why;
}

void rdma_sq_use_once_stats(const struct rdma_sq_node *node,
			    struct rdma_sq_use_once_stats *out)
{
	*out = node->uo_stats;
}
