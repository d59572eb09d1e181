// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The server: a listener, a table of sessions sharing one completion queue,
 * and the single-threaded loop that accepts, receives and runs handlers.
 * Work request ids carry (kind, session slot, generation, index) rather
 * than pointers, so a completion of a session torn down is recognised and
 * ignored.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define DEFAULT_SESSIONS 16
#define DEFAULT_DEPTH 16
#define DEFAULT_CACHE (16u << 20)
#define DEFAULT_OP_TIMEOUT_MS 5000
#define EXTRA_SEND_WR 32	/* READ/WRITE work requests of one wait */

static uint8_t *srecvbuf(struct cbrpc_ssession *s, unsigned int i)
{
	return s->buf + (size_t)i * s->recv_size;
}

/* send slots follow the depth receive buffers: 2 * depth of them */
static uint8_t *ssendbuf(struct cbrpc_ssession *s, unsigned int i)
{
	return s->buf + (size_t)s->depth * s->recv_size + (size_t)i * CBRPC_MSG_SIZE;
}

/* the bytes of the registered buffers; the send bitmap follows them */
static size_t sbuf_bytes(const struct cbrpc_ssession *s)
{
	return (size_t)s->depth * (s->recv_size + 2 * CBRPC_MSG_SIZE);
}

static int spost_recv(struct cbrpc_ssession *s, unsigned int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)srecvbuf(s, i),
		.length = (uint32_t)s->recv_size,
		.lkey = s->mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = cbrpc_wr_id(WR_KIND_RECV, s->slot, s->gen, i),
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	return ibv_post_recv(s->id->qp, &wr, &bad) ? cbrpc_err(CBRPC_EDEVICE) : 0;
}

/* Per-session state that is not in struct cbrpc_ssession to keep it small. */
static uint64_t *send_busy(struct cbrpc_ssession *s)
{
	return (uint64_t *)(s->buf + sbuf_bytes(s));
}

int cbrpc_server_send_rep(struct cbrpc_ssession *s, uint32_t call_id, int status,
			  uint32_t written, const void *data, size_t len)
{
	uint64_t *busy = send_busy(s);
	struct cbrpc_wire_hdr *h;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 }, *bad;
	unsigned int i;

	if (s->state == SS_DEAD || s->state == SS_FREE)
		return cbrpc_err(CBRPC_EDISCONNECTED);
	for (i = 0; i < 2 * s->depth; i++)
		if (!(busy[i / 64] & (1ull << (i % 64))))
			break;
	if (i == 2 * s->depth)
		return cbrpc_err(CBRPC_EBUSY);
	h = (void *)ssendbuf(s, i);
	*h = (struct cbrpc_wire_hdr){
		.magic = htole32(CBRPC_WIRE_MAGIC),
		.type = CBRPC_MSG_REP,
		.inline_len = htole32((uint32_t)len),
		.call_id = htole32(call_id),
		.status = (int32_t)htole32((uint32_t)status),
		.written = htole32(written),
	};
	if (len)
		memcpy(h + 1, data, len);
	sge = (struct ibv_sge){ .addr = (uintptr_t)h, .length = (uint32_t)(sizeof(*h) + len),
				.lkey = s->mr->lkey };
	wr.wr_id = cbrpc_wr_id(WR_KIND_SEND, s->slot, s->gen, i);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(s->id->qp, &wr, &bad)) {
		cbrpc_ssession_fail(s, CBRPC_EDEVICE);
		return cbrpc_err(CBRPC_EDEVICE);
	}
	busy[i / 64] |= 1ull << (i % 64);
	return 0;
}

static void queue_push(struct cbrpc_server *srv, const struct cbrpc_pending *p)
{
	if (srv->q_len == srv->q_cap) {
		/* cannot happen while peers respect their depth: drop the peer */
		cbrpc_ssession_fail(&srv->sessions[p->slot], CBRPC_EPROTO);
		return;
	}
	srv->queue[(srv->q_head + srv->q_len++) % srv->q_cap] = *p;
}

