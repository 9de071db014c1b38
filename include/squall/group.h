/*
 * group.h - squall's group API: what a replicated service is written
 * against.
 *
 * A group is a fixed list of members described by a .cfg file (see
 * config.h). Each member process creates its end of the group with its own
 * id; group_create() returns once every member is connected and agrees on
 * the group file. From then on:
 *
 *  - group_get_allocator() gives the member's allocator over its one
 *    registered region. Lease buffers from it (many at once if you like),
 *    fill them in any order from any thread, and hand each to
 *    group_ordered_send(): the group owns it from then on and gives it
 *    back to the allocator by itself once every member has it. Nothing is
 *    copied: small messages (up to smc.max_payload) go out of the buffer
 *    on the SMC ring, larger ones on RDMC's binomial pipeline straight into
 *    the receivers' own leased buffers.
 *  - every member delivers every ordered message, small and large alike,
 *    in the same total order, through the deliver upcall.
 *  - group_p2p_send() sends one member a message of any size outside the
 *    order, which arrives through the p2p upcall: enough for
 *    request/reply. Large ones are read by the receiver through a
 *    use-once region; group_p2p_send_mem() sends any memory.
 *  - group_close() flushes: every message any member sent before it closed
 *    is delivered on every member before it returns.
 *
 * Upcalls never run two at a time: one that comes while another runs on
 * another thread waits for it to return (a point-to-point message is kept
 * meanwhile, and the progress thread goes on). deliver, p2p_receive,
 * send_failed, send_mem_done and failure run on the member's progress
 * thread, deliveries in delivery order (send_mem_done also inside
 * group_close() for the sends it ended). view runs inside group_create()
 * (and group_join()) for the first view and on the group's view thread
 * for every later one, before anything of that view is delivered;
 * state_save runs on the view thread too, while nothing is delivered, and
 * state_load inside group_join(). failure also runs on the view thread
 * when installing a view fails, and send_failed there for what the view's
 * end cut off.
 * Upcalls may lease, send and release, but must not call
 * group_barrier() or group_close(). Nothing an upcall calls waits (what
 * it would wait for is freed by the thread running it): an ordered send
 * fails with -EAGAIN when the window is full, all large-message slots are
 * in use or a view change is under way (always from state_save and from
 * the view upcall of a view after the first, which run during one), and
 * group_send_copy() with -ENOMEM when the region has no room; the buffer
 * is still the caller's.
 * A delivery the upcall keeps stays intact until group_release(), across
 * view changes. Deliveries and point-to-point messages start as the
 * first view upcall returns (a message a faster peer sent earlier is
 * kept until then), so an upcall may run before the caller has stored the
 * returned pointer: one that needs it must wait for the caller to publish
 * it.
 *
 * Errors are negative errno values; group_strerror() names them, and the
 * calls that can say more fill a struct squall_error (one line naming the
 * member, the file or the setting concerned).
 *
 * Membership: the group starts with the .cfg's members and carries on when
 * members fail. A member that stops answering (SST heartbeat or a failed
 * write) is removed by a view change (the failure upcall reports it),
 * led by the lowest-ranked live member: sends wait (the group is wedged),
 * every survivor delivers exactly the messages every survivor holds (the
 * ragged trim), the survivors reconnect in a new view with a new epoch and
 * the view upcall runs; messages a live member sent that did not make the
 * trim are sent again by the group in the new view, so a live sender loses
 * nothing and nothing is delivered twice. A view change needs a majority
 * of the view it replaces: a member on the minority side of a partition
 * stops (group_status() says why) instead of carrying on alone.
 */
#ifndef SQUALL_GROUP_H
#define SQUALL_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <squall/alloc.h>
#include <squall/config.h>
#include <squall/error.h>

/* libsquall's ABI: the library is built with hidden visibility, and the
 * calls declared below are what it exports (squall.map lists them). */
#pragma GCC visibility push(default)

struct group;

/* The members of the group as this member sees them. */
struct group_view {
	uint64_t epoch;           /* 0 for the view the group starts in */
	uint32_t nmembers;
	const uint32_t *members;  /* member ids, in .cfg order */
	uint32_t my_id;
	uint32_t my_rank;         /* this member's index in members[] */
};

