/*
 * smc/core.h - one member's SMC engine, independent of how bytes move.
 *
 * The core owns the member's sending ring state, the receiving state of
 * every other sender's ring in this member's region, the order engine and
 * the flow accounting. A transport drives it:
 *   - it gives the core a header area and the ring memory (carved from the
 *     registered region), and two operations: post one write to a member,
 *     and hand back a payload SMC no longer needs;
 *   - its progress thread reports completions (a run arrived from a sender,
 *     a write to a member completed) and calls smc_core_progress() with the
 *     SST's view of every member's counters, then publishes the member's
 *     own row when smc_core_take_row() says it changed (at once when a
 *     sender waits for it, SMC_ROW_URGENT), then calls smc_core_nulls().
 * Application threads call smc_core_send() and smc_core_release().
 *
 * Locking: one mutex per core. Upcalls run without it, on the progress
 * thread, so an upcall may call smc_core_release() or a non-blocking send.
 */
#ifndef SQUALL_SMC_CORE_H
#define SQUALL_SMC_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include <squall/smc.h>

#include "smc/ring.h"

struct smc_core;

struct smc_core_ops {
	/* Post w as one signalled RDMA WRITE_WITH_IMM (immediate w->imm,
	 * network order on the wire) to member dest, at w->remote_off inside
	 * dest's ring for this member's messages. Entries of kind
	 * SMC_SGE_HDR lie in the header area, SMC_SGE_PAYLOAD in payloads
	 * given to smc_core_send(). Return 0 or a negative errno: -ENOMEM or
	 * -EAGAIN say the send queue to dest has no room now, and the core
	 * posts the same run to dest (and the members after it) again on a
	 * later send or progress pass; any other error is sticky (the member
	 * failed). Writes to one member complete in the order they were
	 * posted; report each with smc_core_on_write_done(). */
	int (*post_write)(void *ctx, uint32_t dest, const struct smc_write *w);
	/* The payload sent with `cookie` (at payload, len bytes) is no
	 * longer read by SMC: every write from it completed and this member
	 * delivered and released it. */
	void (*payload_done)(void *ctx, void *cookie, const void *payload,
			     uint32_t len);
	/* Optional: a send got its slot; take the payload from the caller
	 * (e.g. mark the lease submitted). Runs under the core's lock before
	 * anything can read the payload; on failure the slot is taken back
	 * and the send fails with that error, the payload still the
	 * caller's. */
	int (*commit)(void *ctx, void *cookie, const void *payload,
		      uint32_t len);
	/* Copy path: lease len (>= 1) bytes in the registered region for a
	 * payload that lives outside it, waiting at most timeout_ms (< 0:
	 * as long as it takes, 0: not at all). Fill *ptr and *cookie; the
	 * lease comes back through payload_done. Return 0 or a negative
	 * errno (-ENOMEM: no room). NULL: the core has no copy path. */
	int (*lease)(void *ctx, uint32_t len, int timeout_ms, void **ptr,
		     void **cookie);
	/* Give back a lease from `lease` that was never sent. */
	void (*unlease)(void *ctx, void *cookie, void *ptr, uint32_t len);
};

struct smc_core_params {
	uint32_t nmembers;
	uint32_t me;	       /* this member's index */
	uint32_t window;       /* slots per sender ring */
	uint32_t max_payload;  /* bytes */
	uint32_t max_sge;      /* device limit for one write (>= 2) */
	uint32_t max_inflight; /* writes in flight per member before sends
				  are left for the next run (>= 1) */
	smc_deliver_fn deliver;
	void *deliver_arg;
	/* Every member's rings' seal (smc/ring.h): the same on every member
	 * of one use of the rings, another for the next use of their
	 * memory. */
	uint64_t seal;
};

/* Create a core. hdr_area: smc_core_hdr_area_size(window) bytes of
 * registered memory; rings[s]: the ring of sender s in this member's region
 * (smc_ring_geom cap bytes; rings[me] unused). Returns 0, -EINVAL with a
 * parameter out of range, or -ENOMEM. */
int smc_core_create(const struct smc_core_params *p,
		    const struct smc_core_ops *ops, void *ctx,
		    uint8_t *hdr_area, const uint8_t *const *rings,
		    struct smc_core **out);

/* Free the core. Call it only after the transport stopped posting and
 * polling; payloads still held are handed back through payload_done. */
void smc_core_destroy(struct smc_core *c);

/* Ring sizes (the same for every sender). */
const struct smc_ring_geom *smc_core_geom(const struct smc_core *c);

/* Send len bytes at payload (inside the registered region; cookie is
 * handed to payload_done when SMC is done with it). timeout_ms < 0 waits
 * for a free slot as long as it takes, 0 never waits, > 0 waits that long.
 * `copied` only feeds the statistics (the caller copied the payload into
 * a lease first). Returns 0, -EMSGSIZE (len > max_payload), -EAGAIN
 * (timeout 0, window full), -ETIMEDOUT, or the error a write failed with
 * earlier (the core is then unusable). Must not block on the progress
 * thread: from an upcall use timeout 0. */
int smc_core_send(struct smc_core *c, const void *payload, uint32_t len,
		  void *cookie, int timeout_ms, bool copied);

/* smc_core_send with a kind (0..255) the receivers' upcalls see in
 * smc_msg.kind. */
