/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtests of the rnic command line: nonsense properties are refused at
 * startup with a clear message (never a crash), and the device works on
 * q35's root bus and behind a pcie-root-port.
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "libqos/pci-pc.h"
#include "hw/pci/pci_regs.h"
#include "rnic/rnic-abi.h"

typedef struct BadOption {
    const char *opts;
    const char *message;
    const char *objects;        /* more arguments, before -device */
} BadOption;

static const BadOption bad_options[] = {
    { "max-qps=0", "max-qps=0 is out of range" },
    { "max-mrs=16777216", "max-mrs=16777216 is out of range" },
    { "max-net-ctx=0", "max-net-ctx=0 is out of range" },
    { "doorbell-pages=0", "doorbell-pages=0 is out of range" },
    { "doorbell-pages=100000", "doorbell-pages=100000 is out of range" },
    { "vectors=1", "vectors=1 is out of range" },
    { "vectors=2049", "vectors=2049 is out of range" },
    { "max-sge=1000", "max-sge=1000 is out of range" },
    { "max-mtu=100", "max-mtu=100 is out of range" },
    { "vendor-id=0x10000", "not a valid PCI vendor ID" },
    { "mac=01:02:03:04:05:06", "mac is a multicast address" },
    { "mac=nonsense", "doesn't take value 'nonsense'" },
    { "max-qps=-1", "max-qps" },
    { "memory-budget-mib=8", "memory-budget-mib=8 is out of range" },
    { "max-mrs=4000000,memory-budget-mib=64",
      "memory-budget-mib=64 is too small for max-mrs=4000000" },
    /* the memory window: "@" in a path is the test's temporary file */
    { "scm=nothere", "nothere" },
    { "scm=m", "must be a power of two",
      "memory-backend-file,id=m,size=3M,mem-path=@,share=on" },
    { "scm=m", "must be a power of two",
      "memory-backend-ram,id=m,size=2K" },
    { "scm=m", "needs share=on", "memory-backend-file,id=m,size=1M,mem-path=@" },
    { "scm-powerfail=on", "needs a window" },
    { "scm=m,scm-powerfail=on", "needs a window that persists",
      "memory-backend-ram,id=m,size=1M" },
    { "scm=m,id=a -device rnic,scm=m,id=b", "already in use",
      "memory-backend-file,id=m,size=1M,mem-path=@,share=on" },
};

/* Start QEMU with a bad -device rnic; it must exit 1 with the message. */
static void test_bad_option(gconstpointer data)
{
    const BadOption *b = data;
    const char *qemu = g_getenv("QTEST_QEMU_BINARY");
    g_autofree char *file = NULL;
    g_autofree char *obj = NULL;
    g_autofree char *cmd = NULL;
    g_autofree char *out = NULL;
    g_autofree char *err = NULL;
    g_autoptr(GError) gerr = NULL;
    g_auto(GStrv) argv = NULL;
    int status;

    g_assert(qemu);
    if (b->objects) {
        g_auto(GStrv) parts = g_strsplit(b->objects, "@", -1);
        int fd = g_file_open_tmp("rnic-cli-XXXXXX", &file, NULL);

        g_assert(fd >= 0);
        close(fd);
        obj = g_strjoinv(file, parts);
    }
    cmd = g_strdup_printf("%s -M q35 -display none -S -nodefaults%s%s "
                          "-device rnic,%s", qemu, obj ? " -object " : "",
                          obj ? obj : "", b->opts);
    argv = g_strsplit(cmd, " ", -1);
    g_assert_true(g_spawn_sync(NULL, argv, NULL, 0, NULL, NULL,
                               &out, &err, &status, &gerr));
    if (file) {
        unlink(file);
    }
    g_assert_true(WIFEXITED(status));       /* not a signal: no crash */
    g_assert_cmpint(WEXITSTATUS(status), ==, 1);
    if (!strstr(err, b->message)) {
        g_printerr("expected '%s' in:\n%s\n", b->message, err);
        g_assert_not_reached();
    }
}

/* Find the rnic in query-pci output; returns its class or -1. */
static bool find_rnic(QList *devices, int *bus_out)
{
    QListEntry *e;

    QLIST_FOREACH_ENTRY(devices, e) {
        QDict *dev = qobject_to(QDict, qlist_entry_obj(e));
        QDict *id = qdict_get_qdict(dev, "id");
        QDict *bridge;

        if (qdict_get_int(id, "vendor") == RNIC_PCI_VENDOR_ID &&
            qdict_get_int(id, "device") == RNIC_PCI_DEVICE_ID) {
            QDict *cls = qdict_get_qdict(dev, "class_info");

            g_assert_cmphex(qdict_get_int(cls, "class"), ==, 0x0200);
            *bus_out = qdict_get_int(dev, "bus");
            return true;
        }
        bridge = qdict_get_qdict(dev, "pci_bridge");
        if (bridge && qdict_haskey(bridge, "devices") &&
            find_rnic(qdict_get_qlist(bridge, "devices"), bus_out)) {
            return true;
        }
    }
    return false;
}

