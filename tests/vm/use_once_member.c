/*
 * use_once_member - use-once regions on real RDMA: the peer reads exactly
 * once, and afterwards the key is dead.
 *
 * Member 1 opens use-once regions over ranges of a malloc'd buffer
 * (foreign memory: not the region), each filled with a new generation's
 * pattern, and sends {address, rkey, length} as a wire-encoded P2P message
 * with the USE_ONCE extension (payload: generation, last-transfer flag).
 * Member 2 RDMA-reads the range into its region, checks every byte and
 * answers P2P_DONE: with SEND_WITH_INV of the rkey on the window path, with
 * a plain SEND on the registration path (WIRE_P2P_REGISTRATION), after
 * which member 1 deregisters and sends a FIN (a P2P without extension).
 * Member 1 checks that each answer invalidated its own window's key.
 *
 * Then member 2 reads the last region again with the old rkey and must get
 * a remote access error. On the window path it does so right after its
 * SEND_WITH_INV completes, while member 1 still holds the window open and
 * makes no call: the invalidation alone killed the key. (The failed READ
 * puts the connection in the error state, so it comes last.)
 *
 * With --read-region, member 2 instead RDMA-reads member 1's region, with
 * the region's own key, as soon as member 1 says it is connected: a peer
 * may write the region, never read it, so the read must fail with a
 * remote access error.
 *
 * usage: use_once_member --id 1|2 --port BASE [--transfers N] [--no-window]
 *                        [--read-region]
 */
#include <getopt.h>
#include <stdint.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <squall/wire.h>

#include "member_common.h"

#define BUF_LEN ((size_t)4 << 20)
#define MSG_OFF 0          /* member 1: what it sends */
#define ANS_OFF 4096       /* member 1: answers; member 2: its messages in */
#define READ_OFF 8192      /* member 2: where it reads into */
#define REGION (READ_OFF + BUF_LEN + 4096)
#define WR_BIND 1
#define WR_SEND 2
#define WR_RECV 3
#define WR_READ 4
#define WR_STALE 5

struct p2p_payload {
	uint32_t gen;
	uint32_t last;
};

static bool no_window;

/* Encode a P2P message (USE_ONCE when uo is set) at the region's MSG_OFF;
 * returns its length. */
static uint32_t encode(struct member *m, uint16_t type, uint16_t flags,
		       const struct rdma_sq_use_once *uo,
		       const struct p2p_payload *pl)
{
	struct wire_ext ext = { .type = WIRE_EXT_USE_ONCE,
				.len = WIRE_EXT_USE_ONCE_LEN };
	struct squall_error err;
	int n;

	if (uo) {
		ext.u.use_once.addr = rdma_sq_use_once_addr(uo);
		ext.u.use_once.rkey = rdma_sq_use_once_rkey(uo);
		ext.u.use_once.len = rdma_sq_use_once_len(uo);
	}
	n = wire_encode(m->region + MSG_OFF, 1024, type, flags, &ext, uo ? 1 : 0,
			pl ? sizeof(*pl) : 0, &err);
	if (n < 0)
		die(m, "wire_encode: %s", err.msg);
	if (pl)
		memcpy(m->region + MSG_OFF + n, pl, sizeof(*pl));
	return (uint32_t)n + (pl ? sizeof(*pl) : 0);
}

static void send_msg(struct member *m, uint32_t len)
{
	struct rdma_sq_sge sg = { m->region + MSG_OFF, len };
	struct squall_error err;

	if (rdma_sq_send(m->node, m->peer, &sg, 1, WR_SEND, RDMA_SQ_SIGNALED, &err))
		die(m, "send: %s", err.msg);
	member_wait_ok(m, WR_SEND, "send");
}

static void post_in(struct member *m)
{
	struct rdma_sq_sge sg = { m->region + ANS_OFF, 1024 };
	struct squall_error err;

	if (rdma_sq_post_recv(m->node, m->peer, &sg, 1, WR_RECV, &err))
		die(m, "post_recv: %s", err.msg);
}

