/*
 * rdma_ping - N members connect all-to-all over squall's rdma layer, prove
 * every verb moves the right bytes, and measure latency and bandwidth.
 *
 * Each member's region holds, for every sender, one area per kind of
 * traffic (WRITE, WRITE_WITH_IMM, SEND, perf) with a slot per message size
 * (64 B, 4 KiB, 64 KiB, 1 MiB). In each round a member, for each peer and
 * size, RDMA-writes a stamped buffer into its area in the peer's region and
 * reads it back, writes another with WRITE_WITH_IMM and SENDs a third; the
 * receiver checks every byte against the stamp it expects. Rounds are
 * separated by a DONE message that a member sends only after it has
 * verified all that its peers sent, so no area is overwritten early.
 *
 * Then the lowest member measures each peer: ping-pong RDMA writes (the
 * stamp in the last 8 bytes tells the other side a whole message arrived;
 * latency is half the round trip, as ib_write_lat reports it) and a stream
 * of writes with a fixed number outstanding for bandwidth.
 *
 * usage: rdma_ping --config GROUP.cfg [--id N] [options]
 *        rdma_ping --id N --member ID,ADDR,PORT [--member ...] [options]
 * With --config the members (and device, connect timeout) come from the
 * group file and the id from --id, SQUALL_MEMBER_ID or a launcher's rank
 * (group_config_my_id).
 * The environment variables SQUALL_TEST_WIRE_MAJOR and SQUALL_TEST_WIRE_MINOR
 * make the member claim another wire version (tests of the version rule
 * only); once connected, a member says of each peer whether its refusals
 * carry a hello (rdma_sq_peer_refuses_with_hello: wire 1.1 and later).
 *
 * With --grants DELAY_MS the members instead exchange per-peer keys
 * (rdma_sq_options.peer_windows, rdma_sq_grant_all: each peer may write
 * its own area of this member's region and nothing else), this member
 * DELAY_MS after it connected, say how long the exchange took, and end
 * 3 s later (a peer may still be waiting for this member's grants: no
 * message of the rounds is posted, so the device counts only the grants'
 * traffic).
 *
 * With --relisten HOLD_MS,PARK_MS a member, once connected, goes to a
 * second node the way a group member goes from one view to the next: it
 * waits HOLD_MS with nothing reading its connection events, keeps its
 * listener (rdma_sq_listener_keep), destroys the node, waits PARK_MS,
 * creates the next node on the kept listener, telling it that every
 * peer kept its listener too (rdma_sq_options.listening), and connects
 * again; the rounds then run over the new connections. A peer that asks
 * meanwhile must find it alive, never "gone". It then says whether each
 * peer's region key is the one its previous node had (a peer's next node
 * keeps its registration of the region).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <squall/config.h>
#include <squall/rdma.h>
#include <squall/version.h>

#include "group/transport.h"

#define NSIZES 4
static const uint32_t sizes[NSIZES] = { 64, 4096, 65536, 1048576 };
/* Offsets of the size slots inside an area; the area is 1.125 MiB. */
static const uint64_t slot_off[NSIZES] = { 0, 64, 64 + 4096, 64 + 4096 + 65536 };
#define AREA ((uint64_t)1179648)

enum kind { K_WRITE, K_WIMM, K_SEND, K_PERF, NKINDS };

/* wr_id tags: kind of work in the top byte, details below. */
#define TAG(t, peer_idx, z) (((uint64_t)(t) << 56) | ((uint64_t)(peer_idx) << 8) | (z))
enum tag { T_OWN = 1, T_RECV = 2, T_PERF = 3 };

/* The order of messages a receiver sees from one sender in a round:
 * WIMM z, SEND z for each size, then DONE. Receives are posted in the same
 * order, so the k-th receive matches the k-th message. */
#define MSGS_PER_ROUND (2 * NSIZES + 1)

struct opts {
	uint32_t id;
	unsigned rounds;
	unsigned lat_iters;
	uint64_t bw_bytes;
	unsigned bw_depth;
	unsigned op_timeout_ms;
	bool perf;
	bool verbose;
	bool grants;
	unsigned grant_delay_ms;
	bool relisten;
	unsigned hold_ms, park_ms;
};

struct ping {
	struct group_config cfg;
	struct opts o;
	struct rdma_sq_node *node;
	int me;                 /* my index in cfg.members */
	uint8_t *region;
	uint64_t region_len;
	uint8_t *src, *check, *ctl;
	/* per peer index */
	uint64_t raddr[GROUP_CONFIG_MAX_MEMBERS];
	uint32_t rkey[GROUP_CONFIG_MAX_MEMBERS];
	/* Messages received from each peer, all rounds together: a fast
	 * peer's next round may begin while we still wait for a slow one's
	 * DONE, so the round of a message is its count / MSGS_PER_ROUND. */
	unsigned got[GROUP_CONFIG_MAX_MEMBERS];
	unsigned fin[GROUP_CONFIG_MAX_MEMBERS];
	unsigned own_pending;   /* my signaled posts not yet completed */
	uint64_t perf_done;     /* signaled perf writes completed */
	uint64_t verified_bytes;
	unsigned round;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what, const struct squall_error *err, uint32_t id)
{
	fprintf(stderr, "rdma_ping: member %u: %s: %s\n", id, what, err->msg);
	fflush(stdout);
	exit(1);
}

