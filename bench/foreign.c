/*
 * foreign_bench - ordered sends through the group API from three kinds of
 * memory, one member sending, the others receiving:
 *   lease     a buffer leased from the group's allocator
 *             (group_ordered_send; the group gives it back);
 *   in_place  malloc'd memory sent with group_send_mem_async (in place
 *             from group.copy_threshold and above smc.max_payload, else
 *             copied), up to 8 buffers in flight (as many as half the
 *             region holds: every receiver leases one per message);
 *   in_place_wait  the same with group_send_mem, one at a time (each
 *             call returns once every member has the message);
 *   copy      the same memory through group_send_copy (always copied).
 * For each size the sender sends `reps` messages and times from the first
 * send to its own delivery of the last (a message is delivered on its
 * sender once every member has it), so each figure is bytes every member
 * received per second of one sender's stream. Neither side touches the
 * payload: what is measured is the path, not a checksum.
 *
 * usage: foreign_bench CFG ID [--sizes KiB,...] [--budget-mib M]
 * Member 0 prints one line per (mode, size):
 *   RESULT mode=M size=B reps=R MBps=X in_place=N copies=C
 * and every member ends when member 0's last message (a 1-byte "end") is
 * delivered.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <squall/group.h>

/* Buffers of foreign memory for the in-place modes: several, so that
 * group_send_mem_async has more than one in flight. */
#define NBUF_MAX 8

