/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: BAR0 registers, reset, interrupts, doorbell recording.
 */
#include <string.h>
#include "rnic-test-verbs.h"

static void test_identity(void)
{
    TestHost *h = test_host_new(NULL);

    g_assert_cmphex(test_reg_read(h, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_ABI_VERSION), ==, RNIC_ABI_VERSION);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_MAX_QP), ==, h->cfg.max_qp);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_DB_PAGES), ==, h->cfg.db_pages);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_MSIX_VECTORS), ==, h->cfg.msix_vectors);
    g_assert_true(test_reg_read(h, RNIC_REG_CAPS_LO) & RNIC_CAP_NET_CTX);
    /* read-only: refused, value unchanged */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_MAGIC, 0), ==, RNIC_ACCESS_READ_ONLY);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_MAX_QP, 5), ==, RNIC_ACCESS_READ_ONLY);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_DEV_STATUS, 0), ==, RNIC_ACCESS_READ_ONLY);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_STAT_BASE, 1), ==, RNIC_ACCESS_READ_ONLY);
    test_host_free(h);
}

static void test_unknown(void)
{
    TestHost *h = test_host_new(NULL);
    uint32_t v = 0xdead;

    g_assert_cmpint(rnic_engine_reg_read(h->engine, 0x400, &v), ==,
                    RNIC_ACCESS_UNKNOWN_REG);
    g_assert_cmpuint(v, ==, 0);
    g_assert_cmpint(test_reg_write(h, 0x400, 1), ==, RNIC_ACCESS_UNKNOWN_REG);
    g_assert_cmpint(test_reg_write(h, 0xffc, 1), ==, RNIC_ACCESS_UNKNOWN_REG);
    g_assert_cmpint(rnic_engine_reg_read(h->engine, RNIC_REG_IRQ_TEST, &v), ==,
                    RNIC_ACCESS_WRITE_ONLY);
    test_host_free(h);
}

static void test_scratch_mac_reset(void)
{
    TestHost *h = test_host_new(NULL);

    g_assert_cmpint(test_reg_write(h, RNIC_REG_SCRATCH, 0xa5a5f00d), ==, 0);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_SCRATCH), ==, 0xa5a5f00d);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_MAC_LO, 0x44332202), ==, 0);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_MAC_HI, 0x6655), ==, 0);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_MAC_HI, 0x16655), ==,
                    RNIC_ACCESS_BAD_VALUE);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_MAC_LO), ==, 0x44332202);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_MAC_HI), ==, 0x6655);
    /* function reset: scratch cleared, MAC back to the configured one */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_DEV_CTRL, RNIC_CTRL_RESET), ==, 0);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_SCRATCH), ==, 0);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_MAC_LO), ==,
                    h->cfg.mac[0] | h->cfg.mac[1] << 8 | h->cfg.mac[2] << 16 |
                    (uint32_t)h->cfg.mac[3] << 24);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_DEV_CTRL), ==, 0);
    test_host_free(h);
}

static void test_heartbeat(void)
{
    TestHost *h = test_host_new(NULL);
    uint32_t a = test_reg_read(h, RNIC_REG_HEARTBEAT);

    test_host_advance(h, 25 * 1000000ull);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_HEARTBEAT), ==, a + 25);
    test_host_free(h);
}

static void test_irq_test(void)
{
    TestHost *h = test_host_new(NULL);

    g_assert_cmpint(test_reg_write(h, RNIC_REG_IRQ_TEST, 3), ==, 0);
    g_assert_cmpuint(h->irqs[3], ==, 1);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_IRQ_TEST, h->cfg.msix_vectors), ==,
                    RNIC_ACCESS_BAD_VALUE);
    test_host_free(h);
}

