/*
 * vcore.h - the view-change decisions of one member as a pure step
 * (group/vcore.c): what the members of the view published in, what this
 * member does out. No SST, thread or clock inside: group/view.c drives it
 * from the SST on the progress thread, and the unit suite's simulator
 * (tests/unit/test_vc_sim.c) drives several members through failures at
 * every step.
 *
 * The protocol (virtual synchrony over the SST, after Derecho). A
 * suspicion, a member that left (group/agree.h: a leaver delivers
 * nothing more once it says so), or a join request (not while this
 * member is closing) wedges the member: its
 * sends and normal delivery stop, and it publishes per sender how many
 * rounds it holds (have) with the failure mask it is wedged for (ack =
 * mask + 1). The leader, the lowest rank not in the mask, takes the trim
 * a survivor already adopted (a trim exists once: its leader had every
 * survivor's ack, so every survivor holds it), or else waits until every
 * survivor acknowledged its mask and computes it: per sender, the least
 * any survivor holds, with the joiners the next view adds. Every other
 * member adopts the leader's trim. When every other member of the next
 * view (the trim's survivors and joiners) shows the same trim or is
 * suspected, and what this member published (its adoption) has landed at
 * every peer, the member delivers exactly the positions below the trim
 * and installs that view. So a trim is delivered only once no other trim
 * can be agreed (what a member delivers before it dies is a prefix of
 * what the survivors deliver), and a member leaves the old view only once
 * every peer can see that it adopted: its old connections closing then
 * looks like installing, not like a failure (a member that adopted the
 * same trim and went quiet is installing).
 *
 * Majority: a change needs more than half of the view it replaces (or,
 * once a trim is adopted, of the view that trim decided); members that
 * left in order count on neither side. A trim that exists (the leader's,
 * with a mask within this member's) is adopted before the majority is
 * judged. Without a majority the member stops and says so in its row (it
 * suspects itself), so the others count it gone.
 *
 * Rows: each member's have, ack, trim, trim_adds and trim_mask are one
 * SST segment (read together, from one push).
 */
#ifndef SQUALL_GROUP_VCORE_H
#define SQUALL_GROUP_VCORE_H

#include <stdbool.h>
#include <stdint.h>

#define VC_MAX_MEMBERS 64

/* COL_CLOSING of a member that leaves while the others go on. */
#define VC_CLOSE_LEFT 3u

enum vc_phase {
	VC_NONE,    /* no view change */
	VC_WEDGED,  /* sends stopped; agreeing on the trim */
	VC_INSTALL, /* every member of the next view holds the trim: the
		       view thread installs it */
};

/* What member j published, as this member last took it from its row. */
struct vc_row {
	uint64_t closing;  /* VC_CLOSE_LEFT: it left in order */
	uint64_t ack;      /* mask + 1 it is wedged for; 0: not wedged */
	uint64_t join;     /* joins it asks for (.cfg index bits) */
	uint64_t tmask;    /* mask + 1 of the trim it adopted; 0: none */
	uint64_t tadd;     /* the joiners that trim's view adds */
	uint64_t have[VC_MAX_MEMBERS]; /* per sender, rounds it holds */
	uint64_t trim[VC_MAX_MEMBERS]; /* per sender, its adopted trim */
};

/* The inputs of one step. */
struct vc_in {
	uint32_t n, me;          /* members of the view, my rank */
	uint64_t suspected;      /* ranks this member suspects */
	uint64_t inview;         /* .cfg index bits of the view's members */
	bool closing;            /* this member is closing */
	bool installing;         /* the last change's own messages are still
				    being sent again */
	bool landed;             /* everything this member published so far
				    has landed at every peer it does not
				    suspect (the writes completed) */
	const struct vc_row *rows; /* n rows; mine is read for its join */
	const uint64_t *have;    /* n: what this member holds now */
};

/* The member's view-change state, kept between steps. */
struct vc_state {
	enum vc_phase phase;
	bool adopted;            /* a trim is adopted */
	bool delivered;          /* ... and delivered here */
	uint64_t tmask;          /* the adopted trim's mask */
	uint64_t tadd;           /* the members its view adds */
	uint64_t trim[VC_MAX_MEMBERS];
};

/* Actions of one step, in the order the caller applies them. */
#define VC_ACT_WEDGE   0x01u /* stop sends and normal delivery */
#define VC_ACT_STOP    0x02u /* no majority: stop (lost, alive, base) */
#define VC_ACT_PUBLISH 0x04u /* publish have (= in->have) and ack */
#define VC_ACT_ADOPT   0x08u /* a trim was adopted: publish st->trim,
				st->tadd and st->tmask + 1 */
#define VC_ACT_DELIVER 0x10u /* deliver the positions below st->trim */
#define VC_ACT_INSTALL 0x20u /* install the next view */

struct vc_out {
	unsigned acts;
	uint64_t ack;            /* VC_ACT_PUBLISH: mask + 1 */
	uint64_t lost;           /* VC_ACT_STOP: the ranks unreachable */
	uint32_t alive, base;    /* VC_ACT_STOP: reachable of base */
};

/* Whether a view change needs in->have this step: the caller may leave
 * it unfilled otherwise (computing it costs a walk of the queues). */
bool vc_needs_have(const struct vc_in *in, const struct vc_state *st);

/* One step. Returns true while a view change is under way (the caller's
 * normal sending and delivery wait), false when there is none. */
bool vc_step(const struct vc_in *in, struct vc_state *st, struct vc_out *out);

/* The first position after the trim (positions run round-robin over
 * senders: round r of sender s is position r * n + s), and whether
 * position p is below it. */
uint64_t vc_trim_end(const uint64_t *trim, uint32_t n);

#endif /* SQUALL_GROUP_VCORE_H */
