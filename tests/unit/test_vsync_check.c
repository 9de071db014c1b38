/*
 * test_vsync_check.c - the virtual-synchrony checker (tests/vsync) judged
 * itself: good histories (3 to 7 members, a crash mid-view with a shorter
 * prefix, a joiner at a later position, a clean leave, a minority that
 * stops, several epochs, a truncated run) give no violation, and each
 * property reports a history with one fault planted for it; the log
 * format round-trips, malformed records are refused by file and line, a
 * record cut by a kill is accepted from a crashed member only, and the
 * vs_check program says the same on files.
 *
 * Histories come from a tiny model of a run (struct sim): every member of
 * the current view delivers every message at the same global position, a
 * view change installs the next epoch at the current position. Faults are
 * planted by the model's options or by editing the recorded arrays.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/vsync/check.h"
#include "tests/vsync/history.h"
#include "tests/vsync/log.h"

extern char **environ;

#define BIT(m) (1ULL << (m))
#define P(p)   (1u << (p))

static char dir[64];

/* The model of a run. */
struct sim {
	struct vs_history h;
	uint64_t epoch;
	uint64_t view;	/* members of the current view */
	uint64_t total; /* messages the group delivered so far */
	uint64_t next_q[VS_MAX_MEMBERS];
	uint64_t bars[VS_MAX_MEMBERS];
};

static uint64_t content(uint32_t s, uint64_t q)
{
	uint64_t b[2] = {s, q};

	return vs_hash(b, sizeof(b));
}

static uint64_t length(uint32_t s, uint64_t q)
{
	return 64 + (s * 7 + q) % 13;
}

static void sim_view(struct sim *s, uint64_t mask)
{
	uint32_t ids[VS_MAX_MEMBERS];
	size_t n = 0;

	for (uint32_t m = 0; m < VS_MAX_MEMBERS; m++)
		if (mask & BIT(m))
			ids[n++] = m;
	s->epoch++;
	for (size_t i = 0; i < n; i++)
		assert_int_equal(
		    vs_add_view(&s->h, ids[i], s->epoch, ids, n, s->total), 0);
	s->view = mask;
}

static void sim_init(struct sim *s, unsigned n)
{
	memset(s, 0, sizeof(*s));
	vs_history_init(&s->h);
	s->epoch = UINT64_MAX; /* the first view is epoch 0 */
	sim_view(s, BIT(n) - 1);
}

/* Deliver (sender, q) at members `to` at the current position. */
static void sim_deliver(struct sim *s, uint32_t sender, uint64_t q, uint64_t to)
{
	for (uint32_t m = 0; m < VS_MAX_MEMBERS; m++)
		if (to & BIT(m))
			assert_int_equal(vs_add_deliver(&s->h, m, s->epoch,
							s->total, sender, q,
							length(sender, q),
							content(sender, q)),
					 0);
}

/* sender sends its next message; members `to` deliver it. */
static void sim_msg(struct sim *s, uint32_t sender, uint64_t to)
{
	uint64_t q = s->next_q[sender]++;

	assert_int_equal(vs_add_send(&s->h, sender, s->epoch, q), 0);
	sim_deliver(s, sender, q, to);
	s->total++;
}

/* A send that returned but reached nobody (its sender is about to die). */
static void sim_send_only(struct sim *s, uint32_t sender)
{
	assert_int_equal(
	    vs_add_send(&s->h, sender, s->epoch, s->next_q[sender]++), 0);
}

static void sim_rounds(struct sim *s, unsigned rounds)
{
	for (unsigned i = 0; i < rounds; i++)
		for (uint32_t m = 0; m < VS_MAX_MEMBERS; m++)
			if (s->view & BIT(m))
				sim_msg(s, m, s->view);
}

static void sim_barrier(struct sim *s)
{
	for (uint32_t m = 0; m < VS_MAX_MEMBERS; m++)
		if (s->view & BIT(m))
			assert_int_equal(
			    vs_add_barrier(&s->h, m, s->epoch, ++s->bars[m]),
			    0);
}

static void sim_end(struct sim *s, uint32_t m, enum vs_how how)
{
	assert_int_equal(vs_add_end(&s->h, m, how), 0);
	s->view &= ~BIT(m);
}

static void sim_close_all(struct sim *s)
{
	for (uint32_t m = 0; m < VS_MAX_MEMBERS; m++)
		if (s->view & BIT(m))
			sim_end(s, m, VS_END_CLOSED);
}

/* Options of the basic run: a fault planted while it is made, or the
 * victim's END left to the harness. */
enum {
	B_HARNESS = 1,	   /* the victim (4) writes no END */
	B_DEAD_PREFIX = 2, /* member 3 misses the victim's last message */
	B_LOST_SEND = 4,   /* member 0's last send is delivered nowhere */
	B_DUPLICATE = 8,   /* member 0 delivers a message again at the end */
	B_SKIP = 16,	   /* sender 2 skips an mseq, everywhere */
	B_LATE_LEAVE = 32, /* 1 leaves after a message it is not owed */
};

/* Five members, then: 4 lags and crashes in epoch 0 (the others deliver
 * seven more messages, two of them its own, and its last send reaches
 * nobody); epoch 1 of 0..3; 5 joins in epoch 2; 1 leaves cleanly; epoch 3
 * of 0, 2, 3, 5; everyone closes. Barriers in epochs 0, 2 and 3. */
