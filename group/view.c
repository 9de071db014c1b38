/*
 * view.c - view changes: when members fail, the survivors agree on what
 * every one of them delivers from the ending view and go on in a new one.
 *
 * The decisions are vcore.c's (the protocol is described in vcore.h):
 * group_view_pass feeds it, on the progress thread, the view-change
 * columns of every member's row and what this member holds, and carries
 * out what it says: wedge the SMC core, publish have and ack (and the
 * adopted trim) in one push, deliver the trim, hand the install to the
 * view thread, or stop without a majority. The view thread then tears the
 * view down and builds the next one (epoch.c): connections, SST, rings
 * and RDMC, epoch + 1; own messages past the trim are sent again there,
 * in order, before any new send (send.c, own.c). A member that died after
 * the trim was agreed is missing when the next view connects
 * (group.view_timeout_ms), and that view's first change drops it.
 *
 * The progress pass is here too (group_pass, the SST's on_pass hook): the
 * view change comes first in every pass, and while one is under way the
 * normal sends and delivery (order.c) wait.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "group/group_int.h"
#include "rdma/hook.h"

/* ---- the agreement, on the progress thread ---------------------------------- */

static uint64_t row(struct group *g, uint32_t j, enum group_col c)
{
	return sst_get(g->v.t, j, (uint32_t)g->v.col[c]);
}

static uint64_t row_elem(struct group *g, uint32_t j, enum group_col c,
			 uint32_t i)
{
	return sst_get_elem(g->v.t, j, (uint32_t)g->v.col[c], i);
}

/* The ids in mask, each with why this member lost it when it knows
 * (the first suspicion's reason): "1 (no heartbeat from member 1 for
 * 2040 ms), 2 (suspected by member 1)". */
static void list_ranks(struct group *g, uint64_t mask, char *buf, size_t size)
{
	size_t o = 0;

	buf[0] = '\0';
	for (uint32_t j = 0; j < g->v.n && o + 12 < size; j++) {
		const char *why = g->v.suspect_why[j];

		if (!(mask >> j & 1))
			continue;
		o += (size_t)snprintf(buf + o, size - o, "%s%u%s%s%s",
				      o ? ", " : "", g->v.ids[j],
				      why[0] ? " (" : "", why, why[0] ? ")" : "");
		if (o >= size)
			break;
	}
}

static void stop(struct group *g)
{
	group_call_failure(g, g->my_id, g->fail_msg);
	group_lock(g);
	pthread_cond_broadcast(&g->vcond);
	group_unlock(g);
}

static void wedge(struct group *g)
{
	g->v.vc_start_ms = group_now_ms();
	atomic_store(&g->wedged, true);
	smc_core_wedge(g->v.core);
	/* Large messages: no HAVE from now on (rdmc.h), as SMC publishes no
	 * received counters once wedged. */
	if (g->v.e)
		rdmc_engine_wedge(g->v.e);
	atomic_fetch_add(&g->st_wedges, 1);
}

/* Whether this member leads the change of the adopted trim (no lower
 * rank survives it). */
static bool leads(const struct group *g)
{
	for (uint32_t j = 0; j < g->v.me; j++)
		if (!(g->v.vc.tmask >> j & 1))
			return false;
	return true;
}

/* A trim is adopted: the failure upcall for each member it removes that
 * did not leave in order (members merely suspected, e.g. installing the
 * next view already, are not reported). */
static void report_removed(struct group *g)
{
	for (uint32_t j = 0; j < g->v.n; j++) {
		if (j == g->v.me || !(g->v.vc.tmask >> j & 1) ||
		    g->v.vc_rows[j].closing == GROUP_CLOSE_LEFT)
			continue;
		group_call_failure(g, g->v.ids[j], g->v.suspect_why[j][0] ?
				   g->v.suspect_why[j] : "removed by the view "
				   "change (suspected by another member)");
	}
}

/* The view-change columns of every member's row, as vcore reads them;
 * the arrays only while a change needs them. */
static void read_rows(struct group *g, bool arrays)
{
	for (uint32_t j = 0; j < g->v.n; j++) {
		struct vc_row *r = &g->v.vc_rows[j];

		r->closing = row(g, j, COL_CLOSING);
		r->ack = row(g, j, COL_ACK);
		r->join = row(g, j, COL_JOIN);
		r->tmask = row(g, j, COL_TMASK);
		r->tadd = row(g, j, COL_TADD);
		if (!arrays)
			continue;
		for (uint32_t s = 0; s < g->v.n; s++) {
			r->have[s] = row_elem(g, j, COL_HAVE, s);
			r->trim[s] = row_elem(g, j, COL_TRIM, s);
		}
	}
}

