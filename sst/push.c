/*
 * push.c - writing the member's own row into every peer's copy of the
 * table.
 *
 * A push is one RDMA WRITE_WITH_IMM per live peer of a run of segments of
 * the member's row to the same offset in the peer's table. The immediate
 * makes the write visible to the peer's completion queue, so a peer that
 * has gone to sleep is woken by the push itself and never sleeps through
 * work. A write of the header for a heartbeat alone is a plain RDMA WRITE:
 * peers read heartbeats on their own timer, and an idle group then wakes
 * each member once per heartbeat period, not once per peer's heartbeat.
 *
 * The NIC reads a write's source when it sends it, not when it is posted,
 * so the row that threads keep writing is never a source. Each write goes
 * from a snapshot slot of its own (max_inflight per peer, one row each):
 * when the write is posted, its segments are sealed into the slot (copied,
 * stamped with the next sequence of each segment and a check, seal.c), and
 * the slot is not touched again until the write is known complete. What
 * lands is thus a segment the owner sealed whole, or a mix of two that
 * fails its check; the peer takes only whole ones (table.c).
 *
 * Per peer the pipeline holds at most max_inflight writes, and only one in
 * signal_every is signaled: its completion accounts for itself and the
 * unsignaled writes before it (RC writes on one queue pair complete in
 * order), so when fewer than max_inflight writes are outstanding, the slot
 * of the oldest possible one, posted % max_inflight, is free. A push that
 * finds a peer's pipeline full leaves its segments pending; later pushes
 * merge into them (the hull of the runs: the segments between hold the
 * member's current values, so sending them too is harmless) and the
 * progress thread sends the merged run when a completion frees room.
 * Sealing at post time means a peer always gets values at least as new as
 * those of the push that asked for the write.
 *
 * A post that fails marks that peer failed and leaves the others alone;
 * nothing here ever waits for the network.
 */
#include <assert.h>
#include <string.h>

#include "rdma/hook.h"
#include "sst/table.h"

static void merge(struct sst_peer *p, uint32_t slo, uint32_t shi, bool loud)
{
	p->loud |= loud;
	if (p->slo == p->shi) {
		p->slo = slo;
		p->shi = shi;
		return;
	}
	if (slo < p->slo)
		p->slo = slo;
	if (shi > p->shi)
		p->shi = shi;
}

/* Seal the pending segments into the peer's next slot; returns the piece
 * of the slot to send, which starts at byte *lo of the row. Called with
 * push_lock held. */
static struct rdma_sq_sge seal_pending(struct sst *t, uint32_t rank,
				       const struct sst_peer *p, uint32_t *lo)
{
	const struct sst_seg *segs = t->layout->segs;
	uint8_t *slot = t->slots + ((size_t)rank * t->opt.max_inflight +
				    p->posted % t->opt.max_inflight) *
				   t->row_size;
	uint32_t hi = sst_seg_end(&segs[p->shi - 1]);

	*lo = segs[p->slo].lo;
	for (uint32_t sg = p->slo; sg < p->shi; sg++)
		sst_seal(&segs[sg], sst_key(t, t->me, sg), ++t->seg_seq[sg],
			 t->my_row, slot);
	return (struct rdma_sq_sge){ .ptr = slot + *lo, .len = hi - *lo };
}

/* Post the pending segments of peer rank if the pipeline has room. Called
 * with push_lock held. Returns whether a write was posted. */
static bool flush_peer(struct sst *t, uint32_t rank, bool force_signal)
{
	struct sst_peer *p = &t->peers[rank];
	struct squall_error err;
	struct rdma_sq_sge sge;
	uint64_t raddr;
	bool signaled;
	uint32_t covered, lo;
	int rc;

	if (p->failed || p->slo == p->shi)
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
	sge = seal_pending(t, rank, p, &lo);
	raddr = p->raddr + lo;
	if (squall_hook_fail("stray_sst"))
		raddr += t->row_size;
	err.code = 0;
	if (!p->loud)
		rc = rdma_sq_write(t->node, p->id, &sge, 1, raddr, p->rkey,
				   sst_wrid(SST_WR_WRITE, rank, covered),
				   signaled ? RDMA_SQ_SIGNALED : 0, &err);
	else
		rc = rdma_sq_write_imm(t->node, p->id, &sge, 1, raddr,
				       p->rkey, t->me,
				       sst_wrid(SST_WR_WRITE, rank, covered),
				       signaled ? RDMA_SQ_SIGNALED : 0, &err);
	if (rc == -ENOMEM || rc == -EAGAIN) {
		/* The send queue is full (other users share it): keep the
		 * segments (the slot is sealed again next time), the next
		 * completion or pass retries. */
		t->stats.deferred++;
		return false;
	}
	if (rc) {
		p->failed = true;
		snprintf(p->post_error, sizeof(p->post_error), "%s",
			 err.code ? err.msg : strerror(-rc));
		__atomic_store_n(&p->post_failed, true, __ATOMIC_RELEASE);
		p->slo = p->shi = 0;
		return false;
	}
	p->inflight++;
	p->posted++;
	p->unsignaled = signaled ? 0 : p->unsignaled + 1;
	p->slo = p->shi = 0;
	p->loud = false;
	t->stats.writes++;
	return true;
}

