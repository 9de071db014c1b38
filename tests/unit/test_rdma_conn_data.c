/*
 * test_rdma_conn_data.c - the connection private data: its byte layout, decoding
 * of short, padded and foreign records, the version rule and the group
 * file rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rdma/conn_data.h"

static const struct rdma_sq_hello sample = {
	.major = 1, .minor = 7, .member_id = 0x01020304, .rkey = 0xa1b2c3d4,
	.addr = 0x1122334455667788ull, .len = 0x0000000100000040ull,
	.cfg_fp = 0x08090a0b0c0d0e0full, .nonce = 0x1011121314151617ull,
	.flags = 0x21222324,
};

static void test_fits_rc_private_data(void **state)
{
	(void)state;
	/* RC connect private data is at most 56 bytes. */
	assert_true(RDMA_SQ_WIRE_LEN <= 56);
}

static void test_layout_is_little_endian(void **state)
{
	uint8_t b[RDMA_SQ_WIRE_LEN];
	static const uint8_t want[RDMA_SQ_WIRE_LEN] = {
		'S', 'Q', 'A', 'L',             /* magic */
		1, 0, 7, 0,                     /* major, minor */
		0x04, 0x03, 0x02, 0x01,         /* member id */
		0xd4, 0xc3, 0xb2, 0xa1,         /* rkey */
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* addr */
		0x40, 0, 0, 0, 1, 0, 0, 0,      /* len */
		0x0f, 0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0x09, 0x08, /* cfg_fp */
		0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11, 0x10, /* nonce */
		0x24, 0x23, 0x22, 0x21,         /* flags */
	};

	(void)state;
	rdma_sq_hello_encode(&sample, b);
	assert_memory_equal(b, want, sizeof(want));
}

static void test_round_trip_with_padding(void **state)
{
	uint8_t b[56];
	struct rdma_sq_hello h;

	(void)state;
	memset(b, 0xee, sizeof(b));     /* the CM pads with whatever */
	rdma_sq_hello_encode(&sample, b);
	assert_int_equal(rdma_sq_hello_decode(b, sizeof(b), &h), 0);
	assert_int_equal(h.major, sample.major);
	assert_int_equal(h.minor, sample.minor);
	assert_int_equal(h.member_id, sample.member_id);
	assert_int_equal(h.rkey, sample.rkey);
	assert_true(h.addr == sample.addr);
	assert_true(h.len == sample.len);
	assert_true(h.cfg_fp == sample.cfg_fp);
	assert_true(h.nonce == sample.nonce);
	assert_int_equal(h.flags, sample.flags);
}

/* A 1.0 peer's record ends before the flags: what the CM pads after it
 * is not flags, whatever it holds. */
static void test_1_0_has_no_flags(void **state)
{
	struct rdma_sq_hello old = sample;
	uint8_t b[56];
	struct rdma_sq_hello h;

	(void)state;
	old.minor = 0;
	memset(b, 0xee, sizeof(b));
	rdma_sq_hello_encode(&old, b);
	memset(b + RDMA_SQ_WIRE_LEN_1_0, 0xee, sizeof(b) - RDMA_SQ_WIRE_LEN_1_0);
	assert_int_equal(rdma_sq_hello_decode(b, sizeof(b), &h), 0);
	assert_int_equal(h.flags, 0);
	assert_true(h.nonce == sample.nonce);
	/* 48 bytes are a whole 1.0 record. */
	assert_int_equal(rdma_sq_hello_decode(b, RDMA_SQ_WIRE_LEN_1_0, &h), 0);
	assert_int_equal(h.flags, 0);
	/* A 1.1 record cut after 48 bytes has no flags either. */
	rdma_sq_hello_encode(&sample, b);
	assert_int_equal(rdma_sq_hello_decode(b, RDMA_SQ_WIRE_LEN_1_0, &h), 0);
	assert_int_equal(h.flags, 0);
}

static void test_rejects_short_foreign_and_missing(void **state)
{
	uint8_t b[RDMA_SQ_WIRE_LEN];
	uint8_t zeros[148] = { 0 };
	struct rdma_sq_hello h;

	(void)state;
	rdma_sq_hello_encode(&sample, b);
	assert_int_equal(rdma_sq_hello_decode(b, RDMA_SQ_WIRE_LEN_1_0 - 1, &h), -EPROTO);
	assert_int_equal(rdma_sq_hello_decode(NULL, 0, &h), -EPROTO);
	/* A reject by the CM itself (nobody listening) carries zeros. */
	assert_int_equal(rdma_sq_hello_decode(zeros, sizeof(zeros), &h), -EPROTO);
	b[0] ^= 1;
	assert_int_equal(rdma_sq_hello_decode(b, sizeof(b), &h), -EPROTO);
}

static void test_version_rule(void **state)
{
	struct rdma_sq_hello peer = sample;
	struct squall_error err;

	(void)state;
	squall_error_clear(&err);
	/* Minor versions may differ. */
	assert_int_equal(rdma_sq_hello_check_version(&peer, 1, 0, "member 2", &err), 0);
	assert_int_equal(err.code, 0);
	peer.major = 2;
	peer.minor = 3;
	assert_int_equal(rdma_sq_hello_check_version(&peer, 1, 0,
			 "member 2 (10.77.0.2:7000)", &err), -EPROTO);
	assert_int_equal(err.code, -EPROTO);
	assert_non_null(strstr(err.msg, "member 2 (10.77.0.2:7000)"));
	assert_non_null(strstr(err.msg, "2.3"));
	assert_non_null(strstr(err.msg, "1.0"));
	/* A NULL error record is allowed. */
	assert_int_equal(rdma_sq_hello_check_version(&peer, 1, 0, "x", NULL), -EPROTO);
}

static void test_group_file_must_match(void **state)
{
	struct rdma_sq_hello peer = sample;
	struct squall_error err = { 0 };

	(void)state;
	assert_int_equal(rdma_sq_hello_check_cfg(&peer, sample.cfg_fp, "member 2",
						 "g.cfg", &err), 0);
	peer.cfg_fp ^= 1;
	assert_int_equal(rdma_sq_hello_check_cfg(&peer, sample.cfg_fp, "member 2",
						 "g.cfg", &err), -EPROTO);
	assert_non_null(strstr(err.msg, "member 2's group file differs from "
				"this member's g.cfg"));
	assert_non_null(strstr(err.msg, "08090a0b0c0d0e0e vs 08090a0b0c0d0e0f"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fits_rc_private_data),
		cmocka_unit_test(test_layout_is_little_endian),
		cmocka_unit_test(test_group_file_must_match),
		cmocka_unit_test(test_round_trip_with_padding),
		cmocka_unit_test(test_1_0_has_no_flags),
		cmocka_unit_test(test_rejects_short_foreign_and_missing),
		cmocka_unit_test(test_version_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
