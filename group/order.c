/*
 * order.c - one total order for small and large messages, on the
 * progress thread.
 *
 * SMC fixes the order: every ordered message, small or large, has a place
 * in its stream. A large message's place is its announcement {msg_id,
 * size}: a small SMC message of kind GROUP_KIND_ANNOUNCE that the sender
 * sends just before it hands the buffer to RDMC. When the
 * announcement is delivered, each receiver leases the buffer and joins the
 * transfer (rdmc_expect); the message is delivered at the announcement's
 * place once the transfer has completed on every member (RDMC's stable
 * callback on receivers, sent on the sender). Every message after it waits
 * in the delivery queue meanwhile; their SMC slots stay held, so senders
 * slow down rather than overwrite them. A transfer that failed (a receiver
 * could not lease) fails on every member alike and is delivered nowhere.
 *
 * Each pass (group_order_pass, which view.c's group_pass runs when no
 * view change holds it) also counts, per sender, the messages delivered
 * here and publishes the counts in the SST: group_close() waits on them.
 * The end of a view is here too: what this member holds for the view
 * change (group_have), the delivery of the agreed trim, and, when the
 * group stops, the report of the own sends it did not deliver.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/group_int.h"

bool group_rdmc_lost(int status)
{
	/* A receiver that could not take the message, or a sender that
	 * could not read the memory it sends in place (-EFAULT: unmapped
	 * under the send), fails it alike on every member; anything else is
	 * a connection cut short. */
	return !(status == -ENOMEM || status == -EMSGSIZE || status == -E2BIG ||
		 status == -EINVAL || status == -EFAULT);
}

static void keep(struct group *g, enum group_kept_kind kind,
		 const struct buf_desc *d, const struct smc_msg *m)
{
	struct group_rings *rg = kind == KEPT_SMC ? g->v.cur_rings : NULL;

	struct group_kept *k = calloc(1, sizeof(*k));
	bool released;

	if (k) {
		k->kind = kind;
		k->d = *d;
		k->rings = rg;
		if (m)
			k->m = *m;
	}
	/* The record goes in under the lock that group_release looks in:
	 * a release from another thread either finds it, or came while the
	 * upcall still ran and marked upcall_ptr. */
	group_lock(g);
	released = atomic_exchange(&g->upcall_ptr, NULL) ==
		   GROUP_UPCALL_RELEASED(g);
	if (k && !released) {
		if (rg)
			rg->kept++;
		k->next = g->kept;
		g->kept = k;
	}
	group_unlock(g);
	if (k && !released)
		return;
	free(k);
	/* Given back already, or cannot be tracked: give it back now rather
	 * than leak it. */
	if (!released)
		group_fail(g, -ENOMEM, "out of memory keeping a delivery");
	if (kind == KEPT_SMC)
		smc_core_release(g->v.core, m);
	else if (kind == KEPT_RDMC_RECV)
		alloc_release(g->a, d);
	else if (kind != KEPT_IN_PLACE)
		alloc_complete(g->a, d);
}

/* The deliver upcall. When it keeps d, upcall_ptr stays d->ptr until
 * keep() records it; otherwise it is taken back here. */
static bool upcall_deliver(struct group *g, uint32_t sender, uint64_t seq,
			   const struct buf_desc *d)
{
	uint64_t t0 = g->v.trimming ? group_now_ns() : 0;
	bool kept;

	atomic_store_explicit(&g->upcall_ptr, d->ptr, memory_order_release);
	group_upcall_begin(g);
	kept = g->cb.deliver(g->ctx, g->v.ids[sender], g->seq_base + seq, d);
	group_upcall_end(g);
	/* The trim's deliveries hold the view change up: how long the
	 * application takes over them is one of its parts (group_stats). */
	if (t0)
		g->v.trim_upcall_ns += group_now_ns() - t0;
	if (!kept && atomic_exchange(&g->upcall_ptr, NULL) ==
		     GROUP_UPCALL_RELEASED(g) && g->cb.log) {
		char msg[160];

		snprintf(msg, sizeof(msg), "member %u: group_release of member "
			 "%u's delivery %" PRIu64 ", which the deliver upcall "
			 "did not keep: ignored", g->my_id, g->v.ids[sender],
			 g->seq_base + seq);
		g->cb.log(g->ctx, GROUP_LOG_ERROR, msg);
	}
	return kept;
}

