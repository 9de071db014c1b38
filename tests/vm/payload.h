/*
 * payload.h - the checked payloads of the group test members
 * (group_member.c, view_member.c): bytes drawn from a seed (the sender and
 * the message's number), with a checksum over all of them, so a receiver
 * can tell a damaged or misplaced message from a good one.
 */
#ifndef SQUALL_TESTS_VM_PAYLOAD_H
#define SQUALL_TESTS_VM_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* With write, fill len bytes at p from seed; either way return the
 * checksum of the bytes at p. Eight bytes at a time for speed; the
 * checksum covers every byte. */
static inline uint64_t payload_fill_sum(uint8_t *p, size_t len, uint64_t seed,
					bool write)
{
	uint64_t s = mix(seed), h = 0xcbf29ce484222325ull;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		s = mix(s + i);
		if (write)
			memcpy(p + i, &s, 8);
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
	}
	for (; i < len; i++) {
		if (write)
			p[i] = (uint8_t)(s >> (8 * (i % 8)));
		h = (h ^ p[i]) * 0x100000001b3ull;
	}
	return h;
}

#endif /* SQUALL_TESTS_VM_PAYLOAD_H */
