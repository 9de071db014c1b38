/*
 * sst_bench - what the SST costs, between two members on one RDMA device.
 *
 * 1. Push latency while busy: member 1 pushes a new value of its `ping`
 *    column; member 2's predicate sees it and its trigger pushes it back;
 *    member 1's predicate sees the echo and sends the next one. Half the
 *    round trip is the time from a push until a peer's predicate sees it,
 *    as ib_write_lat reports half the round trip of RDMA writes.
 * 2. The same after both members have gone to sleep (a pause between
 *    pings longer than the spin window): the wake-up latency.
 * 3. Pushes/s: member 1's main thread increments and pushes a counter
 *    --pushes times; member 2's one-shot predicate sees the last value and
 *    answers; the rate counts the pushes over the time until the answer.
 * 4. Idle CPU: both members with no traffic but heartbeats for --idle-s
 *    seconds; CPU time of the whole process (all threads) over wall time.
 * 5. --placement N, alone and without RDMA: N pushes landing in random
 *    pieces (tests/unit/sst_placement.h), counting what a reader accepted
 *    that was never pushed, and the time to validate one segment (the
 *    group's SMC counters of 3 members: 6 words and a trailer).
 *
 * usage: sst_bench --id 1|2 --member 1,ADDR,PORT --member 2,ADDR,PORT
 *        [--iters N] [--wake-iters N] [--pushes N] [--idle-s S]
 *        [--busy-only] [--spin-us US] [--spin-max-us US]
 *        sst_bench --placement N
 * --busy-only runs the first measurement alone; --spin-* set the progress
 * thread's spin window (sst_options).
 */
#include <getopt.h>
#include <math.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../tests/unit/sst_placement.h"
#include "../tests/vm/sst_setup.h"

/* Round trips are timed with the cycle counter where there is one, as
 * perftest does: on a virtual machine clock_gettime can be a system call
 * that costs as much as the thing measured. Calibrated against the
 * monotonic clock at start. */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static double ticks_per_us = 1e3;
static uint64_t ticks(void)
{
	return __rdtsc();
}

static void calibrate(void)
{
	uint64_t n0 = mono_ns(), c0 = ticks(), n1, c1;

	usleep(200000);
	n1 = mono_ns();
	c1 = ticks();
	ticks_per_us = (double)(c1 - c0) / ((double)(n1 - n0) / 1e3);
}
#else
static double ticks_per_us = 1e3;
static uint64_t ticks(void)
{
	return mono_ns();
}

static void calibrate(void)
{
}
#endif

struct bench {
	struct member m;
	uint32_t iters, wake_iters, warmup;
	uint64_t pushes;
	uint32_t idle_s;
	bool busy_only;
	struct sst_options opt;

	/* pinger (member rank 0) */
	bool hot;               /* the trigger sends the next ping itself */
	_Atomic uint64_t sent_ns; /* ticks(); 0 while no ping is out */
	uint32_t done_iters, want_iters;
	double *rtt_us;
	sem_t echo;
};

static struct bench B;

static bool echo_pred(struct sst *t, void *arg)
{
	(void)arg;
	return sst_get(t, 0, COL_PING) != sst_get(t, 1, COL_PING);
}

/* Member 2: send the ping back. */
static void echo_trig(struct sst *t, void *arg)
{
	(void)arg;
	sst_set(t, COL_PING, sst_get(t, 0, COL_PING));
	sst_push_cols(t, COL_PING, 1);
}

static bool pong_pred(struct sst *t, void *arg)
{
	struct bench *b = arg;
	uint64_t mine = sst_get(t, 0, COL_PING);

	return atomic_load(&b->sent_ns) && mine &&
	       sst_get(t, 1, COL_PING) == mine;
}

static void send_ping(struct bench *b)
{
	struct sst *t = b->m.t;

	/* The new value first, then the time: the predicate matches only
	 * once both are out, never an old echo against a new time. */
	sst_set(t, COL_PING, sst_get(t, 0, COL_PING) + 1);
	atomic_store(&b->sent_ns, ticks());
	sst_push_cols(t, COL_PING, 1);
}

/* Member 1: the echo is back. */
static void pong_trig(struct sst *t, void *arg)
{
	struct bench *b = arg;
	uint64_t now = ticks();

	(void)t;
	if (b->done_iters < b->want_iters)
		b->rtt_us[b->done_iters] =
			(double)(now - atomic_load(&b->sent_ns)) / ticks_per_us;
	b->done_iters++;
	atomic_store(&b->sent_ns, 0);
	if (b->hot && b->done_iters < b->want_iters)
		send_ping(b);
	else
		sem_post(&b->echo);
}

static bool last_push_pred(struct sst *t, void *arg)
{
	struct bench *b = arg;

	return sst_get(t, 0, COL_COUNTER) >= b->pushes;
}

static void last_push_trig(struct sst *t, void *arg)
{
	(void)arg;
	sst_set(t, COL_DONE, 1);
	sst_push_cols(t, COL_DONE, 1);
}

