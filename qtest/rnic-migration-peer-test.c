/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtests of live migration with RDMA state (docs/migration.md): a peer
 * on the segment keeps using our rkeys and QPN.
 *
 *  peer-traffic         A migrates to A' while B's WRITEs, READs and
 *                       atomics at A's rkeys and A's SENDs are in flight:
 *                       every operation completes once, data checked
 *  peer-traffic-lossy   the same through a relay that loses every frame
 *                       of the switchover: RC retransmission recovers
 *
 * Plain GTest cases registered from the rnic-qos-test binary: they boot
 * their own machines (rnic-migration.h).
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "rnic-relay.h"
#include "rnic-migration.h"

/* ---------------------------------------------------------------------- */
/* A peer on the segment keeps using our rkeys and QPN                    */
/* ---------------------------------------------------------------------- */

#define PEER_BUF    (256 * 1024)
#define PEER_WRITES 24
#define PEER_READS  4
#define PEER_ADDS   4
#define PEER_SENDS  8

static const uint8_t mac_a[6] = { 0x52, 0x54, 0x00, 0x00, 0x01, 0x0a };
static const uint8_t mac_b[6] = { 0x52, 0x54, 0x00, 0x00, 0x01, 0x0b };

/* One end of an RC connection across the segment. */
typedef struct Peer {
    uint32_t ctx, pd;
    TvCq *cq;
    TvQp *qp;
    uint64_t buf;
    uint32_t mr;
    uint8_t gid[16];
} Peer;

static void peer_init(QRnic *d, Peer *p, uint8_t host)
{
    memset(p, 0, sizeof(*p));
    p->ctx = tv_net_ctx(d, 0);
    qv_gid(d, 0, p->ctx, 0, host);
    qv_gid_bytes(p->gid, 0, host);
    p->pd = tv_pd(d, p->ctx, 0);
    tv_eq(d, 6, VEC_ASYNC, RNIC_EQ_ASYNC, NULL);
    p->cq = tv_cq(d, 8, RNIC_HANDLE_NONE, 0);
    p->qp = tv_qp(d, RNIC_QPT_RC, p->pd, p->cq, p->cq, NULL, 7, 0);
    p->buf = qv_alloc(d, PEER_BUF, 4096);
    p->mr = tv_reg_mr(d, p->pd, p->buf, PEER_BUF, ALL_RIGHTS, 0, NULL);
}

/*
 * RESET -> RTS towards 'remote' behind MAC 'dmac' (tv_rc_connect's
 * attributes, plus the destination MAC a wire path needs).
 */
static void peer_connect(QRnic *d, Peer *p, const Peer *remote,
                         const uint8_t *dmac)
{
    TvRcPath rp = {
        .hop_limit = 64,
        .dest_qpn = remote->qp->qpn,
        .psn = 5000,
        .mtu = RNIC_MTU_1024,
        .timeout = 14,          /* 67 ms */
        .retry_cnt = 7,
        .rnr_retry = 7,
        .rd_atomic = 8,
        .access = ALL_RIGHTS,
    };

    memcpy(rp.dgid, remote->gid, 16);
    memcpy(rp.dmac, dmac, 6);
    tv_rc_connect_path(d, p->qp, &rp);
}

/*
 * Collect 'want' CQEs from 'cq' of vm 'x' while both VMs' clocks run (the
 * peer's retransmission timer is what recovers frames lost while A was
 * stopped); every CQE must succeed. Returns the wr_ids in order.
 */
static GArray *collect(MigVm *x, TvCq *cq, MigVm *other, unsigned want)
{
    GArray *ids = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    gint64 end = g_get_monotonic_time() + 2 * WAIT_US;
    struct rnic_cqe c;

    while (ids->len < want) {
        if (tv_poll(&x->d, cq, &c, 1)) {
            if (c.status != RNIC_WC_SUCCESS) {
                g_error("wr_id %" PRIu64 " completed with status %u",
                        (uint64_t)c.wr_id, c.status);
            }
            g_array_append_val(ids, c.wr_id);
            continue;
        }
        g_assert(g_get_monotonic_time() < end);
        qtest_clock_step(x->qts, 2000000);
        qtest_clock_step(other->qts, 2000000);
    }
    return ids;
}

