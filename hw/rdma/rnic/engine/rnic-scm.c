/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the device-owned memory window and storage semantics in
 * the STag key (patent US 10,019,409). A region of kind SCM maps a range
 * of the window (the host's memory backend, BAR4 to the guest), reached
 * at RNIC_SCM_DMA_BASE + offset through the usual DMA host operations;
 * the key byte of its STag is sem[7:5] | tag[4:0], the semantic chosen by
 * the requester from the rkeys the region allows (REG_MR mr.sems):
 *
 *   PLAIN     RDMA as on any region
 *   DURABLE   a write is persisted before the ACK that covers it leaves;
 *             a READ persists its range before it is answered; as a local
 *             key (a receive buffer, a READ's or atomic's sink) what is
 *             placed is persisted before the completion is written
 *   VISIBLE   acknowledged once globally visible (every placement is)
 *   ATOMIC8   only 8-byte aligned writes of 8 bytes, placed in one piece
 *   READONLY  reads only
 *   MGMT      a WRITE of struct rnic_scm_mgmt at offset 0 runs it; a READ
 *             returns the region's struct rnic_scm_status
 *
 * Persistence goes through RnicHostOps.persist, batched: what durable
 * writes leave to persist is collected (a few ranges, merged) and
 * persisted before the next responder packet (ACK, NAK, response) leaves
 * and at the end of every engine call. What a single request asks to
 * persist (FLUSH, a DURABLE READ, a MGMT request: up to the whole window)
 * and SCM_PERSIST are done in chunks of at most RNIC_SCM_CHUNK, as many
 * per engine call as its budget allows (rnic_work_spent), the answer
 * leaving after the last one.
 */
#include <inttypes.h>
#include <string.h>
#include "rnic-mr.h"

#define RNIC_SCM_SEM_BITS   (0x7u << RNIC_SCM_KEY_SEM_SHIFT)
#define RNIC_SCM_PAGE_SHIFT 12
/* a ZERO management request clears at most this much (bounded work) */
#define RNIC_SCM_ZERO_MAX   (1u << 20)
/*
 * One host persist at most, as much as a phase's budget: a msync costs a
 * sync (about 3 ms on a disk, clean or not) plus the dirty pages written
 * back; 16 MiB took 4 to 25 ms here, a clean 256 MiB window 16 chunks of
 * 3 ms (in 1 MiB chunks: 770 ms; in one: 0.1 ms, but 120 ms dirty)
 */
#define RNIC_SCM_CHUNK      (16u << 20)

static uint64_t rnic_scm_size(const RnicEngine *e)
{
    return (uint64_t)e->cfg.scm_pages << RNIC_SCM_PAGE_SHIFT;
}

uint64_t rnic_scm_caps(const RnicEngine *e)
{
    if (!e->cfg.scm_pages) {
        return 0;
    }
    return RNIC_CAP_SCM |
           (e->cfg.scm_persistent ?
            RNIC_CAP_FLUSH_PERSISTENT | RNIC_CAP_SCM_PERSIST : 0);
}

uint64_t rnic_scm_window_size(const RnicEngine *e)
{
    return rnic_scm_size(e);
}

/* Window offset of region byte 'va' (a resolved SCM region). */
static uint64_t rnic_scm_off(const RnicMr *mr, uint64_t va)
{
    uint64_t pgmask = (1ull << RNIC_SCM_PAGE_SHIFT) - 1;

    return mr->pbl->pages[0] + (va - mr->iova) + (mr->iova & pgmask) -
           RNIC_SCM_DMA_BASE;
}

/* The window offset a region's page list maps its byte 0 to. */
static uint64_t rnic_scm_pbl_off(const RnicPbl *pbl, uint64_t iova)
{
    uint64_t pgmask = (1ull << RNIC_SCM_PAGE_SHIFT) - 1;

    return pbl->pages[0] + (iova & pgmask) - RNIC_SCM_DMA_BASE;
}

/*
 * Checks of an SCM region shared by REG_MR and the log replay: 'access'
 * is the rights word (RNIC_ACCESS_* and the semantics from bit
 * RNIC_MR_SEMS_SHIFT), [off, off + length) the window range. NULL when
 * fine; *not_supported: valid, but not on this window.
 */
static const char *rnic_scm_check(const RnicEngine *e, uint64_t iova,
                                  uint64_t length, uint64_t off,
                                  uint32_t access, uint8_t key,
                                  bool *not_supported)
{
    uint32_t sems = access >> RNIC_MR_SEMS_SHIFT;
    uint32_t rights = access & ((1u << RNIC_MR_SEMS_SHIFT) - 1);

    *not_supported = false;
    if (!e->cfg.scm_pages) {
        *not_supported = true;
        return "the device has no memory window";
    }
    if (rights & ~RNIC_ACCESS_ALL) {
        return "unknown access bits";
    }
    if ((rights & (RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_ATOMIC)) &&
        !(rights & RNIC_ACCESS_LOCAL_WRITE)) {
        return "remote write/atomic access needs local write access";
    }
    if (!sems || sems >> RNIC_SCM_SEM_COUNT) {
        return "no storage semantic, or an unknown one";
    }
    if (!(sems & (1u << (key >> RNIC_SCM_KEY_SEM_SHIFT)))) {
        return "the key's semantic is not one the region allows";
    }
    if (!e->cfg.scm_persistent &&
        ((rights & RNIC_ACCESS_FLUSH_PERSISTENT) ||
         (sems & (1u << RNIC_SCM_SEM_DURABLE)))) {
        *not_supported = true;
        return "persistence on a window that does not persist";
    }
    if (!length || length > RNIC_MR_MAX_SIZE || iova + length < iova) {
        return "length is zero, too long, or iova + length overflows";
    }
    if (off >= rnic_scm_size(e) || length > rnic_scm_size(e) - off) {
        return "range outside the memory window";
    }
    return NULL;
}

/*
 * An SCM REG_MR's page list (one run of the window) and rights word, or
 * NULL with an admin status and why.
 */
static RnicPbl *rnic_scm_region(RnicEngine *e,
                                const struct rnic_admin_cmd *cmd,
                                uint32_t *access, uint8_t *status,
                                const char **why)
{
    uint64_t iova = GUINT64_FROM_LE(cmd->mr.iova);
    uint64_t length = GUINT64_FROM_LE(cmd->mr.length);
    uint64_t off = GUINT64_FROM_LE(cmd->mr.pbl_addr);
    uint64_t pgmask = (1ull << RNIC_SCM_PAGE_SHIFT) - 1;
    bool not_supported;
    RnicPbl *pbl;

    *access = GUINT32_FROM_LE(cmd->mr.access);
    *status = RNIC_ST_NOT_SUPPORTED;
    if (!e->cfg.scm_pages) {
        *why = "the device has no memory window";
        return NULL;
    }
    *status = RNIC_ST_BAD_PARAM;
    if (*access >> RNIC_MR_SEMS_SHIFT ||
        GUINT32_FROM_LE(cmd->mr.sems) >> RNIC_SCM_SEM_COUNT) {
        *why = "unknown access bits or storage semantics";
        return NULL;
    }
    if (cmd->mr.npages || cmd->mr.page_shift || cmd->mr.levels) {
        *why = "an SCM region has no page list (npages, page_shift, levels 0)";
        return NULL;
    }
    *access |= GUINT32_FROM_LE(cmd->mr.sems) << RNIC_MR_SEMS_SHIFT;
    *why = rnic_scm_check(e, iova, length, off, *access, cmd->mr.key,
                          &not_supported);
    if (*why) {
        *status = not_supported ? RNIC_ST_NOT_SUPPORTED : RNIC_ST_BAD_PARAM;
        return NULL;
    }
    /* one DMA-contiguous run of the window, byte 0 at iova's page offset */
    pbl = rnic_pbl_alloc(e, ((iova & pgmask) + length + pgmask) >>
                         RNIC_SCM_PAGE_SHIFT, RNIC_SCM_PAGE_SHIFT, true);
    if (!pbl) {
        *status = RNIC_ST_NO_RESOURCES;
        *why = "no memory for the region";
        return NULL;
    }
    pbl->pages[0] = RNIC_SCM_DMA_BASE + off - (iova & pgmask);
    return pbl;
}

/* A REG record of a window region (the only kind of record it has). */
static const char *rnic_scm_replay_create(RnicEngine *e,
                                          const RnicRegLogRec *rec)
{
    uint64_t pgmask = (1ull << RNIC_SCM_PAGE_SHIFT) - 1;
    bool not_supported;
    const char *why;

    if (rec->op != RNIC_REGLOG_REG || !rec->pbl || rec->map ||
        !rec->pbl->contiguous ||
        rec->pbl->page_shift != RNIC_SCM_PAGE_SHIFT) {
        return "an SCM region is registered once, as one window range";
    }
    why = rnic_scm_check(e, rec->iova, rec->length,
                         rnic_scm_pbl_off(rec->pbl, rec->iova), rec->access,
                         RNIC_STAG_KEY(rec->stag), &not_supported);
    if (!why && rec->pbl->npages !=
        ((rec->iova & pgmask) + rec->length + pgmask) >> RNIC_SCM_PAGE_SHIFT) {
        why = "page count does not match the range";
    }
    return why;
}

/*
 * The key byte is checked on every access; in an SCM region's it carries
 * the request's storage semantic.
 */
static RnicXlateErr rnic_scm_check_key(const RnicMr *mr, uint32_t stag,
                                       uint64_t va, uint64_t len,
                                       uint32_t access)
{
    uint8_t sem = rnic_stag_sem(stag);
    const uint32_t writes = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
                            RNIC_ACCESS_REMOTE_ATOMIC;

    if ((mr->stag ^ stag) & ~RNIC_SCM_SEM_BITS) {
        return RNIC_XLATE_KEY;
    }
    if (!(rnic_mr_sems(mr) & (1u << sem))) {
        return RNIC_XLATE_SEMANTIC;
    }
    switch (sem) {
    case RNIC_SCM_SEM_READONLY:
        return access & writes ? RNIC_XLATE_SEMANTIC : RNIC_XLATE_OK;
    case RNIC_SCM_SEM_ATOMIC8:
        return (access & RNIC_ACCESS_REMOTE_WRITE) && (len != 8 || (va & 7)) ?
               RNIC_XLATE_SEMANTIC : RNIC_XLATE_OK;
    case RNIC_SCM_SEM_MGMT:
        /* a request at offset 0, or a read of (part of) the status */
        if (access == RNIC_ACCESS_REMOTE_WRITE) {
            return va == mr->iova && len == sizeof(struct rnic_scm_mgmt) ?
                   RNIC_XLATE_OK : RNIC_XLATE_SEMANTIC;
        }
        if (access == RNIC_ACCESS_REMOTE_READ) {
            return va >= mr->iova &&
                   va - mr->iova <= sizeof(struct rnic_scm_status) &&
                   len <= sizeof(struct rnic_scm_status) - (va - mr->iova) ?
                   RNIC_XLATE_OK : RNIC_XLATE_SEMANTIC;
        }
        return RNIC_XLATE_SEMANTIC;
    default:
        return RNIC_XLATE_OK;
    }
}

/* Is 'mr' a region of the window (this file's kind)? */
static inline bool rnic_scm_is_region(const RnicMr *mr)
{
    return rnic_mr_kind(mr) == &rnic_mr_kind_scm;
}

bool rnic_scm_is_mgmt(const RnicMr *mr, uint32_t stag)
{
    return rnic_scm_is_region(mr) &&
           rnic_stag_sem(stag) == RNIC_SCM_SEM_MGMT;
}

/* ---------------------------------------------------------------------- */
/* Persistence                                                            */
/* ---------------------------------------------------------------------- */

static void rnic_scm_persist_off(RnicEngine *e, uint64_t off, uint64_t len)
{
    if (!len) {
        return;
    }
    rnic_event(e, SCM_PERSIST, NULL, off, len);
    rnic_work_persist(e, len);
    e->ops->persist(e->opaque, off, len);
    e->scm.persists++;
    e->scm.persisted_bytes += len;
}

/*
 * Persist the next chunks of [*off, end), as much as the phase's budget
 * allows (one chunk at least); true when all of it is durable.
 */
static bool rnic_scm_persist_chunks(RnicEngine *e, uint64_t *off,
                                    uint64_t end)
{
    do {
        uint64_t n = MIN(end - *off, RNIC_SCM_CHUNK);

        rnic_scm_persist_off(e, *off, n);
        *off += n;
    } while (*off < end && !rnic_work_spent(e));
    return *off >= end;
}

void rnic_scm_persist_pending(RnicEngine *e)
{
    RnicScm *s = &e->scm;
    uint32_t i, n = s->npending;

    s->npending = 0;
    for (i = 0; i < n; i++) {
        rnic_scm_persist_off(e, s->pending[i].off, s->pending[i].len);
    }
}

/* Collect [off, off + len) to persist before the next acknowledgement. */
static void rnic_scm_defer(RnicEngine *e, uint64_t off, uint64_t len)
{
    RnicScm *s = &e->scm;
    uint32_t i;

    for (i = 0; i < s->npending; i++) {
        RnicScmRange *r = &s->pending[i];

        /* overlapping or touching: one range */
        if (off <= r->off + r->len && r->off <= off + len) {
            uint64_t end = MAX(r->off + r->len, off + len);

            r->off = MIN(r->off, off);
            r->len = end - r->off;
            return;
        }
    }
    if (s->npending == G_N_ELEMENTS(s->pending)) {
        rnic_scm_persist_pending(e);
    }
    s->pending[s->npending].off = off;
    s->pending[s->npending].len = len;
    s->npending++;
}

/* The region's own account of what was persisted through it. */
static void rnic_scm_count(RnicMr *mr, uint64_t len)
{
    mr->scm_persists++;
    mr->scm_persisted_bytes += len;
}

void rnic_scm_written(RnicEngine *e, const RnicMr *mr, uint32_t stag,
                      uint64_t va, uint64_t len)
{
    /* (a zero-length SGE may name no region) */
    if (len && mr && rnic_scm_is_region(mr) &&
        rnic_stag_sem(stag) == RNIC_SCM_SEM_DURABLE) {
        rnic_scm_defer(e, rnic_scm_off(mr, va), len);
        rnic_scm_count((RnicMr *)mr, len);
    }
}

void rnic_scm_persist(RnicEngine *e, RnicQp *qp, RnicMr *mr, uint64_t va,
                      uint64_t len)
{
    RnicResp *resp = &qp->resp;
    uint64_t off;

    if (!rnic_scm_is_region(mr) || !e->cfg.scm_persistent || !len) {
        return;
    }
    off = rnic_scm_off(mr, va);
    rnic_scm_count(mr, len);
    /*
     * one range per QP: a second one widens it to cover both (persisting
     * more than asked is harmless; the window bounds it)
     */
    if (resp->persist_off == resp->persist_end) {
        resp->persist_off = off;
        resp->persist_end = off + len;
    } else {
        resp->persist_off = MIN(resp->persist_off, off);
        resp->persist_end = MAX(resp->persist_end, off + len);
    }
    rnic_qp_work(e, qp, RNIC_QPW_RESP);     /* rnic_scm_persist_step */
}

bool rnic_scm_persist_step(RnicEngine *e, RnicQp *qp)
{
    RnicResp *resp = &qp->resp;

    if (resp->persist_off == resp->persist_end) {
        return true;
    }
    if (rnic_work_spent(e) ||
        !rnic_scm_persist_chunks(e, &resp->persist_off, resp->persist_end)) {
        return false;
    }
    resp->persist_off = resp->persist_end = 0;
    return true;
}

void rnic_scm_persist_all(RnicEngine *e, RnicQp *qp)
{
    RnicResp *resp = &qp->resp;

    rnic_scm_persist_off(e, resp->persist_off,
                         resp->persist_end - resp->persist_off);
    resp->persist_off = resp->persist_end = 0;
}

void rnic_scm_before_read(RnicEngine *e, RnicQp *qp, RnicMr *mr,
                          uint32_t stag, uint64_t va, uint64_t len)
{
    if (rnic_scm_is_region(mr) &&
        rnic_stag_sem(stag) == RNIC_SCM_SEM_DURABLE) {
        rnic_scm_persist(e, qp, mr, va, len);
    }
}

/*
 * SCM_PERSIST (kernel only): [offset, offset + length) of the window made
 * durable, stores of the guest's CPUs through BAR4 included: the driver's
 * flush of the window as an nvdimm region. In chunks: a range longer than
 * the admin run's budget stays at the queue head and goes on in the next
 * run (res->again), completed when all of it is durable.
 */
void rnic_cmd_scm_persist(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                          RnicAdminResult *res)
{
    uint64_t off = GUINT64_FROM_LE(cmd->scm.offset);
    uint64_t len = GUINT64_FROM_LE(cmd->scm.length);
    uint64_t size = rnic_scm_size(e);
    RnicScm *s = &e->scm;
    uint64_t at;

    if (!rnic_admin_check_uctx(e, cmd, res, true)) {
        return;
    }
    if (!e->cfg.scm_persistent) {
        rnic_admin_fail(e, res, RNIC_ST_NOT_SUPPORTED,
                        "SCM_PERSIST: %s", size ? "the window does not persist" :
                        "no memory window");
        return;
    }
    if (off > size || len > size - off) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                        "SCM_PERSIST: %#" PRIx64 "+%#" PRIx64
                        " outside the window of %#" PRIx64, off, len, size);
        return;
    }
    /* the same command as last run (not rewritten meanwhile): go on */
    if (!s->cmd_active || s->cmd_index != e->regs.aq_head ||
        s->cmd_off != off || s->cmd_len != len) {
        s->cmd_active = true;
        s->cmd_index = e->regs.aq_head;
        s->cmd_off = off;
        s->cmd_len = len;
        s->cmd_done = 0;
    }
    at = off + s->cmd_done;
    if (len && !rnic_scm_persist_chunks(e, &at, off + len)) {
        s->cmd_done = at - off;
        res->again = true;
        return;
    }
    s->cmd_active = false;
}

