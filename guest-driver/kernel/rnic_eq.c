// SPDX-License-Identifier: GPL-2.0
/*
 * rnic event queues. EQ i lives on MSI-X vector first_eq_vector + i; EQ 0
 * also takes the asynchronous events (RNIC_EQ_ASYNC). An EQ interrupts once
 * and stays disarmed until the driver rings the EQ doorbell with ARM_NEXT
 * and its consumer index, which the handler does after draining the ring
 * (the device re-fires at once if events arrived in between: no lost
 * wake-ups).
 */
#include "rnic.h"

static struct rnic_eqe *rnic_eq_next(struct rnic_eq *eq)
{
	struct rnic_eqe *e = (struct rnic_eqe *)eq->ring.va +
			     (eq->cons & ((1u << eq->log) - 1));
	u8 want = ((eq->cons >> eq->log) & 1) ^ 1;

	if ((READ_ONCE(e->owner) & 1) != want)
		return NULL;
	dma_rmb();	/* the body after the owner byte */
	return e;
}

static void rnic_qp_async_event(struct rnic_dev *rdev, u32 handle,
				enum ib_event_type type)
{
	/* destroy_qp erases the QP and then waits for the EQ handlers */
	struct rnic_qp *qp = xa_load(&rdev->qps, handle);
	struct ib_event ev;

	if (qp && qp->ibqp.event_handler) {
		ev.device = &rdev->ibdev;
		ev.element.qp = &qp->ibqp;
		ev.event = type;
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	}
}

static void rnic_cq_async_event(struct rnic_dev *rdev, u32 handle)
{
	struct rnic_cq *cq = xa_load(&rdev->cqs, handle);
	struct ib_event ev;

	if (cq && cq->ibcq.event_handler) {
		ev.device = &rdev->ibdev;
		ev.element.cq = &cq->ibcq;
		ev.event = IB_EVENT_CQ_ERR;
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
	}
	ibdev_err_ratelimited(&rdev->ibdev, "CQ %u overrun or not writable\n",
			      handle);
}

static void rnic_srq_async_event(struct rnic_dev *rdev, u32 handle)
{
	struct rnic_srq *srq = xa_load(&rdev->srqs, handle);
	struct ib_event ev;

	if (srq && srq->ibsrq.event_handler) {
		ev.device = &rdev->ibdev;
		ev.element.srq = &srq->ibsrq;
		ev.event = IB_EVENT_SRQ_LIMIT_REACHED;
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
}

static void rnic_eq_dispatch(struct rnic_dev *rdev, const struct rnic_eqe *e)
{
	u32 handle = le32_to_cpu(e->handle);

	switch (e->type) {
	case RNIC_EQE_COMPLETION:
		rnic_cq_event(rdev, handle);
		break;
	case RNIC_EQE_QP_FATAL:
		rnic_qp_async_event(rdev, handle, IB_EVENT_QP_FATAL);
		break;
	case RNIC_EQE_QP_REQ_ERR:
		rnic_qp_async_event(rdev, handle, IB_EVENT_QP_REQ_ERR);
		break;
	case RNIC_EQE_QP_ACCESS_ERR:
		rnic_qp_async_event(rdev, handle, IB_EVENT_QP_ACCESS_ERR);
		break;
	case RNIC_EQE_COMM_EST:
		rnic_qp_async_event(rdev, handle, IB_EVENT_COMM_EST);
		break;
	case RNIC_EQE_SQ_DRAINED:
		rnic_qp_async_event(rdev, handle, IB_EVENT_SQ_DRAINED);
		break;
	case RNIC_EQE_LAST_WQE_REACHED:
		rnic_qp_async_event(rdev, handle, IB_EVENT_QP_LAST_WQE_REACHED);
		break;
	case RNIC_EQE_SRQ_LIMIT:
		rnic_srq_async_event(rdev, handle);
		break;
	case RNIC_EQE_CQ_ERR:
		rnic_cq_async_event(rdev, handle);
		break;
	case RNIC_EQE_PORT_ACTIVE:
	case RNIC_EQE_PORT_ERR:
		/* the port follows the net_device's carrier: re-read the link */
		rnic_netdev_link_check(rdev);
		break;
	case RNIC_EQE_DEVICE_FATAL:
		dev_err(&rdev->pdev->dev, "device reported a fatal error\n");
		rnic_port_event(rdev, IB_EVENT_DEVICE_FATAL);
		break;
	default:
		dev_warn_ratelimited(&rdev->pdev->dev,
				     "unknown event type %u (handle %u)\n",
				     e->type, handle);
		break;
	}
}

static irqreturn_t rnic_eq_irq(int irq, void *data)
{
	struct rnic_eq *eq = data;
	struct rnic_dev *rdev = eq->rdev;
	struct rnic_eqe *e;
	u32 n = 0;

	while ((e = rnic_eq_next(eq))) {
		rnic_eq_dispatch(rdev, e);
		eq->cons++;
		/* long bursts: give the device room before the ring fills */
		if (++n % 256 == 0)
			rnic_ring_db(rdev, RNIC_DB_EQ, eq->handle, 0, eq->cons);
	}
	rnic_ring_db(rdev, RNIC_DB_EQ, eq->handle, RNIC_DB_ARM_NEXT, eq->cons);
	return IRQ_HANDLED;
}

static int rnic_eq_create(struct rnic_dev *rdev, struct rnic_eq *eq, int idx)
{
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_CREATE_EQ };
	struct rnic_admin_cqe cqe;
	int ret;

	eq->rdev = rdev;
	eq->log = RNIC_EQ_LOG;
	eq->vector = rdev->first_eq_vector + idx;
	eq->async = idx == 0;
	snprintf(eq->name, sizeof(eq->name), "rnic-eq%d@%s", idx,
		 pci_name(rdev->pdev));
	ret = rnic_dma_buf_alloc(rdev, &eq->ring,
				 sizeof(struct rnic_eqe) << eq->log);
	if (ret)
		return ret;
	cmd.eq.ring_addr = cpu_to_le64(eq->ring.dma);
	cmd.eq.log_size = eq->log;
	cmd.eq.flags = eq->async ? RNIC_EQ_ASYNC : 0;
	cmd.eq.vector = cpu_to_le32(eq->vector);
	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, &cqe);
	if (ret) {
		dev_err(&rdev->pdev->dev, "CREATE_EQ %d failed (%d)\n", idx, ret);
		goto err_ring;
	}
	eq->handle = le32_to_cpu(cqe.result0);
	eq->created = true;
	ret = request_irq(pci_irq_vector(rdev->pdev, eq->vector), rnic_eq_irq,
			  0, eq->name, eq);
	if (ret)
		goto err_destroy;
	return 0;

