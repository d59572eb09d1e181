// SPDX-License-Identifier: GPL-2.0
/*
 * rnic memory regions: the DMA MR (identity map of the DMA address space),
 * user MRs (ib_umem, page list handed to REG_MR), fast-register MRs
 * (ALLOC_MR, then REG_MR work requests with the page list map_mr_sg
 * built) and mapped STags (RNIC_CAP_MAPPED: IB_MR_TYPE_SG_GAPS MRs, whose
 * REG_MR work requests name a table of segments map_mr_sg built, one per
 * scatterlist element, each a range of the PD's DMA MR; and the user
 * space's rnicdv_create_mkey, an ALLOC_MR of kind MAPPED only).
 *
 * Page lists (built by rnic_dma.c): the device copies a REG_MR page list
 * while executing the command, so the driver frees it afterwards; a
 * fast-reg page list is read when the work request executes and lives as
 * long as the MR.
 */
#include <linux/random.h>

#include "rnic.h"

/* A different key per registration, so stale STags do not match. */
static u8 rnic_next_key(struct rnic_dev *rdev)
{
	return (u8)atomic_inc_return(&rdev->mr_key);
}

/* The fields every REG_MR/ALLOC_MR command has (the rest: its caller). */
static void rnic_mr_cmd_init(struct rnic_admin_cmd *cmd, struct rnic_pd *pd,
			     u8 opcode, u64 iova, u64 length, u64 pbl_addr)
{
	memset(cmd, 0, sizeof(*cmd));
	cmd->opcode = opcode;
	cmd->uctx = cpu_to_le32(pd->uctx);
	cmd->mr.iova = cpu_to_le64(iova);
	cmd->mr.length = cpu_to_le64(length);
	cmd->mr.pbl_addr = cpu_to_le64(pbl_addr);
	cmd->mr.pd = cpu_to_le32(pd->handle);
}

/* Run a prepared REG_MR/ALLOC_MR with 'access' and take the STag. */
static int rnic_mr_cmd_exec(struct rnic_dev *rdev, struct rnic_mr *mr,
			    struct rnic_pd *pd, struct rnic_admin_cmd *cmd,
			    int access)
{
	struct rnic_admin_cqe cqe;
	int dev_access = rnic_mr_access(rdev, access);
	u32 stag;
	int ret;

	if (dev_access < 0)
		return dev_access;
	cmd->mr.access = cpu_to_le32(dev_access);
	ret = rnic_cmd_exec(rdev, cmd, NULL, 0, NULL, 0, &cqe);
	if (ret)
		return ret;
	stag = le32_to_cpu(cqe.result0);
	/* the core sets it once we return; rnic_dbg_mr() wants it now */
	mr->ibmr.device = &rdev->ibdev;
	mr->ibmr.lkey = stag;
	mr->ibmr.rkey = stag;
	mr->ctx = pd->ctx;
	mr->uctx = pd->uctx;
	mr->dev_key = stag & 0xff;
	return 0;
}

/* A region of the window (RNIC_MR_KIND_SCM): rnic_dm.c. */
int rnic_reg_scm_cmd(struct rnic_dev *rdev, struct rnic_mr *mr,
		     struct rnic_pd *pd, u64 iova, u64 length, u64 window_off,
		     int access, u32 sems, u8 sem)
{
	struct rnic_admin_cmd cmd;

	rnic_mr_cmd_init(&cmd, pd, RNIC_CMD_REG_MR, iova, length, window_off);
	cmd.mr.kind = RNIC_MR_KIND_SCM;
	cmd.mr.sems = cpu_to_le32(sems);
	cmd.mr.key = sem << RNIC_SCM_KEY_SEM_SHIFT |
		     (rnic_next_key(rdev) & RNIC_SCM_KEY_TAG_MASK);
	return rnic_mr_cmd_exec(rdev, mr, pd, &cmd, access);
}

