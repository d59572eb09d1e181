/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * RoCEv2 wire codec tests: CRC-32 and ICRC known answers, round trips of
 * every opcode (IPv4/IPv6, with/without VLAN), every decode error class,
 * truncation at every byte, ICRC field invariance, the UD GRH.
 *
 * Extra modes (not tests):
 *   test-roce --write-pcap FILE   write sample frames for tshark-check.sh
 *   test-roce -m perf             also run the timing test
 */
#include <stdio.h>
#include <string.h>
#include <glib.h>

#include "rnic-roce.h"

#define FRAME_MAX   (RNIC_ROCE_HDR_MAX + 8192 + RNIC_ROCE_TRAILER_MAX)

/* Known answers */

/*
 * A RoCEv2 CNP captured on a Mellanox ConnectX-4 Lx, from scapy's test
 * suite (test/contrib/roce.uts, "RoCE CNP captured on ConnectX-4 Lx"):
 * real hardware, independent of rxe and of this code. ICRC on the wire:
 * 82 fd 00 2a.
 */
static const uint8_t cx4_cnp[] = {
    0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32,
    0x08, 0x00, 0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11,
    0x91, 0x61, 0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00, 0x12, 0x01, 0x00, 0x00,
    0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xff, 0xff, 0x40, 0x00,
    0x01, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0xfd,
    0x00, 0x2a,
};

/*
 * scapy's UC SEND Only example (test/contrib/roce.uts, "RoCE layer";
 * scapy's own ICRC implementation gives 0x78f353f3 read big-endian, i.e.
 * wire bytes 78 f3 53 f3). Rebuilt byte for byte with Python 3's
 * zlib.crc32 over 8 x 0xff + the masked IPv4/UDP/BTH + payload; the IPv4
 * checksum 0xb4d5 is scapy's. UDP checksum 0 (as we send it).
 */
static const uint8_t scapy_uc_send[] = {
    0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22, 0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22,
    0x08, 0x00, 0x45, 0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11,
    0xb4, 0xd5, 0xc0, 0xa8, 0x00, 0x07, 0xc0, 0xa8, 0x00, 0x07, 0xc0, 0x00,
    0x12, 0xb7, 0x00, 0x2c, 0x00, 0x00, 0x24, 0x60, 0xff, 0xff, 0x00, 0x00,
    0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10, 0x46, 0x30, 0x81, 0x8b, 0xe2, 0x89,
    0x35, 0xd9, 0x0e, 0x9a, 0x95, 0x50, 0x54, 0x01, 0xbe, 0x88, 0x5e, 0x50,
    0x00, 0x00, 0x78, 0xf3, 0x53, 0xf3,
};
/* Its correct UDP checksum (scapy asserts the same value). */
#define SCAPY_UC_UDP_CSUM   0xaca2

static void test_crc32_known(void)
{
    uint8_t buf[4096];

    g_assert_cmphex(rnic_crc32(0, NULL, 0), ==, 0);
    g_assert_cmphex(rnic_crc32(0, "123456789", 9), ==, 0xcbf43926);
    g_assert_cmphex(rnic_crc32_table(0, "123456789", 9), ==, 0xcbf43926);
    /* chaining */
    g_assert_cmphex(rnic_crc32(rnic_crc32(0, "1234", 4), "56789", 5), ==,
                    0xcbf43926);
    /* 8 bytes of 1s: rxe's seed 0xdebb20e3 is its raw register */
    memset(buf, 0xff, 8);
    g_assert_cmphex(~rnic_crc32(0, buf, 8), ==, 0xdebb20e3);
    /* Python 3: zlib.crc32(bytes(i & 0xff for i in range(4096))) */
    for (unsigned i = 0; i < sizeof(buf); i++) {
        buf[i] = i;
    }
    g_assert_cmphex(rnic_crc32(0, buf, sizeof(buf)), ==, 0xa2912082);
    g_assert_cmphex(rnic_crc32_table(0, buf, sizeof(buf)), ==, 0xa2912082);
}

/*
 * The fast path (PCLMUL on x86-64) against the table at every length and
 * alignment that matters, split at random points.
 */
static void test_crc32_fast_vs_table(void)
{
    g_autofree uint8_t *buf = g_malloc(9000);
    GRand *r = g_rand_new_with_seed(1);

    for (unsigned i = 0; i < 9000; i++) {
        buf[i] = g_rand_int(r);
    }
    for (size_t len = 0; len < 600; len++) {
        for (size_t off = 0; off < 17; off++) {
            g_assert_cmphex(rnic_crc32(0x12345678, buf + off, len), ==,
                            rnic_crc32_table(0x12345678, buf + off, len));
        }
    }
    for (unsigned n = 0; n < 2000; n++) {
        size_t off = g_rand_int_range(r, 0, 64);
        size_t len = g_rand_int_range(r, 0, 8900);
        size_t cut = g_rand_int_range(r, 0, len + 1);
        uint32_t whole = rnic_crc32_table(0, buf + off, len);
        uint32_t split = rnic_crc32(rnic_crc32(0, buf + off, cut),
                                    buf + off + cut, len - cut);

        g_assert_cmphex(rnic_crc32(0, buf + off, len), ==, whole);
        g_assert_cmphex(split, ==, whole);
    }
    g_rand_free(r);
}

static void test_icrc_cx4_cnp(void)
{
    RnicRoceHdr h;
    const RnicRoceOpInfo *info;

    g_assert_cmpint(rnic_roce_decode(cx4_cnp, sizeof(cx4_cnp), &h), ==,
                    RNIC_ROCE_OK);
    g_assert_cmphex(h.icrc, ==, 0x2a00fd82);
    g_assert_cmphex(rnic_roce_icrc(cx4_cnp + 14, false, 60 - 4), ==,
                    0x2a00fd82);
    g_assert_cmpuint(h.opcode, ==, RNIC_ROCE_OPCODE_CNP);
    info = rnic_roce_op_info(h.opcode);
    g_assert_nonnull(info);
    g_assert_cmpstr(info->name, ==, "CNP");
    g_assert_true(h.becn);
    g_assert_false(h.fecn);
    g_assert_cmphex(h.dest_qp, ==, 0x118);
    g_assert_cmphex(h.pkey, ==, 0xffff);
    g_assert_cmpuint(h.psn, ==, 0);
    g_assert_cmpuint(h.traffic_class, ==, 0xc2);
    g_assert_cmpuint(h.hop_limit, ==, 0x40);
    g_assert_true(h.ip_df);
    g_assert_cmpuint(h.udp_sport, ==, 0);
    g_assert_true(rnic_roce_gid_is_ipv4(h.sgid));
    g_assert_cmpmem(h.sgid + 12, 4, ((uint8_t[]){ 10, 0, 17, 1 }), 4);
    g_assert_cmpmem(h.dgid + 12, 4, ((uint8_t[]){ 10, 0, 18, 1 }), 4);
    g_assert_cmpuint(h.payload_len, ==, 0);
    g_assert_cmpuint(h.frame_len, ==, sizeof(cx4_cnp));
}

static void scapy_hdr(RnicRoceHdr *h)
{
    static const uint8_t mac[6] = { 0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22 };
    static const uint8_t addr[4] = { 192, 168, 0, 7 };

    memset(h, 0, sizeof(*h));
    memcpy(h->dmac, mac, 6);
    memcpy(h->smac, mac, 6);
    rnic_roce_gid_from_ipv4(h->sgid, addr);
    rnic_roce_gid_from_ipv4(h->dgid, addr);
    h->traffic_class = 1;
    h->ip_id = 1144;
    h->hop_limit = 64;
    h->udp_sport = 49152;
    h->opcode = RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_UC,
                                 RNIC_ROCE_OP_SEND_ONLY);
    h->migreq = true;
    h->pkey = 0xffff;
    h->dest_qp = 211;
    h->psn = 13571856;
    h->payload = scapy_uc_send + 54;
    h->payload_len = 18;
}

