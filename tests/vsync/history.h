/*
 * tests/vsync/history.h - a run of the group as its members saw it: the
 * record that the virtual-synchrony checker (check.h) judges.
 *
 * Two things fill it: the simulator of the view-change core, through the
 * vs_add_* calls below, and the logs of real member processes, through
 * vs_parse_file() (log.h). Every record is tagged with the member that saw
 * it, and each member's records keep the order in which that member made
 * them (a per-member sequence number), since nothing orders the members'
 * clocks against each other: the checker compares what each member saw,
 * never when.
 *
 * The records:
 *  - VIEW: the member installed view `epoch` with member list `ids`; the
 *    view starts at global position `start` for it (how many messages the
 *    group had delivered before the view: a joiner takes it from its
 *    state transfer).
 *  - SEND: the member's send of its own message `mseq` returned success in
 *    `epoch`. mseq is the application's per-sender counter, from 0, unique
 *    per member id over the whole run (one life per member id: a process
 *    that starts again under the same id is not modelled).
 *  - DELIVER: the member delivered message `mseq` of `sender` (`len`
 *    bytes, content hash `hash`, see vs_hash()) at global position `pos`
 *    (0-based, counted across the whole run the same way on every member,
 *    joiners included) in `epoch`.
 *  - BARRIER: the member passed its k-th group_barrier() (k from 1) in
 *    `epoch`.
 *  - END: how the member ended: closed (group_close returned 0), stopped
 *    (the group stopped it: no majority, or cut off), crashed (killed or
 *    died: recorded by the harness or the simulator for a victim) or
 *    running (the run ended with it live: only for the simulator's
 *    truncated runs, see vs_history.truncated).
 */
#ifndef SQUALL_TESTS_VSYNC_HISTORY_H
#define SQUALL_TESTS_VSYNC_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Member ids 0..63: a view's member list is one 64-bit mask. */
#define VS_MAX_MEMBERS 64

enum vs_how {
	VS_END_NONE = 0, /* no END recorded (yet) */
	VS_END_CLOSED,
	VS_END_STOPPED,
	VS_END_CRASHED,
	VS_END_RUNNING,
};

/* "closed", "stopped", "crashed", "running" (the log's spelling), or
 * "without END" for VS_END_NONE. */
const char *vs_how_name(enum vs_how how);

/* seq in every record: its place among the member's own records. */
struct vs_view {
	uint64_t seq;
	uint64_t epoch;
	uint64_t start; /* global position the view starts at */
	uint64_t ids;	/* bit i set: member i is in the view */
};

struct vs_send {
	uint64_t seq;
	uint64_t epoch;
	uint64_t mseq;
};

struct vs_deliver {
	uint64_t seq;
	uint64_t epoch;
	uint64_t pos;
	uint64_t mseq;
	uint64_t len;
	uint64_t hash;
	uint32_t sender;
};

struct vs_barrier {
	uint64_t seq;
	uint64_t epoch;
	uint64_t k;
};

struct vs_member {
	bool seen;	    /* any record, or named by vs_mark_crashed() */
	enum vs_how end;    /* the first END recorded */
	uint64_t end_seq;   /* its seq */
	unsigned nends;	    /* END records (one is right) */
	uint64_t after_end; /* records made after the END: violations */
	bool harness_crashed;
	char *torn;    /* "FILE:LINE" of a record cut by a kill, or NULL */
	uint64_t nseq; /* records so far (the next record's seq) */

	struct vs_view *views;
	size_t nviews, capviews;
	struct vs_send *sends;
	size_t nsends, capsends;
	struct vs_deliver *dels;
	size_t ndels, capdels;
	struct vs_barrier *bars;
	size_t nbars, capbars;
};

struct vs_history {
	struct vs_member m[VS_MAX_MEMBERS];
	/* The run was cut short on purpose (the simulator stops after so
	 * many steps): END running is accepted then, a violation otherwise. */
	bool truncated;
	/* Remarks that are not violations (a cut record of a crashed member,
	 * the harness contradicting a log); vs_check() copies them into its
	 * report. */
	char **notes;
	size_t nnotes, capnotes;
};

void vs_history_init(struct vs_history *h);
void vs_history_free(struct vs_history *h);

/* Each returns 0, -EINVAL (a member, sender or id above 63, a list naming
 * an id twice) or -ENOMEM. Records are kept as given, however wrong:
 * judging them is vs_check()'s business. */
int vs_add_view(struct vs_history *h, uint32_t member, uint64_t epoch,
		const uint32_t *ids, size_t n, uint64_t start_pos);
int vs_add_send(struct vs_history *h, uint32_t member, uint64_t epoch,
		uint64_t mseq);
int vs_add_deliver(struct vs_history *h, uint32_t member, uint64_t epoch,
		   uint64_t pos, uint32_t sender, uint64_t mseq, uint64_t len,
		   uint64_t hash);
int vs_add_barrier(struct vs_history *h, uint32_t member, uint64_t epoch,
		   uint64_t k);
int vs_add_end(struct vs_history *h, uint32_t member, enum vs_how how);

/* The harness killed `member`: an END crashed if its log has no END (a
 * victim rarely writes one); a log that says otherwise stands, with a
 * note. A victim with no log at all is still counted as a member. */
int vs_mark_crashed(struct vs_history *h, uint32_t member);

/* Add a note (printf-style). Returns 0 or -ENOMEM. */
int vs_history_note(struct vs_history *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Record that member's log ended in a cut record at `where` ("FILE:LINE");
 * vs_check() notes it if the member crashed and reports it otherwise. */
int vs_history_torn(struct vs_history *h, uint32_t member, const char *where);

/* 64-bit FNV-1a of a payload: the content hash members log, so that every
 * member computes the same value for the same bytes. */
uint64_t vs_hash(const void *data, size_t len);

#endif /* SQUALL_TESTS_VSYNC_HISTORY_H */
