/*
 * smc/order.h - the delivery rule: which received messages are stable and
 * in which order every member delivers them.
 *
 * Each sender numbers its rounds 0, 1, 2, ...; a record covers one round
 * (a message) or several (a null record, sent by an idle sender so the
 * others do not wait for it). The total order is round-robin over the n
 * senders: the message at round r of sender s has global sequence number
 * seq = r * n + s. A position is stable when every member has received
 * that round of that sender. Every member publishes, per sender, how many
 * rounds it has received (its SST row). From that matrix, the minimum in a
 * sender's column is the rounds of that sender every member has; the
 * earliest position over senders not covered that way is the frontier, and
 * every position before it is stable. Members deliver
 * the same messages in the same order because a message is passed only
 * once it and every message before it are stable, whatever the counters a
 * member has seen, and the order depends only on positions; null rounds
 * advance the order without an upcall (a member passes its own ahead of
 * the others' rows: smc_order_frontier_here).
 */
#ifndef SQUALL_SMC_ORDER_H
#define SQUALL_SMC_ORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A record as the order engine keeps it until its last round is passed. */
struct smc_order_rec {
	uint64_t rec;	  /* the record's number in its sender's ring */
	uint64_t round;	  /* first round it covers */
	uint32_t len;	  /* payload bytes */
	uint16_t nrounds; /* rounds covered (1 for a message) */
	uint16_t flags;	  /* SMC_REC_NULL for a null record */
	const void *data; /* payload (ring slot, or the sender's own lease) */
	uint64_t at_ns;	  /* found in the ring, or sent (own): 0 for nulls */
};

/* One step of delivery, in the total order. A message (flags without
 * SMC_REC_NULL) is to be handed to the upcall; a null record is reported
 * once its last round has been passed, so its slot can be released. */
struct smc_order_event {
	uint32_t sender;
	uint64_t seq; /* global position: round * n + sender */
	struct smc_order_rec rec;
};

struct smc_order_queue {
	struct smc_order_rec *e; /* cap entries */
	uint64_t head;		 /* next to pass */
	uint64_t tail;		 /* next free */
	uint64_t next_round;	 /* rounds pushed so far */
	uint64_t head_round;	 /* rounds of the head record passed so far */
};

struct smc_order {
	uint32_t n;	    /* members, all of them senders */
	uint32_t cap;	    /* records held per sender at most */
	uint64_t next_seq;  /* next position to pass */
	uint64_t delivered; /* messages handed out (not counting nulls) */
	struct smc_order_queue *q;
};

/* Set up for n senders holding at most cap unpassed records each.
 * Returns 0, -EINVAL (n or cap 0) or -ENOMEM. */
int smc_order_init(struct smc_order *o, uint32_t n, uint32_t cap);
void smc_order_fini(struct smc_order *o);

/* Sender s's next record has arrived locally (or, for the local sender,
 * was sent). Its round must continue the sender's sequence. Returns 0,
 * -EPROTO (gap or overlap in rounds) or -ENOBUFS (cap records held). */
int smc_order_push(struct smc_order *o, uint32_t s,
		   const struct smc_order_rec *r);

/* Rounds of sender s held locally so far: what this member publishes as
 * received[s]. */
static inline uint64_t smc_order_received(const struct smc_order *o, uint32_t s)
{
	return o->q[s].next_round;
}

/* The first position not yet stable, given recv, the n x n matrix of
 * received round counts (recv[j * n + s]: member j has rounds [0, value) of
 * sender s). Every position below it is stable. */
uint64_t smc_order_frontier(const uint64_t *recv, uint32_t n);

/* The frontier at member me, whose own row in recv must be what it holds:
 * as smc_order_frontier, but me's own rounds past what every member holds
 * count as stable where they are null records (and where it passed them
 * already). A null round delivers nothing, so passing it before the others
 * hold it changes no member's sequence: a message after it is still
 * delivered only once its own round is stable, and a view change that
 * trims the null off (me gone before every survivor had it) skips a
 * position with nothing in it. So a member's own nulls do not hold back
 * the next message it receives until the others say they hold them. Only
 * its own: passing others' nulls the same way measured slower (more
 * pushes, one sender's rate down a sixth) for no lower latency. */
uint64_t smc_order_frontier_here(const struct smc_order *o,
				 const uint64_t *recv, uint32_t me);

/* Member me's view of recv before smc_order_frontier: every sender s holds
 * at least the rounds of its own that me holds of it (s sent them), so
 * recv[s * n + s] is raised to recv[me * n + s] when s's pushed row says
 * less. Stability of s's rounds then waits only for the other members'
 * rows, not for s to push that it sent what already arrived. */
void smc_order_credit_senders(uint64_t *recv, uint32_t n, uint32_t me);

/* Pass positions from next_seq up to (not including) frontier, writing at
 * most max events to out in delivery order. Every position below the
 * frontier must be held locally (the frontier is a minimum that includes
 * this member's own row). Returns the number of events. */
uint32_t smc_order_collect(struct smc_order *o, uint64_t frontier,
			   struct smc_order_event *out, uint32_t max);

/* Pass positions from next_seq on, in order, but of each sender s only
 * rounds below trim[s]: the ragged end of a view. Positions of a sender
 * at or past its trim are skipped (its records stay queued). Every round
 * below a trim must be held locally. Returns the number of events (0 once
 * every sender reached its trim). */
uint32_t smc_order_collect_trim(struct smc_order *o, const uint64_t *trim,
				struct smc_order_event *out, uint32_t max);

/* How many null rounds sender `me` should send now, when it has nothing
 * else queued: every round up to the latest it holds of any other sender.
 * mine[s] is what this member holds of sender s (mine[me]: the rounds it
 * has sent). Sender t's round r sits at r * n + t and needs only my rounds
 * up to r when me < t, up to r - 1 when me > t; covering round r in both
 * cases means that when t's round r + 1 comes, my rounds before it went
 * out already (the others may be holding them by then, and I pass my own
 * nulls at once: smc_order_frontier_here), so nobody waits for a null of
 * mine sent only once t's message arrived. The nulls never pass the
 * latest round some member sent for real, so idle members do not chase
 * each other's nulls. */
uint64_t smc_order_null_rounds(const uint64_t *mine, uint32_t n, uint32_t me);

#endif /* SQUALL_SMC_ORDER_H */
