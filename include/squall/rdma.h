/*
 * rdma.h - reliable connections between the members of a group (verbs +
 * librdmacm).
 *
 * A node is one member's end of the group's transport: the RDMA device that
 * owns the member's address, one protection domain, one completion queue
 * (with a completion channel for blocking waits) and one RC queue pair to
 * every other member. The member's region (memory the caller has mapped and
 * owns) is registered once; each peer learns an {address, rkey} target in
 * it from the connection's private data and asks for it by purpose.
 *
 * Posts take lists of (pointer, length) pieces and a 64-bit wr_id chosen by
 * the caller, which comes back in the completion. A piece is looked up in
 * the region first, then in extra registrations made with rdma_sq_reg_mr,
 * then in the node's registration cache (include/squall/regcache.h), which
 * registers foreign memory on first use and keeps it registered until the
 * memory goes away. A request that uses cached registrations holds them
 * until its completion is polled, so such a request must be signaled.
 *
 * Every call returns 0 (or a count) or a negative errno value; calls that
 * can fail for reasons worth words also fill a struct squall_error naming
 * the verbs/rdma_cm call, its errno text, and the peer concerned. The
 * library never prints; it can hand diagnostic lines to a log callback.
 *
 * Threads: one thread at a time polls and waits (the progress thread; it
 * also handles connection events). Posts may come from other threads at
 * the same time: a peer's state is read atomically and verbs serialises
 * each queue. create, connect_all, reg_mr, dereg_mr and destroy must not
 * run concurrently with any other call on the node; use-once open and
 * close must not run concurrently with each other.
 */
#ifndef SQUALL_RDMA_H
#define SQUALL_RDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <squall/error.h>
#include <squall/regcache.h>

struct rdma_sq_node;
struct rdma_sq_mr;

/* The most members a node connects (the group's limit). */
#define RDMA_SQ_MAX_MEMBERS 64u
#define RDMA_SQ_ADDR_MAX 64
/* The most scatter/gather entries options.max_sge may ask for. */
#define RDMA_SQ_MAX_SGE 32

/* One member as the transport needs it. */
struct rdma_sq_member {
	uint32_t id;
	char address[RDMA_SQ_ADDR_MAX]; /* IPv4 literal it listens on */
	uint16_t port;
};

/* What the transport needs of the group, filled by the layer above (the
 * group's is group_transport(), group/transport.h). rdma_sq_create copies
 * it: nothing here need outlive the call. */
struct rdma_sq_group {
	const char *name;              /* names the group in messages (e.g.
					  the group file's path) */
	uint32_t nmembers;             /* 1..RDMA_SQ_MAX_MEMBERS */
	const struct rdma_sq_member *members;
	uint64_t cookie;               /* opaque: every hello carries it, and a
					  peer whose cookie differs is refused
					  (the group's: its fingerprint) */
	uint64_t epoch;                /* bound into the key proofs */
	const uint8_t *key;            /* the group key (32 bytes), or NULL: no
					  authentication */
	const char *key_file;          /* where the key came from (messages) */
	uint32_t connect_timeout_ms;   /* 0: 10 s */
	const char *device;            /* NULL or "": the device that owns the
					  member's address; else it must be
					  that one */
};

/* Log levels handed to the log callback. */
enum rdma_sq_log_level {
	RDMA_SQ_LOG_ERROR = 0,
	RDMA_SQ_LOG_INFO = 1,
	RDMA_SQ_LOG_DEBUG = 2,
};

typedef void (*rdma_sq_log_fn)(void *arg, int level, const char *msg);

