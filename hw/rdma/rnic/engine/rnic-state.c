/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the migration state image of the whole device.
 *
 * Each piece of state is one section with a save, a load and a dump
 * function, which walk the same field tables (rnic-image.h). Loading
 * resets the engine, then replays the sections in order; anything
 * inconsistent makes the load fail with a message (the engine is left
 * reset), it never trusts the stream. The dump needs no engine: it prints
 * what an image holds, whether a load would accept it or not.
 */
#include <string.h>
#include "rnic-engine-int.h"
#include "rnic-image.h"
#include "rnic-state.h"

static const RnicImageField rnic_regs_fields[] = {
    RNIC_IMG_U32(RnicRegs, dev_ctrl),
    RNIC_IMG_U32(RnicRegs, dev_status),
    RNIC_IMG_U32(RnicRegs, fatal_code),
    RNIC_IMG_U32(RnicRegs, scratch),
    RNIC_IMG_BYTES(RnicRegs, mac),
    RNIC_IMG_U64(RnicRegs, aq_base),
    RNIC_IMG_U64(RnicRegs, acq_base),
    RNIC_IMG_U32(RnicRegs, aq_size_log2),
    RNIC_IMG_U32(RnicRegs, aq_tail),
    RNIC_IMG_U32(RnicRegs, aq_head),
    RNIC_IMG_U32(RnicRegs, acq_tail),
    RNIC_IMG_U32(RnicRegs, acq_head),
    RNIC_IMG_END
};

static void rnic_regs_save(RnicEngine *e, RnicImageWriter *w)
{
    const RnicRegs *r = &e->regs;

    rnic_image_put_fields(w, rnic_regs_fields, r);
    /* heartbeat as elapsed time: the destination's clock differs */
    rnic_image_put_u64(w, e->ops->clock_ns(e->opaque) - r->heartbeat_base_ns);
}

static bool rnic_regs_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    RnicRegs *r = &e->regs;
    uint32_t entries;

    rnic_image_get_fields(rd, rnic_regs_fields, r, NULL);
    r->heartbeat_base_ns = e->ops->clock_ns(e->opaque) - rnic_image_get_u64(rd);
    if (rd->overrun) {
        *err = g_strdup("register section truncated");
        return false;
    }
    if (r->dev_ctrl & ~(RNIC_CTRL_ENABLE | RNIC_CTRL_AQ_IRQ)) {
        *err = g_strdup_printf("bad device control 0x%x", r->dev_ctrl);
        return false;
    }
    if (r->dev_status & RNIC_STATUS_READY) {
        if (r->aq_size_log2 < RNIC_AQ_SIZE_LOG2_MIN ||
            r->aq_size_log2 > RNIC_AQ_SIZE_LOG2_MAX) {
            *err = g_strdup_printf("bad admin queue size %u", r->aq_size_log2);
            return false;
        }
        entries = 1u << r->aq_size_log2;
        if (r->aq_tail - r->aq_head > entries ||
            r->acq_tail - r->acq_head > entries) {
            *err = g_strdup("admin queue indexes out of range");
            return false;
        }
    }
    return true;
}

static void rnic_stats_save(RnicEngine *e, RnicImageWriter *w)
{
    unsigned i;

    rnic_image_put_u32(w, RNIC_STAT_COUNT);
    for (i = 0; i < RNIC_STAT_COUNT; i++) {
        rnic_image_put_u64(w, e->stats[i]);
    }
}

static bool rnic_stats_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t n = rnic_image_get_u32(rd);
    uint32_t i;

    /* counters the destination does not know are dropped */
    for (i = 0; i < n && !rd->overrun; i++) {
        uint64_t v = rnic_image_get_u64(rd);

        if (i < RNIC_STAT_COUNT) {
            e->stats[i] = v;
        }
    }
    if (rd->overrun) {
        *err = g_strdup("statistics section truncated");
        return false;
    }
    return true;
}

static void rnic_regs_dump(RnicImageReader *rd, GString *out)
{
    rnic_image_dump_fields(rd, out, "regs", rnic_regs_fields, NULL);
    rnic_image_dump_u64(rd, out, "regs", "heartbeat_elapsed_ns");
}

static void rnic_stats_dump(RnicImageReader *rd, GString *out)
{
    uint32_t n = rnic_image_dump_u32(rd, out, NULL, "count");
    uint32_t i;

    for (i = 0; i < n && !rd->overrun; i++) {
        g_autofree char *name = g_strdup_printf("stats[%u]", i);

        rnic_image_dump_u64(rd, out, NULL, name);
    }
}

