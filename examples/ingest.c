/*
 * ingest - a sensor feed replicated to every member, with no copy anywhere.
 *
 * The pattern Derecho's API could not serve: a producer takes many buffers
 * of very different sizes at once, fills them from several threads in
 * whatever order the data comes in, and sends each the moment it is full.
 * Here the producer member leases 64 buffers in one alloc_lease() call
 * (sizes from 4 KiB to 6 MiB, drawn from a fixed seed), four threads take
 * them in a shuffled order, write a simulated sensor frame into each
 * (header: frame number, payload length, FNV-1a-64 checksum; payload: a
 * stream any member can replay from the frame number) and hand it to
 * group_ordered_send() from the thread that filled it. Small frames go on
 * SMC, large ones on RDMC, all in one total order; the buffer goes back to
 * the allocator by itself once every member has it.
 *
 * Every member, the producer included, checks every delivered frame in the
 * deliver upcall (header, every payload word, checksum, no frame twice),
 * counts frames and bytes, and returns false so the group reuses the
 * memory at once. At the end each prints
 *   INGEST member=ID frames=N bytes=B bad=0 frames_per_s=.. MiB_per_s=.. copies=0
 * where copies counts payload copies the group made (group_stats: copies +
 * payload_copies), and exits 0 only if every frame arrived intact, nothing
 * was copied and group_close() flushed cleanly.
 *
 * usage: ingest --config GROUP.cfg [--id N] [--node NODE.cfg]
 *               [--set section.key=value]... [--frames N] [--producer ID]
 *               [--timeout-ms MS]
 */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <squall/group.h>

#include "example_common.h"

#define BATCH        64                /* buffers leased at once */
#define FILL_THREADS 4
#define MIN_FRAME    4096u             /* bytes, header included */
#define MAX_FRAME    (6u << 20)
#define SIZE_SEED    0x696e67657374ull /* "ingest" */
#define FRAME_MAGIC  0x54534547474e4953ull /* "SINGGEST": a frame starts here */
#define FNV_OFFSET   0xcbf29ce484222325ull
#define FNV_PRIME    0x100000001b3ull

/* What the sensor puts in front of every frame. */
struct frame_hdr {
	uint64_t magic;
	uint64_t frame;        /* 0, 1, 2, ... over the whole run */
	uint64_t payload_len;  /* bytes after the header */
	uint64_t checksum;     /* FNV-1a-64 of the payload */
};

struct ingest {
	uint32_t me, producer;
	uint64_t frames;       /* how many the producer sends */
	int timeout_ms;
	struct group *g;

	/* Written by the deliver upcall (the progress thread), read by main
	 * under lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t got, bytes, bad;
	uint64_t last_seq;
	uint8_t *seen;         /* one byte per frame number */
	double t_last;
	bool failed;
	char why[SQUALL_ERRMSG_MAX + 64];
};

/* The size of frame f, header included: a bucket of sizes doubling from
 * 4 KiB (so a run mixes SMC-sized frames with multi-MiB ones), then a
 * point inside it, on a 64-byte grid. The same on every member. */
static size_t frame_size(uint64_t f)
{
	uint64_t r = ex_mix(SIZE_SEED ^ (f * 0x9e3779b97f4a7c15ull));
	uint64_t lo = (uint64_t)MIN_FRAME << (r % 11);
	uint64_t hi = lo * 2 < MAX_FRAME ? lo * 2 : MAX_FRAME;
	uint64_t s = (lo + (r >> 16) % (hi - lo)) & ~(uint64_t)63;

	return s < MIN_FRAME ? MIN_FRAME : (size_t)s;
}

/* Word j of frame f's payload. */
static inline uint64_t payload_word(uint64_t f, uint64_t j)
{
	return ex_mix((f << 32) ^ j);
}

static inline uint64_t fnv_word(uint64_t h, uint64_t w)
{
	return (h ^ w) * FNV_PRIME;
}

