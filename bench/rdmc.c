/*
 * rdmc_bench - time RDMC multicasts from member 0 to 1, 2 and 3 receivers.
 *
 * Every member of the .cfg runs this program. For each receiver count r it
 * uses an RDMC group of members 0..r; member 0 sends messages of each size
 * back to back (the next once the previous has completed at every member),
 * and each receiver keeps the next two messages expected, so a send never
 * waits for a READY. Member 0 prints, per (r, size): the time per message
 * (rdmc_send until every receiver holds it) and the aggregate delivered
 * bandwidth, bytes delivered to all receivers per second (MB = 2^20 bytes,
 * as perftest counts). The first message of each point is a warm-up.
 *
 * usage: rdmc_bench CFG ID [--sizes MiB,...] [--receivers N,...]
 *                   [--alg NAME] [--window N] [--budget-mib N]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <squall/alloc.h>
#include <squall/config.h>
#include <squall/rdma.h>
#include <squall/rdmc.h>

#include "group/transport.h"

#define MAXV 8

struct bench {
	struct group_config cfg;
	uint32_t id;
	unsigned me;
	struct alloc *a;
	struct rdma_sq_node *node;
	struct rdmc_engine *e;
	unsigned nsizes, nrecv;
	double sizes[MAXV];
	unsigned recv[MAXV];
	unsigned budget_mib;
	bool leaving;           /* the last message is through: peers may go */
	double t_start;         /* when the program started */
	/* the current point */
	uint64_t size;
	unsigned received, stable, sent;
	int status;
	char why[256];
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const struct bench *b, const char *what, const char *why)
{
	fprintf(stderr, "rdmc_bench %u: %s: %s\n", b->id, what, why);
	fflush(stdout);
	exit(1);
}

static void on_received(void *arg, struct rdmc_group *g, uint64_t id,
			uint32_t sender, const struct buf_desc *d, int status,
			const char *why)
{
	struct bench *b = arg;

	(void)g;
	(void)id;
	(void)sender;
	if (status)
		die(b, "receive", why);
	alloc_release(b->a, d);
	b->received++;
}

static void on_stable(void *arg, struct rdmc_group *g, uint64_t id,
		      uint32_t sender)
{
	struct bench *b = arg;

	(void)g;
	(void)id;
	(void)sender;
	b->stable++;
}

static void on_sent(void *arg, struct rdmc_group *g, uint64_t id,
		    const struct buf_desc *d, int status, const char *why)
{
	struct bench *b = arg;

	(void)g;
	(void)id;
	if (status)
		die(b, "send", why);
	alloc_complete(b->a, d);
	b->sent++;
}

/* Windows: RDMC grants its buffers per transfer; no standing target. */
static int grant_nothing(void *arg, uint32_t peer, enum rdma_sq_target purpose,
			 void **ptr, size_t *len)
{
	(void)arg;
	(void)peer;
	(void)purpose;
	*ptr = NULL;
	*len = 0;
	return 0;
}

/* Peers are checked before polling: a poll that brings the last message
 * may also bring the disconnect of a member that is done, and the caller
 * must see the message first. */
static void progress(struct bench *b)
{
	int n;

	for (unsigned q = 0; q < b->cfg.nmembers && !b->leaving; q++)
		if (q != b->me && !rdma_sq_peer_alive(b->node, b->cfg.members[q].id))
			die(b, "lost a peer", rdma_sq_peer_error(b->node, b->cfg.members[q].id));
	n = rdmc_engine_poll(b->e, 100);
	if (n < 0)
		die(b, "poll", strerror(-n));
}

static unsigned reps_for(const struct bench *b, uint64_t size)
{
	unsigned n = (unsigned)(((uint64_t)b->budget_mib << 20) / size);

	return n < 2 ? 2 : n > 50 ? 50 : n;
}

