/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtests of live migration with RDMA state (docs/migration.md): a device with every kind of object migrates and the
 * destination's mapping tables and QPs are the source's (the 'x-tables'
 * property before and after), the rkeys the peer holds keep working with
 * the data checked, work requests posted while the VM was stopped run on
 * the destination exactly once and only when it runs, A -> A' -> A''.
 * Failure paths: a cancelled migration, a destination that refuses the
 * configuration (before the switchover) or the state image (after it: the
 * source resumes), a destination without an rnic, a RESET just before the
 * migration. With -m perf: the RDMA state's share of the downtime.
 *
 * Plain GTest cases registered from the rnic-qos-test binary: they boot
 * their own machines ('-M pc', the rnic at 04.0) and drive the device
 * with the qtest verbs driver (rnic-verbs.h).
 */
#include "qemu/osdep.h"
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "libqtest.h"
#include "libqos/malloc-pc.h"
#include "libqos/pci-pc.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "qobject/qdict.h"
#include "rnic-relay.h"
#include "rnic-verbs.h"

#define MIG_DEVICE      "-M pc -device rnic,id=rnic0,addr=04.0"
#define VEC_ASYNC       1
#define VEC_COMP        2
#define BUF_SIZE        (64 * 1024)
#define ALL_RIGHTS      (RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE | \
                         RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC)
#define WAIT_US         (10 * G_USEC_PER_SEC)

/* One QEMU instance with the rnic; its driver state migrates with it. */
typedef struct MigVm {
    QTestState *qts;
    QPCIBus *bus;
    QRnic d;
    char *args;                 /* command line without -incoming */
    /* guest memory bookkeeping: moves with the VM (the RAM migrates) */
    QGuestAllocator *alloc;
    char *uri;                  /* an incoming migration's */
} MigVm;

static char *mig_dir;
static unsigned mig_seq;

static char *mig_path(const char *what)
{
    if (!mig_dir) {
        mig_dir = g_dir_make_tmp("rnic-mig-XXXXXX", NULL);
        g_assert(mig_dir);
    }
    return g_strdup_printf("%s/%s-%u", mig_dir, what, mig_seq++);
}

static void mig_cleanup_dir(void)
{
    if (!mig_dir) {
        return;
    }
    rnic_tmpdir_remove(mig_dir);
    g_free(mig_dir);
    mig_dir = NULL;
}

static void mig_attach(MigVm *vm, QGuestAllocator *alloc)
{
    QRnic *d = &vm->d;

    vm->bus = qpci_new_pc(vm->qts, alloc);
    rnic_attach(d, vm->bus, QPCI_DEVFN(4, 0), alloc);
    rnic_msix_route(d, 0);
    rnic_msix_route(d, VEC_ASYNC);
    rnic_msix_route(d, VEC_COMP);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
}

static MigVm *mig_boot(const char *args)
{
    MigVm *vm = g_new0(MigVm, 1);

    vm->args = g_strdup(args);
    vm->qts = qtest_init(vm->args);
    vm->alloc = g_new0(QGuestAllocator, 1);
    pc_alloc_init(vm->alloc, vm->qts, ALLOC_NO_FLAGS);
    mig_attach(vm, vm->alloc);
    return vm;
}

static void mig_free(MigVm *vm)
{
    if (vm->bus) {
        qpci_free_pc(vm->bus);
    }
    qtest_quit(vm->qts);
    if (vm->alloc) {
        alloc_destroy(vm->alloc);
        g_free(vm->alloc);
    }
    g_free(vm->args);
    g_free(vm->uri);
    g_free(vm);
}

static void mig_done(MigVm *vm)
{
    mig_free(vm);
    mig_cleanup_dir();
}

static char *mig_status(QTestState *qts, char **error_desc)
{
    QDict *rsp = qtest_qmp_assert_success_ref(qts,
                                              "{ 'execute': 'query-migrate' }");
    char *status = g_strdup(qdict_haskey(rsp, "status") ?
                            qdict_get_str(rsp, "status") : "none");

    if (error_desc) {
        *error_desc = g_strdup(qdict_haskey(rsp, "error-desc") ?
                               qdict_get_str(rsp, "error-desc") : "");
    }
    qobject_unref(rsp);
    return status;
}

/* Wait for one of the final states; returns it. */
static char *mig_wait_final(QTestState *qts)
{
    gint64 end = g_get_monotonic_time() + WAIT_US;

    for (;;) {
        char *st = mig_status(qts, NULL);

        if (!strcmp(st, "completed") || !strcmp(st, "failed") ||
            !strcmp(st, "cancelled")) {
            return st;
        }
        g_free(st);
        g_assert(g_get_monotonic_time() < end);
        g_usleep(2000);
    }
}

static void mig_wait_status(QTestState *qts, const char *want)
{
    g_autofree char *st = mig_wait_final(qts);

    g_assert_cmpstr(st, ==, want);
}

static char *run_state(QTestState *qts)
{
    QDict *rsp = qtest_qmp_assert_success_ref(qts,
                                              "{ 'execute': 'query-status' }");
    char *st = g_strdup(qdict_get_str(rsp, "status"));

    qobject_unref(rsp);
    return st;
}

static void assert_run_state(QTestState *qts, const char *want)
{
    g_autofree char *st = run_state(qts);

    g_assert_cmpstr(st, ==, want);
}

/*
 * Migrate 'src' to a new instance started with the same command line plus
 * 'dst_extra'; 'running': the source runs, wait for the destination to
 * resume; otherwise it stays paused after the incoming migration. The
 * source is quit and the driver state moves over.
 */
static MigVm *mig_start_dest(MigVm *src, const char *dst_extra)
{
    MigVm *dst = g_new0(MigVm, 1);
    g_autofree char *sock = mig_path("mig");

    dst->uri = g_strdup_printf("unix:%s", sock);
    dst->args = g_strdup_printf("%s %s", src->args, dst_extra ?: "");
    dst->qts = qtest_initf("%s -incoming %s", dst->args, dst->uri);
    return dst;
}

static MigVm *mig_complete(MigVm *src, MigVm *dst, bool running,
                           QDict **src_info)
{
    qtest_qmp_assert_success(src->qts, "{ 'execute': 'migrate',"
                             " 'arguments': { 'uri': %s } }", dst->uri);
    if (running) {
        qtest_qmp_eventwait(dst->qts, "RESUME");
    } else {
        gint64 end = g_get_monotonic_time() + WAIT_US;

        for (;;) {
            g_autofree char *st = run_state(dst->qts);

            if (strcmp(st, "inmigrate")) {
                g_assert_cmpstr(st, ==, "paused");
                break;
            }
            g_assert(g_get_monotonic_time() < end);
            g_usleep(2000);
        }
    }
    mig_wait_status(src->qts, "completed");
    if (src_info) {
        *src_info = qtest_qmp_assert_success_ref(src->qts,
                                                 "{ 'execute': 'query-migrate' }");
    }
    dst->d = src->d;
    dst->bus = rnic_attach_migrated(&dst->d, dst->qts);
    dst->alloc = src->alloc;
    src->alloc = NULL;
    mig_free(src);
    return dst;
}

