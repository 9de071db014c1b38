/*
 * layout.c - the group's SST columns and the plan of its region (see
 * layout.h).
 */
#include <errno.h>

#include <squall/alloc.h>

#include "group/layout.h"
#include "smc/ring.h"

int group_make_layout(uint32_t n, struct sst_layout **out, int *col,
		      struct squall_error *err)
{
	struct sst_column cols[COL_COUNT] = {
		/* Segments (with_prev: one with the column before): what a
		 * member publishes together is read together. */
		[COL_SMC_RECV] = { "smc_received", SST_COL_U64_ARRAY, n },
		[COL_SMC_REL] = { "smc_released", SST_COL_U64_ARRAY, n, true },
		[COL_SMC_RING] = { "smc_rings", SST_COL_U64, 0 },
		[COL_DONE] = { "delivered", SST_COL_U64_ARRAY, n },
		[COL_SENT] = { "sent", SST_COL_U64, 0 },
		[COL_BARRIER] = { "barrier", SST_COL_U64, 0, true },
		[COL_CLOSING] = { "closing", SST_COL_U64, 0, true },
		/* the view change (vcore.h): what I hold, the mask I am
		 * wedged for, the trim I adopted and the mask it is for */
		[COL_HAVE] = { "have", SST_COL_U64_ARRAY, n },
		[COL_ACK] = { "wedged_for", SST_COL_U64, 0, true },
		[COL_TRIM] = { "trim", SST_COL_U64_ARRAY, n, true },
		[COL_TADD] = { "trim_adds", SST_COL_U64, 0, true },
		[COL_TMASK] = { "trim_mask", SST_COL_U64, 0, true },
		[COL_JOIN] = { "joins_asked", SST_COL_U64, 0 },
	};
	int r = sst_layout_create(cols, COL_COUNT, out, err);

	if (r || !col)
		return r;
	for (int i = 0; i < COL_COUNT; i++)
		col[i] = sst_layout_find(*out, cols[i].name);
	return 0;
}

static uint64_t page_up(uint64_t n)
{
	return (n + ALLOC_PAGE_SIZE - 1) / ALLOC_PAGE_SIZE * ALLOC_PAGE_SIZE;
}

int group_region_plan(uint32_t nmax, uint32_t window, uint32_t max_payload,
		      struct group_region_plan *p, struct squall_error *err)
{
	struct smc_ring_geom geom;
	struct sst_layout *l;
	int r;

	squall_error_clear(err);
	if (!nmax)
		return squall_error_set(err, -EINVAL, "a group of no members");
	r = smc_ring_geom_init(&geom, window, max_payload);
	if (r)
		return squall_error_set(err, r, "smc.window %u or smc.max_payload "
					"%u out of range", window, max_payload);
	r = group_make_layout(nmax, &l, NULL, err);
	if (r)
		return r;
	/* The group's SST options leave the pipeline depth at its default,
	 * which sst_area_size(NULL) assumes. */
	p->sst = page_up(sst_area_size(l, nmax, NULL));
	sst_layout_destroy(l);
	p->smc_hdr = page_up(smc_core_hdr_area_size(window));
	p->recv = page_up((uint64_t)nmax * GROUP_RECV_DEPTH * GROUP_RECV_BUF);
	p->ring_cap = geom.cap;
	p->rings = page_up((uint64_t)nmax * geom.cap);
	p->total = p->sst + p->smc_hdr + p->recv + p->rings + GROUP_REGION_SPARE;
	return 0;
}
