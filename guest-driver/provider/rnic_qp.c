// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rnic provider: queue pairs. Created, modified and destroyed by the
 * kernel; work requests are posted here without a system call:
 *
 *   1. write the WQE into the ring slot of the producer index (an SQ WQE
 *      is a 64-byte header then SGEs or inline data, an RQ WQE a 16-byte
 *      header then SGEs; the stride is 1 << shift);
 *   2. udma_to_device_barrier(): the WQEs are visible before ...
 *   3. ... the doorbell, one 8-byte store of handle | index << 32 for all
 *      the WQEs of the call.
 *
 * Both the classic ibv_post_send() and the ibv_wr_*() API build the same
 * WQEs. The device refuses doorbells of a QP in RESET; WQEs posted in INIT
 * or RTR wait until RTS (docs/spec.md, "QP state machine").
 *
 * FLUSH and ATOMIC WRITE (IBTA 1.5, ABI 1.2) exist only in the ibv_wr_*()
 * API (struct ibv_send_wr has no fields for them): ibv_wr_flush() and
 * ibv_wr_atomic_write(), on QPs created with IBV_QP_EX_WITH_FLUSH /
 * IBV_QP_EX_WITH_ATOMIC_WRITE when the device has them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rnic.h"

#define RNIC_RC_SEND_OPS                                                       \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |                  \
	 IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_WRITE |            \
	 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |       \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |                                   \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |       \
	 IBV_QP_EX_WITH_BIND_MW)
#define RNIC_UD_SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define RNIC_UC_SEND_OPS                                                       \
	(RNIC_UD_SEND_OPS | IBV_QP_EX_WITH_RDMA_WRITE |                        \
	 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_LOCAL_INV |       \
	 IBV_QP_EX_WITH_BIND_MW)
/* RC, when the device does them (device_cap_flags_ex) */
#define RNIC_PLACEMENT_SEND_OPS                                                \
	(IBV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_ATOMIC_WRITE)

static_assert((int)RNIC_FLUSH_GLOBAL == (int)IBV_FLUSH_GLOBAL &&
		      (int)RNIC_FLUSH_PERSISTENT == (int)IBV_FLUSH_PERSISTENT &&
		      (int)RNIC_FLUSH_RANGE == (int)IBV_FLUSH_RANGE &&
		      (int)RNIC_FLUSH_MR == (int)IBV_FLUSH_MR,
	      "FLUSH type and level numbering");

static inline struct rnic_context *rnic_qp_ctx(struct rnic_qp *qp)
{
	return to_rctx(qp->vqp.qp.context);
}

/* ---------------------------------------------------------------------- */
/* Work queue rings                                                       */
/* ---------------------------------------------------------------------- */

