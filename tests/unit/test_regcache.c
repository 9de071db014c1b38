/*
 * test_regcache.c - the registration cache without a NIC: interval logic
 * (hits, overlap and adjacent merges, splits on partial invalidation, LRU
 * with held entries, byte and entry limits, failed registrations), the
 * kernel unmap monitor against real malloc/free, mmap/munmap, madvise and
 * mremap, the fallback when the kernel refuses userfaultfd, and readers
 * racing a writer.
 *
 * The register callback counts and allocates a record per registration;
 * the deregister callback checks and frees it, so a registration used
 * after its deregistration shows up under AddressSanitizer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <squall/regcache.h>

#include "rdma/regcache_int.h"

#include "regcache_harness.h"

static struct regcache_stats stats(struct regcache *c)
{
	struct regcache_stats s;
	regcache_sync(c);
	regcache_stats(c, &s);
	return s;
}

/* The range of the entry that serves [p, p+len), by a held lookup. */
static void span(struct regcache *c, void *p, size_t len, char **lo, size_t *n)
{
	struct regcache_reg *r;
	assert_int_equal(regcache_get(c, p, len, &r), 0);
	*lo = regcache_reg_addr(r);
	*n = regcache_reg_len(r);
	regcache_put(c, r);
}

static void test_hit_after_miss(void **state)
{
	(void)state;
	struct counter k = {0};
	struct regcache *c = mk(&k, REGCACHE_MONITOR_OFF, 0, 0);
	char *a = arena(16);
	assert_false(use(c, &k, a + 100, 5000));   /* pages 0-1 */
	assert_true(use(c, &k, a + 100, 5000));
	assert_true(use(c, &k, a + pg + 7, 10));    /* inside */
	assert_false(use(c, &k, a + 5 * pg, 1));
	struct regcache_stats s = stats(c);
	assert_int_equal(s.registrations, 2);
	assert_int_equal(s.hits, 2);
	assert_int_equal(s.misses, 2);
	assert_int_equal(s.entries, 2);
	assert_int_equal(s.bytes, 3 * pg);
	assert_int_equal(k.deregs, 0);          /* lazy deregistration */
	struct regcache_reg *r;
	assert_int_equal(regcache_get(c, a, 0, &r), -EINVAL);
	assert_int_equal(regcache_get(c, (void *)(UINTPTR_MAX - 10), 100, &r),
			 -EINVAL);
	regcache_destroy(c);
	assert_int_equal(k.live, 0);
	munmap(a, 16 * pg);
}

/* Callbacks that count by context: which one a registration or
 * deregistration was made for. */
struct tag_ctx {
	atomic_long regs, deregs;
};

static int tag_reg(void *ctx, void *addr, size_t len, void **h)
{
	struct tag_ctx *t = ctx;

	(void)addr;
	(void)len;
	assert_non_null(t);
	atomic_fetch_add(&t->regs, 1);
	*h = malloc(1);
	return *h ? 0 : -ENOMEM;
}

static int tag_dereg(void *ctx, void *h)
{
	struct tag_ctx *t = ctx;

	if (t)
		atomic_fetch_add(&t->deregs, 1);
	free(h);
	return 0;
}

/* A cache handed from one owner to the next (a node's cache kept for the
 * member's next node) keeps what it cached, and from the rebind on calls
 * back with the new contexts only, deregistrations included. */
static void test_rebind(void **state)
{
	(void)state;
	struct tag_ctx a = {0}, b = {0};
	struct regcache_config cfg = {
		.reg = tag_reg, .dereg = tag_dereg, .ctx = &a,
		.monitor = REGCACHE_MONITOR_OFF,
	};
	struct regcache *c = NULL;
	struct regcache_reg *r;
	struct squall_error err;
	char *x = arena(8);

	assert_int_equal(regcache_create(&cfg, &c, &err), 0);
	assert_int_equal(regcache_get(c, x, pg, &r), 0);
	regcache_put(c, r);
	assert_int_equal(regcache_get(c, x + 2 * pg, pg, &r), 0);
	regcache_put(c, r);
	assert_int_equal(a.regs, 2);

	regcache_rebind(c, &b, NULL);
	/* Still cached: a hit, no registration for either. */
	assert_int_equal(regcache_get(c, x + 10, 100, &r), 0);
	regcache_put(c, r);
	assert_int_equal(a.regs, 2);
	assert_int_equal(b.regs, 0);
	/* New ranges and the deregistration of an old one: the new owner. */
	assert_int_equal(regcache_get(c, x + 4 * pg, pg, &r), 0);
	regcache_put(c, r);
	assert_int_equal(b.regs, 1);
	assert_int_equal(regcache_invalidate(c, x, pg), 0);
	regcache_sync(c);
	assert_int_equal(b.deregs, 1);
	assert_int_equal(a.deregs, 0);

	/* Between owners: nothing is asked of anyone. */
	regcache_rebind(c, NULL, NULL);
	regcache_rebind(c, &a, NULL);
	regcache_destroy(c);
	assert_int_equal(a.deregs, 2);
	assert_int_equal(b.deregs, 1);
	assert_int_equal(a.regs + b.regs, 3);
	munmap(x, 8 * pg);
}

