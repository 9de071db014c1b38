/*
 * stats.c - counters of every size class and of extents, and their report.
 *
 * Leases and releases are counted by each thread in its own cache, without
 * a locked instruction, and summed here; bytes in use follow from them.
 * The high-water mark is kept by the shared pool of each class, which sees
 * every slot that leaves it (to a lease or to a thread cache). Like
 * jemalloc's, the report is a table a tool can print on demand; the
 * library itself never prints.
 */
#include "alloc_internal.h"

unsigned alloc_nclasses(void)
{
	return ALLOC_NCLASSES;
}

size_t alloc_class_size(unsigned i)
{
	return i < ALLOC_NCLASSES ? class_size(i) : 0;
}

int alloc_stats(struct alloc *a, unsigned i, struct alloc_class_stats *st)
{
	if (!a || i > ALLOC_NCLASSES || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	if (i == ALLOC_LARGE) {
		pthread_mutex_lock(&a->ext_lock);
		st->leases = a->large_leases;
		st->releases = a->large_releases;
		st->bytes_in_use = a->large_bytes;
		st->high_water = a->large_hwm;
		pthread_mutex_unlock(&a->ext_lock);
		st->failures = atomic_load(&a->large_failures);
		return 0;
	}
	st->size = a->cls[i].size;
	tcache_counts(a, i, &st->leases, &st->releases);
	/* Read while other threads move: a release may be counted before
	 * its lease (a flush read half way, a slot leased on a thread read
	 * before and released on one read after). */
	if (st->releases > st->leases)
		st->releases = st->leases;
	st->bytes_in_use = (st->leases - st->releases) * st->size;
	pthread_mutex_lock(&a->cls[i].lock);
	st->high_water = a->cls[i].high_water;
	st->slabs = a->cls[i].nslabs;
	pthread_mutex_unlock(&a->cls[i].lock);
	st->failures = atomic_load(&a->cls[i].failures);
	return 0;
}

void alloc_stats_print(struct alloc *a, FILE *f)
{
	struct alloc_class_stats st, tot = { 0 };
	unsigned long long reserved;
	unsigned i;

	if (!f)
		return;
	if (!a) {
		fprintf(f, "alloc_stats_print: no allocator (NULL)\n");
		return;
	}
	pthread_mutex_lock(&a->ext_lock);
	reserved = a->reserved_bytes;
	pthread_mutex_unlock(&a->ext_lock);
	fprintf(f, "region: %zu bytes at %p, %u pages, %s pages, lkey 0x%x rkey 0x%x, %llu bytes reserved\n",
		a->h.len, (void *)a->h.base, a->npages,
		a->huge ? "2 MiB huge" : "4 KiB", a->h.lkey, a->h.rkey,
		reserved);
	if (a->note[0])
		fprintf(f, "note: %s\n", a->note);
	fprintf(f, "%8s %12s %12s %14s %14s %10s %6s\n", "class", "leases",
		"releases", "bytes_in_use", "high_water", "failures", "slabs");
	for (i = 0; i <= ALLOC_NCLASSES; i++) {
		alloc_stats(a, i, &st);
		if (!st.leases && !st.failures && !st.slabs)
			continue;
		if (i == ALLOC_LARGE)
			fprintf(f, "%8s", "extents");
		else
			fprintf(f, "%8zu", st.size);
		fprintf(f, " %12llu %12llu %14llu %14llu %10llu %6llu\n",
			(unsigned long long)st.leases,
			(unsigned long long)st.releases,
			(unsigned long long)st.bytes_in_use,
			(unsigned long long)st.high_water,
			(unsigned long long)st.failures,
			(unsigned long long)st.slabs);
		tot.leases += st.leases;
		tot.releases += st.releases;
		tot.bytes_in_use += st.bytes_in_use;
		tot.failures += st.failures;
	}
	fprintf(f, "%8s %12llu %12llu %14llu %14s %10llu\n", "total",
		(unsigned long long)tot.leases, (unsigned long long)tot.releases,
		(unsigned long long)tot.bytes_in_use, "-",
		(unsigned long long)tot.failures);
}
