/*
 * sst.h - the shared state table: squall's control plane.
 *
 * One row per member, with columns declared once when the group starts
 * (64-bit counters, flags, small fixed arrays). Every member holds a copy
 * of the whole table in its region; it writes only its own row and pushes
 * it (or a column range of it) into every peer's copy with one-sided RDMA
 * writes. A progress thread evaluates registered predicates over the local
 * copy and runs their triggers, advances a heartbeat column and suspects
 * members whose heartbeat stops or whose writes fail.
 *
 * Row format. A row is a sequence of segments, each the unit that a push
 * writes and a reader validates: the segment's fields, then a 16-byte
 * trailer {seq, check}. Segment 0 is the 64-byte row header the SST uses
 * (SST_HDR_*: fingerprint, heartbeat, suspicions, its trailer at
 * SST_HDR_SEQ); then the declared columns in declaration order, each
 * starting a segment of its own unless it is declared `with_prev` (then it
 * shares the segment of the column before it, and readers see both from
 * the same push). Every field starts on an 8-byte boundary; a field of at
 * most 64 bytes never straddles a cache line, a larger one starts on a
 * line; a trailer never straddles a line; rows are padded to whole cache
 * lines. The same declaration gives the same layout on every member, and
 * the same fingerprint.
 *
 * Validation. The owner never lets the NIC read the row it writes: each
 * push copies the segments it sends into a snapshot slot that nothing
 * changes until the write has completed, stamps each with a sequence
 * number (one counter per segment, only growing) and a check (a 64-bit
 * keyed hash over the sequence and the segment's bytes; the key binds the
 * table's seed and fingerprint, the writer's rank and the segment), and
 * writes the slot. Whatever lands is therefore either a segment the owner
 * once sealed whole or a mix that fails its check. A reader never reads a
 * peer's landing bytes as values: the progress thread copies a segment
 * whose sequence moved, checks the copy, and takes it only when the check
 * holds and the sequence is newer than the one it has; sst_get and every
 * other read of a peer's row return the last copy taken. A segment that
 * fails its check is simply not taken (the next push brings a whole one);
 * one that keeps failing for sst.suspect_timeout_ms gets its writer
 * suspected, as silence does.
 *
 * Calls return 0 (or a value) or a negative errno; the library never prints.
 */
#ifndef SQUALL_SST_H
#define SQUALL_SST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <squall/error.h>

#define SST_CACHE_LINE 64
#define SST_COL_NAME_MAX 32
#define SST_MAX_COLUMNS 256
#define SST_ARRAY_MAX_BYTES 4096
/* Members a table can hold: one bit each in the suspicion word. */
#define SST_MAX_MEMBERS 64

/* The row header, at the start of every row. */
#define SST_HDR_FINGERPRINT 0  /* the table's fingerprint, 0 = not pushed yet */
#define SST_HDR_HEARTBEAT 8    /* advanced every heartbeat period */
#define SST_HDR_SUSPECTED 16   /* bit j: this member suspects member rank j */
#define SST_HDR_SEQ 48         /* the header segment's trailer */
#define SST_HDR_SIZE 64
/* Every segment ends with {seq, check}, 8 bytes each. */
#define SST_TRAILER_SIZE 16

/* What a column holds. */
enum sst_col_type {
	SST_COL_U64 = 1,   /* one 64-bit counter or value */
	SST_COL_FLAG,      /* one 64-bit word used as a boolean */
	SST_COL_U64_ARRAY, /* `count` 64-bit words */
	SST_COL_BYTES,     /* `count` bytes, padded to a multiple of 8 */
};

/* One column of the declaration. count: 0 or 1 for scalars; elements for
 * SST_COL_U64_ARRAY; bytes for SST_COL_BYTES (arrays hold at most
 * SST_ARRAY_MAX_BYTES bytes). Names are unique, 1..31 characters.
 * with_prev: the column joins the segment of the column before it, so a
 * reader never sees one of them newer than the other from one push
 * (columns a member publishes together, such as a decision and what it
 * covers); false: it starts a segment of its own. */
struct sst_column {
	const char *name;
	enum sst_col_type type;
	uint32_t count;
	bool with_prev;
};

