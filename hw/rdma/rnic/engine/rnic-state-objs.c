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
 * An object's fields are listed once, in a table (RnicImageField,
 * rnic-image.h), and its section once (RnicStateSection, rnic-state.h):
 * the walker in rnic-state.c saves, loads and dumps the count and the
 * records from them. What stays code here is what is not a field: a
 * record's load (read, check, create), the lists (send-queue slots, SGEs,
 * responder resources), the time left on a timer, and the sections whose
 * records are not one table's objects as they are.
 *
 * Loading trusts nothing: a record is read into a staging struct (or the
 * object being rebuilt), checked, and only then becomes an object. Every
 * handle must name an object loaded before, every index and size must be
 * in range, and an object's parameters must pass the check its create
 * command applies (rnic_eq_check_params and the others, rnic_ring_check
 * for the QPs' rings), or the load fails with a message.
 */
#include <string.h>
#include "rnic-state.h"
#include "rnic-mr.h"
#include "rnic/rnic-abi-names.h"

#define LOAD_CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            *err = g_strdup_printf(__VA_ARGS__); \
            return false; \
        } \
    } while (0)

#define LOAD_END(rd, what) \
    LOAD_CHECK(!(rd)->overrun, "%s section truncated", what)

/* A reference is saved as the handle the object starts with (REF). */
G_STATIC_ASSERT(offsetof(RnicNetCtx, handle) == 0);
G_STATIC_ASSERT(offsetof(RnicPd, handle) == 0);
G_STATIC_ASSERT(offsetof(RnicEq, handle) == 0);
G_STATIC_ASSERT(offsetof(RnicCq, handle) == 0);
G_STATIC_ASSERT(offsetof(RnicSrq, handle) == 0);

/* PSNs and MSNs: a u32 of which a load keeps the 24 bits */
#define RNIC_IMG_PSN(T, f)  RNIC_IMG_U32_MASK(T, f, RNIC_ROCE_PSN_MASK)

/* ---------------------------------------------------------------------- */
/* User contexts, network contexts, GIDs, PDs                             */
/* ---------------------------------------------------------------------- */

/* a user context is its handle, the doorbell page */
static const RnicImageField rnic_uctx_fields[] = {
    RNIC_IMG_END
};

static bool rnic_uctx_load_one(RnicEngine *e, RnicImageReader *rd,
                               char **err)
{
    uint32_t u = rnic_image_get_u32(rd);

    LOAD_CHECK(u >= 1 && u < e->cfg.db_pages &&
               !rnic_table_get(&e->uctxs, u), "bad user context %u", u);
    LOAD_CHECK(rnic_uctx_create(e, u), "user context %u: host memory budget "
               "exhausted", u);
    return true;
}

static void rnic_uctx_dump_one(RnicImageReader *rd, GString *out, uint32_t i)
{
    g_autofree char *name = g_strdup_printf("uctx[%u]", i);

    rnic_image_dump_u32(rd, out, NULL, name);
}

const RnicStateSection rnic_uctx_section = {
    .tag = RNIC_SEC_UCTX, .name = "user contexts", .record = "user context",
    .table = offsetof(RnicEngine, uctxs), .fields = rnic_uctx_fields,
    .load_one = rnic_uctx_load_one, .dump_one = rnic_uctx_dump_one,
};

static const RnicImageField rnic_netctx_fields[] = {
    RNIC_IMG_U8(RnicNetCtx, net_type),
    RNIC_IMG_U32(RnicNetCtx, net_id),
    RNIC_IMG_U32(RnicNetCtx, next_qpn),
    RNIC_IMG_END
};

static bool rnic_netctx_load_one(RnicEngine *e, RnicImageReader *rd,
                                 char **err)
{
    uint32_t h = rnic_image_get_u32(rd);
    g_autofree char *why = NULL;
    RnicNetCtx in = { 0 };
    RnicNetCtx *c;
    uint8_t status;

    rnic_image_get_fields(rd, rnic_netctx_fields, &in, NULL);
    LOAD_END(rd, "network context");
    why = rnic_netctx_check_params(e, in.net_type, in.net_id, &status);
    LOAD_CHECK(!why, "network context %u: %s", h, why);
    c = rnic_netctx_create(e, h, in.net_type, in.net_id);
    LOAD_CHECK(c, "network context %u does not fit this device "
               "(max-net-ctx=%u)", h, e->cfg.max_net_ctx);
    c->next_qpn = in.next_qpn >= 2 && in.next_qpn <= RNIC_ROCE_QPN_MASK ?
                  in.next_qpn : 2;
    return true;
}

const RnicStateSection rnic_netctx_section = {
    .tag = RNIC_SEC_NET_CTX, .name = "network contexts",
    .record = "network context", .key = "net_ctx",
    .table = offsetof(RnicEngine, net_ctxs), .fields = rnic_netctx_fields,
    .load_one = rnic_netctx_load_one,
};

static const RnicImageField rnic_gid_fields[] = {
    RNIC_IMG_BYTES(RnicGid, gid),
    RNIC_IMG_U32(RnicGid, net_ctx),
    RNIC_IMG_U8(RnicGid, type),
    RNIC_IMG_END
};

static void rnic_gids_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t i, n = 0;

    for (i = 0; i < e->cfg.max_gid; i++) {
        n += e->gids[i].valid;
    }
    rnic_image_put_u32(w, n);
    for (i = 0; i < e->cfg.max_gid; i++) {
        if (e->gids[i].valid) {
            rnic_image_put_u32(w, i);
            rnic_image_put_fields(w, rnic_gid_fields, &e->gids[i]);
        }
    }
}

static bool rnic_gid_load_one(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t index = rnic_image_get_u32(rd);
    g_autofree char *why = NULL;
    RnicGid in = { 0 };
    RnicNetCtx *c;
    uint8_t status;

    rnic_image_get_fields(rd, rnic_gid_fields, &in, NULL);
    LOAD_END(rd, "GID");
    why = rnic_gid_check_params(e, index, in.net_ctx, in.type, in.gid, &c,
                                &status);
    LOAD_CHECK(!why, "GID %u: %s", index, why);
    in.valid = true;
    e->gids[index] = in;
    c->refs++;
    return true;
}

const RnicStateSection rnic_gids_section = {
    .tag = RNIC_SEC_GIDS, .name = "GID table", .record = "GID", .key = "gid",
    .fields = rnic_gid_fields, .load_one = rnic_gid_load_one,
    .save = rnic_gids_save,
};

/* PDs of one network context, or (mnet) the multi-network ones. */
static uint32_t rnic_pds_count(RnicEngine *e, bool mnet)
{
    uint32_t i, n = 0;
    RnicPd *pd;

    RNIC_TABLE_FOREACH(&e->pds, i, pd) {
        n += !pd->ctx == mnet;
    }
    return n;
}

/* Are there multi-network PDs (their sections are written)? */
static bool rnic_mnet_needed(RnicEngine *e)
{
    return rnic_pds_count(e, true) > 0;
}

static const RnicImageField rnic_pd_fields[] = {
    RNIC_IMG_U32(RnicPd, owner),
    RNIC_IMG_REF(RnicPd, ctx),
    RNIC_IMG_END
};

/* a multi-network PD belongs to no context */
static const RnicImageField rnic_mnet_pd_fields[] = {
    RNIC_IMG_U32(RnicPd, owner),
    RNIC_IMG_END
};

static void rnic_pds_put(RnicEngine *e, RnicImageWriter *w, bool mnet)
{
    uint32_t i;
    RnicPd *pd;

    rnic_image_put_u32(w, rnic_pds_count(e, mnet));
    RNIC_TABLE_FOREACH(&e->pds, i, pd) {
        if (!pd->ctx == mnet) {
            rnic_image_put_u32(w, pd->handle);
            rnic_image_put_fields(w, mnet ? rnic_mnet_pd_fields :
                                  rnic_pd_fields, pd);
        }
    }
}

