/*
 * node.h - the inside of a struct rdma_sq_node, shared by the files of rdma/.
 *
 * Peers are kept in the order of cfg->members (index = position in the
 * .cfg); the member's own slot is unused. A peer moves IDLE -> (connecting
 * states) -> UP -> DEAD; DEAD is final for the node's life.
 */
#ifndef SQUALL_RDMA_NODE_H
#define SQUALL_RDMA_NODE_H

#include <netinet/in.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include <squall/rdma.h>
#include <squall/regcache.h>

#include "rdma/auth.h"
#include "rdma/conn_data.h"
#include "rdma/tags.h"

enum rdma_sq_peer_state {
	PEER_IDLE,         /* nothing in flight (active: next try due) */
	PEER_RETRY_WAIT,   /* active: waiting until retry_at_ms */
	PEER_RESOLVING,    /* active: address or route being resolved */
	PEER_CONNECTING,   /* active: connect request sent */
	PEER_ACCEPTING,    /* passive: accept sent, waiting for ESTABLISHED */
	PEER_AUTH,         /* connected; proving the group key (conn.c) */
	PEER_UP,
	PEER_DEAD,
};

/* A listener between two nodes (rdma_sq_listener_keep): its id and the
 * channel it was created on, where requests wait (and where the last
 * node's identifiers live until that node is destroyed); and the node's
 * protection domain with what is registered in it for the member rather
 * than for one node's peers: the region (the next node takes it over
 * when its region and access are the same; registering a region is the
 * dearest step of a node's set-up) and the registration cache of foreign
 * memory (the application's buffers stay registered, and the process's
 * unmap monitor keeps running). */
struct rdma_sq_listener {
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct sockaddr_in addr;      /* where it listens */
	struct ibv_pd *pd;            /* on id->verbs */
	struct ibv_mr *region_mr;     /* in pd, or NULL */
	int region_access;            /* region_mr's access flags */
	struct regcache *cache;       /* its registrations in pd, or NULL */
};

struct rdma_sq_mr {
	struct ibv_mr *mr;
	struct rdma_sq_mr *next;
};

/* The cache registrations one posted request holds, at most one per
 * piece; released when the request's completion is polled (or at
 * destroy). */
#define RDMA_SQ_HOLD_MAX RDMA_SQ_MAX_SGE
struct rdma_sq_hold {
	uint32_t peer;
	uint64_t wr_id;
	bool recv;
	int n;
	struct regcache_reg *reg[RDMA_SQ_HOLD_MAX];
	struct rdma_sq_hold *next;
};

struct rdma_sq_peer {
	uint32_t id;
	const struct rdma_sq_member *m;
	bool active;                  /* we connect (our id is lower) */
	enum rdma_sq_peer_state state;
	struct rdma_cm_id *cm;
	struct ibv_qp *qp;            /* == cm->qp once created */
	uint32_t qp_num;
	uint64_t retry_at_ms;
	unsigned attempts;
	struct rdma_sq_hello remote;  /* what the peer told us (with a group
					 key, its region target comes with
					 its proof instead) */
	uint64_t nonce;               /* my hello's nonce (0: no group key) */
	struct rdma_sq_ctl_io *aio;   /* buffers of the key exchange */
	unsigned auth_got;            /* its messages of the exchange taken */
	unsigned auth_early;          /* its proof came before ESTABLISHED:
					 receive slot + 1 (0: none) */
	uint32_t auth_early_len;
	char who[96];                 /* "member 2 (10.77.0.2:7001)" */
	char last_try[256];           /* why the last attempt failed */
	char error[SQUALL_ERRMSG_MAX];/* why the peer is dead */
	/* What the peer granted this member (window.c). */
	struct rdma_sq_ctl_io *gio;   /* buffers of the grant exchange */
	bool granted;                 /* its GRANT arrived */
	bool drain_marked;            /* rdma_sq_drain's marker posted, its
					 completion not yet taken */
	/* A peer found gone: of opt.listening, nothing listens at its
	 * address; of any, it failed after its connection came up (conn.c).
	 * A peer of opt.listening that is the lower of the two: the request
	 * that asks whether it still listens (the probe) and when the next
	 * one goes. */
	bool listens;
	bool gone;
	struct rdma_cm_id *probe;
	uint64_t probe_at_ms;
	unsigned probes;
	struct { uint64_t addr, len; uint32_t rkey; bool set; }
		grant[RDMA_SQ_TARGET_COUNT];
};