/* Reply to a control message now, or later from the loop if no send slot. */
static void control_reply(struct cbrpc_ssession *s, uint32_t call_id, int status)
{
	if (cbrpc_server_send_rep(s, call_id, status, 0, NULL, 0) == cbrpc_err(CBRPC_EBUSY)) {
		struct cbrpc_pending p = { .slot = s->slot, .gen = s->gen, .ack = true,
					   .call_id = call_id, .status = status };

		queue_push(s->srv, &p);
	}
}

void cbrpc_sregion_idle(struct cbrpc_ssession *s, struct cbrpc_sregion *r)
{
	if (r->inflight || !r->withdrawn)
		return;
	if (r->ack_pending)
		control_reply(s, r->ack_call_id, 0);
	cbrpc_map_del(&s->regions, (uint64_t)r->id + 1);
	free(r);
}

static int heap_add(struct cbrpc_ssession *s, const struct cbrpc_wire_region *w)
{
	uint32_t id = le32toh(w->id);
	uint64_t addr = le64toh(w->addr), len = le64toh(w->length);
	struct cbrpc_sregion *r = cbrpc_map_get(&s->regions, (uint64_t)id + 1);

	if (!len || addr + len < addr || id == UINT32_MAX)
		return cbrpc_err(CBRPC_EPROTO);
	if (!r && s->regions.count >= CBRPC_MAX_REGIONS)
		return cbrpc_err(CBRPC_ENOMEM);
	if (r) {	/* a region id is never reused by its owner */
		return r->addr == addr && r->length == len && r->rkey == le32toh(w->rkey) &&
		       !r->withdrawn ? 0 : cbrpc_err(CBRPC_EPROTO);
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return cbrpc_err(CBRPC_ENOMEM);
	r->id = id;
	r->addr = addr;
	r->length = len;
	r->rkey = le32toh(w->rkey);
	if (cbrpc_map_put(&s->regions, (uint64_t)id + 1, r)) {
		free(r);
		return cbrpc_err(CBRPC_ENOMEM);
	}
	return 0;
}

/* HEAP_DEL: withdraw at once; acknowledge when no READ/WRITE is in flight.
 * Returns 1 if the acknowledgement was deferred. */
static int heap_del(struct cbrpc_ssession *s, const struct cbrpc_wire_region *w,
		    uint32_t call_id)
{
	uint32_t id = le32toh(w->id);
	struct cbrpc_sregion *r = cbrpc_map_get(&s->regions, (uint64_t)id + 1);

	if (!r)
		return 0;
	r->withdrawn = true;
	cbrpc_cache_drop_region(s, id);
	if (r->inflight) {
		r->ack_pending = true;
		r->ack_call_id = call_id;
		return 1;
	}
	cbrpc_map_del(&s->regions, (uint64_t)id + 1);
	free(r);
	return 0;
}

static void handle_recv(struct cbrpc_ssession *s, unsigned int idx, uint32_t len)
{
	const struct cbrpc_wire_hdr *h = (const void *)srecvbuf(s, idx);
	const struct cbrpc_wire_region *w = (const void *)(h + 1);
	struct cbrpc_pending p = { .slot = s->slot, .gen = s->gen, .idx = idx, .len = len };
	uint32_t call_id;
	int status = 0, deferred = 0;

	if (len < sizeof(*h) || le32toh(h->magic) != CBRPC_WIRE_MAGIC) {
		cbrpc_ssession_fail(s, CBRPC_EPROTO);
		return;
	}
	call_id = le32toh(h->call_id);
	switch (h->type) {
	case CBRPC_MSG_REQ:
		queue_push(s->srv, &p);	/* its receive is reposted when it runs */
		return;
	case CBRPC_MSG_HEAP_ADD:
	case CBRPC_MSG_HEAP_DEL:
		if (len != sizeof(*h) + (size_t)h->nhandles * sizeof(*w)) {
			status = cbrpc_err(CBRPC_EPROTO);
			break;
		}
		for (unsigned int i = 0; i < h->nhandles && !status; i++) {
			if (h->type == CBRPC_MSG_HEAP_ADD)
				status = heap_add(s, &w[i]);
			else if (heap_del(s, &w[i], call_id))
				deferred = 1;	/* one region at most is busy */
		}
		break;
	default:
		status = cbrpc_err(CBRPC_EPROTO);
	}
	if (spost_recv(s, idx)) {
		cbrpc_ssession_fail(s, CBRPC_EDEVICE);
		return;
	}
	if (!deferred)
		control_reply(s, call_id, status);
}

static void dispatch_wc(struct cbrpc_server *srv, const struct ibv_wc *wc)
{
	unsigned int kind = (wc->wr_id >> 16) & 0xf, slot = (wc->wr_id >> 20) & 0xfff;
	unsigned int idx = wc->wr_id & 0xffff;
	uint32_t gen = (uint32_t)(wc->wr_id >> 32);
	struct cbrpc_ssession *s;

	if (kind == WR_KIND_OP) {
		if (gen == srv->op_seq && srv->op_left) {
			srv->op_left--;
			if (wc->status != IBV_WC_SUCCESS && !srv->op_err)
				srv->op_err = wc->status == IBV_WC_REM_ACCESS_ERR ||
					      wc->status == IBV_WC_REM_INV_REQ_ERR ?
					      cbrpc_err(CBRPC_EREMOTE) : cbrpc_err(CBRPC_EDISCONNECTED);
		}
		/* the QP is in error: close its session (not for a stale
		 * completion, whose slot may hold another session by now) */
		if (wc->status != IBV_WC_SUCCESS && gen == srv->op_seq && slot < srv->max_sessions)
			cbrpc_ssession_fail(&srv->sessions[slot], CBRPC_EREMOTE);
		return;
	}
	if (slot >= srv->max_sessions)
		return;
	s = &srv->sessions[slot];
	if (s->gen != gen || s->state == SS_FREE || s->state == SS_DEAD)
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		cbrpc_ssession_fail(s, CBRPC_EDISCONNECTED);
		return;
	}
	if (kind == WR_KIND_SEND && idx < 2 * s->depth)
		send_busy(s)[idx / 64] &= ~(1ull << (idx % 64));
	else if (kind == WR_KIND_RECV && idx < s->depth)
		handle_recv(s, idx, wc->byte_len);
}