static int rnic_reg_mr_cmd(struct rnic_dev *rdev, struct rnic_mr *mr,
			   struct rnic_pd *pd, u8 opcode, u64 iova, u64 length,
			   u64 pbl_addr, u32 npages, u8 page_shift, u8 levels,
			   int access)
{
	struct rnic_admin_cmd cmd;

	rnic_mr_cmd_init(&cmd, pd, opcode, iova, length, pbl_addr);
	cmd.mr.npages = cpu_to_le32(npages);
	cmd.mr.page_shift = page_shift;
	cmd.mr.levels = levels;
	cmd.mr.key = rnic_next_key(rdev);
	cmd.mr.kind = RNIC_MR_KIND_MEM;
	return rnic_mr_cmd_exec(rdev, mr, pd, &cmd, access);
}

struct ib_mr *rnic_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct rnic_dev *rdev = to_rdev(ibpd->device);
	struct rnic_mr *mr;
	u64 length = rdev->caps.max_mr_size;
	u8 shift = RNIC_PAGE_SHIFT_MAX;
	int ret;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	/* iova == DMA address: a contiguous region starting at address 0 */
	while (shift > RNIC_PAGE_SHIFT_MIN && length < (1ull << shift))
		shift--;
	ret = rnic_reg_mr_cmd(rdev, mr, to_rpd(ibpd), RNIC_CMD_REG_MR, 0, length,
			      0, DIV_ROUND_UP_ULL(length, 1ull << shift), shift,
			      0, access);
	if (ret) {
		kfree(mr);
		return ERR_PTR(ret);
	}
	rnic_dbg_mr(mr, "DMA MR, %llu bytes, access 0x%x\n", length, access);
	return &mr->ibmr;
}

/*
 * A user MR over the memory window (a DAX mapping, rnic_pmem.c): the
 * window range as a region of kind SCM at the MR's iova, its key's
 * semantic chosen as for a DM MR's (rnic_scm_key_sem()).
 */
static int rnic_reg_window_mr(struct rnic_dev *rdev, struct rnic_mr *mr,
			      struct rnic_pd *pd, u64 iova, u64 length,
			      u64 window_off, int access)
{
	u32 sems;
	u8 sem;
	int ret;

	ret = rnic_scm_key_sem(rdev, access, &sems, &sem);
	if (ret)
		return ret;
	ret = rnic_reg_scm_cmd(rdev, mr, pd, iova, length, window_off,
			       access, sems, sem);
	if (!ret)
		rnic_dbg_mr(mr, "user MR 0x%llx+%llu on window %#llx, semantic %u\n",
			    iova, length, window_off, sem);
	return ret;
}

/*
 * A mapped STag (RNIC_MR_KIND_MAPPED) with room for 'max_segs' segments,
 * invalid until a REG_MR work request registers it; a random key (the
 * key of every later registration is the consumer's).
 */
static int rnic_alloc_mapped_cmd(struct rnic_dev *rdev, struct rnic_mr *mr,
				 struct rnic_pd *pd, u32 max_segs)
{
	struct rnic_admin_cmd cmd;
	int ret;

	rnic_mr_cmd_init(&cmd, pd, RNIC_CMD_ALLOC_MR, 0, 0, 0);
	cmd.mr.npages = cpu_to_le32(max_segs);
	cmd.mr.kind = RNIC_MR_KIND_MAPPED;
	cmd.mr.key = get_random_u8();
	ret = rnic_mr_cmd_exec(rdev, mr, pd, &cmd, 0);
	if (ret)
		return ret;
	mr->mapped = true;
	mr->max_pages = max_segs;
	return 0;
}

/*
 * ibv_reg_mr()'s udata (struct rnic_reg_mr): none from a provider before
 * ABI 1.6 (flags 0); a longer one from a newer provider only with its
 * extra bytes zero.
 */
static int rnic_reg_mr_udata(struct ib_udata *udata, struct rnic_reg_mr *ureq)
{
	memset(ureq, 0, sizeof(*ureq));
	if (!udata || !udata->inlen)
		return 0;
	if (udata->inlen > sizeof(*ureq) &&
	    !ib_is_udata_cleared(udata, sizeof(*ureq),
				 udata->inlen - sizeof(*ureq)))
		return -EOPNOTSUPP;
	if (ib_copy_from_udata(ureq, udata, min(udata->inlen, sizeof(*ureq))))
		return -EFAULT;
	if (ureq->flags & ~RNIC_UREG_MR_MAPPED)
		return -EOPNOTSUPP;
	return 0;
}

