// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The server's side of a handle: access checks, the per-session cache of
 * pulled objects keyed by (region, address, length) and versioned, RDMA
 * READ on demand, RDMA WRITE of results, and the request accessors.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_ENTRIES 65536	/* cache records per server, data or not */
#define MAX_READ (1u << 20)	/* bytes of one READ work request */
#define BATCH 16		/* work requests posted per wait */


static void fail_stat(struct cbrpc_server *srv, int err)
{
	srv->stats.refused++;
	srv->stats.last_error = err;
}

static void lru_unlink(struct cbrpc_server *srv, struct cbrpc_centry *e)
{
	if (e->lru_prev)
		e->lru_prev->lru_next = e->lru_next;
	else if (srv->lru_head == e)
		srv->lru_head = e->lru_next;
	if (e->lru_next)
		e->lru_next->lru_prev = e->lru_prev;
	else if (srv->lru_tail == e)
		srv->lru_tail = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

static void lru_touch(struct cbrpc_server *srv, struct cbrpc_centry *e)
{
	lru_unlink(srv, e);
	e->lru_next = srv->lru_head;
	if (srv->lru_head)
		srv->lru_head->lru_prev = e;
	srv->lru_head = e;
	if (!srv->lru_tail)
		srv->lru_tail = e;
}

static void entry_drop_data(struct cbrpc_server *srv, struct cbrpc_centry *e)
{
	if (e->buf) {
		srv->cache_used -= e->buf->size;
		cbrpc_heap_put(srv->cache_heap, e->buf);
		e->buf = NULL;
	}
	free(e->valid);
	e->valid = NULL;
	e->complete = false;
}

static void entry_free(struct cbrpc_centry *e)
{
	struct cbrpc_ssession *s = e->sess;
	struct cbrpc_centry *head = cbrpc_map_get(&s->cache, e->addr);

	if (head == e) {
		if (e->next_same)
			cbrpc_map_put(&s->cache, e->addr, e->next_same);
		else
			cbrpc_map_del(&s->cache, e->addr);
	} else {
		for (; head && head->next_same != e; head = head->next_same)
			;
		if (head)
			head->next_same = e->next_same;
	}
	lru_unlink(s->srv, e);
	entry_drop_data(s->srv, e);
	free(e);
	s->srv->cache_entries--;
}

/* Evict the least recently used unpinned record (its data if it has any
 * and WANT_DATA, else the whole record). false if there is none. */
static bool evict_one(struct cbrpc_server *srv, bool want_data)
{
	for (struct cbrpc_centry *e = srv->lru_tail; e; e = e->lru_prev) {
		if (e->pins || (want_data && !e->buf))
			continue;
		entry_free(e);
		return true;
	}
	return false;
}

static struct cbrpc_centry *entry_find(struct cbrpc_ssession *s, const struct cbrpc_handle *h)
{
	for (struct cbrpc_centry *e = cbrpc_map_get(&s->cache, h->addr); e; e = e->next_same)
		if (e->region == h->region && e->length == h->length && !e->doomed)
			return e;
	return NULL;
}

static struct cbrpc_centry *entry_get(struct cbrpc_ssession *s, const struct cbrpc_handle *h)
{
	struct cbrpc_centry *e = entry_find(s, h);

	if (e || !h->addr)
		return e;
	if (s->srv->cache_entries >= MAX_ENTRIES && !evict_one(s->srv, false))
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->sess = s;
	e->region = h->region;
	e->addr = h->addr;
	e->length = h->length;
	e->version = h->version;
	e->next_same = cbrpc_map_get(&s->cache, h->addr);
	if (cbrpc_map_put(&s->cache, h->addr, e)) {
		free(e);
		return NULL;
	}
	s->srv->cache_entries++;
	lru_touch(s->srv, e);
	return e;
}

/* A newer version makes the pulled bytes invalid. */
static void entry_version(struct cbrpc_centry *e, uint64_t version)
{
	if (version > e->version) {
		e->version = version;
		e->complete = false;
		if (e->valid)
			memset(e->valid, 0, (e->length / CBRPC_GRANULE + 8) / 8);
	}
}

void cbrpc_cache_seen(struct cbrpc_ssession *s, const struct cbrpc_handle *h)
{
	struct cbrpc_sregion *r = cbrpc_map_get(&s->regions, (uint64_t)h->region + 1);
	struct cbrpc_centry *e;

	/* only handles that could be dereferenced get a record */
	if (!r || r->withdrawn || h->addr < r->addr || h->length > r->length ||
	    h->addr - r->addr > r->length - h->length || !h->length)
		return;
	e = entry_get(s, h);
	if (e)
		entry_version(e, h->version);
}

/* Drop the records of S matching REGION (every record if REGION is
 * UINT32_MAX); pinned ones are doomed and dropped when unpinned. */
static void cache_drop(struct cbrpc_ssession *s, uint32_t region)
{
	struct cbrpc_centry **all, *e;
	size_t n = 0, pos = 0, cap = 0;
	uint64_t key;
	void *val;

	while (cbrpc_map_next(&s->cache, &pos, &key, &val))
		for (e = val; e; e = e->next_same)
			cap++;
	if (!cap)
		return;
	all = malloc(cap * sizeof(*all));
	pos = 0;
	while (cbrpc_map_next(&s->cache, &pos, &key, &val))
		for (e = val; e; e = e->next_same)
			if (region == UINT32_MAX || e->region == region) {
				if (e->pins)
					e->doomed = true;
				else if (all)
					all[n++] = e;
				else
					e->doomed = true;	/* no memory: dropped lazily */
			}
	for (size_t i = 0; i < n; i++)
		entry_free(all[i]);
	free(all);
}

void cbrpc_cache_drop_region(struct cbrpc_ssession *s, uint32_t region)
{
	cache_drop(s, region);
}

void cbrpc_cache_drop_session(struct cbrpc_ssession *s)
{
	cache_drop(s, UINT32_MAX);
	/* with uses == 0 nothing is pinned: doomed leftovers go too */
	for (size_t pos = 0;;) {
		uint64_t key;
		void *val;

		if (!cbrpc_map_next(&s->cache, &pos, &key, &val))
			break;
		entry_free(val);
		pos = 0;
	}
}

static int pin(struct cbrpc_req *req, struct cbrpc_centry *e)
{
	for (unsigned int i = 0; i < req->npinned; i++)
		if (req->pinned[i] == e)
			return 0;
	if (req->npinned == sizeof(req->pinned) / sizeof(req->pinned[0]))
		return cbrpc_err(CBRPC_E2BIG);
	req->pinned[req->npinned++] = e;
	e->pins++;
	return 0;
}

void cbrpc_req_release(struct cbrpc_req *req)
{
	for (unsigned int i = 0; i < req->ntemps; i++) {
		req->srv->cache_used -= req->temps[i]->size;
		cbrpc_heap_put(req->srv->cache_heap, req->temps[i]);
	}
	req->ntemps = 0;
	for (unsigned int i = 0; i < req->npinned; i++) {
		struct cbrpc_centry *e = req->pinned[i];

		if (!--e->pins && e->doomed)
			entry_free(e);
	}
	req->npinned = 0;
}

/* A block of LENGTH bytes of the cache heap, evicting what must go. */
static struct cbrpc_block *cache_alloc(struct cbrpc_server *srv, size_t length)
{
	struct cbrpc_block *b;

	while (!(b = cbrpc_heap_get(srv->cache_heap, length)))
		if (!evict_one(srv, true))
			return NULL;
	srv->cache_used += b->size;
	return b;
}

/* Checks common to READ and WRITE: flags, range, owner, region, bounds. */
static int check_access(struct cbrpc_req *req, const struct cbrpc_handle *h, uint64_t off,
			size_t len, uint32_t need, struct cbrpc_ssession **sess,
			struct cbrpc_sregion **region)
{
	struct cbrpc_ssession *s;
	struct cbrpc_sregion *r;

	if (!h || !len)
		return cbrpc_err(CBRPC_EINVAL);
	if (!(h->flags & need))
		return cbrpc_err(CBRPC_EPERM);
	if (off > h->length || len > h->length - off)
		return cbrpc_err(CBRPC_ERANGE);
	if (h->owner == req->sess->owner) {
		s = req->sess;
	} else {
		if (!(h->flags & CBRPC_H_FORWARD))
			return cbrpc_err(CBRPC_EPERM);
		s = cbrpc_server_find_owner(req->srv, h->owner);
		if (!s)
			return cbrpc_err(CBRPC_ENOGRANT);
	}
	if (s->state == SS_DEAD)
		return cbrpc_err(CBRPC_EDISCONNECTED);
	r = cbrpc_map_get(&s->regions, (uint64_t)h->region + 1);
	if (!r || r->withdrawn)
		return cbrpc_err(CBRPC_ENOHEAP);
	if (h->rkey != r->rkey || h->addr < r->addr || h->length > r->length ||
	    h->addr - r->addr > r->length - h->length)
		return cbrpc_err(CBRPC_EBOUNDS);
	*sess = s;
	*region = r;
	return 0;
}

/* Post N READs or WRITEs on S and wait for them; *RP counts them in flight.
 * A region withdrawn meanwhile is freed once idle: *RP becomes NULL and the
 * next batch is refused. */
static int run_ops(struct cbrpc_req *req, struct cbrpc_ssession *s, struct cbrpc_sregion **rp,
		   struct ibv_send_wr *wr, struct ibv_sge *sge, unsigned int n)
{
	struct cbrpc_server *srv = req->srv;
	struct cbrpc_sregion *r = *rp;
	struct ibv_send_wr *bad;
	int ret;

	if (!r || r->withdrawn)
		return cbrpc_err(CBRPC_ENOHEAP);
	srv->op_seq++;
	for (unsigned int i = 0; i < n; i++) {
		wr[i].wr_id = cbrpc_wr_id(WR_KIND_OP, s->slot, srv->op_seq, i);
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	srv->op_left = n;
	srv->op_err = 0;
	if (ibv_post_send(s->id->qp, wr, &bad)) {
		/* the ones before BAD are posted: wait for those */
		unsigned int posted = 0;

		for (struct ibv_send_wr *w = wr; w && w != bad; w = w->next)
			posted++;
		srv->op_left = posted;
		srv->op_err = cbrpc_err(CBRPC_EDEVICE);
	}
	r->inflight++;
	s->uses++;
	ret = cbrpc_server_wait_ops(srv, s, cbrpc_deadline(srv->op_timeout_ms));
	s->uses--;
	r->inflight--;
	if (r->withdrawn) {
		cbrpc_sregion_idle(s, r);	/* acknowledges and frees it */
		*rp = NULL;
	}
	if (!ret && srv->op_err)
		ret = srv->op_err;
	return ret;
}

static bool granule_valid(const struct cbrpc_centry *e, uint64_t g)
{
	return e->valid[g / 8] & (1u << (g % 8));
}

/* Run N READs into E's buffer; mark their granules pulled. */
static int read_batch(struct cbrpc_req *req, struct cbrpc_ssession *s, struct cbrpc_sregion **r,
		      struct cbrpc_centry *e, const struct cbrpc_handle *h,
		      struct ibv_send_wr *wr, struct ibv_sge *sge, unsigned int n)
{
	uint64_t ngran = (h->length + CBRPC_GRANULE - 1) / CBRPC_GRANULE;
	int ret = run_ops(req, s, r, wr, sge, n);

	if (ret)
		return ret;
	for (unsigned int i = 0; i < n; i++) {
		uint64_t a = (wr[i].wr.rdma.remote_addr - h->addr) / CBRPC_GRANULE;
		uint64_t b = a + (sge[i].length + CBRPC_GRANULE - 1) / CBRPC_GRANULE;

		for (; a < b && a < ngran; a++)
			e->valid[a / 8] |= 1u << (a % 8);
	}
	return 0;
}

/* LEN bytes between local block B and remote ADDR (OPCODE READ or WRITE), in
 * batches of work requests of at most MAX_READ bytes; *COUNT: posted. */
static int transfer(struct cbrpc_req *req, struct cbrpc_ssession *s, struct cbrpc_sregion **rp,
		    enum ibv_wr_opcode opcode, struct cbrpc_block *b, uint64_t addr,
		    uint32_t rkey, size_t len, unsigned int *count)
{
	struct ibv_send_wr wr[BATCH];
	struct ibv_sge sge[BATCH];
	uint64_t pos = 0;
	int ret = 0;

	*count = 0;
	while (pos < len && !ret) {
		unsigned int n = 0;

		for (; n < BATCH && pos < len; n++) {
			size_t k = len - pos < MAX_READ ? len - pos : MAX_READ;

			sge[n] = (struct ibv_sge){ .addr = b->addr + pos, .length = (uint32_t)k,
						   .lkey = b->region->mr->lkey };
			memset(&wr[n], 0, sizeof(wr[n]));
			wr[n].opcode = opcode;
			wr[n].wr.rdma.remote_addr = addr + pos;
			wr[n].wr.rdma.rkey = rkey;
			pos += k;
		}
		ret = run_ops(req, s, rp, wr, sge, n);
		*count += n;
	}
	return ret;
}

/* An object too large for the cache (over half of it): LEN bytes at OFF
 * are read into a buffer of the request, not kept. */
static int deref_direct(struct cbrpc_req *req, struct cbrpc_ssession *s, struct cbrpc_sregion *r,
			const struct cbrpc_handle *h, uint64_t off, size_t len, const void **data)
{
	struct cbrpc_server *srv = req->srv;
	struct cbrpc_block *b;
	unsigned int reads;
	int ret;

	if (len > srv->cache_bytes / 2 ||
	    req->ntemps == sizeof(req->temps) / sizeof(req->temps[0])) {
		fail_stat(srv, cbrpc_err(CBRPC_E2BIG));
		return cbrpc_err(CBRPC_E2BIG);
	}
	b = cache_alloc(srv, len);
	if (!b) {
		fail_stat(srv, cbrpc_err(CBRPC_ENOMEM));
		return cbrpc_err(CBRPC_ENOMEM);
	}
	req->temps[req->ntemps++] = b;
	ret = transfer(req, s, &r, IBV_WR_RDMA_READ, b, h->addr + off, h->rkey, len, &reads);
	srv->stats.reads += reads;
	if (ret) {
		srv->stats.last_error = ret;
		return ret;
	}
	srv->stats.read_bytes += len;
	*data = (const void *)(uintptr_t)b->addr;
	return 0;
}

CBRPC_EXPORT int cbrpc_deref(struct cbrpc_req *req, const struct cbrpc_handle *h,
			     uint64_t off, size_t len, const void **data)
{
	struct cbrpc_server *srv;
	struct cbrpc_ssession *s;
	struct cbrpc_sregion *r;
	struct cbrpc_centry *e;
	struct ibv_send_wr wr[BATCH];
	struct ibv_sge sge[BATCH];
	uint64_t g, g_end;
	unsigned int n = 0, reads = 0;
	uint64_t bytes = 0;
	int ret;

	if (!req || !data)
		return cbrpc_err(CBRPC_EINVAL);
	srv = req->srv;
	cbrpc_server_poll(srv);	/* a withdrawal or disconnection may be waiting */
	ret = check_access(req, h, off, len, CBRPC_H_READ, &s, &r);
	if (ret)
		goto refused;
	e = entry_get(s, h);
	if (!e) {
		ret = cbrpc_err(CBRPC_ENOMEM);
		goto refused;
	}
	if (e->version > h->version) {
		ret = cbrpc_err(CBRPC_ESTALE);
		goto refused;
	}
	entry_version(e, h->version);
	if (h->length > srv->cache_bytes / 2)
		return deref_direct(req, s, r, h, off, len, data);
	ret = pin(req, e);
	if (ret)
		goto refused;
	if (!e->buf) {
		e->valid = calloc((e->length / CBRPC_GRANULE + 8) / 8, 1);
		e->buf = e->valid ? cache_alloc(srv, h->length) : NULL;
		if (!e->buf) {
			entry_drop_data(srv, e);
			ret = cbrpc_err(CBRPC_ENOMEM);
			goto refused;
		}
	}
	lru_touch(srv, e);
	/* every granule pulled already: no walk over the bitmap */
	g_end = e->complete ? 0 : (off + len + CBRPC_GRANULE - 1) / CBRPC_GRANULE;
	for (g = off / CBRPC_GRANULE; g < g_end;) {
		uint64_t start, end;

		if (granule_valid(e, g)) {
			g++;
			continue;
		}
		start = g * CBRPC_GRANULE;
		while (g < g_end && !granule_valid(e, g) &&
		       (g + 1) * CBRPC_GRANULE - start <= MAX_READ)
			g++;
		end = g * CBRPC_GRANULE < h->length ? g * CBRPC_GRANULE : h->length;
		sge[n] = (struct ibv_sge){
			.addr = e->buf->addr + start,
			.length = (uint32_t)(end - start),
			.lkey = e->buf->region->mr->lkey,
		};
		memset(&wr[n], 0, sizeof(wr[n]));
		wr[n].opcode = IBV_WR_RDMA_READ;
		wr[n].wr.rdma.remote_addr = h->addr + start;
		wr[n].wr.rdma.rkey = h->rkey;
		bytes += end - start;
		if (++n == BATCH) {
			ret = read_batch(req, s, &r, e, h, wr, sge, n);
			if (ret)
				break;
			reads += n;
			n = 0;
		}
	}
	if (!ret && n) {
		ret = read_batch(req, s, &r, e, h, wr, sge, n);
		if (!ret)
			reads += n;
	}
	srv->stats.reads += reads;
	if (ret) {
		srv->stats.last_error = ret;
		return ret;
	}
	srv->stats.read_bytes += bytes;
	if (!reads)
		srv->stats.cache_hits++;
	if (off == 0 && len >= e->length)
		e->complete = true;
	*data = (const void *)(uintptr_t)(e->buf->addr + off);
	return 0;
refused:
	fail_stat(srv, ret);
	return ret;
}

CBRPC_EXPORT int cbrpc_write(struct cbrpc_req *req, const struct cbrpc_handle *h,
			     uint64_t off, const void *data, size_t len)
{
	struct cbrpc_server *srv;
	struct cbrpc_ssession *s;
	struct cbrpc_sregion *r;
	struct cbrpc_block *bounce;
	unsigned int n;
	int ret;

	if (!req || !data)
		return cbrpc_err(CBRPC_EINVAL);
	srv = req->srv;
	cbrpc_server_poll(srv);
	ret = check_access(req, h, off, len, CBRPC_H_WRITE, &s, &r);
	if (!ret && len > srv->cache_bytes)
		ret = cbrpc_err(CBRPC_E2BIG);
	bounce = ret ? NULL : cache_alloc(srv, len);
	if (!ret && !bounce)
		ret = cbrpc_err(CBRPC_ENOMEM);
	if (ret) {
		fail_stat(srv, ret);
		return ret;
	}
	memcpy((void *)(uintptr_t)bounce->addr, data, len);
	ret = transfer(req, s, &r, IBV_WR_RDMA_WRITE, bounce, h->addr + off, h->rkey, len, &n);
	srv->stats.writes += n;
	/* after a timeout too: the QP was stopped and flushed (run_ops) */
	srv->cache_used -= bounce->size;
	cbrpc_heap_put(srv->cache_heap, bounce);
	if (ret) {
		srv->stats.last_error = ret;
		return ret;
	}
	srv->stats.write_bytes += len;
	/* the caller's handles overlapping the write were written; cached copies of
	 * the object are no longer what the client holds */
	for (unsigned int i = 0; i < req->nhandles; i++) {
		const struct cbrpc_handle *o = &req->handles[i];

		if (o->owner == h->owner && o->region == h->region &&
		    o->addr < h->addr + off + len && h->addr + off < o->addr + o->length)
			req->written |= 1u << i;
	}
	for (struct cbrpc_centry *e = cbrpc_map_get(&s->cache, h->addr); e; e = e->next_same) {
		e->complete = false;
		if (e->valid)
			memset(e->valid, 0, (e->length / CBRPC_GRANULE + 8) / 8);
	}
	return 0;
}

CBRPC_EXPORT uint32_t cbrpc_req_op(const struct cbrpc_req *req)
{
	return req ? req->op : 0;
}

CBRPC_EXPORT const void *cbrpc_req_inline(const struct cbrpc_req *req, size_t *len)
{
	if (len)
		*len = req ? req->inline_len : 0;
	return req && req->inline_len ? req->inline_data : NULL;
}

CBRPC_EXPORT unsigned int cbrpc_req_nhandles(const struct cbrpc_req *req)
{
	return req ? req->nhandles : 0;
}

CBRPC_EXPORT int cbrpc_req_handle(const struct cbrpc_req *req, unsigned int index,
				  struct cbrpc_handle *handle)
{
	if (!req || !handle || index >= req->nhandles)
		return cbrpc_err(CBRPC_EINVAL);
	*handle = req->handles[index];
	return 0;
}

CBRPC_EXPORT uint64_t cbrpc_req_caller(const struct cbrpc_req *req)
{
	return req ? req->sess->owner : 0;
}

CBRPC_EXPORT int cbrpc_req_forward(const struct cbrpc_req *req, unsigned int index,
				   struct cbrpc_handle *handle)
{
	if (!req || !handle || index >= req->nhandles)
		return cbrpc_err(CBRPC_EINVAL);
	if (!(req->handles[index].flags & CBRPC_H_FORWARD))
		return cbrpc_err(CBRPC_EPERM);
	*handle = req->handles[index];
	return 0;
}

CBRPC_EXPORT void cbrpc_req_mark_written(struct cbrpc_req *req, unsigned int index)
{
	if (req && index < req->nhandles)
		req->written |= 1u << index;
}

CBRPC_EXPORT int cbrpc_reply_inline(struct cbrpc_req *req, const void *data, size_t len)
{
	if (!req || (len && !data))
		return cbrpc_err(CBRPC_EINVAL);
	if (len > CBRPC_INLINE_MAX)
		return cbrpc_err(CBRPC_E2BIG);
	memcpy(req->reply, data, len);
	req->reply_len = len;
	return 0;
}