static void test_icrc_scapy_uc(void)
{
    uint8_t out[FRAME_MAX], copy[sizeof(scapy_uc_send)];
    RnicRoceHdr h, d;
    size_t len;

    scapy_hdr(&h);
    g_assert_cmpint(rnic_roce_encode_linear(&h, out, sizeof(out), &len), ==,
                    RNIC_ROCE_OK);
    g_assert_cmpmem(out, len, scapy_uc_send, sizeof(scapy_uc_send));

    g_assert_cmpint(rnic_roce_decode(scapy_uc_send, sizeof(scapy_uc_send),
                                     &d), ==, RNIC_ROCE_OK);
    g_assert_cmphex(d.icrc, ==, 0xf353f378);
    g_assert_cmpuint(d.pad, ==, 2);
    g_assert_cmpuint(d.payload_len, ==, 18);
    g_assert_true(d.migreq);

    /* the same with a correct non-zero UDP checksum, then a wrong one */
    memcpy(copy, scapy_uc_send, sizeof(copy));
    copy[40] = SCAPY_UC_UDP_CSUM >> 8;
    copy[41] = SCAPY_UC_UDP_CSUM & 0xff;
    g_assert_cmpint(rnic_roce_decode(copy, sizeof(copy), &d), ==,
                    RNIC_ROCE_OK);
    copy[41] ^= 1;
    g_assert_cmpint(rnic_roce_decode(copy, sizeof(copy), &d), ==,
                    RNIC_ROCE_ERR_UDP_CSUM);
}

/* Opcode table */

