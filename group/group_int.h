/*
 * group_int.h - the inside of a struct group, shared by the files of group/.
 *
 * One member's group is one rdma node, one region (the allocator's), one
 * SST, one SMC core and one RDMC engine, and ONE progress thread: the
 * SST's, which takes every completion of the node and hands what is not
 * its own to the hooks in link.c (SMC and RDMC completions, immediates,
 * control and point-to-point messages) and runs a group pass per progress
 * pass (view.c's group_pass: the view change, then order.c's RDMC sends
 * waiting for the thread, SMC's pass, delivery).
 *
 * Region layout, the same on every member because every member reserves
 * the same sizes in the same order right after the region is mapped: the
 * SST table, the SMC rings (one per sender) and header area, the receive
 * buffers; the rest is the allocator's, for leases. The SMC rings are
 * leased anew for every view (a view's rings stay until the deliveries
 * the application kept from them are released).
 *
 * Lifetimes. struct group holds what lives as long as the member's end
 * of the group: the configuration, callbacks, region and allocator, the
 * kept deliveries, own messages and those to send again, the counters,
 * the close and failure state. struct group_epoch (g->v) holds what one
 * view owns: its node, SST, SMC core and rings, RDMC, the delivery queue
 * and the view-change state; epoch.c builds it for a view and tears it
 * down at the view's end, as one unit. Application threads use the
 * view's parts under epoch_lock (read); the view thread swaps them under
 * it (write). The progress thread never takes it: it is stopped before a
 * swap.
 *
 * Threads and locks: each function whose rule is a thread or a lock
 * asserts it (group_assert_*, below). The group knows its threads by
 * their ids, never by thread-local state: the view's progress thread
 * records itself as it enters the group's hooks, the view thread is
 * g->view_thread, and g->lock and epoch_lock record their holders.
 *
 * Files, each calling only the files below it:
 *
 *   group.c    the start (region, first view), the close, the free,
 *              queries and statistics
 *   view.c     view changes: the progress pass (group_pass), the
 *              agreement on the progress thread, the view thread's install
 *   epoch.c    one view's parts: build and teardown
 *   send.c     ordered and point-to-point sends, sending again, releases
 *   join.c     joins over TCP, the member's side and the joiner's
 *   link.c     the node's hooks for the SST, SMC's transport, the drain
 *   order.c    the delivery order: SMC delivery, RDMC glue, the queue
 *   own.c      own messages: large ones in flight, those to send again
 *   close.c    agreements over the SST: barrier and close
 *   fail.c     the failure state
 *   agree.c, vcore.c, config.c: pure decisions and the group file, which
 *              know nothing of a running group
 *
 * Above them all, stats.c: the stats file's writer (group.stats_file),
 * which reads the group as group_stats() does; group.c starts it after
 * the first view and stops it before the teardown. stats_file.c, pure,
 * is the file's text.
 *
 * One name goes up, and it is a callback: epoch.c gives the SST view.c's
 * group_pass as its on_pass hook. The SST calls it on its progress
 * thread; the build never does. Without the callback the layers would
 * loop: the pass runs view changes, whose installs build the next view.
 */
#ifndef SQUALL_GROUP_INT_H
#define SQUALL_GROUP_INT_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <squall/alloc.h>
#include <squall/config.h>
#include <squall/group.h>
#include <squall/rdma.h>
#include <squall/rdmc.h>
#include <squall/smc.h>
#include <squall/sst.h>

#include "group/layout.h"
#include "rdma/tags.h"
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

/* wr_id tags of the group's own requests (rdma/tags.h). */
#define GROUP_WR_SMC SQUALL_WR_TAG_SMC
#define GROUP_WR_P2P SQUALL_WR_TAG_P2P
#define GROUP_WR_P2P_READ SQUALL_WR_TAG_P2P_READ

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

/* upcall_ptr's mark: released while its upcall ran. */
#define GROUP_UPCALL_RELEASED(g) ((void *)&(g)->upcall_ptr)

/* A delivery the application kept: a small message in the view's rings
 * (another member's) or the SMC core's hands (one of mine), a large
 * one received into a lease of mine or sent from one, one of my
 * small messages whose view ended (its lease is the kept record's), or
 * one of mine sent in place (the memory is its sender's: nothing to give
 * back). */
enum group_kept_kind { KEPT_SMC = 1, KEPT_RDMC_RECV, KEPT_RDMC_SENT,
		       KEPT_OWN_SMC, KEPT_IN_PLACE };
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

/* An ordered send of memory outside the region, sent in place
 * (group_send_mem): its caller waits until the memory is its own again.
 * Under lock. */
