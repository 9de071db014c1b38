/*
 * smc/core.c - one member's SMC engine: sending into its ring, receiving
 * from the others', stability, round-robin delivery, null messages and
 * flow control, with the byte moving left to a transport (smc/core.h).
 *
 * The idea: everything that decides (which slot, which run, which message
 * is next, when to send a null, when a payload is free) is here and is the
 * same whatever moves the bytes; the transport only posts the writes the
 * core plans and reports completions and counters. Sends post at once
 * while few writes are in flight and otherwise accumulate, so under load
 * one write carries a run of records (opportunistic batching), and each
 * progress pass delivers everything that became stable in one batch.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "smc/core.h"
#include "smc/flow.h"
#include "smc/order.h"

#define SMC_CORE_BATCH 64u

struct smc_core {
	struct smc_core_params p;
	struct smc_core_ops ops;
	void *ctx;
	struct smc_ring_geom g;

	pthread_mutex_t lock;
	pthread_cond_t space; /* signalled when slots free up or on error */
	int error;	      /* sticky: a write could not be posted, or
				 -ESTALE once wedged */

	/* Sending side. */
	struct smc_ring_tx tx;
	struct smc_tx_slot *tx_slots;
	struct smc_flow flow;
	uint32_t *inflight;	   /* [n] writes posted to j, not completed */
	uint64_t returned_rec;	   /* payloads below it were handed back */
	uint8_t *own_rel;	   /* [window] own records released locally */
	uint64_t own_released;	   /* prefix of them */
	uint64_t sends_since_pass; /* real sends since the last progress pass */
	/* A run posted to some members, not yet to the rest (a send queue
	 * was full): posted to pend_next and after first, before any other. */
	struct smc_write pend;
	uint32_t pend_next;
	bool pend_on;

	/* Receiving side. */
	struct smc_ring_rx *rx;	   /* [n], rx[me] unused */
	uint8_t *rx_rel;	   /* [n * window] */
	struct smc_rx_rec *rxrecs; /* [window] scratch for one run */
	struct smc_order order;
	uint64_t *scratch; /* [n * n] counters with my own row fresh */
	struct smc_order_event ev[SMC_CORE_BATCH];
	bool kept[SMC_CORE_BATCH];
	uint64_t wait_ns[SMC_CORE_BATCH]; /* at delivery, since at_ns */
	enum smc_row_change row; /* since smc_core_take_row */

	struct smc_stats st;
};

static int check_params(const struct smc_core_params *p)
{
	if (p->nmembers == 0 || p->me >= p->nmembers || !p->deliver)
		return -EINVAL;
	if (p->max_sge < 2 || p->max_inflight == 0)
		return -EINVAL;
	return 0;
}

int smc_core_create(const struct smc_core_params *p,
		    const struct smc_core_ops *ops, void *ctx,
		    uint8_t *hdr_area, const uint8_t *const *rings,
		    struct smc_core **out)
{
	struct smc_core *c;
	uint32_t n = p->nmembers;
	pthread_condattr_t ca;
	int r;

	r = check_params(p);
	if (r)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->p = *p;
	c->ops = *ops;
	c->ctx = ctx;
	r = smc_ring_geom_init(&c->g, p->window, p->max_payload);
	if (r) {
		free(c);
		return r;
	}
	c->tx_slots = calloc(p->window, sizeof(*c->tx_slots));
	c->inflight = calloc(n, sizeof(*c->inflight));
	c->own_rel = calloc(p->window, 1);
	c->rx = calloc(n, sizeof(*c->rx));
	c->rx_rel = calloc((size_t)n * p->window, 1);
	c->rxrecs = calloc(p->window, sizeof(*c->rxrecs));
	c->scratch = calloc((size_t)n * n, sizeof(*c->scratch));
	if (!c->tx_slots || !c->inflight || !c->own_rel || !c->rx ||
	    !c->rx_rel || !c->rxrecs || !c->scratch)
		goto nomem;
	if (smc_flow_init(&c->flow, n, p->me))
		goto nomem;
	if (smc_order_init(&c->order, n, p->window)) {
		smc_flow_fini(&c->flow);
		goto nomem;
	}
	smc_ring_tx_init(&c->tx, &c->g, hdr_area, c->tx_slots, p->seal);
	for (uint32_t s = 0; s < n; s++)
		if (s != p->me)
			smc_ring_rx_init(&c->rx[s], &c->g, rings[s],
					 c->rx_rel + (size_t)s * p->window,
					 p->seal);
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->space, &ca);
	pthread_condattr_destroy(&ca);
	c->row = SMC_ROW_URGENT;
	*out = c;
	return 0;