int smc_core_send_kind(struct smc_core *c, const void *payload, uint32_t len,
		       void *cookie, int timeout_ms, bool copied, uint8_t kind);

/* Send len bytes from memory outside the region: lease a buffer through
 * ops->lease, copy the payload into it (counted in sends_copied and
 * payload_copies) and send it as smc_core_send() does; timeout_ms bounds
 * the wait for the lease and then for the slot. Returns what
 * smc_core_send() returns, the lease's error, or -ENOTSUP without a copy
 * path. On failure the lease has been given back through unlease. */
int smc_core_send_copy(struct smc_core *c, const void *src, uint32_t len,
		       int timeout_ms);

/* Give back a slot an upcall kept. */
void smc_core_release(struct smc_core *c, const struct smc_msg *m);

/* A write with immediate imm from member `sender` completed on this
 * member's receive queue. Returns 0 or -EPROTO (the run does not continue
 * the sender's sequence: a broken peer or transport). */
int smc_core_on_recv(struct smc_core *c, uint32_t sender, uint32_t imm);

/* The writes to member dest carrying records [0, end_rec) completed. */
void smc_core_on_write_done(struct smc_core *c, uint32_t dest,
			    uint64_t end_rec);

/* One progress pass: recv is the n x n matrix of received round counts
 * (row j: member j's SST row), released the n x n matrix of released
 * record counts (row j, column s: how far member j released sender s's
 * ring). This member's own rows are taken from the core, not from the
 * matrices. Delivers every stable message in order (upcalls) and posts
 * waiting runs. Returns the number of messages delivered, or a negative
 * errno from post_write. */
int smc_core_progress(struct smc_core *c, const uint64_t *recv,
		      const uint64_t *released);

/* The end of a progress pass, after the member published its row: when
 * no message was sent since the last pass, cover the rounds the others
 * are ahead of this member by with null records, and post them. The
 * sender of a message waits for the row saying it is held here, and for
 * this member's nulls only of the rounds before it, covered when those
 * rounds' messages arrived: so the row goes first. recv as for
 * smc_core_progress. Returns 0 or a negative errno from post_write. */
int smc_core_nulls(struct smc_core *c, const uint64_t *recv);

/* What changed in this member's row since it was last taken. */
enum smc_row_change {
	SMC_ROW_SAME = 0,
	/* Only what no member waits on to deliver: released[s] (sender s
	 * reuses its ring later), or, with two members, received[s] moved
	 * by null records (s passes its own null rounds without the others'
	 * rows). Publishing it may wait a little. */
	SMC_ROW_LAZY,
	/* received[s] moved by a message of s (s waits for every member to
	 * hold it), or, with three members or more, by any record (a third
	 * member's messages wait for everyone to hold the rounds before). */
	SMC_ROW_URGENT,
};

/* This member's SST row: received[s] (rounds held of sender s) and
 * released[s] (records of sender s's ring released here). Returns what
 * changed since the last call in the entries other members read: of
 * another sender s, received[s] or released[s]. The member's own entries
 * move without it: the others credit a sender with its rounds they hold
 * (smc_order_credit_senders), and only the member reads how far it
 * released its own ring. */
enum smc_row_change smc_core_take_row(struct smc_core *c, uint64_t *received,
				      uint64_t *released);

void smc_core_stats(struct smc_core *c, struct smc_stats *st);

/* ---- view changes ----------------------------------------------------------
 * When a member fails the group stops this core (wedge), delivers exactly
 * the rounds every survivor holds (a ragged trim), takes back its own
 * messages past the trim to send them again in the next view, and
 * destroys the core. */

/* Rounds of sender s held here (what the SST row publishes). */
uint64_t smc_core_received(struct smc_core *c, uint32_t s);

/* The core's sticky error: 0, -ESTALE once wedged, or what a write
 * failed to post with. */
int smc_core_error(struct smc_core *c);

/* Stop: sends fail with -ESTALE from now on (waiting ones wake up), no
 * write is posted any more. Arrivals are still accepted. */
void smc_core_wedge(struct smc_core *c);

/* The first round of sender s's held, not yet delivered records whose
 * kind is `kind`, or UINT64_MAX when there is none. */
uint64_t smc_core_first_of_kind(struct smc_core *c, uint32_t s, uint8_t kind);

/* Deliver (upcalls, in the total order) every held position of sender s
 * below round trim[s], for every s, skipping the rest: what a wedged core
 * delivers once the trim is agreed. Every such round must be held here.
 * Returns the messages delivered. */
int smc_core_deliver_trim(struct smc_core *c, const uint64_t *trim);

/* One of this member's own messages not delivered. */
typedef void (*smc_take_fn)(void *arg, const void *payload, uint32_t len,
			    void *cookie, uint8_t kind, uint64_t round);

/* Hand fn this member's own messages not delivered (after
 * smc_core_deliver_trim: those past the trim), in send order; the core
 * forgets their payloads (payload_done will not be called for them). fn
 * runs without the core's lock (it may call the core: release, stats). */
void smc_core_take_own(struct smc_core *c, smc_take_fn fn, void *arg);

/* The payload of own message m (delivered, kept in the group's queue)
 * is taken back the same way: payload_done will not be called for it. */
void smc_core_take_payload(struct smc_core *c, const struct smc_msg *m);

#endif /* SQUALL_SMC_CORE_H */
