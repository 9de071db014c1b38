/*
 * send.c - the sends: ordered messages (small ones straight into SMC,
 * large ones announced in the SMC stream and handed to the progress
 * thread, which owns the RDMC engine), the messages of an ended view sent
 * again, and the release of kept deliveries (point-to-point messages are
 * p2p.c's).
 *
 * Application threads only post: a small send goes into SMC, which posts
 * the RDMA writes from the caller's thread when the pipeline has room.
 * Each send enters the current view (view_enter: epoch_lock for reading,
 * but not on the progress and view threads, group_lockless) and waits out
 * a view change when it may wait (not on the progress thread, nor on
 * the view thread: group_nowait).
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <squall/wire.h>

#include "group/group_int.h"
#include "rdma/hook.h"

/* Sends wait for room in slices of this, checking for failures. */
#define WAIT_SLICE_MS 100

static int usable(struct group *g, struct squall_error *err)
{
	if (atomic_load(&g->closing))
		return squall_error_set(err, -ESHUTDOWN, "member %u: the group "
					"is closing", g->my_id);
	return group_failed(g, err);
}

/* Wait (without epoch_lock) until the view changes from `epoch`, the group
 * fails, or `until` (ms; 0: no limit) passes. */
static void wait_next_view(struct group *g, uint64_t epoch, uint64_t until)
{
	group_lock(g);
	while (g->vcfg.epoch == epoch && !atomic_load(&g->failed) &&
	       (!until || group_now_ms() < until)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += WAIT_SLICE_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		group_cond_timedwait(&g->room, g, &ts);
	}
	group_unlock(g);
}

/* Enter the current view to use its parts: returns 0 holding epoch_lock
 * for reading (on the progress thread, which a view swap stops first,
 * without it). With wait, a wedged group is waited out (until `until`,
 * 0: no limit); without, it is -EAGAIN. */
static int view_enter(struct group *g, bool wait, uint64_t until,
		      struct squall_error *err)
{
	bool self = group_lockless(g);

	/* The view thread sends again under the write lock it holds. Any
	 * other send of it is an upcall's (view, state_save, failure)
	 * during a view change, refused as every upcall's send is then: one
	 * from the view upcall would go before the own messages still to be
	 * sent again. */
	if (group_on_view_thread(g))
		return g->sending_again ? 0 : squall_error_set(err, -EAGAIN,
			"member %u: a view change is in progress", g->my_id);
	for (;;) {
		uint64_t epoch;
		int r;

		if (!self)
			group_epoch_rdlock(g);
		r = group_failed(g, err);
		if (!r && !atomic_load(&g->wedged))
			return 0;
		epoch = g->vcfg.epoch;
		if (!self)
			group_epoch_rdunlock(g);
		if (r)
			return r;
		if (self || !wait || (until && group_now_ms() >= until))
			return squall_error_set(err, -EAGAIN, "member %u: a view "
						"change is in progress", g->my_id);
		atomic_fetch_add(&g->st_waits, 1);
		wait_next_view(g, epoch, until);
	}
}

static void view_leave(struct group *g)
{
	if (!group_lockless(g))
		group_epoch_rdunlock(g);
}

/* SMC send waiting in slices, so that a failure ends the wait, and across
 * a view change: a send the ending view refused is made in the next one.
 * With rs, the RDMC send it announces is queued in the same view. */
static int smc_send(struct group *g, const void *p, uint32_t len, int timeout_ms,
		    uint8_t kind, struct group_rsend *rs,
		    struct squall_error *err)
{
	uint64_t until = timeout_ms > 0 ? group_now_ms() + (uint64_t)timeout_ms : 0;
	bool waited = false;
	int r;

