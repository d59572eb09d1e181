// SPDX-License-Identifier: GPL-2.0
/*
 * rnic admin queue: a ring of 64-byte commands and a ring of 16-byte
 * completions in DMA memory (include/rnic/rnic-abi.h, docs/spec.md).
 *
 * Up to 'entries' commands are in flight; each owns the ring slot it was
 * written to (tail & mask), a completion and a DMA buffer for results
 * (QUERY_*) or arguments (MODIFY_QP) until its waiter has read them; a new
 * command waits until the slot at the tail is free. The device executes commands in order
 * and echoes cmd_id = slot | sequence << RNIC_AQ_LOG in the completion;
 * completions are consumed by the vector 0 interrupt (and by the waiter
 * itself when an interrupt is late). A waiter that times out abandons its
 * slot: the slot (and its buffer, which the device may still write) is
 * recycled only when the late completion arrives.
 *
 * Admin status -> errno:
 *   OK 0, BAD_OPCODE/NOT_SUPPORTED -EOPNOTSUPP, BAD_PARAM/BAD_STATE -EINVAL,
 *   NO_RESOURCES -ENOMEM, BAD_HANDLE -ENOENT, BUSY -EBUSY, DMA_ERROR -EFAULT,
 *   PERMISSION -EPERM, EXISTS -EEXIST; unknown -EIO.
 * A timeout is -ETIMEDOUT; a device in the FATAL state (or a driver that
 * gave up on it) fails every command with -EIO.
 */
#include <linux/delay.h>
#include <linux/moduleparam.h>

#include "rnic/rnic-abi-names.h"
#include "rnic.h"
#include "rnic-test.h"

static unsigned int admin_timeout_ms = 10000;
module_param(admin_timeout_ms, uint, 0644);
MODULE_PARM_DESC(admin_timeout_ms,
		 "Admin command timeout in ms (default 10000; TCG is slow)");

int rnic_status_to_errno(u8 status)
{
	switch (status) {
	case RNIC_ST_OK:
		return 0;
	case RNIC_ST_BAD_OPCODE:
	case RNIC_ST_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case RNIC_ST_BAD_PARAM:
	case RNIC_ST_BAD_STATE:
		return -EINVAL;
	case RNIC_ST_NO_RESOURCES:
		return -ENOMEM;
	case RNIC_ST_BAD_HANDLE:
		return -ENOENT;
	case RNIC_ST_BUSY:
		return -EBUSY;
	case RNIC_ST_DMA_ERROR:
		return -EFAULT;
	case RNIC_ST_PERMISSION:
		return -EPERM;
	case RNIC_ST_EXISTS:
		return -EEXIST;
	default:
		return -EIO;
	}
}

static struct rnic_admin_cmd *rnic_aq_cmd_slot(struct rnic_aq *aq, u32 idx)
{
	return (struct rnic_admin_cmd *)aq->cmds.va + (idx & (aq->entries - 1));
}

static bool rnic_aq_tail_busy(struct rnic_aq *aq)
{
	unsigned long flags;
	bool busy;

	spin_lock_irqsave(&aq->lock, flags);
	busy = !aq->dead && aq->slot[aq->tail & (aq->entries - 1)].in_use;
	spin_unlock_irqrestore(&aq->lock, flags);
	return busy;
}

static void *rnic_aq_buf(struct rnic_aq *aq, u32 slot)
{
	return aq->bufs.va + slot * RNIC_AQ_BUF_SIZE;
}

static dma_addr_t rnic_aq_buf_dma(struct rnic_aq *aq, u32 slot)
{
	return aq->bufs.dma + slot * RNIC_AQ_BUF_SIZE;
}

/*
 * Consume the completions the device has written. Called with aq->lock
 * held, from the interrupt and from a waiter whose interrupt is late.
 */
