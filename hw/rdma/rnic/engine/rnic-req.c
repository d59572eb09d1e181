/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the requester. Turns send-queue WQEs into packets (IBTA
 * opcodes, PSNs, segmentation to the path MTU), executes local work
 * requests (fast-register, local invalidate), and completes WQEs in order
 * from the responses: ACK (cumulative), NAK (sequence error, RNR, fatal),
 * READ responses (also the empty ones that answer FLUSH and ATOMIC WRITE)
 * and atomic acknowledgements. Reliability (RC): a single
 * retransmission timer per QP (local ACK timeout, retry_cnt), RNR waits
 * (rnr_retry, 7 = forever), go-back-N from the first unacknowledged PSN.
 *
 * Loopback delivers synchronously: the responder may answer (and this code
 * run rnic_req_rx) while rnic_req_process is inside rnic_xmit, so the send
 * loop re-reads its cursor from the QP after every packet.
 */
#include <string.h>
#include "rnic-engine-int.h"

/*
 * AckReq (IBTA 9.7.5.1): a packet asks for an ACK when it ends a signaled
 * WQE (its completion waits for it), when it is a retransmission, when it
 * is a READ or atomic request, or when this many packets went out since
 * the last one that asked. Unsignaled messages in between are covered by
 * the next ACK (cumulative): a stream of 4 KiB writes with one completion
 * in a hundred costs one ACK per 64 packets instead of one per message,
 * which both ends' main loops feel (docs/design.md "Performance"). Packets left
 * without one at the end of a burst are asked about by a probe when the
 * retransmission timer expires (rnic_req_timer), or at once on SQD.
 */
#define RNIC_ACK_EVERY 64
/*
 * At most this many PSNs in flight past the oldest unacknowledged one: a
 * slow peer is not flooded, and a go-back-N round resends no more than
 * this. A READ counts its response PSNs. 512 rather than rxe's 128
 * (RXE_MAX_UNACKED_PSNS): with 1 KiB packets and an ACK per message, 128
 * PSNs held 4 KiB writes to 32 messages per round trip of two busy main
 * loops (docs/design.md "Performance").
 */
#define RNIC_MAX_UNACKED 512

static inline uint32_t rnic_sq_mask(const RnicQp *qp)
{
    return (1u << qp->sq_log) - 1;
}

/* Is free-running index i in [lo, hi)? */
static inline bool rnic_idx_in(uint32_t i, uint32_t lo, uint32_t hi)
{
    return i - lo < hi - lo;
}

void rnic_req_reset_qp(RnicQp *qp)
{
    qp->rd_outstanding = 0;
    qp->rnr_wait = false;
    qp->rewinding = false;
    qp->txc->valid = false;
    qp->rxc->valid = false;
    qp->wqc_gen++;
    qp->una_psn = qp->req_psn;
    rnic_req_ackreq_restart(qp);
    qp->sq_stalled = false;
}

/* ---------------------------------------------------------------------- */
/* WQE decode                                                             */
/* ---------------------------------------------------------------------- */

/*
 * A send WQE (include/rnic/rnic-abi.h): its header, then at its end
 * num_sge SGEs or inline_len bytes of inline data (a REG_MR's inline
 * segment table).
 */
#define RNIC_WQE_HDR_LEN    ((uint32_t)sizeof(struct rnic_sq_wqe))
#define RNIC_WQE_SGE_LEN    ((uint32_t)sizeof(struct rnic_sge))
#define RNIC_WQE_SEG_LEN    ((uint32_t)sizeof(struct rnic_map_seg))
/* The first read of a WQE: the header and the first 4 SGEs. */
#define RNIC_WQE_FIRST_READ (RNIC_WQE_HDR_LEN + 4 * RNIC_WQE_SGE_LEN)
/* The most of a WQE that is read: the header and its inline data or SGEs. */
#define RNIC_WQE_READ_MAX \
    (RNIC_WQE_HDR_LEN + MAX(RNIC_CFG_MAX_INLINE, \
                            RNIC_CFG_MAX_SGE * RNIC_WQE_SGE_LEN))

static uint8_t rnic_req_bad_wqe(RnicEngine *e, RnicQp *qp, uint32_t index,
                                uint8_t status, const char *why)
{
    rnic_event(e, UB_WQE, why, qp->qpn, index);
    return status;
}

/* The access a WQE's SGEs need: a READ's or an atomic's are written. */
static uint32_t rnic_req_sge_access(uint8_t op)
{
    return rnic_wr_is(op, RNIC_WRF_RD_ATOMIC) ? RNIC_ACCESS_LOCAL_WRITE : 0;
}

/*
 * A REG_MR work request: a page list (kernel QPs only: its addresses are
 * guest-physical) or a mapped STag's segment table, inline (kept in
 * wqe->inline_data) or through one SGE (kept unresolved in wqe->sge[0]:
 * rnic_map_fast_reg resolves it when the request executes).
 */
G_STATIC_ASSERT(RNIC_MAP_INLINE_SEGS * RNIC_WQE_SEG_LEN <=
                RNIC_CFG_MAX_INLINE);

static uint8_t rnic_req_decode_reg(RnicEngine *e, RnicQp *qp, uint32_t index,
                                   RnicSendWqe *wqe, const uint8_t *buf,
                                   uint32_t ilimit)
{
    const struct rnic_sq_wqe *w = &wqe->hdr;
    const struct rnic_sge *sg =
        (const struct rnic_sge *)(buf + RNIC_WQE_HDR_LEN);
    bool table = (w->flags & RNIC_WQE_INLINE) || w->num_sge;

    if (!table && qp->owner != RNIC_UCTX_KERNEL) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_QP_OP_ERR,
                                "page-list registration on a user QP");
    }
    if (w->flags & RNIC_WQE_INLINE) {
        uint32_t ilen = GUINT32_FROM_LE(w->inline_len);

        if (ilen > ilimit) {
            return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_QP_OP_ERR,
                                    "inline segment table beyond the WQE");
        }
        memcpy(wqe->inline_data, buf + RNIC_WQE_HDR_LEN, ilen);
    } else if (w->num_sge) {
        if (w->num_sge != 1 || qp->sq_max_sge < 1) {
            return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_QP_OP_ERR,
                                    "a segment table takes one SGE");
        }
        wqe->sge[0].addr = GUINT64_FROM_LE(sg->addr);
        wqe->sge[0].length = GUINT32_FROM_LE(sg->length);
        wqe->sge[0].lkey = GUINT32_FROM_LE(sg->lkey);
        wqe->sge[0].mr = NULL;
        wqe->nsge = 1;
    }
    return RNIC_WC_SUCCESS;
}

/*
 * Read send WQE 'index' from the ring into 'buf' (RNIC_WQE_READ_MAX
 * bytes) and its header into wqe->hdr (zeroed when the ring is not
 * readable): the header and the first SGEs in one read, the rest if
 * needed. *ilimit: the inline bytes the WQE may carry.
 */
