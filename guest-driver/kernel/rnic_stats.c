// SPDX-License-Identifier: GPL-2.0
/*
 * rnic counters for rdma statistic: the port's (the device's counters,
 * RNIC_REG_STAT_BASE) and, with RNIC_CAP_QP_STATS, QP counters (rdma
 * statistic qp: manual binding and auto mode), built on the transport
 * counters the device keeps for each QP (RNIC_CMD_QUERY_QP_STATS).
 *
 * A QP counter holds what its QPs counted since they were bound: the
 * QPs' values less their values at binding, plus what QPs since unbound
 * or destroyed had counted. The core adds every QP counter, running or
 * freed, to the port's values of the same index and shows the sum as the
 * port's (mlx5's q-counters take a QP's traffic out of the default
 * counter). The device counts every packet in its own counters as well,
 * so the port's values here are the device's less what the QP counters
 * hold: the sum the core shows is the device's. For the indexes to agree,
 * the QP counters are the first RNIC_QP_STAT_COUNT of the port's list.
 */
#include <rdma/rdma_counter.h>

#include "rnic.h"
#include "rnic/rnic-abi-names.h"

/* The name of device counter i into buf (ETH_GSTRING_LEN bytes). */
void rnic_stat_name(u32 i, char *buf)
{
	const char *name = rnic_abi_stat_name(i);

	if (name)
		strscpy(buf, name, ETH_GSTRING_LEN);
	else
		snprintf(buf, ETH_GSTRING_LEN, "stat_%u", i);
}

u64 rnic_stat_read(struct rnic_dev *rdev, u32 i)
{
	return rnic_reg_read64(rdev, RNIC_REG_STAT_BASE + 8 * i);
}

/* A QP counter: the QPs bound to it and what the ones gone had counted. */
struct rnic_counter {
	struct list_head node;		/* rdev->counters */
	struct rdma_counter *rc;
	struct list_head qps;		/* rnic_qp.counter_node */
	bool used;			/* a QP was bound to it */
	u64 gone[RNIC_QP_STAT_COUNT];
};

/* The device counter shown at index d of the port's list. */
static u32 rnic_port_stat(u32 d)
{
	if (d < RNIC_QP_STAT_COUNT)
		return RNIC_QP_STAT_FIRST + d;
	d -= RNIC_QP_STAT_COUNT;
	return d < RNIC_QP_STAT_FIRST ? d : d + RNIC_QP_STAT_COUNT;
}

static int rnic_qp_stats_read(struct rnic_dev *rdev, struct rnic_qp *qp,
			      u64 *v)
{
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_QUERY_QP_STATS };
	__le64 raw[RNIC_QP_STAT_COUNT];
	int i, ret;

	cmd.uctx = cpu_to_le32(qp->uctx);
	cmd.query.handle = cpu_to_le32(qp->handle);
	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, raw, sizeof(raw), NULL);
	if (ret)
		return ret;
	for (i = 0; i < RNIC_QP_STAT_COUNT; i++)
		v[i] = le64_to_cpu(raw[i]);
	return 0;
}

static struct rnic_counter *rnic_counter_find(struct rnic_dev *rdev,
					      struct rdma_counter *rc)
{
	struct rnic_counter *c;

	list_for_each_entry(c, &rdev->counters, node)
		if (c->rc == rc)
			return c;
	return NULL;
}

/* What counter 'c' holds now (counter_lock held). */
static int rnic_counter_sum(struct rnic_dev *rdev, struct rnic_counter *c,
			    u64 *sum)
{
	u64 v[RNIC_QP_STAT_COUNT];
	struct rnic_qp *qp;
	int i, ret;

	memcpy(sum, c->gone, sizeof(c->gone));
	list_for_each_entry(qp, &c->qps, counter_node) {
		ret = rnic_qp_stats_read(rdev, qp, v);
		if (ret)
			return ret;
		for (i = 0; i < RNIC_QP_STAT_COUNT; i++)
			sum[i] += v[i] - qp->counter_base[i];
	}
	return 0;
}

