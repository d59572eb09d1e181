/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the responder. Consumes request packets: PSN check
 * (sequence error NAK, duplicates re-acknowledged or replayed), opcode
 * sequence, receive-WQE consumption (RNR NAK when there is none), rkey
 * validation through the QP's network context, placement, atomics,
 * FLUSH and ATOMIC WRITE (IBTA 1.5 Memory Placement Extensions),
 * RDMA READ responses (streamed, bounded per run), ACK/NAK generation,
 * receive completions. UD receives (Q_Key, GRH) are here too, and UC's
 * rules: no acknowledgements, and what RC answers with a NAK drops the
 * message instead (rnic_resp_uc_drop).
 */
#include <string.h>
#include "rnic-engine-int.h"
#include "rnic-wire.h"

void rnic_resp_reset_qp(RnicQp *qp)
{
    RnicResp *resp = &qp->resp;
    RnicRespRes *res = resp->res;
    uint32_t nres = resp->nres;
    uint32_t epsn = resp->epsn;

    memset(resp, 0, offsetof(RnicResp, res));
    resp->epsn = epsn;
    resp->res = res;
    resp->nres = nres;
    resp->res_head = resp->res_send = resp->res_pending = 0;
    resp->ack_owed = false;
    memset(res, 0, sizeof(*res) * nres);
}

/* ---------------------------------------------------------------------- */
/* Sending ACKs, NAKs and responses                                       */
/* ---------------------------------------------------------------------- */

/* The opcodes of a READ response by position (RNIC_POS_*). */
static const uint8_t rnic_read_response_ops[4] = {
    RNIC_ROCE_RC_RDMA_READ_RESPONSE_ONLY,
    RNIC_ROCE_RC_RDMA_READ_RESPONSE_FIRST,
    RNIC_ROCE_RC_RDMA_READ_RESPONSE_MIDDLE,
    RNIC_ROCE_RC_RDMA_READ_RESPONSE_LAST,
};

static void rnic_resp_packet(RnicEngine *e, RnicQp *qp, RnicPacket *pkt,
                             uint8_t opcode, uint32_t psn)
{
    rnic_packet_net_from_av(e, qp, &qp->av, pkt);
    pkt->opcode = opcode;
    pkt->se = false;
    pkt->migreq = false;
    pkt->pad = 0;
    pkt->tver = 0;
    pkt->pkey = RNIC_ROCE_DEFAULT_PKEY;
    pkt->fecn = pkt->becn = false;
    pkt->dest_qp = qp->dest_qpn;
    pkt->ack_req = false;
    pkt->psn = psn & RNIC_ROCE_PSN_MASK;
    pkt->ext = rnic_op_ext(opcode);
    pkt->aeth.syndrome = RNIC_ROCE_AETH_ACK | RNIC_ROCE_AETH_CREDIT_INVALID;
    pkt->aeth.msn = qp->resp.msn & RNIC_ROCE_MSN_MASK;
    pkt->payload.len = 0;
    pkt->payload.data = NULL;
    pkt->payload.segs = NULL;
    pkt->payload.nsegs = 0;
}

static void rnic_resp_send_aeth(RnicEngine *e, RnicQp *qp, uint32_t psn,
                                uint8_t syndrome)
{
    RNIC_UNINIT RnicPacket pkt;

    if (e->scm.npending) {
        rnic_scm_persist_pending(e);  /* what the ACK covers is durable first */
    }
    rnic_resp_packet(e, qp, &pkt, RNIC_ROCE_RC_ACKNOWLEDGE, psn);
    pkt.aeth.syndrome = syndrome;
    if ((syndrome & RNIC_ROCE_AETH_TYPE_MASK) != RNIC_ROCE_AETH_ACK) {
        rnic_event(e, NAK_SENT, NULL, qp->qpn, psn, syndrome);
    }
    rnic_xmit(e, qp, &pkt);
}

/*
 * Responses still to send or a persist still to do before them: an ACK or
 * NAK waits (owed) until neither is left.
 */
static bool rnic_resp_busy(const RnicResp *resp)
{
    return resp->res_pending || resp->persist_off != resp->persist_end;
}

/*
 * The ACK owed once no response is pending: at the end of a receive batch
 * (rnic_resp_stream), and before a READ or atomic response is queued, so
 * that acknowledgements leave in PSN order.
 */
static void rnic_resp_flush_owed_ack(RnicEngine *e, RnicQp *qp)
{
    RnicResp *resp = &qp->resp;

    if (resp->ack_owed && !rnic_resp_busy(resp)) {
        resp->ack_owed = false;
        rnic_resp_send_aeth(e, qp, resp->ack_psn, resp->ack_syndrome);
    }
}

