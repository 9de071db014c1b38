/*
 * test_alloc.c - the allocator: classes, extents, multi-leases, buffer
 * states and their misuse, exhaustion and recovery, coalescing, region
 * edges, registration, statistics, and a 4-thread stress run that checks
 * no lease ever sees another lease's bytes.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "alloc/alloc_internal.h"

#define MiB (1ull << 20)
#define KiB (1ull << 10)

struct reg_log {
	int regs, deregs;
	void *base;
	size_t len;
	int fail;
};

static int test_reg(void *ctx, void *base, size_t len, uint32_t *lkey,
		    uint32_t *rkey)
{
	struct reg_log *l = ctx;

	if (l->fail)
		return l->fail;
	l->regs++;
	l->base = base;
	l->len = len;
	*lkey = 0x1234;
	*rkey = 0x5678;
	return 0;
}

static void test_dereg(void *ctx)
{
	((struct reg_log *)ctx)->deregs++;
}

static struct alloc *mk(uint64_t size)
{
	struct alloc_params p = { .region_size = size };
	struct squall_error err;
	struct alloc *a = NULL;

	assert_int_equal(alloc_create(&p, &a, &err), 0);
	assert_non_null(a);
	return a;
}

static struct buf_desc lease1(struct alloc *a, size_t len)
{
	struct buf_desc d;

	assert_int_equal(alloc_lease(a, 1, &len, &d), 0);
	return d;
}

static uint64_t in_use(struct alloc *a)
{
	struct alloc_class_stats st;
	uint64_t sum = 0;
	unsigned i;

	for (i = 0; i <= alloc_nclasses(); i++) {
		assert_int_equal(alloc_stats(a, i, &st), 0);
		sum += st.bytes_in_use;
	}
	return sum;
}

/* Every request of 64 B or more wastes at most a quarter of its slot, and
 * the class table is what size_to_class() computes. */
static void classes_bound_waste(void **state)
{
	size_t len, prev = 0;
	unsigned i;

	(void)state;
	assert_int_equal(alloc_class_size(0), 64);
	assert_int_equal(alloc_class_size(alloc_nclasses() - 1), 65536);
	for (i = 0; i < alloc_nclasses(); i++) {
		assert_true(alloc_class_size(i) > prev);
		assert_int_equal(alloc_class_size(i) % 16, 0);
		prev = alloc_class_size(i);
	}
	for (len = 1; len <= ALLOC_MAX_CLASS_SIZE; len++) {
		size_t sz = class_size(size_to_class(len));

		assert_true(sz >= len);
		if (size_to_class(len) > 0)
			assert_true(len > class_size(size_to_class(len) - 1));
		if (len >= 64)
			assert_true((sz - len) * 4 <= sz);
	}
}

/* The tables a lease looks its class up in say what size_to_class()
 * computes, for every size it covers. */
static void class_table(void **state)
{
	struct alloc *a = mk(MiB);
	size_t len;

	(void)state;
	for (len = 1; len <= ALLOC_MAX_CLASS_SIZE; len++)
		assert_int_equal(class_of(a, len), size_to_class(len));
	alloc_destroy(a);
}

/* Lease and release in every class, at its smallest and largest size. */
static void every_class(void **state)
{
	struct alloc *a = mk(64 * MiB);
	struct alloc_class_stats st;
	unsigned i;

	(void)state;
	for (i = 0; i < alloc_nclasses(); i++) {
		size_t sizes[2] = { alloc_class_size(i),
				    i ? alloc_class_size(i - 1) + 1 : 1 };
		struct buf_desc d[2];

		assert_int_equal(alloc_lease(a, 2, sizes, d), 0);
		assert_true(d[0].ptr != d[1].ptr);
		assert_int_equal(d[1].len, sizes[1]);
		assert_true(alloc_owns(a, d[0].ptr, d[0].len));
		assert_int_equal((uintptr_t)d[0].ptr % 16, 0);
		assert_int_equal(alloc_state(a, d[0].ptr), ALLOC_LEASED);
		memset(d[0].ptr, 0xa5, d[0].len);
		memset(d[1].ptr, 0x5a, d[1].len);
		assert_int_equal(((unsigned char *)d[0].ptr)[d[0].len - 1], 0xa5);
		assert_int_equal(alloc_stats(a, i, &st), 0);
		assert_int_equal(st.leases, 2);
		assert_int_equal(st.bytes_in_use, 2 * alloc_class_size(i));
		assert_int_equal(alloc_release_n(a, 2, d), 0);
		assert_int_equal(alloc_state(a, d[0].ptr), ALLOC_FREE);
		assert_int_equal(alloc_stats(a, i, &st), 0);
		assert_int_equal(st.releases, 2);
		assert_int_equal(st.bytes_in_use, 0);
		assert_true(st.high_water >= 2 * alloc_class_size(i));
	}
	alloc_destroy(a);
}

/* Many live leases of one class never overlap. */
static void leases_disjoint(void **state)
{
	struct alloc *a = mk(16 * MiB);
	enum { N = 5000 };
	struct buf_desc *d = calloc(N, sizeof(*d));
	size_t i;

	(void)state;
	for (i = 0; i < N; i++) {
		d[i] = lease1(a, 80);
		memset(d[i].ptr, (int)(i & 0xff), 80);
	}
	for (i = 0; i < N; i++) {
		unsigned char *p = d[i].ptr;

		assert_int_equal(p[0], i & 0xff);
		assert_int_equal(p[79], i & 0xff);
		assert_int_equal(alloc_release(a, &d[i]), 0);
	}
	free(d);
	alloc_destroy(a);
}

static void large_extents(void **state)
{
	struct alloc *a = mk(32 * MiB);
	size_t sizes[3] = { ALLOC_MAX_CLASS_SIZE + 1, MiB, 3 * MiB + 1 };
	struct alloc_class_stats st;
	struct buf_desc d[3];
	int i;

	(void)state;
	assert_int_equal(alloc_lease(a, 3, sizes, d), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal((uintptr_t)d[i].ptr % ALLOC_PAGE_SIZE, 0);
		assert_int_equal(alloc_state(a, d[i].ptr), ALLOC_LEASED);
		memset(d[i].ptr, i + 1, sizes[i]);
	}
	assert_int_equal(((char *)d[1].ptr)[MiB - 1], 2);
	assert_int_equal(alloc_stats(a, alloc_nclasses(), &st), 0);
	assert_int_equal(st.leases, 3);
	assert_int_equal(st.bytes_in_use, 17 * 4096 + 256 * 4096 + 769 * 4096);
	/* A pointer inside an extent is not a lease. */
	assert_int_equal(alloc_release(a, &(struct buf_desc){ (char *)d[1].ptr + 4096, 1 }),
			 -EINVAL);
	assert_int_equal(alloc_release_n(a, 3, d), 0);
	assert_int_equal(alloc_stats(a, alloc_nclasses(), &st), 0);
	assert_int_equal(st.bytes_in_use, 0);
	assert_int_equal(st.high_water, (17 + 256 + 769) * 4096);
	alloc_destroy(a);
}

/* A multi-lease that cannot be served leases nothing. */
static void all_or_nothing(void **state)
{
	struct alloc *a = mk(4 * MiB);
	size_t big[3] = { MiB, MiB, 8 * MiB };
	size_t mixed[5] = { 64, 200, 4096, 2 * MiB, 3 * MiB };
	size_t whole = 4 * MiB;
	struct alloc_class_stats st;
	struct buf_desc d[5];

	(void)state;
	assert_int_equal(alloc_lease(a, 3, big, d), -ENOMEM);
	assert_int_equal(alloc_lease(a, 5, mixed, d), -ENOMEM);
	assert_int_equal(in_use(a), 0);
	assert_int_equal(alloc_stats(a, size_to_class(64), &st), 0);
	assert_int_equal(st.leases, 0);
	assert_int_equal(alloc_stats(a, alloc_nclasses(), &st), 0);
	assert_int_equal(st.leases, 0);
	assert_int_equal(st.failures, 2);
	/* Nothing was kept: the whole region is one extent again. */
	assert_int_equal(alloc_lease(a, 1, &whole, d), 0);
	assert_int_equal(alloc_release(a, d), 0);
	/* Sizes no region can hold, up to the largest size_t. */
	big[0] = SIZE_MAX;
	assert_int_equal(alloc_lease(a, 1, big, d), -ENOMEM);
	big[0] = SIZE_MAX - 4095;
	assert_int_equal(alloc_lease(a, 1, big, d), -ENOMEM);
	assert_int_equal(alloc_reserve(a, SIZE_MAX, 4096, d), -ENOMEM);
	/* Bad arguments. */
	assert_int_equal(alloc_lease(a, 0, big, d), -EINVAL);
	assert_int_equal(alloc_lease(a, 1, NULL, d), -EINVAL);
	assert_int_equal(alloc_lease(a, 1, big, NULL), -EINVAL);
	assert_int_equal(alloc_lease(NULL, 1, big, d), -EINVAL);
	big[0] = 0;
	assert_int_equal(alloc_lease(a, 2, big, d), -EINVAL);
	alloc_destroy(a);
}

