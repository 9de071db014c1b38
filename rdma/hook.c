/*
 * hook.c - test hooks (hook.h): SQUALL_DIE_AT read once, a count per
 * process, SIGKILL at the K-th passage of the named point, after one
 * line on stderr saying where and when (wall clock in ms, the clock the
 * test scripts read).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdma/hook.h"

static const char *const points[] = {
	"trim_published", "trim_adopted", "rdmc_mid", "installing",
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char die_at[32];       /* the point; "" for none */
static unsigned long die_nth; /* at its K-th passage */
static bool die_bad;          /* SQUALL_DIE_AT names no point */

static void parse(void)
{
	const char *v = getenv("SQUALL_DIE_AT");
	const char *colon;
	size_t len;

	if (!v || !*v)
		return;
	colon = strchr(v, ':');
	len = colon ? (size_t)(colon - v) : strlen(v);
	die_nth = colon ? strtoul(colon + 1, NULL, 10) : 1;
	die_bad = len >= sizeof(die_at) || die_nth == 0;
	if (die_bad)
		return;
	memcpy(die_at, v, len);
	die_at[len] = '\0';
	die_bad = true;
	for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++)
		if (!strcmp(die_at, points[i]))
			die_bad = false;
}

int squall_hook_check(struct squall_error *err)
{
	const char *v = getenv("SQUALL_DIE_AT");

	pthread_once(&once, parse);
	if (!v || !*v)
		return 0;
#ifndef SQUALL_TEST_HOOKS
	return squall_error_set(err, -EINVAL, "SQUALL_DIE_AT=%s is set, but "
		"this build of squall has no test hooks (meson setup "
		"-Dtest_hooks=true)", v);
#else
	if (die_bad)
		return squall_error_set(err, -EINVAL, "SQUALL_DIE_AT=%s: not "
			"POINT[:K] with K >= 1 and POINT one of %s", v,
			SQUALL_HOOK_POINTS);
	return 0;
#endif
}

#ifdef SQUALL_TEST_HOOKS
void squall_hook(const char *point)
{
	static atomic_ulong passed;
	struct timespec ts;
	char line[160];
	int n;

	pthread_once(&once, parse);
	if (die_bad || !die_at[0] || strcmp(point, die_at) ||
	    atomic_fetch_add(&passed, 1) + 1 != die_nth)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(line, sizeof(line), "DYING pid=%d wall_ms=%" PRIu64
		     " why=test hook %s:%lu\n", (int)getpid(),
		     (uint64_t)ts.tv_sec * 1000u +
			     (uint64_t)ts.tv_nsec / 1000000u, point, die_nth);
	if (n > 0 && write(2, line, (size_t)n) < 0)
		n = 0;
	raise(SIGKILL);
}
#endif