nomem:
	free(c->tx_slots);
	free(c->inflight);
	free(c->own_rel);
	free(c->rx);
	free(c->rx_rel);
	free(c->rxrecs);
	free(c->scratch);
	free(c);
	return -ENOMEM;
}

void smc_core_destroy(struct smc_core *c)
{
	if (!c)
		return;
	/* Hand back what SMC still held; the transport no longer reads. */
	for (uint64_t rec = c->returned_rec; rec < c->tx.next_rec; rec++) {
		struct smc_tx_slot *s = smc_ring_tx_slot(&c->tx, rec);

		if (s->cookie)
			c->ops.payload_done(c->ctx, s->cookie, s->payload,
					    s->len);
	}
	smc_order_fini(&c->order);
	smc_flow_fini(&c->flow);
	pthread_cond_destroy(&c->space);
	pthread_mutex_destroy(&c->lock);
	free(c->tx_slots);
	free(c->inflight);
	free(c->own_rel);
	free(c->rx);
	free(c->rx_rel);
	free(c->rxrecs);
	free(c->scratch);
	free(c);
}

const struct smc_ring_geom *smc_core_geom(const struct smc_core *c)
{
	return &c->g;
}

/* Hand back payloads nobody reads any more, then let the ring reuse slots
 * that every member released and whose payload went back: a slot's header
 * cell and bookkeeping stay until both hold. Called with the lock held. */
static void update_tx(struct smc_core *c)
{
	uint64_t done = smc_flow_payload_done(&c->flow);
	uint64_t before = c->tx.released_rec, reuse;

	if (done > c->tx.posted_rec)
		done = c->tx.posted_rec;
	for (; c->returned_rec < done; c->returned_rec++) {
		struct smc_tx_slot *s =
		    smc_ring_tx_slot(&c->tx, c->returned_rec);

		if (s->cookie) {
			c->ops.payload_done(c->ctx, s->cookie, s->payload,
					    s->len);
			c->st.leases_returned++;
		}
	}
	reuse = smc_flow_min_released(&c->flow);
	if (reuse > c->returned_rec)
		reuse = c->returned_rec;
	smc_ring_tx_set_released(&c->tx, reuse);
	if (c->tx.released_rec != before)
		pthread_cond_broadcast(&c->space);
}

/* Post runs while every member has room for another write in flight. */
static int post_pending(struct smc_core *c)
{
	struct smc_write w;
	uint32_t n = c->p.nmembers;

	if (c->error)
		return c->error;
	while (c->pend_on || c->tx.posted_rec < c->tx.next_rec) {
		if (!c->pend_on) {
			for (uint32_t j = 0; j < n; j++)
				if (j != c->p.me &&
				    c->inflight[j] >= c->p.max_inflight)
					return 0;
			if (!smc_ring_tx_plan(&c->tx, c->p.max_sge, &w))
				break;
			c->pend = w;
			c->pend_next = 0;
			c->pend_on = true;
		}
		for (uint32_t j = c->pend_next; j < n; j++) {
			int r;

			if (j == c->p.me)
				continue;
			r = c->ops.post_write(c->ctx, j, &c->pend);
			if (r == -ENOMEM || r == -EAGAIN) {
				/* No room in that send queue now: the rest
				 * of the run goes out on a later call. */
				c->pend_next = j;
				c->st.posts_deferred++;
				return 0;
			}
			if (r) {
				c->error = r;
				pthread_cond_broadcast(&c->space);
				return r;
			}
			c->inflight[j]++;
			c->st.writes++;
			c->st.records_written += c->pend.nrec;
		}
		c->pend_on = false;
	}
	/* With no other member nothing is in flight: done at once. */
	if (n == 1)
		update_tx(c);
	return 0;
}

