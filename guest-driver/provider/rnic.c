// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rnic provider: device match, user context (doorbell page), device and
 * port queries, PDs, memory regions, device memory (the memory window) and
 * address handles. Queues are in rnic_cq.c, rnic_qp.c and rnic_srq.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <infiniband/cmd_ioctl.h>
#include <rdma/ib_user_ioctl_cmds.h>

#include "rnic.h"

/*
 * The PCI function (vendor/device of the device ABI). rnic.ko registers
 * no driver id of its own (RDMA_DRIVER_UNKNOWN: the enum is the kernel's),
 * so the device name "rnic<n>" is the fallback when the ib_device has no
 * PCI parent to read a modalias from, or the IDs were overridden with the
 * device's vendor-id/device-id properties.
 */
static const struct verbs_match_ent rnic_match_table[] = {
	VERBS_PCI_MATCH(RNIC_PCI_VENDOR_ID, RNIC_PCI_DEVICE_ID, NULL),
	VERBS_NAME_MATCH("rnic", NULL),
	{},
};

static void rnic_free_context(struct ibv_context *ibctx);

/* ---------------------------------------------------------------------- */
/* Mappings and the QP table                                              */
/* ---------------------------------------------------------------------- */

/* Map a ring the kernel allocated (an rdma_user_mmap_entry at 'key'). */
void *rnic_mmap_ring(struct ibv_context *ibctx, uint64_t key, size_t size)
{
	void *p;

	if (!size) {
		errno = EINVAL;
		return NULL;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, ibctx->cmd_fd,
		 key);
	return p == MAP_FAILED ? NULL : p;
}

int rnic_qp_table_insert(struct rnic_context *ctx, struct rnic_qp *qp)
{
	uint32_t top = qp->handle >> RNIC_QP_LEAF_SHIFT;
	struct rnic_qp **leaf;
	int ret = 0;

	if (qp->handle >= RNIC_QP_HANDLES)
		return EINVAL;
	pthread_mutex_lock(&ctx->qp_table_lock);
	leaf = ctx->qp_table[top];
	if (!leaf) {
		leaf = calloc(1u << RNIC_QP_LEAF_SHIFT, sizeof(*leaf));
		if (!leaf) {
			ret = ENOMEM;
			goto out;
		}
		ctx->qp_table[top] = leaf;
	}
	leaf[qp->handle & ((1u << RNIC_QP_LEAF_SHIFT) - 1)] = qp;
out:
	pthread_mutex_unlock(&ctx->qp_table_lock);
	return ret;
}

void rnic_qp_table_remove(struct rnic_context *ctx, struct rnic_qp *qp)
{
	struct rnic_qp **leaf;

	pthread_mutex_lock(&ctx->qp_table_lock);
	leaf = ctx->qp_table[qp->handle >> RNIC_QP_LEAF_SHIFT];
	if (leaf && leaf[qp->handle & ((1u << RNIC_QP_LEAF_SHIFT) - 1)] == qp)
		leaf[qp->handle & ((1u << RNIC_QP_LEAF_SHIFT) - 1)] = NULL;
	pthread_mutex_unlock(&ctx->qp_table_lock);
}

/* ---------------------------------------------------------------------- */
/* Device and port                                                        */
/* ---------------------------------------------------------------------- */

static int rnic_query_device(struct ibv_context *ibctx,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(ibctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;
	/* the kernel reports the device ABI version: major << 16 | minor */
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u", (unsigned int)(fw >> 16) & 0xffff,
		 (unsigned int)fw & 0xffff);
	return 0;
}

/*
 * ibv_query_rt_values_ex: the device clock (nanoseconds, the clock of the
 * CQE timestamps) read from our doorbell page, as a raw cycle count in
 * tv_nsec like mlx5's.
 */
static int rnic_query_rt_values(struct ibv_context *ibctx,
				struct ibv_values_ex *values)
{
	struct rnic_context *ctx = to_rctx(ibctx);

	if (!(ctx->caps & RNIC_CAP_CQE_TIMESTAMP))
		return EOPNOTSUPP;
	if (values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK)
		return EINVAL;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = le64toh(mmio_read64_le(
			(uint8_t *)ctx->db_page + RNIC_DB_CLOCK));
	}
	return 0;
}

