/*
 * rdmc.h - RDMC, squall's large-message multicast: block schedules and the
 * transfer engine that runs them over RDMA.
 *
 * A message of k blocks goes from rank 0 (the sender) to the n - 1 other
 * members of a transfer in steps. In one step each member sends at most one
 * block and receives at most one; a member only sends a block it received
 * in an earlier step (the sender has them all); when the schedule ends every
 * member holds every block, having received each exactly once. A schedule
 * is pure arithmetic over (algorithm, n, k): every member computes its own
 * part of the same schedule without talking to anyone.
 *
 * Algorithms:
 *   binomial   the binomial pipeline: a hypercube over 2^floor(log2 n)
 *              vertices, where a vertex may hold two members ("twins") when
 *              n is not a power of two. k + ceil(log2 n) - 1 steps.
 *   chain      a pipeline along the ranks: rank r forwards to r + 1.
 *              k + n - 2 steps.
 *   sequential the sender sends every block to rank 1, then every block to
 *              rank 2, and so on. k * (n - 1) steps.
 */
#ifndef SQUALL_RDMC_H
#define SQUALL_RDMC_H

#include <stdbool.h>
#include <stdint.h>

#include <squall/error.h>

enum rdmc_algorithm {
	RDMC_BINOMIAL = 0,
	RDMC_CHAIN = 1,
	RDMC_SEQUENTIAL = 2,
};

/* Largest number of members a schedule accepts. */
#define RDMC_MAX_MEMBERS (1u << 20)

/* A transfer's peer and block is RDMC_NONE when there is no transfer. */
#define RDMC_NONE UINT32_MAX

/* One side of a block transfer in one step. */
struct rdmc_transfer {
	uint32_t peer;  /* rank at the other end, or RDMC_NONE */
	uint32_t block; /* block index 0..k-1, or RDMC_NONE */
};

struct rdmc_schedule;

/* Build the schedule of `alg` for n members (rank 0 sends) and k blocks.
 * n = 1 gives a schedule of no steps. Returns 0 with *out set, -EINVAL for
 * an unknown algorithm, n = 0, n > RDMC_MAX_MEMBERS or k = 0, -EOVERFLOW
 * when the number of steps does not fit in 32 bits, -ENOMEM. */
int rdmc_schedule_create(enum rdmc_algorithm alg, unsigned n, unsigned k,
			 struct rdmc_schedule **out);

/* Free a schedule (NULL is fine). */
void rdmc_schedule_destroy(struct rdmc_schedule *s);

/* Number of steps; every transfer happens in a step below it. */
unsigned rdmc_schedule_steps(const struct rdmc_schedule *s);

/* The algorithm, member count and block count the schedule was built for. */
enum rdmc_algorithm rdmc_schedule_algorithm(const struct rdmc_schedule *s);
unsigned rdmc_schedule_members(const struct rdmc_schedule *s);
unsigned rdmc_schedule_blocks(const struct rdmc_schedule *s);

/* What `rank` does in `step`: *send gets the block it sends and to whom,
 * *recv the block it receives and from whom; each is {RDMC_NONE,
 * RDMC_NONE} when there is none (and both are for step >= steps). Either
 * pointer may be NULL. Returns 0, or -EINVAL for rank >= n. */
int rdmc_schedule_get(const struct rdmc_schedule *s, unsigned step,
		      unsigned rank, struct rdmc_transfer *send,
		      struct rdmc_transfer *recv);

/* The first step >= from in which `rank` sends or receives, or
 * rdmc_schedule_steps(s) when it has nothing left to do (also for rank >=
 * n). Lets a member skip the steps in which it idles. */
unsigned rdmc_schedule_next_active(const struct rdmc_schedule *s,
				   unsigned rank, unsigned from);

/* "binomial", "chain", "sequential"; NULL for an unknown value. */
const char *rdmc_algorithm_name(enum rdmc_algorithm alg);

/* The algorithm named `name` (as rdmc_algorithm_name), or -EINVAL. */
int rdmc_algorithm_from_name(const char *name);

