/*
 * smc_bench - ordered small messages through the group API: delivered
 * messages per second and send-to-delivery latency, one member per
 * process, every member of the group file in one run (bench/smc.sh).
 *
 * For each size (--sizes, bytes up to smc.max_payload, so every message
 * travels on SMC) and each sender set (rank 0 alone, then every member),
 * two phases, each opened by a group_barrier so that no phase overlaps
 * the next:
 *
 *  - throughput: every sender leases (--lease-batch buffers per
 *    alloc_lease call), writes a small header and calls
 *    group_ordered_send as fast as the window lets it, for --secs
 *    seconds, and then sends one message marked last. Each member counts
 *    what it delivers from the barrier until it has delivered every
 *    sender's last message: delivered msgs / that time is its rate.
 *    Only the header is written (the payload is whatever the lease held),
 *    as ib_write_bw does not touch its buffer either.
 *  - latency: paced, one message in flight per sender: a sender stamps
 *    CLOCK_MONOTONIC into the payload, sends, and sends the next only
 *    once its own member delivered the previous one (which needs every
 *    member to have received it). Every member records now - stamp at
 *    every delivery; all members run on one host (one VM), so the clock
 *    is shared. The samples go to --out DIR/lat.SIZE.SENDERS.ID (ns, one
 *    per line) and the driver takes median and p99 over all members'
 *    files together.
 *
 * One line per phase on stdout:
 *   TPUT size=B senders=K member=ID delivered=N secs=S msgs_per_s=R
 *        sent=M send_waits=W sst_pushes_per_msg=.. sst_writes_per_msg=..
 *        recs_per_write=.. PROFILE
 *   LAT size=B senders=K member=ID samples=N p50_us=.. p99_us=..
 *       mean_us=.. PROFILE BREAKDOWN
 * (the LAT figures here are this member's alone; recs_per_write: the
 * ring records, messages and nulls, each of this member's SMC writes
 * carried, 0 when it wrote none), where PROFILE says
 * where the time went during the phase: cpu_main_pct (the sending
 * thread) and cpu_progress_pct (the process's other threads: the group's
 * progress thread), in percent of one CPU; vm_user/sys/softirq/idle_pct
 * of the whole VM from /proc/stat; and, where the device counts them
 * (Soft-RoCE's hw_counters), dev_sent_pkts and pkts_per_msg: packets
 * every member sent per message of the phase (data writes, null records,
 * SST pushes, acknowledgements), dev_retries: requests the device sent
 * again (completer_retry_err: after a timeout or an out-of-sequence NAK)
 * and net_drops: packets the kernel's input backlogs dropped
 * (/proc/net/softnet_stat), both over the whole host during the phase.
 * BREAKDOWN (group_stats) is, per message of the phase, this member's
 * sst_pushes_per_msg and sst_writes_per_msg, sleeps_per_msg
 * (progress-thread sleeps, each ended by a wake-up), and
 * the mean found_to_delivery_us of others' messages (from the pass that
 * found one in its ring to its delivery: stability and order) and
 * own_send_to_delivery_us of its own; a sender's LAT line adds
 * send_call_us, the median time from its stamp to the return of
 * group_ordered_send (on Soft-RoCE between members of one host the post
 * itself carries the write into the receiver's ring, so this is most of
 * what a receiver waits). --latency-only runs only the paced
 * phase with one sender, at each size. Then group_close.
 * Exit status 0 only when every phase delivered what it should, in each
 * sender's order, and the group closed cleanly.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <squall/group.h>

#define MAX_SIZES 8
#define MAX_MEMBERS 64
#define MAX_BATCH 256

#define FLAG_LAST 1u

/* The start of every payload. */
struct hdr {
	uint64_t ts_ns;   /* send time (latency phases), else 0 */
	uint32_t phase;
	uint32_t index;   /* per sender, from 0 within the phase */
	uint32_t flags;   /* FLAG_LAST */
	uint32_t pad;
};

struct bench {
	struct group *g;
	uint32_t id, rank, n, max_payload;
	size_t sizes[MAX_SIZES];
	unsigned nsizes;
	double secs;
	unsigned lat_count, lease_batch;
	const char *out;