int rnic_wq_init(struct ibv_context *ibctx, struct rnic_wq *wq, uint64_t key,
		 uint64_t size, uint32_t entries, uint32_t shift,
		 uint32_t min_shift, uint32_t max_sge)
{
	if (!entries || (entries & (entries - 1)) || shift < min_shift ||
	    shift > RNIC_WQE_SHIFT_MAX || size < (uint64_t)entries << shift) {
		verbs_err(verbs_get_ctx(ibctx),
			  "rnic: ring of %u x %u bytes in %llu bytes\n",
			  entries, 1u << (shift & 31),
			  (unsigned long long)size);
		return EINVAL;
	}
	wq->wr_id = calloc(entries, sizeof(*wq->wr_id));
	if (!wq->wr_id)
		return ENOMEM;
	wq->ring = rnic_mmap_ring(ibctx, key, size);
	if (!wq->ring) {
		int ret = errno;

		free(wq->wr_id);
		wq->wr_id = NULL;
		return ret;
	}
	wq->ring_size = size;
	wq->log = __builtin_ctz(entries);
	wq->shift = shift;
	wq->max_sge = max_sge;
	wq->prod = 0;
	atomic_init(&wq->cons, 0);
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

void rnic_wq_fini(struct rnic_wq *wq)
{
	if (!wq->ring)
		return;
	munmap(wq->ring, wq->ring_size);
	free(wq->wr_id);
	pthread_spin_destroy(&wq->lock);
	wq->ring = NULL;
}

/* One receive WQE at the producer index (the caller holds the lock). */
int rnic_wq_post_recv(struct rnic_wq *wq, const struct ibv_recv_wr *wr)
{
	struct rnic_rq_wqe *wqe;

	if (rnic_wq_full(wq, wq->prod))
		return ENOMEM;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge)
		return EINVAL;
	wqe = rnic_wq_slot(wq, wq->prod);
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = htole64(wq->prod);
	wqe->num_sge = wr->num_sge;
	rnic_fill_sges((struct rnic_sge *)(wqe + 1), wr->sg_list, wr->num_sge);
	wq->wr_id[wq->prod & (rnic_wq_entries(wq) - 1)] = wr->wr_id;
	wq->prod++;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Send WQEs                                                              */
/* ---------------------------------------------------------------------- */

static int rnic_wr_opcode(const struct rnic_qp *qp, enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
		return RNIC_WR_SEND;
	case IBV_WR_SEND_WITH_IMM:
		return RNIC_WR_SEND_IMM;
	default:
		break;
	}
	if (qp->type == RNIC_QPT_UD)
		return -1;
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		return RNIC_WR_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return RNIC_WR_RDMA_WRITE_IMM;
	case IBV_WR_LOCAL_INV:
		return RNIC_WR_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return RNIC_WR_BIND_MW;
	default:
		break;
	}
	if (qp->type != RNIC_QPT_RC)
		return -1;	/* UC: no READ, atomics, SEND with invalidate */
	switch (op) {
	case IBV_WR_SEND_WITH_INV:
		return RNIC_WR_SEND_INV;
	case IBV_WR_RDMA_READ:
		return RNIC_WR_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return RNIC_WR_ATOMIC_CMP_SWP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return RNIC_WR_ATOMIC_FETCH_ADD;
	default:
		/*
		 * TSO; flush and atomic write have no fields in struct
		 * ibv_send_wr: ibv_wr_flush(), ibv_wr_atomic_write()
		 */
		return -1;
	}
}

/* Inline data is only for payloads the device reads from the WQE. */
static bool rnic_op_takes_inline(uint8_t op)
{
	return op == RNIC_WR_SEND || op == RNIC_WR_SEND_IMM ||
	       op == RNIC_WR_SEND_INV || op == RNIC_WR_RDMA_WRITE ||
	       op == RNIC_WR_RDMA_WRITE_IMM;
}

/* Start the WQE of index 'idx': header zeroed, opcode, flags, wr_id. */
static void rnic_wqe_start(struct rnic_qp *qp, struct rnic_sq_wqe *wqe,
			   uint8_t op, unsigned int send_flags, uint32_t idx)
{
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = htole64(idx);
	wqe->opcode = op;
	if ((send_flags & IBV_SEND_SIGNALED) || qp->sig_all)
		wqe->flags |= RNIC_WQE_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		wqe->flags |= RNIC_WQE_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		wqe->flags |= RNIC_WQE_FENCE;
}

/* Append inline bytes to the WQE's payload; EINVAL beyond max_inline. */
static int rnic_wqe_add_inline(struct rnic_qp *qp, struct rnic_sq_wqe *wqe,
			       const void *addr, size_t length)
{
	uint32_t len = le32toh(wqe->inline_len);

	if (length > qp->max_inline - len)
		return EINVAL;
	memcpy((uint8_t *)(wqe + 1) + len, addr, length);
	wqe->inline_len = htole32(len + length);
	wqe->flags |= RNIC_WQE_INLINE;
	return 0;
}

static void rnic_wqe_set_ud(struct rnic_sq_wqe *wqe, struct ibv_ah *ah,
			    uint32_t remote_qpn, uint32_t remote_qkey)
{
	wqe->ud.remote_qpn = htole32(remote_qpn);
	wqe->ud.remote_qkey = htole32(remote_qkey);
	wqe->ud.av = to_rah(ah)->av;
}

/*
 * A BIND_MW WQE: window 'mw' gets 'rkey' over the range of bind_info; the
 * device checks the rest (the MR's MW_BIND right, bounds, window state).
 */
