/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: page lists and the plain kind of mapping-table entry
 * (RNIC_MR_KIND_MEM): guest memory through the page list of guest DMA
 * addresses the driver gave at registration (REG_MR) or in a REG_MR work
 * request (a fast-register entry of ALLOC_MR). A page list is immutable
 * once built and reference counted: the registration log shares it with
 * the entry instead of copying it, and persistent-window regions
 * (rnic-scm.c) use the same form for their one contiguous run.
 */
#include <string.h>
#include "rnic-mr.h"

/* ---------------------------------------------------------------------- */
/* Page lists                                                             */
/* ---------------------------------------------------------------------- */

static uint64_t rnic_pbl_bytes(uint32_t n)
{
    return sizeof(RnicPbl) + (uint64_t)n * sizeof(uint64_t);
}

static bool rnic_pbl_fits(RnicEngine *e, uint32_t npages, bool contiguous)
{
    uint32_t n = contiguous ? 1 : npages;

    if (!contiguous && e->pbl_pages + npages > RNIC_PBL_BUDGET) {
        return false;
    }
    return rnic_mem_charge(e, rnic_pbl_bytes(n));
}

static RnicPbl *rnic_pbl_new(RnicEngine *e, uint32_t npages, uint8_t shift,
                             bool contiguous)
{
    uint32_t n = contiguous ? 1 : npages;
    RnicPbl *pbl;

    if (!rnic_pbl_fits(e, npages, contiguous)) {
        /*
         * Records of deregistered MRs may still hold their page lists:
         * compact the log (work of the order of the live MRs) and retry;
         * not again until the log has grown (it would free nothing), so
         * a run of refused registrations costs one compaction, not one
         * each.
         */
        if (e->reglog->len <= e->mr_count ||
            e->reglog->len == e->reglog_compacted_len) {
            return NULL;
        }
        rnic_work_entries(e, e->mr_count);
        rnic_reglog_compact(e, true);
        if (!rnic_pbl_fits(e, npages, contiguous)) {
            return NULL;
        }
    }
    pbl = g_try_malloc(rnic_pbl_bytes(n));
    if (!pbl) {
        rnic_mem_release(e, rnic_pbl_bytes(n));
        return NULL;
    }
    if (!contiguous) {
        e->pbl_pages += npages;
    }
    pbl->refs = 1;
    pbl->npages = npages;
    pbl->page_shift = shift;
    pbl->contiguous = contiguous;
    return pbl;
}

RnicPbl *rnic_pbl_ref(RnicPbl *pbl)
{
    if (pbl) {
        pbl->refs++;
    }
    return pbl;
}

void rnic_pbl_unref(RnicEngine *e, RnicPbl *pbl)
{
    if (pbl && --pbl->refs == 0) {
        if (!pbl->contiguous) {
            e->pbl_pages -= pbl->npages;
        }
        rnic_mem_release(e, rnic_pbl_bytes(pbl->contiguous ? 1 :
                                            pbl->npages));
        g_free(pbl);
    }
}

/* Pages needed for [iova, iova + length) with pages of 1 << shift. */
static uint64_t rnic_pages_for(uint64_t iova, uint64_t length, uint8_t shift)
{
    uint64_t pgmask = (1ull << shift) - 1;

    return ((iova & pgmask) + length + pgmask) >> shift;
}

/* Guest RAM is volatile: nothing the device does makes it durable. */
const char rnic_mr_volatile[] = "FLUSH persistence on volatile memory";

const char *rnic_mr_check_region(uint64_t iova, uint64_t length,
                                 uint32_t access, uint8_t shift,
                                 uint64_t npages)
{
    if (access & ~RNIC_ACCESS_ALL) {
        return "unknown access bits";
    }
    if ((access & (RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_ATOMIC)) &&
        !(access & RNIC_ACCESS_LOCAL_WRITE)) {
        return "remote write/atomic access needs local write access";
    }
    if (access & RNIC_ACCESS_FLUSH_PERSISTENT) {
        return rnic_mr_volatile;
    }
    if (!length || length > RNIC_MR_MAX_SIZE) {
        return "length is zero or beyond the maximum region size";
    }
    if (iova + length < iova) {
        return "iova + length overflows";
    }
    if (shift < RNIC_PAGE_SHIFT_MIN || shift > RNIC_PAGE_SHIFT_MAX) {
        return "page shift out of range";
    }
    if (npages != rnic_pages_for(iova, length, shift)) {
        return "page count does not match iova, length and page size";
    }
    return NULL;
}

