/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: the work-request opcode table (rnic-wr.h). Every
 * row against the ABI and the packet-opcode table rnic_roce_ops[]: each
 * RNIC_WR_* has a row; a local operation sends nothing and runs on RC and
 * UC QPs; the packet opcodes of one that sends exist, are requests and
 * sit at their place in the message; its flags, its completion opcode and
 * the QP types that post it are what its packets say (a UC or UD variant
 * where the codec has one). Then through the engine: each opcode posted
 * on an RC, a UC and a UD QP is refused exactly where its row says, with
 * a local QP operation error completing as the row's completion opcode.
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"

#define TRANSPORT(op)   ((op) & RNIC_ROCE_TRANSPORT_MASK)
#define OPERATION(op)   ((op) & ~RNIC_ROCE_TRANSPORT_MASK)

#define WRF_ALL (RNIC_WRF_LOCAL | RNIC_WRF_RD_ATOMIC | RNIC_WRF_PLACEMENT | \
                 RNIC_WRF_ATOMIC | RNIC_WRF_ONE_PSN | RNIC_WRF_INLINE | \
                 RNIC_WRF_SGE | RNIC_WRF_SOLICIT)
#define QPT_ALL (RNIC_WR_QPT_RC_UC | RNIC_WR_QPT_UDS)

/* The codec's flags of packet opcode 'op' (it must know it). */
static uint16_t pkt_flags(uint8_t op)
{
    const RnicRoceOpInfo *info = rnic_roce_op_info(op);

    g_assert_nonnull(info);
    return info->flags;
}

/* The completion of a request that sends 'only' as its one packet. */
static uint8_t wc_of_request(uint8_t only)
{
    static const struct {
        uint16_t opf;
        uint8_t wc;
    } by_kind[] = {
        { RNIC_ROCE_OPF_SEND, RNIC_WC_SEND },
        { RNIC_ROCE_OPF_WRITE, RNIC_WC_RDMA_WRITE },
        { RNIC_ROCE_OPF_READ, RNIC_WC_RDMA_READ },
        { RNIC_ROCE_OPF_FLUSH, RNIC_WC_FLUSH },
        { RNIC_ROCE_OPF_ATOMIC_WRITE, RNIC_WC_ATOMIC_WRITE },
    };
    uint16_t f = pkt_flags(only);
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(by_kind); i++) {
        if (f & by_kind[i].opf) {
            return by_kind[i].wc;
        }
    }
    g_assert_true(f & RNIC_ROCE_OPF_ATOMIC);
    return only == RNIC_ROCE_RC_COMPARE_SWAP ? RNIC_WC_COMP_SWAP :
                                               RNIC_WC_FETCH_ADD;
}

static bool has(const RnicWrOpInfo *r, unsigned f)
{
    return (r->flags & f) != 0;
}

/* A local operation: no packet, RC and UC QPs, a local completion. */
static void check_local_row(const RnicWrOpInfo *r)
{
    unsigned pos;

    for (pos = 0; pos < RNIC_POS_COUNT; pos++) {
        g_assert_cmpuint(r->rc_ops[pos], ==, 0);
    }
    g_assert_cmpuint(r->ud_op, ==, 0);
    g_assert_cmphex(r->flags & (RNIC_WRF_RD_ATOMIC | RNIC_WRF_PLACEMENT |
                                RNIC_WRF_ATOMIC | RNIC_WRF_ONE_PSN |
                                RNIC_WRF_SOLICIT), ==, 0);
    g_assert_cmphex(r->qpts, ==, RNIC_WR_QPT_RC_UC);
    g_assert_true(r->wc_opcode == RNIC_WC_LOCAL_INV ||
                  r->wc_opcode == RNIC_WC_REG_MR ||
                  r->wc_opcode == RNIC_WC_BIND_MW);
}

/*
 * The RC packet opcodes of an operation that sends, by place: requests
 * of the RC transport; one opcode in all four places (a one-packet
 * request), or ONLY/FIRST/MIDDLE/LAST of one operation with immediate or
 * invalidate on the packets that end it. Returns whether it is one.
 */
