/*
 * tests/vsync/check.h - the virtual-synchrony checker: judges a history
 * (history.h) against the properties the group promises (group.h), one
 * function per property, and says in words what it found.
 *
 * Words used below. A member's first and last epoch are the lowest and
 * highest epochs it installed (its VIEW records). A member is in epoch e
 * if it installed view e or delivered in e; its sequence of e is its
 * DELIVER records tagged e, in its own record order. A survivor of e is a
 * member in e that installed a view after e. The last epoch of the run is
 * the highest epoch any member installed. "Closed" and so on are a
 * member's END. A member's messages are its (sender, mseq) pairs.
 *
 * The rules, exactly (the report line of each starts with its name):
 *
 *  same-sequence  For each epoch e, the reference sequence is that of the
 *     lowest-id survivor of e, or, with no survivor, the longest one
 *     (lowest id on ties). Every member in e delivered a prefix of it
 *     (compared message by message: the first difference is reported);
 *     every survivor delivered all of it (the same length too). So a
 *     member that crashed, stopped or left in e delivered a prefix of what
 *     the survivors delivered, and never more.
 *  no-duplicate   No member delivers the same message twice in the run.
 *     (fifo also reports a duplicate: it breaks the +1 step.)
 *  fifo  At each member, in its record order, the mseqs of each sender
 *     step by exactly +1 from the first one it delivered (a joiner starts
 *     later). A step back or a gap is reported once, and the check goes on
 *     from the highest mseq seen.
 *  live-sender  For every sender that ended closed, or ended running with
 *     its last epoch the last of the run: each SEND it recorded in epoch s
 *     is owed as a message of epoch e: s, or the earliest epoch in which
 *     any member delivered it where that is later (a message past its
 *     view's trim is sent again in the next view, and belongs to that
 *     one). It was delivered at every recipient: a member that ended
 *     closed, with first epoch <= e, and either last epoch > e (it lived
 *     past the view: its trim or the resend in the next view carried it)
 *     or last epoch == e == the last epoch of the run (everyone closed in
 *     that view: close flushes). A member that left cleanly in the view
 *     of the message is not owed it (group_close only flushes its own).
 *     This checks "at least once"; "at most once" is no-duplicate's.
 *  dead-sender  For every sender s that ended crashed or stopped, with L
 *     its last epoch: the members that ended closed with first epoch <= L
 *     < last epoch (they lived through the change that dropped s) hold the
 *     same prefix of s: the same highest mseq of s (or none), a member
 *     that joined later than another counting only what the other
 *     delivered from the joiner's first epoch on (what came before came
 *     with its state); those whose first epoch is <= s's first epoch hold
 *     all of #0..highest.
 *  views  (a) Every member that installed epoch e installed the same
 *     member set (order aside). (b) Each member's epochs strictly increase
 *     in its record order. (c) A member is in every view it installs.
 *     (d) Every SEND, DELIVER and BARRIER is tagged with the epoch of the
 *     member's latest VIEW before it (reported once per member, record
 *     kind and view). (e) A message is delivered only in a view (as the
 *     delivering member installed it) that holds its sender. (f) A member
 *     in view e (as its first installer listed it) whose first epoch < e <
 *     last epoch installed e: nobody skips a view that holds it.
 *  positions  (a) A message sits at the same position at every member
 *     that delivered it (its first delivery at each). (b) At each member,
 *     a view's start equals the end of its previous view's deliveries, and
 *     its deliveries are at consecutive positions from its first view's
 *     start. (c) Every member that installed epoch e says e starts at the
 *     same position.
 *  ends  Every member has exactly one END, nothing after it, and it is
 *     closed, stopped or crashed; running only in a truncated run. A
 *     member with no END: "its log ends without END: it never finished".
 *  barriers  At each member the barrier counts are 1, 2, 3, ... in its
 *     record order; members that ended closed with the same first and last
 *     epoch end with the same count. Only this much is decidable here: a
 *     record says when a member passed a barrier, not when the others
 *     entered it, so "nobody passed k before every member of its view
 *     entered k" is not checked.
 *  damaged  A message has the same length and hash at every member.
 *  log  A record cut by a kill (a last line without newline) is accepted
 *     only from a member that crashed (then a note says it was ignored).
 */
#ifndef SQUALL_TESTS_VSYNC_CHECK_H
#define SQUALL_TESTS_VSYNC_CHECK_H

#include <stddef.h>

#include "history.h"

enum vs_property {
	VS_SAME_SEQUENCE,
	VS_NO_DUPLICATE,
	VS_FIFO,
	VS_LIVE_SENDER,
	VS_DEAD_SENDER,
	VS_VIEWS,
	VS_POSITIONS,
	VS_ENDS,
	VS_BARRIERS,
	VS_DAMAGED,
	VS_LOG,
	VS_NPROPS
};

/* "same-sequence", "no-duplicate", ...: the names above. */
extern const char *const vs_property_name[VS_NPROPS];

struct vs_report {
	size_t max_lines; /* lines kept (violations are all counted) */
	size_t nlines;	  /* lines[] kept so far */
	char **lines;	  /* "property: what", one line each */
	size_t caplines;
	size_t violations;	 /* all of them */
	size_t count[VS_NPROPS]; /* per property */
	size_t nnotes;		 /* notes[]: remarks, not violations */
	char **notes;
	size_t capnotes;
	size_t members;	   /* members seen */
	size_t views;	   /* distinct epochs installed */
	size_t deliveries; /* DELIVER records */
};

void vs_report_init(struct vs_report *r, size_t max_lines);
void vs_report_free(struct vs_report *r);

/* Judge h. Returns the number of violations (r->violations), or -ENOMEM;
 * r is reset first, so one report can judge several histories. */
int vs_check(const struct vs_history *h, struct vs_report *r);

#endif /* SQUALL_TESTS_VSYNC_CHECK_H */
