/*
 * test_sst_predicates.c - the SST predicate engine's scheduling logic
 * (one-shot, recurrent, transition; adding and removing from inside
 * triggers and from other threads) and the idle back-off state machine.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sst/predicates.h"

/* A test "table": predicates read a value the test sets. */
struct probe {
	struct sst_preds *e;
	volatile bool value;
	int evals;
	int fired;
	sst_pred_id id;        /* own id, for self-removal */
	sst_pred_id victim;    /* another id to remove from the trigger */
	int victim_rc;
	struct probe *child;   /* registered from the trigger */
};

static bool pred_value(struct sst *t, void *arg)
{
	struct probe *p = arg;

	assert_null(t);
	p->evals++;
	return p->value;
}

static void trig_count(struct sst *t, void *arg)
{
	struct probe *p = arg;

	(void)t;
	p->fired++;
}

static struct sst_preds *engine(void)
{
	static struct sst_preds e;

	assert_int_equal(sst_preds_init(&e, NULL), 0);
	return &e;
}

static void test_oneshot_fires_once(void **state)
{
	(void)state;
	struct sst_preds *e = engine();
	struct probe p = { .value = false };
	sst_pred_id id;

	assert_int_equal(sst_preds_add(e, SST_PRED_ONESHOT, pred_value,
				       trig_count, &p, &id), 0);
	assert_int_equal(sst_preds_count(e), 1);
	assert_int_equal(sst_preds_eval(e), 0);
	assert_int_equal(sst_preds_eval(e), 0);
	assert_int_equal(p.fired, 0);
	p.value = true;
	assert_int_equal(sst_preds_eval(e), 1);
	assert_int_equal(p.fired, 1);
	for (int i = 0; i < 5; i++)
		assert_int_equal(sst_preds_eval(e), 0);
	assert_int_equal(p.fired, 1);
	assert_int_equal(p.evals, 3);   /* never evaluated after firing */
	assert_int_equal(sst_preds_count(e), 0);
	assert_int_equal(sst_preds_remove(e, id), -ENOENT);
	sst_preds_destroy(e);
}

static void test_recurrent_until_removed(void **state)
{
	(void)state;
	struct sst_preds *e = engine();
	struct probe p = { .value = true };
	sst_pred_id id;

	assert_int_equal(sst_preds_add(e, SST_PRED_RECURRENT, pred_value,
				       trig_count, &p, &id), 0);
	for (int i = 0; i < 10; i++)
		sst_preds_eval(e);
	assert_int_equal(p.fired, 10);
	p.value = false;
	sst_preds_eval(e);
	assert_int_equal(p.fired, 10);
	p.value = true;
	sst_preds_eval(e);
	assert_int_equal(p.fired, 11);
	assert_int_equal(sst_preds_remove(e, id), 0);
	assert_int_equal(sst_preds_remove(e, id), -ENOENT);
	for (int i = 0; i < 10; i++)
		assert_int_equal(sst_preds_eval(e), 0);
	assert_int_equal(p.fired, 11);
	assert_int_equal(p.evals, 12);
	sst_preds_destroy(e);
}

static void test_transition_edges(void **state)
{
	(void)state;
	struct sst_preds *e = engine();
	struct probe p = { .value = true };
	const bool seq[] = { true, true, false, false, true, false, true, true };
	const int expect[] = { 1, 1, 1, 1, 2, 2, 3, 3 };

	assert_int_equal(sst_preds_add(e, SST_PRED_TRANSITION, pred_value,
				       trig_count, &p, NULL), 0);
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		p.value = seq[i];
		sst_preds_eval(e);
		assert_int_equal(p.fired, expect[i]);
	}
	assert_int_equal(sst_preds_count(e), 1);
	sst_preds_destroy(e);
}

static void trig_remove_self(struct sst *t, void *arg)
{
	struct probe *p = arg;

	(void)t;
	p->fired++;
	if (p->fired == 3)
		assert_int_equal(sst_preds_remove(p->e, p->id), 0);
}

