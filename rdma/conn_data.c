/*
 * conn_data.c - encode, decode and check the connection private data.
 *
 * The record is written byte by byte in little-endian order so that members
 * on any host read the same thing; decoding never trusts the length rdma_cm
 * reports beyond the fixed record, because the CM pads private data.
 */
#include <errno.h>

#include "rdma/conn_data.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
	return get16(p) | ((uint32_t)get16(p + 2) << 16);
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | ((uint64_t)get32(p + 4) << 32);
}

/* Layout: magic u32 | major u16 | minor u16 | member u32 | rkey u32 |
 *         addr u64 | len u64 | cfg_fp u64 | nonce u64 | flags u32 (1.1) */
void rdma_sq_hello_encode(const struct rdma_sq_hello *h, uint8_t *buf)
{
	put32(buf, RDMA_SQ_WIRE_MAGIC);
	put16(buf + 4, h->major);
	put16(buf + 6, h->minor);
	put32(buf + 8, h->member_id);
	put32(buf + 12, h->rkey);
	put64(buf + 16, h->addr);
	put64(buf + 24, h->len);
	put64(buf + 32, h->cfg_fp);
	put64(buf + 40, h->nonce);
	put32(buf + 48, h->flags);
}

int rdma_sq_hello_decode(const void *buf, size_t len, struct rdma_sq_hello *h)
{
	const uint8_t *p = buf;

	if (!buf || len < RDMA_SQ_WIRE_LEN_1_0 || get32(p) != RDMA_SQ_WIRE_MAGIC)
		return -EPROTO;
	h->major = get16(p + 4);
	h->minor = get16(p + 6);
	h->member_id = get32(p + 8);
	h->rkey = get32(p + 12);
	h->addr = get64(p + 16);
	h->len = get64(p + 24);
	h->cfg_fp = get64(p + 32);
	h->nonce = get64(p + 40);
	/* What follows a 1.0 record is the CM's padding. */
	h->flags = (h->major > 1 || h->minor >= 1) && len >= RDMA_SQ_WIRE_LEN ?
		   get32(p + 48) : 0;
	return 0;
}

int rdma_sq_hello_check_version(const struct rdma_sq_hello *peer,
				uint16_t my_major, uint16_t my_minor,
				const char *who, struct squall_error *err)
{
	if (peer->major == my_major)
		return 0;
	return squall_error_set(err, -EPROTO,
		"%s speaks wire version %u.%u, this member speaks %u.%u: "
		"major versions differ, connection refused",
		who, peer->major, peer->minor, my_major, my_minor);
}

int rdma_sq_hello_check_cfg(const struct rdma_sq_hello *peer, uint64_t my_fp,
			    const char *who, const char *my_path,
			    struct squall_error *err)
{
	if (peer->cfg_fp == my_fp)
		return 0;
	return squall_error_set(err, -EPROTO,
		"%s's group file differs from this member's %s (fingerprint "
		"%016llx vs %016llx): every member must load the same group "
		"settings and member list, connection refused", who, my_path,
		(unsigned long long)peer->cfg_fp, (unsigned long long)my_fp);
}
