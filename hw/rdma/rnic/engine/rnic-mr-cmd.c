/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the commands that create and change mapping-table entries
 * (REG_MR, ALLOC_MR, DEREG_MR, REREG_MR) and the work requests that change
 * them (REG_MR: fast-register; LOCAL_INV and SEND with invalidate). What
 * differs by kind is the kind's (rnic-mr.h); every change is appended to
 * the registration log (rnic-reglog.c).
 */
#include "rnic-mr.h"

static RnicPd *rnic_mr_cmd_pd(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                              RnicAdminResult *res)
{
    const RnicMrKind *k = rnic_mr_kind_of(cmd->mr.kind);
    uint32_t h = GUINT32_FROM_LE(cmd->mr.pd);
    RnicPd *pd;

    if (!rnic_admin_check_uctx(e, cmd, res, false)) {
        return NULL;
    }
    pd = rnic_admin_obj(e, cmd, res, &e->pds, h);
    if (!pd) {
        return NULL;
    }
    /* a window is allocated by ALLOC_MW, not registered */
    if (!k || (!k->reg && !k->alloc_max)) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM, "%s: unknown MR kind %u",
                        rnic_admin_opcode_name(cmd->opcode), cmd->mr.kind);
        return NULL;
    }
    if ((cmd->opcode == RNIC_CMD_REG_MR && !k->reg) ||
        (cmd->opcode == RNIC_CMD_ALLOC_MR && !k->alloc_max) ||
        (cmd->opcode == RNIC_CMD_REREG_MR && k->rereg_refusal)) {
        rnic_admin_fail(e, res, RNIC_ST_NOT_SUPPORTED,
                        "%s: not for %s (MR kind %u)",
                        rnic_admin_opcode_name(cmd->opcode), k->name,
                        cmd->mr.kind);
        return NULL;
    }
    return pd;
}

void rnic_cmd_reg_mr(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                     RnicAdminResult *res)
{
    RnicPd *pd = rnic_mr_cmd_pd(e, cmd, res);

    if (pd) {
        rnic_mr_kind_of(cmd->mr.kind)->reg(e, cmd, res, pd);
    }
}

void rnic_cmd_alloc_mr(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                       RnicAdminResult *res)
{
    uint32_t npages = GUINT32_FROM_LE(cmd->mr.npages);
    const RnicMrKind *k = rnic_mr_kind_of(cmd->mr.kind);
    RnicPd *pd;
    RnicMr *mr;

    /*
     * Fast registration names guest-physical pages: only the kernel may
     * (docs/spec.md, "Security"), as with ib_alloc_mr on real hardware. A
     * mapped STag's names STags of its PD: any owner may (alloc_user).
     */
    if (!rnic_admin_check_uctx(e, cmd, res, !(k && k->alloc_user))) {
        return;
    }
    pd = rnic_mr_cmd_pd(e, cmd, res);
    if (!pd) {
        return;
    }
    if (!npages || npages > k->alloc_max) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                        "ALLOC_MR: %u %s (1..%u)", npages, k->alloc_unit,
                        k->alloc_max);
        return;
    }
    mr = rnic_mr_insert(e, pd, pd->owner, 0, cmd->mr.key);
    if (!mr) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "ALLOC_MR: mapping table of PD %u (or of a context "
                        "it is bound to) full", pd->handle);
        return;
    }
    mr->kind = cmd->mr.kind;
    mr->state = RNIC_MR_INVALID;
    mr->fast_reg = true;
    mr->max_pages = npages;
    rnic_mr_changed(e, mr);
    rnic_reglog_append(e, RNIC_REGLOG_ALLOC, mr);
    rnic_reglog_compact(e, false);
    res->result0 = mr->stag;
}

/*
 * The entry a DEREG_MR or REREG_MR names: STag 'stag' in the table of
 * network context 'h' (RNIC_PD_MULTI_NET: the multi-network table), owned
 * by the issuing user context. NULL, with 'res' failed, when there is none.
 */
