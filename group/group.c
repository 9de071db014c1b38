/*
 * group.c - the group API (include/squall/group.h): set-up, sends,
 * point-to-point messages, barrier, close.
 *
 * The idea: the parts already exist (rdma node, allocator, SST, SMC core,
 * RDMC engine); a group builds them over one region in a fixed order, so
 * every member's region has the same layout, and lets the SST's progress
 * thread drive all of them (link.c, order.c). Application threads only
 * post: small sends go straight into SMC (which posts the RDMA writes from
 * the caller's thread when the pipeline has room), large sends put an
 * announcement in the SMC stream and hand the buffer to the progress
 * thread, which owns the RDMC engine. Barrier and close are agreements
 * over SST columns, each member publishing a counter and waiting for the
 * others'.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <squall/wire.h>

#include "group/agree.h"
#include "group/group_int.h"
#include "rdma/hook.h"

/* Sends wait for room in slices of this, checking for failures. */
#define WAIT_SLICE_MS 100

uint64_t group_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void group_nap(void)
{
	nanosleep(&(struct timespec){ 0, 500000 }, NULL);
}

void group_fail(struct group *g, int code, const char *fmt, ...)
{
	char msg[sizeof(g->fail_msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* The first failure stands. Its message is in place before the
	 * flag that publishes it: a thread that sees g->failed reads the
	 * message whole (it never changes after). */
	pthread_mutex_lock(&g->lock);
	if (!atomic_load(&g->failed)) {
		memcpy(g->fail_msg, msg, sizeof(msg));
		atomic_store_explicit(&g->failed, code, memory_order_release);
	}
	/* Senders waiting for room learn of it. */
	pthread_cond_broadcast(&g->room);
	pthread_mutex_unlock(&g->lock);
}

static int failed(struct group *g, struct squall_error *err)
{
	int f = atomic_load(&g->failed);

	if (f)
		return squall_error_set(err, f, "member %u: %s", g->my_id,
					g->fail_msg);
	return 0;
}

/* The SST suspects a member (or, rank == mine, a peer suspects this
 * member): report it; the view change is group_view_pass's. */
static void on_suspect(struct sst *t, uint32_t rank, uint32_t by,
		       const char *why, void *arg)
{
	struct group *g = arg;

	/* Once every member has flushed, members leaving is the plan. */
	if (atomic_load(&g->quiet))
		return;
	if (rank == g->me) {
		group_fail(g, -ENOTCONN, "member %u: member %u suspects this "
			   "member, which is cut off from view %" PRIu64 " and "
			   "stops (only a side with a majority of the view may "
			   "go on)", g->my_id, g->ids[by], g->vcfg.epoch);
		/* The others count it gone at once. */
		sst_leave(t);
		if (g->cb.failure)
			g->cb.failure(g->ctx, g->my_id, g->fail_msg);
		return;
	}
	/* Reported once the view change that removes it is decided
	 * (view.c): a member suspected because its links closed while it
	 * installs the next view is no failure, and stays. */
	if (!g->suspect_why[rank][0])
		snprintf(g->suspect_why[rank], sizeof(g->suspect_why[rank]),
			 "%s", why);
}

/* ---- set-up ---------------------------------------------------------------- */

static int make_layout(uint32_t n, struct sst_layout **out, int *col,
		       struct squall_error *err)
{
	struct sst_column cols[COL_COUNT] = {
		/* Segments (with_prev: one with the column before): what a
		 * member publishes together is read together. */
		[COL_SMC_RECV] = { "smc_received", SST_COL_U64_ARRAY, n },
		[COL_SMC_REL] = { "smc_released", SST_COL_U64_ARRAY, n, true },
		[COL_SMC_RING] = { "smc_rings", SST_COL_U64, 0 },
		[COL_DONE] = { "delivered", SST_COL_U64_ARRAY, n },
		[COL_SENT] = { "sent", SST_COL_U64, 0 },
		[COL_BARRIER] = { "barrier", SST_COL_U64, 0, true },
		[COL_CLOSING] = { "closing", SST_COL_U64, 0, true },
		/* the view change (vcore.h): what I hold, the mask I am
		 * wedged for, the trim I adopted and the mask it is for */
		[COL_HAVE] = { "have", SST_COL_U64_ARRAY, n },
		[COL_ACK] = { "wedged_for", SST_COL_U64, 0, true },
		[COL_TRIM] = { "trim", SST_COL_U64_ARRAY, n, true },
		[COL_TADD] = { "trim_adds", SST_COL_U64, 0, true },
		[COL_TMASK] = { "trim_mask", SST_COL_U64, 0, true },
		[COL_JOIN] = { "joins_asked", SST_COL_U64, 0 },
	};
	int r = sst_layout_create(cols, COL_COUNT, out, err);

	if (r || !col)
		return r;
	for (int i = 0; i < COL_COUNT; i++)
		col[i] = sst_layout_find(*out, cols[i].name);
	return 0;
}

/* Carve the fixed areas out of the region, in the one order every member
 * uses, so that each lies at the same offset everywhere. The table is
 * sized for every member of the .cfg: each view's table fits in it. */
static int reserve_areas(struct group *g, struct squall_error *err)
{
	uint32_t nmax = g->cfg.nmembers;
	size_t recv_bytes = (size_t)nmax * GROUP_RECV_DEPTH * GROUP_RECV_BUF;
	struct sst_layout *l;
	int r;

	r = smc_ring_geom_init(&g->geom, g->cfg.smc_window,
			       g->cfg.smc_max_payload);
	if (r)
		return squall_error_set(err, r, "%s: smc.window %u or "
			"smc.max_payload %u out of range", g->cfg.path,
			g->cfg.smc_window, g->cfg.smc_max_payload);
	r = make_layout(nmax, &l, NULL, err);
	if (r)
		return r;
	/* The group's SST options leave the pipeline depth at its default,
	 * which sst_area_size(NULL) assumes. */
	r = alloc_reserve(g->a, sst_area_size(l, nmax, NULL), ALLOC_PAGE_SIZE,
			  &g->table);
	sst_layout_destroy(l);
	if (!r)
		r = alloc_reserve(g->a, smc_core_hdr_area_size(g->cfg.smc_window),
				  ALLOC_PAGE_SIZE, &g->hdr);
	if (!r)
		r = alloc_reserve(g->a, recv_bytes, ALLOC_PAGE_SIZE,
				  &g->recv_area);
	if (r)
		return squall_error_set(err, r, "%s: group.region_size (%" PRIu64
			" bytes) has no room for the SST and %zu bytes of receive "
			"buffers", g->cfg.path, g->cfg.region_size, recv_bytes);
	return 0;
}

/* The view's SMC rings, one per sender, leased from the region. */
static int lease_rings(struct group *g, struct squall_error *err)
{
	size_t sz = (size_t)g->n * g->geom.cap;
	struct group_rings *rg = calloc(1, sizeof(*rg));
	int r;

	if (!rg)
		return squall_error_set(err, -ENOMEM, "out of memory");
	r = alloc_lease(g->a, 1, &sz, &rg->d);
	if (r) {
		free(rg);
		return squall_error_set(err, r, "%s: group.region_size (%" PRIu64
			" bytes) has no room for %u SMC rings of %" PRIu64
			" bytes (smc.window %u x smc.max_payload %u)",
			g->cfg.path, g->cfg.region_size, g->n, g->geom.cap,
			g->cfg.smc_window, g->cfg.smc_max_payload);
	}
	memset(rg->d.ptr, 0, sz);
	g->rings = rg->d;
	g->cur_rings = rg;
	return 0;
}

/* The view is over: its rings go once no kept delivery points into them. */
void group_rings_retire(struct group *g, struct group_rings *rg)
{
	if (!rg)
		return;
	pthread_mutex_lock(&g->lock);
	rg->retired = true;
	if (rg->kept) {
		pthread_mutex_unlock(&g->lock);
		return;
	}
	pthread_mutex_unlock(&g->lock);
	alloc_release(g->a, &rg->d);
	free(rg);
}

static int start_rdma(struct group *g, struct squall_error *err)
{
	struct rdma_sq_options ro = {
		.max_send_wr = 512,
		.max_recv_wr = GROUP_RECV_DEPTH + 16,
		.max_sge = 16,
	};
	int r;

	r = rdma_sq_create(&g->vcfg, g->my_id, g->base, g->len, &ro, &g->node,
			   err);
	if (!r)
		r = rdma_sq_connect_all(g->node, err);
	/* In a later view a survivor that did not come back within
	 * group.view_timeout_ms is a failure like any other: the SST
	 * suspects it from the start and the next view change drops it. */
	if (r == -ETIMEDOUT && g->vcfg.epoch)
		r = 0;
	return r;
}

static int start_rdmc(struct group *g, struct squall_error *err)
{
	struct rdmc_engine_options eo = { 0 };
	struct rdmc_callbacks cb = group_rdmc_cb_template;
	int r;

	if (g->n == 1)
		return 0;
	/* READY grants the receive buffer under a registration of its own
	 * over the region. */
	r = rdma_sq_reg_mr(g->node, g->base, g->len, 0, &g->grant, err);
	if (r)
		return r;
	eo.grant_mr = g->grant;
	r = rdmc_engine_create(g->node, g->a, &eo, &g->e, err);
	if (r)
		return r;
	cb.arg = g;
	return rdmc_group_create(g->e, 1, g->ids, g->n, g->cfg.rdmc_block_size,
				 RDMC_BINOMIAL, &cb, &g->rg, err);
}

static int start_sst(struct group *g, struct squall_error *err)
{
	struct sst_options so = {
		.recv_depth = GROUP_RECV_DEPTH,
		.recv_area = g->recv_area.ptr,
		.recv_buf_size = GROUP_RECV_BUF,
		.dispatch = &g->dispatch,
		.on_suspect = on_suspect,
		.suspect_arg = g,
		/* A row of another view never validates in this one. */
		.seed = g->vcfg.epoch,
	};
	int r;

	group_dispatch_init(g);
	r = sst_create(g->node, &g->vcfg, g->layout, g->base,
		       (size_t)((char *)g->table.ptr - (char *)g->base), &so,
		       &g->t, err);
	if (r)
		return r;
	r = sst_start(g->t, err);
	if (!r)
		r = sst_wait_peers(g->t, (int)g->vcfg.connect_timeout_ms, err);
	if (r == -ETIMEDOUT && g->vcfg.epoch)
		r = 0;
	return r;
}

/* Build the parts of the view g->vcfg describes. The table memory is
 * cleared first: the previous view's node is gone, so nothing writes
 * into it until peers connect again. */
int group_epoch_build(struct group *g, struct squall_error *err)
{
	int r = group_config_member_index(&g->vcfg, g->my_id);

	assert(r >= 0);
	g->me = (uint32_t)r;
	g->n = g->vcfg.nmembers;
	for (uint32_t i = 0; i < g->n; i++)
		g->ids[i] = g->vcfg.members[i].id;
	memset(g->done, 0, (size_t)g->cfg.nmembers * 8);
	g->done_dirty = false;
	g->sent_epoch = 0;
	memset(&g->vc, 0, sizeof(g->vc));
	memset(g->suspect_why, 0, sizeof(g->suspect_why));
	for (uint32_t i = 0; i < GROUP_CONFIG_MAX_MEMBERS; i++)
		atomic_store(&g->p2p_inflight[i], 0);
	memset(g->table.ptr, 0, g->table.len);
	r = make_layout(g->n, &g->layout, g->col, err);
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

/* Tear down the current view's parts: the progress thread first (the SST
 * owns it), then the node (no write of this view lands any more), then
 * what the transports kept. */
/* The view is ending: my own small messages the application kept are
 * the SMC core's to give back, and the core goes with the view. They
 * become the kept records' own (released by group_release). */
static void kept_own_take(struct group *g)
{
	pthread_mutex_lock(&g->lock);
	for (struct group_kept *k = g->kept; k; k = k->next) {
		if (k->kind != KEPT_SMC || k->rings != g->cur_rings ||
		    k->m.sender != g->me)
			continue;
		smc_core_take_payload(g->core, &k->m);
		k->kind = KEPT_OWN_SMC;
		k->rings->kept--;
		k->rings = NULL;
	}
	pthread_mutex_unlock(&g->lock);
}

void group_epoch_teardown(struct group *g)
{
	atomic_store(&g->ready, false);
	sst_destroy(g->t);
	g->t = NULL;
	if (g->grant)
		rdma_sq_dereg_mr(g->node, g->grant, NULL);
	g->grant = NULL;
	rdma_sq_destroy(g->node);
	g->node = NULL;
	if (g->core) {
		struct smc_stats ss;
		struct rdmc_stats rs = { 0 };

		/* The counters of an ended view stay counted. */
		smc_core_stats(g->core, &ss);
		if (g->e)
			rdmc_engine_stats(g->e, &rs);
		atomic_fetch_add(&g->st_old_copies, ss.payload_copies -
				 ss.sends_copied + rs.payload_copies);
		atomic_fetch_add(&g->st_old_waits, ss.send_waits);
	}
	if (g->core)
		kept_own_take(g);
	rdmc_group_destroy(g->rg);
	g->rg = NULL;
	rdmc_engine_destroy(g->e);
	g->e = NULL;
	smc_core_destroy(g->core);
	g->core = NULL;
	group_order_free(g);
	group_rings_retire(g, g->cur_rings);
	g->cur_rings = NULL;
	sst_layout_destroy(g->layout);
	g->layout = NULL;
}

static int alloc_tables(struct group *g)
{
	size_t nmax = g->cfg.nmembers, nn = nmax * nmax;

	g->recv = calloc(nn, 8);
	g->rel = calloc(nn, 8);
	g->row_recv = calloc(nmax, 8);
	g->row_rel = calloc(nmax, 8);
	g->done = calloc(nmax, 8);
	return g->recv && g->rel && g->row_recv && g->row_rel && g->done
		       ? 0 : -ENOMEM;
}

/* What lives across views, freed last. */
static void group_free(struct group *g)
{
	group_early_p2p_free(g);
	while (g->kept) {
		struct group_kept *k = g->kept;

		g->kept = k->next;
		if (k->rings && k->rings != g->cur_rings && --k->rings->kept == 0
		    && k->rings->retired)
			free(k->rings);
		free(k);
	}
	while (g->own) {
		struct group_own *o = g->own;

		g->own = o->next;
		free(o);
	}
	while (g->resend_head || g->resend_later) {
		struct group_resend *rs = g->resend_head ? g->resend_head
							 : g->resend_later;

		if (rs == g->resend_head)
			g->resend_head = rs->next;
		else
			g->resend_later = rs->next;
		free(rs);
	}
	group_join_close(g);
	alloc_destroy(g->a);
	free(g->recv);
	free(g->rel);
	free(g->row_recv);
	free(g->row_rel);
	free(g->done);
	pthread_rwlock_destroy(&g->epoch_lock);
	pthread_cond_destroy(&g->vcond);
	pthread_mutex_destroy(&g->lock);
	pthread_mutex_destroy(&g->agree_lock);
	pthread_cond_destroy(&g->room);
	free(g);
}

static void teardown(struct group *g)
{
	group_view_stop(g);
	group_epoch_teardown(g);
	group_free(g);
}

static struct group *group_alloc(const struct group_callbacks *cb,
				 void *ctx, struct squall_error *err)
{
	pthread_rwlockattr_t ra;
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
	pthread_mutex_init(&g->lock, NULL);
	pthread_mutex_init(&g->agree_lock, NULL);
	pthread_cond_init(&g->room, NULL);
	pthread_cond_init(&g->vcond, NULL);
	/* A view swap must not wait behind a stream of new senders. */
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra,
		PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&g->epoch_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	g->rsend_tail = &g->rsend_head;
	g->q_tail = &g->q_head;
	g->resend_tail = &g->resend_head;
	g->join_fd = -1;
	for (uint32_t i = 0; i < GROUP_CONFIG_MAX_MEMBERS; i++)
		g->join_conn[i] = -1;
	return g;
}

/* What a member has before any view: the configuration, the region and
 * its fixed areas. */
int group_init_region(struct group *g, const struct group_config *cfg,
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

static int init(struct group *g, const struct group_config *cfg,
		uint32_t my_id, struct squall_error *err)
{
	uint32_t n = 0;
	int r = group_init_region(g, cfg, my_id, err);

	if (r)
		return r;
	/* The first view: the members that do not join later. */
	for (uint32_t i = 0; i < cfg->nmembers; i++)
		if (!cfg->members[i].joins)
			g->vcfg.members[n++] = cfg->members[i];
	g->vcfg.nmembers = n;
	if (group_config_member_index(&g->vcfg, my_id) < 0)
		return squall_error_set(err, -EINVAL, "%s: member %u has joins = "
					"true: start it with group_join()",
					cfg->path, my_id);
	return group_go_live(g, err);
}

/* Build the view in g->vcfg, then answer joiners and run the view thread:
 * the last steps of group_create and group_join alike. */
int group_go_live(struct group *g, struct squall_error *err)
{
	int r = group_epoch_build(g, err);

	if (!r)
		r = group_join_listen(g, err);
	if (!r)
		r = group_view_start(g, err);
	return r;
}

void group_call_view(struct group *g)
{
	struct group_view v = {
		.epoch = g->vcfg.epoch,
		.nmembers = g->n,
		.members = g->ids,
		.my_id = g->my_id,
		.my_rank = g->me,
	};

	if (g->cb.view)
		g->cb.view(g->ctx, &v);
}

/* Create a member's end of the group with init_fn (a member of the first
 * view, or a joiner), then the view upcall; the group delivers from then
 * on. */
struct group *group_start(const struct group_config *cfg, uint32_t my_id,
			  const struct group_callbacks *cb, void *ctx,
			  group_init_fn init_fn, const char *what,
			  struct squall_error *err)
{
	struct group *g;

	squall_error_clear(err);
	if (!cfg) {
		squall_error_set(err, -EINVAL, "%s: no configuration", what);
		return NULL;
	}
	if (squall_hook_check(err))
		return NULL;
	g = group_alloc(cb, ctx, err);
	if (!g)
		return NULL;
	if (init_fn(g, cfg, my_id, err)) {
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

struct group *group_start_path(const char *cfg_path, uint32_t my_id,
			       const struct group_callbacks *cb, void *ctx,
			       group_init_fn init_fn, const char *what,
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
	g = group_start(cfg, my_id, cb, ctx, init_fn, what, err);
	free(cfg);
	return g;
}

struct group *group_create_cfg(const struct group_config *cfg, uint32_t my_id,
			       const struct group_callbacks *cb, void *ctx,
			       struct squall_error *err)
{
	return group_start(cfg, my_id, cb, ctx, init, "group_create", err);
}

struct group *group_create(const char *cfg_path, uint32_t my_id,
			   const struct group_callbacks *cb, void *ctx,
			   struct squall_error *err)
{
	return group_start_path(cfg_path, my_id, cb, ctx, init, "group_create",
				err);
}

/* ---- sends -------------------------------------------------------------------- */

__thread struct group *group_progress_self;
__thread struct group *group_view_self;

struct alloc *group_get_allocator(struct group *g)
{
	return g->a;
}

static int usable(struct group *g, struct squall_error *err)
{
	if (atomic_load(&g->closing))
		return squall_error_set(err, -ESHUTDOWN, "member %u: the group "
					"is closing", g->my_id);
	return failed(g, err);
}

/* Wait (without epoch_lock) until the view changes from `epoch`, the group
 * fails, or `until` (ms; 0: no limit) passes. */
static void wait_next_view(struct group *g, uint64_t epoch, uint64_t until)
{
	pthread_mutex_lock(&g->lock);
	while (g->vcfg.epoch == epoch && !atomic_load(&g->failed) &&
	       (!until || group_now_ms() < until)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += WAIT_SLICE_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&g->room, &g->lock, &ts);
	}
	pthread_mutex_unlock(&g->lock);
}

/* Enter the current view to use its parts: returns 0 holding epoch_lock
 * for reading (on the progress thread, which a view swap stops first,
 * without it). With wait, a wedged group is waited out (until `until`,
 * 0: no limit); without, it is -EAGAIN. */
static int view_enter(struct group *g, bool wait, uint64_t until,
		      struct squall_error *err)
{
	bool self = group_lockless(g);

	/* The view thread sends again under the write lock it holds. */
	if (group_view_self == g)
		return 0;
	for (;;) {
		uint64_t epoch;
		int r;

		if (!self)
			pthread_rwlock_rdlock(&g->epoch_lock);
		r = failed(g, err);
		if (!r && !atomic_load(&g->wedged))
			return 0;
		epoch = g->vcfg.epoch;
		if (!self)
			pthread_rwlock_unlock(&g->epoch_lock);
		if (r)
			return r;
		if (self || !wait || (until && group_now_ms() >= until))
			return squall_error_set(err, -EAGAIN, "member %u: a view "
						"change is in progress", g->my_id);
		atomic_fetch_add(&g->st_waits, 1);
		wait_next_view(g, epoch, until);
	}
}

static void view_leave(struct group *g)
{
	if (!group_lockless(g))
		pthread_rwlock_unlock(&g->epoch_lock);
}

/* SMC send waiting in slices, so that a failure ends the wait, and across
 * a view change: a send the ending view refused is made in the next one.
 * With rs, the RDMC send it announces is queued in the same view. */
static int smc_send(struct group *g, const void *p, uint32_t len, int timeout_ms,
		    uint8_t kind, struct group_rsend *rs,
		    struct squall_error *err)
{
	uint64_t until = timeout_ms > 0 ? group_now_ms() + (uint64_t)timeout_ms : 0;
	bool waited = false;
	int r;

	for (;;) {
		int slice = timeout_ms == 0 ? 0 : WAIT_SLICE_MS;
		uint64_t epoch;
		bool ending;

		if (until) {
			uint64_t now = group_now_ms();

			if (now >= until)
				slice = 0;
			else if (until - now < (uint64_t)slice)
				slice = (int)(until - now);
		}
		r = view_enter(g, timeout_ms != 0, until, err);
		if (r)
			return r;
		r = smc_core_send_kind(g->core, p, len, (void *)p, slice, false,
				       kind);
		if (r == 0) {
			atomic_fetch_add(&g->sent_epoch, 1);
			if (rs) {
				pthread_mutex_lock(&g->lock);
				*g->rsend_tail = rs;
				g->rsend_tail = &rs->next;
				pthread_mutex_unlock(&g->lock);
				sst_wake(g->t);
			}
		}
		epoch = g->vcfg.epoch;
		ending = r && smc_core_error(g->core) != 0;
		view_leave(g);
		if (r == 0)
			return 0;
		if (ending && group_view_self == g)
			/* Sending again at a view's start, and it is ending
			 * already: the next view takes the rest. */
			return squall_error_set(err, -ESTALE, "member %u: view %"
				PRIu64 " ended while sending again", g->my_id, epoch);
		if (ending) {
			/* The view is ending (wedged, or a write to a failed
			 * member could not be posted): nothing was sent. */
			if (timeout_ms == 0)
				return squall_error_set(err, -EAGAIN, "member %u: "
					"a view change is in progress", g->my_id);
			wait_next_view(g, epoch, until);
			continue;
		}
		if (r != -ETIMEDOUT && !(r == -EAGAIN && timeout_ms != 0 &&
					 slice != 0))
			break;
		if (!waited)
			atomic_fetch_add(&g->st_waits, 1);
		waited = true;
		if ((r = failed(g, err)))
			return r;
		if (slice == 0 || (until && group_now_ms() >= until))
			break;
	}
	if (r == -EAGAIN || r == -ETIMEDOUT)
		return squall_error_set(err, r, "member %u: every slot of the "
			"SMC window (smc.window = %u) is still in use", g->my_id,
			g->cfg.smc_window);
	if (r == -EBUSY || r == -EALREADY || r == -EINVAL || r == -EPERM)
		return squall_error_set(err, -EINVAL, "member %u: the buffer at "
			"%p is not a lease ready to send (%s)", g->my_id, p,
			r == -EBUSY ? "it was sent already" :
			r == -EALREADY ? "it is free" : "not a lease");
	return squall_error_set(err, r, "member %u: %s", g->my_id,
				atomic_load(&g->failed) ? g->fail_msg
							: strerror(-r));
}

/* Announce a large message and queue its RDMC send: the announcement's
 * place in the SMC order is the message's. own: the message's record for
 * view changes (added before the announcement can be delivered). */
static int announce(struct group *g, uint64_t msg_id, const struct buf_desc *d,
		    bool submitted, int timeout_ms, struct squall_error *err)
{
	struct group_announce a = {
		.msg_id = htole64(msg_id),
		.size = htole64(d->len),
	};
	struct group_rsend *s = calloc(1, sizeof(*s));
	struct buf_desc ad;
	size_t asz = sizeof(a);
	int r;

	r = s ? alloc_lease_wait(g->a, 1, &asz, &ad,
				 timeout_ms < 0 ? UINT32_MAX : (unsigned)timeout_ms)
	      : -ENOMEM;
	if (r) {
		free(s);
		return squall_error_set(err, r, "member %u: no room to announce "
					"a large message", g->my_id);
	}
	memcpy(ad.ptr, &a, sizeof(a));
	s->msg_id = msg_id;
	s->d = *d;
	s->submitted = submitted;
	r = smc_send(g, ad.ptr, sizeof(a), timeout_ms, GROUP_KIND_ANNOUNCE, s,
		     err);
	if (r) {
		alloc_release(g->a, &ad);
		free(s);
	}
	return r;
}

static int send_large(struct group *g, const struct buf_desc *d,
		      int timeout_ms, struct squall_error *err)
{
	uint64_t until = timeout_ms > 0 ? group_now_ms() + (uint64_t)timeout_ms : 0;
	struct group_own *o;
	struct buf_desc od;
	int r, state = alloc_state(g->a, d->ptr);

	if (state != ALLOC_LEASED)
		return squall_error_set(err, -EINVAL, "member %u: the buffer at "
			"%p is not a lease ready to send (%s)", g->my_id, d->ptr,
			state == ALLOC_SUBMITTED ? "it was sent already" :
			state == ALLOC_FREE ? "it is free" : "not a lease");
	o = calloc(1, sizeof(*o));
	if (!o)
		return squall_error_set(err, -ENOMEM, "out of memory");
	/* Bound the large messages in flight. */
	pthread_mutex_lock(&g->lock);
	while (g->rdmc_inflight >= GROUP_RDMC_INFLIGHT &&
	       !atomic_load(&g->failed)) {
		struct timespec ts;

		if (timeout_ms == 0 || (until && group_now_ms() >= until)) {
			pthread_mutex_unlock(&g->lock);
			free(o);
			return squall_error_set(err, timeout_ms ? -ETIMEDOUT
				: -EAGAIN, "member %u: %u large messages are "
				"already in flight", g->my_id, GROUP_RDMC_INFLIGHT);
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += WAIT_SLICE_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		atomic_fetch_add(&g->st_waits, 1);
		pthread_cond_timedwait(&g->room, &g->lock, &ts);
	}
	g->rdmc_inflight++;
	/* Unique per member for the group's life, whatever the view. */
	o->msg_id = (uint64_t)g->my_id << 40 | ++g->next_msg;
	pthread_mutex_unlock(&g->lock);
	o->d = *d;
	group_own_add(g, o);
	r = announce(g, o->msg_id, d, false, timeout_ms, err);
	if (r) {
		group_own_take(g, o->msg_id, &od);
		pthread_mutex_lock(&g->lock);
		g->rdmc_inflight--;
		pthread_mutex_unlock(&g->lock);
		return r;
	}
	atomic_fetch_add(&g->st_sent_rdmc, 1);
	return 0;
}

/* A message of an ended view sent again (view thread, sends still
 * wedged): its payload is submitted already. */
int group_resend(struct group *g, struct group_resend *rs,
		 struct squall_error *err)
{
	int r;

	if (rs->large)
		return announce(g, rs->msg_id, &rs->d, true, -1, err);
	g->resending = true;
	r = smc_core_send_kind(g->core, rs->d.ptr, (uint32_t)rs->d.len,
			       rs->d.ptr, -1, false, rs->kind);
	g->resending = false;
	if (r == 0)
		atomic_fetch_add(&g->sent_epoch, 1);
	if (r && smc_core_error(g->core))
		r = -ESTALE;
	return r ? squall_error_set(err, r, "member %u: sending a message "
		"again in the new view failed: %s", g->my_id, strerror(-r)) : 0;
}

int group_ordered_send_timeout(struct group *g, const struct buf_desc *d,
			       int timeout_ms, struct squall_error *err)
{
	int r;

	squall_error_clear(err);
	/* An upcall's send never waits: the room it would wait for (the
	 * window, RDMC slots, leases) is freed by the thread running it. */
	if (group_progress_self == g)
		timeout_ms = 0;
	if ((r = usable(g, err)))
		return r;
	if (!d || !d->ptr || !d->len || !alloc_owns(g->a, d->ptr, d->len))
		return squall_error_set(err, -EINVAL, "member %u: the buffer "
			"%p + %zu is not inside this member's region (lease it "
			"from group_get_allocator(), or use group_send_copy())",
			g->my_id, d ? d->ptr : NULL, d ? d->len : 0);
	if (d->len > g->cfg.smc_max_payload)
		r = send_large(g, d, timeout_ms, err);
	else if (!(r = smc_send(g, d->ptr, (uint32_t)d->len, timeout_ms,
				GROUP_KIND_APP, NULL, err)))
		atomic_fetch_add(&g->st_sent_smc, 1);
	if (!r)
		atomic_fetch_add(&g->st_sent, 1);
	return r;
}

int group_ordered_send(struct group *g, const struct buf_desc *d,
		       struct squall_error *err)
{
	return group_ordered_send_timeout(g, d, -1, err);
}

int group_send_copy(struct group *g, const void *ptr, size_t len,
		    struct squall_error *err)
{
	struct buf_desc d;
	int r;

	squall_error_clear(err);
	if ((r = usable(g, err)))
		return r;
	if (!ptr || !len)
		return squall_error_set(err, -EINVAL, "member %u: nothing to "
					"send", g->my_id);
	/* From an upcall, no wait (as group_ordered_send_timeout). */
	r = alloc_lease_wait(g->a, 1, &len, &d,
			     group_progress_self == g ? 0 : UINT32_MAX);
	if (r)
		return squall_error_set(err, r, "member %u: no room in the "
					"region for a copy of %zu bytes",
					g->my_id, len);
	memcpy(d.ptr, ptr, len);
	r = group_ordered_send(g, &d, err);
	if (r)
		alloc_release(g->a, &d);
	else
		atomic_fetch_add(&g->st_copies, 1);
	return r;
}

/* ---- point to point --------------------------------------------------------- */

size_t group_p2p_max(const struct group *g)
{
	(void)g;
	return GROUP_RECV_BUF - WIRE_HDR_LEN;
}

static int p2p_send(struct group *g, uint32_t member, const struct buf_desc *d,
		    struct squall_error *err)
{
	int r, rank = group_config_member_index(&g->vcfg, member);
	struct rdma_sq_sge sg[2];
	uint8_t *hdr;
	int hlen;

	squall_error_clear(err);
	if ((r = failed(g, err)))
		return r;
	if (rank < 0 || (uint32_t)rank == g->me)
		return squall_error_set(err, -ENOENT, "member %u: %u is not "
			"another member of the view", g->my_id, member);
	if (!d || !d->ptr || !alloc_owns(g->a, d->ptr, d->len))
		return squall_error_set(err, -EINVAL, "member %u: the buffer is "
			"not inside this member's region", g->my_id);
	if (d->len > group_p2p_max(g))
		return squall_error_set(err, -EMSGSIZE, "member %u: a "
			"point-to-point message of %zu bytes is larger than "
			"%zu", g->my_id, d->len, group_p2p_max(g));
	if (!rdma_sq_peer_alive(g->node, member))
		return squall_error_set(err, -ENOTCONN, "member %u: member %u "
			"is not connected: %s", g->my_id, member,
			rdma_sq_peer_error(g->node, member));
	if (atomic_fetch_add(&g->p2p_inflight[rank], 1) >= GROUP_P2P_INFLIGHT) {
		atomic_fetch_sub(&g->p2p_inflight[rank], 1);
		return squall_error_set(err, -EAGAIN, "member %u: %u "
			"point-to-point messages to member %u are still in "
			"flight", g->my_id, GROUP_P2P_INFLIGHT, member);
	}
	hdr = alloc_obj_new(g->a, 64);
	if (!hdr) {
		atomic_fetch_sub(&g->p2p_inflight[rank], 1);
		return squall_error_set(err, -ENOMEM, "member %u: no room for a "
					"message header", g->my_id);
	}
	hlen = wire_encode(hdr, 32, WIRE_MSG_P2P, 0, NULL, 0,
			   (uint32_t)d->len, err);
	r = hlen < 0 ? hlen : alloc_submit(g->a, d);
	if (r) {
		atomic_fetch_sub(&g->p2p_inflight[rank], 1);
		alloc_obj_delete(g->a, hdr);
		return squall_error_set(err, -EINVAL, "member %u: the buffer at "
			"%p is not a lease ready to send", g->my_id, d->ptr);
	}
	memcpy(hdr + 32, d, sizeof(*d));
	sg[0] = (struct rdma_sq_sge){ hdr, (uint32_t)hlen };
	sg[1] = (struct rdma_sq_sge){ d->ptr, (uint32_t)d->len };
	r = rdma_sq_send(g->node, member, sg, d->len ? 2 : 1,
			 GROUP_WR_P2P << 56 | (uint64_t)(hdr - (uint8_t *)g->base),
			 RDMA_SQ_SIGNALED, err);
	if (r) {
		/* Never posted: the buffer is the caller's again. */
		atomic_fetch_sub(&g->p2p_inflight[rank], 1);
		alloc_obj_delete(g->a, hdr);
		if (r == -ENOMEM || r == -EAGAIN) {
			alloc_unsubmit(g->a, d);
			return squall_error_set(err, -EAGAIN, "member %u: the "
				"send queue to member %u is full", g->my_id,
				member);
		}
		alloc_complete(g->a, d);
		return r;
	}
	atomic_fetch_add(&g->st_p2p_sent, 1);
	return 0;
}

int group_p2p_send(struct group *g, uint32_t member, const struct buf_desc *d,
		   struct squall_error *err)
{
	bool self = group_lockless(g);
	int r;

	/* Not ordered: a wedged view's connections still carry it. */
	if (!self)
		pthread_rwlock_rdlock(&g->epoch_lock);
	r = p2p_send(g, member, d, err);
	if (!self)
		pthread_rwlock_unlock(&g->epoch_lock);
	return r;
}

int group_release(struct group *g, const struct buf_desc *d)
{
	struct group_kept **p, *k;

	pthread_mutex_lock(&g->lock);
	for (p = &g->kept; *p; p = &(*p)->next)
		if ((*p)->d.ptr == d->ptr)
			break;
	k = *p;
	if (k)
		*p = k->next;
	pthread_mutex_unlock(&g->lock);
	if (!k)
		return -EINVAL;
	if (k->kind == KEPT_SMC) {
		bool self = group_lockless(g);
		bool gone = false;

		if (!self)
			pthread_rwlock_rdlock(&g->epoch_lock);
		if (k->rings == g->cur_rings) {
			smc_core_release(g->core, &k->m);
		} else {
			/* Kept from an ended view: its rings go with the
			 * last such delivery. */
			pthread_mutex_lock(&g->lock);
			gone = --k->rings->kept == 0 && k->rings->retired;
			pthread_mutex_unlock(&g->lock);
		}
		if (!self)
			pthread_rwlock_unlock(&g->epoch_lock);
		if (gone) {
			alloc_release(g->a, &k->rings->d);
			free(k->rings);
		}
	} else if (k->kind == KEPT_RDMC_RECV) {
		alloc_release(g->a, &k->d);
	} else {
		/* Sent from a lease of mine (large, or small of an ended
		 * view): sent everywhere, so done. */
		alloc_complete(g->a, &k->d);
	}
	free(k);
	return 0;
}

/* ---- agreements over the SST ------------------------------------------------ */

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

		pthread_rwlock_rdlock(&g->epoch_lock);
		if (tick)
			tick(g);
		done = ok(g, arg);
		pthread_rwlock_unlock(&g->epoch_lock);
		if (done)
			return 0;
		if (!tolerate_failure && (r = failed(g, err)))
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
	return sst_get(g->t, rank, (uint32_t)g->col[c]);
}

/* Publish the barrier count and the close state in the current view's
 * SST when they changed (or the view did). Any thread: application
 * threads waiting in group_barrier or group_close, and the view thread
 * when it builds a view. */
void group_publish_agreements(struct group *g)
{
	uint32_t cs = (uint32_t)g->col[COL_SENT];
	uint32_t cc = (uint32_t)g->col[COL_CLOSING];
	uint64_t sent = atomic_load(&g->sent_epoch);
	uint64_t barriers = atomic_load(&g->barriers);
	uint64_t close_state = atomic_load(&g->close_state);

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
	sst_set(g->t, (uint32_t)g->col[COL_BARRIER], barriers);
	if (close_state) {
		sst_set(g->t, cs, sent);
		sst_set(g->t, cc, close_state);
	}
	sst_push_cols(g->t, cs, cc - cs + 1);
	pthread_mutex_unlock(&g->agree_lock);
}

/* Every member of the view entered barrier number `target`. */
static bool barrier_reached(struct group *g, uint64_t target)
{
	for (uint32_t j = 0; j < g->n; j++)
		if (col_of(g, j, COL_BARRIER) < target)
			return false;
	return true;
}

int group_barrier(struct group *g, int timeout_ms, struct squall_error *err)
{
	uint64_t target;
	int r;

	squall_error_clear(err);
	if ((r = failed(g, err)))
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
	uint32_t cd = (uint32_t)g->col[COL_DONE];

	for (uint32_t j = 0; j < g->n; j++) {
		uint64_t *done = v->done + (size_t)j * g->n;

		for (uint32_t k = 0; k < g->n; k++)
			done[k] = sst_get_elem(g->t, j, cd, k);
		v->rows[j] = (struct ag_row){
			.closing = col_of(g, j, COL_CLOSING),
			.sent = col_of(g, j, COL_SENT),
			.ack = col_of(g, j, COL_ACK),
			.done = done,
			.suspected = j != g->me && sst_suspected(g->t, j),
		};
	}
	v->in = (struct ag_in){
		.n = g->n,
		.me = g->me,
		.rows = v->rows,
		.wedged = atomic_load(&g->wedged),
		.sent = atomic_load(&g->sent_epoch),
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

int group_close(struct group *g, int timeout_ms, struct squall_error *err)
{
	int r;

	squall_error_clear(err);
	if (!g)
		return 0;
	atomic_store(&g->closing, true);
	atomic_store(&g->close_state, 1);
	r = wait_until(g, flushed_or_alone, 0, group_publish_agreements, timeout_ms,
		       false, "flushing the group", err);
	if (!r && g->leaving) {
		/* A clean leave: what this member sent is everywhere; the
		 * others install a view without it (view.c). */
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
	if (atomic_load(&g->failed) && g->t)
		wait_until(g, unsent_told, 0, NULL,
			   (int)(2 * g->cfg.sst_suspect_timeout_ms + 1000), true,
			   "telling lost sends", NULL);
	atomic_store(&g->quiet, true);
	teardown(g);
	return r;
}

/* ---- queries ---------------------------------------------------------------- */

int group_status(struct group *g, struct squall_error *err)
{
	squall_error_clear(err);
	return failed(g, err);
}

uint32_t group_my_id(const struct group *g)
{
	return g->my_id;
}

uint32_t group_my_rank(const struct group *g)
{
	return g->me;
}

uint32_t group_nmembers(const struct group *g)
{
	return g->n;
}

uint32_t group_member_id(const struct group *g, uint32_t r)
{
	return r < g->n ? g->ids[r] : UINT32_MAX;
}

const struct group_config *group_get_config(const struct group *g)
{
	return &g->cfg;
}

void group_stats(struct group *g, struct group_stats *st)
{
	bool self = group_lockless(g);
	struct smc_stats ss = { 0 };
	struct rdmc_stats rs = { 0 };
	uint64_t epoch;

	if (!self)
		pthread_rwlock_rdlock(&g->epoch_lock);
	if (g->core)
		smc_core_stats(g->core, &ss);
	if (g->e)
		rdmc_engine_stats(g->e, &rs);
	epoch = g->vcfg.epoch;
	if (!self)
		pthread_rwlock_unlock(&g->epoch_lock);
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
		.send_waits = atomic_load(&g->st_waits) + ss.send_waits +
			      atomic_load(&g->st_old_waits),
		.epoch = epoch,
		.wedges = atomic_load(&g->st_wedges),
		.commits = atomic_load(&g->st_commits),
		.resent = atomic_load(&g->st_resent),
		.last_view_change_ms = atomic_load(&g->st_vc_ms),
		.sends_lost = atomic_load(&g->st_unsent_lost),
		.sends_unknown = atomic_load(&g->st_unsent_unknown),
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
