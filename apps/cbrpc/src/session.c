// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Client sessions: connection over RDMA-CM, message buffers, and the
 * caller-driven progress engine (one thread at a time in poll(), the others
 * wait on the session's condition variable).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define DEFAULT_DEPTH 16
#define MAX_DEPTH 64
#define DEFAULT_TIMEOUT_MS 15000	/* rdma_cm retries a lost REQ after about 4 s */
#define PROGRESS_SLICE_MS 100
#define DEFAULT_KEEPALIVE_MS 1000
#define KA_WR_ID UINT64_MAX	/* the keepalive READ; the others are buffer indexes */

static uint8_t *recvbuf(struct cbrpc_session *s, unsigned int i)
{
	return s->buf + (size_t)i * CBRPC_MSG_SIZE;
}

uint8_t *cbrpc_session_sendbuf(struct cbrpc_session *s, unsigned int slot)
{
	return s->buf + (size_t)s->depth * CBRPC_MSG_SIZE + (size_t)slot * s->send_size;
}

/* depth receive buffers, depth send buffers, the keepalive READ's target */
static size_t session_buf_bytes(const struct cbrpc_session *s)
{
	return (size_t)s->depth * (CBRPC_MSG_SIZE + s->send_size) + CBRPC_MSG_SIZE;
}

static int post_recv(struct cbrpc_session *s, unsigned int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)recvbuf(s, i),
		.length = CBRPC_MSG_SIZE,
		.lkey = s->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(s->id->qp, &wr, &bad) ? cbrpc_err(CBRPC_EDEVICE) : 0;
}

int cbrpc_session_send(struct cbrpc_session *s, struct cbrpc_call *c, size_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)cbrpc_session_sendbuf(s, c->slot),
		.length = (uint32_t)len,
		.lkey = s->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = s->depth + c->slot,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (s->dead)
		return cbrpc_err(s->dead);
	return ibv_post_send(s->id->qp, &wr, &bad) ? cbrpc_err(CBRPC_EDEVICE) : 0;
}

int cbrpc_slot_take(struct cbrpc_session *s, struct cbrpc_call *c)
{
	if (s->dead)
		return cbrpc_err(s->dead);
	for (unsigned int i = 0; i < s->depth; i++) {
		if (!s->slots[i]) {
			s->slots[i] = c;
			s->outstanding++;
			c->session = s;
			c->slot = i;
			s->gen = (s->gen + 1) & 0xffffff;
			c->id = (s->gen << 8) | i;
			c->done = false;
			return 0;
		}
	}
	return cbrpc_err(CBRPC_EBUSY);
}

static void slot_release(struct cbrpc_session *s, unsigned int i)
{
	struct cbrpc_call *c = s->slots[i];

	s->slots[i] = NULL;
	s->outstanding--;
	if (c && c->abandoned)
		free(c);
}

static void call_complete(struct cbrpc_session *s, struct cbrpc_call *c, int err)
{
	c->done = true;
	c->err = err;
	if (c->abandoned)
		slot_release(s, c->slot);
}

void cbrpc_session_fail(struct cbrpc_session *s, int err)
{
	if (s->dead)
		return;
	s->dead = err;
	for (unsigned int i = 0; i < s->depth; i++) {
		struct cbrpc_call *c = s->slots[i];

		if (c && !c->done)
			call_complete(s, c, err);
	}
	pthread_cond_broadcast(&s->cond);
}

/* A reply in receive buffer I of LEN bytes. session->lock held. */
static void handle_reply(struct cbrpc_session *s, unsigned int i, uint32_t len)
{
	const struct cbrpc_wire_hdr *h = (const void *)recvbuf(s, i);
	struct cbrpc_call *c;
	uint32_t id;
	size_t inl;

	if (len < sizeof(*h) || le32toh(h->magic) != CBRPC_WIRE_MAGIC ||
	    h->type != CBRPC_MSG_REP) {
		cbrpc_session_fail(s, CBRPC_EPROTO);
		return;
	}
	id = le32toh(h->call_id);
	inl = le32toh(h->inline_len);
	c = (id & 0xff) < s->depth ? s->slots[id & 0xff] : NULL;
	if (!c || c->id != id || c->done ||
	    inl > CBRPC_INLINE_MAX || len != sizeof(*h) + inl) {
		cbrpc_session_fail(s, CBRPC_EPROTO);
		return;
	}
	s->last_alive = cbrpc_now_ms();
	c->result.status = (int32_t)le32toh((uint32_t)h->status);
	c->result.written = le32toh(h->written);
	if (c->nhandles < 32)
		c->result.written &= (1u << c->nhandles) - 1;
	c->result.inline_len = inl;
	memcpy(c->result.inline_data, h + 1, inl);
	call_complete(s, c, 0);
	if (post_recv(s, i))
		cbrpc_session_fail(s, CBRPC_EDEVICE);
}

