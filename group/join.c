/*
 * join.c - members joining a running group: the request over TCP, the
 * answer with the new view and the application's state.
 *
 * The idea: a joiner has no connection to the group yet, so it asks over
 * a plain TCP connection to a member's address and port (the rdma_cm port
 * space is not TCP's): a JOIN carrying its id and its group file's
 * fingerprint. The member checks both, keeps the connection and marks the
 * request in its SST row (COL_JOIN); the leader folds every request it
 * sees into the next view change, as additions beside any failures
 * (view.c). Once that change's trim is delivered everywhere, the member
 * holding the connection answers with the new view (VIEW_COMMIT: epoch,
 * member ids, and which of them kept their listeners) and the
 * application's state (STATE_XFER), taken right
 * after the last delivery of the old view; the joiner loads the state and
 * connects in that view like everyone else. Connections and state are a
 * control path: small, rare, and fine over TCP.
 *
 * Nobody can stall the view thread that reads them: join connections are
 * read without blocking, at most GROUP_JOIN_PENDING at once (one more is
 * closed at once, and may try again), each message at most
 * GROUP_JOIN_MSG_MAX bytes (the length its header claims is checked
 * before anything is read or allocated) and due within JOIN_REQUEST_MS;
 * a joiner admitted that hangs up before its view is withdrawn; the
 * answer, the state included, goes out within group.view_timeout_ms or
 * the joiner is dropped. So a stranger delays nothing, and a joiner the
 * install by view_timeout_ms at most.
 *
 * In a group with a key (group.key_file), the JOIN also carries the
 * joiner's nonce; the member answers with its own nonce and its proof of
 * the key (AUTH), and the joiner must answer with its proof before the
 * request counts (rdma/auth.h, exchange "join"). A joiner without the key
 * is refused for good, saying why.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <squall/wire.h>

#include "group/group_int.h"
#include "rdma/auth.h"

/* How long a member waits for each message of a joiner's (its request,
 * its proof of the key) once it connected, and for a small answer of its
 * own to go out. */
#define JOIN_REQUEST_MS 2000
#define JOIN_SEND_MS 1000
/* A refusal the joiner must not retry elsewhere. */
#define JOIN_REFUSE_FINAL 0x1u
/* Largest state accepted (the payload length field's range). */
#define JOIN_STATE_MAX (1ull << 32)

uint64_t group_cfg_bits(const struct group *g, const struct group_config *v)
{
	uint64_t bits = 0;

	for (uint32_t i = 0; i < v->nmembers; i++) {
		int k = group_config_member_index(&g->cfg, v->members[i].id);

		if (k >= 0)
			bits |= 1ull << k;
	}
	return bits;
}

/* ---- TCP messages --------------------------------------------------------- */

/* Wait until fd is ready for `events`, by `until` (ms). Returns 0,
 * -ETIMEDOUT, or a negative errno. */
static int wait_fd(int fd, short events, uint64_t until)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = events };
		uint64_t now = group_now_ms();
		int r;

		if (now >= until)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)(until - now));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* Write all of p by `until` (ms), the socket blocking or not. */