static uint8_t rnic_req_fetch(RnicEngine *e, RnicQp *qp, uint32_t index,
                              RnicSendWqe *wqe, uint8_t *buf, uint32_t *ilimit)
{
    uint32_t stride = 1u << qp->sq_shift;
    uint64_t addr = qp->sq_addr + ((uint64_t)(index & rnic_sq_mask(qp)) <<
                                   qp->sq_shift);
    uint32_t len = MIN(stride, RNIC_WQE_FIRST_READ), need;
    struct rnic_sq_wqe *w = &wqe->hdr;

    if (rnic_dma_read(e, addr, buf, len)) {
        memset(w, 0, sizeof(*w));
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_FATAL_ERR,
                                "send queue ring not readable");
    }
    memcpy(w, buf, sizeof(*w));
    /* a registration's inline segment table: what the stride holds */
    *ilimit = w->opcode == RNIC_WR_REG_MR ?
              MIN(stride - RNIC_WQE_HDR_LEN,
                  RNIC_MAP_INLINE_SEGS * RNIC_WQE_SEG_LEN) : qp->max_inline;
    need = RNIC_WQE_HDR_LEN + ((w->flags & RNIC_WQE_INLINE) ?
                               MIN(GUINT32_FROM_LE(w->inline_len), *ilimit) :
                               MIN(w->num_sge, qp->sq_max_sge) *
                               RNIC_WQE_SGE_LEN);
    if (need > len && rnic_dma_read(e, addr + len, buf + len, need - len)) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_FATAL_ERR,
                                "send queue ring not readable");
    }
    return RNIC_WC_SUCCESS;
}

/* A known opcode, known flags, an opcode the QP's type carries. */
static uint8_t rnic_req_check_hdr(RnicEngine *e, RnicQp *qp, uint32_t index,
                                  const struct rnic_sq_wqe *w)
{
    if (w->opcode >= RNIC_WR_OPCODE_COUNT) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_QP_OP_ERR,
                                "unknown opcode");
    }
    if (w->flags & ~(RNIC_WQE_SIGNALED | RNIC_WQE_SOLICITED | RNIC_WQE_FENCE |
                     RNIC_WQE_INLINE)) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_QP_OP_ERR,
                                "unknown flags");
    }
    if (!rnic_wr_qpt_ok(w->opcode, qp->type)) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_QP_OP_ERR,
                                qp->type == RNIC_QPT_UC ?
                                "opcode not valid on a UC QP" :
                                qp->type == RNIC_QPT_RC ?
                                "opcode not valid on an RC QP" :
                                "opcode not valid on a UD QP");
    }
    return RNIC_WC_SUCCESS;
}

/* The inline payload of a WQE that sends, into wqe->inline_data. */
static uint8_t rnic_req_decode_inline(RnicEngine *e, RnicQp *qp,
                                      uint32_t index, RnicSendWqe *wqe,
                                      const uint8_t *buf,
                                      const RnicWrOpInfo *info)
{
    uint32_t ilen = GUINT32_FROM_LE(wqe->hdr.inline_len);

    if (!(info->flags & RNIC_WRF_INLINE)) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_QP_OP_ERR,
                                "inline data on a READ/atomic");
    }
    if (ilen > qp->max_inline) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_QP_OP_ERR,
                                "inline data longer than the QP allows");
    }
    memcpy(wqe->inline_data, buf + RNIC_WQE_HDR_LEN, ilen);
    wqe->length = ilen;
    return RNIC_WC_SUCCESS;
}

/*
 * The SGEs 'sg' of a WQE (not in the translation cache) into wqe->sge[],
 * resolved for 'access'; l->length their total, l->segs the DMA segments
 * of a payload of one packet.
 */
static uint8_t rnic_req_resolve_sges(RnicEngine *e, RnicQp *qp,
                                     uint32_t index, RnicSendWqe *wqe,
                                     const struct rnic_sge *sg,
                                     uint32_t access, RnicSgeList *l)
{
    uint64_t total = 0;
    uint32_t i;

    for (i = 0; i < wqe->nsge; i++) {
        wqe->sge[i].addr = GUINT64_FROM_LE(sg[i].addr);
        wqe->sge[i].length = GUINT32_FROM_LE(sg[i].length);
        wqe->sge[i].lkey = GUINT32_FROM_LE(sg[i].lkey);
        total += wqe->sge[i].length;
    }
    if (total > RNIC_MAX_MSG_SIZE) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_LEN_ERR,
                                "message longer than 2 GiB");
    }
    if (!rnic_sges_resolve(e, rnic_pd_lkeys(e, qp->pd), qp->pd,
                           wqe->sge, wqe->nsge, access)) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_PROT_ERR,
                                "local protection error");
    }
    l->length = total;
    l->nsegs = 0;
    /* a payload of one packet: its DMA segments, once */
    if (!access && total && total <= rnic_qp_pmtu(qp) &&
        !rnic_sges_segs(wqe->sge, wqe->nsge, 0, total, wqe->segs,
                        &l->nsegs, RNIC_WQC_MAX_SGE)) {
        l->nsegs = 0;
    }
    return RNIC_WC_SUCCESS;
}

/* The SGE payload (or sink) of a WQE that sends, through the cache. */
static uint8_t rnic_req_decode_sges(RnicEngine *e, RnicQp *qp, uint32_t index,
                                    RnicSendWqe *wqe, const uint8_t *buf,
                                    const RnicWrOpInfo *info)
{
    const struct rnic_sge *sg =
        (const struct rnic_sge *)(buf + RNIC_WQE_HDR_LEN);
    uint32_t access = rnic_req_sge_access(wqe->hdr.opcode);
    RnicSgeList l = { .sge = wqe->sge, .segs = wqe->segs };
    RnicWqcProbe probe;
    uint8_t status;

    if (wqe->hdr.num_sge > qp->sq_max_sge) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_QP_OP_ERR,
                                "more SGEs than the QP allows");
    }
    if (wqe->hdr.num_sge && !(info->flags & RNIC_WRF_SGE)) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_QP_OP_ERR,
                                "SGEs on a FLUSH/ATOMIC WRITE");
    }
    wqe->nsge = wqe->hdr.num_sge;
    if (!rnic_wqc_lookup(e, qp, qp->pd, access, sg, wqe->nsge, &l, &probe)) {
        status = rnic_req_resolve_sges(e, qp, index, wqe, sg, access, &l);
        if (status != RNIC_WC_SUCCESS) {
            return status;
        }
        rnic_wqc_insert(e, qp, &probe, access, sg, &l, wqe->nsge);
    }
    wqe->length = l.length;
    wqe->nsegs = l.nsegs;
    return RNIC_WC_SUCCESS;
}

/* What an opcode's own header fields must say, once its payload is known. */
static uint8_t rnic_req_check_op(RnicEngine *e, RnicQp *qp, uint32_t index,
                                 RnicSendWqe *wqe, const RnicWrOpInfo *info)
{
    const struct rnic_sq_wqe *w = &wqe->hdr;

    if ((info->flags & RNIC_WRF_ATOMIC) && wqe->length != 8) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_LEN_ERR,
                                "atomic result buffer is not 8 bytes");
    }
    if (w->opcode == RNIC_WR_FLUSH &&
        (!w->flush.type || w->flush.level > RNIC_FLUSH_MR ||
         (w->flush.type & ~(RNIC_FLUSH_GLOBAL | RNIC_FLUSH_PERSISTENT)))) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_QP_OP_ERR,
                                "FLUSH type or level not defined");
    }
    if (w->opcode == RNIC_WR_ATOMIC_WRITE) {
        /* the 8 bytes travel as the packet's payload, from here */
        memcpy(wqe->inline_data, w->atomic_write.data,
               sizeof(w->atomic_write.data));
        wqe->length = sizeof(w->atomic_write.data);
    }
    return RNIC_WC_SUCCESS;
}

