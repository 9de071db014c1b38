/*
 * layout.c - from a column declaration to the byte layout of one SST row.
 *
 * Every member computes its row layout from the same declaration with the
 * same rule, so the layout is identical everywhere without exchanging it;
 * a 64-bit fingerprint of the result lets members check that they agree.
 * The rule exists so that an RDMA write of a row never tears a field: every
 * field starts on an 8-byte boundary, a field of at most one cache line
 * never straddles a line (it moves to the next line instead), a larger field
 * starts on a line, and the row is padded to whole cache lines so that rows
 * of different members never share a line. A row opens with a one-line
 * header the SST itself uses (layout fingerprint, heartbeat, suspicions).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <squall/sst.h>

#include "sst/layout.h"

static size_t round_up(size_t v, size_t to)
{
	return (v + to - 1) / to * to;
}

/* FNV-1a, 64 bit: small, fixed and the same on every member. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t fnv1a_u64(uint64_t h, uint64_t v)
{
	unsigned char le[8];

	/* Hash a fixed byte order so hosts of either endianness agree. */
	for (int i = 0; i < 8; i++)
		le[i] = (unsigned char)(v >> (8 * i));
	return fnv1a(h, le, sizeof(le));
}

/* Bytes a column takes in the row, or 0 when its declaration is invalid. */
static size_t column_bytes(const struct sst_column *c)
{
	switch (c->type) {
	case SST_COL_U64:
	case SST_COL_FLAG:
		return c->count <= 1 ? 8 : 0;
	case SST_COL_U64_ARRAY:
		if (c->count == 0 || c->count > SST_ARRAY_MAX_BYTES / 8)
			return 0;
		return (size_t)c->count * 8;
	case SST_COL_BYTES:
		if (c->count == 0 || c->count > SST_ARRAY_MAX_BYTES)
			return 0;
		return round_up(c->count, 8);
	}
	return 0;
}

size_t sst_place_field(size_t off, size_t size)
{
	off = round_up(off, 8);
	if (size > SST_CACHE_LINE)
		return round_up(off, SST_CACHE_LINE);
	if (off % SST_CACHE_LINE + size > SST_CACHE_LINE)
		return round_up(off, SST_CACHE_LINE);
	return off;
}

static int check_column(const struct sst_column *cols, uint32_t i,
			struct squall_error *err)
{
	const struct sst_column *c = &cols[i];

	if (!c->name || !c->name[0] || strlen(c->name) >= SST_COL_NAME_MAX)
		return squall_error_set(err, -EINVAL,
			"sst column %u: name must be 1..%d characters", i,
			SST_COL_NAME_MAX - 1);
	if (column_bytes(c) == 0)
		return squall_error_set(err, -EINVAL,
			"sst column '%s': bad type %d or count %u (arrays hold "
			"1..%d bytes, scalars have count 0 or 1)", c->name,
			(int)c->type, c->count, SST_ARRAY_MAX_BYTES);
	for (uint32_t j = 0; j < i; j++)
		if (strcmp(cols[j].name, c->name) == 0)
			return squall_error_set(err, -EINVAL,
				"sst column '%s' declared twice (columns %u and %u)",
				c->name, j, i);
	return 0;
}

int sst_layout_create(const struct sst_column *cols, uint32_t ncols,
		      struct sst_layout **out, struct squall_error *err)
{
	struct sst_layout *l;
	size_t off = SST_HDR_SIZE;
	uint64_t h = 0xcbf29ce484222325ull;

