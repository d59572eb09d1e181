/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU rnic device: an emulated RoCEv2 RDMA NIC (PCIe function).
 *
 * The device ABI (registers, rings, commands) is include/rnic/rnic-abi.h;
 * the hardware itself is the QEMU-independent engine in hw/rdma/rnic/engine.
 */
#ifndef HW_RDMA_RNIC_H
#define HW_RDMA_RNIC_H

#include "hw/pci/pci_device.h"
#include "net/net.h"
#include "qom/object.h"

#define TYPE_RNIC "rnic"
OBJECT_DECLARE_SIMPLE_TYPE(RnicState, RNIC)

typedef struct RnicEngine RnicEngine;

struct RnicState {
    PCIDevice parent_obj;

    MemoryRegion regs;          /* BAR0 */
    MemoryRegion doorbells;     /* BAR2 */
    NICState *nic;
    NICConf conf;
    QEMUBH *bh;                 /* runs the engine after doorbells */
    QEMUTimer *timer;           /* the engine's single deadline */

    RnicEngine *engine;

    /* properties */
    uint32_t max_net_ctx;
    uint32_t max_qp;
    uint32_t max_cq;
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_srq;
    uint32_t max_eq;
    uint32_t db_pages;
    uint32_t vectors;
    uint32_t max_qp_wr;
    uint32_t max_cqe;
    uint32_t max_sge;
    uint32_t max_inline;
    uint32_t max_mtu;
    uint32_t max_gid;
    uint32_t max_rd_atomic;
    uint32_t vendor_id;
    uint32_t device_id;

    /* migration: the engine's state image, valid around save/load only */
    uint32_t state_len;
    uint8_t *state_buf;
};

#endif /* HW_RDMA_RNIC_H */
