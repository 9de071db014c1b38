/*
 * test_auth.c - group keys and the proofs members give of them
 * (rdma/auth.h): a proof checks only with the same key, role, group,
 * epoch, ids and both nonces of its connection, and whole; key files are
 * refused when others may read them or when they hold no key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "rdma/auth.h"

static const uint8_t key_a[SQUALL_KEY_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8 };
static const uint8_t key_b[SQUALL_KEY_LEN] = { 1, 2, 3, 4, 5, 6, 7, 9 };

static struct squall_auth_ctx ctx(void)
{
	return (struct squall_auth_ctx){
		.label = "rdma", .fingerprint = 0x1234, .epoch = 3,
		.from = 1, .to = 2, .nonce_req = 77, .nonce_acc = 99,
	};
}

/* The requester's proof mac does not check in context o. */
static void rejected(const uint8_t *mac, struct squall_auth_ctx o)
{
	assert_false(squall_auth_check(key_a, SQUALL_AUTH_REQUESTER, &o, mac,
				       SQUALL_MAC_LEN));
}

static void test_proof_checks(void **state)
{
	struct squall_auth_ctx c = ctx(), o;
	uint8_t mac[SQUALL_MAC_LEN];

	(void)state;
	assert_int_equal(squall_auth_prove(key_a, SQUALL_AUTH_REQUESTER, &c,
					   mac), 0);
	assert_true(squall_auth_check(key_a, SQUALL_AUTH_REQUESTER, &c, mac,
				      sizeof(mac)));
	/* Wrong key. */
	assert_false(squall_auth_check(key_b, SQUALL_AUTH_REQUESTER, &c, mac,
				       sizeof(mac)));
	/* Reflected: the acceptor's proof is another one. */
	assert_false(squall_auth_check(key_a, SQUALL_AUTH_ACCEPTOR, &c, mac,
				       sizeof(mac)));
	/* Replayed on another connection: either side's nonce differs. */
	o = c, o.nonce_acc = 100, rejected(mac, o);
	o = c, o.nonce_req = 78, rejected(mac, o);
	/* Another epoch, group, sender, receiver or exchange. */
	o = c, o.epoch = 4, rejected(mac, o);
	o = c, o.fingerprint = 0x1235, rejected(mac, o);
	o = c, o.from = 3, rejected(mac, o);
	o = c, o.to = 0, rejected(mac, o);
	o = c, o.label = "join", rejected(mac, o);
	/* Truncated, or one bit off. */
	assert_false(squall_auth_check(key_a, SQUALL_AUTH_REQUESTER, &c, mac,
				       sizeof(mac) - 1));
	assert_false(squall_auth_check(key_a, SQUALL_AUTH_REQUESTER, &c, mac, 0));
	mac[5] ^= 1;
	rejected(mac, c);
	/* No nonce: never a proof. */
	o = c;
	o.nonce_acc = 0;
	assert_int_equal(squall_auth_prove(key_a, SQUALL_AUTH_REQUESTER, &o,
					   mac), 0);
	rejected(mac, o);
}

static void test_nonces(void **state)
{
	uint64_t a = squall_auth_nonce(), b = squall_auth_nonce();

	(void)state;
	assert_true(a != 0 && b != 0 && a != b);
}

static char dir[64];

static const char *path_in(const char *name)
{
	static char p[128];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static void write_file(const char *name, const char *text, mode_t mode)
{
	FILE *f = fopen(path_in(name), "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path_in(name), mode), 0);
}

static void test_key_files(void **state)
{
	struct squall_error err = { 0 };
	uint8_t k1[SQUALL_KEY_LEN], k2[SQUALL_KEY_LEN];
	struct stat st;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/squall-auth.XXXXXX");
	assert_non_null(mkdtemp(dir));
	/* Made: 0600, loads; a second one differs; an existing file stays. */
	assert_int_equal(squall_key_make(path_in("a.key"), &err), 0);
	assert_int_equal(stat(path_in("a.key"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, 65);
	assert_int_equal(squall_key_load(path_in("a.key"), k1, &err), 0);
	assert_int_equal(squall_key_make(path_in("b.key"), &err), 0);
	assert_int_equal(squall_key_load(path_in("b.key"), k2, &err), 0);
	assert_memory_not_equal(k1, k2, sizeof(k1));
	assert_int_equal(squall_key_make(path_in("a.key"), &err), -EEXIST);
	/* Others or the group may read it: refused, saying how to fix. */
	assert_int_equal(chmod(path_in("a.key"), 0644), 0);
	assert_int_equal(squall_key_load(path_in("a.key"), k1, &err), -EPERM);
	assert_non_null(strstr(err.msg, "mode 0644"));
	assert_non_null(strstr(err.msg, "chmod 600"));
	assert_int_equal(chmod(path_in("a.key"), 0640), 0);
	assert_int_equal(squall_key_load(path_in("a.key"), k1, &err), -EPERM);
	assert_int_equal(chmod(path_in("a.key"), 0400), 0);
	assert_int_equal(squall_key_load(path_in("a.key"), k2, &err), 0);
	assert_memory_equal(k1, k2, sizeof(k1));
	/* Not a key: too short, not hex, too long. */
	write_file("short.key", "0123456789abcdef\n", 0600);
	assert_int_equal(squall_key_load(path_in("short.key"), k1, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "short.key"));
	write_file("hex.key", "zz23456789abcdef0123456789abcdef"
		   "0123456789abcdef0123456789abcdef\n", 0600);
	assert_int_equal(squall_key_load(path_in("hex.key"), k1, &err), -EINVAL);
	write_file("long.key", "0123456789abcdef0123456789abcdef"
		   "0123456789abcdef0123456789abcdef00\n", 0600);
	assert_int_equal(squall_key_load(path_in("long.key"), k1, &err), -EINVAL);
	/* Missing; a directory. */
	assert_int_equal(squall_key_load(path_in("none.key"), k1, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "none.key"));
	assert_int_equal(squall_key_load(dir, k1, &err), -EPERM);
	for (const char *n = "a.key\0b.key\0short.key\0hex.key\0long.key\0";
	     *n; n += strlen(n) + 1)
		unlink(path_in(n));
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proof_checks),
		cmocka_unit_test(test_nonces),
		cmocka_unit_test(test_key_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