	if (!out || (ncols && !cols))
		return squall_error_set(err, -EINVAL, "sst layout: no columns given");
	if (ncols > SST_MAX_COLUMNS)
		return squall_error_set(err, -EINVAL,
			"sst layout: %u columns, at most %d", ncols, SST_MAX_COLUMNS);
	for (uint32_t i = 0; i < ncols; i++) {
		int rc = check_column(cols, i, err);
		if (rc)
			return rc;
	}
	l = calloc(1, sizeof(*l) + ncols * sizeof(l->cols[0]));
	if (l)
		l->segs = calloc(ncols + 1, sizeof(*l->segs));
	if (!l || !l->segs) {
		free(l);
		return squall_error_set(err, -ENOMEM, "sst layout: out of memory");
	}
	l->ncols = ncols;
	/* The header: its fields, then its trailer at the end of the line. */
	l->segs[0] = (struct sst_seg){ .lo = 0, .trailer = SST_HDR_SEQ };
	l->nsegs = 1;
	h = fnv1a_u64(h, SST_LAYOUT_RULE_VERSION);
	h = fnv1a_u64(h, ncols);
	for (uint32_t i = 0; i < ncols; i++) {
		struct sst_col_layout *c = &l->cols[i];
		bool opens = i == 0 || !cols[i].with_prev;

		memcpy(c->name, cols[i].name, strlen(cols[i].name) + 1);
		c->type = cols[i].type;
		c->count = cols[i].type == SST_COL_U64 ||
			cols[i].type == SST_COL_FLAG ? 1 : cols[i].count;
		c->size = column_bytes(&cols[i]);
		c->offset = sst_place_field(off, c->size);
		off = c->offset + c->size;
		if (opens)
			l->segs[l->nsegs++].lo = (uint32_t)c->offset;
		c->seg = l->nsegs - 1;
		/* The segment closes after its last column. */
		if (i + 1 == ncols || !cols[i + 1].with_prev) {
			struct sst_seg *sg = &l->segs[c->seg];

			sg->trailer = (uint32_t)sst_place_field(off,
							       SST_TRAILER_SIZE);
			off = sst_seg_end(sg);
		}
		assert(c->offset % 8 == 0);
		assert(c->size > SST_CACHE_LINE ||
		       c->offset / SST_CACHE_LINE ==
		       (c->offset + c->size - 1) / SST_CACHE_LINE);
		h = fnv1a(h, c->name, strlen(c->name) + 1);
		h = fnv1a_u64(h, (uint64_t)c->type);
		h = fnv1a_u64(h, c->count);
		h = fnv1a_u64(h, c->offset);
		h = fnv1a_u64(h, c->size);
		h = fnv1a_u64(h, c->seg);
	}
	for (uint32_t s = 0; s < l->nsegs; s++) {
		h = fnv1a_u64(h, l->segs[s].lo);
		h = fnv1a_u64(h, l->segs[s].trailer);
	}
	l->row_size = round_up(off, SST_CACHE_LINE);
	h = fnv1a_u64(h, l->row_size);
	/* 0 means "no row written yet" in a row header; never use it. */
	l->fingerprint = h ? h : 1;
	*out = l;
	return 0;
}

void sst_layout_destroy(struct sst_layout *l)
{
	if (l)
		free(l->segs);
	free(l);
}

uint32_t sst_layout_ncols(const struct sst_layout *l)
{
	return l->ncols;
}

int sst_layout_find(const struct sst_layout *l, const char *name)
{
	for (uint32_t i = 0; i < l->ncols; i++)
		if (strcmp(l->cols[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

size_t sst_layout_offset(const struct sst_layout *l, uint32_t col)
{
	assert(col < l->ncols);
	return l->cols[col].offset;
}

size_t sst_layout_col_size(const struct sst_layout *l, uint32_t col)
{
	assert(col < l->ncols);
	return l->cols[col].size;
}

uint32_t sst_layout_col_count(const struct sst_layout *l, uint32_t col)
{
	assert(col < l->ncols);
	return l->cols[col].count;
}

enum sst_col_type sst_layout_col_type(const struct sst_layout *l, uint32_t col)
{
	assert(col < l->ncols);
	return l->cols[col].type;
}

size_t sst_layout_row_size(const struct sst_layout *l)
{
	return l->row_size;
}

uint64_t sst_layout_fingerprint(const struct sst_layout *l)
{
	return l->fingerprint;
}

size_t sst_table_size(const struct sst_layout *l, uint32_t nmembers)
{
	return l->row_size * nmembers;
}

uint32_t sst_layout_nsegs(const struct sst_layout *l)
{
	return l->nsegs;
}

uint32_t sst_layout_col_segment(const struct sst_layout *l, uint32_t col)
{
	assert(col < l->ncols);
	return l->cols[col].seg;
}

size_t sst_area_size(const struct sst_layout *l, uint32_t nmembers,
		     const struct sst_options *opt)
{
	uint32_t inflight = opt && opt->max_inflight ? opt->max_inflight :
			    SST_DEFAULT_MAX_INFLIGHT;

	return sst_table_size(l, nmembers) +
	       (size_t)nmembers * inflight * sst_layout_row_size(l);
}
