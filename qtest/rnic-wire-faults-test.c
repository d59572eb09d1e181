/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtests of RoCEv2 on a faulty wire: a relay (rnic-relay.c) between two
 * QEMU instances on '-netdev dgram'.
 *
 *  faults       the relay drops, duplicates, reorders and corrupts frames;
 *               RC traffic completes exactly once, in order, data
 *               verified; every corrupted frame is rejected by the ICRC.
 *               Rates: default drop 5 %, dup 2 %, reorder 5 %, corrupt
 *               3 %, or RNIC_WIRE_FAULTS="drop=0.15,dup=0.05,reorder=0.1,
 *               corrupt=0.05"; operations: 250 or RNIC_WIRE_FAULT_OPS (at
 *               most 340)
 *  retry-exceeded, rnr-exceeded   the error completions, no hang
 *
 * Plain GTest cases registered from the rnic-qos-test binary: they boot
 * their own machines (rnic-wire.h).
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/module.h"
#include "qemu/bswap.h"
#include "rnic-relay.h"
#include "rnic-wire.h"

/* ---------------------------------------------------------------------- */
/* Faults on the wire                                                     */
/* ---------------------------------------------------------------------- */

typedef struct Lossy {
    Seg seg;
    WVm *a, *b;
    RnicRelay *relay;
} Lossy;

static void lossy_boot(Lossy *l, uint32_t seed)
{
    g_autofree char *pa = NULL, *pb = NULL, *na = NULL, *nb = NULL;

    seg_init(&l->seg);
    pa = seg_path(&l->seg, "a.sock");
    pb = seg_path(&l->seg, "b.sock");
    l->relay = rnic_relay_new(l->seg.dir, pa, pb, seed);
    na = g_strdup_printf("dgram,local.type=unix,local.path=%s,"
                         "remote.type=unix,remote.path=%s", pa,
                         rnic_relay_path(l->relay, 0));
    nb = g_strdup_printf("dgram,local.type=unix,local.path=%s,"
                         "remote.type=unix,remote.path=%s", pb,
                         rnic_relay_path(l->relay, 1));
    l->a = wv_boot(1, na, NULL, 100);
    l->b = wv_boot(2, nb, NULL, 100);
}

static void lossy_free(Lossy *l)
{
    if (l->a) {
        wv_quit(l->a);
    }
    if (l->b) {
        wv_quit(l->b);
    }
    rnic_relay_free(l->relay);
    seg_free(&l->seg);
}

/* Wait until the relay has seen no frame for 100 ms (wire quiet). */
static void lossy_settle(Lossy *l)
{
    RnicRelayStats s0, s1;
    unsigned last = ~0u;

    for (;;) {
        rnic_relay_get_stats(l->relay, 0, &s0);
        rnic_relay_get_stats(l->relay, 1, &s1);
        if (s0.frames + s1.frames == last) {
            return;
        }
        last = s0.frames + s1.frames;
        g_usleep(100000);
    }
}

/* Layout of the fault test in each VM's buffer (op k, 8 KiB slots). */
#define F_SLOT          8192u
#define F_SRC(k)        ((uint64_t)(k) * F_SLOT)                /* A, B */
#define F_DST(n, k)     ((uint64_t)(n) * F_SLOT + F_SLOT * (k)) /* A, B */
#define F_RES(n, k)     ((uint64_t)(n) * 2 * F_SLOT + 8 * (k))  /* A */
#define F_CTR(n)        ((uint64_t)(n) * 2 * F_SLOT)            /* B */

static uint32_t f_len(unsigned k)
{
    return 1 + (k * 2654435761u) % 8000;
}

