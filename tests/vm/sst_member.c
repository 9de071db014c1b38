/*
 * sst_member - one member of the SST VM tests.
 *
 * --mode counters: the member increments its counter --count times, one
 * increment and one push per evaluation pass, from a recurrent predicate
 * that removes itself when the count is reached. A second recurrent
 * predicate checks on every pass that every peer's counter only grows, and
 * is removed from the main thread at the end (after which it must never
 * run again). A one-shot predicate "every counter reached the count" must
 * fire exactly once; it raises the member's done flag. The member ends when
 * every member's done flag is up, and prints what it saw.
 *
 * --mode suspect: the member increments and pushes its counter from the
 * main thread every --period-us, prints every suspicion with the wall
 * clock time, and after the first suspicion keeps going for --after-ms,
 * then checks that every peer it does not suspect kept advancing.
 *
 * --mode garbage: a broken writer. It runs as in suspect mode for 2 s,
 * then stops pushing its counter and instead writes random bytes (with a
 * sequence word that keeps moving) over its counter's segment in every
 * peer's copy of its row, by plain RDMA writes from its main thread, while
 * its progress thread keeps its heartbeats going. It prints GARBAGE with
 * the wall clock when it starts; peers must suspect it for a row that does
 * not validate, though its heartbeat never stops.
 *
 * usage: sst_member --id N --member ID,ADDR,PORT [--member ...]
 *        [--mode counters|suspect|garbage] [--count N] [--heartbeat-ms MS]
 *        [--timeout-ms MS] [--period-us US] [--after-ms MS]
 */
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "sst/layout.h"
#include "sst_setup.h"

struct run {
	struct member m;
	bool suspect_mode;
	bool garbage_mode;
	uint64_t count;
	uint32_t heartbeat_ms, timeout_ms, period_us, after_ms;

	sst_pred_id inc_id, watch_id;
	uint64_t inc_fires;
	uint64_t last[SST_MAX_MEMBERS];
	uint64_t violations;
	atomic_uint_fast64_t watch_runs;
	atomic_uint oneshot_fired;

	pthread_mutex_t lock;   /* suspicion records */
	uint32_t nsuspect;
	uint64_t first_suspect_ms;
	uint64_t at_suspect[SST_MAX_MEMBERS];
	bool checked;           /* results printed: later suspicions are the
				   other survivors leaving */
};

static struct run R;

static bool inc_pred(struct sst *t, void *arg)
{
	struct run *r = arg;

	return sst_get(t, r->m.me, COL_COUNTER) < r->count;
}

static void inc_trig(struct sst *t, void *arg)
{
	struct run *r = arg;
	uint64_t v = sst_get(t, r->m.me, COL_COUNTER) + 1;

	sst_set(t, COL_COUNTER, v);
	sst_push_cols(t, COL_COUNTER, 1);
	r->inc_fires++;
	if (v == r->count && sst_predicate_remove(t, r->inc_id))
		die(&r->m, "inc", "could not remove itself");
}

static bool always(struct sst *t, void *arg)
{
	(void)t;
	(void)arg;
	return true;
}

/* Every peer's counter only grows, as seen from here. */
static void watch_trig(struct sst *t, void *arg)
{
	struct run *r = arg;

	for (uint32_t q = 0; q < sst_nmembers(t); q++) {
		uint64_t v = sst_get(t, q, COL_COUNTER);

		if (v < r->last[q]) {
			r->violations++;
			fprintf(stderr, "sst_member: member %u: counter of rank %u "
				"went back from %" PRIu64 " to %" PRIu64 "\n",
				r->m.id, q, r->last[q], v);
		}
		if (v > r->count) {
			r->violations++;
			fprintf(stderr, "sst_member: member %u: counter of rank %u "
				"is %" PRIu64 ", beyond %" PRIu64 "\n", r->m.id, q,
				v, r->count);
		}
		r->last[q] = v;
	}
	atomic_fetch_add(&r->watch_runs, 1);
}

static bool all_reached(struct sst *t, void *arg)
{
	struct run *r = arg;

	for (uint32_t q = 0; q < sst_nmembers(t); q++)
		if (sst_get(t, q, COL_COUNTER) < r->count)
			return false;
	return true;
}

