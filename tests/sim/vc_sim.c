/*
 * vc_sim.c - the view-change simulator (see vc_sim.h).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "group/vcore.h"
#include "tests/sim/vc_sim.h"
#include "tests/vsync/check.h"
#include "tests/vsync/history.h"

#define SIM_MAX 7
#define LINK_DEPTH 8      /* pushes in flight per link; more merge */
#define TORN_PCT 15       /* a segment of a push that lands torn */

/* The segments of a row, as group.c declares them (plus the header). */
enum seg { SEG_HDR, SEG_RECV, SEG_CLOSE, SEG_VC, SEG_JOIN, NSEG };

struct row {
	uint64_t susp;                 /* SEG_HDR */
	uint64_t recv[SIM_MAX];        /* SEG_RECV */
	uint64_t closing;              /* SEG_CLOSE */
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
	bool wedged;
	struct vc_state st;
	struct row row;                /* what it publishes */
	uint64_t pushes;
	bool dirty;
	struct row seen[SIM_MAX];      /* peers' rows as last validated */
	uint64_t seen_seq[SIM_MAX][NSEG];
	struct push late[SIM_MAX];     /* a push with torn segments, to be
					  looked at again */
	uint64_t landed[SIM_MAX];      /* per peer: my last push it took
					  whole (the write completed) */
	uint8_t late_mask[SIM_MAX];    /* its segments still to take */
	uint64_t suspected;
	uint64_t have[SIM_MAX];        /* rounds held per sender */
	uint64_t cap[SIM_MAX];         /* rounds that will still arrive */
	uint64_t next_pos;             /* next round-robin position */
	uint64_t ndelivered;
	uint64_t normal_end;           /* positions delivered normally */
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
	uint64_t sent[SIM_MAX];
	struct detect det[SIM_MAX * SIM_MAX * 2];
	uint32_t ndet;
	struct vs_history h;
	struct vc_sim_result *res;         /* while judging */
	uint32_t violations;
	char first[768];
	uint32_t crashes, partitions;
	uint32_t faults_left;              /* crashes still allowed */
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
	return !m->crashed && !m->stopped && !m->installed;
}

static uint64_t all_bits(const struct vc_sim *s)
{
	return (1ull << s->n) - 1;
}

static uint64_t msg_hash(uint32_t sender, uint64_t round)
{
	uint64_t k[2] = { sender, round };

	return vs_hash(k, sizeof(k));
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
	case SEG_CLOSE:
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

/* Member c's links go down (crash, partition side, or its old view
 * dropped at install): what is in flight may be lost, and the data it
 * sent reaches some members and not others. */
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

	if (m->crashed)
		return;
	m->crashed = true;
	s->crashes++;
	trace(s, "member %u crashes", j);
	cut_off(s, j, all_bits(s));
	vs_mark_crashed(&s->h, j);
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

/* ---- a member's pass ---------------------------------------------------- */

static void deliver(struct vc_sim *s, uint32_t j, uint64_t pos)
{
	struct member *m = &s->m[j];
	uint32_t snd = (uint32_t)(pos % s->n);
	uint64_t r = pos / s->n;

	if (m->have[snd] <= r)
		violation(s, "member %u delivers round %" PRIu64 " of member "
			  "%u, which it does not hold (it holds %" PRIu64 ")",
			  j, r, snd, m->have[snd]);
	vs_add_deliver(&s->h, j, 0, m->ndelivered++, snd, r, 16,
		       msg_hash(snd, r));
}

static void deliver_trim(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];
	uint64_t end = vc_trim_end(m->st.trim, s->n);

	/* What it delivered before the wedge must be inside the trim. */
	for (uint64_t p = 0; p < m->normal_end; p++)
		if (p / s->n >= m->st.trim[p % s->n])
			violation(s, "member %u delivered round %" PRIu64 " of "
				  "member %u before the wedge; the trim it "
				  "adopted ends that sender at %" PRIu64, j,
				  p / s->n, (uint32_t)(p % s->n),
				  m->st.trim[p % s->n]);
	for (uint64_t p = m->next_pos; p < end; p++)
		if (p / s->n < m->st.trim[p % s->n])
			deliver(s, j, p);
	if (end > m->next_pos)
		m->next_pos = end;
	trace(s, "member %u delivers the trim (end %" PRIu64 ")", j, end);
}

static void install(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];
	uint32_t ids[SIM_MAX], k = 0;

	for (uint32_t i = 0; i < s->n; i++)
		if (!(m->st.tmask >> i & 1))
			ids[k++] = i;
	m->installed = true;
	vs_add_view(&s->h, j, 1, ids, k, m->ndelivered);
	vs_add_end(&s->h, j, VS_END_CLOSED);
	trace(s, "member %u installs view 1 (mask %" PRIx64 ")", j,
	      m->st.tmask);
	/* Its old connections close: the others see errors on them. */
	cut_off(s, j, all_bits(s));
}