static void test_faults(void)
{
    RnicRelayFaults f = { .drop = 0.05, .dup = 0.02, .reorder = 0.05,
                          .corrupt = 0.03 };
    const char *nops_env = g_getenv("RNIC_WIRE_FAULT_OPS");
    unsigned nops = nops_env ? atoi(nops_env) : 250;
    const unsigned window = 16;
    Lossy l;
    WvPair p;
    WVm *a, *b;
    unsigned posted = 0, done = 0, recvd = 0, k;
    uint64_t sum = 0, cas = 0;
    GArray *sends = g_array_new(FALSE, TRUE, sizeof(unsigned));
    RnicRelayStats st[2];
    g_autofree uint8_t *got = NULL, *want = NULL;
    WvPath path = { RNIC_MTU_1024, 10, 7, 7 };
    gint64 t0;

    g_assert_cmpuint(nops, <=, WV_BUF / (3 * F_SLOT) - 1);
    rnic_relay_faults_from_env("RNIC_WIRE_FAULTS", &f);
    lossy_boot(&l, 0x5eed);
    a = l.a;
    b = l.b;
    p = wv_rc_pair(a, b, 0, &path, 8);
    /* sources: A's slots (WRITE, SEND), B's slots (READ) */
    wv_fill(a, a->buf, (size_t)nops * F_SLOT, 1);
    wv_fill(b, b->buf, (size_t)nops * F_SLOT, 2);
    qtest_memset(b->qts, b->buf + F_CTR(nops), 0, 16);
    rnic_relay_set_faults(l.relay, RNIC_RELAY_A_TO_B, &f);
    rnic_relay_set_faults(l.relay, RNIC_RELAY_B_TO_A, &f);
    t0 = g_get_monotonic_time();

    while (done < nops) {
        struct rnic_cqe c;
        bool idle = true;

        while (posted < nops && posted - done < window) {
            struct rnic_sq_wqe w;
            struct rnic_sge s, r;

            k = posted++;
            switch (k % 5) {
            case 0:         /* WRITE A.src[k] -> B.dst[k] */
                s = tv_sge(a->buf + F_SRC(k), f_len(k), a->mr[0]);
                w = tv_wqe(k, RNIC_WR_RDMA_WRITE, 1);
                w.rdma.remote_addr = b->buf + F_DST(nops, k);
                w.rdma.rkey = b->mr[0];
                tv_post_send(&a->d, p.a, &w, &s, NULL);
                break;
            case 1:         /* READ B.src[k] -> A.dst[k] */
                r = tv_sge(a->buf + F_DST(nops, k), f_len(k), a->mr[0]);
                w = tv_wqe(k, RNIC_WR_RDMA_READ, 1);
                w.rdma.remote_addr = b->buf + F_SRC(k);
                w.rdma.rkey = b->mr[0];
                tv_post_send(&a->d, p.a, &w, &r, NULL);
                break;
            case 2:         /* SEND A.src[k] -> a receive at B.dst[k] */
                r = tv_sge(b->buf + F_DST(nops, k), F_SLOT, b->mr[0]);
                tv_post_recv(&b->d, p.b, k, &r, 1);
                s = tv_sge(a->buf + F_SRC(k), f_len(k), a->mr[0]);
                w = tv_wqe(k, RNIC_WR_SEND, 1);
                tv_post_send(&a->d, p.a, &w, &s, NULL);
                g_array_append_val(sends, k);
                break;
            case 3:         /* FETCH_ADD k */
                r = tv_sge(a->buf + F_RES(nops, k), 8, a->mr[0]);
                w = tv_wqe(k, RNIC_WR_ATOMIC_FETCH_ADD, 1);
                w.atomic.remote_addr = b->buf + F_CTR(nops);
                w.atomic.rkey = b->mr[0];
                w.atomic.compare_add = k;
                tv_post_send(&a->d, p.a, &w, &r, NULL);
                break;
            default:        /* CMP_SWP previous -> k: only in order */
                r = tv_sge(a->buf + F_RES(nops, k), 8, a->mr[0]);
                w = tv_wqe(k, RNIC_WR_ATOMIC_CMP_SWP, 1);
                w.atomic.remote_addr = b->buf + F_CTR(nops) + 8;
                w.atomic.rkey = b->mr[0];
                w.atomic.compare_add = cas;
                w.atomic.swap = k;
                cas = k;
                tv_post_send(&a->d, p.a, &w, &r, NULL);
                break;
            }
        }
        while (tv_poll(&a->d, a->cq, &c, 1)) {
            /* exactly once, in order */
            g_assert_cmpuint(c.wr_id, ==, done);
            if (c.status != RNIC_WC_SUCCESS) {
                g_error("op %u completed with status %u", done, c.status);
            }
            if (done % 5 == 3) {
                g_assert_cmpuint(qtest_readq(a->qts, a->buf +
                                             F_RES(nops, done)), ==, sum);
                sum += done;
            } else if (done % 5 == 4) {
                g_assert_cmpuint(qtest_readq(a->qts, a->buf +
                                             F_RES(nops, done)), ==,
                                 done >= 9 ? done - 5 : 0);
            }
            done++;
            idle = false;
        }
        while (tv_poll(&b->d, b->cq, &c, 1)) {
            unsigned kk = g_array_index(sends, unsigned, recvd);

            g_assert_cmpuint(c.wr_id, ==, kk);
            g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
            g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, f_len(kk));
            recvd++;
            idle = false;
        }
        if (idle) {
            g_assert(g_get_monotonic_time() < t0 + 5 * WV_WAIT_US);
            wv_tick(WV_STEP_NS * 5);
        }
    }
    g_assert_cmpuint(recvd, ==, sends->len);

    /* the data, in bulk */
    got = g_malloc((size_t)nops * F_SLOT);
    want = g_malloc((size_t)nops * F_SLOT);
    qtest_bufread(b->qts, b->buf + F_DST(nops, 0), got,
                  (size_t)nops * F_SLOT);
    wv_pattern(want, (size_t)nops * F_SLOT, 1);
    for (k = 0; k < nops; k++) {
        if (k % 5 == 0 || k % 5 == 2) {     /* WRITE, SEND into B */
            g_assert_cmpmem(got + F_SLOT * k, f_len(k), want + F_SLOT * k,
                            f_len(k));
        }
    }
    qtest_bufread(a->qts, a->buf + F_DST(nops, 0), got,
                  (size_t)nops * F_SLOT);
    wv_pattern(want, (size_t)nops * F_SLOT, 2);
    for (k = 0; k < nops; k++) {
        if (k % 5 == 1) {                   /* READ into A */
            g_assert_cmpmem(got + F_SLOT * k, f_len(k), want + F_SLOT * k,
                            f_len(k));
        }
    }
    g_assert_cmpuint(qtest_readq(b->qts, b->buf + F_CTR(nops)), ==, sum);
    g_assert_cmpuint(qtest_readq(b->qts, b->buf + F_CTR(nops) + 8), ==, cas);

    /* every corrupted frame was caught by the ICRC, and only those */
    lossy_settle(&l);
    rnic_relay_get_stats(l.relay, RNIC_RELAY_A_TO_B, &st[0]);
    rnic_relay_get_stats(l.relay, RNIC_RELAY_B_TO_A, &st[1]);
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_RX_ERR_ICRC), ==,
                     st[0].corrupted);
    g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_RX_ERR_ICRC), ==,
                     st[1].corrupted);
    /*
     * A receiver QEMU that does not read for a second (a loaded host, a
     * sanitizer build) costs the relay a frame: one more loss to recover,
     * reported below, not an error.
     */
    if (f.drop > 0 || f.corrupt > 0) {
        g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_RETRANSMITS), >, 0);
    }
    g_test_message("faults drop %.3f dup %.3f reorder %.3f corrupt %.3f, "
                   "%u ops in %.1f s; A->B %u frames (%u dropped, %u dup, "
                   "%u reordered, %u corrupted), B->A %u (%u, %u, %u, %u); "
                   "not delivered %u; A retransmits %" PRIu64
                   ", ICRC rejects A %" PRIu64 " B %" PRIu64,
                   f.drop, f.dup, f.reorder, f.corrupt, nops,
                   (g_get_monotonic_time() - t0) / 1e6, st[0].frames,
                   st[0].dropped, st[0].duplicated, st[0].reordered,
                   st[0].corrupted, st[1].frames, st[1].dropped,
                   st[1].duplicated, st[1].reordered, st[1].corrupted,
                   st[0].failed + st[1].failed,
                   tv_stat(&a->d, RNIC_STAT_RETRANSMITS),
                   tv_stat(&a->d, RNIC_STAT_RX_ERR_ICRC),
                   tv_stat(&b->d, RNIC_STAT_RX_ERR_ICRC));
    g_array_free(sends, TRUE);
    wv_pair_free(&p);
    lossy_free(&l);
}