static bool rnic_pd_load(RnicEngine *e, RnicImageReader *rd, bool mnet,
                         char **err)
{
    const char *what = mnet ? "multi-network PD" : "PD";
    uint32_t h = rnic_image_get_u32(rd);
    uint32_t ctx = RNIC_PD_MULTI_NET;
    g_autofree char *why = NULL;
    RnicPd in = { 0 };
    RnicNetCtx *c;
    uint8_t status;

    rnic_image_get_fields(rd, mnet ? rnic_mnet_pd_fields : rnic_pd_fields,
                          &in, &ctx);
    LOAD_END(rd, what);
    why = rnic_pd_check_params(e, in.owner, ctx, &c, &status);
    LOAD_CHECK(!why, "%s %u: %s", what, h, why);
    LOAD_CHECK(mnet || c, "PD %u: no network context (a multi-network PD "
               "among the others)", h);
    LOAD_CHECK(rnic_pd_create(e, h, c, in.owner),
               "PD %u does not fit this device (max-pds=%u)", h,
               e->cfg.max_pd);
    return true;
}

static bool rnic_pd_load_one(RnicEngine *e, RnicImageReader *rd, char **err)
{
    return rnic_pd_load(e, rd, false, err);
}

static bool rnic_mnet_pd_load_one(RnicEngine *e, RnicImageReader *rd,
                                  char **err)
{
    return rnic_pd_load(e, rd, true, err);
}

static void rnic_pds_save(RnicEngine *e, RnicImageWriter *w)
{
    /* multi-network PDs are in their own section (1.1 images) */
    rnic_pds_put(e, w, false);
}

const RnicStateSection rnic_pds_section = {
    .tag = RNIC_SEC_PDS, .name = "PDs", .record = "PD", .key = "pd",
    .fields = rnic_pd_fields, .load_one = rnic_pd_load_one,
    .save = rnic_pds_save,
};

/* The multi-network PDs: the next QPN of their QPs, then the PDs. */
static void rnic_mnet_pds_save(RnicEngine *e, RnicImageWriter *w)
{
    rnic_image_put_u32(w, e->mnet_next_qpn);
    rnic_pds_put(e, w, true);
}

static bool rnic_mnet_pds_load(RnicEngine *e, RnicImageReader *rd,
                               char **err)
{
    uint32_t next = rnic_image_get_u32(rd);

    e->mnet_next_qpn = next >= 2 && next <= RNIC_ROCE_QPN_MASK ? next : 2;
    return rnic_state_records_load(e, rd, err, &rnic_mnet_pds_section);
}

static void rnic_mnet_pds_dump(RnicImageReader *rd, GString *out)
{
    rnic_image_dump_u32(rd, out, NULL, "mnet_next_qpn");
    rnic_state_records_dump(rd, out, &rnic_mnet_pds_section);
}

const RnicStateSection rnic_mnet_pds_section = {
    .tag = RNIC_SEC_MNET_PDS, .name = "multi-network PDs",
    .record = "multi-network PD", .key = "pd",
    .fields = rnic_mnet_pd_fields, .load_one = rnic_mnet_pd_load_one,
    .needed = rnic_mnet_needed, .save = rnic_mnet_pds_save,
    .load = rnic_mnet_pds_load, .dump = rnic_mnet_pds_dump,
};

/*
 * Bindings of the RC QPs of multi-network PDs; loading binds them again,
 * which replicates the PDs' MRs (replayed from the log) into the contexts.
 * A record is the QP's handle and its context's.
 */
static void rnic_mnet_binds_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t i, n = 0;
    RnicQp *qp;

    RNIC_TABLE_FOREACH(&e->qps, i, qp) {
        n += !qp->pd->ctx && qp->ctx;
    }
    rnic_image_put_u32(w, n);
    RNIC_TABLE_FOREACH(&e->qps, i, qp) {
        if (!qp->pd->ctx && qp->ctx) {
            rnic_image_put_u32(w, qp->handle);
            rnic_image_put_u32(w, qp->ctx->handle);
        }
    }
}

static bool rnic_mnet_bind_load_one(RnicEngine *e, RnicImageReader *rd,
                                    char **err)
{
    uint32_t h = rnic_image_get_u32(rd);
    uint32_t c = rnic_image_get_u32(rd);
    RnicQp *qp = rnic_qp_lookup(e, h);
    RnicNetCtx *ctx = rnic_netctx_lookup(e, c);
    const char *why = "unknown QP or network context";
    uint8_t status;

    LOAD_END(rd, "multi-network binding");
    LOAD_CHECK(qp && ctx && rnic_qp_bind(e, qp, ctx, &why, &status),
               "binding of QP %u to network context %u: %s", h, c, why);
    return true;
}

static void rnic_mnet_bind_dump_one(RnicImageReader *rd, GString *out,
                                    uint32_t i)
{
    g_autofree char *key = g_strdup_printf("qp[%u]", rnic_image_get_u32(rd));

    rnic_image_dump_u32(rd, out, key, "ctx");
}

const RnicStateSection rnic_mnet_binds_section = {
    .tag = RNIC_SEC_MNET_BINDS, .name = "multi-network bindings",
    .record = "multi-network binding",
    .load_one = rnic_mnet_bind_load_one, .dump_one = rnic_mnet_bind_dump_one,
    .needed = rnic_mnet_needed, .save = rnic_mnet_binds_save,
};

/* ---------------------------------------------------------------------- */
/* EQs, CQs, SRQs                                                         */
/* ---------------------------------------------------------------------- */

static const RnicImageField rnic_eq_fields[] = {
    RNIC_IMG_U64(RnicEq, ring),
    RNIC_IMG_U8(RnicEq, log_size),
    RNIC_IMG_U8(RnicEq, flags),
    RNIC_IMG_U32(RnicEq, vector),
    RNIC_IMG_U32(RnicEq, prod),
    RNIC_IMG_U32(RnicEq, cons),
    RNIC_IMG_BOOL(RnicEq, armed),
    RNIC_IMG_BOOL(RnicEq, db_arm),
    RNIC_IMG_U64(RnicEq, lost),
    RNIC_IMG_END
};

static bool rnic_eq_load_one(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t h = rnic_image_get_u32(rd);
    g_autofree char *why = NULL;
    RnicEq in = { 0 };
    uint8_t status;
    RnicEq *eq;
    bool clean;

    clean = rnic_image_get_fields(rd, rnic_eq_fields, &in, NULL);
    LOAD_END(rd, "EQ");
    why = rnic_eq_check_params(e, in.ring, in.log_size, in.vector, in.flags,
                               &status);
    LOAD_CHECK(!why, "EQ %u: %s", h, why);
    LOAD_CHECK(clean && in.prod - in.cons <= (1u << in.log_size),
               "EQ %u: bad indexes, or a bool not 0 or 1", h);
    eq = rnic_eq_create(e, h);
    LOAD_CHECK(eq, "EQ %u does not fit this device (max-eqs=%u)", h,
               e->cfg.max_eq);
    rnic_image_copy_fields(rnic_eq_fields, eq, &in);
    if (eq->flags & RNIC_EQ_ASYNC) {
        e->async_eq = eq;
    }
    return true;
}

const RnicStateSection rnic_eqs_section = {
    .tag = RNIC_SEC_EQS, .name = "EQs", .record = "EQ", .key = "eq",
    .table = offsetof(RnicEngine, eqs), .fields = rnic_eq_fields,
    .load_one = rnic_eq_load_one,
};

static const RnicImageField rnic_cq_fields[] = {
    RNIC_IMG_U32(RnicCq, owner),
    RNIC_IMG_U64(RnicCq, ring),
    RNIC_IMG_U8(RnicCq, log_size),
    RNIC_IMG_REF(RnicCq, eq),
    RNIC_IMG_U32(RnicCq, prod),
    RNIC_IMG_U32(RnicCq, cons),
    RNIC_IMG_U8(RnicCq, arm),
    RNIC_IMG_U8(RnicCq, db_arm),
    RNIC_IMG_BOOL(RnicCq, error),
    RNIC_IMG_END
};

static bool rnic_cq_load_one(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t arms = (RNIC_DB_ARM_NEXT | RNIC_DB_ARM_SOLICITED) >> 24;
    uint32_t h = rnic_image_get_u32(rd);
    g_autofree char *why = NULL;
    uint32_t eqh;
    RnicCq in = { 0 };
    uint8_t status;
    RnicEq *eq;
    RnicCq *cq;
    bool clean;

    clean = rnic_image_get_fields(rd, rnic_cq_fields, &in, &eqh);
    LOAD_END(rd, "CQ");
    why = rnic_cq_check_params(e, in.owner, eqh, in.ring, in.log_size, &eq,
                               &status);
    LOAD_CHECK(!why, "CQ %u: %s", h, why);
    LOAD_CHECK(clean && in.prod - in.cons <= (1u << in.log_size) &&
               !(in.arm & ~arms) && !(in.db_arm & ~arms),
               "CQ %u: bad indexes or arming, or a bool not 0 or 1", h);
    cq = rnic_cq_create(e, h);
    LOAD_CHECK(cq, "CQ %u does not fit this device (max-cqs=%u)", h,
               e->cfg.max_cq);
    rnic_image_copy_fields(rnic_cq_fields, cq, &in);
    cq->eq = eq;
    if (eq) {
        eq->refs++;
    }
    rnic_uctx_get(e, cq->owner);
    return true;
}

