/*
 * sst_setup.h - what the SST test member and the SST benchmark share: the
 * member list from the command line, a zeroed region, a connected node and
 * a started table with the test columns.
 *
 * Members are given as --member ID,ADDR,PORT (as rdma_ping takes them), so
 * the programs run with or without a .cfg file.
 */
#ifndef SQUALL_TESTS_SST_SETUP_H
#define SQUALL_TESTS_SST_SETUP_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <squall/config.h>
#include <squall/rdma.h>
#include <squall/sst.h>

#include "group/transport.h"

/* The test columns. */
enum { COL_COUNTER, COL_DONE, COL_PING, COL_ACKS, COL_TAG, COL_PHASE, NCOLS };

static const struct sst_column test_columns[NCOLS] = {
	[COL_COUNTER] = { "counter", SST_COL_U64, 0 },
	[COL_DONE] = { "done", SST_COL_FLAG, 0 },
	[COL_PING] = { "ping", SST_COL_U64, 0 },
	[COL_ACKS] = { "acks", SST_COL_U64_ARRAY, SST_MAX_MEMBERS },
	[COL_TAG] = { "tag", SST_COL_BYTES, 12 },
	[COL_PHASE] = { "phase", SST_COL_U64, 0 },
};

struct member {
	const char *prog;
	struct group_config cfg;
	uint32_t id;
	uint32_t me;            /* rank */
	uint8_t *region;
	size_t region_len;
	struct rdma_sq_node *node;
	struct sst_layout *layout;
	struct sst *t;
};

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wall clock in ms, comparable with `date +%s%3N` in the test scripts. */
static inline uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline void die(const struct member *m, const char *what,
		       const char *msg)
{
	fprintf(stderr, "%s: member %u: %s: %s\n", m->prog, m->id, what, msg);
	fflush(stdout);
	exit(1);
}

static inline void add_member(struct member *m, const char *arg)
{
	struct group_member_cfg *c = &m->cfg.members[m->cfg.nmembers];
	unsigned id, port;
	char addr[GROUP_CONFIG_ADDR_MAX];

	if (m->cfg.nmembers >= SST_MAX_MEMBERS ||
	    sscanf(arg, "%u,%63[^,],%u", &id, addr, &port) != 3 ||
	    port == 0 || port > 65535) {
		fprintf(stderr, "%s: bad --member '%s' (want ID,ADDR,PORT)\n",
			m->prog, arg);
		exit(2);
	}
	c->id = id;
	snprintf(c->address, sizeof(c->address), "%s", addr);
	c->port = (uint16_t)port;
	m->cfg.nmembers++;
}

static inline void member_init(struct member *m, const char *prog)
{
	memset(m, 0, sizeof(*m));
	m->prog = prog;
	snprintf(m->cfg.name, sizeof(m->cfg.name), "%s", prog);
	snprintf(m->cfg.path, sizeof(m->cfg.path), "(command line)");
	m->cfg.connect_timeout_ms = 60000;
}

/* Map the region, create and connect the node, create the table at
 * offset 0 of the region. The table starts after sst_start. */
static inline void member_connect(struct member *m,
				  const struct sst_options *sopt)
{
	struct rdma_sq_options ropt = { 0 };
	struct squall_error err = { 0 };
	struct sst_options so;
	int rc = -ENOENT;

	for (uint32_t i = 0; i < m->cfg.nmembers; i++)
		if (m->cfg.members[i].id == m->id)
			rc = (int)i;
	if (rc < 0)
		die(m, "setup", "--id is not among the --member entries");
	m->me = (uint32_t)rc;
	if (sst_layout_create(test_columns, NCOLS, &m->layout, &err))
		die(m, "layout", err.msg);
	m->region_len = 1 << 20;
	m->region = mmap(NULL, m->region_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (m->region == MAP_FAILED)
		die(m, "mmap", strerror(errno));
	m->cfg.region_size = m->region_len;
	/* Room for the table's pipeline and its receives, with margin. */
	ropt.max_send_wr = 128;
	ropt.max_recv_wr = 512;
	if (group_transport_create(&m->cfg, m->id, m->region, m->region_len, &ropt,
			   &m->node, &err))
		die(m, "rdma_sq_create", err.msg);
	if (rdma_sq_connect_all(m->node, &err))
		die(m, "rdma_sq_connect_all", err.msg);
	/* The .cfg's sst settings where the caller left them 0. */
	so = sopt ? *sopt : (struct sst_options){ 0 };
	if (!so.heartbeat_ms)
		so.heartbeat_ms = m->cfg.sst_heartbeat_ms;
	if (!so.suspect_timeout_ms)
		so.suspect_timeout_ms = m->cfg.sst_suspect_timeout_ms;
	if (sst_create(m->node, m->layout, m->region, 0, &so, &m->t,
		       &err))
		die(m, "sst_create", err.msg);
}

static inline void member_start(struct member *m)
{
	struct squall_error err = { 0 };

	if (sst_start(m->t, &err))
		die(m, "sst_start", err.msg);
	if (sst_wait_peers(m->t, 60000, &err))
		die(m, "sst_wait_peers", err.msg);
}

static inline void member_close(struct member *m)
{
	sst_destroy(m->t);
	rdma_sq_destroy(m->node);
	sst_layout_destroy(m->layout);
	munmap(m->region, m->region_len);
}

#endif /* SQUALL_TESTS_SST_SETUP_H */
