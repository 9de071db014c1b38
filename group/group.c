/*
 * group.c - a member's end of the group from its start to its end: the
 * region and its fixed areas, the first view, the view thread, the close
 * and the free; the queries and the statistics.
 *
 * The rest is by concept, each file calling only the files below it
 * (group_int.h has the list): views (view.c) and their parts (epoch.c),
 * sends (send.c), joins (join.c), the node's hooks (link.c), the delivery
 * order (order.c), own messages (own.c), the agreements over the SST
 * (close.c) and the failure state (fail.c). Above it, the stats file's
 * writer (stats.c), which it starts and stops.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/group_int.h"
#include "rdma/hook.h"

/* ---- the start -------------------------------------------------------------- */

/* Carve the fixed areas out of the region, in the one order every member
 * uses, so that each lies at the same offset everywhere, with the sizes
 * the config's check planned (group_region_plan). */
static int reserve_areas(struct group *g, struct squall_error *err)
{
	struct group_region_plan p;
	struct squall_error e;
	int r;

	r = group_region_plan(g->cfg.nmembers, g->cfg.smc_window,
			      g->cfg.smc_max_payload, &p, &e);
	if (!r)
		r = smc_ring_geom_init(&g->geom, g->cfg.smc_window,
				       g->cfg.smc_max_payload);
	if (r)
		return squall_error_set(err, r, "%s: %s", g->cfg.path, e.msg);
	r = alloc_reserve(g->a, p.sst, ALLOC_PAGE_SIZE, &g->table);
	if (!r)
		r = alloc_reserve(g->a, p.smc_hdr, ALLOC_PAGE_SIZE, &g->hdr);
	if (!r)
		r = alloc_reserve(g->a, p.recv, ALLOC_PAGE_SIZE, &g->recv_area);
	if (r)
		return squall_error_set(err, r, "%s: group.region_size (%" PRIu64
			" bytes) has no room for the SST and %" PRIu64 " bytes of "
			"receive buffers", g->cfg.path, g->cfg.region_size, p.recv);
	return 0;
}

static int alloc_tables(struct group *g)
{
	size_t nmax = g->cfg.nmembers, nn = nmax * nmax;

	g->recv = calloc(nn, 8);
	g->rel = calloc(nn, 8);
	g->row_recv = calloc(nmax, 8);
	g->row_rel = calloc(nmax, 8);
	g->v.done = calloc(nmax, 8);
	return g->recv && g->rel && g->row_recv && g->row_rel && g->v.done
		       ? 0 : -ENOMEM;
}

/* What lives across views, freed last. */
static void group_free(struct group *g)
{
	group_early_p2p_free(g);
	while (g->kept) {
		struct group_kept *k = g->kept;

		g->kept = k->next;
		if (k->rings && k->rings != g->v.cur_rings &&
		    --k->rings->kept == 0 && k->rings->retired)
			free(k->rings);
		free(k);
	}
	group_in_place_end(g);
	group_own_free(g);
	group_join_close(g);
	/* The kept listener holds the region's registration: it goes
	 * before the region. */
	rdma_sq_listener_free(g->listener);
	g->listener = NULL;
	alloc_destroy(g->a);
	free(g->recv);
	free(g->rel);
	free(g->row_recv);
	free(g->row_rel);
	free(g->v.done);
	pthread_rwlock_destroy(&g->epoch_lock.l);
	pthread_cond_destroy(&g->vcond);
	pthread_mutex_destroy(&g->lock.m);
	pthread_mutex_destroy(&g->agree_lock);
	pthread_mutex_destroy(&g->upcall_mu);
	pthread_cond_destroy(&g->room);
	free(g);
}

static void teardown(struct group *g)
{
	group_stats_stop(g, false);
	group_view_stop(g);
	group_epoch_teardown(g, false, NULL);
	group_free(g);
}

static struct group *group_alloc(const struct group_callbacks *cb,
				 void *ctx, struct squall_error *err)
{
	pthread_rwlockattr_t ra;
	pthread_mutexattr_t ma;
	struct group *g;

	if (!cb || !cb->deliver) {
		squall_error_set(err, -EINVAL, "group: no deliver upcall");
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		squall_error_set(err, -ENOMEM, "group: out of memory");
		return NULL;
	}
	g->cb = *cb;
	g->ctx = ctx;
	pthread_mutex_init(&g->lock.m, NULL);
	pthread_mutex_init(&g->agree_lock, NULL);
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&g->upcall_mu, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_cond_init(&g->room, NULL);
	pthread_cond_init(&g->vcond, NULL);
	/* A view swap must not wait behind a stream of new senders. */
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra,
		PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&g->epoch_lock.l, &ra);
	pthread_rwlockattr_destroy(&ra);
	g->v.rsend_tail = &g->v.rsend_head;
	g->v.q_tail = &g->v.q_head;
	g->resend_tail = &g->resend_head;
	g->join_fd = -1;
	for (uint32_t i = 0; i < GROUP_CONFIG_MAX_MEMBERS; i++)
		g->join_conn[i] = -1;
	for (unsigned i = 0; i < GROUP_JOIN_PENDING; i++)
		g->join_pend[i].fd = -1;
	return g;
}

