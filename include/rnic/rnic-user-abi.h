/* SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB) */
/*
 * rnic: the private ABI between the kernel driver (rnic.ko) and its
 * rdma-core provider (librnic), carried in the udata of uverbs commands.
 * A uapi header, as the kernel's include/uapi/rdma/<driver>-abi.h: only
 * <linux/types.h> types, nothing of the kernel's internals.
 *
 * The provider maps every ring with mmap() at the 'key' the kernel returns
 * (an rdma_user_mmap_entry offset) and rings doorbells in the one 4 KiB
 * doorbell page of its context. The ring and WQE/CQE formats are those of
 * the device ABI, rnic-abi.h.
 *
 * Layout rules: fixed-width types, 64-bit fields 8-byte aligned, explicit
 * padding, sizes multiple of 8. Responses may grow at the end (the kernel
 * copies min(outlen, sizeof)); requests likewise. The sizes are checked in
 * rnic.ko (rnic_main.c) and, with the uverbs core part, by the provider's
 * DECLARE_DRV_CMD (guest-driver/provider/rnic-abi.h).
 *
 * The provider's build turns each struct into a _STRUCT_<name> macro with
 * rdma-core's buildlib/make_abi_structs.py, which reads this file line by
 * line: inside a struct, a comment opens and closes on the same line.
 */
#ifndef RNIC_USER_ABI_H
#define RNIC_USER_ABI_H

#include <linux/types.h>

/* uverbs ABI version of this driver/provider pair (sysfs abi_version). */
#define RNIC_UVERBS_ABI_VERSION	1

/* ibv_open_device(): the context's doorbell page and device limits. */
struct rnic_alloc_ucontext_resp {
	__u32 uctx;			/* device user context (doorbell page no.) */
	__u32 db_size;			/* bytes to map at db_key (4096) */
	__aligned_u64 db_key;		/* mmap offset of the doorbell page */
	__u32 max_qp_wr;
	__u32 max_sge;
	__u32 max_inline;
	__u32 max_cqe;
	__u32 max_srq_wr;
	__u32 abi_version;		/* RNIC_ABI_VERSION of the device */
	/*
	 * ABI 1.5: the device's enum rnic_cap bits (RNIC_REG_CAPS_*); an
	 * older kernel leaves it 0
	 */
	__aligned_u64 caps;
	/*
	 * ABI 1.6: segments a mapped STag may have (rnic_device_attr's
	 * max_map_segs, with RNIC_CAP_MAPPED); an older kernel leaves it 0
	 */
	__u32 max_map_segs;
	__u32 reserved;
};

struct rnic_alloc_pd_resp {
	__u32 pdn;			/* device PD handle */
	__u32 reserved;
};

/*
 * ibv_create_cq() / ibv_resize_cq(): the kernel allocates the ring (the
 * device needs it DMA-contiguous); the provider maps ring_size bytes at
 * ring_key. After a resize the old mapping stays valid until munmap but
 * the device no longer writes it: switch to the new ring.
 */
struct rnic_create_cq_resp {
	__u32 cq_handle;		/* for the CQ doorbell */
	__u32 entries;			/* a power of two */
	__aligned_u64 ring_key;
	__aligned_u64 ring_size;
};

/*
 * ibv_create_qp(): ring sizes and WQE strides chosen by the kernel from
 * the requested capabilities. With an SRQ, the RQ fields are 0.
 */
struct rnic_create_qp_resp {
	__u32 qp_handle;		/* for the SQ/RQ doorbells */
	__u32 qpn;
	__u32 sq_entries;
	__u32 rq_entries;
	__u8 sq_wqe_shift;		/* log2 of the SQ WQE stride */
	__u8 rq_wqe_shift;
	__u8 reserved[6];
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_inline;
	__u32 reserved2;
	__aligned_u64 sq_key;
	__aligned_u64 sq_size;
	__aligned_u64 rq_key;
	__aligned_u64 rq_size;
};

struct rnic_create_srq_resp {
	__u32 srq_handle;
	__u32 entries;
	__u8 wqe_shift;
	__u8 reserved[3];
	__u32 max_sge;
	__aligned_u64 ring_key;
	__aligned_u64 ring_size;
};

/*
 * ibv_modify_srq() with IBV_SRQ_MAX_WR (RNIC_CAP_SRQ_RESIZE): the request
 * names where the kernel writes the new ring before the device switches
 * to it (the command has no response of its own; rxe does the same). The
 * device moves the WQEs not yet taken to it at their free-running indexes.
 */
struct rnic_modify_srq {
	__aligned_u64 resp_addr;	/* user address of rnic_modify_srq_resp */
};

struct rnic_modify_srq_resp {
	__aligned_u64 ring_key;
	__aligned_u64 ring_size;
	__u32 entries;
	__u32 reserved;
};

/* ibv_create_ah(): the address vector to copy into UD WQEs (struct rnic_av
 * of the device ABI, byte for byte). */
struct rnic_create_ah_resp {
	__u8 av[32];
};

/*
 * ibv_alloc_dm(): an allocation of the device's memory window (BAR4,
 * RNIC_CAP_SCM). The uverbs DM_ALLOC method has no udata of its own, so
 * the response is the driver attribute RNIC_ATTR_ALLOC_DM_RESP of that
 * method (an ioctl attribute in the driver namespace, mandatory). The
 * provider maps 'length' bytes at 'mmap_key' on the context's command fd:
 * the window's bytes themselves, write-combined. Regions of it are
 * registered with ibv_reg_dm_mr() (zero-based); their STag's key carries
 * the storage semantic (RNIC_SCM_STAG() of the device ABI).
 */
#define RNIC_ATTR_ALLOC_DM_RESP	0x1000	/* UVERBS_ID_DRIVER_NS | 0 */

struct rnic_alloc_dm_resp {
	__aligned_u64 mmap_key;		/* mmap offset of the allocation */
	__aligned_u64 length;		/* bytes mapped: the request, page-rounded */
};

/*
 * ibv_reg_mr() request (device ABI 1.6, RNIC_CAP_MAPPED). flags 0: an
 * ordinary registration of [start, start + length). RNIC_UREG_MR_MAPPED
 * (rnicdv_create_mkey): no memory is pinned, start and length are ignored;
 * the kernel allocates a mapped STag (ALLOC_MR of kind RNIC_MR_KIND_MAPPED)
 * with room for max_segs segments, owned by the context, invalid until a
 * REG_MR work request of one of the context's QPs registers it
 * (rnicdv_wr_mr_list / rnicdv_wr_mr_interleaved). ibv_dereg_mr() frees it.
 * The response's lkey/rkey are its STag with the key the kernel chose.
 */
#define RNIC_UREG_MR_MAPPED	(1u << 0)

struct rnic_reg_mr {
	__u32 flags;			/* RNIC_UREG_MR_* */
	__u32 max_segs;			/* MAPPED: 1 .. max_map_segs */
};

#endif /* RNIC_USER_ABI_H */
