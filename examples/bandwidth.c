/*
 * bandwidth - how fast a group delivers: K senders, messages of one size.
 *
 * The members of rank < K each lease and send COUNT messages of SIZE bytes
 * with group_ordered_send(), one lease per message (it waits for room when
 * the region or the window is full: the group gives sent buffers back once
 * every member has them). Every member counts deliveries until it has
 * K x COUNT, checking that each came from a sender, has the right length
 * and, per sender, arrives in the order it was sent; then it prints
 *   BANDWIDTH member=ID delivered=N MB_per_s=.. msgs_per_s=..
 * (MB = 10^6 bytes, from the barrier before the first send to the last
 * delivery) and closes the group. Sizes up to smc.max_payload measure SMC,
 * larger ones RDMC.
 *
 * usage: bandwidth --config GROUP.cfg [--id N] [--node NODE.cfg]
 *                  [--set section.key=value]... [--senders K]
 *                  [--size BYTES] [--count N] [--timeout-ms MS]
 */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <squall/group.h>

#include "example_common.h"

/* The first bytes of every message, when it is large enough to hold them. */
struct stamp {
	uint32_t sender;
	uint32_t pad;
	uint64_t index;   /* 0 .. count-1 per sender */
};

struct bw {
	struct group_config cfg;
	uint32_t me, senders;
	uint64_t size, count;
	int timeout_ms;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t delivered, bad;
	uint64_t next[GROUP_CONFIG_MAX_MEMBERS];  /* by sender rank */
	double t_last;
	bool failed;
};

static uint64_t expected(const struct bw *b)
{
	return (uint64_t)b->senders * b->count;
}

static const char *check(struct bw *b, uint32_t sender,
			 const struct buf_desc *d)
{
	int rank = group_config_member_index(&b->cfg, sender);
	struct stamp s;

	if (rank < 0 || (uint32_t)rank >= b->senders)
		return "from a member that does not send";
	if (d->len != b->size)
		return "wrong length";
	if (b->size < sizeof(s))
		return NULL;
	memcpy(&s, d->ptr, sizeof(s));
	if (s.sender != sender || s.index != b->next[rank])
		return "out of its sender's order";
	b->next[rank]++;
	return NULL;
}

static bool on_deliver(void *ctx, uint32_t sender, uint64_t seq,
		       const struct buf_desc *d)
{
	struct bw *b = ctx;
	double t = ex_now();
	const char *bad;

	pthread_mutex_lock(&b->lock);
	bad = check(b, sender, d);
	if (bad) {
		fprintf(stderr, "bandwidth: member %u: message seq %" PRIu64
			" from member %u (%zu bytes): %s\n", b->me, seq, sender,
			d->len, bad);
		b->bad++;
	} else {
		b->delivered++;
		b->t_last = t;
	}
	if (b->delivered + b->bad >= expected(b))
		pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	return false;
}

static void on_failure(void *ctx, uint32_t member, const char *why)
{
	struct bw *b = ctx;

	fprintf(stderr, "bandwidth: member %u: member %u failed: %s\n", b->me,
		member, why);
	pthread_mutex_lock(&b->lock);
	b->failed = true;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static void on_send_failed(void *ctx, const struct buf_desc *d, int code,
			   const char *why)
{
	struct bw *b = ctx;

	fprintf(stderr, "bandwidth: member %u: a send of %zu bytes failed: "
		"%s (%s)\n", b->me, d->len, group_strerror(code), why);
	pthread_mutex_lock(&b->lock);
	b->failed = true;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

/* This member's share: count messages, each a fresh lease. */
static int send_all(struct bw *b, struct group *g)
{
	struct alloc *a = group_get_allocator(g);
	size_t size = b->size;
	struct squall_error err;
	struct buf_desc d;
	int ret;

	for (uint64_t i = 0; i < b->count; i++) {
		ret = alloc_lease_wait(a, 1, &size, &d, (unsigned)b->timeout_ms);
		if (ret) {
			fprintf(stderr, "bandwidth: member %u: lease of %zu bytes: "
				"%s\n", b->me, size, strerror(-ret));
			return ret;
		}
		if (size >= sizeof(struct stamp)) {
			struct stamp s = { b->me, 0, i };

			memcpy(d.ptr, &s, sizeof(s));
		}
		ret = group_ordered_send(g, &d, &err);
		if (ret) {
			fprintf(stderr, "bandwidth: member %u: group_ordered_send: "
				"%s\n", b->me, err.msg);
			return ret;
		}
	}
	return 0;
}

__attribute__((noreturn)) static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: bandwidth --config GROUP.cfg [--id N] [--node NODE.cfg]\n"
		"                 [--set section.key=value]... [--senders K]\n"
		"                 [--size BYTES] [--count N] [--timeout-ms MS]\n");
	exit(code);
}

