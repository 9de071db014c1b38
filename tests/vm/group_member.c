/*
 * group_member - one member of a group test run (tests/vm/group_*.sh,
 * smc_*.sh, rdmc_order4.sh).
 *
 * order mode (the default): the members of rank < --senders each send
 * --count ordered messages; sizes are random in [1, smc.max_payload]
 * unless --sizes lists them (bytes, cycled; sizes above max_payload go on
 * RDMC), with --smc-between small messages after each listed size. Every
 * payload starts with {sender, index, len, checksum of the rest} and the
 * rest is pseudo-random from (sender, index), so the receiver checks every
 * byte. Delivery checks: each sender's messages arrive in its send order,
 * every checksum matches; a running hash over (sender, seq, index) shows
 * the order. --hold-ms keeps every delivered small message for that long
 * (a thread releases it later, after checking its bytes again: a slot
 * overwritten while held is caught). --handoff: the deliver upcall
 * hands each delivery to that thread, which checks and releases it while
 * the upcall waits; the upcall returns true (keeps it) only after the
 * release returned, as an application that passes deliveries to a worker
 * may find. --forward-check: before a large delivery handed on is
 * released, the thread tries to send the delivery itself (its whole length
 * and its first 64 bytes) with group_p2p_send to the next member and its
 * first 64 bytes with group_ordered_send_timeout (no wait): each must be
 * refused with -EINVAL (a delivery is no lease to send: its bytes go with
 * group_send_mem), and anything else counts as bad. Every group_release
 * must return 0. Then group_close, which
 * must deliver everything, and one line:
 *   ORDER member=ID delivered=N expected=E bad=B hash=H copies=C
 *         payload_copies=P send_waits=W held_max=M lat_p50_us=..
 *         lat_p99_us=.. secs=.. refused=R (connections refused for the
 *         group key) forwards_refused=F (--forward-check: deliveries
 *         whose sends were all refused)
 * (latency: own messages, send to own delivery.)
 *
 * The transport's error lines (the log upcall) go to stderr, prefixed
 * "member ID: log: ".
 *
 * p2p mode: every member sends a request to every other member and answers
 * each request it gets; one line P2P member=ID requests=R replies=A bad=B.
 *
 * Exit status 0 only when everything expected arrived intact.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <squall/group.h>

#include "payload.h"

#define MAX_SIZES 16
#define MAX_SETS 8
#define HOLD_MAX 65536

struct hdr {
	uint32_t sender;
	uint32_t index;
	uint64_t len;
	uint64_t sum;
};

struct held {
	struct buf_desc d;
	uint64_t until_ns;
};

struct member {
	struct group *g;
	uint32_t id, rank, n;
	unsigned senders, count, smc_between, hold_ms;
	size_t sizes[MAX_SIZES];
	unsigned nsizes;
	uint32_t max_payload;
	bool p2p;

	/* delivery side (progress thread) */
	uint64_t delivered, bad, hash;
	uint32_t next_index[64];
	uint64_t *sent_ns;   /* own messages: send time by index */
	uint64_t *lat_ns;
	uint64_t nlat;

	/* holding */
	pthread_mutex_t lock;
	struct held held[HOLD_MAX];
	unsigned hhead, htail;
	unsigned held_max;      /* most messages held at once */
	atomic_bool stop;
	/* --handoff: the delivery the upcall hands on (under lock) */
	bool handoff;
	pthread_cond_t hand_cond;
	struct buf_desc hand_d;
	int hand_state;         /* 1: handed on, 2: released */
	bool hand_closed;       /* the releaser ended: keep nothing */
	/* the releaser's errors: refused releases, damaged handed-on
	 * deliveries */
	atomic_uint_fast64_t releaser_bad;
	bool forward_check;
	uint64_t forwards_refused; /* releaser thread */

	/* p2p */
	atomic_uint requests, replies;

	atomic_bool failed;     /* the failure upcall ran */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}


static uint64_t fill_sum(uint8_t *p, size_t len, uint32_t sender,
			 uint32_t index, bool write)
{
	return payload_fill_sum(p, len, (uint64_t)sender << 32 | index, write);
}

/* The size of message i of a sender. */
static size_t size_of(struct member *m, uint32_t sender, uint32_t i)
{
	if (m->nsizes) {
		unsigned per = m->smc_between + 1;

		if (i % per == 0)
			return m->sizes[(i / per) % m->nsizes];
		return 64 + (size_t)(mix((uint64_t)sender << 40 | i) % 4000);
	}
	return 1 + (size_t)(mix((uint64_t)sender << 32 | i) % m->max_payload);
}