/* Reserve a record, let the caller commit to it (messages with a cookie)
 * and enter it in the order as this member's own. Called with the lock
 * held. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int64_t reserve_own(struct smc_core *c, const void *payload,
			   uint32_t len, uint16_t nrounds, uint16_t flags,
			   void *cookie)
{
	int64_t rec =
	    smc_ring_tx_reserve(&c->tx, payload, len, nrounds, flags, cookie);
	struct smc_tx_slot *s;
	int r;

	if (rec < 0)
		return rec;
	if (cookie && c->ops.commit) {
		r = c->ops.commit(c->ctx, cookie, payload, len);
		if (r) {
			smc_ring_tx_unreserve(&c->tx, (uint64_t)rec);
			return r;
		}
	}
	s = smc_ring_tx_slot(&c->tx, (uint64_t)rec);
	r = smc_order_push(&c->order, c->p.me,
			   &(struct smc_order_rec){
			       .rec = (uint64_t)rec,
			       .round = s->round,
			       .len = len,
			       .nrounds = nrounds,
			       .flags = flags,
			       .data = payload,
			       .at_ns = flags & SMC_REC_NULL ? 0 : now_ns(),
			   });
	/* The window bounds unpassed own records as it bounds the ring. */
	assert(r == 0);
	(void)r;
	/* No push for it (row): what a member holds of its own rounds
	 * is credited by every member that holds them too
	 * (smc_order_credit_senders), and none reads it otherwise. */
	return rec;
}