static void test_remove_self_in_trigger(void **state)
{
	(void)state;
	struct sst_preds *e = engine();
	struct probe p = { .e = e, .value = true };

	assert_int_equal(sst_preds_add(e, SST_PRED_RECURRENT, pred_value,
				       trig_remove_self, &p, &p.id), 0);
	for (int i = 0; i < 10; i++)
		sst_preds_eval(e);
	assert_int_equal(p.fired, 3);
	assert_int_equal(sst_preds_count(e), 0);
	sst_preds_destroy(e);
}

static void trig_remove_other(struct sst *t, void *arg)
{
	struct probe *p = arg;

	(void)t;
	p->fired++;
	p->victim_rc = sst_preds_remove(p->e, p->victim);
}

/* A trigger removes a predicate that comes later in the same pass: that one
 * is not evaluated in this pass nor after. One that came earlier in the
 * pass has been evaluated already and is gone from the next pass on. */
static void test_remove_other_in_trigger(void **state)
{
	(void)state;
	struct sst_preds *e = engine();
	struct probe before = { .value = true };
	struct probe remover = { .e = e, .value = true };
	struct probe after = { .value = true };
	sst_pred_id idb, ida;

	assert_int_equal(sst_preds_add(e, SST_PRED_RECURRENT, pred_value,
				       trig_count, &before, &idb), 0);
	assert_int_equal(sst_preds_add(e, SST_PRED_ONESHOT, pred_value,
				       trig_remove_other, &remover, NULL), 0);
	assert_int_equal(sst_preds_add(e, SST_PRED_RECURRENT, pred_value,
				       trig_count, &after, &ida), 0);
	remover.victim = ida;
	assert_int_equal(sst_preds_eval(e), 2);
	assert_int_equal(remover.victim_rc, 0);
	assert_int_equal(after.evals, 0);
	assert_int_equal(after.fired, 0);
	assert_int_equal(before.fired, 1);
	assert_int_equal(sst_preds_count(e), 1);
	sst_preds_eval(e);
	assert_int_equal(before.fired, 2);
	assert_int_equal(after.evals, 0);
	sst_preds_destroy(e);
}

static void trig_add_child(struct sst *t, void *arg)
{
	struct probe *p = arg;

	(void)t;
	p->fired++;
	assert_int_equal(sst_preds_add(p->e, SST_PRED_RECURRENT, pred_value,
				       trig_count, p->child, NULL), 0);
}

/* A predicate added from a trigger joins at the next pass. */
static void test_add_in_trigger(void **state)
{
	(void)state;
	struct sst_preds *e = engine();
	struct probe child = { .value = true };
	struct probe parent = { .e = e, .value = true, .child = &child };

	assert_int_equal(sst_preds_add(e, SST_PRED_ONESHOT, pred_value,
				       trig_add_child, &parent, NULL), 0);
	assert_int_equal(sst_preds_eval(e), 1);
	assert_int_equal(child.evals, 0);
	assert_int_equal(sst_preds_count(e), 1);
	assert_int_equal(sst_preds_eval(e), 1);
	assert_int_equal(child.fired, 1);
	sst_preds_destroy(e);
}

