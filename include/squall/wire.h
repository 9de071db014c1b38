/*
 * wire.h - squall's versioned control-message codec.
 *
 * Every control message between members is a fixed 20-byte header, then an
 * extension area of TLVs, then the payload:
 *
 *   offset size  field
 *   0      4     magic        WIRE_MAGIC ("SQWL" as bytes)
 *   4      2     major        wire major version (SQUALL_WIRE_MAJOR)
 *   6      2     minor        wire minor version (SQUALL_WIRE_MINOR)
 *   8      2     type         enum wire_msg_type
 *   10     2     flags        per type; unknown bits are kept, not refused
 *   12     4     ext_len      bytes of the extension area that follows
 *   16     4     payload_len  bytes of payload after the extension area
 *   20     ...   extensions   each: type u16, length u16, length bytes
 *   20+ext ...   payload
 *
 * All integers are little-endian and fixed width on every host. The first
 * eight bytes (magic and version) keep their place in every future major
 * version, so a member can always name the version a peer speaks. A peer
 * with another major version is refused; another minor version is accepted
 * (minor versions only add message types, flags and extensions). Unknown
 * extension types are skipped; a known extension longer than this member
 * knows is accepted and its tail ignored (a newer minor may append fields).
 *
 * The encoder writes only header + extensions: the payload usually travels
 * as a second scatter/gather element straight from the sender's region, so
 * the codec never copies it.
 */
#ifndef SQUALL_WIRE_H
#define SQUALL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <squall/error.h>

#define WIRE_MAGIC 0x4c575153u /* bytes 'S' 'Q' 'W' 'L' on the wire */
#define WIRE_HDR_LEN 20u       /* the fixed header */
#define WIRE_EXT_HDR_LEN 4u    /* an extension's type and length */
#define WIRE_EXT_AREA_MAX 16384u /* largest extension area accepted */

/* Message types. Numbers are part of the protocol: never reuse one, add new
 * types at the end of their block. 0 is never sent. */
enum wire_msg_type {
	WIRE_MSG_INVALID = 0,

	/* connection set-up (1..15) */
	WIRE_MSG_HELLO = 1,        /* first message: version, member id, view */
	WIRE_MSG_HELLO_ACK = 2,    /* hello accepted */
	WIRE_MSG_REFUSE = 3,       /* connection refused; payload = reason */
	WIRE_MSG_GOODBYE = 4,      /* orderly shutdown of a connection */
	WIRE_MSG_AUTH = 5,         /* proof of the group key (rdma/auth.h):
				      payload = the MAC; may carry TARGET */

	/* point to point (16..31) */
	WIRE_MSG_P2P = 16,         /* a message; large ones carry USE_ONCE */
	WIRE_MSG_P2P_DONE = 17,    /* use-once region read (SEND_WITH_INV) */

	/* RDMC (32..47) */
	WIRE_MSG_RDMC_ANNOUNCE = 32, /* a large message: size, blocks, sender */
	WIRE_MSG_RDMC_READY = 33,    /* receiver ready for a block */
	WIRE_MSG_RDMC_DONE = 34,     /* receiver holds every block */

	/* membership (48..63) */
	WIRE_MSG_VIEW_PROPOSE = 48,  /* leader proposes a new view */
	WIRE_MSG_VIEW_ACK = 49,      /* member acknowledges a proposal */
	WIRE_MSG_VIEW_COMMIT = 50,   /* leader commits the view */
	WIRE_MSG_STATE_XFER = 51,    /* state transfer to a joiner */
	WIRE_MSG_JOIN = 52,          /* a process asks to join */

	/* remote-access grants (64..79) */
	WIRE_MSG_GRANT = 64,         /* carries TARGET extensions */
	WIRE_MSG_REVOKE = 65,        /* targets no longer valid */
};

/* Extension types. Same rule as message types: numbers are protocol. */
enum wire_ext_type {
	WIRE_EXT_USE_ONCE = 1, /* struct wire_use_once: read once, then gone */
	WIRE_EXT_MEMBER = 2,   /* u32 member id of the sender */
	WIRE_EXT_VIEW = 3,     /* u32 view id the message belongs to */
	WIRE_EXT_TARGET = 4,   /* struct wire_target: a per-purpose grant */
};

/* Sizes of the known extensions' values, as encoded. */
#define WIRE_EXT_USE_ONCE_LEN 20u /* u64 addr, u32 rkey, u64 len */
#define WIRE_EXT_MEMBER_LEN 4u
#define WIRE_EXT_VIEW_LEN 4u
#define WIRE_EXT_TARGET_LEN 24u   /* u32 purpose, u64 addr, u32 rkey, u64 len */

