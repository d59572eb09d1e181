/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: migration with traffic in flight between two engines
 * wired back to back (RnicEngine.wire_tap on both sides, a network the test
 * controls). Engine A is saved in the middle of a READ whose responses are
 * partly in, a multi-packet SEND partly received by B, a WRITE from B
 * partly placed in A and an atomic A has executed but whose answer is still
 * on the wire; the switchover loses every frame in flight. A' (a new
 * engine with A's RAM) must finish everything exactly once and B must see
 * no error. Also: the configuration check, the rebuild messages, the text
 * view of the tables, a load that must schedule a run.
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"

/* ---------------------------------------------------------------------- */
/* Two engines and a network between them                                 */
/* ---------------------------------------------------------------------- */

typedef struct Frame {
    int from, to;               /* side 0 (A) or 1 (B) */
    RnicPacket pkt;
    uint8_t data[4096];
} Frame;

typedef struct Side {
    struct Net *net;
    int side;
} Side;

typedef struct Net {
    TestHost *host[2];
    Side sides[2];
    GQueue *q;                  /* of Frame, in flight */
    unsigned sent[2];           /* frames each side put on the wire */
} Net;

static void net_tap(void *opaque, const RnicPacket *pkt)
{
    Side *s = opaque;
    Frame *f = g_new0(Frame, 1);

    f->from = s->side;
    f->to = !s->side;
    f->pkt = *pkt;
    g_assert_cmpuint(pkt->payload.len, <=, sizeof(f->data));
    g_assert_true(rnic_packet_payload_gather(s->net->host[s->side]->engine,
                                             pkt, f->data));
    f->pkt.payload.data = f->data;
    f->pkt.payload.segs = NULL;
    f->pkt.payload.nsegs = 0;
    g_queue_push_tail(s->net->q, f);
    s->net->sent[s->side]++;
}

static void net_attach(Net *n, int side, TestHost *h)
{
    n->host[side] = h;
    n->sides[side].net = n;
    n->sides[side].side = side;
    h->engine->wire_tap = net_tap;
    h->engine->wire_tap_opaque = &n->sides[side];
}

/* Deliver up to 'max' frames in order (all: -1); returns the count. */
static int net_deliver(Net *n, int max)
{
    int done = 0;

    while ((max < 0 || done < max) && !g_queue_is_empty(n->q)) {
        Frame *f = g_queue_pop_head(n->q);
        TestHost *h = n->host[f->to];

        rnic_rx(h->engine, rnic_netctx_lookup(h->engine, f->pkt.net.net_ctx),
                &f->pkt);
        test_host_run(h);
        g_free(f);
        done++;
    }
    return done;
}

/* Deliver the next frame only if it goes to 'to'. */
static bool net_deliver_one_to(Net *n, int to)
{
    Frame *f = g_queue_peek_head(n->q);

    if (!f || f->to != to) {
        return false;
    }
    return net_deliver(n, 1) == 1;
}

/* Drop every frame in flight (the switchover); returns the count. */
static unsigned net_drop_all(Net *n)
{
    unsigned k = g_queue_get_length(n->q);

    g_queue_free_full(n->q, g_free);
    n->q = g_queue_new();
    return k;
}

/* Both clocks on, every frame delivered, until nothing moves. */
static void net_settle(Net *n, uint64_t step_ns, int rounds)
{
    int i;

    for (i = 0; i < rounds; i++) {
        net_deliver(n, -1);
        test_host_advance(n->host[0], step_ns);
        test_host_advance(n->host[1], step_ns);
    }
    net_deliver(n, -1);
}

/* One side: a context, a GID, a PD, a CQ, an RC QP, a registered buffer. */
typedef struct End {
    TestHost *h;
    uint32_t ctx, pd, mr;
    TvCq *cq;
    TvQp *qp;
    uint64_t buf;
} End;

#define END_BUF (256 * 1024)

