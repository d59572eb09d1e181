// SPDX-License-Identifier: GPL-2.0
/*
 * rnic memory shared with the device and with user space, for the object
 * files (as pvrdma_misc.c is for pvrdma): it calls nothing else of the
 * driver.
 *
 *  - DMA buffers: DMA-coherent, page-sized, the rings, page lists and
 *    admin buffers the device reads and writes.
 *  - Page lists of user MRs (include/rnic/rnic-abi.h): level 1 is one
 *    contiguous array of u64 page addresses, level 2 a directory of 4 KiB
 *    leaves of 512 entries.
 *  - Work queue rings (SQ, RQ, SRQ) and, for kernel queues, their shadow
 *    of wr_ids.
 *  - User mappings: an rdma_user_mmap_entry per thing a user context may
 *    mmap(): its doorbell page (BAR2, uncached), a queue ring (DMA memory;
 *    once handed out the entry owns it) or a device-memory range of the
 *    window (BAR4, write-combining; the entry owns the range of dm_pool).
 *    What an entry owns is freed when both its object and every mapping of
 *    it are gone (rnic_mmap_free), so a process that still maps a ring or
 *    a range never sees another object's bytes through it.
 */
#include "rnic.h"

/* ---------------------------------------------------------------------- */
/* DMA buffers                                                            */
/* ---------------------------------------------------------------------- */

int rnic_dma_buf_alloc(struct rnic_dev *rdev, struct rnic_dma_buf *buf,
		       size_t size)
{
	buf->size = PAGE_ALIGN(size);
	/* sizes come from applications: too large is -ENOMEM, not a splat */
	buf->va = dma_alloc_coherent(&rdev->pdev->dev, buf->size, &buf->dma,
				     GFP_KERNEL | __GFP_NOWARN);
	if (!buf->va) {
		buf->size = 0;
		return -ENOMEM;
	}
	return 0;
}

void rnic_dma_buf_free(struct rnic_dev *rdev, struct rnic_dma_buf *buf)
{
	if (!buf->va)
		return;
	dma_free_coherent(&rdev->pdev->dev, buf->size, buf->va, buf->dma);
	buf->va = NULL;
	buf->size = 0;
}

/* ---------------------------------------------------------------------- */
/* Page lists                                                             */
/* ---------------------------------------------------------------------- */

/* Level-1 lists up to this size are one allocation; beyond, level 2. */
#define RNIC_PBL_L1_MAX_BYTES	(64 * 1024)

void rnic_pbl_free(struct rnic_dev *rdev, struct rnic_pbl *pbl)
{
	u32 i;

	for (i = 0; i < pbl->nleaves; i++)
		rnic_dma_buf_free(rdev, &pbl->leaves[i]);
	kfree(pbl->leaves);
	rnic_dma_buf_free(rdev, &pbl->dir);
}

/* Write the umem's DMA blocks of 'pgsz' bytes into a page list. */
int rnic_pbl_build(struct rnic_dev *rdev, struct rnic_pbl *pbl,
		   struct ib_umem *umem, unsigned long pgsz, u32 npages)
{
	struct ib_block_iter biter;
	__le64 *list;
	u32 i = 0;
	int ret;

	memset(pbl, 0, sizeof(*pbl));
	if ((size_t)npages * 8 <= RNIC_PBL_L1_MAX_BYTES ||
	    !(rdev->caps.caps & RNIC_CAP_MR_LEVEL2)) {
		pbl->levels = 1;
		ret = rnic_dma_buf_alloc(rdev, &pbl->dir, (size_t)npages * 8);
		if (ret)
			return ret;
		list = pbl->dir.va;
		rdma_umem_for_each_dma_block(umem, &biter, pgsz)
			list[i++] = cpu_to_le64(rdma_block_iter_dma_address(&biter));
		return 0;
	}

