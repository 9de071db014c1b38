/*
 * regcache.h - the registration cache for application memory outside the
 * region.
 *
 * A send from memory that squall did not hand out needs that memory
 * registered with the NIC. Registering costs tens of microseconds plus a
 * per-byte price, so the cache registers a range on its first RMA use, keeps
 * the registration after the use (lazy deregistration) and serves later
 * uses that fall inside a cached range from it. Overlapping and adjacent
 * ranges are merged into one registration; every registration counts its
 * users, and past a configured byte or entry limit the least recently used
 * registrations that nobody holds are dropped.
 *
 * Lookups take no lock: readers search an RCU-published snapshot of the
 * cache (liburcu, "bulletproof" flavour, so any thread may call without
 * registering itself); writers (misses, invalidations, evictions) serialize
 * on one mutex per cache.
 *
 * A cached registration must never outlive the memory it describes: when
 * memory is unmapped (munmap, brk shrink, mremap, mmap MAP_FIXED over it)
 * or given back to the kernel (madvise DONTNEED/FREE/REMOVE), a userfaultfd
 * monitor (one per process, shared by every cache) learns of it before the
 * unmapping call returns (the kernel holds the caller until the monitor has
 * read the event), and every lookup applies events read so far before it
 * searches: a lookup that follows the unmap never finds the stale entry. A
 * worker thread applies events to idle caches so that registrations of
 * memory that is gone are released promptly. No libc function is patched. Where the kernel refuses
 * userfaultfd (seccomp, vm.unprivileged_userfaultfd=0 on kernels without
 * UFFD_USER_MODE_ONLY), the cache says so once through the log callback and
 * through regcache_monitor_status(), and the application must call
 * regcache_invalidate() before it gives memory back. Memory the kernel will
 * not let the monitor watch (file mappings other than shmem, ranges another
 * userfaultfd owns) is registered for the one use and deregistered when its
 * last user puts it, never cached. SysV shmdt() is not reported by the
 * kernel: call regcache_invalidate() before it.
 *
 * The cache never calls verbs itself: the creator passes register and
 * deregister callbacks (the rdma layer passes ibv_reg_mr/ibv_dereg_mr).
 * A caller that binds a memory window on a cached registration keeps its
 * reference until the window is invalidated: ibv_dereg_mr fails while a
 * window is bound, and eviction or invalidation deregisters at last put.
 *
 * fork(): the first regcache_create() installs pthread_atfork handlers
 * that pause liburcu's threads around fork; a child starts without the
 * monitor and must not use caches inherited from its parent (their
 * registrations do not belong to it either).
 */
#ifndef SQUALL_REGCACHE_H
#define SQUALL_REGCACHE_H

#include <stddef.h>
#include <stdint.h>

#include <squall/error.h>

/* libsquall's ABI: the library is built with hidden visibility, and the
 * calls declared below are what it exports (squall.map lists them). */
#pragma GCC visibility push(default)

struct regcache;
struct regcache_reg;

/* Register [addr, addr + len) (page aligned, len > 0). Store whatever the
 * caller needs later (e.g. a struct ibv_mr *) in *handle. Return 0 or a
 * negative errno. Called with the cache's writer lock held, from the thread
 * that missed or from the monitor's worker thread (re-registration of the
 * parts of a registration that survive a partial invalidation). */
typedef int (*regcache_reg_fn)(void *ctx, void *addr, size_t len,
			       void **handle);

/* Undo one successful regcache_reg_fn. Called exactly once per handle, from
 * any thread: the thread dropping the last reference, liburcu's call_rcu
 * thread, or (when a registration is rolled back after an allocation
 * failure) the writer with the cache's lock held. It must not call into
 * the cache. A failure is counted (regcache_stats.dereg_failures) and
 * logged; the entry is gone either way. */
typedef int (*regcache_dereg_fn)(void *ctx, void *handle);

enum regcache_log_level {
	REGCACHE_LOG_WARN = 1,
	REGCACHE_LOG_INFO = 2,
};

/* One line of text about something the application may want to know (the
 * kernel refused userfaultfd, a deregistration failed). */
typedef void (*regcache_log_fn)(void *ctx, enum regcache_log_level level,
				const char *msg);

enum regcache_monitor_mode {
	REGCACHE_MONITOR_AUTO = 0, /* use userfaultfd when the kernel allows */
	REGCACHE_MONITOR_OFF,      /* rely on regcache_invalidate() alone */
};

