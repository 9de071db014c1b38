/*
 * predicates.c - the SST predicate engine and the idle back-off policy.
 *
 * A predicate is a function over the local copy of the table; its trigger
 * runs when the predicate holds: once for a one-shot (which then removes
 * itself), on every pass while it holds for a recurrent one, and on every
 * false-to-true edge for a transition one. One thread evaluates all of them
 * in registration order, one pass at a time.
 *
 * Predicates and triggers run without the engine's lock, so they may add
 * and remove predicates (their own included). The active list changes shape
 * only inside the pass thread: additions land on an incoming list that the
 * next pass splices in, and removals set a flag that the end of the pass
 * sweeps. A removal from another thread while the trigger is running waits
 * for it to return, so the caller may free the trigger's argument after.
 *
 * The idle policy at the bottom decides when the progress thread stops
 * spinning and sleeps; see predicates.h.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "sst/predicates.h"

struct sst_pred {
	struct sst_pred *next;
	sst_pred_id id;
	enum sst_pred_kind kind;
	sst_pred_fn pred;
	sst_trigger_fn trig;
	void *arg;
	bool last;     /* value at the previous pass (transition) */
	bool removed;  /* under the lock; swept at the end of a pass */
};

int sst_preds_init(struct sst_preds *e, struct sst *owner)
{
	*e = (struct sst_preds){ .owner = owner, .next_id = 1 };
	e->tail = &e->active;
	e->in_tail = &e->incoming;
	if (pthread_mutex_init(&e->lock, NULL))
		return -ENOMEM;
	if (pthread_cond_init(&e->idle, NULL)) {
		pthread_mutex_destroy(&e->lock);
		return -ENOMEM;
	}
	return 0;
}

static void free_list(struct sst_pred *p)
{
	while (p) {
		struct sst_pred *n = p->next;
		free(p);
		p = n;
	}
}

void sst_preds_destroy(struct sst_preds *e)
{
	assert(!e->in_pass);
	free_list(e->active);
	free_list(e->incoming);
	pthread_cond_destroy(&e->idle);
	pthread_mutex_destroy(&e->lock);
}

int sst_preds_add(struct sst_preds *e, enum sst_pred_kind kind,
		  sst_pred_fn pred, sst_trigger_fn trig, void *arg,
		  sst_pred_id *id)
{
	struct sst_pred *p;

	if (!pred || !trig || (kind != SST_PRED_ONESHOT &&
	    kind != SST_PRED_RECURRENT && kind != SST_PRED_TRANSITION))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->kind = kind;
	p->pred = pred;
	p->trig = trig;
	p->arg = arg;
	pthread_mutex_lock(&e->lock);
	p->id = e->next_id++;
	*e->in_tail = p;
	e->in_tail = &p->next;
	e->count++;
	pthread_mutex_unlock(&e->lock);
	if (id)
		*id = p->id;
	return 0;
}

static bool in_pass_thread(const struct sst_preds *e)
{
	return e->in_pass && pthread_equal(e->pass_thread, pthread_self());
}

/* Unlink and free an entry of the incoming list, which no pass has seen. */
static bool remove_incoming(struct sst_preds *e, sst_pred_id id)
{
	for (struct sst_pred **pp = &e->incoming; *pp; pp = &(*pp)->next) {
		struct sst_pred *p = *pp;

		if (p->id != id || p->removed)
			continue;
		*pp = p->next;
		if (e->in_tail == &p->next)
			e->in_tail = pp;
		free(p);
		return true;
	}
	return false;
}