static void deadline_after(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

int smc_core_send(struct smc_core *c, const void *payload, uint32_t len,
		  void *cookie, int timeout_ms, bool copied)
{
	return smc_core_send_kind(c, payload, len, cookie, timeout_ms, copied,
				  0);
}

int smc_core_send_kind(struct smc_core *c, const void *payload, uint32_t len,
		       void *cookie, int timeout_ms, bool copied, uint8_t kind)
{
	struct timespec deadline;
	bool waited = false;
	int64_t rec;
	int r = 0;

	if (len > c->g.max_payload)
		return -EMSGSIZE;
	if (timeout_ms > 0)
		deadline_after(&deadline, timeout_ms);
	pthread_mutex_lock(&c->lock);
	for (;;) {
		if (c->error) {
			r = c->error;
			goto out;
		}
		rec = reserve_own(c, len ? payload : NULL, len, 1,
				  (uint16_t)(kind << SMC_REC_KIND_SHIFT), cookie);
		if (rec >= 0)
			break;
		if (rec != -EAGAIN) {
			r = (int)rec; /* the commit refused */
			goto out;
		}
		if (timeout_ms == 0) {
			c->st.send_eagain++;
			r = -EAGAIN;
			goto out;
		}
		if (!waited)
			c->st.send_waits++;
		waited = true;
		if (timeout_ms < 0) {
			pthread_cond_wait(&c->space, &c->lock);
		} else if (pthread_cond_timedwait(&c->space, &c->lock,
						  &deadline) == ETIMEDOUT) {
			r = -ETIMEDOUT;
			goto out;
		}
	}
	assert(rec >= 0);
	c->st.sends++;
	c->st.bytes_sent += len;
	if (copied) {
		c->st.sends_copied++;
		c->st.payload_copies++;
	}
	c->sends_since_pass++;
	/* The message has its place now: a write that cannot be posted is
	 * the transport's failure, kept for later calls (a view change
	 * decides what becomes of this message), not this send's. */
	post_pending(c);
	r = 0;
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Milliseconds left until deadline, at least 1 (0 means "never wait"). */
static int ms_left(const struct timespec *deadline)
{
	struct timespec now;
	int64_t ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (deadline->tv_sec - now.tv_sec) * 1000 +
	     (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 1 ? 1 : ms > INT32_MAX ? INT32_MAX : (int)ms;
}

int smc_core_send_copy(struct smc_core *c, const void *src, uint32_t len,
		       int timeout_ms)
{
	struct timespec deadline;
	void *buf, *cookie;
	int r;

	if (len > c->g.max_payload)
		return -EMSGSIZE;
	if (len == 0)
		return smc_core_send(c, NULL, 0, NULL, timeout_ms, false);
	if (!c->ops.lease || !c->ops.unlease)
		return -ENOTSUP;
	if (timeout_ms > 0)
		deadline_after(&deadline, timeout_ms);
	r = c->ops.lease(c->ctx, len, timeout_ms, &buf, &cookie);
	if (r)
		return r;
	memcpy(buf, src, len);
	r = smc_core_send(c, buf, len, cookie,
			  timeout_ms > 0 ? ms_left(&deadline) : timeout_ms,
			  true);
	if (r)
		c->ops.unlease(c->ctx, cookie, buf, len);
	return r;
}

static void row_changed(struct smc_core *c, enum smc_row_change ch)
{
	if (ch > c->row)
		c->row = ch;
}

/* Record rec of sender s is done with here. Called with the lock held. */
static void release_rec(struct smc_core *c, uint32_t s, uint64_t rec)
{
	if (s == c->p.me) {
		if (smc_release_mark(c->own_rel, c->g.window, &c->own_released,
				     c->tx.next_rec, rec)) {
			smc_flow_set_released(&c->flow, s, c->own_released);
			update_tx(c);
			/* No push: only this member reads how far it
			 * released its own ring (the others' flow reads what
			 * they released of it). */
		}
	} else if (smc_ring_rx_release(&c->rx[s], rec)) {
		row_changed(c, SMC_ROW_LAZY);
	}
}

void smc_core_release(struct smc_core *c, const struct smc_msg *m)
{
	pthread_mutex_lock(&c->lock);
	release_rec(c, m->sender, m->slot);
	pthread_mutex_unlock(&c->lock);
}

int smc_core_on_recv(struct smc_core *c, uint32_t sender, uint32_t imm)
{
	struct smc_ring_rx *rx;
	uint64_t at;
	int n, r = 0;

	if (sender >= c->p.nmembers || sender == c->p.me)
		return -EPROTO;
	pthread_mutex_lock(&c->lock);
	rx = &c->rx[sender];
	n = smc_ring_rx_accept(rx, imm, c->rxrecs, c->g.window);
	if (n < 0) {
		r = n;
		goto out;
	}
	at = n > 0 ? now_ns() : 0;
	for (int i = 0; i < n; i++) {
		const struct smc_rx_rec *x = &c->rxrecs[i];

		/* A sender waits for the others to hold its message. Null
		 * rounds it passes without them (smc_order_frontier_here),
		 * so with two members nobody waits for them; with more, a
		 * third member's messages wait for everyone to hold them. */
		row_changed(c, !(x->flags & SMC_REC_NULL) ||
				       c->p.nmembers > 2 ?
				   SMC_ROW_URGENT : SMC_ROW_LAZY);

		r = smc_order_push(&c->order, sender,
				   &(struct smc_order_rec){
				       .rec = x->rec,
				       .round = x->round,
				       .len = x->len,
				       .nrounds = x->nrounds,
				       .flags = x->flags,
				       .data = x->data,
				       .at_ns = at,
				   });
		/* accept() checked the window, which bounds the queue. */
		assert(r == 0);
	}
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

void smc_core_on_write_done(struct smc_core *c, uint32_t dest, uint64_t end_rec)
{
	pthread_mutex_lock(&c->lock);
	assert(dest != c->p.me && c->inflight[dest] > 0);
	c->inflight[dest]--;
	smc_flow_set_completed(&c->flow, dest, end_rec);
	update_tx(c);
	post_pending(c);
	pthread_mutex_unlock(&c->lock);
}

/* Idle (no send since the last pass) and behind the others: cover the
 * missing rounds with null records, one per SMC_NULL_MAX_ROUNDS. */
static void send_nulls(struct smc_core *c)
{
	uint32_t n = c->p.nmembers;
	uint64_t *mine = c->scratch + (size_t)c->p.me * n;
	uint64_t k;

	if (n == 1 || c->sends_since_pass)
		return;
	k = smc_order_null_rounds(mine, n, c->p.me);
	while (k > 0) {
		uint16_t chunk =
		    k > SMC_NULL_MAX_ROUNDS ? SMC_NULL_MAX_ROUNDS : (uint16_t)k;

		if (reserve_own(c, NULL, 0, chunk, SMC_REC_NULL, NULL) < 0)
			break;
		c->st.null_records++;
		c->st.null_rounds += chunk;
		mine[c->p.me] += chunk;
		k -= chunk;
	}
}

/* Fill scratch with the members' counters, my own row fresh and each
 * sender credited with what arrived of its own (smc_order_credit_senders). */
static void load_counters(struct smc_core *c, const uint64_t *recv)
{
	uint32_t n = c->p.nmembers;

	memcpy(c->scratch, recv, (size_t)n * n * sizeof(*recv));
	for (uint32_t s = 0; s < n; s++)
		c->scratch[(size_t)c->p.me * n + s] =
		    smc_order_received(&c->order, s);
	smc_order_credit_senders(c->scratch, n, c->p.me);
}

/* Run the upcalls of one batch without the lock. */
static uint32_t run_upcalls(struct smc_core *c, uint32_t got)
{
	uint32_t msgs = 0;
	uint64_t t = now_ns();

	for (uint32_t i = 0; i < got; i++) {
		const struct smc_order_event *e = &c->ev[i];
		struct smc_msg m;

		c->kept[i] = false;
		if (e->rec.flags & SMC_REC_NULL)
			continue;
		c->wait_ns[i] = t > e->rec.at_ns ? t - e->rec.at_ns : 0;
		m = (struct smc_msg){
		    .sender = e->sender,
		    .seq = e->seq,
		    .index = e->rec.round,
		    .data = e->rec.data,
		    .len = e->rec.len,
		    .slot = e->rec.rec,
		    .kind = (uint8_t)(e->rec.flags >> SMC_REC_KIND_SHIFT),
		};
		c->kept[i] = c->p.deliver(c->p.deliver_arg, &m);
		msgs++;
	}
	return msgs;
}

/* Hand one collected batch to the upcalls (without the lock) and release
 * what they did not keep. Called with the lock held; returns the messages
 * delivered. */
static int deliver_batch(struct smc_core *c, uint32_t got)
{
	uint32_t msgs;

	pthread_mutex_unlock(&c->lock);
	msgs = run_upcalls(c, got);
	pthread_mutex_lock(&c->lock);
	for (uint32_t i = 0; i < got; i++) {
		const struct smc_order_event *e = &c->ev[i];

		if (!(e->rec.flags & SMC_REC_NULL)) {
			bool own = e->sender == c->p.me;

			*(own ? &c->st.own_wait_ns : &c->st.rx_wait_ns) +=
				c->wait_ns[i];
			(*(own ? &c->st.own_waited : &c->st.rx_waited))++;
		}
		if (c->kept[i])
			c->st.kept++;
		else
			release_rec(c, c->ev[i].sender, c->ev[i].rec.rec);
	}
	c->st.delivered += msgs;
	return (int)msgs;
}

int smc_core_progress(struct smc_core *c, const uint64_t *recv,
		      const uint64_t *released)
{
	uint32_t n = c->p.nmembers, got;
	uint64_t frontier;
	int delivered = 0, r;

	pthread_mutex_lock(&c->lock);
	if (c->error) {
		r = c->error;
		goto out;
	}
	for (uint32_t j = 0; j < n; j++)
		if (j != c->p.me)
			smc_flow_set_released(
			    &c->flow, j, released[(size_t)j * n + c->p.me]);
	update_tx(c);
	load_counters(c, recv);
	frontier = smc_order_frontier_here(&c->order, c->scratch, c->p.me);
	while ((got = smc_order_collect(&c->order, frontier, c->ev,
					SMC_CORE_BATCH)) > 0)
		delivered += deliver_batch(c, got);
	if (delivered)
		c->st.delivery_batches++;
	r = post_pending(c);
	if (r == 0)
		r = delivered;
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

int smc_core_nulls(struct smc_core *c, const uint64_t *recv)
{
	int r;

	pthread_mutex_lock(&c->lock);
	r = c->error;
	if (!r) {
		load_counters(c, recv);
		send_nulls(c);
		r = post_pending(c);
	}
	c->sends_since_pass = 0;
	pthread_mutex_unlock(&c->lock);
	return r;
}

enum smc_row_change smc_core_take_row(struct smc_core *c, uint64_t *received,
				      uint64_t *released)
{
	enum smc_row_change changed;

	pthread_mutex_lock(&c->lock);
	for (uint32_t s = 0; s < c->p.nmembers; s++) {
		received[s] = smc_order_received(&c->order, s);
		released[s] =
		    s == c->p.me ? c->own_released : c->rx[s].released_rec;
	}
	changed = c->row;
	c->row = SMC_ROW_SAME;
	pthread_mutex_unlock(&c->lock);
	return changed;
}

void smc_core_stats(struct smc_core *c, struct smc_stats *st)
{
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	pthread_mutex_unlock(&c->lock);
}

/* ---- view changes --------------------------------------------------------- */

uint64_t smc_core_received(struct smc_core *c, uint32_t s)
{
	uint64_t r;

	pthread_mutex_lock(&c->lock);
	r = smc_order_received(&c->order, s);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int smc_core_error(struct smc_core *c)
{
	int e;

	pthread_mutex_lock(&c->lock);
	e = c->error;
	pthread_mutex_unlock(&c->lock);
	return e;
}

void smc_core_wedge(struct smc_core *c)
{
	pthread_mutex_lock(&c->lock);
	if (!c->error)
		c->error = -ESTALE;
	pthread_cond_broadcast(&c->space);
	pthread_mutex_unlock(&c->lock);
}

uint64_t smc_core_first_of_kind(struct smc_core *c, uint32_t s, uint8_t kind)
{
	struct smc_order_queue *q;
	uint64_t found = UINT64_MAX;

	pthread_mutex_lock(&c->lock);
	q = &c->order.q[s];
	for (uint64_t i = q->head; i < q->tail; i++) {
		const struct smc_order_rec *r = &q->e[i % c->order.cap];

		if (!(r->flags & SMC_REC_NULL) &&
		    (uint8_t)(r->flags >> SMC_REC_KIND_SHIFT) == kind) {
			found = r->round;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return found;
}

int smc_core_deliver_trim(struct smc_core *c, const uint64_t *trim)
{
	uint32_t got;
	int delivered = 0;

	pthread_mutex_lock(&c->lock);
	while ((got = smc_order_collect_trim(&c->order, trim, c->ev,
					     SMC_CORE_BATCH)) > 0)
		delivered += deliver_batch(c, got);
	pthread_mutex_unlock(&c->lock);
	return delivered;
}

void smc_core_take_own(struct smc_core *c, smc_take_fn fn, void *arg)
{
	struct smc_order_queue *q = &c->order.q[c->p.me];

	/* One message at a time, fn called without the lock: what it calls
	 * (an upcall of the application's) may call the core. */
	for (;;) {
		const struct smc_order_rec *r;
		struct smc_tx_slot *s;
		const void *payload;
		void *cookie;
		uint32_t len;
		uint64_t round;
		uint8_t kind;

		pthread_mutex_lock(&c->lock);
		while (q->head < q->tail &&
		       q->e[q->head % c->order.cap].flags & SMC_REC_NULL)
			q->head++;
		if (q->head == q->tail) {
			pthread_mutex_unlock(&c->lock);
			return;
		}
		r = &q->e[q->head++ % c->order.cap];
		s = smc_ring_tx_slot(&c->tx, r->rec);
		payload = s->payload;
		len = s->len;
		cookie = s->cookie;
		round = r->round;
		kind = (uint8_t)(r->flags >> SMC_REC_KIND_SHIFT);
		s->cookie = NULL;
		pthread_mutex_unlock(&c->lock);
		fn(arg, payload, len, cookie, kind, round);
	}
}

void smc_core_take_payload(struct smc_core *c, const struct smc_msg *m)
{
	pthread_mutex_lock(&c->lock);
	if (m->sender == c->p.me)
		smc_ring_tx_slot(&c->tx, m->slot)->cookie = NULL;
	pthread_mutex_unlock(&c->lock);
}