struct group_in_place {
	struct group_in_place *next;
	const void *ptr;
	size_t len;
	bool async;             /* group_send_mem_async: no caller waits, the
				   send_mem_done upcall tells the end */
	bool done;
	int code;               /* 0: delivered; else why it was not */
	char why[SQUALL_ERRMSG_MAX];
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


/* g->lock: a mutex that records its holder, so that code that needs it
 * held can say so (group_assert_locked). Builds with assertions record
 * the holder; every build has the fields. */
struct group_mutex {
	pthread_mutex_t m;
	_Atomic(pthread_t) owner;       /* valid while held */
	atomic_bool held;
};

/* epoch_lock: a reader-writer lock that records its writer and counts
 * its readers (builds with assertions), for group_assert_epoch_writer
 * and group_assert_in_view. */
struct group_rwlock {
	pthread_rwlock_t l;
	atomic_uint readers;
	_Atomic(pthread_t) writer;      /* valid while written */
	atomic_bool written;
};

/* One view's parts (g->v): what depends on the view's members. epoch.c
 * builds them for the view in g->vcfg (group_epoch_build) and tears them
 * down at the view's end (group_epoch_teardown), as one unit. A build
 * sets the members and the parts and starts the view's counts and
 * view-change state from zero; every other field is written in a view
 * before it is read there (raddr and rkey: for each peer whose rings
 * the build learns), and the lists and queues are empty between views
 * (the teardown empties them). */
struct group_epoch {
	/* The members: my rank, their number, their .cfg ids by rank. */
	uint32_t me, n;
	uint32_t ids[GROUP_CONFIG_MAX_MEMBERS];

	/* The parts, in the order the build makes them. */
	struct sst_layout *layout;
	int col[COL_COUNT];             /* each column's index in it */
	struct group_rings *cur_rings;  /* the view's SMC rings */
	struct buf_desc rings;          /* ... and their lease */
	struct rdma_sq_node *node;
	struct smc_core *core;
	struct rdma_sq_mr *grant;       /* RDMC's READY grants */
	struct rdmc_engine *e;          /* RDMC: NULL in a view of one */
	struct rdmc_group *rg;
	struct sst_dispatch dispatch;   /* the SST's hooks into the group */
	struct sst *t;                  /* runs the progress thread */
	/* Where each peer's ring for my messages lies in its region. */
	uint64_t raddr[GROUP_CONFIG_MAX_MEMBERS];
	uint32_t rkey[GROUP_CONFIG_MAX_MEMBERS];

	/* The progress thread, as it recorded itself entering one of the
	 * group's hooks (group_progress_enter); progress_on is cleared once
	 * sst_destroy joined it. */
	_Atomic(pthread_t) progress_tid;
	atomic_bool progress_on;

	/* Any thread (atomic), from zero in each view: the ordered sends
	 * made in it, and the point-to-point sends in flight per rank (the
	 * view's node's completions end with it). */
	atomic_uint_fast64_t sent_epoch;
	atomic_uint p2p_inflight[GROUP_CONFIG_MAX_MEMBERS];

	/* Point-to-point messages through use-once regions (p2p.c), which
	 * end with the view (group_drain ends what is left): the regions
	 * this member opened for its peers (under p2p.c's lock), the
	 * peers' regions it reads, in arrival order, with the READs in
	 * flight per rank and the last id given (progress thread, or the
	 * drain). */
	struct group_p2p_out *p2p_out;
	struct group_p2p_in *p2p_in;
	unsigned p2p_reads[GROUP_CONFIG_MAX_MEMBERS];
	uint64_t p2p_in_id;

	/* Under g->lock: the RDMC sends waiting for the progress thread
	 * (those left at the view's end go with it: their messages are in
	 * g->own, which the view change delivers or sends again). */
	struct group_rsend *rsend_head, **rsend_tail;

	/* Progress thread (or, while none runs, the build and the teardown):
	 * the large messages under way, the delivery queue, and the
	 * messages delivered here per sender (done: [n], allocated once for
	 * the .cfg's members, cleared by each build). */
	struct group_xfer *xfers;
	struct group_item *q_head, **q_tail;
	uint64_t *done;
	bool done_dirty;
	/* A row change no member waits on (SMC_ROW_LAZY, done), not pushed
	 * yet: since when (CLOCK_MONOTONIC ns), 0 when none. */
	uint64_t held_ns;