static bool check_hdr(const struct buf_desc *d, uint32_t *sender,
		      uint32_t *index, bool sum)
{
	struct hdr h;

	if (d->len < sizeof(h)) {
		/* Too short to carry a header: only the size is known. */
		*sender = UINT32_MAX;
		return d->len > 0;
	}
	memcpy(&h, d->ptr, sizeof(h));
	*sender = h.sender;
	*index = h.index;
	return h.len == d->len && (!sum ||
	       h.sum == fill_sum((uint8_t *)d->ptr + sizeof(h),
				 d->len - sizeof(h), h.sender, h.index, false));
}

static bool deliver(void *ctx, uint32_t sender, uint64_t seq,
		    const struct buf_desc *d)
{
	struct member *m = ctx;
	uint32_t s = UINT32_MAX, idx = 0;
	/* Large messages are checked byte by byte on the releaser thread:
	 * an upcall that runs for seconds would stop this member's
	 * heartbeat (the progress thread beats it). */
	bool large = d->len > m->max_payload;
	bool ok = check_hdr(d, &s, &idx, !large);
	if (s != UINT32_MAX) {
		/* By member id: ranks change when the view does. */
		if (s != sender || sender >= 64 || idx != m->next_index[sender])
			ok = false;
		else
			m->next_index[sender]++;
	}
	if (!ok) {
		m->bad++;
		fprintf(stderr, "member %u: message seq %" PRIu64 " from %u "
			"(index %u, %zu bytes) is wrong\n", m->id, seq, sender,
			idx, d->len);
	}
	if (s == m->id && idx < m->count && m->sent_ns[idx])
		m->lat_ns[m->nlat++] = now_ns() - m->sent_ns[idx];
	m->hash = mix(m->hash ^ ((uint64_t)sender << 32 | idx) ^ mix(seq));
	__atomic_store_n(&m->delivered, m->delivered + 1, __ATOMIC_RELAXED);
	if (m->handoff) {
		/* The other thread releases it before this returns true. */
		pthread_mutex_lock(&m->lock);
		if (m->hand_closed) {
			pthread_mutex_unlock(&m->lock);
			return false;
		}
		m->hand_d = *d;
		m->hand_state = 1;
		pthread_cond_broadcast(&m->hand_cond);
		while (m->hand_state != 2)
			pthread_cond_wait(&m->hand_cond, &m->lock);
		m->hand_state = 0;
		pthread_mutex_unlock(&m->lock);
		return true;
	}
	if (m->hold_ms || large) {
		bool kept = false;

		pthread_mutex_lock(&m->lock);
		if (m->htail - m->hhead < HOLD_MAX) {
			m->held[m->htail++ % HOLD_MAX] = (struct held){
				*d, now_ns() + (large ? 0 :
				(uint64_t)m->hold_ms * 1000000ull) };
			kept = true;
			if (m->htail - m->hhead > m->held_max)
				m->held_max = m->htail - m->hhead;
		}
		pthread_mutex_unlock(&m->lock);
		return kept;
	}
	return false;
}

/* The group, once main stored it: a delivery can come as group_create
 * returns, before that (group.h). */
static struct group *stored_group(struct member *m)
{
	struct group *g;

	while (!(g = __atomic_load_n(&m->g, __ATOMIC_ACQUIRE)))
		nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	return g;
}

/* Give a delivery back; a refusal counts as an error. */
static void release(struct member *m, const struct buf_desc *d,
		    const char *what)
{
	int r = group_release(stored_group(m), d);

	if (r) {
		fprintf(stderr, "member %u: group_release of %s (%zu bytes): "
			"%s\n", m->id, what, d->len, strerror(-r));
		atomic_fetch_add(&m->releaser_bad, 1);
	}
}

/* --forward-check: a delivery is not a lease the application may send;
 * each send must say so (-EINVAL) and send nothing. */