static void normal_delivery(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];

	for (;;) {
		uint64_t p = m->next_pos, r = p / s->n;
		uint32_t snd = (uint32_t)(p % s->n);

		for (uint32_t k = 0; k < s->n; k++) {
			uint64_t got = k == j ? m->have[snd] :
				m->seen[k].recv[snd];

			if (got <= r)
				return;
		}
		deliver(s, j, p);
		m->next_pos++;
		m->normal_end = m->next_pos;
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
	vs_add_end(&s->h, j, VS_END_STOPPED);
}

/* Learn the suspicions in believed rows (not from suspected members);
 * one naming this member cuts it off. Returns false when it stops. */
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

/* Faults on purpose at the protocol's sharp edges. */
static bool buggify(struct vc_sim *s, uint32_t j, unsigned acts);

void vc_sim_member_step(struct vc_sim *s, uint32_t j)
{
	struct member *m = &s->m[j];
	struct vc_row rows[SIM_MAX];
	struct vc_out out;
	struct vc_in in = {
		.n = s->n,
		.me = j,
		.inview = all_bits(s),
		.rows = rows,
		.have = m->have,
	};
	bool on;

	if (!running(m))
		return;
	relook(s, j);
	if (!learn(s, j))
		return;
	in.suspected = m->suspected;
	in.landed = true;
	for (uint32_t k = 0; k < s->n; k++)
		if (k != j && !(m->suspected >> k & 1) && s->l[j][k].up &&
		    m->landed[k] < m->pushes)
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
	if (out.acts & VC_ACT_WEDGE) {
		m->wedged = true;
		trace(s, "member %u wedges", j);
	}
	if (out.acts & VC_ACT_STOP) {
		stop(s, j);
		trace(s, "member %u stops: %u of %u reachable", j, out.alive,
		      out.base);
		return;
	}
	if (out.acts & VC_ACT_PUBLISH) {
		if (memcmp(m->row.have, m->have, sizeof(m->have)) ||
		    m->row.ack != out.ack)
			m->dirty = true;
		memcpy(m->row.have, m->have, sizeof(m->have));
		m->row.ack = out.ack;
	}
	if (out.acts & VC_ACT_ADOPT) {
		memcpy(m->row.trim, m->st.trim, sizeof(m->row.trim));
		m->row.tadd = m->st.tadd;
		m->row.tmask = m->st.tmask + 1;
		m->dirty = true;
		trace(s, "member %u adopts a trim for mask %" PRIx64, j,
		      m->st.tmask);
	}
	if (s->o.plant_early_delivery ? (out.acts & VC_ACT_ADOPT) != 0 :
	    (out.acts & VC_ACT_DELIVER) != 0)
		deliver_trim(s, j);
	if (!on)
		normal_delivery(s, j);
	if (memcmp(m->row.recv, m->have, sizeof(m->have))) {
		memcpy(m->row.recv, m->have, sizeof(m->have));
		m->dirty = true;
	}
	if (m->dirty)
		push_row(s, j);
	if (out.acts & VC_ACT_INSTALL) {
		install(s, j);
		return;
	}
	buggify(s, j, out.acts);
}

/* ---- data ------------------------------------------------------------ */

void vc_sim_send(struct vc_sim *s, uint32_t snd)
{
	struct member *m = &s->m[snd];

	if (!running(m) || m->wedged)
		return;
	s->sent[snd]++;
	m->have[snd] = s->sent[snd];
	for (uint32_t k = 0; k < s->n; k++)
		if (k != snd && s->l[snd][k].up)
			s->m[k].cap[snd] = s->sent[snd];
}

static bool arrive(struct vc_sim *s, uint32_t snd, uint32_t k)
{
	struct member *m = &s->m[k];

	if (k == snd || m->crashed || m->have[snd] >= m->cap[snd])
		return false;
	m->have[snd]++;
	return true;
}

void vc_sim_arrive_all(struct vc_sim *s)
{
	for (uint32_t snd = 0; snd < s->n; snd++)
		for (uint32_t k = 0; k < s->n; k++)
			while (arrive(s, snd, k))
				;
}

void vc_sim_drop(struct vc_sim *s, uint32_t from, uint32_t to)
{
	s->l[from][to].count = 0;
}

bool vc_sim_adopted(const struct vc_sim *s, uint32_t j)
{
	return s->m[j].st.adopted;
}

/* ---- schedules ---------------------------------------------------------- */

