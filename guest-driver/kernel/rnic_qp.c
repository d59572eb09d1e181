// SPDX-License-Identifier: GPL-2.0
/*
 * rnic queue pairs: create/modify/query/destroy through the admin queue,
 * post_send/post_recv for kernel consumers (WQEs written into the rings,
 * then one SQ/RQ doorbell per call).
 *
 * Ring geometry: entries are powers of two, the WQE stride is 1 << shift.
 * An SQ WQE is a 64-byte header followed by SGEs or inline data, an RQ WQE
 * a 16-byte header followed by SGEs (include/rnic/rnic-abi.h).
 *
 * FLUSH and ATOMIC WRITE (IBTA 1.5) from kernel ULPs follow the convention
 * of rnic-kernel.h: struct ib_send_wr has no fields for them.
 */
#include <rdma/ib_cache.h>

#include "rnic.h"
#include "rnic-kernel.h"

static int rnic_qp_type(struct rnic_dev *rdev, enum ib_qp_type type)
{
	switch (type) {
	case IB_QPT_RC:
		return RNIC_QPT_RC;
	case IB_QPT_UC:
		return (rdev->caps.caps & RNIC_CAP_UC) ? RNIC_QPT_UC :
							 -EOPNOTSUPP;
	case IB_QPT_UD:
		return RNIC_QPT_UD;
	case IB_QPT_GSI:
		return RNIC_QPT_GSI;
	default:
		return -EOPNOTSUPP;
	}
}

/*
 * UD multicast (RNIC_CAP_MCAST): the device keeps the groups and their
 * QPs; RoCE has no LID. Frames to a group are the device's once a QP is
 * in it (the Ethernet function's filter is the netdev's business: the
 * IGMP join RDMA-CM sends through it).
 */
static int rnic_mcast_cmd(struct ib_qp *ibqp, union ib_gid *gid, u8 op)
{
	struct rnic_dev *rdev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_admin_cmd cmd = { .opcode = op };

	if (ibqp->qp_type != IB_QPT_UD)
		return -EINVAL;
	cmd.uctx = cpu_to_le32(qp->uctx);
	memcpy(cmd.mcast.gid, gid->raw, 16);
	cmd.mcast.qp = cpu_to_le32(qp->handle);
	return rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, NULL);
}

int rnic_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return rnic_mcast_cmd(ibqp, gid, RNIC_CMD_ATTACH_MCAST);
}

int rnic_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	int ret = rnic_mcast_cmd(ibqp, gid, RNIC_CMD_DETACH_MCAST);

	return ret == -EIO ? 0 : ret;	/* the device is gone: so is the group */
}

static void *rnic_wq_slot(struct rnic_wq *wq, u32 idx)
{
	return wq->ring.va + ((size_t)(idx & ((1u << wq->log) - 1)) << wq->shift);
}

static u32 rnic_log_entries(u32 wr)
{
	return ilog2(roundup_pow_of_two(max_t(u32, wr, 1)));
}

/* Ring sizes and strides for the requested capabilities. */
static int rnic_qp_geometry(struct rnic_dev *rdev, struct rnic_qp *qp,
			    struct ib_qp_init_attr *init)
{
	struct ib_qp_cap *cap = &init->cap;
	const struct rnic_caps *c = &rdev->caps;
	u32 sq_bytes, rq_bytes;

	if (cap->max_send_wr > c->max_qp_wr || cap->max_recv_wr > c->max_qp_wr ||
	    cap->max_send_sge > c->max_sge || cap->max_recv_sge > c->max_sge ||
	    cap->max_inline_data > c->max_inline)
		return -EINVAL;