static void count_delivery(struct group *g, uint32_t sender, size_t len)
{
	g->v.done[sender]++;
	g->v.done_dirty = true;
	atomic_fetch_add(&g->st_delivered, 1);
	atomic_fetch_add(&g->st_delivered_bytes, len);
}

/* Hand a small message to the application; true when it keeps it. */
static bool deliver_small(struct group *g, const struct smc_msg *m)
{
	struct buf_desc d = { (void *)m->data, m->len };

	count_delivery(g, m->sender, m->len);
	return upcall_deliver(g, m->sender, m->seq, &d);
}

static void deliver_large(struct group *g, struct group_xfer *x)
{
	bool mine = x->sender == g->v.me;
	struct buf_desc od;
	bool kept;

	if (mine) {
		/* Done with it either way: no view change sends it again. */
		if (group_own_take(g, x->msg_id, &od) && !x->d.ptr)
			x->d = od;
		group_lock(g);
		g->rdmc_inflight--;
		pthread_cond_broadcast(&g->room);
		group_unlock(g);
	}
	if (x->failed) {
		/* Delivered nowhere; counted so that close does not wait. */
		g->v.done[x->sender]++;
		g->v.done_dirty = true;
		if (mine && group_in_place(g, &x->d)) {
			/* Its caller learns it from group_send_mem. */
			group_own_done(g, &x->d, x->status, x->why);
		} else if (mine) {
			group_call_send_failed(g, &x->d, x->status, x->why);
			if (x->d.ptr)
				alloc_complete(g->a, &x->d);
		}
		return;
	}
	count_delivery(g, x->sender, x->d.len);
	kept = upcall_deliver(g, x->sender, x->seq, &x->d);
	if (mine && group_in_place(g, &x->d)) {
		/* The caller's memory: its send returns now, kept or not. */
		if (kept)
			keep(g, KEPT_IN_PLACE, &x->d, NULL);
		group_own_done(g, &x->d, 0, "");
	} else if (kept) {
		keep(g, mine ? KEPT_RDMC_SENT : KEPT_RDMC_RECV, &x->d, NULL);
	} else if (mine) {
		alloc_complete(g->a, &x->d);
	} else {
		alloc_release(g->a, &x->d);
	}
}

static struct group_xfer *xfer_find(struct group *g, uint64_t msg_id,
				    bool create)
{
	struct group_xfer *x;

	for (x = g->v.xfers; x; x = x->next)
		if (x->msg_id == msg_id)
			return x;
	if (!create)
		return NULL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->msg_id = msg_id;
	x->next = g->v.xfers;
	g->v.xfers = x;
	return x;
}

static void xfer_unlink(struct group *g, struct group_xfer *x)
{
	struct group_xfer **p = &g->v.xfers;

	while (*p && *p != x)
		p = &(*p)->next;
	if (*p)
		*p = x->next;
	free(x);
}

static bool enqueue(struct group *g, struct group_xfer *x,
		    const struct smc_msg *m)
{
	struct group_item *it = calloc(1, sizeof(*it));

	if (!it) {
		group_fail(g, -ENOMEM, "out of memory queueing a delivery");
		return false;
	}
	it->x = x;
	if (m)
		it->m = *m;
	*g->v.q_tail = it;
	g->v.q_tail = &it->next;
	return true;
}

/* Deliver from the head of the queue while the head is ready. */
static bool drain_queue(struct group *g)
{
	bool work = false;

	while (g->v.q_head) {
		struct group_item *it = g->v.q_head;

		/* A transfer lost with a member waits for the view change,
		 * which decides whether every survivor has it. One that is
		 * whole here, or cancelled (a receiver could not lease it),
		 * waits until every member knows the same (the stable
		 * callback): passing it before would let a view change in
		 * between hold back, at a member that does not know yet, what
		 * this one delivered after it. */
		if (it->x && ((it->x->failed && group_rdmc_lost(it->x->status)) ||
			      !it->x->ready))
			break;
		if (it->x) {
			deliver_large(g, it->x);
			xfer_unlink(g, it->x);
		} else if (deliver_small(g, &it->m)) {
			keep(g, KEPT_SMC, &(struct buf_desc){ (void *)it->m.data,
							      it->m.len },
			     &it->m);
		} else {
			smc_core_release(g->v.core, &it->m);
		}
		g->v.q_head = it->next;
		if (!g->v.q_head)
			g->v.q_tail = &g->v.q_head;
		free(it);
		work = true;
	}
	return work;
}

