/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: BAR2 doorbells. A doorbell store is validated and recorded
 * here; the work it announces runs later, in rnic_engine_run().
 */
#include "rnic-engine-int.h"

/* Bound on doorbells recorded between two runs of the engine. */
#define RNIC_DB_QUEUE_MAX 4096

void rnic_doorbells_reset(RnicEngine *e)
{
    g_array_set_size(e->db_queue, 0);
}

static bool rnic_db_offset_valid(uint32_t page, uint32_t offset, uint32_t flags)
{
    switch (offset) {
    case RNIC_DB_SQ:
    case RNIC_DB_RQ:
    case RNIC_DB_SRQ:
        return flags == 0;
    case RNIC_DB_CQ:
        return !(flags & ~(RNIC_DB_ARM_NEXT | RNIC_DB_ARM_SOLICITED));
    case RNIC_DB_EQ:
        return page == 0 && !(flags & ~RNIC_DB_ARM_NEXT);
    default:
        return false;
    }
}

RnicAccessResult rnic_engine_doorbell(RnicEngine *e, uint32_t page,
                                      uint32_t offset, uint64_t value)
{
    RnicDoorbellEvent ev = {
        .page = page,
        .offset = offset,
        .handle = (uint32_t)value & RNIC_DB_HANDLE_MASK,
        .flags = (uint32_t)value & ~RNIC_DB_HANDLE_MASK,
        .index = (uint32_t)(value >> 32),
    };

    if (page >= e->cfg.db_pages ||
        !rnic_db_offset_valid(page, offset, ev.flags)) {
        rnic_stat_inc(e, RNIC_STAT_DOORBELL_ERRORS);
        return RNIC_ACCESS_BAD_DOORBELL;
    }
    if (!(e->regs.dev_status & RNIC_STATUS_READY) ||
        (e->regs.dev_status & RNIC_STATUS_FATAL)) {
        rnic_stat_inc(e, RNIC_STAT_DOORBELL_ERRORS);
        return RNIC_ACCESS_NOT_NOW;
    }
    if (e->db_queue->len >= RNIC_DB_QUEUE_MAX) {
        /* the guest rings faster than the device runs: keep the newest */
        rnic_stat_inc(e, RNIC_STAT_DOORBELL_ERRORS);
        g_array_remove_index(e->db_queue, 0);
    }
    rnic_stat_inc(e, RNIC_STAT_DOORBELLS);
    g_array_append_val(e->db_queue, ev);
    rnic_engine_schedule(e);
    return RNIC_ACCESS_OK;
}

void rnic_doorbells_process(RnicEngine *e)
{
    /* Queue objects arrive with the verbs engine; until then a recorded
     * doorbell names no queue and is dropped here. */
    g_array_set_size(e->db_queue, 0);
}
