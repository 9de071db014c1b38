/*
 * p2p.c - point-to-point messages: one member's message to another,
 * outside the order, of any size, from a lease or from any memory.
 *
 * Up to group_p2p_max() bytes go in one SEND (a header, then the lease's
 * bytes gathered behind it). Larger ones go through a use-once region
 * (rdma/use_once.c): the sender opens one over the buffer for that peer
 * and SENDs its {address, rkey, length} (p2p_codec.h); the receiver
 * leases a buffer of that length, READs it, answers (SEND_WITH_INV on the
 * window path, which kills the key as it arrives; a plain SEND on the
 * registration path), hands the whole message to the upcall and releases
 * the buffer; the sender, on the answer, closes the region and gives the
 * buffer back (a lease to the allocator; memory of a caller waiting in
 * group_p2p_send_mem to that caller). A receiver with no room keeps the
 * request and tries again each progress pass, for GROUP_P2P_ROOM_MS;
 * when it can never take it (larger than its region) or gives up, it
 * answers with a refusal that the sender reports. A view's end
 * (group_drain) ends the transfers still open: their keys die with their
 * regions, their buffers come back, their senders learn -ENOTCONN.
 *
 * Also here: messages that arrive during set-up, kept until the view is
 * live.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <squall/wire.h>

#include "group/group_int.h"
#include "group/p2p_codec.h"
#include "rdma/hook.h"

/* Behind each SEND an object in the region: the encoded message, then
 * what its completion needs. */
#define P2P_OBJ 256u
enum p2p_kind { P2P_SMALL = 1, P2P_REQUEST, P2P_ANSWER };
struct p2p_meta {
	uint32_t kind;
	uint32_t rank;         /* the peer */
	uint64_t id;           /* REQUEST: its transfer */
	struct buf_desc d;     /* SMALL: the lease */
};
_Static_assert(GROUP_P2P_MSG_CAP % 16 == 0 &&
	       GROUP_P2P_MSG_CAP + sizeof(struct p2p_meta) <= P2P_OBJ,
	       "a p2p object holds its message and its record");

/* wr_id below the tag: GROUP_WR_P2P, WR_BIND for a use-once bind (its
 * completion needs nothing), else the object's offset in the region;
 * GROUP_WR_P2P_READ, the transfer's id, or WR_PROBE and the offset of the
 * probe's object (test hook p2p_old_key). */
#define WR_LOW ((1ull << 48) - 1)
#define WR_BIND (1ull << 48)
#define WR_PROBE (1ull << 47)

/* One of this member's use-once regions, from its open to the answer
 * (or the view's end). */
struct group_p2p_out {
	struct group_p2p_out *next;
	uint64_t id;
	uint32_t member, rank;
	struct rdma_sq_use_once *uo;
	struct wire_use_once u;       /* what the request said */
	struct buf_desc d;            /* the message */
	bool waiter;                  /* a caller of group_p2p_send_mem waits
					 (and frees this); else d is a
					 submitted lease */
	bool done;                    /* waiter: the end came */
	int code;
	char why[SQUALL_ERRMSG_MAX];
	pthread_cond_t cond;          /* waiter, with p2p_mu */
};

/* A peer's use-once region this member reads. */
enum p2p_in_state { IN_ROOM, IN_READ, IN_ANSWER, IN_FAILED };
struct group_p2p_in {
	struct group_p2p_in *next;
	uint64_t id;
	uint32_t rank;
	struct wire_use_once u;
	bool registration;            /* answer with a plain SEND */
	enum p2p_in_state state;
	int code;                     /* IN_ANSWER: 0 (read), or a refusal */
	char why[GROUP_P2P_WHY_MAX];
	uint64_t deadline_ms;         /* IN_ROOM: when it gives up */
	struct buf_desc d;            /* the lease read into (ptr NULL: none) */
	uint64_t asked, got;          /* bytes of the READs posted, done */
	unsigned reads;               /* READs in flight */
};

/* Use-once open and close must not run concurrently on a node (rdma.h);
 * this lock serialises them and guards the lists of open regions and
 * their waiters, of every group in the process. It lives as long as the
 * process, so a waiter woken by the view's end touches nothing of a
 * group that may be gone. Never held across an upcall; held across a
 * registration of the memory a region opens over (the registration
 * cache's miss). */
static pthread_mutex_t p2p_mu = PTHREAD_MUTEX_INITIALIZER;

size_t group_p2p_max(const struct group *g)
{
	(void)g;
	return GROUP_RECV_BUF - WIRE_HDR_LEN;
}

static struct p2p_meta *meta_of(uint8_t *obj)
{
	return (struct p2p_meta *)(void *)(obj + GROUP_P2P_MSG_CAP);
}

static uint64_t obj_off(const struct group *g, const void *obj)
{
	return (uint64_t)((const uint8_t *)obj - (const uint8_t *)g->base);
}