typedef struct RnicSection {
    uint16_t tag;
    uint16_t flags;
    const char *name;
    void (*save)(RnicEngine *e, RnicImageWriter *w);
    bool (*load)(RnicEngine *e, RnicImageReader *r, char **err);
    /* NULL: always written; else written only when it returns true */
    bool (*needed)(RnicEngine *e);
    /* NULL: no field tables, dumped as bytes */
    void (*dump)(RnicImageReader *r, GString *out);
} RnicSection;

/* In load order: later sections may refer to objects of earlier ones. */
static const RnicSection rnic_sections[] = {
    { RNIC_SEC_REGS, 0, "registers", rnic_regs_save, rnic_regs_load,
      .dump = rnic_regs_dump },
    { RNIC_SEC_STATS, RNIC_SECTION_OPTIONAL, "statistics",
      rnic_stats_save, rnic_stats_load, .dump = rnic_stats_dump },
    { RNIC_SEC_ETH, 0, "ethernet", rnic_eth_save, rnic_eth_load },
    { RNIC_SEC_UCTX, 0, "user contexts", rnic_uctx_save, rnic_uctx_load,
      .dump = rnic_uctx_dump },
    { RNIC_SEC_NET_CTX, 0, "network contexts", rnic_netctx_save,
      rnic_netctx_load, .dump = rnic_netctx_dump },
    { RNIC_SEC_GIDS, 0, "GID table", rnic_gids_save, rnic_gids_load,
      .dump = rnic_gids_dump },
    { RNIC_SEC_PDS, 0, "PDs", rnic_pds_save, rnic_pds_load,
      .dump = rnic_pds_dump },
    { RNIC_SEC_MNET_PDS, 0, "multi-network PDs", rnic_mnet_pds_save,
      rnic_mnet_pds_load, rnic_mnet_needed, rnic_mnet_pds_dump },
    { RNIC_SEC_EQS, 0, "EQs", rnic_eqs_save, rnic_eqs_load,
      .dump = rnic_eqs_dump },
    { RNIC_SEC_CQS, 0, "CQs", rnic_cqs_save, rnic_cqs_load,
      .dump = rnic_cqs_dump },
    { RNIC_SEC_SRQS, 0, "SRQs", rnic_srqs_save, rnic_srqs_load,
      .dump = rnic_srqs_dump },
    { RNIC_SEC_MR_LOG, 0, "registration log", rnic_mrlog_save,
      rnic_mrlog_load, .dump = rnic_mrlog_dump },
    { RNIC_SEC_MWS, 0, "memory windows", rnic_mws_save, rnic_mws_load,
      rnic_mws_needed, rnic_mws_dump },
    { RNIC_SEC_QPS, 0, "QPs", rnic_qps_save, rnic_qps_load,
      .dump = rnic_qps_dump },
    { RNIC_SEC_MCAST, 0, "multicast groups", rnic_mcast_save,
      rnic_mcast_load, rnic_mcast_needed, rnic_mcast_dump },
    { RNIC_SEC_QP_STATS, RNIC_SECTION_OPTIONAL, "QP statistics",
      rnic_qp_stats_save, rnic_qp_stats_load, rnic_qp_stats_needed,
      rnic_qp_stats_dump },
    { RNIC_SEC_MNET_BINDS, 0, "multi-network bindings", rnic_mnet_binds_save,
      rnic_mnet_binds_load, rnic_mnet_needed, rnic_mnet_binds_dump },
};

static const RnicSection *rnic_section_find(uint16_t tag)
{
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(rnic_sections); i++) {
        if (rnic_sections[i].tag == tag) {
            return &rnic_sections[i];
        }
    }
    return NULL;
}

void rnic_engine_save(RnicEngine *e, GByteArray *out)
{
    RnicImageWriter w = { .out = out };
    RnicQp *qp;
    uint32_t h;
    size_t i;

    /*
     * what responders still had to persist (rnic_scm_persist_step) is made
     * durable now: the image has no persist range, the answers follow on
     * the destination
     */
    RNIC_TABLE_FOREACH(&e->qps, h, qp) {
        rnic_scm_persist_all(e, qp);
    }
    rnic_image_put_u32(&w, RNIC_IMAGE_MAGIC);
    rnic_image_put_u32(&w, RNIC_IMAGE_VERSION);
    for (i = 0; i < G_N_ELEMENTS(rnic_sections); i++) {
        if (rnic_sections[i].needed && !rnic_sections[i].needed(e)) {
            continue;
        }
        rnic_image_begin_section(&w, rnic_sections[i].tag,
                                 rnic_sections[i].flags);
        rnic_sections[i].save(e, &w);
        rnic_image_end_section(&w);
    }
}

