/*
 * auth.c - group keys and proofs of them (see auth.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "rdma/auth.h"

#define KEY_HEX (2 * SQUALL_KEY_LEN)

static int ready(void)
{
	/* Thread-safe; 1 when it was done before. */
	return sodium_init() < 0 ? -EIO : 0;
}

uint64_t squall_auth_nonce(void)
{
	uint64_t n = 0;

	if (ready())
		return 0;
	while (!n)
		randombytes_buf(&n, sizeof(n));
	return n;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int squall_auth_prove(const uint8_t key[SQUALL_KEY_LEN],
		      enum squall_auth_role role,
		      const struct squall_auth_ctx *ctx,
		      uint8_t mac[SQUALL_MAC_LEN])
{
	crypto_auth_hmacsha256_state st;
	uint8_t b[1 + 8 * 5];

	if (ready())
		return -EIO;
	/* Fixed-size fields after the label and its terminating 0, so no
	 * two contexts encode alike. */
	b[0] = (uint8_t)role;
	put64(b + 1, ctx->fingerprint);
	put64(b + 9, ctx->epoch);
	put64(b + 17, (uint64_t)ctx->from << 32 | ctx->to);
	put64(b + 25, ctx->nonce_req);
	put64(b + 33, ctx->nonce_acc);
	crypto_auth_hmacsha256_init(&st, key, SQUALL_KEY_LEN);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)"squall-auth-1", 14);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)ctx->label,
				      strlen(ctx->label) + 1);
	crypto_auth_hmacsha256_update(&st, b, sizeof(b));
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
	return 0;
}

bool squall_auth_check(const uint8_t key[SQUALL_KEY_LEN],
		       enum squall_auth_role role,
		       const struct squall_auth_ctx *ctx, const void *mac,
		       size_t len)
{
	uint8_t want[SQUALL_MAC_LEN];
	bool ok;

	if (len != SQUALL_MAC_LEN || !ctx->nonce_req || !ctx->nonce_acc ||
	    squall_auth_prove(key, role, ctx, want))
		return false;
	ok = sodium_memcmp(want, mac, SQUALL_MAC_LEN) == 0;
	sodium_memzero(want, sizeof(want));
	return ok;
}

int squall_key_load(const char *path, uint8_t key[SQUALL_KEY_LEN],
		    struct squall_error *err)
{
	char text[KEY_HEX + 3];
	struct stat st;
	size_t bin_len = 0;
	ssize_t n;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return squall_error_set(err, -errno, "key file %s: %s", path,
					strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return squall_error_set(err, -EPERM, "key file %s: not a "
					"regular file", path);
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		close(fd);
		return squall_error_set(err, -EPERM, "key file %s: its group "
			"or others may read or write it (mode %04o); the key "
			"must be private to its owner: chmod 600 %s", path,
			(unsigned)(st.st_mode & 07777), path);
	}
	n = read(fd, text, sizeof(text));
	ret = n < 0 ? -errno : 0;
	close(fd);
	if (ret)
		return squall_error_set(err, ret, "key file %s: %s", path,
					strerror(-ret));
	if (n > 0 && text[n - 1] == '\n')
		n--;
	if (n != KEY_HEX ||
	    sodium_hex2bin(key, SQUALL_KEY_LEN, text, KEY_HEX, NULL, &bin_len,
			   NULL) || bin_len != SQUALL_KEY_LEN) {
		sodium_memzero(text, sizeof(text));
		return squall_error_set(err, -EINVAL, "key file %s: not a key "
			"(%d hexadecimal digits and a newline, as squall-keygen "
			"makes)", path, KEY_HEX);
	}
	sodium_memzero(text, sizeof(text));
	return 0;
}

int squall_key_make(const char *path, struct squall_error *err)
{
	uint8_t key[SQUALL_KEY_LEN];
	char text[KEY_HEX + 2];
	int fd, ret = 0;

	if (ready())
		return squall_error_set(err, -EIO, "libsodium failed to start");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0)
		return squall_error_set(err, -errno, "%s: %s", path,
					strerror(errno));
	randombytes_buf(key, sizeof(key));
	sodium_bin2hex(text, sizeof(text), key, sizeof(key));
	text[KEY_HEX] = '\n';
	if (write(fd, text, KEY_HEX + 1) != KEY_HEX + 1 || fsync(fd))
		ret = errno ? -errno : -EIO;
	if (close(fd) && !ret)
		ret = -errno;
	sodium_memzero(key, sizeof(key));
	sodium_memzero(text, sizeof(text));
	if (ret) {
		unlink(path);
		return squall_error_set(err, ret, "%s: %s", path,
					strerror(-ret));
	}
	return 0;
}
