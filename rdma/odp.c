/*
 * odp.c - whether a node registers foreign memory on demand (ODP).
 *
 * The device's word is not enough. ibv_query_device_ex must report ODP for
 * RC SEND, WRITE and READ, and then one SEND over a queue pair connected
 * to itself, from an on-demand registration, starting inside a page and
 * spanning several packets, must deliver exactly the bytes that lie there:
 * rxe in Linux 7.3 reports ODP for RC and yet reads every packet of such a
 * SEND from the start of its page, so the receiver gets the wrong bytes
 * and nothing fails. The check costs one queue pair, two small
 * registrations and a few packets at create.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rdma/node.h"

/* What the cache's registrations need of ODP: the node's sends are RC
 * SENDs and WRITEs from them, and what a peer reads of them is READ. */
#define ODP_RC_NEED (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_WRITE | \
		     IBV_ODP_SUPPORT_READ)

/* The loopback SEND: CHECK_LEN bytes from page offset CHECK_OFF. */
#define CHECK_OFF 100
#define CHECK_LEN 6000
#define CHECK_PAGES 4
#define CHECK_WAIT_MS 5000

struct loop {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *src_mr, *dst_mr;
	uint8_t *src, *dst;
	size_t src_len;
};

static uint8_t check_byte(size_t i)
{
	return (uint8_t)(i * 131 + (i >> 8) + 7);
}

/* The port's address of this node: its GID index (RoCE v2 over IPv4:
 * ::ffff:a.b.c.d) or, on InfiniBand, its LID. */
static int own_address(struct rdma_sq_node *node, struct ibv_ah_attr *ah,
		       char *why, size_t whylen)
{
	struct ibv_port_attr pa;
	union ibv_gid want;
	int ret = ibv_query_port(node->ctx, node->port, &pa);

	if (ret) {
		snprintf(why, whylen, "ibv_query_port: %s", strerror(ret));
		return -1;
	}
	memset(ah, 0, sizeof(*ah));
	ah->port_num = node->port;
	if (pa.link_layer == IBV_LINK_LAYER_INFINIBAND) {
		ah->dlid = pa.lid;
		return pa.active_mtu;
	}
	memset(&want, 0, sizeof(want));
	want.raw[10] = 0xff;
	want.raw[11] = 0xff;
	memcpy(&want.raw[12], &node->my_addr.sin_addr, 4);
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(node->ctx, node->port, (uint32_t)i, &e, 0))
			continue;
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2 ||
		    memcmp(e.gid.raw, want.raw, sizeof(want.raw)))
			continue;
		ah->is_global = 1;
		ah->grh.dgid = e.gid;
		ah->grh.sgid_index = (uint8_t)i;
		ah->grh.hop_limit = 64;
		return pa.active_mtu;
	}
	snprintf(why, whylen, "no RoCE v2 GID for %s on port %u",
		 inet_ntoa(node->my_addr.sin_addr), node->port);
	return -1;
}

static int connect_self(struct rdma_sq_node *node, struct loop *l,
			char *why, size_t whylen)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};
	struct ibv_qp_attr a;
	struct ibv_ah_attr ah;
	int mtu = own_address(node, &ah, why, whylen);
	int ret;

	if (mtu < 0)
		return -1;
	l->cq = ibv_create_cq(node->ctx, 4, NULL, NULL, 0);
	if (!l->cq) {
		snprintf(why, whylen, "ibv_create_cq: %s", strerror(errno));
		return -1;
	}
	ia.send_cq = ia.recv_cq = l->cq;
	l->qp = ibv_create_qp(node->pd, &ia);
	if (!l->qp) {
		snprintf(why, whylen, "ibv_create_qp: %s", strerror(errno));
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = node->port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
	ret = ibv_modify_qp(l->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (!ret) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = (enum ibv_mtu)mtu;
		a.dest_qp_num = l->qp->qp_num;
		a.rq_psn = 1;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		a.ah_attr = ah;
		ret = ibv_modify_qp(l->qp, &a, IBV_QP_STATE | IBV_QP_AV |
				    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER);
	}
	if (!ret) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 1;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		ret = ibv_modify_qp(l->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
				    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	}
	if (ret) {
		snprintf(why, whylen, "connecting a queue pair to itself: "
			 "ibv_modify_qp: %s", strerror(ret));
		return -1;
	}
	return 0;
}

