// SPDX-License-Identifier: GPL-2.0
/*
 * rnic shared receive queues. The device takes SRQ WQEs in ring order but
 * their completions arrive in any order (several QPs share the ring), so a
 * kernel SRQ marks completed slots and advances its consumer over the
 * completed prefix: a slot is reused only after its own completion.
 */
#include "rnic.h"

static void *rnic_srq_slot(struct rnic_srq *srq, u32 idx)
{
	return srq->wq.ring.va +
	       ((size_t)(idx & ((1u << srq->wq.log) - 1)) << srq->wq.shift);
}

/* Completion of the WQE at free-running index 'index' (poll_cq context). */
void rnic_srq_complete(struct rnic_srq *srq, u32 index, u64 *wr_id)
{
	struct rnic_wq *wq = &srq->wq;
	u32 mask = (1u << wq->log) - 1;
	unsigned long flags;

	if (!wq->wr_id)
		return;
	spin_lock_irqsave(&wq->lock, flags);
	*wr_id = wq->wr_id[index & mask];
	set_bit(index & mask, srq->done);
	while (wq->cons != wq->prod && test_bit(wq->cons & mask, srq->done)) {
		clear_bit(wq->cons & mask, srq->done);
		wq->cons++;
	}
	spin_unlock_irqrestore(&wq->lock, flags);
}

int rnic_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		    struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibsrq->device);
	struct rnic_srq *srq = to_rsrq(ibsrq);
	struct rnic_pd *pd = to_rpd(ibsrq->pd);
	struct ib_srq_attr *attr = &init->attr;
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_CREATE_SRQ };
	struct rnic_create_srq_resp resp = {};
	struct rnic_admin_cqe cqe;
	u32 log, shift;
	int ret;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (attr->max_wr > rdev->caps.max_srq_wr ||
	    attr->max_sge > rdev->caps.max_sge)
		return -EINVAL;
	log = ilog2(roundup_pow_of_two(max_t(u32, attr->max_wr, 1)));
	shift = max_t(u32, RNIC_RQ_WQE_SHIFT_MIN,
		      order_base_2(sizeof(struct rnic_rq_wqe) +
				   max_t(u32, attr->max_sge, 1) *
				   sizeof(struct rnic_sge)));
	if (shift > RNIC_WQE_SHIFT_MAX || attr->srq_limit >= (1u << log))
		return -EINVAL;
	srq->uctx = rnic_uctx_of(udata);
	ret = rnic_wq_alloc(rdev, &srq->wq, log, shift, !udata);
	if (ret)
		return ret;
	srq->wq.max_sge = min_t(u32, rdev->caps.max_sge,
				((1u << shift) - sizeof(struct rnic_rq_wqe)) /
				sizeof(struct rnic_sge));
	if (!udata) {
		srq->done = bitmap_zalloc(1u << log, GFP_KERNEL);
		if (!srq->done) {
			ret = -ENOMEM;
			goto err_wq;
		}
	}

	cmd.uctx = cpu_to_le32(srq->uctx);
	cmd.srq.ring_addr = cpu_to_le64(srq->wq.ring.dma);
	cmd.srq.log_size = log;
	cmd.srq.wqe_shift = shift;
	cmd.srq.pd = cpu_to_le32(pd->handle);
	cmd.srq.limit = cpu_to_le32(attr->srq_limit);
	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, &cqe);
	if (ret)
		goto err_done;
	srq->handle = le32_to_cpu(cqe.result0);
	srq->limit = attr->srq_limit;
	ret = xa_insert_irq(&rdev->srqs, srq->handle, srq, GFP_KERNEL);
	if (ret)
		goto err_destroy;
	if (udata) {
		struct rnic_dma_buf ring = srq->wq.ring;

		srq->mmap = rnic_mmap_ring_insert(rnic_udata_ucontext(udata),
						  &ring, &resp.ring_key);
		if (IS_ERR(srq->mmap)) {
			ret = PTR_ERR(srq->mmap);
			srq->mmap = NULL;
			goto err_xa;
		}
		resp.srq_handle = srq->handle;
		resp.entries = 1u << log;
		resp.wqe_shift = shift;
		resp.max_sge = srq->wq.max_sge;
		resp.ring_size = ring.size;
		ret = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (ret)
			goto err_xa;
	}
	attr->max_wr = 1u << log;
	attr->max_sge = srq->wq.max_sge;
	return 0;

err_xa:
	xa_erase_irq(&rdev->srqs, srq->handle);
err_destroy:
	rnic_cmd_simple(rdev, RNIC_CMD_DESTROY_SRQ, srq->uctx, srq->handle, 0);
err_done:
	bitmap_free(srq->done);
err_wq:
	rnic_wq_free(rdev, &srq->wq, &srq->mmap);
	return ret;
}

int rnic_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibsrq->device);
	struct rnic_srq *srq = to_rsrq(ibsrq);
	int ret;

	ret = rnic_cmd_simple(rdev, RNIC_CMD_DESTROY_SRQ, srq->uctx,
			      srq->handle, 0);
	if (ret && ret != -EIO)
		return ret;
	xa_erase_irq(&rdev->srqs, srq->handle);
	rnic_eqs_sync(rdev);
	bitmap_free(srq->done);
	rnic_wq_free(rdev, &srq->wq, &srq->mmap);
	return 0;
}