static int queue_full(struct group *g, uint32_t member, int r,
		      struct squall_error *err)
{
	if (r == -ENOMEM || r == -EAGAIN)
		return squall_error_set(err, -EAGAIN, "member %u: the send "
					"queue to member %u is full", g->my_id,
					member);
	return r;
}

/* The checks every send makes: the group works, member is another
 * member of the view, connected. */
static int p2p_check(struct group *g, uint32_t member, int *rankp,
		     struct squall_error *err)
{
	int r, rank = group_config_member_index(&g->vcfg, member);

	if ((r = group_failed(g, err)))
		return r;
	if (rank < 0 || (uint32_t)rank == g->v.me)
		return squall_error_set(err, -ENOENT, "member %u: %u is not "
			"another member of the view", g->my_id, member);
	if (!rdma_sq_peer_alive(g->v.node, member))
		return squall_error_set(err, -ENOTCONN, "member %u: member %u "
			"is not connected: %s", g->my_id, member,
			rdma_sq_peer_error(g->v.node, member));
	*rankp = rank;
	return 0;
}

/* One of the GROUP_P2P_INFLIGHT sends to rank (a use-once transfer holds
 * it until its answer). */
static int p2p_slot(struct group *g, uint32_t member, int rank,
		    struct squall_error *err)
{
	if (atomic_fetch_add(&g->v.p2p_inflight[rank], 1) >=
	    GROUP_P2P_INFLIGHT) {
		atomic_fetch_sub(&g->v.p2p_inflight[rank], 1);
		return squall_error_set(err, -EAGAIN, "member %u: %u "
			"point-to-point messages to member %u are still in "
			"flight", g->my_id, GROUP_P2P_INFLIGHT, member);
	}
	return 0;
}

/* ---- small messages: one SEND ------------------------------------------- */

static int send_small(struct group *g, uint32_t member, int rank,
		      const struct buf_desc *d, struct squall_error *err)
{
	uint8_t *obj = alloc_obj_new(g->a, P2P_OBJ);
	struct rdma_sq_sge sg[2];
	int r, hlen;

	if (!obj)
		return squall_error_set(err, -ENOMEM, "member %u: no room for a "
					"message header", g->my_id);
	hlen = wire_encode(obj, GROUP_P2P_MSG_CAP, WIRE_MSG_P2P, 0, NULL, 0,
			   (uint32_t)d->len, err);
	/* Test hook: a member that misbehaves sends what nobody can read. */
	if (hlen > 0 && squall_hook_fail("p2p_garbage"))
		memset(obj, 0xa5, (size_t)hlen);
	r = hlen < 0 ? hlen : alloc_submit(g->a, d);
	if (r) {
		alloc_obj_delete(g->a, obj);
		return squall_error_set(err, -EINVAL, "member %u: the buffer at "
			"%p is not a lease ready to send", g->my_id, d->ptr);
	}
	*meta_of(obj) = (struct p2p_meta){ P2P_SMALL, (uint32_t)rank, 0, *d };
	sg[0] = (struct rdma_sq_sge){ obj, (uint32_t)hlen };
	sg[1] = (struct rdma_sq_sge){ d->ptr, (uint32_t)d->len };
	r = rdma_sq_send(g->v.node, member, sg, d->len ? 2 : 1,
			 GROUP_WR_P2P << 56 | obj_off(g, obj), RDMA_SQ_SIGNALED,
			 err);
	if (r) {
		/* Never posted: the buffer is the caller's again. */
		alloc_obj_delete(g->a, obj);
		alloc_unsubmit(g->a, d);
		return queue_full(g, member, r, err);
	}
	atomic_fetch_add(&g->st_p2p_sent, 1);
	return 0;
}

/* ---- large messages, the sender's side ---------------------------------- */

/* p2p_mu held: take o out of the view's list; false when it is not there. */
static bool out_unlink(struct group *g, struct group_p2p_out *o)
{
	for (struct group_p2p_out **pp = &g->v.p2p_out; *pp; pp = &(*pp)->next)
		if (*pp == o) {
			*pp = o->next;
			return true;
		}
	return false;
}

/* p2p_mu held: o is over; out of the list, its region closed (on the
 * window path the window is deallocated: whatever the peer did, the key
 * is dead once this returns). */
static void out_close(struct group *g, struct group_p2p_out *o)
{
	out_unlink(g, o);
	rdma_sq_use_once_close(g->v.node, o->uo, NULL, NULL);
	o->uo = NULL;
}

/* Transfer o is over and closed: code 0 when the receiver read it, else
 * why not. Its slot frees; a waiting caller learns the end (and frees
 * o); a lease goes back to the allocator, after the send_failed upcall
 * when it failed. No lock held. */