static void test_overlap_merge(void **state)
{
	(void)state;
	struct counter k = {0};
	struct regcache *c = mk(&k, REGCACHE_MONITOR_OFF, 0, 0);
	char *a = arena(32), *lo;
	size_t n;
	assert_false(use(c, &k, a, 2 * pg));
	assert_false(use(c, &k, a + pg, 3 * pg));   /* overlaps: [0,4) */
	span(c, a + 3 * pg, 1, &lo, &n);
	assert_ptr_equal(lo, a);
	assert_int_equal(n, 4 * pg);
	struct regcache_stats s = stats(c);
	assert_int_equal(s.entries, 1);
	assert_int_equal(s.merges, 1);
	assert_int_equal(k.live, 1);                  /* old one dropped */
	assert_int_equal(k.deregs, 1);
	/* Three separate entries bridged by one request become one. */
	assert_false(use(c, &k, a + 10 * pg, pg));
	assert_false(use(c, &k, a + 12 * pg, pg));
	assert_false(use(c, &k, a + 14 * pg, pg));
	assert_false(use(c, &k, a + 11 * pg, 3 * pg));
	span(c, a + 10 * pg, 5 * pg, &lo, &n);
	assert_ptr_equal(lo, a + 10 * pg);
	assert_int_equal(n, 5 * pg);
	s = stats(c);
	assert_int_equal(s.entries, 2);
	assert_int_equal(s.merges, 4);
	assert_int_equal(k.live, 2);
	regcache_destroy(c);
	assert_int_equal(k.live, 0);
	munmap(a, 32 * pg);
}

static void test_adjacent_merge(void **state)
{
	(void)state;
	struct counter k = {0};
	struct regcache *c = mk(&k, REGCACHE_MONITOR_OFF, 0, 0);
	char *a = arena(16), *lo;
	size_t n;
	assert_false(use(c, &k, a, 2 * pg));
	assert_false(use(c, &k, a + 2 * pg, 2 * pg));  /* touches: [0,4) */
	span(c, a, 4 * pg, &lo, &n);
	assert_ptr_equal(lo, a);
	assert_int_equal(n, 4 * pg);
	/* Byte ranges in the same page as an entry are served by it. */
	assert_true(use(c, &k, a + 4 * pg - 1, 1));
	/* A gap of one page keeps entries apart. */
	assert_false(use(c, &k, a + 5 * pg, pg));
	struct regcache_stats s = stats(c);
	assert_int_equal(s.entries, 2);
	assert_int_equal(s.merges, 1);
	assert_int_equal(k.live, 2);
	regcache_destroy(c);
	munmap(a, 16 * pg);
}

static void test_merge_while_held(void **state)
{
	(void)state;
	struct counter k = {0};
	struct regcache *c = mk(&k, REGCACHE_MONITOR_OFF, 0, 0);
	char *a = arena(16);
	struct regcache_reg *held, *r2;
	assert_int_equal(regcache_get(c, a, pg, &held), 0);
	assert_int_equal(regcache_get(c, a + pg, pg, &r2), 0); /* merges */
	assert_int_equal(regcache_reg_len(r2), 2 * pg);
	regcache_sync(c);
	/* The absorbed registration is still held: not deregistered. */
	assert_int_equal(k.live, 2);
	struct rec *rec = regcache_reg_handle(held);
	assert_int_equal(rec->magic, REC_MAGIC);
	regcache_put(c, held);
	assert_int_equal(k.live, 1);
	regcache_put(c, r2);
	assert_true(use(c, &k, a, 2 * pg));
	regcache_destroy(c);
	assert_int_equal(k.live, 0);
	munmap(a, 16 * pg);
}

