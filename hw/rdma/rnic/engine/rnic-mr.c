/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: per-network mapping tables (patent a), STag allocation,
 * memory registration (REG_MR / ALLOC_MR / DEREG_MR, fast-register and
 * invalidate work requests), DMA translation and the registration log.
 *
 * A mapping-table entry joins the virtual region the consumer registered
 * (iova, length, access, PD, kind) to the physical one (the page list of
 * guest DMA addresses copied from the guest at registration). Every access
 * to registered memory goes through rnic_mr_resolve(): key, state, PD,
 * rights and bounds are checked before a single byte moves, and the bytes
 * then move only through RnicHostOps, page by page.
 *
 * A multi-network PD (ABI 1.1) has its entries in the device's
 * multi-network table, and the very same entry is also placed, at the same
 * index, in the table of every network context the PD is bound to (one of
 * its RC QPs uses a GID of that context): these are the replicas. A change
 * of the entry (fast-register, invalidate) is thus seen identically in every
 * network, and the entry resolves for remote keys only in the networks the
 * PD is bound to. Indexes of the multi-network table are kept free in every
 * context table (and the other way round), so a binding never collides.
 *
 * The registration log records every change of every table in order; it
 * is what the migration stream carries for MRs and what the destination
 * replays (rnic_reglog_replay) to rebuild identical STags over its own
 * physical side. It is compacted when most of it has become history.
 */
#include <string.h>
#include "rnic-admin.h"

/* ---------------------------------------------------------------------- */
/* Page lists                                                             */
/* ---------------------------------------------------------------------- */

static void rnic_reglog_account(RnicEngine *e);

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

static RnicPbl *rnic_pbl_ref(RnicPbl *pbl)
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
static const char rnic_mr_volatile[] = "FLUSH persistence on volatile memory";

