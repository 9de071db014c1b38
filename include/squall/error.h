/*
 * error.h - how squall reports failures.
 *
 * Every fallible call returns 0 or a negative errno value. Calls whose
 * failures need more words than an errno (a .cfg line, a peer's address, a
 * verbs call name) also fill a struct squall_error: the same code plus one
 * line of text naming what was wrong. The library prints nothing of its
 * errors: the only lines it writes (stderr) are the warning that a group
 * file names no key (once per process) and, in test-hook builds, the
 * DYING and FAILING lines of a hook.
 */
#ifndef SQUALL_ERROR_H
#define SQUALL_ERROR_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SQUALL_ERRMSG_MAX 512

struct squall_error {
	int code;                     /* negative errno, 0 when no error */
	char msg[SQUALL_ERRMSG_MAX];  /* one line, no trailing newline */
};

/* Record an error (err may be NULL) and return code, so callers can write
 * `return squall_error_set(err, -EINVAL, "...", ...);`. */
static inline int squall_error_set(struct squall_error *err, int code,
				   const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline int squall_error_set(struct squall_error *err, int code,
				   const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->code = code;
	}
	return code;
}

/* Clear an error record before a call. */
static inline void squall_error_clear(struct squall_error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}

#endif /* SQUALL_ERROR_H */
