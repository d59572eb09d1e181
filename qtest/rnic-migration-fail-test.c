/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtests of live migration with RDMA state (docs/migration.md): the
 * failure paths; the source always keeps its device as it was.
 *
 *  cancel             a cancelled migration, then a real one
 *  refuse-config      a destination that refuses the configuration
 *                     (before the switchover)
 *  refuse-image       ... or the state image (after it: the source
 *                     resumes)
 *  huge-image-len     an image that says it is 4 GiB long: refused before
 *                     anything is allocated for it
 *  no-device          a destination without an rnic
 *  postcopy-refused   postcopy is refused cleanly
 *
 * Plain GTest cases registered from the rnic-qos-test binary: they boot
 * their own machines (rnic-migration.h).
 */
#include "qemu/osdep.h"
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "libqtest.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "rnic-migration.h"

/* ---------------------------------------------------------------------- */
/* Failure paths                                                          */
/* ---------------------------------------------------------------------- */

/* Migrate to a destination that must fail; the source keeps running. */
static void mig_expect_failure(MigVm *src, QTestState *dst, const char *uri)
{
    qtest_qmp_assert_success(src->qts, "{ 'execute': 'migrate',"
                             " 'arguments': { 'uri': %s } }", uri);
    mig_wait_status(src->qts, "failed");
    mig_assert_run_state(src->qts, "running");
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

    mig_pair_init(&vm->d, &p);
    mig_pair_traffic(&vm->d, &p, 1);
    t0 = mig_tables(vm);
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
    mig_pair_traffic(&vm->d, &p, 2);
    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'migrate_cancel' }");
    mig_wait_status(vm->qts, "cancelled");
    mig_assert_run_state(vm->qts, "running");
    /* the source's device goes on as if nothing had happened */
    mig_pair_traffic(&vm->d, &p, 3);
    t1 = mig_tables(vm);
    g_assert_cmpuint(strlen(t1), ==, strlen(t0));
    qtest_quit(dst);

    /* and migrates for real afterwards */
    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'migrate-set-parameters',"
                             " 'arguments': { 'max-bandwidth': 1073741824 } }");
    vm = mig_migrate(vm, NULL, true);
    mig_pair_traffic(&vm->d, &p, 4);
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

    mig_pair_init(&vm->d, &p);
    for (i = 0; i < 10; i++) {
        tv_reg_mr(&vm->d, p.pd, p.bufa, 4096, 0, 0, NULL);
    }
    dst = mig_dest_deferred(dst_args, uri, log);
    mig_expect_failure(vm, dst, uri);
    st = mig_wait_final(dst);
    g_assert_cmpstr(st, ==, "failed");
    assert_log_contains(log, "max-mrs=8 is below the source's 16384");
    qtest_quit(dst);
    mig_pair_traffic(&vm->d, &p, 5);
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
    mig_pair_init(&vm->d, &p);
    qtest_qmp_assert_success(vm->qts, POSTCOPY_ON);
    qtest_qmp_assert_success(vm->qts, "{ 'execute': 'migrate',"
                             " 'arguments': { 'uri': 'exec:cat >/dev/null' } }");
    st = mig_wait_final(vm->qts);
    g_free(mig_status(vm->qts, &err));
    g_test_message("source: %s: %s", st, err);
    g_assert_cmpstr(st, ==, "failed");
    g_assert_nonnull(strstr(err, POSTCOPY_REFUSED));
    mig_assert_run_state(vm->qts, "running");
    mig_pair_traffic(&vm->d, &p, 7);
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

    mig_pair_init(&vm->d, &p);
    dst = mig_dest_deferred("-M pc", uri, log);
    mig_expect_failure(vm, dst, uri);
    st = mig_wait_final(dst);
    g_assert_cmpstr(st, ==, "failed");
    g_free(mig_status(dst, &err));
    g_test_message("destination: %s", err);
    qtest_quit(dst);
    mig_pair_traffic(&vm->d, &p, 6);
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

    mig_pair_init(&vm->d, &p);
    mig_pair_traffic(&vm->d, &p, 1);
    t0 = mig_tables(vm);
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
    t1 = mig_tables(vm);
    g_assert_cmpstr(t1, ==, t0);
    mig_pair_traffic(&vm->d, &p, 7);
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

    mig_pair_init(&vm->d, &p);
    mig_pair_traffic(&vm->d, &p, 1);
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
    mig_assert_run_state(dst, "inmigrate");
    qtest_quit(dst);
    tv_pair_fini(&p);
    mig_done(vm);
}

static void rnic_migration_fail_register_tests(void)
{
    qtest_add_func("rnic-migration/cancel", test_cancel);
    qtest_add_func("rnic-migration/refuse-config", test_refuse_config);
    qtest_add_func("rnic-migration/refuse-image", test_refuse_image);
    qtest_add_func("rnic-migration/huge-image-len", test_huge_image_len);
    qtest_add_func("rnic-migration/no-device", test_no_device);
    qtest_add_func("rnic-migration/postcopy-refused", test_postcopy_refused);
}

libqos_init(rnic_migration_fail_register_tests);