	qp->sq.log = rnic_log_entries(cap->max_send_wr);
	sq_bytes = sizeof(struct rnic_sq_wqe) +
		   max_t(u32, cap->max_send_sge * sizeof(struct rnic_sge),
			 cap->max_inline_data);
	qp->sq.shift = max_t(u32, RNIC_SQ_WQE_SHIFT_MIN,
			     order_base_2(sq_bytes));
	if (qp->sq.shift > RNIC_WQE_SHIFT_MAX)
		return -EINVAL;
	qp->sq.max_sge = min_t(u32, c->max_sge,
			       ((1u << qp->sq.shift) - sizeof(struct rnic_sq_wqe)) /
			       sizeof(struct rnic_sge));
	qp->max_inline = min_t(u32, c->max_inline,
			       (1u << qp->sq.shift) - sizeof(struct rnic_sq_wqe));
	cap->max_send_wr = 1u << qp->sq.log;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_inline_data = qp->max_inline;

	if (init->srq) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
		return 0;
	}
	qp->rq.log = rnic_log_entries(cap->max_recv_wr);
	rq_bytes = sizeof(struct rnic_rq_wqe) +
		   max_t(u32, cap->max_recv_sge, 1) * sizeof(struct rnic_sge);
	qp->rq.shift = max_t(u32, RNIC_RQ_WQE_SHIFT_MIN, order_base_2(rq_bytes));
	if (qp->rq.shift > RNIC_WQE_SHIFT_MAX)
		return -EINVAL;
	qp->rq.max_sge = min_t(u32, c->max_sge,
			       ((1u << qp->rq.shift) - sizeof(struct rnic_rq_wqe)) /
			       sizeof(struct rnic_sge));
	cap->max_recv_wr = 1u << qp->rq.log;
	cap->max_recv_sge = qp->rq.max_sge;
	return 0;
}

static int rnic_qp_user_resp(struct rnic_qp *qp, struct ib_udata *udata)
{
	struct rnic_ucontext *uc = rnic_udata_ucontext(udata);
	struct rnic_create_qp_resp resp = {};
	struct rnic_dma_buf ring;

	ring = qp->sq.ring;
	qp->sq_mmap = rnic_mmap_ring_insert(uc, &ring, &resp.sq_key);
	if (IS_ERR(qp->sq_mmap)) {
		int ret = PTR_ERR(qp->sq_mmap);

		qp->sq_mmap = NULL;
		return ret;
	}
	resp.sq_size = ring.size;
	if (!qp->srq) {
		ring = qp->rq.ring;
		qp->rq_mmap = rnic_mmap_ring_insert(uc, &ring, &resp.rq_key);
		if (IS_ERR(qp->rq_mmap)) {
			int ret = PTR_ERR(qp->rq_mmap);

			qp->rq_mmap = NULL;
			return ret;
		}
		resp.rq_size = ring.size;
		resp.rq_entries = 1u << qp->rq.log;
		resp.rq_wqe_shift = qp->rq.shift;
		resp.max_recv_sge = qp->rq.max_sge;
	}
	resp.qp_handle = qp->handle;
	resp.qpn = qp->ibqp.qp_num;
	resp.sq_entries = 1u << qp->sq.log;
	resp.sq_wqe_shift = qp->sq.shift;
	resp.max_send_sge = qp->sq.max_sge;
	resp.max_inline = qp->max_inline;
	return ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
}

