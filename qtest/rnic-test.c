/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtests of the rnic device: identity, BARs, registers, reset, MSI-X,
 * admin queue basics, doorbell validation, save/load.
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/pci-pc.h"
#include "qemu/module.h"
#include "qemu/bswap.h"
#include "hw/pci/pci_regs.h"
#include "rnic-verbs.h"

#define GLOBAL_LOG_OPTS "-d guest_errors -D %s"

/* Per-test log file of guest errors (-d guest_errors -D file), and how
 * much of it earlier checks already consumed. */
static char *rnic_log_path;
static size_t rnic_log_seen;

/* Guest-error lines logged since the last call containing 'needle'. */
static unsigned rnic_log_count(const char *needle)
{
    g_autofree char *text = NULL;
    unsigned n = 0;
    char **lines, **l;
    gsize len;

    g_assert(rnic_log_path);
    if (!g_file_get_contents(rnic_log_path, &text, &len, NULL)) {
        return 0;
    }
    if (len < rnic_log_seen) {
        rnic_log_seen = 0;      /* a new QEMU truncated the file */
    }
    lines = g_strsplit(text + rnic_log_seen, "\n", -1);
    rnic_log_seen = len;
    for (l = lines; *l; l++) {
        if (strstr(*l, "rnic:") && strstr(*l, needle)) {
            n++;
        }
    }
    g_strfreev(lines);
    return n;
}

static void *rnic_before_log(GString *cmd_line, void *arg)
{
    if (!rnic_log_path) {
        int fd = g_file_open_tmp("rnic-qtest-XXXXXX.log", &rnic_log_path, NULL);

        g_assert(fd >= 0);
        close(fd);
    }
    /* QEMU may be reused from the previous test: count only what is new */
    rnic_log_count("");
    g_string_append_printf(cmd_line, " " GLOBAL_LOG_OPTS " ", rnic_log_path);
    return arg;
}

static void test_ids(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    uint8_t cap;

    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_VENDOR_ID), ==, RNIC_PCI_VENDOR_ID);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_DEVICE_ID), ==, RNIC_PCI_DEVICE_ID);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_CLASS_DEVICE), ==, 0x0200);
    g_assert_cmphex(qpci_config_readb(&d->dev, PCI_CLASS_PROG), ==, 0);
    g_assert_cmphex(qpci_config_readb(&d->dev, PCI_REVISION_ID), ==, RNIC_PCI_REVISION);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_SUBSYSTEM_VENDOR_ID), ==,
                    RNIC_PCI_SUBSYS_VENDOR);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_SUBSYSTEM_ID), ==,
                    RNIC_PCI_SUBSYS_ID);
    /* MSI-X with the default 8 vectors, and a PCIe capability */
    cap = qpci_find_capability(&d->dev, PCI_CAP_ID_MSIX, 0);
    g_assert_cmpuint(cap, !=, 0);
    g_assert_cmpuint((qpci_config_readw(&d->dev, cap + PCI_MSIX_FLAGS) &
                      PCI_MSIX_FLAGS_QSIZE) + 1, ==, 8);
    g_assert_cmpuint(qpci_config_readl(&d->dev, cap + PCI_MSIX_TABLE), ==,
                     RNIC_MSIX_TABLE_OFFSET | RNIC_BAR_MSIX);
    g_assert_cmpuint(qpci_config_readl(&d->dev, cap + PCI_MSIX_PBA), ==,
                     RNIC_MSIX_PBA_OFFSET | RNIC_BAR_MSIX);
    g_assert_cmpuint(qpci_find_capability(&d->dev, PCI_CAP_ID_EXP, 0), !=, 0);
}

static void *rnic_before_ids_override(GString *cmd_line, void *arg)
{
    g_string_append(cmd_line, " -global rnic.vendor-id=0x1af4"
                              " -global rnic.device-id=0x1234"
                              " -global rnic.vectors=17 ");
    return arg;
}

static void test_ids_override(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    uint8_t cap = qpci_find_capability(&d->dev, PCI_CAP_ID_MSIX, 0);

    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_VENDOR_ID), ==, 0x1af4);
    g_assert_cmphex(qpci_config_readw(&d->dev, PCI_DEVICE_ID), ==, 0x1234);
    g_assert_cmpuint((qpci_config_readw(&d->dev, cap + PCI_MSIX_FLAGS) &
                      PCI_MSIX_FLAGS_QSIZE) + 1, ==, 17);
    g_assert_cmpuint(rnic_reg_read(d, RNIC_REG_MSIX_VECTORS), ==, 17);
}

