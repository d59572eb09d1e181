// SPDX-License-Identifier: GPL-2.0
/*
 * rnic device memory: the memory window (BAR4, RNIC_CAP_SCM) through the
 * standard device-memory verbs, ibv_alloc_dm() / ibv_reg_dm_mr().
 *
 * The kernel never maps the window. At probe it reads its size
 * (RNIC_REG_SCM_SIZE) and puts BAR4's bus range in a gen_pool of pages;
 * alloc_dm takes a range from it and hands user space an mmap entry of
 * exactly that range (rdma_user_mmap_entry), which owns it: the range goes
 * back to the pool when the DM is freed *and* the last mapping of it is
 * gone (rnic_mmap_free, rnic_dma.c), so a process that still maps it never
 * sees another allocation's bytes through it. reg_dm_mr registers a region of
 * kind SCM (docs/spec.md §3.5): zero-based, the allocation's window offset
 * plus the MR's offset, every storage semantic the window supports
 * allowed, the one in the STag's key chosen so that a peer that knows
 * nothing of semantics gets what the registration asked for:
 *
 *   IB_ACCESS_FLUSH_PERSISTENT in the access  -> DURABLE (every WRITE is
 *                                                persisted before its ACK)
 *   otherwise                                 -> PLAIN
 *
 * (module parameter dm_sem overrides it). RNIC_SCM_STAG(rkey, sem) names
 * the same region with the other semantics.
 *
 * An allocation is not zeroed: the window is persistent memory, its bytes
 * outlive the allocations (and the guest) by design; who may open the
 * uverbs device may read what earlier users left in the window.
 *
 * Kernel ULPs: alloc_dm is a uverbs-only verb (it takes a user context);
 * nothing is exported for kernel users.
 */
#include <linux/module.h>
#define UVERBS_MODULE_NAME rnic_ib
#include <rdma/uverbs_named_ioctl.h>

#include "rnic.h"

static int dm_sem = -1;
module_param(dm_sem, int, 0644);
MODULE_PARM_DESC(dm_sem,
		 "Storage semantic in the key of STags over the window (ibv_reg_dm_mr(), or ibv_reg_mr() of a window mapping): -1 (default) DURABLE with IBV_ACCESS_FLUSH_PERSISTENT, else PLAIN; 0..5 that one (enum rnic_scm_sem)");

static bool window_pmem;
module_param(window_pmem, bool, 0444);
MODULE_PARM_DESC(window_pmem,
		 "Offer the memory window as an nvdimm region (/dev/pmemN; device-DAX with ndctl) instead of device memory (ibv_alloc_dm)");

/* The semantics a region of this device's window may allow. */
static u32 rnic_dm_sems(struct rnic_dev *rdev)
{
	u32 sems = GENMASK(RNIC_SCM_SEM_COUNT - 1, 0);

	/* DURABLE needs a window that persists (the device refuses it) */
	if (!(rdev->caps.caps & RNIC_CAP_FLUSH_PERSISTENT))
		sems &= ~BIT(RNIC_SCM_SEM_DURABLE);
	return sems;
}

/*
 * The semantics an STag over the window allows (*sems) and the one its key
 * carries (*sem): DURABLE when the registration asks for persistence, else
 * PLAIN, unless dm_sem says otherwise. -EOPNOTSUPP: DURABLE on a volatile
 * window.
 */
int rnic_scm_key_sem(struct rnic_dev *rdev, int access, u32 *sems, u8 *sem)
{
	*sems = rnic_dm_sems(rdev);
	if (dm_sem >= 0)
		*sem = dm_sem;
	else if (access & RNIC_IB_ACCESS_FLUSH_PERSISTENT)
		*sem = RNIC_SCM_SEM_DURABLE;
	else
		*sem = RNIC_SCM_SEM_PLAIN;
	if (*sem >= RNIC_SCM_SEM_COUNT)
		return -EINVAL;
	if (!(*sems & BIT(*sem)))
		return -EOPNOTSUPP;
	return 0;
}