static void out_end(struct group *g, struct group_p2p_out *o, int code,
		    const char *why)
{
	atomic_fetch_sub(&g->v.p2p_inflight[o->rank], 1);
	pthread_mutex_lock(&p2p_mu);
	if (o->waiter) {
		o->code = code;
		snprintf(o->why, sizeof(o->why), "%s", code ? why : "");
		o->done = true;
		pthread_cond_broadcast(&o->cond);
		pthread_mutex_unlock(&p2p_mu);
		return;
	}
	pthread_mutex_unlock(&p2p_mu);
	if (code)
		group_call_send_failed(g, &o->d, code, why);
	alloc_complete(g->a, &o->d);
	free(o);
}

/* Open a use-once region over o->d for o->member and send the request.
 * In the view (epoch_lock read, or a group thread), with a slot taken.
 * On failure nothing is left open. */
static int send_request(struct group *g, struct group_p2p_out *o,
			struct squall_error *err)
{
	uint8_t *obj = alloc_obj_new(g->a, P2P_OBJ);
	struct rdma_sq_sge sg;
	int r, n = 0;

	if (!obj)
		return squall_error_set(err, -ENOMEM, "member %u: no room for a "
					"message header", g->my_id);
	o->id = atomic_fetch_add(&g->p2p_out_id, 1) + 1;
	pthread_mutex_lock(&p2p_mu);
	r = rdma_sq_use_once_open(g->v.node, o->member, o->d.ptr, o->d.len, 0,
				  GROUP_WR_P2P << 56 | WR_BIND, &o->uo, err);
	if (!r) {
		o->u = (struct wire_use_once){ rdma_sq_use_once_addr(o->uo),
					       rdma_sq_use_once_rkey(o->uo),
					       rdma_sq_use_once_len(o->uo) };
		n = group_p2p_encode_request(obj, GROUP_P2P_MSG_CAP, &o->u,
			rdma_sq_use_once_path(o->uo) ==
				RDMA_SQ_USE_ONCE_REGISTRATION, err);
		if (n < 0) {
			rdma_sq_use_once_close(g->v.node, o->uo, NULL, NULL);
			r = n;
		} else {
			/* Listed before the request goes: the answer may
			 * come before this thread runs again. */
			o->next = g->v.p2p_out;
			g->v.p2p_out = o;
		}
	}
	pthread_mutex_unlock(&p2p_mu);
	if (r) {
		alloc_obj_delete(g->a, obj);
		return r;
	}
	if (squall_hook_fail("p2p_garbage"))
		memset(obj, 0xa5, (size_t)n);
	*meta_of(obj) = (struct p2p_meta){ P2P_REQUEST, o->rank, o->id,
					   { NULL, 0 } };
	sg = (struct rdma_sq_sge){ obj, (uint32_t)n };
	r = rdma_sq_send(g->v.node, o->member, &sg, 1,
			 GROUP_WR_P2P << 56 | obj_off(g, obj), RDMA_SQ_SIGNALED,
			 err);
	if (r) {
		/* Never posted: no answer comes. */
		pthread_mutex_lock(&p2p_mu);
		out_close(g, o);
		pthread_mutex_unlock(&p2p_mu);
		alloc_obj_delete(g->a, obj);
		return queue_full(g, o->member, r, err);
	}
	atomic_fetch_add(&g->st_p2p_use_once, 1);
	atomic_fetch_add(&g->st_p2p_sent, 1);
	return 0;
}

/* A lease of more than one SEND: submitted now, given back at the end. */
static int send_lease_large(struct group *g, uint32_t member, int rank,
			    const struct buf_desc *d, struct squall_error *err)
{
	struct group_p2p_out *o = calloc(1, sizeof(*o));
	int r;

	if (!o)
		return squall_error_set(err, -ENOMEM, "member %u: out of memory "
					"for a point-to-point send", g->my_id);
	if (alloc_submit(g->a, d)) {
		free(o);
		return squall_error_set(err, -EINVAL, "member %u: the buffer at "
			"%p is not a lease ready to send", g->my_id, d->ptr);
	}
	o->member = member;
	o->rank = (uint32_t)rank;
	o->d = *d;
	r = send_request(g, o, err);
	if (r) {
		alloc_unsubmit(g->a, d);
		free(o);
	}
	return r;
}

static int p2p_send(struct group *g, uint32_t member, const struct buf_desc *d,
		    struct squall_error *err)
{
	int r, rank;

	group_assert_in_view(g);
	squall_error_clear(err);
	if ((r = group_failed(g, err)))
		return r;
	if (!d || !d->ptr || !alloc_owns(g->a, d->ptr, d->len))
		return squall_error_set(err, -EINVAL, "member %u: the buffer is "
			"not inside this member's region", g->my_id);
	if ((r = group_lease_ready(g, d, err)) ||
	    (r = p2p_check(g, member, &rank, err)) ||
	    (r = p2p_slot(g, member, rank, err)))
		return r;
	if (d->len <= group_p2p_max(g))
		r = send_small(g, member, rank, d, err);
	else
		r = send_lease_large(g, member, rank, d, err);
	if (r)
		atomic_fetch_sub(&g->v.p2p_inflight[rank], 1);
	return r;
}

