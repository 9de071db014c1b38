/*
 * schedule.c - RDMC block schedules: who sends which block to whom, when.
 *
 * Every answer is computed from (algorithm, n, k, step, rank) on demand, so a
 * schedule costs a few words whatever its size and each member asks only
 * about itself.
 *
 * The binomial pipeline works on a hypercube of d = floor(log2 n) dimensions.
 * In step s every exchange runs along dimension i = s mod d. Vertex u != 0
 * receives from u ^ (1 << i):
 *   - if bit i of u is clear, block s - d;
 *   - if bit i of u is set, block s - d + m, where m (1..d) is the distance
 *     from i forward, cyclically, to the next set bit of u (d when i is the
 *     only one);
 * blocks past k - 1 count as k - 1 and negative ones as nothing. Call a step
 * whose dimension bit is set in u a "key step" of u. Then u receives block b
 * in step b + d - g, where g is 0 when bit (b mod d) of u is clear and else
 * the distance back to the previous set bit; over any d consecutive steps
 * this visits every block once, so no block arrives twice. A vertex sends,
 * in every step, the block it received in its latest key step: the sender
 * of a block always got it earlier. The last block would reach half of the
 * vertices one step late, in step k - 1 + d; capping is what saves it: such
 * a vertex receives the block as "k - 1 + x" in a key step that comes
 * earlier, from a neighbour that got it the same way (or from rank 0), so
 * the hypercube finishes in T = k + d - 1 steps.
 *
 * When n is not a power of two, vertices 1..n - 2^d hold two members: the
 * vertex's own rank v and its twin v + 2^d - 1. In each step one twin (R)
 * does the vertex's receiving and the other (S) its sending, and R passes
 * one block to S inside the vertex. The roles swap after every key step, so
 * that S is always the twin that received the block the vertex is sending.
 * Inside the vertex, R passes on the block it received in the step before,
 * except right after a key step, when it passes the key block of the key
 * step before that one (S never had it: S was the receiving twin the whole
 * time that block was being sent on). One
 * more step T lets the twins swap the two blocks still in flight, so the
 * schedule takes k + d = k + ceil(log2 n) - 1 steps.
 */
#include <squall/rdmc.h>

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct rdmc_schedule {
	enum rdmc_algorithm alg;
	unsigned n;
	unsigned k;
	unsigned steps;
	/* binomial only */
	unsigned d;    /* hypercube dimensions, floor(log2 n) */
	unsigned p;    /* 2^d vertices */
	unsigned t;    /* steps of the hypercube part, k + d - 1 */
};

static const struct rdmc_transfer none = { RDMC_NONE, RDMC_NONE };

static bool bit(unsigned v, unsigned i)
{
	return (v >> i) & 1u;
}

/* v's d bits rotated right by i (< d): bit i of v lands on bit 0. */
static unsigned rotr(const struct rdmc_schedule *s, unsigned v, unsigned i)
{
	return ((v >> i) | (v << (s->d - i))) & (s->p - 1);
}

/* Distance (1..d) from dimension i forward to the next set bit of v. */
static unsigned next_gap(const struct rdmc_schedule *s, unsigned v,
			 unsigned i)
{
	unsigned after = rotr(s, v, i) >> 1;

	return after ? (unsigned)__builtin_ctz(after) + 1 : s->d;
}

/* Distance (1..d) from dimension i back to the previous set bit of v. */
static unsigned prev_gap(const struct rdmc_schedule *s, unsigned v,
			 unsigned i)
{
	/* rotate so that bit i is the top one, then look below it */
	unsigned top = s->d - 1;
	unsigned before = rotr(s, v, i == top ? 0 : i + 1) & ((1u << top) - 1);

	return before ? top - (31u - (unsigned)__builtin_clz(before)) : s->d;
}

/* Dimension of the step `back` (<= d) steps before one of dimension i. */
static unsigned dim_back(const struct rdmc_schedule *s, unsigned i,
			 unsigned back)
{
	return i >= back ? i - back : i + s->d - back;
}

/* The block vertex v receives in hypercube step `step` (< t), of dimension
 * i, negative for none. */
static int64_t vrecv(const struct rdmc_schedule *s, unsigned v, unsigned step,
		  unsigned i)
{
	int64_t b;

	assert(step < s->t && i < s->d);
	if (v == 0)
		return -1;
	b = (int64_t)step - s->d;
	if (bit(v, i))
		b += next_gap(s, v, i);
	if (b > (int64_t)s->k - 1)
		b = (int64_t)s->k - 1;
	return b;
}

static bool has_twin(const struct rdmc_schedule *s, unsigned v)
{
	return v != 0 && v + s->p - 1 < s->n;
}