static RnicMr *rnic_mr_cmd_entry(RnicEngine *e,
                                 const struct rnic_admin_cmd *cmd,
                                 RnicAdminResult *res, uint32_t stag,
                                 uint32_t h, bool any_key)
{
    const char *op = rnic_admin_opcode_name(cmd->opcode);
    RnicNetCtx *ctx = NULL;
    RnicMr *mr;

    if (h != RNIC_PD_MULTI_NET) {
        ctx = rnic_netctx_lookup(e, h);
        if (!ctx) {
            rnic_admin_fail(e, res, RNIC_ST_BAD_HANDLE,
                            "%s: no network context %u", op, h);
            return NULL;
        }
    }
    mr = rnic_mrt_lookup(ctx ? &ctx->mrt : &e->mnet_mrt, RNIC_STAG_INDEX(stag));
    /*
     * a replica is deregistered through the multi-network table only; the
     * key of a fast-reg entry may be left out (ANY_KEY): its consumer
     * cannot know whether its last REG_MR work request executed
     */
    if (mr && any_key &&
        (mr->fast_reg || (rnic_mr_kind(mr)->flags & RNIC_MRK_ANY_KEY))) {
        stag = mr->stag;
    }
    if (!mr || mr->stag != stag || mr->ctx != ctx) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_HANDLE,
                        "%s: STag 0x%x not registered in context %u", op,
                        stag, h);
        return NULL;
    }
    if (mr->owner != GUINT32_FROM_LE(cmd->uctx)) {
        rnic_admin_fail(e, res, RNIC_ST_PERMISSION,
                        "%s: STag 0x%x belongs to context %u", op, stag,
                        mr->owner);
        return NULL;
    }
    if (mr->windows) {
        rnic_admin_fail(e, res, RNIC_ST_BUSY,
                        "%s: %u memory windows are bound to STag 0x%x", op,
                        mr->windows, stag);
        return NULL;
    }
    return mr;
}

void rnic_cmd_dereg_mr(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                       RnicAdminResult *res)
{
    uint32_t flags = GUINT32_FROM_LE(cmd->destroy.flags);
    const RnicMrKind *k;
    RnicMr *mr;

    if (!rnic_admin_check_uctx(e, cmd, res, false)) {
        return;
    }
    if (flags & ~RNIC_DEREG_ANY_KEY) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                        "DEREG_MR: unknown flags 0x%x", flags);
        return;
    }
    mr = rnic_mr_cmd_entry(e, cmd, res, GUINT32_FROM_LE(cmd->destroy.handle),
                           GUINT32_FROM_LE(cmd->destroy.net_ctx),
                           flags & RNIC_DEREG_ANY_KEY);
    if (!mr) {
        return;
    }
    k = rnic_mr_kind(mr);
    if (k->dereg) {
        k->dereg(e, mr);
    }
    if (!(k->flags & RNIC_MRK_LOGGED)) {
        rnic_mr_remove(e, mr);
        return;
    }
    rnic_reglog_append(e, RNIC_REGLOG_DEREG, mr);
    rnic_mr_remove(e, mr);
    rnic_reglog_compact(e, false);
}

/*
 * Room for 'mr' (of a multi-network PD) in the tables of the contexts 'pd'
 * is bound to and its own PD is not?
 */
static bool rnic_mr_room_moved(RnicEngine *e, const RnicMr *mr,
                               const RnicPd *pd)
{
    RnicNetCtx *ctx;
    uint32_t c;

    RNIC_TABLE_FOREACH(&e->net_ctxs, c, ctx) {
        if (rnic_pd_bound(e, pd, c) && !rnic_pd_bound(e, mr->pd, c) &&
            ctx->mrt.count >= e->cfg.max_mr) {
            return false;
        }
    }
    return true;
}

/* Move 'mr' to 'pd' (same context, same owner): its replicas follow. */
static void rnic_mr_move_pd(RnicEngine *e, RnicMr *mr, RnicPd *pd)
{
    uint32_t idx = RNIC_STAG_INDEX(mr->stag);

    if (!pd->ctx) {
        rnic_mr_replicate(e, mr->pd, idx, NULL);
        mr->pd->mrs--;
        pd->mrs++;
        rnic_mr_replicate(e, pd, idx, mr);
    }
    mr->pd->refs--;
    pd->refs++;
    mr->pd = pd;
}