static MigVm *mig_migrate_info(MigVm *src, const char *dst_extra,
                               bool running, QDict **src_info)
{
    return mig_complete(src, mig_start_dest(src, dst_extra), running,
                        src_info);
}

static MigVm *mig_migrate(MigVm *src, const char *dst_extra, bool running)
{
    return mig_migrate_info(src, dst_extra, running, NULL);
}

/* The device's mapping tables and QPs as the monitor shows them. */
static char *tables(MigVm *vm)
{
    QDict *rsp = qtest_qmp(vm->qts,
        "{ 'execute': 'qom-get', 'arguments': {"
        " 'path': '/machine/peripheral/rnic0', 'property': 'x-tables' } }");
    char *t;

    g_assert(qdict_haskey(rsp, "return"));
    t = g_strdup(qdict_get_str(rsp, "return"));

    qobject_unref(rsp);
    return t;
}

/* Every readable register that is state (not the heartbeat). */
static GArray *regs_snapshot(QRnic *d)
{
    static const uint32_t regs[] = {
        RNIC_REG_DEV_CTRL, RNIC_REG_DEV_STATUS, RNIC_REG_FATAL_CODE,
        RNIC_REG_SCRATCH, RNIC_REG_MAC_LO, RNIC_REG_MAC_HI,
        RNIC_REG_AQ_BASE_LO, RNIC_REG_AQ_BASE_HI, RNIC_REG_ACQ_BASE_LO,
        RNIC_REG_ACQ_BASE_HI, RNIC_REG_AQ_SIZE_LOG2, RNIC_REG_AQ_HEAD,
        RNIC_REG_ETH_CTRL, RNIC_REG_ETH_STATUS, RNIC_REG_ETH_MTU,
        RNIC_REG_ETH_IRQ_VECTOR, RNIC_REG_ETH_IRQ_MASK,
        RNIC_REG_ETH_MC_HASH_LO, RNIC_REG_ETH_MC_HASH_HI,
        RNIC_REG_ETH_TX_BASE_LO, RNIC_REG_ETH_TX_BASE_HI,
        RNIC_REG_ETH_TX_SIZE_LOG2, RNIC_REG_ETH_TX_TAIL, RNIC_REG_ETH_TX_HEAD,
        RNIC_REG_ETH_RX_BASE_LO, RNIC_REG_ETH_RX_BASE_HI,
        RNIC_REG_ETH_RX_SIZE_LOG2, RNIC_REG_ETH_RX_TAIL, RNIC_REG_ETH_RX_HEAD,
    };
    GArray *a = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t i, v;

    for (i = 0; i < G_N_ELEMENTS(regs); i++) {
        v = rnic_reg_read(d, regs[i]);
        g_array_append_val(a, v);
    }
    for (i = 0; i < 2 * RNIC_STAT_COUNT; i++) {
        v = rnic_reg_read(d, RNIC_REG_STAT_BASE + 4 * i);
        g_array_append_val(a, v);
    }
    return a;
}

static void assert_regs_equal(GArray *x, GArray *y)
{
    g_assert_cmpmem(x->data, x->len * sizeof(uint32_t),
                    y->data, y->len * sizeof(uint32_t));
}

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
/* A loopback pair, the workhorse of most tests                           */
/* ---------------------------------------------------------------------- */

/*
 * A loopback pair (TvPair): an async EQ on VEC_ASYNC, the pair's own EQ
 * (for the CQs) on VEC_COMP.
 */
static void pair_init(QRnic *d, TvPair *p)
{
    tv_eq(d, 6, VEC_ASYNC, RNIC_EQ_ASYNC, NULL);
    tv_pair_init(d, p, VEC_COMP, 0, 7, 6, BUF_SIZE);
}

