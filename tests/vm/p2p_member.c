/*
 * p2p_member - one member of p2p_large2.sh: point-to-point messages of
 * any size through the group API, between member 0 (sender) and member 1
 * (receiver).
 *
 * Every message starts with {magic, tag, len} and goes on with bytes that
 * follow from (tag, offset), so the receiver checks every byte, and a
 * message carrying another's bytes, or its own shifted, is caught. Member
 * 1 answers each message (and each command) with a small ack through
 * group_p2p_send_mem from its upcall; member 0 waits for the ack before
 * the next step, so the steps follow one another without any sleep:
 *
 *   1  a lease of 1 MiB + 3 bytes (larger than one SEND) by
 *      group_p2p_send; its ack is 100 KiB of malloc'd memory sent from
 *      member 1's upcall (copied into a lease there: an upcall never
 *      waits), which member 0 checks byte by byte;
 *   2  member 1 fills its region with leases (command FILL); member 0
 *      sends a 16 MiB lease and then a small RELEASE: member 1 has no room
 *      for the first when it comes, keeps it, gives its leases back when
 *      RELEASE arrives, and then reads and delivers it (RELEASE is
 *      delivered first, and message 2 is whole);
 *   5  member 1 fills its region again; member 0 sends 16 MiB of malloc'd
 *      memory with group_p2p_send_mem: member 1 never gets room, refuses
 *      after its bound, and the call returns -ENOBUFS with the reason;
 *      then RELEASE;
 *      a length larger than group.region_size: -EMSGSIZE at once;
 *   3  1000 bytes from the stack by group_p2p_send_mem (the copy path);
 *   4  64 MiB of mmap'd memory by group_p2p_send_mem, in place through a
 *      use-once region: the call returns 0 once member 1 has read it, and
 *      member 1 checks every byte.
 * Member 1 runs with SQUALL_FAIL_AT=p2p_old_key:3: after answering
 * message 4 (its third read region) it READs it again with the old key,
 * which must fail (the library says so on stderr); that breaks the
 * connection, so it comes last and both members then wait for the group
 * to stop, close, and print their result lines:
 *   member 0: A.. B.. C.. D.. E.. F.. lines (step, rc, why), ACK lines,
 *             STATS p2p_sent=.. p2p_use_once=.. p2p_received=..
 *   member 1: RECV tag=T len=L ok=1 per message, and
 *             RESULT member=1 received=N bad=B order_ok=1 p2p_use_once=..
 * With --die, member 1 runs with SQUALL_DIE_AT=p2p_read_mid and dies
 * (kill -9, from the test hook) half way through reading 64 MiB that
 * member 0 sends in place: member 0's call must return -ENOTCONN (its
 * group of two stops), and it prints
 *   K die rc=R why=..
 * Exit status 0 only when everything expected came back right.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <squall/group.h>

#define MAGIC 0x70327032u
#define MIB ((size_t)1 << 20)
#define MAX_HOLDS 64
#define WAIT_S 300
#define ACK 1000u /* the ack of tag T has tag ACK + T */

enum { T_LEASE = 1, T_RETRY = 2, T_SMALL = 3, T_BIG = 4, T_REFUSED = 5,
       T_FILL = 100, T_RELEASE = 101 };

struct hdr {
	uint32_t magic;
	uint32_t tag;
	uint64_t len;
};

struct member {
	uint32_t id;
	struct group *g;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* what arrived (under lock) */
	uint32_t order[64];
	unsigned n;
	uint64_t bad;
	bool failed;
	/* member 1: the leases that fill its region (progress thread) */
	struct buf_desc holds[MAX_HOLDS];
	unsigned nholds;
};

/* The bytes of message `tag`: a header, then words that follow from the
 * tag and their offset (cheap enough to check 64 MiB inside an upcall). */
static uint64_t word(uint32_t tag, size_t i)
{
	return ((uint64_t)tag << 56) ^ (i * 0x9e3779b97f4a7c15ull);
}

static void fill(void *p, size_t len, uint32_t tag)
{
	struct hdr h = { MAGIC, tag, len };
	uint8_t *b = p;
	size_t i = sizeof(h);

	for (; i + 8 <= len; i += 8) {
		uint64_t w = word(tag, i);

		memcpy(b + i, &w, 8);
	}
	for (; i < len; i++)
		b[i] = (uint8_t)(tag + i);
	memcpy(p, &h, len < sizeof(h) ? len : sizeof(h));
}