/* Options for rdma_sq_create. Zeroed fields take the defaults. */
struct rdma_sq_options {
	/* Wire version advertised to peers; 0/0 = SQUALL_WIRE_MAJOR/MINOR.
	 * Only tests set this (to show that a mismatch is refused). */
	uint16_t wire_major;
	uint16_t wire_minor;
	/* Work requests per queue pair (default 64 each, at most 4096),
	 * scatter/gather entries per request (default 4, at most
	 * RDMA_SQ_MAX_SGE; the node lowers it to what the device allows:
	 * rdma_sq_max_sge). */
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_sge;
	/* Bytes a send may carry inline (default 0: none). */
	uint32_t max_inline;
	/* ACK timeout exponent (4.096 us * 2^n; default 16, about 0.27 s) and
	 * transport retries (default 6): a dead peer is noticed after
	 * roughly timeout * (retries + 1). */
	uint8_t ack_timeout;
	uint8_t retry_count;
	/* Where diagnostic lines go; NULL = nowhere. */
	rdma_sq_log_fn log;
	void *log_arg;
	/* Limits of the registration cache for foreign memory: registered
	 * bytes (default 1 GiB) and registrations (default 4096) kept after
	 * their use; past them the least recently used idle ones go. */
	size_t cache_max_bytes;
	size_t cache_max_entries;
	/* Monitor mode of the cache (REGCACHE_MONITOR_AUTO by default). */
	enum regcache_monitor_mode cache_monitor;
	/* Register foreign memory pinned even where the device offers
	 * on-demand paging (default false: ODP wherever the device has it
	 * and passes the check; see rdma_sq_odp_why_not). For comparing the
	 * two paths in one run. */
	bool no_odp;
	/* Use ODP on the device's word alone, without the loopback check
	 * (tests that show what a device does with it). */
	bool odp_unchecked;
	/* Let peers RDMA-read the region too (default: they may only write
	 * it; a read of it fails with a remote access error). For
	 * benchmarks of READ itself (rdma_ping); a group never sets it:
	 * what a peer reads goes through a use-once region. */
	bool region_remote_read;
	/* Peers write the region only through windows (rdma_sq_window_open,
	 * rdma_sq_grant_all): the region's own registration gives them no
	 * access (default false: the region's key lets every peer write all
	 * of it). */
	bool peer_windows;
	/* A listener kept from this member's previous node
	 * (rdma_sq_listener_keep): the node listens on it instead of binding
	 * a new one, so that connection requests that came in between are
	 * answered, and the member's address never stops listening.
	 * The node also takes over the previous node's protection domain,
	 * its registration cache (rdma_sq_regcache: what it cached, with
	 * the limits it was made with) and its registration of the region
	 * when this node's region and access are the same (else it
	 * registers the region anew).
	 * rdma_sq_create takes it over, whatever it returns. */
	struct rdma_sq_listener *listener;
	/* Bit i: member i of the group's list (rdma_sq_group order) kept
	 * its listener from its previous node too. Nothing listening at such
	 * a member's address (its device answers "no listener") means its
	 * process is gone: connect_all then fails it at once instead of
	 * retrying, and asks a lower such member that has not connected
	 * yet whether it still listens (a connection request it refuses;
	 * the group's later views: survivors of the last one). */
	uint64_t listening;
};

/* The listening identifier of a node taken out of it, with the node's
 * rdma_cm channel, protection domain, registration of the region and
 * registration cache, to outlive it and serve the member's next node
 * (rdma_sq_options.listener).
 * Connection requests that arrive meanwhile wait in that channel, and
 * the next node answers them; the next node registers its region only
 * if it is not the same. */
struct rdma_sq_listener;

/* Take node's listener and rdma_cm channel out of it (the node then
 * listens no more and reads no connection event), for the next node of
 * the same member. Call it when nothing polls the node (its progress
 * stopped), before rdma_sq_destroy. Returns 0 with *out, or -EINVAL with
 * err filled when the node does not listen. */
int rdma_sq_listener_keep(struct rdma_sq_node *node,
			  struct rdma_sq_listener **out,
			  struct squall_error *err);

/* Whether member `peer`'s hello on this node said wire version 1.1 or
 * later of our major: such a member refuses a request it cannot take with
 * its hello (flagged busy), so where it kept its listener, a refusal
 * without a hello means nothing listens at its address. A 1.0 member
 * refuses some requests of a live member without a hello: it must not
 * be named in rdma_sq_options.listening. */
bool rdma_sq_peer_refuses_with_hello(const struct rdma_sq_node *node,
				     uint32_t peer);

