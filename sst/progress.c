/*
 * progress.c - the SST's one progress thread: completions, heartbeats,
 * failure detection and predicate passes, and when to sleep.
 *
 * A pass takes the completions of the node's queue (a peer's push arrives
 * as a WRITE_WITH_IMM completion; the receive is posted again at once; a
 * completion of one of our signaled writes frees room in that peer's
 * pipeline), takes every peer segment that landed whole into the
 * validated copy (so predicates see a table that does not change during
 * the pass), checks the peers for failed posts and foreign fingerprints,
 * learns the suspicions in the peers' rows, sends pending pushes and
 * evaluates the predicates. Passes that read the clock (it can cost a
 * system call) also advance the heartbeat when its period is due and check
 * that every peer's heartbeat keeps changing.
 *
 * Idle policy (sst_idle in predicates.c): while passes see work (a peer's
 * push, a trigger) the thread spins, giving the CPU away between idle
 * passes and timing how long that took, and about every 10 ms it
 * compares its CPU time with the time it wanted the CPU (a crowded CPU
 * keeps the window short: predicates.h); after the spin window without
 * work it arms (sets `asleep`), runs one more pass, and if that is idle
 * too it blocks in rdma_sq_wait until a completion arrives or the next
 * heartbeat or suspicion deadline is due. Peers' pushes carry an
 * immediate, so they end the wait; only pure heartbeat pushes do not
 * (push.c), since no predicate reads the header and heartbeats are checked
 * on our own timer.
 * A local push from another thread increments local_pushes and then reads
 * `asleep`; this thread stores `asleep` and then reads local_pushes (both
 * seq_cst), so either it sees the push and stays awake, or the pusher sees
 * it asleep and signals its writes, whose completions end the wait. With no
 * live peer there is no completion to wait for, and the wait is capped at
 * ALONE_WAIT_MS.
 */
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rdma/tags.h"
#include "sst/table.h"

/* A push's immediate is the pusher's rank: within the SST's range. */
_Static_assert(SST_MAX_MEMBERS - 1 <= SQUALL_IMM_SST_LAST,
	       "SST ranks outgrow the SST's immediates (rdma/tags.h)");

#define WC_BATCH 32
#define ALONE_WAIT_MS 10
/* Idle passes before sleeping, at least; idle passes between clock
 * readings; passes under load between heartbeat and event checks (in the
 * Soft-RoCE VM under bench membership's load, every 64 passes left a dead
 * peer's disconnect unread for 20-40 ms, every 8 for 2-11 ms). */
#define MIN_IDLE_POLLS 8
#define CLOCK_EVERY_IDLE 4
#define CLOCK_EVERY_BUSY 8
/* Connection events (rdma_sq_want_events) are looked at this often at
 * least. */
#define EVENTS_EVERY_NS 1000000ull

static void report(struct sst *t, uint32_t rank, uint32_t by, const char *why)
{
	__atomic_store_n(&t->known, t->known | 1ull << rank, __ATOMIC_RELEASE);
	t->stats.suspicions++;
	if (t->opt.on_suspect)
		t->opt.on_suspect(t, rank, by, why, t->opt.suspect_arg);
}

/* Suspect member rank: stop pushing to it, record it in my row's
 * suspicion word and push that word, so that every survivor learns it. */
static void suspect(struct sst *t, uint32_t rank, uint32_t by, const char *why)
{
	uint64_t *word = sst_word(t, t->me, SST_HDR_SUSPECTED);

	if ((t->known >> rank) & 1)
		return;
	/* A peer that refused a write of ours is not suspected for what this
	 * member sees of the broken connection (sst_refused), for a while. */
	if (by == t->me && rank != t->me && t->peers[rank].refused_until &&
	    sst_now_ns() < t->peers[rank].refused_until)
		return;
	if (rank != t->me) {
		sst_peer_stop(t, rank);
		/* Only this thread writes the word. */
		__atomic_store_n(word, *word | 1ull << rank, __ATOMIC_RELEASE);
		sst_push_segs(t, 0, 1, true, true);
	}
	report(t, rank, by, why);
}

void sst_suspect(struct sst *t, uint32_t rank, const char *why)
{
	if (rank < t->n && rank != t->me)
		suspect(t, rank, t->me, why);
}

void sst_refused(struct sst *t, uint32_t rank, const char *why)
{
	if (rank >= t->n || rank == t->me || ((t->known >> rank) & 1) ||
	    t->peers[rank].refused_until)
		return;
	t->peers[rank].refused_until = sst_now_ns() +
		(uint64_t)t->opt.suspect_timeout_ms * 1000000ull;
	if (!t->refusal[0])
		snprintf(t->refusal, sizeof(t->refusal), "%s", why);
}