/* Send responses pending in the resource ring, up to 'budget' packets. */
static uint32_t rnic_resp_stream(RnicEngine *e, RnicQp *qp, uint32_t budget)
{
    RnicResp *resp = &qp->resp;
    uint32_t pmtu = rnic_qp_pmtu(qp);
    uint32_t sent = 0;

    /* what a FLUSH, DURABLE READ or MGMT request persists goes first */
    if (!rnic_scm_persist_step(e, qp)) {
        rnic_qp_work(e, qp, RNIC_QPW_RESP);     /* the rest next run */
        return 0;
    }
    while (resp->res_pending && sent < budget) {
        RnicRespRes *res = &resp->res[resp->res_send % resp->nres];
        RNIC_UNINIT RnicDmaSeg segs[RNIC_PKT_MAX_SEGS];
        RNIC_UNINIT uint8_t bounce[RNIC_MTU_MAX];
        RNIC_UNINIT RnicPacket pkt;

        if (res->kind == RNIC_RES_ATOMIC) {
            rnic_resp_packet(e, qp, &pkt, RNIC_ROCE_RC_ATOMIC_ACKNOWLEDGE,
                             res->psn);
            pkt.atomic_ack_eth.orig = res->orig;
            res->next = 1;
        } else {
            uint32_t k = res->next;
            uint32_t off = k * pmtu;
            uint32_t len = res->len ? MIN(pmtu, res->len - off) : 0;
            bool first = k == 0, last = k + 1 == res->npsn;
            uint8_t op = rnic_read_response_ops[rnic_msg_pos(first, last)];
            RnicMr *mr = NULL;

            rnic_resp_packet(e, qp, &pkt, op, res->psn + k);
            if (len) {
                /* re-checked per packet: the MR may have gone meanwhile */
                RnicXlateErr err = rnic_qp_rkey_resolve(qp, res->rkey,
                                                        res->va + off, len,
                                                        RNIC_ACCESS_REMOTE_READ,
                                                        &mr);

                pkt.payload.segs = segs;
                if (!err && rnic_scm_is_mgmt(mr, res->rkey)) {
                    /* a management key reads the region's status */
                    pkt.payload.data = rnic_scm_status_bytes(mr,
                                                             res->va + off);
                } else if (!err && !rnic_mr_segs(mr, res->va + off, len, segs,
                                                 &pkt.payload.nsegs,
                                                 RNIC_PKT_MAX_SEGS)) {
                    /* more pieces than a packet references: copied */
                    pkt.payload.segs = NULL;
                    pkt.payload.nsegs = 0;
                    pkt.payload.data = bounce;
                    if (len > RNIC_MTU_MAX ||
                        rnic_mr_read(e, mr, res->va + off, bounce, len)) {
                        err = RNIC_XLATE_MEMBER;
                    }
                }
                if (err) {
                    rnic_event(e, UB_READ_SOURCE, rnic_xlate_err_str(err),
                               qp->qpn, res->psn + k);
                    resp->res_pending = 0;
                    res->pending = false;
                    rnic_resp_send_aeth(e, qp, res->psn + k,
                                        RNIC_ROCE_AETH_NAK |
                                        RNIC_ROCE_NAK_REMOTE_ACCESS);
                    rnic_async_event(e, RNIC_EQE_QP_ACCESS_ERR, qp->handle,
                                     qp->qpn);
                    rnic_qp_error(e, qp);
                    return sent;
                }
                pkt.payload.len = len;
            }
            res->next++;
        }
        if (res->next >= res->npsn) {
            res->pending = false;
            resp->res_send++;
            resp->res_pending--;
        }
        if (e->scm.npending) {
            rnic_scm_persist_pending(e);    /* durable before answered */
        }
        rnic_xmit(e, qp, &pkt);
        sent++;
        if (qp->state == RNIC_QPS_ERR) {
            return sent;
        }
    }
    rnic_resp_flush_owed_ack(e, qp);
    return sent;
}

uint32_t rnic_resp_process(RnicEngine *e, RnicQp *qp, uint32_t budget)
{
    return rnic_resp_stream(e, qp, budget);
}

/*
 * Acknowledge 'psn' (after any responses still being streamed). 'now':
 * at once; otherwise at the end of this receive batch, in the next run
 * (rnic_resp_stream): ACKs coalesce, one covers every packet before it,
 * so a burst of WRITEs the host delivers in one go costs one ACK frame,
 * not one per message, on both ends. A receive's completion and a
 * duplicate's ACK go now.
 */
static void rnic_resp_ack(RnicEngine *e, RnicQp *qp, uint32_t psn, bool now)
{
    RnicResp *resp = &qp->resp;

    if (qp->type != RNIC_QPT_RC) {
        return;                     /* UC acknowledges nothing */
    }
    /*
     * an owed ACK or NAK covers every PSN before it: only a later ACK
     * replaces it (a duplicate's ACK may be older than the one owed)
     */
    if (resp->ack_owed && rnic_psn_diff(psn, resp->ack_psn) < 0) {
        if (now && !rnic_resp_busy(resp)) {
            resp->ack_owed = false;
            rnic_resp_send_aeth(e, qp, resp->ack_psn, resp->ack_syndrome);
        }
        return;
    }
    if (rnic_resp_busy(resp) || !now) {
        if (!rnic_resp_busy(resp) && !resp->ack_owed) {
            rnic_qp_work(e, qp, RNIC_QPW_RESP);
        }
        resp->ack_owed = true;
        resp->ack_psn = psn;
        resp->ack_syndrome = RNIC_ROCE_AETH_ACK | RNIC_ROCE_AETH_CREDIT_INVALID;
        return;
    }
    resp->ack_owed = false;
    rnic_resp_send_aeth(e, qp, psn,
                        RNIC_ROCE_AETH_ACK | RNIC_ROCE_AETH_CREDIT_INVALID);
}

/*
 * The ACK of a message that completes a receive goes out before its CQE is
 * written: the guest that polls the CQ reacts at once (posts the next
 * receive, its reply: MMIO writes that need the BQL), and would otherwise
 * find the device still busy sending the ACK, under the BQL. The message
 * is placed by then; only the local completion follows.
 */
static void rnic_resp_ack_first(RnicEngine *e, RnicQp *qp,
                                const RnicPacket *pkt)
{
    if (pkt->ack_req) {
        rnic_resp_ack(e, qp, pkt->psn, true);
    }
}

/*
 * A NAK goes out after every response queued before it. With responses
 * still to stream it is owed, like a coalesced ACK, and leaves when the
 * stream ends (rnic_resp_flush_owed_ack), so that a receive call does a
 * bounded amount of work whatever the peer queued: 16 READs of 2 GiB and
 * a PSN gap would otherwise be 8 M frames in one call.
 */
static void rnic_resp_nak(RnicEngine *e, RnicQp *qp, uint32_t psn,
                          uint8_t syndrome)
{
    RnicResp *resp = &qp->resp;

    if (rnic_resp_busy(resp)) {
        if (!resp->ack_owed) {
            rnic_qp_work(e, qp, RNIC_QPW_RESP);
        }
        resp->ack_owed = true;
        resp->ack_psn = psn & RNIC_ROCE_PSN_MASK;
        resp->ack_syndrome = syndrome;
        return;
    }
    resp->ack_owed = false;
    rnic_resp_send_aeth(e, qp, psn, syndrome);
}

/*
 * A fatal NAK cannot wait: the QP goes to ERR right after it. The
 * responses still owed are dropped (the peer's requester completes them
 * in error when the NAK moves its QP to ERR too).
 */
