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
 * holding the connection answers with the new view (VIEW_COMMIT: epoch
 * and member ids) and the application's state (STATE_XFER), taken right
 * after the last delivery of the old view; the joiner loads the state and
 * connects in that view like everyone else. Connections and state are a
 * control path: small, rare, and fine over TCP.
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

/* How long a member waits for a joiner's request once it connected. */
#define JOIN_REQUEST_MS 2000
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

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
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
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = group_now_ms();
		ssize_t r;

		if (now >= until)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)(until - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r ? -errno : -ETIMEDOUT;
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

/* Send one message: header (with the member extension), then payload. */
static int send_msg(int fd, uint16_t type, uint16_t flags, uint32_t member,
		    const void *payload, uint32_t len)
{
	struct wire_ext ext = { .type = WIRE_EXT_MEMBER, .u.member = member };
	uint8_t hdr[64];
	int h = wire_encode(hdr, sizeof(hdr), type, flags, &ext, 1, len, NULL);
	int r;

	if (h < 0)
		return h;
	r = write_all(fd, hdr, (size_t)h);
	if (!r && len)
		r = write_all(fd, payload, len);
	return r;
}

/* Receive one message whole into *buf (malloc'd; the caller frees). */
static int recv_msg(int fd, uint64_t until, uint8_t **buf, struct wire_msg *m,
		    struct squall_error *err)
{
	uint8_t hdr[WIRE_HDR_LEN];
	uint32_t ext, payload;
	uint64_t total;
	int r = read_all(fd, hdr, sizeof(hdr), until);

	*buf = NULL;
	if (r)
		return r;
	memcpy(&ext, hdr + 12, 4);
	memcpy(&payload, hdr + 16, 4);
	total = WIRE_HDR_LEN + (uint64_t)le32toh(ext) + le32toh(payload);
	if (le32toh(ext) > WIRE_EXT_AREA_MAX || total > JOIN_STATE_MAX)
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
		 text, (uint32_t)strlen(text));
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

/* The member's side of the key exchange: its nonce and proof, then the
 * joiner's proof. False when the joiner is refused (connection closed). */
static bool join_proof_taken(struct group *g, int fd, uint32_t id,
			     uint64_t fp, uint64_t nonce_joiner, uint64_t until)
{
	struct squall_auth_ctx c;
	struct squall_error err = { 0 };
	uint8_t out[8 + SQUALL_MAC_LEN], *buf;
	uint64_t mine = squall_auth_nonce(), le = htole64(mine);
	struct wire_msg m;
	int r;

	c = join_ctx(fp, g->my_id, id, nonce_joiner, mine);
	memcpy(out, &le, 8);
	if (!mine || squall_auth_prove(g->cfg.key, SQUALL_AUTH_ACCEPTOR, &c,
				       out + 8) ||
	    send_msg(fd, WIRE_MSG_AUTH, 0, g->my_id, out, sizeof(out))) {
		close(fd);
		return false;
	}
	r = recv_msg(fd, until, &buf, &m, &err);
	c = join_ctx(fp, id, g->my_id, nonce_joiner, mine);
	if (r || m.type != WIRE_MSG_AUTH ||
	    !squall_auth_check(g->cfg.key, SQUALL_AUTH_REQUESTER, &c,
			       m.payload, m.payload_len)) {
		free(buf);
		atomic_fetch_add(&g->st_join_refused, 1);
		if (r)
			close(fd);
		else
			refuse(fd, g, true, "member %u's proof of the group key "
			       "is wrong: it holds another key than member %u",
			       id, g->my_id);
		return false;
	}
	free(buf);
	return true;
}

/* One joiner connected: read its request, check it, keep it. */
static void take_request(struct group *g, int fd)
{
	struct squall_error err = { 0 };
	uint64_t theirs;
	struct wire_msg m;
	uint8_t *buf;
	uint64_t nonce = 0, until = group_now_ms() + JOIN_REQUEST_MS;
	uint32_t id;
	int k, r;

	r = recv_msg(fd, until, &buf, &m, &err);
	if (r || m.type != WIRE_MSG_JOIN ||
	    (m.payload_len != 8 && m.payload_len != 16)) {
		free(buf);
		if (!r)
			refuse(fd, g, true, "member %u expected a join request",
			       g->my_id);
		else
			close(fd);
		return;
	}
	id = msg_member(&m);
	memcpy(&theirs, m.payload, 8);
	theirs = le64toh(theirs);
	if (m.payload_len == 16) {
		memcpy(&nonce, m.payload + 8, 8);
		nonce = le64toh(nonce);
	}
	free(buf);
	k = group_config_member_index(&g->cfg, id);
	if (!admissible(g, fd, id, theirs, k))
		return;
	if (g->cfg.has_key != (nonce != 0)) {
		atomic_fetch_add(&g->st_join_refused, 1);
		refuse(fd, g, true, g->cfg.has_key ?
		       "member %u requires the group key (group.key_file), and "
		       "member %u's join request carries no proof of it" :
		       "member %u has no group key (group.key_file) and member "
		       "%u's join request offers one: every member must name "
		       "the same key", g->my_id, id);
		return;
	}
	if (nonce && !join_proof_taken(g, fd, id, theirs, nonce, until))
		return;
	if (g->join_conn[k] >= 0)
		close(g->join_conn[k]);
	g->join_conn[k] = fd;
	g->join_bits |= 1ull << k;
	publish_joins(g);
}

void group_join_poll(struct group *g)
{
	int fd;

	group_assert_view_thread(g);
	if (g->join_fd < 0 || !g->v.t)
		return;
	while ((fd = accept4(g->join_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		take_request(g, fd);
}

/* The view change that adds joiners is decided: tell each joiner whose
 * request this member holds the view and give it the state. */
void group_join_answer(struct group *g, uint64_t epoch, const uint32_t *ids,
		       uint32_t n, uint64_t seq_base, uint64_t barriers)
{
	uint8_t view[8 + 4 + 4 * GROUP_CONFIG_MAX_MEMBERS + 16];
	uint64_t e = htole64(epoch), sb = htole64(seq_base);
	uint64_t bc = htole64(barriers);
	uint32_t nl = htole32(n);

	group_assert_view_thread(g);
	/* VIEW_COMMIT: epoch, n, n ids, the view's first position, the
	 * barrier count to start from (little-endian). */
	memcpy(view, &e, 8);
	memcpy(view + 8, &nl, 4);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = htole32(ids[i]);

		memcpy(view + 12 + 4 * i, &id, 4);
	}
	memcpy(view + 12 + 4 * n, &sb, 8);
	memcpy(view + 20 + 4 * n, &bc, 8);
	for (uint32_t k = 0; k < g->cfg.nmembers; k++) {
		int fd = g->join_conn[k];
		void *state = NULL;
		size_t len = 0;
		int r = 0;

		if (fd < 0 || !(g->v.vc.tadd >> k & 1))
			continue;
		if (g->cb.state_save)
			r = g->cb.state_save(g->ctx, &state, &len);
		if (r || len >= JOIN_STATE_MAX) {
			refuse(fd, g, true, "member %u could not save the "
			       "application's state for it (%s)", g->my_id,
			       r ? strerror(-r) : "too large");
		} else {
			r = send_msg(fd, WIRE_MSG_VIEW_COMMIT, 0, g->my_id, view,
				     28 + 4 * n);
			if (!r)
				send_msg(fd, WIRE_MSG_STATE_XFER, 0, g->my_id,
					 state, (uint32_t)len);
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
	struct pollfd pfd;
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
	pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
	r = poll(&pfd, 1, (int)(until > group_now_ms() ? until - group_now_ms() : 0));
	if (r <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) || e) {
		close(fd);
		return -(e ?: ETIMEDOUT);
	}
	return fd;
}

/* Ask member m; on its answer fill view (epoch, ids) and the state.
 * Returns 0, 1 (try another member) or a negative errno (refused for
 * good, err says why). */
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
	    send_msg(fd, WIRE_MSG_AUTH, 0, g->my_id, mac, sizeof(mac)))
		return 1;
	return 0;
}

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
			     g->cfg.has_key ? 16 : 8);
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
	if (g->cb.state_load)
		g->cb.state_load(g->ctx, state, state_len);
	free(state);
	g->vcfg.connect_timeout_ms = cfg->view_timeout_ms;
	return 0;
}
