/*
 * vc_sim.c - the view-change simulator (see vc_sim.h).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "group/agree.h"
#include "group/vcore.h"
#include "rdmc/plan.h"
#include "smc/order.h"
#include "smc/ring.h"
#include "tests/sim/vc_sim.h"
#include "tests/vsync/check.h"
#include "tests/vsync/history.h"

#define SIM_MAX 7
#define LINK_DEPTH 8      /* pushes in flight per link; more merge */
#define TORN_PCT 15       /* a segment of a push that lands torn */
#define ROUND_MAX 1024    /* rounds one sender sends at most */
#define NULL_ROUND UINT16_MAX /* struct vc_sim.mseq of a null round */
#define SCHED_MAX 24      /* closes, joins and faults of one schedule */
#define LARGE_PCT 20      /* messages that are large (sent by RDMC) */
#define REFUSE_PCT 6      /* receivers that cannot lease a large one */
#define BLOCKS_MAX 4      /* RDMC blocks of a large message, at most */

/* The segments of a row, as group.c declares them (plus the header). */
enum seg { SEG_HDR, SEG_RECV, SEG_DONE, SEG_CLOSE, SEG_VC, SEG_JOIN, NSEG };

struct row {
	uint64_t susp;                 /* SEG_HDR */
	uint64_t recv[SIM_MAX];        /* SEG_RECV */
	uint64_t done[SIM_MAX];        /* SEG_DONE: messages delivered, per
					  sender */
	uint64_t sent, closing;        /* SEG_CLOSE */
	uint64_t have[SIM_MAX], ack;   /* SEG_VC */
	uint64_t trim[SIM_MAX], tadd, tmask;
	uint64_t join;                 /* SEG_JOIN */
};

struct push {
	struct row r;
	uint64_t seq;                  /* the pusher's push count */
};

struct link {
	struct push q[LINK_DEPTH];
	uint32_t head, count;
	bool up;
};

struct member {
	bool crashed, stopped, installed;
	bool departed;                 /* group_close returned: it left alone
					  or flushed with the others */
	bool wedged;
	uint64_t close;                /* 0, 1 closing, 2 flushed or
					  VC_CLOSE_LEFT (as group.c) */
	uint64_t leave_since;          /* the event (+ 1) since which
					  ag_own_flushed holds, or 0 */
	struct vc_state st;
	struct row row;                /* what it publishes */
	uint64_t pushes;
	bool dirty;
	struct row seen[SIM_MAX];      /* peers' rows as last validated */
	uint64_t seen_seq[SIM_MAX][NSEG];
	struct push late[SIM_MAX];     /* a push with torn segments, to be
					  looked at again */
	uint64_t fence;                /* the push that carries its adoption
					  (sst_fence: one still put off by a
					  full send queue counts) */
	uint64_t landed[SIM_MAX];      /* per peer: my last push it took
					  whole (the write completed) */
	uint8_t late_mask[SIM_MAX];    /* its segments still to take */
	uint64_t suspected;
	struct smc_order ord;          /* SMC's order engine (smc/order.c) */
	uint64_t have[SIM_MAX];        /* rounds held per sender */
	uint64_t cap[SIM_MAX];         /* rounds that will still arrive */
	uint64_t done[SIM_MAX];        /* messages delivered per sender */
	uint64_t app_pos;              /* next position delivered: those
					  from here to ord.next_seq (passed by
					  SMC) wait in the delivery queue,
					  behind a large message */
	uint64_t sq_full_until;        /* its send queue is full until this
					  event: nothing it posts goes out */
	bool refuse_next;              /* vc_sim_refuse: the next large
					  message it passes, it cannot lease */
	uint64_t ndelivered;
	uint64_t lcap[SIM_MAX];        /* per sender, no large round below it
					  lacks its payload here */
	uint64_t lnext[SIM_MAX];       /* per sender, no large round below it
					  has its transfer still to go on here
					  (held and known stable) */
};

/* A round's payload, when the round is a large message: its announcement
 * went by SMC; the payload goes by RDMC in blocks, each member writing
 * the blocks its plan (rdmc/plan.h) says (masks of members). */
struct payload {
	bool large;
	bool resent;                   /* sent again from an earlier view:
					  every receiver leases it */
	uint8_t k;                     /* blocks */
	uint8_t ready;                 /* receivers that passed the announcement
					  and leased a buffer (their READY) */
	uint8_t refused;               /* ... that could not lease one (their
					  READY carries -ENOMEM) */
	uint8_t held;                  /* members holding the payload */
	uint8_t told;                  /* ... that told the sender so (their
					  HAVE): one wedged when it landed
					  holds it back (rdmc_engine_wedge) */
	uint8_t stable;                /* members told it is held everywhere */
	/* A refused one: the sender cancels it (ABORT) once every receiver
	 * answered; each receiver learns so and acknowledges (unless
	 * wedged); once all did, the sender tells each that every member
	 * knows (ABORT_ALL), and only then is it passed over. */
	uint8_t aknown;                /* members that know it is cancelled */
	uint8_t acked;                 /* receivers that acknowledged that */
	uint8_t astable;               /* members told every member knows */
	uint8_t blk[SIM_MAX];          /* blocks each member holds (bits) */
	uint8_t cur[SIM_MAX];          /* each member's next write of its
					  plan */
};

struct detect {
	uint32_t j, c;
	uint64_t due;
};

struct vc_sim {
	struct vc_sim_opts o;
	uint32_t n;
	uint64_t rng, now, events;
	struct member m[SIM_MAX];
	struct link l[SIM_MAX][SIM_MAX];   /* [from][to] */
	uint64_t sent[SIM_MAX];            /* rounds sent: messages and nulls */
	uint64_t msgs[SIM_MAX];            /* messages sent */
	uint16_t mseq[SIM_MAX][ROUND_MAX]; /* per round: its message number,
					      or NULL_ROUND */
	uint16_t rlen[SIM_MAX][ROUND_MAX]; /* per round starting an SMC
					      record: its rounds (0 inside) */
	/* A message's number as the application sees it: refused ones
	 * (delivered nowhere) take none. qid[s][r] is set below qcur[s]. */
	uint16_t qid[SIM_MAX][ROUND_MAX];
	uint64_t qcur[SIM_MAX], qnext[SIM_MAX];
	struct rdmc_plan plan[BLOCKS_MAX + 1][SIM_MAX]; /* [blocks][rank] */
	struct payload pay[SIM_MAX][ROUND_MAX];
	struct detect det[SIM_MAX * SIM_MAX * 2];
	uint32_t ndet;
	/* The run's history, over every view it simulates: this view's
	 * members are ranks 0..n-1 here, ids id[] there. */
	struct vs_history *h;
	bool owns_h;
	uint64_t epoch;
	uint32_t id[SIM_MAX];
	uint32_t idnext;                   /* no member of the run had an id
					      from here up: where joiners
					      come from */
	size_t dstart[SIM_MAX];            /* each member's deliveries in the
					      history before this view */
	/* Each sender's application numbers: its messages here are numbered
	 * from qbase; the first nresend of them are those the last view's
	 * trim left out, sent again. */
	uint64_t qbase[SIM_MAX];
	uint32_t nresend[SIM_MAX];
	uint32_t violations;
	char first[768];
	uint32_t crashes, partitions, closes, njoins;
	uint64_t joins;                    /* .cfg index bits asked to join */
	uint64_t grace;                    /* events ag_own_flushed must hold
					      before a closer leaves alone */
	uint32_t faults_left;              /* crashes still allowed */
	uint32_t closes_left;              /* closes buggify may still start */
};

static uint64_t rnd(struct vc_sim *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(struct vc_sim *s, uint64_t n)
{
	return n ? rnd(s) % n : 0;
}

static bool chance(struct vc_sim *s, unsigned pct)
{
	return below(s, 100) < pct;
}

static void trace(struct vc_sim *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void trace(struct vc_sim *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->o.trace)
		return;
	fprintf(s->o.trace, "[%6" PRIu64 "] ", s->events);
	va_start(ap, fmt);
	vfprintf(s->o.trace, fmt, ap);
	va_end(ap);
	fputc('\n', s->o.trace);
}

static void violation(struct vc_sim *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void violation(struct vc_sim *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->violations++) {
		va_start(ap, fmt);
		vsnprintf(s->first, sizeof(s->first), fmt, ap);
		va_end(ap);
		trace(s, "VIOLATION %s", s->first);
	}
}

static bool running(const struct member *m)
{
	return !m->crashed && !m->stopped && !m->installed && !m->departed;
}

static uint64_t all_bits(const struct vc_sim *s)
{
	return (1ull << s->n) - 1;
}

/* The .cfg index bits of the view's members (their ids). */
static uint64_t view_bits(const struct vc_sim *s)
{
	uint64_t b = 0;

	for (uint32_t j = 0; j < s->n; j++)
		b |= 1ull << s->id[j];
	return b;
}

static uint64_t msg_hash(uint32_t sender, uint64_t mseq)
{
	uint64_t k[2] = { sender, mseq };

	return vs_hash(k, sizeof(k));
}

static const char *close_name(uint64_t close)
{
	switch (close) {
	case 0: return "not closing";
	case 1: return "closing";
	case 2: return "flushed";
	case VC_CLOSE_LEFT: return "leaving alone";
	default: return "?";
	}
}

/* ---- the SST ----------------------------------------------------------- */

static void push_row(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];

	m->pushes++;
	for (uint32_t k = 0; k < s->n; k++) {
		struct link *l = &s->l[j][k];
		struct push *p;

		if (k == j || !l->up)
			continue;
		/* A full pipeline merges into the newest pending push. */
		if (l->count == LINK_DEPTH)
			p = &l->q[(l->head + l->count - 1) % LINK_DEPTH];
		else
			p = &l->q[(l->head + l->count++) % LINK_DEPTH];
		p->r = m->row;
		p->seq = m->pushes;
	}
	m->dirty = false;
}

