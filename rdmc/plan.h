/*
 * plan.h - the arithmetic of an RDMC transfer, shared by rdmc/ and its
 * unit tests: how a message splits into blocks, how a block write names its
 * transfer and block in the immediate, what one member does in a transfer
 * (its plan, derived from the schedule), and the READY/DONE control
 * messages. Nothing here touches a NIC.
 */
#ifndef SQUALL_RDMC_PLAN_H
#define SQUALL_RDMC_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <squall/rdmc.h>

#include "rdma/tags.h"

/* ---- blocks ----------------------------------------------------------- */

/* Most blocks one message may have: the block number takes 24 bits of the
 * immediate. */
#define RDMC_MAX_BLOCKS (1u << 24)

/* Blocks of a message of `size` bytes in blocks of `bs` bytes (both > 0):
 * the last block holds the remainder when size is not a multiple of bs. */
static inline uint64_t rdmc_block_count(uint64_t size, uint64_t bs)
{
	return size / bs + (size % bs != 0);
}

/* Where block b of such a message lies: [*off, *off + *len). */
static inline void rdmc_block_span(uint64_t size, uint64_t bs, uint64_t b,
				   uint64_t *off, uint64_t *len)
{
	uint64_t o = b * bs;

	*off = o;
	*len = size - o < bs ? size - o : bs;
}

/* ---- immediates ------------------------------------------------------- */

/* A block write carries imm = FLAG | slot << 24 | block. The slot is the
 * receiver's own index for the transfer (it chose it and told the writers
 * in its READY), so a receiver finds the transfer in O(1) without trusting
 * anything but its own table. The top bit marks the immediate as RDMC's, so
 * other parts may use immediates with it clear. */
#define RDMC_IMM_FLAG SQUALL_IMM_RDMC_FIRST
#define RDMC_IMM_SLOTS 128u

static inline uint32_t rdmc_imm_encode(uint32_t slot, uint32_t block)
{
	return RDMC_IMM_FLAG | (slot & (RDMC_IMM_SLOTS - 1)) << 24 |
	       (block & (RDMC_MAX_BLOCKS - 1));
}

/* False when imm is not an RDMC block immediate. */
static inline bool rdmc_imm_decode(uint32_t imm, uint32_t *slot,
				   uint32_t *block)
{
	if (!(imm & RDMC_IMM_FLAG))
		return false;
	*slot = (imm >> 24) & (RDMC_IMM_SLOTS - 1);
	*block = imm & (RDMC_MAX_BLOCKS - 1);
	return true;
}

/* ---- a member's plan -------------------------------------------------- */

/* One block write: send `block` to rank `peer`. */
struct rdmc_send_op {
	uint32_t peer;
	uint32_t block;
};

/* What one rank does in a transfer, in schedule order. A member posts its
 * sends in this order, each as soon as it holds the block and the peer is
 * ready; since the schedule only sends blocks received in earlier steps,
 * that order never waits on itself. */
struct rdmc_plan {
	unsigned n, k, rank;
	unsigned nsends;
	struct rdmc_send_op *sends;
	unsigned nrecvs;      /* blocks it receives: k, or 0 for rank 0 */
	unsigned nsources;    /* ranks that write into its buffer, ascending */
	uint32_t *sources;
	unsigned ntargets;    /* ranks it writes to, ascending */
	uint32_t *targets;
};

/* Build rank's plan for a transfer of k blocks to n members with alg.
 * Returns 0, -EINVAL (bad n, k, rank or alg; k above RDMC_MAX_BLOCKS),
 * -EOVERFLOW or -ENOMEM. */
int rdmc_plan_build(enum rdmc_algorithm alg, unsigned n, unsigned k,
		    unsigned rank, struct rdmc_plan *out);

/* Free what a plan holds (a zeroed plan is fine). */
void rdmc_plan_free(struct rdmc_plan *p);

/* ---- control messages --------------------------------------------------- */

/* DONE flags. */
#define RDMC_DONE_HAVE 0x1u  /* receiver -> sender: I hold every block */
#define RDMC_DONE_ALL 0x2u   /* sender -> receivers: every member holds it */
#define RDMC_DONE_ABORT 0x4u /* sender -> receivers: cancelled, see status;
				with RDMC_DONE_ALL: every receiver knows */
#define RDMC_DONE_ABORTED 0x8u /* receiver -> sender: I know it is cancelled */

/* Largest encoded control message. */
#define RDMC_CTL_MAX 128u

/* A READY or DONE message. READY goes from a receiver to every member that
 * writes into its buffer and to the sender: status 0 with the buffer's
 * {addr, rkey, len} (a TARGET extension, purpose RDMC_BUFFER) and the slot
 * writers put in their immediates, or a negative errno when it could not
 * lease the buffer. DONE carries the flags above. */
struct rdmc_ctl {
	uint16_t type;        /* WIRE_MSG_RDMC_READY or WIRE_MSG_RDMC_DONE */
	uint16_t flags;
	uint32_t group;
	uint64_t msg_id;
	uint32_t slot;
	int32_t status;
	uint64_t addr;        /* READY with status 0 only */
	uint32_t rkey;
	uint64_t len;
};

/* Encode c into buf (cap bytes). Returns the length or a negative errno. */
int rdmc_ctl_encode(void *buf, size_t cap, const struct rdmc_ctl *c);

/* Decode an RDMC control message. Returns 0, -ENOMSG for a squall message
 * of another type, -EBADMSG for a malformed one, or wire_decode's error. */
int rdmc_ctl_decode(const void *buf, size_t len, struct rdmc_ctl *c);

#endif /* SQUALL_RDMC_PLAN_H */