static void rnic_aq_reap(struct rnic_dev *rdev)
{
	struct rnic_aq *aq = &rdev->aq;
	struct rnic_admin_cqe *ring = aq->cqes.va;
	u32 log = ilog2(aq->entries);
	bool consumed = false;

	for (;;) {
		struct rnic_admin_cqe *c = &ring[aq->cq_head & (aq->entries - 1)];
		u8 want = ((aq->cq_head >> log) & 1) ^ 1;
		struct rnic_aq_slot *s;
		u16 cmd_id;

		if ((READ_ONCE(c->phase) & 1) != want)
			break;
		dma_rmb();	/* the body after the phase */
		cmd_id = le16_to_cpu(c->cmd_id);
		s = &aq->slot[cmd_id & (aq->entries - 1)];
		aq->cq_head++;
		consumed = true;
		if (!s->busy || s->cmd_id != cmd_id) {
			dev_err_ratelimited(&rdev->pdev->dev,
					    "admin completion for unknown command id 0x%x\n",
					    cmd_id);
			continue;
		}
		s->cqe = *c;
		s->busy = false;
		if (s->abandoned) {
			s->abandoned = false;
			s->in_use = false;
			wake_up(&aq->slot_wait);
		} else {
			complete(&s->done);
		}
	}
	if (consumed)
		rnic_reg_write(rdev, RNIC_REG_ACQ_HEAD, aq->cq_head);
}

irqreturn_t rnic_aq_irq(int irq, void *data)
{
	struct rnic_dev *rdev = data;
	unsigned long flags;

	spin_lock_irqsave(&rdev->aq.lock, flags);
	rnic_aq_reap(rdev);
	spin_unlock_irqrestore(&rdev->aq.lock, flags);
	return IRQ_HANDLED;
}

/* Fail every current and future command (fatal device, removal). */
void rnic_aq_kill(struct rnic_dev *rdev)
{
	struct rnic_aq *aq = &rdev->aq;
	unsigned long flags;
	u32 i;

	spin_lock_irqsave(&aq->lock, flags);
	aq->dead = true;
	for (i = 0; i < aq->entries; i++)
		if (aq->slot[i].busy && !aq->slot[i].abandoned)
			complete(&aq->slot[i].done);
	spin_unlock_irqrestore(&aq->lock, flags);
	wake_up_all(&aq->slot_wait);
}

/* After a timeout: is the device still there and running? */
static bool rnic_aq_check_fatal(struct rnic_dev *rdev)
{
	u32 status = rnic_reg_read(rdev, RNIC_REG_DEV_STATUS);

	if (status != ~0u && (status & (RNIC_STATUS_READY | RNIC_STATUS_FATAL)) ==
			     RNIC_STATUS_READY)
		return false;
	dev_err(&rdev->pdev->dev,
		"admin queue stopped: device status 0x%x (fatal code %u)\n",
		status, status == ~0u ? 0 : rnic_reg_read(rdev, RNIC_REG_FATAL_CODE));
	rnic_aq_kill(rdev);
	return true;
}

/*
 * Execute one admin command and wait for its completion. 'in' (for
 * MODIFY_QP) is copied to the slot's DMA buffer before the command is
 * posted; 'out' (QUERY_*) receives the buffer afterwards. 'cqe' (optional)
 * receives the completion. Sleeps; returns 0 or a negative errno.
 */
int rnic_cmd_exec(struct rnic_dev *rdev, struct rnic_admin_cmd *cmd,
		  const void *in, size_t in_len, void *out, size_t out_len,
		  struct rnic_admin_cqe *cqe)
{
	struct rnic_aq *aq = &rdev->aq;
	unsigned long timeout = msecs_to_jiffies(aq->timeout_ms);
	struct rnic_aq_slot *s;
	unsigned long flags;
	u32 slot;
	int ret;

	if (WARN_ON(in_len > RNIC_AQ_BUF_SIZE || out_len > RNIC_AQ_BUF_SIZE))
		return -EINVAL;
	spin_lock_irqsave(&aq->lock, flags);
	for (;;) {
		if (aq->dead) {
			spin_unlock_irqrestore(&aq->lock, flags);
			return -EIO;
		}
		slot = aq->tail & (aq->entries - 1);
		if (!aq->slot[slot].in_use)
			break;
		/* 'entries' commands in flight: wait for the oldest one */
		spin_unlock_irqrestore(&aq->lock, flags);
		if (!wait_event_timeout(aq->slot_wait,
					!rnic_aq_tail_busy(aq), timeout)) {
			dev_err(&rdev->pdev->dev,
				"admin %s: no free slot (device stuck?)\n",
				rnic_admin_opcode_name(cmd->opcode));
			return -ETIMEDOUT;
		}
		spin_lock_irqsave(&aq->lock, flags);
	}
	s = &aq->slot[slot];
	s->in_use = true;
	s->cmd_id = slot | (u16)(++aq->seq << RNIC_AQ_LOG);
	s->busy = true;
	s->abandoned = false;
	reinit_completion(&s->done);

