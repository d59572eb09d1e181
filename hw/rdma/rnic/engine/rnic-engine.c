/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: lifetime, configuration, scheduling and host helpers.
 */
#include <string.h>
#include "rnic-engine-int.h"
#include "rnic-admin.h"
#include "rnic-state.h"

void rnic_engine_config_defaults(RnicEngineConfig *cfg)
{
    static const uint8_t default_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x60 };

    memset(cfg, 0, sizeof(*cfg));
    cfg->max_net_ctx = RNIC_DEFAULT_MAX_NET_CTX;
    cfg->max_qp = RNIC_DEFAULT_MAX_QP;
    cfg->max_cq = RNIC_DEFAULT_MAX_CQ;
    cfg->max_mr = RNIC_DEFAULT_MAX_MR;
    cfg->max_pd = RNIC_DEFAULT_MAX_PD;
    cfg->max_srq = RNIC_DEFAULT_MAX_SRQ;
    cfg->max_eq = RNIC_DEFAULT_MAX_EQ;
    cfg->db_pages = RNIC_DEFAULT_DB_PAGES;
    cfg->msix_vectors = RNIC_DEFAULT_VECTORS;
    cfg->max_qp_wr = RNIC_DEFAULT_MAX_QP_WR;
    cfg->max_cqe = RNIC_DEFAULT_MAX_CQE;
    cfg->max_sge = RNIC_DEFAULT_MAX_SGE;
    cfg->max_inline = RNIC_DEFAULT_MAX_INLINE;
    cfg->max_mtu = RNIC_DEFAULT_MAX_MTU;
    cfg->max_gid = RNIC_DEFAULT_MAX_GID;
    cfg->max_rd_atomic = RNIC_DEFAULT_MAX_RD_ATOMIC;
    cfg->mem_budget_mib = RNIC_DEFAULT_MEM_BUDGET_MIB;
    memcpy(cfg->mac, default_mac, sizeof(default_mac));
    cfg->vendor_id = RNIC_PCI_VENDOR_ID;
    cfg->device_id = RNIC_PCI_DEVICE_ID;
}

static char *check_range(const char *name, uint32_t v, uint32_t min,
                         uint32_t max)
{
    if (v < min || v > max) {
        return g_strdup_printf("%s=%u is out of range (%u..%u)", name, v, min, max);
    }
    return NULL;
}

char *rnic_engine_config_check(const RnicEngineConfig *cfg)
{
    const struct {
        const char *name;
        uint32_t v, min, max;
    } limits[] = {
        { "max-net-ctx", cfg->max_net_ctx, 1, RNIC_CFG_MAX_NET_CTX },
        { "max-qps", cfg->max_qp, 2, RNIC_CFG_MAX_QP },
        { "max-cqs", cfg->max_cq, 1, RNIC_CFG_MAX_CQ },
        { "max-mrs", cfg->max_mr, 1, RNIC_CFG_MAX_MR - 1 },
        { "max-pds", cfg->max_pd, 1, RNIC_CFG_MAX_PD },
        { "max-srqs", cfg->max_srq, 0, RNIC_CFG_MAX_SRQ },
        { "max-eqs", cfg->max_eq, 1, RNIC_CFG_MAX_EQ },
        { "doorbell-pages", cfg->db_pages, 1, RNIC_DB_PAGES_MAX },
        { "vectors", cfg->msix_vectors, 2, RNIC_CFG_MAX_VECTORS },
        { "max-qp-wr", cfg->max_qp_wr, 16, RNIC_CFG_MAX_QP_WR },
        { "max-cqe", cfg->max_cqe, 16, RNIC_CFG_MAX_CQE },
        { "max-sge", cfg->max_sge, 1, RNIC_CFG_MAX_SGE },
        { "max-inline", cfg->max_inline, 0, RNIC_CFG_MAX_INLINE },
        { "max-mtu", cfg->max_mtu, 1280, RNIC_CFG_MAX_MTU },
        { "max-gids", cfg->max_gid, 1, RNIC_CFG_MAX_GID },
        { "max-rd-atomic", cfg->max_rd_atomic, 1, 128 },
        { "memory-budget-mib", cfg->mem_budget_mib,
          RNIC_CFG_MIN_MEM_BUDGET_MIB, RNIC_CFG_MAX_MEM_BUDGET_MIB },
        { "scm size in pages", cfg->scm_pages, 0, RNIC_CFG_MAX_SCM_PAGES },
        { "scm persistence", cfg->scm_persistent, 0, 1 },
    };
    char *msg;
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(limits); i++) {
        msg = check_range(limits[i].name, limits[i].v, limits[i].min,
                          limits[i].max);
        if (msg) {
            return msg;
        }
    }
    if (cfg->vendor_id > 0xffff || cfg->vendor_id == 0xffff) {
        return g_strdup_printf("vendor-id=0x%x is not a valid PCI vendor ID",
                               cfg->vendor_id);
    }
    if (cfg->device_id > 0xffff) {
        return g_strdup_printf("device-id=0x%x is not a valid PCI device ID",
                               cfg->device_id);
    }
    if (cfg->mac[0] & 1) {
        return g_strdup("mac is a multicast address");
    }
    if (cfg->scm_pages & (cfg->scm_pages - 1)) {
        return g_strdup_printf("scm window of %u pages is not a power of two",
                               cfg->scm_pages);
    }
    if (cfg->scm_persistent && !cfg->scm_pages) {
        return g_strdup("scm persistence without a window");
    }
    /* one network context's mapping table must fit, with room to spare */
    if (rnic_mrt_bytes(cfg) > ((uint64_t)cfg->mem_budget_mib << 20) / 4) {
        return g_strdup_printf("memory-budget-mib=%u is too small for "
                               "max-mrs=%u (a network context's mapping "
                               "table takes %" G_GUINT64_FORMAT " KiB)",
                               cfg->mem_budget_mib, cfg->max_mr,
                               rnic_mrt_bytes(cfg) >> 10);
    }
    return NULL;
}

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