/* Wait for n completions; false (why filled) on a failed one or timeout. */
static bool wait_wc(struct loop *l, int n, char *why, size_t whylen)
{
	uint64_t until = rdma_sq_now_ms() + CHECK_WAIT_MS;

	while (n > 0) {
		struct ibv_wc wc;
		int got = ibv_poll_cq(l->cq, 1, &wc);

		if (got < 0) {
			snprintf(why, whylen, "ibv_poll_cq failed");
			return false;
		}
		if (got == 1 && wc.status != IBV_WC_SUCCESS) {
			snprintf(why, whylen, "loopback %s failed: %s",
				 wc.opcode == IBV_WC_RECV ? "receive" : "SEND",
				 ibv_wc_status_str(wc.status));
			return false;
		}
		n -= got;
		if (n > 0 && got == 0) {
			if (rdma_sq_now_ms() > until) {
				snprintf(why, whylen, "loopback SEND: no completion "
					 "within %d ms", CHECK_WAIT_MS);
				return false;
			}
			usleep(100);
		}
	}
	return true;
}

/* One SEND from an on-demand registration to a pinned buffer over a
 * queue pair connected to itself. Returns 1 when the bytes arrived right,
 * 0 when they did not (why says where), -1 when the check could not run
 * (why says why). */
static int loopback_check(struct rdma_sq_node *node, char *why, size_t whylen)
{
	long page = sysconf(_SC_PAGESIZE);
	struct loop l = { .src_len = (size_t)page * CHECK_PAGES };
	struct ibv_sge ss, rs;
	struct ibv_send_wr sw, *bad_s;
	struct ibv_recv_wr rw, *bad_r;
	int result = -1;
	size_t at;

	l.src = mmap(NULL, l.src_len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	l.dst = calloc(1, CHECK_LEN);
	if (l.src == MAP_FAILED || !l.dst) {
		snprintf(why, whylen, "out of memory");
		l.src = l.src == MAP_FAILED ? NULL : l.src;
		goto out;
	}
	for (size_t i = 0; i < CHECK_LEN; i++)
		l.src[CHECK_OFF + i] = check_byte(i);
	l.src_mr = ibv_reg_mr(node->pd, l.src, l.src_len,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	if (!l.src_mr) {
		snprintf(why, whylen, "ibv_reg_mr(on demand): %s", strerror(errno));
		goto out;
	}
	l.dst_mr = ibv_reg_mr(node->pd, l.dst, CHECK_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!l.dst_mr) {
		snprintf(why, whylen, "ibv_reg_mr: %s", strerror(errno));
		goto out;
	}
	if (connect_self(node, &l, why, whylen))
		goto out;
	rs = (struct ibv_sge){ (uintptr_t)l.dst, CHECK_LEN, l.dst_mr->lkey };
	memset(&rw, 0, sizeof(rw));
	rw.sg_list = &rs;
	rw.num_sge = 1;
	ss = (struct ibv_sge){ (uintptr_t)l.src + CHECK_OFF, CHECK_LEN,
			       l.src_mr->lkey };
	memset(&sw, 0, sizeof(sw));
	sw.sg_list = &ss;
	sw.num_sge = 1;
	sw.opcode = IBV_WR_SEND;
	sw.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_recv(l.qp, &rw, &bad_r) || ibv_post_send(l.qp, &sw, &bad_s)) {
		snprintf(why, whylen, "posting the loopback SEND: %s", strerror(errno));
		goto out;
	}
	if (!wait_wc(&l, 2, why, whylen))
		goto out;
	for (at = 0; at < CHECK_LEN && l.dst[at] == check_byte(at); at++)
		;
	result = at == CHECK_LEN;
	if (!result)
		snprintf(why, whylen, "a loopback SEND of %d bytes from an "
			 "on-demand registration at page offset %d arrived wrong "
			 "from byte %zu on", CHECK_LEN, CHECK_OFF, at);
out:
	if (l.qp)
		ibv_destroy_qp(l.qp);
	if (l.cq)
		ibv_destroy_cq(l.cq);
	if (l.src_mr)
		ibv_dereg_mr(l.src_mr);
	if (l.dst_mr)
		ibv_dereg_mr(l.dst_mr);
	if (l.src)
		munmap(l.src, l.src_len);
	free(l.dst);
	return result;
}

void rdma_sq_odp_probe(struct rdma_sq_node *node)
{
	const char *dev = rdma_sq_device_name(node);
	struct ibv_device_attr_ex ax;
	uint32_t rc_caps, missing;
	char why[160];
	int ret;

	node->odp = false;
	if (node->opt.no_odp) {
		snprintf(node->odp_why, sizeof(node->odp_why),
			 "ODP turned off (rdma_sq_options.no_odp)");
		return;
	}
	memset(&ax, 0, sizeof(ax));
	ret = ibv_query_device_ex(node->ctx, NULL, &ax);
	if (ret) {
		snprintf(node->odp_why, sizeof(node->odp_why),
			 "%s: ibv_query_device_ex: %s", dev, strerror(ret));
		return;
	}
	rc_caps = ax.odp_caps.per_transport_caps.rc_odp_caps;
	missing = ODP_RC_NEED;
	if (ax.odp_caps.general_caps & IBV_ODP_SUPPORT)
		missing &= ~rc_caps;
	if (missing) {
		snprintf(node->odp_why, sizeof(node->odp_why),
			 "%s: no ODP for RC%s%s%s (odp_caps: general_caps %#llx, rc_odp_caps %#x)",
			 dev, missing & IBV_ODP_SUPPORT_SEND ? " send" : "",
			 missing & IBV_ODP_SUPPORT_WRITE ? " write" : "",
			 missing & IBV_ODP_SUPPORT_READ ? " read" : "",
			 (unsigned long long)ax.odp_caps.general_caps, rc_caps);
	} else if (!node->opt.odp_unchecked &&
		   (ret = loopback_check(node, why, sizeof(why))) != 1) {
		snprintf(node->odp_why, sizeof(node->odp_why),
			 "%s: reports ODP for RC (rc_odp_caps %#x), but %s%s", dev,
			 rc_caps, ret < 0 ? "its check could not run: " : "", why);
	} else {
		node->odp = true;
		node->odp_why[0] = '\0';
	}
	if (!node->odp) {
		rdma_sq_log(node, RDMA_SQ_LOG_INFO,
			    "foreign memory is registered pinned: %s", node->odp_why);
		return;
	}
	rdma_sq_log(node, RDMA_SQ_LOG_INFO,
		    "foreign memory is registered on demand (%s rc_odp_caps %#x%s)",
		    dev, rc_caps, node->opt.odp_unchecked ? ", unchecked" : "");
	/* Use-once windows sit on cache registrations; a peer's READ through
	 * a window over an on-demand registration is not what the check
	 * above proves (on rxe in Linux 7.3 such a READ returned the wrong
	 * bytes too). Use-once regions take their own pinned registration. */
	if (node->mw_bind) {
		node->mw_bind = false;
		snprintf(node->mw_why, sizeof(node->mw_why),
			 "the cache registers on demand (ODP), and windows are "
			 "not bound over on-demand registrations");
	}
}

const char *rdma_sq_odp_why_not(const struct rdma_sq_node *node)
{
	return node->odp_why;
}

void rdma_sq_odp_stats(const struct rdma_sq_node *node,
		       struct rdma_sq_odp_stats *out)
{
	out->registrations = __atomic_load_n(&node->odp_regs, __ATOMIC_RELAXED);
	out->fallbacks = __atomic_load_n(&node->odp_fallbacks, __ATOMIC_RELAXED);
}
