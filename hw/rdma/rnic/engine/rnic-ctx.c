/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: network contexts (patent a: one mapping table and one QPN
 * space per network identifier), user contexts (doorbell pages), the GID
 * table and protection domains (of one network context, or multi-network:
 * bound to contexts by their QPs, see rnic-mr.c).
 */
#include <string.h>
#include "rnic-admin.h"

#define RNIC_VLAN_ID_MAX 4095

static gpointer rnic_net_key(uint8_t type, uint32_t net_id)
{
    return GUINT_TO_POINTER((((guint)type << 24) | (net_id & 0xffffff)) + 1);
}

void rnic_ctx_init(RnicEngine *e)
{
    rnic_table_init(&e->uctxs, "user context", sizeof(RnicUctx),
                    e->cfg.db_pages);
    rnic_table_init(&e->net_ctxs, "network context", sizeof(RnicNetCtx),
                    e->cfg.max_net_ctx);
    rnic_table_init(&e->pds, "PD", sizeof(RnicPd), e->cfg.max_pd);
    e->net_ids = g_hash_table_new(g_direct_hash, g_direct_equal);
    e->gids = g_new0(RnicGid, e->cfg.max_gid);
}

void rnic_ctx_fini(RnicEngine *e)
{
    rnic_ctx_reset(e);
    rnic_table_destroy(&e->uctxs);
    rnic_table_destroy(&e->net_ctxs);
    rnic_table_destroy(&e->pds);
    g_hash_table_destroy(e->net_ids);
    g_free(e->gids);
}

/* A PD in the host memory account (a multi-network one: its bindings). */
static uint64_t rnic_pd_bytes(const RnicEngine *e, bool multi_net)
{
    return sizeof(RnicPd) +
           (multi_net ? (uint64_t)e->cfg.max_net_ctx * sizeof(uint32_t) : 0);
}

static void rnic_pd_free(RnicEngine *e, RnicPd *pd)
{
    g_free(pd->binds);
    rnic_obj_destroy(e, &e->pds, pd, rnic_pd_bytes(e, !pd->ctx));
}

void rnic_ctx_reset(RnicEngine *e)
{
    RnicUctx *uctx;
    RnicNetCtx *ctx;
    uint32_t i;
    RnicPd *pd;

    RNIC_TABLE_FOREACH(&e->pds, i, pd) {
        rnic_pd_free(e, pd);
    }
    memset(e->gids, 0, sizeof(RnicGid) * e->cfg.max_gid);
    RNIC_TABLE_FOREACH(&e->net_ctxs, i, ctx) {
        ctx->refs = 0;
        rnic_netctx_destroy(e, ctx);
    }
    RNIC_TABLE_FOREACH(&e->uctxs, i, uctx) {
        rnic_obj_destroy(e, &e->uctxs, uctx, sizeof(RnicUctx));
    }
    e->qp_gen++;
}

/* ---------------------------------------------------------------------- */
/* Network contexts                                                       */
/* ---------------------------------------------------------------------- */

RnicNetCtx *rnic_netctx_lookup(RnicEngine *e, uint32_t handle)
{
    return rnic_table_get(&e->net_ctxs, handle);
}

RnicNetCtx *rnic_netctx_by_id(RnicEngine *e, uint8_t type, uint32_t net_id)
{
    return g_hash_table_lookup(e->net_ids, rnic_net_key(type, net_id));
}

/* A context in the host memory account: itself and its mapping table. */
static uint64_t rnic_netctx_bytes(const RnicEngine *e)
{
    return sizeof(RnicNetCtx) + rnic_mrt_bytes(&e->cfg);
}

RnicNetCtx *rnic_netctx_create(RnicEngine *e, uint32_t handle, uint8_t type,
                               uint32_t net_id)
{
    RnicNetCtx *ctx = rnic_obj_create(e, &e->net_ctxs, handle,
                                      RNIC_UCTX_KERNEL, rnic_netctx_bytes(e));

    if (!ctx) {
        return NULL;
    }
    ctx->net_type = type;
    ctx->net_id = net_id;
    ctx->qpns = g_hash_table_new(g_direct_hash, g_direct_equal);
    ctx->next_qpn = 2;
    rnic_mrt_init(e, &ctx->mrt);
    g_hash_table_insert(e->net_ids, rnic_net_key(type, net_id), ctx);
    rnic_qp_join_netctx(e, ctx);
    return ctx;
}

