/*
 * regcache_monitor.c - one userfaultfd per process that reports unmapped
 * and discarded memory to every registration cache, without patching libc.
 *
 * The idea: ranges a cache registers are also registered with userfaultfd in
 * write-protect mode. Nothing is ever write-protected, so no page fault is
 * ever trapped (missing mode would trap first touches that this thread
 * could not answer); the registration only makes the kernel send UNMAP,
 * REMOVE and REMAP events. The kernel holds the thread that unmaps until
 * the monitor thread has read the event. The monitor bumps
 * rc_monitor_started before each read and appends the ranges to a log;
 * every cache remembers the last batch it applied. A lookup that follows
 * the unmap therefore sees a batch it has not applied, takes the slow path
 * and applies the log before searching: the stale entry cannot be served.
 * A worker thread applies the log to idle caches so that registrations of
 * memory that is gone are released promptly.
 *
 * Deadlock rules (learned from libfabric's monitor): the monitor thread
 * reads before it takes any lock, never allocates or frees and never waits
 * on anything a blocked unmapper could hold; everything that frees runs in
 * the worker or in the application. The monitor closes the userfaultfd
 * itself before it exits, so unmapping its stack at join cannot wait on a
 * reader that is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rdma/regcache_int.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

/* Ranges are watched in 2 MiB granules when the kernel accepts it: one
 * userfaultfd registration then covers many cached entries and the VMAs it
 * splits stay few (a VMA per registered range would run into
 * vm.max_map_count with 100,000 entries). */
#define RC_WATCH_GRANULE ((uintptr_t)2 << 20)

#define RC_LOG_SIZE 4096

atomic_uint_fast64_t rc_monitor_started;
static atomic_uint_fast64_t mon_done;

struct rc_log_slot {
	atomic_uintptr_t s, e;
};
static struct rc_log_slot mon_log[RC_LOG_SIZE];
static atomic_uint_fast64_t mon_log_head;

static pthread_mutex_t mon_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mon_subs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rc_monitor_sub *mon_subs;
static int mon_users;
static atomic_int mon_uffd = -1;
static int mon_stopfd = -1, mon_wakefd = -1;
static pthread_t mon_thread, mon_worker;

static void log_append(uintptr_t s, uintptr_t e)
{
	uint64_t h = atomic_load_explicit(&mon_log_head, memory_order_relaxed);
	struct rc_log_slot *slot = &mon_log[h % RC_LOG_SIZE];
	/* The head that says an append is under way (h) is seen before
	 * what it overwrites: see rc_monitor_drain(). */
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&slot->s, s, memory_order_relaxed);
	atomic_store_explicit(&slot->e, e, memory_order_relaxed);
	/* Release: a drainer that sees the new head sees the slot. */
	atomic_store_explicit(&mon_log_head, h + 1, memory_order_release);
}

/* Nothing is ever write-protected, so no fault should reach us; if a
 * kernel sends one anyway, lift the protection and wake the thread rather
 * than leave it hanging. */
static void answer_fault(int uffd, uint64_t addr)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	struct uffdio_writeprotect wp = {
		.range = {.start = addr & ~(ps - 1), .len = ps},
		.mode = 0,
	};
	if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp)) {
		struct uffdio_range r = wp.range;
		ioctl(uffd, UFFDIO_WAKE, &r);
	}
}

/* One batch: announce it, read what the kernel queued, log the ranges. */
static void monitor_batch(int uffd)
{
	struct uffd_msg m[64];
	/* Announce before read(): read() releases the unmapping threads, and
	 * whatever they do next must see that a batch is unapplied. */
	uint64_t b = atomic_fetch_add(&rc_monitor_started, 1) + 1;
	ssize_t n = read(uffd, m, sizeof(m));
	bool any = false;
	for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof(m[0]); i++) {
		switch (m[i].event) {
		case UFFD_EVENT_UNMAP:
		case UFFD_EVENT_REMOVE:
			log_append(m[i].arg.remove.start, m[i].arg.remove.end);
			any = true;
			break;
		case UFFD_EVENT_REMAP:
			log_append(m[i].arg.remap.from,
				   m[i].arg.remap.from + m[i].arg.remap.len);
			any = true;
			break;
		case UFFD_EVENT_PAGEFAULT:
			answer_fault(uffd, m[i].arg.pagefault.address);
			break;
		default:
			break;
		}
	}
	atomic_store_explicit(&mon_done, b, memory_order_release);
	if (any) {
		uint64_t one = 1;
		ssize_t w = write(mon_wakefd, &one, sizeof(one));
		(void)w; /* eventfd write cannot fail short of overflow */
	}
}