/* The PD a REREG_MR moves 'mr' to: same context and owner, room for it. */
static RnicPd *rnic_rereg_pd(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                             RnicAdminResult *res, const RnicMr *mr)
{
    RnicPd *pd = rnic_mr_cmd_pd(e, cmd, res);

    if (!pd) {
        return NULL;
    }
    if (pd->ctx != mr->pd->ctx || pd->owner != mr->owner) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                        "REREG_MR: PD %u is not of STag 0x%x's network "
                        "context and owner", pd->handle, mr->stag);
        return NULL;
    }
    if (!pd->ctx && !rnic_mr_room_moved(e, mr, pd)) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "REREG_MR: the mapping table of a context PD %u "
                        "is bound to is full", pd->handle);
        return NULL;
    }
    return pd;
}

/*
 * REREG_MR: the same STag, in place, with a new translation, PD or rights
 * (what cmd->mr.rereg names). Everything is checked and the new page list
 * read before the entry changes, so a refusal leaves the MR as it was. The
 * log records the change as deregistration and registration of the STag.
 */
void rnic_cmd_rereg_mr(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                       RnicAdminResult *res)
{
    uint8_t what = cmd->mr.rereg;
    bool trans = what & RNIC_REREG_TRANS;
    const RnicMrKind *k;
    uint64_t iova, length;
    uint32_t access, npages;
    uint8_t shift, status;
    const char *why;
    RnicPbl *pbl = NULL;
    RnicPd *pd;
    RnicMr *mr;

    if (!rnic_admin_check_uctx(e, cmd, res, false)) {
        return;
    }
    if (!what || (what & ~(RNIC_REREG_TRANS | RNIC_REREG_PD |
                           RNIC_REREG_ACCESS))) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                        "REREG_MR: flags 0x%x (TRANS 1, PD 2, ACCESS 4, at "
                        "least one)", what);
        return;
    }
    mr = rnic_mr_cmd_entry(e, cmd, res, GUINT32_FROM_LE(cmd->mr.stag),
                           GUINT32_FROM_LE(cmd->mr.net_ctx), false);
    if (!mr) {
        return;
    }
    k = rnic_mr_kind(mr);
    if (k->rereg_refusal || mr->fast_reg) {
        rnic_admin_fail(e, res, k->rereg_refusal ? k->rereg_refusal :
                        RNIC_ST_BAD_PARAM,
                        "REREG_MR: STag 0x%x is %s, not a registered region "
                        "of guest memory", mr->stag,
                        k->rereg_refusal ? k->name : "a fast-register MR");
        return;
    }
    pd = what & RNIC_REREG_PD ? rnic_rereg_pd(e, cmd, res, mr) : mr->pd;
    if (!pd) {
        return;
    }
    access = what & RNIC_REREG_ACCESS ? GUINT32_FROM_LE(cmd->mr.access) :
        mr->access;
    iova = trans ? GUINT64_FROM_LE(cmd->mr.iova) : mr->iova;
    length = trans ? GUINT64_FROM_LE(cmd->mr.length) : mr->length;
    shift = trans ? cmd->mr.page_shift : mr->pbl->page_shift;
    npages = trans ? GUINT32_FROM_LE(cmd->mr.npages) : mr->pbl->npages;
    why = cmd->mr.sems ? "storage semantics on a region of guest memory" :
        rnic_mr_check_region(iova, length, access, shift, npages);
    if (why) {
        rnic_admin_fail(e, res, why == rnic_mr_volatile ?
                        RNIC_ST_NOT_SUPPORTED : RNIC_ST_BAD_PARAM,
                        "REREG_MR: STag 0x%x: %s (iova 0x%" G_GINT64_MODIFIER
                        "x length %" G_GINT64_MODIFIER "u shift %u npages "
                        "%u access 0x%x)", mr->stag, why, iova, length, shift,
                        npages, access);
        return;
    }
    if (trans) {
        pbl = rnic_pbl_read(e, GUINT64_FROM_LE(cmd->mr.pbl_addr),
                            cmd->mr.levels, npages, shift, &status, &why);
        if (!pbl) {
            rnic_admin_fail(e, res, status, "REREG_MR: %s", why);
            return;
        }
    }
    rnic_reglog_append(e, RNIC_REGLOG_DEREG, mr);
    if (pd != mr->pd) {
        rnic_mr_move_pd(e, mr, pd);
    }
    if (pbl) {
        rnic_pbl_unref(e, mr->pbl);
        mr->pbl = pbl;
        mr->iova = iova;
        mr->length = length;
    }
    mr->access = access;
    rnic_mr_changed(e, mr);
    rnic_reglog_append(e, RNIC_REGLOG_REG, mr);
    rnic_reglog_compact(e, false);
    res->result0 = mr->stag;
}