/* The member has stopped for good (its group failed): from now on node
 * refuses every connection request with a hello that says so
 * (RDMA_SQ_HELLO_STOPPED), and a peer that would wait for it to connect
 * or to answer counts it gone at once instead (rdma_sq_connect_all:
 * -EHOSTDOWN). The requests are answered while something polls the node.
 * Any thread; it cannot be undone. */
void rdma_sq_stop(struct rdma_sq_node *node);

/* Close a kept listener no node took over (the requests waiting in it
 * are refused) and free its cache, region registration and protection
 * domain:
 * call it after the node it came from is destroyed, and before the
 * region is unmapped. Safe on NULL. */
void rdma_sq_listener_free(struct rdma_sq_listener *l);

/* Create member `my_id`'s node for the group grp: find the RDMA device
 * that owns the member's address (it must be grp->device when that is
 * set), allocate the protection domain and completion queue, register
 * [region, region + region_len) with local write, remote write and
 * memory-window bind access (remote read only with region_remote_read),
 * and bind a listener to the member's own address and port. No connection
 * is made yet. grp is copied; the region is the caller's and outlives the
 * node. Returns 0 with *out set, or a negative errno with err filled. */
int rdma_sq_create(const struct rdma_sq_group *grp, uint32_t my_id,
		   void *region, size_t region_len,
		   const struct rdma_sq_options *opt,
		   struct rdma_sq_node **out, struct squall_error *err);

/* Connect to every other member: listen on the member's address, connect
 * actively to every member with a higher id (retrying until the peer
 * listens) and accept every member with a lower id. Gives up after
 * the group's connect_timeout_ms with -ETIMEDOUT and an error naming the
 * first missing peer and its address. A peer with another wire major
 * version is refused (and refuses us) with -EPROTO and an error naming
 * both versions; so is a peer whose hello carries another cookie (the
 * group's: its file's fingerprint, so its file differs from ours), with
 * both named. A peer of rdma_sq_options.listening found gone (nothing
 * listens at its address), or any peer that fails after its connection
 * came up (it died or closed meanwhile), is failed with a reason saying
 * so; once every other peer is connected or failed, that is -EHOSTDOWN
 * with an error naming it (a refusal's error comes first).
 * Returns 0 once every queue pair is established. */
int rdma_sq_connect_all(struct rdma_sq_node *node, struct squall_error *err);

/* Disconnect, destroy every queue pair, the completion queue, all
 * registrations and the device resources. Safe on NULL. */
void rdma_sq_destroy(struct rdma_sq_node *node);

/* The member's own id, and the group's member count. */
uint32_t rdma_sq_my_id(const struct rdma_sq_node *node);
uint32_t rdma_sq_nmembers(const struct rdma_sq_node *node);
/* Scatter/gather entries a request may carry: options.max_sge, or the
 * device's limit when that is lower. */
uint32_t rdma_sq_max_sge(const struct rdma_sq_node *node);
/* The id of the member at index i of the group's list (rdma_sq_group
 * order), or UINT32_MAX when i is out of range. */
uint32_t rdma_sq_member_id(const struct rdma_sq_node *node, uint32_t i);

/* Connections this node refused because the process claiming to be a
 * member did not prove it holds the group key (a group with
 * group.key_file): it had none, or another. Any thread. */
uint64_t rdma_sq_refused(const struct rdma_sq_node *node);

/* The name of the RDMA device in use (e.g. "rxe0") and its port. */
const char *rdma_sq_device_name(const struct rdma_sq_node *node);
uint8_t rdma_sq_port(const struct rdma_sq_node *node);

/* What a remote target is for. REGION is the peer's whole region (its key
 * lets this member write it only without peer_windows); the others are
 * what the peer granted this member with rdma_sq_grant_all: exactly the
 * memory this member may write there (a GRANT carries them with the
 * wire's WIRE_TARGET_* numbers of the same names, which they equal). */
enum rdma_sq_target {
	RDMA_SQ_TARGET_REGION = 0,
	RDMA_SQ_TARGET_SST_ROW = 1,   /* my row in the peer's SST */
	RDMA_SQ_TARGET_SMC_RING = 2,  /* my SMC ring in the peer's region */
	RDMA_SQ_TARGET_COUNT
};

