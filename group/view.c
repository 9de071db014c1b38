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
 * view down and builds the next one: connections, SST, rings and RDMC,
 * epoch + 1; own messages past the trim are sent again there, in order,
 * before any new send. A member that died after the trim was agreed is
 * missing when the next view connects (group.view_timeout_ms), and that
 * view's first change drops it.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/group_int.h"
#include "rdma/hook.h"

bool group_rdmc_lost(int status)
{
	/* A receiver that could not take the message fails it alike on
	 * every member; anything else is a connection cut short. */
	return !(status == -ENOMEM || status == -EMSGSIZE || status == -E2BIG ||
		 status == -EINVAL);
}

/* ---- own large messages ----------------------------------------------------- */

void group_own_add(struct group *g, struct group_own *o)
{
	pthread_mutex_lock(&g->lock);
	o->next = g->own;
	g->own = o;
	pthread_mutex_unlock(&g->lock);
}

static struct group_own **own_find(struct group *g, uint64_t msg_id)
{
	struct group_own **p;

	for (p = &g->own; *p; p = &(*p)->next)
		if ((*p)->msg_id == msg_id)
			break;
	return p;
}

bool group_own_take(struct group *g, uint64_t msg_id, struct buf_desc *d)
{
	struct group_own **p, *o;

	pthread_mutex_lock(&g->lock);
	p = own_find(g, msg_id);
	o = *p;
	if (o) {
		*p = o->next;
		*d = o->d;
	}
	pthread_mutex_unlock(&g->lock);
	free(o);
	return o != NULL;
}

bool group_own_find(struct group *g, uint64_t msg_id, struct buf_desc *d)
{
	struct group_own *o;

	pthread_mutex_lock(&g->lock);
	o = *own_find(g, msg_id);
	if (o)
		*d = o->d;
	pthread_mutex_unlock(&g->lock);
	return o != NULL;
}

/* ---- the agreement, on the progress thread ---------------------------------- */

static uint64_t row(struct group *g, uint32_t j, enum group_col c)
{
	return sst_get(g->t, j, (uint32_t)g->col[c]);
}

static uint64_t row_elem(struct group *g, uint32_t j, enum group_col c,
			 uint32_t i)
{
	return sst_get_elem(g->t, j, (uint32_t)g->col[c], i);
}

static void list_ranks(struct group *g, uint64_t mask, char *buf, size_t size)
{
	size_t o = 0;

	buf[0] = '\0';
	for (uint32_t j = 0; j < g->n && o + 12 < size; j++)
		if (mask >> j & 1)
			o += (size_t)snprintf(buf + o, size - o, "%s%u",
					      o ? ", " : "", g->ids[j]);
}

static void stop(struct group *g)
{
	if (g->cb.failure)
		g->cb.failure(g->ctx, g->my_id, g->fail_msg);
	pthread_mutex_lock(&g->lock);
	pthread_cond_broadcast(&g->vcond);
	pthread_mutex_unlock(&g->lock);
}

static void wedge(struct group *g)
{
	g->vc_start_ms = group_now_ms();
	atomic_store(&g->wedged, true);
	smc_core_wedge(g->core);
	atomic_fetch_add(&g->st_wedges, 1);
}

/* Whether this member leads the change of the adopted trim (no lower
 * rank survives it). */
static bool leads(const struct group *g)
{
	for (uint32_t j = 0; j < g->me; j++)
		if (!(g->vc.tmask >> j & 1))
			return false;
	return true;
}

/* A trim is adopted: the failure upcall for each member it removes that
 * did not leave in order (members merely suspected, e.g. installing the
 * next view already, are not reported). */
static void report_removed(struct group *g)
{
	for (uint32_t j = 0; j < g->n; j++) {
		if (j == g->me || !(g->vc.tmask >> j & 1) ||
		    g->vc_rows[j].closing == GROUP_CLOSE_LEFT || !g->cb.failure)
			continue;
		g->cb.failure(g->ctx, g->ids[j], g->suspect_why[j][0] ?
			      g->suspect_why[j] : "removed by the view change "
			      "(suspected by another member)");
	}
}

/* The view-change columns of every member's row, as vcore reads them;
 * the arrays only while a change needs them. */
static void read_rows(struct group *g, bool arrays)
{
	for (uint32_t j = 0; j < g->n; j++) {
		struct vc_row *r = &g->vc_rows[j];

		r->closing = row(g, j, COL_CLOSING);
		r->ack = row(g, j, COL_ACK);
		r->join = row(g, j, COL_JOIN);
		r->tmask = row(g, j, COL_TMASK);
		r->tadd = row(g, j, COL_TADD);
		if (!arrays)
			continue;
		for (uint32_t s = 0; s < g->n; s++) {
			r->have[s] = row_elem(g, j, COL_HAVE, s);
			r->trim[s] = row_elem(g, j, COL_TRIM, s);
		}
	}
}

/* The group stopped: once a survivor's last word (its trim, which
 * removes this member) has come, or after twice the suspicion timeout
 * without one, tell the application which of its sends are lost. */
