/*
 * close.c - the agreements over the SST: barrier and close. Each member
 * publishes a counter (barriers entered, ordered messages sent, its close
 * state) in its row, and waits until the others' rows say what it waits
 * for; the decisions on the rows are agree.c's. The waits run in the
 * current view under epoch_lock (read), a turn at a time, so a view
 * change between turns is fine: the next view's SST gets the same
 * columns again (group_epoch_build publishes them at once).
 */
#include <errno.h>

#include "group/agree.h"
#include "group/group_int.h"

/* Wait until ok(g) holds, a member fails, or timeout_ms passes; every
 * turn, tick(g) (may be NULL) publishes what the view needs. Both run in
 * the current view (a view change between turns is fine: the next view's
 * SST gets the same columns again). */
static int wait_until(struct group *g, bool (*ok)(struct group *, uint64_t),
		      uint64_t arg, void (*tick)(struct group *), int timeout_ms,
		      bool tolerate_failure, const char *what,
		      struct squall_error *err)
{
	uint64_t until = timeout_ms >= 0 ? group_now_ms() + (uint64_t)timeout_ms : 0;
	int r;

	for (;;) {
		bool done;

		group_epoch_rdlock(g);
		if (!g->v.t) {
			/* No view to wait in: building the last one failed
			 * (the group failed with it). */
			group_epoch_rdunlock(g);
			r = group_failed(g, err);
			return r ? r : squall_error_set(err, -ENOTCONN, "member "
				"%u: %s: the group has no view", g->my_id, what);
		}
		if (tick)
			tick(g);
		done = ok(g, arg);
		group_epoch_rdunlock(g);
		if (done)
			return 0;
		if (!tolerate_failure && (r = group_failed(g, err)))
			return r;
		if (until && group_now_ms() >= until)
			return squall_error_set(err, -ETIMEDOUT, "member %u: %s "
				"did not complete within %d ms", g->my_id, what,
				timeout_ms);
		group_nap();
	}
}

static uint64_t col_of(struct group *g, uint32_t rank, enum group_col c)
{
	return sst_get(g->v.t, rank, (uint32_t)g->v.col[c]);
}

/* Publish the barrier count and the close state in the current view's
 * SST when they changed (or the view did). Any thread in the view:
 * application threads waiting in group_barrier or group_close, and the
 * thread that builds a view (group_epoch_build). */
void group_publish_agreements(struct group *g)
{
	uint32_t cs = (uint32_t)g->v.col[COL_SENT];
	uint32_t cc = (uint32_t)g->v.col[COL_CLOSING];
	uint64_t sent = atomic_load(&g->v.sent_epoch);
	uint64_t barriers = atomic_load(&g->barriers);
	uint64_t close_state = atomic_load(&g->close_state);

	group_assert_in_view(g);
	pthread_mutex_lock(&g->agree_lock);
	if (g->pub_epoch == g->vcfg.epoch + 1 && g->pub_barriers == barriers &&
	    g->pub_close == close_state && g->pub_sent == sent) {
		pthread_mutex_unlock(&g->agree_lock);
		return;
	}
	g->pub_epoch = g->vcfg.epoch + 1;
	g->pub_barriers = barriers;
	g->pub_close = close_state;
	g->pub_sent = sent;
	sst_set(g->v.t, (uint32_t)g->v.col[COL_BARRIER], barriers);
	if (close_state) {
		sst_set(g->v.t, cs, sent);
		sst_set(g->v.t, cc, close_state);
	}
	sst_push_cols(g->v.t, cs, cc - cs + 1);
	pthread_mutex_unlock(&g->agree_lock);
}

/* Every member of the view entered barrier number `target`. */
static bool barrier_reached(struct group *g, uint64_t target)
{
	for (uint32_t j = 0; j < g->v.n; j++)
		if (col_of(g, j, COL_BARRIER) < target)
			return false;
	return true;
}

int group_barrier(struct group *g, int timeout_ms, struct squall_error *err)
{
	uint64_t target;
	int r;

	squall_error_clear(err);
	if ((r = group_failed(g, err)))
		return r;
	/* Each call is one barrier, whichever thread makes it. */
	target = atomic_fetch_add(&g->barriers, 1) + 1;
	return wait_until(g, barrier_reached, target, group_publish_agreements,
			  timeout_ms, false, "the barrier", err);
}

