// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rnic provider: direct verbs (rnicdv.h), the public calls of librnic.so.1.
 *
 * Mapped STags (device ABI 1.6, RNIC_CAP_MAPPED; include/rnic/rnic-abi.h,
 * "Mapped STags"): rnicdv_create_mkey() asks the kernel for one
 * (ibv_reg_mr's udata RNIC_UREG_MR_MAPPED: an ALLOC_MR of kind MAPPED owned
 * by the user context); rnicdv_wr_mr_list() / rnicdv_wr_mr_interleaved()
 * post the device's REG_MR work request for it from user space, with a
 * fresh random key byte each time, its segment table (struct rnic_map_seg)
 * either inline after the WQE header or, when it does not fit the QP's WQE
 * stride, in a table the provider registered for the QP, named by the
 * WQE's one SGE.
 *
 * The table of a registration that is not inline lives in the QP's map
 * area at the slot of the WQE's SQ index: the provider reuses a slot only
 * once the SQ has moved past the WQE that used it, as for the WQE itself,
 * so the device always reads the table posted with the WQE. An area holds
 * 'per_slot' segments per slot; a longer table gets a new area twice as
 * wide (the old ones stay registered until the QP is destroyed: WQEs in
 * flight may still name them).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include "rnic.h"
#include "rnicdv.h"

/* the rights a registration may give: bit positions of IBV_ACCESS_* */
#define RNIC_MKEY_ACCESS                                                       \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static_assert((int)IBV_ACCESS_LOCAL_WRITE == (int)RNIC_ACCESS_LOCAL_WRITE &&
		      (int)IBV_ACCESS_REMOTE_WRITE ==
			      (int)RNIC_ACCESS_REMOTE_WRITE &&
		      (int)IBV_ACCESS_REMOTE_READ == (int)RNIC_ACCESS_REMOTE_READ &&
		      (int)IBV_ACCESS_REMOTE_ATOMIC ==
			      (int)RNIC_ACCESS_REMOTE_ATOMIC,
	      "access bits");
static_assert(sizeof(struct rnic_map_seg) == 24, "segment size");

/* the smallest map area: segments per SQ slot */
#define RNIC_MAP_AREA_MIN_SEGS	64

struct rnic_mkey {
	struct rnicdv_mkey dv;
	struct verbs_mr vmr;		/* the kernel's object (DEREG_MR) */
	uint16_t max_entries;
	uint64_t rng;			/* xorshift64 state of the key bytes */
};

static inline struct rnic_mkey *to_rmkey(struct rnicdv_mkey *dv)
{
	return container_of(dv, struct rnic_mkey, dv);
}

/* ---------------------------------------------------------------------- */
/* Device                                                                 */
/* ---------------------------------------------------------------------- */

bool rnicdv_is_supported(struct ibv_device *device)
{
	return device && rnic_is_rnic_device(device);
}

int rnicdv_query_device(struct ibv_context *ibctx,
			struct rnicdv_context *attrs)
{
	struct rnic_context *ctx;

	if (!ibctx || !attrs || !rnic_is_rnic_device(ibctx->device))
		return EOPNOTSUPP;
	ctx = to_rctx(ibctx);
	memset(attrs, 0, sizeof(*attrs));
	attrs->abi_version = ctx->abi_version;
	if (ctx->caps & RNIC_CAP_MAPPED)
		attrs->flags |= RNICDV_CONTEXT_FLAGS_MKEY;
	/* an older kernel (before ABI 1.6's ucontext field) does not say */
	if (ctx->max_map_segs) {
		attrs->max_mkey_entries = ctx->max_map_segs;
		attrs->comp_mask |= RNICDV_CONTEXT_MASK_MAX_MKEY_ENTRIES;
	}
	attrs->max_inline_mkey_entries = RNIC_MAP_INLINE_SEGS;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Mkeys                                                                  */
/* ---------------------------------------------------------------------- */

static uint64_t rnic_mkey_seed(struct rnic_mkey *mkey)
{
	struct timespec ts;
	uint64_t seed = 0;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
		       (uintptr_t)mkey ^ ((uint64_t)getpid() << 16);
	}
	return seed ? seed : 0x9e3779b97f4a7c15ull;
}

/* A random key byte other than OLD (the patent's fresh STag). */
static uint8_t rnic_mkey_next_key(struct rnic_mkey *mkey, uint8_t old)
{
	uint64_t x = mkey->rng;
	uint8_t key;

	do {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		key = x >> 56;
	} while (key == old);
	mkey->rng = x;
	return key;
}

