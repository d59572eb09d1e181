/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the internal representation of one RoCE packet.
 *
 * The transport (requester, responder) produces and consumes RnicPacket;
 * loopback hands it straight from the requester to the local responder, the
 * wire codec (rnic-roce*.c) serialises it to / parses it from a RoCEv2 frame
 * (Ethernet [802.1Q] / IPv4|IPv6 / UDP 4791 / BTH / ext headers / payload /
 * ICRC). Field names follow the IBTA headers (IB spec vol. 1, ch. 9;
 * RoCEv2 annex A17). Values are in host order; the codec does the byte
 * swapping. Immediate data is the exception: it is kept exactly as the
 * 4 bytes appear on the wire and in the WQE/CQE (network order), as a u32
 * loaded from those bytes.
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

/* RoCEv2 UDP destination port. */
#define RNIC_ROCE_UDP_PORT      4791

/* BTH opcodes (IBTA table 38). Bits 7..5: transport, 4..0: operation. */
enum rnic_bth_opcode {
    /* RC */
    RNIC_OP_RC_SEND_FIRST                   = 0x00,
    RNIC_OP_RC_SEND_MIDDLE                  = 0x01,
    RNIC_OP_RC_SEND_LAST                    = 0x02,
    RNIC_OP_RC_SEND_LAST_IMM                = 0x03,
    RNIC_OP_RC_SEND_ONLY                    = 0x04,
    RNIC_OP_RC_SEND_ONLY_IMM                = 0x05,
    RNIC_OP_RC_RDMA_WRITE_FIRST             = 0x06,
    RNIC_OP_RC_RDMA_WRITE_MIDDLE            = 0x07,
    RNIC_OP_RC_RDMA_WRITE_LAST              = 0x08,
    RNIC_OP_RC_RDMA_WRITE_LAST_IMM          = 0x09,
    RNIC_OP_RC_RDMA_WRITE_ONLY              = 0x0a,
    RNIC_OP_RC_RDMA_WRITE_ONLY_IMM          = 0x0b,
    RNIC_OP_RC_RDMA_READ_REQUEST            = 0x0c,
    RNIC_OP_RC_RDMA_READ_RESPONSE_FIRST     = 0x0d,
    RNIC_OP_RC_RDMA_READ_RESPONSE_MIDDLE    = 0x0e,
    RNIC_OP_RC_RDMA_READ_RESPONSE_LAST      = 0x0f,
    RNIC_OP_RC_RDMA_READ_RESPONSE_ONLY      = 0x10,
    RNIC_OP_RC_ACKNOWLEDGE                  = 0x11,
    RNIC_OP_RC_ATOMIC_ACKNOWLEDGE           = 0x12,
    RNIC_OP_RC_COMPARE_SWAP                 = 0x13,
    RNIC_OP_RC_FETCH_ADD                    = 0x14,
    RNIC_OP_RC_SEND_LAST_INV                = 0x16,
    RNIC_OP_RC_SEND_ONLY_INV                = 0x17,
    /* UD */
    RNIC_OP_UD_SEND_ONLY                    = 0x64,
    RNIC_OP_UD_SEND_ONLY_IMM                = 0x65,
};

/* Which extension headers follow the BTH (RNIC_HDR_* bits). */
enum rnic_hdr {
    RNIC_HDR_RETH       = 1u << 0,
    RNIC_HDR_AETH       = 1u << 1,
    RNIC_HDR_ATOMIC     = 1u << 2,  /* AtomicETH */
    RNIC_HDR_ATOMIC_ACK = 1u << 3,  /* AtomicAckETH */
    RNIC_HDR_IMM        = 1u << 4,  /* ImmDt */
    RNIC_HDR_IETH       = 1u << 5,
    RNIC_HDR_DETH       = 1u << 6,
    RNIC_HDR_PAYLOAD    = 1u << 7,  /* the opcode carries a payload */
    RNIC_HDR_INVALID    = 1u << 31, /* opcode not supported */
};

/*
 * Extension headers of an opcode, in wire order DETH, RETH, AtomicETH,
 * AETH, AtomicAckETH, ImmDt, IETH (IBTA 9.2).
 */
static inline uint32_t rnic_opcode_hdrs(uint8_t opcode)
{
    switch (opcode) {
    case RNIC_OP_RC_SEND_FIRST:
    case RNIC_OP_RC_SEND_MIDDLE:
    case RNIC_OP_RC_SEND_LAST:
    case RNIC_OP_RC_SEND_ONLY:
    case RNIC_OP_RC_RDMA_WRITE_MIDDLE:
    case RNIC_OP_RC_RDMA_WRITE_LAST:
    case RNIC_OP_RC_RDMA_READ_RESPONSE_MIDDLE:
        return RNIC_HDR_PAYLOAD;
    case RNIC_OP_RC_SEND_LAST_IMM:
    case RNIC_OP_RC_SEND_ONLY_IMM:
    case RNIC_OP_RC_RDMA_WRITE_LAST_IMM:
        return RNIC_HDR_IMM | RNIC_HDR_PAYLOAD;
    case RNIC_OP_RC_SEND_LAST_INV:
    case RNIC_OP_RC_SEND_ONLY_INV:
        return RNIC_HDR_IETH | RNIC_HDR_PAYLOAD;
    case RNIC_OP_RC_RDMA_WRITE_FIRST:
    case RNIC_OP_RC_RDMA_WRITE_ONLY:
        return RNIC_HDR_RETH | RNIC_HDR_PAYLOAD;
    case RNIC_OP_RC_RDMA_WRITE_ONLY_IMM:
        return RNIC_HDR_RETH | RNIC_HDR_IMM | RNIC_HDR_PAYLOAD;
    case RNIC_OP_RC_RDMA_READ_REQUEST:
        return RNIC_HDR_RETH;
    case RNIC_OP_RC_RDMA_READ_RESPONSE_FIRST:
    case RNIC_OP_RC_RDMA_READ_RESPONSE_LAST:
    case RNIC_OP_RC_RDMA_READ_RESPONSE_ONLY:
        return RNIC_HDR_AETH | RNIC_HDR_PAYLOAD;
    case RNIC_OP_RC_ACKNOWLEDGE:
        return RNIC_HDR_AETH;
    case RNIC_OP_RC_ATOMIC_ACKNOWLEDGE:
        return RNIC_HDR_AETH | RNIC_HDR_ATOMIC_ACK;
    case RNIC_OP_RC_COMPARE_SWAP:
    case RNIC_OP_RC_FETCH_ADD:
        return RNIC_HDR_ATOMIC;
    case RNIC_OP_UD_SEND_ONLY:
        return RNIC_HDR_DETH | RNIC_HDR_PAYLOAD;
    case RNIC_OP_UD_SEND_ONLY_IMM:
        return RNIC_HDR_DETH | RNIC_HDR_IMM | RNIC_HDR_PAYLOAD;
    default:
        return RNIC_HDR_INVALID;
    }
}

