/*
 * test_stats.c - the stats file (group.stats_file): a snapshot's text
 * reads back key for key, the file is replaced whole, the rates between
 * two reads are per second of the member's own clock and only for
 * counters that grow, and squall-stat prints a file, says when one is
 * missing or stale, and which member wrote it.
 *
 * The program comes through SQUALL_STAT (tests/unit/meson.build).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "group/group_int.h"
#include "group/stats_file.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/squall-test-stats.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A snapshot of member 2 of a 3-member view, every part present. */
static void sample(struct stats_snapshot *s, uint64_t uptime, uint64_t delivered)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->group, sizeof(s->group), "local-3");
	s->member = 2;
	s->pid = 4242;
	s->state = "running";
	s->uptime_ms = uptime;
	s->epoch = 1;
	s->nmembers = 3;
	s->members[0] = 0;
	s->members[1] = 2;
	s->members[2] = 5;
	s->g.sent = 10;
	s->g.delivered = delivered;
	s->g.refused = 1;
	s->alloc.region_bytes = 64u << 20;
	s->alloc.leased_bytes = 8192;
	s->alloc.failures = 3;
	s->has_transports = true;
	s->smc.sends = 10;
	s->has_rdmc = true;
	s->rdmc.bytes_sent = 1u << 20;
	s->sst.pushes = 77;
	s->has_regcache = true;
	s->regcache.hits = 5;
	s->regcache.entries = 2;
}

static void parse_ok(const char *text, struct stats_parsed *p)
{
	struct squall_error err;

	assert_int_equal(stats_parse(text, strlen(text), p, &err), 0);
}

static const char *value(const struct stats_parsed *p, const char *key)
{
	const struct stats_entry *e = stats_find(p, key);

	return e ? e->value : NULL;
}

/* Everything written reads back; parts a member lacks are left out. */
static void test_format_parse(void **state)
{
	static char buf[STATS_FILE_MAX];
	static struct stats_snapshot s;
	static struct stats_parsed p;
	int n;

	(void)state;
	sample(&s, 1500, 1234);
	n = stats_format(&s, buf, sizeof(buf));
	assert_true(n > 0 && (size_t)n == strlen(buf));
	assert_memory_equal(buf, "squall_stats=1\n", 15);
	parse_ok(buf, &p);
	assert_string_equal(value(&p, "group"), "local-3");
	assert_string_equal(value(&p, "member"), "2");
	assert_string_equal(value(&p, "state"), "running");
	assert_string_equal(value(&p, "epoch"), "1");
	assert_string_equal(value(&p, "members"), "0,2,5");
	assert_string_equal(value(&p, "group.delivered"), "1234");
	assert_true(stats_find(&p, "group.delivered")->is_num);
	assert_int_equal(stats_find(&p, "group.delivered")->num, 1234);
	assert_string_equal(value(&p, "group.refused"), "1");
	assert_string_equal(value(&p, "alloc.leased_bytes"), "8192");
	assert_string_equal(value(&p, "alloc.failures"), "3");
	assert_string_equal(value(&p, "smc.sends"), "10");
	assert_string_equal(value(&p, "rdmc.bytes_sent"), "1048576");
	assert_string_equal(value(&p, "sst.pushes"), "77");
	assert_string_equal(value(&p, "regcache.hits"), "5");
	assert_null(stats_find(&p, "why"));
	assert_false(stats_find(&p, "members")->is_num);

	/* A view of one (no RDMC), no cache, a stop whose reason has a
	 * newline: the parts are left out, the reason stays one line. */
	s.has_rdmc = false;
	s.has_regcache = false;
	s.state = "stopped";
	snprintf(s.why, sizeof(s.why), "member 2: no majority\nof view 1");
	n = stats_format(&s, buf, sizeof(buf));
	assert_true(n > 0);
	parse_ok(buf, &p);
	assert_null(stats_find(&p, "rdmc.bytes_sent"));
	assert_null(stats_find(&p, "regcache.hits"));
	assert_non_null(stats_find(&p, "smc.sends"));
	assert_string_equal(value(&p, "why"), "member 2: no majority of view 1");
	assert_string_equal(value(&p, "state"), "stopped");

	/* Too small a buffer is said so. */
	assert_int_equal(stats_format(&s, buf, 40), -ENOSPC);
}

static void test_parse_bad(void **state)
{
	static struct stats_parsed p;
	struct squall_error err;
	static const char *const bad[] = {
		"",
		"member=1\n",
		"squall_stats=2\nmember=1\n",
		"squall_stats=1\nmember 1\n",
		"squall_stats=1\nMember=1\n",
		"squall_stats=1\n=1\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(stats_parse(bad[i], strlen(bad[i]), &p, &err),
				 -EINVAL);
	assert_int_equal(stats_parse(bad[3], strlen(bad[3]), &p, &err), -EINVAL);
	assert_string_equal(err.msg, "line 2: not a key=value line");
	/* The last line may lack its newline. */
	parse_ok("squall_stats=1\nmember=7", &p);
	assert_string_equal(value(&p, "member"), "7");
}