static void all_reached_trig(struct sst *t, void *arg)
{
	struct run *r = arg;

	atomic_fetch_add(&r->oneshot_fired, 1);
	sst_set(t, COL_DONE, 1);
	sst_push_cols(t, COL_DONE, 1);
}

static void on_suspect(struct sst *t, uint32_t rank, uint32_t by,
		       const char *why, void *arg)
{
	struct run *r = arg;
	uint64_t now = wall_ms();

	bool quiet;

	pthread_mutex_lock(&r->lock);
	quiet = r->checked;
	if (!quiet && r->nsuspect++ == 0) {
		r->first_suspect_ms = now;
		for (uint32_t q = 0; q < sst_nmembers(t); q++)
			r->at_suspect[q] = sst_get(t, q, COL_COUNTER);
	}
	pthread_mutex_unlock(&r->lock);
	if (quiet)
		return;
	printf("SUSPECT member=%u rank=%u id=%u by=%u at_ms=%" PRIu64 " why=%s\n",
	       r->m.id, rank, sst_member_id(t, rank), sst_member_id(t, by), now,
	       why);
	fflush(stdout);
}

static void check_tags(struct run *r)
{
	for (uint32_t q = 0; q < r->m.cfg.nmembers; q++) {
		char want[12] = { 0 }, got[12];

		snprintf(want, sizeof(want), "member-%u", sst_member_id(r->m.t, q));
		sst_get_bytes(r->m.t, q, COL_TAG, got, sizeof(got));
		if (memcmp(want, got, sizeof(got))) {
			r->violations++;
			fprintf(stderr, "sst_member: member %u: tag of rank %u is "
				"'%.12s', want '%s'\n", r->m.id, q, got, want);
		}
	}
}

static bool all_done(struct run *r)
{
	for (uint32_t q = 0; q < r->m.cfg.nmembers; q++)
		if (!sst_get(r->m.t, q, COL_DONE))
			return false;
	return true;
}

static void print_stats(struct run *r, uint64_t ms)
{
	struct sst_stats s;

	sst_get_stats(r->m.t, &s);
	printf("STATS member=%u ms=%" PRIu64 " pushes=%" PRIu64 " writes=%" PRIu64
	       " merged=%" PRIu64 " deferred=%" PRIu64 " received=%" PRIu64
	       " passes=%" PRIu64 " fired=%" PRIu64 " sleeps=%" PRIu64
	       " heartbeats=%" PRIu64 " stalls=%" PRIu64 "\n", r->m.id, ms,
	       s.pushes, s.writes, s.merged, s.deferred, s.received, s.passes,
	       s.fired, s.sleeps, s.heartbeats, s.stalls);
}

static int run_counters(struct run *r)
{
	struct sst *t = r->m.t;
	uint64_t t0 = mono_ns(), deadline = t0 + 600ull * 1000000000ull;
	uint64_t runs;
	bool ok = true;

	if (sst_predicate_add(t, SST_PRED_RECURRENT, always, watch_trig, r,
			      &r->watch_id) ||
	    sst_predicate_add(t, SST_PRED_ONESHOT, all_reached, all_reached_trig,
			      r, NULL) ||
	    sst_predicate_add(t, SST_PRED_RECURRENT, inc_pred, inc_trig, r,
			      &r->inc_id))
		die(&r->m, "predicates", "could not register");
	while (!all_done(r)) {
		if (mono_ns() > deadline || r->nsuspect) {
			printf("FAIL member=%u: %s\n", r->m.id, r->nsuspect ?
			       "a member was suspected during the run" :
			       "not every member finished within 600 s");
			ok = false;
			break;
		}
		usleep(10000);
	}
	/* Remove the watcher from this thread; after that it never runs. */
	if (sst_predicate_remove(t, r->watch_id)) {
		printf("FAIL member=%u: watcher removal\n", r->m.id);
		ok = false;
	}
	runs = atomic_load(&r->watch_runs);
	usleep(200000);
	check_tags(r);
	printf("RESULT member=%u counters=", r->m.id);
	for (uint32_t q = 0; q < r->m.cfg.nmembers; q++) {
		uint64_t v = sst_get(t, q, COL_COUNTER);

		printf("%s%" PRIu64, q ? "," : "", v);
		if (v != r->count)
			ok = false;
	}
	printf(" violations=%" PRIu64 " watch_runs=%" PRIu64
	       " watch_runs_after_remove=%" PRIu64 " oneshot_fired=%u"
	       " inc_fires=%" PRIu64 "\n", r->violations, runs,
	       atomic_load(&r->watch_runs) - runs, atomic_load(&r->oneshot_fired),
	       r->inc_fires);
	print_stats(r, (mono_ns() - t0) / 1000000);
	ok = ok && r->violations == 0 && atomic_load(&r->watch_runs) == runs &&
	     runs > 0 && atomic_load(&r->oneshot_fired) == 1 &&
	     r->inc_fires == r->count;
	printf("%s member=%u\n", ok ? "PASS" : "FAIL", r->m.id);
	fflush(stdout);
	/* Let the last pushes land before the connections go. */
	sleep(1);
	return ok ? 0 : 1;
}