static void rnic_resp_nak_fatal(RnicEngine *e, RnicQp *qp, uint32_t psn,
                                uint8_t syndrome)
{
    RnicResp *resp = &qp->resp;
    uint32_t i;

    for (i = 0; i < resp->nres; i++) {
        resp->res[i].pending = false;
    }
    resp->res_pending = 0;
    resp->res_send = resp->res_head;
    resp->ack_owed = false;
    resp->persist_off = resp->persist_end = 0;
    rnic_resp_send_aeth(e, qp, psn, syndrome);
}

/*
 * After a migration (the first run of a loaded engine): a NAK "PSN sequence
 * error" at the expected PSN tells the peer's requester to resend from
 * there at once what it sent while the VM was stopped (lost on the way to
 * the source, or before the switch learned the new port) instead of after
 * its ACK timeout. It acknowledges nothing the responder lacks; a peer
 * with nothing outstanding ignores it. Once, like a gap's NAK.
 */
void rnic_resp_prompt(RnicEngine *e, RnicQp *qp)
{
    RnicResp *resp = &qp->resp;

    if (qp->type != RNIC_QPT_RC ||
        (qp->state != RNIC_QPS_RTR && qp->state != RNIC_QPS_RTS &&
         qp->state != RNIC_QPS_SQD) ||
        rnic_gid_is_local(e, qp->ctx, qp->av.dgid)) {
        return;
    }
    resp->nak_sent = true;
    rnic_resp_nak(e, qp, resp->epsn,
                  RNIC_ROCE_AETH_NAK | RNIC_ROCE_NAK_PSN_SEQ_ERR);
}

/* ---------------------------------------------------------------------- */
/* Errors                                                                 */
/* ---------------------------------------------------------------------- */

static void rnic_resp_recv_complete(RnicEngine *e, RnicQp *qp, uint8_t status,
                                    uint8_t opcode, uint32_t byte_len,
                                    uint32_t imm_or_inv, uint8_t flags)
{
    RnicRecvWqe *rw = &qp->resp.recv;
    RnicCqeInfo ci = {
        .wr_id = rw->wr_id,
        .byte_len = byte_len,
        .imm_or_inv = imm_or_inv,
        .opcode = opcode,
        .status = status,
        .flags = flags,
    };

    rw->valid = false;
    rnic_cq_post(e, qp->rcq, qp, &ci);
}

/*
 * UC: a message that RC would answer with an invalid-request or
 * remote-access NAK is dropped, it and the rest of its packets (up to the
 * next first packet); the QP stays as it is (UC responders
 * report no such errors). A message longer than the receive buffer
 * completes that WQE with a local length error, as UD does.
 */
static void rnic_resp_uc_drop(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt,
                              uint8_t recv_status, const char *why)
{
    rnic_event(e, UB_REQUEST, why, qp->qpn, pkt->psn, pkt->opcode);
    rnic_stat_inc(e, RNIC_STAT_RX_DROPPED);
    if (recv_status == RNIC_WC_LOC_LEN_ERR && qp->resp.recv.valid) {
        rnic_resp_recv_complete(e, qp, recv_status, RNIC_WC_RECV, 0, 0, 0);
    }
    qp->resp.in_msg = 0;
}

/*
 * A fatal responder error: the current receive WQE (if any) completes with
 * 'recv_status', the requester gets NAK 'nak', the QP an async 'event' and
 * goes to ERR. On UC only a failure of this side's own memory (NAK
 * "remote operational error") is fatal, without a NAK.
 */
static void rnic_resp_fail(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt,
                           uint8_t nak, uint8_t event, uint8_t recv_status,
                           const char *why)
{
    if (qp->type == RNIC_QPT_UC && nak != RNIC_ROCE_NAK_REMOTE_OP) {
        rnic_resp_uc_drop(e, qp, pkt, recv_status, why);
        return;
    }
    rnic_event(e, UB_REQUEST, why, qp->qpn, pkt->psn, pkt->opcode);
    if (qp->resp.recv.valid) {
        rnic_resp_recv_complete(e, qp, recv_status, RNIC_WC_RECV, 0, 0, 0);
    }
    if (qp->type == RNIC_QPT_RC) {
        rnic_resp_nak_fatal(e, qp, pkt->psn, RNIC_ROCE_AETH_NAK | nak);
    }
    if (event) {
        rnic_async_event(e, event, qp->handle, qp->qpn);
    }
    rnic_qp_error(e, qp);
}

/* ---------------------------------------------------------------------- */
/* Requests                                                               */
/* ---------------------------------------------------------------------- */

/*
 * Make sure a receive WQE is at hand. false: the packet was answered
 * (RNR NAK, or a fatal error).
 */
static bool rnic_resp_get_recv(RnicEngine *e, RnicQp *qp,
                               const RnicPacket *pkt)
{
    RnicRecvWqe *rw = &qp->resp.recv;
    uint8_t status;

    if (rw->valid) {
        if (rw->mr_gen != e->mr_gen) {
            const RnicPd *pd = qp->srq ? qp->srq->pd : qp->pd;

            if (!rnic_sges_resolve(e, rnic_pd_lkeys(e, pd), pd, rw->sge,
                                   rw->nsge, RNIC_ACCESS_LOCAL_WRITE)) {
                rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_REMOTE_OP, 0,
                               RNIC_WC_LOC_PROT_ERR,
                               "receive buffer no longer registered");
                return false;
            }
            rw->mr_gen = e->mr_gen;
        }
        return true;
    }
    if (!rnic_recv_fetch(e, qp, rw, &status)) {
        if (status == RNIC_WC_SUCCESS) {
            rnic_qp_stat_inc(e, qp, RNIC_STAT_OUT_OF_BUFFER);
        }
        if (status == RNIC_WC_SUCCESS && qp->type == RNIC_QPT_UC) {
            /* no receive WQE: UC drops the message */
            rnic_stat_inc(e, RNIC_STAT_RX_DROPPED);
            qp->resp.in_msg = 0;
        } else if (status == RNIC_WC_SUCCESS) {
            /* receiver not ready: the requester retries after the timer */
            rnic_resp_nak(e, qp, pkt->psn,
                          RNIC_ROCE_AETH_RNR_NAK | qp->min_rnr_timer);
        } else {
            rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_REMOTE_OP,
                           RNIC_EQE_QP_FATAL, 0,
                           "receive queue not readable");
        }
        return false;
    }
    if (status != RNIC_WC_SUCCESS) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_REMOTE_OP, 0, status,
                       "bad receive WQE");
        return false;
    }
    return true;
}