static void test_split_on_partial_invalidation(void **state)
{
	(void)state;
	struct counter k = {0};
	struct regcache *c = mk(&k, REGCACHE_MONITOR_OFF, 0, 0);
	char *a = arena(16), *lo;
	size_t n;
	assert_false(use(c, &k, a, 8 * pg));
	/* Bytes inside pages 3 and 4: both pages go. */
	assert_int_equal(regcache_invalidate(c, a + 3 * pg + 10, pg), 0);
	struct regcache_stats s = stats(c);
	assert_int_equal(s.invalidations, 1);
	assert_int_equal(s.splits, 2);
	assert_int_equal(s.entries, 2);
	assert_int_equal(s.bytes, 6 * pg);
	assert_int_equal(k.live, 2);
	span(c, a + pg, 1, &lo, &n);
	assert_ptr_equal(lo, a);
	assert_int_equal(n, 3 * pg);
	span(c, a + 6 * pg, 1, &lo, &n);
	assert_ptr_equal(lo, a + 5 * pg);
	assert_int_equal(n, 3 * pg);
	assert_int_equal(k.regs, 3);
	/* The hole is a miss, and refills (merging both sides back). */
	assert_false(use(c, &k, a + 3 * pg, 2 * pg));
	s = stats(c);
	assert_int_equal(s.entries, 1);
	assert_int_equal(s.bytes, 8 * pg);
	/* Invalidating a whole entry leaves nothing; one not cached is a
	 * no-op. */
	assert_int_equal(regcache_invalidate(c, a, 8 * pg), 0);
	assert_int_equal(regcache_invalidate(c, a + 12 * pg, pg), 0);
	s = stats(c);
	assert_int_equal(s.entries, 0);
	assert_int_equal(k.live, 0);
	regcache_destroy(c);
	munmap(a, 16 * pg);
}

static void test_invalidate_while_held(void **state)
{
	(void)state;
	struct counter k = {0};
	struct regcache *c = mk(&k, REGCACHE_MONITOR_OFF, 0, 0);
	char *a = arena(4);
	struct regcache_reg *r;
	assert_int_equal(regcache_get(c, a, pg, &r), 0);
	assert_int_equal(regcache_invalidate(c, a, pg), 0);
	regcache_sync(c);
	assert_int_equal(k.live, 1);           /* still held */
	assert_false(use(c, &k, a, pg));       /* not served any more */
	regcache_put(c, r);
	assert_int_equal(k.live, 1);           /* the new one */
	regcache_destroy(c);
	assert_int_equal(k.live, 0);
	munmap(a, 4 * pg);
}

static void test_lru_entry_limit(void **state)
{
	(void)state;
	struct counter k = {0};
	struct regcache *c = mk(&k, REGCACHE_MONITOR_OFF, 3, 0);
	char *a = arena(32);
	char *A = a, *B = a + 4 * pg, *C = a + 8 * pg, *D = a + 12 * pg;
	assert_false(use(c, &k, A, pg));
	assert_false(use(c, &k, B, pg));
	assert_false(use(c, &k, C, pg));
	assert_true(use(c, &k, A, pg));        /* A is now newer than B, C */
	assert_false(use(c, &k, D, pg));       /* evicts B */
	struct regcache_stats s = stats(c);
	assert_int_equal(s.evictions, 1);
	assert_int_equal(s.entries, 3);
	assert_int_equal(k.live, 3);
	assert_true(use(c, &k, A, pg));
	assert_true(use(c, &k, C, pg));
	assert_true(use(c, &k, D, pg));
	assert_false(use(c, &k, B, pg));       /* gone; evicts A (oldest use) */
	assert_true(use(c, &k, C, pg));
	assert_true(use(c, &k, D, pg));
	assert_true(use(c, &k, B, pg));
	assert_false(use(c, &k, A, pg));
	regcache_destroy(c);
	assert_int_equal(k.live, 0);
	munmap(a, 32 * pg);
}