static void block_signals(void)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
}

static void *monitor_main(void *arg)
{
	int uffd = (int)(intptr_t)arg;
	struct pollfd p[2] = {{.fd = uffd, .events = POLLIN},
			      {.fd = mon_stopfd, .events = POLLIN}};
	block_signals();
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		if (p[0].revents & POLLIN)
			monitor_batch(uffd);
		else if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL))
			break;
	}
	/* Closing here, not after join: see the deadlock rules above. */
	atomic_store(&mon_uffd, -1);
	close(uffd);
	return NULL;
}

static void *worker_main(void *arg)
{
	(void)arg;
	struct pollfd p[2] = {{.fd = mon_wakefd, .events = POLLIN},
			      {.fd = mon_stopfd, .events = POLLIN}};
	block_signals();
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		uint64_t v;
		if (read(mon_wakefd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			break;
		pthread_mutex_lock(&mon_subs_lock);
		for (struct rc_monitor_sub *s = mon_subs; s; s = s->next)
			regcache_apply_events(s->cache);
		pthread_mutex_unlock(&mon_subs_lock);
	}
	return NULL;
}

static int uffd_register(int uffd, uintptr_t s, uintptr_t e)
{
	struct uffdio_register r = {
		.range = {.start = s, .len = e - s},
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	return ioctl(uffd, UFFDIO_REGISTER, &r) ? -errno : 0;
}

/* Open a userfaultfd the way this kernel allows: user-mode-only first (no
 * privilege needed since Linux 5.11), then a full one (root or
 * vm.unprivileged_userfaultfd=1), then /dev/userfaultfd (Linux 6.1). */
static int open_uffd(struct squall_error *why)
{
	int flags = O_CLOEXEC | O_NONBLOCK;
	int fd = (int)syscall(SYS_userfaultfd, flags | UFFD_USER_MODE_ONLY);
	if (fd >= 0)
		return fd;
	int e1 = errno;
	fd = (int)syscall(SYS_userfaultfd, flags);
	if (fd >= 0)
		return fd;
	int e2 = errno;
	int e3 = ENOENT;
#ifdef USERFAULTFD_IOC_NEW
	int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (dev >= 0) {
		fd = ioctl(dev, USERFAULTFD_IOC_NEW, flags);
		e3 = errno;
		close(dev);
		if (fd >= 0)
			return fd;
	} else {
		e3 = errno;
	}
#endif
	return squall_error_set(why, -e2,
		"userfaultfd refused: user-mode-only: %s; full: %s "
		"(see vm.unprivileged_userfaultfd, seccomp); /dev/userfaultfd: %s",
		strerror(e1), strerror(e2), strerror(e3));
}

/* Check that write-protect registration works (Linux >= 5.7) on an
 * anonymous page. The probe page is unregistered before it is unmapped:
 * no monitor runs yet to read the unmap event the kernel would wait on. */
static int probe_wp(int uffd, struct squall_error *why)
{
	long ps = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, (size_t)ps, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return squall_error_set(why, -errno, "mmap for the probe: %s",
					strerror(errno));
	int rc = uffd_register(uffd, (uintptr_t)p, (uintptr_t)p + (size_t)ps);
	if (rc == 0) {
		struct uffdio_range r = {.start = (uintptr_t)p, .len = (size_t)ps};
		ioctl(uffd, UFFDIO_UNREGISTER, &r);
	}
	munmap(p, (size_t)ps);
	if (rc)
		return squall_error_set(why, rc,
			"userfaultfd write-protect registration refused (%s): "
			"needs Linux >= 5.7", strerror(-rc));
	return 0;
}

static int monitor_start(struct squall_error *why)
{
	int uffd = open_uffd(why);
	if (uffd < 0)
		return uffd;
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE |
			    UFFD_FEATURE_EVENT_REMAP,
	};
	int rc;
	if (ioctl(uffd, UFFDIO_API, &api)) {
		rc = squall_error_set(why, -errno,
			"userfaultfd has no unmap/remove events (%s): needs Linux >= 4.11",
			strerror(errno));
		goto fail_fd;
	}
	rc = probe_wp(uffd, why);
	if (rc)
		goto fail_fd;
	mon_stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	mon_wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (mon_stopfd < 0 || mon_wakefd < 0) {
		rc = squall_error_set(why, -errno, "eventfd: %s", strerror(errno));
		goto fail_ev;
	}
	atomic_store(&mon_uffd, uffd);
	rc = -pthread_create(&mon_thread, NULL, monitor_main,
			     (void *)(intptr_t)uffd);
	if (rc) {
		squall_error_set(why, rc, "monitor thread: %s", strerror(-rc));
		atomic_store(&mon_uffd, -1);
		goto fail_ev;
	}
	rc = -pthread_create(&mon_worker, NULL, worker_main, NULL);
	if (rc) {
		squall_error_set(why, rc, "monitor worker thread: %s",
				 strerror(-rc));
		uint64_t one = 1;
		if (write(mon_stopfd, &one, sizeof(one)) < 0)
			abort(); /* an eventfd write of 1 cannot fail */
		pthread_join(mon_thread, NULL); /* closes uffd */
		close(mon_stopfd);
		close(mon_wakefd);
		mon_stopfd = mon_wakefd = -1;
		return rc;
	}
	pthread_setname_np(mon_thread, "squall-uffd");
	pthread_setname_np(mon_worker, "squall-uffd-wk");
	return 0;
fail_ev:
	if (mon_stopfd >= 0)
		close(mon_stopfd);
	if (mon_wakefd >= 0)
		close(mon_wakefd);
	mon_stopfd = mon_wakefd = -1;
fail_fd:
	close(uffd);
	return rc;
}

static void monitor_stop(void)
{
	uint64_t one = 1;
	if (write(mon_stopfd, &one, sizeof(one)) < 0)
		abort(); /* an eventfd write of 1 cannot fail */
	/* The worker first: if joining it unmaps a watched stack, the
	 * monitor is still there to read the event (or has closed the fd). */
	pthread_join(mon_worker, NULL);
	pthread_join(mon_thread, NULL);
	close(mon_stopfd);
	close(mon_wakefd);
	mon_stopfd = mon_wakefd = -1;
}

/* A forked child has the parent's monitor state but not its threads: it
 * starts with no monitor (caches inherited through fork must not be used in
 * the child, like the registrations in them). */
static void monitor_forget_in_child(void)
{
	int uffd = atomic_load(&mon_uffd);
	if (uffd >= 0)
		close(uffd);
	if (mon_stopfd >= 0)
		close(mon_stopfd);
	if (mon_wakefd >= 0)
		close(mon_wakefd);
	atomic_store(&mon_uffd, -1);
	mon_stopfd = mon_wakefd = -1;
	mon_users = 0;
	mon_subs = NULL;
	pthread_mutex_init(&mon_lock, NULL);
	pthread_mutex_init(&mon_subs_lock, NULL);
}

/* liburcu needs its call_rcu threads and reader registry paused around
 * fork(), or a child that uses RCU waits forever on a lock or a thread
 * that did not survive the fork. */
static void fork_prepare(void)
{
	urcu_bp_call_rcu_before_fork();
	urcu_bp_before_fork();
}

static void fork_parent(void)
{
	urcu_bp_after_fork_parent();
	urcu_bp_call_rcu_after_fork_parent();
}

static void fork_child(void)
{
	urcu_bp_after_fork_child();
	urcu_bp_call_rcu_after_fork_child();
	monitor_forget_in_child();
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void install_fork_handlers(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void rc_fork_safety(void)
{
	pthread_once(&fork_once, install_fork_handlers);
}

int rc_monitor_join(struct regcache *c, struct squall_error *why)
{
	struct rc_monitor_sub *sub = malloc(sizeof(*sub));
	if (!sub)
		return squall_error_set(why, -ENOMEM, "out of memory");
	pthread_mutex_lock(&mon_lock);
	if (mon_users == 0) {
		int rc = monitor_start(why);
		if (rc) {
			pthread_mutex_unlock(&mon_lock);
			free(sub);
			return rc;
		}
	}
	mon_users++;
	sub->cache = c;
	pthread_mutex_lock(&mon_subs_lock);
	sub->next = mon_subs;
	mon_subs = sub;
	pthread_mutex_unlock(&mon_subs_lock);
	pthread_mutex_unlock(&mon_lock);
	return 0;
}

void rc_monitor_leave(struct regcache *c)
{
	struct rc_monitor_sub *gone = NULL;
	pthread_mutex_lock(&mon_lock);
	/* Taking the subscriber lock waits for a worker pass over c. */
	pthread_mutex_lock(&mon_subs_lock);
	for (struct rc_monitor_sub **p = &mon_subs; *p; p = &(*p)->next) {
		if ((*p)->cache == c) {
			gone = *p;
			*p = gone->next;
			break;
		}
	}
	pthread_mutex_unlock(&mon_subs_lock);
	if (gone && --mon_users == 0)
		monitor_stop();
	pthread_mutex_unlock(&mon_lock);
	free(gone);
}

bool rc_monitor_watch(uintptr_t s, uintptr_t e)
{
	int uffd = atomic_load(&mon_uffd);
	if (uffd < 0)
		return false;
	uintptr_t gs = s & ~(RC_WATCH_GRANULE - 1);
	uintptr_t ge = (e + RC_WATCH_GRANULE - 1) & ~(RC_WATCH_GRANULE - 1);
	if (ge > gs && uffd_register(uffd, gs, ge) == 0)
		return true;
	/* A neighbour in the granule may be a file mapping or belong to
	 * another userfaultfd: watch exactly the range instead. */
	return uffd_register(uffd, s, e) == 0;
}

uint64_t rc_monitor_log_pos(void)
{
	return atomic_load_explicit(&mon_log_head, memory_order_acquire);
}

bool rc_monitor_drain(uint64_t target, uint64_t *pos,
		      void (*fn)(void *arg, uintptr_t s, uintptr_t e), void *arg)
{
	/* The monitor is between its announcement and its log update: it
	 * only reads and appends, so this wait is short. */
	while (atomic_load_explicit(&mon_done, memory_order_acquire) < target)
		sched_yield();
	uint64_t head = atomic_load_explicit(&mon_log_head, memory_order_acquire);
	/* Event i lives in slot i % RC_LOG_SIZE until the append of event
	 * i + RC_LOG_SIZE, which writes it while the head still says
	 * i + RC_LOG_SIZE: so the log holds RC_LOG_SIZE - 1 events that can
	 * be read for sure. */
	if (head - *pos >= RC_LOG_SIZE) {
		*pos = head;
		return false;
	}
	for (uint64_t i = *pos; i < head; i++) {
		struct rc_log_slot *slot = &mon_log[i % RC_LOG_SIZE];
		fn(arg, atomic_load_explicit(&slot->s, memory_order_relaxed),
		   atomic_load_explicit(&slot->e, memory_order_relaxed));
	}
	/* Slots read above may have been overwritten meanwhile: an append
	 * that began before the reads ended shows in the head read after
	 * them. */
	atomic_thread_fence(memory_order_acquire);
	uint64_t now = atomic_load_explicit(&mon_log_head, memory_order_acquire);
	bool ok = now - *pos < RC_LOG_SIZE;
	*pos = head;
	return ok;
}