const RnicStateSection rnic_cqs_section = {
    .tag = RNIC_SEC_CQS, .name = "CQs", .record = "CQ", .key = "cq",
    .table = offsetof(RnicEngine, cqs), .fields = rnic_cq_fields,
    .load_one = rnic_cq_load_one,
};

static const RnicImageField rnic_srq_fields[] = {
    RNIC_IMG_U32(RnicSrq, owner),
    RNIC_IMG_REF(RnicSrq, pd),
    RNIC_IMG_U64(RnicSrq, ring),
    RNIC_IMG_U8(RnicSrq, log_size),
    RNIC_IMG_U8(RnicSrq, wqe_shift),
    RNIC_IMG_U32(RnicSrq, prod),
    RNIC_IMG_U32(RnicSrq, cons),
    RNIC_IMG_U32(RnicSrq, limit),
    RNIC_IMG_BOOL(RnicSrq, error),
    RNIC_IMG_END
};

static bool rnic_srq_load_one(RnicEngine *e, RnicImageReader *rd,
                              char **err)
{
    uint32_t h = rnic_image_get_u32(rd);
    g_autofree char *why = NULL;
    uint32_t pdh;
    RnicSrq in = { 0 };
    RnicSrq *s;
    RnicPd *pd;
    bool clean;

    clean = rnic_image_get_fields(rd, rnic_srq_fields, &in, &pdh);
    pd = rnic_pd_lookup(e, pdh);
    LOAD_END(rd, "SRQ");
    /* the PD as a command's lookup finds it: the SRQ's owner's */
    LOAD_CHECK(pd && pd->owner == in.owner, "SRQ %u: PD %u unknown or of "
               "another owner", h, pdh);
    why = rnic_srq_check_params(e, in.ring, in.log_size, in.wqe_shift,
                                in.limit);
    LOAD_CHECK(!why, "SRQ %u: %s", h, why);
    LOAD_CHECK(clean && in.prod - in.cons <= (1u << in.log_size),
               "SRQ %u: bad indexes, or a bool not 0 or 1", h);
    s = rnic_srq_create(e, h);
    LOAD_CHECK(s, "SRQ %u does not fit this device (max-srqs=%u)", h,
               e->cfg.max_srq);
    rnic_image_copy_fields(rnic_srq_fields, s, &in);
    s->pd = pd;
    pd->refs++;
    rnic_uctx_get(e, s->owner);
    return true;
}

const RnicStateSection rnic_srqs_section = {
    .tag = RNIC_SEC_SRQS, .name = "SRQs", .record = "SRQ", .key = "srq",
    .table = offsetof(RnicEngine, srqs), .fields = rnic_srq_fields,
    .load_one = rnic_srq_load_one,
};

/* ---------------------------------------------------------------------- */
/* Registration log                                                       */
/* ---------------------------------------------------------------------- */

static const RnicImageField rnic_reglog_fields[] = {
    RNIC_IMG_U8(RnicRegLogRec, op),
    RNIC_IMG_U8(RnicRegLogRec, kind),
    RNIC_IMG_U32(RnicRegLogRec, net_ctx),
    RNIC_IMG_U32(RnicRegLogRec, stag),
    RNIC_IMG_U32(RnicRegLogRec, pd),
    RNIC_IMG_U32(RnicRegLogRec, owner),
    RNIC_IMG_U32(RnicRegLogRec, access),
    RNIC_IMG_U32(RnicRegLogRec, max_pages),
    RNIC_IMG_U64(RnicRegLogRec, iova),
    RNIC_IMG_U64(RnicRegLogRec, length),
    RNIC_IMG_END
};

/*
 * What follows a record: a u8 saying what, then a page list (this head,
 * then its pages) or a mapped STag's segment table (its count and repeat,
 * then each segment as struct rnic_map_seg has it).
 */
enum {
    RNIC_MRLOG_NONE = 0,
    RNIC_MRLOG_PBL = 1,
    RNIC_MRLOG_MAP = 2,
};
static const RnicImageField rnic_pbl_fields[] = {
    RNIC_IMG_U32(RnicPbl, npages),
    RNIC_IMG_U8(RnicPbl, page_shift),
    RNIC_IMG_BOOL(RnicPbl, contiguous),
    RNIC_IMG_END
};

/* Pages in the image: one, the base, for a contiguous range. */
static uint32_t rnic_pbl_saved_pages(const RnicPbl *p)
{
    return p->contiguous ? 1 : p->npages;
}

static void rnic_map_save(RnicImageWriter *w, const RnicMap *map)
{
    g_autofree struct rnic_map_seg *t = g_new(struct rnic_map_seg,
                                              map->nsegs);
    uint32_t j;

    rnic_map_export(map, t);
    rnic_image_put_u32(w, map->nsegs);
    rnic_image_put_u32(w, map->repeat);
    for (j = 0; j < map->nsegs; j++) {
        rnic_image_put_u64(w, GUINT64_FROM_LE(t[j].addr));
        rnic_image_put_u32(w, GUINT32_FROM_LE(t[j].length));
        rnic_image_put_u32(w, GUINT32_FROM_LE(t[j].lkey));
        rnic_image_put_u32(w, GUINT32_FROM_LE(t[j].skip));
    }
}

static void rnic_mrlog_save(RnicEngine *e, RnicImageWriter *w)
{
    guint i;

    /*
     * Only the live entries travel: the records of deregistered MRs may
     * name a PD that is gone by now, or whose handle another PD has taken,
     * and the destination could not replay them (work of the order of the
     * live MRs, as the image itself)
     */
    rnic_reglog_compact(e, true);
    rnic_image_put_u32(w, e->reglog->len);
    for (i = 0; i < e->reglog->len; i++) {
        const RnicRegLogRec *r = &g_array_index(e->reglog, RnicRegLogRec, i);
        const RnicPbl *p = r->pbl;
        uint32_t j;

        rnic_image_put_fields(w, rnic_reglog_fields, r);
        rnic_image_put_u8(w, p ? RNIC_MRLOG_PBL :
                             r->map ? RNIC_MRLOG_MAP : RNIC_MRLOG_NONE);
        if (p) {
            rnic_image_put_fields(w, rnic_pbl_fields, p);
            for (j = 0; j < rnic_pbl_saved_pages(p); j++) {
                rnic_image_put_u64(w, p->pages[j]);
            }
        } else if (r->map) {
            rnic_map_save(w, r->map);
        }
    }
}

/* A segment table: checked as a guest's (rnic_map_new), never trusted. */
static bool rnic_map_load(RnicEngine *e, RnicImageReader *rd,
                          const RnicRegLogRec *r, RnicMap **map, char **err)
{
    g_autofree struct rnic_map_seg *t = NULL;
    uint32_t n = rnic_image_get_u32(rd), repeat = rnic_image_get_u32(rd);
    const char *why;
    uint32_t j;

    LOAD_END(rd, "registration log");
    /* never allocate more than the stream can hold */
    LOAD_CHECK(n && n <= RNIC_MAP_MAX_SEGS &&
               (uint64_t)n * 20 <= rd->len - rd->pos,
               "registration log: segment table of %u segments truncated "
               "or too long", n);
    t = g_new0(struct rnic_map_seg, n);
    for (j = 0; j < n; j++) {
        t[j].addr = GUINT64_TO_LE(rnic_image_get_u64(rd));
        t[j].length = GUINT32_TO_LE(rnic_image_get_u32(rd));
        t[j].lkey = GUINT32_TO_LE(rnic_image_get_u32(rd));
        t[j].skip = GUINT32_TO_LE(rnic_image_get_u32(rd));
    }
    LOAD_END(rd, "registration log");
    *map = rnic_map_new(e, t, n, repeat, r->length, &why);
    LOAD_CHECK(*map, "registration log: STag 0x%x: segment table: %s",
               r->stag, why);
    return true;
}