/* ----- Layout ------------------------------------------------------------ */

struct sst_layout;

/* Compute the row layout of a declaration of ncols columns. Returns 0 with
 * *out set, or -EINVAL (err names the column) or -ENOMEM. */
int sst_layout_create(const struct sst_column *cols, uint32_t ncols,
		      struct sst_layout **out, struct squall_error *err);

/* Free a layout. Safe on NULL. */
void sst_layout_destroy(struct sst_layout *l);

/* Number of declared columns. */
uint32_t sst_layout_ncols(const struct sst_layout *l);

/* Index of the column called name, or -ENOENT. */
int sst_layout_find(const struct sst_layout *l, const char *name);

/* Byte offset of column col from the start of a row, its size in bytes,
 * its element count and its type. col must be < sst_layout_ncols(). */
size_t sst_layout_offset(const struct sst_layout *l, uint32_t col);
size_t sst_layout_col_size(const struct sst_layout *l, uint32_t col);
uint32_t sst_layout_col_count(const struct sst_layout *l, uint32_t col);
enum sst_col_type sst_layout_col_type(const struct sst_layout *l, uint32_t col);

/* Bytes of one row: the header plus every column, a multiple of
 * SST_CACHE_LINE. */
size_t sst_layout_row_size(const struct sst_layout *l);

/* A non-zero 64-bit digest of the declaration and the resulting layout
 * (names, types, counts, offsets, row size, placement rule version).
 * Members compare it to know they agree on the layout. */
uint64_t sst_layout_fingerprint(const struct sst_layout *l);

/* Bytes of a whole table of nmembers rows. */
size_t sst_table_size(const struct sst_layout *l, uint32_t nmembers);

/* Segments of a row (the header included) and the segment of column col. */
uint32_t sst_layout_nsegs(const struct sst_layout *l);
uint32_t sst_layout_col_segment(const struct sst_layout *l, uint32_t col);

/* ----- Predicates -------------------------------------------------------- */

struct sst;

typedef uint64_t sst_pred_id;

/* When a trigger runs. */
enum sst_pred_kind {
	SST_PRED_ONESHOT = 1, /* the first time the predicate holds; then gone */
	SST_PRED_RECURRENT,   /* every evaluation pass in which it holds */
	SST_PRED_TRANSITION,  /* every pass at which it goes from false to
				 true (it counts as false before its first
				 evaluation) */
};

/* A predicate reads the local table (sst_get and friends) and must not
 * block; a trigger may write and push the member's own row and add or
 * remove predicates, its own included. Both run on the progress thread. */
typedef bool (*sst_pred_fn)(struct sst *t, void *arg);
typedef void (*sst_trigger_fn)(struct sst *t, void *arg);

/* ----- The table --------------------------------------------------------- */

struct rdma_sq_node;

/* Called on the progress thread once per member the local member comes to
 * suspect: `rank` (index in the node's member list) is suspected, first by
 * member rank `by` (the local rank when this member detected it itself),
 * for the reason in `why`. When rank is the local member's own rank, some
 * peer suspects this member. */
typedef void (*sst_suspect_fn)(struct sst *t, uint32_t rank, uint32_t by,
			       const char *why, void *arg);

struct rdma_sq_wc;

/* Other parts that share the node with the SST (SMC, RDMC, the group):
 * the SST's progress thread is the member's one progress thread, takes
 * every completion of the node and hands over what is not its own. Each
 * hook returns true when it did work (the thread then keeps spinning).
 * All run on the progress thread; any may be NULL. */
struct sst_dispatch {
	/* A completion whose wr_id is not the SST's (another part's
	 * request, failed ones included). */
	bool (*on_wc)(void *arg, const struct rdma_sq_wc *wc);
	/* A WRITE_WITH_IMM from member rank whose immediate is not an SST
	 * push (SST pushes carry the pusher's rank, below SST_MAX_MEMBERS).
	 * The receive it consumed is posted again by the SST. */
	bool (*on_imm)(void *arg, uint32_t rank, uint32_t imm);
	/* A SEND from member rank arrived in buf (len bytes, valid during
	 * the call; the receive is posted again after it returns). */
	bool (*on_message)(void *arg, uint32_t rank, const void *buf,
			   uint32_t len);
	/* Once per progress pass, after the predicates. */
	bool (*on_pass)(void *arg);
	void *arg;
};

