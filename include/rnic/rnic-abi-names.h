/* SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB) */
/*
 * Names of the admin opcodes and completion statuses of rnic-abi.h, for
 * the log messages of the device, the guest kernel driver and the tests.
 * Kept next to the ABI so that a new opcode or status is named once.
 */
#ifndef RNIC_ABI_NAMES_H
#define RNIC_ABI_NAMES_H

#include "rnic-abi.h"

static inline const char *rnic_admin_opcode_name(unsigned int opcode)
{
    static const char *const names[RNIC_CMD_OPCODE_COUNT] = {
        [RNIC_CMD_NOP] = "NOP",
        [RNIC_CMD_QUERY_DEVICE] = "QUERY_DEVICE",
        [RNIC_CMD_QUERY_PORT] = "QUERY_PORT",
        [RNIC_CMD_CREATE_NET_CTX] = "CREATE_NET_CTX",
        [RNIC_CMD_DESTROY_NET_CTX] = "DESTROY_NET_CTX",
        [RNIC_CMD_ALLOC_UCTX] = "ALLOC_UCTX",
        [RNIC_CMD_FREE_UCTX] = "FREE_UCTX",
        [RNIC_CMD_ADD_GID] = "ADD_GID",
        [RNIC_CMD_DEL_GID] = "DEL_GID",
        [RNIC_CMD_ALLOC_PD] = "ALLOC_PD",
        [RNIC_CMD_DEALLOC_PD] = "DEALLOC_PD",
        [RNIC_CMD_CREATE_EQ] = "CREATE_EQ",
        [RNIC_CMD_DESTROY_EQ] = "DESTROY_EQ",
        [RNIC_CMD_CREATE_CQ] = "CREATE_CQ",
        [RNIC_CMD_RESIZE_CQ] = "RESIZE_CQ",
        [RNIC_CMD_DESTROY_CQ] = "DESTROY_CQ",
        [RNIC_CMD_CREATE_SRQ] = "CREATE_SRQ",
        [RNIC_CMD_MODIFY_SRQ] = "MODIFY_SRQ",
        [RNIC_CMD_DESTROY_SRQ] = "DESTROY_SRQ",
        [RNIC_CMD_CREATE_QP] = "CREATE_QP",
        [RNIC_CMD_MODIFY_QP] = "MODIFY_QP",
        [RNIC_CMD_QUERY_QP] = "QUERY_QP",
        [RNIC_CMD_DESTROY_QP] = "DESTROY_QP",
        [RNIC_CMD_REG_MR] = "REG_MR",
        [RNIC_CMD_ALLOC_MR] = "ALLOC_MR",
        [RNIC_CMD_DEREG_MR] = "DEREG_MR",
    };

    if (opcode < RNIC_CMD_OPCODE_COUNT && names[opcode]) {
        return names[opcode];
    }
    return "unknown";
}

static inline const char *rnic_admin_status_name(unsigned int status)
{
    static const char *const names[] = {
        [RNIC_ST_OK] = "ok",
        [RNIC_ST_BAD_OPCODE] = "bad opcode",
        [RNIC_ST_BAD_PARAM] = "bad parameter",
        [RNIC_ST_NO_RESOURCES] = "no resources",
        [RNIC_ST_BAD_HANDLE] = "bad handle",
        [RNIC_ST_BUSY] = "busy",
        [RNIC_ST_BAD_STATE] = "bad state",
        [RNIC_ST_DMA_ERROR] = "DMA error",
        [RNIC_ST_PERMISSION] = "permission denied",
        [RNIC_ST_NOT_SUPPORTED] = "not supported",
        [RNIC_ST_EXISTS] = "exists",
    };

    if (status < sizeof(names) / sizeof(names[0]) && names[status]) {
        return names[status];
    }
    return "?";
}

#endif /* RNIC_ABI_NAMES_H */