static int rnic_bus_number(QTestState *qts)
{
    QDict *resp = qtest_qmp(qts, "{ 'execute': 'query-pci' }");
    QList *buses = qdict_get_qlist(resp, "return");
    QListEntry *e;
    int bus = -1;

    QLIST_FOREACH_ENTRY(buses, e) {
        QDict *b = qobject_to(QDict, qlist_entry_obj(e));

        if (find_rnic(qdict_get_qlist(b, "devices"), &bus)) {
            break;
        }
    }
    qobject_unref(resp);
    return bus;
}

static void test_q35_root_bus(void)
{
    QTestState *qts = qtest_init("-M q35 -nodefaults -device rnic");

    g_assert_cmpint(rnic_bus_number(qts), ==, 0);
    qtest_quit(qts);
}

/* Number the root port's secondary bus 1, as firmware would. */
static void number_root_port(QTestState *qts)
{
    QPCIBus *bus = qpci_new_pc(qts, NULL);
    QPCIDevice *port = qpci_device_find(bus, QPCI_DEVFN(0x1c, 0));

    g_assert(port);
    qpci_config_writeb(port, PCI_PRIMARY_BUS, 0);
    qpci_config_writeb(port, PCI_SECONDARY_BUS, 1);
    qpci_config_writeb(port, PCI_SUBORDINATE_BUS, 1);
    g_free(port);
    qpci_free_pc(bus);
}

static void test_q35_root_port(void)
{
    QTestState *qts = qtest_init("-M q35 -nodefaults "
                                 "-device pcie-root-port,id=rp0,chassis=1,addr=1c.0 "
                                 "-device rnic,bus=rp0,netdev=n0 "
                                 "-netdev user,id=n0");

    number_root_port(qts);
    g_assert_cmpint(rnic_bus_number(qts), ==, 1);
    qtest_quit(qts);
}

static void test_hotplug(void)
{
    QTestState *qts = qtest_init("-M q35 -nodefaults "
                                 "-device pcie-root-port,id=rp0,chassis=1,addr=1c.0");

    number_root_port(qts);
    qtest_qmp_device_add(qts, "rnic", "r0", "{ 'bus': 'rp0' }");
    g_assert_cmpint(rnic_bus_number(qts), ==, 1);
    qtest_quit(qts);
}

/* power-cut is a test mode's: refused with a reason, the VM goes on */
static void test_power_cut_off(void)
{
    g_autofree char *file = NULL;
    int fd = g_file_open_tmp("rnic-cli-XXXXXX", &file, NULL);
    QTestState *qts;
    QDict *r;

    g_assert(fd >= 0);
    close(fd);
    qts = qtest_initf("-M q35 -nodefaults -object memory-backend-file,id=m,"
                      "size=1M,mem-path=%s,share=on -device rnic,scm=m,id=r",
                      file);
    r = qtest_qmp(qts, "{ 'execute': 'qom-set', 'arguments': { 'path': "
                  "'/machine/peripheral/r', 'property': 'power-cut', "
                  "'value': true } }");
    g_assert_true(qdict_haskey(r, "error"));
    g_assert_nonnull(strstr(qdict_get_str(qdict_get_qdict(r, "error"),
                                          "desc"), "scm-powerfail=on"));
    qobject_unref(r);
    qtest_quit(qts);
    unlink(file);
}

int main(int argc, char **argv)
{
    size_t i;

    g_test_init(&argc, &argv, NULL);
    for (i = 0; i < G_N_ELEMENTS(bad_options); i++) {
        g_autofree char *path = g_strdup_printf("/rnic/cli/bad/%zu/%s", i,
                                                bad_options[i].opts);

        qtest_add_data_func(path, &bad_options[i], test_bad_option);
    }
    qtest_add_func("/rnic/cli/power-cut-without-powerfail", test_power_cut_off);
    qtest_add_func("/rnic/q35/root-bus", test_q35_root_bus);
    qtest_add_func("/rnic/q35/root-port", test_q35_root_port);
    qtest_add_func("/rnic/q35/hotplug", test_hotplug);
    return g_test_run();
}