/* The group stopped: once a survivor's last word (its trim, which
 * removes this member) has come, or after twice the suspicion timeout
 * without one, tell the application which of its sends are lost. Not
 * while the view thread installs a view: the own messages to send again
 * are its own then, and it may still hand them to the core (it stops at
 * the failure: install()). */
static void unsent_pass(struct group *g)
{
	uint64_t now;

	if (atomic_load(&g->unsent_done) || atomic_load(&g->installing))
		return;
	now = group_now_ms();
	if (!g->unsent_since)
		g->unsent_since = now;
	for (uint32_t j = 0; j < g->v.n; j++) {
		uint64_t tm = row(g, j, COL_TMASK);

		if (j == g->v.me || !tm || !((tm - 1) >> g->v.me & 1))
			continue;
		group_report_unsent(g, true, row_elem(g, j, COL_TRIM, g->v.me));
		atomic_store(&g->unsent_done, true);
		return;
	}
	if (now - g->unsent_since < 2ull * g->cfg.sst_suspect_timeout_ms)
		return;
	group_report_unsent(g, false, 0);
	atomic_store(&g->unsent_done, true);
}

/* Drive the view-change core (vcore.c) from the SST: its inputs from the
 * rows, its actions onto the row, the core, the delivery and the view
 * thread. Progress thread. */