/* The remote target of `purpose` in peer `peer`'s memory: base address,
 * rkey and length in bytes. Returns 0, -ENOENT for an unknown peer or
 * a purpose it did not grant, -ENOTCONN when the peer is not connected. */
int rdma_sq_remote(const struct rdma_sq_node *node, uint32_t peer,
		   enum rdma_sq_target purpose, uint64_t *addr,
		   uint32_t *rkey, uint64_t *len);

/* Windows (peer_windows): what `peer` may write of this member's region
 * for `purpose`: *ptr and *len (len 0: nothing). Returns 0 or a negative
 * errno. */
typedef int (*rdma_sq_grant_fn)(void *arg, uint32_t peer,
				enum rdma_sq_target purpose, void **ptr,
				size_t *len);

/* After rdma_sq_connect_all, with peer_windows (else it returns 0 at
 * once): for every connected peer open a window per purpose over what fn
 * says it may write, send it their keys, and take its grants, within
 * timeout_ms. A peer whose grants do not come in time or do not parse is
 * failed, with the reason (rdma_sq_peer_error); the others go on.
 * Returns 0. */
int rdma_sq_grant_all(struct rdma_sq_node *node, rdma_sq_grant_fn fn,
		      void *arg, uint32_t timeout_ms, struct squall_error *err);

/* A window: `peer` alone may RDMA-write [ptr, ptr + len) of the region,
 * through the key rdma_sq_window_rkey gives, until rdma_sq_window_close,
 * on whose return the key is dead (a write with it fails with a remote
 * access error, and breaks the writer's connection). A type-2 memory
 * window bound to the peer's queue pair where the device has them, else a
 * registration of the range alone. Any thread; the node's destroy closes
 * those still open. */
struct rdma_sq_window;
int rdma_sq_window_open(struct rdma_sq_node *node, uint32_t peer, void *ptr,
			size_t len, struct rdma_sq_window **out,
			struct squall_error *err);
uint32_t rdma_sq_window_rkey(const struct rdma_sq_window *w);
int rdma_sq_window_close(struct rdma_sq_node *node, struct rdma_sq_window *w);

/* True while the connection to peer is established and no failure has been
 * seen on it. */
bool rdma_sq_peer_alive(const struct rdma_sq_node *node, uint32_t peer);

/* Register memory outside the region (for tests and the registration
 * cache). access is a mask of IBV_ACCESS_* flags; 0 means local write,
 * remote write and remote read. The registration is found automatically
 * when a piece of a post lies inside it. */
int rdma_sq_reg_mr(struct rdma_sq_node *node, void *ptr, size_t len,
		   int access, struct rdma_sq_mr **out,
		   struct squall_error *err);

/* The rkey and lkey of a registration. */
uint32_t rdma_sq_mr_rkey(const struct rdma_sq_mr *mr);
uint32_t rdma_sq_mr_lkey(const struct rdma_sq_mr *mr);

/* Deregister; the memory must no longer be in use by any posted request. */
int rdma_sq_dereg_mr(struct rdma_sq_node *node, struct rdma_sq_mr *mr,
		     struct squall_error *err);

/* One piece of a scatter/gather list: it must lie inside the region,
 * inside one extra registration, or in foreign memory the cache can
 * register (then the post must be signaled). */
struct rdma_sq_sge {
	void *ptr;
	uint32_t len;
};

/* Post flags. */
#define RDMA_SQ_SIGNALED 0x1u /* produce a completion on success (required
				 when a piece is in foreign memory) */
#define RDMA_SQ_INLINE 0x2u   /* copy the payload into the request */

/* RDMA WRITE the pieces sg[0..nsge) to remote_addr/rkey at peer. Returns 0,
 * -ENOTCONN for a dead or unconnected peer, -EFAULT for a piece outside
 * registered memory, -EINVAL for bad arguments, or the verbs error
 * (e.g. -ENOMEM when the send queue is full); err names the peer. */
int rdma_sq_write(struct rdma_sq_node *node, uint32_t peer,
		  const struct rdma_sq_sge *sg, int nsge,
		  uint64_t remote_addr, uint32_t rkey, uint64_t wr_id,
		  unsigned flags, struct squall_error *err);

