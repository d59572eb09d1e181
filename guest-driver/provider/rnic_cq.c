// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rnic provider: completion queues.
 *
 * The ring of 64-byte CQEs is the kernel's, mapped here. The consumer owns
 * the entry of free-running index i when its owner bit equals
 * ((i >> log) & 1) ^ 1; it reads the body only after the owner byte
 * (udma_from_device_barrier). The device counts the ring as full against
 * the consumer index of the last CQ doorbell (req_notify_cq rings it with
 * an arm flag).
 *
 * That doorbell is an MMIO write (a VM exit on real virtualization, the BQL
 * under TCG), so poll does not ring it every time: the ring is made twice
 * the size asked for (ibv_cq.cqe stays the size asked for, the capacity the
 * application counts on) and poll tells the device only when it has
 * consumed 'db_slack' = entries - cqe CQEs since the last doorbell. With at
 * most cqe CQEs outstanding, the device then never finds the ring full.
 *
 * A CQE names its QP by the device handle and carries the WQE's ring index
 * as wr_id: the index retires the WQE (and every earlier one, for the send
 * queue), the caller's wr_id comes from the queue's shadow array.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rnic.h"

/* Work completion fields the extended CQ can report. */
#define RNIC_CQ_WC_FLAGS                                                       \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |                        \
	 IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |                       \
	 IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |                             \
	 IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)

static inline void rnic_cq_lock(struct rnic_cq *cq)
{
	if (!cq->single_threaded)
		pthread_spin_lock(&cq->lock);
}

static inline void rnic_cq_unlock(struct rnic_cq *cq)
{
	if (!cq->single_threaded)
		pthread_spin_unlock(&cq->lock);
}

static inline struct rnic_context *rnic_cq_ctx(struct rnic_cq *cq)
{
	return to_rctx(cq->vcq.cq.context);
}

/* The CQE at the consumer index if the device has written it, else NULL. */
static inline struct rnic_cqe *rnic_cq_peek(struct rnic_cq *cq, uint32_t idx)
{
	struct rnic_cqe *cqe = &cq->ring[idx & ((1u << cq->log) - 1)];
	uint8_t owner = ((idx >> cq->log) & 1) ^ 1;

	if ((atomic_load_explicit((_Atomic(uint8_t) *)&cqe->owner,
				  memory_order_relaxed) & 1) != owner)
		return NULL;
	/* the body was written before the owner byte */
	udma_from_device_barrier();
	return cqe;
}

/* Tell the device how far the ring is consumed (and maybe arm it). */
static inline void rnic_cq_doorbell(struct rnic_cq *cq, uint32_t flags)
{
	rnic_ring_db(rnic_cq_ctx(cq), RNIC_DB_CQ, cq->handle, flags, cq->cons);
	cq->db_cons = cq->cons;
}

/* After consuming: the doorbell once the slack is used up. */
static inline void rnic_cq_update(struct rnic_cq *cq)
{
	if (cq->cons - cq->db_cons >= cq->db_slack)
		rnic_cq_doorbell(cq, 0);
}

/*
 * Retire the WQE a CQE completes and return its QP, with the caller's
 * wr_id in *wr_id; NULL if the QP is gone (its CQEs are skipped).
 */
static struct rnic_qp *rnic_cqe_retire(struct rnic_cq *cq,
				       const struct rnic_cqe *cqe,
				       uint64_t *wr_id)
{
	struct rnic_qp *qp;
	struct rnic_wq *wq;
	uint32_t idx;

	qp = rnic_qp_lookup(rnic_cq_ctx(cq), le32toh(cqe->qp_handle));
	if (!qp)
		return NULL;
	idx = (uint32_t)le64toh(cqe->wr_id);
	if (cqe->opcode & RNIC_WC_RECV) {
		if (qp->srq) {
			*wr_id = rnic_srq_complete(qp->srq, idx);
			return qp;
		}
		wq = &qp->rq;
	} else {
		wq = &qp->sq;
	}
	*wr_id = wq->wr_id[idx & (rnic_wq_entries(wq) - 1)];
	/* in order: everything up to this WQE is done */
	atomic_store_explicit(&wq->cons, idx + 1, memory_order_release);
	return qp;
}

