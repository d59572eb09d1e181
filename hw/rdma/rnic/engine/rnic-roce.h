/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * RoCEv2 wire codec (IBTA Vol. 1 ch. 9 and Annex A17).
 *
 *   Ethernet [802.1Q] / IPv4 | IPv6 / UDP 4791 / BTH / extension headers /
 *   payload / pad / ICRC
 *
 * Pure functions over caller-provided memory: no allocation, no global
 * state (beyond the CRC tables built once), no QEMU include. The decoder
 * gives a zero-copy view into the frame; the encoder writes headers and
 * trailer into a caller buffer and returns iovecs so the payload is never
 * copied. Nothing is counted here: the caller maps RnicRoceError values to
 * its statistics.
 *
 * Wire compatibility target: Linux Soft-RoCE (drivers/infiniband/sw/rxe).
 * Like rxe (and RoCE hardware) the encoder sends UDP checksum 0 for both
 * IPv4 and IPv6 (Linux's UDP tunnel socket accepts zero-checksum UDPv6);
 * the ICRC protects the transport. The IPv4 header has DF set.
 */
#ifndef RNIC_ROCE_H
#define RNIC_ROCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Header sizes, in bytes. */
#define RNIC_ROCE_ETH_HLEN              14
#define RNIC_ROCE_VLAN_HLEN             4
#define RNIC_ROCE_IPV4_HLEN             20
#define RNIC_ROCE_IPV6_HLEN             40
#define RNIC_ROCE_UDP_HLEN              8
#define RNIC_ROCE_BTH_LEN               12
#define RNIC_ROCE_RETH_LEN              16
#define RNIC_ROCE_AETH_LEN              4
#define RNIC_ROCE_ATOMIC_ETH_LEN        28
#define RNIC_ROCE_ATOMIC_ACK_ETH_LEN    8
#define RNIC_ROCE_IMMDT_LEN             4
#define RNIC_ROCE_IETH_LEN              4
#define RNIC_ROCE_DETH_LEN              8
#define RNIC_ROCE_FETH_LEN              4
#define RNIC_ROCE_CNP_RSVD_LEN          16
#define RNIC_ROCE_ICRC_LEN              4
#define RNIC_ROCE_GRH_LEN               40

/* Largest BTH + extension headers of any opcode (BTH + AtomicETH). */
#define RNIC_ROCE_TRANSPORT_HDR_MAX     (RNIC_ROCE_BTH_LEN + 28)
/* Largest Ethernet + VLAN + IPv6 + UDP + BTH + extension headers. */
#define RNIC_ROCE_HDR_MAX \
    (RNIC_ROCE_ETH_HLEN + RNIC_ROCE_VLAN_HLEN + RNIC_ROCE_IPV6_HLEN + \
     RNIC_ROCE_UDP_HLEN + RNIC_ROCE_TRANSPORT_HDR_MAX)
/* Pad (<= 3) + ICRC + Ethernet padding up to the 60-byte minimum frame. */
#define RNIC_ROCE_TRAILER_MAX           16
/* Minimum Ethernet frame without FCS; the encoder pads up to it. */
#define RNIC_ROCE_ETH_ZLEN              60

#define RNIC_ROCE_ETHERTYPE_IPV4        0x0800
#define RNIC_ROCE_ETHERTYPE_IPV6        0x86dd
#define RNIC_ROCE_ETHERTYPE_VLAN        0x8100
#define RNIC_ROCE_UDP_DPORT             4791
#define RNIC_ROCE_BTH_TVER              0
#define RNIC_ROCE_DEFAULT_PKEY          0xffff
#define RNIC_ROCE_GSI_QPN               1
#define RNIC_ROCE_GSI_QKEY              0x80010000u
#define RNIC_ROCE_QPN_MASK              0x00ffffffu
#define RNIC_ROCE_PSN_MASK              0x00ffffffu
#define RNIC_ROCE_MSN_MASK              0x00ffffffu
#define RNIC_ROCE_MULTICAST_QPN         0x00ffffffu

/*
 * BTH opcodes: transport (top 3 bits) | operation (low 5 bits).
 * RC, UC, UD and the RoCEv2 Congestion Notification Packet; RD and XRC are
 * not supported (decoded as RNIC_ROCE_ERR_OPCODE).
 */
#define RNIC_ROCE_TRANSPORT_RC          0x00
#define RNIC_ROCE_TRANSPORT_UC          0x20
#define RNIC_ROCE_TRANSPORT_RD          0x40
#define RNIC_ROCE_TRANSPORT_UD          0x60
#define RNIC_ROCE_TRANSPORT_CNP         0x80
#define RNIC_ROCE_TRANSPORT_XRC         0xa0
#define RNIC_ROCE_TRANSPORT_MASK        0xe0

enum {
    RNIC_ROCE_OP_SEND_FIRST                     = 0x00,
    RNIC_ROCE_OP_SEND_MIDDLE                    = 0x01,
    RNIC_ROCE_OP_SEND_LAST                      = 0x02,
    RNIC_ROCE_OP_SEND_LAST_WITH_IMMEDIATE       = 0x03,
    RNIC_ROCE_OP_SEND_ONLY                      = 0x04,
    RNIC_ROCE_OP_SEND_ONLY_WITH_IMMEDIATE       = 0x05,
    RNIC_ROCE_OP_RDMA_WRITE_FIRST               = 0x06,
    RNIC_ROCE_OP_RDMA_WRITE_MIDDLE              = 0x07,
    RNIC_ROCE_OP_RDMA_WRITE_LAST                = 0x08,
    RNIC_ROCE_OP_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09,
    RNIC_ROCE_OP_RDMA_WRITE_ONLY                = 0x0a,
    RNIC_ROCE_OP_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b,
    RNIC_ROCE_OP_RDMA_READ_REQUEST              = 0x0c,
    RNIC_ROCE_OP_RDMA_READ_RESPONSE_FIRST       = 0x0d,
    RNIC_ROCE_OP_RDMA_READ_RESPONSE_MIDDLE      = 0x0e,
    RNIC_ROCE_OP_RDMA_READ_RESPONSE_LAST        = 0x0f,
    RNIC_ROCE_OP_RDMA_READ_RESPONSE_ONLY        = 0x10,
    RNIC_ROCE_OP_ACKNOWLEDGE                    = 0x11,
    RNIC_ROCE_OP_ATOMIC_ACKNOWLEDGE             = 0x12,
    RNIC_ROCE_OP_COMPARE_SWAP                   = 0x13,
    RNIC_ROCE_OP_FETCH_ADD                      = 0x14,
    RNIC_ROCE_OP_SEND_LAST_WITH_INVALIDATE      = 0x16,
    RNIC_ROCE_OP_SEND_ONLY_WITH_INVALIDATE      = 0x17,
    RNIC_ROCE_OP_FLUSH                          = 0x1c,
    RNIC_ROCE_OP_ATOMIC_WRITE                   = 0x1d,
};

#define RNIC_ROCE_OPCODE(transport, op) ((uint8_t)((transport) | (op)))
#define RNIC_ROCE_OPCODE_CNP            0x81

/*
 * The opcodes themselves, transport | operation, as the transport and the
 * tests name them (rxe's IB_OPCODE_RC_SEND_FIRST ...). The table behind
 * rnic_roce_op_info() says what each carries and means.
 */
#define RNIC_ROCE_OPC_(t, op) \
    RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_##t, RNIC_ROCE_OP_##op)
enum {
    RNIC_ROCE_RC_SEND_FIRST = RNIC_ROCE_OPC_(RC, SEND_FIRST),
    RNIC_ROCE_RC_SEND_MIDDLE = RNIC_ROCE_OPC_(RC, SEND_MIDDLE),
    RNIC_ROCE_RC_SEND_LAST = RNIC_ROCE_OPC_(RC, SEND_LAST),
    RNIC_ROCE_RC_SEND_LAST_WITH_IMMEDIATE =
        RNIC_ROCE_OPC_(RC, SEND_LAST_WITH_IMMEDIATE),
    RNIC_ROCE_RC_SEND_ONLY = RNIC_ROCE_OPC_(RC, SEND_ONLY),
    RNIC_ROCE_RC_SEND_ONLY_WITH_IMMEDIATE =
        RNIC_ROCE_OPC_(RC, SEND_ONLY_WITH_IMMEDIATE),
    RNIC_ROCE_RC_RDMA_WRITE_FIRST = RNIC_ROCE_OPC_(RC, RDMA_WRITE_FIRST),
    RNIC_ROCE_RC_RDMA_WRITE_MIDDLE = RNIC_ROCE_OPC_(RC, RDMA_WRITE_MIDDLE),
    RNIC_ROCE_RC_RDMA_WRITE_LAST = RNIC_ROCE_OPC_(RC, RDMA_WRITE_LAST),
    RNIC_ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE =
        RNIC_ROCE_OPC_(RC, RDMA_WRITE_LAST_WITH_IMMEDIATE),
    RNIC_ROCE_RC_RDMA_WRITE_ONLY = RNIC_ROCE_OPC_(RC, RDMA_WRITE_ONLY),
    RNIC_ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE =
        RNIC_ROCE_OPC_(RC, RDMA_WRITE_ONLY_WITH_IMMEDIATE),
    RNIC_ROCE_RC_RDMA_READ_REQUEST = RNIC_ROCE_OPC_(RC, RDMA_READ_REQUEST),
    RNIC_ROCE_RC_RDMA_READ_RESPONSE_FIRST =
        RNIC_ROCE_OPC_(RC, RDMA_READ_RESPONSE_FIRST),
    RNIC_ROCE_RC_RDMA_READ_RESPONSE_MIDDLE =
        RNIC_ROCE_OPC_(RC, RDMA_READ_RESPONSE_MIDDLE),
    RNIC_ROCE_RC_RDMA_READ_RESPONSE_LAST =
        RNIC_ROCE_OPC_(RC, RDMA_READ_RESPONSE_LAST),
    RNIC_ROCE_RC_RDMA_READ_RESPONSE_ONLY =
        RNIC_ROCE_OPC_(RC, RDMA_READ_RESPONSE_ONLY),
    RNIC_ROCE_RC_ACKNOWLEDGE = RNIC_ROCE_OPC_(RC, ACKNOWLEDGE),
    RNIC_ROCE_RC_ATOMIC_ACKNOWLEDGE = RNIC_ROCE_OPC_(RC, ATOMIC_ACKNOWLEDGE),
    RNIC_ROCE_RC_COMPARE_SWAP = RNIC_ROCE_OPC_(RC, COMPARE_SWAP),
    RNIC_ROCE_RC_FETCH_ADD = RNIC_ROCE_OPC_(RC, FETCH_ADD),
    RNIC_ROCE_RC_SEND_LAST_WITH_INVALIDATE =
        RNIC_ROCE_OPC_(RC, SEND_LAST_WITH_INVALIDATE),
    RNIC_ROCE_RC_SEND_ONLY_WITH_INVALIDATE =
        RNIC_ROCE_OPC_(RC, SEND_ONLY_WITH_INVALIDATE),
    RNIC_ROCE_RC_FLUSH = RNIC_ROCE_OPC_(RC, FLUSH),
    RNIC_ROCE_RC_ATOMIC_WRITE = RNIC_ROCE_OPC_(RC, ATOMIC_WRITE),
    RNIC_ROCE_UC_SEND_FIRST = RNIC_ROCE_OPC_(UC, SEND_FIRST),
    RNIC_ROCE_UC_SEND_MIDDLE = RNIC_ROCE_OPC_(UC, SEND_MIDDLE),
    RNIC_ROCE_UC_SEND_LAST = RNIC_ROCE_OPC_(UC, SEND_LAST),
    RNIC_ROCE_UC_SEND_LAST_WITH_IMMEDIATE =
        RNIC_ROCE_OPC_(UC, SEND_LAST_WITH_IMMEDIATE),
    RNIC_ROCE_UC_SEND_ONLY = RNIC_ROCE_OPC_(UC, SEND_ONLY),
    RNIC_ROCE_UC_SEND_ONLY_WITH_IMMEDIATE =
        RNIC_ROCE_OPC_(UC, SEND_ONLY_WITH_IMMEDIATE),
    RNIC_ROCE_UC_RDMA_WRITE_FIRST = RNIC_ROCE_OPC_(UC, RDMA_WRITE_FIRST),
    RNIC_ROCE_UC_RDMA_WRITE_MIDDLE = RNIC_ROCE_OPC_(UC, RDMA_WRITE_MIDDLE),
    RNIC_ROCE_UC_RDMA_WRITE_LAST = RNIC_ROCE_OPC_(UC, RDMA_WRITE_LAST),
    RNIC_ROCE_UC_RDMA_WRITE_LAST_WITH_IMMEDIATE =
        RNIC_ROCE_OPC_(UC, RDMA_WRITE_LAST_WITH_IMMEDIATE),
    RNIC_ROCE_UC_RDMA_WRITE_ONLY = RNIC_ROCE_OPC_(UC, RDMA_WRITE_ONLY),
    RNIC_ROCE_UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE =
        RNIC_ROCE_OPC_(UC, RDMA_WRITE_ONLY_WITH_IMMEDIATE),
    RNIC_ROCE_UD_SEND_ONLY = RNIC_ROCE_OPC_(UD, SEND_ONLY),
    RNIC_ROCE_UD_SEND_ONLY_WITH_IMMEDIATE =
        RNIC_ROCE_OPC_(UD, SEND_ONLY_WITH_IMMEDIATE),
};
#undef RNIC_ROCE_OPC_

/* Extension headers, in the order they appear on the wire. */
enum {
    RNIC_ROCE_EXT_FETH          = 1u << 0,  /* FLUSH */
    RNIC_ROCE_EXT_DETH          = 1u << 1,
    RNIC_ROCE_EXT_RETH          = 1u << 2,
    RNIC_ROCE_EXT_ATOMIC_ETH    = 1u << 3,
    RNIC_ROCE_EXT_AETH          = 1u << 4,
    RNIC_ROCE_EXT_ATOMIC_ACK_ETH = 1u << 5,
    RNIC_ROCE_EXT_IMMDT         = 1u << 6,
    RNIC_ROCE_EXT_IETH          = 1u << 7,
    RNIC_ROCE_EXT_CNP_RSVD      = 1u << 8,  /* 16 reserved bytes of a CNP */
};

/* RnicRoceOpInfo.flags */
enum {
    RNIC_ROCE_OPF_PAYLOAD       = 1u << 0,  /* carries payload (may be 0 B) */
    RNIC_ROCE_OPF_FIRST         = 1u << 1,  /* starts a message */
    RNIC_ROCE_OPF_MIDDLE        = 1u << 2,
    RNIC_ROCE_OPF_LAST          = 1u << 3,  /* ends a message */
    RNIC_ROCE_OPF_REQUEST       = 1u << 4,  /* requester -> responder */
    RNIC_ROCE_OPF_RESPONSE      = 1u << 5,  /* responder -> requester */
    RNIC_ROCE_OPF_SEND          = 1u << 6,
    RNIC_ROCE_OPF_WRITE         = 1u << 7,
    RNIC_ROCE_OPF_READ          = 1u << 8,
    RNIC_ROCE_OPF_ATOMIC        = 1u << 9,  /* CmpSwap / FetchAdd */
    RNIC_ROCE_OPF_IMM           = 1u << 10, /* completes with immediate */
    RNIC_ROCE_OPF_INV           = 1u << 11, /* completes with invalidate */
    RNIC_ROCE_OPF_COMPLETES     = 1u << 12, /* consumes a RQ WQE at the end */
    RNIC_ROCE_OPF_FLUSH         = 1u << 13,
    RNIC_ROCE_OPF_ATOMIC_WRITE  = 1u << 14,
    RNIC_ROCE_OPF_CNP           = 1u << 15,
};
#define RNIC_ROCE_OPF_ONLY  (RNIC_ROCE_OPF_FIRST | RNIC_ROCE_OPF_LAST)

typedef struct RnicRoceOpInfo {
    const char *name;       /* e.g. "RC_SEND_FIRST" */
    uint16_t ext;           /* RNIC_ROCE_EXT_* carried by the opcode */
    uint16_t flags;         /* RNIC_ROCE_OPF_* */
    uint8_t hdr_len;        /* BTH + extension headers */
} RnicRoceOpInfo;

/* AETH syndrome (IBTA 9.7.5.1.1): type in bits 7:5, value in bits 4:0. */
#define RNIC_ROCE_AETH_TYPE_MASK        0xe0
#define RNIC_ROCE_AETH_VALUE_MASK       0x1f
#define RNIC_ROCE_AETH_ACK              0x00    /* | credit count (5 bits) */
#define RNIC_ROCE_AETH_RNR_NAK          0x20    /* | RNR timer code */
#define RNIC_ROCE_AETH_NAK              0x60    /* | NAK code */
#define RNIC_ROCE_AETH_CREDIT_INVALID   0x1f
#define RNIC_ROCE_NAK_PSN_SEQ_ERR       0x00
#define RNIC_ROCE_NAK_INVALID_REQ       0x01
#define RNIC_ROCE_NAK_REMOTE_ACCESS     0x02
#define RNIC_ROCE_NAK_REMOTE_OP         0x03
#define RNIC_ROCE_NAK_INVALID_RD_REQ    0x04

typedef struct RnicRoceReth {
    uint64_t va;
    uint32_t rkey;
    uint32_t dma_len;
} RnicRoceReth;

typedef struct RnicRoceAeth {
    uint8_t syndrome;
    uint32_t msn;           /* 24 bits */
} RnicRoceAeth;

typedef struct RnicRoceAtomicEth {
    uint64_t va;
    uint32_t rkey;
    uint64_t swap_add;
    uint64_t compare;
} RnicRoceAtomicEth;

typedef struct RnicRoceAtomicAckEth {
    uint64_t orig;
} RnicRoceAtomicAckEth;

typedef struct RnicRoceIeth {
    uint32_t rkey;
} RnicRoceIeth;

typedef struct RnicRoceDeth {
    uint32_t qkey;
    uint32_t src_qp;        /* 24 bits */
} RnicRoceDeth;

typedef struct RnicRoceFeth {
    uint8_t sel;            /* selectivity level, 2 bits */
    uint8_t plt;            /* placement type, 4 bits */
} RnicRoceFeth;

/*
 * The transport headers of a packet, host order: the BTH and the extension
 * headers the opcode carries ('ext' says which, from the opcode table).
 * One layout shared by the codec (RnicRoceHdr) and the engine's
 * transport (RnicPacket, rnic-packet.h): both declare these members with
 * RNIC_ROCE_TRANSPORT_GROUP, so a field is read as h->psn and the whole
 * group is copied as h->tp (the pattern of Linux's struct_group_tagged()).
 *
 * ImmDt: the four wire bytes read big-endian (verbs' imm_data is already
 * in network order: immdt = be32toh(imm_data)).
 */
#define RNIC_ROCE_TRANSPORT_MEMBERS \
    uint8_t opcode;                                                     \
    bool se;                /* solicited event */                       \
    bool migreq;            /* M: migration request */                  \
    uint8_t pad;            /* pad count, 0..3 */                       \
    uint8_t tver;           /* transport header version, 0 */           \
    uint16_t pkey;                                                      \
    bool fecn;                                                          \
    bool becn;                                                          \
    uint32_t dest_qp;       /* 24 bits */                               \
    bool ack_req;                                                       \
    uint32_t psn;           /* 24 bits */                               \
    uint32_t ext;           /* RNIC_ROCE_EXT_*: which follow the BTH */ \
    RnicRoceReth reth;                                                  \
    RnicRoceAeth aeth;                                                  \
    RnicRoceAtomicEth atomic_eth;                                       \
    RnicRoceAtomicAckEth atomic_ack_eth;                                \
    uint32_t immdt;                                                     \
    RnicRoceIeth ieth;                                                  \
    RnicRoceDeth deth;                                                  \
    RnicRoceFeth feth;

typedef struct RnicRoceTransport {
    RNIC_ROCE_TRANSPORT_MEMBERS
} RnicRoceTransport;

#define RNIC_ROCE_TRANSPORT_GROUP               \
    union {                                     \
        struct {                                \
            RNIC_ROCE_TRANSPORT_MEMBERS         \
        };                                      \
        RnicRoceTransport tp;                   \
    }

/*
 * One RoCEv2 packet, all fields in host order.
 *
 * GIDs: IPv6 addresses; for IPv4 the IPv4-mapped form ::ffff:a.b.c.d.
 *
 * Encode: the caller fills the fields; 'ext', 'pad', 'ip_df', 'udp_dport',
 * 'icrc' and the layout offsets are ignored (the opcode determines the
 * extension headers, the payload length the pad; DF is always set, the
 * UDP destination port is always 4791).
 * Decode: everything is filled in; 'payload' points into the frame.
 */
typedef struct RnicRoceHdr {
    /* Ethernet */
    uint8_t dmac[6];
    uint8_t smac[6];
    bool vlan_present;
    uint16_t vlan_id;       /* VID, 12 bits */
    uint8_t vlan_pcp;       /* priority, 3 bits */
    bool vlan_dei;

    /* IPv4 / IPv6 */
    bool ipv6;
    uint8_t sgid[16];
    uint8_t dgid[16];
    uint8_t traffic_class;  /* IPv4 TOS / IPv6 traffic class: DSCP<<2 | ECN */
    uint32_t flow_label;    /* IPv6 only, 20 bits */
    uint8_t hop_limit;      /* IPv4 TTL / IPv6 hop limit */
    uint16_t ip_id;         /* IPv4 identification */
    bool ip_df;             /* IPv4 don't-fragment (decode only) */

    /* UDP */
    uint16_t udp_sport;     /* flow entropy */
    uint16_t udp_dport;     /* always 4791 */

    /* BTH and extension headers */
    RNIC_ROCE_TRANSPORT_GROUP;

    /* Payload (without pad). */
    const uint8_t *payload;
    uint32_t payload_len;

    /* Decode only: the ICRC as received, and where things are. */
    uint32_t icrc;
    uint16_t l3_offset;     /* IP header offset in the frame: 14 or 18 */
    uint16_t bth_offset;    /* BTH offset in the frame */
    uint32_t frame_len;     /* bytes used, up to the end of the ICRC */
} RnicRoceHdr;

typedef enum RnicRoceError {
    RNIC_ROCE_OK = 0,
    RNIC_ROCE_ERR_TRUNCATED,    /* frame ends before what its headers say */
    RNIC_ROCE_ERR_NOT_IP,       /* EtherType (after one VLAN tag) not IP */
    RNIC_ROCE_ERR_IP_VERSION,   /* IP version field contradicts EtherType */
    RNIC_ROCE_ERR_IP_OPTIONS,   /* IPv4 options / IPv6 extension headers */
    RNIC_ROCE_ERR_IP_FRAGMENT,  /* IPv4 fragment (MF or offset set) */
    RNIC_ROCE_ERR_IP_CSUM,      /* IPv4 header checksum wrong */
    RNIC_ROCE_ERR_IP_LEN,       /* IP length too small for IP + UDP */
    RNIC_ROCE_ERR_NOT_UDP,      /* IP protocol / next header not UDP */
    RNIC_ROCE_ERR_NOT_ROCE,     /* UDP destination port not 4791 */
    RNIC_ROCE_ERR_UDP_LEN,      /* UDP length differs from the IP length */
    RNIC_ROCE_ERR_UDP_CSUM,     /* non-zero UDP checksum wrong */
    RNIC_ROCE_ERR_BTH_TVER,     /* BTH transport version not 0 */
    RNIC_ROCE_ERR_OPCODE,       /* unknown or unsupported BTH opcode */
    RNIC_ROCE_ERR_LEN,          /* transport length vs. opcode's headers */
    RNIC_ROCE_ERR_PAD,          /* pad count inconsistent with length */
    RNIC_ROCE_ERR_ICRC,         /* ICRC mismatch */
    /* encode only */
    RNIC_ROCE_ERR_INVALID,      /* a field out of range */
    RNIC_ROCE_ERR_TOO_LONG,     /* does not fit the IP/UDP length fields */
    RNIC_ROCE_ERR_NOSPACE,      /* output buffer too small */
    RNIC_ROCE_ERR__MAX,
} RnicRoceError;

/* The buffers rnic_roce_encode() writes into (no payload: that is iov'd). */
typedef struct RnicRoceTx {
    uint8_t hdr[RNIC_ROCE_HDR_MAX];
    uint8_t trailer[RNIC_ROCE_TRAILER_MAX];
    uint16_t hdr_len;
    uint16_t trailer_len;
    uint32_t frame_len;     /* headers + payload + trailer */
} RnicRoceTx;

/* Iovecs of rnic_roce_encode(): headers, payload (may be empty), trailer. */
#define RNIC_ROCE_ENCODE_IOV    3

/* By opcode; .name is NULL where the codec does not know the opcode. */
extern const RnicRoceOpInfo rnic_roce_ops[256];

static inline const RnicRoceOpInfo *rnic_roce_op_info(uint8_t opcode)
{
    return rnic_roce_ops[opcode].name ? &rnic_roce_ops[opcode] : NULL;
}

const char *rnic_roce_strerror(RnicRoceError err);

/* What the headers of a frame are, as far as rnic_roce_peek() reads them. */
typedef enum RnicRoceClass {
    RNIC_ROCE_CLASS_TRUNCATED,  /* ends in Ethernet/802.1Q/IP or UDP ports */
    RNIC_ROCE_CLASS_NOT_IP,     /* not IP, or its version or IHL is wrong */
    RNIC_ROCE_CLASS_NOT_UDP,    /* IP, not UDP (or an IPv4 non-first frag) */
    RNIC_ROCE_CLASS_UDP,        /* UDP to another port */
    RNIC_ROCE_CLASS_ROCE,       /* UDP to 4791: RoCEv2, not validated yet */
} RnicRoceClass;

/* The BTH, host order (the fields of RNIC_ROCE_TRANSPORT_MEMBERS). */
typedef struct RnicRoceBth {
    uint8_t opcode;
    bool se;
    bool migreq;
    uint8_t pad;
    uint8_t tver;
    uint16_t pkey;
    bool fecn;
    bool becn;
    uint32_t dest_qp;
    bool ack_req;
    uint32_t psn;
} RnicRoceBth;

/*
 * A frame's Ethernet, 802.1Q, IPv4/IPv6, UDP and BTH headers read once,
 * without validation (no lengths, checksums or ICRC): who the frame is for
 * and where its headers are. Fields the peek did not get to are 0, but for
 * dgid (set when cls is UDP or ROCE) and bth (when has_bth): unwritten.
 */
typedef struct RnicRocePeek {
    RnicRoceClass cls;
    bool mcast;             /* Ethernet destination is a group address */
    bool vlan_present;
    bool ipv6;
    bool has_bth;           /* ROCE and a whole BTH follows the UDP header */
    uint16_t vlan_tci;
    uint16_t ethertype;     /* after the 802.1Q tag */
    uint16_t l3_offset;     /* IP header: 14 or 18 (0: L2 header cut) */
    uint16_t l4_offset;     /* UDP header (IPv4: at the IHL's length) */
    uint16_t udp_dport;
    uint8_t dgid[16];       /* IP destination as a GID (::ffff:a.b.c.d) */
    RnicRoceBth bth;        /* when has_bth */
} RnicRocePeek;

/*
 * rnic_roce_peek() reads no byte beyond this (Ethernet, 802.1Q, IPv4 with
 * the longest options, UDP, BTH): a peek of a frame's first
 * MIN(len, RNIC_ROCE_PEEK_LEN) or more bytes is the peek of the frame.
 */
#define RNIC_ROCE_PEEK_LEN \
    (RNIC_ROCE_ETH_HLEN + RNIC_ROCE_VLAN_HLEN + 60 + RNIC_ROCE_UDP_HLEN + \
     RNIC_ROCE_BTH_LEN)

/*
 * Classify a frame by its headers (the receive path's first look: is it
 * RoCEv2 and to which address and QP?). Never reads outside
 * frame[0 .. MIN(len, RNIC_ROCE_PEEK_LEN)).
 */
void rnic_roce_peek(const void *frame, size_t len, RnicRocePeek *pk);

/*
 * rnic_roce_decode() of a frame already peeked: continues from 'pk' (the
 * peek of this frame, or of its first MIN(len, RNIC_ROCE_PEEK_LEN) bytes
 * or more) instead of reading the headers again. Same results.
 */
RnicRoceError rnic_roce_decode_peeked(const void *frame, size_t len,
                                      const RnicRocePeek *pk, RnicRoceHdr *h);

/*
 * Decode and validate one Ethernet frame (no FCS). Bytes after the IP
 * packet (Ethernet padding) are ignored. On RNIC_ROCE_OK *h is filled and
 * h->payload points into 'frame'. On an error *h holds what was decoded
 * before the failing check (e.g. addresses for a log message; the ICRC
 * is checked last, so on RNIC_ROCE_ERR_ICRC all headers but the
 * extension headers are there). Never reads outside frame[0 .. len).
 */
RnicRoceError rnic_roce_decode(const void *frame, size_t len, RnicRoceHdr *h);

/*
 * Encode h into tx->hdr / tx->trailer and set iov[0..2] to
 * { tx->hdr, h->payload, tx->trailer }. The ICRC is computed over the
 * payload in place. h->payload may be NULL when h->payload_len is 0.
 */
RnicRoceError rnic_roce_encode(const RnicRoceHdr *h, RnicRoceTx *tx,
                               struct iovec iov[RNIC_ROCE_ENCODE_IOV]);

/*
 * Same with a scattered payload (h->payload ignored; h->payload_len must
 * equal the sum of the payload iovecs). The frame is then
 * { tx->hdr, payload[0..payload_cnt), tx->trailer }.
 */
RnicRoceError rnic_roce_encode_sg(const RnicRoceHdr *h,
                                  const struct iovec *payload,
                                  unsigned int payload_cnt, RnicRoceTx *tx);

/* Encode into one contiguous buffer (copies the payload). */
RnicRoceError rnic_roce_encode_linear(const RnicRoceHdr *h, void *out,
                                      size_t out_size, size_t *frame_len);

/* Frame length rnic_roce_encode() would produce (0 if h is invalid). */
size_t rnic_roce_frame_len(const RnicRoceHdr *h);

/*
 * The 40 bytes a UD receive places in front of the payload (the "GRH"),
 * as rxe does: IPv6 — the IPv6 header; IPv4 — 20 zero bytes followed by
 * the IPv4 header. Rebuilt from the decoded fields, byte-identical to the
 * received header.
 */
void rnic_roce_build_grh(const RnicRoceHdr *h,
                         uint8_t grh[RNIC_ROCE_GRH_LEN]);

/* GID helpers: is this GID an IPv4-mapped IPv6 address (::ffff:a.b.c.d)? */
void rnic_roce_gid_from_ipv4(uint8_t gid[16], const uint8_t addr[4]);
bool rnic_roce_gid_is_ipv4(const uint8_t gid[16]);

/* 24-bit PSN arithmetic: a - b as a signed distance. */
static inline int32_t rnic_psn_diff(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 8) >> 8;
}