static void end_init(End *e, uint8_t host)
{
    memset(e, 0, sizeof(*e));
    e->h = test_host_new(NULL);
    tv_enable(e->h, 6);
    e->ctx = tv_net_ctx(e->h, 0);
    tv_gid(e->h, 0, e->ctx, host);
    e->pd = tv_pd(e->h, e->ctx, 0);
    e->cq = tv_cq(e->h, 8, RNIC_HANDLE_NONE, 0);
    e->qp = tv_qp(e->h, RNIC_QPT_RC, e->pd, e->cq, e->cq, NULL, 6, 0);
    e->buf = test_alloc(e->h, END_BUF, 4096);
    e->mr = tv_reg_mr(e->h, e->pd, e->buf, END_BUF, TV_ACCESS_ALL, 0, NULL);
}

static void end_connect(End *e, const End *peer, uint8_t peer_host)
{
    uint8_t gid[16];

    tv_gid_bytes(gid, peer->ctx, peer_host);
    tv_rc_connect(e->h, e->qp, 0, gid, peer->qp->qpn);
}

/* A (host 1, side 0) and B (host 2, side 1) connected on network n. */
static void ends_connected(Net *n, End *a, End *b)
{
    end_init(a, 1);
    end_init(b, 2);
    end_connect(a, b, 2);
    end_connect(b, a, 1);
    net_attach(n, 0, a->h);
    net_attach(n, 1, b->h);
}

static void end_fini(End *e)
{
    if (e->h) {
        test_host_free(e->h);
    }
    g_free(e->cq);
    g_free(e->qp);
}

static void pattern(TestHost *h, uint64_t addr, size_t len, uint8_t seed)
{
    uint8_t *p = test_ptr(h, addr);
    size_t i;

    for (i = 0; i < len; i++) {
        p[i] = seed + i * 31 + (i >> 10);
    }
}

/*
 * Migrate side 0 of the network: save, a new engine loads it on a copy of
 * the RAM (QEMU migrates RAM separately), the old one is gone.
 */
static void migrate_side0(Net *n, End *a)
{
    TestHost *src = a->h;
    TestHost *dst = test_host_new(NULL);
    GByteArray *img = g_byte_array_new();
    char *err = NULL;

    rnic_engine_save(src->engine, img);
    test_host_copy_guest(dst, src);
    dst->now_ns = src->now_ns + 123456789;      /* another host's clock */
    net_attach(n, 0, dst);
    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_null(err);
    g_byte_array_unref(img);
    test_host_free(src);
    a->h = dst;
}

/* ---------------------------------------------------------------------- */