static void unsent_pass(struct group *g)
{
	uint64_t now = group_now_ms();

	if (atomic_load(&g->unsent_done))
		return;
	if (!g->unsent_since)
		g->unsent_since = now;
	for (uint32_t j = 0; j < g->n; j++) {
		uint64_t tm = row(g, j, COL_TMASK);

		if (j == g->me || !tm || !((tm - 1) >> g->me & 1))
			continue;
		group_report_unsent(g, true, row_elem(g, j, COL_TRIM, g->me));
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
	uint32_t ch = (uint32_t)g->col[COL_HAVE];
	uint32_t ct = (uint32_t)g->col[COL_TRIM];
	uint32_t ctm = (uint32_t)g->col[COL_TMASK];
	uint64_t have[GROUP_CONFIG_MAX_MEMBERS];
	enum vc_phase was = g->vc.phase;
	bool fresh = false;
	struct vc_in in = {
		.n = g->n,
		.me = g->me,
		.inview = group_cfg_bits(g, &g->vcfg),
		.closing = atomic_load(&g->close_state) != 0,
		.installing = atomic_load(&g->installing),
		.rows = g->vc_rows,
		.have = have,
	};
	struct vc_out out;

	if (atomic_load(&g->failed)) {
		unsent_pass(g);
		return true;
	}
	if (atomic_load(&g->quiet))
		return false;
	for (uint32_t j = 0; j < g->n; j++)
		if (j != g->me && sst_suspected(g->t, j))
			in.suspected |= 1ull << j;
	/* Whether the push of my adoption landed at every peer (asked only
	 * once there is one: the question may push to account for quiet
	 * writes). */
	in.landed = g->vc.adopted && sst_fenced(g->t, g->vc_fence);
	read_rows(g, false);
	if (vc_needs_have(&in, &g->vc)) {
		read_rows(g, true);
		group_have(g, have);
	}
	if (!vc_step(&in, &g->vc, &out))
		return false;
	if (was != VC_INSTALL)
		*work = true;
	if (out.acts & VC_ACT_WEDGE)
		wedge(g);
	if (out.acts & VC_ACT_STOP) {
		char gone[256];

		list_ranks(g, out.lost, gone, sizeof(gone));
		group_fail(g, -ENOTCONN, "member %u: no majority: only %u of "
			   "the %u members of view %" PRIu64 " are reachable "
			   "(lost: %s); this member stops rather than go on "
			   "without a majority", g->my_id, out.alive, out.base,
			   g->vcfg.epoch, gone);
		/* The others count it gone at once: one that adopted a trim
		 * must not wait for it. */
		sst_leave(g->t);
		stop(g);
		return true;
	}
	if (out.acts & VC_ACT_PUBLISH) {
		/* Pushed only when it says something new: a push every pass
		 * would keep writes in flight for ever. */
		for (uint32_t s = 0; s < g->n; s++)
			if (sst_get_elem(g->t, g->me, ch, s) != have[s]) {
				sst_set_elem(g->t, ch, s, have[s]);
				fresh = true;
			}
		if (sst_get(g->t, g->me, (uint32_t)g->col[COL_ACK]) != out.ack) {
			sst_set(g->t, (uint32_t)g->col[COL_ACK], out.ack);
			fresh = true;
		}
	}
	if (out.acts & VC_ACT_ADOPT) {
		report_removed(g);
		atomic_fetch_add(&g->st_commits, 1);
		for (uint32_t s = 0; s < g->n; s++)
			sst_set_elem(g->t, ct, s, g->vc.trim[s]);
		sst_set(g->t, (uint32_t)g->col[COL_TADD], g->vc.tadd);
		sst_set(g->t, ctm, g->vc.tmask + 1);
		fresh = true;
	}
	if (fresh)
		sst_push_cols(g->t, ch, ctm - ch + 1);
	/* A last word to the members the trim removes: one only cut off
	 * (stopped, or on the other side) learns from it which of its
	 * messages the survivors deliver. */
	if (out.acts & VC_ACT_ADOPT)
		for (uint32_t j = 0; j < g->n; j++)
			if (j != g->me && g->vc.tmask >> j & 1)
				sst_push_cols_to(g->t, j, ch, ctm - ch + 1);
	/* What landing the install waits for. */
	if (out.acts & VC_ACT_ADOPT) {
		sst_fence(g->t, g->vc_fence);
		squall_hook(leads(g) ? "trim_published" : "trim_adopted");
	}
	if (atomic_load(&g->failed))
		return true;
	if (out.acts & VC_ACT_DELIVER)
		group_deliver_trim(g);
	if (out.acts & VC_ACT_INSTALL) {
		pthread_mutex_lock(&g->lock);
		g->install_due = true;
		pthread_cond_broadcast(&g->vcond);
		pthread_mutex_unlock(&g->lock);
	}
	return true;
}

/* ---- installing the next view, on the view thread ---------------------------- */

static void install(struct group *g)
{
	struct group_config nv = g->vcfg;
	struct squall_error err = { 0 };
	uint64_t mask = g->vc.tmask, end = vc_trim_end(g->vc.trim, g->n);
	uint64_t keep = group_cfg_bits(g, &g->vcfg), adds = g->vc.tadd;
	uint64_t resent = 0;
	uint32_t ids[GROUP_CONFIG_MAX_MEMBERS], n = 0;
	struct group_resend *rs;
	int r;

	for (uint32_t j = 0; j < g->n; j++)
		if (mask >> j & 1)
			keep &= ~(1ull << group_config_member_index(&g->cfg,
								 g->ids[j]));
	/* The next view: survivors and joiners, in .cfg order. */
	for (uint32_t i = 0; i < g->cfg.nmembers; i++)
		if ((keep | adds) >> i & 1) {
			ids[n] = g->cfg.members[i].id;
			nv.members[n++] = g->cfg.members[i];
		}
	nv.nmembers = n;
	nv.epoch++;
	nv.connect_timeout_ms = g->cfg.view_timeout_ms;
	/* Joiners learn the view (and get the state) before anyone
	 * reconnects: they connect in it with the others. They number
	 * positions from where the trim ends, and count barriers from the
	 * fewest any survivor entered (so their next barrier is the one
	 * the slowest survivor enters next). */
	if (adds) {
		uint64_t barriers = atomic_load(&g->barriers);

		for (uint32_t j = 0; j < g->n; j++)
			if (!(mask >> j & 1) &&
			    row(g, j, COL_BARRIER) < barriers)
				barriers = row(g, j, COL_BARRIER);
		group_join_answer(g, nv.epoch, ids, n, g->seq_base + end,
				  barriers);
	}
	pthread_rwlock_wrlock(&g->epoch_lock);
	atomic_store(&g->installing, true);
	group_epoch_teardown(g);
	squall_hook("installing");
	pthread_mutex_lock(&g->lock);
	g->vcfg = nv;
	g->seq_base += end;
	pthread_mutex_unlock(&g->lock);
	r = group_epoch_build(g, &err);
	if (r) {
		group_fail(g, r, "member %u: installing view %" PRIu64 " failed: "
			   "%s", g->my_id, nv.epoch, err.msg);
		atomic_store(&g->installing, false);
		pthread_rwlock_unlock(&g->epoch_lock);
		stop(g);
		return;
	}
	/* The view upcall comes before anything of the view is delivered;
	 * then own messages past the trim go again, before any new send. */
	group_call_view(g);
	atomic_store_explicit(&g->ready, true, memory_order_release);
	sst_wake(g->t);
	while ((rs = g->resend_head)) {
		if (group_resend(g, rs, &err))
			break;
		g->resend_head = rs->next;
		free(rs);
		resent++;
	}
	if (g->resend_head) {
		/* This view is ending already (a survivor did not come
		 * back): the rest waits for the next one. */
		*g->resend_tail = g->resend_later;
		g->resend_later = g->resend_head;
		g->resend_head = NULL;
	}
	g->resend_tail = &g->resend_head;
	atomic_fetch_add(&g->st_resent, resent);
	atomic_store(&g->st_vc_ms, group_now_ms() - g->vc_start_ms);
	atomic_store(&g->installing, false);
	/* Sends go on, unless the next change already wedged this view
	 * (the core refuses them then all the same). */
	if (!smc_core_error(g->core))
		atomic_store(&g->wedged, false);
	pthread_rwlock_unlock(&g->epoch_lock);
	sst_wake(g->t);
	pthread_mutex_lock(&g->lock);
	pthread_cond_broadcast(&g->room);
	pthread_mutex_unlock(&g->lock);
}

static void *view_main(void *arg)
{
	struct group *g = arg;

	group_view_self = g;
	pthread_mutex_lock(&g->lock);
	for (;;) {
		while (!g->stopping && !atomic_load(&g->failed) &&
		       !g->install_due) {
			struct timespec ts;

			/* Between view changes: answer join requests. */
			pthread_mutex_unlock(&g->lock);
			group_join_poll(g);
			pthread_mutex_lock(&g->lock);
			if (g->stopping || g->install_due)
				break;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 50 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&g->vcond, &g->lock, &ts);
		}
		if (g->stopping || atomic_load(&g->failed))
			break;
		g->install_due = false;
		pthread_mutex_unlock(&g->lock);
		install(g);
		pthread_mutex_lock(&g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int group_view_start(struct group *g, struct squall_error *err)
{
	int r = pthread_create(&g->view_thread, NULL, view_main, g);

	if (r)
		return squall_error_set(err, -r, "starting the view thread: %s",
					strerror(r));
	g->view_thread_on = true;
	return 0;
}

void group_view_stop(struct group *g)
{
	if (!g->view_thread_on)
		return;
	pthread_mutex_lock(&g->lock);
	g->stopping = true;
	pthread_cond_broadcast(&g->vcond);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->view_thread, NULL);
	g->view_thread_on = false;
}
