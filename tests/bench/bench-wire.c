/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Wire benchmark: two engines back to back through the RoCEv2 wire path —
 * requester -> rnic_wire_xmit (headers, ICRC over the payload mapped in
 * place) -> the host's transmit (the fake host copies the frame, as a
 * socket would) -> the other engine's rnic_engine_receive (classify,
 * decode, ICRC check, route) -> responder placement into guest memory, and
 * the ACKs back the same way. No QEMU: this is the device's own cost per
 * frame, the ceiling of what two QEMU processes can reach.
 *
 * The receive path alone (--op=RX): prebuilt UC RDMA WRITE ONLY frames
 * (consecutive PSNs) from a peer into one engine's rnic_engine_receive
 * (classify, decode, ICRC check, route, placement); UC answers nothing.
 *
 * Not a test: build with 'meson compile -C build/project', run
 * build/project/tests/bench/bench-wire [--time=ms] [--op=WRITE|SEND|RX]
 * [--size=bytes] [--mtu=1024|4096] [--cpu]
 * --cpu: times (and bounds) each run in the process's CPU time rather than
 * wall time: rates that hold on a loaded machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rnic-test-verbs.h"
#include "rnic-roce.h"

#define REGION      (16u << 20)
#define SQ_LOG      8
#define BATCH       32          /* WQEs per doorbell (fewer when large) */
#define SIGNAL_EVERY 8

typedef struct Side {
    TestHost *h;
    uint32_t ctx, pd, mr;
    TvCq *cq;
    TvQp *qp;
    uint64_t buf;
} Side;

