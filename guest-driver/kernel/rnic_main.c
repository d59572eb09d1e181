// SPDX-License-Identifier: GPL-2.0
/*
 * rnic PCI driver: probe and remove.
 *
 * Probe is a chain of steps, each undone by the matching label of the
 * goto ladder at its end; remove runs the same ladder from the top:
 *   PCI enable + BARs -> identity check -> MSI-X vectors -> admin queue
 *   (vector 0) -> QUERY_DEVICE/QUERY_PORT -> network context of VLAN 0
 *   -> event queues -> net_device -> device-memory pool (the window)
 *   -> ib_device -> health check.
 *
 * Health: a delayed work reads DEV_STATUS every health_interval_ms. A
 * device that turned FATAL, lost READY (reset behind the driver's back) or
 * reads all ones fails every command at once, is reset (so it stops all
 * DMA), reports IB_EVENT_DEVICE_FATAL and is re-probed from a work item:
 * remove tears everything down (ib_device, net_device, memory), probe
 * starts afresh. Kernel ULPs see a device removal and a new device.
 */
#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/seq_file.h>

#include "rnic.h"

MODULE_AUTHOR("qemu-rnic project");
MODULE_DESCRIPTION("Driver for the qemu-rnic emulated RoCEv2 RDMA NIC");
MODULE_LICENSE("GPL");

