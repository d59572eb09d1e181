/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: queue pairs. Creation (QPN from the PD's network context),
 * the IB state machine with the per-transition attribute masks of the IB
 * spec (the table of the Linux kernel's ib_modify_qp_is_ok), QUERY_QP,
 * destruction, error flush, receive-WQE fetch (scatter/gather lists:
 * rnic-sge.c).
 * QPs of a multi-network PD take QPNs unique device-wide: an RC one enters
 * the QPN space of the context its AV names (binding its PD there), a UD or
 * GSI one is in every context's QPN space.
 * The data path proper is in rnic-req.c (requester) and rnic-resp.c
 * (responder).
 */
#include <string.h>
#include "rnic-admin.h"

void rnic_qp_init(RnicEngine *e)
{
    rnic_table_init(&e->qps, "QP", sizeof(RnicQp), e->cfg.max_qp);
    e->mnet_qpns = g_hash_table_new(g_direct_hash, g_direct_equal);
    e->mnet_next_qpn = 2;
}

void rnic_qp_fini(RnicEngine *e)
{
    rnic_qp_reset(e);
    rnic_table_destroy(&e->qps);
    g_hash_table_destroy(e->mnet_qpns);
}

void rnic_qp_reset(RnicEngine *e)
{
    uint32_t i;
    RnicQp *qp;

    RNIC_TABLE_FOREACH(&e->qps, i, qp) {
        rnic_qp_destroy(e, qp);
    }
}

RnicQp *rnic_qp_lookup(RnicEngine *e, uint32_t handle)
{
    return rnic_table_get(&e->qps, handle);
}

RnicQp *rnic_qp_by_qpn(RnicNetCtx *ctx, uint32_t qpn)
{
    return g_hash_table_lookup(ctx->qpns, GUINT_TO_POINTER(qpn));
}

uint32_t rnic_qp_pmtu(const RnicQp *qp)
{
    return 128u << qp->path_mtu;
}

static bool rnic_qpn_mnet_used(RnicEngine *e, uint32_t qpn)
{
    return g_hash_table_contains(e->mnet_qpns, GUINT_TO_POINTER(qpn));
}

/* Is 'qpn' taken in any context (or by a QP of a multi-network PD)? */
static bool rnic_qpn_used_anywhere(RnicEngine *e, uint32_t qpn)
{
    RnicNetCtx *ctx;
    uint32_t c;

    if (rnic_qpn_mnet_used(e, qpn)) {
        return true;
    }
    RNIC_TABLE_FOREACH(&e->net_ctxs, c, ctx) {
        if (rnic_qp_by_qpn(ctx, qpn)) {
            return true;
        }
    }
    return false;
}

/*
 * A free QPN: 2.. (0 and 1 are reserved; 1 is the GSI QP). ctx NULL: for a
 * multi-network PD, free in every context; otherwise free in ctx and not
 * one a multi-network PD's QP holds (it may bind to ctx later).
 */
static uint32_t rnic_qpn_alloc(RnicEngine *e, RnicNetCtx *ctx)
{
    uint32_t *next = ctx ? &ctx->next_qpn : &e->mnet_next_qpn;
    uint32_t i;

    for (i = 0; i < RNIC_ROCE_QPN_MASK; i++) {
        uint32_t qpn = *next;

        *next = qpn >= RNIC_ROCE_QPN_MASK ? 2 : qpn + 1;
        if (ctx ? !rnic_qp_by_qpn(ctx, qpn) && !rnic_qpn_mnet_used(e, qpn)
                : !rnic_qpn_used_anywhere(e, qpn)) {
            return qpn;
        }
    }
    return 0;
}

bool rnic_qpn_free_for(RnicEngine *e, const RnicPd *pd, uint32_t qpn)
{
    return pd->ctx ? !rnic_qp_by_qpn(pd->ctx, qpn) &&
                     !rnic_qpn_mnet_used(e, qpn)
                   : !rnic_qpn_used_anywhere(e, qpn);
}

/* Insert (or remove) an all-network QP in every context's QPN space. */
static void rnic_qp_all_nets_set(RnicEngine *e, RnicQp *qp, bool add)
{
    gpointer key = GUINT_TO_POINTER(qp->qpn);
    RnicNetCtx *ctx;
    uint32_t c;

    RNIC_TABLE_FOREACH(&e->net_ctxs, c, ctx) {
        if (add) {
            g_hash_table_insert(ctx->qpns, key, qp);
        } else if (g_hash_table_lookup(ctx->qpns, key) == qp) {
            g_hash_table_remove(ctx->qpns, key);
        }
    }
}

void rnic_qp_join_netctx(RnicEngine *e, RnicNetCtx *ctx)
{
    uint32_t i;
    RnicQp *qp;

    RNIC_TABLE_FOREACH(&e->qps, i, qp) {
        if (qp->all_nets) {
            g_hash_table_insert(ctx->qpns, GUINT_TO_POINTER(qp->qpn), qp);
        }
    }
}

bool rnic_qp_bind(RnicEngine *e, RnicQp *qp, RnicNetCtx *ctx,
                  const char **why, uint8_t *status)
{
    if (qp->ctx || qp->all_nets || qp->pd->ctx) {
        *why = "QP is not an unbound RC QP of a multi-network PD";
        *status = RNIC_ST_BAD_PARAM;
        return false;
    }
    if (rnic_qp_by_qpn(ctx, qp->qpn)) {
        *why = "QPN already used in that network context";
        *status = RNIC_ST_EXISTS;
        return false;
    }
    if (!rnic_pd_bind(e, qp->pd, ctx, why)) {
        *status = RNIC_ST_NO_RESOURCES;
        return false;
    }
    qp->ctx = ctx;
    g_hash_table_insert(ctx->qpns, GUINT_TO_POINTER(qp->qpn), qp);
    e->qp_gen++;
    rnic_event(e, QP_BIND, NULL, qp->handle, qp->qpn, ctx->handle);
    return true;
}

/*
 * Allocate a QP object at 'handle' (UINT32_MAX: any); the caller fills it
 * and calls rnic_qp_attach() once ctx/qpn are known.
 */
/* A QP in the host memory account, before its send-queue slots. */
static uint64_t rnic_qp_base_bytes(const RnicEngine *e)
{
    return sizeof(RnicQp) + 2 * sizeof(RnicSendWqe) +
           (uint64_t)e->cfg.max_rd_atomic * sizeof(RnicRespRes) +
           64;  /* its entries in the QPN hash tables */
}

/* What a QP holds in the account: its base, and its slots once attached. */
static uint64_t rnic_qp_bytes(const RnicEngine *e, const RnicQp *qp)
{
    return rnic_qp_base_bytes(e) +
           (qp->slots ? (uint64_t)sizeof(RnicSqSlot) << qp->sq_log : 0);
}

RnicQp *rnic_qp_create(RnicEngine *e, uint32_t handle, uint32_t qpn)
{
    RnicQp *qp = rnic_obj_create(e, &e->qps, handle, RNIC_UCTX_KERNEL,
                                 rnic_qp_base_bytes(e));

    if (!qp) {
        return NULL;
    }
    qp->qpn = qpn;
    qp->work.kind = RNIC_WORK_QP;
    qp->txc = g_new0(RnicSendWqe, 1);
    qp->rxc = g_new0(RnicSendWqe, 1);
    qp->resp.res = g_new0(RnicRespRes, e->cfg.max_rd_atomic);
    qp->resp.nres = 1;
    qp->path_mtu = RNIC_MTU_1024;
    e->qp_gen++;
    return qp;
}

void rnic_qp_destroy(RnicEngine *e, RnicQp *qp)
{
    uint64_t bytes;

    rnic_work_cancel(&qp->work);
    rnic_qp_timer_cancel(e, qp);
    rnic_mcast_qp_destroy(e, qp);
    if (qp->ctx &&
        g_hash_table_lookup(qp->ctx->qpns, GUINT_TO_POINTER(qp->qpn)) == qp) {
        g_hash_table_remove(qp->ctx->qpns, GUINT_TO_POINTER(qp->qpn));
        if (qp->pd && !qp->pd->ctx) {
            rnic_pd_unbind(e, qp->pd, qp->ctx);
        }
    }
    if (qp->all_nets) {
        rnic_qp_all_nets_set(e, qp, false);
    }
    if (g_hash_table_lookup(e->mnet_qpns, GUINT_TO_POINTER(qp->qpn)) == qp) {
        g_hash_table_remove(e->mnet_qpns, GUINT_TO_POINTER(qp->qpn));
    }
    if (qp->pd) {
        qp->pd->refs--;
        rnic_uctx_put(e, qp->owner);
    }
    if (qp->scq) {
        qp->scq->refs--;
    }
    if (qp->rcq) {
        qp->rcq->refs--;
    }
    if (qp->srq) {
        qp->srq->refs--;
    }
    rnic_wqc_free(e, qp);
    g_free(qp->txc);
    g_free(qp->rxc);
    g_free(qp->resp.res);
    bytes = rnic_qp_bytes(e, qp);
    g_free(qp->slots);
    rnic_obj_destroy(e, &e->qps, qp, bytes);
    e->qp_gen++;
}

/*
 * Link a filled-in QP to its objects (create and state load). false: its
 * send-queue slots do not fit the host memory budget (nothing linked).
 */
static bool rnic_qp_attach(RnicEngine *e, RnicQp *qp)
{
    uint64_t slots = (uint64_t)sizeof(RnicSqSlot) << qp->sq_log;

    if (!rnic_mem_charge(e, slots)) {
        return false;
    }
    qp->slots = g_try_malloc0(slots);
    if (!qp->slots) {
        rnic_mem_release(e, slots);
        return false;
    }
    if (qp->ctx) {
        g_hash_table_insert(qp->ctx->qpns, GUINT_TO_POINTER(qp->qpn), qp);
    }
    if (!qp->pd->ctx) {
        g_hash_table_insert(e->mnet_qpns, GUINT_TO_POINTER(qp->qpn), qp);
    }
    if (qp->all_nets) {
        rnic_qp_all_nets_set(e, qp, true);
    }
    qp->pd->refs++;
    rnic_uctx_get(e, qp->owner);
    qp->scq->refs++;
    qp->rcq->refs++;
    if (qp->srq) {
        qp->srq->refs++;
    }
    qp->sq_max_sge = MIN(e->cfg.max_sge, ((1u << qp->sq_shift) -
                                          sizeof(struct rnic_sq_wqe)) /
                         sizeof(struct rnic_sge));
    qp->max_inline = MIN(e->cfg.max_inline,
                         (1u << qp->sq_shift) - sizeof(struct rnic_sq_wqe));
    if (!qp->srq) {
        qp->rq_max_sge = MIN(e->cfg.max_sge, ((1u << qp->rq_shift) -
                                              sizeof(struct rnic_rq_wqe)) /
                             sizeof(struct rnic_sge));
    }
    return true;
}

/* Back to the state of a fresh QP (RESET). */
static void rnic_qp_clear(RnicEngine *e, RnicQp *qp)
{
    rnic_qp_timer_cancel(e, qp);
    qp->sq_prod = qp->sq_next = qp->sq_una = qp->sq_hi = 0;
    qp->tx_pkt = 0;
    memset(qp->slots, 0, sizeof(RnicSqSlot) << qp->sq_log);
    qp->rq_prod = qp->rq_cons = 0;
    rnic_req_reset_qp(qp);
    rnic_resp_reset_qp(qp);
    qp->sq_drained = false;
    qp->work_flags = 0;
    rnic_work_cancel(&qp->work);
}

/* ---------------------------------------------------------------------- */
/* CREATE / DESTROY / QUERY                                               */
/* ---------------------------------------------------------------------- */

/* A work queue's stride and ring ('what': "SQ" or "RQ"), as in words. */
static char *rnic_qp_check_wq(RnicEngine *e, const char *what,
                              uint8_t shift_min, uint64_t ring,
                              uint8_t log_size, uint8_t wqe_shift)
{
    g_autofree char *why = NULL;

    if (wqe_shift < shift_min || wqe_shift > RNIC_WQE_SHIFT_MAX) {
        return g_strdup_printf("%s: WQE stride 2^%u out of range", what,
                               wqe_shift);
    }
    why = rnic_ring_why(ring, log_size, RNIC_WQ_LOG_MIN, e->cfg.max_qp_wr,
                        1u << wqe_shift);
    return why ? g_strdup_printf("%s: %s", what, why) : NULL;
}

char *rnic_qp_check_sq_params(RnicEngine *e, uint8_t type, uint32_t owner,
                              uint64_t ring, uint8_t log_size,
                              uint8_t wqe_shift, uint8_t *status)
{
    *status = RNIC_ST_BAD_PARAM;
    if (type >= RNIC_QPT_COUNT) {
        return g_strdup_printf("QP type %u", type);
    }
    if (type == RNIC_QPT_GSI && owner != RNIC_UCTX_KERNEL) {
        *status = RNIC_ST_PERMISSION;
        return g_strdup("the GSI QP is the kernel's");
    }
    return rnic_qp_check_wq(e, "SQ", RNIC_SQ_WQE_SHIFT_MIN, ring, log_size,
                            wqe_shift);
}

char *rnic_qp_check_rq_params(RnicEngine *e, const RnicSrq *srq,
                              uint64_t ring, uint8_t log_size,
                              uint8_t wqe_shift)
{
    if (srq) {
        return ring ? g_strdup("a receive queue besides its SRQ") : NULL;
    }
    return rnic_qp_check_wq(e, "RQ", RNIC_RQ_WQE_SHIFT_MIN, ring, log_size,
                            wqe_shift);
}

void rnic_cmd_create_qp(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                        RnicAdminResult *res)
{
    uint32_t owner = GUINT32_FROM_LE(cmd->uctx);
    uint32_t pdh = GUINT32_FROM_LE(cmd->qp.pd);
    uint32_t scqh = GUINT32_FROM_LE(cmd->qp.send_cq);
    uint32_t rcqh = GUINT32_FROM_LE(cmd->qp.recv_cq);
    uint32_t srqh = GUINT32_FROM_LE(cmd->qp.srq);
    uint64_t sq_addr = GUINT64_FROM_LE(cmd->qp.sq_addr);
    uint64_t rq_addr = GUINT64_FROM_LE(cmd->qp.rq_addr);
    uint8_t type = cmd->qp.qp_type;
    g_autofree char *why = NULL;
    uint8_t status;
    RnicPd *pd;
    RnicCq *scq, *rcq;
    RnicSrq *srq = NULL;
    RnicQp *qp;
    uint32_t qpn;

    if (!rnic_admin_check_uctx(e, cmd, res, false)) {
        return;
    }
    pd = rnic_admin_obj(e, cmd, res, &e->pds, pdh);
    scq = pd ? rnic_admin_obj(e, cmd, res, &e->cqs, scqh) : NULL;
    rcq = scq ? rnic_admin_obj(e, cmd, res, &e->cqs, rcqh) : NULL;
    if (!rcq) {
        return;
    }
    if (srqh != RNIC_HANDLE_NONE) {
        srq = rnic_admin_obj(e, cmd, res, &e->srqs, srqh);
        if (!srq) {
            return;
        }
        if (srq->pd->ctx != pd->ctx) {
            rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                            "CREATE_QP: SRQ %u in another network context",
                            srqh);
            return;
        }
    }
    why = rnic_qp_check_sq_params(e, type, owner, sq_addr,
                                  cmd->qp.sq_log_size, cmd->qp.sq_wqe_shift,
                                  &status);
    if (!why) {
        status = RNIC_ST_BAD_PARAM;
        why = rnic_qp_check_rq_params(e, srq, rq_addr, cmd->qp.rq_log_size,
                                      cmd->qp.rq_wqe_shift);
    }
    if (!why && cmd->qp.sq_sig_all > 1) {
        why = g_strdup_printf("sq_sig_all %u", cmd->qp.sq_sig_all);
    }
    if (why) {
        rnic_admin_fail(e, res, status, "CREATE_QP: %s", why);
        return;
    }
    /* the rings, of the rules checked above, must be guest memory */
    if (!rnic_admin_check_ring(e, res, "CREATE_QP SQ", sq_addr,
                               cmd->qp.sq_log_size, RNIC_WQ_LOG_MIN,
                               e->cfg.max_qp_wr, 1u << cmd->qp.sq_wqe_shift)) {
        return;
    }
    if (!srq && !rnic_admin_check_ring(e, res, "CREATE_QP RQ", rq_addr,
                                       cmd->qp.rq_log_size, RNIC_WQ_LOG_MIN,
                                       e->cfg.max_qp_wr,
                                       1u << cmd->qp.rq_wqe_shift)) {
        return;
    }
    if (type == RNIC_QPT_GSI) {
        qpn = RNIC_ROCE_GSI_QPN;
        /* a multi-network PD's GSI QP serves every context */
        if (pd->ctx ? rnic_qp_by_qpn(pd->ctx, qpn) != NULL
                    : rnic_qpn_used_anywhere(e, qpn)) {
            rnic_admin_fail(e, res, RNIC_ST_EXISTS,
                            "CREATE_QP: context %u already has a GSI QP",
                            pd->ctx ? pd->ctx->handle : RNIC_PD_MULTI_NET);
            return;
        }
    } else {
        qpn = rnic_qpn_alloc(e, pd->ctx);
        if (!qpn) {
            rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                            "CREATE_QP: QPN space exhausted");
            return;
        }
    }
    qp = rnic_qp_create(e, UINT32_MAX, qpn);
    if (!qp) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "CREATE_QP: all %u QPs in use or host memory budget "
                        "exhausted", e->cfg.max_qp);
        return;
    }
    qp->owner = owner;
    qp->type = type;
    qp->state = RNIC_QPS_RESET;
    qp->ctx = pd->ctx;
    qp->all_nets = !pd->ctx && !rnic_qpt_connected(type);
    qp->pd = pd;
    qp->scq = scq;
    qp->rcq = rcq;
    qp->srq = srq;
    qp->sq_sig_all = cmd->qp.sq_sig_all;
    qp->sq_addr = sq_addr;
    qp->sq_log = cmd->qp.sq_log_size;
    qp->sq_shift = cmd->qp.sq_wqe_shift;
    if (!srq) {
        qp->rq_addr = rq_addr;
        qp->rq_log = cmd->qp.rq_log_size;
        qp->rq_shift = cmd->qp.rq_wqe_shift;
    }
    qp->port = 1;
    if (!rnic_qp_attach(e, qp)) {
        /* nothing linked yet: destroy must not drop references */
        qp->ctx = NULL;
        qp->all_nets = false;
        qp->pd = NULL;
        qp->scq = qp->rcq = NULL;
        qp->srq = NULL;
        rnic_qp_destroy(e, qp);
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "CREATE_QP: a send queue of 2^%u slots passes the "
                        "host memory budget", cmd->qp.sq_log_size);
        return;
    }
    rnic_qp_clear(e, qp);
    res->result0 = qp->handle;
    res->result1 = qp->qpn;
}