static void test_op_table(void)
{
    static const struct {
        uint8_t opcode;
        const char *name;
        uint8_t hdr_len;
    } expect[] = {
        { 0x00, "RC_SEND_FIRST", 12 },
        { 0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", 16 },
        { 0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 32 },
        { 0x0c, "RC_RDMA_READ_REQUEST", 28 },
        { 0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", 12 },
        { 0x10, "RC_RDMA_READ_RESPONSE_ONLY", 16 },
        { 0x11, "RC_ACKNOWLEDGE", 16 },
        { 0x12, "RC_ATOMIC_ACKNOWLEDGE", 24 },
        { 0x13, "RC_COMPARE_SWAP", 40 },
        { 0x14, "RC_FETCH_ADD", 40 },
        { 0x17, "RC_SEND_ONLY_WITH_INVALIDATE", 16 },
        { 0x1c, "RC_FLUSH", 32 },
        { 0x1d, "RC_ATOMIC_WRITE", 28 },
        { 0x20, "UC_SEND_FIRST", 12 },
        { 0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 32 },
        { 0x64, "UD_SEND_ONLY", 20 },
        { 0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", 24 },
        { 0x81, "CNP", 28 },
    };
    unsigned n = 0;

    for (unsigned i = 0; i < G_N_ELEMENTS(expect); i++) {
        const RnicRoceOpInfo *info = rnic_roce_op_info(expect[i].opcode);

        g_assert_nonnull(info);
        g_assert_cmpstr(info->name, ==, expect[i].name);
        g_assert_cmpuint(info->hdr_len, ==, expect[i].hdr_len);
    }
    for (unsigned op = 0; op < 256; op++) {
        const RnicRoceOpInfo *info = rnic_roce_op_info(op);
        unsigned f;

        if (!info) {
            continue;
        }
        n++;
        f = info->flags;
        /* exactly one of first/middle/last/only, except the CNP */
        if (!(f & RNIC_ROCE_OPF_CNP)) {
            g_assert_true((f & (RNIC_ROCE_OPF_REQUEST |
                                RNIC_ROCE_OPF_RESPONSE)) != 0);
            g_assert_true(f & (RNIC_ROCE_OPF_FIRST | RNIC_ROCE_OPF_MIDDLE |
                               RNIC_ROCE_OPF_LAST));
            g_assert_false((f & RNIC_ROCE_OPF_MIDDLE) &&
                           (f & RNIC_ROCE_OPF_ONLY));
        }
        g_assert_cmpuint(info->hdr_len % 4, ==, 0);
        g_assert_cmpuint(info->hdr_len, <=, RNIC_ROCE_TRANSPORT_HDR_MAX);
        if ((op & RNIC_ROCE_TRANSPORT_MASK) == RNIC_ROCE_TRANSPORT_UD) {
            g_assert_true(info->ext & RNIC_ROCE_EXT_DETH);
        }
    }
    /* RC 25, UC 12, UD 2, CNP 1 */
    g_assert_cmpuint(n, ==, 40);
    g_assert_null(rnic_roce_op_info(0x15));
    g_assert_null(rnic_roce_op_info(0x40));   /* RD */
    g_assert_null(rnic_roce_op_info(0xa0));   /* XRC */
    g_assert_null(rnic_roce_op_info(0x36));   /* UC has no SEND_ONLY_INV */
}

/* Round trips */

static void fill_random_hdr(GRand *r, RnicRoceHdr *h, uint8_t opcode,
                            bool ipv6, bool vlan)
{
    memset(h, 0, sizeof(*h));
    for (int i = 0; i < 6; i++) {
        h->dmac[i] = g_rand_int(r);
        h->smac[i] = g_rand_int(r);
    }
    h->vlan_present = vlan;
    if (vlan) {
        h->vlan_id = g_rand_int_range(r, 0, 4096);
        h->vlan_pcp = g_rand_int_range(r, 0, 8);
        h->vlan_dei = g_rand_boolean(r);
    }
    h->ipv6 = ipv6;
    for (int i = 0; i < 16; i++) {
        h->sgid[i] = g_rand_int(r);
        h->dgid[i] = g_rand_int(r);
    }
    if (!ipv6) {
        uint8_t a[4];

        memcpy(a, h->sgid + 12, 4);
        rnic_roce_gid_from_ipv4(h->sgid, a);
        memcpy(a, h->dgid + 12, 4);
        rnic_roce_gid_from_ipv4(h->dgid, a);
    } else {
        h->flow_label = g_rand_int_range(r, 0, 1 << 20);
    }
    h->traffic_class = g_rand_int(r);
    h->hop_limit = g_rand_int(r);
    h->ip_id = g_rand_int(r);
    h->udp_sport = g_rand_int_range(r, 0xc000, 0x10000);
    h->opcode = opcode;
    h->se = g_rand_boolean(r);
    h->migreq = g_rand_boolean(r);
    h->pkey = g_rand_int(r);
    h->fecn = g_rand_boolean(r);
    h->becn = g_rand_boolean(r);
    h->dest_qp = g_rand_int(r) & RNIC_ROCE_QPN_MASK;
    h->ack_req = g_rand_boolean(r);
    h->psn = g_rand_int(r) & RNIC_ROCE_PSN_MASK;
    h->reth.va = (uint64_t)g_rand_int(r) << 32 | g_rand_int(r);
    h->reth.rkey = g_rand_int(r);
    h->reth.dma_len = g_rand_int(r);
    h->aeth.syndrome = g_rand_int(r);
    h->aeth.msn = g_rand_int(r) & RNIC_ROCE_MSN_MASK;
    h->atomic_eth.va = (uint64_t)g_rand_int(r) << 32 | g_rand_int(r);
    h->atomic_eth.rkey = g_rand_int(r);
    h->atomic_eth.swap_add = (uint64_t)g_rand_int(r) << 32 | g_rand_int(r);
    h->atomic_eth.compare = (uint64_t)g_rand_int(r) << 32 | g_rand_int(r);
    h->atomic_ack_eth.orig = (uint64_t)g_rand_int(r) << 32 | g_rand_int(r);
    h->immdt = g_rand_int(r);
    h->ieth.rkey = g_rand_int(r);
    h->deth.qkey = g_rand_int(r);
    h->deth.src_qp = g_rand_int(r) & RNIC_ROCE_QPN_MASK;
    h->feth.sel = g_rand_int_range(r, 0, 4);
    h->feth.plt = g_rand_int_range(r, 0, 16);
}

/*
 * Compare what the receiver must see; extension headers the opcode does
 * not carry are not compared (decode leaves them zero).
 */
static void assert_hdr_equal(const RnicRoceHdr *a, const RnicRoceHdr *d)
{
    const RnicRoceOpInfo *info = rnic_roce_op_info(a->opcode);
    uint32_t e = info->ext;

    g_assert_cmpmem(a->dmac, 6, d->dmac, 6);
    g_assert_cmpmem(a->smac, 6, d->smac, 6);
    g_assert_cmpint(a->vlan_present, ==, d->vlan_present);
    if (a->vlan_present) {
        g_assert_cmpuint(a->vlan_id, ==, d->vlan_id);
        g_assert_cmpuint(a->vlan_pcp, ==, d->vlan_pcp);
        g_assert_cmpint(a->vlan_dei, ==, d->vlan_dei);
    }
    g_assert_cmpint(a->ipv6, ==, d->ipv6);
    g_assert_cmpmem(a->sgid, 16, d->sgid, 16);
    g_assert_cmpmem(a->dgid, 16, d->dgid, 16);
    g_assert_cmpuint(a->traffic_class, ==, d->traffic_class);
    g_assert_cmpuint(a->hop_limit, ==, d->hop_limit);
    if (a->ipv6) {
        g_assert_cmpuint(a->flow_label, ==, d->flow_label);
    } else {
        g_assert_cmpuint(a->ip_id, ==, d->ip_id);
        g_assert_true(d->ip_df);
    }
    g_assert_cmpuint(a->udp_sport, ==, d->udp_sport);
    g_assert_cmpuint(d->udp_dport, ==, RNIC_ROCE_UDP_DPORT);
    g_assert_cmphex(a->opcode, ==, d->opcode);
    g_assert_cmpint(a->se, ==, d->se);
    g_assert_cmpint(a->migreq, ==, d->migreq);
    g_assert_cmpuint(d->tver, ==, 0);
    g_assert_cmphex(a->pkey, ==, d->pkey);
    g_assert_cmpint(a->fecn, ==, d->fecn);
    g_assert_cmpint(a->becn, ==, d->becn);
    g_assert_cmphex(a->dest_qp, ==, d->dest_qp);
    g_assert_cmpint(a->ack_req, ==, d->ack_req);
    g_assert_cmphex(a->psn, ==, d->psn);
    g_assert_cmphex(d->ext, ==, e);
    if (e & RNIC_ROCE_EXT_RETH) {
        g_assert_cmphex(a->reth.va, ==, d->reth.va);
        g_assert_cmphex(a->reth.rkey, ==, d->reth.rkey);
        g_assert_cmphex(a->reth.dma_len, ==, d->reth.dma_len);
    }
    if (e & RNIC_ROCE_EXT_AETH) {
        g_assert_cmphex(a->aeth.syndrome, ==, d->aeth.syndrome);
        g_assert_cmphex(a->aeth.msn, ==, d->aeth.msn);
    }
    if (e & RNIC_ROCE_EXT_ATOMIC_ETH) {
        g_assert_cmphex(a->atomic_eth.va, ==, d->atomic_eth.va);
        g_assert_cmphex(a->atomic_eth.rkey, ==, d->atomic_eth.rkey);
        g_assert_cmphex(a->atomic_eth.swap_add, ==, d->atomic_eth.swap_add);
        g_assert_cmphex(a->atomic_eth.compare, ==, d->atomic_eth.compare);
    }
    if (e & RNIC_ROCE_EXT_ATOMIC_ACK_ETH) {
        g_assert_cmphex(a->atomic_ack_eth.orig, ==, d->atomic_ack_eth.orig);
    }
    if (e & RNIC_ROCE_EXT_IMMDT) {
        g_assert_cmphex(a->immdt, ==, d->immdt);
    }
    if (e & RNIC_ROCE_EXT_IETH) {
        g_assert_cmphex(a->ieth.rkey, ==, d->ieth.rkey);
    }
    if (e & RNIC_ROCE_EXT_DETH) {
        g_assert_cmphex(a->deth.qkey, ==, d->deth.qkey);
        g_assert_cmphex(a->deth.src_qp, ==, d->deth.src_qp);
    }
    if (e & RNIC_ROCE_EXT_FETH) {
        g_assert_cmpuint(a->feth.sel, ==, d->feth.sel);
        g_assert_cmpuint(a->feth.plt, ==, d->feth.plt);
    }
    g_assert_cmpuint(a->payload_len, ==, d->payload_len);
    g_assert_cmpmem(a->payload, a->payload_len, d->payload, d->payload_len);
}

/*
 * Flatten an iovec frame into an exactly-sized heap copy (so ASan sees
 * any read past its end).
 */
static uint8_t *flatten(const struct iovec *iov, unsigned cnt, size_t *len)
{
    size_t total = 0, off = 0;
    uint8_t *f;

    for (unsigned i = 0; i < cnt; i++) {
        total += iov[i].iov_len;
    }
    f = g_malloc(total ? total : 1);
    for (unsigned i = 0; i < cnt; i++) {
        if (iov[i].iov_len) {
            memcpy(f + off, iov[i].iov_base, iov[i].iov_len);
            off += iov[i].iov_len;
        }
    }
    *len = total;
    return f;
}

static unsigned roundtrips;

static void roundtrip_one(GRand *r, const RnicRoceHdr *h)
{
    const RnicRoceOpInfo *info = rnic_roce_op_info(h->opcode);
    struct iovec iov[RNIC_ROCE_ENCODE_IOV], sg[4], sgframe[6];
    RnicRoceTx tx, tx2;
    RnicRoceHdr d;
    uint8_t grh[RNIC_ROCE_GRH_LEN];
    g_autofree uint8_t *f = NULL;
    g_autofree uint8_t *f2 = NULL;
    size_t len, len2, ip_hlen = h->ipv6 ? 40 : 20;
    size_t cut1, cut2;

    g_assert_cmpint(rnic_roce_encode(h, &tx, iov), ==, RNIC_ROCE_OK);
    f = flatten(iov, RNIC_ROCE_ENCODE_IOV, &len);
    g_assert_cmpuint(len, ==, tx.frame_len);
    g_assert_cmpuint(len, ==, rnic_roce_frame_len(h));
    g_assert_cmpuint(len, >=, RNIC_ROCE_ETH_ZLEN);
    g_assert_true(iov[1].iov_base == h->payload);   /* zero copy */

    g_assert_cmpint(rnic_roce_decode(f, len, &d), ==, RNIC_ROCE_OK);
    assert_hdr_equal(h, &d);
    g_assert_true(d.payload >= f && d.payload + d.payload_len <= f + len);
    g_assert_cmpuint(d.pad, ==, (info->flags & RNIC_ROCE_OPF_PAYLOAD) ?
                     (-h->payload_len & 3) : 0);
    g_assert_cmpuint(d.l3_offset, ==, h->vlan_present ? 18 : 14);
    g_assert_cmpuint(d.bth_offset, ==, d.l3_offset + ip_hlen + 8);
    g_assert_cmpuint(d.frame_len, <=, len);
    g_assert_cmphex(d.icrc, ==,
                    rnic_roce_icrc(f + d.l3_offset, h->ipv6,
                                   d.frame_len - d.l3_offset - 4));

    /* The GRH a UD receive gets is the IP header as received. */
    rnic_roce_build_grh(&d, grh);
    if (h->ipv6) {
        g_assert_cmpmem(grh, 40, f + d.l3_offset, 40);
    } else {
        static const uint8_t zero[20];

        g_assert_cmpmem(grh, 20, zero, 20);
        g_assert_cmpmem(grh + 20, 20, f + d.l3_offset, 20);
    }

    /* Scattered payload gives the same bytes. */
    cut1 = g_rand_int_range(r, 0, h->payload_len + 1);
    cut2 = g_rand_int_range(r, cut1, h->payload_len + 1);
    sg[0] = (struct iovec){ (void *)h->payload, cut1 };
    sg[1] = (struct iovec){ (void *)(h->payload + cut1), 0 };
    sg[2] = (struct iovec){ (void *)(h->payload + cut1), cut2 - cut1 };
    sg[3] = (struct iovec){ (void *)(h->payload + cut2),
                            h->payload_len - cut2 };
    g_assert_cmpint(rnic_roce_encode_sg(h, sg, 4, &tx2), ==, RNIC_ROCE_OK);
    sgframe[0] = (struct iovec){ tx2.hdr, tx2.hdr_len };
    memcpy(&sgframe[1], sg, sizeof(sg));
    sgframe[5] = (struct iovec){ tx2.trailer, tx2.trailer_len };
    f2 = flatten(sgframe, 6, &len2);
    g_assert_cmpmem(f, len, f2, len2);
    roundtrips++;
}

static void test_roundtrip_all(void)
{
    static const uint32_t plens[] = {
        0, 1, 2, 3, 4, 5, 7, 8, 63, 64, 65, 255, 256, 1024, 1500, 4093, 4096,
    };
    GRand *r = g_rand_new_with_seed(42);
    g_autofree uint8_t *payload = g_malloc(8192);
    unsigned ops = 0;

    for (unsigned i = 0; i < 8192; i++) {
        payload[i] = g_rand_int(r);
    }
    roundtrips = 0;
    for (unsigned op = 0; op < 256; op++) {
        const RnicRoceOpInfo *info = rnic_roce_op_info(op);

        if (!info) {
            continue;
        }
        ops++;
        for (int v6 = 0; v6 < 2; v6++) {
            for (int vlan = 0; vlan < 2; vlan++) {
                for (unsigned i = 0; i < G_N_ELEMENTS(plens); i++) {
                    RnicRoceHdr h;

                    if (!(info->flags & RNIC_ROCE_OPF_PAYLOAD) && plens[i]) {
                        break;
                    }
                    fill_random_hdr(r, &h, op, v6, vlan);
                    h.payload = payload + g_rand_int_range(r, 0, 64);
                    h.payload_len = plens[i];
                    roundtrip_one(r, &h);
                }
            }
        }
    }
    g_assert_cmpuint(ops, ==, 40);
    g_test_message("%u round trips over %u opcodes", roundtrips, ops);
    g_rand_free(r);
}

/* A frame whose payload pointer is NULL with length 0 (ACKs). */
static void test_encode_null_payload(void)
{
    GRand *r = g_rand_new_with_seed(7);
    struct iovec iov[RNIC_ROCE_ENCODE_IOV];
    RnicRoceTx tx;
    RnicRoceHdr h, d;
    g_autofree uint8_t *f = NULL;
    size_t len;

    fill_random_hdr(r, &h, RNIC_ROCE_OP_ACKNOWLEDGE, false, false);
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==, RNIC_ROCE_OK);
    g_assert_cmpuint(iov[1].iov_len, ==, 0);
    f = flatten(iov, 3, &len);
    /* 14 + 20 + 8 + 16 + 4 = 62: no Ethernet padding needed */
    g_assert_cmpuint(len, ==, 62);
    g_assert_cmpint(rnic_roce_decode(f, len, &d), ==, RNIC_ROCE_OK);
    g_rand_free(r);
}

/* Encode errors */

static void test_encode_errors(void)
{
    GRand *r = g_rand_new_with_seed(3);
    uint8_t buf[FRAME_MAX];
    g_autofree uint8_t *big = g_malloc0(70000);
    struct iovec iov[RNIC_ROCE_ENCODE_IOV], sg;
    RnicRoceTx tx;
    RnicRoceHdr h;
    size_t len;
    uint8_t send_only = RNIC_ROCE_OP_SEND_ONLY;

#define BASE(op, v6) fill_random_hdr(r, &h, (op), (v6), true)
    BASE(0x15, false);
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==, RNIC_ROCE_ERR_OPCODE);
    g_assert_cmpuint(rnic_roce_frame_len(&h), ==, 0);
    BASE(send_only, false);
    h.vlan_id = 4096;
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==, RNIC_ROCE_ERR_INVALID);
    BASE(send_only, false);
    h.vlan_pcp = 8;
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==, RNIC_ROCE_ERR_INVALID);
    BASE(send_only, true);
    h.flow_label = 1 << 20;
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==, RNIC_ROCE_ERR_INVALID);
    BASE(send_only, false);
    h.dest_qp = 1 << 24;
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==, RNIC_ROCE_ERR_INVALID);
    BASE(send_only, false);
    h.psn = 1 << 24;
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==, RNIC_ROCE_ERR_INVALID);
    BASE(RNIC_ROCE_OP_ACKNOWLEDGE, false);
    h.aeth.msn = 1 << 24;
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==, RNIC_ROCE_ERR_INVALID);
    BASE(RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_UD, RNIC_ROCE_OP_SEND_ONLY),
         false);
    h.deth.src_qp = 1 << 24;
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==, RNIC_ROCE_ERR_INVALID);
    BASE(RNIC_ROCE_OP_FLUSH, false);
    h.feth.plt = 16;
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==, RNIC_ROCE_ERR_INVALID);
    /* payload on an opcode without one */
    BASE(RNIC_ROCE_OP_ACKNOWLEDGE, false);
    h.payload = buf;
    h.payload_len = 4;
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==, RNIC_ROCE_ERR_INVALID);
    /* IPv4 needs IPv4-mapped GIDs */
    BASE(send_only, false);
    h.sgid[0] = 0xfe;
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==, RNIC_ROCE_ERR_INVALID);
    /* NULL payload with a length */
    BASE(send_only, false);
    h.payload = NULL;
    h.payload_len = 1;
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==, RNIC_ROCE_ERR_INVALID);
    /* too long for the 16-bit lengths */
    BASE(send_only, false);
    h.payload = big;
    h.payload_len = 65535 - 20 - 8 - 12 - 4;
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==,
                    RNIC_ROCE_ERR_TOO_LONG);
    h.payload_len -= 4;
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==, RNIC_ROCE_OK);
    BASE(send_only, true);
    h.payload = big;
    h.payload_len = 65535 - 8 - 12 - 4 + 1;
    g_assert_cmpint(rnic_roce_encode(&h, &tx, iov), ==,
                    RNIC_ROCE_ERR_TOO_LONG);
    /* scatter list that does not add up */
    BASE(send_only, false);
    h.payload_len = 10;
    sg = (struct iovec){ buf, 9 };
    g_assert_cmpint(rnic_roce_encode_sg(&h, &sg, 1, &tx), ==,
                    RNIC_ROCE_ERR_INVALID);
    /* linear buffer too small */
    h.payload = buf;
    memset(buf, 0, 10);
    g_assert_cmpint(rnic_roce_encode_linear(&h, buf + 64, 60, &len), ==,
                    RNIC_ROCE_ERR_NOSPACE);
