/*
 * epoch.c - one view's parts (struct group_epoch, g->v), built for the
 * view in g->vcfg and torn down at its end, as one unit.
 *
 * The parts already exist (rdma node, SST, SMC core, RDMC engine); the
 * build makes them over the group's region in a fixed order, so that
 * every member's region has the same layout, and lets the SST's progress
 * thread drive all of them (link.c, order.c). The first view is built by
 * the start (group.c), every later one by the view thread (view.c) under
 * epoch_lock (write), after it tore the last one down; the last one is
 * torn down by group_close once the view thread stopped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "group/group_int.h"
#include "group/transport.h"
#include "rdma/hook.h"

/* The view's SMC rings, one per sender, leased from the region. */
static int lease_rings(struct group *g, struct squall_error *err)
{
	size_t sz = (size_t)g->v.n * g->geom.cap;
	struct group_rings *rg = calloc(1, sizeof(*rg));
	int r;

	if (!rg)
		return squall_error_set(err, -ENOMEM, "out of memory");
	r = alloc_lease(g->a, 1, &sz, &rg->d);
	if (!r && squall_hook_fail("rings_lease")) {
		alloc_release(g->a, &rg->d);
		r = -ENOMEM;
	}
	if (r) {
		free(rg);
		return squall_error_set(err, r, "%s: group.region_size (%" PRIu64
			" bytes) has no room for %u SMC rings of %" PRIu64
			" bytes (smc.window %u x smc.max_payload %u)",
			g->cfg.path, g->cfg.region_size, g->v.n, g->geom.cap,
			g->cfg.smc_window, g->cfg.smc_max_payload);
	}
	/* Not cleared (tens of ms for a window of large records, in every
	 * view change): the rings' seal (link.c) makes what is left there
	 * unreadable to this view. */
	g->v.rings = rg->d;
	g->v.cur_rings = rg;
	return 0;
}

/* The view is over: its rings go once no kept delivery points into them. */
static void rings_retire(struct group *g, struct group_rings *rg)
{
	if (!rg)
		return;
	group_lock(g);
	rg->retired = true;
	if (rg->kept) {
		group_unlock(g);
		return;
	}
	group_unlock(g);
	alloc_release(g->a, &rg->d);
	free(rg);
}

/* group.peer_access "windows": what peer `id` may write of this view's
 * standing areas here: its row in my SST, its SMC ring. */
static int grant_of(void *arg, uint32_t id, enum rdma_sq_target purpose,
		    void **ptr, size_t *len)
{
	struct group *g = arg;
	int rank = group_config_member_index(&g->vcfg, id);

	if (rank < 0)
		return -ENOENT;
	switch (purpose) {
	case RDMA_SQ_TARGET_SST_ROW:
		*len = sst_layout_row_size(g->v.layout);
		*ptr = (char *)g->table.ptr + (size_t)rank * *len;
		return 0;
	case RDMA_SQ_TARGET_SMC_RING:
		*len = g->geom.cap;
		*ptr = (char *)g->v.rings.ptr + (size_t)rank * g->geom.cap;
		return 0;
	default:
		*len = 0;
		return 0;
	}
}

_Static_assert((int)GROUP_LOG_ERROR == (int)RDMA_SQ_LOG_ERROR &&
	       (int)GROUP_LOG_INFO == (int)RDMA_SQ_LOG_INFO &&
	       (int)GROUP_LOG_DEBUG == (int)RDMA_SQ_LOG_DEBUG, "log levels");

/* The transport's lines go to the application's log upcall. */
static void rdma_log(void *arg, int level, const char *msg)
{
	struct group *g = arg;

	if (g->cb.log && !atomic_load(&g->log_quiet))
		g->cb.log(g->ctx, level, msg);
}

static int start_rdma(struct group *g, struct squall_error *err)
{
	struct rdma_sq_options ro = {
		.log = rdma_log,
		.log_arg = g,
		.max_send_wr = 512,
		.max_recv_wr = GROUP_RECV_DEPTH + 16,
		/* A run of SMC records takes two entries per record: with
		 * 32, one write carries 16 (the device may allow fewer). */
		.max_sge = RDMA_SQ_MAX_SGE,
		.peer_windows = g->cfg.peer_access == 0,
		.listener = g->listener,
	};
	uint64_t t = group_now_ms();
	int r;

	atomic_store(&g->log_quiet, false);
	/* The node takes the kept listener over, whatever happens. */
	g->listener = NULL;
	for (uint32_t i = 0; i < g->vcfg.nmembers; i++) {
		int c = group_config_member_index(&g->cfg,
						  g->vcfg.members[i].id);

		if (c >= 0 && (g->kept_listeners >> c & 1))
			ro.listening |= 1ull << i;
	}

	r = group_transport_create(&g->vcfg, g->my_id, g->base, g->len, &ro,
				   &g->v.node, err);
	if (!r)
		r = rdma_sq_connect_all(g->v.node, err);
	/* In a later view a survivor that did not come back within
	 * group.view_timeout_ms, whose listener is gone (its process is),
	 * or that failed after it connected (while this member waited for
	 * another), is a failure like any other: the SST suspects it from
	 * the start and the next view change drops it. */
	if ((r == -ETIMEDOUT || r == -EHOSTDOWN) && g->vcfg.epoch)
		r = 0;
	/* A peer whose grants do not come is failed: like a survivor that
	 * did not come back. */
	if (!r)
		r = rdma_sq_grant_all(g->v.node, grant_of, g,
				      g->vcfg.connect_timeout_ms, err);
	g->v.connect_ms = group_now_ms() - t;
	return r;
}