	/* The phase in progress (set by the main thread before the barrier
	 * that opens it; read by the upcall). */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t phase;
	uint32_t nsenders;      /* ranks 0..nsenders-1 send */
	bool latency;
	uint64_t expect;        /* latency phase: deliveries to wait for */

	/* Delivery side (progress thread; read under lock when done). */
	uint64_t delivered;
	uint32_t next_index[MAX_MEMBERS];
	uint32_t lasts;         /* senders whose last message arrived */
	uint64_t t_done;        /* when the phase was complete here */
	bool done;
	uint32_t own_delivered; /* latency: own messages delivered */
	uint64_t *lat;          /* latency samples, ns */
	uint64_t nlat, cap_lat;
	uint64_t bad;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Where the CPU went during a phase: this process's main thread (the
 * sender) and its other threads (the group's progress thread), and the
 * whole VM's split from /proc/stat (user, system, softirq, idle; rxe does
 * its packet work in the kernel), so a slow phase says which is busy. */
struct cpu {
	uint64_t self_us, main_us, t_ns;
	uint64_t vm[8];  /* user nice system idle iowait irq softirq steal */
	uint64_t pkts;   /* packets the RDMA device sent (every member's) */
	uint64_t retries; /* the device's requests sent again (a timeout, a NAK) */
	uint64_t drops;  /* packets the kernel's input backlogs dropped */
};

/* One of the device's counters (Soft-RoCE: hw_counters/NAME), or 0 where
 * the device has none: sent_pkts per delivered message shows how many
 * writes and acknowledgements the protocol spends per message. */
static const char *dev_name;

static uint64_t dev_counter(const char *name)
{
	char path[256];
	uint64_t v = 0;
	FILE *f;

	if (!dev_name || !dev_name[0])
		return 0;
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev_name,
		 name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%" SCNu64, &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* Packets the kernel dropped on their way in, over every CPU (the second
 * column of /proc/net/softnet_stat, hexadecimal: a full input backlog).
 * Soft-RoCE's packets between members of one host pass there; one lost
 * costs its sender a retransmission timeout (dev_retries). */