static enum ibv_wc_opcode rnic_wc_opcode(uint8_t opcode)
{
	switch (opcode) {
	case RNIC_WC_SEND:
		return IBV_WC_SEND;
	case RNIC_WC_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case RNIC_WC_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case RNIC_WC_COMP_SWAP:
		return IBV_WC_COMP_SWAP;
	case RNIC_WC_FETCH_ADD:
		return IBV_WC_FETCH_ADD;
	case RNIC_WC_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case RNIC_WC_BIND_MW:
		return IBV_WC_BIND_MW;
	case RNIC_WC_FLUSH:
		return IBV_WC_FLUSH;
	case RNIC_WC_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case RNIC_WC_RECV_RDMA_WITH_IMM:
		return IBV_WC_RECV_RDMA_WITH_IMM;
	case RNIC_WC_REG_MR:
		/* an mkey registration (rnicdv.h: RNICDV_WC_REG_MKEY) */
		return IBV_WC_DRIVER1;
	default:
		return (opcode & RNIC_WC_RECV) ? IBV_WC_RECV : IBV_WC_SEND;
	}
}

static unsigned int rnic_cqe_wc_flags(const struct rnic_cqe *cqe)
{
	unsigned int flags = 0;

	if (cqe->flags & RNIC_CQE_WITH_IMM)
		flags |= IBV_WC_WITH_IMM;
	else if (cqe->flags & RNIC_CQE_WITH_INV)
		flags |= IBV_WC_WITH_INV;
	if (cqe->flags & RNIC_CQE_GRH)
		flags |= IBV_WC_GRH;
	return flags;
}

/*
 * The SL of a completion: RoCE has none, but a UD receive reports the
 * RoCE packet type there as mlx5 does (its responder CQE for RoCE: bit 3
 * UDP, bits 2..0 the L3 header, 1 IPv6 and 2 IPv4) and as the RoCEv2 annex
 * asks of UD completions (A17.4.5.1: a flag for IPv4 or IPv6); UCX's UD
 * transport reads it to find the destination address in the 40 bytes in
 * front of the data (without it, every IPv4 datagram is dropped as having
 * a wrong destination GID).
 */
enum {
	RNIC_WC_SL_ROCEV2_IPV6 = 0x9,
	RNIC_WC_SL_ROCEV2_IPV4 = 0xa,
};

static uint8_t rnic_cqe_sl(const struct rnic_cqe *cqe)
{
	if (!(cqe->flags & RNIC_CQE_GRH))
		return 0;
	return cqe->flags & RNIC_CQE_IPV4 ? RNIC_WC_SL_ROCEV2_IPV4 :
					    RNIC_WC_SL_ROCEV2_IPV6;
}

/* imm_data (network order) or, with WITH_INV, the invalidated rkey. */
static __be32 rnic_cqe_imm(const struct rnic_cqe *cqe)
{
	if (cqe->flags & RNIC_CQE_WITH_INV)
		return (__force __be32)le32toh(cqe->imm_or_inv);
	return (__force __be32)cqe->imm_or_inv;
}

static void rnic_cqe_to_wc(const struct rnic_cqe *cqe, uint64_t wr_id,
			   struct ibv_wc *wc)
{
	wc->wr_id = wr_id;
	wc->status = cqe->status;
	wc->opcode = rnic_wc_opcode(cqe->opcode);
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = le32toh(cqe->byte_len);
	wc->imm_data = rnic_cqe_imm(cqe);
	wc->qp_num = le32toh(cqe->qp_num);
	wc->src_qp = le32toh(cqe->src_qp);
	wc->wc_flags = rnic_cqe_wc_flags(cqe);
	wc->pkey_index = le16toh(cqe->pkey_index);
	wc->slid = 0;
	wc->sl = rnic_cqe_sl(cqe);
	wc->dlid_path_bits = 0;
}