	pbl->levels = 2;
	pbl->nleaves = DIV_ROUND_UP(npages, RNIC_PBL_LEAF_ENTRIES);
	pbl->leaves = kcalloc(pbl->nleaves, sizeof(*pbl->leaves), GFP_KERNEL);
	if (!pbl->leaves)
		return -ENOMEM;
	ret = rnic_dma_buf_alloc(rdev, &pbl->dir, (size_t)pbl->nleaves * 8);
	if (ret)
		goto err;
	for (i = 0; i < pbl->nleaves; i++) {
		ret = rnic_dma_buf_alloc(rdev, &pbl->leaves[i], PAGE_SIZE);
		if (ret)
			goto err;
		((__le64 *)pbl->dir.va)[i] = cpu_to_le64(pbl->leaves[i].dma);
	}
	i = 0;
	rdma_umem_for_each_dma_block(umem, &biter, pgsz) {
		list = pbl->leaves[i / RNIC_PBL_LEAF_ENTRIES].va;
		list[i % RNIC_PBL_LEAF_ENTRIES] =
			cpu_to_le64(rdma_block_iter_dma_address(&biter));
		i++;
	}
	return 0;

err:
	rnic_pbl_free(rdev, pbl);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* User mappings                                                          */
/* ---------------------------------------------------------------------- */

enum rnic_mmap_type {
	RNIC_MMAP_DB,			/* the context's doorbell page */
	RNIC_MMAP_RING,			/* a queue ring in DMA memory */
	RNIC_MMAP_DM,			/* a device-memory allocation of BAR4 */
};

struct rnic_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	enum rnic_mmap_type type;
	struct rnic_dma_buf buf;	/* RNIC_MMAP_RING: freed in mmap_free */
	phys_addr_t pfn_base;		/* RNIC_MMAP_DB, RNIC_MMAP_DM */
	unsigned long dm_addr;		/* RNIC_MMAP_DM: in dm_pool, freed */
	size_t dm_size;			/* with the entry (mmap_free) */
};

static inline struct rnic_mmap_entry *
to_rmmap(struct rdma_user_mmap_entry *entry)
{
	return container_of(entry, struct rnic_mmap_entry, rdma);
}

static struct rnic_mmap_entry *
rnic_mmap_entry_insert(struct rnic_ucontext *uc, enum rnic_mmap_type type,
		       size_t size, u64 *key)
{
	struct rnic_mmap_entry *entry;
	int ret;

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry)
		return ERR_PTR(-ENOMEM);
	entry->type = type;
	ret = rdma_user_mmap_entry_insert(&uc->ibuc, &entry->rdma, size);
	if (ret) {
		kfree(entry);
		return ERR_PTR(ret);
	}
	*key = rdma_user_mmap_get_offset(&entry->rdma);
	return entry;
}

/* The doorbell page of user context uc->uctx (BAR2 page uc->uctx). */
struct rdma_user_mmap_entry *
rnic_mmap_db_insert(struct rnic_dev *rdev, struct rnic_ucontext *uc, u64 *key)
{
	struct rnic_mmap_entry *entry;

	entry = rnic_mmap_entry_insert(uc, RNIC_MMAP_DB, PAGE_SIZE, key);
	if (IS_ERR(entry))
		return ERR_CAST(entry);
	entry->pfn_base = PHYS_PFN(rdev->db_bar_start +
				   (u64)uc->uctx * RNIC_DB_PAGE_SIZE);
	return &entry->rdma;
}

/*
 * Hand a ring to user space: the mmap entry owns it from now on and frees
 * it when both the object and every mapping are gone (rnic_mmap_free).
 */
struct rdma_user_mmap_entry *
rnic_mmap_ring_insert(struct rnic_ucontext *uc, struct rnic_dma_buf *buf,
		      u64 *key)
{
	struct rnic_mmap_entry *entry;

	entry = rnic_mmap_entry_insert(uc, RNIC_MMAP_RING, buf->size, key);
	if (IS_ERR(entry))
		return ERR_CAST(entry);
	entry->buf = *buf;
	return &entry->rdma;
}

/*
 * Hand the range [addr, addr + size) of dm_pool (bus addresses of the
 * window) to user space: the entry owns it and gives it back to the pool
 * in rnic_mmap_free.
 */
struct rdma_user_mmap_entry *
rnic_mmap_dm_insert(struct rnic_ucontext *uc, unsigned long addr, size_t size,
		    u64 *key)
{
	struct rnic_mmap_entry *entry;

	entry = rnic_mmap_entry_insert(uc, RNIC_MMAP_DM, size, key);
	if (IS_ERR(entry))
		return ERR_CAST(entry);
	entry->pfn_base = PHYS_PFN(addr);
	entry->dm_addr = addr;
	entry->dm_size = size;
	return &entry->rdma;
}

