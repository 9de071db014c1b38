/*
 * stats.c - the stats file's writer: with group.stats_file set, a thread
 * that writes the member's counters to that file every second, and once
 * more as the group closes (group/stats_file.h has the format).
 *
 * It reads the group as group_stats() does: the counters are atomics, and
 * the view's parts (its members, the SMC core, RDMC, the SST, the node's
 * registration cache) are read under epoch_lock for reading, which the
 * view thread holds for writing while it swaps them; everything of one
 * snapshot is read in one hold of it. The view thread may hold it for
 * seconds (the members of a new view reconnecting), so the periodic
 * writes only try it, for half a period: when it stays taken, the file
 * is written again with the last snapshot's view and transports, the
 * atomics and the clock fresh, and state "changing_view", so that a
 * reader can tell a member in a view change from one that stopped.
 * Above group.c: group.c starts it after the first view and stops it
 * before anything it reads is freed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "group/group_int.h"
#include "group/stats_file.h"

#define STATS_PERIOD_MS 1000u

struct group_stats_writer {
	struct group *g;
	char path[GROUP_CONFIG_PATH_MAX + 16];  /* "%u" replaced */
	uint64_t since;                 /* ms, when it started */
	uint64_t writes_failed;
	pthread_t thread;
	pthread_mutex_t m;
	pthread_cond_t cond;            /* with m: stop, or the next write */
	bool stop;
	struct stats_snapshot last;     /* the last one written */
	char buf[STATS_FILE_MAX];
};

static void alloc_summary(struct alloc *a, struct stats_alloc *out)
{
	struct alloc_class_stats cs;
	void *base;
	size_t len;

	memset(out, 0, sizeof(*out));
	alloc_region(a, &base, &len);
	out->region_bytes = len;
	for (unsigned i = 0; i <= alloc_nclasses(); i++) {
		if (alloc_stats(a, i, &cs))
			continue;
		out->leases += cs.leases;
		out->releases += cs.releases;
		out->leased_bytes += cs.bytes_in_use;
		out->high_water += cs.high_water;
		out->failures += cs.failures;
		out->slabs += cs.slabs;
	}
}

/* Wait at most this long for epoch_lock before writing the last
 * snapshot's view again. */
#define STATS_LOCK_WAIT_MS (STATS_PERIOD_MS / 2)

/* What group_status() says, and the state it makes. */
static void status_of(struct group *g, bool closing, struct stats_snapshot *s)
{
	struct squall_error e;
	int status = group_status(g, &e);

	s->why[0] = '\0';
	if (status)
		snprintf(s->why, sizeof(s->why), "%s", e.msg);
	s->state = closing ? "closed" : status ? "stopped" : "running";
}

/* A snapshot of everything into s, in one hold of epoch_lock; wait for
 * it, or (try) give up after STATS_LOCK_WAIT_MS and return false with s
 * untouched. */
static bool snapshot(struct group_stats_writer *w, bool closing, bool try,
		     struct stats_snapshot *s)
{
	struct group *g = w->g;
	uint64_t until = group_now_ms() + STATS_LOCK_WAIT_MS;

	if (!try)
		group_epoch_rdlock(g);
	else
		while (!group_epoch_tryrdlock(g)) {
			if (group_now_ms() >= until)
				return false;
			nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
		}
	memset(s, 0, sizeof(*s));
	group_stats_in_view(g, &s->g);
	s->epoch = g->vcfg.epoch;
	s->nmembers = g->v.n;
	memcpy(s->members, g->v.ids, sizeof(s->members));
	if (g->v.core && g->v.t) {
		s->has_transports = true;
		smc_core_stats(g->v.core, &s->smc);
		sst_get_stats(g->v.t, &s->sst);
		if (g->v.e) {
			s->has_rdmc = true;
			rdmc_engine_stats(g->v.e, &s->rdmc);
		}
	}
	if (g->v.node) {
		s->has_regcache = true;
		regcache_stats(rdma_sq_regcache(g->v.node), &s->regcache);
	}
	group_epoch_rdunlock(g);
	snprintf(s->group, sizeof(s->group), "%s", g->cfg.name);
	s->member = g->my_id;
	s->pid = (long)getpid();
	alloc_summary(g->a, &s->alloc);
	status_of(g, closing, s);
	return true;
}

/* Write a snapshot: a fresh one, or (try, epoch_lock taken all along)
 * the last one again with the clock, the state and the counters that
 * need no lock brought up to date. */
static int write_once(struct group_stats_writer *w, bool closing, bool try,
		      struct squall_error *err)
{
	struct stats_snapshot *s = &w->last;
	int n, r;

	if (!snapshot(w, closing, try, s)) {
		status_of(w->g, closing, s);
		if (!strcmp(s->state, "running"))
			s->state = "changing_view";
		alloc_summary(w->g->a, &s->alloc);
	}
	s->uptime_ms = group_now_ms() - w->since;
	s->writes_failed = w->writes_failed;
	n = stats_format(s, w->buf, sizeof(w->buf));
	if (n < 0)
		return squall_error_set(err, n, "the counters exceed %u bytes",
					STATS_FILE_MAX);
	r = stats_write_file(w->path, w->buf, (size_t)n, err);
	if (r)
		w->writes_failed++;
	return r;
}

static void *writer_main(void *arg)
{
	struct group_stats_writer *w = arg;
	struct squall_error e;
	struct timespec ts;

	pthread_mutex_lock(&w->m);
	while (!w->stop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += STATS_PERIOD_MS / 1000u;
		while (!w->stop &&
		       pthread_cond_timedwait(&w->cond, &w->m, &ts) != ETIMEDOUT)
			;
		if (w->stop)
			break;
		pthread_mutex_unlock(&w->m);
		/* A failed write is counted in the next one (a full disk
		 * may clear); the member goes on. */
		write_once(w, false, true, &e);
		pthread_mutex_lock(&w->m);
	}
	pthread_mutex_unlock(&w->m);
	return NULL;
}

int group_stats_start(struct group *g, struct squall_error *err)
{
	struct group_stats_writer *w;
	pthread_condattr_t ca;
	struct squall_error e;
	int r;

	if (!g->cfg.stats_file[0])
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return squall_error_set(err, -ENOMEM, "group.stats_file: out of "
					"memory");
	w->g = g;
	w->since = group_now_ms();
	if (stats_path(g->cfg.stats_file, g->my_id, w->path, sizeof(w->path))) {
		free(w);
		return squall_error_set(err, -ENAMETOOLONG, "%s: group.stats_file "
					"%s: path too long", g->cfg.path,
					g->cfg.stats_file);
	}
	/* The first write here, so that a folder that is not there is an
	 * error of the start rather than a file that never appears. */
	r = write_once(w, false, false, &e);
	if (r) {
		free(w);
		return squall_error_set(err, r, "%s: group.stats_file: %s",
					g->cfg.path, e.msg);
	}
	pthread_mutex_init(&w->m, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	r = pthread_create(&w->thread, NULL, writer_main, w);
	if (r) {
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->m);
		free(w);
		return squall_error_set(err, -r, "group.stats_file: cannot start "
					"its thread: %s", strerror(r));
	}
	g->stats = w;
	return 0;
}

void group_stats_stop(struct group *g, bool write_last)
{
	struct group_stats_writer *w = g->stats;
	struct squall_error e;

	if (!w)
		return;
	pthread_mutex_lock(&w->m);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->m);
	pthread_join(w->thread, NULL);
	if (write_last)
		write_once(w, true, false, &e);
	g->stats = NULL;
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->m);
	free(w);
}