	cmd->cmd_id = cpu_to_le16(s->cmd_id);
	switch (cmd->opcode) {
	case RNIC_CMD_QUERY_DEVICE:
	case RNIC_CMD_QUERY_PORT:
	case RNIC_CMD_QUERY_QP:
	case RNIC_CMD_QUERY_QP_STATS:
		cmd->query.addr = cpu_to_le64(rnic_aq_buf_dma(aq, slot));
		cmd->query.len = cpu_to_le32(RNIC_AQ_BUF_SIZE);
		break;
	case RNIC_CMD_MODIFY_QP:
		cmd->modify_qp.attr_addr = cpu_to_le64(rnic_aq_buf_dma(aq, slot));
		break;
	}
	memset(rnic_aq_buf(aq, slot), 0, RNIC_AQ_BUF_SIZE);
	if (in_len)
		memcpy(rnic_aq_buf(aq, slot), in, in_len);
	memcpy(rnic_aq_cmd_slot(aq, aq->tail), cmd, sizeof(*cmd));
	aq->tail++;
	/* writel orders the command and buffer stores before the doorbell */
	rnic_reg_write(rdev, RNIC_REG_AQ_TAIL, aq->tail);
	spin_unlock_irqrestore(&aq->lock, flags);

	if (!wait_for_completion_timeout(&s->done, timeout)) {
		/* A late interrupt? Look at the ring ourselves once. */
		spin_lock_irqsave(&aq->lock, flags);
		rnic_aq_reap(rdev);
		if (s->busy && !aq->dead) {
			s->abandoned = true;
			spin_unlock_irqrestore(&aq->lock, flags);
			if (!rnic_aq_check_fatal(rdev))
				dev_err(&rdev->pdev->dev,
					"admin %s (id 0x%x) timed out after %u ms\n",
					rnic_admin_opcode_name(cmd->opcode), s->cmd_id,
					aq->timeout_ms);
			return READ_ONCE(aq->dead) ? -EIO : -ETIMEDOUT;
		}
		spin_unlock_irqrestore(&aq->lock, flags);
	}

	spin_lock_irqsave(&aq->lock, flags);
	if (s->busy) {
		/* woken by rnic_aq_kill(): the device is gone */
		s->abandoned = true;
		spin_unlock_irqrestore(&aq->lock, flags);
		return -EIO;
	}
	spin_unlock_irqrestore(&aq->lock, flags);

	ret = rnic_status_to_errno(s->cqe.status);
	if (ret)
		dev_dbg(&rdev->pdev->dev, "admin %s failed: status %u (%d)\n",
			rnic_admin_opcode_name(cmd->opcode), s->cqe.status, ret);
	else if (out_len)
		memcpy(out, rnic_aq_buf(aq, slot), out_len);
	if (cqe)
		*cqe = s->cqe;

	spin_lock_irqsave(&aq->lock, flags);
	s->in_use = false;
	spin_unlock_irqrestore(&aq->lock, flags);
	wake_up(&aq->slot_wait);
	return ret;
}

/* Commands whose only argument is a handle (DESTROY_*, DEALLOC_PD, ...). */
int rnic_cmd_simple(struct rnic_dev *rdev, u8 opcode, u32 uctx, u32 handle,
		    u32 net_ctx)
{
	struct rnic_admin_cmd cmd = {
		.opcode = opcode,
		.uctx = cpu_to_le32(uctx),
	};

	cmd.destroy.handle = cpu_to_le32(handle);
	cmd.destroy.net_ctx = cpu_to_le32(net_ctx);
	return rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, NULL);
}

