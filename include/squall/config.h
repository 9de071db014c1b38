/*
 * config.h - a group's description, loaded from a libconfig .cfg file.
 *
 * One file describes the whole group and is shared by every member: the
 * group's name, the RDMA device, the region size, SMC/RDMC/SST settings and
 * the members (id, address, port). A member learns its own id from the
 * command line or the environment (SQUALL_MEMBER_ID). Every broken file is
 * rejected with an error naming the file, the line and the setting.
 */
#ifndef SQUALL_CONFIG_H
#define SQUALL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <squall/error.h>

#define GROUP_CONFIG_NAME_MAX 64
#define GROUP_CONFIG_ADDR_MAX 64
#define GROUP_CONFIG_MAX_MEMBERS 64

struct group_member_cfg {
	uint32_t id;                        /* unique in the group */
	char address[GROUP_CONFIG_ADDR_MAX]; /* IPv4 literal the member listens on */
	uint16_t port;                      /* 1..65535, unique per address */
};

struct group_config {
	char path[256];                     /* the file it was loaded from */
	char name[GROUP_CONFIG_NAME_MAX];   /* group.name */
	char device[GROUP_CONFIG_NAME_MAX]; /* group.device; "" = the device
					       that owns the member's address */
	uint64_t region_size;               /* group.region_size, bytes */
	bool huge_pages;                    /* group.huge_pages */
	uint32_t connect_timeout_ms;        /* group.connect_timeout_ms */
	uint64_t copy_threshold;            /* group.copy_threshold, bytes */

	uint32_t smc_max_payload;           /* smc.max_payload, bytes */
	uint32_t smc_window;                /* smc.window, slots per sender */

	uint64_t rdmc_block_size;           /* rdmc.block_size, bytes */

	uint32_t sst_heartbeat_ms;          /* sst.heartbeat_ms */
	uint32_t sst_suspect_timeout_ms;    /* sst.suspect_timeout_ms */

	uint32_t nmembers;
	struct group_member_cfg members[GROUP_CONFIG_MAX_MEMBERS];
};

/* Load and validate a .cfg file. Returns 0, or a negative errno with err
 * naming the file, the line (when libconfig knows it) and the setting. */
int group_config_load(const char *path, struct group_config *out,
		      struct squall_error *err);

/* Index of member `id` in cfg->members, or -ENOENT. */
int group_config_member_index(const struct group_config *cfg, uint32_t id);

/* The member's own id: from `arg` when non-NULL (a command-line value),
 * else from the environment variable SQUALL_MEMBER_ID. Checks that the id
 * is a member of cfg. Returns the id (>= 0) or a negative errno with err
 * saying what was missing or wrong. */
long group_config_my_id(const struct group_config *cfg, const char *arg,
			struct squall_error *err);

#endif /* SQUALL_CONFIG_H */
