/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The machines and migrations of the live-migration qtests (see
 * rnic-migration.h).
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/malloc-pc.h"
#include "libqos/pci-pc.h"
#include "qobject/qdict.h"
#include "rnic-migration.h"

static char *mig_dir;
static unsigned mig_seq;

const char *mig_tmpdir(void)
{
    if (!mig_dir) {
        mig_dir = g_dir_make_tmp("rnic-mig-XXXXXX", NULL);
        g_assert(mig_dir);
    }
    return mig_dir;
}

char *mig_path(const char *what)
{
    return g_strdup_printf("%s/%s-%u", mig_tmpdir(), what, mig_seq++);
}

void mig_cleanup_dir(void)
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

MigVm *mig_boot(const char *args)
{
    MigVm *vm = g_new0(MigVm, 1);

    vm->args = g_strdup(args);
    vm->qts = qtest_init(vm->args);
    vm->alloc = g_new0(QGuestAllocator, 1);
    pc_alloc_init(vm->alloc, vm->qts, ALLOC_NO_FLAGS);
    mig_attach(vm, vm->alloc);
    return vm;
}

void mig_free(MigVm *vm)
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

void mig_done(MigVm *vm)
{
    mig_free(vm);
    mig_cleanup_dir();
}

char *mig_status(QTestState *qts, char **error_desc)
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
char *mig_wait_final(QTestState *qts)
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

void mig_wait_status(QTestState *qts, const char *want)
{
    g_autofree char *st = mig_wait_final(qts);

    g_assert_cmpstr(st, ==, want);
}

char *mig_run_state(QTestState *qts)
{
    QDict *rsp = qtest_qmp_assert_success_ref(qts,
                                              "{ 'execute': 'query-status' }");
    char *st = g_strdup(qdict_get_str(rsp, "status"));

    qobject_unref(rsp);
    return st;
}

void mig_assert_run_state(QTestState *qts, const char *want)
{
    g_autofree char *st = mig_run_state(qts);

    g_assert_cmpstr(st, ==, want);
}

/*
 * Migrate 'src' to a new instance started with the same command line plus
 * 'dst_extra'; 'running': the source runs, wait for the destination to
 * resume; otherwise it stays paused after the incoming migration. The
 * source is quit and the driver state moves over.
 */
MigVm *mig_start_dest(MigVm *src, const char *dst_extra)
{
    MigVm *dst = g_new0(MigVm, 1);
    g_autofree char *sock = mig_path("mig");

    dst->uri = g_strdup_printf("unix:%s", sock);
    dst->args = g_strdup_printf("%s %s", src->args, dst_extra ?: "");
    dst->qts = qtest_initf("%s -incoming %s", dst->args, dst->uri);
    return dst;
}

MigVm *mig_complete(MigVm *src, MigVm *dst, bool running,
                    QDict **src_info)
{
    qtest_qmp_assert_success(src->qts, "{ 'execute': 'migrate',"
                             " 'arguments': { 'uri': %s } }", dst->uri);
    if (running) {
        qtest_qmp_eventwait(dst->qts, "RESUME");
    } else {
        gint64 end = g_get_monotonic_time() + WAIT_US;

        for (;;) {
            g_autofree char *st = mig_run_state(dst->qts);

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

MigVm *mig_migrate_info(MigVm *src, const char *dst_extra,
                        bool running, QDict **src_info)
{
    return mig_complete(src, mig_start_dest(src, dst_extra), running,
                        src_info);
}

MigVm *mig_migrate(MigVm *src, const char *dst_extra, bool running)
{
    return mig_migrate_info(src, dst_extra, running, NULL);
}

/* The device's mapping tables and QPs as the monitor shows them. */
char *mig_tables(MigVm *vm)
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

/*
 * A loopback pair (TvPair): an async EQ on VEC_ASYNC, the pair's own EQ
 * (for the CQs) on VEC_COMP.
 */
void mig_pair_init(QRnic *d, TvPair *p)
{
    tv_eq(d, 6, VEC_ASYNC, RNIC_EQ_ASYNC, NULL);
    tv_pair_init(d, p, VEC_COMP, 0, 7, 6, BUF_SIZE);
}

/* RDMA WRITE, READ and a SEND through the pair, data checked. */
void mig_pair_traffic(QRnic *d, TvPair *p, uint8_t seed)
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
