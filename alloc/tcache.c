/*
 * tcache.c - per-thread caches ("magazines") of free slots.
 *
 * The hot path of a lease or a release touches only the calling thread's
 * cache: a stack of free slots per class, taken from and given back to the
 * shared pool in batches (refills of whole pages, half a magazine or more;
 * flushes of half a magazine). A thread finds its cache for
 * an allocator through one initial-exec TLS pointer, checked against the
 * cache's allocator pointer, which destroying the allocator sets to
 * TCACHE_DEAD in every cache it has (so an address reused by a later
 * allocator never matches a stale cache). A thread without a cache points
 * at tcache_none, which matches no allocator: the hit paths need no NULL
 * test. A thread that uses several allocators keeps a
 * list of caches, found by the allocator's unique id, and switches the
 * pointer on the slow path.
 *
 * Lifetimes: a process-wide registry lock guards which caches belong to
 * which allocator. When a thread exits, a pthread key destructor gives its
 * cached slots back and folds its counters into the allocator. When an
 * allocator is destroyed first, its caches are detached (their `a` set to
 * TCACHE_DEAD) and freed by their thread on its next slow path or at its
 * exit.
 */
#include <stdlib.h>

#include "alloc_internal.h"

struct tcache_head tcache_none = { .a = TCACHE_DEAD };
__thread struct tcache_head *alloc_tls_head
	__attribute__((tls_model("initial-exec"))) = &tcache_none;
static __thread struct tcache *tls_list;

static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_tag;  /* under the registry lock */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;

/* Give every cached slot back and fold the counters into the allocator.
 * Caller holds the registry lock; tc->h.a is live. */
static void tcache_retire(struct tcache *tc)
{
	struct alloc *a = tc->h.a;
	unsigned i;

	tcache_flush_all(a, tc);
	slab_disown(a, tc->tag, tc->own);
	for (i = 0; i < ALLOC_NCLASSES; i++) {
		uint64_t l, r;

		mag_counts(tc, i, &l, &r);
		a->retired_leases[i] += l;
		a->retired_releases[i] += r;
	}
	if (tc->a_prev)
		tc->a_prev->a_next = tc->a_next;
	else
		a->tcs = tc->a_next;
	if (tc->a_next)
		tc->a_next->a_prev = tc->a_prev;
	tc->h.a = TCACHE_DEAD;
}

static void thread_exit(void *arg)
{
	struct tcache *tc = arg, *next;

	pthread_mutex_lock(&registry);
	for (; tc; tc = next) {
		next = tc->t_next;
		if (tc->h.a != TCACHE_DEAD)
			tcache_retire(tc);
		free(tc);
	}
	pthread_mutex_unlock(&registry);
	tls_list = NULL;
	alloc_tls_head = &tcache_none;
}

static void make_key(void)
{
	/* One key for the process, never deleted: the destructor must stay
	 * valid as long as threads that used an allocator can exit. */
	if (pthread_key_create(&exit_key, thread_exit))
		abort();
}

/* Drop this thread's caches whose allocator is gone. Registry lock held. */
static void prune_dead(void)
{
	struct tcache **pp = &tls_list, *tc;

	while ((tc = *pp)) {
		if (tc->h.a == TCACHE_DEAD) {
			*pp = tc->t_next;
			if (alloc_tls_head == &tc->h)
				alloc_tls_head = &tcache_none;
			free(tc);
		} else {
			pp = &tc->t_next;
		}
	}
}

struct tcache *tcache_slow(struct alloc *a)
{
	struct tcache *tc;
	unsigned i;

	pthread_once(&key_once, make_key);
	pthread_mutex_lock(&registry);
	prune_dead();
	for (tc = tls_list; tc; tc = tc->t_next)
		if (tc->aid == a->id)
			break;
	if (!tc) {
		tc = calloc(1, sizeof(*tc));
		if (!tc) {
			pthread_mutex_unlock(&registry);
			return NULL;
		}
		tc->aid = a->id;
		tc->tag = ++next_tag;
		tc->h.a = a;
		for (i = 0; i < ALLOC_NCLASSES; i++) {
			tc->own[i] = ALLOC_NIL;
			tc->h.lo[i] = (uint16_t)((char *)tc->ent[i] -
						 (char *)tc);
			tc->h.hi[i] = (uint16_t)(tc->h.lo[i] + MAG_STEP *
						 a->cls[i].mag_cap);
			mag_set(tc, i, tc->h.lo[i]);
		}
		tc->a_next = a->tcs;
		if (a->tcs)
			a->tcs->a_prev = tc;
		a->tcs = tc;
		tc->t_next = tls_list;
		tls_list = tc;
	}
	/* The key holds the list head, so the destructor runs exactly when
	 * the thread has caches. */
	pthread_setspecific(exit_key, tls_list);
	pthread_mutex_unlock(&registry);
	alloc_tls_head = &tc->h;
	return tc;
}

void tcache_flush_all(struct alloc *a, struct tcache *tc)
{
	unsigned i;

	for (i = 0; i < ALLOC_NCLASSES; i++) {
		uint64_t w = mag_word(tc, i);
		unsigned n = mag_n(tc, i, w);

		slab_flush(a, i, tc->ent[i], n);
		mag_net(tc, i, -(int64_t)n);
		mag_set(tc, i, w - n * MAG_STEP);
	}
}

void tcache_detach_all(struct alloc *a)
{
	struct tcache *tc, *next;

	pthread_once(&key_once, make_key);
	pthread_mutex_lock(&registry);
	for (tc = a->tcs; tc; tc = next) {
		next = tc->a_next;
		tc->h.a = TCACHE_DEAD;
		tc->a_next = tc->a_prev = NULL;
	}
	a->tcs = NULL;
	/* The calling thread's own caches can go now. */
	prune_dead();
	pthread_setspecific(exit_key, tls_list);
	pthread_mutex_unlock(&registry);
}

/* Sum of the per-thread counters of class i, live and exited threads. */
void tcache_counts(struct alloc *a, unsigned i, uint64_t *leases,
		   uint64_t *releases)
{
	struct tcache *tc;
	uint64_t l, r;

	pthread_mutex_lock(&registry);
	l = a->retired_leases[i];
	r = a->retired_releases[i];
	for (tc = a->tcs; tc; tc = tc->a_next) {
		uint64_t tl, tr;

		mag_counts(tc, i, &tl, &tr);
		l += tl;
		r += tr;
	}
	pthread_mutex_unlock(&registry);
	*leases = l;
	*releases = r;
}

/* A release by a thread that could not get a cache: count it as retired. */
void tcache_count_orphan(struct alloc *a, unsigned i)
{
	pthread_mutex_lock(&registry);
	a->retired_releases[i]++;
	pthread_mutex_unlock(&registry);
}