static bool answer_pred(struct sst *t, void *arg)
{
	(void)arg;
	return sst_get(t, 1, COL_DONE) != 0;
}

static void answer_trig(struct sst *t, void *arg)
{
	struct bench *b = arg;

	(void)t;
	sem_post(&b->echo);
}

/* Both members reach phase k before either goes on. */
static void barrier(struct bench *b, uint64_t k)
{
	struct sst *t = b->m.t;

	sst_set(t, COL_PHASE, k);
	sst_push_cols(t, COL_PHASE, 1);
	while (sst_get(t, 0, COL_PHASE) < k || sst_get(t, 1, COL_PHASE) < k)
		usleep(1000);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Prints median, mean, p99 and min of half round trips. */
static void report(const char *name, double *rtt, uint32_t n)
{
	double sum = 0;

	qsort(rtt, n, sizeof(*rtt), cmp_double);
	for (uint32_t i = 0; i < n; i++)
		sum += rtt[i];
	printf("LAT %s iters=%u half_rtt_med_us=%.2f half_rtt_avg_us=%.2f "
	       "half_rtt_p99_us=%.2f half_rtt_min_us=%.2f\n", name, n,
	       rtt[n / 2] / 2, sum / n / 2, rtt[(uint32_t)(n * 0.99)] / 2,
	       rtt[0] / 2);
	fflush(stdout);
}

static void pinger(struct bench *b)
{
	struct sst *t = b->m.t;
	struct sst_stats s0, s1;
	uint64_t t0, t1;

	/* 1: busy ping-pong; warm-up rounds first, not counted. */
	sst_get_stats(t, &s0);
	b->hot = true;
	b->want_iters = b->warmup;
	b->done_iters = 0;
	send_ping(b);
	sem_wait(&b->echo);
	b->want_iters = b->iters;
	b->done_iters = 0;
	send_ping(b);
	sem_wait(&b->echo);
	sst_get_stats(t, &s1);
	printf("BUSY sleeps_during=%" PRIu64 "\n", s1.sleeps - s0.sleeps);
	report("busy", b->rtt_us, b->iters);
	if (b->busy_only)
		return;

	/* 2: one ping after each pause longer than the spin window. */
	b->hot = false;
	b->want_iters = b->wake_iters;
	b->done_iters = 0;
	sst_get_stats(t, &s0);
	for (uint32_t i = 0; i < b->wake_iters; i++) {
		usleep(20000);
		send_ping(b);
		sem_wait(&b->echo);
	}
	sst_get_stats(t, &s1);
	printf("WAKE sleeps_during=%" PRIu64 "\n", s1.sleeps - s0.sleeps);
	report("wake", b->rtt_us, b->wake_iters);

	/* 3: pushes/s from the application thread. */
	sst_get_stats(t, &s0);
	t0 = mono_ns();
	for (uint64_t k = 1; k <= b->pushes; k++) {
		sst_set(t, COL_COUNTER, k);
		sst_push_cols(t, COL_COUNTER, 1);
	}
	sem_wait(&b->echo);
	t1 = mono_ns();
	sst_get_stats(t, &s1);
	printf("PUSHES n=%" PRIu64 " secs=%.3f pushes_per_s=%.0f writes=%" PRIu64
	       " writes_per_s=%.0f merged=%" PRIu64 "\n", b->pushes,
	       (t1 - t0) / 1e9, b->pushes / ((t1 - t0) / 1e9),
	       s1.writes - s0.writes, (s1.writes - s0.writes) / ((t1 - t0) / 1e9),
	       s1.merged - s0.merged);
	fflush(stdout);
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void idle(struct bench *b)
{
	struct sst_stats s0, s1;
	double c0, c1;
	uint64_t w0, w1;

	/* Let the last traffic settle, then measure. */
	sleep(1);
	sst_get_stats(b->m.t, &s0);
	c0 = cpu_s();
	w0 = mono_ns();
	sleep(b->idle_s);
	c1 = cpu_s();
	w1 = mono_ns();
	sst_get_stats(b->m.t, &s1);
	printf("IDLE member=%u secs=%.2f cpu_pct=%.2f sleeps=%" PRIu64
	       " heartbeats=%" PRIu64 " received=%" PRIu64 "\n", b->m.id,
	       (w1 - w0) / 1e9, 100.0 * (c1 - c0) / ((w1 - w0) / 1e9),
	       s1.sleeps - s0.sleeps, s1.heartbeats - s0.heartbeats,
	       s1.received - s0.received);
	fflush(stdout);
}

/* Simulated placement, then the cost of validating one segment. */
static int placement(uint64_t pushes)
{
	const struct sst_column cols[] = {
		{ "smc_received", SST_COL_U64_ARRAY, 3, false },
		{ "smc_released", SST_COL_U64_ARRAY, 3, true },
	};
	struct plc_result r;
	struct sst_layout *l;
	uint8_t *land, *valid;
	uint64_t *scratch, t0, t1, takes = 2000000, bad = 0;
	const struct sst_seg *g;

	if (plc_run(pushes, 0x5157a11, true, &r))
		return 1;
	if (sst_layout_create(cols, 2, &l, NULL))
		return 1;
	g = &l->segs[1];
	land = calloc(1, sst_layout_row_size(l));
	valid = calloc(1, sst_layout_row_size(l));
	scratch = calloc(1, sst_layout_row_size(l));
	if (!land || !valid || !scratch)
		return 1;
	memset(land + g->lo, 0x3c, g->trailer - g->lo);
	sst_seal(g, 11, 1, land, land);
	t0 = mono_ns();
	for (uint64_t i = 0; i < takes; i++) {
		/* Forget the copy taken, so each look validates in full. */
		__atomic_store_n((uint64_t *)(void *)(valid + g->trailer), 0,
				 __ATOMIC_RELAXED);
		bad += sst_seal_take(g, 11, land, valid, scratch) != SST_TAKE_NEW;
	}
	t1 = mono_ns();
	printf("PLACEMENT pushes=%" PRIu64 " pieces=%" PRIu64 " polls=%" PRIu64
	       " taken=%" PRIu64 " torn_seen=%" PRIu64 " violations=%" PRIu64
	       " went_back=%" PRIu64 " unfinished=%" PRIu64
	       " validate_ns=%.1f segment_bytes=%u\n", r.pushes, r.pieces,
	       r.polls, r.taken, r.torn, r.violations, r.went_back,
	       r.unfinished, (double)(t1 - t0) / (double)takes,
	       sst_seg_end(g) - g->lo);
	free(land);
	free(valid);
	free(scratch);
	sst_layout_destroy(l);
	return r.violations || r.went_back || r.unfinished || bad;
}

static void usage(void)
{
	fprintf(stderr, "usage: sst_bench --id 1|2 --member 1,ADDR,PORT "
		"--member 2,ADDR,PORT [--iters N] [--wake-iters N] [--pushes N] "
		"[--idle-s S] [--busy-only] [--spin-us US] [--spin-max-us US]\n"
		"       sst_bench --placement N\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "id", required_argument, 0, 'i' },
		{ "member", required_argument, 0, 'm' },
		{ "iters", required_argument, 0, 'n' },
		{ "wake-iters", required_argument, 0, 'w' },
		{ "pushes", required_argument, 0, 'p' },
		{ "idle-s", required_argument, 0, 's' },
		{ "busy-only", no_argument, 0, 'B' },
		{ "spin-us", required_argument, 0, 'S' },
		{ "spin-max-us", required_argument, 0, 'X' },
		{ "placement", required_argument, 0, 'P' },
		{ 0, 0, 0, 0 },
	};
	struct bench *b = &B;
	bool have_id = false;
	int c;

	member_init(&b->m, "sst_bench");
	b->iters = 5000;
	b->warmup = 200;
	b->wake_iters = 100;
	b->pushes = 50000;
	b->idle_s = 5;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'i': b->m.id = (uint32_t)strtoul(optarg, NULL, 0); have_id = true; break;
		case 'm': add_member(&b->m, optarg); break;
		case 'n': b->iters = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'w': b->wake_iters = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'p': b->pushes = strtoull(optarg, NULL, 0); break;
		case 's': b->idle_s = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'B': b->busy_only = true; break;
		case 'S': b->opt.spin_us = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'X': b->opt.spin_max_us = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'P': return placement(strtoull(optarg, NULL, 0));
		default: usage();
		}
	}
	if (!have_id || b->m.cfg.nmembers != 2 || b->iters < 10 ||
	    b->wake_iters < 1 || b->pushes < 1)
		usage();
	b->rtt_us = calloc(b->iters > b->wake_iters ? b->iters : b->wake_iters,
			   sizeof(double));
	if (!b->rtt_us || sem_init(&b->echo, 0, 0))
		return 1;
	calibrate();
	member_connect(&b->m, &b->opt);
	if (b->m.me == 0) {
		if (sst_predicate_add(b->m.t, SST_PRED_RECURRENT, pong_pred,
				      pong_trig, b, NULL) ||
		    sst_predicate_add(b->m.t, SST_PRED_ONESHOT, answer_pred,
				      answer_trig, b, NULL))
			die(&b->m, "predicates", "could not register");
	} else {
		if (sst_predicate_add(b->m.t, SST_PRED_RECURRENT, echo_pred,
				      echo_trig, b, NULL) ||
		    sst_predicate_add(b->m.t, SST_PRED_ONESHOT, last_push_pred,
				      last_push_trig, b, NULL))
			die(&b->m, "predicates", "could not register");
	}
	member_start(&b->m);
	barrier(b, 1);
	if (b->m.me == 0)
		pinger(b);
	barrier(b, 2);
	if (!b->busy_only) {
		idle(b);
		barrier(b, 3);
	}
	sleep(1);
	member_close(&b->m);
	return 0;
}