/* Whether [p, p + len) is message tag whole; *tag from its header. */
static bool check(const void *p, size_t len, uint32_t *tag)
{
	const uint8_t *b = p;
	struct hdr h;
	size_t i = sizeof(h);

	if (len < sizeof(h))
		return false;
	memcpy(&h, p, sizeof(h));
	*tag = h.tag;
	if (h.magic != MAGIC || h.len != len)
		return false;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, b + i, 8);
		if (w != word(h.tag, i))
			return false;
	}
	for (; i < len; i++)
		if (b[i] != (uint8_t)(h.tag + i))
			return false;
	return true;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Send message tag of len bytes from memory of its own (upcall or not). */
static int send_msg(struct member *m, uint32_t to, uint32_t tag, size_t len)
{
	struct squall_error err = { 0 };
	void *p = malloc(len);
	int r;

	if (!p)
		return -ENOMEM;
	fill(p, len, tag);
	r = group_p2p_send_mem(__atomic_load_n(&m->g, __ATOMIC_ACQUIRE), to, p,
			       len, -1, &err);
	if (r)
		fprintf(stderr, "member %u: send of tag %u: %s\n", m->id, tag,
			err.msg);
	free(p);
	return r;
}

/* Member 1: lease 4 MiB pieces until the region has no room for one. */
static void fill_region(struct member *m)
{
	struct alloc *a = group_get_allocator(m->g);
	size_t sz = 4 * MIB;

	while (m->nholds < MAX_HOLDS &&
	       alloc_lease(a, 1, &sz, &m->holds[m->nholds]) == 0)
		m->nholds++;
}

static void release_region(struct member *m)
{
	struct alloc *a = group_get_allocator(m->g);

	while (m->nholds)
		alloc_release(a, &m->holds[--m->nholds]);
}

static void p2p_receive(void *ctx, uint32_t sender, const struct buf_desc *d)
{
	struct member *m = ctx;
	uint32_t tag = 0;
	bool ok = check(d->ptr, d->len, &tag);

	printf("RECV member=%u from=%u tag=%u len=%zu ok=%d\n", m->id, sender,
	       tag, d->len, ok);
	fflush(stdout);
	pthread_mutex_lock(&m->lock);
	if (!ok)
		m->bad++;
	if (m->n < 64)
		m->order[m->n++] = tag;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	if (m->id != 1 || !ok || tag >= ACK)
		return;
	if (tag == T_FILL)
		fill_region(m);
	if (tag == T_RELEASE)
		release_region(m);
	if (tag == T_BIG)
		return; /* the old key's READ breaks the connection now */
	/* From the upcall: copied into a lease and sent without waiting,
	 * whatever the size (the first ack is 100 KiB). */
	if (send_msg(m, sender, ACK + tag, tag == T_LEASE ? 100 << 10 : 64)) {
		pthread_mutex_lock(&m->lock);
		m->bad++;
		pthread_mutex_unlock(&m->lock);
	}
}

static bool deliver(void *ctx, uint32_t sender, uint64_t seq,
		    const struct buf_desc *d)
{
	(void)ctx, (void)sender, (void)seq, (void)d;
	return false;
}

static void on_failure(void *ctx, uint32_t member, const char *why)
{
	struct member *m = ctx;

	fprintf(stderr, "member %u: failure upcall: member %u: %s\n", m->id,
		member, why);
	pthread_mutex_lock(&m->lock);
	m->failed = true;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

static void on_send_failed(void *ctx, const struct buf_desc *d, int code,
			   const char *why)
{
	struct member *m = ctx;

	fprintf(stderr, "member %u: send_failed upcall: %zu bytes, %d: %s\n",
		m->id, d->len, code, why);
	pthread_mutex_lock(&m->lock);
	m->bad++;
	pthread_mutex_unlock(&m->lock);
}

/* Wait until tag has arrived (an ack, or a message), or the group failed;
 * false after WAIT_S seconds or a failure. */
static bool wait_for(struct member *m, uint32_t tag)
{
	uint64_t until = now_ms() + WAIT_S * 1000u;
	struct timespec ts;
	bool got;

	pthread_mutex_lock(&m->lock);
	for (;;) {
		got = false;
		for (unsigned i = 0; i < m->n && !got; i++)
			got = m->order[i] == tag;
		if (got || m->failed || now_ms() >= until)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&m->cond, &m->lock, &ts);
	}
	pthread_mutex_unlock(&m->lock);
	if (!got)
		fprintf(stderr, "member %u: tag %u never came\n", m->id, tag);
	return got;
}

