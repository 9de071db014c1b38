/*
 * seal.c - the check of an SST segment, sealing and taking (see seal.h).
 *
 * The check is a keyed 64-bit hash over the sequence and the segment's
 * words. Each step maps the running value through a bijection of the next
 * word (multiply by an odd constant, rotate, multiply), so two inputs that
 * differ in one word never collide and any other difference collides with
 * odds near 2^-64. It is not a MAC: a peer that means harm can seal what it
 * likes (keeping such peers out is the connection's authentication); it
 * proves a segment whole, which is all a reader needs from it.
 */
#include "sst/seal.h"

#define K_SEQ 0x9e3779b97f4a7c15ull
#define K_WORD 0xc2b2ae3d27d4eb4full
#define K_STEP 0x165667b19e3779f9ull

static inline uint64_t rotl(uint64_t v, unsigned r)
{
	return v << r | v >> (64 - r);
}

static inline uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

uint64_t sst_seal_key(uint64_t seed, uint64_t fingerprint, uint32_t rank,
		      uint32_t seg)
{
	uint64_t pos = (uint64_t)rank << 32 | seg;

	return fmix64(seed ^ fmix64(fingerprint ^ fmix64(pos + K_SEQ)));
}

uint64_t sst_seal_check(uint64_t key, uint64_t seq, const uint64_t *w,
			size_t n)
{
	uint64_t h = key ^ seq * K_SEQ;

	h = rotl(h, 31) * K_STEP;
	for (size_t i = 0; i < n; i++) {
		h ^= w[i] * K_WORD;
		h = rotl(h, 29) * K_STEP;
	}
	return fmix64(h ^ n);
}

void sst_seal(const struct sst_seg *s, uint64_t key, uint64_t seq,
	      const uint8_t *src_row, uint8_t *dst_row)
{
	const uint64_t *src = (const uint64_t *)(const void *)(src_row + s->lo);
	uint64_t *dst = (uint64_t *)(void *)(dst_row + s->lo);
	size_t n = (s->trailer - s->lo) / 8;

	for (size_t i = 0; i < n; i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	dst[n] = seq;
	dst[n + 1] = sst_seal_check(key, seq, dst, n);
}

enum sst_take sst_seal_take(const struct sst_seg *s, uint64_t key,
			    const uint8_t *landing_row, uint8_t *valid_row,
			    uint64_t *scratch)
{
	const uint64_t *land =
		(const uint64_t *)(const void *)(landing_row + s->lo);
	uint64_t *valid = (uint64_t *)(void *)(valid_row + s->lo);
	size_t n = (s->trailer - s->lo) / 8;
	uint64_t have = __atomic_load_n(&valid[n], __ATOMIC_RELAXED);
	uint64_t seq;

	/* Acquire: the words copied below are read after this one. */
	if (__atomic_load_n(&land[n], __ATOMIC_ACQUIRE) == have)
		return SST_TAKE_SAME;
	/* Judge a copy, never the memory a write may still be placing. */
	for (size_t i = 0; i < n + 2; i++)
		scratch[i] = __atomic_load_n(&land[i], __ATOMIC_RELAXED);
	seq = scratch[n];
	if (scratch[n + 1] != sst_seal_check(key, seq, scratch, n))
		return SST_TAKE_TORN;
	if (seq <= have)
		return SST_TAKE_STALE;
	for (size_t i = 0; i < n; i++)
		__atomic_store_n(&valid[i], scratch[i], __ATOMIC_RELAXED);
	__atomic_store_n(&valid[n + 1], scratch[n + 1], __ATOMIC_RELAXED);
	/* Release: whoever sees the new sequence sees the words too. */
	__atomic_store_n(&valid[n], seq, __ATOMIC_RELEASE);
	return SST_TAKE_NEW;
}