static int rnic_query_port(struct ibv_context *ibctx, uint8_t port,
			   struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(ibctx, port, attr, &cmd, sizeof(cmd));
}

/* ---------------------------------------------------------------------- */
/* Protection domains                                                     */
/* ---------------------------------------------------------------------- */

static struct ibv_pd *rnic_alloc_pd(struct ibv_context *ibctx)
{
	struct urnic_alloc_pd_resp resp = {};
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	ret = ibv_cmd_alloc_pd(ibctx, pd, &cmd, sizeof(cmd), &resp.ibv_resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return pd;
}

static int rnic_dealloc_pd(struct ibv_pd *pd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(pd);
	if (ret)
		return ret;
	free(pd);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Memory regions: the kernel pins the pages and hands the list over      */
/* ---------------------------------------------------------------------- */

static struct ibv_mr *rnic_reg_mr(struct ibv_pd *pd, void *addr,
				  size_t length, uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static int rnic_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	free(vmr);
	return 0;
}

/*
 * ibv_rereg_mr: the kernel re-registers in place (RNIC_CMD_REREG_MR): the
 * same lkey and rkey with a new translation, PD or rights.
 */
static int rnic_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			 void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

/* ---------------------------------------------------------------------- */
/* Memory windows (ibv_alloc_mw): the kernel allocates, WQEs bind them   */
/* ---------------------------------------------------------------------- */

/* UD multicast: the kernel asks the device to attach / detach the QP. */
static int rnic_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			     uint16_t lid)
{
	return ibv_cmd_attach_mcast(qp, gid, lid);
}

static int rnic_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			     uint16_t lid)
{
	return ibv_cmd_detach_mcast(qp, gid, lid);
}

static struct ibv_mw *rnic_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

static int rnic_dealloc_mw(struct ibv_mw *mw)
{
	int ret;

	ret = ibv_cmd_dealloc_mw(mw);
	if (ret)
		return ret;
	free(mw);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Device memory: allocations of the memory window (BAR4), mapped here    */
/* ---------------------------------------------------------------------- */

/*
 * What memcpy_to_dm/from_dm accept: inside the allocation, offset and
 * length in 4-byte units (the rule of device memory in rdma-core, which
 * its pyverbs tests check; the window itself would take any byte).
 */
static int rnic_dm_range(struct rnic_dm *dm, uint64_t offset, size_t length)
{
	if ((offset | length) & 3 || offset > dm->length ||
	    length > dm->length - offset)
		return EINVAL;
	return 0;
}

static int rnic_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t dm_offset,
			     const void *host_addr, size_t length)
{
	struct rnic_dm *dm = to_rdm(ibdm);
	int ret = rnic_dm_range(dm, dm_offset, length);

	if (ret)
		return ret;
	memcpy((uint8_t *)dm->addr + dm_offset, host_addr, length);
	/* the mapping is write-combining: out of the CPU before returning */
	mmio_flush_writes();
	return 0;
}

static int rnic_memcpy_from_dm(void *host_addr, struct ibv_dm *ibdm,
			       uint64_t dm_offset, size_t length)
{
	struct rnic_dm *dm = to_rdm(ibdm);
	int ret = rnic_dm_range(dm, dm_offset, length);

	if (ret)
		return ret;
	memcpy(host_addr, (uint8_t *)dm->addr + dm_offset, length);
	return 0;
}

static struct ibv_dm *rnic_alloc_dm(struct ibv_context *ibctx,
				    struct ibv_alloc_dm_attr *attr)
{
	DECLARE_COMMAND_BUFFER(cmdb, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC,
			       1);
	struct rnic_alloc_dm_resp resp = {};
	struct rnic_dm *dm;
	int ret;

