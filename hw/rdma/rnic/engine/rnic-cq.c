/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: event queues (rings of EQEs with an MSI-X vector each),
 * completion queues (rings of CQEs with an owner bit; arm next/solicited)
 * and asynchronous events.
 */
#include <string.h>
#include "rnic-admin.h"

void rnic_cq_init(RnicEngine *e)
{
    rnic_table_init(&e->eqs, "EQ", sizeof(RnicEq), e->cfg.max_eq);
    rnic_table_init(&e->cqs, "CQ", sizeof(RnicCq), e->cfg.max_cq);
}

void rnic_cq_fini(RnicEngine *e)
{
    rnic_cq_reset(e);
    rnic_table_destroy(&e->eqs);
    rnic_table_destroy(&e->cqs);
}

static void rnic_cq_free(RnicEngine *e, RnicCq *cq)
{
    rnic_work_cancel(&cq->work);
    if (cq->eq) {
        cq->eq->refs--;
    }
    rnic_uctx_put(e, cq->owner);
    rnic_obj_destroy(e, &e->cqs, cq, sizeof(RnicCq));
}

static void rnic_eq_free(RnicEngine *e, RnicEq *eq)
{
    rnic_work_cancel(&eq->work);
    if (e->async_eq == eq) {
        e->async_eq = NULL;
    }
    rnic_obj_destroy(e, &e->eqs, eq, sizeof(RnicEq));
}

void rnic_cq_reset(RnicEngine *e)
{
    uint32_t i;
    RnicCq *cq;
    RnicEq *eq;

    RNIC_TABLE_FOREACH(&e->cqs, i, cq) {
        rnic_cq_free(e, cq);
    }
    RNIC_TABLE_FOREACH(&e->eqs, i, eq) {
        rnic_eq_free(e, eq);
    }
}

RnicEq *rnic_eq_lookup(RnicEngine *e, uint32_t handle)
{
    return rnic_table_get(&e->eqs, handle);
}

RnicCq *rnic_cq_lookup(RnicEngine *e, uint32_t handle)
{
    return rnic_table_get(&e->cqs, handle);
}

RnicEq *rnic_eq_create(RnicEngine *e, uint32_t handle)
{
    RnicEq *eq = rnic_obj_create(e, &e->eqs, handle, RNIC_UCTX_KERNEL,
                                 sizeof(RnicEq));

    if (eq) {
        eq->work.kind = RNIC_WORK_EQ;
    }
    return eq;
}

RnicCq *rnic_cq_create(RnicEngine *e, uint32_t handle)
{
    RnicCq *cq = rnic_obj_create(e, &e->cqs, handle, RNIC_UCTX_KERNEL,
                                 sizeof(RnicCq));

    if (cq) {
        cq->work.kind = RNIC_WORK_CQ;
    }
    return cq;
}

/* ---------------------------------------------------------------------- */
/* Event queues                                                           */
/* ---------------------------------------------------------------------- */

static void rnic_eq_interrupt(RnicEngine *e, RnicEq *eq)
{
    eq->armed = false;
    rnic_raise_irq(e, eq->vector);
}

static void rnic_eq_post(RnicEngine *e, RnicEq *eq, uint8_t type,
                         uint32_t handle, uint32_t data)
{
    uint32_t entries = 1u << eq->log_size;
    uint64_t addr = eq->ring + (uint64_t)(eq->prod & (entries - 1)) *
                    sizeof(struct rnic_eqe);
    struct rnic_eqe eqe;

    if (eq->prod - eq->cons >= entries) {
        if (!eq->lost++) {
            rnic_event(e, UB_EQ, "EQ full: events lost (driver does not "
                       "consume)", eq->handle);
        }
        return;
    }
    memset(&eqe, 0, sizeof(eqe));
    eqe.type = type;
    eqe.handle = GUINT32_TO_LE(handle);
    eqe.data = GUINT32_TO_LE(data);
    eqe.owner = ((eq->prod >> eq->log_size) & 1) ^ 1;
    /* body first, owner byte last: the driver polls the owner */
    if (rnic_dma_write(e, addr, &eqe, offsetof(struct rnic_eqe, owner)) ||
        rnic_dma_write(e, addr + offsetof(struct rnic_eqe, owner),
                       &eqe.owner, 1)) {
        if (!eq->lost++) {
            rnic_event(e, UB_EQ, "EQ ring not writable: events lost",
                       eq->handle);
        }
        return;
    }
    eq->prod++;
    rnic_stat_inc(e, RNIC_STAT_EQES);
    if (eq->armed) {
        rnic_eq_interrupt(e, eq);
    }
}

