/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the admin queue (command ring + completion ring in guest
 * memory) and the dispatch of admin commands to the object code.
 */
#ifndef RNIC_ADMIN_H
#define RNIC_ADMIN_H

#include "rnic-engine-int.h"

/* What a command handler produces; copied into struct rnic_admin_cqe. */
typedef struct RnicAdminResult {
    uint8_t status;             /* enum rnic_admin_status */
    uint32_t result0;
    uint32_t result1;
    uint32_t result2;
} RnicAdminResult;

typedef void (*RnicAdminHandler)(RnicEngine *e,
                                 const struct rnic_admin_cmd *cmd,
                                 RnicAdminResult *res);

/* Register writes of the admin queue. */
RnicAccessResult rnic_admin_tail_write(RnicEngine *e, uint32_t tail);
RnicAccessResult rnic_admin_cq_head_write(RnicEngine *e, uint32_t head);

/* Execute the commands between head and tail (from rnic_engine_run). */
void rnic_admin_process(RnicEngine *e);

/* Destroy every object the admin queue created (disable, reset). */
void rnic_admin_objects_reset(RnicEngine *e);

/* Name of an admin opcode / status, for logs and tests. */
const char *rnic_admin_opcode_name(unsigned opcode);
const char *rnic_admin_status_name(unsigned status);

#endif /* RNIC_ADMIN_H */
