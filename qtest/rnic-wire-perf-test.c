/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest of RoCEv2 performance (-m perf) between QEMU instances.
 *
 *  perf         WRITE/SEND throughput and small-message latency between
 *               two QEMU processes (docs/benchmarks.md), the round trip of
 *               a raw peer through one rnic; RNIC_PERF_SECS per
 *               measurement (default 2)
 *
 * Plain GTest cases registered from the rnic-qos-test binary: they boot
 * their own machines (rnic-wire.h).
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include <poll.h>
#include "libqtest.h"
#include "qemu/module.h"
#include "qemu/bswap.h"
#include "rnic-wire.h"

/* ---------------------------------------------------------------------- */
/* Performance (-m perf)                                                  */
/* ---------------------------------------------------------------------- */

/*
 * Post 'n' WQEs (one slot each, from 'w', wr_id = index) in one memory
 * write and one doorbell; every 'sig'th is signaled.
 */
static void perf_post(WVm *vm, TvQp *qp, const struct rnic_sq_wqe *w,
                      const struct rnic_sge *s, unsigned n, unsigned sig)
{
    uint32_t stride = 1u << qp->sq_shift, mask = (1u << qp->sq_log) - 1;
    g_autofree uint8_t *buf = g_malloc0((size_t)n * stride);
    unsigned i, first = qp->sq_prod & mask, done = 0;

    for (i = 0; i < n; i++) {
        struct rnic_sq_wqe x = *w;

        x.wr_id = qp->sq_prod + i;
        x.flags = (x.wr_id % sig == sig - 1) ? RNIC_WQE_SIGNALED : 0;
        memcpy(buf + (size_t)i * stride, &x, sizeof(x));
        memcpy(buf + (size_t)i * stride + 64, s, sizeof(*s));
    }
    while (done < n) {
        unsigned k = MIN(n - done, mask + 1 - ((first + done) & mask));

        qtest_memwrite(vm->qts, qp->sq + ((uint64_t)((first + done) & mask)
                                          << qp->sq_shift),
                       buf + (size_t)done * stride, (size_t)k * stride);
        done += k;
    }
    qp->sq_prod += n;
    rnic_doorbell(&vm->d, 0, RNIC_DB_SQ,
                  rnic_db_value(qp->handle, 0, qp->sq_prod));
}

static void perf_post_recv(WVm *vm, TvQp *qp, const struct rnic_sge *s,
                           unsigned n)
{
    uint32_t stride = 1u << qp->rq_shift, mask = (1u << qp->rq_log) - 1;
    g_autofree uint8_t *buf = g_malloc0((size_t)n * stride);
    unsigned i, first = qp->rq_prod & mask, done = 0;

    for (i = 0; i < n; i++) {
        struct rnic_rq_wqe *r = (struct rnic_rq_wqe *)(buf + i * stride);

        r->wr_id = qp->rq_prod + i;
        r->num_sge = 1;
        memcpy(r + 1, s, sizeof(*s));
    }
    while (done < n) {
        unsigned k = MIN(n - done, mask + 1 - ((first + done) & mask));

        qtest_memwrite(vm->qts, qp->rq + ((uint64_t)((first + done) & mask)
                                          << qp->rq_shift),
                       buf + (size_t)done * stride, (size_t)k * stride);
        done += k;
    }
    qp->rq_prod += n;
    rnic_doorbell(&vm->d, 0, RNIC_DB_RQ,
                  rnic_db_value(qp->handle, 0, qp->rq_prod));
}

/* Consume every CQE there is (one read of the ring); returns the count. */
static unsigned perf_poll(WVm *vm, unsigned max)
{
    TvCq *cq = vm->cq;
    uint32_t mask = (1u << cq->log) - 1;
    struct rnic_cqe c[64];
    unsigned n = 0, got, i;

    while (n < max) {
        uint32_t slot = cq->cons & mask;
        unsigned k = MIN(MIN(64u, max - n), mask + 1 - slot);

        qtest_memread(vm->qts, cq->ring + slot * sizeof(c[0]), c,
                      k * sizeof(c[0]));
        for (got = 0, i = 0; i < k; i++) {
            if ((c[i].owner & 1) != ((((cq->cons + i) >> cq->log) & 1) ^ 1)) {
                break;
            }
            g_assert_cmpuint(c[i].status, ==, RNIC_WC_SUCCESS);
            got++;
        }
        cq->cons += got;
        n += got;
        if (got < k) {
            break;
        }
    }
    if (n) {
        rnic_doorbell(&vm->d, 0, RNIC_DB_CQ,
                      rnic_db_value(cq->handle, 0, cq->cons));
    }
    return n;
}

