/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * RoCEv2 wire codec: the opcode table, frame decode/validate, frame encode,
 * the UD "GRH" of a received packet. See rnic-roce.h.
 */
#include <string.h>

#include "rnic-roce.h"

/* Big-endian field access, byte by byte: frames have no alignment. */
static inline uint16_t ld_be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t ld_be24(const uint8_t *p)
{
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t ld_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | ld_be24(p + 1);
}

static inline uint64_t ld_be64(const uint8_t *p)
{
    return (uint64_t)ld_be32(p) << 32 | ld_be32(p + 4);
}

static inline uint32_t ld_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static inline void st_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v;
}

static inline void st_be24(uint8_t *p, uint32_t v)
{
    p[0] = v >> 16;
    p[1] = v >> 8;
    p[2] = v;
}

static inline void st_be32(uint8_t *p, uint32_t v)
{
    p[0] = v >> 24;
    st_be24(p + 1, v);
}

static inline void st_be64(uint8_t *p, uint64_t v)
{
    st_be32(p, v >> 32);
    st_be32(p + 4, v);
}

static inline void st_le32(uint8_t *p, uint32_t v)
{
    p[0] = v;
    p[1] = v >> 8;
    p[2] = v >> 16;
    p[3] = v >> 24;
}

/*
 * Opcode table (IBTA Vol. 1 table 38 plus FLUSH / ATOMIC WRITE of 1.5 and
 * the RoCEv2 CNP).
 */

#define EXT_LEN(e) \
    ((((e) & RNIC_ROCE_EXT_FETH) ? RNIC_ROCE_FETH_LEN : 0) + \
     (((e) & RNIC_ROCE_EXT_DETH) ? RNIC_ROCE_DETH_LEN : 0) + \
     (((e) & RNIC_ROCE_EXT_RETH) ? RNIC_ROCE_RETH_LEN : 0) + \
     (((e) & RNIC_ROCE_EXT_ATOMIC_ETH) ? RNIC_ROCE_ATOMIC_ETH_LEN : 0) + \
     (((e) & RNIC_ROCE_EXT_AETH) ? RNIC_ROCE_AETH_LEN : 0) + \
     (((e) & RNIC_ROCE_EXT_ATOMIC_ACK_ETH) ? \
      RNIC_ROCE_ATOMIC_ACK_ETH_LEN : 0) + \
     (((e) & RNIC_ROCE_EXT_IMMDT) ? RNIC_ROCE_IMMDT_LEN : 0) + \
     (((e) & RNIC_ROCE_EXT_IETH) ? RNIC_ROCE_IETH_LEN : 0) + \
     (((e) & RNIC_ROCE_EXT_CNP_RSVD) ? RNIC_ROCE_CNP_RSVD_LEN : 0))

#define OP(tr, op, e, f) \
    [RNIC_ROCE_TRANSPORT_##tr | RNIC_ROCE_OP_##op] = { \
        .name = #tr "_" #op, .ext = (e), .flags = (f), \
        .hdr_len = RNIC_ROCE_BTH_LEN + EXT_LEN(e), \
    }

#define P       RNIC_ROCE_OPF_PAYLOAD
#define FIRST   RNIC_ROCE_OPF_FIRST
#define MIDDLE  RNIC_ROCE_OPF_MIDDLE
#define LAST    RNIC_ROCE_OPF_LAST
#define ONLY    RNIC_ROCE_OPF_ONLY
#define REQ     RNIC_ROCE_OPF_REQUEST
#define RESP    RNIC_ROCE_OPF_RESPONSE
#define SEND    RNIC_ROCE_OPF_SEND
#define WRITE   RNIC_ROCE_OPF_WRITE
#define READ    RNIC_ROCE_OPF_READ
#define ATOMIC  RNIC_ROCE_OPF_ATOMIC
#define IMM     RNIC_ROCE_OPF_IMM
#define INV     RNIC_ROCE_OPF_INV
#define COMPL   RNIC_ROCE_OPF_COMPLETES
#define RETH    RNIC_ROCE_EXT_RETH
#define AETH    RNIC_ROCE_EXT_AETH
#define IMMDT   RNIC_ROCE_EXT_IMMDT