static void log_cb(void *arg, int level, const char *msg)
{
	const struct ping *pg = arg;

	if (level <= RDMA_SQ_LOG_INFO || pg->o.verbose)
		fprintf(stderr, "rdma_ping: member %u: rdma: %s\n", pg->o.id, msg);
}

/* Where areas lie: [kind][sender index] for the traffic others send me,
 * then my own source, check and control buffers. */
static uint64_t area_off(const struct ping *pg, enum kind k, int sender)
{
	return ((uint64_t)k * pg->cfg.nmembers + (uint64_t)sender) * AREA;
}

/* The byte at j of a message: depends on everything that names it, so a
 * byte in the wrong place, of the wrong round or from the wrong sender
 * shows. */
static uint8_t stamp(unsigned kind, uint32_t from, uint32_t to, unsigned z,
		     unsigned round, uint64_t j)
{
	uint64_t x = j * 0x9e3779b97f4a7c15ull + ((uint64_t)from << 40) +
		     ((uint64_t)to << 32) + ((uint64_t)kind << 24) +
		     ((uint64_t)z << 16) + round;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	return (uint8_t)(x >> 32);
}

static void fill(uint8_t *buf, unsigned kind, uint32_t from, uint32_t to,
		 unsigned z, unsigned round)
{
	for (uint64_t j = 0; j < sizes[z]; j++)
		buf[j] = stamp(kind, from, to, z, round, j);
}

static void verify(struct ping *pg, const uint8_t *buf, unsigned kind,
		   uint32_t from, uint32_t to, unsigned z, unsigned round,
		   const char *what)
{
	for (uint64_t j = 0; j < sizes[z]; j++) {
		uint8_t want = stamp(kind, from, to, z, round, j);

		if (buf[j] != want) {
			fprintf(stderr, "rdma_ping: member %u: %s of %u bytes from member %u "
				"to member %u, round %u: byte %" PRIu64 " is 0x%02x, expected 0x%02x\n",
				pg->o.id, what, sizes[z], from, to, round, j, buf[j], want);
			exit(1);
		}
	}
	pg->verified_bytes += sizes[z];
}

/* Two pieces when the message is big enough: exercises SGE lists. */
static int pieces(uint8_t *buf, uint32_t len, struct rdma_sq_sge *sg)
{
	if (len < 128) {
		sg[0] = (struct rdma_sq_sge){ buf, len };
		return 1;
	}
	sg[0] = (struct rdma_sq_sge){ buf, len / 2 };
	sg[1] = (struct rdma_sq_sge){ buf + len / 2, len - len / 2 };
	return 2;
}

static uint32_t peer_id(const struct ping *pg, int idx)
{
	return pg->cfg.members[idx].id;
}

static int index_of(const struct ping *pg, uint32_t id)
{
	for (uint32_t i = 0; i < pg->cfg.nmembers; i++)
		if (pg->cfg.members[i].id == id)
			return (int)i;
	return -1;
}

/* A received message, matched to its position in the round. */
static void on_recv(struct ping *pg, const struct rdma_sq_wc *wc)
{
	int q = index_of(pg, wc->peer);
	unsigned k = (unsigned)(wc->wr_id & 0xff);
	uint32_t from = wc->peer, me = pg->o.id;

	if (q < 0) {
		fprintf(stderr, "rdma_ping: member %u: completion from unknown peer %u\n",
			me, wc->peer);
		exit(1);
	}
	if (k == 0xff) {        /* FIN */
		pg->fin[q]++;
		return;
	}
	if (k != pg->got[q] % MSGS_PER_ROUND) {
		fprintf(stderr, "rdma_ping: member %u: message %u from member %u completed "
			"receive %u: receives matched out of order\n", me,
			pg->got[q] % MSGS_PER_ROUND, from, k);
		exit(1);
	}
	if (k == 2 * NSIZES) {  /* DONE */
		if (wc->opcode != RDMA_SQ_OP_RECV) {
			fprintf(stderr, "rdma_ping: member %u: expected DONE from member %u\n",
				me, from);
			exit(1);
		}
		pg->got[q]++;
		return;
	}
	unsigned z = k / 2;
	unsigned round = pg->got[q] / MSGS_PER_ROUND;

	if (k % 2 == 0) {
		if (wc->opcode != RDMA_SQ_OP_RECV_IMM ||
		    wc->imm != ((from << 8) | z)) {
			fprintf(stderr, "rdma_ping: member %u: message %u from member %u: "
				"expected WRITE_WITH_IMM imm 0x%x, got opcode %d imm 0x%x\n",
				me, k, from, (from << 8) | z, wc->opcode, wc->imm);
			exit(1);
		}
		verify(pg, pg->region + area_off(pg, K_WIMM, q) + slot_off[z],
		       K_WIMM, from, me, z, round, "WRITE_WITH_IMM");
		/* The sender's plain WRITE of this size finished before it
		 * posted this one: that data must be here too. */
		verify(pg, pg->region + area_off(pg, K_WRITE, q) + slot_off[z],
		       K_WRITE, from, me, z, round, "WRITE");
	} else {
		if (wc->opcode != RDMA_SQ_OP_RECV || wc->byte_len != sizes[z]) {
			fprintf(stderr, "rdma_ping: member %u: message %u from member %u: "
				"expected SEND of %u bytes, got opcode %d, %u bytes\n",
				me, k, from, sizes[z], wc->opcode, wc->byte_len);
			exit(1);
		}
		verify(pg, pg->region + area_off(pg, K_SEND, q) + slot_off[z],
		       K_SEND, from, me, z, round, "SEND");
	}
	pg->got[q]++;
}

