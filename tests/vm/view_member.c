/*
 * view_member - one member of a view-change test run (tests/vm/view_*.sh,
 * bench/membership.sh).
 *
 * Every member streams ordered messages at --rate per second for --secs
 * seconds (or until --stop-file exists), while the script kills or stops
 * members under it; then it closes the group and says what it delivered.
 * A member can also kill itself (SIGKILL, as kill -9 would) at a precise
 * moment: --die-after-ms M after it is ready, or --die-on-commit K as
 * soon as it sees the K-th ragged trim agreed, i.e. in the middle of a
 * view change, which a script polling the output would often miss.
 * With a test-hook build (meson -Dtest_hooks=true), --die-at POINT[:K]
 * dies inside the group at a named protocol point (rdma/hook.h); that
 * DYING line is on stderr. --fail-at POINT[:K] fails a step there (e.g.
 * rdmc_lease: the 5th lease of a large message's buffer).
 * Each message is {sender, pad, counter, len, checksum of the rest} plus
 * bytes pseudo-random from (sender, counter), so every byte is checked on
 * delivery, and each sender's counters must arrive exactly in order: a
 * counter below the next expected one is a duplicate, one above it a gap.
 * Deliveries are hashed per epoch over (sender, counter, seq), so members
 * that agree on each view's deliveries print the same hashes.
 *
 * Upcalls as applications use them: with --keep K the deliver upcall
 * keeps every K-th delivery (returns true) and the watcher releases it
 * only after a later view is installed (or at the end), checking first
 * that its bytes did not change while kept: memory the group gave back
 * under the application shows up as a damaged kept delivery. With
 * --echo K the member sends nothing from its main thread; its deliver
 * upcall answers each message of the first view's first member with K
 * ordered sends of its own (an upcall send never waits: one that finds
 * the window full, or the view changing, is refused and counted). With
 * --p2p-flood a second thread sends point-to-point messages to the next
 * member of the first view as fast as the group takes them (a refusal,
 * -EAGAIN, is counted and tried again), beside the ordered stream. With
 * --rate 0 the member sends nothing and waits for its end. With
 * --check-unheld (and no --keep) it counts, once it stopped sending and
 * before it closes, the region's page-aligned buffers (extents: messages
 * above 64 KiB) in the delivered state: every delivery was released, so
 * each one left is a message the group handed to nobody (it waits up to
 * 60 s for the others' last messages). Lines:
 *
 *   READY member=I
 *   VIEW member=I epoch=E members=a,b,c wall_ms=T
 *   FAILURE member=I failed=J wall_ms=T why=...
 *   COMMIT member=I n=K wall_ms=T          (group_stats commits went up)
 *   STOPPED member=I code=C why=...        (the group stopped, once)
 *   DYING member=I wall_ms=T why=...       (just before it kills itself)
 *   EPOCH member=I epoch=E count=C hash=H  (at the end, per epoch)
 *   FROM member=I sender=J count=C         (per member of the first view)
 *   STATS member=I epoch=E wedges=W commits=C resent=R
 *   KEPT member=I kept=K released=R damaged=D   (with --keep)
 *   P2P member=I to=J sent=S refused=R abandoned=A failed=F (with
 *          --p2p-flood; A: group_stats p2p_abandoned; F: its messages
 *          that send_failed reported, their connection gone first)
 *   P2PFROM member=I sender=J count=C          (point-to-point received)
 *   UNSENT member=I lost=L unknown=U first=F    (send_failed upcalls:
 *          -ENOTCONN / -ECONNABORTED; F the lowest counter told)
 *   ECHO member=I sent=S refused=R              (with --echo)
 *   VIEWSEND member=I tried=T sent=S refused=R  (with --view-send)
 *   UNHELD member=I count=C                     (with --check-unheld)
 *   SAVING member=I wall_ms=T                   (state_save begins)
 *   STATE member=I saved=S loaded=L             (state_save calls; 1 on
 *          a joiner whose state_load ran)
 *   RESULT member=I sent=S delivered=D bad=B dup=X gap=Y epochs=N
 *          view_change_ms=L misbehaved=M (peers removed for what they
 *          sent) joins_dropped=J (join connections closed unanswered)
 *          overlaps=O (upcalls found running beside another)
 *
 * With --view-send the view upcall of every view after the first tries one
 * ordered send (group_send_copy of a header alone, counter 2^62, outside
 * the stream): the view upcall runs during the view change, when an
 * upcall's send is refused (-EAGAIN), and a send taken there would go
 * before the member's messages the group still sends again (the others
 * would count it as a gap).
 * With --join the member joins the running group (group_join: its id is
 * one the .cfg marks joins = true). Its state is each sender's next
 * counter and the number of deliveries so far: state_save gives them as
 * they stand after the last delivery of the view before the join; the
 * joiner checks every sender's counters from there, as the others do, and
 * numbers its history's deliveries on from there. --state-save-ms M makes
 * state_save take M ms first (an application with much state).
 * Every upcall checks that no other upcall of the group runs meanwhile
 * on another thread (group.h: upcalls never run two at a time); each one
 * that finds another running prints an OVERLAP line on stderr, naming
 * both, and counts in RESULT's overlaps.
 * With --linger-stopped S a member whose group stopped waits S seconds
 * before it closes the group (an application busy elsewhere): its
 * process, and its node, stay up meanwhile.
 * With --transport-log L it prints the log upcall's lines up to level L
 * (0 errors, 1 with info, 2 with each connection event) on stderr, as
 *   TLOG member=I level=L wall_ms=T msg
 * which the scripts show with the rest of stderr when a test fails.
 * With --log FILE it also writes the run's history for the checker
 * (tests/vsync/log.h: a record per view, per successful send, per
 * delivery and at the end), which the scripts judge with vs_check.
 *
 * wall_ms is CLOCK_REALTIME in milliseconds, the clock `date +%s%3N`
 * reads in the scripts. Exit status: 0 when nothing was damaged,
 * duplicated or missing, no upcall overlapped another and group_close()
 * returned 0; 3 when the group stopped (STOPPED was printed); 1
 * otherwise.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <squall/group.h>

#include "payload.h"
#include "tests/vsync/log.h"

#define MAX_SIZES 16
#define MAX_SETS 8
#define MAX_IDS 64      /* member ids this program tracks: 0..63 */
#define MAX_EPOCHS 64
#define MAX_COMPLAINTS 20
#define P2P_MARK 0x50325031u  /* "P2P1" */