/* Take segment g of push p from member i into member k's copy, unless
 * an older push than the copy's. */
static void take_seg(struct member *k, uint32_t i, const struct push *p,
		     enum seg g)
{
	struct row *d = &k->seen[i];

	if (p->seq <= k->seen_seq[i][g])
		return;
	k->seen_seq[i][g] = p->seq;
	switch (g) {
	case SEG_HDR:
		d->susp = p->r.susp;
		break;
	case SEG_RECV:
		memcpy(d->recv, p->r.recv, sizeof(d->recv));
		break;
	case SEG_DONE:
		memcpy(d->done, p->r.done, sizeof(d->done));
		break;
	case SEG_CLOSE:
		d->sent = p->r.sent;
		d->closing = p->r.closing;
		break;
	case SEG_VC:
		memcpy(d->have, p->r.have, sizeof(d->have));
		d->ack = p->r.ack;
		memcpy(d->trim, p->r.trim, sizeof(d->trim));
		d->tadd = p->r.tadd;
		d->tmask = p->r.tmask;
		break;
	case SEG_JOIN:
		d->join = p->r.join;
		break;
	case NSEG:
		break;
	}
}

/* Land the oldest push on link from -> to: each segment whole, or torn
 * (looked at again later, so it lands late). */
bool vc_sim_deliver(struct vc_sim *s, uint32_t from, uint32_t to)
{
	struct link *l = &s->l[from][to];
	struct member *k = &s->m[to];
	struct push p;
	uint8_t torn = 0;

	if (!l->count)
		return false;
	p = l->q[l->head];
	l->head = (l->head + 1) % LINK_DEPTH;
	l->count--;
	if (k->crashed)
		return true;
	for (uint32_t g = 0; g < NSEG; g++) {
		if (chance(s, TORN_PCT))
			torn |= (uint8_t)(1u << g);
		else
			take_seg(k, from, &p, (enum seg)g);
	}
	if (torn) {
		k->late[from] = p;
		k->late_mask[from] = torn;
	} else if (p.seq > s->m[from].landed[to]) {
		s->m[from].landed[to] = p.seq;
	}
	trace(s, "push %u->%u #%" PRIu64 " landed%s", from, to, p.seq,
	      torn ? " (some segments torn)" : "");
	return true;
}

/* A later look at torn segments finds them whole. */
static void relook(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];

	for (uint32_t i = 0; i < s->n; i++) {
		if (!m->late_mask[i] || chance(s, 50))
			continue;
		for (uint32_t g = 0; g < NSEG; g++)
			if (m->late_mask[i] >> g & 1)
				take_seg(m, i, &m->late[i], (enum seg)g);
		m->late_mask[i] = 0;
		/* The write has finished landing: its sender learns that. */
		if (m->late[i].seq > s->m[i].landed[j])
			s->m[i].landed[j] = m->late[i].seq;
	}
}

/* ---- failures ---------------------------------------------------------- */

static void add_detect(struct vc_sim *s, uint32_t j, uint32_t c, uint64_t after)
{
	if (s->ndet < sizeof(s->det) / sizeof(s->det[0]))
		s->det[s->ndet++] = (struct detect){ j, c, s->now + after };
}

void vc_sim_detect(struct vc_sim *s, uint32_t j, uint32_t c)
{
	struct member *m = &s->m[j];

	if (!running(m) || (m->suspected >> c & 1))
		return;
	m->suspected |= 1ull << c;
	m->row.susp |= 1ull << c;
	m->dirty = true;
	trace(s, "member %u suspects %u", j, c);
}

/* Member c's links go down (crash, partition side, its old view dropped
 * at install, or its group closed): what is in flight may be lost, the
 * data it sent reaches some members and not others, and so may the
 * payloads it sent or relayed. */
static void cut_off(struct vc_sim *s, uint32_t c, uint64_t peers)
{
	for (uint32_t k = 0; k < s->n; k++) {
		if (k == c || !(peers >> k & 1))
			continue;
		if (chance(s, 50))
			s->l[c][k].count = 0;
		s->l[c][k].up = false;
		s->m[k].cap[c] = s->m[k].have[c] +
			below(s, s->sent[c] - s->m[k].have[c] + 1);
		if (!s->m[k].crashed)
			add_detect(s, k, c, 1 + below(s, 400));
	}
}

void vc_sim_crash(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];

	/* One that installed, closed or stopped is out of this view. */
	if (!running(m))
		return;
	m->crashed = true;
	s->crashes++;
	trace(s, "member %u crashes", j);
	cut_off(s, j, all_bits(s));
	vs_mark_crashed(s->h, s->id[j]);
}

static void partition(struct vc_sim *s)
{
	uint64_t side = 1 + below(s, all_bits(s) - 1);

	s->partitions++;
	trace(s, "partition: {%" PRIx64 "} | {%" PRIx64 "}", side,
	      all_bits(s) & ~side);
	for (uint32_t a = 0; a < s->n; a++)
		if (side >> a & 1) {
			cut_off(s, a, all_bits(s) & ~side);
			for (uint32_t b = 0; b < s->n; b++)
				if (!(side >> b & 1)) {
					s->l[b][a].count = 0;
					s->l[b][a].up = false;
					s->m[a].cap[b] = s->m[a].have[b];
					add_detect(s, a, b, 1 + below(s, 400));
				}
		}
}

/* ---- data ------------------------------------------------------------ */

/* Sender snd's next round, a message or a null, reaches every member its
 * link is up to (in order, with delays: arrive()). A large message's
 * round is its announcement; the sender holds its payload from the
 * start. */
static void send_record(struct vc_sim *s, uint32_t snd, bool msg, bool large,
			uint64_t nrounds)
{
	uint64_t r0 = s->sent[snd];
	struct smc_order_rec rec = {
		.rec = r0,
		.round = r0,
		.len = msg ? 16 : 0,
		.nrounds = (uint16_t)nrounds,
		.flags = msg ? 0 : SMC_REC_NULL,
	};

	for (uint64_t r = r0; r < r0 + nrounds; r++) {
		s->mseq[snd][r] = msg ? (uint16_t)s->msgs[snd]++ : NULL_ROUND;
		s->rlen[snd][r] = r == r0 ? (uint16_t)nrounds : 0;
		s->pay[snd][r] = (struct payload){
			.large = large,
			.k = large ? (uint8_t)(1 + below(s, BLOCKS_MAX)) : 0,
			.held = (uint8_t)(1u << snd),
			.told = (uint8_t)(1u << snd),
		};
		s->pay[snd][r].blk[snd] = 0xff;
	}
	s->sent[snd] = r0 + nrounds;
	s->m[snd].have[snd] = r0 + nrounds;
	if (smc_order_push(&s->m[snd].ord, snd, &rec))
		violation(s, "smc_order_push refused member %u's own record at "
			  "round %" PRIu64, snd, r0);
	for (uint32_t k = 0; k < s->n; k++)
		if (k != snd && s->l[snd][k].up)
			s->m[k].cap[snd] = r0 + nrounds;
}

static void send_msg(struct vc_sim *s, uint32_t snd, bool large)
{
	struct member *m = &s->m[snd];

	/* A closing member sends nothing more. */
	if (!running(m) || m->wedged || m->close || s->sent[snd] >= ROUND_MAX)
		return;
	send_record(s, snd, true, large, 1);
	if (large)
		trace(s, "member %u announces large message #%" PRIu64
		      " (round %" PRIu64 ")", snd, s->msgs[snd] - 1,
		      s->sent[snd] - 1);
}

void vc_sim_send(struct vc_sim *s, uint32_t snd)
{
	send_msg(s, snd, false);
}

void vc_sim_send_large(struct vc_sim *s, uint32_t snd)
{
	send_msg(s, snd, true);
}

/* An idle sender's null rounds, by SMC's rule (smc/order.h): enough that
 * every round it holds of the others can be delivered. Without them a
 * member that stopped sending (a closer) would hold back every later
 * position. One null record covers them, as SMC sends it (small_only:
 * one record per round, as the simulator did before). */
static void send_nulls(struct vc_sim *s, uint32_t j)
{
	uint64_t k = smc_order_null_rounds(s->m[j].have, s->n, j);

	if (k > ROUND_MAX - s->sent[j])
		k = ROUND_MAX - s->sent[j];
	if (k && !s->o.small_only)
		send_record(s, j, false, false, k);
	else
		for (uint64_t i = 0; i < k; i++)
			send_record(s, j, false, false, 1);
	if (k)
		trace(s, "member %u sends %" PRIu64 " null round%s", j, k,
		      k == 1 ? "" : "s");
}

static bool sq_full(const struct vc_sim *s, uint32_t j)
{
	return s->now < s->m[j].sq_full_until;
}

/* Sender snd's next SMC record lands at member k (whole: a record a
 * failure cut short never arrives) and goes to k's order engine. */
static bool arrive(struct vc_sim *s, uint32_t snd, uint32_t k)
{
	struct member *m = &s->m[k];
	uint64_t r = m->have[snd], len;
	struct smc_order_rec rec;
	int ret;

	if (k == snd || m->crashed || r >= s->sent[snd] || sq_full(s, snd))
		return false;
	len = s->rlen[snd][r];
	if (r + len > m->cap[snd])
		return false;
	rec = (struct smc_order_rec){
		.rec = r,
		.round = r,
		.len = s->mseq[snd][r] == NULL_ROUND ? 0 : 16,
		.nrounds = (uint16_t)len,
		.flags = s->mseq[snd][r] == NULL_ROUND ? SMC_REC_NULL : 0,
	};
	ret = smc_order_push(&m->ord, snd, &rec);
	if (ret)
		violation(s, "smc_order_push at member %u refused member %u's "
			  "record at round %" PRIu64 ": %d", k, snd, r, ret);
	m->have[snd] = r + len;
	return true;
}