static void check_peers(struct ping *pg)
{
	for (uint32_t i = 0; i < pg->cfg.nmembers; i++) {
		/* A peer that sent FIN has seen ours and may leave. */
		if ((int)i == pg->me || pg->fin[i] ||
		    rdma_sq_peer_alive(pg->node, peer_id(pg, (int)i)))
			continue;
		fprintf(stderr, "rdma_ping: member %u: lost member %u: %s\n", pg->o.id,
			peer_id(pg, (int)i), rdma_sq_peer_error(pg->node, peer_id(pg, (int)i)));
		exit(1);
	}
}

/* Take completions: own posts count down, receives are checked. */
static void progress(struct ping *pg, bool block)
{
	struct rdma_sq_wc wc[32];
	int n = rdma_sq_poll(pg->node, wc, 32);

	if (n < 0) {
		fprintf(stderr, "rdma_ping: member %u: rdma_sq_poll: %s\n", pg->o.id,
			strerror(-n));
		exit(1);
	}
	for (int i = 0; i < n; i++) {
		int q = index_of(pg, wc[i].peer);

		/* After a peer's FIN its leaving may flush what is left. */
		if (wc[i].status && q >= 0 && pg->fin[q]) {
			if (wc[i].wr_id >> 56 != T_RECV)
				pg->own_pending--;
			continue;
		}
		if (wc[i].status) {
			fprintf(stderr, "rdma_ping: member %u: request to/from member %u failed: "
				"%s (%s)\n", pg->o.id, wc[i].peer, wc[i].status_text,
				rdma_sq_peer_error(pg->node, wc[i].peer));
			exit(1);
		}
		switch (wc[i].wr_id >> 56) {
		case T_RECV:
			on_recv(pg, &wc[i]);
			break;
		case T_PERF:
			pg->perf_done++;
			/* fall through */
		case T_OWN:
			pg->own_pending--;
			break;
		}
	}
	check_peers(pg);
	if (n == 0 && block) {
		int ret = rdma_sq_wait(pg->node, 100);

		if (ret && ret != -ETIMEDOUT) {
			fprintf(stderr, "rdma_ping: member %u: rdma_sq_wait: %s\n",
				pg->o.id, strerror(-ret));
			exit(1);
		}
	}
}

static void deadline_check(struct ping *pg, double start, const char *what)
{
	if (now_us() - start > pg->o.op_timeout_ms * 1e3) {
		fprintf(stderr, "rdma_ping: member %u: timed out after %u ms waiting for %s\n",
			pg->o.id, pg->o.op_timeout_ms, what);
		exit(1);
	}
}

static void wait_own(struct ping *pg, const char *what)
{
	double start = now_us();

	while (pg->own_pending) {
		progress(pg, true);
		deadline_check(pg, start, what);
	}
}

static void post_or_die(struct ping *pg, int ret, const struct squall_error *err)
{
	if (ret)
		die("post", err, pg->o.id);
	pg->own_pending++;
}

static void post_round_recvs(struct ping *pg, int q)
{
	struct squall_error err;
	uint32_t p = peer_id(pg, q);

	for (unsigned k = 0; k < MSGS_PER_ROUND; k++) {
		struct rdma_sq_sge sg;
		int n = 0, ret;

		if (k == 2 * NSIZES) {
			sg = (struct rdma_sq_sge){ pg->ctl + 64 * q, 64 };
			n = 1;
		} else if (k % 2 == 1) {
			sg = (struct rdma_sq_sge){ pg->region + area_off(pg, K_SEND, q) +
						   slot_off[k / 2], sizes[k / 2] };
			n = 1;
		}
		ret = rdma_sq_post_recv(pg->node, p, &sg, n, TAG(T_RECV, q, k), &err);
		if (ret)
			die("post receive", &err, pg->o.id);
	}
}

static void post_fin_recv(struct ping *pg, int q)
{
	struct squall_error err;
	struct rdma_sq_sge sg = { pg->ctl + 64 * q, 64 };

	if (rdma_sq_post_recv(pg->node, peer_id(pg, q), &sg, 1, TAG(T_RECV, q, 0xff), &err))
		die("post receive", &err, pg->o.id);
}

