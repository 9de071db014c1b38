/*
 * tests/vsync/log.c - writing and reading the event log of log.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

struct vs_log {
	int fd;
	uint32_t member;
};

/* Longest record: a view of 64 members is under 300 bytes. */
#define VS_LINE_MAX 1024

struct vs_log *vs_log_open(const char *path, uint32_t member,
			   struct squall_error *err)
{
	if (member >= VS_MAX_MEMBERS) {
		squall_error_set(err, -EINVAL, "%s: member id %u is above %u",
				 path, member, VS_MAX_MEMBERS - 1);
		return NULL;
	}
	struct vs_log *l = malloc(sizeof(*l));

	if (!l) {
		squall_error_set(err, -ENOMEM, "%s: out of memory", path);
		return NULL;
	}
	l->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
		     0644);
	if (l->fd < 0) {
		squall_error_set(err, -errno, "%s: cannot create: %s", path,
				 strerror(errno));
		free(l);
		return NULL;
	}
	l->member = member;
	return l;
}

void vs_log_close(struct vs_log *l)
{
	if (!l)
		return;
	close(l->fd);
	free(l);
}

/* One record, one write(2); a retry after a short write only when the
 * kernel took part of it (a signal, a full disk). */
static int put(struct vs_log *l, const char *buf, int n)
{
	if (n < 0 || n >= VS_LINE_MAX)
		return -EOVERFLOW;
	for (size_t off = 0; off < (size_t)n;) {
		ssize_t w = write(l->fd, buf + off, (size_t)n - off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (size_t)w;
	}
	return 0;
}

int vs_log_view(struct vs_log *l, uint64_t epoch, const uint32_t *ids, size_t n,
		uint64_t start_pos)
{
	char buf[VS_LINE_MAX];
	int off;

	if (n > VS_MAX_MEMBERS)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (ids[i] >= VS_MAX_MEMBERS)
			return -EINVAL;
	off = snprintf(buf, sizeof(buf),
		       "V m=%u e=%" PRIu64 " start=%" PRIu64 " ids=", l->member,
		       epoch, start_pos);
	for (size_t i = 0; i < n; i++)
		off += snprintf(buf + off, sizeof(buf) - (size_t)off, "%s%u",
				i ? "," : "", ids[i]);
	off += snprintf(buf + off, sizeof(buf) - (size_t)off, "\n");
	return put(l, buf, off);
}

int vs_log_send(struct vs_log *l, uint64_t epoch, uint64_t mseq)
{
	char buf[VS_LINE_MAX];

	return put(l, buf,
		   snprintf(buf, sizeof(buf),
			    "S m=%u e=%" PRIu64 " q=%" PRIu64 "\n", l->member,
			    epoch, mseq));
}

int vs_log_deliver(struct vs_log *l, uint64_t epoch, uint64_t pos,
		   uint32_t sender, uint64_t mseq, uint64_t len, uint64_t hash)
{
	char buf[VS_LINE_MAX];

	return put(l, buf,
		   snprintf(buf, sizeof(buf),
			    "D m=%u e=%" PRIu64 " p=%" PRIu64 " s=%u q=%" PRIu64
			    " len=%" PRIu64 " h=%016" PRIx64 "\n",
			    l->member, epoch, pos, sender, mseq, len, hash));
}

int vs_log_barrier(struct vs_log *l, uint64_t epoch, uint64_t k)
{
	char buf[VS_LINE_MAX];

	return put(l, buf,
		   snprintf(buf, sizeof(buf),
			    "B m=%u e=%" PRIu64 " k=%" PRIu64 "\n", l->member,
			    epoch, k));
}

int vs_log_end(struct vs_log *l, enum vs_how how)
{
	char buf[VS_LINE_MAX];

	if (how == VS_END_NONE || how > VS_END_RUNNING)
		return -EINVAL;
	return put(l, buf,
		   snprintf(buf, sizeof(buf), "E m=%u how=%s\n", l->member,
			    vs_how_name(how)));
}

/* The parser: each step takes one field at *p and says what it expected
 * when it fails. */

/* Decimal digits, without sign, up to the next space or the end. */
static bool num(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*p = s;
	*v = x;
	return true;
}

static bool at_end_of_field(const char *p)
{
	return *p == ' ' || *p == '\0';
}

/* " key=NUMBER" */
static bool field(const char **p, const char *key, uint64_t *v)
{
	size_t n = strlen(key);
	const char *s = *p;

	if (*s != ' ' || strncmp(s + 1, key, n) || s[n + 1] != '=')
		return false;
	s += n + 2;
	if (!num(&s, v) || !at_end_of_field(s))
		return false;
	*p = s;
	return true;
}

static bool hex16(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	for (int i = 0; i < 16; i++, s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return false;
		x = x << 4 | d;
	}
	if (!at_end_of_field(s))
		return false;
	*p = s;
	*v = x;
	return true;
}

struct rec {
	char tag;
	uint64_t m, e, a, b, c, d;
	uint64_t h;
	uint32_t ids[VS_MAX_MEMBERS];
	size_t nids;
	enum vs_how how;
};

/* Parse one line into r; returns NULL or what was wrong. */
static const char *parse_rec(const char *line, struct rec *r)
{
	const char *p = line + 1;

	r->tag = line[0];
	if (!r->tag || !strchr("VSDBE", r->tag) || line[1] != ' ')
		return "not a record (V, S, D, B or E and a space)";
	if (!field(&p, "m", &r->m))
		return "expected m=MEMBER";
	if (r->m >= VS_MAX_MEMBERS)
		return "member id above 63";
	switch (r->tag) {
	case 'V': {
		uint64_t mask = 0, id;

		if (!field(&p, "e", &r->e))
			return "expected e=EPOCH after m=";
		if (!field(&p, "start", &r->a))
			return "expected start=POSITION after e=";
		if (strncmp(p, " ids=", 5))
			return "expected ids=ID,ID,... after start=";
		p += 5;
		r->nids = 0;
		do {
			if (r->nids && *p++ != ',')
				return "expected ',' between ids";
			if (!num(&p, &id))
				return "expected a member id in ids=";
			if (id >= VS_MAX_MEMBERS)
				return "member id above 63 in ids=";
			if (mask >> id & 1)
				return "a member id listed twice in ids=";
			mask |= 1ULL << id;
			r->ids[r->nids++] = (uint32_t)id;
		} while (*p == ',');
		break;
	}
	case 'S':
		if (!field(&p, "e", &r->e))
			return "expected e=EPOCH after m=";
		if (!field(&p, "q", &r->a))
			return "expected q=MSEQ after e=";
		break;
	case 'D':
		if (!field(&p, "e", &r->e))
			return "expected e=EPOCH after m=";
		if (!field(&p, "p", &r->a))
			return "expected p=POSITION after e=";
		if (!field(&p, "s", &r->b))
			return "expected s=SENDER after p=";
		if (r->b >= VS_MAX_MEMBERS)
			return "sender id above 63";
		if (!field(&p, "q", &r->c))
			return "expected q=MSEQ after s=";
		if (!field(&p, "len", &r->d))
			return "expected len=BYTES after q=";
		if (strncmp(p, " h=", 3))
			return "expected h=HASH after len=";
		p += 3;
		if (!hex16(&p, &r->h))
			return "expected 16 hex digits in h=";
		break;
	case 'B':
		if (!field(&p, "e", &r->e))
			return "expected e=EPOCH after m=";
		if (!field(&p, "k", &r->a))
			return "expected k=COUNT after e=";
		break;
	case 'E': {
		static const enum vs_how hows[] = {
		    VS_END_CLOSED, VS_END_STOPPED, VS_END_CRASHED,
		    VS_END_RUNNING};

		if (strncmp(p, " how=", 5))
			return "expected how=closed|stopped|crashed|running";
		p += 5;
		r->how = VS_END_NONE;
		for (size_t i = 0; i < sizeof(hows) / sizeof(hows[0]); i++) {
			size_t n = strlen(vs_how_name(hows[i]));

			if (!strncmp(p, vs_how_name(hows[i]), n) &&
			    at_end_of_field(p + n)) {
				r->how = hows[i];
				p += n;
			}
		}
		if (r->how == VS_END_NONE)
			return "expected how=closed|stopped|crashed|running";
		break;
	}
	}
	if (*p)
		return "unexpected text after the record";
	return NULL;
}

static int add_rec(struct vs_history *h, const struct rec *r)
{
	uint32_t m = (uint32_t)r->m;

	switch (r->tag) {
	case 'V':
		return vs_add_view(h, m, r->e, r->ids, r->nids, r->a);
	case 'S':
		return vs_add_send(h, m, r->e, r->a);
	case 'D':
		return vs_add_deliver(h, m, r->e, r->a, (uint32_t)r->b, r->c,
				      r->d, r->h);
	case 'B':
		return vs_add_barrier(h, m, r->e, r->a);
	default:
		return vs_add_end(h, m, r->how);
	}
}

/* The member a cut first record names, if its m= got written whole. */
static int torn_member(const char *line)
{
	const char *p = line + 1;
	uint64_t m;

	if (!line[0] || line[1] != ' ' || strncmp(p, " m=", 3))
		return -1;
	p += 3;
	if (!num(&p, &m) || *p != ' ' || m >= VS_MAX_MEMBERS)
		return -1;
	return (int)m;
}

int vs_parse_file(struct vs_history *h, const char *path,
		  struct squall_error *err)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t n;
	int member = -1, rc = 0;

	if (!f)
		return squall_error_set(err, -errno, "%s: cannot open: %s",
					path, strerror(errno));
	while ((n = getline(&line, &cap, f)) > 0) {
		lineno++;
		if (line[n - 1] != '\n') {
			/* The writer ends every record with its newline: a
			 * line without one was cut short (and getline only
			 * returns one at the end of the file). */
			char where[4096];
			int m = member >= 0 ? member : torn_member(line);

			snprintf(where, sizeof(where), "%s:%zu", path, lineno);
			if (m >= 0)
				rc = vs_history_torn(h, (uint32_t)m, where);
			else
				rc = vs_history_note(
				    h,
				    "%s: a cut first record names no member; "
				    "ignored",
				    where);
			if (rc)
				squall_error_set(err, rc, "%s: out of memory",
						 where);
			break;
		}
		line[--n] = '\0';
		if (line[0] == '#')
			continue;

		struct rec r;
		const char *why = strlen(line) != (size_t)n
				      ? "a NUL byte in the record"
				      : parse_rec(line, &r);

		if (why) {
			rc = squall_error_set(err, -EINVAL,
					      "%s:%zu: %s: \"%.80s\"", path,
					      lineno, why, line);
			break;
		}
		rc = add_rec(h, &r);
		if (rc) {
			squall_error_set(err, rc, "%s:%zu: %s", path, lineno,
					 strerror(-rc));
			break;
		}
		member = (int)r.m;
	}
	if (!rc && ferror(f))
		rc = squall_error_set(err, -EIO, "%s:%zu: read error", path,
				      lineno + 1);
	free(line);
	fclose(f);
	return rc;
}