/* Removing before any pass (from the incoming list) and bad arguments. */
static void test_remove_before_pass_and_errors(void **state)
{
	(void)state;
	struct sst_preds *e = engine();
	struct probe p = { .value = true }, q = { .value = true };
	sst_pred_id a, b;

	assert_int_equal(sst_preds_add(e, SST_PRED_RECURRENT, pred_value,
				       trig_count, &p, &a), 0);
	assert_int_equal(sst_preds_add(e, SST_PRED_RECURRENT, pred_value,
				       trig_count, &q, &b), 0);
	assert_true(a != b);
	assert_int_equal(sst_preds_remove(e, a), 0);
	assert_int_equal(sst_preds_eval(e), 1);
	assert_int_equal(p.evals, 0);
	assert_int_equal(q.fired, 1);
	assert_int_equal(sst_preds_remove(e, 12345), -ENOENT);
	assert_int_equal(sst_preds_add(e, SST_PRED_RECURRENT, NULL, trig_count,
				       &p, NULL), -EINVAL);
	assert_int_equal(sst_preds_add(e, (enum sst_pred_kind)0, pred_value,
				       trig_count, &p, NULL), -EINVAL);
	/* the tail must still be right after removals: add and evaluate */
	assert_int_equal(sst_preds_remove(e, b), 0);
	sst_preds_eval(e);
	assert_int_equal(sst_preds_add(e, SST_PRED_RECURRENT, pred_value,
				       trig_count, &p, NULL), 0);
	sst_preds_eval(e);
	assert_int_equal(p.fired, 1);
	sst_preds_destroy(e);
}

/* Removal from another thread while the trigger runs waits for it. */
struct slow {
	struct sst_preds *e;
	volatile int entered;
	volatile int left;
	sst_pred_id id;
};

static bool pred_true(struct sst *t, void *arg)
{
	(void)t;
	(void)arg;
	return true;
}

static void trig_slow(struct sst *t, void *arg)
{
	struct slow *s = arg;

	(void)t;
	__atomic_store_n(&s->entered, 1, __ATOMIC_SEQ_CST);
	usleep(100000);
	__atomic_store_n(&s->left, 1, __ATOMIC_SEQ_CST);
}

static void *eval_thread(void *arg)
{
	struct slow *s = arg;

	sst_preds_eval(s->e);
	return NULL;
}

static void test_remove_waits_for_running_trigger(void **state)
{
	(void)state;
	struct sst_preds *e = engine();
	struct slow s = { .e = e };
	pthread_t th;

	assert_int_equal(sst_preds_add(e, SST_PRED_RECURRENT, pred_true,
				       trig_slow, &s, &s.id), 0);
	assert_int_equal(pthread_create(&th, NULL, eval_thread, &s), 0);
	while (!__atomic_load_n(&s.entered, __ATOMIC_SEQ_CST))
		usleep(1000);
	assert_int_equal(sst_preds_remove(e, s.id), 0);
	assert_int_equal(__atomic_load_n(&s.left, __ATOMIC_SEQ_CST), 1);
	pthread_join(th, NULL);
	assert_int_equal(sst_preds_count(e), 0);
	sst_preds_destroy(e);
}

/* Idle policy: spin while work is seen, arm after the window without work
 * and min_polls idle passes, block only if the pass after arming is idle. */
static void test_idle_spins_then_blocks(void **state)
{
	(void)state;
	struct sst_idle s;
	uint64_t t = 1000;

	sst_idle_init(&s, 500, 5000, 3, 1, t);
	/* work keeps it spinning however long */
	for (int i = 0; i < 100; i++) {
		t += 100;
		assert_int_equal(sst_idle_after_pass(&s, true, t), SST_IDLE_SPIN);
	}
	/* idle but not long enough */
	for (int i = 0; i < 4; i++) {
		t += 100;
		assert_int_equal(sst_idle_after_pass(&s, false, t), SST_IDLE_SPIN);
	}
	t += 100;  /* 500 ns since work */
	assert_int_equal(sst_idle_after_pass(&s, false, t), SST_IDLE_ARM);
	assert_int_equal(s.blocks, 0);
	assert_true(sst_idle_needs_clock(&s, false));
	t += 10;
	assert_int_equal(sst_idle_after_pass(&s, false, t), SST_IDLE_BLOCK);
	assert_int_equal(s.blocks, 1);
	sst_idle_woken(&s);
	assert_int_equal(s.state, SST_IDLE_SPIN);
	assert_true(sst_idle_needs_clock(&s, true));
}