#undef BASE
    g_rand_free(r);
}

/* Decode errors */

typedef struct Frame {
    uint8_t b[FRAME_MAX];
    size_t len;
    size_t l3;
    bool v6;
} Frame;

static void make_frame(Frame *fr, uint8_t opcode, bool v6, bool vlan,
                       uint32_t plen)
{
    static uint8_t payload[4096];
    GRand *r = g_rand_new_with_seed(opcode * 4 + v6 * 2 + vlan);
    RnicRoceHdr h;

    fill_random_hdr(r, &h, opcode, v6, vlan);
    memset(fr->b, 0, sizeof(fr->b));
    memset(payload, 0x5a, sizeof(payload));
    h.payload = payload;
    h.payload_len = plen;
    g_assert_cmpint(rnic_roce_encode_linear(&h, fr->b, sizeof(fr->b),
                                            &fr->len), ==, RNIC_ROCE_OK);
    fr->l3 = vlan ? 18 : 14;
    fr->v6 = v6;
    g_rand_free(r);
}

static size_t ip_hlen(const Frame *fr)
{
    return fr->v6 ? 40 : 20;
}

static uint8_t *bth_of(Frame *fr)
{
    return fr->b + fr->l3 + ip_hlen(fr) + 8;
}

static size_t ip_len(const Frame *fr)
{
    const uint8_t *ip = fr->b + fr->l3;

    return fr->v6 ? 40 + (ip[4] << 8 | ip[5]) : (ip[2] << 8 | ip[3]);
}

