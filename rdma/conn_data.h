/*
 * conn_data.h - the connection private data exchanged through rdma_cm.
 *
 * Both the connect request and the accept (or reject) carry one fixed,
 * little-endian record: magic, wire version, member id, the sender's
 * region target, the group's cookie (rdma_sq_group: the group puts its
 * file's fingerprint there) and, in a group with a key, the sender's
 * fresh nonce for this connection (rdma/auth.h; the region target is then
 * 0: it travels only after both sides proved they hold the key) and,
 * from wire version 1.1, flags (RDMA_SQ_HELLO_*). It fits the 56 bytes RC
 * connect private data allows.
 */
#ifndef SQUALL_RDMA_CONN_DATA_H
#define SQUALL_RDMA_CONN_DATA_H

#include <stddef.h>
#include <stdint.h>

#include <squall/error.h>

#define RDMA_SQ_WIRE_MAGIC 0x4c415153u /* "SQAL" read as little-endian */
#define RDMA_SQ_WIRE_LEN 52
/* A 1.0 hello ends before the flags. */
#define RDMA_SQ_WIRE_LEN_1_0 48

/* In a refusal: this member is alive and in the group, but cannot take
 * the connection now (it is not in the asker's view yet, or still has the
 * asker's last connection up, or is the side that connects); ask again.
 * A refusal without it is final (another version or group file). */
#define RDMA_SQ_HELLO_BUSY 1u
/* In a refusal, with RDMA_SQ_HELLO_BUSY: this member has stopped for good
 * (its group failed; rdma_sq_stop) and will take no connection again. An
 * asker that knows the flag counts it gone at once; one built before the
 * flag reads the busy flag and asks again until its own timeout. */
#define RDMA_SQ_HELLO_STOPPED 2u

struct rdma_sq_hello {
	uint16_t major;
	uint16_t minor;
	uint32_t member_id;
	uint32_t rkey;
	uint64_t addr;
	uint64_t len;
	uint64_t cfg_fp;   /* the group file's fingerprint */
	uint64_t nonce;    /* 0: the sender has no group key */
	uint32_t flags;    /* RDMA_SQ_HELLO_*; 0 from a 1.0 peer */
};

/* Encode h into buf (RDMA_SQ_WIRE_LEN bytes). */
void rdma_sq_hello_encode(const struct rdma_sq_hello *h, uint8_t *buf);

/* Decode a received record of len bytes (rdma_cm may pad it, with any
 * bytes: a 1.0 record's flags read as 0). Returns 0, or -EPROTO when it is
 * too short or lacks the magic (not a squall peer). */
int rdma_sq_hello_decode(const void *buf, size_t len, struct rdma_sq_hello *h);

/* Check the peer's version against ours: the major versions must match.
 * Returns 0, or -EPROTO with err naming both versions and `who`. */
int rdma_sq_hello_check_version(const struct rdma_sq_hello *peer,
				uint16_t my_major, uint16_t my_minor,
				const char *who, struct squall_error *err);

/* Check the peer's group file fingerprint against ours. Returns 0, or
 * -EPROTO with err naming `who`, both fingerprints and our file. */
int rdma_sq_hello_check_cfg(const struct rdma_sq_hello *peer, uint64_t my_fp,
			    const char *who, const char *my_path,
			    struct squall_error *err);

#endif /* SQUALL_RDMA_CONN_DATA_H */