/* RDMA WRITE_WITH_IMM: as rdma_sq_write, and the peer consumes one posted
 * receive, whose completion carries imm. */
int rdma_sq_write_imm(struct rdma_sq_node *node, uint32_t peer,
		      const struct rdma_sq_sge *sg, int nsge,
		      uint64_t remote_addr, uint32_t rkey, uint32_t imm,
		      uint64_t wr_id, unsigned flags,
		      struct squall_error *err);

/* RDMA READ from remote_addr/rkey at peer into the local pieces sg. */
int rdma_sq_read(struct rdma_sq_node *node, uint32_t peer,
		 const struct rdma_sq_sge *sg, int nsge,
		 uint64_t remote_addr, uint32_t rkey, uint64_t wr_id,
		 unsigned flags, struct squall_error *err);

/* SEND the pieces to peer, into the receive it has posted. */
int rdma_sq_send(struct rdma_sq_node *node, uint32_t peer,
		 const struct rdma_sq_sge *sg, int nsge, uint64_t wr_id,
		 unsigned flags, struct squall_error *err);

/* SEND_WITH_INV: as rdma_sq_send, and the peer's memory window with rkey
 * `inv_rkey` is invalidated when the message arrives, before the peer sees
 * it (the answer to a use-once region, see rdma_sq_use_once_open). */
int rdma_sq_send_inv(struct rdma_sq_node *node, uint32_t peer,
		     const struct rdma_sq_sge *sg, int nsge, uint32_t inv_rkey,
		     uint64_t wr_id, unsigned flags, struct squall_error *err);

/* Post a receive for peer's next SEND or WRITE_WITH_IMM into the pieces sg
 * (nsge may be 0 when only WRITE_WITH_IMM is expected). Always signaled. */
int rdma_sq_post_recv(struct rdma_sq_node *node, uint32_t peer,
		      const struct rdma_sq_sge *sg, int nsge, uint64_t wr_id,
		      struct squall_error *err);

/* What a completion finished. */
enum rdma_sq_opcode {
	RDMA_SQ_OP_WRITE,
	RDMA_SQ_OP_WRITE_IMM,
	RDMA_SQ_OP_SEND,
	RDMA_SQ_OP_READ,
	RDMA_SQ_OP_RECV,          /* a SEND arrived */
	RDMA_SQ_OP_RECV_IMM,      /* a WRITE_WITH_IMM arrived */
	RDMA_SQ_OP_UNKNOWN,       /* failed completion: verbs does not say */
	RDMA_SQ_OP_BIND_MW,       /* a use-once window was bound */
};

/* rdma_sq_wc.flags */
#define RDMA_SQ_WC_INVALIDATED 0x1u /* RECV of a SEND_WITH_INV: inv_rkey */
/* Failed with a remote access error: the peer refused the key or the
 * range of this member's WRITE or READ (outside what it granted). */
#define RDMA_SQ_WC_REMOTE_ACCESS 0x2u

struct rdma_sq_wc {
	uint64_t wr_id;
	uint32_t peer;            /* member id of the queue pair's peer */
	enum rdma_sq_opcode opcode;
	int status;               /* 0, or a negative errno (-ECONNRESET for
				     a failed or flushed request) */
	int ibv_status;           /* enum ibv_wc_status */
	const char *status_text;  /* ibv_wc_status_str(), static */
	uint32_t imm;             /* valid for RECV_IMM */
	uint32_t byte_len;        /* valid for RECV, RECV_IMM and READ */
	unsigned flags;           /* RDMA_SQ_WC_* */
	uint32_t inv_rkey;        /* with RDMA_SQ_WC_INVALIDATED: the rkey of
				     the window the peer invalidated */
};

/* Take up to max completions. Returns how many (0 when none), or a negative
 * errno when the completion queue itself fails. A failed completion marks
 * its peer dead (later posts to it return -ENOTCONN). Also handles pending
 * connection events (a peer's disconnect) now and then. */
int rdma_sq_poll(struct rdma_sq_node *node, struct rdma_sq_wc *out, int max);

