// SPDX-License-Identifier: GPL-2.0
/*
 * rnic persistent memory: the memory window (BAR4) as an nvdimm region,
 * for software that takes persistent memory from /dev/pmemN or /dev/daxN.M
 * (librpma, PMDK, fio's librpma engines) rather than from ibv_alloc_dm().
 *
 * With window_pmem=1 the driver registers an nvdimm bus with one region
 * over BAR4's range, persistent if the window persists and volatile
 * otherwise, as of_pmem does for its ranges. The nvdimm core offers a raw
 * namespace of it (/dev/pmemN); ndctl turns that into device-DAX
 * (ndctl create-namespace -f -e namespace0.0 -m devdax), whose pages a
 * process maps and registers with ibv_reg_mr(). The device-memory verbs are
 * off in this mode: the window has one owner.
 *
 * A user MR over such a mapping is the range of the window it covers:
 * rnic_reg_user_mr() registers it as a region of kind SCM (docs/spec.md
 * §3.5) seen at the MR's iova, with the semantics of a DM MR's STag: what
 * the device writes through its DURABLE key or under a FLUSH(persistence)
 * is durable before the ACK leaves. Stores of the guest's CPUs into the
 * window reach the backing file like any store to shared memory; the device
 * does not see them, so they are durable when a device persist covers their
 * range: the region's flush (nvdimm_flush(): info blocks, PREFLUSH/FUA
 * bios) is SCM_PERSIST of the whole window (docs/usage.md).
 */
#include <linux/libnvdimm.h>
#include <linux/module.h>

#include "rnic.h"

#if IS_ENABLED(CONFIG_LIBNVDIMM)

/*
 * nvdimm_flush() of the region: after the kernel wrote a namespace's info
 * block, for a PREFLUSH or FUA bio of /dev/pmemN (fsync of a file system
 * on it). The whole window durable, the CPUs' stores into it included:
 * one SCM_PERSIST, one host persist. Sleeps (the admin queue), as
 * virtio_pmem's flush does.
 */
static int rnic_pmem_flush(struct nd_region *nd_region, struct bio *bio)
{
	struct rnic_dev *rdev = nd_region_provider_data(nd_region);
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_SCM_PERSIST };

	cmd.scm.offset = 0;
	cmd.scm.length = cpu_to_le64(rdev->scm_size);
	return rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, NULL);
}

int rnic_pmem_init(struct rnic_dev *rdev)
{
	struct pci_dev *pdev = rdev->pdev;
	bool persistent = rdev->caps.caps & RNIC_CAP_FLUSH_PERSISTENT;
	struct nvdimm_bus_descriptor *desc;
	struct nd_region_desc ndr_desc = {};
	struct resource res = {
		.name = "rnic memory window",
		.start = rdev->scm_start,
		.end = rdev->scm_start + rdev->scm_size - 1,
		.flags = IORESOURCE_MEM,
	};
	struct nd_region *region;

	/* memremap_pages() of a DAX namespace works in 2 MiB subsections */
	if (rdev->scm_size < SZ_16M) {
		dev_err(&pdev->dev,
			"window_pmem: a window of %llu KiB is too small (16 MiB at least)\n",
			rdev->scm_size >> 10);
		return -EINVAL;
	}
	desc = kzalloc(sizeof(*desc), GFP_KERNEL);
	if (!desc)
		return -ENOMEM;
	desc->provider_name = RNIC_DRV_NAME;
	desc->module = THIS_MODULE;
	rdev->pmem_bus = nvdimm_bus_register(&pdev->dev, desc);
	if (!rdev->pmem_bus) {
		kfree(desc);
		return -ENODEV;
	}
	rdev->pmem_desc = desc;

	/* libnvdimm copies the descriptor and the resource */
	ndr_desc.res = &res;
	ndr_desc.numa_node = dev_to_node(&pdev->dev);
	ndr_desc.target_node = ndr_desc.numa_node;
	ndr_desc.provider_data = rdev;
	set_bit(ND_REGION_PAGEMAP, &ndr_desc.flags);
	if (rdev->caps.caps & RNIC_CAP_SCM_PERSIST)
		ndr_desc.flush = rnic_pmem_flush;
	if (persistent)
		region = nvdimm_pmem_region_create(rdev->pmem_bus, &ndr_desc);
	else
		region = nvdimm_volatile_region_create(rdev->pmem_bus, &ndr_desc);
	if (!region) {
		rnic_pmem_fini(rdev);
		return -ENXIO;
	}
	dev_info(&pdev->dev, "memory window: %llu KiB, %s, nvdimm region %s\n",
		 rdev->scm_size >> 10, persistent ? "persistent" : "volatile",
		 dev_name(nd_region_dev(region)));
	return 0;
}

/* The bus goes with its region, namespaces and DAX devices. */
void rnic_pmem_fini(struct rnic_dev *rdev)
{
	if (!rdev->pmem_bus)
		return;
	nvdimm_bus_unregister(rdev->pmem_bus);
	rdev->pmem_bus = NULL;
	kfree(rdev->pmem_desc);
	rdev->pmem_desc = NULL;
}

#else /* !CONFIG_LIBNVDIMM */

int rnic_pmem_init(struct rnic_dev *rdev)
{
	dev_err(&rdev->pdev->dev,
		"window_pmem: this kernel has no nvdimm support (CONFIG_LIBNVDIMM)\n");
	return -EOPNOTSUPP;
}

void rnic_pmem_fini(struct rnic_dev *rdev)
{
}

#endif

/*
 * Where a user MR lies in the window: 0 and *window_off if every byte of
 * the umem is one run of the window, in order (a mapping of a DAX device
 * over the window's region); -ENOENT if none of it is window (guest
 * memory, the ordinary MR); -EINVAL if it mixes both or is out of order.
 * The CPU side of the scatterlist: physical addresses, not DMA addresses
 * (an IOMMU maps those).
 */
int rnic_pmem_umem_offset(struct rnic_dev *rdev, struct ib_umem *umem,
			  u64 *window_off)
{
	struct sg_table *sgt = &umem->sgt_append.sgt;
	phys_addr_t start = 0, next = 0;
	bool any = false, other = false;
	struct scatterlist *sg;
	unsigned int i;

	if (!rdev->pmem_bus)
		return -ENOENT;
	for_each_sgtable_sg(sgt, sg, i) {
		phys_addr_t pa = page_to_phys(sg_page(sg)) + sg->offset;
		bool in = pa >= rdev->scm_start &&
			  pa - rdev->scm_start < rdev->scm_size &&
			  sg->length <= rdev->scm_size - (pa - rdev->scm_start);

		if (!in) {
			other = true;
			continue;
		}
		if (!any)
			start = pa;
		else if (pa != next)
			return -EINVAL;
		any = true;
		next = pa + sg->length;
	}
	if (!any)
		return -ENOENT;
	if (other)
		return -EINVAL;
	*window_off = start - rdev->scm_start + ib_umem_offset(umem);
	return 0;
}