void sst_push_segs(struct sst *t, uint32_t slo, uint32_t shi, bool loud,
		   bool post)
{
	bool wake = false;

	assert(slo < shi && shi <= t->nsegs);
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
		if (p->slo != p->shi)
			t->stats.merged++;
		merge(p, slo, shi, loud);
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
	p->done += covered;
	flush_peer(t, rank, false);
	pthread_mutex_unlock(&t->push_lock);
}

unsigned sst_flush_pending(struct sst *t)
{
	unsigned posted = 0;
	bool any = false;

	/* Most passes have nothing pending: look before taking the lock
	 * (a range missed here is one a completion or the next pass
	 * sends). */
	for (uint32_t r = 0; r < t->n && !any; r++)
		any = __atomic_load_n(&t->peers[r].slo, __ATOMIC_RELAXED) !=
		      __atomic_load_n(&t->peers[r].shi, __ATOMIC_RELAXED);
	if (!any)
		return 0;
	pthread_mutex_lock(&t->push_lock);
	for (uint32_t r = 0; r < t->n; r++)
		if (r != t->me && t->peers[r].slo != t->peers[r].shi)
			posted += flush_peer(t, r, false);
	pthread_mutex_unlock(&t->push_lock);
	return posted;
}

void sst_fence(struct sst *t, uint64_t fence[SST_MAX_MEMBERS])
{
	pthread_mutex_lock(&t->push_lock);
	for (uint32_t r = 0; r < t->n; r++) {
		const struct sst_peer *p = &t->peers[r];

		fence[r] = p->posted + (p->slo != p->shi);
	}
	pthread_mutex_unlock(&t->push_lock);
}

bool sst_fenced(struct sst *t, const uint64_t fence[SST_MAX_MEMBERS])
{
	bool all = true;

	pthread_mutex_lock(&t->push_lock);
	for (uint32_t r = 0; r < t->n; r++) {
		struct sst_peer *p = &t->peers[r];

		if (r == t->me || p->failed || p->done >= fence[r])
			continue;
		all = false;
		/* Unsignaled writes complete unseen until a signaled one
		 * after them does. */
		if (p->posted >= fence[r] && p->unsignaled) {
			merge(p, 0, 1, false);
			flush_peer(t, r, true);
		}
	}
	pthread_mutex_unlock(&t->push_lock);
	return all;
}

bool sst_peer_stop(struct sst *t, uint32_t rank)
{
	bool was;

	pthread_mutex_lock(&t->push_lock);
	was = t->peers[rank].failed;
	t->peers[rank].failed = true;
	t->peers[rank].slo = t->peers[rank].shi = 0;
	pthread_mutex_unlock(&t->push_lock);
	return !was;
}

/* The segments holding columns [first, first + n). */
static int col_segs(const struct sst *t, uint32_t first, uint32_t n,
		    uint32_t *slo, uint32_t *shi)
{
	const struct sst_layout *l = t->layout;

	if (n == 0 || first >= l->ncols || n > l->ncols - first)
		return -EINVAL;
	*slo = l->cols[first].seg;
	*shi = l->cols[first + n - 1].seg + 1;
	return 0;
}

int sst_push(struct sst *t)
{
	sst_push_segs(t, 0, t->nsegs, true, true);
	return 0;
}

int sst_push_cols(struct sst *t, uint32_t first, uint32_t n)
{
	uint32_t slo, shi;
	int rc = col_segs(t, first, n, &slo, &shi);

	if (rc)
		return rc;
	sst_push_segs(t, slo, shi, true, true);
	return 0;
}

int sst_push_cols_to(struct sst *t, uint32_t rank, uint32_t first,
		     uint32_t n)
{
	uint32_t slo, shi;
	struct sst_peer *p;
	int rc = col_segs(t, first, n, &slo, &shi);
	bool was;

	if (rc || rank >= t->n || rank == t->me)
		return -EINVAL;
	p = &t->peers[rank];
	pthread_mutex_lock(&t->push_lock);
	if (p->post_failed) {
		pthread_mutex_unlock(&t->push_lock);
		return -ENOTCONN;
	}
	if (p->inflight >= t->opt.max_inflight) {
		pthread_mutex_unlock(&t->push_lock);
		return -EAGAIN;
	}
	/* One write past the stop: flush_peer skips failed peers. */
	was = p->failed;
	p->failed = false;
	merge(p, slo, shi, true);
	rc = flush_peer(t, rank, true) ? 0 : -ENOTCONN;
	if (was)
		p->failed = true;
	p->slo = p->shi = 0;
	pthread_mutex_unlock(&t->push_lock);
	return rc;
}

int sst_mark_cols(struct sst *t, uint32_t first, uint32_t n)
{
	uint32_t slo, shi;
	int rc = col_segs(t, first, n, &slo, &shi);

	if (rc)
		return rc;
	sst_push_segs(t, slo, shi, true, false);
	return 0;
}
