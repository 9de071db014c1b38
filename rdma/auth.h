/*
 * auth.h - the group key and the proofs members give of it.
 *
 * A group with group.key_file set shares one 32-byte secret. Members prove
 * they hold it without sending it: each side of a connection sends
 * HMAC-SHA-256(key, label | role | group fingerprint | epoch | sender id |
 * receiver id | requester nonce | acceptor nonce), where the nonces are
 * fresh random numbers of that connection (one from each side, in the
 * rdma_cm hellos or the join exchange). A proof is good for one
 * connection only: replayed on another, its nonces are wrong; taken from
 * one direction to the other (reflected), its role is; from another view,
 * its epoch. The MAC and the random numbers come from libsodium, which
 * has both in a small API that is hard to misuse (constant-time
 * verification included) and is packaged everywhere.
 *
 * The key file holds the key as 64 hexadecimal digits and a newline; it
 * must be a regular file with no permission for its group or others
 * (mode 0600 or stricter: no read, write or execute bit), or it is
 * refused. squall-keygen makes one.
 */
#ifndef SQUALL_RDMA_AUTH_H
#define SQUALL_RDMA_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <squall/error.h>

#define SQUALL_KEY_LEN 32u
#define SQUALL_MAC_LEN 32u

/* Who gives a proof: the side that connects (or asks to join) or the side
 * that accepts (or is asked). */
enum squall_auth_role {
	SQUALL_AUTH_REQUESTER = 1,
	SQUALL_AUTH_ACCEPTOR = 2,
};

/* What a proof binds. */
struct squall_auth_ctx {
	const char *label;      /* the exchange: "rdma", "join" */
	uint64_t fingerprint;   /* the hello cookie (rdma_sq_group) */
	uint64_t epoch;
	uint32_t from, to;      /* giver and receiver of the proof */
	uint64_t nonce_req, nonce_acc;
};

/* A fresh random nonce, never 0 (0 says "no authentication"). */
uint64_t squall_auth_nonce(void);

/* The proof `role` gives in ctx, into mac. Returns 0 or -EIO (libsodium
 * failed to initialise). */
int squall_auth_prove(const uint8_t key[SQUALL_KEY_LEN],
		      enum squall_auth_role role,
		      const struct squall_auth_ctx *ctx,
		      uint8_t mac[SQUALL_MAC_LEN]);

/* Whether mac (len bytes) is the proof `role` gives in ctx, compared in
 * constant time; a truncated proof (len != SQUALL_MAC_LEN) is not. */
bool squall_auth_check(const uint8_t key[SQUALL_KEY_LEN],
		       enum squall_auth_role role,
		       const struct squall_auth_ctx *ctx, const void *mac,
		       size_t len);

/* Read the key in `path`. Returns 0, or a negative errno with err naming
 * the file and what is wrong: -ENOENT, -EACCES... (cannot open), -EPERM
 * (its group or others have any permission on it, or it is not a
 * regular file), -EINVAL (not 64 hex digits). */
int squall_key_load(const char *path, uint8_t key[SQUALL_KEY_LEN],
		    struct squall_error *err);

/* Make a new random key in `path` (created, mode 0600; an existing file
 * is left alone: -EEXIST). Returns 0 or a negative errno with err. */
int squall_key_make(const char *path, struct squall_error *err);

#endif /* SQUALL_RDMA_AUTH_H */