static void build_basic(struct sim *s, unsigned opt)
{
	sim_init(s, 5);
	sim_rounds(s, 20);
	sim_barrier(s);
	for (uint32_t i = 0; i < 7; i++) {
		uint64_t to = BIT(0) | BIT(1) | BIT(2) | BIT(3);

		if ((opt & B_DEAD_PREFIX) && i % 5 == 4)
			to &= ~BIT(3);
		sim_msg(s, i % 5, to);
	}
	sim_send_only(s, 4);
	if (opt & B_HARNESS)
		s->view &= ~BIT(4);
	else
		sim_end(s, 4, VS_END_CRASHED);
	sim_view(s, 0xf); /* epoch 1 */
	sim_rounds(s, 5);
	if (opt & B_SKIP)
		s->next_q[2]++;
	sim_rounds(s, 5);
	sim_view(s, 0xf | BIT(5)); /* epoch 2: 5 joins */
	sim_rounds(s, 15);
	sim_barrier(s);
	if (opt & B_LATE_LEAVE)
		sim_msg(s, 0, s->view & ~BIT(1));
	sim_end(s, 1, VS_END_CLOSED);
	sim_view(s, BIT(0) | BIT(2) | BIT(3) | BIT(5)); /* epoch 3 */
	sim_rounds(s, 10);
	sim_barrier(s);
	if (opt & B_LOST_SEND)
		sim_send_only(s, 0);
	if (opt & B_DUPLICATE) {
		sim_deliver(s, 2, 30, BIT(0));
		s->total++; /* only at member 0, which closes next */
	}
	sim_close_all(s);
}

static void print_report(const char *what, const struct vs_report *r)
{
	printf("%s: %zu violations\n", what, r->violations);
	for (size_t i = 0; i < r->nlines; i++)
		printf("  %s\n", r->lines[i]);
	for (size_t i = 0; i < r->nnotes; i++)
		printf("  note: %s\n", r->notes[i]);
}

static void expect_clean(const char *what, const struct vs_history *h)
{
	struct vs_report r;

	vs_report_init(&r, 20);
	int n = vs_check(h, &r);

	if (n)
		print_report(what, &r);
	assert_int_equal(n, 0);
	vs_report_free(&r);
}

/* The planted fault is reported by `must` (a line named so), and by no
 * property outside must and `also` (the ones it cannot help breaking). */
static void expect(const char *what, const struct vs_history *h,
		   enum vs_property must, unsigned also)
{
	struct vs_report r;
	char prefix[32];
	bool named = false;

	vs_report_init(&r, 12);
	int n = vs_check(h, &r);

	print_report(what, &r);
	assert_true(n > 0);
	snprintf(prefix, sizeof(prefix), "%s: ", vs_property_name[must]);
	for (size_t i = 0; i < r.nlines; i++)
		if (!strncmp(r.lines[i], prefix, strlen(prefix)))
			named = true;
	if (!named)
		fail_msg("%s: no line of %s", what, vs_property_name[must]);
	for (int p = 0; p < VS_NPROPS; p++)
		if (p != (int)must && !(also & P(p)) && r.count[p])
			fail_msg("%s: %s reported too", what,
				 vs_property_name[p]);
	vs_report_free(&r);
}

/* A line of property p says text. */
static void expect_line(const struct vs_history *h, enum vs_property p,
			const char *text)
{
	struct vs_report r;
	char prefix[32];

	vs_report_init(&r, 1000);
	vs_check(h, &r);
	snprintf(prefix, sizeof(prefix), "%s: ", vs_property_name[p]);
	for (size_t i = 0; i < r.nlines; i++) {
		if (!strncmp(r.lines[i], prefix, strlen(prefix)) &&
		    strstr(r.lines[i], text)) {
			vs_report_free(&r);
			return;
		}
	}
	fail_msg("no %s line says \"%s\"", vs_property_name[p], text);
}

static struct vs_deliver *find_del(struct vs_history *h, uint32_t m,
				   uint64_t epoch, size_t nth)
{
	struct vs_member *mm = &h->m[m];

	for (size_t i = 0; i < mm->ndels; i++)
		if (mm->dels[i].epoch == epoch && !nth--)
			return &mm->dels[i];
	fail_msg("member %u has no such delivery in epoch %lu", m,
		 (unsigned long)epoch);
	return NULL;
}

/* Good histories. */

static void test_good_three(void **state)
{
	(void)state;
	struct sim s;
	struct vs_report r;

	sim_init(&s, 3);
	sim_rounds(&s, 50);
	sim_barrier(&s);
	sim_close_all(&s);
	vs_report_init(&r, 10);
	assert_int_equal(vs_check(&s.h, &r), 0);
	assert_int_equal(r.members, 3);
	assert_int_equal(r.views, 1);
	assert_int_equal(r.deliveries, 450);
	vs_report_free(&r);
	vs_history_free(&s.h);
}

static void test_good_crash_join_leave(void **state)
{
	(void)state;
	struct sim s;
	struct vs_report r;

	build_basic(&s, B_LATE_LEAVE);
	expect_clean("crash, join, leave", &s.h);
	vs_report_init(&r, 10);
	assert_int_equal(vs_check(&s.h, &r), 0);
	assert_int_equal(r.members, 6);
	assert_int_equal(r.views, 4);
	/* The victim delivered a shorter prefix of epoch 0. */
	assert_int_equal(s.h.m[4].ndels, 100);
	assert_int_equal(s.h.m[0].ndels, 107 + 40 + 76 + 40);
	vs_report_free(&r);
	vs_history_free(&s.h);
}