static void test_enable_bad_config(void)
{
    TestHost *h = test_host_new(NULL);

    /* no admin queue configured: enable turns into a fatal status */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_DEV_CTRL, RNIC_CTRL_ENABLE), ==, 0);
    g_assert_true(test_reg_read(h, RNIC_REG_DEV_STATUS) & RNIC_STATUS_FATAL);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_FATAL_CODE), ==, RNIC_FATAL_AQ_CONFIG);
    g_assert_cmpuint(h->guest_errors, ==, 1);
    /* locked while enabled */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_AQ_SIZE_LOG2, 4), ==,
                    RNIC_ACCESS_NOT_NOW);
    /* disable clears it */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_DEV_CTRL, 0), ==, 0);
    g_assert_false(test_reg_read(h, RNIC_REG_DEV_STATUS) & RNIC_STATUS_FATAL);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_AQ_SIZE_LOG2, 1), ==,
                    RNIC_ACCESS_BAD_VALUE);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_AQ_SIZE_LOG2, 13), ==,
                    RNIC_ACCESS_BAD_VALUE);
    test_host_free(h);
}

static void test_admin_nop_and_query(void)
{
    TestHost *h = test_host_new(NULL);
    struct rnic_admin_cmd cmd;
    struct rnic_admin_cqe cqe;
    struct rnic_device_attr *attr;
    uint64_t buf;
    int i;

    tv_enable(h, 2);
    /* more commands than ring entries: exercises wrap and phase */
    for (i = 0; i < 11; i++) {
        memset(&cmd, 0, sizeof(cmd));
        cmd.opcode = RNIC_CMD_NOP;
        cqe = tv_admin(h, &cmd);
        g_assert_cmpuint(cqe.status, ==, RNIC_ST_OK);
    }
    g_assert_cmpuint(h->irqs[0], ==, 11);

    buf = test_alloc(h, 4096, 64);
    memset(&cmd, 0, sizeof(cmd));
    cmd.opcode = RNIC_CMD_QUERY_DEVICE;
    cmd.query.addr = buf;
    cmd.query.len = sizeof(*attr);
    cqe = tv_admin(h, &cmd);
    g_assert_cmpuint(cqe.status, ==, RNIC_ST_OK);
    attr = test_ptr(h, buf);
    g_assert_cmphex(attr->abi_version, ==, RNIC_ABI_VERSION);
    g_assert_cmpuint(attr->max_qp, ==, h->cfg.max_qp);
    g_assert_cmpuint(attr->max_mr, ==, h->cfg.max_mr);

    /* result buffer too small, outside RAM, unknown opcode */
    cmd.query.len = 8;
    g_assert_cmpuint(tv_admin(h, &cmd).status, ==, RNIC_ST_BAD_PARAM);
    cmd.query.len = sizeof(*attr);
    cmd.query.addr = h->ram_size - 8;
    g_assert_cmpuint(tv_admin(h, &cmd).status, ==, RNIC_ST_DMA_ERROR);
    memset(&cmd, 0, sizeof(cmd));
    cmd.opcode = 0xee;
    g_assert_cmpuint(tv_admin(h, &cmd).status, ==, RNIC_ST_BAD_OPCODE);
    g_assert_cmpuint(rnic_engine_stat(h->engine, RNIC_STAT_ADMIN_ERRORS), ==, 3);

    memset(&cmd, 0, sizeof(cmd));
    cmd.opcode = RNIC_CMD_QUERY_PORT;
    cmd.query.addr = buf;
    cmd.query.len = sizeof(struct rnic_port_attr);
    cmd.query.handle = 1;
    g_assert_cmpuint(tv_admin(h, &cmd).status, ==, RNIC_ST_OK);
    g_assert_cmpuint(((struct rnic_port_attr *)test_ptr(h, buf))->state, ==, 4);
    cmd.query.handle = 2;
    g_assert_cmpuint(tv_admin(h, &cmd).status, ==, RNIC_ST_BAD_HANDLE);
    test_host_free(h);
}

static void test_admin_bad_tail(void)
{
    TestHost *h = test_host_new(NULL);

    tv_enable(h, 2);
    /* more than 4 entries ahead: refused, nothing executed */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_AQ_TAIL, 5), ==, RNIC_ACCESS_BAD_VALUE);
    test_host_run(h);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_AQ_HEAD), ==, 0);
    /* completion consumer beyond the producer */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ACQ_HEAD, 1), ==, RNIC_ACCESS_BAD_VALUE);
    test_host_free(h);
}