	/* The view change (vcore.h), on the progress thread; the view
	 * thread reads vc and vc_start_ms to install the next view once vc
	 * is in VC_INSTALL, where the progress thread changes neither. */
	struct vc_state vc;
	struct vc_row vc_rows[GROUP_CONFIG_MAX_MEMBERS]; /* its inputs */
	uint64_t vc_fence[SST_MAX_MEMBERS]; /* the push of the adoption */
	bool ragged;                    /* delivering the trim */
	bool trimming;                  /* in group_deliver_trim */
	uint64_t trim_upcall_ns;        /* its deliver upcalls took */
	uint64_t vc_start_ms;           /* when this member wedged */
	uint64_t vc_adopt_ms;           /* when it adopted the trim */
	uint64_t connect_ms;            /* this view's connections and keys
					   took (start_rdma) */
	/* Why each member of the view was first suspected ("": it was
	 * not), for the failure upcall once a trim removes it. */
	char suspect_why[GROUP_CONFIG_MAX_MEMBERS][160];
};

/* The SST and SMC counters group_stats sums over views (group.c). */
enum group_timing {
	GT_SST_PUSHES, GT_SST_WRITES, GT_SLEEPS,
	GT_RX_WAIT_NS, GT_RX_WAITED, GT_OWN_WAIT_NS, GT_OWN_WAITED,
	GT_SMC_WRITES, GT_SMC_RECORDS,
	GROUP_TIMING_COUNT
};

/* A member's end of the group: what lives across its views. */
/* Join connections read at once, and the largest join request or proof
 * (header, member extension, up to 40 bytes of payload, with room). */
#define GROUP_JOIN_PENDING 16
#define GROUP_JOIN_MSG_MAX 256u

struct group {
	/* Set before the first view (group.c), then read by any thread: the
	 * group file as loaded, this member, the upcalls, the region and
	 * its fixed areas. */
	struct group_config cfg;
	uint32_t my_id;
	struct group_callbacks cb;
	void *ctx;
	struct alloc *a;
	void *base;                     /* the region */
	size_t len;
	struct buf_desc table, hdr, recv_area;
	struct smc_ring_geom geom;

	/* The current view: its members and epoch, the positions of
	 * earlier views (set by the start, then changed by the view thread
	 * under lock while it holds epoch_lock for writing), and its parts. */
	struct group_config vcfg;
	uint64_t seq_base;
	struct group_epoch v;
	/* Between two views (the view thread's, like g->v): this member's
	 * listener, kept from the last view's node for the next one's, and
	 * which members of the view being built kept theirs too (.cfg
	 * bits: the last view's survivors whose hello said wire 1.1 or
	 * later, set by install; for a joiner, what its answer said;
	 * 0 in a first view). A member
	 * that kept its listener and has none is gone (rdma_sq_options
	 * .listening). */
	struct rdma_sq_listener *listener;
	uint64_t kept_listeners;

	/* The progress thread's scratch, allocated once for the .cfg's
	 * members: the SMC counters read from the SST (n x n), my row (n). */
	uint64_t *recv, *rel;
	uint64_t *row_recv, *row_rel;

	/* Under lock: the kept deliveries, the RDMC sends in flight, the
	 * last msg_id, own large messages (own.c). Senders wait on room for
	 * room in the window, RDMC slots or the next view. */
	struct group_mutex lock;
	pthread_cond_t room;
	struct group_kept *kept;
	/* The delivery whose deliver upcall runs (its ptr, else NULL), or
	 * GROUP_UPCALL_RELEASED once another thread gave it back with
	 * group_release before the upcall returned. Set by the progress
	 * thread; changed by group_release under lock; taken back with the
	 * keep record under lock (order.c). */
	_Atomic(void *) upcall_ptr;
	/* Held while an upcall runs (group_upcall_begin). */
	pthread_mutex_t upcall_mu;
	unsigned rdmc_inflight;
	uint64_t next_msg;
	struct group_own *own;
	/* In-place sends waiting for their end, and their callers still
	 * inside group_send_mem (group_free waits for them to leave). Under
	 * lock. */
	struct group_in_place *in_place;
	unsigned in_place_callers;

	/* Application threads use g->v under epoch_lock (read); the view
	 * thread swaps it under it (write). */
	struct group_rwlock epoch_lock;
	atomic_bool log_quiet;          /* the view is torn down: what its
					   transport sees failing then is the
					   teardown, not news for the log */
	atomic_bool ready;              /* every peer's ring is known: SMC may
					   post (nulls included) */
	atomic_bool wedged;             /* sends wait for the next view */
	atomic_bool installing;         /* the view thread builds a view */

	/* The view thread (view.c). */
	pthread_t view_thread;
	atomic_bool view_thread_on;     /* view_thread runs */
	pthread_cond_t vcond;           /* with lock: the view thread's turn */
	bool stopping;                  /* under lock: the view thread ends */
	bool install_due;               /* under lock: a trim is everywhere */
	bool resending;                 /* view thread: leases already taken */
	bool sending_again;             /* view thread: its resend loop runs */

