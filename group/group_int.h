/*
 * group_int.h - the inside of a struct group, shared by the files of group/.
 *
 * One member's group is one rdma node, one region (the allocator's), one
 * SST, one SMC core and one RDMC engine, and ONE progress thread: the
 * SST's, which takes every completion of the node and hands what is not
 * its own to the hooks in link.c (SMC and RDMC completions, immediates,
 * control and point-to-point messages) and runs a group pass per progress
 * pass (order.c: RDMC sends waiting for the thread, SMC's pass, delivery).
 *
 * Region layout, the same on every member because every member reserves
 * the same sizes in the same order right after the region is mapped: the
 * SST table, the SMC rings (one per sender) and header area, the receive
 * buffers; the rest is the allocator's, for leases.
 */
#ifndef SQUALL_GROUP_INT_H
#define SQUALL_GROUP_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <squall/alloc.h>
#include <squall/config.h>
#include <squall/group.h>
#include <squall/rdma.h>
#include <squall/rdmc.h>
#include <squall/smc.h>
#include <squall/sst.h>

#include "smc/core.h"

/* Message kinds in the SMC stream. */
#define GROUP_KIND_APP 0u
#define GROUP_KIND_ANNOUNCE 1u

/* wr_id tags of the group's own requests (SST 'S', RDMC 'R'). */
#define GROUP_WR_SMC 0x4dull /* 'M': an SMC run */
#define GROUP_WR_P2P 0x50ull /* 'P': a point-to-point SEND */

/* Receives per peer, and the bytes of each (SENDs: RDMC control
 * messages and point-to-point messages). */
#define GROUP_RECV_DEPTH 256u
#define GROUP_RECV_BUF 4096u
/* RDMC sends a member keeps in flight before group_ordered_send waits. */
#define GROUP_RDMC_INFLIGHT 8u

/* An RDMC announcement's payload (little-endian). */
struct group_announce {
	uint64_t msg_id;
	uint64_t size;
};

/* One large message, from its announcement (or its first callback) to its
 * delivery. */
struct group_xfer {
	struct group_xfer *next;
	uint64_t msg_id;
	uint32_t sender;      /* rank */
	uint64_t size;
	uint64_t seq;         /* the announcement's place in the order */
	bool announced;       /* in the delivery queue */
	bool ready;           /* every member holds it */
	bool failed;
	bool expect_pending;  /* rdmc_expect said -EBUSY: try again */
	int status;
	char why[SQUALL_ERRMSG_MAX];
	struct buf_desc d;    /* the buffer (receiver: own lease; sender: sent) */
};

/* An entry of the delivery queue: messages wait there only behind a
 * large message that is not yet everywhere. */
struct group_item {
	struct group_item *next;
	struct group_xfer *x;   /* a large message, or NULL: */
	struct smc_msg m;       /* a small one (its slot kept by the group) */
};

/* A delivery the application kept. */
enum group_kept_kind { KEPT_SMC = 1, KEPT_RDMC_RECV, KEPT_RDMC_SENT };
struct group_kept {
	struct group_kept *next;
	enum group_kept_kind kind;
	struct buf_desc d;
	struct smc_msg m;
};

/* An RDMC send waiting for the progress thread. */
struct group_rsend {
	struct group_rsend *next;
	uint64_t msg_id;
	struct buf_desc d;
};

enum group_col {
	COL_SMC_RECV,  /* [n] rounds held of each sender (SMC) */
	COL_SMC_REL,   /* [n] records released of each sender's ring (SMC) */
	COL_SMC_RING,  /* region offset of my rings + 1 */
	COL_DONE,      /* [n] ordered messages of each sender delivered here */
	COL_SENT,      /* ordered messages I sent before closing */
	COL_BARRIER,   /* barriers entered */
	COL_CLOSING,   /* 1: closed, flushing; 2: flushed */
	COL_COUNT
};

struct group {
	struct group_config cfg;
	uint32_t my_id, me, n;
	uint32_t ids[GROUP_CONFIG_MAX_MEMBERS];
	struct group_callbacks cb;
	void *ctx;

	struct alloc *a;
	void *base;
	size_t len;
	struct rdma_sq_node *node;
	struct rdma_sq_mr *grant;
	struct sst_layout *layout;
	struct sst *t;
	int col[COL_COUNT];
	struct buf_desc table, rings, hdr, recv_area;
	struct sst_dispatch dispatch;

	/* SMC */
	struct smc_core *core;
	struct smc_ring_geom geom;
	uint64_t raddr[GROUP_CONFIG_MAX_MEMBERS];
	uint32_t rkey[GROUP_CONFIG_MAX_MEMBERS];
	uint64_t *recv, *rel;           /* n x n, read from the SST */
	uint64_t *row_recv, *row_rel;   /* n */

	/* RDMC */
	struct rdmc_engine *e;
	struct rdmc_group *rg;

	/* Under lock: the RDMC sends waiting for the progress thread, the
	 * kept deliveries, the RDMC sends in flight. */
	pthread_mutex_t lock;
	pthread_cond_t room;
	struct group_rsend *rsend_head, **rsend_tail;
	struct group_kept *kept;
	unsigned rdmc_inflight;
	uint64_t next_msg;

	/* Progress thread only: transfers and the delivery queue. */
	struct group_xfer *xfers;
	struct group_item *q_head, **q_tail;
	uint64_t *done;                 /* [n] delivered per sender */
	bool done_dirty;

	/* Counters (atomic: any thread). */
	atomic_uint_fast64_t st_sent, st_sent_smc, st_sent_rdmc, st_delivered,
		st_delivered_bytes, st_copies, st_p2p_sent, st_p2p_received,
		st_waits;

	uint64_t barriers;              /* group_barrier calls */
	atomic_int failed;              /* first failure: -ENOTCONN */
	char fail_msg[SQUALL_ERRMSG_MAX];
	atomic_bool ready;              /* every peer's ring is known: SMC may
					   post (nulls included) */
	atomic_bool closing;            /* group_close began */
	atomic_bool quiet;              /* flushed: peers leaving is fine */
};

/* link.c: SMC's transport operations and the SST dispatch hooks. */
extern const struct smc_core_ops group_smc_ops;
void group_dispatch_init(struct group *g);
int group_smc_setup(struct group *g, struct squall_error *err);
int group_rings_exchange(struct group *g, struct squall_error *err);

/* order.c: SMC delivery, RDMC glue, the delivery queue. */
bool group_smc_deliver(void *arg, const struct smc_msg *m);
extern const struct rdmc_callbacks group_rdmc_cb_template;
bool group_pass(void *arg);
void group_order_free(struct group *g);

/* group.c: the monotonic clock in ms, and the short sleep of waits that
 * poll the SST. */
uint64_t group_now_ms(void);
void group_nap(void);
void group_fail(struct group *g, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* SQUALL_GROUP_INT_H */
