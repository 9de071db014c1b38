/*
 * rdmc_member - one member of the RDMC transfer test: two senders multicast
 * messages of several sizes to the group over squall's RDMC engine, and
 * every member checks every byte.
 *
 * Each member maps its region with the allocator, connects all-to-all with
 * the rdma layer and runs one RDMC group of all members. The senders (the
 * first two members of the .cfg) each send the messages of --sizes in turn,
 * both at once; every other member expects each message (as the group
 * layer would on its announcement) once it has delivered the sender's
 * previous one. Messages are delivered in a fixed interleaving (sender A's
 * first, B's first, A's second, ...) once they are stable, i.e. complete at
 * every member. On delivery a receiver checks every byte against the
 * sender's pattern and prints a checksum of the whole buffer; the sender
 * prints the checksum of what it sent; the test script compares them.
 *
 * --enomem-member ID: afterwards, that member holds back most of its
 * region and the first sender sends a message it cannot lease: the send
 * must fail naming it, and the others' receives must be cancelled.
 * Last, the first sender sends a small message that everyone waits for, so
 * nobody leaves while a peer still needs it.
 *
 * usage: rdmc_member CFG ID [--sizes MiB,...] [--alg NAME] [--window N]
 *                    [--enomem-member ID] [--timeout-ms MS]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <squall/alloc.h>
#include <squall/config.h>
#include <squall/rdma.h>
#include <squall/rdmc.h>

#include "group/transport.h"

#define MAXMSG 16
#define NSEND 2
#define MiB 1048576.0

struct msg {
	uint64_t size;
	struct buf_desc d;
	bool expected, stable, failed;
	uint64_t sum;
};

struct member {
	struct group_config cfg;
	uint32_t id;
	unsigned me;            /* index in cfg.members */
	struct alloc *a;
	struct rdma_sq_node *node;
	struct rdmc_engine *e;
	struct rdmc_group *g;
	unsigned nmsg;
	uint64_t sizes[MAXMSG];
	struct msg m[NSEND][MAXMSG];
	unsigned sent_next;     /* as a sender: next message to send */
	bool sending;
	unsigned pos;           /* delivery position in the interleaving */
	uint64_t verified;
	/* the ENOMEM and the final phases */
	int enomem_result, enomem_seen;
	bool enomem_stable;   /* the stable callback for the cancelled message */
	char enomem_why[256];
	bool bye_stable, bye_sent;
	bool in_bye;            /* the last message is under way */
	unsigned timeout_ms;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(struct member *mb, const char *what, const char *why)
{
	fprintf(stderr, "rdmc_member %u: %s: %s\n", mb->id, what, why);
	fflush(stdout);
	exit(1);
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The pattern of message i of sender s: 64-bit word j is mix(seed + j). */
static uint64_t seed_of(unsigned s, unsigned i)
{
	return (uint64_t)(s + 1) << 48 | (uint64_t)(i + 1) << 32;
}

static void fill(uint8_t *p, uint64_t len, uint64_t seed)
{
	uint64_t j, w = len / 8;

	for (j = 0; j < w; j++) {
		uint64_t v = mix(seed + j);

		memcpy(p + 8 * j, &v, 8);
	}
	if (len % 8) {
		uint64_t v = mix(seed + j);

		memcpy(p + 8 * j, &v, len % 8);
	}
}

/* First byte that differs from the pattern, or len. */
static uint64_t check(const uint8_t *p, uint64_t len, uint64_t seed)
{
	uint64_t j, w = len / 8;

	for (j = 0; j < w; j++) {
		uint64_t v = mix(seed + j), got;

		memcpy(&got, p + 8 * j, 8);
		if (got != v)
			break;
	}
	for (uint64_t b = 8 * j; b < len; b++) {
		uint64_t v = mix(seed + b / 8);

		if (p[b] != (uint8_t)(v >> (8 * (b % 8))))
			return b;
	}
	return len;
}

/* FNV-1a over 64-bit words, then the tail: one number per buffer that
 * every member prints for the same message. */
static uint64_t checksum(const uint8_t *p, uint64_t len)
{
	uint64_t h = 0xcbf29ce484222325ull, w;
	uint64_t j;

	for (j = 0; j + 8 <= len; j += 8) {
		memcpy(&w, p + j, 8);
		h = (h ^ w) * 0x100000001b3ull;
	}
	for (; j < len; j++)
		h = (h ^ p[j]) * 0x100000001b3ull;
	return h ^ len;
}

static uint64_t msg_id(unsigned s, unsigned i)
{
	return (uint64_t)s << 32 | i;
}

/* ---- callbacks ------------------------------------------------------------- */

#define ENOMEM_IDX 100u
#define BYE_IDX 101u

static void on_received(void *arg, struct rdmc_group *g, uint64_t id,
			uint32_t sender, const struct buf_desc *d, int status,
			const char *why)
{
	struct member *mb = arg;
	unsigned s = (unsigned)(id >> 32), i = (unsigned)id;

	(void)g;
	(void)sender;
	if (i == ENOMEM_IDX) {
		mb->enomem_seen = 1;
		mb->enomem_result = status;
		snprintf(mb->enomem_why, sizeof(mb->enomem_why), "%s", why);
		if (!status)
			alloc_release(mb->a, d);
		return;
	}
	if (status)
		die(mb, "receive failed", why);
	if (i == BYE_IDX) {
		alloc_release(mb->a, d);
		return;
	}
	if (s >= NSEND || i >= mb->nmsg || !mb->m[s][i].expected)
		die(mb, "received", "a message nobody expected");
	/* Zero copy: the buffer delivered is the one leased for the transfer,
	 * inside the region, handed to the application. */
	if (!alloc_owns(mb->a, d->ptr, d->len) ||
	    alloc_state(mb->a, d->ptr) != ALLOC_DELIVERED || d->len != mb->m[s][i].size)
		die(mb, "received", "the buffer is not a delivered lease of the message's size");
	mb->m[s][i].d = *d;
}

static void on_stable(void *arg, struct rdmc_group *g, uint64_t id,
		      uint32_t sender)
{
	struct member *mb = arg;
	unsigned s = (unsigned)(id >> 32), i = (unsigned)id;

	(void)g;
	(void)sender;
	if (i == BYE_IDX) {
		mb->bye_stable = true;
		return;
	}
	if (i == ENOMEM_IDX) {
		/* The cancellation is known at every member. */
		mb->enomem_stable = true;
		return;
	}
	mb->m[s][i].stable = true;
}

static void on_sent(void *arg, struct rdmc_group *g, uint64_t id,
		    const struct buf_desc *d, int status, const char *why)
{
	struct member *mb = arg;
	unsigned i = (unsigned)id;

	(void)g;
	if (i == ENOMEM_IDX) {
		mb->enomem_seen = 1;
		mb->enomem_result = status;
		snprintf(mb->enomem_why, sizeof(mb->enomem_why), "%s", why);
		alloc_complete(mb->a, d);
		return;
	}
	if (status)
		die(mb, "send failed", why);
	if (i == BYE_IDX) {
		mb->bye_sent = true;
		alloc_complete(mb->a, d);
		return;
	}
	mb->m[mb->me][i].stable = true;
	mb->sending = false;
}

/* ---- the run ---------------------------------------------------------------- */

/* How long the last message may take once members may be leaving. */
#define BYE_TIMEOUT_MS 120000

static void progress(struct member *mb, double start, const char *what)
{
	int n = rdmc_engine_poll(mb->e, 50);

	if (n < 0)
		die(mb, "poll", strerror(-n));
	/* Until the last message, a peer gone is a failure. During it, a
	 * member that has it and forwarded its blocks leaves while others
	 * still wait for blocks from elsewhere in the pipeline: not a
	 * failure (a member that truly fails then shows as the last
	 * message never arriving, within BYE_TIMEOUT_MS). */
	for (unsigned q = 0; q < mb->cfg.nmembers && !mb->in_bye; q++)
		if (q != mb->me && !rdma_sq_peer_alive(mb->node, mb->cfg.members[q].id))
			die(mb, "lost a peer", rdma_sq_peer_error(mb->node, mb->cfg.members[q].id));
	if (mb->in_bye && now_ms() - start > BYE_TIMEOUT_MS) {
		char why[200];

		snprintf(why, sizeof(why), "the last message did not arrive "
			 "within %u ms (%s); last engine error: %s",
			 BYE_TIMEOUT_MS, what, rdmc_engine_last_error(mb->e));
		die(mb, "run", why);
	}
	if (now_ms() - start > mb->timeout_ms) {
		char why[160];

		snprintf(why, sizeof(why), "timed out after %u ms (%s); last engine error: %s",
			 mb->timeout_ms, what, rdmc_engine_last_error(mb->e));
		die(mb, "run", why);
	}
}

static void send_next(struct member *mb)
{
	unsigned i = mb->sent_next;
	struct msg *m = &mb->m[mb->me][i];
	struct squall_error err;
	size_t sz = m->size;

	if (alloc_lease(mb->a, 1, &sz, &m->d))
		die(mb, "lease", "no room for a message to send");
	fill(m->d.ptr, m->size, seed_of(mb->me, i));
	m->sum = checksum(m->d.ptr, m->size);
	if (rdmc_send(mb->g, msg_id(mb->me, i), &m->d, &err))
		die(mb, "rdmc_send", err.msg);
	mb->sending = true;
	mb->sent_next++;
}

/* Expect each sender's messages up to the one after the last delivered:
 * message i of sender s sits at position i * NSEND + s of the order. */
static void expect_next(struct member *mb)
{
	for (unsigned s = 0; s < NSEND; s++) {
		unsigned upto = (mb->pos + (NSEND - 1 - s)) / NSEND;

		if (s == mb->me)
			continue;
		for (unsigned i = 0; i <= upto && i < mb->nmsg; i++) {
			struct squall_error err;

			if (mb->m[s][i].expected)
				continue;
			if (rdmc_expect(mb->g, msg_id(s, i), mb->cfg.members[s].id,
					mb->m[s][i].size, &err))
				die(mb, "rdmc_expect", err.msg);
			mb->m[s][i].expected = true;
		}
	}
}

static void deliver(struct member *mb)
{
	while (mb->pos < NSEND * mb->nmsg) {
		unsigned s = mb->pos % NSEND, i = mb->pos / NSEND;
		struct msg *m = &mb->m[s][i];
		uint64_t bad;

		if (!m->stable)
			return;
		if (s != mb->me) {
			bad = check(m->d.ptr, m->size, seed_of(s, i));
			if (bad != m->size) {
				char why[160];

				snprintf(why, sizeof(why), "message %u of member %u: byte %"
					 PRIu64 " of %" PRIu64 " is wrong", i,
					 mb->cfg.members[s].id, bad, m->size);
				die(mb, "verify", why);
			}
			m->sum = checksum(m->d.ptr, m->size);
			mb->verified += m->size;
			alloc_release(mb->a, &m->d);
		} else {
			alloc_complete(mb->a, &m->d);
		}
		printf("DELIVER pos=%u sender=%u msg=%u size=%" PRIu64 " sum=%016" PRIx64 "\n",
		       mb->pos, mb->cfg.members[s].id, i, m->size, m->sum);
		mb->pos++;
	}
}

static void main_phase(struct member *mb)
{
	double start = now_ms();

	while (mb->pos < NSEND * mb->nmsg) {
		if (mb->me < NSEND && !mb->sending && mb->sent_next < mb->nmsg)
			send_next(mb);
		expect_next(mb);
		deliver(mb);
		if (mb->pos < NSEND * mb->nmsg)
			progress(mb, start, "the messages");
	}
	printf("member %u delivered %u messages, verified %" PRIu64 " bytes in %.0f ms\n",
	       mb->id, NSEND * mb->nmsg, mb->verified, now_ms() - start);
}

static void enomem_phase(struct member *mb, uint32_t victim)
{
	uint64_t size = mb->cfg.region_size * 3 / 4;
	struct buf_desc ballast, d;
	struct squall_error err;
	double start = now_ms();
	size_t sz;
	int ret;

	if (mb->id == victim) {
		sz = mb->cfg.region_size / 2;
		if (alloc_lease(mb->a, 1, &sz, &ballast))
			die(mb, "lease", "no room for the ballast");
	}
	if (mb->me == 0) {
		sz = size;
		if (alloc_lease(mb->a, 1, &sz, &d))
			die(mb, "lease", "no room for the big message");
		if (rdmc_send(mb->g, msg_id(0, ENOMEM_IDX), &d, &err))
			die(mb, "rdmc_send", err.msg);
	} else {
		ret = rdmc_expect(mb->g, msg_id(0, ENOMEM_IDX), mb->cfg.members[0].id,
				  size, &err);
		if (mb->id == victim) {
			printf("member %u expect of %" PRIu64 " bytes: %s (%s)\n", mb->id,
			       size, strerror(-ret), err.msg);
			mb->enomem_seen = 1;
			mb->enomem_result = ret;
		} else if (ret) {
			die(mb, "rdmc_expect", err.msg);
		}
	}
	while (!mb->enomem_seen)
		progress(mb, start, "the failed send");
	printf("member %u message of %" PRIu64 " bytes: status %d (%s): %s\n", mb->id,
	       size, mb->enomem_result, strerror(-mb->enomem_result), mb->enomem_why);
	while (!mb->enomem_stable)
		progress(mb, start, "every member knowing of the cancellation");
	printf("member %u: the cancellation is known at every member\n", mb->id);
	if (mb->id == victim)
		alloc_release(mb->a, &ballast);
}

static void bye_phase(struct member *mb)
{
	double start = now_ms();
	struct squall_error err;
	struct buf_desc d;
	size_t sz = 4096;

	mb->in_bye = true;
	if (mb->me == 0) {
		if (alloc_lease(mb->a, 1, &sz, &d))
			die(mb, "lease", "no room for the last message");
		memset(d.ptr, 0x5a, sz);
		if (rdmc_send(mb->g, msg_id(0, BYE_IDX), &d, &err))
			die(mb, "rdmc_send", err.msg);
		while (!mb->bye_sent)
			progress(mb, start, "the last message");
	} else {
		if (rdmc_expect(mb->g, msg_id(0, BYE_IDX), mb->cfg.members[0].id, sz, &err))
			die(mb, "rdmc_expect", err.msg);
		while (!mb->bye_stable)
			progress(mb, start, "the last message");
	}
	while (!rdmc_engine_idle(mb->e))
		progress(mb, start, "the engine to drain");
}

static void parse_sizes(struct member *mb, const char *arg)
{
	char *copy = strdup(arg), *save = NULL;

	mb->nmsg = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		double mib = strtod(t, NULL);

		if (mb->nmsg == MAXMSG || mib <= 0)
			die(mb, "--sizes", "at most 16 positive sizes in MiB (e.g. 1,3.5,16,64)");
		/* a size may carry +BYTES: 1+13 = 1 MiB and 13 bytes */
		mb->sizes[mb->nmsg++] = (uint64_t)(mib * MiB) +
			(strchr(t, '+') ? strtoull(strchr(t, '+') + 1, NULL, 0) : 0);
	}
	free(copy);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "sizes", required_argument, 0, 's' },
		{ "alg", required_argument, 0, 'a' },
		{ "window", required_argument, 0, 'w' },
		{ "enomem-member", required_argument, 0, 'n' },
		{ "timeout-ms", required_argument, 0, 't' },
		{ 0, 0, 0, 0 },
	};
	struct member *mb = calloc(1, sizeof(*mb));
	struct alloc_params ap = { 0 };
	struct rdma_sq_options ro = { .max_recv_wr = 128, .max_send_wr = 128 };
	struct rdmc_engine_options eo = { .own_recvs = true, .recv_depth = 96 };
	struct rdmc_callbacks cb = { on_received, on_sent, on_stable, mb };
	struct squall_error err;
	struct rdma_sq_mr *grant;
	struct rdmc_stats st;
	uint32_t ids[GROUP_CONFIG_MAX_MEMBERS];
	int alg = RDMC_BINOMIAL, c;
	long enomem = -1;
	void *base;
	size_t len;

	mb->timeout_ms = 600000;
	parse_sizes(mb, "1,3.5,16,64");
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': parse_sizes(mb, optarg); break;
		case 'a':
			alg = rdmc_algorithm_from_name(optarg);
			if (alg < 0)
				die(mb, "--alg", "binomial, chain or sequential");
			break;
		case 'w': eo.send_window = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'n': enomem = strtol(optarg, NULL, 0); break;
		case 't': mb->timeout_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		default: die(mb, "usage", "rdmc_member CFG ID [--sizes MiB,...] [--alg NAME] "
			     "[--window N] [--enomem-member ID] [--timeout-ms MS]");
		}
	}
	if (argc - optind != 2)
		die(mb, "usage", "rdmc_member CFG ID [options]");
	if (group_config_load(argv[optind], &mb->cfg, &err))
		die(mb, "config", err.msg);
	c = (int)group_config_my_id(&mb->cfg, argv[optind + 1], &err);
	if (c < 0)
		die(mb, "member id", err.msg);
	mb->id = (uint32_t)c;
	mb->me = (unsigned)group_config_member_index(&mb->cfg, mb->id);
	if (mb->cfg.nmembers < NSEND + 1)
		die(mb, "config", "the test needs at least 3 members");
	for (unsigned s = 0; s < NSEND; s++)
		for (unsigned i = 0; i < mb->nmsg; i++)
			mb->m[s][i].size = mb->sizes[i];

	ap.region_size = mb->cfg.region_size;
	if (alloc_create(&ap, &mb->a, &err))
		die(mb, "alloc_create", err.msg);
	alloc_region(mb->a, &base, &len);
	if (group_transport_create(&mb->cfg, mb->id, base, len, &ro, &mb->node, &err))
		die(mb, "rdma_sq_create", err.msg);
	if (rdma_sq_connect_all(mb->node, &err))
		die(mb, "rdma_sq_connect_all", err.msg);
	/* The grant for RDMC buffers: a registration of the region of its own,
	 * whose rkey READY hands out. */
	if (rdma_sq_reg_mr(mb->node, base, len, 0, &grant, &err))
		die(mb, "rdma_sq_reg_mr", err.msg);
	eo.grant_mr = grant;
	if (rdmc_engine_create(mb->node, mb->a, &eo, &mb->e, &err))
		die(mb, "rdmc_engine_create", err.msg);
	for (unsigned i = 0; i < mb->cfg.nmembers; i++)
		ids[i] = mb->cfg.members[i].id;
	if (rdmc_group_create(mb->e, 1, ids, mb->cfg.nmembers, mb->cfg.rdmc_block_size,
			      (enum rdmc_algorithm)alg, &cb, &mb->g, &err))
		die(mb, "rdmc_group_create", err.msg);
	printf("member %u connected: %u members, %s, blocks of %" PRIu64 " bytes\n",
	       mb->id, mb->cfg.nmembers, rdmc_algorithm_name((enum rdmc_algorithm)alg),
	       mb->cfg.rdmc_block_size);
	fflush(stdout);

	main_phase(mb);
	fflush(stdout);
	if (enomem >= 0)
		enomem_phase(mb, (uint32_t)enomem);
	bye_phase(mb);
	rdmc_engine_stats(mb->e, &st);
	printf("STATS member=%u bytes_sent=%" PRIu64 " bytes_received=%" PRIu64
	       " blocks_sent=%" PRIu64 " blocks_received=%" PRIu64
	       " payload_copies=%" PRIu64 " transfers_sent=%" PRIu64
	       " transfers_received=%" PRIu64 " failed=%" PRIu64 " strays=%" PRIu64 "\n",
	       mb->id, st.bytes_sent, st.bytes_received, st.blocks_sent,
	       st.blocks_received, st.payload_copies, st.transfers_sent,
	       st.transfers_received, st.transfers_failed, st.strays);
	printf("member %u OK\n", mb->id);
	fflush(stdout);
	rdmc_engine_destroy(mb->e);
	rdma_sq_destroy(mb->node);
	alloc_destroy(mb->a);
	free(mb);
	return 0;
}