static bool rnic_pbl_load(RnicEngine *e, RnicImageReader *rd, RnicPbl **pbl,
                          char **err)
{
    RnicPbl in = { 0 };
    uint32_t j, cnt;
    bool clean;

    clean = rnic_image_get_fields(rd, rnic_pbl_fields, &in, NULL);
    LOAD_END(rd, "registration log");
    cnt = rnic_pbl_saved_pages(&in);
    /* never allocate more than the stream can hold */
    LOAD_CHECK(clean && (uint64_t)cnt * 8 <= rd->len - rd->pos,
               "registration log: page list of %u pages truncated",
               in.npages);
    *pbl = rnic_pbl_alloc(e, in.npages, in.page_shift, in.contiguous);
    LOAD_CHECK(*pbl, "registration log: page list of %u pages "
               "too big for this device", in.npages);
    for (j = 0; j < cnt; j++) {
        (*pbl)->pages[j] = rnic_image_get_u64(rd);
    }
    return true;
}

static bool rnic_mrlog_load_one(RnicEngine *e, RnicImageReader *rd,
                                char **err)
{
    RnicRegLogRec r = { 0 };
    bool ok;

    uint8_t what;

    rnic_image_get_fields(rd, rnic_reglog_fields, &r, NULL);
    what = rnic_image_get_u8(rd);
    LOAD_END(rd, "registration log");
    LOAD_CHECK(what <= RNIC_MRLOG_MAP, "registration log: STag 0x%x: "
               "unknown translation %u", r.stag, what);
    if (what == RNIC_MRLOG_PBL && !rnic_pbl_load(e, rd, &r.pbl, err)) {
        return false;
    }
    if (what == RNIC_MRLOG_MAP && !rnic_map_load(e, rd, &r, &r.map, err)) {
        return false;
    }
    ok = !rd->overrun && rnic_reglog_replay(e, &r, err);
    rnic_pbl_unref(e, r.pbl);
    rnic_map_unref(e, r.map);
    LOAD_END(rd, "registration log");
    if (!ok) {
        return false;
    }
    /* the record named a live context, or the replay had refused it */
    if (r.net_ctx != RNIC_PD_MULTI_NET) {
        rnic_netctx_lookup(e, r.net_ctx)->log_replayed++;
    }
    return true;
}

/* A page list's pages, 4 a line. */
static void rnic_pages_dump(RnicImageReader *rd, GString *out,
                            const char *key, uint32_t n)
{
    uint32_t i;

    for (i = 0; i < n && !rd->overrun; i++) {
        uint64_t page = rnic_image_get_u64(rd);

        if (rd->overrun) {
            break;
        }
        if (i % 4 == 0) {
            g_string_append_printf(out, "%s  %s.pbl.pages[%u] =",
                                   i ? "\n" : "", key, i);
        }
        g_string_append_printf(out, " 0x%" G_GINT64_MODIFIER "x", page);
    }
    if (i) {
        g_string_append_c(out, '\n');
    }
}

/* A segment table, a segment a line. */
static void rnic_map_dump(RnicImageReader *rd, GString *out, const char *key)
{
    uint32_t n = rnic_image_get_u32(rd), repeat = rnic_image_get_u32(rd);
    uint32_t i;

    g_string_append_printf(out, "  %s.map.nsegs = %u\n  %s.map.repeat = %u\n",
                           key, n, key, repeat);
    for (i = 0; i < n && !rd->overrun; i++) {
        uint64_t addr = rnic_image_get_u64(rd);
        uint32_t len = rnic_image_get_u32(rd), lkey = rnic_image_get_u32(rd);
        uint32_t skip = rnic_image_get_u32(rd);

        if (rd->overrun) {
            break;
        }
        g_string_append_printf(out, "  %s.map.segs[%u] = addr 0x%"
                               G_GINT64_MODIFIER "x length %u lkey 0x%x "
                               "skip %u\n", key, i, addr, len, lkey, skip);
    }
}

static void rnic_mrlog_dump_one(RnicImageReader *rd, GString *out,
                                uint32_t i)
{
    g_autofree char *key = g_strdup_printf("mr_log[%u]", i);
    g_autofree char *pbl = g_strdup_printf("mr_log[%u].pbl", i);
    RnicPbl in = { 0 };
    uint8_t what;

    rnic_image_dump_fields(rd, out, key, rnic_reglog_fields, NULL);
    what = rnic_image_get_u8(rd);
    if (what == RNIC_MRLOG_MAP) {
        rnic_map_dump(rd, out, key);
    } else if (what == RNIC_MRLOG_PBL) {
        rnic_image_dump_fields(rd, out, pbl, rnic_pbl_fields, &in);
        rnic_pages_dump(rd, out, key, rnic_pbl_saved_pages(&in));
    }
}

const RnicStateSection rnic_mrlog_section = {
    .tag = RNIC_SEC_MR_LOG, .name = "registration log",
    .record = "registration log",
    .load_one = rnic_mrlog_load_one, .dump_one = rnic_mrlog_dump_one,
    .save = rnic_mrlog_save,
};

/* ---------------------------------------------------------------------- */
/* Memory windows                                                         */
/* ---------------------------------------------------------------------- */

/*
 * A window: its entry's fields; the MR it is bound to is its STag
 * (parent_stag, 0: unbound), found in the PD's table after the log.
 */
static const RnicImageField rnic_mw_fields[] = {
    RNIC_IMG_U32(RnicMr, stag),
    RNIC_IMG_REF(RnicMr, pd),
    RNIC_IMG_U32(RnicMr, owner),
    RNIC_IMG_U8(RnicMr, mw_type),
    RNIC_IMG_U8(RnicMr, state),
    RNIC_IMG_U32(RnicMr, access),
    RNIC_IMG_U64(RnicMr, iova),
    RNIC_IMG_U64(RnicMr, length),
    RNIC_IMG_U32(RnicMr, parent_stag),
    RNIC_IMG_U32(RnicMr, mw_qp),
    RNIC_IMG_U32(RnicMr, mw_qpn),
    RNIC_IMG_END
};

static bool rnic_mws_needed(RnicEngine *e)
{
    return e->mw_count > 0;
}

static void rnic_mw_save_one(RnicEngine *e, RnicMr *mr, void *opaque)
{
    if (rnic_mr_kind(mr) == &rnic_mr_kind_mw) {
        rnic_image_put_fields(opaque, rnic_mw_fields, mr);
    }
}

static void rnic_mws_save(RnicEngine *e, RnicImageWriter *w)
{
    rnic_image_put_u32(w, e->mw_count);
    rnic_mr_foreach(e, rnic_mw_save_one, w);
}

static bool rnic_mw_load_one(RnicEngine *e, RnicImageReader *rd, char **err)
{
    uint32_t index, pdh;
    RnicMr in = { 0 };
    RnicMr *parent = NULL, *mw;
    const RnicMrTable *t;
    bool clean;
    RnicPd *pd;

    clean = rnic_image_get_fields(rd, rnic_mw_fields, &in, &pdh);
    LOAD_END(rd, "memory windows");
    index = RNIC_STAG_INDEX(in.stag);
    pd = rnic_pd_lookup(e, pdh);
    LOAD_CHECK(clean && pd && pd->owner == in.owner &&
               (in.mw_type == RNIC_MW_TYPE_1 ||
                in.mw_type == RNIC_MW_TYPE_2) &&
               (in.state == RNIC_MR_VALID || in.state == RNIC_MR_INVALID) &&
               !(in.access & ~(RNIC_ACCESS_REMOTE_READ |
                               RNIC_ACCESS_REMOTE_WRITE |
                               RNIC_ACCESS_REMOTE_ATOMIC)),
               "memory window 0x%x: bad PD, type, state or rights", in.stag);
    t = rnic_pd_lkeys(e, pd);
    if (in.parent_stag) {
        parent = rnic_mrt_lookup(t, RNIC_STAG_INDEX(in.parent_stag));
        LOAD_CHECK(parent &&
                   (rnic_mr_kind(parent)->flags & RNIC_MRK_WINDOW_PARENT) &&
                   parent->stag == in.parent_stag && parent->pd == pd &&
                   parent->state == RNIC_MR_VALID &&
                   (parent->access & RNIC_ACCESS_MW_BIND) &&
                   in.state == RNIC_MR_VALID && in.length &&
                   rnic_mr_range_ok(parent, in.iova, in.length),
                   "memory window 0x%x: bound to MR 0x%x, which the log "
                   "does not have as such", in.stag, in.parent_stag);
    } else {
        /* unbound: type 1 valid without a range, type 2B free */
        LOAD_CHECK(!in.length && !in.access &&
                   (in.state == RNIC_MR_VALID) ==
                   (in.mw_type == RNIC_MW_TYPE_1),
                   "memory window 0x%x: unbound with a range or rights",
                   in.stag);
    }
    LOAD_CHECK(index && index < t->range, "memory window 0x%x does not fit: "
               "its index is beyond this device's STag space of %u "
               "(max-mrs=%u)", in.stag, t->range, e->cfg.max_mr);
    mw = rnic_mr_insert(e, pd, in.owner, index, RNIC_STAG_KEY(in.stag));
    LOAD_CHECK(mw, "memory window 0x%x: index in use, or no room (max-mrs=%u)",
               in.stag, e->cfg.max_mr);
    rnic_image_copy_fields(rnic_mw_fields, mw, &in);
    mw->pd = pd;
    mw->kind = RNIC_MR_KIND_MW;
    mw->parent = parent;
    if (parent) {
        parent->windows++;
    }
    rnic_mr_changed(e, mw);
    e->mw_count++;
    return true;
}

