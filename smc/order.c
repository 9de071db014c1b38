/*
 * smc/order.c - stability and round-robin delivery over per-sender queues
 * of received records.
 *
 * The idea: the frontier (first unstable position) is computed from the
 * counters alone, so members agree on it without talking; passing
 * positions then walks the round-robin order and pops each sender's head
 * record once its last round is passed. A null record that covers many
 * rounds costs one queue entry and is skipped round by round.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "smc/order.h"
#include "smc/ring.h"

int smc_order_init(struct smc_order *o, uint32_t n, uint32_t cap)
{
	if (n == 0 || cap == 0)
		return -EINVAL;
	o->n = n;
	o->cap = cap;
	o->next_seq = 0;
	o->delivered = 0;
	o->q = calloc(n, sizeof(*o->q));
	if (!o->q)
		return -ENOMEM;
	for (uint32_t s = 0; s < n; s++) {
		o->q[s].e = calloc(cap, sizeof(*o->q[s].e));
		if (!o->q[s].e) {
			smc_order_fini(o);
			return -ENOMEM;
		}
	}
	return 0;
}

void smc_order_fini(struct smc_order *o)
{
	if (!o->q)
		return;
	for (uint32_t s = 0; s < o->n; s++)
		free(o->q[s].e);
	free(o->q);
	o->q = NULL;
}

int smc_order_push(struct smc_order *o, uint32_t s,
		   const struct smc_order_rec *r)
{
	struct smc_order_queue *q;

	assert(s < o->n);
	q = &o->q[s];
	if (r->round != q->next_round || r->nrounds == 0)
		return -EPROTO;
	if (q->tail - q->head == o->cap)
		return -ENOBUFS;
	q->e[q->tail++ % o->cap] = *r;
	q->next_round += r->nrounds;
	return 0;
}

/* Rounds of its own this member may count as stable, from `stable` (what
 * every member holds, by the counters): at least the rounds whose
 * positions it passed already, then on through its null records. */
static uint64_t own_stable(const struct smc_order *o, uint32_t me,
			   uint64_t stable)
{
	const struct smc_order_queue *q = &o->q[me];
	uint64_t passed = 0, lo = q->head, hi = q->tail;

	if (o->next_seq > me)
		passed = (o->next_seq + o->n - 1 - me) / o->n;
	if (passed > stable)
		stable = passed;
	/* The first record not wholly below `stable` (records hold
	 * consecutive rounds, in order). */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		const struct smc_order_rec *r = &q->e[mid % o->cap];

		if (r->round + r->nrounds <= stable)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < q->tail; lo++) {
		const struct smc_order_rec *r = &q->e[lo % o->cap];

		if (!(r->flags & SMC_REC_NULL) || r->round > stable)
			break;
		stable = r->round + r->nrounds;
	}
	return stable;
}

/* The first position not stable by recv, where o (when not NULL) is
 * member me's engine, whose own nulls count (smc_order_frontier_here). */
static uint64_t frontier_of(const struct smc_order *o, const uint64_t *recv,
			    uint32_t n, uint32_t me)
{
	uint64_t frontier = UINT64_MAX;

	for (uint32_t s = 0; s < n; s++) {
		uint64_t stable = UINT64_MAX, pos;

		for (uint32_t j = 0; j < n; j++)
			if (recv[(size_t)j * n + s] < stable)
				stable = recv[(size_t)j * n + s];
		if (o && s == me)
			stable = own_stable(o, me, stable);
		/* Sender s's first unstable position is round `stable`. */
		pos = stable * n + s;
		if (pos < frontier)
			frontier = pos;
	}
	return frontier;
}

uint64_t smc_order_frontier(const uint64_t *recv, uint32_t n)
{
	return frontier_of(NULL, recv, n, 0);
}

uint64_t smc_order_frontier_here(const struct smc_order *o,
				 const uint64_t *recv, uint32_t me)
{
	return frontier_of(o, recv, o->n, me);
}

void smc_order_credit_senders(uint64_t *recv, uint32_t n, uint32_t me)
{
	for (uint32_t s = 0; s < n; s++)
		if (recv[(size_t)s * n + s] < recv[(size_t)me * n + s])
			recv[(size_t)s * n + s] = recv[(size_t)me * n + s];
}

/* Pass position next_seq, of sender s, held here. A record is reported
 * (and popped) once its last round is passed, or the last round below
 * `end` (a trim cutting a null record short). */
static void pass_position(struct smc_order *o, uint32_t s, uint64_t end,
			  struct smc_order_event *out, uint32_t *nout)
{
	struct smc_order_queue *q = &o->q[s];
	struct smc_order_rec *r;

	assert(q->head < q->tail);
	r = &q->e[q->head % o->cap];
	assert(r->round + q->head_round == o->next_seq / o->n);
	if (++q->head_round == r->nrounds || r->round + q->head_round == end) {
		/* A message has exactly one round. */
		out[(*nout)++] = (struct smc_order_event){
		    .sender = s,
		    .seq = o->next_seq,
		    .rec = *r,
		};
		if (!(r->flags & SMC_REC_NULL))
			o->delivered++;
		q->head++;
		q->head_round = 0;
	}
	o->next_seq++;
}

uint32_t smc_order_collect(struct smc_order *o, uint64_t frontier,
			   struct smc_order_event *out, uint32_t max)
{
	uint32_t nout = 0;

	/* The frontier counts this member's own row: it holds every
	 * position below it. */
	while (o->next_seq < frontier && nout < max)
		pass_position(o, (uint32_t)(o->next_seq % o->n), UINT64_MAX,
			      out, &nout);
	return nout;
}

uint32_t smc_order_collect_trim(struct smc_order *o, const uint64_t *trim,
				struct smc_order_event *out, uint32_t max)
{
	uint64_t end = 0;
	uint32_t nout = 0;

	/* Past the last position any sender's trim allows, nothing is left. */
	for (uint32_t s = 0; s < o->n; s++)
		if (trim[s] && (trim[s] - 1) * o->n + s + 1 > end)
			end = (trim[s] - 1) * o->n + s + 1;
	while (o->next_seq < end && nout < max) {
		uint32_t s = (uint32_t)(o->next_seq % o->n);

		if (o->next_seq / o->n >= trim[s])
			o->next_seq++;
		else
			pass_position(o, s, trim[s], out, &nout);
	}
	return nout;
}

uint64_t smc_order_null_rounds(const uint64_t *mine, uint32_t n, uint32_t me)
{
	uint64_t target = 0;

	/* t's last held round is mine[t] - 1: cover my rounds up to it,
	 * whichever side of t's position mine falls on (order.h). */
	for (uint32_t t = 0; t < n; t++)
		if (t != me && mine[t] > target)
			target = mine[t];
	return target > mine[me] ? target - mine[me] : 0;
}
