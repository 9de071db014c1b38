/*
 * own.c - this member's own ordered messages that a view change may have
 * to send again: the large ones from their send to their delivery
 * (g->own, under lock), and the list of those to send again in the next
 * view (g->resend_head), in send order.
 *
 * A view change delivers what is within the agreed trim; the own
 * messages past it are collected here (by order.c, on the progress
 * thread, as it delivers the trim) and the view thread sends them again
 * at the start of the next view (view.c), before any new send. A view that
 * ends while they are being sent again leaves the rest for the next one
 * (g->resend_later), after that view's own messages.
 */
#include <errno.h>
#include <stdlib.h>

#include "group/group_int.h"

/* ---- own large messages ----------------------------------------------------- */

void group_own_add(struct group *g, struct group_own *o)
{
	group_lock(g);
	o->next = g->own;
	g->own = o;
	group_unlock(g);
}

/* Where the record of msg_id is linked (*p NULL: none). Under lock. */
static struct group_own **own_find(struct group *g, uint64_t msg_id)
{
	struct group_own **p;

	group_assert_locked(g);
	for (p = &g->own; *p; p = &(*p)->next)
		if ((*p)->msg_id == msg_id)
			break;
	return p;
}

bool group_own_take(struct group *g, uint64_t msg_id, struct buf_desc *d)
{
	struct group_own **p, *o;

	group_lock(g);
	p = own_find(g, msg_id);
	o = *p;
	if (o) {
		*p = o->next;
		*d = o->d;
	}
	group_unlock(g);
	free(o);
	return o != NULL;
}

bool group_own_find(struct group *g, uint64_t msg_id, struct buf_desc *d)
{
	struct group_own *o;

	group_lock(g);
	o = *own_find(g, msg_id);
	if (o)
		*d = o->d;
	group_unlock(g);
	return o != NULL;
}

/* ---- messages to send again ------------------------------------------------- */

void group_resend_add(struct group *g, bool large, uint8_t kind,
		      uint64_t msg_id, const struct buf_desc *d)
{
	struct group_resend *rs;

	group_assert_progress(g);
	rs = calloc(1, sizeof(*rs));
	if (!rs) {
		group_fail(g, -ENOMEM, "out of memory keeping a message to "
			   "send again");
		return;
	}
	rs->large = large;
	rs->kind = kind;
	rs->msg_id = msg_id;
	rs->d = *d;
	*g->resend_tail = rs;
	g->resend_tail = &rs->next;
}

void group_resend_large(struct group *g, uint64_t msg_id)
{
	struct buf_desc d;

	if (group_own_find(g, msg_id, &d))
		group_resend_add(g, true, GROUP_KIND_ANNOUNCE, msg_id, &d);
}

void group_resend_add_later(struct group *g)
{
	group_assert_progress(g);
	if (g->resend_later) {
		*g->resend_tail = g->resend_later;
		while (*g->resend_tail)
			g->resend_tail = &(*g->resend_tail)->next;
		g->resend_later = NULL;
	}
}

void group_resend_defer(struct group *g)
{
	group_assert_view_thread(g);
	if (g->resend_head) {
		/* This view is ending already (a survivor did not come
		 * back), or the group failed: the rest waits for the next
		 * view, or for group_report_unsent. */
		*g->resend_tail = g->resend_later;
		g->resend_later = g->resend_head;
		g->resend_head = NULL;
	}
	g->resend_tail = &g->resend_head;
}

void group_own_free(struct group *g)
{
	group_assert_no_progress(g);
	while (g->own) {
		struct group_own *o = g->own;

		g->own = o->next;
		free(o);
	}
	while (g->resend_head || g->resend_later) {
		struct group_resend *rs = g->resend_head ? g->resend_head
							 : g->resend_later;

		if (rs == g->resend_head)
			g->resend_head = rs->next;
		else
			g->resend_later = rs->next;
		free(rs);
	}
}