static void test_bars(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    uint64_t size;
    QPCIBar bar;

    bar = qpci_iomap(&d->dev, RNIC_BAR_REGS, &size);
    g_assert_cmpuint(size, ==, RNIC_BAR0_SIZE);     /* registers + MSI-X */
    qpci_iounmap(&d->dev, bar);
    /* no window without scm= */
    g_assert_cmpuint(qpci_config_readl(&d->dev, PCI_BASE_ADDRESS_4), ==, 0);
    g_assert_cmpuint(d->db_size, ==, 64 * RNIC_DB_PAGE_SIZE);
    g_assert_cmpuint(qpci_config_readl(&d->dev, PCI_BASE_ADDRESS_0) &
                     PCI_BASE_ADDRESS_MEM_TYPE_MASK, ==, PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_cmpuint(qpci_config_readl(&d->dev, PCI_BASE_ADDRESS_2) &
                     PCI_BASE_ADDRESS_MEM_TYPE_MASK, ==, PCI_BASE_ADDRESS_MEM_TYPE_64);
}

static void *rnic_before_small(GString *cmd_line, void *arg)
{
    rnic_before_log(cmd_line, arg);
    g_string_append(cmd_line, " -global rnic.doorbell-pages=3"
                              " -global rnic.max-qps=77"
                              " -global rnic.mac=52:54:00:ab:cd:ef ");
    return arg;
}

static void test_reset_values(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;

    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_ABI_VERSION), ==, RNIC_ABI_VERSION);
    g_assert_cmpuint(rnic_reg_read(d, RNIC_REG_DB_PAGES), ==, 3);
    g_assert_cmpuint(rnic_reg_read(d, RNIC_REG_MAX_QP), ==, 77);
    g_assert_cmpuint(rnic_reg_read(d, RNIC_REG_MAX_CQ), ==, 1024);
    g_assert_cmpuint(rnic_reg_read(d, RNIC_REG_MSIX_VECTORS), ==, 8);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_CAPS_LO) & RNIC_CAP_NET_CTX, ==,
                    RNIC_CAP_NET_CTX);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_DEV_CTRL), ==, 0);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_DEV_STATUS), ==, RNIC_STATUS_LINK_UP);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_SCRATCH), ==, 0);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_MAC_LO), ==, 0xab005452);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_MAC_HI), ==, 0xefcd);
    /* BAR2 is rounded up to a power of two: 4 pages for 3 */
    g_assert_cmpuint(d->db_size, ==, 4 * RNIC_DB_PAGE_SIZE);
}

static void test_bad_access(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;

    rnic_log_count("");
    /* read-only registers keep their value; the write is logged */
    rnic_reg_write(d, RNIC_REG_MAGIC, 0);
    rnic_reg_write(d, RNIC_REG_MAX_QP, 1);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
    g_assert_cmpuint(rnic_reg_read(d, RNIC_REG_MAX_QP), ==, 77);
    g_assert_cmpuint(rnic_log_count("read-only"), ==, 2);
    /* unknown offsets read 0 and ignore writes */
    rnic_reg_write(d, 0x800, 0x1234);
    g_assert_cmphex(rnic_reg_read(d, 0x800), ==, 0);
    g_assert_cmpuint(rnic_log_count("unknown register"), ==, 2);
    /* wrong sizes and misaligned accesses: refused, logged */
    rnic_reg_write(d, RNIC_REG_SCRATCH, 0x11223344);
    qpci_io_writeb(&d->dev, d->regs, RNIC_REG_SCRATCH, 0xff);
    qpci_io_writew(&d->dev, d->regs, RNIC_REG_SCRATCH, 0xffff);
    /* one 8-byte store covering FATAL_CODE and SCRATCH */
    qpci_io_writeq(&d->dev, d->regs, RNIC_REG_FATAL_CODE, ~0ull);
    /* qtest splits a misaligned store into two aligned 2-byte ones */
    qpci_io_writel(&d->dev, d->regs, RNIC_REG_SCRATCH + 2, 0xffffffff);
    g_assert_cmphex(qpci_io_readb(&d->dev, d->regs, RNIC_REG_SCRATCH), ==, 0);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_SCRATCH), ==, 0x11223344);
    g_assert_cmpuint(rnic_log_count("registers are 32-bit"), ==, 6);
    /* reserved control bits are refused (and logged) */
    rnic_reg_write(d, RNIC_REG_DEV_CTRL, 0x80000000);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_DEV_CTRL), ==, 0);
    g_assert_cmpuint(rnic_log_count("value refused"), ==, 1);
    /* MSI-X test register beyond the vector count */
    rnic_reg_write(d, RNIC_REG_IRQ_TEST, 8);
    g_assert_cmpuint(rnic_log_count("value refused"), ==, 1);
    /* the device still works */
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
}