static void send_ctl(struct ping *pg, int q, const char *word)
{
	struct squall_error err;
	uint8_t *b = pg->ctl + 64 * (GROUP_CONFIG_MAX_MEMBERS + q);
	struct rdma_sq_sge sg = { b, 16 };

	snprintf((char *)b, 16, "%s", word);
	post_or_die(pg, rdma_sq_send(pg->node, peer_id(pg, q), &sg, 1,
				     TAG(T_OWN, q, 0), RDMA_SQ_SIGNALED, &err), &err);
}

/* One size to one peer: WRITE, READ back, WRITE_WITH_IMM, SEND. */
static void exchange(struct ping *pg, int q, unsigned z)
{
	uint32_t p = peer_id(pg, q), me = pg->o.id;
	uint64_t off = area_off(pg, K_WRITE, pg->me) + slot_off[z];
	struct rdma_sq_sge sg[2];
	struct squall_error err;
	int n;

	fill(pg->src, K_WRITE, me, p, z, pg->round);
	n = pieces(pg->src, sizes[z], sg);
	post_or_die(pg, rdma_sq_write(pg->node, p, sg, n, pg->raddr[q] + off, pg->rkey[q],
				      TAG(T_OWN, q, z), RDMA_SQ_SIGNALED, &err), &err);
	wait_own(pg, "an RDMA WRITE");
	memset(pg->check, 0, sizes[z]);
	n = pieces(pg->check, sizes[z], sg);
	post_or_die(pg, rdma_sq_read(pg->node, p, sg, n, pg->raddr[q] + off, pg->rkey[q],
				     TAG(T_OWN, q, z), RDMA_SQ_SIGNALED, &err), &err);
	wait_own(pg, "an RDMA READ");
	verify(pg, pg->check, K_WRITE, me, p, z, pg->round, "READ back");

	off = area_off(pg, K_WIMM, pg->me) + slot_off[z];
	fill(pg->src, K_WIMM, me, p, z, pg->round);
	n = pieces(pg->src, sizes[z], sg);
	post_or_die(pg, rdma_sq_write_imm(pg->node, p, sg, n, pg->raddr[q] + off,
					  pg->rkey[q], (me << 8) | z, TAG(T_OWN, q, z),
					  RDMA_SQ_SIGNALED, &err), &err);
	wait_own(pg, "an RDMA WRITE_WITH_IMM");

	fill(pg->src, K_SEND, me, p, z, pg->round);
	n = pieces(pg->src, sizes[z], sg);
	post_or_die(pg, rdma_sq_send(pg->node, p, sg, n, TAG(T_OWN, q, z),
				     RDMA_SQ_SIGNALED, &err), &err);
	wait_own(pg, "a SEND");
}

static bool all_got(const struct ping *pg, unsigned want, const unsigned *count)
{
	for (uint32_t i = 0; i < pg->cfg.nmembers; i++)
		if ((int)i != pg->me && count[i] < want)
			return false;
	return true;
}

static void one_round(struct ping *pg)
{
	double start;

	for (uint32_t q = 0; q < pg->cfg.nmembers; q++)
		for (unsigned z = 0; z < NSIZES && (int)q != pg->me; z++)
			exchange(pg, (int)q, z);
	start = now_us();
	while (!all_got(pg, pg->round * MSGS_PER_ROUND + 2 * NSIZES, pg->got)) {
		progress(pg, true);
		deadline_check(pg, start, "the peers' messages");
	}
	/* Everything the peers sent this round is verified: let them go on,
	 * with the next round's receives posted first. */
	for (uint32_t q = 0; q < pg->cfg.nmembers; q++) {
		if ((int)q == pg->me)
			continue;
		if (pg->round + 1 < pg->o.rounds)
			post_round_recvs(pg, (int)q);
		else
			post_fin_recv(pg, (int)q);
		send_ctl(pg, (int)q, "DONE");
	}
	start = now_us();
	while (!all_got(pg, (pg->round + 1) * MSGS_PER_ROUND, pg->got)) {
		progress(pg, true);
		deadline_check(pg, start, "the peers' DONE");
	}
	wait_own(pg, "DONE sends");
}

/* ---- performance: the lowest member against each peer ---------------- */

static volatile uint64_t *stamp_at(uint8_t *slot, unsigned z)
{
	return (volatile uint64_t *)(slot + sizes[z] - 8);
}

