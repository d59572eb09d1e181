// SPDX-License-Identifier: GPL-2.0
/*
 * rnic ib_device: registration, device/port/GID queries, network contexts,
 * user contexts, PDs and AHs. Queues and memory regions are in rnic_cq.c,
 * rnic_qp.c, rnic_srq.c and rnic_mr.c; what user contexts mmap() (doorbell
 * page, rings, device memory) in rnic_dma.c.
 *
 * Network contexts: the device keeps one mapping table and QPN space per
 * network (VLAN). The GID table is filled by the RoCE core from the
 * net_device and its VLAN sub-interfaces; each GID is added to the context
 * of its VLAN, created with the first GID of that VLAN and destroyed with
 * the last. PDs live in the untagged context (see ABI-REQUESTS.md: the
 * verbs API gives a PD no network).
 */
#include <linux/module.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>

#include "rnic.h"

/*
 * IBK_SG_GAPS_REG for kernel ULPs (off: they register page lists, one
 * per gap-free run, as without mapped STags; for comparisons)
 */
static bool sg_gaps = true;
module_param(sg_gaps, bool, 0444);
MODULE_PARM_DESC(sg_gaps,
		 "Offer SG_GAPS MRs (mapped STags) to kernel ULPs (default on)");

static bool multi_net = true;
module_param(multi_net, bool, 0444);
MODULE_PARM_DESC(multi_net,
		 "PDs usable on every VLAN when the device can (default on)");

bool rnic_multi_net_pds(struct rnic_dev *rdev)
{
	return multi_net && (rdev->caps.caps & RNIC_CAP_PD_MULTI_NET);
}

/* ---------------------------------------------------------------------- */
/* Network contexts                                                       */
/* ---------------------------------------------------------------------- */

static void rnic_net_ctx_destroy(struct rnic_dev *rdev,
				 struct rnic_net_ctx *ctx, bool force);

static struct rnic_net_ctx *rnic_net_ctx_get(struct rnic_dev *rdev, u16 vlan)
{
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_CREATE_NET_CTX };
	struct rnic_admin_cqe cqe;
	struct rnic_net_ctx *ctx;
	unsigned long idx;
	int ret;

	lockdep_assert_held(&rdev->net_lock);
	ctx = xa_load(&rdev->net_ctxs, vlan);
	if (ctx)
		return ctx;	/* possibly one kept idle, see below */
	/* contexts kept idle may be free by now: give their slots back */
	xa_for_each(&rdev->net_ctxs, idx, ctx)
		if (!ctx->gids && ctx != rdev->default_ctx)
			rnic_net_ctx_destroy(rdev, ctx, false);
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return ERR_PTR(-ENOMEM);
	cmd.net_ctx.net_id = cpu_to_le32(vlan);
	cmd.net_ctx.net_type = RNIC_NET_VLAN;
	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, &cqe);
	if (ret) {
		dev_err(&rdev->pdev->dev,
			"CREATE_NET_CTX for VLAN %u failed (%d)\n", vlan, ret);
		goto err_free;
	}
	ctx->handle = le32_to_cpu(cqe.result0);
	ctx->vlan = vlan;
	ret = xa_err(xa_store(&rdev->net_ctxs, vlan, ctx, GFP_KERNEL));
	if (ret)
		goto err_destroy;
	rnic_dbg(rdev, "network context %u for VLAN %u\n", ctx->handle, vlan);
	return ctx;

err_destroy:
	rnic_cmd_simple(rdev, RNIC_CMD_DESTROY_NET_CTX, RNIC_UCTX_KERNEL,
			ctx->handle, 0);
err_free:
	kfree(ctx);
	return ERR_PTR(ret);
}

/*
 * Destroy a context that lost its last GID. The device refuses (BUSY) while
 * an RC QP of a multi-network PD is still bound to it (its connection has
 * not been torn down yet): the context is then kept, idle, reused if its
 * VLAN comes back, destroyed when another context is created or, forced, at
 * removal.
 */
static void rnic_net_ctx_destroy(struct rnic_dev *rdev,
				 struct rnic_net_ctx *ctx, bool force)
{
	int ret;

