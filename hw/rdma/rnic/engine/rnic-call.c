/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the call boundary. Every entry point (register write,
 * doorbell, run, receive, timer, link change) enters and leaves here: the
 * work of the call is counted against its bound, durable writes are made
 * durable and a deferred DEV_CTRL write done before the outermost call
 * returns. What the engine asks of its host during a call is here too:
 * the host memory account, the schedule of a run and its work queue,
 * interrupts and guest-to-guest DMA copies.
 */
#include <string.h>
#include "rnic-engine-int.h"

/* ---------------------------------------------------------------------- */
/* Enter and leave                                                        */
/* ---------------------------------------------------------------------- */

void rnic_engine_leave(RnicEngine *e)
{
    if (e->depth == 1 && e->scm.npending) {
        rnic_scm_persist_pending(e);   /* durable writes: not past the call */
    }
    if (e->depth == 1) {
        rnic_call_account(e);
    }
    if (--e->depth == 0 && e->ctrl_deferred) {
        e->ctrl_deferred = false;
        rnic_regs_ctrl_write(e, e->ctrl_value);
    }
}

/* ---------------------------------------------------------------------- */
/* Work per call                                                          */
/* ---------------------------------------------------------------------- */

/*
 * A phase's budget: the loops of a phase (admin commands, queue visits,
 * a visit's WQEs, persist chunks) start nothing more once one figure is
 * reached. 2^18 page-list entries are 2 MiB of DMA (8 fast-registers of
 * 32768 pages); 16 MiB and 16384 frames are what 256 queue visits of 64
 * KiB of requests always allowed; 16 MiB persisted is one host persist
 * (RNIC_SCM_CHUNK), 4 to 25 ms of msync of a file-backed window on a
 * disk as measured (docs/benchmarks.md, bench-bounds).
 */
#define RNIC_PHASE_WQES         1024
#define RNIC_PHASE_FRAMES       16384
#define RNIC_PHASE_ENTRIES      (1ull << 18)
#define RNIC_PHASE_DMA          (16ull << 20)
#define RNIC_PHASE_PERSIST      (16ull << 20)

const RnicCallWork rnic_phase_budget = {
    .wqes = RNIC_PHASE_WQES,
    .frames = RNIC_PHASE_FRAMES,
    .entries = RNIC_PHASE_ENTRIES,
    .dma_bytes = RNIC_PHASE_DMA,
    .persist_bytes = RNIC_PHASE_PERSIST,
};

/*
 * The most one piece of work may add after the budget's check let it
 * start: a maximal REG_MR (2^20 entries) or a mapped registration of 4096
 * interleaved segments (4096^2 / 8 pair checks) with a registration-log
 * compaction (max_mr records, at most 2^24); a QP flush turn (256 send
 * and 256 receive WQEs, a CQE each); a queue visit's 64 packets, each
 * answered on a loopback peer by up to 64 READ responses and an ACK; 64
 * READ responses of 4 KiB and a 64 KiB WQE with its bounce copy; a
 * persist chunk (16 MiB) and the durable writes a phase placed.
 */
#define RNIC_ITEM_WQES          (2 * 256 + 64)
#define RNIC_ITEM_FRAMES        (64 * 66)
#define RNIC_ITEM_ENTRIES       ((1ull << 21) + (1ull << 20) + (1ull << 24))
#define RNIC_ITEM_DMA           (64 * 66 * 4096ull + (128ull << 10))
#define RNIC_ITEM_PERSIST       ((16ull << 20) + 64 * 66 * 4096ull)

/*
 * The bound of a call of n phases (a run: post-load prompt, admin, queues,
 * Ethernet; every other call one).
 */
#define RNIC_CALL_BOUND(n) {                                                \
    .wqes = (n) * (RNIC_PHASE_WQES + RNIC_ITEM_WQES),                       \
    .frames = (n) * (RNIC_PHASE_FRAMES + RNIC_ITEM_FRAMES),                 \
    .entries = (n) * (RNIC_PHASE_ENTRIES + RNIC_ITEM_ENTRIES),              \
    .dma_bytes = (n) * (RNIC_PHASE_DMA + RNIC_ITEM_DMA),                    \
    .persist_bytes = (n) * (RNIC_PHASE_PERSIST + RNIC_ITEM_PERSIST),        \
}

static const RnicCallWork rnic_call_bounds[RNIC_CALL_COUNT] = {
    [RNIC_CALL_REG] = RNIC_CALL_BOUND(1),
    [RNIC_CALL_DOORBELL] = RNIC_CALL_BOUND(1),
    [RNIC_CALL_RUN] = RNIC_CALL_BOUND(4),
    [RNIC_CALL_RECEIVE] = RNIC_CALL_BOUND(1),
    [RNIC_CALL_TIMER] = RNIC_CALL_BOUND(1),
    [RNIC_CALL_LINK] = RNIC_CALL_BOUND(1),
};

const RnicCallWork *rnic_engine_call_bound(RnicCall call)
{
    return call < RNIC_CALL_COUNT ? &rnic_call_bounds[call] : NULL;
}