void vc_sim_arrive_all(struct vc_sim *s)
{
	for (uint32_t snd = 0; snd < s->n; snd++)
		for (uint32_t k = 0; k < s->n; k++)
			while (arrive(s, snd, k))
				;
}

/* ---- large messages ------------------------------------------------------ */

/* The receivers of sender snd's transfers: every other member. */
static uint8_t receivers(const struct vc_sim *s, uint32_t snd)
{
	return (uint8_t)(all_bits(s) & ~(1ull << snd));
}

/* A large message is complete at member j (group/order.c's
 * xfer_complete): its payload is here, or j knows it is cancelled (then
 * it is delivered nowhere, alike everywhere). */
static bool complete(const struct payload *py, uint32_t j)
{
	return !py->large || ((py->held | py->aknown) >> j & 1);
}

/* The first large round of sender snd not complete at member j (or the
 * rounds sent, when there is none). */
static uint64_t large_cap(struct vc_sim *s, uint32_t j, uint32_t snd)
{
	uint64_t *c = &s->m[j].lcap[snd];

	while (*c < s->sent[snd] && complete(&s->pay[snd][*c], j))
		(*c)++;
	return *c;
}

/* What member j holds for the view change (group_have): all its own
 * rounds; another sender's rounds as they arrived, but never past a
 * large message whose payload is not here (its announcement not passed
 * yet, or its transfer not complete), so that a trim never holds a large
 * message some survivor lacks. */
static void vc_have(struct vc_sim *s, uint32_t j, uint64_t *have)
{
	const struct member *m = &s->m[j];

	memset(have, 0, SIM_MAX * sizeof(*have));
	for (uint32_t snd = 0; snd < s->n; snd++) {
		uint64_t c = snd == j ? UINT64_MAX : large_cap(s, j, snd);

		have[snd] = m->have[snd] < c ? m->have[snd] : c;
	}
}

/* The planted bug: a cancelled transfer is over where it is known to be
 * cancelled, as rdmc/engine.c once had it (mask for xfer_over). */
static uint8_t one_phase(const struct vc_sim *s)
{
	return s->o.plant_abort_one_phase ? 0xff : 0;
}

/* Over at member k: held and known stable, or cancelled and known to be
 * known everywhere (group/order.c delivers or passes it then). */
static bool xfer_over(const struct payload *py, uint32_t k, uint8_t plant)
{
	if (!py->large)
		return true;
	if (py->refused)
		return (py->astable | (py->aknown & plant)) >> k & 1;
	return (py->held & py->stable) >> k & 1;
}

/* A refused transfer at member k, one step: the sender cancels it once
 * every receiver answered (rdmc's sender_check); a receiver learns that
 * over the sender's link and acknowledges it unless wedged (like HAVE, an
 * acknowledgement would let members not wedged yet pass it while the
 * view change may decide otherwise); once every receiver did, the sender
 * tells each (ABORT_ALL). */
static bool abort_step(struct vc_sim *s, uint32_t k, uint32_t snd,
		       struct payload *py, uint64_t r)
{
	uint8_t bit = (uint8_t)(1u << k), sbit = (uint8_t)(1u << snd);
	uint8_t rcv = receivers(s, snd);

	if ((py->ready | py->refused) != rcv)
		return false;
	if (k == snd) {
		if (!(py->aknown & bit)) {
			py->aknown |= bit;
			trace(s, "member %u cancels large message #%u (round %"
			      PRIu64 "): receivers %x could not lease it", snd,
			      (unsigned)s->mseq[snd][r], r, py->refused);
			return true;
		}
		if (py->acked == rcv && !(py->astable & bit)) {
			py->astable |= bit;
			trace(s, "member %u: every receiver knows large message "
			      "#%u is cancelled", snd,
			      (unsigned)s->mseq[snd][r]);
			return true;
		}
		return false;
	}
	if (!s->l[snd][k].up)
		return false;
	if ((py->aknown & sbit) && !(py->aknown & bit)) {
		py->aknown |= bit;
		if (s->l[k][snd].up && !s->m[k].wedged)
			py->acked |= bit;
		trace(s, "member %u learns that large message #%u of member %u "
		      "is cancelled%s", k, (unsigned)s->mseq[snd][r], snd,
		      py->acked & bit ? "" : " (no acknowledgement)");
		return true;
	}
	if ((py->astable & sbit) && !(py->astable & bit)) {
		py->astable |= bit;
		trace(s, "member %u learns that every member knows large "
		      "message #%u of member %u is cancelled", k,
		      (unsigned)s->mseq[snd][r], snd);
		return true;
	}
	return false;
}

/* RDMC at member k takes sender snd's first transfer that is not over
 * here one step further, as rdmc/engine.c does: the next write of k's
 * plan (rdmc_plan_build: the binomial pipeline over ranks counted from
 * the sender) goes once k holds its block and its target is READY (the
 * sender waits for every receiver's answer first); a write on a link
 * that is down is lost, so a relay cut off starves the ranks below it. A
 * receiver holding every block tells the sender (HAVE, held back when
 * wedged); once every member did, k learns that every member holds it
 * (the stable callback, from the sender over its link). A refused one is
 * cancelled instead (abort_step). It runs from completions: on a wedged
 * member too, and on one leaving alone until it is gone. Returns whether
 * it moved. */
static bool rdmc_step(struct vc_sim *s, uint32_t k, uint32_t snd,
		      bool writes_only)
{
	struct member *m = &s->m[k];
	uint8_t bit = (uint8_t)(1u << k);
	uint64_t *c = &m->lnext[snd];
	const struct rdmc_plan *pl;
	struct payload *py;

	if (!running(m))
		return false;
	while (*c < s->sent[snd] &&
	       xfer_over(&s->pay[snd][*c], k, one_phase(s)))
		(*c)++;
	if (*c >= s->sent[snd])
		return false;
	py = &s->pay[snd][*c];
	if (py->refused)
		return !writes_only && abort_step(s, k, snd, py, *c);
	pl = &s->plan[py->k][(k + s->n - snd) % s->n];
	if (py->cur[k] < pl->nsends && !sq_full(s, k)) {
		struct rdmc_send_op op = pl->sends[py->cur[k]];
		uint32_t t = (op.peer + snd) % s->n;
		uint8_t tbit = (uint8_t)(1u << t), all = (uint8_t)((1u << py->k) - 1);

		if ((py->blk[k] >> op.block & 1) && (py->ready & tbit) &&
		    (k != snd || py->ready == receivers(s, snd))) {
			py->cur[k]++;
			if (!s->l[k][t].up || s->m[t].crashed) {
				trace(s, "member %u's write of block %u of large "
				      "message #%u of member %u to member %u is "
				      "lost", k, op.block,
				      (unsigned)s->mseq[snd][*c], snd, t);
				return true;
			}
			py->blk[t] |= (uint8_t)(1u << op.block);
			if (py->blk[t] != all || (py->held & tbit))
				return true;
			py->held |= tbit;
			if (s->l[t][snd].up &&
			    (!s->m[t].wedged || s->o.plant_have_while_wedged))
				py->told |= tbit;
			trace(s, "payload of large message #%u of member %u "
			      "(round %" PRIu64 ", %u blocks) lands at member %u"
			      "%s%s", (unsigned)s->mseq[snd][*c], snd, *c,
			      py->k, t, py->held == all_bits(s) ?
			      ": every member holds it" : "",
			      py->told & tbit ? "" : " (wedged: no HAVE)");
			return true;
		}
	}
	if (writes_only || !(py->held & bit) || (py->stable & bit) ||
	    py->told != all_bits(s) || (k != snd && !s->l[snd][k].up))
		return false;
	py->stable |= bit;
	trace(s, "member %u learns that large message #%u of member %u is "
	      "held everywhere (stable)", k, (unsigned)s->mseq[snd][*c],
	      snd);
	return true;
}

bool vc_sim_rdmc(struct vc_sim *s, uint32_t k, uint32_t snd)
{
	return rdmc_step(s, k, snd, false);
}

bool vc_sim_rdmc_write(struct vc_sim *s, uint32_t k, uint32_t snd)
{
	return rdmc_step(s, k, snd, true);
}

void vc_sim_drop(struct vc_sim *s, uint32_t from, uint32_t to)
{
	s->l[from][to].count = 0;
}

bool vc_sim_adopted(const struct vc_sim *s, uint32_t j)
{
	return s->m[j].st.adopted;
}

/* ---- a member's pass ---------------------------------------------------- */

/* The number the application sees for the message at round r of sender
 * snd: its place among the sender's messages not refused. Every refusal
 * before r is decided by the time r reaches any member's application
 * (what precedes it there was delivered or passed over). */
static uint64_t app_id(struct vc_sim *s, uint32_t snd, uint64_t r)
{
	while (s->qcur[snd] <= r) {
		uint64_t i = s->qcur[snd]++;

		if (s->mseq[snd][i] != NULL_ROUND && !s->pay[snd][i].refused)
			s->qid[snd][i] = (uint16_t)s->qnext[snd]++;
	}
	return s->qid[snd][r];
}

/* Position pos reaches member j's application: a message is delivered
 * (and counted in its delivered column), a null is passed over. */
static void deliver(struct vc_sim *s, uint32_t j, uint64_t pos)
{
	struct member *m = &s->m[j];
	uint32_t snd = (uint32_t)(pos % s->n);
	uint64_t r = pos / s->n, q;

	if (m->have[snd] <= r) {
		violation(s, "member %u delivers round %" PRIu64 " of member "
			  "%u, which it does not hold (it holds %" PRIu64 ")",
			  j, r, snd, m->have[snd]);
		if (r >= s->sent[snd])
			return;
	}
	if (s->mseq[snd][r] == NULL_ROUND)
		return;
	m->done[snd]++;
	if (s->pay[snd][r].refused)
		return; /* cancelled: delivered nowhere, counted as done */
	q = s->qbase[snd] + app_id(s, snd, r);
	vs_add_deliver(s->h, s->id[j], s->epoch, m->ndelivered++, s->id[snd],
		       q, 16, msg_hash(s->id[snd], q));
}