/* Before rdma_sq_destroy: move every queue pair to the error state, so
 * that every request still posted completes (flushed), and hand each
 * completion to fn: the buffers those requests held can then be given
 * back instead of leaking with the node. Behind the last request of each
 * queue pair goes a marker of the node's own (a signaled empty SEND, not
 * handed to fn), and the drain ends when every marker's completion came
 * (send completions come in order, so every request before it came too);
 * when a marker could not be posted, once none came for 20 ms; at the
 * latest after timeout_ms. Returns how many completions fn got, or a
 * negative errno when the completion queue fails. Nothing may post
 * meanwhile. */
int rdma_sq_drain(struct rdma_sq_node *node, int timeout_ms,
		  void (*fn)(void *arg, const struct rdma_sq_wc *wc), void *arg);

/* Ask that the pending connection events (a peer whose connection closed
 * is marked dead, as a failed completion marks it) be handled by the next
 * rdma_sq_poll that empties the completion queue: after the completions
 * that came before them, such as a peer's refusal of a write followed by
 * its disconnect. rdma_sq_poll looks on its own only after many empty
 * polls (each look is a system call), which a busy queue never gives, and
 * rdma_sq_wait when an event wakes it; a caller that keeps polling a busy
 * queue asks now and then, so that a dead peer is seen within that time. */
void rdma_sq_want_events(struct rdma_sq_node *node);

/* Block until a completion or a connection event may be ready, or
 * timeout_ms passes (-1: no limit). Returns 0 when woken (then poll),
 * -ETIMEDOUT, or another negative errno. Completions already queued before
 * the call wake it at once. */
int rdma_sq_wait(struct rdma_sq_node *node, int timeout_ms);

/* End a blocking rdma_sq_wait now, or the next one at once when none is
 * running: how another thread hands the progress thread work that no
 * completion will announce. Any thread; async-signal-safe. */
void rdma_sq_wake(struct rdma_sq_node *node);

/* The reason peer was marked dead (empty when alive). */
const char *rdma_sq_peer_error(const struct rdma_sq_node *node, uint32_t peer);

/* The node's registration cache for foreign memory (for statistics,
 * regcache_invalidate() and regcache_sync()). Never NULL for a created
 * node; owned by the node (or kept for the next, rdma_sq_listener_keep). */
struct regcache *rdma_sq_regcache(struct rdma_sq_node *node);

/*
 * On-demand paging. rdma_sq_create asks the device once
 * (ibv_query_device_ex) whether it pages memory on demand for RC SEND,
 * RDMA WRITE and RDMA READ; where all three have it, one SEND over a
 * queue pair connected to itself, from an on-demand registration and
 * starting inside a page, must deliver the right bytes (rxe in Linux 7.3
 * reports ODP and fails this: it reads each packet from the start of its
 * page). Where both hold (and no_odp is not set) the registration cache
 * registers foreign memory with
 * IBV_ACCESS_ON_DEMAND: nothing is pinned, and the device resolves each
 * access through the process's page tables at the time of the transfer,
 * so a registration stays right when the memory under it is freed and
 * other memory mapped at the same address (the cache's unmap monitor
 * still drops such entries, as it does for pinned ones). Where the device
 * lacks it, the cache pins its registrations as before. The region, extra
 * registrations (rdma_sq_reg_mr) and use-once registrations are always
 * pinned, and on an ODP node use-once regions take the REGISTRATION path.
 */
struct rdma_sq_odp_stats {
	uint64_t registrations; /* cache registrations made with ODP */
	uint64_t fallbacks;     /* ODP registrations the device refused and
				   that were made pinned instead */
};

/* Which path the node's cache takes: "" when it registers with ODP, else
 * why not, e.g. "rxe0: no ODP for RC send write read (odp_caps:
 * general_caps 0, rc_odp_caps 0)", "rxe0: reports ODP for RC (rc_odp_caps
 * 0xff), but a loopback SEND of 6000 bytes from an on-demand registration
 * at page offset 100 arrived wrong from byte 924 on" or "ODP turned off
 * (rdma_sq_options.no_odp)". */
const char *rdma_sq_odp_why_not(const struct rdma_sq_node *node);