/* CLOCK_PROCESS_CPUTIME_ID with --cpu */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(bench_clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void side_init(Side *s, uint8_t host)
{
    RnicEngineConfig cfg;

    rnic_engine_config_defaults(&cfg);
    cfg.mac[5] = host;
    s->h = test_host_new_sized(&cfg, REGION + (16u << 20));
    tv_enable(s->h, 6);
    s->ctx = tv_net_ctx(s->h, 0);
    tv_gid(s->h, 0, s->ctx, host);
    s->pd = tv_pd(s->h, s->ctx, 0);
    s->cq = tv_cq(s->h, 12, RNIC_HANDLE_NONE, 0);
    tv_sq_shift = 7;
    s->qp = tv_qp(s->h, RNIC_QPT_RC, s->pd, s->cq, s->cq, NULL, SQ_LOG, 0);
    s->buf = test_alloc(s->h, REGION, 4096);
    s->mr = tv_reg_mr(s->h, s->pd, s->buf, REGION, TV_ACCESS_ALL, 0, NULL);
}

static void connect(Side *s, Side *peer, uint8_t peer_host, uint8_t mtu)
{
    struct rnic_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = RNIC_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
                        RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC;
    tv_modify(s->h, s->qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX |
              RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS);
    a.qp_state = RNIC_QPS_RTR;
    a.path_mtu = mtu;
    a.dest_qp_num = peer->qp->qpn;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = 1;
    tv_gid_bytes(a.av.dgid, peer->ctx, peer_host);
    a.av.dmac[0] = 0x52;
    a.av.dmac[1] = 0x54;
    a.av.dmac[3] = 0x12;
    a.av.dmac[4] = 0x34;
    a.av.dmac[5] = peer_host;
    tv_modify(s->h, s->qp, &a, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU |
              RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC |
              RNIC_QP_MIN_RNR_TIMER);
    a.qp_state = RNIC_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 16;
    g_assert_cmpuint(tv_modify(s->h, s->qp, &a, RNIC_QP_STATE |
                               RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT |
                               RNIC_QP_RNR_RETRY | RNIC_QP_SQ_PSN |
                               RNIC_QP_MAX_QP_RD_ATOMIC), ==, RNIC_ST_OK);
}

/* Deliver every frame in flight, both ways, until the wire is quiet. */
static uint64_t pump(Side *s)
{
    uint64_t frames = 0;
    bool moved;

    do {
        int i;

        moved = false;
        for (i = 0; i < 2; i++) {
            GPtrArray *out = test_host_take_frames(s[i].h);
            guint k;

            if (!out) {
                continue;
            }
            for (k = 0; k < out->len; k++) {
                GByteArray *f = g_ptr_array_index(out, k);
                struct iovec iov = { f->data, f->len };

                rnic_engine_receive(s[1 - i].h->engine, &iov, 1);
            }
            frames += out->len;
            g_ptr_array_free(out, TRUE);
            moved = true;
        }
    } while (moved);
    return frames;
}

/* ops/s of 'opcode' with 'size' bytes from side 0 to side 1. */
static double run(Side *s, uint8_t opcode, uint32_t size, uint64_t ms,
                  double *ns_per_frame)
{
    struct rnic_sq_wqe w;
    struct rnic_sge sg = tv_sge(s[0].buf, size, s[0].mr);
    struct rnic_sge rg = tv_sge(s[1].buf, size, s[1].mr);
    uint64_t t0 = now_ns(), t, ops = 0, frames = 0;
    /* at most ~1 MiB per round: the frames in flight stay in the cache */
    unsigned batch = MAX(1, MIN(BATCH, (1u << 20) / size));
    unsigned signal = MIN(SIGNAL_EVERY, batch);
    unsigned posted = 0, i;
    struct rnic_cqe c[64];

    memset(&w, 0, sizeof(w));
    w.opcode = opcode;
    w.num_sge = 1;
    w.rdma.remote_addr = s[1].buf;
    w.rdma.rkey = s[1].mr;
    do {
        for (i = 0; i < batch; i++) {
            w.wr_id = posted;
            w.flags = (posted % signal == signal - 1) ?
                      RNIC_WQE_SIGNALED : 0;
            if (opcode == RNIC_WR_SEND) {
                tv_write_recv(s[1].h, s[1].qp, posted, &rg, 1);
            }
            tv_write_send(s[0].h, s[0].qp, &w, &sg, NULL);
            posted++;
        }
        if (opcode == RNIC_WR_SEND) {
            tv_ring_rq(s[1].h, s[1].qp);
        }
        tv_ring_sq(s[0].h, s[0].qp);
        frames += pump(s);
        while (tv_poll(s[0].h, s[0].cq, c, 64) > 0) {
            ;
        }
        while (tv_poll(s[1].h, s[1].cq, c, 64) > 0) {
            ;
        }
        ops += batch;
        t = now_ns();
    } while (t - t0 < ms * 1000000ull);
    *ns_per_frame = (double)(t - t0) / frames;
    return ops * 1e9 / (t - t0);
}

/* Frames of the receive-only case, replayed in turn (PSNs 0..RX_FRAMES-1). */
#define RX_FRAMES   256

/* The UC QP of side 'rx' (host 2), connected to QPN 0x99 of host 1. */
static TvQp *rx_uc_qp(Side *rx, uint8_t peer_host)
{
    TvQp *qp = tv_qp(rx->h, RNIC_QPT_UC, rx->pd, rx->cq, rx->cq, NULL,
                     SQ_LOG, 0);
    TvRcPath p = {
        .dest_qpn = 0x99,
        .mtu = RNIC_MTU_4096,
        .access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE,
    };

    tv_gid_bytes(p.dgid, rx->ctx, peer_host);
    tv_rc_connect_path(rx->h, qp, &p);
    return qp;
}

/* frames/s received of UC WRITE ONLY packets of 'size' bytes (<= 4096). */
static double run_rx(uint32_t size, uint64_t ms, double *ns_per_frame)
{
    static uint8_t payload[4096];
    Side rx;
    TvQp *qp;
    RnicRoceHdr hd;
    GByteArray *f[RX_FRAMES];
    uint64_t t0, t, frames = 0;
    unsigned i;

    side_init(&rx, 2);
    qp = rx_uc_qp(&rx, 1);
    memset(&hd, 0, sizeof(hd));
    memcpy(hd.dmac, rx.h->cfg.mac, 6);
    hd.smac[0] = 0x52;
    hd.smac[5] = 1;
    tv_gid_bytes(hd.sgid, rx.ctx, 1);
    tv_gid_bytes(hd.dgid, rx.ctx, 2);
    hd.hop_limit = 64;
    hd.udp_sport = 0xc000;
    hd.opcode = RNIC_ROCE_UC_RDMA_WRITE_ONLY;
    hd.pkey = RNIC_ROCE_DEFAULT_PKEY;
    hd.dest_qp = qp->qpn;
    hd.reth.rkey = rx.mr;
    hd.reth.dma_len = size;
    hd.payload = payload;
    hd.payload_len = size;
    for (i = 0; i < RX_FRAMES; i++) {
        size_t len;

        f[i] = g_byte_array_sized_new(RNIC_ROCE_HDR_MAX + size +
                                      RNIC_ROCE_TRAILER_MAX);
        g_byte_array_set_size(f[i], RNIC_ROCE_HDR_MAX + size +
                              RNIC_ROCE_TRAILER_MAX);
        hd.psn = i;
        hd.reth.va = rx.buf + (uint64_t)i * size % REGION;
        g_assert_cmpint(rnic_roce_encode_linear(&hd, f[i]->data, f[i]->len,
                                                &len), ==, RNIC_ROCE_OK);
        g_byte_array_set_size(f[i], len);
    }
    t0 = now_ns();
    do {
        for (i = 0; i < RX_FRAMES; i++) {
            struct iovec iov = { f[i]->data, f[i]->len };

            rnic_engine_receive(rx.h->engine, &iov, 1);
        }
        frames += RX_FRAMES;
        t = now_ns();
    } while (t - t0 < ms * 1000000ull);
    g_assert_cmpuint(rnic_engine_stat(rx.h->engine, RNIC_STAT_RX_DROPPED), ==,
                     0);
    g_assert_cmpuint(rnic_engine_stat(rx.h->engine, RNIC_STAT_RX_FRAMES), ==,
                     frames);
    for (i = 0; i < RX_FRAMES; i++) {
        g_byte_array_unref(f[i]);
    }
    test_host_free(rx.h);
    g_free(rx.cq);
    g_free(rx.qp);
    g_free(qp);
    *ns_per_frame = (double)(t - t0) / frames;
    return frames * 1e9 / (t - t0);
}

/* The receive-only rows (--op=RX; MTU 4096, sizes up to 4096). */
static void run_rx_rows(const uint32_t *sizes, unsigned nsizes,
                        uint32_t only_size, uint64_t ms)
{
    unsigned i;

    for (i = 0; i < nsizes; i++) {
        double rate, nspf;

        if (sizes[i] > 4096 || (only_size && sizes[i] != only_size)) {
            continue;
        }
        run_rx(sizes[i], ms / 5, &nspf);                /* warm-up */
        rate = run_rx(sizes[i], ms, &nspf);
        printf("| RX | 4096 | %u | %.0f | %.1f | %.0f (receive only) |\n",
               sizes[i], rate, rate * sizes[i] / 1e6, nspf);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    static const uint32_t sizes[] = { 64, 4096, 65536, 1u << 20 };
    static const struct {
        uint8_t mtu;
        const char *name;
    } mtus[] = { { RNIC_MTU_4096, "4096" }, { RNIC_MTU_1024, "1024" } };
    static const struct {
        uint8_t op;
        const char *name;
    } ops[] = { { RNIC_WR_RDMA_WRITE, "WRITE" }, { RNIC_WR_SEND, "SEND" } };
    uint64_t ms = 500;
    uint32_t only_size = 0;
    const char *only_op = NULL, *only_mtu = NULL;
    int i, m, o;

    for (i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--time=", 7)) {
            ms = strtoull(argv[i] + 7, NULL, 0);
        } else if (!strncmp(argv[i], "--size=", 7)) {
            only_size = strtoul(argv[i] + 7, NULL, 0);
        } else if (!strncmp(argv[i], "--op=", 5)) {
            only_op = argv[i] + 5;
        } else if (!strncmp(argv[i], "--mtu=", 6)) {
            only_mtu = argv[i] + 6;
        } else if (!strcmp(argv[i], "--cpu")) {
            bench_clock = CLOCK_PROCESS_CPUTIME_ID;
        } else {
            fprintf(stderr, "usage: %s [--time=ms] [--op=WRITE|SEND|RX] "
                    "[--size=bytes] [--mtu=1024|4096] [--cpu]\n", argv[0]);
            return 1;
        }
    }
    printf("| op | MTU | size | ops/s | MB/s | ns per frame (both ends) |\n");
    printf("|---|---|---|---|---|---|\n");
    for (m = 0; m < 2; m++) {
        for (o = 0; o < 2; o++) {
            for (i = 0; i < (int)G_N_ELEMENTS(sizes); i++) {
                Side s[2];
                double rate, nspf;

                if ((only_size && sizes[i] != only_size) ||
                    (only_op && strcmp(only_op, ops[o].name)) ||
                    (only_mtu && strcmp(only_mtu, mtus[m].name))) {
                    continue;
                }

                side_init(&s[0], 1);
                side_init(&s[1], 2);
                connect(&s[0], &s[1], 2, mtus[m].mtu);
                connect(&s[1], &s[0], 1, mtus[m].mtu);
                run(s, ops[o].op, sizes[i], ms / 5, &nspf);    /* warm-up */
                rate = run(s, ops[o].op, sizes[i], ms, &nspf);
                printf("| %s | %s | %u | %.0f | %.1f | %.0f |\n",
                       ops[o].name, mtus[m].name, sizes[i], rate,
                       rate * sizes[i] / 1e6, nspf);
                fflush(stdout);
                g_assert_cmpuint(rnic_engine_stat(s[1].h->engine,
                                                  RNIC_STAT_RX_DROPPED), ==, 0);
                g_assert_cmpuint(rnic_engine_stat(s[0].h->engine,
                                                  RNIC_STAT_RETRANSMITS),
                                 ==, 0);
                test_host_free(s[0].h);
                test_host_free(s[1].h);
                g_free(s[0].cq);
                g_free(s[1].cq);
                g_free(s[0].qp);
                g_free(s[1].qp);
            }
        }
    }
    if ((!only_op || !strcmp(only_op, "RX")) &&
        (!only_mtu || !strcmp(only_mtu, "4096"))) {
        run_rx_rows(sizes, G_N_ELEMENTS(sizes), only_size, ms);
    }
    return 0;
}
