/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: UD multicast. Three UD QPs of one network context;
 * two join a group (an IPv4 group address as RDMA-CM maps it, and an IPv6
 * one); a send to the group reaches every QP attached (multicast
 * loopback) and the wire, with the group's Ethernet address; that frame,
 * arriving from the wire, reaches the group again; detaching and
 * destroying QPs take them out. Bad input: a QP that is not UD, a GID that
 * is not multicast, a detach of a QP not attached, groups and QPs beyond
 * the limits, a frame to a group nobody joined (not claimed) or to another
 * QPN. Groups survive a save and load.
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"
#include "rnic-state.h"
#include "rnic-wire.h"

#define QKEY 0x1111

typedef struct Mc {
    TestHost *h;
    uint32_t ctx, pd, mr;
    uint64_t buf;
    TvCq *cq[3];
    TvQp *qp[3];                /* qp[0] sends; 1 and 2 join */
} Mc;

/* ::ffff:224.1.2.3 (RDMA-CM's GID of 224.1.2.3) and ff0e::1:2 */
static const uint8_t group4[16] = {
    [10] = 0xff, [11] = 0xff, [12] = 224, [13] = 1, [14] = 2, [15] = 3,
};
static const uint8_t group6[16] = {
    0xff, 0x0e, [13] = 1, [15] = 2,
};

static void mc_init(Mc *m, const RnicEngineConfig *cfg)
{
    int i;

    m->h = test_host_new(cfg);
    tv_enable(m->h, 6);
    m->ctx = tv_net_ctx(m->h, 0);
    tv_gid(m->h, 0, m->ctx, 1);
    m->pd = tv_pd(m->h, m->ctx, 0);
    for (i = 0; i < 3; i++) {
        m->cq[i] = tv_cq(m->h, 6, RNIC_HANDLE_NONE, 0);
        m->qp[i] = tv_qp(m->h, RNIC_QPT_UD, m->pd, m->cq[i], m->cq[i], NULL,
                         4, 0);
        tv_ud_ready(m->h, m->qp[i], QKEY);
    }
    m->buf = test_alloc(m->h, 65536, 4096);
    m->mr = tv_reg_mr(m->h, m->pd, m->buf, 65536, TV_ACCESS_ALL, 0, NULL);
}

static void mc_fini(Mc *m)
{
    int i;

    for (i = 0; i < 3; i++) {
        g_free(m->cq[i]);
        g_free(m->qp[i]);
    }
    test_host_free(m->h);
}

static uint8_t mc_cmd(Mc *m, uint8_t op, const uint8_t gid[16], uint32_t qp)
{
    struct rnic_admin_cmd c = { .opcode = op };

    memcpy(c.mcast.gid, gid, 16);
    c.mcast.qp = qp;
    return tv_cmd(m->h, &c).status;
}

/* A receive of 256 bytes at buf + 4096 * (1 + i) on qp[i]. */
static void mc_recv(Mc *m, int i)
{
    struct rnic_sge r = tv_sge(m->buf + 4096 * (1 + i), 256, m->mr);

    tv_post_recv(m->h, m->qp[i], 10 + i, &r, 1);
}

/* qp[0] sends 100 bytes to 'group' (QPN 0xffffff unless 'qpn'). */
static void mc_send(Mc *m, const uint8_t group[16], uint32_t qpn)
{
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 1);
    struct rnic_sge s = tv_sge(m->buf, 100, m->mr);

    w.ud.remote_qpn = qpn;
    w.ud.remote_qkey = QKEY;
    memcpy(w.ud.av.dgid, group, 16);
    /* the group's Ethernet address: what the kernel's AV resolution gives */
    if (group[0] == 0xff) {
        static const uint8_t mac6[6] = { 0x33, 0x33, 0, 1, 0, 2 };

        memcpy(w.ud.av.dmac, mac6, 6);
    } else {
        static const uint8_t mac4[6] = { 0x01, 0x00, 0x5e, 1, 2, 3 };

        memcpy(w.ud.av.dmac, mac4, 6);
    }
    tv_post_send(m->h, m->qp[0], &w, &s, NULL);
    tv_expect_cqe(m->h, m->cq[0], 1, RNIC_WC_SEND, RNIC_WC_SUCCESS);
}

