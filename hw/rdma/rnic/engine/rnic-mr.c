/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: per-network mapping tables (patent a), STag allocation and
 * the translation path.
 *
 * A mapping-table entry joins the virtual region the consumer registered
 * (iova, length, access, PD, kind) to what maps it (the page list of guest
 * DMA addresses copied from the guest at registration, a range of the
 * device's window, a set of other entries, another entry: its kind,
 * rnic-mr.h). Every access to registered memory goes through
 * rnic_mr_resolve() and its siblings: key, state, PD, rights, bounds and
 * the kind's own rules are checked before a single byte moves, and the
 * bytes then move only through RnicHostOps, run by run.
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
 * The commands that create and change entries are in rnic-mr-cmd.c; the
 * registration log that records every change, for the migration to
 * replay, in rnic-reglog.c.
 */
#include <string.h>
#include "rnic-mr.h"

const RnicMrKind *const rnic_mr_kinds[RNIC_MR_KIND_COUNT] = {
    [RNIC_MR_KIND_MEM] = &rnic_mr_kind_mem,
    [RNIC_MR_KIND_SCM] = &rnic_mr_kind_scm,
    [RNIC_MR_KIND_MAPPED] = &rnic_mr_kind_mapped,
    [RNIC_MR_KIND_MW] = &rnic_mr_kind_mw,
};

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
        rnic_mrt_user(e, index, 1);
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
    const RnicMrKind *k = rnic_mr_kind(mr);

    if (k->release) {
        k->release(e, mr);
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
void rnic_mr_init(RnicEngine *e)
{
    rnic_reglog_init(e);
    e->mrt_users = g_new0(uint16_t, rnic_mrt_range(&e->cfg));
    e->mrt_unused = g_new(uint64_t, rnic_mrt_range(&e->cfg) / 64);
    memset(e->mrt_unused, 0xff, rnic_mrt_range(&e->cfg) / 8);
    e->mrt_unused[0] &= ~1ull;      /* index 0 is never an STag's */
    rnic_mrt_init(e, &e->mnet_mrt);
}

void rnic_mr_fini(RnicEngine *e)
{
    rnic_reglog_fini(e);
    rnic_mrt_free(e, &e->mnet_mrt, NULL);
    g_free(e->mrt_users);
    g_free(e->mrt_unused);
}

bool rnic_pd_bound(const RnicEngine *e, const RnicPd *pd, uint32_t c)
{
    return pd->binds && c < e->cfg.max_net_ctx && pd->binds[c];
}

RnicMrTable *rnic_pd_lkeys(RnicEngine *e, const RnicPd *pd)
{
    return pd->ctx ? &pd->ctx->mrt : &e->mnet_mrt;
}

void rnic_mr_replicate(RnicEngine *e, const RnicPd *pd, uint32_t idx,
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

bool rnic_mr_room(RnicEngine *e, const RnicPd *pd)
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

void rnic_mr_remove(RnicEngine *e, RnicMr *mr)
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
 * QP in particular) or a local key. One dispatch on the entry's kind: its
 * checks, then the entry the access goes to.
 */
static RnicXlateErr rnic_stag_resolve(const RnicMrTable *t, uint32_t stag,
                                      const RnicPd *pd, bool remote,
                                      const RnicQp *qp, uint64_t va,
                                      uint64_t len, uint32_t access,
                                      RnicMr **out)
{
    RnicMr *mr = rnic_mrt_lookup(t, RNIC_STAG_INDEX(stag));
    const RnicMrKind *k;
    RnicXlateErr err;

    *out = NULL;
    if (!mr) {
        return RNIC_XLATE_NO_ENTRY;
    }
    k = rnic_mr_kind(mr);
    err = k->check(mr, stag, pd, va, len, access);
    if (err) {
        return err;
    }
    if (k->target) {
        return k->target(mr, remote, qp, va, len, out);
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

RnicXlateErr rnic_mr_check_entry(const RnicMr *mr, const RnicPd *pd,
                                 uint64_t va, uint64_t len, uint32_t access)
{
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
    return RNIC_XLATE_OK;
}

RnicXlateErr rnic_mr_check_keyed(const RnicMr *mr, uint32_t stag,
                                 const RnicPd *pd, uint64_t va, uint64_t len,
                                 uint32_t access)
{
    if (mr->stag != stag) {
        return RNIC_XLATE_KEY;
    }
    return rnic_mr_check_entry(mr, pd, va, len, access);
}

RnicXlateErr rnic_mr_check(const RnicMr *mr, uint32_t stag, const RnicPd *pd,
                           uint64_t va, uint64_t len, uint32_t access)
{
    return rnic_mr_kind(mr)->check(mr, stag, pd, va, len, access);
}

/* The DMA run of entry byte 'va' (its kind's 'run'). */
static inline uint64_t rnic_mr_run(const RnicMr *mr, uint64_t va,
                                   uint64_t max, bool write, uint32_t *hint,
                                   uint64_t *run)
{
    return rnic_mr_kind(mr)->run(mr, va, max, write, hint, run);
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
