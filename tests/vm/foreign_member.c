/*
 * foreign_member - one member of foreign3.sh: ordered sends of memory
 * outside the region through group_send_mem().
 *
 * Every member creates the group and checks every message it delivers:
 * a header {magic, round, flags, seed, len} and then bytes that follow
 * from (seed, offset), so that a message carrying another message's bytes
 * (a stale registration) or a mix of two is caught. Member 0 sends, in
 * rounds, from:
 *   - malloc'd memory (mmap'd by glibc at this size), freed after each
 *     send and allocated again (at the same address: the kernel reuses
 *     the hole) with new bytes;
 *   - an mmap'd range, unmapped and mapped again at the same address;
 *   - two halves of one range, then the whole range (one cached
 *     registration over both), then the whole range again after its
 *     second quarter was unmapped and mapped anew;
 *   - three mapped ranges in flight at once (group_send_mem_async), each
 *     unmapped once its send_mem_done upcall said it is done with;
 *   - small foreign memory (copied: counted in copies);
 *   - memory not mapped (refused with -EFAULT, nothing sent);
 *   - a range another thread unmaps while it is being sent: the send
 *     either completes (every member has the bytes it held) or fails
 *     with -EFAULT and no member delivers it.
 * It prints one SEND line per round with the call's result, and the
 * counters before and after the in-place rounds, and ends with a 1-byte
 * message. Every member closes once it delivered that one, and prints
 *   FOREIGN member=I delivered=N bad=B hash=H
 * where hash covers the rounds delivered, in order.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <squall/group.h>

#define MAGIC 0x6e67696572f0f0f0ull
#define F_VOLATILE 1u /* the sender unmaps it: not read on the sender */
#define MIB (1024u * 1024u)

struct hdr {
	uint64_t magic;
	uint32_t round;
	uint32_t flags;
	uint64_t seed;
	uint64_t len;
};

struct member {
	uint32_t id;
	struct group *g;
	uint64_t delivered, bad, hash;
	volatile bool end;        /* member 0's last message, 1 byte */
	unsigned async_done;      /* send_mem_done upcalls, code 0 */
	unsigned async_failed;
};

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The message of `round` in [p, p + len): header, then the pattern. */
static void fill(void *p, size_t len, uint32_t round, uint32_t flags,
		 uint64_t seed)
{
	struct hdr h = { MAGIC, round, flags, seed, len };
	uint64_t *w = p;

	for (size_t i = sizeof(h) / 8; i < len / 8; i++)
		w[i] = mix(seed ^ i);
	memcpy(p, &h, sizeof(h));
}

static bool check(const void *p, size_t len, struct hdr *h)
{
	const uint64_t *w = p;

	if (len < sizeof(*h) || len % 8)
		return false;
	memcpy(h, p, sizeof(*h));
	if (h->magic != MAGIC || h->len != len)
		return false;
	for (size_t i = sizeof(*h) / 8; i < len / 8; i++)
		if (w[i] != mix(h->seed ^ i))
			return false;
	return true;
}

static bool deliver(void *ctx, uint32_t sender, uint64_t seq,
		    const struct buf_desc *d)
{
	struct member *m = ctx;
	struct hdr h;
	bool ok;

	(void)seq;
	if (sender == 0 && d->len == 1) {
		__atomic_store_n(&m->end, true, __ATOMIC_RELEASE);
		return false;
	}
	memcpy(&h, d->ptr, d->len < sizeof(h) ? d->len : sizeof(h));
	if (sender == m->id && d->len >= sizeof(h) && h.magic == MAGIC &&
	    (h.flags & F_VOLATILE))
		ok = h.len == d->len; /* its memory may be gone already */
	else
		ok = check(d->ptr, d->len, &h);
	if (!ok) {
		m->bad++;
		fprintf(stderr, "foreign_member: member %u: message of %zu "
			"bytes from member %u (round %u) holds the wrong bytes\n",
			m->id, d->len, sender, h.round);
	}
	m->delivered++;
	m->hash = mix(m->hash ^ ((uint64_t)h.round << 32 | (d->len / 4096)));
	return false;
}

