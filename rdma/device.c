/*
 * device.c - a node's device resources: the listener's address decides the
 * device, then one protection domain, one completion queue with its
 * completion channel, the region's registration and the registration cache
 * for foreign memory (ibv_reg_mr on the node's protection domain, on
 * demand where the device pages memory on demand for RC).
 *
 * Several members may share one RDMA device (Soft-RoCE with one address per
 * member), so nothing here is chosen by name or index first: the listener
 * is bound to the member's own address and the device is whatever rdma_cm
 * says owns that address; a device named in the .cfg is only checked.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <squall/version.h>

#include "rdma/node.h"
#include "rdma/regcache_int.h"

#define DEFAULT_WR 64
#define MAX_WR 4096
#define DEFAULT_SGE 4
#define DEFAULT_CACHE_BYTES ((size_t)1 << 30)
#define DEFAULT_CACHE_ENTRIES 4096

void rdma_sq_log(struct rdma_sq_node *node, int level, const char *fmt, ...)
{
	char line[SQUALL_ERRMSG_MAX];
	va_list ap;

	if (!node->opt.log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	node->opt.log(node->opt.log_arg, level, line);
}

uint64_t rdma_sq_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* errno of a failed call as a negative value, never 0. */
static int neg_errno(void)
{
	return errno ? -errno : -EIO;
}

static int fill_options(struct rdma_sq_options *o, const struct rdma_sq_options *in,
			struct squall_error *err)
{
	if (in)
		*o = *in;
	else
		memset(o, 0, sizeof(*o));
	if (!o->wire_major && !o->wire_minor) {
		o->wire_major = SQUALL_WIRE_MAJOR;
		o->wire_minor = SQUALL_WIRE_MINOR;
	}
	if (!o->max_send_wr)
		o->max_send_wr = DEFAULT_WR;
	if (!o->max_recv_wr)
		o->max_recv_wr = DEFAULT_WR;
	if (!o->max_sge)
		o->max_sge = DEFAULT_SGE;
	if (!o->ack_timeout)
		o->ack_timeout = 16;
	if (!o->retry_count)
		o->retry_count = 6;
	if (!o->cache_max_bytes)
		o->cache_max_bytes = DEFAULT_CACHE_BYTES;
	if (!o->cache_max_entries)
		o->cache_max_entries = DEFAULT_CACHE_ENTRIES;
	if (o->max_send_wr > MAX_WR || o->max_recv_wr > MAX_WR)
		return squall_error_set(err, -EINVAL,
			"rdma options: at most %d work requests per queue", MAX_WR);
	if (o->max_sge > RDMA_SQ_MAX_SGE)
		return squall_error_set(err, -EINVAL,
			"rdma options: at most %d scatter/gather entries",
			RDMA_SQ_MAX_SGE);
	if (o->retry_count > 7 || o->ack_timeout > 31)
		return squall_error_set(err, -EINVAL,
			"rdma options: retry_count is 0..7, ack_timeout 0..31");
	return 0;
}

static int init_peers(struct rdma_sq_node *node, struct squall_error *err)
{
	node->npeers = node->nmembers;
	node->peers = calloc(node->nmembers, sizeof(*node->peers));
	if (!node->peers)
		return squall_error_set(err, -ENOMEM, "out of memory for peers");
	for (uint32_t i = 0; i < node->nmembers; i++) {
		struct rdma_sq_peer *p = &node->peers[i];
		const struct rdma_sq_member *m = &node->members[i];

		p->id = m->id;
		p->m = m;
		p->active = node->my_id < m->id;
		p->state = PEER_IDLE;
		p->listens = i < 64 && (node->opt.listening >> i & 1);
		snprintf(p->who, sizeof(p->who), "member %u (%s:%u)", m->id,
			 m->address, m->port);
		if (m->id == node->my_id)
			node->my_index = (int)i;
	}
	return 0;
}

static int parse_addr(const struct rdma_sq_member *m, struct sockaddr_in *sa,
		      struct squall_error *err)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(m->port);
	if (inet_pton(AF_INET, m->address, &sa->sin_addr) != 1)
		return squall_error_set(err, -EINVAL,
			"member %u: address '%s' is not an IPv4 literal",
			m->id, m->address);
	return 0;
}

