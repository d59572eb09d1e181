// SPDX-License-Identifier: GPL-2.0
/*
 * rnic completion queues: a DMA-contiguous ring of 64-byte CQEs with an
 * owner bit. The device learns the consumer index through the CQ doorbell,
 * which poll_cq rings after consuming (the device counts the ring as full
 * against that index) and req_notify_cq rings with an arm flag.
 *
 * Work request ids: kernel WQEs carry the free-running ring index in their
 * wr_id field and the caller's wr_id stays in the queue's shadow array, so
 * a CQE also tells how far the send queue has been consumed.
 */
#include "rnic.h"

static struct rnic_cqe *rnic_cq_next(struct rnic_cq *cq)
{
	struct rnic_cqe *c = (struct rnic_cqe *)cq->ring.va +
			     (cq->cons & ((1u << cq->log) - 1));
	u8 want = ((cq->cons >> cq->log) & 1) ^ 1;

	if ((READ_ONCE(c->owner) & 1) != want)
		return NULL;
	dma_rmb();	/* the body after the owner byte */
	return c;
}

static enum ib_wc_opcode rnic_wc_opcode(u8 opcode)
{
	switch (opcode) {
	case RNIC_WC_SEND:
		return IB_WC_SEND;
	case RNIC_WC_RDMA_WRITE:
		return IB_WC_RDMA_WRITE;
	case RNIC_WC_RDMA_READ:
		return IB_WC_RDMA_READ;
	case RNIC_WC_COMP_SWAP:
		return IB_WC_COMP_SWAP;
	case RNIC_WC_FETCH_ADD:
		return IB_WC_FETCH_ADD;
	case RNIC_WC_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case RNIC_WC_REG_MR:
		return IB_WC_REG_MR;
	case RNIC_WC_BIND_MW:
		return IB_WC_BIND_MW;
#if RNIC_IB_PLACEMENT
	case RNIC_WC_FLUSH:
		return IB_WC_FLUSH;
	case RNIC_WC_ATOMIC_WRITE:
		return IB_WC_ATOMIC_WRITE;
#endif
	case RNIC_WC_RECV_RDMA_WITH_IMM:
		return IB_WC_RECV_RDMA_WITH_IMM;
	case RNIC_WC_RECV:
	default:
		return IB_WC_RECV;
	}
}

/* Translate one CQE; false if it belongs to a QP that is gone. */
static bool rnic_cqe_to_wc(struct rnic_dev *rdev, const struct rnic_cqe *c,
			   struct ib_wc *wc)
{
	u32 idx = (u32)le64_to_cpu(c->wr_id);
	struct rnic_qp *qp;
	struct rnic_wq *wq;

	qp = xa_load(&rdev->qps, le32_to_cpu(c->qp_handle));
	if (!qp)
		return false;

	memset(wc, 0, sizeof(*wc));
	wc->qp = &qp->ibqp;
	wc->status = c->status;
	wc->vendor_err = c->vendor_err;
	wc->opcode = rnic_wc_opcode(c->opcode);
	wc->byte_len = le32_to_cpu(c->byte_len);
	wc->port_num = 1;

	if (c->opcode & RNIC_WC_RECV) {
		if (qp->srq) {
			rnic_srq_complete(qp->srq, idx, &wc->wr_id);
		} else {
			wq = &qp->rq;
			wc->wr_id = wq->wr_id[idx & ((1u << wq->log) - 1)];
			WRITE_ONCE(wq->cons, idx + 1);
		}
		wc->src_qp = le32_to_cpu(c->src_qp);
		if (c->flags & RNIC_CQE_WITH_IMM) {
			wc->ex.imm_data = (__force __be32)c->imm_or_inv;
			wc->wc_flags |= IB_WC_WITH_IMM;
		} else if (c->flags & RNIC_CQE_WITH_INV) {
			wc->ex.invalidate_rkey = le32_to_cpu(c->imm_or_inv);
			wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		}
		if (c->flags & RNIC_CQE_GRH) {
			wc->wc_flags |= IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE;
			wc->network_hdr_type = (c->flags & RNIC_CQE_IPV4) ?
					       RDMA_NETWORK_IPV4 :
					       RDMA_NETWORK_IPV6;
		}
		if (c->flags & RNIC_CQE_VLAN) {
			wc->vlan_id = le16_to_cpu(c->vlan_id);
			wc->wc_flags |= IB_WC_WITH_VLAN;
		}
		if (!rnic_qp_connected(qp)) {
			memcpy(wc->smac, c->smac, ETH_ALEN);
			wc->wc_flags |= IB_WC_WITH_SMAC;
		}
	} else {
		wq = &qp->sq;
		wc->wr_id = wq->wr_id[idx & ((1u << wq->log) - 1)];
		/* in order: everything up to this WQE is done */
		WRITE_ONCE(wq->cons, idx + 1);
	}
	return true;
}