/* ---- the transfer engine ---------------------------------------------------
 *
 * An engine runs RDMC transfers over one member's rdma node, with receive
 * buffers leased from the member's allocator. A group is a fixed list of
 * members (node member ids) that run transfers among themselves; any
 * member may send, and for each transfer the ranks of the schedule are the
 * members rotated so that the sender is rank 0.
 *
 * One transfer, message id m, sender S, size z:
 *   - S calls rdmc_send(g, m, desc) with a buffer leased from its
 *     allocator (the runtime owns it from then on: alloc_submit);
 *   - every other member calls rdmc_expect(g, m, S, z) when it learns of
 *     the message (the group layer announces it in the ordered stream). It
 *     leases a buffer of z bytes and sends a READY control message, with
 *     the buffer's {addr, rkey} and the slot writers must put in their
 *     immediates, to S and to every member that writes to it per the
 *     schedule. A member that cannot lease the buffer tells S so instead.
 *   - S starts once every receiver has answered; if one could not lease,
 *     nothing moves: S cancels the transfer (DONE ABORT to every
 *     receiver) and its send fails (the sent callback, -ENOMEM and the
 *     member named); every receiver's transfer is cancelled (the received
 *     callback with the error) and it acknowledges that to S (DONE
 *     ABORTED; held back once wedged, like DONE HAVE). When every receiver
 *     did, S tells them all (DONE ALL|ABORT) and every member, S too, gets
 *     the stable callback: the cancellation is known everywhere, so the
 *     group may pass the message over at its place in the total order.
 *   - blocks move by the schedule as RDMA WRITE_WITH_IMM straight from S's
 *     buffer into each receiver's buffer at the block's offset, and from
 *     there on to the members a receiver relays to; the immediate names the
 *     receiver's slot and the block. Nothing is copied, the first block
 *     included.
 *   - a member holding every block (its relaying done) gets the received
 *     callback with its buffer (now owned by the application, which gives
 *     it back with alloc_release()), and sends DONE to S.
 *   - when every receiver is done, S gets the sent callback and tells the
 *     receivers, who get the stable callback: the transfer has completed
 *     on every member, so the group may deliver the message at its place
 *     in the total order.
 *
 * Control messages travel as SEND/RECV in the wire codec (RDMC_READY,
 * RDMC_DONE). Either the engine posts and owns the receives on every
 * queue pair of its groups' members (own_recvs: then rdmc_engine_poll
 * drives everything), or another dispatcher owns the node's completion
 * queue and receives and hands RDMC's completions and messages over with
 * rdmc_engine_handle_wc(), rdmc_engine_on_message() and
 * rdmc_engine_on_imm().
 *
 * Threads: an engine is driven by one thread (the progress thread); every
 * call on the engine and its groups must come from it. Callbacks run
 * inside rdmc_engine_poll/handle_wc/on_message/on_imm, and inside
 * rdmc_send when the outcome is already known.
 */

struct rdma_sq_node;
struct rdma_sq_mr;
struct rdma_sq_wc;
struct alloc;
struct buf_desc;
struct rdmc_engine;
struct rdmc_group;

struct rdmc_engine_options {
	/* Post and own receives on the queue pairs to every member of every
	 * group (recv_depth each, default 32); rdmc_engine_poll() works only
	 * then. The node must allow that many receives per queue pair. */
	bool own_recvs;
	unsigned recv_depth;
	/* Block writes a member keeps in flight per transfer (default 8).
	 * Over every transfer together, the blocks in flight to any one
	 * member hold at most 1 MiB (one block when a block is larger):
	 * that member's SST pushes and SMC writes wait behind them. */
	unsigned send_window;
	/* The registration whose rkey READY grants for receive buffers; it
	 * must cover the allocator's region with remote write access. NULL:
	 * the allocator's own rkey (alloc_rkey()), which must not be 0. */
	struct rdma_sq_mr *grant_mr;
	/* READY grants each writer a window of its own over exactly the
	 * receive buffer (rdma_sq_window_open), closed (its key dead) before
	 * the buffer is delivered or given back; grant_mr is then unused.
	 * For nodes with rdma_sq_options.peer_windows. */
	bool windows;
};

/* Counters of an engine, all transfers together. */
struct rdmc_stats {
	uint64_t bytes_sent;        /* block bytes this member wrote */
	uint64_t bytes_received;    /* block bytes written into its buffers */
	uint64_t blocks_sent;
	uint64_t blocks_received;
	uint64_t payload_copies;    /* payload bytes copied by the CPU: 0 */
	uint64_t transfers_sent;    /* sends completed at every member */
	uint64_t transfers_received;/* transfers this member holds whole */
	uint64_t transfers_failed;  /* sends or receives that failed */
	uint64_t windows_opened;    /* windows opened for writers (windows) */
	uint64_t windows_closed;    /* ... and closed: equal once idle */
	uint64_t ctl_sent;          /* READY and DONE messages */
	uint64_t ctl_deferred;      /* of which waited for room to be posted */
	uint64_t ctl_received;
	uint64_t strays;            /* messages or immediates matching nothing */
};

