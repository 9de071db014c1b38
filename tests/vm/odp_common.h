/*
 * odp_common.h - a VM member whose node is made with options of the
 * caller's choosing (member_common.h's member_init fixes all but the monitor): the ODP
 * test member and bench/regcache_rdma use it to run the on-demand and the
 * pinned path side by side.
 */
#ifndef SQUALL_TESTS_VM_ODP_COMMON_H
#define SQUALL_TESTS_VM_ODP_COMMON_H

#include "member_common.h"

/* As member_init, with the node's cache options given: `monitor`,
 * `no_odp` and `odp_unchecked` (rdma_sq_options). */
static inline void member_init_odp(struct member *m, const char *prog,
				   uint32_t id, unsigned port, size_t region_len,
				   enum regcache_monitor_mode monitor, bool no_odp,
				   bool odp_unchecked)
{
	member_init_with(m, prog, id, port, region_len,
			 (struct rdma_sq_options){ .cache_monitor = monitor,
						   .no_odp = no_odp,
						   .odp_unchecked = odp_unchecked });
}

#endif