static void expect(struct group *g, struct group_xfer *x)
{
	struct squall_error err = { 0 };
	int r = rdmc_expect(g->v.rg, x->msg_id, g->v.ids[x->sender], x->size,
			    &err);

	x->expect_pending = r == -EBUSY;
	/* No buffer for it (-ENOMEM): the sender is told and cancels the
	 * transfer everywhere, and the cancellation reaches this member too
	 * (on_received with the error). Until then the message is neither
	 * here nor failed: this member must not deliver past it while the
	 * others cannot yet, or a view change in between would split the
	 * order. */
	if (!r || r == -EBUSY || r == -ENOMEM)
		return;
	if (group_rdmc_lost(r)) {
		/* A connection went (the READY could not be sent): the
		 * transfer is lost with it, and the view change that follows
		 * decides whether every survivor has the message. */
		x->failed = true;
		x->status = r;
		snprintf(x->why, sizeof(x->why), "%s", err.msg);
		return;
	}
	group_fail(g, -EPROTO, "cannot receive message %" PRIu64
		   " of member %u (%" PRIu64 " bytes): %s", x->msg_id,
		   g->v.ids[x->sender], x->size, err.msg);
}

static void on_announce(struct group *g, const struct smc_msg *m)
{
	struct group_announce a;
	struct group_xfer *x;

	if (m->len != sizeof(a)) {
		group_fail(g, -EPROTO, "member %u announced a large message "
			   "in %zu bytes, not %zu", g->v.ids[m->sender], m->len,
			   sizeof(a));
		return;
	}
	memcpy(&a, m->data, sizeof(a));
	x = xfer_find(g, le64toh(a.msg_id), true);
	if (!x) {
		group_fail(g, -ENOMEM, "out of memory for a large message");
		return;
	}
	x->sender = m->sender;
	x->size = le64toh(a.size);
	x->seq = m->seq;
	x->round = m->index;
	x->announced = true;
	if (g->v.ragged) {
		/* Delivering the trim: a large message in it is held by
		 * every survivor, so here too (the sender: its own). */
		if (m->sender == g->v.me || (x->d.ptr && !x->failed)) {
			x->failed = false;
			deliver_large(g, x);
		} else {
			group_fail(g, -EPROTO, "the agreed trim holds "
				   "message %" PRIu64 " of member %u, which "
				   "this member does not have", x->msg_id,
				   g->v.ids[m->sender]);
		}
		xfer_unlink(g, x);
		return;
	}
	if (!enqueue(g, x, NULL))
		return;
	if (m->sender != g->v.me && g->v.n > 1)
		expect(g, x);
}

bool group_smc_deliver(void *arg, const struct smc_msg *m)
{
	struct group *g = arg;

	group_assert_progress(g);

	if (m->kind == GROUP_KIND_ANNOUNCE) {
		on_announce(g, m);
		return false;
	}
	if (g->v.q_head) {
		/* Behind a large message: wait in the queue, slot held. */
		return enqueue(g, NULL, m);
	}
	if (!deliver_small(g, m))
		return false;
	keep(g, KEPT_SMC, &(struct buf_desc){ (void *)m->data, m->len }, m);
	return true;
}

/* ---- RDMC callbacks ------------------------------------------------------- */

static void on_received(void *arg, struct rdmc_group *rg, uint64_t msg_id,
			uint32_t sender, const struct buf_desc *d, int status,
			const char *why)
{
	struct group *g = arg;
	struct group_xfer *x;

	group_assert_progress_or_none(g);
	x = xfer_find(g, msg_id, false);
	(void)rg;
	(void)sender;
	if (!x) {
		/* Its record went with the trim (the message is past it, and
		 * its sender sends it again in the next view), and the
		 * transfer ended after: the buffer is nobody's. */
		if (!status && d)
			alloc_release(g->a, d);
		return;
	}
	if (status) {
		x->failed = true;
		x->status = status;
		snprintf(x->why, sizeof(x->why), "%s", why);
		return;
	}
	x->d = *d;
}

