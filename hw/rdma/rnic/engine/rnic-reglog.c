/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the registration log (patent a'). It records every change of
 * every mapping table in order; it is what the migration stream carries for
 * MRs and what the destination replays (rnic_reglog_replay) to rebuild
 * identical STags over its own physical side. Records share the entries'
 * page lists and segment tables (reference counted). The log is compacted
 * to a snapshot of the live entries when most of it has become history.
 */
#include "rnic-mr.h"

/* ---------------------------------------------------------------------- */
/* Registration log                                                       */
/* ---------------------------------------------------------------------- */

/*
 * The log's records in the host memory account. Compaction keeps the log
 * within a small multiple of the live MRs, each of which was charged, so
 * the records are charged even past the budget (they cannot be refused:
 * the MR change they record has happened).
 */
static void rnic_reglog_account(RnicEngine *e)
{
    uint64_t want = (uint64_t)e->reglog->len * sizeof(RnicRegLogRec);

    if (want < e->reglog_charged) {
        rnic_mem_release(e, e->reglog_charged - want);
    } else {
        e->mem_used += want - e->reglog_charged;
    }
    e->reglog_charged = want;
}

RnicRegLogRec rnic_reglog_record(uint8_t op, const RnicMr *mr)
{
    RnicRegLogRec rec = {
        .op = op,
        .kind = mr->kind,
        .net_ctx = rnic_mr_net(mr),
        .stag = mr->stag,
        .pd = mr->pd->handle,
        .owner = mr->owner,
        .access = mr->access,
        .max_pages = mr->max_pages,
        .iova = mr->iova,
        .length = mr->length,
    };

    if (op == RNIC_REGLOG_REG || op == RNIC_REGLOG_FAST_REG) {
        rec.pbl = mr->pbl;
        rec.map = mr->map;
    }
    return rec;
}

/* A record of 'mr' whose page list and segment table it holds a ref of. */
static RnicRegLogRec rnic_reglog_record_ref(uint8_t op, const RnicMr *mr)
{
    RnicRegLogRec rec = rnic_reglog_record(op, mr);

    rnic_pbl_ref(rec.pbl);
    rnic_map_ref(rec.map);
    return rec;
}

void rnic_reglog_append(RnicEngine *e, uint8_t op, const RnicMr *mr)
{
    RnicRegLogRec rec = rnic_reglog_record_ref(op, mr);

    g_array_append_val(e->reglog, rec);
    e->reglog_appended++;
    rnic_reglog_account(e);
}

void rnic_reglog_clear(RnicEngine *e)
{
    guint i;

    for (i = 0; i < e->reglog->len; i++) {
        RnicRegLogRec *r = &g_array_index(e->reglog, RnicRegLogRec, i);

        rnic_pbl_unref(e, r->pbl);
        rnic_map_unref(e, r->map);
    }
    g_array_set_size(e->reglog, 0);
    e->reglog_compacted_len = 0;
    rnic_reglog_account(e);
}

static void rnic_reglog_snapshot_one(RnicEngine *e, RnicMr *mr, void *opaque)
{
    GArray *log = opaque;
    RnicRegLogRec rec;

    if (!(rnic_mr_kind(mr)->flags & RNIC_MRK_LOGGED)) {
        return;                 /* windows are a section of their own */
    }
    if (!mr->fast_reg) {
        rec = rnic_reglog_record_ref(RNIC_REGLOG_REG, mr);
        g_array_append_val(log, rec);
        return;
    }
    rec = rnic_reglog_record(RNIC_REGLOG_ALLOC, mr);
    g_array_append_val(log, rec);
    if (mr->pbl || mr->map) {
        /*
         * registered at least once: its last fast-register, then maybe
         * the invalidation that followed
         */
        rec = rnic_reglog_record_ref(RNIC_REGLOG_FAST_REG, mr);
        g_array_append_val(log, rec);
        if (mr->state != RNIC_MR_VALID) {
            rec.op = RNIC_REGLOG_INVALIDATE;
            rec.pbl = NULL;
            rec.map = NULL;
            g_array_append_val(log, rec);
        }
    }
}

void rnic_reglog_init(RnicEngine *e)
{
    e->reglog = g_array_new(FALSE, FALSE, sizeof(RnicRegLogRec));
}

void rnic_reglog_fini(RnicEngine *e)
{
    rnic_reglog_clear(e);
    g_array_free(e->reglog, TRUE);
}

void rnic_reglog_compact(RnicEngine *e, bool force)
{
    GArray *log;

    /* every live entry needs at most three records */
    if (!force && e->reglog->len <= 3 * e->mr_count + 64) {
        return;
    }
    log = g_array_new(FALSE, FALSE, sizeof(RnicRegLogRec));
    rnic_mr_foreach(e, rnic_reglog_snapshot_one, log);
    rnic_reglog_clear(e);
    g_array_free(e->reglog, TRUE);
    e->reglog = log;
    e->reglog_compacted_len = log->len;
    rnic_reglog_account(e);
}
/* ---------------------------------------------------------------------- */
/* Replay (state load): one function per record type                      */
/* ---------------------------------------------------------------------- */

/* REG or ALLOC: a new entry, as the record describes it. */
static bool rnic_replay_create(RnicEngine *e, const RnicRegLogRec *rec,
                               RnicNetCtx *ctx, RnicMrTable *t, char **err)
{
    const RnicMrKind *k = rnic_mr_kind_of(rec->kind);
    uint32_t index = RNIC_STAG_INDEX(rec->stag);
    RnicPd *pd = rnic_pd_lookup(e, rec->pd);
    const char *why;
    RnicMr *mr;

    if (!pd || pd->ctx != ctx || pd->owner != rec->owner) {
        *err = g_strdup_printf("registration log: STag 0x%x names PD %u "
                               "which is not in its context", rec->stag,
                               rec->pd);
        return false;
    }
    if (!k || !k->replay_create) {
        *err = g_strdup_printf("registration log: STag 0x%x of kind %u",
                               rec->stag, rec->kind);
        return false;
    }
    why = k->replay_create(e, rec);
    if (why) {
        *err = g_strdup_printf("registration log: STag 0x%x (%s): %s",
                               rec->stag, k->name, why);
        return false;
    }
    if (!rnic_mr_room(e, pd)) {
        *err = g_strdup_printf("registration log: STag 0x%x does not fit: "
                               "the mapping table of network context %u "
                               "is full (max-mrs=%u)", rec->stag,
                               rec->net_ctx, e->cfg.max_mr);
        return false;
    }
    if (!index || index >= t->range) {
        *err = g_strdup_printf("registration log: STag 0x%x does not fit: "
                               "its index is beyond this device's STag "
                               "space of %u (max-mrs=%u)", rec->stag,
                               t->range, e->cfg.max_mr);
        return false;
    }
    mr = rnic_mr_insert(e, pd, rec->owner, index, RNIC_STAG_KEY(rec->stag));
    if (!mr) {
        *err = g_strdup_printf("registration log: STag 0x%x: index already "
                               "in use", rec->stag);
        return false;
    }
    mr->kind = rec->kind;
    if (rec->op == RNIC_REGLOG_REG) {
        mr->state = RNIC_MR_VALID;
        mr->access = rec->access;
        mr->iova = rec->iova;
        mr->length = rec->length;
        mr->pbl = rnic_pbl_ref(rec->pbl);
        mr->map = rnic_map_ref(rec->map);
    } else {
        mr->state = RNIC_MR_INVALID;
        mr->fast_reg = true;
        mr->max_pages = rec->max_pages;
    }
    rnic_reglog_append(e, rec->op, mr);
    rnic_reglog_compact(e, false);
    rnic_mr_changed(e, mr);
    return true;
}

/* FAST_REG: a fast-register entry takes the record's translation. */
static bool rnic_replay_fast_reg(RnicEngine *e, const RnicRegLogRec *rec,
                                 RnicMr *mr, char **err)
{
    const RnicMrKind *k = mr ? rnic_mr_kind(mr) : NULL;
    const char *why;

    if (!mr || !mr->fast_reg || !k->replay_fast_reg) {
        *err = g_strdup_printf("registration log: fast-register of "
                               "unknown STag 0x%x", rec->stag);
        return false;
    }
    why = k->replay_fast_reg(e, mr, rec);
    if (why) {
        *err = g_strdup_printf("registration log: STag 0x%x (%s): %s",
                               rec->stag, k->name, why);
        return false;
    }
    rnic_mr_fast_reg_done(e, mr, rec->stag, rec->iova, rec->length,
                          rec->access);
    return true;
}

static bool rnic_replay_invalidate(RnicEngine *e, const RnicRegLogRec *rec,
                                   RnicMr *mr, char **err)
{
    if (!mr || !mr->fast_reg) {
        *err = g_strdup_printf("registration log: invalidate of unknown "
                               "STag 0x%x", rec->stag);
        return false;
    }
    mr->state = RNIC_MR_INVALID;
    rnic_reglog_append(e, rec->op, mr);
    rnic_reglog_compact(e, false);
    rnic_mr_changed(e, mr);
    return true;
}

static bool rnic_replay_dereg(RnicEngine *e, const RnicRegLogRec *rec,
                              RnicMr *mr, char **err)
{
    if (!mr || mr->stag != rec->stag) {
        *err = g_strdup_printf("registration log: deregistration of "
                               "unknown STag 0x%x", rec->stag);
        return false;
    }
    rnic_reglog_append(e, RNIC_REGLOG_DEREG, mr);
    rnic_mr_remove(e, mr);
    rnic_reglog_compact(e, false);
    return true;
}

bool rnic_reglog_replay(RnicEngine *e, const RnicRegLogRec *rec, char **err)
{
    bool mnet = rec->net_ctx == RNIC_PD_MULTI_NET;
    RnicNetCtx *ctx = mnet ? NULL : rnic_netctx_lookup(e, rec->net_ctx);
    RnicMrTable *t;
    RnicMr *mr;

    if (!ctx && !mnet) {
        *err = g_strdup_printf("registration log: STag 0x%x in unknown "
                               "network context %u", rec->stag, rec->net_ctx);
        return false;
    }
    t = ctx ? &ctx->mrt : &e->mnet_mrt;
    mr = rnic_mrt_lookup(t, RNIC_STAG_INDEX(rec->stag));
    if (mr && mr->ctx != ctx) {
        mr = NULL;              /* a replica: not this record's table */
    }
    switch (rec->op) {
    case RNIC_REGLOG_REG:
    case RNIC_REGLOG_ALLOC:
        return rnic_replay_create(e, rec, ctx, t, err);
    case RNIC_REGLOG_FAST_REG:
        return rnic_replay_fast_reg(e, rec, mr, err);
    case RNIC_REGLOG_INVALIDATE:
        return rnic_replay_invalidate(e, rec, mr, err);
    case RNIC_REGLOG_DEREG:
        return rnic_replay_dereg(e, rec, mr, err);
    }
    *err = g_strdup_printf("registration log: unknown record %u", rec->op);
    return false;
}
