/*
 * test_rdma_args.c - rdma_sq_create refuses bad input before touching any
 * device, with errors that say what was wrong (no NIC needed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <squall/rdma.h>

static char region[4096];

static void two_members(struct group_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->path, sizeof(cfg->path), "test.cfg");
	cfg->nmembers = 2;
	cfg->members[0] = (struct group_member_cfg){ .id = 1, .address = "10.77.0.1", .port = 7000 };
	cfg->members[1] = (struct group_member_cfg){ .id = 2, .address = "10.77.0.2", .port = 7000 };
	cfg->connect_timeout_ms = 1000;
}

static void test_required_arguments(void **state)
{
	struct group_config cfg;
	struct rdma_sq_node *node = NULL;
	struct squall_error err;

	(void)state;
	two_members(&cfg);
	assert_int_equal(rdma_sq_create(NULL, 1, region, sizeof(region), NULL, &node, &err), -EINVAL);
	assert_int_equal(rdma_sq_create(&cfg, 1, NULL, sizeof(region), NULL, &node, &err), -EINVAL);
	assert_int_equal(rdma_sq_create(&cfg, 1, region, 0, NULL, &node, &err), -EINVAL);
	assert_int_equal(rdma_sq_create(&cfg, 1, region, sizeof(region), NULL, NULL, &err), -EINVAL);
	cfg.nmembers = 0;
	assert_int_equal(rdma_sq_create(&cfg, 1, region, sizeof(region), NULL, &node, &err), -EINVAL);
	assert_null(node);
}

static void test_unknown_member(void **state)
{
	struct group_config cfg;
	struct rdma_sq_node *node = NULL;
	struct squall_error err;

	(void)state;
	two_members(&cfg);
	assert_int_equal(rdma_sq_create(&cfg, 9, region, sizeof(region), NULL, &node, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "member 9 is not in the group (test.cfg)"));
	assert_null(node);
}

static void test_bad_address(void **state)
{
	struct group_config cfg;
	struct rdma_sq_node *node = NULL;
	struct squall_error err;

	(void)state;
	two_members(&cfg);
	snprintf(cfg.members[1].address, sizeof(cfg.members[1].address), "host.example");
	assert_int_equal(rdma_sq_create(&cfg, 2, region, sizeof(region), NULL, &node, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'host.example' is not an IPv4 literal"));
}

static void test_options_out_of_range(void **state)
{
	struct group_config cfg;
	struct rdma_sq_node *node = NULL;
	struct squall_error err;
	struct rdma_sq_options o = { .max_send_wr = 100000 };

	(void)state;
	two_members(&cfg);
	assert_int_equal(rdma_sq_create(&cfg, 1, region, sizeof(region), &o, &node, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "work requests"));
	o = (struct rdma_sq_options){ .retry_count = 8 };
	assert_int_equal(rdma_sq_create(&cfg, 1, region, sizeof(region), &o, &node, &err), -EINVAL);
	o = (struct rdma_sq_options){ .max_sge = 17 };
	assert_int_equal(rdma_sq_create(&cfg, 1, region, sizeof(region), &o, &node, &err), -EINVAL);
	assert_null(node);
}

static void test_destroy_null(void **state)
{
	(void)state;
	rdma_sq_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_required_arguments),
		cmocka_unit_test(test_unknown_member),
		cmocka_unit_test(test_bad_address),
		cmocka_unit_test(test_options_out_of_range),
		cmocka_unit_test(test_destroy_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
