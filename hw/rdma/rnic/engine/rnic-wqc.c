/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the WQE translation cache (patent d, US 9,497,268).
 *
 * A WQE as the guest writes it (type 1) names its buffers by SGEs {addr,
 * length, lkey}; what the engine executes (type 2) has each SGE resolved
 * to its region's entry, its key, PD, bounds and rights checked. Guests
 * post the same SGE lists again and again (perftest's buffer cycle, RPC
 * loops, storage ULPs with fixed buffers), so each QP keeps a small table
 * of the lists it translated, found by a fingerprint of the list: a
 * repeated list is a lookup, not a translation.
 *
 * What is cached is exactly the translation's input and output: the SGE
 * list as posted and the access it was resolved for, and the resolved
 * regions. A hit compares the posted bytes too, so no fingerprint
 * collision a guest can arrange changes what it gets. Everything else a
 * WQE says (wr_id, flags, immediate, remote address and key, inline data)
 * is read from the fresh WQE every time and its checks re-run: they cost
 * a few compares.
 *
 * Correct by construction: an entry records the version of each region it
 * resolved (RnicMr.gen, renewed by every change: fast-register, local and
 * remote invalidation, registration-log replay; a new region has a new
 * one) and of the QP's attributes (RnicQp.wqc_gen, renewed by every
 * MODIFY_QP and reset). A hit is only served when the QP's version is the
 * one the entry was made under and, if any region changed anywhere since
 * the entry was last checked (RnicEngine.mr_gen moved), each SGE's key
 * still finds, in the live mapping table, the very region it found then,
 * at the same version. The cached pointer is only compared, never followed
 * unless the live table returned it: a deregistered region's entry is
 * never touched.
 *
 * Derived state: never migrated (a loaded QP starts without a cache),
 * freed with the QP, not kept across a device reset. Bounded: per QP
 * RNIC_WQC_WAYS-way sets of entries of at most RNIC_WQC_MAX_SGE SGEs, as
 * many entries as the QP has send and receive slots (a ULP's buffers are
 * per slot: NVMe-oF's 128 command slots per queue each have a capsule, a
 * response and a receive list), RNIC_WQC_MIN_ENTRIES to
 * RNIC_WQC_MAX_ENTRIES, allocated when the QP first posts a list it could
 * hold; each table charged to the host memory budget (rnic_mem_charge)
 * and all of them together at most an eighth of it (a QP past either runs
 * without one). x-wqe-cache=off (rnic_engine_set_wqe_cache) turns it off
 * and frees the tables.
 */
#include <string.h>
#include "rnic-mr.h"

#define RNIC_WQC_WAYS       8
#define RNIC_WQC_MIN_ENTRIES 128
#define RNIC_WQC_MAX_ENTRIES 1024
#define RNIC_WQC_LINE(n)    (((n) + 63) & ~(size_t)63)
/*
 * After this many misses in a row (a QP whose lists never repeat), only
 * one list in RNIC_WQC_COLD_EVERY is looked up and entered, until a hit:
 * a stream of unique lists pays a sixteenth of the misses' cost.
 */
#define RNIC_WQC_COLD_AFTER 64
#define RNIC_WQC_COLD_EVERY 16

/*
 * One SGE of an entry with what it resolved to, and one of the message's
 * DMA segments (seg of the first nsegs of them): what a hit reads of one
 * SGE lies together.
 */
typedef struct RnicWqcSge {
    struct rnic_sge key;        /* as posted (little endian) */
    RnicMr *mr;                 /* NULL: an empty SGE */
    RnicDmaSeg seg;
} RnicWqcSge;

/*
 * An entry, laid out for the hit: what a hit reads, in the order it reads
 * it, and nothing else (a QP's table is larger than a core's L1, so each
 * line a hit touches costs): the header, then per SGE the SGE as posted,
 * its region and a DMA segment, so that a hit on a list of n SGEs reads
 * the first 24 + 40 n bytes (one cache line for one SGE, entries being
 * line aligned). The regions' versions, only read after a change to some
 * region, lie apart (RnicWqc.mr_gen).
 */
