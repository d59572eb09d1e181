/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: lifetime, configuration, reset and the run (its calls'
 * boundary and what they ask of the host: rnic-call.c).
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