const char *sst_refusal(const struct sst *t)
{
	return t->refusal;
}

static void refused_wc(struct sst *t, const struct rdma_sq_wc *wc)
{
	char why[160];

	for (uint32_t r = 0; r < t->n; r++)
		if (r != t->me && t->peers[r].id == wc->peer) {
			snprintf(why, sizeof(why), "member %u refused %s "
				 "(remote access error)", wc->peer,
				 wc->wr_id >> 56 == SQUALL_WR_TAG_SMC ?
				 "an SMC write of this member's" :
				 wc->wr_id >> 56 == SQUALL_WR_TAG_RDMC ?
				 "an RDMC block write of this member's" :
				 sst_wrid_is_ours(wc->wr_id) ?
				 "a push of this member's SST row" :
				 "a request of this member's");
			sst_refused(t, r, why);
			return;
		}
}

static void on_failed_wc(struct sst *t, uint32_t rank,
			 const struct rdma_sq_wc *wc)
{
	char why[160];

	snprintf(why, sizeof(why), "%s member %u failed: %s",
		 sst_wrid_kind(wc->wr_id) == SST_WR_WRITE ? "push to" :
		 "receive from", t->peers[rank].id,
		 wc->status_text ? wc->status_text : "error");
	suspect(t, rank, t->me, why);
}

static void repost(struct sst *t, uint32_t rank, uint32_t i)
{
	struct squall_error err;
	int rc;

	if ((t->known >> rank) & 1)
		return;
	err.code = 0;
	rc = sst_post_recv(t, rank, i, &err);
	if (rc) {
		char why[SQUALL_ERRMSG_MAX + 32];

		snprintf(why, sizeof(why), "receive from member %u: %s",
			 t->peers[rank].id, err.code ? err.msg : strerror(-rc));
		suspect(t, rank, t->me, why);
	}
}

/* A receive of ours completed: a peer's push, or another part's
 * immediate or message, handed to the dispatch hooks. */
static bool on_recv(struct sst *t, uint32_t rank, const struct rdma_sq_wc *wc)
{
	const struct sst_dispatch *d = t->opt.dispatch;
	uint32_t i = sst_wrid_covered(wc->wr_id);
	bool work = true;

	if (wc->opcode == RDMA_SQ_OP_RECV_IMM && wc->imm < SST_MAX_MEMBERS)
		t->stats.received++;
	else if (wc->opcode == RDMA_SQ_OP_RECV_IMM)
		work = d && d->on_imm && d->on_imm(d->arg, rank, wc->imm);
	else if (d && d->on_message && t->opt.recv_buf_size)
		work = d->on_message(d->arg, rank, sst_recv_buf(t, rank, i),
				     wc->byte_len);
	repost(t, rank, i);
	return work;
}

/* Take the completions; returns how many were work: a peer's push, or a
 * failure. The completions of our own writes only free pipeline room. */
static int take_completions(struct sst *t)
{
	struct rdma_sq_wc wc[WC_BATCH];
	int n, work = 0;

	n = rdma_sq_poll(t->node, wc, WC_BATCH);
	/* First the refusals of this member's own requests (a write outside
	 * what the peer granted, or to a peer whose keys went first as it
	 * died), before another completion of the batch makes this member
	 * suspect that peer (rdma_sq_poll failed it for the whole batch). A
	 * receive's refusal is the writer's fault, the peer's; a READ's is
	 * point-to-point's to judge. */
	for (int i = 0; i < n; i++)
		if ((wc[i].flags & RDMA_SQ_WC_REMOTE_ACCESS) &&
		    !(sst_wrid_is_ours(wc[i].wr_id) &&
		      sst_wrid_kind(wc[i].wr_id) != SST_WR_WRITE) &&
		    wc[i].wr_id >> 56 != SQUALL_WR_TAG_P2P_READ)
			refused_wc(t, &wc[i]);
	for (int i = 0; i < n; i++) {
		uint32_t rank = sst_wrid_rank(wc[i].wr_id);
		const struct sst_dispatch *d = t->opt.dispatch;

		/* Other parts' work on a shared queue is theirs to judge. */
		if (!sst_wrid_is_ours(wc[i].wr_id)) {
			if (d && d->on_wc && d->on_wc(d->arg, &wc[i]))
				work++;
			continue;
		}
		if (rank >= t->n || rank == t->me)
			continue;
		if (wc[i].status) {
			/* What it wrote before it failed is the last word
			 * of it the suspicion's reader gets. */
			sst_take_row(t, rank);
			on_failed_wc(t, rank, &wc[i]);
			work++;
			continue;
		}
		if (sst_wrid_kind(wc[i].wr_id) == SST_WR_WRITE) {
			sst_write_done(t, rank, sst_wrid_covered(wc[i].wr_id));
		} else if (on_recv(t, rank, &wc[i])) {
			work++;
		}
	}
	return work;
}

