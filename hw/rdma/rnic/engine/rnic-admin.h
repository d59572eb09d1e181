/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the admin queue (command ring + completion ring in guest
 * memory) and the dispatch of admin commands to the object code.
 */
#ifndef RNIC_ADMIN_H
#define RNIC_ADMIN_H

#include "rnic-engine-int.h"
#include "rnic/rnic-abi-names.h"   /* rnic_admin_opcode_name/status_name */

/* What a command handler produces; copied into struct rnic_admin_cqe. */
typedef struct RnicAdminResult {
    uint8_t status;             /* enum rnic_admin_status */
    uint32_t result0;
    uint32_t result1;
    uint32_t result2;
    /*
     * Not finished: the phase's budget is spent before the command's work
     * (SCM_PERSIST of a long range): it stays at the head of the queue, is
     * read again and goes on (its handler keeps the cursor) in the next run.
     */
    bool again;
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

/*
 * Helpers for handlers (rnic-admin-helpers.c). rnic_admin_fail sets the
 * status and logs why (a guest error for statuses that mean the guest
 * asked for something wrong). rnic_admin_check_uctx validates cmd->uctx;
 * kernel_only commands demand 0.
 */
void rnic_admin_fail(RnicEngine *e, RnicAdminResult *res, uint8_t status,
                     const char *fmt, ...) G_GNUC_PRINTF(4, 5);
bool rnic_admin_check_uctx(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                           RnicAdminResult *res, bool kernel_only);
/*
 * The object of table 't' at handle 'h' that a command names, if it exists
 * and belongs to the command's user context; else the command fails
 * (BAD_HANDLE, PERMISSION) and the result is NULL.
 */
void *rnic_admin_obj(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                     RnicAdminResult *res, const RnicTable *t, uint32_t h);
/* Write a query result to cmd->query.addr (len checked). */
void rnic_admin_write_result(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                             const void *data, size_t size,
                             RnicAdminResult *res);

/* rnic-ctx.c */
void rnic_cmd_create_net_ctx(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                             RnicAdminResult *res);
void rnic_cmd_destroy_net_ctx(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                              RnicAdminResult *res);
void rnic_cmd_alloc_uctx(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res);
void rnic_cmd_free_uctx(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                        RnicAdminResult *res);
void rnic_cmd_add_gid(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                      RnicAdminResult *res);
void rnic_cmd_del_gid(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                      RnicAdminResult *res);
void rnic_cmd_alloc_pd(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                       RnicAdminResult *res);
void rnic_cmd_dealloc_pd(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res);
/* rnic-cq.c */
void rnic_cmd_create_eq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                        RnicAdminResult *res);
void rnic_cmd_destroy_eq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res);
void rnic_cmd_create_cq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                        RnicAdminResult *res);
void rnic_cmd_resize_cq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                        RnicAdminResult *res);
void rnic_cmd_destroy_cq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res);
/* rnic-srq.c */
void rnic_cmd_create_srq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res);
void rnic_cmd_modify_srq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res);
void rnic_cmd_destroy_srq(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                          RnicAdminResult *res);
/* rnic-qp.c */
void rnic_cmd_create_qp(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                        RnicAdminResult *res);
void rnic_cmd_modify_qp(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                        RnicAdminResult *res);
void rnic_cmd_query_qp(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                       RnicAdminResult *res);
void rnic_cmd_query_qp_stats(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                             RnicAdminResult *res);
void rnic_cmd_destroy_qp(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res);
/* rnic-mr-cmd.c */
void rnic_cmd_reg_mr(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                     RnicAdminResult *res);
void rnic_cmd_alloc_mr(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                       RnicAdminResult *res);
void rnic_cmd_dereg_mr(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                       RnicAdminResult *res);
void rnic_cmd_rereg_mr(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                       RnicAdminResult *res);

/* rnic-mcast.c */
void rnic_cmd_attach_mcast(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                           RnicAdminResult *res);
void rnic_cmd_detach_mcast(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                           RnicAdminResult *res);

/* rnic-mw.c */
void rnic_cmd_alloc_mw(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                       RnicAdminResult *res);

/* rnic-scm.c */
void rnic_cmd_scm_persist(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                          RnicAdminResult *res);

/* Validation shared by queue creation: ring base and size. */
bool rnic_admin_check_ring(RnicEngine *e, RnicAdminResult *res,
                           const char *what, uint64_t addr, uint32_t log_size,
                           uint32_t log_min, uint32_t max_entries,
                           uint32_t stride);

#endif /* RNIC_ADMIN_H */
