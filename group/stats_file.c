/*
 * stats_file.c - the stats file's text: written from a snapshot, read
 * back into key=value entries, and the rates between two reads.
 *
 * The numeric lines come from one table (key, where the value lies in the
 * snapshot, whether it only grows), so what the writer prints and what the
 * reader computes rates for cannot drift apart.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "group/stats_file.h"

enum part { P_GROUP, P_ALLOC, P_SMC, P_RDMC, P_SST, P_REGCACHE };

struct field {
	const char *key;
	enum part part;
	size_t off;             /* of a uint64_t in struct stats_snapshot */
	bool level;             /* a level, not a counter that grows */
};

#define F(key, part, member, level) \
	{ key, part, offsetof(struct stats_snapshot, member), level }
#define G(name) F("group." #name, P_GROUP, g.name, false)
#define A(name, level) F("alloc." #name, P_ALLOC, alloc.name, level)
#define SMC(name) F("smc." #name, P_SMC, smc.name, false)
#define RDMC(name) F("rdmc." #name, P_RDMC, rdmc.name, false)
#define SST(name) F("sst." #name, P_SST, sst.name, false)
#define RC(name, level) F("regcache." #name, P_REGCACHE, regcache.name, level)

static const struct field fields[] = {
	G(sent), G(sent_smc), G(sent_rdmc), G(delivered), G(delivered_bytes),
	G(copies), G(payload_copies), G(p2p_sent), G(p2p_received),
	G(p2p_use_once),
	G(send_waits), G(wedges), G(commits), G(resent),
	F("group.last_view_change_ms", P_GROUP, g.last_view_change_ms, true),
	F("group.last_view_change_agree_ms", P_GROUP,
	  g.last_view_change_agree_ms, true),
	F("group.last_view_change_deliver_ms", P_GROUP,
	  g.last_view_change_deliver_ms, true),
	F("group.last_view_change_teardown_ms", P_GROUP,
	  g.last_view_change_teardown_ms, true),
	F("group.last_view_change_build_ms", P_GROUP,
	  g.last_view_change_build_ms, true),
	F("group.last_view_change_connect_ms", P_GROUP,
	  g.last_view_change_connect_ms, true),
	F("group.last_view_change_upcall_ms", P_GROUP,
	  g.last_view_change_upcall_ms, true),
	G(sends_lost), G(sends_unknown), G(p2p_abandoned), G(misbehaved),
	G(refused), G(joins_dropped), G(sent_in_place), G(bytes_in_place),
	G(bytes_copied), G(cache_hits), G(cache_misses),
	G(odp_registrations), G(sst_pushes), G(sst_writes), G(progress_sleeps),
	G(smc_rx_wait_ns), G(smc_rx_waited), G(smc_own_wait_ns),
	G(smc_own_waited), G(smc_writes), G(smc_records_written),
	A(region_bytes, true), A(leases, false), A(releases, false),
	A(leased_bytes, true), A(high_water, true), A(failures, false),
	A(slabs, true),
	SMC(sends), SMC(sends_copied), SMC(bytes_sent), SMC(send_waits),
	SMC(send_eagain), SMC(null_records), SMC(writes), SMC(records_written),
	SMC(posts_deferred), SMC(delivered), SMC(kept),
	RDMC(bytes_sent), RDMC(bytes_received), RDMC(blocks_sent),
	RDMC(blocks_received), RDMC(transfers_sent), RDMC(transfers_received),
	RDMC(transfers_failed), RDMC(ctl_sent), RDMC(ctl_received),
	RDMC(strays),
	SST(pushes), SST(writes), SST(received), SST(passes), SST(sleeps),
	SST(heartbeats), SST(suspicions), SST(stalls), SST(torn),
	RC(hits, false), RC(misses, false), RC(registrations, false),
	RC(reg_failures, false), RC(deregistrations, false),
	RC(dereg_failures, false), RC(evictions, false),
	RC(invalidations, false), RC(entries, true), RC(bytes, true),
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static bool part_present(const struct stats_snapshot *s, enum part p)
{
	switch (p) {
	case P_SMC:
	case P_SST: return s->has_transports;
	case P_RDMC: return s->has_transports && s->has_rdmc;
	case P_REGCACHE: return s->has_regcache;
	default: return true;
	}
}

struct out {
	char *buf;
	size_t size, n;
	bool full;
};

static void put(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (o->full)
		return;
	va_start(ap, fmt);
	r = vsnprintf(o->buf + o->n, o->size - o->n, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= o->size - o->n)
		o->full = true;
	else
		o->n += (size_t)r;
}

/* A value on one line: control characters (a newline in a message)
 * become spaces. */
static void put_text(struct out *o, const char *key, const char *v)
{
	char clean[STATS_VALUE_MAX];
	size_t i;

	for (i = 0; v[i] && i + 1 < sizeof(clean); i++)
		clean[i] = (unsigned char)v[i] < 0x20 ? ' ' : v[i];
	clean[i] = '\0';
	put(o, "%s=%s\n", key, clean);
}

int stats_format(const struct stats_snapshot *s, char *buf, size_t size)
{
	struct out o = { .buf = buf, .size = size };

	if (!size)
		return -ENOSPC;
	buf[0] = '\0';
	put(&o, "squall_stats=%d\n", STATS_FORMAT_VERSION);
	put_text(&o, "group", s->group);
	put(&o, "member=%" PRIu32 "\n", s->member);
	put(&o, "pid=%ld\n", s->pid);
	put_text(&o, "state", s->state ? s->state : "running");
	put(&o, "uptime_ms=%" PRIu64 "\n", s->uptime_ms);
	put(&o, "epoch=%" PRIu64 "\n", s->epoch);
	put(&o, "nmembers=%" PRIu32 "\n", s->nmembers);
	put(&o, "members=");
	for (uint32_t i = 0; i < s->nmembers && i < GROUP_CONFIG_MAX_MEMBERS; i++)
		put(&o, "%s%" PRIu32, i ? "," : "", s->members[i]);
	put(&o, "\n");
	for (size_t i = 0; i < NFIELDS; i++) {
		const struct field *f = &fields[i];
		uint64_t v;

		if (!part_present(s, f->part))
			continue;
		memcpy(&v, (const char *)s + f->off, sizeof(v));
		put(&o, "%s=%" PRIu64 "\n", f->key, v);
	}
	put(&o, "stats.writes_failed=%" PRIu64 "\n", s->writes_failed);
	if (s->why[0])
		put_text(&o, "why", s->why);
	return o.full ? -ENOSPC : (int)o.n;
}

int stats_path(const char *pattern, uint32_t id, char *out, size_t size)
{
	const char *pct = strstr(pattern, "%u");
	int r;

	if (pct)
		r = snprintf(out, size, "%.*s%" PRIu32 "%s",
			     (int)(pct - pattern), pattern, id, pct + 2);
	else
		r = snprintf(out, size, "%s", pattern);
	return r < 0 || (size_t)r >= size ? -ENAMETOOLONG : 0;
}

int stats_write_file(const char *path, const char *text, size_t len,
		     struct squall_error *err)
{
	char tmp[GROUP_CONFIG_PATH_MAX + 32];
	size_t done = 0;
	int fd, e;

	/* Per process: two members given one file (no "%u") each write
	 * their own, and the last rename wins whole. */
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path,
			     (long)getpid()) >= sizeof(tmp))
		return squall_error_set(err, -ENAMETOOLONG,
					"%s: path too long", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		e = errno;
		return squall_error_set(err, -e, "cannot write %s: %s", tmp,
					strerror(e));
	}
	while (done < len) {
		ssize_t w = write(fd, text + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? errno : EIO;
			close(fd);
			unlink(tmp);
			return squall_error_set(err, -e, "cannot write %s: %s",
						tmp, strerror(e));
		}
		done += (size_t)w;
	}
	if (close(fd) || rename(tmp, path)) {
		e = errno;
		unlink(tmp);
		return squall_error_set(err, -e, "cannot replace %s: %s", path,
					strerror(e));
	}
	return 0;
}

