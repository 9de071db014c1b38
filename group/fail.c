/*
 * fail.c - the group's failure: the first one stands, and every call
 * that needs a working group reports it from then on. Any thread.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "group/group_int.h"

void group_fail(struct group *g, int code, const char *fmt, ...)
{
	char msg[sizeof(g->fail_msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* The first failure stands. Its message is in place before the
	 * flag that publishes it: a thread that sees g->failed reads the
	 * message whole (it never changes after). */
	group_lock(g);
	if (!atomic_load(&g->failed)) {
		memcpy(g->fail_msg, msg, sizeof(msg));
		atomic_store_explicit(&g->failed, code, memory_order_release);
	}
	/* Senders waiting for room learn of it. */
	pthread_cond_broadcast(&g->room);
	group_unlock(g);
}

int group_failed(struct group *g, struct squall_error *err)
{
	int f = atomic_load(&g->failed);

	if (f)
		return squall_error_set(err, f, "member %u: %s", g->my_id,
					g->fail_msg);
	return 0;
}