static const struct pci_device_id rnic_pci_table[] = {
	{ PCI_DEVICE(RNIC_PCI_VENDOR_ID, RNIC_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, rnic_pci_table);

static unsigned int health_interval_ms = 1000;
module_param(health_interval_ms, uint, 0644);
MODULE_PARM_DESC(health_interval_ms,
		 "Interval of the device health check in ms (0: off)");
static bool recover = true;
module_param(recover, bool, 0644);
MODULE_PARM_DESC(recover, "Re-probe a device that failed (default on)");

struct rnic_recovery {
	struct work_struct work;
	struct pci_dev *pdev;
};

static void rnic_recover_work(struct work_struct *work)
{
	struct rnic_recovery *r = container_of(work, struct rnic_recovery, work);
	int ret;

	dev_info(&r->pdev->dev, "recovering the device: re-probing\n");
	ret = device_reprobe(&r->pdev->dev);
	if (ret)
		dev_err(&r->pdev->dev, "re-probe failed (%d)\n", ret);
	pci_dev_put(r->pdev);
	kfree(r);
	module_put(THIS_MODULE);
}

/*
 * The device failed (or was reset under the driver): stop using it and,
 * if enabled, re-probe it. Idempotent; any context that may sleep.
 */
void rnic_dev_fail(struct rnic_dev *rdev, const char *why)
{
	struct rnic_recovery *r;
	u32 status;

	if (test_and_set_bit(RNIC_FLAG_FAILED, &rdev->flags))
		return;
	status = rnic_reg_read(rdev, RNIC_REG_DEV_STATUS);
	dev_err(&rdev->pdev->dev,
		"device failed: %s (status 0x%x, fatal code %u)\n", why, status,
		status == ~0u ? 0 : rnic_reg_read(rdev, RNIC_REG_FATAL_CODE));
	rnic_aq_kill(rdev);
	/* a reset stops every DMA: the driver may free its rings from now on */
	rnic_reg_write(rdev, RNIC_REG_DEV_CTRL, RNIC_CTRL_RESET);
	rnic_port_event(rdev, IB_EVENT_DEVICE_FATAL);
	rnic_cqs_kick(rdev);
	rnic_netdev_link_check(rdev);
	if (!recover || !try_module_get(THIS_MODULE)) {
		dev_err(&rdev->pdev->dev,
			"not recovering: unbind and bind the driver to restart\n");
		return;
	}
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r) {
		module_put(THIS_MODULE);
		return;
	}
	INIT_WORK(&r->work, rnic_recover_work);
	r->pdev = pci_dev_get(rdev->pdev);
	schedule_work(&r->work);
}

static void rnic_health_check(struct work_struct *work)
{
	struct rnic_dev *rdev = container_of(to_delayed_work(work),
					     struct rnic_dev, health_work);
	u32 status = rnic_reg_read(rdev, RNIC_REG_DEV_STATUS);

	if (status == ~0u)
		rnic_dev_fail(rdev, "the function does not answer");
	else if (status & RNIC_STATUS_FATAL)
		rnic_dev_fail(rdev, "fatal error");
	else if (!(status & RNIC_STATUS_READY))
		rnic_dev_fail(rdev, "device reset behind the driver");
	else if (health_interval_ms)
		schedule_delayed_work(&rdev->health_work,
				      msecs_to_jiffies(health_interval_ms));
}

/* ---------------------------------------------------------------------- */
/* debugfs: /sys/kernel/debug/rnic/<PCI address>/                         */
/* ---------------------------------------------------------------------- */

static struct dentry *rnic_debugfs_root;

/* status: registers, driver state and the device's counters */
static int rnic_debugfs_status_show(struct seq_file *m, void *unused)
{
	struct rnic_dev *rdev = m->private;
	u32 i;

	seq_printf(m, "dev_status 0x%x\nfatal_code %u\nheartbeat_ms %u\n",
		   rnic_reg_read(rdev, RNIC_REG_DEV_STATUS),
		   rnic_reg_read(rdev, RNIC_REG_FATAL_CODE),
		   rnic_reg_read(rdev, RNIC_REG_HEARTBEAT));
	seq_printf(m, "failed %d\nadmin_dead %d\nvectors %d\nevent_queues %d\n",
		   test_bit(RNIC_FLAG_FAILED, &rdev->flags), READ_ONCE(rdev->aq.dead),
		   rdev->nvec, rdev->num_eqs);
	for (i = 0; i < RNIC_STAT_COUNT; i++) {
		char name[ETH_GSTRING_LEN];

		rnic_stat_name(i, name);
		seq_printf(m, "%s %llu\n", name, rnic_stat_read(rdev, i));
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rnic_debugfs_status);

/*
 * device_reset: writing 1 resets the function behind the driver's back,
 * as a hypervisor or a firmware fault would; the health check must notice
 * and recover (tests/guest/test_driver.py driver-reset-recovery).
 */
static ssize_t rnic_debugfs_reset_write(struct file *file,
					const char __user *buf, size_t count,
					loff_t *ppos)
{
	struct rnic_dev *rdev = file->private_data;
	bool yes;
	int ret;

	ret = kstrtobool_from_user(buf, count, &yes);
	if (ret)
		return ret;
	if (yes) {
		dev_warn(&rdev->pdev->dev, "debugfs: resetting the device\n");
		rnic_reg_write(rdev, RNIC_REG_DEV_CTRL, RNIC_CTRL_RESET);
	}
	return count;
}

static const struct file_operations rnic_debugfs_reset_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = rnic_debugfs_reset_write,
};

static void rnic_debugfs_init(struct rnic_dev *rdev)
{
	rdev->debugfs = debugfs_create_dir(pci_name(rdev->pdev),
					   rnic_debugfs_root);
	debugfs_create_file("status", 0444, rdev->debugfs, rdev,
			    &rnic_debugfs_status_fops);
	debugfs_create_file("device_reset", 0200, rdev->debugfs, rdev,
			    &rnic_debugfs_reset_fops);
}

/* Identity and limits from BAR0; refuse what this driver cannot drive. */
static int rnic_check_identity(struct rnic_dev *rdev)
{
	struct device *dev = &rdev->pdev->dev;
	struct rnic_caps *c = &rdev->caps;
	u32 magic, version;

	magic = rnic_reg_read(rdev, RNIC_REG_MAGIC);
	if (magic != RNIC_MAGIC) {
		dev_err(dev, "not an rnic: magic 0x%08x, expected 0x%08x\n",
			magic, RNIC_MAGIC);
		return -ENODEV;
	}
	version = rnic_reg_read(rdev, RNIC_REG_ABI_VERSION);
	if (version >> 16 != RNIC_ABI_VERSION_MAJOR) {
		dev_err(dev, "device ABI %u.%u, this driver speaks %u.x: refusing\n",
			version >> 16, version & 0xffff, RNIC_ABI_VERSION_MAJOR);
		return -ENODEV;
	}
	c->abi_version = version;
	c->caps = rnic_reg_read64(rdev, RNIC_REG_CAPS_LO);
	c->db_pages = rnic_reg_read(rdev, RNIC_REG_DB_PAGES);
	c->msix_vectors = rnic_reg_read(rdev, RNIC_REG_MSIX_VECTORS);
	c->max_mtu = rnic_reg_read(rdev, RNIC_REG_MAX_MTU);
	c->max_eq = rnic_reg_read(rdev, RNIC_REG_MAX_EQ);
	if (!c->db_pages || !c->max_eq) {
		dev_err(dev, "device reports %u doorbell pages and %u EQs\n",
			c->db_pages, c->max_eq);
		return -ENODEV;
	}
	dev_info(dev, "rnic ABI %u.%u, caps 0x%llx, %u MSI-X vectors, %u doorbell pages\n",
		 version >> 16, version & 0xffff, c->caps, c->msix_vectors,
		 c->db_pages);
	return 0;
}

static int rnic_map_bars(struct rnic_dev *rdev)
{
	struct pci_dev *pdev = rdev->pdev;

	if (pci_resource_len(pdev, RNIC_BAR_REGS) < RNIC_REGS_SIZE ||
	    pci_resource_len(pdev, RNIC_BAR_DOORBELLS) < RNIC_DB_PAGE_SIZE ||
	    !(pci_resource_flags(pdev, RNIC_BAR_REGS) & IORESOURCE_MEM) ||
	    !(pci_resource_flags(pdev, RNIC_BAR_DOORBELLS) & IORESOURCE_MEM)) {
		dev_err(&pdev->dev, "BAR%d/BAR%d missing or too small\n",
			RNIC_BAR_REGS, RNIC_BAR_DOORBELLS);
		return -ENODEV;
	}
	rdev->regs = pci_iomap(pdev, RNIC_BAR_REGS, RNIC_REGS_SIZE);
	if (!rdev->regs)
		return -ENOMEM;
	/* the kernel rings page 0 only; user pages are mapped by mmap() */
	rdev->db = pci_iomap(pdev, RNIC_BAR_DOORBELLS, RNIC_DB_PAGE_SIZE);
	if (!rdev->db) {
		pci_iounmap(pdev, rdev->regs);
		return -ENOMEM;
	}
	rdev->db_bar_start = pci_resource_start(pdev, RNIC_BAR_DOORBELLS);
	return 0;
}

static void rnic_unmap_bars(struct rnic_dev *rdev)
{
	pci_iounmap(rdev->pdev, rdev->db);
	pci_iounmap(rdev->pdev, rdev->regs);
}

/*
 * Vector 0 for the admin queue, one for the Ethernet function and one per
 * event queue: at least one EQ (async + completions), at most one per CPU.
 * Two vectors still work (the Ethernet function shares vector 0); fewer
 * cannot carry both the admin queue and events.
 */
static int rnic_alloc_vectors(struct rnic_dev *rdev)
{
	struct pci_dev *pdev = rdev->pdev;
	int want = 2 + min3((int)num_online_cpus(), RNIC_MAX_EQS,
			    (int)rdev->caps.max_eq);
	int nvec;

	want = min(want, (int)rdev->caps.msix_vectors);
	if (want < RNIC_MIN_VECTORS) {
		dev_err(&pdev->dev,
			"device offers %u MSI-X vectors, the driver needs at least %d (admin queue + one event queue)\n",
			rdev->caps.msix_vectors, RNIC_MIN_VECTORS);
		return -ENOSPC;
	}
	nvec = pci_alloc_irq_vectors(pdev, RNIC_MIN_VECTORS, want, PCI_IRQ_MSIX);
	if (nvec < 0) {
		dev_err(&pdev->dev,
			"cannot get %d..%d MSI-X vectors (%d): the driver needs MSI-X\n",
			RNIC_MIN_VECTORS, want, nvec);
		return nvec;
	}
	rdev->nvec = nvec;
	if (nvec >= 3) {
		rdev->eth_vector = 1;
		rdev->first_eq_vector = 2;
	} else {
		dev_info(&pdev->dev,
			 "only %d MSI-X vectors: Ethernet shares the admin vector\n",
			 nvec);
		rdev->eth_vector = RNIC_AQ_VECTOR;
		rdev->first_eq_vector = 1;
	}
	return 0;
}

/* Vector 0: admin completions, and the Ethernet function when shared. */
static irqreturn_t rnic_vector0_irq(int irq, void *data)
{
	struct rnic_dev *rdev = data;

	rnic_aq_irq(irq, data);
	if (rdev->eth_vector == RNIC_AQ_VECTOR && READ_ONCE(rdev->np))
		rnic_eth_irq(irq, rdev);
	return IRQ_HANDLED;
}

/* The memory BARs the driver itself claims: all but the window's. */
static int rnic_claimed_bars(struct pci_dev *pdev)
{
	return pci_select_bars(pdev, IORESOURCE_MEM) & ~BIT(RNIC_BAR_SCM);
}

static int rnic_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct rnic_dev *rdev;
	int ret;

	rdev = ib_alloc_device(rnic_dev, ibdev);
	if (!rdev)
		return -ENOMEM;
	rdev->pdev = pdev;
	pci_set_drvdata(pdev, rdev);
	xa_init_flags(&rdev->cqs, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&rdev->qps, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&rdev->srqs, XA_FLAGS_LOCK_IRQ);
	xa_init(&rdev->net_ctxs);
	mutex_init(&rdev->net_lock);
	INIT_DELAYED_WORK(&rdev->health_work, rnic_health_check);

	ret = pci_enable_device_mem(pdev);
	if (ret) {
		dev_err(&pdev->dev, "cannot enable the PCI function (%d)\n", ret);
		goto err_free;
	}
	/* BAR4, the memory window, is claimed by its owner (rnic_dm_init) */
	ret = pci_request_selected_regions(pdev, rnic_claimed_bars(pdev),
					   RNIC_DRV_NAME);
	if (ret)
		goto err_disable;
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret) {
		dev_err(&pdev->dev, "no usable DMA configuration\n");
		goto err_regions;
	}
	pci_set_master(pdev);
	ret = rnic_map_bars(rdev);
	if (ret)
		goto err_master;
	ret = rnic_check_identity(rdev);
	if (ret)
		goto err_unmap;

	/* a clean function: whatever a previous driver left is gone */
	rnic_reg_write(rdev, RNIC_REG_DEV_CTRL, RNIC_CTRL_RESET);

	ret = rnic_alloc_vectors(rdev);
	if (ret)
		goto err_unmap;
	ret = rnic_aq_init(rdev);
	if (ret)
		goto err_vectors;
	ret = request_irq(pci_irq_vector(pdev, RNIC_AQ_VECTOR), rnic_vector0_irq, 0,
			  "rnic-admin", rdev);
	if (ret)
		goto err_aq;

	ret = rnic_cmd_query_device(rdev);
	if (ret) {
		dev_err(&pdev->dev, "QUERY_DEVICE failed (%d)\n", ret);
		goto err_aq_irq;
	}
	ret = rnic_net_ctx_init(rdev);
	if (ret)
		goto err_aq_irq;
	ret = rnic_eqs_init(rdev);
	if (ret)
		goto err_net_ctx;
	ret = rnic_netdev_init(rdev);
	if (ret)
		goto err_eqs;
	ret = rnic_dm_init(rdev);
	if (ret)
		goto err_netdev;
	ret = rnic_ib_register(rdev);
	if (ret)
		goto err_dm;

	dev_info(&pdev->dev, "%s: %d MSI-X vectors, %d event queues, MAC %pM\n",
		 dev_name(&rdev->ibdev.dev), rdev->nvec, rdev->num_eqs,
		 rdev->caps.mac);
	rnic_debugfs_init(rdev);
	if (health_interval_ms)
		schedule_delayed_work(&rdev->health_work,
				      msecs_to_jiffies(health_interval_ms));
	return 0;