int sst_preds_remove(struct sst_preds *e, sst_pred_id id)
{
	struct sst_pred *found = NULL;

	pthread_mutex_lock(&e->lock);
	if (remove_incoming(e, id)) {
		e->count--;
		pthread_mutex_unlock(&e->lock);
		return 0;
	}
	for (struct sst_pred *p = e->active; p; p = p->next)
		if (p->id == id && !p->removed) {
			found = p;
			break;
		}
	if (!found) {
		pthread_mutex_unlock(&e->lock);
		return -ENOENT;
	}
	found->removed = true;
	e->count--;
	/* The entry stays allocated until the pass thread sweeps it, so
	 * waiting on it here is safe. */
	while (e->running == found && !in_pass_thread(e))
		pthread_cond_wait(&e->idle, &e->lock);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

static void splice_incoming(struct sst_preds *e)
{
	if (!e->incoming)
		return;
	*e->tail = e->incoming;
	e->tail = e->in_tail;
	e->incoming = NULL;
	e->in_tail = &e->incoming;
}

static void sweep_removed(struct sst_preds *e)
{
	struct sst_pred **pp = &e->active;

	e->tail = &e->active;
	while (*pp) {
		struct sst_pred *p = *pp;

		if (p->removed) {
			*pp = p->next;
			free(p);
			continue;
		}
		e->tail = &p->next;
		pp = &p->next;
	}
}

/* Evaluate one entry; returns whether its trigger ran. Called unlocked. */
static bool eval_one(struct sst_preds *e, struct sst_pred *p)
{
	bool v = p->pred(e->owner, p->arg);
	bool fire;

	switch (p->kind) {
	case SST_PRED_TRANSITION:
		fire = v && !p->last;
		break;
	default:
		fire = v;
		break;
	}
	p->last = v;
	if (!fire)
		return false;
	if (p->kind == SST_PRED_ONESHOT) {
		pthread_mutex_lock(&e->lock);
		/* Removed by another thread between the predicate and here:
		 * that removal won, the trigger does not run. */
		if (p->removed) {
			pthread_mutex_unlock(&e->lock);
			return false;
		}
		p->removed = true;
		e->count--;
		pthread_mutex_unlock(&e->lock);
	}
	p->trig(e->owner, p->arg);
	return true;
}

unsigned sst_preds_eval(struct sst_preds *e)
{
	unsigned fired = 0;
	struct sst_pred *p;

	pthread_mutex_lock(&e->lock);
	assert(!e->in_pass);
	splice_incoming(e);
	e->in_pass = true;
	e->pass_thread = pthread_self();
	p = e->active;
	pthread_mutex_unlock(&e->lock);

	/* Only this thread changes the list's shape, so walking it without
	 * the lock is safe; `removed` is read under the lock because other
	 * threads write it. */
	for (; p; p = p->next) {
		pthread_mutex_lock(&e->lock);
		if (p->removed) {
			pthread_mutex_unlock(&e->lock);
			continue;
		}
		e->running = p;
		pthread_mutex_unlock(&e->lock);

		if (eval_one(e, p))
			fired++;

		pthread_mutex_lock(&e->lock);
		e->running = NULL;
		pthread_cond_broadcast(&e->idle);
		pthread_mutex_unlock(&e->lock);
	}

	pthread_mutex_lock(&e->lock);
	sweep_removed(e);
	e->in_pass = false;
	e->fired += fired;
	pthread_mutex_unlock(&e->lock);
	return fired;
}

size_t sst_preds_count(struct sst_preds *e)
{
	size_t n;

	pthread_mutex_lock(&e->lock);
	n = e->count;
	pthread_mutex_unlock(&e->lock);
	return n;
}

void sst_idle_init(struct sst_idle *s, uint64_t spin_min_ns,
		   uint64_t spin_max_ns, uint32_t min_polls,
		   uint32_t clock_every, uint64_t now_ns)
{
	*s = (struct sst_idle){
		.spin_min_ns = spin_min_ns,
		.spin_max_ns = spin_max_ns < spin_min_ns ? spin_min_ns : spin_max_ns,
		.spin_ns = spin_min_ns,
		.min_polls = min_polls,
		.clock_every = clock_every ? clock_every : 1,
		.state = SST_IDLE_SPIN,
		.last_work_ns = now_ns,
	};
}

void sst_idle_set_policy(struct sst_idle *s, enum sst_idle_policy policy)
{
	s->policy = policy;
}

bool sst_idle_needs_clock(const struct sst_idle *s, bool work)
{
	if (s->policy == SST_IDLE_POLICY_SPIN)
		return false;       /* the caller's busy clock is enough */
	if (s->after_wake)
		return true;        /* to time the sleep */
	if (work)
		return false;       /* the next idle pass times it */
	if (s->state == SST_IDLE_ARM || s->last_work_ns == 0)
		return true;
	return (s->idle_polls + 1) % s->clock_every == 0;
}

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* The longest window now: spin_max, or while the CPU is crowded
 * SST_IDLE_CROWDED_SPINS x spin_min (when that is shorter). */
static uint64_t crowded_max(const struct sst_idle *s)
{
	uint64_t c = SST_IDLE_CROWDED_SPINS * s->spin_min_ns;

	return s->crowded && c < s->spin_max_ns ? c : s->spin_max_ns;
}

/* The first pass after a wait: adapt the window to how long it slept.
 * A wake-up without work (a timer, the completion of our own write) says
 * nothing about the traffic: the window stays, and the member re-arms at
 * once instead of spinning. Returns whether the state is decided. */
static bool after_wake(struct sst_idle *s, bool work, uint64_t now_ns)
{
	uint64_t slept = now_ns > s->block_ns ? now_ns - s->block_ns : 0;

	s->after_wake = false;
	if (!work) {
		s->state = SST_IDLE_ARM;
		s->idle_polls = 0;
		return true;
	}
	if (slept <= s->spin_max_ns) {
		uint64_t want = clamp(2 * slept, s->spin_min_ns,
				      crowded_max(s));

		if (want > s->spin_ns)
			s->spin_ns = want;
	} else {
		/* Sparse traffic, or a long stall: back off gradually, so
		 * that one stall does not undo what busy traffic set. */
		s->spin_ns = s->spin_ns / 2 > s->spin_min_ns ?
			s->spin_ns / 2 : s->spin_min_ns;
	}
	return false;
}

enum sst_idle_action sst_idle_after_pass(struct sst_idle *s, bool work,
					 uint64_t now_ns)
{
	if (s->policy == SST_IDLE_POLICY_SPIN)
		return SST_IDLE_SPIN;
	if (s->policy == SST_IDLE_POLICY_BLOCK) {
		s->after_wake = false;
		if (work) {
			s->state = SST_IDLE_SPIN;
		} else if (s->state == SST_IDLE_SPIN) {
			s->state = SST_IDLE_ARM;
		} else if (s->state == SST_IDLE_ARM) {
			s->state = SST_IDLE_BLOCK;
			s->block_ns = now_ns;
			s->blocks++;
		}
		return s->state;
	}
	if (s->after_wake && after_wake(s, work, now_ns))
		return s->state;
	if (work) {
		s->state = SST_IDLE_SPIN;
		s->last_work_ns = now_ns;
		s->idle_polls = 0;
		return s->state;
	}
	switch (s->state) {
	case SST_IDLE_SPIN:
		s->idle_polls++;
		if (!now_ns)
			break;
		if (!s->last_work_ns)
			s->last_work_ns = now_ns;
		else if (s->idle_polls >= s->min_polls &&
			 now_ns - s->last_work_ns >= s->spin_ns)
			s->state = SST_IDLE_ARM;
		break;
	case SST_IDLE_ARM:
		/* The pass after arming saw nothing: safe to sleep. */
		assert(now_ns);
		s->state = SST_IDLE_BLOCK;
		s->block_ns = now_ns;
		s->blocks++;
		break;
	case SST_IDLE_BLOCK:
		/* A pass reported while blocked means the caller went on
		 * without calling sst_idle_woken; stay put. */
		break;
	}
	return s->state;
}

bool sst_idle_measures_cpu(const struct sst_idle *s)
{
	return s->policy == SST_IDLE_POLICY_ADAPTIVE;
}

/* Combine the two verdicts; a crowded CPU cuts the window at once. */
static void set_crowded(struct sst_idle *s)
{
	uint64_t max;

	s->crowded = s->yields_crowded || s->share_crowded;
	max = crowded_max(s);
	if (s->spin_ns > max)
		s->spin_ns = max;
}

void sst_idle_yielded(struct sst_idle *s, uint64_t took_ns)
{
	if (!sst_idle_measures_cpu(s))
		return;
	s->yields++;
	if (took_ns >= SST_IDLE_YIELD_SLOW_NS)
		s->slow_yields++;
	if (s->yields < SST_IDLE_YIELD_SAMPLE)
		return;
	s->yields_crowded = s->slow_yields * 4u >= s->yields;
	s->yields = s->slow_yields = 0;
	set_crowded(s);
}

void sst_idle_cpu_share(struct sst_idle *s, uint64_t want_ns, uint64_t cpu_ns)
{
	if (!sst_idle_measures_cpu(s))
		return;
	if (want_ns < SST_IDLE_SHARE_MIN_NS ||
	    cpu_ns * 100u >= want_ns * SST_IDLE_SHARE_HIGH_PCT)
		s->share_crowded = false;
	else if (cpu_ns * 100u < want_ns * SST_IDLE_SHARE_LOW_PCT)
		s->share_crowded = true;
	set_crowded(s);
}

void sst_idle_woken(struct sst_idle *s)
{
	assert(s->state == SST_IDLE_BLOCK);
	s->state = SST_IDLE_SPIN;
	s->idle_polls = 0;
	s->after_wake = true;
}