/*
 * Release a queue ring once the device no longer uses it: kernel rings are
 * freed, user rings are left to their mmap entry.
 */
void rnic_ring_free(struct rnic_dev *rdev, struct rnic_dma_buf *buf,
		    struct rdma_user_mmap_entry **mmap)
{
	if (mmap && *mmap) {
		rdma_user_mmap_entry_remove(*mmap);
		*mmap = NULL;
		buf->va = NULL;
		return;
	}
	rnic_dma_buf_free(rdev, buf);
}

int rnic_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma_entry;
	struct rnic_mmap_entry *entry;
	phys_addr_t pfn;
	pgprot_t prot;
	int ret;

	rdma_entry = rdma_user_mmap_entry_get(ibuc, vma);
	if (!rdma_entry)
		return -EINVAL;
	entry = to_rmmap(rdma_entry);
	switch (entry->type) {
	case RNIC_MMAP_DB:
		pfn = entry->pfn_base;
		prot = pgprot_noncached(vma->vm_page_prot);
		break;
	case RNIC_MMAP_RING:
		/* DMA-coherent memory of the linear map (no remapping on x86) */
		pfn = page_to_pfn(virt_to_page(entry->buf.va));
		prot = vma->vm_page_prot;
		break;
	case RNIC_MMAP_DM:
		/*
		 * The window is a prefetchable BAR of RAM: reads have no side
		 * effect and stores may be merged, so write-combining is
		 * allowed (as mlx5 maps its MEMIC). Not write-back: the
		 * device's RDMA writes into the window do not snoop the CPU's
		 * caches on real hardware, a cached load could return stale
		 * bytes; WC loads are uncached. The provider fences its
		 * stores (memcpy_to_dm) before the device may read them.
		 */
		pfn = entry->pfn_base;
		prot = pgprot_writecombine(vma->vm_page_prot);
		break;
	default:
		ret = -EINVAL;
		goto out;
	}
	ret = rdma_user_mmap_io(ibuc, vma, pfn,
				rdma_entry->npages << PAGE_SHIFT, prot,
				rdma_entry);
out:
	rdma_user_mmap_entry_put(rdma_entry);
	return ret;
}

void rnic_mmap_free(struct rdma_user_mmap_entry *rdma_entry)
{
	struct rnic_mmap_entry *entry = to_rmmap(rdma_entry);
	struct rnic_dev *rdev = to_rdev(rdma_entry->ucontext->device);

	if (entry->type == RNIC_MMAP_RING)
		rnic_dma_buf_free(rdev, &entry->buf);
	else if (entry->type == RNIC_MMAP_DM)
		/* the DM and its last mapping are gone: the range is free */
		gen_pool_free(rdev->dm_pool, entry->dm_addr, entry->dm_size);
	kfree(entry);
}

/* ---------------------------------------------------------------------- */
/* Work queue rings                                                       */
/* ---------------------------------------------------------------------- */

int rnic_wq_alloc(struct rnic_dev *rdev, struct rnic_wq *wq, u32 log,
		  u32 shift, bool kernel)
{
	int ret;

	wq->log = log;
	wq->shift = shift;
	wq->prod = 0;
	wq->cons = 0;
	spin_lock_init(&wq->lock);
	ret = rnic_dma_buf_alloc(rdev, &wq->ring, (size_t)1 << (log + shift));
	if (ret)
		return ret;
	if (kernel) {
		wq->wr_id = kvcalloc(1u << log, sizeof(u64), GFP_KERNEL);
		if (!wq->wr_id) {
			rnic_dma_buf_free(rdev, &wq->ring);
			return -ENOMEM;
		}
	}
	return 0;
}

void rnic_wq_free(struct rnic_dev *rdev, struct rnic_wq *wq,
		  struct rdma_user_mmap_entry **mmap)
{
	rnic_ring_free(rdev, &wq->ring, mmap);
	kvfree(wq->wr_id);
	wq->wr_id = NULL;
}
