/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the migration state image of the whole device.
 *
 * Each piece of state is one section (RnicStateSection, rnic-state.h):
 * most are a count and records, which the walker here saves, loads and
 * dumps from the section's field table and record functions; the others
 * have their own save, load or dump. Loading resets the engine, then
 * replays the sections in order; anything inconsistent makes the load
 * fail with a message (the engine is left reset), it never trusts the
 * stream. The dump needs no engine: it prints what an image holds,
 * whether a load would accept it or not.
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

static void rnic_stats_dump_one(RnicImageReader *rd, GString *out,
                                uint32_t i)
{
    g_autofree char *name = g_strdup_printf("stats[%u]", i);

    rnic_image_dump_u64(rd, out, NULL, name);
}

static const RnicStateSection rnic_regs_section = {
    .tag = RNIC_SEC_REGS, .name = "registers",
    .save = rnic_regs_save, .load = rnic_regs_load, .dump = rnic_regs_dump,
};

/* counters the destination does not know are dropped */
static const RnicStateSection rnic_stats_section = {
    .tag = RNIC_SEC_STATS, .flags = RNIC_SECTION_OPTIONAL,
    .name = "statistics", .dump_one = rnic_stats_dump_one,
    .save = rnic_stats_save, .load = rnic_stats_load,
};

static const RnicStateSection rnic_eth_section = {
    .tag = RNIC_SEC_ETH, .name = "ethernet",
    .save = rnic_eth_save, .load = rnic_eth_load,
};

/*
 * In load order: later sections may refer to objects of earlier ones.
 * The table points to the sections rather than holding them: each object
 * section is defined beside its field tables and record functions
 * (rnic-state-objs.c), which stay private to that file, and this table is
 * the one place that orders them.
 */
static const RnicStateSection *const rnic_sections[] = {
    &rnic_regs_section,
    &rnic_stats_section,
    &rnic_eth_section,
    &rnic_uctx_section,
    &rnic_netctx_section,
    &rnic_gids_section,
    &rnic_pds_section,
    &rnic_mnet_pds_section,
    &rnic_eqs_section,
    &rnic_cqs_section,
    &rnic_srqs_section,
    &rnic_mrlog_section,
    &rnic_mws_section,
    &rnic_qps_section,
    &rnic_mcast_section,
    &rnic_qp_stats_section,
    &rnic_mnet_binds_section,
};

/* The index of a tag's section in the table, -1 if it has none. */
static int rnic_section_find(uint16_t tag)
{
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(rnic_sections); i++) {
        if (rnic_sections[i]->tag == tag) {
            return i;
        }
    }
    return -1;
}

/* A table's objects: their count, then each one's handle and fields. */
static void rnic_objs_save(RnicEngine *e, RnicImageWriter *w,
                           const RnicStateSection *s)
{
    const RnicTable *t = (const RnicTable *)((const char *)e + s->table);
    RnicObject *obj;
    uint32_t h;

    rnic_image_put_u32(w, t->count);
    RNIC_TABLE_FOREACH(t, h, obj) {
        rnic_image_put_u32(w, obj->handle);
        rnic_image_put_fields(w, s->fields, obj);
    }
}

bool rnic_state_records_load(RnicEngine *e, RnicImageReader *rd, char **err,
                             const RnicStateSection *s)
{
    uint32_t n = rnic_image_get_u32(rd);
    uint32_t i;

    for (i = 0; i < n && !rd->overrun; i++) {
        if (!s->load_one(e, rd, err)) {
            return false;
        }
    }
    if (rd->overrun) {
        *err = g_strdup_printf("%s section truncated", s->record);
        return false;
    }
    return true;
}

void rnic_state_records_dump(RnicImageReader *rd, GString *out,
                             const RnicStateSection *s)
{
    uint32_t n = rnic_image_dump_u32(rd, out, NULL, "count");
    uint32_t i;

    for (i = 0; i < n && !rd->overrun; i++) {
        g_autofree char *key = NULL;

        if (s->dump_one) {
            s->dump_one(rd, out, i);
            continue;
        }
        key = g_strdup_printf("%s[%u]", s->key, rnic_image_get_u32(rd));
        rnic_image_dump_fields(rd, out, key, s->fields, NULL);
    }
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
        const RnicStateSection *s = rnic_sections[i];

        if (s->needed && !s->needed(e)) {
            continue;
        }
        rnic_image_begin_section(&w, s->tag, s->flags);
        if (s->save) {
            s->save(e, &w);
        } else {
            rnic_objs_save(e, &w, s);
        }
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
        int k = rnic_section_find(tag);
        const RnicStateSection *s = k < 0 ? NULL : rnic_sections[k];

        if (!s) {
            if (flags & RNIC_SECTION_OPTIONAL) {
                continue;
            }
            *err = g_strdup_printf("unknown mandatory state section %u", tag);
            goto fail;
        }
        if (seen[k]) {
            *err = g_strdup_printf("state section %s twice", s->name);
            goto fail;
        }
        seen[k] = true;
        if (s->load ? !s->load(e, &payload, err) :
            !rnic_state_records_load(e, &payload, err, s)) {
            goto fail;
        }
    }
    if (r.overrun) {
        *err = g_strdup("state image truncated");
        goto fail;
    }
    /* a section written only when needed is needed by what was loaded */
    for (i = 0; i < G_N_ELEMENTS(rnic_sections); i++) {
        const RnicStateSection *s = rnic_sections[i];

        if (!seen[i] && !(s->flags & RNIC_SECTION_OPTIONAL) &&
            (!s->needed || s->needed(e))) {
            *err = g_strdup_printf("state section %s missing", s->name);
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
        int k = rnic_section_find(tag);
        const RnicStateSection *s = k < 0 ? NULL : rnic_sections[k];

        g_string_append_printf(out, "section %u %s: %zu bytes%s\n", tag,
                               s ? s->name : "unknown", payload.len,
                               flags & RNIC_SECTION_OPTIONAL ?
                               ", optional" : "");
        if (s && s->dump) {
            s->dump(&payload, out);
        } else if (s && (s->dump_one || s->fields)) {
            rnic_state_records_dump(&payload, out, s);
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