	ret = rnic_cmd_simple(rdev, RNIC_CMD_DESTROY_NET_CTX, RNIC_UCTX_KERNEL,
			      ctx->handle, 0);
	if (ret == -EBUSY && !force) {
		rnic_dbg(rdev, "network context %u (VLAN %u) still in use: kept\n",
			 ctx->handle, ctx->vlan);
		return;
	}
	xa_erase(&rdev->net_ctxs, ctx->vlan);
	if (ret && ret != -EIO)
		dev_warn(&rdev->pdev->dev,
			 "DESTROY_NET_CTX %u (VLAN %u) failed (%d)\n",
			 ctx->handle, ctx->vlan, ret);
	kfree(ctx);
}

/* The untagged context exists for the life of the device: PDs live in it. */
int rnic_net_ctx_init(struct rnic_dev *rdev)
{
	struct rnic_net_ctx *ctx;

	mutex_lock(&rdev->net_lock);
	ctx = rnic_net_ctx_get(rdev, 0);
	mutex_unlock(&rdev->net_lock);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	rdev->default_ctx = ctx;
	return 0;
}

void rnic_net_ctx_fini(struct rnic_dev *rdev)
{
	struct rnic_net_ctx *ctx;
	unsigned long vlan;

	mutex_lock(&rdev->net_lock);
	xa_for_each(&rdev->net_ctxs, vlan, ctx)
		rnic_net_ctx_destroy(rdev, ctx, true);
	rdev->default_ctx = NULL;
	mutex_unlock(&rdev->net_lock);
}

/* ---------------------------------------------------------------------- */
/* Device and port                                                        */
/* ---------------------------------------------------------------------- */

static void rnic_fill_attrs(struct rnic_dev *rdev, struct ib_device_attr *a)
{
	const struct rnic_caps *c = &rdev->caps;

	memset(a, 0, sizeof(*a));
	a->fw_ver = c->abi_version;
	a->sys_image_guid = cpu_to_be64(c->node_guid);
	a->max_mr_size = c->max_mr_size;
	a->page_size_cap = c->page_size_cap;
	a->vendor_id = c->vendor_id;
	a->vendor_part_id = c->vendor_part_id;
	a->hw_ver = c->hw_ver;
	a->max_qp = c->max_qp;
	a->max_qp_wr = c->max_qp_wr;
	a->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN |
			      IB_DEVICE_CURR_QP_STATE_MOD |
			      IB_DEVICE_SYS_IMAGE_GUID;
	if (c->caps & RNIC_CAP_FAST_REG)
		a->device_cap_flags |= IB_DEVICE_MEM_MGT_EXTENSIONS;
	if (c->caps & RNIC_CAP_SRQ_RESIZE)
		a->device_cap_flags |= IB_DEVICE_SRQ_RESIZE;
	if (c->caps & RNIC_CAP_MCAST) {
		a->max_mcast_grp = c->max_mcast_grp;
		a->max_mcast_qp_attach = c->max_mcast_qp_attach;
		a->max_total_mcast_qp_attach = c->max_mcast_grp *
					       c->max_mcast_qp_attach;
	}
	if (c->caps & RNIC_CAP_MW) {
		a->device_cap_flags |= IB_DEVICE_MEM_WINDOW |
				       IB_DEVICE_MEM_WINDOW_TYPE_2B;
		a->max_mw = c->max_mw;
	}
#if RNIC_IB_PLACEMENT
	/* IBTA 1.5 placement; uverbs reports them in device_cap_flags_ex */
	if (c->caps & RNIC_CAP_FLUSH_GLOBAL)
		a->device_cap_flags |= IB_DEVICE_FLUSH_GLOBAL;
	if (c->caps & RNIC_CAP_FLUSH_PERSISTENT)
		a->device_cap_flags |= IB_DEVICE_FLUSH_PERSISTENT;
	if (c->caps & RNIC_CAP_ATOMIC_WRITE)
		a->device_cap_flags |= IB_DEVICE_ATOMIC_WRITE;
#endif
	a->max_send_sge = c->max_sge;
	a->max_recv_sge = c->max_sge;
	a->max_sge_rd = c->max_sge;
	a->max_cq = c->max_cq;
	a->max_cqe = c->max_cqe;
	a->max_mr = c->max_mr;
	a->max_pd = c->max_pd;
	a->max_qp_rd_atom = c->max_qp_rd_atom;
	a->max_qp_init_rd_atom = c->max_qp_rd_atom;
	a->max_res_rd_atom = c->max_qp_rd_atom * c->max_qp;
	a->atomic_cap = (c->caps & RNIC_CAP_ATOMIC) ? IB_ATOMIC_HCA :
						      IB_ATOMIC_NONE;
	a->max_ah = c->max_qp;
	if (c->caps & RNIC_CAP_SRQ) {
		a->max_srq = c->max_srq;
		a->max_srq_wr = c->max_srq_wr;
		a->max_srq_sge = c->max_sge;
	}
	if (c->caps & RNIC_CAP_FAST_REG)
		a->max_fast_reg_page_list_len = c->max_fast_reg_pages;
	if (rnic_has_mapped(rdev) && sg_gaps) {
		/*
		 * ib_alloc_mr(IB_MR_TYPE_SG_GAPS) for the storage ULPs (NFS/RDMA,
		 * iSER, SRP), which size those MRs by the page list length
		 */
		a->kernel_cap_flags |= IBK_SG_GAPS_REG;
		a->max_fast_reg_page_list_len =
			min(a->max_fast_reg_page_list_len, c->max_map_segs);
	}
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	a->max_pi_fast_reg_page_list_len = 0;
	if (c->caps & RNIC_CAP_CQE_TIMESTAMP) {
		/* CQE timestamps count nanoseconds: a 1 GHz clock, in kHz */
		a->hca_core_clock = 1000000;
		a->timestamp_mask = ~0ULL;
	}
	/* ibv_alloc_dm(): the memory window (rnic_dm.c) */
	if (rdev->dm_pool)
		a->max_dm_size = rdev->scm_size;
}

