/*
 * test_p2p.c - the pure parts of point-to-point messages through use-once
 * regions (group/p2p_codec.h): the request and its answer on the wire,
 * a refusal's code and text, what a peer can get wrong, the READ plan,
 * and what a receiver without room decides.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "group/p2p_codec.h"

static const struct wire_use_once region = { 0x7f0012345000ull, 0xabcd01,
					     64ull << 20 };

static void decode(const uint8_t *buf, int n, struct wire_msg *m)
{
	struct squall_error err = { 0 };

	assert_true(n > 0);
	assert_int_equal(wire_decode(buf, (size_t)n, m, &err), 0);
	assert_int_equal(m->len, (size_t)n);
}

static void test_request_round_trip(void **state)
{
	uint8_t buf[GROUP_P2P_MSG_CAP];
	struct wire_use_once u = { 0, 0, 0 };
	struct wire_msg m;
	bool reg = true;
	int n;

	(void)state;
	for (int r = 0; r < 2; r++) {
		n = group_p2p_encode_request(buf, sizeof(buf), &region, r, NULL);
		/* header + one extension, no payload */
		assert_int_equal(n, WIRE_HDR_LEN + WIRE_EXT_HDR_LEN +
					    WIRE_EXT_USE_ONCE_LEN);
		decode(buf, n, &m);
		assert_int_equal(m.type, WIRE_MSG_P2P);
		assert_int_equal(m.payload_len, 0);
		assert_int_equal(group_p2p_parse_request(&m, &u, &reg), 1);
		assert_true(u.addr == region.addr && u.rkey == region.rkey &&
			    u.len == region.len);
		assert_int_equal(reg, r);
	}
}

static void test_request_small_and_bad(void **state)
{
	uint8_t buf[GROUP_P2P_MSG_CAP];
	struct wire_use_once u = { 0, 0, 0 }, bad = region;
	struct wire_msg m;
	bool reg;
	int n;

	(void)state;
	/* No extension: a message in the payload. */
	n = wire_encode(buf, sizeof(buf), WIRE_MSG_P2P, 0, NULL, 0, 0, NULL);
	decode(buf, n, &m);
	assert_int_equal(group_p2p_parse_request(&m, &u, &reg), 0);
	/* A region of no bytes, one past 2^63, one that wraps around. */
	bad.len = 0;
	n = group_p2p_encode_request(buf, sizeof(buf), &bad, false, NULL);
	decode(buf, n, &m);
	assert_int_equal(group_p2p_parse_request(&m, &u, &reg), -EPROTO);
	bad.len = (1ull << 63) + 1;
	n = group_p2p_encode_request(buf, sizeof(buf), &bad, false, NULL);
	decode(buf, n, &m);
	assert_int_equal(group_p2p_parse_request(&m, &u, &reg), -EPROTO);
	bad.addr = UINT64_MAX - 10;
	bad.len = 100;
	n = group_p2p_encode_request(buf, sizeof(buf), &bad, false, NULL);
	decode(buf, n, &m);
	assert_int_equal(group_p2p_parse_request(&m, &u, &reg), -EPROTO);
}

static void test_answer_read(void **state)
{
	uint8_t buf[GROUP_P2P_MSG_CAP];
	struct wire_use_once u = { 0, 0, 0 };
	struct wire_msg m;
	char why[64] = "x";
	int code = 1, n;

	(void)state;
	n = group_p2p_encode_answer(buf, sizeof(buf), &region, 0, "ignored",
				    NULL);
	decode(buf, n, &m);
	assert_int_equal(m.type, WIRE_MSG_P2P_DONE);
	assert_int_equal(m.flags & WIRE_P2P_DONE_REFUSED, 0);
	assert_int_equal(m.payload_len, 0);
	assert_int_equal(group_p2p_parse_answer(&m, &u, &code, why,
						sizeof(why)), 0);
	assert_int_equal(code, 0);
	assert_string_equal(why, "");
	assert_true(u.addr == region.addr && u.rkey == region.rkey &&
		    u.len == region.len);
}

static void test_answer_refused(void **state)
{
	uint8_t buf[GROUP_P2P_MSG_CAP];
	const char *text = "member 1 had no room for 67108864 bytes within 5000 ms";
	struct wire_use_once u = { 0, 0, 0 };
	struct wire_msg m;
	char why[GROUP_P2P_WHY_MAX];
	int code, n;

	(void)state;
	n = group_p2p_encode_answer(buf, sizeof(buf), &region, -ENOBUFS, text,
				    NULL);
	decode(buf, n, &m);
	assert_true(m.flags & WIRE_P2P_DONE_REFUSED);
	assert_int_equal(m.payload_len, 4 + strlen(text));
	assert_int_equal(group_p2p_parse_answer(&m, &u, &code, why,
						sizeof(why)), 0);
	assert_int_equal(code, -ENOBUFS);
	assert_string_equal(why, text);
	/* A short buffer for the text: cut, terminated. */
	assert_int_equal(group_p2p_parse_answer(&m, &u, &code, why, 9), 0);
	assert_string_equal(why, "member 1");
}

