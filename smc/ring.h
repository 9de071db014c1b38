/*
 * smc/ring.h - the SMC ring: record layout, geometry, the sender's side
 * (reserve records, plan RDMA writes of runs of them) and the receiver's
 * side (accept a completed run, release slots).
 *
 * Each sender owns one ring in every receiver's region. The ring is a byte
 * ring of `cap` bytes holding at most `window` records. A record is a
 * 16-byte header followed by the payload, padded to 8 bytes. Records are
 * packed, so a run of consecutive records is one contiguous range of the
 * remote ring and goes out as ONE RDMA write whose scatter/gather list
 * alternates header cells (a small registered header area on the sender)
 * and payloads (the application's leased buffers): no payload is copied.
 *
 * How a receiver knows a run is whole (the "stamp"): every run is written
 * with RDMA WRITE_WITH_IMM, and the receiver learns of it only from the
 * completion of that write on its receive queue. The immediate carries a
 * tag, the number of records in the run and the low bits of the first
 * record's number. Why not poll a stamp word at the end of the slot (the
 * last-word stamp of the original SMC design):
 *   - The InfiniBand spec does not define the order in which the bytes of
 *     one RDMA WRITE are placed in the responder's memory. Polling the last
 *     word assumes increasing-address placement; ibv_query_qp_data_in_order()
 *     exists precisely because only some devices promise it (rxe does not
 *     advertise it). Derecho's SMC relied on it and broke on a transport that
 *     placed the data differently (libfabric's TCP provider, Derecho issue
 *     #47): receivers saw a stamp before the payload.
 *   - A second, small "counter" write after the data write on the same RC
 *     QP is ordered on rxe (one kernel task places packets in PSN order)
 *     and on NICs that place in order, but not on NICs that place data out
 *     of order (e.g. ConnectX out-of-order placement under adaptive
 *     routing), where only completions stay in order.
 *   - What the spec does guarantee on an RC QP is that a responder
 *     completion for an inbound message (RDMA WRITE with immediate, SEND) is
 *     generated only after all data of that message, and of every message
 *     before it on the QP, has been placed; and that completions are
 *     reported in order. So a completion is a stamp that holds on every
 *     conforming RC implementation, Soft-RoCE included, whatever the
 *     placement order. It also costs nothing extra on the wire: the
 *     immediate rides in the data write itself, one per run, not one per
 *     message.
 * The header's round number is then only a consistency check: a record
 * whose round is not the expected one is a protocol error (-EPROTO), never
 * a "not yet".
 *
 * The seal: the round goes into the header XORed with a 64-bit seal that
 * both sides share and that changes from one use of the ring memory to the
 * next (the group derives it from the view's epoch). A ring is not cleared
 * before it is used: what an earlier view (or anything else) left in the
 * memory decodes, under this view's seal, to a round no sender of this
 * view wrote there, so a run whose bytes went elsewhere (a write the
 * sender misdirected) still fails the check instead of passing on stale
 * records that happen to sit at the expected offset.
 *
 * Wrap-around: a record never straddles the end of the ring. Both sides
 * apply one deterministic rule that does not depend on the next record's
 * length (which the receiver cannot know in advance): when fewer than
 * `stride` bytes (the largest record) remain before the end, the next
 * record starts at offset 0. Offsets are kept as 64-bit "virtual" offsets
 * that only grow; the physical offset is virtual % cap.
 */
#ifndef SQUALL_SMC_RING_H
#define SQUALL_SMC_RING_H

#include <assert.h>
#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rdma/tags.h"

#define SMC_REC_ALIGN	 8u
#define SMC_REC_HDR_SIZE 16u
/* A header cell in the sender's header area: 8 bytes of padding room in
 * front of the 16-byte header, so that the padding of the previous record in
 * the same write and this header are one scatter/gather entry. */
#define SMC_HDR_CELL	 24u
#define SMC_HDR_CELL_PAD 8u

/* Record flags. */
#define SMC_REC_NULL 0x1u /* no payload; covers nrounds rounds */
/* Bits 8..15: the message's kind, chosen by the layer above (the group
 * tells application messages from RDMC announcements by it); SMC carries
 * it and hands it to the delivery upcall. */
#define SMC_REC_KIND_SHIFT 8u
#define SMC_REC_KIND_MASK 0xff00u

/* Rounds one null record covers at most (the header field is 16 bits). */
#define SMC_NULL_MAX_ROUNDS 65535u

/* The immediate of an SMC write: tag(4) | records in the run(12) |
 * low 16 bits of the first record number(16). The tag lets the transport
 * share a receive CQ with other users of WRITE_WITH_IMM. */
#define SMC_IMM_TAG (SQUALL_IMM_SMC_FIRST >> 28)
#define SMC_IMM_MAX_RECS 4095u

/* Largest scatter/gather list a write plan uses (rxe allows 32; mlx5 30;
 * the transport passes the device's limit, capped here). */
#define SMC_MAX_SGE 32u