/* RDMA WRITE, READ and a SEND through the pair, data checked. */
static void pair_traffic(QRnic *d, TvPair *p, uint8_t seed)
{
    struct rnic_sq_wqe w;
    struct rnic_sge sg, rg;

    tv_fill(d, p->bufa, 9000, seed);
    sg = tv_sge(p->bufa, 9000, p->mra);
    w = tv_wqe(1000 + seed, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = p->bufb + 1000;
    w.rdma.rkey = p->mrb;
    tv_post_send(d, p->a, &w, &sg, NULL);
    tv_expect_cqe(d, p->cqa, 1000 + seed, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    tv_assert_same(d, p->bufa, p->bufb + 1000, 9000);

    tv_fill(d, p->bufb + 20000, 5000, seed + 1);
    sg = tv_sge(p->bufa + 20000, 5000, p->mra);
    w = tv_wqe(2000 + seed, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = p->bufb + 20000;
    w.rdma.rkey = p->mrb;
    tv_post_send(d, p->a, &w, &sg, NULL);
    tv_expect_cqe(d, p->cqa, 2000 + seed, RNIC_WC_RDMA_READ, RNIC_WC_SUCCESS);
    tv_assert_same(d, p->bufa + 20000, p->bufb + 20000, 5000);

    rg = tv_sge(p->bufb + 40000, 3000, p->mrb);
    tv_post_recv(d, p->b, 3000 + seed, &rg, 1);
    tv_fill(d, p->bufa + 40000, 3000, seed + 2);
    sg = tv_sge(p->bufa + 40000, 3000, p->mra);
    w = tv_wqe(4000 + seed, RNIC_WR_SEND, 1);
    tv_post_send(d, p->a, &w, &sg, NULL);
    tv_expect_cqe(d, p->cqa, 4000 + seed, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    tv_expect_cqe(d, p->cqb, 3000 + seed, RNIC_WC_RECV, RNIC_WC_SUCCESS);
    tv_assert_same(d, p->bufa + 40000, p->bufb + 40000, 3000);
}

/* ---------------------------------------------------------------------- */
/* Every kind of object                                                   */
/* ---------------------------------------------------------------------- */

#define L2_PAGES    520         /* two leaves of a level-2 page list */

typedef struct World {
    TvPair p;                     /* ctx 0 (untagged): RC pair a <-> b */
    uint32_t ctx1, pd1, uctx, pdu, mru;
    TvCq *cqc, *cqd, *cqu, *cqud;
    TvSrq *srq;
    TvQp *c, *dq, *ud1, *ud2, *gsi;
    uint64_t bufc, bufd, bufu;
    uint32_t mrc, mrd;
    uint64_t contig, l2buf, fr_region;
    uint32_t mr_contig, mr_l2, fr_valid, fr_inval, fr_unused;
} World;

static uint32_t l2_page(uint32_t i)
{
    return (i * 7) % L2_PAGES;  /* 7 is coprime to 520: a permutation */
}

static uint32_t reg_mr_cmd(QRnic *d, struct rnic_admin_cmd *c)
{
    c->opcode = RNIC_CMD_REG_MR;
    return tv_cmd_ok(d, c);
}

/* Fast-register 'pages' pages of 'region' at iova under 'stag' via QP b. */
static void fast_reg(QRnic *d, World *w, uint32_t stag, uint64_t iova,
                     uint64_t region, uint32_t pages, uint64_t wr_id)
{
    struct rnic_sq_wqe x = tv_fast_reg_wqe(d, wr_id, stag, iova, region, pages,
                                           RNIC_ACCESS_LOCAL_WRITE |
                                           RNIC_ACCESS_REMOTE_WRITE |
                                           RNIC_ACCESS_REMOTE_READ);

    tv_post_send(d, w->p.b, &x, NULL, NULL);
    tv_expect_cqe(d, w->p.cqb, wr_id, RNIC_WC_REG_MR, RNIC_WC_SUCCESS);
}

static void world_init(QRnic *d, World *w)
{
    struct rnic_admin_cmd c;
    struct rnic_sq_wqe x;
    struct rnic_sge sg, rg;
    uint8_t gid2[16], gid3[16];
    uint64_t dir, leaf0, leaf1;
    uint32_t i;

    memset(w, 0, sizeof(*w));
    pair_init(d, &w->p);

    /* a second network (VLAN 100): its own table, QPNs and an SRQ */
    w->ctx1 = tv_net_ctx(d, 100);
    qv_gid(d, 2, w->ctx1, 100, 1);
    qv_gid(d, 3, w->ctx1, 100, 2);
    qv_gid_bytes(gid2, 100, 1);
    qv_gid_bytes(gid3, 100, 2);
    w->pd1 = tv_pd(d, w->ctx1, 0);
    w->cqc = tv_cq(d, 6, w->p.eq, 0);
    w->cqd = tv_cq(d, 6, w->p.eq, 0);
    w->srq = tv_srq(d, w->pd1, 5, 0, 0);
    w->c = tv_qp(d, RNIC_QPT_RC, w->pd1, w->cqc, w->cqc, NULL, 5, 0);
    w->dq = tv_qp(d, RNIC_QPT_RC, w->pd1, w->cqd, w->cqd, w->srq, 5, 0);
    tv_rc_connect(d, w->c, 2, gid3, w->dq->qpn);
    tv_rc_connect(d, w->dq, 3, gid2, w->c->qpn);
    w->bufc = qv_alloc(d, BUF_SIZE, 4096);
    w->bufd = qv_alloc(d, BUF_SIZE, 4096);
    w->mrc = tv_reg_mr(d, w->pd1, w->bufc, BUF_SIZE, ALL_RIGHTS, 0, NULL);
    w->mrd = tv_reg_mr(d, w->pd1, w->bufd, BUF_SIZE, ALL_RIGHTS, 0, NULL);

    /* UD pair and the GSI QP of context 0 */
    w->cqud = tv_cq(d, 5, RNIC_HANDLE_NONE, 0);
    w->ud1 = tv_qp(d, RNIC_QPT_UD, w->p.pd, w->cqud, w->cqud, NULL, 4, 0);
    w->ud2 = tv_qp(d, RNIC_QPT_UD, w->p.pd, w->cqud, w->cqud, NULL, 4, 0);
    w->gsi = tv_qp(d, RNIC_QPT_GSI, w->p.pd, w->cqud, w->cqud, NULL, 3, 0);
    g_assert_cmpuint(w->gsi->qpn, ==, 1);
    tv_ud_ready(d, w->ud1, 0x1111);
    tv_ud_ready(d, w->ud2, 0x2222);
    tv_ud_ready(d, w->gsi, 0x80010000);

    /* a user context owning a PD, a CQ and an MR */
    w->uctx = tv_uctx(d);
    w->pdu = tv_pd(d, w->p.ctx, w->uctx);
    w->cqu = tv_cq(d, 4, w->p.eq, w->uctx);
    /* its doorbell page arms it */
    tv_cq_arm(d, w->cqu, RNIC_DB_ARM_NEXT);
    w->bufu = qv_alloc(d, 4096, 4096);
    c = (struct rnic_admin_cmd) { 0 };
    c.uctx = cpu_to_le32(w->uctx);
    c.mr.iova = cpu_to_le64(0x40000000);
    c.mr.length = cpu_to_le64(4096);
    c.mr.pbl_addr = cpu_to_le64(w->bufu);
    c.mr.pd = cpu_to_le32(w->pdu);
    c.mr.npages = cpu_to_le32(1);
    c.mr.access = cpu_to_le32(RNIC_ACCESS_LOCAL_WRITE);
    c.mr.page_shift = 12;
    c.mr.levels = 0;
    c.mr.key = 0x77;
    w->mru = reg_mr_cmd(d, &c);

    /* a contiguous region (level 0) at iova 0x300000 */
    w->contig = qv_alloc(d, 2 * 4096, 4096);
    c = (struct rnic_admin_cmd) { 0 };
    c.mr.iova = cpu_to_le64(0x300000);
    c.mr.length = cpu_to_le64(8192);
    c.mr.pbl_addr = cpu_to_le64(w->contig);
    c.mr.pd = cpu_to_le32(w->p.pd);
    c.mr.npages = cpu_to_le32(2);
    c.mr.access = cpu_to_le32(ALL_RIGHTS);
    c.mr.page_shift = 12;
    c.mr.levels = 0;
    c.mr.key = 0x10;
    w->mr_contig = reg_mr_cmd(d, &c);

    /* a two-level page list over permuted pages at iova 0x5000000 */
    w->l2buf = qv_alloc(d, (uint64_t)L2_PAGES * 4096, 4096);
    dir = qv_alloc(d, 16, 8);
    leaf0 = qv_alloc(d, 4096, 4096);
    leaf1 = qv_alloc(d, 4096, 4096);
    qtest_writeq(rnic_qts(d), dir, leaf0);
    qtest_writeq(rnic_qts(d), dir + 8, leaf1);
    for (i = 0; i < L2_PAGES; i++) {
        uint64_t leaf = i < 512 ? leaf0 : leaf1;

        qtest_writeq(rnic_qts(d), leaf + 8 * (i % 512),
                     w->l2buf + 4096ull * l2_page(i));
    }
    c = (struct rnic_admin_cmd) { 0 };
    c.mr.iova = cpu_to_le64(0x5000000);
    c.mr.length = cpu_to_le64((uint64_t)L2_PAGES * 4096);
    c.mr.pbl_addr = cpu_to_le64(dir);
    c.mr.pd = cpu_to_le32(w->p.pd);
    c.mr.npages = cpu_to_le32(L2_PAGES);
    c.mr.access = cpu_to_le32(ALL_RIGHTS);
    c.mr.page_shift = 12;
    c.mr.levels = 2;
    c.mr.key = 0x20;
    w->mr_l2 = reg_mr_cmd(d, &c);

    /* fast-reg MRs: registered, registered then invalidated, never used */
    w->fr_region = qv_alloc(d, 4 * 4096, 4096);
    w->fr_valid = tv_alloc_mr(d, w->p.pd, 4, 0x01);
    w->fr_inval = tv_alloc_mr(d, w->p.pd, 4, 0x02);
    w->fr_unused = tv_alloc_mr(d, w->p.pd, 8, 0x03);
    w->fr_valid = RNIC_STAG(RNIC_STAG_INDEX(w->fr_valid), 0x42);
    fast_reg(d, w, w->fr_valid, 0x7000000, w->fr_region, 4, 51);
    w->fr_inval = RNIC_STAG(RNIC_STAG_INDEX(w->fr_inval), 0x43);
    fast_reg(d, w, w->fr_inval, 0x8000000, w->fr_region, 2, 52);
    x = tv_wqe(53, RNIC_WR_LOCAL_INV, 0);
    x.imm_or_inv = w->fr_inval;
    tv_post_send(d, w->p.b, &x, NULL, NULL);
    tv_expect_cqe(d, w->p.cqb, 53, RNIC_WC_LOCAL_INV, RNIC_WC_SUCCESS);

    /* the Ethernet function's rings (configured, idle) */
    rnic_reg_write(d, RNIC_REG_ETH_TX_BASE_LO,
                   (uint32_t)qv_alloc(d, 4096, 4096));
    rnic_reg_write(d, RNIC_REG_ETH_TX_SIZE_LOG2, 6);
    rnic_reg_write(d, RNIC_REG_ETH_RX_BASE_LO,
                   (uint32_t)qv_alloc(d, 4096, 4096));
    rnic_reg_write(d, RNIC_REG_ETH_RX_SIZE_LOG2, 6);
    rnic_reg_write(d, RNIC_REG_ETH_IRQ_VECTOR, 3);
    rnic_reg_write(d, RNIC_REG_ETH_CTRL, RNIC_ETH_TX_EN | RNIC_ETH_RX_EN |
                   RNIC_ETH_BROADCAST);

    /* traffic everywhere: the PSNs move */
    pair_traffic(d, &w->p, 1);
    for (i = 0; i < 2; i++) {
        rg = tv_sge(w->bufd + 4096 * i, 4096, w->mrd);
        tv_post_srq(d, w->srq, 600 + i, &rg, 1);
    }
    tv_fill(d, w->bufc, 2000, 77);
    sg = tv_sge(w->bufc, 2000, w->mrc);
    x = tv_wqe(61, RNIC_WR_SEND, 1);
    tv_post_send(d, w->c, &x, &sg, NULL);
    tv_expect_cqe(d, w->cqc, 61, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    tv_expect_cqe(d, w->cqd, 600, RNIC_WC_RECV, RNIC_WC_SUCCESS);
    /* two send completions of a stay unconsumed across the migration */
    for (i = 0; i < 2; i++) {
        sg = tv_sge(w->p.bufa, 100, w->p.mra);
        x = tv_wqe(70 + i, RNIC_WR_RDMA_WRITE, 1);
        x.rdma.remote_addr = w->p.bufb + 60000;
        x.rdma.rkey = w->p.mrb;
        tv_post_send(d, w->p.a, &x, &sg, NULL);
    }
    /* b's CQ armed: the first completion after the migration notifies */
    tv_cq_arm(d, w->p.cqb, RNIC_DB_ARM_NEXT);
    qtest_clock_step(rnic_qts(d), 1000000);
}

static void world_free(World *w)
{
    tv_pair_fini(&w->p);
    g_free(w->cqc);
    g_free(w->cqd);
    g_free(w->cqu);
    g_free(w->cqud);
    g_free(w->srq);
    g_free(w->c);
    g_free(w->dq);
    g_free(w->ud1);
    g_free(w->ud2);
    g_free(w->gsi);
}

/* Everything a peer or the driver could do, on the destination. */
static void world_check(QRnic *d, World *w)
{
    struct rnic_sq_wqe x;
    struct rnic_sge sg, rg;
    struct rnic_cqe c;
    struct rnic_eqe e;
    uint64_t v;
    uint32_t i, stag;
    uint8_t page[4096], want[4096];

    /* the completions the driver had not consumed are still there */
    tv_expect_cqe(d, w->p.cqa, 70, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    tv_expect_cqe(d, w->p.cqa, 71, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    g_assert_false(tv_poll(d, w->p.cqa, &c, 1));

    /* the rkeys issued before the migration: WRITE, READ, SEND, atomic */
    pair_traffic(d, &w->p, 2);
    g_assert_true(rnic_msix_wait(d, VEC_COMP));      /* b's CQ was armed */
    qtest_memread(rnic_qts(d), w->p.eq_ring, &e, sizeof(e));
    g_assert_cmpuint(e.type, ==, RNIC_EQE_COMPLETION);
    qtest_writeq(rnic_qts(d), w->p.bufb + 64, 1000);
    sg = tv_sge(w->p.bufa + 64, 8, w->p.mra);
    x = tv_wqe(80, RNIC_WR_ATOMIC_FETCH_ADD, 1);
    x.atomic.remote_addr = w->p.bufb + 64;
    x.atomic.rkey = w->p.mrb;
    x.atomic.compare_add = 5;
    tv_post_send(d, w->p.a, &x, &sg, NULL);
    tv_expect_cqe(d, w->p.cqa, 80, RNIC_WC_FETCH_ADD, RNIC_WC_SUCCESS);
    g_assert_cmpuint(qtest_readq(rnic_qts(d), w->p.bufa + 64), ==, 1000);
    g_assert_cmpuint(qtest_readq(rnic_qts(d), w->p.bufb + 64), ==, 1005);

    /* the two-level region: a READ across page boundaries */
    for (i = 0; i < 3; i++) {
        tv_fill(d, w->l2buf + 4096ull * l2_page(100 + i), 4096, 30 + i);
    }
    sg = tv_sge(w->p.bufa + 8192, 3 * 4096 - 200, w->p.mra);
    x = tv_wqe(81, RNIC_WR_RDMA_READ, 1);
    x.rdma.remote_addr = 0x5000000 + 100 * 4096 + 100;
    x.rdma.rkey = w->mr_l2;
    tv_post_send(d, w->p.a, &x, &sg, NULL);
    tv_expect_cqe(d, w->p.cqa, 81, RNIC_WC_RDMA_READ, RNIC_WC_SUCCESS);
    qtest_memread(rnic_qts(d), w->p.bufa + 8192 + 4096 - 100, page, 4096);
    qtest_memread(rnic_qts(d), w->l2buf + 4096ull * l2_page(101), want, 4096);
    g_assert_cmpmem(page, 4096, want, 4096);

    /* the contiguous region */
    tv_fill(d, w->contig, 8192, 40);
    sg = tv_sge(w->p.bufa + 30000, 8192, w->p.mra);
    x = tv_wqe(82, RNIC_WR_RDMA_READ, 1);
    x.rdma.remote_addr = 0x300000;
    x.rdma.rkey = w->mr_contig;
    tv_post_send(d, w->p.a, &x, &sg, NULL);
    tv_expect_cqe(d, w->p.cqa, 82, RNIC_WC_RDMA_READ, RNIC_WC_SUCCESS);
    tv_assert_same(d, w->p.bufa + 30000, w->contig, 8192);

    /* the fast-registered rkey */
    tv_fill(d, w->p.bufa, 6000, 50);
    sg = tv_sge(w->p.bufa, 6000, w->p.mra);
    x = tv_wqe(83, RNIC_WR_RDMA_WRITE, 1);
    x.rdma.remote_addr = 0x7000000 + 3000;
    x.rdma.rkey = w->fr_valid;
    tv_post_send(d, w->p.a, &x, &sg, NULL);
    tv_expect_cqe(d, w->p.cqa, 83, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    tv_assert_same(d, w->p.bufa, w->fr_region + 3000, 6000);

    /* VLAN 100: the SRQ's second receive takes a SEND */
    tv_fill(d, w->bufc, 3000, 60);
    sg = tv_sge(w->bufc, 3000, w->mrc);
    x = tv_wqe(84, RNIC_WR_SEND, 1);
    tv_post_send(d, w->c, &x, &sg, NULL);
    tv_expect_cqe(d, w->cqc, 84, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    c = tv_wait_cqe(d, w->cqd);
    g_assert_cmpuint(c.wr_id, ==, 601);
    g_assert_cmpuint(c.qp_num, ==, w->dq->qpn);
    tv_assert_same(d, w->bufc, w->bufd + 4096, 3000);

    /* UD, by QPN and Q_Key */
    rg = tv_sge(w->p.bufb + 50000, 40 + 500, w->p.mrb);
    tv_post_recv(d, w->ud2, 90, &rg, 1);
    tv_fill(d, w->p.bufa + 50000, 500, 70);
    sg = tv_sge(w->p.bufa + 50000, 500, w->p.mra);
    x = tv_wqe(91, RNIC_WR_SEND, 1);
    x.ud.remote_qpn = w->ud2->qpn;
    x.ud.remote_qkey = 0x2222;
    qv_gid_bytes(x.ud.av.dgid, 0, 2);
    x.ud.av.hop_limit = 64;
    tv_post_send(d, w->ud1, &x, &sg, NULL);
    for (i = 0; i < 2; i++) {
        /* one CQ for both: the receive and the send, in either order */
        c = tv_wait_cqe(d, w->cqud);
        g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
        if (c.wr_id == 90) {
            g_assert_cmpuint(c.src_qp, ==, w->ud1->qpn);
        } else {
            g_assert_cmpuint(c.wr_id, ==, 91);
        }
    }
    tv_assert_same(d, w->p.bufa + 50000, w->p.bufb + 50000 + 40, 500);

    /* the admin queue goes on; a new STag collides with none */
    v = qv_alloc(d, 4096, 4096);
    stag = tv_reg_mr(d, w->p.pd, v, 4096, ALL_RIGHTS, 0, NULL);
    g_assert_cmpuint(RNIC_STAG_INDEX(stag), !=, RNIC_STAG_INDEX(w->p.mra));
    g_assert_cmpuint(RNIC_STAG_INDEX(stag), !=, RNIC_STAG_INDEX(w->p.mrb));
    g_assert_cmpuint(RNIC_STAG_INDEX(stag), !=, RNIC_STAG_INDEX(w->mr_l2));

    /* still per network: a key of VLAN 0 means nothing on VLAN 100 */
    sg = tv_sge(w->bufc, 100, w->mrc);
    x = tv_wqe(92, RNIC_WR_RDMA_WRITE, 1);
    x.rdma.remote_addr = w->p.bufb;
    x.rdma.rkey = w->p.mrb;
    tv_post_send(d, w->c, &x, &sg, NULL);
    tv_expect_cqe(d, w->cqc, 92, 0, RNIC_WC_REM_ACCESS_ERR);
    /* and the invalidated fast-reg rkey stayed invalid */
    x = tv_wqe(93, RNIC_WR_RDMA_WRITE, 1);
    sg = tv_sge(w->p.bufa, 100, w->p.mra);
    x.rdma.remote_addr = 0x8000000;
    x.rdma.rkey = w->fr_inval;
    tv_post_send(d, w->p.a, &x, &sg, NULL);
    tv_expect_cqe(d, w->p.cqa, 93, 0, RNIC_WC_REM_ACCESS_ERR);
}

static void test_objects(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE);
    World w;
    g_autofree char *before = NULL, *after = NULL;
    g_autoptr(GArray) regs_before = NULL;
    g_autoptr(GArray) regs_after = NULL;

    rnic_reg_write(&vm->d, RNIC_REG_SCRATCH, 0x0badcafe);
    world_init(&vm->d, &w);
    before = tables(vm);
    regs_before = regs_snapshot(&vm->d);
    g_test_message("tables before:");
    g_test_message("%s", before);
    /* what the tables must show */
    g_assert_nonnull(strstr(before, "net ctx=1 vlan=100 mrs=2 qps=2"));
    g_assert_nonnull(strstr(before, "owner=1 access=0x01 iova=0x40000000"));
    g_assert_nonnull(strstr(before, "type=GSI state=RTS"));
    g_assert_nonnull(strstr(before, "state=invalid type=fast-reg max-pages=4"));

    vm = mig_migrate(vm, NULL, true);

    after = tables(vm);
    g_assert_cmpstr(after, ==, before);
    regs_after = regs_snapshot(&vm->d);
    assert_regs_equal(regs_before, regs_after);
    world_check(&vm->d, &w);
    world_free(&w);
    mig_done(vm);
}

/* ---------------------------------------------------------------------- */
/* Multi-network PDs (ABI 1.1)                                            */
/* ---------------------------------------------------------------------- */

/*
 * A multi-network PD bound to VLAN 5 by two RC QPs, with an MR, a
 * registered fast-reg MR and a UD QP (in every context): the destination's
 * tables are the source's, replicas included, and the PD's rkey keeps
 * working on VLAN 5 and keeps failing on the untagged network.
 */
static void test_multi_net(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE);
    QRnic *d = &vm->d;
    uint32_t ctx0, ctx5, mpd, pd0, mr, mr0, eq;
    uint8_t g5a[16], g5b[16], g0a[16], g0b[16];
    TvCq *cq;
    TvQp *qa, *qb, *ud, *q0a, *q0b;
    uint64_t buf;
    struct rnic_sq_wqe w;
    struct rnic_sge sg;
    g_autofree char *before = NULL, *after = NULL;

    ctx0 = tv_net_ctx(d, 0);
    ctx5 = tv_net_ctx(d, 5);
    qv_gid(d, 0, ctx0, 0, 1);
    qv_gid(d, 1, ctx0, 0, 2);
    qv_gid(d, 2, ctx5, 5, 1);
    qv_gid(d, 3, ctx5, 5, 2);
    qv_gid_bytes(g0a, 0, 1);
    qv_gid_bytes(g0b, 0, 2);
    qv_gid_bytes(g5a, 5, 1);
    qv_gid_bytes(g5b, 5, 2);
    mpd = tv_pd(d, RNIC_PD_MULTI_NET, 0);
    pd0 = tv_pd(d, ctx0, 0);
    eq = tv_eq(d, 6, VEC_COMP, 0, NULL);
    cq = tv_cq(d, 7, eq, 0);
    buf = qv_alloc(d, 8 * 4096, 4096);
    mr = tv_reg_mr(d, mpd, buf, 4 * 4096, ALL_RIGHTS, 0, NULL);
    mr0 = tv_reg_mr(d, pd0, buf + 4 * 4096, 4 * 4096, ALL_RIGHTS, 0, NULL);
    tv_alloc_mr(d, mpd, 4, 0x51);     /* replicated while invalid too */
    qa = tv_qp(d, RNIC_QPT_RC, mpd, cq, cq, NULL, 4, 0);
    qb = tv_qp(d, RNIC_QPT_RC, mpd, cq, cq, NULL, 4, 0);
    tv_rc_connect(d, qa, 2, g5b, qb->qpn);
    tv_rc_connect(d, qb, 3, g5a, qa->qpn);
    ud = tv_qp(d, RNIC_QPT_UD, mpd, cq, cq, NULL, 4, 0);
    tv_ud_ready(d, ud, 0x2222);
    before = tables(vm);
    g_test_message("tables before:");
    g_test_message("%s", before);
    g_assert_nonnull(strstr(before, " replica\n"));
    g_assert_nonnull(strstr(before, "net ctx=multi"));
    g_assert_nonnull(strstr(before, "vlan=5 mrs=2 qps=3"));

    vm = mig_migrate(vm, NULL, true);
    d = &vm->d;

    after = tables(vm);
    g_assert_cmpstr(after, ==, before);
    /* VLAN 5: the PD's rkey writes */
    tv_fill(d, buf, 4096, 0x77);
    sg = tv_sge(buf, 4096, mr);
    w = tv_wqe(71, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = buf + 2 * 4096;
    w.rdma.rkey = mr;
    tv_post_send(d, qa, &w, &sg, NULL);
    tv_expect_cqe(d, cq, 71, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    tv_assert_same(d, buf, buf + 2 * 4096, 4096);
    /* untagged: unknown there, also after the migration */
    q0a = tv_qp(d, RNIC_QPT_RC, pd0, cq, cq, NULL, 4, 0);
    q0b = tv_qp(d, RNIC_QPT_RC, pd0, cq, cq, NULL, 4, 0);
    tv_rc_connect(d, q0a, 0, g0b, q0b->qpn);
    tv_rc_connect(d, q0b, 1, g0a, q0a->qpn);
    sg = tv_sge(buf + 4 * 4096, 16, mr0);
    w = tv_wqe(72, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = buf;
    w.rdma.rkey = mr;
    tv_post_send(d, q0a, &w, &sg, NULL);
    tv_expect_cqe(d, cq, 72, 0, RNIC_WC_REM_ACCESS_ERR);
    g_free(cq);
    g_free(qa);
    g_free(qb);
    g_free(ud);
    g_free(q0a);
    g_free(q0b);
    mig_done(vm);
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

    pair_init(d, &p);
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
    assert_run_state(vm->qts, "paused");
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

    pair_init(d, &p);
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

    pair_init(&vm->d, &p);
    pair_traffic(&vm->d, &p, 10);
    for (hop = 0; hop < 3; hop++) {
        g_autofree char *t1 = NULL;
        struct rnic_sq_wqe x;
        struct rnic_sge sg;

        g_free(t0);
        t0 = tables(vm);
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
        t1 = tables(vm);
        /* only the PSNs of that one WRITE may have moved */
        g_assert_cmpuint(strlen(t1), >=, strlen(t0) - 8);
        pair_traffic(&vm->d, &p, 11 + hop);
    }
    tv_pair_fini(&p);
    mig_done(vm);
}

/* ---------------------------------------------------------------------- */
/* Failure paths                                                          */
/* ---------------------------------------------------------------------- */

/* Migrate to a destination that must fail; the source keeps running. */
static void mig_expect_failure(MigVm *src, QTestState *dst, const char *uri)
{
    qtest_qmp_assert_success(src->qts, "{ 'execute': 'migrate',"
                             " 'arguments': { 'uri': %s } }", uri);
    mig_wait_status(src->qts, "failed");
    assert_run_state(src->qts, "running");
}

/*
 * Start a destination that waits for 'migrate-incoming' and stays alive
 * when it fails (so its own view of the failure can be queried).
 */
static QTestState *mig_dest_deferred(const char *args, const char *uri,
                                     const char *log)
{
    QTestState *dst;

    dst = qtest_initf("%s -incoming defer -D %s -trace enable=rnic_err_*",
                      args, log);
    qtest_qmp_assert_success(dst, "{ 'execute': 'migrate-incoming',"
                             " 'arguments': { 'uri': %s,"
                             " 'exit-on-error': false } }", uri);
    return dst;
}

static void assert_log_contains(const char *log, const char *what)
{
    g_autofree char *text = NULL;

    g_assert_true(g_file_get_contents(log, &text, NULL, NULL));
    if (!strstr(text, what)) {
        g_test_message("log %s:", log);
        g_test_message("%s", text);
    }
    g_assert_nonnull(strstr(text, what));
}

static void test_cancel(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE);
    g_autofree char *sock = mig_path("cancel");
    g_autofree char *uri = g_strdup_printf("unix:%s", sock);
    g_autofree char *log = mig_path("cancel-log");
    g_autofree char *t0 = NULL, *t1 = NULL;
    QTestState *dst;
    TvPair p;
    gint64 end;

    pair_init(&vm->d, &p);
    pair_traffic(&vm->d, &p, 1);
    t0 = tables(vm);
    dst = mig_dest_deferred(MIG_DEVICE, uri, log);
    /* slow enough never to finish */
    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'migrate-set-parameters',"
                             " 'arguments': { 'max-bandwidth': 4096 } }");
    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'migrate',"
                             " 'arguments': { 'uri': %s } }", uri);
    end = g_get_monotonic_time() + WAIT_US;
    for (;;) {
        g_autofree char *st = mig_status(vm->qts, NULL);

        if (!strcmp(st, "active")) {
            break;
        }
        g_assert(g_get_monotonic_time() < end);
        g_usleep(1000);
    }
    /* traffic during the migration */
    pair_traffic(&vm->d, &p, 2);
    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'migrate_cancel' }");
    mig_wait_status(vm->qts, "cancelled");
    assert_run_state(vm->qts, "running");
    /* the source's device goes on as if nothing had happened */
    pair_traffic(&vm->d, &p, 3);
    t1 = tables(vm);
    g_assert_cmpuint(strlen(t1), ==, strlen(t0));
    qtest_quit(dst);

    /* and migrates for real afterwards */
    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'migrate-set-parameters',"
                             " 'arguments': { 'max-bandwidth': 1073741824 } }");
    vm = mig_migrate(vm, NULL, true);
    pair_traffic(&vm->d, &p, 4);
    tv_pair_fini(&p);
    mig_done(vm);
}

/*
 * A destination with fewer mapping-table entries than the guest was told
 * refuses when the migration starts: the source never stops.
 */
static void test_refuse_config(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE);
    g_autofree char *sock = mig_path("cfg");
    g_autofree char *uri = g_strdup_printf("unix:%s", sock);
    g_autofree char *log = mig_path("cfg-log");
    g_autofree char *dst_args = g_strdup(MIG_DEVICE ",max-mrs=8");
    g_autofree char *st = NULL;
    QTestState *dst;
    TvPair p;
    int i;

    pair_init(&vm->d, &p);
    for (i = 0; i < 10; i++) {
        tv_reg_mr(&vm->d, p.pd, p.bufa, 4096, 0, 0, NULL);
    }
    dst = mig_dest_deferred(dst_args, uri, log);
    mig_expect_failure(vm, dst, uri);
    st = mig_wait_final(dst);
    g_assert_cmpstr(st, ==, "failed");
    assert_log_contains(log, "max-mrs=8 is below the source's 16384");
    qtest_quit(dst);
    pair_traffic(&vm->d, &p, 5);
    tv_pair_fini(&p);
    mig_done(vm);
}

#define POSTCOPY_ON "{ 'execute': 'migrate-set-capabilities', 'arguments':" \
    " { 'capabilities': [ { 'capability': 'postcopy-ram', 'state': true } ] } }"
#define POSTCOPY_REFUSED "rnic: postcopy migration is not supported"

/* The error of setting postcopy-ram, as a string ("" if it succeeded). */
static char *postcopy_on_error(QTestState *qts)
{
    QDict *rsp = qtest_qmp(qts, POSTCOPY_ON);
    char *desc = g_strdup(qdict_haskey(rsp, "error") ?
                          qdict_get_str(qdict_get_qdict(rsp, "error"), "desc") :
                          "");

    qobject_unref(rsp);
    return desc;
}

/*
 * Postcopy is refused cleanly (docs/migration.md "Postcopy"): the same
 * QEMU without the rnic accepts the postcopy-ram capability as a
 * destination (so the refusal is the device's), a destination with the
 * rnic rejects it (QEMU's postcopy probe), and a source with the rnic fails
 * a postcopy migration at its setup and keeps running with its traffic.
 */
static void test_postcopy_refused(void)
{
    MigVm *vm;
    QTestState *qts;
    g_autofree char *plain = NULL, *refused = NULL, *st = NULL, *err = NULL;
    TvPair p;

    qts = qtest_init("-M pc -incoming defer");
    plain = postcopy_on_error(qts);
    qtest_quit(qts);
    if (strstr(plain, "Userfaultfd not available")) {
        g_test_skip("this host has no userfaultfd: postcopy is refused "
                    "before the device is asked");
        return;
    }
    g_assert_cmpstr(plain, ==, "");

    qts = qtest_init(MIG_DEVICE " -incoming defer");
    refused = postcopy_on_error(qts);
    qtest_quit(qts);
    g_test_message("destination: %s", refused);
    g_assert_nonnull(strstr(refused, POSTCOPY_REFUSED));

    vm = mig_boot(MIG_DEVICE);
    pair_init(&vm->d, &p);
    qtest_qmp_assert_success(vm->qts, POSTCOPY_ON);
    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'migrate',"
                             " 'arguments': { 'uri': 'exec:cat >/dev/null' } }");
    st = mig_wait_final(vm->qts);
    g_free(mig_status(vm->qts, &err));
    g_test_message("source: %s: %s", st, err);
    g_assert_cmpstr(st, ==, "failed");
    g_assert_nonnull(strstr(err, POSTCOPY_REFUSED));
    assert_run_state(vm->qts, "running");
    pair_traffic(&vm->d, &p, 7);
    tv_pair_fini(&p);
    mig_done(vm);
}

/* A destination without the device: QEMU's unknown section, early. */
static void test_no_device(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE);
    g_autofree char *sock = mig_path("nodev");
    g_autofree char *uri = g_strdup_printf("unix:%s", sock);
    g_autofree char *log = mig_path("nodev-log");
    g_autofree char *st = NULL, *err = NULL;
    QTestState *dst;
    TvPair p;

    pair_init(&vm->d, &p);
    dst = mig_dest_deferred("-M pc", uri, log);
    mig_expect_failure(vm, dst, uri);
    st = mig_wait_final(dst);
    g_assert_cmpstr(st, ==, "failed");
    g_free(mig_status(dst, &err));
    g_test_message("destination: %s", err);
    qtest_quit(dst);
    pair_traffic(&vm->d, &p, 6);
    tv_pair_fini(&p);
    mig_done(vm);
}

/*
 * A relay between source and destination that damages the rnic's state
 * image (its magic "RIMG" becomes "XIMG") and forwards everything else,
 * the return path included.
 */
typedef struct Relay {
    int listen_fd;
    char *dst_path;
    GThread *thread;
    int hits;
} Relay;

static int unix_connect_path(const char *path)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    g_assert_cmpint(fd, >=, 0);
    g_strlcpy(a.sun_path, path, sizeof(a.sun_path));
    g_assert_cmpint(connect(fd, (struct sockaddr *)&a, sizeof(a)), ==, 0);
    return fd;
}

static bool write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        /* a peer that went away must not kill the test with SIGPIPE */
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

        if (k <= 0) {
            return false;
        }
        p += k;
        n -= k;
    }
    return true;
}

