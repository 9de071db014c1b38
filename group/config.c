/*
 * config.c - load and validate a group's .cfg file, with node overrides.
 *
 * Every known setting is one row of a table (section, key, kind, bounds,
 * default). Values are read into slots, and each slot remembers where its
 * value came from: a file and line, or the --set text. The group file is
 * read first, then the node file, then the --set strings, each replacing
 * the slots it names. Only then are defaults applied and the checks across
 * settings run, so that every error, even one found after merging, names
 * the place the user has to edit. Nothing is guessed: unknown keys, wrong
 * types, integers libconfig would silently truncate and @include are all
 * refused. `out` is written only when everything is valid.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <squall/config.h>

#include "group/config_parse.h"
#include "group/layout.h"
#include "rdma/auth.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

#define FILE_MAX MIB

enum kind { KIND_NAME, KIND_DEVICE, KIND_SIZE, KIND_UINT, KIND_BOOL,
	    KIND_PATH, KIND_CHOICE };

struct key_def {
	const char *section;
	const char *key;
	enum kind kind;
	bool required;
	bool pow2;
	bool id_pattern;        /* KIND_PATH: may hold one "%u" (the id) */
	uint64_t multiple;      /* 0: any */
	int64_t min, max;
	int64_t def;            /* default of an optional number or bool */
	const char *const *choices; /* KIND_CHOICE: the words, NULL-ended;
				       the value is the word's index */
};

static const char *const idle_words[] = { "adaptive", "spin", "block", NULL };
static const char *const access_words[] = { "windows", "region", NULL };

enum key_id {
	K_NAME, K_DEVICE, K_REGION, K_HUGE, K_CONNECT, K_VIEW, K_COPY,
	K_PAYLOAD, K_WINDOW, K_BLOCK, K_HEARTBEAT, K_SUSPECT, K_KEY, K_STATS,
	K_IDLE, K_SPIN, K_SPIN_MAX, K_ACCESS, K_COUNT
};

static const struct key_def keys[K_COUNT] = {
	[K_NAME] = { "group", "name", KIND_NAME, .required = true },
	[K_DEVICE] = { "group", "device", KIND_DEVICE },
	[K_REGION] = { "group", "region_size", KIND_SIZE, .required = true,
		       .multiple = 4 * KIB, .min = MIB, .max = 64 * GIB },
	[K_HUGE] = { "group", "huge_pages", KIND_BOOL, .def = 0 },
	[K_CONNECT] = { "group", "connect_timeout_ms", KIND_UINT,
			.min = 1, .max = 3600000, .def = 30000 },
	/* How long survivors wait for each other when they reconnect in a
	 * new view; a member missing then is dropped by the next change. */
	[K_VIEW] = { "group", "view_timeout_ms", KIND_UINT,
		     .min = 1, .max = 3600000, .def = 10000 },
	/* 64K: the size from which a send through the registration cache
	 * beat the copy path in bench/regcache.sh (copy_threshold_bytes) */
	[K_COPY] = { "group", "copy_threshold", KIND_SIZE,
		     .min = 0, .max = 64 * MIB, .def = 64 * KIB },
	[K_PAYLOAD] = { "smc", "max_payload", KIND_SIZE, .required = true,
			.multiple = 8, .min = 64, .max = MIB },
	[K_WINDOW] = { "smc", "window", KIND_UINT, .required = true,
		       .pow2 = true, .min = 2, .max = 65536 },
	[K_BLOCK] = { "rdmc", "block_size", KIND_SIZE, .required = true,
		      .pow2 = true, .min = 64, .max = GIB },
	[K_HEARTBEAT] = { "sst", "heartbeat_ms", KIND_UINT,
			  .min = 1, .max = 60000, .def = 100 },
	[K_SUSPECT] = { "sst", "suspect_timeout_ms", KIND_UINT,
			.min = 1, .max = 3600000, .def = 2000 },
	/* The group key (rdma/auth.h); relative to the file that names it. */
	[K_KEY] = { "group", "key_file", KIND_PATH },
	/* Where a member writes its counters every second (group/stats.c);
	 * "%u" stands for the member's id, so one file serves the group. */
	[K_STATS] = { "group", "stats_file", KIND_PATH, .id_pattern = true },
	/* What the progress thread does with no work (sst_idle_policy, in
	 * the order of idle_words), and its spin window (sst_options). */
	[K_IDLE] = { "sst", "idle", KIND_CHOICE, .choices = idle_words,
		     .def = 0 },
	[K_SPIN] = { "sst", "spin_us", KIND_UINT, .min = 1, .max = 1000000,
		     .def = 50 },
	[K_SPIN_MAX] = { "sst", "spin_max_us", KIND_UINT, .min = 1,
			 .max = 10000000, .def = 20000 },
	/* How peers write a member's region (group_config.peer_access, in
	 * the order of access_words). */
	[K_ACCESS] = { "group", "peer_access", KIND_CHOICE,
		       .choices = access_words, .def = 0 },
};

static const char *const sections[] = { "group", "smc", "rdmc", "sst" };
#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

/* Where a value came from; rank orders sources (later ones win). */
enum rank { FROM_DEFAULT, FROM_GROUP, FROM_NODE, FROM_SET };

struct origin {
	enum rank rank;
	const char *file;       /* FROM_GROUP, FROM_NODE */
	unsigned line;          /* 0: unknown */
	const char *set;        /* FROM_SET: the whole "section.key=value" */
};

struct slot {
	bool set;
	struct origin from;
	int64_t num;
	char str[GROUP_CONFIG_NAME_MAX];
	char path[GROUP_CONFIG_PATH_MAX]; /* KIND_PATH, resolved */
};

struct loader {
	struct squall_error *err;
	const char *group_path;
	struct slot slot[K_COUNT];
	unsigned section_line[NSECTIONS];  /* in the group file; 0: absent */
	bool members_seen;
	uint32_t nmembers;
	struct group_member_cfg members[GROUP_CONFIG_MAX_MEMBERS];
	unsigned member_line[GROUP_CONFIG_MAX_MEMBERS];
};

/* Copy s into dst for an error message: printable ASCII only, at most 48
 * characters, so that a message stays one readable line. */