static void forward_check(struct member *m, const struct buf_desc *d)
{
	struct group *g = stored_group(m);
	struct buf_desc part = { d->ptr, 64 };
	uint32_t to = (m->id + 1) % group_nmembers(g);
	int r[3];

	r[0] = group_p2p_send(g, to, d, NULL);
	r[1] = group_p2p_send(g, to, &part, NULL);
	r[2] = group_ordered_send_timeout(g, &part, 0, NULL);
	if (r[0] != -EINVAL || r[1] != -EINVAL || r[2] != -EINVAL) {
		fprintf(stderr, "member %u: sends of a delivery of %zu bytes "
			"returned %d, %d and %d, not -EINVAL\n", m->id, d->len,
			r[0], r[1], r[2]);
		atomic_fetch_add(&m->releaser_bad, 1);
		return;
	}
	m->forwards_refused++;
}

/* Release held messages when their time is up, checking them again;
 * with --handoff, each delivery its upcall hands on. */
static void *releaser(void *arg)
{
	struct member *m = arg;

	while (!atomic_load(&m->stop)) {
		struct held h;
		bool have = false;

		pthread_mutex_lock(&m->lock);
		if (m->handoff) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			if (m->hand_state != 1)
				pthread_cond_timedwait(&m->hand_cond, &m->lock,
						       &ts);
			if (m->hand_state == 1) {
				struct buf_desc d = m->hand_d;
				uint32_t s, idx;

				if (!check_hdr(&d, &s, &idx, true)) {
					fprintf(stderr, "member %u: a handed "
						"on delivery is damaged\n",
						m->id);
					atomic_fetch_add(&m->releaser_bad, 1);
				}
				if (m->forward_check && d.len > m->max_payload)
					forward_check(m, &d);
				release(m, &d, "a delivery its upcall handed on");
				m->hand_state = 2;
				pthread_cond_broadcast(&m->hand_cond);
			}
			pthread_mutex_unlock(&m->lock);
			continue;
		}
		if (m->hhead != m->htail &&
		    m->held[m->hhead % HOLD_MAX].until_ns <= now_ns()) {
			h = m->held[m->hhead++ % HOLD_MAX];
			have = true;
		}
		pthread_mutex_unlock(&m->lock);
		if (!have) {
			usleep(1000);
			continue;
		}
		uint32_t s, idx;

		if (!check_hdr(&h.d, &s, &idx, true)) {
			fprintf(stderr, "member %u: a held message changed "
				"under it (overwritten)\n", m->id);
			m->bad++;
		}
		release(m, &h.d, "a held delivery");
	}
	/* Later upcalls keep nothing; one waiting now gets its answer. */
	pthread_mutex_lock(&m->lock);
	m->hand_closed = true;
	if (m->hand_state == 1) {
		release(m, &m->hand_d, "a delivery its upcall handed on");
		m->hand_state = 2;
		pthread_cond_broadcast(&m->hand_cond);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

static void on_failure(void *ctx, uint32_t member, const char *why)
{
	struct member *m = ctx;

	fprintf(stderr, "member %u: failure upcall: member %u: %s\n", m->id,
		member, why);
	atomic_store(&m->failed, true);
}

/* The transport's errors, on stderr (auth3.sh reads the refusals). */
static void on_log(void *ctx, int level, const char *msg)
{
	struct member *m = ctx;

	if (level == GROUP_LOG_ERROR)
		fprintf(stderr, "member %u: log: %s\n", m->id, msg);
}

static void p2p_receive(void *ctx, uint32_t sender, const struct buf_desc *d)
{
	struct member *m = ctx;
	struct alloc *a;

	/* A request can come as group_create returns, before main stored
	 * the group (group.h). */
	while (!__atomic_load_n(&m->g, __ATOMIC_ACQUIRE))
		nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	a = group_get_allocator(m->g);
	struct squall_error err;
	char msg[64];
	struct buf_desc r;
	size_t len;
	unsigned from, to;

	if (d->len >= sizeof(msg)) {
		m->bad++;
		return;
	}
	memcpy(msg, d->ptr, d->len);
	msg[d->len] = 0;
	if (sscanf(msg, "request %u to %u", &from, &to) == 2) {
		if (from != sender || to != m->id)
			m->bad++;
		atomic_fetch_add(&m->requests, 1);
		len = (size_t)snprintf(msg, sizeof(msg), "reply %u to %u",
				       m->id, sender);
		if (alloc_lease(a, 1, &len, &r)) {
			m->bad++;
			return;
		}
		memcpy(r.ptr, msg, len);
		if (group_p2p_send(m->g, sender, &r, &err)) {
			fprintf(stderr, "member %u: reply: %s\n", m->id, err.msg);
			m->bad++;
		}
	} else if (sscanf(msg, "reply %u to %u", &from, &to) == 2) {
		if (from != sender || to != m->id)
			m->bad++;
		atomic_fetch_add(&m->replies, 1);
	} else {
		m->bad++;
	}
}

static int send_all(struct member *m)
{
	struct alloc *a = group_get_allocator(m->g);
	struct squall_error err;

	for (uint32_t i = 0; i < m->count; i++) {
		size_t len = size_of(m, m->id, i);
		struct buf_desc d;
		struct hdr h;
		int r;

		if (len < sizeof(h))
			len = sizeof(h);
		r = alloc_lease_wait(a, 1, &len, &d, 600000);
		if (r) {
			fprintf(stderr, "member %u: lease %zu: %s\n", m->id, len,
				strerror(-r));
			return r;
		}
		h = (struct hdr){ m->id, i, len, 0 };
		h.sum = fill_sum((uint8_t *)d.ptr + sizeof(h), len - sizeof(h),
				 m->id, i, true);
		memcpy(d.ptr, &h, sizeof(h));
		m->sent_ns[i] = now_ns();
		r = group_ordered_send(m->g, &d, &err);
		if (r) {
			fprintf(stderr, "member %u: send %u: %s\n", m->id, i,
				err.msg);
			return r;
		}
	}
	return 0;
}

static int run_p2p(struct member *m)
{
	struct alloc *a = group_get_allocator(m->g);
	struct squall_error err;
	uint64_t deadline = now_ns() + 120000000000ull;

	for (uint32_t r = 0; r < m->n; r++) {
		uint32_t to = group_member_id(m->g, r);
		char msg[64];
		size_t len;
		struct buf_desc d;

		if (to == m->id)
			continue;
		len = (size_t)snprintf(msg, sizeof(msg), "request %u to %u",
				       m->id, to);
		if (alloc_lease(a, 1, &len, &d))
			return -ENOMEM;
		memcpy(d.ptr, msg, len);
		if (group_p2p_send(m->g, to, &d, &err)) {
			fprintf(stderr, "member %u: request: %s\n", m->id, err.msg);
			return -EIO;
		}
	}
	while ((atomic_load(&m->replies) < m->n - 1 ||
		atomic_load(&m->requests) < m->n - 1) && now_ns() < deadline)
		usleep(1000);
	/* Everyone has its replies before anyone leaves. */
	return group_barrier(m->g, 120000, &err);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "config", required_argument, 0, 'c' },
		{ "id", required_argument, 0, 'i' },
		{ "set", required_argument, 0, 's' },
		{ "senders", required_argument, 0, 'k' },
		{ "count", required_argument, 0, 'n' },
		{ "sizes", required_argument, 0, 'z' },
		{ "smc-between", required_argument, 0, 'b' },
		{ "hold-ms", required_argument, 0, 'h' },
		{ "p2p", no_argument, 0, 'p' },
		{ "handoff", no_argument, 0, 'o' },
		{ "forward-check", no_argument, 0, 'f' },
		{ 0, 0, 0, 0 },
	};
	struct member *m = calloc(1, sizeof(*m));
	struct group_config *cfg = calloc(1, sizeof(*cfg));
	struct group_callbacks cb = { .deliver = deliver,
				      .p2p_receive = p2p_receive,
				      .failure = on_failure,
				      .log = on_log };
	const char *cfg_path = NULL, *id = NULL, *sets[MAX_SETS];
	size_t nsets = 0;
	struct squall_error err;
	struct group_stats gs;
	pthread_t rel;
	uint64_t expected = 0, t0;
	long my_id;
	int c, r = 0;

	if (!m || !cfg)
		return 1;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->hand_cond, NULL);
	m->count = 1000;
	m->senders = UINT32_MAX;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c': cfg_path = optarg; break;
		case 'i': id = optarg; break;
		case 's': if (nsets < MAX_SETS) sets[nsets++] = optarg; break;
		case 'k': m->senders = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'n': m->count = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'z':
			for (char *t = strtok(optarg, ","); t && m->nsizes < MAX_SIZES;
			     t = strtok(NULL, ","))
				m->sizes[m->nsizes++] = strtoull(t, NULL, 0);
			break;
		case 'b': m->smc_between = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'h': m->hold_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'p': m->p2p = true; break;
		case 'o': m->handoff = true; break;
		case 'f': m->forward_check = true; break;
		default:
			fprintf(stderr, "usage: group_member --config CFG --id N "
				"[--set k=v] [--senders K] [--count N] [--sizes B,..] "
				"[--smc-between K] [--hold-ms MS] [--handoff] "
				"[--forward-check] [--p2p]\n");
			return 2;
		}
	}
	if (!cfg_path) {
		fprintf(stderr, "group_member: --config is required\n");
		return 2;
	}
	if (group_config_load_with(cfg_path, NULL, sets, nsets, cfg, &err)) {
		fprintf(stderr, "group_member: %s\n", err.msg);
		return 1;
	}
	my_id = group_config_my_id(cfg, id, &err);
	if (my_id < 0) {
		fprintf(stderr, "group_member: %s\n", err.msg);
		return 1;
	}
	m->id = (uint32_t)my_id;
	m->max_payload = cfg->smc_max_payload;
	m->sent_ns = calloc(m->count + 1, 8);
	m->lat_ns = calloc(m->count + 1, 8);
	m->hash = 0x9e3779b97f4a7c15ull;
	/* Running before the group exists: a handed-on delivery may come
	 * before group_create returns. */
	pthread_create(&rel, NULL, releaser, m);
	__atomic_store_n(&m->g, group_create_cfg(cfg, m->id, &cb, m, &err),
			 __ATOMIC_RELEASE);
	if (!m->g) {
		fprintf(stderr, "group_member %u: %s\n", m->id, err.msg);
		return 1;
	}
	m->n = group_nmembers(m->g);
	m->rank = group_my_rank(m->g);
	printf("READY member=%u\n", m->id);
	fflush(stdout);
	if (m->senders > m->n)
		m->senders = m->n;
	expected = m->p2p ? 0 : (uint64_t)m->senders * m->count;
	t0 = now_ns();
	if (m->p2p)
		r = run_p2p(m);
	else if (m->rank < m->senders)
		r = send_all(m);
	{
		/* Keep releasing until everything has arrived, then give back
		 * what is still held before the group goes away. */
		uint64_t until = now_ns() + 900000000000ull;

		while (__atomic_load_n(&m->delivered, __ATOMIC_RELAXED) < expected &&
		       now_ns() < until && !atomic_load(&m->failed))
			usleep(10000);
		atomic_store(&m->stop, true);
		pthread_join(rel, NULL);
		while (m->hhead != m->htail) {
			struct held *h = &m->held[m->hhead++ % HOLD_MAX];
			uint32_t s, idx;

			if (!check_hdr(&h->d, &s, &idx, true))
				m->bad++;
			release(m, &h->d, "a held delivery");
		}
		m->bad += atomic_load(&m->releaser_bad);
	}
	group_stats(m->g, &gs);
	/* Close together: a member that closes while the others still
	 * send leaves the group instead of flushing with them. */
	if (!m->p2p && group_barrier(m->g, 900000, &err))
		fprintf(stderr, "group_member %u: barrier: %s\n", m->id, err.msg);
	if (group_close(m->g, 900000, &err)) {
		fprintf(stderr, "group_member %u: close: %s\n", m->id, err.msg);
		r = r ? r : -EIO;
	}
	if (m->p2p) {
		printf("P2P member=%u requests=%u replies=%u bad=%" PRIu64 "\n",
		       m->id, atomic_load(&m->requests), atomic_load(&m->replies),
		       m->bad);
		return r || m->bad || atomic_load(&m->replies) != m->n - 1 ||
		       atomic_load(&m->requests) != m->n - 1;
	}
	qsort(m->lat_ns, m->nlat, 8, cmp_u64);
	printf("ORDER member=%u delivered=%" PRIu64 " expected=%" PRIu64
	       " bad=%" PRIu64 " hash=%016" PRIx64 " copies=%" PRIu64
	       " payload_copies=%" PRIu64 " send_waits=%" PRIu64
	       " held_max=%u lat_p50_us=%.0f lat_p99_us=%.0f secs=%.2f"
	       " refused=%" PRIu64 " forwards_refused=%" PRIu64 "\n", m->id,
	       m->delivered, expected, m->bad, m->hash, gs.copies,
	       gs.payload_copies, gs.send_waits, m->held_max,
	       m->nlat ? m->lat_ns[m->nlat / 2] / 1e3 : 0.0,
	       m->nlat ? m->lat_ns[m->nlat * 99 / 100] / 1e3 : 0.0,
	       (now_ns() - t0) / 1e9, gs.refused, m->forwards_refused);
	return r || m->bad || m->delivered != expected;
}
