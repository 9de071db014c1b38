/*
 * smc/flow.h - a sender's flow-control accounting: how far every member
 * has released its ring, and how far the writes to every member have
 * completed.
 *
 * A sender may reuse a ring slot only once every member has delivered and
 * released the record in it; the sender counts itself as one of those
 * members (its own messages are delivered locally from the leased buffer,
 * in the same order). A leased payload returns to the slab once every
 * write that gathered from it has completed at the sender and the sender
 * itself has released the record. Counters are record numbers, monotone.
 */
#ifndef SQUALL_SMC_FLOW_H
#define SQUALL_SMC_FLOW_H

#include <stdint.h>

struct smc_flow {
	uint32_t n;	     /* members */
	uint32_t me;	     /* the sender */
	uint64_t *released;  /* [n]: records member j has released */
	uint64_t *completed; /* [n]: records whose write to j completed
				(entry me: unused, kept at UINT64_MAX) */
};

/* Returns 0, -EINVAL (me >= n) or -ENOMEM. */
int smc_flow_init(struct smc_flow *f, uint32_t n, uint32_t me);
void smc_flow_fini(struct smc_flow *f);

/* Member j reports it has released records [0, count). Monotone: an older
 * (smaller) report is ignored. */
void smc_flow_set_released(struct smc_flow *f, uint32_t j, uint64_t count);

/* The writes carrying records [0, count) to member j have completed. */
void smc_flow_set_completed(struct smc_flow *f, uint32_t j, uint64_t count);

/* Records every member has released: slots below it may be reused. */
uint64_t smc_flow_min_released(const struct smc_flow *f);

/* Records whose payload nobody needs any more: every write from it
 * completed, and the sender itself released it. */
uint64_t smc_flow_payload_done(const struct smc_flow *f);

#endif /* SQUALL_SMC_FLOW_H */