/* Drain the CQ; how many completions it had. session->lock held. */
static int drain_cq(struct cbrpc_session *s)
{
	struct ibv_wc wc[16];
	int n, total = 0;

	while ((n = ibv_poll_cq(s->cq, 16, wc)) > 0) {
		total += n;
		for (int k = 0; k < n; k++) {
			if (wc[k].wr_id == KA_WR_ID) {
				s->ka_inflight = false;
				if (wc[k].status == IBV_WC_SUCCESS)
					s->last_alive = cbrpc_now_ms();
			}
			if (wc[k].status != IBV_WC_SUCCESS) {
				cbrpc_session_fail(s, wc[k].status == IBV_WC_REM_ACCESS_ERR ?
						   CBRPC_EREMOTE : CBRPC_EDISCONNECTED);
				continue;
			}
			if (wc[k].opcode == IBV_WC_RECV && wc[k].wr_id < s->depth && !s->dead)
				handle_reply(s, (unsigned int)wc[k].wr_id, wc[k].byte_len);
		}
	}
	if (n < 0)
		cbrpc_session_fail(s, CBRPC_EDEVICE);
	pthread_cond_broadcast(&s->cond);
	return total;
}

/* Connection events after the connection stands. session->lock held. */
static void drain_cm(struct cbrpc_session *s)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(s->ech, &ev)) {
		enum rdma_cm_event_type type = ev->event;

		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    type == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			cbrpc_session_fail(s, CBRPC_EDISCONNECTED);
			rdma_disconnect(s->id);
		}
	}
}

/*
 * One progress step without the lock: poll the CQ for up to spin_us (a
 * reply that comes meanwhile costs no interrupt, wake-up or system call),
 * then wait for the CQ or the CM; MS bounds both.
 */
static void progress_step(struct cbrpc_session *s, int ms)
{
	int fds[2] = { s->cch->fd, s->ech->fd };
	short rev[2];
	struct ibv_cq *cq;
	void *cq_ctx;

	if (s->spin_us > 0) {
		int64_t end = cbrpc_spin_end(s->spin_us, ms);
		int n;

		do {
			pthread_mutex_lock(&s->lock);
			n = drain_cq(s);
			pthread_mutex_unlock(&s->lock);
			if (n)
				return;
		} while (cbrpc_now_us() < end);
	}
	cbrpc_poll_fds(fds, rev, 2, ms);
	if (rev[0] && !ibv_get_cq_event(s->cch, &cq, &cq_ctx)) {
		ibv_ack_cq_events(cq, 1);
		ibv_req_notify_cq(cq, 0);
	}
	/* completions first: a reply that came before the server hung up
	 * (it waits for its reply's acknowledgement, then disconnects) is
	 * the call's answer, not a disconnection */
	pthread_mutex_lock(&s->lock);
	drain_cq(s);
	if (rev[1])
		drain_cm(s);
	pthread_mutex_unlock(&s->lock);
}

/* Calls outstanding and nothing heard from the server for a while: READ its
 * keepalive word. A vanished machine fails the READ (retries exhausted).
 * session->lock held. */
static void keepalive_probe(struct cbrpc_session *s)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(s->buf + session_buf_bytes(s) - CBRPC_MSG_SIZE),
		.length = sizeof(uint64_t),
		.lkey = s->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = KA_WR_ID,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = s->ka_addr, .rkey = s->ka_rkey },
	}, *bad;

	if (s->keepalive_ms <= 0 || !s->ka_rkey || s->ka_inflight || s->dead ||
	    !s->outstanding || cbrpc_now_ms() - s->last_alive < s->keepalive_ms)
		return;
	if (!ibv_post_send(s->id->qp, &wr, &bad))
		s->ka_inflight = true;
}