/* Policy SPIN: however long without work, never arm nor sleep. */
static void test_idle_policy_spin(void **state)
{
	(void)state;
	struct sst_idle s;
	uint64_t t = 1000;

	sst_idle_init(&s, 500, 5000, 3, 1, t);
	sst_idle_set_policy(&s, SST_IDLE_POLICY_SPIN);
	for (int i = 0; i < 1000; i++) {
		t += 1000000;
		assert_false(sst_idle_needs_clock(&s, false));
		assert_int_equal(sst_idle_after_pass(&s, false, t), SST_IDLE_SPIN);
	}
	assert_int_equal(s.blocks, 0);
}

/* Policy BLOCK: the first pass without work arms, the next sleeps; work
 * in between cancels the sleep; no window, so no clock time is needed. */
static void test_idle_policy_block(void **state)
{
	(void)state;
	struct sst_idle s;

	sst_idle_init(&s, 500, 5000, 3, 1, 1000);
	sst_idle_set_policy(&s, SST_IDLE_POLICY_BLOCK);
	assert_int_equal(sst_idle_after_pass(&s, true, 0), SST_IDLE_SPIN);
	assert_int_equal(sst_idle_after_pass(&s, false, 0), SST_IDLE_ARM);
	assert_int_equal(sst_idle_after_pass(&s, true, 0), SST_IDLE_SPIN);
	assert_int_equal(sst_idle_after_pass(&s, false, 0), SST_IDLE_ARM);
	assert_true(sst_idle_needs_clock(&s, false));
	assert_int_equal(sst_idle_after_pass(&s, false, 1001), SST_IDLE_BLOCK);
	assert_int_equal(s.blocks, 1);
	sst_idle_woken(&s);
	/* woken with work: spin one pass, then straight back to sleep */
	assert_int_equal(sst_idle_after_pass(&s, true, 2000), SST_IDLE_SPIN);
	assert_int_equal(sst_idle_after_pass(&s, false, 2001), SST_IDLE_ARM);
	assert_int_equal(sst_idle_after_pass(&s, false, 2002), SST_IDLE_BLOCK);
	assert_int_equal(s.blocks, 2);
	/* and the window never moved */
	assert_int_equal(s.spin_ns, 500);
}

/* Work seen in the pass after arming cancels the sleep. */
static void test_idle_arm_then_work(void **state)
{
	(void)state;
	struct sst_idle s;

	sst_idle_init(&s, 1, 10, 1, 1, 1);
	assert_int_equal(sst_idle_after_pass(&s, false, 2), SST_IDLE_ARM);
	assert_int_equal(sst_idle_after_pass(&s, true, 3), SST_IDLE_SPIN);
	assert_int_equal(s.blocks, 0);
	assert_int_equal(sst_idle_after_pass(&s, false, 4), SST_IDLE_ARM);
	assert_int_equal(sst_idle_after_pass(&s, false, 5), SST_IDLE_BLOCK);
	assert_int_equal(s.blocks, 1);
}

/* min_polls holds the spin even when the clock has moved far (a member
 * descheduled for a long time must look once more before sleeping). */
static void test_idle_min_polls(void **state)
{
	(void)state;
	struct sst_idle s;

	sst_idle_init(&s, 10, 10, 4, 1, 1);
	assert_int_equal(sst_idle_after_pass(&s, false, 1000), SST_IDLE_SPIN);
	assert_int_equal(sst_idle_after_pass(&s, false, 2000), SST_IDLE_SPIN);
	assert_int_equal(sst_idle_after_pass(&s, false, 3000), SST_IDLE_SPIN);
	assert_int_equal(sst_idle_after_pass(&s, false, 4000), SST_IDLE_ARM);
}

/* Drive the machine to BLOCK at time t (from a fresh window). */
static uint64_t to_block(struct sst_idle *s, uint64_t t)
{
	assert_int_equal(sst_idle_after_pass(s, true, t), SST_IDLE_SPIN);
	while (sst_idle_after_pass(s, false, ++t) != SST_IDLE_ARM)
		;
	assert_int_equal(sst_idle_after_pass(s, false, ++t), SST_IDLE_BLOCK);
	return t;
}