/* Recompute the IPv4 header checksum. */
static void fix_ip(Frame *fr)
{
    uint8_t *ip = fr->b + fr->l3;
    uint32_t sum = 0;

    if (fr->v6) {
        return;
    }
    ip[10] = ip[11] = 0;
    for (int i = 0; i < 20; i += 2) {
        sum += ip[i] << 8 | ip[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10] = ~sum >> 8;
    ip[11] = ~sum;
}

/* Recompute the ICRC at the end of the IP packet. */
static void fix_icrc(Frame *fr)
{
    uint8_t *ip = fr->b + fr->l3;
    size_t n = ip_len(fr) - 4;
    uint32_t crc = rnic_roce_icrc(ip, fr->v6, n);

    ip[n] = crc;
    ip[n + 1] = crc >> 8;
    ip[n + 2] = crc >> 16;
    ip[n + 3] = crc >> 24;
}

/* The ICRC rxe 6.12 sends on a FLUSH (rnic_roce_icrc_rxe_flush()). */
static void set_rxe_flush_icrc(Frame *fr)
{
    uint8_t *ip = fr->b + fr->l3;
    uint8_t *bth = bth_of(fr);
    size_t n = ip_len(fr) - 4;
    size_t tlen = ip + n + 4 - bth;
    uint32_t crc = rnic_roce_icrc_rxe_flush(rnic_roce_icrc(ip, fr->v6, n), bth, tlen);

    ip[n] = crc;
    ip[n + 1] = crc >> 8;
    ip[n + 2] = crc >> 16;
    ip[n + 3] = crc >> 24;
}

/*
 * Change IP and UDP lengths by 'delta' (bytes appended/removed at the
 * end of the transport), keeping checksums and ICRC right.
 */
static void resize(Frame *fr, int delta)
{
    uint8_t *ip = fr->b + fr->l3;
    uint8_t *udp = ip + ip_hlen(fr);
    size_t l = ip_len(fr);
    unsigned ulen = (udp[4] << 8 | udp[5]) + delta;

    if (delta > 0) {
        memset(ip + l, 0, delta);
    }
    if (fr->v6) {
        ip[4] = ulen >> 8;
        ip[5] = ulen;
    } else {
        ip[2] = (l + delta) >> 8;
        ip[3] = l + delta;
    }
    udp[4] = ulen >> 8;
    udp[5] = ulen;
    fr->len = fr->l3 + l + delta;
    fix_ip(fr);
    if (ulen >= 8 + RNIC_ROCE_BTH_LEN + RNIC_ROCE_ICRC_LEN) {
        fix_icrc(fr);
    }
}

static RnicRoceError decode_exact(const Frame *fr)
{
    g_autofree uint8_t *copy = g_memdup2(fr->b, fr->len);
    RnicRoceHdr h;

    return rnic_roce_decode(copy, fr->len, &h);
}

#define EXPECT(fr, e) g_assert_cmpstr(rnic_roce_strerror(decode_exact(fr)), \
                                      ==, rnic_roce_strerror(e))

static void test_decode_errors(void)
{
    const uint8_t send_only = RNIC_ROCE_OP_SEND_ONLY;
    Frame fr;
    uint8_t *ip, *bth;

    for (int v6 = 0; v6 < 2; v6++) {
        /* EtherType */
        make_frame(&fr, send_only, v6, false, 16);
        fr.b[12] = 0x08;
        fr.b[13] = 0x06;
        EXPECT(&fr, RNIC_ROCE_ERR_NOT_IP);
        make_frame(&fr, send_only, v6, true, 16);
        fr.b[12] = 0x88;    /* QinQ outer tag: unsupported */
        fr.b[13] = 0xa8;
        EXPECT(&fr, RNIC_ROCE_ERR_NOT_IP);

        /* IP version contradicts the EtherType */
        make_frame(&fr, send_only, v6, false, 16);
        ip = fr.b + fr.l3;
        ip[0] = (ip[0] & 0x0f) | (v6 ? 0x40 : 0x60);
        fix_ip(&fr);
        EXPECT(&fr, RNIC_ROCE_ERR_IP_VERSION);

        /* not UDP */
        make_frame(&fr, send_only, v6, true, 16);
        ip = fr.b + fr.l3;
        ip[v6 ? 6 : 9] = 6;
        fix_ip(&fr);
        EXPECT(&fr, RNIC_ROCE_ERR_NOT_UDP);

        /* IP length too small for IP + UDP */
        make_frame(&fr, send_only, v6, false, 16);
        ip = fr.b + fr.l3;
        if (v6) {
            ip[4] = 0;
            ip[5] = 7;
        } else {
            ip[2] = 0;
            ip[3] = 27;
        }
        fix_ip(&fr);
        EXPECT(&fr, RNIC_ROCE_ERR_IP_LEN);

        /* IP length beyond the frame */
        make_frame(&fr, send_only, v6, false, 16);
        ip = fr.b + fr.l3;
        ip[v6 ? 5 : 3] += 1;
        fix_ip(&fr);
        EXPECT(&fr, RNIC_ROCE_ERR_TRUNCATED);

        /* UDP */
        make_frame(&fr, send_only, v6, false, 16);
        bth = bth_of(&fr);
        bth[-6] = 0x12;     /* destination port 4790 */
        bth[-5] = 0xb6;
        EXPECT(&fr, RNIC_ROCE_ERR_NOT_ROCE);
        make_frame(&fr, send_only, v6, false, 16);
        bth = bth_of(&fr);
        bth[-3] -= 4;       /* UDP length */
        EXPECT(&fr, RNIC_ROCE_ERR_UDP_LEN);
        make_frame(&fr, send_only, v6, false, 16);
        bth = bth_of(&fr);
        bth[-1] = 1;        /* non-zero, wrong UDP checksum */
        EXPECT(&fr, RNIC_ROCE_ERR_UDP_CSUM);

        /* BTH */
        make_frame(&fr, send_only, v6, true, 16);
        bth = bth_of(&fr);
        bth[1] |= 1;        /* TVer 1 */
        fix_icrc(&fr);
        EXPECT(&fr, RNIC_ROCE_ERR_BTH_TVER);
        for (unsigned op = 0; op < 256; op++) {
            if (rnic_roce_op_info(op)) {
                continue;
            }
            make_frame(&fr, send_only, v6, false, 16);
            bth = bth_of(&fr);
            bth[0] = op;
            fix_icrc(&fr);
            EXPECT(&fr, RNIC_ROCE_ERR_OPCODE);
        }

        /* transport too short for BTH + ICRC, and for the opcode */
        make_frame(&fr, send_only, v6, false, 0);
        resize(&fr, -4);
        EXPECT(&fr, RNIC_ROCE_ERR_LEN);
        make_frame(&fr, RNIC_ROCE_OP_RDMA_READ_REQUEST, v6, false, 0);
        resize(&fr, -4);
        EXPECT(&fr, RNIC_ROCE_ERR_LEN);
        /* data after the headers of an opcode without payload */
        make_frame(&fr, RNIC_ROCE_OP_ACKNOWLEDGE, v6, false, 0);
        resize(&fr, 4);
        EXPECT(&fr, RNIC_ROCE_ERR_LEN);

        /* pad */
        make_frame(&fr, RNIC_ROCE_OP_ACKNOWLEDGE, v6, false, 0);
        bth = bth_of(&fr);
        bth[1] |= 0x20;
        fix_icrc(&fr);
        EXPECT(&fr, RNIC_ROCE_ERR_PAD);
        make_frame(&fr, send_only, v6, false, 0);
        bth = bth_of(&fr);
        bth[1] |= 0x10;     /* pad 1 but no payload */
        fix_icrc(&fr);
        EXPECT(&fr, RNIC_ROCE_ERR_PAD);
        make_frame(&fr, send_only, v6, false, 8);
        resize(&fr, -1);    /* payload + pad not 4-aligned */
        EXPECT(&fr, RNIC_ROCE_ERR_PAD);
        make_frame(&fr, send_only, v6, false, 5);
        bth = bth_of(&fr);
        bth[1] &= ~0x30;    /* pad 3 -> 1: consistent, payload 7 */
        bth[1] |= 0x10;
        fix_icrc(&fr);
        EXPECT(&fr, RNIC_ROCE_OK);

        /* ICRC */
        make_frame(&fr, send_only, v6, false, 64);
        fr.b[fr.l3 + ip_len(&fr) - 10] ^= 0x01;     /* payload bit */
        EXPECT(&fr, RNIC_ROCE_ERR_ICRC);
        make_frame(&fr, send_only, v6, false, 64);
        fr.b[fr.l3 + ip_len(&fr) - 1] ^= 0x80;      /* ICRC bit */
        EXPECT(&fr, RNIC_ROCE_ERR_ICRC);

        /* rxe's FLUSH ICRC: accepted on an RC FLUSH, on nothing else */
        for (int flush = 0; flush < 2; flush++) {
            uint8_t op = flush ? RNIC_ROCE_RC_FLUSH : RNIC_ROCE_OP_RDMA_READ_REQUEST;

            make_frame(&fr, op, v6, false, 0);
            set_rxe_flush_icrc(&fr);
            EXPECT(&fr, flush ? RNIC_ROCE_OK : RNIC_ROCE_ERR_ICRC);
            fr.b[fr.l3 + ip_len(&fr) - 20] ^= 0x04;  /* a RETH bit */
            EXPECT(&fr, RNIC_ROCE_ERR_ICRC);
        }
    }

    /* IPv4 only: options, fragments, header checksum */
    make_frame(&fr, send_only, false, false, 16);
    ip = fr.b + fr.l3;
    ip[0] = 0x46;
    fix_ip(&fr);
    EXPECT(&fr, RNIC_ROCE_ERR_IP_OPTIONS);
    make_frame(&fr, send_only, false, false, 16);
    ip = fr.b + fr.l3;
    ip[6] |= 0x20;          /* MF */
    fix_ip(&fr);
    EXPECT(&fr, RNIC_ROCE_ERR_IP_FRAGMENT);
    make_frame(&fr, send_only, false, false, 16);
    ip = fr.b + fr.l3;
    ip[7] = 1;              /* fragment offset */
    fix_ip(&fr);
    EXPECT(&fr, RNIC_ROCE_ERR_IP_FRAGMENT);
    make_frame(&fr, send_only, false, false, 16);
    fr.b[fr.l3 + 11] ^= 1;
    EXPECT(&fr, RNIC_ROCE_ERR_IP_CSUM);

    /* IPv6 only: extension headers, fragment header */
    make_frame(&fr, send_only, true, false, 16);
    fr.b[fr.l3 + 6] = 0;    /* hop-by-hop options */
    EXPECT(&fr, RNIC_ROCE_ERR_IP_OPTIONS);
    fr.b[fr.l3 + 6] = 44;
    EXPECT(&fr, RNIC_ROCE_ERR_IP_FRAGMENT);

    /* short Ethernet / VLAN headers */
    make_frame(&fr, send_only, false, true, 16);
    fr.len = 13;
    EXPECT(&fr, RNIC_ROCE_ERR_TRUNCATED);
    fr.len = 17;
    EXPECT(&fr, RNIC_ROCE_ERR_TRUNCATED);
}