static inline uint32_t rnic_psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & RNIC_ROCE_PSN_MASK;
}

/*
 * CRC-32 (IEEE 802.3, reflected, as zlib's crc32(): pass 0 to start, the
 * previous result to continue). Table-driven, PCLMULQDQ on x86-64.
 */
uint32_t rnic_crc32(uint32_t crc, const void *buf, size_t len);
/* The portable table-driven version (tests compare the two). */
uint32_t rnic_crc32_table(uint32_t crc, const void *buf, size_t len);

/*
 * ICRC (Annex A17.3.3) of one IP packet: 'ip' points at the IPv4 or IPv6
 * header, 'ip_len' bytes cover IP header, UDP header, BTH, extension
 * headers, payload and pad, i.e. everything but the ICRC itself. Fields
 * masked to 1s as rxe does: 8 bytes standing for the LRH; IPv4 TOS, TTL and
 * header checksum; IPv6 traffic class, flow label and hop limit; the UDP
 * checksum; BTH byte 4 (FECN, BECN, resv6). The ICRC goes on the wire
 * little-endian (as rxe on x86 and ConnectX hardware send it).
 * 'ip_len' must be at least IP header + UDP header + BTH.
 */
uint32_t rnic_roce_icrc(const uint8_t *ip, bool ipv6, size_t ip_len);

/*
 * The ICRC over the first 'len' bytes from 'ip' only: the masked IP + UDP +
 * BTH and, when len is larger, the bytes after the BTH (extension headers;
 * at most RNIC_ROCE_TRANSPORT_HDR_MAX + 15 bytes from the BTH on);
 * continue with rnic_crc32() over the rest of the packet.
 */
uint32_t rnic_roce_icrc_hdr(const uint8_t *ip, bool ipv6, size_t len);

/*
 * The ICRC Linux rxe (6.12 and earlier) puts on an RC FLUSH: its opcode
 * table has no payload offset for FLUSH, so after the headers its CRC runs
 * over the 'tlen' - 4 transport bytes from the BTH on a second time, raw.
 * 'icrc' is rnic_roce_icrc() of the packet. The receive path accepts this
 * one on an RC FLUSH besides the right one (docs/spec.md "Wire format"):
 * it covers every byte of the packet too.
 */
uint32_t rnic_roce_icrc_rxe_flush(uint32_t icrc, const uint8_t *bth, size_t tlen);

#endif /* RNIC_ROCE_H */
