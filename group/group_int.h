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
 * buffers; the rest is the allocator's, for leases. The SMC rings are
 * leased anew for every view (a view's rings stay until the deliveries
 * the application kept from them are released).
 *
 * Views (view.c): everything that depends on the members (node, SST, SMC
 * core, rings, RDMC) is built for one view and torn down at its end; the
 * region, allocator, kept deliveries and counters live across views.
 * Application threads use the view's parts under epoch_lock (read); the
 * view thread swaps them under it (write). The progress thread never
 * takes it: it is stopped before a swap.
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
#include "group/vcore.h"

/* COL_CLOSING of a member that leaves while the others go on: every
 * message it sent is delivered everywhere; drop it in the next view. */
#define GROUP_CLOSE_LEFT VC_CLOSE_LEFT

/* How long a closing member whose messages are everywhere waits for the
 * others to close too before it leaves alone (plus two heartbeats). */
#define GROUP_LEAVE_GRACE_MS 500u

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
/* Point-to-point sends in flight to one member before group_p2p_send
 * says -EAGAIN: they share the queue pair's send queue (rdma_sq_options
 * max_send_wr) with the SST, SMC and RDMC, which must keep room. */
#define GROUP_P2P_INFLIGHT 64u

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
	uint64_t round;       /* the announcement's round */
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

/* A delivery the application kept: a small message in the view's rings
 * (another member's) or the SMC core's hands (one of mine), a large
 * one received into a lease of mine or sent from one, or one of my
 * small messages whose view ended (its lease is the kept record's). */
enum group_kept_kind { KEPT_SMC = 1, KEPT_RDMC_RECV, KEPT_RDMC_SENT,
		       KEPT_OWN_SMC };
struct group_kept {
	struct group_kept *next;
	enum group_kept_kind kind;
	struct group_rings *rings;  /* KEPT_SMC: the view's rings */
	struct buf_desc d;
	struct smc_msg m;
};

/* An RDMC send waiting for the progress thread. */
struct group_rsend {
	struct group_rsend *next;
	uint64_t msg_id;
	struct buf_desc d;
	bool submitted;  /* sent again in a new view: already submitted */
};

/* A view's SMC rings: a lease, freed once the view is over and no kept
 * delivery points into it. */
struct group_rings {
	struct buf_desc d;
	unsigned kept;
	bool retired;
};

/* One of this member's large messages, from its send to its delivery:
 * what a view change needs to deliver it (within the trim) or send it
 * again (past it). Under lock. */
struct group_own {
	struct group_own *next;
	uint64_t msg_id;
	struct buf_desc d;
};

/* A message to send again in the next view, in order. */
struct group_resend {
	struct group_resend *next;
	bool large;
	uint8_t kind;
	uint64_t msg_id;        /* large */
	struct buf_desc d;      /* the payload (submitted) */
};

/* A point-to-point message kept until the view is live (link.c). */
struct group_early_p2p {
	struct group_early_p2p *next;
	uint32_t sender;                /* .cfg id */
	uint32_t len;
	uint8_t payload[];
};

enum group_col {
	COL_SMC_RECV,  /* [n] rounds held of each sender (SMC) */
	COL_SMC_REL,   /* [n] records released of each sender's ring (SMC) */
	COL_SMC_RING,  /* region offset of my rings + 1 */
	COL_DONE,      /* [n] ordered messages of each sender delivered here */
	COL_SENT,      /* ordered messages I sent before closing */
	COL_BARRIER,   /* barriers entered */
	COL_CLOSING,   /* 1: closed, flushing; 2: flushed */
	/* View changes (one push from COL_HAVE to COL_TMASK): */
	COL_HAVE,      /* [n] rounds of each sender held, large payloads
			  included (the trim is their minimum) */
	COL_ACK,       /* the failure mask this member wedged for, + 1 */
	COL_TRIM,      /* [n] the trim adopted */
	COL_TADD,      /* members that trim's view adds (.cfg index bits) */
	COL_TMASK,     /* the failure mask of that trim, + 1; 0: none */
	COL_JOIN,      /* joiners that asked this member (.cfg index bits) */
	COL_COUNT
};