struct bench {
	uint32_t id;
	struct group *g;
	char *buf[NBUF_MAX];
	unsigned nbuf;
	atomic_bool busy[NBUF_MAX];
	atomic_uint_fast64_t own;  /* own messages delivered */
	atomic_bool end;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool deliver(void *ctx, uint32_t sender, uint64_t seq,
		    const struct buf_desc *d)
{
	struct bench *b = ctx;

	(void)seq;
	if (sender == 0 && d->len == 1)
		atomic_store(&b->end, true);
	if (sender == b->id)
		atomic_fetch_add(&b->own, 1);
	return false;
}

static void mem_done(void *ctx, const void *ptr, size_t len, int code,
		     const char *why)
{
	struct bench *b = ctx;

	(void)len;
	if (code) {
		fprintf(stderr, "foreign_bench: in-place send failed: %s\n", why);
		exit(1);
	}
	for (unsigned i = 0; i < b->nbuf; i++)
		if (b->buf[i] == ptr)
			atomic_store(&b->busy[i], false);
}

static void failure(void *ctx, uint32_t member, const char *why)
{
	struct bench *b = ctx;

	fprintf(stderr, "foreign_bench: member %u: member %u failed: %s\n",
		b->id, member, why);
	/* Without the sender (or this member) the run cannot finish. */
	if (member == 0 || member == b->id)
		exit(1);
}

static void die(const char *what, const struct squall_error *err)
{
	fprintf(stderr, "foreign_bench: %s: %s\n", what, err ? err->msg : "");
	exit(1);
}

/* Wait until n own messages in all were delivered here. */
static void wait_own(struct bench *b, uint64_t n)
{
	while (atomic_load(&b->own) < n)
		usleep(50);
}

enum mode { M_LEASE, M_IN_PLACE, M_IN_PLACE_WAIT, M_COPY };
static const char *const mode_name[] = { "lease", "in_place", "in_place_wait",
					 "copy" };

static void run(struct bench *b, enum mode mode, size_t size, unsigned reps,
		void *mem, bool print)
{
	struct alloc *a = group_get_allocator(b->g);
	struct squall_error err = { 0 };
	struct group_stats s0, s1;
	uint64_t base = atomic_load(&b->own);
	double t0, t;

	group_stats(b->g, &s0);
	t0 = now_s();
	for (unsigned i = 0; i < reps; i++) {
		int r;

		if (mode == M_LEASE) {
			struct buf_desc d;
			size_t sz = size;

			r = alloc_lease_wait(a, 1, &sz, &d, UINT32_MAX);
			if (r)
				die("alloc_lease_wait", NULL);
			r = group_ordered_send(b->g, &d, &err);
		} else if (mode == M_IN_PLACE) {
			unsigned k = i % b->nbuf;

			while (atomic_load(&b->busy[k]))
				usleep(50);
			atomic_store(&b->busy[k], true);
			r = group_send_mem_async(b->g, b->buf[k], size, -1, &err);
			if (r != GROUP_SENT_IN_PLACE)
				atomic_store(&b->busy[k], false);
			if (r > 0)
				r = 0;
		} else if (mode == M_IN_PLACE_WAIT) {
			r = group_send_mem(b->g, mem, size, -1, &err);
		} else {
			r = group_send_copy(b->g, mem, size, &err);
		}
		if (r)
			die(mode_name[mode], &err);
	}
	wait_own(b, base + reps);
	for (unsigned k = 0; k < b->nbuf; k++)
		while (atomic_load(&b->busy[k]))
			usleep(50);
	t = now_s() - t0;
	group_stats(b->g, &s1);
	if (!print)
		return;
	printf("RESULT mode=%s size=%zu reps=%u MBps=%.2f in_place=%" PRIu64
	       " copies=%" PRIu64 "\n", mode_name[mode], size, reps,
	       (double)size * reps / t / 1048576.0,
	       s1.sent_in_place - s0.sent_in_place, s1.copies - s0.copies);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static struct bench bench;
	struct bench *b = &bench;
	struct group_callbacks cb = { .deliver = deliver, .failure = failure,
				      .send_mem_done = mem_done };
	struct squall_error err = { 0 };
	const char *sizes = "1,4,16,64,256,1024,4096,16384,65536";
	unsigned budget_mib = 64;
	const struct group_config *cfg;
	char one = 1;

	if (argc < 3) {
		fprintf(stderr, "usage: foreign_bench CFG ID [--sizes KiB,...] "
			"[--budget-mib M]\n");
		return 2;
	}
	b->id = (uint32_t)strtoul(argv[2], NULL, 10);
	for (int i = 3; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--sizes"))
			sizes = argv[i + 1];
		else if (!strcmp(argv[i], "--budget-mib"))
			budget_mib = (unsigned)strtoul(argv[i + 1], NULL, 10);
	}
	b->g = group_create(argv[1], b->id, &cb, b, &err);
	if (!b->g)
		die("group_create", &err);
	cfg = group_get_config(b->g);
	if (group_barrier(b->g, 600000, &err))
		die("group_barrier", &err);
	if (b->id == 0) {
		char *list = strdup(sizes), *save = NULL;

		printf("CONFIG copy_threshold=%" PRIu64 " smc_max_payload=%u "
		       "members=%u\n", cfg->copy_threshold, cfg->smc_max_payload,
		       group_nmembers(b->g));
		for (char *s = strtok_r(list, ",", &save); s;
		     s = strtok_r(NULL, ",", &save)) {
			size_t size = (size_t)strtoul(s, NULL, 10) * 1024;
			uint64_t n = (uint64_t)budget_mib * 1048576 / size;
			unsigned reps = n < 6 ? 6 : n > 400 ? 400 : (unsigned)n;
			char *mem;

			/* As many buffers as half a receiver's region holds
			 * (each receiver leases one per message in flight),
			 * up to NBUF_MAX. */
			b->nbuf = (unsigned)(cfg->region_size / 2 / size);
			if (b->nbuf > NBUF_MAX)
				b->nbuf = NBUF_MAX;
			if (b->nbuf < 1)
				b->nbuf = 1;
			for (unsigned k = 0; k < b->nbuf; k++) {
				b->buf[k] = malloc(size);
				if (!b->buf[k])
					die("malloc", NULL);
				memset(b->buf[k], 0x5a, size);
			}
			mem = b->buf[0];
			/* One of each first: registrations and slabs warm. */
			run(b, M_IN_PLACE_WAIT, size, 1, mem, false);
			run(b, M_IN_PLACE, size, b->nbuf, mem, false);
			for (int m = M_LEASE; m <= M_COPY; m++)
				run(b, (enum mode)m, size, reps, mem, true);
			for (unsigned k = 0; k < b->nbuf; k++)
				free(b->buf[k]);
		}
		free(list);
		if (group_send_copy(b->g, &one, 1, &err))
			die("end", &err);
	}
	while (!atomic_load(&b->end))
		usleep(1000);
	if (group_close(b->g, 600000, &err))
		die("group_close", &err);
	return 0;
}
