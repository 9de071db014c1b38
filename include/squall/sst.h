/*
 * sst.h - the shared state table: squall's control plane.
 *
 * One row per member, with columns declared once when the group starts
 * (64-bit counters, flags, small fixed arrays). Every member holds a copy
 * of the whole table in its region; it writes only its own row and pushes
 * it (or a column range of it) into every peer's copy with one-sided RDMA
 * writes. A progress thread evaluates registered predicates over the local
 * copy and runs their triggers, advances a heartbeat column and suspects
 * members whose heartbeat stops or whose writes fail.
 *
 * Row layout: a 64-byte header the SST uses (SST_HDR_*), then the declared
 * columns in declaration order. Every field starts on an 8-byte boundary; a
 * field of at most 64 bytes never straddles a cache line, a larger one
 * starts on a line; rows are padded to whole cache lines. The same
 * declaration gives the same layout on every member, and the same
 * fingerprint.
 *
 * Calls return 0 (or a value) or a negative errno; the library never prints.
 */
#ifndef SQUALL_SST_H
#define SQUALL_SST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <squall/error.h>

#define SST_CACHE_LINE 64
#define SST_COL_NAME_MAX 32
#define SST_MAX_COLUMNS 256
#define SST_ARRAY_MAX_BYTES 4096
/* Members a table can hold: one bit each in the suspicion word. */
#define SST_MAX_MEMBERS 64

/* The row header, at the start of every row. */
#define SST_HDR_FINGERPRINT 0  /* the table's fingerprint, 0 = not pushed yet */
#define SST_HDR_HEARTBEAT 8    /* advanced every heartbeat period */
#define SST_HDR_SUSPECTED 16   /* bit j: this member suspects member rank j */
#define SST_HDR_SIZE 64

/* What a column holds. */
enum sst_col_type {
	SST_COL_U64 = 1,   /* one 64-bit counter or value */
	SST_COL_FLAG,      /* one 64-bit word used as a boolean */
	SST_COL_U64_ARRAY, /* `count` 64-bit words */
	SST_COL_BYTES,     /* `count` bytes, padded to a multiple of 8 */
};

/* One column of the declaration. count: 0 or 1 for scalars; elements for
 * SST_COL_U64_ARRAY; bytes for SST_COL_BYTES (arrays hold at most
 * SST_ARRAY_MAX_BYTES bytes). Names are unique, 1..31 characters. */
struct sst_column {
	const char *name;
	enum sst_col_type type;
	uint32_t count;
};

/* ----- Layout ------------------------------------------------------------ */

struct sst_layout;

/* Compute the row layout of a declaration of ncols columns. Returns 0 with
 * *out set, or -EINVAL (err names the column) or -ENOMEM. */
int sst_layout_create(const struct sst_column *cols, uint32_t ncols,
		      struct sst_layout **out, struct squall_error *err);

/* Free a layout. Safe on NULL. */
void sst_layout_destroy(struct sst_layout *l);

/* Number of declared columns. */
uint32_t sst_layout_ncols(const struct sst_layout *l);

/* Index of the column called name, or -ENOENT. */
int sst_layout_find(const struct sst_layout *l, const char *name);

/* Byte offset of column col from the start of a row, its size in bytes,
 * its element count and its type. col must be < sst_layout_ncols(). */
size_t sst_layout_offset(const struct sst_layout *l, uint32_t col);
size_t sst_layout_col_size(const struct sst_layout *l, uint32_t col);
uint32_t sst_layout_col_count(const struct sst_layout *l, uint32_t col);
enum sst_col_type sst_layout_col_type(const struct sst_layout *l, uint32_t col);

/* Bytes of one row: the header plus every column, a multiple of
 * SST_CACHE_LINE. */
size_t sst_layout_row_size(const struct sst_layout *l);

/* A non-zero 64-bit digest of the declaration and the resulting layout
 * (names, types, counts, offsets, row size, placement rule version).
 * Members compare it to know they agree on the layout. */
uint64_t sst_layout_fingerprint(const struct sst_layout *l);

/* Bytes of a whole table of nmembers rows. */
size_t sst_table_size(const struct sst_layout *l, uint32_t nmembers);

/* ----- Predicates -------------------------------------------------------- */

struct sst;

typedef uint64_t sst_pred_id;

/* When a trigger runs. */
enum sst_pred_kind {
	SST_PRED_ONESHOT = 1, /* the first time the predicate holds; then gone */
	SST_PRED_RECURRENT,   /* every evaluation pass in which it holds */
	SST_PRED_TRANSITION,  /* every pass at which it goes from false to
				 true (it counts as false before its first
				 evaluation) */
};

/* A predicate reads the local table (sst_get and friends) and must not
 * block; a trigger may write and push the member's own row and add or
 * remove predicates, its own included. Both run on the progress thread. */
typedef bool (*sst_pred_fn)(struct sst *t, void *arg);
typedef void (*sst_trigger_fn)(struct sst *t, void *arg);

#endif /* SQUALL_SST_H */
