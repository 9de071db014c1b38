/*
 * predicates.h - the predicate engine of the SST (sst/predicates.c).
 *
 * Separate from the table and the transport so that its scheduling logic
 * (which predicate fires when, removal from inside a trigger, removal from
 * another thread while a trigger runs) is tested natively.
 */
#ifndef SQUALL_SST_PREDICATES_H
#define SQUALL_SST_PREDICATES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <squall/sst.h>

struct sst_pred;

struct sst_preds {
	pthread_mutex_t lock;      /* guards the lists, flags and running */
	pthread_cond_t idle;       /* signalled when a trigger returns */
	struct sst *owner;         /* handed to every predicate and trigger */
	struct sst_pred *active;   /* evaluated in registration order */
	struct sst_pred **tail;    /* &last->next of active */
	struct sst_pred *incoming; /* added since the last pass began */
	struct sst_pred **in_tail;
	struct sst_pred *running;  /* whose predicate/trigger is executing */
	pthread_t pass_thread;     /* the thread of the pass under way */
	bool in_pass;
	uint64_t next_id;
	size_t count;              /* registered and not removed */
	uint64_t fired;            /* triggers run, ever */
};

/* Set up an empty engine whose callbacks receive `owner`. */
int sst_preds_init(struct sst_preds *e, struct sst *owner);

/* Free every registration. No pass may be under way. */
void sst_preds_destroy(struct sst_preds *e);

/* Register; the predicate takes part from the next pass on. Any thread,
 * including from inside a predicate or trigger. */
int sst_preds_add(struct sst_preds *e, enum sst_pred_kind kind,
		  sst_pred_fn pred, sst_trigger_fn trig, void *arg,
		  sst_pred_id *id);

/* Unregister. After it returns the predicate is not evaluated and its
 * trigger does not start again; called from another thread while the
 * trigger runs, it waits for the trigger to return. Returns -ENOENT for an
 * unknown id or a one-shot that has already fired. */
int sst_preds_remove(struct sst_preds *e, sst_pred_id id);

/* One evaluation pass over every registered predicate, in registration
 * order. Returns the number of triggers run. Only one thread at a time. */
unsigned sst_preds_eval(struct sst_preds *e);

/* Registered predicates not yet removed. */
size_t sst_preds_count(struct sst_preds *e);

/*
 * The idle back-off policy of the progress thread, as a state machine fed
 * with "did this pass see work" and a clock, so that it is testable.
 *
 * SPIN: poll again at once. After a pass with work the member keeps
 * spinning; once it has seen no work for the spin window (and at least
 * min_polls passes) it goes to ARM: the caller arms its wake-up sources and
 * runs one more pass, because work that arrived between the last pass and
 * the arming would otherwise be missed. If that pass sees work it is back
 * to SPIN; if not, BLOCK: the caller sleeps in a wait that a completion or a
 * local push ends, and calls sst_idle_woken after it.
 *
 * The spin window adapts, so that a fixed window shorter than the wake-up
 * cost cannot make two members that answer each other sleep on every
 * exchange: when a sleep of d ns ends with work and d is at most spin_max,
 * the window grows to 2d if that is more (bounded by spin_max); a sleep
 * that ends with work after longer than spin_max (sparse traffic, or a
 * stall) halves it, down to spin_min. A wake-up that finds no work (a timer, the completion of the
 * member's own write) leaves the window alone and re-arms at once instead
 * of spinning, so an idle member pays one pass per wake-up.
 *
 * Reading the clock is not free (a system call on some virtual machines),
 * so the machine says when it needs one: sst_idle_needs_clock. Passes
 * without a clock reading pass now = 0.
 *
 * A crowded CPU: an idle spin gives the CPU away (sched_yield) between
 * passes, and the caller says how long each such yield took
 * (sst_idle_yielded). A yield that comes back after SST_IDLE_YIELD_SLOW_NS
 * or more found another thread waiting for the CPU: spinning there takes
 * time that thread needs (on a host with fewer CPUs than busy threads, a
 * Soft-RoCE device's own work in the kernel among them). Over each
 * SST_IDLE_YIELD_SAMPLE idle yields, when a quarter or more were slow the
 * member counts as crowded until a sample says otherwise: its window
 * grows no further than SST_IDLE_CROWDED_SPINS x spin_min (long enough
 * for an answer to come back, too short to spin through the gaps between
 * messages), and up to spin_max again once the CPU is its own. With a CPU
 * to itself every yield comes straight back, and the window adapts as
 * above.
 *
 * A yield does not always give the CPU away: Linux's fair scheduler hands
 * it straight back to a thread that has run less than the one waiting, as
 * an idle spinner has, so on 2 CPUs shared by 3 members' busy threads
 * (Soft-RoCE's kernel work on top) almost every yield came back fast while
 * the one sender's thread got a third less CPU than with sleeping
 * receivers. So the member also counts as crowded while its own share of
 * the CPU, over the time it wanted one (spinning or working, not asleep),
 * stays below SST_IDLE_SHARE_LOW_PCT: the caller measures that share about
 * every SST_IDLE_SHARE_EVERY_NS and passes it to sst_idle_cpu_share. The
 * verdict is taken back by a share of SST_IDLE_SHARE_HIGH_PCT or more (a
 * thread alone on its CPU gets nearly all of it; between the two marks
 * the verdict stands, so that a member whose shorter window left it a
 * little more CPU does not go straight back to long spins), or by a
 * period in which the member wanted the CPU less than
 * SST_IDLE_SHARE_MIN_NS (it mostly sleeps and takes little from anyone).
 * Either verdict, yields or share, keeps the window short.
 */