bool group_view_pass(struct group *g, bool *work)
{
	uint32_t ch = (uint32_t)g->v.col[COL_HAVE];
	uint32_t ct = (uint32_t)g->v.col[COL_TRIM];
	uint32_t ctm = (uint32_t)g->v.col[COL_TMASK];
	uint64_t have[GROUP_CONFIG_MAX_MEMBERS];
	enum vc_phase was = g->v.vc.phase;
	bool fresh = false;
	struct vc_in in = {
		.n = g->v.n,
		.me = g->v.me,
		.inview = group_cfg_bits(g, &g->vcfg),
		.closing = atomic_load(&g->close_state) != 0,
		.installing = atomic_load(&g->installing),
		.rows = g->v.vc_rows,
		.have = have,
	};
	struct vc_out out;

	group_assert_progress(g);
	if (atomic_load(&g->failed)) {
		/* Nothing is delivered or sent from here on: a send waiting
		 * for room in the window (the view thread's, sending again)
		 * would wait for ever. */
		if (g->v.core && !smc_core_error(g->v.core))
			smc_core_wedge(g->v.core);
		/* Peers that would wait for this member in a view that has it
		 * (a trim it was in) are told it stopped, and go on without
		 * it. */
		rdma_sq_stop(g->v.node);
		unsent_pass(g);
		return true;
	}
	if (atomic_load(&g->quiet))
		return false;
	for (uint32_t j = 0; j < g->v.n; j++)
		if (j != g->v.me && sst_suspected(g->v.t, j))
			in.suspected |= 1ull << j;
	/* Whether the push of my adoption landed at every peer (asked only
	 * once there is one: the question may push to account for quiet
	 * writes). */
	in.landed = g->v.vc.adopted && sst_fenced(g->v.t, g->v.vc_fence);
	read_rows(g, false);
	if (vc_needs_have(&in, &g->v.vc)) {
		read_rows(g, true);
		group_have(g, have);
	}
	if (!vc_step(&in, &g->v.vc, &out))
		return false;
	if (was != VC_INSTALL)
		*work = true;
	if (out.acts & VC_ACT_WEDGE)
		wedge(g);
	if (out.acts & VC_ACT_STOP) {
		char gone[SQUALL_ERRMSG_MAX];

		/* The reasons last: what is cut at the message's end is the
		 * least needed. */
		list_ranks(g, out.lost, gone, sizeof(gone));
		/* A peer that refused a write of ours comes first: that is
		 * why the others cut this member off. */
		if (sst_refusal(g->v.t)[0])
			group_fail(g, -EPROTO, "%s; the others removed this "
				   "member from view %" PRIu64 " and it stops "
				   "(lost: %s)", sst_refusal(g->v.t),
				   g->vcfg.epoch, gone);
		else if (out.alive == 1)
			group_fail(g, -ENOTCONN, "cut off from every other "
				   "member of view %" PRIu64 ": they may go on "
				   "without this member if a majority of them "
				   "can, and this member stops (lost: %s)",
				   g->vcfg.epoch, gone);
		else
			group_fail(g, -ENOTCONN, "no majority: only %u of the "
				   "%u members that count in view %" PRIu64 " (%u "
				   "members; those leaving or already dropped "
				   "by the change under way count on neither "
				   "side) are reachable; this member stops rather "
				   "than go on without a majority (lost: %s)",
				   out.alive, out.base, g->vcfg.epoch, g->v.n,
				   gone);
		/* The others count it gone at once: one that adopted a trim
		 * must not wait for it. */
		sst_leave(g->v.t);
		stop(g);
		return true;
	}
	if (out.acts & VC_ACT_PUBLISH) {
		/* Pushed only when it says something new: a push every pass
		 * would keep writes in flight for ever. */
		for (uint32_t s = 0; s < g->v.n; s++)
			if (sst_get_elem(g->v.t, g->v.me, ch, s) != have[s]) {
				sst_set_elem(g->v.t, ch, s, have[s]);
				fresh = true;
			}
		if (sst_get(g->v.t, g->v.me, (uint32_t)g->v.col[COL_ACK]) !=
		    out.ack) {
			sst_set(g->v.t, (uint32_t)g->v.col[COL_ACK], out.ack);
			fresh = true;
		}
	}
	if (out.acts & VC_ACT_ADOPT) {
		report_removed(g);
		atomic_fetch_add(&g->st_commits, 1);
		g->v.vc_adopt_ms = group_now_ms();
		for (uint32_t s = 0; s < g->v.n; s++)
			sst_set_elem(g->v.t, ct, s, g->v.vc.trim[s]);
		sst_set(g->v.t, (uint32_t)g->v.col[COL_TADD], g->v.vc.tadd);
		sst_set(g->v.t, ctm, g->v.vc.tmask + 1);
		fresh = true;
	}
	if (fresh)
		sst_push_cols(g->v.t, ch, ctm - ch + 1);
	/* A last word to the members the trim removes: one only cut off
	 * (stopped, or on the other side) learns from it which of its
	 * messages the survivors deliver. */
	if (out.acts & VC_ACT_ADOPT)
		for (uint32_t j = 0; j < g->v.n; j++)
			if (j != g->v.me && g->v.vc.tmask >> j & 1)
				sst_push_cols_to(g->v.t, j, ch, ctm - ch + 1);
	/* What landing the install waits for. */
	if (out.acts & VC_ACT_ADOPT) {
		sst_fence(g->v.t, g->v.vc_fence);
		squall_hook(leads(g) ? "trim_published" : "trim_adopted");
		if (!leads(g) && squall_hook_fail("stop_adopted")) {
			group_fail(g, -ENOTCONN, "test hook stop_adopted: this "
				   "member stops after adopting the trim of "
				   "view %" PRIu64, g->vcfg.epoch);
			sst_leave(g->v.t);
			stop(g);
			return true;
		}
	}
	if (atomic_load(&g->failed))
		return true;
	if (out.acts & VC_ACT_DELIVER)
		group_deliver_trim(g);
	if (out.acts & VC_ACT_INSTALL) {
		group_lock(g);
		g->install_due = true;
		pthread_cond_broadcast(&g->vcond);
		group_unlock(g);
	}
	return true;
}

/* ---- the progress pass ------------------------------------------------------ */

/* The SST's on_pass hook: once the view is live, the view change first;
 * while there is none, the sends and the delivery (order.c). */
bool group_pass(void *arg)
{
	struct group *g = arg;
	bool work = false;

	group_progress_enter(g);
	/* Until every peer's ring is known, no SMC write (a null record
	 * included) may go out; arrivals wait in the core meanwhile. */
	if (!atomic_load_explicit(&g->ready, memory_order_acquire))
		return false;
	if (group_early_p2p_deliver(g))
		work = true;
	if (group_view_pass(g, &work))
		return work;
	group_order_pass(g, &work);
	return work;
}

/* ---- installing the next view, on the view thread ---------------------------- */

/* The view upcall, with the current view: from the start (group.c) for
 * the first view, from install for every later one, before anything of
 * it is delivered. */
void group_call_view(struct group *g)
{
	struct group_view v = {
		.epoch = g->vcfg.epoch,
		.nmembers = g->v.n,
		.members = g->v.ids,
		.my_id = g->my_id,
		.my_rank = g->v.me,
	};

	if (g->cb.view) {
		group_upcall_begin(g);
		g->cb.view(g->ctx, &v);
		group_upcall_end(g);
	}
}

