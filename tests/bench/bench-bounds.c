/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The longest single engine call under work a guest or a peer can queue
 * with one action (issue 40's reproducers): each engine call is timed on
 * its own, as QEMU would hold the BQL for it.
 *
 *   fast-reg   a kernel QP's send queue of 4096 WQEs, fast-registers of
 *              32768 pages and local invalidations in turn, rung once with
 *              the doorbell's work inline (QEMU's vCPU MMIO exit)
 *   flush      one FLUSH (persistence, whole region) of a window region
 *              whose pages are all dirty, from a loopback peer
 *   persist    one SCM_PERSIST admin command of the whole dirty window
 *
 * The window is a file mapped shared (default in /var/tmp, a disk: msync
 * writes the dirty pages back, as memory_region_msync does for a shared
 * memory-backend-file); --mib sets its size.
 *
 * Not a test: build/project/tests/bench/bench-bounds [--dir=PATH] [--mib=N]
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

#define FR_PAGES    32768
#define SQ_LOG      12

typedef struct Calls {
    unsigned n;
    uint64_t max_ns, total_ns;
} Calls;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void calls_add(Calls *c, uint64_t t0)
{
    uint64_t ns = now_ns() - t0;

    c->n++;
    c->total_ns += ns;
    c->max_ns = MAX(c->max_ns, ns);
}

/* Every scheduled run, each timed. */
static void run_timed(TestHost *h, Calls *c)
{
    while (h->scheduled) {
        uint64_t t0 = now_ns();

        h->scheduled = false;
        rnic_engine_run(h->engine);
        calls_add(c, t0);
    }
}

static void report(const char *what, const Calls *c)
{
    printf("%-9s %6u calls  longest %9.3f ms  all %9.3f ms\n", what, c->n,
           c->max_ns / 1e6, c->total_ns / 1e6);
    fflush(stdout);
}

static void bench_fast_reg(void)
{
    TestHost *h = test_host_new(NULL);
    uint32_t pd, stag, i;
    uint8_t remote[16];
    struct rnic_sq_wqe fr, inv;
    struct rnic_cqe cqe;
    Calls c = { 0 };
    uint64_t t0;
    TvCq *cq;
    TvQp *qp;

    pd = tv_kernel_pd(h, SQ_LOG + 1, &cq, remote);
    qp = tv_qp(h, RNIC_QPT_RC, pd, cq, cq, NULL, SQ_LOG, 0);
    tv_rc_connect(h, qp, 0, remote, 0x99);
    stag = tv_alloc_mr(h, pd, FR_PAGES, 0x10);
    fr = tv_fast_reg_wqe(h, 0, stag, 0x40000000, 0x100000, FR_PAGES,
                         RNIC_ACCESS_LOCAL_WRITE);
    inv = tv_wqe(0, RNIC_WR_LOCAL_INV, 0);
    inv.imm_or_inv = stag;
    for (i = 0; i < 1u << SQ_LOG; i++) {
        struct rnic_sq_wqe *w = i & 1 ? &inv : &fr;

        w->wr_id = i;
        tv_write_send(h, qp, w, NULL, NULL);
    }
    h->run_now = true;
    t0 = now_ns();
    tv_ring_sq(h, qp);
    calls_add(&c, t0);
    h->run_now = false;
    run_timed(h, &c);
    for (i = 0; i < 1u << SQ_LOG; i++) {
        if (tv_poll(h, cq, &cqe, 1) != 1 || cqe.status != RNIC_WC_SUCCESS) {
            fprintf(stderr, "fast-reg: WQE %u did not complete\n", i);
            exit(1);
        }
    }
    report("fast-reg", &c);
    g_free(cq);
    g_free(qp);
    test_host_free(h);
}

static void host_persist(TestHost *h, uint64_t off, uint64_t len)
{
    uint64_t start = off & ~4095ull;

    if (msync(h->scm + start, off + len - start, MS_SYNC)) {
        perror("msync");
        exit(1);
    }
}