/* What to do when no RDMA device owns a member's address. */
#define NO_DEVICE "Give its network interface one: Soft-RoCE is `rdma link " \
	"add rxe0 type rxe netdev IFACE` (modprobe rdma_rxe first), and " \
	"`ibv_devices` lists the devices; or run the members in the " \
	"Soft-RoCE VM, scripts/softroce-vm"

void rdma_sq_listener_free(struct rdma_sq_listener *l)
{
	if (!l)
		return;
	regcache_destroy(l->cache);
	if (l->region_mr)
		ibv_dereg_mr(l->region_mr);
	if (l->pd)
		ibv_dealloc_pd(l->pd);
	/* Requests still waiting in the channel are refused as it closes:
	 * the member listens no more. */
	if (l->id)
		rdma_destroy_id(l->id);
	if (l->ech)
		rdma_destroy_event_channel(l->ech);
	free(l);
}

int rdma_sq_listener_keep(struct rdma_sq_node *node,
			  struct rdma_sq_listener **out,
			  struct squall_error *err)
{
	struct rdma_sq_listener *l;

	if (!node || !out || !node->listen_id || !node->listening)
		return squall_error_set(err, -EINVAL, "rdma_sq_listener_keep: "
					"the node does not listen");
	l = calloc(1, sizeof(*l));
	if (!l)
		return squall_error_set(err, -ENOMEM, "out of memory for a listener");
	/* The listener leaves with the node's whole rdma_cm channel, not
	 * moved to another (rdma_migrate_id): the identifier of a request
	 * that arrived and was not yet taken stays in the channel it came
	 * in on, and closing that channel refuses the request, with no
	 * squall hello, as if nothing listened. The node's own identifiers
	 * (its peers' connections) stay valid on the channel until
	 * rdma_sq_destroy destroys them, which also drops their events;
	 * nothing reads the channel for this node any more. */
	l->ech = node->ech;
	l->id = node->listen_id;
	l->addr = node->my_addr;
	node->ech = NULL;
	node->listen_id = NULL;
	node->listening = false;
	/* The protection domain and the region's registration go along
	 * (the node uses them until it is destroyed, and does not free
	 * them): the next node of a member keeps the same region, and
	 * registers it again only if its access differs. The registration
	 * cache goes too, once the node's holds are given back
	 * (rdma_sq_destroy). What this node made in the domain for its
	 * peers (queue pairs, windows, use-once regions) goes with the
	 * node, before the next one starts. */
	if (node->pd) {
		l->pd = node->pd;
		l->region_mr = node->region_mr;
		l->region_access = rdma_sq_region_access(node);
		l->cache = node->cache;
		node->pd_kept = true;
	}
	*out = l;
	return 0;
}

/* Listen on the listener kept from the member's previous node: its
 * channel becomes this node's, with the requests waiting in it. */
static int adopt_listener(struct rdma_sq_node *node, struct squall_error *err)
{
	const struct rdma_sq_member *me = &node->members[node->my_index];
	struct rdma_sq_listener *l = node->adopt;

	if (l->addr.sin_addr.s_addr != node->my_addr.sin_addr.s_addr ||
	    l->addr.sin_port != node->my_addr.sin_port)
		return squall_error_set(err, -EINVAL, "member %u: the kept "
			"listener is not on %s:%u", me->id, me->address, me->port);
	node->ech = l->ech;
	node->listen_id = l->id;
	node->pd = l->pd;
	l->ech = NULL;
	l->id = NULL;
	l->pd = NULL;
	node->listening = true;
	return 0;
}

/* The node's rdma_cm channel, created non-blocking. */
static int open_channel(struct rdma_sq_node *node, struct squall_error *err)
{
	const struct rdma_sq_member *me = &node->members[node->my_index];
	int ret;

	node->ech = rdma_create_event_channel();
	if (!node->ech && errno == ENODEV)
		return squall_error_set(err, -ENODEV, "member %u: this host has "
			"no RDMA device (rdma_create_event_channel: %s). " NO_DEVICE,
			me->id, strerror(errno));
	if (!node->ech)
		return squall_error_set(err, neg_errno(),
			"rdma_create_event_channel: %s", strerror(errno));
	ret = set_nonblock(node->ech->fd);
	if (ret)
		return squall_error_set(err, ret, "fcntl(O_NONBLOCK) on the rdma_cm channel: %s",
					strerror(-ret));
	return 0;
}