/*
 * Every prefix of a valid frame fails cleanly (exact-size copies: ASan
 * flags any read past the end); trailing bytes are ignored.
 */
static void test_decode_truncated(void)
{
    static const uint8_t ops[] = {
        RNIC_ROCE_OP_SEND_ONLY, RNIC_ROCE_OP_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
        RNIC_ROCE_OP_ATOMIC_ACKNOWLEDGE, RNIC_ROCE_OP_COMPARE_SWAP,
        RNIC_ROCE_OP_ACKNOWLEDGE,
        RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_UD,
                         RNIC_ROCE_OP_SEND_ONLY_WITH_IMMEDIATE),
    };
    Frame fr;
    unsigned checked = 0;

    for (unsigned i = 0; i < G_N_ELEMENTS(ops); i++) {
        const RnicRoceOpInfo *info = rnic_roce_op_info(ops[i]);
        uint32_t plen = (info->flags & RNIC_ROCE_OPF_PAYLOAD) ? 33 : 0;

        for (int v6 = 0; v6 < 2; v6++) {
            for (int vlan = 0; vlan < 2; vlan++) {
                size_t full, used;

                make_frame(&fr, ops[i], v6, vlan, plen);
                full = fr.len;
                used = fr.l3 + ip_len(&fr);
                g_assert_cmpint(decode_exact(&fr), ==, RNIC_ROCE_OK);
                for (fr.len = 0; fr.len < used; fr.len++) {
                    EXPECT(&fr, RNIC_ROCE_ERR_TRUNCATED);
                    checked++;
                }
                for (fr.len = used; fr.len <= full + 8; fr.len++) {
                    EXPECT(&fr, RNIC_ROCE_OK);
                }
            }
        }
    }
    g_test_message("%u truncated prefixes rejected", checked);
}

static RnicRoceClass peek_exact(const Frame *fr, size_t len,
                                RnicRocePeek *pk)
{
    g_autofree uint8_t *copy = g_memdup2(fr->b, len);

    rnic_roce_peek(copy, len, pk);
    return pk->cls;
}

/*
 * The classifier: a frame of each kind and what rnic_roce_peek() says of
 * it, of its prefixes and of its first RNIC_ROCE_PEEK_LEN bytes; the
 * decode from the peek is the decode.
 */
static void test_peek(void)
{
    const uint8_t op = RNIC_ROCE_OP_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
    RnicRocePeek pk, pk2;
    RnicRoceHdr h, d;
    Frame fr;
    uint8_t *ip;
    size_t len;

    for (int v6 = 0; v6 < 2; v6++) {
        for (int vlan = 0; vlan < 2; vlan++) {
            /* RoCEv2: every header where the decoder finds it */
            make_frame(&fr, op, v6, vlan, 16);
            g_assert_cmpint(peek_exact(&fr, fr.len, &pk), ==,
                            RNIC_ROCE_CLASS_ROCE);
            g_assert_cmpint(rnic_roce_decode(fr.b, fr.len, &h), ==,
                            RNIC_ROCE_OK);
            g_assert_cmpint(rnic_roce_decode_peeked(fr.b, fr.len, &pk, &d),
                            ==, RNIC_ROCE_OK);
            g_assert_cmpmem(&d, sizeof(d), &h, sizeof(h));
            g_assert_cmpint(pk.mcast, ==, h.dmac[0] & 1);
            g_assert_cmpint(pk.vlan_present, ==, vlan);
            g_assert_cmpuint(pk.vlan_tci & 0xfff, ==, h.vlan_id);
            g_assert_cmpint(pk.ipv6, ==, v6);
            g_assert_cmphex(pk.ethertype, ==, v6 ? RNIC_ROCE_ETHERTYPE_IPV6
                                                 : RNIC_ROCE_ETHERTYPE_IPV4);
            g_assert_cmpuint(pk.l3_offset, ==, fr.l3);
            g_assert_cmpuint(pk.l4_offset, ==, h.bth_offset - 8);
            g_assert_cmpuint(pk.udp_dport, ==, RNIC_ROCE_UDP_DPORT);
            g_assert_cmpmem(pk.dgid, 16, h.dgid, 16);
            g_assert_true(pk.has_bth);
            g_assert_cmphex(pk.bth.opcode, ==, h.opcode);
            g_assert_cmphex(pk.bth.dest_qp, ==, h.dest_qp);
            g_assert_cmphex(pk.bth.psn, ==, h.psn);
            g_assert_cmphex(pk.bth.pkey, ==, h.pkey);

            /* its first RNIC_ROCE_PEEK_LEN bytes say the same */
            len = MIN(fr.len, RNIC_ROCE_PEEK_LEN);
            g_assert_cmpint(peek_exact(&fr, len, &pk2), ==,
                            RNIC_ROCE_CLASS_ROCE);
            g_assert_cmpuint(pk2.l4_offset, ==, pk.l4_offset);
            g_assert_true(pk2.has_bth);
            g_assert_cmphex(pk2.bth.psn, ==, pk.bth.psn);

            /* cut before the UDP ports: truncated; before the BTH's end */
            for (len = 0; len < pk.l4_offset + 4u; len++) {
                g_assert_cmpint(peek_exact(&fr, len, &pk2), ==,
                                RNIC_ROCE_CLASS_TRUNCATED);
            }
            for (; len < pk.l4_offset + 8u + RNIC_ROCE_BTH_LEN; len++) {
                g_assert_cmpint(peek_exact(&fr, len, &pk2), ==,
                                RNIC_ROCE_CLASS_ROCE);
                g_assert_false(pk2.has_bth);
            }

            /* UDP to another port */
            fr.b[pk.l4_offset + 3] ^= 1;
            g_assert_cmpint(peek_exact(&fr, fr.len, &pk2), ==,
                            RNIC_ROCE_CLASS_UDP);
            g_assert_cmpuint(pk2.udp_dport, ==, RNIC_ROCE_UDP_DPORT ^ 1);
            g_assert_false(pk2.has_bth);

            /* TCP */
            make_frame(&fr, op, v6, vlan, 16);
            fr.b[fr.l3 + (v6 ? 6 : 9)] = 6;
            g_assert_cmpint(peek_exact(&fr, fr.len, &pk2), ==,
                            RNIC_ROCE_CLASS_NOT_UDP);

            /* the IP version contradicts the EtherType */
            make_frame(&fr, op, v6, vlan, 16);
            fr.b[fr.l3] = v6 ? 0x45 : 0x60;
            g_assert_cmpint(peek_exact(&fr, fr.len, &pk2), ==,
                            RNIC_ROCE_CLASS_NOT_IP);

            /* ARP, and a multicast destination */
            make_frame(&fr, op, v6, vlan, 16);
            fr.b[fr.l3 - 2] = 0x08;
            fr.b[fr.l3 - 1] = 0x06;
            g_assert_cmpint(peek_exact(&fr, fr.len, &pk2), ==,
                            RNIC_ROCE_CLASS_NOT_IP);
            make_frame(&fr, op, v6, vlan, 16);
            fr.b[0] |= 1;
            g_assert_cmpint(peek_exact(&fr, fr.len, &pk2), ==,
                            RNIC_ROCE_CLASS_ROCE);
            g_assert_true(pk2.mcast);
        }
    }

    /*
     * IPv4: the claim's view, looser than the decoder's. Options: RoCE,
     * UDP after them (the decoder refuses them); a first fragment: RoCE;
     * a later one has no UDP header; an IHL below 5 is no IPv4.
     */
    make_frame(&fr, op, false, false, 16);
    ip = fr.b + fr.l3;
    ip[0] = 0x46;
    g_assert_cmpint(peek_exact(&fr, fr.len, &pk), ==, RNIC_ROCE_CLASS_UDP);
    g_assert_cmpuint(pk.l4_offset, ==, fr.l3 + 24);
    ip[0] = 0x44;
    g_assert_cmpint(peek_exact(&fr, fr.len, &pk), ==, RNIC_ROCE_CLASS_NOT_IP);
    make_frame(&fr, op, false, false, 16);
    ip = fr.b + fr.l3;
    ip[6] |= 0x20;          /* MF */
    g_assert_cmpint(peek_exact(&fr, fr.len, &pk), ==, RNIC_ROCE_CLASS_ROCE);
    ip[7] = 1;              /* fragment offset */
    g_assert_cmpint(peek_exact(&fr, fr.len, &pk), ==, RNIC_ROCE_CLASS_NOT_UDP);
    /* the 802.1Q tag cut: nothing past the Ethernet header */
    make_frame(&fr, op, false, true, 16);
    g_assert_cmpint(peek_exact(&fr, 17, &pk), ==, RNIC_ROCE_CLASS_TRUNCATED);
    g_assert_cmpuint(pk.l3_offset, ==, 0);
}