/* qp[i] received the 100 bytes (after the 40 of the GRH). */
static void mc_expect(Mc *m, int i)
{
    struct rnic_cqe c = tv_poll_one(m->h, m->cq[i]);

    g_assert_cmpuint(c.wr_id, ==, 10 + i);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c.byte_len, ==, 140);
    g_assert_cmpuint(c.src_qp, ==, m->qp[0]->qpn);
    g_assert_cmpmem(test_ptr(m->h, m->buf + 4096 * (1 + i) + 40), 100,
                    test_ptr(m->h, m->buf), 100);
}

static void test_loopback_and_wire(void)
{
    Mc m;
    GPtrArray *frames;
    GByteArray *f;
    struct iovec iov;
    int i;

    mc_init(&m, NULL);
    g_assert_true(test_reg_read(m.h, RNIC_REG_CAPS_LO) & RNIC_CAP_MCAST);
    tv_fill(m.h, m.buf, 100, 4);
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_ATTACH_MCAST, group4,
                            m.qp[1]->handle), ==, RNIC_ST_OK);
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_ATTACH_MCAST, group4,
                            m.qp[2]->handle), ==, RNIC_ST_OK);
    /* attaching twice is attaching once */
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_ATTACH_MCAST, group4,
                            m.qp[2]->handle), ==, RNIC_ST_OK);
    for (i = 1; i < 3; i++) {
        mc_recv(&m, i);
    }
    frames = test_host_take_frames(m.h);
    if (frames) {
        g_ptr_array_unref(frames);
    }
    mc_send(&m, group4, RNIC_ROCE_MULTICAST_QPN);
    mc_expect(&m, 1);
    mc_expect(&m, 2);
    /* and one frame to the wire, to the group's MAC and address */
    frames = test_host_take_frames(m.h);
    g_assert_nonnull(frames);
    g_assert_cmpuint(frames->len, ==, 1);
    f = g_byte_array_ref(g_ptr_array_index(frames, 0));
    g_ptr_array_unref(frames);
    g_assert_cmphex(f->data[0], ==, 0x01);
    g_assert_cmphex(f->data[2], ==, 0x5e);
    g_assert_cmpuint(f->data[14 + 16], ==, 224);

    /* from the wire: to the group's QPs again, detached ones not */
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_DETACH_MCAST, group4,
                            m.qp[2]->handle), ==, RNIC_ST_OK);
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_DETACH_MCAST, group4,
                            m.qp[2]->handle), ==, RNIC_ST_BAD_HANDLE);
    mc_recv(&m, 1);
    mc_recv(&m, 2);
    iov.iov_base = f->data;
    iov.iov_len = f->len;
    g_assert_true(rnic_engine_receive(m.h->engine, &iov, 1));
    mc_expect(&m, 1);
    tv_expect_no_cqe(m.h, m.cq[2]);
    /* the last QP gone: the frame is no longer the device's */
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_DETACH_MCAST, group4,
                            m.qp[1]->handle), ==, RNIC_ST_OK);
    g_assert_false(rnic_wire_rx_claim(m.h->engine, &iov, 1, f->len, f->data,
                                      f->len));
    g_byte_array_unref(f);
    mc_fini(&m);
}

static void test_ipv6_group(void)
{
    Mc m;

    mc_init(&m, NULL);
    tv_fill(m.h, m.buf, 100, 6);
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_ATTACH_MCAST, group6,
                            m.qp[1]->handle), ==, RNIC_ST_OK);
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_ATTACH_MCAST, group4,
                            m.qp[2]->handle), ==, RNIC_ST_OK);
    mc_recv(&m, 1);
    mc_recv(&m, 2);
    mc_send(&m, group6, RNIC_ROCE_MULTICAST_QPN);
    mc_expect(&m, 1);
    tv_expect_no_cqe(m.h, m.cq[2]);
    /* a send to the group with another QPN reaches nobody here */
    mc_send(&m, group6, m.qp[1]->qpn);
    tv_expect_no_cqe(m.h, m.cq[1]);
    /* a destroyed QP leaves its groups */
    {
        struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DESTROY_QP };

        c.destroy.handle = m.qp[1]->handle;
        tv_cmd_ok(m.h, &c);
    }
    g_assert_false(rnic_mcast_joined(m.h->engine, group6));
    g_assert_true(rnic_mcast_joined(m.h->engine, group4));
    mc_fini(&m);
}

