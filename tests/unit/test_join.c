/*
 * test_join.c - the bounds of the join path (group/join.c): a member
 * reads a joiner's request or proof only up to GROUP_JOIN_MSG_MAX bytes,
 * whatever length its header claims, and a joiner takes a state of at
 * most what the length field can say.
 */
#include <endian.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <squall/wire.h>

#include "group/group_int.h"

/* The header a member reads first, with the lengths it claims. */
static void header(uint8_t *hdr, uint32_t ext, uint32_t payload)
{
	int h = wire_encode(hdr, WIRE_HDR_LEN, WIRE_MSG_JOIN, 0, NULL, 0, 0,
			    NULL);
	uint32_t e = htole32(ext), p = htole32(payload);

	/* Any lengths, as a stranger may write them. */
	assert_int_equal(h, WIRE_HDR_LEN);
	memcpy(hdr + 12, &e, 4);
	memcpy(hdr + 16, &p, 4);
}

static void test_request_bounds(void **state)
{
	uint8_t hdr[WIRE_HDR_LEN];
	uint64_t total;

	(void)state;
	/* A request: header, member extension, fingerprint and nonce. */
	header(hdr, WIRE_EXT_HDR_LEN + WIRE_EXT_MEMBER_LEN, 16);
	assert_int_equal(group_join_msg_total(hdr, GROUP_JOIN_MSG_MAX, &total), 0);
	assert_int_equal(total, WIRE_HDR_LEN + 8 + 16);
	/* A proof with the most the member takes: exactly the bound. */
	header(hdr, 0, GROUP_JOIN_MSG_MAX - WIRE_HDR_LEN);
	assert_int_equal(group_join_msg_total(hdr, GROUP_JOIN_MSG_MAX, &total), 0);
	assert_int_equal(total, GROUP_JOIN_MSG_MAX);
	/* One byte more, a claim of 4 GiB, or extensions past their area:
	 * refused before anything is read or allocated. */
	header(hdr, 0, GROUP_JOIN_MSG_MAX - WIRE_HDR_LEN + 1);
	assert_int_equal(group_join_msg_total(hdr, GROUP_JOIN_MSG_MAX, &total),
			 -EMSGSIZE);
	header(hdr, 0, UINT32_MAX);
	assert_int_equal(group_join_msg_total(hdr, GROUP_JOIN_MSG_MAX, &total),
			 -EMSGSIZE);
	header(hdr, WIRE_EXT_AREA_MAX + 1, 0);
	assert_int_equal(group_join_msg_total(hdr, UINT64_MAX, &total), -EMSGSIZE);
	/* Both lengths at their most do not wrap. */
	header(hdr, UINT32_MAX, UINT32_MAX);
	assert_int_equal(group_join_msg_total(hdr, UINT64_MAX, &total), -EMSGSIZE);
	assert_true(total > UINT32_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
