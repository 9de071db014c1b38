/*
 * simulate - run the view-change simulator (tests/sim/vc_sim.h) over many
 * seeds, or replay one with its trace.
 *
 * usage: simulate [--seeds N] [--first S] [--members MIN-MAX] [--views V]
 *                 [--plant-early-delivery] [--plant-leave-early]
 *                 [--plant-leaver-delivers] [--plant-have-while-wedged]
 *                 [--plant-abort-one-phase] [--plant-skip-resend]
 *                 [--small-only]
 *        simulate --seed S [--trace] [--members MIN-MAX] [--views V]
 *                 [--plant-early-delivery] [--plant-leave-early]
 *                 [--plant-leaver-delivers] [--plant-have-while-wedged]
 *                 [--plant-abort-one-phase] [--plant-skip-resend]
 *                 [--small-only]
 * --small-only: no large messages, and the event mix of the simulator
 * before it modelled them (seeds found then replay exactly).
 * --views V: go on into the view the members install, and the next, up
 * to V views in all (default 1; a seed's first view is the same for
 * every V).
 * Prints each violating seed with what it broke, then
 *   SUMMARY simulate schedules=N violations=V members=MIN-MAX views=W schedules_per_s=R
 * (W: the views simulated, over all schedules)
 * and exits 1 when V > 0.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tests/sim/vc_sim.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr, "usage: simulate [--seeds N] [--first S] "
		"[--members MIN-MAX] [--views V] [--plant-early-delivery] "
		"[--plant-leave-early]\n"
		"                [--plant-leaver-delivers] [--plant-have-while-wedged]\n"
		"                [--plant-abort-one-phase] [--plant-skip-resend]\n"
		"                [--small-only]\n"
		"       simulate --seed S [--trace] [--members MIN-MAX] [--views V] "
		"[--plant-early-delivery] [--plant-leave-early]\n"
		"                [--plant-leaver-delivers] [--plant-have-while-wedged]\n"
		"                [--plant-abort-one-phase] [--plant-skip-resend]\n"
		"                [--small-only]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seeds", required_argument, 0, 'n' },
		{ "first", required_argument, 0, 'f' },
		{ "seed", required_argument, 0, 's' },
		{ "trace", no_argument, 0, 't' },
		{ "members", required_argument, 0, 'm' },
		{ "plant-early-delivery", no_argument, 0, 'S' },
		{ "plant-leave-early", no_argument, 0, 'L' },
		{ "plant-leaver-delivers", no_argument, 0, 'D' },
		{ "plant-have-while-wedged", no_argument, 0, 'H' },
		{ "plant-abort-one-phase", no_argument, 0, 'A' },
		{ "small-only", no_argument, 0, 'O' },
		{ "plant-skip-resend", no_argument, 0, 'R' },
		{ "views", required_argument, 0, 'V' },
		{ 0, 0, 0, 0 },
	};
	struct vc_sim_opts o = { .nmin = 3, .nmax = 7 };
	uint64_t seeds = 1000, first = 1, bad = 0, nviews = 0;
	bool one = false, tr = false;
	double t0, dt;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'n': seeds = strtoull(optarg, NULL, 0); break;
		case 'f': first = strtoull(optarg, NULL, 0); break;
		case 's': first = strtoull(optarg, NULL, 0); one = true; break;
		case 't': tr = true; break;
		case 'm':
			if (sscanf(optarg, "%u-%u", &o.nmin, &o.nmax) != 2 ||
			    o.nmin < 3 || o.nmax > 7 || o.nmin > o.nmax)
				usage();
			break;
		case 'S': o.plant_early_delivery = true; break;
		case 'L': o.plant_leave_early = true; break;
		case 'D': o.plant_leaver_delivers = true; break;
		case 'H': o.plant_have_while_wedged = true; break;
		case 'A': o.plant_abort_one_phase = true; break;
		case 'O': o.small_only = true; break;
		case 'R': o.plant_skip_resend = true; break;
		case 'V':
			o.views = (uint32_t)strtoul(optarg, NULL, 0);
			if (o.views < 1 || o.views > 64)
				usage();
			break;
		default: usage();
		}
	}
	if (optind != argc || seeds == 0)
		usage();
	if (one)
		seeds = 1;
	if (tr)
		o.trace = stdout;
	t0 = now_s();
	for (uint64_t i = 0; i < seeds; i++) {
		struct vc_sim_result r;

		o.seed = first + i;
		if (vc_sim_run(&o, &r)) {
			bad++;
			printf("VIOLATION seed=%" PRIu64 " members=%u views=%u: "
			       "%s\n", o.seed, r.n, r.views, r.first);
		} else if (one) {
			printf("seed %" PRIu64 ": %u members, %u view%s, %" PRIu64
			       " events, %u crashes, %u partitions, %u closes, "
			       "%u joins; in the last view %u installed the next, "
			       "%u left, %u flushed, %u stopped: no violation\n",
			       o.seed, r.n, r.views, r.views == 1 ? "" : "s",
			       r.events, r.crashes, r.partitions, r.closes,
			       r.joins, r.installed, r.left, r.flushed,
			       r.stopped);
		}
		nviews += r.views;
	}
	dt = now_s() - t0;
	printf("SUMMARY simulate schedules=%" PRIu64 " violations=%" PRIu64
	       " members=%u-%u views=%" PRIu64 " schedules_per_s=%.0f\n",
	       seeds, bad, o.nmin, o.nmax, nviews,
	       dt > 0 ? (double)seeds / dt : 0.0);
	return bad ? 1 : 0;
}
