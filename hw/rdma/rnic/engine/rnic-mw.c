/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: memory windows (IBTA 1.4 section 10.6.7, type 1 and 2B).
 *
 * A window is an entry of the mapping table like an MR (kind
 * RNIC_MR_KIND_MW): its STag, PD, state, rights and bounds are checked by
 * the one gate (rnic_mr_check) on every access, and then the access goes
 * to the MR the window is bound to, which must still be the MR it was
 * bound to (the same STag, valid, and covering the window). ALLOC_MW
 * creates one; the BIND_MW work request binds it to a range of an MR of
 * the same PD that has RNIC_ACCESS_MW_BIND; LOCAL_INV and SEND with
 * invalidate free a type 2B window; DEREG_MR deallocates one. An MR with
 * windows bound is neither deregistered nor invalidated.
 *
 * Windows are not in the registration log: the state image carries them
 * in a section of their own, loaded after the log has rebuilt their MRs
 * (rnic-state-objs.c).
 */
#include "rnic-mr.h"

/* Remote rights a window grants; local write is the MR's, and ignored */
#define RNIC_MW_REMOTE (RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_WRITE | \
                        RNIC_ACCESS_REMOTE_ATOMIC)
/* IBV_ACCESS_ZERO_BASED: a window addressed from 0 (not supported) */
#define RNIC_MW_ZERO_BASED (1u << 5)

void rnic_cmd_alloc_mw(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                       RnicAdminResult *res)
{
    RnicPd *pd;
    RnicMr *mw;

    if (!rnic_admin_check_uctx(e, cmd, res, false)) {
        return;
    }
    pd = rnic_admin_obj(e, cmd, res, &e->pds, GUINT32_FROM_LE(cmd->mw.pd));
    if (!pd) {
        return;
    }
    if (cmd->mw.type != RNIC_MW_TYPE_1 && cmd->mw.type != RNIC_MW_TYPE_2) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                        "ALLOC_MW: window type %u (1 or 2)", cmd->mw.type);
        return;
    }
    mw = rnic_mr_insert(e, pd, pd->owner, 0, cmd->mw.key);
    if (!mw) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "ALLOC_MW: mapping table of PD %u (or of a context "
                        "it is bound to) full", pd->handle);
        return;
    }
    mw->kind = RNIC_MR_KIND_MW;
    mw->mw_type = cmd->mw.type;
    /* type 1 is usable (with no range) until bound; type 2B is free */
    mw->state = mw->mw_type == RNIC_MW_TYPE_1 ? RNIC_MR_VALID :
                                                RNIC_MR_INVALID;
    rnic_mr_changed(e, mw);
    e->mw_count++;
    res->result0 = mw->stag;
}

void rnic_mw_unbind(RnicEngine *e, RnicMr *mw)
{
    if (mw->parent) {
        mw->parent->windows--;
        mw->parent = NULL;
    }
    mw->parent_stag = 0;
    mw->iova = 0;
    mw->length = 0;
    mw->access = 0;
    rnic_mr_changed(e, mw);
}

static uint8_t rnic_mw_bind_fail(RnicEngine *e, const RnicQp *qp,
                                 uint32_t rkey, const char *why)
{
    rnic_event(e, UB_MR, why, qp->qpn, rkey);
    return RNIC_WC_MW_BIND_ERR;
}

