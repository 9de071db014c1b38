/*
 * example_common.h - what the group examples share: loading the group file
 * with a member's own overrides, a clock, and a reproducible random stream.
 *
 * Every example takes the same four options: --config GROUP.cfg, --id N
 * (or SQUALL_MEMBER_ID), --node NODE.cfg and any number of --set
 * section.key=value. They load the group exactly as group_create() would
 * (group_config_load_with), so a typo stops the member with the file, line
 * and setting before it touches the network.
 */
#ifndef SQUALL_EXAMPLE_COMMON_H
#define SQUALL_EXAMPLE_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <squall/config.h>
#include <squall/error.h>

#define EX_MAX_SETS 32

/* The group options every example understands, collected by getopt. */
struct ex_group_args {
	const char *config;
	const char *id;
	const char *node;
	const char *sets[EX_MAX_SETS];
	size_t nsets;
};

static inline void ex_add_set(const char *prog, struct ex_group_args *ga,
			      const char *set)
{
	if (ga->nsets == EX_MAX_SETS) {
		fprintf(stderr, "%s: at most %d --set options\n", prog,
			EX_MAX_SETS);
		exit(2);
	}
	ga->sets[ga->nsets++] = set;
}

/* Load the group file with the node file and --set overrides and find this
 * member's id; on any error print it and exit(2). Returns the id. */
static inline uint32_t ex_load_group(const char *prog,
				     const struct ex_group_args *ga,
				     struct group_config *cfg)
{
	struct squall_error err;
	long id;

	if (!ga->config) {
		fprintf(stderr, "%s: --config GROUP.cfg is required\n", prog);
		exit(2);
	}
	if (group_config_load_with(ga->config, ga->node, ga->sets, ga->nsets,
				   cfg, &err) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err.msg);
		exit(2);
	}
	id = group_config_my_id(cfg, ga->id, &err);
	if (id < 0) {
		fprintf(stderr, "%s: %s\n", prog, err.msg);
		exit(2);
	}
	return (uint32_t)id;
}

/* Parse a non-negative decimal option value or exit(2). */
static inline uint64_t ex_number(const char *prog, const char *opt,
				 const char *s)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		goto bad;
	v = strtoull(s, &end, 10);
	if (*end)
		goto bad;
	return v;
bad:
	fprintf(stderr, "%s: %s wants a non-negative number, not '%s'\n", prog,
		opt, s ? s : "");
	exit(2);
}

static inline double ex_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* splitmix64: one step of a stream that any member can replay from the
 * same seed, so a receiver knows what a sender wrote without being told. */
static inline uint64_t ex_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

#endif /* SQUALL_EXAMPLE_COMMON_H */