static void test_path(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(stats_path("/run/m%u.stats", 12, out, sizeof(out)), 0);
	assert_string_equal(out, "/run/m12.stats");
	assert_int_equal(stats_path("/run/m.stats", 12, out, sizeof(out)), 0);
	assert_string_equal(out, "/run/m.stats");
	assert_int_equal(stats_path("/run/%u", 4294967295u, out, sizeof(out)), 0);
	assert_string_equal(out, "/run/4294967295");
	assert_int_equal(stats_path("/run/%u", 1, out, 6), -ENAMETOOLONG);
}

static void read_back(const char *path, struct stats_parsed *p)
{
	static char text[STATS_FILE_MAX];
	struct squall_error err;
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(text, 1, sizeof(text), f);
	fclose(f);
	assert_int_equal(stats_parse(text, n, p, &err), 0);
}

/* The file is replaced whole: what was there is gone, nothing is left
 * beside it; a folder that is not there is an error naming the file. */
static void test_write_file(void **state)
{
	static char buf[STATS_FILE_MAX];
	static struct stats_snapshot s;
	static struct stats_parsed p;
	struct squall_error err;
	char path[128], tmp[160], bad[160];
	int n;

	(void)state;
	snprintf(path, sizeof(path), "%s/m2.stats", dir);
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
	sample(&s, 1000, 100);
	n = stats_format(&s, buf, sizeof(buf));
	assert_int_equal(stats_write_file(path, buf, (size_t)n, &err), 0);
	sample(&s, 2000, 250);
	n = stats_format(&s, buf, sizeof(buf));
	assert_int_equal(stats_write_file(path, buf, (size_t)n, &err), 0);
	read_back(path, &p);
	assert_string_equal(value(&p, "group.delivered"), "250");
	assert_int_equal(access(tmp, F_OK), -1);
	snprintf(bad, sizeof(bad), "%s/no-such-folder/m.stats", dir);
	assert_int_equal(stats_write_file(bad, buf, (size_t)n, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no-such-folder/m.stats."));
	assert_non_null(strstr(err.msg, "No such file"));
}

/* Rates: per second of the member's uptime, for counters only, not
 * across a restart (another pid) nor, for a view's transports, across a
 * view change. */
static void test_rates(void **state)
{
	static char buf[STATS_FILE_MAX];
	static struct stats_snapshot s;
	static struct stats_parsed a, b;
	double r = -1;

	(void)state;
	sample(&s, 1000, 100);
	stats_format(&s, buf, sizeof(buf));
	parse_ok(buf, &a);
	sample(&s, 3000, 700);
	s.smc.sends = 30;
	s.alloc.leased_bytes = 1u << 20;
	stats_format(&s, buf, sizeof(buf));
	parse_ok(buf, &b);
	assert_true(stats_rate(&a, &b, "group.delivered", &r));
	assert_true(r > 299.9 && r < 300.1);
	assert_true(stats_rate(&a, &b, "smc.sends", &r));
	assert_true(r > 9.9 && r < 10.1);
	assert_true(stats_rate(&a, &b, "group.sent", &r));
	assert_true(r == 0);
	/* Levels and identities have no rate. */
	assert_false(stats_key_grows("alloc.leased_bytes"));
	assert_false(stats_rate(&a, &b, "alloc.leased_bytes", &r));
	assert_false(stats_rate(&a, &b, "member", &r));
	assert_false(stats_rate(&a, &b, "uptime_ms", &r));
	assert_false(stats_rate(&a, &b, "regcache.entries", &r));
	assert_true(stats_key_grows("group.delivered"));
	assert_true(stats_key_grows("regcache.hits"));
	/* Backwards (uptime or value) or no time passed: none. */
	assert_false(stats_rate(&b, &a, "group.delivered", &r));
	assert_false(stats_rate(&a, &a, "group.delivered", &r));
	/* A new view: the group's counters go on, and the registration
	 * cache's (a survivor keeps its cache); the transports' start over. */
	s.epoch = 2;
	s.smc.sends = 40;
	s.regcache.hits = 25;
	stats_format(&s, buf, sizeof(buf));
	parse_ok(buf, &b);
	assert_true(stats_rate(&a, &b, "group.delivered", &r));
	assert_false(stats_rate(&a, &b, "smc.sends", &r));
	assert_true(stats_rate(&a, &b, "regcache.hits", &r));
	assert_true(r > 9.9 && r < 10.1);
	/* Another process. */
	s.epoch = 1;
	s.pid = 4343;
	stats_format(&s, buf, sizeof(buf));
	parse_ok(buf, &b);
	assert_false(stats_rate(&a, &b, "group.delivered", &r));
}

/* Run squall-stat with args; its stdout (and stderr) into out. Returns
 * its exit status. */
static int run_stat(const char *args, char *out, size_t size)
{
	const char *prog = getenv("SQUALL_STAT");
	char cmd[512];
	size_t n;
	FILE *p;
	int st;

	assert_non_null(prog);
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", prog, args);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, size - 1, p);
	out[n] = '\0';
	st = pclose(p);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void write_sample(const char *path, uint32_t member, uint64_t delivered,
			 const char *state_text)
{
	static char buf[STATS_FILE_MAX];
	static struct stats_snapshot s;
	struct squall_error err;
	int n;

	sample(&s, 5000, delivered);
	s.member = member;
	s.state = state_text;
	n = stats_format(&s, buf, sizeof(buf));
	assert_int_equal(stats_write_file(path, buf, (size_t)n, &err), 0);
}

/* The row of key in squall-stat's output, or NULL. */
static const char *row(const char *out, const char *key)
{
	size_t k = strlen(key);

	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, key, k) == 0 && l[k] == ' ')
			return l;
	return NULL;
}

static void test_program(void **state)
{
	static char out[65536];
	char p0[128], p1[128], args[512];
	const char *r;
	struct timeval old[2];

	(void)state;
	snprintf(p0, sizeof(p0), "%s/s.0", dir);
	snprintf(p1, sizeof(p1), "%s/s.1", dir);
	write_sample(p0, 0, 1111, "running");
	write_sample(p1, 1, 2222, "running");

	/* One file: its member heads the column, its counters in rows. */
	assert_int_equal(run_stat(p0, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "member 0"));
	r = row(out, "group.delivered");
	assert_non_null(r);
	assert_non_null(strstr(r, "1111"));
	assert_non_null(row(out, "alloc.leased_bytes"));
	assert_non_null(row(out, "regcache.hits"));

	/* Two files: one column each, values aligned on the right. */
	snprintf(args, sizeof(args), "%s %s", p0, p1);
	assert_int_equal(run_stat(args, out, sizeof(out)), 0);
	r = row(out, "group.delivered");
	assert_non_null(r);
	assert_non_null(strstr(r, "1111"));
	assert_non_null(strstr(r, "2222"));
	assert_true(strchr(r, '\n') - strstr(r, "2222") == 4);
	assert_non_null(strstr(out, "member 1"));
	/* --watch with one print: the same table. */
	snprintf(args, sizeof(args), "-w -n 1 %s", p0);
	assert_int_equal(run_stat(args, out, sizeof(out)), 0);
	assert_non_null(strstr(row(out, "group.delivered"), "1111"));

	/* Missing: said so, and what to check. */
	snprintf(args, sizeof(args), "%s/none.stats", dir);
	assert_int_equal(run_stat(args, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "none.stats: No such file or directory"));
	assert_non_null(strstr(out, "group.stats_file"));

	/* Not updated for 10 s while running: the member may have stopped. */
	gettimeofday(&old[0], NULL);
	old[0].tv_sec -= 10;
	old[1] = old[0];
	assert_int_equal(utimes(p0, old), 0);
	assert_int_equal(run_stat(p0, out, sizeof(out)), 3);
	assert_non_null(strstr(out, "not updated for 10 s: the member may have stopped"));
	assert_non_null(strstr(row(out, "group.delivered"), "1111"));
	/* Closed: old is fine, these are the last counters. */
	write_sample(p0, 0, 1500, "closed");
	assert_int_equal(utimes(p0, old), 0);
	assert_int_equal(run_stat(p0, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "closed its group"));

	/* Not a stats file. */
	{
		FILE *f = fopen(p1, "w");

		assert_non_null(f);
		fputs("hello\n", f);
		fclose(f);
	}
	assert_int_equal(run_stat(p1, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "not a squall stats file"));

	/* The usage. */
	assert_int_equal(run_stat("--help", out, sizeof(out)), 0);
	assert_memory_equal(out, "usage: squall-stat", 18);
	assert_int_equal(run_stat("", out, sizeof(out)), 2);
	assert_int_equal(run_stat("-n 2 x", out, sizeof(out)), 2);
}

/* group_stats() passes the caller's sizeof(struct group_stats): a program
 * built against a shorter struct (an earlier release) gets its fields and
 * nothing is written past them; one built against a longer struct (a later
 * release) gets zeroes where this library has no field. */
static void test_stats_sized(void **state)
{
	struct group_stats src;
	unsigned char dst[sizeof(struct group_stats) + 64];
	size_t shorter = offsetof(struct group_stats, smc_writes);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(src); i++)
		((unsigned char *)&src)[i] = (unsigned char)(i * 7 + 1);
	memset(dst, 0xee, sizeof(dst));
	group_stats_copy_out((struct group_stats *)(void *)dst, shorter, &src);
	assert_memory_equal(dst, &src, shorter);
	for (i = shorter; i < sizeof(dst); i++)
		assert_int_equal(dst[i], 0xee);
	memset(dst, 0xee, sizeof(dst));
	group_stats_copy_out((struct group_stats *)(void *)dst, sizeof(src) + 32,
			     &src);
	assert_memory_equal(dst, &src, sizeof(src));
	for (i = sizeof(src); i < sizeof(src) + 32; i++)
		assert_int_equal(dst[i], 0);
	for (; i < sizeof(dst); i++)
		assert_int_equal(dst[i], 0xee);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_parse),
		cmocka_unit_test(test_stats_sized),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_path),
		cmocka_unit_test(test_write_file),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_program),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