/* ---------------------------------------------------------------------- */
/* Management requests                                                    */
/* ---------------------------------------------------------------------- */

static uint32_t rnic_scm_mgmt_run(RnicEngine *e, RnicQp *qp, RnicMr *mr,
                                  const struct rnic_scm_mgmt *m)
{
    uint64_t off = GUINT64_FROM_LE(m->offset);
    uint64_t len = GUINT64_FROM_LE(m->length);
    uint32_t op = GUINT32_FROM_LE(m->op);
    static const uint8_t zero[4096];
    uint64_t done;

    if (m->rsvd || op < RNIC_SCM_MGMT_PERSIST || op > RNIC_SCM_MGMT_STATUS) {
        return RNIC_SCM_ST_BAD_OP;
    }
    if (op == RNIC_SCM_MGMT_STATUS) {
        return RNIC_SCM_ST_OK;
    }
    if (off > mr->length || len > mr->length - off ||
        (op == RNIC_SCM_MGMT_ZERO && len > RNIC_SCM_ZERO_MAX)) {
        return RNIC_SCM_ST_RANGE;
    }
    if (op == RNIC_SCM_MGMT_ZERO) {
        for (done = 0; done < len; done += MIN(len - done, sizeof(zero))) {
            if (rnic_mr_write(e, mr, mr->iova + off + done, zero,
                              MIN(len - done, sizeof(zero)))) {
                return RNIC_SCM_ST_IO;
            }
        }
    }
    if (!e->cfg.scm_persistent) {
        return op == RNIC_SCM_MGMT_ZERO ? RNIC_SCM_ST_OK :
               RNIC_SCM_ST_NOT_PERSISTENT;
    }
    /* durable before the WRITE's ACK and any later response leave */
    rnic_scm_persist(e, qp, mr, mr->iova + off, len);
    return RNIC_SCM_ST_OK;
}