typedef struct RnicWqcEntry {
    uint8_t nsge;
    uint8_t nsegs;              /* sge[].seg (0: not computed) */
    uint32_t access;            /* what the SGEs were resolved for */
    uint32_t qp_gen;            /* RnicQp.wqc_gen it was made under */
    uint32_t length;            /* total bytes */
    uint64_t mr_epoch;          /* RnicEngine.mr_gen when last checked */
    RnicWqcSge sge[RNIC_WQC_MAX_SGE];
} __attribute__((aligned(64))) RnicWqcEntry;

/*
 * The table, in one allocation: this header, then per set its ways'
 * fingerprints (one probe, one line), their LRU stamps, the entries (line
 * aligned) and the regions' versions.
 */
struct RnicWqc {
    void *alloc;                /* what to free: the table is line aligned */
    uint64_t bytes;             /* counted against the budget */
    uint32_t clock;
    uint32_t set_shift;         /* a probe's hash >> set_shift: its set */
    uint64_t (*fp)[RNIC_WQC_WAYS];                  /* 0: empty */
    uint32_t (*used)[RNIC_WQC_WAYS];
    RnicWqcEntry (*ent)[RNIC_WQC_WAYS];
    /* ent[][].sge[i].mr's RnicMr.gen when resolved */
    uint64_t (*mr_gen)[RNIC_WQC_WAYS][RNIC_WQC_MAX_SGE];
};

/* Off: every table is freed (their bytes back to the budget). */
void rnic_wqc_reclaim(RnicEngine *e)
{
    uint32_t i;
    RnicQp *qp;

    RNIC_TABLE_FOREACH(&e->qps, i, qp) {
        rnic_wqc_free(e, qp);
    }
}

void rnic_engine_set_wqe_cache(RnicEngine *e, bool on)
{
    e->wqc_on = on;
    if (!on) {
        rnic_wqc_reclaim(e);
    }
}

/*
 * The fingerprint: the list's words folded (xor, a rotation apart so that
 * swapped fields differ) and mixed once by a multiply, never 0. It only
 * picks the way to compare: a collision, chosen or not, costs a compare.
 * The set: the first buffer's address in 64-byte units (and its key),
 * multiplied by 2^64 / the golden ratio, the top bits (the table's
 * set_shift), so that buffers a stride apart (a cycle of 64-byte messages
 * in 4 KiB, of pages in a region) spread evenly over the sets instead of
 * by chance.
 */
static void rnic_wqc_probe(uint32_t access, const struct rnic_sge *sg,
                           uint32_t nsge, RnicWqcProbe *p)
{
    uint64_t h = (uint64_t)access << 8 | nsge;
    uint64_t x = GUINT64_FROM_LE(sg[0].addr) >> 6;
    uint32_t i;

    /* each SGE rotated by its position: no dependency chain between them */
    for (i = 0; i < nsge; i++) {
        uint64_t w[2], v;

        memcpy(w, &sg[i], sizeof(w));
        v = w[0] ^ ((w[1] << 7) | (w[1] >> 57));
        h ^= i ? (v << (i * 9)) | (v >> (64 - i * 9)) : v;
    }
    h *= 0x9e3779b97f4a7c15ull;
    p->fp = (h ^ (h >> 31)) | 1;
    x ^= (uint64_t)(GUINT32_FROM_LE(sg[0].lkey) >> 8) << 40;
    p->set_hash = x * 0x9e3779b97f4a7c15ull;
}

/* Is entry c the list sg, resolved for access? (the bytes, not the hash) */
static bool rnic_wqc_same(const RnicWqcEntry *c, uint32_t access,
                          const struct rnic_sge *sg, uint32_t nsge)
{
    uint32_t i;

    if (c->nsge != nsge || c->access != access) {
        return false;
    }
    for (i = 0; i < nsge; i++) {
        uint64_t a[2], b[2];

        memcpy(a, &c->sge[i].key, sizeof(a));
        memcpy(b, &sg[i], sizeof(b));
        if ((a[0] ^ b[0]) | (a[1] ^ b[1])) {
            return false;
        }
    }
    return true;
}

/* Does every SGE's key still find the region, unchanged, it found then? */
static bool rnic_wqc_current(RnicEngine *e, const RnicPd *pd,
                             const RnicWqcEntry *c, const uint64_t *mr_gen)
{
    const RnicMrTable *t = rnic_pd_lkeys(e, pd);
    uint32_t i;

    for (i = 0; i < c->nsge; i++) {
        uint32_t lkey = GUINT32_FROM_LE(c->sge[i].key.lkey);
        const RnicMr *mr;

        if (!c->sge[i].mr) {
            continue;           /* an empty SGE names no region */
        }
        mr = rnic_mrt_lookup(t, RNIC_STAG_INDEX(lkey));
        if (mr != c->sge[i].mr || mr->gen != mr_gen[i]) {
            return false;
        }
    }
    return true;
}