/* Three members; member 0's last message of epoch 0 (#4) misses the trim
 * of the change that member 1's leave makes, and is to be sent again in
 * epoch 1 of {0, 2}, which this installs. Returns its mseq. */
static uint64_t sim_resend_setup(struct sim *s)
{
	uint64_t q;

	sim_init(s, 3);
	sim_rounds(s, 4);
	q = s->next_q[0];
	sim_send_only(s, 0);
	sim_end(s, 1, VS_END_CLOSED);
	sim_view(s, BIT(0) | BIT(2));
	return q;
}

/* Member 0's message q, sent again, is delivered at member 0 alone. */
static void sim_resent_at_0(struct sim *s, uint64_t q)
{
	sim_deliver(s, 0, q, BIT(0));
	s->total++;
}

/* After sim_resend_setup, member 2 leaves cleanly before the resend
 * arrives (rdmc_heartbeat3 once did this). Member 2 lived past the epoch
 * of the send but not past the view the message belongs to, so it is not
 * owed it. The resend, first in epoch 1's order, is delivered at member 0
 * in epoch 1, or, with `later`, only in epoch 2. */
static void build_resend_leave(struct sim *s, bool later)
{
	uint64_t q = sim_resend_setup(s);

	if (!later)
		sim_resent_at_0(s, q);
	sim_end(s, 2, VS_END_CLOSED);
	sim_view(s, BIT(0));
	if (later)
		sim_resent_at_0(s, q);
	sim_rounds(s, 2);
	sim_close_all(s);
}

static void test_good_resend_leave(void **state)
{
	(void)state;
	struct sim s;

	build_resend_leave(&s, false);
	expect_clean("resent, leaver in its view", &s.h);
	vs_history_free(&s.h);
	build_resend_leave(&s, true);
	expect_clean("resent past the leave", &s.h);
	vs_history_free(&s.h);
}

/* Seven members, 105k messages: a minority of two stops mid-view; the
 * majority delivered three more (one of them from the minority). */
static void test_good_seven_partition(void **state)
{
	(void)state;
	struct sim s;
	uint64_t major = 0x1f;

	sim_init(&s, 7);
	sim_rounds(&s, 15000);
	sim_msg(&s, 0, major);
	sim_msg(&s, 5, major);
	sim_msg(&s, 1, major);
	sim_end(&s, 5, VS_END_STOPPED);
	sim_end(&s, 6, VS_END_STOPPED);
	sim_view(&s, major);
	sim_rounds(&s, 100);
	sim_barrier(&s);
	sim_close_all(&s);
	expect_clean("seven, partition", &s.h);
	assert_int_equal(s.h.m[0].ndels, 105000 + 3 + 500);
	vs_history_free(&s.h);
}

/* The simulator stops after so many steps: running is an end then. */
static void test_good_truncated(void **state)
{
	(void)state;
	struct sim s;

	sim_init(&s, 4);
	sim_rounds(&s, 10);
	sim_view(&s, 0xf);
	sim_rounds(&s, 3);
	sim_send_only(&s, 2); /* in flight when the run was cut */
	for (uint32_t m = 0; m < 4; m++)
		assert_int_equal(vs_add_end(&s.h, m, VS_END_RUNNING), 0);
	s.h.truncated = true;
	expect_clean("truncated", &s.h);
	s.h.truncated = false;
	expect("running, not truncated", &s.h, VS_ENDS, 0);
	vs_history_free(&s.h);
}

/* Planted faults, one per property. */

static void test_bad_same_sequence(void **state)
{
	(void)state;
	struct sim s;

	/* Member 2 delivered two messages of epoch 1 the other way round. */
	build_basic(&s, 0);
	struct vs_deliver *a = find_del(&s.h, 2, 1, 4);
	struct vs_deliver *b = a + 1, t = *a;

	a->sender = b->sender, a->mseq = b->mseq;
	a->len = b->len, a->hash = b->hash;
	b->sender = t.sender, b->mseq = t.mseq;
	b->len = t.len, b->hash = t.hash;
	expect("swapped at a survivor", &s.h, VS_SAME_SEQUENCE,
	       P(VS_POSITIONS));
	expect_line(&s.h, VS_SAME_SEQUENCE,
		    "epoch 1: members 0 and 2 differ at position 111: 0 "
		    "delivered (sender 0, #23), 2 delivered (sender 1, #23)");
	vs_history_free(&s.h);

	/* A crashed member delivered one more than the survivors. */
	sim_init(&s, 3);
	sim_rounds(&s, 3);
	sim_deliver(&s, 2, s.next_q[2]++, BIT(2));
	sim_end(&s, 2, VS_END_CRASHED);
	sim_view(&s, 0x3);
	sim_rounds(&s, 2);
	sim_close_all(&s);
	expect("crashed past the survivors", &s.h, VS_SAME_SEQUENCE, 0);
	expect_line(&s.h, VS_SAME_SEQUENCE,
		    "member 2 (crashed) delivered "
		    "past the survivors: position 9");
	vs_history_free(&s.h);

	/* A survivor short of the others' last message of epoch 0. */
	sim_init(&s, 3);
	sim_rounds(&s, 3);
	sim_msg(&s, 0, 0x3);
	sim_view(&s, 0x7);
	s.h.m[2].views[1].start--; /* it counts what it delivered */
	sim_close_all(&s);
	expect("survivor short", &s.h, VS_SAME_SEQUENCE,
	       P(VS_POSITIONS) | P(VS_LIVE_SENDER));
	expect_line(&s.h, VS_SAME_SEQUENCE,
		    "epoch 0: survivors 0 and 2 delivered 10 and 9 messages: "
		    "2 lacks position 9 (sender 0, #3)");
	vs_history_free(&s.h);
}