static void on_stable(void *arg, struct rdmc_group *rg, uint64_t msg_id,
		      uint32_t sender)
{
	struct group *g = arg;
	struct group_xfer *x;

	group_assert_progress_or_none(g);
	x = xfer_find(g, msg_id, false);
	(void)rg;
	(void)sender;
	if (x)
		x->ready = true;
}

static void on_sent(void *arg, struct rdmc_group *rg, uint64_t msg_id,
		    const struct buf_desc *d, int status, const char *why)
{
	struct group *g = arg;
	struct group_xfer *x;

	group_assert_progress_or_none(g);
	x = xfer_find(g, msg_id, true);
	(void)rg;
	if (!x) {
		group_fail(g, -ENOMEM, "out of memory for a large message");
		return;
	}
	x->sender = g->v.me;
	x->d = *d;
	if (status && group_rdmc_lost(status)) {
		/* Cut short by a failure: the view change delivers it or
		 * sends it again; the buffer stays the group's. */
		x->d = (struct buf_desc){ 0 };
		return;
	}
	if (status) {
		/* Cancelled alike everywhere: passed over once every member
		 * knows (on_stable). */
		x->failed = true;
		x->status = status;
		snprintf(x->why, sizeof(x->why), "%s", why);
	} else {
		x->ready = true;
	}
}

const struct rdmc_callbacks group_rdmc_cb_template = {
	.received = on_received,
	.sent = on_sent,
	.stable = on_stable,
};

/* ---- the delivery pass ------------------------------------------------------ */

/* RDMC sends handed over by application threads. */
static bool start_sends(struct group *g)
{
	bool work = false;

	for (;;) {
		struct squall_error err = { 0 };
		struct group_rsend *s;
		int r;

		group_lock(g);
		s = g->v.rsend_head;
		group_unlock(g);
		if (!s)
			break;
		/* The group's since its send (send.c), sent again or not;
		 * or the caller's memory, sent in place. */
		assert(group_in_place(g, &s->d) ||
		       alloc_state(g->a, s->d.ptr) == ALLOC_SUBMITTED);
		if (g->v.n == 1) {
			r = 0;
			on_sent(g, NULL, s->msg_id, &s->d, 0, "");
		} else if (group_in_place(g, &s->d)) {
			r = rdmc_send_foreign(g->v.rg, s->msg_id, &s->d, &err);
		} else {
			r = rdmc_send_submitted(g->v.rg, s->msg_id, &s->d, &err);
		}
		if (r == -EBUSY)
			break;
		if (r)
			group_fail(g, r, "rdmc: starting message %" PRIu64
				   " failed: %s", s->msg_id, err.msg);
		group_lock(g);
		g->v.rsend_head = s->next;
		if (!g->v.rsend_head)
			g->v.rsend_tail = &g->v.rsend_head;
		group_unlock(g);
		free(s);
		work = true;
	}
	return work;
}

static bool retry_expects(struct group *g)
{
	bool work = false;

	for (struct group_xfer *x = g->v.xfers; x; x = x->next)
		if (x->expect_pending) {
			expect(g, x);
			work = true;
		}
	return work;
}

/* How long a row change no member waits on may wait for company. */
#define HOLD_NS 1000000ull

/* Read the members' SMC counters from the SST. */
static void read_counters(struct group *g)
{
	uint32_t cr = (uint32_t)g->v.col[COL_SMC_RECV];
	uint32_t cl = (uint32_t)g->v.col[COL_SMC_REL];

	for (uint32_t j = 0; j < g->v.n; j++)
		for (uint32_t k = 0; k < g->v.n; k++) {
			g->recv[j * g->v.n + k] = sst_get_elem(g->v.t, j, cr, k);
			g->rel[j * g->v.n + k] = sst_get_elem(g->v.t, j, cl, k);
		}
}

/* The row's SMC counters and delivery counts, pushed at once when a
 * sender waits for them (SMC_ROW_URGENT). The rest (releases, the
 * delivered counts, two members' null rounds) waits for the next urgent
 * push, for HOLD_NS, or for the progress thread about to sleep: in a
 * 2-member paced run the sender's own push of them went out just as the
 * receiver's row that its delivery waited for arrived, and held the
 * progress thread in the post meanwhile. */