static int rnic_query_device(struct ib_device *ibdev,
			     struct ib_device_attr *attr,
			     struct ib_udata *udata)
{
	if (udata->inlen || udata->outlen)
		return -EINVAL;
	/* ib_register_device() fills ibdev->attrs through this, too */
	rnic_fill_attrs(to_rdev(ibdev), attr);
	return 0;
}

static int rnic_query_port(struct ib_device *ibdev, u32 port,
			   struct ib_port_attr *attr)
{
	struct rnic_dev *rdev = to_rdev(ibdev);
	struct net_device *ndev = rdev->netdev;

	/* the caller zeroed *attr */
	attr->state = rnic_port_state(rdev);
	attr->phys_state = attr->state == IB_PORT_ACTIVE ?
			   IB_PORT_PHYS_STATE_LINK_UP :
			   IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = rdev->caps.port_max_mtu;
	attr->active_mtu = attr->max_mtu;
	if (ndev)
		attr->active_mtu = min_t(int, attr->max_mtu,
					 iboe_get_mtu(READ_ONCE(ndev->mtu)));
	attr->gid_tbl_len = rdev->caps.gid_tbl_len;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->max_msg_sz = rdev->caps.max_msg_sz;
	attr->pkey_tbl_len = 1;
	attr->max_vl_num = 1;
	return ib_get_eth_speed(ibdev, port, &attr->active_speed,
				&attr->active_width);
}

static int rnic_get_port_immutable(struct ib_device *ibdev, u32 port,
				   struct ib_port_immutable *immutable)
{
	struct rnic_dev *rdev = to_rdev(ibdev);