static bool check_rc_ops(const RnicWrOpInfo *r)
{
    static const uint16_t place[RNIC_POS_COUNT] = {
        [RNIC_POS_ONLY] = RNIC_ROCE_OPF_ONLY,
        [RNIC_POS_FIRST] = RNIC_ROCE_OPF_FIRST,
        [RNIC_POS_MIDDLE] = RNIC_ROCE_OPF_MIDDLE,
        [RNIC_POS_LAST] = RNIC_ROCE_OPF_LAST,
    };
    const uint16_t kind = RNIC_ROCE_OPF_SEND | RNIC_ROCE_OPF_WRITE |
                          RNIC_ROCE_OPF_READ | RNIC_ROCE_OPF_ATOMIC |
                          RNIC_ROCE_OPF_FLUSH | RNIC_ROCE_OPF_ATOMIC_WRITE;
    const uint16_t ends = RNIC_ROCE_OPF_IMM | RNIC_ROCE_OPF_INV;
    const uint16_t where = RNIC_ROCE_OPF_FIRST | RNIC_ROCE_OPF_MIDDLE |
                           RNIC_ROCE_OPF_LAST;
    uint16_t only = pkt_flags(r->rc_ops[RNIC_POS_ONLY]);
    bool one = true;
    unsigned pos;

    for (pos = 0; pos < RNIC_POS_COUNT; pos++) {
        uint16_t f = pkt_flags(r->rc_ops[pos]);

        g_assert_cmphex(TRANSPORT(r->rc_ops[pos]), ==, RNIC_ROCE_TRANSPORT_RC);
        g_assert_true(f & RNIC_ROCE_OPF_REQUEST);
        g_assert_cmphex(f & kind, ==, only & kind);
        one = one && r->rc_ops[pos] == r->rc_ops[RNIC_POS_ONLY];
    }
    g_assert_cmphex(only & where, ==, RNIC_ROCE_OPF_ONLY);
    if (one) {
        return true;
    }
    for (pos = 0; pos < RNIC_POS_COUNT; pos++) {
        uint16_t f = pkt_flags(r->rc_ops[pos]);

        g_assert_cmphex(f & where, ==, place[pos]);
        g_assert_cmphex(f & ends, ==,
                        (f & RNIC_ROCE_OPF_LAST) ? only & ends : 0);
    }
    return false;
}

/* An operation that sends: its flags and completion from its packets. */
static void check_sending_row(const RnicWrOpInfo *r)
{
    uint8_t only = r->rc_ops[RNIC_POS_ONLY];
    uint8_t uc_only = RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_UC, OPERATION(only));
    uint8_t ud_only = RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_UD, OPERATION(only));
    bool one = check_rc_ops(r);
    uint16_t f = pkt_flags(only);
    bool uc = true;
    unsigned pos;

    g_assert_cmpuint(r->wc_opcode, ==, wc_of_request(only));
    /* answered by a response, one request packet, no inline data */
    g_assert_cmpint(has(r, RNIC_WRF_RD_ATOMIC), ==,
                    !!(f & (RNIC_ROCE_OPF_READ | RNIC_ROCE_OPF_ATOMIC |
                            RNIC_ROCE_OPF_FLUSH |
                            RNIC_ROCE_OPF_ATOMIC_WRITE)));
    g_assert_cmpint(has(r, RNIC_WRF_RD_ATOMIC), ==, one);
    g_assert_cmpint(has(r, RNIC_WRF_INLINE), ==,
                    !has(r, RNIC_WRF_RD_ATOMIC));
    g_assert_true(!has(r, RNIC_WRF_INLINE) || (f & RNIC_ROCE_OPF_PAYLOAD));
    /* FLUSH, ATOMIC WRITE: no SGEs */
    g_assert_cmpint(has(r, RNIC_WRF_PLACEMENT), ==,
                    !!(f & (RNIC_ROCE_OPF_FLUSH |
                            RNIC_ROCE_OPF_ATOMIC_WRITE)));
    g_assert_cmpint(has(r, RNIC_WRF_SGE), ==, !has(r, RNIC_WRF_PLACEMENT));
    g_assert_cmpint(has(r, RNIC_WRF_ATOMIC), ==,
                    !!(f & RNIC_ROCE_OPF_ATOMIC));
    /* one PSN: all but READ, whose response PSNs follow its length */
    g_assert_cmpint(has(r, RNIC_WRF_ONE_PSN), ==,
                    one && !(f & RNIC_ROCE_OPF_READ));
    g_assert_cmpint(has(r, RNIC_WRF_SOLICIT), ==,
                    !!(f & RNIC_ROCE_OPF_COMPLETES));
    /* UC: where the codec has every packet in the UC transport */
    for (pos = 0; pos < RNIC_POS_COUNT; pos++) {
        const RnicRoceOpInfo *u = rnic_roce_op_info(
            RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_UC,
                             OPERATION(r->rc_ops[pos])));

        uc = uc && u && u->flags == pkt_flags(r->rc_ops[pos]);
    }
    g_assert_true(uc || !rnic_roce_op_info(uc_only));
    g_assert_cmpint(!!(r->qpts & RNIC_WR_QPT(RNIC_QPT_UC)), ==, uc);
    /* UD and GSI: where the codec has the one packet in the UD transport */
    if (rnic_roce_op_info(ud_only)) {
        g_assert_cmphex(r->ud_op, ==, ud_only);
        g_assert_true(pkt_flags(ud_only) & RNIC_ROCE_OPF_REQUEST);
        g_assert_cmphex(r->qpts & RNIC_WR_QPT_UDS, ==, RNIC_WR_QPT_UDS);
    } else {
        g_assert_cmphex(r->ud_op, ==, 0);
        g_assert_cmphex(r->qpts & RNIC_WR_QPT_UDS, ==, 0);
    }
}

