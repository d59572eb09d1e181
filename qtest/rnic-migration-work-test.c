/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtests of live migration with RDMA state (docs/migration.md): work in
 * flight.
 *
 *  pending-wqes     work requests posted while the VM was stopped run on
 *                   the destination exactly once and only when it runs
 *  stopped-timers   retransmission timers stand still while the VM does
 *  back-and-forth   A -> A' -> A'', a WRITE posted right before each hop
 *  reset            a RESET just before the migration
 *  mapped           a READ into a mapped STag across the switchover
 *  bench            (-m perf) the RDMA state's share of the downtime
 *
 * Plain GTest cases registered from the rnic-qos-test binary: they boot
 * their own machines (rnic-migration.h).
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "rnic-migration.h"

/* Step the clock a while: no CQE may appear. */
static void expect_no_cqe(QRnic *d, TvCq *cq)
{
    int i;

    for (i = 0; i < 20; i++) {
        qtest_clock_step(rnic_qts(d), 1000000);
        tv_expect_no_cqe(d, cq);
    }
}

/* ---------------------------------------------------------------------- */
/* Work posted while the VM is stopped                                    */
/* ---------------------------------------------------------------------- */

/*
 * The source is stopped; the "guest" posts SENDs, a multi-packet WRITE, a
 * READ and atomics and rings the doorbells. Nothing may happen while the
 * VM is stopped, on the source nor on the paused destination; after 'cont'
 * on the destination everything completes exactly once.
 */