int vs_log_dump(const struct vs_history *h, uint32_t member, const char *path,
		struct squall_error *err)
{
	if (member >= VS_MAX_MEMBERS)
		return squall_error_set(err, -EINVAL, "member %u above %u",
					member, VS_MAX_MEMBERS - 1);
	const struct vs_member *m = &h->m[member];
	struct vs_log *l = vs_log_open(path, member, err);
	size_t iv = 0, is = 0, id = 0, ib = 0;
	int rc = 0;

	if (!l)
		return err ? err->code : -EIO;
	/* Merge the four arrays (and the END) back into record order. */
	for (uint64_t seq = 0; seq < m->nseq && !rc; seq++) {
		if (iv < m->nviews && m->views[iv].seq == seq) {
			const struct vs_view *v = &m->views[iv++];
			uint32_t ids[VS_MAX_MEMBERS];
			size_t n = 0;

			for (uint32_t i = 0; i < VS_MAX_MEMBERS; i++)
				if (v->ids >> i & 1)
					ids[n++] = i;
			rc = vs_log_view(l, v->epoch, ids, n, v->start);
		} else if (is < m->nsends && m->sends[is].seq == seq) {
			rc = vs_log_send(l, m->sends[is].epoch,
					 m->sends[is].mseq);
			is++;
		} else if (id < m->ndels && m->dels[id].seq == seq) {
			const struct vs_deliver *d = &m->dels[id++];

			rc = vs_log_deliver(l, d->epoch, d->pos, d->sender,
					    d->mseq, d->len, d->hash);
		} else if (ib < m->nbars && m->bars[ib].seq == seq) {
			rc =
			    vs_log_barrier(l, m->bars[ib].epoch, m->bars[ib].k);
			ib++;
		} else if (m->nends && m->end_seq == seq) {
			rc = vs_log_end(l, m->end);
		}
	}
	vs_log_close(l);
	if (rc)
		squall_error_set(err, rc, "%s: %s", path, strerror(-rc));
	return rc;
}