/* Take whatever landed whole in every peer's row, suspected ones too:
 * what a member wrote before it was suspected still counts (the view
 * change reads it). Every pass looks, not only after a push's
 * completion: the bytes are in memory before the completion is, and a
 * look costs a load per segment when nothing moved. Returns whether a
 * segment beyond the header was taken. */
static bool take_rows(struct sst *t)
{
	bool work = false;

	for (uint32_t r = 0; r < t->n; r++)
		if (r != t->me && sst_take_row(t, r))
			work = true;
	return work;
}

static void heartbeat(struct sst *t, uint64_t now)
{
	uint64_t *hb = sst_word(t, t->me, SST_HDR_HEARTBEAT);

	if (now < t->next_hb_ns)
		return;
	__atomic_store_n(hb, *hb + 1, __ATOMIC_RELEASE);
	sst_push_segs(t, 0, 1, false, true);
	t->stats.heartbeats++;
	/* From now, not from the missed due time: after a stall, one beat,
	 * not a burst. */
	t->next_hb_ns = now + (uint64_t)t->opt.heartbeat_ms * 1000000ull;
}

/* Failures that need no clock: a failed post, a foreign fingerprint.
 * Returns false when the peer is now suspected. */
static bool check_peer(struct sst *t, uint32_t r)
{
	struct sst_peer *p = &t->peers[r];
	char why[SQUALL_ERRMSG_MAX + 64];
	bool post_failed;
	uint64_t fp;

	/* Set under push_lock with the message; looked at without it on
	 * every pass (a lock per peer per pass is not free). */
	post_failed = __atomic_load_n(&p->post_failed, __ATOMIC_ACQUIRE);
	if (post_failed) {
		pthread_mutex_lock(&t->push_lock);
		snprintf(why, sizeof(why), "push to member %u failed: %s",
			 p->id, p->post_error);
		pthread_mutex_unlock(&t->push_lock);
		suspect(t, r, t->me, why);
		return false;
	}
	/* From the validated header: exactly what the peer wrote. */
	fp = __atomic_load_n(sst_word(t, r, SST_HDR_FINGERPRINT), __ATOMIC_ACQUIRE);
	if (!fp || fp == t->fingerprint)
		return true;
	snprintf(why, sizeof(why), "member %u's table fingerprint %016" PRIx64
		 " differs from %016" PRIx64, p->id, fp, t->fingerprint);
	__atomic_store_n(&p->fp_bad, true, __ATOMIC_RELEASE);
	suspect(t, r, t->me, why);
	return false;
}

/* A peer segment that keeps failing its check (a writer that is broken,
 * or means harm) is suspected like silence: the reader never waits on it
 * forever. credit: time this thread did not run. */
static void check_torn(struct sst *t, uint32_t r, uint64_t now,
		       uint64_t timeout, uint64_t credit)
{
	uint64_t *since = t->torn_since + (size_t)r * t->nsegs;
	char why[160];

	for (uint32_t sg = 0; sg < t->nsegs; sg++) {
		if (!since[sg])
			continue;
		since[sg] += credit;
		if (since[sg] > now)
			since[sg] = now;
		if (now - since[sg] <= timeout)
			continue;
		snprintf(why, sizeof(why), "member %u's row has not validated "
			 "for %" PRIu64 " ms (segment %u of %u; %" PRIu64
			 " failed checks)", t->peers[r].id,
			 (now - since[sg]) / 1000000, sg, t->nsegs,
			 t->peers[r].torn);
		suspect(t, r, t->me, why);
		return;
	}
}

/* Heartbeats: ours when due, and every peer's, whose value must change
 * within the suspicion timeout. Silence is counted only while this member
 * was looking: checks come at least once per heartbeat period (a wait
 * never outlasts the next beat), so a longer gap means this thread did not
 * run (its process or machine stalled), and the gap is not held against
 * the peers, whose heartbeats could not be seen meanwhile. */