static int drain_cq(struct cbrpc_server *srv)
{
	struct ibv_wc wc[16];
	int n, total = 0;

	while ((n = ibv_poll_cq(srv->cq, 16, wc)) > 0) {
		for (int k = 0; k < n; k++)
			dispatch_wc(srv, &wc[k]);
		total += n;
	}
	return total;
}

void cbrpc_ssession_fail(struct cbrpc_ssession *s, int err)
{
	(void)err;
	if (s->state == SS_FREE || s->state == SS_DEAD)
		return;
	s->state = SS_DEAD;
	rdma_disconnect(s->id);	/* the QP goes to error: posted work flushes */
}

static void ssession_teardown(struct cbrpc_ssession *s)
{
	size_t pos = 0;
	uint64_t key;
	void *val;

	cbrpc_cache_drop_session(s);
	while (cbrpc_map_next(&s->regions, &pos, &key, &val))
		free(val);
	cbrpc_map_free(&s->regions);
	cbrpc_map_free(&s->cache);
	if (s->id) {
		if (s->id->qp)
			rdma_destroy_qp(s->id);
		rdma_destroy_id(s->id);
	}
	if (s->mr)
		ibv_dereg_mr(s->mr);
	free(s->buf);
	s->id = NULL;
	s->mr = NULL;
	s->buf = NULL;
	s->state = SS_FREE;
	s->gen++;
}

static void reap_sessions(struct cbrpc_server *srv)
{
	for (unsigned int i = 0; i < srv->max_sessions; i++) {
		struct cbrpc_ssession *s = &srv->sessions[i];

		if (s->state == SS_DEAD && !s->uses)
			ssession_teardown(s);
	}
}