struct group_callbacks {
	/* An ordered message: sender's member id, its position in the
	 * total order (the same on every member, increasing, with gaps), and
	 * the payload in place (in this member's region). Return false and
	 * the group reuses the memory as soon as the upcall returns; return
	 * true to keep it, and give it back later with group_release(). */
	bool (*deliver)(void *ctx, uint32_t sender, uint64_t seq,
			const struct buf_desc *d);
	/* A point-to-point message from member `sender`, whole, whatever
	 * its size; d is valid during the call only. May be NULL (such
	 * messages are then dropped). */
	void (*p2p_receive)(void *ctx, uint32_t sender,
			    const struct buf_desc *d);
	/* The view: called from group_create() before it returns (epoch
	 * 0), and after every view change, before anything of the new view
	 * is delivered. May be NULL. */
	void (*view)(void *ctx, const struct group_view *v);
	/* Member `member` failed (or this member lost touch with it) and
	 * the view change that removes it is decided: why says what was
	 * first seen. A member that was only suspected and stays in the
	 * next view (its links closed because it was installing that view)
	 * is not reported; nor is one that left with group_close(). When the
	 * group itself cannot go on (this member lost the majority, or the
	 * others removed it), member is this member's own id and why says
	 * so; group_status() then returns the same. May be NULL. */
	void (*failure)(void *ctx, uint32_t member, const char *why);
	/* An ordered send this member made failed after
	 * group_ordered_send() returned; d is its buffer (valid during the
	 * call only; the group gives it back after). code -ENOMEM,
	 * -EMSGSIZE...: a receiver could not lease the buffer of a large
	 * message; no member delivers it, and every member passes it over
	 * at its place in the order once every member knows (this upcall
	 * comes then). code -ENOTCONN: the group stopped
	 * (this member was removed, or lost the majority) and the others do
	 * not deliver it: what a survivor's trim says, or a message that
	 * was waiting to be sent again. code -ECONNABORTED: the group
	 * stopped and no survivor's trim reached this member, so it may or
	 * may not be delivered. After a stop these come, in send order, for
	 * every own message not delivered here, once a survivor's trim
	 * arrives or twice sst.suspect_timeout_ms after the stop (and before
	 * group_close() returns). Also for a point-to-point lease larger
	 * than one SEND that its receiver did not read (group_p2p_send):
	 * -ENOBUFS, -EMSGSIZE, -ENOTCONN; and for one of one SEND whose
	 * connection closed before the SEND completed: -ENOTCONN (for
	 * group_p2p_send_mem, d is the group's copy). May be NULL. */
	void (*send_failed)(void *ctx, const struct buf_desc *d, int code,
			    const char *why);
	/* State transfer to a member that joins (group_join): on the member
	 * the joiner asked, after the last delivery of the view before it
	 * and before any delivery of the view it enters, fill *data (from
	 * malloc; the group frees it) and *len with the application's state
	 * and return 0 (or a negative errno: the join is refused). May be
	 * NULL: the joiner gets an empty state. Runs on a group thread while
	 * nothing is delivered. */
	int (*state_save)(void *ctx, void **data, size_t *len);
	/* On the joiner, before anything is delivered to it: the state the
	 * group had when it joined. May be NULL. */
	void (*state_load)(void *ctx, const void *data, size_t len);
	/* Memory group_send_mem_async() sent in place is the caller's
	 * again: code 0 once every member has the message and this member
	 * delivered it, else why not (group_send_mem's errors). Runs on the
	 * progress thread, or inside group_close() for sends the close ended
	 * (-ESHUTDOWN). Required by group_send_mem_async; may be NULL
	 * otherwise. */
	void (*send_mem_done)(void *ctx, const void *ptr, size_t len,
			      int code, const char *why);
	/* A line (no newline) of what the member's transport saw, as it
	 * happens, at a level of enum group_log_level: a connection it
	 * refused and why (a process without the group key, with another
	 * group file or wire version, not a squall member at all), a peer
	 * found gone, a registration cache warning (GROUP_LOG_ERROR); the
	 * device it runs on (GROUP_LOG_INFO); each connection event
	 * (GROUP_LOG_DEBUG); nothing of a view's connections once the
	 * member tears that view down. Unlike the other upcalls it may
	 * run on any thread the group uses, at the same time as another
	 * upcall, and must not call into the group. May be NULL: the lines
	 * are dropped (the library itself writes none). */
	void (*log)(void *ctx, int level, const char *msg);
};

/* The levels of the log upcall's lines. */
enum group_log_level {
	GROUP_LOG_ERROR = 0,
	GROUP_LOG_INFO = 1,
	GROUP_LOG_DEBUG = 2,
};