/* The ICRC ignores exactly the fields routers may change. */
static void test_icrc_invariance(void)
{
    for (int v6 = 0; v6 < 2; v6++) {
        Frame fr;
        uint8_t *ip, *udp, *bth;
        size_t n;
        uint32_t ref;

        make_frame(&fr, RNIC_ROCE_OP_SEND_ONLY, v6, false, 40);
        ip = fr.b + fr.l3;
        udp = ip + ip_hlen(&fr);
        bth = udp + 8;
        n = ip_len(&fr) - 4;
        ref = rnic_roce_icrc(ip, v6, n);

#define SAME(stmt) do { stmt; g_assert_cmphex(rnic_roce_icrc(ip, v6, n), ==, \
                                              ref); } while (0)
#define DIFF(stmt) do { \
        Frame save = fr; \
        stmt; \
        g_assert_cmphex(rnic_roce_icrc(ip, v6, n), !=, ref); \
        fr = save; \
    } while (0)
        if (v6) {
            SAME(ip[0] ^= 0x0f);    /* traffic class */
            SAME(ip[1] ^= 0xff);    /* traffic class, flow label */
            SAME(ip[3] ^= 0x5a);    /* flow label */
            SAME(ip[7] ^= 0x3c);    /* hop limit */
            DIFF(ip[0] ^= 0x10);    /* version */
            DIFF(ip[5] ^= 0x01);    /* payload length */
            DIFF(ip[8] ^= 0x01);    /* source */
            DIFF(ip[39] ^= 0x01);   /* destination */
        } else {
            SAME(ip[1] ^= 0xff);    /* TOS: DSCP + ECN */
            SAME(ip[8] ^= 0x01);    /* TTL */
            SAME(ip[10] ^= 0xff);   /* header checksum */
            DIFF(ip[4] ^= 0x01);    /* identification */
            DIFF(ip[6] ^= 0x40);    /* DF */
            DIFF(ip[12] ^= 0x01);   /* source */
            DIFF(ip[19] ^= 0x01);   /* destination */
        }
        SAME(udp[6] ^= 0x12);       /* UDP checksum */
        SAME(udp[7] ^= 0x34);
        SAME(bth[4] ^= 0xc0);       /* FECN, BECN */
        SAME(bth[4] ^= 0x3f);       /* resv6 */
        DIFF(udp[0] ^= 0x01);       /* source port */
        DIFF(bth[0] ^= 0x01);       /* opcode */
        DIFF(bth[2] ^= 0x01);       /* P_Key */
        DIFF(bth[7] ^= 0x01);       /* destination QP */
        DIFF(bth[8] ^= 0x80);       /* AckReq */
        DIFF(bth[11] ^= 0x01);      /* PSN */
        DIFF(bth[12] ^= 0x01);      /* payload */
#undef SAME
#undef DIFF

        /*
         * ECN marking by a switch (and the IPv4 checksum update it
         * implies) keeps the frame valid end to end
         */
        make_frame(&fr, RNIC_ROCE_OP_SEND_ONLY, v6, true, 40);
        ip = fr.b + fr.l3;
        if (v6) {
            ip[1] |= 0x30;          /* ECN = CE */
            ip[7] -= 1;
        } else {
            ip[1] |= 0x03;
            ip[8] -= 1;
            fix_ip(&fr);
        }
        bth_of(&fr)[4] |= 0x80;     /* FECN */
        EXPECT(&fr, RNIC_ROCE_OK);
    }
}

static void test_grh_ud(void)
{
    const uint8_t op = RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_UD,
                                        RNIC_ROCE_OP_SEND_ONLY);

    for (int v6 = 0; v6 < 2; v6++) {
        Frame fr;
        RnicRoceHdr h;
        uint8_t grh[RNIC_ROCE_GRH_LEN];

        make_frame(&fr, op, v6, true, 256);
        g_assert_cmpint(rnic_roce_decode(fr.b, fr.len, &h), ==, RNIC_ROCE_OK);
        g_assert_cmphex(h.ext, ==, RNIC_ROCE_EXT_DETH);
        rnic_roce_build_grh(&h, grh);
        if (v6) {
            g_assert_cmpuint(grh[0] >> 4, ==, 6);
            g_assert_cmpmem(grh, 40, fr.b + fr.l3, 40);
            g_assert_cmpmem(grh + 8, 16, h.sgid, 16);
        } else {
            static const uint8_t zero[20];

            g_assert_cmpmem(grh, 20, zero, 20);
            g_assert_cmphex(grh[20], ==, 0x45);
            g_assert_cmpmem(grh + 20, 20, fr.b + fr.l3, 20);
        }
    }
}

/* Timing (-m perf) */

static double now_ns(void)
{
    return g_get_monotonic_time() * 1000.0;
}