static void test_bad_no_duplicate(void **state)
{
	(void)state;
	struct sim s;

	build_basic(&s, B_DUPLICATE);
	/* A duplicate breaks FIFO's +1 step too. */
	expect("delivered twice", &s.h, VS_NO_DUPLICATE, P(VS_FIFO));
	expect_line(&s.h, VS_NO_DUPLICATE,
		    "member 0 delivered (sender 2, #30) 2 times");
	vs_history_free(&s.h);
}

static void test_bad_fifo(void **state)
{
	(void)state;
	struct sim s;

	/* Every member skips the same mseq of sender 2: all agree, but
	 * each sees a gap. */
	build_basic(&s, B_SKIP);
	expect("gap", &s.h, VS_FIFO, 0);
	expect_line(&s.h, VS_FIFO,
		    "member 0: sender 2's #27 at position 129 "
		    "follows #25 (expected #26)");
	vs_history_free(&s.h);
}

static void test_bad_live_sender(void **state)
{
	(void)state;
	struct sim s;

	build_basic(&s, B_LOST_SEND);
	expect("lost send", &s.h, VS_LIVE_SENDER, 0);
	expect_line(&s.h, VS_LIVE_SENDER,
		    "sender 0's #57, sent in epoch 3, "
		    "was never delivered at member 0");
	vs_history_free(&s.h);

	/* A leaver's message of the view it left in must reach the others
	 * (here it reaches nobody; the leaver itself is not owed it). */
	sim_init(&s, 3);
	sim_rounds(&s, 2);
	sim_send_only(&s, 1);
	sim_end(&s, 1, VS_END_CLOSED);
	sim_view(&s, BIT(0) | BIT(2));
	sim_rounds(&s, 2);
	sim_close_all(&s);
	expect("leaver's send lost", &s.h, VS_LIVE_SENDER, 0);
	struct vs_report r;

	vs_report_init(&r, 10);
	assert_int_equal(vs_check(&s.h, &r), 2); /* at 0 and 2, not 1 */
	vs_report_free(&r);
	vs_history_free(&s.h);

	/* A message sent again in epoch 1 is owed to every member that
	 * lived past epoch 1: here member 2 stays to the end without it. */
	sim_resent_at_0(&s, sim_resend_setup(&s));
	sim_view(&s, BIT(0) | BIT(2));
	s.h.m[2].views[2].start--; /* it counts what it delivered */
	sim_close_all(&s);
	expect("resend lost at a survivor", &s.h, VS_LIVE_SENDER,
	       P(VS_SAME_SEQUENCE) | P(VS_POSITIONS));
	expect_line(&s.h, VS_LIVE_SENDER,
		    "sender 0's #4, sent in epoch 0 and delivered from epoch "
		    "1, was never delivered at member 2");
	vs_history_free(&s.h);
}

static void test_bad_dead_sender(void **state)
{
	(void)state;
	struct sim s;

	/* Member 3 lacks the crashed member's last message: its epoch 0
	 * differs too, and its count of positions is one short after. */
	build_basic(&s, B_DEAD_PREFIX);
	expect("dead prefix differs", &s.h, VS_DEAD_SENDER,
	       P(VS_SAME_SEQUENCE) | P(VS_POSITIONS));
	expect_line(&s.h, VS_DEAD_SENDER,
		    "sender 4 (crashed in epoch 0): members 0 and 3 hold "
		    "different prefixes of it: 0 up to #20, 3 up to #19");
	vs_history_free(&s.h);
}

/* Three members deliver five rounds in epoch 0; 3 joins in epoch 1,
 * where member 2 sends `more` messages (delivered by 0, 1 and 3; the last
 * one by `last_to`) and crashes; epoch 2 of {0, 1, 3} delivers a round
 * and everyone closes. The joiner holds 2's messages from epoch 1 on:
 * what came before came with its state. */
static void build_join_then_crash(struct sim *s, unsigned more,
				  uint64_t last_to)
{
	sim_init(s, 3);
	sim_rounds(s, 5);
	sim_view(s, BIT(0) | BIT(1) | BIT(2) | BIT(3));
	for (unsigned i = 0; i < more; i++)
		sim_msg(s, 2, i + 1 < more ? BIT(0) | BIT(1) | BIT(3) : last_to);
	sim_end(s, 2, VS_END_CRASHED);
	sim_view(s, BIT(0) | BIT(1) | BIT(3));
	sim_rounds(s, 1);
	sim_close_all(s);
}

static void test_good_join_then_crash(void **state)
{
	(void)state;
	struct sim s;

	/* Nothing of member 2 in epoch 1: the joiner holds none of it,
	 * members 0 and 1 hold #0..#4 from epoch 0. */
	build_join_then_crash(&s, 0, 0);
	expect_clean("a joiner outlives a sender it never heard", &s.h);
	vs_history_free(&s.h);
	/* Two more in epoch 1, delivered by all three. */
	build_join_then_crash(&s, 2, BIT(0) | BIT(1) | BIT(3));
	expect_clean("a joiner outlives a sender", &s.h);
	vs_history_free(&s.h);
}