static bool publish(struct group *g)
{
	uint32_t cr = (uint32_t)g->v.col[COL_SMC_RECV];
	uint32_t cl = (uint32_t)g->v.col[COL_SMC_REL];
	uint32_t cd = (uint32_t)g->v.col[COL_DONE];
	enum smc_row_change ch;
	uint64_t now;

	ch = smc_core_take_row(g->v.core, g->row_recv, g->row_rel);
	if (ch != SMC_ROW_SAME)
		for (uint32_t k = 0; k < g->v.n; k++) {
			sst_set_elem(g->v.t, cr, k, g->row_recv[k]);
			sst_set_elem(g->v.t, cl, k, g->row_rel[k]);
		}
	if (g->v.done_dirty) {
		for (uint32_t k = 0; k < g->v.n; k++)
			sst_set_elem(g->v.t, cd, k, g->v.done[k]);
		g->v.done_dirty = false;
		if (ch == SMC_ROW_SAME)
			ch = SMC_ROW_LAZY;
	}
	if (ch == SMC_ROW_SAME && !g->v.held_ns)
		return false;
	if (ch != SMC_ROW_URGENT && !sst_idle_armed(g->v.t)) {
		now = group_now_ns();
		if (!g->v.held_ns)
			g->v.held_ns = now;
		if (now - g->v.held_ns < HOLD_NS)
			return false;
	}
	g->v.held_ns = 0;
	sst_push_cols(g->v.t, cr, cd - cr + 1);
	return true;
}

void group_order_pass(struct group *g, bool *work)
{
	int r;

	group_assert_progress(g);

	/* Leaving alone: nothing more is delivered (group_close); the
	 * SST and RDMC's relaying for the others go on until it leaves. */
	if (atomic_load(&g->leave_stop)) {
		if (g->v.e && (r = rdmc_engine_progress(g->v.e, work)))
			group_fail(g, r, "rdmc: %s",
				   rdmc_engine_last_error(g->v.e));
		return;
	}
	if (start_sends(g))
		*work = true;
	if (retry_expects(g))
		*work = true;
	if (g->v.e && (r = rdmc_engine_progress(g->v.e, work)))
		group_fail(g, r, "rdmc: %s",
			   rdmc_engine_last_error(g->v.e));
	read_counters(g);
	r = smc_core_progress(g->v.core, g->recv, g->rel);
	/* An error is a write to a failed member: the SST suspects it and
	 * the view change takes over. */
	if (r > 0)
		*work = true;
	if (drain_queue(g))
		*work = true;
	if (publish(g))
		*work = true;
	/* After the row (smc_core_nulls). An error is a write to a failed
	 * member, as above. */
	(void)smc_core_nulls(g->v.core, g->recv);
}

void group_order_free(struct group *g)
{
	group_assert_no_progress(g);
	while (g->v.q_head) {
		struct group_item *it = g->v.q_head;

		g->v.q_head = it->next;
		free(it);
	}
	g->v.q_tail = &g->v.q_head;
	while (g->v.xfers) {
		struct group_xfer *x = g->v.xfers;

		/* A received message that is not delivered in this view
		 * (past the trim) goes back to the slab. */
		if (x->sender != g->v.me && x->d.ptr)
			alloc_release(g->a, &x->d);
		g->v.xfers = x->next;
		free(x);
	}
	/* RDMC sends not started: their messages are in g->own, and the
	 * view change delivered or re-sent them. */
	while (g->v.rsend_head) {
		struct group_rsend *s = g->v.rsend_head;

		g->v.rsend_head = s->next;
		free(s);
	}
	g->v.rsend_tail = &g->v.rsend_head;
}

/* ---- the end of a view ---------------------------------------------------- */

/* A large message is whole here, or failed alike everywhere (a receiver
 * could not lease it: delivered nowhere). */
static bool xfer_complete(const struct group *g, const struct group_xfer *x)
{
	if (x->sender == g->v.me)
		return true;
	if (x->failed)
		return !group_rdmc_lost(x->status);
	return x->d.ptr != NULL;
}