/* a window's key is its STag, a field: the dump numbers them */
static void rnic_mw_dump_one(RnicImageReader *rd, GString *out, uint32_t i)
{
    g_autofree char *key = g_strdup_printf("mw[%u]", i);

    rnic_image_dump_fields(rd, out, key, rnic_mw_fields, NULL);
}

const RnicStateSection rnic_mws_section = {
    .tag = RNIC_SEC_MWS, .name = "memory windows", .record = "memory windows",
    .load_one = rnic_mw_load_one, .dump_one = rnic_mw_dump_one,
    .needed = rnic_mws_needed, .save = rnic_mws_save,
};

/* ---------------------------------------------------------------------- */
/* QPs                                                                    */
/* ---------------------------------------------------------------------- */

/*
 * A QP's record: its handle, the head, its send-queue slots from sq_una
 * to sq_hi, the receive queue, attributes, requester (then the time left
 * on its timer), the receive in progress (then its SGEs), the responder's
 * RDMA WRITE and resource ring (then the resources in use, each with its
 * index), and the pending ACK.
 */
static const RnicImageField rnic_qp_head_fields[] = {
    RNIC_IMG_U32(RnicQp, qpn),
    RNIC_IMG_U32(RnicQp, owner),
    RNIC_IMG_U8(RnicQp, type),
    RNIC_IMG_U8(RnicQp, state),
    RNIC_IMG_REF(RnicQp, pd),
    RNIC_IMG_REF(RnicQp, scq),
    RNIC_IMG_REF(RnicQp, rcq),
    RNIC_IMG_REF(RnicQp, srq),
    RNIC_IMG_BIT0(RnicQp, sq_sig_all),
    RNIC_IMG_U64(RnicQp, sq_addr),
    RNIC_IMG_U8(RnicQp, sq_log),
    RNIC_IMG_U8(RnicQp, sq_shift),
    RNIC_IMG_U32(RnicQp, sq_prod),
    RNIC_IMG_U32(RnicQp, sq_next),
    RNIC_IMG_U32(RnicQp, sq_una),
    RNIC_IMG_U32(RnicQp, sq_hi),
    RNIC_IMG_U32(RnicQp, tx_pkt),
    RNIC_IMG_END
};

/* the references of the head, in its order */
enum {
    RNIC_QP_REF_PD,
    RNIC_QP_REF_SCQ,
    RNIC_QP_REF_RCQ,
    RNIC_QP_REF_SRQ,
    RNIC_QP_REFS
};

static const RnicImageField rnic_sq_slot_fields[] = {
    RNIC_IMG_U64(RnicSqSlot, wr_id),
    RNIC_IMG_PSN(RnicSqSlot, first_psn),
    RNIC_IMG_U32(RnicSqSlot, npsn),
    RNIC_IMG_U32(RnicSqSlot, length),
    RNIC_IMG_U32(RnicSqSlot, recv_psn),
    RNIC_IMG_U8(RnicSqSlot, opcode),
    RNIC_IMG_U8(RnicSqSlot, flags),
    RNIC_IMG_U8(RnicSqSlot, status),
    RNIC_IMG_U8(RnicSqSlot, state),
    RNIC_IMG_END
};

static const RnicImageField rnic_qp_rq_fields[] = {
    RNIC_IMG_U64(RnicQp, rq_addr),
    RNIC_IMG_U8(RnicQp, rq_log),
    RNIC_IMG_U8(RnicQp, rq_shift),
    RNIC_IMG_U32(RnicQp, rq_prod),
    RNIC_IMG_U32(RnicQp, rq_cons),
    RNIC_IMG_END
};

static const RnicImageField rnic_qp_attr_fields[] = {
    RNIC_IMG_U8(RnicQp, path_mtu),
    RNIC_IMG_U8(RnicQp, timeout),
    RNIC_IMG_U8(RnicQp, retry_cnt),
    RNIC_IMG_U8(RnicQp, rnr_retry),
    RNIC_IMG_U8(RnicQp, min_rnr_timer),
    RNIC_IMG_U8(RnicQp, max_rd_atomic),
    RNIC_IMG_U8(RnicQp, max_dest_rd_atomic),
    RNIC_IMG_U8(RnicQp, port),
    RNIC_IMG_U16(RnicQp, pkey_index),
    RNIC_IMG_U32(RnicQp, qkey),
    RNIC_IMG_U32(RnicQp, dest_qpn),
    RNIC_IMG_U32(RnicQp, access),
    RNIC_IMG_BYTES(RnicQp, av),
    RNIC_IMG_BIT0(RnicQp, sqd_notify),
    RNIC_IMG_BIT0(RnicQp, sq_drained),
    RNIC_IMG_END
};

static const RnicImageField rnic_qp_req_fields[] = {
    RNIC_IMG_PSN(RnicQp, req_psn),
    RNIC_IMG_PSN(RnicQp, una_psn),
    RNIC_IMG_PSN(RnicQp, rq_psn_init),
    RNIC_IMG_U8(RnicQp, retry_left),
    RNIC_IMG_U8(RnicQp, rnr_left),
    RNIC_IMG_U32(RnicQp, rd_outstanding),
    RNIC_IMG_BIT0(RnicQp, rnr_wait),
    RNIC_IMG_BIT0(RnicQp, sq_stalled),
    RNIC_IMG_U8(RnicQp, timer_kind),
    RNIC_IMG_END
};

static const RnicImageField rnic_qp_recv_fields[] = {
    RNIC_IMG_PSN(RnicQp, resp.epsn),
    RNIC_IMG_PSN(RnicQp, resp.msn),
    RNIC_IMG_U8(RnicQp, resp.in_msg),
    RNIC_IMG_BIT0(RnicQp, resp.nak_sent),
    RNIC_IMG_BIT0(RnicQp, resp.comm_est),
    RNIC_IMG_BIT0(RnicQp, resp.recv.valid),
    RNIC_IMG_BIT0(RnicQp, resp.recv.from_srq),
    RNIC_IMG_U64(RnicQp, resp.recv.wr_id),
    RNIC_IMG_U32(RnicQp, resp.recv.length),
    RNIC_IMG_U32(RnicQp, resp.recv.offset),
    RNIC_IMG_END
};

static const RnicImageField rnic_sge_fields[] = {
    RNIC_IMG_U64(RnicSgeRes, addr),
    RNIC_IMG_U32(RnicSgeRes, length),
    RNIC_IMG_U32(RnicSgeRes, lkey),
    RNIC_IMG_END
};

static const RnicImageField rnic_qp_rw_fields[] = {
    RNIC_IMG_U32(RnicQp, resp.w_rkey),
    RNIC_IMG_U64(RnicQp, resp.w_va),
    RNIC_IMG_U32(RnicQp, resp.w_len),
    RNIC_IMG_U32(RnicQp, resp.w_done),
    RNIC_IMG_U32(RnicQp, resp.nres),
    RNIC_IMG_U32(RnicQp, resp.res_head),
    RNIC_IMG_U32(RnicQp, resp.res_send),
    RNIC_IMG_U32(RnicQp, resp.res_pending),
    RNIC_IMG_END
};