static uint64_t net_drops(void)
{
	unsigned long long processed, dropped;
	uint64_t sum = 0;
	char line[512];
	FILE *f = fopen("/proc/net/softnet_stat", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %llx", &processed, &dropped) == 2)
			sum += dropped;
	fclose(f);
	return sum;
}

static uint64_t tv_us(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000u + (uint64_t)tv->tv_usec;
}

static void cpu_sample(struct cpu *c)
{
	struct rusage ru;
	FILE *f;

	memset(c, 0, sizeof(*c));
	getrusage(RUSAGE_SELF, &ru);
	c->self_us = tv_us(&ru.ru_utime) + tv_us(&ru.ru_stime);
	getrusage(RUSAGE_THREAD, &ru);
	c->main_us = tv_us(&ru.ru_utime) + tv_us(&ru.ru_stime);
	c->t_ns = now_ns();
	c->pkts = dev_counter("sent_pkts");
	c->retries = dev_counter("completer_retry_err");
	c->drops = net_drops();
	f = fopen("/proc/stat", "r");
	if (f) {
		if (fscanf(f, "cpu %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
			   " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
			   &c->vm[0], &c->vm[1], &c->vm[2], &c->vm[3], &c->vm[4],
			   &c->vm[5], &c->vm[6], &c->vm[7]) != 8)
			memset(c->vm, 0, sizeof(c->vm));
		fclose(f);
	}
}

/* " cpu_main_pct=.. cpu_progress_pct=.. vm_user_pct=.. ..." for a phase
 * (percent of one CPU for the threads, of all CPUs for the VM). */
static void cpu_print(const struct cpu *a, const struct cpu *b,
		      uint64_t delivered)
{
	double wall = (double)(b->t_ns - a->t_ns) / 1e3, tot = 0;
	uint64_t d[8];

	for (int i = 0; i < 8; i++)
		tot += (double)(d[i] = b->vm[i] - a->vm[i]);
	if (tot <= 0)
		tot = 1;
	printf(" cpu_main_pct=%.0f cpu_progress_pct=%.0f vm_user_pct=%.0f "
	       "vm_sys_pct=%.0f vm_softirq_pct=%.0f vm_idle_pct=%.0f",
	       100.0 * (double)(b->main_us - a->main_us) / wall,
	       100.0 * (double)((b->self_us - b->main_us) -
				(a->self_us - a->main_us)) / wall,
	       100.0 * (double)(d[0] + d[1]) / tot, 100.0 * (double)d[2] / tot,
	       100.0 * (double)(d[5] + d[6]) / tot,
	       100.0 * (double)(d[3] + d[4]) / tot);
	if (b->pkts && delivered)
		printf(" dev_sent_pkts=%" PRIu64 " pkts_per_msg=%.2f",
		       b->pkts - a->pkts,
		       (double)(b->pkts - a->pkts) / (double)delivered);
	if (b->pkts)
		printf(" dev_retries=%" PRIu64 " net_drops=%" PRIu64,
		       b->retries - a->retries, b->drops - a->drops);
}

static int rank_of(struct bench *b, uint32_t id)
{
	for (uint32_t r = 0; r < b->n; r++)
		if (group_member_id(b->g, r) == id)
			return (int)r;
	return -1;
}

static bool deliver(void *ctx, uint32_t sender, uint64_t seq,
		    const struct buf_desc *d)
{
	struct bench *b = ctx;
	int r = rank_of(b, sender);
	struct hdr h;
	uint64_t t = 0;

	(void)seq;
	if (d->len < sizeof(h) || r < 0) {
		b->bad++;
		return false;
	}
	memcpy(&h, d->ptr, sizeof(h));
	if (b->latency)
		t = now_ns();
	pthread_mutex_lock(&b->lock);
	if (h.phase != b->phase || (uint32_t)r >= b->nsenders ||
	    h.index != b->next_index[r]) {
		b->bad++;
		fprintf(stderr, "member %u: phase %u: message %u from %u "
			"(phase %u) is out of place\n", b->id, b->phase,
			h.index, sender, h.phase);
		pthread_mutex_unlock(&b->lock);
		return false;
	}
	b->next_index[r]++;
	b->delivered++;
	if (b->latency) {
		if (b->nlat < b->cap_lat)
			b->lat[b->nlat++] = t - h.ts_ns;
		if ((uint32_t)r == b->rank) {
			b->own_delivered++;
			pthread_cond_broadcast(&b->cond);
		}
		if (b->delivered == b->expect) {
			b->t_done = t;
			b->done = true;
			pthread_cond_broadcast(&b->cond);
		}
	} else if (h.flags & FLAG_LAST && ++b->lasts == b->nsenders) {
		b->t_done = now_ns();
		b->done = true;
		pthread_cond_broadcast(&b->cond);
	}
	pthread_mutex_unlock(&b->lock);
	return false;
}

static void die(struct bench *b, const char *what, int r,
		const struct squall_error *err)
{
	fprintf(stderr, "smc_bench member %u: %s: %s\n", b->id, what,
		err && err->msg[0] ? err->msg : strerror(-r));
	exit(1);
}

/* Open a phase: reset the delivery state, then meet the others. */
static void open_phase(struct bench *b, uint32_t nsenders, bool latency,
		       uint64_t expect)
{
	struct squall_error err;
	int r;

	pthread_mutex_lock(&b->lock);
	b->phase++;
	b->nsenders = nsenders;
	b->latency = latency;
	b->expect = expect;
	b->delivered = 0;
	memset(b->next_index, 0, sizeof(b->next_index));
	b->lasts = 0;
	b->done = false;
	b->own_delivered = 0;
	b->nlat = 0;
	pthread_mutex_unlock(&b->lock);
	r = group_barrier(b->g, 600000, &err);
	if (r)
		die(b, "barrier", r, &err);
}

static void wait_done(struct bench *b)
{
	pthread_mutex_lock(&b->lock);
	while (!b->done)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
}

static void send_one(struct bench *b, struct buf_desc *d, const struct hdr *h)
{
	struct squall_error err;
	int r;

	memcpy(d->ptr, h, sizeof(*h));
	r = group_ordered_send(b->g, d, &err);
	if (r)
		die(b, "group_ordered_send", r, &err);
}

/* Send for b->secs seconds, then the last message; returns the count. */
static uint64_t send_stream(struct bench *b, size_t size)
{
	struct alloc *a = group_get_allocator(b->g);
	size_t sizes[MAX_BATCH];
	struct buf_desc d[MAX_BATCH];
	uint64_t until = now_ns() + (uint64_t)(b->secs * 1e9), i = 0;
	bool last = false;

	for (unsigned k = 0; k < b->lease_batch; k++)
		sizes[k] = size;
	while (!last) {
		int r = alloc_lease_wait(a, b->lease_batch, sizes, d, 60000);

		if (r)
			die(b, "alloc_lease_wait", r, NULL);
		/* The clock once per batch (at least every 64 messages):
		 * in a VM it can be a system call. */
		if (b->lease_batch > 1 || i % 64 == 0)
			last = now_ns() >= until;
		for (unsigned k = 0; k < b->lease_batch; k++) {
			struct hdr h = { 0, b->phase, (uint32_t)i, 0, 0 };

			if (last && k == b->lease_batch - 1)
				h.flags = FLAG_LAST;
			send_one(b, &d[k], &h);
			i++;
		}
	}
	return i;
}

/* SST pushes and their writes per message of a phase of `msgs` messages
 * (0 when none), from two group_stats, with `digits` decimals. */
static void sst_per_msg_print(const struct group_stats *s0,
			      const struct group_stats *s1, uint64_t msgs,
			      int digits)
{
	uint64_t pushes = s1->sst_pushes - s0->sst_pushes;
	uint64_t writes = s1->sst_writes - s0->sst_writes;

	printf(" sst_pushes_per_msg=%.*f sst_writes_per_msg=%.*f", digits,
	       msgs ? (double)pushes / (double)msgs : 0.0, digits,
	       msgs ? (double)writes / (double)msgs : 0.0);
}

static void throughput(struct bench *b, size_t size, uint32_t nsenders)
{
	struct group_stats s0, s1;
	struct cpu c0, c1;
	uint64_t t0, sent = 0;
	double secs;

	open_phase(b, nsenders, false, 0);
	group_stats(b->g, &s0);
	cpu_sample(&c0);
	t0 = c0.t_ns;
	if (b->rank < nsenders)
		sent = send_stream(b, size);
	wait_done(b);
	cpu_sample(&c1);
	group_stats(b->g, &s1);
	secs = (double)(b->t_done - t0) / 1e9;
	printf("TPUT size=%zu senders=%u member=%u delivered=%" PRIu64
	       " secs=%.3f msgs_per_s=%.0f sent=%" PRIu64 " send_waits=%"
	       PRIu64, size, nsenders, b->id, b->delivered, secs,
	       (double)b->delivered / secs, sent,
	       s1.send_waits - s0.send_waits);
	sst_per_msg_print(&s0, &s1, b->delivered, 3);
	printf(" sleeps_per_msg=%.3f", b->delivered ?
	       (double)(s1.progress_sleeps - s0.progress_sleeps) /
	       (double)b->delivered : 0.0);
	printf(" recs_per_write=%.2f", s1.smc_writes > s0.smc_writes ?
	       (double)(s1.smc_records_written - s0.smc_records_written) /
	       (double)(s1.smc_writes - s0.smc_writes) : 0.0);
	cpu_print(&c0, &c1, b->delivered);
	printf("\n");
	fflush(stdout);
}

static void write_samples(struct bench *b, size_t size, uint32_t nsenders)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/lat.%zu.%u.%u", b->out, size,
		 nsenders, b->id);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "smc_bench member %u: %s: %s\n", b->id, path,
			strerror(errno));
		exit(1);
	}
	for (uint64_t i = 0; i < b->nlat; i++)
		fprintf(f, "%" PRIu64 "\n", b->lat[i]);
	if (fclose(f)) {
		fprintf(stderr, "smc_bench member %u: %s: %s\n", b->id, path,
			strerror(errno));
		exit(1);
	}
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t p = *(const uint64_t *)x, q = *(const uint64_t *)y;

	return p < q ? -1 : p > q;
}