static void test_bad_dead_sender_joiner(void **state)
{
	(void)state;
	struct sim s;

	/* The joiner misses 2's last message of epoch 1. */
	build_join_then_crash(&s, 2, BIT(0) | BIT(1));
	expect("a joiner's prefix differs", &s.h, VS_DEAD_SENDER,
	       P(VS_SAME_SEQUENCE) | P(VS_POSITIONS));
	expect_line(&s.h, VS_DEAD_SENDER,
		    "sender 2 (crashed in epoch 1): members 0 and 3 hold "
		    "different prefixes of it: 0 up to #6, 3 up to #5 (of "
		    "what it delivered from epoch 1 on)");
	vs_history_free(&s.h);
}

static void test_bad_views(void **state)
{
	(void)state;
	struct sim s;

	/* Member 2 installed epoch 1 with a member the others left out. */
	build_basic(&s, 0);
	s.h.m[2].views[1].ids |= BIT(6);
	expect("member lists differ", &s.h, VS_VIEWS, 0);
	expect_line(&s.h, VS_VIEWS,
		    "epoch 1: member 0 installed {0,1,2,3}, "
		    "member 2 installed {0,1,2,3,6}");
	vs_history_free(&s.h);

	/* Member 3 went back to epoch 1 instead of installing epoch 2. */
	build_basic(&s, 0);
	s.h.m[3].views[2].epoch = 1;
	expect("epoch back", &s.h, VS_VIEWS, P(VS_POSITIONS));
	expect_line(&s.h, VS_VIEWS,
		    "member 3 installed epoch 1 after epoch 1: epochs must "
		    "increase");
	vs_history_free(&s.h);

	/* The joiner installed a view that leaves it out. */
	build_basic(&s, 0);
	s.h.m[5].views[0].ids &= ~BIT(5);
	expect("not in its view", &s.h, VS_VIEWS, 0);
	expect_line(&s.h, VS_VIEWS,
		    "member 5 installed epoch 2, whose "
		    "members {0,1,2,3} leave it out");
	vs_history_free(&s.h);
}

static void test_bad_positions(void **state)
{
	(void)state;
	struct sim s;

	/* The joiner counts one too many from its state transfer. */
	build_basic(&s, 0);
	for (size_t i = 0; i < s.h.m[5].nviews; i++)
		s.h.m[5].views[i].start++;
	for (size_t i = 0; i < s.h.m[5].ndels; i++)
		s.h.m[5].dels[i].pos++;
	expect("joiner off by one", &s.h, VS_POSITIONS, 0);
	expect_line(&s.h, VS_POSITIONS,
		    "epoch 2 starts at position 147 at member 0 and at 148 at "
		    "member 5");
	vs_history_free(&s.h);

	/* One member skips a position number inside a view. */
	build_basic(&s, 0);
	struct vs_member *m2 = &s.h.m[2];

	for (size_t i = 130; i < m2->ndels && m2->dels[i].epoch == 1; i++)
		m2->dels[i].pos++;
	expect("position gap", &s.h, VS_POSITIONS, 0);
	vs_history_free(&s.h);
}

static void test_bad_ends(void **state)
{
	(void)state;
	struct sim s;

	build_basic(&s, 0);
	s.h.m[2].nends = 0;
	s.h.m[2].end = VS_END_NONE;
	expect("no END", &s.h, VS_ENDS, 0);
	expect_line(&s.h, VS_ENDS,
		    "member 2's log ends without END: it never finished");
	vs_history_free(&s.h);

	/* Two ENDs, and records after the first. */
	build_basic(&s, 0);
	assert_int_equal(vs_add_barrier(&s.h, 3, 3, 4), 0);
	assert_int_equal(vs_add_end(&s.h, 3, VS_END_CLOSED), 0);
	expect("after END", &s.h, VS_ENDS, P(VS_BARRIERS));
	vs_history_free(&s.h);
}

static void test_bad_barriers(void **state)
{
	(void)state;
	struct sim s;

	/* Member 2 closed one barrier short of 0 and 3. */
	build_basic(&s, 0);
	s.h.m[2].nbars--;
	expect("barrier count", &s.h, VS_BARRIERS, 0);
	expect_line(&s.h, VS_BARRIERS,
		    "members 0 and 2, both in epochs 0..3 and closed, passed "
		    "3 and 2 barriers");
	vs_history_free(&s.h);

	/* A count that jumps. */
	build_basic(&s, 0);
	s.h.m[5].bars[1].k = 3;
	expect("barrier jump", &s.h, VS_BARRIERS, 0);
	vs_history_free(&s.h);
}

static void test_bad_damaged(void **state)
{
	(void)state;
	struct sim s;

	build_basic(&s, 0);
	find_del(&s.h, 3, 2, 7)->hash ^= 1;
	expect("damaged", &s.h, VS_DAMAGED, 0);
	vs_history_free(&s.h);

	build_basic(&s, 0);
	find_del(&s.h, 5, 3, 0)->len++;
	expect("length differs", &s.h, VS_DAMAGED, 0);
	vs_history_free(&s.h);
}