int cbrpc_session_wait(struct cbrpc_session *s, struct cbrpc_call *c, int64_t deadline)
{
	drain_cq(s);
	while (!c->done) {
		int left = cbrpc_left_ms(deadline);

		keepalive_probe(s);
		if (left == 0)
			return cbrpc_err(CBRPC_ETIMEDOUT);
		if (left < 0 || left > PROGRESS_SLICE_MS)
			left = PROGRESS_SLICE_MS;
		if (!s->progress_busy) {
			s->progress_busy = true;
			pthread_mutex_unlock(&s->lock);
			progress_step(s, left);
			pthread_mutex_lock(&s->lock);
			s->progress_busy = false;
			pthread_cond_broadcast(&s->cond);
		} else {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)left * 1000000;
			ts.tv_sec += ts.tv_nsec / 1000000000;
			ts.tv_nsec %= 1000000000;
			pthread_cond_timedwait(&s->cond, &s->lock, &ts);
		}
	}
	return 0;
}

int cbrpc_session_control(struct cbrpc_session *s, uint8_t type,
			  const struct cbrpc_wire_region *regions, unsigned int n,
			  int timeout_ms)
{
	struct cbrpc_call *c = calloc(1, sizeof(*c));
	struct cbrpc_wire_hdr *h;
	int ret;

	if (!c)
		return cbrpc_err(CBRPC_ENOMEM);
	if (n > CBRPC_MAX_REGIONS_PER_MSG) {
		free(c);
		return cbrpc_err(CBRPC_E2BIG);
	}
	pthread_mutex_lock(&s->lock);
	/* announcements wait for a free slot rather than fail */
	for (int64_t dl = cbrpc_deadline(timeout_ms);
	     (ret = cbrpc_slot_take(s, c)) == cbrpc_err(CBRPC_EBUSY) && cbrpc_left_ms(dl) != 0;) {
		struct cbrpc_call probe = { .done = false };
		int left = cbrpc_left_ms(dl);

		cbrpc_session_wait(s, &probe, cbrpc_now_ms() + (left < 0 || left > 10 ? 10 : left));
	}
	if (ret) {
		pthread_mutex_unlock(&s->lock);
		free(c);
		return ret == cbrpc_err(CBRPC_EBUSY) ? cbrpc_err(CBRPC_ETIMEDOUT) : ret;
	}
	h = (void *)cbrpc_session_sendbuf(s, c->slot);
	*h = (struct cbrpc_wire_hdr){
		.magic = htole32(CBRPC_WIRE_MAGIC),
		.type = type,
		.nhandles = (uint8_t)n,
		.call_id = htole32(c->id),
	};
	memcpy(h + 1, regions, n * sizeof(*regions));
	ret = cbrpc_session_send(s, c, sizeof(*h) + n * sizeof(*regions));
	if (!ret)
		ret = cbrpc_session_wait(s, c, cbrpc_deadline(timeout_ms));
	if (!ret)
		ret = c->err ? cbrpc_err(c->err) : (c->result.status < 0 ? c->result.status : 0);
	if (c->done || s->dead) {
		if (s->slots[c->slot] == c)
			slot_release(s, c->slot);
		free(c);
	} else {
		c->abandoned = true;	/* the reply frees it */
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* Wait for one CM event of TYPE on S's channel before the connection stands;
 * with ESTABLISHED, take the server's keepalive word from its private data. */
static int wait_cm(struct cbrpc_session *s, enum rdma_cm_event_type want, int64_t deadline)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type type;

	for (;;) {
		int fd = s->ech->fd;
		short rev;

		if (rdma_get_cm_event(s->ech, &ev)) {
			if (errno != EAGAIN)
				return cbrpc_err(CBRPC_EDEVICE);
			if (cbrpc_left_ms(deadline) == 0) {
				cbrpc_debug("connect: no %s in time", rdma_event_str(want));
				return cbrpc_err(CBRPC_ETIMEDOUT);
			}
			cbrpc_poll_fds(&fd, &rev, 1, cbrpc_left_ms(deadline));
			continue;
		}
		type = ev->event;
		if (type == RDMA_CM_EVENT_ESTABLISHED && ev->param.conn.private_data &&
		    ev->param.conn.private_data_len >= sizeof(struct cbrpc_wire_accept)) {
			struct cbrpc_wire_accept acc;

			memcpy(&acc, ev->param.conn.private_data, sizeof(acc));
			if (le32toh(acc.magic) == CBRPC_CONN_MAGIC &&
			    le16toh(acc.version) == CBRPC_WIRE_VERSION) {
				s->ka_addr = le64toh(acc.ka_addr);
				s->ka_rkey = le32toh(acc.ka_rkey);
			}
		}
		rdma_ack_cm_event(ev);
		if (type == want)
			return 0;
		cbrpc_debug("connect: %s while waiting for %s", rdma_event_str(type),
			    rdma_event_str(want));
		switch (type) {
		case RDMA_CM_EVENT_REJECTED:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_ADDR_ERROR:
		case RDMA_CM_EVENT_ROUTE_ERROR:
		case RDMA_CM_EVENT_CONNECT_ERROR:
			return cbrpc_err(CBRPC_ECONNREFUSED);
		default:
			return cbrpc_err(CBRPC_EDEVICE);
		}
	}
}

static void session_free(struct cbrpc_session *s)
{
	if (s->id && s->id->qp)
		rdma_destroy_qp(s->id);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->cch)
		ibv_destroy_comp_channel(s->cch);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->id)
		rdma_destroy_id(s->id);
	if (s->ech)
		rdma_destroy_event_channel(s->ech);
	for (unsigned int i = 0; s->slots && i < s->depth; i++)
		if (s->slots[i] && s->slots[i]->abandoned)
			free(s->slots[i]);
	free(s->slots);
	free(s->buf);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