void rnic_eq_process(RnicEngine *e, RnicEq *eq)
{
    if (eq->db_arm) {
        eq->db_arm = false;
        eq->armed = true;
        if (eq->prod != eq->cons) {
            rnic_eq_interrupt(e, eq);
        }
    }
}

void rnic_async_event(RnicEngine *e, uint8_t type, uint32_t handle,
                      uint32_t data)
{
    if (!e->async_eq) {
        rnic_event(e, ASYNC_DROPPED, "no async EQ", type, handle);
        return;
    }
    rnic_eq_post(e, e->async_eq, type, handle, data);
}

char *rnic_eq_check_params(RnicEngine *e, uint64_t ring, uint8_t log_size,
                           uint32_t vector, uint8_t flags, uint8_t *status)
{
    *status = RNIC_ST_BAD_PARAM;
    if (vector >= e->cfg.msix_vectors || (flags & ~RNIC_EQ_ASYNC)) {
        return g_strdup_printf("vector %u (of %u) or flags 0x%x", vector,
                               e->cfg.msix_vectors, flags);
    }
    if ((flags & RNIC_EQ_ASYNC) && e->async_eq) {
        *status = RNIC_ST_EXISTS;
        return g_strdup_printf("EQ %u already receives async events",
                               e->async_eq->handle);
    }
    return rnic_ring_why(ring, log_size, RNIC_EQ_LOG_MIN,
                         1u << RNIC_EQ_LOG_MAX, sizeof(struct rnic_eqe));
}

void rnic_cmd_create_eq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                        RnicAdminResult *res)
{
    uint64_t ring = GUINT64_FROM_LE(cmd->eq.ring_addr);
    uint32_t vector = GUINT32_FROM_LE(cmd->eq.vector);
    uint8_t flags = cmd->eq.flags;
    g_autofree char *why = NULL;
    uint8_t status;
    RnicEq *eq;

    if (!rnic_admin_check_uctx(e, cmd, res, true)) {
        return;
    }
    why = rnic_eq_check_params(e, ring, cmd->eq.log_size, vector, flags,
                               &status);
    if (why) {
        rnic_admin_fail(e, res, status, "CREATE_EQ: %s", why);
        return;
    }
    /* the ring, of the rule checked above, must be guest memory */
    if (!rnic_admin_check_ring(e, res, "CREATE_EQ", ring, cmd->eq.log_size,
                               RNIC_EQ_LOG_MIN, 1u << RNIC_EQ_LOG_MAX,
                               sizeof(struct rnic_eqe))) {
        return;
    }
    eq = rnic_eq_create(e, UINT32_MAX);
    if (!eq) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "CREATE_EQ: all %u EQs in use or host memory "
                        "budget exhausted", e->cfg.max_eq);
        return;
    }
    eq->ring = ring;
    eq->log_size = cmd->eq.log_size;
    eq->flags = flags;
    eq->vector = vector;
    eq->armed = true;
    if (flags & RNIC_EQ_ASYNC) {
        e->async_eq = eq;
    }
    res->result0 = eq->handle;
    res->result1 = 1u << eq->log_size;
}

void rnic_cmd_destroy_eq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res)
{
    uint32_t h = GUINT32_FROM_LE(cmd->destroy.handle);
    RnicEq *eq;

    if (!rnic_admin_check_uctx(e, cmd, res, true)) {
        return;
    }
    eq = rnic_eq_lookup(e, h);
    if (!eq) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_HANDLE, "DESTROY_EQ: no EQ %u", h);
        return;
    }
    if (eq->refs) {
        rnic_admin_fail(e, res, RNIC_ST_BUSY,
                        "DESTROY_EQ: EQ %u still serves %u CQs", h, eq->refs);
        return;
    }
    rnic_eq_free(e, eq);
}

/* ---------------------------------------------------------------------- */
/* Completion queues                                                      */
/* ---------------------------------------------------------------------- */

static void rnic_cq_notify(RnicEngine *e, RnicCq *cq)
{
    cq->arm = 0;
    if (cq->eq) {
        rnic_eq_post(e, cq->eq, RNIC_EQE_COMPLETION, cq->handle, 0);
    }
}

