/*
 * smc/flow.c - per-member released and completed counters of one sender.
 *
 * The idea: both limits a sender obeys (slot reuse, payload return) are
 * minima over monotone per-member counters, so they are kept as plain
 * arrays updated by the progress thread and read under the sender's lock;
 * n is small, a scan is cheaper than any cleverer structure.
 */
#include <errno.h>
#include <stdlib.h>

#include "smc/flow.h"

int smc_flow_init(struct smc_flow *f, uint32_t n, uint32_t me)
{
	if (n == 0 || me >= n)
		return -EINVAL;
	f->n = n;
	f->me = me;
	f->released = calloc(n, sizeof(*f->released));
	f->completed = calloc(n, sizeof(*f->completed));
	if (!f->released || !f->completed) {
		smc_flow_fini(f);
		return -ENOMEM;
	}
	f->completed[me] = UINT64_MAX;
	return 0;
}

void smc_flow_fini(struct smc_flow *f)
{
	free(f->released);
	free(f->completed);
	f->released = NULL;
	f->completed = NULL;
}

void smc_flow_set_released(struct smc_flow *f, uint32_t j, uint64_t count)
{
	if (count > f->released[j])
		f->released[j] = count;
}

void smc_flow_set_completed(struct smc_flow *f, uint32_t j, uint64_t count)
{
	if (j != f->me && count > f->completed[j])
		f->completed[j] = count;
}

uint64_t smc_flow_min_released(const struct smc_flow *f)
{
	uint64_t m = UINT64_MAX;

	for (uint32_t j = 0; j < f->n; j++)
		if (f->released[j] < m)
			m = f->released[j];
	return m;
}

uint64_t smc_flow_payload_done(const struct smc_flow *f)
{
	uint64_t m = f->released[f->me];

	for (uint32_t j = 0; j < f->n; j++)
		if (f->completed[j] < m)
			m = f->completed[j];
	return m;
}