static bool key_ok(const char *k, size_t n)
{
	if (!n || n >= STATS_KEY_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') ||
		      k[i] == '_' || k[i] == '.'))
			return false;
	return true;
}

static bool number(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return !errno && *end == '\0';
}

int stats_parse(const char *text, size_t len, struct stats_parsed *out,
		struct squall_error *err)
{
	const char *p = text, *end = text + len;
	unsigned line = 0;
	char first[32];

	out->n = 0;
	snprintf(first, sizeof(first), "squall_stats=%d", STATS_FORMAT_VERSION);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *stop = nl ? nl : end;
		const char *eq = memchr(p, '=', (size_t)(stop - p));
		struct stats_entry *e = &out->e[out->n];
		size_t vlen;

		line++;
		if (line == 1 && ((size_t)(stop - p) != strlen(first) ||
				  memcmp(p, first, strlen(first))))
			return squall_error_set(err, -EINVAL, "line 1: not a "
				"squall stats file (it starts with \"%s\")", first);
		if (!eq || !key_ok(p, (size_t)(eq - p)))
			return squall_error_set(err, -EINVAL, "line %u: not a "
				"key=value line", line);
		vlen = (size_t)(stop - eq - 1);
		if (vlen >= STATS_VALUE_MAX)
			return squall_error_set(err, -EINVAL, "line %u: value "
				"longer than %u characters", line,
				STATS_VALUE_MAX - 1);
		if (out->n == STATS_MAX_ENTRIES)
			return squall_error_set(err, -EINVAL, "line %u: more "
				"than %u lines", line, STATS_MAX_ENTRIES);
		memcpy(e->key, p, (size_t)(eq - p));
		e->key[eq - p] = '\0';
		memcpy(e->value, eq + 1, vlen);
		e->value[vlen] = '\0';
		e->is_num = number(e->value, &e->num);
		out->n++;
		p = nl ? nl + 1 : end;
	}
	if (!line)
		return squall_error_set(err, -EINVAL, "empty");
	return 0;
}