/* Write frame f into the leased buffer d. */
static void fill_frame(const struct buf_desc *d, uint64_t f)
{
	struct frame_hdr h = { FRAME_MAGIC, f, d->len - sizeof(h), FNV_OFFSET };
	uint8_t *p = (uint8_t *)d->ptr + sizeof(h);
	uint64_t nw = h.payload_len / 8, j, w;

	for (j = 0; j < nw; j++) {
		w = payload_word(f, j);
		memcpy(p + 8 * j, &w, 8);
		h.checksum = fnv_word(h.checksum, w);
	}
	if (h.payload_len % 8) {
		w = payload_word(f, nw);
		memcpy(p + 8 * nw, &w, h.payload_len % 8);
		for (j = 0; j < h.payload_len % 8; j++)
			h.checksum = (h.checksum ^ p[8 * nw + j]) * FNV_PRIME;
	}
	memcpy(d->ptr, &h, sizeof(h));
}

/* Check a delivered frame; returns NULL or what is wrong. */
static const char *check_frame(const struct ingest *in,
			       const struct buf_desc *d, struct frame_hdr *h)
{
	const uint8_t *p = (const uint8_t *)d->ptr + sizeof(*h);
	uint64_t sum = FNV_OFFSET, nw, j, w;

	if (d->len < sizeof(*h))
		return "shorter than a frame header";
	memcpy(h, d->ptr, sizeof(*h));
	if (h->magic != FRAME_MAGIC)
		return "bad magic";
	if (h->frame >= in->frames)
		return "frame number out of range";
	if (h->payload_len != d->len - sizeof(*h) ||
	    d->len != frame_size(h->frame))
		return "length differs from the frame's size";
	nw = h->payload_len / 8;
	for (j = 0; j < nw; j++) {
		memcpy(&w, p + 8 * j, 8);
		if (w != payload_word(h->frame, j))
			return "payload differs from what the sensor wrote";
		sum = fnv_word(sum, w);
	}
	for (j = 8 * nw; j < h->payload_len; j++)
		sum = (sum ^ p[j]) * FNV_PRIME;
	if (sum != h->checksum)
		return "checksum mismatch";
	return NULL;
}

static bool on_deliver(void *ctx, uint32_t sender, uint64_t seq,
		       const struct buf_desc *d)
{
	struct ingest *in = ctx;
	struct frame_hdr h;
	const char *bad = check_frame(in, d, &h);
	double t = ex_now();

	if (!bad && sender != in->producer)
		bad = "sent by a member that is not the producer";
	pthread_mutex_lock(&in->lock);
	if (!bad && in->got + in->bad > 0 && seq <= in->last_seq)
		bad = "sequence number did not increase";
	if (!bad && in->seen[h.frame])
		bad = "delivered twice";
	in->last_seq = seq;
	if (bad) {
		fprintf(stderr, "ingest: member %u: message seq %" PRIu64
			" from member %u (%zu bytes): %s\n", in->me, seq,
			sender, d->len, bad);
		in->bad++;
	} else {
		in->seen[h.frame] = 1;
		in->got++;
		in->bytes += d->len;
		in->t_last = t;
	}
	if (in->got + in->bad >= in->frames)
		pthread_cond_broadcast(&in->cond);
	pthread_mutex_unlock(&in->lock);
	return false;   /* checked: the group may reuse the memory now */
}

static void note_failure(struct ingest *in, const char *what)
{
	pthread_mutex_lock(&in->lock);
	if (!in->failed)
		snprintf(in->why, sizeof(in->why), "%s", what);
	in->failed = true;
	pthread_cond_broadcast(&in->cond);
	pthread_mutex_unlock(&in->lock);
}

static void on_failure(void *ctx, uint32_t member, const char *why)
{
	char what[256];

	snprintf(what, sizeof(what), "member %u failed: %s", member, why);
	note_failure(ctx, what);
}

static void on_send_failed(void *ctx, const struct buf_desc *d, int code,
			   const char *why)
{
	char what[256];

	snprintf(what, sizeof(what), "a frame of %zu bytes was not sent: %s (%s)",
		 d->len, group_strerror(code), why);
	note_failure(ctx, what);
}

/* ---- the producer ------------------------------------------------------ */

/* One lease of up to BATCH buffers, filled in `order` by the threads. */
struct batch {
	struct ingest *in;
	uint64_t first;               /* frame number of bufs[0] */
	unsigned n;
	struct buf_desc bufs[BATCH];
	unsigned order[BATCH];
	atomic_uint next;             /* next index into order */
	atomic_bool stop;
};