/* A use-once region: the receiver may RDMA-read [addr, addr + len) with
 * rkey exactly once; its SEND_WITH_INV answer kills the key. When the
 * P2P message has WIRE_P2P_REGISTRATION set, the key is a registration
 * (the sender's device has no type-2 windows): the receiver answers with a
 * plain SEND and the sender deregisters it. */
#define WIRE_P2P_REGISTRATION 0x1u /* flag of WIRE_MSG_P2P */
/* A P2P_DONE answer carries the USE_ONCE extension of the region it
 * answers (so the owner finds it). With WIRE_P2P_DONE_REFUSED set the
 * region was not read: the payload is a u32 errno value (positive) and a
 * line of text saying why. */
#define WIRE_P2P_DONE_REFUSED 0x1u /* flag of WIRE_MSG_P2P_DONE */
struct wire_use_once {
	uint64_t addr;
	uint32_t rkey;
	uint64_t len;
};

/* What a remote-access target is for. */
enum wire_target_purpose {
	WIRE_TARGET_SST_ROW = 1,     /* the peer's row in my SST */
	WIRE_TARGET_SMC_RING = 2,    /* the peer's SMC ring in my region */
	WIRE_TARGET_RDMC_BUFFER = 3, /* the buffer of one RDMC transfer */
	WIRE_TARGET_REGION = 4,      /* the whole region */
};

/* A remote-access grant: the peer may write [addr, addr + len) with rkey
 * for `purpose` (enum wire_target_purpose; unknown values are kept). */
struct wire_target {
	uint32_t purpose;
	uint64_t addr;
	uint32_t rkey;
	uint64_t len;
};

/* One extension. The decoder sets type, len and value (pointing into the
 * message) and, for known types, the parsed field of u. The encoder reads u
 * for known types and value/len for any other type. */
struct wire_ext {
	uint16_t type;
	uint16_t len;          /* value bytes */
	const uint8_t *value;  /* len bytes */
	union {
		struct wire_use_once use_once;
		uint32_t member;
		uint32_t view;
		struct wire_target target;
	} u;
};

/* A decoded message. Pointers point into the decoded buffer. */
struct wire_msg {
	uint16_t major;
	uint16_t minor;        /* the peer's minor version */
	uint16_t type;         /* enum wire_msg_type, maybe one unknown here */
	uint16_t flags;
	uint32_t ext_len;
	uint32_t payload_len;
	const uint8_t *ext;     /* ext_len bytes */
	const uint8_t *payload; /* payload_len bytes */
	size_t len;            /* bytes of the whole message */
};

/* Encode a header of `type` and `flags` (this member's wire version) and the
 * n extensions exts[] into buf (cap bytes); the header records payload_len,
 * the bytes the caller places (or gathers) right after. Returns the bytes
 * written (header + extensions), -ENOSPC when cap is too small, -EINVAL for
 * an extension that cannot be encoded (value NULL with len > 0) and -E2BIG
 * when the extensions exceed WIRE_EXT_AREA_MAX; err (may be NULL) says which. */
int wire_encode(void *buf, size_t cap, uint16_t type, uint16_t flags,
		const struct wire_ext *exts, unsigned n, uint32_t payload_len,
		struct squall_error *err);

/* Decode the message at the start of buf (len bytes) into *out, checking
 * the header and the structure of every extension. Bytes after the message
 * are left alone (out->len says where the next one starts). Returns 0 or:
 *   -ENODATA          len is shorter than the fixed header
 *   -EBADMSG          bad magic: not a squall message
 *   -EPROTONOSUPPORT  another major version ("peer speaks wire version 2.0,
 *                     this member speaks 1.0")
 *   -E2BIG            ext_len above WIRE_EXT_AREA_MAX
 *   -EOVERFLOW        header + ext_len + payload_len exceeds 2^32 - 1
 *   -EMSGSIZE         the lengths claim more bytes than len (cut short)
 *   -EILSEQ           an extension's header or value runs past the area
 *   -EINVAL           a known extension shorter than its fields
 * with err (may be NULL) naming what was wrong. */
int wire_decode(const void *buf, size_t len, struct wire_msg *out,
		struct squall_error *err);

/* Iterate over the known extensions of a decoded message, skipping unknown
 * types. Start with *pos = 0. Returns 1 with *ext filled, 0 at the end, or
 * a negative errno (as wire_decode) for a message wire_decode did not
 * accept. */
int wire_ext_next(const struct wire_msg *m, uint32_t *pos,
		  struct wire_ext *ext);

/* The first extension of `type` (known or not) in m. Returns 0 with *ext
 * filled or -ENOENT. */
int wire_ext_find(const struct wire_msg *m, uint16_t type,
		  struct wire_ext *ext);

/* Name of a message type ("hello", "rdmc_announce", ...) or "unknown". */
const char *wire_msg_type_name(uint16_t type);

#endif /* SQUALL_WIRE_H */