static void test_lru_never_evicts_held(void **state)
{
	(void)state;
	struct counter k = {0};
	struct regcache *c = mk(&k, REGCACHE_MONITOR_OFF, 1, 0);
	char *a = arena(32);
	struct regcache_reg *ra, *rb;
	assert_int_equal(regcache_get(c, a, pg, &ra), 0);
	assert_int_equal(regcache_get(c, a + 4 * pg, pg, &rb), 0);
	struct regcache_stats s = stats(c);
	assert_int_equal(s.entries, 2);        /* over the limit, all held */
	assert_int_equal(s.evictions, 0);
	regcache_put(c, rb);
	/* A is the oldest but held: B goes instead. */
	assert_false(use(c, &k, a + 8 * pg, pg));
	s = stats(c);
	assert_int_equal(s.evictions, 2);      /* B, then the new one on put */
	assert_int_equal(s.entries, 1);
	struct rec *rec = regcache_reg_handle(ra);
	assert_int_equal(rec->magic, REC_MAGIC);
	assert_true(use(c, &k, a, pg));        /* A still cached */
	regcache_put(c, ra);
	assert_false(use(c, &k, a + 4 * pg, pg)); /* now A can go */
	s = stats(c);
	assert_int_equal(s.entries, 1);
	assert_int_equal(k.live, 1);
	regcache_destroy(c);
	assert_int_equal(k.live, 0);
	munmap(a, 32 * pg);
}

static void test_byte_limit(void **state)
{
	(void)state;
	struct counter k = {0};
	struct regcache *c = mk(&k, REGCACHE_MONITOR_OFF, 0, 4 * pg);
	char *a = arena(32);
	assert_false(use(c, &k, a, 2 * pg));
	assert_false(use(c, &k, a + 4 * pg, 2 * pg));
	assert_false(use(c, &k, a + 8 * pg, pg));   /* 5 pages: A goes */
	struct regcache_stats s = stats(c);
	assert_int_equal(s.bytes, 3 * pg);
	assert_int_equal(s.evictions, 1);
	assert_true(use(c, &k, a + 4 * pg, 2 * pg));
	assert_true(use(c, &k, a + 8 * pg, pg));
	/* One entry larger than the limit is served, and goes once unused. */
	assert_false(use(c, &k, a + 16 * pg, 8 * pg));
	s = stats(c);
	assert_true(s.bytes <= 4 * pg);
	regcache_destroy(c);
	assert_int_equal(k.live, 0);
	munmap(a, 32 * pg);
}

static void test_failed_registration(void **state)
{
	(void)state;
	struct counter k = {0};
	struct regcache *c = mk(&k, REGCACHE_MONITOR_OFF, 0, 0);
	char *a = arena(16), *lo;
	size_t n;
	struct regcache_reg *r;
	assert_false(use(c, &k, a, 2 * pg));
	/* The neighbour's memory "went away" unseen: the merged registration
	 * fails, the asked pages are registered alone. */
	k.poison = (uintptr_t)a;
	assert_false(use(c, &k, a + 2 * pg, pg));
	span(c, a + 2 * pg, 1, &lo, &n);
	assert_ptr_equal(lo, a + 2 * pg);
	assert_int_equal(n, pg);
	/* A registration of a poisoned page fails; the error reaches the
	 * caller and nothing is cached for it. */
	k.poison = (uintptr_t)a + 5 * pg;
	assert_int_equal(regcache_get(c, a + 5 * pg, 2 * pg, &r), -EFAULT);
	k.poison = 0;
	k.fail = ENOMEM;
	assert_int_equal(regcache_get(c, a + 8 * pg, pg, &r), -ENOMEM);
	k.fail = 0;
	struct regcache_stats s = stats(c);
	assert_int_equal(s.reg_failures, 3);
	assert_int_equal(s.entries, 2);
	regcache_destroy(c);
	assert_int_equal(k.live, 0);
	munmap(a, 16 * pg);
}

