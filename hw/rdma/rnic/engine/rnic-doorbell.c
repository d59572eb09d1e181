/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: BAR2 doorbells and the work queue.
 *
 * A doorbell store is validated (page, offset, flags, owner, handle, index
 * range) and recorded in the queue it names: the new producer (SQ/RQ/SRQ)
 * or consumer (CQ/EQ) index and any arm request. The queue is then marked
 * pending (at most once: memory stays bounded whatever the guest rings)
 * and the engine asks to be scheduled. rnic_engine_run() does the work,
 * a bounded amount per call.
 *
 * When the host allows it (RnicHostOps.run_now) and no run is pending, the
 * doorbell's work is done right away instead, inside rnic_engine_doorbell():
 * one turn of the queue it names (a QP: up to 64 packets and 64 KiB of
 * payload), what is left is scheduled as usual. With a run pending, the
 * doorbell waits behind it, so the order of work is the same either way.
 */
#include "rnic-engine-int.h"

/* Work items visited per rnic_engine_run(); more: run again. */
#define RNIC_RUN_BUDGET 256
/* Work items visited inside a doorbell write (RnicHostOps.run_now). */
#define RNIC_DB_INLINE_BUDGET 1

void rnic_doorbells_reset(RnicEngine *e)
{
    while (!rnic_list_empty(&e->work)) {
        rnic_list_del(e->work.next);
    }
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

/*
 * A producer index for a ring of 'entries' whose oldest uncompleted entry
 * is 'cons' and whose producer is 'prod': it may not move backwards nor
 * get more than 'entries' ahead of the consumer.
 */
static bool rnic_db_prod_ok(uint32_t index, uint32_t cons, uint32_t prod,
                            uint32_t entries)
{
    return index - cons <= entries && index - cons >= prod - cons;
}

/* A consumer index: between the old consumer and the producer. */
static bool rnic_db_cons_ok(uint32_t index, uint32_t cons, uint32_t prod)
{
    return index - cons <= prod - cons;
}

static RnicAccessResult rnic_db_bad(RnicEngine *e, const char *what,
                                    uint32_t page, uint32_t handle,
                                    uint32_t index)
{
    rnic_stat_inc(e, RNIC_STAT_DOORBELL_ERRORS);
    rnic_event(e, UB_DOORBELL, what, page, handle, index);
    return RNIC_ACCESS_BAD_DOORBELL;
}

static RnicAccessResult rnic_doorbell_record(RnicEngine *e, uint32_t page,
                                             uint32_t offset, uint64_t value)
{
    uint32_t handle = (uint32_t)value & RNIC_DB_HANDLE_MASK;
    uint32_t flags = (uint32_t)value & ~RNIC_DB_HANDLE_MASK;
    uint32_t index = (uint32_t)(value >> 32);
    uint32_t owner = page;          /* page N belongs to user context N */
    RnicQp *qp;
    RnicCq *cq;
    RnicEq *eq;
    RnicSrq *srq;

    if (page >= e->cfg.db_pages ||
        !rnic_db_offset_valid(page, offset, flags)) {
        rnic_stat_inc(e, RNIC_STAT_DOORBELL_ERRORS);
        return RNIC_ACCESS_BAD_DOORBELL;
    }
    if (!(e->regs.dev_status & RNIC_STATUS_READY) ||
        (e->regs.dev_status & RNIC_STATUS_FATAL)) {
        rnic_stat_inc(e, RNIC_STAT_DOORBELL_ERRORS);
        return RNIC_ACCESS_NOT_NOW;
    }
    if (!rnic_uctx_valid(e, owner)) {
        return rnic_db_bad(e, "page of no user context", page, handle, index);
    }
    rnic_event(e, DOORBELL_DECODED, NULL, page, offset, handle, index);
    switch (offset) {
    case RNIC_DB_SQ:
    case RNIC_DB_RQ:
        qp = rnic_obj_lookup(&e->qps, handle, owner);
        if (!qp) {
            return rnic_db_bad(e, "no QP of this page", page, handle, index);
        }
        if (qp->state == RNIC_QPS_RESET) {
            return rnic_db_bad(e, "QP in RESET", page, handle, index);
        }
        if (offset == RNIC_DB_SQ) {
            if (!rnic_db_prod_ok(index, qp->sq_una, qp->sq_prod,
                                 1u << qp->sq_log)) {
                return rnic_db_bad(e, "SQ index out of range", page, handle,
                                   index);
            }
            qp->sq_prod = index;
            rnic_qp_work(e, qp, RNIC_QPW_SQ);
        } else {
            if (qp->srq) {
                return rnic_db_bad(e, "QP has an SRQ", page, handle, index);
            }
            if (!rnic_db_prod_ok(index, qp->rq_cons, qp->rq_prod,
                                 1u << qp->rq_log)) {
                return rnic_db_bad(e, "RQ index out of range", page, handle,
                                   index);
            }
            qp->rq_prod = index;
            if (qp->state == RNIC_QPS_ERR) {
                rnic_qp_work(e, qp, RNIC_QPW_RQ);
            }
        }
        break;
    case RNIC_DB_SRQ:
        srq = rnic_obj_lookup(&e->srqs, handle, owner);
        if (!srq) {
            return rnic_db_bad(e, "no SRQ of this page", page, handle, index);
        }
        if (!rnic_db_prod_ok(index, srq->cons, srq->prod,
                             1u << srq->log_size)) {
            return rnic_db_bad(e, "SRQ index out of range", page, handle,
                               index);
        }
        srq->prod = index;
        break;
    case RNIC_DB_CQ:
        cq = rnic_obj_lookup(&e->cqs, handle, owner);
        if (!cq) {
            return rnic_db_bad(e, "no CQ of this page", page, handle, index);
        }
        if (!rnic_db_cons_ok(index, cq->cons, cq->prod)) {
            return rnic_db_bad(e, "CQ index beyond the producer", page,
                               handle, index);
        }
        cq->cons = index;
        if (flags) {
            cq->db_arm |= flags >> 24;
            rnic_work_queue(e, &cq->work);
        }
        break;
    case RNIC_DB_EQ:
        eq = rnic_eq_lookup(e, handle);
        if (!eq) {
            return rnic_db_bad(e, "no such EQ", page, handle, index);
        }
        if (!rnic_db_cons_ok(index, eq->cons, eq->prod)) {
            return rnic_db_bad(e, "EQ index beyond the producer", page,
                               handle, index);
        }
        eq->cons = index;
        if (flags) {
            eq->db_arm = true;
            rnic_work_queue(e, &eq->work);
        }
        break;
    }
    rnic_stat_inc(e, RNIC_STAT_DOORBELLS);
    return RNIC_ACCESS_OK;
}

/* Up to 'budget' queue visits, and while the phase's budget lasts. */
static void rnic_doorbells_process_budget(RnicEngine *e, uint32_t budget)
{
    rnic_work_phase(e);
    while (!rnic_list_empty(&e->work) && budget-- && !rnic_work_spent(e)) {
        RnicWork *w = rnic_container_of(e->work.next, RnicWork, link);

        rnic_list_del(&w->link);
        switch (w->kind) {
        case RNIC_WORK_QP:
            rnic_qp_process(e, rnic_container_of(w, RnicQp, work));
            break;
        case RNIC_WORK_CQ:
            rnic_cq_process(e, rnic_container_of(w, RnicCq, work));
            break;
        case RNIC_WORK_EQ:
            rnic_eq_process(e, rnic_container_of(w, RnicEq, work));
            break;
        case RNIC_WORK_SRQ:
            rnic_srq_process(e, rnic_container_of(w, RnicSrq, work));
            break;
        }
    }
    if (!rnic_list_empty(&e->work)) {
        rnic_engine_schedule(e);
    }
}

void rnic_doorbells_process(RnicEngine *e)
{
    rnic_doorbells_process_budget(e, RNIC_RUN_BUDGET);
}

RnicAccessResult rnic_engine_doorbell_read(RnicEngine *e, uint32_t offset,
                                           uint64_t *value)
{
    if (offset != RNIC_DB_CLOCK) {
        *value = 0;
        return RNIC_ACCESS_WRITE_ONLY;
    }
    /* the clock of the CQE timestamps (rnic_cq_post) */
    *value = e->ops->clock_ns(e->opaque);
    return RNIC_ACCESS_OK;
}

RnicAccessResult rnic_engine_doorbell(RnicEngine *e, uint32_t page,
                                      uint32_t offset, uint64_t value)
{
    RnicAccessResult result;

    /* nested in another engine call: recorded, done by the next run */
    if (e->depth || e->run_scheduled || e->run_inline || !e->ops->run_now ||
        !e->ops->run_now(e->opaque)) {
        return rnic_doorbell_record(e, page, offset, value);
    }
    /* rnic_engine_schedule() only notes requests until the end */
    rnic_engine_enter(e, RNIC_CALL_DOORBELL);
    e->run_inline = true;
    result = rnic_doorbell_record(e, page, offset, value);
    if (e->run_scheduled) {
        e->run_scheduled = false;
        rnic_doorbells_process_budget(e, RNIC_DB_INLINE_BUDGET);
    }
    e->run_inline = false;
    rnic_engine_leave(e);
    if (e->run_scheduled) {
        e->ops->schedule(e->opaque);
    }
    return result;
}