static int session_setup(struct cbrpc_session *s, const char *host, const char *port,
			 int64_t deadline)
{
	struct cbrpc_ctx *ctx = s->ctx;
	struct rdma_addrinfo *ai;
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_conn_param cp = { 0 };
	struct cbrpc_wire_conn pd = { 0 };
	int ret;

	ret = cbrpc_getaddr(host, port, false, &ai);
	if (ret)
		return ret;
	ret = cbrpc_err(CBRPC_EDEVICE);
	s->ech = rdma_create_event_channel();
	if (!s->ech || cbrpc_set_nonblock(s->ech->fd) ||
	    rdma_create_id(s->ech, &s->id, s, RDMA_PS_TCP)) {
		rdma_freeaddrinfo(ai);
		return ret;
	}
	if (rdma_resolve_addr(s->id, ai->ai_src_addr, ai->ai_dst_addr,
			      cbrpc_left_ms(deadline) < 0 ? 5000 : cbrpc_left_ms(deadline) + 1)) {
		rdma_freeaddrinfo(ai);
		return cbrpc_err(CBRPC_ECONNREFUSED);
	}
	rdma_freeaddrinfo(ai);
	ret = wait_cm(s, RDMA_CM_EVENT_ADDR_RESOLVED, deadline);
	if (ret)
		return ret;
	if (s->id->verbs != ctx->verbs)
		return cbrpc_err(CBRPC_EINVAL);
	if (rdma_resolve_route(s->id, cbrpc_left_ms(deadline) < 0 ? 5000 :
			       cbrpc_left_ms(deadline) + 1))
		return cbrpc_err(CBRPC_ECONNREFUSED);
	ret = wait_cm(s, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline);
	if (ret)
		return ret;

	ret = cbrpc_err(CBRPC_EDEVICE);
	s->buf = aligned_alloc(4096, session_buf_bytes(s));
	s->slots = calloc(s->depth, sizeof(*s->slots));
	if (!s->buf || !s->slots)
		return cbrpc_err(CBRPC_ENOMEM);
	s->mr = ibv_reg_mr(ctx->pd, s->buf, session_buf_bytes(s), IBV_ACCESS_LOCAL_WRITE);
	s->cch = ibv_create_comp_channel(ctx->verbs);
	if (!s->mr || !s->cch || cbrpc_set_nonblock(s->cch->fd))
		return ret;
	s->cq = ibv_create_cq(ctx->verbs, (int)(2 * s->depth + 2), s, s->cch, 0);
	if (!s->cq || ibv_req_notify_cq(s->cq, 0))
		return ret;
	qa.send_cq = s->cq;
	qa.recv_cq = s->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = s->depth + 1;	/* and the keepalive READ */
	qa.cap.max_recv_wr = s->depth;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(s->id, ctx->pd, &qa))
		return ret;
	for (unsigned int i = 0; i < s->depth; i++)
		if (post_recv(s, i))
			return ret;

	pd.magic = htole32(CBRPC_CONN_MAGIC);
	pd.version = htole16(CBRPC_WIRE_VERSION);
	pd.depth = htole16((uint16_t)s->depth);
	pd.owner = htole64(ctx->id);
	pd.max_inline = htole32((uint32_t)s->max_inline);
	cp.private_data = &pd;
	cp.private_data_len = sizeof(pd);
	/* the server READs this side's heaps: offer what the device can answer */
	cp.responder_resources = (uint8_t)(ctx->dev_attr.max_qp_rd_atom > 255 ? 255 :
					   ctx->dev_attr.max_qp_rd_atom);
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	if (rdma_connect(s->id, &cp))
		return cbrpc_err(CBRPC_ECONNREFUSED);
	return wait_cm(s, RDMA_CM_EVENT_ESTABLISHED, deadline);
}