/* Spin until the last 8 bytes of slot hold want, taking completions. */
static void spin_for(struct ping *pg, uint8_t *slot, unsigned z, uint64_t want)
{
	double start = now_us();
	unsigned spins = 0;

	while (*stamp_at(slot, z) != want) {
		/* A member waiting its turn must not starve the others (and
		 * the kernel's rxe work) of the CPU. */
		if (spins > 100000)
			sched_yield();
		if (++spins % 64 == 0) {
			progress(pg, false);
			if (spins % 65536 == 0)
				deadline_check(pg, start, "a ping-pong message");
		}
	}
	/* The stamp is the last thing the NIC writes; the payload before it
	 * is not read here, only its arrival timed. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
}

/* One ping-pong write. Like ib_write_lat, only every 16th write asks for a
 * completion (which frees the send queue slots of those before it), so the
 * next ping never waits for the previous one's acknowledgement. */
static void perf_write(struct ping *pg, int q, unsigned z, uint64_t stampv,
		       bool signaled)
{
	struct squall_error err;
	uint64_t off = area_off(pg, K_PERF, pg->me) + slot_off[z];
	uint8_t *buf = pg->src + slot_off[z];
	struct rdma_sq_sge sg = { buf, sizes[z] };

	memcpy(buf + sizes[z] - 8, &stampv, 8);
	/* At most two signaled writes (and 32 requests) in the queue. */
	while (pg->own_pending >= 2)
		progress(pg, false);
	if (rdma_sq_write(pg->node, peer_id(pg, q), &sg, 1, pg->raddr[q] + off,
			  pg->rkey[q], TAG(T_PERF, q, z),
			  signaled ? RDMA_SQ_SIGNALED : 0, &err))
		die("post", &err, pg->o.id);
	if (signaled)
		pg->own_pending++;
}

static unsigned lat_iters(const struct ping *pg, unsigned z)
{
	unsigned n = pg->o.lat_iters >> (z >= 2 ? 2 * (z - 1) : 0);

	return n < 5 ? 5 : n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void latency(struct ping *pg, int q, bool leader, unsigned z,
		    double *avg, double *med)
{
	unsigned iters = lat_iters(pg, z);
	int l = leader ? q : index_of(pg, pg->cfg.members[0].id);
	uint8_t *in = pg->region + area_off(pg, K_PERF, leader ? q : l) + slot_off[z];
	double *t = calloc(iters, sizeof(*t)), sum = 0;

	for (unsigned i = 0; i < iters; i++) {
		uint64_t s = ((uint64_t)(z + 1) << 32) | (i + 1);
		bool sig = i % 16 == 15 || i + 1 == iters;
		double t0 = now_us();

		if (leader) {
			perf_write(pg, q, z, s, sig);
			spin_for(pg, in, z, s);
		} else {
			spin_for(pg, in, z, s);
			perf_write(pg, l, z, s, sig);
		}
		t[i] = (now_us() - t0) / 2;
		sum += t[i];
	}
	wait_own(pg, "ping-pong writes");
	qsort(t, iters, sizeof(*t), cmp_double);
	*avg = sum / iters;
	*med = t[iters / 2];
	free(t);
}

static double bandwidth(struct ping *pg, int q, unsigned z)
{
	uint64_t count = pg->o.bw_bytes / sizes[z];
	uint64_t off = area_off(pg, K_PERF, pg->me) + slot_off[z];
	struct rdma_sq_sge sg = { pg->src + slot_off[z], sizes[z] };
	/* Every batch-th write is signaled (as perftest moderates its CQ);
	 * its completion retires the whole batch, since a QP completes in
	 * order. At most bw_depth writes are in flight. */
	unsigned batch = pg->o.bw_depth > 1 ? pg->o.bw_depth / 2 : 1;
	uint64_t done0 = pg->perf_done;
	struct squall_error err;
	double t0 = now_us(), start = t0;

	if (count < 16)
		count = 16;
	if (count > 20000)
		count = 20000;
	for (uint64_t i = 0; i < count; i++) {
		bool sig = (i + 1) % batch == 0 || i + 1 == count;

		while (i - (pg->perf_done - done0) * batch >= pg->o.bw_depth) {
			progress(pg, false);
			deadline_check(pg, start, "bandwidth writes");
		}
		if (rdma_sq_write(pg->node, peer_id(pg, q), &sg, 1, pg->raddr[q] + off,
				  pg->rkey[q], TAG(T_PERF, q, z),
				  sig ? RDMA_SQ_SIGNALED : 0, &err))
			die("post", &err, pg->o.id);
		if (sig)
			pg->own_pending++;
	}
	while (pg->own_pending) {
		progress(pg, false);
		deadline_check(pg, start, "bandwidth writes");
	}
	return (double)count * sizes[z] / ((now_us() - t0) / 1e6) / 1048576.0;
}

static void perf(struct ping *pg)
{
	bool leader = pg->me == 0;

	for (uint32_t q = 1; q < pg->cfg.nmembers; q++) {
		if (!leader && (int)q != pg->me)
			continue;
		if (leader)
			printf("rdma_ping: member %u -> member %u (%s): latency = half the "
			       "ping-pong round trip, bandwidth = MB/s of 2^20 bytes, %u writes "
			       "in flight\n%10s %12s %12s %12s\n", pg->o.id, peer_id(pg, (int)q),
			       rdma_sq_device_name(pg->node), pg->o.bw_depth,
			       "bytes", "lat_avg_us", "lat_med_us", "bw_MBps");
		for (unsigned z = 0; z < NSIZES; z++) {
			double avg, med, bw;

			latency(pg, (int)q, leader, z, &avg, &med);
			if (!leader)
				continue;
			bw = bandwidth(pg, (int)q, z);
			printf("%10u %12.2f %12.2f %12.2f\n", sizes[z], avg, med, bw);
			printf("PERF peer=%u bytes=%u lat_avg_us=%.2f lat_med_us=%.2f bw_MBps=%.2f\n",
			       peer_id(pg, (int)q), sizes[z], avg, med, bw);
		}
	}
	fflush(stdout);
}

/* ---- setup ------------------------------------------------------------ */

__attribute__((noreturn)) static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: rdma_ping --config GROUP.cfg [--id N] [options]\n"
		"       rdma_ping --id N --member ID,ADDR,PORT [--member ...] [options]\n"
		"options:\n"
		"  [--connect-timeout-ms MS] [--device NAME] [--rounds N]\n"
		"  [--no-perf] [--lat-iters N] [--bw-bytes N] [--bw-depth N]\n"
		"  [--op-timeout-ms MS] [--verbose] [--grants DELAY_MS]\n"
		"  [--relisten HOLD_MS,PARK_MS]\n");
	exit(code);
}