static void sender(struct member *m, unsigned transfers)
{
	uint8_t *buf = malloc(BUF_LEN);
	static const size_t lens[] = { 3 << 20, 1 << 20, 256 << 10, 12345 };
	uint32_t rkeys[64];
	struct rdma_sq_use_once_stats st;
	struct squall_error err;

	if (!buf || transfers > 64)
		die(m, "malloc or --transfers");
	for (unsigned t = 0; t < transfers; t++) {
		size_t len = lens[t % 4], off = 4096 * t + 8 * t + 1;
		struct p2p_payload pl = { t + 1, t + 1 == transfers };
		struct rdma_sq_use_once *uo;
		enum rdma_sq_use_once_path path;
		struct rdma_sq_wc ans;
		uint16_t flags;

		fill(buf + off, len, t + 1, (uintptr_t)(buf + off));
		post_in(m);
		if (rdma_sq_use_once_open(m->node, m->peer, buf + off, len,
					  no_window ? RDMA_SQ_USE_ONCE_NO_WINDOW : 0,
					  WR_BIND, &uo, &err))
			die(m, "use_once_open: %s", err.msg);
		path = rdma_sq_use_once_path(uo);
		if (path == RDMA_SQ_USE_ONCE_WINDOW)
			member_wait_ok(m, WR_BIND, "bind of the window");
		rkeys[t] = rdma_sq_use_once_rkey(uo);
		for (unsigned k = 0; k < t; k++)
			if (rkeys[k] == rkeys[t])
				die(m, "transfer %u got the rkey %#x of transfer %u",
				    t + 1, rkeys[t], k + 1);
		flags = path == RDMA_SQ_USE_ONCE_REGISTRATION ? WIRE_P2P_REGISTRATION : 0;
		send_msg(m, encode(m, WIRE_MSG_P2P, flags, uo, &pl));
		ans = member_wait_ok(m, WR_RECV, "answer");
		printf("member 1 transfer %u: path=%s rkey=%#x len=%zu answered%s (invalidated key %#x)\n",
		       t + 1, rdma_sq_use_once_path_name(path), rkeys[t], len,
		       ans.flags & RDMA_SQ_WC_INVALIDATED ? " with invalidation" : "",
		       ans.inv_rkey);
		if (path == RDMA_SQ_USE_ONCE_WINDOW &&
		    (!(ans.flags & RDMA_SQ_WC_INVALIDATED) || ans.inv_rkey != rkeys[t]))
			die(m, "transfer %u: the answer did not invalidate rkey %#x",
			    t + 1, rkeys[t]);
		if (path == RDMA_SQ_USE_ONCE_WINDOW && pl.last) {
			/* leave the window to the peer's invalidation alone
			 * while it tries the old key */
			member_wait_peer_gone(m);
		}
		if (rdma_sq_use_once_close(m->node, uo, &ans, &err))
			die(m, "use_once_close: %s", err.msg);
		if (path == RDMA_SQ_USE_ONCE_REGISTRATION && pl.last)
			send_msg(m, encode(m, WIRE_MSG_P2P, 0, NULL, NULL));
	}
	if (no_window)
		member_wait_peer_gone(m);
	rdma_sq_use_once_stats(m->node, &st);
	printf("member 1 use-once: windows=%llu registrations=%llu "
	       "remote_invalidations=%llu local_invalidations=%llu%s%s\n",
	       (unsigned long long)st.windows, (unsigned long long)st.registrations,
	       (unsigned long long)st.remote_invalidations,
	       (unsigned long long)st.local_invalidations,
	       *rdma_sq_use_once_why_not_window(m->node) ? "; no window: " : "",
	       rdma_sq_use_once_why_not_window(m->node));
	free(buf);
}

/* Read one announced region, check it, answer. Returns the region. */
static struct wire_use_once receive_one(struct member *m, bool *last,
					bool *registration)
{
	const uint8_t *in = m->region + ANS_OFF;
	struct rdma_sq_wc w = member_wait_ok(m, WR_RECV, "receive");
	struct rdma_sq_sge dst;
	struct p2p_payload pl;
	struct wire_msg msg;
	struct wire_ext ext;
	struct squall_error err;
	uint32_t len;
	size_t at;

	if (wire_decode(in, w.byte_len, &msg, &err))
		die(m, "wire_decode: %s", err.msg);
	if (msg.type != WIRE_MSG_P2P || wire_ext_find(&msg, WIRE_EXT_USE_ONCE, &ext) ||
	    msg.payload_len != sizeof(pl))
		die(m, "expected a P2P message with a use-once region");
	memcpy(&pl, msg.payload, sizeof(pl));
	*last = pl.last;
	*registration = msg.flags & WIRE_P2P_REGISTRATION;
	if (ext.u.use_once.len > BUF_LEN)
		die(m, "region of %llu bytes", (unsigned long long)ext.u.use_once.len);
	dst.ptr = m->region + READ_OFF;
	dst.len = (uint32_t)ext.u.use_once.len;
	if (rdma_sq_read(m->node, m->peer, &dst, 1, ext.u.use_once.addr,
			 ext.u.use_once.rkey, WR_READ, RDMA_SQ_SIGNALED, &err))
		die(m, "read: %s", err.msg);
	member_wait_ok(m, WR_READ, "RDMA READ of the use-once region");
	at = check(dst.ptr, dst.len, pl.gen, ext.u.use_once.addr);
	if (at < dst.len)
		die(m, "transfer %u: byte %zu of %u read is %#x, expected %#x", pl.gen,
		    at, dst.len, ((uint8_t *)dst.ptr)[at],
		    pattern(pl.gen, ext.u.use_once.addr + at));
	if (!*last)
		post_in(m);
	len = encode(m, WIRE_MSG_P2P_DONE, 0, NULL, NULL);
	dst.ptr = m->region + MSG_OFF;
	dst.len = len;
	if (*registration ?
	    rdma_sq_send(m->node, m->peer, &dst, 1, WR_SEND, RDMA_SQ_SIGNALED, &err) :
	    rdma_sq_send_inv(m->node, m->peer, &dst, 1, ext.u.use_once.rkey,
			     WR_SEND, RDMA_SQ_SIGNALED, &err))
		die(m, "answer: %s", err.msg);
	member_wait_ok(m, WR_SEND, "answer");
	printf("member 2 transfer %u: read %llu bytes with rkey %#x, all verified; answered with %s\n",
	       pl.gen, (unsigned long long)ext.u.use_once.len, ext.u.use_once.rkey,
	       *registration ? "SEND" : "SEND_WITH_INV");
	return ext.u.use_once;
}