/* A position the trim holds, at member j: delivered, or passed over (a
 * cancelled large message known so here); a large message needs its
 * payload here (the group fails with -EPROTO otherwise). */
static void trim_deliver(struct vc_sim *s, uint32_t j, uint64_t p)
{
	uint32_t snd = (uint32_t)(p % s->n);
	uint64_t r = p / s->n;
	const struct payload *py = &s->pay[snd][r];

	if (r < s->sent[snd] && !complete(py, j)) {
		violation(s, "member %u's trim holds large message #%u of "
			  "member %u (round %" PRIu64 "), which it does not "
			  "have", j, (unsigned)s->mseq[snd][r], snd, r);
		return;
	}
	deliver(s, j, p);
}

/* The trim, as group_deliver_trim delivers it: what waits in the
 * delivery queue (passed by SMC), each below its sender's trim; then
 * SMC's order engine passes the rest up to the trim
 * (smc_order_collect_trim). */
static void deliver_trim(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];
	uint64_t end = vc_trim_end(m->st.trim, s->n), trim[SIM_MAX];
	struct smc_order_event ev[64];
	uint32_t got;

	/* What it delivered before the wedge must be inside the trim. A null
	 * round of its own it passed may lie beyond (smc_order_frontier_here
	 * passes a member's nulls before every member holds them): it
	 * delivered nothing there. */
	for (uint64_t p = 0; p < m->app_pos; p++)
		if (p / s->n >= m->st.trim[p % s->n] &&
		    !(p % s->n == j && s->mseq[j][p / s->n] == NULL_ROUND))
			violation(s, "member %u delivered round %" PRIu64 " of "
				  "member %u before the wedge; the trim it "
				  "adopted ends that sender at %" PRIu64, j,
				  p / s->n, (uint32_t)(p % s->n),
				  m->st.trim[p % s->n]);
	for (uint64_t p = m->app_pos; p < m->ord.next_seq; p++)
		if (p / s->n < m->st.trim[p % s->n])
			trim_deliver(s, j, p);
	for (uint32_t k = 0; k < s->n; k++) {
		trim[k] = m->st.trim[k];
		if (trim[k] > m->have[k]) {
			violation(s, "member %u's trim holds %" PRIu64 " rounds "
				  "of member %u; it holds %" PRIu64, j, trim[k],
				  k, m->have[k]);
			trim[k] = m->have[k];
		}
	}
	while ((got = smc_order_collect_trim(&m->ord, trim, ev, 64)) > 0)
		for (uint32_t i = 0; i < got; i++)
			if (!(ev[i].rec.flags & SMC_REC_NULL))
				trim_deliver(s, j, ev[i].seq);
	if (end > m->app_pos)
		m->app_pos = end;
	trace(s, "member %u delivers the trim (end %" PRIu64 ")", j, end);
}

/* Messages of sender snd among its first `rounds` rounds that are owed
 * (not refused: their sender was told they failed). */
static uint64_t owed_below(const struct vc_sim *s, uint32_t snd,
			   uint64_t rounds)
{
	uint64_t q = 0;

	for (uint64_t r = 0; r < rounds && r < s->sent[snd]; r++)
		if (s->mseq[snd][r] != NULL_ROUND && !s->pay[snd][r].refused)
			q++;
	return q;
}

/* The SEND records of member j's messages among its first `rounds`
 * rounds that are owed. A message sent again here, because the last
 * view's trim left it out, is recorded here, as sent in this view: a
 * view whose members install the next one records only what its trim
 * holds, and the rest is owed in a view the run may not simulate. */
static void record_sends(struct vc_sim *s, uint32_t j, uint64_t rounds)
{
	uint64_t nq = owed_below(s, j, rounds);

	for (uint64_t i = 0; i < nq; i++)
		vs_add_send(s->h, s->id[j], s->epoch, s->qbase[j] + i);
}

/* The ids of the view after the trim member m adopted: its survivors in
 * rank order, then the joiners it adds. Returns how many. */
static uint32_t next_ids(const struct vc_sim *s, const struct member *m,
			 uint32_t *ids)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < s->n; i++)
		if (!(m->st.tmask >> i & 1))
			ids[k++] = s->id[i];
	for (uint32_t i = 0; i < VS_MAX_MEMBERS; i++)
		if (m->st.tadd >> i & 1)
			ids[k++] = i;
	return k;
}

static void install(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];
	uint32_t ids[VS_MAX_MEMBERS], k = next_ids(s, m, ids);

	/* Its sends: those below its trim were delivered in this view; the
	 * rest go again in the next one (not owed here: if the run goes on
	 * into that view, they are recorded there). Its END comes when the
	 * run ends with this view (end_installed). */
	record_sends(s, j, m->st.trim[j]);
	m->installed = true;
	vs_add_view(s->h, s->id[j], s->epoch + 1, ids, k, m->ndelivered);
	trace(s, "member %u installs view %" PRIu64 " (mask %" PRIx64
	      ", adds %" PRIx64 ")", j, s->epoch + 1, m->st.tmask, m->st.tadd);
	/* Its old connections close: the others see errors on them. */
	cut_off(s, j, all_bits(s));
}

/* group_close returns: the member left alone or flushed with the others
 * (its history ends when the run is judged, vc_sim_finish). Its
 * connections close, as at install. */
static void depart(struct vc_sim *s, uint32_t j, const char *why)
{
	struct member *m = &s->m[j];

	m->departed = true;
	trace(s, "member %u closes (%s, %" PRIu64 " messages sent): %s", j,
	      m->close == 2 ? "flushed" : "left alone", s->msgs[j], why);
	cut_off(s, j, all_bits(s));
}

/* SMC passes the positions stable here (smc_order_frontier_here over the
 * received counters it has and its own null records, each sender
 * credited as SMC does with what arrived of it, smc_order_credit_senders;
 * smc_order_collect); passing a large message's announcement is where a
 * receiver joins its transfer (rdmc_expect: its READY, or a refusal when
 * it cannot lease a buffer).
 * Then the delivery queue: each position is delivered in order, a large
 * message once this member learned that every member holds its payload
 * (or passed over once it learned that every member knows it was
 * cancelled), and what follows waits behind it. */
static void normal_delivery(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];
	uint64_t recv[SIM_MAX * SIM_MAX], frontier;
	struct smc_order_event ev[64];
	uint32_t got;

	for (uint32_t k = 0; k < s->n; k++)
		memcpy(&recv[k * s->n], k == j ? m->have : m->seen[k].recv,
		       s->n * sizeof(recv[0]));
	smc_order_credit_senders(recv, s->n, j);
	frontier = smc_order_frontier_here(&m->ord, recv, j);
	while ((got = smc_order_collect(&m->ord, frontier, ev, 64)) > 0)
		for (uint32_t i = 0; i < got; i++) {
			uint32_t snd = ev[i].sender;
			uint64_t r = ev[i].rec.round;
			struct payload *py = &s->pay[snd][r];

			if (ev[i].rec.flags & SMC_REC_NULL)
				continue;
			if (ev[i].seq != r * s->n + snd)
				violation(s, "member %u: SMC passed round %" PRIu64
					  " of member %u at position %" PRIu64,
					  j, r, snd, ev[i].seq);
			if (snd == j || !py->large)
				continue;
			if (m->refuse_next ? !(m->refuse_next = false) :
			    chance(s, REFUSE_PCT)) {
				py->refused |= (uint8_t)(1u << j);
				trace(s, "member %u cannot lease a buffer for "
				      "large message #%u of member %u", j,
				      (unsigned)s->mseq[snd][r], snd);
			} else {
				py->ready |= (uint8_t)(1u << j);
			}
		}
	while (m->app_pos < m->ord.next_seq) {
		uint64_t p = m->app_pos, r = p / s->n;
		uint32_t snd = (uint32_t)(p % s->n);

		if (s->pay[snd][r].large &&
		    !xfer_over(&s->pay[snd][r], j, one_phase(s)))
			break;
		if (s->pay[snd][r].large)
			trace(s, "member %u %s large message #%u of member %u",
			      j, s->pay[snd][r].refused ? "passes over" :
			      "delivers", (unsigned)s->mseq[snd][r], snd);
		deliver(s, j, p);
		m->app_pos++;
	}
}

/* Its SMC counters (received, and delivered per sender) into its row,
 * as group_pass publishes them: only while no view change is under way
 * (a wedged member's pass stops at the view step). As SMC's core, only a
 * change in what it holds of another sender makes the row change: its
 * own rounds are written along with such a change, never alone (the
 * others credit it with them, smc_order_credit_senders). */
static void publish_counters(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];

	for (uint32_t k = 0; k < s->n; k++)
		if (k != j && m->row.recv[k] != m->have[k]) {
			memcpy(m->row.recv, m->have, sizeof(m->have));
			m->dirty = true;
			break;
		}
	if (memcmp(m->row.done, m->done, sizeof(m->done))) {
		memcpy(m->row.done, m->done, sizeof(m->done));
		m->dirty = true;
	}
}

/* A member that stops says so in its row (it suspects itself, as the
 * group does through sst_leave), so that the others count it gone. */
static void stop(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];

	m->stopped = true;
	m->row.susp |= 1ull << j;
	push_row(s, j);
	trace(s, "member %u says it is out (push #%" PRIu64 ")", j, m->pushes);
	vs_add_end(s->h, s->id[j], VS_END_STOPPED);
}

/* Learn the suspicions in believed rows (not from suspected members);
 * one naming this member cuts it off. Returns false when it ends. */
