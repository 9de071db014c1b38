/*
 * test_wire.c - the control-message codec: exact bytes, round trips, and
 * every way a peer's bytes can be wrong.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <squall/version.h>
#include <squall/wire.h>

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static struct wire_ext ext_member(uint32_t id)
{
	struct wire_ext e = { .type = WIRE_EXT_MEMBER };
	e.u.member = id;
	return e;
}

static struct wire_ext ext_view(uint32_t id)
{
	struct wire_ext e = { .type = WIRE_EXT_VIEW };
	e.u.view = id;
	return e;
}

static struct wire_ext ext_use_once(uint64_t addr, uint32_t rkey,
				    uint64_t len)
{
	struct wire_ext e = { .type = WIRE_EXT_USE_ONCE };
	e.u.use_once.addr = addr;
	e.u.use_once.rkey = rkey;
	e.u.use_once.len = len;
	return e;
}

static struct wire_ext ext_target(uint32_t purpose, uint64_t addr,
				  uint32_t rkey, uint64_t len)
{
	struct wire_ext e = { .type = WIRE_EXT_TARGET };
	e.u.target.purpose = purpose;
	e.u.target.addr = addr;
	e.u.target.rkey = rkey;
	e.u.target.len = len;
	return e;
}

static struct wire_ext ext_raw(uint16_t type, const void *v, uint16_t len)
{
	struct wire_ext e = { .type = type, .len = len, .value = v };
	return e;
}

static const uint8_t payload[] = "a payload of some bytes";

/* A p2p message with every known extension, unknown ones between them,
 * and a payload, in buf. Returns its length. */
static size_t build_rich(uint8_t *buf, size_t cap)
{
	static const uint8_t junk[300] = { 0xee };
	struct wire_ext exts[] = {
		ext_raw(0x7777, junk, 5),
		ext_member(7),
		ext_raw(0xffff, NULL, 0),
		ext_use_once(0x1122334455667788ull, 0xcafe0001, 1ull << 33),
		ext_raw(1000, junk, sizeof(junk)),
		ext_view(42),
		ext_target(WIRE_TARGET_SMC_RING, 0x7f0000001000ull, 0xbeef,
			   65536),
	};
	int n = wire_encode(buf, cap, WIRE_MSG_P2P, 0x8001, exts,
			    sizeof(exts) / sizeof(exts[0]), sizeof(payload),
			    NULL);

	assert_true(n > 0);
	assert_true((size_t)n + sizeof(payload) <= cap);
	memcpy(buf + n, payload, sizeof(payload));
	return (size_t)n + sizeof(payload);
}