static void *filler(void *arg)
{
	struct batch *b = arg;
	struct squall_error err;
	unsigned k, i;
	int ret;

	while (!atomic_load(&b->stop) &&
	       (k = atomic_fetch_add(&b->next, 1)) < b->n) {
		i = b->order[k];
		fill_frame(&b->bufs[i], b->first + i);
		/* Full: send it now, from this thread. The group owns it
		 * from here on and gives it back when every member has it. */
		ret = group_ordered_send(b->in->g, &b->bufs[i], &err);
		if (ret) {
			char what[SQUALL_ERRMSG_MAX + 64];

			snprintf(what, sizeof(what), "group_ordered_send: %s",
				 err.msg);
			note_failure(b->in, what);
			atomic_store(&b->stop, true);
		}
	}
	return NULL;
}

/* Fill and send frames [first, first+n): lease them all at once, then let
 * FILL_THREADS threads take them in a shuffled order. */
static int produce_batch(struct ingest *in, struct batch *b, uint64_t first,
			 unsigned n)
{
	struct alloc *a = group_get_allocator(in->g);
	size_t sizes[BATCH];
	pthread_t th[FILL_THREADS];
	unsigned i, t;
	int ret;

	b->in = in;
	b->first = first;
	b->n = n;
	for (i = 0; i < n; i++) {
		sizes[i] = frame_size(first + i);
		b->order[i] = i;
	}
	for (i = n - 1; i > 0; i--) {
		unsigned j = (unsigned)(ex_mix(first * BATCH + i) % (i + 1));
		unsigned x = b->order[i];

		b->order[i] = b->order[j];
		b->order[j] = x;
	}
	/* The previous batch's buffers come back as members receive them:
	 * wait for room rather than fail. */
	ret = alloc_lease_wait(a, n, sizes, b->bufs, (unsigned)in->timeout_ms);
	if (ret) {
		char what[128];

		snprintf(what, sizeof(what), "alloc_lease of %u buffers: %s", n,
			 strerror(-ret));
		note_failure(in, what);
		return ret;
	}
	atomic_store(&b->next, 0);
	atomic_store(&b->stop, false);
	for (t = 0; t < FILL_THREADS; t++)
		if (pthread_create(&th[t], NULL, filler, b)) {
			note_failure(in, "pthread_create failed");
			atomic_store(&b->stop, true);
			break;
		}
	while (t--)
		pthread_join(th[t], NULL);
	return atomic_load(&b->stop) ? -EIO : 0;
}

static void produce(struct ingest *in)
{
	struct batch *b = calloc(1, sizeof(*b));
	uint64_t f, smc = 0, total = 0;
	uint32_t max_small = group_get_config(in->g)->smc_max_payload;

	if (!b) {
		note_failure(in, "out of memory");
		return;
	}
	for (f = 0; f < in->frames; f++) {
		total += frame_size(f);
		smc += frame_size(f) <= max_small;
	}
	printf("ingest: member %u produces %" PRIu64 " frames of %" PRIu64
	       " bytes in leases of %d (%" PRIu64 " of at most %u bytes go on "
	       "SMC, the rest on RDMC), filled by %d threads\n", in->me,
	       in->frames, total, BATCH, smc, max_small, FILL_THREADS);
	fflush(stdout);
	for (f = 0; f < in->frames; f += BATCH) {
		unsigned n = in->frames - f < BATCH ? (unsigned)(in->frames - f)
						    : BATCH;

		if (produce_batch(in, b, f, n))
			break;
	}
	free(b);
}

/* ---- setup -------------------------------------------------------------- */

__attribute__((noreturn)) static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: ingest --config GROUP.cfg [--id N] [--node NODE.cfg]\n"
		"              [--set section.key=value]... [--frames N]\n"
		"              [--producer ID] [--timeout-ms MS]\n");
	exit(code);
}