/* Tell the device how far the ring has been consumed (and maybe arm). */
static void rnic_cq_update_db(struct rnic_dev *rdev, struct rnic_cq *cq,
			      u32 flags)
{
	rnic_ring_db(rdev, RNIC_DB_CQ, cq->handle, flags, cq->cons);
	cq->db_cons = cq->cons;
}

/* Flush completions for the WQEs of one kernel queue, in software. */
static int rnic_wq_sw_flush(struct rnic_qp *qp, struct rnic_wq *wq, bool recv,
			    int num, struct ib_wc *wc)
{
	u32 mask = (1u << wq->log) - 1;
	unsigned long flags;
	int n = 0;

	spin_lock_irqsave(&wq->lock, flags);
	while (n < num && wq->cons != wq->prod) {
		memset(&wc[n], 0, sizeof(wc[n]));
		wc[n].wr_id = wq->wr_id[wq->cons & mask];
		wc[n].status = IB_WC_WR_FLUSH_ERR;
		wc[n].opcode = recv ? IB_WC_RECV : IB_WC_SEND;
		wc[n].qp = &qp->ibqp;
		wc[n].port_num = 1;
		WRITE_ONCE(wq->cons, wq->cons + 1);
		n++;
	}
	spin_unlock_irqrestore(&wq->lock, flags);
	return n;
}

/*
 * A failed device completes nothing any more, but kernel consumers (the
 * MAD layer, ib_drain_qp, ULPs tearing down) wait for their work requests:
 * complete every outstanding kernel WQE of this CQ with WR_FLUSH_ERR, as
 * the device would on a QP in the error state.
 */
static int rnic_cq_sw_flush(struct rnic_dev *rdev, struct rnic_cq *cq,
			    int num, struct ib_wc *wc)
{
	struct rnic_qp *qp;
	unsigned long index;
	int n = 0;

	xa_for_each(&rdev->qps, index, qp) {
		if (qp->uctx != RNIC_UCTX_KERNEL)
			continue;
		if (qp->scq == cq)
			n += rnic_wq_sw_flush(qp, &qp->sq, false, num - n, wc + n);
		if (!qp->srq && qp->rcq == cq && n < num)
			n += rnic_wq_sw_flush(qp, &qp->rq, true, num - n, wc + n);
		if (n == num)
			break;
	}
	return n;
}

/* Would rnic_cq_sw_flush() complete anything? */
static bool rnic_cq_sw_pending(struct rnic_dev *rdev, struct rnic_cq *cq)
{
	struct rnic_qp *qp;
	unsigned long index;

	xa_for_each(&rdev->qps, index, qp) {
		if (qp->uctx != RNIC_UCTX_KERNEL)
			continue;
		if (qp->scq == cq && READ_ONCE(qp->sq.cons) != READ_ONCE(qp->sq.prod))
			return true;
		if (!qp->srq && qp->rcq == cq &&
		    READ_ONCE(qp->rq.cons) != READ_ONCE(qp->rq.prod))
			return true;
	}
	return false;
}

