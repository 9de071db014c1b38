/*
 * test_sst_layout.c - the SST row layout: alignment, offsets, row size,
 * the cache-line rule, segments and their trailers, and the fingerprint;
 * and where a receive's SEND lands in the receive area.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <squall/sst.h>

#include "sst/layout.h"
#include "sst/table.h"

static struct sst_layout *make(const struct sst_column *c, uint32_t n)
{
	struct sst_layout *l = NULL;
	struct squall_error err;

	squall_error_clear(&err);
	assert_int_equal(sst_layout_create(c, n, &l, &err), 0);
	assert_non_null(l);
	return l;
}

/* Every field: 8-byte aligned, inside the row, not overlapping the header
 * or another field, and within one cache line unless larger than one (then
 * starting on a line). Every segment: its columns in order inside
 * [lo, trailer), its 16-byte trailer after them within one line, segments
 * in row order without overlap, the header first. */
static void check_invariants(const struct sst_layout *l)
{
	size_t row = sst_layout_row_size(l);
	size_t prev_end = SST_HDR_SIZE;

	assert_int_equal(row % SST_CACHE_LINE, 0);
	assert_int_equal(l->segs[0].lo, 0);
	assert_int_equal(l->segs[0].trailer, SST_HDR_SEQ);
	assert_int_equal(sst_seg_end(&l->segs[0]), SST_HDR_SIZE);
	for (uint32_t s = 1; s < sst_layout_nsegs(l); s++) {
		const struct sst_seg *sg = &l->segs[s];

		assert_true(sg->lo >= sst_seg_end(&l->segs[s - 1]));
		assert_true(sg->lo < sg->trailer);
		assert_int_equal(sg->trailer % 8, 0);
		assert_int_equal(sg->trailer / SST_CACHE_LINE,
				 (sst_seg_end(sg) - 1) / SST_CACHE_LINE);
		assert_true(sst_seg_end(sg) <= row);
	}
	for (uint32_t i = 0; i < sst_layout_ncols(l); i++) {
		size_t off = sst_layout_offset(l, i);
		size_t sz = sst_layout_col_size(l, i);
		uint32_t s = sst_layout_col_segment(l, i);

		assert_int_equal(off % 8, 0);
		assert_int_equal(sz % 8, 0);
		assert_true(off >= prev_end);
		assert_true(off + sz <= row);
		if (sz <= SST_CACHE_LINE)
			assert_int_equal(off / SST_CACHE_LINE,
					 (off + sz - 1) / SST_CACHE_LINE);
		else
			assert_int_equal(off % SST_CACHE_LINE, 0);
		assert_true(s >= 1 && s < sst_layout_nsegs(l));
		assert_true(off >= l->segs[s].lo);
		assert_true(off + sz <= l->segs[s].trailer);
		if (i > 0)
			assert_true(s == sst_layout_col_segment(l, i - 1) ||
				    s == sst_layout_col_segment(l, i - 1) + 1);
		prev_end = off + sz;
	}
	/* No more than one line of padding at the end. */
	prev_end = sst_seg_end(&l->segs[sst_layout_nsegs(l) - 1]);
	assert_true(row - prev_end < SST_CACHE_LINE);
}

static void test_header_then_scalars(void **state)
{
	(void)state;
	const struct sst_column c[] = {
		{ "counter", SST_COL_U64, 0 },
		{ "ready", SST_COL_FLAG, 1 },
		{ "seq", SST_COL_U64, 1 },
	};
	struct sst_layout *l = make(c, 3);

	/* Each its own segment: 8 bytes, then a 16-byte trailer. */
	assert_int_equal(sst_layout_ncols(l), 3);
	assert_int_equal(sst_layout_nsegs(l), 4);
	assert_int_equal(sst_layout_offset(l, 0), 64);
	assert_int_equal(sst_layout_offset(l, 1), 88);
	assert_int_equal(sst_layout_offset(l, 2), 112);
	/* The third trailer would straddle at 120: it takes the next line. */
	assert_int_equal(l->segs[3].trailer, 128);
	assert_int_equal(sst_layout_col_size(l, 0), 8);
	assert_int_equal(sst_layout_col_count(l, 1), 1);
	assert_int_equal(sst_layout_col_type(l, 1), SST_COL_FLAG);
	assert_int_equal(sst_layout_row_size(l), 192);
	assert_int_equal(sst_table_size(l, 5), 5 * 192);
	/* The table, then max_inflight snapshot slots of a row per member. */
	assert_int_equal(sst_area_size(l, 5, &(struct sst_options){
		.max_inflight = 4 }), 5 * 192 + 5 * 4 * 192);
	assert_int_equal(sst_layout_find(l, "seq"), 2);
	assert_int_equal(sst_layout_find(l, "nope"), -ENOENT);
	check_invariants(l);
	sst_layout_destroy(l);
}