struct hdr {
	uint32_t sender;
	uint32_t pad;             /* P2P_MARK in a point-to-point message */
	uint64_t counter;
	uint64_t len;
	uint64_t sum;
};

struct epoch_rec {
	uint64_t epoch, count, hash;
};

/* A delivery the upcall kept (--keep), with what its header said. */
struct kept {
	struct kept *next;
	struct buf_desc d;
	struct hdr h;
	uint64_t epoch;           /* the view it was delivered in */
};

struct member {
	struct group *g;
	uint32_t id;
	size_t sizes[MAX_SIZES];
	unsigned nsizes;
	unsigned rate, secs;
	const char *stop_file;
	unsigned die_after_ms;    /* 0: never */
	uint64_t die_on_commit;   /* 0: never */
	uint64_t ready_ns;

	/* delivery side: the progress thread writes these, main reads them
	 * after group_close() has joined it */
	uint64_t next[MAX_IDS];
	uint64_t delivered, bad, dup, gap, last_seq, complaints;
	bool have_seq;
	struct epoch_rec ep[MAX_EPOCHS];
	unsigned nep, cur;
	uint32_t ids[MAX_IDS];    /* the first view's members */
	uint32_t nids;

	/* sending side */
	uint64_t sent;

	/* --keep: kept deliveries, released by the watcher */
	unsigned keep_every;
	pthread_mutex_t keep_lock;
	struct kept *kept_head, **kept_tail;
	uint64_t nkept, nreleased;
	atomic_uint_fast64_t kept_damaged;
	atomic_uint_fast64_t view_epoch;  /* the latest view's epoch */
	atomic_uint_fast64_t view_ns;     /* ... and when it came */

	/* send_failed upcalls (progress thread; read after close) */
	uint64_t unsent_lost, unsent_unknown, unsent_first;
	char unsent_why[256];

	/* --p2p-flood: the flooding thread's counts; received per sender
	 * (progress thread) */
	bool p2p_flood;
	bool check_unheld;      /* --check-unheld */
	uint64_t unheld;        /* what it found */
	atomic_bool flood_done;
	uint32_t p2p_to;
	uint64_t p2p_sent, p2p_refused;
	uint64_t p2p_failed;      /* send_failed upcalls of its messages */
	uint64_t p2p_from[MAX_IDS];

	/* --echo: sends from the deliver upcall */
	unsigned echo;
	uint64_t echo_refused;

	/* --view-send: sends from the view upcall (view thread) */
	bool view_send;
	uint64_t view_tried, view_sent, view_refused;

	/* the history (--log): records of the progress thread (views,
	 * deliveries) and the sending thread, tagged with one epoch */
	struct vs_log *log;
	pthread_mutex_t log_lock;
	uint64_t log_epoch, log_pos;

	/* --join, --state-save-ms: the state transfer */
	bool join;
	unsigned state_save_ms;
	uint64_t state_saves;     /* view thread; read after close */
	bool state_loaded;

	/* --transport-log: the highest level printed, -1 none */
	int tlog_level;
	/* --linger-stopped: seconds between the group's stop and the close */
	unsigned linger_stopped_s;

	/* upcalls found running beside another one */
	atomic_uint_fast64_t overlaps;

	atomic_bool stopped;      /* STOPPED printed */
	atomic_bool watch_done;   /* the watcher should return */
	pthread_mutex_t out;      /* one line at a time on stdout */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}


/* Print one line and flush it at once: the scripts watch the files as the
 * members run, and a member killed with -9 loses what it had buffered. */
static void say(struct member *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(struct member *m, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&m->out);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
	pthread_mutex_unlock(&m->out);
}

/* Fill (write) or read the bytes after the header; returns their
 * checksum (payload.h). */
static uint64_t fill_sum(uint8_t *p, size_t len, uint32_t sender,
			 uint64_t counter, bool write)
{
	return payload_fill_sum(p, len, (uint64_t)sender << 40 ^ counter, write);
}