/*
 * The region 'rkey' names for [va, va + len) with 'access', or NULL after
 * the remote access error NAK that moves the QP to ERR.
 */
static RnicMr *rnic_resp_rkey(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt,
                              uint32_t rkey, uint64_t va, uint64_t len,
                              uint32_t access)
{
    RnicXlateErr err;
    RnicMr *mr;

    err = rnic_qp_rkey_resolve(qp, rkey, va, len, access, &mr);
    if (err) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_REMOTE_ACCESS,
                       RNIC_EQE_QP_ACCESS_ERR, 0, rnic_xlate_err_str(err));
        return NULL;
    }
    return mr;
}

static bool rnic_resp_len_ok(const RnicQp *qp, const RnicPacket *pkt,
                             bool first, bool last)
{
    uint32_t pmtu = rnic_qp_pmtu(qp);
    uint32_t len = pkt->payload.len;

    if (!last) {
        return len == pmtu;         /* FIRST, MIDDLE: exactly one MTU */
    }
    if (!first) {
        return len >= 1 && len <= pmtu;
    }
    return len <= pmtu;
}

static void rnic_resp_send(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt,
                           bool first, bool last)
{
    RnicResp *resp = &qp->resp;
    RnicRecvWqe *rw = &resp->recv;
    uint32_t len = pkt->payload.len;
    uint8_t flags = 0;
    uint32_t imm_or_inv = 0;

    if (!rnic_resp_get_recv(e, qp, pkt)) {
        return;
    }
    if (first) {
        rw->offset = 0;
    }
    if (len > rw->length - rw->offset) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_INVALID_REQ, 0,
                       RNIC_WC_LOC_LEN_ERR,
                       "message longer than the receive buffer");
        return;
    }
    if (len && rnic_sges_place(e, rw->sge, rw->nsge, rw->offset, &pkt->payload,
                               0, len)) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_REMOTE_OP, 0,
                       RNIC_WC_LOC_PROT_ERR,
                       "receive buffer not writable");
        return;
    }
    rw->offset += len;
    resp->epsn = rnic_psn_add(resp->epsn, 1);
    resp->in_msg = last ? 0 : RNIC_RESP_SEND;
    if (last) {
        if (pkt->ext & RNIC_ROCE_EXT_IETH) {
            /* remote: the STag must resolve in this network's table */
            if (rnic_mr_invalidate(e, &qp->ctx->mrt, qp, pkt->ieth.rkey,
                                   true) != RNIC_WC_SUCCESS) {
                rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_INVALID_REQ,
                               RNIC_EQE_QP_REQ_ERR, RNIC_WC_LOC_PROT_ERR,
                               "SEND with invalidate of an STag that cannot "
                               "be invalidated");
                return;
            }
            flags |= RNIC_CQE_WITH_INV;
            imm_or_inv = GUINT32_TO_LE(pkt->ieth.rkey);
        }
        if (pkt->ext & RNIC_ROCE_EXT_IMMDT) {
            flags |= RNIC_CQE_WITH_IMM;
            imm_or_inv = GUINT32_TO_BE(pkt->immdt);
        }
        if (pkt->se) {
            flags |= RNIC_CQE_SOLICITED;
        }
        resp->msn++;
        rnic_resp_ack_first(e, qp, pkt);
        rnic_resp_recv_complete(e, qp, RNIC_WC_SUCCESS, RNIC_WC_RECV,
                                rw->offset, imm_or_inv, flags);
        return;
    }
    if (pkt->ack_req) {
        rnic_resp_ack(e, qp, pkt->psn, false);
    }
}

static void rnic_resp_write(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt,
                            bool first, bool last)
{
    RnicResp *resp = &qp->resp;
    uint32_t len = pkt->payload.len;
    RnicXlateErr err;
    RnicMr *mr;

    if (first) {
        if (!(qp->access & RNIC_ACCESS_REMOTE_WRITE)) {
            rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_REMOTE_ACCESS,
                           RNIC_EQE_QP_ACCESS_ERR, 0,
                           "QP does not allow remote writes");
            return;
        }
        if (pkt->reth.dma_len > RNIC_MAX_MSG_SIZE ||
            (last && pkt->reth.dma_len != len) ||
            (!last && pkt->reth.dma_len <= len)) {
            rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_INVALID_REQ,
                           RNIC_EQE_QP_REQ_ERR, 0,
                           "RETH length inconsistent with the packets");
            return;
        }
        if (pkt->reth.dma_len) {
            err = rnic_qp_rkey_resolve(qp, pkt->reth.rkey, pkt->reth.va,
                                       pkt->reth.dma_len,
                                       RNIC_ACCESS_REMOTE_WRITE, &mr);
            if (err) {
                rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_REMOTE_ACCESS,
                               RNIC_EQE_QP_ACCESS_ERR, 0,
                               rnic_xlate_err_str(err));
                return;
            }
        }
        resp->w_rkey = pkt->reth.rkey;
        resp->w_va = pkt->reth.va;
        resp->w_len = pkt->reth.dma_len;
        resp->w_done = 0;
    } else if (len > resp->w_len - resp->w_done ||
               (last && resp->w_done + len != resp->w_len)) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_INVALID_REQ,
                       RNIC_EQE_QP_REQ_ERR, 0,
                       "RDMA WRITE longer or shorter than its RETH");
        return;
    }
    /* WRITE with immediate consumes a receive WQE: have it first */
    if (last && (pkt->ext & RNIC_ROCE_EXT_IMMDT) && !rnic_resp_get_recv(e, qp,
                                                                        pkt)) {
        return;
    }
    if (len) {
        uint64_t va = resp->w_va + resp->w_done;
        bool placed;

        mr = rnic_resp_rkey(e, qp, pkt, resp->w_rkey, va, len,
                            RNIC_ACCESS_REMOTE_WRITE);
        if (!mr) {
            return;
        }
        if (rnic_scm_is_mgmt(mr, resp->w_rkey)) {
            placed = rnic_scm_mgmt(e, qp, mr, &pkt->payload);
        } else {
            placed = !rnic_mr_place(e, mr, va, &pkt->payload, 0, len);
            rnic_scm_written(e, mr, resp->w_rkey, va, len);
        }
        if (!placed) {
            rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_REMOTE_OP,
                           RNIC_EQE_QP_FATAL, 0,
                           "target memory not writable");
            return;
        }
    }
    resp->w_done += len;
    resp->epsn = rnic_psn_add(resp->epsn, 1);
    resp->in_msg = last ? 0 : RNIC_RESP_WRITE;
    if (last) {
        resp->msn++;
        if (pkt->ext & RNIC_ROCE_EXT_IMMDT) {
            rnic_resp_ack_first(e, qp, pkt);
            rnic_resp_recv_complete(e, qp, RNIC_WC_SUCCESS,
                                    RNIC_WC_RECV_RDMA_WITH_IMM, resp->w_len,
                                    GUINT32_TO_BE(pkt->immdt),
                                    RNIC_CQE_WITH_IMM |
                                    (pkt->se ? RNIC_CQE_SOLICITED : 0));
            return;
        }
    }
    if (pkt->ack_req) {
        rnic_resp_ack(e, qp, pkt->psn, false);
    }
}