static void test_doorbell_bad(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    uint64_t errs;

    tv_enable(d, 2);
    rnic_log_count("");
    /* page 3 lies inside the 4-page BAR but beyond the 3 configured */
    rnic_doorbell(d, 3, RNIC_DB_SQ, rnic_db_value(1, 0, 1));
    g_assert_cmpuint(rnic_log_count("bad doorbell"), ==, 1);
    /* EQ doorbells only in page 0; unknown doorbell offset */
    rnic_doorbell(d, 1, RNIC_DB_EQ, rnic_db_value(0, 0, 1));
    rnic_doorbell(d, 0, 0x800, rnic_db_value(0, 0, 1));
    g_assert_cmpuint(rnic_log_count("bad doorbell"), ==, 2);
    /* 32-bit stores and reads */
    qpci_io_writel(&d->dev, d->db, RNIC_DB_SQ, 1);
    g_assert_cmpuint(qpci_io_readq(&d->dev, d->db, RNIC_DB_SQ), ==, 0);
    g_assert_cmpuint(rnic_log_count("doorbell"), ==, 2);
    errs = rnic_reg_read(d, RNIC_REG_STAT_BASE + 8 * RNIC_STAT_DOORBELL_ERRORS);
    g_assert_cmpuint(errs, ==, 3);
    /* a well-formed doorbell naming no queue is refused too */
    rnic_doorbell(d, 0, RNIC_DB_CQ, rnic_db_value(0, RNIC_DB_ARM_NEXT, 0));
    g_assert_cmpuint(rnic_log_count("bad doorbell"), ==, 1);
    g_assert_cmpuint(rnic_reg_read(d, RNIC_REG_STAT_BASE + 8 * RNIC_STAT_DOORBELLS),
                     ==, 0);
    g_assert_cmpuint(rnic_reg_read(d, RNIC_REG_STAT_BASE +
                                   8 * RNIC_STAT_DOORBELL_ERRORS), ==, 4);
}

static void test_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;

    rnic_reg_write(d, RNIC_REG_SCRATCH, 0xcafe);
    rnic_reg_write(d, RNIC_REG_MAC_HI, 0x1111);
    tv_enable(d, 3);
    /* function reset through the control register */
    rnic_reg_write(d, RNIC_REG_DEV_CTRL, RNIC_CTRL_RESET);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_SCRATCH), ==, 0);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_DEV_CTRL), ==, 0);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_DEV_STATUS), ==, RNIC_STATUS_LINK_UP);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_AQ_SIZE_LOG2), ==, 0);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_MAC_HI), !=, 0x1111);
    /* enable / admin command / disable / enable again */
    tv_enable(d, 3);
    rnic_reg_write(d, RNIC_REG_SCRATCH, 0xbeef);
    rnic_reg_write(d, RNIC_REG_DEV_CTRL, 0);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_DEV_STATUS) & RNIC_STATUS_READY, ==, 0);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_SCRATCH), ==, 0xbeef);
}

static void test_system_reset(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    QTestState *qts = rnic_qts(d);

    rnic_reg_write(d, RNIC_REG_SCRATCH, 0xcafe);
    qtest_qmp_assert_success(qts, "{ 'execute': 'system_reset' }");
    qtest_qmp_eventwait(qts, "RESET");
    /* BARs are unassigned by the reset: map them again */
    rnic_remap(d);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_SCRATCH), ==, 0);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
    qos_invalidate_command_line();
}

static void test_heartbeat(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    uint32_t a = rnic_reg_read(d, RNIC_REG_HEARTBEAT);

    qtest_clock_step(rnic_qts(d), 50 * 1000 * 1000);
    g_assert_cmpuint(rnic_reg_read(d, RNIC_REG_HEARTBEAT) - a, >=, 50);
}