static void test_pending_wqes(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE);
    QRnic *d = &vm->d;
    TvPair p;
    struct rnic_sq_wqe x;
    struct rnic_sge sg, rg;
    struct rnic_cqe c;
    uint64_t counter, wqes, before_b[4];
    int i;

    mig_pair_init(d, &p);
    counter = p.bufb + 60000;
    qtest_writeq(vm->qts, counter, 7);
    tv_fill(d, p.bufa, 40000, 5);
    tv_fill(d, p.bufb + 45000, 6000, 9);
    qtest_memset(vm->qts, p.bufb, 0, 40000);
    /* b's completions notify: no interrupt may come before 'cont' */
    tv_cq_arm(d, p.cqb, RNIC_DB_ARM_NEXT);
    qtest_clock_step(vm->qts, 1000000);

    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'stop' }");
    qtest_qmp_eventwait(vm->qts, "STOP");
    wqes = tv_stat(d, RNIC_STAT_WQES);
    for (i = 0; i < 4; i++) {
        rg = tv_sge(p.bufb + 20000 + 1024 * i, 1024, p.mrb);
        tv_post_recv(d, p.b, 100 + i, &rg, 1);
        sg = tv_sge(p.bufa + 1024 * i, 1024, p.mra);
        x = tv_wqe(200 + i, RNIC_WR_SEND, 1);
        tv_post_send(d, p.a, &x, &sg, NULL);
    }
    sg = tv_sge(p.bufa, 19000, p.mra);
    x = tv_wqe(300, RNIC_WR_RDMA_WRITE, 1);
    x.rdma.remote_addr = p.bufb;
    x.rdma.rkey = p.mrb;
    tv_post_send(d, p.a, &x, &sg, NULL);
    sg = tv_sge(p.bufa + 45000, 6000, p.mra);
    x = tv_wqe(301, RNIC_WR_RDMA_READ, 1);
    x.rdma.remote_addr = p.bufb + 45000;
    x.rdma.rkey = p.mrb;
    tv_post_send(d, p.a, &x, &sg, NULL);
    for (i = 0; i < 3; i++) {
        sg = tv_sge(p.bufa + 62000 + 8 * i, 8, p.mra);
        x = tv_wqe(400 + i, RNIC_WR_ATOMIC_FETCH_ADD, 1);
        x.atomic.remote_addr = counter;
        x.atomic.rkey = p.mrb;
        x.atomic.compare_add = 100;
        tv_post_send(d, p.a, &x, &sg, NULL);
    }
    /* the stopped source does nothing, however long the clock runs */
    expect_no_cqe(d, p.cqa);
    g_assert_false(tv_poll(d, p.cqb, &c, 1));
    g_assert_cmpuint(tv_stat(d, RNIC_STAT_WQES), ==, wqes);
    g_assert_cmpuint(qtest_readq(vm->qts, counter), ==, 7);

    vm = mig_migrate(vm, NULL, false);
    d = &vm->d;
    /* the paused destination has loaded everything and does nothing */
    mig_assert_run_state(vm->qts, "paused");
    expect_no_cqe(d, p.cqa);
    g_assert_false(tv_poll(d, p.cqb, &c, 1));
    g_assert_cmpuint(tv_stat(d, RNIC_STAT_WQES), ==, wqes);
    g_assert_cmpuint(qtest_readq(vm->qts, counter), ==, 7);
    qtest_memread(vm->qts, p.bufb, before_b, sizeof(before_b));
    g_assert_cmpuint(before_b[0] | before_b[1] | before_b[2] | before_b[3], ==,
                     0);
    g_assert_false(rnic_msix_fired(d, VEC_COMP));

    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'cont' }");
    qtest_qmp_eventwait(vm->qts, "RESUME");
    g_assert_true(rnic_msix_wait(d, VEC_COMP));
    for (i = 0; i < 4; i++) {
        tv_expect_cqe(d, p.cqa, 200 + i, RNIC_WC_SEND, RNIC_WC_SUCCESS);
        tv_expect_cqe(d, p.cqb, 100 + i, RNIC_WC_RECV, RNIC_WC_SUCCESS);
    }
    tv_expect_cqe(d, p.cqa, 300, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    tv_expect_cqe(d, p.cqa, 301, RNIC_WC_RDMA_READ, RNIC_WC_SUCCESS);
    for (i = 0; i < 3; i++) {
        tv_expect_cqe(d, p.cqa, 400 + i, RNIC_WC_FETCH_ADD, RNIC_WC_SUCCESS);
        g_assert_cmpuint(qtest_readq(vm->qts, p.bufa + 62000 + 8 * i), ==,
                         7 + 100 * i);
    }
    /* exactly once: no further completion, the counter added three times */
    expect_no_cqe(d, p.cqa);
    g_assert_false(tv_poll(d, p.cqb, &c, 1));
    g_assert_cmpuint(qtest_readq(vm->qts, counter), ==, 307);
    /* nine send WQEs and four receive WQEs */
    g_assert_cmpuint(tv_stat(d, RNIC_STAT_WQES), ==, wqes + 9 + 4);
    tv_assert_same(d, p.bufa, p.bufb + 20000, 4096);
    tv_assert_same(d, p.bufa, p.bufb, 19000);
    tv_assert_same(d, p.bufa + 45000, p.bufb + 45000, 6000);
    tv_pair_fini(&p);
    mig_done(vm);
}

/*
 * Mapped STags across a switchover: a READ posted while the source is
 * stopped, its response to be scattered through a mapped lkey over five
 * pieces of a's buffer, completes on the destination with every byte in
 * place; b's interleaved mapped rkey, fast-registered before, takes a
 * WRITE there.
 */