static void test_bad_torn(void **state)
{
	(void)state;
	struct sim s;
	struct vs_report r;

	build_basic(&s, 0);
	assert_int_equal(vs_history_torn(&s.h, 2, "m2.log:260"), 0);
	expect("cut record, no crash", &s.h, VS_LOG, 0);
	vs_history_free(&s.h);

	/* From the victim, it is only a note. */
	build_basic(&s, 0);
	assert_int_equal(vs_history_torn(&s.h, 4, "m4.log:101"), 0);
	vs_report_init(&r, 10);
	assert_int_equal(vs_check(&s.h, &r), 0);
	assert_int_equal(r.nnotes, 1);
	assert_non_null(strstr(r.notes[0], "m4.log:101"));
	vs_report_free(&r);
	vs_history_free(&s.h);
}

/* The log format. */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 20);

	assert_non_null(f);
	assert_non_null(buf);
	size_t n = fread(buf, 1, (1 << 20) - 1, f);

	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_log_writer(void **state)
{
	(void)state;
	char path[128];
	struct squall_error err;
	const uint32_t ids[] = {0, 1, 3};

	snprintf(path, sizeof(path), "%s/w.log", dir);
	struct vs_log *l = vs_log_open(path, 1, &err);

	assert_non_null(l);
	assert_int_equal(vs_log_view(l, 2, ids, 3, 57), 0);
	assert_int_equal(vs_log_send(l, 2, 12), 0);
	assert_int_equal(
	    vs_log_deliver(l, 2, 57, 0, 12, 64, 0x0123456789abcdefULL), 0);
	assert_int_equal(vs_log_barrier(l, 2, 3), 0);
	assert_int_equal(vs_log_end(l, VS_END_CLOSED), 0);
	vs_log_close(l);
	char *text = slurp(path);

	assert_string_equal(
	    text, "V m=1 e=2 start=57 ids=0,1,3\n"
		  "S m=1 e=2 q=12\n"
		  "D m=1 e=2 p=57 s=0 q=12 len=64 h=0123456789abcdef\n"
		  "B m=1 e=2 k=3\n"
		  "E m=1 how=closed\n");
	free(text);

	struct vs_history h;

	vs_history_init(&h);
	assert_int_equal(vs_parse_file(&h, path, &err), 0);
	assert_int_equal(h.m[1].nviews, 1);
	assert_int_equal(h.m[1].views[0].ids, BIT(0) | BIT(1) | BIT(3));
	assert_int_equal(h.m[1].views[0].start, 57);
	assert_int_equal(h.m[1].dels[0].hash, 0x0123456789abcdefULL);
	assert_int_equal(h.m[1].dels[0].len, 64);
	assert_int_equal(h.m[1].bars[0].k, 3);
	assert_int_equal(h.m[1].end, VS_END_CLOSED);
	vs_history_free(&h);
	unlink(path);

	const uint32_t too_big[] = {0, 64};

	l = vs_log_open(path, 0, &err);
	assert_non_null(l);
	assert_int_equal(vs_log_view(l, 0, too_big, 2, 0), -EINVAL);
	vs_log_close(l);
	unlink(path);
	assert_null(vs_log_open(path, 64, &err));
	assert_int_equal(err.code, -EINVAL);
}

static void dump_all(const struct vs_history *h, uint64_t members)
{
	struct squall_error err;
	char path[128];

	for (uint32_t m = 0; m < VS_MAX_MEMBERS; m++) {
		if (!(members & BIT(m)))
			continue;
		snprintf(path, sizeof(path), "%s/m%u.log", dir, m);
		if (vs_log_dump(h, m, path, &err))
			fail_msg("%s", err.msg);
	}
}

static void unlink_all(uint64_t members)
{
	char path[128];

	for (uint32_t m = 0; m < VS_MAX_MEMBERS; m++) {
		if (!(members & BIT(m)))
			continue;
		snprintf(path, sizeof(path), "%s/m%u.log", dir, m);
		unlink(path);
	}
}

/* A history written as logs and read back is the same history. */
static void test_log_roundtrip(void **state)
{
	(void)state;
	struct sim s;
	struct vs_history h;
	struct squall_error err;
	char path[128];

	build_basic(&s, B_LATE_LEAVE);
	dump_all(&s.h, 0x3f);
	vs_history_init(&h);
	for (uint32_t m = 0; m < 6; m++) {
		snprintf(path, sizeof(path), "%s/m%u.log", dir, m);
		if (vs_parse_file(&h, path, &err))
			fail_msg("%s", err.msg);
	}
	for (uint32_t m = 0; m < VS_MAX_MEMBERS; m++) {
		const struct vs_member *a = &s.h.m[m], *b = &h.m[m];

		assert_int_equal(a->seen, b->seen);
		assert_int_equal(a->end, b->end);
		assert_int_equal(a->nseq, b->nseq);
		assert_int_equal(a->nviews, b->nviews);
		assert_int_equal(a->nsends, b->nsends);
		assert_int_equal(a->ndels, b->ndels);
		assert_int_equal(a->nbars, b->nbars);
		assert_memory_equal(a->views, b->views,
				    a->nviews * sizeof(*a->views));
		assert_memory_equal(a->sends, b->sends,
				    a->nsends * sizeof(*a->sends));
		assert_memory_equal(a->bars, b->bars,
				    a->nbars * sizeof(*a->bars));
		for (size_t i = 0; i < a->ndels; i++) {
			assert_int_equal(a->dels[i].seq, b->dels[i].seq);
			assert_int_equal(a->dels[i].pos, b->dels[i].pos);
			assert_int_equal(a->dels[i].sender, b->dels[i].sender);
			assert_int_equal(a->dels[i].mseq, b->dels[i].mseq);
			assert_int_equal(a->dels[i].hash, b->dels[i].hash);
		}
	}
	expect_clean("read back", &h);
	vs_history_free(&h);
	vs_history_free(&s.h);
	unlink_all(0x3f);
}