	/* Joins (join.c), view thread only (or the thread that starts or
	 * frees the group, while none runs): the TCP listener, and per .cfg
	 * index the connection of a joiner waiting for its view. */
	int join_fd;
	int join_conn[GROUP_CONFIG_MAX_MEMBERS];
	uint64_t join_bits;             /* published in COL_JOIN */
	/* Connections whose request (or proof of the key) is still being
	 * read, without blocking: at most GROUP_JOIN_PENDING at once, each
	 * message at most GROUP_JOIN_MSG_MAX bytes and due within
	 * JOIN_REQUEST_MS (join.c). */
	struct group_join_pend {
		int fd;                 /* -1: free */
		uint64_t deadline;
		uint32_t got;
		uint8_t buf[GROUP_JOIN_MSG_MAX];
		uint32_t id;            /* after its request: */
		int k;
		uint64_t fp, nonce_joiner, nonce_member; /* 0: no proof due */
	} join_pend[GROUP_JOIN_PENDING];

	/* Progress thread: point-to-point messages that arrived before the
	 * view was live (a peer that is ready first may ask at once), handed
	 * to the upcall by group_pass once it is. Kept across a view swap:
	 * those that arrive while a view is torn down go to the next. */
	struct group_early_p2p *early_p2p, **early_p2p_tail;

	/* Own messages to send again (own.c): collected on the progress
	 * thread as a trim is delivered (never while the view thread
	 * installs a view: installing holds the view change back), sent
	 * again by the view thread in the next view, or told to the
	 * application if the group stops (group_report_unsent). Messages a
	 * view ended before they could be sent again in it wait in
	 * resend_later: they follow the next trim's own messages. */
	struct group_resend *resend_head, **resend_tail;
	struct group_resend *resend_later;

	/* The agreements (close.c). */
	atomic_uint_fast64_t barriers;  /* group_barrier calls */
	atomic_uint_fast64_t close_state; /* 1: closing, flushing; 2: flushed;
					     GROUP_CLOSE_LEFT: leaving alone */
	atomic_bool closing;            /* group_close began */
	atomic_bool quiet;              /* flushed: peers leaving is fine */
	atomic_bool leave_stop;         /* leaving alone: deliver no more */
	bool leaving;                   /* group_close's thread */
	uint64_t leave_since;           /* own messages flushed, others not
					   closing, since (ms); close's */
	/* What group_publish_agreements published last, under agree_lock
	 * (pub_epoch: the view's epoch + 1, so a new view publishes anew). */
	pthread_mutex_t agree_lock;
	uint64_t pub_epoch, pub_barriers, pub_close, pub_sent;

	/* The failure (fail.c): the first one stands. */
	atomic_int failed;              /* first failure: -ENOTCONN */
	char fail_msg[SQUALL_ERRMSG_MAX];
	/* The group stopped: own sends not delivered here, told to the
	 * application (order.c: group_report_unsent) once a survivor's trim
	 * says which the others deliver, or after a wait without one.
	 * Progress thread; unsent_done also read by group_close. */
	uint64_t unsent_since;          /* ms: when the wait began */
	atomic_bool unsent_done;

	/* Counters (atomic: any thread). */
	atomic_uint_fast64_t st_sent, st_sent_smc, st_sent_rdmc, st_delivered,
		st_delivered_bytes, st_copies, st_p2p_sent, st_p2p_received,
		st_waits;
	atomic_uint_fast64_t st_wedges, st_commits, st_resent, st_vc_ms,
		st_old_copies, st_old_waits;
	/* The last view change's parts (group_stats: last_view_change_*):
	 * wedge to adoption, adoption to the view thread's install, the
	 * old view's teardown, the next one's build and, of it, the
	 * connections with their keys; of the delivery, its upcalls. */
	atomic_uint_fast64_t st_vc_agree_ms, st_vc_deliver_ms,
		st_vc_teardown_ms, st_vc_build_ms, st_vc_connect_ms,
		st_vc_upcall_ms;
	atomic_uint_fast64_t st_unsent_lost, st_unsent_unknown;
	atomic_uint_fast64_t st_misbehaved; /* peers removed for what they sent */
	atomic_uint_fast64_t st_old_refused; /* ended views' rdma_sq_refused */
	atomic_uint_fast64_t st_join_refused; /* joins with a wrong proof */
	atomic_uint_fast64_t st_join_dropped; /* join connections closed for
						 silence, size or a full table */
	atomic_uint_fast64_t st_p2p_abandoned; /* in flight when a view's
						  node went, never completed */
	atomic_uint_fast64_t st_p2p_use_once;  /* p2p sends through use-once
						  regions */
	atomic_uint_fast64_t p2p_out_id;       /* the last id p2p.c gave one */
	atomic_uint_fast64_t st_in_place, st_in_place_bytes,
		st_copied_bytes;       /* group_send_mem's two paths */
	atomic_uint_fast64_t st_old_cache_hits, st_old_cache_misses;
	atomic_uint_fast64_t st_old_odp_regs;
	/* Ended views' SST and SMC timing counters (group_stats). */
	atomic_uint_fast64_t st_old_timing[GROUP_TIMING_COUNT];