/* Of the survivors (.cfg bits), those whose hello in this view said wire
 * 1.1 or later: their refusals carry a hello, so only theirs may say,
 * without one, that nothing listens at their address any more (a 1.0
 * member refuses some requests of a live member without a hello). */
static uint64_t hello_refusers(struct group *g, uint64_t survivors)
{
	uint64_t bits = 0;

	for (uint32_t i = 0; g->v.node && i < g->cfg.nmembers; i++)
		if ((survivors >> i & 1) &&
		    rdma_sq_peer_refuses_with_hello(g->v.node,
						    g->cfg.members[i].id))
			bits |= 1ull << i;
	return bits;
}

#ifdef SQUALL_TEST_HOOKS
/* Test hook resend_stop: the group fails, as a local failure on the
 * progress thread would (out of memory, a peer's bad announcement), while
 * the view thread holds the first own message it sends again; the view
 * thread goes on once the application was told what it lost, or after
 * 10 s. */
static void hook_resend_stop(struct group *g)
{
	struct timespec tick = { 0, 10 * 1000000L };

	if (!squall_hook_fail("resend_stop"))
		return;
	group_fail(g, -ECANCELED, "test hook resend_stop: the group stops "
		   "while the view thread sends its messages again");
	for (int i = 0; i < 1000 && !atomic_load(&g->unsent_done); i++)
		nanosleep(&tick, NULL);
}
#else
static inline void hook_resend_stop(struct group *g)
{
	(void)g;
}
#endif

/* The view thread's part of a view change: answer the joiners the trim
 * adds, tear the view down and build the next one under epoch_lock
 * (write), then the view upcall and the own messages past the trim, sent
 * again before any new send. */
