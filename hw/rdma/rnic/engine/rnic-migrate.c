/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the configuration check a migration destination makes
 * before the switchover.
 *
 * The state image (rnic-state.c) travels when the source has stopped; a
 * destination that cannot take it then fails the migration after the
 * guest's pause has begun. The configuration travels at the start instead
 * (QEMU: an early-setup vmstate section), so an incompatible destination
 * refuses while the source is still running:
 *  - the PCI layout the guest has programmed must be identical: MSI-X
 *    vectors (their table is migrated by size), doorbell pages (BAR2's
 *    size), vendor and device ID, the state image version;
 *  - every limit must be at least the source's: the guest was told those
 *    in RNIC_REG_MAX_* and QUERY_DEVICE and may create objects up to them
 *    at any time, also after the migration.
 *
 * Record: u32 magic, u32 version, u32 count, then count items of
 * { u16 id, u8 rule, u32 value } (rnic-image.h encoding). An item a
 * destination does not know is refused unless its rule is RNIC_CFG_INFO.
 */
#include <stddef.h>
#include "rnic-engine-int.h"
#include "rnic-image.h"

#define RNIC_CFG_MAGIC      0x47464352u /* "RCFG" */
#define RNIC_CFG_VERSION    1

enum rnic_cfg_rule {
    RNIC_CFG_EQUAL = 0,         /* destination's value must be the same */
    RNIC_CFG_AT_LEAST = 1,      /* destination's value >= source's */
    RNIC_CFG_INFO = 2,          /* not checked */
};

typedef struct RnicCfgItem {
    uint16_t id;                /* stable: part of the migration stream */
    uint8_t rule;
    const char *name;           /* the QEMU property */
    size_t offset;              /* uint32_t in RnicEngineConfig, or SIZE_MAX */
} RnicCfgItem;

#define RNIC_CFG_FIELD(f) offsetof(RnicEngineConfig, f)

static const RnicCfgItem rnic_cfg_items[] = {
    { 1, RNIC_CFG_EQUAL, "state image version", SIZE_MAX },
    { 2, RNIC_CFG_EQUAL, "vectors", RNIC_CFG_FIELD(msix_vectors) },
    { 3, RNIC_CFG_EQUAL, "doorbell-pages", RNIC_CFG_FIELD(db_pages) },
    { 4, RNIC_CFG_EQUAL, "vendor-id", RNIC_CFG_FIELD(vendor_id) },
    { 5, RNIC_CFG_EQUAL, "device-id", RNIC_CFG_FIELD(device_id) },
    { 6, RNIC_CFG_EQUAL, "scm window pages", RNIC_CFG_FIELD(scm_pages) },
    { 7, RNIC_CFG_EQUAL, "scm persistence", RNIC_CFG_FIELD(scm_persistent) },
    { 16, RNIC_CFG_AT_LEAST, "max-net-ctx", RNIC_CFG_FIELD(max_net_ctx) },
    { 17, RNIC_CFG_AT_LEAST, "max-qps", RNIC_CFG_FIELD(max_qp) },
    { 18, RNIC_CFG_AT_LEAST, "max-cqs", RNIC_CFG_FIELD(max_cq) },
    { 19, RNIC_CFG_AT_LEAST, "max-mrs", RNIC_CFG_FIELD(max_mr) },
    { 20, RNIC_CFG_AT_LEAST, "max-pds", RNIC_CFG_FIELD(max_pd) },
    { 21, RNIC_CFG_AT_LEAST, "max-srqs", RNIC_CFG_FIELD(max_srq) },
    { 22, RNIC_CFG_AT_LEAST, "max-eqs", RNIC_CFG_FIELD(max_eq) },
    { 23, RNIC_CFG_AT_LEAST, "max-qp-wr", RNIC_CFG_FIELD(max_qp_wr) },
    { 24, RNIC_CFG_AT_LEAST, "max-cqe", RNIC_CFG_FIELD(max_cqe) },
    { 25, RNIC_CFG_AT_LEAST, "max-sge", RNIC_CFG_FIELD(max_sge) },
    { 26, RNIC_CFG_AT_LEAST, "max-inline", RNIC_CFG_FIELD(max_inline) },
    { 27, RNIC_CFG_AT_LEAST, "max-mtu", RNIC_CFG_FIELD(max_mtu) },
    { 28, RNIC_CFG_AT_LEAST, "max-gids", RNIC_CFG_FIELD(max_gid) },
    { 29, RNIC_CFG_AT_LEAST, "max-rd-atomic", RNIC_CFG_FIELD(max_rd_atomic) },
    { 30, RNIC_CFG_AT_LEAST, "memory-budget-mib",
      RNIC_CFG_FIELD(mem_budget_mib) },
};