static void misuse(void **state)
{
	struct alloc *a = mk(8 * MiB);
	struct buf_desc d = lease1(a, 100), e = lease1(a, 200 * KiB), r;
	void *base;
	size_t len;
	int local;

	(void)state;
	alloc_region(a, &base, &len);
	/* Double release. */
	assert_int_equal(alloc_release(a, &d), 0);
	assert_int_equal(alloc_release(a, &d), -EALREADY);
	assert_int_equal(alloc_release(a, &e), 0);
	assert_int_equal(alloc_release(a, &e), -EALREADY);
	/* A submitted buffer belongs to the transport. */
	d = lease1(a, 100);
	assert_int_equal(alloc_submit(a, &d), 0);
	assert_int_equal(alloc_state(a, d.ptr), ALLOC_SUBMITTED);
	assert_int_equal(alloc_release(a, &d), -EBUSY);
	assert_int_equal(alloc_submit(a, &d), -EBUSY);
	assert_int_equal(alloc_deliver(a, &d), -EBUSY);
	assert_int_equal(alloc_complete(a, &d), 0);
	assert_int_equal(alloc_state(a, d.ptr), ALLOC_FREE);
	assert_int_equal(alloc_complete(a, &d), -EALREADY);
	assert_int_equal(alloc_release(a, &d), -EALREADY);
	/* A send never posted gives the buffer back to its caller. */
	d = lease1(a, 100);
	assert_int_equal(alloc_unsubmit(a, &d), -EINVAL);
	assert_int_equal(alloc_submit(a, &d), 0);
	assert_int_equal(alloc_unsubmit(a, &d), 0);
	assert_int_equal(alloc_state(a, d.ptr), ALLOC_LEASED);
	assert_int_equal(alloc_release(a, &d), 0);
	/* Completing something never submitted. */
	d = lease1(a, 100);
	assert_int_equal(alloc_complete(a, &d), -EINVAL);
	/* Receive side: delivered, then released by the application. */
	assert_int_equal(alloc_deliver(a, &d), 0);
	assert_int_equal(alloc_deliver(a, &d), -EALREADY);
	assert_int_equal(alloc_state(a, d.ptr), ALLOC_DELIVERED);
	assert_int_equal(alloc_release(a, &d), 0);
	/* Not the start of a lease, or not in the region. */
	d = lease1(a, 100);
	assert_int_equal(alloc_release(a, &(struct buf_desc){ (char *)d.ptr + 16, 1 }), -EINVAL);
	assert_int_equal(alloc_release(a, &(struct buf_desc){ (char *)d.ptr + 1, 1 }), -EINVAL);
	assert_int_equal(alloc_release(a, &(struct buf_desc){ &local, 4 }), -EINVAL);
	assert_int_equal(alloc_release(a, &(struct buf_desc){ NULL, 0 }), -EINVAL);
	assert_int_equal(alloc_release(a, &(struct buf_desc){ (char *)base - 64, 1 }), -EINVAL);
	assert_int_equal(alloc_release(a, &(struct buf_desc){ (char *)base + len, 1 }), -EINVAL);
	assert_int_equal(alloc_release(a, &(struct buf_desc){ (char *)base + len - 4096, 1 }), -EINVAL);
	assert_int_equal(alloc_submit(a, &(struct buf_desc){ &local, 4 }), -EINVAL);
	assert_int_equal(alloc_state(a, (char *)d.ptr + 8), -EINVAL);
	/* A length longer than the slot. */
	assert_int_equal(alloc_release(a, &(struct buf_desc){ d.ptr, 113 }), -EINVAL);
	assert_int_equal(alloc_state(a, d.ptr), ALLOC_LEASED);
	assert_int_equal(alloc_release(a, &d), 0);
	/* Reservations are permanent. */
	assert_int_equal(alloc_reserve(a, 10000, 65536, &r), 0);
	assert_int_equal((uintptr_t)r.ptr % 65536, 0);
	assert_int_equal(alloc_state(a, r.ptr), ALLOC_RESERVED);
	assert_int_equal(alloc_release(a, &r), -EPERM);
	assert_int_equal(alloc_submit(a, &r), -EPERM);
	assert_int_equal(alloc_reserve(a, 100, 3000, &r), -EINVAL);
	assert_int_equal(alloc_reserve(a, 0, 4096, &r), -EINVAL);
	/* After all that, the allocator still hands out disjoint buffers and
	 * everything leased is given back. */
	{
		struct buf_desc many[256];
		int i;

		for (i = 0; i < 256; i++) {
			many[i] = lease1(a, 100);
			memset(many[i].ptr, i, 100);
		}
		for (i = 0; i < 256; i++) {
			assert_int_equal(((unsigned char *)many[i].ptr)[99], i);
			assert_int_equal(alloc_release(a, &many[i]), 0);
		}
	}
	assert_int_equal(in_use(a), 0);
	alloc_destroy(a);
}

/* The by-value calls make the checks the descriptor calls make, leave the
 * same states, and mix with them. */
static void one_buffer_calls(void **state)
{
	struct alloc *a = mk(MiB);
	struct buf_desc d, e, r, many[300];
	struct alloc_class_stats st;
	size_t sizes[] = { 1, 64, 100, 4096, 4097, 65536, 65537, 200 * KiB };
	size_t sz = 4000;
	uint64_t leases;
	unsigned i;
	int n = 0, local;

	(void)state;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		d = alloc_lease_one(a, sizes[i]);
		assert_non_null(d.ptr);
		assert_int_equal(d.len, sizes[i]);
		assert_true(alloc_owns(a, d.ptr, d.len));
		assert_int_equal((uintptr_t)d.ptr % (sizes[i] > ALLOC_MAX_CLASS_SIZE ?
						     4096 : 16), 0);
		assert_int_equal(alloc_state(a, d.ptr), ALLOC_LEASED);
		memset(d.ptr, 0x5a, d.len);
		assert_int_equal(alloc_release_one(a, d), 0);
		assert_int_equal(alloc_state(a, d.ptr), ALLOC_FREE);
		/* A double release. */
		assert_int_equal(alloc_release_one(a, d), -EALREADY);
	}
	/* Either form releases what the other leased. */
	d = alloc_lease_one(a, 100);
	assert_int_equal(alloc_release(a, &d), 0);
	d = lease1(a, 100);
	assert_int_equal(alloc_release_one(a, d), 0);
	/* Misuse: inside the slot, too long, outside the region, submitted,
	 * a reservation. Each is refused and changes nothing. */
	d = alloc_lease_one(a, 100);
	assert_int_equal(alloc_release_one(a, (struct buf_desc){ (char *)d.ptr + 16, 1 }), -EINVAL);
	assert_int_equal(alloc_release_one(a, (struct buf_desc){ (char *)d.ptr + 1, 1 }), -EINVAL);
	assert_int_equal(alloc_release_one(a, (struct buf_desc){ d.ptr, 113 }), -EINVAL);
	assert_int_equal(alloc_release_one(a, (struct buf_desc){ &local, 4 }), -EINVAL);
	assert_int_equal(alloc_release_one(a, (struct buf_desc){ NULL, 0 }), -EINVAL);
	assert_int_equal(alloc_state(a, d.ptr), ALLOC_LEASED);
	assert_int_equal(alloc_submit(a, &d), 0);
	assert_int_equal(alloc_release_one(a, d), -EBUSY);
	assert_int_equal(alloc_complete(a, &d), 0);
	assert_int_equal(alloc_release_one(a, d), -EALREADY);
	e = alloc_lease_one(a, 100);
	assert_int_equal(alloc_deliver(a, &e), 0);
	assert_int_equal(alloc_release_one(a, e), 0);
	assert_int_equal(alloc_reserve(a, 4096, 4096, &r), 0);
	assert_int_equal(alloc_release_one(a, r), -EPERM);
	/* Bad arguments: EINVAL, nothing counted as a failure. */
	errno = 0;
	d = alloc_lease_one(a, 0);
	assert_null(d.ptr);
	assert_int_equal(d.len, 0);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	d = alloc_lease_one(NULL, 64);
	assert_null(d.ptr);
	assert_int_equal(errno, EINVAL);
	/* No room: ENOMEM, counted in the class's failures. */
	assert_int_equal(alloc_stats(a, size_to_class(sz), &st), 0);
	leases = st.leases;
	while (n < 300) {
		many[n] = alloc_lease_one(a, sz);
		if (!many[n].ptr)
			break;
		n++;
	}
	assert_true(n > 100 && n < 300);
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(alloc_stats(a, size_to_class(sz), &st), 0);
	assert_int_equal(st.failures, 1);
	assert_int_equal(st.leases, leases + (uint64_t)n);
	while (n--)
		assert_int_equal(alloc_release_one(a, many[n]), 0);
	assert_int_equal(in_use(a), 0);
	alloc_destroy(a);
}