static gpointer relay_thread(gpointer opaque)
{
    static const uint8_t magic[4] = { 'R', 'I', 'M', 'G' };
    Relay *r = opaque;
    int src = accept(r->listen_fd, NULL, NULL);
    int dst = unix_connect_path(r->dst_path);
    uint8_t buf[65536 + 3];
    size_t held = 0;            /* source bytes held back: a magic prefix */
    bool src_open = true, dst_open = true;

    while (src_open || dst_open) {
        struct pollfd pfd[2] = {
            { .fd = src_open ? src : -1, .events = POLLIN },
            { .fd = dst_open ? dst : -1, .events = POLLIN },
        };

        if (poll(pfd, 2, 10000) <= 0) {
            break;
        }
        if (pfd[0].revents) {
            ssize_t n = read(src, buf + held, 65536);
            size_t i, len, keep = 0;

            if (n <= 0) {
                write_all(dst, buf, held);
                shutdown(dst, SHUT_WR);
                src_open = false;
                held = 0;
            } else {
                len = held + n;
                for (i = 0; i + 4 <= len; i++) {
                    if (!memcmp(buf + i, magic, 4)) {
                        buf[i] = 'X';
                        r->hits++;
                    }
                }
                /* a magic may continue in the next read */
                for (keep = MIN(3, len); keep; keep--) {
                    if (!memcmp(buf + len - keep, magic, keep)) {
                        break;
                    }
                }
                if (!write_all(dst, buf, len - keep)) {
                    break;
                }
                memmove(buf, buf + len - keep, keep);
                held = keep;
            }
        }
        if (pfd[1].revents) {
            uint8_t back[4096];
            ssize_t n = read(dst, back, sizeof(back));

            if (n <= 0 || !write_all(src, back, n)) {
                dst_open = false;
                shutdown(src, SHUT_WR);
            }
        }
    }
    close(src);
    close(dst);
    return NULL;
}

