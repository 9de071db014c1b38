/*
 * kvstore - a replicated key-value store on a squall group.
 *
 * Every member applies puts and deletes in delivery order, so every member
 * holds the same table; gets are served from the local copy. Commands come
 * from a script file, from stdin, or are generated (--random N: N random
 * puts and deletes over a small key space, so that deletes hit). Each
 * command is one ordered message written straight into a leased buffer:
 *   "P <key> <value>"   put
 *   "D <key>"           delete
 * Script lines: "put KEY VALUE", "del KEY", "get KEY" (prints the local
 * value now), "barrier" (waits for every member to reach its barrier);
 * '#' starts a comment.
 *
 * At the end each member closes the group (which delivers every command any
 * member sent before closing) and prints one line:
 *   KVSTORE member=ID sent=S applied=A keys=K state_hash=H order_hash=O
 *           last_seq=Q
 * state_hash depends only on the table's contents, order_hash on the exact
 * sequence of commands applied; both agree on every member that was in
 * the group from the start. last_seq is the position in the group's order
 * of the last command applied: the same on every member, joiners too.
 *
 * --join starts a member that joins the running group (group_join): it
 * receives the table from a member (the state-transfer upcalls below)
 * before it applies any command, and ends with the same state_hash.
 * --rate paces --random (commands per second). --start-barrier meets the
 * other members at a barrier before the first command (members that do
 * so start together). Each view is printed as
 *   VIEW member=ID epoch=E members=A,B,C
 *
 * usage: kvstore --config GROUP.cfg [--id N] [--node NODE.cfg]
 *                [--set section.key=value]... [--script FILE | --random N]
 *                [--seed S] [--rate R] [--join] [--start-barrier] [--quiet]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <squall/group.h>

#define KEY_MAX 64
#define VALUE_MAX 256
#define NBUCKETS 4096
#define MAX_SETS 32

struct entry {
	struct entry *next;
	char key[KEY_MAX + 1];
	char value[VALUE_MAX + 1];
};

struct store {
	struct entry *b[NBUCKETS];
	uint64_t keys;
	uint64_t applied;
	uint64_t order_hash;
	uint64_t last_seq;
	uint64_t bad;
	struct group *g;
};

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const uint8_t *s = p;

	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define FNV0 0xcbf29ce484222325ull

static struct entry **slot(struct store *st, const char *key)
{
	struct entry **e = &st->b[fnv(key, strlen(key), FNV0) % NBUCKETS];

	while (*e && strcmp((*e)->key, key))
		e = &(*e)->next;
	return e;
}

static void put(struct store *st, const char *key, const char *value)
{
	struct entry **e = slot(st, key);

	if (!*e) {
		*e = calloc(1, sizeof(**e));
		if (!*e) {
			st->bad++;
			return;
		}
		snprintf((*e)->key, sizeof((*e)->key), "%.64s", key);
		st->keys++;
	}
	snprintf((*e)->value, sizeof((*e)->value), "%.256s", value);
}

static void del(struct store *st, const char *key)
{
	struct entry **e = slot(st, key), *x = *e;

	if (!x)
		return;
	*e = x->next;
	free(x);
	st->keys--;
}

/* A hash of the contents alone: the same table gives the same hash
 * whatever order the buckets' chains were built in. */
static uint64_t state_hash(const struct store *st)
{
	uint64_t h = 0;

	for (int i = 0; i < NBUCKETS; i++)
		for (const struct entry *e = st->b[i]; e; e = e->next) {
			uint64_t x = fnv(e->key, strlen(e->key) + 1, FNV0);

			x = fnv(e->value, strlen(e->value), x);
			h += x * 0x9e3779b97f4a7c15ull | 1;
		}
	return h ^ st->keys;
}

/* The delivery upcall: apply one command, in the group's order. */
static bool deliver(void *ctx, uint32_t sender, uint64_t seq,
		    const struct buf_desc *d)
{
	struct store *st = ctx;
	char cmd[KEY_MAX + VALUE_MAX + 8];
	char *key, *value;
	size_t n = d->len < sizeof(cmd) - 1 ? d->len : sizeof(cmd) - 1;

	memcpy(cmd, d->ptr, n);
	cmd[n] = 0;
	st->order_hash = fnv(&sender, sizeof(sender), st->order_hash);
	st->order_hash = fnv(&seq, sizeof(seq), st->order_hash);
	st->order_hash = fnv(cmd, n, st->order_hash);
	st->applied++;
	st->last_seq = seq;
	key = cmd + 2;
	if (cmd[0] == 'P' && cmd[1] == ' ' && (value = strchr(key, ' '))) {
		*value++ = 0;
		put(st, key, value);
	} else if (cmd[0] == 'D' && cmd[1] == ' ') {
		del(st, key);
	} else {
		st->bad++;
	}
	return false;
}

static void on_failure(void *ctx, uint32_t member, const char *why)
{
	(void)ctx;
	fprintf(stderr, "kvstore: member %u failed: %s\n", member, why);
}