/* Receives B has posted and not consumed yet (left for the next run). */
static unsigned perf_recv_left;

/* Throughput of 'op' (WRITE or SEND) of 'size' bytes from A to B. */
static double perf_bw(WVm *a, WVm *b, WvPair *p, uint8_t op, uint32_t size,
                      double secs)
{
    const unsigned depth = 64, batch = 16, sig = 16;
    struct rnic_sq_wqe w = tv_wqe(0, op, 1);
    struct rnic_sge s = tv_sge(a->buf, size, a->mr[0]);
    /* receives fit any size (some may be left over from a smaller run) */
    struct rnic_sge r = tv_sge(b->buf, 1u << 20, b->mr[0]);
    unsigned inflight = 0, recv_posted = 0, recv_done = 0;
    uint64_t rtx0 = tv_stat(&a->d, RNIC_STAT_RETRANSMITS);
    uint64_t ops = 0;
    gint64 t0, end;

    w.rdma.remote_addr = b->buf;
    w.rdma.rkey = b->mr[0];
    if (op == RNIC_WR_SEND) {
        recv_posted = perf_recv_left;
        if (recv_posted < 128) {
            perf_post_recv(b, p->b, &r, 128 - recv_posted);
            recv_posted = 128;
        }
    }
    t0 = g_get_monotonic_time();
    end = t0 + secs * G_USEC_PER_SEC;
    while (g_get_monotonic_time() < end || inflight) {
        unsigned n;

        if (g_get_monotonic_time() < end && inflight + batch <= depth) {
            perf_post(a, p->a, &w, &s, batch, sig);
            inflight += batch;
        }
        n = perf_poll(a, inflight / sig) * sig;
        inflight -= n;
        ops += n;
        if (op == RNIC_WR_SEND) {
            n = perf_poll(b, recv_posted - recv_done);
            recv_done += n;
            if (recv_posted - recv_done < 96) {
                perf_post_recv(b, p->b, &r, 32);
                recv_posted += 32;
            }
        }
        if (!n && inflight == depth) {
            g_usleep(50);
        }
    }
    if (op == RNIC_WR_SEND) {
        while (recv_done < ops) {
            recv_done += perf_poll(b, ops - recv_done);
        }
        perf_recv_left = recv_posted - recv_done;
    }
    if (tv_stat(&a->d, RNIC_STAT_RETRANSMITS) != rtx0) {
        g_test_message("%u-byte %s: %" PRIu64 " retransmissions", size,
                       op == RNIC_WR_SEND ? "SEND" : "WRITE",
                       tv_stat(&a->d, RNIC_STAT_RETRANSMITS) - rtx0);
    }
    return ops * (double)size / ((g_get_monotonic_time() - t0) / 1e6);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Round trip of one small operation, driven by the test (median, us). */
static double perf_lat(WVm *a, WVm *b, WvPair *p, uint8_t op, unsigned iters)
{
    struct rnic_sq_wqe w = tv_wqe(0, op, 1);
    struct rnic_sge s = tv_sge(a->buf, 64, a->mr[0]);
    g_autofree double *t = g_new(double, iters);
    unsigned i;

    w.rdma.remote_addr = b->buf;
    w.rdma.rkey = b->mr[0];
    for (i = 0; i < iters; i++) {
        gint64 t0 = g_get_monotonic_time();

        perf_post(a, p->a, &w, &s, 1, 1);
        while (!perf_poll(a, 1)) {
            ;
        }
        t[i] = g_get_monotonic_time() - t0;
    }
    qsort(t, iters, sizeof(*t), cmp_double);
    return t[iters / 2];
}

/*
 * Round trip through one rnic without any driver in the loop: the test, a
 * raw peer on a unix datagram socket, sends a 64-byte RDMA WRITE (or READ
 * request) and waits for the ACK (or READ response). Median, in us.
 */
static double perf_raw_rtt(bool read, unsigned iters)
{
    Raw t;
    TvQp *qp;
    uint8_t data[64] = { 0 }, frame[256], rx[256];
    g_autofree double *d = g_new(double, iters);
    uint32_t psn = RQ_PSN;
    unsigned i;
    double med;

    raw_init(&t);
    qp = raw_qp(&t, PEER_QPN);
    for (i = 0; i < iters; i++) {
        RnicRoceHdr h = raw_write(&t, qp, psn, t.region + 4096, t.mr, data,
                                  read ? 0 : sizeof(data));
        struct pollfd p = { .fd = t.fd, .events = POLLIN };
        size_t len;
        gint64 t0;

        if (read) {
            h.opcode = RNIC_ROCE_OP_RDMA_READ_REQUEST;
            h.reth.dma_len = sizeof(data);
        }
        len = raw_encode(&h, frame, sizeof(frame));
        t0 = g_get_monotonic_time();
        raw_send_bytes(&t, frame, len);
        g_assert_cmpint(poll(&p, 1, 2000), ==, 1);
        g_assert_cmpint(recv(t.fd, rx, sizeof(rx), 0), >, 0);
        d[i] = g_get_monotonic_time() - t0;
        psn = (psn + 1) & RNIC_ROCE_PSN_MASK;
    }
    g_free(qp);
    raw_free(&t);
    qsort(d, iters, sizeof(*d), cmp_double);
    med = d[iters / 2];
    return med;
}

static void test_perf(void)
{
    static const uint32_t sizes[] = { 4096, 65536, 1u << 20 };
    Seg seg;
    WVm *a, *b;
    WvPair p;
    double secs = g_getenv("RNIC_PERF_SECS") ?
                  g_ascii_strtod(g_getenv("RNIC_PERF_SECS"), NULL) : 2.0;
    unsigned i;
    double lat_w, lat_r, lat_nop;
    gint64 t0;

    seg_init(&seg);
    boot_stream_pair(&seg, &a, &b, NULL);
    p = wv_rc_pair(a, b, 0, &path_4k, 8);
    /* connect (the stream peer attaches asynchronously) and warm up */
    perf_bw(a, b, &p, RNIC_WR_RDMA_WRITE, 4096, 0.2);
    for (i = 0; i < G_N_ELEMENTS(sizes); i++) {
        double bw = perf_bw(a, b, &p, RNIC_WR_RDMA_WRITE, sizes[i], secs);

        g_test_maximized_result(bw, "RDMA WRITE %7u B: %8.1f MB/s "
                                "(%.0f ops/s)", sizes[i], bw / 1e6,
                                bw / sizes[i]);
    }
    for (i = 0; i < G_N_ELEMENTS(sizes); i++) {
        double bw = perf_bw(a, b, &p, RNIC_WR_SEND, sizes[i], secs);

        g_test_maximized_result(bw, "SEND       %7u B: %8.1f MB/s "
                                "(%.0f ops/s)", sizes[i], bw / 1e6,
                                bw / sizes[i]);
    }
    lat_w = perf_lat(a, b, &p, RNIC_WR_RDMA_WRITE, 2000);
    lat_r = perf_lat(a, b, &p, RNIC_WR_RDMA_READ, 2000);
    /* what one empty poll of the CQ costs the driver (qtest round trip) */
    t0 = g_get_monotonic_time();
    for (i = 0; i < 2000; i++) {
        perf_poll(a, 1);
    }
    lat_nop = (g_get_monotonic_time() - t0) / 2000.0;
    g_test_minimized_result(lat_w, "RDMA WRITE 64 B round trip (post -> "
                            "CQE): %.1f us median", lat_w);
    g_test_minimized_result(lat_r, "RDMA READ  64 B round trip (post -> "
                            "CQE): %.1f us median", lat_r);
    g_test_minimized_result(lat_nop, "driver overhead: one CQ poll %.1f us, "
                            "one post ~%.1f us", lat_nop, 2 * lat_nop);
    lat_w = perf_raw_rtt(false, 5000);
    lat_r = perf_raw_rtt(true, 5000);
    g_test_minimized_result(lat_w, "raw peer <-> rnic, 64 B WRITE -> ACK: "
                            "%.1f us median", lat_w);
    g_test_minimized_result(lat_r, "raw peer <-> rnic, 64 B READ -> "
                            "response: %.1f us median", lat_r);
    g_test_message("A: TX frames %" PRIu64 ", RX frames %" PRIu64
                   ", retransmits %" PRIu64 ", TX dropped %" PRIu64,
                   tv_stat(&a->d, RNIC_STAT_TX_FRAMES),
                   tv_stat(&a->d, RNIC_STAT_RX_FRAMES),
                   tv_stat(&a->d, RNIC_STAT_RETRANSMITS),
                   tv_stat(&a->d, RNIC_STAT_TX_DROPPED));
    wv_pair_free(&p);
    wv_quit(a);
    wv_quit(b);
    seg_free(&seg);
}

static void rnic_wire_perf_register_tests(void)
{
    if (g_test_perf()) {
        qtest_add_func("rnic-wire/perf", test_perf);
    }
}

libqos_init(rnic_wire_perf_register_tests);
