/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Persistent-memory benchmark on the engine: three ways for a client to
 * make a write durable on a server's memory window, at queue depth 1 (one
 * durable write at a time, each waited for), loopback in one engine:
 *
 *   durable   one RDMA WRITE through the region's DURABLE rkey (patent b:
 *             the semantic in the key; the responder persists before its
 *             ACK)
 *   flush     RDMA WRITE through the PLAIN rkey, then FLUSH(persistence)
 *             of its range (IBTA 1.5; two packets, one responder resource)
 *   send      RDMA WRITE through the PLAIN rkey, then a SEND to the server
 *             naming the range; the server's CPU persists it and SENDs a
 *             reply the client waits for (librpma's GPSPM style)
 *
 * The window is a file mapped shared; the host's persist is msync(MS_SYNC)
 * of the range's pages (what QEMU's memory_region_msync does for a shared
 * memory-backend-file), or with --flush a cache-line write-back loop
 * (clflush + sfence: what pmem_persist does on pmem=on). The time spent in
 * persists is reported per operation on its own.
 *
 * Not a test: build/project/tests/bench/bench-scm [--dir=PATH] [--flush]
 *     [--time=ms]     (PATH: where the window file goes, default /dev/shm)
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "rnic-test-verbs.h"

#define WIN_PAGES   1024            /* 4 MiB */
#define SEMS        ((1u << RNIC_SCM_SEM_PLAIN) | (1u << RNIC_SCM_SEM_DURABLE))

typedef struct Bench {
    TestHost *h;
    TvPair p;
    uint32_t stag;
    bool cache_flush;
    uint64_t persist_ns;            /* spent in persists */
} Bench;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static Bench *bench;

static void persist_range(uint8_t *base, uint64_t off, uint64_t len)
{
    uint64_t t0 = now_ns();

    if (bench->cache_flush) {
        for (uint64_t a = off & ~63ull; a < off + len; a += 64) {
            __builtin_ia32_clflush(base + a);
        }
        __builtin_ia32_sfence();
    } else {
        uint64_t start = off & ~4095ull;

        if (msync(base + start, off + len - start, MS_SYNC)) {
            perror("msync");
            exit(1);
        }
    }
    bench->persist_ns += now_ns() - t0;
}

static void host_persist(TestHost *h, uint64_t off, uint64_t len)
{
    persist_range(h->scm, off, len);
}