static const char *quoted(char *dst, size_t size, const char *s)
{
	size_t n = 0;

	assert(size >= 8);
	for (; *s && n + 5 < size; s++) {
		unsigned char c = (unsigned char)*s;

		if (n >= 48) {
			n += (size_t)snprintf(dst + n, size - n, "...");
			break;
		}
		if (c >= 0x20 && c < 0x7f && c != '\\')
			dst[n++] = (char)c;
		else
			n += (size_t)snprintf(dst + n, size - n, "\\x%02x", c);
	}
	dst[n < size ? n : size - 1] = '\0';
	return dst;
}

/* A byte count as the user would write it: "64", "4K", "256M", "2G". */
static const char *size_text(char *dst, size_t size, int64_t v)
{
	if (v >= (int64_t)GIB && v % (int64_t)GIB == 0)
		snprintf(dst, size, "%" PRId64 "G", v / (int64_t)GIB);
	else if (v >= (int64_t)MIB && v % (int64_t)MIB == 0)
		snprintf(dst, size, "%" PRId64 "M", v / (int64_t)MIB);
	else if (v >= (int64_t)KIB && v % (int64_t)KIB == 0)
		snprintf(dst, size, "%" PRId64 "K", v / (int64_t)KIB);
	else
		snprintf(dst, size, "%" PRId64, v);
	return dst;
}

static const char *num_text(char *dst, size_t size, enum kind kind, int64_t v)
{
	if (kind == KIND_SIZE)
		return size_text(dst, size, v);
	snprintf(dst, size, "%" PRId64, v);
	return dst;
}

/* Record "WHERE: SETTING: TEXT" and return -EINVAL. */
static int fail(struct loader *ld, const struct origin *o, const char *setting,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int fail(struct loader *ld, const struct origin *o, const char *setting,
		const char *fmt, ...)
{
	char where[SQUALL_ERRMSG_MAX], text[SQUALL_ERRMSG_MAX];
	va_list ap;

	if (o->rank == FROM_SET) {
		char q[128];

		snprintf(where, sizeof(where), "--set %s",
			 quoted(q, sizeof(q), o->set));
	} else if (o->rank == FROM_DEFAULT) {
		snprintf(where, sizeof(where), "(default)");
	} else if (o->line) {
		snprintf(where, sizeof(where), "%s:%u", o->file, o->line);
	} else {
		snprintf(where, sizeof(where), "%s", o->file);
	}
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return squall_error_set(ld->err, -EINVAL, "%s: %s: %s", where, setting,
				text);
}

static const char *type_name(int type)
{
	switch (type) {
	case CONFIG_TYPE_GROUP: return "a group";
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64: return "an integer";
	case CONFIG_TYPE_FLOAT: return "a float";
	case CONFIG_TYPE_STRING: return "a string";
	case CONFIG_TYPE_BOOL: return "a boolean";
	case CONFIG_TYPE_ARRAY: return "an array";
	case CONFIG_TYPE_LIST: return "a list";
	default: return "nothing";
	}
}

static int find_section(const char *name)
{
	for (size_t i = 0; i < NSECTIONS; i++)
		if (strcmp(sections[i], name) == 0)
			return (int)i;
	return -1;
}

static int find_key(const char *section, const char *key)
{
	for (int k = 0; k < K_COUNT; k++)
		if (strcmp(keys[k].section, section) == 0 &&
		    strcmp(keys[k].key, key) == 0)
			return k;
	return -1;
}

/* "max_payload, window": the keys of one section, for "unknown" errors. */
static const char *keys_of(char *dst, size_t size, const char *section)
{
	size_t n = 0;

	dst[0] = '\0';
	for (int k = 0; k < K_COUNT && n < size; k++)
		if (strcmp(keys[k].section, section) == 0)
			n += (size_t)snprintf(dst + n, size - n, "%s%s",
					      n ? ", " : "", keys[k].key);
	return dst;
}

static int fail_unknown_key(struct loader *ld, const struct origin *o,
			    const char *section, const char *key)
{
	char path[160], known[160], q[128];

	snprintf(path, sizeof(path), "%s.%s", section, quoted(q, sizeof(q), key));
	return fail(ld, o, path, "unknown setting (known in %s: %s)", section,
		    keys_of(known, sizeof(known), section));
}

static int fail_unknown_section(struct loader *ld, const struct origin *o,
				const char *name)
{
	char q[128];

	return fail(ld, o, quoted(q, sizeof(q), name),
		    "unknown setting (known sections: group, smc, rdmc, sst, members)");
}

/* Strict size syntax: digits, then an optional K, M or G (binary). A
 * value too large for any setting saturates (the range check refuses it,
 * quoting the text as written). */
static bool parse_size(const char *s, int64_t *out)
{
	const uint64_t cap = UINT64_C(1) << 62;
	uint64_t v = 0, mult = 1;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return false;
	for (; isdigit((unsigned char)*p); p++)
		v = v > cap ? cap + 1 : v * 10 + (uint64_t)(*p - '0');
	switch (*p) {
	case '\0': break;
	case 'K': mult = KIB; p++; break;
	case 'M': mult = MIB; p++; break;
	case 'G': mult = GIB; p++; break;
	default: return false;
	}
	if (*p != '\0')
		return false;
	*out = v > cap / mult ? (int64_t)cap : (int64_t)(v * mult);
	return true;
}

/* Strict decimal integer (a leading '-' is read so it can be reported). */
static bool parse_int(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!(isdigit((unsigned char)s[0]) ||
	      (s[0] == '-' && isdigit((unsigned char)s[1]))))
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end != '\0')
		return false;
	*out = v;
	return true;
}

static bool name_chars_ok(const char *s)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
			return false;
	return true;
}

static int check_string(struct loader *ld, int k, const struct origin *o,
			const char *path, const char *s, struct slot *dst)
{
	size_t len = strlen(s);
	bool empty_ok = keys[k].kind == KIND_DEVICE;
	char q[128];

	if ((len == 0 && !empty_ok) || len >= GROUP_CONFIG_NAME_MAX ||
	    !name_chars_ok(s))
		return fail(ld, o, path,
			    "must be %s %d characters from A-Z a-z 0-9 . _ - (got \"%s\")",
			    empty_ok ? "at most" : "1 to",
			    GROUP_CONFIG_NAME_MAX - 1, quoted(q, sizeof(q), s));
	memcpy(dst->str, s, len + 1);
	return 0;
}