void rnic_cq_post(RnicEngine *e, RnicCq *cq, const RnicQp *qp,
                  const RnicCqeInfo *info)
{
    uint32_t entries = 1u << cq->log_size;
    uint64_t addr = cq->ring + (uint64_t)(cq->prod & (entries - 1)) *
                    sizeof(struct rnic_cqe);
    struct rnic_cqe cqe;

    if (e->scm.npending) {
        /* what a DURABLE key placed is durable before its completion */
        rnic_scm_persist_pending(e);
    }
    if (cq->error) {
        return;
    }
    if (cq->prod - cq->cons >= entries) {
        rnic_event(e, UB_CQ, "CQ overrun: CQ in error", cq->handle,
                   entries);
        cq->error = true;
        rnic_async_event(e, RNIC_EQE_CQ_ERR, cq->handle, 0);
        return;
    }
    memset(&cqe, 0, sizeof(cqe));
    cqe.wr_id = GUINT64_TO_LE(info->wr_id);
    cqe.byte_len = GUINT32_TO_LE(info->byte_len);
    cqe.imm_or_inv = info->imm_or_inv;
    cqe.qp_handle = GUINT32_TO_LE(qp->handle);
    cqe.qp_num = GUINT32_TO_LE(qp->qpn);
    cqe.src_qp = GUINT32_TO_LE(info->src_qp);
    cqe.opcode = info->opcode;
    cqe.status = info->status;
    cqe.flags = info->flags;
    cqe.vlan_id = GUINT16_TO_LE(info->vlan_id);
    if (info->smac) {
        memcpy(cqe.smac, info->smac, 6);
    }
    cqe.timestamp = GUINT64_TO_LE(e->ops->clock_ns(e->opaque));
    cqe.owner = ((cq->prod >> cq->log_size) & 1) ^ 1;
    if (rnic_dma_write(e, addr, &cqe, offsetof(struct rnic_cqe, owner)) ||
        rnic_dma_write(e, addr + offsetof(struct rnic_cqe, owner),
                       &cqe.owner, 1)) {
        rnic_event(e, UB_CQ, "CQ ring not writable: CQ in error",
                   cq->handle, 0);
        cq->error = true;
        rnic_async_event(e, RNIC_EQE_CQ_ERR, cq->handle, 0);
        return;
    }
    cq->prod++;
    rnic_stat_inc(e, RNIC_STAT_CQES);
    if ((cq->arm & (RNIC_DB_ARM_NEXT >> 24)) ||
        ((cq->arm & (RNIC_DB_ARM_SOLICITED >> 24)) &&
         ((info->flags & RNIC_CQE_SOLICITED) ||
          info->status != RNIC_WC_SUCCESS))) {
        rnic_cq_notify(e, cq);
    }
}

void rnic_cq_process(RnicEngine *e, RnicCq *cq)
{
    if (cq->db_arm) {
        cq->arm |= cq->db_arm;
        cq->db_arm = 0;
        /* completions the driver has not consumed yet: no lost wake-up */
        if (cq->prod != cq->cons) {
            rnic_cq_notify(e, cq);
        }
    }
}

/* Look up the CQ named in a CQ command and check its owner. */
static RnicCq *rnic_cq_cmd_lookup(RnicEngine *e,
                                  const struct rnic_admin_cmd *cmd,
                                  uint32_t h, RnicAdminResult *res)
{
    RnicCq *cq;

    if (!rnic_admin_check_uctx(e, cmd, res, false)) {
        return NULL;
    }
    cq = rnic_admin_obj(e, cmd, res, &e->cqs, h);
    if (!cq) {
        return NULL;
    }
    return cq;
}

char *rnic_cq_check_params(RnicEngine *e, uint32_t owner, uint32_t eqh,
                           uint64_t ring, uint8_t log_size, RnicEq **eq,
                           uint8_t *status)
{
    *eq = NULL;
    if (!rnic_uctx_valid(e, owner)) {
        *status = RNIC_ST_PERMISSION;
        return g_strdup_printf("user context %u is not allocated", owner);
    }
    if (eqh != RNIC_HANDLE_NONE) {
        *eq = rnic_eq_lookup(e, eqh);
        if (!*eq) {
            *status = RNIC_ST_BAD_HANDLE;
            return g_strdup_printf("no EQ %u", eqh);
        }
    }
    *status = RNIC_ST_BAD_PARAM;
    return rnic_ring_why(ring, log_size, RNIC_CQ_LOG_MIN, e->cfg.max_cqe,
                         sizeof(struct rnic_cqe));
}

