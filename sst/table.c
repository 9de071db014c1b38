/*
 * table.c - the shared state table: creation over a connected node, the
 * accessors of the local copy, and the public face of the predicates.
 *
 * The table is n rows of the layout's row size in the member's region, at
 * the same offset in every member's region, so a member finds its row in a
 * peer's copy from the peer's region target alone. Peers' writes land
 * there, and nothing reads them as values: sst_take_row copies each
 * segment whose sequence moved, checks the copy (sst/seal.c) and keeps
 * the last whole one in `valid`, which is what every read of a peer's row
 * returns. The own row is written in place and read as it is; pushes send
 * sealed snapshots of it (push.c). Words are loaded and stored whole: the
 * layout keeps every word inside a cache line, and whole-word access keeps
 * the compiler from splitting one.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sst/table.h"

#define DEFAULT_HEARTBEAT_MS 100
#define DEFAULT_SUSPECT_MS 1000
#define DEFAULT_SPIN_US 50
#define DEFAULT_SPIN_MAX_US 20000
#define DEFAULT_SIGNAL_EVERY 8
#define DEFAULT_RECV_DEPTH 48

uint64_t sst_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fill_defaults(struct sst_options *o)
{
	if (!o->heartbeat_ms)
		o->heartbeat_ms = DEFAULT_HEARTBEAT_MS;
	if (!o->suspect_timeout_ms)
		o->suspect_timeout_ms = DEFAULT_SUSPECT_MS;
	if (!o->spin_us)
		o->spin_us = DEFAULT_SPIN_US;
	if (!o->spin_max_us)
		o->spin_max_us = DEFAULT_SPIN_MAX_US;
	if (o->spin_max_us < o->spin_us)
		o->spin_max_us = o->spin_us;
	if (!o->max_inflight)
		o->max_inflight = SST_DEFAULT_MAX_INFLIGHT;
	if (!o->signal_every)
		o->signal_every = DEFAULT_SIGNAL_EVERY;
	if (o->signal_every > o->max_inflight)
		o->signal_every = o->max_inflight;
	if (!o->recv_depth)
		o->recv_depth = DEFAULT_RECV_DEPTH;
}

/* The fingerprint members compare: the layout's, bound to the member
 * count (FNV-1a step over it), never 0. */