	immutable->pkey_tbl_len = 1;
	immutable->gid_tbl_len = rdev->caps.gid_tbl_len;
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer rnic_get_link_layer(struct ib_device *ibdev,
						u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int rnic_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			   u16 *pkey)
{
	if (index > 0)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static void rnic_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	u32 v = to_rdev(ibdev)->caps.abi_version;

	snprintf(str, IB_FW_VERSION_NAME_MAX, "abi-%u.%u", v >> 16, v & 0xffff);
}

/* ---------------------------------------------------------------------- */
/* GIDs                                                                   */
/* ---------------------------------------------------------------------- */

static int rnic_gid_cmd(struct rnic_dev *rdev, u8 opcode,
			const struct ib_gid_attr *attr, u32 net_ctx)
{
	struct rnic_admin_cmd cmd = { .opcode = opcode };

	memcpy(cmd.gid.gid, attr->gid.raw, sizeof(cmd.gid.gid));
	cmd.gid.index = cpu_to_le32(attr->index);
	cmd.gid.net_ctx = cpu_to_le32(net_ctx);
	cmd.gid.gid_type = 0;	/* RoCEv2 */
	return rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, NULL);
}

static int rnic_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct rnic_dev *rdev = to_rdev(attr->device);
	struct rnic_net_ctx *ctx;
	u16 vlan;
	int ret;

	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;
	ret = rdma_read_gid_l2_fields(attr, &vlan, NULL);
	if (ret)
		return ret;
	if (vlan >= VLAN_N_VID)
		vlan = 0;	/* not a VLAN device */

	mutex_lock(&rdev->net_lock);
	ctx = rnic_net_ctx_get(rdev, vlan);
	if (IS_ERR(ctx)) {
		ret = PTR_ERR(ctx);
		goto out;
	}
	ret = rnic_gid_cmd(rdev, RNIC_CMD_ADD_GID, attr, ctx->handle);
	if (ret) {
		ibdev_err(&rdev->ibdev, "ADD_GID %u %pI6 (VLAN %u) failed (%d)\n",
			  attr->index, attr->gid.raw, vlan, ret);
		if (!ctx->gids && ctx != rdev->default_ctx)
			rnic_net_ctx_destroy(rdev, ctx, false);
		goto out;
	}
	ctx->gids++;
	*context = ctx;
	ibdev_dbg(&rdev->ibdev, "GID %u %pI6 in VLAN %u (context %u)\n",
		  attr->index, attr->gid.raw, vlan, ctx->handle);
out:
	mutex_unlock(&rdev->net_lock);
	return ret;
}

static int rnic_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct rnic_dev *rdev = to_rdev(attr->device);
	struct rnic_net_ctx *ctx = *context;
	int ret;

	mutex_lock(&rdev->net_lock);
	ret = rnic_gid_cmd(rdev, RNIC_CMD_DEL_GID, attr, ctx->handle);
	if (ret && ret != -EIO)
		ibdev_warn(&rdev->ibdev, "DEL_GID %u failed (%d)\n",
			   attr->index, ret);
	if (!--ctx->gids && ctx != rdev->default_ctx)
		rnic_net_ctx_destroy(rdev, ctx, false);
	*context = NULL;
	mutex_unlock(&rdev->net_lock);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* User contexts                                                          */
/* ---------------------------------------------------------------------- */

static int rnic_alloc_ucontext(struct ib_ucontext *ibuc,
			       struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibuc->device);
	struct rnic_ucontext *uc = to_ruc(ibuc);
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_ALLOC_UCTX };
	struct rnic_alloc_ucontext_resp resp = {};
	struct rdma_user_mmap_entry *entry;
	struct rnic_admin_cqe cqe;
	u64 key;
	int ret;

	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, &cqe);
	if (ret)
		return ret == -ENOMEM ? -EMFILE : ret;
	uc->uctx = le32_to_cpu(cqe.result0);
	if (!uc->uctx || uc->uctx >= rdev->caps.db_pages) {
		ibdev_err(&rdev->ibdev, "device gave user context %u (of %u)\n",
			  uc->uctx, rdev->caps.db_pages);
		ret = -EIO;
		goto err_free_uctx;
	}

	entry = rnic_mmap_db_insert(rdev, uc, &key);
	if (IS_ERR(entry)) {
		ret = PTR_ERR(entry);
		goto err_free_uctx;
	}
	uc->db_entry = entry;

	resp.uctx = uc->uctx;
	resp.db_size = RNIC_DB_PAGE_SIZE;
	resp.db_key = key;
	resp.max_qp_wr = rdev->caps.max_qp_wr;
	resp.max_sge = rdev->caps.max_sge;
	resp.max_inline = rdev->caps.max_inline;
	resp.max_cqe = rdev->caps.max_cqe;
	resp.max_srq_wr = rdev->caps.max_srq_wr;
	resp.abi_version = rdev->caps.abi_version;
	resp.caps = rdev->caps.caps;
	resp.max_map_segs = rnic_has_mapped(rdev) ? rdev->caps.max_map_segs : 0;
	ret = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (ret)
		goto err_entry;
	return 0;