static void relay_start(Relay *r, const char *listen_path,
                        const char *dst_path)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };

    r->listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
    g_strlcpy(a.sun_path, listen_path, sizeof(a.sun_path));
    g_assert_cmpint(bind(r->listen_fd, (struct sockaddr *)&a, sizeof(a)), ==,
                    0);
    g_assert_cmpint(listen(r->listen_fd, 1), ==, 0);
    r->dst_path = g_strdup(dst_path);
    r->thread = g_thread_new("rnic-mig-relay", relay_thread, r);
}

static void relay_stop(Relay *r)
{
    g_thread_join(r->thread);
    close(r->listen_fd);
    g_free(r->dst_path);
}

/*
 * The destination refuses the device's state image at the switchover;
 * with the return path the source learns it and resumes, its device
 * intact.
 */
static void test_refuse_image(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE);
    g_autofree char *relay_sock = mig_path("relay");
    g_autofree char *dst_sock = mig_path("dst");
    g_autofree char *relay_uri = g_strdup_printf("unix:%s", relay_sock);
    g_autofree char *dst_uri = g_strdup_printf("unix:%s", dst_sock);
    g_autofree char *log = mig_path("img-log");
    g_autofree char *t0 = NULL, *t1 = NULL, *st = NULL;
    QTestState *dst;
    Relay relay = { 0 };
    TvPair p;

    pair_init(&vm->d, &p);
    pair_traffic(&vm->d, &p, 1);
    t0 = tables(vm);
    dst = qtest_initf("%s -incoming defer -D %s -trace enable=rnic_err_*",
                      MIG_DEVICE, log);
    qtest_qmp_assert_success(dst, "{ 'execute': 'migrate-set-capabilities',"
                             " 'arguments': { 'capabilities': [ {"
                             " 'capability': 'return-path', 'state': true"
                             " } ] } }");
    qtest_qmp_assert_success(dst, "{ 'execute': 'migrate-incoming',"
                             " 'arguments': { 'uri': %s,"
                             " 'exit-on-error': false } }", dst_uri);
    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'migrate-set-capabilities',"
                             " 'arguments': { 'capabilities': [ {"
                             " 'capability': 'return-path', 'state': true"
                             " } ] } }");
    relay_start(&relay, relay_sock, dst_sock);
    mig_expect_failure(vm, dst, relay_uri);
    st = mig_wait_final(dst);
    g_assert_cmpstr(st, ==, "failed");
    qtest_quit(dst);
    relay_stop(&relay);
    g_assert_cmpint(relay.hits, >=, 1);
    assert_log_contains(log, "not an rnic state image");

    /* the source went back to running with its device as it was */
    t1 = tables(vm);
    g_assert_cmpstr(t1, ==, t0);
    pair_traffic(&vm->d, &p, 7);
    tv_pair_fini(&p);
    mig_done(vm);
}