bool rnic_wqc_lookup(RnicEngine *e, RnicQp *qp, const RnicPd *pd,
                     uint32_t access, const struct rnic_sge *sg, uint32_t nsge,
                     RnicSgeList *out, RnicWqcProbe *probe)
{
    RnicWqc *wqc = qp->wqc;
    RnicWqcEntry *c;
    uint32_t set, w, i;

    probe->fp = 0;
    if (!e->wqc_on || !nsge || nsge > RNIC_WQC_MAX_SGE) {
        return false;
    }
    /* lists that never repeat: only every RNIC_WQC_COLD_EVERY-th tried */
    if (qp->wqc_cold >= RNIC_WQC_COLD_AFTER &&
        (qp->wqc_cold++ % RNIC_WQC_COLD_EVERY)) {
        return false;
    }
    rnic_wqc_probe(access, sg, nsge, probe);
    if (!wqc) {
        qp->wqc_cold++;
        rnic_stat_inc(e, RNIC_STAT_WQC_MISSES);
        return false;
    }
    set = probe->set_hash >> wqc->set_shift;
    for (w = 0; w < RNIC_WQC_WAYS; w++) {
        if (wqc->fp[set][w] == probe->fp &&
            rnic_wqc_same(&wqc->ent[set][w], access, sg, nsge)) {
            break;
        }
    }
    if (w == RNIC_WQC_WAYS) {
        qp->wqc_cold++;
        rnic_stat_inc(e, RNIC_STAT_WQC_MISSES);
        return false;
    }
    c = &wqc->ent[set][w];
    if (c->qp_gen != qp->wqc_gen ||
        (c->mr_epoch != e->mr_gen &&
         !rnic_wqc_current(e, pd, c, wqc->mr_gen[set][w]))) {
        wqc->fp[set][w] = 0;
        rnic_stat_inc(e, RNIC_STAT_WQC_STALE);
        rnic_stat_inc(e, RNIC_STAT_WQC_MISSES);
        return false;
    }
    c->mr_epoch = e->mr_gen;
    wqc->used[set][w] = ++wqc->clock;
    qp->wqc_cold = 0;
    for (i = 0; i < nsge; i++) {
        out->sge[i].addr = GUINT64_FROM_LE(sg[i].addr);
        out->sge[i].length = GUINT32_FROM_LE(sg[i].length);
        out->sge[i].lkey = GUINT32_FROM_LE(sg[i].lkey);
        out->sge[i].mr = c->sge[i].mr;
    }
    /* out->segs[] (NULL: not wanted) holds RNIC_WQC_MAX_SGE */
    out->length = c->length;
    out->nsegs = 0;
    if (out->segs) {
        for (i = 0; i < c->nsegs; i++) {
            out->segs[i] = c->sge[i].seg;
        }
        out->nsegs = c->nsegs;
    }
    rnic_stat_inc(e, RNIC_STAT_WQC_HITS);
    return true;
}

/* Entries for qp: one per send and receive slot, a power of two. */
static uint32_t rnic_wqc_entries(const RnicQp *qp)
{
    uint32_t slots = (1u << qp->sq_log) +
                     (qp->srq ? 1u << qp->srq->log_size : 1u << qp->rq_log);
    uint32_t n = RNIC_WQC_MIN_ENTRIES;

    while (n < slots && n < RNIC_WQC_MAX_ENTRIES) {
        n <<= 1;
    }
    return n;
}

/*
 * qp's table, made on its first insert and charged to the host memory
 * budget (NULL: past the caches' eighth of the budget, or past the budget
 * itself; the QP runs without one, and tries again at its next insert).
 */