/* What a member has before any view: the configuration, the region and
 * its fixed areas. */
static int init_region(struct group *g, const struct group_config *cfg,
		       uint32_t my_id, struct squall_error *err)
{
	struct alloc_params ap = { 0 };
	int r;

	g->cfg = *cfg;
	g->vcfg = *cfg;
	g->my_id = my_id;
	r = group_config_member_index(cfg, my_id);
	if (r < 0) {
		char ids[256] = "";
		size_t o = 0;

		for (uint32_t i = 0; i < cfg->nmembers && o < sizeof(ids) - 12; i++)
			o += (size_t)snprintf(ids + o, sizeof(ids) - o, "%s%u",
					      i ? ", " : "", cfg->members[i].id);
		return squall_error_set(err, -ENOENT, "%s: no member has id %u "
					"(the members are %s)", cfg->path,
					my_id, ids);
	}
	if (alloc_tables(g))
		return squall_error_set(err, -ENOMEM, "out of memory");
	ap.region_size = cfg->region_size;
	ap.huge_pages = cfg->huge_pages;
	r = alloc_create(&ap, &g->a, err);
	if (r)
		return r;
	alloc_region(g->a, &g->base, &g->len);
	return reserve_areas(g, err);
}

/* The first view of a member that does not join: the members of the
 * .cfg that do not join later. */
static int first_view(struct group *g, const struct group_config *cfg,
		      uint32_t my_id, uint64_t since, struct squall_error *err)
{
	uint32_t n = 0;

	(void)since;
	for (uint32_t i = 0; i < cfg->nmembers; i++)
		if (!cfg->members[i].joins)
			g->vcfg.members[n++] = cfg->members[i];
	g->vcfg.nmembers = n;
	if (group_config_member_index(&g->vcfg, my_id) < 0)
		return squall_error_set(err, -EINVAL, "%s: member %u has joins = "
					"true: start it with group_join()",
					cfg->path, my_id);
	return 0;
}

/* Build the view in g->vcfg, then answer joiners and run the view thread:
 * the last steps of group_create and group_join alike. */
static int go_live(struct group *g, struct squall_error *err)
{
	int r = group_epoch_build(g, err);

	if (!r)
		r = group_join_listen(g, err);
	if (!r)
		r = group_view_start(g, err);
	return r;
}

/* How a member finds its first view (g->vcfg) once its region is set
 * up: first_view, or asking to join (join.c: group_join_ask). since: when
 * the start began (ms), where a join's deadline counts from. */
typedef int (*first_view_fn)(struct group *g, const struct group_config *cfg,
			     uint32_t my_id, uint64_t since,
			     struct squall_error *err);

/* The one line the library writes itself: a group without a key admits
 * any process that has its file. Once per process. */
static void warn_unauthenticated(const struct group_config *cfg)
{
	static atomic_bool said;

	if (atomic_exchange(&said, true))
		return;
	fprintf(stderr, "squall: warning: %s names no group.key_file: members "
		"are not authenticated, and any process that has this file "
		"may connect as a member or join (make a key with "
		"squall-keygen)\n", cfg->path);
}

/* Create a member's end of the group: its region, its first view
 * (first_fn: a member of the first view, or a joiner), that view's parts
 * and the view thread, then the view upcall; the group delivers from
 * then on. */
static struct group *start(const struct group_config *cfg, uint32_t my_id,
			   const struct group_callbacks *cb, void *ctx,
			   first_view_fn first_fn, const char *what,
			   struct squall_error *err)
{
	struct group *g;
	uint64_t since;
	int r;

	squall_error_clear(err);
	if (!cfg) {
		squall_error_set(err, -EINVAL, "%s: no configuration", what);
		return NULL;
	}
	if (squall_hook_check(err))
		return NULL;
	if (!cfg->has_key)
		warn_unauthenticated(cfg);
	g = group_alloc(cb, ctx, err);
	if (!g)
		return NULL;
	since = group_now_ms();
	r = init_region(g, cfg, my_id, err);
	if (!r)
		r = first_fn(g, cfg, my_id, since, err);
	if (!r)
		r = go_live(g, err);
	if (!r)
		r = group_stats_start(g, err);
	if (r) {
		/* Peers must not take this member's silence for a crash
		 * while it has not joined: nothing was delivered. */
		atomic_store(&g->quiet, true);
		teardown(g);
		return NULL;
	}
	group_call_view(g);
	atomic_store_explicit(&g->ready, true, memory_order_release);
	return g;
}