static char *mr_lines(const char *tables)
{
    g_auto(GStrv) lines = g_strsplit(tables, "\n", -1);
    GString *out = g_string_new(NULL);
    int i;

    for (i = 0; lines[i]; i++) {
        if (g_str_has_prefix(lines[i], "mr ")) {
            g_string_append_printf(out, "%s\n", lines[i]);
        }
    }
    return g_string_free(out, FALSE);
}

/*
 * A and B on one segment ('-netdev dgram' over unix sockets), an RC
 * connection between them. B fires WRITEs, READs and atomics at A's
 * rkeys, A SENDs to B, and A migrates to A' (same segment address) while
 * all of it is in flight. B must see every operation complete
 * successfully, exactly once, and go on with the same rkeys and QPN.
 * 'lossy': the segment runs through a relay (rnic-relay.h) that loses
 * every frame from before the work is posted until A' runs: everything
 * in flight is lost in the switchover and comes back by RC retransmission
 * (B's ACK timer, A''s timer restored with the time A had left).
 */
static void peer_traffic(bool lossy)
{
    g_autofree char *sa = mig_path("seg-a");
    g_autofree char *sb = mig_path("seg-b");
    g_autofree char *args_a = NULL, *args_b = NULL;
    g_autofree char *mrs_before = NULL, *mrs_after = NULL, *t = NULL;
    g_autoptr(GArray) got_b = NULL;
    g_autoptr(GArray) got_a = NULL;
    RnicRelay *relay = NULL;
    MigVm *a, *b, *a2;
    uint64_t counter, retrans;
    struct rnic_sq_wqe x;
    struct rnic_sge sg;
    Peer pa, pb;
    unsigned i, nb;

    if (lossy) {
        relay = rnic_relay_new(mig_tmpdir(), sa, sb, 7);
    }
    args_a = g_strdup_printf(
        "-M pc -netdev dgram,id=n0,local.type=unix,local.path=%s,"
        "remote.type=unix,remote.path=%s -device rnic,id=rnic0,addr=04.0,"
        "netdev=n0,mac=52:54:00:00:01:0a", sa,
        relay ? rnic_relay_path(relay, 0) : sb);
    args_b = g_strdup_printf(
        "-M pc -netdev dgram,id=n0,local.type=unix,local.path=%s,"
        "remote.type=unix,remote.path=%s -device rnic,id=rnic0,addr=04.0,"
        "netdev=n0,mac=52:54:00:00:01:0b", sb,
        relay ? rnic_relay_path(relay, 1) : sa);
    a = mig_boot(args_a);
    b = mig_boot(args_b);
    peer_init(&a->d, &pa, 1);
    peer_init(&b->d, &pb, 2);
    peer_connect(&a->d, &pa, &pb, mac_b);
    peer_connect(&b->d, &pb, &pa, mac_a);
    counter = pa.buf + PEER_BUF - 64;
    qtest_writeq(a->qts, counter, 0);

    /* the connection works before the migration */
    tv_fill(&b->d, pb.buf, 4096, 1);
    sg = tv_sge(pb.buf, 4096, pb.mr);
    x = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    x.rdma.remote_addr = pa.buf;
    x.rdma.rkey = pa.mr;
    tv_post_send(&b->d, pb.qp, &x, &sg, NULL);
    g_array_unref(collect(b, pb.cq, a, 1));
    t = mig_tables(a);
    mrs_before = mr_lines(t);

    /*
     * A' starts and takes over A's segment address: from now on B's
     * frames reach A', which holds them (paused, incoming) until the
     * switchover; what A sends still goes out.
     */
    a2 = mig_start_dest(a, NULL);
    if (relay) {
        rnic_relay_set_blackhole(relay, RNIC_RELAY_A_TO_B, true);
        rnic_relay_set_blackhole(relay, RNIC_RELAY_B_TO_A, true);
    }

    /* A's SENDs to B and B's receives */
    for (i = 0; i < PEER_SENDS; i++) {
        sg = tv_sge(pb.buf + 128 * 1024 + 4096 * i, 4096, pb.mr);
        tv_post_recv(&b->d, pb.qp, 700 + i, &sg, 1);
    }
    tv_fill(&a->d, pa.buf + 100 * 1024, PEER_SENDS * 2000, 3);
    for (i = 0; i < PEER_SENDS; i++) {
        sg = tv_sge(pa.buf + 100 * 1024 + 2000 * i, 2000, pa.mr);
        x = tv_wqe(600 + i, RNIC_WR_SEND, 1);
        tv_post_send(&a->d, pa.qp, &x, &sg, NULL);
    }
    /* B's WRITEs, READs and atomics at A's rkey */
    tv_fill(&b->d, pb.buf, PEER_WRITES * 4096, 2);
    tv_fill(&a->d, pa.buf + 160 * 1024, PEER_READS * 4096, 4);
    nb = 0;
    for (i = 0; i < PEER_WRITES; i++, nb++) {
        sg = tv_sge(pb.buf + 4096 * i, 4096, pb.mr);
        x = tv_wqe(100 + i, RNIC_WR_RDMA_WRITE, 1);
        x.rdma.remote_addr = pa.buf + 4096 * i;
        x.rdma.rkey = pa.mr;
        tv_post_send(&b->d, pb.qp, &x, &sg, NULL);
        if (i == PEER_WRITES / 2) {
            unsigned k;

            for (k = 0; k < PEER_READS; k++, nb++) {
                sg = tv_sge(pb.buf + 192 * 1024 + 4096 * k, 4096, pb.mr);
                x = tv_wqe(200 + k, RNIC_WR_RDMA_READ, 1);
                x.rdma.remote_addr = pa.buf + 160 * 1024 + 4096 * k;
                x.rdma.rkey = pa.mr;
                tv_post_send(&b->d, pb.qp, &x, &sg, NULL);
            }
            for (k = 0; k < PEER_ADDS; k++, nb++) {
                sg = tv_sge(pb.buf + 240 * 1024 + 8 * k, 8, pb.mr);
                x = tv_wqe(300 + k, RNIC_WR_ATOMIC_FETCH_ADD, 1);
                x.atomic.remote_addr = counter;
                x.atomic.rkey = pa.mr;
                x.atomic.compare_add = 1;
                tv_post_send(&b->d, pb.qp, &x, &sg, NULL);
            }
        }
    }

    /* ... and A migrates now, all of it in flight */
    a = mig_complete(a, a2, true, NULL);
    retrans = tv_stat(&b->d, RNIC_STAT_RETRANSMITS);
    if (relay) {
        RnicRelayStats ab, ba;

        rnic_relay_set_blackhole(relay, RNIC_RELAY_A_TO_B, false);
        rnic_relay_set_blackhole(relay, RNIC_RELAY_B_TO_A, false);
        rnic_relay_get_stats(relay, RNIC_RELAY_A_TO_B, &ab);
        rnic_relay_get_stats(relay, RNIC_RELAY_B_TO_A, &ba);
        g_test_message("lost in the switchover: %u frames A -> B, %u B -> A",
                       ab.dropped, ba.dropped);
        g_assert_cmpuint(ab.dropped, >=, PEER_SENDS);
        g_assert_cmpuint(ba.dropped, >=, PEER_WRITES);
    }

    got_b = collect(b, pb.cq, a, nb + PEER_SENDS);
    got_a = collect(a, pa.cq, b, PEER_SENDS);
    g_test_message("peer retransmissions during the migration: %" PRIu64
                   ", A' resumed with %" PRIu64,
                   tv_stat(&b->d, RNIC_STAT_RETRANSMITS) - retrans,
                   tv_stat(&a->d, RNIC_STAT_RETRANSMITS));
    if (relay) {
        /* what was lost came back by retransmission, on both sides */
        g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_RETRANSMITS), >, retrans);
        g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_RETRANSMITS), >, 0);
    }
    /* exactly once: B's send completions in order, one receive each */
    {
        unsigned next_send = 0, recvs = 0;
        uint64_t want[PEER_WRITES + PEER_READS + PEER_ADDS];
        unsigned k = 0;

        for (i = 0; i < PEER_WRITES; i++) {
            want[k++] = 100 + i;
            if (i == PEER_WRITES / 2) {
                unsigned j;

                for (j = 0; j < PEER_READS; j++) {
                    want[k++] = 200 + j;
                }
                for (j = 0; j < PEER_ADDS; j++) {
                    want[k++] = 300 + j;
                }
            }
        }
        for (i = 0; i < got_b->len; i++) {
            uint64_t id = g_array_index(got_b, uint64_t, i);

            if (id >= 700) {
                g_assert_cmpuint(id, ==, 700 + recvs);
                recvs++;
            } else {
                g_assert_cmpuint(id, ==, want[next_send]);
                next_send++;
            }
        }
        g_assert_cmpuint(recvs, ==, PEER_SENDS);
        g_assert_cmpuint(next_send, ==, nb);
    }
    for (i = 0; i < PEER_SENDS; i++) {
        g_assert_cmpuint(g_array_index(got_a, uint64_t, i), ==, 600 + i);
    }
    /* the data: A' has B's WRITEs, B has A's READ data and SENDs */
    for (i = 0; i < PEER_WRITES; i++) {
        uint8_t x1[4096], x2[4096];

        qtest_memread(a->qts, pa.buf + 4096 * i, x1, 4096);
        qtest_memread(b->qts, pb.buf + 4096 * i, x2, 4096);
        g_assert_cmpmem(x1, 4096, x2, 4096);
    }
    for (i = 0; i < PEER_READS; i++) {
        uint8_t x1[4096], x2[4096];

        qtest_memread(a->qts, pa.buf + 160 * 1024 + 4096 * i, x1, 4096);
        qtest_memread(b->qts, pb.buf + 192 * 1024 + 4096 * i, x2, 4096);
        g_assert_cmpmem(x1, 4096, x2, 4096);
    }
    for (i = 0; i < PEER_SENDS; i++) {
        uint8_t x1[2000], x2[2000];

        qtest_memread(a->qts, pa.buf + 100 * 1024 + 2000 * i, x1, 2000);
        qtest_memread(b->qts, pb.buf + 128 * 1024 + 4096 * i, x2, 2000);
        g_assert_cmpmem(x1, 2000, x2, 2000);
    }
    /* each atomic ran once, each saw the value before it */
    g_assert_cmpuint(qtest_readq(a->qts, counter), ==, PEER_ADDS);
    for (i = 0; i < PEER_ADDS; i++) {
        g_assert_cmpuint(qtest_readq(b->qts, pb.buf + 240 * 1024 + 8 * i), ==,
                         i);
    }

    /* the same rkey and QPN, after the migration */
    g_free(t);
    t = mig_tables(a);
    mrs_after = mr_lines(t);
    g_assert_cmpstr(mrs_after, ==, mrs_before);
    tv_fill(&b->d, pb.buf, 8192, 9);
    sg = tv_sge(pb.buf, 8192, pb.mr);
    x = tv_wqe(900, RNIC_WR_RDMA_WRITE, 1);
    x.rdma.remote_addr = pa.buf + 8192;
    x.rdma.rkey = pa.mr;
    tv_post_send(&b->d, pb.qp, &x, &sg, NULL);
    g_array_unref(collect(b, pb.cq, a, 1));
    {
        uint8_t x1[8192], x2[8192];

        qtest_memread(a->qts, pa.buf + 8192, x1, 8192);
        qtest_memread(b->qts, pb.buf, x2, 8192);
        g_assert_cmpmem(x1, 8192, x2, 8192);
    }
    g_free(pa.cq);
    g_free(pa.qp);
    g_free(pb.cq);
    g_free(pb.qp);
    mig_free(b);
    mig_free(a);
    if (relay) {
        rnic_relay_free(relay);
    }
    mig_cleanup_dir();
}

static void test_peer_traffic(void)
{
    peer_traffic(false);
}

static void test_peer_traffic_lossy(void)
{
    peer_traffic(true);
}

static void rnic_migration_peer_register_tests(void)
{
    qtest_add_func("rnic-migration/peer-traffic", test_peer_traffic);
    qtest_add_func("rnic-migration/peer-traffic-lossy",
                   test_peer_traffic_lossy);
}

libqos_init(rnic_migration_peer_register_tests);