/* The peer is gone: RETRY_EXC_ERR after retry_cnt retransmissions. */
static void test_retry_exceeded(void)
{
    WvPath path = { RNIC_MTU_1024, 10, 3, 7 };
    Lossy l;
    WvPair p;
    struct rnic_sq_wqe w;
    struct rnic_sge s;
    struct rnic_cqe c;
    RnicRelayStats st;

    lossy_boot(&l, 1);
    p = wv_rc_pair(l.a, l.b, 0, &path, 4);
    s = tv_sge(l.a->buf, 2000, l.a->mr[0]);
    w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = l.b->buf;
    w.rdma.rkey = l.b->mr[0];
    tv_post_send(&l.a->d, p.a, &w, &s, NULL);
    wv_expect(l.a, 1, RNIC_WC_RDMA_WRITE, 2000);
    /* B's process exits */
    wv_quit(l.b);
    l.b = NULL;
    w.wr_id = 2;
    tv_post_send(&l.a->d, p.a, &w, &s, NULL);
    w.wr_id = 3;
    tv_post_send(&l.a->d, p.a, &w, &s, NULL);
    c = wv_wait(l.a);
    g_assert_cmpuint(c.wr_id, ==, 2);
    g_assert_cmpuint(c.status, ==, RNIC_WC_RETRY_EXC_ERR);
    c = wv_wait(l.a);
    g_assert_cmpuint(c.wr_id, ==, 3);
    g_assert_cmpuint(c.status, ==, RNIC_WC_WR_FLUSH_ERR);
    g_assert_cmpuint(tv_stat(&l.a->d, RNIC_STAT_RETRANSMITS), ==, 3);
    /* 1 + 3 transmissions of the 2 + 2 packets, none arrived */
    lossy_settle(&l);
    rnic_relay_get_stats(l.relay, RNIC_RELAY_A_TO_B, &st);
    g_assert_cmpuint(st.failed, ==, 4 * 4);
    g_free(p.a);
    g_free(p.b);
    lossy_free(&l);
}