err_entry:
	rdma_user_mmap_entry_remove(uc->db_entry);
err_free_uctx:
	rnic_cmd_simple(rdev, RNIC_CMD_FREE_UCTX, RNIC_UCTX_KERNEL, uc->uctx, 0);
	return ret;
}

static void rnic_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct rnic_dev *rdev = to_rdev(ibuc->device);
	struct rnic_ucontext *uc = to_ruc(ibuc);
	int ret;

	rdma_user_mmap_entry_remove(uc->db_entry);
	ret = rnic_cmd_simple(rdev, RNIC_CMD_FREE_UCTX, RNIC_UCTX_KERNEL,
			      uc->uctx, 0);
	if (ret && ret != -EIO)
		ibdev_warn(&rdev->ibdev, "FREE_UCTX %u failed (%d)\n",
			   uc->uctx, ret);
}

/*
 * Device removal (rmmod, recovery) with user contexts still open: the core
 * zaps every mapping (all made by rdma_user_mmap_io) and destroys the
 * objects; nothing else is held. Having this op lets removal proceed
 * instead of waiting for the processes to exit.
 */
static void rnic_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

/* ---------------------------------------------------------------------- */
/* Protection domains                                                     */
/* ---------------------------------------------------------------------- */

int rnic_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibpd->device);
	struct rnic_pd *pd = to_rpd(ibpd);
	struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_ALLOC_PD };
	struct rnic_alloc_pd_resp resp = {};
	struct rnic_admin_cqe cqe;
	int ret;

	pd->uctx = rnic_uctx_of(udata);
	/*
	 * The network (VLAN) of a PD is known only when its QPs get an
	 * address: a multi-network PD is bound by the device to the network
	 * of each RC QP's source GID. Older devices: the untagged network.
	 */
	pd->ctx = rnic_multi_net_pds(rdev) ? NULL : rdev->default_ctx;
	cmd.uctx = cpu_to_le32(pd->uctx);
	cmd.pd.net_ctx = cpu_to_le32(pd->ctx ? pd->ctx->handle :
					       RNIC_PD_MULTI_NET);
	ret = rnic_cmd_exec(rdev, &cmd, NULL, 0, NULL, 0, &cqe);
	if (ret)
		return ret;
	pd->handle = le32_to_cpu(cqe.result0);
	if (udata) {
		resp.pdn = pd->handle;
		ret = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (ret) {
			rnic_cmd_simple(rdev, RNIC_CMD_DEALLOC_PD, pd->uctx,
					pd->handle, 0);
			return ret;
		}
	}
	return 0;
}

int rnic_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct rnic_pd *pd = to_rpd(ibpd);
	int ret;

	ret = rnic_cmd_simple(to_rdev(ibpd->device), RNIC_CMD_DEALLOC_PD,
			      pd->uctx, pd->handle, 0);
	return ret == -EIO ? 0 : ret;
}

/* ---------------------------------------------------------------------- */
/* Address handles                                                        */
/* ---------------------------------------------------------------------- */

