/*
 * hook.h - named protocol points where a process of a test-hook build
 * (meson -Dtest_hooks=true) kills itself, as kill -9 would, or fails a
 * step, when the environment says so:
 *   SQUALL_DIE_AT=POINT[:K]   die the K-th time (1 by default) the
 *                             process reaches POINT (squall_hook);
 *   SQUALL_FAIL_AT=POINT[:K]  fail the step at its K-th passage
 *                             (squall_hook_fail returns true once).
 * Either says so first on stderr: "DYING|FAILING pid=P wall_ms=T
 * why=test hook POINT:K".
 * The VM tests and the membership benchmark use them to act at a precise
 * step instead of at a time a script guessed. In other builds the points
 * compile to nothing, and either variable makes group_create() and
 * group_join() fail (squall_hook_check) rather than be ignored.
 *
 * Points to die at (SQUALL_HOOK_DIE_POINTS):
 *   trim_published  the view change's leader pushed the trim it computed
 *   trim_adopted    another member pushed its adoption of the trim
 *   rdmc_mid        a receiver holds half the blocks of a large message
 *   rdmc_refused    a sender learnt that a receiver cannot take its
 *                   message (before it tells anyone)
 *   installing      the old view is torn down, the next not yet built
 *   p2p_read_mid    a receiver has read half of a peer's use-once region
 * Steps to fail (SQUALL_HOOK_FAIL_POINTS):
 *   rdmc_lease      a receiver's lease of a large message's buffer
 *   p2p_garbage     a point-to-point send: its header goes out as bytes
 *                   no member can read (a peer that misbehaves)
 *   p2p_old_key     a receiver that answered a use-once region (window
 *                   path) READs it once more with the old key: the READ
 *                   must fail (its result goes to stderr, "p2p_old_key:
 *                   ..."), and the connection with it
 *   stray_sst       an SST push lands one row further than this member's
 *                   row in the peer's table (a member that misbehaves:
 *                   with windows the peer refuses it)
 *   stray_ring      an SMC write lands one ring further than this
 *                   member's ring in the peer's region
 *   stray_rdmc      an RDMC block write goes to the buffer (and with the
 *                   key) a receiver granted for a message whose transfer
 *                   has ended
 *   teardown_late   the end of a view waits 3 s before its teardown stops
 *                   the progress thread: transfers in flight go on meanwhile,
 *                   past the trim the view change delivered
 *   resend_stop     the group fails (as a local failure on the progress
 *                   thread would) while the view thread holds the first
 *                   own message it sends again in a new view; the view
 *                   thread goes on once the application was told what it
 *                   lost, or after 10 s
 *   rings_lease     a view's build finds no room in the region for its
 *                   SMC rings (as when kept deliveries hold the old ones)
 *   stop_adopted    a member that is not the leader stops right after
 *                   pushing its adoption of the trim, as one that then
 *                   lost its majority would: the others install the next
 *                   view with it in it
 */
#ifndef SQUALL_RDMA_HOOK_H
#define SQUALL_RDMA_HOOK_H

#include <stdbool.h>

#include <squall/error.h>

#define SQUALL_HOOK_DIE_POINTS \
	"trim_published, trim_adopted, rdmc_mid, rdmc_refused, installing, " \
	"p2p_read_mid"
#define SQUALL_HOOK_FAIL_POINTS \
	"rdmc_lease, p2p_garbage, p2p_old_key, stray_sst, stray_ring, stray_rdmc, " \
	"teardown_late, resend_stop, rings_lease, stop_adopted"

#ifdef SQUALL_TEST_HOOKS
void squall_hook(const char *point);
bool squall_hook_fail(const char *point);
#else
static inline void squall_hook(const char *point)
{
	(void)point;
}

static inline bool squall_hook_fail(const char *point)
{
	(void)point;
	return false;
}
#endif

/* 0 when neither variable is set, or each names a known point in a
 * test-hook build; otherwise -EINVAL with err saying what is wrong. */
int squall_hook_check(struct squall_error *err);

#endif /* SQUALL_RDMA_HOOK_H */