static bool learn(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];
	uint64_t all = 0;

	/* (a member that says it is out says nothing of the others) */
	for (uint32_t i = 0; i < s->n; i++)
		if (i != j && !(m->suspected >> i & 1))
			all |= m->seen[i].susp >> i & 1 ? 1ull << i :
				m->seen[i].susp;
	if (all >> j & 1) {
		/* Past its flush (closing 2 or leaving alone), group_close
		 * waits on tolerating failures: it returns 0 all the same. */
		if (m->close >= 2) {
			depart(s, j, "cut off by a peer while it waits");
			return false;
		}
		stop(s, j);
		trace(s, "member %u is suspected by a peer: cut off, stops", j);
		return false;
	}
	all &= all_bits(s) & ~m->suspected;
	for (uint32_t c = 0; c < s->n; c++)
		if (all >> c & 1)
			vc_sim_detect(s, j, c);
	return true;
}

/* ---- closes and joins ---------------------------------------------------- */

/* The close agreements' inputs (agree.h) as member j reads its rows
 * (group.c's ag_read): its own row as it publishes it. */
static void ag_fill(const struct vc_sim *s, uint32_t j, struct ag_row *rows,
		    struct ag_in *in)
{
	const struct member *m = &s->m[j];

	for (uint32_t i = 0; i < s->n; i++) {
		const struct row *r = i == j ? &m->row : &m->seen[i];

		rows[i] = (struct ag_row){
			.closing = r->closing,
			.sent = r->sent,
			.ack = r->ack,
			.done = r->done,
			.suspected = i != j && (m->suspected >> i & 1),
		};
	}
	*in = (struct ag_in){
		.n = s->n,
		.me = j,
		.rows = rows,
		.wedged = m->wedged,
		.sent = s->msgs[j],
	};
}

static void set_close(struct vc_sim *s, uint32_t j, uint64_t close)
{
	struct member *m = &s->m[j];

	m->close = close;
	m->row.closing = close;
	m->dirty = true;
}

/* Faults on purpose at the protocol's sharp edges (`closed`: the member
 * just published a new close state). */
static bool buggify(struct vc_sim *s, uint32_t j, unsigned acts, bool closed);

/* group_close begins: the member stops sending and publishes closing = 1
 * with the messages it sent. */
void vc_sim_close(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];

	if (!running(m) || m->close)
		return;
	s->closes++;
	set_close(s, j, 1);
	m->row.sent = s->msgs[j];
	push_row(s, j);
	trace(s, "member %u starts closing: closing=1, sent %" PRIu64, j,
	      s->msgs[j]);
	buggify(s, j, 0, true);
}

/* A join request reaches member j: the .cfg index bit of the joiner in
 * its join column (group_join_poll does that in the group). */
void vc_sim_join(struct vc_sim *s, uint32_t j, uint32_t index)
{
	struct member *m = &s->m[j];

	if (!running(m) || index < s->idnext || index >= VS_MAX_MEMBERS)
		return;
	s->njoins++;
	s->joins |= 1ull << index;
	m->row.join |= 1ull << index;
	push_row(s, j);
	trace(s, "member %u takes a join request of .cfg index %u", j, index);
}

/* Leaving alone, as group.c's own_flushed: ag_own_flushed has to hold
 * for the grace time without a break, so that closers that come a little
 * later flush together with this one instead. */
static bool own_flushed(struct vc_sim *s, uint32_t j, const struct ag_in *in)
{
	struct member *m = &s->m[j];

	if (!ag_own_flushed(in)) {
		m->leave_since = 0;
		return false;
	}
	if (!m->leave_since)
		m->leave_since = s->now + 1;
	return s->now + 1 - m->leave_since >= s->grace;
}

/* One turn of group_close's waits, on the rows as member j has them.
 * Returns true when the wait is over and the member departs. */
static bool close_turn(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];
	struct ag_row rows[SIM_MAX];
	struct ag_in in;

	ag_fill(s, j, rows, &in);
	switch (m->close) {
	case 1:
		if (ag_flushed(&in)) {
			m->leave_since = 0;
			set_close(s, j, 2);
			trace(s, "member %u: every member is closing and has "
			      "delivered everything (ag_flushed): "
			      "closing=2", j);
		} else if (s->o.plant_leave_early || own_flushed(s, j, &in)) {
			uint32_t k = 0;

			while (k < s->n && rows[k].closing)
				k++;
			set_close(s, j, VC_CLOSE_LEFT);
			if (s->o.plant_leave_early)
				trace(s, "member %u leaves alone: closing=%u "
				      "(planted: without ag_own_flushed)", j,
				      VC_CLOSE_LEFT);
			else
				trace(s, "member %u leaves alone: closing=%u "
				      "(ag_own_flushed held through the grace "
				      "time; as it sees, member %u is not "
				      "closing)", j, VC_CLOSE_LEFT, k);
		}
		return false;
	case 2:
		return ag_all_flushed(&in);
	case VC_CLOSE_LEFT:
		return ag_leave_seen(&in);
	default:
		return false;
	}
}

/* ---- the step ---------------------------------------------------------- */

/* What member j publishes for the view change, in the trace. */
static void trace_have(struct vc_sim *s, uint32_t j, const uint64_t *have,
		       uint64_t ack)
{
	char buf[SIM_MAX * 22];
	size_t len = 0;

	if (!s->o.trace)
		return;
	buf[0] = 0;
	for (uint32_t k = 0; k < s->n; k++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%"
					PRIu64, k ? " " : "", have[k]);
	trace(s, "member %u publishes have [%s], ack %" PRIx64, j, buf, ack);
}

/* The view-change pass (group_view_pass): the core's step on the rows as
 * the member has them, its actions applied to its row and delivery.
 * Returns whether a view change is under way, with the actions taken in
 * *acts; a member that stops returns stopped. */
static bool view_pass(struct vc_sim *s, uint32_t j, unsigned *acts)
{
	struct member *m = &s->m[j];
	struct vc_row rows[SIM_MAX];
	uint64_t have[SIM_MAX];
	struct vc_out out;
	struct vc_in in = {
		.n = s->n,
		.me = j,
		.suspected = m->suspected,
		.inview = view_bits(s),
		.closing = m->close != 0,
		.rows = rows,
		.have = have,
	};
	bool on;

	vc_have(s, j, have);
	in.landed = true;
	for (uint32_t k = 0; k < s->n; k++)
		if (k != j && !(m->suspected >> k & 1) && s->l[j][k].up &&
		    m->landed[k] < m->fence)
			in.landed = false;
	for (uint32_t i = 0; i < s->n; i++) {
		const struct row *r = i == j ? &m->row : &m->seen[i];

		memset(&rows[i], 0, sizeof(rows[i]));
		rows[i].closing = r->closing;
		rows[i].ack = r->ack;
		rows[i].join = r->join;
		rows[i].tmask = r->tmask;
		rows[i].tadd = r->tadd;
		memcpy(rows[i].have, r->have, sizeof(r->have));
		memcpy(rows[i].trim, r->trim, sizeof(r->trim));
	}
	on = vc_step(&in, &m->st, &out);
	*acts = out.acts;
	if (out.acts & VC_ACT_WEDGE) {
		m->wedged = true;
		trace(s, "member %u wedges", j);
	}
	if (out.acts & VC_ACT_STOP) {
		stop(s, j);
		trace(s, "member %u stops: %u of %u reachable", j, out.alive,
		      out.base);
		return true;
	}
	if (out.acts & VC_ACT_PUBLISH) {
		/* Pushed when it says something new: payloads that landed
		 * since (transfers go on while it is wedged) raise it. */
		if (memcmp(m->row.have, have, sizeof(have)) ||
		    m->row.ack != out.ack) {
			m->dirty = true;
			trace_have(s, j, have, out.ack);
		}
		memcpy(m->row.have, have, sizeof(have));
		m->row.ack = out.ack;
	}
	if (out.acts & VC_ACT_ADOPT) {
		memcpy(m->row.trim, m->st.trim, sizeof(m->row.trim));
		m->row.tadd = m->st.tadd;
		m->row.tmask = m->st.tmask + 1;
		m->dirty = true;
		/* The push that carries it is the next one. */
		m->fence = m->pushes + 1;
		trace(s, "member %u adopts a trim for mask %" PRIx64
		      " (adds %" PRIx64 ")", j, m->st.tmask, m->st.tadd);
	}
	if (s->o.plant_early_delivery ? (out.acts & VC_ACT_ADOPT) != 0 :
	    (out.acts & VC_ACT_DELIVER) != 0)
		deliver_trim(s, j);
	return on;
}

void vc_sim_member_step(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];
	uint64_t close0 = m->close;
	unsigned acts = 0;
	bool on = false, early, quiet, leave = false, delivers;

	if (!running(m))
		return;
	relook(s, j);
	if (!learn(s, j))
		return;
	/* group_close runs on a thread of its own: its turn comes before or
	 * after this pass's view step, and a view step that began before
	 * the closer went quiet (closing 2 or left) still runs. */
	quiet = m->close >= 2;
	early = m->close == 1 && chance(s, 50);
	if (early)
		close_turn(s, j);
	if (!quiet) {
		on = view_pass(s, j, &acts);
		if (!running(m))
			return;
	}
	/* A member leaving alone delivers nothing more (group_pass stops
	 * at leave_stop): no delivery, no nulls, no counters; RDMC goes on
	 * (vc_sim_rdmc). The planted bug keeps its delivery, as group/ once
	 * did. */
	delivers = m->close != VC_CLOSE_LEFT || s->o.plant_leaver_delivers;
	if (!on && !m->wedged && delivers) {
		normal_delivery(s, j);
		send_nulls(s, j);
	}
	if (!on && delivers)
		publish_counters(s, j);
	if (m->close && !early && !(acts & VC_ACT_INSTALL))
		leave = close_turn(s, j);
	/* A full send queue puts its push off (the row stays dirty). */
	if (m->dirty && !sq_full(s, j))
		push_row(s, j);
	if (acts & VC_ACT_INSTALL) {
		install(s, j);
		return;
	}
	if (leave) {
		depart(s, j, m->close == 2 ? "every other member flushed too "
		       "or is suspected (ag_all_flushed)" : "the others took "
		       "its leave in (ag_leave_seen)");
		return;
	}
	buggify(s, j, acts, m->close != close0);
}