bool rnic_engine_load(RnicEngine *e, const uint8_t *data, size_t len,
                      char **err)
{
    RnicImageReader r = { .data = data, .len = len };
    RnicImageReader payload;
    bool seen[G_N_ELEMENTS(rnic_sections)] = { false };
    uint16_t tag, flags;
    uint32_t magic, version;
    size_t i;

    *err = NULL;
    rnic_engine_reset(e);
    magic = rnic_image_get_u32(&r);
    version = rnic_image_get_u32(&r);
    if (r.overrun || magic != RNIC_IMAGE_MAGIC) {
        *err = g_strdup("not an rnic state image");
        goto fail;
    }
    if (version != RNIC_IMAGE_VERSION) {
        *err = g_strdup_printf("state image version %u, this device reads %u",
                               version, RNIC_IMAGE_VERSION);
        goto fail;
    }
    while (rnic_image_next_section(&r, &tag, &flags, &payload)) {
        const RnicSection *s = rnic_section_find(tag);

        if (!s) {
            if (flags & RNIC_SECTION_OPTIONAL) {
                continue;
            }
            *err = g_strdup_printf("unknown mandatory state section %u", tag);
            goto fail;
        }
        if (seen[s - rnic_sections]) {
            *err = g_strdup_printf("state section %s twice", s->name);
            goto fail;
        }
        seen[s - rnic_sections] = true;
        if (!s->load(e, &payload, err)) {
            goto fail;
        }
    }
    if (r.overrun) {
        *err = g_strdup("state image truncated");
        goto fail;
    }
    /* a section written only when needed is needed by what was loaded */
    for (i = 0; i < G_N_ELEMENTS(rnic_sections); i++) {
        if (!seen[i] && !(rnic_sections[i].flags & RNIC_SECTION_OPTIONAL) &&
            (!rnic_sections[i].needed || rnic_sections[i].needed(e))) {
            *err = g_strdup_printf("state section %s missing",
                                   rnic_sections[i].name);
            goto fail;
        }
    }
    *err = rnic_state_check(e);
    if (*err) {
        goto fail;
    }
    rnic_state_post_load(e);
    return true;

fail:
    rnic_event(e, ERR_STATE_LOAD, *err, 0);
    rnic_engine_reset(e);
    return false;
}

/* A section without field tables: its bytes, 16 a line. */
static void rnic_section_hex(RnicImageReader *rd, GString *out)
{
    while (rd->pos < rd->len) {
        size_t i, n = MIN(rd->len - rd->pos, 16);

        g_string_append_printf(out, "  %04zx:", rd->pos);
        for (i = 0; i < n; i++) {
            g_string_append_printf(out, " %02x", rd->data[rd->pos + i]);
        }
        g_string_append_c(out, '\n');
        rd->pos += n;
    }
}

bool rnic_state_dump(const uint8_t *data, size_t len, GString *out)
{
    RnicImageReader r = { .data = data, .len = len };
    RnicImageReader payload;
    uint16_t tag, flags;
    uint32_t magic, version;
    bool whole = true;

    magic = rnic_image_get_u32(&r);
    version = rnic_image_get_u32(&r);
    if (r.overrun || magic != RNIC_IMAGE_MAGIC) {
        g_string_append(out, "not an rnic state image\n");
        return false;
    }
    g_string_append_printf(out, "rnic state image version %u, %zu bytes\n",
                           version, len);
    while (rnic_image_next_section(&r, &tag, &flags, &payload)) {
        const RnicSection *s = rnic_section_find(tag);

        g_string_append_printf(out, "section %u %s: %zu bytes%s\n", tag,
                               s ? s->name : "unknown", payload.len,
                               flags & RNIC_SECTION_OPTIONAL ?
                               ", optional" : "");
        if (s && s->dump) {
            s->dump(&payload, out);
        } else {
            rnic_section_hex(&payload, out);
        }
        if (payload.overrun || payload.pos != payload.len) {
            g_string_append_printf(out, "  section %u: %s\n", tag,
                                   payload.overrun ? "truncated" :
                                   "bytes left over");
            whole = false;
        }
    }
    if (r.overrun) {
        g_string_append(out, "image truncated\n");
        whole = false;
    }
    return whole;
}
