/*
 * hook.h - named protocol points where a process of a test-hook build
 * (meson -Dtest_hooks=true) kills itself, as kill -9 would, when the
 * environment says so: SQUALL_DIE_AT=POINT[:K] dies the K-th time (1 by
 * default) the process reaches POINT. The VM tests and the membership
 * benchmark use them to die at a precise step of a view change instead
 * of at a time a script guessed. In other builds the points compile to
 * nothing, and SQUALL_DIE_AT makes group_create()/group_join() fail
 * (squall_hook_check) rather than be ignored.
 *
 * Points (SQUALL_HOOK_POINTS):
 *   trim_published  the view change's leader pushed the trim it computed
 *   trim_adopted    another member pushed its adoption of the trim
 *   rdmc_mid        a receiver holds half the blocks of a large message
 *   installing      the old view is torn down, the next not yet built
 */
#ifndef SQUALL_RDMA_HOOK_H
#define SQUALL_RDMA_HOOK_H

#include <squall/error.h>

#define SQUALL_HOOK_POINTS \
	"trim_published, trim_adopted, rdmc_mid, installing"

#ifdef SQUALL_TEST_HOOKS
void squall_hook(const char *point);
#else
static inline void squall_hook(const char *point)
{
	(void)point;
}
#endif

/* 0 when SQUALL_DIE_AT is unset, or set to a known point in a test-hook
 * build; otherwise -EINVAL with err saying what is wrong. */
int squall_hook_check(struct squall_error *err);

#endif /* SQUALL_RDMA_HOOK_H */