void rnic_cmd_create_cq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                        RnicAdminResult *res)
{
    uint64_t ring = GUINT64_FROM_LE(cmd->cq.ring_addr);
    g_autofree char *why = NULL;
    uint8_t status;
    RnicEq *eq;
    RnicCq *cq;

    if (!rnic_admin_check_uctx(e, cmd, res, false)) {
        return;
    }
    why = rnic_cq_check_params(e, GUINT32_FROM_LE(cmd->uctx),
                               GUINT32_FROM_LE(cmd->cq.eq), ring,
                               cmd->cq.log_size, &eq, &status);
    if (why) {
        rnic_admin_fail(e, res, status, "CREATE_CQ: %s", why);
        return;
    }
    /* the ring, of the rule checked above, must be guest memory */
    if (!rnic_admin_check_ring(e, res, "CREATE_CQ", ring, cmd->cq.log_size,
                               RNIC_CQ_LOG_MIN, e->cfg.max_cqe,
                               sizeof(struct rnic_cqe))) {
        return;
    }
    cq = rnic_cq_create(e, UINT32_MAX);
    if (!cq) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "CREATE_CQ: all %u CQs in use or host memory "
                        "budget exhausted", e->cfg.max_cq);
        return;
    }
    cq->owner = GUINT32_FROM_LE(cmd->uctx);
    cq->ring = ring;
    cq->log_size = cmd->cq.log_size;
    cq->eq = eq;
    if (eq) {
        eq->refs++;
    }
    rnic_uctx_get(e, cq->owner);
    res->result0 = cq->handle;
    res->result1 = 1u << cq->log_size;
}

void rnic_cmd_resize_cq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                        RnicAdminResult *res)
{
    uint64_t ring = GUINT64_FROM_LE(cmd->cq.ring_addr);
    uint8_t log = cmd->cq.log_size;
    uint32_t entries, i, outstanding;
    uint64_t staging;
    uint8_t *buf;
    RnicCq *cq;

    cq = rnic_cq_cmd_lookup(e, cmd, GUINT32_FROM_LE(cmd->cq.cq), res);
    if (!cq) {
        return;
    }
    if (!rnic_admin_check_ring(e, res, "RESIZE_CQ", ring, log, RNIC_CQ_LOG_MIN,
                               e->cfg.max_cqe, sizeof(struct rnic_cqe))) {
        return;
    }
    entries = 1u << log;
    outstanding = cq->prod - cq->cons;
    if (outstanding > entries) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                        "RESIZE_CQ: %u CQEs outstanding, new ring of %u",
                        outstanding, entries);
        return;
    }
    /*
     * Build the new ring: the outstanding CQEs at their same free-running
     * indexes, every other slot with the owner value that reads as "not
     * yet valid" when the consumer reaches it.
     */
    staging = (uint64_t)entries * sizeof(struct rnic_cqe);
    buf = NULL;
    if (rnic_mem_charge(e, staging)) {
        buf = g_try_malloc(staging);
        if (!buf) {
            rnic_mem_release(e, staging);
        }
    }
    if (!buf) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "RESIZE_CQ: no host memory to stage %u CQEs", entries);
        return;
    }
    rnic_work_entries(e, entries);
    for (i = 0; i < entries; i++) {
        struct rnic_cqe *cqe = (struct rnic_cqe *)buf + i;
        /* the index the consumer will find in slot i next */
        uint32_t idx = cq->cons + ((i - cq->cons) & (entries - 1));

        if (idx - cq->cons < outstanding) {
            uint32_t oentries = 1u << cq->log_size;

            if (rnic_dma_read(e, cq->ring + (uint64_t)(idx & (oentries - 1)) *
                              sizeof(*cqe), cqe, sizeof(*cqe))) {
                g_free(buf);
                rnic_mem_release(e, staging);
                rnic_admin_fail(e, res, RNIC_ST_DMA_ERROR,
                                "RESIZE_CQ: old ring not readable");
                return;
            }
            cqe->owner = ((idx >> log) & 1) ^ 1;
        } else {
            memset(cqe, 0, sizeof(*cqe));
            cqe->owner = (idx >> log) & 1;
        }
    }
    if (rnic_dma_write(e, ring, buf, entries * sizeof(struct rnic_cqe))) {
        g_free(buf);
        rnic_mem_release(e, staging);
        rnic_admin_fail(e, res, RNIC_ST_DMA_ERROR,
                        "RESIZE_CQ: new ring not writable");
        return;
    }
    g_free(buf);
    rnic_mem_release(e, staging);
    cq->ring = ring;
    cq->log_size = log;
    res->result0 = cq->handle;
    res->result1 = entries;
}

void rnic_cmd_destroy_cq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res)
{
    uint32_t h = GUINT32_FROM_LE(cmd->destroy.handle);
    RnicCq *cq = rnic_cq_cmd_lookup(e, cmd, h, res);

    if (!cq) {
        return;
    }
    if (cq->refs) {
        rnic_admin_fail(e, res, RNIC_ST_BUSY,
                        "DESTROY_CQ: CQ %u still used by %u QPs", cq->handle,
                        cq->refs);
        return;
    }
    rnic_cq_free(e, cq);
}