static void parse(int argc, char **argv, struct bw *b)
{
	static const struct option lo[] = {
		{ "config", required_argument, 0, 'c' },
		{ "id", required_argument, 0, 'i' },
		{ "node", required_argument, 0, 'n' },
		{ "set", required_argument, 0, 's' },
		{ "senders", required_argument, 0, 'k' },
		{ "size", required_argument, 0, 'z' },
		{ "count", required_argument, 0, 'N' },
		{ "timeout-ms", required_argument, 0, 't' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct ex_group_args ga = { 0 };
	uint64_t senders = 0;
	int c;

	b->size = 1 << 20;
	b->count = 100;
	b->timeout_ms = 600000;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c': ga.config = optarg; break;
		case 'i': ga.id = optarg; break;
		case 'n': ga.node = optarg; break;
		case 's': ex_add_set("bandwidth", &ga, optarg); break;
		case 'k': senders = ex_number("bandwidth", "--senders", optarg); break;
		case 'z': b->size = ex_number("bandwidth", "--size", optarg); break;
		case 'N': b->count = ex_number("bandwidth", "--count", optarg); break;
		case 't':
			b->timeout_ms = (int)ex_number("bandwidth", "--timeout-ms", optarg);
			break;
		case 'h': usage(0);
		default: usage(2);
		}
	}
	if (optind != argc || b->size == 0 || b->count == 0 || b->timeout_ms <= 0)
		usage(2);
	b->me = ex_load_group("bandwidth", &ga, &b->cfg);
	if (senders > b->cfg.nmembers) {
		fprintf(stderr, "bandwidth: --senders %" PRIu64 ": %s has %u members\n",
			senders, b->cfg.path, b->cfg.nmembers);
		exit(2);
	}
	b->senders = senders ? (uint32_t)senders : b->cfg.nmembers;
}

static void wait_all(struct bw *b)
{
	struct timespec dl;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += b->timeout_ms / 1000;
	dl.tv_nsec += (long)(b->timeout_ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&b->lock);
	while (b->delivered + b->bad < expected(b) && !b->failed)
		if (pthread_cond_timedwait(&b->cond, &b->lock, &dl) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&b->lock);
}

int main(int argc, char **argv)
{
	static struct bw b;
	struct group_callbacks cb = {
		.deliver = on_deliver,
		.failure = on_failure,
		.send_failed = on_send_failed,
	};
	struct squall_error err;
	pthread_condattr_t ca;
	struct group *g;
	double t0, dt;
	int ret, sent = 0;
	bool ok;

	parse(argc, argv, &b);
	pthread_mutex_init(&b.lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b.cond, &ca);

	g = group_create_cfg(&b.cfg, b.me, &cb, &b, &err);
	if (!g) {
		fprintf(stderr, "bandwidth: member %u: %s\n", b.me, err.msg);
		return 1;
	}
	ret = group_barrier(g, b.timeout_ms, &err);
	if (ret) {
		fprintf(stderr, "bandwidth: member %u: group_barrier: %s\n", b.me,
			err.msg);
		group_close(g, 0, NULL);
		return 1;
	}
	t0 = ex_now();
	if (group_my_rank(g) < b.senders)
		sent = send_all(&b, g);
	wait_all(&b);

	pthread_mutex_lock(&b.lock);
	dt = b.delivered ? b.t_last - t0 : 0;
	if (dt <= 0)
		dt = 1e-9;
	printf("BANDWIDTH member=%u delivered=%" PRIu64 " MB_per_s=%.2f "
	       "msgs_per_s=%.1f\n", b.me, b.delivered,
	       b.delivered * (double)b.size / 1e6 / dt, b.delivered / dt);
	fflush(stdout);
	if (b.delivered != expected(&b))
		fprintf(stderr, "bandwidth: member %u: %" PRIu64 " of %" PRIu64
			" messages delivered\n", b.me, b.delivered, expected(&b));
	ok = b.delivered == expected(&b) && !b.bad && !b.failed && !sent;
	pthread_mutex_unlock(&b.lock);

	ret = group_close(g, b.timeout_ms, &err);
	if (ret) {
		fprintf(stderr, "bandwidth: member %u: group_close: %s\n", b.me,
			err.msg);
		ok = false;
	}
	return ok ? 0 : 1;
}