/* One of a key's words: its index goes in dst->num. */
static int check_choice(struct loader *ld, int k, const struct origin *o,
			const char *path, const char *s, struct slot *dst)
{
	const char *const *w = keys[k].choices;
	char list[128], q[128];
	size_t at = 0;

	for (int i = 0; w[i]; i++)
		if (!strcmp(s, w[i])) {
			dst->num = i;
			return 0;
		}
	list[0] = '\0';
	for (int i = 0; w[i] && at < sizeof(list); i++)
		at += (size_t)snprintf(list + at, sizeof(list) - at, "%s\"%s\"",
				       i ? (w[i + 1] ? ", " : " or ") : "", w[i]);
	return fail(ld, o, path, "must be %s (got \"%s\")", list,
		    quoted(q, sizeof(q), s));
}

/* A stats_file pattern: '%' only in one "%u", and a file name after the
 * last '/'. Returns NULL or what is wrong. */
static const char *pattern_error(const char *s)
{
	const char *pct = strchr(s, '%');
	size_t len = strlen(s);

	if (s[len - 1] == '/')
		return "must name a file, not a folder";
	if (!pct)
		return NULL;
	if (pct[1] != 'u')
		return "'%' may only appear as \"%u\" (the member's id)";
	if (strchr(pct + 2, '%'))
		return "\"%u\" may appear once, and '%' nowhere else";
	return NULL;
}

/* A path setting: relative to the directory of the file that sets it
 * (a --set: to the working directory). */
static int check_path_setting(struct loader *ld, int k, const struct origin *o,
			      const char *path, const char *s, struct slot *dst)
{
	const char *file = o->rank == FROM_SET ? NULL : o->file;
	const char *slash = file ? strrchr(file, '/') : NULL;
	int dir = slash && s[0] != '/' ? (int)(slash - file) + 1 : 0;
	const char *bad;
	char q[128];

	if (!s[0])
		return fail(ld, o, path, "must name a file (got \"\")");
	if (keys[k].id_pattern && (bad = pattern_error(s)))
		return fail(ld, o, path, "%s (got \"%s\")", bad,
			    quoted(q, sizeof(q), s));
	/* "%u" is looked for in the resolved path: the folder must hold no
	 * '%' of its own. */
	if (keys[k].id_pattern && memchr(file ? file : "", '%', (size_t)dir))
		return fail(ld, o, path, "relative to a folder whose name holds "
			    "'%%': give an absolute path (got \"%s\")",
			    quoted(q, sizeof(q), s));
	if ((size_t)dir + strlen(s) >= GROUP_CONFIG_PATH_MAX)
		return fail(ld, o, path, "the path is longer than %d "
			    "characters (got \"%s\")", GROUP_CONFIG_PATH_MAX - 1,
			    quoted(q, sizeof(q), s));
	snprintf(dst->path, sizeof(dst->path), "%.*s%s", dir, file ? file : "",
		 s);
	return 0;
}

static int fail_range(struct loader *ld, const struct key_def *d,
		      const struct origin *o, const char *path, int64_t v,
		      const char *raw)
{
	char what[64], lo[32], hi[32], got[64];

	if (d->pow2)
		snprintf(what, sizeof(what), "a power of two");
	else if (d->multiple)
		snprintf(what, sizeof(what), "a multiple of %s",
			 size_text(lo, sizeof(lo), (int64_t)d->multiple));
	else
		snprintf(what, sizeof(what), d->kind == KIND_SIZE ?
			 "a size" : "an integer");
	return fail(ld, o, path, "must be %s between %s and %s (got %s)",
		    what, num_text(lo, sizeof(lo), d->kind, d->min),
		    num_text(hi, sizeof(hi), d->kind, d->max),
		    raw ? quoted(got, sizeof(got), raw) :
		    num_text(got, sizeof(got), d->kind, v));
}

/* Bounds of a number; `raw` (NULL for a libconfig integer) is the text
 * as the user wrote it, quoted back in the error. */
static int check_number(struct loader *ld, int k, const struct origin *o,
			const char *path, int64_t v, const char *raw,
			struct slot *dst)
{
	const struct key_def *d = &keys[k];
	bool ok = v >= d->min && v <= d->max;

	if (d->pow2 && (v <= 0 || (v & (v - 1))))
		ok = false;
	if (d->multiple && v % (int64_t)d->multiple)
		ok = false;
	if (!ok)
		return fail_range(ld, d, o, path, v, raw);
	dst->num = v;
	return 0;
}

#define SIZE_SYNTAX "must be a size: a number of bytes, or a string like \"256M\" (suffix K, M or G)"

/* Validate one value from a file into a scratch slot, then commit it. */
static int read_setting(struct loader *ld, int k, const struct origin *o,
			const config_setting_t *s)
{
	const struct key_def *d = &keys[k];
	int type = config_setting_type(s);
	struct slot v = { .set = true, .from = *o };
	char path[64], q[128];
	int rc = 0;

	snprintf(path, sizeof(path), "%s.%s", d->section, d->key);
	switch (d->kind) {
	case KIND_NAME:
	case KIND_DEVICE:
		if (type != CONFIG_TYPE_STRING)
			return fail(ld, o, path, "must be a string (got %s)",
				    type_name(type));
		rc = check_string(ld, k, o, path, config_setting_get_string(s), &v);
		break;
	case KIND_PATH:
		if (type != CONFIG_TYPE_STRING)
			return fail(ld, o, path, "must be a string (got %s)",
				    type_name(type));
		rc = check_path_setting(ld, k, o, path,
					 config_setting_get_string(s), &v);
		break;
	case KIND_CHOICE:
		if (type != CONFIG_TYPE_STRING)
			return fail(ld, o, path, "must be a string (got %s)",
				    type_name(type));
		rc = check_choice(ld, k, o, path, config_setting_get_string(s),
				  &v);
		break;
	case KIND_BOOL:
		if (type != CONFIG_TYPE_BOOL)
			return fail(ld, o, path, "must be true or false (got %s)",
				    type_name(type));
		v.num = config_setting_get_bool(s);
		break;
	case KIND_UINT:
		if (type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64)
			return fail(ld, o, path, "must be an integer (got %s)",
				    type_name(type));
		rc = check_number(ld, k, o, path, config_setting_get_int64(s),
				  NULL, &v);
		break;
	case KIND_SIZE:
		if (type == CONFIG_TYPE_STRING) {
			const char *str = config_setting_get_string(s);
			int64_t n;

			if (!parse_size(str, &n))
				return fail(ld, o, path, SIZE_SYNTAX " (got \"%s\")",
					    quoted(q, sizeof(q), str));
			rc = check_number(ld, k, o, path, n, str, &v);
		} else if (type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64) {
			rc = check_number(ld, k, o, path,
					  config_setting_get_int64(s), NULL, &v);
		} else {
			return fail(ld, o, path, SIZE_SYNTAX " (got %s)",
				    type_name(type));
		}
		break;
	}
	if (rc == 0)
		ld->slot[k] = v;
	return rc;
}