/*
 * rnicdv_create_mkey (RNIC_UREG_MR_MAPPED): a mapped STag of the user
 * context, no memory pinned; its REG_MR work requests come from the
 * context's QPs, the key it has then is unknown here (DEREG_MR of any key).
 */
static struct ib_mr *rnic_alloc_user_mapped(struct ib_pd *ibpd, u32 max_segs)
{
	struct rnic_dev *rdev = to_rdev(ibpd->device);
	struct rnic_mr *mr;
	int ret;

	if (!rnic_has_mapped(rdev))
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_segs || max_segs > rdev->caps.max_map_segs)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	ret = rnic_alloc_mapped_cmd(rdev, mr, to_rpd(ibpd), max_segs);
	if (ret) {
		kfree(mr);
		return ERR_PTR(ret);
	}
	rnic_dbg_mr(mr, "user mapped STag, up to %u segments\n", max_segs);
	return &mr->ibmr;
}

struct ib_mr *rnic_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			       u64 virt_addr, int access,
			       struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibpd->device);
	struct rnic_reg_mr ureq;
	struct rnic_pbl pbl;
	struct rnic_mr *mr;
	unsigned long pgsz;
	u64 window_off;
	u32 npages;
	int ret;

	ret = rnic_reg_mr_udata(udata, &ureq);
	if (ret)
		return ERR_PTR(ret);
	if (ureq.flags & RNIC_UREG_MR_MAPPED)
		return rnic_alloc_user_mapped(ibpd, ureq.max_segs);
	/*
	 * FLUSH placement types: the device refuses what it cannot give
	 * (persistence on guest RAM: NOT_SUPPORTED, -EOPNOTSUPP), as does
	 * rnic_mr_access() for a device without them.
	 */
	if (access & ~(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
		       IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC |
		       IB_ACCESS_MW_BIND | RNIC_IB_ACCESS_FLUSH_GLOBAL |
		       RNIC_IB_ACCESS_FLUSH_PERSISTENT |
		       IB_ACCESS_RELAXED_ORDERING | IB_ACCESS_OPTIONAL))
		return ERR_PTR(-EOPNOTSUPP);
	if (length > rdev->caps.max_mr_size)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		ret = PTR_ERR(mr->umem);
		goto err_free;
	}
	mr->access = access;
	ret = rnic_pmem_umem_offset(rdev, mr->umem, &window_off);
	if (ret != -ENOENT) {
		if (ret)
			goto err_umem;
		ret = rnic_reg_window_mr(rdev, mr, to_rpd(ibpd), virt_addr,
					 length, window_off, access);
		if (ret)
			goto err_umem;
		return &mr->ibmr;
	}
	pgsz = ib_umem_find_best_pgsz(mr->umem, rdev->caps.page_size_cap,
				      virt_addr);
	if (!pgsz) {
		ret = -EINVAL;
		goto err_umem;
	}
	npages = ib_umem_num_dma_blocks(mr->umem, pgsz);
	ret = rnic_pbl_build(rdev, &pbl, mr->umem, pgsz, npages);
	if (ret)
		goto err_umem;
	ret = rnic_reg_mr_cmd(rdev, mr, to_rpd(ibpd), RNIC_CMD_REG_MR,
			      virt_addr, length,
			      pbl.dir.dma,
			      npages, ilog2(pgsz), pbl.levels, access);
	/* after a timeout the device may still read the list: keep it */
	if (ret != -ETIMEDOUT)
		rnic_pbl_free(rdev, &pbl);
	if (ret)
		goto err_umem;
	rnic_dbg_mr(mr, "user MR 0x%llx+%llu, %u pages of %lu, level %u\n",
		    virt_addr, length, npages, pgsz, pbl.levels);
	return &mr->ibmr;

err_umem:
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(ret);
}

