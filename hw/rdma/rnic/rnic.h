/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU rnic device: an emulated RoCEv2 RDMA NIC (PCIe function). The
 * device's private header, beside it as hw/nvme keeps nvme.h: the state
 * of the glue files rnic-pci.c and rnic-window.c.
 *
 * The device ABI (registers, rings, commands) is include/rnic/rnic-abi.h;
 * the hardware itself is the QEMU-independent engine in hw/rdma/rnic/engine.
 */
#ifndef HW_RDMA_RNIC_H
#define HW_RDMA_RNIC_H

#include "qemu/log.h"
#include "hw/pci/pci_device.h"
#include "system/hostmem.h"
#include "net/net.h"
#include "qom/object.h"
#include "hw/rdma/rnic/engine/rnic-engine.h"

#define TYPE_RNIC "rnic"
OBJECT_DECLARE_SIMPLE_TYPE(RnicState, RNIC)

/*
 * The guest's mistakes seen by the glue (rnic-pci.c, rnic-window.c): the
 * trace event rnic_ub_<what> (trace_call) and, with -d guest_errors, the
 * message "rnic: <fmt>" in the log. The engine reports its own as
 * events (rnic_host_event() logs those of class UB).
 */
#define RNIC_GUEST_ERROR(trace_call, fmt, ...)                              \
    do {                                                                    \
        trace_call;                                                         \
        qemu_log_mask(LOG_GUEST_ERROR, "rnic: " fmt "\n", ## __VA_ARGS__);  \
    } while (0)

/* The memory window, BAR4 (rnic-window.c). */
typedef struct RnicWindow {
    HostMemoryBackend *backend; /* property scm, NULL: no window */
    bool powerfail;             /* property scm-powerfail: power-cut works */
    MemoryRegion *mr;           /* the backend's, once set up */
    uint8_t *host;
    uint64_t size;
    bool persistent;            /* a shared memory-backend-file */
    bool pmem;                  /* ... with pmem=on: pmem_persist, no msync */
    uint8_t *durable;           /* scm-powerfail: the bytes as persisted */
    Error *blocker;             /* scm-powerfail: no migration */
} RnicWindow;

struct RnicState {
    PCIDevice parent_obj;

    MemoryRegion bar0;          /* BAR0: registers, MSI-X table and PBA */
    MemoryRegion regs;
    MemoryRegion doorbells;     /* BAR2 */
    RnicWindow window;          /* BAR4 */
    NICState *nic;
    NICConf conf;
    QEMUBH *bh;                 /* runs the engine after doorbells */
    QEMUTimer *timer;           /* the engine's single deadline */

    RnicEngine *engine;

    /* properties: the engine's limits (mac comes from conf) */
    RnicEngineConfig cfg;

    /*
     * The engine works (DMA, transmit, timers) only while the VM runs: a
     * run asked for while it is stopped (or before an incoming migration
     * has started it) waits for the VM change-state handler.
     */
    VMChangeStateEntry *vm_state_entry;
    bool vm_running;
    bool run_deferred;          /* a run was asked for while stopped */
    bool doorbell_inline;       /* x-doorbell-inline: work in the MMIO write */
    bool wqe_cache;             /* x-wqe-cache: the WQE translation cache */
    uint64_t timer_deadline;    /* the engine's deadline, UINT64_MAX: none */
    /*
     * Engine calls from outside QEMU's re-entrancy guard (the timer, the
     * link-status callback) go through the guarded bottom half: these say
     * what it has to do besides a run.
     */
    bool timer_due;
    bool link_changed;
    /* a frame in one piece for a backend without receive_iov */
    uint8_t tx_frame[RNIC_CFG_MAX_MTU + RNIC_ETH_OVERHEAD];
    bool tx_frame_busy;         /* in use by a send further up the stack */

    /* migration: the engine's state image, valid around save/load only */
    uint32_t state_len;
    uint8_t *state_buf;
    /* ... and its configuration record (early-setup section rnic-config) */
    uint32_t config_len;
    uint8_t *config_buf;
};

/* rnic-window.c */
bool rnic_window_setup(RnicState *s, Error **errp);     /* before the engine */
bool rnic_window_realize(RnicState *s, Error **errp);
void rnic_window_exit(RnicState *s);
void *rnic_window_ptr(RnicState *s, uint64_t addr, uint64_t len);
void rnic_window_persist(void *opaque, uint64_t off, uint64_t len);
void rnic_window_class_init(ObjectClass *oc);

#endif /* HW_RDMA_RNIC_H */
