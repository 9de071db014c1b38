/*
 * vcore.c - the view-change decisions of one member, as a pure step
 * (see vcore.h for the protocol and the contract).
 */
#include <string.h>

#include "group/vcore.h"

static inline bool has(uint64_t mask, uint32_t j)
{
	return mask >> j & 1;
}

/* What the rows say this step: the failed (suspected, not installing),
 * the members that left in order, the joins asked, and whether a peer
 * already wedged. */
struct scan {
	uint64_t mask, left, joins;
	bool joined;
};

static void scan(const struct vc_in *in, const struct vc_state *st,
		 struct scan *sc)
{
	memset(sc, 0, sizeof(*sc));
	for (uint32_t j = 0; j < in->n; j++) {
		const struct vc_row *r = &in->rows[j];

		if (j == in->me) {
			sc->joins |= r->join;
			continue;
		}
		/* A member that left in order is no failure; nor is one
		 * that adopted the same trim as this member and went quiet:
		 * it is installing the next view. */
		if (r->closing == VC_CLOSE_LEFT) {
			sc->left |= 1ull << j;
		} else if (st->adopted && r->tmask == st->tmask + 1) {
			continue;
		} else if (has(in->suspected, j)) {
			sc->mask |= 1ull << j;
		} else {
			if (r->ack)
				sc->joined = true;
			sc->joins |= r->join;
		}
	}
	sc->joins &= ~in->inview;
}

/* Whether this step goes past "no view change". */
static bool changing(const struct vc_in *in, const struct vc_state *st,
		     const struct scan *sc)
{
	/* A failure starts a view change, and so does a leave (the leaver
	 * delivers nothing more: only a view without it delivers what is
	 * left, even when this member is closing too); a join too, unless
	 * this member is closing; one a peer started is joined. */
	return st->phase != VC_NONE || sc->mask || sc->joined || sc->left ||
	       (!in->closing && sc->joins);
}

static void adopt(struct vc_state *st, const uint64_t *trim, uint32_t n,
		  uint64_t mask, uint64_t adds, struct vc_out *out)
{
	memcpy(st->trim, trim, (size_t)n * sizeof(*trim));
	st->adopted = true;
	st->tmask = mask;
	st->tadd = adds;
	out->acts |= VC_ACT_ADOPT;
}

/* Adopt the trim in member j's row, if it has one for a mask within
 * mine. */
static bool adopt_from(const struct vc_in *in, struct vc_state *st,
		       uint32_t j, uint64_t mask, struct vc_out *out)
{
	const struct vc_row *r = &in->rows[j];

	if (!r->tmask || ((r->tmask - 1) & ~mask))
		return false;
	adopt(st, r->trim, in->n, r->tmask - 1, r->tadd, out);
	return true;
}

/* A trim that exists already, for a mask within mine. The leader's,
 * for another member. For the leader, one a survivor adopted: it is the
 * trim, for it exists once, and the leader that made it had the acks of
 * every survivor of a mask within mine, so every survivor holds it; it
 * needs no ack of mine (a survivor that adopted it treats the members
 * installing it as gone and may never ack my mask). */
static void take_trim(const struct vc_in *in, struct vc_state *st,
		      uint32_t leader, uint64_t mask, struct vc_out *out)
{
	if (leader != in->me) {
		adopt_from(in, st, leader, mask, out);
		return;
	}
	for (uint32_t j = 0; j < in->n; j++)
		if (j != in->me && !has(mask, j) &&
		    adopt_from(in, st, j, mask, out))
			return;
}

/* The leader, with no trim to take: once every survivor is wedged for my
 * mask, per sender the least any survivor holds. */
static void lead(const struct vc_in *in, struct vc_state *st, uint64_t mask,
		 uint64_t joins, struct vc_out *out)
{
	uint64_t trim[VC_MAX_MEMBERS];

	for (uint32_t j = 0; j < in->n; j++)
		if (j != in->me && !has(mask, j) &&
		    in->rows[j].ack != mask + 1)
			return;
	for (uint32_t s = 0; s < in->n; s++) {
		trim[s] = in->have[s];
		for (uint32_t j = 0; j < in->n; j++)
			if (j != in->me && !has(mask, j) &&
			    in->rows[j].have[s] < trim[s])
				trim[s] = in->rows[j].have[s];
	}
	adopt(st, trim, in->n, mask, joins, out);
}