err_dm:
	rnic_dm_fini(rdev);
err_netdev:
	rnic_netdev_fini(rdev);
err_eqs:
	rnic_eqs_fini(rdev);
err_net_ctx:
	rnic_net_ctx_fini(rdev);
err_aq_irq:
	free_irq(pci_irq_vector(pdev, RNIC_AQ_VECTOR), rdev);
err_aq:
	rnic_aq_fini(rdev);
err_vectors:
	pci_free_irq_vectors(pdev);
err_unmap:
	rnic_unmap_bars(rdev);
err_master:
	pci_clear_master(pdev);
err_regions:
	pci_release_selected_regions(pdev, rnic_claimed_bars(pdev));
err_disable:
	pci_disable_device(pdev);
err_free:
	xa_destroy(&rdev->net_ctxs);
	ib_dealloc_device(&rdev->ibdev);
	return ret;
}

static void rnic_remove(struct pci_dev *pdev)
{
	struct rnic_dev *rdev = pci_get_drvdata(pdev);

	debugfs_remove_recursive(rdev->debugfs);
	cancel_delayed_work_sync(&rdev->health_work);
	rnic_ib_unregister(rdev);
	rnic_dm_fini(rdev);
	rnic_netdev_fini(rdev);
	rnic_eqs_fini(rdev);
	rnic_net_ctx_fini(rdev);
	free_irq(pci_irq_vector(pdev, RNIC_AQ_VECTOR), rdev);
	rnic_aq_fini(rdev);
	pci_free_irq_vectors(pdev);
	rnic_unmap_bars(rdev);
	pci_clear_master(pdev);
	pci_release_selected_regions(pdev, rnic_claimed_bars(pdev));
	pci_disable_device(pdev);
	WARN_ON(!xa_empty(&rdev->cqs) || !xa_empty(&rdev->qps) ||
		!xa_empty(&rdev->srqs));
	xa_destroy(&rdev->net_ctxs);
	ib_dealloc_device(&rdev->ibdev);
}