static struct origin origin_at(enum rank rank, const char *file,
			       const config_setting_t *s)
{
	struct origin o = { .rank = rank, .file = file,
			    .line = s ? config_setting_source_line(s) : 0 };
	return o;
}

static int read_section(struct loader *ld, enum rank rank, const char *file,
			const config_setting_t *sec, int si)
{
	const char *name = sections[si];
	struct origin o = origin_at(rank, file, sec);

	if (config_setting_type(sec) != CONFIG_TYPE_GROUP)
		return fail(ld, &o, name, "must be a group { ... } (got %s)",
			    type_name(config_setting_type(sec)));
	if (rank == FROM_GROUP)
		ld->section_line[si] = o.line;
	for (int i = 0; i < config_setting_length(sec); i++) {
		const config_setting_t *s = config_setting_get_elem(sec, (unsigned)i);
		int k = find_key(name, config_setting_name(s));
		struct origin so = origin_at(rank, file, s);
		int rc;

		if (k < 0)
			return fail_unknown_key(ld, &so, name,
						config_setting_name(s));
		rc = read_setting(ld, k, &so, s);
		if (rc)
			return rc;
	}
	return 0;
}

/* One member's integer field, with its bounds. */
static int member_int(struct loader *ld, const struct origin *o,
		      const char *path, const config_setting_t *s, int64_t min,
		      int64_t max, int64_t *out)
{
	int type = config_setting_type(s);

	if (type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64)
		return fail(ld, o, path, "must be an integer (got %s)",
			    type_name(type));
	*out = config_setting_get_int64(s);
	if (*out < min || *out > max)
		return fail(ld, o, path,
			    "must be an integer between %" PRId64 " and %" PRId64
			    " (got %" PRId64 ")", min, max, *out);
	return 0;
}

/* A member's address: an IPv4 literal a member can listen on, stored in
 * canonical form so that duplicates are found however they are written. */
static int member_address(struct loader *ld, const struct origin *o,
			  const char *path, const config_setting_t *s,
			  struct group_member_cfg *m)
{
	const char *str;
	struct in_addr a;
	uint32_t h;
	char q[128];

	if (config_setting_type(s) != CONFIG_TYPE_STRING)
		return fail(ld, o, path, "must be a string (got %s)",
			    type_name(config_setting_type(s)));
	str = config_setting_get_string(s);
	if (inet_pton(AF_INET, str, &a) != 1)
		return fail(ld, o, path,
			    "must be an IPv4 address like \"10.0.0.1\" (got \"%s\")",
			    quoted(q, sizeof(q), str));
	h = ntohl(a.s_addr);
	if (h == 0 || h == UINT32_MAX || (h >> 28) == 0xe)
		return fail(ld, o, path,
			    "must be a unicast IPv4 address (got \"%s\")",
			    quoted(q, sizeof(q), str));
	inet_ntop(AF_INET, &a, m->address, sizeof(m->address));
	return 0;
}

static int read_member(struct loader *ld, const char *file, unsigned idx,
		       const config_setting_t *e)
{
	static const char *const fields[] = { "id", "address", "port" };
	struct group_member_cfg m = { 0 };
	struct origin eo = origin_at(FROM_GROUP, file, e);
	char path[64], q[128];
	int64_t v;
	int rc;

	snprintf(path, sizeof(path), "members[%u]", idx);
	if (config_setting_type(e) != CONFIG_TYPE_GROUP)
		return fail(ld, &eo, path,
			    "must be a group { id = ...; address = ...; port = ...; } (got %s)",
			    type_name(config_setting_type(e)));
	for (int i = 0; i < config_setting_length(e); i++) {
		const config_setting_t *s = config_setting_get_elem(e, (unsigned)i);
		const char *name = config_setting_name(s);
		struct origin so = origin_at(FROM_GROUP, file, s);

		snprintf(path, sizeof(path), "members[%u].%s", idx,
			 quoted(q, sizeof(q), name));
		if (strcmp(name, "id") == 0) {
			rc = member_int(ld, &so, path, s, 0, UINT32_MAX, &v);
			m.id = (uint32_t)v;
		} else if (strcmp(name, "port") == 0) {
			rc = member_int(ld, &so, path, s, 1, 65535, &v);
			m.port = (uint16_t)v;
		} else if (strcmp(name, "address") == 0) {
			rc = member_address(ld, &so, path, s, &m);
		} else if (strcmp(name, "joins") == 0) {
			rc = config_setting_type(s) == CONFIG_TYPE_BOOL ? 0 :
			     fail(ld, &so, path, "must be true or false (got %s)",
				  type_name(config_setting_type(s)));
			m.joins = !rc && config_setting_get_bool(s);
		} else {
			rc = fail(ld, &so, path,
				  "unknown setting (known in a member: id, address, port, joins)");
		}
		if (rc)
			return rc;
	}
	for (size_t f = 0; f < 3; f++) {
		if (config_setting_get_member(e, fields[f]))
			continue;
		snprintf(path, sizeof(path), "members[%u].%s", idx, fields[f]);
		return fail(ld, &eo, path, "missing required setting");
	}
	for (unsigned j = 0; j < idx; j++) {
		const struct group_member_cfg *o = &ld->members[j];

		if (o->id == m.id) {
			snprintf(path, sizeof(path), "members[%u].id", idx);
			return fail(ld, &eo, path,
				    "duplicate id %" PRIu32 " (also members[%u] at line %u)",
				    m.id, j, ld->member_line[j]);
		}
		if (o->port == m.port && strcmp(o->address, m.address) == 0) {
			snprintf(path, sizeof(path), "members[%u]", idx);
			return fail(ld, &eo, path,
				    "duplicate address:port %s:%u (also members[%u] at line %u)",
				    m.address, (unsigned)m.port, j,
				    ld->member_line[j]);
		}
	}
	ld->members[idx] = m;
	ld->member_line[idx] = eo.line;
	return 0;
}

