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
 * [--wqe-cache] [--profile=sges,on|off] [--gather]
 */
#include <inttypes.h>
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

static void bench_init(Bench *b, uint8_t mtu, bool map, uint8_t sq_shift)
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
    tv_sq_shift = sq_shift;         /* 7: 4 SGEs per send WQE, as perftest */
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
 * Run 'opcode' of 'size' bytes, gathered from 'nsge' equal pieces, for
 * about 'budget' ns; returns ops done and the elapsed time. Offsets walk
 * through the first 'cycle' bytes of the 64 MiB regions (REGION: each WQE
 * unlike the last; 4096: the 64 WQEs perftest's cycle buffer repeats).
 */
static uint64_t bench_run(Bench *b, uint8_t opcode, uint32_t size,
                          uint32_t nsge, uint64_t cycle, uint64_t budget,
                          uint64_t *elapsed)
{
    TestHost *h = b->h;
    uint32_t slots = cycle / MAX(size, 64);
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
            struct rnic_sge s[RNIC_CFG_MAX_SGE];
            struct rnic_sq_wqe w;
            uint32_t k;

            for (k = 0; k < nsge; k++) {
                s[k] = tv_sge(b->bufa + off + k * (size / nsge), size / nsge,
                              b->mra);
            }
            memset(&w, 0, sizeof(w));
            w.wr_id = ops + i;
            w.opcode = opcode;
            w.num_sge = nsge;
            w.flags = (i % SIGNAL_EVERY == SIGNAL_EVERY - 1) ?
                      RNIC_WQE_SIGNALED : 0;
            w.rdma.remote_addr = b->bufb + off;
            w.rdma.rkey = b->mrb;
            if (opcode == RNIC_WR_SEND) {
                struct rnic_sge r = tv_sge(b->bufb + off, size, b->mrb);

                tv_write_recv(h, b->b, ops + i, &r, 1);
            }
            tv_write_send(h, b->a, &w, s, NULL);
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/*
 * The WQE translation cache (issue 21): 64-byte WRITEs from 1 to 8 SGEs,
 * the WQEs perftest repeats (a 4 KiB cycle: 64 distinct SGE lists) and
 * WQEs that never repeat, with the cache off and on in alternating rounds
 * of one run; the median of 'rounds' per cell, and the hit rate.
 */
static void bench_wqe_cache(uint64_t budget, int rounds)
{
    static const uint32_t nsges[] = { 1, 2, 4, 8 };
    static const struct {
        uint64_t cycle;
        const char *name;
    } pats[] = {
        { 4096, "repeated (4 KiB cycle)" },
        { REGION, "unique (64 MiB walk)" },
    };
    Bench b;
    size_t g, p;
    int r, on;

    printf("rnic engine benchmark: WQE translation cache, 64 B RDMA WRITE, "
           "loopback,\n%d WQEs per doorbell, 1 in %d signaled; median of %d "
           "alternating rounds of %" PRIu64 " ms\n\n", BATCH, SIGNAL_EVERY,
           rounds, budget / 1000000);
    printf("%-4s %-24s %12s %12s %7s %7s\n", "sge", "WQEs", "off ops/s",
           "on ops/s", "on/off", "hits");
    bench_init(&b, RNIC_MTU_4096, true, 8);
    for (g = 0; g < G_N_ELEMENTS(nsges); g++) {
        for (p = 0; p < G_N_ELEMENTS(pats); p++) {
            double rate[2][64];
            uint64_t hits = 0, looked = 0;

            for (r = 0; r < rounds; r++) {
                for (on = 0; on < 2; on++) {
                    uint64_t elapsed, n, h0, m0;

                    rnic_engine_set_wqe_cache(b.h->engine, on);
                    h0 = tv_stat(b.h, RNIC_STAT_WQC_HITS);
                    m0 = tv_stat(b.h, RNIC_STAT_WQC_MISSES);
                    n = bench_run(&b, RNIC_WR_RDMA_WRITE, 64, nsges[g],
                                  pats[p].cycle, budget, &elapsed);
                    rate[on][r] = n * 1e9 / elapsed;
                    if (on) {
                        hits += tv_stat(b.h, RNIC_STAT_WQC_HITS) - h0;
                        looked += tv_stat(b.h, RNIC_STAT_WQC_HITS) - h0 +
                                  tv_stat(b.h, RNIC_STAT_WQC_MISSES) - m0;
                    }
                }
            }
            qsort(rate[0], rounds, sizeof(double), cmp_double);
            qsort(rate[1], rounds, sizeof(double), cmp_double);
            printf("%-4u %-24s %12.0f %12.0f %6.2fx %6.1f%%\n", nsges[g],
                   pats[p].name, rate[0][rounds / 2], rate[1][rounds / 2],
                   rate[1][rounds / 2] / rate[0][rounds / 2],
                   looked ? 100.0 * hits / looked : 0.0);
            fflush(stdout);
        }
    }
    bench_fini(&b);
}

/*
 * One cell of the above for a profiler (perf record): 'nsge' SGEs, the
 * repeated WQEs, the cache on or off, for 'budget'.
 */
static void bench_wqe_profile(uint64_t budget, uint32_t nsge, bool on)
{
    uint64_t elapsed, n;
    Bench b;

    bench_init(&b, RNIC_MTU_4096, true, 8);
    rnic_engine_set_wqe_cache(b.h->engine, on);
    n = bench_run(&b, RNIC_WR_RDMA_WRITE, 64, nsge, 4096, budget, &elapsed);
    printf("%u SGEs, cache %s: %.0f ops/s\n", nsge, on ? "on" : "off",
           n * 1e9 / elapsed);
    bench_fini(&b);
}

/*
 * Gather (issue 20): 64 scattered buffers of 512 B filled by one 32 KiB
 * READ, as
 *   mapped:   one READ whose local key is a mapped STag over the 64
 *             buffers (registered once);
 *   mapped+reg: the same, the mapped STag registered again for every I/O
 *             (LOCAL_INV, REG_MR with the table through an SGE, READ), as
 *             storage ULPs register per I/O;
 *   8 WQEs:   the form an SGE limit of 8 forces: 8 READs of 4 KiB, each
 *             scattered over 8 buffers by its SGEs;
 *   contiguous: one READ into one 32 KiB buffer (the reference).
 * One gather = one signaled completion; GATHER_BATCH gathers a doorbell;
 * the forms in alternating rounds, the median of 'rounds'.
 */
#define GATHER_BUFS     64
#define GATHER_PIECE    512
#define GATHER_BATCH    16
#define GATHER_MAP_IOVA 0x5000000000ull

enum { G_MAPPED, G_MAPPED_REG, G_MULTI, G_CONTIG, G_FORMS };

static uint64_t gather_buf(const Bench *b, uint32_t k)
{
    /* apart and at odd page offsets, as an I/O's pages */
    return b->bufa + (uint64_t)k * 12288 + (k * 1088) % 4096;
}

static uint64_t gather_run(Bench *b, int form, uint32_t mk, uint64_t table,
                          uint32_t table_key, uint64_t budget,
                          uint64_t *elapsed)
{
    TestHost *h = b->h;
    uint32_t size = GATHER_BUFS * GATHER_PIECE;
    uint64_t ops = 0, t0 = now_ns(), t;
    struct rnic_cqe c[GATHER_BATCH];
    uint32_t i, k, j;
    int got;

    do {
        for (i = 0; i < GATHER_BATCH; i++) {
            uint64_t remote = b->bufb + (uint64_t)((ops + i) % 64) * size;
            struct rnic_sge s[8];
            struct rnic_sq_wqe w;

            memset(&w, 0, sizeof(w));
            w.opcode = RNIC_WR_RDMA_READ;
            w.rdma.rkey = b->mrb;
            if (form == G_MULTI) {
                for (j = 0; j < 8; j++) {
                    for (k = 0; k < 8; k++) {
                        s[k] = tv_sge(gather_buf(b, j * 8 + k), GATHER_PIECE,
                                      b->mra);
                    }
                    w.num_sge = 8;
                    w.flags = j == 7 ? RNIC_WQE_SIGNALED : 0;
                    w.rdma.remote_addr = remote + j * 8 * GATHER_PIECE;
                    tv_write_send(h, b->a, &w, s, NULL);
                }
                continue;
            }
            if (form == G_MAPPED_REG) {
                struct rnic_sq_wqe r;

                memset(&r, 0, sizeof(r));
                r.opcode = RNIC_WR_LOCAL_INV;
                r.imm_or_inv = mk;
                tv_write_send(h, b->a, &r, NULL, NULL);
                mk = (mk & ~0xffu) | ((mk + 1) & 0xffu);   /* a fresh key */
                r.opcode = RNIC_WR_REG_MR;
                r.imm_or_inv = 1;
                r.num_sge = 1;
                r.reg.stag = mk;
                r.reg.iova = GATHER_MAP_IOVA;
                r.reg.length = size;
                r.reg.access = RNIC_ACCESS_LOCAL_WRITE;
                r.reg.npages = GATHER_BUFS;
                s[0] = tv_sge(table, GATHER_BUFS * sizeof(struct rnic_map_seg),
                              table_key);
                tv_write_send(h, b->a, &r, s, NULL);
            }
            s[0] = form == G_CONTIG ? tv_sge(b->bufa + (64u << 20) - size,
                                             size, b->mra) :
                                      tv_sge(GATHER_MAP_IOVA, size, mk);
            w.num_sge = 1;
            w.flags = RNIC_WQE_SIGNALED;
            w.rdma.remote_addr = remote;
            tv_write_send(h, b->a, &w, s, NULL);
        }
        tv_ring_sq(h, b->a);
        test_host_run(h);
        got = tv_poll(h, b->cqa, c, GATHER_BATCH);
        if (got != GATHER_BATCH || c[got - 1].status != RNIC_WC_SUCCESS) {
            fprintf(stderr, "gather: unexpected completions: %d (status %u)\n",
                    got, got ? c[got - 1].status : 0);
            exit(1);
        }
        ops += GATHER_BATCH;
        t = now_ns();
    } while (t - t0 < budget);
    *elapsed = t - t0;
    /* the last gather's bytes, where each form put them */
    for (k = 0; k < GATHER_BUFS; k++) {
        uint64_t src = b->bufb + (uint64_t)((ops - 1) % 64) * size +
                       k * GATHER_PIECE;
        uint64_t dst = form == G_CONTIG ?
                       b->bufa + (64u << 20) - size + k * GATHER_PIECE :
                       gather_buf(b, k);

        if (memcmp(test_ptr(h, src), test_ptr(h, dst), GATHER_PIECE)) {
            fprintf(stderr, "gather: data mismatch (form %d, buffer %u)\n",
                    form, k);
            exit(1);
        }
    }
    return ops;
}

static void bench_gather(uint64_t budget, int rounds)
{
    static const char *const names[G_FORMS] = {
        "mapped lkey, 1 READ", "mapped, registered per I/O",
        "8 WQEs x 8 SGEs", "contiguous, 1 READ",
    };
    struct rnic_map_seg *t;
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ALLOC_MR };
    double rate[G_FORMS][64];
    uint32_t mk, mk2, tkey, k;
    uint64_t table;
    Bench b;
    int r, f;

    bench_init(&b, RNIC_MTU_4096, true, 8);
    for (k = 0; k < 64u * GATHER_BUFS * GATHER_PIECE / 4096; k++) {
        memset(test_ptr(b.h, b.bufb + (uint64_t)k * 4096), k, 4096);
    }
    /* the table, in registered memory: both forms of registration use it */
    table = test_alloc(b.h, GATHER_BUFS * sizeof(*t), 64);
    tkey = tv_reg_mr(b.h, b.pd, table, GATHER_BUFS * sizeof(*t),
                     TV_ACCESS_ALL, 0, NULL);
    t = test_ptr(b.h, table);
    for (k = 0; k < GATHER_BUFS; k++) {
        memset(&t[k], 0, sizeof(t[k]));
        t[k].addr = gather_buf(&b, k);
        t[k].length = GATHER_PIECE;
        t[k].lkey = b.mra;
    }
    c.mr.kind = RNIC_MR_KIND_MAPPED;
    c.mr.pd = b.pd;
    c.mr.npages = GATHER_BUFS;
    c.mr.key = 1;
    mk2 = tv_cmd_ok(b.h, &c);           /* invalid: the first I/O's LOCAL_INV */
    c.opcode = RNIC_CMD_REG_MR;
    c.mr.iova = GATHER_MAP_IOVA;
    c.mr.length = GATHER_BUFS * GATHER_PIECE;
    c.mr.pbl_addr = table;
    c.mr.access = RNIC_ACCESS_LOCAL_WRITE;
    mk = tv_cmd_ok(b.h, &c);
    /* the per-I/O one starts registered, so that each I/O invalidates it */
    {
        struct rnic_sq_wqe r;
        struct rnic_sge s = tv_sge(table, GATHER_BUFS * sizeof(*t), tkey);
        struct rnic_cqe done;

        memset(&r, 0, sizeof(r));
        r.opcode = RNIC_WR_REG_MR;
        r.flags = RNIC_WQE_SIGNALED;
        r.num_sge = 1;
        r.reg.stag = mk2;
        r.reg.iova = GATHER_MAP_IOVA;
        r.reg.length = GATHER_BUFS * GATHER_PIECE;
        r.reg.access = RNIC_ACCESS_LOCAL_WRITE;
        r.reg.npages = GATHER_BUFS;
        tv_post_send(b.h, b.a, &r, &s, NULL);
        done = tv_poll_one(b.h, b.cqa);
        if (done.status != RNIC_WC_SUCCESS) {
            fprintf(stderr, "gather: registration failed (%u)\n", done.status);
            exit(1);
        }
    }
    printf("rnic engine benchmark: gather 64 x 512 B scattered buffers by "
           "one 32 KiB READ,\nloopback, path MTU 4096, %d gathers per "
           "doorbell, each signaled;\nmedian of %d alternating rounds of %"
           PRIu64 " ms\n\n", GATHER_BATCH, rounds, budget / 1000000);
    for (r = 0; r < rounds; r++) {
        for (f = 0; f < G_FORMS; f++) {
            uint64_t elapsed, n;

            n = gather_run(&b, f, f == G_MAPPED_REG ? mk2 : mk, table, tkey,
                           budget, &elapsed);
            if (f == G_MAPPED_REG) {
                /* its key moved on with every I/O */
                mk2 = (mk2 & ~0xffu) | ((mk2 + n) & 0xffu);
            }
            rate[f][r] = n * 1e9 / elapsed;
        }
    }
    printf("%-28s %12s %9s %10s %10s\n", "form", "gathers/s", "GB/s",
           "/ 8 WQEs", "/ contig");
    for (f = 0; f < G_FORMS; f++) {
        qsort(rate[f], rounds, sizeof(double), cmp_double);
    }
    for (f = 0; f < G_FORMS; f++) {
        double m = rate[f][rounds / 2];

        printf("%-28s %12.0f %9.2f %9.2fx %9.2fx\n", names[f], m,
               m * GATHER_BUFS * GATHER_PIECE / 1e9,
               m / rate[G_MULTI][rounds / 2], m / rate[G_CONTIG][rounds / 2]);
    }
    bench_fini(&b);
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
    bool map = true, wqe_cache = false, profile_on = false, gather = false;
    uint32_t profile_sge = 0;
    uint8_t *hs, *hd, *hs_mem, *hd_mem;
    double big;
    Bench b;
    size_t o, i;
    int a;

    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--no-map")) {
            map = false;
        } else if (!strcmp(argv[a], "--wqe-cache")) {
            wqe_cache = true;
        } else if (!strcmp(argv[a], "--gather")) {
            gather = true;
        } else if (!strncmp(argv[a], "--profile=", 10)) {
            profile_sge = strtoul(argv[a] + 10, NULL, 0);
            profile_on = !!strstr(argv[a], ",on");
        } else if (!strncmp(argv[a], "--time=", 7)) {
            budget = strtoull(argv[a] + 7, NULL, 0) * 1000000ull;
        } else if (!strncmp(argv[a], "--mtu=", 6)) {
            uint32_t m = strtoul(argv[a] + 6, NULL, 0);

            for (mtu = RNIC_MTU_256; mtu < RNIC_MTU_4096 && (128u << mtu) < m;
                 mtu++) {
            }
        } else {
            fprintf(stderr, "usage: %s [--no-map] [--time=ms] [--mtu=bytes] "
                    "[--wqe-cache] [--profile=sges,on|off] [--gather]\n",
                    argv[0]);
            return 2;
        }
    }
    if (profile_sge) {
        bench_wqe_profile(budget, profile_sge, profile_on);
        return 0;
    }
    if (wqe_cache) {
        bench_wqe_cache(budget / 2, 7);
        return 0;
    }
    if (gather) {
        bench_gather(budget / 4, 7);
        return 0;
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
    bench_init(&b, mtu, map, 7);
    for (o = 0; o < G_N_ELEMENTS(ops); o++) {
        for (i = 0; i < G_N_ELEMENTS(sizes); i++) {
            uint64_t elapsed;
            uint64_t n = bench_run(&b, ops[o].opcode, sizes[i], 1, REGION,
                                   budget, &elapsed);
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