static unsigned parity(unsigned v)
{
	v ^= v >> 16;
	v ^= v >> 8;
	v ^= v >> 4;
	return (0x6996u >> (v & 0xfu)) & 1u;
}

/* Whether twin vertex v's roles are swapped in step q * d + i: an odd
 * number of key steps before it. Then the twin receives and v sends. */
static bool swapped(const struct rdmc_schedule *s, unsigned v, unsigned q,
		    unsigned i)
{
	if (!has_twin(s, v))
		return false;
	return ((q & parity(v)) ^ parity(v & ((1u << i) - 1))) & 1u;
}

/* The rank doing vertex v's receiving (R) in step q * d + i. */
static unsigned r_node(const struct rdmc_schedule *s, unsigned v, unsigned q,
		       unsigned i)
{
	return swapped(s, v, q, i) ? v + s->p - 1 : v;
}

/* The rank doing vertex v's sending (S) in step q * d + i. */
static unsigned s_node(const struct rdmc_schedule *s, unsigned v, unsigned q,
		       unsigned i)
{
	return has_twin(s, v) && !swapped(s, v, q, i) ? v + s->p - 1 : v;
}

/* The block v received in its last key step at or before `step` (of
 * dimension i), negative for none. */
static int64_t key_block(const struct rdmc_schedule *s, unsigned v,
		      unsigned step, unsigned i)
{
	unsigned g;

	if (bit(v, i))
		return vrecv(s, v, step, i);
	g = prev_gap(s, v, i);
	if (step < g)
		return -1;
	return vrecv(s, v, step - g, dim_back(s, i, g));
}

/* The block R passes to S inside twin vertex v in `step` (1..t) of
 * dimension i, negative for none: the block received the step before, or
 * right after a key step the key block of the key step before that. */
static int64_t intra_block(const struct rdmc_schedule *s, unsigned v,
			unsigned step, unsigned i)
{
	unsigned ip = dim_back(s, i, 1);

	if (step == 0)
		return -1;
	if (!bit(v, ip))
		return vrecv(s, v, step - 1, ip);
	if (step == 1)
		return -1;
	return key_block(s, v, step - 2, dim_back(s, ip, 1));
}

static void set(struct rdmc_transfer *x, unsigned peer, int64_t block)
{
	if (block >= 0) {
		x->peer = peer;
		x->block = (uint32_t)block;
	}
}

static void binomial_get(const struct rdmc_schedule *s, unsigned step,
			 unsigned rank, struct rdmc_transfer *send,
			 struct rdmc_transfer *recv)
{
	unsigned v = rank < s->p ? rank : rank - s->p + 1;
	unsigned q = step / s->d, i = step % s->d;
	unsigned w = v ^ (1u << i); /* the vertex across this step's dimension */
	bool twin = has_twin(s, v);
	bool swap = swapped(s, v, q, i);
	unsigned rn = twin && swap ? v + s->p - 1 : v;
	unsigned sn = twin && !swap ? v + s->p - 1 : v;
	int64_t b;

	if (step == s->t) {
		/* Only twins act: R passes its last block, S the key block of
		 * the last key step, which R never got. */
		if (!twin)
			return;
		b = intra_block(s, v, step, i);
		int64_t key = key_block(s, v, step - 1, dim_back(s, i, 1));
		if (rank == rn) {
			set(send, sn, b);
			set(recv, sn, key);
		} else {
			set(send, rn, key);
			set(recv, rn, b);
		}
		return;
	}
	if (rank == rn)
		set(recv, s_node(s, w, q, i), vrecv(s, v, step, i));
	if (rank == sn && w != 0)
		set(send, r_node(s, w, q, i), vrecv(s, w, step, i));
	if (twin) {
		b = intra_block(s, v, step, i);
		if (rank == rn)
			set(send, sn, b);
		else
			set(recv, rn, b);
	}
}

/* Chain: rank r receives block b from r - 1 in step b + r - 1 and passes it
 * to r + 1 in step b + r. */
static void chain_get(const struct rdmc_schedule *s, unsigned step,
		      unsigned rank, struct rdmc_transfer *send,
		      struct rdmc_transfer *recv)
{
	if (rank + 1 < s->n && step >= rank && step - rank < s->k)
		set(send, rank + 1, step - rank);
	if (rank > 0 && step + 1 >= rank && step + 1 - rank < s->k)
		set(recv, rank - 1, step + 1 - rank);
}

/* Sequential: in step j*k + b the sender sends block b to rank j + 1. */
static void sequential_get(const struct rdmc_schedule *s, unsigned step,
			   unsigned rank, struct rdmc_transfer *send,
			   struct rdmc_transfer *recv)
{
	unsigned to = 1 + step / s->k, b = step % s->k;

