/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the objects in the migration state image.
 *
 * Every object is saved with its handle and everything the guest can
 * observe or the transport needs to continue (indexes, PSNs, outstanding
 * requests, partially received messages, timers as time remaining).
 * Memory registrations are not saved as a table: the registration log is
 * (patent a'), and loading replays it through the same code that builds
 * the tables at run time, so every STag and every QPN is the source's.
 * Host pointers are never saved; caches are rebuilt on demand.
 *
 * Loading trusts nothing: every handle must name an object loaded before,
 * every index and size must be in range, or the load fails with a message.
 */
#include <string.h>
#include "rnic-state.h"

#define LOAD_CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            *err = g_strdup_printf(__VA_ARGS__); \
            return false; \
        } \
    } while (0)

#define LOAD_END(rd, what) \
    LOAD_CHECK(!(rd)->overrun, "%s section truncated", what)

/* ---------------------------------------------------------------------- */
/* User contexts, network contexts, GIDs, PDs                             */
/* ---------------------------------------------------------------------- */

void rnic_uctx_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t i, n = 0;

    for (i = 1; i < e->cfg.db_pages; i++) {
        n += e->uctx_used[i];
    }
    rnic_image_put_u32(w, n);
    for (i = 1; i < e->cfg.db_pages; i++) {
        if (e->uctx_used[i]) {
            rnic_image_put_u32(w, i);
        }
    }
}

bool rnic_uctx_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t n = rnic_image_get_u32(rd);
    uint32_t i;

    for (i = 0; i < n && !rd->overrun; i++) {
        uint32_t u = rnic_image_get_u32(rd);

        LOAD_CHECK(u >= 1 && u < e->cfg.db_pages && !e->uctx_used[u],
                   "bad user context %u", u);
        e->uctx_used[u] = true;
    }
    LOAD_END(rd, "user context");
    return true;
}

void rnic_netctx_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t i;

    rnic_image_put_u32(w, e->net_ctxs.count);
    for (i = 0; i < e->net_ctxs.cap; i++) {
        RnicNetCtx *c = e->net_ctxs.slots[i];

        if (c) {
            rnic_image_put_u32(w, c->handle);
            rnic_image_put_u8(w, c->net_type);
            rnic_image_put_u32(w, c->net_id);
            rnic_image_put_u32(w, c->next_qpn);
        }
    }
}

bool rnic_netctx_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t n = rnic_image_get_u32(rd);
    uint32_t i;

    for (i = 0; i < n && !rd->overrun; i++) {
        uint32_t h = rnic_image_get_u32(rd);
        uint8_t type = rnic_image_get_u8(rd);
        uint32_t id = rnic_image_get_u32(rd);
        uint32_t next = rnic_image_get_u32(rd);
        RnicNetCtx *c;

        LOAD_END(rd, "network context");
        LOAD_CHECK(type == RNIC_NET_VLAN && id <= 4095 &&
                   !rnic_netctx_by_id(e, type, id),
                   "network context %u: bad or duplicate VLAN %u", h, id);
        c = rnic_netctx_create(e, h, type, id);
        LOAD_CHECK(c, "network context %u does not fit this device "
                   "(max-net-ctx=%u)", h, e->cfg.max_net_ctx);
        c->next_qpn = next >= 2 && next <= RNIC_QPN_MASK ? next : 2;
    }
    LOAD_END(rd, "network context");
    return true;
}

void rnic_gids_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t i, n = 0;

    for (i = 0; i < e->cfg.max_gid; i++) {
        n += e->gids[i].valid;
    }
    rnic_image_put_u32(w, n);
    for (i = 0; i < e->cfg.max_gid; i++) {
        const RnicGid *g = &e->gids[i];

        if (g->valid) {
            rnic_image_put_u32(w, i);
            rnic_image_put_bytes(w, g->gid, 16);
            rnic_image_put_u32(w, g->net_ctx);
            rnic_image_put_u8(w, g->type);
        }
    }
}

bool rnic_gids_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t n = rnic_image_get_u32(rd);
    uint32_t i;

    for (i = 0; i < n && !rd->overrun; i++) {
        uint32_t index = rnic_image_get_u32(rd);
        uint8_t gid[16];
        uint32_t ctx;
        uint8_t type;
        RnicNetCtx *c;

        rnic_image_get_bytes(rd, gid, 16);
        ctx = rnic_image_get_u32(rd);
        type = rnic_image_get_u8(rd);
        LOAD_END(rd, "GID");
        c = rnic_netctx_lookup(e, ctx);
        LOAD_CHECK(index < e->cfg.max_gid && !e->gids[index].valid && c &&
                   type == 0, "GID %u: bad index, context or type", index);
        e->gids[index].valid = true;
        memcpy(e->gids[index].gid, gid, 16);
        e->gids[index].net_ctx = ctx;
        e->gids[index].type = type;
        c->refs++;
    }
    LOAD_END(rd, "GID");
    return true;
}

/* PDs of one network context, or (mnet) the multi-network ones. */
static uint32_t rnic_pds_count(RnicEngine *e, bool mnet)
{
    uint32_t i, n = 0;

    for (i = 0; i < e->pds.cap; i++) {
        RnicPd *pd = e->pds.slots[i];

        n += pd && !pd->ctx == mnet;
    }
    return n;
}

bool rnic_mnet_needed(RnicEngine *e)
{
    return rnic_pds_count(e, true) > 0;
}

void rnic_pds_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t i;

    /* multi-network PDs are in their own section (1.1 images) */
    rnic_image_put_u32(w, rnic_pds_count(e, false));
    for (i = 0; i < e->pds.cap; i++) {
        RnicPd *pd = e->pds.slots[i];

        if (pd && pd->ctx) {
            rnic_image_put_u32(w, pd->handle);
            rnic_image_put_u32(w, pd->owner);
            rnic_image_put_u32(w, pd->ctx->handle);
        }
    }
}