int group_p2p_send(struct group *g, uint32_t member, const struct buf_desc *d,
		   struct squall_error *err)
{
	bool self = group_lockless(g);
	int r;

	/* Not ordered: a wedged view's connections still carry it. */
	if (!self)
		group_epoch_rdlock(g);
	r = p2p_send(g, member, d, err);
	if (!self)
		group_epoch_rdunlock(g);
	return r;
}

/* group_p2p_send again while it says -EAGAIN, until deadline (never when
 * nowait). */
static int send_lease_retry(struct group *g, uint32_t member,
			    const struct buf_desc *d, bool nowait,
			    uint64_t deadline, struct squall_error *err)
{
	for (;;) {
		int r = group_p2p_send(g, member, d, err);

		if (r != -EAGAIN || nowait || group_now_ms() >= deadline)
			return r;
		group_nap();
	}
}

/* p2p_mu held, o not done: wait a while for its end. The answer, a
 * failed request or the view's end (group_drain) end it, none of them on
 * this thread; a group that stopped (this member lost its majority) has
 * no view change to come, so the wait ends it itself. Once o is done
 * nothing here touches g (the end may come from the teardown before the
 * group's free); while o is not, the teardown has not ended it, and g and
 * its view's node are still there. */
static void wait_end(struct group *g, struct group_p2p_out *o)
{
	struct timespec ts;
	int code;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 100 * 1000000l;
	if (ts.tv_nsec >= 1000000000l) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000l;
	}
	pthread_cond_timedwait(&o->cond, &p2p_mu, &ts);
	if (o->done || !(code = group_failed(g, NULL)) || !out_unlink(g, o))
		return;
	rdma_sq_use_once_close(g->v.node, o->uo, NULL, NULL);
	o->uo = NULL;
	atomic_fetch_sub(&g->v.p2p_inflight[o->rank], 1);
	snprintf(o->why, sizeof(o->why), "member %u: the group stopped before "
		 "member %u read a point-to-point message of %zu bytes: %.200s",
		 g->my_id, o->member, o->d.len, g->fail_msg);
	o->code = code;
	o->done = true;
}

/* Foreign memory in place: open, send, and wait for the end. */
static int send_in_place(struct group *g, uint32_t member, const void *ptr,
			 size_t len, uint64_t deadline,
			 struct squall_error *err)
{
	struct group_p2p_out *o = calloc(1, sizeof(*o));
	int r, rank;

	if (!o)
		return squall_error_set(err, -ENOMEM, "member %u: out of memory "
					"for a point-to-point send", g->my_id);
	o->member = member;
	o->d = (struct buf_desc){ (void *)ptr, len };
	o->waiter = true;
	pthread_cond_init(&o->cond, NULL);
	for (;;) {
		/* The lock is let go between tries: a view change may be
		 * waiting to install the view that frees the slots. */
		group_epoch_rdlock(g);
		r = p2p_check(g, member, &rank, err);
		if (!r)
			r = p2p_slot(g, member, rank, err);
		if (!r) {
			o->rank = (uint32_t)rank;
			r = send_request(g, o, err);
			if (r)
				atomic_fetch_sub(&g->v.p2p_inflight[rank], 1);
		}
		group_epoch_rdunlock(g);
		if (r != -EAGAIN || group_now_ms() >= deadline)
			break;
		group_nap();
	}
	if (!r) {
		pthread_mutex_lock(&p2p_mu);
		while (!o->done)
			wait_end(g, o);
		pthread_mutex_unlock(&p2p_mu);
		r = o->code;
		if (r)
			squall_error_set(err, r, "%s", o->why);
	}
	pthread_cond_destroy(&o->cond);
	free(o);
	return r;
}

int group_p2p_send_mem(struct group *g, uint32_t member, const void *ptr,
		       size_t len, int timeout_ms, struct squall_error *err)
{
	bool nowait = group_nowait(g);
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX
					   : group_now_ms() + (uint64_t)timeout_ms;
	size_t sz = len ? len : 1;
	struct buf_desc d;
	int r;

	squall_error_clear(err);
	if (!ptr)
		return squall_error_set(err, -EINVAL, "member %u: no memory to "
					"send", g->my_id);
	if (len > g->cfg.region_size)
		return squall_error_set(err, -EMSGSIZE, "member %u: a "
			"point-to-point message of %zu bytes is larger than a "
			"member's region (group.region_size %" PRIu64 ")",
			g->my_id, len, g->cfg.region_size);
	if (len > group_p2p_max(g) && !nowait)
		return send_in_place(g, member, ptr, len, deadline, err);
	/* One SEND's worth, or any size from an upcall (which must not
	 * wait for the answer that only its own thread would take): a copy
	 * in a lease, which the group owns from here on. */
	if (nowait || timeout_ms == 0)
		r = alloc_lease(g->a, 1, &sz, &d);
	else
		r = alloc_lease_wait(g->a, 1, &sz, &d,
				     timeout_ms < 0 ? UINT32_MAX
						    : (unsigned)timeout_ms);
	if (r)
		return squall_error_set(err, -ENOMEM, "member %u: no room in "
			"the region for a copy of %zu bytes", g->my_id, len);
	memcpy(d.ptr, ptr, len);
	d.len = len;
	r = send_lease_retry(g, member, &d, nowait, deadline, err);
	if (r)
		alloc_release(g->a, &d);
	return r;
}

