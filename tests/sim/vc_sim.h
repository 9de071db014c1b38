/*
 * vc_sim.h - a deterministic simulator of squall's view change and close:
 * 3 to 7 members running the real view-change core (group/vcore.c), the
 * real close agreements (group/agree.c), SMC's real order engine
 * (smc/order.c) and RDMC's real transfer plans (rdmc/plan.c) over a
 * simulated SST and data plane, with faults at any step, judged by the virtual-synchrony checker
 * (tests/vsync) and by the simulator's own checks of what the checker
 * cannot see (a member delivering a message it does not hold, or a trim
 * holding a large message whose payload it lacks, members installing
 * different next views, a change or a close that never ends, a leaver's
 * messages missing where the group went on or a leaver delivering what
 * the group did not, flushers that disagree).
 *
 * What is simulated, and how:
 * - The SST: every member's row is pushed to every peer over a per-link
 *   FIFO; each push carries every segment and each segment of a push may
 *   arrive torn (then the peer keeps the copy it had: validated rows,
 *   sst/seal.h) and is taken on a later look. The segments are those
 *   group.c declares: the header (suspicions); the SMC received counters;
 *   the delivered counts per sender; sent with closing; the view-change
 *   columns (have, ack, trim, trim_adds, trim_mask); the join requests. A
 *   push has landed (its write completed, which its sender learns) once
 *   the peer took all of it.
 * - The data plane: each sender's SMC records reach each member in
 *   order, whole, with delays, into that member's smc_order engine; a
 *   record is a message (one round) or a null record an idle sender sends
 *   by SMC's rule (smc_order_null_rounds) so that the rounds it holds of
 *   the others can be delivered, covering several rounds at once as SMC
 *   sends it. A sender whose links go down reaches some members with its
 *   last records and not others (ragged ends).
 * - Large messages (a fifth of the messages), as group/order.c sends
 *   them: the round is the announcement, the payload goes by RDMC in 1 to
 *   4 blocks. A receiver joins the transfer (READY) when SMC passes the
 *   announcement there, or, now and then, cannot lease a buffer and says
 *   so. Each member then makes the block writes of its plan
 *   (rdmc_plan_build, binomial pipeline, ranks counted from the sender)
 *   in plan order, each once it holds the block and its target is READY
 *   (the sender first waits for every answer); a write on a link that is
 *   down is lost, so a relay cut off starves the ranks below it. A
 *   receiver holding every block tells the sender (HAVE, held back when
 *   wedged); once every member did, each learns so at a later event of
 *   its own (the stable callback, over the sender's link). A refused
 *   transfer is cancelled as rdmc/engine.c does it: the sender tells
 *   each receiver, each one that learns it acknowledges (not when
 *   wedged), and once all did the sender tells each that every member
 *   knows; only then is it passed over (delivered nowhere, counted as
 *   delivered, its sender owed nothing). Transfers go on while members
 *   are wedged, and at a member leaving alone until it is gone.
 * - Full send queues: now and then a member posts nothing for a while
 *   (its pushes, SMC records and block writes wait).
 * - Normal delivery: the positions SMC's engine passes
 *   (smc_order_frontier_here over the received counters the member has,
 *   each sender credited with its rounds held here, and the member's own
 *   null records; smc_order_collect), then the delivery queue: a large
 *   message is delivered once this member learned that every member
 *   holds its payload, and everything after it waits. It stops at the
 *   wedge, and from the wedge on a member publishes neither counter (its
 *   pass stops at the view step, as group_pass does). A member leaving alone
 *   delivers nothing more from the moment it says so. What a member
 *   publishes as have (group_have) is all of its own rounds and, of
 *   each other sender, the rounds it received but never past the first
 *   large message whose payload is not here and which it does not know
 *   to be cancelled; a wedged member publishes
 *   it again when payloads land. The trim is delivered as the group
 *   delivers it: what waits in the delivery queue below each sender's
 *   trim, then what smc_order_collect_trim passes, a large message only
 *   with its payload here (or known cancelled). Nulls are passed over,
 *   not delivered, and not counted.
 * - Closes, as group_close drives agree.h: a closer stops sending and
 *   publishes closing = 1 with the messages it sent. Each of its steps
 *   takes a turn of group_close's waits on the rows it has, before or
 *   after the step's view pass (they run on different threads): flushed
 *   (ag_flushed) makes it publish closing = 2 and wait for ag_all_flushed;
 *   otherwise ag_own_flushed held through a grace time makes it publish
 *   VC_CLOSE_LEFT and wait for ag_leave_seen. Past either it is quiet (no
 *   view pass); when its wait is over, or it is cut off while waiting, its
 *   group_close returns 0: it ends closed and its links go down. Closes
 *   come at random steps: one member, several, all of them at once (the
 *   flush path), and now and then one in the middle of a view change.
 * - Joins: a join request (the .cfg index bit of a joiner outside the
 *   view) appears in a live member's row at random steps; the leader
 *   folds what it sees into its trim's trim_adds. Joiners are not
 *   simulated; the next view lists them.
 * - Failures: crashes at any step, and on purpose right after a member
 *   adopts a trim, publishes one, wedges or publishes a new close state;
 *   partitions into two sides; detection after a random delay (the
 *   heartbeat timeout), suspicions gossiped through the rows (never
 *   believed from a suspected member). A member that installs the next
 *   view or closes drops its old connections: the others see that as a
 *   failure unless the core knows better.
 *
 * One schedule covers one view change (or one close of everybody),
 * possibly with several failures inside it, and with vc_sim_opts.views
 * it goes on into the views the members install (a schedule of its own
 * in each): the next view's members are the trim's survivors, in rank
 * order, then the joiners it adds, as fresh members whose history starts
 * there; a survivor that adopted the trim but did not install is dead
 * from the start (the others suspect it in time, as a survivor that does
 * not come back); each survivor first sends again, in order, its
 * messages the trim left out, under their numbers (a large one large
 * again, and leased by every receiver: a refusal of a message sent again
 * is not modelled). The history records a message sent again as sent in
 * the view it goes again in, as a view whose members install the next
 * one records only the sends its trim holds: the checker's rule for a
 * message delivered first in a later view than its send is exercised by
 * the members' logs in the VM tests, not here. Everything is drawn from
 * one seeded stream, so a seed replays exactly (its first view the same
 * whatever views says); vc_sim_opts.trace prints each event.
 */
