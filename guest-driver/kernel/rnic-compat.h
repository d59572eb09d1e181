/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where the RDMA core's API differs between the kernels rnic.ko builds
 * against: Debian bookworm's 6.1 and the 6.12 of bookworm-backports and
 * trixie (scripts/guest/build-image.sh --kernel). Nothing else goes here.
 */
#ifndef RNIC_COMPAT_H
#define RNIC_COMPAT_H

#include <linux/mmzone.h>
#include <linux/version.h>

/*
 * IBTA 1.5 Memory Placement Extensions came to the core in 6.2: the verbs
 * IB_WR_FLUSH / IB_WR_ATOMIC_WRITE, their completions, the MR access flags
 * IB_ACCESS_FLUSH_* and the device capabilities. Before, no consumer can
 * ask for them (uverbs refuses the access flags), so the driver neither
 * advertises nor accepts them; the device still has them.
 */
#define RNIC_IB_PLACEMENT (LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0))

#if RNIC_IB_PLACEMENT
#define RNIC_IB_ACCESS_FLUSH_GLOBAL IB_ACCESS_FLUSH_GLOBAL
#define RNIC_IB_ACCESS_FLUSH_PERSISTENT IB_ACCESS_FLUSH_PERSISTENT
#else
#define RNIC_IB_ACCESS_FLUSH_GLOBAL 0
#define RNIC_IB_ACCESS_FLUSH_PERSISTENT 0
#endif

/*
 * The largest coherent DMA buffer the page allocator can give: order
 * MAX_PAGE_ORDER (6.8+), MAX_ORDER (inclusive since 6.4), MAX_ORDER - 1
 * before.
 */
#if defined(MAX_PAGE_ORDER)
#define RNIC_MAX_RING_BYTES (PAGE_SIZE << MAX_PAGE_ORDER)
#elif LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
#define RNIC_MAX_RING_BYTES (PAGE_SIZE << MAX_ORDER)
#else
#define RNIC_MAX_RING_BYTES (PAGE_SIZE << (MAX_ORDER - 1))
#endif

/*
 * 6.11 passes create_cq the uverbs attribute bundle (the udata is its
 * driver_udata); before, the udata itself.
 */
#define RNIC_IB_CREATE_CQ_ATTRS (LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0))

#endif /* RNIC_COMPAT_H */
