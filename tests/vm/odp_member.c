/*
 * odp_member - foreign memory registered on demand (ODP), or pinned where
 * the device has no ODP, on real RDMA.
 *
 * Member 1 SENDs from foreign memory through its node's registration
 * cache, gives the memory back, gets new memory at the same address with
 * other contents and sends again: malloc/free of 1 MiB (glibc mmaps it),
 * malloc/free of 96 KiB from the heap, and mmap/munmap/mmap at the same
 * address. Member 2 checks every byte of every message against the
 * generation its header names and answers it. Then member 1 registers
 * 8 MiB of fresh memory through the cache and reads how much of it the
 * kernel pinned (VmPin in /proc/self/status): nothing on the ODP path, all
 * of it on the pinned path.
 *
 * Member 1 prints which path its node runs (rdma_sq_odp_why_not), the ODP
 * counters and the cache's, and with --expect checks them:
 *   --expect odp     the node uses ODP; every cache registration is an
 *                    ODP one; nothing pinned
 *   --expect pinned  the node says why not; no ODP registration; the
 *                    8 MiB pinned
 * --no-monitor runs the cache without its unmap monitor (and nobody calls
 * regcache_invalidate): on the ODP path the bytes must be right anyway,
 * because the device follows the page tables. --no-odp sets
 * rdma_sq_options.no_odp, --odp-unchecked rdma_sq_options.odp_unchecked
 * (ODP on the device's word, without the node's loopback check).
 *
 * usage: odp_member --id 1|2 --port BASE [--rounds N] [--expect odp|pinned]
 *                   [--no-monitor] [--no-odp] [--odp-unchecked]
 */
#include <getopt.h>
#include <malloc.h>
#include <stdint.h>
#include <unistd.h>

#include "odp_common.h"

#define MAX_PAYLOAD ((size_t)1 << 20)
#define PIN_LEN ((size_t)8 << 20)
#define HDR_OFF 0
#define ACK_OFF 4096
#define RECV_OFF 8192
#define REGION (RECV_OFF + sizeof(struct hdr) + MAX_PAYLOAD + 4096)
#define MAGIC 0x4f445030u
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
static unsigned sends;

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
	h->gen = len ? gen : 0;
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
	/* the heap may place one round elsewhere (the registration path
	 * allocates too); never coming back means the check checked nothing */
	if (rounds > 1 && !same)
		die(m, "%s: malloc never gave the same address back", what);
}