/* Checks shared by REG_MR, fast-register and log replay; NULL when fine. */
static const char *rnic_mr_check_region(uint64_t iova, uint64_t length,
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

/* Check the page addresses of a list: aligned, and a page never wraps. */
static const char *rnic_pbl_check(const RnicPbl *pbl)
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

/*
 * Copy a guest page list into a new RnicPbl. levels: 0 contiguous (addr is
 * page 0), 1 flat list at addr, 2 list of 4 KiB leaves at addr. On failure
 * returns NULL with *status (admin status) and *why.
 */
static RnicPbl *rnic_pbl_read(RnicEngine *e, uint64_t addr, uint8_t levels,
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

/* ---------------------------------------------------------------------- */
/* Mapping tables                                                         */
/* ---------------------------------------------------------------------- */

/* Indexes of a mapping table: a power of two, four times max-mrs. */
static uint32_t rnic_mrt_range(const RnicEngineConfig *cfg)
{
    uint64_t want = MAX(4ull * cfg->max_mr, 4ull * RNIC_MRT_LEAF_SIZE);
    uint32_t range = RNIC_MRT_LEAF_SIZE;

    while (range < want && range < (1u << 24)) {
        range <<= 1;
    }
    return range;
}

uint64_t rnic_mrt_bytes(const RnicEngineConfig *cfg)
{
    uint32_t range = rnic_mrt_range(cfg);

    /* the directory and every leaf it may get */
    return (uint64_t)range / RNIC_MRT_LEAF_SIZE * sizeof(RnicMr **) +
           (uint64_t)range * sizeof(RnicMr *);
}

void rnic_mrt_init(RnicEngine *e, RnicMrTable *t)
{
    uint32_t range = rnic_mrt_range(&e->cfg);

    t->range = range;
    t->ndir = range / RNIC_MRT_LEAF_SIZE;
    t->dir = g_new0(RnicMr **, t->ndir);
    t->count = 0;
}

RnicMr *rnic_mrt_lookup(const RnicMrTable *t, uint32_t index)
{
    RnicMr **leaf;

    if (index >= t->range) {
        return NULL;
    }
    leaf = t->dir[index >> RNIC_MRT_LEAF_BITS];
    return leaf ? leaf[index & (RNIC_MRT_LEAF_SIZE - 1)] : NULL;
}

/* One entry more (+1) or less (-1) at STag index 'index', in any table. */
static void rnic_mrt_user(RnicEngine *e, uint32_t index, int delta)
{
    uint64_t bit = 1ull << (index & 63);

    e->mrt_users[index] += delta;
    if (e->mrt_users[index]) {
        e->mrt_unused[index / 64] &= ~bit;
    } else {
        e->mrt_unused[index / 64] |= bit;
    }
}

static void rnic_mrt_set(RnicEngine *e, RnicMrTable *t, uint32_t index,
                         RnicMr *mr)
{
    RnicMr ***leaf = &t->dir[index >> RNIC_MRT_LEAF_BITS];
    RnicMr **slot;

    if (!*leaf) {
        /* charged with the table (rnic_mrt_bytes) */
        *leaf = g_new0(RnicMr *, RNIC_MRT_LEAF_SIZE);
    }
    slot = &(*leaf)[index & (RNIC_MRT_LEAF_SIZE - 1)];
    if (!*slot && mr) {
        rnic_mrt_user(e, index, +1);
    } else if (*slot && !mr) {
        rnic_mrt_user(e, index, -1);
    }
    *slot = mr;
}

/*
 * May a new entry of table 't' take 'idx'? A context table's index must
 * also be free in the multi-network table, and a multi-network index in
 * every context table (no entry in any table: mrt_users), so that binding
 * a PD to a context never collides. O(1) either way.
 */
static bool rnic_mrt_index_free(RnicEngine *e, const RnicMrTable *t,
                                uint32_t idx)
{
    e->mrt_checks++;
    if (!idx || idx >= t->range || rnic_mrt_lookup(t, idx)) {
        return false;
    }
    if (t != &e->mnet_mrt) {
        return !rnic_mrt_lookup(&e->mnet_mrt, idx);
    }
    return !e->mrt_users[idx];
}

/*
 * A random free index (never 0): unpredictable STags. Random probes first:
 * a table holds at most max-mrs entries in a range of four times that
 * (rnic_mrt_range), so a context table's index (free there and in the
 * multi-network table) is found by a probe with probability 1/2 at least,
 * and this many probes fail together with probability 2^-64. A
 * multi-network index must be unused in every table, which many full
 * contexts can make rare: after the probes, the bitmap of unused indexes
 * is searched from a random word, range / 64 words at most (4,096 at the
 * defaults), instead of every index times every context.
 */
#define RNIC_MRT_PROBES 64

static uint32_t rnic_mrt_alloc_index(RnicEngine *e, RnicMrTable *t)
{
    uint32_t i, idx, words = t->range / 64, w0;

    for (i = 0; i < RNIC_MRT_PROBES; i++) {
        idx = g_rand_int_range(e->rand, 1, t->range);
        if (rnic_mrt_index_free(e, t, idx)) {
            return idx;
        }
    }
    if (t != &e->mnet_mrt) {
        return 0;
    }
    w0 = g_rand_int_range(e->rand, 0, words);
    rnic_work_entries(e, words / 64);
    for (i = 0; i < words; i++) {
        uint64_t bits = e->mrt_unused[(w0 + i) % words];

        e->mrt_checks++;
        if (bits) {
            return ((w0 + i) % words) * 64 + __builtin_ctzll(bits);
        }
    }
    return 0;
}

static void rnic_mr_free(RnicEngine *e, RnicMr *mr)
{
    if (mr->scm_status) {
        rnic_mem_release(e, sizeof(*mr->scm_status));
        g_free(mr->scm_status);
    }
    rnic_pbl_unref(e, mr->pbl);
    rnic_map_unref(e, mr->map);
    rnic_mem_release(e, sizeof(*mr));
    g_free(mr);
}

/* Free a table; entries owned by 'ctx' (NULL: the multi-network table). */
static void rnic_mrt_free(RnicEngine *e, RnicMrTable *t, RnicNetCtx *ctx)
{
    uint32_t d, i;

    for (d = 0; d < t->ndir; d++) {
        if (!t->dir[d]) {
            continue;
        }
        for (i = 0; i < RNIC_MRT_LEAF_SIZE; i++) {
            if (!t->dir[d][i]) {
                continue;
            }
            rnic_mrt_user(e, (d << RNIC_MRT_LEAF_BITS) + i, -1);
            /* a replica belongs to the multi-network table */
            if (t->dir[d][i]->ctx == ctx) {
                e->mw_count -= t->dir[d][i]->kind == RNIC_MR_KIND_MW;
                rnic_mr_free(e, t->dir[d][i]);
                e->mr_count--;
            }
        }
        g_free(t->dir[d]);
    }
    g_free(t->dir);
    memset(t, 0, sizeof(*t));
    e->mr_gen++;
}

void rnic_mrt_destroy(RnicEngine *e, RnicNetCtx *ctx)
{
    rnic_mrt_free(e, &ctx->mrt, ctx);
}

void rnic_mrt_foreach(RnicEngine *e, RnicMrTable *t, RnicMrFn *fn,
                      void *opaque)
{
    uint32_t d, i;

    for (d = 0; d < t->ndir; d++) {
        RnicMr **leaf = t->dir[d];

        if (!leaf) {
            continue;
        }
        for (i = 0; i < RNIC_MRT_LEAF_SIZE; i++) {
            if (leaf[i]) {
                fn(e, leaf[i], opaque);
            }
        }
    }
}

typedef struct RnicMrOwnedArg {
    RnicNetCtx *ctx;
    RnicMrFn *fn;
    void *opaque;
} RnicMrOwnedArg;

static void rnic_mr_owned_one(RnicEngine *e, RnicMr *mr, void *opaque)
{
    RnicMrOwnedArg *a = opaque;

    if (mr->ctx == a->ctx) {
        a->fn(e, mr, a->opaque);
    }
}

/*
 * Call fn once for every MR (index order per context, replicas skipped,
 * the multi-network table last).
 */
void rnic_mr_foreach(RnicEngine *e, RnicMrFn *fn, void *opaque)
{
    RnicMrOwnedArg a = { .fn = fn, .opaque = opaque };
    uint32_t c;

    RNIC_TABLE_FOREACH(&e->net_ctxs, c, a.ctx) {
        rnic_mrt_foreach(e, &a.ctx->mrt, rnic_mr_owned_one, &a);
    }
    rnic_mrt_foreach(e, &e->mnet_mrt, fn, opaque);
}

/* ---------------------------------------------------------------------- */
/* Registration log                                                       */
/* ---------------------------------------------------------------------- */

/*
 * The log's records in the host memory account. Compaction keeps the log
 * within a small multiple of the live MRs, each of which was charged, so
 * the records are charged even past the budget (they cannot be refused:
 * the MR change they record has happened).
 */
static void rnic_reglog_account(RnicEngine *e)
{
    uint64_t want = (uint64_t)e->reglog->len * sizeof(RnicRegLogRec);

    if (want < e->reglog_charged) {
        rnic_mem_release(e, e->reglog_charged - want);
    } else {
        e->mem_used += want - e->reglog_charged;
    }
    e->reglog_charged = want;
}

void rnic_reglog_append(RnicEngine *e, uint8_t op, const RnicMr *mr)
{
    RnicRegLogRec rec = {
        .op = op,
        .kind = mr->kind,
        .net_ctx = rnic_mr_net(mr),
        .stag = mr->stag,
        .pd = mr->pd->handle,
        .owner = mr->owner,
        .access = mr->access,
        .max_pages = mr->max_pages,
        .iova = mr->iova,
        .length = mr->length,
    };

    if (op == RNIC_REGLOG_REG || op == RNIC_REGLOG_FAST_REG) {
        rec.pbl = rnic_pbl_ref(mr->pbl);
        rec.map = rnic_map_ref(mr->map);
    }
    g_array_append_val(e->reglog, rec);
    e->reglog_appended++;
    rnic_reglog_account(e);
}

static void rnic_reglog_clear(RnicEngine *e)
{
    guint i;

    for (i = 0; i < e->reglog->len; i++) {
        RnicRegLogRec *r = &g_array_index(e->reglog, RnicRegLogRec, i);

        rnic_pbl_unref(e, r->pbl);
        rnic_map_unref(e, r->map);
    }
    g_array_set_size(e->reglog, 0);
    e->reglog_compacted_len = 0;
    rnic_reglog_account(e);
}

static void rnic_reglog_snapshot_one(RnicEngine *e, RnicMr *mr, void *opaque)
{
    GArray *log = opaque;
    RnicRegLogRec rec = {
        .op = mr->fast_reg ? RNIC_REGLOG_ALLOC : RNIC_REGLOG_REG,
        .kind = mr->kind,
        .net_ctx = rnic_mr_net(mr),
        .stag = mr->stag,
        .pd = mr->pd->handle,
        .owner = mr->owner,
        .access = mr->access,
        .max_pages = mr->max_pages,
        .iova = mr->iova,
        .length = mr->length,
    };

    if (mr->kind == RNIC_MR_KIND_MW) {
        return;                 /* windows are a section of their own */
    }
    if (!mr->fast_reg) {
        rec.pbl = rnic_pbl_ref(mr->pbl);
        rec.map = rnic_map_ref(mr->map);
        g_array_append_val(log, rec);
        return;
    }
    g_array_append_val(log, rec);
    if (mr->pbl || mr->map) {
        /*
         * registered at least once: its last fast-register, then maybe
         * the invalidation that followed
         */
        rec.op = RNIC_REGLOG_FAST_REG;
        rec.pbl = rnic_pbl_ref(mr->pbl);
        rec.map = rnic_map_ref(mr->map);
        g_array_append_val(log, rec);
        if (mr->state != RNIC_MR_VALID) {
            rec.op = RNIC_REGLOG_INVALIDATE;
            rec.pbl = NULL;
            rec.map = NULL;
            g_array_append_val(log, rec);
        }
    }
}

void rnic_reglog_compact(RnicEngine *e, bool force)
{
    GArray *log;

    /* every live entry needs at most three records */
    if (!force && e->reglog->len <= 3 * e->mr_count + 64) {
        return;
    }
    log = g_array_new(FALSE, FALSE, sizeof(RnicRegLogRec));
    rnic_mr_foreach(e, rnic_reglog_snapshot_one, log);
    rnic_reglog_clear(e);
    g_array_free(e->reglog, TRUE);
    e->reglog = log;
    e->reglog_compacted_len = log->len;
    rnic_reglog_account(e);
}

void rnic_mr_init(RnicEngine *e)
{
    e->reglog = g_array_new(FALSE, FALSE, sizeof(RnicRegLogRec));
    e->mrt_users = g_new0(uint16_t, rnic_mrt_range(&e->cfg));
    e->mrt_unused = g_new(uint64_t, rnic_mrt_range(&e->cfg) / 64);
    memset(e->mrt_unused, 0xff, rnic_mrt_range(&e->cfg) / 8);
    e->mrt_unused[0] &= ~1ull;      /* index 0 is never an STag's */
    rnic_mrt_init(e, &e->mnet_mrt);
}

void rnic_mr_fini(RnicEngine *e)
{
    rnic_reglog_clear(e);
    g_array_free(e->reglog, TRUE);
    rnic_mrt_free(e, &e->mnet_mrt, NULL);
    g_free(e->mrt_users);
    g_free(e->mrt_unused);
}

/* Is 'pd' (multi-network) bound to context handle c? */
static bool rnic_pd_bound(const RnicEngine *e, const RnicPd *pd, uint32_t c)
{
    return pd->binds && c < e->cfg.max_net_ctx && pd->binds[c];
}

RnicMrTable *rnic_pd_lkeys(RnicEngine *e, const RnicPd *pd)
{
    return pd->ctx ? &pd->ctx->mrt : &e->mnet_mrt;
}

/* Place (mr) or clear (NULL) index 'idx' in the tables 'pd' is bound to. */
static void rnic_mr_replicate(RnicEngine *e, const RnicPd *pd, uint32_t idx,
                              RnicMr *mr)
{
    RnicNetCtx *ctx;
    uint32_t c;

    RNIC_TABLE_FOREACH(&e->net_ctxs, c, ctx) {
        if (rnic_pd_bound(e, pd, c)) {
            rnic_mrt_set(e, &ctx->mrt, idx, mr);
            ctx->mrt.count += mr ? 1 : -1;
        }
    }
}

/* Room for one more MR of 'pd' (in its table and every replica's)? */
static bool rnic_mr_room(RnicEngine *e, const RnicPd *pd)
{
    RnicNetCtx *ctx;
    uint32_t c;

    if (rnic_pd_lkeys(e, pd)->count >= e->cfg.max_mr) {
        return false;
    }
    RNIC_TABLE_FOREACH(&e->net_ctxs, c, ctx) {
        if (rnic_pd_bound(e, pd, c) && ctx->mrt.count >= e->cfg.max_mr) {
            return false;
        }
    }
    return true;
}

typedef struct RnicBindArg {
    RnicPd *pd;
    RnicNetCtx *ctx;
    bool add;
} RnicBindArg;

static void rnic_pd_bind_one(RnicEngine *e, RnicMr *mr, void *opaque)
{
    RnicBindArg *a = opaque;

    if (mr->pd == a->pd) {
        rnic_mrt_set(e, &a->ctx->mrt, RNIC_STAG_INDEX(mr->stag),
                     a->add ? mr : NULL);
        a->ctx->mrt.count += a->add ? 1 : -1;
    }
}

bool rnic_pd_bind(RnicEngine *e, RnicPd *pd, RnicNetCtx *ctx,
                  const char **why)
{
    RnicBindArg a = { .pd = pd, .ctx = ctx, .add = true };

    if (!pd->binds || ctx->handle >= e->cfg.max_net_ctx) {
        *why = "the PD is not a multi-network PD";
        return false;
    }
    if (pd->binds[ctx->handle]) {
        pd->binds[ctx->handle]++;
        return true;
    }
    if ((uint64_t)ctx->mrt.count + pd->mrs > e->cfg.max_mr) {
        *why = "the network context's mapping table has no room for the "
               "PD's MRs";
        return false;
    }
    rnic_mrt_foreach(e, &e->mnet_mrt, rnic_pd_bind_one, &a);
    pd->binds[ctx->handle] = 1;
    ctx->refs++;
    e->mr_gen++;
    rnic_event(e, PD_BIND, "MRs replicated", pd->handle, ctx->handle,
               pd->mrs);
    return true;
}

void rnic_pd_unbind(RnicEngine *e, RnicPd *pd, RnicNetCtx *ctx)
{
    RnicBindArg a = { .pd = pd, .ctx = ctx, .add = false };

    if (!rnic_pd_bound(e, pd, ctx->handle) || --pd->binds[ctx->handle]) {
        return;
    }
    rnic_mrt_foreach(e, &e->mnet_mrt, rnic_pd_bind_one, &a);
    ctx->refs--;
    e->mr_gen++;
    rnic_event(e, PD_UNBIND, NULL, pd->handle, ctx->handle);
}

static void rnic_mr_remove(RnicEngine *e, RnicMr *mr)
{
    uint32_t idx = RNIC_STAG_INDEX(mr->stag);

    if (mr->ctx) {
        rnic_mrt_set(e, &mr->ctx->mrt, idx, NULL);
        mr->ctx->mrt.count--;
    } else {
        rnic_mrt_set(e, &e->mnet_mrt, idx, NULL);
        e->mnet_mrt.count--;
        rnic_mr_replicate(e, mr->pd, idx, NULL);
        mr->pd->mrs--;
    }
    e->mr_count--;
    mr->pd->refs--;
    rnic_uctx_put(e, mr->owner);
    rnic_mr_free(e, mr);
    e->mr_gen++;
}

static void rnic_mr_reset_one(RnicEngine *e, RnicMr *mr, void *opaque)
{
    rnic_mr_remove(e, mr);
}

void rnic_mr_reset(RnicEngine *e)
{
    /* windows and their MRs go together: no unbinding */
    rnic_mr_foreach(e, rnic_mr_reset_one, NULL);
    e->mw_count = 0;
    rnic_reglog_clear(e);
    e->mr_gen++;
}

/*
 * Insert a new entry at 'index' (or a random one when 0); an entry of a
 * multi-network PD goes to the multi-network table and is replicated into
 * the tables of the contexts the PD is bound to.
 */
RnicMr *rnic_mr_insert(RnicEngine *e, RnicPd *pd, uint32_t owner,
                       uint32_t index, uint8_t key)
{
    RnicMrTable *t = rnic_pd_lkeys(e, pd);
    RnicMr *mr;

    if (!rnic_mr_room(e, pd)) {
        return NULL;
    }
    if (!index) {
        index = rnic_mrt_alloc_index(e, t);
        if (!index) {
            return NULL;
        }
    } else if (!rnic_mrt_index_free(e, t, index)) {
        return NULL;
    }
    if (!rnic_mem_charge(e, sizeof(*mr))) {
        return NULL;
    }
    mr = g_new0(RnicMr, 1);
    mr->handle = index;
    mr->stag = RNIC_STAG(index, key);
    mr->owner = owner;
    mr->ctx = pd->ctx;
    mr->pd = pd;
    mr->members = t;
    rnic_mr_changed(e, mr);
    rnic_mrt_set(e, t, index, mr);
    t->count++;
    if (!pd->ctx) {
        rnic_mr_replicate(e, pd, index, mr);
        pd->mrs++;
    }
    e->mr_count++;
    pd->refs++;
    rnic_uctx_get(e, owner);
    return mr;
}

/* Look up the PD of an MR command and check its owner. */
static RnicPd *rnic_mr_cmd_pd(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                              RnicAdminResult *res)
{
    uint32_t h = GUINT32_FROM_LE(cmd->mr.pd);
    RnicPd *pd;

    if (!rnic_admin_check_uctx(e, cmd, res, false)) {
        return NULL;
    }
    pd = rnic_admin_obj(e, cmd, res, &e->pds, h);
    if (!pd) {
        return NULL;
    }
    if ((cmd->mr.kind == RNIC_MR_KIND_SCM &&
         cmd->opcode != RNIC_CMD_REG_MR) ||
        (cmd->mr.kind == RNIC_MR_KIND_MAPPED &&
         cmd->opcode == RNIC_CMD_REREG_MR)) {
        rnic_admin_fail(e, res, RNIC_ST_NOT_SUPPORTED,
                        "%s: not for MR kind %u",
                        rnic_admin_opcode_name(cmd->opcode), cmd->mr.kind);
        return NULL;
    }
    if (cmd->mr.kind != RNIC_MR_KIND_MEM && cmd->mr.kind != RNIC_MR_KIND_SCM &&
        cmd->mr.kind != RNIC_MR_KIND_MAPPED) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM, "%s: unknown MR kind %u",
                        rnic_admin_opcode_name(cmd->opcode), cmd->mr.kind);
        return NULL;
    }
    return pd;
}