/* Many entries: the chunked index splits, merges and stays ordered. */
static void test_many_entries(void **state)
{
	(void)state;
	struct counter k = {0};
	struct regcache *c = mk(&k, REGCACHE_MONITOR_OFF, 0, 0);
	size_t n = 3000;
	char *a = arena(2 * n);
	/* Insert in a scrambled order. */
	for (size_t i = 0; i < n; i++) {
		size_t j = (i * 7919) % n;
		assert_false(use(c, &k, a + 2 * j * pg, pg));
	}
	for (size_t i = 0; i < n; i++)
		assert_true(use(c, &k, a + 2 * i * pg + 5, 9));
	/* Drop every third, then fill the odd gaps next to the rest. */
	for (size_t i = 0; i < n; i += 3)
		assert_int_equal(regcache_invalidate(c, a + 2 * i * pg, pg), 0);
	struct regcache_stats s = stats(c);
	assert_int_equal(s.entries, n - (n + 2) / 3);
	for (size_t i = 0; i < n; i++) {
		bool hit = use(c, &k, a + 2 * i * pg, pg);
		assert_int_equal(hit, i % 3 != 0);
	}
	/* One request over everything merges it into one entry. */
	assert_false(use(c, &k, a, 2 * n * pg));
	s = stats(c);
	assert_int_equal(s.entries, 1);
	assert_int_equal(k.live, 1);
	regcache_destroy(c);
	munmap(a, 2 * n * pg);
}

/* ---- the kernel monitor ---- */

static struct regcache *mk_monitored(struct counter *k)
{
	struct regcache *c = mk(k, REGCACHE_MONITOR_AUTO, 0, 0);
	struct squall_error why;
	enum regcache_monitor_status st = regcache_monitor_status(c, &why);
	if (st != REGCACHE_MONITOR_ACTIVE) {
		/* The kernel refused: it must have been said once. */
		assert_int_equal(st, REGCACHE_MONITOR_UNAVAILABLE);
		assert_int_equal(k->warns, 1);
		assert_true(why.code < 0 && why.msg[0]);
		print_message("userfaultfd refused here: %s\n", why.msg);
	}
	return c;
}

static bool active(struct regcache *c)
{
	return regcache_monitor_status(c, NULL) == REGCACHE_MONITOR_ACTIVE;
}

/* Whether any page of [p, p + len) is no longer mapped. */
static bool unmapped(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p & ~(pg - 1);
	return msync((void *)a, (uintptr_t)p + len - a, MS_ASYNC) != 0 &&
	       errno == ENOMEM;
}

static void test_monitor_malloc_free_malloc(void **state)
{
	(void)state;
	struct counter k = {0};
	struct regcache *c = mk_monitored(&k);
	/* Larger than any free chunk the heap holds: glibc maps it and
	 * unmaps it on free (main() fixed the mmap threshold). Allocators
	 * that keep freed memory mapped (AddressSanitizer's) need no
	 * invalidation: the pages stay the same. */
	size_t len = 4 << 20;
	char *p = malloc(len);
	assert_non_null(p);
	memset(p, 1, len);
	assert_false(use(c, &k, p, len));
	assert_true(use(c, &k, p, len));
	if (!active(c))
		regcache_invalidate(c, p, len);
	free(p);                              /* munmap: UNMAP event */
	bool gone = unmapped(p, len);
	char *q = malloc(len);
	assert_non_null(q);
	memset(q, 2, len);
	print_message("free %s the block; re-malloc %s address\n",
		      gone ? "unmapped" : "kept", p == q ? "at the same" : "at another");
	/* Same address or not, the old registration must not serve q. */
	assert_false(use(c, &k, q, len));
	struct regcache_stats s = stats(c);
	if (gone || !active(c)) {
		assert_int_equal(s.invalidations, 1);
		assert_int_equal(k.live, 1);
	}
	if (gone && active(c))
		assert_true(s.events >= 1);
	if (!active(c))
		regcache_invalidate(c, q, len);
	free(q);
	gone = unmapped(q, len);
	s = stats(c);
	if (gone || !active(c))
		assert_int_equal(s.entries, 0);
	regcache_destroy(c);
	assert_int_equal(k.live, 0);
}

/* Map fresh pages at p again, just unmapped. Another thread (a sanitizer's
 * allocator) may have taken the address meanwhile; the lookups that
 * follow are then made on whatever is there now, which the cache must not
 * serve from the old registration either. */