static int write_all(int fd, const void *p, size_t n, uint64_t until)
{
	const uint8_t *b = p;

	while (n) {
		int r = wait_fd(fd, POLLOUT, until);
		ssize_t w;

		if (r)
			return r;
		w = send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EINTR || errno == EAGAIN ||
			      errno == EWOULDBLOCK))
			continue;
		if (w <= 0)
			return -errno ?: -EIO;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static int read_all(int fd, void *p, size_t n, uint64_t until)
{
	uint8_t *b = p;

	while (n) {
		int w = wait_fd(fd, POLLIN, until);
		ssize_t r;

		if (w)
			return w;
		r = recv(fd, b, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r ? -errno : -ECONNRESET;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Send one message by `until`: header (with the member extension), then
 * payload. */
static int send_msg(int fd, uint16_t type, uint16_t flags, uint32_t member,
		    const void *payload, uint32_t len, uint64_t until)
{
	struct wire_ext ext = { .type = WIRE_EXT_MEMBER, .u.member = member };
	uint8_t hdr[64];
	int h = wire_encode(hdr, sizeof(hdr), type, flags, &ext, 1, len, NULL);
	int r;

	if (h < 0)
		return h;
	r = write_all(fd, hdr, (size_t)h, until);
	if (!r && len)
		r = write_all(fd, payload, len, until);
	return r;
}

int group_join_msg_total(const uint8_t *hdr, uint64_t max, uint64_t *total)
{
	uint32_t ext, payload;

	memcpy(&ext, hdr + 12, 4);
	memcpy(&payload, hdr + 16, 4);
	*total = WIRE_HDR_LEN + (uint64_t)le32toh(ext) + le32toh(payload);
	return le32toh(ext) > WIRE_EXT_AREA_MAX || *total > max ? -EMSGSIZE : 0;
}

/* Receive one message whole into *buf (malloc'd; the caller frees). */
static int recv_msg(int fd, uint64_t until, uint8_t **buf, struct wire_msg *m,
		    struct squall_error *err)
{
	uint8_t hdr[WIRE_HDR_LEN];
	uint64_t total;
	int r = read_all(fd, hdr, sizeof(hdr), until);

	*buf = NULL;
	if (r)
		return r;
	if (group_join_msg_total(hdr, JOIN_STATE_MAX, &total))
		return squall_error_set(err, -EMSGSIZE, "a join message of %"
					PRIu64 " bytes", total);
	*buf = malloc(total);
	if (!*buf)
		return -ENOMEM;
	memcpy(*buf, hdr, sizeof(hdr));
	r = read_all(fd, *buf + sizeof(hdr), total - sizeof(hdr), until);
	if (!r)
		r = wire_decode(*buf, total, m, err);
	return r;
}

static uint32_t msg_member(const struct wire_msg *m)
{
	struct wire_ext e;

	return wire_ext_find(m, WIRE_EXT_MEMBER, &e) == 0 && e.len >= 4
		       ? e.u.member : UINT32_MAX;
}

/* ---- the member's side ------------------------------------------------------- */

int group_join_listen(struct group *g, struct squall_error *err)
{
	const struct group_member_cfg *me =
		&g->cfg.members[group_config_member_index(&g->cfg, g->my_id)];
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(me->port) };
	int fd, one = 1;

	group_assert_view_or_none(g);
	inet_pton(AF_INET, me->address, &sa.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return squall_error_set(err, -errno, "join listener: %s",
					strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 8)) {
		int e = errno;

		close(fd);
		return squall_error_set(err, -e, "member %u: listening for joins "
					"on TCP %s:%u: %s", g->my_id, me->address,
					me->port, strerror(e));
	}
	g->join_fd = fd;
	return 0;
}

static void refuse(int fd, struct group *g, bool final, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void refuse(int fd, struct group *g, bool final, const char *fmt, ...)
{
	char text[SQUALL_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	send_msg(fd, WIRE_MSG_REFUSE, final ? JOIN_REFUSE_FINAL : 0, g->my_id,
		 text, (uint32_t)strlen(text), group_now_ms() + JOIN_SEND_MS);
	close(fd);
}

static void publish_joins(struct group *g)
{
	sst_set(g->v.t, (uint32_t)g->v.col[COL_JOIN], g->join_bits);
	sst_push_cols(g->v.t, (uint32_t)g->v.col[COL_JOIN], 1);
	sst_wake(g->v.t);
}

/* Whether a joiner's request can be taken; if not it is refused (and
 * its connection closed) with the reason. */
static bool admissible(struct group *g, int fd, uint32_t id, uint64_t theirs,
		       int k)
{
	uint64_t fp = 0;

	group_config_fingerprint(&g->cfg, &fp);
	if (theirs != fp)
		refuse(fd, g, true, "member %u's group file differs from "
		       "member %u's (fingerprint %016" PRIx64 ", %016" PRIx64
		       " here)", id, g->my_id, theirs, fp);
	else if (k < 0)
		refuse(fd, g, true, "%s has no member with id %u", g->cfg.path,
		       id);
	else if (group_config_member_index(&g->vcfg, id) >= 0)
		refuse(fd, g, true, "member %u is already in view %" PRIu64, id,
		       g->vcfg.epoch);
	else if (atomic_load(&g->failed) || atomic_load(&g->closing))
		refuse(fd, g, false, "member %u is stopping", g->my_id);
	else
		return true;
	return false;
}

/* The join exchange's context: `from` proves to `to`. */
static struct squall_auth_ctx join_ctx(uint64_t fp, uint32_t from, uint32_t to,
				       uint64_t nonce_joiner,
				       uint64_t nonce_member)
{
	return (struct squall_auth_ctx){
		.label = "join", .fingerprint = fp, .from = from, .to = to,
		.nonce_req = nonce_joiner, .nonce_acc = nonce_member,
	};
}

static void pend_close(struct group_join_pend *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

/* The joiner is admitted: its connection waits for its view. */
static void admit(struct group *g, struct group_join_pend *p)
{
	if (g->join_conn[p->k] >= 0)
		close(g->join_conn[p->k]);
	g->join_conn[p->k] = p->fd;
	p->fd = -1;
	g->join_bits |= 1ull << p->k;
	publish_joins(g);
}

/* Its request (JOIN: fingerprint, and its nonce in a group with a key). */
static void on_request(struct group *g, struct group_join_pend *p,
		       const struct wire_msg *m)
{
	uint8_t out[8 + SQUALL_MAC_LEN];
	struct squall_auth_ctx c;
	uint64_t le;

	if (m->type != WIRE_MSG_JOIN ||
	    (m->payload_len != 8 && m->payload_len != 16)) {
		refuse(p->fd, g, true, "member %u expected a join request",
		       g->my_id);
		p->fd = -1;
		return;
	}
	p->id = msg_member(m);
	memcpy(&p->fp, m->payload, 8);
	p->fp = le64toh(p->fp);
	p->nonce_joiner = 0;
	if (m->payload_len == 16) {
		memcpy(&p->nonce_joiner, m->payload + 8, 8);
		p->nonce_joiner = le64toh(p->nonce_joiner);
	}
	p->k = group_config_member_index(&g->cfg, p->id);
	if (!admissible(g, p->fd, p->id, p->fp, p->k)) {
		p->fd = -1;
		return;
	}
	if (g->cfg.has_key != (p->nonce_joiner != 0)) {
		atomic_fetch_add(&g->st_join_refused, 1);
		refuse(p->fd, g, true, g->cfg.has_key ?
		       "member %u requires the group key (group.key_file), and "
		       "member %u's join request carries no proof of it" :
		       "member %u has no group key (group.key_file) and member "
		       "%u's join request offers one: every member must name "
		       "the same key", g->my_id, p->id);
		p->fd = -1;
		return;
	}
	if (!g->cfg.has_key) {
		admit(g, p);
		return;
	}
	/* Its nonce and proof first; the joiner's proof is due next. */
	p->nonce_member = squall_auth_nonce();
	le = htole64(p->nonce_member);
	memcpy(out, &le, 8);
	c = join_ctx(p->fp, g->my_id, p->id, p->nonce_joiner, p->nonce_member);
	if (!p->nonce_member ||
	    squall_auth_prove(g->cfg.key, SQUALL_AUTH_ACCEPTOR, &c, out + 8) ||
	    send_msg(p->fd, WIRE_MSG_AUTH, 0, g->my_id, out, sizeof(out),
		     group_now_ms() + JOIN_SEND_MS)) {
		pend_close(p);
		return;
	}
	p->got = 0;
	p->deadline = group_now_ms() + JOIN_REQUEST_MS;
}

/* Its proof of the key (AUTH), in a group with one. */
static void on_proof(struct group *g, struct group_join_pend *p,
		     const struct wire_msg *m)
{
	struct squall_auth_ctx c = join_ctx(p->fp, p->id, g->my_id,
					    p->nonce_joiner, p->nonce_member);

	if (m->type != WIRE_MSG_AUTH ||
	    !squall_auth_check(g->cfg.key, SQUALL_AUTH_REQUESTER, &c,
			       m->payload, m->payload_len)) {
		atomic_fetch_add(&g->st_join_refused, 1);
		refuse(p->fd, g, true, "member %u's proof of the group key is "
		       "wrong: it holds another key than member %u", p->id,
		       g->my_id);
		p->fd = -1;
		return;
	}
	admit(g, p);
}

/* Read what has come of p's current message: 1 when it is whole, 0 when
 * more is to come, or a negative errno (-EMSGSIZE: too long; the
 * connection closed or failed). Never blocks. */
static int pend_read(struct group_join_pend *p)
{
	for (;;) {
		uint64_t total = WIRE_HDR_LEN;
		ssize_t r;

		if (p->got >= WIRE_HDR_LEN &&
		    group_join_msg_total(p->buf, GROUP_JOIN_MSG_MAX, &total))
			return -EMSGSIZE;
		if (p->got == total)
			return 1;
		r = recv(p->fd, p->buf + p->got, total - p->got, MSG_DONTWAIT);
		if (r > 0) {
			p->got += (uint32_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		return -ECONNRESET;
	}
}

static void pend_step(struct group *g, struct group_join_pend *p, uint64_t now)
{
	struct wire_msg m;
	int r = pend_read(p);

	if (r == 0 && now < p->deadline)
		return;
	if (r == 0 || r == -ECONNRESET) {
		atomic_fetch_add(&g->st_join_dropped, 1);
		pend_close(p);
		return;
	}
	if (r == -EMSGSIZE || wire_decode(p->buf, p->got, &m, NULL)) {
		atomic_fetch_add(&g->st_join_dropped, 1);
		refuse(p->fd, g, true, "member %u takes join messages of at most "
		       "%u bytes, in squall's wire format", g->my_id,
		       GROUP_JOIN_MSG_MAX);
		p->fd = -1;
		return;
	}
	if (p->nonce_member)
		on_proof(g, p, &m);
	else
		on_request(g, p, &m);
}

/* A joiner admitted that went away before its view: its request is
 * withdrawn, so that a view is not made for a member that will never
 * come. */
static void drop_gone(struct group *g)
{
	bool changed = false;

	for (uint32_t k = 0; k < g->cfg.nmembers; k++) {
		struct pollfd pfd = { .fd = g->join_conn[k], .events = POLLRDHUP };

		if (pfd.fd < 0 || poll(&pfd, 1, 0) <= 0 ||
		    !(pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			continue;
		close(pfd.fd);
		g->join_conn[k] = -1;
		g->join_bits &= ~(1ull << k);
		changed = true;
	}
	if (changed)
		publish_joins(g);
}

void group_join_poll(struct group *g)
{
	uint64_t now = group_now_ms();
	int fd;

	group_assert_view_thread(g);
	if (g->join_fd < 0 || !g->v.t)
		return;
	while ((fd = accept4(g->join_fd, NULL, NULL,
			     SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		struct group_join_pend *p = NULL;

		for (unsigned i = 0; i < GROUP_JOIN_PENDING && !p; i++)
			if (g->join_pend[i].fd < 0)
				p = &g->join_pend[i];
		if (!p) {
			/* As many are being read: this one waits its turn
			 * by trying again. */
			atomic_fetch_add(&g->st_join_dropped, 1);
			close(fd);
			continue;
		}
		*p = (struct group_join_pend){ .fd = fd, .k = -1,
					       .deadline = now + JOIN_REQUEST_MS };
	}
	for (unsigned i = 0; i < GROUP_JOIN_PENDING; i++)
		if (g->join_pend[i].fd >= 0)
			pend_step(g, &g->join_pend[i], now);
	drop_gone(g);
}

/* The view change that adds joiners is decided: tell each joiner whose
 * request this member holds the view and give it the state. */
void group_join_answer(struct group *g, uint64_t epoch, const uint32_t *ids,
		       uint32_t n, uint64_t seq_base, uint64_t barriers,
		       uint64_t listeners)
{
	uint8_t view[8 + 4 + 4 * GROUP_CONFIG_MAX_MEMBERS + 24];
	uint64_t e = htole64(epoch), sb = htole64(seq_base);
	uint64_t bc = htole64(barriers), ls = htole64(listeners);
	uint32_t nl = htole32(n);

	group_assert_view_thread(g);
	/* VIEW_COMMIT: epoch, n, n ids, the view's first position, the
	 * barrier count to start from, and (wire 1.2) the members that kept
	 * their listeners, as bits by .cfg position (little-endian). */
	memcpy(view, &e, 8);
	memcpy(view + 8, &nl, 4);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = htole32(ids[i]);

		memcpy(view + 12 + 4 * i, &id, 4);
	}
	memcpy(view + 12 + 4 * n, &sb, 8);
	memcpy(view + 20 + 4 * n, &bc, 8);
	memcpy(view + 28 + 4 * n, &ls, 8);
	for (uint32_t k = 0; k < g->cfg.nmembers; k++) {
		int fd = g->join_conn[k];
		void *state = NULL;
		size_t len = 0;
		int r = 0;

		if (fd < 0 || !(g->v.vc.tadd >> k & 1))
			continue;
		if (g->cb.state_save) {
			group_upcall_begin(g);
			r = g->cb.state_save(g->ctx, &state, &len);
			group_upcall_end(g);
		}
		if (r || len >= JOIN_STATE_MAX) {
			refuse(fd, g, true, "member %u could not save the "
			       "application's state for it (%s)", g->my_id,
			       r ? strerror(-r) : "too large");
		} else {
			/* Bounded: a joiner that does not take its state
			 * within group.view_timeout_ms delays the install no
			 * longer (it is dropped, and its view goes on
			 * without it). */
			uint64_t until = group_now_ms() + g->cfg.view_timeout_ms;

			r = send_msg(fd, WIRE_MSG_VIEW_COMMIT, 0, g->my_id, view,
				     36 + 4 * n, until);
			if (!r)
				send_msg(fd, WIRE_MSG_STATE_XFER, 0, g->my_id,
					 state, (uint32_t)len, until);
			close(fd);
		}
		free(state);
		g->join_conn[k] = -1;
		g->join_bits &= ~(1ull << k);
	}
}

void group_join_close(struct group *g)
{
	group_assert_view_or_none(g);
	if (g->join_fd >= 0)
		close(g->join_fd);
	g->join_fd = -1;
	for (uint32_t k = 0; k < GROUP_CONFIG_MAX_MEMBERS; k++)
		if (g->join_conn[k] >= 0) {
			close(g->join_conn[k]);
			g->join_conn[k] = -1;
		}
	for (unsigned i = 0; i < GROUP_JOIN_PENDING; i++)
		pend_close(&g->join_pend[i]);
}

/* In a new view, requests still waiting are published again. */
void group_join_republish(struct group *g)
{
	group_assert_view_or_none(g);
	if (g->join_bits && g->v.t)
		publish_joins(g);
}

/* ---- the joiner's side ------------------------------------------------------- */

static int connect_to(const struct group_member_cfg *m, uint64_t until)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(m->port) };
	int fd, r, e = 0;
	socklen_t el = sizeof(e);

	inet_pton(AF_INET, m->address, &sa.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (r && errno != EINPROGRESS) {
		e = errno;
		close(fd);
		return -e;
	}
	r = wait_fd(fd, POLLOUT, until);
	if (r || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) || e) {
		close(fd);
		return -(e ?: ETIMEDOUT);
	}
	return fd;
}

/* The joiner's side of the key exchange: check the member's proof (in
 * msg), answer with its own. Returns 0, or -EACCES (final) when the
 * member's proof is wrong, or 1 (try another member) when the answer
 * could not be sent. */
static int join_prove(struct group *g, int fd, const struct group_member_cfg *m,
		      uint64_t fp, uint64_t nonce, const struct wire_msg *msg,
		      struct squall_error *err)
{
	uint8_t mac[SQUALL_MAC_LEN];
	struct squall_auth_ctx c;
	uint64_t theirs;

	if (msg->payload_len != 8 + SQUALL_MAC_LEN)
		return squall_error_set(err, -EACCES, "member %u's proof of the "
					"group key to member %u's join is %u "
					"bytes, not %u", m->id, g->my_id,
					msg->payload_len, 8 + SQUALL_MAC_LEN);
	memcpy(&theirs, msg->payload, 8);
	theirs = le64toh(theirs);
	c = join_ctx(fp, m->id, g->my_id, nonce, theirs);
	if (!squall_auth_check(g->cfg.key, SQUALL_AUTH_ACCEPTOR, &c,
			       msg->payload + 8, SQUALL_MAC_LEN))
		return squall_error_set(err, -EACCES, "member %u's proof of the "
					"group key is wrong: it holds another key "
					"than %s (group.key_file of member %u)",
					m->id, g->cfg.key_file, g->my_id);
	c = join_ctx(fp, g->my_id, m->id, nonce, theirs);
	if (squall_auth_prove(g->cfg.key, SQUALL_AUTH_REQUESTER, &c, mac) ||
	    send_msg(fd, WIRE_MSG_AUTH, 0, g->my_id, mac, sizeof(mac),
		     group_now_ms() + JOIN_SEND_MS))
		return 1;
	return 0;
}

/* Ask member m; on its answer fill view (epoch, ids) and the state.
 * Returns 0, 1 (try another member) or a negative errno (refused for
 * good, err says why). */
static int ask(struct group *g, const struct group_member_cfg *m,
	       uint64_t until, struct group_config *v, uint8_t **state,
	       size_t *state_len, struct squall_error *err)
{
	struct squall_error e2 = { 0 };
	uint64_t fp = 0;
	struct wire_msg msg;
	uint8_t *buf = NULL, *sbuf = NULL;
	uint32_t n;
	int fd, r;

	fd = connect_to(m, group_now_ms() + 1000 < until ? group_now_ms() + 1000
							 : until);
	if (fd < 0)
		return 1;
	group_config_fingerprint(&g->cfg, &fp);
	{
		uint64_t req[2] = { htole64(fp), 0 }, nonce = 0;

		if (g->cfg.has_key) {
			nonce = squall_auth_nonce();
			req[1] = htole64(nonce);
		}
		r = send_msg(fd, WIRE_MSG_JOIN, 0, g->my_id, req,
			     g->cfg.has_key ? 16 : 8, group_now_ms() + JOIN_SEND_MS);
		if (!r)
			r = recv_msg(fd, until, &buf, &msg, &e2);
		if (!r && nonce && msg.type == WIRE_MSG_AUTH) {
			r = join_prove(g, fd, m, fp, nonce, &msg, err);
			free(buf);
			buf = NULL;
			if (r) {
				close(fd);
				return r;
			}
			r = recv_msg(fd, until, &buf, &msg, &e2);
		} else if (!r && nonce && msg.type != WIRE_MSG_REFUSE) {
			squall_error_set(err, -EACCES, "member %u answered member "
					 "%u's join without proving the group "
					 "key", m->id, g->my_id);
			close(fd);
			free(buf);
			return 1;
		}
	}
	if (r) {
		close(fd);
		free(buf);
		return 1;
	}
	if (msg.type == WIRE_MSG_REFUSE) {
		bool final = msg.flags & JOIN_REFUSE_FINAL;

		squall_error_set(err, -ECONNREFUSED, "member %u refused member "
				 "%u's join: %.*s", m->id, g->my_id,
				 (int)msg.payload_len, (const char *)msg.payload);
		close(fd);
		free(buf);
		return final ? -ECONNREFUSED : 1;
	}
	if (msg.type != WIRE_MSG_VIEW_COMMIT || msg.payload_len < 12) {
		close(fd);
		free(buf);
		return 1;
	}
	memcpy(&v->epoch, msg.payload, 8);
	v->epoch = le64toh(v->epoch);
	memcpy(&n, msg.payload + 8, 4);
	n = le32toh(n);
	if (n == 0 || n > GROUP_CONFIG_MAX_MEMBERS ||
	    msg.payload_len < 28 + 4 * n) {
		squall_error_set(err, -EPROTO, "member %u answered member %u's "
				 "join with a view of %u bytes, which does not "
				 "hold its members, first position and barrier "
				 "count", m->id, g->my_id, msg.payload_len);
		close(fd);
		free(buf);
		return 1;
	}
	memcpy(&g->seq_base, msg.payload + 12 + 4 * n, 8);
	g->seq_base = le64toh(g->seq_base);
	{
		uint64_t bc;

		memcpy(&bc, msg.payload + 20 + 4 * n, 8);
		atomic_store(&g->barriers, le64toh(bc));
	}
	/* The members that kept their listeners (wire 1.2; a 1.1 member's
	 * answer ends before them): as a survivor does, the joiner takes one
	 * of them that no longer listens (its own request refused without
	 * a hello, or its probe of a lower one) for gone at once, instead of
	 * waiting group.view_timeout_ms for it. */
	g->kept_listeners = 0;
	if (msg.payload_len >= 36 + 4 * n) {
		uint64_t ls;

		memcpy(&ls, msg.payload + 28 + 4 * n, 8);
		g->kept_listeners = le64toh(ls);
	}
	v->nmembers = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id;
		int k;

		memcpy(&id, msg.payload + 12 + 4 * i, 4);
		k = group_config_member_index(&g->cfg, le32toh(id));
		if (k >= 0)
			v->members[v->nmembers++] = g->cfg.members[k];
	}
	free(buf);
	r = recv_msg(fd, until + 60000, &sbuf, &msg, &e2);
	close(fd);
	if (r || msg.type != WIRE_MSG_STATE_XFER) {
		free(sbuf);
		return squall_error_set(err, r ? r : -EPROTO, "member %u: the "
			"state from member %u did not arrive: %s", g->my_id,
			m->id, r ? (e2.code ? e2.msg : strerror(-r))
				 : "another message came");
	}
	*state = sbuf;
	*state_len = msg.payload_len;
	/* The payload stays inside sbuf: hand out its start. */
	memmove(sbuf, msg.payload, msg.payload_len);
	return 0;
}

int group_join_ask(struct group *g, const struct group_config *cfg,
		   uint32_t my_id, uint64_t since, struct squall_error *err)
{
	uint64_t until = since + cfg->connect_timeout_ms;
	struct squall_error refused = { 0 };
	uint8_t *state = NULL;
	size_t state_len = 0;
	int r = 0;

	g->vcfg = *cfg;
	for (;;) {
		for (uint32_t i = 0; i < cfg->nmembers; i++) {
			if (cfg->members[i].id == my_id)
				continue;
			r = ask(g, &cfg->members[i], until, &g->vcfg, &state,
				&state_len, &refused);
			if (r <= 0)
				break;
		}
		if (r <= 0 || group_now_ms() >= until)
			break;
		usleep(200000);
	}
	if (r < 0 || (r > 0 && refused.code)) {
		*err = refused;
		return refused.code ? refused.code : r;
	}
	if (r > 0)
		return squall_error_set(err, -ETIMEDOUT, "member %u: no member "
			"of %s answered its join within %u ms", my_id, cfg->path,
			cfg->connect_timeout_ms);
	if (g->cb.state_load) {
		group_upcall_begin(g);
		g->cb.state_load(g->ctx, state, state_len);
		group_upcall_end(g);
	}
	free(state);
	g->vcfg.connect_timeout_ms = cfg->view_timeout_ms;
	return 0;
}