static void add_member(struct group_config *cfg, const char *arg)
{
	struct group_member_cfg *m = &cfg->members[cfg->nmembers];
	unsigned id, port;
	char addr[GROUP_CONFIG_ADDR_MAX];

	if (cfg->nmembers >= GROUP_CONFIG_MAX_MEMBERS ||
	    sscanf(arg, "%u,%63[^,],%u", &id, addr, &port) != 3 ||
	    port == 0 || port > 65535) {
		fprintf(stderr, "rdma_ping: bad --member '%s' (want ID,ADDR,PORT)\n", arg);
		exit(2);
	}
	m->id = id;
	snprintf(m->address, sizeof(m->address), "%s", addr);
	m->port = (uint16_t)port;
	cfg->nmembers++;
}

static void parse(int argc, char **argv, struct ping *pg)
{
	static const struct option lo[] = {
		{ "config", required_argument, 0, 'c' },
		{ "id", required_argument, 0, 'i' },
		{ "member", required_argument, 0, 'm' },
		{ "connect-timeout-ms", required_argument, 0, 't' },
		{ "device", required_argument, 0, 'd' },
		{ "rounds", required_argument, 0, 'r' },
		{ "no-perf", no_argument, 0, 'P' },
		{ "lat-iters", required_argument, 0, 'l' },
		{ "bw-bytes", required_argument, 0, 'b' },
		{ "bw-depth", required_argument, 0, 'D' },
		{ "op-timeout-ms", required_argument, 0, 'o' },
		{ "verbose", no_argument, 0, 'v' },
		{ "grants", required_argument, 0, 'g' },
		{ "relisten", required_argument, 0, 'L' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	bool have_id = false;
	const char *cfg_path = NULL, *id_arg = NULL;
	const char *timeout_arg = NULL, *device_arg = NULL;
	int c;

	snprintf(pg->cfg.name, sizeof(pg->cfg.name), "rdma_ping");
	snprintf(pg->cfg.path, sizeof(pg->cfg.path), "(command line)");
	pg->cfg.connect_timeout_ms = 10000;
	pg->o = (struct opts){ .rounds = 1, .lat_iters = 1000, .bw_bytes = 64 << 20,
			       .bw_depth = 16, .op_timeout_ms = 30000, .perf = true };
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c': cfg_path = optarg; break;
		case 'i': id_arg = optarg; pg->o.id = (uint32_t)strtoul(optarg, NULL, 0); have_id = true; break;
		case 'm': add_member(&pg->cfg, optarg); break;
		case 't': timeout_arg = optarg; break;
		case 'd': device_arg = optarg; break;
		case 'r': pg->o.rounds = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'P': pg->o.perf = false; break;
		case 'l': pg->o.lat_iters = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'b': pg->o.bw_bytes = strtoull(optarg, NULL, 0); break;
		case 'D': pg->o.bw_depth = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'o': pg->o.op_timeout_ms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'v': pg->o.verbose = true; break;
		case 'g':
			pg->o.grants = true;
			pg->o.grant_delay_ms = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'L':
			pg->o.relisten = true;
			if (sscanf(optarg, "%u,%u", &pg->o.hold_ms,
				   &pg->o.park_ms) != 2)
				usage(2);
			break;
		case 'h': usage(0);
		default: usage(2);
		}
	}
	if (cfg_path) {
		struct squall_error err;
		long id;

		if (pg->cfg.nmembers) {
			fprintf(stderr, "rdma_ping: --config and --member exclude each other\n");
			exit(2);
		}
		if (group_config_load(cfg_path, &pg->cfg, &err) < 0) {
			fprintf(stderr, "rdma_ping: %s\n", err.msg);
			exit(2);
		}
		id = group_config_my_id(&pg->cfg, id_arg, &err);
		if (id < 0) {
			fprintf(stderr, "rdma_ping: %s\n", err.msg);
			exit(2);
		}
		pg->o.id = (uint32_t)id;
		have_id = true;
	}
	/* Command-line settings win over the group file's. */
	if (timeout_arg)
		pg->cfg.connect_timeout_ms = (uint32_t)strtoul(timeout_arg, NULL, 0);
	if (device_arg)
		snprintf(pg->cfg.device, sizeof(pg->cfg.device), "%s", device_arg);
	if (!have_id || pg->cfg.nmembers < 2 || pg->o.rounds == 0 || !pg->o.bw_depth ||
	    pg->o.bw_depth > 60)
		usage(2);
	pg->me = index_of(pg, pg->o.id);
	if (pg->me < 0) {
		fprintf(stderr, "rdma_ping: --id %u is not among the --member entries\n", pg->o.id);
		exit(2);
	}
}

