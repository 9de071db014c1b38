/*
 * regcache_harness.h - what the registration cache's unit tests share: a
 * register callback that counts and allocates a record per registration
 * and a deregister callback that checks and frees it (a registration used
 * after its deregistration shows up under AddressSanitizer), a cache built
 * on them, an arena of pages to carve ranges from, and a checked lookup.
 * Include after cmocka.h; the test sets pg to the page size.
 */
#ifndef SQUALL_TESTS_UNIT_REGCACHE_HARNESS_H
#define SQUALL_TESTS_UNIT_REGCACHE_HARNESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <squall/regcache.h>

#define REC_MAGIC 0x5245474bu

struct rec {
	uint32_t magic;
	uintptr_t addr;
	size_t len;
	struct rec *prev, *next;    /* the counter's live list */
};

struct counter {
	atomic_long regs, deregs, live, warns;
	pthread_mutex_t lock;
	struct rec *first;         /* live registrations */
	uintptr_t poison;      /* a registration covering this page fails */
	int fail;              /* every registration fails with this */
};

static size_t pg;

static inline int count_reg(void *ctx, void *addr, size_t len, void **h)
{
	struct counter *k = ctx;
	uintptr_t a = (uintptr_t)addr;
	assert_int_equal(a % pg, 0);
	assert_int_equal(len % pg, 0);
	assert_true(len > 0);
	if (k->fail)
		return -k->fail;
	if (k->poison && k->poison >= a && k->poison < a + len)
		return -EFAULT;
	struct rec *r = malloc(sizeof(*r));
	assert_non_null(r);
	*r = (struct rec){REC_MAGIC, a, len, NULL, NULL};
	pthread_mutex_lock(&k->lock);
	r->next = k->first;
	if (k->first)
		k->first->prev = r;
	k->first = r;
	pthread_mutex_unlock(&k->lock);
	*h = r;
	atomic_fetch_add(&k->regs, 1);
	atomic_fetch_add(&k->live, 1);
	return 0;
}

static inline int count_dereg(void *ctx, void *h)
{
	struct counter *k = ctx;
	struct rec *r = h;
	assert_int_equal(r->magic, REC_MAGIC);
	r->magic = 0;
	pthread_mutex_lock(&k->lock);
	if (r->prev)
		r->prev->next = r->next;
	else
		k->first = r->next;
	if (r->next)
		r->next->prev = r->prev;
	pthread_mutex_unlock(&k->lock);
	free(r);
	atomic_fetch_add(&k->deregs, 1);
	atomic_fetch_sub(&k->live, 1);
	return 0;
}

static inline void count_log(void *ctx, enum regcache_log_level lvl,
			     const char *msg)
{
	struct counter *k = ctx;
	(void)msg;
	if (lvl == REGCACHE_LOG_WARN)
		atomic_fetch_add(&k->warns, 1);
}

static inline struct regcache *mk(struct counter *k,
				  enum regcache_monitor_mode m,
				  size_t max_entries, size_t max_bytes)
{
	struct regcache_config cfg = {
		.reg = count_reg, .dereg = count_dereg, .ctx = k,
		.max_entries = max_entries, .max_bytes = max_bytes,
		.monitor = m, .log = count_log, .log_ctx = k,
	};
	struct regcache *c = NULL;
	struct squall_error err;
	assert_int_equal(regcache_create(&cfg, &c, &err), 0);
	return c;
}

/* An arena of pages the logic tests carve ranges from (never unmapped
 * while a cache watches it). */
static inline char *arena(size_t pages)
{
	char *p = mmap(NULL, pages * pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	return p;
}

/* get + check + put; returns whether it hit (no new registration). */
static inline bool use(struct regcache *c, struct counter *k, void *p,
		       size_t len)
{
	long before = atomic_load(&k->regs);
	struct regcache_reg *r;
	assert_int_equal(regcache_get(c, p, len, &r), 0);
	uintptr_t a = (uintptr_t)regcache_reg_addr(r);
	assert_true(a <= (uintptr_t)p);
	assert_true(a + regcache_reg_len(r) >= (uintptr_t)p + len);
	struct rec *rec = regcache_reg_handle(r);
	assert_int_equal(rec->magic, REC_MAGIC);
	assert_int_equal(rec->addr, a);
	assert_int_equal(rec->len, regcache_reg_len(r));
	regcache_put(c, r);
	return atomic_load(&k->regs) == before;
}

#endif /* SQUALL_TESTS_UNIT_REGCACHE_HARNESS_H */