/* The device the bound listener found, checked against the group's. */
static int check_device(struct rdma_sq_node *node, struct squall_error *err)
{
	const struct rdma_sq_member *me = &node->members[node->my_index];

	node->ctx = node->listen_id->verbs;
	node->port = node->listen_id->port_num;
	if (!node->ctx)
		return squall_error_set(err, -ENODEV,
			"member %u: address %s is not owned by any RDMA device. %s",
			me->id, me->address, NO_DEVICE);
	if (node->device[0] &&
	    strcmp(node->device, ibv_get_device_name(node->ctx->device)))
		return squall_error_set(err, -ENODEV,
			"member %u: address %s belongs to RDMA device %s, but the group names device %s",
			me->id, me->address, ibv_get_device_name(node->ctx->device),
			node->device);
	return 0;
}

/* Give the rdma_cm channel a descriptor above the verbs device's. When a
 * process dies, the kernel releases its files from the highest descriptor
 * down: with the channel above, its connections close first (each peer
 * is told at once) and the device's queue pairs and registered memory are
 * torn down after, not before (in the Soft-RoCE VM the teardown took
 * 11-15 ms of a killed member's 30-40 ms to its peers' disconnect
 * events). A descriptor that cannot move only leaves it slower. */
static void channel_above_device(struct rdma_sq_node *node)
{
	int fd;

	if (node->ech->fd > node->ctx->cmd_fd)
		return;
	fd = fcntl(node->ech->fd, F_DUPFD_CLOEXEC, node->ctx->cmd_fd + 1);
	if (fd < 0)
		return;
	close(node->ech->fd);
	node->ech->fd = fd;
}

/* Bind the listener to our own address (or take the kept one, bound
 * there already): this also tells us the device. */
static int bind_listener(struct rdma_sq_node *node, struct squall_error *err)
{
	const struct rdma_sq_member *me = &node->members[node->my_index];
	int ret;

	if (node->adopt) {
		ret = adopt_listener(node, err);
		return ret ? ret : check_device(node, err);
	}
	ret = open_channel(node, err);
	if (ret)
		return ret;
	if (rdma_create_id(node->ech, &node->listen_id, NULL, RDMA_PS_TCP))
		return squall_error_set(err, neg_errno(), "rdma_create_id: %s",
					strerror(errno));
	if (rdma_bind_addr(node->listen_id, (struct sockaddr *)&node->my_addr))
		return squall_error_set(err, neg_errno(),
			"rdma_bind_addr(%s:%u) for member %u: %s (is the address "
			"on an RDMA device? %s)", me->address, me->port, me->id,
			strerror(errno), NO_DEVICE);
	ret = check_device(node, err);
	if (!ret)
		channel_above_device(node);
	return ret;
}

static int check_port(struct rdma_sq_node *node, struct squall_error *err)
{
	struct ibv_port_attr pa;
	int ret = ibv_query_port(node->ctx, node->port, &pa);

	if (ret)
		return squall_error_set(err, -ret, "ibv_query_port(%s, %u): %s",
			rdma_sq_device_name(node), node->port, strerror(ret));
	if (pa.state != IBV_PORT_ACTIVE)
		return squall_error_set(err, -ENETDOWN,
			"RDMA device %s port %u is %s, not active",
			rdma_sq_device_name(node), node->port,
			ibv_port_state_str(pa.state));
	rdma_sq_log(node, RDMA_SQ_LOG_INFO, "member %u on %s port %u, active MTU %d",
		    node->my_id, rdma_sq_device_name(node), node->port,
		    128 << pa.active_mtu);
	return 0;
}

/* PD, completion channel, one CQ sized for every peer's queues. */
/* Soft-RoCE's ibv_device_attr.vendor_id. */
#define RXE_VENDOR_ID 0xffffffu