/*
 * IB_SRQ_MAX_WR of a user SRQ: a new ring, mapped for the provider and
 * named to it (at the address of its request) before the device moves the
 * WQEs not yet taken there. Kernel SRQs are not resized (no ULP asks; the
 * posts would have to stop around the command): EOPNOTSUPP.
 */
static int rnic_srq_resize(struct rnic_dev *rdev, struct rnic_srq *srq,
			   u32 max_wr, u32 limit, struct ib_udata *udata)
{
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_MODIFY_SRQ };
	struct rnic_modify_srq_resp resp = {};
	struct rdma_user_mmap_entry *mmap;
	struct rnic_modify_srq ucmd;
	struct rnic_dma_buf ring;
	u32 log;
	int ret;

	if (!(rdev->caps.caps & RNIC_CAP_SRQ_RESIZE) || !udata)
		return -EOPNOTSUPP;
	if (!max_wr || max_wr > rdev->caps.max_srq_wr)
		return -EINVAL;
	log = ilog2(roundup_pow_of_two(max_wr));
	if (limit >= (1u << log))
		return -EINVAL;
	ret = ib_copy_from_udata(&ucmd, udata, min(udata->inlen, sizeof(ucmd)));
	if (ret)
		return ret;
	if (udata->inlen < sizeof(ucmd) || !ucmd.resp_addr)
		return -EINVAL;
	ret = rnic_dma_buf_alloc(rdev, &ring, (size_t)1 << (log + srq->wq.shift));
	if (ret)
		return ret;
	mmap = rnic_mmap_ring_insert(rnic_udata_ucontext(udata), &ring,
				     &resp.ring_key);
	if (IS_ERR(mmap)) {
		rnic_dma_buf_free(rdev, &ring);
		return PTR_ERR(mmap);
	}
	resp.ring_size = ring.size;
	resp.entries = 1u << log;
	if (copy_to_user(u64_to_user_ptr(ucmd.resp_addr), &resp,
			 sizeof(resp))) {
		ret = -EFAULT;
		goto err;
	}
	cmd.uctx = cpu_to_le32(srq->uctx);
	cmd.srq.srq = cpu_to_le32(srq->handle);
	cmd.srq.ring_addr = cpu_to_le64(ring.dma);
	cmd.srq.log_size = log;
	cmd.srq.limit = cpu_to_le32(limit);
	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, NULL);
	if (ret)
		goto err;
	rnic_ring_free(rdev, &srq->wq.ring, &srq->mmap);
	srq->wq.ring = ring;
	srq->wq.log = log;
	srq->mmap = mmap;
	srq->limit = limit;
	return 0;

err:
	rnic_ring_free(rdev, &ring, &mmap);
	return ret;
}

int rnic_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibsrq->device);
	struct rnic_srq *srq = to_rsrq(ibsrq);
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_MODIFY_SRQ };
	u32 limit = mask & IB_SRQ_LIMIT ? attr->srq_limit : srq->limit;
	int ret;

	if (mask & IB_SRQ_MAX_WR)
		return rnic_srq_resize(rdev, srq, attr->max_wr, limit, udata);
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit >= (1u << srq->wq.log))
		return -EINVAL;
	cmd.uctx = cpu_to_le32(srq->uctx);
	cmd.srq.srq = cpu_to_le32(srq->handle);
	cmd.srq.pd = cpu_to_le32(to_rpd(ibsrq->pd)->handle);
	cmd.srq.limit = cpu_to_le32(attr->srq_limit);
	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, NULL);
	if (!ret)
		srq->limit = attr->srq_limit;
	return ret;
}

int rnic_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct rnic_srq *srq = to_rsrq(ibsrq);

	attr->max_wr = 1u << srq->wq.log;
	attr->max_sge = srq->wq.max_sge;
	attr->srq_limit = srq->limit;
	return 0;
}

int rnic_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	struct rnic_dev *rdev = to_rdev(ibsrq->device);
	struct rnic_srq *srq = to_rsrq(ibsrq);
	struct rnic_wq *wq = &srq->wq;
	u32 entries = 1u << wq->log;
	unsigned long flags;
	u32 start;
	int ret = 0;

	spin_lock_irqsave(&wq->lock, flags);
	start = wq->prod;
	for (; wr; wr = wr->next) {
		struct rnic_rq_wqe *wqe;

		if (wq->prod - wq->cons >= entries) {
			ret = -ENOMEM;
			break;
		}
		if (wr->num_sge > wq->max_sge) {
			ret = -EINVAL;
			break;
		}
		wqe = rnic_srq_slot(srq, wq->prod);
		memset(wqe, 0, sizeof(*wqe));
		wqe->wr_id = cpu_to_le64(wq->prod);
		wqe->num_sge = wr->num_sge;
		rnic_fill_sges((struct rnic_sge *)(wqe + 1), wr->sg_list,
			       wr->num_sge);
		wq->wr_id[wq->prod & (entries - 1)] = wr->wr_id;
		wq->prod++;
	}
	if (wq->prod != start)
		rnic_ring_db(rdev, RNIC_DB_SRQ, srq->handle, 0, wq->prod);
	spin_unlock_irqrestore(&wq->lock, flags);
	if (ret)
		*bad_wr = wr;
	return ret;
}