/*
 * IB_MR_TYPE_MEM_REG: a fast-register MR and its page list;
 * IB_MR_TYPE_SG_GAPS: a mapped STag of up to 'max_num_sg' segments and its
 * segment table. map_mr_sg fills either, REG_MR work requests name it.
 */
struct ib_mr *rnic_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			    u32 max_num_sg)
{
	struct rnic_dev *rdev = to_rdev(ibpd->device);
	bool mapped = type == IB_MR_TYPE_SG_GAPS;
	struct rnic_mr *mr;
	int ret;

	if (mapped ? !rnic_has_mapped(rdev) :
	    type != IB_MR_TYPE_MEM_REG || !(rdev->caps.caps & RNIC_CAP_FAST_REG))
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > (mapped ? rdev->caps.max_map_segs :
					 rdev->caps.max_fast_reg_pages))
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->max_pages = max_num_sg;
	ret = rnic_dma_buf_alloc(rdev, &mr->pbl, (size_t)max_num_sg *
				 (mapped ? sizeof(struct rnic_map_seg) : 8));
	if (ret)
		goto err_free;
	if (mapped)
		ret = rnic_alloc_mapped_cmd(rdev, mr, to_rpd(ibpd), max_num_sg);
	else
		ret = rnic_reg_mr_cmd(rdev, mr, to_rpd(ibpd), RNIC_CMD_ALLOC_MR,
				      0, 0, 0, max_num_sg, 0, 0, 0);
	if (ret)
		goto err_pbl;
	rnic_dbg_mr(mr, "%s MR, up to %u %s\n", mapped ? "SG_GAPS" : "fast-reg",
		    max_num_sg, mapped ? "segments" : "pages");
	return &mr->ibmr;

err_pbl:
	rnic_dma_buf_free(rdev, &mr->pbl);
err_free:
	kfree(mr);
	return ERR_PTR(ret);
}

static int rnic_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct rnic_mr *mr = to_rmr(ibmr);

	if (mr->npages >= mr->max_pages)
		return -ENOMEM;
	((__le64 *)mr->pbl.va)[mr->npages++] = cpu_to_le64(addr);
	return 0;
}

/*
 * A mapped STag's segment table from any scatterlist: each element one
 * segment of the PD's DMA MR (its iova is the DMA address), the first from
 * *sg_offset on. As ib_sg_to_pages(): the number of elements mapped (fewer
 * when the table is full), mr->iova and mr->length what they cover,
 * *sg_offset 0 after.
 */
static int rnic_map_segs(struct rnic_mr *mr, struct scatterlist *sgl,
			 int sg_nents, unsigned int *sg_offset_p)
{
	struct rnic_map_seg *seg = mr->pbl.va;
	u32 lkey = mr->ibmr.pd->local_dma_lkey;
	unsigned int offset = sg_offset_p ? *sg_offset_p : 0;
	struct scatterlist *sg;
	u64 length = 0;
	int i;

	if (unlikely(sg_nents <= 0 || offset > sg_dma_len(sgl)))
		return -EINVAL;
	mr->npages = 0;
	mr->ibmr.iova = sg_dma_address(sgl) + offset;
	for_each_sg(sgl, sg, sg_nents, i) {
		u32 len = sg_dma_len(sg) - offset;

		if (len) {
			if (mr->npages == mr->max_pages)
				break;
			seg[mr->npages].addr =
				cpu_to_le64(sg_dma_address(sg) + offset);
			seg[mr->npages].length = cpu_to_le32(len);
			seg[mr->npages].lkey = cpu_to_le32(lkey);
			seg[mr->npages].skip = 0;
			seg[mr->npages].rsvd = 0;
			mr->npages++;
			length += len;
		}
		offset = 0;
	}
	mr->ibmr.length = length;
	if (sg_offset_p)
		*sg_offset_p = 0;
	return i;
}

int rnic_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset)
{
	struct rnic_mr *mr = to_rmr(ibmr);

	if (mr->mapped)
		return rnic_map_segs(mr, sg, sg_nents, sg_offset);
	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, rnic_set_page);
}

