/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: shared receive queues (a ring of receive WQEs in guest
 * memory shared by QPs of one PD; a limit event when it runs low).
 */
#include <string.h>
#include "rnic-admin.h"

void rnic_srq_init(RnicEngine *e)
{
    rnic_table_init(&e->srqs, "SRQ", sizeof(RnicSrq), e->cfg.max_srq);
}

void rnic_srq_fini(RnicEngine *e)
{
    rnic_srq_reset(e);
    rnic_table_destroy(&e->srqs);
}

static void rnic_srq_free(RnicEngine *e, RnicSrq *srq)
{
    rnic_work_cancel(&srq->work);
    srq->pd->refs--;
    rnic_uctx_put(e, srq->owner);
    rnic_obj_destroy(e, &e->srqs, srq, sizeof(RnicSrq));
}

void rnic_srq_reset(RnicEngine *e)
{
    RnicSrq *srq;
    uint32_t i;

    RNIC_TABLE_FOREACH(&e->srqs, i, srq) {
        rnic_srq_free(e, srq);
    }
}

RnicSrq *rnic_srq_lookup(RnicEngine *e, uint32_t handle)
{
    return rnic_table_get(&e->srqs, handle);
}

RnicSrq *rnic_srq_create(RnicEngine *e, uint32_t handle)
{
    RnicSrq *srq = rnic_obj_create(e, &e->srqs, handle, RNIC_UCTX_KERNEL,
                                   sizeof(RnicSrq));

    if (srq) {
        srq->work.kind = RNIC_WORK_SRQ;
    }
    return srq;
}

void rnic_srq_process(RnicEngine *e, RnicSrq *srq)
{
    /* posting only moves the producer; consumers pick the WQEs up */
}

void rnic_srq_check_limit(RnicEngine *e, RnicSrq *srq)
{
    if (srq->limit && srq->prod - srq->cons < srq->limit) {
        uint32_t limit = srq->limit;

        srq->limit = 0;     /* one event per arming */
        rnic_async_event(e, RNIC_EQE_SRQ_LIMIT, srq->handle, limit);
    }
}

static RnicSrq *rnic_srq_cmd_lookup(RnicEngine *e,
                                    const struct rnic_admin_cmd *cmd,
                                    uint32_t h, RnicAdminResult *res)
{
    RnicSrq *srq;

    if (!rnic_admin_check_uctx(e, cmd, res, false)) {
        return NULL;
    }
    srq = rnic_admin_obj(e, cmd, res, &e->srqs, h);
    if (!srq) {
        return NULL;
    }
    return srq;
}

char *rnic_srq_check_params(RnicEngine *e, uint64_t ring, uint8_t log_size,
                            uint8_t wqe_shift, uint32_t limit)
{
    char *why;

    if (wqe_shift < RNIC_RQ_WQE_SHIFT_MIN || wqe_shift > RNIC_WQE_SHIFT_MAX) {
        return g_strdup_printf("WQE stride 2^%u out of range", wqe_shift);
    }
    why = rnic_ring_why(ring, log_size, RNIC_WQ_LOG_MIN, e->cfg.max_qp_wr,
                        1u << wqe_shift);
    if (!why && limit >= (1u << log_size)) {
        why = g_strdup_printf("limit %u not below the %u entries", limit,
                              1u << log_size);
    }
    return why;
}