struct group {
	struct group_config cfg;   /* as loaded */
	struct group_config vcfg;  /* the current view: its members, epoch */
	uint32_t my_id, me, n;     /* n, me: in the current view */
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
	struct group_rings *cur_rings;

	/* SMC */
	struct smc_core *core;
	struct smc_ring_geom geom;
	uint64_t raddr[GROUP_CONFIG_MAX_MEMBERS];
	uint32_t rkey[GROUP_CONFIG_MAX_MEMBERS];
	uint64_t *recv, *rel;           /* n x n, read from the SST */
	uint64_t *row_recv, *row_rel;   /* n */

	/* Point-to-point sends in flight per rank of the view (reset with
	 * each view: its node's completions end with it). */
	atomic_uint p2p_inflight[GROUP_CONFIG_MAX_MEMBERS];

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

	atomic_uint_fast64_t barriers;  /* group_barrier calls */
	atomic_uint_fast64_t close_state; /* 1: closing, flushing; 2: flushed;
					     GROUP_CLOSE_LEFT: leaving alone */
	bool leaving;                   /* group_close's thread */
	uint64_t leave_since;           /* own messages flushed, others not
					   closing, since (ms); close's */
	/* What group_publish_agreements published last, under agree_lock. */
	pthread_mutex_t agree_lock;
	uint64_t pub_epoch, pub_barriers, pub_close, pub_sent;
	atomic_int failed;              /* first failure: -ENOTCONN */
	char fail_msg[SQUALL_ERRMSG_MAX];
	atomic_bool ready;              /* every peer's ring is known: SMC may
					   post (nulls included) */
	atomic_bool closing;            /* group_close began */
	atomic_bool quiet;              /* flushed: peers leaving is fine */

	/* Views. */
	pthread_rwlock_t epoch_lock;
	uint64_t seq_base;              /* positions of earlier views */
	atomic_uint_fast64_t sent_epoch; /* ordered sends in this view */
	atomic_bool wedged;             /* sends wait for the next view */
	atomic_bool installing;         /* the view thread builds a view */
	bool resending;                 /* view thread: leases already taken */
	struct group_own *own;          /* under lock */
	pthread_t view_thread;
	bool view_thread_on;
	pthread_cond_t vcond;           /* with lock: the view thread's turn */
	bool stopping;                  /* under lock: the view thread ends */
	bool install_due;               /* under lock: a trim is everywhere */
	/* Joins: the TCP listener, and per .cfg index the connection of a
	 * joiner waiting for its view (view thread only). */
	int join_fd;
	int join_conn[GROUP_CONFIG_MAX_MEMBERS];
	uint64_t join_bits;             /* published in COL_JOIN */
	/* Progress thread only: */
	/* Point-to-point messages that arrived before the view was live
	 * (a peer that is ready first may ask at once): handed to the
	 * upcall by group_pass once it is. */
	struct group_early_p2p *early_p2p, **early_p2p_tail;
	struct vc_state vc;             /* the view change (vcore.h) */
	/* Why each member of the view was first suspected ("": it was
	 * not), for the failure upcall once a trim removes it. */
	char suspect_why[GROUP_CONFIG_MAX_MEMBERS][160];
	struct vc_row vc_rows[GROUP_CONFIG_MAX_MEMBERS]; /* its inputs */
	uint64_t vc_fence[SST_MAX_MEMBERS]; /* the push of the adoption */
	bool ragged;                    /* delivering the trim */
	uint64_t vc_start_ms;
	struct group_resend *resend_head, **resend_tail;
	/* Messages a view ended before they could be sent again in it: they
	 * follow the next trim's own messages. */
	struct group_resend *resend_later;
	atomic_uint_fast64_t st_wedges, st_commits, st_resent, st_vc_ms,
		st_old_copies, st_old_waits;
	/* The group stopped: own sends not delivered here, told to the
	 * application (order.c: group_report_unsent) once a survivor's trim
	 * says which the others deliver, or after a wait without one.
	 * Progress thread; unsent_done also read by group_close. */
	uint64_t unsent_since;          /* ms: when the wait began */
	atomic_bool unsent_done;
	atomic_uint_fast64_t st_unsent_lost, st_unsent_unknown;
};