static void test_msix(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    unsigned v;

    for (v = 0; v < 8; v++) {
        rnic_msix_route(d, v);
    }
    for (v = 0; v < 8; v++) {
        rnic_reg_write(d, RNIC_REG_IRQ_TEST, v);
        g_assert_true(rnic_msix_fired(d, v));
        g_assert_false(rnic_msix_fired(d, (v + 1) % 8));
    }
    /* a masked vector stays pending until unmasked */
    rnic_msix_set_masked(d, 5, true);
    rnic_reg_write(d, RNIC_REG_IRQ_TEST, 5);
    g_assert_false(rnic_msix_fired(d, 5));
    g_assert_true(qpci_msix_pending(&d->dev, 5));
    rnic_msix_set_masked(d, 5, false);
    g_assert_true(rnic_msix_fired(d, 5));
    /* out of range: nothing fires */
    rnic_reg_write(d, RNIC_REG_IRQ_TEST, 8);
    for (v = 0; v < 8; v++) {
        g_assert_false(rnic_msix_fired(d, v));
    }
}

static void test_admin(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    QTestState *qts = rnic_qts(d);
    struct rnic_admin_cmd cmd;
    struct rnic_admin_cqe cqe;
    struct rnic_device_attr attr;
    uint64_t buf = guest_alloc(alloc, sizeof(attr));
    int i;

    rnic_msix_route(d, 0);
    tv_enable(d, 2);
    for (i = 0; i < 9; i++) {
        memset(&cmd, 0, sizeof(cmd));
        cmd.opcode = RNIC_CMD_NOP;
        cqe = tv_admin(d, &cmd);
        g_assert_cmpuint(cqe.status, ==, RNIC_ST_OK);
        g_assert_true(rnic_msix_wait(d, 0));
    }
    memset(&cmd, 0, sizeof(cmd));
    cmd.opcode = RNIC_CMD_QUERY_DEVICE;
    cmd.query.addr = cpu_to_le64(buf);
    cmd.query.len = cpu_to_le32(sizeof(attr));
    cqe = tv_admin(d, &cmd);
    g_assert_cmpuint(cqe.status, ==, RNIC_ST_OK);
    qtest_memread(qts, buf, &attr, sizeof(attr));
    g_assert_cmphex(le32_to_cpu(attr.abi_version), ==, RNIC_ABI_VERSION);
    g_assert_cmpuint(le32_to_cpu(attr.max_qp), ==, 1024);
    g_assert_cmphex(le32_to_cpu(attr.vendor_id), ==, RNIC_PCI_VENDOR_ID);
    /* bad command: precise status, not a crash */
    memset(&cmd, 0, sizeof(cmd));
    cmd.opcode = 0xfe;
    g_assert_cmpuint(tv_admin(d, &cmd).status, ==, RNIC_ST_BAD_OPCODE);
    cmd.opcode = RNIC_CMD_QUERY_DEVICE;
    cmd.query.addr = cpu_to_le64(0xfff0000000000ull);  /* not RAM */
    cmd.query.len = cpu_to_le32(sizeof(attr));
    g_assert_cmpuint(tv_admin(d, &cmd).status, ==, RNIC_ST_DMA_ERROR);
    g_assert_cmpuint(rnic_reg_read(d, RNIC_REG_STAT_BASE + 8 * RNIC_STAT_ADMIN_CMDS),
                     ==, 12);
}

static void test_admin_bus_master_off(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    uint16_t cmdreg;
    gint64 end;

    tv_enable(d, 2);
    /* without bus mastering the device cannot fetch: fatal, not a crash */
    cmdreg = qpci_config_readw(&d->dev, PCI_COMMAND);
    qpci_config_writew(&d->dev, PCI_COMMAND, cmdreg & ~PCI_COMMAND_MASTER);
    rnic_reg_write(d, RNIC_REG_AQ_TAIL, 1);
    end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    while (!(rnic_reg_read(d, RNIC_REG_DEV_STATUS) & RNIC_STATUS_FATAL)) {
        g_assert(g_get_monotonic_time() < end);
        qtest_clock_step(rnic_qts(d), 1000);
    }
    g_assert_cmpuint(rnic_reg_read(d, RNIC_REG_FATAL_CODE), ==, RNIC_FATAL_AQ_DMA);
    qpci_config_writew(&d->dev, PCI_COMMAND, cmdreg);
    rnic_reg_write(d, RNIC_REG_DEV_CTRL, RNIC_CTRL_RESET);
    tv_enable(d, 2);
}

