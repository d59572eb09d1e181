/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine benchmark: RDMA WRITE / READ / SEND through the engine's transport
 * on loopback (one engine, two connected RC QPs: the requester's packets go
 * straight to the local responder, which copies from the source's registered
 * memory into the destination's, page by page), with in-memory host ops
 * (guest RAM is a host buffer, mapped by dma_map unless --no-map).
 *
 * The "driver" is the unit tests' (rnic-test-verbs.c): WQEs written into the
 * SQ ring in guest RAM, one doorbell per batch, every 16th WQE signaled,
 * CQs polled; its cost is included in the numbers, as a guest's would be.
 * memcpy bandwidth is measured in the same run over the same buffers and
 * access pattern, and for 64 MiB blocks.
 *
 * Not a test: build with 'meson compile -C build/project', run
 * build/project/tests/bench/bench-engine [--no-map] [--time=ms] [--mtu=N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rnic-test-verbs.h"

#define REGION      (64u << 20)     /* per side */
#define SQ_LOG      8
#define BATCH       64
#define SIGNAL_EVERY 16
/*
 * The two sides' buffers differ in their low 12 address bits (as unrelated
 * buffers usually do): identical page offsets make x86 copies of 1-2 KiB
 * pieces pay 4K-aliasing stalls, in memcpy as much as in the engine.
 */
#define SKEW        2048

typedef struct Bench {
    TestHost *h;
    uint32_t ctx, pd;
    TvCq *cqa, *cqb;
    TvQp *a, *b;
    uint64_t bufa, bufb;
    uint32_t mra, mrb;
} Bench;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void bench_init(Bench *b, uint8_t mtu, bool map)
{
    uint8_t g0[16], g1[16];

    b->h = test_host_new_sized(NULL, 2ull * REGION + (64u << 20));
    b->h->map_disabled = !map;
    tv_enable(b->h, 6);
    b->ctx = tv_net_ctx(b->h, 0);
    tv_gid(b->h, 0, b->ctx, 1);
    tv_gid(b->h, 1, b->ctx, 2);
    tv_gid_bytes(g0, b->ctx, 1);
    tv_gid_bytes(g1, b->ctx, 2);
    b->pd = tv_pd(b->h, b->ctx, 0);
    b->cqa = tv_cq(b->h, 12, RNIC_HANDLE_NONE, 0);
    b->cqb = tv_cq(b->h, 12, RNIC_HANDLE_NONE, 0);
    tv_sq_shift = 7;                /* 4 SGEs per send WQE, as perftest */
    b->a = tv_qp(b->h, RNIC_QPT_RC, b->pd, b->cqa, b->cqa, NULL, SQ_LOG, 0);
    b->b = tv_qp(b->h, RNIC_QPT_RC, b->pd, b->cqb, b->cqb, NULL, SQ_LOG, 0);
    tv_path_mtu = mtu;
    tv_rc_connect(b->h, b->a, 0, g1, b->b->qpn);
    tv_rc_connect(b->h, b->b, 1, g0, b->a->qpn);
    b->bufa = test_alloc(b->h, REGION, 4096);
    b->bufb = test_alloc(b->h, REGION + 4096, 4096);
    b->mra = tv_reg_mr(b->h, b->pd, b->bufa, REGION, TV_ACCESS_ALL, 0, NULL);
    b->mrb = tv_reg_mr(b->h, b->pd, b->bufb, REGION + 4096, TV_ACCESS_ALL, 0,
                       NULL);
    b->bufb += SKEW;
}

static void bench_fini(Bench *b)
{
    g_free(b->cqa);
    g_free(b->cqb);
    g_free(b->a);
    g_free(b->b);
    test_host_free(b->h);
}

/*
 * Run 'opcode' of 'size' bytes for about 'budget' ns; returns ops done and
 * the elapsed time. Offsets walk through the 64 MiB regions.
 */
static uint64_t bench_run(Bench *b, uint8_t opcode, uint32_t size,
                          uint64_t budget, uint64_t *elapsed)
{
    TestHost *h = b->h;
    uint32_t slots = REGION / MAX(size, 64);
    uint64_t ops = 0, t0, t, last;
    struct rnic_cqe c[BATCH];
    uint8_t *src, *dst;
    int i, got, want;

    /* distinct contents on both sides, checked after the run */
    src = test_ptr(h, opcode == RNIC_WR_RDMA_READ ? b->bufb : b->bufa);
    dst = test_ptr(h, opcode == RNIC_WR_RDMA_READ ? b->bufa : b->bufb);
    for (i = 0; i < (int)(REGION / 4096); i++) {
        memset(src + (uint64_t)i * 4096, opcode * 16 + i, 4096);
    }
    memset(dst, 0xee, REGION);
    t0 = now_ns();
    do {
        for (i = 0; i < BATCH; i++) {
            uint64_t off = (uint64_t)((ops + i) % slots) * MAX(size, 64);
            struct rnic_sge s = tv_sge(b->bufa + off, size, b->mra);
            struct rnic_sq_wqe w;

            memset(&w, 0, sizeof(w));
            w.wr_id = ops + i;
            w.opcode = opcode;
            w.num_sge = 1;
            w.flags = (i % SIGNAL_EVERY == SIGNAL_EVERY - 1) ?
                      RNIC_WQE_SIGNALED : 0;
            w.rdma.remote_addr = b->bufb + off;
            w.rdma.rkey = b->mrb;
            if (opcode == RNIC_WR_SEND) {
                struct rnic_sge r = tv_sge(b->bufb + off, size, b->mrb);

                tv_write_recv(h, b->b, ops + i, &r, 1);
            }
            tv_write_send(h, b->a, &w, &s, NULL);
        }
        if (opcode == RNIC_WR_SEND) {
            tv_ring_rq(h, b->b);
        }
        tv_ring_sq(h, b->a);
        test_host_run(h);
        want = BATCH / SIGNAL_EVERY;
        got = tv_poll(h, b->cqa, c, BATCH);
        if (got != want || c[got - 1].status != RNIC_WC_SUCCESS) {
            fprintf(stderr, "unexpected completions: %d (status %u)\n", got,
                    got ? c[got - 1].status : 0);
            exit(1);
        }
        if (opcode == RNIC_WR_SEND &&
            tv_poll(h, b->cqb, c, BATCH) != BATCH) {
            fprintf(stderr, "receive completions missing\n");
            exit(1);
        }
        ops += BATCH;
        t = now_ns();
    } while (t - t0 < budget);
    *elapsed = t - t0;
    /* the bytes really moved (the last transfer) */
    last = (uint64_t)((ops - 1) % slots) * MAX(size, 64);
    if (memcmp(src + last, dst + last, size)) {
        fprintf(stderr, "data mismatch\n");
        exit(1);
    }
    return ops;
}

/*
 * memcpy with the same sizes and offsets, over host buffers of the same
 * size (not the engine's), for the same time; each transfer copied in
 * pieces of 'chunk' bytes (a packet-based copy moves one MTU at a time).
 */
static double memcpy_gbps(uint8_t *src, uint8_t *dst, uint32_t size,
                          uint32_t chunk, uint64_t budget)
{
    uint32_t slots = REGION / MAX(size, 64);
    uint64_t n = 0, t0 = now_ns(), t;
    uint32_t c;
    int i;

    do {
        for (i = 0; i < BATCH; i++, n++) {
            uint64_t off = (uint64_t)(n % slots) * MAX(size, 64);

            for (c = 0; c < size; c += chunk) {
                memcpy(dst + off + c, src + off + c, MIN(chunk, size - c));
            }
        }
        /* keep the compiler honest */
        __asm__ volatile("" : : "r"(dst) : "memory");
        t = now_ns();
    } while (t - t0 < budget);
    return (double)n * size / (t - t0);
}

int main(int argc, char **argv)
{
    static const uint32_t sizes[] = { 64, 4096, 65536, 1u << 20 };
    static const struct {
        uint8_t opcode;
        const char *name;
    } ops[] = {
        { RNIC_WR_RDMA_WRITE, "WRITE" },
        { RNIC_WR_RDMA_READ, "READ" },
        { RNIC_WR_SEND, "SEND" },
    };
    uint64_t budget = 400 * 1000000ull;
    uint8_t mtu = RNIC_MTU_4096;
    bool map = true;
    uint8_t *hs, *hd, *hs_mem, *hd_mem;
    double big;
    Bench b;
    size_t o, i;
    int a;

    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--no-map")) {
            map = false;
        } else if (!strncmp(argv[a], "--time=", 7)) {
            budget = strtoull(argv[a] + 7, NULL, 0) * 1000000ull;
        } else if (!strncmp(argv[a], "--mtu=", 6)) {
            uint32_t m = strtoul(argv[a] + 6, NULL, 0);

            for (mtu = RNIC_MTU_256; mtu < RNIC_MTU_4096 && (128u << mtu) < m;
                 mtu++) {
            }
        } else {
            fprintf(stderr, "usage: %s [--no-map] [--time=ms] [--mtu=bytes]\n",
                    argv[0]);
            return 2;
        }
    }
    /* host buffers laid out as the engine's: page aligned, skewed */
    hs_mem = g_malloc(REGION + 8192);
    hd_mem = g_malloc(REGION + 8192);
    hs = (uint8_t *)(((uintptr_t)hs_mem + 4095) & ~(uintptr_t)4095);
    hd = (uint8_t *)(((uintptr_t)hd_mem + 4095) & ~(uintptr_t)4095) + SKEW;
    memset(hs, 1, REGION);
    memset(hd, 2, REGION);
    big = memcpy_gbps(hs, hd, 64u << 20, 64u << 20, budget);
    printf("rnic engine benchmark: one engine, loopback between two RC QPs, "
           "path MTU %u,\nguest memory %s, batches of %d WQEs per doorbell, "
           "1 in %d signaled.\n", 128u << mtu,
           map ? "mapped (dma_map)" : "copied through the bounce buffer",
           BATCH, SIGNAL_EVERY);
    printf("single-core memcpy, 64 MiB blocks: %.2f GB/s\n\n", big);
    printf("memcpy GB/s: copying the same bytes in one piece / in MTU pieces;"
           "\nratio: engine GB/s over the one-piece memcpy\n\n");
    printf("%-6s %8s %12s %9s %8s %8s %7s\n", "op", "size", "ops/s", "GB/s",
           "memcpy", "mc/MTU", "ratio");
    bench_init(&b, mtu, map);
    for (o = 0; o < G_N_ELEMENTS(ops); o++) {
        for (i = 0; i < G_N_ELEMENTS(sizes); i++) {
            uint64_t elapsed;
            uint64_t n = bench_run(&b, ops[o].opcode, sizes[i], budget,
                                   &elapsed);
            double gbps = (double)n * sizes[i] / elapsed;
            double mc = memcpy_gbps(hs, hd, sizes[i], sizes[i], budget / 2);
            double mcp = memcpy_gbps(hs, hd, sizes[i], 128u << mtu,
                                     budget / 2);

            printf("%-6s %8u %12.0f %9.2f %8.2f %8.2f %6.0f%%\n", ops[o].name,
                   sizes[i], n * 1e9 / elapsed, gbps, mc, mcp,
                   100.0 * gbps / mc);
            fflush(stdout);
        }
    }
    bench_fini(&b);
    g_free(hs_mem);
    g_free(hd_mem);
    return 0;
}