static void test_bad_input(void)
{
    static const uint8_t unicast[16] = {
        [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 1,
    };
    Mc m;
    TvQp *rc;
    uint8_t g[16];
    unsigned errors;
    int i;

    mc_init(&m, NULL);
    rc = tv_qp(m.h, RNIC_QPT_RC, m.pd, m.cq[0], m.cq[0], NULL, 4, 0);
    errors = m.h->guest_errors;
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_ATTACH_MCAST, group4, rc->handle),
                     ==, RNIC_ST_BAD_PARAM);
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_ATTACH_MCAST, unicast,
                            m.qp[1]->handle), ==, RNIC_ST_BAD_PARAM);
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_ATTACH_MCAST, group4, 9999), ==,
                     RNIC_ST_BAD_HANDLE);
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_DETACH_MCAST, group4,
                            m.qp[1]->handle), ==, RNIC_ST_BAD_HANDLE);
    g_assert_cmpuint(m.h->guest_errors, >=, errors + 3);
    /* every group, then one more */
    memcpy(g, group6, 16);
    for (i = 0; i < RNIC_MCAST_GROUPS; i++) {
        g[15] = i;
        g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_ATTACH_MCAST, g,
                                m.qp[1]->handle), ==, RNIC_ST_OK);
    }
    g[15] = 0xfe;
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_ATTACH_MCAST, g, m.qp[1]->handle),
                     ==, RNIC_ST_NO_RESOURCES);
    /* a group (group6 is one of them: qp[1]) to its last QP, one more */
    {
        TvQp *more[RNIC_MCAST_QPS];

        for (i = 0; i < RNIC_MCAST_QPS; i++) {
            more[i] = tv_qp(m.h, RNIC_QPT_UD, m.pd, m.cq[0], m.cq[0], NULL,
                            2, 0);
            g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_ATTACH_MCAST, group6,
                                    more[i]->handle), ==,
                             i < RNIC_MCAST_QPS - 1 ? RNIC_ST_OK :
                                                      RNIC_ST_NO_RESOURCES);
        }
        for (i = 0; i < RNIC_MCAST_QPS; i++) {
            g_free(more[i]);
        }
    }
    g_free(rc);
    mc_fini(&m);
}

static void test_migration(void)
{
    Mc m;
    TestHost *dst;
    GByteArray *img = g_byte_array_new();
    GString *text = g_string_new(NULL);
    char *err = NULL;

    mc_init(&m, NULL);
    tv_fill(m.h, m.buf, 100, 8);
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_ATTACH_MCAST, group4,
                            m.qp[1]->handle), ==, RNIC_ST_OK);
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_ATTACH_MCAST, group4,
                            m.qp[2]->handle), ==, RNIC_ST_OK);
    rnic_engine_save(m.h->engine, img);
    g_assert_true(rnic_state_dump(img->data, img->len, text));
    g_assert_nonnull(strstr(text->str, "mcast[0].nqps = 2"));
    g_string_free(text, TRUE);
    dst = test_host_new(NULL);
    test_host_copy_guest(dst, m.h);
    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_byte_array_unref(img);
    test_host_free(m.h);
    m.h = dst;
    mc_recv(&m, 1);
    mc_recv(&m, 2);
    mc_send(&m, group4, RNIC_ROCE_MULTICAST_QPN);
    mc_expect(&m, 1);
    mc_expect(&m, 2);
    mc_fini(&m);
}

/* A UD QP of a multi-network PD serves every context: its groups too. */
static void test_multi_network_qp(void)
{
    Mc m;
    uint32_t mpd, mmr;
    TvCq *cq;
    TvQp *qp;
    struct rnic_sge r;
    struct rnic_cqe c;

    mc_init(&m, NULL);
    tv_fill(m.h, m.buf, 100, 9);
    mpd = tv_pd(m.h, RNIC_PD_MULTI_NET, 0);
    mmr = tv_reg_mr(m.h, mpd, m.buf + 32768, 4096, TV_ACCESS_ALL, 0, NULL);
    cq = tv_cq(m.h, 6, RNIC_HANDLE_NONE, 0);
    qp = tv_qp(m.h, RNIC_QPT_UD, mpd, cq, cq, NULL, 4, 0);
    tv_ud_ready(m.h, qp, QKEY);
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_ATTACH_MCAST, group4, qp->handle),
                     ==, RNIC_ST_OK);
    r = tv_sge(m.buf + 32768, 256, mmr);
    tv_post_recv(m.h, qp, 20, &r, 1);
    mc_send(&m, group4, RNIC_ROCE_MULTICAST_QPN);
    c = tv_poll_one(m.h, cq);
    g_assert_cmpuint(c.wr_id, ==, 20);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c.byte_len, ==, 140);
    g_assert_cmpmem(test_ptr(m.h, m.buf + 32768 + 40), 100,
                    test_ptr(m.h, m.buf), 100);
    g_assert_cmpuint(mc_cmd(&m, RNIC_CMD_DETACH_MCAST, group4, qp->handle),
                     ==, RNIC_ST_OK);
    g_free(qp);
    g_free(cq);
    mc_fini(&m);
}

