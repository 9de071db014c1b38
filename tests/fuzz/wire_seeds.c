/*
 * wire_seeds.c - write the seed corpus of fuzz_wire into a directory.
 *
 * usage: wire_seeds DIR   (the committed corpus is tests/fuzz/corpus/wire)
 * Seeds cover each message family, each known extension, unknown ones, and
 * each way decoding can fail, so the fuzzer starts next to every branch.
 */
#include <squall/version.h>
#include <squall/wire.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *dir;
static unsigned seq;

static void save(const char *name, const uint8_t *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%02u-%s", dir, ++seq, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Encode type + exts + a payload of plen bytes into buf; returns length. */
static size_t msg(uint8_t *buf, uint16_t type, const struct wire_ext *exts,
		  unsigned n, uint32_t plen)
{
	int len = wire_encode(buf, 4096, type, 0, exts, n, plen, NULL);

	if (len < 0) {
		fprintf(stderr, "wire_encode: %d\n", len);
		exit(1);
	}
	for (uint32_t i = 0; i < plen; i++)
		buf[len + i] = (uint8_t)(i * 7 + 1);
	return (size_t)len + plen;
}

int main(int argc, char **argv)
{
	static uint8_t buf[8192];
	static const uint8_t raw[32] = "unknown extension value bytes";
	struct wire_ext member = { .type = WIRE_EXT_MEMBER, .u.member = 3 };
	struct wire_ext view = { .type = WIRE_EXT_VIEW, .u.view = 17 };
	struct wire_ext once = { .type = WIRE_EXT_USE_ONCE,
		.u.use_once = { 0x7f12345678a0ull, 0x1234abcd, 1u << 20 } };
	struct wire_ext tgt = { .type = WIRE_EXT_TARGET,
		.u.target = { WIRE_TARGET_SST_ROW, 0x7f0000400000ull, 77, 4096 } };
	struct wire_ext unk1 = { .type = 0x1234, .len = 7, .value = raw };
	struct wire_ext unk2 = { .type = 0, .len = 0 };
	struct wire_ext unk3 = { .type = 0xffff, .len = 32, .value = raw };
	size_t len, len2;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];

	struct wire_ext hello[] = { member, view };
	save("hello", buf, msg(buf, WIRE_MSG_HELLO, hello, 2, 0));
	save("hello-ack", buf, msg(buf, WIRE_MSG_HELLO_ACK, NULL, 0, 0));
	struct wire_ext p2p[] = { member, once };
	save("p2p-use-once", buf, msg(buf, WIRE_MSG_P2P, p2p, 2, 64));
	save("p2p-done", buf, msg(buf, WIRE_MSG_P2P_DONE, &member, 1, 0));
	save("rdmc-announce", buf, msg(buf, WIRE_MSG_RDMC_ANNOUNCE, &view, 1, 16));
	save("rdmc-ready", buf, msg(buf, WIRE_MSG_RDMC_READY, &member, 1, 8));
	struct wire_ext grant[] = { tgt, tgt, tgt };
	grant[1].u.target.purpose = WIRE_TARGET_SMC_RING;
	grant[2].u.target.purpose = 99;
	save("grant-targets", buf, msg(buf, WIRE_MSG_GRANT, grant, 3, 0));
	struct wire_ext mixed[] = { unk1, member, unk2, once, unk3, view };
	save("unknown-extensions", buf, msg(buf, WIRE_MSG_P2P, mixed, 6, 5));
	struct wire_ext zeros[] = { unk2, unk2, unk2, unk2, unk2, unk2 };
	save("empty-extensions", buf, msg(buf, 200, zeros, 6, 0));
	struct wire_ext commit[] = { member, view, unk1 };
	save("view-commit-payload", buf,
	     msg(buf, WIRE_MSG_VIEW_COMMIT, commit, 3, 300));

	len = msg(buf, WIRE_MSG_HELLO, hello, 2, 4);
	put16(buf + 6, SQUALL_WIRE_MINOR + 1);
	put16(buf + 10, 0xa5a5);
	save("newer-minor", buf, len);
	put16(buf + 4, SQUALL_WIRE_MAJOR + 1);
	save("other-major", buf, len);
	save("other-major-8-bytes", buf, 8);

	len = msg(buf, WIRE_MSG_HELLO, hello, 2, 0);
	buf[0] ^= 0xff;
	save("bad-magic", buf, len);

	len = msg(buf, WIRE_MSG_P2P, p2p, 2, 10);
	save("truncated-header", buf, 13);
	save("truncated-payload", buf, len - 3);
	put32(buf + 16, 0xffffffff);
	save("payload-len-overflow", buf, len);

	len = msg(buf, WIRE_MSG_P2P, p2p, 2, 0);
	put32(buf + 12, 0x7fffffff);
	save("ext-len-oversized", buf, len);

	len = msg(buf, WIRE_MSG_P2P, mixed, 6, 0);
	put16(buf + WIRE_HDR_LEN + 2, 0x8000);
	save("extension-overruns-area", buf, len);

	struct wire_ext longer = { .type = 0x4000, .len = 26, .value = raw };
	len = msg(buf, WIRE_MSG_P2P, &longer, 1, 0);
	put16(buf + WIRE_HDR_LEN, WIRE_EXT_USE_ONCE);
	save("use-once-longer", buf, len);
	longer.len = WIRE_EXT_USE_ONCE_LEN - 1;
	len = msg(buf, WIRE_MSG_P2P, &longer, 1, 0);
	put16(buf + WIRE_HDR_LEN, WIRE_EXT_USE_ONCE);
	save("use-once-short", buf, len);

	len = msg(buf, WIRE_MSG_P2P, p2p, 2, 12);
	len2 = msg(buf + len, WIRE_MSG_GOODBYE, NULL, 0, 0);
	save("two-messages", buf, len + len2);
	return 0;
}