bool rnic_pds_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t n = rnic_image_get_u32(rd);
    uint32_t i;

    for (i = 0; i < n && !rd->overrun; i++) {
        uint32_t h = rnic_image_get_u32(rd);
        uint32_t owner = rnic_image_get_u32(rd);
        RnicNetCtx *c = rnic_netctx_lookup(e, rnic_image_get_u32(rd));

        LOAD_END(rd, "PD");
        LOAD_CHECK(c && rnic_uctx_valid(e, owner),
                   "PD %u: unknown context or owner", h);
        LOAD_CHECK(rnic_pd_create(e, h, c, owner),
                   "PD %u does not fit this device (max-pds=%u)", h,
                   e->cfg.max_pd);
    }
    LOAD_END(rd, "PD");
    return true;
}

void rnic_mnet_pds_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t i;

    rnic_image_put_u32(w, e->mnet_next_qpn);
    rnic_image_put_u32(w, rnic_pds_count(e, true));
    for (i = 0; i < e->pds.cap; i++) {
        RnicPd *pd = e->pds.slots[i];

        if (pd && !pd->ctx) {
            rnic_image_put_u32(w, pd->handle);
            rnic_image_put_u32(w, pd->owner);
        }
    }
}

bool rnic_mnet_pds_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t next = rnic_image_get_u32(rd);
    uint32_t n = rnic_image_get_u32(rd);
    uint32_t i;

    e->mnet_next_qpn = next >= 2 && next <= RNIC_QPN_MASK ? next : 2;
    for (i = 0; i < n && !rd->overrun; i++) {
        uint32_t h = rnic_image_get_u32(rd);
        uint32_t owner = rnic_image_get_u32(rd);

        LOAD_END(rd, "multi-network PD");
        LOAD_CHECK(rnic_uctx_valid(e, owner), "PD %u: unknown owner", h);
        LOAD_CHECK(rnic_pd_create(e, h, NULL, owner),
                   "PD %u does not fit this device (max-pds=%u)", h,
                   e->cfg.max_pd);
    }
    LOAD_END(rd, "multi-network PD");
    return true;
}

/*
 * Bindings of the RC QPs of multi-network PDs; loading binds them again,
 * which replicates the PDs' MRs (replayed from the log) into the contexts.
 */
void rnic_mnet_binds_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t i, n = 0;

    for (i = 0; i < e->qps.cap; i++) {
        RnicQp *qp = e->qps.slots[i];

        n += qp && !qp->pd->ctx && qp->ctx;
    }
    rnic_image_put_u32(w, n);
    for (i = 0; i < e->qps.cap; i++) {
        RnicQp *qp = e->qps.slots[i];

        if (qp && !qp->pd->ctx && qp->ctx) {
            rnic_image_put_u32(w, qp->handle);
            rnic_image_put_u32(w, qp->ctx->handle);
        }
    }
}

bool rnic_mnet_binds_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t n = rnic_image_get_u32(rd);
    uint32_t i;

    for (i = 0; i < n && !rd->overrun; i++) {
        uint32_t h = rnic_image_get_u32(rd);
        uint32_t c = rnic_image_get_u32(rd);
        RnicQp *qp = rnic_qp_lookup(e, h);
        RnicNetCtx *ctx = rnic_netctx_lookup(e, c);
        const char *why = "unknown QP or network context";
        uint8_t status;

        LOAD_END(rd, "multi-network binding");
        LOAD_CHECK(qp && ctx && rnic_qp_bind(e, qp, ctx, &why, &status),
                   "binding of QP %u to network context %u: %s", h, c, why);
    }
    LOAD_END(rd, "multi-network binding");
    return true;
}

/* ---------------------------------------------------------------------- */
/* EQs, CQs, SRQs                                                         */
/* ---------------------------------------------------------------------- */

void rnic_eqs_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t i;

    rnic_image_put_u32(w, e->eqs.count);
    for (i = 0; i < e->eqs.cap; i++) {
        RnicEq *eq = e->eqs.slots[i];

        if (eq) {
            rnic_image_put_u32(w, eq->handle);
            rnic_image_put_u64(w, eq->ring);
            rnic_image_put_u8(w, eq->log_size);
            rnic_image_put_u8(w, eq->flags);
            rnic_image_put_u32(w, eq->vector);
            rnic_image_put_u32(w, eq->prod);
            rnic_image_put_u32(w, eq->cons);
            rnic_image_put_u8(w, eq->armed);
            rnic_image_put_u8(w, eq->db_arm);
            rnic_image_put_u64(w, eq->lost);
        }
    }
}

bool rnic_eqs_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t n = rnic_image_get_u32(rd);
    uint32_t i;

    for (i = 0; i < n && !rd->overrun; i++) {
        uint32_t h = rnic_image_get_u32(rd);
        uint64_t ring = rnic_image_get_u64(rd);
        uint8_t log = rnic_image_get_u8(rd);
        uint8_t flags = rnic_image_get_u8(rd);
        uint32_t vector = rnic_image_get_u32(rd);
        uint32_t prod = rnic_image_get_u32(rd);
        uint32_t cons = rnic_image_get_u32(rd);
        uint8_t armed = rnic_image_get_u8(rd);
        uint8_t db_arm = rnic_image_get_u8(rd);
        uint64_t lost = rnic_image_get_u64(rd);
        RnicEq *eq;

        LOAD_END(rd, "EQ");
        LOAD_CHECK(rnic_ring_check(ring, log, RNIC_EQ_LOG_MIN,
                                   1u << RNIC_EQ_LOG_MAX,
                                   sizeof(struct rnic_eqe)) == RNIC_RING_OK &&
                   vector < e->cfg.msix_vectors && !(flags & ~RNIC_EQ_ASYNC) &&
                   prod - cons <= (1u << log) && armed <= 1 && db_arm <= 1,
                   "EQ %u: bad ring, vector or indexes", h);
        LOAD_CHECK(!(flags & RNIC_EQ_ASYNC) || !e->async_eq,
                   "EQ %u: a second async EQ", h);
        eq = rnic_eq_create(e, h);
        LOAD_CHECK(eq, "EQ %u does not fit this device (max-eqs=%u)", h,
                   e->cfg.max_eq);
        eq->ring = ring;
        eq->log_size = log;
        eq->flags = flags;
        eq->vector = vector;
        eq->prod = prod;
        eq->cons = cons;
        eq->armed = armed;
        eq->db_arm = db_arm;
        eq->lost = lost;
        if (flags & RNIC_EQ_ASYNC) {
            e->async_eq = eq;
        }
    }
    LOAD_END(rd, "EQ");
    return true;
}

