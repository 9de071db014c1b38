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

/* libsquall's ABI: the library is built with hidden visibility, and the
 * calls declared below are what it exports (squall.map lists them). */
#pragma GCC visibility push(default)

#define GROUP_CONFIG_NAME_MAX 64
#define GROUP_CONFIG_ADDR_MAX 64
#define GROUP_CONFIG_MAX_MEMBERS 64
#define GROUP_CONFIG_PATH_MAX 256

struct group_member_cfg {
	uint32_t id;                        /* unique in the group */
	char address[GROUP_CONFIG_ADDR_MAX]; /* IPv4 literal the member listens on */
	uint16_t port;                      /* 1..65535, unique per address */
	bool joins;                         /* members[i].joins: not in the
					       first view; starts with
					       group_join() */
};

struct group_config {
	char path[GROUP_CONFIG_PATH_MAX];   /* the group file it was loaded from */
	char node_path[GROUP_CONFIG_PATH_MAX]; /* the node file, "" when none */
	char name[GROUP_CONFIG_NAME_MAX];   /* group.name */
	char device[GROUP_CONFIG_NAME_MAX]; /* group.device; "" = the device
					       that owns the member's address */
	uint64_t region_size;               /* group.region_size, bytes */
	bool huge_pages;                    /* group.huge_pages */
	uint32_t connect_timeout_ms;        /* group.connect_timeout_ms */
	uint32_t view_timeout_ms;           /* group.view_timeout_ms */
	uint64_t copy_threshold;            /* group.copy_threshold, bytes */

	uint32_t smc_max_payload;           /* smc.max_payload, bytes */
	uint32_t smc_window;                /* smc.window, slots per sender */

	uint64_t rdmc_block_size;           /* rdmc.block_size, bytes */

	uint32_t sst_heartbeat_ms;          /* sst.heartbeat_ms */
	uint32_t sst_suspect_timeout_ms;    /* sst.suspect_timeout_ms */
	uint32_t sst_idle;                  /* sst.idle: 0 adaptive, 1 spin,
					       2 block */
	uint32_t sst_spin_us;               /* sst.spin_us */
	uint32_t sst_spin_max_us;           /* sst.spin_max_us */

	/* group.peer_access: 0 "windows" (a peer writes only what it must:
	 * its SST row, its SMC ring, and each RDMC buffer it fills while the
	 * transfer lasts, each through a key of its own), 1 "region" (every
	 * peer gets one key to write the whole region). */
	uint32_t peer_access;

	/* group.key_file (resolved against the directory of the file that
	 * names it; "" when unset) and the key read from it. With a key,
	 * members prove to each other that they hold it before any memory
	 * key travels, and a join request must prove it too; without one,
	 * peers are not authenticated (group_create warns once). */
	char key_file[GROUP_CONFIG_PATH_MAX];
	bool has_key;
	uint8_t key[32];

	/* group.stats_file: where the member writes its counters every
	 * second and once as it closes (resolved like key_file; "" when
	 * unset). A "%u" in it stands for the member's id. squall-stat(1)
	 * prints the file. */
	char stats_file[GROUP_CONFIG_PATH_MAX];

	/* The view this configuration describes: 0 as loaded; a group in a
	 * later view connects with a copy holding that view's epoch and
	 * members, so members of different views refuse each other. */
	uint64_t epoch;
	uint32_t nmembers;
	struct group_member_cfg members[GROUP_CONFIG_MAX_MEMBERS];
};

/* Load and validate a .cfg file. Returns 0, or a negative errno with err
 * naming the file, the line (when libconfig knows it) and the setting, as
 * "FILE:LINE: SECTION.KEY: what is wrong". Same as
 * group_config_load_with(path, NULL, NULL, 0, out, err). `out` is written
 * only on success. Errors: -ENOENT, -EACCES... (file cannot be opened or
 * read, text from strerror), -EFBIG (file over 1 MiB), -ENAMETOOLONG (path
 * longer than GROUP_CONFIG_PATH_MAX - 1), -EINVAL (anything invalid,
 * group.key_file included: a key file that is missing, readable by its
 * group or others, or not a key). */
int group_config_load(const char *path, struct group_config *out,
		      struct squall_error *err);

/* Load the group file `path`, then apply overrides: `node_path` (NULL for
 * none) is a second .cfg with the same sections and keys whose settings
 * replace the group file's (a per-host file: device, huge_pages, timeouts);
 * it may not contain `members`. Then each of the `nsets` strings in `sets`
 * ("section.key=value", e.g. "group.device=mlx5_0", "smc.window=64", from
 * a command-line --set) replaces that setting. Every value gets the same
 * validation wherever it comes from, and errors name its source:
 * "node.cfg:3: group.device: ..." or "--set smc.window=3: smc.window: ...".
 * Overriding a setting peers must agree on (see group_config_fingerprint)
 * changes this member's fingerprint. Returns 0 or a negative errno as
 * group_config_load does. */
int group_config_load_with(const char *path, const char *node_path,
			   const char *const *sets, size_t nsets,
			   struct group_config *out, struct squall_error *err);

/* A 64-bit hash of the settings every member must agree on: group.name,
 * group.region_size, smc.max_payload, smc.window, rdmc.block_size, the
 * view's epoch when it is not 0 (a later view's members) and the members
 * in file order (id, address, port, and whether it joins). Local choices
 * (device, huge_pages, timeouts, copy_threshold, stats_file, sst) are
 * left out. Peers exchange it when they connect and refuse a member whose
 * file disagrees. Stable across builds and hosts (fixed byte order).
 * Returns 0, or -EINVAL when cfg is NULL or has no valid member count. */
int group_config_fingerprint(const struct group_config *cfg, uint64_t *out);

/* Index of member `id` in cfg->members, or -ENOENT. */
int group_config_member_index(const struct group_config *cfg, uint32_t id);

/* The member's own id: from `arg` when non-NULL (a command-line value),
 * else from the environment variable SQUALL_MEMBER_ID, else from the rank
 * a launcher gives the process (the first set of SLURM_PROCID, srun;
 * OMPI_COMM_WORLD_RANK, Open MPI's mpirun; PMIX_RANK; PMI_RANK): rank r is
 * the r-th member of cfg in file order. Checks that the id is a member of
 * cfg. Returns the id (>= 0) or a negative errno with err saying what was
 * missing or wrong: -EINVAL when there is no id or it is not a decimal
 * number from 0 to 4294967295 (a rank: from 0), -ENOENT when no member of
 * cfg has it or a rank is beyond cfg's members (the message names
 * cfg->path and the known ids or the member count). */
long group_config_my_id(const struct group_config *cfg, const char *arg,
			struct squall_error *err);

#pragma GCC visibility pop

#endif /* SQUALL_CONFIG_H */
