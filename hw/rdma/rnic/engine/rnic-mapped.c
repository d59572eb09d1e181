/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: mapped STags over a set of buffers (patent f, US 8,909,727).
 *
 * A requester maps a set of its buffers onto one STag and hands that STag
 * out with a request; the data that comes back is scattered over the set
 * by the mapping. Here that is an entry of kind RNIC_MR_KIND_MAPPED whose
 * bytes are a table of segments, each a range of a member region (a MEM
 * entry of the same PD and owner), in the list form or the interleaved one
 * (the ABI's "Mapped STags" comment).
 *
 * Nothing of a member is copied into the mapped entry but its STag: every
 * access resolves each member it touches again, with the member's current
 * key, state, PD, bounds and rights (rnic_map_check at the resolve gate,
 * rnic_map_locate again for every run of bytes moved), so a member that is
 * deregistered, invalidated or re-registered under a mapped STag makes the
 * accesses through it fail cleanly and never reach its old pages. The
 * table is immutable once built and shared with the registration log;
 * replaying it needs no member (they are looked up at access time), so the
 * order in which a migration's log brings members and mapped entries back
 * does not matter.
 *
 * Bounded work: a table has at most RNIC_MAP_MAX_SEGS segments (its memory
 * charged), an interleaved one at most RNIC_MAP_MAX_INTERLEAVED (checked
 * pairwise for overlap); an access checks the segments it covers (list
 * form: found by binary search) or, interleaved, each segment once.
 */
#include <string.h>
#include "rnic-mr.h"

static uint64_t rnic_map_bytes(uint32_t nsegs)
{
    return sizeof(RnicMap) + (uint64_t)nsegs * sizeof(RnicMapSeg);
}

RnicMap *rnic_map_ref(RnicMap *map)
{
    if (map) {
        map->refs++;
    }
    return map;
}

void rnic_map_unref(RnicEngine *e, RnicMap *map)
{
    if (map && --map->refs == 0) {
        rnic_mem_release(e, rnic_map_bytes(map->nsegs));
        g_free(map);
    }
}

const char *rnic_map_check_access(uint32_t access)
{
    if (access & ~RNIC_ACCESS_ALL) {
        return "unknown access bits";
    }
    if ((access & (RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_ATOMIC)) &&
        !(access & RNIC_ACCESS_LOCAL_WRITE)) {
        return "remote write/atomic access needs local write access";
    }
    if (access & (RNIC_ACCESS_MW_BIND | RNIC_ACCESS_FLUSH_PERSISTENT)) {
        return "windows and persistence are not for mapped STags";
    }
    return NULL;
}

/* The member bytes repetition 0 .. repeat - 1 of a segment span. */
static uint64_t rnic_map_span(const RnicMapSeg *s, uint32_t repeat)
{
    return (uint64_t)(repeat - 1) * s->stride + s->length;
}

typedef struct RnicMapSpan {
    uint32_t lkey;
    uint64_t lo, hi;            /* [lo, hi) of the member */
} RnicMapSpan;

static gint rnic_map_span_cmp(gconstpointer a, gconstpointer b)
{
    const RnicMapSpan *x = a, *y = b;

    if (x->lkey != y->lkey) {
        return x->lkey < y->lkey ? -1 : 1;
    }
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* List form: no two segments share a member byte (sort, then neighbours). */
static bool rnic_map_list_overlaps(const RnicMap *map)
{
    g_autofree RnicMapSpan *sp = g_new(RnicMapSpan, map->nsegs);
    uint64_t hi = 0;
    uint32_t i;

    for (i = 0; i < map->nsegs; i++) {
        sp[i].lkey = map->segs[i].lkey;
        sp[i].lo = map->segs[i].addr;
        sp[i].hi = map->segs[i].addr + map->segs[i].length;
    }
    qsort(sp, map->nsegs, sizeof(*sp), rnic_map_span_cmp);
    for (i = 0; i < map->nsegs; i++) {
        if (i && RNIC_STAG_INDEX(sp[i].lkey) ==
                 RNIC_STAG_INDEX(sp[i - 1].lkey) && sp[i].lo < hi) {
            return true;
        }
        hi = (i && RNIC_STAG_INDEX(sp[i].lkey) ==
                   RNIC_STAG_INDEX(sp[i - 1].lkey)) ? MAX(hi, sp[i].hi) :
                                                      sp[i].hi;
    }
    return false;
}

/*
 * Interleaved form: segments a and b of one member may share a byte? Two
 * of the same stride that sit apart within it never do (a de-interleaving
 * of one buffer); otherwise their whole spans are compared.
 */
static bool rnic_map_pair_overlaps(const RnicMapSeg *a, const RnicMapSeg *b,
                                   uint32_t repeat)
{
    uint64_t ahi = a->addr + rnic_map_span(a, repeat);
    uint64_t bhi = b->addr + rnic_map_span(b, repeat);
    uint64_t ra, rb;

    if (RNIC_STAG_INDEX(a->lkey) != RNIC_STAG_INDEX(b->lkey) ||
        ahi <= b->addr || bhi <= a->addr) {
        return false;
    }
    if (a->stride != b->stride) {
        return true;
    }
    /* phases of the two within the stride: circular intervals */
    ra = a->addr % a->stride;
    rb = b->addr % a->stride;
    if (ra <= rb) {
        return rb < ra + a->length || ra + a->stride < rb + b->length;
    }
    return ra < rb + b->length || rb + a->stride < ra + a->length;
}

RnicMap *rnic_map_new(RnicEngine *e, const struct rnic_map_seg *in,
                      uint32_t nsegs, uint32_t repeat, uint64_t length,
                      const char **why)
{
    RnicMap *map;
    uint64_t unit = 0;
    uint32_t i, j;

    repeat = repeat ? repeat : 1;
    if (!nsegs || nsegs > RNIC_MAP_MAX_SEGS) {
        *why = "segment count is 0 or beyond the device maximum";
        return NULL;
    }
    if (repeat > 1 && nsegs > RNIC_MAP_MAX_INTERLEAVED) {
        *why = "more interleaved segments than the device allows";
        return NULL;
    }
    if (!rnic_mem_charge(e, rnic_map_bytes(nsegs))) {
        *why = "host memory budget exhausted";
        return NULL;
    }
    map = g_malloc(rnic_map_bytes(nsegs));
    map->refs = 1;
    map->nsegs = nsegs;
    map->repeat = repeat;
    for (i = 0; i < nsegs; i++) {
        RnicMapSeg *s = &map->segs[i];
        uint32_t skip = GUINT32_FROM_LE(in[i].skip);

        s->addr = GUINT64_FROM_LE(in[i].addr);
        s->length = GUINT32_FROM_LE(in[i].length);
        s->lkey = GUINT32_FROM_LE(in[i].lkey);
        s->stride = (uint64_t)s->length + skip;
        s->start = unit;
        if (!s->length || in[i].rsvd) {
            *why = "a segment of length 0, or reserved bits set";
            goto fail;
        }
        if (repeat == 1 && skip) {
            *why = "a skip in the list form (repeat 1)";
            goto fail;
        }
        /*
         * every repetition's bytes addressable: no wrap, and the span
         * itself computed without overflow ((repeat - 1) * stride)
         */
        if (UINT64_MAX - s->addr < s->length ||
            (uint64_t)(repeat - 1) >
            (UINT64_MAX - s->addr - s->length) / s->stride) {
            *why = "a segment's member range wraps around";
            goto fail;
        }
        unit += s->length;      /* at most 4096 * 4 GiB: no overflow */
    }
    map->unit = unit;
    if (length > RNIC_MR_MAX_SIZE || unit > RNIC_MR_MAX_SIZE / repeat ||
        unit * repeat != length) {
        *why = "length is not repeat times the segments' bytes, or beyond "
               "the maximum region size";
        goto fail;
    }
    if (repeat == 1) {
        rnic_work_entries(e, nsegs);
        if (rnic_map_list_overlaps(map)) {
            *why = "two segments overlap in a member";
            goto fail;
        }
    } else {
        rnic_work_entries(e, nsegs * nsegs / 8);
        for (i = 0; i < nsegs; i++) {
            for (j = i + 1; j < nsegs; j++) {
                if (rnic_map_pair_overlaps(&map->segs[i], &map->segs[j],
                                           repeat)) {
                    *why = "two interleaved segments overlap in a member";
                    goto fail;
                }
            }
        }
    }
    return map;

fail:
    rnic_map_unref(e, map);
    return NULL;
}

void rnic_map_export(const RnicMap *map, struct rnic_map_seg *out)
{
    uint32_t i;

    for (i = 0; i < map->nsegs; i++) {
        const RnicMapSeg *s = &map->segs[i];

        out[i].addr = GUINT64_TO_LE(s->addr);
        out[i].length = GUINT32_TO_LE(s->length);
        out[i].lkey = GUINT32_TO_LE(s->lkey);
        out[i].skip = GUINT32_TO_LE((uint32_t)(s->stride - s->length));
        out[i].rsvd = 0;
    }
}

/* The rights a member needs for an access with 'access' to the mapped STag */
static uint32_t rnic_map_member_access(uint32_t access)
{
    return access & (RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
                     RNIC_ACCESS_REMOTE_ATOMIC) ? RNIC_ACCESS_LOCAL_WRITE : 0;
}

/* The live member of segment s, if it passes for [va, va + len), or NULL. */
static const RnicMr *rnic_map_member(const RnicMr *mr, const RnicMapSeg *s,
                                     uint64_t va, uint64_t len,
                                     uint32_t access)
{
    const RnicMr *m = rnic_mrt_lookup(mr->members, RNIC_STAG_INDEX(s->lkey));

    if (!m || !(rnic_mr_kind(m)->flags & RNIC_MRK_MEMBER) ||
        m->owner != mr->owner ||
        rnic_mr_check(m, s->lkey, mr->pd, va, len, access)) {
        return NULL;
    }
    return m;
}

/* The first segment holding repetition offset w (segs sorted by start). */
static uint32_t rnic_map_find(const RnicMap *map, uint64_t w)
{
    uint32_t lo = 0, hi = map->nsegs;

    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (map->segs[mid].start <= w) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* An access's checks: the entry's, then every member's it touches. */
static RnicXlateErr rnic_map_check(const RnicMr *mr, uint32_t stag,
                                   const RnicPd *pd, uint64_t va, uint64_t len,
                                   uint32_t access)
{
    RnicXlateErr err = rnic_mr_check_keyed(mr, stag, pd, va, len, access);
    const RnicMap *map = mr->map;
    uint32_t macc = rnic_map_member_access(access);
    uint64_t o, end;
    uint32_t i;

    if (err || !len) {
        return err;
    }
    o = va - mr->iova;          /* in bounds: checked by the caller */
    end = o + len;
    if (map->repeat == 1) {
        for (i = rnic_map_find(map, o); i < map->nsegs; i++) {
            const RnicMapSeg *s = &map->segs[i];
            uint64_t lo = MAX(o, s->start), hi;

            if (s->start >= end) {
                break;
            }
            hi = MIN(end, s->start + s->length);
            if (!rnic_map_member(mr, s, s->addr + (lo - s->start), hi - lo,
                                 macc)) {
                return RNIC_XLATE_MEMBER;
            }
        }
        return RNIC_XLATE_OK;
    }
    /*
     * interleaved: each segment once, over the first and the last of the
     * repetitions the range touches (the member is contiguous in between)
     */
    for (i = 0; i < map->nsegs; i++) {
        const RnicMapSeg *s = &map->segs[i];
        uint64_t first, last;

        /* repetitions r with r * unit + start in (o - length, end) */
        first = o + 1 > s->start + s->length ?
                (o - s->start - s->length) / map->unit + 1 : 0;
        if (end <= s->start) {
            continue;
        }
        last = MIN((end - 1 - s->start) / map->unit,
                   (uint64_t)map->repeat - 1);
        if (first > last) {
            continue;
        }
        if (!rnic_map_member(mr, s, s->addr + first * s->stride,
                             (last - first) * s->stride + s->length, macc)) {
            return RNIC_XLATE_MEMBER;
        }
    }
    return RNIC_XLATE_OK;
}

/*
 * The member byte behind entry byte 'va': the member, *mva and the bytes of
 * the segment from there (at most 'max'), or NULL when the member no
 * longer passes (write: the access writes). *hint: the segment of the
 * caller's last run (0 to start), updated.
 */
static const RnicMr *rnic_map_locate(const RnicMr *mr, uint64_t va,
                                     uint64_t max, bool write, uint32_t *hint,
                                     uint64_t *mva, uint64_t *avail)
{
    const RnicMap *map = mr->map;
    uint64_t o = va - mr->iova, rep = 0, w = o, in;
    uint32_t i = *hint;
    const RnicMapSeg *s;

    if (map->repeat > 1) {
        rep = o / map->unit;
        w = o % map->unit;
    }
    /* runs walk forward: the hinted segment or the next, else a search */
    if (i >= map->nsegs || w < map->segs[i].start) {
        i = rnic_map_find(map, w);
    } else if (w - map->segs[i].start >= map->segs[i].length) {
        i = i + 1 < map->nsegs && w - map->segs[i + 1].start <
            map->segs[i + 1].length ? i + 1 : rnic_map_find(map, w);
    }
    *hint = i;
    s = &map->segs[i];
    in = w - s->start;

    *avail = MIN(max, (uint64_t)s->length - in);
    *mva = s->addr + rep * s->stride + in;
    /* checked when resolved; again here: the member may have gone since */
    return rnic_map_member(mr, s, *mva, *avail,
                           write ? RNIC_ACCESS_LOCAL_WRITE : 0);
}

/*
 * Registration: every member there now, of kind MEM (no nesting, no
 * window), of the PD and owner, valid, and holding its segment's bytes
 * with the rights the mapped STag's own imply.
 */
static const char *rnic_map_check_members(const RnicMrTable *t,
                                          const RnicPd *pd, uint32_t owner,
                                          const RnicMap *map, uint32_t access)
{
    uint32_t macc = rnic_map_member_access(access);
    uint32_t i;

    for (i = 0; i < map->nsegs; i++) {
        const RnicMapSeg *s = &map->segs[i];
        const RnicMr *m = rnic_mrt_lookup(t, RNIC_STAG_INDEX(s->lkey));

        if (!m || m->stag != s->lkey) {
            return "a segment names no registered STag";
        }
        if (!(rnic_mr_kind(m)->flags & RNIC_MRK_MEMBER)) {
            return "a segment names a mapped STag (no nesting), a window or "
                   "a persistent region";
        }
        if (m->pd != pd || m->owner != owner) {
            return "a segment's member is in another PD";
        }
        if (m->state != RNIC_MR_VALID) {
            return "a segment's member is not valid";
        }
        if (!rnic_mr_range_ok(m, s->addr, rnic_map_span(s, map->repeat))) {
            return "a segment lies outside its member";
        }
        if ((m->access & macc) != macc) {
            return "a member lacks local write for a writable mapped STag";
        }
    }
    return NULL;
}

/*
 * A registration's table 'in' made an RnicMap for an entry of 'length'
 * bytes with 'access' over members of 'pd' and 'owner' in table 't':
 * NULL with *why when the table or a member does not pass.
 */
static RnicMap *rnic_map_build(RnicEngine *e, const struct rnic_map_seg *in,
                               uint32_t nsegs, uint32_t repeat,
                               uint64_t length, const RnicMrTable *t,
                               const RnicPd *pd, uint32_t owner,
                               uint32_t access, const char **why)
{
    RnicMap *map = rnic_map_new(e, in, nsegs, repeat, length, why);

    if (map) {
        *why = rnic_map_check_members(t, pd, owner, map, access);
        if (*why) {
            rnic_map_unref(e, map);
            return NULL;
        }
    }
    return map;
}

/* REG_MR of kind MAPPED: the segment table read and checked. */
static void rnic_map_reg(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res, RnicPd *pd)
{
    uint64_t iova = GUINT64_FROM_LE(cmd->mr.iova);
    uint64_t length = GUINT64_FROM_LE(cmd->mr.length);
    uint64_t addr = GUINT64_FROM_LE(cmd->mr.pbl_addr);
    uint32_t nsegs = GUINT32_FROM_LE(cmd->mr.npages);
    uint32_t access = GUINT32_FROM_LE(cmd->mr.access);
    g_autofree struct rnic_map_seg *in = NULL;
    const char *why = rnic_map_check_access(access);
    RnicMap *map;
    RnicMr *mr;

    if (!why && (cmd->mr.page_shift || cmd->mr.levels)) {
        why = "page shift and levels must be 0";
    }
    if (!why && (!nsegs || nsegs > RNIC_MAP_MAX_SEGS)) {
        why = "segment count is 0 or beyond the device maximum";
    }
    if (!why && ((addr & 7) || iova + length < iova)) {
        why = "segment table not 8-byte aligned, or iova + length wraps";
    }
    if (!rnic_mr_room(e, pd)) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "REG_MR: mapping table of PD %u (or of a context "
                        "it is bound to) full", pd->handle);
        return;
    }
    if (why) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM, "REG_MR: mapped: %s "
                        "(%u segments, access 0x%x)", why, nsegs, access);
        return;
    }
    in = g_new(struct rnic_map_seg, nsegs);
    if (rnic_dma_read(e, addr, in, (size_t)nsegs * sizeof(*in))) {
        rnic_admin_fail(e, res, RNIC_ST_DMA_ERROR,
                        "REG_MR: mapped: segment table not readable");
        return;
    }
    map = rnic_map_build(e, in, nsegs, GUINT32_FROM_LE(cmd->mr.repeat),
                         length, rnic_pd_lkeys(e, pd), pd, pd->owner, access,
                         &why);
    if (!map) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM, "REG_MR: mapped: %s", why);
        return;
    }
    mr = rnic_mr_insert(e, pd, pd->owner, 0, cmd->mr.key);
    if (!mr) {
        rnic_map_unref(e, map);
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "REG_MR: mapping table full or no free STag index");
        return;
    }
    mr->kind = RNIC_MR_KIND_MAPPED;
    mr->state = RNIC_MR_VALID;
    mr->access = access;
    mr->iova = iova;
    mr->length = length;
    mr->map = map;
    rnic_mr_changed(e, mr);
    rnic_reglog_append(e, RNIC_REGLOG_REG, mr);
    rnic_reglog_compact(e, false);
    rnic_stat_inc(e, RNIC_STAT_MAPPED_REGS);
    res->result0 = mr->stag;
}