static int alloc_queues(struct rdma_sq_node *node, struct squall_error *err)
{
	struct ibv_device_attr da;
	uint32_t peers = node->npeers > 1 ? node->npeers - 1 : 1;
	long want = (long)peers * (node->opt.max_send_wr + node->opt.max_recv_wr) + 16;
	int ret = ibv_query_device(node->ctx, &da);

	if (ret)
		return squall_error_set(err, -ret, "ibv_query_device(%s): %s",
					rdma_sq_device_name(node), strerror(ret));
	if (want > da.max_cqe)
		return squall_error_set(err, -EINVAL,
			"%u peers x %u+%u work requests need %ld completion entries; %s allows %d",
			peers, node->opt.max_send_wr, node->opt.max_recv_wr, want,
			rdma_sq_device_name(node), da.max_cqe);
	if ((int)node->opt.max_sge > da.max_sge)
		node->opt.max_sge = (uint32_t)da.max_sge;
	/* (a kept listener brought the previous node's, on the same
	 * device: adopt_listener) */
	if (!node->pd)
		node->pd = ibv_alloc_pd(node->ctx);
	if (!node->pd)
		return squall_error_set(err, neg_errno(), "ibv_alloc_pd(%s): %s",
					rdma_sq_device_name(node), strerror(errno));
	node->cch = ibv_create_comp_channel(node->ctx);
	if (!node->cch)
		return squall_error_set(err, neg_errno(), "ibv_create_comp_channel: %s",
					strerror(errno));
	ret = set_nonblock(node->cch->fd);
	if (ret)
		return squall_error_set(err, ret, "fcntl(O_NONBLOCK) on the completion channel: %s",
					strerror(-ret));
	node->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (node->wake_fd < 0)
		return squall_error_set(err, neg_errno(), "eventfd: %s",
					strerror(errno));
	node->cq_size = (int)want;
	node->cq = ibv_create_cq(node->ctx, node->cq_size, node, node->cch, 0);
	if (!node->cq)
		return squall_error_set(err, neg_errno(), "ibv_create_cq(%d entries): %s",
					node->cq_size, strerror(errno));
	node->mw_bind = da.max_mw > 0;
	/* rxe (vendor id 0xffffff) checks a write through a window against
	 * the registration under it, not against the window's own range
	 * (rxe_resp.c check_rkey): a window there would bound nothing but
	 * its key's life, so peers get registrations of exactly their
	 * ranges instead. */
	node->win_mw = da.max_mw > 0 && da.vendor_id != RXE_VENDOR_ID;
	node->win_rxe = da.vendor_id == RXE_VENDOR_ID;
	node->max_rd_atom = da.max_qp_rd_atom < da.max_qp_init_rd_atom ?
		da.max_qp_rd_atom : da.max_qp_init_rd_atom;
	if (node->max_rd_atom > 16)
		node->max_rd_atom = 16;
	return 0;
}

int rdma_sq_region_access(const struct rdma_sq_node *node)
{
	int a = IBV_ACCESS_LOCAL_WRITE;

	/* With windows, peers write only through them: the region's own key
	 * gives no remote access. */
	if (!node->opt.peer_windows)
		a |= IBV_ACCESS_REMOTE_WRITE;
	if (node->opt.region_remote_read)
		a |= IBV_ACCESS_REMOTE_READ;
	/* Windows over the region: the peers' (win_mw) and use-once ones
	 * (mw_bind). The ODP probe turns the second off alone. */
	return node->mw_bind || node->win_mw ? a | IBV_ACCESS_MW_BIND : a;
}

/* The cache's callbacks: foreign memory is for this member's own sends,
 * with no remote access of its own; it may carry a use-once window (whose
 * access is the window's: a remote read). Called under the cache's writer
 * lock. On an ODP device a registration the device refuses on demand is
 * made pinned instead (counted). */