static int rnic_wqe_set_bind(struct rnic_sq_wqe *wqe, struct ibv_mw *mw,
			     uint32_t rkey,
			     const struct ibv_mw_bind_info *bind_info)
{
	if (!mw || (!bind_info->mr && bind_info->length) ||
	    (bind_info->mr && bind_info->mr->pd != mw->pd))
		return EINVAL;
	if (bind_info->mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EINVAL;	/* not supported by the device */
	wqe->bind.addr = htole64(bind_info->addr);
	wqe->bind.length = htole64(bind_info->length);
	wqe->bind.mr_lkey = htole32(bind_info->mr ? bind_info->mr->lkey : 0);
	wqe->bind.mw_rkey = htole32(mw->rkey);
	wqe->bind.new_rkey = htole32(rkey);
	wqe->bind.access = htole32(bind_info->mw_access_flags);
	return 0;
}

static int rnic_build_send(struct rnic_qp *qp, struct rnic_sq_wqe *wqe,
			   const struct ibv_send_wr *wr, uint32_t idx)
{
	int op = rnic_wr_opcode(qp, wr->opcode);
	int i, ret;

	if (op < 0 || wr->num_sge < 0)
		return EINVAL;
	rnic_wqe_start(qp, wqe, op, wr->send_flags, idx);

	switch (op) {
	case RNIC_WR_SEND:
	case RNIC_WR_SEND_IMM:
		if (op == RNIC_WR_SEND_IMM)
			wqe->imm_or_inv = (__force uint32_t)wr->imm_data;
		if (qp->type == RNIC_QPT_UD) {
			if (!wr->wr.ud.ah)
				return EINVAL;
			rnic_wqe_set_ud(wqe, wr->wr.ud.ah, wr->wr.ud.remote_qpn,
					wr->wr.ud.remote_qkey);
		}
		break;
	case RNIC_WR_SEND_INV:
	case RNIC_WR_LOCAL_INV:
		wqe->imm_or_inv = htole32(wr->invalidate_rkey);
		if (op == RNIC_WR_LOCAL_INV)
			return 0;	/* no payload */
		break;
	case RNIC_WR_BIND_MW:
		return rnic_wqe_set_bind(wqe, wr->bind_mw.mw, wr->bind_mw.rkey,
					 &wr->bind_mw.bind_info);
	case RNIC_WR_RDMA_WRITE_IMM:
		wqe->imm_or_inv = (__force uint32_t)wr->imm_data;
		/* fallthrough */
	case RNIC_WR_RDMA_WRITE:
	case RNIC_WR_RDMA_READ:
		wqe->rdma.remote_addr = htole64(wr->wr.rdma.remote_addr);
		wqe->rdma.rkey = htole32(wr->wr.rdma.rkey);
		break;
	case RNIC_WR_ATOMIC_CMP_SWP:
	case RNIC_WR_ATOMIC_FETCH_ADD:
		wqe->atomic.remote_addr = htole64(wr->wr.atomic.remote_addr);
		wqe->atomic.rkey = htole32(wr->wr.atomic.rkey);
		wqe->atomic.compare_add = htole64(wr->wr.atomic.compare_add);
		wqe->atomic.swap = htole64(wr->wr.atomic.swap);
		break;
	}

	if ((wr->send_flags & IBV_SEND_INLINE) && rnic_op_takes_inline(op)) {
		for (i = 0; i < wr->num_sge; i++) {
			ret = rnic_wqe_add_inline(
				qp, wqe, (void *)(uintptr_t)wr->sg_list[i].addr,
				wr->sg_list[i].length);
			if (ret)
				return ret;
		}
		return 0;
	}
	if ((uint32_t)wr->num_sge > qp->sq.max_sge)
		return EINVAL;
	wqe->num_sge = wr->num_sge;
	rnic_fill_sges((struct rnic_sge *)(wqe + 1), wr->sg_list, wr->num_sge);
	return 0;
}

/* The QP's rings take doorbells (the device refuses them in RESET). */
static inline bool rnic_qp_postable(struct rnic_qp *qp)
{
	return qp->vqp.qp.state != IBV_QPS_RESET;
}

static inline void rnic_sq_doorbell(struct rnic_qp *qp)
{
	/* the WQEs before the doorbell that announces them */
	udma_to_device_barrier();
	rnic_ring_db(rnic_qp_ctx(qp), RNIC_DB_SQ, qp->handle, 0, qp->sq.prod);
}

int rnic_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_wq *sq = &qp->sq;
	uint32_t start;
	int ret = 0;

	pthread_spin_lock(&sq->lock);
	start = sq->prod;
	if (!rnic_qp_postable(qp)) {
		ret = EINVAL;
		goto out;
	}
	for (; wr; wr = wr->next) {
		if (rnic_wq_full(sq, sq->prod)) {
			ret = ENOMEM;
			break;
		}
		ret = rnic_build_send(qp, rnic_wq_slot(sq, sq->prod), wr,
				      sq->prod);
		if (ret)
			break;
		sq->wr_id[sq->prod & (rnic_wq_entries(sq) - 1)] = wr->wr_id;
		sq->prod++;
	}
	if (sq->prod != start)
		rnic_sq_doorbell(qp);
out:
	pthread_spin_unlock(&sq->lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

int rnic_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_wq *rq = &qp->rq;
	uint32_t start;
	int ret = 0;

	if (qp->srq) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&rq->lock);
	start = rq->prod;
	if (!rnic_qp_postable(qp)) {
		ret = EINVAL;
		goto out;
	}
	for (; wr; wr = wr->next) {
		ret = rnic_wq_post_recv(rq, wr);
		if (ret)
			break;
	}
	if (rq->prod != start) {
		udma_to_device_barrier();
		rnic_ring_db(rnic_qp_ctx(qp), RNIC_DB_RQ, qp->handle, 0,
			     rq->prod);
	}
out:
	pthread_spin_unlock(&rq->lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/* ---------------------------------------------------------------------- */
/* ibv_wr_*(): builders take a slot, setters fill the last one            */
/* ---------------------------------------------------------------------- */

struct rnic_sq_wqe *rnic_wr_new(struct ibv_qp_ex *ibqp, uint8_t op)
{
	struct rnic_qp *qp = to_rqp_ex(ibqp);
	struct rnic_wq *sq = &qp->sq;
	struct rnic_sq_wqe *wqe;

	if (qp->wr_err)
		return NULL;
	if (rnic_wq_full(sq, qp->wr_cur)) {
		qp->wr_err = ENOMEM;
		return NULL;
	}
	wqe = rnic_wq_slot(sq, qp->wr_cur);
	rnic_wqe_start(qp, wqe, op, ibqp->wr_flags, qp->wr_cur);
	sq->wr_id[qp->wr_cur & (rnic_wq_entries(sq) - 1)] = ibqp->wr_id;
	qp->wr_cur++;
	return wqe;
}

/* The WQE the setters complete, or NULL after an error. */
static struct rnic_sq_wqe *rnic_wr_last(struct rnic_qp *qp)
{
	if (qp->wr_err || qp->wr_cur == qp->sq.prod)
		return NULL;
	return rnic_wq_slot(&qp->sq, qp->wr_cur - 1);
}

static void rnic_wr_rdma(struct ibv_qp_ex *ibqp, uint8_t op, uint32_t rkey,
			 uint64_t remote_addr, uint32_t imm)
{
	struct rnic_sq_wqe *wqe = rnic_wr_new(ibqp, op);

	if (!wqe)
		return;
	wqe->imm_or_inv = imm;
	wqe->rdma.remote_addr = htole64(remote_addr);
	wqe->rdma.rkey = htole32(rkey);
}

static void rnic_wr_rdma_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
			       uint64_t remote_addr)
{
	rnic_wr_rdma(ibqp, RNIC_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void rnic_wr_rdma_write_imm(struct ibv_qp_ex *ibqp, uint32_t rkey,
				   uint64_t remote_addr, __be32 imm_data)
{
	rnic_wr_rdma(ibqp, RNIC_WR_RDMA_WRITE_IMM, rkey, remote_addr,
		     (__force uint32_t)imm_data);
}

static void rnic_wr_rdma_read(struct ibv_qp_ex *ibqp, uint32_t rkey,
			      uint64_t remote_addr)
{
	rnic_wr_rdma(ibqp, RNIC_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void rnic_wr_atomic(struct ibv_qp_ex *ibqp, uint8_t op, uint32_t rkey,
			   uint64_t remote_addr, uint64_t compare_add,
			   uint64_t swap)
{
	struct rnic_sq_wqe *wqe = rnic_wr_new(ibqp, op);

	if (!wqe)
		return;
	wqe->atomic.remote_addr = htole64(remote_addr);
	wqe->atomic.rkey = htole32(rkey);
	wqe->atomic.compare_add = htole64(compare_add);
	wqe->atomic.swap = htole64(swap);
}

static void rnic_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqp, uint32_t rkey,
				   uint64_t remote_addr, uint64_t compare,
				   uint64_t swap)
{
	rnic_wr_atomic(ibqp, RNIC_WR_ATOMIC_CMP_SWP, rkey, remote_addr, compare,
		       swap);
}

static void rnic_wr_atomic_fetch_add(struct ibv_qp_ex *ibqp, uint32_t rkey,
				     uint64_t remote_addr, uint64_t add)
{
	rnic_wr_atomic(ibqp, RNIC_WR_ATOMIC_FETCH_ADD, rkey, remote_addr, add,
		       0);
}

/*
 * FLUSH: what earlier writes placed in [remote_addr, remote_addr + len)
 * (IBV_FLUSH_RANGE) or the whole region (IBV_FLUSH_MR, len ignored) made
 * globally visible or persistent (type: IBV_FLUSH_GLOBAL/PERSISTENT bits).
 * Whether the region allows the type is the responder's to say (a remote
 * access error if not). The WQE carries no SGE.
 */
static void rnic_wr_flush(struct ibv_qp_ex *ibqp, uint32_t rkey,
			  uint64_t remote_addr, size_t len, uint8_t type,
			  uint8_t level)
{
	struct rnic_qp *qp = to_rqp_ex(ibqp);
	struct rnic_sq_wqe *wqe;

	if (!type || (type & ~(IBV_FLUSH_GLOBAL | IBV_FLUSH_PERSISTENT)) ||
	    level > IBV_FLUSH_MR ||
	    (level == IBV_FLUSH_RANGE && len > UINT32_MAX)) {
		if (!qp->wr_err)
			qp->wr_err = EINVAL;
		return;
	}
	wqe = rnic_wr_new(ibqp, RNIC_WR_FLUSH);
	if (!wqe)
		return;
	wqe->flush.remote_addr = htole64(remote_addr);
	wqe->flush.rkey = htole32(rkey);
	wqe->flush.type = type;
	wqe->flush.level = level;
	if (level == IBV_FLUSH_RANGE)
		wqe->flush.length = htole32(len);
}

/* ATOMIC WRITE: the 8 bytes at atomic_wr, placed at once; no SGE. */
static void rnic_wr_atomic_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
				 uint64_t remote_addr, const void *atomic_wr)
{
	struct rnic_sq_wqe *wqe = rnic_wr_new(ibqp, RNIC_WR_ATOMIC_WRITE);

	if (!wqe)
		return;
	wqe->atomic_write.remote_addr = htole64(remote_addr);
	wqe->atomic_write.rkey = htole32(rkey);
	memcpy(wqe->atomic_write.data, atomic_wr,
	       sizeof(wqe->atomic_write.data));
}

static void rnic_wr_send(struct ibv_qp_ex *ibqp)
{
	rnic_wr_new(ibqp, RNIC_WR_SEND);
}

static void rnic_wr_send_imm(struct ibv_qp_ex *ibqp, __be32 imm_data)
{
	struct rnic_sq_wqe *wqe = rnic_wr_new(ibqp, RNIC_WR_SEND_IMM);

	if (wqe)
		wqe->imm_or_inv = (__force uint32_t)imm_data;
}

static void rnic_wr_send_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct rnic_sq_wqe *wqe = rnic_wr_new(ibqp, RNIC_WR_SEND_INV);

	if (wqe)
		wqe->imm_or_inv = htole32(invalidate_rkey);
}

static void rnic_wr_local_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct rnic_sq_wqe *wqe = rnic_wr_new(ibqp, RNIC_WR_LOCAL_INV);

	if (wqe)
		wqe->imm_or_inv = htole32(invalidate_rkey);
}

static void rnic_wr_bind_mw(struct ibv_qp_ex *ibqp, struct ibv_mw *mw,
			    uint32_t rkey,
			    const struct ibv_mw_bind_info *bind_info)
{
	struct rnic_sq_wqe *wqe = rnic_wr_new(ibqp, RNIC_WR_BIND_MW);

	if (wqe && rnic_wqe_set_bind(wqe, mw, rkey, bind_info))
		to_rqp_ex(ibqp)->wr_err = EINVAL;
}

/*
 * ibv_bind_mw() for type 1 windows: a BIND_MW work request with the next
 * key; as with every provider, the window's rkey is the new one once the
 * request is posted (an error completion leaves the old one in force).
 */
int rnic_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
	};
	struct ibv_send_wr *bad;
	int ret;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = rnic_post_send(ibqp, &wr, &bad);
	if (!ret)
		mw->rkey = wr.bind_mw.rkey;
	return ret;
}