bool rnic_scm_mgmt(RnicEngine *e, RnicQp *qp, RnicMr *mr,
                   const RnicPayload *pl)
{
    struct rnic_scm_mgmt m;
    struct rnic_scm_status *st;
    uint32_t i, at = 0;

    if (!mr->scm_status) {
        if (!rnic_mem_charge(e, sizeof(*mr->scm_status))) {
            return false;
        }
        mr->scm_status = g_new0(struct rnic_scm_status, 1);
    }
    st = mr->scm_status;
    if (pl->data) {
        memcpy(&m, pl->data, sizeof(m));
    } else {
        for (i = 0; i < pl->nsegs && at < sizeof(m); i++) {
            uint32_t n = MIN(pl->segs[i].len, sizeof(m) - at);

            if (rnic_dma_read(e, pl->segs[i].addr, (uint8_t *)&m + at, n)) {
                return false;
            }
            at += n;
        }
    }
    st->status = GUINT32_TO_LE(rnic_scm_mgmt_run(e, qp, mr, &m));
    st->op = m.op;
    st->cookie = m.cookie;
    st->region_length = GUINT64_TO_LE(mr->length);
    /* this region's, not the device's: other regions are not its reader's */
    st->persists = GUINT64_TO_LE(mr->scm_persists);
    st->persisted_bytes = GUINT64_TO_LE(mr->scm_persisted_bytes);
    st->persistent = GUINT32_TO_LE(e->cfg.scm_persistent);
    rnic_event(e, SCM_MGMT, NULL, RNIC_STAG_INDEX(mr->stag),
               GUINT32_FROM_LE(m.op), GUINT32_FROM_LE(st->status));
    return true;
}