static void accept_session(struct cbrpc_server *srv, struct rdma_cm_event *ev)
{
	const struct cbrpc_wire_conn *c = ev->param.conn.private_data;
	struct cbrpc_ctx *ctx = srv->ctx;
	struct rdma_cm_id *id = ev->id;
	struct ibv_qp_init_attr qa = { 0 };
	struct rdma_conn_param cp = { 0 };
	struct cbrpc_ssession *s = NULL;
	struct cbrpc_wire_accept acc = {
		.magic = htole32(CBRPC_CONN_MAGIC),
		.version = htole16(CBRPC_WIRE_VERSION),
		.ka_addr = htole64((uint64_t)(uintptr_t)srv->ka_word),
		.ka_rkey = htole32(srv->ka_mr->rkey),
	};
	unsigned int depth;
	size_t bytes, max_inline;

	if (ev->param.conn.private_data_len < sizeof(*c) || !c ||
	    le32toh(c->magic) != CBRPC_CONN_MAGIC || le16toh(c->version) != CBRPC_WIRE_VERSION)
		goto reject;
	depth = le16toh(c->depth);
	max_inline = le32toh(c->max_inline);
	if (!depth || depth > srv->depth || id->verbs != ctx->verbs ||
	    max_inline > srv->max_inline)
		goto reject;
	for (unsigned int i = 0; i < srv->max_sessions && !s; i++)
		if (srv->sessions[i].state == SS_FREE)
			s = &srv->sessions[i];
	if (!s)
		goto reject;
	s->depth = depth;
	s->owner = le64toh(c->owner);
	s->max_inline = max_inline ? max_inline : CBRPC_INLINE_MAX;
	s->recv_size = cbrpc_req_size(s->max_inline);
	/* depth receives, 2 * depth sends, the send bitmap */
	bytes = sbuf_bytes(s) + 2 * sizeof(uint64_t);
	s->buf = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
	if (!s->buf)
		goto reject;
	memset(s->buf, 0, bytes);
	s->mr = ibv_reg_mr(ctx->pd, s->buf, sbuf_bytes(s), IBV_ACCESS_LOCAL_WRITE);
	if (!s->mr)
		goto reject_free;
	qa.send_cq = srv->cq;
	qa.recv_cq = srv->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 2 * depth + EXTRA_SEND_WR;
	qa.cap.max_recv_wr = depth;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	s->id = id;
	if (rdma_create_qp(id, ctx->pd, &qa))
		goto reject_free;
	for (unsigned int i = 0; i < depth; i++)
		if (spost_recv(s, i))
			goto reject_qp;
	cp.responder_resources = ev->param.conn.initiator_depth;
	if (cp.responder_resources > ctx->dev_attr.max_qp_rd_atom)
		cp.responder_resources = (uint8_t)ctx->dev_attr.max_qp_rd_atom;
	cp.initiator_depth = ev->param.conn.responder_resources;
	if (cp.initiator_depth > ctx->dev_attr.max_qp_init_rd_atom)
		cp.initiator_depth = (uint8_t)ctx->dev_attr.max_qp_init_rd_atom;
	cp.rnr_retry_count = 7;
	cp.private_data = &acc;
	cp.private_data_len = sizeof(acc);
	id->context = s;
	s->state = SS_CONNECTING;
	if (rdma_accept(id, &cp)) {
		id->context = NULL;
		goto reject_qp;
	}
	srv->stats.sessions++;
	return;
reject_qp:
	rdma_destroy_qp(id);
reject_free:
	if (s->mr)
		ibv_dereg_mr(s->mr);
	free(s->buf);
	s->mr = NULL;
	s->buf = NULL;
	s->id = NULL;
	s->state = SS_FREE;
reject:
	cbrpc_debug("server: connect request rejected (private data %u bytes, %s)",
		    ev->param.conn.private_data_len, s ? "setup failed" : "refused");
	rdma_reject(id, NULL, 0);
	/* the id of a rejected request is ours to destroy, after the ack */
	id->context = (void *)1;
}