/* A copy of the node's ODP counters. Any thread. */
void rdma_sq_odp_stats(const struct rdma_sq_node *node,
		       struct rdma_sq_odp_stats *out);

/*
 * Use-once regions: a large point-to-point transfer from foreign memory.
 * The owner opens a region over exactly [ptr, ptr + len) and sends its
 * {address, rkey, length} (wire extension WIRE_EXT_USE_ONCE); the peer
 * RDMA-reads it and answers. Two ways to do it, and the region says which
 * one ran:
 *
 *  WINDOW        a type-2 memory window bound (on the peer's queue pair)
 *                over the range of a cached registration, readable only by
 *                that queue pair. The peer answers with rdma_sq_send_inv(),
 *                which invalidates the window on arrival: the owner makes
 *                no call before the rkey is dead.
 *  REGISTRATION  where the device has no type-2 windows, where the node's
 *                cache registers on demand (see rdma_sq_odp_why_not:
 *                windows are never bound over on-demand registrations),
 *                or when the caller asks for it: a pinned registration of
 *                its own over the range,
 *                never cached. The peer answers with a plain SEND and the
 *                owner deregisters it in rdma_sq_use_once_close(): the rkey
 *                dies then.
 */
struct rdma_sq_use_once;

enum rdma_sq_use_once_path {
	RDMA_SQ_USE_ONCE_WINDOW = 1,
	RDMA_SQ_USE_ONCE_REGISTRATION = 2,
};

/* rdma_sq_use_once_open flags */
#define RDMA_SQ_USE_ONCE_NO_WINDOW 0x1u /* take the registration path */

struct rdma_sq_use_once_stats {
	uint64_t windows;              /* regions opened with a window */
	uint64_t registrations;        /* regions opened with a registration */
	uint64_t remote_invalidations; /* windows the peer invalidated */
	uint64_t local_invalidations;  /* windows closed without the peer's
					  invalidation (peer failed) */
};

/* Open a use-once region over [ptr, ptr + len) readable by `peer`. On the
 * WINDOW path a signaled bind request is posted to peer's queue pair with
 * `wr_id` (its completion has opcode RDMA_SQ_OP_BIND_MW); a message sent to
 * the same peer afterwards is ordered after the bind. On the REGISTRATION
 * path nothing is posted. The memory must stay untouched until close.
 * Returns 0 with *out set, or a negative errno with err filled. */
int rdma_sq_use_once_open(struct rdma_sq_node *node, uint32_t peer,
			  const void *ptr, size_t len, unsigned flags,
			  uint64_t wr_id, struct rdma_sq_use_once **out,
			  struct squall_error *err);

/* What to send the peer: address, rkey and length of the region. */
uint64_t rdma_sq_use_once_addr(const struct rdma_sq_use_once *uo);
uint32_t rdma_sq_use_once_rkey(const struct rdma_sq_use_once *uo);
uint64_t rdma_sq_use_once_len(const struct rdma_sq_use_once *uo);

/* Which path the region took. */
enum rdma_sq_use_once_path rdma_sq_use_once_path(const struct rdma_sq_use_once *uo);
const char *rdma_sq_use_once_path_name(enum rdma_sq_use_once_path path);

/* Why the node does not use windows ("" when it does). */
const char *rdma_sq_use_once_why_not_window(const struct rdma_sq_node *node);

/* Close the region once the peer has answered (`answer` is the receive
 * completion of its answer) or is gone (answer NULL). On the WINDOW path
 * the answer must carry RDMA_SQ_WC_INVALIDATED with this region's rkey;
 * without it the window is invalidated here. On the REGISTRATION path the
 * registration is deregistered here. Frees uo either way. Returns 0, or
 * -EPROTO when an answer did not invalidate this region's window (the
 * window is dead all the same), or a verbs error. */
int rdma_sq_use_once_close(struct rdma_sq_node *node,
			   struct rdma_sq_use_once *uo,
			   const struct rdma_sq_wc *answer,
			   struct squall_error *err);

/* A copy of the node's use-once counters. */
void rdma_sq_use_once_stats(const struct rdma_sq_node *node,
			    struct rdma_sq_use_once_stats *out);

#endif /* SQUALL_RDMA_H */