const char *rnic_call_name(RnicCall call)
{
    static const char *const names[RNIC_CALL_COUNT] = {
        [RNIC_CALL_REG] = "register write",
        [RNIC_CALL_DOORBELL] = "doorbell",
        [RNIC_CALL_RUN] = "run",
        [RNIC_CALL_RECEIVE] = "receive",
        [RNIC_CALL_TIMER] = "timer",
        [RNIC_CALL_LINK] = "link change",
    };

    return call < RNIC_CALL_COUNT ? names[call] : "?";
}

void rnic_call_account(RnicEngine *e)
{
    static const char *const figures[] = {
        "WQEs", "frames", "page-list entries", "DMA bytes", "persisted bytes",
    };
    const RnicCallWork *bound = rnic_engine_call_bound(e->call_kind);
    const RnicCallWork *c = &e->call;
    RnicCallWork *max = &e->call_max[e->call_kind];
    const uint64_t v[] = {
        c->wqes, c->frames, c->entries, c->dma_bytes, c->persist_bytes,
    };
    const uint64_t b[] = {
        bound->wqes, bound->frames, bound->entries, bound->dma_bytes,
        bound->persist_bytes,
    };
    bool over = false;
    unsigned i;

    G_STATIC_ASSERT(G_N_ELEMENTS(figures) == G_N_ELEMENTS(v));
    rnic_call_work_max(max, c);
    for (i = 0; i < G_N_ELEMENTS(v); i++) {
        if (v[i] > b[i]) {
            rnic_event(e, ERR_CALL_BOUND, figures[i], e->call_kind, i, v[i],
                       b[i]);
            over = true;
        }
    }
    e->call_overruns += over;
}

void rnic_engine_call_max(const RnicEngine *e, RnicCall call,
                          RnicCallWork *max)
{
    if (call < RNIC_CALL_COUNT) {
        *max = e->call_max[call];
    }
}

uint64_t rnic_engine_call_overruns(const RnicEngine *e)
{
    return e->call_overruns;
}

/* ---------------------------------------------------------------------- */
/* What a call asks of the host                                           */
/* ---------------------------------------------------------------------- */

bool rnic_mem_charge(RnicEngine *e, uint64_t bytes)
{
    uint64_t budget = (uint64_t)e->cfg.mem_budget_mib << 20;

    if (bytes <= budget && e->mem_used > budget - bytes && e->wqc_bytes) {
        /*
         * WQE caches are derived state: they give way to what the guest
         * asks for (the same commands succeed with the cache off)
         */
        rnic_wqc_reclaim(e);
    }
    if (bytes > budget || e->mem_used > budget - bytes) {
        rnic_event(e, ERR_MEM_BUDGET, "host memory budget reached", bytes,
                   e->cfg.mem_budget_mib, e->mem_used);
        return false;
    }
    e->mem_used += bytes;
    return true;
}

void rnic_mem_release(RnicEngine *e, uint64_t bytes)
{
    g_assert(bytes <= e->mem_used);
    e->mem_used -= bytes;
}

uint64_t rnic_engine_mem_used(const RnicEngine *e)
{
    return e->mem_used;
}

void rnic_engine_schedule(RnicEngine *e)
{
    if (!e->run_scheduled) {
        e->run_scheduled = true;
        if (!e->run_inline) {
            /* inline: rnic_engine_doorbell() schedules what is left */
            e->ops->schedule(e->opaque);
        }
    }
}

void rnic_raise_irq(RnicEngine *e, unsigned vector)
{
    if (vector >= e->cfg.msix_vectors) {
        rnic_event(e, UB_VECTOR, "interrupt vector beyond the vectors",
                   vector, e->cfg.msix_vectors);
        return;
    }
    e->ops->raise_irq(e->opaque, vector);
}

void rnic_work_queue(RnicEngine *e, RnicWork *w)
{
    if (!rnic_link_linked(&w->link)) {
        rnic_list_add_tail(&e->work, &w->link);
    }
    rnic_engine_schedule(e);
}

/* Below this size a copy through the bounce buffer beats mapping. */
#define RNIC_MAP_MIN 1024

/*
 * Guest-to-guest copy. Both sides mapped: memmove between them, since a
 * guest may name overlapping source and destination (a WRITE within one
 * buffer, or two guest addresses of the same host memory) and a copy of
 * overlapping bytes must not be memcpy's. Otherwise through the bounce
 * buffer.
 */
int rnic_dma_copy(RnicEngine *e, uint64_t dst, uint64_t src, uint64_t len)
{
    const RnicHostOps *ops = e->ops;

    while (len) {
        uint64_t n = len, m;
        void *p = NULL, *q = NULL;

        if (ops->dma_map && len >= RNIC_MAP_MIN) {
            p = ops->dma_map(e->opaque, dst, &n, true);
        }
        if (p) {
            m = n;
            q = ops->dma_map(e->opaque, src, &m, false);
            if (!q) {
                ops->dma_unmap(e->opaque, p, n, true, 0);
                p = NULL;
            }
        }
        if (p) {
            uint64_t k = MIN(n, m);

            memmove(p, q, k);
            ops->dma_unmap(e->opaque, q, m, false, k);
            ops->dma_unmap(e->opaque, p, n, true, k);
            n = k;
        } else {
            n = MIN(len, RNIC_BOUNCE_SIZE);
            if (rnic_dma_read(e, src, e->bounce, n) ||
                rnic_dma_write(e, dst, e->bounce, n)) {
                return -1;
            }
        }
        dst += n;
        src += n;
        len -= n;
    }
    return 0;
}