struct rdma_sq_node {
	/* The group, copied from rdma_sq_group at create. */
	char *name;                   /* names the group in messages */
	uint32_t nmembers;
	struct rdma_sq_member *members;
	uint64_t epoch;               /* bound into the key proofs */
	bool has_key;
	uint8_t key[SQUALL_KEY_LEN];
	char *key_file;
	uint32_t connect_timeout_ms;
	char *device;                 /* "" or the device to check */
	uint32_t my_id;
	int my_index;
	struct rdma_sq_options opt;
	struct sockaddr_in my_addr;

	struct rdma_event_channel *ech;
	struct rdma_cm_id *listen_id;
	bool listening;               /* rdma_listen done (or kept so) */
	/* rdma_sq_stop: the member stopped for good, and every request is
	 * refused with a hello that says so (__atomic: any thread sets it). */
	bool stopped;
	/* opt.listener, until rdma_sq_create ends: bind_listener takes its
	 * channel, id and protection domain, make_cache its cache and
	 * register_region its region registration (when it fits). */
	struct rdma_sq_listener *adopt;
	struct ibv_context *ctx;      /* owned by librdmacm */
	uint8_t port;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	int cq_size;
	bool cq_armed;                /* notification requested, not yet read */
	int wake_fd;                  /* eventfd: rdma_sq_wake ends a wait */
	uint64_t cookie;              /* the hello's cookie (rdma_sq_group) */
	bool mw_bind;                 /* use-once windows may be bound: the
					 device has memory windows and the
					 cache's registrations are pinned */
	int max_rd_atom;              /* outstanding READs per QP */
	/* Completions taken by rdma_sq_wait (to close the arm/poll race)
	 * and not yet handed out by rdma_sq_poll. */
	struct ibv_wc stash[32];
	int stash_n, stash_pos;

	void *region;
	size_t region_len;
	struct ibv_mr *region_mr;
	/* pd, region_mr and cache left with the listener
	 * (rdma_sq_listener_keep): this node uses them to its end, and does
	 * not free them. */
	bool pd_kept;
	struct rdma_sq_mr *mrs;       /* extra registrations */

	/* Registrations of foreign memory, and the requests holding them.
	 * `nholds` lets the poller skip the lock when nothing is held. */
	struct regcache *cache;
	pthread_mutex_t hold_lock;
	struct rdma_sq_hold *holds;
	unsigned long nholds;

	/* Use-once regions still open, and what they did. */
	struct rdma_sq_use_once *use_once;
	struct rdma_sq_use_once_stats uo_stats;
	char mw_why[160];             /* why windows are not used, "" if they are */

	/* Windows peers write through (window.c; peer_windows). */
	bool win_mw;                  /* windows are memory windows */
	bool win_rxe;                 /* ... not, for rxe checks no range */
	bool win_path_said;
	pthread_mutex_t win_lock;
	struct rdma_sq_window *windows;

	/* On-demand paging of foreign memory (device.c): decided once at
	 * create; the counters are written under the cache's writer lock
	 * and read by any thread (atomics). */
	bool odp;
	char odp_why[320];            /* why ODP is not used, "" if it is */
	uint64_t odp_regs;
	uint64_t odp_fallbacks;

	unsigned idle_polls;          /* empty polls since the last cm check */
	bool events_wanted;           /* rdma_sq_want_events() asked */
	uint32_t npeers;              /* == cfg->nmembers */
	uint64_t refused;             /* connections refused for the key
					 (atomic: rdma_sq_refused) */
	struct rdma_sq_peer *peers;
};

/* A peer's state is written by the thread that polls (and by connect_all)
 * and read by posting threads: the release store publishes the peer's
 * error text and remote target before the state that says to look at
 * them. */
static inline enum rdma_sq_peer_state rdma_sq_peer_state(const struct rdma_sq_peer *p)
{
	return __atomic_load_n(&p->state, __ATOMIC_ACQUIRE);
}

static inline void rdma_sq_set_state(struct rdma_sq_peer *p, enum rdma_sq_peer_state s)
{
	__atomic_store_n(&p->state, s, __ATOMIC_RELEASE);
}

