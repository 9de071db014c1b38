/*
 * squall-stat - print a running member's counters from its stats file.
 *
 *   squall-stat FILE...
 *   squall-stat -w [-n COUNT] FILE...
 *
 * A member whose group file sets group.stats_file writes its counters
 * there every second (group/stats_file.h has the format). This prints
 * them in aligned columns, one column per FILE; with -w (--watch) it
 * reads them again every second and prints each counter that grew with
 * its rate per second. A FILE that is missing, or was not updated for 5
 * seconds while its member said it was running, is said so: the member
 * may have stopped.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "group/stats_file.h"

#define MAX_FILES 64
#define STALE_S 5.0
#define CELL_MAX 96

/* One FILE: its last good read, and the one before (for rates). */
struct source {
	const char *path;
	bool ok;                /* cur holds a read */
	bool have_prev;
	struct stats_parsed cur, prev;
	char note[SQUALL_ERRMSG_MAX + 64]; /* what is wrong, or "" */
	bool stale, missing;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: squall-stat [-w [-n COUNT]] FILE...\n"
		"  print the counters a member writes to its group.stats_file,\n"
		"  one column per FILE\n"
		"  -w, --watch      print them again every second, with rates\n"
		"  -n, --count N    with -w: stop after N prints\n"
		"  -h, --help       this text\n");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Read src->path into src->cur (the last read moves to prev). */
static void load(struct source *src)
{
	static char text[STATS_FILE_MAX + 1];
	struct squall_error err;
	const struct stats_entry *state;
	struct stat st;
	size_t n;
	double age;
	FILE *f;

	src->note[0] = '\0';
	src->stale = src->missing = false;
	f = fopen(src->path, "r");
	if (!f) {
		int e = errno;

		src->missing = e == ENOENT;
		src->ok = src->have_prev = false;
		snprintf(src->note, sizeof(src->note), "%s: %s%s", src->path,
			 strerror(e), e == ENOENT ? " (is the member running, "
			 "with group.stats_file naming this file?)" : "");
		return;
	}
	if (fstat(fileno(f), &st)) {
		st.st_mtim.tv_sec = 0;
		st.st_mtim.tv_nsec = 0;
	}
	n = fread(text, 1, STATS_FILE_MAX + 1, f);
	fclose(f);
	if (n > STATS_FILE_MAX) {
		src->ok = src->have_prev = false;
		snprintf(src->note, sizeof(src->note), "%s: over %u bytes: not "
			 "a squall stats file", src->path, STATS_FILE_MAX);
		return;
	}
	if (src->ok) {
		src->prev = src->cur;
		src->have_prev = true;
	}
	if (stats_parse(text, n, &src->cur, &err)) {
		src->ok = false;
		src->have_prev = false;
		snprintf(src->note, sizeof(src->note), "%s: %s", src->path,
			 err.msg);
		return;
	}
	src->ok = true;
	state = stats_find(&src->cur, "state");
	age = now_s() - ((double)st.st_mtim.tv_sec +
			 (double)st.st_mtim.tv_nsec / 1e9);
	if (state && strcmp(state->value, "closed") == 0)
		snprintf(src->note, sizeof(src->note), "%s: the member closed "
			 "its group: these are its last counters", src->path);
	else if (age > STALE_S) {
		src->stale = true;
		snprintf(src->note, sizeof(src->note), "%s: not updated for "
			 "%.0f s: the member may have stopped", src->path, age);
	}
}

/* The keys of every source, in the order of their first appearance. */
static size_t all_keys(struct source *s, size_t n, const char **keys,
		       size_t max)
{
	size_t nk = 0;

	for (size_t i = 0; i < n; i++) {
		if (!s[i].ok)
			continue;
		for (size_t k = 0; k < s[i].cur.n; k++) {
			const char *key = s[i].cur.e[k].key;
			size_t j;

			if (strcmp(key, "why") == 0 ||
			    strcmp(key, "squall_stats") == 0)
				continue;
			for (j = 0; j < nk && strcmp(keys[j], key); j++)
				;
			if (j == nk && nk < max)
				keys[nk++] = key;
		}
	}
	return nk;
}