void rnic_cqs_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t i;

    rnic_image_put_u32(w, e->cqs.count);
    for (i = 0; i < e->cqs.cap; i++) {
        RnicCq *cq = e->cqs.slots[i];

        if (cq) {
            rnic_image_put_u32(w, cq->handle);
            rnic_image_put_u32(w, cq->owner);
            rnic_image_put_u64(w, cq->ring);
            rnic_image_put_u8(w, cq->log_size);
            rnic_image_put_u32(w, cq->eq ? cq->eq->handle : RNIC_HANDLE_NONE);
            rnic_image_put_u32(w, cq->prod);
            rnic_image_put_u32(w, cq->cons);
            rnic_image_put_u8(w, cq->arm);
            rnic_image_put_u8(w, cq->db_arm);
            rnic_image_put_u8(w, cq->error);
        }
    }
}

bool rnic_cqs_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t n = rnic_image_get_u32(rd);
    uint32_t arms = (RNIC_DB_ARM_NEXT | RNIC_DB_ARM_SOLICITED) >> 24;
    uint32_t i;

    for (i = 0; i < n && !rd->overrun; i++) {
        uint32_t h = rnic_image_get_u32(rd);
        uint32_t owner = rnic_image_get_u32(rd);
        uint64_t ring = rnic_image_get_u64(rd);
        uint8_t log = rnic_image_get_u8(rd);
        uint32_t eqh = rnic_image_get_u32(rd);
        uint32_t prod = rnic_image_get_u32(rd);
        uint32_t cons = rnic_image_get_u32(rd);
        uint8_t arm = rnic_image_get_u8(rd);
        uint8_t db_arm = rnic_image_get_u8(rd);
        uint8_t error = rnic_image_get_u8(rd);
        RnicEq *eq = NULL;
        RnicCq *cq;

        LOAD_END(rd, "CQ");
        if (eqh != RNIC_HANDLE_NONE) {
            eq = rnic_eq_lookup(e, eqh);
            LOAD_CHECK(eq, "CQ %u: unknown EQ %u", h, eqh);
        }
        LOAD_CHECK(rnic_uctx_valid(e, owner) &&
                   rnic_ring_check(ring, log, RNIC_CQ_LOG_MIN, e->cfg.max_cqe,
                                   sizeof(struct rnic_cqe)) == RNIC_RING_OK &&
                   prod - cons <= (1u << log) && !(arm & ~arms) &&
                   !(db_arm & ~arms) && error <= 1,
                   "CQ %u: bad owner, ring or indexes", h);
        cq = rnic_cq_create(e, h);
        LOAD_CHECK(cq, "CQ %u does not fit this device (max-cqs=%u)", h,
                   e->cfg.max_cq);
        cq->owner = owner;
        cq->ring = ring;
        cq->log_size = log;
        cq->eq = eq;
        cq->prod = prod;
        cq->cons = cons;
        cq->arm = arm;
        cq->db_arm = db_arm;
        cq->error = error;
        if (eq) {
            eq->refs++;
        }
        rnic_uctx_get(e, owner);
    }
    LOAD_END(rd, "CQ");
    return true;
}

void rnic_srqs_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t i;

    rnic_image_put_u32(w, e->srqs.count);
    for (i = 0; i < e->srqs.cap; i++) {
        RnicSrq *s = e->srqs.slots[i];

        if (s) {
            rnic_image_put_u32(w, s->handle);
            rnic_image_put_u32(w, s->owner);
            rnic_image_put_u32(w, s->pd->handle);
            rnic_image_put_u64(w, s->ring);
            rnic_image_put_u8(w, s->log_size);
            rnic_image_put_u8(w, s->wqe_shift);
            rnic_image_put_u32(w, s->prod);
            rnic_image_put_u32(w, s->cons);
            rnic_image_put_u32(w, s->limit);
            rnic_image_put_u8(w, s->error);
        }
    }
}

