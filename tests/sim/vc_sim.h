/*
 * vc_sim.h - a deterministic simulator of squall's view change: 3 to 7
 * members running the real view-change core (group/vcore.c) over a
 * simulated SST and data plane, with faults at any step, judged by the
 * virtual-synchrony checker (tests/vsync) and by the simulator's own
 * checks of what the checker cannot see (a member delivering a message it
 * does not hold, members adopting different trims, a change that never
 * ends).
 *
 * What is simulated, and how:
 * - The SST: every member's row (the view-change columns, its SMC
 *   received counters, its suspicions) is pushed to every peer over a
 *   per-link FIFO; each push carries every segment and each segment of a
 *   push may arrive torn (then the peer keeps the copy it had: validated
 *   rows, sst/seal.h) and is taken on a later look. Segments are those
 *   group.c declares. A push has landed (its write completed, which its
 *   sender learns) once the peer took all of it.
 * - The data plane: each sender's rounds (messages or nulls) reach each
 *   member in order, with delays; a crashed sender's last rounds reach
 *   some members and not others (ragged ends).
 * - Normal delivery: round-robin order over senders, a round delivered
 *   once every member's published received counter covers it (SMC's
 *   stability rule); it stops at the wedge. The trim is delivered as the
 *   group delivers it: every position below the trim's end whose round is
 *   below that sender's trim.
 * - Failures: crashes at any step, and on purpose right after a member
 *   adopts a trim, publishes one or wedges; partitions into two sides;
 *   detection after a random delay (the heartbeat timeout), suspicions
 *   gossiped through the rows (never believed from a suspected member).
 *   A member that installs the next view drops its old connections: the
 *   others see that as a failure unless the core knows better.
 *
 * One schedule covers one view change, possibly with several failures
 * inside it. Everything is drawn from one seeded stream, so a seed
 * replays exactly; vc_sim_opts.trace prints each event.
 */
#ifndef SQUALL_TESTS_VC_SIM_H
#define SQUALL_TESTS_VC_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct vc_sim_opts {
	uint64_t seed;
	uint32_t nmin, nmax;     /* members, drawn from [nmin, nmax] */
	/* A planted bug, to show the simulator catches one: deliver the
	 * trim as soon as it is adopted (before the others can be sure to
	 * agree on it), as group/ once did. */
	bool plant_early_delivery;
	FILE *trace;             /* each event, or NULL */
};

struct vc_sim_result {
	uint32_t n;
	uint64_t events;
	uint32_t crashes, partitions;
	uint32_t installed, stopped, crashed;
	uint32_t violations;
	char first[768];         /* the first violation, in words */
};

struct vc_sim;

/* A simulation of n members (3..7) in view 0, all connected. */
struct vc_sim *vc_sim_new(uint32_t n, const struct vc_sim_opts *o);
void vc_sim_free(struct vc_sim *s);

/* Scripted steps, for regression tests of one schedule. */
void vc_sim_member_step(struct vc_sim *s, uint32_t j);  /* one pass */
bool vc_sim_deliver(struct vc_sim *s, uint32_t from, uint32_t to);
void vc_sim_crash(struct vc_sim *s, uint32_t j);
void vc_sim_detect(struct vc_sim *s, uint32_t j, uint32_t c);
void vc_sim_send(struct vc_sim *s, uint32_t sender);  /* one round */
void vc_sim_arrive_all(struct vc_sim *s);  /* every sent round everywhere */
void vc_sim_drop(struct vc_sim *s, uint32_t from, uint32_t to); /* lose
						what is in flight on a link */
bool vc_sim_adopted(const struct vc_sim *s, uint32_t j);

/* Run fairly, without new faults, until every live member installed or
 * stopped (or `budget` events passed); then judge the run. Returns the
 * number of violations. */
uint32_t vc_sim_finish(struct vc_sim *s, uint64_t budget,
		       struct vc_sim_result *r);

/* One random schedule from o->seed: members, traffic, faults at random
 * steps, then vc_sim_finish. Returns the number of violations. */
uint32_t vc_sim_run(const struct vc_sim_opts *o, struct vc_sim_result *r);

#endif /* SQUALL_TESTS_VC_SIM_H */
