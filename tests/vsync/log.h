/*
 * tests/vsync/log.h - the event log a member process writes during a run,
 * one record per line, and the parser that turns the logs back into a
 * history (history.h) for the checker (check.h, the vs_check program).
 *
 * A record is a tag and space-separated key=value fields in this fixed
 * order, ASCII, numbers in decimal, the hash in 16 hex digits:
 *
 *   V m=1 e=2 start=57 ids=0,1,3
 *   S m=1 e=2 q=12
 *   D m=1 e=2 p=57 s=0 q=12 len=64 h=0123456789abcdef
 *   B m=1 e=2 k=3
 *   E m=1 how=closed            (closed | stopped | crashed | running)
 *
 * (m: the member, e: the epoch, q: the sender's mseq, p: the global
 * position, s: the sender, k: the barrier count; see history.h.) A line
 * starting with '#' is a comment. Every record ends with a newline: a last
 * line without one is a record cut by a kill, ignored and remembered
 * (vs_history_torn) for the checker to judge; anything else malformed is
 * an error naming the file and line.
 *
 * The writer formats each record whole and hands it to one write(2) on a
 * descriptor opened O_APPEND, with no buffer of its own: once a call
 * returns, the record is in the kernel and outlives a kill of the process
 * (though not of the machine), and records written by several threads of
 * one member never interleave within a line.
 */
#ifndef SQUALL_TESTS_VSYNC_LOG_H
#define SQUALL_TESTS_VSYNC_LOG_H

#include <stddef.h>
#include <stdint.h>

#include <squall/error.h>

#include "history.h"

struct vs_log;

/* Create (truncate) the log at path for member `member`. Returns NULL with
 * err filled (the path and why). */
struct vs_log *vs_log_open(const char *path, uint32_t member,
			   struct squall_error *err);

/* Each writes one record and returns 0 or a negative errno (a failed or
 * short write). */
int vs_log_view(struct vs_log *l, uint64_t epoch, const uint32_t *ids, size_t n,
		uint64_t start_pos);
int vs_log_send(struct vs_log *l, uint64_t epoch, uint64_t mseq);
int vs_log_deliver(struct vs_log *l, uint64_t epoch, uint64_t pos,
		   uint32_t sender, uint64_t mseq, uint64_t len, uint64_t hash);
int vs_log_barrier(struct vs_log *l, uint64_t epoch, uint64_t k);
int vs_log_end(struct vs_log *l, enum vs_how how);

/* Close the descriptor and free l (NULL is fine). */
void vs_log_close(struct vs_log *l);

/* Read the log at path into h (one file may hold several members'
 * records). Returns 0, or a negative errno with err saying
 * "PATH:LINE: what" (-EINVAL for a malformed record, or the errno of
 * open/read). Records read before an error stay in h. */
int vs_parse_file(struct vs_history *h, const char *path,
		  struct squall_error *err);

/* Write member's records in h, in its order, as the log at path: a
 * simulated run that failed can be kept and judged again by vs_check.
 * Returns 0 or a negative errno (err filled). */
int vs_log_dump(const struct vs_history *h, uint32_t member, const char *path,
		struct squall_error *err);

#endif /* SQUALL_TESTS_VSYNC_LOG_H */