/*
 * A stream whose rnic state image says it is 4 GiB long (the length before
 * the image's magic "RIMG", big-endian): the destination refuses it before
 * allocating a buffer for it, with an error, and stays alive.
 */
static void test_huge_image_len(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE);
    g_autofree char *file = mig_path("img-file");
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    g_autofree char *log = mig_path("huge-log");
    g_autofree char *text = NULL, *st = NULL;
    QTestState *dst;
    gsize len;
    char *magic;
    TvPair p;

    pair_init(&vm->d, &p);
    pair_traffic(&vm->d, &p, 1);
    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'migrate',"
                             " 'arguments': { 'uri': %s } }", uri);
    mig_wait_status(vm->qts, "completed");
    g_assert_true(g_file_get_contents(file, &text, &len, NULL));
    magic = memmem(text, len, "RIMG", 4);
    g_assert_nonnull(magic);
    g_assert_cmpint(magic - text, >=, 4);
    stl_be_p(magic - 4, 0xffffff00);
    g_assert_true(g_file_set_contents(file, text, len, NULL));
    dst = mig_dest_deferred(MIG_DEVICE, uri, log);
    st = mig_wait_final(dst);
    g_assert_cmpstr(st, ==, "failed");
    assert_log_contains(log, "rnic_err_stream_len state image of 4294967040");
    assert_run_state(dst, "inmigrate");
    qtest_quit(dst);
    tv_pair_fini(&p);
    mig_done(vm);
}

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

    pair_init(&vm->d, &p);
    /* work in flight when the reset comes */
    sg = tv_sge(p.bufa, 40000, p.mra);
    x = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    x.rdma.remote_addr = p.bufb;
    x.rdma.rkey = p.mrb;
    tv_post_send(&vm->d, p.a, &x, &sg, NULL);
    rnic_reg_write(&vm->d, RNIC_REG_DEV_CTRL, RNIC_CTRL_RESET);
    tv_pair_fini(&p);
    vm = mig_migrate(vm, NULL, true);

    t = tables(vm);
    g_assert_cmpstr(t, ==, "");
    g_assert_cmphex(rnic_reg_read(&vm->d, RNIC_REG_DEV_STATUS) &
                    (RNIC_STATUS_READY | RNIC_STATUS_FATAL), ==, 0);
    g_assert_cmpuint(rnic_reg_read(&vm->d, RNIC_REG_DEV_CTRL), ==, 0);
    g_assert_cmpuint(tv_stat(&vm->d, RNIC_STAT_WQES), ==, 0);
    /* the driver's probe again, on the destination */
    vm->d.aq = 0;
    pair_init(&vm->d, &p);
    pair_traffic(&vm->d, &p, 8);
    tv_pair_fini(&p);
    mig_done(vm);
}

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
        relay = rnic_relay_new(mig_dir, sa, sb, 7);
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
    t = tables(a);
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
    t = tables(a);
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

    pair_init(d, &p);
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
    pair_traffic(&vm->d, &p, 1);

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