struct rnicdv_mkey *rnicdv_create_mkey(struct ibv_pd *pd,
				       uint16_t max_entries)
{
	struct urnic_reg_mr cmd = {};
	struct ib_uverbs_reg_mr_resp resp;
	struct rnic_context *ctx;
	struct rnic_mkey *mkey;
	int ret;

	if (!pd || !rnic_is_rnic_device(pd->context->device)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	ctx = to_rctx(pd->context);
	if (!(ctx->caps & RNIC_CAP_MAPPED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!max_entries) {
		errno = EINVAL;
		return NULL;
	}
	mkey = calloc(1, sizeof(*mkey));
	if (!mkey)
		return NULL;
	cmd.flags = RNIC_UREG_MR_MAPPED;
	cmd.max_segs = max_entries;
	/* nothing pinned: no address, no length, no rights yet */
	ret = ibv_cmd_reg_mr(pd, NULL, 0, 0, 0, &mkey->vmr, &cmd.ibv_cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(mkey);
		errno = ret;
		return NULL;
	}
	mkey->max_entries = max_entries;
	mkey->rng = rnic_mkey_seed(mkey);
	mkey->dv.lkey = mkey->vmr.ibv_mr.lkey;
	mkey->dv.rkey = mkey->vmr.ibv_mr.lkey;
	verbs_debug(&ctx->vctx, "rnic: mkey %#x, up to %u segments\n",
		    mkey->dv.lkey, max_entries);
	return &mkey->dv;
}

int rnicdv_destroy_mkey(struct rnicdv_mkey *dv)
{
	struct rnic_mkey *mkey;
	int ret;

	if (!dv)
		return EINVAL;
	mkey = to_rmkey(dv);
	ret = ibv_cmd_dereg_mr(&mkey->vmr);
	if (ret)
		return ret;
	free(mkey);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Map areas: segment tables that do not fit a WQE                        */
/* ---------------------------------------------------------------------- */

static int rnic_map_area_new(struct rnic_qp *qp, uint32_t segs)
{
	uint32_t per_slot = RNIC_MAP_AREA_MIN_SEGS;
	struct rnic_map_area *area;
	size_t size;

	while (per_slot < segs)
		per_slot <<= 1;
	if (qp->map_area && per_slot <= qp->map_area->per_slot)
		per_slot = qp->map_area->per_slot << 1;
	size = (size_t)rnic_wq_entries(&qp->sq) * per_slot *
	       sizeof(struct rnic_map_seg);
	area = calloc(1, sizeof(*area));
	if (!area)
		return ENOMEM;
	if (posix_memalign(&area->buf, sysconf(_SC_PAGESIZE), size)) {
		free(area);
		return ENOMEM;
	}
	/* the device only reads it: no rights beyond local read */
	area->mr = ibv_reg_mr(qp->vqp.qp.pd, area->buf, size, 0);
	if (!area->mr) {
		int ret = errno ? errno : ENOMEM;

		free(area->buf);
		free(area);
		return ret;
	}
	area->size = size;
	area->per_slot = per_slot;
	area->next = qp->map_area;
	qp->map_area = area;
	return 0;
}

void rnic_map_areas_free(struct rnic_qp *qp)
{
	struct rnic_map_area *area, *next;

	for (area = qp->map_area; area; area = next) {
		next = area->next;
		ibv_dereg_mr(area->mr);
		free(area->buf);
		free(area);
	}
	qp->map_area = NULL;
}

/* ---------------------------------------------------------------------- */
/* The registration work request                                          */
/* ---------------------------------------------------------------------- */

/* Remember the keys an mkey had before this batch changed them. */
static int rnic_mkey_undo_push(struct rnic_qp *qp, struct rnic_mkey *mkey)
{
	if (qp->undo_len == qp->undo_cap) {
		uint32_t cap = qp->undo_cap ? qp->undo_cap * 2 : 8;
		struct rnic_mkey_undo *undo;

		undo = realloc(qp->undo, cap * sizeof(*undo));
		if (!undo)
			return ENOMEM;
		qp->undo = undo;
		qp->undo_cap = cap;
	}
	qp->undo[qp->undo_len].mkey = &mkey->dv;
	qp->undo[qp->undo_len].lkey = mkey->dv.lkey;
	qp->undo[qp->undo_len].rkey = mkey->dv.rkey;
	qp->undo_len++;
	return 0;
}

/* The batch was not posted: every mkey gets its keys back (last first). */
void rnic_mkey_undo(struct rnic_qp *qp)
{
	while (qp->undo_len) {
		struct rnic_mkey_undo *u = &qp->undo[--qp->undo_len];

		u->mkey->lkey = u->lkey;
		u->mkey->rkey = u->rkey;
	}
}

static void rnic_wr_fail(struct rnic_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
}

/*
 * A REG_MR WQE for MKEY: the table of N segments goes inline when it fits
 * the stride, else into the QP's map area; fill(segs, arg) writes it.
 */
static void rnic_wr_mkey(struct ibv_qp_ex *qpx, struct rnicdv_mkey *dv,
			 uint32_t access_flags, uint32_t repeat, uint32_t n,
			 uint64_t length,
			 void (*fill)(struct rnic_map_seg *segs, const void *arg,
				      uint32_t n),
			 const void *arg)
{
	struct rnic_qp *qp;
	struct rnic_mkey *mkey;
	struct rnic_sq_wqe *wqe;
	struct rnic_map_seg *segs;
	uint32_t room, idx, stag;
	size_t table;
	int ret;

	if (!qpx || !rnic_qp_ex_is_rnic(qpx)) {
		errno = EINVAL;
		return;	/* not ours: nothing to fail */
	}
	qp = to_rqp_ex(qpx);
	if (qp->wr_err)
		return;
	if (!(rnic_qp_ctx_caps(qp) & RNIC_CAP_MAPPED)) {
		rnic_wr_fail(qp, EOPNOTSUPP);
		return;
	}
	if (!dv || qp->type == RNIC_QPT_UD || !n || !fill ||
	    (access_flags & ~RNIC_MKEY_ACCESS)) {
		rnic_wr_fail(qp, EINVAL);
		return;
	}
	mkey = to_rmkey(dv);
	table = (size_t)n * sizeof(struct rnic_map_seg);
	room = (1u << qp->sq.shift) - sizeof(struct rnic_sq_wqe);

	idx = qp->wr_cur;
	wqe = rnic_wr_new(qpx, RNIC_WR_REG_MR);
	if (!wqe)
		return;
	if (n <= RNIC_MAP_INLINE_SEGS && table <= room) {
		segs = (struct rnic_map_seg *)(wqe + 1);
		wqe->flags |= RNIC_WQE_INLINE;
		wqe->inline_len = htole32(table);
	} else {
		struct rnic_map_area *area = qp->map_area;
		struct rnic_sge *sge = (struct rnic_sge *)(wqe + 1);
		size_t slot = idx & (rnic_wq_entries(&qp->sq) - 1);

		if (!area || area->per_slot < n) {
			ret = rnic_map_area_new(qp, n);
			if (ret) {
				rnic_wr_fail(qp, ret);
				return;
			}
			area = qp->map_area;
		}
		segs = (struct rnic_map_seg *)area->buf + slot * area->per_slot;
		wqe->num_sge = 1;
		sge->addr = htole64((uintptr_t)segs);
		sge->length = htole32(table);
		sge->lkey = htole32(area->mr->lkey);
	}
	fill(segs, arg, n);

	ret = rnic_mkey_undo_push(qp, mkey);
	if (ret) {
		rnic_wr_fail(qp, ret);
		return;
	}
	stag = RNIC_STAG(RNIC_STAG_INDEX(dv->lkey),
			 rnic_mkey_next_key(mkey, RNIC_STAG_KEY(dv->lkey)));
	wqe->imm_or_inv = htole32(repeat);
	wqe->reg.iova = 0;		/* zero-based, as mlx5's mkeys */
	wqe->reg.length = htole64(length);
	wqe->reg.pbl_addr = 0;
	wqe->reg.stag = htole32(stag);
	wqe->reg.access = htole32(access_flags);
	wqe->reg.npages = htole32(n);
	wqe->reg.page_shift = 0;
	dv->lkey = stag;
	dv->rkey = stag;
}

static void rnic_fill_list(struct rnic_map_seg *segs, const void *arg,
			   uint32_t n)
{
	const struct ibv_sge *sge = arg;
	uint32_t i;

	for (i = 0; i < n; i++) {
		segs[i].addr = htole64(sge[i].addr);
		segs[i].length = htole32(sge[i].length);
		segs[i].lkey = htole32(sge[i].lkey);
		segs[i].skip = 0;
		segs[i].rsvd = 0;
	}
}

void rnicdv_wr_mr_list(struct ibv_qp_ex *qpx, struct rnicdv_mkey *mkey,
		       uint32_t access_flags, uint16_t num_sges,
		       const struct ibv_sge *sge)
{
	uint64_t length = 0;
	uint16_t i;

	if (num_sges && !sge)
		num_sges = 0;	/* refused below */
	for (i = 0; i < num_sges; i++)
		length += sge[i].length;
	rnic_wr_mkey(qpx, mkey, access_flags, 1, num_sges, length,
		     rnic_fill_list, sge);
}

static void rnic_fill_interleaved(struct rnic_map_seg *segs, const void *arg,
				  uint32_t n)
{
	const struct rnicdv_mr_interleaved *data = arg;
	uint32_t i;

	for (i = 0; i < n; i++) {
		segs[i].addr = htole64(data[i].addr);
		segs[i].length = htole32(data[i].bytes_count);
		segs[i].lkey = htole32(data[i].lkey);
		segs[i].skip = htole32(data[i].bytes_skip);
		segs[i].rsvd = 0;
	}
}

void rnicdv_wr_mr_interleaved(struct ibv_qp_ex *qpx, struct rnicdv_mkey *mkey,
			      uint32_t access_flags, uint32_t repeat_count,
			      uint16_t num_interleaved,
			      const struct rnicdv_mr_interleaved *data)
{
	uint64_t length = 0;
	uint16_t i;

	if (num_interleaved && !data)
		num_interleaved = 0;
	for (i = 0; i < num_interleaved; i++)
		length += data[i].bytes_count;
	if (!repeat_count) {
		if (qpx && rnic_qp_ex_is_rnic(qpx))
			rnic_wr_fail(to_rqp_ex(qpx), EINVAL);
		return;
	}
	rnic_wr_mkey(qpx, mkey, access_flags, repeat_count, num_interleaved,
		     length * repeat_count, rnic_fill_interleaved, data);
}