	static_assert(RNIC_ATTR_ALLOC_DM_RESP == UVERBS_ID_DRIVER_NS,
		      "the response is DM_ALLOC's first driver attribute");
	if (attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm)
		return NULL;
	fill_attr_out_ptr(cmdb, RNIC_ATTR_ALLOC_DM_RESP, &resp);
	ret = ibv_cmd_alloc_dm(ibctx, attr, &dm->vdm, cmdb);
	if (ret) {
		free(dm);
		errno = ret;
		return NULL;
	}
	if (resp.length < attr->length) {
		verbs_err(&to_rctx(ibctx)->vctx,
			  "rnic: device memory of %llu bytes for %zu\n",
			  (unsigned long long)resp.length, attr->length);
		ret = EPROTO;
		goto err_free;
	}
	dm->length = attr->length;
	dm->map_len = resp.length;
	dm->addr = mmap(NULL, dm->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			ibctx->cmd_fd, resp.mmap_key);
	if (dm->addr == MAP_FAILED) {
		ret = errno;
		goto err_free;
	}
	dm->vdm.dm.memcpy_to_dm = rnic_memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = rnic_memcpy_from_dm;
	return &dm->vdm.dm;

err_free:
	ibv_cmd_free_dm(&dm->vdm);
	free(dm);
	errno = ret;
	return NULL;
}

/* Unmapped only once the kernel freed it: a refused free keeps it usable. */
static int rnic_free_dm(struct ibv_dm *ibdm)
{
	struct rnic_dm *dm = to_rdm(ibdm);
	int ret;

	ret = ibv_cmd_free_dm(&dm->vdm);
	if (ret)
		return ret;
	munmap(dm->addr, dm->map_len);
	free(dm);
	return 0;
}