static void test_migrate(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    QTestState *from = rnic_qts(d);
    g_autofree char *dir = g_dir_make_tmp("rnic-mig-XXXXXX", NULL);
    g_autofree char *uri = g_strdup_printf("unix:%s/mig.sock", dir);
    g_autofree char *sock = g_strdup_printf("%s/mig.sock", dir);
    struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_NOP };
    QTestState *to;
    QPCIBus *bus;
    QPCIDevice *dev;
    QPCIBar bar;
    uint32_t mask;
    struct rnic_admin_cqe cqe;

    rnic_reg_write(d, RNIC_REG_SCRATCH, 0x5ca1ab1e);
    rnic_reg_write(d, RNIC_REG_MAC_LO, 0x33221102);
    tv_enable(d, 3);
    g_assert_cmpuint(tv_admin(d, &cmd).status, ==, RNIC_ST_OK);

    to = qtest_initf("%s -incoming %s", qos_get_current_command_line(), uri);
    qtest_qmp_assert_success(from, "{ 'execute': 'migrate',"
                             " 'arguments': { 'uri': %s } }", uri);
    qtest_qmp_eventwait(to, "RESUME");

    bus = qpci_new_pc(to, NULL);
    dev = qpci_device_find(bus, QPCI_DEVFN(4, 0));
    g_assert(dev);
    bar = rnic_bar_programmed(dev, RNIC_BAR_REGS);
    g_assert_cmphex(qpci_io_readl(dev, bar, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
    g_assert_cmphex(qpci_io_readl(dev, bar, RNIC_REG_SCRATCH), ==, 0x5ca1ab1e);
    g_assert_cmphex(qpci_io_readl(dev, bar, RNIC_REG_MAC_LO), ==, 0x33221102);
    g_assert_cmphex(qpci_io_readl(dev, bar, RNIC_REG_DEV_STATUS) &
                    RNIC_STATUS_READY, ==, RNIC_STATUS_READY);
    g_assert_cmpuint(qpci_io_readl(dev, bar, RNIC_REG_AQ_HEAD), ==, 1);
    g_assert_cmpuint(qpci_io_readl(dev, bar, RNIC_REG_AQ_SIZE_LOG2), ==, 3);
    g_assert_cmpuint(qpci_io_readl(dev, bar, RNIC_REG_STAT_BASE +
                                   8 * RNIC_STAT_ADMIN_CMDS), ==, 1);

    /* the admin queue continues on the destination where it stopped */
    mask = (1u << d->aq_log2) - 1;
    cmd.cmd_id = cpu_to_le16(0x77);
    qtest_memwrite(to, d->aq + (d->aq_tail & mask) * sizeof(cmd), &cmd, sizeof(cmd));
    qpci_io_writel(dev, bar, RNIC_REG_AQ_TAIL, d->aq_tail + 1);
    do {
        qtest_clock_step(to, 1000);
        qtest_memread(to, d->acq + (d->acq_head & mask) * sizeof(cqe), &cqe,
                      sizeof(cqe));
    } while ((cqe.phase & 1) != 1);
    g_assert_cmpuint(le16_to_cpu(cqe.cmd_id), ==, 0x77);
    g_assert_cmpuint(cqe.status, ==, RNIC_ST_OK);

    g_free(dev);
    qpci_free_pc(bus);
    qtest_quit(to);
    rnic_tmpdir_remove(dir);
    qos_invalidate_command_line();
}

static void rnic_register_tests(void)
{
    QOSGraphTestOptions log_opts = { .before = rnic_before_log };
    QOSGraphTestOptions small_opts = { .before = rnic_before_small };
    QOSGraphTestOptions ids_opts = { .before = rnic_before_ids_override };

    qos_add_test("ids", "rnic", test_ids, NULL);
    qos_add_test("ids-override", "rnic", test_ids_override, &ids_opts);
    qos_add_test("bars", "rnic", test_bars, NULL);
    qos_add_test("reset-values", "rnic", test_reset_values, &small_opts);
    qos_add_test("bad-access", "rnic", test_bad_access, &small_opts);
    qos_add_test("doorbell-bad", "rnic", test_doorbell_bad, &small_opts);
    qos_add_test("reset", "rnic", test_reset, &log_opts);
    qos_add_test("system-reset", "rnic", test_system_reset, NULL);
    qos_add_test("heartbeat", "rnic", test_heartbeat, NULL);
    qos_add_test("msix", "rnic", test_msix, NULL);
    qos_add_test("admin", "rnic", test_admin, &log_opts);
    qos_add_test("admin-bus-master-off", "rnic", test_admin_bus_master_off,
                 &log_opts);
    qos_add_test("migrate", "rnic", test_migrate, NULL);
}

libqos_init(rnic_register_tests);
