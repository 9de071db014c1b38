/*
 * regcache_member - the registration cache on real RDMA: a stale
 * registration is never used, on the pinned path and on demand (ODP).
 *
 * Member 1 SENDs from foreign memory (not the region: the rdma layer finds
 * it through its registration cache), gives the memory back, gets new
 * memory at the same address with other contents and sends again, in four
 * ways: malloc/free of 1 MiB (glibc mmaps it), malloc/free of 96 KiB from
 * the heap, mmap/munmap/mmap at the same address, and a partial munmap of
 * a range the cache had merged from two sends. Every send fills its bytes
 * with a new generation's pattern first. Member 2 checks every byte of
 * every message against the generation the header names: a stale
 * registration would hand the NIC the old pages, whose bytes belong to an
 * older generation. Member 2 answers each message after reposting its
 * receive, so member 1 never sends into a missing receive.
 *
 * With --no-monitor member 1's cache runs without its unmap monitor (and
 * nobody calls regcache_invalidate): the control run, in which member 2
 * must see stale bytes, showing that the check can fail. On the ODP path
 * the bytes must be right even then, because the device follows the page
 * tables.
 *
 * With --odp-report member 1 also prints which path its node runs
 * (rdma_sq_odp_why_not) and the ODP counters, then registers 8 MiB of
 * fresh memory through the cache and reads how much of it the kernel
 * pinned (VmPin in /proc/self/status): nothing on the ODP path, all of it
 * on the pinned path. The monitor is not checked then (it is the default
 * run's business); --expect, which implies --odp-report, checks the path:
 *   --expect odp     the node uses ODP; every cache registration is an
 *                    ODP one; nothing pinned
 *   --expect pinned  the node says why not; no ODP registration; the
 *                    8 MiB pinned
 * --no-odp sets rdma_sq_options.no_odp, --odp-unchecked
 * rdma_sq_options.odp_unchecked (ODP on the device's word, without the
 * node's loopback check).
 *
 * usage: regcache_member --id 1|2 --port BASE [--rounds N] [--no-monitor]
 *                        [--odp-report] [--expect odp|pinned] [--no-odp]
 *                        [--odp-unchecked]
 */
#include <getopt.h>
#include <malloc.h>
#include <stdint.h>
#include <unistd.h>

#include "member_common.h"

#define MAX_PAYLOAD ((size_t)1 << 20)
#define PIN_LEN ((size_t)8 << 20) /* --odp-report: the VmPin registration */
#define HDR_OFF 0            /* member 1: the header it sends */
#define ACK_OFF 4096         /* member 1: the answer it receives */
#define RECV_OFF 8192        /* member 2: header + payload received */
#define REGION (RECV_OFF + sizeof(struct hdr) + MAX_PAYLOAD + 4096)
#define MAGIC 0x52474354u
#define WR_SEND 1
#define WR_RECV 2

struct hdr {
	uint32_t magic;
	uint32_t gen;        /* 0: the end */
	uint64_t addr;       /* where the payload lay in member 1 */
	uint64_t len;
	char what[40];
};

static uint32_t gen;
static bool no_monitor, odp_report;
static const char *expect_path; /* --expect: "odp", "pinned" or NULL */
static unsigned sends;

/* Fill [p, p + len) with the next generation and send it; wait until
 * member 2 has checked it (its answer). */
static void send_gen(struct member *m, void *p, size_t len, const char *what)
{
	struct hdr *h = (struct hdr *)(m->region + HDR_OFF);
	struct rdma_sq_sge sg[2] = {
		{ h, sizeof(*h) }, { p, (uint32_t)len },
	};
	struct rdma_sq_sge ack = { m->region + ACK_OFF, 64 };
	struct squall_error err;

	gen++;
	fill(p, len, gen, (uintptr_t)p);
	h->magic = MAGIC;
	h->gen = gen;
	h->addr = (uintptr_t)p;
	h->len = len;
	snprintf(h->what, sizeof(h->what), "%s", what);
	if (rdma_sq_post_recv(m->node, m->peer, &ack, 1, WR_RECV, &err))
		die(m, "post_recv: %s", err.msg);
	if (rdma_sq_send(m->node, m->peer, sg, len ? 2 : 1, WR_SEND,
			 RDMA_SQ_SIGNALED, &err))
		die(m, "send of %s: %s", what, err.msg);
	member_wait_ok(m, WR_SEND, "send");
	member_wait_ok(m, WR_RECV, "answer");
	sends++;
}