static void process_cm(struct cbrpc_server *srv)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(srv->ech, &ev)) {
		struct rdma_cm_id *id = ev->id;
		struct cbrpc_ssession *s = id->context;
		bool destroy = false;

		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			id->context = NULL;
			accept_session(srv, ev);
			destroy = id->context == (void *)1;
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (s && s->state == SS_CONNECTING)
				s->state = SS_ACTIVE;
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_REJECTED:
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
			if (s && id != srv->listen)
				cbrpc_ssession_fail(s, CBRPC_EDISCONNECTED);
			break;
		default:
			break;
		}
		rdma_ack_cm_event(ev);
		if (destroy)
			rdma_destroy_id(id);
	}
}

/*
 * The connection manager's channel at most once a millisecond: asking it
 * is a system call, which a loop serving requests back to back, or a
 * handler reading many small ranges, would pay each time (a disconnection
 * is seen in the completions anyway: the QP's work flushes).
 */
static void cm_tick(struct cbrpc_server *srv)
{
	int64_t now = cbrpc_now_ms();

	if (now != srv->cm_polled_ms) {
		srv->cm_polled_ms = now;
		process_cm(srv);
	}
}

/*
 * Progress: completions, connection events; if there were none, poll the
 * CQ for up to spin_us (a request or a READ's completion that comes
 * meanwhile costs no interrupt, wake-up or system call), then sleep in
 * poll(); MS bounds both.
 */
static void progress(struct cbrpc_server *srv, int ms)
{
	int fds[3] = { srv->cch->fd, srv->ech->fd, srv->wake[0] };
	short rev[3];
	struct ibv_cq *cq;
	void *cq_ctx;
	char junk[16];

	if (drain_cq(srv))
		ms = 0;
	cm_tick(srv);
	if (ms == 0 || srv->stop)
		return;
	if (srv->spin_us > 0) {
		int64_t end = cbrpc_spin_end(srv->spin_us, ms);

		do {
			if (drain_cq(srv) || srv->stop)
				return;
			cm_tick(srv);
		} while (cbrpc_now_us() < end);
	}
	ibv_req_notify_cq(srv->cq, 0);
	if (drain_cq(srv))
		return;
	cbrpc_poll_fds(fds, rev, 3, ms);
	if (rev[0] && !ibv_get_cq_event(srv->cch, &cq, &cq_ctx))
		ibv_ack_cq_events(cq, 1);
	if (rev[2])
		while (read(srv->wake[0], junk, sizeof(junk)) > 0)
			;
	drain_cq(srv);
	if (rev[1])
		process_cm(srv);
}

/* From inside a handler (every cbrpc_deref/cbrpc_write). */
void cbrpc_server_poll(struct cbrpc_server *srv)
{
	drain_cq(srv);
	cm_tick(srv);
}

int cbrpc_server_wait_ops(struct cbrpc_server *srv, struct cbrpc_ssession *target,
			  int64_t deadline)
{
	while (srv->op_left) {
		int left = cbrpc_left_ms(deadline);

		if (left == 0) {
			struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
			int64_t flush = cbrpc_deadline(1000);

			/* stop the QP, so nothing lands in the buffers later */
			ibv_modify_qp(target->id->qp, &qa, IBV_QP_STATE);
			cbrpc_ssession_fail(target, CBRPC_ETIMEDOUT);
			while (srv->op_left && cbrpc_left_ms(flush) > 0)
				progress(srv, 10);
			srv->op_left = 0;
			return cbrpc_err(CBRPC_ETIMEDOUT);
		}
		progress(srv, left < 0 || left > 100 ? 100 : left);
	}
	return srv->op_err;
}