static void bench_init(Bench *b, const char *dir)
{
    RnicEngineConfig cfg;
    char *path = g_strdup_printf("%s/rnic-bench-scm-XXXXXX", dir);
    int fd = mkstemp(path);

    if (fd < 0 || ftruncate(fd, WIN_PAGES * 4096ull)) {
        perror(path);
        exit(1);
    }
    rnic_engine_config_defaults(&cfg);
    cfg.scm_pages = WIN_PAGES;
    cfg.scm_persistent = 1;
    b->h = test_host_new(&cfg);
    g_free(b->h->scm);
    b->h->scm = mmap(NULL, WIN_PAGES * 4096ull, PROT_READ | PROT_WRITE,
                     MAP_SHARED, fd, 0);
    if (b->h->scm == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    close(fd);
    unlink(path);
    g_free(path);
    b->h->persist_hook = host_persist;
    tv_pair_init(b->h, &b->p, 1, RNIC_EQ_ASYNC, 8, 6, 1u << 20);
    b->stag = tv_reg_scm(b->h, b->p.pd, 0, 0, WIN_PAGES * 4096ull,
                         TV_ACCESS_ALL | RNIC_ACCESS_FLUSH_PERSISTENT, SEMS,
                         RNIC_SCM_SEM_PLAIN << RNIC_SCM_KEY_SEM_SHIFT | 3,
                         NULL);
}

static void bench_fini(Bench *b)
{
    munmap(b->h->scm, WIN_PAGES * 4096ull);
    b->h->scm = NULL;
    tv_pair_fini(&b->p);
    test_host_free(b->h);
}

/* Take 'n' completions of 'cq', every one successful. */
static void wait_n(Bench *b, TvCq *cq, int n)
{
    struct rnic_cqe c[4];

    while (n > 0) {
        int got;

        test_host_run(b->h);
        got = tv_poll(b->h, cq, c, MIN(n, 4));
        for (int i = 0; i < got; i++) {
            if (c[i].status != RNIC_WC_SUCCESS) {
                fprintf(stderr, "wr_id %" PRIu64 ": status %u\n",
                        (uint64_t)c[i].wr_id, c[i].status);
                exit(1);
            }
        }
        n -= got;
    }
}

static void post(Bench *b, struct rnic_sq_wqe *w, struct rnic_sge *s)
{
    tv_write_send(b->h, b->p.a, w, s, NULL);
}

/* One durable write of 'size' bytes at window offset 'off', by 'how'. */
static void one(Bench *b, const char *how, uint64_t id, uint64_t off,
                uint32_t size)
{
    TvPair *p = &b->p;
    struct rnic_sge s = tv_sge(p->bufa + off % (1u << 19), size, p->mra);
    uint32_t plain = RNIC_SCM_STAG(b->stag, RNIC_SCM_SEM_PLAIN);
    struct rnic_sq_wqe w = tv_wqe_flags(id, RNIC_WR_RDMA_WRITE, 0, 1);

    w.rdma.remote_addr = off;
    if (!strcmp(how, "durable")) {
        w.flags = RNIC_WQE_SIGNALED;
        w.rdma.rkey = RNIC_SCM_STAG(b->stag, RNIC_SCM_SEM_DURABLE);
        post(b, &w, &s);
        tv_ring_sq(b->h, p->a);
        wait_n(b, p->cqa, 1);
        return;
    }
    w.rdma.rkey = plain;
    post(b, &w, &s);
    if (!strcmp(how, "flush")) {
        w = tv_flush_wqe(id, off, plain, size, RNIC_FLUSH_PERSISTENT,
                         RNIC_FLUSH_RANGE);
        post(b, &w, NULL);
        tv_ring_sq(b->h, p->a);
        wait_n(b, p->cqa, 1);
        return;
    }
    /* send: the request names the range, the server persists, replies */
    {
        uint64_t *req = test_ptr(b->h, p->bufa + (1u << 19));
        struct rnic_sge rs = tv_sge(p->bufa + (1u << 19), 16, p->mra);
        struct rnic_sge rr = tv_sge(p->bufb + (1u << 19), 16, p->mrb);
        struct rnic_sge cr = tv_sge(p->bufa + (1u << 19) + 64, 16, p->mra);
        uint64_t *got = test_ptr(b->h, p->bufb + (1u << 19));

        req[0] = off;
        req[1] = size;
        tv_post_recv(b->h, p->b, id, &rr, 1);
        tv_post_recv(b->h, p->a, id, &cr, 1);
        w = tv_wqe(id, RNIC_WR_SEND, 1);
        post(b, &w, &rs);
        tv_ring_sq(b->h, p->a);
        wait_n(b, p->cqb, 1);               /* the server's receive */
        persist_range(b->h->scm, got[0], got[1]);
        w = tv_wqe(id, RNIC_WR_SEND, 1);
        tv_post_send(b->h, p->b, &w, &rr, NULL);
        wait_n(b, p->cqa, 2);               /* the SEND's, the reply */
        wait_n(b, p->cqb, 1);               /* the reply's */
    }
}

#define ROUNDS 7

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double median(const double *v)
{
    double s[ROUNDS];

    memcpy(s, v, sizeof(s));
    qsort(s, ROUNDS, sizeof(s[0]), cmp_double);
    return s[ROUNDS / 2];
}

int main(int argc, char **argv)
{
    static const char *const hows[] = { "durable", "flush", "send" };
    static const uint32_t sizes[] = { 64, 4096 };
    const char *dir = "/dev/shm";
    uint64_t budget = 3500000000ull;
    Bench b = { 0 };
    int i;

    for (i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--dir=", 6)) {
            dir = argv[i] + 6;
        } else if (!strcmp(argv[i], "--flush")) {
            b.cache_flush = true;
        } else if (!strncmp(argv[i], "--time=", 7)) {
            budget = strtoull(argv[i] + 7, NULL, 0) * 1000000ull;
        } else {
            fprintf(stderr, "usage: %s [--dir=PATH] [--flush] [--time=ms]\n",
                    argv[0]);
            return 2;
        }
    }
    bench = &b;
    bench_init(&b, dir);
    printf("window file in %s, persist by %s, queue depth 1, median of %d "
           "rounds (the ways interleaved round by round)\n", dir,
           b.cache_flush ? "cache-line write-back (clflush + sfence)" :
           "msync(MS_SYNC)", ROUNDS);
    printf("%-8s %6s %10s %10s %14s %12s\n", "how", "size", "ops/s",
           "lat_us", "persist_us/op", "persists/op");
    for (size_t si = 0; si < G_N_ELEMENTS(sizes); si++) {
        double rate[3][ROUNDS], pers[3][ROUNDS], calls[3][ROUNDS], med[3];

        for (int r = 0; r < ROUNDS; r++) {
            for (size_t hi = 0; hi < G_N_ELEMENTS(hows); hi++) {
                uint64_t ops = 0, t0 = now_ns(), t;
                unsigned persists = b.h->persists;

                b.persist_ns = 0;
                do {
                    one(&b, hows[hi], ops, (ops * 8192) %
                        (WIN_PAGES * 4096ull - 8192), sizes[si]);
                    ops++;
                    t = now_ns() - t0;
                } while (t < budget / ROUNDS);
                rate[hi][r] = ops * 1e9 / t;
                pers[hi][r] = b.persist_ns / 1e3 / ops;
                /* the server CPU's persist in 'send' is one per op */
                calls[hi][r] = (double)(b.h->persists - persists +
                                        (hi == 2 ? ops : 0)) / ops;
            }
        }
        for (size_t hi = 0; hi < G_N_ELEMENTS(hows); hi++) {
            med[hi] = median(rate[hi]);
            printf("%-8s %6u %10.0f %10.2f %14.2f %12.2f\n", hows[hi],
                   sizes[si], med[hi], 1e6 / med[hi], median(pers[hi]),
                   median(calls[hi]));
        }
        printf("%6u B: durable/flush %.2fx, durable/send %.2fx\n", sizes[si],
               med[0] / med[1], med[0] / med[2]);
    }
    bench_fini(&b);
    return 0;
}