	for (;;) {
		int slice = timeout_ms == 0 ? 0 : WAIT_SLICE_MS;
		uint64_t epoch;
		bool ending;

		if (until) {
			uint64_t now = group_now_ms();

			if (now >= until)
				slice = 0;
			else if (until - now < (uint64_t)slice)
				slice = (int)(until - now);
		}
		r = view_enter(g, timeout_ms != 0, until, err);
		if (r)
			return r;
		r = smc_core_send_kind(g->v.core, p, len, (void *)p, slice, false,
				       kind);
		if (r == 0) {
			atomic_fetch_add(&g->v.sent_epoch, 1);
			if (rs) {
				group_lock(g);
				*g->v.rsend_tail = rs;
				g->v.rsend_tail = &rs->next;
				group_unlock(g);
				sst_wake(g->v.t);
			}
		}
		epoch = g->vcfg.epoch;
		ending = r && smc_core_error(g->v.core) != 0;
		view_leave(g);
		if (r == 0)
			return 0;
		if (ending && group_on_view_thread(g))
			/* Sending again at a view's start, and it is ending
			 * already: the next view takes the rest. */
			return squall_error_set(err, -ESTALE, "member %u: view %"
				PRIu64 " ended while sending again", g->my_id, epoch);
		if (ending) {
			/* The view is ending (wedged, or a write to a failed
			 * member could not be posted): nothing was sent. */
			if (timeout_ms == 0)
				return squall_error_set(err, -EAGAIN, "member %u: "
					"a view change is in progress", g->my_id);
			wait_next_view(g, epoch, until);
			continue;
		}
		if (r != -ETIMEDOUT && !(r == -EAGAIN && timeout_ms != 0 &&
					 slice != 0))
			break;
		if (!waited)
			atomic_fetch_add(&g->st_waits, 1);
		waited = true;
		if ((r = group_failed(g, err)))
			return r;
		if (slice == 0 || (until && group_now_ms() >= until))
			break;
	}
	if (r == -EAGAIN || r == -ETIMEDOUT)
		return squall_error_set(err, r, "member %u: every slot of the "
			"SMC window (smc.window = %u) is still in use", g->my_id,
			g->cfg.smc_window);
	if (r == -EBUSY || r == -EALREADY || r == -EINVAL || r == -EPERM)
		return squall_error_set(err, -EINVAL, "member %u: the buffer at "
			"%p is not a lease ready to send (%s)", g->my_id, p,
			r == -EBUSY ? "it was sent already" :
			r == -EALREADY ? "it is free" : "not a lease");
	return squall_error_set(err, r, "member %u: %s", g->my_id,
				atomic_load(&g->failed) ? g->fail_msg
							: strerror(-r));
}

/* Announce a large message and queue its RDMC send: the announcement's
 * place in the SMC order is the message's. own: the message's record for
 * view changes (added before the announcement can be delivered). */
static int announce(struct group *g, uint64_t msg_id, const struct buf_desc *d,
		    int timeout_ms, struct squall_error *err)
{
	struct group_announce a = {
		.msg_id = htole64(msg_id),
		.size = htole64(d->len),
	};
	struct group_rsend *s = calloc(1, sizeof(*s));
	struct buf_desc ad;
	size_t asz = sizeof(a);
	int r;

	r = s ? alloc_lease_wait(g->a, 1, &asz, &ad,
				 timeout_ms < 0 ? UINT32_MAX : (unsigned)timeout_ms)
	      : -ENOMEM;
	if (r) {
		free(s);
		return squall_error_set(err, r, "member %u: no room to announce "
					"a large message", g->my_id);
	}
	memcpy(ad.ptr, &a, sizeof(a));
	s->msg_id = msg_id;
	s->d = *d;
	r = smc_send(g, ad.ptr, sizeof(a), timeout_ms, GROUP_KIND_ANNOUNCE, s,
		     err);
	if (r) {
		alloc_release(g->a, &ad);
		free(s);
	}
	return r;
}

int group_lease_ready(struct group *g, const struct buf_desc *d,
		      struct squall_error *err)
{
	int state = alloc_state(g->a, d->ptr);

	if (state == ALLOC_LEASED)
		return 0;
	return squall_error_set(err, -EINVAL, "member %u: the buffer at %p is "
		"not a lease ready to send (%s)", g->my_id, d->ptr,
		state == ALLOC_SUBMITTED ? "it was sent already" :
		state == ALLOC_FREE ? "it is free" :
		state == ALLOC_DELIVERED ? "it is a delivery: send its bytes "
		"with group_send_mem() or group_p2p_send_mem()" :
		"not the start of a lease");
}