int rnic_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		   struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_pd *pd = to_rpd(ibqp->pd);
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_CREATE_QP };
	struct rnic_admin_cqe cqe;
	bool kernel = !udata;
	int type, ret;

	type = rnic_qp_type(rdev, init->qp_type);
	if (type < 0)
		return type;
	if (init->create_flags)
		return -EOPNOTSUPP;
	if (init->srq && !(rdev->caps.caps & RNIC_CAP_SRQ))
		return -EOPNOTSUPP;
	qp->type = type;
	qp->uctx = rnic_uctx_of(udata);
	qp->ctx = pd->ctx;
	qp->state = IB_QPS_RESET;
	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->scq = to_rcq(init->send_cq);
	qp->rcq = to_rcq(init->recv_cq);
	qp->srq = init->srq ? to_rsrq(init->srq) : NULL;
	mutex_init(&qp->lock);

	ret = rnic_qp_geometry(rdev, qp, init);
	if (ret)
		return ret;
	ret = rnic_wq_alloc(rdev, &qp->sq, qp->sq.log, qp->sq.shift, kernel);
	if (ret)
		return ret;
	if (!qp->srq) {
		ret = rnic_wq_alloc(rdev, &qp->rq, qp->rq.log, qp->rq.shift,
				    kernel);
		if (ret)
			goto err_sq;
	}

	cmd.uctx = cpu_to_le32(qp->uctx);
	cmd.qp.sq_addr = cpu_to_le64(qp->sq.ring.dma);
	cmd.qp.rq_addr = cpu_to_le64(qp->srq ? 0 : qp->rq.ring.dma);
	cmd.qp.pd = cpu_to_le32(pd->handle);
	cmd.qp.send_cq = cpu_to_le32(qp->scq->handle);
	cmd.qp.recv_cq = cpu_to_le32(qp->rcq->handle);
	cmd.qp.srq = cpu_to_le32(qp->srq ? qp->srq->handle : RNIC_HANDLE_NONE);
	cmd.qp.qp_type = type;
	cmd.qp.sq_log_size = qp->sq.log;
	cmd.qp.rq_log_size = qp->srq ? 0 : qp->rq.log;
	cmd.qp.sq_wqe_shift = qp->sq.shift;
	cmd.qp.rq_wqe_shift = qp->srq ? 0 : qp->rq.shift;
	cmd.qp.sq_sig_all = qp->sig_all;
	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, &cqe);
	if (ret)
		goto err_rq;
	qp->handle = le32_to_cpu(cqe.result0);
	ibqp->qp_num = le32_to_cpu(cqe.result1);
	ret = xa_insert_irq(&rdev->qps, qp->handle, qp, GFP_KERNEL);
	if (ret)
		goto err_destroy;
	if (udata) {
		ret = rnic_qp_user_resp(qp, udata);
		if (ret)
			goto err_xa;
	}
	rnic_dbg_qp(qp, "created: type %u, SQ %u x %u B, RQ %u x %u B, uctx %u\n",
		    type, 1u << qp->sq.log, 1u << qp->sq.shift,
		    qp->srq ? 0 : 1u << qp->rq.log,
		    qp->srq ? 0 : 1u << qp->rq.shift, qp->uctx);
	return 0;

err_xa:
	xa_erase_irq(&rdev->qps, qp->handle);
err_destroy:
	rnic_cmd_simple(rdev, RNIC_CMD_DESTROY_QP, qp->uctx, qp->handle, 0);
err_rq:
	if (!qp->srq)
		rnic_wq_free(rdev, &qp->rq, &qp->rq_mmap);
err_sq:
	rnic_wq_free(rdev, &qp->sq, &qp->sq_mmap);
	return ret;
}

int rnic_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	int ret;

	ret = rnic_cmd_simple(rdev, RNIC_CMD_DESTROY_QP, qp->uctx, qp->handle,
			      0);
	if (ret && ret != -EIO)
		return ret;
	xa_erase_irq(&rdev->qps, qp->handle);
	rnic_cq_clean(qp->scq, qp->handle);
	if (qp->rcq != qp->scq)
		rnic_cq_clean(qp->rcq, qp->handle);
	/* async events of this QP may be in a handler right now */
	rnic_eqs_sync(rdev);
	if (!qp->srq)
		rnic_wq_free(rdev, &qp->rq, &qp->rq_mmap);
	rnic_wq_free(rdev, &qp->sq, &qp->sq_mmap);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* modify / query                                                         */
/* ---------------------------------------------------------------------- */

/* IB_QP_* bits the device takes (the RNIC_QP_* mask has their positions). */
#define RNIC_QP_ATTR_MASK_ALL (IB_QP_DEST_QPN * 2 - 1)

/*
 * QP access flags the device knows. Bits it does not know are dropped, not
 * refused, as always (rdma-core's tests set the FLUSH bits on every RC
 * QP); the FLUSH bits (ABI 1.2) only for a device that does FLUSH.
 */
