/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: the typed events (rnic-event.h) a host traces — what
 * a SEND reports, a guest mistake as a UB event with its numbers and
 * reason, and nothing at all while the host says events are off.
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-roce.h"

/* Is there an event whose text starts with 'prefix'? */
static bool logged(TestHost *h, const char *prefix)
{
    guint i;

    for (i = 0; i < h->log->len; i++) {
        if (g_str_has_prefix(g_ptr_array_index(h->log, i), prefix)) {
            return true;
        }
    }
    if (g_test_verbose()) {
        for (i = 0; i < h->log->len; i++) {
            g_printerr("  %s\n", (char *)g_ptr_array_index(h->log, i));
        }
    }
    return false;
}

static void clear_log(TestHost *h)
{
    g_ptr_array_set_size(h->log, 0);
}

/* A SEND: its WQE, its packet on both sides and its completion, typed. */
static void test_send(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = f->h;
    g_autofree char *start = NULL, *tx = NULL, *rx = NULL, *done = NULL;
    g_autofree char *state = NULL;
    struct rnic_qp_attr a = { .qp_state = RNIC_QPS_ERR };

    /* normal operation is reported only to a host that traces */
    clear_log(h);
    tv_pair_send(p, 0, 100, 7, 8);
    tv_expect_cqe(h, p->cqa, 8, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    g_assert_cmpuint(h->log->len, ==, g_test_verbose() ? h->log->len : 0);

    h->trace = true;
    tv_pair_send(p, 0, 100, 7, 8);
    tv_expect_cqe(h, p->cqa, 8, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    start = g_strdup_printf("wqe_start qpn=%u index=1 opcode=%u length=100",
                            p->a->qpn, RNIC_WR_SEND);
    tx = g_strdup_printf("pkt_tx qpn=%u dest_qp=%u opcode=%u", p->a->qpn,
                         p->b->qpn, RNIC_ROCE_RC_SEND_ONLY);
    rx = g_strdup_printf("pkt_rx qpn=%u opcode=%u", p->b->qpn,
                         RNIC_ROCE_RC_SEND_ONLY);
    done = g_strdup_printf("wqe_done qpn=%u index=1 opcode=%u status=%u",
                           p->a->qpn, RNIC_WR_SEND, RNIC_WC_SUCCESS);
    g_assert_true(logged(h, start));
    g_assert_true(logged(h, tx));
    g_assert_true(logged(h, rx));
    g_assert_true(logged(h, done));
    g_assert_false(logged(h, "admin_done"));
    g_assert_cmpuint(h->guest_errors, ==, 0);
    /* a state change, by the admin queue */
    g_assert_cmpuint(tv_modify(h, p->a, &a, RNIC_QP_STATE), ==, RNIC_ST_OK);
    state = g_strdup_printf("qp_state qpn=%u from=%u to=%u", p->a->qpn,
                            RNIC_QPS_RTS, RNIC_QPS_ERR);
    g_assert_true(logged(h, state));
    g_assert_true(logged(h, "admin_done opcode="));
}

/* A SEND from an SGE with a key of no MR: ub_sge with its numbers. */
static void test_guest_mistake(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = f->h;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 1);
    struct rnic_sge s = tv_sge(p->bufa, 64, p->mra ^ 0x100);
    g_autofree char *sge = NULL;

    clear_log(h);
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_LOC_PROT_ERR);
    sge = g_strdup_printf("ub_sge sge=0 lkey=%u addr=%" G_GUINT64_FORMAT
                          " length=64: ",
                          p->mra ^ 0x100, p->bufa);
    g_assert_true(logged(h, sge));
    g_assert_true(logged(h, "ub_wqe qpn="));
    g_assert_cmpuint(h->guest_errors, ==, 2);   /* the SGE, the WQE */
}

/* Events off: the engine asks and reports nothing, the device works. */
static void test_off(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = f->h;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 1);
    struct rnic_sge s = tv_sge(p->bufa, 64, p->mra ^ 0x100);

    clear_log(h);
    h->events_off = true;
    tv_pair_send(p, 0, 100, 7, 8);
    tv_expect_cqe(h, p->cqa, 8, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_LOC_PROT_ERR);
    g_assert_cmpuint(h->log->len, ==, 0);
    g_assert_cmpuint(h->guest_errors, ==, 0);
    h->events_off = false;
}

/* The text form: lower-case name, named numbers, the reason. */
static void test_describe(void)
{
    RnicEventArgs a = { .v = { 3, 7 }, .why = "SGE outside the MR" };
    g_autofree char *text = rnic_event_describe(RNIC_EV_UB_WQE, &a);
    g_autofree char *bare = NULL;

    g_assert_cmpstr(text, ==, "ub_wqe qpn=3 index=7: SGE outside the MR");
    a.why = NULL;
    bare = rnic_event_describe(RNIC_EV_LINK, &a);
    g_assert_cmpstr(bare, ==, "link up=3");
    g_assert_cmpint(rnic_event_class(RNIC_EV_UB_WQE), ==, RNIC_EVC_UB);
    g_assert_cmpint(rnic_event_class(RNIC_EV_ERR_WIRE_RX), ==, RNIC_EVC_ERR);
    g_assert_cmpint(rnic_event_class(RNIC_EV_QP_STATE), ==, RNIC_EVC_TRACE);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    tv_test_add_pair("/rnic/events/send", NULL, test_send);
    tv_test_add_pair("/rnic/events/guest-mistake", NULL, test_guest_mistake);
    tv_test_add_pair("/rnic/events/off", NULL, test_off);
    g_test_add_func("/rnic/events/describe", test_describe);
    return g_test_run();
}
