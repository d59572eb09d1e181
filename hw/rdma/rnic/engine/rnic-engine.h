/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The rnic engine: the "hardware" of the emulated RNIC, independent of QEMU.
 *
 * Plain C11 + glib. The engine owns the device registers, the object tables,
 * the per-network mapping tables, the queue pairs and the transport. It
 * reaches its host (QEMU's PCI glue, the unit tests, the back-to-back
 * benchmark) only through RnicHostOps. It is not thread-safe: the host calls
 * it from one thread at a time (QEMU: under the BQL, from the main loop or
 * a vCPU's MMIO exit).
 */
#ifndef RNIC_ENGINE_H
#define RNIC_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <glib.h>

#include "rnic/rnic-abi.h"
#include "rnic-event.h"

typedef struct RnicEngine RnicEngine;


/*
 * How the engine reaches its host. Every callback gets 'opaque'.
 * dma_read/dma_write return 0, or -1 when the guest address range is not
 * accessible (the engine turns that into an error status, never a crash).
 */
typedef struct RnicHostOps {
    int (*dma_read)(void *opaque, uint64_t addr, void *buf, size_t len);
    int (*dma_write)(void *opaque, uint64_t addr, const void *buf, size_t len);
    /* Raise MSI-X vector 'vector' (already checked against the limit). */
    void (*raise_irq)(void *opaque, unsigned vector);
    /* Send one Ethernet frame (no FCS). */
    void (*transmit)(void *opaque, const struct iovec *iov, int iovcnt);
    /* Ask for rnic_engine_run() soon, outside the current call. */
    void (*schedule)(void *opaque);
    /* Call rnic_engine_timer_expired() at clock_ns() >= deadline_ns;
     * a new call replaces the previous deadline; UINT64_MAX cancels. */
    void (*timer_arm)(void *opaque, uint64_t deadline_ns);
    /* Guest time in nanoseconds; stops while the VM is stopped. */
    uint64_t (*clock_ns)(void *opaque);
    /*
     * Optional (may be NULL: no events): an event for the host's tracing
     * and logging (rnic-event.h); a->why lives until the call returns.
     */
    void (*event)(void *opaque, RnicEvent ev, const RnicEventArgs *a);
    /* Optional: is 'ev' wanted now? NULL: every event is. */
    bool (*event_enabled)(void *opaque, RnicEvent ev);
    /*
     * Optional (may be NULL): map guest range [addr, addr + *len) for direct
     * access during the current engine call, like dma_memory_map(); *len may
     * come back shorter. NULL result: not mappable, the engine falls back to
     * dma_read/dma_write. Every mapping is released with dma_unmap before the
     * engine call returns (access_len: bytes actually written).
     */
    void *(*dma_map)(void *opaque, uint64_t addr, uint64_t *len, bool is_write);
    void (*dma_unmap)(void *opaque, void *ptr, uint64_t len, bool is_write,
                      uint64_t access_len);
    /*
     * Optional (may be NULL): the Ethernet function can take frames again
     * after rnic_engine_can_receive() returned false or
     * rnic_engine_receive() refused a frame (QEMU: flush the frames queued
     * for the device). Called from inside an engine call (a register write
     * or rnic_engine_run); the host may call rnic_engine_receive from it.
     */
    void (*rx_ready)(void *opaque);
    /*
     * Optional (may be NULL): may the engine do the work a doorbell asks
     * for right away, inside rnic_engine_doorbell(), instead of through
     * schedule()? QEMU: yes while the VM runs (the vCPU's MMIO exit holds
     * the BQL), which saves a main-loop hand-over per posted message. The
     * engine does so only when no run is pending (ordering), and only a
     * bounded amount (RNIC_DB_INLINE_BUDGET); the rest goes to schedule().
     */
    bool (*run_now)(void *opaque);
    /*
     * The memory window (RnicEngineConfig.scm_pages): the engine reaches
     * byte 'off' of it at DMA address RNIC_SCM_DMA_BASE + off, through
     * dma_read, dma_write and dma_map like guest memory; the host routes
     * [RNIC_SCM_DMA_BASE, + scm_pages * 4 KiB) to the window. No guest
     * address is that high (page lists reaching it are refused).
     *
     * Optional (NULL when scm_persistent is false): make window bytes
     * [off, off + len) durable before returning (QEMU: memory_region_msync
     * of the backend). The engine calls it before it acknowledges what
     * needs persistence, batched per run.
     */
    void (*persist)(void *opaque, uint64_t off, uint64_t len);
} RnicHostOps;

#define RNIC_SCM_DMA_BASE   (1ull << 63)

/* Static configuration: the limits the device advertises. */
typedef struct RnicEngineConfig {
    uint32_t max_net_ctx;
    uint32_t max_qp;
    uint32_t max_cq;
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_srq;
    uint32_t max_eq;
    uint32_t db_pages;
    uint32_t msix_vectors;
    uint32_t max_qp_wr;
    uint32_t max_cqe;
    uint32_t max_sge;
    uint32_t max_inline;
    uint32_t max_mtu;
    uint32_t max_gid;
    uint32_t max_rd_atomic;
    uint32_t mem_budget_mib;    /* host memory the guest's objects may hold */
    uint8_t mac[6];
    uint32_t vendor_id;
    uint32_t device_id;
    /*
     * The device-owned memory window regions of kind SCM map: 4 KiB pages,
     * a power of two (the BAR), 0 for none; scm_persistent (0 or 1): the
     * host can make it durable (RnicHostOps.persist). Set by the host from
     * its memory backend, not by a property of their own.
     */
    uint32_t scm_pages;
    uint32_t scm_persistent;
} RnicEngineConfig;

/* Limits of the configuration values (checked by rnic_engine_config_check). */
#define RNIC_CFG_MAX_NET_CTX    4096
#define RNIC_CFG_MAX_QP         (1u << 20)
#define RNIC_CFG_MAX_CQ         (1u << 20)
#define RNIC_CFG_MAX_MR         (1u << 24)  /* 24-bit STag index */
#define RNIC_CFG_MAX_PD         (1u << 20)
#define RNIC_CFG_MAX_SRQ        (1u << 20)
#define RNIC_CFG_MAX_EQ         256
#define RNIC_CFG_MAX_VECTORS    2048        /* PCI MSI-X limit */
#define RNIC_CFG_MAX_QP_WR      (1u << 15)
#define RNIC_CFG_MAX_CQE        (1u << 20)
#define RNIC_CFG_MAX_SGE        32
#define RNIC_CFG_MAX_INLINE     960
#define RNIC_CFG_MAX_MTU        9000
#define RNIC_CFG_MAX_GID        256
#define RNIC_CFG_MAX_SCM_PAGES  (1u << 28)  /* 1 TiB */

/* Defaults (also the QEMU properties' defaults). */
#define RNIC_DEFAULT_MAX_NET_CTX    16
#define RNIC_DEFAULT_MAX_QP         1024
#define RNIC_DEFAULT_MAX_CQ         1024
#define RNIC_DEFAULT_MAX_MR         16384
#define RNIC_DEFAULT_MAX_PD         1024
#define RNIC_DEFAULT_MAX_SRQ        256
#define RNIC_DEFAULT_MAX_EQ         8
#define RNIC_DEFAULT_DB_PAGES       64
#define RNIC_DEFAULT_VECTORS        8
#define RNIC_DEFAULT_MAX_QP_WR      4096
#define RNIC_DEFAULT_MAX_CQE        65536
#define RNIC_DEFAULT_MAX_SGE        8
#define RNIC_DEFAULT_MAX_INLINE     256
#define RNIC_DEFAULT_MAX_MTU        9000
#define RNIC_DEFAULT_MAX_GID        128
#define RNIC_DEFAULT_MAX_RD_ATOMIC  16
/*
 * The host memory budget: what guest actions make the engine allocate
 * (page lists, MRs, QPs and their send-queue slots, CQs, EQs, SRQs, PDs,
 * network contexts with their mapping tables, registration-log records,
 * staging buffers) is accounted device-wide; a command that would pass
 * the budget fails with RNIC_ST_NO_RESOURCES.
 */
#define RNIC_DEFAULT_MEM_BUDGET_MIB 256
#define RNIC_CFG_MIN_MEM_BUDGET_MIB 16
#define RNIC_CFG_MAX_MEM_BUDGET_MIB (64u << 10)

/* Memory registration limits (QUERY_DEVICE reports them). */
#define RNIC_MR_MAX_SIZE            (1ull << 40)    /* bytes per region */
#define RNIC_MR_MAX_PAGES           (1u << 20)      /* page-list entries per region */
#define RNIC_MR_MAX_FAST_REG_PAGES  (RNIC_PBL_LEAF_ENTRIES * 64)
/* Mapped STags: segments of one, of the interleaved form (pairwise checked) */
#define RNIC_MAP_MAX_SEGS           4096
#define RNIC_MAP_MAX_INTERLEAVED    64
#define RNIC_PBL_BUDGET             (1u << 24)      /* page-list entries, device-wide */
#define RNIC_MAX_MSG_SIZE           (1u << 31)      /* bytes per message */

void rnic_engine_config_defaults(RnicEngineConfig *cfg);
/* Returns NULL when valid, else a newly allocated message (g_free it). */
char *rnic_engine_config_check(const RnicEngineConfig *cfg);

RnicEngine *rnic_engine_new(const RnicEngineConfig *cfg,
                            const RnicHostOps *ops, void *opaque);
void rnic_engine_free(RnicEngine *e);
const RnicEngineConfig *rnic_engine_config(const RnicEngine *e);
/*
 * The WQE translation cache (on by default; QEMU: x-wqe-cache): off for
 * comparisons, with the same results. Not part of the device's state.
 */
void rnic_engine_set_wqe_cache(RnicEngine *e, bool on);

/* Function-level reset: every object destroyed, registers to reset values. */
void rnic_engine_reset(RnicEngine *e);

/* Outcome of a register or doorbell access, for the host's logging. */
typedef enum RnicAccessResult {
    RNIC_ACCESS_OK = 0,
    RNIC_ACCESS_UNKNOWN_REG,    /* no register at this offset */
    RNIC_ACCESS_READ_ONLY,      /* write to a read-only register */
    RNIC_ACCESS_WRITE_ONLY,     /* read of a write-only register */
    RNIC_ACCESS_BAD_VALUE,      /* value refused (logged, ignored) */
    RNIC_ACCESS_NOT_NOW,        /* register locked in the current state */
    RNIC_ACCESS_BAD_DOORBELL,   /* doorbell offset, handle, owner or index */
} RnicAccessResult;

const char *rnic_access_result_str(RnicAccessResult r);

/* BAR0: aligned 32-bit accesses (the host checks size and alignment). */
RnicAccessResult rnic_engine_reg_read(RnicEngine *e, uint32_t offset,
                                      uint32_t *value);
RnicAccessResult rnic_engine_reg_write(RnicEngine *e, uint32_t offset,
                                       uint32_t value);

/* BAR2: one 64-bit doorbell store to 'offset' of doorbell page 'page'. */
RnicAccessResult rnic_engine_doorbell(RnicEngine *e, uint32_t page,
                                      uint32_t offset, uint64_t value);

/*
 * BAR2: one 64-bit load from 'offset' of a doorbell page: RNIC_DB_CLOCK
 * gives the device clock; every other offset is write-only.
 */
RnicAccessResult rnic_engine_doorbell_read(RnicEngine *e, uint32_t offset,
                                           uint64_t *value);

/* Do the work scheduled by doorbells (called from RnicHostOps.schedule). */
void rnic_engine_run(RnicEngine *e);
/* The deadline given to RnicHostOps.timer_arm has passed. */
void rnic_engine_timer_expired(RnicEngine *e);

/*
 * Bounded work per call (docs/spec.md §8, "Work per engine call"). The
 * engine counts what each call into it does and holds it against the
 * bound of its kind; a call that does more is an engine bug (a path that
 * forgot its budget), counted and reported as event UB_CALL_BOUND. The
 * unit tests and the fuzzers fail on one.
 */
typedef enum RnicCall {
    RNIC_CALL_REG,          /* rnic_engine_reg_write (admin doorbell incl.) */
    RNIC_CALL_DOORBELL,     /* rnic_engine_doorbell (with its inline work) */
    RNIC_CALL_RUN,          /* rnic_engine_run: admin run, queues, Ethernet */
    RNIC_CALL_RECEIVE,      /* rnic_engine_receive: one frame */
    RNIC_CALL_TIMER,        /* rnic_engine_timer_expired */
    RNIC_CALL_LINK,         /* rnic_engine_set_link */
    RNIC_CALL_COUNT
} RnicCall;

typedef struct RnicCallWork {
    uint64_t wqes;          /* work requests started, flushed, commands */
    uint64_t frames;        /* packets and frames sent or received */
    /* page-list entries read, segments checked, STag index probes, CQEs */
    uint64_t entries;
    uint64_t dma_bytes;     /* bytes moved to or from guest memory */
    uint64_t persist_bytes; /* bytes made durable (RnicHostOps.persist) */
} RnicCallWork;

/* Each figure of *max raised to w's where that is larger. */
static inline void rnic_call_work_max(RnicCallWork *max, const RnicCallWork *w)
{
    max->wqes = MAX(max->wqes, w->wqes);
    max->frames = MAX(max->frames, w->frames);
    max->entries = MAX(max->entries, w->entries);
    max->dma_bytes = MAX(max->dma_bytes, w->dma_bytes);
    max->persist_bytes = MAX(max->persist_bytes, w->persist_bytes);
}

const char *rnic_call_name(RnicCall call);
/* The stated bound of one call of kind 'call'. */
const RnicCallWork *rnic_engine_call_bound(RnicCall call);
/* The most one call of kind 'call' did, each figure on its own, so far. */
void rnic_engine_call_max(const RnicEngine *e, RnicCall call,
                          RnicCallWork *max);
/* Calls that did more than their bound, so far. */
uint64_t rnic_engine_call_overruns(const RnicEngine *e);

/* Bytes of host memory the guest's objects hold now (the budget's account). */
uint64_t rnic_engine_mem_used(const RnicEngine *e);
/*
 * The largest state image this engine can produce (a bound for the host
 * before it allocates a buffer for one from a migration stream).
 */
uint64_t rnic_engine_state_max(const RnicEngine *e);

/* Read a statistics counter (enum rnic_stat). */
uint64_t rnic_engine_stat(const RnicEngine *e, unsigned stat);

/*
 * Migration state image: a self-describing byte image of all guest-visible
 * state (never host pointers). save appends to 'out'; load replaces the
 * engine's state and returns false with *err set on a malformed or
 * incompatible image (the engine is then reset).
 */
void rnic_engine_save(RnicEngine *e, GByteArray *out);
bool rnic_engine_load(RnicEngine *e, const uint8_t *data, size_t len,
                      char **err);

/*
 * Before the switchover: the source's configuration travels at the start
 * of a migration (rnic_engine_save_config appends it to 'out') and the
 * destination checks that every state the source can be in fits it
 * (rnic_engine_check_config: false with *err set): the PCI layout (MSI-X
 * vectors, doorbell pages, IDs) identical, every limit at least the
 * source's, because the guest was told those. rnic-migrate.c.
 */
void rnic_engine_save_config(RnicEngine *e, GByteArray *out);
bool rnic_engine_check_config(RnicEngine *e, const uint8_t *data, size_t len,
                              char **err);

/* Inspection of the per-network mapping tables (monitor, traces, tests). */
typedef struct RnicNetCtxInfo {
    uint32_t handle;
    uint8_t net_type;           /* enum rnic_net_type */
    uint32_t net_id;            /* VLAN ID */
    uint32_t mrs;               /* mapping-table entries */
    uint32_t qps;
    uint32_t log_replayed;      /* log records the last load replayed */
} RnicNetCtxInfo;

typedef void RnicNetCtxInfoFn(void *opaque, const RnicNetCtxInfo *info);
void rnic_engine_foreach_net_ctx(RnicEngine *e, RnicNetCtxInfoFn *fn,
                                 void *opaque);
/*
 * Every network context's mapping table and QPs as text, one line per
 * context, entry and QP (docs/migration.md "Inspecting the tables");
 * g_free the result.
 */
char *rnic_engine_describe_tables(RnicEngine *e);

/*
 * Ethernet function (the wire side of the converged NIC).
 *
 * rnic_engine_receive: one frame from the segment (no FCS), as an iovec.
 * Returns true when the frame was taken (to the RDMA engine, to the RX
 * ring, or dropped and counted), false when it cannot be taken now: the
 * host keeps it and offers it again after RnicHostOps.rx_ready.
 * rnic_engine_can_receive: false while RX is enabled and no buffer is
 * posted (the host should queue frames; rx_ready follows).
 * rnic_engine_set_link: the host's link state (QEMU: !nc->link_down);
 * reflected in RNIC_STATUS_LINK_UP, kept across function resets.
 */
bool rnic_engine_receive(RnicEngine *e, const struct iovec *iov, int iovcnt);
bool rnic_engine_can_receive(RnicEngine *e);
void rnic_engine_set_link(RnicEngine *e, bool up);

#endif /* RNIC_ENGINE_H */
