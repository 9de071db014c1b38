/*
 * regcache_jemalloc.h - an optional jemalloc arena whose memory is
 * registered as jemalloc creates it (library squall_jemalloc, linked
 * with -lsquall_jemalloc -ljemalloc).
 *
 * For applications that want zero-copy sends from ordinary allocations
 * outside the region: allocate from the arena with
 *     mallocx(size, MALLOCX_ARENA(regcache_arena_index(a)) | MALLOCX_TCACHE_NONE)
 * and the bytes are already registered in the cache when the first send
 * looks them up (a hit, no registration on the send path). The arena's
 * extent hooks map its memory, register each new extent in the cache, keep
 * it (jemalloc's decay never hands registered pages back to the kernel),
 * and invalidate it in the cache before the arena gives it up, so a stale
 * registration can never serve memory that was reused.
 *
 * Linking this library makes the application use jemalloc as its malloc;
 * squall itself does not need it.
 */
#ifndef SQUALL_REGCACHE_JEMALLOC_H
#define SQUALL_REGCACHE_JEMALLOC_H

#include <stddef.h>
#include <stdint.h>

#include <squall/error.h>
#include <squall/regcache.h>

/* libsquall_jemalloc's ABI: the library is built with hidden visibility, and the
 * calls declared below are what it exports (squall_jemalloc.map lists them). */
#pragma GCC visibility push(default)

struct regcache_arena;

/* What an arena has done. */
struct regcache_arena_stats {
	uint64_t extents;        /* extents mapped (and registered) */
	uint64_t bytes;          /* bytes mapped now */
	uint64_t reg_failures;   /* extents the cache could not register (they
				    are still used; a send then registers on
				    a miss) */
	uint64_t released;       /* extents invalidated and unmapped */
};

/* Create a jemalloc arena over cache c (one made with regcache_create()).
 * Returns 0 with *out set, or a negative errno with err filled (jemalloc
 * refused the arena). c must outlive the arena. */
int regcache_arena_create(struct regcache *c, struct regcache_arena **out,
			  struct squall_error *err);

/* The jemalloc arena index, for MALLOCX_ARENA(). */
unsigned regcache_arena_index(const struct regcache_arena *a);

/* A copy of the arena's counters. */
void regcache_arena_stats(struct regcache_arena *a,
			  struct regcache_arena_stats *out);

/* Destroy the arena: every allocation from it must have been freed. Its
 * memory is invalidated in the cache and unmapped. Safe on NULL. */
void regcache_arena_destroy(struct regcache_arena *a);

#pragma GCC visibility pop

#endif /* SQUALL_REGCACHE_JEMALLOC_H */