static void test_answer_text_bounds(void **state)
{
	uint8_t buf[GROUP_P2P_MSG_CAP];
	char long_text[400], why[GROUP_P2P_WHY_MAX];
	struct wire_use_once u = { 0, 0, 0 };
	struct wire_msg m;
	int code, n;

	(void)state;
	/* A reason longer than GROUP_P2P_WHY_MAX is cut, and still fits. */
	memset(long_text, 'a', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = 0;
	n = group_p2p_encode_answer(buf, sizeof(buf), &region, -EMSGSIZE,
				    long_text, NULL);
	assert_true(n > 0 && (size_t)n <= sizeof(buf));
	decode(buf, n, &m);
	assert_int_equal(m.payload_len, 4 + GROUP_P2P_WHY_MAX);
	assert_int_equal(group_p2p_parse_answer(&m, &u, &code, why,
						sizeof(why)), 0);
	assert_int_equal(code, -EMSGSIZE);
	assert_int_equal(strlen(why), GROUP_P2P_WHY_MAX - 1);
	/* A buffer too small for an answer: -ENOSPC, not an overrun. */
	assert_int_equal(group_p2p_encode_answer(buf, 60, &region, -EMSGSIZE,
						 long_text, NULL), -ENOSPC);
}

/* An answer a peer built by hand: flags, payload. */
static int forged(uint8_t *buf, uint16_t flags, const uint8_t *payload,
		  uint32_t plen, bool with_ext)
{
	struct wire_ext e = { .type = WIRE_EXT_USE_ONCE };
	int n;

	e.u.use_once = region;
	n = wire_encode(buf, GROUP_P2P_MSG_CAP, WIRE_MSG_P2P_DONE, flags, &e,
			with_ext ? 1 : 0, plen, NULL);
	if (plen)
		memcpy(buf + n, payload, plen);
	return n + (int)plen;
}

static void test_answer_malformed(void **state)
{
	uint8_t buf[GROUP_P2P_MSG_CAP];
	static const uint8_t zero[4] = { 0, 0, 0, 0 };
	static const uint8_t huge[4] = { 0xff, 0xff, 0, 0 };
	static const uint8_t ctrl[7] = { 105, 0, 0, 0, 'a', '\n', 0x1b };
	struct wire_use_once u = { 0, 0, 0 };
	struct wire_msg m;
	char why[32];
	int code;

	(void)state;
	/* No region named. */
	decode(buf, forged(buf, 0, NULL, 0, false), &m);
	assert_int_equal(group_p2p_parse_answer(&m, &u, &code, why,
						sizeof(why)), -EPROTO);
	/* Refused without a code, with code 0, with no errno value. */
	decode(buf, forged(buf, WIRE_P2P_DONE_REFUSED, zero, 2, true), &m);
	assert_int_equal(group_p2p_parse_answer(&m, &u, &code, why,
						sizeof(why)), -EPROTO);
	decode(buf, forged(buf, WIRE_P2P_DONE_REFUSED, zero, 4, true), &m);
	assert_int_equal(group_p2p_parse_answer(&m, &u, &code, why,
						sizeof(why)), -EPROTO);
	decode(buf, forged(buf, WIRE_P2P_DONE_REFUSED, huge, 4, true), &m);
	assert_int_equal(group_p2p_parse_answer(&m, &u, &code, why,
						sizeof(why)), -EPROTO);
	/* A peer's control bytes never reach a message unescaped. */
	decode(buf, forged(buf, WIRE_P2P_DONE_REFUSED, ctrl, 7, true), &m);
	assert_int_equal(group_p2p_parse_answer(&m, &u, &code, why,
						sizeof(why)), 0);
	assert_int_equal(code, -105);
	assert_string_equal(why, "a??");
}

static void test_read_plan(void **state)
{
	static const uint64_t lens[] = { 1, 4077, GROUP_P2P_READ_CHUNK - 1,
					 GROUP_P2P_READ_CHUNK,
					 GROUP_P2P_READ_CHUNK + 1,
					 64ull << 20, (5ull << 32) + 3 };

	(void)state;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint64_t at = 0, reads = 0;
		uint32_t n;

		while ((n = group_p2p_read_len(at, lens[i]))) {
			assert_true(n <= GROUP_P2P_READ_CHUNK);
			at += n;
			reads++;
		}
		assert_true(at == lens[i]);
		assert_true(reads == (lens[i] + GROUP_P2P_READ_CHUNK - 1) /
					     GROUP_P2P_READ_CHUNK);
	}
	assert_int_equal(group_p2p_read_len(10, 5), 0);
	assert_int_equal(group_p2p_read_len(64ull << 20, 64ull << 20), 0);
}

static void test_no_room(void **state)
{
	const uint64_t region_len = 128ull << 20;

	(void)state;
	assert_int_equal(group_p2p_no_room(64ull << 20, region_len, 100, 5100),
			 GROUP_P2P_ROOM_WAIT);
	assert_int_equal(group_p2p_no_room(region_len, region_len, 5099, 5100),
			 GROUP_P2P_ROOM_WAIT);
	assert_int_equal(group_p2p_no_room(64ull << 20, region_len, 5100, 5100),
			 GROUP_P2P_ROOM_GAVE_UP);
	/* Larger than the region: now, whatever the clock says. */
	assert_int_equal(group_p2p_no_room(region_len + 1, region_len, 0, 5100),
			 GROUP_P2P_ROOM_NEVER);
	assert_int_equal(group_p2p_no_room(UINT64_MAX, region_len, 9999, 5100),
			 GROUP_P2P_ROOM_NEVER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_round_trip),
		cmocka_unit_test(test_request_small_and_bad),
		cmocka_unit_test(test_answer_read),
		cmocka_unit_test(test_answer_refused),
		cmocka_unit_test(test_answer_text_bounds),
		cmocka_unit_test(test_answer_malformed),
		cmocka_unit_test(test_read_plan),
		cmocka_unit_test(test_no_room),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