/* A REG_MR work request gives a fast-reg MR a new key (rnic_qp.c). */
/*
 * ibv_rereg_mr in place (RNIC_CMD_REREG_MR): the same STag with a new
 * translation (a new umem and page list, the old umem released once the
 * device has switched), PD or rights; NULL: ib_uverbs keeps the MR object.
 * The device refuses regions of the memory window and MRs with windows
 * bound (-EBUSY); whatever it refuses leaves the MR as it was.
 */
struct ib_mr *rnic_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				 u64 length, u64 virt_addr, int access,
				 struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibmr->device);
	struct rnic_mr *mr = to_rmr(ibmr);
	struct rnic_pd *pd = to_rpd(flags & IB_MR_REREG_PD ? ibpd : ibmr->pd);
	int new_access = flags & IB_MR_REREG_ACCESS ? access : mr->access;
	struct rnic_admin_cmd cmd;
	struct ib_umem *umem = NULL;
	struct rnic_pbl pbl = {};
	unsigned long pgsz;
	u64 window_off;
	int dev_access;
	u32 npages;
	int ret;

	if (!(rdev->caps.caps & RNIC_CAP_REREG_MR) || !mr->umem ||
	    (flags & ~IB_MR_REREG_SUPPORTED))
		return ERR_PTR(-EOPNOTSUPP);
	dev_access = rnic_mr_access(rdev, new_access);
	if (dev_access < 0)
		return ERR_PTR(dev_access);
	rnic_mr_cmd_init(&cmd, pd, RNIC_CMD_REREG_MR, virt_addr, length, 0);
	cmd.uctx = cpu_to_le32(mr->uctx);
	cmd.mr.kind = RNIC_MR_KIND_MEM;
	cmd.mr.access = cpu_to_le32(dev_access);
	cmd.mr.stag = cpu_to_le32(ibmr->lkey);
	cmd.mr.net_ctx = cpu_to_le32(mr->ctx ? mr->ctx->handle :
				     RNIC_PD_MULTI_NET);
	cmd.mr.rereg = (flags & IB_MR_REREG_TRANS ? RNIC_REREG_TRANS : 0) |
		       (flags & IB_MR_REREG_PD ? RNIC_REREG_PD : 0) |
		       (flags & IB_MR_REREG_ACCESS ? RNIC_REREG_ACCESS : 0);
	if (flags & IB_MR_REREG_TRANS) {
		if (length > rdev->caps.max_mr_size)
			return ERR_PTR(-EINVAL);
		umem = ib_umem_get(ibmr->device, start, length, new_access);
		if (IS_ERR(umem))
			return ERR_CAST(umem);
		/* a range of the memory window: register it anew instead */
		ret = rnic_pmem_umem_offset(rdev, umem, &window_off);
		if (ret != -ENOENT) {
			ret = ret ? ret : -EOPNOTSUPP;
			goto err_umem;
		}
		pgsz = ib_umem_find_best_pgsz(umem, rdev->caps.page_size_cap,
					      virt_addr);
		if (!pgsz) {
			ret = -EINVAL;
			goto err_umem;
		}
		npages = ib_umem_num_dma_blocks(umem, pgsz);
		ret = rnic_pbl_build(rdev, &pbl, umem, pgsz, npages);
		if (ret)
			goto err_umem;
		cmd.mr.pbl_addr = cpu_to_le64(pbl.dir.dma);
		cmd.mr.npages = cpu_to_le32(npages);
		cmd.mr.page_shift = ilog2(pgsz);
		cmd.mr.levels = pbl.levels;
	}
	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, NULL);
	/* after a timeout the device may still read the list: keep it */
	if (umem && ret != -ETIMEDOUT)
		rnic_pbl_free(rdev, &pbl);
	if (ret)
		goto err_umem;
	if (umem) {
		ib_umem_release(mr->umem);
		mr->umem = umem;
	}
	mr->access = new_access;
	rnic_dbg_mr(mr, "re-registered (flags 0x%x), access 0x%x\n", flags,
		    new_access);
	return NULL;