/* The request SEND of transfer id failed: the peer never has it (or its
 * connection is gone: no answer comes either way). */
static void request_failed(struct group *g, uint64_t id,
			   const struct rdma_sq_wc *wc)
{
	struct group_p2p_out *o;
	char why[SQUALL_ERRMSG_MAX];

	pthread_mutex_lock(&p2p_mu);
	for (o = g->v.p2p_out; o && o->id != id; o = o->next)
		;
	if (o)
		out_close(g, o);
	pthread_mutex_unlock(&p2p_mu);
	if (!o)
		return;
	snprintf(why, sizeof(why), "member %u: a point-to-point message of "
		 "%zu bytes to member %u failed: %s", g->my_id, o->d.len,
		 o->member, wc->status_text ? wc->status_text : "flushed");
	out_end(g, o, -ENOTCONN, why);
}

int group_p2p_answer(struct group *g, uint32_t rank, const struct wire_msg *m,
		     char *why, size_t why_len)
{
	char text[GROUP_P2P_WHY_MAX], msg[SQUALL_ERRMSG_MAX];
	struct wire_use_once u;
	struct group_p2p_out *o;
	int code;

	if (group_p2p_parse_answer(m, &u, &code, text, sizeof(text))) {
		snprintf(why, why_len, "its answer to a use-once region is "
			 "malformed");
		return -EPROTO;
	}
	pthread_mutex_lock(&p2p_mu);
	for (o = g->v.p2p_out; o; o = o->next)
		if (o->rank == rank && o->u.rkey == u.rkey &&
		    o->u.addr == u.addr && o->u.len == u.len)
			break;
	if (o)
		out_close(g, o);
	pthread_mutex_unlock(&p2p_mu);
	if (!o) {
		snprintf(why, why_len, "it answered use-once region %#x (%"
			 PRIu64 " bytes), which this member did not open for "
			 "it", u.rkey, u.len);
		return -EPROTO;
	}
	snprintf(msg, sizeof(msg), "member %u refused a point-to-point "
		 "message of %" PRIu64 " bytes from member %u: %s",
		 g->v.ids[rank], u.len, g->my_id, text);
	out_end(g, o, code, msg);
	return 0;
}

/* The SEND of a small message failed: the send_failed upcall (-ENOTCONN).
 * Its completion came back in error, so the receiver most likely does
 * not have it; an acknowledgement lost with the connection would leave it
 * delivered all the same. */
static void small_failed(struct group *g, const struct p2p_meta *mt,
			 const struct rdma_sq_wc *wc)
{
	char why[SQUALL_ERRMSG_MAX];

	if (!g->cb.send_failed)
		return;
	snprintf(why, sizeof(why), "member %u: a point-to-point message of "
		 "%zu bytes to member %u failed (%s): its connection closed "
		 "first (a failure, a view change or the close); member %u "
		 "may have received it just before", g->my_id, mt->d.len,
		 g->v.ids[mt->rank], wc->status_text ? wc->status_text :
		 "flushed", g->v.ids[mt->rank]);
	group_call_send_failed(g, &mt->d, -ENOTCONN, why);
}

/* A point-to-point SEND (a message, a request, an answer) or a use-once
 * bind completed. */
void group_p2p_done(struct group *g, const struct rdma_sq_wc *wc)
{
	uint8_t *obj;
	struct p2p_meta mt;

	/* A bind that failed fails the request SEND behind it. */
	if (wc->wr_id & WR_BIND)
		return;
	obj = (uint8_t *)g->base + (wc->wr_id & WR_LOW);
	mt = *meta_of(obj);
	alloc_obj_delete(g->a, obj);
	if (mt.kind == P2P_SMALL) {
		atomic_fetch_sub(&g->v.p2p_inflight[mt.rank], 1);
		/* The connection went (the peer failed, or went on to the
		 * next view first): the sender is told, before the lease
		 * goes back. */
		if (wc->status)
			small_failed(g, &mt, wc);
		alloc_complete(g->a, &mt.d);
	} else if (mt.kind == P2P_REQUEST && wc->status) {
		request_failed(g, mt.id, wc);
	}
}

