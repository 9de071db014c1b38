/*
 * seal.h - sealing a segment of an SST row and taking it back whole
 * (sst/seal.c): the rule that makes a torn read impossible to accept.
 *
 * A writer seals a segment into memory that nothing changes until the NIC
 * has sent it: a copy of the segment's words, a sequence number and a
 * check over both. A reader copies the landing bytes, recomputes the check
 * over the copy and takes the copy only when the check holds and its
 * sequence is newer than the last one taken. No placement order is
 * assumed: a write placed byte by byte, in pieces, or mixed with the next
 * write fails its check until one whole segment stands in memory.
 *
 * Pure functions over bytes, so the unit suite drives them through
 * simulated placements (tests/unit/test_sst_seal.c).
 */
#ifndef SQUALL_SST_SEAL_H
#define SQUALL_SST_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "sst/layout.h"

/* What a look at a peer's segment found. */
enum sst_take {
	SST_TAKE_SAME,  /* its sequence is the one already taken */
	SST_TAKE_NEW,   /* a whole, newer segment: taken */
	SST_TAKE_TORN,  /* it changed but fails its check: not taken */
	SST_TAKE_STALE, /* whole, but not newer than the one taken: a
			   writer that went back; not taken */
};

/* The key of segment seg of member rank's row in a table: binds the
 * table's seed, the layout fingerprint (0 for the header, whose format is
 * fixed, so that a foreign layout is seen and named) and the position, so
 * that a segment validates only where and for whom it was sealed. */
uint64_t sst_seal_key(uint64_t seed, uint64_t fingerprint, uint32_t rank,
		      uint32_t seg);

/* The check over a sequence number and n words. */
uint64_t sst_seal_check(uint64_t key, uint64_t seq, const uint64_t *w,
			size_t n);

/* Seal segment s: copy its words from src_row (each word loaded whole: a
 * thread may be storing to the row) into dst_row at the same offsets and
 * write the trailer {seq, check} after them. */
void sst_seal(const struct sst_seg *s, uint64_t key, uint64_t seq,
	      const uint8_t *src_row, uint8_t *dst_row);

/* Look at segment s in landing_row (memory a NIC may be writing) and,
 * when it is whole and newer, copy it into valid_row (whose trailer seq
 * says what was taken; 0: nothing yet), each word stored whole. scratch
 * holds at least (sst_seg_end(s) - s->lo) / 8 words. */
enum sst_take sst_seal_take(const struct sst_seg *s, uint64_t key,
			    const uint8_t *landing_row, uint8_t *valid_row,
			    uint64_t *scratch);

/* The sequence of segment s taken into valid_row (0: none yet). */
static inline uint64_t sst_seal_taken_seq(const struct sst_seg *s,
					  const uint8_t *valid_row)
{
	return __atomic_load_n((const uint64_t *)(const void *)(valid_row +
				s->trailer), __ATOMIC_ACQUIRE);
}

#endif /* SQUALL_SST_SEAL_H */