/* The close agreements' inputs (agree.h) from the view's rows. */
struct ag_view {
	struct ag_row rows[GROUP_CONFIG_MAX_MEMBERS];
	uint64_t done[GROUP_CONFIG_MAX_MEMBERS * GROUP_CONFIG_MAX_MEMBERS];
	struct ag_in in;
};

static const struct ag_in *ag_read(struct group *g, struct ag_view *v)
{
	uint32_t cd = (uint32_t)g->v.col[COL_DONE];

	for (uint32_t j = 0; j < g->v.n; j++) {
		uint64_t *done = v->done + (size_t)j * g->v.n;

		for (uint32_t k = 0; k < g->v.n; k++)
			done[k] = sst_get_elem(g->v.t, j, cd, k);
		v->rows[j] = (struct ag_row){
			.closing = col_of(g, j, COL_CLOSING),
			.sent = col_of(g, j, COL_SENT),
			.ack = col_of(g, j, COL_ACK),
			.done = done,
			.suspected = j != g->v.me && sst_suspected(g->v.t, j),
		};
	}
	v->in = (struct ag_in){
		.n = g->v.n,
		.me = g->v.me,
		.rows = v->rows,
		.wedged = atomic_load(&g->wedged),
		.sent = atomic_load(&g->v.sent_epoch),
	};
	return &v->in;
}

static bool all_flushed(struct group *g, uint64_t unused)
{
	struct ag_view v;

	(void)unused;
	return ag_all_flushed(ag_read(g, &v));
}

/* Leaving alone (ag_own_flushed), after a grace time: members that
 * close at about the same time (after a barrier, or at the end of a
 * run) flush together rather than leave one by one. */
static bool own_flushed(struct group *g, const struct ag_in *in)
{
	uint64_t now = group_now_ms();

	if (!ag_own_flushed(in)) {
		g->leave_since = 0;
		return false;
	}
	if (!g->leave_since)
		g->leave_since = now;
	return now - g->leave_since >= GROUP_LEAVE_GRACE_MS +
				       2ull * g->cfg.sst_heartbeat_ms;
}

static bool flushed_or_alone(struct group *g, uint64_t unused)
{
	struct ag_view v;
	const struct ag_in *in = ag_read(g, &v);

	(void)unused;
	if (ag_flushed(in)) {
		g->leaving = false;
		return true;
	}
	g->leaving = own_flushed(g, in);
	return g->leaving;
}

static bool leave_seen(struct group *g, uint64_t unused)
{
	struct ag_view v;

	(void)unused;
	return ag_leave_seen(ag_read(g, &v));
}

static bool unsent_told(struct group *g, uint64_t unused)
{
	(void)unused;
	return atomic_load(&g->unsent_done);
}

int group_close_flush(struct group *g, int timeout_ms, struct squall_error *err)
{
	int r;

	atomic_store(&g->closing, true);
	atomic_store(&g->close_state, 1);
	r = wait_until(g, flushed_or_alone, 0, group_publish_agreements, timeout_ms,
		       false, "flushing the group", err);
	if (!r && g->leaving) {
		/* A clean leave: what this member sent is everywhere; the
		 * others install a view without it (view.c). It delivers
		 * nothing more from before it says so: what it delivered
		 * was stable before anyone wedged for its leave, so inside
		 * their trim; the rest is theirs to agree on. */
		atomic_store(&g->leave_stop, true);
		atomic_store(&g->quiet, true);
		atomic_store(&g->close_state, GROUP_CLOSE_LEFT);
		wait_until(g, leave_seen, 0, group_publish_agreements,
			   timeout_ms < 0 ? 10000 : timeout_ms, true,
			   "leaving", NULL);
	} else if (!r) {
		/* Everything is delivered everywhere: from now on members
		 * leave, and a peer disconnecting is no failure. */
		atomic_store(&g->quiet, true);
		atomic_store(&g->close_state, 2);
		wait_until(g, all_flushed, 0, group_publish_agreements,
			   timeout_ms < 0 ? 10000 : timeout_ms, true, "leaving",
			   NULL);
	}
	/* A stopped group tells the application which of its sends are
	 * lost (view.c, on the progress thread) before it goes. */
	if (atomic_load(&g->failed) && g->v.t)
		wait_until(g, unsent_told, 0, NULL,
			   (int)(2 * g->cfg.sst_suspect_timeout_ms + 1000), true,
			   "telling lost sends", NULL);
	return r;
}