/* Wait until the group stopped (the old key's READ broke the link). */
static bool wait_failed(struct member *m)
{
	uint64_t until = now_ms() + 120000;
	bool f;

	pthread_mutex_lock(&m->lock);
	while (!m->failed && now_ms() < until) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&m->cond, &m->lock, &ts);
	}
	f = m->failed;
	pthread_mutex_unlock(&m->lock);
	return f;
}

static int lease_send(struct member *m, uint32_t tag, size_t len)
{
	struct alloc *a = group_get_allocator(m->g);
	struct squall_error err = { 0 };
	struct buf_desc d;
	int r;

	if (alloc_lease(a, 1, &len, &d))
		return -ENOMEM;
	fill(d.ptr, len, tag);
	r = group_p2p_send(m->g, 1, &d, &err);
	if (r) {
		fprintf(stderr, "member 0: group_p2p_send tag %u: %s\n", tag,
			err.msg);
		alloc_release(a, &d);
	}
	return r;
}

static int sender(struct member *m, const struct group_config *cfg)
{
	struct squall_error err = { 0 };
	struct group_stats gs;
	uint64_t t0;
	int r, bad = 0;
	char small[1000];
	void *p;
	size_t big = 64 * MIB;

	/* 1: a lease larger than one SEND; its ack is large too. */
	r = lease_send(m, T_LEASE, MIB + 3);
	printf("A lease rc=%d len=%zu max=%zu\n", r, MIB + 3,
	       group_p2p_max(m->g));
	bad |= r || !wait_for(m, ACK + T_LEASE);

	/* 2: no room at the receiver when it comes; kept, read later. */
	r = send_msg(m, 1, T_FILL, 64);
	bad |= r || !wait_for(m, ACK + T_FILL);
	r = lease_send(m, T_RETRY, 16 * MIB);
	if (!r)
		r = send_msg(m, 1, T_RELEASE, 64);
	printf("B retry rc=%d\n", r);
	bad |= r || !wait_for(m, ACK + T_RETRY);

	/* 5: never room: refused after the receiver's bound. */
	pthread_mutex_lock(&m->lock);
	m->n = 0; /* forget the first FILL's and RELEASE's acks */
	pthread_mutex_unlock(&m->lock);
	r = send_msg(m, 1, T_FILL, 64);
	bad |= r || !wait_for(m, ACK + T_FILL);
	p = malloc(16 * MIB);
	fill(p, 16 * MIB, T_REFUSED);
	t0 = now_ms();
	r = group_p2p_send_mem(m->g, 1, p, 16 * MIB, -1, &err);
	printf("C refused rc=%d ms=%" PRIu64 " why=%s\n", r, now_ms() - t0,
	       r ? err.msg : "");
	free(p);
	bad |= r != -ENOBUFS;
	r = send_msg(m, 1, T_RELEASE, 64);
	bad |= r || !wait_for(m, ACK + T_RELEASE);

	/* Larger than any member's region: refused before anything. */
	p = mmap(NULL, cfg->region_size + 4096, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	r = p == MAP_FAILED ? -errno :
		group_p2p_send_mem(m->g, 1, p, cfg->region_size + 4096, -1, &err);
	printf("D too_large rc=%d why=%s\n", r, r ? err.msg : "");
	if (p != MAP_FAILED)
		munmap(p, cfg->region_size + 4096);
	bad |= r != -EMSGSIZE;

	/* 3: small, from the stack: copied. */
	fill(small, sizeof(small), T_SMALL);
	r = group_p2p_send_mem(m->g, 1, small, sizeof(small), -1, &err);
	printf("E small rc=%d\n", r);
	bad |= r || !wait_for(m, ACK + T_SMALL);

	/* 4: 64 MiB of mapped memory, in place. */
	p = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return 1;
	fill(p, big, T_BIG);
	t0 = now_ms();
	r = group_p2p_send_mem(m->g, 1, p, big, -1, &err);
	printf("F big rc=%d len=%zu ms=%" PRIu64 "%s%s\n", r, big,
	       now_ms() - t0, r ? " why=" : "", r ? err.msg : "");
	bad |= r;
	/* The memory is the caller's again: change it, unmap it. */
	memset(p, 0, big);
	munmap(p, big);
	group_stats(m->g, &gs);
	printf("STATS member=0 p2p_sent=%" PRIu64 " p2p_use_once=%" PRIu64
	       " p2p_received=%" PRIu64 " p2p_abandoned=%" PRIu64 "\n",
	       gs.p2p_sent, gs.p2p_use_once, gs.p2p_received,
	       gs.p2p_abandoned);
	fflush(stdout);
	return bad;
}

/* --die: member 1 dies half way through the read. */
static int die_test(struct member *m)
{
	struct squall_error err = { 0 };
	size_t big = 64 * MIB;
	void *p;
	int r;

	if (m->id == 1) {
		/* The hook kills this process before the message is whole. */
		wait_for(m, T_BIG);
		fprintf(stderr, "member 1: still alive after the read\n");
		return 1;
	}
	p = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return 1;
	fill(p, big, T_BIG);
	r = group_p2p_send_mem(m->g, 1, p, big, -1, &err);
	printf("K die rc=%d why=%s\n", r, r ? err.msg : "");
	fflush(stdout);
	/* The memory is the caller's again. */
	munmap(p, big);
	r = r == -ENOTCONN ? 0 : 1;
	printf("END member=0 close=%d\n", group_close(m->g, 30000, &err));
	return r;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "config", required_argument, 0, 'c' },
		{ "id", required_argument, 0, 'i' },
		{ "die", no_argument, 0, 'd' },
		{ 0, 0, 0, 0 },
	};
	struct member *m = calloc(1, sizeof(*m));
	struct group_config *cfg = calloc(1, sizeof(*cfg));
	struct group_callbacks cb = { .deliver = deliver,
				      .p2p_receive = p2p_receive,
				      .failure = on_failure,
				      .send_failed = on_send_failed };
	const char *cfg_path = NULL, *id = NULL;
	struct squall_error err = { 0 };
	struct group_stats gs;
	long my_id;
	int c, bad = 0, r;
	bool die = false;

	if (!m || !cfg)
		return 1;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c': cfg_path = optarg; break;
		case 'i': id = optarg; break;
		case 'd': die = true; break;
		default:
			fprintf(stderr, "usage: p2p_member --config CFG --id 0|1 "
				"[--die]\n");
			return 2;
		}
	}
	if (!cfg_path || group_config_load_with(cfg_path, NULL, NULL, 0, cfg,
						&err)) {
		fprintf(stderr, "p2p_member: %s\n",
			cfg_path ? err.msg : "--config is required");
		return 1;
	}
	my_id = group_config_my_id(cfg, id, &err);
	if (my_id < 0 || my_id > 1) {
		fprintf(stderr, "p2p_member: %s\n", my_id < 0 ? err.msg :
			"--id must be 0 or 1");
		return 1;
	}
	m->id = (uint32_t)my_id;
	__atomic_store_n(&m->g, group_create_cfg(cfg, m->id, &cb, m, &err),
			 __ATOMIC_RELEASE);
	if (!m->g) {
		fprintf(stderr, "p2p_member %u: %s\n", m->id, err.msg);
		return 1;
	}
	if (group_barrier(m->g, 120000, &err)) {
		fprintf(stderr, "p2p_member %u: barrier: %s\n", m->id, err.msg);
		return 1;
	}
	if (die)
		return die_test(m);
	if (m->id == 0) {
		bad = sender(m, cfg);
	} else {
		bool order_ok;

		bad = !wait_for(m, T_BIG);
		pthread_mutex_lock(&m->lock);
		/* RELEASE (delivered at once) before the message kept
		 * for want of room, which came first. */
		order_ok = false;
		for (unsigned i = 0; i + 1 < m->n; i++)
			if (m->order[i] == T_RELEASE &&
			    m->order[i + 1] == T_RETRY)
				order_ok = true;
		bad |= m->bad != 0 || !order_ok;
		pthread_mutex_unlock(&m->lock);
		group_stats(m->g, &gs);
		printf("RESULT member=1 received=%u bad=%" PRIu64
		       " order_ok=%d p2p_received=%" PRIu64
		       " p2p_use_once=%" PRIu64 "\n", m->n, m->bad, order_ok,
		       gs.p2p_received, gs.p2p_use_once);
		fflush(stdout);
	}
	/* The old key's READ broke the connection: the group of two
	 * stops on both sides. */
	if (!wait_failed(m)) {
		fprintf(stderr, "p2p_member %u: the group did not stop after "
			"the READ with the old key\n", m->id);
		bad = 1;
	}
	r = group_close(m->g, 30000, &err);
	printf("END member=%u close=%d bad=%d\n", m->id, r, bad);
	pthread_mutex_lock(&m->lock);
	bad |= m->bad != 0;
	pthread_mutex_unlock(&m->lock);
	return bad != 0;
}
