/*
 * plan.c - one member's part of an RDMC transfer, and the READY/DONE codec.
 *
 * A schedule answers "what does rank r do in step s"; a member running a
 * transfer wants the answer the other way round: the list of block writes
 * it must post, in schedule order, and the peers on either side of it (the
 * ones that write into its buffer need its READY; the ones it writes to
 * must send theirs before it may write). The plan is that list, built once
 * per transfer by walking the member's busy steps.
 */
#include "rdmc/plan.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <squall/wire.h>

/* Collect the ranks marked in mark[0..n) into a fresh ascending array. */
static int collect(const bool *mark, unsigned n, uint32_t **out, unsigned *cnt)
{
	unsigned c = 0;

	for (unsigned i = 0; i < n; i++)
		c += mark[i];
	*cnt = c;
	*out = NULL;
	if (!c)
		return 0;
	*out = malloc(c * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	c = 0;
	for (unsigned i = 0; i < n; i++)
		if (mark[i])
			(*out)[c++] = i;
	return 0;
}

static int walk(const struct rdmc_schedule *s, struct rdmc_plan *p,
		bool *src, bool *dst)
{
	unsigned steps = rdmc_schedule_steps(s), cap = 0;
	struct rdmc_transfer snd, rcv;

	for (unsigned st = rdmc_schedule_next_active(s, p->rank, 0); st < steps;
	     st = rdmc_schedule_next_active(s, p->rank, st + 1)) {
		rdmc_schedule_get(s, st, p->rank, &snd, &rcv);
		if (rcv.peer != RDMC_NONE) {
			src[rcv.peer] = true;
			p->nrecvs++;
		}
		if (snd.peer == RDMC_NONE)
			continue;
		dst[snd.peer] = true;
		if (p->nsends == cap) {
			struct rdmc_send_op *grown;

			cap = cap ? 2 * cap : 64;
			grown = realloc(p->sends, cap * sizeof(*grown));
			if (!grown)
				return -ENOMEM;
			p->sends = grown;
		}
		p->sends[p->nsends++] = (struct rdmc_send_op){ snd.peer, snd.block };
	}
	return 0;
}

int rdmc_plan_build(enum rdmc_algorithm alg, unsigned n, unsigned k,
		    unsigned rank, struct rdmc_plan *out)
{
	struct rdmc_schedule *s;
	bool *src = NULL, *dst = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	if (k > RDMC_MAX_BLOCKS || rank >= n)
		return -EINVAL;
	ret = rdmc_schedule_create(alg, n, k, &s);
	if (ret)
		return ret;
	out->n = n;
	out->k = k;
	out->rank = rank;
	src = calloc(n, sizeof(*src));
	dst = calloc(n, sizeof(*dst));
	ret = src && dst ? walk(s, out, src, dst) : -ENOMEM;
	if (!ret)
		ret = collect(src, n, &out->sources, &out->nsources);
	if (!ret)
		ret = collect(dst, n, &out->targets, &out->ntargets);
	free(src);
	free(dst);
	rdmc_schedule_destroy(s);
	if (ret) {
		rdmc_plan_free(out);
		return ret;
	}
	assert(out->nrecvs == (rank ? k : 0));
	return 0;
}

void rdmc_plan_free(struct rdmc_plan *p)
{
	free(p->sends);
	free(p->sources);
	free(p->targets);
	memset(p, 0, sizeof(*p));
}

/* ---- control messages: header, optional TARGET, 20-byte payload ------- */

#define CTL_PAYLOAD 20u /* group u32, slot u32, msg_id u64, status i32 */

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

int rdmc_ctl_encode(void *buf, size_t cap, const struct rdmc_ctl *c)
{
	struct wire_ext ext = { .type = WIRE_EXT_TARGET };
	bool target = c->type == WIRE_MSG_RDMC_READY && c->status == 0;
	uint8_t *p;
	int hl;

	if (c->type != WIRE_MSG_RDMC_READY && c->type != WIRE_MSG_RDMC_DONE)
		return -EINVAL;
	ext.u.target = (struct wire_target){ WIRE_TARGET_RDMC_BUFFER, c->addr,
					     c->rkey, c->len };
	hl = wire_encode(buf, cap, c->type, c->flags, &ext, target, CTL_PAYLOAD,
			 NULL);
	if (hl < 0)
		return hl;
	if ((size_t)hl + CTL_PAYLOAD > cap)
		return -ENOSPC;
	p = (uint8_t *)buf + hl;
	put32(p, c->group);
	put32(p + 4, c->slot);
	put32(p + 8, (uint32_t)c->msg_id);
	put32(p + 12, (uint32_t)(c->msg_id >> 32));
	put32(p + 16, (uint32_t)c->status);
	return hl + (int)CTL_PAYLOAD;
}

int rdmc_ctl_decode(const void *buf, size_t len, struct rdmc_ctl *c)
{
	struct wire_msg m;
	struct wire_ext ext;
	int ret = wire_decode(buf, len, &m, NULL);

	if (ret)
		return ret;
	if (m.type != WIRE_MSG_RDMC_READY && m.type != WIRE_MSG_RDMC_DONE)
		return -ENOMSG;
	if (m.payload_len < CTL_PAYLOAD)
		return -EBADMSG;
	memset(c, 0, sizeof(*c));
	c->type = m.type;
	c->flags = m.flags;
	c->group = get32(m.payload);
	c->slot = get32(m.payload + 4);
	c->msg_id = get32(m.payload + 8) | (uint64_t)get32(m.payload + 12) << 32;
	c->status = (int32_t)get32(m.payload + 16);
	if (c->type != WIRE_MSG_RDMC_READY || c->status)
		return 0;
	if (wire_ext_find(&m, WIRE_EXT_TARGET, &ext) ||
	    ext.len < WIRE_EXT_TARGET_LEN ||
	    ext.u.target.purpose != WIRE_TARGET_RDMC_BUFFER ||
	    c->slot >= RDMC_IMM_SLOTS)
		return -EBADMSG;
	c->addr = ext.u.target.addr;
	c->rkey = ext.u.target.rkey;
	c->len = ext.u.target.len;
	return 0;
}