/* The REG_MR work request's segment table: inline, or through its SGE. */
static bool rnic_map_wqe_table(RnicEngine *e, const RnicQp *qp,
                               const RnicSendWqe *wqe, uint32_t nsegs,
                               struct rnic_map_seg *out, const char **why)
{
    size_t bytes = (size_t)nsegs * sizeof(*out);
    const RnicSgeRes *sge = &wqe->sge[0];
    RnicMr *tmr;

    if (wqe->hdr.flags & RNIC_WQE_INLINE) {
        if (GUINT32_FROM_LE(wqe->hdr.inline_len) != bytes) {
            *why = "inline segment table is not npages * 24 bytes";
            return false;
        }
        memcpy(out, wqe->inline_data, bytes);
        return true;
    }
    if (wqe->nsge != 1 || sge->length != bytes) {
        *why = "segment table SGE missing, or not npages * 24 bytes";
        return false;
    }
    if (rnic_mrt_resolve(rnic_pd_lkeys(e, qp->pd), sge->lkey, qp->pd,
                         sge->addr, bytes, 0, &tmr) ||
        rnic_mr_kind(tmr) == &rnic_mr_kind_mapped ||
        rnic_mr_read(e, tmr, sge->addr, out, bytes)) {
        *why = "segment table SGE not readable through its key";
        return false;
    }
    return true;
}