/* Zero-based (ibv_cmd_reg_dm_mr refuses otherwise): iova 0 = dm_offset. */
static struct ibv_mr *rnic_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm,
				     uint64_t dm_offset, size_t length,
				     unsigned int access)
{
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = ibv_cmd_reg_dm_mr(pd, &to_rdm(ibdm)->vdm, dm_offset, length,
				access, vmr, NULL);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/* ---------------------------------------------------------------------- */
/* Address handles: the kernel resolves the AV, UD WQEs carry a copy      */
/* ---------------------------------------------------------------------- */

static struct ibv_ah *rnic_create_ah(struct ibv_pd *pd,
				     struct ibv_ah_attr *attr)
{
	struct urnic_create_ah_resp resp = {};
	struct rnic_ah *ah;
	int ret;

	if (!attr->is_global) {
		/* RoCE: every address has a GRH (a GID) */
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	static_assert(sizeof(resp.av) == sizeof(ah->av), "AV size");
	memcpy(&ah->av, resp.av, sizeof(ah->av));
	return &ah->ibv_ah;
}

static int rnic_destroy_ah(struct ibv_ah *ibah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;
	free(to_rah(ibah));
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Context                                                                */
/* ---------------------------------------------------------------------- */

static const struct verbs_context_ops rnic_ctx_ops = {
	.alloc_dm = rnic_alloc_dm,
	.alloc_mw = rnic_alloc_mw,
	.alloc_pd = rnic_alloc_pd,
	.attach_mcast = rnic_attach_mcast,
	.bind_mw = rnic_bind_mw,
	.create_ah = rnic_create_ah,
	.create_cq = rnic_create_cq,
	.create_cq_ex = rnic_create_cq_ex,
	.create_qp = rnic_create_qp,
	.create_qp_ex = rnic_create_qp_ex,
	.create_srq = rnic_create_srq,
	.dealloc_mw = rnic_dealloc_mw,
	.dealloc_pd = rnic_dealloc_pd,
	.detach_mcast = rnic_detach_mcast,
	.dereg_mr = rnic_dereg_mr,
	.destroy_ah = rnic_destroy_ah,
	.destroy_cq = rnic_destroy_cq,
	.destroy_qp = rnic_destroy_qp,
	.destroy_srq = rnic_destroy_srq,
	.free_context = rnic_free_context,
	.free_dm = rnic_free_dm,
	.modify_qp = rnic_modify_qp,
	.modify_srq = rnic_modify_srq,
	.poll_cq = rnic_poll_cq,
	.post_recv = rnic_post_recv,
	.post_send = rnic_post_send,
	.post_srq_recv = rnic_post_srq_recv,
	.query_device_ex = rnic_query_device,
	.query_port = rnic_query_port,
	.query_qp = rnic_query_qp,
	.query_rt_values = rnic_query_rt_values,
	.query_srq = rnic_query_srq,
	.reg_dm_mr = rnic_reg_dm_mr,
	.reg_mr = rnic_reg_mr,
	.req_notify_cq = rnic_req_notify_cq,
	.rereg_mr = rnic_rereg_mr,
	.resize_cq = rnic_resize_cq,
};

static void rnic_free_context(struct ibv_context *ibctx)
{
	struct rnic_context *ctx = to_rctx(ibctx);
	unsigned int i;

	if (ctx->db_page)
		munmap(ctx->db_page, ctx->db_size);
	for (i = 0; i < RNIC_QP_LEAVES; i++)
		free(ctx->qp_table[i]);
	pthread_mutex_destroy(&ctx->qp_table_lock);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static struct verbs_context *rnic_alloc_context(struct ibv_device *ibdev,
						int cmd_fd,
						void *private_data)
{
	struct urnic_get_context_resp resp = {};
	struct ibv_get_context cmd;
	struct rnic_context *ctx;
	uint32_t major;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, vctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	pthread_mutex_init(&ctx->qp_table_lock, NULL);

	if (ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp)))
		goto err;

	major = resp.abi_version >> 16;
	if (major != RNIC_ABI_VERSION_MAJOR) {
		verbs_err(&ctx->vctx,
			  "rnic: device ABI %u.%u, this provider knows %u.x\n",
			  major, resp.abi_version & 0xffff,
			  RNIC_ABI_VERSION_MAJOR);
		errno = EPROTONOSUPPORT;
		goto err;
	}
	if (resp.db_size < RNIC_DB_CQ + sizeof(uint64_t)) {
		verbs_err(&ctx->vctx, "rnic: doorbell page of %u bytes\n",
			  resp.db_size);
		errno = EINVAL;
		goto err;
	}
	ctx->uctx = resp.uctx;
	ctx->max_qp_wr = resp.max_qp_wr;
	ctx->max_sge = resp.max_sge;
	ctx->max_inline = resp.max_inline;
	ctx->max_cqe = resp.max_cqe;
	ctx->max_srq_wr = resp.max_srq_wr;
	ctx->abi_version = resp.abi_version;
	ctx->caps = resp.caps;
	ctx->max_map_segs = resp.max_map_segs;
	ctx->db_size = resp.db_size;
	/* readable for the device clock (rnic_query_rt_values) */
	ctx->db_page = mmap(NULL, ctx->db_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED, cmd_fd, resp.db_key);
	if (ctx->db_page == MAP_FAILED) {
		verbs_err(&ctx->vctx,
			  "rnic: cannot map the doorbell page: %m\n");
		ctx->db_page = NULL;
		goto err;
	}

	verbs_set_ops(&ctx->vctx, &rnic_ctx_ops);
	verbs_debug(&ctx->vctx,
		    "rnic: user context %u, doorbell page mapped, ABI %u.%u\n",
		    ctx->uctx, major, ctx->abi_version & 0xffff);
	return &ctx->vctx;

err:
	pthread_mutex_destroy(&ctx->qp_table_lock);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	return NULL;
}

static struct verbs_device *rnic_device_alloc(struct verbs_sysfs_dev *sysfs_dev)
{
	struct rnic_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->vdev;
}

static void rnic_uninit_device(struct verbs_device *vdev)
{
	free(container_of(vdev, struct rnic_device, vdev));
}

static const struct verbs_device_ops rnic_dev_ops = {
	.name = "rnic",
	.match_min_abi_version = RNIC_UVERBS_ABI_VERSION,
	.match_max_abi_version = RNIC_UVERBS_ABI_VERSION,
	.match_table = rnic_match_table,
	.alloc_device = rnic_device_alloc,
	.uninit_device = rnic_uninit_device,
	.alloc_context = rnic_alloc_context,
};

/* A device of this provider (rnicdv_*). */
bool rnic_is_rnic_device(struct ibv_device *device)
{
	return verbs_get_device(device)->ops == &rnic_dev_ops;
}

PROVIDER_DRIVER(rnic, rnic_dev_ops);