int rnic_av_from_ah_attr(struct rnic_dev *rdev, struct rnic_av *av,
			 const struct rdma_ah_attr *ah_attr)
{
	const struct ib_global_route *grh;

	if (!(rdma_ah_get_ah_flags(ah_attr) & IB_AH_GRH))
		return -EINVAL;	/* RoCE: every address has a GRH */
	grh = rdma_ah_read_grh(ah_attr);
	if (grh->sgid_index >= rdev->caps.gid_tbl_len)
		return -EINVAL;
	memset(av, 0, sizeof(*av));
	memcpy(av->dgid, grh->dgid.raw, sizeof(av->dgid));
	memcpy(av->dmac, ah_attr->roce.dmac, ETH_ALEN);
	av->sgid_index = grh->sgid_index;
	av->hop_limit = grh->hop_limit;
	av->flow_label = cpu_to_le32(grh->flow_label);
	av->traffic_class = grh->traffic_class;
	av->network_type = 0;	/* RoCEv2: IPv4-mapped or IPv6, by the GID */
	return 0;
}

int rnic_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		   struct ib_udata *udata)
{
	struct rnic_dev *rdev = to_rdev(ibah->device);
	struct rnic_ah *ah = to_rah(ibah);
	struct rnic_create_ah_resp resp = {};
	int ret;

	/* may run in atomic context: no admin command here */
	ret = rnic_av_from_ah_attr(rdev, &ah->av, init_attr->ah_attr);
	if (ret)
		return ret;
	if (udata) {
		BUILD_BUG_ON(sizeof(resp.av) != sizeof(ah->av));
		memcpy(resp.av, &ah->av, sizeof(resp.av));
		ret = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
	}
	return ret;
}

int rnic_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

int rnic_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *ah_attr)
{
	struct rnic_ah *ah = to_rah(ibah);

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_grh(ah_attr, NULL, le32_to_cpu(ah->av.flow_label),
			ah->av.sgid_index, ah->av.hop_limit,
			ah->av.traffic_class);
	rdma_ah_set_dgid_raw(ah_attr, ah->av.dgid);
	memcpy(ah_attr->roce.dmac, ah->av.dmac, ETH_ALEN);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Registration                                                           */
/* ---------------------------------------------------------------------- */

static const struct ib_device_ops rnic_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = RNIC_UVERBS_ABI_VERSION,

	.add_gid = rnic_add_gid,
	.alloc_mr = rnic_alloc_mr,
	.alloc_pd = rnic_alloc_pd,
	.alloc_ucontext = rnic_alloc_ucontext,
	.create_ah = rnic_create_ah,
	.create_cq = rnic_create_cq,
	.create_qp = rnic_create_qp,
	.create_user_ah = rnic_create_ah,
	.dealloc_pd = rnic_dealloc_pd,
	.dealloc_ucontext = rnic_dealloc_ucontext,
	.del_gid = rnic_del_gid,
	.dereg_mr = rnic_dereg_mr,
	.destroy_ah = rnic_destroy_ah,
	.destroy_cq = rnic_destroy_cq,
	.destroy_qp = rnic_destroy_qp,
	.disassociate_ucontext = rnic_disassociate_ucontext,
	.get_dev_fw_str = rnic_get_dev_fw_str,
	.get_dma_mr = rnic_get_dma_mr,
	.get_link_layer = rnic_get_link_layer,
	.get_port_immutable = rnic_get_port_immutable,
	.map_mr_sg = rnic_map_mr_sg,
	.mmap = rnic_mmap,
	.mmap_free = rnic_mmap_free,
	.modify_qp = rnic_modify_qp,
	.poll_cq = rnic_poll_cq,
	.post_recv = rnic_post_recv,
	.post_send = rnic_post_send,
	.query_ah = rnic_query_ah,
	.query_device = rnic_query_device,
	.query_pkey = rnic_query_pkey,
	.query_port = rnic_query_port,
	.query_qp = rnic_query_qp,
	.reg_user_mr = rnic_reg_user_mr,
	.req_notify_cq = rnic_req_notify_cq,
	.resize_cq = rnic_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, rnic_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, rnic_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, rnic_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, rnic_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, rnic_ucontext, ibuc),
};

