// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Client calls: a request with handles and inline data, its reply. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Handles of this context must be current. ctx->lock held. */
static int check_handles(struct cbrpc_ctx *ctx, const struct cbrpc_call_args *a)
{
	for (unsigned int i = 0; i < a->nhandles; i++) {
		const struct cbrpc_handle *h = &a->handles[i];
		struct cbrpc_block *b;

		if (h->owner != ctx->id)
			continue;	/* forwarded: the server checks it */
		b = cbrpc_find_block(ctx, h);
		if (!b)
			return cbrpc_err(CBRPC_EINVAL);
		if (h->version != b->version)
			return cbrpc_err(CBRPC_ESTALE);
	}
	return 0;
}

CBRPC_EXPORT int cbrpc_call_start(struct cbrpc_session *s, const struct cbrpc_call_args *a,
				  struct cbrpc_call **out)
{
	struct cbrpc_wire_hdr *h;
	struct cbrpc_wire_handle *wh;
	struct cbrpc_call *c;
	int ret;

	if (!s || !a || !out || (a->nhandles && !a->handles) ||
	    (a->inline_len && !a->inline_data))
		return cbrpc_err(CBRPC_EINVAL);
	*out = NULL;
	if (a->nhandles > CBRPC_MAX_HANDLES || a->inline_len > s->max_inline)
		return cbrpc_err(CBRPC_E2BIG);
	pthread_mutex_lock(&s->ctx->lock);
	ret = check_handles(s->ctx, a);
	pthread_mutex_unlock(&s->ctx->lock);
	if (ret)
		return ret;
	c = calloc(1, sizeof(*c));
	if (!c)
		return cbrpc_err(CBRPC_ENOMEM);
	c->nhandles = a->nhandles;
	if (a->nhandles)
		memcpy(c->handles, a->handles, a->nhandles * sizeof(*a->handles));
	pthread_mutex_lock(&s->lock);
	ret = cbrpc_slot_take(s, c);
	if (ret) {
		pthread_mutex_unlock(&s->lock);
		free(c);
		return ret;
	}
	h = (void *)cbrpc_session_sendbuf(s, c->slot);
	*h = (struct cbrpc_wire_hdr){
		.magic = htole32(CBRPC_WIRE_MAGIC),
		.type = CBRPC_MSG_REQ,
		.nhandles = (uint8_t)a->nhandles,
		.inline_len = htole32((uint32_t)a->inline_len),
		.call_id = htole32(c->id),
		.op = htole32(a->op),
	};
	wh = (void *)(h + 1);
	for (unsigned int i = 0; i < a->nhandles; i++)
		cbrpc_handle_to_wire(&wh[i], &a->handles[i]);
	if (a->inline_len)
		memcpy(wh + a->nhandles, a->inline_data, a->inline_len);
	ret = cbrpc_session_send(s, c, sizeof(*h) + a->nhandles * sizeof(*wh) + a->inline_len);
	if (ret) {
		s->slots[c->slot] = NULL;
		s->outstanding--;
		pthread_mutex_unlock(&s->lock);
		free(c);
		return ret;
	}
	pthread_mutex_unlock(&s->lock);
	*out = c;
	return 0;
}

/* Objects the server wrote into get new versions. */
static void bump_written(struct cbrpc_ctx *ctx, const struct cbrpc_call *c)
{
	pthread_mutex_lock(&ctx->lock);
	for (unsigned int i = 0; i < c->nhandles; i++) {
		struct cbrpc_block *b;

		if (!(c->result.written & (1u << i)))
			continue;
		b = cbrpc_find_block(ctx, &c->handles[i]);
		if (b)
			b->version = ctx->next_version++;
	}
	pthread_mutex_unlock(&ctx->lock);
}

CBRPC_EXPORT int cbrpc_call_wait(struct cbrpc_call *c, int timeout_ms,
				 struct cbrpc_result *result)
{
	struct cbrpc_session *s;
	int ret;

	if (!c || !result)
		return cbrpc_err(CBRPC_EINVAL);
	s = c->session;
	if (!s)		/* the session was closed under it */
		return cbrpc_err(c->err ? c->err : CBRPC_ECANCELED);
	pthread_mutex_lock(&s->lock);
	ret = cbrpc_session_wait(s, c, cbrpc_deadline(timeout_ms));
	if (!ret && c->err)
		ret = cbrpc_err(c->err);
	pthread_mutex_unlock(&s->lock);
	if (ret)
		return ret;
	if (c->result.written)
		bump_written(s->ctx, c);
	result->status = c->result.status;
	result->written = c->result.written;
	result->inline_len = c->result.inline_len;
	memcpy(result->inline_data, c->result.inline_data, c->result.inline_len);
	return 0;
}

CBRPC_EXPORT void cbrpc_call_free(struct cbrpc_call *c)
{
	struct cbrpc_session *s;

	if (!c)
		return;
	s = c->session;
	if (!s) {
		free(c);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if (c->done) {
		s->slots[c->slot] = NULL;
		s->outstanding--;
		free(c);
	} else {
		c->abandoned = true;	/* freed with its slot when the reply comes */
	}
	pthread_mutex_unlock(&s->lock);
}

CBRPC_EXPORT int cbrpc_call(struct cbrpc_session *s, const struct cbrpc_call_args *a,
			    struct cbrpc_result *result, int timeout_ms)
{
	struct cbrpc_call *c;
	int ret = cbrpc_call_start(s, a, &c);

	if (ret)
		return ret;
	ret = cbrpc_call_wait(c, timeout_ms, result);
	cbrpc_call_free(c);
	return ret;
}
