/*
 * tests/vsync/check.c - the properties of check.h over a history.
 *
 * Two indexes are built once: every delivery of the run sorted by
 * (sender, mseq, member, record order), so that "who delivered this
 * message, where, with what content" is one run of adjacent entries, and
 * each member's deliveries sorted by (epoch, record order), so that a
 * member's sequence of an epoch is one range. A table of epochs says, for
 * each, which member installed it first (lowest id) with which member set
 * and start: the reference the others are compared with.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

const char *const vs_property_name[VS_NPROPS] = {
    [VS_SAME_SEQUENCE] = "same-sequence",
    [VS_NO_DUPLICATE] = "no-duplicate",
    [VS_FIFO] = "fifo",
    [VS_LIVE_SENDER] = "live-sender",
    [VS_DEAD_SENDER] = "dead-sender",
    [VS_VIEWS] = "views",
    [VS_POSITIONS] = "positions",
    [VS_ENDS] = "ends",
    [VS_BARRIERS] = "barriers",
    [VS_DAMAGED] = "damaged",
    [VS_LOG] = "log",
};

/* check_tags() reads seq and epoch of three record kinds alike. */
_Static_assert(offsetof(struct vs_send, seq) == 0 &&
		   offsetof(struct vs_deliver, seq) == 0 &&
		   offsetof(struct vs_barrier, seq) == 0,
	       "seq leads every record");
_Static_assert(offsetof(struct vs_send, epoch) == sizeof(uint64_t) &&
		   offsetof(struct vs_deliver, epoch) == sizeof(uint64_t) &&
		   offsetof(struct vs_barrier, epoch) == sizeof(uint64_t),
	       "epoch follows seq in every record");

/* A delivery in the run-wide index. */
struct ref {
	uint64_t mseq;
	uint32_t sender;
	uint32_t member;
	size_t i; /* in the member's dels[] */
};

/* A delivery in a member's per-epoch order. */
struct eref {
	uint64_t epoch;
	size_t i;
};

/* An epoch as its first installer (lowest id) saw it. */
struct epoch_info {
	uint64_t epoch;
	int owner; /* -1: delivered in, never installed */
	uint64_t ids;
	uint64_t start;
};

struct ctx {
	const struct vs_history *h;
	struct vs_report *r;
	uint64_t seen;	    /* members */
	uint64_t has_views; /* members with a VIEW */
	uint64_t first[VS_MAX_MEMBERS];
	uint64_t last[VS_MAX_MEMBERS];
	uint64_t max_epoch; /* the last epoch of the run */
	struct epoch_info *epochs;
	size_t nepochs;
	struct ref *idx;
	size_t nidx;
	struct eref *by_epoch[VS_MAX_MEMBERS];
	int err;
};

#define BIT(m) (1ULL << (m))
#define for_each_member(m, mask)                                               \
	for (uint32_t m = 0; m < VS_MAX_MEMBERS; m++)                          \
		if ((mask) >> m & 1)

/* The members with an id above m. */
static uint64_t above(uint32_t m)
{
	return m + 1 >= VS_MAX_MEMBERS ? 0 : ~(BIT(m + 1) - 1);
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 16;
	void *q = reallocarray(*p, ncap, size);

	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = ncap;
	return 0;
}

/* Append a formatted line to lines[] (up to max lines). */
static int add_line(char ***lines, size_t *n, size_t *cap, size_t max,
		    const char *prefix, const char *fmt, va_list ap)
{
	char body[1024];
	char *s;

	if (*n >= max)
		return 0;
	vsnprintf(body, sizeof(body), fmt, ap);
	if (grow((void **)lines, cap, *n, sizeof(**lines)))
		return -ENOMEM;
	if (asprintf(&s, "%s%s", prefix, body) < 0)
		return -ENOMEM;
	(*lines)[(*n)++] = s;
	return 0;
}