static void check_same(struct member *m, void *p, void *old, const char *what)
{
	if (p != old)
		die(m, "%s: new memory at %p, not at the old address %p", what, p, old);
}

/* malloc/free/malloc: `size` decides whether glibc mmaps or uses the heap. */
static void malloc_rounds(struct member *m, size_t size, unsigned rounds,
			  const char *what)
{
	void *old = NULL;
	unsigned same = 0;

	for (unsigned r = 0; r < rounds; r++) {
		uint8_t *p = malloc(size);

		if (!p)
			die(m, "malloc(%zu) failed", size);
		same += r && (void *)p == old;
		send_gen(m, p, size, what);
		old = p;
		free(p);
	}
	printf("member 1 %s: %u rounds, the same address came back in %u\n",
	       what, rounds, same);
	/* Each round that got the old address back is a case where a stale
	 * registration would show. The heap may place a round elsewhere:
	 * the cache's own threads (unmap monitor, RCU reclamation) allocate
	 * and free at times of their own. Never coming back would mean the
	 * check checked nothing. */
	if (rounds > 1 && !same)
		die(m, "%s: malloc never gave the same address back", what);
}

static void *map_at(struct member *m, void *at, size_t len)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		       (at ? MAP_FIXED_NOREPLACE : 0), -1, 0);

	if (p == MAP_FAILED)
		die(m, "mmap(%p, %zu): %s", at, len, strerror(errno));
	if (at)
		check_same(m, p, at, "mmap MAP_FIXED_NOREPLACE");
	return p;
}

static void mmap_rounds(struct member *m, unsigned rounds)
{
	uint8_t *p = NULL;

	for (unsigned r = 0; r < rounds; r++) {
		p = map_at(m, p, MAX_PAYLOAD);
		send_gen(m, p, MAX_PAYLOAD, "mmap 1 MiB");
		if (munmap(p, MAX_PAYLOAD))
			die(m, "munmap: %s", strerror(errno));
	}
	printf("member 1 mmap 1 MiB: %u rounds of mmap/send/munmap at %p\n",
	       rounds, (void *)p);
}

/* Two adjacent sends make one merged registration; unmapping its middle
 * leaves two live parts and a hole that gets new pages. */
static void partial_rounds(struct member *m, unsigned rounds)
{
	const size_t half = MAX_PAYLOAD, hole = MAX_PAYLOAD / 2;
	uint8_t *q = map_at(m, NULL, 2 * half);

	for (unsigned r = 0; r < rounds; r++) {
		send_gen(m, q, half, "merged: low half");
		send_gen(m, q + half, half, "merged: high half");
		if (munmap(q + hole, half))
			die(m, "munmap of the middle: %s", strerror(errno));
		map_at(m, q + hole, half);
		send_gen(m, q, half, "after partial munmap: low");
		send_gen(m, q + half, half, "after partial munmap: high");
		send_gen(m, q + hole / 2, half, "after partial munmap: across");
		send_gen(m, q, hole, "after partial munmap: surviving part");
	}
	munmap(q, 2 * half);
	printf("member 1 partial munmap of a merged range: %u rounds\n", rounds);
}

/* VmPin of this process in kB, or -1. */
static long vm_pin_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* kB the kernel pins for one cache registration of PIN_LEN fresh bytes. */
static long pinned_by_registration(struct member *m)
{
	struct regcache *c = rdma_sq_regcache(m->node);
	uint8_t *p = map_at(m, NULL, PIN_LEN);
	struct regcache_reg *r;
	long before, after;
	int ret;

	memset(p, 1, PIN_LEN);
	before = vm_pin_kb();
	ret = regcache_get(c, p, PIN_LEN, &r);
	if (ret)
		die(m, "regcache_get(8 MiB): %s", strerror(-ret));
	after = vm_pin_kb();
	regcache_put(c, r);
	munmap(p, PIN_LEN);
	regcache_sync(c);
	if (before < 0 || after < 0)
		die(m, "no VmPin line in /proc/self/status");
	return after - before;
}

/* --odp-report, after the sends: print the ODP counters, the cache's (st)
 * and what a registration pins; with --expect, check that they are those
 * of the expected path and that `why` (rdma_sq_odp_why_not, "" for ODP)
 * names it. */