static RnicWqc *rnic_wqc_get(RnicEngine *e, RnicQp *qp)
{
    uint64_t budget = (uint64_t)e->cfg.mem_budget_mib << 20;
    uint64_t cap = budget / 8;
    uint32_t n, sets;
    size_t fp, used, ent, gen, bytes;
    RnicWqc *wqc;
    void *alloc;
    uint8_t *base;

    if (qp->wqc) {
        return qp->wqc;
    }
    n = rnic_wqc_entries(qp);
    sets = n / RNIC_WQC_WAYS;
    /* the parts' offsets from the line-aligned start */
    fp = RNIC_WQC_LINE(sizeof(RnicWqc));
    used = fp + RNIC_WQC_LINE(sizeof(uint64_t) * n);
    ent = used + RNIC_WQC_LINE(sizeof(uint32_t) * n);
    gen = ent + sizeof(RnicWqcEntry) * n;
    bytes = gen + sizeof(uint64_t) * RNIC_WQC_MAX_SGE * n;
    /*
     * a table is optional: one that does not fit is not made, and is not
     * the guest's error (no ERR_MEM_BUDGET event, which rnic_mem_charge
     * sends when it refuses)
     */
    if (e->wqc_bytes + bytes > cap || e->mem_used > budget - bytes ||
        !rnic_mem_charge(e, bytes)) {
        return NULL;
    }
    /* line aligned by hand: g_aligned_alloc0() is glib 2.72, QEMU 2.66 */
    alloc = g_try_malloc0(bytes + 63);
    if (!alloc) {
        rnic_mem_release(e, bytes);
        return NULL;
    }
    base = (uint8_t *)(((uintptr_t)alloc + 63) & ~(uintptr_t)63);
    wqc = (RnicWqc *)base;
    wqc->alloc = alloc;
    wqc->bytes = bytes;
    wqc->set_shift = 64 - __builtin_ctz(sets);
    wqc->fp = (void *)(base + fp);
    wqc->used = (void *)(base + used);
    wqc->ent = (void *)(base + ent);
    wqc->mr_gen = (void *)(base + gen);
    e->wqc_bytes += bytes;
    qp->wqc = wqc;
    return wqc;
}

void rnic_wqc_insert(RnicEngine *e, RnicQp *qp, const RnicWqcProbe *probe,
                     uint32_t access, const struct rnic_sge *sg,
                     const RnicSgeList *res, uint32_t nsge)
{
    RnicWqc *wqc;
    RnicWqcEntry *c;
    uint32_t set, w, v, i;

    if (!probe->fp) {
        return;                 /* not looked up (the cache is off, ...) */
    }
    /*
     * a translation that depends on other entries too (a mapped STag's
     * members), whose versions an entry does not record: not kept
     */
    for (i = 0; i < nsge; i++) {
        if (res->sge[i].mr &&
            !(rnic_mr_kind(res->sge[i].mr)->flags & RNIC_MRK_CACHEABLE)) {
            return;
        }
    }
    if (!(wqc = rnic_wqc_get(e, qp))) {
        return;
    }
    set = probe->set_hash >> wqc->set_shift;
    /* an empty way, else the least recently used */
    for (v = 0, w = 0; w < RNIC_WQC_WAYS; w++) {
        if (!wqc->fp[set][w]) {
            v = w;
            break;
        }
        if ((int32_t)(wqc->used[set][w] - wqc->used[set][v]) < 0) {
            v = w;
        }
    }
    wqc->fp[set][v] = probe->fp;
    wqc->used[set][v] = ++wqc->clock;
    c = &wqc->ent[set][v];
    c->mr_epoch = e->mr_gen;
    c->qp_gen = qp->wqc_gen;
    c->access = access;
    c->length = res->length;
    c->nsge = nsge;
    c->nsegs = res->nsegs;
    for (i = 0; i < nsge; i++) {
        c->sge[i].key = sg[i];
        c->sge[i].mr = res->sge[i].mr;
        wqc->mr_gen[set][v][i] = c->sge[i].mr ? c->sge[i].mr->gen : 0;
    }
    for (i = 0; i < res->nsegs; i++) {
        c->sge[i].seg = res->segs[i];
    }
}

/* Every table's end: QP destroy (so device reset, engine free), off. */
void rnic_wqc_free(RnicEngine *e, RnicQp *qp)
{
    if (qp->wqc) {
        e->wqc_bytes -= qp->wqc->bytes;
        rnic_mem_release(e, qp->wqc->bytes);
        g_free(qp->wqc->alloc);
        qp->wqc = NULL;
    }
}