/* A UD (or GSI) message: one packet, from a local GID of the QP's network. */
static uint8_t rnic_req_check_ud(RnicEngine *e, RnicQp *qp, uint32_t index,
                                 const RnicSendWqe *wqe)
{
    const RnicGid *g = rnic_gid_get(e, wqe->hdr.ud.av.sgid_index);

    if (wqe->length > rnic_qp_pmtu(qp)) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_LEN_ERR,
                                "UD message longer than the path MTU");
    }
    /* an all-network QP sends in the context of the AV's GID */
    if (!g || (qp->ctx && g->net_ctx != qp->ctx->handle)) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_QP_OP_ERR,
                                "UD address vector names no local GID");
    }
    return RNIC_WC_SUCCESS;
}

/*
 * Read and validate the send WQE at free-running index 'index' into 'wqe'.
 * Returns an rnic_wc_status; wqe->hdr is filled whenever the WQE was read.
 * A local operation decodes without becoming valid (it executes at once).
 */
static uint8_t rnic_req_decode(RnicEngine *e, RnicQp *qp, uint32_t index,
                               RnicSendWqe *wqe)
{
    RNIC_UNINIT uint8_t buf[RNIC_WQE_READ_MAX];
    const struct rnic_sq_wqe *w = &wqe->hdr;
    const RnicWrOpInfo *info;
    uint32_t ilimit = 0;
    uint8_t status;

    wqe->valid = false;
    status = rnic_req_fetch(e, qp, index, wqe, buf, &ilimit);
    if (status != RNIC_WC_SUCCESS) {
        return status;
    }
    wqe->index = index;
    wqe->mr_gen = e->mr_gen;
    wqe->nsge = 0;
    wqe->length = 0;
    wqe->nsegs = 0;
    status = rnic_req_check_hdr(e, qp, index, w);
    if (status != RNIC_WC_SUCCESS) {
        return status;
    }
    info = rnic_wr_op_info(w->opcode);
    if (w->opcode == RNIC_WR_REG_MR) {
        status = rnic_req_decode_reg(e, qp, index, wqe, buf, ilimit);
    }
    if (status != RNIC_WC_SUCCESS || (info->flags & RNIC_WRF_LOCAL)) {
        return status;
    }
    if ((info->flags & RNIC_WRF_RD_ATOMIC) && !qp->max_rd_atomic) {
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_QP_OP_ERR,
                                "READ/atomic with max_rd_atomic 0");
    }
    status = (w->flags & RNIC_WQE_INLINE) ?
             rnic_req_decode_inline(e, qp, index, wqe, buf, info) :
             rnic_req_decode_sges(e, qp, index, wqe, buf, info);
    if (status == RNIC_WC_SUCCESS) {
        status = rnic_req_check_op(e, qp, index, wqe, info);
    }
    if (status == RNIC_WC_SUCCESS && !rnic_qpt_connected(qp->type)) {
        status = rnic_req_check_ud(e, qp, index, wqe);
    }
    wqe->valid = status == RNIC_WC_SUCCESS;
    return status;
}

/*
 * A decoded WQE whose resolved SGEs may be stale (an MR changed since):
 * resolve them again, with the access the started slot's opcode needs.
 */
static uint8_t rnic_req_revalidate(RnicEngine *e, RnicQp *qp, RnicSendWqe *wqe)
{
    uint32_t access;

    if (wqe->mr_gen == e->mr_gen) {
        return RNIC_WC_SUCCESS;
    }
    access = rnic_req_sge_access(wqe->hdr.opcode);
    if (!rnic_sges_resolve(e, rnic_pd_lkeys(e, qp->pd), qp->pd, wqe->sge,
                           wqe->nsge, access)) {
        wqe->valid = false;
        return RNIC_WC_LOC_PROT_ERR;
    }
    wqe->nsegs = 0;             /* made again per packet */
    wqe->mr_gen = e->mr_gen;
    return RNIC_WC_SUCCESS;
}

/*
 * Make 'c' hold the started WQE of slot 's' (index 'index') with its SGEs
 * resolved against the current mapping tables. When it has to be read
 * from the ring again (retransmission, a READ response, after a load), it
 * must still be the WQE the slot started: the guest may have rewritten a
 * posted WQE, and the access checks made at the start (a READ's sink
 * needs LOCAL_WRITE) must not be decided on a second fetch that says
 * something else.
 */
static uint8_t rnic_req_cache(RnicEngine *e, RnicQp *qp, uint32_t index,
                              const RnicSqSlot *s, RnicSendWqe *wqe)
{
    uint8_t status;

    if (wqe->valid && wqe->index == index) {
        return rnic_req_revalidate(e, qp, wqe);
    }
    status = rnic_req_decode(e, qp, index, wqe);
    if (status != RNIC_WC_SUCCESS) {
        return status;
    }
    if (wqe->hdr.opcode != s->opcode || wqe->hdr.flags != s->flags ||
        wqe->length != s->length ||
        GUINT64_FROM_LE(wqe->hdr.wr_id) != s->wr_id) {
        wqe->valid = false;
        return rnic_req_bad_wqe(e, qp, index, RNIC_WC_LOC_QP_OP_ERR,
                                "WQE rewritten after it was posted");
    }
    return RNIC_WC_SUCCESS;
}

/* PSNs a WQE consumes: packets, or READ response packets. */
static uint32_t rnic_req_npsn(const RnicQp *qp, const RnicSendWqe *wqe)
{
    uint32_t pmtu = rnic_qp_pmtu(qp);

    if (rnic_wr_is(wqe->hdr.opcode, RNIC_WRF_LOCAL)) {
        return 0;
    }
    if (rnic_wr_is(wqe->hdr.opcode, RNIC_WRF_ONE_PSN)) {
        return 1;
    }
    return wqe->length ? (wqe->length + pmtu - 1) / pmtu : 1;
}

/* ---------------------------------------------------------------------- */
/* Completion                                                             */
/* ---------------------------------------------------------------------- */

static void rnic_req_slot_done(RnicQp *qp, RnicSqSlot *s, uint8_t status)
{
    if (s->state == RNIC_SLOT_DONE) {
        return;
    }
    if (s->state == RNIC_SLOT_STARTED &&
        rnic_wr_is(s->opcode, RNIC_WRF_RD_ATOMIC)) {
        qp->rd_outstanding--;
    }
    s->state = RNIC_SLOT_DONE;
    s->status = status;
}

void rnic_req_complete(RnicEngine *e, RnicQp *qp)
{
    uint32_t mask = rnic_sq_mask(qp);
    bool progress = false;

    while (qp->sq_una != qp->sq_hi) {
        RnicSqSlot *s = &qp->slots[qp->sq_una & mask];

        if (s->state != RNIC_SLOT_DONE) {
            break;
        }
        rnic_event(e, WQE_DONE, NULL, qp->qpn, qp->sq_una, s->opcode,
                   s->status);
        if (s->status != RNIC_WC_SUCCESS || (s->flags & RNIC_WQE_SIGNALED) ||
            qp->sq_sig_all) {
            RnicCqeInfo ci = {
                .wr_id = s->wr_id,
                .byte_len = s->length,
                .opcode = rnic_wc_opcode(s->opcode),
                .status = s->status,
            };

            rnic_cq_post(e, qp->scq, qp, &ci);
        }
        if (s->status != RNIC_WC_SUCCESS) {
            /* the caller moves the QP to ERR/SQE, which flushes the rest */
            qp->sq_una++;
            return;
        }
        s->state = RNIC_SLOT_IDLE;
        qp->sq_una++;
        progress = true;
    }
    /* a stale acknowledgement may complete past the send cursor */
    if (!rnic_idx_in(qp->sq_next, qp->sq_una, qp->sq_hi + 1)) {
        qp->sq_next = qp->sq_una;
        qp->tx_pkt = 0;
    }
    if (!progress) {
        return;
    }
    if (qp->timer_kind == RNIC_TIMER_RETRANSMIT) {
        if (qp->sq_una == qp->sq_hi) {
            rnic_qp_timer_cancel(e, qp);
        } else {
            rnic_qp_timer_set(e, qp, RNIC_TIMER_RETRANSMIT,
                              rnic_ack_timeout_ns(qp->timeout));
        }
    }
    if (qp->sq_stalled || qp->state == RNIC_QPS_SQD) {
        qp->sq_stalled = false;
        rnic_qp_work(e, qp, RNIC_QPW_SQ);
    }
}