/* ---- schedules ---------------------------------------------------------- */

static bool buggify(struct vc_sim *s, uint32_t j, unsigned acts, bool closed)
{
	struct member *m = &s->m[j];
	bool edge = acts & (VC_ACT_ADOPT | VC_ACT_WEDGE | VC_ACT_DELIVER);

	/* A close in the middle of a view change. */
	if (s->closes_left && !m->close &&
	    (acts & (VC_ACT_ADOPT | VC_ACT_WEDGE)) && chance(s, 8)) {
		s->closes_left--;
		trace(s, "buggify: member %u closes right after %s", j,
		      acts & VC_ACT_ADOPT ? "adopting a trim" : "wedging");
		vc_sim_close(s, j);
		return true;
	}
	if (!s->faults_left || !(edge || closed) || !chance(s, 8))
		return false;
	s->faults_left--;
	if (closed)
		trace(s, "buggify: member %u dies right after publishing "
		      "closing=%" PRIu64 " (%s)", j, m->close,
		      close_name(m->close));
	else
		trace(s, "buggify: member %u dies right after %s", j,
		      acts & VC_ACT_DELIVER ? "delivering the trim" :
		      acts & VC_ACT_ADOPT ? "adopting a trim" : "wedging");
	vc_sim_crash(s, j);
	return true;
}

static void fire_detections(struct vc_sim *s)
{
	for (uint32_t i = 0; i < s->ndet;) {
		if (s->det[i].due <= s->now) {
			vc_sim_detect(s, s->det[i].j, s->det[i].c);
			s->det[i] = s->det[--s->ndet];
		} else {
			i++;
		}
	}
}

/* One random event: a member's pass, a push landing, a round arriving,
 * a step of a large message's transfer, a message sent (small or
 * large). */
static void random_event(struct vc_sim *s, bool sends)
{
	/* Small messages only: the event mix of the simulator before it
	 * modelled large ones, so that a seed found then replays exactly. */
	uint64_t kinds = s->o.small_only ? 12 : 14;
	uint64_t pick = below(s, kinds);

	s->now++;
	s->events++;
	fire_detections(s);
	if (pick < 4) {
		vc_sim_member_step(s, (uint32_t)below(s, s->n));
	} else if (pick < 8) {
		uint32_t from = (uint32_t)below(s, s->n);
		uint32_t to = (uint32_t)below(s, s->n);

		vc_sim_deliver(s, from, to);
	} else if (pick < 11 || (pick == kinds - 1 && !sends)) {
		arrive(s, (uint32_t)below(s, s->n), (uint32_t)below(s, s->n));
	} else if (pick < kinds - 1) {
		uint32_t k = (uint32_t)below(s, s->n);

		vc_sim_rdmc(s, k, (uint32_t)below(s, s->n));
	} else {
		uint32_t snd = (uint32_t)below(s, s->n);

		send_msg(s, snd, !s->o.small_only && chance(s, LARGE_PCT));
	}
}

void vc_sim_refuse(struct vc_sim *s, uint32_t j)
{
	s->m[j].refuse_next = true;
}

void vc_sim_sq_full(struct vc_sim *s, uint32_t j, uint64_t events)
{
	if (!running(&s->m[j]))
		return;
	s->m[j].sq_full_until = s->now + events;
	trace(s, "member %u's send queues are full for %" PRIu64 " events", j,
	      events);
}

static bool anyone_running(const struct vc_sim *s)
{
	for (uint32_t j = 0; j < s->n; j++)
		if (running(&s->m[j]))
			return true;
	return false;
}

/* What a view of s->n members starts with: every link up, each member's
 * order engine, and the RDMC plans of every block count and rank. */
static int init_view(struct vc_sim *s)
{
	for (uint32_t j = 0; j < s->n; j++) {
		for (uint32_t k = 0; k < s->n; k++)
			s->l[j][k].up = j != k;
		if (smc_order_init(&s->m[j].ord, s->n, ROUND_MAX))
			return -1;
	}
	for (uint32_t k = 1; k <= BLOCKS_MAX; k++)
		for (uint32_t r = 0; r < s->n; r++)
			if (rdmc_plan_build(RDMC_BINOMIAL, s->n, k, r,
					    &s->plan[k][r]))
				return -1;
	return 0;
}

struct vc_sim *vc_sim_new(uint32_t n, const struct vc_sim_opts *o)
{
	struct vc_sim *s = calloc(1, sizeof(*s));
	uint32_t ids[SIM_MAX];

	if (!s || n < 2 || n > SIM_MAX) {
		free(s);
		return NULL;
	}
	s->o = *o;
	s->n = n;
	s->rng = o->seed;
	s->h = malloc(sizeof(*s->h));
	if (!s->h) {
		free(s);
		return NULL;
	}
	s->owns_h = true;
	vs_history_init(s->h);
	s->idnext = n;
	for (uint32_t i = 0; i < n; i++)
		ids[i] = s->id[i] = i;
	for (uint32_t j = 0; j < n; j++)
		vs_add_view(s->h, j, 0, ids, n, 0);
	if (init_view(s)) {
		vc_sim_free(s);
		return NULL;
	}
	return s;
}

void vc_sim_free(struct vc_sim *s)
{
	if (!s)
		return;
	for (uint32_t j = 0; j < SIM_MAX; j++)
		smc_order_fini(&s->m[j].ord);
	for (uint32_t k = 0; k <= BLOCKS_MAX; k++)
		for (uint32_t r = 0; r < SIM_MAX; r++)
			rdmc_plan_free(&s->plan[k][r]);
	if (s->owns_h) {
		vs_history_free(s->h);
		free(s->h);
	}
	free(s);
}

/* ---- judging ------------------------------------------------------------ */

static void describe(const struct vc_sim *s, uint32_t j, char *buf, size_t len)
{
	const struct member *m = &s->m[j];

	snprintf(buf, len, "member %u: phase %d, adopted %d (mask %" PRIx64
		 "), suspects %" PRIx64 ", ack %" PRIx64 ", %s", j,
		 (int)m->st.phase, m->st.adopted, m->st.tmask, m->suspected,
		 m->row.ack, close_name(m->close));
}

/* Why ag_flushed does not hold, in words. */
static void why_not_flushed(const struct ag_in *in, char *buf, size_t len)
{
	for (uint32_t k = 0; k < in->n; k++)
		if (in->rows[k].closing < 1) {
			snprintf(buf, len, "member %u is not closing", k);
			return;
		}
	for (uint32_t k = 0; k < in->n; k++)
		for (uint32_t j = 0; j < in->n; j++)
			if (in->rows[j].closing != VC_CLOSE_LEFT &&
			    in->rows[j].done[k] < in->rows[k].sent) {
				snprintf(buf, len, "member %u delivered %"
					 PRIu64 " of the %" PRIu64 " messages "
					 "member %u sent", j,
					 in->rows[j].done[k], in->rows[k].sent,
					 k);
				return;
			}
	snprintf(buf, len, "it holds");
}

/* Why ag_own_flushed does not hold, in words. */
static void why_not_own(const struct ag_in *in, char *buf, size_t len)
{
	const struct ag_row *me = &in->rows[in->me];

	if (in->wedged) {
		snprintf(buf, len, "it is wedged");
		return;
	}
	if (me->sent != in->sent) {
		snprintf(buf, len, "it published sent %" PRIu64 " of %"
			 PRIu64, me->sent, in->sent);
		return;
	}
	for (uint32_t j = 0; j < in->n; j++)
		if (in->rows[j].done[in->me] < me->sent) {
			snprintf(buf, len, "member %u delivered %" PRIu64
				 " of its %" PRIu64 " messages", j,
				 in->rows[j].done[in->me], me->sent);
			return;
		}
	snprintf(buf, len, "every member is closing");
}

/* A closer that never finished: which agreement it waits in, and why it
 * does not hold. */
static void why_waiting(const struct vc_sim *s, uint32_t j, char *buf,
			size_t len)
{
	const struct member *m = &s->m[j];
	struct ag_row rows[SIM_MAX];
	struct ag_in in;
	char a[128], b[128], st[256];

	ag_fill(s, j, rows, &in);
	describe(s, j, st, sizeof(st));
	if (m->close == 1) {
		why_not_flushed(&in, a, sizeof(a));
		why_not_own(&in, b, sizeof(b));
		snprintf(buf, len, "member %u waits forever to close: it "
			 "cannot flush with the others (ag_flushed: %s) nor "
			 "leave alone (ag_own_flushed: %s); %s", j, a, b, st);
		return;
	}
	for (uint32_t k = 0; k < s->n; k++) {
		const struct ag_row *r = &rows[k];

		if (k == j || r->suspected)
			continue;
		if (m->close == 2 && r->closing < 2) {
			snprintf(buf, len, "member %u waits forever for the "
				 "others to flush (ag_all_flushed): member %u "
				 "shows closing=%" PRIu64 " and is not "
				 "suspected; %s", j, k, r->closing, st);
			return;
		}
		if (m->close == VC_CLOSE_LEFT && r->closing < 1 &&
		    !(r->ack && ((r->ack - 1) >> j & 1))) {
			snprintf(buf, len, "member %u waits forever to leave "
				 "(ag_leave_seen): member %u is not suspected, "
				 "not closing and not wedged for a change "
				 "without it (ack %" PRIx64 "); %s", j, k,
				 r->ack, st);
			return;
		}
	}
	snprintf(buf, len, "member %u waits forever (%s)", j, st);
}