static void violation(struct ctx *c, enum vs_property p, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void violation(struct ctx *c, enum vs_property p, const char *fmt, ...)
{
	struct vs_report *r = c->r;
	char prefix[32];
	va_list ap;

	r->violations++;
	r->count[p]++;
	snprintf(prefix, sizeof(prefix), "%s: ", vs_property_name[p]);
	va_start(ap, fmt);
	if (add_line(&r->lines, &r->nlines, &r->caplines, r->max_lines, prefix,
		     fmt, ap))
		c->err = -ENOMEM;
	va_end(ap);
}

static void note(struct ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note(struct ctx *c, const char *fmt, ...)
{
	struct vs_report *r = c->r;
	va_list ap;

	va_start(ap, fmt);
	if (add_line(&r->notes, &r->nnotes, &r->capnotes, r->max_lines, "", fmt,
		     ap))
		c->err = -ENOMEM;
	va_end(ap);
}

void vs_report_init(struct vs_report *r, size_t max_lines)
{
	memset(r, 0, sizeof(*r));
	r->max_lines = max_lines;
}

void vs_report_free(struct vs_report *r)
{
	size_t max = r->max_lines;

	for (size_t i = 0; i < r->nlines; i++)
		free(r->lines[i]);
	free(r->lines);
	for (size_t i = 0; i < r->nnotes; i++)
		free(r->notes[i]);
	free(r->notes);
	vs_report_init(r, max);
}

/* "{0,1,3}" */
static const char *set_str(uint64_t mask, char *buf, size_t n)
{
	size_t off = 0;

	off += (size_t)snprintf(buf + off, n - off, "{");
	for_each_member(m, mask)
	{
		if (off < n)
			off += (size_t)snprintf(buf + off, n - off, "%s%u",
						off > 1 ? "," : "", m);
	}
	if (off < n)
		snprintf(buf + off, n - off, "}");
	return buf;
}

static const char *how(const struct ctx *c, uint32_t m)
{
	return vs_how_name(c->h->m[m].end);
}

static const struct vs_deliver *del(const struct ctx *c, uint32_t m, size_t i)
{
	return &c->h->m[m].dels[i];
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_ref(const void *pa, const void *pb)
{
	const struct ref *a = pa, *b = pb;
	int x;

	if ((x = cmp_u64(a->sender, b->sender)))
		return x;
	if ((x = cmp_u64(a->mseq, b->mseq)))
		return x;
	if ((x = cmp_u64(a->member, b->member)))
		return x;
	return cmp_u64(a->i, b->i);
}

static int cmp_eref(const void *pa, const void *pb)
{
	const struct eref *a = pa, *b = pb;
	int x = cmp_u64(a->epoch, b->epoch);

	return x ? x : cmp_u64(a->i, b->i);
}

static int cmp_epoch(const void *pa, const void *pb)
{
	const struct epoch_info *a = pa, *b = pb;

	return cmp_u64(a->epoch, b->epoch);
}

/* First index entry at or after (sender, mseq, member). */
static size_t lower(const struct ctx *c, uint64_t sender, uint64_t mseq,
		    uint64_t member)
{
	size_t lo = 0, hi = c->nidx;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct ref *x = &c->idx[mid];
		int d = cmp_u64(x->sender, sender);

		if (!d)
			d = cmp_u64(x->mseq, mseq);
		if (!d)
			d = cmp_u64(x->member, member);
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool delivered(const struct ctx *c, uint32_t sender, uint64_t mseq,
		      uint32_t member)
{
	size_t i = lower(c, sender, mseq, member);

	return i < c->nidx && c->idx[i].sender == sender &&
	       c->idx[i].mseq == mseq && c->idx[i].member == member;
}

/* The earliest epoch in which any member delivered (sender, mseq), or
 * UINT64_MAX where nobody did. */
static uint64_t first_delivery_epoch(const struct ctx *c, uint32_t sender,
				     uint64_t mseq)
{
	uint64_t e = UINT64_MAX;

	for (size_t i = lower(c, sender, mseq, 0);
	     i < c->nidx && c->idx[i].sender == sender &&
	     c->idx[i].mseq == mseq;
	     i++) {
		const struct vs_deliver *d =
		    del(c, c->idx[i].member, c->idx[i].i);

		if (d->epoch < e)
			e = d->epoch;
	}
	return e;
}

static struct epoch_info *epoch_of(const struct ctx *c, uint64_t e)
{
	struct epoch_info key = {.epoch = e};

	return bsearch(&key, c->epochs, c->nepochs, sizeof(key), cmp_epoch);
}

/* Member m's deliveries tagged e: *first in by_epoch[m], returns how many. */
static size_t epoch_range(const struct ctx *c, uint32_t m, uint64_t e,
			  size_t *first)
{
	const struct eref *a = c->by_epoch[m];
	size_t n = c->h->m[m].ndels, lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid].epoch < e)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	hi = lo;
	while (hi < n && a[hi].epoch == e)
		hi++;
	return hi - lo;
}

static const struct vs_view *installed(const struct ctx *c, uint32_t m,
				       uint64_t e)
{
	const struct vs_member *mm = &c->h->m[m];

	for (size_t i = 0; i < mm->nviews; i++)
		if (mm->views[i].epoch == e)
			return &mm->views[i];
	return NULL;
}

static int ctx_build(struct ctx *c)
{
	const struct vs_history *h = c->h;
	size_t nidx = 0, nep = 0, capep = 0;

	for (uint32_t m = 0; m < VS_MAX_MEMBERS; m++) {
		const struct vs_member *mm = &h->m[m];

		if (!mm->seen)
			continue;
		c->seen |= BIT(m);
		nidx += mm->ndels;
		for (size_t i = 0; i < mm->nviews; i++) {
			uint64_t e = mm->views[i].epoch;

			if (!(c->has_views & BIT(m))) {
				c->first[m] = c->last[m] = e;
				c->has_views |= BIT(m);
			}
			if (e < c->first[m])
				c->first[m] = e;
			if (e > c->last[m])
				c->last[m] = e;
			if (e > c->max_epoch)
				c->max_epoch = e;
			if (grow((void **)&c->epochs, &capep, nep,
				 sizeof(*c->epochs)))
				return -ENOMEM;
			c->epochs[nep++] = (struct epoch_info){.epoch = e};
		}
		/* Epochs that only deliveries name count too (a member
		 * that delivers in a view it never installed). */
		for (size_t i = 0; i < mm->ndels; i++) {
			uint64_t e = mm->dels[i].epoch;

			if (i && e == mm->dels[i - 1].epoch)
				continue;
			if (grow((void **)&c->epochs, &capep, nep,
				 sizeof(*c->epochs)))
				return -ENOMEM;
			c->epochs[nep++] = (struct epoch_info){.epoch = e};
		}
	}
	if (nep) {
		qsort(c->epochs, nep, sizeof(*c->epochs), cmp_epoch);
		size_t u = 0;

		for (size_t i = 0; i < nep; i++)
			if (!u || c->epochs[u - 1].epoch != c->epochs[i].epoch)
				c->epochs[u++] = (struct epoch_info){
				    .epoch = c->epochs[i].epoch, .owner = -1};
		c->nepochs = u;
	}
	for_each_member(m, c->has_views)
	{
		const struct vs_member *mm = &h->m[m];

		for (size_t i = 0; i < mm->nviews; i++) {
			struct epoch_info *ep = epoch_of(c, mm->views[i].epoch);

			if (ep->owner < 0) {
				ep->owner = (int)m;
				ep->ids = mm->views[i].ids;
				ep->start = mm->views[i].start;
			}
		}
	}

	c->idx = calloc(nidx ? nidx : 1, sizeof(*c->idx));
	if (!c->idx)
		return -ENOMEM;
	for_each_member(m, c->seen)
	{
		const struct vs_member *mm = &h->m[m];

		for (size_t i = 0; i < mm->ndels; i++)
			c->idx[c->nidx++] =
			    (struct ref){.mseq = mm->dels[i].mseq,
					 .sender = mm->dels[i].sender,
					 .member = m,
					 .i = i};
		c->by_epoch[m] =
		    calloc(mm->ndels ? mm->ndels : 1, sizeof(struct eref));
		if (!c->by_epoch[m])
			return -ENOMEM;
		for (size_t i = 0; i < mm->ndels; i++)
			c->by_epoch[m][i] =
			    (struct eref){.epoch = mm->dels[i].epoch, .i = i};
		qsort(c->by_epoch[m], mm->ndels, sizeof(struct eref), cmp_eref);
	}
	qsort(c->idx, c->nidx, sizeof(*c->idx), cmp_ref);
	return 0;
}

static void ctx_free(struct ctx *c)
{
	free(c->epochs);
	free(c->idx);
	for (size_t m = 0; m < VS_MAX_MEMBERS; m++)
		free(c->by_epoch[m]);
}

/* 1. Per epoch, prefixes of one sequence; survivors all of it. */
static void check_same_sequence(struct ctx *c)
{
	for (size_t ei = 0; ei < c->nepochs; ei++) {
		uint64_t e = c->epochs[ei].epoch;
		size_t lo[VS_MAX_MEMBERS], n[VS_MAX_MEMBERS];
		uint64_t in = 0, surv = 0;
		int ref = -1;

		for_each_member(m, c->seen)
		{
			n[m] = epoch_range(c, m, e, &lo[m]);
			if (n[m] || installed(c, m, e))
				in |= BIT(m);
			if ((in & BIT(m)) && (c->has_views & BIT(m)) &&
			    c->last[m] > e)
				surv |= BIT(m);
		}
		if (surv) {
			ref = __builtin_ctzll(surv);
		} else {
			for_each_member(m, in)
			{
				if (ref < 0 || n[m] > n[ref])
					ref = (int)m;
			}
		}
		if (ref < 0)
			continue;
		uint32_t r = (uint32_t)ref;

		for_each_member(m, in & ~BIT(r))
		{
			size_t k = n[m] < n[r] ? n[m] : n[r], j;
			const struct vs_deliver *a = NULL, *b = NULL;

			for (j = 0; j < k; j++) {
				a = del(c, r, c->by_epoch[r][lo[r] + j].i);
				b = del(c, m, c->by_epoch[m][lo[m] + j].i);
				if (a->sender != b->sender ||
				    a->mseq != b->mseq)
					break;
			}
			if (j < k) {
				violation(
				    c, VS_SAME_SEQUENCE,
				    "epoch %" PRIu64
				    ": members %u and %u differ at "
				    "position %" PRIu64
				    ": %u delivered (sender %u, #%" PRIu64
				    "), %u delivered (sender %u, #%" PRIu64 ")",
				    e, r, m, a->pos, r, a->sender, a->mseq, m,
				    b->sender, b->mseq);
				continue;
			}
			if (n[m] == n[r])
				continue;
			if (surv & BIT(m)) {
				bool shorter = n[m] < n[r];
				uint32_t longer = shorter ? r : m;
				const struct vs_deliver *x =
				    del(c, longer,
					c->by_epoch[longer][lo[longer] + k].i);

				violation(c, VS_SAME_SEQUENCE,
					  "epoch %" PRIu64
					  ": survivors %u and %u delivered "
					  "%zu and %zu messages: %u %s "
					  "position %" PRIu64
					  " (sender %u, #%" PRIu64 ")",
					  e, r, m, n[r], n[m], m,
					  shorter ? "lacks" : "has an extra",
					  x->pos, x->sender, x->mseq);
			} else if (surv && n[m] > n[r]) {
				const struct vs_deliver *x =
				    del(c, m, c->by_epoch[m][lo[m] + k].i);

				violation(c, VS_SAME_SEQUENCE,
					  "epoch %" PRIu64 ": member %u (%s) "
					  "delivered past the survivors: "
					  "position %" PRIu64
					  " (sender %u, #%" PRIu64
					  ") is beyond the %zu messages "
					  "survivor %u delivered",
					  e, m, how(c, m), x->pos, x->sender,
					  x->mseq, n[r], r);
			}
		}
	}
}

/* 2. Nobody delivers a message twice. */
static void check_no_duplicate(struct ctx *c)
{
	for (size_t a = 0, b; a < c->nidx; a = b) {
		const struct ref *x = &c->idx[a];

		for (b = a + 1; b < c->nidx; b++)
			if (c->idx[b].sender != x->sender ||
			    c->idx[b].mseq != x->mseq ||
			    c->idx[b].member != x->member)
				break;
		if (b - a < 2)
			continue;
		violation(c, VS_NO_DUPLICATE,
			  "member %u delivered (sender %u, #%" PRIu64
			  ") %zu times: at positions %" PRIu64 " and %" PRIu64,
			  x->member, x->sender, x->mseq, b - a,
			  del(c, x->member, x->i)->pos,
			  del(c, x->member, c->idx[a + 1].i)->pos);
	}
}

/* 3. Each sender's mseqs step by one at each member. */
static void check_fifo(struct ctx *c)
{
	for_each_member(m, c->seen)
	{
		const struct vs_member *mm = &c->h->m[m];
		uint64_t next[VS_MAX_MEMBERS], have = 0;

		for (size_t i = 0; i < mm->ndels; i++) {
			const struct vs_deliver *d = &mm->dels[i];
			uint32_t s = d->sender;

			if ((have & BIT(s)) && d->mseq != next[s])
				violation(c, VS_FIFO,
					  "member %u: sender %u's #%" PRIu64
					  " at position %" PRIu64
					  " follows #%" PRIu64
					  " (expected #%" PRIu64 ")",
					  m, s, d->mseq, d->pos, next[s] - 1,
					  next[s]);
			if (!(have & BIT(s)) || d->mseq >= next[s])
				next[s] = d->mseq + 1;
			have |= BIT(s);
		}
	}
}

/* 4. A live sender's messages reach every member owed them. */
static void check_live_sender(struct ctx *c)
{
	uint64_t closed = 0;

	for_each_member(m, c->has_views)
	{
		if (c->h->m[m].end == VS_END_CLOSED)
			closed |= BIT(m);
	}
	for_each_member(s, c->seen)
	{
		const struct vs_member *ms = &c->h->m[s];
		bool live =
		    ms->end == VS_END_CLOSED ||
		    (ms->end == VS_END_RUNNING && (c->has_views & BIT(s)) &&
		     c->last[s] == c->max_epoch);

		if (!live)
			continue;
		for (size_t i = 0; i < ms->nsends; i++) {
			uint64_t se = ms->sends[i].epoch, q = ms->sends[i].mseq;
			/* A message past its view's trim is sent again in a
			 * later view: it is owed as a message of the view in
			 * which the group first delivered it. */
			uint64_t d = first_delivery_epoch(c, s, q);
			uint64_t e = d != UINT64_MAX && d > se ? d : se;
			char from[48] = "";

			if (e != se)
				snprintf(from, sizeof(from),
					 " and delivered from epoch %" PRIu64,
					 e);

			for_each_member(m, closed)
			{
				if (c->first[m] > e)
					continue;
				if (!(c->last[m] > e ||
				      (c->last[m] == e && e == c->max_epoch)))
					continue;
				if (delivered(c, s, q, m))
					continue;
				violation(c, VS_LIVE_SENDER,
					  "sender %u's #%" PRIu64
					  ", sent in epoch %" PRIu64
					  "%s, was never delivered at member "
					  "%u (closed)",
					  s, q, se, from, m);
			}
		}
	}
}

/* 5. A dead sender's prefix is the same at the members that outlived it. */
static void check_dead_sender(struct ctx *c)
{
	for_each_member(s, c->seen & c->has_views)
	{
		const struct vs_member *ms = &c->h->m[s];
		uint64_t L = c->last[s], cmask = 0;

		if (ms->end != VS_END_CRASHED && ms->end != VS_END_STOPPED)
			continue;
		for_each_member(m, c->has_views & ~BIT(s))
		{
			if (c->h->m[m].end == VS_END_CLOSED &&
			    c->first[m] <= L && L < c->last[m])
				cmask |= BIT(m);
		}
		if (!cmask)
			continue;

		/* The reference: a member there from the earliest epoch
		 * (lowest id on ties). A member that joined later holds what
		 * s's messages the group delivered before through its state,
		 * not as deliveries: it is compared with what the reference
		 * delivered from the joiner's first epoch on (rfrom, rhi). */
		uint32_t r = (uint32_t)__builtin_ctzll(cmask);

		for_each_member(m, cmask)
		{
			if (c->first[m] < c->first[r])
				r = m;
		}

		uint64_t cnt[VS_MAX_MEMBERS] = {0}, lo[VS_MAX_MEMBERS],
			 hi[VS_MAX_MEMBERS], rfrom[VS_MAX_MEMBERS] = {0},
			 rhi[VS_MAX_MEMBERS];
		size_t a = lower(c, s, 0, 0), b = lower(c, s + 1, 0, 0);

		for (size_t i = a; i < b; i++) {
			const struct ref *x = &c->idx[i];
			uint32_t m = x->member;

			if (!(cmask & BIT(m)))
				continue;
			/* A duplicate counts once (no-duplicate's). */
			if (cnt[m] && hi[m] == x->mseq)
				continue;
			if (!cnt[m])
				lo[m] = x->mseq;
			hi[m] = x->mseq;
			cnt[m]++;
			if (m != r)
				continue;
			for_each_member(k, cmask)
			{
				if (del(c, r, x->i)->epoch < c->first[k])
					continue;
				rhi[k] = x->mseq;
				rfrom[k]++;
			}
		}

		char ra[40], ma[40], from[64];

		for_each_member(m, cmask & ~BIT(r))
		{
			bool same = cnt[m] ? rfrom[m] && hi[m] == rhi[m]
					   : !rfrom[m];

			if (same)
				continue;
			if (rfrom[m])
				snprintf(ra, sizeof(ra), "up to #%" PRIu64,
					 rhi[m]);
			else
				snprintf(ra, sizeof(ra), "none of it");
			if (cnt[m])
				snprintf(ma, sizeof(ma), "up to #%" PRIu64,
					 hi[m]);
			else
				snprintf(ma, sizeof(ma), "none of it");
			from[0] = 0;
			if (c->first[m] > c->first[r])
				snprintf(from, sizeof(from), " (of what it "
					 "delivered from epoch %" PRIu64 " on)",
					 c->first[m]);
			violation(c, VS_DEAD_SENDER,
				  "sender %u (%s in epoch %" PRIu64
				  "): members %u and %u hold different "
				  "prefixes of it: %u %s, %u %s%s",
				  s, how(c, s), L, r, m, r, ra, m, ma, from);
		}
		for_each_member(m, cmask)
		{
			if (!cnt[m] || c->first[m] > c->first[s])
				continue;
			if (lo[m] == 0 && cnt[m] == hi[m] + 1)
				continue;
			violation(c, VS_DEAD_SENDER,
				  "sender %u (%s in epoch %" PRIu64
				  "): member %u holds %" PRIu64
				  " of its messages, not all of #0..#%" PRIu64,
				  s, how(c, s), L, m, cnt[m], hi[m]);
		}
	}
}

/* 6(d): records tagged with the member's current view. */
static void check_tags(struct ctx *c, uint32_t m, const char *kind,
		       const void *base, size_t n, size_t stride)
{
	const struct vs_member *mm = &c->h->m[m];
	size_t vi = 0, reported = SIZE_MAX;

	for (size_t i = 0; i < n; i++) {
		const uint64_t *rec =
		    (const uint64_t *)((const char *)base + i * stride);
		uint64_t seq = rec[0], epoch = rec[1];

		while (vi < mm->nviews && mm->views[vi].seq < seq)
			vi++;
		if (reported == vi)
			continue;
		if (!vi) {
			violation(c, VS_VIEWS,
				  "member %u recorded a %s in epoch %" PRIu64
				  " before installing any view",
				  m, kind, epoch);
			reported = vi;
		} else if (mm->views[vi - 1].epoch != epoch) {
			violation(
			    c, VS_VIEWS,
			    "member %u recorded a %s tagged epoch %" PRIu64
			    " while in view %" PRIu64,
			    m, kind, epoch, mm->views[vi - 1].epoch);
			reported = vi;
		}
	}
}

/* 6. Views agree. */
static void check_views(struct ctx *c)
{
	char a[VS_MAX_MEMBERS * 3 + 3], b[VS_MAX_MEMBERS * 3 + 3];

	for_each_member(m, c->has_views)
	{
		const struct vs_member *mm = &c->h->m[m];

		for (size_t i = 0; i < mm->nviews; i++) {
			const struct vs_view *v = &mm->views[i];
			const struct epoch_info *ep = epoch_of(c, v->epoch);

			if (i && v->epoch <= mm->views[i - 1].epoch)
				violation(c, VS_VIEWS,
					  "member %u installed epoch %" PRIu64
					  " after epoch %" PRIu64
					  ": epochs must increase",
					  m, v->epoch, mm->views[i - 1].epoch);
			if (!(v->ids & BIT(m)))
				violation(c, VS_VIEWS,
					  "member %u installed epoch %" PRIu64
					  ", whose members %s leave it out",
					  m, v->epoch,
					  set_str(v->ids, a, sizeof(a)));
			if (ep->ids != v->ids)
				violation(c, VS_VIEWS,
					  "epoch %" PRIu64
					  ": member %d installed %s, member %u "
					  "installed %s",
					  v->epoch, ep->owner,
					  set_str(ep->ids, a, sizeof(a)), m,
					  set_str(v->ids, b, sizeof(b)));
		}
	}
	for_each_member(m, c->seen)
	{
		const struct vs_member *mm = &c->h->m[m];

		check_tags(c, m, "send", mm->sends, mm->nsends,
			   sizeof(*mm->sends));
		check_tags(c, m, "delivery", mm->dels, mm->ndels,
			   sizeof(*mm->dels));
		check_tags(c, m, "barrier", mm->bars, mm->nbars,
			   sizeof(*mm->bars));

		/* (e) the sender is in the view of the delivery. */
		const struct vs_view *v = NULL;
		uint64_t told = 0;

		for (size_t i = 0; i < mm->ndels; i++) {
			const struct vs_deliver *d = &mm->dels[i];

			if (!v || v->epoch != d->epoch) {
				v = installed(c, m, d->epoch);
				told = 0;
			}
			if (!v || (v->ids & BIT(d->sender)) ||
			    (told & BIT(d->sender)))
				continue;
			told |= BIT(d->sender);
			violation(c, VS_VIEWS,
				  "member %u delivered (sender %u, #%" PRIu64
				  ") at position %" PRIu64 " in epoch %" PRIu64
				  ", whose view %s does not hold %u",
				  m, d->sender, d->mseq, d->pos, d->epoch,
				  set_str(v->ids, a, sizeof(a)), d->sender);
		}
	}
	/* (f) nobody skips a view that holds it. */
	for (size_t ei = 0; ei < c->nepochs; ei++) {
		const struct epoch_info *ep = &c->epochs[ei];

		if (ep->owner < 0)
			continue;
		for_each_member(m, ep->ids & c->has_views)
		{
			if (c->first[m] < ep->epoch && ep->epoch < c->last[m] &&
			    !installed(c, m, ep->epoch))
				violation(c, VS_VIEWS,
					  "member %u skipped epoch %" PRIu64
					  ", whose view %s (as member %d "
					  "installed it) holds it",
					  m, ep->epoch,
					  set_str(ep->ids, a, sizeof(a)),
					  ep->owner);
		}
	}
}

/* 7. Positions agree. */
static void check_positions(struct ctx *c)
{
	/* (a) one position per message. */
	for (size_t a = 0, b; a < c->nidx; a = b) {
		const struct ref *x = &c->idx[a];
		uint64_t pos = del(c, x->member, x->i)->pos;

		for (b = a + 1; b < c->nidx; b++) {
			const struct ref *y = &c->idx[b];

			if (y->sender != x->sender || y->mseq != x->mseq)
				break;
			if (y->member == c->idx[b - 1].member)
				continue;
			uint64_t p = del(c, y->member, y->i)->pos;

			if (p != pos)
				violation(
				    c, VS_POSITIONS,
				    "(sender %u, #%" PRIu64
				    ") sits at position %" PRIu64
				    " at member %u and at position %" PRIu64
				    " at member %u",
				    x->sender, x->mseq, pos, x->member, p,
				    y->member);
		}
	}
	/* (b) each member counts on from view to view. */
	for_each_member(m, c->seen)
	{
		const struct vs_member *mm = &c->h->m[m];
		const struct vs_view *prev = NULL;
		uint64_t expect = 0;
		size_t vi = 0;

		for (size_t i = 0; i <= mm->ndels; i++) {
			uint64_t seq =
			    i < mm->ndels ? mm->dels[i].seq : UINT64_MAX;

			for (; vi < mm->nviews && mm->views[vi].seq < seq;
			     vi++) {
				const struct vs_view *v = &mm->views[vi];

				if (prev && v->start != expect)
					violation(c, VS_POSITIONS,
						  "member %u's view %" PRIu64
						  " starts at position %" PRIu64
						  ", but its view %" PRIu64
						  " ended at %" PRIu64,
						  m, v->epoch, v->start,
						  prev->epoch, expect);
				expect = v->start;
				prev = v;
			}
			if (i == mm->ndels || !prev)
				continue;
			const struct vs_deliver *d = &mm->dels[i];

			if (d->pos != expect)
				violation(
				    c, VS_POSITIONS,
				    "member %u delivered (sender %u, #%" PRIu64
				    ") at position %" PRIu64
				    ", expected %" PRIu64,
				    m, d->sender, d->mseq, d->pos, expect);
			expect = d->pos + 1;
		}
	}
	/* (c) one start per epoch. */
	for_each_member(m, c->has_views)
	{
		const struct vs_member *mm = &c->h->m[m];

		for (size_t i = 0; i < mm->nviews; i++) {
			const struct vs_view *v = &mm->views[i];
			const struct epoch_info *ep = epoch_of(c, v->epoch);

			if (v->start != ep->start)
				violation(c, VS_POSITIONS,
					  "epoch %" PRIu64
					  " starts at position %" PRIu64
					  " at member %d and at %" PRIu64
					  " at member %u",
					  v->epoch, ep->start, ep->owner,
					  v->start, m);
		}
	}
}

/* 8. Every member ends, once, and not running. */
static void check_ends(struct ctx *c)
{
	for_each_member(m, c->seen)
	{
		const struct vs_member *mm = &c->h->m[m];

		if (!mm->nends) {
			violation(c, VS_ENDS,
				  "member %u's log ends without END: it never "
				  "finished",
				  m);
			continue;
		}
		if (mm->nends > 1)
			violation(c, VS_ENDS, "member %u has %u END records", m,
				  mm->nends);
		if (mm->after_end)
			violation(c, VS_ENDS,
				  "member %u made %" PRIu64
				  " records after its END (%s)",
				  m, mm->after_end, how(c, m));
		if (mm->end == VS_END_RUNNING && !c->h->truncated)
			violation(c, VS_ENDS,
				  "member %u ended running in a run that was "
				  "not cut short: it never finished",
				  m);
	}
}

/* 9. Barrier counts. */
static void check_barriers(struct ctx *c)
{
	uint64_t done = 0;

	for_each_member(m, c->seen)
	{
		const struct vs_member *mm = &c->h->m[m];

		for (size_t i = 0; i < mm->nbars; i++) {
			if (mm->bars[i].k == i + 1)
				continue;
			violation(c, VS_BARRIERS,
				  "member %u passed barrier %" PRIu64
				  " in epoch %" PRIu64
				  " when its barrier %zu was due",
				  m, mm->bars[i].k, mm->bars[i].epoch, i + 1);
			break;
		}
	}
	for_each_member(a, c->has_views)
	{
		const struct vs_member *ma = &c->h->m[a];

		if (ma->end != VS_END_CLOSED || (done & BIT(a)))
			continue;
		uint64_t ka = ma->nbars ? ma->bars[ma->nbars - 1].k : 0;

		for_each_member(b, c->has_views & above(a))
		{
			const struct vs_member *mb = &c->h->m[b];

			if (mb->end != VS_END_CLOSED ||
			    c->first[b] != c->first[a] ||
			    c->last[b] != c->last[a])
				continue;
			done |= BIT(b);
			uint64_t kb = mb->nbars ? mb->bars[mb->nbars - 1].k : 0;

			if (ka != kb)
				violation(c, VS_BARRIERS,
					  "members %u and %u, both in epochs "
					  "%" PRIu64 "..%" PRIu64
					  " and closed, passed %" PRIu64
					  " and %" PRIu64 " barriers",
					  a, b, c->first[a], c->last[a], ka,
					  kb);
		}
	}
}

/* Content: one length and hash per message. */
static void check_damaged(struct ctx *c)
{
	for (size_t a = 0, b; a < c->nidx; a = b) {
		const struct ref *x = &c->idx[a];
		const struct vs_deliver *d = del(c, x->member, x->i);
		uint32_t told = UINT32_MAX;

		for (b = a + 1; b < c->nidx; b++) {
			const struct ref *y = &c->idx[b];

			if (y->sender != x->sender || y->mseq != x->mseq)
				break;
			const struct vs_deliver *e = del(c, y->member, y->i);

			if ((e->len == d->len && e->hash == d->hash) ||
			    told == y->member)
				continue;
			told = y->member;
			violation(c, VS_DAMAGED,
				  "(sender %u, #%" PRIu64
				  ") is damaged: member %u has %" PRIu64
				  " bytes, hash %016" PRIx64
				  ", member %u has %" PRIu64
				  " bytes, hash %016" PRIx64
				  " (position %" PRIu64 ")",
				  x->sender, x->mseq, x->member, d->len,
				  d->hash, y->member, e->len, e->hash, e->pos);
		}
	}
}

/* Records cut by a kill. */
static void check_log(struct ctx *c)
{
	for_each_member(m, c->seen)
	{
		const struct vs_member *mm = &c->h->m[m];

		if (!mm->torn)
			continue;
		if (mm->end == VS_END_CRASHED)
			note(c,
			     "member %u: its log ends in a record cut by its "
			     "crash (%s), ignored",
			     m, mm->torn);
		else
			violation(c, VS_LOG,
				  "member %u's log ends in a cut record (%s), "
				  "but it did not crash (it ended %s)",
				  m, mm->torn, how(c, m));
	}
}

int vs_check(const struct vs_history *h, struct vs_report *r)
{
	struct ctx c = {.h = h, .r = r};

	vs_report_free(r);
	for (size_t i = 0; i < h->nnotes; i++)
		note(&c, "%s", h->notes[i]);
	c.err = ctx_build(&c);
	if (!c.err) {
		check_same_sequence(&c);
		check_no_duplicate(&c);
		check_fifo(&c);
		check_live_sender(&c);
		check_dead_sender(&c);
		check_views(&c);
		check_positions(&c);
		check_ends(&c);
		check_barriers(&c);
		check_damaged(&c);
		check_log(&c);
	}
	r->members = (size_t)__builtin_popcountll(c.seen);
	for (size_t i = 0; i < c.nepochs; i++)
		r->views += c.epochs[i].owner >= 0;
	for_each_member(m, c.seen)
	{
		r->deliveries += h->m[m].ndels;
	}
	ctx_free(&c);
	if (c.err)
		return c.err;
	return r->violations > INT_MAX ? INT_MAX : (int)r->violations;
}