static struct pci_driver rnic_pci_driver = {
	.name = RNIC_DRV_NAME,
	.id_table = rnic_pci_table,
	.probe = rnic_probe,
	.remove = rnic_remove,
};

/* rnic-user-abi.h is ABI with the provider: its struct sizes are fixed. */
static void __init rnic_user_abi_check(void)
{
	BUILD_BUG_ON(sizeof(struct rnic_alloc_ucontext_resp) != 56);
	BUILD_BUG_ON(sizeof(struct rnic_alloc_pd_resp) != 8);
	BUILD_BUG_ON(sizeof(struct rnic_create_cq_resp) != 24);
	BUILD_BUG_ON(sizeof(struct rnic_create_qp_resp) != 72);
	BUILD_BUG_ON(sizeof(struct rnic_create_srq_resp) != 32);
	BUILD_BUG_ON(sizeof(struct rnic_create_ah_resp) != 32);
	BUILD_BUG_ON(sizeof(struct rnic_alloc_dm_resp) != 16);
}

static int __init rnic_init(void)
{
	int ret;

	rnic_user_abi_check();
	rnic_debugfs_root = debugfs_create_dir(RNIC_DRV_NAME, NULL);
	ret = pci_register_driver(&rnic_pci_driver);
	if (ret)
		debugfs_remove_recursive(rnic_debugfs_root);
	return ret;
}

static void __exit rnic_exit(void)
{
	pci_unregister_driver(&rnic_pci_driver);
	debugfs_remove_recursive(rnic_debugfs_root);
}

module_init(rnic_init);
module_exit(rnic_exit);