/* Per message of a phase of `msgs` messages, from two group_stats: SST
 * pushes and their writes, progress-thread sleeps (each a wake-up), and
 * the mean time of a delivered message here from its arrival in its
 * ring (others') or from its send (own). */
static void breakdown_print(const struct group_stats *s0,
			    const struct group_stats *s1, uint64_t msgs)
{
	uint64_t rx = s1->smc_rx_waited - s0->smc_rx_waited;
	uint64_t own = s1->smc_own_waited - s0->smc_own_waited;

	if (!msgs)
		return;
	sst_per_msg_print(s0, s1, msgs, 2);
	printf(" sleeps_per_msg=%.2f",
	       (double)(s1->progress_sleeps - s0->progress_sleeps) / (double)msgs);
	if (rx)
		printf(" found_to_delivery_us=%.1f",
		       (double)(s1->smc_rx_wait_ns - s0->smc_rx_wait_ns) /
			       (double)rx / 1e3);
	if (own)
		printf(" own_send_to_delivery_us=%.1f",
		       (double)(s1->smc_own_wait_ns - s0->smc_own_wait_ns) /
			       (double)own / 1e3);
}

static void latency(struct bench *b, size_t size, uint32_t nsenders)
{
	struct alloc *a = group_get_allocator(b->g);
	struct group_stats s0, s1;
	uint64_t sum = 0;
	struct cpu c0, c1;

	uint64_t *call = NULL;
	uint32_t ncall = 0;

	open_phase(b, nsenders, true, (uint64_t)nsenders * b->lat_count);
	group_stats(b->g, &s0);
	cpu_sample(&c0);
	if (b->rank < nsenders) {
		call = calloc(b->lat_count, sizeof(*call));
		if (!call)
			die(b, "send call samples", -ENOMEM, NULL);
		for (uint32_t i = 0; i < b->lat_count; i++) {
			struct buf_desc d;
			struct hdr h;
			int r = alloc_lease_wait(a, 1, &size, &d, 60000);

			if (r)
				die(b, "alloc_lease_wait", r, NULL);
			h = (struct hdr){ now_ns(), b->phase, i, 0, 0 };
			send_one(b, &d, &h);
			call[ncall++] = now_ns() - h.ts_ns;
			/* One in flight: wait for its delivery here. */
			pthread_mutex_lock(&b->lock);
			while (b->own_delivered <= i)
				pthread_cond_wait(&b->cond, &b->lock);
			pthread_mutex_unlock(&b->lock);
		}
	}
	wait_done(b);
	cpu_sample(&c1);
	group_stats(b->g, &s1);
	write_samples(b, size, nsenders);
	qsort(b->lat, b->nlat, sizeof(*b->lat), cmp_u64);
	for (uint64_t i = 0; i < b->nlat; i++)
		sum += b->lat[i];
	printf("LAT size=%zu senders=%u member=%u samples=%" PRIu64
	       " p50_us=%.1f p99_us=%.1f mean_us=%.1f", size, nsenders, b->id,
	       b->nlat, b->nlat ? b->lat[b->nlat / 2] / 1e3 : 0.0,
	       b->nlat ? b->lat[b->nlat * 99 / 100] / 1e3 : 0.0,
	       b->nlat ? (double)sum / (double)b->nlat / 1e3 : 0.0);
	cpu_print(&c0, &c1, b->delivered);
	breakdown_print(&s0, &s1, (uint64_t)nsenders * b->lat_count);
	if (ncall) {
		qsort(call, ncall, sizeof(*call), cmp_u64);
		printf(" send_call_us=%.1f", call[ncall / 2] / 1e3);
	}
	free(call);
	printf("\n");
	fflush(stdout);
}

