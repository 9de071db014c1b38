/*
 * view.c - view changes: when members fail, the survivors agree on what
 * every one of them delivers from the ending view and go on in a new one.
 *
 * The idea (virtual synchrony over the SST, after Derecho): a suspicion
 * (the SST's, gossiped through every row), a member that left, or a join
 * request wedges the member: its sends stop, normal delivery stops, and
 * it publishes, per sender, how many rounds it holds with their large
 * payloads (COL_HAVE) and which failure mask it wedged for (COL_ACK). The
 * leader, the lowest-ranked member not in the mask, waits until every
 * survivor acknowledged the same mask and publishes the ragged trim: per
 * sender, the minimum over survivors of what they hold, with the joiners
 * the next view adds - or, if a survivor already adopted a trim, that one
 * (it may have delivered it). A trim exists once: every member adopts it
 * (copies it into its own row) once, delivers exactly the positions below
 * it, and installs the next view (the trim's survivors and joiners) as
 * soon as every other member of that view shows the same trim or is gone;
 * one that adopted it and went quiet is installing, not failed. The view
 * thread then tears the view down and builds the next one: connections,
 * SST, rings and RDMC, epoch + 1; own messages past the trim are sent
 * again there, in order, before any new send. A member that died after
 * the trim was agreed is missing when the next view connects
 * (group.view_timeout_ms), and that view's first change drops it. A
 * leader that fails before anyone adopted its trim is one more suspicion:
 * the next member leads.
 *
 * Majority: a view change needs more than half of the view it replaces
 * (or, once a trim is adopted, of the view that trim decided); a member on
 * the smaller side of a partition stops instead of carrying on alone.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/group_int.h"

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
	g->vc = VC_WEDGED;
	g->vc_start_ms = group_now_ms();
	atomic_store(&g->wedged, true);
	smc_core_wedge(g->core);
	atomic_fetch_add(&g->st_wedges, 1);
}

static void adopt(struct group *g, const uint64_t *trim, uint64_t mask,
		  uint64_t adds)
{
	uint32_t ct = (uint32_t)g->col[COL_TRIM];

	atomic_fetch_add(&g->st_commits, 1);
	memcpy(g->vc_trim, trim, (size_t)g->n * sizeof(*trim));
	g->vc_adopted = true;
	g->vc_tmask = mask;
	g->vc_tadd = adds;
	for (uint32_t s = 0; s < g->n; s++)
		sst_set_elem(g->t, ct, s, trim[s]);
	sst_set(g->t, (uint32_t)g->col[COL_TADD], adds);
	sst_set(g->t, (uint32_t)g->col[COL_TMASK], mask + 1);
}

/* Adopt the trim in member j's row, if it has one for a mask within
 * mine: a trim exists once, and whoever adopted it may have delivered
 * it. */
static bool adopt_from(struct group *g, uint32_t j, uint64_t mask)
{
	uint64_t trim[GROUP_CONFIG_MAX_MEMBERS], tm = row(g, j, COL_TMASK), adds;

	if (!tm || ((tm - 1) & ~mask))
		return false;
	for (uint32_t s = 0; s < g->n; s++)
		trim[s] = row_elem(g, j, COL_TRIM, s);
	adds = row(g, j, COL_TADD);
	/* The trim and its mask land in one write; read the mask again so
	 * the trim read is not older than it. */
	if (row(g, j, COL_TMASK) != tm)
		return false;
	adopt(g, trim, tm - 1, adds);
	return true;
}

/* The leader: once every survivor is wedged for my mask, take the trim a
 * survivor already adopted, or compute it: per sender, the least any
 * survivor holds. */
static void lead(struct group *g, uint64_t mask, uint64_t joins,
		 const uint64_t *have)
{
	uint64_t trim[GROUP_CONFIG_MAX_MEMBERS];

	for (uint32_t j = 0; j < g->n; j++)
		if (j != g->me && !(mask >> j & 1) &&
		    row(g, j, COL_ACK) != mask + 1)
			return;
	for (uint32_t j = 0; j < g->n; j++)
		if (j != g->me && !(mask >> j & 1) && adopt_from(g, j, mask))
			return;
	for (uint32_t s = 0; s < g->n; s++) {
		trim[s] = have[s];
		for (uint32_t j = 0; j < g->n; j++)
			if (j != g->me && !(mask >> j & 1) &&
			    row_elem(g, j, COL_HAVE, s) < trim[s])
				trim[s] = row_elem(g, j, COL_HAVE, s);
	}
	adopt(g, trim, mask, joins);
}