static u32 rnic_qp_access(struct rnic_dev *rdev, int access)
{
	u32 known = RNIC_ACCESS_ALL;

	if (!(rdev->caps.caps & RNIC_CAP_FLUSH_GLOBAL))
		known &= ~RNIC_ACCESS_FLUSH;
	return access & known;
}

int rnic_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_MODIFY_QP };
	struct rnic_qp_attr a = {};
	enum ib_qp_state cur, next;
	int ret;

	if (mask & ~RNIC_QP_ATTR_MASK_ALL)
		return -EOPNOTSUPP;
	if (udata && udata->inlen)
		return -EINVAL;

	mutex_lock(&qp->lock);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (unlikely(test_bit(RNIC_FLAG_FAILED, &rdev->flags))) {
		/* ib_drain_qp and teardown: the error state is all that is left
		 * (poll_cq flushes the work requests in software) */
		ret = next == IB_QPS_ERR || next == IB_QPS_RESET ? 0 : -EIO;
		if (!ret)
			WRITE_ONCE(qp->state, IB_QPS_ERR);
		goto out;
	}
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask)) {
		rnic_dbg_qp(qp, "modify %d -> %d with mask 0x%x refused\n",
			    cur, next, mask);
		ret = -EINVAL;
		goto out;
	}

	a.qp_state = next;
	a.cur_qp_state = cur;
	if (mask & IB_QP_ACCESS_FLAGS)
		a.qp_access_flags = cpu_to_le32(rnic_qp_access(rdev,
							attr->qp_access_flags));
	if (mask & IB_QP_PKEY_INDEX)
		a.pkey_index = cpu_to_le16(attr->pkey_index);
	if (mask & IB_QP_PORT)
		a.port_num = attr->port_num;
	if (mask & IB_QP_QKEY)
		a.qkey = cpu_to_le32(attr->qkey);
	if (mask & IB_QP_AV) {
		ret = rnic_av_from_ah_attr(rdev, &a.av, &attr->ah_attr);
		if (ret)
			goto out;
	}
	if (mask & IB_QP_PATH_MTU)
		a.path_mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		a.timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		a.retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		a.rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_RQ_PSN)
		a.rq_psn = cpu_to_le32(attr->rq_psn & 0xffffff);
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		a.max_rd_atomic = min_t(u32, attr->max_rd_atomic,
					rdev->caps.max_qp_rd_atom);
	if (mask & IB_QP_MIN_RNR_TIMER)
		a.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_SQ_PSN)
		a.sq_psn = cpu_to_le32(attr->sq_psn & 0xffffff);
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a.max_dest_rd_atomic = min_t(u32, attr->max_dest_rd_atomic,
					     rdev->caps.max_qp_rd_atom);
	if (mask & IB_QP_DEST_QPN)
		a.dest_qp_num = cpu_to_le32(attr->dest_qp_num);

	cmd.uctx = cpu_to_le32(qp->uctx);
	cmd.modify_qp.qp = cpu_to_le32(qp->handle);
	cmd.modify_qp.attr_mask = cpu_to_le32(mask);
	ret = rnic_cmd_exec(rdev, &cmd, &a, sizeof(a), NULL, 0, NULL);
	if (ret) {
		rnic_dbg_qp(qp, "MODIFY_QP %d -> %d mask 0x%x failed (%d)\n",
			    cur, next, mask, ret);
		goto out;
	}
	if (next == IB_QPS_RESET && qp->uctx == RNIC_UCTX_KERNEL) {
		/* the device restarts the rings at index 0 */
		unsigned long flags;

		rnic_cq_clean(qp->scq, qp->handle);
		if (qp->rcq != qp->scq)
			rnic_cq_clean(qp->rcq, qp->handle);
		spin_lock_irqsave(&qp->sq.lock, flags);
		qp->sq.prod = 0;
		WRITE_ONCE(qp->sq.cons, 0);
		spin_unlock_irqrestore(&qp->sq.lock, flags);
		if (!qp->srq) {
			spin_lock_irqsave(&qp->rq.lock, flags);
			qp->rq.prod = 0;
			WRITE_ONCE(qp->rq.cons, 0);
			spin_unlock_irqrestore(&qp->rq.lock, flags);
		}
	}
	WRITE_ONCE(qp->state, next);
	rnic_dbg_qp(qp, "%d -> %d (mask 0x%x)\n", cur, next, mask);