int rnic_dm_init(struct rnic_dev *rdev)
{
	struct pci_dev *pdev = rdev->pdev;
	u64 size;
	int ret;

	if (!(rdev->caps.caps & RNIC_CAP_SCM))
		return 0;
	size = rnic_reg_read64(rdev, RNIC_REG_SCM_SIZE_LO);
	if (size < PAGE_SIZE || !is_power_of_2(size) ||
	    !(pci_resource_flags(pdev, RNIC_BAR_SCM) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, RNIC_BAR_SCM) < size) {
		dev_warn(&pdev->dev,
			 "memory window of %llu bytes, BAR%d of %llu: no device memory\n",
			 size, RNIC_BAR_SCM,
			 (u64)pci_resource_len(pdev, RNIC_BAR_SCM));
		return 0;
	}
	rdev->scm_start = pci_resource_start(pdev, RNIC_BAR_SCM);
	rdev->scm_size = size;
	if (window_pmem) {
		/* without the region the RDMA device still works */
		ret = rnic_pmem_init(rdev);
		if (ret)
			dev_warn(&pdev->dev,
				 "window_pmem: no nvdimm region (%d): the window is not used\n",
				 ret);
		return 0;
	}
	ret = pci_request_region(pdev, RNIC_BAR_SCM, RNIC_DRV_NAME);
	if (ret)
		return ret;
	/* pages; gen_pool_alloc() returns 0 for failure: bus addresses, never 0 */
	rdev->dm_pool = gen_pool_create(PAGE_SHIFT, dev_to_node(&pdev->dev));
	if (!rdev->dm_pool) {
		ret = -ENOMEM;
		goto err_region;
	}
	ret = gen_pool_add(rdev->dm_pool, rdev->scm_start, size,
			   dev_to_node(&pdev->dev));
	if (ret)
		goto err_pool;
	dev_info(&pdev->dev, "memory window: %llu KiB, %s, device memory\n",
		 size >> 10, (rdev->caps.caps & RNIC_CAP_FLUSH_PERSISTENT) ?
		 "persistent" : "volatile");
	return 0;

err_pool:
	gen_pool_destroy(rdev->dm_pool);
	rdev->dm_pool = NULL;
err_region:
	pci_release_region(pdev, RNIC_BAR_SCM);
	return ret;
}

/*
 * After ib_unregister_device(): every user context is gone, with its mmap
 * entries, so the pool is whole again. If not, leak it rather than let
 * gen_pool_destroy() BUG on the outstanding ranges.
 */
void rnic_dm_fini(struct rnic_dev *rdev)
{
	rnic_pmem_fini(rdev);
	if (!rdev->dm_pool)
		return;
	if (WARN_ON(gen_pool_avail(rdev->dm_pool) != gen_pool_size(rdev->dm_pool)))
		dev_err(&rdev->pdev->dev,
			"device memory still allocated at removal: pool leaked\n");
	else
		gen_pool_destroy(rdev->dm_pool);
	rdev->dm_pool = NULL;
	pci_release_region(rdev->pdev, RNIC_BAR_SCM);
}

static struct ib_dm *rnic_alloc_dm(struct ib_device *ibdev,
				   struct ib_ucontext *ibuc,
				   struct ib_dm_alloc_attr *attr,
				   struct uverbs_attr_bundle *attrs)
{
	struct rnic_dev *rdev = to_rdev(ibdev);
	struct genpool_data_align align = { .align = PAGE_SIZE };
	struct rnic_alloc_dm_resp resp = {};
	struct rnic_dm *dm;
	unsigned long addr;
	u64 size, key;
	int ret;

	/* ib_dm.length is 32 bits; the alignment is a log2 */
	if (!attr->length || attr->length > U32_MAX ||
	    attr->length > rdev->scm_size ||
	    attr->alignment > ilog2(rdev->scm_size))
		return ERR_PTR(-EINVAL);
	if (attr->alignment > PAGE_SHIFT)
		align.align = 1UL << attr->alignment;
	size = PAGE_ALIGN(attr->length);
	dm = kzalloc(sizeof(*dm), GFP_KERNEL);
	if (!dm)
		return ERR_PTR(-ENOMEM);
	addr = gen_pool_alloc_algo(rdev->dm_pool, size, gen_pool_first_fit_align,
				   &align);
	if (!addr) {
		ret = -ENOMEM;
		goto err_free;
	}
	dm->mmap = rnic_mmap_dm_insert(to_ruc(ibuc), addr, size, &key);
	if (IS_ERR(dm->mmap)) {
		gen_pool_free(rdev->dm_pool, addr, size);
		ret = PTR_ERR(dm->mmap);
		goto err_free;
	}
	dm->offset = addr - rdev->scm_start;
	dm->size = size;