static int cache_reg(void *ctx, void *addr, size_t len, void **handle)
{
	struct rdma_sq_node *node = ctx;
	int access;
	struct ibv_mr *mr;

	/* A kept cache between two nodes serves no one. */
	if (!node)
		return -ENOTCONN;
	access = IBV_ACCESS_LOCAL_WRITE | (node->mw_bind ? IBV_ACCESS_MW_BIND : 0);

	if (node->odp) {
		mr = ibv_reg_mr(node->pd, addr, len, access | IBV_ACCESS_ON_DEMAND);
		if (mr) {
			__atomic_fetch_add(&node->odp_regs, 1, __ATOMIC_RELAXED);
			*handle = mr;
			return 0;
		}
		if (__atomic_fetch_add(&node->odp_fallbacks, 1, __ATOMIC_RELAXED) == 0)
			rdma_sq_log(node, RDMA_SQ_LOG_INFO,
				    "ibv_reg_mr(%p, %zu bytes, on demand): %s; "
				    "registering pinned instead", addr, len,
				    strerror(errno));
	}
	mr = ibv_reg_mr(node->pd, addr, len, access);
	if (!mr)
		return neg_errno();
	*handle = mr;
	return 0;
}

static int cache_dereg(void *ctx, void *handle)
{
	(void)ctx;
	return -ibv_dereg_mr(handle);
}

static void cache_log(void *ctx, enum regcache_log_level level, const char *msg)
{
	if (!ctx)
		return;
	rdma_sq_log(ctx, level == REGCACHE_LOG_WARN ? RDMA_SQ_LOG_ERROR :
		    RDMA_SQ_LOG_INFO, "registration cache: %s", msg);
}

static int make_cache(struct rdma_sq_node *node, struct squall_error *err)
{
	struct regcache_config cc = {
		.reg = cache_reg,
		.dereg = cache_dereg,
		.ctx = node,
		.max_bytes = node->opt.cache_max_bytes,
		.max_entries = node->opt.cache_max_entries,
		.monitor = node->opt.cache_monitor,
		.log = cache_log,
		.log_ctx = node,
	};
	int ret = pthread_mutex_init(&node->hold_lock, NULL);

	if (ret)
		return squall_error_set(err, -ret, "pthread_mutex_init: %s",
					strerror(ret));
	/* The previous node's, with what it has cached and its limits. */
	if (node->adopt && node->adopt->cache) {
		node->cache = node->adopt->cache;
		node->adopt->cache = NULL;
		regcache_rebind(node->cache, node, node);
		return 0;
	}
	return regcache_create(&cc, &node->cache, err);
}

struct regcache *rdma_sq_regcache(struct rdma_sq_node *node)
{
	return node->cache;
}

/* Take a copy of what the node keeps of the group. */
static int copy_group(struct rdma_sq_node *node, const struct rdma_sq_group *grp,
		      struct squall_error *err)
{
	node->nmembers = grp->nmembers;
	node->members = calloc(grp->nmembers, sizeof(*node->members));
	node->name = strdup(grp->name ? grp->name : "the group");
	node->key_file = strdup(grp->key_file ? grp->key_file : "");
	node->device = strdup(grp->device ? grp->device : "");
	if (!node->members || !node->name || !node->key_file || !node->device)
		return squall_error_set(err, -ENOMEM, "out of memory for the node");
	memcpy(node->members, grp->members,
	       grp->nmembers * sizeof(*node->members));
	for (uint32_t i = 0; i < grp->nmembers; i++)
		node->members[i].address[RDMA_SQ_ADDR_MAX - 1] = '\0';
	node->cookie = grp->cookie;
	node->epoch = grp->epoch;
	node->has_key = grp->key != NULL;
	if (grp->key)
		memcpy(node->key, grp->key, SQUALL_KEY_LEN);
	node->connect_timeout_ms = grp->connect_timeout_ms;
	return 0;
}

/* The region's registration: the previous node's, kept with its
 * listener, when it covers exactly this region with the same access;
 * else a new one. */
static int register_region(struct rdma_sq_node *node, struct squall_error *err)
{
	int access = rdma_sq_region_access(node);
	struct rdma_sq_listener *l = node->adopt;
	struct ibv_mr *old = l ? l->region_mr : NULL;

	if (old && old->addr == node->region && old->length == node->region_len &&
	    l->region_access == access) {
		node->region_mr = old;
		l->region_mr = NULL;
		return 0;
	}
	if (old) {
		ibv_dereg_mr(old);
		l->region_mr = NULL;
	}
	node->region_mr = ibv_reg_mr(node->pd, node->region, node->region_len,
				     access);
	if (!node->region_mr)
		return squall_error_set(err, neg_errno(),
			"ibv_reg_mr(region, %zu bytes): %s", node->region_len,
			strerror(errno));
	return 0;
}