static void test_perf(void)
{
    enum { ITER = 200000 };
    g_autofree uint8_t *payload = g_malloc(4096);
    struct iovec iov[RNIC_ROCE_ENCODE_IOV];
    GRand *r = g_rand_new_with_seed(9);
    uint8_t frame[FRAME_MAX];
    /* volatile: keep the timed calls from being optimised away */
    volatile uint32_t sink = 0;
    RnicRoceTx tx;
    RnicRoceHdr h, d;
    size_t len;
    double t0, t1;

    if (!g_test_perf()) {
        g_test_skip("timing: run with -m perf");
        g_rand_free(r);
        return;
    }
    for (unsigned i = 0; i < 4096; i++) {
        payload[i] = g_rand_int(r);
    }
    fill_random_hdr(r, &h, RNIC_ROCE_OP_RDMA_WRITE_MIDDLE, false, false);
    h.payload = payload;
    h.payload_len = 4096;
    g_assert_cmpint(rnic_roce_encode_linear(&h, frame, sizeof(frame), &len),
                    ==, RNIC_ROCE_OK);

    t0 = now_ns();
    for (int i = 0; i < ITER; i++) {
        sink += rnic_crc32(0, payload, 4096);
    }
    t1 = now_ns();
    g_test_message("crc32 4 KiB (fast path): %.0f ns, %.2f GB/s",
                   (t1 - t0) / ITER, 4096.0 * ITER / (t1 - t0));
    t0 = now_ns();
    for (int i = 0; i < ITER / 10; i++) {
        sink += rnic_crc32_table(0, payload, 4096);
    }
    t1 = now_ns();
    g_test_message("crc32 4 KiB (slice-by-8): %.0f ns, %.2f GB/s",
                   (t1 - t0) / (ITER / 10), 4096.0 * (ITER / 10) / (t1 - t0));
    t0 = now_ns();
    for (int i = 0; i < ITER; i++) {
        sink += rnic_roce_icrc(frame + 14, false, len - 14 - 4);
    }
    t1 = now_ns();
    g_test_message("ICRC of a 4 KiB-payload frame: %.0f ns", (t1 - t0) / ITER);
    /*
     * A 1 KiB-payload frame (path MTU 1024) between two clears of a 68 KiB
     * buffer, as QEMU's stream netdev reads one: the L1 cache the CRC finds
     * is not its own. The clearing alone is timed and taken off.
     */
    h.payload_len = 1024;
    g_assert_cmpint(rnic_roce_encode_linear(&h, frame, sizeof(frame), &len),
                    ==, RNIC_ROCE_OK);
    {
        enum { COLD_ITER = ITER / 10 };
        g_autofree uint8_t *rx = g_malloc(4096 + 65536);
        double clear;

        t0 = now_ns();
        for (int i = 0; i < COLD_ITER; i++) {
            memset(rx, i, 4096 + 65536);
            sink += rx[i & 4095];
        }
        clear = now_ns() - t0;
        t0 = now_ns();
        for (int i = 0; i < COLD_ITER; i++) {
            memset(rx, i, 4096 + 65536);
            sink += rx[i & 4095];
            sink += rnic_roce_icrc(frame + 14, false, len - 14 - 4);
        }
        t1 = now_ns();
        g_test_message("ICRC of a 1 KiB-payload frame after a 68 KiB clear: "
                       "%.0f ns", (t1 - t0 - clear) / COLD_ITER);
    }
    h.payload_len = 4096;
    g_assert_cmpint(rnic_roce_encode_linear(&h, frame, sizeof(frame), &len),
                    ==, RNIC_ROCE_OK);
    t0 = now_ns();
    for (int i = 0; i < ITER; i++) {
        h.psn = i & RNIC_ROCE_PSN_MASK;
        sink += rnic_roce_encode(&h, &tx, iov);
    }
    t1 = now_ns();
    g_test_message("encode 4 KiB frame (zero copy, with ICRC): %.0f ns",
                   (t1 - t0) / ITER);
    t0 = now_ns();
    for (int i = 0; i < ITER; i++) {
        sink += rnic_roce_decode(frame, len, &d);
    }
    t1 = now_ns();
    g_test_message("decode+validate 4 KiB frame (with ICRC): %.0f ns",
                   (t1 - t0) / ITER);
    (void)sink;
    g_rand_free(r);
}

/* pcap of sample frames, for tshark-check.sh */

/* Host order: the magic number tells the reader. */
static void pcap_put16(FILE *f, uint16_t v)
{
    fwrite(&v, 2, 1, f);
}

static void pcap_put32(FILE *f, uint32_t v)
{
    fwrite(&v, 4, 1, f);
}

static int write_pcap(const char *path)
{
    static const struct {
        uint8_t opcode;
        bool v6, vlan;
        uint32_t plen;
    } frames[] = {
        { 0x04, false, false, 100 },    /* RC SEND Only */
        { 0x06, false, true, 1024 },    /* RC RDMA WRITE First */
        { 0x0b, true, false, 33 },      /* RC RDMA WRITE Only w/ Imm */
        { 0x0c, false, false, 0 },      /* RC RDMA READ Request */
        { 0x10, false, false, 512 },    /* RC RDMA READ Response Only */
        { 0x11, false, false, 0 },      /* RC Acknowledge */
        { 0x13, true, true, 0 },        /* RC CmpSwap */
        { 0x12, false, false, 0 },      /* RC Atomic Acknowledge */
        { 0x17, false, false, 7 },      /* RC SEND Only w/ Invalidate */
        { 0x24, false, false, 18 },     /* UC SEND Only */
        { 0x65, true, false, 256 },     /* UD SEND Only w/ Imm */
        { 0x64, false, true, 64 },      /* UD SEND Only (GSI) */
    };
    static uint8_t payload[4096];
    GRand *r = g_rand_new_with_seed(5);
    FILE *f = fopen(path, "wb");

    if (!f) {
        perror(path);
        return 1;
    }
    pcap_put32(f, 0xa1b2c3d4);
    pcap_put16(f, 2);               /* version 2.4 */
    pcap_put16(f, 4);
    pcap_put32(f, 0);               /* thiszone */
    pcap_put32(f, 0);               /* sigfigs */
    pcap_put32(f, 65535);           /* snaplen */
    pcap_put32(f, 1);               /* LINKTYPE_ETHERNET */
    for (unsigned i = 0; i < sizeof(payload); i++) {
        payload[i] = i * 7;
    }
    for (unsigned i = 0; i < G_N_ELEMENTS(frames); i++) {
        uint8_t out[FRAME_MAX];
        RnicRoceHdr h;
        size_t len;

        fill_random_hdr(r, &h, frames[i].opcode, frames[i].v6,
                        frames[i].vlan);
        h.dmac[0] = (h.dmac[0] & ~1) | 2;   /* unicast, locally administered */
        h.smac[0] = (h.smac[0] & ~1) | 2;
        h.hop_limit = 64;
        h.ack_req = true;
        h.pkey = RNIC_ROCE_DEFAULT_PKEY;
        if ((frames[i].opcode & RNIC_ROCE_TRANSPORT_MASK) ==
            RNIC_ROCE_TRANSPORT_UD) {
            h.deth.qkey = RNIC_ROCE_GSI_QKEY;
        }
        if (frames[i].opcode == RNIC_ROCE_OP_ACKNOWLEDGE ||
            frames[i].opcode == RNIC_ROCE_OP_ATOMIC_ACKNOWLEDGE) {
            h.aeth.syndrome = RNIC_ROCE_AETH_ACK |
                              RNIC_ROCE_AETH_CREDIT_INVALID;
        }
        h.payload = payload;
        h.payload_len = frames[i].plen;
        if (rnic_roce_encode_linear(&h, out, sizeof(out), &len) !=
            RNIC_ROCE_OK) {
            fclose(f);
            return 1;
        }
        pcap_put32(f, 1700000000 + i);
        pcap_put32(f, 0);
        pcap_put32(f, len);
        pcap_put32(f, len);
        fwrite(out, 1, len, f);
    }
    g_rand_free(r);
    return fclose(f) ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-pcap") == 0) {
        return write_pcap(argv[2]);
    }
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/roce/crc32/known", test_crc32_known);
    g_test_add_func("/roce/crc32/fast-vs-table", test_crc32_fast_vs_table);
    g_test_add_func("/roce/icrc/connectx4-cnp", test_icrc_cx4_cnp);
    g_test_add_func("/roce/icrc/scapy-uc-send", test_icrc_scapy_uc);
    g_test_add_func("/roce/icrc/invariance", test_icrc_invariance);
    g_test_add_func("/roce/opcode-table", test_op_table);
    g_test_add_func("/roce/roundtrip/all-opcodes", test_roundtrip_all);
    g_test_add_func("/roce/roundtrip/null-payload", test_encode_null_payload);
    g_test_add_func("/roce/encode/errors", test_encode_errors);
    g_test_add_func("/roce/decode/errors", test_decode_errors);
    g_test_add_func("/roce/decode/truncated", test_decode_truncated);
    g_test_add_func("/roce/peek", test_peek);
    g_test_add_func("/roce/grh/ud", test_grh_ud);
    g_test_add_func("/roce/perf", test_perf);
    return g_test_run();
}
