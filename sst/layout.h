/*
 * layout.h - internals of the SST row layout (sst/layout.c).
 */
#ifndef SQUALL_SST_LAYOUT_INTERNAL_H
#define SQUALL_SST_LAYOUT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <squall/sst.h>

/* Changes whenever the placement rule changes, so members built with
 * different rules get different fingerprints. */
#define SST_LAYOUT_RULE_VERSION 2

/* Snapshot slots per peer when sst_options.max_inflight is 0. */
#define SST_DEFAULT_MAX_INFLIGHT 16

struct sst_col_layout {
	char name[SST_COL_NAME_MAX];
	enum sst_col_type type;
	uint32_t count;   /* elements (words for arrays, bytes for SST_COL_BYTES) */
	size_t offset;    /* from the start of the row */
	size_t size;      /* bytes, a multiple of 8 */
	uint32_t seg;     /* the segment it belongs to */
};

/* A segment: the unit a push writes and a reader validates. Its bytes are
 * [lo, trailer) followed by the 16-byte trailer {seq, check}; a push of
 * it writes [lo, trailer + SST_TRAILER_SIZE) in one write. Segment 0 is
 * the row header. */
struct sst_seg {
	uint32_t lo;
	uint32_t trailer;
};

static inline uint32_t sst_seg_end(const struct sst_seg *s)
{
	return s->trailer + SST_TRAILER_SIZE;
}

struct sst_layout {
	uint32_t ncols;
	uint32_t nsegs;
	size_t row_size;
	uint64_t fingerprint;
	struct sst_seg *segs;   /* nsegs, in row order */
	struct sst_col_layout cols[];
};

/* Where a field of `size` bytes goes when the row is filled up to `off`:
 * the first 8-byte boundary at or after off from which it does not cross a
 * cache line, or the next line boundary for fields larger than a line. */
size_t sst_place_field(size_t off, size_t size);

#endif /* SQUALL_SST_LAYOUT_INTERNAL_H */