const RnicRoceOpInfo rnic_roce_ops[256] = {
    OP(RC, SEND_FIRST, 0, P | FIRST | REQ | SEND),
    OP(RC, SEND_MIDDLE, 0, P | MIDDLE | REQ | SEND),
    OP(RC, SEND_LAST, 0, P | LAST | REQ | SEND | COMPL),
    OP(RC, SEND_LAST_WITH_IMMEDIATE, IMMDT,
       P | LAST | REQ | SEND | IMM | COMPL),
    OP(RC, SEND_ONLY, 0, P | ONLY | REQ | SEND | COMPL),
    OP(RC, SEND_ONLY_WITH_IMMEDIATE, IMMDT,
       P | ONLY | REQ | SEND | IMM | COMPL),
    OP(RC, RDMA_WRITE_FIRST, RETH, P | FIRST | REQ | WRITE),
    OP(RC, RDMA_WRITE_MIDDLE, 0, P | MIDDLE | REQ | WRITE),
    OP(RC, RDMA_WRITE_LAST, 0, P | LAST | REQ | WRITE),
    OP(RC, RDMA_WRITE_LAST_WITH_IMMEDIATE, IMMDT,
       P | LAST | REQ | WRITE | IMM | COMPL),
    OP(RC, RDMA_WRITE_ONLY, RETH, P | ONLY | REQ | WRITE),
    OP(RC, RDMA_WRITE_ONLY_WITH_IMMEDIATE, RETH | IMMDT,
       P | ONLY | REQ | WRITE | IMM | COMPL),
    OP(RC, RDMA_READ_REQUEST, RETH, ONLY | REQ | READ),
    OP(RC, RDMA_READ_RESPONSE_FIRST, AETH, P | FIRST | RESP | READ),
    OP(RC, RDMA_READ_RESPONSE_MIDDLE, 0, P | MIDDLE | RESP | READ),
    OP(RC, RDMA_READ_RESPONSE_LAST, AETH, P | LAST | RESP | READ),
    OP(RC, RDMA_READ_RESPONSE_ONLY, AETH, P | ONLY | RESP | READ),
    OP(RC, ACKNOWLEDGE, AETH, ONLY | RESP),
    OP(RC, ATOMIC_ACKNOWLEDGE, AETH | RNIC_ROCE_EXT_ATOMIC_ACK_ETH,
       ONLY | RESP | ATOMIC),
    OP(RC, COMPARE_SWAP, RNIC_ROCE_EXT_ATOMIC_ETH, ONLY | REQ | ATOMIC),
    OP(RC, FETCH_ADD, RNIC_ROCE_EXT_ATOMIC_ETH, ONLY | REQ | ATOMIC),
    OP(RC, SEND_LAST_WITH_INVALIDATE, RNIC_ROCE_EXT_IETH,
       P | LAST | REQ | SEND | INV | COMPL),
    OP(RC, SEND_ONLY_WITH_INVALIDATE, RNIC_ROCE_EXT_IETH,
       P | ONLY | REQ | SEND | INV | COMPL),
    OP(RC, FLUSH, RNIC_ROCE_EXT_FETH | RETH,
       ONLY | REQ | RNIC_ROCE_OPF_FLUSH),
    OP(RC, ATOMIC_WRITE, RETH, P | ONLY | REQ | RNIC_ROCE_OPF_ATOMIC_WRITE),

    OP(UC, SEND_FIRST, 0, P | FIRST | REQ | SEND),
    OP(UC, SEND_MIDDLE, 0, P | MIDDLE | REQ | SEND),
    OP(UC, SEND_LAST, 0, P | LAST | REQ | SEND | COMPL),
    OP(UC, SEND_LAST_WITH_IMMEDIATE, IMMDT,
       P | LAST | REQ | SEND | IMM | COMPL),
    OP(UC, SEND_ONLY, 0, P | ONLY | REQ | SEND | COMPL),
    OP(UC, SEND_ONLY_WITH_IMMEDIATE, IMMDT,
       P | ONLY | REQ | SEND | IMM | COMPL),
    OP(UC, RDMA_WRITE_FIRST, RETH, P | FIRST | REQ | WRITE),
    OP(UC, RDMA_WRITE_MIDDLE, 0, P | MIDDLE | REQ | WRITE),
    OP(UC, RDMA_WRITE_LAST, 0, P | LAST | REQ | WRITE),
    OP(UC, RDMA_WRITE_LAST_WITH_IMMEDIATE, IMMDT,
       P | LAST | REQ | WRITE | IMM | COMPL),
    OP(UC, RDMA_WRITE_ONLY, RETH, P | ONLY | REQ | WRITE),
    OP(UC, RDMA_WRITE_ONLY_WITH_IMMEDIATE, RETH | IMMDT,
       P | ONLY | REQ | WRITE | IMM | COMPL),

    OP(UD, SEND_ONLY, RNIC_ROCE_EXT_DETH, P | ONLY | REQ | SEND | COMPL),
    OP(UD, SEND_ONLY_WITH_IMMEDIATE, RNIC_ROCE_EXT_DETH | IMMDT,
       P | ONLY | REQ | SEND | IMM | COMPL),

    [RNIC_ROCE_OPCODE_CNP] = {
        .name = "CNP", .ext = RNIC_ROCE_EXT_CNP_RSVD,
        .flags = RNIC_ROCE_OPF_CNP,
        .hdr_len = RNIC_ROCE_BTH_LEN + RNIC_ROCE_CNP_RSVD_LEN,
    },
};

#undef P
#undef FIRST
#undef MIDDLE
#undef LAST
#undef ONLY
#undef REQ
#undef RESP
#undef SEND
#undef WRITE
#undef READ
#undef ATOMIC
#undef IMM
#undef INV
#undef COMPL
#undef RETH
#undef AETH
#undef IMMDT

const char *rnic_roce_strerror(RnicRoceError err)
{
    static const char *const msg[RNIC_ROCE_ERR__MAX] = {
        [RNIC_ROCE_OK] = "ok",
        [RNIC_ROCE_ERR_TRUNCATED] = "frame truncated",
        [RNIC_ROCE_ERR_NOT_IP] = "not IPv4/IPv6",
        [RNIC_ROCE_ERR_IP_VERSION] = "IP version does not match EtherType",
        [RNIC_ROCE_ERR_IP_OPTIONS] = "IPv4 options or IPv6 extension headers",
        [RNIC_ROCE_ERR_IP_FRAGMENT] = "IP fragment",
        [RNIC_ROCE_ERR_IP_CSUM] = "bad IPv4 header checksum",
        [RNIC_ROCE_ERR_IP_LEN] = "bad IP length",
        [RNIC_ROCE_ERR_NOT_UDP] = "not UDP",
        [RNIC_ROCE_ERR_NOT_ROCE] = "UDP destination port not 4791",
        [RNIC_ROCE_ERR_UDP_LEN] = "bad UDP length",
        [RNIC_ROCE_ERR_UDP_CSUM] = "bad UDP checksum",
        [RNIC_ROCE_ERR_BTH_TVER] = "bad BTH transport version",
        [RNIC_ROCE_ERR_OPCODE] = "unknown or unsupported opcode",
        [RNIC_ROCE_ERR_LEN] = "transport length does not fit the opcode",
        [RNIC_ROCE_ERR_PAD] = "pad count inconsistent",
        [RNIC_ROCE_ERR_ICRC] = "ICRC mismatch",
        [RNIC_ROCE_ERR_INVALID] = "field out of range",
        [RNIC_ROCE_ERR_TOO_LONG] = "packet too long",
        [RNIC_ROCE_ERR_NOSPACE] = "buffer too small",
    };

    if ((unsigned)err >= RNIC_ROCE_ERR__MAX) {
        return "unknown error";
    }
    return msg[err];
}