/* The header as it sits in the ring (little-endian on the wire). */
struct smc_rec_hdr {
	uint64_t round;	  /* first round (per-sender index) it covers */
	uint32_t len;	  /* payload bytes, 0 for a null record */
	uint16_t nrounds; /* rounds covered: 1 for a message */
	uint16_t flags;	  /* SMC_REC_* */
};
_Static_assert(sizeof(struct smc_rec_hdr) == SMC_REC_HDR_SIZE,
	       "ring header is 16 bytes");

/* Sizes of one sender's ring; identical in every receiver. */
struct smc_ring_geom {
	uint32_t window;      /* records a ring holds at most */
	uint32_t max_payload; /* bytes */
	uint64_t stride;      /* largest record: header + padded max_payload */
	uint64_t cap;	      /* ring bytes: (window + 1) * stride */
};

static inline uint64_t smc_align8(uint64_t x)
{
	return (x + SMC_REC_ALIGN - 1) & ~(uint64_t)(SMC_REC_ALIGN - 1);
}

/* Bytes a record with `len` payload bytes takes in the ring. */
static inline uint64_t smc_rec_bytes(uint32_t len)
{
	return SMC_REC_HDR_SIZE + smc_align8(len);
}

/* Where the record that follows virtual offset v starts: v itself, or the
 * start of the next lap when the room left before the end could not hold
 * the largest record. */
static inline uint64_t smc_ring_place(const struct smc_ring_geom *g, uint64_t v)
{
	uint64_t room = g->cap - v % g->cap;

	assert(v % SMC_REC_ALIGN == 0);
	return room < g->stride ? v + room : v;
}

static inline void smc_rec_hdr_encode(void *dst, uint64_t round, uint32_t len,
				      uint16_t nrounds, uint16_t flags)
{
	struct smc_rec_hdr h = {
	    .round = htole64(round),
	    .len = htole32(len),
	    .nrounds = htole16(nrounds),
	    .flags = htole16(flags),
	};
	memcpy(dst, &h, sizeof(h));
}

static inline void smc_rec_hdr_decode(const void *src, struct smc_rec_hdr *h)
{
	memcpy(h, src, sizeof(*h));
	h->round = le64toh(h->round);
	h->len = le32toh(h->len);
	h->nrounds = le16toh(h->nrounds);
	h->flags = le16toh(h->flags);
}

static inline uint32_t smc_imm_encode(uint32_t nrec, uint64_t first_rec)
{
	assert(nrec >= 1 && nrec <= SMC_IMM_MAX_RECS);
	return SMC_IMM_TAG << 28 | nrec << 16 | (uint32_t)(first_rec & 0xffff);
}

/* True when imm (host order) belongs to SMC. */
static inline bool smc_imm_is_smc(uint32_t imm)
{
	return imm >> 28 == SMC_IMM_TAG;
}

static inline uint32_t smc_imm_nrec(uint32_t imm)
{
	return imm >> 16 & 0xfff;
}

static inline uint32_t smc_imm_first16(uint32_t imm)
{
	return imm & 0xffff;
}

/* Validate window and max_payload and derive the sizes. Returns 0 or
 * -EINVAL (window 0 or above 1<<20, max_payload 0 or above 1<<30). */
int smc_ring_geom_init(struct smc_ring_geom *g, uint32_t window,
		       uint32_t max_payload);

/* Bytes of the header area the transport must register for an SMC core
 * (smc/core.h) of that window: one SMC_HDR_CELL per slot. */
size_t smc_core_hdr_area_size(uint32_t window);

/* Mark record rec released in flags (window entries, index rec % window)
 * and advance *prefix over the released run; records at or past `limit`
 * do not exist yet. Releases may come in any order. Returns true when
 * *prefix moved. */
static inline bool smc_release_mark(uint8_t *flags, uint32_t window,
				    uint64_t *prefix, uint64_t limit,
				    uint64_t rec)
{
	uint64_t before = *prefix;

	assert(rec >= *prefix && rec < limit);
	assert(!flags[rec % window]);
	flags[rec % window] = 1;
	while (*prefix < limit && flags[*prefix % window]) {
		flags[*prefix % window] = 0;
		(*prefix)++;
	}
	return *prefix != before;
}

/* ---- sender side ---------------------------------------------------- */

/* One reserved record, kept until every receiver has released it. */
struct smc_tx_slot {
	uint64_t voff;	    /* virtual offset of the record */
	uint64_t prev_head; /* head_v before it was reserved */
	uint64_t round;	    /* first round */
	uint32_t len;	    /* payload bytes */
	uint16_t nrounds;
	uint16_t flags;
	const void *payload; /* in the region; NULL for a null record */
	void *cookie;	     /* the caller's handle (the lease), opaque */
};

struct smc_ring_tx {
	struct smc_ring_geom g;
	uint8_t *hdr_area;	   /* window * SMC_HDR_CELL bytes, registered */
	struct smc_tx_slot *slots; /* window entries, index rec % window */
	uint64_t next_rec;	   /* records reserved so far */
	uint64_t next_round;	   /* rounds covered so far */
	uint64_t head_v;	   /* virtual end of the last reserved record */
	uint64_t posted_rec;	   /* records handed to write plans */
	uint64_t released_rec;	   /* records released by every receiver */
	uint64_t seal;		   /* XORed into every header's round */
};

