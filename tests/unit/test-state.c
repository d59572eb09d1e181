/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: the migration state image (round trip, corruption).
 */
#include <string.h>
#include "rnic-test-host.h"

static GByteArray *save(TestHost *h)
{
    GByteArray *img = g_byte_array_new();

    rnic_engine_save(h->engine, img);
    return img;
}

static void test_roundtrip(void)
{
    TestHost *src = test_host_new(NULL);
    TestHost *dst = test_host_new(NULL);
    struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_NOP };
    GByteArray *img;
    char *err = NULL;

    test_host_enable(src, 4);
    test_admin(src, &cmd);
    test_reg_write(src, RNIC_REG_SCRATCH, 0x12345678);
    test_reg_write(src, RNIC_REG_MAC_HI, 0xbeef);
    test_host_advance(src, 7000000);
    img = save(src);
    dst->now_ns = 5;            /* another host, another clock */
    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_null(err);
    g_assert_cmphex(test_reg_read(dst, RNIC_REG_SCRATCH), ==, 0x12345678);
    g_assert_cmphex(test_reg_read(dst, RNIC_REG_MAC_HI), ==, 0xbeef);
    g_assert_cmphex(test_reg_read(dst, RNIC_REG_DEV_STATUS), ==,
                    test_reg_read(src, RNIC_REG_DEV_STATUS));
    g_assert_cmpuint(test_reg_read(dst, RNIC_REG_AQ_HEAD), ==, 1);
    g_assert_cmpuint(test_reg_read(dst, RNIC_REG_HEARTBEAT), ==,
                     test_reg_read(src, RNIC_REG_HEARTBEAT));
    g_assert_cmpuint(rnic_engine_stat(dst->engine, RNIC_STAT_ADMIN_CMDS), ==, 1);
    /* the destination's admin queue goes on where the source stopped */
    dst->aq = src->aq;
    dst->acq = src->acq;
    dst->aq_log2 = 4;
    dst->aq_tail = 1;
    dst->acq_head = 1;
    dst->next_cmd_id = src->next_cmd_id;
    memcpy(dst->ram, src->ram, src->ram_size);
    cmd.opcode = RNIC_CMD_NOP;
    g_assert_cmpuint(test_admin(dst, &cmd).status, ==, RNIC_ST_OK);
    g_byte_array_unref(img);
    test_host_free(src);
    test_host_free(dst);
}

static void test_corrupt(void)
{
    TestHost *src = test_host_new(NULL);
    TestHost *dst = test_host_new(NULL);
    GByteArray *img;
    char *err = NULL;
    size_t cut;

    test_host_enable(src, 4);
    img = save(src);
    /* every truncation fails cleanly */
    for (cut = 0; cut < img->len; cut++) {
        if (rnic_engine_load(dst->engine, img->data, cut, &err)) {
            /* only a cut exactly between sections may parse; it then
             * lacks the mandatory registers or is complete */
            continue;
        }
        g_assert_nonnull(err);
        g_free(err);
        err = NULL;
    }
    /* bad magic */
    img->data[0] ^= 0xff;
    g_assert_false(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_nonnull(strstr(err, "not an rnic state image"));
    g_free(err);
    img->data[0] ^= 0xff;
    /* unknown mandatory section appended */
    {
        static const uint8_t sec[] = { 0x99, 0, 0, 0, 0, 0, 0, 0 };

        g_byte_array_append(img, sec, sizeof(sec));
        g_assert_false(rnic_engine_load(dst->engine, img->data, img->len, &err));
        g_assert_nonnull(strstr(err, "unknown mandatory"));
        g_free(err);
    }
    g_byte_array_unref(img);
    test_host_free(src);
    test_host_free(dst);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/state/roundtrip", test_roundtrip);
    g_test_add_func("/rnic/state/corrupt", test_corrupt);
    return g_test_run();
}