static void test_mapped(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE);
    QRnic *d = &vm->d;
    uint64_t iova = 0x6000000000ull;
    struct rnic_map_seg sa[5] = { { 0 } }, sb[2] = { { 0 } };
    uint32_t lens[5] = { 700, 1, 2500, 33, 1862 };
    uint32_t ma, mb, i;
    struct rnic_sq_wqe x;
    struct rnic_sge sg;
    uint64_t off = 0;
    TvPair p;

    mig_pair_init(d, &p);
    for (i = 0; i < 5; i++) {
        sa[i].addr = p.bufa + 30000 - 6000 * i + 7 * i;
        sa[i].length = lens[i];
        sa[i].lkey = p.mra;
    }
    ma = tv_reg_mapped(d, p.pd, iova, 5096, sa, 5, 1,
                       RNIC_ACCESS_LOCAL_WRITE, 0x41, NULL);
    for (i = 0; i < 2; i++) {
        sb[i].addr = p.bufb + 40000 + 16 * (1 - i);
        sb[i].length = 16;
        sb[i].skip = 16;
        sb[i].lkey = p.mrb;
    }
    mb = tv_alloc_mapped(d, p.pd, 2, 0x42);
    x = tv_map_reg_wqe(10, mb, iova, 32 * 64, 2, 64,
                       RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
    x.flags |= RNIC_WQE_INLINE;
    x.inline_len = sizeof(sb);
    tv_post_send(d, p.b, &x, NULL, sb);
    tv_expect_cqe(d, p.cqb, 10, RNIC_WC_REG_MR, RNIC_WC_SUCCESS);
    tv_fill(d, p.bufb, 5096, 3);

    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'stop' }");
    qtest_qmp_eventwait(vm->qts, "STOP");
    sg = tv_sge(iova, 5096, ma);
    x = tv_wqe(11, RNIC_WR_RDMA_READ, 1);
    x.rdma.remote_addr = p.bufb;
    x.rdma.rkey = p.mrb;
    tv_post_send(d, p.a, &x, &sg, NULL);
    expect_no_cqe(d, p.cqa);

    vm = mig_migrate(vm, NULL, false);
    d = &vm->d;
    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'cont' }");
    qtest_qmp_eventwait(vm->qts, "RESUME");
    tv_expect_cqe(d, p.cqa, 11, RNIC_WC_RDMA_READ, RNIC_WC_SUCCESS);
    for (i = 0; i < 5; i++) {
        tv_assert_same(d, p.bufb + off, sa[i].addr, lens[i]);
        off += lens[i];
    }
    /* the interleaved rkey, registered on the source, works here */
    tv_fill(d, p.bufa + 50000, 32 * 64, 4);
    sg = tv_sge(p.bufa + 50000, 32 * 64, p.mra);
    x = tv_wqe(12, RNIC_WR_RDMA_WRITE, 1);
    x.rdma.remote_addr = iova;
    x.rdma.rkey = mb;
    tv_post_send(d, p.a, &x, &sg, NULL);
    tv_expect_cqe(d, p.cqa, 12, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    for (i = 0; i < 64; i++) {
        tv_assert_same(d, p.bufa + 50000 + 32 * i, p.bufb + 40000 + 32 * i +
                       16, 16);
        tv_assert_same(d, p.bufa + 50000 + 32 * i + 16,
                       p.bufb + 40000 + 32 * i, 16);
    }
    tv_pair_fini(&p);
    mig_done(vm);
}

/*
 * Retransmission timers do not run while the VM is stopped: a QP towards a
 * peer that never answers keeps its retry budget however long the clock
 * runs during the pause, and spends it once the VM runs again.
 */
static void test_stopped_timers(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE);
    QRnic *d = &vm->d;
    struct rnic_sq_wqe x;
    struct rnic_sge sg;
    struct rnic_cqe c;
    uint8_t nowhere[16];
    uint64_t rtx;
    TvQp *r;
    TvPair p;
    int i;

    mig_pair_init(d, &p);
    r = tv_qp(d, RNIC_QPT_RC, p.pd, p.cqa, p.cqa, NULL, 4, 0);
    qv_gid_bytes(nowhere, 0, 99);
    tv_rc_connect(d, r, 0, nowhere, 0x77);      /* 67 ms, 7 retries */
    sg = tv_sge(p.bufa, 100, p.mra);
    x = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    x.rdma.remote_addr = 0x1000;
    x.rdma.rkey = 0x1234;
    tv_post_send(d, r, &x, &sg, NULL);
    qtest_clock_step(vm->qts, 1000000);
    rtx = tv_stat(d, RNIC_STAT_RETRANSMITS);

    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'stop' }");
    qtest_qmp_eventwait(vm->qts, "STOP");
    for (i = 0; i < 20; i++) {
        qtest_clock_step(vm->qts, 100000000);   /* 2 s in all */
    }
    g_assert_false(tv_poll(d, p.cqa, &c, 1));
    g_assert_cmpuint(tv_stat(d, RNIC_STAT_RETRANSMITS), ==, rtx);

    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'cont' }");
    qtest_qmp_eventwait(vm->qts, "RESUME");
    /* 8 x 67 ms of guest time (tv_wait_cqe's 10 us steps are too short) */
    for (i = 0; !tv_poll(d, p.cqa, &c, 1); i++) {
        g_assert_cmpint(i, <, 200);
        qtest_clock_step(vm->qts, 10000000);
    }
    g_assert_cmpuint(c.wr_id, ==, 1);
    g_assert_cmpuint(c.status, ==, RNIC_WC_RETRY_EXC_ERR);
    g_assert_cmpuint(tv_stat(d, RNIC_STAT_RETRANSMITS), ==, rtx + 7);
    g_free(r);
    tv_pair_fini(&p);
    mig_done(vm);
}