/* A WQE failed locally: complete it in error and stop the send queue. */
static void rnic_req_local_error(RnicEngine *e, RnicQp *qp, RnicSqSlot *s,
                                 uint8_t status)
{
    rnic_req_slot_done(qp, s, status);
    if (status == RNIC_WC_FATAL_ERR) {
        rnic_async_event(e, RNIC_EQE_QP_FATAL, qp->handle, qp->qpn);
    }
    rnic_req_complete(e, qp);
    rnic_qp_send_queue_error(e, qp);
}

/* ---------------------------------------------------------------------- */
/* Transmit                                                               */
/* ---------------------------------------------------------------------- */

static uint8_t rnic_req_rc_opcode(uint8_t wr, bool first, bool last)
{
    /* only the opcodes that send: rnic_req_decode() let no other through */
    g_assert(wr < RNIC_WR_OPCODE_COUNT && !rnic_wr_is(wr, RNIC_WRF_LOCAL));
    return rnic_wr_ops[wr].rc_ops[rnic_msg_pos(first, last)];
}

/* Payload [off, off + len) of a WQE: inline bytes or guest segments. */
static bool rnic_req_payload(RnicEngine *e, const RnicSendWqe *wqe,
                             uint32_t off, uint32_t len, RnicPacket *pkt,
                             RnicDmaSeg *segs, uint8_t *bounce)
{
    pkt->payload.len = len;
    if (wqe->hdr.flags & RNIC_WQE_INLINE) {
        pkt->payload.data = wqe->inline_data + off;
        pkt->payload.segs = NULL;
        pkt->payload.nsegs = 0;
        return true;
    }
    pkt->payload.data = NULL;
    if (wqe->nsegs && off == 0 && len == wqe->length) {
        pkt->payload.segs = wqe->segs;      /* made by the decode */
        pkt->payload.nsegs = wqe->nsegs;
        return true;
    }
    pkt->payload.segs = segs;
    pkt->payload.nsegs = 0;
    if (rnic_sges_segs(wqe->sge, wqe->nsge, off, len, segs,
                       &pkt->payload.nsegs, RNIC_PKT_MAX_SEGS)) {
        return true;
    }
    /* more pieces than a packet references (a mapped STag's small ones) */
    pkt->payload.segs = NULL;
    pkt->payload.nsegs = 0;
    pkt->payload.data = bounce;
    return len <= RNIC_MTU_MAX &&
           !rnic_sges_gather(e, wqe->sge, wqe->nsge, off, bounce, len);
}

/* Build and send packet k of an RC or UC WQE. false: the payload did not fit. */
static bool rnic_req_send_rc(RnicEngine *e, RnicQp *qp, const RnicSqSlot *s,
                             const RnicSendWqe *wqe, uint32_t k)
{
    uint32_t pmtu = rnic_qp_pmtu(qp);
    uint8_t op = wqe->hdr.opcode;
    bool first = k == 0;
    bool last = k + 1 >= s->npsn;
    RNIC_UNINIT RnicDmaSeg segs[RNIC_PKT_MAX_SEGS];
    RNIC_UNINIT uint8_t bounce[RNIC_MTU_MAX];
    RNIC_UNINIT RnicPacket pkt;
    uint32_t off;
    bool resend;

    pkt.ext = 0;
    rnic_packet_net_from_av(e, qp, &qp->av, &pkt);
    /* UC's opcodes are RC's in the UC transport */
    pkt.opcode = rnic_req_rc_opcode(op, first, last) | rnic_qp_transport(qp);
    pkt.se = last && (wqe->hdr.flags & RNIC_WQE_SOLICITED) &&
                 rnic_wr_is(op, RNIC_WRF_SOLICIT);
    pkt.migreq = false;
    pkt.pad = 0;
    pkt.tver = 0;
    pkt.pkey = RNIC_ROCE_DEFAULT_PKEY;
    pkt.fecn = pkt.becn = false;
    pkt.dest_qp = qp->dest_qpn;
    pkt.psn = rnic_psn_add(s->first_psn, k);
    resend = rnic_psn_diff(pkt.psn, qp->tx_psn_end) < 0;
    pkt.ack_req = qp->type == RNIC_QPT_RC &&
                  (qp->noack_pkts + 1 >= RNIC_ACK_EVERY ||
                   (last && ((s->flags & RNIC_WQE_SIGNALED) ||
                             qp->sq_sig_all)) ||
                   (resend && (last || rnic_psn_add(pkt.psn, 1) ==
                                       qp->tx_psn_end)));
    pkt.ext = rnic_op_ext(pkt.opcode);
    pkt.payload.len = 0;
    pkt.payload.data = NULL;
    pkt.payload.segs = NULL;
    pkt.payload.nsegs = 0;

    switch (op) {
    case RNIC_WR_RDMA_READ:
        off = k * pmtu;
        pkt.reth.va = GUINT64_FROM_LE(wqe->hdr.rdma.remote_addr) + off;
        pkt.reth.rkey = GUINT32_FROM_LE(wqe->hdr.rdma.rkey);
        pkt.reth.dma_len = wqe->length - off;
        pkt.ack_req = true;
        break;
    case RNIC_WR_ATOMIC_CMP_SWP:
    case RNIC_WR_ATOMIC_FETCH_ADD:
        pkt.atomic_eth.va = GUINT64_FROM_LE(wqe->hdr.atomic.remote_addr);
        pkt.atomic_eth.rkey = GUINT32_FROM_LE(wqe->hdr.atomic.rkey);
        pkt.atomic_eth.compare = GUINT64_FROM_LE(wqe->hdr.atomic.compare_add);
        pkt.atomic_eth.swap_add = op == RNIC_WR_ATOMIC_CMP_SWP ?
                              GUINT64_FROM_LE(wqe->hdr.atomic.swap) :
                              GUINT64_FROM_LE(wqe->hdr.atomic.compare_add);
        pkt.ack_req = true;
        break;
    case RNIC_WR_FLUSH:
        pkt.feth.plt = wqe->hdr.flush.type;
        pkt.feth.sel = wqe->hdr.flush.level;
        pkt.reth.va = GUINT64_FROM_LE(wqe->hdr.flush.remote_addr);
        pkt.reth.rkey = GUINT32_FROM_LE(wqe->hdr.flush.rkey);
        pkt.reth.dma_len = GUINT32_FROM_LE(wqe->hdr.flush.length);
        pkt.ack_req = true;
        break;
    case RNIC_WR_ATOMIC_WRITE:
        pkt.reth.va = GUINT64_FROM_LE(wqe->hdr.atomic_write.remote_addr);
        pkt.reth.rkey = GUINT32_FROM_LE(wqe->hdr.atomic_write.rkey);
        pkt.reth.dma_len = 8;
        pkt.payload.len = 8;
        pkt.payload.data = wqe->inline_data;
        pkt.ack_req = true;
        break;
    default:
        off = k * pmtu;
        if (!rnic_req_payload(e, wqe, off, MIN(pmtu, wqe->length - off), &pkt,
                              segs, bounce)) {
            return false;
        }
        if (pkt.ext & RNIC_ROCE_EXT_RETH) {
            pkt.reth.va = GUINT64_FROM_LE(wqe->hdr.rdma.remote_addr);
            pkt.reth.rkey = GUINT32_FROM_LE(wqe->hdr.rdma.rkey);
            pkt.reth.dma_len = wqe->length;
        }
        if (pkt.ext & RNIC_ROCE_EXT_IMMDT) {
            pkt.immdt = GUINT32_FROM_BE(wqe->hdr.imm_or_inv);
        }
        if (pkt.ext & RNIC_ROCE_EXT_IETH) {
            pkt.ieth.rkey = GUINT32_FROM_LE(wqe->hdr.imm_or_inv);
        }
        break;
    }
    if (!resend) {
        qp->tx_psn_end = rnic_psn_add(pkt.psn, 1);
    }
    qp->noack_pkts = pkt.ack_req ? 0 : qp->noack_pkts + 1;
    rnic_xmit(e, qp, &pkt);
    return true;
}