static void map_region(struct ping *pg)
{
	/* NKINDS areas per member, then source, check (one area each) and a
	 * control page. */
	uint64_t ctl_len = 64 * 2 * GROUP_CONFIG_MAX_MEMBERS;
	uint64_t len = (NKINDS * (uint64_t)pg->cfg.nmembers + 2) * AREA + ctl_len;

	pg->region = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (pg->region == MAP_FAILED) {
		fprintf(stderr, "rdma_ping: mmap of %" PRIu64 " bytes: %s\n", len, strerror(errno));
		exit(1);
	}
	pg->region_len = len;
	pg->cfg.region_size = len;
	pg->src = pg->region + NKINDS * (uint64_t)pg->cfg.nmembers * AREA;
	pg->check = pg->src + AREA;
	pg->ctl = pg->check + AREA;
}

static int close_ping(struct ping *pg)
{
	rdma_sq_destroy(pg->node);
	munmap(pg->region, pg->region_len);
	free(pg);
	return 0;
}

/* FIN: nobody disconnects while a peer still works with it. */
static int finish(struct ping *pg)
{
	double t0;

	for (uint32_t q = 0; q < pg->cfg.nmembers; q++)
		if ((int)q != pg->me)
			send_ctl(pg, (int)q, "FIN");
	t0 = now_us();
	while (!all_got(pg, 1, pg->fin)) {
		progress(pg, true);
		deadline_check(pg, t0, "the peers' FIN");
	}
	wait_own(pg, "FIN sends");
	printf("rdma_ping: member %u OK: %" PRIu64 " bytes received and verified\n",
	       pg->o.id, pg->verified_bytes);
	return close_ping(pg);
}

static void sleep_ms(unsigned ms)
{
	nanosleep(&(struct timespec){ ms / 1000, (long)(ms % 1000) * 1000000L },
		  NULL);
}

/* --relisten: from this node to the next on the same listener. */
static void relisten(struct ping *pg, const struct rdma_sq_options *opt)
{
	struct rdma_sq_options next = *opt;
	uint32_t key[RDMA_SQ_MAX_MEMBERS] = { 0 };
	struct squall_error err;
	uint64_t addr, len;
	double t0;

	/* The peers' region keys: a peer's next node registers the same
	 * region again only if it could not keep the registration. */
	for (uint32_t q = 0; q < pg->cfg.nmembers; q++)
		if ((int)q != pg->me)
			(void)rdma_sq_remote(pg->node, peer_id(pg, (int)q),
					     RDMA_SQ_TARGET_REGION, &addr,
					     &key[q], &len);
	sleep_ms(pg->o.hold_ms);
	if (rdma_sq_listener_keep(pg->node, &next.listener, &err))
		die("keeping the listener", &err, pg->o.id);
	rdma_sq_destroy(pg->node);
	pg->node = NULL;
	sleep_ms(pg->o.park_ms);
	for (uint32_t q = 0; q < pg->cfg.nmembers; q++)
		if ((int)q != pg->me)
			next.listening |= 1ull << q;
	if (group_transport_create(&pg->cfg, pg->o.id, pg->region, pg->region_len,
				   &next, &pg->node, &err))
		die("creating the next node", &err, pg->o.id);
	t0 = now_us();
	if (rdma_sq_connect_all(pg->node, &err))
		die("connecting the next node", &err, pg->o.id);
	printf("rdma_ping: member %u reconnected to %u peers on its kept listener "
	       "in %.0f ms (held %u ms, parked %u ms)\n", pg->o.id,
	       pg->cfg.nmembers - 1, (now_us() - t0) / 1e3, pg->o.hold_ms,
	       pg->o.park_ms);
	for (uint32_t q = 0; q < pg->cfg.nmembers; q++) {
		uint32_t k = 0;

		if ((int)q == pg->me ||
		    rdma_sq_remote(pg->node, peer_id(pg, (int)q),
				   RDMA_SQ_TARGET_REGION, &addr, &k, &len))
			continue;
		printf("rdma_ping: member %u: member %u's region key %s (%#x, "
		       "was %#x)\n", pg->o.id, peer_id(pg, (int)q),
		       k == key[q] ? "kept" : "changed", k, key[q]);
	}
	fflush(stdout);
}

/* --grants: what peer `id` may write here is its WRITE area. */
static int grant_area(void *arg, uint32_t id, enum rdma_sq_target purpose,
		      void **ptr, size_t *len)
{
	struct ping *pg = arg;
	int q = index_of(pg, id);

	if (q < 0)
		return -ENOENT;
	*len = 0;
	if (purpose == RDMA_SQ_TARGET_SST_ROW) {
		*ptr = pg->region + area_off(pg, K_WRITE, q);
		*len = AREA;
	}
	return 0;
}

