/*
 * app.c - an application built outside squall's tree against an installed
 * squall: only the headers and flags pkg-config gives. It includes every
 * installed header, to check that they stand on their own, and checks that
 * the installed library links and runs: version, error texts and a
 * standalone allocator (a region with no NIC registration, so no RDMA
 * device is needed).
 */
#include <stdio.h>
#include <string.h>

#include <squall/alloc.h>
#include <squall/config.h>
#include <squall/error.h>
#include <squall/group.h>
#include <squall/regcache.h>
#include <squall/regcache_jemalloc.h>
#include <squall/version.h>

int main(void)
{
	struct alloc_params p = { .region_size = 1 << 20 };
	size_t sizes[3] = { 64, 4096, 100000 };
	struct buf_desc d[3];
	struct squall_error err;
	struct alloc *a;
	int ret;

	if (strcmp(squall_version(), SQUALL_VERSION_STRING)) {
		fprintf(stderr, "app: library %s, headers %s\n",
			squall_version(), SQUALL_VERSION_STRING);
		return 1;
	}
	if (strcmp(group_strerror(-ENOTCONN), "the group stopped (no majority, or this member was cut off)")) {
		fprintf(stderr, "app: group_strerror(-ENOTCONN) is '%s'\n",
			group_strerror(-ENOTCONN));
		return 1;
	}
	ret = alloc_create(&p, &a, &err);
	if (ret) {
		fprintf(stderr, "app: alloc_create: %s\n", err.msg);
		return 1;
	}
	ret = alloc_lease(a, 3, sizes, d);
	if (ret || !alloc_owns(a, d[2].ptr, d[2].len) ||
	    alloc_state(a, d[1].ptr) != ALLOC_LEASED) {
		fprintf(stderr, "app: alloc_lease: %d\n", ret);
		return 1;
	}
	memset(d[2].ptr, 0x5a, d[2].len);
	ret = alloc_release_n(a, 3, d);
	alloc_destroy(a);
	if (ret) {
		fprintf(stderr, "app: alloc_release_n: %d\n", ret);
		return 1;
	}
	printf("squall %s installed: allocator ok\n", squall_version());
	return 0;
}