static void receiver(struct member *m)
{
	struct wire_use_once u = { 0, 0, 0 };
	struct rdma_sq_sge dst = { m->region + READ_OFF, 4096 };
	struct rdma_sq_wc w;
	struct squall_error err;
	bool last = false, reg = false;

	post_in(m);
	while (!last)
		u = receive_one(m, &last, &reg);
	if (reg) {
		/* the key dies when member 1 deregisters: it says so */
		post_in(m);
		member_wait_ok(m, WR_RECV, "FIN");
	}
	if (dst.len > u.len)
		dst.len = (uint32_t)u.len;
	if (rdma_sq_read(m->node, m->peer, &dst, 1, u.addr, u.rkey, WR_STALE,
			 RDMA_SQ_SIGNALED, &err))
		die(m, "read with the old rkey: %s", err.msg);
	w = member_wait(m, WR_STALE);
	if (!w.status)
		die(m, "RDMA READ with the old rkey %#x SUCCEEDED after the use-once "
		    "region was %s", u.rkey, reg ? "deregistered" : "invalidated");
	printf("member 2 RDMA READ with the old rkey %#x after the %s: failed with "
	       "\"%s\" (ibv status %d)%s\n", u.rkey,
	       reg ? "deregistration" : "SEND_WITH_INV", w.status_text, w.ibv_status,
	       w.ibv_status == IBV_WC_REM_ACCESS_ERR ? ": remote access error" : "");
	if (w.ibv_status != IBV_WC_REM_ACCESS_ERR)
		exit(1);
}

/* --read-region: member 2 reads from the middle of member 1's region. */
static void read_region(struct member *m)
{
	struct rdma_sq_sge dst = { m->region + READ_OFF, 4096 };
	struct squall_error err;
	struct rdma_sq_wc w;
	uint64_t addr, len;
	uint32_t rkey;

	/* Member 1 says it is connected first: the failed READ breaks the
	 * connection, which must not happen while member 1 still waits for
	 * its own side of it in rdma_sq_connect_all. */
	post_in(m);
	member_wait_ok(m, WR_RECV, "member 1's word that it is connected");
	if (rdma_sq_remote(m->node, m->peer, RDMA_SQ_TARGET_REGION, &addr,
			   &rkey, &len))
		die(m, "no region target for member 1");
	if (rdma_sq_read(m->node, m->peer, &dst, 1, addr + len / 2, rkey,
			 WR_READ, RDMA_SQ_SIGNALED, &err))
		die(m, "read of the region: %s", err.msg);
	w = member_wait(m, WR_READ);
	if (!w.status)
		die(m, "RDMA READ of member 1's region with its key SUCCEEDED");
	printf("member 2 RDMA READ of member 1's region (rkey %#x, %llu of %llu "
	       "bytes in): failed with \"%s\" (ibv status %d)%s\n", rkey,
	       (unsigned long long)(len / 2), (unsigned long long)len,
	       w.status_text, w.ibv_status,
	       w.ibv_status == IBV_WC_REM_ACCESS_ERR ? ": remote access error" : "");
	if (w.ibv_status != IBV_WC_REM_ACCESS_ERR)
		exit(1);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "id", required_argument, 0, 'i' },
		{ "port", required_argument, 0, 'p' },
		{ "transfers", required_argument, 0, 't' },
		{ "no-window", no_argument, 0, 'n' },
		{ "read-region", no_argument, 0, 'r' },
		{ 0, 0, 0, 0 },
	};
	unsigned id = 0, port = 7660, transfers = 6;
	struct member m;
	bool region = false;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'i')
			id = (unsigned)atoi(optarg);
		else if (c == 'p')
			port = (unsigned)atoi(optarg);
		else if (c == 't')
			transfers = (unsigned)atoi(optarg);
		else if (c == 'n')
			no_window = true;
		else if (c == 'r')
			region = true;
		else
			return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	member_init(&m, "use_once_member", id, port, REGION, REGCACHE_MONITOR_AUTO);
	if (region && id == 1) {
		send_msg(&m, 1);
		member_wait_peer_gone(&m);
	} else if (region) {
		read_region(&m);
	} else if (id == 1) {
		sender(&m, transfers);
	} else {
		receiver(&m);
	}
	rdma_sq_destroy(m.node);
	return 0;
}