/* Block at time t, sleep for slept and wake to a pass with work (which
 * always spins on); returns the time of that pass. */
static uint64_t wake_with_work(struct sst_idle *s, uint64_t t, uint64_t slept)
{
	t = to_block(s, t) + slept;
	sst_idle_woken(s);
	assert_int_equal(sst_idle_after_pass(s, true, t), SST_IDLE_SPIN);
	return t;
}

/* The window grows to twice a short sleep that ended with work (two
 * members answering each other stop sleeping on every exchange), never
 * past spin_max, never shrinks on a shorter sleep, and halves (down to
 * spin_min) after a sleep longer than spin_max. */
static void test_idle_window_adapts(void **state)
{
	(void)state;
	struct sst_idle s;
	uint64_t t;

	sst_idle_init(&s, 100, 5000, 1, 1, 0);
	t = wake_with_work(&s, 1, 1000); /* slept 1000, work waiting */
	assert_int_equal(s.spin_ns, 2000);
	/* now an idle gap of 1500 does not put it to sleep */
	assert_int_equal(sst_idle_after_pass(&s, false, t + 1500), SST_IDLE_SPIN);
	assert_int_equal(sst_idle_after_pass(&s, true, t + 1600), SST_IDLE_SPIN);

	t = wake_with_work(&s, t + 2000, 4000); /* 2 x 4000 is capped at 5000 */
	assert_int_equal(s.spin_ns, 5000);

	t = wake_with_work(&s, t + 10, 300); /* shorter: the window stays */
	assert_int_equal(s.spin_ns, 5000);

	for (uint64_t want = 2500; want >= 100; want /= 2) {
		t = wake_with_work(&s, t + 10, 6000); /* longer than spin_max: halve */
		assert_int_equal(s.spin_ns, want < 100 ? 100 : want);
		if (want == 156)
			break;
	}
	t = wake_with_work(&s, t + 10, 6000);
	assert_int_equal(s.spin_ns, 100);
}

/* Feed one sample of idle yields, slow of them taking 2 x the slow mark. */
static void yields(struct sst_idle *s, unsigned slow)
{
	for (unsigned i = 0; i < SST_IDLE_YIELD_SAMPLE; i++)
		sst_idle_yielded(s, i < slow ? 2ull * SST_IDLE_YIELD_SLOW_NS :
					       SST_IDLE_YIELD_SLOW_NS / 20);
}

/* Idle yields that come back late (another thread waited for the CPU)
 * keep the window at SST_IDLE_CROWDED_SPINS x spin_min at most while they
 * last: the member sleeps after a short spin instead of spinning through
 * the other thread's time. Once yields come straight back the window
 * adapts up to spin_max again. Other policies ignore yields. */