static bool same_del(const struct vs_deliver *a, const struct vs_deliver *b)
{
	return a->sender == b->sender && a->mseq == b->mseq;
}

/* Members that flushed together delivered one and the same sequence,
 * holding every message of each member that closed (flushed too, or left
 * alone: either way all it sent is delivered everywhere). */
static void check_flushers(struct vc_sim *s)
{
	int ref = -1;

	for (uint32_t j = 0; j < s->n; j++) {
		const struct vs_member *a, *b;
		size_t i, na, nb;

		if (!s->m[j].departed || s->m[j].close != 2)
			continue;
		for (uint32_t k = 0; k < s->n; k++)
			if (s->m[k].departed && s->m[j].done[k] < s->msgs[k])
				violation(s, "member %u flushed, but delivered "
					  "only %" PRIu64 " of the %" PRIu64
					  " messages member %u (%s) sent", j,
					  s->m[j].done[k], s->msgs[k], k,
					  close_name(s->m[k].close));
		if (ref < 0) {
			ref = (int)j;
			continue;
		}
		a = &s->h->m[s->id[ref]];
		b = &s->h->m[s->id[j]];
		na = a->ndels - s->dstart[ref];
		nb = b->ndels - s->dstart[j];
		for (i = 0; i < na && i < nb; i++)
			if (!same_del(&a->dels[s->dstart[ref] + i],
				      &b->dels[s->dstart[j] + i]))
				break;
		if (i < na && i < nb)
			violation(s, "members %d and %u flushed together but "
				  "delivered different sequences: at their "
				  "message %zu of the view, %d delivered (sender "
				  "%u, #%" PRIu64 "), %u delivered (sender %u, #%"
				  PRIu64 ")", ref, j, i, ref,
				  a->dels[s->dstart[ref] + i].sender,
				  a->dels[s->dstart[ref] + i].mseq, j,
				  b->dels[s->dstart[j] + i].sender,
				  b->dels[s->dstart[j] + i].mseq);
		else if (na != nb)
			violation(s, "members %d and %u flushed together but "
				  "delivered %zu and %zu messages in the view",
				  ref, j, na, nb);
	}
}

/* A member that left in order had every message it sent delivered at
 * every member that installed the next view or flushed, and what it
 * delivered itself is a prefix of what each of them delivered in the
 * view (it delivers nothing once it says it leaves; what it delivered
 * before was stable, so inside their trim). */
static void check_leavers(struct vc_sim *s)
{
	for (uint32_t l = 0; l < s->n; l++) {
		const struct vs_member *h = &s->h->m[s->id[l]];
		const struct vs_deliver *a = h->dels + s->dstart[l];
		size_t na = h->ndels - s->dstart[l];

		if (!s->m[l].departed || s->m[l].close != VC_CLOSE_LEFT)
			continue;
		for (uint32_t k = 0; k < s->n; k++) {
			const struct member *m = &s->m[k];
			const struct vs_member *hk = &s->h->m[s->id[k]];
			const struct vs_deliver *b = hk->dels + s->dstart[k];
			size_t nb = hk->ndels - s->dstart[k];
			const char *how;
			size_t i;

			if (k == l || !(m->installed ||
					(m->departed && m->close == 2)))
				continue;
			how = m->installed ? "installed the next view" :
				"flushed";
			if (m->done[l] < s->msgs[l])
				violation(s, "member %u left in order, but "
					  "member %u, which %s, delivered only "
					  "%" PRIu64 " of the %" PRIu64
					  " messages it sent", l, k, how,
					  m->done[l], s->msgs[l]);
			for (i = 0; i < na && i < nb; i++)
				if (!same_del(&a[i], &b[i]))
					break;
			if (i < na && i < nb)
				violation(s, "member %u left in order, but "
					  "delivered (sender %u, #%" PRIu64 ") "
					  "as its message %zu of the view, where "
					  "member %u, which %s, delivered (sender "
					  "%u, #%" PRIu64 ")", l, a[i].sender,
					  a[i].mseq, i, k, how, b[i].sender,
					  b[i].mseq);
			else if (i < na)
				violation(s, "member %u left in order, but "
					  "delivered (sender %u, #%" PRIu64 ") "
					  "as its message %zu of the view, where "
					  "member %u, which %s, delivered only %zu "
					  "in the view", l, a[i].sender, a[i].mseq,
					  i, k, how, nb);
		}
	}
}

/* The history of the members that closed: their SEND records (every
 * message, since none goes again in a next view) and their END. The
 * checker owes every live sender's messages to each member that closed
 * in the last view of the run, as if all of them flushed; one that left
 * alone is owed nothing (group_close flushes only its own), and the
 * history cannot say which closed how. So when a member left alone and
 * nobody installed the next view, the flushers' sends are not recorded:
 * check_flushers holds them to each other instead. */
static void end_closers(struct vc_sim *s)
{
	bool left = false, installed = false;

	for (uint32_t j = 0; j < s->n; j++) {
		left |= s->m[j].departed && s->m[j].close == VC_CLOSE_LEFT;
		installed |= s->m[j].installed;
	}
	for (uint32_t j = 0; j < s->n; j++) {
		const struct member *m = &s->m[j];

		if (!m->departed)
			continue;
		if (m->close == VC_CLOSE_LEFT || !left || installed)
			record_sends(s, j, s->sent[j]);
		vs_add_end(s->h, s->id[j], VS_END_CLOSED);
	}
}

/* The run ends with this view: those that installed the next one end
 * there, closed (its history is not simulated). */
static void end_installed(struct vc_sim *s)
{
	for (uint32_t j = 0; j < s->n; j++)
		if (s->m[j].installed)
			vs_add_end(s->h, s->id[j], VS_END_CLOSED);
}

/* Run the view to its end without new faults (every member installed,
 * closed, stopped or crashed, or `budget` events passed), and judge what
 * the checker cannot see in it. */
static void settle(struct vc_sim *s, uint64_t budget)
{
	const struct member *first = NULL;

	s->faults_left = 0;
	s->closes_left = 0;
	/* Every failure is detected sooner or later. */
	for (uint32_t i = 0; i < s->ndet; i++)
		if (s->det[i].due > s->now + 500)
			s->det[i].due = s->now + 500;
	for (uint64_t e = 0; e < budget && anyone_running(s); e++)
		random_event(s, false);
	for (uint32_t j = 0; j < s->n; j++) {
		const struct member *m = &s->m[j];
		char st[700];

		if (running(m)) {
			if (m->close) {
				why_waiting(s, j, st, sizeof(st));
				violation(s, "after %" PRIu64 " more events %s",
					  budget, st);
			} else {
				describe(s, j, st, sizeof(st));
				violation(s, "the view change never ends: "
					  "after %" PRIu64 " more events %s",
					  budget, st);
			}
		}
		if (!m->installed)
			continue;
		/* Every installer installs one and the same next view: the
		 * same trim, the same mask, the same joiners. */
		if (!first) {
			first = m;
		} else if (first->st.tmask != m->st.tmask ||
			   first->st.tadd != m->st.tadd ||
			   memcmp(first->st.trim, m->st.trim,
				  s->n * sizeof(m->st.trim[0]))) {
			violation(s, "members installed different trims "
				  "(masks %" PRIx64 " and %" PRIx64 ", adds %"
				  PRIx64 " and %" PRIx64 ")", first->st.tmask,
				  m->st.tmask, first->st.tadd, m->st.tadd);
		}
		if (m->st.tadd & ~s->joins)
			violation(s, "member %u installed a view that adds %"
				  PRIx64 ", but only %" PRIx64 " asked to join",
				  j, m->st.tadd, s->joins);
	}
	/* A join alone (nothing failed, nobody closed) ends in an install
	 * on every member. */
	if (s->njoins && !s->crashes && !s->partitions && !s->closes)
		for (uint32_t j = 0; j < s->n; j++)
			if (!s->m[j].installed && !running(&s->m[j]))
				violation(s, "only joins were asked, yet "
					  "member %u %s instead of installing "
					  "the next view", j, s->m[j].stopped ?
					  "stopped" : "ended");
	check_leavers(s);
	check_flushers(s);
	end_closers(s);
}

/* The run ends with view s: the checker judges its whole history. */
static uint32_t judge(struct vc_sim *s, struct vc_sim_result *r)
{
	struct vs_report rep;

	end_installed(s);
	vs_report_init(&rep, 4);
	if (vs_check(s->h, &rep) > 0)
		violation(s, "%s", rep.nlines ? rep.lines[0] : "vsync checker");
	memset(r, 0, sizeof(*r));
	r->n = s->n;
	r->events = s->events;
	r->crashes = s->crashes;
	r->partitions = s->partitions;
	r->closes = s->closes;
	r->joins = s->njoins;
	for (uint32_t j = 0; j < s->n; j++) {
		const struct member *m = &s->m[j];

		r->installed += m->installed;
		r->stopped += m->stopped;
		r->crashed += m->crashed;
		r->left += m->departed && m->close == VC_CLOSE_LEFT;
		r->flushed += m->departed && m->close == 2;
	}
	r->views = 1;
	r->violations = s->violations + (uint32_t)rep.violations;
	snprintf(r->first, sizeof(r->first), "%s", s->first);
	vs_report_free(&rep);
	return r->violations;
}

uint32_t vc_sim_finish(struct vc_sim *s, uint64_t budget,
		       struct vc_sim_result *r)
{
	settle(s, budget);
	return judge(s, r);
}

/* ---- the next view ------------------------------------------------------- */

/* The view the members of s installed, as its own simulation: the same
 * history and random stream; its members are the survivors (one that
 * adopted the trim but did not install is dead from the start there, as
 * a survivor that does not come back: the others suspect it in time) and
 * the joiners (fresh members whose history starts here). Each survivor
 * first sends again, in order, its messages the trim left out, under
 * their numbers (large ones large again: every receiver leases those).
 * NULL when nobody installed, when the view would have fewer than 2 or
 * more than SIM_MAX members, or out of memory. */
