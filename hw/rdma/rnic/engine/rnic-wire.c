/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the RoCEv2 wire. RnicPacket <-> RnicRoceHdr (the network
 * part; the transport headers are one struct in both), the
 * transmit path (encode, ICRC, zero-copy iovecs to the host) and the
 * receive path (classify, decode, validate, route to a QP). See
 * rnic-wire.h and docs/spec.md "Wire format".
 */
#include <string.h>
#include "rnic-wire.h"

/* Below this many payload bytes a copy is cheaper than mapping. */
#define RNIC_WIRE_MAP_MIN       1024
/* Payload pieces of one frame (segments, split where a mapping ends). */
#define RNIC_WIRE_MAX_IOV       (RNIC_PKT_MAX_SEGS + 16)
/* Largest payload of one packet: the largest path MTU. */
#define RNIC_WIRE_MAX_PAYLOAD   4096

/*
 * RoCEv2 flow entropy (Annex A17.4.2: source port 0xc000..0xffff): the
 * transport's per-QP value (from the local QPN) mixed with the destination
 * QPN, so that every QP pair is one stable flow and different pairs spread
 * over ECMP paths.
 */
static uint16_t rnic_wire_sport(uint16_t local, uint32_t dest_qp)
{
    uint32_t h = (local & 0x3fffu) * 0x9e3779b1u ^ dest_qp * 0x85ebca6bu;

    h ^= h >> 15;
    h *= 0x2c1b3c6du;
    h ^= h >> 12;
    return 0xc000 | (h & 0x3fff);
}

/* ---------------------------------------------------------------------- */
/* Adapter                                                                */
/* ---------------------------------------------------------------------- */

bool rnic_wire_hdr_from_packet(const RnicPacket *pkt, RnicRoceHdr *h)
{
    const RnicPacketNet *n = &pkt->net;

    memset(h, 0, sizeof(*h));
    h->ipv6 = !rnic_roce_gid_is_ipv4(n->dgid);
    if (h->ipv6 == rnic_roce_gid_is_ipv4(n->sgid)) {
        return false;           /* IPv4 to IPv6 or the other way round */
    }
    memcpy(h->dmac, n->dmac, 6);
    memcpy(h->smac, n->smac, 6);
    h->vlan_present = n->vlan_id != 0;
    h->vlan_id = n->vlan_id & 0xfff;
    h->vlan_pcp = n->pcp & 7;
    memcpy(h->sgid, n->sgid, 16);
    memcpy(h->dgid, n->dgid, 16);
    h->traffic_class = n->traffic_class;
    h->flow_label = h->ipv6 ? (n->flow_label & 0xfffff) : 0;
    h->hop_limit = n->hop_limit;
    /* DF is set: the identification only tells frames apart (as rxe) */
    h->ip_id = (uint16_t)pkt->psn;
    h->udp_sport = rnic_wire_sport(n->udp_sport, pkt->dest_qp);

    h->tp = pkt->tp;            /* the encoder takes what the opcode has */
    h->payload_len = pkt->payload.len;
    return true;
}

void rnic_wire_packet_from_hdr(const RnicRoceHdr *h, uint32_t net_ctx,
                               RnicPacket *pkt)
{
    RnicPacketNet *n = &pkt->net;

    n->net_ctx = net_ctx;
    n->vlan_id = h->vlan_present ? h->vlan_id : 0;
    n->pcp = h->vlan_pcp;
    memcpy(n->smac, h->smac, 6);
    memcpy(n->dmac, h->dmac, 6);
    memcpy(n->sgid, h->sgid, 16);
    memcpy(n->dgid, h->dgid, 16);
    n->traffic_class = h->traffic_class;
    n->hop_limit = h->hop_limit;
    n->flow_label = h->flow_label;
    n->udp_sport = h->udp_sport;

    pkt->tp = h->tp;
    pkt->payload.len = h->payload_len;
    pkt->payload.data = h->payload_len ? h->payload : NULL;
    pkt->payload.segs = NULL;
    pkt->payload.nsegs = 0;
}

void rnic_wire_build_grh(const RnicPacket *pkt,
                         uint8_t grh[RNIC_ROCE_GRH_LEN])
{
    RnicRoceHdr h;

    if (!rnic_wire_hdr_from_packet(pkt, &h)) {
        memset(grh, 0, RNIC_ROCE_GRH_LEN);
        return;
    }
    h.pad = -pkt->payload.len & 3;
    h.ip_df = true;
    rnic_roce_build_grh(&h, grh);
}

/* ---------------------------------------------------------------------- */
/* Transmit                                                               */
/* ---------------------------------------------------------------------- */