static char *remap_same(char *p, size_t len, bool *own)
{
	char *q = mmap(p, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	*own = q == p;
	if (q == p) {
		q[0] = 2;
		return q;
	}
	assert_true(q == MAP_FAILED && errno == EEXIST);
	print_message("address %p was taken by another thread\n", (void *)p);
	return p;
}

static void test_monitor_mmap_munmap_mmap(void **state)
{
	(void)state;
	struct counter k = {0};
	struct regcache *c = mk_monitored(&k);
	size_t len = 16 * pg;
	char *p = arena(16);
	p[0] = 1;
	assert_false(use(c, &k, p + pg, 4 * pg));
	assert_true(use(c, &k, p + 2 * pg, pg));
	if (!active(c))
		regcache_invalidate(c, p, len);
	assert_int_equal(munmap(p, len), 0);
	bool own;
	char *q = remap_same(p, len, &own);
	assert_false(use(c, &k, q + 2 * pg, pg));   /* new pages: a miss */
	struct regcache_stats s = stats(c);
	assert_int_equal(s.invalidations, 1);
	assert_int_equal(k.live, 1);

	/* Memory given back with madvise (REMOVE events) and moved with
	 * mremap: both drop the entry. */
	if (active(c) && own) {
		assert_true(use(c, &k, q + 2 * pg, pg));
		assert_int_equal(madvise(q + 2 * pg, pg, MADV_DONTNEED), 0);
		assert_false(use(c, &k, q + 2 * pg, pg));
		char *dst = arena(16);
		char *m = mremap(q + 2 * pg, pg, pg,
				 MREMAP_MAYMOVE | MREMAP_FIXED, dst);
		assert_ptr_equal(m, dst);
		regcache_sync(c);
		assert_int_equal(k.live, 0);
		s = stats(c);
		assert_int_equal(s.entries, 0);
		munmap(dst, 16 * pg);
	}
	if (own)
		munmap(q, len);
	regcache_destroy(c);
	assert_int_equal(k.live, 0);
}

static void test_monitor_partial_unmap_splits(void **state)
{
	(void)state;
	struct counter k = {0};
	struct regcache *c = mk_monitored(&k);
	char *p = arena(8), *lo;
	size_t n;
	memset(p, 1, 8 * pg);
	assert_false(use(c, &k, p, 8 * pg));
	if (!active(c))
		regcache_invalidate(c, p + 3 * pg, 2 * pg);
	assert_int_equal(munmap(p + 3 * pg, 2 * pg), 0);
	/* Right after the unmap returns, the pages are not served. */
	struct regcache_reg *r;
	bool own;
	char *q = remap_same(p + 3 * pg, 2 * pg, &own);
	long regs = k.regs;
	assert_int_equal(regcache_get(c, q, pg, &r), 0);
	/* A new registration (merged with the surviving left part), not the
	 * old one. */
	assert_true(k.regs > regs);
	assert_true((char *)regcache_reg_addr(r) <= q);
	assert_true((char *)regcache_reg_addr(r) + regcache_reg_len(r) >= q + pg);
	regcache_put(c, r);
	span(c, p + 6 * pg, 1, &lo, &n);
	assert_ptr_equal(lo, p + 5 * pg);
	assert_int_equal(n, 3 * pg);
	struct regcache_stats s = stats(c);
	if (active(c))
		assert_int_equal(s.splits, 2);
	if (!active(c))
		regcache_invalidate(c, p, 8 * pg);
	munmap(p, 3 * pg);
	munmap(p + 5 * pg, 3 * pg);
	if (own)
		munmap(q, 2 * pg);
	else
		regcache_invalidate(c, q, 2 * pg); /* not ours to unmap */
	(void)regs;
	s = stats(c);
	assert_int_equal(s.entries, 0);
	regcache_destroy(c);
	assert_int_equal(k.live, 0);
}

/* Two caches in one process share the monitor; a cache created after the
 * monitor stopped starts it again. */
static void test_monitor_shared(void **state)
{
	(void)state;
	struct counter k1 = {0}, k2 = {0};
	struct regcache *c1 = mk_monitored(&k1);
	struct regcache *c2 = mk_monitored(&k2);
	char *p = arena(4);
	p[0] = 1;
	assert_false(use(c1, &k1, p, pg));
	assert_false(use(c2, &k2, p, pg));
	if (!active(c1)) {
		regcache_invalidate(c1, p, pg);
		regcache_invalidate(c2, p, pg);
	}
	munmap(p, 4 * pg);
	regcache_sync(c1);
	regcache_sync(c2);
	assert_int_equal(k1.live, 0);
	assert_int_equal(k2.live, 0);
	bool was_active = active(c1);
	regcache_destroy(c1);
	regcache_destroy(c2);
	struct counter k3 = {0};
	struct regcache *c3 = mk_monitored(&k3);
	assert_int_equal(active(c3), was_active);
	p = arena(4);
	p[0] = 1;
	assert_false(use(c3, &k3, p, pg));
	if (!active(c3))
		regcache_invalidate(c3, p, pg);
	munmap(p, 4 * pg);
	regcache_sync(c3);
	assert_int_equal(k3.live, 0);
	regcache_destroy(c3);
}

/* In a child that may not use userfaultfd (seccomp) and is not root, the
 * cache reports the refusal once and works with explicit invalidation. */
static int refused_child(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return 10;
	if (geteuid() == 0) {
		struct passwd *pw = getpwnam("nobody");
		if (!pw || setgid(pw->pw_gid) || setuid(pw->pw_uid))
			return 11;
	}
	struct counter k = {0};
	struct regcache_config cfg = {
		.reg = count_reg, .dereg = count_dereg, .ctx = &k,
		.log = count_log, .log_ctx = &k,
	};
	struct regcache *c;
	if (regcache_create(&cfg, &c, NULL))
		return 12;
	struct squall_error why;
	if (regcache_monitor_status(c, &why) != REGCACHE_MONITOR_UNAVAILABLE)
		return 13;
	if (k.warns != 1 || why.code != -EPERM || !strstr(why.msg, "userfaultfd"))
		return 14;
	char *p = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct regcache_reg *r;
	if (regcache_get(c, p, pg, &r))
		return 15;
	regcache_put(c, r);
	regcache_invalidate(c, p, 4 * pg);
	munmap(p, 4 * pg);
	regcache_sync(c);
	if (k.live != 0 || k.warns != 1)
		return 16;
	regcache_destroy(c);
	return 0;
}

static void test_monitor_refused_fallback(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(refused_child());
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- readers racing a writer ---- */

#define STRESS_SLOTS 256

struct stress {
	struct regcache *c;
	struct counter *k;
	char *base;
	atomic_bool stop;
	atomic_long lookups;
};

static void *reader(void *arg)
{
	struct stress *s = arg;
	unsigned seed = (unsigned)(uintptr_t)pthread_self();
	long n = 0;
	while (!atomic_load(&s->stop)) {
		size_t slot = (size_t)rand_r(&seed) % STRESS_SLOTS;
		char *p = s->base + slot * 2 * pg + (size_t)rand_r(&seed) % pg;
		struct regcache_reg *r;
		if (regcache_get(s->c, p, 64, &r) != 0)
			continue;
		uintptr_t a = (uintptr_t)regcache_reg_addr(r);
		struct rec *rec = regcache_reg_handle(r);
		/* Held: the registration must be alive and cover p. */
		if (rec->magic != REC_MAGIC || rec->addr != a ||
		    a > (uintptr_t)p || a + rec->len < (uintptr_t)p + 64)
			abort();
		regcache_put(s->c, r);
		n++;
	}
	atomic_fetch_add(&s->lookups, n);
	return NULL;
}

static void test_stress_readers_writer(void **state)
{
	(void)state;
	struct counter k = {0};
	struct stress s = {0};
	s.k = &k;
	s.c = mk(&k, REGCACHE_MONITOR_AUTO, 96, 0);
	s.base = arena(2 * STRESS_SLOTS + 2);
	for (size_t i = 0; i < STRESS_SLOTS; i += 2)
		assert_true(use(s.c, &k, s.base + i * 2 * pg, pg) || true);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, &s), 0);
	unsigned seed = 42;
	for (int it = 0; it < 20000; it++) {
		size_t slot = (size_t)rand_r(&seed) % STRESS_SLOTS;
		char *p = s.base + slot * 2 * pg;
		switch (rand_r(&seed) % 4) {
		case 0:
			regcache_invalidate(s.c, p, (size_t)(rand_r(&seed) % 4 + 1) * pg);
			break;
		case 1: { /* bridge two slots: merges */
			struct regcache_reg *r;
			if (regcache_get(s.c, p, 3 * pg, &r) == 0)
				regcache_put(s.c, r);
			break;
		}
		default: {
			struct regcache_reg *r;
			if (regcache_get(s.c, p, pg, &r) == 0)
				regcache_put(s.c, r);
		}
		}
	}
	atomic_store(&s.stop, true);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	struct regcache_stats st = stats(s.c);
	print_message("stress: %ld lookups, %lu hits, %lu misses, %lu evictions, "
		      "%lu invalidations, %lu merges\n", atomic_load(&s.lookups),
		      (unsigned long)st.hits, (unsigned long)st.misses,
		      (unsigned long)st.evictions, (unsigned long)st.invalidations,
		      (unsigned long)st.merges);
	assert_true(atomic_load(&s.lookups) > 0);
	assert_true(st.evictions > 0 && st.invalidations > 0 && st.merges > 0);
	assert_true(st.entries <= 96);
	assert_int_equal((long)st.entries, k.live);
	regcache_destroy(s.c);
	assert_int_equal(k.live, 0);
	munmap(s.base, (2 * STRESS_SLOTS + 2) * pg);
}