/* What the progress thread does when a pass finds no work.
 * ADAPTIVE: poll on for a spin window (sst_options spin_us, growing up to
 *   spin_max_us while sleeps keep ending with work soon after they begin,
 *   but no further than 3 x spin_us while the CPU is crowded: other
 *   threads wait for it, or the thread gets less than 75 % of the CPU it
 *   wants), then sleep until a completion or a local push wakes it: a busy
 *   member answers at polling speed, an idle one costs almost no CPU.
 * SPIN: never sleep: lowest latency, one CPU per member always busy
 *   (it yields to other runnable threads on its CPU between passes).
 * BLOCK: sleep as soon as a pass finds no work: least CPU, and every
 *   message that arrives at an idle member pays a wake-up (about 0.8 ms
 *   in the project's Soft-RoCE VM). */
enum sst_idle_policy {
	SST_IDLE_POLICY_ADAPTIVE = 0,
	SST_IDLE_POLICY_SPIN,
	SST_IDLE_POLICY_BLOCK,
};

/* Options for sst_create; zero fields take the defaults. */
struct sst_options {
	/* Heartbeat period and suspicion timeout; 0 = 100 and 1000 (a
	 * group passes its .cfg's sst.heartbeat_ms and
	 * sst.suspect_timeout_ms). */
	uint32_t heartbeat_ms;
	uint32_t suspect_timeout_ms;
	/* How long the progress thread keeps polling after the last work
	 * before it blocks: spin_us (default 50 us), stretched up to
	 * spin_max_us (default 20000 us) while sleeps keep ending with work
	 * soon after they begin (see sst_idle in sst/predicates.h). That is
	 * the adaptive policy, the default; idle may choose another. */
	uint32_t spin_us;
	uint32_t spin_max_us;
	enum sst_idle_policy idle;
	/* Writes to one peer not yet known complete (default 16) and one
	 * signaled completion every signal_every writes (default 8). The
	 * node's send queues must hold max_inflight requests. */
	uint32_t max_inflight;
	uint32_t signal_every;
	/* Receives kept posted per peer for the peer's pushes (default 48);
	 * the node's receive queues must hold as many. */
	uint32_t recv_depth;
	sst_suspect_fn on_suspect;
	void *suspect_arg;
	/* Receive buffers, for peers' SENDs to other parts: with
	 * recv_buf_size > 0, each receive posted for member rank gets
	 * recv_buf_size bytes of recv_area (registered memory of at least
	 * nmembers * recv_depth * recv_buf_size bytes). 0: receives hold no
	 * buffer (only WRITE_WITH_IMM may arrive). */
	void *recv_area;
	uint32_t recv_buf_size;
	/* The hooks of the parts sharing the node; NULL: none. */
	const struct sst_dispatch *dispatch;
	/* Bound into every segment's check: members of one table pass the
	 * same value (the group passes its view's epoch), so a row left
	 * over from a table with another seed never validates. */
	uint64_t seed;
};

/* Counters of what the table has done, for tools and benchmarks. */
struct sst_stats {
	uint64_t pushes;        /* sst_push* calls (heartbeats included) */
	uint64_t writes;        /* RDMA writes posted */
	uint64_t merged;        /* push ranges absorbed into a pending write */
	uint64_t deferred;      /* pushes held back by a full pipeline */
	uint64_t received;      /* peers' pushes seen (write completions) */
	uint64_t passes;        /* progress passes */
	uint64_t fired;         /* triggers run */
	uint64_t sleeps;        /* times the progress thread blocked */
	uint64_t heartbeats;    /* own heartbeat advances */
	uint64_t suspicions;    /* members suspected */
	uint64_t stalls;        /* gaps in our own heartbeat checks longer
				   than two periods (not held against peers) */
	uint64_t taken;         /* peers' segments validated and taken */
	uint64_t torn;          /* peers' segments seen changed that failed
				   their check (half landed, or broken) */
};

/* Bytes the table needs at its offset in the region, for nmembers and
 * the options opt (NULL: the defaults): the table (sst_table_size: the
 * rows, which peers write) followed by this member's snapshot slots
 * (max_inflight per peer, one row each, which only the NIC reads). */