static void timed_checks(struct sst *t, uint64_t now)
{
	uint64_t timeout = (uint64_t)t->opt.suspect_timeout_ms * 1000000ull;
	uint64_t period = (uint64_t)t->opt.heartbeat_ms * 1000000ull;
	uint64_t gap = t->last_check_ns ? now - t->last_check_ns : 0;
	uint64_t credit = gap > 2 * period ? gap - period : 0;

	t->last_check_ns = now;
	if (credit)
		t->stats.stalls++;
	/* A dead peer's connections close long before its heartbeat is
	 * missed, but under load rdma_sq_poll never looks on its own (a VM
	 * run of bench membership read the close 3-42 ms after the kernel
	 * had it). It looks at the next poll that empties the queue: handled
	 * here, between polls, a peer's disconnect overtook its refusal of
	 * this member's write still in the queue (view_stray4 in CI: the
	 * writer stopped for want of a majority instead of naming the
	 * refusal). */
	if (now - t->events_ns >= EVENTS_EVERY_NS) {
		t->events_ns = now;
		rdma_sq_want_events(t->node);
	}
	heartbeat(t, now);
	for (uint32_t r = 0; r < t->n; r++) {
		struct sst_peer *p = &t->peers[r];
		uint64_t hb;
		char why[96];

		if (r == t->me || ((t->known >> r) & 1))
			continue;
		hb = __atomic_load_n(sst_word(t, r, SST_HDR_HEARTBEAT),
				     __ATOMIC_ACQUIRE);
		p->hb_change_ns += credit;
		if (p->hb_change_ns > now)
			p->hb_change_ns = now;
		if (hb != p->hb_seen) {
			p->hb_seen = hb;
			p->hb_change_ns = now;
		} else if (now - p->hb_change_ns > timeout) {
			snprintf(why, sizeof(why), "no heartbeat from member %u for %"
				 PRIu64 " ms", p->id, (now - p->hb_change_ns) / 1000000);
			suspect(t, r, t->me, why);
			continue;
		}
		check_torn(t, r, now, timeout, credit);
	}
}

/* Suspicions other members published in their rows. Not those of a
 * member this one suspects: it is out, and what it says of the others
 * (it stops hearing them once they stop pushing to it) is no reason to
 * suspect them. */
static bool believed(const struct sst *t, uint32_t r)
{
	return r != t->me && !t->peers[r].fp_bad && !((t->known >> r) & 1);
}

/* What member r's row says of suspicions: a member that says it is out
 * (its own bit, sst_leave) says nothing of the others. */
static uint64_t said(const struct sst *t, uint32_t r)
{
	uint64_t w = __atomic_load_n(sst_word(t, r, SST_HDR_SUSPECTED),
				     __ATOMIC_ACQUIRE);

	return w >> r & 1 ? 1ull << r : w;
}

static void learn_suspicions(struct sst *t)
{
	uint64_t all = 0, fresh;

	for (uint32_t r = 0; r < t->n; r++)
		if (believed(t, r))
			all |= said(t, r);
	if (t->n < 64)
		all &= (1ull << t->n) - 1;
	fresh = all & ~t->known;
	while (fresh) {
		uint32_t j = (uint32_t)__builtin_ctzll(fresh);
		uint32_t by = 0;
		char why[96];

		fresh &= fresh - 1;
		for (uint32_t r = 0; r < t->n; r++)
			if (believed(t, r) && (said(t, r) >> j & 1)) {
				by = r;
				break;
			}
		if (by == j)
			snprintf(why, sizeof(why), "member %u says it is out "
				 "(it stopped)", t->peers[j].id);
		else
			snprintf(why, sizeof(why), "suspected by member %u",
				 t->peers[by].id);
		suspect(t, j, by, why);
	}
}

/* One pass without the clock; returns whether it saw work. */
static bool pass(struct sst *t)
{
	bool work;

	work = take_completions(t) > 0;
	if (take_rows(t))
		work = true;
	for (uint32_t r = 0; r < t->n; r++)
		if (r != t->me && !((t->known >> r) & 1))
			check_peer(t, r);
	learn_suspicions(t);
	sst_flush_pending(t);
	if (sst_preds_eval(&t->preds))
		work = true;
	if (t->opt.dispatch && t->opt.dispatch->on_pass &&
	    t->opt.dispatch->on_pass(t->opt.dispatch->arg))
		work = true;
	t->stats.passes++;
	return work;
}

/* How long a blocking wait may last: until the next heartbeat or the
 * earliest suspicion deadline. */
