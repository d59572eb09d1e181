/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the work-request opcode table (rnic-wr.h), one row per
 * send-queue WR opcode of the ABI, as Linux rxe's rxe_wr_opcode_info[]
 * (drivers/infiniband/sw/rxe/rxe_opcode.c). Which QP types post it, what
 * it completes as, whether it sends (and with which packet opcodes),
 * takes a responder resource, carries inline data or SGEs. The packet
 * opcodes are those of rnic_roce_ops[] (rnic-roce.h); tests/unit/test-wr.c
 * walks every row against it.
 */
#include "rnic-wr.h"
#include "rnic-roce.h"

#define ALL_QPTS    (RNIC_WR_QPT_RC_UC | RNIC_WR_QPT_UDS)
#define RC_ONLY     RNIC_WR_QPT(RNIC_QPT_RC)

/* A message of several packets: ONLY, FIRST, MIDDLE, LAST (RNIC_POS_*) */
#define MSG(op) { \
    RNIC_ROCE_RC_##op##_ONLY, RNIC_ROCE_RC_##op##_FIRST, \
    RNIC_ROCE_RC_##op##_MIDDLE, RNIC_ROCE_RC_##op##_LAST }
#define MSG_WITH(op, with) { \
    RNIC_ROCE_RC_##op##_ONLY_WITH_##with, RNIC_ROCE_RC_##op##_FIRST, \
    RNIC_ROCE_RC_##op##_MIDDLE, RNIC_ROCE_RC_##op##_LAST_WITH_##with }
/* A one-packet request (READ: one request for all its response PSNs) */
#define ONE(op) { RNIC_ROCE_RC_##op, RNIC_ROCE_RC_##op, RNIC_ROCE_RC_##op, \
                  RNIC_ROCE_RC_##op }

/* The payload of a SEND or WRITE: inline or in SGEs */
#define DATA        (RNIC_WRF_INLINE | RNIC_WRF_SGE)
/* FLUSH and ATOMIC WRITE: what they need is in the WQE header */
#define PLACE       (RNIC_WRF_RD_ATOMIC | RNIC_WRF_PLACEMENT | RNIC_WRF_ONE_PSN)
#define ATOMIC      (RNIC_WRF_RD_ATOMIC | RNIC_WRF_ATOMIC | RNIC_WRF_ONE_PSN | \
                     RNIC_WRF_SGE)

/* A local operation: no packet */
#define NONE        { 0 }

#define ROW(op, wc, f, q, rc, ud) \
    [RNIC_WR_##op] = { .name = #op, .wc_opcode = RNIC_WC_##wc, .flags = (f), \
                       .qpts = (q), .rc_ops = rc, .ud_op = (ud) }

/* opcode, completion, flags, QP types, RC/UC packets, UD packet */
const RnicWrOpInfo rnic_wr_ops[RNIC_WR_OPCODE_COUNT] = {
    ROW(SEND, SEND, DATA | RNIC_WRF_SOLICIT, ALL_QPTS,
        MSG(SEND), RNIC_ROCE_UD_SEND_ONLY),
    ROW(SEND_IMM, SEND, DATA | RNIC_WRF_SOLICIT, ALL_QPTS,
        MSG_WITH(SEND, IMMEDIATE), RNIC_ROCE_UD_SEND_ONLY_WITH_IMMEDIATE),
    ROW(SEND_INV, SEND, DATA | RNIC_WRF_SOLICIT, RC_ONLY,
        MSG_WITH(SEND, INVALIDATE), 0),
    ROW(RDMA_WRITE, RDMA_WRITE, DATA, RNIC_WR_QPT_RC_UC,
        MSG(RDMA_WRITE), 0),
    ROW(RDMA_WRITE_IMM, RDMA_WRITE, DATA | RNIC_WRF_SOLICIT, RNIC_WR_QPT_RC_UC,
        MSG_WITH(RDMA_WRITE, IMMEDIATE), 0),
    ROW(RDMA_READ, RDMA_READ, RNIC_WRF_RD_ATOMIC | RNIC_WRF_SGE, RC_ONLY,
        ONE(RDMA_READ_REQUEST), 0),
    ROW(ATOMIC_CMP_SWP, COMP_SWAP, ATOMIC, RC_ONLY, ONE(COMPARE_SWAP), 0),
    ROW(ATOMIC_FETCH_ADD, FETCH_ADD, ATOMIC, RC_ONLY, ONE(FETCH_ADD), 0),
    ROW(LOCAL_INV, LOCAL_INV, RNIC_WRF_LOCAL, RNIC_WR_QPT_RC_UC, NONE, 0),
    /* the segment table of a mapped STag: inline or through one SGE */
    ROW(REG_MR, REG_MR, RNIC_WRF_LOCAL | DATA, RNIC_WR_QPT_RC_UC, NONE, 0),
    ROW(FLUSH, FLUSH, PLACE, RC_ONLY, ONE(FLUSH), 0),
    ROW(ATOMIC_WRITE, ATOMIC_WRITE, PLACE, RC_ONLY, ONE(ATOMIC_WRITE), 0),
    ROW(BIND_MW, BIND_MW, RNIC_WRF_LOCAL, RNIC_WR_QPT_RC_UC, NONE, 0),
};
