/*
 * smc.h - small-message multicast: every member's messages up to
 * max_payload bytes, delivered by every member in one total order.
 *
 * Each sender owns a ring of `window` slots in every receiver's region and
 * fills it with RDMA writes that gather the slot header from a small
 * registered header area and the payload straight from the application's
 * leased buffer, so a leased payload is never copied on the sending member.
 * Receivers publish how many messages they hold of each sender; a message
 * is delivered once every member holds it, in round-robin order over the
 * senders (message i of sender 0, of sender 1, ..., then i + 1). A sender
 * with nothing to say sends null messages, which keep the order moving and
 * are never delivered.
 *
 * The delivery upcall sees a message in place, in the receiver's ring slot
 * (or, on the sending member, in the leased buffer). It may keep the slot
 * past its return by returning true; the slot then counts against the
 * sender's window until smc_release() gives it back, and the sender waits
 * rather than overwrite it.
 */
#ifndef SQUALL_SMC_H
#define SQUALL_SMC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A delivered message. Valid during the upcall; when the upcall keeps it,
 * until smc_release() is called with it. */
struct smc_msg {
	uint32_t sender;  /* member index of the sender */
	uint64_t seq;	  /* position in the total order, the same on every
			     member: round * nmembers + sender. Increasing,
			     with gaps where null messages were. */
	uint64_t index;	  /* the sender's round of this message (seq / n) */
	const void *data; /* the payload, in place */
	size_t len;
	uint64_t slot; /* identifies the slot for smc_release() */
	uint8_t kind;  /* what the sender's layer said it is (0 by default) */
};

/* The delivery upcall, run by the member's progress thread, in the total
 * order. Return true to keep the slot (release it later), false to let it
 * be recycled at once. */
typedef bool (*smc_deliver_fn)(void *arg, const struct smc_msg *m);

/* What a member's SMC has done, for tools and tests. */
struct smc_stats {
	uint64_t sends;		   /* messages sent (zero-copy and copied) */
	uint64_t sends_copied;	   /* of which took the copy path */
	uint64_t payload_copies;   /* payload memcpy()s by SMC on send */
	uint64_t bytes_sent;	   /* payload bytes sent */
	uint64_t send_waits;	   /* sends that waited for a free slot */
	uint64_t send_eagain;	   /* non-blocking sends refused: window full */
	uint64_t null_records;	   /* null records sent */
	uint64_t null_rounds;	   /* rounds those records covered */
	uint64_t writes;	   /* RDMA writes posted (one per receiver) */
	uint64_t records_written;  /* records those writes carried */
	uint64_t posts_deferred;   /* writes put off: a send queue was full */
	uint64_t delivered;	   /* messages delivered (upcalls) */
	uint64_t delivery_batches; /* progress passes that delivered */
	uint64_t kept;		   /* slots the upcall kept */
	uint64_t leases_returned;  /* sent payloads handed back */
	/* Where a message's time goes (CLOCK_MONOTONIC, one reading per
	 * arrival and per delivery batch): others' messages from the pass
	 * that found them in their ring to their delivery here (waiting for
	 * stability and the order), and own messages from the send to
	 * their delivery here (every member holds them). */
	uint64_t rx_wait_ns;	   /* sum over others' delivered messages */
	uint64_t rx_waited;	   /* those messages */
	uint64_t own_wait_ns;	   /* sum over own delivered messages */
	uint64_t own_waited;	   /* those messages */
};

#endif /* SQUALL_SMC_H */
