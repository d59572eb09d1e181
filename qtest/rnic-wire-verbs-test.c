/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtests of RoCEv2 on the wire: every verb between QEMU instances, each
 * with an rnic, on one Ethernet segment through QEMU's network backends.
 *
 *  two-vms      '-netdev stream' over a unix socket: every verb across the
 *               wire (RC in an untagged and a VLAN context, fast-register +
 *               SEND with invalidate, UD with the GRH, QP1), data verified
 *  hub          two rnics of one VM on QEMU's internal hub
 *  three-vms    '-netdev socket,mcast=…' (a hub): A talks RC and UD to B
 *               and C at the same time; each drops the others' frames
 *  capture      '-object filter-dump': tshark decodes the frames as RoCE
 *               with the expected opcodes (skipped without tshark)
 *
 * Plain GTest cases registered from the rnic-qos-test binary: they boot
 * their own machines (rnic-wire.h).
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/module.h"
#include "qemu/bswap.h"
#include "rnic-wire.h"

/* ---------------------------------------------------------------------- */
/* Every verb across the wire                                             */
/* ---------------------------------------------------------------------- */

/* The RC verbs from A to B on a pair of context 'ci', data checked. */
static void rc_verbs(WVm *a, WVm *b, int ci, const WvPath *path)
{
    WvPair p = wv_rc_pair(a, b, ci, path, 6);
    const uint32_t len = 10000;
    struct rnic_sq_wqe w;
    struct rnic_sge s[2], r;
    struct rnic_cqe c;
    uint64_t v;
    uint32_t fr, stag, mr = a->mr[ci], rmr = b->mr[ci];
    uint64_t region;

    /*
     * RDMA WRITE, several packets (also the first frames: a stream peer
     * connects asynchronously, RC retransmits whatever went nowhere)
     */
    wv_fill(a, a->buf, len, 1);
    s[0] = tv_sge(a->buf, len, mr);
    w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = b->buf + 0x100000;
    w.rdma.rkey = rmr;
    tv_post_send(&a->d, p.a, &w, s, NULL);
    wv_expect(a, 1, RNIC_WC_RDMA_WRITE, len);
    wv_check(b, b->buf + 0x100000, len, 1);

    /* WRITE with immediate: consumes a receive at B */
    tv_post_recv(&b->d, p.b, 0x201, NULL, 0);
    w = tv_wqe(2, RNIC_WR_RDMA_WRITE_IMM, 1);
    w.rdma.remote_addr = b->buf + 0x110000;
    w.rdma.rkey = rmr;
    w.imm_or_inv = cpu_to_be32(0xfeedf00d);
    tv_post_send(&a->d, p.a, &w, s, NULL);
    wv_expect(a, 2, RNIC_WC_RDMA_WRITE, len);
    c = wv_expect(b, 0x201, RNIC_WC_RECV_RDMA_WITH_IMM, len);
    g_assert_true(c.flags & RNIC_CQE_WITH_IMM);
    g_assert_cmphex(c.imm_or_inv, ==, cpu_to_be32(0xfeedf00d));
    wv_check(b, b->buf + 0x110000, len, 1);

    /* SEND from two SGEs, SEND with immediate */
    wv_fill(a, a->buf + 0x20000, 3000, 2);
    s[1] = tv_sge(a->buf + 0x20000, 3000, mr);
    r = tv_sge(b->buf + 0x120000, 20000, rmr);
    tv_post_recv(&b->d, p.b, 0x202, &r, 1);
    w = tv_wqe(3, RNIC_WR_SEND, 2);
    tv_post_send(&a->d, p.a, &w, s, NULL);
    wv_expect(a, 3, RNIC_WC_SEND, len + 3000);
    wv_expect(b, 0x202, RNIC_WC_RECV, len + 3000);
    wv_check(b, b->buf + 0x120000, len, 1);
    wv_check(b, b->buf + 0x120000 + len, 3000, 2);
    r = tv_sge(b->buf + 0x130000, 4096, rmr);
    tv_post_recv(&b->d, p.b, 0x203, &r, 1);
    w = tv_wqe(4, RNIC_WR_SEND_IMM, 1);
    w.imm_or_inv = cpu_to_be32(0x01020304);
    s[0].length = cpu_to_le32(777);
    tv_post_send(&a->d, p.a, &w, s, NULL);
    wv_expect(a, 4, RNIC_WC_SEND, 777);
    c = wv_expect(b, 0x203, RNIC_WC_RECV, 777);
    g_assert_cmphex(c.imm_or_inv, ==, cpu_to_be32(0x01020304));
    wv_check(b, b->buf + 0x130000, 777, 1);

    /* inline SEND the other way */
    r = tv_sge(a->buf + 0x140000, 100, mr);
    tv_post_recv(&a->d, p.a, 0x101, &r, 1);
    w = tv_wqe(5, RNIC_WR_SEND, 0);
    w.flags |= RNIC_WQE_INLINE;
    w.inline_len = cpu_to_le32(41);
    tv_post_send(&b->d, p.b, &w, NULL,
                 "RoCEv2 from B to A, inline, 41 bytes!!!!");
    wv_expect(b, 5, RNIC_WC_SEND, 41);
    wv_expect(a, 0x101, RNIC_WC_RECV, 41);
    {
        char got[41];

        qtest_memread(a->qts, a->buf + 0x140000, got, 41);
        g_assert_cmpmem(got, 41, "RoCEv2 from B to A, inline, 41 bytes!!!!",
                        41);
    }

    /* RDMA READ */
    wv_fill(b, b->buf + 0x150000, len, 3);
    r = tv_sge(a->buf + 0x150000, len, mr);
    w = tv_wqe(6, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = b->buf + 0x150000;
    w.rdma.rkey = rmr;
    tv_post_send(&a->d, p.a, &w, &r, NULL);
    wv_expect(a, 6, RNIC_WC_RDMA_READ, len);
    wv_check(a, a->buf + 0x150000, len, 3);

    /* atomics on a word of B */
    qtest_writeq(b->qts, b->buf + 0x160000, 1000);
    r = tv_sge(a->buf + 0x160000, 8, mr);
    w = tv_wqe(7, RNIC_WR_ATOMIC_FETCH_ADD, 1);
    w.atomic.remote_addr = b->buf + 0x160000;
    w.atomic.rkey = rmr;
    w.atomic.compare_add = 24;
    tv_post_send(&a->d, p.a, &w, &r, NULL);
    wv_expect(a, 7, RNIC_WC_FETCH_ADD, 8);
    g_assert_cmpuint(qtest_readq(a->qts, a->buf + 0x160000), ==, 1000);
    w = tv_wqe(8, RNIC_WR_ATOMIC_CMP_SWP, 1);
    w.atomic.remote_addr = b->buf + 0x160000;
    w.atomic.rkey = rmr;
    w.atomic.compare_add = 1024;
    w.atomic.swap = 0xabcdef;
    tv_post_send(&a->d, p.a, &w, &r, NULL);
    wv_expect(a, 8, RNIC_WC_COMP_SWAP, 8);
    g_assert_cmpuint(qtest_readq(a->qts, a->buf + 0x160000), ==, 1024);
    v = qtest_readq(b->qts, b->buf + 0x160000);
    g_assert_cmphex(v, ==, 0xabcdef);

    /* fast-register at B, WRITE through it, SEND with invalidate */
    fr = tv_alloc_mr(&b->d, b->pd[ci], 4, 0x01);
    region = qv_alloc(&b->d, 8192, 4096);
    stag = RNIC_STAG(RNIC_STAG_INDEX(fr), 0x42);
    w = tv_fast_reg_wqe(&b->d, 0x210, stag, 0x7000000, region, 2,
                        RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
    tv_post_send(&b->d, p.b, &w, NULL, NULL);
    wv_expect(b, 0x210, RNIC_WC_REG_MR, 0);
    s[0] = tv_sge(a->buf, 300, mr);
    w = tv_wqe(9, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = 0x7000000 + 4000;
    w.rdma.rkey = stag;
    tv_post_send(&a->d, p.a, &w, s, NULL);
    wv_expect(a, 9, RNIC_WC_RDMA_WRITE, 300);
    wv_check(b, region + 4000, 300, 1);
    tv_post_recv(&b->d, p.b, 0x211, NULL, 0);
    w = tv_wqe(10, RNIC_WR_SEND_INV, 0);
    w.imm_or_inv = cpu_to_le32(stag);
    tv_post_send(&a->d, p.a, &w, NULL, NULL);
    wv_expect(a, 10, RNIC_WC_SEND, 0);
    c = wv_expect(b, 0x211, RNIC_WC_RECV, 0);
    g_assert_true(c.flags & RNIC_CQE_WITH_INV);
    g_assert_cmphex(le32_to_cpu(c.imm_or_inv), ==, stag);
    /* the invalidated rkey is refused: NAK, both QPs to error */
    w = tv_wqe(11, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = 0x7000000;
    w.rdma.rkey = stag;
    tv_post_send(&a->d, p.a, &w, s, NULL);
    c = wv_wait(a);
    g_assert_cmpuint(c.wr_id, ==, 11);
    g_assert_cmpuint(c.status, ==, RNIC_WC_REM_ACCESS_ERR);
    wv_pair_free(&p);
}

/* UD from A to B with the GRH, and a MAD to B's QP1 of context 'ci'. */
static void ud_verbs(WVm *a, WVm *b)
{
    TvQp *ua = tv_qp(&a->d, RNIC_QPT_UD, a->pd[0], a->cq, a->cq, NULL, 4, 0);
    TvQp *ub = tv_qp(&b->d, RNIC_QPT_UD, b->pd[0], b->cq, b->cq, NULL, 4, 0);
    TvQp *ua1 = tv_qp(&a->d, RNIC_QPT_UD, a->pd[1], a->cq, a->cq, NULL, 4, 0);
    TvQp *gsi = tv_qp(&b->d, RNIC_QPT_GSI, b->pd[1], b->cq, b->cq, NULL, 4, 0);
    struct rnic_sq_wqe w;
    struct rnic_sge s, r;
    struct rnic_cqe c;
    uint8_t grh[40], gid[16];

    tv_ud_ready(&a->d, ua, 0x5555);
    tv_ud_ready(&b->d, ub, 0x5555);
    tv_ud_ready(&a->d, ua1, 0x80010000);
    tv_ud_ready(&b->d, gsi, 0x80010000);
    g_assert_cmpuint(gsi->qpn, ==, 1);

    wv_fill(a, a->buf + 0x200000, 900, 4);
    s = tv_sge(a->buf + 0x200000, 900, a->mr[0]);
    r = tv_sge(b->buf + 0x200000, 2048, b->mr[0]);
    tv_post_recv(&b->d, ub, 0x301, &r, 1);
    w = tv_wqe(20, RNIC_WR_SEND_IMM, 1);
    w.imm_or_inv = cpu_to_be32(0x11);
    w.ud.remote_qpn = cpu_to_le32(ub->qpn);
    w.ud.remote_qkey = cpu_to_le32(0x5555);
    w.ud.av.sgid_index = 0;
    wv_gid(w.ud.av.dgid, b, 0);
    memcpy(w.ud.av.dmac, b->mac, 6);
    tv_post_send(&a->d, ua, &w, &s, NULL);
    wv_expect(a, 20, RNIC_WC_SEND, 900);
    c = wv_expect(b, 0x301, RNIC_WC_RECV, 940);
    g_assert_true(c.flags & RNIC_CQE_GRH);
    g_assert_true(c.flags & RNIC_CQE_IPV4);
    g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, ua->qpn);
    g_assert_cmpmem(c.smac, 6, a->mac, 6);
    qtest_memread(b->qts, b->buf + 0x200000, grh, 40);
    /* IPv4: 20 zero bytes, then the header with A's and B's addresses */
    g_assert_cmpuint(grh[20], ==, 0x45);
    g_assert_cmpuint(grh[29], ==, 17);
    wv_gid(gid, a, 0);
    g_assert_cmpmem(grh + 32, 4, gid + 12, 4);
    wv_gid(gid, b, 0);
    g_assert_cmpmem(grh + 36, 4, gid + 12, 4);
    wv_check(b, b->buf + 0x200000 + 40, 900, 4);

    /* a MAD to QP1 of B's VLAN context */
    r = tv_sge(b->buf + 0x210000, 512, b->mr[1]);
    tv_post_recv(&b->d, gsi, 0x302, &r, 1);
    s = tv_sge(a->buf + 0x200000, 256, a->mr[1]);
    w = tv_wqe(21, RNIC_WR_SEND, 1);
    w.ud.remote_qpn = cpu_to_le32(1);
    w.ud.remote_qkey = cpu_to_le32(0x80010000);
    w.ud.av.sgid_index = 1;
    wv_gid(w.ud.av.dgid, b, 1);
    memcpy(w.ud.av.dmac, b->mac, 6);
    tv_post_send(&a->d, ua1, &w, &s, NULL);
    wv_expect(a, 21, RNIC_WC_SEND, 256);
    c = wv_expect(b, 0x302, RNIC_WC_RECV, 296);
    g_assert_cmpuint(le32_to_cpu(c.qp_num), ==, 1);
    g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, ua1->qpn);
    g_assert_true(c.flags & RNIC_CQE_VLAN);
    g_assert_cmpuint(le16_to_cpu(c.vlan_id), ==, b->vlan[1]);
    wv_check(b, b->buf + 0x210000 + 40, 256, 4);
    g_free(ua);
    g_free(ub);
    g_free(ua1);
    g_free(gsi);
}

static void test_two_vms(void)
{
    Seg seg;
    WVm *a, *b;

    seg_init(&seg);
    boot_stream_pair(&seg, &a, &b, NULL);
    rc_verbs(a, b, 0, &path_1k);        /* untagged */
    rc_verbs(a, b, 1, &path_4k);        /* 802.1Q VLAN 100 */
    ud_verbs(a, b);
    /* only the NAKed WRITEs' frames were refused (by the responder) */
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_RX_ERR_ICRC), ==, 0);
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_RX_ERR_HEADER), ==, 0);
    g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_RX_ERR_ICRC), ==, 0);
    g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_TX_DROPPED), ==, 0);
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_RX_FRAMES), >, 40);
    /* RoCE never reached the Ethernet function's rings */
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_ETH_RX_DISABLED), ==, 0);
    wv_quit(a);
    wv_quit(b);
    seg_free(&seg);
}

