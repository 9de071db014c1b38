/*
 * test_config.c - the group .cfg loader: the shipped files load with the
 * values they say, every kind of broken input is refused with the exact
 * message a user would see (file:line: setting: text), node files and
 * --set override as documented, and a member finds its own id.
 *
 * Broken inputs are variants of one small valid file (BASE), made by
 * replacing one piece of text, written to a private temporary folder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <inttypes.h>

#include <squall/config.h>

#include <squall/alloc.h>

#include "group/config_parse.h"
#include "group/layout.h"

static char dir[64];
static char gpath[128];  /* DIR/g.cfg, the group file of a case */
static char npath[128];  /* DIR/n.cfg, the node file of a case */

/* Line numbers below refer to this text. */
static const char BASE[] =
	"group = {\n"                                             /* 1 */
	"  name = \"t\";\n"                                       /* 2 */
	"  region_size = \"64M\";\n"                              /* 3 */
	"};\n"                                                    /* 4 */
	"smc = { max_payload = 8192; window = 16; };\n"           /* 5 */
	"rdmc = { block_size = \"1M\"; };\n"                      /* 6 */
	"members = (\n"                                           /* 7 */
	"  { id = 0; address = \"10.0.0.1\"; port = 7400; },\n"   /* 8 */
	"  { id = 1; address = \"10.0.0.2\"; port = 7400; }\n"    /* 9 */
	");\n";                                                   /* 10 */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* BASE with the first `from` replaced by `to` (which must be there). */
static char *variant(const char *from, const char *to)
{
	const char *at = strstr(BASE, from);
	size_t n = strlen(BASE) - strlen(from) + strlen(to) + 1;
	char *s = malloc(n);

	assert_non_null(at);
	assert_non_null(s);
	snprintf(s, n, "%.*s%s%s", (int)(at - BASE), BASE, to, at + strlen(from));
	return s;
}

/* The expected message, with every %s standing for the group file path. */
static void expect_msg(const struct squall_error *err, const char *fmt)
{
	char want[SQUALL_ERRMSG_MAX];

	snprintf(want, sizeof(want), fmt, gpath, gpath, gpath);
	assert_string_equal(err->msg, want);
}

/* Load `text` as the group file; expect failure -EINVAL with `fmt`. */
static void expect_bad_text(const char *text, const char *fmt)
{
	struct group_config cfg;
	struct squall_error err;

	memset(&cfg, 0x5a, sizeof(cfg));
	write_file(gpath, text);
	assert_int_equal(group_config_load(gpath, &cfg, &err), -EINVAL);
	assert_int_equal(err.code, -EINVAL);
	expect_msg(&err, fmt);
	/* out is untouched on failure */
	assert_int_equal(((unsigned char *)&cfg)[0], 0x5a);
}

static void expect_bad(const char *from, const char *to, const char *fmt)
{
	char *text = variant(from, to);

	expect_bad_text(text, fmt);
	free(text);
}

/* The config's check and the group plan the region with the same
 * functions (group/layout.c): a region the config accepts holds what the
 * group lays out, and the smallest one it accepts is exactly the plan.
 * With 3 members, smc.window 1024 and smc.max_payload 8192 the check once
 * accepted 26,411,008 bytes while the group needs about 28.4 MB. */
/* One shape: one page short of the plan is refused naming the size; the
 * plan itself is accepted and holds the group's areas, every member's
 * ring and RDMC's control buffers in an allocator of that size. */
static void check_fit(uint32_t n, uint32_t window, uint32_t payload)
{
	struct group_region_plan p;
	struct squall_error err;
	struct group_config cfg;
	char text[8192], sets[3][64];
	const char *setv[3] = { sets[0], sets[1], sets[2] };
	size_t at;
	struct alloc *a;
	struct alloc_params ap = { 0 };
	struct buf_desc d[3], rings;
	size_t rsz;

	assert_int_equal(group_region_plan(n, window, payload, &p, &err), 0);
	at = (size_t)snprintf(text, sizeof(text),
		"group = { name = \"t\"; region_size = \"64M\"; };\n"
		"smc = { max_payload = 8192; window = 16; };\n"
		"rdmc = { block_size = \"64K\"; };\n"
		"members = (\n");
	for (uint32_t i = 0; i < n; i++)
		at += (size_t)snprintf(text + at, sizeof(text) - at,
			"  { id = %u; address = \"10.0.%u.%u\"; port = 7400; }%s\n",
			i, i / 200, i % 200 + 1, i + 1 < n ? "," : "");
	snprintf(text + at, sizeof(text) - at, ");\n");
	write_file(gpath, text);
	snprintf(sets[0], sizeof(sets[0]), "smc.window=%u", window);
	snprintf(sets[1], sizeof(sets[1]), "smc.max_payload=%u", payload);
	snprintf(sets[2], sizeof(sets[2]), "group.region_size=%" PRIu64,
		 p.total - ALLOC_PAGE_SIZE);
	assert_int_equal(group_config_load_with(gpath, NULL, setv, 3, &cfg, &err),
			 -EINVAL);
	if (!strstr(err.msg, "has no room for what the group lays out"))
		fail_msg("%s", err.msg);
	snprintf(sets[2], sizeof(sets[2]), "group.region_size=%" PRIu64, p.total);
	if (group_config_load_with(gpath, NULL, setv, 3, &cfg, &err))
		fail_msg("%u members, window %u, payload %u: %s", n, window,
			 payload, err.msg);
	ap.region_size = p.total;
	assert_int_equal(alloc_create(&ap, &a, &err), 0);
	assert_int_equal(alloc_reserve(a, p.sst, ALLOC_PAGE_SIZE, &d[0]), 0);
	assert_int_equal(alloc_reserve(a, p.smc_hdr, ALLOC_PAGE_SIZE, &d[1]), 0);
	assert_int_equal(alloc_reserve(a, p.recv, ALLOC_PAGE_SIZE, &d[2]), 0);
	rsz = (size_t)n * p.ring_cap;
	assert_int_equal(alloc_lease(a, 1, &rsz, &rings), 0);
	for (uint32_t i = 0; i < 64; i++) {
		struct buf_desc ctl;
		size_t csz = 128 * 32;

		assert_int_equal(alloc_lease(a, 1, &csz, &ctl), 0);
	}
	alloc_destroy(a);
}