#ifndef SQUALL_TESTS_VC_SIM_H
#define SQUALL_TESTS_VC_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct vc_sim_opts {
	uint64_t seed;
	uint32_t nmin, nmax;     /* members, drawn from [nmin, nmax] */
	/* Planted bugs, to show the simulator catches them. Deliver the
	 * trim as soon as it is adopted (before the others can be sure to
	 * agree on it), as group/ once did: */
	bool plant_early_delivery;
	/* A closer leaves alone at once, without waiting for
	 * ag_own_flushed (its messages delivered everywhere): */
	bool plant_leave_early;
	/* A member leaving alone keeps delivering after it published
	 * VC_CLOSE_LEFT, as group/ once did: */
	bool plant_leaver_delivers;
	/* A wedged member still tells a large message's sender that it
	 * holds the payload (RDMC's HAVE), as group/ once did: members not
	 * yet wedged then deliver it past the trim the wedged one's have
	 * decides: */
	bool plant_have_while_wedged;
	/* Every member passes over a cancelled large message (a receiver
	 * could not lease it) as soon as it knows it is cancelled, without
	 * waiting until every member knows, as rdmc/ once did: */
	bool plant_abort_one_phase;
	/* Across views: a survivor does not send again the first of its
	 * messages the trim left out (and sends the rest under their
	 * numbers), as a resend that lost one would. */
	bool plant_skip_resend;
	/* Small messages only, with the event mix of the simulator before
	 * it modelled large messages: seeds found then replay exactly. */
	bool small_only;
	/* Views to simulate, at most (0 or 1: the first alone): while the
	 * members of one install the next, the run goes on in it. */
	uint32_t views;
	FILE *trace;             /* each event, or NULL */
};

struct vc_sim_result {
	uint32_t n;              /* members of the first view */
	uint32_t views;          /* views simulated */
	uint64_t events;
	uint32_t crashes, partitions, closes, joins;
	uint32_t installed, stopped, crashed;
	uint32_t left, flushed;  /* closed alone, closed flushing together */
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
void vc_sim_send(struct vc_sim *s, uint32_t sender);  /* one message */
void vc_sim_send_large(struct vc_sim *s, uint32_t sender);
/* One step of sender's first transfer not over at member k: k's next
 * block write (its plan's), or k learns that every member holds it, or a
 * step of its cancellation. False when it cannot move yet. */
bool vc_sim_rdmc(struct vc_sim *s, uint32_t k, uint32_t sender);
/* The same, block writes only. */
bool vc_sim_rdmc_write(struct vc_sim *s, uint32_t k, uint32_t sender);
void vc_sim_arrive_all(struct vc_sim *s);  /* every sent round everywhere */
void vc_sim_drop(struct vc_sim *s, uint32_t from, uint32_t to); /* lose
						what is in flight on a link */
void vc_sim_close(struct vc_sim *s, uint32_t j);  /* group_close begins */
void vc_sim_join(struct vc_sim *s, uint32_t j, uint32_t index); /* a join
			request for .cfg index `index` (>= n) reaches j */
bool vc_sim_adopted(const struct vc_sim *s, uint32_t j);
/* Member j cannot lease a buffer for the next large message SMC passes
 * there (its READY refuses it). */
void vc_sim_refuse(struct vc_sim *s, uint32_t j);
/* Member j's send queues are full for `events` events: nothing it posts
 * (pushes, SMC records, RDMC writes) goes out until then. */
void vc_sim_sq_full(struct vc_sim *s, uint32_t j, uint64_t events);

/* Run fairly, without new faults, until every member installed, closed,
 * stopped or crashed (or `budget` events passed); then judge the run.
 * Returns the number of violations. */
uint32_t vc_sim_finish(struct vc_sim *s, uint64_t budget,
		       struct vc_sim_result *r);

/* One random schedule from o->seed: members, traffic, closes, joins and
 * faults at random steps, then vc_sim_finish. Returns the number of
 * violations. */
uint32_t vc_sim_run(const struct vc_sim_opts *o, struct vc_sim_result *r);

#endif /* SQUALL_TESTS_VC_SIM_H */