bool rnic_srqs_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t n = rnic_image_get_u32(rd);
    uint32_t i;

    for (i = 0; i < n && !rd->overrun; i++) {
        uint32_t h = rnic_image_get_u32(rd);
        uint32_t owner = rnic_image_get_u32(rd);
        RnicPd *pd = rnic_pd_lookup(e, rnic_image_get_u32(rd));
        uint64_t ring = rnic_image_get_u64(rd);
        uint8_t log = rnic_image_get_u8(rd);
        uint8_t shift = rnic_image_get_u8(rd);
        uint32_t prod = rnic_image_get_u32(rd);
        uint32_t cons = rnic_image_get_u32(rd);
        uint32_t limit = rnic_image_get_u32(rd);
        uint8_t error = rnic_image_get_u8(rd);
        RnicSrq *s;

        LOAD_END(rd, "SRQ");
        LOAD_CHECK(pd && pd->owner == owner &&
                   shift >= RNIC_RQ_WQE_SHIFT_MIN &&
                   shift <= RNIC_WQE_SHIFT_MAX &&
                   rnic_ring_check(ring, log, RNIC_WQ_LOG_MIN,
                                   e->cfg.max_qp_wr,
                                   1u << shift) == RNIC_RING_OK &&
                   prod - cons <= (1u << log) && limit < (1u << log) &&
                   error <= 1, "SRQ %u: bad PD, ring or indexes", h);
        s = rnic_srq_create(e, h);
        LOAD_CHECK(s, "SRQ %u does not fit this device (max-srqs=%u)", h,
                   e->cfg.max_srq);
        s->owner = owner;
        s->pd = pd;
        s->ring = ring;
        s->log_size = log;
        s->wqe_shift = shift;
        s->prod = prod;
        s->cons = cons;
        s->limit = limit;
        s->error = error;
        pd->refs++;
        rnic_uctx_get(e, owner);
    }
    LOAD_END(rd, "SRQ");
    return true;
}

/* ---------------------------------------------------------------------- */
/* Registration log                                                       */
/* ---------------------------------------------------------------------- */

void rnic_mrlog_save(RnicEngine *e, RnicImageWriter *w)
{
    guint i;

    rnic_reglog_compact(e, false);
    rnic_image_put_u32(w, e->reglog->len);
    for (i = 0; i < e->reglog->len; i++) {
        const RnicRegLogRec *r = &g_array_index(e->reglog, RnicRegLogRec, i);
        const RnicPbl *p = r->pbl;

        rnic_image_put_u8(w, r->op);
        rnic_image_put_u8(w, r->kind);
        rnic_image_put_u32(w, r->net_ctx);
        rnic_image_put_u32(w, r->stag);
        rnic_image_put_u32(w, r->pd);
        rnic_image_put_u32(w, r->owner);
        rnic_image_put_u32(w, r->access);
        rnic_image_put_u32(w, r->max_pages);
        rnic_image_put_u64(w, r->iova);
        rnic_image_put_u64(w, r->length);
        rnic_image_put_u8(w, p != NULL);
        if (p) {
            uint32_t j, n = p->contiguous ? 1 : p->npages;

            rnic_image_put_u32(w, p->npages);
            rnic_image_put_u8(w, p->page_shift);
            rnic_image_put_u8(w, p->contiguous);
            for (j = 0; j < n; j++) {
                rnic_image_put_u64(w, p->pages[j]);
            }
        }
    }
}

bool rnic_mrlog_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t n = rnic_image_get_u32(rd);
    uint32_t i;

    for (i = 0; i < n && !rd->overrun; i++) {
        RnicRegLogRec r;
        bool ok;

        memset(&r, 0, sizeof(r));
        r.op = rnic_image_get_u8(rd);
        r.kind = rnic_image_get_u8(rd);
        r.net_ctx = rnic_image_get_u32(rd);
        r.stag = rnic_image_get_u32(rd);
        r.pd = rnic_image_get_u32(rd);
        r.owner = rnic_image_get_u32(rd);
        r.access = rnic_image_get_u32(rd);
        r.max_pages = rnic_image_get_u32(rd);
        r.iova = rnic_image_get_u64(rd);
        r.length = rnic_image_get_u64(rd);
        if (rnic_image_get_u8(rd)) {
            uint32_t npages = rnic_image_get_u32(rd);
            uint8_t shift = rnic_image_get_u8(rd);
            uint8_t contig = rnic_image_get_u8(rd);
            uint32_t j, cnt = contig ? 1 : npages;

            LOAD_END(rd, "registration log");
            /* never allocate more than the stream can hold */
            LOAD_CHECK(contig <= 1 && (uint64_t)cnt * 8 <= rd->len - rd->pos,
                       "registration log: page list of %u pages truncated",
                       npages);
            r.pbl = rnic_pbl_alloc(e, npages, shift, contig);
            LOAD_CHECK(r.pbl, "registration log: page list of %u pages "
                       "too big for this device", npages);
            for (j = 0; j < cnt; j++) {
                r.pbl->pages[j] = rnic_image_get_u64(rd);
            }
        }
        if (rd->overrun) {
            rnic_pbl_unref(e, r.pbl);
            break;
        }
        ok = rnic_reglog_replay(e, &r, err);
        rnic_pbl_unref(e, r.pbl);
        if (!ok) {
            return false;
        }
        /* the record named a live context, or the replay had refused it */
        if (r.net_ctx != RNIC_PD_MULTI_NET) {
            rnic_netctx_lookup(e, r.net_ctx)->log_replayed++;
        }
    }
    LOAD_END(rd, "registration log");
    return true;
}

/* ---------------------------------------------------------------------- */
/* QPs                                                                    */
/* ---------------------------------------------------------------------- */

static void rnic_sges_save(RnicImageWriter *w, const RnicSgeRes *sge,
                           uint32_t n)
{
    uint32_t i;

    rnic_image_put_u32(w, n);
    for (i = 0; i < n; i++) {
        rnic_image_put_u64(w, sge[i].addr);
        rnic_image_put_u32(w, sge[i].length);
        rnic_image_put_u32(w, sge[i].lkey);
    }
}

static bool rnic_sges_load(RnicImageReader *rd, RnicSgeRes *sge, uint32_t *n,
                           uint32_t max)
{
    uint32_t i;

    *n = rnic_image_get_u32(rd);
    if (*n > max) {
        return false;
    }
    for (i = 0; i < *n; i++) {
        sge[i].addr = rnic_image_get_u64(rd);
        sge[i].length = rnic_image_get_u32(rd);
        sge[i].lkey = rnic_image_get_u32(rd);
        sge[i].mr = NULL;
    }
    return !rd->overrun;
}