/*
 * A user context's share of the groups (issue 40, G6): rnic-mcast.c's
 * RNIC_MCAST_UCTX_GROUPS, a quarter of the device's.
 */
#define SHARE (RNIC_MCAST_GROUPS / 4)

/* A UD QP of a user context (its own PD and CQ), ready. */
typedef struct McUser {
    uint32_t uctx, pd;
    TvCq *cq;
    TvQp *qp[2];
} McUser;

static void mc_user(Mc *m, McUser *u)
{
    int i;

    u->uctx = tv_uctx(m->h);
    u->pd = tv_pd(m->h, m->ctx, u->uctx);
    u->cq = tv_cq(m->h, 6, RNIC_HANDLE_NONE, u->uctx);
    for (i = 0; i < 2; i++) {
        u->qp[i] = tv_qp(m->h, RNIC_QPT_UD, u->pd, u->cq, u->cq, NULL, 4,
                         u->uctx);
        tv_ud_ready(m->h, u->qp[i], QKEY);
    }
}

static void mc_user_free(McUser *u)
{
    g_free(u->qp[0]);
    g_free(u->qp[1]);
    g_free(u->cq);
}

/* ATTACH_MCAST / DETACH_MCAST of a QP of user context 'u' to group n. */
static uint8_t mc_ucmd(Mc *m, uint8_t op, const McUser *u, int qp, int n)
{
    struct rnic_admin_cmd c = { .opcode = op, .uctx = u->uctx };

    memcpy(c.mcast.gid, group6, 16);
    c.mcast.gid[14] = n >> 8;
    c.mcast.gid[15] = n;
    c.mcast.qp = u->qp[qp]->handle;
    return tv_cmd(m->h, &c).status;
}

static uint8_t mc_kcmd(Mc *m, uint8_t op, int qp, int n)
{
    uint8_t g[16];

    memcpy(g, group6, 16);
    g[14] = n >> 8;
    g[15] = n;
    return mc_cmd(m, op, g, m->qp[qp]->handle);
}

/* The last event logged names the share. */
static void assert_share_message(Mc *m)
{
    const char *msg = g_ptr_array_index(m->h->log, m->h->log->len - 1);
    g_autofree char *want = g_strdup_printf("at most %u of the %u groups",
                                            SHARE, RNIC_MCAST_GROUPS);

    g_assert_nonnull(strstr(msg, "ATTACH_MCAST"));
    g_assert_nonnull(strstr(msg, want));
}

/*
 * Context A makes its share of groups (0x100..); its next new group is
 * NO_RESOURCES, naming the share, while joining a group B made is free
 * and B and the kernel can still make groups (the kernel more than a
 * share). A group stays A's while A has a QP in it; after A leaves one
 * (detach, or its QP destroyed) it can make one again.
 */
