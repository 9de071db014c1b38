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

/* Idle policy: spin while work is seen, arm after spin_ns without work and
 * min_polls idle passes, block only if the pass after arming is idle. */
static void test_idle_spins_then_blocks(void **state)
{
	(void)state;
	struct sst_idle s;
	uint64_t t = 1000;

	sst_idle_init(&s, 500, 3, t);
	/* work keeps it spinning however long */
	for (int i = 0; i < 100; i++) {
		t += 100;
		assert_int_equal(sst_idle_after_pass(&s, true, t), SST_IDLE_SPIN);
	}
	/* idle but not long enough */
	t += 100;
	assert_int_equal(sst_idle_after_pass(&s, false, t), SST_IDLE_SPIN);
	t += 100;
	assert_int_equal(sst_idle_after_pass(&s, false, t), SST_IDLE_SPIN);
	t += 100;
	assert_int_equal(sst_idle_after_pass(&s, false, t), SST_IDLE_SPIN);
	t += 100;
	assert_int_equal(sst_idle_after_pass(&s, false, t), SST_IDLE_SPIN);
	t += 100;  /* 500 ns since work */
	assert_int_equal(sst_idle_after_pass(&s, false, t), SST_IDLE_ARM);
	assert_int_equal(s.blocks, 0);
	t += 10;
	assert_int_equal(sst_idle_after_pass(&s, false, t), SST_IDLE_BLOCK);
	assert_int_equal(s.blocks, 1);
	sst_idle_woken(&s, t + 1000000);
	assert_int_equal(s.state, SST_IDLE_SPIN);
	/* after waking it spins again for spin_ns before re-arming */
	assert_int_equal(sst_idle_after_pass(&s, false, t + 1000100),
			 SST_IDLE_SPIN);
}

/* Work seen in the pass after arming cancels the sleep. */
static void test_idle_arm_then_work(void **state)
{
	(void)state;
	struct sst_idle s;

	sst_idle_init(&s, 0, 1, 0);
	assert_int_equal(sst_idle_after_pass(&s, false, 1), SST_IDLE_ARM);
	assert_int_equal(sst_idle_after_pass(&s, true, 2), SST_IDLE_SPIN);
	assert_int_equal(s.blocks, 0);
	assert_int_equal(sst_idle_after_pass(&s, false, 3), SST_IDLE_ARM);
	assert_int_equal(sst_idle_after_pass(&s, false, 4), SST_IDLE_BLOCK);
	assert_int_equal(s.blocks, 1);
}

/* min_polls holds the spin even when the clock has moved far (a member
 * descheduled for a long time must look once more before sleeping). */
static void test_idle_min_polls(void **state)
{
	(void)state;
	struct sst_idle s;

	sst_idle_init(&s, 10, 4, 0);
	assert_int_equal(sst_idle_after_pass(&s, false, 1000), SST_IDLE_SPIN);
	assert_int_equal(sst_idle_after_pass(&s, false, 2000), SST_IDLE_SPIN);
	assert_int_equal(sst_idle_after_pass(&s, false, 3000), SST_IDLE_SPIN);
	assert_int_equal(sst_idle_after_pass(&s, false, 4000), SST_IDLE_ARM);
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
		cmocka_unit_test(test_idle_min_polls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