static void rnic_qp_save(RnicEngine *e, RnicImageWriter *w, const RnicQp *qp)
{
    const RnicResp *r = &qp->resp;
    uint64_t now = e->ops->clock_ns(e->opaque);
    uint32_t i, used;

    rnic_image_put_u32(w, qp->handle);
    rnic_image_put_u32(w, qp->qpn);
    rnic_image_put_u32(w, qp->owner);
    rnic_image_put_u8(w, qp->type);
    rnic_image_put_u8(w, qp->state);
    rnic_image_put_u32(w, qp->pd->handle);
    rnic_image_put_u32(w, qp->scq->handle);
    rnic_image_put_u32(w, qp->rcq->handle);
    rnic_image_put_u32(w, qp->srq ? qp->srq->handle : RNIC_HANDLE_NONE);
    rnic_image_put_u8(w, qp->sq_sig_all);
    /* send queue */
    rnic_image_put_u64(w, qp->sq_addr);
    rnic_image_put_u8(w, qp->sq_log);
    rnic_image_put_u8(w, qp->sq_shift);
    rnic_image_put_u32(w, qp->sq_prod);
    rnic_image_put_u32(w, qp->sq_next);
    rnic_image_put_u32(w, qp->sq_una);
    rnic_image_put_u32(w, qp->sq_hi);
    rnic_image_put_u32(w, qp->tx_pkt);
    for (i = qp->sq_una; i != qp->sq_hi; i++) {
        const RnicSqSlot *s = &qp->slots[i & ((1u << qp->sq_log) - 1)];

        rnic_image_put_u64(w, s->wr_id);
        rnic_image_put_u32(w, s->first_psn);
        rnic_image_put_u32(w, s->npsn);
        rnic_image_put_u32(w, s->length);
        rnic_image_put_u32(w, s->recv_psn);
        rnic_image_put_u8(w, s->opcode);
        rnic_image_put_u8(w, s->flags);
        rnic_image_put_u8(w, s->status);
        rnic_image_put_u8(w, s->state);
    }
    /* receive queue */
    rnic_image_put_u64(w, qp->rq_addr);
    rnic_image_put_u8(w, qp->rq_log);
    rnic_image_put_u8(w, qp->rq_shift);
    rnic_image_put_u32(w, qp->rq_prod);
    rnic_image_put_u32(w, qp->rq_cons);
    /* attributes */
    rnic_image_put_u8(w, qp->path_mtu);
    rnic_image_put_u8(w, qp->timeout);
    rnic_image_put_u8(w, qp->retry_cnt);
    rnic_image_put_u8(w, qp->rnr_retry);
    rnic_image_put_u8(w, qp->min_rnr_timer);
    rnic_image_put_u8(w, qp->max_rd_atomic);
    rnic_image_put_u8(w, qp->max_dest_rd_atomic);
    rnic_image_put_u8(w, qp->port);
    rnic_image_put_u16(w, qp->pkey_index);
    rnic_image_put_u32(w, qp->qkey);
    rnic_image_put_u32(w, qp->dest_qpn);
    rnic_image_put_u32(w, qp->access);
    rnic_image_put_bytes(w, &qp->av, sizeof(qp->av));
    rnic_image_put_u8(w, qp->sqd_notify);
    rnic_image_put_u8(w, qp->sq_drained);
    /* requester */
    rnic_image_put_u32(w, qp->req_psn);
    rnic_image_put_u32(w, qp->una_psn);
    rnic_image_put_u32(w, qp->rq_psn_init);
    rnic_image_put_u8(w, qp->retry_left);
    rnic_image_put_u8(w, qp->rnr_left);
    rnic_image_put_u32(w, qp->rd_outstanding);
    rnic_image_put_u8(w, qp->rnr_wait);
    rnic_image_put_u8(w, qp->sq_stalled);
    rnic_image_put_u8(w, qp->timer_kind);
    rnic_image_put_u64(w, qp->timer_kind == RNIC_TIMER_NONE ? 0 :
                       qp->timer_deadline > now ? qp->timer_deadline - now : 0);
    /* responder */
    rnic_image_put_u32(w, r->epsn);
    rnic_image_put_u32(w, r->msn);
    rnic_image_put_u8(w, r->in_msg);
    rnic_image_put_u8(w, r->nak_sent);
    rnic_image_put_u8(w, r->comm_est);
    rnic_image_put_u8(w, r->recv.valid);
    rnic_image_put_u8(w, r->recv.from_srq);
    rnic_image_put_u64(w, r->recv.wr_id);
    rnic_image_put_u32(w, r->recv.length);
    rnic_image_put_u32(w, r->recv.offset);
    rnic_sges_save(w, r->recv.sge, r->recv.valid ? r->recv.nsge : 0);
    rnic_image_put_u32(w, r->w_rkey);
    rnic_image_put_u64(w, r->w_va);
    rnic_image_put_u32(w, r->w_len);
    rnic_image_put_u32(w, r->w_done);
    rnic_image_put_u32(w, r->nres);
    rnic_image_put_u32(w, r->res_head);
    rnic_image_put_u32(w, r->res_send);
    rnic_image_put_u32(w, r->res_pending);
    /* only the resources in use: an idle QP costs no 38 bytes per slot */
    for (i = 0, used = 0; i < r->nres; i++) {
        used += r->res[i].kind != RNIC_RES_FREE;
    }
    rnic_image_put_u32(w, used);
    for (i = 0; i < r->nres; i++) {
        const RnicRespRes *res = &r->res[i];

        if (res->kind == RNIC_RES_FREE) {
            continue;
        }
        rnic_image_put_u32(w, i);
        rnic_image_put_u8(w, res->kind);
        rnic_image_put_u8(w, res->pending);
        rnic_image_put_u32(w, res->psn);
        rnic_image_put_u32(w, res->npsn);
        rnic_image_put_u32(w, res->next);
        rnic_image_put_u64(w, res->va);
        rnic_image_put_u32(w, res->rkey);
        rnic_image_put_u32(w, res->len);
        rnic_image_put_u64(w, res->orig);
    }
    rnic_image_put_u8(w, r->ack_owed);
    rnic_image_put_u32(w, r->ack_psn);
    rnic_image_put_u8(w, r->ack_syndrome);
    rnic_image_put_u32(w, qp->work_flags);
}

