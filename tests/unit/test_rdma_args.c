/*
 * test_rdma_args.c - rdma_sq_create refuses bad input before touching any
 * device, with errors that say what was wrong (no NIC needed); and what
 * the group tells the transport of a .cfg (group_transport).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <squall/config.h>
#include <squall/rdma.h>

#include "group/transport.h"
#include "rdma/node.h"

static char region[4096];

struct two {
	struct rdma_sq_group g;
	struct rdma_sq_member m[2];
};

static struct rdma_sq_group *two_members(struct two *t)
{
	memset(t, 0, sizeof(*t));
	t->m[0] = (struct rdma_sq_member){ .id = 1, .address = "10.77.0.1", .port = 7000 };
	t->m[1] = (struct rdma_sq_member){ .id = 2, .address = "10.77.0.2", .port = 7000 };
	t->g = (struct rdma_sq_group){ .name = "test.cfg", .nmembers = 2,
				       .members = t->m, .cookie = 1,
				       .connect_timeout_ms = 1000 };
	return &t->g;
}

static void test_required_arguments(void **state)
{
	struct two cfg;
	struct rdma_sq_node *node = NULL;
	struct squall_error err;

	(void)state;
	two_members(&cfg);
	assert_int_equal(rdma_sq_create(NULL, 1, region, sizeof(region), NULL, &node, &err), -EINVAL);
	assert_int_equal(rdma_sq_create(&cfg.g, 1, NULL, sizeof(region), NULL, &node, &err), -EINVAL);
	assert_int_equal(rdma_sq_create(&cfg.g, 1, region, 0, NULL, &node, &err), -EINVAL);
	assert_int_equal(rdma_sq_create(&cfg.g, 1, region, sizeof(region), NULL, NULL, &err), -EINVAL);
	cfg.g.nmembers = 0;
	assert_int_equal(rdma_sq_create(&cfg.g, 1, region, sizeof(region), NULL, &node, &err), -EINVAL);
	assert_null(node);
}

static void test_unknown_member(void **state)
{
	struct two cfg;
	struct rdma_sq_node *node = NULL;
	struct squall_error err;

	(void)state;
	two_members(&cfg);
	assert_int_equal(rdma_sq_create(&cfg.g, 9, region, sizeof(region), NULL, &node, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "member 9 is not in the group (test.cfg)"));
	assert_null(node);
}

static void test_bad_address(void **state)
{
	struct two cfg;
	struct rdma_sq_node *node = NULL;
	struct squall_error err;

	(void)state;
	two_members(&cfg);
	snprintf(cfg.m[1].address, sizeof(cfg.m[1].address), "host.example");
	assert_int_equal(rdma_sq_create(&cfg.g, 2, region, sizeof(region), NULL, &node, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'host.example' is not an IPv4 literal"));
}

static void test_options_out_of_range(void **state)
{
	struct two cfg;
	struct rdma_sq_node *node = NULL;
	struct squall_error err;
	struct rdma_sq_options o = { .max_send_wr = 100000 };

	(void)state;
	two_members(&cfg);
	assert_int_equal(rdma_sq_create(&cfg.g, 1, region, sizeof(region), &o, &node, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "work requests"));
	o = (struct rdma_sq_options){ .retry_count = 8 };
	assert_int_equal(rdma_sq_create(&cfg.g, 1, region, sizeof(region), &o, &node, &err), -EINVAL);
	o = (struct rdma_sq_options){ .max_sge = RDMA_SQ_MAX_SGE + 1 };
	assert_int_equal(rdma_sq_create(&cfg.g, 1, region, sizeof(region), &o, &node, &err), -EINVAL);
	assert_null(node);
}

/* A .cfg as the transport sees it: its members in order, its
 * fingerprint as the hello cookie, its epoch, and its key only when it
 * has one. */
static void test_group_transport(void **state)
{
	struct group_config cfg;
	struct group_transport t;
	const struct rdma_sq_group *g;
	uint64_t fp;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.path, sizeof(cfg.path), "test.cfg");
	snprintf(cfg.name, sizeof(cfg.name), "t");
	cfg.nmembers = 2;
	cfg.members[0] = (struct group_member_cfg){ .id = 4, .address = "10.77.0.4", .port = 7004 };
	cfg.members[1] = (struct group_member_cfg){ .id = 3, .address = "10.77.0.3", .port = 7003 };
	cfg.connect_timeout_ms = 1234;
	cfg.epoch = 7;
	g = group_transport(&cfg, &t);
	assert_non_null(g);
	assert_int_equal(group_config_fingerprint(&cfg, &fp), 0);
	assert_true(g->cookie == fp);
	assert_int_equal(g->epoch, 7);
	assert_int_equal(g->nmembers, 2);
	assert_int_equal(g->members[0].id, 4);
	assert_string_equal(g->members[1].address, "10.77.0.3");
	assert_int_equal(g->members[1].port, 7003);
	assert_int_equal(g->connect_timeout_ms, 1234);
	assert_string_equal(g->name, "test.cfg");
	assert_null(g->key);
	cfg.has_key = true;
	cfg.key[0] = 0x5a;
	g = group_transport(&cfg, &t);
	assert_non_null(g->key);
	assert_int_equal(g->key[0], 0x5a);
	/* Another epoch is another cookie: a member of another view is
	 * refused at its hello. */
	cfg.epoch = 8;
	assert_true(group_transport(&cfg, &t)->cookie != fp);
	cfg.nmembers = 0;
	assert_null(group_transport(&cfg, &t));
}

/* Keeping a listener needs a node that listens; freeing none is safe. */
static void test_listener_args(void **state)
{
	struct rdma_sq_listener *l = NULL;
	struct squall_error err = { 0 };

	(void)state;
	assert_int_equal(rdma_sq_listener_keep(NULL, &l, &err), -EINVAL);
	assert_null(l);
	assert_non_null(strstr(err.msg, "does not listen"));
	rdma_sq_listener_free(NULL);
}

static void test_destroy_null(void **state)
{
	(void)state;
	rdma_sq_destroy(NULL);
}

/* Peers that write through windows need the region registered with the
 * right to bind them, whatever else turned windows off: with on-demand
 * paging the cache's use-once windows go (mw_bind false, odp.c), but the
 * peers' windows over the region stay (win_mw), and so must the region's
 * MW_BIND access. */
static void test_region_access_windows(void **state)
{
	static struct rdma_sq_node node;

	(void)state;
	node.opt.peer_windows = true;
	node.win_mw = true;
	node.mw_bind = false;
	assert_true(rdma_sq_region_access(&node) & IBV_ACCESS_MW_BIND);
	assert_false(rdma_sq_region_access(&node) & IBV_ACCESS_REMOTE_WRITE);
	node.win_mw = false;
	assert_false(rdma_sq_region_access(&node) & IBV_ACCESS_MW_BIND);
	node.mw_bind = true;
	assert_true(rdma_sq_region_access(&node) & IBV_ACCESS_MW_BIND);
	node.opt.peer_windows = false;
	assert_true(rdma_sq_region_access(&node) & IBV_ACCESS_REMOTE_WRITE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_required_arguments),
		cmocka_unit_test(test_unknown_member),
		cmocka_unit_test(test_bad_address),
		cmocka_unit_test(test_options_out_of_range),
		cmocka_unit_test(test_group_transport),
		cmocka_unit_test(test_listener_args),
		cmocka_unit_test(test_destroy_null),
		cmocka_unit_test(test_region_access_windows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