/* Load the group file at cfg_path and create member my_id's end of the
 * group: map and register the region, connect to every member (waiting
 * up to group.connect_timeout_ms for them to start), check that every
 * member loaded the same group file, start the progress thread and call
 * the view upcall. cb->deliver is required; ctx is passed to every
 * upcall. Returns the group, or NULL with err filled: a broken .cfg (its
 * path, line and setting), an unknown member id (the known ids), a member
 * whose group file differs (its id and both fingerprints), a member that
 * never came up (its id and address), a member that refused this one's
 * proof of the group key or gave a wrong one (who, and which key file), or
 * an RDMA error. With group.key_file set, every connection starts with
 * both sides proving they hold the key (rdma/auth.h), and a process that
 * cannot is refused without stopping this member, which goes on waiting
 * for the real one (group_stats refused counts them); without it,
 * group_create and group_join write one warning to stderr, once per
 * process, and peers are not authenticated. */
struct group *group_create(const char *cfg_path, uint32_t my_id,
			   const struct group_callbacks *cb, void *ctx,
			   struct squall_error *err);

/* Join a running group as member my_id of the group file (a member with
 * `joins = true`, or one that failed and starts again): ask a member of
 * the current view (over TCP to its address and port; each is tried in
 * turn until group.connect_timeout_ms), wait for the view change that
 * adds this member, load the application's state through state_load,
 * connect, and return with the view upcall done. Errors as group_create,
 * plus: the group refused (its reason: another group file, an id already
 * in the view), or no member answered. */
struct group *group_join(const char *cfg_path, uint32_t my_id,
			 const struct group_callbacks *cb, void *ctx,
			 struct squall_error *err);
struct group *group_join_cfg(const struct group_config *cfg, uint32_t my_id,
			     const struct group_callbacks *cb, void *ctx,
			     struct squall_error *err);

/* The same from a loaded configuration: for a group file with node
 * overrides (group_config_load_with: a node .cfg or --set strings). The
 * group keeps its own copy of cfg. */
struct group *group_create_cfg(const struct group_config *cfg, uint32_t my_id,
			       const struct group_callbacks *cb, void *ctx,
			       struct squall_error *err);

/* The member's allocator: lease buffers to send from it. Owned by the
 * group; valid until group_close(). */
struct alloc *group_get_allocator(struct group *g);

/* Send the leased buffer d (d->ptr the start of a lease, d->len <= its
 * size, > 0) to every member, this one included, in the total order. The
 * group owns the buffer from now on and returns it to the allocator once
 * every member has it; do not touch or release it. Messages up to
 * smc.max_payload travel on SMC, larger ones on RDMC. Waits while the
 * sender's window is full, and through a view change (a message already
 * sent that misses the ending view's trim is sent again in the next view
 * by the group). Returns 0, or: -EINVAL (d is not a lease of this group's
 * allocator ready to send: outside the region, already sent, released, or
 * a delivery, whose bytes group_send_mem() sends),
 * -ENOMEM (no room to announce a large message), -ENOTCONN (the group
 * stopped: see group_status()), -ESHUTDOWN (the group is closing); err
 * says which. */
int group_ordered_send(struct group *g, const struct buf_desc *d,
		       struct squall_error *err);

/* group_ordered_send waiting at most timeout_ms for room (0: not at all,
 * then -EAGAIN when the window is full or a view change is under way;
 * < 0: as long as it takes). On -EAGAIN and -ETIMEDOUT the buffer is
 * still the caller's. */
int group_ordered_send_timeout(struct group *g, const struct buf_desc *d,
			       int timeout_ms, struct squall_error *err);

/* Send len bytes at ptr, memory outside the region (or anywhere): the
 * group copies them into a lease first (counted in group_stats copies
 * and bytes_copied). Otherwise as group_ordered_send; ptr is the caller's
 * again on return. */
int group_send_copy(struct group *g, const void *ptr, size_t len,
		    struct squall_error *err);