static void usage(void)
{
	fprintf(stderr, "usage: smc_bench --config CFG --id N --out DIR "
		"[--sizes B,..] [--secs S] [--lat-count N] "
		"[--lease-batch K] [--set key=value] [--latency-only]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "config", required_argument, 0, 'c' },
		{ "id", required_argument, 0, 'i' },
		{ "set", required_argument, 0, 's' },
		{ "sizes", required_argument, 0, 'z' },
		{ "secs", required_argument, 0, 't' },
		{ "lat-count", required_argument, 0, 'l' },
		{ "lease-batch", required_argument, 0, 'b' },
		{ "out", required_argument, 0, 'o' },
		{ "latency-only", no_argument, 0, 'L' },
		{ 0, 0, 0, 0 },
	};
	static struct bench B;
	struct bench *b = &B;
	struct group_config *cfg = calloc(1, sizeof(*cfg));
	struct group_callbacks cb = { .deliver = deliver };
	const char *cfg_path = NULL, *id = NULL, *sets[8];
	size_t nsets = 0;
	struct squall_error err;
	bool latency_only = false;
	long my_id;
	int c, r;

	if (!cfg)
		return 1;
	b->secs = 3;
	b->lat_count = 500;
	b->lease_batch = 1;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c': cfg_path = optarg; break;
		case 'i': id = optarg; break;
		case 's': if (nsets < 8) sets[nsets++] = optarg; break;
		case 'z':
			for (char *t = strtok(optarg, ","); t; t = strtok(NULL, ",")) {
				if (b->nsizes == MAX_SIZES)
					usage();
				b->sizes[b->nsizes++] = strtoull(t, NULL, 0);
			}
			break;
		case 't': b->secs = strtod(optarg, NULL); break;
		case 'l': b->lat_count = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'b': b->lease_batch = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'o': b->out = optarg; break;
		case 'L': latency_only = true; break;
		default: usage();
		}
	}
	if (!cfg_path || !b->out || b->lease_batch < 1 ||
	    b->lease_batch > MAX_BATCH || b->secs <= 0 || !b->lat_count)
		usage();
	if (group_config_load_with(cfg_path, NULL, sets, nsets, cfg, &err) ||
	    (my_id = group_config_my_id(cfg, id, &err)) < 0) {
		fprintf(stderr, "smc_bench: %s\n", err.msg);
		return 1;
	}
	b->id = (uint32_t)my_id;
	b->max_payload = cfg->smc_max_payload;
	dev_name = cfg->device;
	if (!b->nsizes) {
		b->sizes[b->nsizes++] = 64;
		b->sizes[b->nsizes++] = 1024;
		b->sizes[b->nsizes++] = b->max_payload;
	}
	for (unsigned i = 0; i < b->nsizes; i++)
		if (b->sizes[i] < sizeof(struct hdr) ||
		    b->sizes[i] > b->max_payload) {
			fprintf(stderr, "smc_bench: size %zu is outside [%zu, "
				"smc.max_payload %u]\n", b->sizes[i],
				sizeof(struct hdr), b->max_payload);
			return 2;
		}
	b->g = group_create_cfg(cfg, b->id, &cb, b, &err);
	if (!b->g) {
		fprintf(stderr, "smc_bench member %u: %s\n", b->id, err.msg);
		return 1;
	}
	b->n = group_nmembers(b->g);
	b->rank = group_my_rank(b->g);
	if (b->n > MAX_MEMBERS)
		die(b, "too many members", -EINVAL, NULL);
	b->cap_lat = (uint64_t)b->n * b->lat_count;
	b->lat = calloc(b->cap_lat, sizeof(*b->lat));
	if (!b->lat)
		die(b, "latency samples", -ENOMEM, NULL);
	for (unsigned i = 0; i < b->nsizes; i++) {
		uint32_t set[2] = { 1, b->n };

		if (latency_only) {
			latency(b, b->sizes[i], 1);
			continue;
		}
		for (unsigned k = 0; k < 2; k++) {
			throughput(b, b->sizes[i], set[k]);
			latency(b, b->sizes[i], set[k]);
		}
	}
	r = group_close(b->g, 600000, &err);
	if (r)
		die(b, "group_close", r, &err);
	printf("DONE member=%u bad=%" PRIu64 "\n", b->id, b->bad);
	return b->bad ? 1 : 0;
}
