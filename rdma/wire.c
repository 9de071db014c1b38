/*
 * wire.c - encode and decode squall's control-message headers.
 *
 * The idea: every integer is read and written one byte at a time through
 * the le helpers below, so the format is the same on every host and no
 * decoder ever dereferences a misaligned or out-of-bounds pointer. The
 * decoder trusts nothing: it checks the fixed header, then walks every
 * extension once before it says yes, so a caller holding an accepted
 * struct wire_msg can iterate without further checks. Every length is
 * compared against what is left rather than added to a pointer first, so
 * no sum can wrap.
 */
#include <squall/version.h>
#include <squall/wire.h>

#include <assert.h>
#include <inttypes.h>
#include <string.h>

/* Field offsets in the fixed header. */
enum {
	OFF_MAGIC = 0,
	OFF_MAJOR = 4,
	OFF_MINOR = 6,
	OFF_TYPE = 8,
	OFF_FLAGS = 10,
	OFF_EXT_LEN = 12,
	OFF_PAYLOAD_LEN = 16,
	VERSION_END = 8, /* magic and version: fixed in every major version */
};

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_le32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* Encoded size of a known extension's value, 0 for an unknown type. */
static uint16_t known_len(uint16_t type)
{
	switch (type) {
	case WIRE_EXT_USE_ONCE:
		return WIRE_EXT_USE_ONCE_LEN;
	case WIRE_EXT_MEMBER:
		return WIRE_EXT_MEMBER_LEN;
	case WIRE_EXT_VIEW:
		return WIRE_EXT_VIEW_LEN;
	case WIRE_EXT_TARGET:
		return WIRE_EXT_TARGET_LEN;
	default:
		return 0;
	}
}

static const char *ext_name(uint16_t type)
{
	switch (type) {
	case WIRE_EXT_USE_ONCE:
		return "use_once";
	case WIRE_EXT_MEMBER:
		return "member";
	case WIRE_EXT_VIEW:
		return "view";
	case WIRE_EXT_TARGET:
		return "target";
	default:
		return "unknown";
	}
}

const char *wire_msg_type_name(uint16_t type)
{
	switch (type) {
	case WIRE_MSG_HELLO:
		return "hello";
	case WIRE_MSG_HELLO_ACK:
		return "hello_ack";
	case WIRE_MSG_REFUSE:
		return "refuse";
	case WIRE_MSG_GOODBYE:
		return "goodbye";
	case WIRE_MSG_AUTH:
		return "auth";
	case WIRE_MSG_P2P:
		return "p2p";
	case WIRE_MSG_P2P_DONE:
		return "p2p_done";
	case WIRE_MSG_RDMC_ANNOUNCE:
		return "rdmc_announce";
	case WIRE_MSG_RDMC_READY:
		return "rdmc_ready";
	case WIRE_MSG_RDMC_DONE:
		return "rdmc_done";
	case WIRE_MSG_VIEW_PROPOSE:
		return "view_propose";
	case WIRE_MSG_VIEW_ACK:
		return "view_ack";
	case WIRE_MSG_VIEW_COMMIT:
		return "view_commit";
	case WIRE_MSG_STATE_XFER:
		return "state_xfer";
	case WIRE_MSG_JOIN:
		return "join";
	case WIRE_MSG_GRANT:
		return "grant";
	case WIRE_MSG_REVOKE:
		return "revoke";
	default:
		return "unknown";
	}
}

/* Write the value of a known extension from e->u into p. */
static void put_known(uint8_t *p, const struct wire_ext *e)
{
	switch (e->type) {
	case WIRE_EXT_USE_ONCE:
		put_le64(p, e->u.use_once.addr);
		put_le32(p + 8, e->u.use_once.rkey);
		put_le64(p + 12, e->u.use_once.len);
		break;
	case WIRE_EXT_MEMBER:
		put_le32(p, e->u.member);
		break;
	case WIRE_EXT_VIEW:
		put_le32(p, e->u.view);
		break;
	case WIRE_EXT_TARGET:
		put_le32(p, e->u.target.purpose);
		put_le64(p + 4, e->u.target.addr);
		put_le32(p + 12, e->u.target.rkey);
		put_le64(p + 16, e->u.target.len);
		break;
	default:
		assert(!"put_known on an unknown type");
	}
}

/* Parse the value of a known extension (at least known_len bytes) into
 * e->u. */
