/*
 * push.c - writing the member's own row into every peer's copy of the
 * table.
 *
 * A push is one RDMA WRITE_WITH_IMM per live peer of a byte range of the
 * member's row to the same offset in the peer's table. The immediate makes
 * the write visible to the peer's completion queue, so a peer that has
 * gone to sleep is woken by the push itself and never sleeps through work.
 * A write of the heartbeat word alone is a plain RDMA WRITE: no predicate
 * reads the row header, peers read heartbeats on their own timer, and an
 * idle group then wakes each member once per heartbeat period, not once
 * per peer's heartbeat.
 *
 * Per peer the pipeline holds at most max_inflight writes, and only one in
 * signal_every is signaled: its completion accounts for itself and the
 * unsignaled writes before it (RC writes on one queue pair complete in
 * order). A push that finds a peer's pipeline full leaves its range pending;
 * later pushes merge into it (the hull of the ranges: the bytes between
 * them are the member's own current row, so writing them too is harmless)
 * and the progress thread sends the merged range when a completion frees
 * room. The NIC reads the row when it sends, so a peer always gets values at
 * least as new as those of the push that posted the write, and since writes
 * land in order a counter never goes back on the peer's side.
 *
 * A post that fails marks that peer failed and leaves the others alone;
 * nothing here ever waits for the network.
 */
#include <assert.h>
#include <string.h>

#include "sst/table.h"

static void merge(struct sst_peer *p, uint32_t lo, uint32_t hi)
{
	if (p->lo == p->hi) {
		p->lo = lo;
		p->hi = hi;
		return;
	}
	if (lo < p->lo)
		p->lo = lo;
	if (hi > p->hi)
		p->hi = hi;
}

/* Post the pending range of peer rank if the pipeline has room. Called
 * with push_lock held. Returns whether a write was posted. */
static bool flush_peer(struct sst *t, uint32_t rank, bool force_signal)
{
	struct sst_peer *p = &t->peers[rank];
	struct squall_error err;
	struct rdma_sq_sge sge;
	bool signaled;
	uint32_t covered;
	int rc;

	if (p->failed || p->lo == p->hi)
		return false;
	if (p->inflight >= t->opt.max_inflight) {
		t->stats.deferred++;
		return false;
	}
	/* Signal when the batch is full, and always for the write that fills
	 * the pipeline, so that a full pipeline always has a completion
	 * coming that drains it. */
	signaled = force_signal || p->unsignaled + 1 >= t->opt.signal_every ||
		   p->inflight + 1 >= t->opt.max_inflight;
	covered = signaled ? p->unsignaled + 1 : 0;
	sge.ptr = t->my_row + p->lo;
	sge.len = p->hi - p->lo;
	err.code = 0;
	if (p->lo >= SST_HDR_HEARTBEAT && p->hi <= SST_HDR_HEARTBEAT + 8)
		rc = rdma_sq_write(t->node, p->id, &sge, 1, p->raddr + p->lo,
				   p->rkey, sst_wrid(SST_WR_WRITE, rank, covered),
				   signaled ? RDMA_SQ_SIGNALED : 0, &err);
	else
		rc = rdma_sq_write_imm(t->node, p->id, &sge, 1,
				       p->raddr + p->lo, p->rkey, t->me,
				       sst_wrid(SST_WR_WRITE, rank, covered),
				       signaled ? RDMA_SQ_SIGNALED : 0, &err);
	if (rc == -ENOMEM || rc == -EAGAIN) {
		/* The send queue is full (other users share it): keep the
		 * range, the next completion or pass retries. */
		t->stats.deferred++;
		return false;
	}
	if (rc) {
		p->failed = true;
		p->post_failed = true;
		snprintf(p->post_error, sizeof(p->post_error), "%s",
			 err.code ? err.msg : strerror(-rc));
		p->lo = p->hi = 0;
		return false;
	}
	p->inflight++;
	p->unsignaled = signaled ? 0 : p->unsignaled + 1;
	p->lo = p->hi = 0;
	t->stats.writes++;
	return true;
}

void sst_push_range(struct sst *t, uint32_t lo, uint32_t hi, bool post)
{
	bool wake = false;

	assert(lo < hi && hi <= t->row_size);
	if (post) {
		/* Pairs with the progress thread's store of `asleep` before
		 * its last look at local_pushes (progress.c): either it sees
		 * this push and does not sleep, or we see it asleep and
		 * signal our writes, whose completions wake it. */
		atomic_fetch_add_explicit(&t->local_pushes, 1,
					  memory_order_seq_cst);
		wake = atomic_load_explicit(&t->asleep, memory_order_seq_cst);
	}
	pthread_mutex_lock(&t->push_lock);
	if (post)
		t->stats.pushes++;
	for (uint32_t r = 0; r < t->n; r++) {
		struct sst_peer *p = &t->peers[r];

		if (r == t->me || p->failed)
			continue;
		if (p->lo != p->hi)
			t->stats.merged++;
		merge(p, lo, hi);
		if (post)
			flush_peer(t, r, wake);
	}
	pthread_mutex_unlock(&t->push_lock);
}

void sst_write_done(struct sst *t, uint32_t rank, uint32_t covered)
{
	struct sst_peer *p = &t->peers[rank];

	pthread_mutex_lock(&t->push_lock);
	assert(covered <= p->inflight);
	p->inflight -= covered;
	flush_peer(t, rank, false);
	pthread_mutex_unlock(&t->push_lock);
}

unsigned sst_flush_pending(struct sst *t)
{
	unsigned posted = 0;

	pthread_mutex_lock(&t->push_lock);
	for (uint32_t r = 0; r < t->n; r++)
		if (r != t->me && t->peers[r].lo != t->peers[r].hi)
			posted += flush_peer(t, r, false);
	pthread_mutex_unlock(&t->push_lock);
	return posted;
}

bool sst_peer_stop(struct sst *t, uint32_t rank)
{
	bool was;

	pthread_mutex_lock(&t->push_lock);
	was = t->peers[rank].failed;
	t->peers[rank].failed = true;
	t->peers[rank].lo = t->peers[rank].hi = 0;
	pthread_mutex_unlock(&t->push_lock);
	return !was;
}

static int col_range(const struct sst *t, uint32_t first, uint32_t n,
		     uint32_t *lo, uint32_t *hi)
{
	const struct sst_layout *l = t->layout;

	if (n == 0 || first >= l->ncols || n > l->ncols - first)
		return -EINVAL;
	*lo = (uint32_t)l->cols[first].offset;
	*hi = (uint32_t)(l->cols[first + n - 1].offset +
			 l->cols[first + n - 1].size);
	return 0;
}

int sst_push(struct sst *t)
{
	sst_push_range(t, 0, (uint32_t)t->row_size, true);
	return 0;
}

int sst_push_cols(struct sst *t, uint32_t first, uint32_t n)
{
	uint32_t lo, hi;
	int rc = col_range(t, first, n, &lo, &hi);

	if (rc)
		return rc;
	sst_push_range(t, lo, hi, true);
	return 0;
}

int sst_mark_cols(struct sst *t, uint32_t first, uint32_t n)
{
	uint32_t lo, hi;
	int rc = col_range(t, first, n, &lo, &hi);

	if (rc)
		return rc;
	sst_push_range(t, lo, hi, false);
	return 0;
}