static int wait_ms(struct sst *t, uint64_t now)
{
	uint64_t timeout = (uint64_t)t->opt.suspect_timeout_ms * 1000000ull;
	uint64_t until = t->next_hb_ns;
	bool alone = true;
	uint64_t ms;

	for (uint32_t r = 0; r < t->n; r++) {
		if (r == t->me || ((t->known >> r) & 1))
			continue;
		alone = false;
		if (t->peers[r].hb_change_ns + timeout < until)
			until = t->peers[r].hb_change_ns + timeout;
	}
	if (until <= now)
		return 0;
	ms = (until - now + 999999) / 1000000;
	if (alone && ms > ALONE_WAIT_MS)
		ms = ALONE_WAIT_MS;
	return (int)ms;
}

void sst_leave(struct sst *t)
{
	uint64_t *word = sst_word(t, t->me, SST_HDR_SUSPECTED);

	__atomic_fetch_or(word, 1ull << t->me, __ATOMIC_RELEASE);
	sst_push_segs(t, 0, 1, true, true);
}

/* This thread's CPU time, ns. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The thread's share of the CPU while it wanted one, for the adaptive
 * policy (predicates.h): its CPU time since cpu0 over the wall time since
 * t0 less the time it slept since then. */
struct cpu_share {
	uint64_t t0;
	uint64_t cpu0;
	uint64_t slept;
};

static void share_check(struct sst_idle *idle, struct cpu_share *c,
			uint64_t now)
{
	uint64_t wall = now - c->t0, cpu;

	if (wall < SST_IDLE_SHARE_EVERY_NS)
		return;
	cpu = thread_cpu_ns();
	sst_idle_cpu_share(idle, wall > c->slept ? wall - c->slept : 0,
			   cpu - c->cpu0);
	*c = (struct cpu_share){ .t0 = now, .cpu0 = cpu };
}

void *sst_progress_main(void *arg)
{
	struct sst *t = arg;
	struct sst_idle idle;
	struct cpu_share share = { 0 };
	uint_fast64_t armed_pushes = 0;
	uint64_t passes = 0;
	bool measures;   /* time the yields and the CPU share (adaptive) */

	sst_idle_init(&idle, (uint64_t)t->opt.spin_us * 1000,
		      (uint64_t)t->opt.spin_max_us * 1000, MIN_IDLE_POLLS,
		      CLOCK_EVERY_IDLE, sst_now_ns());
	sst_idle_set_policy(&idle, t->opt.idle);
	measures = sst_idle_measures_cpu(&idle);
	if (measures)
		share = (struct cpu_share){ .t0 = sst_now_ns(),
					    .cpu0 = thread_cpu_ns() };
	while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
		bool work = pass(t);
		uint64_t now = 0;
		int ms;

		/* The clock when the idle policy needs it, and now and then
		 * under load for the heartbeats. */
		if (sst_idle_needs_clock(&idle, work) ||
		    ++passes % CLOCK_EVERY_BUSY == 0) {
			now = sst_now_ns();
			timed_checks(t, now);
			if (measures)
				share_check(&idle, &share, now);
		}
		switch (sst_idle_after_pass(&idle, work, now)) {
		case SST_IDLE_SPIN:
			if (atomic_load_explicit(&t->asleep, memory_order_relaxed))
				atomic_store(&t->asleep, false);
			/* An idle spin gives way to whatever else is runnable
			 * on this CPU (another member's progress thread, the
			 * RDMA device's kernel work): with more busy threads
			 * than CPUs, spinning through their time slices would
			 * delay exactly the work this thread waits for. With
			 * nothing else runnable the yield returns at once. */
			if (!work) {
				uint64_t t0 = measures ? sst_now_ns() : 0;

				sched_yield();
				if (measures)
					sst_idle_yielded(&idle, sst_now_ns() - t0);
			}
			break;
		case SST_IDLE_ARM:
			atomic_store_explicit(&t->asleep, true, memory_order_seq_cst);
			armed_pushes = atomic_load_explicit(&t->local_pushes,
							    memory_order_seq_cst);
			break;
		case SST_IDLE_BLOCK:
			ms = wait_ms(t, now);
			if (ms > 0 && atomic_load_explicit(&t->local_pushes,
			    memory_order_seq_cst) == armed_pushes &&
			    !atomic_load(&t->stop)) {
				t->stats.sleeps++;
				rdma_sq_wait(t->node, ms);
				if (measures)
					share.slept += sst_now_ns() - now;
			}
			atomic_store(&t->asleep, false);
			sst_idle_woken(&idle);
			break;
		}
	}
	return NULL;
}