/* The entry of a REG_MR whose page list is read: takes 'pbl'. */
static void rnic_reg_mr_insert(RnicEngine *e, const struct rnic_admin_cmd *cmd,
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

void rnic_cmd_reg_mr(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                     RnicAdminResult *res)
{
    uint64_t iova = GUINT64_FROM_LE(cmd->mr.iova);
    uint64_t length = GUINT64_FROM_LE(cmd->mr.length);
    uint64_t pbl_addr = GUINT64_FROM_LE(cmd->mr.pbl_addr);
    uint32_t npages = GUINT32_FROM_LE(cmd->mr.npages);
    uint32_t access = GUINT32_FROM_LE(cmd->mr.access);
    uint8_t shift = cmd->mr.page_shift;
    const char *why;
    uint8_t status;
    RnicPbl *pbl;
    RnicPd *pd;

    pd = rnic_mr_cmd_pd(e, cmd, res);
    if (!pd) {
        return;
    }
    if (cmd->mr.kind == RNIC_MR_KIND_SCM) {
        pbl = rnic_scm_region(e, cmd, &access, &status, &why);
        if (!pbl) {
            rnic_admin_fail(e, res, status, "REG_MR: SCM: %s (offset 0x%"
                            G_GINT64_MODIFIER "x length %" G_GINT64_MODIFIER
                            "u)", why, pbl_addr, length);
            return;
        }
        rnic_reg_mr_insert(e, cmd, res, pd, pbl, access);
        return;
    }
    if (cmd->mr.kind == RNIC_MR_KIND_MAPPED) {
        if (!rnic_mr_room(e, pd)) {
            rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                            "REG_MR: mapping table of PD %u (or of a context "
                            "it is bound to) full", pd->handle);
            return;
        }
        rnic_cmd_reg_mapped(e, cmd, res, pd);
        return;
    }
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
    pbl = rnic_pbl_read(e, pbl_addr, cmd->mr.levels, npages, shift, &status,
                        &why);
    if (!pbl) {
        rnic_admin_fail(e, res, status, "REG_MR: %s", why);
        return;
    }
    rnic_reg_mr_insert(e, cmd, res, pd, pbl, access);
}