void rnic_netctx_destroy(RnicEngine *e, RnicNetCtx *ctx)
{
    g_hash_table_remove(e->net_ids, rnic_net_key(ctx->net_type, ctx->net_id));
    rnic_mrt_destroy(e, ctx);
    g_hash_table_destroy(ctx->qpns);
    rnic_obj_destroy(e, &e->net_ctxs, ctx, rnic_netctx_bytes(e));
}

char *rnic_netctx_check_params(RnicEngine *e, uint8_t type, uint32_t net_id,
                               uint8_t *status)
{
    if (type == RNIC_NET_VNI) {
        *status = RNIC_ST_NOT_SUPPORTED;
        return g_strdup("VNI network identifiers are reserved");
    }
    if (type != RNIC_NET_VLAN || net_id > RNIC_VLAN_ID_MAX) {
        *status = RNIC_ST_BAD_PARAM;
        return g_strdup_printf("bad network identifier type %u id %u", type,
                               net_id);
    }
    if (rnic_netctx_by_id(e, type, net_id)) {
        *status = RNIC_ST_EXISTS;
        return g_strdup_printf("VLAN %u already has a context", net_id);
    }
    return NULL;
}

void rnic_cmd_create_net_ctx(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                             RnicAdminResult *res)
{
    uint32_t net_id = GUINT32_FROM_LE(cmd->net_ctx.net_id);
    uint8_t type = cmd->net_ctx.net_type;
    g_autofree char *why = NULL;
    RnicNetCtx *ctx;
    uint8_t status;

    if (!rnic_admin_check_uctx(e, cmd, res, true)) {
        return;
    }
    why = rnic_netctx_check_params(e, type, net_id, &status);
    if (why) {
        rnic_admin_fail(e, res, status, "CREATE_NET_CTX: %s", why);
        return;
    }
    ctx = rnic_netctx_create(e, UINT32_MAX, type, net_id);
    if (!ctx) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "CREATE_NET_CTX: all %u contexts in use",
                        e->cfg.max_net_ctx);
        return;
    }
    res->result0 = ctx->handle;
}

void rnic_cmd_destroy_net_ctx(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                              RnicAdminResult *res)
{
    uint32_t h = GUINT32_FROM_LE(cmd->destroy.handle);
    RnicNetCtx *ctx;

    if (!rnic_admin_check_uctx(e, cmd, res, true)) {
        return;
    }
    ctx = rnic_netctx_lookup(e, h);
    if (!ctx) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_HANDLE,
                        "DESTROY_NET_CTX: no context %u", h);
        return;
    }
    if (ctx->refs) {
        rnic_admin_fail(e, res, RNIC_ST_BUSY,
                        "DESTROY_NET_CTX: context %u still has %u PDs/GIDs",
                        h, ctx->refs);
        return;
    }
    rnic_netctx_destroy(e, ctx);
}

/* ---------------------------------------------------------------------- */
/* User contexts                                                          */
/* ---------------------------------------------------------------------- */

RnicUctx *rnic_uctx_create(RnicEngine *e, uint32_t handle)
{
    return rnic_obj_create(e, &e->uctxs, handle, RNIC_UCTX_KERNEL,
                           sizeof(RnicUctx));
}

void rnic_cmd_alloc_uctx(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res)
{
    RnicUctx *uctx = NULL;
    uint32_t i;

    if (!rnic_admin_check_uctx(e, cmd, res, true)) {
        return;
    }
    /* page 0 is the kernel's: the lowest free page from 1 */
    for (i = 1; i < e->cfg.db_pages && !uctx; i++) {
        if (!rnic_table_get(&e->uctxs, i)) {
            uctx = rnic_uctx_create(e, i);
        }
    }
    if (!uctx) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "ALLOC_UCTX: all %u doorbell pages in use or host "
                        "memory budget exhausted", e->cfg.db_pages - 1);
        return;
    }
    res->result0 = uctx->handle;
    res->result2 = uctx->handle;
}