/* Two rnics of one VM on QEMU's internal hub: delivery within a process. */
static void test_hub(void)
{
    QOSState *qs = qtest_pc_boot("-M pc -m 512 "
        "-netdev hubport,id=p0,hubid=0 -netdev hubport,id=p1,hubid=0 "
        "-device rnic,netdev=p0,addr=04.0,mac=52:54:00:77:00:01 "
        "-device rnic,netdev=p1,addr=05.0,mac=52:54:00:77:00:02");
    WVm *a = wv_attach(qs, QPCI_DEVFN(4, 0), 1, 100);
    WVm *b = wv_attach(qs, QPCI_DEVFN(5, 0), 2, 100);

    rc_verbs(a, b, 0, &path_1k);
    rc_verbs(b, a, 1, &path_4k);
    ud_verbs(a, b);
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_RX_ERR_ICRC), ==, 0);
    g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_TX_DROPPED), ==, 0);
    g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_RX_FRAMES), >, 20);
    wv_forget(a);
    wv_forget(b);
    qtest_shutdown(qs);
}

/* ---------------------------------------------------------------------- */
/* Three VMs on one segment                                               */
/* ---------------------------------------------------------------------- */

static void test_three_vms(void)
{
    guint32 r = g_random_int();
    g_autofree char *nd = g_strdup_printf("socket,mcast=239.255.%u.%u:%u,"
                                          "localaddr=127.0.0.1",
                                          (r >> 8) & 0xff, (r & 0xff) | 1,
                                          20000 + (r >> 16) % 20000);
    WVm *vm[3];
    WvPair p[2];
    TvQp *ud[3];
    struct rnic_sq_wqe w;
    struct rnic_sge s, rs;
    int i, j;
    const uint32_t len = 64 * 1024;

    for (i = 0; i < 3; i++) {
        vm[i] = wv_boot(i + 1, nd, NULL, 100);
    }
    /* A to B and A to C at the same time: WRITE, READ, SEND each */
    for (i = 0; i < 2; i++) {
        WVm *peer = vm[i + 1];

        p[i] = wv_rc_pair(vm[0], peer, 0, &path_4k, 6);
        wv_fill(vm[0], vm[0]->buf + i * 0x100000, len, 10 + i);
        wv_fill(peer, peer->buf + 0x200000, len, 20 + i);
        rs = tv_sge(peer->buf + 0x300000, len, peer->mr[0]);
        tv_post_recv(&peer->d, p[i].b, 0x500 + i, &rs, 1);
    }
    for (i = 0; i < 2; i++) {
        WVm *peer = vm[i + 1];

        s = tv_sge(vm[0]->buf + i * 0x100000, len, vm[0]->mr[0]);
        w = tv_wqe(0x10 + i, RNIC_WR_RDMA_WRITE, 1);
        w.rdma.remote_addr = peer->buf + 0x100000;
        w.rdma.rkey = peer->mr[0];
        tv_post_send(&vm[0]->d, p[i].a, &w, &s, NULL);
        w = tv_wqe(0x20 + i, RNIC_WR_SEND, 1);
        tv_post_send(&vm[0]->d, p[i].a, &w, &s, NULL);
        rs = tv_sge(vm[0]->buf + 0x400000 + i * 0x100000, len, vm[0]->mr[0]);
        w = tv_wqe(0x30 + i, RNIC_WR_RDMA_READ, 1);
        w.rdma.remote_addr = peer->buf + 0x200000;
        w.rdma.rkey = peer->mr[0];
        tv_post_send(&vm[0]->d, p[i].a, &w, &rs, NULL);
    }
    /* UD from A to both */
    for (i = 0; i < 3; i++) {
        ud[i] = tv_qp(&vm[i]->d, RNIC_QPT_UD, vm[i]->pd[0], vm[i]->cq,
                      vm[i]->cq, NULL, 4, 0);
        tv_ud_ready(&vm[i]->d, ud[i], 0x77);
    }
    for (i = 1; i < 3; i++) {
        rs = tv_sge(vm[i]->buf + 0x600000, 2048, vm[i]->mr[0]);
        tv_post_recv(&vm[i]->d, ud[i], 0x600 + i, &rs, 1);
    }
    for (i = 1; i < 3; i++) {
        s = tv_sge(vm[0]->buf, 1000, vm[0]->mr[0]);
        w = tv_wqe(0x40 + i, RNIC_WR_SEND, 1);
        w.ud.remote_qpn = cpu_to_le32(ud[i]->qpn);
        w.ud.remote_qkey = cpu_to_le32(0x77);
        wv_gid(w.ud.av.dgid, vm[i], 0);
        memcpy(w.ud.av.dmac, vm[i]->mac, 6);
        tv_post_send(&vm[0]->d, ud[0], &w, &s, NULL);
    }

    /* A: per QP in order; the two QPs' completions interleave */
    {
        uint64_t next[2] = { 0x10, 0x11 };
        bool ud_done[3] = { false };
        int n;

        for (n = 0; n < 8; n++) {
            struct rnic_cqe c = wv_wait(vm[0]);
            uint64_t id = c.wr_id;

            g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
            if (id >= 0x40) {
                ud_done[id - 0x40] = true;
                continue;
            }
            i = id & 1;
            g_assert_cmphex(id, ==, next[i]);
            next[i] += 0x10;
        }
        g_assert_true(ud_done[1] && ud_done[2]);
        g_assert_cmphex(next[0], ==, 0x40);
        g_assert_cmphex(next[1], ==, 0x41);
    }
    for (i = 0; i < 2; i++) {
        WVm *peer = vm[i + 1];
        struct rnic_cqe c[2];

        c[0] = wv_wait(peer);
        c[1] = wv_wait(peer);
        if (c[0].wr_id > c[1].wr_id) {
            struct rnic_cqe t = c[0];

            c[0] = c[1];
            c[1] = t;
        }
        g_assert_cmphex(c[0].wr_id, ==, 0x500 + i);
        g_assert_cmpuint(le32_to_cpu(c[0].byte_len), ==, len);
        g_assert_cmphex(c[1].wr_id, ==, 0x600 + i + 1);
        g_assert_cmpuint(le32_to_cpu(c[1].byte_len), ==, 1040);
        wv_check(peer, peer->buf + 0x100000, len, 10 + i);
        wv_check(peer, peer->buf + 0x300000, len, 10 + i);
        wv_check(peer, peer->buf + 0x600000 + 40, 1000, 10);
        wv_check(vm[0], vm[0]->buf + 0x400000 + i * 0x100000, len, 20 + i);
    }
    /* each saw the others' frames on the hub and left them alone */
    for (i = 0; i < 3; i++) {
        wv_assert_clean(vm[i]);
        g_assert_cmpuint(tv_stat(&vm[i]->d, RNIC_STAT_ETH_RX_DISABLED), >, 0);
    }
    for (i = 0; i < 2; i++) {
        wv_pair_free(&p[i]);
    }
    for (j = 0; j < 3; j++) {
        g_free(ud[j]);
        wv_quit(vm[j]);
    }
}

