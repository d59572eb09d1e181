/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rnic.ko's conventions for kernel ULPs: what struct ib_send_wr cannot say.
 *
 * The upstream struct ib_send_wr has no fields for the IBTA 1.5 Memory
 * Placement Extensions: neither a FLUSH's placement type and selectivity
 * nor an ATOMIC WRITE's 8 bytes. rnic.ko reads them from what the WR does
 * have (docs/usage.md, "Kernel ULPs: FLUSH and ATOMIC WRITE"):
 *
 *   IB_WR_ATOMIC_WRITE  a struct ib_rdma_wr (remote_addr, 8-byte aligned
 *                       or the responder refuses it; rkey) with exactly one
 *                       SGE of exactly 8 bytes and IB_SEND_INLINE:
 *                       sg_list[0].addr is then a kernel virtual address,
 *                       as for any inline send, and the 8 bytes are copied
 *                       into the WQE at post time (the lkey is ignored).
 *                       Anything else: -EINVAL.
 *   IB_WR_FLUSH         a struct ib_rdma_wr (remote_addr, rkey) with
 *                       num_sge 0: the whole region the rkey names
 *                       (IB_FLUSH_MR), or num_sge 1: the range
 *                       [remote_addr, remote_addr + sg_list[0].length)
 *                       (IB_FLUSH_RANGE; the SGE names no local memory, its
 *                       addr and lkey are ignored). Placement type global
 *                       visibility (IB_FLUSH_GLOBAL), or persistence
 *                       (IB_FLUSH_PERSISTENT) with RNIC_SEND_FLUSH_PERSISTENT
 *                       in send_flags; a region that does not allow the
 *                       type fails it with IB_WC_REM_ACCESS_ERR (and the QP
 *                       goes to ERR). No IB_SEND_INLINE, at most one SGE:
 *                       -EINVAL otherwise.
 * Both complete with IB_WC_ATOMIC_WRITE / IB_WC_FLUSH, are refused with
 * -EOPNOTSUPP by a device without IB_DEVICE_ATOMIC_WRITE /
 * IB_DEVICE_FLUSH_GLOBAL, and exist on RC QPs only (-EINVAL on UD).
 *
 * Why this header and not include/rnic/rnic-abi.h: the flag is a software
 * convention between rnic.ko and its kernel users (a bit of the
 * IB_SEND_RESERVED_START..END range that the core leaves to drivers), not
 * something the device sees; rnic-abi.h is the device's ABI, shared with
 * the device model and the rdma-core provider, and has no kernel-only
 * part. A ULP built outside this tree adds guest-driver/kernel to its
 * include path. Other drivers give these bits other meanings: a ULP sets
 * the flag on a WR for an rnic ib_device only.
 */
#ifndef RNIC_KERNEL_H
#define RNIC_KERNEL_H

#include <rdma/ib_verbs.h>

/* IB_WR_FLUSH: placement type persistence instead of global visibility */
#define RNIC_SEND_FLUSH_PERSISTENT	IB_SEND_RESERVED_START

#endif /* RNIC_KERNEL_H */