static void test_in_flight(void)
{
    const uint32_t send_len = 10 * 1024, write_len = 5 * 1024;
    const uint32_t read_len = 8 * 1024;
    Net n = { .q = g_queue_new() };
    End a, b;
    struct rnic_sq_wqe w;
    struct rnic_sge s, r;
    struct rnic_cqe c[16];
    RnicQp *qa, *qb;
    uint64_t counter;
    unsigned sent, dropped;
    int i, got;

    ends_connected(&n, &a, &b);

    /* 1. A reads 8 KiB from B: the request in, 3 of 8 responses back */
    pattern(b.h, b.buf + 100000, read_len, 1);
    s = tv_sge(a.buf + 100000, read_len, a.mr);
    w = tv_wqe(1, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = b.buf + 100000;
    w.rdma.rkey = b.mr;
    tv_post_send(a.h, a.qp, &w, &s, NULL);
    g_assert_true(net_deliver_one_to(&n, 1));
    g_assert_cmpuint(g_queue_get_length(n.q), ==, 8);
    for (i = 0; i < 3; i++) {
        g_assert_true(net_deliver_one_to(&n, 0));
    }
    /* the other five responses are lost in the switchover */

    /* 2. A sends 10 KiB to B: 4 of 10 packets arrive */
    r = tv_sge(b.buf, send_len, b.mr);
    tv_post_recv(b.h, b.qp, 10, &r, 1);
    pattern(a.h, a.buf, send_len, 2);
    s = tv_sge(a.buf, send_len, a.mr);
    w = tv_wqe(2, RNIC_WR_SEND, 1);
    tv_post_send(a.h, a.qp, &w, &s, NULL);
    /* the five READ responses are still ahead in the queue: move them */
    for (i = 0; i < 5; i++) {
        Frame *f = g_queue_pop_head(n.q);

        g_assert_cmpint(f->to, ==, 0);
        g_queue_push_tail(n.q, f);
    }
    for (i = 0; i < 4; i++) {
        g_assert_true(net_deliver_one_to(&n, 1));
    }
    qb = rnic_qp_lookup(b.h->engine, b.qp->handle);
    g_assert_cmpuint(qb->resp.in_msg, ==, RNIC_RESP_SEND);

    /*
     * 3. B fetch-adds a counter of A, which A executes but whose answer
     * never reaches B, then writes 5 KiB into A of which 2 packets land
     */
    counter = a.buf + 200000;
    *(uint64_t *)test_ptr(a.h, counter) = GUINT64_TO_LE(1000);
    s = tv_sge(b.buf + 200000, 8, b.mr);
    w = tv_wqe(21, RNIC_WR_ATOMIC_FETCH_ADD, 1);
    w.atomic.remote_addr = counter;
    w.atomic.rkey = a.mr;
    w.atomic.compare_add = 7;
    tv_post_send(b.h, b.qp, &w, &s, NULL);
    pattern(b.h, b.buf + 50000, write_len, 3);
    s = tv_sge(b.buf + 50000, write_len, b.mr);
    w = tv_wqe(20, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = a.buf + 50000;
    w.rdma.rkey = a.mr;
    tv_post_send(b.h, b.qp, &w, &s, NULL);
    {
        /*
         * B's first three requests reach A; everything else (the READ
         * responses from B included) stays queued
         */
        GQueue *keep = g_queue_new();
        Frame *f;
        int from_b = 0;

        while ((f = g_queue_pop_head(n.q))) {
            uint8_t op = f->pkt.opcode;
            bool response = op >= RNIC_ROCE_RC_RDMA_READ_RESPONSE_FIRST &&
                            op <= RNIC_ROCE_RC_ATOMIC_ACKNOWLEDGE;

            if (f->from == 1 && !response && from_b < 3) {
                TestHost *h = n.host[0];

                from_b++;
                rnic_rx(h->engine, rnic_netctx_lookup(h->engine, 0),
                        &f->pkt);
                test_host_run(h);
                g_free(f);
                continue;
            }
            g_queue_push_tail(keep, f);
        }
        g_assert_cmpint(from_b, ==, 3);
        g_queue_free(n.q);
        n.q = keep;
    }
    qa = rnic_qp_lookup(a.h->engine, a.qp->handle);
    g_assert_cmpuint(qa->resp.in_msg, ==, RNIC_RESP_WRITE);
    g_assert_cmpuint(qa->resp.w_done, ==, 2048);
    g_assert_cmpuint(GUINT64_FROM_LE(*(uint64_t *)test_ptr(a.h, counter)), ==,
                     1007);
    g_assert_cmpuint(qa->timer_kind, ==, RNIC_TIMER_RETRANSMIT);
    g_assert_cmpuint(tv_poll(a.h, a.cq, c, 16), ==, 0);
    g_assert_cmpuint(tv_poll(b.h, b.cq, c, 16), ==, 0);

    /* the switchover: A stops, everything on the wire is lost */
    dropped = net_drop_all(&n);
    g_assert_cmpuint(dropped, >=, 5 + 6 + 3 + 1);
    migrate_side0(&n, &a);
    qa = rnic_qp_lookup(a.h->engine, a.qp->handle);
    g_assert_cmpuint(qa->resp.in_msg, ==, RNIC_RESP_WRITE);
    g_assert_cmpuint(qa->timer_kind, ==, RNIC_TIMER_RETRANSMIT);

    /* A' retransmits at its first run, without waiting for its timer */
    sent = n.sent[0];
    test_host_run(a.h);
    g_assert_cmpuint(n.sent[0], >, sent);
    g_assert_cmpuint(rnic_engine_stat(a.h->engine, RNIC_STAT_RETRANSMITS), >=,
                     1);

    /* B's requests come back by B's own retransmission timer */
    net_settle(&n, 10 * 1000 * 1000, 40);

    /* A: the READ and the SEND, once each, data intact */
    got = tv_poll(a.h, a.cq, c, 16);
    g_assert_cmpint(got, ==, 2);
    g_assert_cmpuint(c[0].wr_id, ==, 1);
    g_assert_cmpuint(c[0].status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c[1].wr_id, ==, 2);
    g_assert_cmpuint(c[1].status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpmem(test_ptr(a.h, a.buf + 100000), read_len,
                    test_ptr(b.h, b.buf + 100000), read_len);
    /* B: one receive; the atomic, then the WRITE (send-queue order) */
    got = tv_poll(b.h, b.cq, c, 16);
    g_assert_cmpint(got, ==, 3);
    {
        int recv = -1, fadd = -1, write = -1;

        for (i = 0; i < got; i++) {
            g_assert_cmpuint(c[i].status, ==, RNIC_WC_SUCCESS);
            if (c[i].wr_id == 10) {
                g_assert_cmpint(recv, ==, -1);
                recv = i;
                g_assert_cmpuint(c[i].byte_len, ==, send_len);
            } else if (c[i].wr_id == 21) {
                fadd = i;
            } else {
                g_assert_cmpuint(c[i].wr_id, ==, 20);
                write = i;
            }
        }
        g_assert_cmpint(recv, >=, 0);
        g_assert_cmpint(fadd, >=, 0);
        g_assert_cmpint(write, >, fadd);
    }
    g_assert_cmpmem(test_ptr(b.h, b.buf), send_len,
                    test_ptr(a.h, a.buf), send_len);
    g_assert_cmpmem(test_ptr(a.h, a.buf + 50000), write_len,
                    test_ptr(b.h, b.buf + 50000), write_len);
    /* the atomic ran once: A' answered B's retry from its saved result */
    g_assert_cmpuint(GUINT64_FROM_LE(*(uint64_t *)test_ptr(a.h, counter)), ==,
                     1007);
    g_assert_cmpuint(GUINT64_FROM_LE(*(uint64_t *)test_ptr(b.h,
                                                           b.buf + 200000)),
                     ==, 1000);
    /* nobody went to error; the QPs go on */
    qa = rnic_qp_lookup(a.h->engine, a.qp->handle);
    qb = rnic_qp_lookup(b.h->engine, b.qp->handle);
    g_assert_cmpuint(qa->state, ==, RNIC_QPS_RTS);
    g_assert_cmpuint(qb->state, ==, RNIC_QPS_RTS);
    g_assert_cmpuint(qa->sq_una, ==, qa->sq_prod);
    g_assert_cmpuint(qb->sq_una, ==, qb->sq_prod);
    r = tv_sge(b.buf + 150000, 100, b.mr);
    tv_post_recv(b.h, b.qp, 11, &r, 1);
    s = tv_sge(a.buf + 150000, 100, a.mr);
    w = tv_wqe(3, RNIC_WR_SEND, 1);
    tv_post_send(a.h, a.qp, &w, &s, NULL);
    net_settle(&n, 1000, 3);
    g_assert_cmpuint(tv_poll_one(a.h, a.cq).wr_id, ==, 3);
    g_assert_cmpuint(tv_poll_one(b.h, b.cq).wr_id, ==, 11);

    g_queue_free_full(n.q, g_free);
    end_fini(&a);
    end_fini(&b);
}

/*
 * The same with no loss: A' retransmits what B already has; B answers the
 * duplicates and completes nothing twice.
 */
static void test_in_flight_duplicates(void)
{
    Net n = { .q = g_queue_new() };
    End a, b;
    struct rnic_sq_wqe w;
    struct rnic_sge s, r;
    struct rnic_cqe c[8];
    int i;

    ends_connected(&n, &a, &b);
    for (i = 0; i < 3; i++) {
        r = tv_sge(b.buf + 4096 * i, 4096, b.mr);
        tv_post_recv(b.h, b.qp, 10 + i, &r, 1);
        pattern(a.h, a.buf + 4096 * i, 3000, 9 + i);
        s = tv_sge(a.buf + 4096 * i, 3000, a.mr);
        w = tv_wqe(i, RNIC_WR_SEND, 1);
        tv_post_send(a.h, a.qp, &w, &s, NULL);
    }
    /* every SEND reaches B, the ACKs are on their way back */
    while (net_deliver_one_to(&n, 1)) {
        continue;
    }
    g_assert_cmpint(tv_poll(b.h, b.cq, c, 8), ==, 3);
    migrate_side0(&n, &a);      /* the ACKs now go to A' */
    net_settle(&n, 1000 * 1000, 10);
    g_assert_cmpint(tv_poll(a.h, a.cq, c, 8), ==, 3);
    for (i = 0; i < 3; i++) {
        g_assert_cmpuint(c[i].wr_id, ==, i);
        g_assert_cmpuint(c[i].status, ==, RNIC_WC_SUCCESS);
    }
    /* no second receive completion at B */
    g_assert_cmpint(tv_poll(b.h, b.cq, c, 8), ==, 0);
    g_queue_free_full(n.q, g_free);
    end_fini(&a);
    end_fini(&b);
}

/*
 * The peer is prompted on resume: B's WRITE is lost at the switchover (B
 * would resend it only when its ACK timer fires); A''s first run NAKs B at
 * its expected PSN and B resends at once: the WRITE completes with neither
 * clock moving. Then A' is migrated again with nothing outstanding on
 * either side: B ignores the NAK (no completion, no error) and the QP
 * carries traffic afterwards.
 */
static void test_prompt_peer(void)
{
    Net n = { .q = g_queue_new() };
    End a, b;
    struct rnic_sq_wqe w;
    struct rnic_sge s;
    struct rnic_cqe c[4];
    uint64_t retrans;
    int i;

    ends_connected(&n, &a, &b);
    for (i = 0; i < 2; i++) {
        pattern(b.h, b.buf + 8192 * i, 6000, 40 + i);
        s = tv_sge(b.buf + 8192 * i, 6000, b.mr);
        w = tv_wqe(30 + i, RNIC_WR_RDMA_WRITE, 1);
        w.rdma.remote_addr = a.buf + 100000 + 8192 * i;
        w.rdma.rkey = a.mr;
        tv_post_send(b.h, b.qp, &w, &s, NULL);
    }
    /* the WRITEs were on their way to A when it stopped */
    g_assert_cmpuint(net_drop_all(&n), >, 0);
    retrans = rnic_engine_stat(b.h->engine, RNIC_STAT_RETRANSMITS);
    migrate_side0(&n, &a);
    test_host_run(a.h);                 /* the VM runs: A' prompts B */
    g_assert_cmpuint(g_queue_get_length(n.q), ==, 1);
    for (i = 0; i < 10 && net_deliver(&n, -1); i++) {
        test_host_run(a.h);
        test_host_run(b.h);
    }
    g_assert_cmpint(tv_poll(b.h, b.cq, c, 4), ==, 2);
    for (i = 0; i < 2; i++) {
        g_assert_cmpuint(c[i].wr_id, ==, 30 + i);
        g_assert_cmpuint(c[i].status, ==, RNIC_WC_SUCCESS);
        g_assert_cmpmem(test_ptr(a.h, a.buf + 100000 + 8192 * i), 6000,
                        test_ptr(b.h, b.buf + 8192 * i), 6000);
    }
    g_assert_cmpuint(rnic_engine_stat(b.h->engine, RNIC_STAT_RETRANSMITS), >,
                     retrans);

    /* nothing outstanding: the prompt is harmless */
    migrate_side0(&n, &a);
    test_host_run(a.h);
    g_assert_cmpuint(g_queue_get_length(n.q), ==, 1);
    net_settle(&n, 1000 * 1000, 10);
    g_assert_cmpint(tv_poll(b.h, b.cq, c, 4), ==, 0);
    g_assert_cmpint(tv_poll(a.h, a.cq, c, 4), ==, 0);
    pattern(b.h, b.buf, 3000, 77);
    s = tv_sge(b.buf, 3000, b.mr);
    w = tv_wqe(40, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = a.buf;
    w.rdma.rkey = a.mr;
    tv_post_send(b.h, b.qp, &w, &s, NULL);
    net_settle(&n, 1000 * 1000, 10);
    c[0] = tv_poll_one(b.h, b.cq);
    g_assert_cmpuint(c[0].wr_id, ==, 40);
    g_assert_cmpuint(c[0].status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpmem(test_ptr(a.h, a.buf), 3000, test_ptr(b.h, b.buf), 3000);
    g_queue_free_full(n.q, g_free);
    end_fini(&a);
    end_fini(&b);
}

/* ---------------------------------------------------------------------- */
/* Rebuild, checks and messages                                           */
/* ---------------------------------------------------------------------- */

typedef struct CtxSeen {
    unsigned n;
    RnicNetCtxInfo info[4];
} CtxSeen;

static void collect_ctx(void *opaque, const RnicNetCtxInfo *info)
{
    CtxSeen *s = opaque;

    g_assert_cmpuint(s->n, <, G_N_ELEMENTS(s->info));
    s->info[s->n++] = *info;
}

/* The text view is the same before and after; the rebuild is counted. */
static void test_tables_and_rebuild(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *dst = test_host_new(NULL);
    GByteArray *img = g_byte_array_new();
    char *before, *after, *err = NULL;
    CtxSeen seen = { 0 };
    uint32_t ctx2, pd2, i;

    ctx2 = tv_net_ctx(p->d, 42);
    tv_gid(p->d, 3, ctx2, 7);
    pd2 = tv_pd(p->d, ctx2, 0);
    for (i = 0; i < 5; i++) {
        tv_reg_mr(p->d, pd2, p->bufa + 4096 * i, 4096, 0, 0, NULL);
    }
    before = rnic_engine_describe_tables(p->d->engine);
    g_assert_nonnull(strstr(before, "net ctx=1 vlan=42 mrs=5 qps=0\n"));
    g_assert_nonnull(strstr(before, "net ctx=0 vlan=0 mrs=2 qps=2\n"));
    g_assert_nonnull(strstr(before, " type=RC state=RTS "));
    rnic_engine_save(p->d->engine, img);
    memcpy(dst->ram, p->d->ram, p->d->ram_size);
    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    after = rnic_engine_describe_tables(dst->engine);
    g_assert_cmpstr(after, ==, before);
    rnic_engine_foreach_net_ctx(dst->engine, collect_ctx, &seen);
    g_assert_cmpuint(seen.n, ==, 2);
    g_assert_cmpuint(seen.info[0].mrs, ==, 2);
    g_assert_cmpuint(seen.info[0].log_replayed, ==, 2);
    g_assert_cmpuint(seen.info[0].qps, ==, 2);
    g_assert_cmpuint(seen.info[1].net_id, ==, 42);
    g_assert_cmpuint(seen.info[1].mrs, ==, 5);
    g_assert_cmpuint(seen.info[1].log_replayed, ==, 5);
    g_free(before);
    g_free(after);
    g_byte_array_unref(img);
    test_host_free(dst);
}

/* A destination with a smaller table refuses the image with a reason. */
static void test_does_not_fit(void)
{
    RnicEngineConfig cfg;
    TvPair *p;
    TestHost *dst;
    GByteArray *img = g_byte_array_new();
    char *err = NULL;
    uint32_t i;

    /* STag index space 4096 on both sides: only the entry count differs */
    rnic_engine_config_defaults(&cfg);
    cfg.max_mr = 1024;
    p = tv_pair_new(&cfg);
    for (i = 0; i < 6; i++) {
        tv_reg_mr(p->d, p->pd, p->bufa, 4096, 0, 0, NULL);
    }
    g_free(tv_qp(p->d, RNIC_QPT_RC, p->pd, p->cqa, p->cqa, NULL, 4, 0));
    rnic_engine_save(p->d->engine, img);
    cfg.max_mr = 4;
    dst = test_host_new(&cfg);
    g_assert_false(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_nonnull(strstr(err, "the mapping table of network context 0 "
                                 "is full (max-mrs=4)"));
    g_free(err);
    test_host_free(dst);
    /* three QPs (handles 0..2) where the destination has room for two */
    cfg.max_mr = 1024;
    cfg.max_qp = 2;
    dst = test_host_new(&cfg);
    g_assert_false(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_nonnull(strstr(err, "QP 2 does not fit this device "
                                 "(max-qps=2)"));
    g_free(err);
    test_host_free(dst);
    g_byte_array_unref(img);
    tv_pair_free(p);
}

static void test_config_check(void)
{
    TestHost *src = test_host_new(NULL);
    RnicEngineConfig cfg;
    GByteArray *rec = g_byte_array_new();
    TestHost *dst;
    char *err = NULL;
    size_t cut;

    rnic_engine_save_config(src->engine, rec);
    /* the same configuration, or larger limits: fine */
    dst = test_host_new(NULL);
    g_assert_true(rnic_engine_check_config(dst->engine, rec->data, rec->len,
                                           &err));
    g_assert_null(err);
    test_host_free(dst);
    rnic_engine_config_defaults(&cfg);
    cfg.max_qp *= 2;
    cfg.max_mr *= 2;
    dst = test_host_new(&cfg);
    g_assert_true(rnic_engine_check_config(dst->engine, rec->data, rec->len,
                                           &err));
    test_host_free(dst);
    /* a smaller limit: refused, naming the property */
    rnic_engine_config_defaults(&cfg);
    cfg.max_mr = 16;
    dst = test_host_new(&cfg);
    g_assert_false(rnic_engine_check_config(dst->engine, rec->data, rec->len,
                                            &err));
    g_assert_nonnull(strstr(err, "max-mrs=16 is below the source's 16384"));
    g_free(err);
    test_host_free(dst);
    /* a different PCI layout: refused even when larger */
    rnic_engine_config_defaults(&cfg);
    cfg.msix_vectors = 16;
    dst = test_host_new(&cfg);
    g_assert_false(rnic_engine_check_config(dst->engine, rec->data, rec->len,
                                            &err));
    g_assert_nonnull(strstr(err, "vectors is 16 here but 8 on the source"));
    g_free(err);
    /* damaged records */
    for (cut = 0; cut < rec->len; cut++) {
        g_assert_false(rnic_engine_check_config(dst->engine, rec->data, cut,
                                                &err));
        g_free(err);
    }
    test_host_free(dst);
    dst = test_host_new(NULL);
    {
        /* an item this device does not know, that must be checked */
        static const uint8_t unknown[] = { 0xee, 0x00, 0x00, 1, 0, 0, 0 };
        GByteArray *r2 = g_byte_array_new();

        g_byte_array_append(r2, rec->data, rec->len);
        g_byte_array_append(r2, unknown, sizeof(unknown));
        r2->data[8]++;          /* one more item */
        g_assert_false(rnic_engine_check_config(dst->engine, r2->data,
                                                r2->len, &err));
        g_assert_nonnull(strstr(err, "unknown to this device"));
        g_free(err);
        /* the same, informational: ignored */
        r2->data[r2->len - 5] = 2;
        g_assert_true(rnic_engine_check_config(dst->engine, r2->data,
                                               r2->len, &err));
        g_byte_array_unref(r2);
    }
    test_host_free(dst);
    g_byte_array_unref(rec);
    test_host_free(src);
}

/* Admin commands the source had not fetched run on the destination. */
static void test_pending_admin(void)
{
    TestHost *src = test_host_new(NULL);
    TestHost *dst = test_host_new(NULL);
    struct rnic_admin_cmd *slot;
    struct rnic_admin_cqe *cqe;
    GByteArray *img = g_byte_array_new();
    char *err = NULL;

    tv_enable(src, 4);
    slot = test_ptr(src, src->aq);
    memset(slot, 0, sizeof(*slot));
    slot->opcode = RNIC_CMD_NOP;
    slot->cmd_id = 0x55;
    /* the tail moves; the run it asks for never happens on the source */
    g_assert_cmpint(test_reg_write(src, RNIC_REG_AQ_TAIL, 1), ==, 0);
    g_assert_true(src->scheduled);
    rnic_engine_save(src->engine, img);
    memcpy(dst->ram, src->ram, src->ram_size);
    dst->scheduled = false;
    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_true(dst->scheduled);
    test_host_run(dst);
    cqe = test_ptr(dst, src->acq);
    g_assert_cmpuint(cqe->cmd_id, ==, 0x55);
    g_assert_cmpuint(cqe->phase & 1, ==, 1);
    g_assert_cmpuint(test_reg_read(dst, RNIC_REG_AQ_HEAD), ==, 1);
    g_byte_array_unref(img);
    test_host_free(src);
    test_host_free(dst);
}

/* ---------------------------------------------------------------------- */
/* Benchmark (-m perf): save and load of 1k MRs + 256 QPs                 */
/* ---------------------------------------------------------------------- */

static int cmp_u64(gconstpointer a, gconstpointer b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static void perf_case(uint32_t nmr, uint32_t nqp, uint32_t pages)
{
    enum { RUNS = 21 };
    TvPair *p = tv_pair_new(NULL);
    TestHost *dst = test_host_new(NULL);
    uint64_t save[RUNS], load[RUNS];
    uint8_t gid[16];
    GByteArray *img = NULL;
    char *err = NULL;
    uint32_t i;

    tv_gid_bytes(gid, p->ctx, 2);
    for (i = 0; i < nmr; i++) {
        tv_reg_mr(p->d, p->pd, p->bufa + 4096 * (i % 64), pages * 4096,
                  TV_ACCESS_ALL, 0, NULL);
    }
    for (i = 0; i < nqp; i++) {
        TvQp *qp = tv_qp(p->d, RNIC_QPT_RC, p->pd, p->cqa, p->cqa, NULL, 4, 0);

        tv_rc_connect(p->d, qp, 0, gid, p->b->qpn);
        g_free(qp);
    }
    memcpy(dst->ram, p->d->ram, p->d->ram_size);
    for (i = 0; i < RUNS; i++) {
        gint64 t0, t1, t2;

        if (img) {
            g_byte_array_unref(img);
        }
        img = g_byte_array_new();
        t0 = g_get_monotonic_time();
        rnic_engine_save(p->d->engine, img);
        t1 = g_get_monotonic_time();
        g_assert_true(rnic_engine_load(dst->engine, img->data, img->len,
                                       &err));
        t2 = g_get_monotonic_time();
        save[i] = t1 - t0;
        load[i] = t2 - t1;
    }
    qsort(save, RUNS, sizeof(save[0]), (int (*)(const void *,
                                                const void *))cmp_u64);
    qsort(load, RUNS, sizeof(load[0]), (int (*)(const void *,
                                                const void *))cmp_u64);
    g_test_message("%u MRs of %u pages + %u QPs (+ the pair's): image %u "
                   "bytes, save median %" G_GUINT64_FORMAT " us (min %"
                   G_GUINT64_FORMAT "), load median %" G_GUINT64_FORMAT
                   " us (min %" G_GUINT64_FORMAT ")", nmr, pages, nqp,
                   img->len, save[RUNS / 2], save[0], load[RUNS / 2], load[0]);
    g_byte_array_unref(img);
    tv_pair_free(p);
    test_host_free(dst);
}

static void test_perf(void)
{
    perf_case(0, 0, 1);
    perf_case(1000, 256, 16);
    perf_case(1000, 256, 1);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/migration/in-flight", test_in_flight);
    g_test_add_func("/rnic/migration/in-flight-duplicates",
                    test_in_flight_duplicates);
    g_test_add_func("/rnic/migration/prompt-peer", test_prompt_peer);
    tv_test_add_pair("/rnic/migration/tables-and-rebuild", NULL,
                     test_tables_and_rebuild);
    g_test_add_func("/rnic/migration/does-not-fit", test_does_not_fit);
    g_test_add_func("/rnic/migration/config-check", test_config_check);
    g_test_add_func("/rnic/migration/pending-admin", test_pending_admin);
    if (g_test_perf()) {
        g_test_add_func("/rnic/migration/perf", test_perf);
    }
    return g_test_run();
}
