/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: scatter/gather lists of work requests: resolve every SGE's
 * key once (the single gate, rnic_mrt_resolve), then place bytes into the
 * list, gather them from it, or name the list's guest DMA segments, from
 * any byte offset of the list on.
 */
#include "rnic-engine-int.h"

bool rnic_sges_resolve(RnicEngine *e, const RnicMrTable *t, const RnicPd *pd,
                       RnicSgeRes *sge, uint32_t nsge, uint32_t access)
{
    uint32_t i;

    for (i = 0; i < nsge; i++) {
        RnicXlateErr err;

        if (!sge[i].length) {
            sge[i].mr = NULL;
            continue;
        }
        err = rnic_mrt_resolve(t, sge[i].lkey, pd, sge[i].addr,
                               sge[i].length, access, &sge[i].mr);
        if (err) {
            rnic_event(e, UB_SGE, rnic_xlate_err_str(err), i, sge[i].lkey,
                       sge[i].addr, sge[i].length);
            return false;
        }
    }
    return true;
}

/* The SGE holding list byte *off, *off made an offset into it. */
static uint32_t rnic_sges_seek(const RnicSgeRes *sge, uint32_t nsge,
                               uint32_t *off)
{
    uint32_t i = 0;

    while (i < nsge && *off >= sge[i].length) {
        *off -= sge[i].length;
        i++;
    }
    return i;
}

int rnic_sges_place(RnicEngine *e, const RnicSgeRes *sge, uint32_t nsge,
                    uint32_t off, const RnicPayload *pl, uint32_t poff,
                    uint32_t len)
{
    uint32_t i = rnic_sges_seek(sge, nsge, &off);

    while (len) {
        uint32_t n;

        if (i >= nsge) {
            return -1;
        }
        n = MIN(len, sge[i].length - off);
        if (rnic_mr_place(e, sge[i].mr, sge[i].addr + off, pl, poff, n)) {
            return -1;
        }
        rnic_scm_written(e, sge[i].mr, sge[i].lkey, sge[i].addr + off, n);
        poff += n;
        len -= n;
        off = 0;
        i++;
    }
    return 0;
}

bool rnic_sges_segs(const RnicSgeRes *sge, uint32_t nsge, uint32_t off,
                    uint32_t len, RnicDmaSeg *segs, uint32_t *nsegs,
                    uint32_t max)
{
    uint32_t i = rnic_sges_seek(sge, nsge, &off);

    while (len) {
        uint32_t n;

        if (i >= nsge) {
            return false;
        }
        n = MIN(len, sge[i].length - off);
        if (!rnic_mr_segs(sge[i].mr, sge[i].addr + off, n, segs, nsegs, max)) {
            return false;
        }
        len -= n;
        off = 0;
        i++;
    }
    return true;
}

int rnic_sges_gather(RnicEngine *e, const RnicSgeRes *sge, uint32_t nsge,
                     uint32_t off, uint8_t *buf, uint32_t len)
{
    uint32_t i = rnic_sges_seek(sge, nsge, &off);

    while (len) {
        uint32_t n;

        if (i >= nsge) {
            return -1;
        }
        n = MIN(len, sge[i].length - off);
        if (rnic_mr_read(e, sge[i].mr, sge[i].addr + off, buf, n)) {
            return -1;
        }
        buf += n;
        len -= n;
        off = 0;
        i++;
    }
    return 0;
}