	resp.mmap_key = key;
	resp.length = size;
	ret = uverbs_copy_to(attrs, RNIC_ATTR_ALLOC_DM_RESP, &resp,
			     sizeof(resp));
	if (ret)
		goto err_entry;
	ibdev_dbg(ibdev, "DM %llu bytes at window offset %#llx\n", size,
		  dm->offset);
	return &dm->ibdm;

err_entry:
	rdma_user_mmap_entry_remove(dm->mmap);	/* frees the range */
err_free:
	kfree(dm);
	return ERR_PTR(ret);
}

static int rnic_dealloc_dm(struct ib_dm *ibdm,
			   struct uverbs_attr_bundle *attrs)
{
	struct rnic_dm *dm = to_rdm(ibdm);

	/* the range stays taken until the last mapping goes (mmap_free) */
	rdma_user_mmap_entry_remove(dm->mmap);
	kfree(dm);
	return 0;
}

static struct ib_mr *rnic_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
				    struct ib_dm_mr_attr *attr,
				    struct uverbs_attr_bundle *attrs)
{
	struct rnic_dev *rdev = to_rdev(ibpd->device);
	struct rnic_dm *dm = to_rdm(ibdm);
	struct rnic_pd *pd = to_rpd(ibpd);
	int access = attr->access_flags;
	struct rnic_mr *mr;
	u32 sems;
	u8 sem;
	int ret;

	/* the core checked IB_ZERO_BASED and the range against ib_dm.length */
	if (access & ~(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
		       IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC |
		       IB_ACCESS_MW_BIND | RNIC_IB_ACCESS_FLUSH_GLOBAL |
		       RNIC_IB_ACCESS_FLUSH_PERSISTENT | IB_ZERO_BASED))
		return ERR_PTR(-EOPNOTSUPP);
	if (attr->offset > dm->size || attr->length > dm->size - attr->offset)
		return ERR_PTR(-EINVAL);
	ret = rnic_scm_key_sem(rdev, access, &sems, &sem);
	if (ret)
		return ERR_PTR(ret);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	if (!attr->length) {
		/*
		 * An empty region reaches no byte: the device has no such
		 * entry (REG_MR needs 1 byte). Its keys are STag 0, which
		 * never names an entry (STags 0..255 are invalid); zero-length
		 * accesses need no key.
		 */
		mr->no_entry = true;
		mr->uctx = pd->uctx;
		mr->ctx = pd->ctx;
		return &mr->ibmr;
	}
	ret = rnic_reg_scm_cmd(rdev, mr, pd, 0, attr->length,
			       dm->offset + attr->offset, access, sems, sem);
	if (ret) {
		kfree(mr);
		return ERR_PTR(ret);
	}
	rnic_dbg_mr(mr, "DM MR, window %#llx+%llu, access 0x%x, semantic %u\n",
		    dm->offset + attr->offset, attr->length, access, sem);
	return &mr->ibmr;
}

/* DM_ALLOC's response: a driver attribute (the method has no udata). */
ADD_UVERBS_ATTRIBUTES_SIMPLE(
	rnic_dm_attrs, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC,
	UVERBS_ATTR_PTR_OUT(RNIC_ATTR_ALLOC_DM_RESP,
			    UVERBS_ATTR_STRUCT(struct rnic_alloc_dm_resp,
					       length),
			    UA_MANDATORY));

static const struct uapi_definition rnic_dm_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &rnic_dm_attrs),
	{},
};

static const struct ib_device_ops rnic_dev_dm_ops = {
	.alloc_dm = rnic_alloc_dm,
	.dealloc_dm = rnic_dealloc_dm,
	.reg_dm_mr = rnic_reg_dm_mr,
};

/* Before ib_register_device(): the DM verbs when there is a window. */
void rnic_dm_set_ops(struct rnic_dev *rdev)
{
	/* UVERBS_ID_DRIVER_NS (an enum only from 6.2 on) */
	BUILD_BUG_ON(RNIC_ATTR_ALLOC_DM_RESP != 1UL << UVERBS_ID_NS_SHIFT);
	if (!rdev->dm_pool)
		return;
	ib_set_device_ops(&rdev->ibdev, &rnic_dev_dm_ops);
	rdev->ibdev.driver_def = rnic_dm_defs;
}
