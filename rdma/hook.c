/*
 * hook.c - test hooks (hook.h): SQUALL_DIE_AT and SQUALL_FAIL_AT read
 * once, a count per point, and at the K-th passage SIGKILL (after one
 * line on stderr saying where and when: wall clock in ms, the clock the
 * test scripts read) or one failed step.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdma/hook.h"

struct hook {
	const char *env;
	const char *const *points;
	const char *names;     /* the points, for messages */
	char at[32];           /* the point named; "" for none */
	unsigned long nth;     /* at its nth passage */
	bool bad;              /* the variable names no point */
	atomic_ulong passed;
};

static const char *const die_points[] = {
	"trim_published", "trim_adopted", "rdmc_mid", "rdmc_refused",
	"installing", "p2p_read_mid", NULL,
};
static const char *const fail_points[] = {
	"rdmc_lease", "p2p_garbage", "p2p_old_key", "stray_sst", "stray_ring",
	"stray_rdmc", "teardown_late", "resend_stop", "rings_lease",
	"stop_adopted", NULL,
};

static struct hook hooks[] = {
	{ .env = "SQUALL_DIE_AT", .points = die_points,
	  .names = SQUALL_HOOK_DIE_POINTS },
	{ .env = "SQUALL_FAIL_AT", .points = fail_points,
	  .names = SQUALL_HOOK_FAIL_POINTS },
};
#define NHOOKS (sizeof(hooks) / sizeof(hooks[0]))

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void parse_one(struct hook *h)
{
	const char *v = getenv(h->env);
	const char *colon;
	size_t len;

	if (!v || !*v)
		return;
	colon = strchr(v, ':');
	len = colon ? (size_t)(colon - v) : strlen(v);
	h->nth = colon ? strtoul(colon + 1, NULL, 10) : 1;
	h->bad = true;
	if (len >= sizeof(h->at) || h->nth == 0)
		return;
	memcpy(h->at, v, len);
	h->at[len] = '\0';
	for (const char *const *p = h->points; *p; p++)
		if (!strcmp(h->at, *p))
			h->bad = false;
}

static void parse(void)
{
	for (size_t i = 0; i < NHOOKS; i++)
		parse_one(&hooks[i]);
}

int squall_hook_check(struct squall_error *err)
{
	pthread_once(&once, parse);
	for (size_t i = 0; i < NHOOKS; i++) {
		const char *v = getenv(hooks[i].env);

		if (!v || !*v)
			continue;
#ifndef SQUALL_TEST_HOOKS
		return squall_error_set(err, -EINVAL, "%s=%s is set, but this "
			"build of squall has no test hooks (meson setup "
			"-Dtest_hooks=true)", hooks[i].env, v);
#else
		if (hooks[i].bad)
			return squall_error_set(err, -EINVAL, "%s=%s: not "
				"POINT[:K] with K >= 1 and POINT one of %s",
				hooks[i].env, v, hooks[i].names);
#endif
	}
	return 0;
}

#ifdef SQUALL_TEST_HOOKS
/* Whether this passage of point is the one h names. */
static bool due(struct hook *h, const char *point)
{
	pthread_once(&once, parse);
	return !h->bad && h->at[0] && !strcmp(point, h->at) &&
	       atomic_fetch_add(&h->passed, 1) + 1 == h->nth;
}

/* The line a hook prints on stderr when it acts: what, when, where. */
static void say(const char *what, const char *point, unsigned long nth)
{
	struct timespec ts;
	char line[160];
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(line, sizeof(line), "%s pid=%d wall_ms=%" PRIu64
		     " why=test hook %s:%lu\n", what, (int)getpid(),
		     (uint64_t)ts.tv_sec * 1000u +
			     (uint64_t)ts.tv_nsec / 1000000u, point, nth);
	if (n > 0 && write(2, line, (size_t)n) < 0)
		n = 0;
}

void squall_hook(const char *point)
{
	if (!due(&hooks[0], point))
		return;
	say("DYING", point, hooks[0].nth);
	raise(SIGKILL);
}

bool squall_hook_fail(const char *point)
{
	if (!due(&hooks[1], point))
		return false;
	say("FAILING", point, hooks[1].nth);
	return true;
}
#endif