/* --grants: wait DELAY_MS, exchange the keys, check that every peer
 * granted its area, and end. */
static int exchange_grants(struct ping *pg)
{
	struct squall_error err;
	double t0;

	sleep_ms(pg->o.grant_delay_ms);
	t0 = now_us();
	if (rdma_sq_grant_all(pg->node, grant_area, pg, pg->cfg.connect_timeout_ms,
			      &err))
		die("grants", &err, pg->o.id);
	for (uint32_t q = 0; q < pg->cfg.nmembers; q++) {
		uint64_t addr, len;
		uint32_t rkey;

		if ((int)q == pg->me)
			continue;
		if (rdma_sq_remote(pg->node, peer_id(pg, (int)q), RDMA_SQ_TARGET_SST_ROW,
				   &addr, &rkey, &len) || len != AREA) {
			fprintf(stderr, "rdma_ping: member %u: member %u granted no "
				"area of %" PRIu64 " bytes\n", pg->o.id,
				peer_id(pg, (int)q), AREA);
			return 1;
		}
	}
	printf("rdma_ping: member %u: grants exchanged with %u peers in %.0f ms "
	       "(%u ms after connecting)\n", pg->o.id, pg->cfg.nmembers - 1,
	       (now_us() - t0) / 1e3, pg->o.grant_delay_ms);
	fflush(stdout);
	nanosleep(&(struct timespec){ 3, 0 }, NULL);
	printf("rdma_ping: member %u OK: grants only\n", pg->o.id);
	return close_ping(pg);
}

int main(int argc, char **argv)
{
	/* It reads the peers' regions back (READ): the one program that may. */
	struct rdma_sq_options opt = { .region_remote_read = true };
	struct squall_error err;
	struct ping *pg = calloc(1, sizeof(*pg));
	const char *wire = getenv("SQUALL_TEST_WIRE_MAJOR");
	const char *minor = getenv("SQUALL_TEST_WIRE_MINOR");
	double t0;

	if (!pg)
		return 1;
	parse(argc, argv, pg);
	map_region(pg);
	if (wire && *wire) {
		opt.wire_major = (uint16_t)strtoul(wire, NULL, 0);
		opt.wire_minor = SQUALL_WIRE_MINOR;
	}
	if (minor && *minor) {
		if (!opt.wire_major)
			opt.wire_major = SQUALL_WIRE_MAJOR;
		opt.wire_minor = (uint16_t)strtoul(minor, NULL, 0);
	}
	opt.log = log_cb;
	opt.log_arg = pg;
	if (pg->o.grants) {
		opt.peer_windows = true;
		opt.region_remote_read = false;
	}
	if (group_transport_create(&pg->cfg, pg->o.id, pg->region, pg->region_len, &opt,
			   &pg->node, &err))
		die("create", &err, pg->o.id);
	t0 = now_us();
	if (rdma_sq_connect_all(pg->node, &err)) {
		char what[64];

		snprintf(what, sizeof(what), "connect (gave up after %.0f ms)",
			 (now_us() - t0) / 1e3);
		die(what, &err, pg->o.id);
	}
	printf("rdma_ping: member %u connected to %u peers on %s port %u in %.0f ms\n",
	       pg->o.id, pg->cfg.nmembers - 1, rdma_sq_device_name(pg->node),
	       rdma_sq_port(pg->node), (now_us() - t0) / 1e3);
	for (uint32_t q = 0; q < pg->cfg.nmembers; q++)
		if ((int)q != pg->me)
			printf("rdma_ping: member %u: member %u refuses with a "
			       "hello: %s\n", pg->o.id, peer_id(pg, (int)q),
			       rdma_sq_peer_refuses_with_hello(pg->node,
					peer_id(pg, (int)q)) ? "yes" : "no");
	fflush(stdout);
	if (pg->o.relisten)
		relisten(pg, &opt);
	if (pg->o.grants)
		return exchange_grants(pg);
	for (uint32_t q = 0; q < pg->cfg.nmembers; q++) {
		uint64_t len;

		if ((int)q == pg->me)
			continue;
		if (rdma_sq_remote(pg->node, peer_id(pg, (int)q), RDMA_SQ_TARGET_REGION,
				   &pg->raddr[q], &pg->rkey[q], &len) || len < pg->region_len) {
			fprintf(stderr, "rdma_ping: member %u: member %u's region target is "
				"missing or too small\n", pg->o.id, peer_id(pg, (int)q));
			return 1;
		}
		post_round_recvs(pg, (int)q);
	}
	for (pg->round = 0; pg->round < pg->o.rounds; pg->round++) {
		one_round(pg);
		if (pg->o.verbose || pg->round == 0 || pg->round + 1 == pg->o.rounds) {
			printf("rdma_ping: member %u round %u verified: WRITE, READ, "
			       "WRITE_WITH_IMM, SEND/RECV with %u peers (%" PRIu64 " bytes checked)\n",
			       pg->o.id, pg->round, pg->cfg.nmembers - 1, pg->verified_bytes);
			fflush(stdout);
		}
	}
	if (pg->o.perf)
		perf(pg);
	return finish(pg);
}