/* A loopback pair whose window is a file of 'mib' MiB in 'dir'. */
static TvPair *window_pair(const char *dir, uint32_t mib)
{
    RnicEngineConfig cfg;
    char *path = g_strdup_printf("%s/rnic-bench-bounds-XXXXXX", dir);
    uint64_t size = (uint64_t)mib << 20;
    int fd = mkstemp(path);
    TvPair *p = g_new0(TvPair, 1);
    TestHost *h;

    if (fd < 0 || ftruncate(fd, size)) {
        perror(path);
        exit(1);
    }
    rnic_engine_config_defaults(&cfg);
    cfg.scm_pages = size >> 12;
    cfg.scm_persistent = 1;
    h = test_host_new(&cfg);
    g_free(h->scm);
    h->scm = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h->scm == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    close(fd);
    unlink(path);
    g_free(path);
    h->persist_hook = host_persist;
    tv_pair_init(h, p, 1, RNIC_EQ_ASYNC, 8, 6, 1u << 20);
    return p;
}

static void window_free(TvPair *p, uint32_t mib)
{
    TestHost *h = p->d;

    munmap(h->scm, (uint64_t)mib << 20);
    h->scm = NULL;
    tv_pair_fini(p);
    test_host_free(h);
    g_free(p);
}

static void bench_flush(const char *dir, uint32_t mib)
{
    TvPair *p = window_pair(dir, mib);
    TestHost *h = p->d;
    uint32_t stag = tv_reg_scm(h, p->pd, 0, 0, (uint64_t)mib << 20,
                               TV_ACCESS_ALL | RNIC_ACCESS_FLUSH_PERSISTENT,
                               1u << RNIC_SCM_SEM_PLAIN,
                               RNIC_SCM_SEM_PLAIN << RNIC_SCM_KEY_SEM_SHIFT,
                               NULL);
    struct rnic_sq_wqe w = tv_flush_wqe(1, 0, stag, 0, RNIC_FLUSH_PERSISTENT,
                                        RNIC_FLUSH_MR);
    struct rnic_cqe cqe;
    Calls c = { 0 };
    uint64_t t0;

    memset(h->scm, 0x5c, (uint64_t)mib << 20);
    tv_write_send(h, p->a, &w, NULL, NULL);
    t0 = now_ns();
    tv_ring_sq(h, p->a);
    calls_add(&c, t0);
    run_timed(h, &c);
    if (tv_poll(h, p->cqa, &cqe, 1) != 1 || cqe.status != RNIC_WC_SUCCESS) {
        fprintf(stderr, "flush: no successful completion\n");
        exit(1);
    }
    report("flush", &c);
    window_free(p, mib);
}

static void bench_persist(const char *dir, uint32_t mib)
{
    TvPair *p = window_pair(dir, mib);
    TestHost *h = p->d;
    struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_SCM_PERSIST };
    uint32_t slot = h->aq_tail & ((1u << h->aq_log2) - 1);
    Calls c = { 0 };
    uint64_t t0;

    memset(h->scm, 0x5d, (uint64_t)mib << 20);
    cmd.cmd_id = ++h->next_cmd_id;
    cmd.scm.length = (uint64_t)mib << 20;
    memcpy(test_ptr(h, h->aq + slot * sizeof(cmd)), &cmd, sizeof(cmd));
    h->aq_tail++;
    t0 = now_ns();
    test_reg_write(h, RNIC_REG_AQ_TAIL, h->aq_tail);
    calls_add(&c, t0);
    run_timed(h, &c);
    report("persist", &c);
    window_free(p, mib);
}

int main(int argc, char **argv)
{
    const char *dir = "/var/tmp";
    uint32_t mib = 256;
    int i;

    for (i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--dir=", 6)) {
            dir = argv[i] + 6;
        } else if (!strncmp(argv[i], "--mib=", 6)) {
            mib = atoi(argv[i] + 6);
        } else {
            fprintf(stderr, "usage: %s [--dir=PATH] [--mib=N]\n", argv[0]);
            return 2;
        }
    }
    bench_fast_reg();
    bench_flush(dir, mib);
    bench_persist(dir, mib);
    return 0;
}