const uint8_t *rnic_scm_status_bytes(RnicMr *mr, uint64_t va)
{
    static const struct rnic_scm_status none;

    return (const uint8_t *)(mr->scm_status ? mr->scm_status : &none) +
           (va - mr->iova);
}

/* ---------------------------------------------------------------------- */
/* The kind                                                               */
/* ---------------------------------------------------------------------- */

static void rnic_scm_reg(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res, RnicPd *pd)
{
    uint32_t access;
    const char *why;
    uint8_t status;
    RnicPbl *pbl = rnic_scm_region(e, cmd, &access, &status, &why);

    if (!pbl) {
        rnic_admin_fail(e, res, status, "REG_MR: SCM: %s (offset 0x%"
                        G_GINT64_MODIFIER "x length %" G_GINT64_MODIFIER "u)",
                        why, GUINT64_FROM_LE(cmd->mr.pbl_addr),
                        GUINT64_FROM_LE(cmd->mr.length));
        return;
    }
    rnic_reg_mr_insert(e, cmd, res, pd, pbl, access);
}

static RnicXlateErr rnic_scm_check_access(const RnicMr *mr, uint32_t stag,
                                          const RnicPd *pd, uint64_t va,
                                          uint64_t len, uint32_t access)
{
    RnicXlateErr err = rnic_scm_check_key(mr, stag, va, len, access);

    return err ? err : rnic_mr_check_entry(mr, pd, va, len, access);
}

static void rnic_scm_release(RnicEngine *e, RnicMr *mr)
{
    if (mr->scm_status) {
        rnic_mem_release(e, sizeof(*mr->scm_status));
        g_free(mr->scm_status);
    }
}

const RnicMrKind rnic_mr_kind_scm = {
    .name = "a persistent region",
    .flags = RNIC_MRK_LOGGED | RNIC_MRK_CACHEABLE,
    .rereg_refusal = RNIC_ST_NOT_SUPPORTED,
    .reg = rnic_scm_reg,
    .check = rnic_scm_check_access,
    .run = rnic_pbl_run,
    .release = rnic_scm_release,
    .replay_create = rnic_scm_replay_create,
};