/*
 * Every object's image is smaller than twice what it holds in the account
 * (a send slot: 38 bytes of image, 32 of memory; a page-list entry 8 and
 * 8), and the image has a fixed part besides (registers, GIDs, counters).
 */
uint64_t rnic_engine_state_max(const RnicEngine *e)
{
    return 2 * ((uint64_t)e->cfg.mem_budget_mib << 20) + (16u << 20);
}

RnicEngine *rnic_engine_new(const RnicEngineConfig *cfg,
                            const RnicHostOps *ops, void *opaque)
{
    RnicEngine *e = g_new0(RnicEngine, 1);

    e->cfg = *cfg;
    e->ops = ops;
    e->opaque = opaque;
    e->rand = g_rand_new();
    e->wqc_on = true;
    e->bounce = g_malloc(RNIC_BOUNCE_SIZE);
    rnic_list_init(&e->work);
    rnic_transport_init(e);
    rnic_ctx_init(e);
    rnic_mr_init(e);
    rnic_cq_init(e);
    rnic_srq_init(e);
    rnic_qp_init(e);
    rnic_engine_reset(e);
    return e;
}

void rnic_engine_free(RnicEngine *e)
{
    if (!e) {
        return;
    }
    rnic_admin_objects_reset(e);
    rnic_qp_fini(e);
    rnic_srq_fini(e);
    rnic_cq_fini(e);
    rnic_mr_fini(e);
    rnic_ctx_fini(e);
    g_rand_free(e->rand);
    g_free(e->bounce);
    g_free(e);
}

const RnicEngineConfig *rnic_engine_config(const RnicEngine *e)
{
    return &e->cfg;
}

void rnic_engine_reset(RnicEngine *e)
{
    rnic_regs_reset(e);
    rnic_eth_reset(e);
    rnic_admin_objects_reset(e);
    rnic_doorbells_reset(e);
    rnic_transport_reset(e);
    memset(e->stats, 0, sizeof(e->stats));
    e->run_scheduled = false;
    e->ctrl_deferred = false;
    e->prompt_peers = false;
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

void rnic_engine_run(RnicEngine *e)
{
    rnic_engine_enter(e, RNIC_CALL_RUN);
    e->run_scheduled = false;
    if (e->prompt_peers) {
        rnic_state_prompt_peers(e);
    }
    rnic_admin_process(e);          /* each a phase (rnic_work_phase) */
    rnic_doorbells_process(e);
    rnic_work_phase(e);
    rnic_eth_run(e);
    rnic_engine_leave(e);
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

void rnic_raise_irq(RnicEngine *e, unsigned vector)
{
    if (vector >= e->cfg.msix_vectors) {
        rnic_event(e, UB_VECTOR, "interrupt vector beyond the vectors",
                   vector, e->cfg.msix_vectors);
        return;
    }
    e->ops->raise_irq(e->opaque, vector);
}

uint64_t rnic_engine_stat(const RnicEngine *e, unsigned stat)
{
    return stat < RNIC_STAT_COUNT ? e->stats[stat] : 0;
}

const char *rnic_access_result_str(RnicAccessResult result)
{
    switch (result) {
    case RNIC_ACCESS_OK:
        return "ok";
    case RNIC_ACCESS_UNKNOWN_REG:
        return "unknown register";
    case RNIC_ACCESS_READ_ONLY:
        return "write to a read-only register";
    case RNIC_ACCESS_WRITE_ONLY:
        return "read of a write-only register";
    case RNIC_ACCESS_BAD_VALUE:
        return "value refused";
    case RNIC_ACCESS_NOT_NOW:
        return "register locked while the device is enabled";
    case RNIC_ACCESS_BAD_DOORBELL:
        return "bad doorbell";
    }
    return "?";
}
