/*
 * fuzz_config.c - libFuzzer target for the group .cfg loader.
 *
 * Feeds arbitrary bytes to group_config_parse_text (the loader minus the
 * file read) and, when a file is accepted, checks that what came out obeys
 * every rule the loader promises: a user can never get a config past the
 * loader that breaks the invariants the rest of squall relies on. Seed it
 * with the files in conf/ (see tests/fuzz/meson.build).
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <squall/config.h>

#include "group/config_parse.h"

static void check_valid(const struct group_config *c)
{
	uint64_t need, fp;

	assert(c->name[0] && memchr(c->name, '\0', sizeof(c->name)));
	assert(memchr(c->device, '\0', sizeof(c->device)));
	assert(c->nmembers >= 1 && c->nmembers <= GROUP_CONFIG_MAX_MEMBERS);
	assert(c->smc_window >= 2 && c->smc_window <= 65536 &&
	       (c->smc_window & (c->smc_window - 1)) == 0);
	assert(c->smc_max_payload >= 64 && c->smc_max_payload <= (1u << 20) &&
	       c->smc_max_payload % 8 == 0);
	need = (uint64_t)c->nmembers * c->smc_window *
	       (c->smc_max_payload + 64) + (1u << 20);
	assert(c->region_size >= need && c->region_size <= (64ull << 30));
	assert(c->region_size % 4096 == 0);
	assert(!c->huge_pages || c->region_size % (2u << 20) == 0);
	assert((c->rdmc_block_size & (c->rdmc_block_size - 1)) == 0);
	assert(c->rdmc_block_size <= c->region_size / 2);
	assert(c->sst_suspect_timeout_ms > c->sst_heartbeat_ms);
	assert(c->connect_timeout_ms >= 1);
	for (uint32_t i = 0; i < c->nmembers; i++) {
		assert(c->members[i].port >= 1);
		assert(group_config_member_index(c, c->members[i].id) == (int)i);
		for (uint32_t j = 0; j < i; j++)
			assert(c->members[j].port != c->members[i].port ||
			       strcmp(c->members[j].address,
				      c->members[i].address) != 0);
	}
	assert(group_config_fingerprint(c, &fp) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct group_config cfg;
	struct squall_error err;
	int rc;

	rc = group_config_parse_text("fuzz.cfg", (const char *)data, size, &cfg,
				     &err);
	if (rc == 0) {
		check_valid(&cfg);
	} else {
		/* every failure is explained, on one line */
		assert(rc == -EINVAL && err.code == rc);
		assert(err.msg[0] && !strchr(err.msg, '\n'));
	}
	return 0;
}