/* d: a lease group_lease_ready() accepted, or memory sent in place. */
static int send_large(struct group *g, const struct buf_desc *d,
		      int timeout_ms, struct squall_error *err)
{
	uint64_t until = timeout_ms > 0 ? group_now_ms() + (uint64_t)timeout_ms : 0;
	bool in_place = group_in_place(g, d);
	struct group_own *o;
	struct buf_desc od;
	int r;

	o = calloc(1, sizeof(*o));
	if (!o)
		return squall_error_set(err, -ENOMEM, "out of memory");
	/* Bound the large messages in flight. */
	group_lock(g);
	while (g->rdmc_inflight >= GROUP_RDMC_INFLIGHT &&
	       !atomic_load(&g->failed)) {
		struct timespec ts;

		if (timeout_ms == 0 || (until && group_now_ms() >= until)) {
			group_unlock(g);
			free(o);
			return squall_error_set(err, timeout_ms ? -ETIMEDOUT
				: -EAGAIN, "member %u: %u large messages are "
				"already in flight", g->my_id, GROUP_RDMC_INFLIGHT);
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += WAIT_SLICE_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		atomic_fetch_add(&g->st_waits, 1);
		group_cond_timedwait(&g->room, g, &ts);
	}
	g->rdmc_inflight++;
	/* Unique per member for the group's life, whatever the view. */
	o->msg_id = (uint64_t)g->my_id << 40 | ++g->next_msg;
	group_unlock(g);
	/* The group's from now on: whether its RDMC send starts in this
	 * view or is made again in a later one, the application can no
	 * longer release it, and its completion gives it back. Memory sent
	 * in place stays its caller's, who waits for the end. */
	r = in_place ? 0 : alloc_submit(g->a, d);
	if (r) {
		group_lock(g);
		g->rdmc_inflight--;
		group_unlock(g);
		free(o);
		return squall_error_set(err, -EINVAL, "member %u: the buffer at "
			"%p is not a lease ready to send", g->my_id, d->ptr);
	}
	o->d = *d;
	group_own_add(g, o);
	r = announce(g, o->msg_id, d, timeout_ms, err);
	if (r) {
		group_own_take(g, o->msg_id, &od);
		if (!in_place)
			alloc_unsubmit(g->a, d);
		group_lock(g);
		g->rdmc_inflight--;
		group_unlock(g);
		return r;
	}
	atomic_fetch_add(&g->st_sent_rdmc, 1);
	return 0;
}

/* Register memory sent in place whole, once, off the progress thread:
 * its block writes then find it cached (a miss per block would register
 * the growing merged range again and again on the progress thread, which
 * also beats the heartbeats). The registration stays cached, not held.
 * Returns 0, or the cache's error: -EFAULT when the range is not all
 * mapped. */
static int warm(struct group *g, const void *ptr, size_t len)
{
	struct regcache *c = rdma_sq_regcache(g->v.node);
	struct regcache_reg *r;
	int ret = regcache_get(c, ptr, len, &r);

	if (!ret)
		regcache_put(c, r);
	return ret;
}

/* A message of an ended view sent again (view thread, sends still
 * wedged): its payload is submitted already. It may wait for room in the
 * window, which a failure of the group ends (group_view_pass wedges the
 * core). */
int group_resend(struct group *g, struct group_resend *rs,
		 struct squall_error *err)
{
	int r;

	group_assert_view_thread(g);
	group_assert_epoch_writer(g);
	if (rs->large && group_in_place(g, &rs->d))
		(void)warm(g, rs->d.ptr, rs->d.len); /* else: its writes say */
	if (rs->large)
		return announce(g, rs->msg_id, &rs->d, -1, err);
	g->resending = true;
	r = smc_core_send_kind(g->v.core, rs->d.ptr, (uint32_t)rs->d.len,
			       rs->d.ptr, -1, false, rs->kind);
	g->resending = false;
	if (r == 0)
		atomic_fetch_add(&g->v.sent_epoch, 1);
	if (r && smc_core_error(g->v.core))
		r = -ESTALE;
	return r ? squall_error_set(err, r, "member %u: sending a message "
		"again in the new view failed: %s", g->my_id, strerror(-r)) : 0;
}

int group_ordered_send_timeout(struct group *g, const struct buf_desc *d,
			       int timeout_ms, struct squall_error *err)
{
	int r;

	squall_error_clear(err);
	/* An upcall's send never waits: the room it would wait for (the
	 * window, RDMC slots, leases) is freed by the thread running it
	 * (group_nowait says which threads those are). */
	if (group_nowait(g))
		timeout_ms = 0;
	if ((r = usable(g, err)))
		return r;
	if (!d || !d->ptr || !d->len || !alloc_owns(g->a, d->ptr, d->len))
		return squall_error_set(err, -EINVAL, "member %u: the buffer "
			"%p + %zu is not inside this member's region (lease it "
			"from group_get_allocator(), or use group_send_copy())",
			g->my_id, d ? d->ptr : NULL, d ? d->len : 0);
	if ((r = group_lease_ready(g, d, err)))
		return r;
	if (d->len > g->cfg.smc_max_payload)
		r = send_large(g, d, timeout_ms, err);
	else if (!(r = smc_send(g, d->ptr, (uint32_t)d->len, timeout_ms,
				GROUP_KIND_APP, NULL, err)))
		atomic_fetch_add(&g->st_sent_smc, 1);
	if (!r)
		atomic_fetch_add(&g->st_sent, 1);
	return r;
}

int group_ordered_send(struct group *g, const struct buf_desc *d,
		       struct squall_error *err)
{
	return group_ordered_send_timeout(g, d, -1, err);
}

/* Copy len bytes at ptr into a lease and send that (waiting at most
 * timeout_ms for room, as group_ordered_send_timeout). */
static int send_copy(struct group *g, const void *ptr, size_t len,
		     int timeout_ms, struct squall_error *err)
{
	struct buf_desc d;
	int r;

	/* From an upcall, no wait (as group_ordered_send_timeout). */
	if (group_nowait(g))
		timeout_ms = 0;
	r = alloc_lease_wait(g->a, 1, &len, &d,
			     timeout_ms < 0 ? UINT32_MAX : (unsigned)timeout_ms);
	if (r)
		return squall_error_set(err, r, "member %u: no room in the "
					"region for a copy of %zu bytes",
					g->my_id, len);
	memcpy(d.ptr, ptr, len);
	r = group_ordered_send_timeout(g, &d, timeout_ms, err);
	if (r) {
		alloc_release(g->a, &d);
		return r;
	}
	atomic_fetch_add(&g->st_copies, 1);
	atomic_fetch_add(&g->st_copied_bytes, len);
	return 0;
}

int group_send_copy(struct group *g, const void *ptr, size_t len,
		    struct squall_error *err)
{
	int r;

	squall_error_clear(err);
	if ((r = usable(g, err)))
		return r;
	if (!ptr || !len)
		return squall_error_set(err, -EINVAL, "member %u: nothing to "
					"send", g->my_id);
	return send_copy(g, ptr, len, -1, err);
}

void group_own_done(struct group *g, const struct buf_desc *d, int code,
		    const char *why)
{
	struct group_in_place *p, **pp;

	if (!group_in_place(g, d)) {
		alloc_complete(g->a, d);
		return;
	}
	group_lock(g);
	for (pp = &g->in_place; (p = *pp); pp = &p->next)
		if (p->ptr == d->ptr && p->len == d->len && !p->done)
			break;
	if (p && p->async) {
		/* Nobody waits: the upcall says it, once unlinked. */
		*pp = p->next;
		group_unlock(g);
		if (!code) {
			atomic_fetch_add(&g->st_in_place, 1);
			atomic_fetch_add(&g->st_in_place_bytes, d->len);
		}
		group_upcall_begin(g);
		g->cb.send_mem_done(g->ctx, p->ptr, p->len, code,
				    why ? why : "");
		group_upcall_end(g);
		free(p);
		return;
	}
	if (p) {
		p->done = true;
		p->code = code;
		snprintf(p->why, sizeof(p->why), "%s", why ? why : "");
	}
	pthread_cond_broadcast(&g->room);
	group_unlock(g);
}

void group_in_place_end(struct group *g)
{
	struct group_in_place *p, **pp, *ended = NULL;
	char why[SQUALL_ERRMSG_MAX];

	snprintf(why, sizeof(why), "member %u: the group closed before every "
		 "member had the message", g->my_id);
	group_lock(g);
	for (pp = &g->in_place; (p = *pp);) {
		if (p->async) {
			*pp = p->next;
			p->next = ended;
			ended = p;
			continue;
		}
		if (!p->done) {
			p->done = true;
			p->code = -ESHUTDOWN;
			snprintf(p->why, sizeof(p->why), "%s", why);
		}
		pp = &p->next;
	}
	pthread_cond_broadcast(&g->room);
	while (g->in_place_callers)
		group_cond_wait(&g->room, g);
	group_unlock(g);
	while ((p = ended)) {
		ended = p->next;
		group_upcall_begin(g);
		g->cb.send_mem_done(g->ctx, p->ptr, p->len, -ESHUTDOWN, why);
		group_upcall_end(g);
		free(p);
	}
}

/* Send the caller's memory in place: RDMC's block writes read it through
 * the registration cache; wait until the message is done with. */
static int send_in_place(struct group *g, const void *ptr, size_t len,
			 int timeout_ms, bool async, struct squall_error *err)
{
	struct group_in_place *p = calloc(1, sizeof(*p)), **pp;
	const struct buf_desc d = { (void *)ptr, len };
	int r;

	if (!p)
		return squall_error_set(err, -ENOMEM, "out of memory");
	p->ptr = ptr;
	p->len = len;
	p->async = async;
	group_lock(g);
	for (struct group_in_place *q = g->in_place; q; q = q->next) {
		if (q->ptr == ptr && !q->done) {
			group_unlock(g);
			free(p);
			return squall_error_set(err, -EBUSY, "member %u: the "
				"memory at %p is being sent in place already",
				g->my_id, ptr);
		}
	}
	p->next = g->in_place;
	g->in_place = p;
	g->in_place_callers++;
	group_unlock(g);
	r = view_enter(g, timeout_ms != 0, timeout_ms > 0 ? group_now_ms() +
		       (uint64_t)timeout_ms : 0, err);
	if (!r) {
		r = warm(g, ptr, len);
		view_leave(g);
		if (r == -EFAULT || r == -EINVAL)
			r = squall_error_set(err, -EFAULT, "member %u: the memory "
				"at %p + %zu is not all mapped", g->my_id, ptr, len);
		else if (r)
			r = squall_error_set(err, r, "member %u: registering %zu "
				"bytes at %p to send them in place failed: %s",
				g->my_id, len, ptr, strerror(-r));
	}
	if (!r)
		r = send_large(g, &d, timeout_ms, err);
	group_lock(g);
	if (async && !r) {
		/* The record is group_own_done's now (maybe gone already). */
		g->in_place_callers--;
		pthread_cond_broadcast(&g->room);
		group_unlock(g);
		atomic_fetch_add(&g->st_sent, 1);
		return GROUP_SENT_IN_PLACE;
	}
	/* Sent: wait for its end, whatever the views (a view change sends it
	 * again from the same memory, or the stop reports it). */
	while (!r && !p->done)
		group_cond_wait(&g->room, g);
	if (!r && p->code)
		r = squall_error_set(err, p->code, "%s", p->why);
	for (pp = &g->in_place; *pp != p; pp = &(*pp)->next)
		;
	*pp = p->next;
	g->in_place_callers--;
	pthread_cond_broadcast(&g->room);
	group_unlock(g);
	free(p);
	if (!r) {
		atomic_fetch_add(&g->st_in_place, 1);
		atomic_fetch_add(&g->st_in_place_bytes, len);
		atomic_fetch_add(&g->st_sent, 1);
	}
	return r;
}

static int send_mem(struct group *g, const void *ptr, size_t len,
		    int timeout_ms, bool async, struct squall_error *err)
{
	int r;

	squall_error_clear(err);
	if ((r = usable(g, err)))
		return r;
	if (async && !g->cb.send_mem_done)
		return squall_error_set(err, -EINVAL, "member %u: "
			"group_send_mem_async needs the send_mem_done upcall",
			g->my_id);
	if (!ptr || !len)
		return squall_error_set(err, -EINVAL, "member %u: nothing to "
					"send", g->my_id);
	if (alloc_owns(g->a, ptr, len)) {
		int state = alloc_state(g->a, ptr);

		if (state == ALLOC_LEASED)
			return group_ordered_send_timeout(g, &(struct buf_desc){
				(void *)ptr, len }, timeout_ms, err);
		if (state == ALLOC_SUBMITTED || state == ALLOC_FREE)
			return squall_error_set(err, -EINVAL, "member %u: the "
				"buffer at %p is %s", g->my_id, ptr,
				state == ALLOC_SUBMITTED ? "sent already"
							 : "free");
		/* A delivery, or inside a lease: a copy goes out. */
		return send_copy(g, ptr, len, timeout_ms, err);
	}
	/* In place only for RDMC's sizes, from at least copy_threshold, and
	 * where waiting is allowed (an upcall's in-place send would wait for
	 * the thread running it). */
	if (len <= g->cfg.smc_max_payload || len < g->cfg.copy_threshold ||
	    group_nowait(g))
		return send_copy(g, ptr, len, timeout_ms, err);
	return send_in_place(g, ptr, len, timeout_ms, async, err);
}

int group_send_mem(struct group *g, const void *ptr, size_t len,
		   int timeout_ms, struct squall_error *err)
{
	return send_mem(g, ptr, len, timeout_ms, false, err);
}

int group_send_mem_async(struct group *g, const void *ptr, size_t len,
			 int timeout_ms, struct squall_error *err)
{
	return send_mem(g, ptr, len, timeout_ms, true, err);
}

int group_release(struct group *g, const struct buf_desc *d)
{
	struct group_kept **p, *k;

	group_lock(g);
	for (p = &g->kept; *p; p = &(*p)->next)
		if ((*p)->d.ptr == d->ptr)
			break;
	k = *p;
	if (k) {
		*p = k->next;
	} else {
		/* Handed on by a deliver upcall that has not returned yet:
		 * the group gives it back once it returns. */
		void *cur = d->ptr;

		if (cur && atomic_compare_exchange_strong(&g->upcall_ptr, &cur,
					GROUP_UPCALL_RELEASED(g))) {
			group_unlock(g);
			return 0;
		}
	}
	group_unlock(g);
	if (!k)
		return -EINVAL;
	if (k->kind == KEPT_SMC) {
		bool self = group_lockless(g);
		bool gone = false;

		if (!self)
			group_epoch_rdlock(g);
		if (k->rings == g->v.cur_rings) {
			smc_core_release(g->v.core, &k->m);
		} else {
			/* Kept from an ended view: its rings go with the
			 * last such delivery. */
			group_lock(g);
			gone = --k->rings->kept == 0 && k->rings->retired;
			group_unlock(g);
		}
		if (!self)
			group_epoch_rdunlock(g);
		if (gone) {
			alloc_release(g->a, &k->rings->d);
			free(k->rings);
		}
	} else if (k->kind == KEPT_RDMC_RECV) {
		alloc_release(g->a, &k->d);
	} else if (k->kind == KEPT_IN_PLACE) {
		/* The sender's own memory, its again since its send
		 * returned: nothing to give back. */
	} else {
		/* Sent from a lease of mine (large, or small of an ended
		 * view): sent everywhere, so done. */
		alloc_complete(g->a, &k->d);
	}
	free(k);
	return 0;
}