int rnic_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct rnic_cq *cq = to_rcq(ibcq);
	struct rnic_cqe *cqe;
	uint64_t wr_id;
	int n = 0;

	rnic_cq_lock(cq);
	while (n < num_entries && (cqe = rnic_cq_peek(cq, cq->cons))) {
		cq->cons++;
		if (rnic_cqe_retire(cq, cqe, &wr_id))
			rnic_cqe_to_wc(cqe, wr_id, &wc[n++]);
	}
	rnic_cq_update(cq);
	rnic_cq_unlock(cq);
	return n;
}

int rnic_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct rnic_cq *cq = to_rcq(ibcq);

	/* the device fires at once if CQEs beyond our consumer exist */
	rnic_cq_lock(cq);
	rnic_cq_doorbell(cq, solicited_only ? RNIC_DB_ARM_SOLICITED :
					      RNIC_DB_ARM_NEXT);
	rnic_cq_unlock(cq);
	return 0;
}

/*
 * A QP is destroyed or reset: forget its CQEs still in the ring, so a later
 * QP with the same handle does not receive them. Receives from an SRQ give
 * their slot back.
 */
void rnic_cq_clean(struct rnic_cq *cq, struct rnic_qp *qp)
{
	struct rnic_cqe *cqe;
	uint32_t idx;

	rnic_cq_lock(cq);
	for (idx = cq->cons; idx != cq->cons + (1u << cq->log); idx++) {
		cqe = rnic_cq_peek(cq, idx);
		if (!cqe)
			break;
		if (le32toh(cqe->qp_handle) != qp->handle)
			continue;
		if ((cqe->opcode & RNIC_WC_RECV) && qp->srq)
			rnic_srq_complete(qp->srq,
					  (uint32_t)le64toh(cqe->wr_id));
		cqe->qp_handle = htole32(RNIC_HANDLE_NONE);
	}
	rnic_cq_unlock(cq);
}

/* ---------------------------------------------------------------------- */
/* Extended polling: ibv_start_poll / ibv_next_poll / ibv_end_poll        */
/* ---------------------------------------------------------------------- */

/* Advance to the next CQE of a live QP; false when the ring is empty. */
static bool rnic_cq_ex_advance(struct rnic_cq *cq)
{
	struct rnic_cqe *cqe;
	struct rnic_qp *qp;
	uint64_t wr_id;

	while ((cqe = rnic_cq_peek(cq, cq->cons))) {
		cq->cons++;
		qp = rnic_cqe_retire(cq, cqe, &wr_id);
		if (!qp)
			continue;
		cq->cur = cqe;
		cq->cur_qp = qp;
		cq->vcq.cq_ex.wr_id = wr_id;
		cq->vcq.cq_ex.status = cqe->status;
		return true;
	}
	return false;
}

static int rnic_start_poll(struct ibv_cq_ex *ibcq,
			   struct ibv_poll_cq_attr *attr)
{
	struct rnic_cq *cq = to_rcq_ex(ibcq);

	if (attr->comp_mask)
		return EINVAL;
	rnic_cq_lock(cq);
	if (rnic_cq_ex_advance(cq))
		return 0;
	/* no ibv_end_poll follows an ENOENT of ibv_start_poll */
	rnic_cq_update(cq);
	rnic_cq_unlock(cq);
	return ENOENT;
}

static int rnic_next_poll(struct ibv_cq_ex *ibcq)
{
	return rnic_cq_ex_advance(to_rcq_ex(ibcq)) ? 0 : ENOENT;
}

static void rnic_end_poll(struct ibv_cq_ex *ibcq)
{
	struct rnic_cq *cq = to_rcq_ex(ibcq);

	cq->cur = NULL;
	cq->cur_qp = NULL;
	rnic_cq_update(cq);
	rnic_cq_unlock(cq);
}