/* Seven scalars of one segment fill 56 bytes of a line; an array of 2
 * words (16 bytes) would straddle and must move to the next line. */
static void test_no_straddle(void **state)
{
	(void)state;
	const struct sst_column c[] = {
		{ "a", SST_COL_U64, 0 }, { "b", SST_COL_U64, 0, true },
		{ "c", SST_COL_U64, 0, true }, { "d", SST_COL_U64, 0, true },
		{ "e", SST_COL_U64, 0, true }, { "f", SST_COL_U64, 0, true },
		{ "g", SST_COL_U64, 0, true },
		{ "pair", SST_COL_U64_ARRAY, 2, true },
		{ "h", SST_COL_U64, 0, true },
	};
	struct sst_layout *l = make(c, 9);

	assert_int_equal(sst_layout_nsegs(l), 2);
	assert_int_equal(sst_layout_offset(l, 6), 64 + 48);
	assert_int_equal(sst_layout_offset(l, 7), 128);
	assert_int_equal(sst_layout_offset(l, 8), 144);
	assert_int_equal(l->segs[1].lo, 64);
	assert_int_equal(l->segs[1].trailer, 152);
	assert_int_equal(sst_layout_row_size(l), 192);
	check_invariants(l);
	sst_layout_destroy(l);
}

/* Byte arrays are padded to 8; a following counter stays aligned. */
static void test_bytes_padding(void **state)
{
	(void)state;
	const struct sst_column c[] = {
		{ "tag", SST_COL_BYTES, 5 },
		{ "n", SST_COL_U64, 0 },
		{ "name", SST_COL_BYTES, 60 },
	};
	struct sst_layout *l = make(c, 3);

	assert_int_equal(sst_layout_col_size(l, 0), 8);
	assert_int_equal(sst_layout_col_count(l, 0), 5);
	assert_int_equal(sst_layout_offset(l, 1), 88);
	/* 60 bytes -> 64: does not fit after 112 in the line, takes line 2,
	 * and its trailer the line after */
	assert_int_equal(sst_layout_col_size(l, 2), 64);
	assert_int_equal(sst_layout_offset(l, 2), 128);
	assert_int_equal(l->segs[3].trailer, 192);
	assert_int_equal(sst_layout_row_size(l), 256);
	check_invariants(l);
	sst_layout_destroy(l);
}

/* An array bigger than a line starts on a line boundary. */
static void test_large_array(void **state)
{
	(void)state;
	const struct sst_column c[] = {
		{ "x", SST_COL_U64, 0 },
		{ "received", SST_COL_U64_ARRAY, 17 },
		{ "y", SST_COL_FLAG, 0 },
	};
	struct sst_layout *l = make(c, 3);

	assert_int_equal(sst_layout_offset(l, 1), 128);
	assert_int_equal(sst_layout_col_size(l, 1), 136);
	assert_int_equal(l->segs[2].trailer, 264);
	assert_int_equal(sst_layout_offset(l, 2), 280);
	assert_int_equal(sst_layout_row_size(l), 320);
	check_invariants(l);
	sst_layout_destroy(l);
}

static void test_place_field(void **state)
{
	(void)state;
	assert_int_equal(sst_place_field(64, 8), 64);
	assert_int_equal(sst_place_field(65, 8), 72);
	assert_int_equal(sst_place_field(120, 8), 120);
	assert_int_equal(sst_place_field(120, 16), 128);
	assert_int_equal(sst_place_field(64, 64), 64);
	assert_int_equal(sst_place_field(72, 64), 128);
	assert_int_equal(sst_place_field(72, 72), 128);
	assert_int_equal(sst_place_field(128, 4096), 128);
}