/* Send len bytes at ptr in the total order, wherever they lie, taking the
 * path that suits them; waits for room at most timeout_ms (as
 * group_ordered_send_timeout):
 *  - ptr the start of a lease of this group's allocator, ready to send:
 *    as group_ordered_send_timeout, no copy, and the group owns the lease
 *    from then on;
 *  - other memory (malloc'd, mapped, static, or a delivery the
 *    application kept) of up to smc.max_payload bytes or below
 *    group.copy_threshold, and any such memory when called from an
 *    upcall: copied into a lease, which is sent (group_stats copies,
 *    bytes_copied); ptr is the caller's again on return;
 *  - memory outside the region, larger than smc.max_payload and of at
 *    least group.copy_threshold bytes: sent in place, with no copy. The
 *    call registers the whole range first (its error is returned, nothing
 *    sent: -EFAULT when it is not all mapped); then RDMC's block writes
 *    read it through the registration cache (a registration
 *    is never used once the memory under it was unmapped, and a range
 *    that was freed and mapped again is registered anew). The call
 *    returns once every member has the message and this member delivered
 *    it (group_stats sent_in_place, bytes_in_place), through view
 *    changes (a message past an ending view's trim is sent again from the
 *    same memory): ptr is the caller's again on return, and the sender's
 *    own delivery points at it (keeping that delivery holds nothing
 *    back: group_release() of it only drops the record). The memory must
 *    stay mapped and unchanged during the call: bytes written meanwhile
 *    may or may not go out, and a range unmapped meanwhile cannot be
 *    registered again for the block writes still to come: the message is
 *    then cancelled and every member passes it over at its place in the
 *    order (-EFAULT), rather than send other bytes. A second in-place
 *    send of the same ptr while one runs is -EBUSY. Failures are its
 *    return value, not send_failed: a message no receiver could take
 *    (-ENOMEM, -EMSGSIZE), memory unmapped under it (-EFAULT), the group
 *    stopped (-ENOTCONN / -ECONNABORTED as send_failed says), or closed
 *    under it (-ESHUTDOWN).
 * Returns 0 or the errors of group_ordered_send_timeout; -EINVAL for a
 * lease sent already or free. */
int group_send_mem(struct group *g, const void *ptr, size_t len,
		   int timeout_ms, struct squall_error *err);

/* group_send_mem_async returns this when it sent in place. */
#define GROUP_SENT_IN_PLACE 1

/* group_send_mem that does not wait for the end of an in-place send, so
 * that several can be in flight (at most 8 large messages per member, as
 * with leases): it returns GROUP_SENT_IN_PLACE once the message is sent,
 * and the send_mem_done upcall says when the memory is the caller's again
 * (with 0, or the error group_send_mem would have returned); until then
 * the memory must stay mapped and unchanged. On the other paths (a lease,
 * a copy) it returns 0 or an error as group_send_mem, and no upcall
 * follows. -EINVAL when cb->send_mem_done is NULL. */
int group_send_mem_async(struct group *g, const void *ptr, size_t len,
			 int timeout_ms, struct squall_error *err);

/* The largest point-to-point message that travels in one SEND (4076
 * bytes). Larger ones go through a use-once region, up to what the
 * receiver can lease from its region (group.region_size at most). */
size_t group_p2p_max(const struct group *g);

/* Send the leased buffer d to member `member` alone (not ordered with
 * anything else, nor with other point-to-point messages: a large one is
 * delivered once read). Never waits. Up to group_p2p_max() bytes go in
 * one SEND; the group owns the buffer until it completes. A larger lease
 * goes through a use-once region the receiver reads (group_stats
 * p2p_use_once); the group owns it until the receiver's answer (or the
 * end of the view's connections), then returns it to the allocator. A
 * receiver with no room keeps the request and tries again for up to 5 s.
 * When a large one is not read, the send_failed upcall says so (d, code,
 * why naming both members) before the lease goes back: -ENOBUFS (the
 * receiver had no room in time), -EMSGSIZE (larger than its region),
 * -ENOTCONN (the connection went first: a failure, a view change or the
 * close; the receiver may have delivered it just before). So does a
 * small one whose connection goes before its SEND completes (-ENOTCONN):
 * a receiver that went on to the next view first no longer takes what is
 * sent on the old connection. A send from
 * that upcall may be refused when it comes at a view's end. Returns 0,
 * -ENOENT (no such member, or this member), -EINVAL (not a lease ready
 * to send: a delivery is not, group_p2p_send_mem() sends its bytes),
 * -ENOTCONN, -ENOMEM (no room for the message's header), an
 * error registering the lease for the use-once region, or -EAGAIN: 64
 * point-to-point messages to that member are still in flight (large
 * ones until answered), or its send queue is full (send it again later).
 * On every failure the buffer is still the caller's. */
int group_p2p_send(struct group *g, uint32_t member, const struct buf_desc *d,
		   struct squall_error *err);