static enum ibv_wc_opcode rnic_read_opcode(struct ibv_cq_ex *ibcq)
{
	return rnic_wc_opcode(to_rcq_ex(ibcq)->cur->opcode);
}

static uint32_t rnic_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return to_rcq_ex(ibcq)->cur->vendor_err;
}

static uint32_t rnic_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return le32toh(to_rcq_ex(ibcq)->cur->byte_len);
}

static __be32 rnic_read_imm_data(struct ibv_cq_ex *ibcq)
{
	return rnic_cqe_imm(to_rcq_ex(ibcq)->cur);
}

static uint32_t rnic_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return le32toh(to_rcq_ex(ibcq)->cur->qp_num);
}

static uint32_t rnic_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return le32toh(to_rcq_ex(ibcq)->cur->src_qp);
}

static unsigned int rnic_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return rnic_cqe_wc_flags(to_rcq_ex(ibcq)->cur);
}

/* RoCE has no LIDs (the SL: rnic_cqe_sl). */
static uint32_t rnic_read_slid(struct ibv_cq_ex *ibcq)
{
	return 0;
}

static uint8_t rnic_read_sl(struct ibv_cq_ex *ibcq)
{
	return rnic_cqe_sl(to_rcq_ex(ibcq)->cur);
}

static uint8_t rnic_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return 0;
}

/* The device clock when the device wrote the CQE (RNIC_CAP_CQE_TIMESTAMP). */
static uint64_t rnic_read_completion_ts(struct ibv_cq_ex *ibcq)
{
	return le64toh(to_rcq_ex(ibcq)->cur->timestamp);
}

static void rnic_cq_set_ex_ops(struct rnic_cq *cq, uint64_t wc_flags)
{
	struct ibv_cq_ex *x = &cq->vcq.cq_ex;

	x->start_poll = rnic_start_poll;
	x->next_poll = rnic_next_poll;
	x->end_poll = rnic_end_poll;
	x->read_opcode = rnic_read_opcode;
	x->read_vendor_err = rnic_read_vendor_err;
	x->read_wc_flags = rnic_read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		x->read_byte_len = rnic_read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		x->read_imm_data = rnic_read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		x->read_qp_num = rnic_read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		x->read_src_qp = rnic_read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		x->read_slid = rnic_read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		x->read_sl = rnic_read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		x->read_dlid_path_bits = rnic_read_dlid_path_bits;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		x->read_completion_ts = rnic_read_completion_ts;
}

/* ---------------------------------------------------------------------- */
/* Create / resize / destroy                                              */
/* ---------------------------------------------------------------------- */

static bool rnic_cq_resp_ok(const struct rnic_create_cq_resp *drv)
{
	return drv->entries >= 2 && !(drv->entries & (drv->entries - 1)) &&
	       drv->ring_size >=
		       (uint64_t)drv->entries * sizeof(struct rnic_cqe);
}

/* CQEs to ask the kernel for: room for the doorbell slack (see above). */
static int rnic_cq_ring_cqe(struct ibv_context *ibctx, int cqe)
{
	uint32_t max = to_rctx(ibctx)->max_cqe;

	if (cqe < 1 || (uint32_t)cqe > max / 2)
		return cqe;
	return 2 * cqe;
}

/* The ring holds 'entries', the application counts on 'cqe'. */
static void rnic_cq_set_size(struct rnic_cq *cq, uint32_t entries, int cqe)
{
	cq->log = __builtin_ctz(entries);
	cq->vcq.cq.cqe = cqe;
	cq->db_slack = (uint32_t)cqe < entries ? entries - cqe : 1;
}