/* One point: 1 warm-up + reps messages from member 0 to group g. */
static void point(struct bench *b, struct rdmc_group *g, unsigned r,
		  uint64_t size, uint64_t base_id, bool report)
{
	unsigned reps = reps_for(b, size), total = reps + 1;
	struct squall_error err;
	double t0 = 0;

	b->received = b->stable = b->sent = 0;
	if (b->me == 0) {
		for (unsigned j = 0; j < total; j++) {
			struct buf_desc d;
			size_t sz = size;

			if (j == 1)
				t0 = now_s();
			if (alloc_lease(b->a, 1, &sz, &d))
				die(b, "lease", "no room for a message");
			/* the payload is whatever the region holds: the
			 * time is the transfer's, not the filling's */
			if (rdmc_send(g, base_id + j, &d, &err))
				die(b, "rdmc_send", err.msg);
			while (b->sent < j + 1)
				progress(b);
		}
		double t = now_s() - t0;

		if (!report)
			return;
		printf("# %.1f s since start\n", now_s() - b->t_start);
		printf("RESULT receivers=%u size_mib=%g reps=%u ms_per_msg=%.2f "
		       "aggregate_MBps=%.2f\n", r, size / 1048576.0, reps,
		       t * 1e3 / reps, (double)r * size * reps / t / 1048576.0);
		fflush(stdout);
		return;
	}
	unsigned expected = 0;

	while (b->stable < total) {
		/* keep two messages expected ahead of the one in flight */
		while (expected < total && expected < b->received + 2) {
			if (rdmc_expect(g, base_id + expected, b->cfg.members[0].id,
					size, &err))
				die(b, "rdmc_expect", err.msg);
			expected++;
		}
		progress(b);
	}
}