static void rnic_resp_res_swap(RnicRespRes *a, RnicRespRes *b)
{
    RnicRespRes t = *a;

    *a = *b;
    *b = t;
}

/*
 * The next entry of the ring, with 'keep' (an entry whose responses are
 * replayed) or else the least recent request moved into it: what a new
 * request evicts is the oldest one by PSN, never one the requester may
 * still ask for again (duplicates reorder the ring).
 */
static RnicRespRes *rnic_resp_res_take(RnicResp *resp, RnicRespRes *keep)
{
    RnicRespRes *res, *victim;
    uint32_t i;

    if (resp->res_pending >= resp->nres) {
        return NULL;
    }
    res = &resp->res[resp->res_head % resp->nres];  /* never pending */
    victim = keep;
    if (!victim) {
        victim = res;
        for (i = 0; i < resp->nres && victim->kind != RNIC_RES_FREE; i++) {
            RnicRespRes *cand = &resp->res[i];

            if (!cand->pending &&
                (cand->kind == RNIC_RES_FREE ||
                 rnic_psn_diff(resp->epsn, cand->psn) >
                 rnic_psn_diff(resp->epsn, victim->psn))) {
                victim = cand;
            }
        }
    }
    if (victim != res) {
        rnic_resp_res_swap(res, victim);
    }
    resp->res_head++;
    resp->res_pending++;
    if (!keep) {
        memset(res, 0, sizeof(*res));
    }
    res->pending = true;
    return res;
}

static RnicRespRes *rnic_resp_res_new(RnicResp *resp)
{
    return rnic_resp_res_take(resp, NULL);
}

/* A free responder resource for a READ-like request, or a fatal NAK. */
static bool rnic_resp_res_room(RnicEngine *e, RnicQp *qp,
                               const RnicPacket *pkt)
{
    if (qp->resp.res_pending < qp->resp.nres) {
        return true;
    }
    rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_INVALID_REQ, RNIC_EQE_QP_REQ_ERR,
                   0, "more outstanding READ/atomic than max_dest_rd_atomic");
    return false;
}

static void rnic_resp_read(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt)
{
    RnicResp *resp = &qp->resp;
    uint32_t pmtu = rnic_qp_pmtu(qp);
    uint32_t len = pkt->reth.dma_len;
    RnicRespRes *res;
    RnicMr *mr;

    if (!(qp->access & RNIC_ACCESS_REMOTE_READ)) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_REMOTE_ACCESS,
                       RNIC_EQE_QP_ACCESS_ERR,
                       0, "QP does not allow remote reads");
        return;
    }
    if (len > RNIC_MAX_MSG_SIZE) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_INVALID_REQ,
                       RNIC_EQE_QP_REQ_ERR, 0,
                       "READ longer than 2 GiB");
        return;
    }
    if (len) {
        mr = rnic_resp_rkey(e, qp, pkt, pkt->reth.rkey, pkt->reth.va, len,
                            RNIC_ACCESS_REMOTE_READ);
        if (!mr) {
            return;
        }
        rnic_scm_before_read(e, qp, mr, pkt->reth.rkey, pkt->reth.va, len);
    }
    rnic_resp_flush_owed_ack(e, qp);
    res = rnic_resp_res_new(resp);
    if (!res) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_INVALID_REQ,
                       RNIC_EQE_QP_REQ_ERR, 0,
                       "more outstanding READ/atomic than max_dest_rd_atomic");
        return;
    }
    res->kind = RNIC_RES_READ;
    res->psn = pkt->psn;
    res->npsn = len ? (len + pmtu - 1) / pmtu : 1;
    res->va = pkt->reth.va;
    res->rkey = pkt->reth.rkey;
    res->len = len;
    resp->epsn = rnic_psn_add(resp->epsn, res->npsn);
    resp->msn++;
    if (rnic_resp_stream(e, qp, 64) && resp->res_pending) {
        rnic_qp_work(e, qp, RNIC_QPW_RESP);
    }
}