static void rnic_migration_register_tests(void)
{
    qtest_add_func("rnic-migration/objects", test_objects);
    qtest_add_func("rnic-migration/multi-net", test_multi_net);
    qtest_add_func("rnic-migration/pending-wqes", test_pending_wqes);
    qtest_add_func("rnic-migration/stopped-timers", test_stopped_timers);
    qtest_add_func("rnic-migration/back-and-forth", test_back_and_forth);
    qtest_add_func("rnic-migration/cancel", test_cancel);
    qtest_add_func("rnic-migration/refuse-config", test_refuse_config);
    qtest_add_func("rnic-migration/refuse-image", test_refuse_image);
    qtest_add_func("rnic-migration/huge-image-len", test_huge_image_len);
    qtest_add_func("rnic-migration/no-device", test_no_device);
    qtest_add_func("rnic-migration/postcopy-refused", test_postcopy_refused);
    qtest_add_func("rnic-migration/reset", test_reset);
    qtest_add_func("rnic-migration/peer-traffic", test_peer_traffic);
    qtest_add_func("rnic-migration/peer-traffic-lossy",
                   test_peer_traffic_lossy);
    if (g_test_perf()) {
        qtest_add_func("rnic-migration/bench", test_bench);
    }
}

libqos_init(rnic_migration_register_tests);