/* Every row, and nothing beyond them. */
static void test_wr_rows(void)
{
    unsigned op, other;

    for (op = 0; op < RNIC_WR_OPCODE_COUNT; op++) {
        const RnicWrOpInfo *r = rnic_wr_op_info(op);

        g_test_message("row %u %s", op, r->name);
        g_assert_true(r == &rnic_wr_ops[op]);
        g_assert_nonnull(r->name);
        for (other = 0; other < op; other++) {
            g_assert_cmpstr(rnic_wr_ops[other].name, !=, r->name);
        }
        g_assert_cmphex(r->flags & ~WRF_ALL, ==, 0);
        g_assert_cmpuint(r->wc_opcode, <=, RNIC_WC_BIND_MW);
        g_assert_cmpuint(rnic_wc_opcode(op), ==, r->wc_opcode);
        /* RC posts everything; UD and GSI the same */
        g_assert_cmphex(r->qpts & ~QPT_ALL, ==, 0);
        g_assert_true(r->qpts & RNIC_WR_QPT(RNIC_QPT_RC));
        g_assert_cmpint(!!(r->qpts & RNIC_WR_QPT(RNIC_QPT_UD)), ==,
                        !!(r->qpts & RNIC_WR_QPT(RNIC_QPT_GSI)));
        if (has(r, RNIC_WRF_LOCAL)) {
            check_local_row(r);
        } else {
            check_sending_row(r);
        }
    }
    /* an opcode the ABI lacks: no row, refused, completes as a SEND */
    for (op = RNIC_WR_OPCODE_COUNT; op < 256; op++) {
        g_assert_null(rnic_wr_op_info(op));
        g_assert_false(rnic_wr_is(op, WRF_ALL));
        g_assert_false(rnic_wr_qpt_ok(op, RNIC_QPT_RC));
        g_assert_cmpuint(rnic_wc_opcode(op), ==, RNIC_WC_SEND);
    }
}

static bool log_has(TestHost *h, const char *text)
{
    unsigned i;

    for (i = 0; i < h->log->len; i++) {
        if (strstr(g_ptr_array_index(h->log, i), text)) {
            return true;
        }
    }
    return false;
}

/*
 * Each opcode posted (signaled, no SGE) on a new RC, UC and UD QP: refused
 * as not valid on the QP's type exactly where its row leaves the type
 * out, completing in error with the row's completion opcode.
 */
static void test_wr_qp_types(void)
{
    static const uint8_t types[] = { RNIC_QPT_RC, RNIC_QPT_UC, RNIC_QPT_UD };
    TestHost *h = test_host_new(NULL);
    struct rnic_sge none = { 0 };
    uint8_t remote[16];
    struct rnic_cqe c;
    unsigned t, op;
    uint32_t pd;
    TvCq *cq;

    pd = tv_kernel_pd(h, 8, &cq, remote);
    for (t = 0; t < G_N_ELEMENTS(types); t++) {
        for (op = 0; op < RNIC_WR_OPCODE_COUNT; op++) {
            TvQp *qp = tv_qp(h, types[t], pd, cq, cq, NULL, 2, 0);
            struct rnic_sq_wqe w = tv_wqe(op + 1, op, 0);
            bool refused;

            if (types[t] == RNIC_QPT_UD) {
                tv_ud_ready(h, qp, 0x1234);
            } else {
                tv_rc_connect(h, qp, 0, remote, 0x99);
            }
            g_ptr_array_set_size(h->log, 0);
            tv_post_send(h, qp, &w, &none, NULL);
            refused = log_has(h, "opcode not valid");
            g_test_message("type %u %s: %s", types[t], rnic_wr_ops[op].name,
                           refused ? "refused" : "taken");
            g_assert_cmpint(refused, ==, !rnic_wr_qpt_ok(op, types[t]));
            if (refused) {
                c = tv_poll_one(h, cq);
                g_assert_cmpuint(c.wr_id, ==, op + 1);
                g_assert_cmpuint(c.status, ==, RNIC_WC_LOC_QP_OP_ERR);
                g_assert_cmpuint(c.opcode, ==, rnic_wr_ops[op].wc_opcode);
            }
            while (tv_poll(h, cq, &c, 1)) {
                /* what the taken ones completed with is not this test's */
            }
            g_free(qp);
        }
    }
    g_free(cq);
    test_host_free(h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/wr/table/rows", test_wr_rows);
    g_test_add_func("/wr/table/qp-types", test_wr_qp_types);
    return g_test_run();
}
