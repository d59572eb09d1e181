/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The test verbs driver over the real device (see rnic-verbs.h).
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "rnic-verbs.h"

uint64_t qv_alloc(QRnic *d, uint64_t size, uint64_t align)
{
    uint64_t a = guest_alloc(d->alloc, size + align);

    a = (a + align - 1) & ~(align - 1);
    qtest_memset(rnic_qts(d), a, 0, size);
    return a;
}

void qv_loop_init(TvPair *l, QRnic *d, uint32_t buf_size)
{
    rnic_reg_write(d, RNIC_REG_DEV_CTRL, RNIC_CTRL_RESET);
    d->aq = 0;
    tv_pair_fini(l);
    rnic_msix_route(d, 0);
    rnic_msix_route(d, 1);
    rnic_msix_route(d, 2);
    tv_pair_init(d, l, 1, RNIC_EQ_ASYNC, 6, 5, buf_size);
}

char *qv_tmp_file(const char *tmpl)
{
    char *path = NULL;
    int fd = g_file_open_tmp(tmpl, &path, NULL);

    g_assert(fd >= 0);
    close(fd);
    return path;
}

static void rv_write(QRnic *d, uint64_t addr, const void *buf, size_t len)
{
    qtest_memwrite(rnic_qts(d), addr, buf, len);
}

static void rv_read(QRnic *d, uint64_t addr, void *buf, size_t len)
{
    qtest_memread(rnic_qts(d), addr, buf, len);
}

static uint64_t rv_alloc(QRnic *d, uint64_t size, uint64_t align)
{
    return qv_alloc(d, size, align);
}

static uint32_t rv_reg_read(QRnic *d, uint32_t offset)
{
    return rnic_reg_read(d, offset);
}

static void rv_reg_write(QRnic *d, uint32_t offset, uint32_t value)
{
    rnic_reg_write(d, offset, value);
}

static int rv_doorbell(QRnic *d, uint32_t page, uint32_t offset,
                       uint64_t value)
{
    rnic_doorbell(d, page, offset, value);
    return 0;
}

static void rv_run(QRnic *d)
{
    /* the device works off a doorbell by itself */
}

static void rv_step(QRnic *d, uint64_t ns)
{
    qtest_clock_step(rnic_qts(d), ns);
}

#include "rnic-verbs-driver.c.inc"