/*
 * Internet checksum
 */

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
    uint64_t acc = sum;

    while (len >= 2) {
        acc += ld_be16(p);
        p += 2;
        len -= 2;
    }
    if (len) {
        acc += (uint32_t)p[0] << 8;
    }
    while (acc >> 16) {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    return (uint32_t)acc;
}

static uint16_t csum_fold(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)~sum;
}

static bool udp_csum_ok(const uint8_t *ip, bool ipv6, const uint8_t *udp,
                        uint16_t udp_len)
{
    uint8_t pseudo[4] = { 0, 17 };
    uint32_t sum;

    st_be16(pseudo + 2, udp_len);
    if (ipv6) {
        sum = csum_add(0, ip + 8, 32);
    } else {
        sum = csum_add(0, ip + 12, 8);
    }
    sum = csum_add(sum, pseudo, sizeof(pseudo));
    sum = csum_add(sum, udp, udp_len);
    return csum_fold(sum) == 0;
}

/*
 * GIDs
 */

static const uint8_t v4mapped_prefix[12] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
};

void rnic_roce_gid_from_ipv4(uint8_t gid[16], const uint8_t addr[4])
{
    memcpy(gid, v4mapped_prefix, sizeof(v4mapped_prefix));
    memcpy(gid + 12, addr, 4);
}

bool rnic_roce_gid_is_ipv4(const uint8_t gid[16])
{
    return memcmp(gid, v4mapped_prefix, sizeof(v4mapped_prefix)) == 0;
}

/*
 * Extension headers, in wire order.
 */

static void parse_ext(const uint8_t *p, uint32_t ext, RnicRoceHdr *h)
{
    if (ext & RNIC_ROCE_EXT_FETH) {
        h->feth.sel = (p[3] >> 4) & 3;
        h->feth.plt = p[3] & 0xf;
        p += RNIC_ROCE_FETH_LEN;
    }
    if (ext & RNIC_ROCE_EXT_DETH) {
        h->deth.qkey = ld_be32(p);
        h->deth.src_qp = ld_be24(p + 5);
        p += RNIC_ROCE_DETH_LEN;
    }
    if (ext & RNIC_ROCE_EXT_RETH) {
        h->reth.va = ld_be64(p);
        h->reth.rkey = ld_be32(p + 8);
        h->reth.dma_len = ld_be32(p + 12);
        p += RNIC_ROCE_RETH_LEN;
    }
    if (ext & RNIC_ROCE_EXT_ATOMIC_ETH) {
        h->atomic_eth.va = ld_be64(p);
        h->atomic_eth.rkey = ld_be32(p + 8);
        h->atomic_eth.swap_add = ld_be64(p + 12);
        h->atomic_eth.compare = ld_be64(p + 20);
        p += RNIC_ROCE_ATOMIC_ETH_LEN;
    }
    if (ext & RNIC_ROCE_EXT_AETH) {
        h->aeth.syndrome = p[0];
        h->aeth.msn = ld_be24(p + 1);
        p += RNIC_ROCE_AETH_LEN;
    }
    if (ext & RNIC_ROCE_EXT_ATOMIC_ACK_ETH) {
        h->atomic_ack_eth.orig = ld_be64(p);
        p += RNIC_ROCE_ATOMIC_ACK_ETH_LEN;
    }
    if (ext & RNIC_ROCE_EXT_IMMDT) {
        h->immdt = ld_be32(p);
        p += RNIC_ROCE_IMMDT_LEN;
    }
    if (ext & RNIC_ROCE_EXT_IETH) {
        h->ieth.rkey = ld_be32(p);
        p += RNIC_ROCE_IETH_LEN;
    }
    /* RNIC_ROCE_EXT_CNP_RSVD: reserved, ignored on receive. */
}

static uint8_t *write_ext(uint8_t *p, uint32_t ext, const RnicRoceHdr *h)
{
    if (ext & RNIC_ROCE_EXT_FETH) {
        st_be32(p, (uint32_t)(h->feth.sel & 3) << 4 | (h->feth.plt & 0xf));
        p += RNIC_ROCE_FETH_LEN;
    }
    if (ext & RNIC_ROCE_EXT_DETH) {
        st_be32(p, h->deth.qkey);
        p[4] = 0;
        st_be24(p + 5, h->deth.src_qp);
        p += RNIC_ROCE_DETH_LEN;
    }
    if (ext & RNIC_ROCE_EXT_RETH) {
        st_be64(p, h->reth.va);
        st_be32(p + 8, h->reth.rkey);
        st_be32(p + 12, h->reth.dma_len);
        p += RNIC_ROCE_RETH_LEN;
    }
    if (ext & RNIC_ROCE_EXT_ATOMIC_ETH) {
        st_be64(p, h->atomic_eth.va);
        st_be32(p + 8, h->atomic_eth.rkey);
        st_be64(p + 12, h->atomic_eth.swap_add);
        st_be64(p + 20, h->atomic_eth.compare);
        p += RNIC_ROCE_ATOMIC_ETH_LEN;
    }
    if (ext & RNIC_ROCE_EXT_AETH) {
        p[0] = h->aeth.syndrome;
        st_be24(p + 1, h->aeth.msn);
        p += RNIC_ROCE_AETH_LEN;
    }
    if (ext & RNIC_ROCE_EXT_ATOMIC_ACK_ETH) {
        st_be64(p, h->atomic_ack_eth.orig);
        p += RNIC_ROCE_ATOMIC_ACK_ETH_LEN;
    }
    if (ext & RNIC_ROCE_EXT_IMMDT) {
        st_be32(p, h->immdt);
        p += RNIC_ROCE_IMMDT_LEN;
    }
    if (ext & RNIC_ROCE_EXT_IETH) {
        st_be32(p, h->ieth.rkey);
        p += RNIC_ROCE_IETH_LEN;
    }
    if (ext & RNIC_ROCE_EXT_CNP_RSVD) {
        memset(p, 0, RNIC_ROCE_CNP_RSVD_LEN);
        p += RNIC_ROCE_CNP_RSVD_LEN;
    }
    return p;
}