const char *rnic_pbl_check(const RnicPbl *pbl)
{
    uint64_t pgmask = (1ull << pbl->page_shift) - 1;
    uint32_t i, n = pbl->contiguous ? 1 : pbl->npages;

    for (i = 0; i < n; i++) {
        uint64_t a = pbl->pages[i];

        if (a & pgmask) {
            return "page address not aligned to the page size";
        }
        /* the top half of the DMA space is the device's window */
        if (pbl->contiguous) {
            uint64_t size = (uint64_t)pbl->npages << pbl->page_shift;

            if (a >= RNIC_SCM_DMA_BASE || size > RNIC_SCM_DMA_BASE - a) {
                return "contiguous region beyond guest memory";
            }
        } else if (a >= RNIC_SCM_DMA_BASE - pgmask) {
            return "page beyond guest memory";
        }
    }
    return NULL;
}

RnicPbl *rnic_pbl_read(RnicEngine *e, uint64_t addr, uint8_t levels,
                       uint32_t npages, uint8_t shift, uint8_t *status,
                       const char **why)
{
    RnicPbl *pbl;

    if (levels > 2) {
        *status = RNIC_ST_BAD_PARAM;
        *why = "page-list levels beyond 2";
        return NULL;
    }
    if (levels > 0 && npages > RNIC_MR_MAX_PAGES) {
        *status = RNIC_ST_BAD_PARAM;
        *why = "page list longer than the device maximum";
        return NULL;
    }
    pbl = rnic_pbl_new(e, npages, shift, levels == 0);
    if (!pbl) {
        *status = RNIC_ST_NO_RESOURCES;
        *why = "device page-list or host memory budget exhausted";
        return NULL;
    }
    if (levels > 0) {
        rnic_work_entries(e, npages);    /* the phase's work budget */
    }
    if (levels == 0) {
        pbl->pages[0] = addr;
    } else if (levels == 1) {
        if ((addr & 7) || addr + (uint64_t)npages * 8 < addr) {
            *status = RNIC_ST_BAD_PARAM;
            *why = "page list not 8-byte aligned";
            goto fail;
        }
        if (rnic_dma_read(e, addr, pbl->pages, (size_t)npages * 8)) {
            *status = RNIC_ST_DMA_ERROR;
            *why = "page list not readable";
            goto fail;
        }
    } else {
        uint32_t nleaves = (npages + RNIC_PBL_LEAF_ENTRIES - 1) /
                           RNIC_PBL_LEAF_ENTRIES;
        uint64_t *leaves = g_new(uint64_t, nleaves);
        uint32_t i;

        if ((addr & 7) || rnic_dma_read(e, addr, leaves, (size_t)nleaves * 8)) {
            g_free(leaves);
            *status = (addr & 7) ? RNIC_ST_BAD_PARAM : RNIC_ST_DMA_ERROR;
            *why = "level-2 directory misaligned or not readable";
            goto fail;
        }
        for (i = 0; i < nleaves; i++) {
            uint64_t leaf = GUINT64_FROM_LE(leaves[i]);
            uint32_t n = MIN(RNIC_PBL_LEAF_ENTRIES,
                             npages - i * RNIC_PBL_LEAF_ENTRIES);

            if (leaf & 0xfff) {
                g_free(leaves);
                *status = RNIC_ST_BAD_PARAM;
                *why = "level-2 leaf not 4 KiB aligned";
                goto fail;
            }
            if (rnic_dma_read(e, leaf, pbl->pages + i * RNIC_PBL_LEAF_ENTRIES,
                              (size_t)n * 8)) {
                g_free(leaves);
                *status = RNIC_ST_DMA_ERROR;
                *why = "level-2 leaf not readable";
                goto fail;
            }
        }
        g_free(leaves);
    }
    if (levels > 0) {
        uint32_t i;

        for (i = 0; i < npages; i++) {
            pbl->pages[i] = GUINT64_FROM_LE(pbl->pages[i]);
        }
    }
    *why = rnic_pbl_check(pbl);
    if (*why) {
        *status = RNIC_ST_BAD_PARAM;
        goto fail;
    }
    return pbl;

fail:
    rnic_pbl_unref(e, pbl);
    return NULL;
}