/* ---------------------------------------------------------------------- */
/* Fast register and invalidate (work requests)                           */
/* ---------------------------------------------------------------------- */

uint8_t rnic_mr_fast_reg(RnicEngine *e, RnicQp *qp, const RnicSendWqe *sw)
{
    uint32_t stag = GUINT32_FROM_LE(sw->hdr.reg.stag);
    RnicMr *mr = rnic_mrt_lookup(rnic_pd_lkeys(e, qp->pd),
                                 RNIC_STAG_INDEX(stag));

    rnic_stat_inc(e, RNIC_STAT_FAST_REGS);
    if (!mr || !mr->fast_reg || mr->owner != qp->owner || mr->pd != qp->pd ||
        !rnic_mr_kind(mr)->fast_reg) {
        rnic_event(e, UB_MR, "fast-register: no fast-reg MR of this PD at "
                   "that index", qp->qpn, stag);
        return RNIC_WC_LOC_PROT_ERR;
    }
    if (mr->state == RNIC_MR_VALID) {
        rnic_event(e, UB_MR, "fast-register: MR still valid (invalidate it "
                   "first)", qp->qpn, stag);
        return RNIC_WC_LOC_PROT_ERR;
    }
    return rnic_mr_kind(mr)->fast_reg(e, qp, mr, sw);
}

void rnic_mr_fast_reg_done(RnicEngine *e, RnicMr *mr, uint32_t stag,
                           uint64_t iova, uint64_t length, uint32_t access)
{
    mr->stag = stag;
    mr->iova = iova;
    mr->length = length;
    mr->access = access;
    mr->state = RNIC_MR_VALID;
    rnic_mr_changed(e, mr);
    rnic_reglog_append(e, RNIC_REGLOG_FAST_REG, mr);
    rnic_reglog_compact(e, false);
}

uint8_t rnic_mr_invalidate(RnicEngine *e, const RnicMrTable *t,
                           const RnicQp *qp, uint32_t stag, bool remote)
{
    /* a replica is the entry itself: every network sees it invalid */
    RnicMr *mr = rnic_mrt_lookup(t, RNIC_STAG_INDEX(stag));

    if (mr && rnic_mr_kind(mr)->invalidate) {
        uint8_t status = rnic_mr_kind(mr)->invalidate(e, mr, qp, stag,
                                                      remote);

        if (status == RNIC_WC_SUCCESS) {
            rnic_stat_inc(e, RNIC_STAT_INVALIDATES);
        }
        return status;
    }
    if (!mr || mr->stag != stag || !mr->fast_reg || mr->pd != qp->pd ||
        mr->owner != qp->owner) {
        rnic_event(e, UB_MR, "invalidate: no fast-reg MR with that key in "
                   "this PD", qp->qpn, stag);
        return RNIC_WC_LOC_PROT_ERR;
    }
    if (mr->windows) {
        rnic_event(e, UB_MR, "invalidate: memory windows are bound to the MR",
                   qp->qpn, stag);
        return RNIC_WC_LOC_PROT_ERR;
    }
    mr->state = RNIC_MR_INVALID;
    rnic_mr_changed(e, mr);
    rnic_reglog_append(e, RNIC_REGLOG_INVALIDATE, mr);
    rnic_reglog_compact(e, false);
    rnic_stat_inc(e, RNIC_STAT_INVALIDATES);
    return RNIC_WC_SUCCESS;
}