typedef struct RnicWireMap {
    void *ptr;
    uint64_t len;
} RnicWireMap;

static void rnic_wire_unmap(RnicEngine *e, RnicWireMap *maps, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        e->ops->dma_unmap(e->opaque, maps[i].ptr, maps[i].len, false,
                          maps[i].len);
    }
}

/*
 * Map the guest segments of a payload for reading, one iovec per mapped
 * piece. Returns the number of iovecs, or -1 (nothing left mapped) when a
 * piece cannot be mapped or there are too many.
 */
static int rnic_wire_map_payload(RnicEngine *e, const RnicPayload *pl,
                                 struct iovec *iov, RnicWireMap *maps)
{
    int n = 0;
    uint32_t i;

    for (i = 0; i < pl->nsegs; i++) {
        uint64_t addr = pl->segs[i].addr;
        uint64_t left = pl->segs[i].len;

        while (left) {
            uint64_t len = left;
            void *p;

            if (n == RNIC_WIRE_MAX_IOV) {
                rnic_wire_unmap(e, maps, n);
                return -1;
            }
            p = e->ops->dma_map(e->opaque, addr, &len, false);
            if (!p || !len || len > left) {
                if (p) {
                    e->ops->dma_unmap(e->opaque, p, len, false, 0);
                }
                rnic_wire_unmap(e, maps, n);
                return -1;
            }
            maps[n].ptr = p;
            maps[n].len = len;
            iov[n].iov_base = p;
            iov[n].iov_len = len;
            n++;
            addr += len;
            left -= len;
        }
    }
    return n;
}

static void rnic_wire_tx_drop(RnicEngine *e, const RnicPacket *pkt,
                              const char *why)
{
    rnic_stat_inc(e, RNIC_STAT_TX_DROPPED);
    rnic_event(e, ERR_WIRE_TX, why, pkt->opcode, pkt->dest_qp, pkt->psn,
               e->stats[RNIC_STAT_TX_DROPPED]);
}

void rnic_wire_xmit(RnicEngine *e, const RnicPacket *pkt)
{
    const RnicPayload *pl = &pkt->payload;
    RNIC_UNINIT struct iovec iov[RNIC_WIRE_MAX_IOV + 2];
    RNIC_UNINIT RnicWireMap maps[RNIC_WIRE_MAX_IOV];
    RNIC_UNINIT uint8_t bounce[RNIC_WIRE_MAX_PAYLOAD];
    RNIC_UNINIT RnicRoceHdr h;
    RNIC_UNINIT RnicRoceTx tx;
    RnicRoceError err;
    int n = 0, nmaps = 0;

    if (e->eth.link_down) {
        rnic_wire_tx_drop(e, pkt, "link down");
        return;
    }
    if (!rnic_wire_hdr_from_packet(pkt, &h)) {
        rnic_wire_tx_drop(e, pkt, "source and destination GID of different "
                          "IP versions");
        return;
    }
    if (pl->len > RNIC_WIRE_MAX_PAYLOAD) {
        rnic_wire_tx_drop(e, pkt, "payload longer than 4096 bytes");
        return;
    }
    if (pl->len && pl->data) {
        iov[1].iov_base = (void *)pl->data;
        iov[1].iov_len = pl->len;
        n = 1;
    } else if (pl->len) {
        if (pl->len >= RNIC_WIRE_MAP_MIN && e->ops->dma_map) {
            nmaps = rnic_wire_map_payload(e, pl, iov + 1, maps);
        }
        if (nmaps > 0) {
            n = nmaps;
        } else {
            nmaps = 0;
            if (!rnic_packet_payload_gather(e, pkt, bounce)) {
                rnic_event(e, UB_WIRE_PAYLOAD, "payload not readable: "
                           "packet not sent", pkt->opcode, pkt->psn);
                rnic_wire_tx_drop(e, pkt, "payload not readable");
                return;
            }
            iov[1].iov_base = bounce;
            iov[1].iov_len = pl->len;
            n = 1;
        }
    }
    /* no payload: no iovec (none of them is written yet) */
    err = rnic_roce_encode_sg(&h, n ? iov + 1 : NULL, n, &tx);
    if (err != RNIC_ROCE_OK) {
        rnic_wire_unmap(e, maps, nmaps);
        rnic_wire_tx_drop(e, pkt, rnic_roce_strerror(err));
        return;
    }
    iov[0].iov_base = tx.hdr;
    iov[0].iov_len = tx.hdr_len;
    iov[n + 1].iov_base = tx.trailer;
    iov[n + 1].iov_len = tx.trailer_len;
    e->ops->transmit(e->opaque, iov, n + 2);
    rnic_wire_unmap(e, maps, nmaps);
    rnic_stat_inc(e, RNIC_STAT_TX_FRAMES);
}