/* Send the one packet of a UD WQE. */
static bool rnic_req_send_ud(RnicEngine *e, RnicQp *qp, const RnicSendWqe *wqe)
{
    RNIC_UNINIT RnicDmaSeg segs[RNIC_PKT_MAX_SEGS];
    RNIC_UNINIT uint8_t bounce[RNIC_MTU_MAX];
    uint32_t qkey = GUINT32_FROM_LE(wqe->hdr.ud.remote_qkey);
    RNIC_UNINIT RnicPacket pkt;

    pkt.ext = 0;
    rnic_packet_net_from_av(e, qp, &wqe->hdr.ud.av, &pkt);
    /* only the opcodes UD sends: rnic_req_decode() let no other through */
    g_assert(wqe->hdr.opcode < RNIC_WR_OPCODE_COUNT &&
             rnic_wr_ops[wqe->hdr.opcode].ud_op);
    pkt.opcode = rnic_wr_ops[wqe->hdr.opcode].ud_op;
    pkt.se = (wqe->hdr.flags & RNIC_WQE_SOLICITED) &&
             rnic_wr_is(wqe->hdr.opcode, RNIC_WRF_SOLICIT);
    pkt.migreq = false;
    pkt.pad = 0;
    pkt.tver = 0;
    pkt.pkey = RNIC_ROCE_DEFAULT_PKEY;
    pkt.fecn = pkt.becn = false;
    pkt.dest_qp = GUINT32_FROM_LE(wqe->hdr.ud.remote_qpn) & RNIC_ROCE_QPN_MASK;
    pkt.psn = qp->req_psn;
    pkt.ack_req = false;
    qp->req_psn = rnic_psn_add(qp->req_psn, 1);
    pkt.ext = rnic_op_ext(pkt.opcode);
    /* a Q_Key with the high bit set means "use the QP's own" (IB 10.2.5) */
    pkt.deth.qkey = (qkey & 0x80000000u) ? qp->qkey : qkey;
    pkt.deth.src_qp = qp->qpn;
    pkt.immdt = GUINT32_FROM_BE(wqe->hdr.imm_or_inv);
    if (!rnic_req_payload(e, wqe, 0, wqe->length, &pkt, segs, bounce)) {
        return false;
    }
    rnic_xmit(e, qp, &pkt);
    return true;
}

enum {
    RNIC_START_STOP,            /* stall or error: the send queue stops */
    RNIC_START_LOCAL,           /* a local operation, executed */
    RNIC_START_SEND,            /* PSNs assigned, packets to send */
};

/* Start slot 'index' (first transmission): decode, checks, PSNs. */
static int rnic_req_start(RnicEngine *e, RnicQp *qp, uint32_t index)
{
    RnicSqSlot *s = &qp->slots[index & rnic_sq_mask(qp)];
    RnicSendWqe *wqe = qp->txc;
    uint8_t status;

    if (!wqe->valid || wqe->index != index) {
        status = rnic_req_decode(e, qp, index, wqe);
        memset(s, 0, sizeof(*s));
        s->wr_id = GUINT64_FROM_LE(wqe->hdr.wr_id);
        s->opcode = wqe->hdr.opcode;
        s->flags = wqe->hdr.flags;
        s->length = wqe->length;
    } else {
        /* decoded in an earlier run, held back by a fence or the depth */
        status = rnic_req_revalidate(e, qp, wqe);
    }
    if (status != RNIC_WC_SUCCESS) {
        qp->sq_hi = index + 1;
        qp->sq_next = index + 1;
        rnic_req_local_error(e, qp, s, status);
        return RNIC_START_STOP;
    }
    /* fence: wait for every earlier READ/atomic; initiator depth */
    if (((wqe->hdr.flags & RNIC_WQE_FENCE) && qp->rd_outstanding) ||
        (rnic_wr_is(wqe->hdr.opcode, RNIC_WRF_RD_ATOMIC) &&
         qp->rd_outstanding >= qp->max_rd_atomic)) {
        qp->sq_stalled = true;
        return RNIC_START_STOP;
    }
    qp->sq_hi = index + 1;
    rnic_stat_inc(e, RNIC_STAT_WQES);
    rnic_work_wqes(e, 1);
    rnic_event(e, WQE_START, NULL, qp->qpn, index, wqe->hdr.opcode,
               wqe->length);
    if (rnic_wr_is(wqe->hdr.opcode, RNIC_WRF_LOCAL)) {
        if (wqe->hdr.opcode == RNIC_WR_REG_MR) {
            status = rnic_mr_fast_reg(e, qp, wqe);
        } else if (wqe->hdr.opcode == RNIC_WR_BIND_MW) {
            status = rnic_mw_bind(e, qp, &wqe->hdr);
        } else {
            status = rnic_mr_invalidate(e, rnic_pd_lkeys(e, qp->pd), qp,
                                        GUINT32_FROM_LE(wqe->hdr.imm_or_inv),
                                        false);
        }
        wqe->valid = false;
        qp->sq_next = index + 1;
        if (status != RNIC_WC_SUCCESS) {
            rnic_req_local_error(e, qp, s, status);
            return RNIC_START_STOP;
        }
        rnic_req_slot_done(qp, s, RNIC_WC_SUCCESS);
        rnic_req_complete(e, qp);
        return RNIC_START_LOCAL;
    }
    s->first_psn = qp->req_psn;
    s->npsn = rnic_req_npsn(qp, wqe);
    s->recv_psn = 0;
    s->state = RNIC_SLOT_STARTED;
    if (rnic_qpt_connected(qp->type)) {
        qp->req_psn = rnic_psn_add(qp->req_psn, s->npsn);
        if (rnic_wr_is(s->opcode, RNIC_WRF_RD_ATOMIC)) {
            qp->rd_outstanding++;
        }
    }
    qp->tx_pkt = 0;
    return RNIC_START_SEND;
}

static RnicSqSlot *rnic_req_oldest(RnicQp *qp, uint32_t *index);