bool group_view_pass(struct group *g, bool *work)
{
	uint32_t ch = (uint32_t)g->col[COL_HAVE];
	uint32_t ctm = (uint32_t)g->col[COL_TMASK];
	uint64_t inview = group_cfg_bits(g, &g->vcfg);
	uint64_t have[GROUP_CONFIG_MAX_MEMBERS];
	uint64_t mask = 0, left = 0, joins = 0, base_mask;
	uint32_t leader = UINT32_MAX, alive, base;
	bool all = true, joined = false;

	if (atomic_load(&g->failed))
		return true;
	if (atomic_load(&g->quiet))
		return false;
	for (uint32_t j = 0; j < g->n; j++) {
		uint64_t tm = row(g, j, COL_TMASK);

		if (j == g->me) {
			joins |= row(g, j, COL_JOIN);
			continue;
		}
		/* A member that left in order is no failure; nor is one
		 * that adopted the same trim as this member and went quiet:
		 * it is installing the next view. */
		if (row(g, j, COL_CLOSING) == GROUP_CLOSE_LEFT) {
			left |= 1ull << j;
		} else if (g->vc_adopted && tm == g->vc_tmask + 1) {
			continue;
		} else if (sst_suspected(g->t, j)) {
			mask |= 1ull << j;
		} else {
			if (row(g, j, COL_ACK))
				joined = true;
			joins |= row(g, j, COL_JOIN);
		}
	}
	joins &= ~inview;
	/* A failure starts a view change, and so does a join; a leave too,
	 * unless this member is closing (then the leaver is one more
	 * closer); one a peer started is joined. */
	if (g->vc == VC_NONE && !mask && !joined &&
	    (g->close_state || (!left && !joins)))
		return false;
	mask |= left;
	if (g->vc == VC_INSTALL)
		return true;
	if (g->vc == VC_NONE)
		wedge(g);
	*work = true;
	/* The view thread is still sending again what the last change
	 * left: the wedge stops it; the rest waits until it let go. */
	if (atomic_load(&g->installing))
		return true;
	/* Majority of the view being replaced, or of the one the adopted
	 * trim decided. Members that left in order are not on the other
	 * side of a partition: they do not count against it. */
	base_mask = (g->vc_adopted ? g->vc_tmask : 0) | left;
	base = g->n - (uint32_t)__builtin_popcountll(base_mask);
	alive = g->n - (uint32_t)__builtin_popcountll(mask | base_mask);
	if (alive * 2 <= base) {
		char gone[256];

		list_ranks(g, mask, gone, sizeof(gone));
		group_fail(g, -ENOTCONN, "member %u: no majority: only %u of "
			   "the %u members of view %" PRIu64 " are reachable "
			   "(lost: %s); this member stops rather than go on "
			   "without a majority", g->my_id, alive, base,
			   g->vcfg.epoch, gone);
		stop(g);
		return true;
	}
	/* What I hold, and the mask I am wedged for. */
	group_have(g, have);
	for (uint32_t s = 0; s < g->n; s++)
		sst_set_elem(g->t, ch, s, have[s]);
	sst_set(g->t, (uint32_t)g->col[COL_ACK], mask + 1);
	for (uint32_t j = 0; j < g->n && leader == UINT32_MAX; j++)
		if (!(mask >> j & 1))
			leader = j;
	if (!g->vc_adopted) {
		if (leader == g->me)
			lead(g, mask, joins, have);
		else
			adopt_from(g, leader, mask);
	}
	sst_push_cols(g->t, ch, ctm - ch + 1);
	if (!g->vc_adopted || atomic_load(&g->failed))
		return true;
	if (!g->vc_delivered) {
		group_deliver_trim(g);
		g->vc_delivered = true;
	}
	/* Install once every other member of the next view adopted the
	 * trim too, or is gone (the next view's first change drops it). */
	for (uint32_t j = 0; j < g->n; j++)
		if (j != g->me && !(g->vc_tmask >> j & 1) &&
		    row(g, j, COL_TMASK) != g->vc_tmask + 1 &&
		    !(mask >> j & 1))
			all = false;
	if (!all)
		return true;
	g->vc = VC_INSTALL;
	pthread_mutex_lock(&g->lock);
	g->install_due = true;
	pthread_cond_broadcast(&g->vcond);
	pthread_mutex_unlock(&g->lock);
	return true;
}

/* ---- installing the next view, on the view thread ---------------------------- */

static void install(struct group *g)
{
	struct group_config nv = g->vcfg;
	struct squall_error err = { 0 };
	uint64_t mask = g->vc_tmask, end = 0, resent = 0;
	uint64_t keep = group_cfg_bits(g, &g->vcfg), adds = g->vc_tadd;
	uint32_t ids[GROUP_CONFIG_MAX_MEMBERS], n = 0;
	struct group_resend *rs;
	int r;

	for (uint32_t j = 0; j < g->n; j++) {
		if (g->vc_trim[j] && (g->vc_trim[j] - 1) * g->n + j + 1 > end)
			end = (g->vc_trim[j] - 1) * g->n + j + 1;
		if (mask >> j & 1)
			keep &= ~(1ull << group_config_member_index(&g->cfg,
								 g->ids[j]));
	}
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
	 * reconnects: they connect in it with the others. */
	if (adds)
		group_join_answer(g, nv.epoch, ids, n);
	pthread_rwlock_wrlock(&g->epoch_lock);
	atomic_store(&g->installing, true);
	group_epoch_teardown(g);
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