static RnicQp *rnic_qp_cmd_lookup(RnicEngine *e,
                                  const struct rnic_admin_cmd *cmd,
                                  uint32_t h, RnicAdminResult *res)
{
    RnicQp *qp;

    if (!rnic_admin_check_uctx(e, cmd, res, false)) {
        return NULL;
    }
    qp = rnic_admin_obj(e, cmd, res, &e->qps, h);
    if (!qp) {
        return NULL;
    }
    return qp;
}

void rnic_cmd_destroy_qp(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res)
{
    uint32_t h = GUINT32_FROM_LE(cmd->destroy.handle);
    RnicQp *qp = rnic_qp_cmd_lookup(e, cmd, h, res);

    if (qp) {
        rnic_qp_destroy(e, qp);
    }
}

/* QUERY_QP_STATS: the QP's transport counters (RNIC_QP_STAT_FIRST on). */
void rnic_cmd_query_qp_stats(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                             RnicAdminResult *res)
{
    RnicQp *qp = rnic_qp_cmd_lookup(e, cmd, GUINT32_FROM_LE(cmd->query.handle),
                                    res);
    uint64_t v[RNIC_QP_STAT_COUNT];
    unsigned i;

    if (!qp) {
        return;
    }
    for (i = 0; i < RNIC_QP_STAT_COUNT; i++) {
        v[i] = GUINT64_TO_LE(qp->stats[i]);
    }
    rnic_admin_write_result(e, cmd, v, sizeof(v), res);
}

