/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: what every admin command handler uses: fail the command
 * (with its event), look up an object it names and check its owner, check
 * the issuing user context and a ring the command gives, write a query's
 * result into the guest's buffer.
 */
#include <stdarg.h>
#include "rnic-admin.h"

void rnic_admin_fail(RnicEngine *e, RnicAdminResult *res, uint8_t status,
                     const char *fmt, ...)
{
    const struct rnic_admin_cmd *cmd = e->admin_cmd;
    /* out of resources or not supported: not the guest's mistake */
    RnicEvent ev = status == RNIC_ST_NO_RESOURCES ||
                   status == RNIC_ST_NOT_SUPPORTED ? RNIC_EV_ERR_ADMIN
                                                   : RNIC_EV_UB_ADMIN;
    va_list ap;

    res->status = status;
    va_start(ap, fmt);
    rnic_event_vprintf(e, ev, cmd ? cmd->opcode : 0,
                       cmd ? GUINT16_FROM_LE(cmd->cmd_id) : 0, status, fmt, ap);
    va_end(ap);
}

void *rnic_admin_obj(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                     RnicAdminResult *res, const RnicTable *t, uint32_t h)
{
    uint32_t owner = GUINT32_FROM_LE(cmd->uctx);
    RnicObject *obj = rnic_table_get(t, h);

    if (!obj) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_HANDLE, "%s: no %s %u",
                        rnic_admin_opcode_name(cmd->opcode), t->name, h);
        return NULL;
    }
    if (obj->owner != owner) {
        rnic_admin_fail(e, res, RNIC_ST_PERMISSION,
                        "%s: %s %u belongs to context %u",
                        rnic_admin_opcode_name(cmd->opcode), t->name, h,
                        obj->owner);
        return NULL;
    }
    return obj;
}

bool rnic_admin_check_uctx(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                           RnicAdminResult *res, bool kernel_only)
{
    uint32_t uctx = GUINT32_FROM_LE(cmd->uctx);

    if (kernel_only && uctx != RNIC_UCTX_KERNEL) {
        rnic_admin_fail(e, res, RNIC_ST_PERMISSION,
                        "%s is for the kernel context only (uctx %u)",
                        rnic_admin_opcode_name(cmd->opcode), uctx);
        return false;
    }
    if (!rnic_uctx_valid(e, uctx)) {
        rnic_admin_fail(e, res, RNIC_ST_PERMISSION,
                        "%s: user context %u is not allocated",
                        rnic_admin_opcode_name(cmd->opcode), uctx);
        return false;
    }
    return true;
}

enum rnic_ring_fault rnic_ring_check(uint64_t addr, uint32_t log,
                                     uint32_t log_min, uint32_t max_entries,
                                     uint32_t stride)
{
    uint64_t size;

    if (log < log_min || log > 24 || (1u << log) > max_entries) {
        return RNIC_RING_BAD_SIZE;
    }
    size = (uint64_t)stride << log;
    if (!addr || (addr & 0xfff) || addr + size < addr) {
        return RNIC_RING_BAD_ADDR;
    }
    return RNIC_RING_OK;
}

char *rnic_ring_why(uint64_t addr, uint32_t log, uint32_t log_min,
                    uint32_t max_entries, uint32_t stride)
{
    switch (rnic_ring_check(addr, log, log_min, max_entries, stride)) {
    case RNIC_RING_BAD_SIZE:
        return g_strdup_printf("2^%u entries out of range (2^%u..%u)", log,
                               log_min, max_entries);
    case RNIC_RING_BAD_ADDR:
        return g_strdup_printf("ring address 0x%" G_GINT64_MODIFIER "x is "
                               "not a 4 KiB aligned range", addr);
    default:
        return NULL;
    }
}

bool rnic_admin_check_ring(RnicEngine *e, RnicAdminResult *res,
                           const char *what, uint64_t addr, uint32_t log_size,
                           uint32_t log_min, uint32_t max_entries,
                           uint32_t stride)
{
    g_autofree char *why = rnic_ring_why(addr, log_size, log_min,
                                         max_entries, stride);
    uint64_t size;
    uint8_t probe;

    if (why) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM, "%s: %s", what, why);
        return false;
    }
    /* the whole ring must be guest memory: probe both ends */
    size = (uint64_t)stride << log_size;
    if (rnic_dma_read(e, addr, &probe, 1) ||
        rnic_dma_read(e, addr + size - 1, &probe, 1)) {
        rnic_admin_fail(e, res, RNIC_ST_DMA_ERROR,
                        "%s: ring 0x%" G_GINT64_MODIFIER "x + %"
                        G_GINT64_MODIFIER "u is not accessible", what, addr,
                        size);
        return false;
    }
    return true;
}

void rnic_admin_write_result(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                             const void *data, size_t size,
                             RnicAdminResult *res)
{
    uint64_t addr = GUINT64_FROM_LE(cmd->query.addr);
    uint32_t len = GUINT32_FROM_LE(cmd->query.len);

    if (len < size) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                        "%s: result buffer of %u bytes, %zu needed",
                        rnic_admin_opcode_name(cmd->opcode), len, size);
        return;
    }
    if (rnic_dma_write(e, addr, data, size)) {
        rnic_admin_fail(e, res, RNIC_ST_DMA_ERROR,
                        "%s: result buffer 0x%" G_GINT64_MODIFIER "x is not "
                        "writable", rnic_admin_opcode_name(cmd->opcode), addr);
        return;
    }
    res->status = RNIC_ST_OK;
    res->result0 = size;
}
