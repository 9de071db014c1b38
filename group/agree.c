/*
 * agree.c - the close agreements as pure decisions (see agree.h).
 */
#include "group/agree.h"
#include "group/vcore.h"

bool ag_flushed(const struct ag_in *in)
{
	/* A peer that published 2 saw this hold, on rows that were real:
	 * it holds for good (counts only grow, closers send no more), even
	 * if this member's copies of some rows are older (a member that
	 * died before its close state reached this one). */
	for (uint32_t j = 0; j < in->n; j++)
		if (j != in->me && in->rows[j].closing == 2)
			return true;
	/* Even in a view change: when this holds, no trim is needed. */
	for (uint32_t k = 0; k < in->n; k++) {
		if (in->rows[k].closing < 1)
			return false;
		for (uint32_t j = 0; j < in->n; j++)
			if (in->rows[j].closing != VC_CLOSE_LEFT &&
			    in->rows[j].done[k] < in->rows[k].sent)
				return false;
	}
	return true;
}

bool ag_all_flushed(const struct ag_in *in)
{
	for (uint32_t j = 0; j < in->n; j++)
		if (in->rows[j].closing < 2 && !in->rows[j].suspected)
			return false;
	return true;
}

bool ag_own_flushed(const struct ag_in *in)
{
	uint64_t sent = in->rows[in->me].sent;
	bool all_closing = true;

	if (in->wedged || sent != in->sent)
		return false;
	for (uint32_t j = 0; j < in->n; j++) {
		if (in->rows[j].closing < 1)
			all_closing = false;
		if (in->rows[j].done[in->me] < sent)
			return false;
	}
	return !all_closing;
}

bool ag_leave_seen(const struct ag_in *in)
{
	/* A member that is only closing (1) still delivers, and its
	 * deliveries need this member's row (SMC's stability counts every
	 * member's received counters): this member stays, delivering, until
	 * it flushed or left too. */
	for (uint32_t j = 0; j < in->n; j++) {
		const struct ag_row *r = &in->rows[j];

		if (j == in->me || r->suspected || r->closing >= 2 ||
		    (r->ack && ((r->ack - 1) >> in->me & 1)))
			continue;
		return false;
	}
	return true;
}