out:
	mutex_unlock(&qp->lock);
	return ret;
}

int rnic_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_qp_init_attr *init)
{
	struct rnic_dev *rdev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_QUERY_QP };
	struct rnic_qp_attr a;
	int ret;

	cmd.uctx = cpu_to_le32(qp->uctx);
	cmd.query.handle = cpu_to_le32(qp->handle);
	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, &a, sizeof(a), NULL);
	if (ret)
		return ret;

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = a.qp_state;
	attr->cur_qp_state = a.qp_state;
	attr->path_mtu = a.path_mtu;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = le32_to_cpu(a.qkey);
	attr->rq_psn = le32_to_cpu(a.rq_psn);
	attr->sq_psn = le32_to_cpu(a.sq_psn);
	attr->dest_qp_num = le32_to_cpu(a.dest_qp_num);
	attr->qp_access_flags = le32_to_cpu(a.qp_access_flags);
	attr->pkey_index = le16_to_cpu(a.pkey_index);
	attr->port_num = a.port_num;
	attr->max_rd_atomic = a.max_rd_atomic;
	attr->max_dest_rd_atomic = a.max_dest_rd_atomic;
	attr->min_rnr_timer = a.min_rnr_timer;
	attr->timeout = a.timeout;
	attr->retry_cnt = a.retry_cnt;
	attr->rnr_retry = a.rnr_retry;
	attr->cap.max_send_wr = 1u << qp->sq.log;
	attr->cap.max_send_sge = qp->sq.max_sge;
	attr->cap.max_inline_data = qp->max_inline;
	if (!qp->srq) {
		attr->cap.max_recv_wr = 1u << qp->rq.log;
		attr->cap.max_recv_sge = qp->rq.max_sge;
	}
	if (rnic_qp_connected(qp)) {
		struct rdma_ah_attr *ah = &attr->ah_attr;

		ah->type = RDMA_AH_ATTR_TYPE_ROCE;
		rdma_ah_set_port_num(ah, 1);
		rdma_ah_set_grh(ah, NULL, le32_to_cpu(a.av.flow_label),
				a.av.sgid_index, a.av.hop_limit,
				a.av.traffic_class);
		rdma_ah_set_dgid_raw(ah, a.av.dgid);
		memcpy(ah->roce.dmac, a.av.dmac, ETH_ALEN);
	}

	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* post_send / post_recv                                                  */
/* ---------------------------------------------------------------------- */

static int rnic_wr_opcode(enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_SEND:
		return RNIC_WR_SEND;
	case IB_WR_SEND_WITH_IMM:
		return RNIC_WR_SEND_IMM;
	case IB_WR_SEND_WITH_INV:
		return RNIC_WR_SEND_INV;
	case IB_WR_RDMA_WRITE:
		return RNIC_WR_RDMA_WRITE;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return RNIC_WR_RDMA_WRITE_IMM;
	case IB_WR_RDMA_READ:
		return RNIC_WR_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return RNIC_WR_ATOMIC_CMP_SWP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return RNIC_WR_ATOMIC_FETCH_ADD;
	case IB_WR_LOCAL_INV:
		return RNIC_WR_LOCAL_INV;
	case IB_WR_REG_MR:
		return RNIC_WR_REG_MR;
#if RNIC_IB_PLACEMENT
	case IB_WR_FLUSH:
		return RNIC_WR_FLUSH;
	case IB_WR_ATOMIC_WRITE:
		return RNIC_WR_ATOMIC_WRITE;
#endif
	default:
		return -EINVAL;
	}
}