static int run_suspect(struct run *r)
{
	struct sst *t = r->m.t;
	uint64_t v = 0, start = wall_ms(), end;
	bool ok = true;

	printf("READY member=%u at_ms=%" PRIu64 "\n", r->m.id, start);
	fflush(stdout);
	for (;;) {
		uint64_t now = wall_ms(), first;

		pthread_mutex_lock(&r->lock);
		first = r->nsuspect ? r->first_suspect_ms : 0;
		pthread_mutex_unlock(&r->lock);
		if (first && now >= first + r->after_ms)
			break;
		if (!first && now >= start + 120000) {
			printf("FAIL member=%u: nobody was suspected in 120 s\n",
			       r->m.id);
			return 1;
		}
		sst_set(t, COL_COUNTER, ++v);
		sst_push_cols(t, COL_COUNTER, 1);
		usleep(r->period_us);
	}
	pthread_mutex_lock(&r->lock);
	r->checked = true;
	pthread_mutex_unlock(&r->lock);
	for (uint32_t q = 0; q < r->m.cfg.nmembers; q++) {
		uint64_t now = sst_get(t, q, COL_COUNTER);

		if (q == r->m.me || sst_suspected(t, q))
			continue;
		printf("ADVANCED member=%u peer=%u from=%" PRIu64 " to=%" PRIu64 "\n",
		       r->m.id, sst_member_id(t, q), r->at_suspect[q], now);
		if (now <= r->at_suspect[q])
			ok = false;
	}
	print_stats(r, wall_ms() - start);
	printf("%s member=%u\n", ok ? "PASS" : "FAIL", r->m.id);
	fflush(stdout);
	/* Keep pushing a while, so that the other survivors finish their
	 * checks before this member leaves. */
	for (end = wall_ms() + 2000; wall_ms() < end; usleep(r->period_us)) {
		sst_set(t, COL_COUNTER, ++v);
		sst_push_cols(t, COL_COUNTER, 1);
	}
	return ok ? 0 : 1;
}

/* Write random bytes over the counter's segment of this member's row in
 * every peer's table, its sequence word moving, for secs seconds. */
static int write_garbage(struct run *r, uint64_t ms)
{
	const struct sst_layout *l = r->m.layout;
	const struct sst_seg *g = &l->segs[sst_layout_col_segment(l, COL_COUNTER)];
	uint32_t len = sst_seg_end(g) - g->lo;
	uint8_t *src = r->m.region + r->m.region_len - 4096;
	uint64_t rng = 0x6a7ba6e ^ r->m.id, end = wall_ms() + ms, n = 0;
	struct squall_error err;

	for (uint64_t k = 1; wall_ms() < end; k++) {
		for (uint32_t i = 0; i < len; i++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			src[i] = (uint8_t)(rng >> 56);
		}
		/* A sequence far above any real one: always "changed". */
		memcpy(src + (g->trailer - g->lo), &(uint64_t){ k << 40 }, 8);
		for (uint32_t q = 0; q < r->m.cfg.nmembers; q++) {
			struct rdma_sq_sge sge = { src, len };
			uint64_t addr, rlen;
			uint32_t rkey, id = r->m.cfg.members[q].id;

			if (q == r->m.me || rdma_sq_remote(r->m.node, id,
			    RDMA_SQ_TARGET_REGION, &addr, &rkey, &rlen))
				continue;
			addr += (uint64_t)r->m.me * sst_layout_row_size(l) + g->lo;
			/* Not the SST's tag: its completion is ignored. */
			if (rdma_sq_write(r->m.node, id, &sge, 1, addr, rkey,
					  0x7700000000000000ull, RDMA_SQ_SIGNALED,
					  &err) == 0)
				n++;
		}
		usleep(r->period_us / 4);
	}
	printf("GARBAGE_DONE member=%u writes=%" PRIu64 "\n", r->m.id, n);
	fflush(stdout);
	return 0;
}