void rnic_cmd_alloc_mr(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                       RnicAdminResult *res)
{
    uint32_t npages = GUINT32_FROM_LE(cmd->mr.npages);
    bool mapped = cmd->mr.kind == RNIC_MR_KIND_MAPPED;
    uint32_t max = mapped ? RNIC_MAP_MAX_SEGS : RNIC_MR_MAX_FAST_REG_PAGES;
    RnicPd *pd;
    RnicMr *mr;

    /*
     * Fast registration names guest-physical pages: only the kernel may
     * (docs/spec.md, "Security"), as with ib_alloc_mr on real hardware. A
     * mapped STag's names STags of its PD: any owner may.
     */
    if (!rnic_admin_check_uctx(e, cmd, res, !mapped)) {
        return;
    }
    pd = rnic_mr_cmd_pd(e, cmd, res);
    if (!pd) {
        return;
    }
    if (!npages || npages > max) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                        "ALLOC_MR: %u %s (1..%u)", npages,
                        mapped ? "segments" : "pages", max);
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
    if (mr && any_key && (mr->fast_reg || mr->kind == RNIC_MR_KIND_MW)) {
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
    if (mr->kind == RNIC_MR_KIND_MW) {
        /* a window is not in the registration log */
        rnic_mw_unbind(e, mr);
        e->mw_count--;
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
    if (mr->kind != RNIC_MR_KIND_MEM || mr->fast_reg) {
        rnic_admin_fail(e, res, mr->kind == RNIC_MR_KIND_SCM ?
                        RNIC_ST_NOT_SUPPORTED : RNIC_ST_BAD_PARAM,
                        "REREG_MR: STag 0x%x is %s, not a registered region "
                        "of guest memory", mr->stag,
                        mr->kind == RNIC_MR_KIND_MW ? "a memory window" :
                        mr->kind == RNIC_MR_KIND_SCM ? "a persistent region" :
                        mr->kind == RNIC_MR_KIND_MAPPED ? "a mapped STag" :
                        "a fast-register MR");
        return;
    }
    pd = mr->pd;
    if (what & RNIC_REREG_PD) {
        pd = rnic_mr_cmd_pd(e, cmd, res);
        if (!pd) {
            return;
        }
        if (pd->ctx != mr->pd->ctx || pd->owner != mr->owner) {
            rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                            "REREG_MR: PD %u is not of STag 0x%x's network "
                            "context and owner", pd->handle, mr->stag);
            return;
        }
        if (!pd->ctx && !rnic_mr_room_moved(e, mr, pd)) {
            rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                            "REREG_MR: the mapping table of a context PD %u "
                            "is bound to is full", pd->handle);
            return;
        }
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
    const struct rnic_sq_wqe *wqe = &sw->hdr;
    uint32_t stag = GUINT32_FROM_LE(wqe->reg.stag);
    uint64_t iova = GUINT64_FROM_LE(wqe->reg.iova);
    uint64_t length = GUINT64_FROM_LE(wqe->reg.length);
    uint32_t access = GUINT32_FROM_LE(wqe->reg.access);
    uint32_t npages = GUINT32_FROM_LE(wqe->reg.npages);
    uint8_t shift = wqe->reg.page_shift;
    RnicMr *mr = rnic_mrt_lookup(rnic_pd_lkeys(e, qp->pd),
                                 RNIC_STAG_INDEX(stag));
    const char *why;
    uint8_t status;
    RnicPbl *pbl;

    rnic_stat_inc(e, RNIC_STAT_FAST_REGS);
    if (!mr || !mr->fast_reg || mr->owner != qp->owner || mr->pd != qp->pd) {
        rnic_event(e, UB_MR, "fast-register: no fast-reg MR of this PD at "
                   "that index", qp->qpn, stag);
        return RNIC_WC_LOC_PROT_ERR;
    }
    if (mr->state == RNIC_MR_VALID) {
        rnic_event(e, UB_MR, "fast-register: MR still valid (invalidate it "
                   "first)", qp->qpn, stag);
        return RNIC_WC_LOC_PROT_ERR;
    }
    if (mr->kind == RNIC_MR_KIND_MAPPED) {
        return rnic_map_fast_reg(e, qp, mr, sw);
    }
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

    if (mr && mr->kind == RNIC_MR_KIND_MW) {
        uint8_t status = rnic_mw_invalidate(e, mr, qp, stag, remote);

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

/* ---------------------------------------------------------------------- */
/* Translation                                                            */
/* ---------------------------------------------------------------------- */

const char *rnic_xlate_err_str(RnicXlateErr err)
{
    switch (err) {
    case RNIC_XLATE_OK:
        return "ok";
    case RNIC_XLATE_NO_ENTRY:
        return "no such STag";
    case RNIC_XLATE_KEY:
        return "STag key mismatch";
    case RNIC_XLATE_STATE:
        return "region not valid";
    case RNIC_XLATE_PD:
        return "region in another PD";
    case RNIC_XLATE_BOUNDS:
        return "outside the region";
    case RNIC_XLATE_ACCESS:
        return "access right missing";
    case RNIC_XLATE_SEMANTIC:
        return "storage semantic not allowed, or its rules broken";
    case RNIC_XLATE_WINDOW:
        return "a memory window is no local key";
    case RNIC_XLATE_UNBOUND:
        return "memory window not bound, or its MR changed since";
    case RNIC_XLATE_QP:
        return "memory window bound to another QP";
    case RNIC_XLATE_MEMBER:
        return "a member of the mapped STag fails its checks";
    }
    return "?";
}

bool rnic_mr_range_ok(const RnicMr *mr, uint64_t va, uint64_t len)
{
    uint64_t off;

    if (!len) {
        return true;
    }
    if (va < mr->iova) {
        return false;
    }
    off = va - mr->iova;
    return off < mr->length && len <= mr->length - off;
}

/*
 * 'stag' in table 't': an rkey ('remote', arriving on 'qp' or, NULL, on no
 * QP in particular) or a local key, which a window is not.
 */
static RnicXlateErr rnic_stag_resolve(const RnicMrTable *t, uint32_t stag,
                                      const RnicPd *pd, bool remote,
                                      const RnicQp *qp, uint64_t va,
                                      uint64_t len, uint32_t access,
                                      RnicMr **out)
{
    RnicMr *mr = rnic_mrt_lookup(t, RNIC_STAG_INDEX(stag));
    RnicXlateErr err;

    *out = NULL;
    if (!mr) {
        return RNIC_XLATE_NO_ENTRY;
    }
    err = rnic_mr_check(mr, stag, pd, va, len, access);
    if (err) {
        return err;
    }
    if (mr->kind == RNIC_MR_KIND_MW) {
        return remote ? rnic_mw_target(mr, qp, va, len, out) :
                        RNIC_XLATE_WINDOW;
    }
    *out = mr;
    return RNIC_XLATE_OK;
}

RnicXlateErr rnic_mr_resolve(RnicNetCtx *ctx, uint32_t stag, const RnicPd *pd,
                             uint64_t va, uint64_t len, uint32_t access,
                             RnicMr **out)
{
    return rnic_stag_resolve(&ctx->mrt, stag, pd, true, NULL, va, len, access,
                             out);
}

RnicXlateErr rnic_qp_rkey_resolve(const RnicQp *qp, uint32_t rkey,
                                  uint64_t va, uint64_t len, uint32_t access,
                                  RnicMr **out)
{
    return rnic_stag_resolve(&qp->ctx->mrt, rkey, qp->pd, true, qp, va, len,
                             access, out);
}

RnicXlateErr rnic_mrt_resolve(const RnicMrTable *t, uint32_t stag,
                              const RnicPd *pd, uint64_t va, uint64_t len,
                              uint32_t access, RnicMr **out)
{
    return rnic_stag_resolve(t, stag, pd, false, NULL, va, len, access, out);
}

RnicXlateErr rnic_mr_check(const RnicMr *mr, uint32_t stag, const RnicPd *pd,
                           uint64_t va, uint64_t len, uint32_t access)
{
    /*
     * the key byte is checked on every access; in an SCM region's it
     * carries the request's storage semantic (rnic-scm.c)
     */
    if (mr->kind == RNIC_MR_KIND_SCM) {
        RnicXlateErr err = rnic_scm_check_key(mr, stag, va, len, access);

        if (err) {
            return err;
        }
    } else if (mr->stag != stag) {
        return RNIC_XLATE_KEY;
    }
    if (mr->state != RNIC_MR_VALID) {
        return RNIC_XLATE_STATE;
    }
    if (pd && mr->pd != pd) {
        return RNIC_XLATE_PD;
    }
    if ((mr->access & access) != access) {
        return RNIC_XLATE_ACCESS;
    }
    if (!rnic_mr_range_ok(mr, va, len)) {
        return RNIC_XLATE_BOUNDS;
    }
    if (mr->kind == RNIC_MR_KIND_MAPPED) {
        return rnic_map_check(mr, va, len, access);
    }
    return RNIC_XLATE_OK;
}

/*
 * Guest address of region byte 'va' and the length of the DMA-contiguous run
 * from there, at most 'max' (pages that follow each other are merged); a
 * mapped entry's runs end at its segments' ends. *run 0: a mapped entry's
 * member no longer passes its checks ('write': for a write).
 */
static uint64_t rnic_mr_run(const RnicMr *mr, uint64_t va, uint64_t max,
                            bool write, uint32_t *hint, uint64_t *run)
{
    const RnicPbl *p;
    uint64_t pgsz, off, idx, in, addr, len;

    if (mr->kind == RNIC_MR_KIND_MAPPED) {
        uint64_t mva, avail;

        mr = mr->map ? rnic_map_locate(mr, va, max, write, hint, &mva,
                                       &avail) : NULL;
        if (!mr) {
            *run = 0;
            return 0;
        }
        va = mva;
        max = avail;
    }
    p = mr->pbl;
    pgsz = 1ull << p->page_shift;
    off = va - mr->iova + (mr->iova & (pgsz - 1));

    if (p->contiguous) {
        *run = max;
        return p->pages[0] + off;
    }
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

bool rnic_mr_segs(const RnicMr *mr, uint64_t va, uint64_t len,
                  RnicDmaSeg *segs, uint32_t *nsegs, uint32_t max)
{
    uint32_t hint = 0;

    while (len) {
        uint64_t run;
        uint64_t addr = rnic_mr_run(mr, va, len, false, &hint, &run);
        RnicDmaSeg *prev = *nsegs ? &segs[*nsegs - 1] : NULL;

        if (!run) {
            return false;
        }
        if (prev && prev->addr + prev->len == addr) {
            prev->len += run;
        } else {
            if (*nsegs >= max) {
                return false;
            }
            segs[*nsegs].addr = addr;
            segs[*nsegs].len = run;
            (*nsegs)++;
        }
        va += run;
        len -= run;
    }
    return true;
}

int rnic_mr_write(RnicEngine *e, const RnicMr *mr, uint64_t va,
                  const void *buf, uint64_t len)
{
    const uint8_t *p = buf;
    uint32_t hint = 0;

    while (len) {
        uint64_t run;
        uint64_t addr = rnic_mr_run(mr, va, len, true, &hint, &run);

        if (!run || rnic_dma_write(e, addr, p, run)) {
            return -1;
        }
        p += run;
        va += run;
        len -= run;
    }
    return 0;
}

int rnic_mr_read(RnicEngine *e, const RnicMr *mr, uint64_t va,
                 void *buf, uint64_t len)
{
    uint8_t *p = buf;
    uint32_t hint = 0;

    while (len) {
        uint64_t run;
        uint64_t addr = rnic_mr_run(mr, va, len, false, &hint, &run);

        if (!run || rnic_dma_read(e, addr, p, run)) {
            return -1;
        }
        p += run;
        va += run;
        len -= run;
    }
    return 0;
}

int rnic_mr_place(RnicEngine *e, const RnicMr *mr, uint64_t va,
                  const RnicPayload *pl, uint32_t off, uint32_t len)
{
    uint32_t si = 0, soff, hint = 0;

    if (pl->data) {
        return rnic_mr_write(e, mr, va, pl->data + off, len);
    }
    /* find the source segment holding payload byte 'off' */
    while (si < pl->nsegs && off >= pl->segs[si].len) {
        off -= pl->segs[si].len;
        si++;
    }
    soff = off;
    while (len) {
        uint64_t run;
        uint64_t dst = rnic_mr_run(mr, va, len, true, &hint, &run);

        if (!run) {
            return -1;
        }
        while (run) {
            uint64_t n;

            if (si >= pl->nsegs) {
                return -1;
            }
            n = MIN(run, (uint64_t)pl->segs[si].len - soff);
            if (rnic_dma_copy(e, dst, pl->segs[si].addr + soff, n)) {
                return -1;
            }
            dst += n;
            va += n;
            run -= n;
            len -= n;
            soff += n;
            if (soff == pl->segs[si].len) {
                si++;
                soff = 0;
            }
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Replay (state load)                                                    */
/* ---------------------------------------------------------------------- */

/*
 * A record of a mapped STag's registration: its table (checked when it was
 * loaded, rnic_map_new) fits the entry. Its members are not looked for:
 * they are resolved at each access, whatever the order of the log.
 */
static const char *rnic_reglog_map_check(const RnicRegLogRec *rec,
                                         uint32_t max_segs)
{
    if (!rec->map || rec->pbl) {
        return "registration without its segment table";
    }
    if (rec->map->nsegs > max_segs) {
        return "more segments than the entry holds";
    }
    if (rec->length != rec->map->unit * rec->map->repeat ||
        rec->iova + rec->length < rec->iova) {
        return "length does not match the segments, or iova wraps";
    }
    return rnic_map_check_access(rec->access);
}

bool rnic_reglog_replay(RnicEngine *e, const RnicRegLogRec *rec, char **err)
{
    bool mnet = rec->net_ctx == RNIC_PD_MULTI_NET;
    RnicNetCtx *ctx = mnet ? NULL : rnic_netctx_lookup(e, rec->net_ctx);
    uint32_t index = RNIC_STAG_INDEX(rec->stag);
    RnicMrTable *t;
    RnicPd *pd;
    RnicMr *mr;
    const char *why;

    if (!ctx && !mnet) {
        *err = g_strdup_printf("registration log: STag 0x%x in unknown "
                               "network context %u", rec->stag, rec->net_ctx);
        return false;
    }
    t = ctx ? &ctx->mrt : &e->mnet_mrt;
    mr = rnic_mrt_lookup(t, index);
    if (mr && mr->ctx != ctx) {
        mr = NULL;              /* a replica: not this record's table */
    }
    switch (rec->op) {
    case RNIC_REGLOG_REG:
    case RNIC_REGLOG_ALLOC:
        pd = rnic_pd_lookup(e, rec->pd);
        if (!pd || pd->ctx != ctx || pd->owner != rec->owner) {
            *err = g_strdup_printf("registration log: STag 0x%x names PD %u "
                                   "which is not in its context", rec->stag,
                                   rec->pd);
            return false;
        }
        if (rec->map && rec->kind != RNIC_MR_KIND_MAPPED) {
            *err = g_strdup_printf("registration log: STag 0x%x of kind %u "
                                   "with a segment table", rec->stag,
                                   rec->kind);
            return false;
        }
        if (rec->kind == RNIC_MR_KIND_SCM) {
            why = rnic_scm_check_replay(e, rec);
            if (why) {
                *err = g_strdup_printf("registration log: SCM STag 0x%x: %s",
                                       rec->stag, why);
                return false;
            }
        } else if (rec->kind == RNIC_MR_KIND_MAPPED) {
            why = rec->op == RNIC_REGLOG_REG ?
                rnic_reglog_map_check(rec, RNIC_MAP_MAX_SEGS) :
                (!rec->max_pages || rec->max_pages > RNIC_MAP_MAX_SEGS) ?
                "bad segment capacity" : NULL;
            if (why) {
                *err = g_strdup_printf("registration log: mapped STag 0x%x: "
                                       "%s", rec->stag, why);
                return false;
            }
        } else if (rec->kind != RNIC_MR_KIND_MEM) {
            *err = g_strdup_printf("registration log: STag 0x%x of kind %u",
                                   rec->stag, rec->kind);
            return false;
        } else if (rec->op == RNIC_REGLOG_REG) {
            if (!rec->pbl) {
                *err = g_strdup("registration log: REG without page list");
                return false;
            }
            why = rnic_mr_check_region(rec->iova, rec->length, rec->access,
                                       rec->pbl->page_shift, rec->pbl->npages);
            if (!why) {
                why = rnic_pbl_check(rec->pbl);
            }
            if (why) {
                *err = g_strdup_printf("registration log: STag 0x%x: %s",
                                       rec->stag, why);
                return false;
            }
        } else if (!rec->max_pages ||
                   rec->max_pages > RNIC_MR_MAX_FAST_REG_PAGES) {
            *err = g_strdup_printf("registration log: STag 0x%x: bad page "
                                   "capacity %u", rec->stag, rec->max_pages);
            return false;
        }
        if (!rnic_mr_room(e, pd)) {
            *err = g_strdup_printf("registration log: STag 0x%x does not fit: "
                                   "the mapping table of network context %u "
                                   "is full (max-mrs=%u)", rec->stag,
                                   rec->net_ctx, e->cfg.max_mr);
            return false;
        }
        if (!index || index >= t->range) {
            *err = g_strdup_printf("registration log: STag 0x%x does not fit: "
                                   "its index is beyond this device's STag "
                                   "space of %u (max-mrs=%u)", rec->stag,
                                   t->range, e->cfg.max_mr);
            return false;
        }
        mr = rnic_mr_insert(e, pd, rec->owner, index, RNIC_STAG_KEY(rec->stag));
        if (!mr) {
            *err = g_strdup_printf("registration log: STag 0x%x: index already "
                                   "in use", rec->stag);
            return false;
        }
        mr->kind = rec->kind;
        if (rec->op == RNIC_REGLOG_REG) {
            mr->state = RNIC_MR_VALID;
            mr->access = rec->access;
            mr->iova = rec->iova;
            mr->length = rec->length;
            mr->pbl = rnic_pbl_ref(rec->pbl);
            mr->map = rnic_map_ref(rec->map);
        } else {
            mr->state = RNIC_MR_INVALID;
            mr->fast_reg = true;
            mr->max_pages = rec->max_pages;
        }
        break;
    case RNIC_REGLOG_FAST_REG:
        if (mr && mr->fast_reg && mr->kind == RNIC_MR_KIND_MAPPED) {
            why = rnic_reglog_map_check(rec, mr->max_pages);
            if (why) {
                *err = g_strdup_printf("registration log: mapped STag 0x%x: "
                                       "%s", rec->stag, why);
                return false;
            }
            rnic_map_unref(e, mr->map);
            mr->map = rnic_map_ref(rec->map);
            rnic_mr_fast_reg_done(e, mr, rec->stag, rec->iova, rec->length,
                                  rec->access);
            return true;
        }
        if (!mr || !mr->fast_reg || !rec->pbl || rec->map) {
            *err = g_strdup_printf("registration log: fast-register of "
                                   "unknown STag 0x%x", rec->stag);
            return false;
        }
        why = rnic_mr_check_region(rec->iova, rec->length, rec->access,
                                   rec->pbl->page_shift, rec->pbl->npages);
        if (!why) {
            why = rnic_pbl_check(rec->pbl);
        }
        if (!why && (rec->pbl->contiguous ||
                     rec->pbl->npages > mr->max_pages)) {
            why = "page list does not fit the MR";
        }
        if (why) {
            *err = g_strdup_printf("registration log: STag 0x%x: %s",
                                   rec->stag, why);
            return false;
        }
        rnic_pbl_unref(e, mr->pbl);
        mr->pbl = rnic_pbl_ref(rec->pbl);
        rnic_mr_fast_reg_done(e, mr, rec->stag, rec->iova, rec->length,
                              rec->access);
        return true;
    case RNIC_REGLOG_INVALIDATE:
        if (!mr || !mr->fast_reg) {
            *err = g_strdup_printf("registration log: invalidate of unknown "
                                   "STag 0x%x", rec->stag);
            return false;
        }
        mr->state = RNIC_MR_INVALID;
        break;
    case RNIC_REGLOG_DEREG:
        if (!mr || mr->stag != rec->stag) {
            *err = g_strdup_printf("registration log: deregistration of "
                                   "unknown STag 0x%x", rec->stag);
            return false;
        }
        rnic_reglog_append(e, RNIC_REGLOG_DEREG, mr);
        rnic_mr_remove(e, mr);
        rnic_reglog_compact(e, false);
        return true;
    default:
        *err = g_strdup_printf("registration log: unknown record %u", rec->op);
        return false;
    }
    rnic_reglog_append(e, rec->op, mr);
    rnic_reglog_compact(e, false);
    rnic_mr_changed(e, mr);
    return true;
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
