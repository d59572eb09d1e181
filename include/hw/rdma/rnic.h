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
#include "hw/rdma/rnic/engine/rnic-engine.h"

#define TYPE_RNIC "rnic"
OBJECT_DECLARE_SIMPLE_TYPE(RnicState, RNIC)

struct RnicState {
    PCIDevice parent_obj;

    MemoryRegion regs;          /* BAR0 */
    MemoryRegion doorbells;     /* BAR2 */
    NICState *nic;
    NICConf conf;
    QEMUBH *bh;                 /* runs the engine after doorbells */
    QEMUTimer *timer;           /* the engine's single deadline */

    RnicEngine *engine;

    /* properties: the engine's limits (mac comes from conf) */
    RnicEngineConfig cfg;

    /* migration: the engine's state image, valid around save/load only */
    uint32_t state_len;
    uint8_t *state_buf;
};

#endif /* HW_RDMA_RNIC_H */