struct cbrpc_ssession *cbrpc_server_find_owner(struct cbrpc_server *srv, uint64_t owner)
{
	for (unsigned int i = 0; i < srv->max_sessions; i++) {
		struct cbrpc_ssession *s = &srv->sessions[i];

		if ((s->state == SS_ACTIVE || s->state == SS_CONNECTING) && s->owner == owner)
			return s;
	}
	return NULL;
}

/* Parse and run one request. */
static void run_request(struct cbrpc_server *srv, const struct cbrpc_pending *p)
{
	struct cbrpc_ssession *s = &srv->sessions[p->slot];
	const struct cbrpc_wire_hdr *h = (const void *)srecvbuf(s, p->idx);
	const struct cbrpc_wire_handle *wh = (const void *)(h + 1);
	struct cbrpc_req *req = &srv->req;
	size_t inl = le32toh(h->inline_len);
	int status;

	/* not the reply buffer: it is filled up to its length */
	memset(req, 0, offsetof(struct cbrpc_req, written));
	req->written = 0;
	req->reply_len = 0;
	req->npinned = 0;
	req->ntemps = 0;
	req->srv = srv;
	req->sess = s;
	req->call_id = le32toh(h->call_id);
	req->op = le32toh(h->op);
	if (h->nhandles > CBRPC_MAX_HANDLES || inl > s->max_inline ||
	    p->len != sizeof(*h) + (size_t)h->nhandles * sizeof(*wh) + inl) {
		if (spost_recv(s, p->idx))
			cbrpc_ssession_fail(s, CBRPC_EDEVICE);
		else
			cbrpc_server_send_rep(s, req->call_id, cbrpc_err(CBRPC_EPROTO), 0, NULL, 0);
		return;
	}
	req->nhandles = h->nhandles;
	for (unsigned int i = 0; i < req->nhandles; i++)
		cbrpc_handle_from_wire(&req->handles[i], &wh[i]);
	/* the handler reads the inline data where it arrived: the buffer is
	 * posted again after the handler, before the reply (the client sends
	 * no more than depth messages unanswered) */
	req->inline_len = inl;
	req->inline_data = (const uint8_t *)(wh + req->nhandles);
	req->recv_idx = p->idx;
	for (unsigned int i = 0; i < req->nhandles; i++) {
		struct cbrpc_ssession *o = req->handles[i].owner == s->owner ? s :
			cbrpc_server_find_owner(srv, req->handles[i].owner);

		if (o)
			cbrpc_cache_seen(o, &req->handles[i]);
	}
	s->uses++;
	status = srv->handler(req, srv->arg);
	srv->stats.requests++;
	cbrpc_req_release(req);
	s->uses--;
	if (s->state == SS_DEAD || s->state == SS_FREE)
		return;
	if (spost_recv(s, req->recv_idx)) {
		cbrpc_ssession_fail(s, CBRPC_EDEVICE);
		return;
	}
	/* a reply needs a send slot: wait for one (bounded) */
	for (int64_t dl = cbrpc_deadline(srv->op_timeout_ms);;) {
		int ret = cbrpc_server_send_rep(s, req->call_id, status, req->written, req->reply,
						req->reply_len);

		if (ret != cbrpc_err(CBRPC_EBUSY))
			break;
		if (cbrpc_left_ms(dl) == 0) {
			cbrpc_ssession_fail(s, CBRPC_ETIMEDOUT);
			break;
		}
		progress(srv, 10);
	}
}

static void run_queue(struct cbrpc_server *srv)
{
	while (srv->q_len && !srv->stop) {
		struct cbrpc_pending p = srv->queue[srv->q_head];
		struct cbrpc_ssession *s = &srv->sessions[p.slot];

		if (s->gen != p.gen || s->state == SS_FREE || s->state == SS_DEAD) {
			srv->q_head = (srv->q_head + 1) % srv->q_cap;
			srv->q_len--;
			continue;
		}
		if (p.ack) {
			int ret = cbrpc_server_send_rep(s, p.call_id, p.status, 0, NULL, 0);

			if (ret == cbrpc_err(CBRPC_EBUSY))
				return;	/* after the next completions */
			srv->q_head = (srv->q_head + 1) % srv->q_cap;
			srv->q_len--;
			continue;
		}
		srv->q_head = (srv->q_head + 1) % srv->q_cap;
		srv->q_len--;
		run_request(srv, &p);
		drain_cq(srv);
	}
}