RnicPbl *rnic_pbl_alloc(RnicEngine *e, uint32_t npages, uint8_t shift,
                        bool contiguous)
{
    if (npages > (contiguous ? (uint32_t)(RNIC_MR_MAX_SIZE >> 12) + 1
                             : RNIC_MR_MAX_PAGES)) {
        return NULL;
    }
    return rnic_pbl_new(e, npages, shift, contiguous);
}

uint64_t rnic_pbl_run(const RnicMr *mr, uint64_t va, uint64_t max,
                      bool write, uint32_t *hint, uint64_t *run)
{
    const RnicPbl *p = mr->pbl;
    uint64_t pgsz = 1ull << p->page_shift;
    uint64_t off = va - mr->iova + (mr->iova & (pgsz - 1));
    uint64_t idx, in, addr, len;

    if (p->contiguous) {
        *run = max;
        return p->pages[0] + off;
    }
    /* pages that follow each other are one run */
    idx = off >> p->page_shift;
    in = off & (pgsz - 1);
    addr = p->pages[idx] + in;
    len = pgsz - in;
    while (len < max && idx + 1 < p->npages &&
           p->pages[idx + 1] == p->pages[idx] + pgsz) {
        idx++;
        len += pgsz;
    }
    *run = MIN(len, max);
    return addr;
}

/* ---------------------------------------------------------------------- */
/* The plain kind                                                         */
/* ---------------------------------------------------------------------- */

void rnic_reg_mr_insert(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                        RnicAdminResult *res, RnicPd *pd, RnicPbl *pbl,
                        uint32_t access)
{
    RnicMr *mr = rnic_mr_insert(e, pd, pd->owner, 0, cmd->mr.key);

    if (!mr) {
        rnic_pbl_unref(e, pbl);
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "REG_MR: mapping table full or no free STag index");
        return;
    }
    mr->kind = cmd->mr.kind;
    mr->state = RNIC_MR_VALID;
    mr->access = access;
    mr->iova = GUINT64_FROM_LE(cmd->mr.iova);
    mr->length = GUINT64_FROM_LE(cmd->mr.length);
    mr->pbl = pbl;
    rnic_mr_changed(e, mr);
    rnic_reglog_append(e, RNIC_REGLOG_REG, mr);
    rnic_reglog_compact(e, false);
    res->result0 = mr->stag;
}

/* REG_MR of guest memory: the region's checks, then its page list. */
static void rnic_mem_reg(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res, RnicPd *pd)
{
    uint64_t iova = GUINT64_FROM_LE(cmd->mr.iova);
    uint64_t length = GUINT64_FROM_LE(cmd->mr.length);
    uint32_t npages = GUINT32_FROM_LE(cmd->mr.npages);
    uint32_t access = GUINT32_FROM_LE(cmd->mr.access);
    uint8_t shift = cmd->mr.page_shift;
    const char *why;
    uint8_t status;
    RnicPbl *pbl;

    why = cmd->mr.sems ? "storage semantics on a region of guest memory" :
        rnic_mr_check_region(iova, length, access, shift, npages);
    if (why) {
        /* a persistence the memory cannot give: valid, not supported */
        rnic_admin_fail(e, res, why == rnic_mr_volatile ?
                        RNIC_ST_NOT_SUPPORTED : RNIC_ST_BAD_PARAM,
                        "REG_MR: %s (iova 0x%" G_GINT64_MODIFIER "x length %"
                        G_GINT64_MODIFIER "u shift %u npages %u)", why, iova,
                        length, shift, npages);
        return;
    }
    if (!rnic_mr_room(e, pd)) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "REG_MR: mapping table of PD %u (or of a context "
                        "it is bound to) full", pd->handle);
        return;
    }
    pbl = rnic_pbl_read(e, GUINT64_FROM_LE(cmd->mr.pbl_addr), cmd->mr.levels,
                        npages, shift, &status, &why);
    if (!pbl) {
        rnic_admin_fail(e, res, status, "REG_MR: %s", why);
        return;
    }
    rnic_reg_mr_insert(e, cmd, res, pd, pbl, access);
}