/* Inline data: the SGE addresses are kernel virtual addresses. */
static int rnic_copy_inline(struct rnic_qp *qp, struct rnic_sq_wqe *wqe,
			    const struct ib_send_wr *wr)
{
	u8 *dst = (u8 *)(wqe + 1);
	u32 len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		u32 n = wr->sg_list[i].length;

		if (len + n > qp->max_inline)
			return -EINVAL;
		memcpy(dst + len, (void *)(uintptr_t)wr->sg_list[i].addr, n);
		len += n;
	}
	wqe->inline_len = cpu_to_le32(len);
	wqe->flags |= RNIC_WQE_INLINE;
	return 0;
}

static bool rnic_wr_is_placement(int op)
{
	return op == RNIC_WR_FLUSH || op == RNIC_WR_ATOMIC_WRITE;
}

/*
 * FLUSH and ATOMIC WRITE (rnic-kernel.h): a struct ib_rdma_wr; the SGE
 * list carries the ATOMIC WRITE's 8 bytes (one inline SGE of 8 bytes) or
 * the FLUSH's range (none: the whole region). Neither puts an SGE into
 * the WQE, and neither is inline for the device.
 */
static int rnic_build_placement(struct rnic_qp *qp, struct rnic_sq_wqe *wqe,
				const struct ib_send_wr *wr)
{
	u64 caps = to_rdev(qp->ibqp.device)->caps.caps;
	const struct ib_rdma_wr *rwr = rdma_wr(wr);

	if (wqe->opcode == RNIC_WR_ATOMIC_WRITE) {
		if (!(caps & RNIC_CAP_ATOMIC_WRITE))
			return -EOPNOTSUPP;
		if (!(wr->send_flags & IB_SEND_INLINE) || wr->num_sge != 1 ||
		    wr->sg_list[0].length != sizeof(wqe->atomic_write.data))
			return -EINVAL;
		wqe->atomic_write.remote_addr = cpu_to_le64(rwr->remote_addr);
		wqe->atomic_write.rkey = cpu_to_le32(rwr->rkey);
		memcpy(wqe->atomic_write.data,
		       (void *)(uintptr_t)wr->sg_list[0].addr,
		       sizeof(wqe->atomic_write.data));
		return 0;
	}
	if (!(caps & RNIC_CAP_FLUSH_GLOBAL))
		return -EOPNOTSUPP;
	if ((wr->send_flags & IB_SEND_INLINE) || wr->num_sge > 1)
		return -EINVAL;
	wqe->flush.remote_addr = cpu_to_le64(rwr->remote_addr);
	wqe->flush.rkey = cpu_to_le32(rwr->rkey);
	/* whether the region allows it is the responder's to say */
	wqe->flush.type = (wr->send_flags & RNIC_SEND_FLUSH_PERSISTENT) ?
			  RNIC_FLUSH_PERSISTENT : RNIC_FLUSH_GLOBAL;
	if (wr->num_sge) {
		wqe->flush.level = RNIC_FLUSH_RANGE;
		wqe->flush.length = cpu_to_le32(wr->sg_list[0].length);
	} else {
		wqe->flush.level = RNIC_FLUSH_MR;
	}
	return 0;
}

/*
 * What a QP type carries: UD a SEND (with immediate); UC also a WRITE
 * (with immediate) and the local operations; RC everything. The device
 * checks the same and completes anything else with a QP operation error.
 */
static bool rnic_qp_op_ok(const struct rnic_qp *qp, int op)
{
	switch (qp->type) {
	case RNIC_QPT_RC:
		return true;
	case RNIC_QPT_UC:
		return op == RNIC_WR_SEND || op == RNIC_WR_SEND_IMM ||
		       op == RNIC_WR_RDMA_WRITE || op == RNIC_WR_RDMA_WRITE_IMM ||
		       op == RNIC_WR_LOCAL_INV || op == RNIC_WR_REG_MR;
	default:
		return op == RNIC_WR_SEND || op == RNIC_WR_SEND_IMM;
	}
}

/*
 * REG_MR of a mapped STag (IB_MR_TYPE_SG_GAPS): the list form (repeat 1)
 * of the segments map_mr_sg wrote into the MR's table, which the WQE's
 * one SGE names (through the PD's DMA MR); no page list.
 */