static void test_golden_bytes(void **state)
{
	struct wire_ext e = ext_member(0x01020304);
	uint8_t buf[64];
	const uint8_t want[] = {
		'S', 'Q', 'W', 'L',             /* magic */
		SQUALL_WIRE_MAJOR, 0, SQUALL_WIRE_MINOR, 0,
		0x01, 0x00,                     /* type: hello */
		0x34, 0x12,                     /* flags */
		0x08, 0x00, 0x00, 0x00,         /* ext_len */
		0x0d, 0x0c, 0x0b, 0x0a,         /* payload_len */
		0x02, 0x00, 0x04, 0x00,         /* ext member, 4 bytes */
		0x04, 0x03, 0x02, 0x01,
	};

	(void)state;
	assert_int_equal(wire_encode(buf, sizeof(buf), WIRE_MSG_HELLO, 0x1234,
				     &e, 1, 0x0a0b0c0d, NULL),
			 sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
}

static void test_round_trip(void **state)
{
	uint8_t buf[1024];
	size_t len = build_rich(buf, sizeof(buf));
	struct squall_error err;
	struct wire_msg m;
	struct wire_ext e;
	uint32_t pos = 0;

	(void)state;
	squall_error_clear(&err);
	assert_int_equal(wire_decode(buf, len, &m, &err), 0);
	assert_int_equal(err.code, 0);
	assert_int_equal(m.major, SQUALL_WIRE_MAJOR);
	assert_int_equal(m.minor, SQUALL_WIRE_MINOR);
	assert_int_equal(m.type, WIRE_MSG_P2P);
	assert_int_equal(m.flags, 0x8001);
	assert_int_equal(m.payload_len, sizeof(payload));
	assert_int_equal(m.len, len);
	assert_ptr_equal(m.ext, buf + WIRE_HDR_LEN);
	assert_memory_equal(m.payload, payload, sizeof(payload));

	/* Known extensions, in order, unknown ones skipped. */
	assert_int_equal(wire_ext_next(&m, &pos, &e), 1);
	assert_int_equal(e.type, WIRE_EXT_MEMBER);
	assert_int_equal(e.len, WIRE_EXT_MEMBER_LEN);
	assert_int_equal(e.u.member, 7);
	assert_int_equal(wire_ext_next(&m, &pos, &e), 1);
	assert_int_equal(e.type, WIRE_EXT_USE_ONCE);
	assert_int_equal(e.len, WIRE_EXT_USE_ONCE_LEN);
	assert_true(e.u.use_once.addr == 0x1122334455667788ull);
	assert_int_equal(e.u.use_once.rkey, 0xcafe0001);
	assert_true(e.u.use_once.len == 1ull << 33);
	assert_int_equal(wire_ext_next(&m, &pos, &e), 1);
	assert_int_equal(e.type, WIRE_EXT_VIEW);
	assert_int_equal(e.u.view, 42);
	assert_int_equal(wire_ext_next(&m, &pos, &e), 1);
	assert_int_equal(e.type, WIRE_EXT_TARGET);
	assert_int_equal(e.u.target.purpose, WIRE_TARGET_SMC_RING);
	assert_true(e.u.target.addr == 0x7f0000001000ull);
	assert_int_equal(e.u.target.rkey, 0xbeef);
	assert_true(e.u.target.len == 65536);
	assert_int_equal(wire_ext_next(&m, &pos, &e), 0);
	assert_int_equal(wire_ext_next(&m, &pos, &e), 0);

	/* find reaches known and unknown types alike. */
	assert_int_equal(wire_ext_find(&m, WIRE_EXT_VIEW, &e), 0);
	assert_int_equal(e.u.view, 42);
	assert_int_equal(wire_ext_find(&m, 1000, &e), 0);
	assert_int_equal(e.len, 300);
	assert_int_equal(e.value[0], 0xee);
	assert_int_equal(wire_ext_find(&m, 0xffff, &e), 0);
	assert_int_equal(e.len, 0);
	assert_int_equal(wire_ext_find(&m, 999, &e), -ENOENT);
}

static void test_no_extensions(void **state)
{
	uint8_t buf[WIRE_HDR_LEN];
	struct wire_msg m;
	struct wire_ext e;
	uint32_t pos = 0;

	(void)state;
	assert_int_equal(wire_encode(buf, sizeof(buf), WIRE_MSG_GOODBYE, 0,
				     NULL, 0, 0, NULL), WIRE_HDR_LEN);
	assert_int_equal(wire_decode(buf, sizeof(buf), &m, NULL), 0);
	assert_int_equal(m.type, WIRE_MSG_GOODBYE);
	assert_int_equal(m.ext_len, 0);
	assert_int_equal(m.len, WIRE_HDR_LEN);
	assert_int_equal(wire_ext_next(&m, &pos, &e), 0);
}

/* Only unknown extensions: the iterator yields nothing, decode is happy. */
static void test_unknown_only(void **state)
{
	uint8_t buf[256], v[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	struct wire_ext exts[] = {
		ext_raw(500, v, 9), ext_raw(0, v, 3), ext_raw(5, NULL, 0),
		ext_raw(0x8001, v, 1),
	};
	struct wire_msg m;
	struct wire_ext e;
	uint32_t pos = 0;
	int n;

	(void)state;
	n = wire_encode(buf, sizeof(buf), 9999, 0, exts, 4, 0, NULL);
	assert_int_equal(n, WIRE_HDR_LEN + 4 * WIRE_EXT_HDR_LEN + 13);
	assert_int_equal(wire_decode(buf, (size_t)n, &m, NULL), 0);
	assert_int_equal(m.type, 9999); /* unknown types are the caller's */
	assert_string_equal(wire_msg_type_name(m.type), "unknown");
	assert_int_equal(wire_ext_next(&m, &pos, &e), 0);
	assert_int_equal(pos, m.ext_len);
}

static void test_every_truncation(void **state)
{
	uint8_t buf[1024];
	size_t len = build_rich(buf, sizeof(buf));
	struct squall_error err;
	struct wire_msg m;

	(void)state;
	for (size_t cut = 0; cut < len; cut++) {
		int rc;
		squall_error_clear(&err);
		rc = wire_decode(buf, cut, &m, &err);
		if (cut < WIRE_HDR_LEN)
			assert_int_equal(rc, -ENODATA);
		else
			assert_int_equal(rc, -EMSGSIZE);
		assert_int_equal(err.code, rc);
		assert_true(strlen(err.msg) > 0);
	}
	squall_error_clear(&err);
	assert_int_equal(wire_decode(buf, 5, &m, &err), -ENODATA);
	assert_string_equal(err.msg, "wire: truncated header: 5 of 20 bytes");
	assert_int_equal(len, 429); /* 20 + 385 of extensions + 24 */
	assert_int_equal(wire_decode(buf, len - 1, &m, &err), -EMSGSIZE);
	assert_non_null(strstr(err.msg, "only 428 received"));
	assert_int_equal(wire_decode(buf, len, &m, NULL), 0);
}

/* Cut the extension area itself (ext_len shrunk, no payload): a cut on an
 * extension boundary leaves a shorter valid message, any other cut is a
 * malformed area. */
static void test_every_extension_cut(void **state)
{
	uint8_t buf[1024], copy[1024];
	size_t len = build_rich(buf, sizeof(buf));
	struct wire_msg m;
	uint32_t boundary = 0, ext_len;

	(void)state;
	assert_int_equal(wire_decode(buf, len, &m, NULL), 0);
	ext_len = m.ext_len;
	for (uint32_t cut = 0; cut < ext_len; cut++) {
		struct squall_error err;
		int rc;

		memcpy(copy, buf, len);
		put32(copy + 12, cut);
		put32(copy + 16, 0);
		squall_error_clear(&err);
		rc = wire_decode(copy, WIRE_HDR_LEN + cut, &m, &err);
		if (cut == boundary) {
			assert_int_equal(rc, 0);
			/* next boundary: skip this extension */
			boundary += WIRE_EXT_HDR_LEN +
				    (uint32_t)(buf[WIRE_HDR_LEN + cut + 2] |
					       buf[WIRE_HDR_LEN + cut + 3] << 8);
		} else {
			assert_int_equal(rc, -EILSEQ);
			assert_int_equal(err.code, -EILSEQ);
			assert_non_null(strstr(err.msg, "extension"));
		}
	}
	assert_int_equal(boundary, ext_len);
}

static void test_oversized_lengths(void **state)
{
	uint8_t buf[1024], copy[1024];
	size_t len = build_rich(buf, sizeof(buf));
	struct squall_error err;
	struct wire_msg m;

	(void)state;
	/* ext_len beyond the limit, whatever the buffer holds */
	memcpy(copy, buf, len);
	put32(copy + 12, 0xffffffff);
	assert_int_equal(wire_decode(copy, len, &m, &err), -E2BIG);
	put32(copy + 12, WIRE_EXT_AREA_MAX + 1);
	assert_int_equal(wire_decode(copy, len, &m, &err), -E2BIG);
	assert_string_equal(err.msg,
			    "wire: extension area of 16385 bytes, at most 16384");

	/* lengths whose sum wraps 32 bits */
	memcpy(copy, buf, len);
	put32(copy + 16, 0xffffffff);
	assert_int_equal(wire_decode(copy, len, &m, &err), -EOVERFLOW);
	assert_non_null(strstr(err.msg, "overflow"));
	put32(copy + 12, 0);
	put32(copy + 16, 0xffffffff - WIRE_HDR_LEN + 1);
	assert_int_equal(wire_decode(copy, len, &m, &err), -EOVERFLOW);
	/* exactly 4 GiB - 1 does not wrap, but exceeds the buffer */
	put32(copy + 16, 0xffffffff - WIRE_HDR_LEN);
	assert_int_equal(wire_decode(copy, len, &m, &err), -EMSGSIZE);

	/* payload one byte longer than what arrived */
	memcpy(copy, buf, len);
	put32(copy + 16, sizeof(payload) + 1);
	assert_int_equal(wire_decode(copy, len, &m, &err), -EMSGSIZE);

	/* an extension claiming more than its area */
	memcpy(copy, buf, len);
	put16(copy + WIRE_HDR_LEN + 2, 0xffff);
	assert_int_equal(wire_decode(copy, len, &m, &err), -EILSEQ);
	assert_string_equal(err.msg, "wire: extension type 30583 at offset 0 "
				     "claims 65535 bytes, 381 left in the area");
	/* one byte too many for the area */
	memcpy(copy, buf, len);
	put16(copy + WIRE_HDR_LEN + 2, 381 + 1);
	assert_int_equal(wire_decode(copy, len, &m, &err), -EILSEQ);
}

/* A known extension shorter than its fields is refused; a longer one (a
 * newer minor's) is read and its tail ignored. */
static void test_known_extension_sizes(void **state)
{
	uint8_t buf[128], v[WIRE_EXT_USE_ONCE_LEN + 6];
	struct squall_error err;
	struct wire_msg m;
	struct wire_ext e;
	uint32_t pos = 0;
	int n;

	(void)state;
	for (unsigned i = 0; i < sizeof(v); i++)
		v[i] = (uint8_t)(i + 1);
	/* encode as an unknown type, then relabel it use_once */
	struct wire_ext raw = ext_raw(0x4000, v, sizeof(v));
	n = wire_encode(buf, sizeof(buf), WIRE_MSG_P2P, 0, &raw, 1, 0, NULL);
	assert_true(n > 0);
	put16(buf + WIRE_HDR_LEN, WIRE_EXT_USE_ONCE);
	assert_int_equal(wire_decode(buf, (size_t)n, &m, &err), 0);
	assert_int_equal(wire_ext_next(&m, &pos, &e), 1);
	assert_int_equal(e.len, sizeof(v));
	assert_true(e.u.use_once.addr == 0x0807060504030201ull);
	assert_int_equal(e.u.use_once.rkey, 0x0c0b0a09);
	assert_true(e.u.use_once.len == 0x14131211100f0e0dull);

	raw.len = WIRE_EXT_USE_ONCE_LEN - 1;
	n = wire_encode(buf, sizeof(buf), WIRE_MSG_P2P, 0, &raw, 1, 0, NULL);
	put16(buf + WIRE_HDR_LEN, WIRE_EXT_USE_ONCE);
	squall_error_clear(&err);
	assert_int_equal(wire_decode(buf, (size_t)n, &m, &err), -EINVAL);
	assert_string_equal(err.msg, "wire: use_once extension at offset 0 "
				     "has 19 bytes, needs 20");
}

static void test_bad_magic(void **state)
{
	uint8_t buf[1024];
	size_t len = build_rich(buf, sizeof(buf));
	struct squall_error err;
	struct wire_msg m;

	(void)state;
	buf[0] = 'X';
	squall_error_clear(&err);
	assert_int_equal(wire_decode(buf, len, &m, &err), -EBADMSG);
	assert_int_equal(err.code, -EBADMSG);
	assert_string_equal(err.msg, "wire: bad magic 0x4c575158 (expected "
				     "0x4c575153): not a squall message");
	/* Another byte order is another magic. */
	buf[0] = 'L', buf[1] = 'W', buf[2] = 'Q', buf[3] = 'S';
	assert_int_equal(wire_decode(buf, len, &m, &err), -EBADMSG);
}

static void test_major_mismatch(void **state)
{
	uint8_t buf[1024];
	size_t len = build_rich(buf, sizeof(buf));
	struct squall_error err;
	struct wire_msg m;
	char want[128];

	(void)state;
	put16(buf + 4, SQUALL_WIRE_MAJOR + 1);
	put16(buf + 6, 0);
	squall_error_clear(&err);
	assert_int_equal(wire_decode(buf, len, &m, &err), -EPROTONOSUPPORT);
	assert_int_equal(err.code, -EPROTONOSUPPORT);
	snprintf(want, sizeof(want),
		 "peer speaks wire version %d.0, this member speaks %d.%d",
		 SQUALL_WIRE_MAJOR + 1, SQUALL_WIRE_MAJOR, SQUALL_WIRE_MINOR);
	assert_string_equal(err.msg, want);
	if (SQUALL_WIRE_MAJOR == 1 && SQUALL_WIRE_MINOR == 0)
		assert_string_equal(err.msg, "peer speaks wire version 2.0, "
					     "this member speaks 1.0");

	/* The version is named even when the rest of the header is cut or
	 * laid out differently: only the first 8 bytes are read. */
	put16(buf + 6, 7);
	assert_int_equal(wire_decode(buf, 8, &m, &err), -EPROTONOSUPPORT);
	assert_non_null(strstr(err.msg, "version 2.7,"));

	put16(buf + 4, 0);
	put16(buf + 6, 9);
	assert_int_equal(wire_decode(buf, len, &m, &err), -EPROTONOSUPPORT);
	assert_non_null(strstr(err.msg, "peer speaks wire version 0.9,"));
}

static void test_minor_mismatch(void **state)
{
	uint8_t buf[1024];
	size_t len = build_rich(buf, sizeof(buf));
	struct wire_msg m;
	struct wire_ext e;
	uint32_t pos = 0;

	(void)state;
	put16(buf + 6, SQUALL_WIRE_MINOR + 3);
	put16(buf + 10, 0xffff); /* flags this member does not know */
	assert_int_equal(wire_decode(buf, len, &m, NULL), 0);
	assert_int_equal(m.major, SQUALL_WIRE_MAJOR);
	assert_int_equal(m.minor, SQUALL_WIRE_MINOR + 3);
	assert_int_equal(m.flags, 0xffff);
	assert_int_equal(wire_ext_next(&m, &pos, &e), 1);
	assert_int_equal(e.u.member, 7);
}

static void test_encode_errors(void **state)
{
	uint8_t buf[1024];
	struct wire_ext exts[] = {
		ext_member(1), ext_use_once(1, 2, 3),
	};
	struct wire_ext big = ext_raw(77, buf, 60000);
	struct wire_ext bad = ext_raw(77, NULL, 3);
	struct squall_error err;
	int need = WIRE_HDR_LEN + 2 * WIRE_EXT_HDR_LEN + WIRE_EXT_MEMBER_LEN +
		   WIRE_EXT_USE_ONCE_LEN;

	(void)state;
	for (int cap = 0; cap < need; cap++) {
		squall_error_clear(&err);
		assert_int_equal(wire_encode(buf, (size_t)cap, WIRE_MSG_P2P, 0,
					     exts, 2, 0, &err), -ENOSPC);
		assert_int_equal(err.code, -ENOSPC);
	}
	assert_int_equal(wire_encode(buf, (size_t)need, WIRE_MSG_P2P, 0, exts,
				     2, 0, NULL), need);
	assert_int_equal(wire_encode(buf, sizeof(buf), WIRE_MSG_P2P, 0, &big, 1,
				     0, &err), -E2BIG);
	assert_int_equal(wire_encode(buf, sizeof(buf), WIRE_MSG_P2P, 0, &bad, 1,
				     0, &err), -EINVAL);
	assert_int_equal(wire_encode(buf, sizeof(buf), WIRE_MSG_P2P, 0, exts, 2,
				     0xffffffff, &err), -EOVERFLOW);
}

/* Messages back to back in one buffer: m.len finds the next. */
static void test_consecutive(void **state)
{
	uint8_t buf[2048];
	size_t a = build_rich(buf, sizeof(buf));
	struct wire_ext v = ext_view(5);
	int b = wire_encode(buf + a, sizeof(buf) - a, WIRE_MSG_VIEW_ACK, 0, &v,
			    1, 0, NULL);
	struct wire_msg m;
	struct wire_ext e;

	(void)state;
	assert_true(b > 0);
	assert_int_equal(wire_decode(buf, a + (size_t)b, &m, NULL), 0);
	assert_int_equal(m.type, WIRE_MSG_P2P);
	assert_int_equal(m.len, a);
	assert_int_equal(wire_decode(buf + m.len, (size_t)b, &m, NULL), 0);
	assert_int_equal(m.type, WIRE_MSG_VIEW_ACK);
	assert_int_equal(wire_ext_find(&m, WIRE_EXT_VIEW, &e), 0);
	assert_int_equal(e.u.view, 5);
}

/* The first message of a connection rides in rdma_cm's private data, 56
 * bytes for an RC connect: a hello naming the member and granting one
 * target fits exactly. */
static void test_hello_fits_private_data(void **state)
{
	struct wire_ext exts[] = {
		ext_member(12),
		ext_target(WIRE_TARGET_SST_ROW, 0x7f0000000000ull, 0x1234, 4096),
	};
	uint8_t buf[56];
	struct wire_msg m;
	struct wire_ext e;

	(void)state;
	assert_int_equal(wire_encode(buf, sizeof(buf), WIRE_MSG_HELLO, 0, exts,
				     2, 0, NULL), 56);
	assert_int_equal(wire_decode(buf, sizeof(buf), &m, NULL), 0);
	assert_int_equal(wire_ext_find(&m, WIRE_EXT_TARGET, &e), 0);
	assert_int_equal(e.u.target.rkey, 0x1234);
}

static void test_type_names(void **state)
{
	(void)state;
	assert_string_equal(wire_msg_type_name(WIRE_MSG_HELLO), "hello");
	assert_string_equal(wire_msg_type_name(WIRE_MSG_RDMC_ANNOUNCE),
			    "rdmc_announce");
	assert_string_equal(wire_msg_type_name(WIRE_MSG_INVALID), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_bytes),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_no_extensions),
		cmocka_unit_test(test_unknown_only),
		cmocka_unit_test(test_every_truncation),
		cmocka_unit_test(test_every_extension_cut),
		cmocka_unit_test(test_oversized_lengths),
		cmocka_unit_test(test_known_extension_sizes),
		cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_major_mismatch),
		cmocka_unit_test(test_minor_mismatch),
		cmocka_unit_test(test_encode_errors),
		cmocka_unit_test(test_consecutive),
		cmocka_unit_test(test_hello_fits_private_data),
		cmocka_unit_test(test_type_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
