/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: inspection of the per-network mapping tables and QPs.
 *
 * What a migration must keep is what a peer holds: STags and QPNs. The
 * text rendered here (the QEMU device's read-only 'x-tables' property)
 * shows every network context's mapping table and QPs in a stable order
 * (contexts by handle, entries by STag index, QPs by QPN), so that the
 * tables before and after a migration can be compared line by line.
 * Only the virtual side of an entry is shown: the physical side (host
 * mappings) is exactly what a migration is allowed to change.
 *
 * The entries of multi-network PDs appear in every context the PD is bound
 * to, marked "replica", and once more under "net multi" (the multi-network
 * table) with the QPs of such PDs that are bound to no single context.
 */
#include <string.h>
#include "rnic-engine-int.h"

static const char *rnic_qp_type_str(uint8_t type)
{
    switch (type) {
    case RNIC_QPT_RC:
        return "RC";
    case RNIC_QPT_UD:
        return "UD";
    case RNIC_QPT_GSI:
        return "GSI";
    case RNIC_QPT_UC:
        return "UC";
    }
    return "?";
}

static const char *rnic_qp_state_str(uint8_t state)
{
    static const char *const names[] = {
        [RNIC_QPS_RESET] = "RESET", [RNIC_QPS_INIT] = "INIT",
        [RNIC_QPS_RTR] = "RTR", [RNIC_QPS_RTS] = "RTS",
        [RNIC_QPS_SQD] = "SQD", [RNIC_QPS_SQE] = "SQE",
        [RNIC_QPS_ERR] = "ERR",
    };

    return state < G_N_ELEMENTS(names) ? names[state] : "?";
}

/* "ctx=N vlan=V" (or "vni=V"): the network an entry belongs to. */
static void rnic_describe_net(GString *out, const RnicNetCtx *ctx)
{
    if (!ctx) {
        g_string_append(out, "ctx=multi");
        return;
    }
    g_string_append_printf(out, "ctx=%u %s=%u", ctx->handle,
                           ctx->net_type == RNIC_NET_VLAN ? "vlan" : "vni",
                           ctx->net_id);
}

typedef struct RnicDescribeArg {
    GString *out;
    const RnicNetCtx *ctx;      /* the table being shown (NULL: multi) */
} RnicDescribeArg;

static void rnic_describe_mr(RnicEngine *e, RnicMr *mr, void *opaque)
{
    RnicDescribeArg *a = opaque;
    GString *out = a->out;
    const RnicPbl *p = mr->pbl;

    g_string_append(out, "mr ");
    rnic_describe_net(out, a->ctx);
    g_string_append_printf(out, " stag=0x%08x pd=%u owner=%u access=0x%02x "
                           "iova=0x%" G_GINT64_MODIFIER "x length=%"
                           G_GUINT64_FORMAT " npages=%u page-shift=%u "
                           "state=%s type=%s", mr->stag, mr->pd->handle,
                           mr->owner, mr->access, mr->iova, mr->length,
                           p ? p->npages : 0, p ? p->page_shift : 0,
                           mr->state == RNIC_MR_VALID ? "valid" : "invalid",
                           mr->fast_reg ? "fast-reg" : "reg");
    if (mr->fast_reg) {
        g_string_append_printf(out, " max-pages=%u", mr->max_pages);
    }
    if (mr->map) {
        g_string_append_printf(out, " mapped-segments=%u repeat=%u",
                               mr->map->nsegs, mr->map->repeat);
    }
    if (mr->ctx != a->ctx) {
        g_string_append(out, " replica");
    }
    g_string_append_c(out, '\n');
}

static gint rnic_qp_cmp_qpn(gconstpointer a, gconstpointer b)
{
    const RnicQp *x = *(RnicQp *const *)a;
    const RnicQp *y = *(RnicQp *const *)b;

    return x->qpn < y->qpn ? -1 : x->qpn > y->qpn;
}

static void rnic_describe_qp(GString *out, const RnicNetCtx *ctx,
                             const RnicQp *qp)
{
    g_string_append(out, "qp ");
    rnic_describe_net(out, ctx);
    g_string_append_printf(out, " qpn=%u handle=%u type=%s state=%s pd=%u "
                           "owner=%u sq-psn=%u una-psn=%u rq-psn=%u",
                           qp->qpn, qp->handle, rnic_qp_type_str(qp->type),
                           rnic_qp_state_str(qp->state), qp->pd->handle,
                           qp->owner, qp->req_psn, qp->una_psn, qp->resp.epsn);
    if (rnic_qpt_connected(qp->type)) {
        g_string_append_printf(out, " dest-qpn=%u", qp->dest_qpn);
    } else {
        g_string_append_printf(out, " qkey=0x%x", qp->qkey);
    }
    g_string_append_printf(out, " sq-outstanding=%u sq-posted=%u\n",
                           qp->sq_hi - qp->sq_una, qp->sq_prod - qp->sq_hi);
}

/*
 * The QPs of one network context (those in its QPN space), by QPN; ctx
 * NULL: the multi-network PDs' QPs that are in no single context.
 */
static GPtrArray *rnic_ctx_qps(RnicEngine *e, RnicNetCtx *ctx)
{
    GPtrArray *qps = g_ptr_array_new();
    uint32_t i;
    RnicQp *qp;

    RNIC_TABLE_FOREACH(&e->qps, i, qp) {
        if (ctx ? rnic_qp_by_qpn(ctx, qp->qpn) == qp : !qp->ctx) {
            g_ptr_array_add(qps, qp);
        }
    }
    g_ptr_array_sort(qps, rnic_qp_cmp_qpn);
    return qps;
}

void rnic_engine_foreach_net_ctx(RnicEngine *e, RnicNetCtxInfoFn *fn,
                                 void *opaque)
{
    RnicNetCtx *ctx;
    uint32_t c;

    RNIC_TABLE_FOREACH(&e->net_ctxs, c, ctx) {
        RnicNetCtxInfo info;

        memset(&info, 0, sizeof(info));
        info.handle = ctx->handle;
        info.net_type = ctx->net_type;
        info.net_id = ctx->net_id;
        info.mrs = ctx->mrt.count;
        info.qps = g_hash_table_size(ctx->qpns);
        info.log_replayed = ctx->log_replayed;
        fn(opaque, &info);
    }
}

static void rnic_describe_table(RnicEngine *e, GString *out,
                                RnicNetCtx *ctx, RnicMrTable *t)
{
    RnicDescribeArg a = { .out = out, .ctx = ctx };
    GPtrArray *qps = rnic_ctx_qps(e, ctx);
    uint32_t i;

    g_string_append(out, "net ");
    rnic_describe_net(out, ctx);
    g_string_append_printf(out, " mrs=%u qps=%u\n", t->count, qps->len);
    rnic_mrt_foreach(e, t, rnic_describe_mr, &a);
    for (i = 0; i < qps->len; i++) {
        rnic_describe_qp(out, ctx, g_ptr_array_index(qps, i));
    }
    g_ptr_array_free(qps, TRUE);
}

char *rnic_engine_describe_tables(RnicEngine *e)
{
    GString *out = g_string_new(NULL);
    RnicNetCtx *ctx;
    uint32_t c;

    RNIC_TABLE_FOREACH(&e->net_ctxs, c, ctx) {
        rnic_describe_table(e, out, ctx, &ctx->mrt);
    }
    if (e->mnet_mrt.count || g_hash_table_size(e->mnet_qpns)) {
        rnic_describe_table(e, out, NULL, &e->mnet_mrt);
    }
    return g_string_free(out, FALSE);
}