static void rnic_resp_atomic(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt)
{
    RnicResp *resp = &qp->resp;
    const RnicRoceAtomicEth *a = &pkt->atomic_eth;
    RnicRespRes *res;
    uint64_t orig, val;
    RnicMr *mr;

    if (!(qp->access & RNIC_ACCESS_REMOTE_ATOMIC)) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_REMOTE_ACCESS,
                       RNIC_EQE_QP_ACCESS_ERR,
                       0, "QP does not allow remote atomics");
        return;
    }
    if (a->va & 7) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_INVALID_REQ,
                       RNIC_EQE_QP_REQ_ERR, 0,
                       "atomic address not 8-byte aligned");
        return;
    }
    mr = rnic_resp_rkey(e, qp, pkt, a->rkey, a->va, 8,
                        RNIC_ACCESS_REMOTE_ATOMIC);
    if (!mr || !rnic_resp_res_room(e, qp, pkt)) {
        return;
    }
    /* atomic with respect to every other device access (one thread) */
    if (rnic_mr_read(e, mr, a->va, &orig, 8)) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_REMOTE_OP, RNIC_EQE_QP_FATAL,
                       0,
                       "atomic target not readable");
        return;
    }
    orig = GUINT64_FROM_LE(orig);
    if (pkt->opcode == RNIC_ROCE_RC_COMPARE_SWAP) {
        val = orig == a->compare ? a->swap_add : orig;
    } else {
        val = orig + a->swap_add;
    }
    if (val != orig) {
        uint64_t le = GUINT64_TO_LE(val);

        if (rnic_mr_write(e, mr, a->va, &le, 8)) {
            rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_REMOTE_OP,
                           RNIC_EQE_QP_FATAL, 0,
                           "atomic target not writable");
            return;
        }
        rnic_scm_written(e, mr, a->rkey, a->va, 8);
    }
    rnic_resp_flush_owed_ack(e, qp);
    res = rnic_resp_res_new(resp);
    res->kind = RNIC_RES_ATOMIC;
    res->psn = pkt->psn;
    res->npsn = 1;
    res->va = a->va;
    res->rkey = a->rkey;
    res->len = 8;
    res->orig = orig;
    resp->epsn = rnic_psn_add(resp->epsn, 1);
    resp->msn++;
    rnic_resp_stream(e, qp, 64);
}

/*
 * FLUSH and ATOMIC WRITE take a responder resource like a READ and are
 * answered like a READ of nothing: one READ RESPONSE ONLY without payload
 * (IBTA 1.5 oA19; rxe answers the same). The caller made sure there is a
 * free resource before executing the request; a duplicate replays the
 * answer without executing again.
 */
static void rnic_resp_answer_empty(RnicEngine *e, RnicQp *qp,
                                   const RnicPacket *pkt, uint8_t kind)
{
    RnicResp *resp = &qp->resp;
    RnicRespRes *res;

    rnic_resp_flush_owed_ack(e, qp);
    res = rnic_resp_res_new(resp);
    res->kind = kind;
    res->psn = pkt->psn;
    res->npsn = 1;
    res->va = pkt->reth.va;
    res->rkey = pkt->reth.rkey;
    res->len = 0;
    resp->epsn = rnic_psn_add(resp->epsn, 1);
    resp->msn++;
    rnic_resp_stream(e, qp, 64);
}

/*
 * RDMA FLUSH: make what earlier requests placed in [va, va + len) of the
 * region (or all of it) globally visible or persistent, then answer.
 * Every earlier write is already in memory when this runs (requests are
 * executed in order, placed by DMA before they are acknowledged): global
 * visibility needs nothing more. Persistence needs memory that persists,
 * which a region must have been registered for (RNIC_ACCESS_FLUSH_
 * PERSISTENT is refused on guest RAM), so an rkey without it is a remote
 * access error, as IBTA 1.5 oA19-13 says for any placement type the
 * region does not allow.
 */
static void rnic_resp_flush(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt)
{
    const RnicRoceFeth *f = &pkt->feth;
    uint32_t access = 0;
    uint64_t len = pkt->reth.dma_len;
    RnicMr *mr;

    if (f->sel > RNIC_FLUSH_MR || !f->plt ||
        (f->plt & ~(RNIC_FLUSH_GLOBAL | RNIC_FLUSH_PERSISTENT))) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_INVALID_REQ,
                       RNIC_EQE_QP_REQ_ERR, 0,
                       "FLUSH placement type or selectivity not defined");
        return;
    }
    if (f->plt & RNIC_FLUSH_GLOBAL) {
        access |= RNIC_ACCESS_FLUSH_GLOBAL;
    }
    if (f->plt & RNIC_FLUSH_PERSISTENT) {
        access |= RNIC_ACCESS_FLUSH_PERSISTENT;
    }
    /* the whole region: no range to check, only key, PD, rights, state */
    mr = rnic_resp_rkey(e, qp, pkt, pkt->reth.rkey, pkt->reth.va,
                        f->sel == RNIC_FLUSH_MR ? 0 : len, access);
    if (!mr || !rnic_resp_res_room(e, qp, pkt)) {
        return;
    }
    rnic_event(e, FLUSH, NULL, qp->qpn, pkt->psn, f->plt, f->sel, len);
    if (f->plt & RNIC_FLUSH_PERSISTENT) {
        if (f->sel == RNIC_FLUSH_MR) {
            rnic_scm_persist(e, qp, mr, mr->iova, mr->length);
        } else {
            rnic_scm_persist(e, qp, mr, pkt->reth.va, len);
        }
    }
    rnic_resp_answer_empty(e, qp, pkt, RNIC_RES_FLUSH);
}

/*
 * ATOMIC WRITE: 8 bytes placed in one access (no other device access can
 * see half of them: the engine is one thread), needing remote write
 * rights on the QP and the region, like rxe.
 */
static void rnic_resp_atomic_write(RnicEngine *e, RnicQp *qp,
                                   const RnicPacket *pkt)
{
    RnicMr *mr;

    if (!(qp->access & RNIC_ACCESS_REMOTE_WRITE)) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_REMOTE_ACCESS,
                       RNIC_EQE_QP_ACCESS_ERR, 0,
                       "QP does not allow remote writes");
        return;
    }
    if (pkt->payload.len != 8 || pkt->reth.dma_len != 8) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_INVALID_REQ,
                       RNIC_EQE_QP_REQ_ERR, 0,
                       "ATOMIC WRITE of other than 8 bytes");
        return;
    }
    if (pkt->reth.va & 7) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_INVALID_REQ,
                       RNIC_EQE_QP_REQ_ERR, 0,
                       "ATOMIC WRITE address not 8-byte aligned");
        return;
    }
    mr = rnic_resp_rkey(e, qp, pkt, pkt->reth.rkey, pkt->reth.va, 8,
                        RNIC_ACCESS_REMOTE_WRITE);
    if (!mr || !rnic_resp_res_room(e, qp, pkt)) {
        return;
    }
    if (rnic_mr_place(e, mr, pkt->reth.va, &pkt->payload, 0, 8)) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_REMOTE_OP, RNIC_EQE_QP_FATAL,
                       0, "ATOMIC WRITE target not writable");
        return;
    }
    rnic_scm_written(e, mr, pkt->reth.rkey, pkt->reth.va, 8);
    rnic_resp_answer_empty(e, qp, pkt, RNIC_RES_ATOMIC_WRITE);
}