uint8_t rnic_mw_bind(RnicEngine *e, RnicQp *qp, const struct rnic_sq_wqe *wqe)
{
    uint64_t addr = GUINT64_FROM_LE(wqe->bind.addr);
    uint64_t length = GUINT64_FROM_LE(wqe->bind.length);
    uint32_t mr_lkey = GUINT32_FROM_LE(wqe->bind.mr_lkey);
    uint32_t rkey = GUINT32_FROM_LE(wqe->bind.mw_rkey);
    uint32_t new_rkey = GUINT32_FROM_LE(wqe->bind.new_rkey);
    uint32_t access = GUINT32_FROM_LE(wqe->bind.access);
    const RnicMrTable *t = rnic_pd_lkeys(e, qp->pd);
    RnicMr *mw = rnic_mrt_lookup(t, RNIC_STAG_INDEX(rkey));
    RnicMr *mr;

    if (!mw || rnic_mr_kind(mw) != &rnic_mr_kind_mw || mw->stag != rkey ||
        mw->owner != qp->owner) {
        return rnic_mw_bind_fail(e, qp, rkey, "bind: no memory window with "
                                 "that rkey");
    }
    if (mw->pd != qp->pd) {
        return rnic_mw_bind_fail(e, qp, rkey, "bind: the window is in "
                                 "another PD than the QP");
    }
    if (RNIC_STAG_INDEX(new_rkey) != RNIC_STAG_INDEX(rkey)) {
        return rnic_mw_bind_fail(e, qp, rkey, "bind: the new rkey names "
                                 "another window");
    }
    if (access & RNIC_MW_ZERO_BASED) {
        return rnic_mw_bind_fail(e, qp, rkey, "bind: zero-based windows are "
                                 "not supported");
    }
    if (access & ~(RNIC_MW_REMOTE | RNIC_ACCESS_LOCAL_WRITE)) {
        return rnic_mw_bind_fail(e, qp, rkey, "bind: unknown access rights");
    }
    if (mw->mw_type == RNIC_MW_TYPE_2) {
        if (mw->state == RNIC_MR_VALID) {
            return rnic_mw_bind_fail(e, qp, rkey, "bind: type 2 window "
                                     "already bound (invalidate it first)");
        }
        if (!length) {
            return rnic_mw_bind_fail(e, qp, rkey, "bind: type 2 window of "
                                     "length 0");
        }
    } else if (!length) {
        /* type 1: a zero-length bind takes every access away */
        rnic_mw_unbind(e, mw);
        mw->stag = new_rkey;
        return RNIC_WC_SUCCESS;
    }
    mr = rnic_mrt_lookup(t, RNIC_STAG_INDEX(mr_lkey));
    if (!mr || !(rnic_mr_kind(mr)->flags & RNIC_MRK_WINDOW_PARENT) ||
        mr->stag != mr_lkey ||
        mr->state != RNIC_MR_VALID || mr->pd != qp->pd ||
        mr->owner != qp->owner) {
        return rnic_mw_bind_fail(e, qp, mr_lkey, "bind: no valid MR with "
                                 "that lkey in the QP's PD");
    }
    if (!(mr->access & RNIC_ACCESS_MW_BIND)) {
        return rnic_mw_bind_fail(e, qp, mr_lkey, "bind: the MR does not "
                                 "allow windows (no MW_BIND right)");
    }
    if ((access & (RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_ATOMIC)) &&
        !(mr->access & RNIC_ACCESS_LOCAL_WRITE)) {
        return rnic_mw_bind_fail(e, qp, mr_lkey, "bind: remote write or "
                                 "atomic rights over an MR without local "
                                 "write");
    }
    if (!rnic_mr_range_ok(mr, addr, length)) {
        return rnic_mw_bind_fail(e, qp, mr_lkey, "bind: the window is not "
                                 "inside the MR");
    }
    rnic_mw_unbind(e, mw);      /* type 1: a rebind replaces the binding */
    mw->parent = mr;
    mw->parent_stag = mr->stag;
    mr->windows++;
    mw->iova = addr;
    mw->length = length;
    mw->access = access & RNIC_MW_REMOTE;
    mw->stag = new_rkey;
    mw->state = RNIC_MR_VALID;
    if (mw->mw_type == RNIC_MW_TYPE_2) {
        mw->mw_qp = qp->handle;
        mw->mw_qpn = qp->qpn;
    }
    rnic_mr_changed(e, mw);
    return RNIC_WC_SUCCESS;
}

/* LOCAL_INV or SEND with invalidate of a type 2B window. */
static uint8_t rnic_mw_invalidate(RnicEngine *e, RnicMr *mw,
                                  const RnicQp *qp, uint32_t stag, bool remote)
{
    const char *why = NULL;

    if (mw->stag != stag || mw->pd != qp->pd || mw->owner != qp->owner) {
        why = "invalidate: no memory window with that key in this PD";
    } else if (mw->mw_type != RNIC_MW_TYPE_2) {
        why = "invalidate: a type 1 window cannot be invalidated";
    } else if (mw->state != RNIC_MR_VALID) {
        why = "invalidate: the window is not bound";
    } else if (remote && (mw->mw_qp != qp->handle || mw->mw_qpn != qp->qpn)) {
        why = "invalidate: the window is bound to another QP";
    }
    if (why) {
        rnic_event(e, UB_MR, why, qp->qpn, stag);
        return RNIC_WC_LOC_PROT_ERR;
    }
    rnic_mw_unbind(e, mw);
    mw->state = RNIC_MR_INVALID;
    return RNIC_WC_SUCCESS;
}

/*
 * An rkey of a window, its own key, rights and bounds checked, goes to the
 * MR it is bound to, which must still be the one it was bound to; a window
 * is no local key.
 */
static RnicXlateErr rnic_mw_target(const RnicMr *mw, bool remote,
                                   const RnicQp *qp, uint64_t va,
                                   uint64_t len, RnicMr **mr)
{
    const RnicMr *p = mw->parent;

    if (!remote) {
        return RNIC_XLATE_WINDOW;
    }
    if (mw->mw_type == RNIC_MW_TYPE_2 &&
        (!qp || mw->mw_qp != qp->handle || mw->mw_qpn != qp->qpn)) {
        return RNIC_XLATE_QP;
    }
    if (!p || p->stag != mw->parent_stag || p->state != RNIC_MR_VALID ||
        !rnic_mr_range_ok(p, va, len)) {
        return RNIC_XLATE_UNBOUND;
    }
    *mr = mw->parent;
    return RNIC_XLATE_OK;
}

/* A window moves no byte itself: its accesses go to its MR. */
static uint64_t rnic_mw_run(const RnicMr *mw, uint64_t va, uint64_t max,
                            bool write, uint32_t *hint, uint64_t *run)
{
    *run = 0;
    return 0;
}

static void rnic_mw_release(RnicEngine *e, RnicMr *mw)
{
    e->mw_count--;
}

const RnicMrKind rnic_mr_kind_mw = {
    .name = "a memory window",
    .flags = RNIC_MRK_ANY_KEY | RNIC_MRK_CACHEABLE,
    .rereg_refusal = RNIC_ST_BAD_PARAM,
    .invalidate = rnic_mw_invalidate,
    .check = rnic_mr_check_keyed,
    .target = rnic_mw_target,
    .run = rnic_mw_run,
    .dereg = rnic_mw_unbind,
    .release = rnic_mw_release,
};
