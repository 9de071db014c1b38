/*
 * member_common.h - what the VM test members share: a two-member group
 * built from the command line (member i at 10.77.0.i, port BASE + i), a
 * region, and waiting for one completion with a deadline. Every failure
 * ends the process with a line on stderr naming the member.
 */
#ifndef SQUALL_TESTS_VM_MEMBER_COMMON_H
#define SQUALL_TESTS_VM_MEMBER_COMMON_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <squall/config.h>
#include <squall/rdma.h>

#include "group/transport.h"

struct member {
	const char *prog;
	uint32_t id, peer;
	struct group_config cfg;
	struct rdma_sq_node *node;
	uint8_t *region;
	size_t region_len;
	unsigned timeout_ms;
	/* completions taken while waiting for another one */
	struct rdma_sq_wc pend[64];
	int npend;
};

static inline void die(const struct member *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
static inline void die(const struct member *m, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: member %u: ", m->prog, m->id);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static inline void member_log(void *arg, int level, const char *msg)
{
	const struct member *m = arg;

	fprintf(stderr, "%s: member %u: rdma[%d]: %s\n", m->prog, m->id, level, msg);
}

/* Members 1 and 2; `id` is this one. The node gets the options o, with
 * the members' queue depths and log filled in. */
static inline void member_init_with(struct member *m, const char *prog,
				    uint32_t id, unsigned port,
				    size_t region_len, struct rdma_sq_options o)
{
	struct squall_error err;
	int ret;

	memset(m, 0, sizeof(*m));
	o.max_send_wr = 16;
	o.max_recv_wr = 16;
	o.log = member_log;
	o.log_arg = m;
	m->prog = prog;
	m->id = id;
	m->peer = 3 - id;
	m->timeout_ms = 60000;
	if (id != 1 && id != 2)
		die(m, "--id must be 1 or 2");
	snprintf(m->cfg.name, sizeof(m->cfg.name), "%s", prog);
	m->cfg.connect_timeout_ms = 30000;
	m->cfg.nmembers = 2;
	for (uint32_t i = 0; i < 2; i++) {
		m->cfg.members[i].id = i + 1;
		snprintf(m->cfg.members[i].address, GROUP_CONFIG_ADDR_MAX,
			 "10.77.0.%u", i + 1);
		m->cfg.members[i].port = (uint16_t)(port + i + 1);
	}
	m->region_len = region_len;
	m->region = mmap(NULL, region_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->region == MAP_FAILED)
		die(m, "mmap of the region: %s", strerror(errno));
	ret = group_transport_create(&m->cfg, id, m->region, region_len, &o, &m->node, &err);
	if (ret)
		die(m, "rdma_sq_create: %s", err.msg);
	ret = rdma_sq_connect_all(m->node, &err);
	if (ret)
		die(m, "rdma_sq_connect_all: %s", err.msg);
	printf("member %u connected to member %u on %s\n", id, m->peer,
	       rdma_sq_device_name(m->node));
	fflush(stdout);
}

/* member_init_with, the cache's monitor mode given, all else default. */
static inline void member_init(struct member *m, const char *prog, uint32_t id,
			       unsigned port, size_t region_len,
			       enum regcache_monitor_mode monitor)
{
	member_init_with(m, prog, id, port, region_len,
			 (struct rdma_sq_options){ .cache_monitor = monitor });
}

/* Wait for the completion of wr_id (other completions are kept for later
 * calls). A failed completion is returned as well: the caller decides. */
static inline struct rdma_sq_wc member_wait(struct member *m, uint64_t wr_id)
{
	unsigned waited = 0;

	for (;;) {
		struct rdma_sq_wc wc[8];
		int n;

		for (int i = 0; i < m->npend; i++) {
			if (m->pend[i].wr_id == wr_id) {
				struct rdma_sq_wc w = m->pend[i];

				m->pend[i] = m->pend[--m->npend];
				return w;
			}
		}
		n = rdma_sq_poll(m->node, wc, 8);
		if (n < 0)
			die(m, "rdma_sq_poll: %s", strerror(-n));
		for (int i = 0; i < n; i++) {
			if (m->npend == (int)(sizeof(m->pend) / sizeof(m->pend[0])))
				die(m, "too many completions pending");
			m->pend[m->npend++] = wc[i];
		}
		if (n)
			continue;
		if (waited >= m->timeout_ms)
			die(m, "timed out waiting for request %#llx",
			    (unsigned long long)wr_id);
		n = rdma_sq_wait(m->node, 100);
		if (n == -ETIMEDOUT)
			waited += 100;
		else if (n < 0)
			die(m, "rdma_sq_wait: %s", strerror(-n));
	}
}

/* Wait (at most 60 s) until the peer has disconnected, polling meanwhile:
 * the side that answers last calls it before it destroys its node, so
 * that the other side never finds its queue pair flushed by a disconnect
 * while it still expects something. */
static inline void member_wait_peer_gone(struct member *m)
{
	for (int i = 0; i < 600 && rdma_sq_peer_alive(m->node, m->peer); i++) {
		struct rdma_sq_wc wc[4];

		rdma_sq_poll(m->node, wc, 4);
		rdma_sq_wait(m->node, 100);
	}
}

/* As member_wait, and the completion must have succeeded. */
static inline struct rdma_sq_wc member_wait_ok(struct member *m, uint64_t wr_id,
					       const char *what)
{
	struct rdma_sq_wc w = member_wait(m, wr_id);

	if (w.status)
		die(m, "%s failed: %s (%s)", what, w.status_text,
		    rdma_sq_peer_error(m->node, m->peer));
	return w;
}

/* The byte at address a of generation gen: consecutive generations (mod
 * 256) differ at every byte. */
static inline uint8_t pattern(uint32_t gen, uint64_t a)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull;

	return (uint8_t)((h >> 56) + gen);
}

static inline void fill(uint8_t *p, size_t len, uint32_t gen, uint64_t base)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(gen, base + i);
}

/* Index of the first byte that is not generation gen's, or len. */
static inline size_t check(const uint8_t *p, size_t len, uint32_t gen,
			   uint64_t base)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(gen, base + i))
			return i;
	return len;
}

#endif
