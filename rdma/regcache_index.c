/*
 * regcache_index.c - the registration cache's lookup structure: an
 * immutable, RCU-published sorted array of entries, cut into chunks.
 *
 * Readers binary-search the chunks' first addresses, then one chunk, and
 * take no lock. A writer never changes a published chunk: it builds new
 * chunks for the part it edits, a new top array pointing at the new chunks
 * and the untouched old ones, publishes the new snapshot and hands the old
 * one to call_rcu(), which frees the replaced chunks and drops the index's
 * reference on removed entries once no reader can still see them. A write
 * costs one or two chunks plus the top array (about sqrt(n) words for the
 * chunk size used), not the whole array.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/regcache_int.h"

/* Chunks are rebuilt about three quarters full so that the next inserts
 * land in the same chunk without splitting it at once. */
#define RC_CHUNK_FILL (RC_CHUNK_MAX * 3 / 4)

struct rc_index *rc_index_empty(void)
{
	return calloc(1, sizeof(struct rc_index));
}

/* Index of the last chunk whose first start is <= a; 0 when a precedes
 * every chunk (an insert before the first entry goes into chunk 0). */
static size_t chunk_floor(const struct rc_index *x, uintptr_t a)
{
	size_t lo = 0, hi = x->nchunks;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (x->first[mid] <= a)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static size_t slot_floor(const struct rc_chunk *ch, uintptr_t a)
{
	size_t lo = 0, hi = ch->n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (ch->start[mid] <= a)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

bool rc_index_floor(const struct rc_index *x, uintptr_t a, size_t *ci,
		    size_t *si)
{
	if (x->nchunks == 0 || a < x->first[0])
		return false;
	*ci = chunk_floor(x, a);
	*si = slot_floor(x->chunks[*ci], a);
	return true;
}

struct regcache_entry *rc_index_next(const struct rc_index *x, size_t *ci,
				     size_t *si)
{
	if (*ci >= x->nchunks)
		return NULL;
	if (++*si >= x->chunks[*ci]->n) {
		*si = 0;
		if (++*ci >= x->nchunks)
			return NULL;
	}
	return x->chunks[*ci]->e[*si];
}

/* A growable array of pointers, for the writer's temporary lists. */
struct ptrvec {
	void **v;
	size_t n, cap;
};

static int ptrvec_push(struct ptrvec *p, void *item)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		void **v = realloc(p->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n++] = item;
	return 0;
}

/* Cut the k entries in `es` into evenly filled new chunks appended to out. */
static int emit_chunks(struct regcache_entry **es, size_t k, struct ptrvec *out)
{
	size_t m = (k + RC_CHUNK_FILL - 1) / RC_CHUNK_FILL;
	size_t done = 0;
	for (size_t j = 0; j < m; j++) {
		size_t take = (k - done) / (m - j);
		struct rc_chunk *ch = aligned_alloc(64, sizeof(*ch));
		if (!ch || ptrvec_push(out, ch)) {
			free(ch);
			return -ENOMEM;
		}
		ch->n = (uint32_t)take;
		for (size_t i = 0; i < take; i++) {
			ch->e[i] = es[done + i];
			ch->start[i] = es[done + i]->start;
			if (i % RC_GROUP == 0)
				ch->sum[i / RC_GROUP] = ch->start[i];
		}
		done += take;
	}
	assert(done == k);
	return 0;
}

/* Rebuild chunks [i, j) of x with the kept entries and the adds assigned to
 * those chunks (add_chunk[] says where each add goes), appending the new
 * chunks to out. *ai walks the adds in order. */
static int rebuild_run(const struct rc_index *x, size_t i, size_t j,
		       struct regcache_entry **add, const size_t *add_chunk,
		       size_t nadd, size_t *ai, struct ptrvec *tmp,
		       struct ptrvec *out)
{
	tmp->n = 0;
	for (size_t c = i; c < j || (x->nchunks == 0 && c == 0); c++) {
		const struct rc_chunk *ch = c < x->nchunks ? x->chunks[c] : NULL;
		size_t s = 0, n = ch ? ch->n : 0;
		for (;;) {
			struct regcache_entry *next = NULL;
			bool from_add = false;
			if (*ai < nadd && add_chunk[*ai] == c)
				next = add[*ai], from_add = true;
			if (s < n && (!next || ch->e[s]->start < next->start)) {
				next = ch->e[s];
				from_add = false;
			}
			if (!next)
				break;
			if (from_add)
				++*ai;
			else
				s++;
			if (!next->unlink && ptrvec_push(tmp, next))
				return -ENOMEM;
		}
		if (x->nchunks == 0)
			break;
	}
	return emit_chunks((struct regcache_entry **)tmp->v, tmp->n, out);
}

static size_t kept_in(const struct rc_chunk *ch)
{
	size_t k = 0;
	for (size_t s = 0; s < ch->n; s++)
		k += !ch->e[s]->unlink;
	return k;
}

static struct rc_index *index_from(struct ptrvec *chunks, size_t nentries)
{
	struct rc_index *nx = calloc(1, sizeof(*nx));
	if (!nx)
		return NULL;
	nx->nchunks = chunks->n;
	nx->nentries = nentries;
	if (chunks->n) {
		nx->first = malloc(chunks->n * sizeof(*nx->first));
		nx->chunks = malloc(chunks->n * sizeof(*nx->chunks));
		if (!nx->first || !nx->chunks) {
			free(nx->first);
			free(nx->chunks);
			free(nx);
			return NULL;
		}
	}
	for (size_t i = 0; i < chunks->n; i++) {
		nx->chunks[i] = chunks->v[i];
		assert(nx->chunks[i]->n > 0);
		nx->first[i] = nx->chunks[i]->start[0];
		assert(i == 0 || nx->first[i] > nx->first[i - 1]);
	}
	return nx;
}

struct rc_index *rc_index_commit(struct rc_index *x,
				 struct regcache_entry **unlinked, size_t nunlinked,
				 struct regcache_entry **add, size_t nadd)
{
	size_t n = x->nchunks;
	bool *dirty = calloc(n + 1, sizeof(*dirty));
	size_t *add_chunk = calloc(nadd + 1, sizeof(*add_chunk));
	struct ptrvec out = {0}, tmp = {0}, dead = {0};
	struct rc_index *nx = NULL;
	struct regcache_entry **dead_e = NULL;
	if (nunlinked)
		dead_e = malloc(nunlinked * sizeof(*dead_e));
	if (!dirty || !add_chunk || (nunlinked && !dead_e))
		goto fail;
	for (size_t k = 0; k < nunlinked; k++) {
		assert(unlinked[k]->unlink && n > 0);
		dirty[chunk_floor(x, unlinked[k]->start)] = true;
	}
	for (size_t k = 0; k < nadd; k++) {
		assert(k == 0 || add[k]->start >= add[k - 1]->end);
		add_chunk[k] = n ? chunk_floor(x, add[k]->start) : 0;
		dirty[add_chunk[k]] = true;
	}
	size_t ai = 0;
	if (n == 0 && nadd > 0) {
		if (rebuild_run(x, 0, 0, add, add_chunk, nadd, &ai, &tmp, &out))
			goto fail;
	}
	for (size_t i = 0; i < n;) {
		if (!dirty[i]) {
			if (ptrvec_push(&out, x->chunks[i]))
				goto fail;
			i++;
			continue;
		}
		size_t j = i, count = 0;
		while (j < n && dirty[j])
			count += kept_in(x->chunks[j++]);
		/* Absorb a clean neighbour when the run would leave a nearly
		 * empty chunk, so that removals do not fragment the index. */
		while (count + nadd < RC_CHUNK_MAX / 4 && j < n) {
			count += kept_in(x->chunks[j]);
			dirty[j++] = true;
		}
		if (rebuild_run(x, i, j, add, add_chunk, nadd, &ai, &tmp, &out))
			goto fail;
		for (size_t c = i; c < j; c++)
			if (ptrvec_push(&dead, x->chunks[c]))
				goto fail;
		i = j;
	}
	assert(ai == nadd);
	nx = index_from(&out, x->nentries - nunlinked + nadd);
	if (!nx)
		goto fail;
	/* From here on nothing fails: hand the garbage to the old snapshot. */
	x->dead_chunks = (struct rc_chunk **)dead.v;
	x->ndead_chunks = dead.n;
	if (nunlinked)
		memcpy(dead_e, unlinked, nunlinked * sizeof(*unlinked));
	x->dead_entries = dead_e;
	x->ndead_entries = nunlinked;
	free(out.v);
	free(tmp.v);
	free(dirty);
	free(add_chunk);
	return nx;
fail:
	/* New chunks are those in out that are not chunks of x. */
	for (size_t k = 0; k < out.n; k++) {
		bool old = false;
		for (size_t c = 0; c < n && !old; c++)
			old = out.v[k] == x->chunks[c];
		if (!old)
			free(out.v[k]);
	}
	free(out.v);
	free(tmp.v);
	free(dead.v);
	free(dead_e);
	free(dirty);
	free(add_chunk);
	return NULL;
}

void rc_index_free(struct rc_index *x, bool deep)
{
	if (!x)
		return;
	if (deep)
		for (size_t i = 0; i < x->nchunks; i++)
			free(x->chunks[i]);
	for (size_t i = 0; i < x->ndead_chunks; i++)
		free(x->dead_chunks[i]);
	free(x->dead_chunks);
	free(x->dead_entries);
	free(x->first);
	free(x->chunks);
	free(x);
}