/* ---------------------------------------------------------------------- */
/* A -> A' -> A''                                                         */
/* ---------------------------------------------------------------------- */

static void test_back_and_forth(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE);
    g_autofree char *t0 = NULL;
    TvPair p;
    int hop;

    mig_pair_init(&vm->d, &p);
    mig_pair_traffic(&vm->d, &p, 10);
    for (hop = 0; hop < 3; hop++) {
        g_autofree char *t1 = NULL;
        struct rnic_sq_wqe x;
        struct rnic_sge sg;

        g_free(t0);
        t0 = mig_tables(vm);
        /* a WRITE posted right before the migration, no clock step */
        tv_fill(&vm->d, p.bufa, 30000, 20 + hop);
        sg = tv_sge(p.bufa, 30000, p.mra);
        x = tv_wqe(500 + hop, RNIC_WR_RDMA_WRITE, 1);
        x.rdma.remote_addr = p.bufb + 30000;
        x.rdma.rkey = p.mrb;
        tv_post_send(&vm->d, p.a, &x, &sg, NULL);
        vm = mig_migrate(vm, NULL, true);
        tv_expect_cqe(&vm->d, p.cqa, 500 + hop, RNIC_WC_RDMA_WRITE,
                      RNIC_WC_SUCCESS);
        tv_assert_same(&vm->d, p.bufa, p.bufb + 30000, 30000);
        t1 = mig_tables(vm);
        /* only the PSNs of that one WRITE may have moved */
        g_assert_cmpuint(strlen(t1), >=, strlen(t0) - 8);
        mig_pair_traffic(&vm->d, &p, 11 + hop);
    }
    tv_pair_fini(&p);
    mig_done(vm);
}

/* ---------------------------------------------------------------------- */
/* RESET right before the migration                                       */
/* ---------------------------------------------------------------------- */

/*
 * The driver writes RESET and the migration starts before anything else:
 * the destination is a reset device the driver brings up again.
 */
static void test_reset(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE);
    g_autofree char *t = NULL;
    struct rnic_sq_wqe x;
    struct rnic_sge sg;
    TvPair p;

    mig_pair_init(&vm->d, &p);
    /* work in flight when the reset comes */
    sg = tv_sge(p.bufa, 40000, p.mra);
    x = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    x.rdma.remote_addr = p.bufb;
    x.rdma.rkey = p.mrb;
    tv_post_send(&vm->d, p.a, &x, &sg, NULL);
    rnic_reg_write(&vm->d, RNIC_REG_DEV_CTRL, RNIC_CTRL_RESET);
    tv_pair_fini(&p);
    vm = mig_migrate(vm, NULL, true);

    t = mig_tables(vm);
    g_assert_cmpstr(t, ==, "");
    g_assert_cmphex(rnic_reg_read(&vm->d, RNIC_REG_DEV_STATUS) &
                    (RNIC_STATUS_READY | RNIC_STATUS_FATAL), ==, 0);
    g_assert_cmpuint(rnic_reg_read(&vm->d, RNIC_REG_DEV_CTRL), ==, 0);
    g_assert_cmpuint(tv_stat(&vm->d, RNIC_STAT_WQES), ==, 0);
    /* the driver's probe again, on the destination */
    vm->d.aq = 0;
    mig_pair_init(&vm->d, &p);
    mig_pair_traffic(&vm->d, &p, 8);
    tv_pair_fini(&p);
    mig_done(vm);
}

/* ---------------------------------------------------------------------- */
/* Benchmark (-m perf): the RDMA state's share of the downtime            */
/* ---------------------------------------------------------------------- */