static void complain(struct member *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void complain(struct member *m, const char *fmt, ...)
{
	va_list ap;

	if (m->complaints++ >= MAX_COMPLAINTS)
		return;
	fprintf(stderr, "view_member %u: ", m->id);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* The record of epoch e, made when first seen. */
static unsigned epoch_slot(struct member *m, uint64_t e)
{
	for (unsigned i = 0; i < m->nep; i++)
		if (m->ep[i].epoch == e)
			return i;
	if (m->nep == MAX_EPOCHS) {
		complain(m, "more than %d epochs", MAX_EPOCHS);
		m->bad++;
		return m->nep - 1;
	}
	m->ep[m->nep] = (struct epoch_rec){ e, 0, 0x9e3779b97f4a7c15ull };
	return m->nep++;
}


static int send_one(struct member *m, uint64_t counter, bool upcall);

/* --keep: hold on to a delivery (true: the group must not reuse it). */
static bool keep(struct member *m, const struct buf_desc *d,
		 const struct hdr *h)
{
	struct kept *k = malloc(sizeof(*k));

	if (!k)
		return false;
	*k = (struct kept){ .d = *d, .h = *h,
			    .epoch = atomic_load(&m->view_epoch) };
	pthread_mutex_lock(&m->keep_lock);
	*m->kept_tail = k;
	m->kept_tail = &k->next;
	m->nkept++;
	pthread_mutex_unlock(&m->keep_lock);
	return true;
}

/* Check that a kept delivery still holds what was delivered, then give
 * it back. */
static void unkeep(struct member *m, struct kept *k)
{
	struct hdr now;
	int r;

	memcpy(&now, k->d.ptr, sizeof(now));
	if (memcmp(&now, &k->h, sizeof(now)) ||
	    k->h.sum != fill_sum((uint8_t *)k->d.ptr + sizeof(now),
				 k->d.len - sizeof(now), k->h.sender,
				 k->h.counter, false)) {
		fprintf(stderr, "view_member %u: the delivery of member %u's "
			"message %" PRIu64 " (%zu bytes, kept in epoch %" PRIu64
			") changed while this member kept it: the group reused "
			"its memory\n", m->id, k->h.sender, k->h.counter,
			k->d.len, k->epoch);
		atomic_fetch_add(&m->kept_damaged, 1);
	}
	r = group_release(m->g, &k->d);
	if (r) {
		fprintf(stderr, "view_member %u: group_release of a kept "
			"delivery: %s\n", m->id, group_strerror(r));
		atomic_fetch_add(&m->kept_damaged, 1);
	}
	m->nreleased++;
	free(k);
}

/* Release the kept deliveries of views before the current one, once
 * that view is 300 ms old; all of them with all. The watcher's. */
static void release_kept(struct member *m, bool all)
{
	uint64_t epoch = atomic_load(&m->view_epoch);
	bool settled = now_ns() >= atomic_load(&m->view_ns) + 300000000ull;

	for (;;) {
		struct kept *k;

		pthread_mutex_lock(&m->keep_lock);
		k = m->kept_head;
		if (k && (all || (settled && k->epoch < epoch))) {
			m->kept_head = k->next;
			if (!m->kept_head)
				m->kept_tail = &m->kept_head;
		} else {
			k = NULL;
		}
		pthread_mutex_unlock(&m->keep_lock);
		if (!k)
			return;
		unkeep(m, k);
	}
}

/* --echo: answer a delivery with m->echo sends, from the upcall. */
static void echo_sends(struct member *m)
{
	for (unsigned i = 0; i < m->echo; i++) {
		int r = send_one(m, m->sent, true);

		if (r == -EAGAIN || r == -ENOMEM) {
			m->echo_refused++;
			return;
		}
		if (r)
			return;
		m->sent++;
	}
}

static bool deliver(void *ctx, uint32_t sender, uint64_t seq,
		    const struct buf_desc *d)
{
	struct member *m = ctx;
	struct epoch_rec *e = &m->ep[m->cur];
	struct hdr h;

	m->delivered++;
	if (m->have_seq && seq <= m->last_seq) {
		complain(m, "seq %" PRIu64 " after %" PRIu64, seq, m->last_seq);
		m->bad++;
	}
	m->have_seq = true;
	m->last_seq = seq;
	if (d->len < sizeof(h)) {
		complain(m, "seq %" PRIu64 " from %u: %zu bytes, no header", seq,
			 sender, d->len);
		m->bad++;
		return false;
	}
	memcpy(&h, d->ptr, sizeof(h));
	if (h.sender != sender || h.len != d->len || sender >= MAX_IDS) {
		complain(m, "seq %" PRIu64 " from %u: header says sender %u, "
			 "%" PRIu64 " bytes; %zu delivered", seq, sender,
			 h.sender, h.len, d->len);
		m->bad++;
		return false;
	}
	if (h.sum != fill_sum((uint8_t *)d->ptr + sizeof(h),
			      d->len - sizeof(h), sender, h.counter, false)) {
		complain(m, "seq %" PRIu64 " from %u counter %" PRIu64
			 ": damaged bytes", seq, sender, h.counter);
		m->bad++;
	}
	if (h.counter < m->next[sender]) {
		complain(m, "from %u: counter %" PRIu64 " again (next %" PRIu64
			 ")", sender, h.counter, m->next[sender]);
		m->dup++;
	} else {
		if (h.counter > m->next[sender]) {
			complain(m, "from %u: counter %" PRIu64 " but %" PRIu64
				 " expected", sender, h.counter,
				 m->next[sender]);
			m->gap++;
		}
		m->next[sender] = h.counter + 1;
	}
	e->count++;
	e->hash = mix(e->hash ^ ((uint64_t)sender << 48 ^ h.counter));
	e->hash = mix(e->hash ^ seq);
	if (m->log) {
		/* The payload's own checksum stands for its bytes. */
		pthread_mutex_lock(&m->log_lock);
		vs_log_deliver(m->log, m->log_epoch, m->log_pos++, sender,
			       h.counter, h.len, h.sum);
		pthread_mutex_unlock(&m->log_lock);
	}
	if (m->echo && m->nids && sender == m->ids[0])
		echo_sends(m);
	if (m->keep_every && m->delivered % m->keep_every == 0)
		return keep(m, d, &h);
	return false;
}

static void on_view(void *ctx, const struct group_view *v)
{
	struct member *m = ctx;
	char list[MAX_IDS * 12] = "";
	size_t at = 0;

	for (uint32_t i = 0; i < v->nmembers && at < sizeof(list); i++)
		at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%u",
				       i ? "," : "", v->members[i]);
	if (!m->nids)
		for (uint32_t i = 0; i < v->nmembers && i < MAX_IDS; i++)
			m->ids[m->nids++] = v->members[i];
	m->cur = epoch_slot(m, v->epoch);
	atomic_store(&m->view_ns, now_ns());
	atomic_store(&m->view_epoch, v->epoch);
	if (m->log) {
		pthread_mutex_lock(&m->log_lock);
		m->log_epoch = v->epoch;
		vs_log_view(m->log, v->epoch, v->members, v->nmembers,
			    m->log_pos);
		pthread_mutex_unlock(&m->log_lock);
	}
	say(m, "VIEW member=%u epoch=%" PRIu64 " members=%s wall_ms=%" PRIu64
	    "\n", m->id, v->epoch, list, wall_ms());
	if (m->view_send && v->epoch > 0) {
		struct hdr h = { .sender = m->id, .counter = 1ull << 62,
				 .len = sizeof(h) };
		struct squall_error err;
		uint8_t none;
		int r;

		h.sum = fill_sum(&none, 0, m->id, h.counter, false);
		r = group_send_copy(m->g, &h, sizeof(h), &err);
		m->view_tried++;
		if (!r)
			m->view_sent++;
		else if (r == -EAGAIN)
			m->view_refused++;
		else
			fprintf(stderr, "view_member %u: send from the view "
				"upcall: %s\n", m->id, err.msg);
	}
}

static void on_failure(void *ctx, uint32_t member, const char *why)
{
	struct member *m = ctx;

	say(m, "FAILURE member=%u failed=%u wall_ms=%" PRIu64 " why=%s\n",
	    m->id, member, wall_ms(), why);
}

static void on_p2p(void *ctx, uint32_t sender, const struct buf_desc *d)
{
	struct member *m = ctx;

	(void)d;
	if (sender < MAX_IDS)
		m->p2p_from[sender]++;
}

/* --p2p-flood: point-to-point messages to m->p2p_to as fast as taken. */
static void *flooder(void *arg)
{
	struct member *m = arg;
	struct alloc *a = group_get_allocator(m->g);

	while (!atomic_load(&m->flood_done) && !atomic_load(&m->stopped)) {
		size_t len = 64 + (m->p2p_sent % 16) * 60;
		struct squall_error err;
		struct hdr h = { .sender = m->id, .pad = P2P_MARK,
				 .counter = m->p2p_sent, .len = len };
		struct buf_desc d;
		int r;

		if (alloc_lease_wait(a, 1, &len, &d, 100))
			continue;
		memcpy(d.ptr, &h, sizeof(h));
		r = group_p2p_send(m->g, m->p2p_to, &d, &err);
		if (r == 0) {
			m->p2p_sent++;
			continue;
		}
		alloc_release(a, &d);
		if (r == -EAGAIN) {
			m->p2p_refused++;
			sched_yield();
			continue;
		}
		if (r != -ENOTCONN)
			fprintf(stderr, "view_member %u: p2p to %u: %s\n", m->id,
				m->p2p_to, err.msg);
		break;
	}
	return NULL;
}

static void on_send_failed(void *ctx, const struct buf_desc *d, int code,
			   const char *why)
{
	struct member *m = ctx;
	struct hdr h;

	if (d->len < sizeof(h))
		return;
	memcpy(&h, d->ptr, sizeof(h));
	if (h.pad == P2P_MARK) {
		m->p2p_failed++;
		return;
	}
	if (!m->unsent_lost && !m->unsent_unknown) {
		m->unsent_first = h.counter;
		snprintf(m->unsent_why, sizeof(m->unsent_why), "%s", why);
	}
	if (h.counter < m->unsent_first)
		m->unsent_first = h.counter;
	if (code == -ECONNABORTED)
		m->unsent_unknown++;
	else
		m->unsent_lost++;
}

static void say_stopped(struct member *m, int code, const char *why)
{
	if (!atomic_exchange(&m->stopped, true))
		say(m, "STOPPED member=%u code=%d why=%s\n", m->id, code, why);
}

/* Die as kill -9 would, saying so first (the wall clock of the line is
 * the kill time). */
static void die_now(struct member *m, const char *why)
{
	say(m, "DYING member=%u wall_ms=%" PRIu64 " why=%s\n", m->id,
	    wall_ms(), why);
	raise(SIGKILL);
}

/* Polls the group every 2 ms: a COMMIT line each time a ragged trim is
 * agreed, a STOPPED line when the group stops; dies when told to. */
static void *watcher(void *arg)
{
	struct member *m = arg;
	struct timespec nap = { 0, 2000000 };
	uint64_t commits = 0;

	while (!atomic_load(&m->watch_done)) {
		struct group_stats st;
		struct squall_error err;
		int r;

		group_stats(m->g, &st);
		if (st.commits > commits) {
			commits = st.commits;
			say(m, "COMMIT member=%u n=%" PRIu64 " wall_ms=%" PRIu64
			    "\n", m->id, commits, wall_ms());
			if (m->die_on_commit && commits >= m->die_on_commit)
				die_now(m, "--die-on-commit");
		}
		if (m->die_after_ms && now_ns() >= m->ready_ns +
		    (uint64_t)m->die_after_ms * 1000000ull)
			die_now(m, "--die-after-ms");
		r = group_status(m->g, &err);
		if (r)
			say_stopped(m, r, err.msg);
		if (m->keep_every)
			release_kept(m, false);
		nanosleep(&nap, NULL);
	}
	return NULL;
}

static bool keep_sending(struct member *m, uint64_t end_ns)
{
	if (atomic_load(&m->stopped) || now_ns() >= end_ns)
		return false;
	return !m->stop_file || access(m->stop_file, F_OK) != 0;
}

/* Lease, fill and send one message; 0, or the send's error. From an
 * upcall (upcall), nothing waits: no room is -EAGAIN or -ENOMEM. */
static int send_one(struct member *m, uint64_t counter, bool upcall)
{
	struct alloc *a = group_get_allocator(m->g);
	size_t len = m->sizes[counter % m->nsizes];
	struct squall_error err;
	struct buf_desc d;
	struct hdr h;
	int r;

	if (len < sizeof(h))
		len = sizeof(h);
	/* The region fills while the group is wedged; wait in short steps
	 * so that a stopped group is noticed. */
	while ((r = upcall ? alloc_lease(a, 1, &len, &d)
			   : alloc_lease_wait(a, 1, &len, &d, 1000)) == -ENOMEM) {
		if (upcall)
			return r;
		if (atomic_load(&m->stopped))
			return -ENOTCONN;
	}
	if (r) {
		fprintf(stderr, "view_member %u: lease %zu: %s\n", m->id, len,
			strerror(-r));
		return r;
	}
	h = (struct hdr){ .sender = m->id, .counter = counter, .len = len };
	h.sum = fill_sum((uint8_t *)d.ptr + sizeof(h), len - sizeof(h), m->id,
			 counter, true);
	memcpy(d.ptr, &h, sizeof(h));
	r = group_ordered_send(m->g, &d, &err);
	if (!r && m->log) {
		pthread_mutex_lock(&m->log_lock);
		vs_log_send(m->log, m->log_epoch, counter);
		pthread_mutex_unlock(&m->log_lock);
	}
	if (r) {
		/* Not sent: the buffer is ours to give back (an error here
		 * only says the group kept it). */
		alloc_release(a, &d);
		if (r == -ENOTCONN)
			say_stopped(m, r, err.msg);
		else if (upcall && r == -EAGAIN)
			;  /* the window is full or the view changing */
		else
			fprintf(stderr, "view_member %u: send %" PRIu64 ": %s\n",
				m->id, counter, err.msg);
	}
	return r;
}

/* Send at m->rate per second (nothing at 0) until time is up, the stop
 * file appears or the group stops. After a stall (a wedge) the schedule
 * restarts instead of bursting to catch up. */
static int stream(struct member *m)
{
	uint64_t period = m->rate ? 1000000000ull / m->rate : 0;
	uint64_t start = now_ns(), due = start;
	uint64_t end = start + (uint64_t)m->secs * 1000000000ull;

	while (keep_sending(m, end)) {
		uint64_t t = now_ns();
		int r;

		if (t < due) {
			struct timespec ts = { 0, (long)(due - t) };

			nanosleep(&ts, NULL);
		} else if (t > due + 100000000ull) {
			due = t;
		}
		if (m->echo || !m->rate) {
			/* The upcall sends, or nothing: this thread only
			 * waits. */
			struct timespec ts = { 0, 20000000 };

			nanosleep(&ts, NULL);
			continue;
		}
		r = send_one(m, m->sent, false);
		if (r == -ENOTCONN)
			return 0;
		if (r)
			return r;
		m->sent++;
		due += period;
	}
	return 0;
}

/* Buffers of the region that start on a page (extents: the buffers of
 * messages above the largest slot) in the delivered state: each is a
 * message the group handed over and the application has not released. */
static uint64_t count_unheld(struct member *m)
{
	struct alloc *a = group_get_allocator(m->g);
	uint64_t n = 0;
	size_t len, off;
	void *base;

	alloc_region(a, &base, &len);
	for (off = 0; off < len; off += ALLOC_PAGE_SIZE)
		if (alloc_state(a, (char *)base + off) == ALLOC_DELIVERED)
			n++;
	return n;
}

/* --check-unheld: this member released every delivery, so once the
 * others stopped too (the stop file) and what they sent is delivered, no
 * buffer may stay delivered: one that does was handed to nobody and is
 * lost to the region. Waits up to 60 s for the count to reach 0. */
static void check_unheld(struct member *m)
{
	uint64_t n = count_unheld(m);

	for (unsigned i = 0; n && i < 300 && !atomic_load(&m->stopped); i++) {
		struct timespec ts = { 0, 200000000 };

		nanosleep(&ts, NULL);
		n = count_unheld(m);
	}
	say(m, "UNHELD member=%u count=%" PRIu64 "\n", m->id, n);
	m->unheld = n;
}

/* ---- upcalls never run two at a time ---------------------------------- */

/* The name of the upcall running (NULL: none), and how deep this thread
 * is in upcalls (one may run inside another on the same thread: the
 * group's own calls from an upcall). */
static _Atomic(const char *) running;
static _Thread_local unsigned depth;

static void up_in(struct member *m, const char *name)
{
	const char *was = NULL;

	if (depth++)
		return;
	if (!atomic_compare_exchange_strong(&running, &was, name)) {
		atomic_fetch_add(&m->overlaps, 1);
		fprintf(stderr, "view_member %u: OVERLAP: the %s upcall began "
			"while the %s upcall ran on another thread\n", m->id,
			name, was);
	}
}

static void up_out(const char *name)
{
	const char *me = name;

	if (--depth)
		return;
	/* Unchanged when this one found another running. */
	atomic_compare_exchange_strong(&running, &me, NULL);
}

/* The application's state for a joiner: each sender's next counter, and
 * how many deliveries the history holds (the joiner's first is the next
 * position). */
struct state {
	uint64_t next[MAX_IDS];
	uint64_t pos;
};

static int state_save(void *ctx, void **data, size_t *len)
{
	struct member *m = ctx;
	struct state *p;

	up_in(m, "state_save");
	say(m, "SAVING member=%u wall_ms=%" PRIu64 "\n", m->id, wall_ms());
	if (m->state_save_ms) {
		struct timespec ts = { m->state_save_ms / 1000,
				       (long)(m->state_save_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	p = malloc(sizeof(*p));
	if (p) {
		memcpy(p->next, m->next, sizeof(m->next));
		pthread_mutex_lock(&m->log_lock);
		p->pos = m->log_pos;
		pthread_mutex_unlock(&m->log_lock);
		*data = p;
		*len = sizeof(*p);
		m->state_saves++;
	}
	up_out("state_save");
	return p ? 0 : -ENOMEM;
}

static void state_load(void *ctx, const void *data, size_t len)
{
	struct member *m = ctx;

	up_in(m, "state_load");
	if (len == sizeof(struct state)) {
		const struct state *s = data;

		memcpy(m->next, s->next, sizeof(m->next));
		m->log_pos = s->pos;
		m->state_loaded = true;
	} else {
		complain(m, "state of %zu bytes, not %zu", len,
			 sizeof(struct state));
		m->bad++;
	}
	up_out("state_load");
}

static bool up_deliver(void *ctx, uint32_t sender, uint64_t seq,
		       const struct buf_desc *d)
{
	bool kept;

	up_in(ctx, "deliver");
	kept = deliver(ctx, sender, seq, d);
	up_out("deliver");
	return kept;
}

static void up_view(void *ctx, const struct group_view *v)
{
	up_in(ctx, "view");
	on_view(ctx, v);
	up_out("view");
}

static void up_failure(void *ctx, uint32_t member, const char *why)
{
	up_in(ctx, "failure");
	on_failure(ctx, member, why);
	up_out("failure");
}

static void up_p2p(void *ctx, uint32_t sender, const struct buf_desc *d)
{
	up_in(ctx, "p2p_receive");
	on_p2p(ctx, sender, d);
	up_out("p2p_receive");
}

static void up_send_failed(void *ctx, const struct buf_desc *d, int code,
			   const char *why)
{
	up_in(ctx, "send_failed");
	on_send_failed(ctx, d, code, why);
	up_out("send_failed");
}

/* The log upcall: any thread, beside any upcall (group.h). */
static void up_log(void *ctx, int level, const char *msg)
{
	struct member *m = ctx;

	if (level <= m->tlog_level)
		fprintf(stderr, "TLOG member=%u level=%d wall_ms=%" PRIu64
			" %s\n", m->id, level, wall_ms(), msg);
}

static void usage(void)
{
	fprintf(stderr, "usage: view_member --config CFG --id N [--set k=v]... "
		"[--secs S] [--stop-file F] [--sizes B,..] [--rate N] "
		"[--die-after-ms M] [--die-on-commit K] [--log FILE] "
		"[--keep K] [--echo K] [--die-at POINT[:K]] "
		"[--fail-at POINT[:K]] [--p2p-flood] [--check-unheld] [--view-send] "
		"[--join] [--state-save-ms M] [--transport-log L] "
		"[--linger-stopped S]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "config", required_argument, 0, 'c' },
		{ "id", required_argument, 0, 'i' },
		{ "set", required_argument, 0, 's' },
		{ "secs", required_argument, 0, 't' },
		{ "stop-file", required_argument, 0, 'f' },
		{ "sizes", required_argument, 0, 'z' },
		{ "rate", required_argument, 0, 'r' },
		{ "die-after-ms", required_argument, 0, 'd' },
		{ "die-on-commit", required_argument, 0, 'k' },
		{ "log", required_argument, 0, 'l' },
		{ "keep", required_argument, 0, 'K' },
		{ "echo", required_argument, 0, 'E' },
		{ "die-at", required_argument, 0, 'D' },
		{ "p2p-flood", no_argument, 0, 'P' },
		{ "fail-at", required_argument, 0, 'F' },
		{ "check-unheld", no_argument, 0, 'U' },
		{ "view-send", no_argument, 0, 'V' },
		{ "join", no_argument, 0, 'J' },
		{ "state-save-ms", required_argument, 0, 'S' },
		{ "transport-log", required_argument, 0, 'T' },
		{ "linger-stopped", required_argument, 0, 'L' },
		{ 0, 0, 0, 0 },
	};
	static const size_t def_sizes[] = { 64, 1000, 4000, 200000, 8000 };
	struct member *m = calloc(1, sizeof(*m));
	struct group_config *cfg = calloc(1, sizeof(*cfg));
	struct group_callbacks cb = { .deliver = up_deliver, .view = up_view,
				      .failure = up_failure,
				      .p2p_receive = up_p2p,
				      .send_failed = up_send_failed,
				      .state_save = state_save,
				      .state_load = state_load,
				      .log = up_log };
	const char *cfg_path = NULL, *id = NULL, *sets[MAX_SETS];
	const char *log_path = NULL;
	size_t nsets = 0;
	struct squall_error err;
	struct group_stats st;
	pthread_t w, fl;
	long my_id;
	int c, r, rc;

	if (!m || !cfg)
		return 1;
	pthread_mutex_init(&m->out, NULL);
	pthread_mutex_init(&m->log_lock, NULL);
	pthread_mutex_init(&m->keep_lock, NULL);
	m->kept_tail = &m->kept_head;
	m->rate = 200;
	m->secs = 10;
	m->tlog_level = -1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c': cfg_path = optarg; break;
		case 'i': id = optarg; break;
		case 's': if (nsets < MAX_SETS) sets[nsets++] = optarg; break;
		case 't': m->secs = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'f': m->stop_file = optarg; break;
		case 'r': m->rate = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'd': m->die_after_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'k': m->die_on_commit = strtoull(optarg, NULL, 0); break;
		case 'l': log_path = optarg; break;
		case 'K': m->keep_every = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'E': m->echo = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'D': setenv("SQUALL_DIE_AT", optarg, 1); break;
		case 'P': m->p2p_flood = true; break;
		case 'F': setenv("SQUALL_FAIL_AT", optarg, 1); break;
		case 'U': m->check_unheld = true; break;
		case 'V': m->view_send = true; break;
		case 'J': m->join = true; break;
		case 'S': m->state_save_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'T': m->tlog_level = atoi(optarg); break;
		case 'L': m->linger_stopped_s = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'z':
			for (char *t = strtok(optarg, ","); t && m->nsizes < MAX_SIZES;
			     t = strtok(NULL, ","))
				m->sizes[m->nsizes++] = strtoull(t, NULL, 0);
			break;
		default:
			usage();
			return 2;
		}
	}
	if (!cfg_path) {
		usage();
		return 2;
	}
	if (!m->nsizes) {
		memcpy(m->sizes, def_sizes, sizeof(def_sizes));
		m->nsizes = sizeof(def_sizes) / sizeof(def_sizes[0]);
	}
	if (group_config_load_with(cfg_path, NULL, sets, nsets, cfg, &err)) {
		fprintf(stderr, "view_member: %s\n", err.msg);
		return 1;
	}
	my_id = group_config_my_id(cfg, id, &err);
	if (my_id < 0) {
		fprintf(stderr, "view_member: %s\n", err.msg);
		return 1;
	}
	m->id = (uint32_t)my_id;
	if (log_path) {
		m->log = vs_log_open(log_path, m->id, &err);
		if (!m->log) {
			fprintf(stderr, "view_member %u: %s\n", m->id, err.msg);
			return 1;
		}
	}
	m->g = m->join ? group_join_cfg(cfg, m->id, &cb, m, &err) :
			 group_create_cfg(cfg, m->id, &cb, m, &err);
	if (!m->g) {
		fprintf(stderr, "view_member %u: %s\n", m->id, err.msg);
		return 1;
	}
	say(m, "READY member=%u\n", m->id);
	m->ready_ns = now_ns();
	pthread_create(&w, NULL, watcher, m);
	if (m->p2p_flood) {
		uint32_t rank = group_my_rank(m->g), n = group_nmembers(m->g);

		m->p2p_to = group_member_id(m->g, (rank + 1) % n);
		pthread_create(&fl, NULL, flooder, m);
	}
	rc = stream(m);
	if (m->p2p_flood) {
		atomic_store(&m->flood_done, true);
		pthread_join(fl, NULL);
	}

	if (m->check_unheld)
		check_unheld(m);
	/* The watcher reads the group, which close frees. */
	atomic_store(&m->watch_done, true);
	pthread_join(w, NULL);
	/* What is still kept goes back before the group does. */
	release_kept(m, true);
	r = group_status(m->g, &err);
	if (r)
		say_stopped(m, r, err.msg);
	if (atomic_load(&m->stopped) && m->linger_stopped_s)
		sleep(m->linger_stopped_s);
	group_stats(m->g, &st);
	/* A stopped group cannot flush: do not wait the full time for it. */
	r = group_close(m->g, atomic_load(&m->stopped) ? 10000 : 120000, &err);
	if (r) {
		fprintf(stderr, "view_member %u: close: %s\n", m->id, err.msg);
		rc = rc ? rc : r;
	}
	/* After group_close: no upcall runs any more. */
	if (m->log) {
		vs_log_end(m->log, r || atomic_load(&m->stopped) ?
			   VS_END_STOPPED : VS_END_CLOSED);
		vs_log_close(m->log);
	}

	for (unsigned i = 0; i < m->nep; i++)
		printf("EPOCH member=%u epoch=%" PRIu64 " count=%" PRIu64
		       " hash=%016" PRIx64 "\n", m->id, m->ep[i].epoch,
		       m->ep[i].count, m->ep[i].hash);
	for (uint32_t i = 0; i < m->nids; i++)
		printf("FROM member=%u sender=%u count=%" PRIu64 "\n", m->id,
		       m->ids[i], m->ids[i] < MAX_IDS ? m->next[m->ids[i]] : 0);
	printf("STATS member=%u epoch=%" PRIu64 " wedges=%" PRIu64
	       " commits=%" PRIu64 " resent=%" PRIu64 "\n", m->id, st.epoch,
	       st.wedges, st.commits, st.resent);
	if (m->keep_every)
		printf("KEPT member=%u kept=%" PRIu64 " released=%" PRIu64
		       " damaged=%" PRIu64 "\n", m->id, m->nkept, m->nreleased,
		       (uint64_t)atomic_load(&m->kept_damaged));
	if (m->p2p_flood)
		printf("P2P member=%u to=%u sent=%" PRIu64 " refused=%" PRIu64
		       " abandoned=%" PRIu64 " failed=%" PRIu64 "\n", m->id,
		       m->p2p_to, m->p2p_sent, m->p2p_refused,
		       st.p2p_abandoned, m->p2p_failed);
	for (uint32_t i = 0; i < MAX_IDS; i++)
		if (m->p2p_from[i])
			printf("P2PFROM member=%u sender=%u count=%" PRIu64 "\n",
			       m->id, i, m->p2p_from[i]);
	if (m->unsent_lost || m->unsent_unknown)
		printf("UNSENT member=%u lost=%" PRIu64 " unknown=%" PRIu64
		       " first=%" PRIu64 " why=%s\n", m->id, m->unsent_lost,
		       m->unsent_unknown, m->unsent_first, m->unsent_why);
	if (m->echo)
		printf("ECHO member=%u sent=%" PRIu64 " refused=%" PRIu64 "\n",
		       m->id, m->sent, m->echo_refused);
	if (m->view_send)
		printf("VIEWSEND member=%u tried=%" PRIu64 " sent=%" PRIu64
		       " refused=%" PRIu64 "\n", m->id, m->view_tried,
		       m->view_sent, m->view_refused);
	if (m->state_saves || m->join)
		printf("STATE member=%u saved=%" PRIu64 " loaded=%d\n", m->id,
		       m->state_saves, m->state_loaded);
	printf("RESULT member=%u sent=%" PRIu64 " delivered=%" PRIu64
	       " bad=%" PRIu64 " dup=%" PRIu64 " gap=%" PRIu64 " epochs=%u"
	       " view_change_ms=%" PRIu64 " misbehaved=%" PRIu64
	       " joins_dropped=%" PRIu64 " agree_ms=%" PRIu64
	       " deliver_ms=%" PRIu64 " teardown_ms=%" PRIu64
	       " build_ms=%" PRIu64 " connect_ms=%" PRIu64
	       " upcall_ms=%" PRIu64 " overlaps=%" PRIu64 "\n", m->id,
	       m->sent, m->delivered, m->bad, m->dup, m->gap, m->nep,
	       st.last_view_change_ms, st.misbehaved, st.joins_dropped,
	       st.last_view_change_agree_ms, st.last_view_change_deliver_ms,
	       st.last_view_change_teardown_ms, st.last_view_change_build_ms,
	       st.last_view_change_connect_ms, st.last_view_change_upcall_ms,
	       (uint64_t)atomic_load(&m->overlaps));
	fflush(stdout);
	if (atomic_load(&m->stopped))
		return 3;
	return rc || m->bad || m->dup || m->gap || m->unheld ||
	       atomic_load(&m->kept_damaged) || atomic_load(&m->overlaps) ?
		       1 : 0;
}