static int run_garbage(struct run *r)
{
	struct sst *t = r->m.t;
	uint64_t v = 0, start = wall_ms();

	printf("READY member=%u at_ms=%" PRIu64 "\n", r->m.id, start);
	fflush(stdout);
	while (wall_ms() < start + 2000) {
		sst_set(t, COL_COUNTER, ++v);
		sst_push_cols(t, COL_COUNTER, 1);
		usleep(r->period_us);
	}
	printf("GARBAGE member=%u at_ms=%" PRIu64 "\n", r->m.id, wall_ms());
	fflush(stdout);
	return write_garbage(r, 4ull * r->timeout_ms + r->after_ms);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: sst_member --id N --member ID,ADDR,PORT [--member ...]\n"
		"  [--mode counters|suspect|garbage] [--count N] [--heartbeat-ms MS]\n"
		"  [--timeout-ms MS] [--period-us US] [--after-ms MS]\n");
	exit(2);
}

static void parse(int argc, char **argv, struct run *r)
{
	static const struct option lo[] = {
		{ "id", required_argument, 0, 'i' },
		{ "member", required_argument, 0, 'm' },
		{ "mode", required_argument, 0, 'M' },
		{ "count", required_argument, 0, 'c' },
		{ "heartbeat-ms", required_argument, 0, 'h' },
		{ "timeout-ms", required_argument, 0, 't' },
		{ "period-us", required_argument, 0, 'p' },
		{ "after-ms", required_argument, 0, 'a' },
		{ 0, 0, 0, 0 },
	};
	bool have_id = false;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'i': r->m.id = (uint32_t)strtoul(optarg, NULL, 0); have_id = true; break;
		case 'm': add_member(&r->m, optarg); break;
		case 'M':
			if (!strcmp(optarg, "suspect"))
				r->suspect_mode = true;
			else if (!strcmp(optarg, "garbage"))
				r->garbage_mode = true;
			else if (strcmp(optarg, "counters"))
				usage();
			break;
		case 'c': r->count = strtoull(optarg, NULL, 0); break;
		case 'h': r->heartbeat_ms = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': r->timeout_ms = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'p': r->period_us = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'a': r->after_ms = (uint32_t)strtoul(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (!have_id || r->m.cfg.nmembers < 2 || r->count == 0)
		usage();
}

int main(int argc, char **argv)
{
	struct sst_options so = { 0 };
	struct run *r = &R;
	int rc;

	member_init(&r->m, "sst_member");
	r->count = 100000;
	r->heartbeat_ms = 100;
	r->timeout_ms = 1000;
	r->period_us = 2000;
	r->after_ms = 3000;
	pthread_mutex_init(&r->lock, NULL);
	parse(argc, argv, r);
	so.heartbeat_ms = r->heartbeat_ms;
	so.suspect_timeout_ms = r->timeout_ms;
	so.on_suspect = on_suspect;
	so.suspect_arg = r;
	member_connect(&r->m, &so);
	{
		char tag[12] = { 0 };

		snprintf(tag, sizeof(tag), "member-%u", r->m.id);
		sst_set_bytes(r->m.t, COL_TAG, tag, sizeof(tag));
	}
	member_start(&r->m);
	printf("CONNECTED member=%u rank=%u members=%u row_size=%zu\n", r->m.id,
	       r->m.me, r->m.cfg.nmembers, sst_layout_row_size(r->m.layout));
	fflush(stdout);
	rc = r->garbage_mode ? run_garbage(r) :
	     r->suspect_mode ? run_suspect(r) : run_counters(r);
	member_close(&r->m);
	return rc;
}