/* The REG_MR work request of a mapped entry: a new segment table. */
static uint8_t rnic_map_fast_reg(RnicEngine *e, RnicQp *qp, RnicMr *mr,
                                 const RnicSendWqe *wqe)
{
    const struct rnic_sq_wqe *w = &wqe->hdr;
    uint32_t stag = GUINT32_FROM_LE(w->reg.stag);
    uint64_t iova = GUINT64_FROM_LE(w->reg.iova);
    uint64_t length = GUINT64_FROM_LE(w->reg.length);
    uint32_t access = GUINT32_FROM_LE(w->reg.access);
    uint32_t nsegs = GUINT32_FROM_LE(w->reg.npages);
    g_autofree struct rnic_map_seg *in = NULL;
    const char *why = rnic_map_check_access(access);
    RnicMap *map;

    if (!why && (w->reg.pbl_addr || w->reg.page_shift)) {
        why = "page list or page shift on a mapped STag";
    }
    if (!why && (!nsegs || nsegs > mr->max_pages)) {
        why = "segment count 0 or more than the mapped STag was allocated for";
    }
    if (!why && iova + length < iova) {
        why = "iova + length wraps";
    }
    if (!why) {
        in = g_new(struct rnic_map_seg, nsegs);
        rnic_map_wqe_table(e, qp, wqe, nsegs, in, &why);
    }
    map = why ? NULL :
        rnic_map_build(e, in, nsegs, GUINT32_FROM_LE(w->imm_or_inv), length,
                       mr->members, mr->pd, mr->owner, access, &why);
    if (!map) {
        rnic_event(e, UB_MR, why, qp->qpn, stag);
        return RNIC_WC_LOC_PROT_ERR;
    }
    rnic_map_unref(e, mr->map);
    mr->map = map;
    rnic_mr_fast_reg_done(e, mr, stag, iova, length, access);
    rnic_stat_inc(e, RNIC_STAT_MAPPED_REGS);
    return RNIC_WC_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* The kind                                                               */
/* ---------------------------------------------------------------------- */

/* Entry byte 'va': the run of its member's pages. */
static uint64_t rnic_map_run(const RnicMr *mr, uint64_t va, uint64_t max,
                             bool write, uint32_t *hint, uint64_t *run)
{
    uint64_t mva, avail;
    const RnicMr *m = mr->map ? rnic_map_locate(mr, va, max, write, hint,
                                                &mva, &avail) : NULL;

    if (!m) {
        *run = 0;
        return 0;
    }
    return rnic_pbl_run(m, mva, avail, write, hint, run);
}

/*
 * A record of a mapped STag's registration: its table (checked when it was
 * loaded, rnic_map_new) fits the entry. Its members are not looked for:
 * they are resolved at each access, whatever the order of the log.
 */
static const char *rnic_map_replay_check(const RnicRegLogRec *rec,
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

static const char *rnic_map_replay_create(RnicEngine *e,
                                          const RnicRegLogRec *rec)
{
    if (rec->op == RNIC_REGLOG_REG) {
        return rnic_map_replay_check(rec, RNIC_MAP_MAX_SEGS);
    }
    return !rec->max_pages || rec->max_pages > RNIC_MAP_MAX_SEGS ?
        "bad segment capacity" : NULL;
}

static const char *rnic_map_replay_fast_reg(RnicEngine *e, RnicMr *mr,
                                            const RnicRegLogRec *rec)
{
    const char *why = rnic_map_replay_check(rec, mr->max_pages);

    if (why) {
        return why;
    }
    rnic_map_unref(e, mr->map);
    mr->map = rnic_map_ref(rec->map);
    return NULL;
}

const RnicMrKind rnic_mr_kind_mapped = {
    .name = "a mapped STag",
    .flags = RNIC_MRK_LOGGED,
    .rereg_refusal = RNIC_ST_BAD_PARAM,
    .reg = rnic_map_reg,
    .alloc_max = RNIC_MAP_MAX_SEGS,
    .alloc_unit = "segments",
    .alloc_user = true,
    .fast_reg = rnic_map_fast_reg,
    .check = rnic_map_check,
    .run = rnic_map_run,
    .replay_create = rnic_map_replay_create,
    .replay_fast_reg = rnic_map_replay_fast_reg,
};
