/*
 * layout.h - what the group lays out in a member's region, sized by the
 * functions its parts use (sst/layout.c, smc/ring.c): the SST columns,
 * and the bytes of each area for a .cfg. Pure: the config's check links
 * it too (group/config.c), so a region the config accepts is one the
 * group can lay out.
 */
#ifndef SQUALL_GROUP_LAYOUT_H
#define SQUALL_GROUP_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include <squall/error.h>
#include <squall/sst.h>

/* Receives per peer, and the bytes of each (SENDs: RDMC control
 * messages and point-to-point messages). */
#define GROUP_RECV_DEPTH 256u
#define GROUP_RECV_BUF 4096u
/* Room the plan keeps beyond the group's areas: RDMC's control buffers
 * and receives, and the first leases. */
#define GROUP_REGION_SPARE (UINT64_C(1) << 20)

enum group_col {
	COL_SMC_RECV,  /* [n] rounds held of each sender (SMC) */
	COL_SMC_REL,   /* [n] records released of each sender's ring (SMC) */
	COL_SMC_RING,  /* region offset of my rings + 1 */
	COL_DONE,      /* [n] ordered messages of each sender delivered here */
	COL_SENT,      /* ordered messages I sent before closing */
	COL_BARRIER,   /* barriers entered */
	COL_CLOSING,   /* 1: closed, flushing; 2: flushed */
	/* View changes (one push from COL_HAVE to COL_TMASK): */
	COL_HAVE,      /* [n] rounds of each sender held, large payloads
			  included (the trim is their minimum) */
	COL_ACK,       /* the failure mask this member wedged for, + 1 */
	COL_TRIM,      /* [n] the trim adopted */
	COL_TADD,      /* members that trim's view adds (.cfg index bits) */
	COL_TMASK,     /* the failure mask of that trim, + 1; 0: none */
	COL_JOIN,      /* joiners that asked this member (.cfg index bits) */
	COL_COUNT
};

/* The SST layout of a view of n members (col may be NULL: otherwise each
 * column's index, by enum group_col). */
int group_make_layout(uint32_t n, struct sst_layout **out, int *col,
		      struct squall_error *err);

/* The region's areas for a .cfg of nmax members, each rounded up to
 * ALLOC_PAGE_SIZE as the allocator carves it: the SST (sized for every
 * member of the .cfg: each view's table fits in it), the SMC header area,
 * the receive buffers (GROUP_RECV_DEPTH of GROUP_RECV_BUF bytes per
 * member), and one view's SMC rings with every member in it. total is
 * their sum plus GROUP_REGION_SPARE. */
struct group_region_plan {
	uint64_t sst, smc_hdr, recv, rings;
	uint64_t ring_cap;      /* one sender's ring */
	uint64_t total;
};

/* 0 with *p, or -EINVAL (window or max_payload out of range, nmax 0) or
 * -ENOMEM, with err saying which. */
int group_region_plan(uint32_t nmax, uint32_t window, uint32_t max_payload,
		      struct group_region_plan *p, struct squall_error *err);

#endif /* SQUALL_GROUP_LAYOUT_H */