void rnic_cmd_free_uctx(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                        RnicAdminResult *res)
{
    uint32_t h = GUINT32_FROM_LE(cmd->destroy.handle);
    RnicUctx *uctx;

    if (!rnic_admin_check_uctx(e, cmd, res, true)) {
        return;
    }
    uctx = rnic_admin_obj(e, cmd, res, &e->uctxs, h);
    if (!uctx) {
        return;
    }
    if (uctx->refs) {
        rnic_admin_fail(e, res, RNIC_ST_BUSY,
                        "FREE_UCTX: context %u still owns %u objects", h,
                        uctx->refs);
        return;
    }
    rnic_obj_destroy(e, &e->uctxs, uctx, sizeof(RnicUctx));
}

/* ---------------------------------------------------------------------- */
/* GID table                                                              */
/* ---------------------------------------------------------------------- */

const RnicGid *rnic_gid_get(RnicEngine *e, uint32_t index)
{
    return index < e->cfg.max_gid && e->gids[index].valid ? &e->gids[index]
                                                          : NULL;
}

RnicNetCtx *rnic_gid_netctx(RnicEngine *e, uint32_t index)
{
    const RnicGid *g = rnic_gid_get(e, index);

    return g ? rnic_netctx_lookup(e, g->net_ctx) : NULL;
}

bool rnic_gid_is_local(RnicEngine *e, const RnicNetCtx *ctx,
                       const uint8_t gid[16])
{
    uint32_t i;

    if (!ctx) {
        return false;   /* an unbound QP has no local GIDs */
    }
    for (i = 0; i < e->cfg.max_gid; i++) {
        const RnicGid *g = &e->gids[i];

        if (g->valid && g->net_ctx == ctx->handle &&
            !memcmp(g->gid, gid, 16)) {
            return true;
        }
    }
    return false;
}

char *rnic_gid_check_params(RnicEngine *e, uint32_t index, uint32_t ctxh,
                            uint8_t type, const uint8_t gid[16],
                            RnicNetCtx **ctx, uint8_t *status)
{
    static const uint8_t zero[16];

    *ctx = NULL;
    if (index >= e->cfg.max_gid || type != 0 || !memcmp(gid, zero, 16)) {
        *status = RNIC_ST_BAD_PARAM;
        return g_strdup_printf("bad index %u, type %u or zero GID", index,
                               type);
    }
    *ctx = rnic_netctx_lookup(e, ctxh);
    if (!*ctx) {
        *status = RNIC_ST_BAD_HANDLE;
        return g_strdup_printf("no network context %u", ctxh);
    }
    if (e->gids[index].valid || rnic_gid_is_local(e, *ctx, gid)) {
        *status = RNIC_ST_EXISTS;
        return g_strdup_printf("index %u in use or GID already present",
                               index);
    }
    return NULL;
}

void rnic_cmd_add_gid(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                      RnicAdminResult *res)
{
    uint32_t index = GUINT32_FROM_LE(cmd->gid.index);
    uint32_t h = GUINT32_FROM_LE(cmd->gid.net_ctx);
    g_autofree char *why = NULL;
    RnicNetCtx *ctx;
    uint8_t status;
    RnicGid *g;

    if (!rnic_admin_check_uctx(e, cmd, res, true)) {
        return;
    }
    why = rnic_gid_check_params(e, index, h, cmd->gid.gid_type, cmd->gid.gid,
                                &ctx, &status);
    if (why) {
        rnic_admin_fail(e, res, status, "ADD_GID: %s", why);
        return;
    }
    g = &e->gids[index];
    g->valid = true;
    memcpy(g->gid, cmd->gid.gid, 16);
    g->net_ctx = h;
    g->type = cmd->gid.gid_type;
    ctx->refs++;
    e->qp_gen++;
}