/* Optional: UD multicast (RNIC_CAP_MCAST). */
static const struct ib_device_ops rnic_dev_mcast_ops = {
	.attach_mcast = rnic_attach_mcast,
	.detach_mcast = rnic_detach_mcast,
};

/* Optional: in-place re-registration (RNIC_CAP_REREG_MR). */
static const struct ib_device_ops rnic_dev_rereg_ops = {
	.rereg_user_mr = rnic_rereg_user_mr,
};

/* Optional: memory windows (RNIC_CAP_MW). */
static const struct ib_device_ops rnic_dev_mw_ops = {
	.alloc_mw = rnic_alloc_mw,
	.dealloc_mw = rnic_dealloc_mw,

	INIT_RDMA_OBJ_SIZE(ib_mw, rnic_mw, ibmw),
};

/* Optional: shared receive queues (RNIC_CAP_SRQ). */
static const struct ib_device_ops rnic_dev_srq_ops = {
	.create_srq = rnic_create_srq,
	.destroy_srq = rnic_destroy_srq,
	.modify_srq = rnic_modify_srq,
	.post_srq_recv = rnic_post_srq_recv,
	.query_srq = rnic_query_srq,

	INIT_RDMA_OBJ_SIZE(ib_srq, rnic_srq, ibsrq),
};

int rnic_ib_register(struct rnic_dev *rdev)
{
	struct ib_device *ibdev = &rdev->ibdev;
	struct rnic_port_attr pattr;
	int ret;

	ret = rnic_cmd_query_port(rdev, &pattr);
	if (ret) {
		dev_err(&rdev->pdev->dev, "QUERY_PORT failed (%d)\n", ret);
		return ret;
	}
	rdev->caps.port_max_mtu = le32_to_cpu(pattr.max_mtu);
	rdev->caps.gid_tbl_len = min(le32_to_cpu(pattr.gid_tbl_len),
				     rdev->caps.max_gid);
	rdev->caps.max_msg_sz = le32_to_cpu(pattr.max_msg_sz);
	rdev->caps.link_speed_mbps = le32_to_cpu(pattr.link_speed_mbps);

	/* sysfs parent: modalias (the provider's PCI match), rdma dev */
	ibdev->dev.parent = &rdev->pdev->dev;
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = rdev->num_eqs;
	ibdev->node_guid = cpu_to_be64(rdev->caps.node_guid);
	strscpy(ibdev->node_desc, "qemu-rnic", sizeof(ibdev->node_desc));
	ib_set_device_ops(ibdev, &rnic_dev_ops);
	if (rdev->caps.caps & RNIC_CAP_SRQ)
		ib_set_device_ops(ibdev, &rnic_dev_srq_ops);
	if (rdev->caps.caps & RNIC_CAP_MW)
		ib_set_device_ops(ibdev, &rnic_dev_mw_ops);
	if (rdev->caps.caps & RNIC_CAP_MCAST)
		ib_set_device_ops(ibdev, &rnic_dev_mcast_ops);
	if (rdev->caps.caps & RNIC_CAP_REREG_MR)
		ib_set_device_ops(ibdev, &rnic_dev_rereg_ops);
	rnic_dm_set_ops(rdev);

	if (rdev->netdev) {
		ret = ib_device_set_netdev(ibdev, rdev->netdev, 1);
		if (ret)
			return ret;
	}
	ret = rnic_stats_init(rdev);
	if (ret)
		return ret;
	dma_set_max_seg_size(&rdev->pdev->dev, UINT_MAX);
	/* a NULL DMA device would mean "virtual DMA" (software RDMA) */
	ret = ib_register_device(ibdev, "rnic%d", &rdev->pdev->dev);
	if (ret) {
		dev_err(&rdev->pdev->dev, "ib_register_device failed (%d)\n",
			ret);
		rnic_stats_fini(rdev);
		return ret;
	}
	rdev->ib_registered = true;
	return 0;
}

void rnic_ib_unregister(struct rnic_dev *rdev)
{
	if (!rdev->ib_registered)
		return;
	rdev->ib_registered = false;
	ib_unregister_device(&rdev->ibdev);
	rnic_stats_fini(rdev);
}