/*
 * Peek: the headers read once, no validation
 */

static void peek_bth(const uint8_t *bth, RnicRoceBth *b)
{
    b->opcode = bth[0];
    b->se = bth[1] & 0x80;
    b->migreq = bth[1] & 0x40;
    b->pad = (bth[1] >> 4) & 3;
    b->tver = bth[1] & 0xf;
    b->pkey = ld_be16(bth + 2);
    b->fecn = bth[4] & 0x80;
    b->becn = bth[4] & 0x40;
    b->dest_qp = ld_be24(bth + 5);
    b->ack_req = bth[8] & 0x80;
    b->psn = ld_be24(bth + 9);
}

/* IPv4 header at ip, 'avail' bytes from it: its class so far, UDP offset. */
static RnicRoceClass peek_ipv4(const uint8_t *ip, size_t avail,
                               RnicRocePeek *pk)
{
    size_t ihl;

    if (avail < RNIC_ROCE_IPV4_HLEN) {
        return RNIC_ROCE_CLASS_TRUNCATED;
    }
    ihl = (ip[0] & 0xf) * 4u;
    if (ip[0] >> 4 != 4 || ihl < RNIC_ROCE_IPV4_HLEN) {
        return RNIC_ROCE_CLASS_NOT_IP;
    }
    if (ip[9] != 17 || (ld_be16(ip + 6) & 0x1fff)) {
        return RNIC_ROCE_CLASS_NOT_UDP; /* or a fragment without its UDP */
    }
    rnic_roce_gid_from_ipv4(pk->dgid, ip + 16);
    pk->l4_offset = pk->l3_offset + ihl;
    return RNIC_ROCE_CLASS_UDP;
}

static RnicRoceClass peek_ipv6(const uint8_t *ip, size_t avail,
                               RnicRocePeek *pk)
{
    if (avail < RNIC_ROCE_IPV6_HLEN) {
        return RNIC_ROCE_CLASS_TRUNCATED;
    }
    if (ip[0] >> 4 != 6) {
        return RNIC_ROCE_CLASS_NOT_IP;
    }
    if (ip[6] != 17) {
        return RNIC_ROCE_CLASS_NOT_UDP;
    }
    pk->ipv6 = true;
    memcpy(pk->dgid, ip + 24, 16);
    pk->l4_offset = pk->l3_offset + RNIC_ROCE_IPV6_HLEN;
    return RNIC_ROCE_CLASS_UDP;
}

void rnic_roce_peek(const void *frame, size_t len, RnicRocePeek *pk)
{
    const uint8_t *f = frame;
    size_t off = RNIC_ROCE_ETH_HLEN;

    /* not *pk = (RnicRocePeek){ ... }: dgid and bth are left unwritten */
    pk->cls = RNIC_ROCE_CLASS_TRUNCATED;
    pk->mcast = pk->vlan_present = pk->ipv6 = pk->has_bth = false;
    pk->vlan_tci = pk->ethertype = 0;
    pk->l3_offset = pk->l4_offset = pk->udp_dport = 0;
    if (len < RNIC_ROCE_ETH_HLEN) {
        return;
    }
    pk->mcast = f[0] & 1;
    pk->ethertype = ld_be16(f + 12);
    if (pk->ethertype == RNIC_ROCE_ETHERTYPE_VLAN) {
        off += RNIC_ROCE_VLAN_HLEN;
        if (len < off) {
            return;
        }
        pk->vlan_present = true;
        pk->vlan_tci = ld_be16(f + 14);
        pk->ethertype = ld_be16(f + 16);
    }
    pk->l3_offset = off;
    if (pk->ethertype == RNIC_ROCE_ETHERTYPE_IPV4) {
        pk->cls = peek_ipv4(f + off, len - off, pk);
    } else if (pk->ethertype == RNIC_ROCE_ETHERTYPE_IPV6) {
        pk->cls = peek_ipv6(f + off, len - off, pk);
    } else {
        pk->cls = RNIC_ROCE_CLASS_NOT_IP;
    }
    if (pk->cls != RNIC_ROCE_CLASS_UDP) {
        return;
    }
    if (len < pk->l4_offset + 4u) {
        pk->cls = RNIC_ROCE_CLASS_TRUNCATED;    /* before the UDP ports */
        return;
    }
    pk->udp_dport = ld_be16(f + pk->l4_offset + 2);
    if (pk->udp_dport != RNIC_ROCE_UDP_DPORT) {
        return;
    }
    pk->cls = RNIC_ROCE_CLASS_ROCE;
    if (len >= pk->l4_offset + RNIC_ROCE_UDP_HLEN + RNIC_ROCE_BTH_LEN) {
        pk->has_bth = true;
        peek_bth(f + pk->l4_offset + RNIC_ROCE_UDP_HLEN, &pk->bth);
    }
}

/*
 * Decode: the peek's headers validated in wire order, then the extension
 * headers, payload and ICRC. On an error *h holds what was decoded before
 * the failing check (rnic_roce_decode).
 */

