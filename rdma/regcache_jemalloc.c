/*
 * regcache_jemalloc.c - a jemalloc arena whose extents are registered in a
 * registration cache as they are created (include/squall/regcache_jemalloc.h).
 *
 * The idea: the allocator tells the communication layer about memory at
 * the two moments that matter, when it maps memory and before it lets it
 * go. The extent hooks map extents themselves and register each one
 * (regcache_get + regcache_put: the entry stays cached, and the LRU limits
 * still apply); they refuse to purge or decommit (jemalloc then keeps the
 * pages, so registered memory is never handed back to the kernel behind
 * the cache's back); dalloc and destroy invalidate the range in the cache
 * before they unmap it. Split and merge
 * need nothing: the cache keys registrations by address, not by extent.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <jemalloc/jemalloc.h>

#include <squall/regcache_jemalloc.h>

struct regcache_arena {
	extent_hooks_t hooks;   /* first: the hooks find their arena by it */
	struct regcache *cache;
	unsigned index;
	atomic_uint_fast64_t extents, bytes, reg_failures, released;
};

static struct regcache_arena *arena_of(extent_hooks_t *h)
{
	return (struct regcache_arena *)(void *)h;
}

/* Map size bytes aligned to alignment (a power of two, at least a page). */
static void *map_aligned(size_t size, size_t alignment)
{
	size_t span = size + alignment;
	char *p = mmap(NULL, span, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED)
		return NULL;
	a = ((uintptr_t)p + alignment - 1) & ~(uintptr_t)(alignment - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	if ((char *)p + span > (char *)a + size)
		munmap((char *)a + size, (size_t)((char *)p + span - ((char *)a + size)));
	return (void *)a;
}

static void *hook_alloc(extent_hooks_t *h, void *new_addr, size_t size,
			size_t alignment, bool *zero, bool *commit,
			unsigned arena_ind)
{
	struct regcache_arena *a = arena_of(h);
	struct regcache_reg *r;
	void *p;

	(void)arena_ind;
	/* Growing in place at a given address is not offered. */
	if (new_addr)
		return NULL;
	if (alignment < 4096)
		alignment = 4096;
	p = map_aligned(size, alignment);
	if (!p)
		return NULL;
	*zero = true;
	*commit = true;
	if (regcache_get(a->cache, p, size, &r) == 0)
		regcache_put(a->cache, r);
	else
		atomic_fetch_add(&a->reg_failures, 1);
	atomic_fetch_add(&a->extents, 1);
	atomic_fetch_add(&a->bytes, size);
	return p;
}

/* Out of the cache before the pages can be mapped again, then unmapped. */
static void release(struct regcache_arena *a, void *addr, size_t size)
{
	regcache_invalidate(a->cache, addr, size);
	munmap(addr, size);
	atomic_fetch_add(&a->released, 1);
	atomic_fetch_sub(&a->bytes, size);
}

/* jemalloc asks to give an extent back (it keeps most of them, retained,
 * until the arena is destroyed; its own metadata comes back here). */
static bool hook_dalloc(extent_hooks_t *h, void *addr, size_t size,
			bool committed, unsigned arena_ind)
{
	(void)committed, (void)arena_ind;
	release(arena_of(h), addr, size);
	return false;
}

static void hook_destroy(extent_hooks_t *h, void *addr, size_t size,
			 bool committed, unsigned arena_ind)
{
	(void)committed, (void)arena_ind;
	release(arena_of(h), addr, size);
}

static bool hook_commit(extent_hooks_t *h, void *addr, size_t size,
			size_t offset, size_t length, unsigned arena_ind)
{
	(void)h, (void)addr, (void)size, (void)offset, (void)length;
	(void)arena_ind;
	return false; /* always committed */
}

/* Refusing decommit and purges keeps registered pages in place. */
static bool hook_keep(extent_hooks_t *h, void *addr, size_t size,
		      size_t offset, size_t length, unsigned arena_ind)
{
	(void)h, (void)addr, (void)size, (void)offset, (void)length;
	(void)arena_ind;
	return true;
}

static bool hook_split(extent_hooks_t *h, void *addr, size_t size,
		       size_t size_a, size_t size_b, bool committed,
		       unsigned arena_ind)
{
	(void)h, (void)addr, (void)size, (void)size_a, (void)size_b;
	(void)committed, (void)arena_ind;
	return false;
}

static bool hook_merge(extent_hooks_t *h, void *addr_a, size_t size_a,
		       void *addr_b, size_t size_b, bool committed,
		       unsigned arena_ind)
{
	(void)h, (void)addr_a, (void)size_a, (void)addr_b, (void)size_b;
	(void)committed, (void)arena_ind;
	return false;
}

int regcache_arena_create(struct regcache *c, struct regcache_arena **out,
			  struct squall_error *err)
{
	struct regcache_arena *a;
	extent_hooks_t *hp;
	size_t sz = sizeof(unsigned);
	int r;

	if (!c || !out)
		return squall_error_set(err, -EINVAL, "regcache_arena_create: "
					"missing argument");
	a = calloc(1, sizeof(*a));
	if (!a)
		return squall_error_set(err, -ENOMEM, "regcache_arena_create: "
					"out of memory");
	a->hooks = (extent_hooks_t){
		.alloc = hook_alloc,
		.dalloc = hook_dalloc,
		.destroy = hook_destroy,
		.commit = hook_commit,
		.decommit = hook_keep,
		.purge_lazy = hook_keep,
		.purge_forced = hook_keep,
		.split = hook_split,
		.merge = hook_merge,
	};
	a->cache = c;
	hp = &a->hooks;
	r = mallctl("arenas.create", &a->index, &sz, &hp, sizeof(hp));
	if (r) {
		free(a);
		return squall_error_set(err, -r, "jemalloc arenas.create: %s",
					strerror(r));
	}
	*out = a;
	return 0;
}

unsigned regcache_arena_index(const struct regcache_arena *a)
{
	return a->index;
}

void regcache_arena_stats(struct regcache_arena *a,
			  struct regcache_arena_stats *out)
{
	*out = (struct regcache_arena_stats){
		.extents = atomic_load(&a->extents),
		.bytes = atomic_load(&a->bytes),
		.reg_failures = atomic_load(&a->reg_failures),
		.released = atomic_load(&a->released),
	};
}

void regcache_arena_destroy(struct regcache_arena *a)
{
	char name[64];

	if (!a)
		return;
	snprintf(name, sizeof(name), "arena.%u.destroy", a->index);
	/* Retained extents come back through the destroy hook. */
	mallctl(name, NULL, NULL, NULL, 0);
	free(a);
}
