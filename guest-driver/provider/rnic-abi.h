/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The uverbs commands of the rnic provider: the core part of each command
 * followed by rnic's udata (include/rnic/rnic-user-abi.h). No request
 * carries driver data but MODIFY_SRQ's (where the kernel writes the ring
 * of a resized SRQ) and REG_MR's of rnicdv_create_mkey (a mapped STag);
 * the responses do. ibv_alloc_dm() is ioctl-only and
 * its method has no udata: its response is the driver attribute
 * RNIC_ATTR_ALLOC_DM_RESP (rnic.c, rnic_alloc_dm()).
 *
 * <kernel-abi/rnic-user-abi.h> is made from the uapi header at build time
 * by rdma-core's make_abi_structs.py (CMakeLists.txt), as rdma-core does
 * for the kernel's own <rdma/<driver>-abi.h>.
 */
#ifndef RNIC_PROVIDER_ABI_H
#define RNIC_PROVIDER_ABI_H

#include <infiniband/kern-abi.h>
#include <rnic/rnic-user-abi.h>
#include <kernel-abi/rnic-user-abi.h>

DECLARE_DRV_CMD(urnic_alloc_pd, IB_USER_VERBS_CMD_ALLOC_PD,
		empty, rnic_alloc_pd_resp);
DECLARE_DRV_CMD(urnic_create_ah, IB_USER_VERBS_CMD_CREATE_AH,
		empty, rnic_create_ah_resp);
DECLARE_DRV_CMD(urnic_create_cq, IB_USER_VERBS_CMD_CREATE_CQ,
		empty, rnic_create_cq_resp);
DECLARE_DRV_CMD(urnic_create_cq_ex, IB_USER_VERBS_EX_CMD_CREATE_CQ,
		empty, rnic_create_cq_resp);
DECLARE_DRV_CMD(urnic_create_qp, IB_USER_VERBS_CMD_CREATE_QP,
		empty, rnic_create_qp_resp);
DECLARE_DRV_CMD(urnic_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ,
		empty, rnic_create_srq_resp);
DECLARE_DRV_CMD(urnic_modify_srq, IB_USER_VERBS_CMD_MODIFY_SRQ,
		rnic_modify_srq, empty);
DECLARE_DRV_CMD(urnic_get_context, IB_USER_VERBS_CMD_GET_CONTEXT,
		empty, rnic_alloc_ucontext_resp);
/* rnicdv_create_mkey: RNIC_UREG_MR_MAPPED (ABI 1.6) */
DECLARE_DRV_CMD(urnic_reg_mr, IB_USER_VERBS_CMD_REG_MR,
		rnic_reg_mr, empty);
DECLARE_DRV_CMD(urnic_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		empty, rnic_create_cq_resp);

#endif /* RNIC_PROVIDER_ABI_H */