static void odp_check(struct member *m, const struct regcache_stats *st,
		      const char *why)
{
	struct rdma_sq_odp_stats os;
	long pinned_kb;

	/* before the 8 MiB registration, which is not one of the sends */
	rdma_sq_odp_stats(m->node, &os);
	pinned_kb = pinned_by_registration(m);
	printf("member 1 odp registrations=%llu fallbacks=%llu; cache "
	       "registrations=%llu hits=%llu misses=%llu invalidations=%llu\n",
	       (unsigned long long)os.registrations,
	       (unsigned long long)os.fallbacks,
	       (unsigned long long)st->registrations,
	       (unsigned long long)st->hits, (unsigned long long)st->misses,
	       (unsigned long long)st->invalidations);
	printf("member 1 pinned by an 8 MiB cache registration: %ld kB\n",
	       pinned_kb);
	if (!expect_path)
		return;
	if (!strcmp(expect_path, "odp")) {
		if (why[0])
			die(m, "expected ODP; the node says: %s", why);
		if (!os.registrations || os.registrations != st->registrations ||
		    os.fallbacks)
			die(m, "expected every cache registration on demand");
		if (pinned_kb != 0)
			die(m, "an ODP registration pinned %ld kB", pinned_kb);
	} else {
		if (!why[0])
			die(m, "expected the pinned path; the node uses ODP");
		if (os.registrations || !st->registrations)
			die(m, "expected pinned registrations only");
		if (pinned_kb < (long)(PIN_LEN >> 10))
			die(m, "a pinned registration pinned only %ld kB", pinned_kb);
	}
	printf("member 1 OK: the %s path as expected\n", expect_path);
}

static void sender(struct member *m, unsigned rounds)
{
	struct regcache_stats st;
	struct squall_error why;
	struct regcache *c = rdma_sq_regcache(m->node);
	enum regcache_monitor_status ms = regcache_monitor_status(c, &why);
	const char *odp_why = rdma_sq_odp_why_not(m->node);

	printf("member 1 cache monitor: %s\n", ms == REGCACHE_MONITOR_ACTIVE ?
	       "active" : why.msg);
	if (odp_report && odp_why[0])
		printf("member 1 odp: pinned: %s\n", odp_why);
	else if (odp_report)
		printf("member 1 odp: on demand\n");
	/* a fixed threshold: glibc would otherwise raise it after the first
	 * free of an mmapped chunk and serve the next 1 MiB from the heap */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	malloc_rounds(m, MAX_PAYLOAD, rounds, "malloc 1 MiB");
	malloc_rounds(m, 96 * 1024, rounds, "malloc 96 KiB");
	mmap_rounds(m, rounds);
	partial_rounds(m, 2);
	send_gen(m, NULL, 0, "end");
	regcache_sync(c);
	regcache_stats(c, &st);
	printf("member 1 sent %u messages from foreign memory\n", sends);
	printf("member 1 cache: hits=%llu misses=%llu registrations=%llu "
	       "deregistrations=%llu invalidations=%llu merges=%llu splits=%llu "
	       "events=%llu entries=%llu\n",
	       (unsigned long long)st.hits, (unsigned long long)st.misses,
	       (unsigned long long)st.registrations,
	       (unsigned long long)st.deregistrations,
	       (unsigned long long)st.invalidations,
	       (unsigned long long)st.merges, (unsigned long long)st.splits,
	       (unsigned long long)st.events, (unsigned long long)st.entries);
	if (odp_report) {
		odp_check(m, &st, odp_why);
		return;
	}
	if (no_monitor)
		return;
	if (ms != REGCACHE_MONITOR_ACTIVE)
		die(m, "the cache ran without its unmap monitor");
	if (!st.invalidations)
		die(m, "no registration was invalidated");
}