static const RnicImageField rnic_resp_res_fields[] = {
    RNIC_IMG_U8(RnicRespRes, kind),
    RNIC_IMG_BIT0(RnicRespRes, pending),
    RNIC_IMG_PSN(RnicRespRes, psn),
    RNIC_IMG_U32(RnicRespRes, npsn),
    RNIC_IMG_U32(RnicRespRes, next),
    RNIC_IMG_U64(RnicRespRes, va),
    RNIC_IMG_U32(RnicRespRes, rkey),
    RNIC_IMG_U32(RnicRespRes, len),
    RNIC_IMG_U64(RnicRespRes, orig),
    RNIC_IMG_END
};

static const RnicImageField rnic_qp_ack_fields[] = {
    RNIC_IMG_BIT0(RnicQp, resp.ack_owed),
    RNIC_IMG_PSN(RnicQp, resp.ack_psn),
    RNIC_IMG_U8(RnicQp, resp.ack_syndrome),
    RNIC_IMG_U32_MASK(RnicQp, work_flags,
                      RNIC_QPW_SQ | RNIC_QPW_RQ | RNIC_QPW_RESP),
    RNIC_IMG_END
};

/* Time left on the QP's timer: the destination's clock differs. */
static uint64_t rnic_qp_timer_left(RnicEngine *e, const RnicQp *qp)
{
    uint64_t now = e->ops->clock_ns(e->opaque);

    if (qp->timer_kind == RNIC_TIMER_NONE || qp->timer_deadline <= now) {
        return 0;
    }
    return qp->timer_deadline - now;
}

static void rnic_qp_save(RnicEngine *e, RnicImageWriter *w, const RnicQp *qp)
{
    const RnicResp *r = &qp->resp;
    uint32_t mask = (1u << qp->sq_log) - 1;
    uint32_t i, used = 0;

    rnic_image_put_u32(w, qp->handle);
    rnic_image_put_fields(w, rnic_qp_head_fields, qp);
    for (i = qp->sq_una; i != qp->sq_hi; i++) {
        rnic_image_put_fields(w, rnic_sq_slot_fields, &qp->slots[i & mask]);
    }
    rnic_image_put_fields(w, rnic_qp_rq_fields, qp);
    rnic_image_put_fields(w, rnic_qp_attr_fields, qp);
    rnic_image_put_fields(w, rnic_qp_req_fields, qp);
    rnic_image_put_u64(w, rnic_qp_timer_left(e, qp));
    rnic_image_put_fields(w, rnic_qp_recv_fields, qp);
    rnic_image_put_u32(w, r->recv.valid ? r->recv.nsge : 0);
    for (i = 0; r->recv.valid && i < r->recv.nsge; i++) {
        rnic_image_put_fields(w, rnic_sge_fields, &r->recv.sge[i]);
    }
    rnic_image_put_fields(w, rnic_qp_rw_fields, qp);
    /* only the resources in use: an idle QP costs no 38 bytes per slot */
    for (i = 0; i < r->nres; i++) {
        used += r->res[i].kind != RNIC_RES_FREE;
    }
    rnic_image_put_u32(w, used);
    for (i = 0; i < r->nres; i++) {
        if (r->res[i].kind != RNIC_RES_FREE) {
            rnic_image_put_u32(w, i);
            rnic_image_put_fields(w, rnic_resp_res_fields, &r->res[i]);
        }
    }
    rnic_image_put_fields(w, rnic_qp_ack_fields, qp);
}

static void rnic_qps_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t i;
    RnicQp *qp;

    rnic_image_put_u32(w, e->qps.count);
    RNIC_TABLE_FOREACH(&e->qps, i, qp) {
        rnic_qp_save(e, w, qp);
    }
}

/*
 * The head: a QP of objects loaded before, with a plausible send queue,
 * is created and attached (its slots allocated).
 */
static bool rnic_qp_load_head(RnicEngine *e, RnicImageReader *rd,
                              RnicQp **out, char **err)
{
    uint32_t h = rnic_image_get_u32(rd);
    uint32_t ref[RNIC_QP_REFS];
    RnicQp in = { 0 };
    RnicSrq *srq = NULL;
    RnicPd *pd;
    RnicCq *scq, *rcq;
    g_autofree char *why = NULL;
    uint8_t status;
    RnicQp *qp;

    rnic_image_get_fields(rd, rnic_qp_head_fields, &in, ref);
    LOAD_END(rd, "QP");
    if (ref[RNIC_QP_REF_SRQ] != RNIC_HANDLE_NONE) {
        srq = rnic_srq_lookup(e, ref[RNIC_QP_REF_SRQ]);
        LOAD_CHECK(srq, "QP %u: unknown SRQ %u", h, ref[RNIC_QP_REF_SRQ]);
    }
    /* the send side as CREATE_QP checks it; the rings size what follows */
    why = rnic_qp_check_sq_params(e, in.type, in.owner, in.sq_addr, in.sq_log,
                                  in.sq_shift, &status);
    LOAD_CHECK(!why, "QP %u: %s", h, why);
    pd = rnic_pd_lookup(e, ref[RNIC_QP_REF_PD]);
    scq = rnic_cq_lookup(e, ref[RNIC_QP_REF_SCQ]);
    rcq = rnic_cq_lookup(e, ref[RNIC_QP_REF_RCQ]);
    LOAD_CHECK(pd && scq && rcq && pd->owner == in.owner &&
               scq->owner == in.owner && rcq->owner == in.owner &&
               (!srq || (srq->owner == in.owner && srq->pd->ctx == pd->ctx)) &&
               in.state <= RNIC_QPS_ERR &&
               in.qpn >= 1 && in.qpn <= RNIC_ROCE_QPN_MASK &&
               (in.qpn == RNIC_ROCE_GSI_QPN) == (in.type == RNIC_QPT_GSI) &&
               rnic_qpn_free_for(e, pd, in.qpn),
               "QP %u: bad objects, type, state or QPN %u", h, in.qpn);
    qp = rnic_qp_create(e, h, in.qpn);
    LOAD_CHECK(qp, "QP %u does not fit this device (max-qps=%u)", h,
               e->cfg.max_qp);
    rnic_image_copy_fields(rnic_qp_head_fields, qp, &in);
    LOAD_CHECK(qp->sq_prod - qp->sq_una <= (1u << qp->sq_log) &&
               qp->sq_hi - qp->sq_una <= qp->sq_prod - qp->sq_una &&
               qp->sq_next - qp->sq_una <= qp->sq_hi - qp->sq_una,
               "QP %u: bad send queue", h);
    /* attach: references, slots, limits derived from the strides */
    qp->rq_shift = RNIC_RQ_WQE_SHIFT_MIN;
    /* a multi-network PD's RC QP is bound by its section, later */
    qp->ctx = pd->ctx;
    qp->all_nets = !pd->ctx && !rnic_qpt_connected(qp->type);
    qp->pd = pd;
    qp->scq = scq;
    qp->rcq = rcq;
    qp->srq = srq;
    LOAD_CHECK(rnic_qp_load_attach(e, qp),
               "QP %u: send queue of 2^%u slots passes the host memory "
               "budget (memory-budget-mib=%u)", h, qp->sq_log,
               e->cfg.mem_budget_mib);
    *out = qp;
    return true;
}

static bool rnic_qp_load_slots(RnicEngine *e, RnicImageReader *rd,
                               RnicQp *qp, char **err)
{
    uint32_t mask = (1u << qp->sq_log) - 1;
    uint32_t i;

    for (i = qp->sq_una; i != qp->sq_hi; i++) {
        RnicSqSlot *s = &qp->slots[i & mask];

        rnic_image_get_fields(rd, rnic_sq_slot_fields, s, NULL);
        LOAD_CHECK(s->opcode < RNIC_WR_OPCODE_COUNT &&
                   s->state <= RNIC_SLOT_DONE && s->recv_psn <= s->npsn &&
                   s->npsn <= (1u << 23) && s->length <= RNIC_MAX_MSG_SIZE,
                   "QP %u: bad send slot %u", qp->handle, i);
    }
    return true;
}