/* A member has every block of msg_id (status 0): d is its buffer, state
 * delivered, the application's to keep and alloc_release(). Or the
 * transfer failed or was cancelled (status < 0, d NULL, why says what
 * happened); the engine gave the buffer back. */
typedef void (*rdmc_received_fn)(void *arg, struct rdmc_group *g,
				 uint64_t msg_id, uint32_t sender,
				 const struct buf_desc *d, int status,
				 const char *why);
/* The sender's transfer is over: status 0 when every receiver holds the
 * message, or a negative errno with why (e.g. -ENOMEM "member 3 could not
 * lease a 67108864-byte buffer"); a failed transfer reports only once no
 * write of it is still reading the buffer. d is the buffer given to
 * rdmc_send; it is still submitted: give it back with alloc_complete()
 * once done with it (after the sender's own delivery, if any). */
typedef void (*rdmc_sent_fn)(void *arg, struct rdmc_group *g, uint64_t msg_id,
			     const struct buf_desc *d, int status,
			     const char *why);
/* msg_id has completed at every member (receivers), or its cancellation
 * is known at every member (receivers and the sender, after their
 * received or sent callback with the error). */
typedef void (*rdmc_stable_fn)(void *arg, struct rdmc_group *g,
			       uint64_t msg_id, uint32_t sender);

struct rdmc_callbacks {
	rdmc_received_fn received;
	rdmc_sent_fn sent;
	rdmc_stable_fn stable;   /* may be NULL */
	void *arg;
};

/* Create an engine over node (connected: rdma_sq_connect_all done) with
 * receive buffers from a (whose region the node has registered). o may be
 * NULL for the defaults. Returns 0 with *out, -EINVAL (no rkey to grant,
 * bad options) or -ENOMEM, with err filled. */
int rdmc_engine_create(struct rdma_sq_node *node, struct alloc *a,
		       const struct rdmc_engine_options *o,
		       struct rdmc_engine **out, struct squall_error *err);

/* Destroy the engine and its groups. Transfers still running are dropped:
 * call it only when none is, or when the node is going away anyway. */
void rdmc_engine_destroy(struct rdmc_engine *e);

/* With the option windows, before destroying the node: the engine lets
 * go of the windows it has open (the node's destroy closes them, after
 * its queue pairs are gone, so no writer in flight meets a dead key while
 * the connection still stands) and opens none again. The engine and its
 * groups may be destroyed after the node. */
void rdmc_engine_drop_windows(struct rdmc_engine *e);

/* Create group `id` (the same on every member, unique in the engine) of
 * members[0..n) (node member ids, the same list in the same order on
 * every member, this member among them), moving messages in blocks of
 * block_size bytes with alg. Returns 0 with *out, -EINVAL, -EEXIST (id in
 * use), -ENOMEM, or an error posting the receives (own_recvs). */
int rdmc_group_create(struct rdmc_engine *e, uint32_t id,
		      const uint32_t *members, unsigned n, uint64_t block_size,
		      enum rdmc_algorithm alg, const struct rdmc_callbacks *cb,
		      struct rdmc_group **out, struct squall_error *err);

/* Remove a group (no transfer of it may be running: stop the node's
 * traffic first). Receive buffers of unfinished transfers go back to the
 * allocator, among them those of failed transfers: a receiver keeps
 * such a buffer, and its slot, until the sender says every receiver knows
 * of the cancellation, or until this call, since members that write into
 * it may not know of the failure yet. A sender's buffer stays submitted
 * (its owner decides). NULL is fine. */
void rdmc_group_destroy(struct rdmc_group *g);

/* Send d (the start of a lease from the engine's allocator, d->len > 0
 * bytes) as message msg_id (unique among the group's transfers in flight)
 * to every other member. Returns 0 (the sent callback follows), -EINVAL
 * (d outside the region, empty, or a group of one), -E2BIG (more blocks
 * than an immediate can name), -EEXIST (msg_id in flight), -EBUSY (no
 * free transfer slot), or alloc_submit()'s error. */