/* alloc.h sends alloc_lease() with a constant 1 and alloc_release() to the
 * by-value calls; the exported functions, reached with the names in
 * parentheses, give the same results. */
static void descriptor_calls_inline_and_exported(void **state)
{
	struct alloc *a = mk(MiB);
	struct buf_desc d, e, many[300];
	struct alloc_class_stats st;
	size_t sz = 4000, zero = 0;
	volatile size_t one = 1;
	int n = 0, m = 0, local;

	(void)state;
	/* Each leases what the other releases. */
	assert_int_equal(alloc_lease(a, 1, &sz, &d), 0);
	assert_int_equal(d.len, sz);
	assert_int_equal(alloc_state(a, d.ptr), ALLOC_LEASED);
	assert_int_equal((alloc_release)(a, &d), 0);
	assert_int_equal((alloc_release)(a, &d), -EALREADY);
	assert_int_equal(alloc_release(a, &d), -EALREADY);
	assert_int_equal((alloc_lease)(a, 1, &sz, &e), 0);
	assert_int_equal(alloc_release(a, &e), 0);
	/* n not known to the compiler: the exported call. */
	assert_int_equal(alloc_lease(a, one, &sz, &d), 0);
	assert_int_equal(alloc_release(a, &d), 0);
	/* The same refusals. */
	assert_int_equal(alloc_lease(a, 1, &zero, &d), -EINVAL);
	assert_int_equal((alloc_lease)(a, 1, &zero, &d), -EINVAL);
	assert_int_equal(alloc_lease(NULL, 1, &sz, &d), -EINVAL);
	assert_int_equal((alloc_lease)(NULL, 1, &sz, &d), -EINVAL);
	assert_int_equal(alloc_lease(a, 1, NULL, &d), -EINVAL);
	assert_int_equal(alloc_lease(a, 1, &sz, NULL), -EINVAL);
	d = alloc_lease_one(a, 100);
	e = (struct buf_desc){ (char *)d.ptr + 16, 1 };
	assert_int_equal(alloc_release(a, &e), -EINVAL);
	assert_int_equal((alloc_release)(a, &e), -EINVAL);
	e = (struct buf_desc){ &local, 4 };
	assert_int_equal(alloc_release(a, &e), -EINVAL);
	assert_int_equal((alloc_release)(a, &e), -EINVAL);
	assert_int_equal(alloc_submit(a, &d), 0);
	assert_int_equal(alloc_release(a, &d), -EBUSY);
	assert_int_equal((alloc_release)(a, &d), -EBUSY);
	assert_int_equal(alloc_complete(a, &d), 0);
	/* No room: -ENOMEM from both, each counted once. */
	while (n < 300 && !alloc_lease(a, 1, &sz, &many[n]))
		n++;
	assert_true(n > 100 && n < 300);
	assert_int_equal((alloc_lease)(a, 1, &sz, &d), -ENOMEM);
	assert_int_equal(alloc_stats(a, size_to_class(sz), &st), 0);
	assert_int_equal(st.failures, 2);
	for (m = 0; m < n; m++)
		assert_int_equal(alloc_release(a, &many[m]), 0);
	assert_int_equal(in_use(a), 0);
	alloc_destroy(a);
}

/* A NULL allocator is bad input like any other: every call that returns an
 * error says EINVAL (alloc_obj_new() NULL), and the buffer another
 * allocator leased stays leased. */
static void null_allocator(void **state)
{
	struct alloc *a = mk(MiB);
	struct buf_desc d = alloc_lease_one(a, 100), r;
	struct alloc_class_stats st;
	size_t sz = 100;

	(void)state;
	assert_non_null(d.ptr);
	assert_int_equal(alloc_lease(NULL, 1, &sz, &r), -EINVAL);
	assert_int_equal(alloc_lease_wait(NULL, 1, &sz, &r, 10), -EINVAL);
	assert_int_equal(alloc_release(NULL, &d), -EINVAL);
	assert_int_equal(alloc_release_one(NULL, d), -EINVAL);
	assert_int_equal(alloc_release_n(NULL, 1, &d), -EINVAL);
	assert_int_equal(alloc_submit(NULL, &d), -EINVAL);
	assert_int_equal(alloc_unsubmit(NULL, &d), -EINVAL);
	assert_int_equal(alloc_complete(NULL, &d), -EINVAL);
	assert_int_equal(alloc_deliver(NULL, &d), -EINVAL);
	assert_int_equal(alloc_state(NULL, d.ptr), -EINVAL);
	assert_int_equal(alloc_reserve(NULL, 4096, 4096, &r), -EINVAL);
	assert_null(alloc_obj_new(NULL, 64));
	assert_int_equal(alloc_obj_delete(NULL, d.ptr), -EINVAL);
	assert_int_equal(alloc_stats(NULL, 0, &st), -EINVAL);
	{
		/* The print says what it lacks; with no file, nothing. */
		char line[128] = "";
		FILE *f = tmpfile();

		assert_non_null(f);
		alloc_stats_print(NULL, f);
		rewind(f);
		assert_non_null(fgets(line, sizeof(line), f));
		assert_string_equal(line, "alloc_stats_print: no allocator (NULL)\n");
		fclose(f);
		alloc_stats_print(a, NULL);
	}
	assert_int_equal(alloc_state(a, d.ptr), ALLOC_LEASED);
	assert_int_equal(alloc_release_one(a, d), 0);
	assert_int_equal(in_use(a), 0);
	alloc_destroy(a);
}

/* A release checks a pointer against its 64-byte window's state byte:
 * every offset inside a slot, in the slot's own window or in the window of
 * the next slot, and windows where no slot starts, are refused, in every
 * state, and refusing changes nothing. */
static void misuse_inside_windows(void **state)
{
	struct alloc *a = mk(8 * MiB);
	enum { N = 8 };
	struct buf_desc d[N];
	size_t sz = 80;   /* slots start at 0, 80, 160, 240, 320: window 4
			     (256 .. 319) holds no start */
	int i, st;

	(void)state;
	for (i = 0; i < N; i++)
		d[i] = lease1(a, sz);
	assert_int_equal(alloc_submit(a, &d[1]), 0);
	assert_int_equal(alloc_deliver(a, &d[2]), 0);
	for (i = 0; i < N; i++) {
		char *p = d[i].ptr;
		size_t k;

		for (k = 1; k < 80; k++) {
			struct buf_desc x = { p + k, 1 };

			assert_int_equal(alloc_release(a, &x), -EINVAL);
			assert_int_equal(alloc_state(a, p + k), -EINVAL);
		}
	}
	/* Nothing moved: each buffer is still in the state it was. */
	for (i = 0; i < N; i++) {
		st = i == 1 ? ALLOC_SUBMITTED : i == 2 ? ALLOC_DELIVERED : ALLOC_LEASED;
		assert_int_equal(alloc_state(a, d[i].ptr), st);
	}
	assert_int_equal(alloc_release(a, &d[1]), -EBUSY);
	assert_int_equal(alloc_complete(a, &d[1]), 0);
	for (i = 0; i < N; i++)
		if (i != 1)
			assert_int_equal(alloc_release(a, &d[i]), 0);
	/* Released: the same offsets, and the starts once more. */
	for (i = 0; i < N; i++) {
		char *p = d[i].ptr;

		assert_int_equal(alloc_release(a, &d[i]), -EALREADY);
		assert_int_equal(alloc_release(a, &(struct buf_desc){ p + 16, 1 }),
				 -EINVAL);
		assert_int_equal(alloc_release(a, &(struct buf_desc){ p + 64, 1 }),
				 -EINVAL);
	}
	/* The length check: the slot (80 bytes) holds 80, not 81. */
	d[0] = lease1(a, sz);
	assert_int_equal(alloc_release(a, &(struct buf_desc){ d[0].ptr, 81 }), -EINVAL);
	assert_int_equal(alloc_state(a, d[0].ptr), ALLOC_LEASED);
	assert_int_equal(alloc_release(a, &(struct buf_desc){ d[0].ptr, 80 }), 0);
	assert_int_equal(in_use(a), 0);
	alloc_destroy(a);
}

/* A window of a slab where no slot starts (80-byte slots: the fifth of
 * every 25 windows), and a pointer to a slot of a slab that was given
 * back to the extents: both are no lease, not a double release. */