int rdma_sq_create(const struct rdma_sq_group *grp, uint32_t my_id,
		   void *region, size_t region_len,
		   const struct rdma_sq_options *opt,
		   struct rdma_sq_node **out, struct squall_error *err)
{
	struct rdma_sq_listener *kept = opt ? opt->listener : NULL;
	struct rdma_sq_node *node;
	int ret;

	squall_error_clear(err);
	if (!grp || !grp->members || !out || !region || !region_len)
		ret = squall_error_set(err, -EINVAL, "rdma_sq_create: the "
			"group, its members, region and out are required");
	else if (grp->nmembers == 0 || grp->nmembers > RDMA_SQ_MAX_MEMBERS)
		ret = squall_error_set(err, -EINVAL,
			"rdma_sq_create: the group has %u members", grp->nmembers);
	else if (!(node = calloc(1, sizeof(*node))))
		ret = squall_error_set(err, -ENOMEM, "out of memory for the node");
	else
		ret = 0;
	if (ret) {
		rdma_sq_listener_free(kept);
		return ret;
	}
	/* Taken over by the listener's set-up, or closed with the node. */
	node->adopt = kept;
	node->my_id = my_id;
	node->my_index = -1;
	node->wake_fd = -1;
	pthread_mutex_init(&node->win_lock, NULL);
	node->region = region;
	node->region_len = region_len;
	ret = copy_group(node, grp, err);
	if (!ret)
		ret = fill_options(&node->opt, opt, err);
	node->opt.listener = NULL;
	if (!ret)
		ret = init_peers(node, err);
	if (!ret && node->my_index < 0)
		ret = squall_error_set(err, -ENOENT,
			"member %u is not in the group (%s)", my_id, node->name);
	if (!ret)
		ret = parse_addr(&node->members[node->my_index], &node->my_addr, err);
	if (!ret)
		ret = bind_listener(node, err);
	if (!ret)
		ret = check_port(node, err);
	if (!ret)
		ret = alloc_queues(node, err);
	if (!ret) {
		rdma_sq_odp_probe(node);
		ret = make_cache(node, err);
	}
	if (!ret)
		ret = register_region(node, err);
	if (ret) {
		rdma_sq_destroy(node);
		return ret;
	}
	/* The kept listener is empty now. */
	rdma_sq_listener_free(node->adopt);
	node->adopt = NULL;
	*out = node;
	return 0;
}

/* Disconnect: the queue pair goes to the error state, where what a peer
 * still sends is dropped, not refused. */
static void disconnect_peer(struct rdma_sq_peer *p)
{
	if (p->cm && p->state == PEER_UP)
		rdma_disconnect(p->cm);
}

static void destroy_peer(struct rdma_sq_peer *p)
{
	if (p->probe)
		rdma_destroy_id(p->probe);
	p->probe = NULL;
	if (!p->cm)
		return;
	if (p->cm->qp)
		rdma_destroy_qp(p->cm);
	rdma_destroy_id(p->cm);
	p->cm = NULL;
	p->qp = NULL;
	rdma_sq_ctl_io_free(&p->aio);
	rdma_sq_ctl_io_free(&p->gio);
}