static void on_view(void *ctx, const struct group_view *v)
{
	(void)ctx;
	printf("VIEW member=%u epoch=%" PRIu64 " members=", v->my_id, v->epoch);
	for (uint32_t i = 0; i < v->nmembers; i++)
		printf("%s%u", i ? "," : "", v->members[i]);
	printf("\n");
	fflush(stdout);
}

/* State transfer: the table as "key value" lines. */
static int state_save(void *ctx, void **data, size_t *len)
{
	struct store *st = ctx;
	size_t cap = st->keys * (KEY_MAX + VALUE_MAX + 2) + 1, n = 0;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < NBUCKETS; i++)
		for (const struct entry *e = st->b[i]; e; e = e->next)
			n += (size_t)snprintf(buf + n, cap - n, "%s %s\n",
					      e->key, e->value);
	*data = buf;
	*len = n;
	return 0;
}

static void state_load(void *ctx, const void *data, size_t len)
{
	struct store *st = ctx;
	char *text = malloc(len + 1), *line, *save = NULL;

	if (!text) {
		st->bad++;
		return;
	}
	memcpy(text, data, len);
	text[len] = 0;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *value = strchr(line, ' ');

		if (!value) {
			st->bad++;
			continue;
		}
		*value++ = 0;
		put(st, line, value);
	}
	free(text);
	printf("STATE loaded keys=%" PRIu64 " table_hash=%016" PRIx64 "\n",
	       st->keys, state_hash(st));
	fflush(stdout);
}

/* Send one command: lease a buffer, write the command into it, send. */
static int submit(struct store *st, const char *fmt, const char *key,
		  const char *value)
{
	struct alloc *a = group_get_allocator(st->g);
	struct squall_error err;
	char line[KEY_MAX + VALUE_MAX + 8];
	size_t len;
	struct buf_desc d;
	int r;

	len = (size_t)snprintf(line, sizeof(line), fmt, key, value);
	if (len >= sizeof(line))
		len = sizeof(line) - 1;
	r = alloc_lease_wait(a, 1, &len, &d, 10000);
	if (r) {
		fprintf(stderr, "kvstore: no lease: %s\n", strerror(-r));
		return r;
	}
	memcpy(d.ptr, line, len);
	r = group_ordered_send(st->g, &d, &err);
	if (r) {
		fprintf(stderr, "kvstore: send: %s\n", err.msg);
		alloc_release(a, &d);
	}
	return r;
}

static int run_script(struct store *st, FILE *f, bool quiet)
{
	char line[1024], key[KEY_MAX + 1], value[VALUE_MAX + 1];
	struct squall_error err;
	unsigned lineno = 0;
	int r = 0;

	while (!r && fgets(line, sizeof(line), f)) {
		char verb[16];
		int n;

		lineno++;
		if (line[0] == '#' || sscanf(line, "%15s", verb) != 1)
			continue;
		if (!strcmp(verb, "put") &&
		    sscanf(line, "%*s %64s %256s", key, value) == 2) {
			r = submit(st, "P %s %s", key, value);
		} else if (!strcmp(verb, "del") &&
			   sscanf(line, "%*s %64s", key) == 1) {
			r = submit(st, "D %s%s", key, "");
		} else if (!strcmp(verb, "get") &&
			   sscanf(line, "%*s %64s", key) == 1) {
			/* Served locally: what this member has applied so far
			 * (the progress thread applies concurrently, so the
			 * answer is a snapshot, as a replica's read is). */
			struct entry *e = *slot(st, key);

			if (!quiet)
				printf("GET %s=%s\n", key, e ? e->value : "(none)");
		} else if (!strcmp(verb, "barrier")) {
			r = group_barrier(st->g, 600000, &err);
			if (r)
				fprintf(stderr, "kvstore: barrier: %s\n", err.msg);
		} else {
			n = (int)strcspn(line, "\n");
			fprintf(stderr, "kvstore: script line %u: cannot read "
				"'%.*s' (put KEY VALUE, del KEY, get KEY, "
				"barrier)\n", lineno, n, line);
			r = -EINVAL;
		}
	}
	return r;
}

static int run_random(struct store *st, unsigned long n, unsigned seed,
		      unsigned rate)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + group_my_id(st->g) + 1;
	char key[32], value[64];
	int r = 0;

	for (unsigned long i = 0; i < n && !r; i++) {
		if (rate)
			nanosleep(&(struct timespec){ 0, 1000000000L / rate },
				  NULL);
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		snprintf(key, sizeof(key), "k%03u", (unsigned)(x % 500));
		if (x >> 60 < 4) {
			r = submit(st, "D %s%s", key, "");
		} else {
			snprintf(value, sizeof(value), "m%u-%lu-%016" PRIx64,
				 group_my_id(st->g), i, x);
			r = submit(st, "P %s %s", key, value);
		}
	}
	return r;
}