/* Thread-local: the group whose progress thread this is (upcalls do not
 * take epoch_lock: a view swap stops that thread first). */
extern __thread struct group *group_progress_self;
/* The group whose view thread this is (it holds epoch_lock for writing
 * while it sends again). */
extern __thread struct group *group_view_self;

/* On those two threads the group's calls take no epoch_lock. */
static inline bool group_lockless(const struct group *g)
{
	return group_progress_self == g || group_view_self == g;
}

/* link.c: SMC's transport operations and the SST dispatch hooks. */
extern const struct smc_core_ops group_smc_ops;
void group_dispatch_init(struct group *g);
/* Hand the point-to-point messages kept while the view was not live to
 * the upcall (progress thread); returns whether there were any. Free
 * them without an upcall: group_early_p2p_free. */
bool group_early_p2p_deliver(struct group *g);
void group_early_p2p_free(struct group *g);
int group_smc_setup(struct group *g, struct squall_error *err);
int group_rings_exchange(struct group *g, struct squall_error *err);

/* order.c: SMC delivery, RDMC glue, the delivery queue. */
bool group_smc_deliver(void *arg, const struct smc_msg *m);
extern const struct rdmc_callbacks group_rdmc_cb_template;
bool group_pass(void *arg);
void group_order_free(struct group *g);
/* Per sender, the rounds held here with their large payloads (what
 * COL_HAVE publishes), and the delivery of the agreed trim g->vc.trim,
 * collecting own messages past it in g->resend. */
void group_have(struct group *g, uint64_t *have);
void group_deliver_trim(struct group *g);
/* The group stopped: a send_failed upcall for each own ordered send the
 * others do not deliver (known: round r of this member is delivered iff
 * r < trim_me) or, not known, may not; their buffers go back. Progress
 * thread. */
void group_report_unsent(struct group *g, bool known, uint64_t trim_me);

/* view.c: view changes. */
bool group_view_pass(struct group *g, bool *work);
int group_view_start(struct group *g, struct squall_error *err);
void group_view_stop(struct group *g);
void group_own_add(struct group *g, struct group_own *o);
bool group_own_take(struct group *g, uint64_t msg_id, struct buf_desc *d);
bool group_own_find(struct group *g, uint64_t msg_id, struct buf_desc *d);
void group_rings_retire(struct group *g, struct group_rings *rg);
bool group_rdmc_lost(int status);

/* group.c: one view's parts, built and torn down. */
int group_epoch_build(struct group *g, struct squall_error *err);
void group_epoch_teardown(struct group *g);
int group_resend(struct group *g, struct group_resend *rs,
		 struct squall_error *err);
void group_call_view(struct group *g);
int group_go_live(struct group *g, struct squall_error *err);
int group_init_region(struct group *g, const struct group_config *cfg,
		      uint32_t my_id, struct squall_error *err);
typedef int (*group_init_fn)(struct group *g, const struct group_config *cfg,
			     uint32_t my_id, struct squall_error *err);
struct group *group_start(const struct group_config *cfg, uint32_t my_id,
			  const struct group_callbacks *cb, void *ctx,
			  group_init_fn init_fn, const char *what,
			  struct squall_error *err);
struct group *group_start_path(const char *cfg_path, uint32_t my_id,
			       const struct group_callbacks *cb, void *ctx,
			       group_init_fn init_fn, const char *what,
			       struct squall_error *err);

/* join.c: joins over TCP. */
int group_join_listen(struct group *g, struct squall_error *err);
void group_join_poll(struct group *g);
void group_join_answer(struct group *g, uint64_t epoch, const uint32_t *ids,
		       uint32_t n, uint64_t seq_base, uint64_t barriers);
void group_join_close(struct group *g);
void group_join_republish(struct group *g);
uint64_t group_cfg_bits(const struct group *g, const struct group_config *v);

/* group.c: the monotonic clock in ms, and the short sleep of waits that
 * poll the SST. */
/* group.c: publish the barrier count and close state in the view's SST
 * (any thread, under epoch_lock or on the view thread). */
void group_publish_agreements(struct group *g);

uint64_t group_now_ms(void);
void group_nap(void);
void group_fail(struct group *g, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* SQUALL_GROUP_INT_H */