static void rnic_wr_set_ud_addr(struct ibv_qp_ex *ibqp, struct ibv_ah *ah,
				uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct rnic_qp *qp = to_rqp_ex(ibqp);
	struct rnic_sq_wqe *wqe = rnic_wr_last(qp);

	if (wqe)
		rnic_wqe_set_ud(wqe, ah, remote_qpn, remote_qkey);
}

static void rnic_wr_set_sge_list(struct ibv_qp_ex *ibqp, size_t num_sge,
				 const struct ibv_sge *sg_list)
{
	struct rnic_qp *qp = to_rqp_ex(ibqp);
	struct rnic_sq_wqe *wqe = rnic_wr_last(qp);

	/* FLUSH and ATOMIC WRITE name no local memory: nothing to add */
	if (!wqe || wqe->opcode == RNIC_WR_FLUSH ||
	    wqe->opcode == RNIC_WR_ATOMIC_WRITE)
		return;
	if (num_sge > qp->sq.max_sge) {
		qp->wr_err = EINVAL;
		return;
	}
	wqe->num_sge = num_sge;
	rnic_fill_sges((struct rnic_sge *)(wqe + 1), sg_list, num_sge);
}

static void rnic_wr_set_sge(struct ibv_qp_ex *ibqp, uint32_t lkey,
			    uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	rnic_wr_set_sge_list(ibqp, 1, &sge);
}