static int rnic_build_reg_mapped(struct rnic_qp *qp, struct rnic_sq_wqe *wqe,
				 struct rnic_mr *mr)
{
	struct rnic_sge *sge = (struct rnic_sge *)(wqe + 1);

	if (!mr->npages || qp->sq.max_sge < 1)
		return -EINVAL;
	wqe->imm_or_inv = cpu_to_le32(1);
	wqe->num_sge = 1;
	sge->addr = cpu_to_le64(mr->pbl.dma);
	sge->length = cpu_to_le32(mr->npages * sizeof(struct rnic_map_seg));
	sge->lkey = cpu_to_le32(mr->ibmr.pd->local_dma_lkey);
	return 0;
}

static int rnic_build_send_wqe(struct rnic_qp *qp, struct rnic_sq_wqe *wqe,
			       const struct ib_send_wr *wr, u32 idx)
{
	int op = rnic_wr_opcode(wr->opcode);
	int ret;

	if (op < 0)
		return op;
	if (!rnic_qp_op_ok(qp, op))
		return -EINVAL;
	if (wr->num_sge > qp->sq.max_sge && !rnic_wr_is_placement(op))
		return -EINVAL;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = cpu_to_le64(idx);
	wqe->opcode = op;
	if ((wr->send_flags & IB_SEND_SIGNALED) || qp->sig_all)
		wqe->flags |= RNIC_WQE_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		wqe->flags |= RNIC_WQE_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		wqe->flags |= RNIC_WQE_FENCE;
	if (rnic_wr_is_placement(op))
		return rnic_build_placement(qp, wqe, wr);

	switch (op) {
	case RNIC_WR_SEND_IMM:
	case RNIC_WR_RDMA_WRITE_IMM:
		wqe->imm_or_inv = (__force u32)wr->ex.imm_data;
		break;
	case RNIC_WR_SEND_INV:
	case RNIC_WR_LOCAL_INV:
		wqe->imm_or_inv = cpu_to_le32(wr->ex.invalidate_rkey);
		break;
	}

	switch (op) {
	case RNIC_WR_SEND:
	case RNIC_WR_SEND_IMM:
		if (!rnic_qp_connected(qp)) {
			const struct ib_ud_wr *ud = ud_wr(wr);

			wqe->ud.remote_qpn = cpu_to_le32(ud->remote_qpn);
			wqe->ud.remote_qkey = cpu_to_le32(ud->remote_qkey);
			wqe->ud.av = to_rah(ud->ah)->av;
		}
		break;
	case RNIC_WR_RDMA_WRITE:
	case RNIC_WR_RDMA_WRITE_IMM:
	case RNIC_WR_RDMA_READ:
		wqe->rdma.remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		wqe->rdma.rkey = cpu_to_le32(rdma_wr(wr)->rkey);
		break;
	case RNIC_WR_ATOMIC_CMP_SWP:
	case RNIC_WR_ATOMIC_FETCH_ADD:
		wqe->atomic.remote_addr = cpu_to_le64(atomic_wr(wr)->remote_addr);
		wqe->atomic.rkey = cpu_to_le32(atomic_wr(wr)->rkey);
		wqe->atomic.compare_add = cpu_to_le64(atomic_wr(wr)->compare_add);
		wqe->atomic.swap = cpu_to_le64(atomic_wr(wr)->swap);
		break;
	case RNIC_WR_REG_MR: {
		const struct ib_reg_wr *reg = reg_wr(wr);
		struct rnic_mr *mr = to_rmr(reg->mr);
		int access = rnic_mr_access(to_rdev(qp->ibqp.device),
					    reg->access);

		if (access < 0)
			return access;
		wqe->reg.iova = cpu_to_le64(mr->ibmr.iova);
		wqe->reg.length = cpu_to_le64(mr->ibmr.length);
		wqe->reg.stag = cpu_to_le32(reg->key);
		wqe->reg.access = cpu_to_le32(access);
		wqe->reg.npages = cpu_to_le32(mr->npages);
		if (mr->mapped) {
			ret = rnic_build_reg_mapped(qp, wqe, mr);
			if (ret)
				return ret;
		} else {
			wqe->reg.pbl_addr = cpu_to_le64(mr->pbl.dma);
			wqe->reg.page_shift = ilog2(mr->ibmr.page_size);
		}
		rnic_mr_posted_key(mr, reg->key);
		return 0;
	}
	case RNIC_WR_LOCAL_INV:
		return 0;
	}

	if (wr->send_flags & IB_SEND_INLINE)
		return rnic_copy_inline(qp, wqe, wr);
	wqe->num_sge = wr->num_sge;
	rnic_fill_sges((struct rnic_sge *)(wqe + 1), wr->sg_list, wr->num_sge);
	return 0;
}

