/*
 * smc/ring.c - one sender's ring: reserving records and planning the RDMA
 * writes that carry runs of them (sender), parsing completed runs and
 * tracking released slots (receiver).
 *
 * The idea: both sides walk the same sequence of 64-bit virtual offsets
 * with the same placement rule (smc_ring_place), so the receiver finds
 * every record where the sender put it without any offset on the wire. The
 * sender keeps, per slot, where its record lies and what it points at until
 * every receiver has released it; the receiver learns of records only from
 * write completions (see ring.h for why that is the stamp).
 */
#include <errno.h>

#include "smc/ring.h"

int smc_ring_geom_init(struct smc_ring_geom *g, uint32_t window,
		       uint32_t max_payload)
{
	if (window == 0 || window > (1u << 20))
		return -EINVAL;
	if (max_payload == 0 || max_payload > (1u << 30))
		return -EINVAL;
	g->window = window;
	g->max_payload = max_payload;
	g->stride = smc_rec_bytes(max_payload);
	/* One stride more than window full-size records: a lap's unusable
	 * tail is shorter than a stride, so a full window always fits. */
	g->cap = ((uint64_t)window + 1) * g->stride;
	return 0;
}

void smc_ring_tx_init(struct smc_ring_tx *tx, const struct smc_ring_geom *g,
		      uint8_t *hdr_area, struct smc_tx_slot *slots,
		      uint64_t seal)
{
	memset(tx, 0, sizeof(*tx));
	tx->g = *g;
	tx->seal = seal;
	tx->hdr_area = hdr_area;
	tx->slots = slots;
	memset(hdr_area, 0, (size_t)g->window * SMC_HDR_CELL);
	memset(slots, 0, (size_t)g->window * sizeof(*slots));
}

/* Virtual offset of the oldest record some receiver still holds, or where
 * the next record would go when none is held. */
static uint64_t tx_tail_v(const struct smc_ring_tx *tx)
{
	if (tx->released_rec == tx->next_rec)
		return tx->head_v;
	return tx->slots[tx->released_rec % tx->g.window].voff;
}

static uint8_t *tx_hdr_cell(struct smc_ring_tx *tx, uint64_t rec)
{
	return tx->hdr_area + (rec % tx->g.window) * SMC_HDR_CELL;
}

int64_t smc_ring_tx_reserve(struct smc_ring_tx *tx, const void *payload,
			    uint32_t len, uint16_t nrounds, uint16_t flags,
			    void *cookie)
{
	uint64_t start, end, rec;
	struct smc_tx_slot *s;

	if (len > tx->g.max_payload)
		return -EMSGSIZE;
	assert(nrounds >= 1);
	assert((flags & SMC_REC_NULL) ? len == 0 && !payload : nrounds == 1);
	assert(!(flags & ~(SMC_REC_NULL | SMC_REC_KIND_MASK)));
	assert(len == 0 || payload);
	if (smc_ring_tx_free_slots(tx) == 0)
		return -EAGAIN;
	start = smc_ring_place(&tx->g, tx->head_v);
	end = start + smc_rec_bytes(len);
	if (end - tx_tail_v(tx) > tx->g.cap)
		return -EAGAIN;

	rec = tx->next_rec++;
	s = &tx->slots[rec % tx->g.window];
	*s = (struct smc_tx_slot){
	    .voff = start,
	    .prev_head = tx->head_v,
	    .round = tx->next_round,
	    .len = len,
	    .nrounds = nrounds,
	    .flags = flags,
	    .payload = payload,
	    .cookie = cookie,
	};
	smc_rec_hdr_encode(tx_hdr_cell(tx, rec) + SMC_HDR_CELL_PAD,
			   tx->next_round ^ tx->seal, len, nrounds, flags);
	tx->next_round += nrounds;
	tx->head_v = end;
	return (int64_t)rec;
}

void smc_ring_tx_unreserve(struct smc_ring_tx *tx, uint64_t rec)
{
	struct smc_tx_slot *s = smc_ring_tx_slot(tx, rec);

	assert(rec + 1 == tx->next_rec && rec >= tx->posted_rec);
	tx->next_rec--;
	tx->next_round -= s->nrounds;
	tx->head_v = s->prev_head;
}

/* Pad bytes after a record's payload up to the next record. */
static uint32_t rec_pad(uint32_t len)
{
	return (uint32_t)(smc_align8(len) - len);
}

/* Entries a record needs in a write: its header (which also carries the
 * previous record's padding) and its payload when it has one. */
static uint32_t rec_nsge(const struct smc_tx_slot *s)
{
	return s->len ? 2 : 1;
}

bool smc_ring_tx_plan(struct smc_ring_tx *tx, uint32_t max_sge,
		      struct smc_write *w)
{
	uint64_t rec = tx->posted_rec, end_v = 0;
	uint32_t prev_pad = 0;

