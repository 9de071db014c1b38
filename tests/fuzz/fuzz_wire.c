/*
 * fuzz_wire.c - libFuzzer target for the control-message decoder.
 *
 * Any input either is refused with a documented errno and an error text, or
 * is accepted, in which case every pointer the decoder hands out lies inside
 * the input, the extension iterator walks the area to its end, and encoding
 * what was decoded and decoding that again gives the same message. Any
 * broken promise aborts, so the fuzzer records the input. The same function
 * runs under tests/fuzz/replay.c over the committed corpus with any
 * compiler.
 */
#include <squall/wire.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MUST(cond) \
	do { \
		if (!(cond)) \
			abort(); \
	} while (0)

/* Every known extension is at least this long on the wire. */
#define MAX_KNOWN (WIRE_EXT_AREA_MAX / (WIRE_EXT_HDR_LEN + 4))

static int documented(int rc)
{
	switch (rc) {
	case -ENODATA:
	case -EBADMSG:
	case -EPROTONOSUPPORT:
	case -E2BIG:
	case -EOVERFLOW:
	case -EMSGSIZE:
	case -EILSEQ:
	case -EINVAL:
		return 1;
	default:
		return 0;
	}
}

static int inside(const uint8_t *p, size_t n, const uint8_t *lo, size_t len)
{
	return p >= lo && n <= len && (size_t)(p - lo) <= len - n;
}

static int same_ext(const struct wire_ext *a, const struct wire_ext *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case WIRE_EXT_USE_ONCE:
		return a->u.use_once.addr == b->u.use_once.addr &&
		       a->u.use_once.rkey == b->u.use_once.rkey &&
		       a->u.use_once.len == b->u.use_once.len;
	case WIRE_EXT_MEMBER:
		return a->u.member == b->u.member;
	case WIRE_EXT_VIEW:
		return a->u.view == b->u.view;
	case WIRE_EXT_TARGET:
		return a->u.target.purpose == b->u.target.purpose &&
		       a->u.target.addr == b->u.target.addr &&
		       a->u.target.rkey == b->u.target.rkey &&
		       a->u.target.len == b->u.target.len;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct wire_ext known[MAX_KNOWN];
	struct squall_error err;
	struct wire_msg m, m2;
	struct wire_ext e;
	uint32_t pos = 0;
	unsigned n = 0;
	uint8_t *copy;
	int rc, len;

	squall_error_clear(&err);
	rc = wire_decode(data, size, &m, &err);
	if (rc < 0) {
		MUST(documented(rc));
		MUST(err.code == rc);
		MUST(err.msg[0] != '\0');
		MUST(strlen(err.msg) < sizeof(err.msg));
		return 0;
	}
	MUST(rc == 0);
	MUST(m.len >= WIRE_HDR_LEN && m.len <= size);
	MUST(m.len == WIRE_HDR_LEN + (size_t)m.ext_len + m.payload_len);
	MUST(m.ext == data + WIRE_HDR_LEN);
	MUST(inside(m.payload, m.payload_len, data, size));

	while ((rc = wire_ext_next(&m, &pos, &e)) > 0) {
		MUST(inside(e.value, e.len, m.ext, m.ext_len));
		MUST(n < MAX_KNOWN);
		known[n++] = e;
	}
	MUST(rc == 0);
	MUST(pos == m.ext_len);

	/* Encode what was understood, append the payload, decode again. */
	copy = malloc(WIRE_HDR_LEN + (size_t)m.ext_len + m.payload_len);
	MUST(copy);
	len = wire_encode(copy, WIRE_HDR_LEN + (size_t)m.ext_len, m.type,
			  m.flags, known, n, m.payload_len, NULL);
	MUST(len >= (int)WIRE_HDR_LEN);
	if (m.payload_len)
		memcpy(copy + len, m.payload, m.payload_len);
	MUST(wire_decode(copy, (size_t)len + m.payload_len, &m2, NULL) == 0);
	MUST(m2.type == m.type && m2.flags == m.flags);
	MUST(m2.payload_len == m.payload_len);
	MUST(m.payload_len == 0 ||
	     memcmp(m2.payload, m.payload, m.payload_len) == 0);
	pos = 0;
	for (unsigned i = 0; i < n; i++) {
		MUST(wire_ext_next(&m2, &pos, &e) == 1);
		MUST(same_ext(&e, &known[i]));
	}
	MUST(wire_ext_next(&m2, &pos, &e) == 0);
	free(copy);
	return 0;
}