/* The responder resource kind of a READ-like request's flags. */
static uint8_t rnic_resp_res_kind(uint16_t flags)
{
    if (flags & RNIC_ROCE_OPF_READ) {
        return RNIC_RES_READ;
    }
    if (flags & RNIC_ROCE_OPF_ATOMIC) {
        return RNIC_RES_ATOMIC;
    }
    if (flags & RNIC_ROCE_OPF_FLUSH) {
        return RNIC_RES_FLUSH;
    }
    if (flags & RNIC_ROCE_OPF_ATOMIC_WRITE) {
        return RNIC_RES_ATOMIC_WRITE;
    }
    return RNIC_RES_FREE;           /* SEND, WRITE: no resource */
}

/* A request we have seen before (PSN behind the expected one). */
static void rnic_resp_duplicate(RnicEngine *e, RnicQp *qp,
                                const RnicPacket *pkt)
{
    RnicResp *resp = &qp->resp;
    uint32_t psn = pkt->psn;
    uint16_t flags = rnic_roce_ops[pkt->opcode].flags;
    uint8_t kind = rnic_resp_res_kind(flags);
    uint32_t i;

    if ((flags & RNIC_ROCE_OPF_REQUEST) && kind != RNIC_RES_FREE) {
        for (i = 0; i < resp->nres; i++) {
            RnicRespRes *old = &resp->res[i];
            int32_t d = rnic_psn_diff(psn, old->psn);
            RnicRespRes *res;

            if (old->kind != kind || d < 0 || d >= (int32_t)old->npsn) {
                continue;
            }
            if (old->pending) {
                return;             /* its responses are on their way */
            }
            /*
             * replay: READ re-reads memory from that PSN on, an atomic
             * returns its original result, FLUSH and ATOMIC WRITE their
             * empty answer, without executing again
             */
            res = rnic_resp_res_take(resp, old);  /* moved, evicts nothing */
            if (!res) {
                return;
            }
            res->next = d;
            if (rnic_resp_stream(e, qp, 64) && resp->res_pending) {
                rnic_qp_work(e, qp, RNIC_QPW_RESP);
            }
            return;
        }
        return;                     /* unknown: dropped, the peer retries */
    }
    /*
     * SEND/WRITE: acknowledged again with its own PSN, not with the last
     * one executed (epsn - 1): that may be a READ's last PSN whose
     * response the requester has not had yet, and rxe's requester takes
     * an ACK at a READ's last PSN for the READ's completion, leaving the
     * missing response's bytes unwritten (rxe acknowledges a duplicate
     * with the last SEND/WRITE it executed, never a READ's PSN).
     */
    if (pkt->ack_req) {
        rnic_resp_ack(e, qp, psn, true);
    }
}

static void rnic_resp_ud(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt)
{
    RnicRecvWqe *rw = &qp->resp.recv;
    uint8_t grh[RNIC_ROCE_GRH_LEN];
    RnicPayload gpl = { .len = sizeof(grh), .data = grh };
    uint8_t status, flags = RNIC_CQE_GRH;
    uint32_t len = pkt->payload.len;
    RnicCqeInfo ci;

    if (qp->state != RNIC_QPS_RTR && qp->state != RNIC_QPS_RTS &&
        qp->state != RNIC_QPS_SQD && qp->state != RNIC_QPS_SQE) {
        return;
    }
    if (pkt->opcode != RNIC_ROCE_UD_SEND_ONLY &&
        pkt->opcode != RNIC_ROCE_UD_SEND_ONLY_WITH_IMMEDIATE) {
        rnic_stat_inc(e, RNIC_STAT_RX_DROPPED);
        return;
    }
    if (pkt->deth.qkey != qp->qkey) {
        rnic_event(e, UD_QKEY_DROP, NULL, qp->qpn, pkt->deth.qkey);
        rnic_stat_inc(e, RNIC_STAT_RX_DROPPED);
        return;
    }
    if (!rnic_recv_fetch(e, qp, rw, &status)) {
        if (status != RNIC_WC_SUCCESS) {
            rnic_async_event(e, RNIC_EQE_QP_FATAL, qp->handle, qp->qpn);
            rnic_qp_error(e, qp);
        } else {
            rnic_qp_stat_inc(e, qp, RNIC_STAT_OUT_OF_BUFFER);
            rnic_stat_inc(e, RNIC_STAT_RX_DROPPED);     /* no buffer: dropped */
        }
        return;
    }
    memset(&ci, 0, sizeof(ci));
    ci.wr_id = rw->wr_id;
    ci.opcode = RNIC_WC_RECV;
    ci.src_qp = pkt->deth.src_qp;
    ci.smac = pkt->net.smac;
    ci.vlan_id = pkt->net.vlan_id;
    ci.status = status;
    if (status == RNIC_WC_SUCCESS && sizeof(grh) + len > rw->length) {
        rnic_event(e, UB_UD_LENGTH, "UD datagram (+40 GRH) larger than the "
                   "receive buffer", qp->qpn, len);
        ci.status = RNIC_WC_LOC_LEN_ERR;
    }
    if (ci.status == RNIC_WC_SUCCESS) {
        /*
         * the GRH area: an IPv6 header, or for IPv4 20 bytes of zeroes and
         * the IPv4 header (as RoCEv2 devices and rxe place it)
         */
        if (rnic_roce_gid_is_ipv4(pkt->net.sgid)) {
            flags |= RNIC_CQE_IPV4;
        }
        rnic_wire_build_grh(pkt, grh);     /* the frame's IP header */
        if (rnic_sges_place(e, rw->sge, rw->nsge, 0, &gpl, 0, sizeof(grh)) ||
            (len && rnic_sges_place(e, rw->sge, rw->nsge, sizeof(grh),
                                    &pkt->payload, 0, len))) {
            ci.status = RNIC_WC_LOC_PROT_ERR;
        }
    }
    if (ci.status == RNIC_WC_SUCCESS) {
        ci.byte_len = sizeof(grh) + len;
        if (pkt->ext & RNIC_ROCE_EXT_IMMDT) {
            flags |= RNIC_CQE_WITH_IMM;
            ci.imm_or_inv = GUINT32_TO_BE(pkt->immdt);
        }
        if (pkt->se) {
            flags |= RNIC_CQE_SOLICITED;
        }
        if (pkt->net.vlan_id) {
            flags |= RNIC_CQE_VLAN;
        }
        ci.flags = flags;
    }
    rw->valid = false;
    rnic_cq_post(e, qp->rcq, qp, &ci);
    if (ci.status != RNIC_WC_SUCCESS && ci.status != RNIC_WC_LOC_LEN_ERR) {
        rnic_qp_error(e, qp);
    }
}