/* No receive posted at the peer: RNR NAKs, then RNR_RETRY_EXC_ERR. */
static void test_rnr_exceeded(void)
{
    WvPath path = { RNIC_MTU_1024, 10, 7, 2 };
    Lossy l;
    WvPair p;
    struct rnic_sq_wqe w;
    struct rnic_sge s;
    struct rnic_cqe c;
    RnicRelayStats st;

    lossy_boot(&l, 2);
    p = wv_rc_pair(l.a, l.b, 0, &path, 4);
    s = tv_sge(l.a->buf, 100, l.a->mr[0]);
    w = tv_wqe(1, RNIC_WR_SEND, 1);
    tv_post_send(&l.a->d, p.a, &w, &s, NULL);
    c = wv_wait(l.a);
    g_assert_cmpuint(c.wr_id, ==, 1);
    g_assert_cmpuint(c.status, ==, RNIC_WC_RNR_RETRY_EXC_ERR);
    lossy_settle(&l);
    rnic_relay_get_stats(l.relay, RNIC_RELAY_B_TO_A, &st);
    g_assert_cmpuint(st.frames, ==, 3);     /* three RNR NAKs */
    rnic_relay_get_stats(l.relay, RNIC_RELAY_A_TO_B, &st);
    g_assert_cmpuint(st.frames, ==, 3);     /* the SEND and two retries */
    g_assert_cmpuint(tv_stat(&l.b->d, RNIC_STAT_RX_DROPPED), ==, 0);
    wv_pair_free(&p);
    lossy_free(&l);
}

static void rnic_wire_faults_register_tests(void)
{
    /* plain tests next to the qos graph's: they boot their own machines */
    qtest_add_func("rnic-wire/faults", test_faults);
    qtest_add_func("rnic-wire/retry-exceeded", test_retry_exceeded);
    qtest_add_func("rnic-wire/rnr-exceeded", test_rnr_exceeded);
}

libqos_init(rnic_wire_faults_register_tests);
