/*
 * tags.h - the one registry of what squall's parts put in the fields that
 * every user of a queue pair shares: the top byte of a request's wr_id
 * (the one completion queue hands each completion to its owner by it) and
 * the 32-bit immediate of a WRITE_WITH_IMM (the receive side tells SST
 * pushes, SMC runs and RDMC blocks apart by it). Each part takes its
 * values from here; the checks below stop the build when two overlap.
 * Numbers only: the transport knows no part above it.
 */
#ifndef SQUALL_RDMA_TAGS_H
#define SQUALL_RDMA_TAGS_H

/* wr_id tags (wr_id >> 56), each with the file that posts them. */
#define SQUALL_WR_TAG_AUTH 0x41ull /* 'A': key exchange (rdma/conn.c) */
#define SQUALL_WR_TAG_SMC 0x4dull  /* 'M': an SMC run (group/link.c) */
#define SQUALL_WR_TAG_P2P 0x50ull  /* 'P': a point-to-point SEND, its answer,
				      a use-once bind (group/p2p.c) */
#define SQUALL_WR_TAG_P2P_READ 0x55ull /* 'U': a READ of a peer's use-once
					  region (group/p2p.c) */
#define SQUALL_WR_TAG_RDMC 0x52ull /* 'R': RDMC blocks, control, receives */
#define SQUALL_WR_TAG_SST 0x53ull  /* 'S': SST pushes and receives (sst/) */

/* Immediate ranges [FIRST, LAST], each with its decoder. */
#define SQUALL_IMM_SST_FIRST 0x00000000u  /* the pusher's rank (sst/progress.c) */
#define SQUALL_IMM_SST_LAST 0x0000ffffu
#define SQUALL_IMM_SMC_FIRST 0x50000000u  /* tag 0x5 in the top 4 bits */
#define SQUALL_IMM_SMC_LAST 0x5fffffffu   /* (smc/ring.h smc_imm_*) */
#define SQUALL_IMM_RDMC_FIRST 0x80000000u /* top bit (rdmc/plan.h) */
#define SQUALL_IMM_RDMC_LAST 0xffffffffu

#define SQUALL_TAGS_DISTINCT_(a, b) ((a) != (b))
_Static_assert(SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_AUTH, SQUALL_WR_TAG_SMC) &&
	       SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_AUTH, SQUALL_WR_TAG_P2P) &&
	       SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_AUTH, SQUALL_WR_TAG_RDMC) &&
	       SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_AUTH, SQUALL_WR_TAG_SST) &&
	       SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_SMC, SQUALL_WR_TAG_P2P) &&
	       SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_SMC, SQUALL_WR_TAG_RDMC) &&
	       SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_SMC, SQUALL_WR_TAG_SST) &&
	       SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_P2P, SQUALL_WR_TAG_RDMC) &&
	       SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_P2P, SQUALL_WR_TAG_SST) &&
	       SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_RDMC, SQUALL_WR_TAG_SST) &&
	       SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_P2P_READ, SQUALL_WR_TAG_AUTH) &&
	       SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_P2P_READ, SQUALL_WR_TAG_SMC) &&
	       SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_P2P_READ, SQUALL_WR_TAG_P2P) &&
	       SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_P2P_READ, SQUALL_WR_TAG_RDMC) &&
	       SQUALL_TAGS_DISTINCT_(SQUALL_WR_TAG_P2P_READ, SQUALL_WR_TAG_SST),
	       "two parts share a wr_id tag");
_Static_assert(SQUALL_IMM_SST_LAST < SQUALL_IMM_SMC_FIRST &&
	       SQUALL_IMM_SMC_LAST < SQUALL_IMM_RDMC_FIRST &&
	       SQUALL_IMM_SST_FIRST <= SQUALL_IMM_SST_LAST &&
	       SQUALL_IMM_SMC_FIRST <= SQUALL_IMM_SMC_LAST &&
	       SQUALL_IMM_RDMC_FIRST <= SQUALL_IMM_RDMC_LAST,
	       "immediate ranges overlap");
/* The SMC and RDMC ranges are exactly what their decoders accept. */
_Static_assert((SQUALL_IMM_SMC_FIRST >> 28) == (SQUALL_IMM_SMC_LAST >> 28) &&
	       (SQUALL_IMM_SMC_FIRST & 0x0fffffffu) == 0 &&
	       (SQUALL_IMM_SMC_LAST & 0x0fffffffu) == 0x0fffffffu,
	       "the SMC range is one value of the top 4 bits");
_Static_assert(SQUALL_IMM_RDMC_FIRST == 0x80000000u &&
	       SQUALL_IMM_RDMC_LAST == 0xffffffffu,
	       "the RDMC range is the top bit set");

#endif /* SQUALL_RDMA_TAGS_H */
