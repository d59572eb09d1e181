/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the migration state image of the whole device.
 *
 * Each piece of state is one section with a save and a load function.
 * Loading resets the engine, then replays the sections in order; anything
 * inconsistent makes the load fail with a message (the engine is left
 * reset), it never trusts the stream.
 */
#include <string.h>
#include "rnic-engine-int.h"
#include "rnic-image.h"

enum rnic_section_tag {
    RNIC_SEC_REGS = 1,
    RNIC_SEC_STATS = 2,
};

static void rnic_regs_save(RnicEngine *e, RnicImageWriter *w)
{
    const RnicRegs *r = &e->regs;

    rnic_image_put_u32(w, r->dev_ctrl);
    rnic_image_put_u32(w, r->dev_status);
    rnic_image_put_u32(w, r->fatal_code);
    rnic_image_put_u32(w, r->scratch);
    rnic_image_put_bytes(w, r->mac, sizeof(r->mac));
    rnic_image_put_u64(w, r->aq_base);
    rnic_image_put_u64(w, r->acq_base);
    rnic_image_put_u32(w, r->aq_size_log2);
    rnic_image_put_u32(w, r->aq_tail);
    rnic_image_put_u32(w, r->aq_head);
    rnic_image_put_u32(w, r->acq_tail);
    rnic_image_put_u32(w, r->acq_head);
    /* heartbeat as elapsed time: the destination's clock differs */
    rnic_image_put_u64(w, e->ops->clock_ns(e->opaque) - r->heartbeat_base_ns);
}

static bool rnic_regs_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    RnicRegs *r = &e->regs;
    uint32_t entries;

    r->dev_ctrl = rnic_image_get_u32(rd);
    r->dev_status = rnic_image_get_u32(rd);
    r->fatal_code = rnic_image_get_u32(rd);
    r->scratch = rnic_image_get_u32(rd);
    rnic_image_get_bytes(rd, r->mac, sizeof(r->mac));
    r->aq_base = rnic_image_get_u64(rd);
    r->acq_base = rnic_image_get_u64(rd);
    r->aq_size_log2 = rnic_image_get_u32(rd);
    r->aq_tail = rnic_image_get_u32(rd);
    r->aq_head = rnic_image_get_u32(rd);
    r->acq_tail = rnic_image_get_u32(rd);
    r->acq_head = rnic_image_get_u32(rd);
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

typedef struct RnicSection {
    uint16_t tag;
    uint16_t flags;
    const char *name;
    void (*save)(RnicEngine *e, RnicImageWriter *w);
    bool (*load)(RnicEngine *e, RnicImageReader *r, char **err);
} RnicSection;

/* In load order: later sections may refer to objects of earlier ones. */
static const RnicSection rnic_sections[] = {
    { RNIC_SEC_REGS, 0, "registers", rnic_regs_save, rnic_regs_load },
    { RNIC_SEC_STATS, RNIC_SECTION_OPTIONAL, "statistics",
      rnic_stats_save, rnic_stats_load },
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
    size_t i;

    rnic_image_put_u32(&w, RNIC_IMAGE_MAGIC);
    rnic_image_put_u32(&w, RNIC_IMAGE_VERSION);
    for (i = 0; i < G_N_ELEMENTS(rnic_sections); i++) {
        rnic_image_begin_section(&w, rnic_sections[i].tag, rnic_sections[i].flags);
        rnic_sections[i].save(e, &w);
        rnic_image_end_section(&w);
    }
}

bool rnic_engine_load(RnicEngine *e, const uint8_t *data, size_t len,
                      char **err)
{
    RnicImageReader r = { .data = data, .len = len };
    RnicImageReader payload;
    uint16_t tag, flags;
    uint32_t magic, version;

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
        if (!s->load(e, &payload, err)) {
            goto fail;
        }
    }
    if (r.overrun) {
        *err = g_strdup("state image truncated");
        goto fail;
    }
    return true;

fail:
    rnic_log(e, RNIC_LOG_GUEST_ERROR, "state load failed: %s", *err);
    rnic_engine_reset(e);
    return false;
}