/* ---------------------------------------------------------------------- */
/* Receive                                                                */
/* ---------------------------------------------------------------------- */

static void rnic_wire_drop(RnicEngine *e, enum rnic_stat why,
                           const RnicRoceHdr *h, const char *what)
{
    rnic_stat_inc(e, RNIC_STAT_RX_DROPPED);
    rnic_stat_inc(e, why);
    rnic_event(e, ERR_WIRE_RX, what, h->opcode, h->dest_qp, h->psn,
               h->vlan_present ? h->vlan_id : 0, e->stats[why]);
}

/* Does the GID at 'index' exist and equal 'gid'? */
static bool rnic_wire_gid_eq(RnicEngine *e, uint32_t index,
                             const uint8_t gid[16])
{
    const RnicGid *g = rnic_gid_get(e, index);

    return g && !memcmp(g->gid, gid, 16);
}

/* A UD send to a multicast group: to every QP of the context in it. */
static void rnic_wire_rx_mcast(RnicEngine *e, RnicNetCtx *ctx,
                               const RnicRoceHdr *h)
{
    RNIC_UNINIT RnicPacket pkt;

    if ((h->opcode & RNIC_ROCE_TRANSPORT_MASK) != RNIC_ROCE_TRANSPORT_UD ||
        !rnic_transport_op(h->opcode)) {
        rnic_wire_drop(e, RNIC_STAT_RX_ERR_OPCODE, h,
                       "multicast packet not a UD send");
        return;
    }
    if (h->dest_qp != RNIC_ROCE_MULTICAST_QPN) {
        rnic_wire_drop(e, RNIC_STAT_RX_ERR_QPN, h,
                       "multicast packet not to QPN 0xffffff");
        return;
    }
    rnic_wire_packet_from_hdr(h, ctx->handle, &pkt);
    if (!rnic_mcast_deliver(e, ctx, h->dgid, &pkt)) {
        rnic_wire_drop(e, RNIC_STAT_RX_ERR_QPN, h,
                       "no QP of the network context in the group");
    }
}

/*
 * A decoded frame's network context: its P_Key and VLAN. NULL when the
 * frame was dropped.
 */
static RnicNetCtx *rnic_wire_rx_netctx(RnicEngine *e, const RnicRoceHdr *h)
{
    RnicNetCtx *ctx;

    /* one partition, the default: full or limited membership of 0x7fff */
    if ((h->pkey & 0x7fff) != (RNIC_ROCE_DEFAULT_PKEY & 0x7fff)) {
        rnic_wire_drop(e, RNIC_STAT_RX_ERR_PKEY, h, "P_Key not 0xffff");
        return NULL;
    }
    ctx = rnic_netctx_by_id(e, RNIC_NET_VLAN, h->vlan_present ? h->vlan_id : 0);
    if (!ctx) {
        rnic_wire_drop(e, RNIC_STAT_RX_ERR_NET, h,
                       "no network context for the VLAN");
    }
    return ctx;
}

/*
 * The QP of a unicast frame in 'ctx': destination GID, opcode, QPN, the
 * QP's transport and, connected, its peer. NULL when the frame was dropped.
 */
static RnicQp *rnic_wire_rx_qp(RnicEngine *e, RnicNetCtx *ctx,
                               const RnicRoceHdr *h)
{
    RnicQp *qp;

    if (!rnic_gid_is_local(e, ctx, h->dgid)) {
        rnic_wire_drop(e, RNIC_STAT_RX_ERR_GID, h,
                       "destination GID not of this network context");
        return NULL;
    }
    if (!rnic_transport_op(h->opcode)) {
        rnic_wire_drop(e, RNIC_STAT_RX_ERR_OPCODE, h, "opcode not supported");
        return NULL;
    }
    qp = rnic_qp_by_qpn(ctx, h->dest_qp);
    if (!qp) {
        rnic_wire_drop(e, RNIC_STAT_RX_ERR_QPN, h,
                       "no such QP in the network context");
        return NULL;
    }
    if ((h->opcode & RNIC_ROCE_TRANSPORT_MASK) != rnic_qp_transport(qp)) {
        rnic_wire_drop(e, RNIC_STAT_RX_ERR_OPCODE, h,
                       "opcode of another transport than the QP's");
        return NULL;
    }
    /* RC, UC: only the connected peer's address, to ours on the QP's path */
    if (rnic_qpt_connected(qp->type) &&
        (memcmp(h->sgid, qp->av.dgid, 16) ||
         !rnic_wire_gid_eq(e, qp->av.sgid_index, h->dgid))) {
        rnic_wire_drop(e, RNIC_STAT_RX_ERR_ADDR, h,
                       "connected-QP packet not from the QP's peer");
        return NULL;
    }
    return qp;
}