static int read_members(struct loader *ld, const char *file,
			const config_setting_t *list)
{
	struct origin o = origin_at(FROM_GROUP, file, list);
	int n = config_setting_length(list);

	if (config_setting_type(list) != CONFIG_TYPE_LIST)
		return fail(ld, &o, "members",
			    "must be a list ( { id = ...; address = ...; port = ...; }, ... ) (got %s)",
			    type_name(config_setting_type(list)));
	if (n < 1 || n > GROUP_CONFIG_MAX_MEMBERS)
		return fail(ld, &o, "members",
			    "must list between 1 and %d members (got %d)",
			    GROUP_CONFIG_MAX_MEMBERS, n);
	for (int i = 0; i < n; i++) {
		int rc = read_member(ld, file, (unsigned)i,
				     config_setting_get_elem(list, (unsigned)i));
		if (rc)
			return rc;
	}
	ld->nmembers = (uint32_t)n;
	ld->members_seen = true;
	return 0;
}

static int read_root(struct loader *ld, enum rank rank, const char *file,
		     const config_setting_t *root)
{
	for (int i = 0; i < config_setting_length(root); i++) {
		const config_setting_t *s = config_setting_get_elem(root, (unsigned)i);
		const char *name = config_setting_name(s);
		struct origin o = origin_at(rank, file, s);
		int si, rc;

		if (strcmp(name, "members") == 0) {
			if (rank == FROM_NODE)
				return fail(ld, &o, "members",
					    "cannot be overridden by a node file (members come from the group file)");
			rc = read_members(ld, file, s);
		} else if ((si = find_section(name)) >= 0) {
			rc = read_section(ld, rank, file, s, si);
		} else {
			rc = fail_unknown_section(ld, &o, name);
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* The setting a too-big literal belongs to: an integer on that line, with
 * the name written before the literal when there is one. */
static const config_setting_t *int_on_line(const config_setting_t *s,
					   unsigned line, const char *name)
{
	const char *sn = config_setting_name(s);

	if (config_setting_type(s) == CONFIG_TYPE_INT &&
	    config_setting_source_line(s) == line &&
	    (!name[0] || (sn && strcmp(sn, name) == 0)))
		return s;
	if (config_setting_is_aggregate(s))
		for (int i = 0; i < config_setting_length(s); i++) {
			const config_setting_t *f = int_on_line(
				config_setting_get_elem(s, (unsigned)i), line, name);
			if (f)
				return f;
		}
	return NULL;
}

/* "members[1].port": a setting's path, as errors name it. */
static void setting_path(const config_setting_t *s, char *dst, size_t size)
{
	const config_setting_t *parent = config_setting_parent(s);
	char tail[128], q[64];

	if (!parent || !config_setting_parent(parent)) {
		snprintf(dst, size, "%s", config_setting_name(s) ?
			 quoted(q, sizeof(q), config_setting_name(s)) : "");
		return;
	}
	setting_path(parent, tail, sizeof(tail));
	if (config_setting_name(s))
		snprintf(dst, size, "%s.%s", tail,
			 quoted(q, sizeof(q), config_setting_name(s)));
	else
		snprintf(dst, size, "%s[%d]", tail, config_setting_index(s));
}

/* Parse `len` bytes of text; text[len] must be '\0'. */
static int parse_text(struct loader *ld, enum rank rank, const char *file,
		      const char *text, size_t len)
{
	struct group_config_scan sc = { .begin = text };
	const char *nul = memchr(text, '\0', len);
	config_t cf;
	int rc;

	if (nul) {
		unsigned line = 1;

		for (const char *p = text; p < nul; p++)
			line += *p == '\n';
		return squall_error_set(ld->err, -EINVAL,
					"%s:%u: contains a NUL byte", file, line);
	}
	/* Some editors start a UTF-8 file with a byte-order mark, which
	 * libconfig reads as a bare "syntax error". */
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		return squall_error_set(ld->err, -EINVAL,
					"%s:1: the file starts with a UTF-8 byte-order mark (bytes EF BB BF), which libconfig cannot read: save it without one",
					file);
	group_config_scan(text, text + len, &sc);
	if (sc.include_line)
		return squall_error_set(ld->err, -EINVAL,
					"%s:%u: @include is not supported: a group file must be self-contained",
					file, sc.include_line);
	assert(text[len] == '\0');
	config_init(&cf);
	if (config_read_string(&cf, text) != CONFIG_TRUE) {
		char hint[SQUALL_ERRMSG_MAX];

		if (group_config_syntax_hint(&sc, (unsigned)config_error_line(&cf),
					     config_error_text(&cf), hint,
					     sizeof(hint)))
			rc = squall_error_set(ld->err, -EINVAL, "%s:%s", file, hint);
		else
			rc = squall_error_set(ld->err, -EINVAL, "%s:%d: %s", file,
					      config_error_line(&cf),
					      config_error_text(&cf));
	} else if (sc.big_line) {
		const config_setting_t *s = int_on_line(config_root_setting(&cf),
							sc.big_line, sc.big_name);
		struct origin o = { .rank = rank, .file = file, .line = sc.big_line };
		char path[160];

		if (s)
			setting_path(s, path, sizeof(path));
		else
			snprintf(path, sizeof(path), "(integer)");
		rc = fail(ld, &o, path,
			  "%s does not fit in 32 bits and libconfig would truncate it: write %sL (or, for a size, a string like \"64G\")",
			  sc.big, sc.big);
	} else {
		rc = read_root(ld, rank, file, config_root_setting(&cf));
	}
	config_destroy(&cf);
	return rc;
}

/* Read a whole file (at most FILE_MAX bytes) into a NUL-terminated copy. */
static int read_file(struct loader *ld, const char *path, char **text,
		     size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;
	int e;

	if (!f) {
		e = errno;
		return squall_error_set(ld->err, -e, "%s: cannot open: %s",
					path, strerror(e));
	}
	buf = malloc(FILE_MAX + 1);
	if (!buf) {
		fclose(f);
		return squall_error_set(ld->err, -ENOMEM, "%s: out of memory",
					path);
	}
	n = fread(buf, 1, FILE_MAX + 1, f);
	if (ferror(f)) {
		e = errno ? errno : EIO;
		fclose(f);
		free(buf);
		return squall_error_set(ld->err, -e, "%s: cannot read: %s",
					path, strerror(e));
	}
	fclose(f);
	if (n > FILE_MAX) {
		free(buf);
		return squall_error_set(ld->err, -EFBIG,
					"%s: too large for a group file (over 1M)",
					path);
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
}

static int load_file(struct loader *ld, enum rank rank, const char *path)
{
	/* Set on success only; initialised because optimising builds cannot
	 * see that every error path of read_file returns non-zero. */
	char *text = NULL;
	size_t len = 0;
	int rc = read_file(ld, path, &text, &len);

	if (rc)
		return rc;
	rc = parse_text(ld, rank, path, text, len);
	free(text);
	return rc;
}

/* One "section.key=value" from the command line. */
static int apply_set(struct loader *ld, const char *arg)
{
	struct origin o = { .rank = FROM_SET, .set = arg };
	const char *eq, *dot, *value;
	char section[64], key[64], path[160], known[160], q[128];
	struct slot v = { .set = true, .from = o };
	int64_t n;
	int k, rc = 0;

	if (!arg)
		return squall_error_set(ld->err, -EINVAL,
					"--set: no section.key=value given");
	eq = strchr(arg, '=');
	dot = memchr(arg, '.', eq ? (size_t)(eq - arg) : strlen(arg));
	if (!eq || !dot || dot == arg || dot + 1 == eq ||
	    (size_t)(dot - arg) >= sizeof(section) ||
	    (size_t)(eq - dot - 1) >= sizeof(key))
		return squall_error_set(ld->err, -EINVAL,
					"--set %s: expected section.key=value",
					quoted(q, sizeof(q), arg));
	memcpy(section, arg, (size_t)(dot - arg));
	section[dot - arg] = '\0';
	memcpy(key, dot + 1, (size_t)(eq - dot - 1));
	key[eq - dot - 1] = '\0';
	value = eq + 1;
	snprintf(path, sizeof(path), "%s.%s", section, key);
	if (strcmp(section, "members") == 0)
		return fail(ld, &o, quoted(known, sizeof(known), path),
			    "cannot be set from the command line (members come from the group file)");
	if (find_section(section) < 0)
		return fail_unknown_section(ld, &o, section);
	k = find_key(section, key);
	if (k < 0)
		return fail_unknown_key(ld, &o, section, key);
	switch (keys[k].kind) {
	case KIND_NAME:
	case KIND_DEVICE:
		rc = check_string(ld, k, &o, path, value, &v);
		break;
	case KIND_PATH:
		rc = check_path_setting(ld, k, &o, path, value, &v);
		break;
	case KIND_CHOICE:
		rc = check_choice(ld, k, &o, path, value, &v);
		break;
	case KIND_BOOL:
		if (strcmp(value, "true") && strcmp(value, "false"))
			return fail(ld, &o, path,
				    "must be true or false (got \"%s\")",
				    quoted(q, sizeof(q), value));
		v.num = strcmp(value, "true") == 0;
		break;
	case KIND_UINT:
		if (!parse_int(value, &n))
			return fail(ld, &o, path, "must be an integer (got \"%s\")",
				    quoted(q, sizeof(q), value));
		rc = check_number(ld, k, &o, path, n, value, &v);
		break;
	case KIND_SIZE:
		if (!parse_size(value, &n) &&
		    !(value[0] == '-' && parse_int(value, &n)))
			return fail(ld, &o, path, SIZE_SYNTAX " (got \"%s\")",
				    quoted(q, sizeof(q), value));
		rc = check_number(ld, k, &o, path, n, value, &v);
		break;
	}
	if (rc == 0)
		ld->slot[k] = v;
	return rc;
}

static int check_required(struct loader *ld)
{
	for (int k = 0; k < K_COUNT; k++) {
		struct slot *s = &ld->slot[k];
		int si = find_section(keys[k].section);
		char path[64];

		if (s->set)
			continue;
		if (keys[k].required) {
			struct origin o = { .rank = FROM_GROUP,
					    .file = ld->group_path,
					    .line = ld->section_line[si] };

			snprintf(path, sizeof(path), "%s.%s", keys[k].section,
				 keys[k].key);
			return fail(ld, &o, path, "missing required setting");
		}
		s->num = keys[k].def;
		s->str[0] = '\0';
		s->path[0] = '\0';
	}
	if (!ld->members_seen) {
		struct origin o = { .rank = FROM_GROUP, .file = ld->group_path };

		return fail(ld, &o, "members",
			    "missing required setting (a list of { id = ...; address = ...; port = ...; })");
	}
	for (uint32_t i = 0; i < ld->nmembers; i++)
		if (!ld->members[i].joins)
			return 0;
	{
		/* At the first member: each of them says joins = true. */
		struct origin o = { .rank = FROM_GROUP, .file = ld->group_path,
				    .line = ld->member_line[0] };

		return fail(ld, &o, "members", "every member has joins = true: "
			    "the first view needs at least one member without it");
	}
}

/* The source to blame for a check across settings: the most recent
 * override among them, the first one on a tie. */
static int blame(const struct loader *ld, int a, int b, int c)
{
	int best = a;

	if (ld->slot[b].from.rank > ld->slot[best].from.rank)
		best = b;
	if (c >= 0 && ld->slot[c].from.rank > ld->slot[best].from.rank)
		best = c;
	return best;
}

static int fail_at(struct loader *ld, int k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_at(struct loader *ld, int k, const char *fmt, ...)
{
	char path[64], text[SQUALL_ERRMSG_MAX];
	va_list ap;

	snprintf(path, sizeof(path), "%s.%s", keys[k].section, keys[k].key);
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return fail(ld, &ld->slot[k].from, path, "%s", text);
}

static int check_across(struct loader *ld)
{
	int64_t region = ld->slot[K_REGION].num;
	int64_t window = ld->slot[K_WINDOW].num;
	int64_t payload = ld->slot[K_PAYLOAD].num;
	int64_t block = ld->slot[K_BLOCK].num;
	struct group_region_plan plan;
	struct squall_error e;
	char a[32], b[32];

	/* The group's own plan of the region (group/layout.c), so that what
	 * is accepted here is what group_create can lay out. */
	if (group_region_plan(ld->nmembers, (uint32_t)window, (uint32_t)payload,
			      &plan, &e))
		return fail_at(ld, blame(ld, K_WINDOW, K_PAYLOAD, -1), "%s",
			       e.msg);
	if ((uint64_t)region < plan.total)
		return fail_at(ld, blame(ld, K_REGION, K_WINDOW, K_PAYLOAD),
			       "group.region_size %s has no room for what the "
			       "group lays out for %" PRIu32 " members: %" PRIu64
			       " bytes (SMC rings %" PRIu64 " for smc.window %"
			       PRId64 " x smc.max_payload %" PRId64 ", receive "
			       "buffers %" PRIu64 ", SST %" PRIu64 ", SMC headers %"
			       PRIu64 ", and 1M for RDMC and the first leases)",
			       size_text(a, sizeof(a), region), ld->nmembers,
			       plan.total, plan.rings, window, payload, plan.recv,
			       plan.sst, plan.smc_hdr);
	if (ld->slot[K_HUGE].num && region % (int64_t)(2 * MIB))
		return fail_at(ld, blame(ld, K_REGION, K_HUGE, -1),
			       "group.region_size %s must be a multiple of 2M when group.huge_pages is true",
			       size_text(a, sizeof(a), region));
	if (block > region / 2)
		return fail_at(ld, blame(ld, K_BLOCK, K_REGION, -1),
			       "rdmc.block_size %s must be at most half of group.region_size %s",
			       size_text(a, sizeof(a), block),
			       size_text(b, sizeof(b), region));
	if (ld->slot[K_SUSPECT].num <= ld->slot[K_HEARTBEAT].num)
		return fail_at(ld, blame(ld, K_SUSPECT, K_HEARTBEAT, -1),
			       "sst.suspect_timeout_ms %" PRId64
			       " must be greater than sst.heartbeat_ms %" PRId64,
			       ld->slot[K_SUSPECT].num, ld->slot[K_HEARTBEAT].num);
	return 0;
}

static void fill(const struct loader *ld, struct group_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", ld->slot[K_NAME].str);
	snprintf(c->device, sizeof(c->device), "%s", ld->slot[K_DEVICE].str);
	c->region_size = (uint64_t)ld->slot[K_REGION].num;
	c->huge_pages = ld->slot[K_HUGE].num != 0;
	c->connect_timeout_ms = (uint32_t)ld->slot[K_CONNECT].num;
	c->view_timeout_ms = (uint32_t)ld->slot[K_VIEW].num;
	c->copy_threshold = (uint64_t)ld->slot[K_COPY].num;
	c->smc_max_payload = (uint32_t)ld->slot[K_PAYLOAD].num;
	c->smc_window = (uint32_t)ld->slot[K_WINDOW].num;
	c->rdmc_block_size = (uint64_t)ld->slot[K_BLOCK].num;
	c->sst_heartbeat_ms = (uint32_t)ld->slot[K_HEARTBEAT].num;
	c->sst_suspect_timeout_ms = (uint32_t)ld->slot[K_SUSPECT].num;
	c->sst_idle = (uint32_t)ld->slot[K_IDLE].num;
	c->sst_spin_us = (uint32_t)ld->slot[K_SPIN].num;
	c->sst_spin_max_us = (uint32_t)ld->slot[K_SPIN_MAX].num;
	c->peer_access = (uint32_t)ld->slot[K_ACCESS].num;
	snprintf(c->key_file, sizeof(c->key_file), "%s", ld->slot[K_KEY].path);
	snprintf(c->stats_file, sizeof(c->stats_file), "%s",
		 ld->slot[K_STATS].path);
	c->nmembers = ld->nmembers;
	memcpy(c->members, ld->members, sizeof(c->members));
}

/* The group key, when a file names one (key[] untouched otherwise):
 * read now, so that a missing, unsafe or broken key file is an error of
 * the configuration. */
static int load_key(struct loader *ld, uint8_t key[SQUALL_KEY_LEN])
{
	struct squall_error e = { 0 };

	if (ld->slot[K_KEY].path[0] &&
	    squall_key_load(ld->slot[K_KEY].path, key, &e))
		return fail_at(ld, K_KEY, "%s", e.msg);
	return 0;
}

static int finish(struct loader *ld, struct group_config *out)
{
	uint8_t key[SQUALL_KEY_LEN];
	int rc = check_required(ld);

	if (rc == 0)
		rc = check_across(ld);
	if (rc == 0)
		rc = load_key(ld, key);
	if (rc == 0) {
		fill(ld, out);
		snprintf(out->path, sizeof(out->path), "%s", ld->group_path);
		out->has_key = out->key_file[0] != '\0';
		if (out->has_key)
			memcpy(out->key, key, sizeof(out->key));
	}
	explicit_bzero(key, sizeof(key));
	return rc;
}

int group_config_parse_text(const char *name, const char *text, size_t len,
			    struct group_config *out, struct squall_error *err)
{
	struct loader *ld = calloc(1, sizeof(*ld));
	char *copy = malloc(len + 1);
	int rc;

	squall_error_clear(err);
	if (!ld || !copy) {
		free(ld);
		free(copy);
		return squall_error_set(err, -ENOMEM, "%s: out of memory", name);
	}
	/* libconfig reads a C string: keep the caller's bytes, add the NUL. */
	memcpy(copy, text, len);
	copy[len] = '\0';
	ld->err = err;
	ld->group_path = name;
	rc = parse_text(ld, FROM_GROUP, name, copy, len);
	if (rc == 0)
		rc = finish(ld, out);
	free(copy);
	free(ld);
	return rc;
}

static int check_path(struct squall_error *err, const char *what,
		      const char *path)
{
	if (!path || !*path)
		return squall_error_set(err, -EINVAL, "no %s file given", what);
	if (strlen(path) >= GROUP_CONFIG_PATH_MAX)
		return squall_error_set(err, -ENAMETOOLONG,
					"%.64s...: %s file path longer than %d bytes",
					path, what, GROUP_CONFIG_PATH_MAX - 1);
	return 0;
}

int group_config_load_with(const char *path, const char *node_path,
			   const char *const *sets, size_t nsets,
			   struct group_config *out, struct squall_error *err)
{
	struct loader *ld;
	int rc;

	squall_error_clear(err);
	rc = check_path(err, "group", path);
	if (rc == 0 && node_path)
		rc = check_path(err, "node", node_path);
	if (rc == 0 && nsets && !sets)
		rc = squall_error_set(err, -EINVAL, "--set: %zu settings but no list",
				      nsets);
	if (rc)
		return rc;
	ld = calloc(1, sizeof(*ld));
	if (!ld)
		return squall_error_set(err, -ENOMEM, "%s: out of memory", path);
	ld->err = err;
	ld->group_path = path;
	rc = load_file(ld, FROM_GROUP, path);
	if (rc == 0 && node_path)
		rc = load_file(ld, FROM_NODE, node_path);
	for (size_t i = 0; rc == 0 && i < nsets; i++)
		rc = apply_set(ld, sets[i]);
	if (rc == 0)
		rc = finish(ld, out);
	if (rc == 0 && node_path)
		snprintf(out->node_path, sizeof(out->node_path), "%s", node_path);
	free(ld);
	return rc;
}

int group_config_load(const char *path, struct group_config *out,
		      struct squall_error *err)
{
	return group_config_load_with(path, NULL, NULL, 0, out, err);
}

int group_config_member_index(const struct group_config *cfg, uint32_t id)
{
	for (uint32_t i = 0; i < cfg->nmembers; i++)
		if (cfg->members[i].id == id)
			return (int)i;
	return -ENOENT;
}

/* "0, 1, 2" (cut short with "..." when long), for my_id errors. */
static const char *id_list(const struct group_config *cfg, char *dst,
			   size_t size)
{
	size_t n = 0;

	dst[0] = '\0';
	for (uint32_t i = 0; i < cfg->nmembers; i++) {
		if (n + 16 >= size) {
			snprintf(dst + n, size - n, ", ...");
			break;
		}
		n += (size_t)snprintf(dst + n, size - n, "%s%" PRIu32,
				      i ? ", " : "", cfg->members[i].id);
	}
	return dst;
}

/* Launchers' rank variables, in the order they are looked at. */
static const char *const rank_vars[] = {
	"SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
};

long group_config_my_id(const struct group_config *cfg, const char *arg,
			struct squall_error *err)
{
	const char *src = arg ? "the command line" : "SQUALL_MEMBER_ID";
	const char *s = arg ? arg : getenv("SQUALL_MEMBER_ID");
	char ids[200], q[128];
	int64_t v;

	for (size_t i = 0; !s && i < sizeof(rank_vars) / sizeof(rank_vars[0]);
	     i++) {
		const char *r = getenv(rank_vars[i]);

		if (!r)
			continue;
		if (!parse_int(r, &v) || v < 0)
			return squall_error_set(err, -EINVAL,
				"rank \"%s\" (from %s) is not a number from 0",
				quoted(q, sizeof(q), r), rank_vars[i]);
		if (v >= cfg->nmembers)
			return squall_error_set(err, -ENOENT,
				"rank %" PRId64 " (from %s) is beyond the %" PRIu32
				" members of %s: start at most %" PRIu32
				" processes, or give ids", v, rank_vars[i],
				cfg->nmembers, cfg->path, cfg->nmembers);
		/* Rank r is the r-th member of the file. */
		return (long)cfg->members[v].id;
	}
	if (!s)
		return squall_error_set(err, -EINVAL,
					"no member id: give one on the command line, set SQUALL_MEMBER_ID, or start under a launcher that sets a rank (SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK) (members of %s: %s)",
					cfg->path, id_list(cfg, ids, sizeof(ids)));
	if (!parse_int(s, &v) || v < 0 || v > UINT32_MAX)
		return squall_error_set(err, -EINVAL,
					"member id \"%s\" (from %s) is not a number between 0 and %" PRIu32,
					quoted(q, sizeof(q), s), src, UINT32_MAX);
	if (group_config_member_index(cfg, (uint32_t)v) < 0)
		return squall_error_set(err, -ENOENT,
					"member id %" PRId64 " (from %s) is not a member of %s (ids: %s)",
					v, src, cfg->path,
					id_list(cfg, ids, sizeof(ids)));
	return (long)v;
}

/* FNV-1a over a fixed-order, fixed-width encoding of the shared settings,
 * then a final mix so that nearby inputs spread over all 64 bits. */
struct hash {
	uint64_t h;
};

static void hash_bytes(struct hash *h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h->h ^= b[i];
		h->h *= UINT64_C(0x100000001b3);
	}
}

static void hash_u64(struct hash *h, uint64_t v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	hash_bytes(h, b, sizeof(b));
}

static void hash_str(struct hash *h, const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	hash_u64(h, n);
	hash_bytes(h, s, n);
}

int group_config_fingerprint(const struct group_config *cfg, uint64_t *out)
{
	struct hash h = { UINT64_C(0xcbf29ce484222325) };
	uint64_t x;

	if (!cfg || !out || cfg->nmembers == 0 ||
	    cfg->nmembers > GROUP_CONFIG_MAX_MEMBERS)
		return -EINVAL;
	hash_str(&h, "squall-group-v1", 32);
	hash_str(&h, cfg->name, sizeof(cfg->name));
	hash_u64(&h, cfg->region_size);
	hash_u64(&h, cfg->smc_max_payload);
	hash_u64(&h, cfg->smc_window);
	hash_u64(&h, cfg->rdmc_block_size);
	if (cfg->epoch)
		hash_u64(&h, cfg->epoch);
	/* Members that disagree on how peers write cannot talk: the one
	 * that expects windows waits for grants the other never sends. */
	if (cfg->peer_access)
		hash_u64(&h, UINT64_C(0x7065657200) + cfg->peer_access);
	hash_u64(&h, cfg->nmembers);
	for (uint32_t i = 0; i < cfg->nmembers; i++) {
		hash_u64(&h, cfg->members[i].id);
		hash_str(&h, cfg->members[i].address,
			 sizeof(cfg->members[i].address));
		hash_u64(&h, cfg->members[i].port);
		if (cfg->members[i].joins)
			hash_u64(&h, 1);
	}
	x = h.h;
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	*out = x;
	return 0;
}