/* Sum of 'key=value' numbers after each occurrence of 'event' in 'log'. */
static int64_t log_value(const char *log, const char *event,
                         const char *filter, const char *key)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    int64_t sum = -1;
    int i;

    g_assert_true(g_file_get_contents(log, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (i = 0; lines[i]; i++) {
        const char *ev = strstr(lines[i], event);
        const char *k;

        if (!ev || (filter && !strstr(lines[i], filter))) {
            continue;
        }
        k = strstr(ev, key);
        if (k) {
            sum = MAX(sum, 0) + g_ascii_strtoll(k + strlen(key), NULL, 10);
        }
    }
    return sum;
}

static void bench_one(const char *what, uint32_t nmr, uint32_t nqp)
{
    g_autofree char *slog = mig_path("bench-src");
    g_autofree char *dlog = mig_path("bench-dst");
    g_autofree char *src_args = g_strdup_printf(
        "%s -D %s -trace enable=rnic_state_* "
        "-trace enable=vmstate_downtime_*", MIG_DEVICE, slog);
    g_autofree char *dst_extra = g_strdup_printf("-D %s", dlog);
    MigVm *vm = mig_boot(src_args);
    QRnic *d = &vm->d;
    QDict *info = NULL;
    TvCq *cq;
    TvPair p;
    uint64_t buf;
    int64_t downtime, save_us, load_us, dev_save, dev_load, image;
    uint32_t i;
    uint8_t gid[16];

    mig_pair_init(d, &p);
    qv_gid_bytes(gid, 0, 2);
    buf = qv_alloc(d, 64 * 4096, 4096);
    for (i = 0; i < nmr; i++) {
        /* 64 KiB regions: 16 page addresses each in the log */
        tv_reg_mr(d, p.pd, buf + 4096 * (i % 48), 16 * 4096, ALL_RIGHTS, 0,
                  NULL);
    }
    cq = tv_cq(d, 10, p.eq, 0);
    for (i = 0; i < nqp; i++) {
        TvQp *qp = tv_qp(d, RNIC_QPT_RC, p.pd, cq, cq, NULL, 4, 0);

        tv_rc_connect(d, qp, 0, gid, p.b->qpn);
        g_free(qp);
    }
    /* the destination logs its own load (the last -D wins) */
    vm = mig_migrate_info(vm, dst_extra, true, &info);
    downtime = qdict_get_try_int(info, "downtime", -1);
    qobject_unref(info);
    mig_pair_traffic(&vm->d, &p, 1);

    save_us = log_value(slog, "rnic_state_save ", NULL, " in ");
    image = log_value(slog, "rnic_state_save ", NULL, "image ");
    dev_save = log_value(slog, "vmstate_downtime_save",
                         "idstr=0000:00:04.0/rnic ", "downtime=");
    load_us = log_value(dlog, "rnic_state_load ", NULL, " in ");
    dev_load = log_value(dlog, "vmstate_downtime_load",
                         "idstr=0000:00:04.0/rnic ", "downtime=");
    printf("# migration bench, %s: image %" PRId64 " bytes; engine save %"
           PRId64 " us, engine load %" PRId64 " us; rnic section save %"
           PRId64 " us, load %" PRId64 " us; VM downtime %" PRId64 " ms\n",
           what, image, save_us, load_us, dev_save, dev_load, downtime);
    g_free(cq);
    tv_pair_fini(&p);
    mig_done(vm);
}

static void test_bench(void)
{
    bench_one("idle (one RC pair, 2 MRs)", 0, 0);
    bench_one("1k MRs + 256 QPs", 1000, 256);
}

static void rnic_migration_work_register_tests(void)
{
    qtest_add_func("rnic-migration/pending-wqes", test_pending_wqes);
    qtest_add_func("rnic-migration/stopped-timers", test_stopped_timers);
    qtest_add_func("rnic-migration/back-and-forth", test_back_and_forth);
    qtest_add_func("rnic-migration/reset", test_reset);
    qtest_add_func("rnic-migration/mapped", test_mapped);
    if (g_test_perf()) {
        qtest_add_func("rnic-migration/bench", test_bench);
    }
}

libqos_init(rnic_migration_work_register_tests);