static void misuse_empty_window_and_stale_slab(void **state)
{
	struct alloc *a = mk(MiB);
	struct buf_desc d[6];
	size_t sz = 80;
	char *base, *first;
	size_t len;
	int i;

	(void)state;
	alloc_region(a, (void **)&base, &len);
	for (i = 0; i < 6; i++)
		d[i] = lease1(a, sz);
	/* The first slab holds the region's first page. */
	first = base;
	for (i = 0; i < 6; i++)
		assert_true((char *)d[i].ptr >= first &&
			    (char *)d[i].ptr < first + 64 * KiB);
	/* Window 4 of the slab: offsets 256 .. 319, no slot starts there. */
	for (i = 256; i < 320; i += 16)
		assert_int_equal(alloc_release(a, &(struct buf_desc){ first + i, 1 }),
				 -EINVAL);
	for (i = 0; i < 6; i++)
		assert_int_equal(alloc_release(a, &d[i]), 0);
	/* Give every cached slot and the empty slab back. */
	tcache_flush_all(a, tcache_get(a));
	slab_reclaim_empty(a);
	for (i = 0; i < 6; i++) {
		assert_int_equal(alloc_release(a, &d[i]), -EINVAL);
		assert_int_equal(alloc_state(a, d[i].ptr), -EINVAL);
	}
	alloc_destroy(a);
}

/* Lease and release counts stay exact while slots go back and forth
 * between a thread's cache and the pool, and when that thread exits. */
static void *churn_thread(void *arg)
{
	struct alloc *a = arg;
	struct buf_desc d[300];
	size_t sz = 64;
	int i, r;

	for (r = 0; r < 3; r++) {
		for (i = 0; i < 300; i++)
			if (alloc_lease(a, 1, &sz, &d[i]))
				return (void *)1;
		for (i = 0; i < 300; i++)
			if (alloc_release(a, &d[i]))
				return (void *)1;
	}
	return NULL;
}

static void counts_across_refills_and_flushes(void **state)
{
	struct alloc *a = mk(8 * MiB);
	struct alloc_class_stats st;
	struct buf_desc d[300];
	size_t sz = 64;
	pthread_t t;
	void *ret;
	int i;

	(void)state;
	for (i = 0; i < 300; i++)
		d[i] = lease1(a, sz);
	assert_int_equal(alloc_stats(a, 0, &st), 0);
	assert_int_equal(st.leases, 300);
	assert_int_equal(st.releases, 0);
	assert_int_equal(st.bytes_in_use, 300 * 64);
	for (i = 0; i < 150; i++)
		assert_int_equal(alloc_release(a, &d[i]), 0);
	assert_int_equal(alloc_stats(a, 0, &st), 0);
	assert_int_equal(st.releases, 150);
	assert_int_equal(st.bytes_in_use, 150 * 64);
	pthread_create(&t, NULL, churn_thread, a);
	pthread_join(t, &ret);
	assert_null(ret);
	for (i = 150; i < 300; i++)
		assert_int_equal(alloc_release(a, &d[i]), 0);
	assert_int_equal(alloc_stats(a, 0, &st), 0);
	assert_int_equal(st.leases, 300 + 900);
	assert_int_equal(st.releases, 300 + 900);
	assert_int_equal(st.bytes_in_use, 0);
	alloc_destroy(a);
}

/* Every class's cache filled past full and emptied past empty, twice:
 * the hit paths' bounds (a word's top against the class's lo and hi) and
 * the slow paths' flush and refill keep each slot leased once, the counts
 * right, and a second release refused, at every cache depth (4 slots at
 * 64 KiB up to 128 at 64 B). */
static void cache_bounds_every_class(void **state)
{
	struct alloc *a = mk(64 * MiB);
	struct buf_desc d[ALLOC_MAG_MAX + 8];
	struct alloc_class_stats st;

	(void)state;
	for (unsigned c = 0; c < alloc_nclasses(); c++) {
		size_t sz = alloc_class_size(c);
		unsigned n = a->cls[c].mag_cap + 3;
		/* The next class's cache holds two slots meanwhile: a push
		 * past this class's end would land on them. */
		size_t nsz = c + 1 < alloc_nclasses() ? alloc_class_size(c + 1) :
			     sz;
		struct buf_desc nx[2] = { lease1(a, nsz), lease1(a, nsz) };

		assert_true(n <= sizeof(d) / sizeof(d[0]));
		for (int i = 0; i < 2; i++)
			assert_int_equal(alloc_release(a, &nx[i]), 0);
		for (int round = 0; round < 2; round++) {
			for (unsigned i = 0; i < n; i++) {
				d[i] = lease1(a, sz);
				for (unsigned j = 0; j < i; j++)
					assert_ptr_not_equal(d[i].ptr, d[j].ptr);
			}
			for (unsigned i = 0; i < n; i++)
				assert_int_equal(alloc_release(a, &d[i]), 0);
			for (unsigned i = 0; i < n; i++)
				assert_int_equal(alloc_release(a, &d[i]),
						 -EALREADY);
		}
		for (int i = 0; i < 2; i++) {
			nx[i] = lease1(a, nsz);
			assert_int_equal(alloc_state(a, nx[i].ptr), ALLOC_LEASED);
			assert_int_equal(alloc_release(a, &nx[i]), 0);
		}
		assert_int_equal(alloc_stats(a, c, &st), 0);
		/* Its own rounds, and the four leases as the class after
		 * the one before (the last class is its own next, too). */
		assert_int_equal(st.leases, 2 * n + (c > 0 ? 4 : 0) +
					    (c + 1 == alloc_nclasses() ? 4 : 0));
		assert_int_equal(st.releases, st.leases);
		assert_int_equal(st.bytes_in_use, 0);
	}
	alloc_destroy(a);
}

/* Two threads leasing one class at once take their slots from slabs of
 * their own, so that the state bytes their hit paths write (one line per
 * page) do not sit on neighbouring lines: taking pages of one slab in turn,
 * each thread's lines bordered the other's, and the CPUs' prefetchers,
 * pulling the line next to the one written, made each thread's lease plus
 * release about 1.7 times slower (bench/alloc, 128-320 B, 2 threads). A
 * thread that exits gives its slabs up, so the next thread takes slots
 * from them rather than carving more of the region. */
/* The first page of the slab (or run) that holds ptr. */
static uint32_t slab_of(const struct alloc *a, const void *ptr)
{
	return a->pages[((uintptr_t)ptr - (uintptr_t)a->h.base) >>
			ALLOC_PAGE_SHIFT].first;
}

struct apart {
	struct alloc *a;
	pthread_barrier_t leased, checked;
	struct buf_desc d[64];
	bool keep;          /* exit holding the leases */
};

static void *apart_thread(void *arg)
{
	struct apart *x = arg;
	size_t sz = 128;
	int i;

	for (i = 0; i < 64; i++)
		if (alloc_lease(x->a, 1, &sz, &x->d[i]))
			return (void *)1;
	if (x->keep)
		return NULL;
	pthread_barrier_wait(&x->leased);
	pthread_barrier_wait(&x->checked);
	for (i = 0; i < 64; i++)
		if (alloc_release(x->a, &x->d[i]))
			return (void *)1;
	return NULL;
}

static void threads_keep_apart(void **state)
{
	struct apart x = { .a = mk(8 * MiB) }, held = { .keep = true };
	struct alloc_class_stats st;
	unsigned cls = (unsigned)size_to_class(128);
	uint64_t slabs;
	struct buf_desc d[64];
	void *base, *ret;
	size_t len;
	pthread_t t;
	int i, j;

	(void)state;
	alloc_region(x.a, &base, &len);
	pthread_barrier_init(&x.leased, NULL, 2);
	pthread_barrier_init(&x.checked, NULL, 2);
	pthread_create(&t, NULL, apart_thread, &x);
	pthread_barrier_wait(&x.leased);
	for (i = 0; i < 64; i++)
		d[i] = lease1(x.a, 128);
	for (i = 0; i < 64; i++)
		for (j = 0; j < 64; j++) {
			/* The lines of state bytes: one per 4 KiB page. */
			int64_t li = ((char *)d[i].ptr - (char *)base) >> 12;
			int64_t lj = ((char *)x.d[j].ptr - (char *)base) >> 12;

			assert_true(li - lj >= 2 || lj - li >= 2);
		}
	pthread_barrier_wait(&x.checked);
	pthread_join(t, &ret);
	assert_null(ret);
	for (i = 0; i < 64; i++)
		assert_int_equal(alloc_release(x.a, &d[i]), 0);

	/* A thread exits holding 64 slots of a slab it took from; the next
	 * thread's 64 come from that slab, not from a new one. */
	held.a = x.a;
	pthread_create(&t, NULL, apart_thread, &held);
	pthread_join(t, &ret);
	assert_null(ret);
	assert_int_equal(alloc_stats(x.a, cls, &st), 0);
	slabs = st.slabs;
	pthread_create(&t, NULL, apart_thread, &x);
	pthread_barrier_wait(&x.leased);
	assert_int_equal(alloc_stats(x.a, cls, &st), 0);
	assert_int_equal(st.slabs, slabs);
	pthread_barrier_wait(&x.checked);
	pthread_join(t, &ret);
	assert_null(ret);
	for (i = 0; i < 64; i++)
		assert_int_equal(alloc_release(x.a, &held.d[i]), 0);
	pthread_barrier_destroy(&x.leased);
	pthread_barrier_destroy(&x.checked);
	alloc_destroy(x.a);
}

