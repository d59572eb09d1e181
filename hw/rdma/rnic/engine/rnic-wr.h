/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the work-request opcode table, as Linux rxe's
 * rxe_wr_opcode_info[] beside rxe_opcode[]. One row per send-queue WR
 * opcode of the ABI (RNIC_WR_*, include/rnic/rnic-abi.h): its name, the
 * opcode of its send completion (RNIC_WC_*), what it is (RNIC_WRF_*), the
 * QP types that post it and the packet opcodes of its message
 * (rnic_roce_ops[], rnic-roce.h). The requester decodes, sends and
 * completes by asking the row; a new WR opcode is a new row (rnic-wr.c).
 */
#ifndef RNIC_WR_H
#define RNIC_WR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "rnic/rnic-abi.h"

/* A packet's place in its message: picks its opcode from a table. */
enum { RNIC_POS_ONLY, RNIC_POS_FIRST, RNIC_POS_MIDDLE, RNIC_POS_LAST,
       RNIC_POS_COUNT };

static inline unsigned rnic_msg_pos(bool first, bool last)
{
    return first ? (last ? RNIC_POS_ONLY : RNIC_POS_FIRST)
                 : (last ? RNIC_POS_LAST : RNIC_POS_MIDDLE);
}

/* RnicWrOpInfo.flags */
enum {
    /* executed by the requester (REG_MR, LOCAL_INV, BIND_MW): no packet */
    RNIC_WRF_LOCAL      = 1u << 0,
    /*
     * takes a responder resource and is answered by a response, not an
     * ACK (READ, atomics, FLUSH, ATOMIC WRITE): counts against
     * max_rd_atomic, waits for a fence; its SGEs are written
     */
    RNIC_WRF_RD_ATOMIC  = 1u << 1,
    /* IBTA 1.5 placement (FLUSH, ATOMIC WRITE): an empty READ response */
    RNIC_WRF_PLACEMENT  = 1u << 2,
    /* CmpSwap / FetchAdd: an 8-byte result buffer, an atomic ACK */
    RNIC_WRF_ATOMIC     = 1u << 3,
    /* one packet (one PSN) whatever the length */
    RNIC_WRF_ONE_PSN    = 1u << 4,
    /*
     * the payload may be inline (RNIC_WQE_INLINE) / in SGEs (num_sge):
     * checked for the operations that send; a local operation reads what
     * its own decode reads (REG_MR: a segment table either way)
     */
    RNIC_WRF_INLINE     = 1u << 5,
    RNIC_WRF_SGE        = 1u << 6,
    /* consumes a receive WQE: RNIC_WQE_SOLICITED sets the BTH's SE bit */
    RNIC_WRF_SOLICIT    = 1u << 7,
};

/* RnicWrOpInfo.qpts: the QP types (RNIC_QPT_*) that post an opcode */
#define RNIC_WR_QPT(t)      (1u << (t))
#define RNIC_WR_QPT_UDS \
    (RNIC_WR_QPT(RNIC_QPT_UD) | RNIC_WR_QPT(RNIC_QPT_GSI))
#define RNIC_WR_QPT_RC_UC \
    (RNIC_WR_QPT(RNIC_QPT_RC) | RNIC_WR_QPT(RNIC_QPT_UC))

typedef struct RnicWrOpInfo {
    const char *name;       /* "SEND", ...: NULL for no opcode */
    uint8_t wc_opcode;      /* RNIC_WC_* of its send completion */
    uint8_t qpts;           /* RNIC_WR_QPT() of the QP types that post it */
    uint16_t flags;         /* RNIC_WRF_* */
    /*
     * The RC packet opcode of each packet by its place in the message
     * (RNIC_POS_*); a UC QP sends the same operations with the UC
     * transport bits. A one-packet request has the same opcode in all
     * four. None for a local operation.
     */
    uint8_t rc_ops[RNIC_POS_COUNT];
    uint8_t ud_op;          /* the one packet on UD and GSI QPs; 0: none */
} RnicWrOpInfo;

/* By opcode: one row for each RNIC_WR_* */
extern const RnicWrOpInfo rnic_wr_ops[RNIC_WR_OPCODE_COUNT];

/* The row of WR opcode 'op'; NULL for an opcode the ABI lacks. */
static inline const RnicWrOpInfo *rnic_wr_op_info(uint8_t op)
{
    return op < RNIC_WR_OPCODE_COUNT ? &rnic_wr_ops[op] : NULL;
}

/* Has opcode 'op' the RNIC_WRF_* flag 'f' (false if it has no row)? */
static inline bool rnic_wr_is(uint8_t op, unsigned f)
{
    return op < RNIC_WR_OPCODE_COUNT && (rnic_wr_ops[op].flags & f);
}

/* Does a QP of type 'type' (RNIC_QPT_*) post opcode 'op'? */
static inline bool rnic_wr_qpt_ok(uint8_t op, uint8_t type)
{
    return op < RNIC_WR_OPCODE_COUNT && type < 8 &&
           (rnic_wr_ops[op].qpts & RNIC_WR_QPT(type));
}

/* The completion opcode of a send WQE (SEND for an unknown opcode). */
static inline uint8_t rnic_wc_opcode(uint8_t op)
{
    return op < RNIC_WR_OPCODE_COUNT ? rnic_wr_ops[op].wc_opcode :
                                       RNIC_WC_SEND;
}

#endif /* RNIC_WR_H */