/* Send len bytes at ptr, any memory (malloc'd, mapped, a kept delivery),
 * to member `member` alone; ptr is the caller's again on return. Up to
 * group_p2p_max() bytes are copied into a lease and sent as
 * group_p2p_send does. Larger ones are sent in place through a use-once
 * region over exactly [ptr, ptr + len), readable by that member's queue
 * pair alone: the call returns once the receiver has read them (0) or
 * could not, with the key dead either way. The memory must stay mapped
 * and unchanged during the call. Waits at most timeout_ms (0: not at
 * all; < 0: as long as it takes) for room (the lease of a copy, one of
 * the 64 sends in flight, the send queue), then -EAGAIN or -ENOMEM;
 * the wait for the receiver is bounded by its own: it answers within
 * 5 s of finding no room, or its connection goes. From an upcall, or
 * another group thread, nothing may wait for the answer that thread
 * itself would take: any size is copied into a lease (-ENOMEM when the
 * region has no room now) and sent as group_p2p_send sends it (its
 * failures then come through send_failed). Returns 0, the errors of
 * group_p2p_send, -EINVAL (ptr NULL), -EMSGSIZE (len larger than
 * group.region_size), -EFAULT (not all mapped: nothing sent), and for an
 * in-place send -ENOBUFS, -EMSGSIZE or -ENOTCONN as send_failed says
 * above, err naming both members. */
int group_p2p_send_mem(struct group *g, uint32_t member, const void *ptr,
		       size_t len, int timeout_ms, struct squall_error *err);

/* Give back a delivered message the deliver upcall kept. Any thread may
 * call it, also before the upcall that keeps d has returned: d then goes
 * back when the upcall returns. Returns 0 or -EINVAL (d is not a kept
 * delivery, nor the one whose upcall runs). */
int group_release(struct group *g, const struct buf_desc *d);

/* Wait until every member of the view has called group_barrier() as
 * many times as this one (a view change in between is fine). Returns 0,
 * -ENOTCONN (the group stopped) or -ETIMEDOUT (after timeout_ms; < 0: no
 * limit). */
int group_barrier(struct group *g, int timeout_ms, struct squall_error *err);

/* Flush and leave. New sends are refused (-ESHUTDOWN) from the call on.
 * When every member of the view closes (within half a second of each
 * other), wait until every ordered message sent by any member before its
 * close is delivered on every member, then until every other member got
 * there too (or failed). When the others go on, this is a clean leave:
 * wait until every message this member sent is delivered on every
 * member; from then on this member delivers nothing more, and it leaves
 * once every other member is changing to a view without it (or finished
 * closing, or failed); the others install that view (no failure is
 * reported). Members that must all see everything close after a
 * group_barrier(). A stopped group first waits, at most twice
 * sst.suspect_timeout_ms, for the send_failed upcalls of its lost sends.
 * Then disconnect and free everything (g is gone, and with it the
 * allocator and any kept delivery). A failed member does not hold the
 * others back. Returns 0, or -ENOTCONN / -ETIMEDOUT (after timeout_ms;
 * < 0: no limit) when the flush could not complete (g is freed all the
 * same). */
int group_close(struct group *g, int timeout_ms, struct squall_error *err);

/* 0 while the group works; otherwise the code every call now returns,
 * with err saying why: the first failure's code, -ENOTCONN when this
 * member was removed or lost the majority of its view (e.g. a partition),
 * or what stopped it otherwise (-ENOMEM, -EPROTO, an RDMC or view-install
 * error). Calls below that say "-ENOTCONN (the group stopped)" return
 * this code. */
int group_status(struct group *g, struct squall_error *err);

/* The member's id, rank, and the group's member count (of the current
 * view). */
uint32_t group_my_id(const struct group *g);
uint32_t group_my_rank(const struct group *g);
uint32_t group_nmembers(const struct group *g);
/* Member id of rank r (0 <= r < group_nmembers). */
uint32_t group_member_id(const struct group *g, uint32_t r);
/* The configuration in use. */
const struct group_config *group_get_config(const struct group *g);

/* What the member has done. New counters go at the end, never between
 * others: group_stats_sized() copies a prefix of the struct. */