int rnic_cmd_query_device(struct rnic_dev *rdev)
{
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_QUERY_DEVICE };
	struct rnic_device_attr a;
	struct rnic_caps *c = &rdev->caps;
	int ret;

	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, &a, sizeof(a), NULL);
	if (ret)
		return ret;
	c->abi_version = le32_to_cpu(a.abi_version);
	c->vendor_id = le32_to_cpu(a.vendor_id);
	c->vendor_part_id = le32_to_cpu(a.vendor_part_id);
	c->hw_ver = le32_to_cpu(a.hw_ver);
	c->caps = le64_to_cpu(a.caps);
	c->node_guid = le64_to_cpu(a.node_guid);
	c->max_mr_size = le64_to_cpu(a.max_mr_size);
	c->page_size_cap = le64_to_cpu(a.page_size_cap);
	c->max_net_ctx = le32_to_cpu(a.max_net_ctx);
	c->max_qp = le32_to_cpu(a.max_qp);
	c->max_qp_wr = le32_to_cpu(a.max_qp_wr);
	c->max_sge = le32_to_cpu(a.max_sge);
	c->max_cq = le32_to_cpu(a.max_cq);
	c->max_cqe = le32_to_cpu(a.max_cqe);
	/* a CQ ring is one coherent DMA buffer: no more than it can hold */
	if (c->max_cqe > RNIC_MAX_RING_BYTES / sizeof(struct rnic_cqe)) {
		c->max_cqe = RNIC_MAX_RING_BYTES / sizeof(struct rnic_cqe);
		dev_info(&rdev->pdev->dev,
			 "max_cqe %u is more than one CQ ring can hold: %u\n",
			 le32_to_cpu(a.max_cqe), c->max_cqe);
	}
	c->max_mr = le32_to_cpu(a.max_mr);
	c->max_pd = le32_to_cpu(a.max_pd);
	c->max_srq = le32_to_cpu(a.max_srq);
	c->max_srq_wr = le32_to_cpu(a.max_srq_wr);
	c->max_eq = le32_to_cpu(a.max_eq);
	c->max_inline = le32_to_cpu(a.max_inline);
	c->max_qp_rd_atom = le32_to_cpu(a.max_qp_rd_atom);
	c->max_fast_reg_pages = le32_to_cpu(a.max_fast_reg_pages);
	c->max_map_segs = le32_to_cpu(a.max_map_segs);
	c->max_gid = le32_to_cpu(a.max_gid);
	c->max_uctx = le32_to_cpu(a.max_uctx);
	c->max_mw = le32_to_cpu(a.max_mw);
	c->max_mcast_grp = le32_to_cpu(a.max_mcast_grp);
	c->max_mcast_qp_attach = le32_to_cpu(a.max_mcast_qp_attach);
	return 0;
}

int rnic_cmd_query_port(struct rnic_dev *rdev, struct rnic_port_attr *attr)
{
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_QUERY_PORT };

	cmd.query.handle = cpu_to_le32(1);
	return rnic_cmd_exec(rdev, &cmd, NULL, 0, attr, sizeof(*attr), NULL);
}

