/*
 * rdmc.h - RDMC, squall's large-message multicast: block schedules.
 *
 * A message of k blocks goes from rank 0 (the sender) to the n - 1 other
 * members of a transfer in steps. In one step each member sends at most one
 * block and receives at most one; a member only sends a block it received
 * in an earlier step (the sender has them all); when the schedule ends every
 * member holds every block, having received each exactly once. A schedule
 * is pure arithmetic over (algorithm, n, k): every member computes its own
 * part of the same schedule without talking to anyone.
 *
 * Algorithms:
 *   binomial   the binomial pipeline: a hypercube over 2^floor(log2 n)
 *              vertices, where a vertex may hold two members ("twins") when
 *              n is not a power of two. k + ceil(log2 n) - 1 steps.
 *   chain      a pipeline along the ranks: rank r forwards to r + 1.
 *              k + n - 2 steps.
 *   sequential the sender sends every block to rank 1, then every block to
 *              rank 2, and so on. k * (n - 1) steps.
 */
#ifndef SQUALL_RDMC_H
#define SQUALL_RDMC_H

#include <stdint.h>

enum rdmc_algorithm {
	RDMC_BINOMIAL = 0,
	RDMC_CHAIN = 1,
	RDMC_SEQUENTIAL = 2,
};

/* Largest number of members a schedule accepts. */
#define RDMC_MAX_MEMBERS (1u << 20)

/* A transfer's peer and block is RDMC_NONE when there is no transfer. */
#define RDMC_NONE UINT32_MAX

/* One side of a block transfer in one step. */
struct rdmc_transfer {
	uint32_t peer;  /* rank at the other end, or RDMC_NONE */
	uint32_t block; /* block index 0..k-1, or RDMC_NONE */
};

struct rdmc_schedule;

/* Build the schedule of `alg` for n members (rank 0 sends) and k blocks.
 * n = 1 gives a schedule of no steps. Returns 0 with *out set, -EINVAL for
 * an unknown algorithm, n = 0, n > RDMC_MAX_MEMBERS or k = 0, -EOVERFLOW
 * when the number of steps does not fit in 32 bits, -ENOMEM. */
int rdmc_schedule_create(enum rdmc_algorithm alg, unsigned n, unsigned k,
			 struct rdmc_schedule **out);

/* Free a schedule (NULL is fine). */
void rdmc_schedule_destroy(struct rdmc_schedule *s);

/* Number of steps; every transfer happens in a step below it. */
unsigned rdmc_schedule_steps(const struct rdmc_schedule *s);

/* The algorithm, member count and block count the schedule was built for. */
enum rdmc_algorithm rdmc_schedule_algorithm(const struct rdmc_schedule *s);
unsigned rdmc_schedule_members(const struct rdmc_schedule *s);
unsigned rdmc_schedule_blocks(const struct rdmc_schedule *s);

/* What `rank` does in `step`: *send gets the block it sends and to whom,
 * *recv the block it receives and from whom; each is {RDMC_NONE,
 * RDMC_NONE} when there is none (and both are for step >= steps). Either
 * pointer may be NULL. Returns 0, or -EINVAL for rank >= n. */
int rdmc_schedule_get(const struct rdmc_schedule *s, unsigned step,
		      unsigned rank, struct rdmc_transfer *send,
		      struct rdmc_transfer *recv);

/* The first step >= from in which `rank` sends or receives, or
 * rdmc_schedule_steps(s) when it has nothing left to do (also for rank >=
 * n). Lets a member skip the steps in which it idles. */
unsigned rdmc_schedule_next_active(const struct rdmc_schedule *s,
				   unsigned rank, unsigned from);

/* "binomial", "chain", "sequential"; NULL for an unknown value. */
const char *rdmc_algorithm_name(enum rdmc_algorithm alg);

/* The algorithm named `name` (as rdmc_algorithm_name), or -EINVAL. */
int rdmc_algorithm_from_name(const char *name);

#endif /* SQUALL_RDMC_H */