static void test_idle_crowded_cpu(void **state)
{
	(void)state;
	struct sst_idle s;
	uint64_t t, cap = SST_IDLE_CROWDED_SPINS * 100;

	assert_true(cap < 4000);
	sst_idle_init(&s, 100, 5000, 1, 1, 0);
	assert_true(sst_idle_measures_cpu(&s));
	t = wake_with_work(&s, 1, 2000);
	assert_int_equal(s.spin_ns, 4000);
	/* fewer than a quarter slow: not crowded, the window stays */
	yields(&s, SST_IDLE_YIELD_SAMPLE / 4 - 1);
	assert_false(s.crowded);
	assert_int_equal(s.spin_ns, 4000);
	/* a quarter slow: crowded, the window drops to the cap */
	yields(&s, SST_IDLE_YIELD_SAMPLE / 4);
	assert_true(s.crowded);
	assert_int_equal(s.spin_ns, cap);
	/* an idle gap longer than the cap puts it to sleep now */
	assert_int_equal(sst_idle_after_pass(&s, false, t + cap - 1), SST_IDLE_SPIN);
	assert_int_equal(sst_idle_after_pass(&s, false, t + cap), SST_IDLE_ARM);
	assert_int_equal(sst_idle_after_pass(&s, false, t + cap + 1), SST_IDLE_BLOCK);
	sst_idle_woken(&s);
	/* a sleep that ends with work grows it no further than the cap */
	t += cap + 1 + 1000;
	sst_idle_after_pass(&s, true, t);
	assert_int_equal(s.spin_ns, cap);
	/* half a sample says nothing yet */
	for (unsigned i = 0; i < SST_IDLE_YIELD_SAMPLE / 2; i++)
		sst_idle_yielded(&s, 0);
	assert_true(s.crowded);
	for (unsigned i = 0; i < SST_IDLE_YIELD_SAMPLE / 2; i++)
		sst_idle_yielded(&s, 0);
	assert_false(s.crowded);
	t = wake_with_work(&s, t + 200, 1000);
	assert_int_equal(s.spin_ns, 2000);

	/* spin and block do not time yields */
	sst_idle_init(&s, 100, 5000, 1, 1, 0);
	sst_idle_set_policy(&s, SST_IDLE_POLICY_SPIN);
	assert_false(sst_idle_measures_cpu(&s));
	yields(&s, SST_IDLE_YIELD_SAMPLE);
	assert_false(s.crowded);
	sst_idle_set_policy(&s, SST_IDLE_POLICY_BLOCK);
	assert_false(sst_idle_measures_cpu(&s));
	yields(&s, SST_IDLE_YIELD_SAMPLE);
	assert_false(s.crowded);
}

/* A member whose thread got less than SST_IDLE_SHARE_LOW_PCT of the CPU
 * over the time it wanted one is crowded even when its yields come back
 * fast (a fair scheduler hands a yield back to the thread that ran less):
 * the window drops to the cap and grows no further until a share of
 * SST_IDLE_SHARE_HIGH_PCT or more, or a period in which it hardly wanted
 * the CPU, takes the verdict back; between the marks it stands. The
 * yields' verdict stands on its own. Other policies ignore the share. */
static void test_idle_crowded_share(void **state)
{
	(void)state;
	struct sst_idle s;
	uint64_t t, cap = SST_IDLE_CROWDED_SPINS * 100;
	uint64_t want = SST_IDLE_SHARE_EVERY_NS;
	uint64_t low = want * SST_IDLE_SHARE_LOW_PCT / 100;
	uint64_t high = want * SST_IDLE_SHARE_HIGH_PCT / 100;

	sst_idle_init(&s, 100, 5000, 1, 1, 0);
	t = wake_with_work(&s, 1, 2000);
	assert_int_equal(s.spin_ns, 4000);
	/* at the mark: not crowded */
	sst_idle_cpu_share(&s, want, low);
	assert_false(s.crowded);
	assert_int_equal(s.spin_ns, 4000);
	/* just under it: crowded, the window drops to the cap */
	sst_idle_cpu_share(&s, want, low - 1);
	assert_true(s.crowded);
	assert_int_equal(s.spin_ns, cap);
	t = wake_with_work(&s, t + 10, 1000);
	assert_int_equal(s.spin_ns, cap);
	/* a whole sample of fast yields does not undo the share's verdict,
	 * nor does a share between the marks */
	yields(&s, 0);
	assert_true(s.crowded);
	sst_idle_cpu_share(&s, want, high - 1);
	assert_true(s.crowded);
	/* the high mark takes it back; between the marks it stays back */
	sst_idle_cpu_share(&s, want, high);
	assert_false(s.crowded);
	sst_idle_cpu_share(&s, want, low);
	assert_false(s.crowded);
	/* as does a period of little wanted time */
	sst_idle_cpu_share(&s, want, low - 1);
	assert_true(s.crowded);
	sst_idle_cpu_share(&s, SST_IDLE_SHARE_MIN_NS - 1, 0);
	assert_false(s.crowded);
	t = wake_with_work(&s, t + 10, 1000);
	assert_int_equal(s.spin_ns, 2000);
	/* the yields' verdict holds whatever the share says */
	yields(&s, SST_IDLE_YIELD_SAMPLE);
	assert_true(s.crowded);
	sst_idle_cpu_share(&s, want, want);
	assert_true(s.crowded);
	assert_int_equal(s.spin_ns, cap);

	/* spin and block ignore the share */
	sst_idle_init(&s, 100, 5000, 1, 1, 0);
	sst_idle_set_policy(&s, SST_IDLE_POLICY_SPIN);
	sst_idle_cpu_share(&s, want, 0);
	assert_false(s.crowded);
	sst_idle_set_policy(&s, SST_IDLE_POLICY_BLOCK);
	sst_idle_cpu_share(&s, want, 0);
	assert_false(s.crowded);
}