/* A refill takes from the thread's own slab before one that is nobody's,
 * so that a thread's slots stay together: here the slab a thread left
 * (holding 64 of its slots) is first on the class's list, and the main
 * thread's next refill still comes from its own. */
static void refills_prefer_own_slab(void **state)
{
	struct apart held = { .a = mk(8 * MiB), .keep = true };
	struct buf_desc d[128];
	void *ret;
	pthread_t t;
	int i;

	(void)state;
	for (i = 0; i < 64; i++)
		d[i] = lease1(held.a, 128);
	pthread_create(&t, NULL, apart_thread, &held);
	pthread_join(t, &ret);
	assert_null(ret);
	assert_int_not_equal(slab_of(held.a, held.d[0].ptr),
			     slab_of(held.a, d[0].ptr));
	for (i = 64; i < 128; i++) {
		d[i] = lease1(held.a, 128);
		assert_int_equal(slab_of(held.a, d[i].ptr),
				 slab_of(held.a, d[0].ptr));
	}
	for (i = 0; i < 128; i++)
		assert_int_equal(alloc_release(held.a, &d[i]), 0);
	for (i = 0; i < 64; i++)
		assert_int_equal(alloc_release(held.a, &held.d[i]), 0);
	alloc_destroy(held.a);
}

/* Fill the region, fail, give back, fill again. */
static unsigned slabs_marked(struct alloc *a, uint64_t tag)
{
	uint32_t i, n = a->npages / ALLOC_SLAB_MIN_PAGES + 1;
	unsigned k = 0;

	for (i = 0; i < n; i++)
		k += atomic_load(&a->slabs[i].owner) == tag;
	return k;
}

struct marker {
	struct alloc *a;
	uint64_t tag;
	unsigned marked;
};

static void *mark_thread(void *arg)
{
	struct marker *m = arg;
	struct buf_desc d[3000];
	size_t sz = 64;
	int i;

	for (i = 0; i < 3000; i++)
		d[i] = lease1(m->a, sz);
	m->tag = tcache_hit(m->a)->tag;
	m->marked = slabs_marked(m->a, m->tag);
	for (i = 0; i < 3000; i++)
		assert_int_equal(alloc_release(m->a, &d[i]), 0);
	return NULL;
}

/* A thread cache marks at most one slab per class as its own, the one it
 * takes from now, so its thread's exit clears a mark per class rather
 * than reading the whole slab table: 3000 slots of 64 B come from three
 * slabs of 1024, and only the last is marked; after the exit, none. */
static void a_cache_marks_one_slab_per_class(void **state)
{
	struct alloc *a = mk(8 * MiB);
	struct marker m = { .a = a };
	pthread_t t;

	(void)state;
	pthread_create(&t, NULL, mark_thread, &m);
	pthread_join(t, NULL);
	assert_int_not_equal(m.tag, 0);
	assert_int_equal(m.marked, 1);
	assert_int_equal(slabs_marked(a, m.tag), 0);
	alloc_destroy(a);
}

static void exhaustion_and_recovery(void **state)
{
	struct alloc *a = mk(MiB);
	enum { MAX = 1024 };
	struct buf_desc d[MAX];
	size_t sz = 4000, whole = MiB;
	struct alloc_class_stats st;
	int n = 0, m = 0, i;

	(void)state;
	while (n < MAX && alloc_lease(a, 1, &sz, &d[n]) == 0)
		n++;
	assert_true(n > 200 && n < MAX);
	assert_int_equal(alloc_lease(a, 1, &sz, &d[n]), -ENOMEM);
	assert_int_equal(alloc_stats(a, size_to_class(sz), &st), 0);
	assert_int_equal(st.failures, 2);
	assert_int_equal(st.bytes_in_use, (uint64_t)n * 4096);
	/* A large lease fails too, and is counted apart. */
	assert_int_equal(alloc_lease(a, 1, &whole, &d[n]), -ENOMEM);
	for (i = 0; i < n; i++)
		assert_int_equal(alloc_release(a, &d[i]), 0);
	assert_int_equal(in_use(a), 0);
	/* Every page came back: the region is one extent again. */
	assert_int_equal(alloc_lease(a, 1, &whole, &d[0]), 0);
	assert_int_equal(alloc_release(a, &d[0]), 0);
	while (m < MAX && alloc_lease(a, 1, &sz, &d[m]) == 0)
		m++;
	assert_int_equal(m, n);
	for (i = 0; i < m; i++)
		assert_int_equal(alloc_release(a, &d[i]), 0);
	alloc_destroy(a);
}

struct waiter {
	struct alloc *a;
	size_t size;
	unsigned timeout_ms;
	int rc;
	double waited_ms;
	struct buf_desc d;
};

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	double t0 = now_ms();

	w->rc = alloc_lease_wait(w->a, 1, &w->size, &w->d, w->timeout_ms);
	w->waited_ms = now_ms() - t0;
	if (w->rc == 0)
		alloc_release(w->a, &w->d);
	return NULL;
}

/* A waiting lease times out with -ENOMEM, or succeeds once space comes
 * back from another thread. */
static void lease_wait(void **state)
{
	struct alloc *a = mk(MiB);
	struct buf_desc d[300];
	size_t sz = 4096;
	struct waiter w = { .a = a, .size = 4096, .timeout_ms = 50 };
	pthread_t t;
	int n = 0, i;

	(void)state;
	while (n < 300 && alloc_lease(a, 1, &sz, &d[n]) == 0)
		n++;
	assert_true(n < 300);
	pthread_create(&t, NULL, wait_thread, &w);
	pthread_join(t, NULL);
	assert_int_equal(w.rc, -ENOMEM);
	assert_true(w.waited_ms >= 49);

	w.timeout_ms = 10000;
	pthread_create(&t, NULL, wait_thread, &w);
	while (!atomic_load(&a->waiters))
		usleep(1000);
	usleep(20000);
	assert_int_equal(alloc_release(a, &d[--n]), 0);
	pthread_join(t, NULL);
	assert_int_equal(w.rc, 0);
	assert_true(w.waited_ms < 5000);
	for (i = 0; i < n; i++)
		assert_int_equal(alloc_release(a, &d[i]), 0);
	alloc_destroy(a);
}

static void *lease_4k_thread(void *arg)
{
	struct waiter *w = arg;

	w->rc = alloc_lease(w->a, 1, &w->size, &w->d);
	return NULL;
}

/* After a lease fails, a release in one thread is seen at once by a lease
 * in another (it does not stay in the releasing thread's cache); once the
 * pressure is over, releases are cached again. */
static void pressure_bypasses_caches(void **state)
{
	struct alloc *a = mk(MiB);
	struct buf_desc d[300];
	struct waiter w = { .a = a, .size = 4096 };
	size_t sz = 4096;
	pthread_t t;
	int n = 0, i;

	(void)state;
	while (n < 300 && alloc_lease(a, 1, &sz, &d[n]) == 0)
		n++;
	assert_true(n < 300);
	assert_int_not_equal(atomic_load(&a->pressure_until), 0);
	/* Releases leave the hit path while the pressure lasts. */
	assert_int_equal(atomic_load(&a->hit_len), 0);
	assert_int_equal(alloc_release(a, &d[--n]), 0);
	pthread_create(&t, NULL, lease_4k_thread, &w);
	pthread_join(t, NULL);
	assert_int_equal(w.rc, 0);
	assert_int_equal(alloc_release(a, &w.d), 0);
	usleep((ALLOC_PRESSURE_MS + 50) * 1000);
	assert_int_equal(alloc_release(a, &d[--n]), 0);
	assert_int_equal(atomic_load(&a->pressure_until), 0);
	assert_int_equal(atomic_load(&a->hit_len), a->h.len);
	for (i = 0; i < n; i++)
		assert_int_equal(alloc_release(a, &d[i]), 0);
	alloc_destroy(a);
}

