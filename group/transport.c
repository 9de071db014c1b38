/*
 * transport.c - a loaded .cfg as the transport needs it (transport.h).
 */
#include <string.h>

#include "group/transport.h"

_Static_assert(GROUP_CONFIG_MAX_MEMBERS <= RDMA_SQ_MAX_MEMBERS,
	       "the transport connects fewer members than a group holds");
_Static_assert(GROUP_CONFIG_ADDR_MAX <= RDMA_SQ_ADDR_MAX,
	       "a member's address does not fit the transport's");

const struct rdma_sq_group *group_transport(const struct group_config *cfg,
					    struct group_transport *t)
{
	memset(t, 0, sizeof(*t));
	if (!cfg || group_config_fingerprint(cfg, &t->grp.cookie))
		return NULL;
	for (uint32_t i = 0; i < cfg->nmembers; i++) {
		t->members[i].id = cfg->members[i].id;
		memcpy(t->members[i].address, cfg->members[i].address,
		       sizeof(cfg->members[i].address));
		t->members[i].port = cfg->members[i].port;
	}
	t->grp.name = cfg->path;
	t->grp.nmembers = cfg->nmembers;
	t->grp.members = t->members;
	t->grp.epoch = cfg->epoch;
	t->grp.key = cfg->has_key ? cfg->key : NULL;
	t->grp.key_file = cfg->key_file;
	t->grp.connect_timeout_ms = cfg->connect_timeout_ms;
	t->grp.device = cfg->device;
	return &t->grp;
}

int group_transport_create(const struct group_config *cfg, uint32_t my_id,
			   void *region, size_t region_len,
			   const struct rdma_sq_options *opt,
			   struct rdma_sq_node **out, struct squall_error *err)
{
	struct group_transport t;
	const struct rdma_sq_group *grp = group_transport(cfg, &t);

	if (!grp)
		return squall_error_set(err, -EINVAL, "%s: no fingerprint of the "
					"group file (no valid member count)",
					cfg ? cfg->path : "no group file");
	return rdma_sq_create(grp, my_id, region, region_len, opt, out, err);
}
