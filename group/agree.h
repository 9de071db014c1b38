/*
 * agree.h - the close agreements of one member as pure decisions
 * (group/agree.c): what the members of the view published in, yes or no
 * out. No SST, thread or clock inside: close.c reads the rows and
 * group_close waits on these, and the simulator (tests/sim) runs the same
 * decisions beside the view-change core (vcore.h).
 *
 * The protocol. A member that closes publishes closing = 1 with the
 * number of ordered messages it sent in the view (sent). When every
 * member is closing and every member delivered every message each one
 * sent (flushed), nothing needs a view change: each publishes closing =
 * 2 and leaves once every other one did or is suspected (all_flushed).
 * When some member is not closing, a closer leaves alone: once every
 * message it sent is delivered on every member and it is not wedged
 * (own_flushed; the caller adds a grace time for closers that come
 * late), it stops delivering, publishes closing = VC_CLOSE_LEFT and
 * leaves once every other member is wedged for a change without it,
 * suspected, flushed or gone itself (leave_seen). The others, closing or
 * not, remove it with a view change (vcore.h): what it delivered was
 * stable before any of them wedged for it, so it is inside their trim,
 * and what it did not deliver is theirs to agree on. A peer that
 * published 2 proves flushed for everyone: the condition it saw holds for
 * good, even where the rows of a member that died meanwhile arrived only
 * in part.
 */
#ifndef SQUALL_GROUP_AGREE_H
#define SQUALL_GROUP_AGREE_H

#include <stdbool.h>
#include <stdint.h>

/* What member j published, as this member last took it from its row. */
struct ag_row {
	uint64_t closing;      /* 0, 1 (closing), 2 (flushed), VC_CLOSE_LEFT */
	uint64_t sent;         /* ordered messages it sent before closing */
	uint64_t ack;          /* mask + 1 it is wedged for; 0: not */
	const uint64_t *done;  /* [n] per sender, messages it delivered */
	bool suspected;        /* this member suspects it */
};

struct ag_in {
	uint32_t n, me;
	const struct ag_row *rows;  /* n; mine as published */
	bool wedged;                /* this member is in a view change */
	uint64_t sent;              /* what this member sent in the view now */
};

/* Every member is closing and delivered every message each member sent
 * before closing (members that left need nothing more), or a peer saw
 * that and published 2. */
bool ag_flushed(const struct ag_in *in);
/* Every other member flushed too, or is suspected. */
bool ag_all_flushed(const struct ag_in *in);
/* Every message this member sent is delivered everywhere, what it
 * published says all of them, it is not wedged, and some member is not
 * closing (when all are, they flush together). */
bool ag_own_flushed(const struct ag_in *in);
/* The others took this member's leave in, or need nothing more of it. */
bool ag_leave_seen(const struct ag_in *in);

#endif /* SQUALL_GROUP_AGREE_H */