static void mem_done(void *ctx, const void *ptr, size_t len, int code,
		     const char *why)
{
	struct member *m = ctx;

	(void)ptr;
	(void)len;
	if (code) {
		fprintf(stderr, "foreign_member: member %u: in-place send "
			"failed: %s\n", m->id, why);
		__atomic_add_fetch(&m->async_failed, 1, __ATOMIC_RELEASE);
	}
	__atomic_add_fetch(&m->async_done, 1, __ATOMIC_RELEASE);
}

static void die(const struct member *m, const char *what,
		const struct squall_error *err)
{
	fprintf(stderr, "foreign_member: member %u: %s: %s\n", m->id, what,
		err ? err->msg : strerror(errno));
	exit(1);
}

static uint32_t round_no;

/* Send [p, p + len) filled as the next round; print its line. */
static int send_round(struct member *m, void *p, size_t len, uint32_t flags,
		      const char *what)
{
	struct squall_error err = { 0 };
	uint32_t r = round_no++;
	int rc;

	fill(p, len, r, flags, mix(r + 1000));
	rc = group_send_mem(m->g, p, len, -1, &err);
	printf("SEND round=%u len=%zu rc=%d what=%s addr=%p%s%s\n", r, len, rc,
	       what, p, rc ? " why=" : "", rc ? err.msg : "");
	fflush(stdout);
	return rc;
}

static void must(struct member *m, int rc, const char *what)
{
	if (rc) {
		fprintf(stderr, "foreign_member: member %u: %s: %s\n", m->id,
			what, strerror(-rc));
		exit(1);
	}
}

static void *map(size_t len, void *at)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		       MAP_ANONYMOUS | (at ? MAP_FIXED_NOREPLACE : 0), -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

struct unmapper {
	void *p;
	size_t len;
	unsigned delay_ms;
};

static void *unmap_later(void *arg)
{
	struct unmapper *u = arg;
	struct timespec ts = { 0, (long)u->delay_ms * 1000000L };

	nanosleep(&ts, NULL);
	munmap(u->p, u->len);
	return NULL;
}

static void stats_line(struct member *m, const char *when)
{
	struct group_stats st;

	group_stats(m->g, &st);
	printf("STATS when=%s copies=%" PRIu64 " bytes_copied=%" PRIu64
	       " sent_in_place=%" PRIu64 " bytes_in_place=%" PRIu64
	       " cache_hits=%" PRIu64 " cache_misses=%" PRIu64
	       " payload_copies=%" PRIu64 " epoch=%" PRIu64 " resent=%" PRIu64
	       "\n", when, st.copies, st.bytes_copied, st.sent_in_place,
	       st.bytes_in_place, st.cache_hits, st.cache_misses,
	       st.payload_copies, st.epoch, st.resent);
	fflush(stdout);
}