void rnic_qps_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t i;

    rnic_image_put_u32(w, e->qps.count);
    for (i = 0; i < e->qps.cap; i++) {
        if (e->qps.slots[i]) {
            rnic_qp_save(e, w, e->qps.slots[i]);
        }
    }
}

/* Load one QP; on failure a half-built QP is destroyed by the reset. */
static bool rnic_qp_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t h = rnic_image_get_u32(rd);
    uint32_t qpn = rnic_image_get_u32(rd);
    uint32_t owner = rnic_image_get_u32(rd);
    uint8_t type = rnic_image_get_u8(rd);
    uint8_t state = rnic_image_get_u8(rd);
    RnicPd *pd = rnic_pd_lookup(e, rnic_image_get_u32(rd));
    RnicCq *scq = rnic_cq_lookup(e, rnic_image_get_u32(rd));
    RnicCq *rcq = rnic_cq_lookup(e, rnic_image_get_u32(rd));
    uint32_t srqh = rnic_image_get_u32(rd);
    RnicSrq *srq = NULL;
    RnicResp *r;
    uint32_t i, k, mask, nres, used;
    uint64_t timer_left;
    RnicQp *qp;

    LOAD_END(rd, "QP");
    if (srqh != RNIC_HANDLE_NONE) {
        srq = rnic_srq_lookup(e, srqh);
        LOAD_CHECK(srq, "QP %u: unknown SRQ %u", h, srqh);
    }
    LOAD_CHECK(pd && scq && rcq && pd->owner == owner &&
               scq->owner == owner && rcq->owner == owner &&
               (!srq || (srq->owner == owner && srq->pd->ctx == pd->ctx)) &&
               type <= RNIC_QPT_GSI && state <= RNIC_QPS_ERR &&
               qpn >= 1 && qpn <= RNIC_QPN_MASK &&
               (qpn == RNIC_GSI_QPN) == (type == RNIC_QPT_GSI) &&
               rnic_qpn_free_for(e, pd, qpn),
               "QP %u: bad objects, type, state or QPN %u", h, qpn);
    qp = rnic_qp_create(e, h, qpn);
    LOAD_CHECK(qp, "QP %u does not fit this device (max-qps=%u)", h,
               e->cfg.max_qp);
    qp->owner = owner;
    qp->type = type;
    qp->state = state;
    qp->sq_sig_all = rnic_image_get_u8(rd) & 1;
    qp->sq_addr = rnic_image_get_u64(rd);
    qp->sq_log = rnic_image_get_u8(rd);
    qp->sq_shift = rnic_image_get_u8(rd);
    qp->sq_prod = rnic_image_get_u32(rd);
    qp->sq_next = rnic_image_get_u32(rd);
    qp->sq_una = rnic_image_get_u32(rd);
    qp->sq_hi = rnic_image_get_u32(rd);
    qp->tx_pkt = rnic_image_get_u32(rd);
    LOAD_END(rd, "QP");
    /* the rings first: they size what follows */
    LOAD_CHECK(qp->sq_shift >= RNIC_SQ_WQE_SHIFT_MIN &&
               qp->sq_shift <= RNIC_WQE_SHIFT_MAX &&
               rnic_ring_check(qp->sq_addr, qp->sq_log, RNIC_WQ_LOG_MIN,
                               e->cfg.max_qp_wr,
                               1u << qp->sq_shift) == RNIC_RING_OK &&
               qp->sq_prod - qp->sq_una <= (1u << qp->sq_log) &&
               qp->sq_hi - qp->sq_una <= qp->sq_prod - qp->sq_una &&
               qp->sq_next - qp->sq_una <= qp->sq_hi - qp->sq_una,
               "QP %u: bad send queue", h);
    /* attach: references, slots, limits derived from the strides */
    qp->rq_shift = RNIC_RQ_WQE_SHIFT_MIN;
    /* a multi-network PD's RC QP is bound by its section, later */
    qp->ctx = pd->ctx;
    qp->all_nets = !pd->ctx && type != RNIC_QPT_RC;
    qp->pd = pd;
    qp->scq = scq;
    qp->rcq = rcq;
    qp->srq = srq;
    LOAD_CHECK(rnic_qp_load_attach(e, qp),
               "QP %u: send queue of 2^%u slots passes the host memory "
               "budget (memory-budget-mib=%u)", h, qp->sq_log,
               e->cfg.mem_budget_mib);
    mask = (1u << qp->sq_log) - 1;
    for (i = qp->sq_una; i != qp->sq_hi; i++) {
        RnicSqSlot *s = &qp->slots[i & mask];

        s->wr_id = rnic_image_get_u64(rd);
        s->first_psn = rnic_image_get_u32(rd) & RNIC_PSN_MASK;
        s->npsn = rnic_image_get_u32(rd);
        s->length = rnic_image_get_u32(rd);
        s->recv_psn = rnic_image_get_u32(rd);
        s->opcode = rnic_image_get_u8(rd);
        s->flags = rnic_image_get_u8(rd);
        s->status = rnic_image_get_u8(rd);
        s->state = rnic_image_get_u8(rd);
        LOAD_CHECK(s->opcode < RNIC_WR_OPCODE_COUNT &&
                   s->state <= RNIC_SLOT_DONE && s->recv_psn <= s->npsn &&
                   s->npsn <= (1u << 23) && s->length <= RNIC_MAX_MSG_SIZE,
                   "QP %u: bad send slot %u", h, i);
    }
    qp->rq_addr = rnic_image_get_u64(rd);
    qp->rq_log = rnic_image_get_u8(rd);
    qp->rq_shift = rnic_image_get_u8(rd);
    qp->rq_prod = rnic_image_get_u32(rd);
    qp->rq_cons = rnic_image_get_u32(rd);
    LOAD_END(rd, "QP");
    if (!srq) {
        LOAD_CHECK(qp->rq_shift >= RNIC_RQ_WQE_SHIFT_MIN &&
                   qp->rq_shift <= RNIC_WQE_SHIFT_MAX &&
                   rnic_ring_check(qp->rq_addr, qp->rq_log, RNIC_WQ_LOG_MIN,
                                   e->cfg.max_qp_wr,
                                   1u << qp->rq_shift) == RNIC_RING_OK &&
                   qp->rq_prod - qp->rq_cons <= (1u << qp->rq_log),
                   "QP %u: bad receive queue", h);
        qp->rq_max_sge = MIN(e->cfg.max_sge, ((1u << qp->rq_shift) - 16) / 16);
    } else {
        /* a QP on an SRQ has no receive queue of its own */
        LOAD_CHECK(!qp->rq_log && !qp->rq_shift && qp->rq_prod == qp->rq_cons,
                   "QP %u: a receive queue besides its SRQ", h);
    }
    qp->path_mtu = rnic_image_get_u8(rd);
    qp->timeout = rnic_image_get_u8(rd);
    qp->retry_cnt = rnic_image_get_u8(rd);
    qp->rnr_retry = rnic_image_get_u8(rd);
    qp->min_rnr_timer = rnic_image_get_u8(rd);
    qp->max_rd_atomic = rnic_image_get_u8(rd);
    qp->max_dest_rd_atomic = rnic_image_get_u8(rd);
    qp->port = rnic_image_get_u8(rd);
    qp->pkey_index = rnic_image_get_u16(rd);
    qp->qkey = rnic_image_get_u32(rd);
    qp->dest_qpn = rnic_image_get_u32(rd);
    qp->access = rnic_image_get_u32(rd);
    rnic_image_get_bytes(rd, &qp->av, sizeof(qp->av));
    qp->sqd_notify = rnic_image_get_u8(rd) & 1;
    qp->sq_drained = rnic_image_get_u8(rd) & 1;
    LOAD_END(rd, "QP");
    LOAD_CHECK(qp->path_mtu >= RNIC_MTU_256 && qp->path_mtu <= RNIC_MTU_4096 &&
               qp->timeout <= 31 && qp->retry_cnt <= 7 && qp->rnr_retry <= 7 &&
               qp->min_rnr_timer <= 31 &&
               qp->max_rd_atomic <= e->cfg.max_rd_atomic &&
               qp->max_dest_rd_atomic <= e->cfg.max_rd_atomic &&
               qp->dest_qpn <= RNIC_QPN_MASK &&
               !(qp->access & ~RNIC_ACCESS_ALL),
               "QP %u: bad attributes", h);
    qp->req_psn = rnic_image_get_u32(rd) & RNIC_PSN_MASK;
    qp->una_psn = rnic_image_get_u32(rd) & RNIC_PSN_MASK;
    rnic_req_ackreq_restart(qp);    /* what is resent asks for its ACK */
    qp->rq_psn_init = rnic_image_get_u32(rd) & RNIC_PSN_MASK;
    qp->retry_left = rnic_image_get_u8(rd);
    qp->rnr_left = rnic_image_get_u8(rd);
    qp->rd_outstanding = rnic_image_get_u32(rd);
    qp->rnr_wait = rnic_image_get_u8(rd) & 1;
    qp->sq_stalled = rnic_image_get_u8(rd) & 1;
    qp->timer_kind = rnic_image_get_u8(rd);
    timer_left = rnic_image_get_u64(rd);
    LOAD_END(rd, "QP");
    LOAD_CHECK(qp->retry_left <= 7 && qp->rnr_left <= 7 &&
               qp->rd_outstanding <= qp->sq_hi - qp->sq_una &&
               qp->timer_kind <= RNIC_TIMER_RNR,
               "QP %u: bad requester state", h);
    /* responder */
    r = &qp->resp;
    r->epsn = rnic_image_get_u32(rd) & RNIC_PSN_MASK;
    r->msn = rnic_image_get_u32(rd) & RNIC_PSN_MASK;
    r->in_msg = rnic_image_get_u8(rd);
    r->nak_sent = rnic_image_get_u8(rd) & 1;
    r->comm_est = rnic_image_get_u8(rd) & 1;
    r->recv.valid = rnic_image_get_u8(rd) & 1;
    r->recv.from_srq = rnic_image_get_u8(rd) & 1;
    r->recv.wr_id = rnic_image_get_u64(rd);
    r->recv.length = rnic_image_get_u32(rd);
    r->recv.offset = rnic_image_get_u32(rd);
    LOAD_CHECK(rnic_sges_load(rd, r->recv.sge, &r->recv.nsge,
                              e->cfg.max_sge) &&
               r->in_msg <= RNIC_RESP_WRITE &&
               r->recv.offset <= r->recv.length &&
               r->recv.length <= RNIC_MAX_MSG_SIZE,
               "QP %u: bad receive in progress", h);
    r->recv.mr_gen = 0;         /* resolved again on first use */
    r->w_rkey = rnic_image_get_u32(rd);
    r->w_va = rnic_image_get_u64(rd);
    r->w_len = rnic_image_get_u32(rd);
    r->w_done = rnic_image_get_u32(rd);
    nres = rnic_image_get_u32(rd);
    r->res_head = rnic_image_get_u32(rd);
    r->res_send = rnic_image_get_u32(rd);
    r->res_pending = rnic_image_get_u32(rd);
    LOAD_END(rd, "QP");
    LOAD_CHECK(nres >= 1 && nres <= e->cfg.max_rd_atomic &&
               r->res_pending <= nres && r->w_done <= r->w_len,
               "QP %u: bad responder resources", h);
    r->nres = nres;
    used = rnic_image_get_u32(rd);
    LOAD_CHECK(used <= nres, "QP %u: %u responder resources in use of %u", h,
               used, nres);
    for (k = 0; k < used; k++) {
        RnicRespRes *res;

        i = rnic_image_get_u32(rd);
        LOAD_CHECK(i < nres && r->res[i].kind == RNIC_RES_FREE,
                   "QP %u: bad responder resource index %u", h, i);
        res = &r->res[i];
        res->kind = rnic_image_get_u8(rd);
        res->pending = rnic_image_get_u8(rd) & 1;
        res->psn = rnic_image_get_u32(rd) & RNIC_PSN_MASK;
        res->npsn = rnic_image_get_u32(rd);
        res->next = rnic_image_get_u32(rd);
        res->va = rnic_image_get_u64(rd);
        res->rkey = rnic_image_get_u32(rd);
        res->len = rnic_image_get_u32(rd);
        res->orig = rnic_image_get_u64(rd);
        LOAD_CHECK(res->kind != RNIC_RES_FREE &&
                   res->kind <= RNIC_RES_ATOMIC && res->next <= res->npsn &&
                   res->npsn <= (1u << 23) && res->len <= RNIC_MAX_MSG_SIZE,
                   "QP %u: bad responder resource %u", h, i);
    }
    r->ack_owed = rnic_image_get_u8(rd) & 1;
    r->ack_psn = rnic_image_get_u32(rd) & RNIC_PSN_MASK;
    r->ack_syndrome = rnic_image_get_u8(rd);
    qp->work_flags = rnic_image_get_u32(rd) &
                     (RNIC_QPW_SQ | RNIC_QPW_RQ | RNIC_QPW_RESP);
    LOAD_END(rd, "QP");
    if (qp->timer_kind != RNIC_TIMER_NONE) {
        /* restarted on this host's clock with the time that was left */
        uint8_t kind = qp->timer_kind;

        qp->timer_kind = RNIC_TIMER_NONE;
        rnic_qp_timer_set(e, qp, kind,
                          CLAMP(timer_left, 1, rnic_ack_timeout_ns(31)));
    }
    return true;
}

