/*
 * bench/regcache_rdma.c - what the registration cache costs and saves on
 * real verbs (two members on the Soft-RoCE device).
 *
 * Member 1 measures, member 2 answers:
 *  - miss: regcache_get() of freshly mapped memory through the node's cache
 *    (ibv_reg_mr plus the cache's own work, the monitor's watch included)
 *    against a bare ibv_reg_mr of the same size (rdma_sq_reg_mr), and a hit
 *    on the same range, by size;
 *  - send from foreign memory: round trips of a SEND straight from a
 *    malloc'd buffer (a cache hit gives the lkey) against the copy path
 *    (memcpy into the region, SEND from there), each answered by a 64-byte
 *    SEND, by size. Where the copy path is no faster the cache pays.
 *  - where the device pages memory on demand (the node's cache then
 *    registers with IBV_ACCESS_ON_DEMAND, rdma_sq_odp_why_not): the same
 *    round trip from freshly mapped, touched memory (a cache miss: the
 *    registration and the device's first access) and again from the same
 *    memory (a hit), on that node and on a second node with
 *    rdma_sq_options.no_odp (pinned registrations), in the same run.
 * The parts above run on a node with the default options, so on an ODP
 * device their registrations are on demand ("odp: on demand" says so;
 * "odp: pinned: WHY" otherwise). Medians of ITER repetitions; one line
 * per measurement:
 *   "miss size=S cache_us=A reg_mr_us=B hit_ns=C"
 *   "send size=S zero_copy_us=A copy_us=B"
 *   "odp size=S odp_miss_us=A odp_hit_us=B pinned_miss_us=C pinned_hit_us=D"
 *
 * --odp-unchecked makes that node take ODP on the device's word alone
 * (rdma_sq_options.odp_unchecked): figures of the path where the node's
 * loopback check refuses it (the bytes sent may then be wrong; the costs
 * are what they are).
 *
 * usage: regcache_rdma --id 1|2 [--port BASE] [--iters N] [--odp-unchecked]
 */
#include <getopt.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "member_common.h"

#define MAX_SIZE ((size_t)1 << 20)
#define REGION (2 * MAX_SIZE + 8192)
#define IN_OFF 0                 /* receives */
#define OUT_OFF (MAX_SIZE + 4096) /* the copy path's staging */
#define WR_SEND 1
#define WR_RECV 2

static const size_t miss_sizes[] = { 4096, 65536, 1 << 20, 8 << 20 };
static const size_t odp_sizes[] = { 4096, 65536, 1 << 20 };
/* Every power of two from 1 KiB to 1 MiB: the crossover these give is the
 * default of group.copy_threshold, so it is found to within a factor 2. */
static const size_t send_sizes[] = { 1024, 2048, 4096, 8192, 16384, 32768,
				     65536, 131072, 262144, 524288, 1 << 20 };
#define N(a) (sizeof(a) / sizeof((a)[0]))

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp);
	return v[n / 2];
}

static void *fresh(struct member *m, size_t len)
{
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die(m, "mmap: %s", strerror(errno));
	memset(p, 1, len); /* fault the pages in: registration pins them */
	return p;
}

static void miss(struct member *m, unsigned iters)
{
	struct regcache *c = rdma_sq_regcache(m->node);
	double a[64], b[64], h[64];
	struct squall_error err;

	for (size_t s = 0; s < N(miss_sizes); s++) {
		size_t len = miss_sizes[s];

		for (unsigned i = 0; i < iters; i++) {
			struct regcache_reg *r;
			struct rdma_sq_mr *mr;
			uint8_t *p = fresh(m, len);
			double t0 = now_us(), t1;

			if (regcache_get(c, p, len, &r))
				die(m, "regcache_get(%zu)", len);
			t1 = now_us();
			a[i] = t1 - t0;
			regcache_put(c, r);
			t0 = now_us();
			if (regcache_get(c, p, len, &r))
				die(m, "regcache_get(%zu) again", len);
			h[i] = (now_us() - t0) * 1000;
			regcache_put(c, r);
			munmap(p, len);
			/* drop the old registration now, not inside the
			 * next timed miss */
			regcache_sync(c);
			p = fresh(m, len);
			t0 = now_us();
			if (rdma_sq_reg_mr(m->node, p, len, 0, &mr, &err))
				die(m, "rdma_sq_reg_mr: %s", err.msg);
			b[i] = now_us() - t0;
			rdma_sq_dereg_mr(m->node, mr, &err);
			munmap(p, len);
			regcache_sync(c);
		}
		printf("miss size=%zu cache_us=%.1f reg_mr_us=%.1f hit_ns=%.0f\n", len,
		       median(a, iters), median(b, iters), median(h, iters));
	}
}

/* One round trip: SEND sg, wait for the 64-byte answer. */
static double round_trip(struct member *m, const struct rdma_sq_sge *sg,
			 const void *copy_from)
{
	struct rdma_sq_sge in = { m->region + IN_OFF, 64 };
	struct squall_error err;
	double t0 = now_us();

	if (rdma_sq_post_recv(m->node, m->peer, &in, 1, WR_RECV, &err))
		die(m, "post_recv: %s", err.msg);
	if (copy_from)
		memcpy(sg->ptr, copy_from, sg->len);
	if (rdma_sq_send(m->node, m->peer, sg, 1, WR_SEND, RDMA_SQ_SIGNALED, &err))
		die(m, "send: %s", err.msg);
	member_wait_ok(m, WR_SEND, "send");
	member_wait_ok(m, WR_RECV, "answer");
	return now_us() - t0;
}