/* The writer unmaps and maps memory while readers look up: the monitor
 * path under concurrency, and no deadlock with threads that free. */
static void *churner(void *arg)
{
	struct stress *s = arg;
	for (int i = 0; i < 300 && !atomic_load(&s->stop); i++) {
		char *p = malloc(256 << 10);
		memset(p, 3, 4096);
		struct regcache_reg *r;
		if (regcache_get(s->c, p, 256 << 10, &r) == 0)
			regcache_put(s->c, r);
		if (!active(s->c))
			regcache_invalidate(s->c, p, 256 << 10);
		free(p);
	}
	return NULL;
}

static void test_stress_monitor(void **state)
{
	(void)state;
	struct counter k = {0};
	struct stress s = {0};
	s.k = &k;
	s.c = mk_monitored(&k);
	s.base = arena(2 * STRESS_SLOTS + 2);
	pthread_t t[4];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, &s), 0);
	for (int i = 2; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churner, &s), 0);
	pthread_join(t[2], NULL);
	pthread_join(t[3], NULL);
	atomic_store(&s.stop, true);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	munmap(s.base, (2 * STRESS_SLOTS + 2) * pg);
	struct regcache_stats st = stats(s.c);
	/* Every registration still cached describes memory that is still
	 * mapped (glibc keeps part of a thread arena's heap: those entries
	 * are legitimately cached); everything unmapped was dropped. */
	assert_true(st.invalidations > 0);
	/* The monitor's worker may still be applying the final munmap's event
	 * and handing its registrations to call_rcu: give it a bounded time to
	 * settle. A leaked registration never settles and still fails. */
	for (int i = 0; i < 500 && (long)st.entries != k.live; i++) {
		usleep(10000);
		st = stats(s.c);
	}
	assert_int_equal((long)st.entries, k.live);
	if (active(s.c))
		for (struct rec *r = k.first; r; r = r->next)
			assert_int_equal(msync((void *)r->addr, r->len, MS_ASYNC), 0);
	print_message("monitor stress: %lu events, %lu invalidations, %lu splits, "
		      "%lu entries left on mapped memory\n",
		      (unsigned long)st.events, (unsigned long)st.invalidations,
		      (unsigned long)st.splits, (unsigned long)st.entries);
	regcache_destroy(s.c);
}