void group_have(struct group *g, uint64_t *have)
{
	group_assert_progress(g);
	for (uint32_t s = 0; s < g->v.n; s++) {
		uint64_t h = smc_core_received(g->v.core, s);

		if (s != g->v.me) {
			/* An announcement not delivered yet: its transfer
			 * has not begun here. */
			uint64_t cap = smc_core_first_of_kind(g->v.core, s,
							GROUP_KIND_ANNOUNCE);

			for (struct group_xfer *x = g->v.xfers; x; x = x->next)
				if (x->announced && x->sender == s &&
				    !xfer_complete(g, x) && x->round < cap)
					cap = x->round;
			if (cap < h)
				h = cap;
		}
		have[s] = h;
	}
}

static void take_own(void *arg, const void *payload, uint32_t len,
		     void *cookie, uint8_t kind, uint64_t round)
{
	struct group *g = arg;
	struct buf_desc d = { (void *)payload, len };
	struct group_announce a;

	(void)cookie;
	(void)round;
	if (kind != GROUP_KIND_ANNOUNCE) {
		group_resend_add(g, false, kind, 0, &d);
		return;
	}
	memcpy(&a, payload, sizeof(a));
	group_resend_large(g, le64toh(a.msg_id));
	/* The announcement itself is made anew. */
	alloc_complete(g->a, &d);
}

void group_deliver_trim(struct group *g)
{
	const uint64_t *trim = g->v.vc.trim;

	group_assert_progress(g);
	g->v.trimming = true;
	/* Messages passed by SMC and waiting behind a large one. */
	while (g->v.q_head) {
		struct group_item *it = g->v.q_head;

		g->v.q_head = it->next;
		if (it->x) {
			struct group_xfer *x = it->x;

			if (x->round < trim[x->sender] && xfer_complete(g, x)) {
				if (x->sender == g->v.me && x->failed &&
				    group_rdmc_lost(x->status))
					x->failed = false;
				deliver_large(g, x);
			} else if (x->round < trim[x->sender]) {
				group_fail(g, -EPROTO, "the agreed trim holds "
					   "message %" PRIu64 " of member %u, "
					   "which this member does not have",
					   x->msg_id, g->v.ids[x->sender]);
			} else if (x->sender == g->v.me) {
				group_resend_large(g, x->msg_id);
			} else if (x->d.ptr) {
				alloc_release(g->a, &x->d);
			}
			xfer_unlink(g, x);
		} else if (it->m.index < trim[it->m.sender]) {
			if (deliver_small(g, &it->m))
				keep(g, KEPT_SMC, &(struct buf_desc){
					     (void *)it->m.data, it->m.len },
				     &it->m);
			else
				smc_core_release(g->v.core, &it->m);
		} else {
			if (it->m.sender == g->v.me) {
				group_resend_add(g, false, GROUP_KIND_APP, 0,
						 &(struct buf_desc){
							 (void *)it->m.data,
							 it->m.len });
				smc_core_take_payload(g->v.core, &it->m);
			}
			smc_core_release(g->v.core, &it->m);
		}
		free(it);
	}
	g->v.q_tail = &g->v.q_head;
	/* Then what SMC holds, up to the trim. */
	g->v.ragged = true;
	smc_core_deliver_trim(g->v.core, trim);
	g->v.ragged = false;
	/* Own messages past the trim, in send order, then those an earlier
	 * view could not send again. */
	smc_core_take_own(g->v.core, take_own, g);
	group_resend_add_later(g);
	g->v.trimming = false;
}

/* ---- a member out of the group -------------------------------------------- */

/* This member stopped: which of its own ordered sends not delivered here
 * the others deliver. A survivor's last word (view.c pushes its adopted
 * trim to the members it removes) says exactly: round r of mine is
 * delivered iff r < trim[me]. Without one, nothing is known of what was
 * not delivered here. */
struct unsent {
	struct group *g;
	bool known;
	bool again;             /* messages an earlier view's trim missed */
	uint64_t trim_me;
	uint64_t lost, unknown;
};