bool rnic_qps_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t n = rnic_image_get_u32(rd);
    uint32_t i;

    for (i = 0; i < n && !rd->overrun; i++) {
        if (!rnic_qp_load(e, rd, err)) {
            return false;
        }
    }
    LOAD_END(rd, "QP");
    return true;
}

/*
 * The first run after a load (the VM runs): every connected RC QP prompts
 * its peer to resend what it lost at the switchover (rnic_resp_prompt), so
 * the peer's pause is the switchover, not the switchover plus its ACK
 * timeout. Not in the image: set by the load, done by the next run.
 */
#define RNIC_PROMPT_PER_RUN 256     /* QP handles visited (a frame each) */

void rnic_state_prompt_peers(RnicEngine *e)
{
    uint32_t i, end = MIN(e->qps.cap, e->prompt_next + RNIC_PROMPT_PER_RUN);

    for (i = e->prompt_next; i < end; i++) {
        if (e->qps.slots[i]) {
            rnic_resp_prompt(e, e->qps.slots[i]);
        }
    }
    e->prompt_next = end;
    if (end < e->qps.cap) {
        rnic_engine_schedule(e);    /* the rest in the next run */
    } else {
        e->prompt_peers = false;
    }
}

/*
 * Invariants across sections, checked once every section is loaded: what
 * one section may only state because another one did. NULL when they
 * hold, else a newly allocated message.
 */