struct group_stats {
	uint64_t sent;             /* ordered messages sent */
	uint64_t sent_smc;         /* of which on SMC */
	uint64_t sent_rdmc;        /* of which on RDMC */
	uint64_t delivered;        /* ordered messages delivered */
	uint64_t delivered_bytes;
	uint64_t copies;           /* payload copies made on send
				      (group_send_copy, and group_send_mem
				      of memory it does not send in place) */
	uint64_t payload_copies;   /* payload memcpy()s inside SMC and RDMC
				      on send and receive: 0 */
	uint64_t p2p_sent;
	uint64_t p2p_received;
	uint64_t p2p_use_once;     /* of p2p_sent, those sent through a
				      use-once region (larger than one SEND) */
	uint64_t send_waits;       /* sends that waited for room */
	uint64_t epoch;            /* the current view's epoch */
	uint64_t wedges;           /* view changes this member took part in */
	uint64_t commits;          /* ragged trims agreed (a view change is
				      decided; its view is being installed) */
	uint64_t resent;           /* own messages sent again in a new view
				      because they were past the trim */
	uint64_t last_view_change_ms; /* the last view change, from wedge
				      to installed view; its parts: */
	uint64_t last_view_change_agree_ms;    /* wedge to the trim adopted */
	uint64_t last_view_change_deliver_ms;  /* adopted to the install's
						  start (delivering to the
						  trim) */
	uint64_t last_view_change_teardown_ms; /* the old view torn down
						  (joiners answered first) */
	uint64_t last_view_change_build_ms;    /* the next view built ... */
	uint64_t last_view_change_connect_ms;  /* ... of which its
						  connections and keys */
	uint64_t sends_lost;       /* the group stopped: own ordered sends
				      the others do not deliver */
	uint64_t sends_unknown;    /* ... and those it cannot tell (both
				      told through send_failed) */
	uint64_t p2p_abandoned;    /* point-to-point sends whose completion
				      never came before their view's
				      connections went (their buffers are
				      lost with them): 0 */
	uint64_t misbehaved;       /* peers this member suspected for what
				      they sent (a message it cannot read,
				      an unknown immediate): each is removed
				      by a view change, this member goes on */
	uint64_t refused;          /* connections claiming to be a member,
				      and join requests, refused: no proof
				      of the group key (group.key_file), or
				      a wrong one */
	uint64_t joins_dropped;    /* join connections closed unanswered:
				      silent for 2 s, a message over 256
				      bytes or not squall's, or 16 being
				      read already */
	uint64_t sent_in_place;    /* group_send_mem sends of memory outside
				      the region, sent with no copy */
	uint64_t bytes_in_place;   /* ... and their bytes */
	uint64_t bytes_copied;     /* bytes of the copies counted in copies */
	uint64_t cache_hits;       /* registration cache lookups served from
				      a cached registration, every view */
	uint64_t cache_misses;     /* ... and those that registered */
	uint64_t odp_registrations;/* of those, registrations made on demand
				      (IBV_ACCESS_ON_DEMAND, nothing pinned):
				      0 where the device has no usable ODP */
	/* Where the time of small (SMC) messages goes, every view: */
	uint64_t sst_pushes;       /* SST row pushes (heartbeats included) */
	uint64_t sst_writes;       /* RDMA writes those pushes posted */
	uint64_t progress_sleeps;  /* times the progress thread blocked
				      (each ends in a wake-up) */
	uint64_t smc_rx_wait_ns;   /* others' SMC messages: from the pass
				      that found them in their ring to their
				      delivery here, summed */
	uint64_t smc_rx_waited;    /* ... over this many messages */
	uint64_t smc_own_wait_ns;  /* own SMC messages: from the send to
				      their delivery here, summed */
	uint64_t smc_own_waited;   /* ... over this many messages */
	uint64_t last_view_change_upcall_ms; /* of last_view_change_deliver_ms,
						the deliver upcalls of the
						messages up to the trim (the
						application's own time) */
	uint64_t smc_writes;       /* RDMA writes of SMC records posted, one
				      per receiver, every view's */
	uint64_t smc_records_written; /* ... and the records (messages and
					 nulls) they carried */
};
/* Fill *st with the member's counters. group_stats() passes the caller's
 * sizeof(struct group_stats): the struct only grows at its end, so a
 * library newer than the caller's header writes only the
 * first size bytes (the fields the caller knows), and an older one
 * zeroes what it does not have. */
void group_stats_sized(struct group *g, struct group_stats *st, size_t size);
#define group_stats(g, st) group_stats_sized((g), (st), sizeof(*(st)))

/* A fixed text for a code returned by a group call: e.g. -ENOTCONN "the
 * group stopped (...)", -ESHUTDOWN "the group is closing". */
const char *group_strerror(int code);

#pragma GCC visibility pop

#endif /* SQUALL_GROUP_H */