static void sender(struct member *m)
{
	size_t len = MIB;
	unsigned same = 0;
	void *first = NULL, *p, *q;
	pthread_t t;
	struct unmapper u;

	/* malloc'd memory: glibc maps it at this size, and the threshold
	 * fixed keeps it so after a free. */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	stats_line(m, "before");
	for (int i = 0; i < 4; i++) {
		p = malloc(len);
		if (!p)
			die(m, "malloc", NULL);
		if (!first)
			first = p;
		else if (p == first)
			same++;
		must(m, send_round(m, p, len, 0, "malloc"), "malloc send");
		free(p);
	}
	printf("MALLOC same_addr=%u of 3\n", same);

	/* Unmapped and mapped again at the same address. */
	p = map(2 * MIB, NULL);
	if (!p)
		die(m, "mmap", NULL);
	must(m, send_round(m, p, 2 * MIB, 0, "mmap"), "mmap send");
	munmap(p, 2 * MIB);
	q = map(2 * MIB, p);
	printf("REMAP same_addr=%d\n", q == p);
	if (!q)
		die(m, "mmap at the same address", NULL);
	must(m, send_round(m, q, 2 * MIB, 0, "remap"), "remap send");
	munmap(q, 2 * MIB);

	/* Two halves, the whole (one registration over both), then its
	 * second quarter unmapped and mapped anew. */
	p = map(4 * MIB, NULL);
	if (!p)
		die(m, "mmap", NULL);
	must(m, send_round(m, p, 2 * MIB, 0, "half1"), "half send");
	must(m, send_round(m, (char *)p + 2 * MIB, 2 * MIB, 0, "half2"),
	     "half send");
	must(m, send_round(m, p, 4 * MIB, 0, "whole"), "whole send");
	munmap((char *)p + MIB, MIB);
	q = map(MIB, (char *)p + MIB);
	printf("PARTIAL remapped=%d\n", q == (char *)p + MIB);
	if (!q)
		die(m, "mmap of the quarter", NULL);
	must(m, send_round(m, p, 4 * MIB, 0, "whole_after_partial"),
	     "whole send after the partial unmap");
	munmap(p, 4 * MIB);
	stats_line(m, "in_place");

	/* Three in flight at once (group_send_mem_async), each unmapped once
	 * its send_mem_done upcall came. */
	{
		void *a[3];
		struct squall_error err = { 0 };
		int n = 0;

		for (int i = 0; i < 3; i++) {
			uint32_t r = round_no++;
			int rc;

			a[i] = map(2 * MIB, NULL);
			if (!a[i])
				die(m, "mmap", NULL);
			fill(a[i], 2 * MIB, r, 0, mix(r + 1000));
			rc = group_send_mem_async(m->g, a[i], 2 * MIB, -1, &err);
			printf("SEND round=%u len=%u rc=%d what=async addr=%p%s%s\n",
			       r, 2 * MIB, rc == GROUP_SENT_IN_PLACE ? 0 : rc,
			       a[i], rc < 0 ? " why=" : "", rc < 0 ? err.msg : "");
			if (rc != GROUP_SENT_IN_PLACE)
				die(m, "group_send_mem_async", &err);
			n++;
		}
		while (__atomic_load_n(&m->async_done, __ATOMIC_ACQUIRE) < (unsigned)n)
			usleep(1000);
		printf("ASYNC done=%u failed=%u\n", m->async_done, m->async_failed);
		for (int i = 0; i < 3; i++)
			munmap(a[i], 2 * MIB);
	}
	stats_line(m, "async");

	/* Small foreign memory: copied. */
	p = malloc(16384);
	q = malloc(4096);
	if (!p || !q)
		die(m, "malloc", NULL);
	must(m, send_round(m, p, 16384, 0, "copy16k"), "copy send");
	must(m, send_round(m, q, 4096, 0, "copy4k"), "copy send");
	free(p);
	free(q);
	stats_line(m, "copied");

	/* Not mapped at all: refused before anything goes out. */
	p = map(2 * MIB, NULL);
	if (!p)
		die(m, "mmap", NULL);
	munmap(p, 2 * MIB);
	{
		struct squall_error err = { 0 };
		int rc = group_send_mem(m->g, p, 2 * MIB, -1, &err);

		printf("UNMAPPED rc=%d why=%s\n", rc, err.msg);
	}

	/* Unmapped while it is sent. */
	u.len = 32 * MIB;
	u.p = map(u.len, NULL);
	u.delay_ms = 30;
	if (!u.p)
		die(m, "mmap", NULL);
	fill(u.p, u.len, round_no, F_VOLATILE, mix(round_no + 1000));
	if (pthread_create(&t, NULL, unmap_later, &u))
		die(m, "pthread_create", NULL);
	{
		struct squall_error err = { 0 };
		uint32_t r = round_no++;
		int rc = group_send_mem(m->g, u.p, u.len, -1, &err);

		printf("SEND round=%u len=%zu rc=%d what=unmapped addr=%p%s%s\n",
		       r, u.len, rc, u.p, rc ? " why=" : "", rc ? err.msg : "");
		if (rc && rc != -EFAULT)
			die(m, "send of memory unmapped during the send", &err);
	}
	pthread_join(t, NULL);
	/* One more after it: the group goes on. */
	p = malloc(len);
	if (!p)
		die(m, "malloc", NULL);
	must(m, send_round(m, p, len, 0, "after"), "send after the unmap");
	free(p);
	stats_line(m, "end");
}