static void unsent_one(struct unsent *u, const struct buf_desc *d,
		       uint64_t round)
{
	struct group *g = u->g;
	char why[SQUALL_ERRMSG_MAX];
	int code;

	if (u->known && round < u->trim_me) {
		/* Delivered by the survivors: done with it. */
		group_own_done(g, d, 0, "");
		return;
	}
	if (u->again) {
		u->lost++;
		snprintf(why, sizeof(why), "member %u left view %" PRIu64
			 " before this message, which missed an earlier view's "
			 "trim, was sent again: not delivered", g->my_id,
			 g->vcfg.epoch);
	} else if (u->known) {
		u->lost++;
		snprintf(why, sizeof(why), "member %u left view %" PRIu64
			 " before this message was delivered: the survivors "
			 "deliver this member's rounds below %" PRIu64 ", and "
			 "this is round %" PRIu64 ": not delivered", g->my_id,
			 g->vcfg.epoch, u->trim_me, round);
	} else {
		u->unknown++;
		snprintf(why, sizeof(why), "member %u left view %" PRIu64
			 " before this message was delivered here, and no "
			 "survivor's trim reached it: it may or may not be "
			 "delivered", g->my_id, g->vcfg.epoch);
	}
	code = u->known || u->again ? -ENOTCONN : -ECONNABORTED;
	if (group_in_place(g, d)) {
		/* Its caller learns it from group_send_mem. */
		group_own_done(g, d, code, why);
		return;
	}
	group_call_send_failed(g, d, code, why);
	alloc_complete(g->a, d);
}

static void unsent_large(struct unsent *u, uint64_t msg_id, uint64_t round)
{
	struct buf_desc d;

	if (group_own_take(u->g, msg_id, &d))
		unsent_one(u, &d, round);
}

static void unsent_take(void *arg, const void *payload, uint32_t len,
			void *cookie, uint8_t kind, uint64_t round)
{
	struct unsent *u = arg;
	struct buf_desc d = { (void *)payload, len };
	struct group_announce a;

	(void)cookie;
	if (kind != GROUP_KIND_ANNOUNCE) {
		unsent_one(u, &d, round);
		return;
	}
	memcpy(&a, payload, sizeof(a));
	unsent_large(u, le64toh(a.msg_id), round);
	alloc_complete(u->g->a, &d);
}

/* The own messages waiting to be sent again (sent in no view: not
 * delivered), told in send order and freed. */
static void unsent_resends(struct unsent *u)
{
	struct group *g = u->g;
	struct group_resend *rs;

	u->known = true;
	u->again = true;
	u->trim_me = 0;
	while ((rs = g->resend_head ? g->resend_head : g->resend_later)) {
		if (rs == g->resend_head)
			g->resend_head = rs->next;
		else
			g->resend_later = rs->next;
		if (rs->large)
			unsent_large(u, rs->msg_id, 0);
		else
			unsent_one(u, &rs->d, 0);
		free(rs);
	}
	g->resend_tail = &g->resend_head;
}

void group_report_unsent(struct group *g, bool known, uint64_t trim_me)
{
	struct unsent u = { .g = g, .known = known, .trim_me = trim_me };

	group_assert_progress(g);
	/* In order: past the SMC order and waiting behind a large message
	 * (their payloads taken from the core, which gives back the rest),
	 * then the SMC order itself, then what an earlier view could not
	 * send again (sent in no view: not delivered). */
	for (struct group_item *it = g->v.q_head; it; it = it->next) {
		if (it->x && it->x->sender == g->v.me) {
			unsent_large(&u, it->x->msg_id, it->x->round);
		} else if (!it->x && it->m.sender == g->v.me) {
			smc_core_take_payload(g->v.core, &it->m);
			unsent_one(&u, &(struct buf_desc){ (void *)it->m.data,
							   it->m.len },
				   it->m.index);
		}
	}
	if (g->v.core)
		smc_core_take_own(g->v.core, unsent_take, &u);
	unsent_resends(&u);
	atomic_store(&g->st_unsent_lost, u.lost);
	atomic_store(&g->st_unsent_unknown, u.unknown);
}

void group_report_resends_lost(struct group *g)
{
	struct unsent u = { .g = g };

	group_assert_view_thread(g);
	unsent_resends(&u);
	atomic_store(&g->st_unsent_lost, u.lost);
	atomic_store(&g->st_unsent_unknown, 0);
	atomic_store(&g->unsent_done, true);
}