/* Freed extents merge with free neighbours on both sides. */
static void coalescing(void **state)
{
	struct alloc *a = mk(MiB);
	size_t q = 256 * KiB, half = 512 * KiB, whole = MiB, three = 768 * KiB;
	struct buf_desc d[4], h, w;
	int i;

	(void)state;
	for (i = 0; i < 4; i++)
		d[i] = lease1(a, q);
	assert_int_equal(alloc_lease(a, 1, &q, &h), -ENOMEM);
	/* Free B then C: one 512 KiB run. */
	assert_int_equal(alloc_release(a, &d[1]), 0);
	assert_int_equal(alloc_lease(a, 1, &half, &h), -ENOMEM);
	assert_int_equal(alloc_release(a, &d[2]), 0);
	h = lease1(a, half);
	assert_ptr_equal(h.ptr, d[1].ptr);
	/* Free the middle, then both neighbours: one run again. */
	assert_int_equal(alloc_release(a, &h), 0);
	assert_int_equal(alloc_release(a, &d[0]), 0);
	w = lease1(a, three);
	assert_ptr_equal(w.ptr, d[0].ptr);
	assert_int_equal(alloc_release(a, &w), 0);
	assert_int_equal(alloc_release(a, &d[3]), 0);
	w = lease1(a, whole);
	assert_ptr_equal(w.ptr, d[0].ptr);
	assert_int_equal(alloc_release(a, &w), 0);
	alloc_destroy(a);
}

/* alloc_owns and alloc_desc_resolve at the region's edges; registration. */
static void owns_edges_and_registration(void **state)
{
	struct reg_log log = { 0 };
	struct alloc_params p = { .region_size = 2 * MiB, .reg = test_reg,
				  .dereg = test_dereg, .reg_ctx = &log };
	struct squall_error err;
	struct alloc *a;
	struct buf_desc d;
	uint64_t off;
	uint32_t lkey;
	char *base;
	size_t len;

	(void)state;
	assert_int_equal(alloc_create(&p, &a, &err), 0);
	alloc_region(a, (void **)&base, &len);
	assert_int_equal(len, 2 * MiB);
	assert_int_equal(log.regs, 1);
	assert_ptr_equal(log.base, base);
	assert_int_equal(log.len, len);
	assert_int_equal(alloc_lkey(a), 0x1234);
	assert_int_equal(alloc_rkey(a), 0x5678);

	assert_true(alloc_owns(a, base, 1));
	assert_true(alloc_owns(a, base, len));
	assert_true(alloc_owns(a, base + len - 1, 1));
	assert_false(alloc_owns(a, base + len - 1, 2));
	assert_false(alloc_owns(a, base + len, 1));
	assert_false(alloc_owns(a, base - 1, 1));
	assert_false(alloc_owns(a, base - 1, 2));
	assert_false(alloc_owns(a, base, len + 1));
	assert_false(alloc_owns(a, base + 1, SIZE_MAX));
	assert_false(alloc_owns(a, NULL, 1));
	assert_false(alloc_owns(a, &lkey, sizeof(lkey)));

	d = lease1(a, 1000);
	assert_int_equal(alloc_desc_resolve(a, &d, &off, &lkey), 0);
	assert_int_equal(off, (char *)d.ptr - base);
	assert_int_equal(lkey, 0x1234);
	assert_int_equal(alloc_desc_resolve(a, &(struct buf_desc){ base + len - 8, 16 },
					    &off, &lkey), -EINVAL);
	assert_int_equal(alloc_release(a, &d), 0);
	alloc_destroy(a);
	assert_int_equal(log.deregs, 1);

	/* A failed registration leaves nothing behind. */
	log.fail = -EIO;
	assert_int_equal(alloc_create(&p, &a, &err), -EIO);
	assert_int_equal(err.code, -EIO);
	assert_non_null(strstr(err.msg, "regist"));
	assert_int_equal(log.deregs, 1);
	/* Bad sizes. */
	p.region_size = 4096;
	assert_int_equal(alloc_create(&p, &a, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "region_size"));
	assert_int_equal(alloc_create(NULL, &a, &err), -EINVAL);
}

/* Huge pages: used when the system has them, otherwise a clear note. */
static void huge_pages(void **state)
{
	struct alloc_params p = { .region_size = 4 * MiB, .huge_pages = true };
	struct squall_error err;
	struct alloc *a;
	struct buf_desc d;
	void *base;
	size_t len;

	(void)state;
	assert_int_equal(alloc_create(&p, &a, &err), 0);
	alloc_region(a, &base, &len);
	if (alloc_huge_pages(a)) {
		assert_string_equal(alloc_region_note(a), "");
		assert_int_equal((uintptr_t)base % (2 * MiB), 0);
	} else {
		assert_non_null(strstr(alloc_region_note(a), "huge pages"));
		assert_non_null(strstr(alloc_region_note(a), "4 KiB pages"));
	}
	d = lease1(a, 300);
	assert_int_equal(alloc_release(a, &d), 0);
	alloc_destroy(a);

	p.huge_pages = false;
	assert_int_equal(alloc_create(&p, &a, &err), 0);
	assert_false(alloc_huge_pages(a));
	assert_string_equal(alloc_region_note(a), "");
	alloc_destroy(a);
}

/* Reservations are carved once, aligned, never overlap leases, and fail
 * cleanly when the region has no room. */
static void reservations(void **state)
{
	struct alloc *a = mk(4 * MiB);
	struct buf_desc sst, ring, big, d[64];
	size_t rest = 4 * MiB - 64 * KiB - 2 * MiB + 4096;
	char *s, *r;
	int i;

	(void)state;
	assert_int_equal(alloc_reserve(a, 64 * KiB, 4096, &sst), 0);
	assert_int_equal(alloc_reserve(a, 2 * MiB, 2 * MiB, &ring), 0);
	assert_int_equal((uintptr_t)ring.ptr % (2 * MiB), 0);
	assert_int_equal(alloc_reserve(a, 4 * MiB, 4096, &big), -ENOMEM);
	s = sst.ptr;
	r = ring.ptr;
	memset(s, 0x11, sst.len);
	memset(r, 0x22, ring.len);
	for (i = 0; i < 64; i++) {
		d[i] = lease1(a, 1000);
		assert_true((char *)d[i].ptr + 1000 <= s || (char *)d[i].ptr >= s + sst.len);
		assert_true((char *)d[i].ptr + 1000 <= r || (char *)d[i].ptr >= r + ring.len);
		memset(d[i].ptr, 0x33, 1000);
	}
	assert_int_equal(s[0] + s[sst.len - 1], 0x22);
	assert_int_equal(r[0] + r[ring.len - 1], 0x44);
	assert_int_equal(alloc_release_n(a, 64, d), 0);
	/* What is left around the reservations (1984 KiB, in at most two
	 * pieces) is still usable, but no more than that. */
	assert_int_equal(alloc_lease(a, 1, &rest, d), -ENOMEM);
	rest = 900 * KiB;
	assert_int_equal(alloc_lease(a, 1, &rest, d), 0);
	assert_int_equal(alloc_release(a, d), 0);
	alloc_destroy(a);
}

struct point {
	double x, y;
	int tag;
};

static void typed_objects(void **state)
{
	struct alloc *a = mk(MiB);
	struct point *pt = alloc_new(a, struct point);

	(void)state;
	assert_non_null(pt);
	assert_true(alloc_owns(a, pt, sizeof(*pt)));
	assert_int_equal(pt->tag, 0);
	assert_true(pt->x == 0.0);
	pt->tag = 7;
	assert_int_equal(alloc_delete(a, pt), 0);
	assert_int_equal(alloc_delete(a, pt), -EALREADY);
	assert_null(alloc_obj_new(a, 2 * MiB));
	alloc_destroy(a);
}

struct completer {
	struct alloc *a;
	struct buf_desc *d;
	int n, rc, bad;
};

static void *complete_thread(void *arg)
{
	struct completer *c = arg;
	int i;

	c->rc = 0;
	for (i = 0; i < c->n; i++) {
		int rc = alloc_complete(c->a, &c->d[i]);

		if (rc && !c->rc) {
			c->rc = rc;
			c->bad = i;
		}
	}
	return NULL;
}

/* A transport thread completes what the application submitted; the
 * buffers go back to the pool, and the counters follow them. */
static void submit_complete_other_thread(void **state)
{
	struct alloc *a = mk(8 * MiB);
	enum { N = 500 };
	struct buf_desc d[N];
	struct completer c = { a, d, N, -1, -1 };
	size_t whole = 8 * MiB;
	pthread_t t;
	int i;

	(void)state;
	for (i = 0; i < N; i++) {
		d[i] = lease1(a, (size_t)(i % 7 + 1) * 1000);
		assert_int_equal(alloc_submit(a, &d[i]), 0);
	}
	pthread_create(&t, NULL, complete_thread, &c);
	pthread_join(t, NULL);
	assert_int_equal(c.bad, -1);
	assert_int_equal(c.rc, 0);
	for (i = 0; i < N; i++)
		assert_int_equal(alloc_state(a, d[i].ptr), ALLOC_FREE);
	assert_int_equal(in_use(a), 0);
	/* The exited thread's cache went back: the region is whole. */
	assert_int_equal(alloc_lease(a, 1, &whole, d), 0);
	assert_int_equal(alloc_release(a, d), 0);
	alloc_destroy(a);
}

