/*
 * tests/vsync/vs_check.c - judge the event logs of a run (log.h) for
 * virtual synchrony (check.h).
 *
 *   vs_check [--crashed ID]... LOG...
 *
 * --crashed names a member the harness killed (its log rarely says so).
 * Prints each note ("note: ...") and violation, then one line
 *   VSCHECK members=N views=V deliveries=D violations=K
 * and exits 0 if K is 0, 1 if not, 2 on a usage or parse error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "log.h"

/* Lines printed; violations beyond are counted, not shown. */
#define MAX_LINES 1000

static int usage(void)
{
	fprintf(stderr, "usage: vs_check [--crashed ID]... LOG...\n");
	return 2;
}

static bool parse_id(const char *s, uint32_t *id)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v >= VS_MAX_MEMBERS)
		return false;
	*id = (uint32_t)v;
	return true;
}

int main(int argc, char **argv)
{
	uint64_t crashed = 0;
	struct vs_history h;
	struct vs_report r;
	struct squall_error err;
	int i, nfiles = 0, rc = 0;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		uint32_t id;

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "--crashed")) {
			if (++i == argc)
				return usage();
			v = argv[i];
		} else if (!strncmp(a, "--crashed=", 10)) {
			v = a + 10;
		} else if (a[0] == '-' && a[1]) {
			return usage();
		} else {
			break;
		}
		if (!parse_id(v, &id)) {
			fprintf(stderr,
				"vs_check: --crashed %s: not a member id "
				"(0..63)\n",
				v);
			return 2;
		}
		crashed |= 1ULL << id;
	}
	if (i == argc)
		return usage();

	vs_history_init(&h);
	for (; i < argc; i++, nfiles++) {
		squall_error_clear(&err);
		if (vs_parse_file(&h, argv[i], &err)) {
			fprintf(stderr, "vs_check: %s\n", err.msg);
			vs_history_free(&h);
			return 2;
		}
	}
	for (uint32_t m = 0; m < VS_MAX_MEMBERS; m++)
		if ((crashed >> m & 1) && vs_mark_crashed(&h, m))
			rc = -ENOMEM;

	vs_report_init(&r, MAX_LINES);
	int k = rc ? rc : vs_check(&h, &r);

	if (k < 0) {
		fprintf(stderr, "vs_check: %s\n", strerror(-k));
		vs_report_free(&r);
		vs_history_free(&h);
		return 2;
	}
	for (size_t j = 0; j < r.nnotes; j++)
		printf("note: %s\n", r.notes[j]);
	for (size_t j = 0; j < r.nlines; j++)
		printf("%s\n", r.lines[j]);
	if (r.violations > r.nlines)
		printf("... and %zu more violations\n",
		       r.violations - r.nlines);
	printf("VSCHECK members=%zu views=%zu deliveries=%zu violations=%zu\n",
	       r.members, r.views, r.deliveries, r.violations);
	rc = r.violations ? 1 : 0;
	vs_report_free(&r);
	vs_history_free(&h);
	return rc;
}
