/* A replicated counter: each member adds its id + 1; all end with the sum. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <squall/group.h>

static bool deliver(void *ctx, uint32_t sender, uint64_t seq,
		    const struct buf_desc *d)
{
	uint64_t *counter = ctx;

	*counter += *(const uint64_t *)d->ptr;  /* same order on every member */
	printf("seq %" PRIu64 ": member %u added, counter %" PRIu64 "\n", seq,
	       sender, *counter);
	return false;                           /* done: reuse the memory */
}

int main(int argc, char **argv)
{
	struct group_callbacks cb = { .deliver = deliver };
	struct squall_error err;
	uint64_t counter = 0;
	size_t size = sizeof(uint64_t);
	struct buf_desc d;
	struct group *g;

	if (argc != 3) {
		fprintf(stderr, "usage: %s GROUP.cfg MY_ID\n", argv[0]);
		return 2;
	}
	g = group_create(argv[1], (uint32_t)atoi(argv[2]), &cb, &counter, &err);
	if (!g) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	if (alloc_lease(group_get_allocator(g), 1, &size, &d) == 0) {
		*(uint64_t *)d.ptr = group_my_id(g) + 1;  /* fill the lease */
		if (group_ordered_send(g, &d, &err))      /* the group owns it */
			fprintf(stderr, "%s\n", err.msg);
	}
	if (group_close(g, -1, &err))             /* flush: all delivered */
		fprintf(stderr, "%s\n", err.msg);
	printf("final counter %" PRIu64 "\n", counter);
	return 0;
}