static RnicRoceError decode_eth(const uint8_t *f, size_t len,
                                const RnicRocePeek *pk, RnicRoceHdr *h)
{
    if (len < RNIC_ROCE_ETH_HLEN) {
        return RNIC_ROCE_ERR_TRUNCATED;
    }
    memcpy(h->dmac, f, 6);
    memcpy(h->smac, f + 6, 6);
    if (!pk->l3_offset) {
        return RNIC_ROCE_ERR_TRUNCATED;         /* in the 802.1Q tag */
    }
    if (pk->vlan_present) {
        h->vlan_present = true;
        h->vlan_pcp = pk->vlan_tci >> 13;
        h->vlan_dei = (pk->vlan_tci >> 12) & 1;
        h->vlan_id = pk->vlan_tci & 0xfff;
    }
    h->l3_offset = pk->l3_offset;
    return RNIC_ROCE_OK;
}

/* The IPv4 header at ip, 'avail' bytes from it; *l4_len: UDP datagram. */
static RnicRoceError decode_ipv4(const uint8_t *ip, size_t avail,
                                 const RnicRocePeek *pk, RnicRoceHdr *h,
                                 size_t *l4_len)
{
    uint16_t tot_len, frag;

    if (avail < RNIC_ROCE_IPV4_HLEN) {
        return RNIC_ROCE_ERR_TRUNCATED;
    }
    if (ip[0] >> 4 != 4) {
        return RNIC_ROCE_ERR_IP_VERSION;
    }
    if ((ip[0] & 0xf) != 5) {
        /* rxe's ICRC assumes a bare 20-byte header too */
        return RNIC_ROCE_ERR_IP_OPTIONS;
    }
    if (csum_fold(csum_add(0, ip, RNIC_ROCE_IPV4_HLEN)) != 0) {
        return RNIC_ROCE_ERR_IP_CSUM;
    }
    tot_len = ld_be16(ip + 2);
    if (tot_len < RNIC_ROCE_IPV4_HLEN + RNIC_ROCE_UDP_HLEN) {
        return RNIC_ROCE_ERR_IP_LEN;
    }
    if (tot_len > avail) {
        return RNIC_ROCE_ERR_TRUNCATED;
    }
    frag = ld_be16(ip + 6);
    if (frag & 0x3fff) {
        return RNIC_ROCE_ERR_IP_FRAGMENT;
    }
    if (ip[9] != 17) {
        return RNIC_ROCE_ERR_NOT_UDP;
    }
    h->traffic_class = ip[1];
    h->ip_id = ld_be16(ip + 4);
    h->ip_df = frag & 0x4000;
    h->hop_limit = ip[8];
    rnic_roce_gid_from_ipv4(h->sgid, ip + 12);
    memcpy(h->dgid, pk->dgid, 16);
    *l4_len = tot_len - RNIC_ROCE_IPV4_HLEN;
    return RNIC_ROCE_OK;
}

static bool ipv6_ext_header(uint8_t nh)
{
    /* hop-by-hop, routing, destination options, mobility, HIP, shim6 */
    return nh == 0 || nh == 43 || nh == 60 || nh == 135 || nh == 139 ||
           nh == 140;
}

static RnicRoceError decode_ipv6(const uint8_t *ip, size_t avail,
                                 const RnicRocePeek *pk, RnicRoceHdr *h,
                                 size_t *l4_len)
{
    uint32_t vtf;
    uint16_t plen;

    if (avail < RNIC_ROCE_IPV6_HLEN) {
        return RNIC_ROCE_ERR_TRUNCATED;
    }
    vtf = ld_be32(ip);
    if (vtf >> 28 != 6) {
        return RNIC_ROCE_ERR_IP_VERSION;
    }
    if (ip[6] != 17) {
        if (ip[6] == 44) {
            return RNIC_ROCE_ERR_IP_FRAGMENT;
        }
        return ipv6_ext_header(ip[6]) ? RNIC_ROCE_ERR_IP_OPTIONS
                                      : RNIC_ROCE_ERR_NOT_UDP;
    }
    plen = ld_be16(ip + 4);
    if (plen < RNIC_ROCE_UDP_HLEN) {
        return RNIC_ROCE_ERR_IP_LEN;
    }
    if (plen > avail - RNIC_ROCE_IPV6_HLEN) {
        return RNIC_ROCE_ERR_TRUNCATED;
    }
    h->ipv6 = true;
    h->traffic_class = (vtf >> 20) & 0xff;
    h->flow_label = vtf & 0xfffff;
    h->hop_limit = ip[7];
    memcpy(h->sgid, ip + 8, 16);
    memcpy(h->dgid, pk->dgid, 16);
    *l4_len = plen;
    return RNIC_ROCE_OK;
}

/* The UDP header after the IP header; l4_len bytes of datagram are there. */
static RnicRoceError decode_udp(const uint8_t *ip, size_t ip_hlen,
                                size_t l4_len, const RnicRocePeek *pk,
                                RnicRoceHdr *h)
{
    const uint8_t *udp = ip + ip_hlen;

    h->udp_sport = ld_be16(udp);
    h->udp_dport = pk->udp_dport;
    if (h->udp_dport != RNIC_ROCE_UDP_DPORT) {
        return RNIC_ROCE_ERR_NOT_ROCE;
    }
    if (ld_be16(udp + 4) != l4_len) {
        return RNIC_ROCE_ERR_UDP_LEN;
    }
    /* Zero means "none" (rxe and RoCE hardware send zero). */
    if (ld_be16(udp + 6) != 0 && !udp_csum_ok(ip, h->ipv6, udp, l4_len)) {
        return RNIC_ROCE_ERR_UDP_CSUM;
    }
    if (l4_len - RNIC_ROCE_UDP_HLEN < RNIC_ROCE_BTH_LEN + RNIC_ROCE_ICRC_LEN) {
        return RNIC_ROCE_ERR_LEN;
    }
    return RNIC_ROCE_OK;
}