#define SST_IDLE_YIELD_SLOW_NS 20000u
#define SST_IDLE_YIELD_SAMPLE 64u
#define SST_IDLE_CROWDED_SPINS 3u
#define SST_IDLE_SHARE_EVERY_NS 10000000ull
#define SST_IDLE_SHARE_MIN_NS 2000000ull
#define SST_IDLE_SHARE_LOW_PCT 75u
#define SST_IDLE_SHARE_HIGH_PCT 90u
enum sst_idle_action {
	SST_IDLE_SPIN,
	SST_IDLE_ARM,
	SST_IDLE_BLOCK,
};

struct sst_idle {
	enum sst_idle_policy policy; /* ADAPTIVE unless sst_idle_set_policy */
	uint64_t spin_min_ns;
	uint64_t spin_max_ns;
	uint64_t spin_ns;          /* the current window */
	uint32_t min_polls;        /* idle passes before arming, at least */
	uint32_t clock_every;      /* idle passes between clock readings */
	enum sst_idle_action state;
	uint64_t last_work_ns;     /* 0: work seen, not yet timed */
	uint32_t idle_polls;
	bool after_wake;           /* the next pass is the first after a wait */
	uint64_t block_ns;         /* when the last wait began */
	uint64_t blocks;           /* times the member went to sleep */
	uint32_t yields;           /* idle yields in the current sample */
	uint32_t slow_yields;      /* ... of which slow */
	bool yields_crowded;       /* the last whole sample of yields said so */
	bool share_crowded;        /* the last share of the CPU said so */
	bool crowded;              /* either */
};

void sst_idle_init(struct sst_idle *s, uint64_t spin_min_ns,
		   uint64_t spin_max_ns, uint32_t min_polls,
		   uint32_t clock_every, uint64_t now_ns);

/* SPIN: the machine never leaves SST_IDLE_SPIN. BLOCK: a pass without
 * work arms at once (no window), and sleeps do not adapt anything. */
void sst_idle_set_policy(struct sst_idle *s, enum sst_idle_policy policy);

/* Whether the pass just run (which saw work or not) needs a clock reading
 * for sst_idle_after_pass. */
bool sst_idle_needs_clock(const struct sst_idle *s, bool work);

/* Feed the outcome of one pass; now_ns is a clock reading when
 * sst_idle_needs_clock asked for one, else 0 (or a reading anyway).
 * Returns what to do next. */
enum sst_idle_action sst_idle_after_pass(struct sst_idle *s, bool work,
					 uint64_t now_ns);

/* The caller returns from its blocking wait (woken or timed out). */
void sst_idle_woken(struct sst_idle *s);

/* Whether the caller should time its idle yields for sst_idle_yielded
 * and measure its share of the CPU for sst_idle_cpu_share (ADAPTIVE only:
 * the other policies use neither). */
bool sst_idle_measures_cpu(const struct sst_idle *s);

/* The caller gave the CPU away on an idle spin pass (SST_IDLE_SPIN after
 * a pass without work) and got it back took_ns later. */
void sst_idle_yielded(struct sst_idle *s, uint64_t took_ns);

/* Over the last period the caller wanted the CPU for want_ns (its wall
 * time less the time it slept) and ran for cpu_ns of it (its thread's CPU
 * time). ADAPTIVE only, like the yields. */
void sst_idle_cpu_share(struct sst_idle *s, uint64_t want_ns, uint64_t cpu_ns);

#endif /* SQUALL_SST_PREDICATES_H */