static struct rdma_hw_stats *rnic_counter_alloc_stats(struct rdma_counter *rc)
{
	struct rnic_dev *rdev = to_rdev(rc->device);
	struct rdma_hw_stats *stats;
	struct rnic_counter *c;
	int id;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return NULL;
	stats = rdma_alloc_hw_stats_struct(rdev->stat_descs, RNIC_QP_STAT_COUNT,
					   RDMA_HW_STATS_DEFAULT_LIFESPAN);
	id = ida_alloc_min(&rdev->counter_ida, 1, GFP_KERNEL);
	if (!stats || id < 0) {
		rdma_free_hw_stats_struct(stats);
		kfree(c);
		return NULL;
	}
	rc->id = id;
	c->rc = rc;
	INIT_LIST_HEAD(&c->qps);
	mutex_lock(&rdev->counter_lock);
	list_add(&c->node, &rdev->counters);
	mutex_unlock(&rdev->counter_lock);
	return stats;
}

static int rnic_counter_bind_qp(struct rdma_counter *rc, struct ib_qp *ibqp)
{
	struct rnic_dev *rdev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	struct rnic_counter *c;
	int ret = -EINVAL;

	mutex_lock(&rdev->counter_lock);
	c = rnic_counter_find(rdev, rc);
	if (c && !qp->counter)
		ret = rnic_qp_stats_read(rdev, qp, qp->counter_base);
	if (!ret) {
		c->used = true;
		qp->counter = c;
		list_add(&qp->counter_node, &c->qps);
		ibqp->counter = rc;
	} else if (c && !c->used) {
		/* the core frees a new counter whose first binding failed */
		list_del(&c->node);
		ida_free(&rdev->counter_ida, rc->id);
		kfree(c);
	}
	mutex_unlock(&rdev->counter_lock);
	return ret;
}

/* Also when the QP is destroyed (before the device forgets it). */
static int rnic_counter_unbind_qp(struct ib_qp *ibqp)
{
	struct rnic_dev *rdev = to_rdev(ibqp->device);
	struct rnic_qp *qp = to_rqp(ibqp);
	u64 v[RNIC_QP_STAT_COUNT];
	int i;

	mutex_lock(&rdev->counter_lock);
	if (!qp->counter) {
		mutex_unlock(&rdev->counter_lock);
		return -EINVAL;
	}
	/* a device that no longer answers: what was counted is lost */
	if (!rnic_qp_stats_read(rdev, qp, v))
		for (i = 0; i < RNIC_QP_STAT_COUNT; i++)
			qp->counter->gone[i] += v[i] - qp->counter_base[i];
	list_del(&qp->counter_node);
	qp->counter = NULL;
	ibqp->counter = NULL;
	mutex_unlock(&rdev->counter_lock);
	return 0;
}

static int rnic_counter_update_stats(struct rdma_counter *rc)
{
	struct rnic_dev *rdev = to_rdev(rc->device);
	u64 sum[RNIC_QP_STAT_COUNT];
	struct rnic_counter *c;
	int i, ret = -EINVAL;

	mutex_lock(&rdev->counter_lock);
	c = rnic_counter_find(rdev, rc);
	if (c)
		ret = rnic_counter_sum(rdev, c, sum);
	mutex_unlock(&rdev->counter_lock);
	if (ret)
		return ret;
	for (i = 0; i < RNIC_QP_STAT_COUNT; i++)
		rc->stats->value[i] = sum[i];
	return 0;
}

/* The core has added its last values to the port's history. */
static int rnic_counter_dealloc(struct rdma_counter *rc)
{
	struct rnic_dev *rdev = to_rdev(rc->device);
	struct rnic_counter *c;
	int i;

	mutex_lock(&rdev->counter_lock);
	c = rnic_counter_find(rdev, rc);
	if (c) {
		for (i = 0; i < RNIC_QP_STAT_COUNT; i++)
			rdev->counted[i] += rc->stats->value[i];
		list_del(&c->node);
		ida_free(&rdev->counter_ida, rc->id);
		kfree(c);
	}
	mutex_unlock(&rdev->counter_lock);
	return 0;
}