size_t sst_area_size(const struct sst_layout *l, uint32_t nmembers,
		     const struct sst_options *opt);

/* Create the member's table over an existing, connected node, with a row
 * for each of the node's members in the node's order (rdma_sq_member_id).
 * The table takes sst_area_size(layout, rdma_sq_nmembers(node), opt) bytes at
 * region + table_offset, inside the node's registered region, and the same
 * offset in every peer's region holds that peer's copy: the member's row
 * is written there. The table memory must start zeroed (a fresh region
 * is), because peers may push into it before this call; only the member's
 * own row is cleared here. layout must outlive the table.
 * Returns 0 with *out set, or a negative errno with err filled. */
int sst_create(struct rdma_sq_node *node,
	       const struct sst_layout *layout, void *region,
	       size_t table_offset, const struct sst_options *opt,
	       struct sst **out, struct squall_error *err);

/* Start the progress thread and push the whole row once, so that peers
 * see the table fingerprint. */
int sst_start(struct sst *t, struct squall_error *err);

/* Stop the progress thread and free the table (not its memory). Safe on
 * NULL. The node must outlive this call. */
void sst_destroy(struct sst *t);

/* Where a receive of a table made with opt (recv_depth, recv_area and
 * recv_buf_size as given to sst_create) put a SEND, for the owner that
 * takes the node's last completions itself once the table is gone (a
 * drain before the node goes): the buffer in recv_area, and the sender's
 * rank in *rank. NULL when wr_id is not one of the table's receives, or
 * opt gives receives no buffer. */
void *sst_recv_landing(const struct sst_options *opt, uint64_t wr_id,
		       uint32_t *rank);

/* Wait until every peer not suspected has pushed a header that validated
 * with this table's fingerprint. Returns 0, -ETIMEDOUT (err names the
 * peer, and how many of its pushes failed their check), or -EPROTO when a
 * peer's fingerprint differs (its layout does not match; err names it). */
int sst_wait_peers(struct sst *t, int timeout_ms, struct squall_error *err);

/* The local member's rank (its index in the node's members), the number of
 * members, and the id of member `rank`. */
uint32_t sst_my_rank(const struct sst *t);
uint32_t sst_nmembers(const struct sst *t);
uint32_t sst_member_id(const struct sst *t, uint32_t rank);
const struct sst_layout *sst_get_layout(const struct sst *t);

/* Read a scalar column (or element i of an array column) of member rank's
 * row: the member's own row as it is written, a peer's from the last copy
 * of its segment that validated. Each value is one the writer stored
 * whole, and a counter never goes back. The progress thread takes new
 * copies only between passes, so predicates and triggers see a table that
 * does not change under them; another thread reads whole words. */
uint64_t sst_get(const struct sst *t, uint32_t rank, uint32_t col);
uint64_t sst_get_elem(const struct sst *t, uint32_t rank, uint32_t col,
		      uint32_t i);

/* Copy the bytes of an SST_COL_BYTES column of member rank's row (at most
 * len, returns the count copied). */
size_t sst_get_bytes(const struct sst *t, uint32_t rank, uint32_t col,
		     void *dst, size_t len);

/* Write the local member's own row (no push). Each word is stored whole;
 * the NIC never reads this row (pushes send snapshots of it). */
void sst_set(struct sst *t, uint32_t col, uint64_t v);
void sst_set_elem(struct sst *t, uint32_t col, uint32_t i, uint64_t v);
int sst_set_bytes(struct sst *t, uint32_t col, const void *src, size_t len);

/* Push the whole row, or the segments holding columns [first, first + n),
 * to every peer not suspected, merged with any range still pending for
 * that peer (one write covers both). Never waits for the network: when a peer's
 * pipeline is full the range stays pending and the progress thread sends
 * it when a completion frees room. A peer whose post fails is marked
 * failed (and suspected by the progress thread); the others still get the
 * push. Any thread. Returns 0, or -EINVAL for a bad column range. */
int sst_push(struct sst *t);
int sst_push_cols(struct sst *t, uint32_t first, uint32_t n);