static bool buggify(struct vc_sim *s, uint32_t j, unsigned acts)
{
	if (!s->faults_left || !(acts & (VC_ACT_ADOPT | VC_ACT_WEDGE |
				      VC_ACT_DELIVER)) || !chance(s, 8))
		return false;
	s->faults_left--;
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
 * a round sent. */
static void random_event(struct vc_sim *s, bool sends)
{
	uint64_t pick = below(s, 12);

	s->now++;
	s->events++;
	fire_detections(s);
	if (pick < 4) {
		vc_sim_member_step(s, (uint32_t)below(s, s->n));
	} else if (pick < 8) {
		uint32_t from = (uint32_t)below(s, s->n);
		uint32_t to = (uint32_t)below(s, s->n);

		vc_sim_deliver(s, from, to);
	} else if (pick < 11 || !sends) {
		arrive(s, (uint32_t)below(s, s->n), (uint32_t)below(s, s->n));
	} else {
		vc_sim_send(s, (uint32_t)below(s, s->n));
	}
}

static bool anyone_running(const struct vc_sim *s)
{
	for (uint32_t j = 0; j < s->n; j++)
		if (running(&s->m[j]))
			return true;
	return false;
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
	vs_history_init(&s->h);
	for (uint32_t i = 0; i < n; i++)
		ids[i] = i;
	for (uint32_t j = 0; j < n; j++) {
		vs_add_view(&s->h, j, 0, ids, n, 0);
		for (uint32_t k = 0; k < n; k++)
			s->l[j][k].up = j != k;
	}
	return s;
}

void vc_sim_free(struct vc_sim *s)
{
	if (!s)
		return;
	vs_history_free(&s->h);
	free(s);
}

static void describe(const struct vc_sim *s, uint32_t j, char *buf, size_t len)
{
	const struct member *m = &s->m[j];

	snprintf(buf, len, "member %u: phase %d, adopted %d (mask %" PRIx64
		 "), suspects %" PRIx64 ", ack %" PRIx64, j, (int)m->st.phase,
		 m->st.adopted, m->st.tmask, m->suspected, m->row.ack);
}

uint32_t vc_sim_finish(struct vc_sim *s, uint64_t budget,
		       struct vc_sim_result *r)
{
	struct vs_report rep;
	uint64_t trim_mask = UINT64_MAX;
	const uint64_t *trim = NULL;

	s->faults_left = 0;
	/* Every failure is detected sooner or later. */
	for (uint32_t i = 0; i < s->ndet; i++)
		if (s->det[i].due > s->now + 500)
			s->det[i].due = s->now + 500;
	for (uint64_t e = 0; e < budget && anyone_running(s); e++)
		random_event(s, false);
	for (uint32_t j = 0; j < s->n; j++) {
		const struct member *m = &s->m[j];
		char st[200];

		if (running(m)) {
			describe(s, j, st, sizeof(st));
			violation(s, "the view change never ends: after %" PRIu64
				  " more events %s", budget, st);
		}
		if (!m->installed)
			continue;
		/* Every installer adopted one and the same trim. */
		if (!trim) {
			trim = m->st.trim;
			trim_mask = m->st.tmask;
		} else if (trim_mask != m->st.tmask ||
			   memcmp(trim, m->st.trim, s->n * sizeof(*trim))) {
			violation(s, "members installed different trims "
				  "(masks %" PRIx64 " and %" PRIx64 ")",
				  trim_mask, m->st.tmask);
		}
	}
	vs_report_init(&rep, 4);
	if (vs_check(&s->h, &rep) > 0)
		violation(s, "%s", rep.nlines ? rep.lines[0] : "vsync checker");
	memset(r, 0, sizeof(*r));
	r->n = s->n;
	r->events = s->events;
	r->crashes = s->crashes;
	r->partitions = s->partitions;
	for (uint32_t j = 0; j < s->n; j++) {
		r->installed += s->m[j].installed;
		r->stopped += s->m[j].stopped;
		r->crashed += s->m[j].crashed;
	}
	r->violations = s->violations + (uint32_t)rep.violations;
	snprintf(r->first, sizeof(r->first), "%s", s->first);
	vs_report_free(&rep);
	return r->violations;
}

uint32_t vc_sim_run(const struct vc_sim_opts *o, struct vc_sim_result *r)
{
	uint64_t seed_rng = o->seed ^ 0x51a11u;
	uint64_t z = (seed_rng += 0x9e3779b97f4a7c15ull);
	uint32_t span = o->nmax - o->nmin + 1, n, v;
	uint64_t length, faults[8];
	uint32_t nfaults;
	struct vc_sim *s;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	n = o->nmin + (uint32_t)((z ^ (z >> 27)) % span);
	s = vc_sim_new(n, o);
	if (!s) {
		memset(r, 0, sizeof(*r));
		r->violations = 1;
		snprintf(r->first, sizeof(r->first), "out of memory");
		return 1;
	}
	length = 100 + below(s, 3000);
	/* Up to n - 1 faults (crashes, partitions, deaths on purpose). */
	nfaults = 1 + (uint32_t)below(s, n - 1);
	s->faults_left = nfaults;
	for (uint32_t i = 0; i < nfaults && i < 8; i++)
		faults[i] = below(s, length);
	trace(s, "seed %" PRIu64 ": %u members, %" PRIu64 " events, %u faults",
	      o->seed, n, length, nfaults);
	for (uint64_t e = 0; e < length; e++) {
		for (uint32_t i = 0; i < nfaults && i < 8; i++) {
			uint32_t j;

			if (faults[i] != e || !s->faults_left)
				continue;
			s->faults_left--;
			if (chance(s, 20)) {
				partition(s);
				continue;
			}
			j = (uint32_t)below(s, n);
			vc_sim_crash(s, j);
		}
		random_event(s, true);
	}
	v = vc_sim_finish(s, 200000, r);
	vc_sim_free(s);
	return v;
}