CBRPC_EXPORT int cbrpc_connect(struct cbrpc_ctx *ctx, const char *host, const char *port,
			       const struct cbrpc_session_attr *attr,
			       struct cbrpc_session **out)
{
	struct cbrpc_session *s;
	int ret;

	if (!ctx || !host || !port || !out)
		return cbrpc_err(CBRPC_EINVAL);
	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return cbrpc_err(CBRPC_ENOMEM);
	s->ctx = ctx;
	s->depth = attr && attr->depth ? attr->depth : DEFAULT_DEPTH;
	s->timeout_ms = attr && attr->timeout_ms ? attr->timeout_ms : DEFAULT_TIMEOUT_MS;
	s->keepalive_ms = attr && attr->keepalive_ms ? attr->keepalive_ms : DEFAULT_KEEPALIVE_MS;
	s->max_inline = attr && attr->max_inline ? attr->max_inline : CBRPC_INLINE_MAX;
	s->spin_us = attr && attr->spin_us ? attr->spin_us : CBRPC_SPIN_US;
	s->send_size = cbrpc_req_size(s->max_inline);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (s->depth > MAX_DEPTH || s->max_inline > CBRPC_VALUE_MAX) {
		session_free(s);
		return cbrpc_err(CBRPC_EINVAL);
	}
	ret = session_setup(s, host, port, cbrpc_deadline(s->timeout_ms));
	s->last_alive = cbrpc_now_ms();
	if (ret) {
		session_free(s);
		return ret;
	}
	pthread_mutex_lock(&ctx->lock);
	ret = cbrpc_announce_all(ctx, s);
	if (!ret) {
		s->next = ctx->sessions;
		ctx->sessions = s;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (ret) {
		rdma_disconnect(s->id);
		session_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void cbrpc_session_kill(struct cbrpc_session *s, int err)
{
	pthread_mutex_lock(&s->lock);
	cbrpc_session_fail(s, err < 0 ? -err : err);
	pthread_mutex_unlock(&s->lock);
	rdma_disconnect(s->id);
}

CBRPC_EXPORT int cbrpc_disconnect(struct cbrpc_session *s)
{
	struct cbrpc_ctx *ctx;

	if (!s)
		return 0;
	ctx = s->ctx;
	pthread_mutex_lock(&ctx->lock);
	for (struct cbrpc_session **p = &ctx->sessions; *p; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_lock(&s->lock);
	cbrpc_session_fail(s, CBRPC_ECANCELED);
	/* the callers still own their (completed) calls: detach them */
	for (unsigned int i = 0; i < s->depth; i++) {
		struct cbrpc_call *c = s->slots[i];

		if (c && !c->abandoned)
			c->session = NULL;
		if (c && !c->abandoned)
			s->slots[i] = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	rdma_disconnect(s->id);
	session_free(s);
	return 0;
}

CBRPC_EXPORT int cbrpc_session_alive(struct cbrpc_session *s)
{
	int alive;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	drain_cq(s);
	drain_cm(s);
	alive = !s->dead;
	pthread_mutex_unlock(&s->lock);
	return alive;
}