/*
 * Does a request packet fit the message in progress? A first (or only)
 * packet needs none in progress, a middle or last one a message of its
 * own kind (READ and atomics are only packets). NULL, or the reason.
 */
static const char *rnic_resp_sequence_error(const RnicResp *resp,
                                            uint16_t flags)
{
    if (flags & RNIC_ROCE_OPF_FIRST) {
        return resp->in_msg ? "new message before the last one ended" : NULL;
    }
    if (flags & RNIC_ROCE_OPF_SEND) {
        return resp->in_msg != RNIC_RESP_SEND ?
               "SEND continuation without a SEND" : NULL;
    }
    return resp->in_msg != RNIC_RESP_WRITE ?
           "WRITE continuation without a WRITE" : NULL;
}

/* A request packet at the expected PSN: its checks, then its operation. */
static void rnic_resp_request(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt)
{
    const RnicRoceOpInfo *info = rnic_transport_op(pkt->opcode);
    const char *why;
    bool first, last;

    if (!info || !(info->flags & RNIC_ROCE_OPF_REQUEST)) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_INVALID_REQ,
                       RNIC_EQE_QP_REQ_ERR, RNIC_WC_REM_INV_REQ_ERR,
                       "opcode not a request");
        return;
    }
    first = info->flags & RNIC_ROCE_OPF_FIRST;
    last = info->flags & RNIC_ROCE_OPF_LAST;
    why = rnic_resp_sequence_error(&qp->resp, info->flags);
    if (why) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_INVALID_REQ,
                       RNIC_EQE_QP_REQ_ERR, RNIC_WC_REM_INV_REQ_ERR, why);
        return;
    }
    if ((info->flags & RNIC_ROCE_OPF_PAYLOAD) &&
        !rnic_resp_len_ok(qp, pkt, first, last)) {
        rnic_resp_fail(e, qp, pkt, RNIC_ROCE_NAK_INVALID_REQ,
                       RNIC_EQE_QP_REQ_ERR, RNIC_WC_REM_INV_REQ_ERR,
                       "payload length does not fit the path MTU");
        return;
    }

    if (info->flags & RNIC_ROCE_OPF_READ) {
        rnic_resp_read(e, qp, pkt);
    } else if (info->flags & RNIC_ROCE_OPF_ATOMIC) {
        rnic_resp_atomic(e, qp, pkt);
    } else if (info->flags & RNIC_ROCE_OPF_FLUSH) {
        rnic_resp_flush(e, qp, pkt);
    } else if (info->flags & RNIC_ROCE_OPF_ATOMIC_WRITE) {
        rnic_resp_atomic_write(e, qp, pkt);
    } else if (info->flags & RNIC_ROCE_OPF_WRITE) {
        rnic_resp_write(e, qp, pkt, first, last);
    } else {
        rnic_resp_send(e, qp, pkt, first, last);
    }
}

/*
 * UC takes PSNs as they come (nothing is retransmitted): a gap, or a
 * packet from the past, ends the message in progress, which is lost; its
 * receive WQE serves the next message. Taken or dropped, the packet's
 * successor is the next PSN expected.
 */
static void rnic_resp_uc(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt)
{
    RnicResp *resp = &qp->resp;
    int32_t d = rnic_psn_diff(pkt->psn, resp->epsn);

    if (d > 0) {
        rnic_qp_stat_inc(e, qp, RNIC_STAT_OUT_OF_SEQUENCE);
    }
    if (d && resp->in_msg) {
        rnic_event(e, UB_REQUEST, "UC message lost (PSN gap)", qp->qpn,
                   pkt->psn, pkt->opcode);
        rnic_stat_inc(e, RNIC_STAT_RX_DROPPED);
        resp->in_msg = 0;
    }
    resp->epsn = pkt->psn;
    rnic_resp_request(e, qp, pkt);
    resp->epsn = rnic_psn_add(pkt->psn, 1);
}

void rnic_resp_rx(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt)
{
    RnicResp *resp = &qp->resp;
    int32_t d;

    if (!rnic_qpt_connected(qp->type)) {
        rnic_resp_ud(e, qp, pkt);
        return;
    }
    /* UC's SQE stops only its send queue */
    if (qp->state != RNIC_QPS_RTR && qp->state != RNIC_QPS_RTS &&
        qp->state != RNIC_QPS_SQD &&
        (qp->state != RNIC_QPS_SQE || qp->type != RNIC_QPT_UC)) {
        rnic_stat_inc(e, RNIC_STAT_RX_DROPPED);
        return;
    }
    if (qp->state == RNIC_QPS_RTR && !resp->comm_est) {
        resp->comm_est = true;
        rnic_async_event(e, RNIC_EQE_COMM_EST, qp->handle, qp->qpn);
    }
    if (qp->type == RNIC_QPT_UC) {
        rnic_resp_uc(e, qp, pkt);
        return;
    }
    d = rnic_psn_diff(pkt->psn, resp->epsn);
    if (d > 0) {
        rnic_qp_stat_inc(e, qp, RNIC_STAT_OUT_OF_SEQUENCE);
        /* a gap: one NAK until the expected PSN shows up */
        if (!resp->nak_sent) {
            resp->nak_sent = true;
            rnic_resp_nak(e, qp, resp->epsn,
                          RNIC_ROCE_AETH_NAK | RNIC_ROCE_NAK_PSN_SEQ_ERR);
        }
        return;
    }
    if (d < 0) {
        rnic_qp_stat_inc(e, qp, RNIC_STAT_DUPLICATE_REQUEST);
        rnic_resp_duplicate(e, qp, pkt);
        return;
    }
    resp->nak_sent = false;
    rnic_resp_request(e, qp, pkt);
}