void rdma_sq_destroy(struct rdma_sq_node *node)
{
	if (!node)
		return;
	/* Windows go after the disconnects (a peer's write in flight meets a
	 * dead connection, not a dead key: it must not take it for a
	 * refusal of its own fault) and before the queue pairs they are
	 * bound to (rxe does not finish destroying a queue pair that a
	 * window still holds); and before the registrations they sit on. */
	for (uint32_t i = 0; node->peers && i < node->npeers; i++)
		disconnect_peer(&node->peers[i]);
	rdma_sq_use_once_destroy_all(node);
	rdma_sq_window_destroy_all(node);
	pthread_mutex_destroy(&node->win_lock);
	for (uint32_t i = 0; node->peers && i < node->npeers; i++)
		destroy_peer(&node->peers[i]);
	if (node->listen_id)
		rdma_destroy_id(node->listen_id);
	rdma_sq_listener_free(node->adopt);
	/* holds before the cache that owns them; a cache kept for the next
	 * node calls back into no node until that one takes it over */
	if (node->cache) {
		rdma_sq_hold_release_all(node);
		if (node->pd_kept)
			regcache_rebind(node->cache, NULL, NULL);
		else
			regcache_destroy(node->cache);
		pthread_mutex_destroy(&node->hold_lock);
	}
	while (node->mrs) {
		struct rdma_sq_mr *m = node->mrs;

		node->mrs = m->next;
		ibv_dereg_mr(m->mr);
		free(m);
	}
	if (node->region_mr && !node->pd_kept)
		ibv_dereg_mr(node->region_mr);
	if (node->cq)
		ibv_destroy_cq(node->cq);
	if (node->cch)
		ibv_destroy_comp_channel(node->cch);
	if (node->pd && !node->pd_kept)
		ibv_dealloc_pd(node->pd);
	if (node->ech)
		rdma_destroy_event_channel(node->ech);
	if (node->wake_fd >= 0)
		close(node->wake_fd);
	free(node->peers);
	free(node->members);
	free(node->name);
	free(node->key_file);
	free(node->device);
	/* The key does not outlive the node. */
	memset(node->key, 0, sizeof(node->key));
	free(node);
}

uint32_t rdma_sq_my_id(const struct rdma_sq_node *node)
{
	return node->my_id;
}

uint32_t rdma_sq_nmembers(const struct rdma_sq_node *node)
{
	return node->npeers;
}

uint32_t rdma_sq_max_sge(const struct rdma_sq_node *node)
{
	return node->opt.max_sge;
}

uint32_t rdma_sq_member_id(const struct rdma_sq_node *node, uint32_t i)
{
	return i < node->nmembers ? node->members[i].id : UINT32_MAX;
}

uint64_t rdma_sq_refused(const struct rdma_sq_node *node)
{
	return __atomic_load_n(&node->refused, __ATOMIC_RELAXED);
}

const char *rdma_sq_device_name(const struct rdma_sq_node *node)
{
	return node->ctx ? ibv_get_device_name(node->ctx->device) : "";
}

uint8_t rdma_sq_port(const struct rdma_sq_node *node)
{
	return node->port;
}

int rdma_sq_reg_mr(struct rdma_sq_node *node, void *ptr, size_t len,
		   int access, struct rdma_sq_mr **out,
		   struct squall_error *err)
{
	struct rdma_sq_mr *m;

	if (!node || !ptr || !len || !out)
		return squall_error_set(err, -EINVAL, "rdma_sq_reg_mr: bad arguments");
	if (!access)
		access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ;
	m = calloc(1, sizeof(*m));
	if (!m)
		return squall_error_set(err, -ENOMEM, "out of memory for a registration");
	m->mr = ibv_reg_mr(node->pd, ptr, len, access);
	if (!m->mr) {
		int ret = neg_errno();

		free(m);
		return squall_error_set(err, ret, "ibv_reg_mr(%p, %zu bytes): %s",
					ptr, len, strerror(-ret));
	}
	m->next = node->mrs;
	node->mrs = m;
	*out = m;
	return 0;
}

uint32_t rdma_sq_mr_rkey(const struct rdma_sq_mr *mr)
{
	return mr->mr->rkey;
}

uint32_t rdma_sq_mr_lkey(const struct rdma_sq_mr *mr)
{
	return mr->mr->lkey;
}

int rdma_sq_dereg_mr(struct rdma_sq_node *node, struct rdma_sq_mr *mr,
		     struct squall_error *err)
{
	struct rdma_sq_mr **pp;
	int ret;

	for (pp = &node->mrs; *pp && *pp != mr; pp = &(*pp)->next)
		;
	if (!*pp)
		return squall_error_set(err, -ENOENT,
			"rdma_sq_dereg_mr: not a registration of this node");
	ret = ibv_dereg_mr(mr->mr);
	if (ret)
		return squall_error_set(err, -ret, "ibv_dereg_mr: %s", strerror(ret));
	*pp = mr->next;
	free(mr);
	return 0;
}