static void get_known(struct wire_ext *e)
{
	const uint8_t *p = e->value;

	switch (e->type) {
	case WIRE_EXT_USE_ONCE:
		e->u.use_once.addr = get_le64(p);
		e->u.use_once.rkey = get_le32(p + 8);
		e->u.use_once.len = get_le64(p + 12);
		break;
	case WIRE_EXT_MEMBER:
		e->u.member = get_le32(p);
		break;
	case WIRE_EXT_VIEW:
		e->u.view = get_le32(p);
		break;
	case WIRE_EXT_TARGET:
		e->u.target.purpose = get_le32(p);
		e->u.target.addr = get_le64(p + 4);
		e->u.target.rkey = get_le32(p + 12);
		e->u.target.len = get_le64(p + 16);
		break;
	default:
		assert(!"get_known on an unknown type");
	}
}

/* Bytes extension e takes on the wire (its header included), or a negative
 * errno when it cannot be encoded. */
static long ext_wire_len(const struct wire_ext *e, unsigned i,
			 struct squall_error *err)
{
	uint16_t kl = known_len(e->type);

	if (kl)
		return WIRE_EXT_HDR_LEN + kl;
	if (e->len > 0 && !e->value)
		return squall_error_set(err, -EINVAL,
			"wire: extension %u (type %u) has %u bytes but no value",
			i, e->type, e->len);
	return WIRE_EXT_HDR_LEN + e->len;
}

int wire_encode(void *buf, size_t cap, uint16_t type, uint16_t flags,
		const struct wire_ext *exts, unsigned n, uint32_t payload_len,
		struct squall_error *err)
{
	uint8_t *p = buf;
	size_t ext_len = 0;

	for (unsigned i = 0; i < n; i++) {
		long l = ext_wire_len(&exts[i], i, err);

		if (l < 0)
			return (int)l;
		ext_len += (size_t)l;
		if (ext_len > WIRE_EXT_AREA_MAX)
			return squall_error_set(err, -E2BIG,
				"wire: extensions take more than %u bytes",
				WIRE_EXT_AREA_MAX);
	}
	if ((uint64_t)WIRE_HDR_LEN + ext_len + payload_len > UINT32_MAX)
		return squall_error_set(err, -EOVERFLOW,
			"wire: message of %zu + %" PRIu32 " bytes exceeds 4 GiB",
			WIRE_HDR_LEN + ext_len, payload_len);
	if (cap < WIRE_HDR_LEN + ext_len)
		return squall_error_set(err, -ENOSPC,
			"wire: header and extensions need %zu bytes, buffer has %zu",
			WIRE_HDR_LEN + ext_len, cap);

	put_le32(p + OFF_MAGIC, WIRE_MAGIC);
	put_le16(p + OFF_MAJOR, SQUALL_WIRE_MAJOR);
	put_le16(p + OFF_MINOR, SQUALL_WIRE_MINOR);
	put_le16(p + OFF_TYPE, type);
	put_le16(p + OFF_FLAGS, flags);
	put_le32(p + OFF_EXT_LEN, (uint32_t)ext_len);
	put_le32(p + OFF_PAYLOAD_LEN, payload_len);
	p += WIRE_HDR_LEN;
	for (unsigned i = 0; i < n; i++) {
		const struct wire_ext *e = &exts[i];
		uint16_t kl = known_len(e->type);

		put_le16(p, e->type);
		put_le16(p + 2, kl ? kl : e->len);
		p += WIRE_EXT_HDR_LEN;
		if (kl) {
			put_known(p, e);
			p += kl;
		} else if (e->len) {
			memcpy(p, e->value, e->len);
			p += e->len;
		}
	}
	assert((size_t)(p - (uint8_t *)buf) == WIRE_HDR_LEN + ext_len);
	return (int)(WIRE_HDR_LEN + ext_len);
}

/* Read the extension at *pos of the area ext[0..ext_len) into *e (value not
 * yet parsed) and advance *pos. Returns 1, 0 at the end, or a negative
 * errno when the area is malformed. */
static int ext_read(const uint8_t *ext, uint32_t ext_len, uint32_t *pos,
		    struct wire_ext *e, struct squall_error *err)
{
	uint32_t left;
	uint16_t kl;