/*
 * One contiguous RoCE frame known to be ours, 'pk' its peek (of at least
 * its first MIN(len, RNIC_ROCE_PEEK_LEN) bytes): decoded from the peek on,
 * checked, and to the QP found (rnic_rx_qp: no second lookup).
 */
static void rnic_wire_rx_frame(RnicEngine *e, const uint8_t *frame,
                               size_t len, const RnicRocePeek *pk)
{
    RnicRoceError err;
    RnicNetCtx *ctx;
    RNIC_UNINIT RnicRoceHdr h;
    RNIC_UNINIT RnicPacket pkt;
    RnicQp *qp;

    rnic_stat_inc(e, RNIC_STAT_RX_FRAMES);
    err = rnic_roce_decode_peeked(frame, len, pk, &h);
    if (err != RNIC_ROCE_OK) {
        rnic_wire_drop(e, err == RNIC_ROCE_ERR_ICRC ? RNIC_STAT_RX_ERR_ICRC
                                                    : RNIC_STAT_RX_ERR_HEADER,
                       &h, rnic_roce_strerror(err));
        return;
    }
    ctx = rnic_wire_rx_netctx(e, &h);
    if (!ctx) {
        return;
    }
    if (rnic_gid_is_mcast(h.dgid)) {
        rnic_wire_rx_mcast(e, ctx, &h);
        return;
    }
    qp = rnic_wire_rx_qp(e, ctx, &h);
    if (qp) {
        rnic_wire_packet_from_hdr(&h, ctx->handle, &pkt);
        rnic_rx_qp(e, qp, &pkt);
    }
}

/* Is 'gid' one of the device's GIDs, in any network context? */
static bool rnic_wire_gid_is_ours(RnicEngine *e, const uint8_t gid[16])
{
    uint32_t i;

    for (i = 0; i < e->cfg.max_gid; i++) {
        const RnicGid *g = &e->gids[i];

        if (g->valid && !memcmp(g->gid, gid, 16)) {
            return true;
        }
    }
    return false;
}

/*
 * A frame in several pieces: one contiguous copy (rare: QEMU's socket
 * backends deliver one buffer).
 */
static G_GNUC_NO_INLINE void rnic_wire_rx_gather(RnicEngine *e,
                                                 const struct iovec *iov,
                                                 int iovcnt, size_t len,
                                                 const RnicRocePeek *pk)
{
    RNIC_UNINIT uint8_t buf[RNIC_ETH_MAX_FRAME];
    size_t done = 0;
    int i;

    len = MIN(len, sizeof(buf));
    for (i = 0; i < iovcnt && done < len; i++) {
        size_t n = MIN(iov[i].iov_len, len - done);

        memcpy(buf + done, iov[i].iov_base, n);
        done += n;
    }
    rnic_wire_rx_frame(e, buf, done, pk);
}

/*
 * Is a peeked frame the RDMA engine's? RoCEv2, and unicast to the device's
 * MAC and one of its GIDs, or multicast to a group a QP here is in.
 */
static bool rnic_wire_rx_ours(RnicEngine *e, const uint8_t *hdr,
                              const RnicRocePeek *pk)
{
    if (pk->cls != RNIC_ROCE_CLASS_ROCE) {
        return false;
    }
    if (pk->mcast) {
        return rnic_gid_is_mcast(pk->dgid) && rnic_mcast_joined(e, pk->dgid);
    }
    return !memcmp(hdr, e->regs.mac, 6) && rnic_wire_gid_is_ours(e, pk->dgid);
}

bool rnic_wire_rx_claim(RnicEngine *e, const struct iovec *iov, int iovcnt,
                        size_t len, const uint8_t *hdr, size_t hdr_len)
{
    RNIC_UNINIT RnicRocePeek pk;

    /* the peek of hdr is the frame's when hdr holds its first 98 bytes */
    g_assert(hdr_len >= MIN(len, RNIC_ROCE_PEEK_LEN));
    rnic_roce_peek(hdr, hdr_len, &pk);
    if (!rnic_wire_rx_ours(e, hdr, &pk)) {
        return false;
    }
    if (iovcnt >= 1 && iov[0].iov_len >= len) {
        rnic_wire_rx_frame(e, iov[0].iov_base, len, &pk);
    } else {
        rnic_wire_rx_gather(e, iov, iovcnt, len, &pk);
    }
    return true;
}