/* Each malformed line, after one good record, is refused at line 2. */
static void test_parse_malformed(void **state)
{
	(void)state;
	static const struct {
		const char *line, *why;
	} bad[] = {
	    {"X m=1 e=0 q=1", "not a record"},
	    {"", "not a record"},
	    {"S m=1  e=0 q=1", "expected e=EPOCH"},
	    {"S m=64 e=0 q=1", "member id above 63"},
	    {"S m=1 q=1 e=0", "expected e=EPOCH"},
	    {"S m=1 e=0", "expected q=MSEQ"},
	    {"S m=1 e=-1 q=1", "expected e=EPOCH"},
	    {"S m=1 e=0 q=18446744073709551616", "expected q=MSEQ"},
	    {"S m=1 e=0 q=1x", "expected q=MSEQ"},
	    {"S m=1 e=0 q=1 extra", "unexpected text"},
	    {"S m=1 e=0 q=1 ", "unexpected text"},
	    {"V m=1 e=0 start=0 ids=", "expected a member id"},
	    {"V m=1 e=0 start=0 ids=0,,1", "expected a member id"},
	    {"V m=1 e=0 start=0 ids=0,1,1", "listed twice"},
	    {"V m=1 e=0 start=0 ids=0,64", "above 63 in ids"},
	    {"V m=1 e=0 ids=0,1", "expected start=POSITION"},
	    {"D m=1 e=0 p=3 s=0 q=3 len=64 h=0123", "16 hex digits"},
	    {"D m=1 e=0 p=3 s=0 q=3 len=64 h=0123456789abcdefa",
	     "16 hex digits"},
	    {"D m=1 e=0 p=3 s=0 q=3 len=64", "expected h=HASH"},
	    {"D m=1 e=0 p=3 s=99 q=3 len=64 h=0123456789abcdef",
	     "sender id above 63"},
	    {"B m=1 e=0", "expected k=COUNT"},
	    {"E m=1 how=gone", "expected how="},
	    {"E m=1 how=closedx", "expected how="},
	    {"E m=1", "expected how="},
	};
	char path[128], text[256], want[256];
	struct squall_error err;
	struct vs_history h;

	snprintf(path, sizeof(path), "%s/bad.log", dir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "S m=1 e=0 q=0\n%s\n",
			 bad[i].line);
		write_text(path, text);
		vs_history_init(&h);
		squall_error_clear(&err);
		assert_int_equal(vs_parse_file(&h, path, &err), -EINVAL);
		snprintf(want, sizeof(want), "%s:2: ", path);
		if (strncmp(err.msg, want, strlen(want)) ||
		    !strstr(err.msg, bad[i].why))
			fail_msg("\"%s\": got \"%s\", want \"%s...%s\"",
				 bad[i].line, err.msg, want, bad[i].why);
		vs_history_free(&h);
	}
	/* A NUL byte inside a record. */
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fwrite("S m=1 e=0 q=0\nS m=1\0 e=0 q=1\n", 1, 30, f);
	fclose(f);
	vs_history_init(&h);
	assert_int_equal(vs_parse_file(&h, path, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "NUL byte"));
	vs_history_free(&h);

	/* Comments are fine; a missing file names itself. */
	write_text(path, "# member 1, run 7\nS m=1 e=0 q=0\n");
	vs_history_init(&h);
	assert_int_equal(vs_parse_file(&h, path, &err), 0);
	assert_int_equal(h.m[1].nsends, 1);
	vs_history_free(&h);
	unlink(path);
	vs_history_init(&h);
	assert_int_equal(vs_parse_file(&h, path, &err), -ENOENT);
	assert_non_null(strstr(err.msg, path));
	vs_history_free(&h);
}

/* A last line without newline is a record cut by a kill: accepted from a
 * member that crashed, reported otherwise; a malformed last line that
 * does end in a newline is still an error. */
static void test_parse_torn(void **state)
{
	(void)state;
	struct sim s;
	struct vs_history h;
	struct vs_report r;
	struct squall_error err;
	char path[128], want[160];

	build_basic(&s, B_HARNESS);
	dump_all(&s.h, 0x3f);
	snprintf(path, sizeof(path), "%s/m4.log", dir);
	FILE *f = fopen(path, "a");

	assert_non_null(f);
	fputs("D m=4 e=0 p=100 s=0 q=2", f);
	fclose(f);

	vs_history_init(&h);
	for (uint32_t m = 0; m < 6; m++) {
		snprintf(path, sizeof(path), "%s/m%u.log", dir, m);
		if (vs_parse_file(&h, path, &err))
			fail_msg("%s", err.msg);
	}
	/* The cut record is the line after the victim's last. */
	unsigned long cut = (unsigned long)s.h.m[4].nseq + 1;

	snprintf(want, sizeof(want), "%s/m4.log:%lu", dir, cut);
	assert_string_equal(h.m[4].torn, want);
	assert_int_equal(h.m[4].ndels, 100);
	expect("victim not named", &h, VS_LOG, P(VS_ENDS));
	assert_int_equal(vs_mark_crashed(&h, 4), 0);
	vs_report_init(&r, 10);
	assert_int_equal(vs_check(&h, &r), 0);
	assert_int_equal(r.nnotes, 1);
	assert_non_null(strstr(r.notes[0], want));
	vs_report_free(&r);
	vs_history_free(&h);

	/* The same record, whole but malformed, with its newline. */
	snprintf(path, sizeof(path), "%s/m4.log", dir);
	f = fopen(path, "a");
	assert_non_null(f);
	fputs("\n", f);
	fclose(f);
	vs_history_init(&h);
	assert_int_equal(vs_parse_file(&h, path, &err), -EINVAL);
	snprintf(want, sizeof(want), "m4.log:%lu: ", cut);
	assert_non_null(strstr(err.msg, want));
	vs_history_free(&h);

	/* Cut before its member id: a note, no member. */
	write_text(path, "V m");
	vs_history_init(&h);
	assert_int_equal(vs_parse_file(&h, path, &err), 0);
	assert_int_equal(h.nnotes, 1);
	assert_false(h.m[4].seen);
	vs_history_free(&h);

	vs_history_free(&s.h);
	unlink_all(0x3f);
}

