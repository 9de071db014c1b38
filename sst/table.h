/*
 * table.h - the inside of a struct sst, shared by the files of sst/.
 */
#ifndef SQUALL_SST_TABLE_H
#define SQUALL_SST_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <squall/config.h>
#include <squall/rdma.h>
#include <squall/sst.h>

#include "sst/layout.h"
#include "sst/predicates.h"

/* wr_id of the SST's requests: a tag, the kind, the peer's rank and, for a
 * signaled write, how many writes its completion accounts for. Requests of
 * other parts on the same completion queue carry other tags. */
#define SST_WRID_TAG 0x53ull /* 'S' */
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

/* A fingerprint that differs is believed only once it has stayed so this
 * long: a word a peer's write is placing may be read half written. */
#define SST_FP_SETTLE_MS 20

struct sst_peer {
	uint32_t id;            /* .cfg member id */
	uint64_t raddr;         /* my row in this peer's copy of the table */
	uint32_t rkey;

	/* Push pipeline, under sst.push_lock. */
	bool failed;            /* no more pushes to it */
	bool post_failed;       /* a post failed: the progress thread
				   raises the suspicion */
	char post_error[SQUALL_ERRMSG_MAX];
	uint32_t lo, hi;        /* pending byte range of my row, lo == hi:
				   nothing pending */
	uint32_t inflight;      /* writes posted, not yet accounted for */
	uint32_t unsignaled;    /* writes since the last signaled one */

	/* Progress thread only. */
	uint64_t hb_seen;       /* last heartbeat value read in its row */
	uint64_t hb_change_ns;  /* when it last changed */
	bool fp_bad;            /* its row carries another fingerprint */
	uint64_t fp_odd_ns;     /* when its fingerprint was first seen
				   differ (0: it does not) */
};

struct sst {
	struct rdma_sq_node *node;
	const struct group_config *cfg;
	const struct sst_layout *layout;
	struct sst_options opt;
	uint32_t n;             /* members */
	uint32_t me;            /* my rank */
	size_t row_size;
	uint8_t *table;         /* n rows, mine at me * row_size */
	uint8_t *my_row;
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
	uint64_t next_hb_ns;
	uint64_t last_check_ns; /* last heartbeat check (0: none yet) */

	/* Counters; the push ones under push_lock, the rest progress-only,
	 * read racily by sst_get_stats (they are statistics). */
	struct sst_stats stats;
};

/* Monotonic clock in nanoseconds. */
uint64_t sst_now_ns(void);

static inline uint64_t *sst_word(const struct sst *t, uint32_t rank, size_t off)
{
	return (uint64_t *)(void *)(t->table + (size_t)rank * t->row_size + off);
}

/* Receive buffer i of member rank (recv_buf_size > 0). */
static inline void *sst_recv_buf(const struct sst *t, uint32_t rank, uint32_t i)
{
	return (uint8_t *)t->opt.recv_area +
	       ((size_t)rank * t->opt.recv_depth + i) * t->opt.recv_buf_size;
}

/* Post receive i for member rank (its buffer, when there are buffers). */
int sst_post_recv(struct sst *t, uint32_t rank, uint32_t i,
		  struct squall_error *err);

/* Push bytes [lo, hi) of my row to every live peer (push.c). wake: the
 * progress thread may be asleep, make the writes signaled so that their
 * completions wake it. */
void sst_push_range(struct sst *t, uint32_t lo, uint32_t hi, bool post);

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