char *rnic_state_check(RnicEngine *e)
{
    uint32_t i;

    for (i = 0; i < e->qps.cap; i++) {
        RnicQp *qp = e->qps.slots[i];

        /* a connected QP sends and receives in a network context */
        if (qp && !qp->ctx && !qp->all_nets &&
            (qp->state == RNIC_QPS_RTR || qp->state == RNIC_QPS_RTS ||
             qp->state == RNIC_QPS_SQD || qp->state == RNIC_QPS_SQE)) {
            return g_strdup_printf("QP %u of a multi-network PD is "
                                   "connected (state %u) but bound to no "
                                   "network context", qp->handle,
                                   qp->state);
        }
    }
    return NULL;
}

void rnic_state_post_load(RnicEngine *e)
{
    uint32_t i;

    e->prompt_peers = true;
    e->prompt_next = 0;
    e->mr_gen++;
    e->qp_gen++;
    for (i = 0; i < e->qps.cap; i++) {
        RnicQp *qp = e->qps.slots[i];

        if (qp) {
            /* whatever was outstanding gets looked at again */
            rnic_req_resume(e, qp);
            rnic_qp_work(e, qp, RNIC_QPW_SQ | qp->work_flags |
                         (qp->resp.res_pending || qp->resp.ack_owed ?
                          RNIC_QPW_RESP : 0));
        }
    }
    for (i = 0; i < e->cqs.cap; i++) {
        RnicCq *cq = e->cqs.slots[i];

        if (cq && cq->db_arm) {
            rnic_work_queue(e, &cq->work);
        }
    }
    for (i = 0; i < e->eqs.cap; i++) {
        RnicEq *eq = e->eqs.slots[i];

        if (eq && eq->db_arm) {
            rnic_work_queue(e, &eq->work);
        }
    }
    /* one run in any case: admin commands the source had not fetched yet */
    rnic_engine_schedule(e);
}