/* Check one message; returns false at the end message. */
static bool receive_one(struct member *m, uint32_t *expect_gen, unsigned *bad)
{
	struct hdr *h = (struct hdr *)(m->region + RECV_OFF);
	struct rdma_sq_sge in = { h, (uint32_t)(sizeof(*h) + MAX_PAYLOAD) };
	struct rdma_sq_sge ack = { m->region, 64 };
	struct rdma_sq_wc w = member_wait_ok(m, WR_RECV, "receive");
	const uint8_t *pay = (const uint8_t *)(h + 1);
	struct squall_error err;
	bool more;
	size_t at;

	if (h->magic != MAGIC || w.byte_len != sizeof(*h) + h->len)
		die(m, "message %u: bad header (magic %#x, %u bytes for %llu)",
		    *expect_gen, h->magic, w.byte_len, (unsigned long long)h->len);
	if (h->gen != *expect_gen)
		die(m, "message of generation %u, expected %u", h->gen, *expect_gen);
	at = check(pay, h->len, h->gen, h->addr);
	/* Read before the receive is posted again: from then on member 1's
	 * next message may land over this one. */
	more = h->len != 0;
	if (!more) {
		/* the end */
	} else if (at < h->len) {
		(*bad)++;
		printf("member 2 STALE: gen %u (%s, %llu bytes at %#llx): byte %zu is "
		       "%#x, generation %u's is %#x (an older generation's: %s)\n",
		       h->gen, h->what, (unsigned long long)h->len,
		       (unsigned long long)h->addr, at, pay[at],
		       h->gen, pattern(h->gen, h->addr + at),
		       pay[at] == pattern(h->gen - 1, h->addr + at) ? "yes" : "maybe");
	} else {
		printf("member 2 gen %u %s: %llu bytes, all new\n", h->gen, h->what,
		       (unsigned long long)h->len);
	}
	(*expect_gen)++;
	if (more && rdma_sq_post_recv(m->node, m->peer, &in, 1, WR_RECV, &err))
		die(m, "post_recv: %s", err.msg);
	if (rdma_sq_send(m->node, m->peer, &ack, 1, WR_SEND, RDMA_SQ_SIGNALED, &err))
		die(m, "answer: %s", err.msg);
	member_wait_ok(m, WR_SEND, "answer");
	return more;
}

static void receiver(struct member *m)
{
	struct rdma_sq_sge in = { m->region + RECV_OFF,
				  (uint32_t)(sizeof(struct hdr) + MAX_PAYLOAD) };
	struct squall_error err;
	uint32_t expect = 1;
	unsigned bad = 0, n = 0;

	if (rdma_sq_post_recv(m->node, m->peer, &in, 1, WR_RECV, &err))
		die(m, "post_recv: %s", err.msg);
	while (receive_one(m, &expect, &bad))
		n++;
	printf("member 2 received %u messages, %u with stale bytes\n", n, bad);
	/* Member 1 goes first: it has our answer to its end message then. */
	member_wait_peer_gone(m);
	if (bad)
		exit(1);
	printf("member 2 OK: every message had the new bytes\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "id", required_argument, 0, 'i' },
		{ "port", required_argument, 0, 'p' },
		{ "rounds", required_argument, 0, 'r' },
		{ "no-monitor", no_argument, 0, 'n' },
		{ "odp-report", no_argument, 0, 'd' },
		{ "expect", required_argument, 0, 'e' },
		{ "no-odp", no_argument, 0, 'o' },
		{ "odp-unchecked", no_argument, 0, 'u' },
		{ 0, 0, 0, 0 },
	};
	unsigned id = 0, port = 7600, rounds = 4;
	bool no_odp = false, unchecked = false;
	struct member m;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'i')
			id = (unsigned)atoi(optarg);
		else if (c == 'p')
			port = (unsigned)atoi(optarg);
		else if (c == 'r')
			rounds = (unsigned)atoi(optarg);
		else if (c == 'n')
			no_monitor = true;
		else if (c == 'd')
			odp_report = true;
		else if (c == 'e')
			expect_path = optarg;
		else if (c == 'o')
			no_odp = true;
		else if (c == 'u')
			unchecked = true;
		else
			return 2;
	}
	if (expect_path && strcmp(expect_path, "odp") &&
	    strcmp(expect_path, "pinned"))
		return 2;
	if (expect_path)
		odp_report = true;
	if (rounds < 1)
		rounds = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	member_init_with(&m, "regcache_member", id, port, REGION,
			 (struct rdma_sq_options){
				 .cache_monitor = no_monitor ? REGCACHE_MONITOR_OFF :
							       REGCACHE_MONITOR_AUTO,
				 .no_odp = no_odp,
				 .odp_unchecked = unchecked,
			 });
	if (id == 1)
		sender(&m, rounds);
	else
		receiver(&m);
	rdma_sq_destroy(m.node);
	return 0;
}