static void rnic_wr_set_inline_data_list(struct ibv_qp_ex *ibqp,
					 size_t num_buf,
					 const struct ibv_data_buf *buf_list)
{
	struct rnic_qp *qp = to_rqp_ex(ibqp);
	struct rnic_sq_wqe *wqe = rnic_wr_last(qp);
	size_t i;

	if (!wqe)
		return;
	if (!rnic_op_takes_inline(wqe->opcode)) {
		qp->wr_err = EINVAL;
		return;
	}
	wqe->inline_len = 0;
	for (i = 0; i < num_buf; i++) {
		qp->wr_err = rnic_wqe_add_inline(qp, wqe, buf_list[i].addr,
						 buf_list[i].length);
		if (qp->wr_err)
			return;
	}
}

static void rnic_wr_set_inline_data(struct ibv_qp_ex *ibqp, void *addr,
				    size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	rnic_wr_set_inline_data_list(ibqp, 1, &buf);
}

static void rnic_wr_start(struct ibv_qp_ex *ibqp)
{
	struct rnic_qp *qp = to_rqp_ex(ibqp);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_cur = qp->sq.prod;
	qp->wr_err = 0;
	qp->undo_len = 0;
}

static int rnic_wr_complete(struct ibv_qp_ex *ibqp)
{
	struct rnic_qp *qp = to_rqp_ex(ibqp);
	int ret = qp->wr_err;

	if (!ret && qp->wr_cur != qp->sq.prod && !rnic_qp_postable(qp))
		ret = EINVAL;
	if (!ret && qp->wr_cur != qp->sq.prod) {
		qp->sq.prod = qp->wr_cur;
		rnic_sq_doorbell(qp);
	}
	/* on error nothing of this batch is posted: mkeys keep their keys */
	if (ret)
		rnic_mkey_undo(qp);
	qp->undo_len = 0;
	pthread_spin_unlock(&qp->sq.lock);
	return ret;
}