static struct group *start_path(const char *cfg_path, uint32_t my_id,
				const struct group_callbacks *cb, void *ctx,
				first_view_fn first_fn, const char *what,
				struct squall_error *err)
{
	struct group_config *cfg = malloc(sizeof(*cfg));
	struct group *g;

	if (!cfg) {
		squall_error_set(err, -ENOMEM, "%s: out of memory", what);
		return NULL;
	}
	if (group_config_load(cfg_path, cfg, err)) {
		free(cfg);
		return NULL;
	}
	g = start(cfg, my_id, cb, ctx, first_fn, what, err);
	free(cfg);
	return g;
}

struct group *group_create_cfg(const struct group_config *cfg, uint32_t my_id,
			       const struct group_callbacks *cb, void *ctx,
			       struct squall_error *err)
{
	return start(cfg, my_id, cb, ctx, first_view, "group_create", err);
}

struct group *group_create(const char *cfg_path, uint32_t my_id,
			   const struct group_callbacks *cb, void *ctx,
			   struct squall_error *err)
{
	return start_path(cfg_path, my_id, cb, ctx, first_view, "group_create",
			  err);
}

struct group *group_join_cfg(const struct group_config *cfg, uint32_t my_id,
			     const struct group_callbacks *cb, void *ctx,
			     struct squall_error *err)
{
	return start(cfg, my_id, cb, ctx, group_join_ask, "group_join", err);
}

struct group *group_join(const char *cfg_path, uint32_t my_id,
			 const struct group_callbacks *cb, void *ctx,
			 struct squall_error *err)
{
	return start_path(cfg_path, my_id, cb, ctx, group_join_ask,
			  "group_join", err);
}

/* ---- the end ---------------------------------------------------------------- */

int group_close(struct group *g, int timeout_ms, struct squall_error *err)
{
	int r;

	squall_error_clear(err);
	if (!g)
		return 0;
	r = group_close_flush(g, timeout_ms, err);
	/* The last counters, everything flushed delivered. */
	group_stats_stop(g, true);
	atomic_store(&g->quiet, true);
	teardown(g);
	return r;
}

/* ---- queries ---------------------------------------------------------------- */

int group_status(struct group *g, struct squall_error *err)
{
	squall_error_clear(err);
	return group_failed(g, err);
}

struct alloc *group_get_allocator(struct group *g)
{
	return g->a;
}

uint32_t group_my_id(const struct group *g)
{
	return g->my_id;
}

uint32_t group_my_rank(const struct group *g)
{
	return g->v.me;
}

uint32_t group_nmembers(const struct group *g)
{
	return g->v.n;
}

uint32_t group_member_id(const struct group *g, uint32_t r)
{
	return r < g->v.n ? g->v.ids[r] : UINT32_MAX;
}

const struct group_config *group_get_config(const struct group *g)
{
	return &g->cfg;
}

void group_stats_sized(struct group *g, struct group_stats *st, size_t size)
{
	bool self = group_lockless(g);
	struct group_stats all;

	if (!self)
		group_epoch_rdlock(g);
	group_stats_in_view(g, &all);
	if (!self)
		group_epoch_rdunlock(g);
	group_stats_copy_out(st, size, &all);
}

void group_timing_add(struct group *g, bool sst, uint64_t *t)
{
	if (sst && g->v.t) {
		struct sst_stats ts;

		sst_get_stats(g->v.t, &ts);
		t[GT_SST_PUSHES] += ts.pushes;
		t[GT_SST_WRITES] += ts.writes;
		t[GT_SLEEPS] += ts.sleeps;
	} else if (!sst && g->v.core) {
		struct smc_stats ss;

		smc_core_stats(g->v.core, &ss);
		t[GT_RX_WAIT_NS] += ss.rx_wait_ns;
		t[GT_RX_WAITED] += ss.rx_waited;
		t[GT_OWN_WAIT_NS] += ss.own_wait_ns;
		t[GT_OWN_WAITED] += ss.own_waited;
		t[GT_SMC_WRITES] += ss.writes;
		t[GT_SMC_RECORDS] += ss.records_written;
	}
}