static void stats_print(void **state)
{
	struct alloc *a = mk(4 * MiB);
	struct buf_desc d[3];
	size_t sizes[3] = { 64, 1000, 100000 };
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(alloc_lease(a, 3, sizes, d), 0);
	f = open_memstream(&text, &len);
	alloc_stats_print(a, f);
	fclose(f);
	assert_non_null(strstr(text, "region: 4194304 bytes"));
	assert_non_null(strstr(text, "high_water"));
	assert_non_null(strstr(text, "extents"));
	assert_non_null(strstr(text, "\n      64            1            0"));
	assert_non_null(strstr(text, "\n    1024            1            0           1024"));
	free(text);
	assert_int_equal(alloc_release_n(a, 3, d), 0);
	alloc_destroy(a);
}

/* Two allocators used by one thread, one destroyed while the thread still
 * has a cache for it. */
static void two_allocators(void **state)
{
	struct alloc *a = mk(MiB), *b = mk(MiB);
	struct buf_desc da = lease1(a, 64), db = lease1(b, 64);

	(void)state;
	assert_false(alloc_owns(a, db.ptr, 64));
	assert_int_equal(alloc_release(a, &db), -EINVAL);
	assert_int_equal(alloc_release(b, &db), 0);
	alloc_destroy(b);
	assert_int_equal(alloc_release(a, &da), 0);
	b = mk(MiB);
	db = lease1(b, 64);
	assert_int_equal(alloc_release(b, &db), 0);
	alloc_destroy(b);
	alloc_destroy(a);
}

struct outlive {
	struct alloc *a, *b;
	pthread_barrier_t step;
	int rc;
};

static void *outlive_thread(void *arg)
{
	struct outlive *o = arg;
	struct buf_desc d;
	size_t sz = 100;

	o->rc = alloc_lease(o->a, 1, &sz, &d) || alloc_release(o->a, &d);
	pthread_barrier_wait(&o->step);   /* main destroys a */
	pthread_barrier_wait(&o->step);
	/* This thread's cache for a is detached now, and still the one its
	 * hit paths look at first: it matches neither a NULL allocator nor
	 * a missing argument. */
	o->rc |= alloc_lease(NULL, 1, &sz, &d) != -EINVAL;
	o->rc |= alloc_lease(o->b, 1, &sz, NULL) != -EINVAL;
	o->rc |= alloc_lease(o->b, 1, NULL, &d) != -EINVAL;
	o->rc |= alloc_lease(o->b, 1, &sz, &d) || alloc_release(o->b, &d);
	return NULL;
}

/* A thread keeps a cache for an allocator that is destroyed under it, then
 * uses another one and exits: nothing leaks (ASan checks), nothing breaks. */
static void allocator_dies_before_thread(void **state)
{
	struct outlive o = { .a = mk(MiB), .b = mk(MiB) };
	size_t whole = MiB;
	struct buf_desc d;
	pthread_t t;

	(void)state;
	pthread_barrier_init(&o.step, NULL, 2);
	pthread_create(&t, NULL, outlive_thread, &o);
	pthread_barrier_wait(&o.step);
	alloc_destroy(o.a);
	pthread_barrier_wait(&o.step);
	pthread_join(t, NULL);
	assert_int_equal(o.rc, 0);
	/* The thread's cache for b went back when it exited. */
	assert_int_equal(alloc_lease(o.b, 1, &whole, &d), 0);
	assert_int_equal(alloc_release(o.b, &d), 0);
	alloc_destroy(o.b);
	pthread_barrier_destroy(&o.step);
}

/* Stress: 4 threads x 1,000,000 cycles of lease / fill / verify / release,
 * with buffers of random sizes (some multi-leases, some extents) and some
 * handed between threads through a mailbox. Each buffer is filled with a
 * tag unique to its lease; any overlap between two live leases shows up
 * as a wrong tag. */
#define STRESS_THREADS 4
#define STRESS_CYCLES 1000000
#define STRESS_LIVE 32
#define MAILBOX 16

struct held {
	struct buf_desc d;
	uint64_t tag;
};

static struct {
	struct alloc *a;
	pthread_mutex_t lock;
	struct held box[MAILBOX];
	int errors;
} stress;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static size_t stress_size(uint64_t *s)
{
	uint64_t r = rnd(s);

	switch (r % 1000) {
	case 0:
		return ALLOC_MAX_CLASS_SIZE + 1 + (r >> 20) % (256 * KiB);
	case 1 ... 20:
		return 1 + (r >> 20) % ALLOC_MAX_CLASS_SIZE;
	default:
		return 1 + (r >> 20) % 600;
	}
}

static void fill(struct held *h)
{
	uint64_t *w = h->d.ptr;
	size_t i, n = h->d.len / 8;

	for (i = 0; i < n; i++)
		w[i] = h->tag;
	memset((char *)h->d.ptr + n * 8, (int)(h->tag & 0xff), h->d.len % 8);
}

static int check(const struct held *h)
{
	const uint64_t *w = h->d.ptr;
	size_t i, n = h->d.len / 8;

	for (i = 0; i < n; i++)
		if (w[i] != h->tag)
			return 1;
	for (i = n * 8; i < h->d.len; i++)
		if (((unsigned char *)h->d.ptr)[i] != (h->tag & 0xff))
			return 1;
	return 0;
}

static void *stress_thread(void *arg)
{
	uint64_t id = (uintptr_t)arg, seed = 0x9e3779b97f4a7c15ull * (id + 1);
	struct held live[STRESS_LIVE];
	uint64_t serial = 0;
	struct alloc *a = stress.a;
	int errors = 0, i, c;

	for (i = 0; i < STRESS_LIVE; i++) {
		size_t sz = stress_size(&seed);

		if (alloc_lease(a, 1, &sz, &live[i].d))
			errors++;
		live[i].tag = id << 56 | ++serial;
		fill(&live[i]);
	}
	for (c = 0; c < STRESS_CYCLES; c++) {
		uint64_t r = rnd(&seed);
		int k = (int)(r % STRESS_LIVE);

		errors += check(&live[k]);
		if ((r >> 8) % 64 == 0) {
			/* Swap with the mailbox: the other side checks it. */
			unsigned m = (unsigned)((r >> 16) % MAILBOX);
			struct held tmp;

			pthread_mutex_lock(&stress.lock);
			tmp = stress.box[m];
			stress.box[m] = live[k];
			pthread_mutex_unlock(&stress.lock);
			live[k] = tmp;
			errors += check(&live[k]);
		} else if ((r >> 8) % 64 == 1 && k + 3 < STRESS_LIVE) {
			/* Replace four at once with one multi-lease. */
			size_t sz[4];
			struct buf_desc d[4];
			int j;

			for (j = 0; j < 4; j++) {
				errors += check(&live[k + j]);
				errors += alloc_release(a, &live[k + j].d) != 0;
				sz[j] = stress_size(&seed);
			}
			if (alloc_lease(a, 4, sz, d))
				return (void *)(intptr_t)1000000;
			for (j = 0; j < 4; j++) {
				live[k + j].d = d[j];
				live[k + j].tag = id << 56 | ++serial;
				fill(&live[k + j]);
			}
		} else {
			size_t sz = stress_size(&seed);

			errors += alloc_release(a, &live[k].d) != 0;
			if (alloc_lease(a, 1, &sz, &live[k].d))
				return (void *)(intptr_t)1000000;
			live[k].tag = id << 56 | ++serial;
			fill(&live[k]);
		}
	}
	for (i = 0; i < STRESS_LIVE; i++) {
		errors += check(&live[i]);
		errors += alloc_release(a, &live[i].d) != 0;
	}
	return (void *)(intptr_t)errors;
}

static void stress_threads(void **state)
{
	pthread_t t[STRESS_THREADS];
	size_t whole = 128 * MiB;
	struct buf_desc d;
	void *ret;
	int i, errors = 0;
	uint64_t seed = 42;

	(void)state;
	stress.a = mk(128 * MiB);
	pthread_mutex_init(&stress.lock, NULL);
	for (i = 0; i < MAILBOX; i++) {
		size_t sz = stress_size(&seed);

		assert_int_equal(alloc_lease(stress.a, 1, &sz, &stress.box[i].d), 0);
		stress.box[i].tag = 0xffull << 56 | (uint64_t)i;
		fill(&stress.box[i]);
	}
	for (i = 0; i < STRESS_THREADS; i++)
		pthread_create(&t[i], NULL, stress_thread, (void *)(uintptr_t)i);
	for (i = 0; i < STRESS_THREADS; i++) {
		pthread_join(t[i], &ret);
		errors += (int)(intptr_t)ret;
	}
	assert_int_equal(errors, 0);
	for (i = 0; i < MAILBOX; i++) {
		assert_int_equal(check(&stress.box[i]), 0);
		assert_int_equal(alloc_release(stress.a, &stress.box[i].d), 0);
	}
	assert_int_equal(in_use(stress.a), 0);
	/* Everything came back and coalesced. */
	assert_int_equal(alloc_lease(stress.a, 1, &whole, &d), 0);
	assert_int_equal(alloc_release(stress.a, &d), 0);
	alloc_destroy(stress.a);
	pthread_mutex_destroy(&stress.lock);
}