/* Receive queue, attributes and requester, each checked once read. */
static bool rnic_qp_load_body(RnicEngine *e, RnicImageReader *rd,
                              RnicQp *qp, uint64_t *timer_left, char **err)
{
    uint32_t h = qp->handle;
    g_autofree char *why = NULL;

    rnic_image_get_fields(rd, rnic_qp_rq_fields, qp, NULL);
    LOAD_END(rd, "QP");
    if (!qp->srq) {
        /* the receive side as CREATE_QP checks it */
        why = rnic_qp_check_rq_params(e, NULL, qp->rq_addr, qp->rq_log,
                                      qp->rq_shift);
        LOAD_CHECK(!why, "QP %u: %s", h, why);
        LOAD_CHECK(qp->rq_prod - qp->rq_cons <= (1u << qp->rq_log),
                   "QP %u: bad receive queue indexes", h);
        qp->rq_max_sge = MIN(e->cfg.max_sge, ((1u << qp->rq_shift) -
                                              sizeof(struct rnic_rq_wqe)) /
                             sizeof(struct rnic_sge));
    } else {
        /* a QP on an SRQ has no receive queue of its own */
        LOAD_CHECK(!qp->rq_log && !qp->rq_shift && qp->rq_prod == qp->rq_cons,
                   "QP %u: a receive queue besides its SRQ", h);
    }
    rnic_image_get_fields(rd, rnic_qp_attr_fields, qp, NULL);
    LOAD_END(rd, "QP");
    LOAD_CHECK(qp->path_mtu >= RNIC_MTU_256 && qp->path_mtu <= RNIC_MTU_4096 &&
               qp->timeout <= 31 && qp->retry_cnt <= 7 && qp->rnr_retry <= 7 &&
               qp->min_rnr_timer <= 31 &&
               qp->max_rd_atomic <= e->cfg.max_rd_atomic &&
               qp->max_dest_rd_atomic <= e->cfg.max_rd_atomic &&
               qp->dest_qpn <= RNIC_ROCE_QPN_MASK &&
               !(qp->access & ~RNIC_ACCESS_ALL),
               "QP %u: bad attributes", h);
    rnic_image_get_fields(rd, rnic_qp_req_fields, qp, NULL);
    *timer_left = rnic_image_get_u64(rd);
    LOAD_END(rd, "QP");
    rnic_req_ackreq_restart(qp);    /* what is resent asks for its ACK */
    LOAD_CHECK(qp->retry_left <= 7 && qp->rnr_left <= 7 &&
               qp->rd_outstanding <= qp->sq_hi - qp->sq_una &&
               qp->timer_kind <= RNIC_TIMER_RNR,
               "QP %u: bad requester state", h);
    return true;
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
        rnic_image_get_fields(rd, rnic_sge_fields, &sge[i], NULL);
        sge[i].mr = NULL;
    }
    return !rd->overrun;
}

/* The responder: the receive in progress, the READ/atomic resources. */
static bool rnic_qp_load_resp(RnicEngine *e, RnicImageReader *rd,
                              RnicQp *qp, char **err)
{
    RnicResp *r = &qp->resp;
    uint32_t h = qp->handle;
    uint32_t i, k, used;

    rnic_image_get_fields(rd, rnic_qp_recv_fields, qp, NULL);
    LOAD_CHECK(rnic_sges_load(rd, r->recv.sge, &r->recv.nsge,
                              e->cfg.max_sge) &&
               r->in_msg <= RNIC_RESP_WRITE &&
               r->recv.offset <= r->recv.length &&
               r->recv.length <= RNIC_MAX_MSG_SIZE,
               "QP %u: bad receive in progress", h);
    r->recv.mr_gen = 0;         /* resolved again on first use */
    rnic_image_get_fields(rd, rnic_qp_rw_fields, qp, NULL);
    LOAD_END(rd, "QP");
    LOAD_CHECK(r->nres >= 1 && r->nres <= e->cfg.max_rd_atomic &&
               r->res_pending <= r->nres && r->w_done <= r->w_len,
               "QP %u: bad responder resources", h);
    used = rnic_image_get_u32(rd);
    LOAD_CHECK(used <= r->nres, "QP %u: %u responder resources in use of %u",
               h, used, r->nres);
    for (k = 0; k < used; k++) {
        RnicRespRes *res;

        i = rnic_image_get_u32(rd);
        LOAD_CHECK(i < r->nres && r->res[i].kind == RNIC_RES_FREE,
                   "QP %u: bad responder resource index %u", h, i);
        res = &r->res[i];
        rnic_image_get_fields(rd, rnic_resp_res_fields, res, NULL);
        LOAD_CHECK(res->kind != RNIC_RES_FREE &&
                   res->kind < RNIC_RES_KIND_COUNT && res->next <= res->npsn &&
                   res->npsn <= (1u << 23) && res->len <= RNIC_MAX_MSG_SIZE,
                   "QP %u: bad responder resource %u", h, i);
        /* FLUSH, ATOMIC WRITE: one empty answer, never data to stream */
        LOAD_CHECK((res->kind != RNIC_RES_FLUSH &&
                    res->kind != RNIC_RES_ATOMIC_WRITE) ||
                   (res->len == 0 && res->npsn == 1),
                   "QP %u: responder resource %u of kind %u with data", h, i,
                   res->kind);
    }
    return true;
}

/* Load one QP; on failure a half-built QP is destroyed by the reset. */
static bool rnic_qp_load_one(RnicEngine *e, RnicImageReader *rd, char **err)
{
    RnicQp *qp = NULL;
    uint64_t timer_left = 0;
    uint8_t kind;

    if (!rnic_qp_load_head(e, rd, &qp, err) ||
        !rnic_qp_load_slots(e, rd, qp, err) ||
        !rnic_qp_load_body(e, rd, qp, &timer_left, err) ||
        !rnic_qp_load_resp(e, rd, qp, err)) {
        return false;
    }
    rnic_image_get_fields(rd, rnic_qp_ack_fields, qp, NULL);
    LOAD_END(rd, "QP");
    if (qp->timer_kind != RNIC_TIMER_NONE) {
        /* restarted on this host's clock with the time that was left */
        kind = qp->timer_kind;
        qp->timer_kind = RNIC_TIMER_NONE;
        rnic_qp_timer_set(e, qp, kind,
                          CLAMP(timer_left, 1, rnic_ack_timeout_ns(31)));
    }
    return true;
}

static void rnic_qp_dump_one(RnicImageReader *rd, GString *out, uint32_t k)
{
    g_autofree char *qp = g_strdup_printf("qp[%u]", rnic_image_get_u32(rd));
    RnicQp in = { 0 };
    uint32_t i, n;

    rnic_image_dump_fields(rd, out, qp, rnic_qp_head_fields, &in);
    for (i = in.sq_una; i != in.sq_hi && !rd->overrun; i++) {
        g_autofree char *slot = g_strdup_printf("%s.slot[%u]", qp, i);

        rnic_image_dump_fields(rd, out, slot, rnic_sq_slot_fields, NULL);
    }
    rnic_image_dump_fields(rd, out, qp, rnic_qp_rq_fields, NULL);
    rnic_image_dump_fields(rd, out, qp, rnic_qp_attr_fields, NULL);
    rnic_image_dump_fields(rd, out, qp, rnic_qp_req_fields, NULL);
    rnic_image_dump_u64(rd, out, qp, "timer_left_ns");
    rnic_image_dump_fields(rd, out, qp, rnic_qp_recv_fields, NULL);
    n = rnic_image_dump_u32(rd, out, qp, "resp.recv.nsge");
    for (i = 0; i < n && !rd->overrun; i++) {
        g_autofree char *sge = g_strdup_printf("%s.resp.recv.sge[%u]", qp, i);

        rnic_image_dump_fields(rd, out, sge, rnic_sge_fields, NULL);
    }
    rnic_image_dump_fields(rd, out, qp, rnic_qp_rw_fields, NULL);
    n = rnic_image_dump_u32(rd, out, qp, "resp.res_used");
    for (i = 0; i < n && !rd->overrun; i++) {
        g_autofree char *res = NULL;

        res = g_strdup_printf("%s.resp.res[%u]", qp, rnic_image_get_u32(rd));
        rnic_image_dump_fields(rd, out, res, rnic_resp_res_fields, NULL);
    }
    rnic_image_dump_fields(rd, out, qp, rnic_qp_ack_fields, NULL);
}