static int start_rdmc(struct group *g, struct squall_error *err)
{
	struct rdmc_engine_options eo = { 0 };
	struct rdmc_callbacks cb = group_rdmc_cb_template;
	int r;

	if (g->v.n == 1)
		return 0;
	if (g->cfg.peer_access == 0) {
		/* READY grants each writer a window over the buffer alone. */
		eo.windows = true;
	} else {
		/* READY grants the receive buffer under a registration of its
		 * own over the region: written by peers, never read. */
		r = rdma_sq_reg_mr(g->v.node, g->base, g->len,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
				   &g->v.grant, err);
		if (r)
			return r;
		eo.grant_mr = g->v.grant;
	}
	r = rdmc_engine_create(g->v.node, g->a, &eo, &g->v.e, err);
	if (r)
		return r;
	cb.arg = g;
	return rdmc_group_create(g->v.e, 1, g->v.ids, g->v.n,
				 g->cfg.rdmc_block_size, RDMC_BINOMIAL, &cb,
				 &g->v.rg, err);
}

/* sst.idle's words are the policies in order (group/config.c). */
_Static_assert(SST_IDLE_POLICY_ADAPTIVE == 0 && SST_IDLE_POLICY_SPIN == 1 &&
	       SST_IDLE_POLICY_BLOCK == 2, "sst.idle no longer maps 1:1");

void group_sst_recv_options(struct group *g, struct sst_options *so)
{
	so->recv_depth = GROUP_RECV_DEPTH;
	so->recv_area = g->recv_area.ptr;
	so->recv_buf_size = GROUP_RECV_BUF;
}

static int start_sst(struct group *g, struct squall_error *err)
{
	struct sst_options so = {
		.dispatch = &g->v.dispatch,
		.on_suspect = group_on_suspect,
		.suspect_arg = g,
		/* A row of another view never validates in this one. */
		.seed = g->vcfg.epoch,
		.heartbeat_ms = g->vcfg.sst_heartbeat_ms,
		.suspect_timeout_ms = g->vcfg.sst_suspect_timeout_ms,
		.idle = (enum sst_idle_policy)g->vcfg.sst_idle,
		.spin_us = g->vcfg.sst_spin_us,
		.spin_max_us = g->vcfg.sst_spin_max_us,
	};
	int r;

	group_sst_recv_options(g, &so);
	/* The node's hooks (link.c) and the progress pass (view.c's
	 * group_pass), which the SST calls on its progress thread. The pass
	 * is the one function of a file above this one that this file
	 * names: a callback, never called from here. */
	g->v.dispatch = group_node_hooks;
	g->v.dispatch.on_pass = group_pass;
	g->v.dispatch.arg = g;
	r = sst_create(g->v.node, g->v.layout, g->base,
		       (size_t)((char *)g->table.ptr - (char *)g->base), &so,
		       &g->v.t, err);
	if (r)
		return r;
	r = sst_start(g->v.t, err);
	if (!r)
		r = sst_wait_peers(g->v.t, (int)g->vcfg.connect_timeout_ms, err);
	if (r == -ETIMEDOUT && g->vcfg.epoch)
		r = 0;
	return r;
}

/* Build the parts of the view g->vcfg describes. Its members first, and
 * its counts and view-change state from zero (the lists and queues are
 * empty: the last teardown emptied them). The table memory is cleared
 * next: the previous view's node is gone, so nothing writes into it
 * until peers connect again. */
int group_epoch_build(struct group *g, struct squall_error *err)
{
	int r = group_config_member_index(&g->vcfg, g->my_id);

	group_assert_swap(g);
	group_assert_no_progress(g);
	assert(r >= 0);
	g->v.me = (uint32_t)r;
	g->v.n = g->vcfg.nmembers;
	for (uint32_t i = 0; i < g->v.n; i++)
		g->v.ids[i] = g->vcfg.members[i].id;
	memset(g->v.done, 0, (size_t)g->cfg.nmembers * 8);
	g->v.done_dirty = false;
	g->v.held_ns = 0;
	g->v.trimming = false;
	g->v.trim_upcall_ns = 0;
	g->v.sent_epoch = 0;
	memset(&g->v.vc, 0, sizeof(g->v.vc));
	memset(g->v.suspect_why, 0, sizeof(g->v.suspect_why));
	for (uint32_t i = 0; i < GROUP_CONFIG_MAX_MEMBERS; i++)
		atomic_store(&g->v.p2p_inflight[i], 0);
	memset(g->table.ptr, 0, g->table.len);
	r = group_make_layout(g->v.n, &g->v.layout, g->v.col, err);
	if (!r)
		r = lease_rings(g, err);
	if (!r)
		r = start_rdma(g, err);
	if (!r)
		r = group_smc_setup(g, err);
	if (!r)
		r = start_rdmc(g, err);
	if (!r)
		r = start_sst(g, err);
	if (!r)
		r = group_rings_exchange(g, err);
	if (!r) {
		group_join_republish(g);
		/* Every member's barrier count is in every view's rows from
		 * its start: a joiner starts from them. */
		group_publish_agreements(g);
	}
	return r;
}