/* The vs_check program (its path from meson) on files. */

static int run_cli(char *const argv[], char **out)
{
	const char *exe = getenv("VS_CHECK");
	char opath[128];
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status;

	assert_non_null(exe);
	snprintf(opath, sizeof(opath), "%s/out.txt", dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, opath,
					 O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	assert_int_equal(posix_spawn(&pid, exe, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	*out = slurp(opath);
	unlink(opath);
	printf("vs_check exit %d:\n%s", WEXITSTATUS(status), *out);
	return WEXITSTATUS(status);
}

static void test_cli(void **state)
{
	(void)state;
	struct sim s;
	char p[6][128], bad[128], last[128], *out;

	build_basic(&s, B_HARNESS | B_LATE_LEAVE);
	dump_all(&s.h, 0x3f);
	for (int m = 0; m < 6; m++)
		snprintf(p[m], sizeof(p[m]), "%s/m%d.log", dir, m);
	size_t dels = 0;

	for (int m = 0; m < 6; m++)
		dels += s.h.m[m].ndels;
	snprintf(last, sizeof(last),
		 "VSCHECK members=6 views=4 deliveries=%zu violations=0\n",
		 dels);

	char *good[] = {"vs_check", "--crashed", "4",  p[0], p[1],
			p[2],	    p[3],	 p[4], p[5], NULL};
	assert_int_equal(run_cli(good, &out), 0);
	assert_string_equal(out, last);
	free(out);

	char *unnamed[] = {"vs_check", p[0], p[1], p[2],
			   p[3],       p[4], p[5], NULL};
	assert_int_equal(run_cli(unnamed, &out), 1);
	assert_non_null(strstr(out, "ends: member 4's log ends without END: "
				    "it never finished\n"));
	assert_non_null(strstr(out, "violations=1\n"));
	free(out);

	/* One damaged record in member 2's log. */
	find_del(&s.h, 2, 3, 5)->hash ^= 0x10;
	dump_all(&s.h, BIT(2));
	assert_int_equal(run_cli(good, &out), 1);
	assert_non_null(strstr(out, "damaged: (sender 2, #47) is damaged"));
	free(out);

	snprintf(bad, sizeof(bad), "%s/bad.log", dir);
	write_text(bad, "S m=1 e=0 q=0\nS m=1 e=0\n");
	char *malformed[] = {"vs_check", p[0], bad, NULL};
	assert_int_equal(run_cli(malformed, &out), 2);
	assert_non_null(strstr(out, "bad.log:2: expected q=MSEQ"));
	free(out);
	unlink(bad);

	char *none[] = {"vs_check", NULL};
	assert_int_equal(run_cli(none, &out), 2);
	free(out);
	char *badid[] = {"vs_check", "--crashed", "64", p[0], NULL};
	assert_int_equal(run_cli(badid, &out), 2);
	free(out);
	char *badopt[] = {"vs_check", "--bogus", p[0], NULL};
	assert_int_equal(run_cli(badopt, &out), 2);
	free(out);

	vs_history_free(&s.h);
	unlink_all(0x3f);
}

static int setup(void **state)
{
	(void)state;
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/squall-test-vsync-XXXXXX",
		 tmp && strlen(tmp) < 32 ? tmp : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_three),
	    cmocka_unit_test(test_good_crash_join_leave),
	    cmocka_unit_test(test_good_resend_leave),
	    cmocka_unit_test(test_good_join_then_crash),
	    cmocka_unit_test(test_good_seven_partition),
	    cmocka_unit_test(test_good_truncated),
	    cmocka_unit_test(test_bad_same_sequence),
	    cmocka_unit_test(test_bad_no_duplicate),
	    cmocka_unit_test(test_bad_fifo),
	    cmocka_unit_test(test_bad_live_sender),
	    cmocka_unit_test(test_bad_dead_sender),
	    cmocka_unit_test(test_bad_dead_sender_joiner),
	    cmocka_unit_test(test_bad_views),
	    cmocka_unit_test(test_bad_positions),
	    cmocka_unit_test(test_bad_ends),
	    cmocka_unit_test(test_bad_barriers),
	    cmocka_unit_test(test_bad_damaged),
	    cmocka_unit_test(test_bad_torn),
	    cmocka_unit_test(test_log_writer),
	    cmocka_unit_test(test_log_roundtrip),
	    cmocka_unit_test(test_parse_malformed),
	    cmocka_unit_test(test_parse_torn),
	    cmocka_unit_test(test_cli),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