/* ---- large messages, the receiver's side -------------------------------- */

static void in_free(struct group *g, struct group_p2p_in *in)
{
	if (in->d.ptr)
		alloc_release(g->a, &in->d);
	free(in);
}

static void in_refuse(struct group_p2p_in *in, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void in_refuse(struct group_p2p_in *in, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(in->why, sizeof(in->why), fmt, ap);
	va_end(ap);
	in->code = code;
	in->state = IN_ANSWER;
}

#ifdef SQUALL_TEST_HOOKS
/* Test hook p2p_old_key: READ the region just answered once more with its
 * old key, into an object of its own. The answer went first on the same
 * queue pair and killed the key, so the READ must fail with a remote
 * access error; the completion says which on stderr. The failure breaks
 * the connection: a test's last step. */
static void probe_old_key(struct group *g, struct group_p2p_in *in)
{
	struct squall_error err = { 0 };
	uint8_t *obj;
	int r;

	if (!squall_hook_fail("p2p_old_key"))
		return;
	obj = alloc_obj_new(g->a, 4096);
	r = obj ? rdma_sq_read(g->v.node, g->v.ids[in->rank],
			       &(struct rdma_sq_sge){ obj, in->u.len < 4096 ?
						      (uint32_t)in->u.len : 4096 },
			       1, in->u.addr, in->u.rkey,
			       GROUP_WR_P2P_READ << 56 | WR_PROBE | obj_off(g, obj),
			       RDMA_SQ_SIGNALED, &err) : -ENOMEM;
	fprintf(stderr, "p2p_old_key: member %u READs member %u's use-once "
		"region %#x (%#" PRIx64 ", %" PRIu64 " bytes) again with the "
		"old key: %s\n", g->my_id, g->v.ids[in->rank], in->u.rkey,
		in->u.addr, in->u.len, r ? strerror(-r) : "posted");
	if (r && obj)
		alloc_obj_delete(g->a, obj);
}

static void probe_done(struct group *g, const struct rdma_sq_wc *wc)
{
	fprintf(stderr, "p2p_old_key: member %u: the READ with the old key "
		"%s: %s\n", g->my_id, wc->status ? "failed" : "SUCCEEDED",
		wc->status_text ? wc->status_text : "");
	alloc_obj_delete(g->a, (uint8_t *)g->base +
				       (wc->wr_id & (WR_PROBE - 1)));
}
#endif

/* Post the answer to in's region. Returns 0 when posted, -EAGAIN when it
 * must wait for a later pass (no room for it, or the send queue is full),
 * another negative errno when it cannot go. */
static int post_answer(struct group *g, struct group_p2p_in *in)
{
	struct squall_error err = { 0 };
	uint32_t member = g->v.ids[in->rank];
	uint8_t *obj = alloc_obj_new(g->a, P2P_OBJ);
	struct rdma_sq_sge sg;
	uint64_t wrid;
	int n, r;

	if (!obj)
		return -EAGAIN;
	n = group_p2p_encode_answer(obj, GROUP_P2P_MSG_CAP, &in->u, in->code,
				    in->why, &err);
	if (n < 0) {
		alloc_obj_delete(g->a, obj);
		return -EPROTO;
	}
	*meta_of(obj) = (struct p2p_meta){ P2P_ANSWER, in->rank, in->id,
					   { NULL, 0 } };
	sg = (struct rdma_sq_sge){ obj, (uint32_t)n };
	wrid = GROUP_WR_P2P << 56 | obj_off(g, obj);
	/* On the window path the answer kills the key as it arrives, read
	 * or refused; on the registration path the owner deregisters. */
	r = in->registration ?
		    rdma_sq_send(g->v.node, member, &sg, 1, wrid,
				 RDMA_SQ_SIGNALED, &err) :
		    rdma_sq_send_inv(g->v.node, member, &sg, 1, in->u.rkey, wrid,
				     RDMA_SQ_SIGNALED, &err);
	if (r) {
		alloc_obj_delete(g->a, obj);
		return r == -ENOMEM || r == -EAGAIN ? -EAGAIN : r;
	}
	return 0;
}

/* Answer in's region, then hand what was read to the upcall. Returns
 * true when in is done with. */
static bool in_answer(struct group *g, struct group_p2p_in *in, bool *work)
{
	bool upcall = !in->code && in->d.ptr;
	int r;

	/* Another upcall runs: answered and handed over at a later pass. */
	if (upcall && !group_upcall_try(g))
		return false;
	r = post_answer(g, in);
	if (!r) {
		*work = true;
#ifdef SQUALL_TEST_HOOKS
		if (!in->code && !in->registration)
			probe_old_key(g, in);
#endif
		if (upcall) {
			atomic_fetch_add(&g->st_p2p_received, 1);
			g->cb.p2p_receive(g->ctx, g->v.ids[in->rank], &in->d);
		}
	}
	if (upcall)
		group_upcall_end(g);
	if (r == -EAGAIN)
		return false; /* no room for the answer yet: a later pass */
	if (r) {
		in->state = IN_FAILED;
		return in->reads == 0;
	}
	return true;
}

/* Take in one step further: a lease, READs, the answer. Returns true when
 * in is done with. */
static bool in_step(struct group *g, struct group_p2p_in *in, uint64_t now,
		    bool *work)
{
	struct squall_error err = { 0 };
	int r;

	if (in->state == IN_ROOM) {
		size_t sz = (size_t)in->u.len;

		if (!in->deadline_ms)
			in->deadline_ms = now + GROUP_P2P_ROOM_MS;
		if (!alloc_lease(g->a, 1, &sz, &in->d)) {
			in->state = IN_READ;
			*work = true;
		} else {
			in->d.ptr = NULL;
			switch (group_p2p_no_room(in->u.len, g->len, now,
						  in->deadline_ms)) {
			case GROUP_P2P_ROOM_WAIT:
				return false;
			case GROUP_P2P_ROOM_NEVER:
				in_refuse(in, -EMSGSIZE, "member %u cannot take "
					  "%" PRIu64 " bytes: its region holds "
					  "%zu", g->my_id, in->u.len, g->len);
				break;
			case GROUP_P2P_ROOM_GAVE_UP:
				in_refuse(in, -ENOBUFS, "member %u had no room "
					  "for %" PRIu64 " bytes within %u ms",
					  g->my_id, in->u.len,
					  GROUP_P2P_ROOM_MS);
				break;
			}
		}
	}
	while (in->state == IN_READ && in->asked < in->u.len &&
	       g->v.p2p_reads[in->rank] < GROUP_P2P_READS) {
		uint32_t n = group_p2p_read_len(in->asked, in->u.len);
		struct rdma_sq_sge sg = { (uint8_t *)in->d.ptr + in->asked, n };

		r = rdma_sq_read(g->v.node, g->v.ids[in->rank], &sg, 1,
				 in->u.addr + in->asked, in->u.rkey,
				 GROUP_WR_P2P_READ << 56 | in->id,
				 RDMA_SQ_SIGNALED, &err);
		if (r == -ENOMEM || r == -EAGAIN)
			break; /* the send queue is full: a later pass */
		if (r) {
			in->state = IN_FAILED;
			break;
		}
		in->asked += n;
		in->reads++;
		g->v.p2p_reads[in->rank]++;
		*work = true;
	}
	if (in->state == IN_READ && in->got == in->u.len)
		in->state = IN_ANSWER;
	if (in->state == IN_ANSWER)
		return in_answer(g, in, work);
	return in->state == IN_FAILED && in->reads == 0;
}

/* Every request in arrival order, one step each; progress thread, view
 * live. Returns whether any moved. */
static bool in_pump(struct group *g)
{
	struct group_p2p_in **pp = &g->v.p2p_in, *in;
	uint64_t now = group_now_ms();
	bool work = false;

	group_assert_progress(g);
	while ((in = *pp)) {
		if (in_step(g, in, now, &work)) {
			*pp = in->next;
			in_free(g, in);
			work = true;
			continue;
		}
		pp = &in->next;
	}
	return work;
}

void group_p2p_read_done(struct group *g, const struct rdma_sq_wc *wc)
{
	uint64_t id = wc->wr_id & WR_LOW;
	struct group_p2p_in *in;

#ifdef SQUALL_TEST_HOOKS
	if (id & WR_PROBE) {
		probe_done(g, wc);
		return;
	}
#endif
	for (in = g->v.p2p_in; in && in->id != id; in = in->next)
		;
	if (!in)
		return;
	in->reads--;
	g->v.p2p_reads[in->rank]--;
	/* A failed READ: the peer failed, or its key does not read; the
	 * connection is gone either way, and the view change follows. */
	if (wc->status)
		in->state = IN_FAILED;
	else if (in->state == IN_READ) {
		uint64_t was = in->got;

		in->got += group_p2p_read_len(in->got, in->u.len);
		if (was < in->u.len / 2 && in->got >= in->u.len / 2)
			squall_hook("p2p_read_mid");
	}
	if (group_on_progress(g) &&
	    atomic_load_explicit(&g->ready, memory_order_acquire))
		in_pump(g);
}

/* A small message, in the receive buffer. */
static void receive_small(struct group *g, uint32_t rank,
			  const struct wire_msg *m)
{
	atomic_fetch_add(&g->st_p2p_received, 1);
	if (!g->cb.p2p_receive)
		return;
	/* Not during set-up: the application does not have its group
	 * yet. Nor while another upcall runs (state_save on the view
	 * thread, say). Kept (the receive buffer is posted again on return)
	 * until the view is live and no other upcall runs. */
	if (!atomic_load_explicit(&g->ready, memory_order_acquire) ||
	    !group_upcall_try(g)) {
		struct group_early_p2p *e = malloc(sizeof(*e) + m->payload_len);

		if (!e) {
			group_fail(g, -ENOMEM, "out of memory keeping a "
				   "point-to-point message from member %u",
				   g->v.ids[rank]);
			return;
		}
		e->next = NULL;
		e->sender = g->v.ids[rank];
		e->len = m->payload_len;
		memcpy(e->payload, m->payload, m->payload_len);
		if (!g->early_p2p_tail)
			g->early_p2p_tail = &g->early_p2p;
		*g->early_p2p_tail = e;
		g->early_p2p_tail = &e->next;
		return;
	}
	group_early_p2p_deliver(g);
	g->cb.p2p_receive(g->ctx, g->v.ids[rank],
			  &(struct buf_desc){ (void *)m->payload,
					      m->payload_len });
	group_upcall_end(g);
}

/* A point-to-point message from member rank (its SEND decoded into m),
 * on the progress thread: a small one, or a use-once region to read
 * (kept until the view is live when it comes during set-up). */
int group_p2p_receive(struct group *g, uint32_t rank, const struct wire_msg *m,
		      char *why, size_t why_len)
{
	struct group_p2p_in *in, **pp;
	struct wire_use_once u;
	bool reg;
	int k = group_p2p_parse_request(m, &u, &reg);

	if (k < 0) {
		snprintf(why, why_len, "it offered a use-once region that no "
			 "member can read");
		return -EPROTO;
	}
	if (k == 0) {
		receive_small(g, rank, m);
		return 0;
	}
	in = calloc(1, sizeof(*in));
	if (!in) {
		group_fail(g, -ENOMEM, "out of memory keeping a point-to-point "
			   "request from member %u", g->v.ids[rank]);
		return 0;
	}
	in->id = ++g->v.p2p_in_id & (WR_PROBE - 1);
	in->rank = rank;
	in->u = u;
	in->registration = reg;
	in->state = IN_ROOM;
	if (!g->cb.p2p_receive) {
		/* Dropped, as small ones are: answered unread. */
		atomic_fetch_add(&g->st_p2p_received, 1);
		in->state = IN_ANSWER;
	}
	for (pp = &g->v.p2p_in; *pp; pp = &(*pp)->next)
		;
	*pp = in;
	if (atomic_load_explicit(&g->ready, memory_order_acquire))
		in_pump(g);
	return 0;
}

/* The view's node is about to go, its requests flushed. */
void group_p2p_drain(struct group *g)
{
	struct group_p2p_out *list, *o;
	struct group_p2p_in *in;
	char why[SQUALL_ERRMSG_MAX];

	group_assert_no_progress(g);
	pthread_mutex_lock(&p2p_mu);
	list = g->v.p2p_out;
	g->v.p2p_out = NULL;
	for (o = list; o; o = o->next) {
		rdma_sq_use_once_close(g->v.node, o->uo, NULL, NULL);
		o->uo = NULL;
	}
	pthread_mutex_unlock(&p2p_mu);
	while ((o = list)) {
		list = o->next;
		snprintf(why, sizeof(why), "member %u: the connection to member "
			 "%u closed (a failure, a view change or the close) "
			 "before it read a point-to-point message of %zu bytes",
			 g->my_id, o->member, o->d.len);
		out_end(g, o, -ENOTCONN, why);
	}
	while ((in = g->v.p2p_in)) {
		g->v.p2p_in = in->next;
		in_free(g, in);
	}
	memset(g->v.p2p_reads, 0, sizeof(g->v.p2p_reads));
}

/* ---- set-up -------------------------------------------------------------- */

/* Once a pass, the view live: the messages kept during set-up or while
 * another upcall ran (kept for a later pass while one still runs), then
 * the requests waiting for room (or for the view). */
bool group_early_p2p_deliver(struct group *g)
{
	struct group_early_p2p *e;
	bool any = false;

	group_assert_progress(g);

	if (g->early_p2p && group_upcall_try(g)) {
		any = true;
		while ((e = g->early_p2p)) {
			g->early_p2p = e->next;
			if (!g->early_p2p)
				g->early_p2p_tail = &g->early_p2p;
			g->cb.p2p_receive(g->ctx, e->sender,
					  &(struct buf_desc){ e->payload,
							      e->len });
			free(e);
		}
		group_upcall_end(g);
	}
	if (g->v.p2p_in && in_pump(g))
		any = true;
	return any;
}

void group_early_p2p_free(struct group *g)
{
	struct group_early_p2p *e;

	group_assert_no_progress(g);

	while ((e = g->early_p2p)) {
		g->early_p2p = e->next;
		free(e);
	}
	g->early_p2p_tail = &g->early_p2p;
}