CBRPC_EXPORT int cbrpc_server_run(struct cbrpc_server *srv, int timeout_ms)
{
	int64_t deadline = cbrpc_deadline(timeout_ms);

	if (!srv)
		return cbrpc_err(CBRPC_EINVAL);
	while (!srv->stop) {
		int left = cbrpc_left_ms(deadline);

		run_queue(srv);
		reap_sessions(srv);
		if (left == 0)
			break;
		progress(srv, srv->q_len ? 0 : (left < 0 || left > 1000 ? 1000 : left));
	}
	srv->stop = 0;
	return 0;
}

CBRPC_EXPORT void cbrpc_server_stop(struct cbrpc_server *srv)
{
	char c = 1;

	if (!srv)
		return;
	srv->stop = 1;
	if (write(srv->wake[1], &c, 1) < 0) {
		/* the pipe is full: a wake-up is pending anyway */
	}
}

CBRPC_EXPORT int cbrpc_server_create(struct cbrpc_ctx *ctx, const char *host, const char *port,
				     const struct cbrpc_server_attr *attr,
				     cbrpc_handler_fn handler, void *arg,
				     struct cbrpc_server **out)
{
	struct cbrpc_server *srv;
	struct rdma_addrinfo *ai = NULL;
	int ret = cbrpc_err(CBRPC_EDEVICE), cqe;

	if (!ctx || !port || !handler || !out)
		return cbrpc_err(CBRPC_EINVAL);
	*out = NULL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return cbrpc_err(CBRPC_ENOMEM);
	srv->ctx = ctx;
	srv->handler = handler;
	srv->arg = arg;
	srv->wake[0] = srv->wake[1] = -1;
	srv->max_sessions = attr && attr->max_sessions ? attr->max_sessions : DEFAULT_SESSIONS;
	srv->depth = attr && attr->depth ? attr->depth : DEFAULT_DEPTH;
	srv->max_inline = attr && attr->max_inline ? attr->max_inline : CBRPC_INLINE_MAX;
	srv->cache_bytes = attr && attr->cache_bytes ? attr->cache_bytes : DEFAULT_CACHE;
	srv->op_timeout_ms = attr && attr->op_timeout_ms ? attr->op_timeout_ms :
			     DEFAULT_OP_TIMEOUT_MS;
	srv->spin_us = attr && attr->spin_us ? attr->spin_us : CBRPC_SPIN_US;
	if (srv->max_sessions > 256 || srv->depth > 64 || srv->max_inline > CBRPC_VALUE_MAX) {
		ret = cbrpc_err(CBRPC_EINVAL);
		goto err;
	}
	srv->sessions = calloc(srv->max_sessions, sizeof(*srv->sessions));
	srv->q_cap = srv->max_sessions * srv->depth + 16;
	srv->queue = calloc(srv->q_cap, sizeof(*srv->queue));
	if (!srv->sessions || !srv->queue || pipe(srv->wake)) {
		ret = cbrpc_err(CBRPC_ENOMEM);
		goto err;
	}
	for (unsigned int i = 0; i < srv->max_sessions; i++) {
		srv->sessions[i].srv = srv;
		srv->sessions[i].slot = i;
		srv->sessions[i].gen = 1;
	}
	if (cbrpc_set_nonblock(srv->wake[0]) || cbrpc_set_nonblock(srv->wake[1]))
		goto err;
	srv->ech = rdma_create_event_channel();
	if (!srv->ech || cbrpc_set_nonblock(srv->ech->fd) ||
	    rdma_create_id(srv->ech, &srv->listen, NULL, RDMA_PS_TCP))
		goto err;
	ret = cbrpc_getaddr(host, port, true, &ai);
	if (ret)
		goto err;
	if (rdma_bind_addr(srv->listen, ai->ai_src_addr) || rdma_listen(srv->listen, 16) ||
	    (srv->listen->verbs && srv->listen->verbs != ctx->verbs)) {
		ret = cbrpc_err(CBRPC_EINVAL);
		goto err;
	}
	ret = cbrpc_err(CBRPC_EDEVICE);
	srv->cch = ibv_create_comp_channel(ctx->verbs);
	if (!srv->cch || cbrpc_set_nonblock(srv->cch->fd))
		goto err;
	cqe = (int)(srv->max_sessions * (3 * srv->depth + EXTRA_SEND_WR));
	if (cqe > ctx->dev_attr.max_cqe)
		cqe = ctx->dev_attr.max_cqe;
	srv->cq = ibv_create_cq(ctx->verbs, cqe, srv, srv->cch, 0);
	if (!srv->cq)
		goto err;
	ret = cbrpc_heap_create_private(ctx, srv->cache_bytes, &srv->cache_heap);
	if (ret)
		goto err;
	ret = cbrpc_err(CBRPC_EDEVICE);
	srv->ka_word = aligned_alloc(4096, 4096);
	if (!srv->ka_word)
		goto err;
	memset(srv->ka_word, 0, 4096);
	srv->ka_mr = ibv_reg_mr(ctx->pd, srv->ka_word, 4096, IBV_ACCESS_REMOTE_READ);
	if (!srv->ka_mr)
		goto err;
	rdma_freeaddrinfo(ai);
	*out = srv;
	return 0;
err:
	if (ai)
		rdma_freeaddrinfo(ai);
	cbrpc_server_destroy(srv);
	return ret;
}