const RnicStateSection rnic_qps_section = {
    .tag = RNIC_SEC_QPS, .name = "QPs", .record = "QP",
    .load_one = rnic_qp_load_one, .dump_one = rnic_qp_dump_one,
    .save = rnic_qps_save,
};

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
    RnicQp *qp;

    RNIC_TABLE_FOREACH(&e->qps, i, qp) {
        /* a connected QP sends and receives in a network context */
        if (!qp->ctx && !qp->all_nets &&
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
    RnicQp *qp;
    RnicCq *cq;
    RnicEq *eq;

    e->prompt_peers = true;
    e->prompt_next = 0;
    e->mr_gen++;
    e->qp_gen++;
    RNIC_TABLE_FOREACH(&e->qps, i, qp) {
        /* whatever was outstanding gets looked at again */
        rnic_req_resume(e, qp);
        rnic_qp_work(e, qp, RNIC_QPW_SQ | qp->work_flags |
                     (qp->resp.res_pending || qp->resp.ack_owed ?
                      RNIC_QPW_RESP : 0));
    }
    RNIC_TABLE_FOREACH(&e->cqs, i, cq) {
        if (cq->db_arm) {
            rnic_work_queue(e, &cq->work);
        }
    }
    RNIC_TABLE_FOREACH(&e->eqs, i, eq) {
        if (eq->db_arm) {
            rnic_work_queue(e, &eq->work);
        }
    }
    /* one run in any case: admin commands the source had not fetched yet */
    rnic_engine_schedule(e);
}

/* ---------------------------------------------------------------------- */
/* Multicast groups                                                       */
/* ---------------------------------------------------------------------- */

/* A group: u32 context, the 16-byte GID, u32 count, then the QP handles. */
static bool rnic_mcast_needed(RnicEngine *e)
{
    unsigned i;

    for (i = 0; i < RNIC_MCAST_GROUPS; i++) {
        if (e->mcast[i].nqps) {
            return true;
        }
    }
    return false;
}

static void rnic_mcast_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t i, j, n = 0;

    for (i = 0; i < RNIC_MCAST_GROUPS; i++) {
        n += e->mcast[i].nqps > 0;
    }
    rnic_image_put_u32(w, n);
    for (i = 0; i < RNIC_MCAST_GROUPS; i++) {
        const RnicMcast *g = &e->mcast[i];

        if (!g->nqps) {
            continue;
        }
        rnic_image_put_u32(w, g->net_ctx);
        rnic_image_put_bytes(w, g->mgid, 16);
        rnic_image_put_u32(w, g->nqps);
        for (j = 0; j < g->nqps; j++) {
            rnic_image_put_u32(w, g->qps[j]);
        }
    }
}

static bool rnic_mcast_load_one(RnicEngine *e, RnicImageReader *rd,
                                char **err)
{
    uint32_t ctx = rnic_image_get_u32(rd), n, i;
    uint8_t mgid[16];

    rnic_image_get_bytes(rd, mgid, 16);
    n = rnic_image_get_u32(rd);
    LOAD_END(rd, "multicast groups");
    LOAD_CHECK((ctx == RNIC_PD_MULTI_NET || rnic_netctx_lookup(e, ctx)) &&
               rnic_gid_is_mcast(mgid) &&
               n >= 1 && n <= RNIC_MCAST_QPS,
               "multicast group: context %u, a GID that is not multicast or "
               "%u QPs", ctx, n);
    for (i = 0; i < n; i++) {
        RnicQp *qp = rnic_qp_lookup(e, rnic_image_get_u32(rd));

        LOAD_END(rd, "multicast groups");
        LOAD_CHECK(qp && qp->type == RNIC_QPT_UD &&
                   (ctx == RNIC_PD_MULTI_NET ? qp->all_nets :
                    qp->ctx && qp->ctx->handle == ctx) &&
                   qp->mcast < RNIC_MCAST_GROUPS,
                   "multicast group of context %u: QP %u of %u is no UD QP "
                   "of the context", ctx, i, n);
        LOAD_CHECK(rnic_mcast_attach(e, qp, mgid),
                   "multicast group of context %u: more than %u groups",
                   ctx, RNIC_MCAST_GROUPS);
    }
    return true;
}

static void rnic_mcast_dump_one(RnicImageReader *rd, GString *out,
                                uint32_t i)
{
    g_autofree char *key = g_strdup_printf("mcast[%u]", i);
    uint32_t j, nqps;
    uint8_t mgid[16];

    rnic_image_dump_u32(rd, out, key, "net_ctx");
    if (!rnic_image_get_bytes(rd, mgid, 16)) {
        return;
    }
    g_string_append_printf(out, "  %s.mgid =", key);
    for (j = 0; j < 16; j++) {
        g_string_append_printf(out, " %02x", mgid[j]);
    }
    g_string_append_c(out, '\n');
    nqps = rnic_image_dump_u32(rd, out, key, "nqps");
    for (j = 0; j < nqps && j < RNIC_MCAST_QPS && !rd->overrun; j++) {
        g_autofree char *qp = g_strdup_printf("qps[%u]", j);

        rnic_image_dump_u32(rd, out, key, qp);
    }
}

const RnicStateSection rnic_mcast_section = {
    .tag = RNIC_SEC_MCAST, .name = "multicast groups",
    .record = "multicast groups",
    .load_one = rnic_mcast_load_one, .dump_one = rnic_mcast_dump_one,
    .needed = rnic_mcast_needed, .save = rnic_mcast_save,
};

/* ---------------------------------------------------------------------- */
/* Per-QP transport counters (ABI 1.5)                                    */
/* ---------------------------------------------------------------------- */

static bool rnic_qp_counted(const RnicQp *qp)
{
    unsigned i;

    for (i = 0; i < RNIC_QP_STAT_COUNT; i++) {
        if (qp->stats[i]) {
            return true;
        }
    }
    return false;
}

static bool rnic_qp_stats_needed(RnicEngine *e)
{
    RnicQp *qp;
    uint32_t h;

    RNIC_TABLE_FOREACH(&e->qps, h, qp) {
        if (rnic_qp_counted(qp)) {
            return true;
        }
    }
    return false;
}

static void rnic_qp_stats_save(RnicEngine *e, RnicImageWriter *w)
{
    uint32_t h, n = 0;
    unsigned i;
    RnicQp *qp;

    RNIC_TABLE_FOREACH(&e->qps, h, qp) {
        n += rnic_qp_counted(qp);
    }
    rnic_image_put_u32(w, n);
    RNIC_TABLE_FOREACH(&e->qps, h, qp) {
        if (!rnic_qp_counted(qp)) {
            continue;
        }
        rnic_image_put_u32(w, qp->handle);
        for (i = 0; i < RNIC_QP_STAT_COUNT; i++) {
            rnic_image_put_u64(w, qp->stats[i]);
        }
    }
}

static bool rnic_qp_stats_load_one(RnicEngine *e, RnicImageReader *rd,
                                   char **err)
{
    uint32_t h = rnic_image_get_u32(rd);
    RnicQp *qp = rnic_qp_lookup(e, h);
    uint64_t v[RNIC_QP_STAT_COUNT];
    unsigned i;

    for (i = 0; i < RNIC_QP_STAT_COUNT; i++) {
        v[i] = rnic_image_get_u64(rd);
    }
    LOAD_END(rd, "QP statistics");
    LOAD_CHECK(qp, "QP statistics of QP %u, which the image does not have",
               h);
    memcpy(qp->stats, v, sizeof(v));
    return true;
}

static void rnic_qp_stats_dump_one(RnicImageReader *rd, GString *out,
                                   uint32_t i)
{
    g_autofree char *key = g_strdup_printf("qp_stats[%u]", i);
    uint32_t j;

    rnic_image_dump_u32(rd, out, key, "qp");
    for (j = 0; j < RNIC_QP_STAT_COUNT && !rd->overrun; j++) {
        rnic_image_dump_u64(rd, out, key,
                            rnic_abi_stat_name(RNIC_QP_STAT_FIRST + j));
    }
}

/* optional: a destination without them drops them */
const RnicStateSection rnic_qp_stats_section = {
    .tag = RNIC_SEC_QP_STATS, .flags = RNIC_SECTION_OPTIONAL,
    .name = "QP statistics", .record = "QP statistics",
    .load_one = rnic_qp_stats_load_one, .dump_one = rnic_qp_stats_dump_one,
    .needed = rnic_qp_stats_needed, .save = rnic_qp_stats_save,
};