static void decode_bth(const RnicRoceBth *b, RnicRoceHdr *h)
{
    h->opcode = b->opcode;
    h->se = b->se;
    h->migreq = b->migreq;
    h->pad = b->pad;
    h->tver = b->tver;
    h->pkey = b->pkey;
    h->fecn = b->fecn;
    h->becn = b->becn;
    h->dest_qp = b->dest_qp;
    h->ack_req = b->ack_req;
    h->psn = b->psn;
}

/*
 * The BTH's version and opcode, and the 'tlen' transport bytes (BTH to
 * ICRC) against what the opcode carries; *data_len: payload + pad.
 */
static RnicRoceError decode_transport_len(const RnicRoceHdr *h, size_t tlen,
                                          const RnicRoceOpInfo **info,
                                          size_t *data_len)
{
    if (h->tver != RNIC_ROCE_BTH_TVER) {
        return RNIC_ROCE_ERR_BTH_TVER;
    }
    *info = rnic_roce_op_info(h->opcode);
    if (!*info) {
        return RNIC_ROCE_ERR_OPCODE;
    }
    if (tlen < (*info)->hdr_len + RNIC_ROCE_ICRC_LEN) {
        return RNIC_ROCE_ERR_LEN;
    }
    *data_len = tlen - (*info)->hdr_len - RNIC_ROCE_ICRC_LEN;
    if ((*info)->flags & RNIC_ROCE_OPF_PAYLOAD) {
        /* payload + pad is 4-byte aligned and the pad fits in it */
        if ((*data_len & 3) || h->pad > *data_len) {
            return RNIC_ROCE_ERR_PAD;
        }
    } else {
        if (*data_len) {
            return RNIC_ROCE_ERR_LEN;
        }
        if (h->pad) {
            return RNIC_ROCE_ERR_PAD;
        }
    }
    return RNIC_ROCE_OK;
}

/* The ICRC ending the 'tlen' transport bytes at bth (rxe's FLUSH one too). */
static bool decode_icrc_ok(const uint8_t *ip, size_t ip_hlen,
                           const uint8_t *bth, size_t tlen, RnicRoceHdr *h)
{
    uint32_t icrc;

    h->icrc = ld_le32(bth + tlen - RNIC_ROCE_ICRC_LEN);
    icrc = rnic_roce_icrc(ip, h->ipv6, ip_hlen + RNIC_ROCE_UDP_HLEN + tlen -
                          RNIC_ROCE_ICRC_LEN);
    return icrc == h->icrc ||
           (h->opcode == RNIC_ROCE_RC_FLUSH &&
            rnic_roce_icrc_rxe_flush(icrc, bth, tlen) == h->icrc);
}

RnicRoceError rnic_roce_decode_peeked(const void *frame, size_t len,
                                      const RnicRocePeek *pk, RnicRoceHdr *h)
{
    const uint8_t *f = frame;
    const uint8_t *ip, *bth;
    const RnicRoceOpInfo *info;
    size_t ip_hlen, l4_len, tlen, data_len;
    RnicRoceError err;

    memset(h, 0, sizeof(*h));
    err = decode_eth(f, len, pk, h);
    if (err != RNIC_ROCE_OK) {
        return err;
    }
    ip = f + pk->l3_offset;
    if (pk->ethertype == RNIC_ROCE_ETHERTYPE_IPV4) {
        ip_hlen = RNIC_ROCE_IPV4_HLEN;
        err = decode_ipv4(ip, len - pk->l3_offset, pk, h, &l4_len);
    } else if (pk->ethertype == RNIC_ROCE_ETHERTYPE_IPV6) {
        ip_hlen = RNIC_ROCE_IPV6_HLEN;
        err = decode_ipv6(ip, len - pk->l3_offset, pk, h, &l4_len);
    } else {
        return RNIC_ROCE_ERR_NOT_IP;
    }
    if (err == RNIC_ROCE_OK) {
        /* from here on everything lies within ip[0 .. ip_hlen + l4_len) */
        err = decode_udp(ip, ip_hlen, l4_len, pk, h);
    }
    if (err != RNIC_ROCE_OK) {
        return err;
    }
    tlen = l4_len - RNIC_ROCE_UDP_HLEN;
    bth = ip + ip_hlen + RNIC_ROCE_UDP_HLEN;
    h->bth_offset = bth - f;
    decode_bth(&pk->bth, h);
    err = decode_transport_len(h, tlen, &info, &data_len);
    if (err != RNIC_ROCE_OK) {
        return err;
    }
    if (!decode_icrc_ok(ip, ip_hlen, bth, tlen, h)) {
        return RNIC_ROCE_ERR_ICRC;
    }
    h->ext = info->ext;
    parse_ext(bth + RNIC_ROCE_BTH_LEN, info->ext, h);
    h->payload = bth + info->hdr_len;
    h->payload_len = data_len - h->pad;
    h->frame_len = pk->l3_offset + ip_hlen + l4_len;
    return RNIC_ROCE_OK;
}

RnicRoceError rnic_roce_decode(const void *frame, size_t len, RnicRoceHdr *h)
{
    RnicRocePeek pk;

    rnic_roce_peek(frame, len, &pk);
    return rnic_roce_decode_peeked(frame, len, &pk, h);
}

/*
 * Encode
 */

static inline unsigned encode_pad(const RnicRoceOpInfo *info, uint32_t plen)
{
    return (info->flags & RNIC_ROCE_OPF_PAYLOAD) ? (-plen & 3) : 0;
}