static void cell(const struct source *s, const char *key, bool rates,
		 char *out, size_t size)
{
	const struct stats_entry *e = s->ok ? stats_find(&s->cur, key) : NULL;
	double r;

	if (!e) {
		snprintf(out, size, "-");
		return;
	}
	if (rates && s->have_prev && stats_rate(&s->prev, &s->cur, key, &r) &&
	    r > 0)
		snprintf(out, size, "%.60s (+%.0f/s)", e->value, r);
	else
		snprintf(out, size, "%.60s", e->value);
}

static void print_table(struct source *s, size_t n, bool rates)
{
	static const char *keys[STATS_MAX_ENTRIES * 2];
	static char cells[STATS_MAX_ENTRIES * 2][MAX_FILES][CELL_MAX];
	size_t nk = all_keys(s, n, keys, sizeof(keys) / sizeof(keys[0]));
	int kw = 6, w[MAX_FILES];
	char head[MAX_FILES][CELL_MAX];

	for (size_t k = 0; k < nk; k++)
		if ((int)strlen(keys[k]) > kw)
			kw = (int)strlen(keys[k]);
	for (size_t i = 0; i < n; i++) {
		const struct stats_entry *m = s[i].ok ?
			stats_find(&s[i].cur, "member") : NULL;

		if (m)
			snprintf(head[i], sizeof(head[i]), "member %.20s", m->value);
		else
			snprintf(head[i], sizeof(head[i]), "%s",
				 s[i].missing ? "(missing)" : "(unreadable)");
		w[i] = (int)strlen(head[i]);
		for (size_t k = 0; k < nk; k++) {
			cell(&s[i], keys[k], rates, cells[k][i], CELL_MAX);
			if ((int)strlen(cells[k][i]) > w[i])
				w[i] = (int)strlen(cells[k][i]);
		}
	}
	if (nk) {
		printf("%-*s", kw, "");
		for (size_t i = 0; i < n; i++)
			printf("  %*s", w[i], head[i]);
		printf("\n");
	}
	for (size_t k = 0; k < nk; k++) {
		printf("%-*s", kw, keys[k]);
		for (size_t i = 0; i < n; i++)
			printf("  %*s", w[i], cells[k][i]);
		printf("\n");
	}
	for (size_t i = 0; i < n; i++) {
		const struct stats_entry *why = s[i].ok ?
			stats_find(&s[i].cur, "why") : NULL;

		if (why)
			printf("%s: stopped: %s\n", s[i].path, why->value);
		if (s[i].note[0])
			printf("%s\n", s[i].note);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "watch", no_argument, NULL, 'w' },
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct source src[MAX_FILES];
	bool watch = false, tty = isatty(STDOUT_FILENO);
	unsigned long count = 0;
	size_t n;
	int c, rc = 0;
	char *end;

	while ((c = getopt_long(argc, argv, "wn:h", lo, NULL)) != -1) {
		switch (c) {
		case 'w': watch = true; break;
		case 'n':
			count = strtoul(optarg, &end, 10);
			if (*end || !count) {
				fprintf(stderr, "squall-stat: --count wants a "
					"number from 1 (got \"%s\")\n", optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	n = (size_t)(argc - optind);
	if (n == 0 || n > MAX_FILES || (count && !watch)) {
		if (n > MAX_FILES)
			fprintf(stderr, "squall-stat: at most %d files\n",
				MAX_FILES);
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < n; i++)
		src[i].path = argv[optind + (int)i];
	for (unsigned long round = 1;; round++) {
		for (size_t i = 0; i < n; i++)
			load(&src[i]);
		if (watch && tty)
			printf("\033[H\033[J");
		else if (watch && round > 1)
			printf("\n");
		print_table(src, n, watch);
		if (!watch) {
			for (size_t i = 0; i < n; i++)
				if (!src[i].ok)
					rc = 1;
				else if (src[i].stale && rc == 0)
					rc = 3;
			return rc;
		}
		if (count && round >= count)
			return 0;
		sleep(1);
	}
}