/* The REG_MR work request of a kernel QP: a page list of guest pages. */
static uint8_t rnic_mem_fast_reg(RnicEngine *e, RnicQp *qp, RnicMr *mr,
                                 const RnicSendWqe *sw)
{
    const struct rnic_sq_wqe *wqe = &sw->hdr;
    uint32_t stag = GUINT32_FROM_LE(wqe->reg.stag);
    uint64_t iova = GUINT64_FROM_LE(wqe->reg.iova);
    uint64_t length = GUINT64_FROM_LE(wqe->reg.length);
    uint32_t access = GUINT32_FROM_LE(wqe->reg.access);
    uint32_t npages = GUINT32_FROM_LE(wqe->reg.npages);
    uint8_t shift = wqe->reg.page_shift;
    const char *why;
    uint8_t status;
    RnicPbl *pbl;

    if (qp->owner != RNIC_UCTX_KERNEL || (wqe->flags & RNIC_WQE_INLINE) ||
        sw->nsge) {
        rnic_event(e, UB_MR, "fast-register: a page list from a user QP, "
                   "or with a segment table", qp->qpn, stag);
        return RNIC_WC_LOC_QP_OP_ERR;
    }
    why = rnic_mr_check_region(iova, length, access, shift, npages);
    if (!why && npages > mr->max_pages) {
        why = "more pages than the MR was allocated for";
    }
    if (why) {
        rnic_event(e, UB_MR, why, qp->qpn, stag);
        return RNIC_WC_LOC_PROT_ERR;
    }
    pbl = rnic_pbl_read(e, GUINT64_FROM_LE(wqe->reg.pbl_addr), 1, npages, shift,
                        &status, &why);
    if (!pbl) {
        rnic_event(e, UB_MR, why, qp->qpn, stag);
        return RNIC_WC_LOC_PROT_ERR;
    }
    rnic_pbl_unref(e, mr->pbl);
    mr->pbl = pbl;
    rnic_mr_fast_reg_done(e, mr, stag, iova, length, access);
    return RNIC_WC_SUCCESS;
}

/* A registration's page list fits the region it maps? */
static const char *rnic_mem_replay_pbl(const RnicRegLogRec *rec)
{
    const char *why;

    if (!rec->pbl || rec->map) {
        return "registration without its page list, or with a segment table";
    }
    why = rnic_mr_check_region(rec->iova, rec->length, rec->access,
                               rec->pbl->page_shift, rec->pbl->npages);
    return why ? why : rnic_pbl_check(rec->pbl);
}

static const char *rnic_mem_replay_create(RnicEngine *e,
                                          const RnicRegLogRec *rec)
{
    if (rec->op == RNIC_REGLOG_REG) {
        return rnic_mem_replay_pbl(rec);
    }
    if (rec->map) {
        return "a fast-register entry with a segment table";
    }
    return !rec->max_pages || rec->max_pages > RNIC_MR_MAX_FAST_REG_PAGES ?
        "bad page capacity" : NULL;
}

static const char *rnic_mem_replay_fast_reg(RnicEngine *e, RnicMr *mr,
                                            const RnicRegLogRec *rec)
{
    const char *why = rnic_mem_replay_pbl(rec);

    if (!why && (rec->pbl->contiguous || rec->pbl->npages > mr->max_pages)) {
        why = "page list does not fit the MR";
    }
    if (why) {
        return why;
    }
    rnic_pbl_unref(e, mr->pbl);
    mr->pbl = rnic_pbl_ref(rec->pbl);
    return NULL;
}

const RnicMrKind rnic_mr_kind_mem = {
    .name = "a region of guest memory",
    .flags = RNIC_MRK_LOGGED | RNIC_MRK_MEMBER | RNIC_MRK_WINDOW_PARENT |
             RNIC_MRK_CACHEABLE,
    .reg = rnic_mem_reg,
    .alloc_max = RNIC_MR_MAX_FAST_REG_PAGES,
    .alloc_unit = "pages",
    .fast_reg = rnic_mem_fast_reg,
    .check = rnic_mr_check_keyed,
    .run = rnic_pbl_run,
    .replay_create = rnic_mem_replay_create,
    .replay_fast_reg = rnic_mem_replay_fast_reg,
};