void group_stats_in_view(struct group *g, struct group_stats *st)
{
	uint64_t t[GROUP_TIMING_COUNT];

	struct smc_stats ss = { 0 };
	struct rdmc_stats rs = { 0 };
	struct regcache_stats cs = { 0 };
	struct rdma_sq_odp_stats os = { 0 };
	uint64_t epoch, refused;

	group_assert_in_view(g);
	if (g->v.core)
		smc_core_stats(g->v.core, &ss);
	if (g->v.e)
		rdmc_engine_stats(g->v.e, &rs);
	refused = g->v.node ? rdma_sq_refused(g->v.node) : 0;
	if (g->v.node) {
		regcache_stats(rdma_sq_regcache(g->v.node), &cs);
		rdma_sq_odp_stats(g->v.node, &os);
	}
	epoch = g->vcfg.epoch;
	for (unsigned i = 0; i < GROUP_TIMING_COUNT; i++)
		t[i] = atomic_load(&g->st_old_timing[i]);
	group_timing_add(g, true, t);
	group_timing_add(g, false, t);
	*st = (struct group_stats){
		.sent = atomic_load(&g->st_sent),
		.sent_smc = atomic_load(&g->st_sent_smc),
		.sent_rdmc = atomic_load(&g->st_sent_rdmc),
		.delivered = atomic_load(&g->st_delivered),
		.delivered_bytes = atomic_load(&g->st_delivered_bytes),
		.copies = atomic_load(&g->st_copies),
		.payload_copies = ss.payload_copies - ss.sends_copied +
				  rs.payload_copies +
				  atomic_load(&g->st_old_copies),
		.p2p_sent = atomic_load(&g->st_p2p_sent),
		.p2p_received = atomic_load(&g->st_p2p_received),
		.p2p_use_once = atomic_load(&g->st_p2p_use_once),
		.send_waits = atomic_load(&g->st_waits) + ss.send_waits +
			      atomic_load(&g->st_old_waits),
		.epoch = epoch,
		.wedges = atomic_load(&g->st_wedges),
		.commits = atomic_load(&g->st_commits),
		.resent = atomic_load(&g->st_resent),
		.last_view_change_ms = atomic_load(&g->st_vc_ms),
		.last_view_change_agree_ms = atomic_load(&g->st_vc_agree_ms),
		.last_view_change_deliver_ms = atomic_load(&g->st_vc_deliver_ms),
		.last_view_change_teardown_ms =
			atomic_load(&g->st_vc_teardown_ms),
		.last_view_change_build_ms = atomic_load(&g->st_vc_build_ms),
		.last_view_change_connect_ms = atomic_load(&g->st_vc_connect_ms),
		.last_view_change_upcall_ms = atomic_load(&g->st_vc_upcall_ms),
		.sends_lost = atomic_load(&g->st_unsent_lost),
		.sends_unknown = atomic_load(&g->st_unsent_unknown),
		.p2p_abandoned = atomic_load(&g->st_p2p_abandoned),
		.misbehaved = atomic_load(&g->st_misbehaved),
		.refused = refused + atomic_load(&g->st_old_refused) +
			   atomic_load(&g->st_join_refused),
		.joins_dropped = atomic_load(&g->st_join_dropped),
		.sent_in_place = atomic_load(&g->st_in_place),
		.bytes_in_place = atomic_load(&g->st_in_place_bytes),
		.bytes_copied = atomic_load(&g->st_copied_bytes),
		.cache_hits = cs.hits + atomic_load(&g->st_old_cache_hits),
		.cache_misses = cs.misses + atomic_load(&g->st_old_cache_misses),
		.odp_registrations = os.registrations +
				     atomic_load(&g->st_old_odp_regs),
		.sst_pushes = t[GT_SST_PUSHES],
		.sst_writes = t[GT_SST_WRITES],
		.progress_sleeps = t[GT_SLEEPS],
		.smc_rx_wait_ns = t[GT_RX_WAIT_NS],
		.smc_rx_waited = t[GT_RX_WAITED],
		.smc_own_wait_ns = t[GT_OWN_WAIT_NS],
		.smc_own_waited = t[GT_OWN_WAITED],
		.smc_writes = t[GT_SMC_WRITES],
		.smc_records_written = t[GT_SMC_RECORDS],
	};
}

const char *group_strerror(int code)
{
	switch (code) {
	case 0: return "success";
	case -EINVAL: return "invalid argument (not a lease of this group ready to send?)";
	case -ENOTCONN: return "the group stopped (no majority, or this member was cut off)";
	case -ESHUTDOWN: return "the group is closing";
	case -EAGAIN: return "no room now: the send window is full";
	case -ETIMEDOUT: return "timed out";
	case -EMSGSIZE: return "message too large for this path";
	case -ENOENT: return "no such member";
	case -ENOMEM: return "no room (region or memory)";
	case -EPROTO: return "protocol error: a peer disagrees (group file, wire version or layout)";
	default: return code < 0 ? strerror(-code) : "unknown code";
	}
}