/* Would packet 'psn' go beyond the window of unacknowledged PSNs? */
static bool rnic_req_window_full(RnicQp *qp, uint32_t psn)
{
    uint32_t index, base;
    RnicSqSlot *s0 = rnic_req_oldest(qp, &index);

    if (!s0) {
        return false;
    }
    if (rnic_wr_is(s0->opcode, RNIC_WRF_RD_ATOMIC)) {
        base = rnic_psn_add(s0->first_psn, s0->recv_psn);
    } else {
        base = s0->first_psn;
        if (rnic_psn_diff(qp->una_psn, base) > 0) {
            base = qp->una_psn;     /* partly acknowledged */
        }
    }
    return rnic_psn_diff(psn, base) >= RNIC_MAX_UNACKED;
}

/*
 * WQEs one turn of a QP starts at most, local ones (fast-register,
 * invalidate, bind) included: they send nothing, and without this a full
 * queue of them ran to its end in one turn.
 */
#define RNIC_REQ_TURN_WQES 64

/*
 * Transmit up to 'budget' packets; returns packets sent, or 'budget' when
 * the QP stopped with WQEs left (the turn's or the phase's budget spent:
 * the caller queues it again).
 */
uint32_t rnic_req_process(RnicEngine *e, RnicQp *qp, uint32_t budget)
{
    uint32_t sent = 0, started = 0;

    while (sent < budget && !qp->rnr_wait &&
           (qp->state == RNIC_QPS_RTS || qp->state == RNIC_QPS_SQD)) {
        uint32_t index = qp->sq_next;
        RnicSqSlot *s = &qp->slots[index & rnic_sq_mask(qp)];
        RnicSendWqe *wqe = qp->txc;
        uint32_t k;
        uint8_t status;

        if (index == qp->sq_prod) {
            break;
        }
        if (!rnic_idx_in(index, qp->sq_una, qp->sq_hi)) {
            int ret;

            /* a new WQE; SQD starts none */
            if (qp->state == RNIC_QPS_SQD) {
                break;
            }
            if (started == RNIC_REQ_TURN_WQES || rnic_work_spent(e)) {
                return budget;      /* the rest in another turn */
            }
            started++;
            ret = rnic_req_start(e, qp, index);
            if (ret == RNIC_START_STOP) {
                break;
            }
            if (ret == RNIC_START_LOCAL) {
                continue;
            }
        } else if (s->state != RNIC_SLOT_STARTED) {
            /* retransmission passes over finished work */
            qp->sq_next = index + 1;
            qp->tx_pkt = 0;
            continue;
        } else {
            status = rnic_req_cache(e, qp, index, s, wqe);
            if (status != RNIC_WC_SUCCESS) {
                rnic_req_local_error(e, qp, s, status);
                break;
            }
        }

        if (!rnic_qpt_connected(qp->type)) {
            qp->sq_next = index + 1;
            if (!rnic_req_send_ud(e, qp, wqe)) {
                rnic_req_local_error(e, qp, s, RNIC_WC_LOC_QP_OP_ERR);
                break;
            }
            sent++;
            rnic_req_slot_done(qp, s, RNIC_WC_SUCCESS);
            rnic_req_complete(e, qp);
            continue;
        }
        if (qp->type == RNIC_QPT_UC) {
            /* no acknowledgements: sent is done */
            k = qp->tx_pkt;
            qp->tx_pkt = k + 1;
            if (!rnic_req_send_rc(e, qp, s, wqe, k)) {
                rnic_req_local_error(e, qp, s, RNIC_WC_LOC_QP_OP_ERR);
                break;
            }
            sent++;
            if (qp->tx_pkt >= s->npsn) {
                qp->sq_next = index + 1;
                qp->tx_pkt = 0;
                rnic_req_slot_done(qp, s, RNIC_WC_SUCCESS);
                rnic_req_complete(e, qp);
            }
            continue;
        }

        k = qp->tx_pkt;
        if (s->opcode == RNIC_WR_RDMA_READ) {
            k = MAX(k, s->recv_psn);
        }
        if (rnic_req_window_full(qp, rnic_psn_add(s->first_psn, k))) {
            qp->sq_stalled = true;  /* progress (an ACK) resumes */
            break;
        }
        if (qp->timer_kind == RNIC_TIMER_NONE && qp->timeout) {
            rnic_qp_timer_set(e, qp, RNIC_TIMER_RETRANSMIT,
                              rnic_ack_timeout_ns(qp->timeout));
        }
        if (s->opcode == RNIC_WR_RDMA_READ) {
            /* one request covers the rest of the READ's response PSNs */
            qp->tx_pkt = 0;     /* the cursor's next slot starts at 0 */
            qp->sq_next = index + 1;
            rnic_req_send_rc(e, qp, s, wqe, k);
            sent++;
            continue;
        }
        qp->tx_pkt = k + 1;
        if (qp->tx_pkt >= s->npsn) {
            qp->sq_next = index + 1;
            qp->tx_pkt = 0;
        }
        if (!rnic_req_send_rc(e, qp, s, wqe, k)) {
            rnic_req_local_error(e, qp, s, RNIC_WC_LOC_QP_OP_ERR);
            break;
        }
        sent++;
    }
    return sent;
}

/* ---------------------------------------------------------------------- */
/* Responses                                                              */
/* ---------------------------------------------------------------------- */

/* Go back to PSN 'psn': the slot holding it becomes the send cursor. */
static void rnic_req_rewind(RnicEngine *e, RnicQp *qp, uint32_t psn,
                            const char *why)
{
    uint32_t mask = rnic_sq_mask(qp);
    uint32_t i;

    for (i = qp->sq_una; i != qp->sq_hi; i++) {
        RnicSqSlot *s = &qp->slots[i & mask];
        int32_t d;

        if (s->state != RNIC_SLOT_STARTED) {
            continue;
        }
        d = rnic_psn_diff(psn, s->first_psn);
        if (d < (int32_t)s->npsn ||
            rnic_wr_is(s->opcode, RNIC_WRF_RD_ATOMIC)) {
            qp->sq_next = i;
            qp->tx_pkt = d > 0 && d < (int32_t)s->npsn ? d : 0;
            if (s->opcode == RNIC_WR_RDMA_READ) {
                qp->tx_pkt = s->recv_psn;
            }
            rnic_stat_inc(e, RNIC_STAT_RETRANSMITS);
            rnic_event(e, RETRANSMIT, why, qp->qpn, psn);
            return;
        }
    }
}

/*
 * Acknowledge every SEND/WRITE whose last PSN is before 'psn' (or at it,
 * when 'inclusive'). Stops at the first READ/atomic without its response:
 * returns true when the acknowledgement covers it (the response was lost).
 */
static bool rnic_req_ack(RnicEngine *e, RnicQp *qp, uint32_t psn,
                         bool inclusive)
{
    uint32_t mask = rnic_sq_mask(qp);
    uint32_t i;

    for (i = qp->sq_una; i != qp->sq_hi; i++) {
        RnicSqSlot *s = &qp->slots[i & mask];
        int32_t d;

        if (s->state != RNIC_SLOT_STARTED) {
            continue;
        }
        if (rnic_wr_is(s->opcode, RNIC_WRF_RD_ATOMIC)) {
            d = rnic_psn_diff(psn, rnic_psn_add(s->first_psn, s->recv_psn));
            return d > 0 || (inclusive && d == 0);
        }
        d = rnic_psn_diff(psn, rnic_psn_add(s->first_psn, s->npsn - 1));
        if (d > 0 || (inclusive && d == 0)) {
            rnic_req_slot_done(qp, s, RNIC_WC_SUCCESS);
        } else {
            break;
        }
    }
    return false;
}