bool vc_needs_have(const struct vc_in *in, const struct vc_state *st)
{
	struct scan sc;

	scan(in, st, &sc);
	return changing(in, st, &sc) && st->phase != VC_INSTALL &&
	       !in->installing;
}

bool vc_step(const struct vc_in *in, struct vc_state *st, struct vc_out *out)
{
	uint64_t mask, base_mask;
	uint32_t leader = UINT32_MAX, alive, base;
	struct scan sc;

	memset(out, 0, sizeof(*out));
	scan(in, st, &sc);
	if (!changing(in, st, &sc))
		return false;
	mask = sc.mask | sc.left;
	if (st->phase == VC_INSTALL)
		return true;
	if (st->phase == VC_NONE) {
		st->phase = VC_WEDGED;
		out->acts |= VC_ACT_WEDGE;
	}
	/* The last change's own messages are still going out again: the
	 * wedge stops that; the rest waits until it let go. */
	if (in->installing)
		return true;
	for (uint32_t j = 0; j < in->n && leader == UINT32_MAX; j++)
		if (!has(mask, j))
			leader = j;
	/* A trim that exists decided the view it replaces: taken before the
	 * majority is judged. Judged against view 0 of 4, a member that
	 * learns of a second failure just after the leader made the trim
	 * for the first would stop, 2 of 4 reachable, while the trim's view
	 * of 3 goes on with a majority and counts it gone. The rows are
	 * read again with it: a member that adopted it too is installing,
	 * not failed. */
	if (!st->adopted) {
		take_trim(in, st, leader, mask, out);
		if (st->adopted) {
			scan(in, st, &sc);
			mask = sc.mask | sc.left;
		}
	}
	/* Majority of the view being replaced, or of the one the adopted
	 * trim decided. Members that left in order are not on the other
	 * side of a partition: they count on neither. */
	base_mask = (st->adopted ? st->tmask : 0) | sc.left;
	base = in->n - (uint32_t)__builtin_popcountll(base_mask);
	alive = in->n - (uint32_t)__builtin_popcountll(mask | base_mask);
	if (alive * 2 <= base) {
		out->acts |= VC_ACT_STOP;
		out->lost = mask;
		out->alive = alive;
		out->base = base;
		return true;
	}
	/* What I hold, and the mask I am wedged for. */
	out->acts |= VC_ACT_PUBLISH;
	out->ack = mask + 1;
	if (!st->adopted && leader == in->me)
		lead(in, st, mask, sc.joins, out);
	if (!st->adopted)
		return true;
	/* Deliver and install once every other member of the next view
	 * adopted the trim too, or is gone (the next view's first change
	 * drops it). Not sooner: until then a trim this member adopted
	 * alone may die with it and the others agree on another, and what
	 * it delivered would not be a prefix of what they deliver. */
	for (uint32_t j = 0; j < in->n; j++)
		if (j != in->me && !has(st->tmask, j) &&
		    in->rows[j].tmask != st->tmask + 1 && !has(mask, j))
			return true;
	/* And not before the peers can see that this member adopted: its
	 * leaving must look like installing to them, not like a failure. */
	if (out->acts & VC_ACT_ADOPT || !in->landed)
		return true;
	if (!st->delivered) {
		st->delivered = true;
		out->acts |= VC_ACT_DELIVER;
	}
	st->phase = VC_INSTALL;
	out->acts |= VC_ACT_INSTALL;
	return true;
}

uint64_t vc_trim_end(const uint64_t *trim, uint32_t n)
{
	uint64_t end = 0;

	for (uint32_t j = 0; j < n; j++)
		if (trim[j] && (trim[j] - 1) * n + j + 1 > end)
			end = (trim[j] - 1) * n + j + 1;
	return end;
}