/* Map the ring the kernel created the CQ with. */
static int rnic_cq_init(struct ibv_context *ibctx, struct rnic_cq *cq,
			const struct rnic_create_cq_resp *drv, int cqe)
{
	if (!rnic_cq_resp_ok(drv) || drv->entries < (uint32_t)cqe) {
		verbs_err(verbs_get_ctx(ibctx),
			  "rnic: CQ of %u entries in %llu bytes\n",
			  drv->entries, (unsigned long long)drv->ring_size);
		return EINVAL;
	}
	cq->ring = rnic_mmap_ring(ibctx, drv->ring_key, drv->ring_size);
	if (!cq->ring)
		return errno;
	cq->ring_size = drv->ring_size;
	cq->handle = drv->cq_handle;
	rnic_cq_set_size(cq, drv->entries, cqe);
	cq->cons = 0;
	cq->db_cons = 0;
	if (pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE)) {
		munmap(cq->ring, cq->ring_size);
		return ENOMEM;
	}
	return 0;
}

struct ibv_cq *rnic_create_cq(struct ibv_context *ibctx, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector)
{
	struct urnic_create_cq_resp resp = {};
	struct ibv_create_cq cmd;
	struct rnic_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	ret = ibv_cmd_create_cq(ibctx, rnic_cq_ring_cqe(ibctx, cqe), channel,
				comp_vector, &cq->vcq.cq, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;
	ret = rnic_cq_init(ibctx, cq, &resp.drv_payload, cqe);
	if (ret)
		goto err_destroy;
	return &cq->vcq.cq;

err_destroy:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

struct ibv_cq_ex *rnic_create_cq_ex(struct ibv_context *ibctx,
				    struct ibv_cq_init_attr_ex *attr)
{
	struct urnic_create_cq_ex_resp resp = {};
	struct ibv_cq_init_attr_ex kattr;
	struct ibv_create_cq_ex cmd;
	struct rnic_cq *cq;
	int ret;

	/*
	 * completion timestamps of the device clock (not wall-clock ones), no
	 * parent domains or overrun-ignoring CQs
	 */
	if ((attr->wc_flags & ~(uint64_t)RNIC_CQ_WC_FLAGS) ||
	    ((attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) &&
	     !(to_rctx(ibctx)->caps & RNIC_CAP_CQE_TIMESTAMP)) ||
	    (attr->comp_mask & ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	kattr = *attr;
	kattr.cqe = rnic_cq_ring_cqe(ibctx, attr->cqe);
	ret = ibv_cmd_create_cq_ex(ibctx, &kattr, &cq->vcq, &cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp), 0);
	if (ret)
		goto err_free;
	ret = rnic_cq_init(ibctx, cq, &resp.drv_payload, attr->cqe);
	if (ret)
		goto err_destroy;
	cq->single_threaded =
		(attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
		(attr->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED);
	rnic_cq_set_ex_ops(cq, attr->wc_flags);
	return &cq->vcq.cq_ex;

err_destroy:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

int rnic_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct rnic_cq *cq = to_rcq(ibcq);
	struct urnic_resize_cq_resp resp = {};
	struct ibv_resize_cq cmd;
	struct rnic_cqe *ring;
	int ret;

	rnic_cq_lock(cq);
	/* the device moves the CQEs beyond the consumer it knows: ours */
	if (cq->cons != cq->db_cons)
		rnic_cq_doorbell(cq, 0);
	ret = ibv_cmd_resize_cq(ibcq, rnic_cq_ring_cqe(ibcq->context, cqe),
				&cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto out;
	if (!rnic_cq_resp_ok(&resp.drv_payload) ||
	    resp.cq_handle != cq->handle || resp.entries < (uint32_t)cqe) {
		ret = EINVAL;
		goto out;
	}
	/* the device writes only the new ring now, same indexes */
	ring = rnic_mmap_ring(ibcq->context, resp.ring_key,
			      resp.ring_size);
	if (!ring) {
		ret = errno;
		goto out;
	}
	munmap(cq->ring, cq->ring_size);
	cq->ring = ring;
	cq->ring_size = resp.ring_size;
	rnic_cq_set_size(cq, resp.entries, cqe);
out:
	rnic_cq_unlock(cq);
	return ret;
}

int rnic_destroy_cq(struct ibv_cq *ibcq)
{
	struct rnic_cq *cq = to_rcq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	munmap(cq->ring, cq->ring_size);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}