err_destroy:
	rnic_cmd_simple(rdev, RNIC_CMD_DESTROY_EQ, RNIC_UCTX_KERNEL,
			eq->handle, 0);
	eq->created = false;
err_ring:
	rnic_dma_buf_free(rdev, &eq->ring);
	return ret;
}

static void rnic_eq_destroy(struct rnic_dev *rdev, struct rnic_eq *eq)
{
	int ret;

	if (!eq->created)
		return;
	free_irq(pci_irq_vector(rdev->pdev, eq->vector), eq);
	/*
	 * The ring may still be written until the device forgets the EQ;
	 * -EIO: the device failed and was reset, it writes nothing any more.
	 */
	ret = rnic_cmd_simple(rdev, RNIC_CMD_DESTROY_EQ, RNIC_UCTX_KERNEL,
			      eq->handle, 0);
	if (ret && ret != -EIO)
		dev_warn(&rdev->pdev->dev,
			 "DESTROY_EQ %u failed (%d); its ring is leaked\n",
			 eq->handle, ret);
	else
		rnic_dma_buf_free(rdev, &eq->ring);
	eq->created = false;
}

int rnic_eqs_init(struct rnic_dev *rdev)
{
	int n = rdev->nvec - rdev->first_eq_vector;
	int i, ret;

	for (i = 0; i < n; i++) {
		ret = rnic_eq_create(rdev, &rdev->eqs[i], i);
		if (ret)
			goto err;
		rdev->num_eqs++;
	}
	return 0;

err:
	rnic_eqs_fini(rdev);
	return ret;
}

void rnic_eqs_fini(struct rnic_dev *rdev)
{
	int i;

	for (i = rdev->num_eqs - 1; i >= 0; i--)
		rnic_eq_destroy(rdev, &rdev->eqs[i]);
	rdev->num_eqs = 0;
}

/*
 * Wait until no EQ handler runs any more: after an object left its xarray,
 * this makes sure no handler still uses it.
 */
void rnic_eqs_sync(struct rnic_dev *rdev)
{
	int i;

	for (i = 0; i < rdev->num_eqs; i++)
		synchronize_irq(pci_irq_vector(rdev->pdev, rdev->eqs[i].vector));
}

struct rnic_eq *rnic_eq_for_vector(struct rnic_dev *rdev, int comp_vector)
{
	if (comp_vector < 0)
		comp_vector = 0;
	return &rdev->eqs[comp_vector % rdev->num_eqs];
}