/* The oldest started, unfinished slot (NULL if none). */
static RnicSqSlot *rnic_req_oldest(RnicQp *qp, uint32_t *index)
{
    uint32_t mask = rnic_sq_mask(qp);
    uint32_t i;

    for (i = qp->sq_una; i != qp->sq_hi; i++) {
        RnicSqSlot *s = &qp->slots[i & mask];

        if (s->state == RNIC_SLOT_STARTED) {
            *index = i;
            return s;
        }
    }
    return NULL;
}

static void rnic_req_progress(RnicEngine *e, RnicQp *qp, uint32_t psn)
{
    if (rnic_psn_diff(psn, qp->una_psn) >= 0) {
        qp->una_psn = rnic_psn_add(psn, 1);
        qp->rewinding = false;
        if (qp->sq_stalled) {
            /* the window moved on: send what it held back */
            qp->sq_stalled = false;
            rnic_qp_work(e, qp, RNIC_QPW_SQ);
        }
        if (qp->timer_kind == RNIC_TIMER_RETRANSMIT) {
            rnic_qp_timer_set(e, qp, RNIC_TIMER_RETRANSMIT,
                              rnic_ack_timeout_ns(qp->timeout));
        }
    }
    qp->retry_left = qp->retry_cnt;
    qp->rnr_left = qp->rnr_retry;
}

/* A fatal NAK or bad response: the slot fails, the QP goes to ERR. */
static void rnic_req_fatal(RnicEngine *e, RnicQp *qp, uint32_t psn,
                           uint8_t status)
{
    uint32_t index;
    RnicSqSlot *s;

    rnic_req_ack(e, qp, psn, false);
    s = rnic_req_oldest(qp, &index);
    if (s) {
        rnic_req_slot_done(qp, s, status);
    }
    rnic_req_complete(e, qp);
    rnic_qp_error(e, qp);
}

static void rnic_req_nak(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt)
{
    uint8_t syn = pkt->aeth.syndrome;
    uint32_t psn = pkt->psn;

    rnic_event(e, NAK_RECEIVED, NULL, qp->qpn, psn, syn);
    if ((syn & RNIC_ROCE_AETH_TYPE_MASK) == RNIC_ROCE_AETH_RNR_NAK) {
        uint32_t index;
        RnicSqSlot *s;

        rnic_qp_stat_inc(e, qp, RNIC_STAT_RNR_NAK);
        rnic_req_ack(e, qp, psn, false);
        rnic_req_complete(e, qp);
        if (qp->state == RNIC_QPS_ERR) {
            return;
        }
        s = rnic_req_oldest(qp, &index);
        if (!s) {
            return;
        }
        if (qp->rnr_retry != 7) {
            if (!qp->rnr_left) {
                rnic_req_slot_done(qp, s, RNIC_WC_RNR_RETRY_EXC_ERR);
                rnic_req_complete(e, qp);
                rnic_qp_error(e, qp);
                return;
            }
            qp->rnr_left--;
        }
        rnic_req_rewind(e, qp, psn, "RNR NAK");
        qp->rnr_wait = true;
        rnic_qp_timer_set(e, qp, RNIC_TIMER_RNR,
                          rnic_rnr_timer_ns(syn & RNIC_ROCE_AETH_VALUE_MASK));
        return;
    }
    switch (syn & RNIC_ROCE_AETH_VALUE_MASK) {
    case RNIC_ROCE_NAK_PSN_SEQ_ERR:
        rnic_qp_stat_inc(e, qp, RNIC_STAT_PACKET_SEQ_ERR);
        rnic_req_ack(e, qp, psn, false);
        rnic_req_complete(e, qp);
        if (qp->state != RNIC_QPS_ERR) {
            rnic_req_rewind(e, qp, psn, "PSN sequence error NAK");
            qp->rewinding = true;
            rnic_qp_work(e, qp, RNIC_QPW_SQ);
        }
        break;
    case RNIC_ROCE_NAK_REMOTE_ACCESS:
        rnic_req_fatal(e, qp, psn, RNIC_WC_REM_ACCESS_ERR);
        break;
    case RNIC_ROCE_NAK_REMOTE_OP:
        rnic_req_fatal(e, qp, psn, RNIC_WC_REM_OP_ERR);
        break;
    default:
        rnic_req_fatal(e, qp, psn, RNIC_WC_REM_INV_REQ_ERR);
        break;
    }
}

/* Data of a READ response or an atomic result into the slot's buffers. */
static bool rnic_req_place(RnicEngine *e, RnicQp *qp, uint32_t index,
                           const RnicSqSlot *s, uint32_t off,
                           const RnicPayload *pl)
{
    RnicSendWqe *wqe = qp->rxc;

    if (rnic_req_cache(e, qp, index, s, wqe) != RNIC_WC_SUCCESS) {
        return false;
    }
    if (off + pl->len > wqe->length) {
        return false;
    }
    return !rnic_sges_place(e, wqe->sge, wqe->nsge, off, pl, 0, pl->len);
}

static void rnic_req_read_response(RnicEngine *e, RnicQp *qp,
                                   const RnicPacket *pkt)
{
    uint32_t pmtu = rnic_qp_pmtu(qp);
    uint8_t op = pkt->opcode;
    uint16_t flags = rnic_roce_ops[op].flags;
    uint32_t psn = pkt->psn;
    uint32_t index, expect, want, k;
    RnicSqSlot *s;
    int32_t d;

    rnic_req_ack(e, qp, psn, false);
    rnic_req_complete(e, qp);
    s = rnic_req_oldest(qp, &index);
    if (!s || (s->opcode != RNIC_WR_RDMA_READ &&
               !rnic_wr_is(s->opcode, RNIC_WRF_PLACEMENT))) {
        return;                     /* stale or duplicate */
    }
    expect = rnic_psn_add(s->first_psn, s->recv_psn);
    d = rnic_psn_diff(psn, expect);
    if (d < 0) {
        return;                     /* duplicate */
    }
    if (d > 0) {
        /*
         * responses missing: ask again from the first one we lack (once
         * per round, not for every later response of the same READ)
         */
        if (!qp->rewinding) {
            rnic_req_rewind(e, qp, expect, "READ responses missing");
            qp->rewinding = true;
            rnic_qp_work(e, qp, RNIC_QPW_SQ);
        }
        return;
    }
    k = s->recv_psn;
    want = MIN(pmtu, s->length - k * pmtu);
    if (s->length == 0 || s->opcode != RNIC_WR_RDMA_READ) {
        want = 0;                   /* FLUSH, ATOMIC WRITE: an empty answer */
    }
    if (!(flags & RNIC_ROCE_OPF_FIRST) != (k != 0) ||
        !(flags & RNIC_ROCE_OPF_LAST) != (k + 1 != s->npsn) ||
        pkt->payload.len != want) {
        rnic_event(e, UB_READ_RESPONSE, "bad READ response", qp->qpn, op,
                   pkt->payload.len, k, s->npsn);
        rnic_req_fatal(e, qp, psn, RNIC_WC_BAD_RESP_ERR);
        return;
    }
    if (want && !rnic_req_place(e, qp, index, s, k * pmtu, &pkt->payload)) {
        rnic_req_fatal(e, qp, psn, RNIC_WC_LOC_PROT_ERR);
        return;
    }
    s->recv_psn++;
    rnic_req_progress(e, qp, psn);
    if (s->recv_psn == s->npsn) {
        rnic_req_slot_done(qp, s, RNIC_WC_SUCCESS);
    }
    rnic_req_complete(e, qp);
}