static void parse(int argc, char **argv, struct ingest *in,
		  struct group_config *cfg)
{
	static const struct option lo[] = {
		{ "config", required_argument, 0, 'c' },
		{ "id", required_argument, 0, 'i' },
		{ "node", required_argument, 0, 'n' },
		{ "set", required_argument, 0, 's' },
		{ "frames", required_argument, 0, 'f' },
		{ "producer", required_argument, 0, 'p' },
		{ "timeout-ms", required_argument, 0, 't' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct ex_group_args ga = { 0 };
	const char *producer = NULL;
	int c;

	in->frames = 64;
	in->timeout_ms = 600000;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c': ga.config = optarg; break;
		case 'i': ga.id = optarg; break;
		case 'n': ga.node = optarg; break;
		case 's': ex_add_set("ingest", &ga, optarg); break;
		case 'f': in->frames = ex_number("ingest", "--frames", optarg); break;
		case 'p': producer = optarg; break;
		case 't':
			in->timeout_ms = (int)ex_number("ingest", "--timeout-ms", optarg);
			break;
		case 'h': usage(0);
		default: usage(2);
		}
	}
	if (optind != argc || in->frames == 0 || in->frames > (1u << 30) ||
	    in->timeout_ms <= 0)
		usage(2);
	in->me = ex_load_group("ingest", &ga, cfg);
	in->producer = cfg->members[0].id;
	if (producer) {
		uint64_t p = ex_number("ingest", "--producer", producer);

		if (p > UINT32_MAX ||
		    group_config_member_index(cfg, (uint32_t)p) < 0) {
			fprintf(stderr, "ingest: --producer %s is not a member of %s\n",
				producer, cfg->path);
			exit(2);
		}
		in->producer = (uint32_t)p;
	}
}

/* Wait until every frame is in (or something failed, or time is up). */
static void wait_frames(struct ingest *in)
{
	struct timespec dl;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += in->timeout_ms / 1000;
	dl.tv_nsec += (long)(in->timeout_ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&in->lock);
	while (in->got + in->bad < in->frames && !in->failed)
		if (pthread_cond_timedwait(&in->cond, &in->lock, &dl) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&in->lock);
}

int main(int argc, char **argv)
{
	static struct ingest in;
	struct group_callbacks cb = {
		.deliver = on_deliver,
		.failure = on_failure,
		.send_failed = on_send_failed,
	};
	struct group_config cfg;
	struct group_stats st;
	struct squall_error err;
	pthread_condattr_t ca;
	uint64_t copies;
	double t0, dt;
	bool ok;
	int ret;

	parse(argc, argv, &in, &cfg);
	in.seen = calloc(in.frames, 1);
	if (!in.seen)
		return 1;
	pthread_mutex_init(&in.lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&in.cond, &ca);

	in.g = group_create_cfg(&cfg, in.me, &cb, &in, &err);
	if (!in.g) {
		fprintf(stderr, "ingest: member %u: %s\n", in.me, err.msg);
		return 1;
	}
	/* Start the clock together: every member is up and listening. */
	ret = group_barrier(in.g, in.timeout_ms, &err);
	if (ret) {
		fprintf(stderr, "ingest: member %u: group_barrier: %s\n", in.me,
			err.msg);
		group_close(in.g, 0, NULL);
		return 1;
	}
	t0 = ex_now();
	if (in.me == in.producer)
		produce(&in);
	wait_frames(&in);
	group_stats(in.g, &st);
	copies = st.copies + st.payload_copies;
	if (in.me == in.producer)
		printf("ingest: member %u sent %" PRIu64 " (SMC %" PRIu64
		       ", RDMC %" PRIu64 "), %" PRIu64 " sends waited for room\n",
		       in.me, st.sent, st.sent_smc, st.sent_rdmc, st.send_waits);
	ret = group_close(in.g, in.timeout_ms, &err);
	if (ret)
		fprintf(stderr, "ingest: member %u: group_close: %s\n", in.me,
			err.msg);

	pthread_mutex_lock(&in.lock);
	dt = in.got ? in.t_last - t0 : 0;
	if (dt <= 0)
		dt = 1e-9;
	printf("INGEST member=%u frames=%" PRIu64 " bytes=%" PRIu64
	       " bad=%" PRIu64 " frames_per_s=%.1f MiB_per_s=%.2f copies=%"
	       PRIu64 "\n", in.me, in.got, in.bytes, in.bad, in.got / dt,
	       in.bytes / 1048576.0 / dt, copies);
	if (in.failed)
		fprintf(stderr, "ingest: member %u: %s\n", in.me, in.why);
	if (in.got != in.frames)
		fprintf(stderr, "ingest: member %u: %" PRIu64 " of %" PRIu64
			" frames arrived intact\n", in.me, in.got, in.frames);
	if (copies)
		fprintf(stderr, "ingest: member %u: the group copied %" PRIu64
			" payloads\n", in.me, copies);
	ok = in.got == in.frames && !in.bad && !in.failed && !copies && !ret;
	pthread_mutex_unlock(&in.lock);
	free(in.seen);
	return ok ? 0 : 1;
}