/* AETH syndrome (IBTA 9.7.5.2.8): bits 7..5 the kind, 4..0 the value. */
#define RNIC_AETH_ACK           0x00    /* | credit count (0x1f: invalid) */
#define RNIC_AETH_RNR_NAK       0x20    /* | RNR timer code */
#define RNIC_AETH_NAK           0x60    /* | enum rnic_nak_code */
#define RNIC_AETH_KIND_MASK     0xe0
#define RNIC_AETH_VALUE_MASK    0x1f
#define RNIC_AETH_CREDITS_INVALID 0x1f

enum rnic_nak_code {
    RNIC_NAK_PSN_SEQ_ERR    = 0,
    RNIC_NAK_INV_REQ        = 1,
    RNIC_NAK_REM_ACCESS     = 2,
    RNIC_NAK_REM_OP         = 3,
    RNIC_NAK_INV_RD_REQ     = 4,
};

#define RNIC_PSN_MASK           0xffffffu
#define RNIC_QPN_MASK           0xffffffu
#define RNIC_BTH_PKEY_DEFAULT   0xffff
#define RNIC_GSI_QPN            1
#define RNIC_GSI_QKEY           0x80010000u

/* Base Transport Header. */
typedef struct RnicBth {
    uint8_t opcode;             /* enum rnic_bth_opcode */
    bool se;                    /* solicited event */
    bool m;                     /* migration request */
    uint8_t pad;                /* pad count 0..3 (the codec computes it) */
    uint8_t tver;               /* transport header version, 0 */
    uint16_t pkey;
    bool fecn;
    bool becn;
    uint32_t dest_qp;           /* 24 bits */
    bool ack_req;
    uint32_t psn;               /* 24 bits */
} RnicBth;

/* RDMA Extended Transport Header. */
typedef struct RnicReth {
    uint64_t va;
    uint32_t rkey;
    uint32_t dma_len;
} RnicReth;

/* ACK Extended Transport Header. */
typedef struct RnicAeth {
    uint8_t syndrome;           /* RNIC_AETH_* | value */
    uint32_t msn;               /* 24 bits */
} RnicAeth;

/* Atomic Extended Transport Header. */
typedef struct RnicAtomicEth {
    uint64_t va;
    uint32_t rkey;
    uint64_t swap_add;
    uint64_t compare;
} RnicAtomicEth;

/* Atomic Acknowledge Extended Transport Header. */
typedef struct RnicAtomicAckEth {
    uint64_t orig;
} RnicAtomicAckEth;

/* Datagram Extended Transport Header. */
typedef struct RnicDeth {
    uint32_t qkey;
    uint32_t src_qp;            /* 24 bits */
} RnicDeth;

/* Invalidate Extended Transport Header. */
typedef struct RnicIeth {
    uint32_t rkey;
} RnicIeth;

/*
 * Network side of a packet: which network context it travels in and the
 * L2/L3/L4 addresses. GIDs are 16 bytes as in the GID table; an IPv4
 * address is an IPv4-mapped GID (::ffff:a.b.c.d) and then the frame is
 * IPv4 (rnic_gid_is_ipv4()).
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

typedef struct RnicPayload {
    uint32_t len;               /* bytes */
    const uint8_t *data;        /* host bytes, or NULL: ... */
    const RnicDmaSeg *segs;     /* ... guest DMA segments summing to len */
    uint32_t nsegs;
} RnicPayload;

typedef struct RnicPacket {
    RnicPacketNet net;
    RnicBth bth;
    uint32_t hdrs;              /* enum rnic_hdr: headers present */
    RnicReth reth;
    RnicAeth aeth;
    RnicAtomicEth atomic;
    RnicAtomicAckEth atomic_ack;
    RnicDeth deth;
    RnicIeth ieth;
    uint32_t imm;               /* ImmDt, wire byte order (see above) */
    RnicPayload payload;
} RnicPacket;

/* Is this GID an IPv4-mapped IPv6 address (::ffff:a.b.c.d)? */
static inline bool rnic_gid_is_ipv4(const uint8_t gid[16])
{
    static const uint8_t prefix[12] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
    };
    int i;

    for (i = 0; i < 12; i++) {
        if (gid[i] != prefix[i]) {
            return false;
        }
    }
    return true;
}

/* 24-bit PSN arithmetic: a - b as a signed distance. */
static inline int32_t rnic_psn_diff(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 8) >> 8;
}

static inline uint32_t rnic_psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & RNIC_PSN_MASK;
}

#endif /* RNIC_PACKET_H */