/* Checks h and returns the opcode's info, or NULL with *err set. */
static const RnicRoceOpInfo *encode_check(const RnicRoceHdr *h,
                                          RnicRoceError *err)
{
    const RnicRoceOpInfo *info = rnic_roce_op_info(h->opcode);

    if (!info) {
        *err = RNIC_ROCE_ERR_OPCODE;
        return NULL;
    }
    *err = RNIC_ROCE_ERR_INVALID;
    if (h->vlan_id > 0xfff || h->vlan_pcp > 7 || h->flow_label > 0xfffff ||
        h->tver > 0xf || h->dest_qp > RNIC_ROCE_QPN_MASK ||
        h->psn > RNIC_ROCE_PSN_MASK) {
        return NULL;
    }
    if (((info->ext & RNIC_ROCE_EXT_AETH) &&
         h->aeth.msn > RNIC_ROCE_MSN_MASK) ||
        ((info->ext & RNIC_ROCE_EXT_DETH) &&
         h->deth.src_qp > RNIC_ROCE_QPN_MASK) ||
        ((info->ext & RNIC_ROCE_EXT_FETH) &&
         (h->feth.sel > 3 || h->feth.plt > 0xf))) {
        return NULL;
    }
    if (!(info->flags & RNIC_ROCE_OPF_PAYLOAD) && h->payload_len) {
        return NULL;
    }
    if (!h->ipv6 &&
        (!rnic_roce_gid_is_ipv4(h->sgid) || !rnic_roce_gid_is_ipv4(h->dgid))) {
        return NULL;
    }
    /* The UDP length (and the IPv4 total length) must fit 16 bits. */
    if ((uint64_t)h->payload_len + encode_pad(info, h->payload_len) +
        info->hdr_len + RNIC_ROCE_ICRC_LEN +
        RNIC_ROCE_UDP_HLEN + (h->ipv6 ? 0 : RNIC_ROCE_IPV4_HLEN) > 0xffff) {
        *err = RNIC_ROCE_ERR_TOO_LONG;
        return NULL;
    }
    *err = RNIC_ROCE_OK;
    return info;
}

/*
 * Write the headers into tx->hdr; returns the ICRC over them so far (the
 * caller continues over the payload and pad).
 */
static uint32_t encode_headers(const RnicRoceHdr *h,
                               const RnicRoceOpInfo *info, RnicRoceTx *tx)
{
    unsigned pad = encode_pad(info, h->payload_len);
    uint16_t udp_len = RNIC_ROCE_UDP_HLEN + info->hdr_len + h->payload_len +
                       pad + RNIC_ROCE_ICRC_LEN;
    uint8_t *p = tx->hdr;
    uint8_t *ip, *bth, *end;

    memcpy(p, h->dmac, 6);
    memcpy(p + 6, h->smac, 6);
    p += 12;
    if (h->vlan_present) {
        st_be16(p, RNIC_ROCE_ETHERTYPE_VLAN);
        st_be16(p + 2, (uint16_t)(h->vlan_pcp << 13 | h->vlan_dei << 12 |
                                  h->vlan_id));
        p += RNIC_ROCE_VLAN_HLEN;
    }
    st_be16(p, h->ipv6 ? RNIC_ROCE_ETHERTYPE_IPV6 : RNIC_ROCE_ETHERTYPE_IPV4);
    p += 2;

    ip = p;
    if (h->ipv6) {
        st_be32(p, 6u << 28 | (uint32_t)h->traffic_class << 20 |
                   h->flow_label);
        st_be16(p + 4, udp_len);
        p[6] = 17;
        p[7] = h->hop_limit;
        memcpy(p + 8, h->sgid, 16);
        memcpy(p + 24, h->dgid, 16);
        p += RNIC_ROCE_IPV6_HLEN;
    } else {
        p[0] = 0x45;
        p[1] = h->traffic_class;
        st_be16(p + 2, RNIC_ROCE_IPV4_HLEN + udp_len);
        st_be16(p + 4, h->ip_id);
        st_be16(p + 6, 0x4000);     /* DF, as rxe */
        p[8] = h->hop_limit;
        p[9] = 17;
        st_be16(p + 10, 0);
        memcpy(p + 12, h->sgid + 12, 4);
        memcpy(p + 16, h->dgid + 12, 4);
        st_be16(p + 10, csum_fold(csum_add(0, p, RNIC_ROCE_IPV4_HLEN)));
        p += RNIC_ROCE_IPV4_HLEN;
    }

    st_be16(p, h->udp_sport);
    st_be16(p + 2, RNIC_ROCE_UDP_DPORT);
    st_be16(p + 4, udp_len);
    st_be16(p + 6, 0);
    p += RNIC_ROCE_UDP_HLEN;

    bth = p;
    bth[0] = h->opcode;
    bth[1] = (h->se ? 0x80 : 0) | (h->migreq ? 0x40 : 0) | pad << 4 |
             (h->tver & 0xf);
    st_be16(bth + 2, h->pkey);
    st_be32(bth + 4, (h->fecn ? 0x80000000u : 0) |
                     (h->becn ? 0x40000000u : 0) | h->dest_qp);
    st_be32(bth + 8, (h->ack_req ? 0x80000000u : 0) | h->psn);
    end = write_ext(bth + RNIC_ROCE_BTH_LEN, info->ext, h);
    tx->hdr_len = end - tx->hdr;

    return rnic_roce_icrc_hdr(ip, h->ipv6, end - ip);
}