static void test_user_share(void)
{
    Mc m;
    McUser a, b;
    int i;

    mc_init(&m, NULL);
    mc_user(&m, &a);
    mc_user(&m, &b);
    for (i = 0; i < SHARE; i++) {
        g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 0, 0x100 + i),
                         ==, RNIC_ST_OK);
    }
    /* A's other QP joins A's groups: nothing new */
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 1, 0x100), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 1, 0x1ff), ==,
                     RNIC_ST_NO_RESOURCES);
    assert_share_message(&m);
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 0, 0x1ff), ==,
                     RNIC_ST_NO_RESOURCES);
    g_assert_false(rnic_mcast_joined(m.h->engine, (uint8_t[16]){
        0xff, 0x0e, [13] = 1, [14] = 1, [15] = 0xff }));
    /* B makes groups; A joins one of them at no cost */
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &b, 0, 0x200), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 0, 0x200), ==,
                     RNIC_ST_OK);
    for (i = 1; i < SHARE; i++) {
        g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &b, 0,
                                 0x200 + i), ==, RNIC_ST_OK);
    }
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &b, 0, 0x2ff), ==,
                     RNIC_ST_NO_RESOURCES);
    /* the kernel has no share: it takes every group left */
    for (i = 0; i < RNIC_MCAST_GROUPS - 2 * SHARE; i++) {
        g_assert_cmpuint(mc_kcmd(&m, RNIC_CMD_ATTACH_MCAST, 1, 0x300 + i), ==,
                         RNIC_ST_OK);
    }
    g_assert_cmpuint(mc_kcmd(&m, RNIC_CMD_ATTACH_MCAST, 1, 0x3ff), ==,
                     RNIC_ST_NO_RESOURCES);
    /* the kernel leaves one: B is at its share, A too */
    g_assert_cmpuint(mc_kcmd(&m, RNIC_CMD_DETACH_MCAST, 1, 0x300), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &b, 1, 0x2ff), ==,
                     RNIC_ST_NO_RESOURCES);
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 0, 0x1ff), ==,
                     RNIC_ST_NO_RESOURCES);
    /* A's first QP leaves 0x100; its other QP keeps it A's */
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_DETACH_MCAST, &a, 0, 0x100), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 0, 0x1ff), ==,
                     RNIC_ST_NO_RESOURCES);
    /* A leaves 0x101: one of its own again */
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_DETACH_MCAST, &a, 0, 0x101), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 0, 0x1ff), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 0, 0x1fe), ==,
                     RNIC_ST_NO_RESOURCES);
    /* A's QP 1 destroyed: 0x100 is free, so is a share */
    {
        struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DESTROY_QP,
                                    .uctx = a.uctx };

        c.destroy.handle = a.qp[1]->handle;
        tv_cmd_ok(m.h, &c);
    }
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 0, 0x1fe), ==,
                     RNIC_ST_OK);
    mc_user_free(&a);
    mc_user_free(&b);
    mc_fini(&m);
}

/*
 * The shares survive a save and load (image section 15 unchanged: a
 * group's QPs in order, the first naming who holds it): A at its share
 * with a group of B's joined is at its share after the load, B's group
 * still B's; a detach then makes room as before.
 */
static void test_user_share_migration(void)
{
    Mc m;
    McUser a, b;
    TestHost *dst;
    GByteArray *img = g_byte_array_new();
    char *err = NULL;
    int i;

    mc_init(&m, NULL);
    mc_user(&m, &a);
    mc_user(&m, &b);
    /* B's group first, A joins (B's: the first QP is B's); A's share */
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &b, 0, 0x200), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 0, 0x200), ==,
                     RNIC_ST_OK);
    for (i = 0; i < SHARE; i++) {
        g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 0, 0x100 + i),
                         ==, RNIC_ST_OK);
    }
    rnic_engine_save(m.h->engine, img);
    dst = test_host_new(NULL);
    test_host_copy_guest(dst, m.h);
    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_null(err);
    g_byte_array_unref(img);
    test_host_free(m.h);
    m.h = dst;

    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 0, 0x1ff), ==,
                     RNIC_ST_NO_RESOURCES);
    assert_share_message(&m);
    /* B holds one: SHARE - 1 more */
    for (i = 1; i < SHARE; i++) {
        g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &b, 1, 0x200 + i),
                         ==, RNIC_ST_OK);
    }
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &b, 1, 0x2ff), ==,
                     RNIC_ST_NO_RESOURCES);
    /* A leaves one of its groups: room for one */
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_DETACH_MCAST, &a, 0, 0x105), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 0, 0x1ff), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(mc_ucmd(&m, RNIC_CMD_ATTACH_MCAST, &a, 1, 0x1fe), ==,
                     RNIC_ST_NO_RESOURCES);
    mc_user_free(&a);
    mc_user_free(&b);
    mc_fini(&m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/mcast/loopback-and-wire", test_loopback_and_wire);
    g_test_add_func("/rnic/mcast/ipv6-group", test_ipv6_group);
    g_test_add_func("/rnic/mcast/multi-network-qp", test_multi_network_qp);
    g_test_add_func("/rnic/mcast/bad-input", test_bad_input);
    g_test_add_func("/rnic/mcast/migration", test_migration);
    g_test_add_func("/rnic/mcast/user-share", test_user_share);
    g_test_add_func("/rnic/mcast/user-share-migration",
                    test_user_share_migration);
    return g_test_run();
}