/* ---------------------------------------------------------------------- */
/* Capture                                                                */
/* ---------------------------------------------------------------------- */

static void test_capture(void)
{
    Seg seg;
    WVm *a, *b;
    WvPair p;
    g_autofree char *pcap = NULL, *extra = NULL, *out = NULL, *err = NULL;
    g_autofree char *tshark = g_find_program_in_path("tshark");
    struct rnic_sq_wqe w;
    struct rnic_sge s, r;
    int status;
    static const char *const want[] = {
        "6", "7", "8", "10", "11", "12", "13", "14", "15", "16", "17", "18",
        "19", "20", "4", "3", "0", "100",
    };
    gchar **lines;
    GHashTable *seen = g_hash_table_new_full(g_str_hash, g_str_equal,
                                             g_free, NULL);
    unsigned i, roce = 0;

    if (!tshark) {
        g_test_skip("tshark not installed: capture not decoded");
        return;
    }
    seg_init(&seg);
    pcap = seg_path(&seg, "a.pcap");
    extra = g_strdup_printf("-object filter-dump,id=f0,netdev=n0,file=%s",
                            pcap);
    boot_stream_pair(&seg, &a, &b, extra);
    p = wv_rc_pair(a, b, 0, &path_1k, 6);
    wv_fill(a, a->buf, 8192, 5);
    s = tv_sge(a->buf, 3000, a->mr[0]);
    /*
     * WRITE_FIRST/MIDDLE/LAST, WRITE_ONLY_IMM, READ request/responses
     * FIRST/MIDDLE/LAST and ONLY, atomics, SEND_FIRST/LAST_IMM, UD
     */
    w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = b->buf;
    w.rdma.rkey = b->mr[0];
    tv_post_send(&a->d, p.a, &w, &s, NULL);
    wv_expect(a, 1, RNIC_WC_RDMA_WRITE, 3000);
    s.length = cpu_to_le32(100);
    w.wr_id = 10;
    tv_post_send(&a->d, p.a, &w, &s, NULL);
    wv_expect(a, 10, RNIC_WC_RDMA_WRITE, 100);
    s.length = cpu_to_le32(3000);
    tv_post_recv(&b->d, p.b, 2, NULL, 0);
    w = tv_wqe(2, RNIC_WR_RDMA_WRITE_IMM, 0);
    w.rdma.remote_addr = b->buf;
    w.rdma.rkey = b->mr[0];
    tv_post_send(&a->d, p.a, &w, NULL, NULL);
    wv_expect(a, 2, RNIC_WC_RDMA_WRITE, 0);
    wv_expect(b, 2, RNIC_WC_RECV_RDMA_WITH_IMM, 0);
    r = tv_sge(a->buf + 0x10000, 3000, a->mr[0]);
    w = tv_wqe(3, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = b->buf;
    w.rdma.rkey = b->mr[0];
    tv_post_send(&a->d, p.a, &w, &r, NULL);
    wv_expect(a, 3, RNIC_WC_RDMA_READ, 3000);
    r.length = cpu_to_le32(100);
    w.wr_id = 4;
    tv_post_send(&a->d, p.a, &w, &r, NULL);
    wv_expect(a, 4, RNIC_WC_RDMA_READ, 100);
    r = tv_sge(a->buf + 0x20000, 8, a->mr[0]);
    w = tv_wqe(5, RNIC_WR_ATOMIC_FETCH_ADD, 1);
    w.atomic.remote_addr = b->buf + 0x30000;
    w.atomic.rkey = b->mr[0];
    tv_post_send(&a->d, p.a, &w, &r, NULL);
    wv_expect(a, 5, RNIC_WC_FETCH_ADD, 8);
    w.opcode = RNIC_WR_ATOMIC_CMP_SWP;
    w.wr_id = 6;
    tv_post_send(&a->d, p.a, &w, &r, NULL);
    wv_expect(a, 6, RNIC_WC_COMP_SWAP, 8);
    r = tv_sge(b->buf + 0x40000, 4096, b->mr[0]);
    tv_post_recv(&b->d, p.b, 7, &r, 1);
    w = tv_wqe(7, RNIC_WR_SEND_IMM, 1);
    tv_post_send(&a->d, p.a, &w, &s, NULL);
    wv_expect(a, 7, RNIC_WC_SEND, 3000);
    wv_expect(b, 7, RNIC_WC_RECV, 3000);
    tv_post_recv(&b->d, p.b, 8, &r, 1);
    s.length = cpu_to_le32(500);
    w = tv_wqe(8, RNIC_WR_SEND, 1);
    tv_post_send(&a->d, p.a, &w, &s, NULL);
    wv_expect(a, 8, RNIC_WC_SEND, 500);
    wv_expect(b, 8, RNIC_WC_RECV, 500);
    {
        TvQp *ua = tv_qp(&a->d, RNIC_QPT_UD, a->pd[0], a->cq, a->cq,
                         NULL, 4, 0);
        TvQp *ub = tv_qp(&b->d, RNIC_QPT_UD, b->pd[0], b->cq, b->cq,
                         NULL, 4, 0);

        tv_ud_ready(&a->d, ua, 9);
        tv_ud_ready(&b->d, ub, 9);
        tv_post_recv(&b->d, ub, 9, &r, 1);
        w = tv_wqe(9, RNIC_WR_SEND, 1);
        w.ud.remote_qpn = cpu_to_le32(ub->qpn);
        w.ud.remote_qkey = cpu_to_le32(9);
        wv_gid(w.ud.av.dgid, b, 0);
        memcpy(w.ud.av.dmac, b->mac, 6);
        tv_post_send(&a->d, ua, &w, &s, NULL);
        wv_expect(a, 9, RNIC_WC_SEND, 500);
        wv_expect(b, 9, RNIC_WC_RECV, 540);
        g_free(ua);
        g_free(ub);
    }
    wv_pair_free(&p);
    wv_quit(a);                 /* closes the capture */
    wv_quit(b);

    {
        g_autofree char *cmd = g_strdup_printf(
            "%s -r %s -o ip.check_checksum:TRUE --disable-protocol rpcordma "
            "-T fields -e frame.protocols -e infiniband.bth.opcode "
            "-e _ws.malformed -e ip.checksum.status", tshark, pcap);

        g_assert_true(g_spawn_command_line_sync(cmd, &out, &err, &status,
                                                NULL));
        g_assert_cmpint(status, ==, 0);
    }
    lines = g_strsplit(out, "\n", 0);
    for (i = 0; lines[i]; i++) {
        gchar **f = g_strsplit(lines[i], "\t", 0);

        if (f[0] && strstr(f[0], ":udp:infiniband")) {
            roce++;
            g_assert_nonnull(f[1]);
            g_hash_table_add(seen, g_strdup(f[1]));
            /* not malformed, IPv4 header checksum good (status 1) */
            g_assert_true(!f[2] || !*f[2]);
            g_assert_true(f[3] && !strcmp(f[3], "1"));
        }
        g_strfreev(f);
    }
    g_strfreev(lines);
    if (g_test_verbose()) {
        g_printerr("%u RoCE frames captured\n", roce);
    }
    g_assert_cmpuint(roce, >=, 20);
    for (i = 0; i < G_N_ELEMENTS(want); i++) {
        if (!g_hash_table_contains(seen, want[i])) {
            g_error("opcode %s not in the capture", want[i]);
        }
    }
    g_hash_table_destroy(seen);
    seg_free(&seg);
}

static void rnic_wire_verbs_register_tests(void)
{
    /* plain tests next to the qos graph's: they boot their own machines */
    qtest_add_func("rnic-wire/two-vms", test_two_vms);
    qtest_add_func("rnic-wire/hub", test_hub);
    qtest_add_func("rnic-wire/three-vms", test_three_vms);
    qtest_add_func("rnic-wire/capture", test_capture);
}

libqos_init(rnic_wire_verbs_register_tests);