void rnic_cmd_query_qp(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                       RnicAdminResult *res)
{
    RnicQp *qp = rnic_qp_cmd_lookup(e, cmd, GUINT32_FROM_LE(cmd->query.handle),
                                    res);
    struct rnic_qp_attr a;

    if (!qp) {
        return;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = qp->state;
    a.cur_qp_state = qp->state;
    a.path_mtu = qp->path_mtu;
    a.timeout = qp->timeout;
    a.retry_cnt = qp->retry_cnt;
    a.rnr_retry = qp->rnr_retry;
    a.min_rnr_timer = qp->min_rnr_timer;
    a.max_rd_atomic = qp->max_rd_atomic;
    a.max_dest_rd_atomic = qp->max_dest_rd_atomic;
    a.port_num = qp->port;
    a.pkey_index = GUINT16_TO_LE(qp->pkey_index);
    a.qkey = GUINT32_TO_LE(qp->qkey);
    a.rq_psn = GUINT32_TO_LE(qp->resp.epsn);
    a.sq_psn = GUINT32_TO_LE(qp->req_psn);
    a.dest_qp_num = GUINT32_TO_LE(qp->dest_qpn);
    a.qp_access_flags = GUINT32_TO_LE(qp->access);
    a.qp_num = GUINT32_TO_LE(qp->qpn);
    a.av = qp->av;
    rnic_admin_write_result(e, cmd, &a, sizeof(a), res);
}

/* ---------------------------------------------------------------------- */
/* State machine                                                          */
/* ---------------------------------------------------------------------- */

/* Attribute masks of one transition, per QP type (RC, UD, GSI, UC). */
typedef struct RnicQpTrans {
    bool valid;
    uint32_t req[RNIC_QPT_COUNT];
    uint32_t opt[RNIC_QPT_COUNT];
} RnicQpTrans;

#define M_PKEY      RNIC_QP_PKEY_INDEX
#define M_PORT      RNIC_QP_PORT
#define M_QKEY      RNIC_QP_QKEY
#define M_ACCESS    RNIC_QP_ACCESS_FLAGS
#define M_CUR       RNIC_QP_CUR_STATE
#define M_ALT       RNIC_QP_ALT_PATH
#define M_MIG       RNIC_QP_PATH_MIG_STATE
#define M_RNR_TIMER RNIC_QP_MIN_RNR_TIMER

static const RnicQpTrans rnic_qp_trans[RNIC_QPS_ERR + 1][RNIC_QPS_ERR + 1] = {
    [RNIC_QPS_RESET] = {
        [RNIC_QPS_RESET] = { .valid = true },
        [RNIC_QPS_ERR] = { .valid = true },
        [RNIC_QPS_INIT] = {
            .valid = true,
            .req = {
                [RNIC_QPT_RC] = M_PKEY | M_PORT | M_ACCESS,
                [RNIC_QPT_UC] = M_PKEY | M_PORT | M_ACCESS,
                [RNIC_QPT_UD] = M_PKEY | M_PORT | M_QKEY,
                [RNIC_QPT_GSI] = M_PKEY | M_QKEY,
            },
        },
    },
    [RNIC_QPS_INIT] = {
        [RNIC_QPS_RESET] = { .valid = true },
        [RNIC_QPS_ERR] = { .valid = true },
        [RNIC_QPS_INIT] = {
            .valid = true,
            .opt = {
                [RNIC_QPT_RC] = M_PKEY | M_PORT | M_ACCESS,
                [RNIC_QPT_UC] = M_PKEY | M_PORT | M_ACCESS,
                [RNIC_QPT_UD] = M_PKEY | M_PORT | M_QKEY,
                [RNIC_QPT_GSI] = M_PKEY | M_QKEY,
            },
        },
        [RNIC_QPS_RTR] = {
            .valid = true,
            .req = {
                [RNIC_QPT_RC] = RNIC_QP_AV | RNIC_QP_PATH_MTU |
                                RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN |
                                RNIC_QP_MAX_DEST_RD_ATOMIC | M_RNR_TIMER,
                [RNIC_QPT_UC] = RNIC_QP_AV | RNIC_QP_PATH_MTU |
                                RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN,
            },
            .opt = {
                [RNIC_QPT_RC] = M_ALT | M_ACCESS | M_PKEY,
                [RNIC_QPT_UC] = M_ALT | M_ACCESS | M_PKEY,
                [RNIC_QPT_UD] = M_PKEY | M_QKEY,
                [RNIC_QPT_GSI] = M_PKEY | M_QKEY,
            },
        },
    },
    [RNIC_QPS_RTR] = {
        [RNIC_QPS_RESET] = { .valid = true },
        [RNIC_QPS_ERR] = { .valid = true },
        [RNIC_QPS_RTS] = {
            .valid = true,
            .req = {
                [RNIC_QPT_RC] = RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT |
                                RNIC_QP_RNR_RETRY | RNIC_QP_SQ_PSN |
                                RNIC_QP_MAX_QP_RD_ATOMIC,
                [RNIC_QPT_UC] = RNIC_QP_SQ_PSN,
                [RNIC_QPT_UD] = RNIC_QP_SQ_PSN,
                [RNIC_QPT_GSI] = RNIC_QP_SQ_PSN,
            },
            .opt = {
                [RNIC_QPT_RC] = M_CUR | M_ALT | M_ACCESS | M_RNR_TIMER | M_MIG,
                [RNIC_QPT_UC] = M_CUR | M_ALT | M_ACCESS | M_MIG,
                [RNIC_QPT_UD] = M_CUR | M_QKEY,
                [RNIC_QPT_GSI] = M_CUR | M_QKEY,
            },
        },
    },
    [RNIC_QPS_RTS] = {
        [RNIC_QPS_RESET] = { .valid = true },
        [RNIC_QPS_ERR] = { .valid = true },
        [RNIC_QPS_RTS] = {
            .valid = true,
            .opt = {
                [RNIC_QPT_RC] = M_CUR | M_ACCESS | M_ALT | M_MIG | M_RNR_TIMER,
                [RNIC_QPT_UC] = M_CUR | M_ACCESS | M_ALT | M_MIG,
                [RNIC_QPT_UD] = M_CUR | M_QKEY,
                [RNIC_QPT_GSI] = M_CUR | M_QKEY,
            },
        },
        [RNIC_QPS_SQD] = {
            .valid = true,
            .opt = {
                [RNIC_QPT_RC] = RNIC_QP_EN_SQD_ASYNC_NOTIFY,
                [RNIC_QPT_UC] = RNIC_QP_EN_SQD_ASYNC_NOTIFY,
                [RNIC_QPT_UD] = RNIC_QP_EN_SQD_ASYNC_NOTIFY,
                [RNIC_QPT_GSI] = RNIC_QP_EN_SQD_ASYNC_NOTIFY,
            },
        },
    },
    [RNIC_QPS_SQD] = {
        [RNIC_QPS_RESET] = { .valid = true },
        [RNIC_QPS_ERR] = { .valid = true },
        [RNIC_QPS_RTS] = {
            .valid = true,
            .opt = {
                [RNIC_QPT_RC] = M_CUR | M_ALT | M_ACCESS | M_RNR_TIMER | M_MIG,
                [RNIC_QPT_UC] = M_CUR | M_ALT | M_ACCESS | M_MIG,
                [RNIC_QPT_UD] = M_CUR | M_QKEY,
                [RNIC_QPT_GSI] = M_CUR | M_QKEY,
            },
        },
        [RNIC_QPS_SQD] = {
            .valid = true,
            .opt = {
                [RNIC_QPT_RC] = M_PORT | RNIC_QP_AV | RNIC_QP_TIMEOUT |
                                RNIC_QP_RETRY_CNT | RNIC_QP_RNR_RETRY |
                                RNIC_QP_MAX_QP_RD_ATOMIC |
                                RNIC_QP_MAX_DEST_RD_ATOMIC | M_ALT | M_ACCESS |
                                M_PKEY | M_RNR_TIMER | M_MIG,
                [RNIC_QPT_UC] = RNIC_QP_AV | M_ALT | M_ACCESS | M_PKEY | M_MIG,
                [RNIC_QPT_UD] = M_PKEY | M_QKEY,
                [RNIC_QPT_GSI] = M_PKEY | M_QKEY,
            },
        },
    },
    [RNIC_QPS_SQE] = {
        [RNIC_QPS_RESET] = { .valid = true },
        [RNIC_QPS_ERR] = { .valid = true },
        [RNIC_QPS_RTS] = {
            .valid = true,
            .opt = {
                [RNIC_QPT_UC] = M_CUR | M_ACCESS,
                [RNIC_QPT_UD] = M_CUR | M_QKEY,
                [RNIC_QPT_GSI] = M_CUR | M_QKEY,
            },
        },
    },
    [RNIC_QPS_ERR] = {
        [RNIC_QPS_RESET] = { .valid = true },
        [RNIC_QPS_ERR] = { .valid = true },
    },
};

#define RNIC_QP_MASK_KNOWN \
    (RNIC_QP_STATE | RNIC_QP_CUR_STATE | RNIC_QP_EN_SQD_ASYNC_NOTIFY | \
     RNIC_QP_ACCESS_FLAGS | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_QKEY | \
     RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT | \
     RNIC_QP_RNR_RETRY | RNIC_QP_RQ_PSN | RNIC_QP_MAX_QP_RD_ATOMIC | \
     RNIC_QP_ALT_PATH | RNIC_QP_MIN_RNR_TIMER | RNIC_QP_SQ_PSN | \
     RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_PATH_MIG_STATE | RNIC_QP_CAP | \
     RNIC_QP_DEST_QPN)

/*
 * Is cur -> next with 'mask' legal for a QP of 'type'? As the IB spec
 * (and ib_modify_qp_is_ok): the transition must exist, every required
 * attribute must be given and nothing beyond required | optional | STATE.
 */
bool rnic_qp_transition_ok(uint8_t type, uint8_t cur, uint8_t next,
                           uint32_t mask)
{
    const RnicQpTrans *t;

    if (cur > RNIC_QPS_ERR || next > RNIC_QPS_ERR || type >= RNIC_QPT_COUNT) {
        return false;
    }
    if ((mask & RNIC_QP_CUR_STATE) && cur != RNIC_QPS_RTR &&
        cur != RNIC_QPS_RTS && cur != RNIC_QPS_SQD && cur != RNIC_QPS_SQE) {
        return false;
    }
    t = &rnic_qp_trans[cur][next];
    if (!t->valid) {
        return false;
    }
    if ((mask & t->req[type]) != t->req[type]) {
        return false;
    }
    return !(mask & ~(t->req[type] | t->opt[type] | RNIC_QP_STATE));
}

static const char *rnic_qp_state_name(uint8_t s)
{
    static const char *const names[] = {
        "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
    };

    return s < G_N_ELEMENTS(names) ? names[s] : "?";
}

/* Check attribute values; NULL when fine. */
static const char *rnic_qp_check_attr(RnicEngine *e, const RnicQp *qp,
                                      const struct rnic_qp_attr *a,
                                      uint32_t mask)
{
    if ((mask & RNIC_QP_PKEY_INDEX) && GUINT16_FROM_LE(a->pkey_index) != 0) {
        return "pkey_index must be 0";
    }
    if ((mask & RNIC_QP_PORT) && a->port_num != 1) {
        return "port_num must be 1";
    }
    if ((mask & RNIC_QP_ACCESS_FLAGS) &&
        (GUINT32_FROM_LE(a->qp_access_flags) & ~RNIC_ACCESS_ALL)) {
        return "unknown access flags";
    }
    if (mask & RNIC_QP_AV) {
        const RnicGid *g = rnic_gid_get(e, a->av.sgid_index);

        /* an unbound QP of a multi-network PD binds to the GID's context */
        if (!g || (qp->ctx && g->net_ctx != qp->ctx->handle)) {
            return "sgid_index names no GID of the QP's network context";
        }
    }
    if ((mask & RNIC_QP_PATH_MTU) &&
        (a->path_mtu < RNIC_MTU_256 || a->path_mtu > RNIC_MTU_4096)) {
        return "path_mtu out of range";
    }
    if ((mask & RNIC_QP_TIMEOUT) && a->timeout > 31) {
        return "timeout above 31";
    }
    if ((mask & RNIC_QP_RETRY_CNT) && a->retry_cnt > 7) {
        return "retry_cnt above 7";
    }
    if ((mask & RNIC_QP_RNR_RETRY) && a->rnr_retry > 7) {
        return "rnr_retry above 7";
    }
    if ((mask & RNIC_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31) {
        return "min_rnr_timer above 31";
    }
    if ((mask & RNIC_QP_MAX_QP_RD_ATOMIC) &&
        a->max_rd_atomic > e->cfg.max_rd_atomic) {
        return "max_rd_atomic above the device limit";
    }
    if ((mask & RNIC_QP_MAX_DEST_RD_ATOMIC) &&
        a->max_dest_rd_atomic > e->cfg.max_rd_atomic) {
        return "max_dest_rd_atomic above the device limit";
    }
    if ((mask & RNIC_QP_RQ_PSN) &&
        GUINT32_FROM_LE(a->rq_psn) > RNIC_ROCE_PSN_MASK) {
        return "rq_psn beyond 24 bits";
    }
    if ((mask & RNIC_QP_SQ_PSN) &&
        GUINT32_FROM_LE(a->sq_psn) > RNIC_ROCE_PSN_MASK) {
        return "sq_psn beyond 24 bits";
    }
    if ((mask & RNIC_QP_DEST_QPN) &&
        GUINT32_FROM_LE(a->dest_qp_num) > RNIC_ROCE_QPN_MASK) {
        return "dest_qp_num beyond 24 bits";
    }
    return NULL;
}

static void rnic_qp_apply_attr(RnicEngine *e, RnicQp *qp,
                               const struct rnic_qp_attr *a, uint32_t mask)
{
    qp->wqc_gen++;              /* no cached translation outlives it */
    if (mask & RNIC_QP_PKEY_INDEX) {
        qp->pkey_index = GUINT16_FROM_LE(a->pkey_index);
    }
    if (mask & RNIC_QP_PORT) {
        qp->port = a->port_num;
    }
    if (mask & RNIC_QP_QKEY) {
        qp->qkey = GUINT32_FROM_LE(a->qkey);
    }
    if (mask & RNIC_QP_ACCESS_FLAGS) {
        qp->access = GUINT32_FROM_LE(a->qp_access_flags);
    }
    if (mask & RNIC_QP_AV) {
        qp->av = a->av;
        qp->peer_gen = 0;
    }
    if (mask & RNIC_QP_PATH_MTU) {
        qp->path_mtu = a->path_mtu;
    }
    if (mask & RNIC_QP_TIMEOUT) {
        qp->timeout = a->timeout;
    }
    if (mask & RNIC_QP_RETRY_CNT) {
        qp->retry_cnt = a->retry_cnt;
        qp->retry_left = a->retry_cnt;
    }
    if (mask & RNIC_QP_RNR_RETRY) {
        qp->rnr_retry = a->rnr_retry;
        qp->rnr_left = a->rnr_retry;
    }
    if (mask & RNIC_QP_MIN_RNR_TIMER) {
        qp->min_rnr_timer = a->min_rnr_timer;
    }
    if (mask & RNIC_QP_MAX_QP_RD_ATOMIC) {
        qp->max_rd_atomic = a->max_rd_atomic;
    }
    if (mask & RNIC_QP_MAX_DEST_RD_ATOMIC) {
        qp->max_dest_rd_atomic = a->max_dest_rd_atomic;
        qp->resp.nres = MAX(1, a->max_dest_rd_atomic);
        memset(qp->resp.res, 0, sizeof(RnicRespRes) * e->cfg.max_rd_atomic);
        qp->resp.res_head = qp->resp.res_send = qp->resp.res_pending = 0;
    }
    if (mask & RNIC_QP_RQ_PSN) {
        qp->resp.epsn = GUINT32_FROM_LE(a->rq_psn);
        qp->rq_psn_init = qp->resp.epsn;
    }
    if (mask & RNIC_QP_SQ_PSN) {
        qp->req_psn = GUINT32_FROM_LE(a->sq_psn);
    }
    if (mask & RNIC_QP_DEST_QPN) {
        qp->dest_qpn = GUINT32_FROM_LE(a->dest_qp_num);
        qp->peer_gen = 0;
    }
}

void rnic_cmd_modify_qp(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                        RnicAdminResult *res)
{
    uint32_t mask = GUINT32_FROM_LE(cmd->modify_qp.attr_mask);
    uint64_t addr = GUINT64_FROM_LE(cmd->modify_qp.attr_addr);
    RnicQp *qp = rnic_qp_cmd_lookup(e, cmd, GUINT32_FROM_LE(cmd->modify_qp.qp),
                                    res);
    struct rnic_qp_attr a;
    uint8_t cur, next;
    const char *why;

    if (!qp) {
        return;
    }
    if (rnic_dma_read(e, addr, &a, sizeof(a))) {
        rnic_admin_fail(e, res, RNIC_ST_DMA_ERROR,
                        "MODIFY_QP: attributes at 0x%" G_GINT64_MODIFIER "x "
                        "not readable", addr);
        return;
    }
    if (mask & ~RNIC_QP_MASK_KNOWN) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                        "MODIFY_QP: unknown attribute mask bits 0x%x",
                        mask & ~RNIC_QP_MASK_KNOWN);
        return;
    }
    cur = qp->state;
    next = (mask & RNIC_QP_STATE) ? a.qp_state : cur;
    if (next > RNIC_QPS_ERR) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM, "MODIFY_QP: state %u", next);
        return;
    }
    if ((mask & RNIC_QP_CUR_STATE) && a.cur_qp_state != cur) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_STATE,
                        "MODIFY_QP: QP %u is %s, not %s", qp->handle,
                        rnic_qp_state_name(cur),
                        rnic_qp_state_name(a.cur_qp_state));
        return;
    }
    if (!rnic_qp_transition_ok(qp->type, cur, next, mask)) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_STATE,
                        "MODIFY_QP: QP %u %s -> %s with mask 0x%x is not "
                        "allowed", qp->handle, rnic_qp_state_name(cur),
                        rnic_qp_state_name(next), mask);
        return;
    }
    if (mask & (RNIC_QP_ALT_PATH | RNIC_QP_PATH_MIG_STATE)) {
        rnic_admin_fail(e, res, RNIC_ST_NOT_SUPPORTED,
                        "MODIFY_QP: alternate paths are not supported");
        return;
    }
    why = rnic_qp_check_attr(e, qp, &a, mask);
    if (why) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM, "MODIFY_QP: QP %u: %s",
                        qp->handle, why);
        return;
    }
    if ((mask & RNIC_QP_AV) && !qp->ctx) {
        uint8_t st;

        if (!rnic_qp_bind(e, qp, rnic_gid_netctx(e, a.av.sgid_index), &why,
                          &st)) {
            rnic_admin_fail(e, res, st, "MODIFY_QP: QP %u: binding to the "
                            "network context of GID %u: %s", qp->handle,
                            a.av.sgid_index, why);
            return;
        }
    }
    if (next == RNIC_QPS_RESET) {
        rnic_qp_clear(e, qp);
    }
    rnic_qp_apply_attr(e, qp, &a, mask);
    if (next != RNIC_QPS_ERR) {
        rnic_qp_set_state(e, qp, next);
    }
    switch (next) {
    case RNIC_QPS_RTR:
        if (cur == RNIC_QPS_INIT) {
            rnic_resp_reset_qp(qp);
        }
        break;
    case RNIC_QPS_RTS:
        if (cur == RNIC_QPS_RTR) {
            qp->retry_left = qp->retry_cnt;
            qp->rnr_left = qp->rnr_retry;
            qp->una_psn = qp->req_psn;
            rnic_req_ackreq_restart(qp);
        }
        qp->sq_drained = false;
        rnic_qp_work(e, qp, RNIC_QPW_SQ);
        break;
    case RNIC_QPS_SQD:
        if (cur == RNIC_QPS_RTS) {
            qp->sqd_notify = !!(mask & RNIC_QP_EN_SQD_ASYNC_NOTIFY);
            qp->sq_drained = false;
            rnic_req_probe(e, qp);  /* the drain needs every ACK */
            rnic_qp_work(e, qp, RNIC_QPW_SQ);
        }
        break;
    case RNIC_QPS_ERR:
        rnic_qp_error(e, qp);
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------------------- */
/* Errors and flush                                                       */
/* ---------------------------------------------------------------------- */

static void rnic_flush_cqe(RnicEngine *e, RnicQp *qp, RnicCq *cq,
                           uint64_t wr_id, uint8_t opcode, uint8_t status)
{
    RnicCqeInfo ci = {
        .wr_id = wr_id,
        .opcode = opcode,
        .status = status,
    };

    rnic_cq_post(e, cq, qp, &ci);
}

/*
 * WQEs flushed per call: a QP that goes to ERR with full queues (2 x
 * 32,768 WQEs at most) flushes over several turns of the work queue, not
 * all inside the receive, timer or command that moved it there.
 */
#define RNIC_FLUSH_BUDGET 256

/*
 * Flush the send queue: completed-in-error slots keep their status, the
 * rest (started or never fetched) complete with WR_FLUSH_ERR. At most
 * *budget WQEs (decremented); true when the queue is empty.
 */
static bool rnic_qp_flush_sq(RnicEngine *e, RnicQp *qp, uint32_t *budget)
{
    uint32_t mask = (1u << qp->sq_log) - 1;
    uint32_t start, hi;

    /* first what is already DONE in order (an error status among them) */
    rnic_req_complete(e, qp);
    start = qp->sq_una;
    hi = qp->sq_hi;
    while (qp->sq_una != qp->sq_prod) {
        if (!*budget) {
            return false;
        }
        --*budget;
        uint32_t i = qp->sq_una;
        RnicSqSlot *s = &qp->slots[i & mask];

        if (i - start < hi - start) {
            /* a WQE that failed keeps its own status */
            rnic_flush_cqe(e, qp, qp->scq, s->wr_id,
                           rnic_wc_opcode(s->opcode),
                           s->state == RNIC_SLOT_DONE && s->status ?
                           s->status : RNIC_WC_WR_FLUSH_ERR);
        } else {
            struct rnic_sq_wqe w;

            /* the header's first words: wr_id and opcode, reported */
            if (rnic_dma_read(e, qp->sq_addr + ((uint64_t)(i & mask) <<
                                                qp->sq_shift),
                              &w, offsetof(struct rnic_sq_wqe, raw))) {
                w.wr_id = 0;
                w.opcode = 0;
            }
            rnic_flush_cqe(e, qp, qp->scq, GUINT64_FROM_LE(w.wr_id),
                           rnic_wc_opcode(w.opcode), RNIC_WC_WR_FLUSH_ERR);
        }
        memset(s, 0, sizeof(*s));
        qp->sq_una++;
        if (qp->sq_una == hi) {
            qp->sq_hi = qp->sq_una;     /* the started ones are flushed */
            start = hi = qp->sq_una;
        }
    }
    qp->sq_next = qp->sq_hi = qp->sq_una;
    qp->tx_pkt = 0;
    qp->rd_outstanding = 0;
    qp->txc->valid = false;
    qp->rxc->valid = false;
    qp->rnr_wait = false;
    rnic_qp_timer_cancel(e, qp);
    return true;
}

static bool rnic_qp_flush_rq(RnicEngine *e, RnicQp *qp, uint32_t *budget)
{
    RnicResp *resp = &qp->resp;
    uint32_t mask;

    if (resp->recv.valid) {
        resp->recv.valid = false;
        rnic_flush_cqe(e, qp, qp->rcq, resp->recv.wr_id, RNIC_WC_RECV,
                       RNIC_WC_WR_FLUSH_ERR);
    }
    resp->in_msg = 0;
    if (qp->srq) {
        return true;
    }
    mask = (1u << qp->rq_log) - 1;
    while (qp->rq_cons != qp->rq_prod) {
        uint64_t wr_id = 0;

        if (!*budget) {
            return false;
        }
        --*budget;
        if (rnic_dma_read(e, qp->rq_addr + ((uint64_t)(qp->rq_cons & mask) <<
                                            qp->rq_shift),
                          &wr_id, 8)) {
            wr_id = 0;
        }
        rnic_flush_cqe(e, qp, qp->rcq, GUINT64_FROM_LE(wr_id), RNIC_WC_RECV,
                       RNIC_WC_WR_FLUSH_ERR);
        qp->rq_cons++;
    }
    return true;
}

/* A bounded part of the flush; the rest in a later turn of the QP. */
void rnic_qp_flush(RnicEngine *e, RnicQp *qp)
{
    uint32_t budget = RNIC_FLUSH_BUDGET;

    if (!rnic_qp_flush_sq(e, qp, &budget) ||
        !rnic_qp_flush_rq(e, qp, &budget)) {
        rnic_qp_work(e, qp, 0);
    }
    rnic_work_wqes(e, RNIC_FLUSH_BUDGET - budget);
}

static void rnic_qp_flush_send_queue(RnicEngine *e, RnicQp *qp)
{
    uint32_t budget = RNIC_FLUSH_BUDGET;

    if (!rnic_qp_flush_sq(e, qp, &budget)) {
        rnic_qp_work(e, qp, 0);
    }
    rnic_work_wqes(e, RNIC_FLUSH_BUDGET - budget);
}

void rnic_qp_error(RnicEngine *e, RnicQp *qp)
{
    if (qp->state == RNIC_QPS_ERR) {
        return;
    }
    rnic_qp_set_state(e, qp, RNIC_QPS_ERR);
    rnic_qp_timer_cancel(e, qp);
    rnic_qp_flush(e, qp);
    qp->resp.res_pending = 0;
    qp->resp.ack_owed = false;
    qp->resp.persist_off = qp->resp.persist_end = 0;
    if (qp->srq) {
        rnic_async_event(e, RNIC_EQE_LAST_WQE_REACHED, qp->handle, qp->qpn);
    }
}

void rnic_qp_send_queue_error(RnicEngine *e, RnicQp *qp)
{
    /* RC: the QP fails; UC and UD: only the send queue (IBA 10.3.1, SQE) */
    if (qp->type == RNIC_QPT_RC) {
        rnic_qp_error(e, qp);
        return;
    }
    if (qp->state == RNIC_QPS_RTS || qp->state == RNIC_QPS_SQD) {
        rnic_qp_set_state(e, qp, RNIC_QPS_SQE);
    }
    rnic_qp_flush_send_queue(e, qp);
}

/* ---------------------------------------------------------------------- */
/* Work                                                                   */
/* ---------------------------------------------------------------------- */

#define RNIC_QP_BUDGET 64   /* packets per QP per turn */
/*
 * ... and for the requester no more than 64 KiB of payload: 16 packets at
 * a 4 KiB path MTU. A turn runs under the BQL, in a doorbell write on the
 * vCPU or in the main loop; 64 packets of 4 KiB (256 KiB of sendmsg) kept
 * the other thread waiting for the lock that long, and the guest posted
 * its next WQEs late (docs/design.md "Performance").
 */
#define RNIC_REQ_TURN_BYTES (64u << 10)

static uint32_t rnic_req_budget(const RnicQp *qp)
{
    return MIN(RNIC_QP_BUDGET, RNIC_REQ_TURN_BYTES / rnic_qp_pmtu(qp));
}

void rnic_qp_process(RnicEngine *e, RnicQp *qp)
{
    uint32_t flags = qp->work_flags;

    qp->work_flags = 0;
    switch (qp->state) {
    case RNIC_QPS_ERR:
        rnic_qp_flush(e, qp);
        return;
    case RNIC_QPS_SQE:
        /* the send queue flushes; the responder goes on (its persists) */
        rnic_qp_flush_send_queue(e, qp);
        flags &= RNIC_QPW_RESP;
        break;
    case RNIC_QPS_RESET:
        /* doorbells before INIT: nothing runs */
        return;
    default:
        break;
    }
    if (flags & RNIC_QPW_RESP) {
        if (rnic_resp_process(e, qp, RNIC_QP_BUDGET) >= RNIC_QP_BUDGET &&
            qp->resp.res_pending) {
            rnic_qp_work(e, qp, RNIC_QPW_RESP);
        }
    }
    if ((flags & RNIC_QPW_SQ) &&
        (qp->state == RNIC_QPS_RTS || qp->state == RNIC_QPS_SQD)) {
        uint32_t budget = rnic_req_budget(qp);

        /* a full turn, or the phase's budget spent (rnic_req_process) */
        if (rnic_req_process(e, qp, budget) >= budget) {
            rnic_qp_work(e, qp, RNIC_QPW_SQ);
        }
    }
    if (qp->state == RNIC_QPS_SQD && !qp->sq_drained &&
        qp->sq_una == qp->sq_next && qp->sq_next == qp->sq_hi) {
        qp->sq_drained = true;
        if (qp->sqd_notify) {
            rnic_async_event(e, RNIC_EQE_SQ_DRAINED, qp->handle, qp->qpn);
        }
    }
}

/* ---------------------------------------------------------------------- */
/* Receive WQEs                                                           */
/* ---------------------------------------------------------------------- */

bool rnic_recv_fetch(RnicEngine *e, RnicQp *qp, RnicRecvWqe *rw,
                     uint8_t *status)
{
    RnicSrq *srq = qp->srq;
    uint64_t ring = srq ? srq->ring : qp->rq_addr;
    uint8_t log = srq ? srq->log_size : qp->rq_log;
    uint8_t shift = srq ? srq->wqe_shift : qp->rq_shift;
    uint32_t *cons = srq ? &srq->cons : &qp->rq_cons;
    uint32_t prod = srq ? srq->prod : qp->rq_prod;
    uint32_t max_sge = MIN(e->cfg.max_sge, ((1u << shift) -
                                            sizeof(struct rnic_rq_wqe)) /
                           sizeof(struct rnic_sge));
    const RnicPd *pd = srq ? srq->pd : qp->pd;
    uint8_t buf[sizeof(struct rnic_rq_wqe) +
                RNIC_CFG_MAX_SGE * sizeof(struct rnic_sge)];
    struct rnic_rq_wqe *w = (struct rnic_rq_wqe *)buf;
    struct rnic_sge *sg = (struct rnic_sge *)(buf + sizeof(*w));
    RnicSgeList l = { .sge = rw->sge };
    RnicWqcProbe probe;
    uint64_t total = 0, slot;
    uint32_t i;

    *status = RNIC_WC_SUCCESS;
    if (*cons == prod || (srq && srq->error)) {
        return false;
    }
    slot = ring + ((uint64_t)(*cons & ((1u << log) - 1)) << shift);
    if (rnic_dma_read(e, slot, buf,
                      sizeof(*w) + max_sge * sizeof(struct rnic_sge))) {
        rnic_event(e, UB_RECV, "receive queue ring not readable", qp->qpn,
                   0, 0);
        if (srq) {
            srq->error = true;
        }
        *status = RNIC_WC_FATAL_ERR;
        return false;
    }
    (*cons)++;
    rnic_stat_inc(e, RNIC_STAT_WQES);
    if (srq) {
        rnic_srq_check_limit(e, srq);
    }
    memset(rw, 0, offsetof(RnicRecvWqe, sge));
    rw->valid = true;
    rw->from_srq = srq != NULL;
    rw->wr_id = GUINT64_FROM_LE(w->wr_id);
    rw->mr_gen = e->mr_gen;
    if (w->num_sge > max_sge) {
        rnic_event(e, UB_RECV, "receive WQE with too many SGEs", qp->qpn,
                   w->num_sge, max_sge);
        *status = RNIC_WC_LOC_QP_OP_ERR;
        return true;
    }
    rw->nsge = w->num_sge;
    if (rnic_wqc_lookup(e, qp, pd, RNIC_WQC_RECV, sg, rw->nsge, &l, &probe)) {
        rw->length = l.length;
        return true;
    }
    for (i = 0; i < rw->nsge; i++) {
        rw->sge[i].addr = GUINT64_FROM_LE(sg[i].addr);
        rw->sge[i].length = GUINT32_FROM_LE(sg[i].length);
        rw->sge[i].lkey = GUINT32_FROM_LE(sg[i].lkey);
        total += rw->sge[i].length;
    }
    rw->length = MIN(total, (uint64_t)RNIC_MAX_MSG_SIZE);
    if (!rnic_sges_resolve(e, rnic_pd_lkeys(e, pd), pd, rw->sge, rw->nsge,
                           RNIC_ACCESS_LOCAL_WRITE)) {
        *status = RNIC_WC_LOC_PROT_ERR;
        return true;
    }
    l.length = rw->length;
    rnic_wqc_insert(e, qp, &probe, RNIC_WQC_RECV, sg, &l, rw->nsge);
    return true;
}

/* State load: attach a QP rebuilt from the image. */
bool rnic_qp_load_attach(RnicEngine *e, RnicQp *qp)
{
    return rnic_qp_attach(e, qp);
}