static void mmap_rounds(struct member *m, unsigned rounds)
{
	uint8_t *p = NULL;

	for (unsigned r = 0; r < rounds; r++) {
		uint8_t *q = mmap(p, MAX_PAYLOAD, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS |
				  (p ? MAP_FIXED_NOREPLACE : 0), -1, 0);

		if (q == MAP_FAILED || (p && q != p))
			die(m, "mmap at %p: %s", (void *)p, strerror(errno));
		p = q;
		send_gen(m, p, MAX_PAYLOAD, "mmap 1 MiB");
		if (munmap(p, MAX_PAYLOAD))
			die(m, "munmap: %s", strerror(errno));
	}
	printf("member 1 mmap 1 MiB: %u rounds of mmap/send/munmap at %p\n",
	       rounds, (void *)p);
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
	uint8_t *p = mmap(NULL, PIN_LEN, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct regcache_reg *r;
	long before, after;
	int ret;

	if (p == MAP_FAILED)
		die(m, "mmap: %s", strerror(errno));
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

static void sender(struct member *m, unsigned rounds, const char *expect)
{
	struct regcache *c = rdma_sq_regcache(m->node);
	const char *why = rdma_sq_odp_why_not(m->node);
	struct rdma_sq_odp_stats os;
	struct regcache_stats st;
	long pinned_kb;

	if (why[0])
		printf("member 1 odp: pinned: %s\n", why);
	else
		printf("member 1 odp: on demand\n");
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	malloc_rounds(m, MAX_PAYLOAD, rounds, "malloc 1 MiB");
	malloc_rounds(m, 96 * 1024, rounds, "malloc 96 KiB");
	mmap_rounds(m, rounds);
	send_gen(m, NULL, 0, "end");
	regcache_sync(c);
	regcache_stats(c, &st);
	rdma_sq_odp_stats(m->node, &os);
	printf("member 1 sent %u messages from foreign memory\n", sends);
	pinned_kb = pinned_by_registration(m);
	printf("member 1 odp registrations=%llu fallbacks=%llu; cache "
	       "registrations=%llu hits=%llu misses=%llu invalidations=%llu\n",
	       (unsigned long long)os.registrations,
	       (unsigned long long)os.fallbacks,
	       (unsigned long long)st.registrations, (unsigned long long)st.hits,
	       (unsigned long long)st.misses,
	       (unsigned long long)st.invalidations);
	printf("member 1 pinned by an 8 MiB cache registration: %ld kB\n",
	       pinned_kb);
	if (!expect)
		return;
	if (!strcmp(expect, "odp")) {
		if (why[0])
			die(m, "expected ODP; the node says: %s", why);
		if (!os.registrations || os.registrations != st.registrations ||
		    os.fallbacks)
			die(m, "expected every cache registration on demand");
		if (pinned_kb != 0)
			die(m, "an ODP registration pinned %ld kB", pinned_kb);
	} else {
		if (!why[0])
			die(m, "expected the pinned path; the node uses ODP");
		if (os.registrations || !st.registrations)
			die(m, "expected pinned registrations only");
		if (pinned_kb < (long)(PIN_LEN >> 10))
			die(m, "a pinned registration pinned only %ld kB", pinned_kb);
	}
	printf("member 1 OK: the %s path as expected\n", expect);
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
	size_t at;

	if (h->magic != MAGIC || w.byte_len != sizeof(*h) + h->len)
		die(m, "message %u: bad header (magic %#x, %u bytes for %llu)",
		    *expect_gen, h->magic, w.byte_len, (unsigned long long)h->len);
	if (h->len && h->gen != *expect_gen)
		die(m, "message of generation %u, expected %u", h->gen, *expect_gen);
	at = check(pay, h->len, h->gen, h->addr);
	if (h->len && at < h->len) {
		(*bad)++;
		printf("member 2 STALE: gen %u (%s, %llu bytes at %#llx): byte %zu "
		       "is %#x, not %#x\n", h->gen, h->what,
		       (unsigned long long)h->len, (unsigned long long)h->addr, at,
		       pay[at], pattern(h->gen, h->addr + at));
	} else if (h->len) {
		printf("member 2 gen %u %s: %llu bytes, all new\n", h->gen, h->what,
		       (unsigned long long)h->len);
	}
	(*expect_gen)++;
	if (h->len && rdma_sq_post_recv(m->node, m->peer, &in, 1, WR_RECV, &err))
		die(m, "post_recv: %s", err.msg);
	if (rdma_sq_send(m->node, m->peer, &ack, 1, WR_SEND, RDMA_SQ_SIGNALED, &err))
		die(m, "answer: %s", err.msg);
	member_wait_ok(m, WR_SEND, "answer");
	return h->len != 0;
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
		{ "expect", required_argument, 0, 'e' },
		{ "no-monitor", no_argument, 0, 'n' },
		{ "no-odp", no_argument, 0, 'o' },
		{ "odp-unchecked", no_argument, 0, 'u' },
		{ 0, 0, 0, 0 },
	};
	unsigned id = 0, port = 7800, rounds = 4;
	const char *expect = NULL;
	bool no_monitor = false, no_odp = false, unchecked = false;
	struct member m;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'i')
			id = (unsigned)atoi(optarg);
		else if (c == 'p')
			port = (unsigned)atoi(optarg);
		else if (c == 'r')
			rounds = (unsigned)atoi(optarg);
		else if (c == 'e')
			expect = optarg;
		else if (c == 'n')
			no_monitor = true;
		else if (c == 'o')
			no_odp = true;
		else if (c == 'u')
			unchecked = true;
		else
			return 2;
	}
	if (expect && strcmp(expect, "odp") && strcmp(expect, "pinned"))
		return 2;
	if (rounds < 1)
		rounds = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	member_init_odp(&m, "odp_member", id, port, REGION,
			no_monitor ? REGCACHE_MONITOR_OFF : REGCACHE_MONITOR_AUTO,
			no_odp, unchecked);
	if (id == 1)
		sender(&m, rounds, expect);
	else
		receiver(&m);
	rdma_sq_destroy(m.node);
	return 0;
}