int rnic_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct rnic_dev *rdev = to_rdev(ibcq->device);
	struct rnic_cq *cq = to_rcq(ibcq);
	struct rnic_cqe *c;
	unsigned long flags;
	int n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num_entries && (c = rnic_cq_next(cq))) {
		cq->cons++;
		if (rnic_cqe_to_wc(rdev, c, &wc[n]))
			n++;
	}
	if (unlikely(test_bit(RNIC_FLAG_FAILED, &rdev->flags))) {
		n += rnic_cq_sw_flush(rdev, cq, num_entries - n, wc + n);
	} else if (cq->cons != cq->db_cons) {
		rnic_cq_update_db(rdev, cq, 0);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/* The device failed: let every kernel CQ's consumer poll its flushes. */
void rnic_cqs_kick(struct rnic_dev *rdev)
{
	struct rnic_cq *cq;
	unsigned long index;

	/* destroy_cq's xa_erase_irq waits for this loop */
	xa_lock_irq(&rdev->cqs);
	xa_for_each(&rdev->cqs, index, cq)
		if (!cq->mmap && cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	xa_unlock_irq(&rdev->cqs);
}

int rnic_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct rnic_dev *rdev = to_rdev(ibcq->device);
	struct rnic_cq *cq = to_rcq(ibcq);
	unsigned long irqflags;
	u32 arm;
	int ret = 0;

	arm = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
	      RNIC_DB_ARM_SOLICITED : RNIC_DB_ARM_NEXT;
	spin_lock_irqsave(&cq->lock, irqflags);
	rnic_cq_update_db(rdev, cq, arm);
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    (rnic_cq_next(cq) || (test_bit(RNIC_FLAG_FAILED, &rdev->flags) &&
				  rnic_cq_sw_pending(rdev, cq))))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/* A completion event of EQ handler context. */
void rnic_cq_event(struct rnic_dev *rdev, u32 handle)
{
	struct rnic_cq *cq = xa_load(&rdev->cqs, handle);

	/* destroy_cq erases the CQ and then waits for the EQ handlers */
	if (cq && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

/*
 * Forget the CQEs of a destroyed QP still in a kernel CQ, so a later QP
 * with the same handle does not receive them.
 */
void rnic_cq_clean(struct rnic_cq *cq, u32 qp_handle)
{
	unsigned long flags;
	u32 i, mask;

	if (cq->mmap || !cq->ring.va)
		return;
	mask = (1u << cq->log) - 1;
	spin_lock_irqsave(&cq->lock, flags);
	for (i = cq->cons; i != cq->cons + mask + 1; i++) {
		struct rnic_cqe *c = (struct rnic_cqe *)cq->ring.va + (i & mask);

		if ((READ_ONCE(c->owner) & 1) != (((i >> cq->log) & 1) ^ 1))
			break;
		dma_rmb();
		if (le32_to_cpu(c->qp_handle) == qp_handle)
			c->qp_handle = cpu_to_le32(RNIC_HANDLE_NONE);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
}

static int rnic_cq_entries(struct rnic_dev *rdev, int cqe, u32 *log)
{
	u32 entries;

	if (cqe < 1 || cqe > rdev->caps.max_cqe)
		return -EINVAL;
	entries = roundup_pow_of_two(max_t(u32, cqe, 1u << RNIC_CQ_LOG_MIN));
	if (entries > rdev->caps.max_cqe)
		return -EINVAL;
	*log = ilog2(entries);
	return 0;
}

#if RNIC_IB_CREATE_CQ_ATTRS
int rnic_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct uverbs_attr_bundle *attrs)
{
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
#else
int rnic_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct ib_udata *udata)
{
#endif
	struct rnic_dev *rdev = to_rdev(ibcq->device);
	struct rnic_cq *cq = to_rcq(ibcq);
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_CREATE_CQ };
	struct rnic_create_cq_resp resp = {};
	struct rnic_admin_cqe cqe;
	int ret;

	/* the device stamps every CQE (RNIC_CAP_CQE_TIMESTAMP) */
	if (attr->flags & ~((rdev->caps.caps & RNIC_CAP_CQE_TIMESTAMP) ?
			    IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION : 0))
		return -EOPNOTSUPP;
	ret = rnic_cq_entries(rdev, attr->cqe, &cq->log);
	if (ret)
		return ret;
	cq->uctx = rnic_uctx_of(udata);
	spin_lock_init(&cq->lock);
	cq->eq = rnic_eq_for_vector(rdev, attr->comp_vector);
	ret = rnic_dma_buf_alloc(rdev, &cq->ring,
				 sizeof(struct rnic_cqe) << cq->log);
	if (ret)
		return ret;

	cmd.uctx = cpu_to_le32(cq->uctx);
	cmd.cq.ring_addr = cpu_to_le64(cq->ring.dma);
	cmd.cq.log_size = cq->log;
	cmd.cq.eq = cpu_to_le32(cq->eq->handle);
	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, &cqe);
	if (ret)
		goto err_ring;
	cq->handle = le32_to_cpu(cqe.result0);
	ret = xa_insert_irq(&rdev->cqs, cq->handle, cq, GFP_KERNEL);
	if (ret)
		goto err_destroy;

	if (udata) {
		struct rnic_dma_buf ring = cq->ring;

		cq->mmap = rnic_mmap_ring_insert(rnic_udata_ucontext(udata),
						 &ring, &resp.ring_key);
		if (IS_ERR(cq->mmap)) {
			ret = PTR_ERR(cq->mmap);
			cq->mmap = NULL;
			goto err_xa;
		}
		resp.cq_handle = cq->handle;
		resp.entries = 1u << cq->log;
		resp.ring_size = cq->ring.size;
		ret = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (ret)
			goto err_xa;
	}
	ibcq->cqe = 1u << cq->log;
	rnic_dbg_cq(cq, "created: %u entries, EQ %u, uctx %u\n", ibcq->cqe,
		    cq->eq->handle, cq->uctx);
	return 0;

err_xa:
	xa_erase_irq(&rdev->cqs, cq->handle);
err_destroy:
	rnic_cmd_simple(rdev, RNIC_CMD_DESTROY_CQ, cq->uctx, cq->handle, 0);
err_ring:
	rnic_ring_free(rdev, &cq->ring, &cq->mmap);
	return ret;
}

int rnic_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibcq->device);
	struct rnic_cq *cq = to_rcq(ibcq);
	int ret;

	ret = rnic_cmd_simple(rdev, RNIC_CMD_DESTROY_CQ, cq->uctx, cq->handle,
			      0);
	if (ret && ret != -EIO)		/* -EIO: the device is gone anyway */
		return ret;
	xa_erase_irq(&rdev->cqs, cq->handle);
	synchronize_irq(pci_irq_vector(rdev->pdev, cq->eq->vector));
	rnic_ring_free(rdev, &cq->ring, &cq->mmap);
	return 0;
}