	if (rank == 0)
		set(send, to, b);
	else if (rank == to)
		set(recv, 0, b);
}

int rdmc_schedule_create(enum rdmc_algorithm alg, unsigned n, unsigned k,
			 struct rdmc_schedule **out)
{
	struct rdmc_schedule *s;
	uint64_t steps;
	unsigned d = 0;

	if (n == 0 || n > RDMC_MAX_MEMBERS || k == 0)
		return -EINVAL;
	while ((2u << d) <= n)
		d++;
	switch (alg) {
	case RDMC_BINOMIAL:
		steps = (uint64_t)k + d - 1 + ((n & (n - 1)) != 0);
		break;
	case RDMC_CHAIN:
		steps = (uint64_t)k + n - 2;
		break;
	case RDMC_SEQUENTIAL:
		steps = (uint64_t)k * (n - 1);
		break;
	default:
		return -EINVAL;
	}
	if (n == 1)
		steps = 0;
	if (steps > UINT32_MAX - 1)
		return -EOVERFLOW;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->alg = alg;
	s->n = n;
	s->k = k;
	s->steps = (unsigned)steps;
	s->d = d;
	s->p = 1u << d;
	s->t = alg == RDMC_BINOMIAL && n > 1 ? k + d - 1 : 0;
	*out = s;
	return 0;
}

void rdmc_schedule_destroy(struct rdmc_schedule *s)
{
	free(s);
}

unsigned rdmc_schedule_steps(const struct rdmc_schedule *s)
{
	return s->steps;
}

enum rdmc_algorithm rdmc_schedule_algorithm(const struct rdmc_schedule *s)
{
	return s->alg;
}

unsigned rdmc_schedule_members(const struct rdmc_schedule *s)
{
	return s->n;
}

unsigned rdmc_schedule_blocks(const struct rdmc_schedule *s)
{
	return s->k;
}

int rdmc_schedule_get(const struct rdmc_schedule *s, unsigned step,
		      unsigned rank, struct rdmc_transfer *send,
		      struct rdmc_transfer *recv)
{
	struct rdmc_transfer x = none, y = none;

	if (rank >= s->n)
		return -EINVAL;
	if (step < s->steps) {
		switch (s->alg) {
		case RDMC_BINOMIAL:
			binomial_get(s, step, rank, &x, &y);
			break;
		case RDMC_CHAIN:
			chain_get(s, step, rank, &x, &y);
			break;
		case RDMC_SEQUENTIAL:
			sequential_get(s, step, rank, &x, &y);
			break;
		}
	}
	if (send)
		*send = x;
	if (recv)
		*recv = y;
	return 0;
}

/* First step >= from within [lo, hi) (a member's one busy stretch). */
static unsigned clamp_active(const struct rdmc_schedule *s, unsigned from,
			     unsigned lo, unsigned hi)
{
	if (from < lo)
		return lo;
	if (from < hi)
		return from;
	return s->steps;
}

unsigned rdmc_schedule_next_active(const struct rdmc_schedule *s,
				   unsigned rank, unsigned from)
{
	struct rdmc_transfer send, recv;

	if (rank >= s->n || from >= s->steps)
		return s->steps;
	switch (s->alg) {
	case RDMC_CHAIN:
		/* receives in [r-1, r-1+k), sends in [r, r+k) */
		if (rank == 0)
			return clamp_active(s, from, 0, s->k);
		return clamp_active(s, from, rank - 1,
				    rank + s->k - (rank + 1 == s->n));
	case RDMC_SEQUENTIAL:
		if (rank == 0)
			return from;
		return clamp_active(s, from, (rank - 1) * s->k, rank * s->k);
	case RDMC_BINOMIAL:
		break;
	}
	/* Binomial members are busy in nearly every step: just look. */
	for (unsigned step = from; step < s->steps; step++) {
		rdmc_schedule_get(s, step, rank, &send, &recv);
		if (send.peer != RDMC_NONE || recv.peer != RDMC_NONE)
			return step;
	}
	return s->steps;
}

static const char *const names[] = {
	[RDMC_BINOMIAL] = "binomial",
	[RDMC_CHAIN] = "chain",
	[RDMC_SEQUENTIAL] = "sequential",
};

const char *rdmc_algorithm_name(enum rdmc_algorithm alg)
{
	if ((unsigned)alg >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[alg];
}

int rdmc_algorithm_from_name(const char *name)
{
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (name && strcmp(name, names[i]) == 0)
			return (int)i;
	return -EINVAL;
}