err_umem:
	if (umem)
		ib_umem_release(umem);
	return ERR_PTR(ret);
}

void rnic_mr_posted_key(struct rnic_mr *mr, u32 stag)
{
	mr->prev_key = mr->dev_key;
	mr->dev_key = stag & 0xff;
}

/* DEREG_MR with flags (enum rnic_dereg_flags). */
static int rnic_dereg_cmd(struct rnic_dev *rdev, struct rnic_mr *mr,
			  u32 stag, u32 net, u32 flags)
{
	struct rnic_admin_cmd cmd = {
		.opcode = RNIC_CMD_DEREG_MR,
		.uctx = cpu_to_le32(mr->uctx),
	};

	cmd.destroy.handle = cpu_to_le32(stag);
	cmd.destroy.net_ctx = cpu_to_le32(net);
	cmd.destroy.flags = cpu_to_le32(flags);
	return rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, NULL);
}

/*
 * Memory windows: the device binds them (BIND_MW work requests, which
 * only user space posts: the kernel's verbs have none) and invalidates
 * them; the driver allocates and frees the entry.
 */
int rnic_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibmw->device);
	struct rnic_pd *pd = to_rpd(ibmw->pd);
	struct rnic_mw *mw = to_rmw(ibmw);
	struct rnic_admin_cmd cmd = {
		.opcode = RNIC_CMD_ALLOC_MW,
		.uctx = cpu_to_le32(pd->uctx),
	};
	struct rnic_admin_cqe cqe;
	int ret;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	cmd.mw.pd = cpu_to_le32(pd->handle);
	cmd.mw.type = ibmw->type == IB_MW_TYPE_1 ? RNIC_MW_TYPE_1 :
						   RNIC_MW_TYPE_2;
	cmd.mw.key = rnic_next_key(rdev);
	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, &cqe);
	if (ret)
		return ret;
	ibmw->rkey = le32_to_cpu(cqe.result0);
	mw->ctx = pd->ctx;
	mw->uctx = pd->uctx;
	return 0;
}

int rnic_dealloc_mw(struct ib_mw *ibmw)
{
	struct rnic_dev *rdev = to_rdev(ibmw->device);
	struct rnic_mw *mw = to_rmw(ibmw);
	struct rnic_admin_cmd cmd = {
		.opcode = RNIC_CMD_DEREG_MR,
		.uctx = cpu_to_le32(mw->uctx),
	};
	int ret;

	/* binds in user space changed the key: any key of the window's index */
	cmd.destroy.handle = cpu_to_le32(ibmw->rkey);
	cmd.destroy.net_ctx = cpu_to_le32(mw->ctx ? mw->ctx->handle :
					  RNIC_PD_MULTI_NET);
	cmd.destroy.flags = cpu_to_le32(RNIC_DEREG_ANY_KEY);
	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, NULL);
	return ret == -EIO ? 0 : ret;
}

int rnic_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibmr->device);
	struct rnic_mr *mr = to_rmr(ibmr);
	u32 index = ibmr->lkey & ~0xffu;
	/* an MR of a multi-network PD is deregistered in all its networks */
	u32 net = mr->ctx ? mr->ctx->handle : RNIC_PD_MULTI_NET;
	int ret;

	if (mr->no_entry)
		goto free;
	if (mr->max_pages && (rdev->caps.caps & RNIC_CAP_DEREG_ANY_KEY)) {
		/* whatever key the last REG_MR work request left */
		ret = rnic_dereg_cmd(rdev, mr, index | mr->dev_key, net,
				     RNIC_DEREG_ANY_KEY);
	} else {
		ret = rnic_dereg_cmd(rdev, mr, index | mr->dev_key, net, 0);
		if (ret == -ENOENT && mr->max_pages)
			/* the last REG_MR work request never executed */
			ret = rnic_dereg_cmd(rdev, mr, index | mr->prev_key,
					     net, 0);
	}
	if (ret && ret != -EIO)
		return ret;
free:
	ib_umem_release(mr->umem);
	rnic_dma_buf_free(rdev, &mr->pbl);
	kfree(mr);
	return 0;
}
