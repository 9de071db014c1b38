/*
 * tests/vsync/history.c - the in-memory history: per-member arrays that
 * grow by doubling, so a long run (7 members, 100k messages each) costs
 * one allocation per doubling and no fixed cap.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"

const char *vs_how_name(enum vs_how how)
{
	switch (how) {
	case VS_END_CLOSED:
		return "closed";
	case VS_END_STOPPED:
		return "stopped";
	case VS_END_CRASHED:
		return "crashed";
	case VS_END_RUNNING:
		return "running";
	case VS_END_NONE:
		break;
	}
	return "without END";
}

void vs_history_init(struct vs_history *h)
{
	memset(h, 0, sizeof(*h));
}

void vs_history_free(struct vs_history *h)
{
	for (size_t i = 0; i < VS_MAX_MEMBERS; i++) {
		struct vs_member *m = &h->m[i];

		free(m->views);
		free(m->sends);
		free(m->dels);
		free(m->bars);
		free(m->torn);
	}
	for (size_t i = 0; i < h->nnotes; i++)
		free(h->notes[i]);
	free(h->notes);
	memset(h, 0, sizeof(*h));
}

/* Make room for one more element of `size` bytes in *p (n used, *cap
 * allocated). */
static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 64;
	void *q = reallocarray(*p, ncap, size);

	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = ncap;
	return 0;
}

/* The member a new record belongs to, or NULL for an id above 63. */
static struct vs_member *member_for_record(struct vs_history *h, uint32_t id)
{
	if (id >= VS_MAX_MEMBERS)
		return NULL;
	struct vs_member *m = &h->m[id];

	m->seen = true;
	if (m->nends)
		m->after_end++;
	return m;
}

int vs_add_view(struct vs_history *h, uint32_t member, uint64_t epoch,
		const uint32_t *ids, size_t n, uint64_t start_pos)
{
	uint64_t mask = 0;

	if (member >= VS_MAX_MEMBERS)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (ids[i] >= VS_MAX_MEMBERS || (mask >> ids[i] & 1))
			return -EINVAL;
		mask |= 1ULL << ids[i];
	}
	struct vs_member *m = &h->m[member];

	if (grow((void **)&m->views, &m->capviews, m->nviews,
		 sizeof(*m->views)))
		return -ENOMEM;
	member_for_record(h, member);
	m->views[m->nviews++] = (struct vs_view){
	    .seq = m->nseq++, .epoch = epoch, .start = start_pos, .ids = mask};
	return 0;
}

int vs_add_send(struct vs_history *h, uint32_t member, uint64_t epoch,
		uint64_t mseq)
{
	if (member >= VS_MAX_MEMBERS)
		return -EINVAL;
	struct vs_member *m = &h->m[member];

	if (grow((void **)&m->sends, &m->capsends, m->nsends,
		 sizeof(*m->sends)))
		return -ENOMEM;
	member_for_record(h, member);
	m->sends[m->nsends++] =
	    (struct vs_send){.seq = m->nseq++, .epoch = epoch, .mseq = mseq};
	return 0;
}

int vs_add_deliver(struct vs_history *h, uint32_t member, uint64_t epoch,
		   uint64_t pos, uint32_t sender, uint64_t mseq, uint64_t len,
		   uint64_t hash)
{
	if (member >= VS_MAX_MEMBERS || sender >= VS_MAX_MEMBERS)
		return -EINVAL;
	struct vs_member *m = &h->m[member];

	if (grow((void **)&m->dels, &m->capdels, m->ndels, sizeof(*m->dels)))
		return -ENOMEM;
	member_for_record(h, member);
	m->dels[m->ndels++] = (struct vs_deliver){.seq = m->nseq++,
						  .epoch = epoch,
						  .pos = pos,
						  .mseq = mseq,
						  .len = len,
						  .hash = hash,
						  .sender = sender};
	return 0;
}

int vs_add_barrier(struct vs_history *h, uint32_t member, uint64_t epoch,
		   uint64_t k)
{
	if (member >= VS_MAX_MEMBERS)
		return -EINVAL;
	struct vs_member *m = &h->m[member];

	if (grow((void **)&m->bars, &m->capbars, m->nbars, sizeof(*m->bars)))
		return -ENOMEM;
	member_for_record(h, member);
	m->bars[m->nbars++] =
	    (struct vs_barrier){.seq = m->nseq++, .epoch = epoch, .k = k};
	return 0;
}

int vs_add_end(struct vs_history *h, uint32_t member, enum vs_how how)
{
	if (member >= VS_MAX_MEMBERS || how == VS_END_NONE ||
	    how > VS_END_RUNNING)
		return -EINVAL;
	struct vs_member *m = &h->m[member];

	m->seen = true;
	/* The first END is the member's end; any further one is counted
	 * (the checker reports it), like any other record after it. */
	if (!m->nends) {
		m->end = how;
		m->end_seq = m->nseq;
	}
	m->nends++;
	m->nseq++;
	return 0;
}

int vs_mark_crashed(struct vs_history *h, uint32_t member)
{
	if (member >= VS_MAX_MEMBERS)
		return -EINVAL;
	struct vs_member *m = &h->m[member];

	m->harness_crashed = true;
	if (!m->nends)
		return vs_add_end(h, member, VS_END_CRASHED);
	if (m->end != VS_END_CRASHED)
		return vs_history_note(
		    h,
		    "member %u: the harness says it crashed, "
		    "its log says it ended %s; the log stands",
		    member, vs_how_name(m->end));
	return 0;
}

int vs_history_note(struct vs_history *h, const char *fmt, ...)
{
	char *s;
	va_list ap;

	if (grow((void **)&h->notes, &h->capnotes, h->nnotes,
		 sizeof(*h->notes)))
		return -ENOMEM;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	h->notes[h->nnotes++] = s;
	return 0;
}

int vs_history_torn(struct vs_history *h, uint32_t member, const char *where)
{
	if (member >= VS_MAX_MEMBERS)
		return -EINVAL;
	char *s = strdup(where);

	if (!s)
		return -ENOMEM;
	free(h->m[member].torn);
	h->m[member].torn = s;
	h->m[member].seen = true;
	return 0;
}

uint64_t vs_hash(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t x = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		x ^= p[i];
		x *= 0x100000001b3ULL;
	}
	return x;
}