static void sends(struct member *m, unsigned iters)
{
	uint8_t *buf = malloc(MAX_SIZE);
	double a[64], b[64];

	if (!buf)
		die(m, "malloc");
	memset(buf, 7, MAX_SIZE);
	for (size_t s = 0; s < N(send_sizes); s++) {
		struct rdma_sq_sge zc = { buf, (uint32_t)send_sizes[s] };
		struct rdma_sq_sge cp = { m->region + OUT_OFF, (uint32_t)send_sizes[s] };

		round_trip(m, &zc, NULL); /* the miss, not timed */
		for (unsigned i = 0; i < iters; i++) {
			a[i] = round_trip(m, &zc, NULL);
			b[i] = round_trip(m, &cp, buf);
		}
		printf("send size=%zu zero_copy_us=%.1f copy_us=%.1f\n", send_sizes[s],
		       median(a, iters), median(b, iters));
	}
	free(buf);
}

/* The last message to the answerer of m: one byte. */
static void end_answers(struct member *m)
{
	struct rdma_sq_sge end = { m->region + OUT_OFF, 1 };

	round_trip(m, &end, NULL);
}

/* Send round trips from fresh memory on m: the miss and then a hit, by
 * size (medians into miss_us[s] and hit_us[s]). */
static void miss_hit_sends(struct member *m, unsigned iters, double *miss_us,
			   double *hit_us)
{
	struct regcache *c = rdma_sq_regcache(m->node);
	double a[64], b[64];

	for (size_t s = 0; s < N(odp_sizes); s++) {
		size_t len = odp_sizes[s];

		for (unsigned i = 0; i < iters; i++) {
			uint8_t *p = fresh(m, len);
			struct rdma_sq_sge sg = { p, (uint32_t)len };

			a[i] = round_trip(m, &sg, NULL);
			b[i] = round_trip(m, &sg, NULL);
			munmap(p, len);
			regcache_sync(c);
		}
		miss_us[s] = median(a, iters);
		hit_us[s] = median(b, iters);
	}
}

/* The ODP path against the pinned one: m registers on demand, pin is the
 * same device with rdma_sq_options.no_odp. */
static void odp_against_pinned(struct member *m, struct member *pin,
			       unsigned iters)
{
	double om[N(odp_sizes)], oh[N(odp_sizes)];
	double pm[N(odp_sizes)], ph[N(odp_sizes)];
	struct rdma_sq_odp_stats os;

	miss_hit_sends(m, iters, om, oh);
	end_answers(m);
	miss_hit_sends(pin, iters, pm, ph);
	end_answers(pin);
	rdma_sq_odp_stats(m->node, &os);
	for (size_t s = 0; s < N(odp_sizes); s++)
		printf("odp size=%zu odp_miss_us=%.1f odp_hit_us=%.1f "
		       "pinned_miss_us=%.1f pinned_hit_us=%.1f\n", odp_sizes[s],
		       om[s], oh[s], pm[s], ph[s]);
	printf("odp registrations=%llu fallbacks=%llu\n",
	       (unsigned long long)os.registrations,
	       (unsigned long long)os.fallbacks);
}

static void answerer(struct member *m)
{
	struct rdma_sq_sge in = { m->region + IN_OFF, (uint32_t)MAX_SIZE };
	struct rdma_sq_sge out = { m->region + OUT_OFF, 64 };
	struct squall_error err;
	uint32_t got;

	do {
		if (rdma_sq_post_recv(m->node, m->peer, &in, 1, WR_RECV, &err))
			die(m, "post_recv: %s", err.msg);
		got = member_wait_ok(m, WR_RECV, "receive").byte_len;
		if (rdma_sq_send(m->node, m->peer, &out, 1, WR_SEND,
				 RDMA_SQ_SIGNALED, &err))
			die(m, "send: %s", err.msg);
		member_wait_ok(m, WR_SEND, "answer");
	} while (got != 1);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "id", required_argument, 0, 'i' },
		{ "port", required_argument, 0, 'p' },
		{ "iters", required_argument, 0, 'n' },
		{ "odp-unchecked", no_argument, 0, 'u' },
		{ 0, 0, 0, 0 },
	};
	unsigned id = 0, port = 7700, iters = 21;
	struct member m, pin;
	bool odp, unchecked = false;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'i')
			id = (unsigned)atoi(optarg);
		else if (c == 'p')
			port = (unsigned)atoi(optarg);
		else if (c == 'n')
			iters = (unsigned)atoi(optarg);
		else if (c == 'u')
			unchecked = true;
		else
			return 2;
	}
	if (iters < 1 || iters > 64)
		iters = 21;
	setvbuf(stdout, NULL, _IOLBF, 0);
	member_init_with(&m, "regcache_rdma", id, port, REGION,
			 (struct rdma_sq_options){ .odp_unchecked = unchecked });
	/* Both members run on the same device, so both see the same answer. */
	odp = rdma_sq_odp_why_not(m.node)[0] == '\0';
	if (odp) {
		printf("odp: on demand%s\n", unchecked ? " (unchecked)" : "");
		member_init_with(&pin, "regcache_rdma", id, port + 10, REGION,
				 (struct rdma_sq_options){ .no_odp = true });
	} else {
		printf("odp: pinned: %s\n", rdma_sq_odp_why_not(m.node));
	}
	if (id == 1) {
		miss(&m, iters);
		sends(&m, iters);
		if (odp)
			odp_against_pinned(&m, &pin, iters);
		else
			end_answers(&m);
	} else {
		answerer(&m);
		if (odp)
			answerer(&pin);
	}
	if (odp)
		rdma_sq_destroy(pin.node);
	rdma_sq_destroy(m.node);
	return 0;
}