static void rnic_wr_abort(struct ibv_qp_ex *ibqp)
{
	struct rnic_qp *qp = to_rqp_ex(ibqp);

	rnic_mkey_undo(qp);
	pthread_spin_unlock(&qp->sq.lock);
}

/* An extended QP of this provider (rnicdv's work requests). */
bool rnic_qp_ex_is_rnic(struct ibv_qp_ex *qpx)
{
	return qpx->wr_complete == rnic_wr_complete &&
	       rnic_is_rnic_device(qpx->qp_base.context->device);
}

static void rnic_qp_set_send_ops(struct rnic_qp *qp, uint64_t ops)
{
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;

	if (ops & IBV_QP_EX_WITH_SEND)
		x->wr_send = rnic_wr_send;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		x->wr_send_imm = rnic_wr_send_imm;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_INV)
		x->wr_send_inv = rnic_wr_send_inv;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE)
		x->wr_rdma_write = rnic_wr_rdma_write;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		x->wr_rdma_write_imm = rnic_wr_rdma_write_imm;
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		x->wr_rdma_read = rnic_wr_rdma_read;
	if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		x->wr_atomic_cmp_swp = rnic_wr_atomic_cmp_swp;
	if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		x->wr_atomic_fetch_add = rnic_wr_atomic_fetch_add;
	if (ops & IBV_QP_EX_WITH_LOCAL_INV)
		x->wr_local_inv = rnic_wr_local_inv;
	if (ops & IBV_QP_EX_WITH_BIND_MW)
		x->wr_bind_mw = rnic_wr_bind_mw;
	if (ops & IBV_QP_EX_WITH_FLUSH)
		x->wr_flush = rnic_wr_flush;
	if (ops & IBV_QP_EX_WITH_ATOMIC_WRITE)
		x->wr_atomic_write = rnic_wr_atomic_write;
	if (qp->type == RNIC_QPT_UD)
		x->wr_set_ud_addr = rnic_wr_set_ud_addr;
	x->wr_set_sge = rnic_wr_set_sge;
	x->wr_set_sge_list = rnic_wr_set_sge_list;
	x->wr_set_inline_data = rnic_wr_set_inline_data;
	x->wr_set_inline_data_list = rnic_wr_set_inline_data_list;
	x->wr_start = rnic_wr_start;
	x->wr_complete = rnic_wr_complete;
	x->wr_abort = rnic_wr_abort;
}