	if (rec == tx->next_rec)
		return false;
	if (max_sge > SMC_MAX_SGE)
		max_sge = SMC_MAX_SGE;
	assert(max_sge >= 2);

	w->first_rec = rec;
	w->nrec = 0;
	w->nsge = 0;
	w->bytes = 0;
	w->remote_off = tx->slots[rec % tx->g.window].voff % tx->g.cap;
	for (; rec < tx->next_rec; rec++) {
		const struct smc_tx_slot *s = &tx->slots[rec % tx->g.window];
		struct smc_sge *e;

		if (w->nrec == SMC_IMM_MAX_RECS)
			break;
		if (w->nsge + rec_nsge(s) > max_sge)
			break;
		/* A record that starts a new lap is not contiguous, whether
		 * the placement rule skipped the end of the ring or the
		 * previous record ended exactly there. */
		if (w->nrec && (s->voff != end_v || s->voff % tx->g.cap == 0))
			break;
		e = &w->sge[w->nsge++];
		e->addr = tx_hdr_cell(tx, rec) + SMC_HDR_CELL_PAD - prev_pad;
		e->len = SMC_REC_HDR_SIZE + prev_pad;
		e->kind = SMC_SGE_HDR;
		e->rec = rec;
		w->bytes += e->len;
		if (s->len) {
			e = &w->sge[w->nsge++];
			e->addr = s->payload;
			e->len = s->len;
			e->kind = SMC_SGE_PAYLOAD;
			e->rec = rec;
			w->bytes += e->len;
		}
		prev_pad = rec_pad(s->len);
		end_v = s->voff + smc_rec_bytes(s->len);
		w->nrec++;
	}
	assert(w->nrec >= 1);
	/* The run never crosses the end of the ring. */
	assert(w->remote_off + w->bytes <= tx->g.cap);
	w->imm = smc_imm_encode(w->nrec, w->first_rec);
	tx->posted_rec = rec;
	return true;
}

void smc_ring_tx_set_released(struct smc_ring_tx *tx, uint64_t released)
{
	/* Receivers release only what they received, which was posted. */
	assert(released <= tx->posted_rec);
	if (released > tx->released_rec)
		tx->released_rec = released;
}

void smc_ring_rx_init(struct smc_ring_rx *rx, const struct smc_ring_geom *g,
		      const uint8_t *base, uint8_t *released, uint64_t seal)
{
	memset(rx, 0, sizeof(*rx));
	rx->g = *g;
	rx->seal = seal;
	rx->base = base;
	rx->released = released;
	memset(released, 0, g->window);
}

int smc_ring_rx_accept(struct smc_ring_rx *rx, uint32_t imm,
		       struct smc_rx_rec *out, uint32_t room)
{
	uint32_t n = smc_imm_nrec(imm);
	uint64_t v = rx->v, round = rx->next_round;

	if (!smc_imm_is_smc(imm) || n == 0 ||
	    smc_imm_first16(imm) != (rx->next_rec & 0xffff))
		return -EPROTO;
	/* The sender never has more than window records unreleased. */
	if (rx->next_rec + n - rx->released_rec > rx->g.window)
		return -EPROTO;
	assert(room >= n);
	(void)room; /* only checked */
	for (uint32_t i = 0; i < n; i++) {
		struct smc_rec_hdr h;
		const uint8_t *p;

		v = smc_ring_place(&rx->g, v);
		p = rx->base + v % rx->g.cap;
		smc_rec_hdr_decode(p, &h);
		h.round ^= rx->seal;
		if (h.round != round || h.nrounds == 0 ||
		    h.len > rx->g.max_payload ||
		    (h.flags & ~(SMC_REC_NULL | SMC_REC_KIND_MASK)) != 0 ||
		    ((h.flags & SMC_REC_NULL) ? h.len != 0 : h.nrounds != 1))
			return -EPROTO;
		out[i] = (struct smc_rx_rec){
		    .rec = rx->next_rec + i,
		    .round = h.round,
		    .len = h.len,
		    .nrounds = h.nrounds,
		    .flags = h.flags,
		    .data = p + SMC_REC_HDR_SIZE,
		};
		round += h.nrounds;
		v += smc_rec_bytes(h.len);
	}
	rx->v = v;
	rx->next_rec += n;
	rx->next_round = round;
	return (int)n;
}

bool smc_ring_rx_release(struct smc_ring_rx *rx, uint64_t rec)
{
	return smc_release_mark(rx->released, rx->g.window, &rx->released_rec,
				rx->next_rec, rec);
}

size_t smc_core_hdr_area_size(uint32_t window)
{
	return (size_t)window * SMC_HDR_CELL;
}
