/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the RoCEv2 wire (frames on the NIC backend: docs/spec.md,
 * "Wire format").
 *
 * The adapter between the transport's RnicPacket (rnic-packet.h) and the
 * codec's RnicRoceHdr (rnic-roce.h), and the two ends of the wire:
 *
 *  TX  rnic_wire_xmit(): RnicPacket -> headers + ICRC (codec) -> one
 *      RnicHostOps.transmit() call with iovecs { headers, payload,
 *      trailer }; a payload in guest memory is mapped (dma_map) and handed
 *      to the host in place, never copied by the device (small payloads and
 *      unmappable ranges go through a stack bounce buffer).
 *
 *  RX  rnic_wire_rx_claim(): every frame from the segment, before the
 *      Ethernet function. The codec peeks at its headers once
 *      (rnic_roce_peek); a frame is RoCE for this device when it is
 *      IPv4/IPv6 UDP to port 4791, unicast to the device's MAC, addressed
 *      to one of the device's GIDs (in any network context), or multicast
 *      to a group a QP here joined. Such a frame is taken: decoded from the
 *      peek on and validated (lengths, IP checksum, BTH version, opcode,
 *      ICRC), then P_Key, VLAN -> network context, destination GID in that
 *      context, destination QPN -> QP, transport of the opcode vs. the QP
 *      type and, for RC, the source/destination GIDs against the QP's path
 *      are checked; a frame failing any check is dropped and counted
 *      (RNIC_STAT_RX_DROPPED and one RNIC_STAT_RX_ERR_* reason). Good frames
 *      go to the QP found (rnic_rx_qp), whose transport checks PSN, opcode
 *      sequence, keys and Q_Key. Other frames are left to the Ethernet
 *      function.
 */
#ifndef RNIC_WIRE_H
#define RNIC_WIRE_H

#include "rnic-engine-int.h"
#include "rnic-roce.h"

/*
 * Transport packet -> codec header (payload fields left empty). False when
 * the packet cannot be framed (source and destination GID of different
 * address families).
 */
bool rnic_wire_hdr_from_packet(const RnicPacket *pkt, RnicRoceHdr *h);

/*
 * Decoded frame -> transport packet of network context 'net_ctx'; the
 * payload references h->payload (the frame).
 */
void rnic_wire_packet_from_hdr(const RnicRoceHdr *h, uint32_t net_ctx,
                               RnicPacket *pkt);

/*
 * The 40 bytes a UD receive places before the payload: the IPv6 header, or
 * 20 zero bytes and the IPv4 header, as the frame of 'pkt' carried them
 * (as rxe does; rnic_roce_build_grh). The IPv4 identification is the one
 * rnic_wire_xmit sends (the PSN's low 16 bits), DF set, checksum valid.
 */
void rnic_wire_build_grh(const RnicPacket *pkt,
                         uint8_t grh[RNIC_ROCE_GRH_LEN]);

/* Send one packet as a RoCEv2 frame (counts TX_FRAMES or TX_DROPPED). */
void rnic_wire_xmit(RnicEngine *e, const RnicPacket *pkt);

/*
 * The receive hook, called by the Ethernet function (rnic-eth.c) for every
 * frame from the segment before it looks at it: true when the frame was
 * RoCE for this device and has been consumed (delivered or dropped and
 * counted); it then never reaches the net_device rings. 'len' is the frame
 * length (iov_size of iov), 'hdr' its first hdr_len bytes, contiguous, at
 * least MIN(len, RNIC_ROCE_PEEK_LEN) of them.
 */
bool rnic_wire_rx_claim(RnicEngine *e, const struct iovec *iov, int iovcnt,
                        size_t len, const uint8_t *hdr, size_t hdr_len);

#endif /* RNIC_WIRE_H */