/* Under pressure every release hands the releasing thread's cache back,
 * an extent's too: a waiter must not time out while free slots sit in
 * the cache of the thread that released an extent. */
struct cache_holder {
	struct alloc *a;
	pthread_barrier_t bar;
	struct buf_desc ext;
	int ext_rc;
};

static void *cache_holder_thread(void *arg)
{
	struct cache_holder *h = arg;
	size_t s = 64 * KiB, e = 128 * KiB;
	struct buf_desc d[2];

	d[0] = lease1(h->a, s);
	d[1] = lease1(h->a, s);
	h->ext = lease1(h->a, e);
	/* Two free 64 KiB slots stay in this thread's cache. */
	assert_int_equal(alloc_release(h->a, &d[0]), 0);
	assert_int_equal(alloc_release(h->a, &d[1]), 0);
	pthread_barrier_wait(&h->bar);  /* the region fills, a waiter waits */
	pthread_barrier_wait(&h->bar);
	h->ext_rc = alloc_release(h->a, &h->ext);
	pthread_barrier_wait(&h->bar);  /* the cache lives until the end */
	return NULL;
}

static void extent_release_gives_cache_back(void **state)
{
	struct cache_holder h = { .a = mk(MiB) };
	struct waiter w = { .a = h.a, .size = 64 * KiB, .timeout_ms = 3000 };
	struct buf_desc many[400];
	size_t s64 = 64 * KiB, pg = 4096;
	pthread_t ht, wt;
	int n = 0;

	(void)state;
	pthread_barrier_init(&h.bar, NULL, 2);
	pthread_create(&ht, NULL, cache_holder_thread, &h);
	pthread_barrier_wait(&h.bar);
	while (n < 400 && !alloc_lease(h.a, 1, &s64, &many[n]))
		n++;
	while (n < 400 && !alloc_lease(h.a, 1, &pg, &many[n]))
		n++;
	assert_true(n < 400);
	pthread_create(&wt, NULL, wait_thread, &w);
	while (!atomic_load(&h.a->waiters))
		usleep(1000);
	pthread_barrier_wait(&h.bar);
	pthread_join(wt, NULL);
	assert_int_equal(h.ext_rc, 0);
	assert_int_equal(w.rc, 0);     /* (wait_thread released it) */
	pthread_barrier_wait(&h.bar);
	pthread_join(ht, NULL);
	while (n--)
		assert_int_equal(alloc_release(h.a, &many[n]), 0);
	assert_int_equal(in_use(h.a), 0);
	pthread_barrier_destroy(&h.bar);
	alloc_destroy(h.a);
}

/* A lease of several buffers that fails gives back the extents it took
 * already, and that wakes whoever waits for space, as any give-back
 * does. */
static void failed_lease_wakes_waiters(void **state)
{
	struct alloc *a = mk(4 * MiB);
	size_t sz[2] = { MiB, 8 * MiB };
	struct buf_desc d[2];
	uint64_t seq;

	(void)state;
	atomic_store(&a->waiters, 1);   /* as a thread in alloc_lease_wait */
	pthread_mutex_lock(&a->wait_lock);
	seq = a->wait_seq;
	pthread_mutex_unlock(&a->wait_lock);
	assert_int_equal(alloc_lease(a, 2, sz, d), -ENOMEM);
	pthread_mutex_lock(&a->wait_lock);
	assert_true(a->wait_seq > seq);
	pthread_mutex_unlock(&a->wait_lock);
	atomic_store(&a->waiters, 0);
	assert_int_equal(in_use(a), 0);
	alloc_destroy(a);
}

/* The counts are read without stopping other threads, so a class's
 * releases can be read ahead of its leases (a cache's flush read half
 * way, a slot leased on one thread and released on another between the
 * two reads). A snapshot never says more was released than leased, nor
 * more than zero bytes in use below zero: here this thread's cache is
 * read half way through a flush of 5 slots (its pool count already
 * moved, its slot count not yet). */
static void stats_never_release_more_than_leased(void **state)
{
	struct alloc *a = mk(MiB);
	struct alloc_class_stats st;
	struct buf_desc d = lease1(a, 64);
	unsigned cls = size_to_class(64);
	struct tcache *tc = (struct tcache *)alloc_tls_head;

	(void)state;
	assert_ptr_equal(tc->h.a, a);
	assert_int_equal(alloc_stats(a, cls, &st), 0);
	assert_int_equal(st.leases - st.releases, 1);
	mag_net(tc, cls, -5);
	assert_int_equal(alloc_stats(a, cls, &st), 0);
	assert_true(st.releases <= st.leases);
	assert_true(st.bytes_in_use <= MiB);
	mag_net(tc, cls, 5);
	assert_int_equal(alloc_release(a, &d), 0);
	assert_int_equal(in_use(a), 0);
	alloc_destroy(a);
}

/* A lease larger than the region fails and is counted, but it is no
 * shortage of space: releases keep their caches (no pressure). One that
 * could fit turns the pressure on. */
static void impossible_size_no_pressure(void **state)
{
	struct alloc *a = mk(MiB);
	size_t big = 2 * MiB, fits = 768 * KiB;
	struct buf_desc d, e;
	struct alloc_class_stats st;

	(void)state;
	assert_int_equal(alloc_lease(a, 1, &big, &d), -ENOMEM);
	assert_int_equal(alloc_stats(a, alloc_nclasses(), &st), 0);
	assert_int_equal(st.failures, 1);
	assert_int_equal(atomic_load(&a->pressure_until), 0);
	assert_int_equal(atomic_load(&a->hit_len), a->h.len);
	d = lease1(a, fits);
	assert_int_equal(alloc_lease(a, 1, &fits, &e), -ENOMEM);
	assert_true(atomic_load(&a->pressure_until) != 0);
	assert_int_equal(atomic_load(&a->hit_len), 0);
	assert_int_equal(alloc_release(a, &d), 0);
	assert_int_equal(in_use(a), 0);
	alloc_destroy(a);
}

/* The release hit path's bound is 0 only under pressure. Should a race
 * leave it 0 with the pressure over (a pressure_on() descheduled between
 * its two stores while a bypass() ended its pressure as expired), the
 * next release opens it again. */
static void hit_path_reopens(void **state)
{
	struct alloc *a = mk(MiB);
	struct buf_desc d = lease1(a, 64), e = lease1(a, 64);

	(void)state;
	assert_int_equal(atomic_load(&a->hit_len), a->h.len);
	atomic_store(&a->pressure_until, 0);
	atomic_store(&a->hit_len, 0);
	assert_int_equal(alloc_release(a, &d), 0);
	assert_int_equal(atomic_load(&a->hit_len), a->h.len);
	assert_int_equal(alloc_release(a, &e), 0);
	assert_int_equal(in_use(a), 0);
	alloc_destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(classes_bound_waste),
		cmocka_unit_test(class_table),
		cmocka_unit_test(every_class),
		cmocka_unit_test(leases_disjoint),
		cmocka_unit_test(large_extents),
		cmocka_unit_test(all_or_nothing),
		cmocka_unit_test(misuse),
		cmocka_unit_test(one_buffer_calls),
		cmocka_unit_test(null_allocator),
		cmocka_unit_test(extent_release_gives_cache_back),
		cmocka_unit_test(failed_lease_wakes_waiters),
		cmocka_unit_test(stats_never_release_more_than_leased),
		cmocka_unit_test(hit_path_reopens),
		cmocka_unit_test(impossible_size_no_pressure),
		cmocka_unit_test(descriptor_calls_inline_and_exported),
		cmocka_unit_test(misuse_inside_windows),
		cmocka_unit_test(misuse_empty_window_and_stale_slab),
		cmocka_unit_test(counts_across_refills_and_flushes),
		cmocka_unit_test(cache_bounds_every_class),
		cmocka_unit_test(threads_keep_apart),
		cmocka_unit_test(refills_prefer_own_slab),
		cmocka_unit_test(a_cache_marks_one_slab_per_class),
		cmocka_unit_test(exhaustion_and_recovery),
		cmocka_unit_test(lease_wait),
		cmocka_unit_test(pressure_bypasses_caches),
		cmocka_unit_test(coalescing),
		cmocka_unit_test(owns_edges_and_registration),
		cmocka_unit_test(huge_pages),
		cmocka_unit_test(reservations),
		cmocka_unit_test(typed_objects),
		cmocka_unit_test(submit_complete_other_thread),
		cmocka_unit_test(stats_print),
		cmocka_unit_test(two_allocators),
		cmocka_unit_test(allocator_dies_before_thread),
		cmocka_unit_test(stress_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