/*
 * On a failed device nothing completes by itself: work requests posted
 * now (ib_drain_qp's marker, MADs) are flushed by poll_cq, so let the
 * consumer poll.
 */
static void rnic_failed_kick(struct rnic_dev *rdev, struct rnic_cq *cq)
{
	if (unlikely(test_bit(RNIC_FLAG_FAILED, &rdev->flags)) &&
	    cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

int rnic_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr)
{
	struct rnic_dev *rdev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_wq *sq = &qp->sq;
	u32 entries = 1u << sq->log;
	enum ib_qp_state state;
	unsigned long flags;
	u32 start;
	int ret = 0;

	spin_lock_irqsave(&sq->lock, flags);
	start = sq->prod;
	state = READ_ONCE(qp->state);
	for (; wr; wr = wr->next) {
		if (state == IB_QPS_RESET || state == IB_QPS_INIT ||
		    state == IB_QPS_RTR) {
			ret = -EINVAL;
			break;
		}
		if (sq->prod - READ_ONCE(sq->cons) >= entries) {
			ret = -ENOMEM;
			break;
		}
		ret = rnic_build_send_wqe(qp, rnic_wq_slot(sq, sq->prod), wr,
					  sq->prod);
		if (ret)
			break;
		sq->wr_id[sq->prod & (entries - 1)] = wr->wr_id;
		sq->prod++;
	}
	if (sq->prod != start)
		rnic_ring_db(rdev, RNIC_DB_SQ, qp->handle, 0, sq->prod);
	spin_unlock_irqrestore(&sq->lock, flags);
	if (sq->prod != start)
		rnic_failed_kick(rdev, qp->scq);
	if (ret)
		*bad_wr = wr;
	return ret;
}

int rnic_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr)
{
	struct rnic_dev *rdev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_wq *rq = &qp->rq;
	u32 entries = 1u << rq->log;
	unsigned long flags;
	u32 start;
	int ret = 0;

	if (qp->srq) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&rq->lock, flags);
	start = rq->prod;
	for (; wr; wr = wr->next) {
		struct rnic_rq_wqe *wqe;

		if (READ_ONCE(qp->state) == IB_QPS_RESET) {
			ret = -EINVAL;
			break;
		}
		if (rq->prod - READ_ONCE(rq->cons) >= entries) {
			ret = -ENOMEM;
			break;
		}
		if (wr->num_sge > rq->max_sge) {
			ret = -EINVAL;
			break;
		}
		wqe = rnic_wq_slot(rq, rq->prod);
		memset(wqe, 0, sizeof(*wqe));
		wqe->wr_id = cpu_to_le64(rq->prod);
		wqe->num_sge = wr->num_sge;
		rnic_fill_sges((struct rnic_sge *)(wqe + 1), wr->sg_list,
			       wr->num_sge);
		rq->wr_id[rq->prod & (entries - 1)] = wr->wr_id;
		rq->prod++;
	}
	if (rq->prod != start)
		rnic_ring_db(rdev, RNIC_DB_RQ, qp->handle, 0, rq->prod);
	spin_unlock_irqrestore(&rq->lock, flags);
	if (rq->prod != start)
		rnic_failed_kick(rdev, qp->rcq);
	if (ret)
		*bad_wr = wr;
	return ret;
}