static void install(struct group *g)
{
	struct group_config nv = g->vcfg;
	struct squall_error err = { 0 };
	uint64_t mask = g->v.vc.tmask, end = vc_trim_end(g->v.vc.trim, g->v.n);
	uint64_t keep = group_cfg_bits(g, &g->vcfg), adds = g->v.vc.tadd;
	uint64_t vc_start = g->v.vc_start_ms, resent = 0;
	uint64_t adopted = g->v.vc_adopt_ms, t0 = group_now_ms(), t1, t2;
	uint64_t listeners;
	/* The trim is delivered (VC_INSTALL): the progress thread adds no
	 * more to it. */
	uint64_t upcall_ns = g->v.trim_upcall_ns;
	uint32_t ids[GROUP_CONFIG_MAX_MEMBERS], n = 0;
	struct group_resend *rs;
	int r;

	group_assert_view_thread(g);
	for (uint32_t j = 0; j < g->v.n; j++)
		if (mask >> j & 1)
			keep &= ~(1ull << group_config_member_index(&g->cfg,
								 g->v.ids[j]));
	/* The next view: survivors and joiners, in .cfg order. */
	for (uint32_t i = 0; i < g->cfg.nmembers; i++)
		if ((keep | adds) >> i & 1) {
			ids[n] = g->cfg.members[i].id;
			nv.members[n++] = g->cfg.members[i];
		}
	nv.nmembers = n;
	nv.epoch++;
	nv.connect_timeout_ms = g->cfg.view_timeout_ms;
	/* The survivors keep their listeners: nothing listening at one's
	 * address in the next view means it is gone, where its refusals
	 * carry a hello. Joiners start theirs. */
	listeners = hello_refusers(g, keep);
	/* Joiners learn the view (and get the state) before anyone
	 * reconnects: they connect in it with the others. They number
	 * positions from where the trim ends, and count barriers from the
	 * fewest any survivor entered (so their next barrier is the one
	 * the slowest survivor enters next). They are told which survivors
	 * keep their listeners (this member too), so that one that dies
	 * meanwhile is found gone by them as by the others. */
	if (adds) {
		uint64_t barriers = atomic_load(&g->barriers);

		for (uint32_t j = 0; j < g->v.n; j++)
			if (!(mask >> j & 1) &&
			    row(g, j, COL_BARRIER) < barriers)
				barriers = row(g, j, COL_BARRIER);
		group_join_answer(g, nv.epoch, ids, n, g->seq_base + end,
				  barriers, listeners | 1ull <<
				  group_config_member_index(&g->cfg, g->my_id));
	}
	group_epoch_wrlock(g);
	atomic_store(&g->installing, true);
	g->kept_listeners = listeners;
	r = group_epoch_teardown(g, true, &err);
	t1 = group_now_ms();
	squall_hook("installing");
	group_lock(g);
	g->vcfg = nv;
	g->seq_base += end;
	group_unlock(g);
	if (!r)
		r = group_epoch_build(g, &err);
	t2 = group_now_ms();
	if (r) {
		group_fail(g, r, "installing view %" PRIu64 " failed: %s",
			   nv.epoch, err.msg);
		/* The others install this view with this member in it. A
		 * listener kept for it that no node took over would hold
		 * their requests unanswered; closed, it refuses them, and
		 * nothing listening at this member's address tells them it
		 * is gone. A node that took it over says it stopped. */
		rdma_sq_listener_free(g->listener);
		g->listener = NULL;
		rdma_sq_stop(g->v.node);
		/* No progress pass of this view runs (it is not ready):
		 * what was to be sent again is told lost here. */
		group_report_resends_lost(g);
		atomic_store(&g->installing, false);
		group_epoch_wrunlock(g);
		stop(g);
		return;
	}
	/* The view upcall comes before anything of the view is delivered;
	 * then own messages past the trim go again, before any new send. */
	group_call_view(g);
	atomic_store_explicit(&g->ready, true, memory_order_release);
	sst_wake(g->v.t);
	g->sending_again = true;
	while ((rs = g->resend_head)) {
		hook_resend_stop(g);
		/* A failed group sends nothing more: what is left is told
		 * lost once the install is over (unsent_pass). */
		if (atomic_load(&g->failed))
			break;
		if (group_resend(g, rs, &err))
			break;
		g->resend_head = rs->next;
		free(rs);
		resent++;
	}
	g->sending_again = false;
	/* A view that is ending already (a survivor did not come back)
	 * leaves the rest to the next one; a failed group, to the report
	 * of what it lost. */
	group_resend_defer(g);
	atomic_fetch_add(&g->st_resent, resent);
	atomic_store(&g->st_vc_ms, group_now_ms() - vc_start);
	atomic_store(&g->st_vc_agree_ms, adopted - vc_start);
	atomic_store(&g->st_vc_deliver_ms, t0 - adopted);
	atomic_store(&g->st_vc_teardown_ms, t1 - t0);
	atomic_store(&g->st_vc_build_ms, t2 - t1);
	atomic_store(&g->st_vc_connect_ms, g->v.connect_ms);
	atomic_store(&g->st_vc_upcall_ms, upcall_ns / 1000000u);
	atomic_store(&g->installing, false);
	/* Sends go on, unless the next change already wedged this view
	 * (the core refuses them then all the same). */
	if (!smc_core_error(g->v.core))
		atomic_store(&g->wedged, false);
	group_epoch_wrunlock(g);
	sst_wake(g->v.t);
	group_lock(g);
	pthread_cond_broadcast(&g->room);
	group_unlock(g);
}

static void *view_main(void *arg)
{
	struct group *g = arg;

	group_lock(g);
	group_assert_view_thread(g);
	for (;;) {
		while (!g->stopping && !atomic_load(&g->failed) &&
		       !g->install_due) {
			struct timespec ts;

			/* Between view changes: answer join requests. */
			group_unlock(g);
			group_join_poll(g);
			group_lock(g);
			if (g->stopping || g->install_due)
				break;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 50 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			group_cond_timedwait(&g->vcond, g, &ts);
		}
		if (g->stopping || atomic_load(&g->failed))
			break;
		g->install_due = false;
		group_unlock(g);
		install(g);
		group_lock(g);
	}
	group_unlock(g);
	return NULL;
}

int group_view_start(struct group *g, struct squall_error *err)
{
	int r;

	/* The thread takes the lock first: by then it is recorded. */
	group_lock(g);
	r = pthread_create(&g->view_thread, NULL, view_main, g);
	if (!r)
		atomic_store(&g->view_thread_on, true);
	group_unlock(g);
	if (r)
		return squall_error_set(err, -r, "starting the view thread: %s",
					strerror(r));
	return 0;
}

void group_view_stop(struct group *g)
{
	if (!atomic_load(&g->view_thread_on))
		return;
	group_lock(g);
	g->stopping = true;
	pthread_cond_broadcast(&g->vcond);
	group_unlock(g);
	pthread_join(g->view_thread, NULL);
	atomic_store(&g->view_thread_on, false);
}