void rnic_cmd_del_gid(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                      RnicAdminResult *res)
{
    uint32_t index = GUINT32_FROM_LE(cmd->gid.index);
    RnicGid *g;

    if (!rnic_admin_check_uctx(e, cmd, res, true)) {
        return;
    }
    if (index >= e->cfg.max_gid || !e->gids[index].valid) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_HANDLE,
                        "DEL_GID: no GID at index %u", index);
        return;
    }
    g = &e->gids[index];
    rnic_netctx_lookup(e, g->net_ctx)->refs--;
    memset(g, 0, sizeof(*g));
    e->qp_gen++;
}

/* ---------------------------------------------------------------------- */
/* Protection domains                                                     */
/* ---------------------------------------------------------------------- */

RnicPd *rnic_pd_lookup(RnicEngine *e, uint32_t handle)
{
    return rnic_table_get(&e->pds, handle);
}

RnicPd *rnic_pd_create(RnicEngine *e, uint32_t handle, RnicNetCtx *ctx,
                       uint32_t owner)
{
    RnicPd *pd = rnic_obj_create(e, &e->pds, handle, owner,
                                 rnic_pd_bytes(e, !ctx));

    if (!pd) {
        return NULL;
    }
    pd->ctx = ctx;
    if (ctx) {
        ctx->refs++;
    } else {
        pd->binds = g_new0(uint32_t, e->cfg.max_net_ctx);
    }
    rnic_uctx_get(e, owner);
    return pd;
}

char *rnic_pd_check_params(RnicEngine *e, uint32_t owner, uint32_t ctxh,
                           RnicNetCtx **ctx, uint8_t *status)
{
    *ctx = NULL;
    if (!rnic_uctx_valid(e, owner)) {
        *status = RNIC_ST_PERMISSION;
        return g_strdup_printf("user context %u is not allocated", owner);
    }
    /* RNIC_PD_MULTI_NET: bound to contexts later, by its QPs */
    if (ctxh != RNIC_PD_MULTI_NET) {
        *ctx = rnic_netctx_lookup(e, ctxh);
        if (!*ctx) {
            *status = RNIC_ST_BAD_HANDLE;
            return g_strdup_printf("no network context %u", ctxh);
        }
    }
    return NULL;
}

void rnic_cmd_alloc_pd(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                       RnicAdminResult *res)
{
    g_autofree char *why = NULL;
    RnicNetCtx *ctx;
    uint8_t status;
    RnicPd *pd;

    if (!rnic_admin_check_uctx(e, cmd, res, false)) {
        return;
    }
    why = rnic_pd_check_params(e, GUINT32_FROM_LE(cmd->uctx),
                               GUINT32_FROM_LE(cmd->pd.net_ctx), &ctx,
                               &status);
    if (why) {
        rnic_admin_fail(e, res, status, "ALLOC_PD: %s", why);
        return;
    }
    pd = rnic_pd_create(e, UINT32_MAX, ctx, GUINT32_FROM_LE(cmd->uctx));
    if (!pd) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "ALLOC_PD: all %u PDs in use", e->cfg.max_pd);
        return;
    }
    res->result0 = pd->handle;
}

void rnic_cmd_dealloc_pd(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res)
{
    uint32_t h = GUINT32_FROM_LE(cmd->destroy.handle);
    RnicPd *pd;

    if (!rnic_admin_check_uctx(e, cmd, res, false)) {
        return;
    }
    pd = rnic_admin_obj(e, cmd, res, &e->pds, h);
    if (!pd) {
        return;
    }
    if (pd->refs) {
        rnic_admin_fail(e, res, RNIC_ST_BUSY,
                        "DEALLOC_PD: PD %u still used by %u objects", h,
                        pd->refs);
        return;
    }
    if (pd->ctx) {
        pd->ctx->refs--;
    }
    rnic_uctx_put(e, pd->owner);
    rnic_pd_free(e, pd);
}