void rnic_cmd_create_srq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res)
{
    uint64_t ring = GUINT64_FROM_LE(cmd->srq.ring_addr);
    uint32_t pdh = GUINT32_FROM_LE(cmd->srq.pd);
    uint32_t limit = GUINT32_FROM_LE(cmd->srq.limit);
    uint8_t shift = cmd->srq.wqe_shift;
    g_autofree char *why = NULL;
    RnicSrq *srq;
    RnicPd *pd;

    if (!rnic_admin_check_uctx(e, cmd, res, false)) {
        return;
    }
    pd = rnic_admin_obj(e, cmd, res, &e->pds, pdh);
    if (!pd) {
        return;
    }
    why = rnic_srq_check_params(e, ring, cmd->srq.log_size, shift, limit);
    if (why) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM, "CREATE_SRQ: %s", why);
        return;
    }
    /* the ring, of the rule checked above, must be guest memory */
    if (!rnic_admin_check_ring(e, res, "CREATE_SRQ", ring, cmd->srq.log_size,
                               RNIC_WQ_LOG_MIN, e->cfg.max_qp_wr,
                               1u << shift)) {
        return;
    }
    srq = rnic_srq_create(e, UINT32_MAX);
    if (!srq) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "CREATE_SRQ: all %u SRQs in use or host memory "
                        "budget exhausted", e->cfg.max_srq);
        return;
    }
    srq->owner = pd->owner;
    srq->pd = pd;
    srq->ring = ring;
    srq->log_size = cmd->srq.log_size;
    srq->wqe_shift = shift;
    srq->limit = limit;
    pd->refs++;
    rnic_uctx_get(e, srq->owner);
    res->result0 = srq->handle;
    res->result1 = 1u << srq->log_size;
}

/*
 * MODIFY_SRQ with a new ring (ABI 1.5, RNIC_CAP_SRQ_RESIZE): the WQEs
 * posted and not yet taken move to the new ring at their free-running
 * indexes, so the producer and consumer indexes stay what they are.
 */
static bool rnic_srq_resize(RnicEngine *e, RnicSrq *srq,
                            const struct rnic_admin_cmd *cmd,
                            RnicAdminResult *res)
{
    uint64_t ring = GUINT64_FROM_LE(cmd->srq.ring_addr);
    uint32_t stride = 1u << srq->wqe_shift, posted = srq->prod - srq->cons;
    uint32_t omask = (1u << srq->log_size) - 1, nmask, i;

    if (!rnic_admin_check_ring(e, res, "MODIFY_SRQ", ring, cmd->srq.log_size,
                               RNIC_WQ_LOG_MIN, e->cfg.max_qp_wr, stride)) {
        return false;
    }
    nmask = (1u << cmd->srq.log_size) - 1;
    if (posted > nmask + 1) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                        "MODIFY_SRQ: %u WQEs posted, new ring of %u", posted,
                        nmask + 1);
        return false;
    }
    rnic_work_entries(e, (uint64_t)posted * stride / 8);
    for (i = srq->cons; i != srq->prod; i++) {
        if (rnic_dma_copy(e, ring + (uint64_t)(i & nmask) * stride,
                          srq->ring + (uint64_t)(i & omask) * stride,
                          stride)) {
            rnic_admin_fail(e, res, RNIC_ST_DMA_ERROR,
                            "MODIFY_SRQ: WQE %u not copied to the new ring",
                            i);
            return false;
        }
    }
    srq->ring = ring;
    srq->log_size = cmd->srq.log_size;
    return true;
}

void rnic_cmd_modify_srq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res)
{
    uint32_t limit = GUINT32_FROM_LE(cmd->srq.limit);
    RnicSrq *srq = rnic_srq_cmd_lookup(e, cmd, GUINT32_FROM_LE(cmd->srq.srq),
                                       res);
    uint32_t entries;
    bool resize;

    if (!srq) {
        return;
    }
    resize = cmd->srq.ring_addr || cmd->srq.log_size;
    entries = 1u << (resize ? MIN(cmd->srq.log_size, 31) : srq->log_size);
    if (limit >= entries) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                        "MODIFY_SRQ: limit %u not below the %u entries", limit,
                        entries);
        return;
    }
    if (resize && !rnic_srq_resize(e, srq, cmd, res)) {
        return;
    }
    srq->limit = limit;
    res->result0 = srq->handle;
    res->result1 = srq->prod - srq->cons;
}

void rnic_cmd_destroy_srq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                          RnicAdminResult *res)
{
    RnicSrq *srq = rnic_srq_cmd_lookup(e, cmd,
                                       GUINT32_FROM_LE(cmd->destroy.handle),
                                       res);

    if (!srq) {
        return;
    }
    if (srq->refs) {
        rnic_admin_fail(e, res, RNIC_ST_BUSY,
                        "DESTROY_SRQ: SRQ %u still used by %u QPs", srq->handle,
                        srq->refs);
        return;
    }
    rnic_srq_free(e, srq);
}