static uint32_t rnic_cfg_value(const RnicEngine *e, const RnicCfgItem *it)
{
    if (it->offset == SIZE_MAX) {
        return RNIC_IMAGE_VERSION;
    }
    return *(const uint32_t *)((const char *)&e->cfg + it->offset);
}

static const RnicCfgItem *rnic_cfg_item_find(uint16_t id)
{
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(rnic_cfg_items); i++) {
        if (rnic_cfg_items[i].id == id) {
            return &rnic_cfg_items[i];
        }
    }
    return NULL;
}

void rnic_engine_save_config(RnicEngine *e, GByteArray *out)
{
    RnicImageWriter w = { .out = out };
    size_t i;

    rnic_image_put_u32(&w, RNIC_CFG_MAGIC);
    rnic_image_put_u32(&w, RNIC_CFG_VERSION);
    rnic_image_put_u32(&w, G_N_ELEMENTS(rnic_cfg_items));
    for (i = 0; i < G_N_ELEMENTS(rnic_cfg_items); i++) {
        rnic_image_put_u16(&w, rnic_cfg_items[i].id);
        rnic_image_put_u8(&w, rnic_cfg_items[i].rule);
        rnic_image_put_u32(&w, rnic_cfg_value(e, &rnic_cfg_items[i]));
    }
}

bool rnic_engine_check_config(RnicEngine *e, const uint8_t *data, size_t len,
                              char **err)
{
    RnicImageReader rd = { .data = data, .len = len };
    uint32_t magic, version, n, i;

    *err = NULL;
    magic = rnic_image_get_u32(&rd);
    version = rnic_image_get_u32(&rd);
    n = rnic_image_get_u32(&rd);
    if (rd.overrun || magic != RNIC_CFG_MAGIC || version != RNIC_CFG_VERSION) {
        *err = g_strdup("not an rnic configuration record this device reads");
        return false;
    }
    for (i = 0; i < n; i++) {
        uint16_t id = rnic_image_get_u16(&rd);
        uint8_t rule = rnic_image_get_u8(&rd);
        uint32_t src = rnic_image_get_u32(&rd);
        const RnicCfgItem *it;
        uint32_t dst;

        if (rd.overrun) {
            break;
        }
        it = rnic_cfg_item_find(id);
        if (!it) {
            if (rule == RNIC_CFG_INFO) {
                continue;
            }
            *err = g_strdup_printf("the source's configuration item %u is "
                                   "unknown to this device (a newer rnic?)",
                                   id);
            return false;
        }
        dst = rnic_cfg_value(e, it);
        if (it->rule == RNIC_CFG_EQUAL && dst != src) {
            *err = g_strdup_printf("%s is %u here but %u on the source: it "
                                   "must be the same", it->name, dst, src);
            return false;
        }
        if (it->rule == RNIC_CFG_AT_LEAST && dst < src) {
            *err = g_strdup_printf("%s=%u is below the source's %u (the "
                                   "guest was told %u): start the "
                                   "destination with %s=%u or more",
                                   it->name, dst, src, src, it->name, src);
            return false;
        }
    }
    if (rd.overrun || rd.pos != rd.len) {
        *err = g_strdup("configuration record truncated or too long");
        return false;
    }
    return true;
}
