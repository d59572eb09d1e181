/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine internals, shared by the engine's source files only.
 */
#ifndef RNIC_ENGINE_INT_H
#define RNIC_ENGINE_INT_H

#include <stdarg.h>
#include "rnic-engine.h"

/* Guest-visible register state (everything BAR0 exposes that is writable
 * or changes at run time). Part of the migration image. */
typedef struct RnicRegs {
    uint32_t dev_ctrl;
    uint32_t dev_status;
    uint32_t fatal_code;
    uint32_t scratch;
    uint8_t mac[6];
    uint64_t aq_base;
    uint64_t acq_base;
    uint32_t aq_size_log2;
    uint32_t aq_tail;           /* producer, written by the driver */
    uint32_t aq_head;           /* consumer, advanced by the device */
    uint32_t acq_tail;          /* device's completion producer */
    uint32_t acq_head;          /* driver's completion consumer */
    uint64_t heartbeat_base_ns; /* clock at reset */
} RnicRegs;


struct RnicEngine {
    RnicEngineConfig cfg;
    const RnicHostOps *ops;
    void *opaque;

    RnicRegs regs;
    uint64_t stats[RNIC_STAT_COUNT];
    bool run_scheduled;

    /* Doorbells recorded since the last rnic_engine_run(), in order. */
    GArray *db_queue;           /* of RnicDoorbellEvent */
};

/* Pending doorbell, queued by rnic_engine_doorbell(). */
typedef struct RnicDoorbellEvent {
    uint32_t page;
    uint32_t offset;            /* enum rnic_db_offset */
    uint32_t handle;
    uint32_t flags;
    uint32_t index;
} RnicDoorbellEvent;

/* Logging helpers: messages go to RnicHostOps.log. */
void rnic_log(RnicEngine *e, RnicLogKind kind, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
#define rnic_guest_error(e, ...) rnic_log((e), RNIC_LOG_GUEST_ERROR, __VA_ARGS__)

static inline void rnic_stat_inc(RnicEngine *e, enum rnic_stat s)
{
    e->stats[s]++;
}

void rnic_engine_schedule(RnicEngine *e);
void rnic_raise_irq(RnicEngine *e, unsigned vector);

/* rnic-regs.c */
void rnic_regs_reset(RnicEngine *e);

/* rnic-doorbell.c */
void rnic_doorbells_reset(RnicEngine *e);
void rnic_doorbells_process(RnicEngine *e);

#endif /* RNIC_ENGINE_INT_H */