/* --stream K: one in-place send of 4 MiB from a mapping kept to the
 * end; K in-place sends of 4 MiB, each from memory malloc'd for it and
 * freed after (foreign_kill3.sh kills a member meanwhile); then, once the
 * group is in a later view, the kept mapping again, with new bytes. Its
 * registration, made in the first view, is still good: the counters
 * around that send (STATS when=kept_before / kept_after) show whether
 * the view change kept it cached. */
static void stream(struct member *m, unsigned k)
{
	void *kept = map(4 * MIB, NULL);
	struct group_stats st;
	unsigned waited = 0;

	if (!kept)
		die(m, "mmap", NULL);
	must(m, send_round(m, kept, 4 * MIB, 0, "kept"), "send from the kept mapping");
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	for (unsigned i = 0; i < k; i++) {
		void *p = malloc(4 * MIB);

		if (!p)
			die(m, "malloc", NULL);
		must(m, send_round(m, p, 4 * MIB, 0, "stream"), "stream send");
		free(p);
	}
	stats_line(m, "end");
	for (group_stats(m->g, &st); st.epoch == 0 && waited < 300000;
	     group_stats(m->g, &st), waited += 10)
		usleep(10000);
	stats_line(m, "kept_before");
	must(m, send_round(m, kept, 4 * MIB, 0, "kept_again"),
	     "send from the kept mapping in the next view");
	stats_line(m, "kept_after");
	munmap(kept, 4 * MIB);
}

int main(int argc, char **argv)
{
	static struct member mem;
	struct member *m = &mem;
	struct group_callbacks cb = { .deliver = deliver,
				      .send_mem_done = mem_done };
	struct squall_error err = { 0 };
	struct group_config *cfg = calloc(1, sizeof(*cfg));
	const char *sets[8], *path = NULL;
	size_t nsets = 0;
	unsigned nstream = 0;

	m->id = UINT32_MAX;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			path = argv[++i];
		else if (!strcmp(argv[i], "--id") && i + 1 < argc)
			m->id = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--set") && i + 1 < argc && nsets < 8)
			sets[nsets++] = argv[++i];
		else if (!strcmp(argv[i], "--stream") && i + 1 < argc)
			nstream = (unsigned)strtoul(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: foreign_member --config F --id I "
				"[--set k=v]... [--stream K]\n");
			return 2;
		}
	}
	if (!path || m->id == UINT32_MAX || !cfg)
		return 2;
	if (group_config_load_with(path, NULL, sets, nsets, cfg, &err))
		die(m, "config", &err);
	m->g = group_create_cfg(cfg, m->id, &cb, m, &err);
	if (!m->g)
		die(m, "group_create", &err);
	if (group_barrier(m->g, 120000, &err))
		die(m, "barrier", &err);
	if (m->id == 0) {
		char one = 1;

		if (nstream)
			stream(m, nstream);
		else
			sender(m);
		if (group_send_mem(m->g, &one, 1, -1, &err))
			die(m, "the last send", &err);
	}
	/* Every member closes once it has everything: a member that closed
	 * earlier would leave the group (a clean leave), not flush it. */
	while (!__atomic_load_n(&m->end, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (group_close(m->g, 300000, &err))
		die(m, "group_close", &err);
	printf("FOREIGN member=%u delivered=%" PRIu64 " bad=%" PRIu64
	       " hash=%016" PRIx64 "\n", m->id, m->delivered, m->bad, m->hash);
	free(cfg);
	return 0;
}
