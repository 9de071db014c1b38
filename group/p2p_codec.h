/*
 * p2p_codec.h - the pure parts of a point-to-point message through a
 * use-once region (group/p2p.c): the request and its answer on the wire,
 * the plan of the READs that fetch it, and what a receiver without room
 * does. No verbs, no group: the unit tests drive them alone.
 *
 * The request is a WIRE_MSG_P2P with no payload and one USE_ONCE
 * extension {address, rkey, length} (WIRE_P2P_REGISTRATION when the key is
 * a registration rather than a window). The answer is a WIRE_MSG_P2P_DONE
 * with the same extension, so the owner finds its region by it; a refusal
 * sets WIRE_P2P_DONE_REFUSED and carries {u32 errno, text}.
 */
#ifndef SQUALL_GROUP_P2P_CODEC_H
#define SQUALL_GROUP_P2P_CODEC_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <squall/wire.h>

/* A receiver reads a region in READs of at most GROUP_P2P_READ_CHUNK
 * bytes, at most GROUP_P2P_READS of them in flight per peer (they share
 * the queue pair's send queue with the SST, SMC and RDMC). */
#define GROUP_P2P_READ_CHUNK (4u << 20)
#define GROUP_P2P_READS 4u
/* How long a receiver keeps a request it has no room for, trying again
 * on later progress passes, before it refuses it (-ENOBUFS). */
#define GROUP_P2P_ROOM_MS 5000u
/* Room for an encoded request or answer (header, extension, refusal). */
#define GROUP_P2P_MSG_CAP 224u
#define GROUP_P2P_WHY_MAX 160u

/* Encode a request for region u into buf (cap bytes). Returns its
 * length or a negative errno (wire_encode's). */
static inline int group_p2p_encode_request(void *buf, size_t cap,
					   const struct wire_use_once *u,
					   bool registration,
					   struct squall_error *err)
{
	struct wire_ext e = { .type = WIRE_EXT_USE_ONCE,
			      .len = WIRE_EXT_USE_ONCE_LEN };

	e.u.use_once = *u;
	return wire_encode(buf, cap, WIRE_MSG_P2P,
			   registration ? WIRE_P2P_REGISTRATION : 0, &e, 1, 0,
			   err);
}

/* Encode the answer to region u into buf (cap bytes): code 0 when it was
 * read, else a negative errno and why (one line) for a refusal. Returns
 * the whole message's length (header, extension, payload) or a negative
 * errno. */
static inline int group_p2p_encode_answer(void *buf, size_t cap,
					  const struct wire_use_once *u,
					  int code, const char *why,
					  struct squall_error *err)
{
	struct wire_ext e = { .type = WIRE_EXT_USE_ONCE,
			      .len = WIRE_EXT_USE_ONCE_LEN };
	size_t wl = code && why ? strnlen(why, GROUP_P2P_WHY_MAX) : 0;
	uint32_t plen = code ? 4u + (uint32_t)wl : 0;
	uint8_t *p = buf;
	int n;

	e.u.use_once = *u;
	n = wire_encode(buf, cap, WIRE_MSG_P2P_DONE,
			code ? WIRE_P2P_DONE_REFUSED : 0, &e, 1, plen, err);
	if (n < 0)
		return n;
	if ((size_t)n + plen > cap)
		return squall_error_set(err, -ENOSPC, "p2p: an answer of %zu "
					"bytes does not fit %zu", (size_t)n + plen,
					cap);
	if (code) {
		uint32_t c = (uint32_t)-code;

		for (int i = 0; i < 4; i++)
			p[n + i] = (uint8_t)(c >> (8 * i));
		memcpy(p + n + 4, why, wl);
	}
	return n + (int)plen;
}

/* What a decoded WIRE_MSG_P2P asks: 0 a message in its payload, 1 a
 * use-once region (*u, *registration), or -EPROTO for a request that no
 * receiver can serve (a region of no bytes, or of more than 2^63). */
static inline int group_p2p_parse_request(const struct wire_msg *m,
					  struct wire_use_once *u,
					  bool *registration)
{
	struct wire_ext e;

	if (wire_ext_find(m, WIRE_EXT_USE_ONCE, &e))
		return 0;
	if (e.len < WIRE_EXT_USE_ONCE_LEN || !e.u.use_once.len ||
	    e.u.use_once.len > INT64_MAX ||
	    e.u.use_once.addr + e.u.use_once.len < e.u.use_once.addr)
		return -EPROTO;
	*u = e.u.use_once;
	*registration = m->flags & WIRE_P2P_REGISTRATION;
	return 1;
}

/* Read a decoded WIRE_MSG_P2P_DONE: its region *u, and *code 0 (read) or
 * the receiver's negative errno with its text in why (why_len bytes,
 * made printable, always terminated). Returns 0, or -EPROTO when the
 * answer names no region or its refusal is malformed. */
static inline int group_p2p_parse_answer(const struct wire_msg *m,
					 struct wire_use_once *u, int *code,
					 char *why, size_t why_len)
{
	struct wire_ext e;
	uint32_t c = 0, n;

	if (why_len)
		why[0] = 0;
	if (wire_ext_find(m, WIRE_EXT_USE_ONCE, &e) ||
	    e.len < WIRE_EXT_USE_ONCE_LEN)
		return -EPROTO;
	*u = e.u.use_once;
	*code = 0;
	if (!(m->flags & WIRE_P2P_DONE_REFUSED))
		return 0;
	if (m->payload_len < 4)
		return -EPROTO;
	for (int i = 3; i >= 0; i--)
		c = c << 8 | m->payload[i];
	if (c == 0 || c > 4095)
		return -EPROTO;
	*code = -(int)c;
	n = m->payload_len - 4;
	if (why_len && n > why_len - 1)
		n = (uint32_t)why_len - 1;
	for (uint32_t i = 0; why_len && i < n; i++) {
		uint8_t ch = m->payload[4 + i];

		why[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	if (why_len)
		why[n] = 0;
	return 0;
}

/* The length of the READ that starts at offset `at` of a region of len
 * bytes (0 once it is all asked for). Reads complete in order on a queue
 * pair, so the same call tells a completion's length. */
static inline uint32_t group_p2p_read_len(uint64_t at, uint64_t len)
{
	uint64_t left = at < len ? len - at : 0;

	return left > GROUP_P2P_READ_CHUNK ? GROUP_P2P_READ_CHUNK
					   : (uint32_t)left;
}

/* A receiver found no room for a request of len bytes. */
enum group_p2p_room {
	GROUP_P2P_ROOM_WAIT = 0, /* keep it; try again on a later pass */
	GROUP_P2P_ROOM_NEVER,    /* larger than the region: refuse now
				    (-EMSGSIZE) */
	GROUP_P2P_ROOM_GAVE_UP,  /* no room by the deadline: refuse
				    (-ENOBUFS) */
};

static inline enum group_p2p_room group_p2p_no_room(uint64_t len,
						    uint64_t region_len,
						    uint64_t now_ms,
						    uint64_t deadline_ms)
{
	if (len > region_len)
		return GROUP_P2P_ROOM_NEVER;
	if (now_ms >= deadline_ms)
		return GROUP_P2P_ROOM_GAVE_UP;
	return GROUP_P2P_ROOM_WAIT;
}

#endif /* SQUALL_GROUP_P2P_CODEC_H */