/* ---------------------------------------------------------------------- */
/* Create / modify / query / destroy                                      */
/* ---------------------------------------------------------------------- */

static int rnic_qp_init(struct ibv_context *ibctx, struct rnic_qp *qp,
			const struct ibv_qp_init_attr_ex *attr,
			const struct rnic_create_qp_resp *drv)
{
	uint32_t sq_room = (1u << (drv->sq_wqe_shift & 31)) -
			   sizeof(struct rnic_sq_wqe);
	int ret;

	qp->handle = drv->qp_handle;
	qp->type = attr->qp_type == IBV_QPT_UD ? RNIC_QPT_UD :
		   attr->qp_type == IBV_QPT_UC ? RNIC_QPT_UC : RNIC_QPT_RC;
	qp->sig_all = attr->sq_sig_all;
	qp->srq = attr->srq ? to_rsrq(attr->srq) : NULL;
	qp->max_inline = drv->max_inline;
	if (drv->sq_wqe_shift < RNIC_SQ_WQE_SHIFT_MIN ||
	    drv->max_inline > sq_room ||
	    drv->max_send_sge > sq_room / sizeof(struct rnic_sge))
		return EINVAL;
	ret = rnic_wq_init(ibctx, &qp->sq, drv->sq_key, drv->sq_size,
			   drv->sq_entries, drv->sq_wqe_shift,
			   RNIC_SQ_WQE_SHIFT_MIN, drv->max_send_sge);
	if (ret)
		return ret;
	if (qp->srq)
		return 0;
	ret = rnic_wq_init(ibctx, &qp->rq, drv->rq_key, drv->rq_size,
			   drv->rq_entries, drv->rq_wqe_shift,
			   RNIC_RQ_WQE_SHIFT_MIN, drv->max_recv_sge);
	if (ret)
		rnic_wq_fini(&qp->sq);
	return ret;
}

/* The placement send ops the device has, from the kernel's device caps. */
static uint64_t rnic_placement_ops(struct ibv_context *ibctx)
{
	struct ibv_device_attr_ex attr = {};
	uint64_t ops = 0;

	if (ibv_query_device_ex(ibctx, NULL, &attr))
		return 0;
	if (attr.device_cap_flags_ex & IB_UVERBS_DEVICE_FLUSH_GLOBAL)
		ops |= IBV_QP_EX_WITH_FLUSH;
	if (attr.device_cap_flags_ex & IB_UVERBS_DEVICE_ATOMIC_WRITE)
		ops |= IBV_QP_EX_WITH_ATOMIC_WRITE;
	return ops;
}

