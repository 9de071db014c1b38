/*
 * table.h - the inside of a struct sst, shared by the files of sst/.
 */
#ifndef SQUALL_SST_TABLE_H
#define SQUALL_SST_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <squall/rdma.h>
#include <squall/sst.h>

#include "sst/layout.h"
#include "sst/predicates.h"
#include "sst/seal.h"
#include "rdma/tags.h"

/* wr_id of the SST's requests: a tag, the kind, the peer's rank and, for a
 * signaled write, how many writes its completion accounts for. Requests of
 * other parts on the same completion queue carry other tags. */
#define SST_WRID_TAG SQUALL_WR_TAG_SST
#define SST_WR_WRITE 1u
#define SST_WR_RECV 2u

static inline uint64_t sst_wrid(unsigned kind, uint32_t rank, uint32_t covered)
{
	return SST_WRID_TAG << 56 | (uint64_t)kind << 48 |
	       (uint64_t)(rank & 0xffff) << 32 | covered;
}

static inline bool sst_wrid_is_ours(uint64_t wr_id)
{
	return wr_id >> 56 == SST_WRID_TAG;
}

static inline unsigned sst_wrid_kind(uint64_t wr_id)
{
	return (unsigned)(wr_id >> 48) & 0xff;
}

static inline uint32_t sst_wrid_rank(uint64_t wr_id)
{
	return (uint32_t)(wr_id >> 32) & 0xffff;
}

static inline uint32_t sst_wrid_covered(uint64_t wr_id)
{
	return (uint32_t)wr_id;
}

struct sst_peer {
	uint32_t id;            /* member id (the node's) */
	uint64_t raddr;         /* my row in this peer's copy of the table */
	uint32_t rkey;

	/* Push pipeline, under sst.push_lock. */
	bool failed;            /* no more pushes to it */
	bool post_failed;       /* a post failed: the progress thread
				   raises the suspicion */
	char post_error[SQUALL_ERRMSG_MAX];
	uint32_t slo, shi;      /* pending segments [slo, shi) of my row,
				   slo == shi: nothing pending */
	bool loud;              /* the pending write must carry an
				   immediate (more than a heartbeat) */
	uint32_t inflight;      /* writes posted, not yet accounted for */
	uint32_t unsignaled;    /* writes since the last signaled one */
	uint64_t posted;        /* writes ever posted: the next one goes
				   from slot posted % max_inflight */
	uint64_t done;          /* writes known complete (posted - inflight,
				   as completions account for them) */

	/* Progress thread only (fp_bad is read by sst_wait_peers too). */
	uint64_t hb_seen;       /* last heartbeat value taken from its row */
	uint64_t hb_change_ns;  /* when it last changed */
	bool fp_bad;            /* its row carries another fingerprint */
	uint64_t torn;          /* its segments that failed their check */
	uint64_t refused_until; /* sst_refused: no suspicion of its own
				   until then (ns; 0: none) */
};

struct sst {
	struct rdma_sq_node *node;
	const struct sst_layout *layout;
	struct sst_options opt;
	uint32_t n;             /* members */
	uint32_t me;            /* my rank */
	size_t row_size;
	uint8_t *table;         /* n rows, mine at me * row_size; peers'
				   rows are where their writes land */
	uint8_t *my_row;        /* the row this member writes (never sent
				   as it is: pushes send sealed copies) */
	uint8_t *slots;         /* n * max_inflight snapshot slots of one
				   row each, in the region after the table */
	uint8_t *valid;         /* n rows: the last copy of each peer
				   segment that validated (progress thread
				   writes, any thread reads) */
	uint64_t *scratch;      /* one row of words for sst_seal_take */
	uint64_t *keys;         /* n * nsegs: the key of each segment */
	uint64_t *seg_seq;      /* nsegs: the last sequence sealed, under
				   push_lock */
	uint64_t *torn_since;   /* n * nsegs: when the segment last began
				   failing its check (0: it is not),
				   progress thread only */
	uint32_t nsegs;
	uint64_t fingerprint;   /* of the layout and the member count */

	pthread_mutex_t push_lock;
	struct sst_peer peers[SST_MAX_MEMBERS];

	struct sst_preds preds;

	pthread_t thread;
	bool started;
	atomic_bool stop;
	/* The sleep handshake with pushers (see progress.c). */
	atomic_bool asleep;
	atomic_uint_fast64_t local_pushes;

	/* Progress thread only. */
	uint64_t known;         /* ranks suspected (reported once each) */
	char refusal[SQUALL_ERRMSG_MAX]; /* the first sst_refused why */
	uint64_t next_hb_ns;
	uint64_t last_check_ns; /* last heartbeat check (0: none yet) */
	uint64_t events_ns;     /* last rdma_sq_want_events() */

	/* Counters; the push ones under push_lock, the rest progress-only,
	 * read racily by sst_get_stats (they are statistics). */
	struct sst_stats stats;
};

/* Monotonic clock in nanoseconds. */
uint64_t sst_now_ns(void);

/* A word of member rank's row as this member reads it: its own row, or
 * the last validated copy of a peer's. Never a peer's landing bytes. */
static inline uint64_t *sst_word(const struct sst *t, uint32_t rank, size_t off)
{
	uint8_t *rows = rank == t->me ? t->table : t->valid;

	return (uint64_t *)(void *)(rows + (size_t)rank * t->row_size + off);
}

static inline uint64_t sst_key(const struct sst *t, uint32_t rank,
			       uint32_t seg)
{
	return t->keys[(size_t)rank * t->nsegs + seg];
}

/* Receive buffer i of member rank in o's recv_area (recv_buf_size > 0). */
static inline void *sst_recv_slot(const struct sst_options *o, uint32_t rank,
				  uint32_t i)
{
	return (uint8_t *)o->recv_area +
	       ((size_t)rank * o->recv_depth + i) * o->recv_buf_size;
}

static inline void *sst_recv_buf(const struct sst *t, uint32_t rank, uint32_t i)
{
	return sst_recv_slot(&t->opt, rank, i);
}

/* Post receive i for member rank (its buffer, when there are buffers). */
int sst_post_recv(struct sst *t, uint32_t rank, uint32_t i,
		  struct squall_error *err);

/* Push segments [slo, shi) of my row to every live peer, or (post false)
 * only mark them for the next push (push.c). loud: the writes carry an
 * immediate, which wakes a sleeping peer (all but pure heartbeats). */
void sst_push_segs(struct sst *t, uint32_t slo, uint32_t shi, bool loud,
		   bool post);

/* Take whatever whole, newer segments stand in peer rank's landing row
 * into its validated copy (table.c). Progress thread only. Returns how
 * many segments other than the header were taken. */
unsigned sst_take_row(struct sst *t, uint32_t rank);

/* Completion of one of my writes to peer rank (push.c). */
void sst_write_done(struct sst *t, uint32_t rank, uint32_t covered);

/* Post pending ranges that were held back (push.c). Returns how many
 * writes were posted. */
unsigned sst_flush_pending(struct sst *t);

/* Stop pushing to rank; returns false when it already was stopped. */
bool sst_peer_stop(struct sst *t, uint32_t rank);

/* The progress thread (progress.c). */
void *sst_progress_main(void *arg);

#endif /* SQUALL_SST_TABLE_H */
