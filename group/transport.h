/*
 * transport.h - what the transport (rdma/) is told of a group: its
 * members, its hello cookie (the group file's fingerprint, which covers a
 * later view's epoch), its key and its timeouts, taken from a loaded
 * .cfg. rdma/ knows nothing of the .cfg; every user of rdma_sq_create that
 * starts from one calls this.
 */
#ifndef SQUALL_GROUP_TRANSPORT_H
#define SQUALL_GROUP_TRANSPORT_H

#include <squall/config.h>
#include <squall/rdma.h>

struct group_transport {
	struct rdma_sq_group grp;
	struct rdma_sq_member members[GROUP_CONFIG_MAX_MEMBERS];
};

/* Fill t from cfg; its strings point into cfg (rdma_sq_create copies
 * them). Returns &t->grp, or NULL when cfg has no fingerprint (no valid
 * member count). */
const struct rdma_sq_group *group_transport(const struct group_config *cfg,
					    struct group_transport *t);

/* rdma_sq_create for the group cfg describes (-EINVAL with err when cfg
 * has no fingerprint). */
int group_transport_create(const struct group_config *cfg, uint32_t my_id,
			   void *region, size_t region_len,
			   const struct rdma_sq_options *opt,
			   struct rdma_sq_node **out, struct squall_error *err);

#endif /* SQUALL_GROUP_TRANSPORT_H */
