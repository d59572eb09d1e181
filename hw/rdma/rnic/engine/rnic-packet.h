/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the internal representation of one RoCE packet.
 *
 * The transport (requester, responder) produces and consumes RnicPacket;
 * loopback hands it straight from the requester to the local responder, the
 * wire codec (rnic-roce*.c) serialises it to / parses it from a RoCEv2 frame
 * (Ethernet [802.1Q] / IPv4|IPv6 / UDP 4791 / BTH / ext headers / payload /
 * ICRC). The transport headers (BTH and extension headers) are the
 * codec's own RnicRoceTransport, so the opcode table, the constants and
 * the header layouts of rnic-roce.h are the only ones; what is the
 * engine's own is the network side (a network context instead of a full
 * Ethernet/IP header) and a payload that may be guest memory.
 *
 * The payload is referenced, never copied here: either host bytes (a
 * received frame, inline data, an atomic operand) or a list of guest DMA
 * segments (the registered memory the requester/responder reads from).
 * rnic_packet_payload_gather() (rnic-engine-int.h) turns either into
 * contiguous bytes for the codec.
 */
#ifndef RNIC_PACKET_H
#define RNIC_PACKET_H

#include <stdbool.h>
#include <stdint.h>
#include "rnic-roce.h"

/*
 * Network side of a packet: which network context it travels in and the
 * L2/L3/L4 addresses. GIDs are 16 bytes as in the GID table; an IPv4
 * address is an IPv4-mapped GID (::ffff:a.b.c.d) and then the frame is
 * IPv4 (rnic_roce_gid_is_ipv4()).
 */
typedef struct RnicPacketNet {
    uint32_t net_ctx;           /* engine handle of the network context */
    uint16_t vlan_id;           /* 0: untagged */
    uint8_t pcp;                /* 802.1Q priority */
    uint8_t smac[6];
    uint8_t dmac[6];
    uint8_t sgid[16];
    uint8_t dgid[16];
    uint8_t traffic_class;      /* IPv6 TC / IPv4 DSCP+ECN */
    uint8_t hop_limit;          /* IPv6 hop limit / IPv4 TTL */
    uint32_t flow_label;        /* IPv6 only, 20 bits */
    uint16_t udp_sport;         /* RoCEv2 entropy */
} RnicPacketNet;

/* One DMA-contiguous piece of guest memory. */
typedef struct RnicDmaSeg {
    uint64_t addr;
    uint32_t len;
} RnicDmaSeg;

/*
 * Payload segments a packet may reference: a packet carries at most one
 * path MTU (4096) of payload; with pages of at least 4 KiB every SGE's part
 * of it spans at most two pages.
 */
#define RNIC_PKT_MAX_SEGS       (2 * 32 + 2)
/* The payload of one packet at most: the largest path MTU. */
#define RNIC_MTU_MAX            4096

typedef struct RnicPayload {
    uint32_t len;               /* bytes */
    const uint8_t *data;        /* host bytes, or NULL: ... */
    const RnicDmaSeg *segs;     /* ... guest DMA segments summing to len */
    uint32_t nsegs;
} RnicPayload;

typedef struct RnicPacket {
    RnicPacketNet net;
    RNIC_ROCE_TRANSPORT_GROUP;  /* BTH and extension headers (rnic-roce.h) */
    RnicPayload payload;
} RnicPacket;

#endif /* RNIC_PACKET_H */