/* device.c */
void rdma_sq_log(struct rdma_sq_node *node, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
uint64_t rdma_sq_now_ms(void);

/* post.c */
/* Release the cache registrations held by the request that produced wc. */
void rdma_sq_hold_release(struct rdma_sq_node *node, const struct ibv_wc *wc,
			  uint32_t peer);
/* Release every hold (destroy). */
void rdma_sq_hold_release_all(struct rdma_sq_node *node);
int rdma_sq_region_access(const struct rdma_sq_node *node);

/* odp.c */
/* Decide whether the node's cache registers on demand (ODP), fill
 * odp_why when not; on an ODP node use-once windows are turned off
 * (mw_bind, mw_why). After alloc_queues, before the cache is made. */
void rdma_sq_odp_probe(struct rdma_sq_node *node);

/* use_once.c */
void rdma_sq_use_once_destroy_all(struct rdma_sq_node *node);

/* window.c */
void rdma_sq_window_destroy_all(struct rdma_sq_node *node);

/* conn.c */
struct rdma_sq_peer *rdma_sq_peer_by_id(struct rdma_sq_node *node, uint32_t id);
/* The tag (top byte) of the work requests of the key exchange: the
 * completion dispatcher hands them to rdma_sq_auth_wc, never out. */
#define RDMA_SQ_WR_AUTH SQUALL_WR_TAG_AUTH
void rdma_sq_auth_wc(struct rdma_sq_node *node, const struct ibv_wc *wc);
/* The tag's "what" of the GRANT's receive and send (the key exchange's
 * own are 0-3); rdma_sq_auth_wc hands their completions to
 * rdma_sq_grant_wc (window.c), whenever they come: a peer's GRANT may
 * arrive while this member still connects to others. */
#define RDMA_SQ_GRANT_RECV 4u
#define RDMA_SQ_GRANT_SEND 5u
/* ... and rdma_sq_drain's marker (cq.c), whose completion clears the
 * peer's drain_marked. */
#define RDMA_SQ_DRAIN_SEND 6u
void rdma_sq_grant_wc(struct rdma_sq_node *node, const struct ibv_wc *wc);
/* The work request id of a control exchange's receive or send with p:
 * the tag, what (above), p's id. */
static inline uint64_t rdma_sq_ctl_wr_id(const struct rdma_sq_peer *p,
					 unsigned what)
{
	return (uint64_t)RDMA_SQ_WR_AUTH << 56 | (uint64_t)what << 32 | p->id;
}
/* While connect_all or grant_all waits: take the control exchanges'
 * completions (rdma_sq_auth_wc); any other goes to the stash for
 * rdma_sq_poll (none is posted then). */
void rdma_sq_ctl_poll(struct rdma_sq_node *node);
/* Registered buffers of one control exchange with a peer, sent and
 * received over its QP (the key exchange takes two of each, the grants
 * one). */
#define RDMA_SQ_CTL_MSG_MAX 128u
struct rdma_sq_ctl_io {
	struct ibv_mr *mr;
	uint8_t recv[2][RDMA_SQ_CTL_MSG_MAX];
	uint8_t send[2][RDMA_SQ_CTL_MSG_MAX];
};
/* *io = new registered buffers for p's `what` ("key exchange", "grants");
 * whatever *io held is freed first. */
int rdma_sq_ctl_io_new(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		       struct rdma_sq_ctl_io **io, const char *what,
		       struct squall_error *err);
/* Free *io (its QP destroyed or the exchange over) and clear it. */
void rdma_sq_ctl_io_free(struct rdma_sq_ctl_io **io);
/* With peer_windows, before p's connection is up (after the key
 * exchange's receives, which the peer's first messages take): the receive
 * for p's GRANT (window.c). */
int rdma_sq_grant_setup(struct rdma_sq_node *node, struct rdma_sq_peer *p,
			struct squall_error *err);
/* Mark a peer dead with a reason (first reason wins) and move its QP to
 * the error state so outstanding requests flush. */
void rdma_sq_peer_fail(struct rdma_sq_node *node, struct rdma_sq_peer *p,
		       const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Handle every pending connection event without blocking (after
 * connect_all: disconnects). Returns 0 or a negative errno. */
int rdma_sq_events(struct rdma_sq_node *node);

#endif /* SQUALL_RDMA_NODE_H */