const struct stats_entry *stats_find(const struct stats_parsed *p,
				     const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->e[i].key, key) == 0)
			return &p->e[i];
	return NULL;
}

bool stats_key_grows(const char *key)
{
	if (strcmp(key, "stats.writes_failed") == 0)
		return true;
	for (size_t i = 0; i < NFIELDS; i++)
		if (strcmp(fields[i].key, key) == 0)
			return !fields[i].level;
	return false;
}

bool stats_rate(const struct stats_parsed *prev, const struct stats_parsed *cur,
		const char *key, double *rate)
{
	const struct stats_entry *a = stats_find(prev, key);
	const struct stats_entry *b = stats_find(cur, key);
	const struct stats_entry *ta = stats_find(prev, "uptime_ms");
	const struct stats_entry *tb = stats_find(cur, "uptime_ms");
	const struct stats_entry *pa = stats_find(prev, "pid");
	const struct stats_entry *pb = stats_find(cur, "pid");

	const struct stats_entry *ea = stats_find(prev, "epoch");
	const struct stats_entry *eb = stats_find(cur, "epoch");
	/* The view's transports count from zero in each view; the group,
	 * the allocator and the registration cache (a survivor keeps it)
	 * count on. */
	bool per_view = strncmp(key, "group.", 6) && strncmp(key, "alloc.", 6) &&
			strncmp(key, "stats.", 6) && strncmp(key, "regcache.", 9);

	if (per_view && (!ea || !eb || strcmp(ea->value, eb->value)))
		return false;
	if (!stats_key_grows(key) || !a || !b || !ta || !tb || !pa || !pb ||
	    !a->is_num || !b->is_num || !ta->is_num || !tb->is_num ||
	    strcmp(pa->value, pb->value) || tb->num <= ta->num ||
	    b->num < a->num)
		return false;
	*rate = (double)(b->num - a->num) * 1000.0 / (double)(tb->num - ta->num);
	return true;
}