static int rnic_check_qp_attr(struct ibv_context *ibctx,
			      const struct ibv_qp_init_attr_ex *attr,
			      uint64_t *ops)
{
	uint64_t supported;

	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD |
					  IBV_QP_INIT_ATTR_CREATE_FLAGS |
					  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return EOPNOTSUPP;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    attr->create_flags)
		return EOPNOTSUPP;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD))
		return EINVAL;
	switch (attr->qp_type) {
	case IBV_QPT_RC:
		supported = RNIC_RC_SEND_OPS;
		break;
	case IBV_QPT_UC:
		supported = RNIC_UC_SEND_OPS;
		break;
	case IBV_QPT_UD:
		supported = RNIC_UD_SEND_OPS;
		break;
	default:
		return EOPNOTSUPP;	/* XRC, raw packet */
	}
	*ops = 0;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		*ops = attr->send_ops_flags;
		/* asked for: a device query only then */
		if (attr->qp_type == IBV_QPT_RC &&
		    (*ops & RNIC_PLACEMENT_SEND_OPS))
			supported |= rnic_placement_ops(ibctx);
		if (*ops & ~supported)
			return EOPNOTSUPP;
	}
	return 0;
}

struct ibv_qp *rnic_create_qp_ex(struct ibv_context *ibctx,
				 struct ibv_qp_init_attr_ex *attr)
{
	struct rnic_context *ctx = to_rctx(ibctx);
	struct urnic_create_qp_resp resp = {};
	struct ibv_qp_init_attr_ex kattr;
	struct ibv_create_qp cmd = {};
	struct rnic_qp *qp;
	uint64_t ops;
	int ret;

	ret = rnic_check_qp_attr(ibctx, attr, &ops);
	if (ret) {
		errno = ret;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;

	/* create flags were checked to be 0: the command takes none */
	kattr = *attr;
	kattr.comp_mask &= IBV_QP_INIT_ATTR_PD |
			   IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ret = ibv_cmd_create_qp_ex(ibctx, &qp->vqp, &kattr, &cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;
	attr->cap = kattr.cap;

	ret = rnic_qp_init(ibctx, qp, attr, &resp.drv_payload);
	if (ret)
		goto err_destroy;
	ret = rnic_qp_table_insert(ctx, qp);
	if (ret)
		goto err_fini;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		rnic_qp_set_send_ops(qp, ops);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->vqp.qp;

err_fini:
	if (!qp->srq)
		rnic_wq_fini(&qp->rq);
	rnic_wq_fini(&qp->sq);
err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	free(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *rnic_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp;

	qp = rnic_create_qp_ex(pd->context, &ex);
	if (qp)
		attr->cap = ex.cap;
	return qp;
}

/* Forget the QP's CQEs still in its CQs (destroy, reset). */
static void rnic_qp_clean_cqs(struct rnic_qp *qp)
{
	struct ibv_qp *ibqp = &qp->vqp.qp;

	if (ibqp->send_cq)
		rnic_cq_clean(to_rcq(ibqp->send_cq), qp);
	if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
		rnic_cq_clean(to_rcq(ibqp->recv_cq), qp);
}

static void rnic_wq_reset(struct rnic_wq *wq)
{
	pthread_spin_lock(&wq->lock);
	wq->prod = 0;
	atomic_store_explicit(&wq->cons, 0, memory_order_release);
	pthread_spin_unlock(&wq->lock);
}

int rnic_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		   int attr_mask)
{
	struct rnic_qp *qp = to_rqp(ibqp);
	struct ibv_modify_qp cmd = {};
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if ((attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) {
		/* the device restarts the rings at index 0 */
		rnic_qp_clean_cqs(qp);
		rnic_wq_reset(&qp->sq);
		if (!qp->srq)
			rnic_wq_reset(&qp->rq);
	}
	return 0;
}

int rnic_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		  int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int rnic_destroy_qp(struct ibv_qp *ibqp)
{
	struct rnic_qp *qp = to_rqp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	/* no CQE of this QP comes after DESTROY_QP; poll skips the others */
	rnic_qp_clean_cqs(qp);
	rnic_qp_table_remove(rnic_qp_ctx(qp), qp);
	if (!qp->srq)
		rnic_wq_fini(&qp->rq);
	rnic_wq_fini(&qp->sq);
	rnic_map_areas_free(qp);
	free(qp->undo);
	free(qp);
	return 0;
}
