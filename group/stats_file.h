/*
 * stats_file.h - the stats file a member writes when group.stats_file is
 * set, and what squall-stat reads back (internal).
 *
 * The file is plain text, one "key=value" per line, replaced whole every
 * second (written beside it, then renamed over it, so a reader sees one
 * complete snapshot or the one before). Its first line is
 * "squall_stats=1", the format's version. Keys are dotted by where the
 * counter lives: group.*, alloc.* (the allocator, all size classes
 * together), regcache.* (the member's registration cache, which a
 * survivor keeps from view to view), smc.*, rdmc.*
 * and sst.* (the current view's transports, counted from zero in each
 * view). Pure: no running group; group/stats.c fills a snapshot, and
 * tools/squall-stat.c and the unit tests parse it.
 */
#ifndef SQUALL_GROUP_STATS_FILE_H
#define SQUALL_GROUP_STATS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <squall/config.h>
#include <squall/error.h>
#include <squall/group.h>
#include <squall/rdmc.h>
#include <squall/regcache.h>
#include <squall/smc.h>
#include <squall/sst.h>

#define STATS_FORMAT_VERSION 1
/* The largest file: every key of a snapshot fits with room to spare. */
#define STATS_FILE_MAX 16384u
#define STATS_KEY_MAX 48u
#define STATS_VALUE_MAX 200u
#define STATS_MAX_ENTRIES 160u

/* The allocator's classes (and extents) summed. */
struct stats_alloc {
	uint64_t region_bytes;  /* the registered region */
	uint64_t leases, releases;
	uint64_t leased_bytes;  /* bytes leased now */
	uint64_t high_water;    /* the classes' peaks, summed */
	uint64_t failures;      /* leases refused with -ENOMEM */
	uint64_t slabs;
};

/* One snapshot of a member, as written. */
struct stats_snapshot {
	char group[GROUP_CONFIG_NAME_MAX];
	uint32_t member;
	long pid;
	const char *state;              /* "running", "stopped", "closed" */
	char why[SQUALL_ERRMSG_MAX];    /* group_status()'s text; "" when 0 */
	uint64_t uptime_ms;             /* since the writer started */
	uint64_t writes_failed;         /* earlier snapshots not written */
	uint64_t epoch;
	uint32_t nmembers;
	uint32_t members[GROUP_CONFIG_MAX_MEMBERS];
	struct group_stats g;
	struct stats_alloc alloc;
	bool has_transports;            /* smc, rdmc and sst below are set */
	struct smc_stats smc;
	bool has_rdmc;                  /* a view of one has no RDMC */
	struct rdmc_stats rdmc;
	struct sst_stats sst;
	bool has_regcache;
	struct regcache_stats regcache;
};

/* The text of snapshot s into buf (NUL-terminated). Returns its length,
 * or -ENOSPC when size is too small. */
int stats_format(const struct stats_snapshot *s, char *buf, size_t size);

/* pattern with its first "%u" replaced by id, into out. Returns 0 or
 * -ENAMETOOLONG. */
int stats_path(const char *pattern, uint32_t id, char *out, size_t size);

/* Write len bytes of text to path atomically: into "PATH.PID.tmp" in
 * the same folder, then renamed over path. Returns 0 or a negative errno with
 * err naming the file. */
int stats_write_file(const char *path, const char *text, size_t len,
		     struct squall_error *err);

/* One line of a stats file. */
struct stats_entry {
	char key[STATS_KEY_MAX];
	char value[STATS_VALUE_MAX];
	bool is_num;                    /* value is a decimal number: */
	uint64_t num;
};

struct stats_parsed {
	size_t n;
	struct stats_entry e[STATS_MAX_ENTRIES];
};

/* Parse len bytes of a stats file into out. Returns 0, or -EINVAL with
 * err saying which line is wrong (no "key=value", not the format's first
 * line, too many lines, a key or value too long). */
int stats_parse(const char *text, size_t len, struct stats_parsed *out,
		struct squall_error *err);

/* The entry for key, or NULL. */
const struct stats_entry *stats_find(const struct stats_parsed *p,
				     const char *key);

/* Whether key is a counter that only grows while the member runs (one a
 * rate per second makes sense for): every number but the identity, the
 * clock, the members and the levels (bytes leased now, cache entries...).
 * A counter of the view's transports starts again from zero in a new
 * view. */
bool stats_key_grows(const char *key);

/* The rate per second of a counter between two snapshots prev and cur of
 * one member (same pid, a later uptime_ms, a value not smaller): into
 * *rate, returns true; false when there is no rate to give. */
bool stats_rate(const struct stats_parsed *prev, const struct stats_parsed *cur,
		const char *key, double *rate);

#endif /* SQUALL_GROUP_STATS_FILE_H */