/* A last word: push the segments holding columns [first, first + n)
 * once to member rank although it is suspected. A suspected member may
 * still be alive (stopped for a while, cut off on one side): while its
 * connection holds, the write lands in its table without its CPU, and it
 * reads it when it runs again. Any thread. Returns 0, -EAGAIN when that
 * peer's pipeline is full, -ENOTCONN when its connection failed, -EINVAL
 * for a bad range or rank. */
int sst_push_cols_to(struct sst *t, uint32_t rank, uint32_t first,
		     uint32_t n);

/* Landing marks: sst_fence fills fence[rank] with how many writes to
 * each peer carry everything pushed so far (those posted, plus one for a
 * range still pending); sst_fenced tells whether that many have completed
 * at every peer not suspected, i.e. whether what was pushed before the
 * fence has landed everywhere, however much was pushed since. Writes
 * complete in batches (one in signal_every is signaled): when the last
 * ones are not, sst_fenced posts a signaled header write whose completion
 * accounts for them, so asking again soon gets the answer. Any thread. */
void sst_fence(struct sst *t, uint64_t fence[SST_MAX_MEMBERS]);
bool sst_fenced(struct sst *t, const uint64_t fence[SST_MAX_MEMBERS]);

/* Say in the member's row that it is out (it suspects itself) and push
 * it: every peer suspects it at once, and takes nothing else from that
 * row's suspicions. For a member that stops. Any thread. */
void sst_leave(struct sst *t);

/* Add columns [first, first + n) to what the next push sends, without
 * posting anything now. */
int sst_mark_cols(struct sst *t, uint32_t first, uint32_t n);

/* Register a predicate and its trigger (see sst_pred_kind); it takes part
 * from the next evaluation pass. Any thread, triggers included. Returns 0
 * with *id set (id may be NULL), -EINVAL or -ENOMEM. */
int sst_predicate_add(struct sst *t, enum sst_pred_kind kind,
		      sst_pred_fn pred, sst_trigger_fn trig, void *arg,
		      sst_pred_id *id);

/* Remove a predicate. From a trigger, takes effect at once; from another
 * thread while its trigger runs, waits for the trigger to return. After it
 * returns, the trigger does not start again. Returns 0, or -ENOENT for an
 * unknown id or a one-shot that has fired. */
int sst_predicate_remove(struct sst *t, sst_pred_id id);

/* Suspect member rank for a reason found above the SST (it sent what
 * this member cannot read): as a detected failure, it goes into this
 * member's row, so that every survivor learns it and a view change
 * removes it. The on_suspect callback gets why. Progress thread (from a
 * dispatch hook). */
void sst_suspect(struct sst *t, uint32_t rank, const char *why);

/* A write of this member's to member rank failed with a remote access
 * error: rank refused it. Either this member wrote outside what rank
 * granted it (its own fault), or rank is dying and its keys went first.
 * This member does not suspect rank for what it sees of that connection
 * for one suspicion timeout: if rank lives, rank suspects this member
 * (its side of the connection broke too) and the view change removes the
 * writer; if rank died, the others suspect it and this member learns it
 * from their rows. Suspecting rank at once would make both ends of the
 * connection suspect each other, and cost the group two members for one
 * fault. why is kept (sst_refusal) for the writer's own removal. Progress
 * thread (from a dispatch hook, or the SST's own pushes). */
void sst_refused(struct sst *t, uint32_t rank, const char *why);
/* The first refusal's why, "" when none. */
const char *sst_refusal(const struct sst *t);

/* Whether member rank is suspected by the local member (detected, or
 * learnt from a peer's row). */
bool sst_suspected(const struct sst *t, uint32_t rank);

/* Whether the progress thread will sleep after this pass if the pass
 * finds no work (its idle policy armed): a dispatch hook's on_pass sends
 * what it held back then, and says it had work. Progress thread. */
bool sst_idle_armed(const struct sst *t);

/* A snapshot of the counters. */
void sst_get_stats(struct sst *t, struct sst_stats *out);

/* Make the progress thread run a pass soon, from any thread: for work of
 * a dispatch hook (sst_options.dispatch) that no completion announces. */
void sst_wake(struct sst *t);


#endif /* SQUALL_SST_H */