/* Allocate the rings, program the registers and enable the device. */
int rnic_aq_init(struct rnic_dev *rdev)
{
	struct rnic_aq *aq = &rdev->aq;
	u32 i, status;
	int ret;

	aq->entries = 1u << RNIC_AQ_LOG;
	aq->timeout_ms = admin_timeout_ms;
	spin_lock_init(&aq->lock);
	init_waitqueue_head(&aq->slot_wait);
	aq->slot = kcalloc(aq->entries, sizeof(*aq->slot), GFP_KERNEL);
	if (!aq->slot)
		return -ENOMEM;
	for (i = 0; i < aq->entries; i++)
		init_completion(&aq->slot[i].done);

	ret = rnic_dma_buf_alloc(rdev, &aq->cmds,
				 aq->entries * sizeof(struct rnic_admin_cmd));
	if (ret)
		goto err_slots;
	ret = rnic_dma_buf_alloc(rdev, &aq->cqes,
				 aq->entries * sizeof(struct rnic_admin_cqe));
	if (ret)
		goto err_cmds;
	ret = rnic_dma_buf_alloc(rdev, &aq->bufs,
				 aq->entries * RNIC_AQ_BUF_SIZE);
	if (ret)
		goto err_cqes;

	rnic_reg_write64(rdev, RNIC_REG_AQ_BASE_LO, aq->cmds.dma);
	rnic_reg_write64(rdev, RNIC_REG_ACQ_BASE_LO, aq->cqes.dma);
	rnic_reg_write(rdev, RNIC_REG_AQ_SIZE_LOG2, RNIC_AQ_LOG);
	rnic_reg_write(rdev, RNIC_REG_DEV_CTRL,
		       RNIC_CTRL_ENABLE | RNIC_CTRL_AQ_IRQ);
	status = rnic_reg_read(rdev, RNIC_REG_DEV_STATUS);
	if (!(status & RNIC_STATUS_READY) || (status & RNIC_STATUS_FATAL)) {
		dev_err(&rdev->pdev->dev,
			"device did not become ready (status 0x%x, fatal code %u)\n",
			status, rnic_reg_read(rdev, RNIC_REG_FATAL_CODE));
		ret = -EIO;
		goto err_disable;
	}
	return 0;

err_disable:
	rnic_reg_write(rdev, RNIC_REG_DEV_CTRL, 0);
	rnic_dma_buf_free(rdev, &aq->bufs);
err_cqes:
	rnic_dma_buf_free(rdev, &aq->cqes);
err_cmds:
	rnic_dma_buf_free(rdev, &aq->cmds);
err_slots:
	kfree(aq->slot);
	aq->slot = NULL;
	return ret;
}

/*
 * Disable the device (which destroys every object it holds) and free the
 * rings. The caller has quiesced all users and freed the vector 0 IRQ.
 */
void rnic_aq_fini(struct rnic_dev *rdev)
{
	struct rnic_aq *aq = &rdev->aq;

	rnic_aq_kill(rdev);
	rnic_reg_write(rdev, RNIC_REG_DEV_CTRL, RNIC_CTRL_RESET);
	/* a register read flushes the posted reset before the DMA memory goes */
	rnic_reg_read(rdev, RNIC_REG_DEV_STATUS);
	rnic_dma_buf_free(rdev, &aq->bufs);
	rnic_dma_buf_free(rdev, &aq->cqes);
	rnic_dma_buf_free(rdev, &aq->cmds);
	kfree(aq->slot);
	aq->slot = NULL;
}

/* ---------------------------------------------------------------------- */
/* hooks for the kernel test module (test/rnic_ktest.c)                   */
/* ---------------------------------------------------------------------- */

static struct rnic_dev *rnic_test_dev(struct ib_device *ibdev)
{
	return ibdev->ops.owner == THIS_MODULE ? to_rdev(ibdev) : NULL;
}

/*
 * Execute an arbitrary, possibly malformed, admin command: the device must
 * refuse bad ones with a status and stay usable. Returns the errno of the
 * status; *status gets the raw status.
 */
int rnic_test_raw_cmd(struct ib_device *ibdev, const void *cmd, u8 *status)
{
	struct rnic_dev *rdev = rnic_test_dev(ibdev);
	struct rnic_admin_cqe cqe = { .status = 0xff };
	struct rnic_admin_cmd c;
	int ret;

	if (!rdev)
		return -ENODEV;
	memcpy(&c, cmd, sizeof(c));
	ret = rnic_cmd_exec(rdev, &c, NULL, 0, NULL, 0, &cqe);
	*status = cqe.status;
	return ret;
}
EXPORT_SYMBOL_GPL(rnic_test_raw_cmd);

/* Write any 64-bit value to any offset of the kernel's doorbell page. */
int rnic_test_raw_doorbell(struct ib_device *ibdev, u32 offset, u64 value)
{
	struct rnic_dev *rdev = rnic_test_dev(ibdev);

	if (!rdev || offset > RNIC_DB_PAGE_SIZE - 8 || (offset & 7))
		return -EINVAL;
	writeq(value, rdev->db + offset);
	return 0;
}
EXPORT_SYMBOL_GPL(rnic_test_raw_doorbell);

u32 rnic_test_pd_handle(struct ib_pd *pd)
{
	return rnic_test_dev(pd->device) ? to_rpd(pd)->handle : RNIC_HANDLE_NONE;
}
EXPORT_SYMBOL_GPL(rnic_test_pd_handle);