__attribute__((noreturn)) static void usage(int code)
{
	fprintf(code ? stderr : stdout, "usage: kvstore --config GROUP.cfg [--id N] "
		"[--node NODE.cfg] [--set section.key=value]... "
		"[--script FILE | --random N] [--seed S] [--rate R] [--join] "
		"[--start-barrier] "
		"[--quiet]\n");
	exit(code);
}

/* One line on stderr naming the member once: the group's messages
 * already start with "member N:". */
static void say_error(long id, const char *what, const char *msg)
{
	char mine[32];

	snprintf(mine, sizeof(mine), "member %ld:", id);
	if (!strncmp(msg, mine, strlen(mine)))
		fprintf(stderr, "kvstore: %s%s\n", what, msg);
	else
		fprintf(stderr, "kvstore: member %ld: %s%s\n", id, what, msg);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "config", required_argument, 0, 'c' },
		{ "id", required_argument, 0, 'i' },
		{ "node", required_argument, 0, 'n' },
		{ "set", required_argument, 0, 's' },
		{ "script", required_argument, 0, 'f' },
		{ "random", required_argument, 0, 'r' },
		{ "seed", required_argument, 0, 'S' },
		{ "quiet", no_argument, 0, 'q' },
		{ "rate", required_argument, 0, 'R' },
		{ "join", no_argument, 0, 'j' },
		{ "start-barrier", no_argument, 0, 'B' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *cfg_path = NULL, *node = NULL, *script = NULL, *id = NULL;
	const char *sets[MAX_SETS];
	size_t nsets = 0;
	unsigned long nrandom = 0;
	unsigned seed = 1;
	bool quiet = false, join = false, start_barrier = false;
	unsigned rate = 0;
	struct group_config *cfg = calloc(1, sizeof(*cfg));
	struct group_callbacks cb = {
		.deliver = deliver,
		.failure = on_failure,
		.view = on_view,
		.state_save = state_save,
		.state_load = state_load,
	};
	struct store *st = calloc(1, sizeof(*st));
	struct squall_error err;
	struct group_stats gs;
	uint64_t sent;
	long my_id;
	int c, r;

	if (!cfg || !st)
		return 1;
	st->order_hash = FNV0;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c': cfg_path = optarg; break;
		case 'i': id = optarg; break;
		case 'n': node = optarg; break;
		case 's':
			if (nsets == MAX_SETS)
				usage(2);
			sets[nsets++] = optarg;
			break;
		case 'f': script = optarg; break;
		case 'r': nrandom = strtoul(optarg, NULL, 0); break;
		case 'S': seed = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'q': quiet = true; break;
		case 'R': rate = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'j': join = true; break;
		case 'B': start_barrier = true; break;
		case 'h': usage(0);
		default: usage(2);
		}
	}
	if (!cfg_path || optind != argc)
		usage(2);
	if (group_config_load_with(cfg_path, node, sets, nsets, cfg, &err)) {
		fprintf(stderr, "kvstore: %s\n", err.msg);
		return 1;
	}
	my_id = group_config_my_id(cfg, id, &err);
	if (my_id < 0) {
		fprintf(stderr, "kvstore: %s\n", err.msg);
		return 1;
	}
	st->g = join ? group_join_cfg(cfg, (uint32_t)my_id, &cb, st, &err)
		     : group_create_cfg(cfg, (uint32_t)my_id, &cb, st, &err);
	if (!st->g) {
		say_error(my_id, "", err.msg);
		return 1;
	}
	r = 0;
	if (start_barrier && group_barrier(st->g, 600000, &err)) {
		say_error(my_id, "barrier: ", err.msg);
		r = -EIO;
	} else if (nrandom) {
		r = run_random(st, nrandom, seed, rate);
	} else if (script) {
		FILE *f = fopen(script, "r");

		if (!f) {
			fprintf(stderr, "kvstore: %s: %s\n", script, strerror(errno));
			r = -errno;
		} else {
			r = run_script(st, f, quiet);
			fclose(f);
		}
	} else {
		r = run_script(st, stdin, quiet);
	}
	group_stats(st->g, &gs);
	sent = gs.sent;
	/* Close together, so every member applies every command: a member
	 * that closed while the others still sent would leave the group. */
	if (!r && group_barrier(st->g, 600000, &err)) {
		say_error(my_id, "barrier: ", err.msg);
		r = -EIO;
	}
	if (group_close(st->g, 600000, &err)) {
		say_error(my_id, "close: ", err.msg);
		r = r ? r : -EIO;
	}
	printf("KVSTORE member=%ld sent=%" PRIu64 " applied=%" PRIu64
	       " keys=%" PRIu64 " state_hash=%016" PRIx64 " order_hash=%016"
	       PRIx64 " last_seq=%" PRIu64 "%s\n", my_id, sent, st->applied,
	       st->keys, state_hash(st), st->order_hash, st->last_seq,
	       st->bad ? " BAD-COMMANDS" : "");
	return r || st->bad ? 1 : 0;
}