static struct rdma_hw_stats *rnic_alloc_hw_port_stats(struct ib_device *ibdev,
						      u32 port)
{
	return rdma_alloc_hw_stats_struct(to_rdev(ibdev)->stat_descs,
					  RNIC_STAT_COUNT,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/* The device's counters, less what the QP counters hold (see above). */
static int rnic_get_hw_stats(struct ib_device *ibdev,
			     struct rdma_hw_stats *stats, u32 port, int index)
{
	struct rnic_dev *rdev = to_rdev(ibdev);
	u64 held[RNIC_QP_STAT_COUNT], sum[RNIC_QP_STAT_COUNT];
	struct rnic_counter *c;
	u32 i;

	mutex_lock(&rdev->counter_lock);
	memcpy(held, rdev->counted, sizeof(held));
	list_for_each_entry(c, &rdev->counters, node) {
		if (rnic_counter_sum(rdev, c, sum))
			continue;
		for (i = 0; i < RNIC_QP_STAT_COUNT; i++)
			held[i] += sum[i];
	}
	mutex_unlock(&rdev->counter_lock);
	for (i = 0; i < RNIC_STAT_COUNT; i++) {
		u64 v = rnic_stat_read(rdev, rnic_port_stat(i));

		if (i < RNIC_QP_STAT_COUNT)
			v = v > held[i] ? v - held[i] : 0;
		stats->value[i] = v;
	}
	return RNIC_STAT_COUNT;
}

static const struct ib_device_ops rnic_stats_ops = {
	.alloc_hw_port_stats = rnic_alloc_hw_port_stats,
	.get_hw_stats = rnic_get_hw_stats,
};

static const struct ib_device_ops rnic_counter_ops = {
	.counter_alloc_stats = rnic_counter_alloc_stats,
	.counter_bind_qp = rnic_counter_bind_qp,
	.counter_dealloc = rnic_counter_dealloc,
	.counter_unbind_qp = rnic_counter_unbind_qp,
	.counter_update_stats = rnic_counter_update_stats,
};

/* The port's counters, in the order above; QP counters if the device has. */
int rnic_stats_init(struct rnic_dev *rdev)
{
	u32 i;

	rdev->stat_descs = kcalloc(RNIC_STAT_COUNT, sizeof(*rdev->stat_descs),
				   GFP_KERNEL);
	rdev->stat_desc_names = kcalloc(RNIC_STAT_COUNT,
					sizeof(*rdev->stat_desc_names),
					GFP_KERNEL);
	if (!rdev->stat_descs || !rdev->stat_desc_names) {
		kfree(rdev->stat_descs);
		kfree(rdev->stat_desc_names);
		return -ENOMEM;
	}
	for (i = 0; i < RNIC_STAT_COUNT; i++) {
		rnic_stat_name(rnic_port_stat(i), rdev->stat_desc_names[i]);
		rdev->stat_descs[i].name = rdev->stat_desc_names[i];
	}
	mutex_init(&rdev->counter_lock);
	INIT_LIST_HEAD(&rdev->counters);
	ida_init(&rdev->counter_ida);
	memset(rdev->counted, 0, sizeof(rdev->counted));
	ib_set_device_ops(&rdev->ibdev, &rnic_stats_ops);
	if (rdev->caps.caps & RNIC_CAP_QP_STATS)
		ib_set_device_ops(&rdev->ibdev, &rnic_counter_ops);
	return 0;
}

void rnic_stats_fini(struct rnic_dev *rdev)
{
	ida_destroy(&rdev->counter_ida);
	kfree(rdev->stat_descs);
	kfree(rdev->stat_desc_names);
	rdev->stat_descs = NULL;
	rdev->stat_desc_names = NULL;
}