static unsigned parse_list(const char *arg, double *out, unsigned max)
{
	char *copy = strdup(arg), *save = NULL;
	unsigned n = 0;

	for (char *t = strtok_r(copy, ",", &save); t && n < max;
	     t = strtok_r(NULL, ",", &save))
		out[n++] = strtod(t, NULL);
	free(copy);
	return n;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "sizes", required_argument, 0, 's' },
		{ "receivers", required_argument, 0, 'r' },
		{ "alg", required_argument, 0, 'a' },
		{ "window", required_argument, 0, 'w' },
		{ "budget-mib", required_argument, 0, 'b' },
		{ "set", required_argument, 0, 'S' },
		{ 0, 0, 0, 0 },
	};
	struct bench *b = calloc(1, sizeof(*b));
	const char *sets[8];
	unsigned nsets = 0;
	struct alloc_params ap = { 0 };
	struct rdma_sq_options ro = { .max_recv_wr = 128, .max_send_wr = 128 };
	struct rdmc_engine_options eo = { .own_recvs = true, .recv_depth = 96 };
	struct rdmc_callbacks cb = { on_received, on_sent, on_stable, b };
	struct rdmc_group *groups[MAXV] = { 0 };
	uint32_t ids[GROUP_CONFIG_MAX_MEMBERS];
	struct squall_error err;
	struct rdma_sq_mr *grant = NULL;
	double rv[MAXV];
	int alg = RDMC_BINOMIAL, c;
	void *base;
	size_t len;

	b->t_start = now_s();
	b->budget_mib = 64;
	b->nsizes = parse_list("1,16,64", b->sizes, MAXV);
	b->nrecv = 3;
	for (unsigned i = 0; i < 3; i++)
		b->recv[i] = i + 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': b->nsizes = parse_list(optarg, b->sizes, MAXV); break;
		case 'r':
			b->nrecv = parse_list(optarg, rv, MAXV);
			for (unsigned i = 0; i < b->nrecv; i++)
				b->recv[i] = (unsigned)rv[i];
			break;
		case 'a':
			alg = rdmc_algorithm_from_name(optarg);
			if (alg < 0)
				die(b, "--alg", "binomial, chain or sequential");
			break;
		case 'w': eo.send_window = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'b': b->budget_mib = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'S':
			if (nsets == 8)
				die(b, "--set", "at most 8");
			sets[nsets++] = optarg;
			break;
		default: die(b, "usage", "rdmc_bench CFG ID [--sizes MiB,...] "
			     "[--receivers N,...] [--alg NAME] [--window N] [--budget-mib N] "
			     "[--set KEY=VALUE]...");
		}
	}
	if (argc - optind != 2)
		die(b, "usage", "rdmc_bench CFG ID [options]");
	if (group_config_load_with(argv[optind], NULL, sets, nsets, &b->cfg, &err))
		die(b, "config", err.msg);
	c = (int)group_config_my_id(&b->cfg, argv[optind + 1], &err);
	if (c < 0)
		die(b, "member id", err.msg);
	b->id = (uint32_t)c;
	b->me = (unsigned)group_config_member_index(&b->cfg, b->id);
	for (unsigned i = 0; i < b->nrecv; i++)
		if (b->recv[i] < 1 || b->recv[i] >= b->cfg.nmembers)
			die(b, "--receivers", "each count must be 1 .. members - 1");

	ap.region_size = b->cfg.region_size;
	if (alloc_create(&ap, &b->a, &err))
		die(b, "alloc_create", err.msg);
	alloc_region(b->a, &base, &len);
	/* group.peer_access as the group does it: a window per writer and
	 * transfer, or one key over the whole region. */
	ro.peer_windows = b->cfg.peer_access == 0;
	if (group_transport_create(&b->cfg, b->id, base, len, &ro, &b->node, &err))
		die(b, "rdma_sq_create", err.msg);
	if (rdma_sq_connect_all(b->node, &err))
		die(b, "rdma_sq_connect_all", err.msg);
	if (ro.peer_windows) {
		/* A node with windows takes each peer's grants before
		 * anything else from it: RDMC's own come per transfer, so
		 * there is nothing to grant, but the exchange must happen
		 * (a READY in its place fails the peer). */
		if (rdma_sq_grant_all(b->node, grant_nothing, NULL,
				      b->cfg.connect_timeout_ms, &err))
			die(b, "rdma_sq_grant_all", err.msg);
		eo.windows = true;
	} else {
		if (rdma_sq_reg_mr(b->node, base, len, 0, &grant, &err))
			die(b, "rdma_sq_reg_mr", err.msg);
		eo.grant_mr = grant;
	}
	if (rdmc_engine_create(b->node, b->a, &eo, &b->e, &err))
		die(b, "rdmc_engine_create", err.msg);
	for (unsigned i = 0; i < b->cfg.nmembers; i++)
		ids[i] = b->cfg.members[i].id;
	if (b->me == 0)
		printf("# set-up (region, connections, registration) took %.1f s\n"
		       "# rdmc_bench: %s, blocks of %" PRIu64 " bytes, window %u, "
		       "device %s, peers write through %s\n", now_s() - b->t_start, rdmc_algorithm_name((enum rdmc_algorithm)alg),
		       b->cfg.rdmc_block_size, eo.send_window ? eo.send_window : 8,
		       rdma_sq_device_name(b->node), ro.peer_windows ?
		       "a window per transfer" : "the whole region's key");
	for (unsigned i = 0; i < b->nrecv; i++) {
		unsigned r = b->recv[i];

		if (b->me > r)
			continue;
		if (rdmc_group_create(b->e, 10 + r, ids, r + 1, b->cfg.rdmc_block_size,
				      (enum rdmc_algorithm)alg, &cb, &groups[i], &err))
			die(b, "rdmc_group_create", err.msg);
	}
	for (unsigned i = 0; i < b->nrecv; i++) {
		if (!groups[i])
			continue;
		for (unsigned s = 0; s < b->nsizes; s++)
			point(b, groups[i], b->recv[i], (uint64_t)(b->sizes[s] * 1048576),
			      (uint64_t)(i * MAXV + s) << 32, true);
	}
	/* Leave together: member 0 sends one last small message to all. */
	{
		struct rdmc_group *all = NULL;
		unsigned n = b->cfg.nmembers;

		if (rdmc_group_create(b->e, 99, ids, n, b->cfg.rdmc_block_size,
				      (enum rdmc_algorithm)alg, &cb, &all, &err))
			die(b, "rdmc_group_create", err.msg);
		point(b, all, n - 1, 4096, 0xffull << 32, false);
		/* Member 0 leaves once every receiver holds the last message;
		 * a receiver's own DONE has completed by then. */
		b->leaving = true;
		while (!rdmc_engine_idle(b->e))
			progress(b);
	}
	rdmc_engine_destroy(b->e);
	rdma_sq_destroy(b->node);
	alloc_destroy(b->a);
	free(b);
	return 0;
}