/* Replies posted but not yet completed (their send slots still busy). */
static bool sends_pending(struct cbrpc_server *srv)
{
	for (unsigned int i = 0; i < srv->max_sessions; i++) {
		struct cbrpc_ssession *s = &srv->sessions[i];

		if (s->state != SS_FREE && s->state != SS_DEAD && s->buf &&
		    (send_busy(s)[0] || send_busy(s)[1]))
			return true;
	}
	return false;
}

CBRPC_EXPORT void cbrpc_server_destroy(struct cbrpc_server *srv)
{
	if (!srv)
		return;
	/* let the last replies leave (1 s at most): the process may exit next */
	for (int64_t dl = cbrpc_deadline(1000); srv->cq && sends_pending(srv) &&
	     cbrpc_left_ms(dl) > 0;)
		progress(srv, 10);
	for (unsigned int i = 0; srv->sessions && i < srv->max_sessions; i++) {
		struct cbrpc_ssession *s = &srv->sessions[i];

		if (s->state != SS_FREE) {
			s->uses = 0;
			cbrpc_ssession_fail(s, CBRPC_ECANCELED);
			ssession_teardown(s);
		}
	}
	if (srv->listen)
		rdma_destroy_id(srv->listen);
	if (srv->cq)
		ibv_destroy_cq(srv->cq);
	if (srv->cch)
		ibv_destroy_comp_channel(srv->cch);
	if (srv->ech)
		rdma_destroy_event_channel(srv->ech);
	if (srv->cache_heap)
		cbrpc_heap_destroy(srv->cache_heap, 0);
	if (srv->ka_mr)
		ibv_dereg_mr(srv->ka_mr);
	free(srv->ka_word);
	if (srv->wake[0] >= 0)
		close(srv->wake[0]);
	if (srv->wake[1] >= 0)
		close(srv->wake[1]);
	free(srv->sessions);
	free(srv->queue);
	free(srv);
}

CBRPC_EXPORT void cbrpc_server_get_stats(struct cbrpc_server *srv,
					 struct cbrpc_server_stats *stats)
{
	if (srv && stats)
		*stats = srv->stats;
}

CBRPC_EXPORT int cbrpc_server_port(struct cbrpc_server *srv)
{
	return srv ? (int)be16toh(rdma_get_src_port(srv->listen)) : 0;
}