static void rnic_req_atomic_ack(RnicEngine *e, RnicQp *qp,
                                const RnicPacket *pkt)
{
    uint32_t psn = pkt->psn;
    uint64_t orig = GUINT64_TO_LE(pkt->atomic_ack_eth.orig);
    RnicPayload pl = { .len = 8, .data = (const uint8_t *)&orig };
    uint32_t index;
    RnicSqSlot *s;

    rnic_req_ack(e, qp, psn, false);
    s = rnic_req_oldest(qp, &index);
    if (!s || s->first_psn != psn ||
        !rnic_wr_is(s->opcode, RNIC_WRF_ATOMIC)) {
        rnic_req_complete(e, qp);
        return;                     /* stale or duplicate */
    }
    if (!rnic_req_place(e, qp, index, s, 0, &pl)) {
        rnic_req_fatal(e, qp, psn, RNIC_WC_LOC_PROT_ERR);
        return;
    }
    rnic_req_progress(e, qp, psn);
    rnic_req_slot_done(qp, s, RNIC_WC_SUCCESS);
    rnic_req_complete(e, qp);
}

void rnic_req_rx(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt)
{
    uint32_t psn = pkt->psn;

    if (qp->type != RNIC_QPT_RC ||
        (qp->state != RNIC_QPS_RTS && qp->state != RNIC_QPS_SQD)) {
        return;
    }
    /* a response to a PSN never sent (a "ghost"): ignored */
    if (rnic_psn_diff(psn, qp->req_psn) >= 0) {
        rnic_stat_inc(e, RNIC_STAT_RX_DROPPED);
        return;
    }
    switch (pkt->opcode) {
    case RNIC_ROCE_RC_ACKNOWLEDGE:
        if ((pkt->aeth.syndrome & RNIC_ROCE_AETH_TYPE_MASK) !=
            RNIC_ROCE_AETH_ACK) {
            rnic_req_nak(e, qp, pkt);
            return;
        }
        if (rnic_req_ack(e, qp, psn, true)) {
            uint32_t una = qp->sq_una;

            /* acknowledged past a READ/atomic whose response was lost */
            rnic_qp_stat_inc(e, qp, RNIC_STAT_IMPLIED_NAK_SEQ);
            rnic_req_complete(e, qp);
            if (qp->sq_una != una) {
                qp->rewinding = false;
            }
            /*
             * once per round: every duplicate the responder acknowledges
             * says the same, and rewinding again for each would multiply
             * the retransmissions (a storm on a lossy wire)
             */
            if (qp->state != RNIC_QPS_ERR && !qp->rewinding) {
                uint32_t index;
                RnicSqSlot *s = rnic_req_oldest(qp, &index);

                if (s) {
                    rnic_req_rewind(e, qp, rnic_psn_add(s->first_psn,
                                                        s->recv_psn),
                                    "duplicate ACK");
                    qp->rewinding = true;
                    rnic_qp_work(e, qp, RNIC_QPW_SQ);
                }
            }
            return;
        }
        rnic_req_progress(e, qp, psn);
        rnic_req_complete(e, qp);
        break;
    case RNIC_ROCE_RC_ATOMIC_ACKNOWLEDGE:
        rnic_req_atomic_ack(e, qp, pkt);
        break;
    default:
        if (rnic_roce_ops[pkt->opcode].flags & RNIC_ROCE_OPF_READ) {
            rnic_req_read_response(e, qp, pkt);
        }
        break;
    }
}

/* ---------------------------------------------------------------------- */
/* Timers                                                                 */
/* ---------------------------------------------------------------------- */

/* Go back to the first unacknowledged packet of 's', the oldest slot. */
static void rnic_req_rewind_oldest(RnicEngine *e, RnicQp *qp, RnicSqSlot *s,
                                   const char *why)
{
    if (s->opcode == RNIC_WR_RDMA_READ ||
        rnic_psn_diff(qp->una_psn, s->first_psn) < 0 ||
        rnic_psn_diff(qp->una_psn, s->first_psn) >= (int32_t)s->npsn) {
        rnic_req_rewind(e, qp, rnic_psn_add(s->first_psn, s->recv_psn), why);
    } else {
        rnic_req_rewind(e, qp, qp->una_psn, why);
    }
}

/*
 * When every unacknowledged packet went out without AckReq, the peer may
 * have them all and simply not been asked: resend only the last one, with
 * AckReq. The peer acknowledges it as a duplicate, or NAKs the gap before
 * it (then go-back-N as usual). true: the probe is on its way.
 */
static bool rnic_req_probe_tail(RnicEngine *e, RnicQp *qp)
{
    int32_t unacked = rnic_psn_diff(qp->tx_psn_end, qp->una_psn);

    if (unacked <= 0 || (uint32_t)unacked > qp->noack_pkts) {
        return false;
    }
    rnic_req_rewind(e, qp, rnic_psn_add(qp->tx_psn_end, RNIC_ROCE_PSN_MASK),
                    "probe: packets sent without AckReq");
    qp->rewinding = true;
    rnic_qp_work(e, qp, RNIC_QPW_SQ);
    return true;
}

void rnic_req_timer(RnicEngine *e, RnicQp *qp)
{
    uint8_t kind = qp->timer_kind;
    uint32_t index;
    RnicSqSlot *s;

    qp->timer_kind = RNIC_TIMER_NONE;
    if (qp->state != RNIC_QPS_RTS && qp->state != RNIC_QPS_SQD) {
        return;
    }
    if (kind == RNIC_TIMER_RNR) {
        qp->rnr_wait = false;
        rnic_qp_work(e, qp, RNIC_QPW_SQ);
        return;
    }
    s = rnic_req_oldest(qp, &index);
    if (!s) {
        return;
    }
    rnic_qp_stat_inc(e, qp, RNIC_STAT_LOCAL_ACK_TIMEOUT);
    if (!qp->retry_left) {
        rnic_event(e, RETRY_EXCEEDED, NULL, qp->qpn, qp->una_psn);
        rnic_req_slot_done(qp, s, RNIC_WC_RETRY_EXC_ERR);
        rnic_req_complete(e, qp);
        rnic_qp_error(e, qp);
        return;
    }
    qp->retry_left--;
    if (rnic_req_probe_tail(e, qp)) {
        return;
    }
    rnic_req_rewind_oldest(e, qp, s, "retransmission timeout");
    qp->rewinding = true;
    rnic_qp_work(e, qp, RNIC_QPW_SQ);
}

void rnic_req_probe(RnicEngine *e, RnicQp *qp)
{
    if (qp->type == RNIC_QPT_RC && !qp->rnr_wait && !qp->rewinding) {
        rnic_req_probe_tail(e, qp);
    }
}

void rnic_req_resume(RnicEngine *e, RnicQp *qp)
{
    uint32_t index;
    RnicSqSlot *s;

    if (qp->type != RNIC_QPT_RC || qp->rnr_wait ||
        (qp->state != RNIC_QPS_RTS && qp->state != RNIC_QPS_SQD) ||
        rnic_gid_is_local(e, qp->ctx, qp->av.dgid)) {
        return;     /* loopback loses nothing; an RNR wait keeps its timer */
    }
    s = rnic_req_oldest(qp, &index);
    if (s) {
        rnic_req_rewind_oldest(e, qp, s, "resuming after a state load");
        qp->rewinding = true;
        rnic_qp_work(e, qp, RNIC_QPW_SQ);
    }
}