int rnic_resize_cq(struct ib_cq *ibcq, int entries, struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibcq->device);
	struct rnic_cq *cq = to_rcq(ibcq);
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_RESIZE_CQ };
	struct rnic_create_cq_resp resp = {};
	struct rdma_user_mmap_entry *mmap = NULL;
	struct rnic_dma_buf ring, old;
	unsigned long flags;
	u32 log;
	int ret;

	ret = rnic_cq_entries(rdev, entries, &log);
	if (ret)
		return ret;
	ret = rnic_dma_buf_alloc(rdev, &ring, sizeof(struct rnic_cqe) << log);
	if (ret)
		return ret;
	if (udata) {
		struct rnic_dma_buf copy = ring;

		mmap = rnic_mmap_ring_insert(rnic_udata_ucontext(udata),
					     &copy, &resp.ring_key);
		if (IS_ERR(mmap)) {
			rnic_dma_buf_free(rdev, &ring);
			return PTR_ERR(mmap);
		}
	} else {
		/* the device keeps the CQEs beyond the consumer it knows */
		spin_lock_irqsave(&cq->lock, flags);
		rnic_cq_update_db(rdev, cq, 0);
		spin_unlock_irqrestore(&cq->lock, flags);
	}

	cmd.uctx = cpu_to_le32(cq->uctx);
	cmd.cq.ring_addr = cpu_to_le64(ring.dma);
	cmd.cq.log_size = log;
	cmd.cq.eq = cpu_to_le32(cq->eq->handle);
	cmd.cq.cq = cpu_to_le32(cq->handle);
	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, NULL);
	if (ret) {
		rnic_ring_free(rdev, &ring, mmap ? &mmap : NULL);
		return ret;
	}

	/* the device now writes the new ring only */
	spin_lock_irqsave(&cq->lock, flags);
	old = cq->ring;
	cq->ring = ring;
	cq->log = log;
	spin_unlock_irqrestore(&cq->lock, flags);
	rnic_ring_free(rdev, &old, cq->mmap ? &cq->mmap : NULL);
	cq->mmap = mmap;
	ibcq->cqe = 1u << log;

	if (udata) {
		resp.cq_handle = cq->handle;
		resp.entries = 1u << log;
		resp.ring_size = ring.size;
		ret = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
	}
	return ret;
}
