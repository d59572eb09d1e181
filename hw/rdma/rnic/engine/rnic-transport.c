/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: packet delivery and transport timers.
 *
 * rnic_xmit() decides where a packet goes: when its destination GID is one
 * of this device's GIDs in the sending QP's network context, straight to
 * the local receive path (loopback, no copy of the payload: the receiver
 * copies from the sender's registered memory into its own); otherwise to
 * rnic_wire_transmit(), the RoCEv2 wire (rnic-wire.c). rnic_rx() is the
 * receive side for a network context: QPN -> QP, then rnic_rx_qp():
 * requester or responder by opcode (the wire's receive path, which found
 * the QP while checking the frame, calls rnic_rx_qp() itself).
 *
 * Timers: each QP has at most one deadline (retransmission or RNR wait);
 * QPs with one are on a list, the host timer is armed at the earliest.
 * Cancelling is O(1) and leaves the host timer alone: an early expiry just
 * finds nothing due and re-arms.
 */
#include <string.h>
#include "rnic-engine-int.h"
#include "rnic-wire.h"

void rnic_transport_init(RnicEngine *e)
{
    rnic_list_init(&e->timers);
    e->timer_armed = UINT64_MAX;
}

void rnic_transport_reset(RnicEngine *e)
{
    while (!rnic_list_empty(&e->timers)) {
        rnic_list_del(e->timers.next);
    }
    if (e->timer_armed != UINT64_MAX) {
        e->timer_armed = UINT64_MAX;
        e->ops->timer_arm(e->opaque, UINT64_MAX);
    }
}

void rnic_packet_net_from_av(RnicEngine *e, const RnicQp *qp,
                             const struct rnic_av *av, RnicPacket *pkt)
{
    RnicPacketNet *n = &pkt->net;
    const RnicGid *g = rnic_gid_get(e, av->sgid_index);
    /* an all-network UD QP sends in the context of the AV's GID */
    const RnicNetCtx *ctx = qp->ctx ? qp->ctx : rnic_gid_netctx(e,
                                                    av->sgid_index);

    n->net_ctx = ctx ? ctx->handle : RNIC_HANDLE_NONE;
    n->vlan_id = ctx && ctx->net_type == RNIC_NET_VLAN ? ctx->net_id : 0;
    n->pcp = 0;
    memcpy(n->smac, e->regs.mac, 6);
    memcpy(n->dmac, av->dmac, 6);
    if (g) {
        memcpy(n->sgid, g->gid, 16);
    } else {
        memset(n->sgid, 0, 16);
    }
    memcpy(n->dgid, av->dgid, 16);
    n->traffic_class = av->traffic_class;
    n->hop_limit = av->hop_limit ? av->hop_limit : 64;
    n->flow_label = GUINT32_FROM_LE(av->flow_label) & 0xfffff;
    /* RoCEv2 entropy: stable per QP so one flow stays in order */
    n->udp_sport = 0xc000 | ((qp->qpn ^ (qp->qpn >> 14)) & 0x3fff);
}

bool rnic_packet_payload_gather(RnicEngine *e, const RnicPacket *pkt,
                                void *buf)
{
    const RnicPayload *pl = &pkt->payload;
    uint8_t *p = buf;
    uint32_t i;

    if (pl->data) {
        memcpy(buf, pl->data, pl->len);
        return true;
    }
    for (i = 0; i < pl->nsegs; i++) {
        if (rnic_dma_read(e, pl->segs[i].addr, p, pl->segs[i].len)) {
            return false;
        }
        p += pl->segs[i].len;
    }
    return true;
}

void rnic_wire_transmit(RnicEngine *e, const RnicPacket *pkt)
{
    if (e->wire_tap) {
        e->wire_tap(e->wire_tap_opaque, pkt);
        return;
    }
    rnic_wire_xmit(e, pkt);     /* RoCEv2 frame (rnic-wire.c) */
}

void rnic_rx_qp(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt)
{
    rnic_event(e, PKT_RX, NULL, qp->qpn, pkt->opcode, pkt->psn,
               pkt->payload.len);
    if ((pkt->opcode & RNIC_ROCE_TRANSPORT_MASK) != rnic_qp_transport(qp)) {
        rnic_stat_inc(e, RNIC_STAT_RX_DROPPED);
        return;
    }
    rnic_qp_stat_inc(e, qp, RNIC_STAT_RCVD_PKTS);
    if (rnic_roce_ops[pkt->opcode].flags & RNIC_ROCE_OPF_RESPONSE) {
        rnic_req_rx(e, qp, pkt);
    } else {
        rnic_resp_rx(e, qp, pkt);
    }
}

void rnic_rx(RnicEngine *e, RnicNetCtx *ctx, const RnicPacket *pkt)
{
    RnicQp *qp = rnic_qp_by_qpn(ctx, pkt->dest_qp);

    if (!qp) {
        rnic_stat_inc(e, RNIC_STAT_RX_DROPPED);
        return;
    }
    rnic_rx_qp(e, qp, pkt);
}

void rnic_xmit(RnicEngine *e, RnicQp *qp, RnicPacket *pkt)
{
    RnicNetCtx *ctx;

    rnic_event(e, PKT_TX, NULL, qp->qpn, pkt->dest_qp, pkt->opcode, pkt->psn,
               pkt->payload.len);
    rnic_qp_stat_inc(e, qp, RNIC_STAT_SENT_PKTS);
    rnic_work_frame(e, pkt->payload.len);
    if (rnic_qpt_connected(qp->type)) {
        /* the connected peer, cached until a QP or GID changes */
        if (qp->peer_gen != e->qp_gen) {
            qp->peer = NULL;
            qp->peer_local = rnic_gid_is_local(e, qp->ctx, qp->av.dgid);
            if (qp->peer_local) {
                qp->peer = rnic_qp_by_qpn(qp->ctx, qp->dest_qpn);
            }
            qp->peer_gen = e->qp_gen;
        }
        if (!qp->peer_local) {
            rnic_wire_transmit(e, pkt);
        } else if (qp->peer) {
            rnic_rx_qp(e, qp->peer, pkt);
        } else {
            rnic_stat_inc(e, RNIC_STAT_RX_DROPPED);
        }
        return;
    }
    ctx = rnic_netctx_lookup(e, pkt->net.net_ctx);
    if (!ctx) {
        /* the AV's GID went away after the WQE was checked */
        rnic_stat_inc(e, RNIC_STAT_TX_DROPPED);
    } else if (rnic_gid_is_mcast(pkt->net.dgid)) {
        /* the group's QPs here (multicast loopback), and the wire */
        rnic_mcast_deliver(e, ctx, pkt->net.dgid, pkt);
        rnic_wire_transmit(e, pkt);
    } else if (rnic_gid_is_local(e, ctx, pkt->net.dgid)) {
        rnic_rx(e, ctx, pkt);
    } else {
        rnic_wire_transmit(e, pkt);
    }
}

/* ---------------------------------------------------------------------- */
/* Timers                                                                 */
/* ---------------------------------------------------------------------- */

uint64_t rnic_ack_timeout_ns(uint8_t timeout)
{
    /* 4.096 us * 2^timeout; 0 means no timeout */
    return timeout ? 4096ull << MIN(timeout, 31) : 0;
}

uint64_t rnic_rnr_timer_ns(uint8_t code)
{
    /* IBTA table 45, in units of 10 us */
    static const uint32_t t10us[32] = {
        65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
        256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
        12288, 16384, 24576, 32768, 49152,
    };

    return (uint64_t)t10us[code & 31] * 10000;
}

static void rnic_timer_rearm(RnicEngine *e)
{
    uint64_t min = UINT64_MAX;
    RnicLink *l;

    for (l = e->timers.next; l != &e->timers; l = l->next) {
        RnicQp *qp = rnic_container_of(l, RnicQp, timer_link);

        min = MIN(min, qp->timer_deadline);
    }
    if (min != e->timer_armed) {
        e->timer_armed = min;
        e->ops->timer_arm(e->opaque, min);
    }
}

void rnic_qp_timer_set(RnicEngine *e, RnicQp *qp, uint8_t kind, uint64_t ns)
{
    uint64_t deadline;

    if (!ns) {
        return;
    }
    deadline = e->ops->clock_ns(e->opaque) + ns;
    qp->timer_kind = kind;
    qp->timer_deadline = deadline;
    if (!rnic_link_linked(&qp->timer_link)) {
        rnic_list_add_tail(&e->timers, &qp->timer_link);
    }
    if (deadline < e->timer_armed) {
        e->timer_armed = deadline;
        e->ops->timer_arm(e->opaque, deadline);
    }
}

void rnic_qp_timer_cancel(RnicEngine *e, RnicQp *qp)
{
    qp->timer_kind = RNIC_TIMER_NONE;
    rnic_list_del(&qp->timer_link);
}

/*
 * QPs whose timer is handled per call at most (each may time out and
 * flush a turn of its queues); the others are due still and the timer,
 * re-armed at the earliest deadline, fires again at once.
 */
#define RNIC_TIMER_BATCH 64

void rnic_engine_timer_expired(RnicEngine *e)
{
    uint64_t now = e->ops->clock_ns(e->opaque);
    RnicLink due, *l, *next;
    uint32_t n = 0;

    rnic_engine_enter(e, RNIC_CALL_TIMER);
    e->timer_armed = UINT64_MAX;
    rnic_list_init(&due);
    for (l = e->timers.next; l != &e->timers && n < RNIC_TIMER_BATCH;
         l = next) {
        RnicQp *qp = rnic_container_of(l, RnicQp, timer_link);

        next = l->next;
        if (qp->timer_deadline <= now) {
            n++;
            rnic_list_del(l);
            rnic_list_add_tail(&due, l);
        }
    }
    while (!rnic_list_empty(&due)) {
        RnicQp *qp = rnic_container_of(due.next, RnicQp, timer_link);

        rnic_list_del(due.next);
        rnic_req_timer(e, qp);
    }
    rnic_timer_rearm(e);
    rnic_engine_leave(e);
}