/* with_prev joins a column to the segment before it; the grouping is
 * part of the fingerprint. */
static void test_segments(void **state)
{
	(void)state;
	struct sst_column c[] = {
		{ "have", SST_COL_U64_ARRAY, 3 },
		{ "acked", SST_COL_U64, 0, true },
		{ "trim", SST_COL_U64_ARRAY, 3 },
		{ "mask", SST_COL_U64, 0, true },
		{ "joins", SST_COL_U64, 0 },
	};
	struct sst_layout *l = make(c, 5), *m;

	assert_int_equal(sst_layout_nsegs(l), 4);
	assert_int_equal(sst_layout_col_segment(l, 0), 1);
	assert_int_equal(sst_layout_col_segment(l, 1), 1);
	assert_int_equal(sst_layout_col_segment(l, 2), 2);
	assert_int_equal(sst_layout_col_segment(l, 3), 2);
	assert_int_equal(sst_layout_col_segment(l, 4), 3);
	/* The trailer follows the segment's last column. */
	assert_int_equal(l->segs[1].trailer, sst_layout_offset(l, 1) + 8);
	check_invariants(l);
	c[3].with_prev = false;
	m = make(c, 5);
	assert_int_equal(sst_layout_nsegs(m), 5);
	assert_true(sst_layout_fingerprint(l) != sst_layout_fingerprint(m));
	check_invariants(m);
	sst_layout_destroy(m);
	/* with_prev on the first column has nothing to join. */
	c[0].with_prev = true;
	m = make(c, 1);
	assert_int_equal(sst_layout_nsegs(m), 2);
	sst_layout_destroy(m);
	sst_layout_destroy(l);
}

/* A pseudo-random mix of declarations always satisfies the invariants. */
static void test_random_declarations(void **state)
{
	(void)state;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	char names[40][SST_COL_NAME_MAX];
	struct sst_column c[40];

	for (int round = 0; round < 500; round++) {
		uint32_t n = 1 + round % 40;

		for (uint32_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			snprintf(names[i], sizeof(names[i]), "c%u", i);
			c[i].name = names[i];
			c[i].type = (enum sst_col_type)(1 + x % 4);
			c[i].with_prev = (x >> 20) % 3 == 0;
			c[i].count = c[i].type == SST_COL_U64_ARRAY ?
				1 + (uint32_t)(x >> 8) % 40 :
				c[i].type == SST_COL_BYTES ?
				1 + (uint32_t)(x >> 8) % 200 : 1;
		}
		struct sst_layout *l = make(c, n);
		check_invariants(l);
		sst_layout_destroy(l);
	}
}

static void test_fingerprint(void **state)
{
	(void)state;
	struct sst_column a[] = {
		{ "counter", SST_COL_U64, 0 },
		{ "acks", SST_COL_U64_ARRAY, 4 },
	};
	struct sst_column b[2];
	struct sst_layout *la = make(a, 2), *lb;

	/* Same declaration from separately built arrays: same layout. */
	char n0[] = "counter", n1[] = "acks";
	b[0] = (struct sst_column){ n0, SST_COL_U64, 1 };
	b[1] = (struct sst_column){ n1, SST_COL_U64_ARRAY, 4 };
	lb = make(b, 2);
	assert_true(sst_layout_fingerprint(la) != 0);
	assert_true(sst_layout_fingerprint(la) == sst_layout_fingerprint(lb));
	sst_layout_destroy(lb);

	/* Any change to a name, a count or the order changes it. */
	b[1].count = 5;
	lb = make(b, 2);
	assert_true(sst_layout_fingerprint(la) != sst_layout_fingerprint(lb));
	sst_layout_destroy(lb);
	b[1].count = 4;
	n1[0] = 'b';
	lb = make(b, 2);
	assert_true(sst_layout_fingerprint(la) != sst_layout_fingerprint(lb));
	sst_layout_destroy(lb);
	n1[0] = 'a';
	struct sst_column swapped[] = { a[1], a[0] };
	lb = make(swapped, 2);
	assert_true(sst_layout_fingerprint(la) != sst_layout_fingerprint(lb));
	sst_layout_destroy(lb);
	sst_layout_destroy(la);
}