	if (*pos >= ext_len)
		return 0;
	left = ext_len - *pos;
	if (left < WIRE_EXT_HDR_LEN)
		return squall_error_set(err, -EILSEQ,
			"wire: extension header at offset %" PRIu32
			" cut short: %" PRIu32 " of %u bytes",
			*pos, left, WIRE_EXT_HDR_LEN);
	e->type = get_le16(ext + *pos);
	e->len = get_le16(ext + *pos + 2);
	left -= WIRE_EXT_HDR_LEN;
	if (e->len > left)
		return squall_error_set(err, -EILSEQ,
			"wire: extension type %u at offset %" PRIu32
			" claims %u bytes, %" PRIu32 " left in the area",
			e->type, *pos, e->len, left);
	kl = known_len(e->type);
	if (kl && e->len < kl)
		return squall_error_set(err, -EINVAL,
			"wire: %s extension at offset %" PRIu32
			" has %u bytes, needs %u",
			ext_name(e->type), *pos, e->len, kl);
	e->value = ext + *pos + WIRE_EXT_HDR_LEN;
	*pos += WIRE_EXT_HDR_LEN + e->len;
	return 1;
}

int wire_decode(const void *buf, size_t len, struct wire_msg *out,
		struct squall_error *err)
{
	const uint8_t *p = buf;
	uint64_t total;
	uint32_t pos = 0;
	struct wire_ext e;
	int rc;

	if (len < VERSION_END)
		return squall_error_set(err, -ENODATA,
			"wire: truncated header: %zu of %u bytes", len,
			WIRE_HDR_LEN);
	if (get_le32(p + OFF_MAGIC) != WIRE_MAGIC)
		return squall_error_set(err, -EBADMSG,
			"wire: bad magic 0x%08" PRIx32 " (expected 0x%08x): "
			"not a squall message",
			get_le32(p + OFF_MAGIC), WIRE_MAGIC);
	out->major = get_le16(p + OFF_MAJOR);
	out->minor = get_le16(p + OFF_MINOR);
	if (out->major != SQUALL_WIRE_MAJOR)
		return squall_error_set(err, -EPROTONOSUPPORT,
			"peer speaks wire version %u.%u, this member speaks %u.%u",
			out->major, out->minor, SQUALL_WIRE_MAJOR,
			SQUALL_WIRE_MINOR);
	if (len < WIRE_HDR_LEN)
		return squall_error_set(err, -ENODATA,
			"wire: truncated header: %zu of %u bytes", len,
			WIRE_HDR_LEN);
	out->type = get_le16(p + OFF_TYPE);
	out->flags = get_le16(p + OFF_FLAGS);
	out->ext_len = get_le32(p + OFF_EXT_LEN);
	out->payload_len = get_le32(p + OFF_PAYLOAD_LEN);
	if (out->ext_len > WIRE_EXT_AREA_MAX)
		return squall_error_set(err, -E2BIG,
			"wire: extension area of %" PRIu32 " bytes, at most %u",
			out->ext_len, WIRE_EXT_AREA_MAX);
	total = (uint64_t)WIRE_HDR_LEN + out->ext_len + out->payload_len;
	if (total > UINT32_MAX)
		return squall_error_set(err, -EOVERFLOW,
			"wire: lengths overflow: %u + %" PRIu32 " + %" PRIu32
			" bytes exceeds 4 GiB",
			WIRE_HDR_LEN, out->ext_len, out->payload_len);
	if (total > len)
		return squall_error_set(err, -EMSGSIZE,
			"wire: %s message claims %" PRIu64 " bytes (%u + %" PRIu32
			" + %" PRIu32 "), only %zu received",
			wire_msg_type_name(out->type), total, WIRE_HDR_LEN,
			out->ext_len, out->payload_len, len);
	out->ext = p + WIRE_HDR_LEN;
	out->payload = out->ext + out->ext_len;
	out->len = (size_t)total;
	while ((rc = ext_read(out->ext, out->ext_len, &pos, &e, err)) > 0)
		;
	return rc;
}

int wire_ext_next(const struct wire_msg *m, uint32_t *pos,
		  struct wire_ext *ext)
{
	int rc;

	while ((rc = ext_read(m->ext, m->ext_len, pos, ext, NULL)) > 0) {
		if (known_len(ext->type)) {
			get_known(ext);
			return 1;
		}
	}
	return rc;
}

int wire_ext_find(const struct wire_msg *m, uint16_t type,
		  struct wire_ext *ext)
{
	uint32_t pos = 0;

	while (ext_read(m->ext, m->ext_len, &pos, ext, NULL) > 0) {
		if (ext->type == type) {
			if (known_len(type))
				get_known(ext);
			return 0;
		}
	}
	return -ENOENT;
}