static void test_region_fits(void **state)
{
	static const uint32_t ns[] = { 1, 2, 3, 4, 7, 16, 64 };
	static const uint32_t windows[] = { 2, 64, 1024, 8192 };
	static const uint32_t payloads[] = { 64, 1000, 8192, 65536 };
	unsigned tried = 0;

	(void)state;
	check_fit(3, 1024, 8192);
	/* A sweep, of the shapes whose region stays under 96M here. */
	for (size_t a = 0; a < sizeof(ns) / sizeof(ns[0]); a++)
		for (size_t b = 0; b < sizeof(windows) / sizeof(windows[0]); b++)
			for (size_t c = 0; c < sizeof(payloads) / sizeof(payloads[0]); c++) {
				struct group_region_plan p;
				struct squall_error err;

				assert_int_equal(group_region_plan(ns[a], windows[b],
						payloads[c], &p, &err), 0);
				if (p.total > (UINT64_C(96) << 20))
					continue;
				check_fit(ns[a], windows[b], payloads[c]);
				tried++;
			}
	assert_true(tried >= 60);
	/* The case the issue measured, by its numbers. */
	{
		struct group_region_plan p;
		struct squall_error err;

		assert_int_equal(group_region_plan(3, 1024, 8192, &p, &err), 0);
		assert_true(p.total > 26411008);
	}
}

/* What libconfig calls a bare "syntax error", often lines later, said
 * where it is and what to do (group/config_scan.c). */