/* Pad, ICRC, Ethernet padding up to the minimum frame size. */
static void encode_trailer(const RnicRoceHdr *h, const RnicRoceOpInfo *info,
                           uint32_t crc, RnicRoceTx *tx)
{
    static const uint8_t zeros[3];
    unsigned pad = encode_pad(info, h->payload_len);
    uint8_t *t = tx->trailer;
    size_t len;

    memset(t, 0, pad);
    crc = rnic_crc32(crc, zeros, pad);
    st_le32(t + pad, crc);
    len = pad + RNIC_ROCE_ICRC_LEN;
    if (tx->hdr_len + h->payload_len + len < RNIC_ROCE_ETH_ZLEN) {
        size_t eth_pad = RNIC_ROCE_ETH_ZLEN - tx->hdr_len - h->payload_len -
                         len;

        memset(t + len, 0, eth_pad);
        len += eth_pad;
    }
    tx->trailer_len = len;
    tx->frame_len = tx->hdr_len + h->payload_len + len;
}

RnicRoceError rnic_roce_encode_sg(const RnicRoceHdr *h,
                                  const struct iovec *payload,
                                  unsigned int payload_cnt, RnicRoceTx *tx)
{
    const RnicRoceOpInfo *info;
    RnicRoceError err;
    uint64_t total = 0;
    uint32_t crc;

    info = encode_check(h, &err);
    if (!info) {
        return err;
    }
    for (unsigned i = 0; i < payload_cnt; i++) {
        total += payload[i].iov_len;
    }
    if (total != h->payload_len) {
        return RNIC_ROCE_ERR_INVALID;
    }
    crc = encode_headers(h, info, tx);
    for (unsigned i = 0; i < payload_cnt; i++) {
        crc = rnic_crc32(crc, payload[i].iov_base, payload[i].iov_len);
    }
    encode_trailer(h, info, crc, tx);
    return RNIC_ROCE_OK;
}

RnicRoceError rnic_roce_encode(const RnicRoceHdr *h, RnicRoceTx *tx,
                               struct iovec iov[RNIC_ROCE_ENCODE_IOV])
{
    struct iovec pl = {
        .iov_base = (void *)h->payload,
        .iov_len = h->payload_len,
    };
    RnicRoceError err;

    if (h->payload_len && !h->payload) {
        return RNIC_ROCE_ERR_INVALID;
    }
    err = rnic_roce_encode_sg(h, &pl, 1, tx);
    if (err != RNIC_ROCE_OK) {
        return err;
    }
    iov[0].iov_base = tx->hdr;
    iov[0].iov_len = tx->hdr_len;
    iov[1] = pl;
    iov[2].iov_base = tx->trailer;
    iov[2].iov_len = tx->trailer_len;
    return RNIC_ROCE_OK;
}

RnicRoceError rnic_roce_encode_linear(const RnicRoceHdr *h, void *out,
                                      size_t out_size, size_t *frame_len)
{
    struct iovec iov[RNIC_ROCE_ENCODE_IOV];
    RnicRoceTx tx;
    RnicRoceError err;
    uint8_t *p = out;

    err = rnic_roce_encode(h, &tx, iov);
    if (err != RNIC_ROCE_OK) {
        return err;
    }
    if (tx.frame_len > out_size) {
        return RNIC_ROCE_ERR_NOSPACE;
    }
    for (unsigned i = 0; i < RNIC_ROCE_ENCODE_IOV; i++) {
        if (iov[i].iov_len) {
            memcpy(p, iov[i].iov_base, iov[i].iov_len);
            p += iov[i].iov_len;
        }
    }
    *frame_len = tx.frame_len;
    return RNIC_ROCE_OK;
}

size_t rnic_roce_frame_len(const RnicRoceHdr *h)
{
    const RnicRoceOpInfo *info;
    RnicRoceError err;
    size_t len;

    info = encode_check(h, &err);
    if (!info) {
        return 0;
    }
    len = RNIC_ROCE_ETH_HLEN + (h->vlan_present ? RNIC_ROCE_VLAN_HLEN : 0) +
          (h->ipv6 ? RNIC_ROCE_IPV6_HLEN : RNIC_ROCE_IPV4_HLEN) +
          RNIC_ROCE_UDP_HLEN + info->hdr_len + h->payload_len +
          encode_pad(info, h->payload_len) + RNIC_ROCE_ICRC_LEN;
    return len < RNIC_ROCE_ETH_ZLEN ? RNIC_ROCE_ETH_ZLEN : len;
}

/*
 * UD receive "GRH"
 */

void rnic_roce_build_grh(const RnicRoceHdr *h, uint8_t grh[RNIC_ROCE_GRH_LEN])
{
    const RnicRoceOpInfo *info = rnic_roce_op_info(h->opcode);
    uint32_t udp_len = RNIC_ROCE_UDP_HLEN +
                       (info ? info->hdr_len : RNIC_ROCE_BTH_LEN) +
                       h->payload_len + h->pad + RNIC_ROCE_ICRC_LEN;

    if (h->ipv6) {
        st_be32(grh, 6u << 28 | (uint32_t)h->traffic_class << 20 |
                     (h->flow_label & 0xfffff));
        st_be16(grh + 4, udp_len);
        grh[6] = 17;
        grh[7] = h->hop_limit;
        memcpy(grh + 8, h->sgid, 16);
        memcpy(grh + 24, h->dgid, 16);
    } else {
        uint8_t *ip = grh + 20;

        memset(grh, 0, 20);
        ip[0] = 0x45;
        ip[1] = h->traffic_class;
        st_be16(ip + 2, RNIC_ROCE_IPV4_HLEN + udp_len);
        st_be16(ip + 4, h->ip_id);
        st_be16(ip + 6, h->ip_df ? 0x4000 : 0);
        ip[8] = h->hop_limit;
        ip[9] = 17;
        st_be16(ip + 10, 0);
        memcpy(ip + 12, h->sgid + 12, 4);
        memcpy(ip + 16, h->dgid + 12, 4);
        st_be16(ip + 10, csum_fold(csum_add(0, ip, RNIC_ROCE_IPV4_HLEN)));
    }
}