static struct vc_sim *next_view(struct vc_sim *s)
{
	const struct member *inst = NULL;
	uint32_t ids[VS_MAX_MEMBERS], k, dead[SIM_MAX], ndead = 0;
	int from[SIM_MAX];      /* a survivor's rank in s, or -1 */
	struct vc_sim *t;

	for (uint32_t j = 0; j < s->n && !inst; j++)
		if (s->m[j].installed)
			inst = &s->m[j];
	if (!inst)
		return NULL;
	k = next_ids(s, inst, ids);
	if (k < 2 || k > SIM_MAX || !(t = calloc(1, sizeof(*t))))
		return NULL;
	t->o = s->o;
	t->n = k;
	t->rng = s->rng;
	t->h = s->h;
	t->epoch = s->epoch + 1;
	t->events = s->events;
	t->idnext = s->idnext;
	if (init_view(t)) {
		vc_sim_free(t);
		return NULL;
	}
	for (uint32_t r = 0; r < k; r++) {
		struct member *m = &t->m[r];
		int o = -1;

		from[r] = -1;
		t->id[r] = ids[r];
		if (ids[r] + 1 > t->idnext)
			t->idnext = ids[r] + 1;
		t->dstart[r] = t->h->m[ids[r]].ndels;
		m->ndelivered = inst->ndelivered;
		for (uint32_t j = 0; j < s->n; j++)
			if (s->id[j] == ids[r])
				o = (int)j;
		if (o < 0) {
			vs_add_view(t->h, ids[r], t->epoch, ids, k,
				    inst->ndelivered);
			continue;
		}
		if (!s->m[o].installed) {
			dead[ndead++] = r;
			continue;
		}
		/* Its messages the trim left out go again first. */
		from[r] = o;
		{
			uint64_t kept = owed_below(s, (uint32_t)o,
						    inst->st.trim[o]);
			uint64_t all = owed_below(s, (uint32_t)o, s->sent[o]);

			t->qbase[r] = s->qbase[o] + kept;
			t->nresend[r] = (uint32_t)(all - kept);
			/* The planted bug: the first of them is lost. */
			if (s->o.plant_skip_resend && t->nresend[r]) {
				t->qbase[r]++;
				t->nresend[r]--;
				trace(t, "member %u (id %u) loses message #%"
				      PRIu64 ", which the trim left out "
				      "(planted)", r, ids[r],
				      t->qbase[r] - 1);
			}
		}
	}
	trace(t, "view %" PRIu64 ": %u members, ids by rank:", t->epoch, k);
	for (uint32_t r = 0; r < k; r++) {
		if (t->nresend[r])
			trace(t, "  rank %u = id %u, which sends again its #%"
			      PRIu64 "..#%" PRIu64 " (the trim left them out)",
			      r, ids[r], t->qbase[r],
			      t->qbase[r] + t->nresend[r] - 1);
		else
			trace(t, "  rank %u = id %u", r, ids[r]);
	}
	for (uint32_t r = 0; r < k; r++) {
		int o = from[r];
		uint32_t sent = 0;
		bool skip = s->o.plant_skip_resend;

		if (o < 0)
			continue;
		for (uint64_t rd = inst->st.trim[o];
		     rd < s->sent[o] && sent < t->nresend[r]; rd++) {
			if (s->mseq[o][rd] == NULL_ROUND ||
			    s->pay[o][rd].refused)
				continue;
			if (skip) {
				skip = false;
				continue;
			}
			send_record(t, r, true, s->pay[o][rd].large, 1);
			t->pay[r][t->sent[r] - 1].resent = true;
			sent++;
		}
	}
	for (uint32_t i = 0; i < ndead; i++) {
		t->m[dead[i]].crashed = true;
		t->crashes++;
		trace(t, "member %u (id %u) did not come back", dead[i],
		      ids[dead[i]]);
		cut_off(t, dead[i], all_bits(t));
	}
	t->owns_h = s->owns_h;
	s->owns_h = false;
	return t;
}

/* ---- random schedules ---------------------------------------------------- */

enum sched_kind { SCHED_FAULT, SCHED_CLOSE, SCHED_JOIN, SCHED_SQ_FULL };

struct sched {
	uint64_t at;
	enum sched_kind kind;
	uint32_t who;
};

static void fire(struct vc_sim *s, const struct sched *e)
{
	uint32_t j;

	switch (e->kind) {
	case SCHED_FAULT:
		if (!s->faults_left)
			return;
		s->faults_left--;
		if (chance(s, 20)) {
			partition(s);
			return;
		}
		vc_sim_crash(s, (uint32_t)below(s, s->n));
		return;
	case SCHED_CLOSE:
		vc_sim_close(s, e->who);
		return;
	case SCHED_JOIN:
		/* Through a live member, for an index outside the view. */
		j = (uint32_t)below(s, s->n);
		for (uint32_t i = 0; i < s->n; i++, j = (j + 1) % s->n)
			if (running(&s->m[j])) {
				vc_sim_join(s, j, s->idnext + (uint32_t)below(s, 3));
				return;
			}
		return;
	case SCHED_SQ_FULL:
		vc_sim_sq_full(s, e->who, 1 + below(s, 300));
		return;
	}
}

/* One view's random schedule: closes, joins and faults at random steps
 * among random traffic. */
static void run_schedule(struct vc_sim *s)
{
	uint32_t n = s->n, nfaults, ns = 0, ncloses = 0, njoins = 0;
	struct sched sc[SCHED_MAX];
	uint64_t length;

	length = 100 + below(s, 3000);
	/* Closes: one member, several at random steps, several at once, or
	 * all of them at once (the flush path). */
	if (chance(s, 40)) {
		unsigned style = (unsigned)below(s, 4);
		uint64_t at = below(s, length - 8);
		uint32_t who[SIM_MAX];

		ncloses = style == 0 ? 1 : style == 3 ? n :
			2 + (uint32_t)below(s, n - 2);
		for (uint32_t i = 0; i < n; i++)
			who[i] = i;
		for (uint32_t i = n - 1; i > 0; i--) {
			uint32_t k = (uint32_t)below(s, i + 1), t = who[i];

			who[i] = who[k];
			who[k] = t;
		}
		for (uint32_t i = 0; i < ncloses; i++)
			sc[ns++] = (struct sched){
				style == 1 ? below(s, length) :
					at + below(s, 8),
				SCHED_CLOSE, who[i] };
	}
	/* Join requests. */
	if (chance(s, 25)) {
		njoins = 1 + (uint32_t)below(s, 2);
		for (uint32_t i = 0; i < njoins; i++)
			sc[ns++] = (struct sched){ below(s, length),
						   SCHED_JOIN, 0 };
	}
	/* Up to n - 1 faults (crashes, partitions, deaths on purpose); none
	 * at all in half the schedules with closes or joins. */
	nfaults = 1 + (uint32_t)below(s, n - 1);
	if (ns && chance(s, 50))
		nfaults = 0;
	s->faults_left = nfaults;
	for (uint32_t i = 0; i < nfaults; i++)
		sc[ns++] = (struct sched){ below(s, length), SCHED_FAULT, 0 };
	/* Full send queues: a member posts nothing for a while (its pushes,
	 * SMC records and RDMC writes wait). */
	if (!s->o.small_only && chance(s, 30)) {
		uint32_t k = 1 + (uint32_t)below(s, 3);

		for (uint32_t i = 0; i < k; i++)
			sc[ns++] = (struct sched){ below(s, length),
						   SCHED_SQ_FULL,
						   (uint32_t)below(s, n) };
	}
	/* A close in the middle of a view change, now and then. */
	s->closes_left = chance(s, ncloses ? 50 : 15) ? 1 : 0;
	s->grace = chance(s, 30) ? 0 : below(s, 600);
	if (s->epoch)
		trace(s, "view %" PRIu64 ": %u members, %" PRIu64 " events, "
		      "%u faults, %u closes, %u joins, grace %" PRIu64,
		      s->epoch, n, length, nfaults, ncloses, njoins, s->grace);
	else
		trace(s, "seed %" PRIu64 ": %u members, %" PRIu64 " events, "
		      "%u faults, %u closes, %u joins, grace %" PRIu64,
		      s->o.seed, n, length, nfaults, ncloses, njoins, s->grace);
	for (uint64_t e = 0; e < length; e++) {
		for (uint32_t i = 0; i < ns; i++)
			if (sc[i].at == e)
				fire(s, &sc[i]);
		random_event(s, true);
	}
}

uint32_t vc_sim_run(const struct vc_sim_opts *o, struct vc_sim_result *r)
{
	uint64_t seed_rng = o->seed ^ 0x51a11u;
	uint64_t z = (seed_rng += 0x9e3779b97f4a7c15ull);
	uint32_t span = o->nmax - o->nmin + 1, n, v, views = 1;
	struct vc_sim_result sum = { 0 };
	struct vc_sim *s, *t;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	n = o->nmin + (uint32_t)((z ^ (z >> 27)) % span);
	s = vc_sim_new(n, o);
	if (!s) {
		memset(r, 0, sizeof(*r));
		r->violations = 1;
		snprintf(r->first, sizeof(r->first), "out of memory");
		return 1;
	}
	for (;;) {
		run_schedule(s);
		settle(s, 200000);
		if (s->violations || views >= o->views || !(t = next_view(s)))
			break;
		sum.crashes += s->crashes;
		sum.partitions += s->partitions;
		sum.closes += s->closes;
		sum.joins += s->njoins;
		vc_sim_free(s);
		s = t;
		views++;
	}
	v = judge(s, r);
	r->n = n;
	r->views = views;
	r->crashes += sum.crashes;
	r->partitions += sum.partitions;
	r->closes += sum.closes;
	r->joins += sum.joins;
	vc_sim_free(s);
	return v;
}