static void test_syntax_hints(void **state)
{
	(void)state;
	/* an unterminated string on line 3, reported by libconfig at 6 */
	expect_bad("\"64M\";", "\"64M;",
		   "%s:3: a string starts here and does not end on this line: a closing '\"' is missing (libconfig: syntax error at line 6)");
	/* a missing comma between two members */
	expect_bad("port = 7400; },", "port = 7400; }",
		   "%s:9: a ',' is missing between this element of the list and the one before it (line 8) (libconfig: syntax error at line 9)");
	/* ';' between two members */
	expect_bad("port = 7400; },", "port = 7400; };",
		   "%s:8: ';' inside the list that starts at line 7: separate a list's elements with ',' (libconfig: syntax error at line 8)");
	/* a setting twice in a group names the setting and both lines */
	expect_bad("  name = \"t\";\n", "  name = \"t\";\n  name = \"u\";\n",
		   "%s:3: name: set twice in the same group (first at line 2)");
	/* adjacent strings are one string (libconfig joins them): a later
	 * error is not blamed on them */
	expect_bad("  name = \"t\";\n", "  name = \"t\" \"u\";\n  x = [ \"a\" \"b\", \"c\" ;\n",
		   "%s:3: ';' inside the list that starts at line 3: separate a list's elements with ',' (libconfig: syntax error at line 3)");
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/squall-test-config-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(gpath, sizeof(gpath), "%s/g.cfg", dir);
	snprintf(npath, sizeof(npath), "%s/n.cfg", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(gpath);
	unlink(npath);
	return rmdir(dir);
}

static void load_conf(const char *name, struct group_config *cfg)
{
	char path[512];
	struct squall_error err;
	int rc;

	snprintf(path, sizeof(path), "%s/conf/%s", SQUALL_SRCDIR, name);
	rc = group_config_load(path, cfg, &err);
	if (rc)
		fail_msg("%s: %s", name, err.msg);
	assert_string_equal(cfg->path, path);
}

static void test_local_files(void **state)
{
	static const char *const files[] = { "local-3.cfg", "local-4.cfg",
					     "local-5.cfg" };
	(void)state;

	for (unsigned f = 0; f < 3; f++) {
		struct group_config cfg;
		char name[32];
		unsigned n = f + 3;

		load_conf(files[f], &cfg);
		snprintf(name, sizeof(name), "local-%u", n);
		assert_string_equal(cfg.name, name);
		assert_string_equal(cfg.device, "rxe0");
		assert_int_equal(cfg.region_size, 256u << 20);
		assert_false(cfg.huge_pages);
		assert_int_equal(cfg.connect_timeout_ms, 30000);
		assert_int_equal(cfg.view_timeout_ms, 10000);
		assert_int_equal(cfg.copy_threshold, 65536);
		assert_int_equal(cfg.smc_max_payload, 8192);
		assert_int_equal(cfg.smc_window, 1024);
		assert_int_equal(cfg.rdmc_block_size, 1u << 20);
		assert_int_equal(cfg.sst_heartbeat_ms, 100);
		assert_int_equal(cfg.sst_suspect_timeout_ms, 2000);
		assert_string_equal(cfg.node_path, "");
		assert_int_equal(cfg.nmembers, n);
		for (unsigned i = 0; i < n; i++) {
			char addr[32];

			snprintf(addr, sizeof(addr), "10.77.0.%u", i + 1);
			assert_int_equal(cfg.members[i].id, i);
			assert_string_equal(cfg.members[i].address, addr);
			assert_int_equal(cfg.members[i].port, 7400);
			assert_int_equal(group_config_member_index(&cfg, i), i);
		}
		assert_int_equal(group_config_member_index(&cfg, n), -ENOENT);
	}
}

static void test_cluster_example(void **state)
{
	struct group_config cfg;

	(void)state;
	load_conf("cluster.cfg.example", &cfg);
	assert_true(cfg.nmembers >= 2);
	assert_string_equal(cfg.device, "");
}

/* Optional settings take their documented defaults; sizes may be plain
 * integers; addresses are kept in canonical form. */
static void test_defaults(void **state)
{
	struct group_config cfg;
	struct squall_error err;
	char *text = variant("\"64M\"", "67108864");

	(void)state;
	write_file(gpath, text);
	free(text);
	assert_int_equal(group_config_load(gpath, &cfg, &err), 0);
	assert_int_equal(err.code, 0);
	assert_string_equal(cfg.name, "t");
	assert_string_equal(cfg.device, "");
	assert_int_equal(cfg.region_size, 64u << 20);
	assert_false(cfg.huge_pages);
	assert_int_equal(cfg.connect_timeout_ms, 30000);
	assert_int_equal(cfg.copy_threshold, 65536);
	assert_int_equal(cfg.sst_heartbeat_ms, 100);
	assert_int_equal(cfg.sst_suspect_timeout_ms, 2000);
	assert_int_equal(cfg.nmembers, 2);
	assert_int_equal(cfg.members[1].id, 1);
	assert_string_equal(cfg.members[1].address, "10.0.0.2");
}

static void test_bad_syntax(void **state)
{
	(void)state;
	expect_bad("window = 16;", "window = ;",
		   "%s:5: syntax error");
	expect_bad("name = \"t\";", "name = \"t\";\n  name = \"u\";",
		   "%s:3: name: set twice in the same group (first at line 2)");
	expect_bad("rdmc = {", "@include \"other.cfg\"\nrdmc = {",
		   "%s:6: @include is not supported: a group file must be self-contained");
	expect_bad("\"64M\"", "5000000000",
		   "%s:3: group.region_size: 5000000000 does not fit in 32 bits and libconfig would truncate it: write 5000000000L (or, for a size, a string like \"64G\")");
	expect_bad("port = 7400; }\n", "port = 0x100001CF0; }\n",
		   "%s:9: members[1].port: 0x100001CF0 does not fit in 32 bits and libconfig would truncate it: write 0x100001CF0L (or, for a size, a string like \"64G\")");
}

static void test_bad_missing(void **state)
{
	(void)state;
	expect_bad("  name = \"t\";\n", "",
		   "%s:1: group.name: missing required setting");
	expect_bad("  region_size = \"64M\";\n", "",
		   "%s:1: group.region_size: missing required setting");
	expect_bad("smc = { max_payload = 8192; window = 16; };\n", "",
		   "%s: smc.max_payload: missing required setting");
	expect_bad("window = 16; ", "",
		   "%s:5: smc.window: missing required setting");
	expect_bad("rdmc = { block_size = \"1M\"; };", "rdmc = { };",
		   "%s:6: rdmc.block_size: missing required setting");
	expect_bad_text("group = { name = \"t\"; region_size = \"64M\"; };\n"
			"smc = { max_payload = 8192; window = 16; };\n"
			"rdmc = { block_size = \"1M\"; };\n",
			"%s: members: missing required setting (a list of { id = ...; address = ...; port = ...; })");
	expect_bad(" port = 7400; },", " },",
		   "%s:8: members[0].port: missing required setting");
}

static void test_bad_unknown(void **state)
{
	(void)state;
	expect_bad("group = {", "grup = {",
		   "%s:1: grup: unknown setting (known sections: group, smc, rdmc, sst, members)");
	expect_bad("window = 16", "windw = 16",
		   "%s:5: smc.windw: unknown setting (known in smc: max_payload, window)");
	expect_bad("  region_size", "  huge_page = true;\n  region_size",
		   "%s:3: group.huge_page: unknown setting (known in group: name, device, region_size, huge_pages, connect_timeout_ms, view_timeout_ms, copy_threshold, key_file, stats_file, peer_access)");
	expect_bad("id = 1; address", "id = 1; adress = \"x\"; address",
		   "%s:9: members[1].adress: unknown setting (known in a member: id, address, port, joins)");
	expect_bad("members = (", "verbose = true;\nmembers = (",
		   "%s:7: verbose: unknown setting (known sections: group, smc, rdmc, sst, members)");
}

static void test_bad_types(void **state)
{
	(void)state;
	expect_bad("name = \"t\"", "name = 5",
		   "%s:2: group.name: must be a string (got an integer)");
	expect_bad("window = 16", "window = \"16\"",
		   "%s:5: smc.window: must be an integer (got a string)");
	expect_bad("\"64M\"", "64.0",
		   "%s:3: group.region_size: must be a size: a number of bytes, or a string like \"256M\" (suffix K, M or G) (got a float)");
	expect_bad("  name", "  huge_pages = 1;\n  name",
		   "%s:2: group.huge_pages: must be true or false (got an integer)");
	expect_bad("rdmc = { block_size = \"1M\"; };", "rdmc = 1;",
		   "%s:6: rdmc: must be a group { ... } (got an integer)");
	expect_bad("members = (", "members = {\n  m = 1;\n};\nx = (",
		   "%s:7: members: must be a list ( { id = ...; address = ...; port = ...; }, ... ) (got a group)");
	expect_bad("  { id = 1;", "  5,\n  { id = 1;",
		   "%s:9: members[1]: must be a group { id = ...; address = ...; port = ...; } (got an integer)");
	expect_bad("port = 7400; }\n", "port = \"7400\"; }\n",
		   "%s:9: members[1].port: must be an integer (got a string)");
	expect_bad("name = \"t\"", "name = \"my group\"",
		   "%s:2: group.name: must be 1 to 63 characters from A-Z a-z 0-9 . _ - (got \"my group\")");
}

static void test_bad_members(void **state)
{
	char *text, *p;
	size_t n = 0, cap = 8192;

	(void)state;
	expect_bad("id = 1;", "id = 0;",
		   "%s:9: members[1].id: duplicate id 0 (also members[0] at line 8)");
	expect_bad("10.0.0.2", "10.0.0.1",
		   "%s:9: members[1]: duplicate address:port 10.0.0.1:7400 (also members[0] at line 8)");
	expect_bad("port = 7400; }\n", "port = 70000; }\n",
		   "%s:9: members[1].port: must be an integer between 1 and 65535 (got 70000)");
	expect_bad("port = 7400; }\n", "port = 0; }\n",
		   "%s:9: members[1].port: must be an integer between 1 and 65535 (got 0)");
	expect_bad("id = 1;", "id = -1;",
		   "%s:9: members[1].id: must be an integer between 0 and 4294967295 (got -1)");
	expect_bad("10.0.0.2", "10.0.0",
		   "%s:9: members[1].address: must be an IPv4 address like \"10.0.0.1\" (got \"10.0.0\")");
	expect_bad("10.0.0.2", "node2.example.com",
		   "%s:9: members[1].address: must be an IPv4 address like \"10.0.0.1\" (got \"node2.example.com\")");
	expect_bad("10.0.0.2", "224.0.0.1",
		   "%s:9: members[1].address: must be a unicast IPv4 address (got \"224.0.0.1\")");
	expect_bad("members = (\n"
		   "  { id = 0; address = \"10.0.0.1\"; port = 7400; },\n"
		   "  { id = 1; address = \"10.0.0.2\"; port = 7400; }\n", "members = (\n",
		   "%s:7: members: must list between 1 and 64 members (got 0)");

	/* 65 members */
	text = malloc(cap);
	assert_non_null(text);
	p = strstr(BASE, "members = (");
	n = (size_t)snprintf(text, cap, "%.*smembers = (\n", (int)(p - BASE), BASE);
	for (int i = 0; i < 65; i++)
		n += (size_t)snprintf(text + n, cap - n,
				      "  { id = %d; address = \"10.0.1.%d\"; port = 7400; }%s\n",
				      i, i + 1, i < 64 ? "," : "");
	snprintf(text + n, cap - n, ");\n");
	expect_bad_text(text, "%s:7: members: must list between 1 and 64 members (got 65)");
	free(text);
}

static void test_bad_sizes(void **state)
{
	(void)state;
	expect_bad("window = 16", "window = 3",
		   "%s:5: smc.window: must be a power of two between 2 and 65536 (got 3)");
	expect_bad("max_payload = 8192", "max_payload = 100",
		   "%s:5: smc.max_payload: must be a multiple of 8 between 64 and 1M (got 100)");
	expect_bad("max_payload = 8192", "max_payload = \"2M\"",
		   "%s:5: smc.max_payload: must be a multiple of 8 between 64 and 1M (got 2M)");
	expect_bad("\"1M\"", "3000",
		   "%s:6: rdmc.block_size: must be a power of two between 64 and 1G (got 3000)");
	expect_bad("\"64M\"", "\"100G\"",
		   "%s:3: group.region_size: must be a multiple of 4K between 1M and 64G (got 100G)");
	expect_bad("\"64M\"", "\"12X\"",
		   "%s:3: group.region_size: must be a size: a number of bytes, or a string like \"256M\" (suffix K, M or G) (got \"12X\")");
	expect_bad("\"64M\"", "\"64 M\"",
		   "%s:3: group.region_size: must be a size: a number of bytes, or a string like \"256M\" (suffix K, M or G) (got \"64 M\")");
	expect_bad("\"64M\"", "\"64m\"",
		   "%s:3: group.region_size: must be a size: a number of bytes, or a string like \"256M\" (suffix K, M or G) (got \"64m\")");
	expect_bad("\"64M\"", "\"99999999999999999999G\"",
		   "%s:3: group.region_size: must be a multiple of 4K between 1M and 64G (got 99999999999999999999G)");
	expect_bad("\"64M\"", "68719480832L",
		   "%s:3: group.region_size: must be a multiple of 4K between 1M and 64G (got 67108868K)");
	expect_bad("\"64M\"", "1234567890123456789012345678901234567890",
		   "%s:3: group.region_size: 1234567890123456789012345678901234567890 does not fit in 32 bits and libconfig would truncate it: write 1234567890123456789012345678901234567890L (or, for a size, a string like \"64G\")");
	expect_bad("\"64M\"", "\"-64M\"",
		   "%s:3: group.region_size: must be a size: a number of bytes, or a string like \"256M\" (suffix K, M or G) (got \"-64M\")");
	/* 2 rings of 4097 slots of 8208 bytes, 2 x 256 receive buffers of
	 * 4K, the SST and the SMC headers, and 1M: more than 64M */
	expect_bad("window = 16", "window = 4096",
		   "%s:3: group.region_size: group.region_size 64M has no room for what the group lays out for 2 members: 70516736 bytes (SMC rings 67260416 for smc.window 4096 x smc.max_payload 8192, receive buffers 2097152, SST 12288, SMC headers 98304, and 1M for RDMC and the first leases)");
	expect_bad("\"1M\"", "\"64M\"",
		   "%s:6: rdmc.block_size: rdmc.block_size 64M must be at most half of group.region_size 64M");
	expect_bad("\"64M\"", "\"63M\";\n  huge_pages = true",
		   "%s:3: group.region_size: group.region_size 63M must be a multiple of 2M when group.huge_pages is true");
	expect_bad("  region_size", "  copy_threshold = \"1G\";\n  region_size",
		   "%s:3: group.copy_threshold: must be a size between 0 and 64M (got 1G)");
	expect_bad("members = (", "sst = { heartbeat_ms = 500; suspect_timeout_ms = 500; };\nmembers = (",
		   "%s:7: sst.suspect_timeout_ms: sst.suspect_timeout_ms 500 must be greater than sst.heartbeat_ms 500");
	/* the default timeout (2000) is not the culprit: the heartbeat is */
	expect_bad("members = (", "sst = { heartbeat_ms = 5000; };\nmembers = (",
		   "%s:7: sst.heartbeat_ms: sst.suspect_timeout_ms 2000 must be greater than sst.heartbeat_ms 5000");
	expect_bad("  name", "  connect_timeout_ms = 0;\n  name",
		   "%s:2: group.connect_timeout_ms: must be an integer between 1 and 3600000 (got 0)");
	expect_bad("  name", "  view_timeout_ms = -5;\n  name",
		   "%s:2: group.view_timeout_ms: must be an integer between 1 and 3600000 (got -5)");
}

static void test_bad_file(void **state)
{
	struct group_config cfg;
	struct squall_error err;
	char path[200];

	(void)state;
	snprintf(path, sizeof(path), "%s/absent.cfg", dir);
	assert_int_equal(group_config_load(path, &cfg, &err), -ENOENT);
	snprintf(path + strlen(path), sizeof(path) - strlen(path),
		 ": cannot open: No such file or directory");
	assert_string_equal(err.msg, path);

	assert_int_equal(group_config_load(dir, &cfg, &err), -EISDIR);
	snprintf(path, sizeof(path), "%s: cannot read: Is a directory", dir);
	assert_string_equal(err.msg, path);

	/* a path that does not fit in cfg.path */
	{
		char longp[GROUP_CONFIG_PATH_MAX + 8];

		memset(longp, 'a', sizeof(longp) - 1);
		longp[sizeof(longp) - 1] = '\0';
		assert_int_equal(group_config_load(longp, &cfg, &err),
				 -ENAMETOOLONG);
	}
	assert_int_equal(group_config_load("", &cfg, &err), -EINVAL);
	assert_string_equal(err.msg, "no group file given");
	assert_int_equal(group_config_load_with(gpath, NULL, NULL, 1, &cfg, &err),
			 -EINVAL);
	assert_string_equal(err.msg, "--set: 1 settings but no list");

	/* a NUL byte inside the text */
	assert_int_equal(group_config_parse_text("mem.cfg", "a = 1;\n\0b", 9,
						 &cfg, &err), -EINVAL);
	assert_string_equal(err.msg, "mem.cfg:2: contains a NUL byte");
}

/* The in-memory entry point gives the same results as a file. */
static void test_parse_text(void **state)
{
	struct group_config a, b;
	struct squall_error err;

	(void)state;
	write_file(gpath, BASE);
	assert_int_equal(group_config_load(gpath, &a, &err), 0);
	assert_int_equal(group_config_parse_text(gpath, BASE, strlen(BASE), &b,
						 &err), 0);
	assert_memory_equal(&a, &b, sizeof(a));
}

static int load_with(const char *node, const char *const *sets, size_t nsets,
		     struct group_config *cfg, struct squall_error *err)
{
	write_file(gpath, BASE);
	if (node)
		write_file(npath, node);
	return group_config_load_with(gpath, node ? npath : NULL, sets, nsets,
				      cfg, err);
}

static void test_node_override(void **state)
{
	static const char node[] =
		"# this host's NIC\n"
		"group = { device = \"mlx5_0\"; huge_pages = true; };\n"
		"smc = { window = 64; };\n"
		"sst = { heartbeat_ms = 50; };\n";
	struct group_config cfg;
	struct squall_error err;

	(void)state;
	assert_int_equal(load_with(node, NULL, 0, &cfg, &err), 0);
	assert_string_equal(cfg.device, "mlx5_0");
	assert_true(cfg.huge_pages);
	assert_int_equal(cfg.smc_window, 64);
	assert_int_equal(cfg.sst_heartbeat_ms, 50);
	assert_int_equal(cfg.smc_max_payload, 8192);   /* from the group file */
	assert_string_equal(cfg.name, "t");
	assert_string_equal(cfg.path, gpath);
	assert_string_equal(cfg.node_path, npath);
}

static void expect_node_bad(const char *node, const char *fmt)
{
	struct group_config cfg;
	struct squall_error err;
	char want[SQUALL_ERRMSG_MAX];

	assert_int_equal(load_with(node, NULL, 0, &cfg, &err), -EINVAL);
	snprintf(want, sizeof(want), fmt, npath);
	assert_string_equal(err.msg, want);
}

static void test_node_bad(void **state)
{
	struct group_config cfg;
	struct squall_error err;
	char want[SQUALL_ERRMSG_MAX];

	(void)state;
	expect_node_bad("smc = {\n  window = 3;\n};\n",
			"%s:2: smc.window: must be a power of two between 2 and 65536 (got 3)");
	expect_node_bad("group = { devise = \"mlx5_0\"; };\n",
			"%s:1: group.devise: unknown setting (known in group: name, device, region_size, huge_pages, connect_timeout_ms, view_timeout_ms, copy_threshold, key_file, stats_file, peer_access)");
	expect_node_bad("\n\nmembers = ( { id = 5; address = \"10.0.0.5\"; port = 1; } );\n",
			"%s:3: members: cannot be overridden by a node file (members come from the group file)");
	expect_node_bad("group = { device = = \"mlx5_0\"; };\n",
			"%s:1: syntax error");
	/* a cross check blames the override that broke it */
	expect_node_bad("\nsmc = { window = 8192; };\n",
			"%s:2: smc.window: group.region_size 64M has no room for what the group lays out for 2 members: 137854976 bytes (SMC rings 134500352 for smc.window 8192 x smc.max_payload 8192, receive buffers 2097152, SST 12288, SMC headers 196608, and 1M for RDMC and the first leases)");
	/* a missing node file */
	unlink(npath);
	write_file(gpath, BASE);
	assert_int_equal(group_config_load_with(gpath, npath, NULL, 0, &cfg, &err),
			 -ENOENT);
	snprintf(want, sizeof(want), "%s: cannot open: No such file or directory",
		 npath);
	assert_string_equal(err.msg, want);
}

/* sst.idle: one of three words, adaptive by default; its spin window. */
static void test_idle_policy(void **state)
{
	struct group_config cfg;
	struct squall_error err;
	const char *spin[] = { "sst.idle=spin", "sst.spin_us=10",
			       "sst.spin_max_us=500" };
	const char *bad[] = { "sst.idle=sleepy" };

	(void)state;
	assert_int_equal(load_with(NULL, NULL, 0, &cfg, &err), 0);
	assert_int_equal(cfg.sst_idle, 0);
	assert_int_equal(cfg.sst_spin_us, 50);
	assert_int_equal(cfg.sst_spin_max_us, 20000);
	assert_int_equal(load_with(NULL, spin, 3, &cfg, &err), 0);
	assert_int_equal(cfg.sst_idle, 1);
	assert_int_equal(cfg.sst_spin_us, 10);
	assert_int_equal(cfg.sst_spin_max_us, 500);
	assert_int_equal(load_with("sst = { idle = \"block\"; };\n", NULL, 0,
				   &cfg, &err), 0);
	assert_int_equal(cfg.sst_idle, 2);
	assert_int_equal(load_with(NULL, bad, 1, &cfg, &err), -EINVAL);
	assert_string_equal(err.msg, "--set sst.idle=sleepy: sst.idle: must be "
			    "\"adaptive\", \"spin\" or \"block\" (got \"sleepy\")");
	expect_bad("smc = {", "sst = { idle = 1; };\nsmc = {",
		   "%s:5: sst.idle: must be a string (got an integer)");
}

/* group.peer_access: windows by default, region on request; the two
 * cannot talk, so the fingerprint tells them apart. */
static void test_peer_access(void **state)
{
	struct group_config cfg;
	struct squall_error err;
	const char *region[] = { "group.peer_access=region" };
	const char *bad[] = { "group.peer_access=open" };
	uint64_t fw, fr;

	(void)state;
	assert_int_equal(load_with(NULL, NULL, 0, &cfg, &err), 0);
	assert_int_equal(cfg.peer_access, 0);
	assert_int_equal(group_config_fingerprint(&cfg, &fw), 0);
	assert_int_equal(load_with(NULL, region, 1, &cfg, &err), 0);
	assert_int_equal(cfg.peer_access, 1);
	assert_int_equal(group_config_fingerprint(&cfg, &fr), 0);
	assert_true(fw != fr);
	assert_int_equal(load_with(NULL, bad, 1, &cfg, &err), -EINVAL);
	assert_string_equal(err.msg, "--set group.peer_access=open: "
			    "group.peer_access: must be \"windows\" or "
			    "\"region\" (got \"open\")");
}

static void test_set_override(void **state)
{
	static const char node[] = "group = { device = \"mlx5_0\"; };\n";
	const char *sets[] = { "group.device=rxe1", "smc.window=64",
			       "group.region_size=128M", "group.huge_pages=true",
			       "sst.suspect_timeout_ms=5000",
			       "smc.max_payload=4096" };
	struct group_config cfg;
	struct squall_error err;

	(void)state;
	assert_int_equal(load_with(node, sets, 6, &cfg, &err), 0);
	assert_string_equal(cfg.device, "rxe1");   /* --set beats the node file */
	assert_int_equal(cfg.smc_window, 64);
	assert_int_equal(cfg.region_size, 128u << 20);
	assert_true(cfg.huge_pages);
	assert_int_equal(cfg.sst_suspect_timeout_ms, 5000);
	assert_int_equal(cfg.smc_max_payload, 4096);
}

/* group.key_file: read at load, relative to the group file's folder;
 * a missing, exposed or broken key is an error naming the setting and
 * the file. */
static void test_key_file(void **state)
{
	char *text = variant("  region_size = \"64M\";\n",
			     "  region_size = \"64M\";\n  key_file = \"k.key\";\n");
	char kpath[160];
	struct group_config cfg;
	struct squall_error err;

	(void)state;
	snprintf(kpath, sizeof(kpath), "%s/k.key", dir);
	write_file(gpath, BASE);
	assert_int_equal(group_config_load(gpath, &cfg, &err), 0);
	assert_false(cfg.has_key);
	assert_string_equal(cfg.key_file, "");
	write_file(gpath, text);
	/* Missing. */
	assert_int_equal(group_config_load(gpath, &cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "group.key_file: key file "));
	assert_non_null(strstr(err.msg, "k.key: No such file"));
	/* Exposed. */
	write_file(kpath, "000102030405060708090a0b0c0d0e0f"
		   "101112131415161718191a1b1c1d1e1f\n");
	assert_int_equal(chmod(kpath, 0644), 0);
	assert_int_equal(group_config_load(gpath, &cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, ":4: group.key_file: key file "));
	assert_non_null(strstr(err.msg, "(mode 0644)"));
	/* Private: loaded, resolved against the group file's folder. */
	assert_int_equal(chmod(kpath, 0600), 0);
	assert_int_equal(group_config_load(gpath, &cfg, &err), 0);
	assert_true(cfg.has_key);
	assert_string_equal(cfg.key_file, kpath);
	assert_int_equal(cfg.key[0], 0x00);
	assert_int_equal(cfg.key[31], 0x1f);
	/* Not a key. */
	write_file(kpath, "not a key\n");
	assert_int_equal(group_config_load(gpath, &cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not a key"));
	/* Not a string. */
	free(text);
	text = variant("  region_size = \"64M\";\n",
		       "  region_size = \"64M\";\n  key_file = 3;\n");
	expect_bad_text(text, "%s:4: group.key_file: must be a string (got an integer)");
	free(text);
	unlink(kpath);
}

static void expect_set_bad(const char *set, const char *want);

/* group.stats_file: optional; relative to the folder of the file that
 * names it (a --set: to the working directory); one "%u" for the
 * member's id and no other '%'; a file, not a folder. */
static void test_stats_file(void **state)
{
	char *text = variant("  region_size = \"64M\";\n",
			     "  region_size = \"64M\";\n  stats_file = \"m%u.stats\";\n");
	char want[200];
	struct group_config cfg;
	struct squall_error err;
	const char *abs_set[] = { "group.stats_file=/run/squall/m%u" };
	const char *rel_set[] = { "group.stats_file=out/m.stats" };

	(void)state;
	write_file(gpath, BASE);
	assert_int_equal(group_config_load(gpath, &cfg, &err), 0);
	assert_string_equal(cfg.stats_file, "");
	write_file(gpath, text);
	assert_int_equal(group_config_load(gpath, &cfg, &err), 0);
	snprintf(want, sizeof(want), "%s/m%%u.stats", dir);
	assert_string_equal(cfg.stats_file, want);
	free(text);
	assert_int_equal(load_with(NULL, abs_set, 1, &cfg, &err), 0);
	assert_string_equal(cfg.stats_file, "/run/squall/m%u");
	assert_int_equal(load_with(NULL, rel_set, 1, &cfg, &err), 0);
	assert_string_equal(cfg.stats_file, "out/m.stats");

	text = variant("  region_size = \"64M\";\n",
		       "  region_size = \"64M\";\n  stats_file = 1;\n");
	expect_bad_text(text, "%s:4: group.stats_file: must be a string (got an integer)");
	free(text);
	text = variant("  region_size = \"64M\";\n",
		       "  region_size = \"64M\";\n  stats_file = \"\";\n");
	expect_bad_text(text, "%s:4: group.stats_file: must name a file (got \"\")");
	free(text);
	text = variant("  region_size = \"64M\";\n",
		       "  region_size = \"64M\";\n  stats_file = \"m%d.stats\";\n");
	expect_bad_text(text, "%s:4: group.stats_file: '%%' may only appear as "
			"\"%%u\" (the member's id) (got \"m%%d.stats\")");
	free(text);
	text = variant("  region_size = \"64M\";\n",
		       "  region_size = \"64M\";\n  stats_file = \"%u/m%u\";\n");
	expect_bad_text(text, "%s:4: group.stats_file: \"%%u\" may appear once, "
			"and '%%' nowhere else (got \"%%u/m%%u\")");
	free(text);
	text = variant("  region_size = \"64M\";\n",
		       "  region_size = \"64M\";\n  stats_file = \"/tmp/\";\n");
	expect_bad_text(text, "%s:4: group.stats_file: must name a file, not a "
			"folder (got \"/tmp/\")");
	free(text);
	expect_set_bad("group.stats_file=/run/m%s",
		       "--set group.stats_file=/run/m%s: group.stats_file: '%' "
		       "may only appear as \"%u\" (the member's id) (got "
		       "\"/run/m%s\")");
	/* "%u" is found in the resolved path: a folder with a '%' of its
	 * own is refused. */
	text = variant("  region_size = \"64M\";\n",
		       "  region_size = \"64M\";\n  stats_file = \"m.stats\";\n");
	assert_int_equal(group_config_parse_text("/tmp/100%/g.cfg", text,
						 strlen(text), &cfg, &err),
			 -EINVAL);
	assert_string_equal(err.msg, "/tmp/100%/g.cfg:4: group.stats_file: "
			    "relative to a folder whose name holds '%': give an "
			    "absolute path (got \"m.stats\")");
	free(text);
	{
		char set[300] = "group.stats_file=/";
		const char *sets[] = { set };

		memset(set + strlen(set), 'a', 260);
		set[sizeof(set) - 1] = '\0';
		assert_int_equal(load_with(NULL, sets, 1, &cfg, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "group.stats_file: the path is "
				       "longer than 255 characters"));
	}
}

/* A UTF-8 byte-order mark before the first setting: said so, with the
 * remedy, instead of libconfig's bare "syntax error". */
static void test_byte_order_mark(void **state)
{
	char text[sizeof(BASE) + 3];

	(void)state;
	memcpy(text, "\xef\xbb\xbf", 3);
	memcpy(text + 3, BASE, sizeof(BASE));
	expect_bad_text(text, "%s:1: the file starts with a UTF-8 byte-order "
			"mark (bytes EF BB BF), which libconfig cannot read: "
			"save it without one");
}

static void expect_set_bad(const char *set, const char *want)
{
	struct group_config cfg;
	struct squall_error err;
	const char *sets[] = { "group.device=rxe1", set };

	assert_int_equal(load_with(NULL, sets, 2, &cfg, &err), -EINVAL);
	assert_string_equal(err.msg, want);
}

static void test_set_bad(void **state)
{
	(void)state;
	expect_set_bad("smc.window=3",
		       "--set smc.window=3: smc.window: must be a power of two between 2 and 65536 (got 3)");
	expect_set_bad("smc.window=lots",
		       "--set smc.window=lots: smc.window: must be an integer (got \"lots\")");
	expect_set_bad("smc.window",
		       "--set smc.window: expected section.key=value");
	expect_set_bad("window=16",
		       "--set window=16: expected section.key=value");
	expect_set_bad("smc.windw=16",
		       "--set smc.windw=16: smc.windw: unknown setting (known in smc: max_payload, window)");
	expect_set_bad("smx.window=16",
		       "--set smx.window=16: smx: unknown setting (known sections: group, smc, rdmc, sst, members)");
	expect_set_bad("members.id=3",
		       "--set members.id=3: members.id: cannot be set from the command line (members come from the group file)");
	expect_set_bad("group.huge_pages=yes",
		       "--set group.huge_pages=yes: group.huge_pages: must be true or false (got \"yes\")");
	expect_set_bad("group.region_size=12X",
		       "--set group.region_size=12X: group.region_size: must be a size: a number of bytes, or a string like \"256M\" (suffix K, M or G) (got \"12X\")");
	expect_set_bad("group.region_size=-4K",
		       "--set group.region_size=-4K: group.region_size: must be a size: a number of bytes, or a string like \"256M\" (suffix K, M or G) (got \"-4K\")");
	expect_set_bad("group.device=mlx5 0",
		       "--set group.device=mlx5 0: group.device: must be at most 63 characters from A-Z a-z 0-9 . _ - (got \"mlx5 0\")");
	expect_set_bad("rdmc.block_size=64M",
		       "--set rdmc.block_size=64M: rdmc.block_size: rdmc.block_size 64M must be at most half of group.region_size 64M");
	expect_set_bad("sst.heartbeat_ms=2000",
		       "--set sst.heartbeat_ms=2000: sst.heartbeat_ms: sst.suspect_timeout_ms 2000 must be greater than sst.heartbeat_ms 2000");
}

static void test_fingerprint(void **state)
{
	struct group_config a, b;
	struct squall_error err;
	uint64_t fa, fb;
	const char *local[] = { "group.device=mlx5_0", "group.huge_pages=true",
				"sst.heartbeat_ms=10", "group.copy_threshold=4K",
				"group.connect_timeout_ms=5",
				"group.stats_file=/run/m%u.stats" };
	const char *shared[] = { "smc.window=32" };

	(void)state;
	assert_int_equal(load_with(NULL, NULL, 0, &a, &err), 0);
	assert_int_equal(group_config_fingerprint(&a, &fa), 0);
	assert_int_equal(group_config_fingerprint(&a, &fb), 0);
	assert_true(fa == fb);
	assert_true(fa != 0);

	/* local choices do not change it */
	assert_int_equal(load_with(NULL, local, 6, &b, &err), 0);
	assert_int_equal(group_config_fingerprint(&b, &fb), 0);
	assert_true(fa == fb);

	/* a shared setting does */
	assert_int_equal(load_with(NULL, shared, 1, &b, &err), 0);
	assert_int_equal(group_config_fingerprint(&b, &fb), 0);
	assert_true(fa != fb);

	/* so does any member field, or the members' order */
	b = a;
	b.members[1].port = 7401;
	assert_int_equal(group_config_fingerprint(&b, &fb), 0);
	assert_true(fa != fb);
	b = a;
	b.members[0] = a.members[1];
	b.members[1] = a.members[0];
	assert_int_equal(group_config_fingerprint(&b, &fb), 0);
	assert_true(fa != fb);
	b = a;
	b.region_size <<= 1;
	assert_int_equal(group_config_fingerprint(&b, &fb), 0);
	assert_true(fa != fb);

	b.nmembers = 0;
	assert_int_equal(group_config_fingerprint(&b, &fb), -EINVAL);
	assert_int_equal(group_config_fingerprint(NULL, &fb), -EINVAL);
}

static void test_my_id(void **state)
{
	struct group_config cfg;
	struct squall_error err;
	char want[SQUALL_ERRMSG_MAX];

	(void)state;
	load_conf("local-3.cfg", &cfg);
	unsetenv("SQUALL_MEMBER_ID");
	assert_int_equal(group_config_my_id(&cfg, "2", &err), 2);
	assert_int_equal(group_config_my_id(&cfg, NULL, &err), -EINVAL);
	snprintf(want, sizeof(want),
		 "no member id: give one on the command line, set SQUALL_MEMBER_ID, or start under a launcher that sets a rank (SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK) (members of %s: 0, 1, 2)",
		 cfg.path);
	assert_string_equal(err.msg, want);

	setenv("SQUALL_MEMBER_ID", "1", 1);
	assert_int_equal(group_config_my_id(&cfg, NULL, &err), 1);
	assert_int_equal(group_config_my_id(&cfg, "0", &err), 0); /* arg wins */

	setenv("SQUALL_MEMBER_ID", "one", 1);
	assert_int_equal(group_config_my_id(&cfg, NULL, &err), -EINVAL);
	assert_string_equal(err.msg,
			    "member id \"one\" (from SQUALL_MEMBER_ID) is not a number between 0 and 4294967295");
	assert_int_equal(group_config_my_id(&cfg, " 1", &err), -EINVAL);
	assert_string_equal(err.msg,
			    "member id \" 1\" (from the command line) is not a number between 0 and 4294967295");
	assert_int_equal(group_config_my_id(&cfg, "", &err), -EINVAL);

	setenv("SQUALL_MEMBER_ID", "7", 1);
	assert_int_equal(group_config_my_id(&cfg, NULL, &err), -ENOENT);
	snprintf(want, sizeof(want),
		 "member id 7 (from SQUALL_MEMBER_ID) is not a member of %s (ids: 0, 1, 2)",
		 cfg.path);
	assert_string_equal(err.msg, want);
	unsetenv("SQUALL_MEMBER_ID");
}

/* Ids from a launcher's rank, after --id and SQUALL_MEMBER_ID, in the
 * documented order; rank r is the r-th member of the file. */
static void test_launcher_rank(void **state)
{
	static const char *const vars[] = { "SLURM_PROCID",
		"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK" };
	struct group_config cfg;
	struct squall_error err;
	char want[SQUALL_ERRMSG_MAX];

	(void)state;
	write_file(gpath, "group = { name = \"t\"; region_size = \"64M\"; };\n"
		   "smc = { max_payload = 8192; window = 16; };\n"
		   "rdmc = { block_size = \"1M\"; };\n"
		   "members = ( { id = 5; address = \"10.0.0.1\"; port = 7400; },\n"
		   "  { id = 9; address = \"10.0.0.2\"; port = 7400; } );\n");
	assert_int_equal(group_config_load(gpath, &cfg, &err), 0);
	unsetenv("SQUALL_MEMBER_ID");
	for (size_t i = 0; i < 4; i++)
		unsetenv(vars[i]);
	/* Each variable alone: rank 1 is the file's second member, id 9. */
	for (size_t i = 0; i < 4; i++) {
		setenv(vars[i], "1", 1);
		assert_int_equal(group_config_my_id(&cfg, NULL, &err), 9);
		unsetenv(vars[i]);
	}
	/* The order: SLURM_PROCID before OMPI_COMM_WORLD_RANK before ... */
	setenv("PMI_RANK", "1", 1);
	setenv("OMPI_COMM_WORLD_RANK", "0", 1);
	assert_int_equal(group_config_my_id(&cfg, NULL, &err), 5);
	/* An explicit id wins over any rank. */
	setenv("SQUALL_MEMBER_ID", "9", 1);
	assert_int_equal(group_config_my_id(&cfg, NULL, &err), 9);
	assert_int_equal(group_config_my_id(&cfg, "5", &err), 5);
	unsetenv("SQUALL_MEMBER_ID");
	/* A rank beyond the members, or not a number. */
	setenv("OMPI_COMM_WORLD_RANK", "2", 1);
	assert_int_equal(group_config_my_id(&cfg, NULL, &err), -ENOENT);
	snprintf(want, sizeof(want), "rank 2 (from OMPI_COMM_WORLD_RANK) is "
		 "beyond the 2 members of %s: start at most 2 processes, or "
		 "give ids", gpath);
	assert_string_equal(err.msg, want);
	setenv("OMPI_COMM_WORLD_RANK", "x", 1);
	assert_int_equal(group_config_my_id(&cfg, NULL, &err), -EINVAL);
	assert_string_equal(err.msg, "rank \"x\" (from OMPI_COMM_WORLD_RANK) is "
			    "not a number from 0");
	for (size_t i = 0; i < 4; i++)
		unsetenv(vars[i]);
}

/* members[i].joins: a member outside the first view; a bool; at least
 * one member must be in the first view; part of the fingerprint. */
static void test_joins(void **state)
{
	struct group_config cfg, plain;
	struct squall_error err;
	uint64_t a, b;
	char *text = variant("port = 7400; }\n);", "port = 7400; joins = true; }\n);");

	(void)state;
	write_file(gpath, text);
	free(text);
	assert_int_equal(group_config_load(gpath, &cfg, &err), 0);
	assert_false(cfg.members[0].joins);
	assert_true(cfg.members[1].joins);
	write_file(gpath, BASE);
	assert_int_equal(group_config_load(gpath, &plain, &err), 0);
	assert_int_equal(group_config_fingerprint(&cfg, &a), 0);
	assert_int_equal(group_config_fingerprint(&plain, &b), 0);
	assert_true(a != b);
	expect_bad("port = 7400; }\n);", "port = 7400; joins = 1; }\n);",
		   "%s:9: members[1].joins: must be true or false (got an integer)");
	text = variant("port = 7400; },", "port = 7400; joins = true; },");
	{
		char *both = NULL;
		const char *from = "port = 7400; }\n);";
		char *p = strstr(text, from);

		assert_non_null(p);
		both = malloc(strlen(text) + 32);
		memcpy(both, text, (size_t)(p - text));
		strcpy(both + (p - text), "port = 7400; joins = true; }\n);");
		strcat(both, p + strlen(from));
		expect_bad_text(both, "%s:8: members: every member has joins = true: "
				"the first view needs at least one member without it");
		free(both);
	}
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local_files),
		cmocka_unit_test(test_cluster_example),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_bad_syntax),
		cmocka_unit_test(test_bad_missing),
		cmocka_unit_test(test_bad_unknown),
		cmocka_unit_test(test_bad_types),
		cmocka_unit_test(test_bad_members),
		cmocka_unit_test(test_bad_sizes),
		cmocka_unit_test(test_region_fits),
		cmocka_unit_test(test_syntax_hints),
		cmocka_unit_test(test_bad_file),
		cmocka_unit_test(test_parse_text),
		cmocka_unit_test(test_node_override),
		cmocka_unit_test(test_node_bad),
		cmocka_unit_test(test_set_override),
		cmocka_unit_test(test_idle_policy),
		cmocka_unit_test(test_peer_access),
		cmocka_unit_test(test_key_file),
		cmocka_unit_test(test_stats_file),
		cmocka_unit_test(test_byte_order_mark),
		cmocka_unit_test(test_set_bad),
		cmocka_unit_test(test_fingerprint),
		cmocka_unit_test(test_my_id),
		cmocka_unit_test(test_launcher_rank),
		cmocka_unit_test(test_joins),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