int main(void)
{
	pg = (size_t)sysconf(_SC_PAGESIZE);
	/* A fixed threshold: glibc serves large blocks with mmap every time
	 * (the adaptive one moves a block to the heap after one was freed). */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	if (getenv("REGCACHE_TEST"))     /* run one test: a glob */
		cmocka_set_test_filter(getenv("REGCACHE_TEST"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit_after_miss),
		cmocka_unit_test(test_rebind),
		cmocka_unit_test(test_overlap_merge),
		cmocka_unit_test(test_adjacent_merge),
		cmocka_unit_test(test_merge_while_held),
		cmocka_unit_test(test_split_on_partial_invalidation),
		cmocka_unit_test(test_invalidate_while_held),
		cmocka_unit_test(test_lru_entry_limit),
		cmocka_unit_test(test_lru_never_evicts_held),
		cmocka_unit_test(test_byte_limit),
		cmocka_unit_test(test_failed_registration),
		cmocka_unit_test(test_many_entries),
		cmocka_unit_test(test_monitor_malloc_free_malloc),
		cmocka_unit_test(test_monitor_mmap_munmap_mmap),
		cmocka_unit_test(test_monitor_partial_unmap_splits),
		cmocka_unit_test(test_monitor_shared),
		cmocka_unit_test(test_monitor_refused_fallback),
		cmocka_unit_test(test_stress_readers_writer),
		cmocka_unit_test(test_stress_monitor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