static uint64_t table_fingerprint(const struct sst_layout *l, uint32_t n)
{
	uint64_t h = sst_layout_fingerprint(l);

	for (int i = 0; i < 4; i++) {
		h ^= (n >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h ? h : 1;
}

/* The per-segment state of both sides: keys, sealing counters, validated
 * copies and their timers. */
static int alloc_segments(struct sst *t, uint64_t seed)
{
	size_t nk = (size_t)t->n * t->nsegs;

	t->valid = calloc(t->n, t->row_size);
	t->scratch = calloc(1, t->row_size);
	t->keys = calloc(nk, sizeof(*t->keys));
	t->torn_since = calloc(nk, sizeof(*t->torn_since));
	t->seg_seq = calloc(t->nsegs, sizeof(*t->seg_seq));
	if (!t->valid || !t->scratch || !t->keys || !t->torn_since ||
	    !t->seg_seq)
		return -ENOMEM;
	for (uint32_t r = 0; r < t->n; r++)
		for (uint32_t sg = 0; sg < t->nsegs; sg++)
			t->keys[(size_t)r * t->nsegs + sg] = sst_seal_key(seed,
				sg ? t->fingerprint : 0, r, sg);
	return 0;
}

static void free_segments(struct sst *t)
{
	free(t->valid);
	free(t->scratch);
	free(t->keys);
	free(t->torn_since);
	free(t->seg_seq);
}

static int find_peers(struct sst *t, size_t table_offset,
		      struct squall_error *err)
{
	size_t size = sst_table_size(t->layout, t->n);

	for (uint32_t r = 0; r < t->n; r++) {
		struct sst_peer *p = &t->peers[r];
		uint64_t addr, len;
		uint32_t rkey;
		int rc;

		p->id = rdma_sq_member_id(t->node, r);
		if (r == t->me)
			continue;
		/* A window over exactly my row in its table, when the peer
		 * granted one (rdma_sq_grant_all); else its whole region. */
		rc = rdma_sq_remote(t->node, p->id, RDMA_SQ_TARGET_SST_ROW,
				    &addr, &rkey, &len);
		if (rc == 0) {
			if (len != t->row_size)
				return squall_error_set(err, -EPROTO,
					"sst: member %u granted %llu bytes for "
					"this member's row of %zu", p->id,
					(unsigned long long)len, t->row_size);
			p->raddr = addr;
			p->rkey = rkey;
			continue;
		}
		rc = rdma_sq_remote(t->node, p->id, RDMA_SQ_TARGET_REGION,
				    &addr, &rkey, &len);
		if (rc == -ENOTCONN) {
			/* Never connected or already gone: suspected from
			 * the first pass on. */
			p->failed = true;
			p->post_failed = true;
			snprintf(p->post_error, sizeof(p->post_error),
				 "member %u is not connected", p->id);
			continue;
		}
		if (rc)
			return squall_error_set(err, rc,
				"sst: no region target for member %u: %s",
				p->id, strerror(-rc));
		if (len < table_offset || len - table_offset < size)
			return squall_error_set(err, -ERANGE,
				"sst: member %u's region (%llu bytes) cannot hold "
				"a %zu-byte table at offset %zu", p->id,
				(unsigned long long)len, size, table_offset);
		p->raddr = addr + table_offset + (uint64_t)t->me * t->row_size;
		p->rkey = rkey;
	}
	return 0;
}

int sst_post_recv(struct sst *t, uint32_t rank, uint32_t i,
		  struct squall_error *err)
{
	struct rdma_sq_sge sge;

	if (!t->opt.recv_buf_size)
		return rdma_sq_post_recv(t->node, t->peers[rank].id, NULL, 0,
					 sst_wrid(SST_WR_RECV, rank, i), err);
	sge.ptr = sst_recv_buf(t, rank, i);
	sge.len = t->opt.recv_buf_size;
	return rdma_sq_post_recv(t->node, t->peers[rank].id, &sge, 1,
				 sst_wrid(SST_WR_RECV, rank, i), err);
}

static int post_receives(struct sst *t, struct squall_error *err)
{
	for (uint32_t r = 0; r < t->n; r++) {
		if (r == t->me || t->peers[r].failed)
			continue;
		for (uint32_t i = 0; i < t->opt.recv_depth; i++) {
			int rc = sst_post_recv(t, r, i, err);

			if (rc)
				return rc;
		}
	}
	return 0;
}

int sst_create(struct rdma_sq_node *node,
	       const struct sst_layout *layout, void *region,
	       size_t table_offset, const struct sst_options *opt,
	       struct sst **out, struct squall_error *err)
{
	struct sst *t;
	uint32_t n;
	int rc;

	if (!node || !layout || !region || !out)
		return squall_error_set(err, -EINVAL, "sst_create: missing argument");
	n = rdma_sq_nmembers(node);
	if (n == 0 || n > SST_MAX_MEMBERS)
		return squall_error_set(err, -EINVAL,
			"sst_create: %u members, a table holds 1..%d",
			n, SST_MAX_MEMBERS);
	if (table_offset % SST_CACHE_LINE)
		return squall_error_set(err, -EINVAL,
			"sst_create: table offset %zu is not a multiple of %d",
			table_offset, SST_CACHE_LINE);
	if (opt && opt->recv_buf_size && !opt->recv_area)
		return squall_error_set(err, -EINVAL,
			"sst_create: recv_buf_size %u without a recv_area",
			opt->recv_buf_size);
	rc = -ENOENT;
	for (uint32_t i = 0; i < n; i++)
		if (rdma_sq_member_id(node, i) == rdma_sq_my_id(node))
			rc = (int)i;
	if (rc < 0)
		return squall_error_set(err, -EINVAL,
			"sst_create: member %u is not among the node's members",
			rdma_sq_my_id(node));
	t = calloc(1, sizeof(*t));
	if (!t)
		return squall_error_set(err, -ENOMEM, "sst_create: out of memory");
	t->node = node;
	t->layout = layout;
	if (opt)
		t->opt = *opt;
	fill_defaults(&t->opt);
	t->n = n;
	t->me = (uint32_t)rc;
	t->row_size = sst_layout_row_size(layout);
	t->nsegs = sst_layout_nsegs(layout);
	t->table = (uint8_t *)region + table_offset;
	t->my_row = t->table + (size_t)t->me * t->row_size;
	t->slots = t->table + sst_table_size(layout, t->n);
	t->fingerprint = table_fingerprint(layout, t->n);
	memset(t->my_row, 0, t->row_size);
	__atomic_store_n(sst_word(t, t->me, SST_HDR_FINGERPRINT),
			 t->fingerprint, __ATOMIC_RELEASE);
	pthread_mutex_init(&t->push_lock, NULL);
	rc = alloc_segments(t, t->opt.seed);
	if (rc) {
		free_segments(t);
		pthread_mutex_destroy(&t->push_lock);
		free(t);
		return squall_error_set(err, rc, "sst_create: out of memory");
	}
	rc = sst_preds_init(&t->preds, t);
	if (rc) {
		free_segments(t);
		pthread_mutex_destroy(&t->push_lock);
		free(t);
		return squall_error_set(err, rc, "sst_create: predicate engine");
	}
	rc = find_peers(t, table_offset, err);
	if (!rc)
		rc = post_receives(t, err);
	if (rc) {
		sst_destroy(t);
		return rc;
	}
	*out = t;
	return 0;
}

int sst_start(struct sst *t, struct squall_error *err)
{
	uint64_t now = sst_now_ns();
	int rc;

	if (t->started)
		return squall_error_set(err, -EALREADY, "sst_start: already started");
	for (uint32_t r = 0; r < t->n; r++)
		t->peers[r].hb_change_ns = now;
	t->next_hb_ns = now;
	atomic_store(&t->stop, false);
	rc = pthread_create(&t->thread, NULL, sst_progress_main, t);
	if (rc)
		return squall_error_set(err, -rc, "sst_start: pthread_create: %s",
					strerror(rc));
	t->started = true;
	sst_push(t);
	return 0;
}

void sst_destroy(struct sst *t)
{
	if (!t)
		return;
	if (t->started) {
		atomic_store(&t->stop, true);
		/* A signaled push wakes a sleeping progress thread; with no
		 * live peer its wait is short anyway (progress.c). */
		atomic_store(&t->asleep, true);
		sst_push_segs(t, 0, 1, false, true);
		pthread_join(t->thread, NULL);
	}
	sst_preds_destroy(&t->preds);
	pthread_mutex_destroy(&t->push_lock);
	free_segments(t);
	free(t);
}

void *sst_recv_landing(const struct sst_options *opt, uint64_t wr_id,
		       uint32_t *rank)
{
	uint32_t i = sst_wrid_covered(wr_id);

	if (!sst_wrid_is_ours(wr_id) || sst_wrid_kind(wr_id) != SST_WR_RECV ||
	    !opt->recv_buf_size || !opt->recv_area || i >= opt->recv_depth)
		return NULL;
	*rank = sst_wrid_rank(wr_id);
	return sst_recv_slot(opt, *rank, i);
}

int sst_wait_peers(struct sst *t, int timeout_ms, struct squall_error *err)
{
	uint64_t deadline = sst_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	for (;;) {
		uint32_t missing = UINT32_MAX;

		for (uint32_t r = 0; r < t->n; r++) {
			uint64_t fp;

			if (r == t->me)
				continue;
			/* A validated header: its fingerprint is exactly
			 * what the peer wrote. */
			fp = __atomic_load_n(sst_word(t, r, SST_HDR_FINGERPRINT),
					     __ATOMIC_ACQUIRE);
			if ((fp && fp != t->fingerprint) ||
			    __atomic_load_n(&t->peers[r].fp_bad, __ATOMIC_ACQUIRE))
				return squall_error_set(err, -EPROTO,
					"sst: member %u's table fingerprint %016llx "
					"differs from ours (%016llx): another column "
					"declaration or member count", t->peers[r].id,
					(unsigned long long)fp,
					(unsigned long long)t->fingerprint);
			if (sst_suspected(t, r))
				continue;
			if (!fp && missing == UINT32_MAX)
				missing = r;
		}
		if (missing == UINT32_MAX)
			return 0;
		if (sst_now_ns() >= deadline)
			return squall_error_set(err, -ETIMEDOUT,
				"sst: member %u has not pushed a row that "
				"validates after %d ms (%llu of its segments "
				"failed their check)", t->peers[missing].id,
				timeout_ms, (unsigned long long)
				__atomic_load_n(&t->peers[missing].torn,
						__ATOMIC_RELAXED));
		usleep(1000);
	}
}

uint32_t sst_my_rank(const struct sst *t)
{
	return t->me;
}

uint32_t sst_nmembers(const struct sst *t)
{
	return t->n;
}

uint32_t sst_member_id(const struct sst *t, uint32_t rank)
{
	assert(rank < t->n);
	return t->peers[rank].id;
}

const struct sst_layout *sst_get_layout(const struct sst *t)
{
	return t->layout;
}

static size_t col_off(const struct sst *t, uint32_t col, uint32_t i)
{
	const struct sst_col_layout *c;

	assert(col < t->layout->ncols);
	c = &t->layout->cols[col];
	assert(c->type != SST_COL_BYTES && i < c->count);
	return c->offset + (size_t)i * 8;
}

unsigned sst_take_row(struct sst *t, uint32_t rank)
{
	const struct sst_seg *segs = t->layout->segs;
	const uint8_t *land = t->table + (size_t)rank * t->row_size;
	uint8_t *valid = t->valid + (size_t)rank * t->row_size;
	uint64_t *since = t->torn_since + (size_t)rank * t->nsegs;
	unsigned taken = 0;

	for (uint32_t sg = 0; sg < t->nsegs; sg++) {
		switch (sst_seal_take(&segs[sg], sst_key(t, rank, sg), land,
				      valid, t->scratch)) {
		case SST_TAKE_SAME:
			break;
		case SST_TAKE_NEW:
			since[sg] = 0;
			t->stats.taken++;
			/* The header holds what only the SST's timers
			 * read: taking it is no work for predicates. */
			taken += sg > 0;
			break;
		case SST_TAKE_TORN:
		case SST_TAKE_STALE:
			/* Not an error: the next whole push is taken. Only
			 * one that never comes is (timed_checks). */
			if (!since[sg])
				since[sg] = sst_now_ns();
			__atomic_store_n(&t->peers[rank].torn,
					 t->peers[rank].torn + 1,
					 __ATOMIC_RELAXED);
			t->stats.torn++;
			break;
		}
	}
	return taken;
}

uint64_t sst_get(const struct sst *t, uint32_t rank, uint32_t col)
{
	assert(rank < t->n);
	/* Acquire: whatever a reader reads after seeing this value is at
	 * least as new as what was taken before it. */
	return __atomic_load_n(sst_word(t, rank, col_off(t, col, 0)),
			       __ATOMIC_ACQUIRE);
}

uint64_t sst_get_elem(const struct sst *t, uint32_t rank, uint32_t col,
		      uint32_t i)
{
	assert(rank < t->n);
	return __atomic_load_n(sst_word(t, rank, col_off(t, col, i)),
			       __ATOMIC_ACQUIRE);
}

size_t sst_get_bytes(const struct sst *t, uint32_t rank, uint32_t col,
		     void *dst, size_t len)
{
	const struct sst_col_layout *c;

	assert(rank < t->n && col < t->layout->ncols);
	c = &t->layout->cols[col];
	assert(c->type == SST_COL_BYTES);
	if (len > c->count)
		len = c->count;
	/* Word by word, each whole: the progress thread may be storing a
	 * newer copy meanwhile. */
	for (size_t at = 0; at < len; at += 8) {
		uint64_t w = __atomic_load_n(sst_word(t, rank, c->offset + at),
					     __ATOMIC_ACQUIRE);

		memcpy((uint8_t *)dst + at, &w, len - at < 8 ? len - at : 8);
	}
	return len;
}

void sst_set(struct sst *t, uint32_t col, uint64_t v)
{
	/* Release: a push posted after this store carries it, and earlier
	 * stores to the row too. */
	__atomic_store_n(sst_word(t, t->me, col_off(t, col, 0)), v,
			 __ATOMIC_RELEASE);
}

void sst_set_elem(struct sst *t, uint32_t col, uint32_t i, uint64_t v)
{
	__atomic_store_n(sst_word(t, t->me, col_off(t, col, i)), v,
			 __ATOMIC_RELEASE);
}

int sst_set_bytes(struct sst *t, uint32_t col, const void *src, size_t len)
{
	const struct sst_col_layout *c;

	if (col >= t->layout->ncols)
		return -EINVAL;
	c = &t->layout->cols[col];
	if (c->type != SST_COL_BYTES || len > c->count)
		return -EINVAL;
	memcpy(t->my_row + c->offset, src, len);
	return 0;
}

int sst_predicate_add(struct sst *t, enum sst_pred_kind kind,
		      sst_pred_fn pred, sst_trigger_fn trig, void *arg,
		      sst_pred_id *id)
{
	return sst_preds_add(&t->preds, kind, pred, trig, arg, id);
}

int sst_predicate_remove(struct sst *t, sst_pred_id id)
{
	return sst_preds_remove(&t->preds, id);
}

bool sst_suspected(const struct sst *t, uint32_t rank)
{
	assert(rank < t->n);
	return (__atomic_load_n(&t->known, __ATOMIC_ACQUIRE) >> rank) & 1;
}

bool sst_idle_armed(const struct sst *t)
{
	return atomic_load_explicit(&t->asleep, memory_order_relaxed);
}

void sst_get_stats(struct sst *t, struct sst_stats *out)
{
	pthread_mutex_lock(&t->push_lock);
	*out = t->stats;
	pthread_mutex_unlock(&t->push_lock);
	pthread_mutex_lock(&t->preds.lock);
	out->fired = t->preds.fired;
	pthread_mutex_unlock(&t->preds.lock);
}

void sst_wake(struct sst *t)
{
	/* The same handshake as a local push (progress.c): either the
	 * progress thread sees the count move and does not sleep, or we see
	 * it asleep and end its wait. */
	atomic_fetch_add_explicit(&t->local_pushes, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&t->asleep, memory_order_seq_cst))
		rdma_sq_wake(t->node);
}