/* A wake-up without work (a timer, our own write's completion) re-arms at
 * once, no spinning, and leaves the window as the traffic set it. */
static void test_idle_timer_wake_rearms(void **state)
{
	(void)state;
	struct sst_idle s;
	uint64_t t;

	sst_idle_init(&s, 100, 5000, 8, 1, 0);
	t = wake_with_work(&s, 1, 1500); /* window 3000 */
	assert_int_equal(s.spin_ns, 3000);
	t = to_block(&s, t + 1);
	sst_idle_woken(&s);
	assert_int_equal(sst_idle_after_pass(&s, false, t + 100), SST_IDLE_ARM);
	assert_int_equal(s.spin_ns, 3000);
	assert_int_equal(sst_idle_after_pass(&s, false, t + 101), SST_IDLE_BLOCK);
	assert_int_equal(s.blocks, 3);
}

/* The clock is asked for only on some idle passes, never on busy ones
 * (except the first after a wait), and passes without it still count. */
static void test_idle_clock_sparse(void **state)
{
	(void)state;
	struct sst_idle s;
	int asked = 0;

	sst_idle_init(&s, 1000, 1000, 1, 4, 1);
	for (int i = 0; i < 10; i++) {
		assert_false(sst_idle_needs_clock(&s, true));
		sst_idle_after_pass(&s, true, 0);
	}
	assert_int_equal(s.last_work_ns, 0);
	/* first idle pass after work: timestamp the work */
	assert_true(sst_idle_needs_clock(&s, false));
	sst_idle_after_pass(&s, false, 5000);
	assert_int_equal(s.last_work_ns, 5000);
	for (int i = 0; i < 8; i++) {
		bool c = sst_idle_needs_clock(&s, false);

		asked += c;
		assert_int_equal(sst_idle_after_pass(&s, false, c ? 5100 + i : 0),
				 SST_IDLE_SPIN);
	}
	assert_int_equal(asked, 2);
	assert_int_equal(s.idle_polls, 9);
	/* the window has passed: the next clocked pass arms */
	while (!sst_idle_needs_clock(&s, false))
		sst_idle_after_pass(&s, false, 0);
	assert_int_equal(sst_idle_after_pass(&s, false, 7000), SST_IDLE_ARM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oneshot_fires_once),
		cmocka_unit_test(test_recurrent_until_removed),
		cmocka_unit_test(test_transition_edges),
		cmocka_unit_test(test_remove_self_in_trigger),
		cmocka_unit_test(test_remove_other_in_trigger),
		cmocka_unit_test(test_add_in_trigger),
		cmocka_unit_test(test_remove_before_pass_and_errors),
		cmocka_unit_test(test_remove_waits_for_running_trigger),
		cmocka_unit_test(test_idle_spins_then_blocks),
		cmocka_unit_test(test_idle_arm_then_work),
		cmocka_unit_test(test_idle_policy_spin),
		cmocka_unit_test(test_idle_policy_block),
		cmocka_unit_test(test_idle_min_polls),
		cmocka_unit_test(test_idle_window_adapts),
		cmocka_unit_test(test_idle_crowded_cpu),
		cmocka_unit_test(test_idle_crowded_share),
		cmocka_unit_test(test_idle_timer_wake_rearms),
		cmocka_unit_test(test_idle_clock_sparse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