int rdmc_send(struct rdmc_group *g, uint64_t msg_id, const struct buf_desc *d,
	      struct squall_error *err);

/* rdmc_send of a buffer already submitted (a message sent again, e.g. in
 * a new view after the first transfer was cut short). */
int rdmc_send_submitted(struct rdmc_group *g, uint64_t msg_id,
			const struct buf_desc *d, struct squall_error *err);

/* rdmc_send of memory outside the engine's region, which stays its
 * owner's: nothing is submitted or given back. The sender's block writes
 * read it through the node's registration cache (each holds its
 * registration until its completion), so it must stay mapped and
 * unchanged until the sent callback. -EINVAL when d lies in the region. */
int rdmc_send_foreign(struct rdmc_group *g, uint64_t msg_id,
		      const struct buf_desc *d, struct squall_error *err);

/* Receive message msg_id of size bytes from member sender: lease the
 * buffer and tell the writers where it is. Returns 0 (the received
 * callback follows), -ENOMEM when no buffer could be leased (the sender is
 * told, and its send fails everywhere: the received callback with an
 * error follows here too, when the sender's cancellation arrives),
 * -EINVAL, -E2BIG, -EEXIST or -EBUSY. */
int rdmc_expect(struct rdmc_group *g, uint64_t msg_id, uint32_t sender,
		uint64_t size, struct squall_error *err);

/* own_recvs only: take the node's completions and handle them, waiting up
 * to timeout_ms (0: do not wait, -1: no limit) when there are none.
 * Returns the number handled (0 on timeout) or a negative errno when the
 * completion queue fails. */
int rdmc_engine_poll(struct rdmc_engine *e, int timeout_ms);

/* For another dispatcher: handle one completion of the node. Returns 1
 * when it was RDMC's (a block write, a control send, a block arrival with
 * RDMC's immediate, or a receive the engine posted), 0 when not. */
int rdmc_engine_handle_wc(struct rdmc_engine *e, const struct rdma_sq_wc *wc);

/* For another dispatcher: a SEND from member peer arrived holding buf.
 * Returns 0 when it was an RDMC control message (handled), -ENOMSG when it
 * is another part's message, or another negative errno when malformed. */
int rdmc_engine_on_message(struct rdmc_engine *e, uint32_t peer,
			   const void *buf, size_t len);

/* For another dispatcher: a WRITE_WITH_IMM from member peer arrived with
 * imm. Returns 0, or -ENOMSG when imm is not RDMC's. */
int rdmc_engine_on_imm(struct rdmc_engine *e, uint32_t peer, uint32_t imm);

/* The engine's counters. */
void rdmc_engine_stats(const struct rdmc_engine *e, struct rdmc_stats *st);

/* The member is wedged for a view change: from now on a receiver that
 * completes a transfer keeps it to itself (no HAVE to the sender), so no
 * member learns it is held everywhere and delivers it on RDMC's word:
 * what the wedged member holds is the view change's to agree on (it
 * publishes it in its SST row). Likewise a cancellation it learns of
 * is not acknowledged (no DONE ABORTED), so no member passes that
 * message over on RDMC's word. Blocks still move (relaying for the
 * others). For the rest of the engine's life. */
void rdmc_engine_wedge(struct rdmc_engine *e);

/* Work the engine cannot do from completions alone, once per progress
 * pass: control messages kept because they could not be posted (a full
 * send queue, no buffer), and block writes a full send queue put off.
 * Sets *work when something moved. Returns 0, or a negative errno once
 * the engine lost a control message (out of memory keeping it): its
 * transfers cannot complete, and the caller must stop. */
int rdmc_engine_progress(struct rdmc_engine *e, bool *work);

/* True when no transfer is open (not even one announced by a peer's READY,
 * nor a failed one whose buffer is held, see rdmc_group_destroy) and every
 * control message the engine sent has completed: the member may leave
 * without cutting a peer short. */
bool rdmc_engine_idle(const struct rdmc_engine *e);

/* The last error the engine met outside a call that could return it (a
 * failed post from inside a completion handler); "" when none. */
const char *rdmc_engine_last_error(const struct rdmc_engine *e);

/* The group's id, member count and this member's index in it. */
uint32_t rdmc_group_id(const struct rdmc_group *g);
unsigned rdmc_group_size(const struct rdmc_group *g);
unsigned rdmc_group_my_index(const struct rdmc_group *g);

#endif /* SQUALL_RDMC_H */