enum regcache_monitor_status {
	REGCACHE_MONITOR_ACTIVE = 0,  /* unmaps are seen by the kernel monitor */
	REGCACHE_MONITOR_UNAVAILABLE, /* the kernel refused; see `why` */
	REGCACHE_MONITOR_DISABLED,    /* REGCACHE_MONITOR_OFF was asked for */
};

struct regcache_config {
	regcache_reg_fn reg;       /* required */
	regcache_dereg_fn dereg;   /* required */
	void *ctx;                 /* passed to reg and dereg */
	size_t max_bytes;          /* 0: no limit on registered bytes */
	size_t max_entries;        /* 0: no limit on registrations */
	enum regcache_monitor_mode monitor;
	regcache_log_fn log;       /* may be NULL */
	void *log_ctx;
};

struct regcache_stats {
	uint64_t hits;            /* lookups served from a cached entry */
	uint64_t misses;          /* lookups that took the writer path */
	uint64_t registrations;   /* successful reg callbacks */
	uint64_t reg_failures;    /* failed reg callbacks */
	uint64_t deregistrations; /* dereg callbacks made */
	uint64_t dereg_failures;  /* dereg callbacks that returned an error */
	uint64_t merges;          /* entries absorbed into a merged entry */
	uint64_t evictions;       /* entries dropped by the LRU limits */
	uint64_t invalidations;   /* entries dropped because memory went away */
	uint64_t splits;          /* surviving parts re-registered after a
				     partial invalidation */
	uint64_t uncached;        /* registrations served once, not cached
				     (memory the monitor cannot watch) */
	uint64_t events;          /* unmap/remove ranges applied from the
				     kernel monitor */
	uint64_t entries;         /* cached entries now */
	uint64_t bytes;           /* bytes covered by cached entries now */
};

/* Create a cache. With REGCACHE_MONITOR_AUTO the process-wide userfaultfd
 * monitor is started (or joined); if the kernel refuses it the cache still
 * works, logs one REGCACHE_LOG_WARN line saying why, and reports
 * REGCACHE_MONITOR_UNAVAILABLE. Returns 0, -EINVAL (missing callback),
 * -ENOMEM, or a thread-creation error, with err filled. */
int regcache_create(const struct regcache_config *cfg, struct regcache **out,
		    struct squall_error *err);

/* Deregister every cached entry and free the cache. Every registration
 * obtained with regcache_get() must have been put before. */
void regcache_destroy(struct regcache *c);

/* Find a registration covering [ptr, ptr + len), registering the pages on a
 * miss (merged with cached neighbours that overlap or touch it). On success
 * *out holds one reference: pass it to regcache_put() when the transfer is
 * done. Returns 0, -EINVAL (len 0 or wrapping), or the reg callback's error.
 * A hit takes no lock and writes only the entry's own cache line (its
 * reference count and use stamp). */
int regcache_get(struct regcache *c, const void *ptr, size_t len,
		 struct regcache_reg **out);

/* Drop the reference taken by regcache_get(). The entry stays cached unless
 * it was invalidated, evicted or merged meanwhile, in which case the last
 * put deregisters it (in the calling thread). */
void regcache_put(struct regcache *c, struct regcache_reg *r);

/* The handle the reg callback stored for this registration. */
void *regcache_reg_handle(const struct regcache_reg *r);

/* The registered range (page aligned; covers what was asked for). */
void *regcache_reg_addr(const struct regcache_reg *r);
size_t regcache_reg_len(const struct regcache_reg *r);

/* Tell the cache that [ptr, ptr + len) is about to be given back or reused
 * (for allocators that return memory to the kernel in ways the monitor
 * cannot see, or when the monitor is unavailable). Entries touching those
 * pages stop being served before this returns; parts of them outside the
 * range are re-registered as their own entries. Registrations still held
 * are deregistered at their last put. Returns 0, -EINVAL (wrapping range). */
int regcache_invalidate(struct regcache *c, const void *ptr, size_t len);

/* Wait until every unmap the kernel reported so far has been applied to
 * this cache and every dropped registration nobody holds has been
 * deregistered. For tests and orderly shutdowns; may sleep. */
void regcache_sync(struct regcache *c);

/* Whether this cache is protected by the kernel monitor. When it is not,
 * `why` (may be NULL) is filled with the reason (code and one line). */
enum regcache_monitor_status regcache_monitor_status(const struct regcache *c,
						     struct squall_error *why);

/* A consistent copy of the counters. Takes the writer lock. */
void regcache_stats(struct regcache *c, struct regcache_stats *out);

#pragma GCC visibility pop

#endif /* SQUALL_REGCACHE_H */