/* One piece of a write's scatter/gather list. */
enum smc_sge_kind {
	SMC_SGE_HDR,	 /* from the header area (hdr_area's lkey) */
	SMC_SGE_PAYLOAD, /* from a payload (its lease's lkey) */
};

struct smc_sge {
	const void *addr;
	uint32_t len;
	uint32_t kind; /* enum smc_sge_kind */
	uint64_t rec;  /* the record it belongs to */
};

/* One RDMA WRITE_WITH_IMM, the same for every receiver: only the remote
 * base address and key differ. */
struct smc_write {
	uint64_t first_rec;
	uint32_t nrec;
	uint32_t imm;	     /* host order; the transport applies htonl */
	uint64_t remote_off; /* byte offset inside the sender's ring */
	uint64_t bytes;	     /* total of the scatter/gather list */
	uint32_t nsge;
	struct smc_sge sge[SMC_MAX_SGE];
};

/* Set up a sender ring. hdr_area: window * SMC_HDR_CELL bytes of registered
 * memory owned by the caller; slots: window entries owned by the caller;
 * seal: the receivers' (see the top of this file). */
void smc_ring_tx_init(struct smc_ring_tx *tx, const struct smc_ring_geom *g,
		      uint8_t *hdr_area, struct smc_tx_slot *slots,
		      uint64_t seal);

/* Reserve the next record: a message (payload, len, nrounds 1, flags 0) or
 * a null record (payload NULL, len 0, nrounds >= 1, SMC_REC_NULL). Fills its
 * header cell. Returns the record number, or -EAGAIN when the window or the
 * ring's bytes are full (wait for releases), -EMSGSIZE when len exceeds
 * max_payload. */
int64_t smc_ring_tx_reserve(struct smc_ring_tx *tx, const void *payload,
			    uint32_t len, uint16_t nrounds, uint16_t flags,
			    void *cookie);

/* Take back record rec, the last one reserved and not yet planned: its
 * sender could not commit to it after all. */
void smc_ring_tx_unreserve(struct smc_ring_tx *tx, uint64_t rec);

/* Plan the next write: the longest run of reserved, unposted records that
 * are contiguous in the ring and fit max_sge entries. Marks them posted.
 * Returns true when *w was filled, false when nothing is waiting. */
bool smc_ring_tx_plan(struct smc_ring_tx *tx, uint32_t max_sge,
		      struct smc_write *w);

/* Every receiver has released the records below `released` (monotone). */
void smc_ring_tx_set_released(struct smc_ring_tx *tx, uint64_t released);

/* Free record slots now (window minus records not yet released). */
static inline uint32_t smc_ring_tx_free_slots(const struct smc_ring_tx *tx)
{
	return tx->g.window - (uint32_t)(tx->next_rec - tx->released_rec);
}

static inline struct smc_tx_slot *smc_ring_tx_slot(struct smc_ring_tx *tx,
						   uint64_t rec)
{
	assert(rec < tx->next_rec && rec + tx->g.window >= tx->next_rec);
	return &tx->slots[rec % tx->g.window];
}

/* ---- receiver side -------------------------------------------------- */

/* One received record, as found in the ring. */
struct smc_rx_rec {
	uint64_t rec;	/* record number (per sender) */
	uint64_t round; /* first round */
	uint32_t len;
	uint16_t nrounds;
	uint16_t flags;
	const uint8_t *data; /* payload inside the ring slot */
};

struct smc_ring_rx {
	struct smc_ring_geom g;
	const uint8_t *base;   /* the sender's ring in my region, cap bytes */
	uint64_t next_rec;     /* records received */
	uint64_t next_round;   /* rounds received: what I publish in the SST */
	uint64_t v;	       /* virtual offset where the next record goes */
	uint64_t released_rec; /* prefix of released records: published too */
	uint8_t *released;     /* window flags, index rec % window */
	uint64_t seal;	       /* the sender's */
};

/* Set up a receiver ring over base (cap bytes, whatever they hold);
 * released: window bytes; seal: the sender's. */
void smc_ring_rx_init(struct smc_ring_rx *rx, const struct smc_ring_geom *g,
		      const uint8_t *base, uint8_t *released, uint64_t seal);

/* A write with immediate `imm` from this ring's sender has completed: parse
 * its records into out[] (room for at least smc_imm_nrec(imm) entries) and
 * advance. Returns the number of records, or -EPROTO when the immediate or
 * a header does not continue the sequence (the ring state is unchanged). */
int smc_ring_rx_accept(struct smc_ring_rx *rx, uint32_t imm,
		       struct smc_rx_rec *out, uint32_t room);

/* The receiver is done with record rec (delivered and not kept, or kept and
 * now released). Releases may come in any order; released_rec advances over
 * the released prefix. Returns true when released_rec moved. */
bool smc_ring_rx_release(struct smc_ring_rx *rx, uint64_t rec);

#endif /* SQUALL_SMC_RING_H */