/* The view is ending: my own small messages the application kept are
 * the SMC core's to give back, and the core goes with the view. They
 * become the kept records' own (released by group_release). */
static void kept_own_take(struct group *g)
{
	group_lock(g);
	for (struct group_kept *k = g->kept; k; k = k->next) {
		if (k->kind != KEPT_SMC || k->rings != g->v.cur_rings ||
		    k->m.sender != g->v.me)
			continue;
		smc_core_take_payload(g->v.core, &k->m);
		k->kind = KEPT_OWN_SMC;
		k->rings->kept--;
		k->rings = NULL;
	}
	group_unlock(g);
}

/* Tear down the current view's parts: the progress thread first (the SST
 * owns it), then the node (no write of this view lands any more), then
 * what the transports kept. */
/* The ended view's SST (sst) or SMC timing counters stay counted. */
static void keep_timing(struct group *g, bool sst)
{
	uint64_t t[GROUP_TIMING_COUNT] = { 0 };

	group_timing_add(g, sst, t);
	for (unsigned i = 0; i < GROUP_TIMING_COUNT; i++)
		if (t[i])
			atomic_fetch_add(&g->st_old_timing[i], t[i]);
}

int group_epoch_teardown(struct group *g, bool keep_listener,
			 struct squall_error *err)
{
	int r = 0;

	group_assert_swap(g);
	if (squall_hook_fail("teardown_late")) {
		struct timespec late = { 3, 0 };

		nanosleep(&late, NULL);
	}
	atomic_store(&g->ready, false);
	atomic_store(&g->log_quiet, true);
	keep_timing(g, true);
	sst_destroy(g->v.t);
	g->v.t = NULL;
	/* sst_destroy joined the progress thread. */
	atomic_store(&g->v.progress_on, false);
	/* Nothing polls the node now: its listener moves out of it, and
	 * requests for the next view wait there instead of being refused
	 * by this one. */
	if (g->v.node && keep_listener)
		r = rdma_sq_listener_keep(g->v.node, &g->listener, err);
	if (g->v.node)
		group_drain(g);
	if (g->v.grant)
		rdma_sq_dereg_mr(g->v.node, g->v.grant, NULL);
	g->v.grant = NULL;
	if (g->v.node) {
		struct regcache_stats cs;
		struct rdma_sq_odp_stats os;

		atomic_fetch_add(&g->st_old_refused, rdma_sq_refused(g->v.node));
		/* A cache that goes with the node leaves its counts counted;
		 * one kept with the listener serves the next node, counts
		 * and all. */
		if (!g->listener) {
			regcache_stats(rdma_sq_regcache(g->v.node), &cs);
			atomic_fetch_add(&g->st_old_cache_hits, cs.hits);
			atomic_fetch_add(&g->st_old_cache_misses, cs.misses);
		}
		rdma_sq_odp_stats(g->v.node, &os);
		atomic_fetch_add(&g->st_old_odp_regs, os.registrations);
	}
	/* The node closes the engine's windows too, after its queue pairs. */
	rdmc_engine_drop_windows(g->v.e);
	rdma_sq_destroy(g->v.node);
	g->v.node = NULL;
	if (g->v.core) {
		struct smc_stats ss;
		struct rdmc_stats rs = { 0 };

		/* The counters of an ended view stay counted. */
		smc_core_stats(g->v.core, &ss);
		if (g->v.e)
			rdmc_engine_stats(g->v.e, &rs);
		atomic_fetch_add(&g->st_old_copies, ss.payload_copies -
				 ss.sends_copied + rs.payload_copies);
		atomic_fetch_add(&g->st_old_waits, ss.send_waits);
		keep_timing(g, false);
	}
	if (g->v.core)
		kept_own_take(g);
	rdmc_group_destroy(g->v.rg);
	g->v.rg = NULL;
	rdmc_engine_destroy(g->v.e);
	g->v.e = NULL;
	smc_core_destroy(g->v.core);
	g->v.core = NULL;
	group_order_free(g);
	rings_retire(g, g->v.cur_rings);
	g->v.cur_rings = NULL;
	sst_layout_destroy(g->v.layout);
	g->v.layout = NULL;
	return r;
}