static void test_admin_ring_outside_ram(void)
{
    TestHost *h = test_host_new(NULL);

    test_reg_write(h, RNIC_REG_AQ_BASE_LO, 0);
    test_reg_write(h, RNIC_REG_AQ_BASE_HI, 0x10);    /* far beyond RAM */
    test_reg_write(h, RNIC_REG_ACQ_BASE_LO, 0x20000);
    test_reg_write(h, RNIC_REG_AQ_SIZE_LOG2, 4);
    test_reg_write(h, RNIC_REG_DEV_CTRL, RNIC_CTRL_ENABLE);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_AQ_TAIL, 1), ==, 0);
    test_host_run(h);
    g_assert_true(test_reg_read(h, RNIC_REG_DEV_STATUS) & RNIC_STATUS_FATAL);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_FATAL_CODE), ==, RNIC_FATAL_AQ_DMA);
    /* reset recovers */
    test_reg_write(h, RNIC_REG_DEV_CTRL, RNIC_CTRL_RESET);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_DEV_STATUS), ==, RNIC_STATUS_LINK_UP);
    test_host_free(h);
}

static void test_doorbell_validation(void)
{
    TestHost *h = test_host_new(NULL);

    /* not enabled yet */
    g_assert_cmpint(rnic_engine_doorbell(h->engine, 0, RNIC_DB_SQ,
                                         rnic_db_value(1, 0, 1)), ==,
                    RNIC_ACCESS_NOT_NOW);
    tv_enable(h, 3);
    g_assert_cmpint(rnic_engine_doorbell(h->engine, h->cfg.db_pages, RNIC_DB_SQ,
                                         rnic_db_value(1, 0, 1)), ==,
                    RNIC_ACCESS_BAD_DOORBELL);
    g_assert_cmpint(rnic_engine_doorbell(h->engine, 0, 0x28,
                                         rnic_db_value(1, 0, 1)), ==,
                    RNIC_ACCESS_BAD_DOORBELL);
    /* EQ doorbells only in the kernel's page; arm flags only on CQ/EQ */
    g_assert_cmpint(rnic_engine_doorbell(h->engine, 1, RNIC_DB_EQ,
                                         rnic_db_value(0, 0, 1)), ==,
                    RNIC_ACCESS_BAD_DOORBELL);
    g_assert_cmpint(rnic_engine_doorbell(h->engine, 0, RNIC_DB_SQ,
                                         rnic_db_value(1, RNIC_DB_ARM_NEXT, 1)), ==,
                    RNIC_ACCESS_BAD_DOORBELL);
    g_assert_cmpuint(rnic_engine_stat(h->engine, RNIC_STAT_DOORBELL_ERRORS), ==, 5);
    test_host_free(h);
}

static void test_config_check(void)
{
    RnicEngineConfig c;
    char *msg;

    rnic_engine_config_defaults(&c);
    g_assert_null(rnic_engine_config_check(&c));
    c.max_qp = 0;
    msg = rnic_engine_config_check(&c);
    g_assert_nonnull(msg);
    g_assert_nonnull(strstr(msg, "max-qps"));
    g_free(msg);
    rnic_engine_config_defaults(&c);
    c.msix_vectors = 4096;
    msg = rnic_engine_config_check(&c);
    g_assert_nonnull(strstr(msg, "vectors"));
    g_free(msg);
    rnic_engine_config_defaults(&c);
    c.mac[0] = 1;
    msg = rnic_engine_config_check(&c);
    g_assert_nonnull(strstr(msg, "multicast"));
    g_free(msg);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/regs/identity", test_identity);
    g_test_add_func("/rnic/regs/unknown", test_unknown);
    g_test_add_func("/rnic/regs/scratch-mac-reset", test_scratch_mac_reset);
    g_test_add_func("/rnic/regs/heartbeat", test_heartbeat);
    g_test_add_func("/rnic/regs/irq-test", test_irq_test);
    g_test_add_func("/rnic/regs/enable-bad-config", test_enable_bad_config);
    g_test_add_func("/rnic/admin/nop-and-query", test_admin_nop_and_query);
    g_test_add_func("/rnic/admin/bad-tail", test_admin_bad_tail);
    g_test_add_func("/rnic/admin/ring-outside-ram", test_admin_ring_outside_ram);
    g_test_add_func("/rnic/doorbell/validation", test_doorbell_validation);
    g_test_add_func("/rnic/config/check", test_config_check);
    return g_test_run();
}