static void expect_einval(const struct sst_column *c, uint32_t n,
			  const char *needle)
{
	struct sst_layout *l = NULL;
	struct squall_error err;

	squall_error_clear(&err);
	assert_int_equal(sst_layout_create(c, n, &l, &err), -EINVAL);
	assert_null(l);
	assert_int_equal(err.code, -EINVAL);
	assert_non_null(strstr(err.msg, needle));
}

static void test_bad_declarations(void **state)
{
	(void)state;
	const struct sst_column dup[] = {
		{ "x", SST_COL_U64, 0 }, { "x", SST_COL_FLAG, 0 } };
	const struct sst_column empty_arr[] = { { "arr", SST_COL_U64_ARRAY, 0 } };
	const struct sst_column huge[] = { { "big", SST_COL_BYTES, 4097 } };
	const struct sst_column scalar2[] = { { "s", SST_COL_U64, 2 } };
	const struct sst_column badtype[] = { { "t", (enum sst_col_type)9, 1 } };
	const struct sst_column noname[] = { { "", SST_COL_U64, 0 } };
	const struct sst_column longname[] = {
		{ "a_name_that_is_far_too_long_for_a_column", SST_COL_U64, 0 } };

	expect_einval(dup, 2, "declared twice");
	expect_einval(empty_arr, 1, "arr");
	expect_einval(huge, 1, "big");
	expect_einval(scalar2, 1, "'s'");
	expect_einval(badtype, 1, "'t'");
	expect_einval(noname, 1, "column 0");
	expect_einval(longname, 1, "column 0");
}

/* No declared column at all: the header alone. */
static void test_header_only(void **state)
{
	(void)state;
	struct sst_layout *l = NULL;

	assert_int_equal(sst_layout_create(NULL, 0, &l, NULL), 0);
	assert_int_equal(sst_layout_row_size(l), SST_HDR_SIZE);
	assert_int_equal(sst_layout_nsegs(l), 1);
	check_invariants(l);
	assert_int_equal(SST_HDR_HEARTBEAT % 8, 0);
	assert_int_equal(SST_HDR_SUSPECTED % 8, 0);
	assert_true(SST_HDR_SUSPECTED + 8 <= SST_HDR_SIZE);
	sst_layout_destroy(l);
}

/* sst_recv_landing finds receive i of member rank where the table posted
 * it (sst_recv_buf), and nothing for any other request. */
static void test_recv_landing(void **state)
{
	static uint8_t area[3 * 4 * 64];
	struct sst_options o = { .recv_depth = 4, .recv_area = area,
				 .recv_buf_size = 64 };
	uint32_t rank = 99;

	(void)state;
	for (uint32_t r = 0; r < 3; r++)
		for (uint32_t i = 0; i < 4; i++) {
			uint8_t *want = area + ((size_t)r * 4 + i) * 64;

			assert_ptr_equal(sst_recv_landing(&o, sst_wrid(SST_WR_RECV,
							r, i), &rank), want);
			assert_int_equal(rank, r);
			assert_ptr_equal(sst_recv_slot(&o, r, i), want);
		}
	/* A write of the table's, a receive beyond the depth, another
	 * part's request, a table whose receives hold no buffer. */
	assert_null(sst_recv_landing(&o, sst_wrid(SST_WR_WRITE, 1, 2), &rank));
	assert_null(sst_recv_landing(&o, sst_wrid(SST_WR_RECV, 1, 4), &rank));
	assert_null(sst_recv_landing(&o, (uint64_t)'P' << 56 | 5, &rank));
	o.recv_buf_size = 0;
	assert_null(sst_recv_landing(&o, sst_wrid(SST_WR_RECV, 1, 2), &rank));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_then_scalars),
		cmocka_unit_test(test_no_straddle),
		cmocka_unit_test(test_bytes_padding),
		cmocka_unit_test(test_large_array),
		cmocka_unit_test(test_segments),
		cmocka_unit_test(test_place_field),
		cmocka_unit_test(test_random_declarations),
		cmocka_unit_test(test_fingerprint),
		cmocka_unit_test(test_bad_declarations),
		cmocka_unit_test(test_header_only),
		cmocka_unit_test(test_recv_landing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