	/* The stats file's writer (stats.c), NULL without
	 * group.stats_file: set by the start, cleared by the close. */
	struct group_stats_writer *stats;
};

/* ---- locks ----------------------------------------------------------------- */

/* The calling thread holds l (recorded in builds with assertions only).
 * held is read first: a holder stores owner before held, so a thread
 * that sees another holder's held sees that holder as owner. */
static inline bool group_mutex_mine(const struct group_mutex *l)
{
	return atomic_load(&l->held) &&
	       pthread_equal(atomic_load(&l->owner), pthread_self());
}

static inline void group_mutex_taken(struct group_mutex *l)
{
#ifndef NDEBUG
	atomic_store(&l->owner, pthread_self());
	atomic_store(&l->held, true);
#else
	(void)l;
#endif
}

static inline void group_mutex_leaving(struct group_mutex *l)
{
#ifndef NDEBUG
	assert(group_mutex_mine(l));
	atomic_store(&l->held, false);
#else
	(void)l;
#endif
}

/* Take and let go g->lock, the holder recorded. */
static inline void group_lock(struct group *g)
{
	pthread_mutex_lock(&g->lock.m);
	group_mutex_taken(&g->lock);
}

static inline void group_unlock(struct group *g)
{
	group_mutex_leaving(&g->lock);
	pthread_mutex_unlock(&g->lock.m);
}

/* pthread_cond_timedwait on c with g->lock, which it lets go meanwhile. */
static inline void group_cond_timedwait(pthread_cond_t *c, struct group *g,
					const struct timespec *ts)
{
	group_mutex_leaving(&g->lock);
	pthread_cond_timedwait(c, &g->lock.m, ts);
	group_mutex_taken(&g->lock);
}

/* pthread_cond_wait on c with g->lock. */
static inline void group_cond_wait(pthread_cond_t *c, struct group *g)
{
	group_mutex_leaving(&g->lock);
	pthread_cond_wait(c, &g->lock.m);
	group_mutex_taken(&g->lock);
}

#define group_assert_locked(g) assert(group_mutex_mine(&(g)->lock))

/* Upcalls never run two at a time (group.h): each one runs holding
 * upcall_mu, which is recursive because an upcall's own call into the
 * group may make another one on the same thread (a send that fails at
 * once). Whoever holds it lets go: an upcall waits for nothing (group.h),
 * and a thread waiting for upcall_mu holds nothing the holder's calls
 * need (those calls take no epoch_lock on the progress and view threads,
 * group_lockless; the view thread holds it for writing around the view
 * upcall, when no other thread can hold it at all). Where the upcall can
 * wait for a later pass (a point-to-point message), the progress thread
 * only tries it (group_upcall_try), so that a long upcall on another
 * thread (state_save on the view thread) does not hold its heartbeats
 * back. */
static inline void group_upcall_begin(struct group *g)
{
	pthread_mutex_lock(&g->upcall_mu);
}

static inline bool group_upcall_try(struct group *g)
{
	return pthread_mutex_trylock(&g->upcall_mu) == 0;
}

static inline void group_upcall_end(struct group *g)
{
	pthread_mutex_unlock(&g->upcall_mu);
}

/* The send_failed upcall, when there is one. */
static inline void group_call_send_failed(struct group *g,
					  const struct buf_desc *d, int code,
					  const char *why)
{
	if (!g->cb.send_failed)
		return;
	group_upcall_begin(g);
	g->cb.send_failed(g->ctx, d, code, why);
	group_upcall_end(g);
}

/* The failure upcall, when there is one. */
static inline void group_call_failure(struct group *g, uint32_t member,
				      const char *why)
{
	if (!g->cb.failure)
		return;
	group_upcall_begin(g);
	g->cb.failure(g->ctx, member, why);
	group_upcall_end(g);
}

/* epoch_lock for reading (counted) and for writing (the writer
 * recorded); group_epoch_writer: the caller holds it for writing. */
static inline void group_epoch_rdlock(struct group *g)
{
	pthread_rwlock_rdlock(&g->epoch_lock.l);
#ifndef NDEBUG
	atomic_fetch_add(&g->epoch_lock.readers, 1);
#endif
}

/* The same without waiting: false when the view thread holds it for
 * writing (a view change is being installed) or waits to. */
static inline bool group_epoch_tryrdlock(struct group *g)
{
	if (pthread_rwlock_tryrdlock(&g->epoch_lock.l))
		return false;
#ifndef NDEBUG
	atomic_fetch_add(&g->epoch_lock.readers, 1);
#endif
	return true;
}

static inline void group_epoch_rdunlock(struct group *g)
{
#ifndef NDEBUG
	assert(atomic_load(&g->epoch_lock.readers) > 0);
	atomic_fetch_sub(&g->epoch_lock.readers, 1);
#endif
	pthread_rwlock_unlock(&g->epoch_lock.l);
}

static inline bool group_epoch_writer(const struct group *g)
{
	return atomic_load(&g->epoch_lock.written) &&
	       pthread_equal(atomic_load(&g->epoch_lock.writer),
			     pthread_self());
}

static inline void group_epoch_wrlock(struct group *g)
{
	pthread_rwlock_wrlock(&g->epoch_lock.l);
#ifndef NDEBUG
	atomic_store(&g->epoch_lock.writer, pthread_self());
	atomic_store(&g->epoch_lock.written, true);
#endif
}

static inline void group_epoch_wrunlock(struct group *g)
{
#ifndef NDEBUG
	assert(group_epoch_writer(g));
	atomic_store(&g->epoch_lock.written, false);
#endif
	pthread_rwlock_unlock(&g->epoch_lock.l);
}

#define group_assert_epoch_writer(g) assert(group_epoch_writer(g))

/* ---- threads ---------------------------------------------------------------- */

/* The caller is the current view's progress thread. */
static inline bool group_on_progress(const struct group *g)
{
	return atomic_load(&g->v.progress_on) &&
	       pthread_equal(atomic_load(&g->v.progress_tid), pthread_self());
}

/* First thing in each hook the SST runs on its progress thread (on_pass,
 * on_wc, on_imm, on_message): the thread records itself once per view. */
static inline void group_progress_enter(struct group *g)
{
	if (!atomic_load_explicit(&g->v.progress_on, memory_order_relaxed)) {
		atomic_store(&g->v.progress_tid, pthread_self());
		atomic_store(&g->v.progress_on, true);
	}
	assert(group_on_progress(g));
}

/* The caller is the group's view thread. */
static inline bool group_on_view_thread(const struct group *g)
{
	return atomic_load(&g->view_thread_on) &&
	       pthread_equal(g->view_thread, pthread_self());
}

/* On these two threads the group's calls take no epoch_lock: the
 * progress thread is stopped before a swap, and the view thread makes
 * the swap (it sends again under the write lock it holds). */
static inline bool group_lockless(const struct group *g)
{
	return group_on_progress(g) || group_on_view_thread(g);
}

/* Sends from the calling thread never wait: the progress thread, whose
 * upcalls would wait for room (the window, RDMC slots, leases) that only
 * it frees, and the view thread, whose upcalls (view, state_save,
 * failure) run while the progress thread delivers nothing. */
static inline bool group_nowait(const struct group *g)
{
	return group_on_progress(g) || group_on_view_thread(g);
}

/* The rules on threads and epoch_lock, asserted where they apply:
 * - progress: on the progress thread;
 * - progress_or_none: on it, or the view has no SST (the build before
 *   it starts, the teardown after it stopped);
 * - no_progress: the view has no SST, so no progress thread;
 * - view_thread: on the view thread;
 * - view_or_none: on it, or none runs (the start, the end);
 * - swap: the view's parts may be torn down and built: epoch_lock held
 *   for writing by the caller, or no view thread;
 * - in_view: the view's parts may be used: on the progress or view
 *   thread, epoch_lock held (for writing by the caller, or for reading:
 *   the lock counts its readers but does not know them), or no view
 *   thread. */
#define group_assert_progress(g) assert(group_on_progress(g))
#define group_assert_progress_or_none(g) \
	assert(group_on_progress(g) || !(g)->v.t)
#define group_assert_no_progress(g) assert(!(g)->v.t)
#define group_assert_view_thread(g) assert(group_on_view_thread(g))
#define group_assert_view_or_none(g) \
	assert(group_on_view_thread(g) || !atomic_load(&(g)->view_thread_on))
#define group_assert_swap(g) \
	assert(group_epoch_writer(g) || !atomic_load(&(g)->view_thread_on))
#define group_assert_in_view(g) \
	assert(group_lockless(g) || group_epoch_writer(g) || \
	       atomic_load(&(g)->epoch_lock.readers) > 0 || \
	       !atomic_load(&(g)->view_thread_on))

/* ---- the files' functions, from the top of the layering down ---------------- */

/* view.c: view changes. group_pass is the SST's on_pass hook: the view
 * change first, then the sends and the delivery (order.c); group_view_pass
 * its view-change part (progress thread). The view thread runs between
 * group_view_start and group_view_stop. group_call_view: the view upcall. */
bool group_pass(void *arg);
bool group_view_pass(struct group *g, bool *work);
int group_view_start(struct group *g, struct squall_error *err);
void group_view_stop(struct group *g);
void group_call_view(struct group *g);

/* epoch.c: one view's parts (g->v), built for the view in g->vcfg and
 * torn down at its end. */
int group_epoch_build(struct group *g, struct squall_error *err);
/* keep_listener: the member goes on to another view, and its listener
 * with it (g->listener); returns -errno with err when it cannot be kept,
 * 0 otherwise. */
int group_epoch_teardown(struct group *g, bool keep_listener,
			 struct squall_error *err);
/* The SST's receives (depth, buffers), as every view's table has them. */
void group_sst_recv_options(struct group *g, struct sst_options *so);

/* send.c: a message of an ended view sent again (view thread). */
int group_resend(struct group *g, struct group_resend *rs,
		 struct squall_error *err);

/* join.c: joins over TCP. The member's side: the listener, requests
 * (view thread), the answer with the next view and the state, requests
 * published again in a new view; the joiner's side: its first view,
 * asked of the members (deadline: since + group.connect_timeout_ms). */
int group_join_listen(struct group *g, struct squall_error *err);
void group_join_poll(struct group *g);
/* The whole length of the join message whose fixed header is hdr (what
 * its header says), into *total. -EMSGSIZE when it is more than max bytes
 * or its extensions more than WIRE_EXT_AREA_MAX. */
int group_join_msg_total(const uint8_t *hdr, uint64_t max, uint64_t *total);
void group_join_answer(struct group *g, uint64_t epoch, const uint32_t *ids,
		       uint32_t n, uint64_t seq_base, uint64_t barriers,
		       uint64_t listeners);
void group_join_close(struct group *g);
void group_join_republish(struct group *g);
uint64_t group_cfg_bits(const struct group *g, const struct group_config *v);
int group_join_ask(struct group *g, const struct group_config *cfg,
		   uint32_t my_id, uint64_t since, struct squall_error *err);

/* link.c: SMC's transport operations, and the node's hooks for the SST
 * (on_wc, on_imm, on_message: the build adds group_pass and its arg) and
 * its suspicions. */
extern const struct smc_core_ops group_smc_ops;
extern const struct sst_dispatch group_node_hooks;
void group_on_suspect(struct sst *t, uint32_t rank, uint32_t by,
		      const char *why, void *arg);
/* The view's node is about to go: flush its requests and take their
 * completions (buffers back), progress thread stopped. */
void group_drain(struct group *g);
/* Hand the point-to-point messages kept while the view was not live to
 * the upcall (progress thread); returns whether there were any. Free
 * them without an upcall: group_early_p2p_free. */
bool group_early_p2p_deliver(struct group *g);
void group_early_p2p_free(struct group *g);
/* p2p.c: a point-to-point send's completion (wr_id tag GROUP_WR_P2P:
 * a SEND, an answer, a use-once bind) and a READ's (GROUP_WR_P2P_READ),
 * both on the progress thread or the drain once it stopped; a decoded
 * point-to-point message (WIRE_MSG_P2P) and an answer to one of this
 * member's use-once regions (WIRE_MSG_P2P_DONE) from member rank, on the
 * progress thread: 0, or -EPROTO with why saying how the peer misbehaved.
 * group_early_p2p_deliver (above) also tries again, once a pass, the
 * reads that wait for room. group_p2p_drain: the view's node is about to
 * go (its requests flushed): end every use-once transfer still open. */
struct wire_msg;
void group_p2p_done(struct group *g, const struct rdma_sq_wc *wc);
void group_p2p_read_done(struct group *g, const struct rdma_sq_wc *wc);
int group_p2p_receive(struct group *g, uint32_t rank, const struct wire_msg *m,
		      char *why, size_t why_len);
int group_p2p_answer(struct group *g, uint32_t rank, const struct wire_msg *m,
		     char *why, size_t why_len);
void group_p2p_drain(struct group *g);
int group_smc_setup(struct group *g, struct squall_error *err);
int group_rings_exchange(struct group *g, struct squall_error *err);

/* order.c: SMC delivery, RDMC glue, the delivery queue. */
bool group_smc_deliver(void *arg, const struct smc_msg *m);
extern const struct rdmc_callbacks group_rdmc_cb_template;
/* The sends and the delivery of one progress pass, once no view change
 * holds them; *work set when there was work. */
void group_order_pass(struct group *g, bool *work);
void group_order_free(struct group *g);
/* Whether an RDMC transfer that ended with status was cut short by a
 * failure (the view change decides it), rather than failed alike on
 * every member. */
bool group_rdmc_lost(int status);
/* Per sender, the rounds held here with their large payloads (what
 * COL_HAVE publishes), and the delivery of the agreed trim g->v.vc.trim,
 * collecting own messages past it in g->resend_head. */
void group_have(struct group *g, uint64_t *have);
void group_deliver_trim(struct group *g);
/* The group stopped: a send_failed upcall for each own ordered send the
 * others do not deliver (known: round r of this member is delivered iff
 * r < trim_me) or, not known, may not; their buffers go back. Progress
 * thread. */
void group_report_unsent(struct group *g, bool known, uint64_t trim_me);
/* Installing a view failed (view thread; nothing of it is live): the own
 * messages waiting to be sent again are told lost, and the report is
 * done. */
void group_report_resends_lost(struct group *g);

/* own.c: own large messages in flight (under lock), and the messages to
 * send again: add one (a large one by its msg_id, if it is still in
 * flight), move those an earlier view could not send again behind them
 * (group_resend_add_later), leave the rest of a view that ends while
 * sending again to the next one (group_resend_defer); free what is left
 * at the end. */
void group_own_add(struct group *g, struct group_own *o);
/* Own message d is done with (send.c): a lease goes back to the
 * allocator (alloc_complete); memory sent in place is its caller's again,
 * with code (0: delivered everywhere) and why. No group lock held. */
void group_own_done(struct group *g, const struct buf_desc *d, int code,
		    const char *why);
/* send.c: 0 when d is a lease the application may send (leased: not
 * sent already, not a delivery, not free), else -EINVAL with err saying
 * what it is. A kept delivery is not: its record releases it later
 * (group_release). */
int group_lease_ready(struct group *g, const struct buf_desc *d,
		      struct squall_error *err);
/* d lies outside the region: memory sent in place. */
static inline bool group_in_place(const struct group *g,
				  const struct buf_desc *d)
{
	return d->ptr && !alloc_owns(g->a, d->ptr, d->len);
}
/* group_free: end the in-place sends still waiting (-ESHUTDOWN) and wait
 * for their callers to leave. */
void group_in_place_end(struct group *g);
bool group_own_take(struct group *g, uint64_t msg_id, struct buf_desc *d);
bool group_own_find(struct group *g, uint64_t msg_id, struct buf_desc *d);
void group_resend_add(struct group *g, bool large, uint8_t kind,
		      uint64_t msg_id, const struct buf_desc *d);
void group_resend_large(struct group *g, uint64_t msg_id);
void group_resend_add_later(struct group *g);
void group_resend_defer(struct group *g);
void group_own_free(struct group *g);

/* close.c: publish the barrier count and close state in the view's SST
 * (any thread, under epoch_lock or on the view thread), and group_close's
 * waits before the teardown. */
void group_publish_agreements(struct group *g);
int group_close_flush(struct group *g, int timeout_ms,
		      struct squall_error *err);

/* fail.c: the first failure stands; group_failed returns it (err says
 * why), or 0 while the group works. */
void group_fail(struct group *g, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int group_failed(struct group *g, struct squall_error *err);

/* group.c: group_stats() for a caller that may use the view's parts
 * (group_assert_in_view: epoch_lock held, or a group thread). */
void group_stats_in_view(struct group *g, struct group_stats *st);

/* Copy the library's stats into the caller's struct of size bytes (its
 * sizeof when it was built): the first size bytes, and zeroes past the
 * library's own struct when the caller's is longer. */
static inline void group_stats_copy_out(struct group_stats *dst, size_t size,
					const struct group_stats *src)
{
	if (size <= sizeof(*src)) {
		memcpy(dst, src, size);
		return;
	}
	memcpy(dst, src, sizeof(*src));
	memset((char *)dst + sizeof(*src), 0, size - sizeof(*src));
}
/* Add the current view's SST (sst) or SMC (!sst) timing counters to t,
 * by enum group_timing; the view's part may be gone (adds nothing). */
void group_timing_add(struct group *g, bool sst, uint64_t *t);

/* stats.c: with group.stats_file set, write the counters once (an
 * error if that fails) and start the thread that writes them every
 * second; stop it (joined), writing them a last time with write_last.
 * Both on the thread that starts or closes the group. */
int group_stats_start(struct group *g, struct squall_error *err);
void group_stats_stop(struct group *g, bool write_last);

/* The monotonic clock in ns and in ms, and the short sleep of waits that
 * poll the SST. */
static inline uint64_t group_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t group_now_ms(void)
{
	return group_now_ns() / 1000000u;
}

static inline void group_nap(void)
{
	nanosleep(&(struct timespec){ 0, 500000 }, NULL);
}

#endif /* SQUALL_GROUP_INT_H */
