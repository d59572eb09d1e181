/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: the RoCEv2 wire (rnic-wire.c). The RnicPacket <->
 * frame adapter for every opcode; two engines back to back, each fake
 * host's transmitted frames delivered to the other's receive path (encode
 * -> frame -> classify -> decode -> transport), every verb with data
 * verified, VLAN network contexts, IPv6, UD with the GRH, QP1; a lossy
 * wire (drop, duplicate, reorder, corrupt) under RC traffic that must
 * complete exactly once and in order; retry/RNR exhaustion; frames the
 * receive path must leave to the Ethernet function or drop with a reason.
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"
#include "rnic-wire.h"

/* ---------------------------------------------------------------------- */
/* The adapter                                                            */
/* ---------------------------------------------------------------------- */

static const uint8_t ops_all[] = {
    RNIC_ROCE_RC_SEND_FIRST, RNIC_ROCE_RC_SEND_MIDDLE, RNIC_ROCE_RC_SEND_LAST,
    RNIC_ROCE_RC_SEND_LAST_WITH_IMMEDIATE, RNIC_ROCE_RC_SEND_ONLY,
    RNIC_ROCE_RC_SEND_ONLY_WITH_IMMEDIATE,
    RNIC_ROCE_RC_RDMA_WRITE_FIRST, RNIC_ROCE_RC_RDMA_WRITE_MIDDLE,
    RNIC_ROCE_RC_RDMA_WRITE_LAST, RNIC_ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
    RNIC_ROCE_RC_RDMA_WRITE_ONLY, RNIC_ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
    RNIC_ROCE_RC_RDMA_READ_REQUEST, RNIC_ROCE_RC_RDMA_READ_RESPONSE_FIRST,
    RNIC_ROCE_RC_RDMA_READ_RESPONSE_MIDDLE,
    RNIC_ROCE_RC_RDMA_READ_RESPONSE_LAST,
    RNIC_ROCE_RC_RDMA_READ_RESPONSE_ONLY, RNIC_ROCE_RC_ACKNOWLEDGE,
    RNIC_ROCE_RC_ATOMIC_ACKNOWLEDGE, RNIC_ROCE_RC_COMPARE_SWAP,
    RNIC_ROCE_RC_FETCH_ADD, RNIC_ROCE_RC_SEND_LAST_WITH_INVALIDATE,
    RNIC_ROCE_RC_SEND_ONLY_WITH_INVALIDATE, RNIC_ROCE_RC_FLUSH,
    RNIC_ROCE_RC_ATOMIC_WRITE, RNIC_ROCE_UD_SEND_ONLY, RNIC_ROCE_UD_SEND_ONLY_WITH_IMMEDIATE,
};

static void make_packet(RnicPacket *p, uint8_t op, bool ipv6, uint16_t vlan,
                        const uint8_t *data, uint32_t len)
{
    static const uint8_t v6a[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0,
                                     1, 2, 3, 4, 5, 6, 7, 8 };
    static const uint8_t v6b[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0,
                                     8, 7, 6, 5, 4, 3, 2, 1 };
    static const uint8_t ma[6] = { 0x52, 0x54, 0, 0, 0, 0xa };
    static const uint8_t mb[6] = { 0x52, 0x54, 0, 0, 0, 0xb };

    memset(p, 0, sizeof(*p));
    p->net.vlan_id = vlan;
    p->net.pcp = vlan ? 3 : 0;
    memcpy(p->net.smac, ma, 6);
    memcpy(p->net.dmac, mb, 6);
    if (ipv6) {
        memcpy(p->net.sgid, v6a, 16);
        memcpy(p->net.dgid, v6b, 16);
        p->net.flow_label = 0x12345;
    } else {
        tv_gid_bytes(p->net.sgid, 0, 1);
        tv_gid_bytes(p->net.dgid, 0, 2);
    }
    p->net.traffic_class = 0x68;
    p->net.hop_limit = 64;
    p->net.udp_sport = 0xc123;
    p->opcode = op;
    p->se = true;
    p->pkey = 0xffff;
    p->dest_qp = 0xabcdef;
    p->ack_req = true;
    p->psn = 0xfedcba;
    p->ext = rnic_op_ext(op);
    p->reth.va = 0x1122334455667788ull;
    p->reth.rkey = 0x99aabbcc;
    p->reth.dma_len = 123456;
    p->aeth.syndrome = RNIC_ROCE_AETH_NAK | RNIC_ROCE_NAK_REMOTE_ACCESS;
    p->aeth.msn = 0x654321;
    p->atomic_eth.va = 0x8877665544332210ull;
    p->atomic_eth.rkey = 0x01020304;
    p->atomic_eth.swap_add = 0x1111222233334444ull;
    p->atomic_eth.compare = 0x5555666677778888ull;
    p->atomic_ack_eth.orig = 0xdeadbeefcafef00dull;
    p->deth.qkey = 0x80010000;
    p->deth.src_qp = 0x123456;
    p->ieth.rkey = 0x0badf00d;
    p->feth.sel = 1;
    p->feth.plt = 3;
    /* immediate data as the WQE holds it: the wire bytes 01 02 03 04 */
    p->immdt = 0x01020304;
    if (rnic_roce_ops[op].flags & RNIC_ROCE_OPF_PAYLOAD) {
        p->payload.len = len;
        p->payload.data = data;
    }
}

/* Every opcode: packet -> frame -> packet keeps every field. */
static void test_adapter(void)
{
    uint8_t data[1000], frame[2048];
    unsigned i, v;

    for (i = 0; i < sizeof(data); i++) {
        data[i] = i * 13;
    }
    for (v = 0; v < 4; v++) {
        bool ipv6 = v & 1;
        uint16_t vlan = (v & 2) ? 100 : 0;

        for (i = 0; i < G_N_ELEMENTS(ops_all); i++) {
            RnicPacket p, q;
            RnicRoceHdr h, d;
            size_t flen;
            uint32_t len = 997 - i;

            make_packet(&p, ops_all[i], ipv6, vlan, data, len);
            g_assert_true(rnic_wire_hdr_from_packet(&p, &h));
            h.payload = p.payload.data;
            g_assert_cmpint(rnic_roce_encode_linear(&h, frame, sizeof(frame),
                                                    &flen), ==, RNIC_ROCE_OK);
            g_assert_cmpint(rnic_roce_decode(frame, flen, &d), ==,
                            RNIC_ROCE_OK);
            g_assert_cmpuint(d.vlan_present, ==, vlan != 0);
            rnic_wire_packet_from_hdr(&d, 7, &q);
            g_assert_cmpuint(q.net.net_ctx, ==, 7);
            g_assert_cmpuint(q.net.vlan_id, ==, vlan);
            g_assert_cmpuint(q.net.pcp, ==, p.net.pcp);
            g_assert_cmpmem(q.net.smac, 6, p.net.smac, 6);
            g_assert_cmpmem(q.net.dmac, 6, p.net.dmac, 6);
            g_assert_cmpmem(q.net.sgid, 16, p.net.sgid, 16);
            g_assert_cmpmem(q.net.dgid, 16, p.net.dgid, 16);
            g_assert_cmpuint(q.net.traffic_class, ==, 0x68);
            g_assert_cmpuint(q.net.hop_limit, ==, 64);
            g_assert_cmphex(q.net.flow_label, ==, ipv6 ? 0x12345 : 0);
            /* entropy: 0xc000.., stable for the QP pair */
            g_assert_cmphex(q.net.udp_sport, ==, h.udp_sport);
            g_assert_cmphex(q.net.udp_sport & 0xc000, ==, 0xc000);
            g_assert_cmphex(q.opcode, ==, p.opcode);
            g_assert_true(q.se && q.ack_req);
            g_assert_cmphex(q.pkey, ==, 0xffff);
            g_assert_cmphex(q.dest_qp, ==, 0xabcdef);
            g_assert_cmphex(q.psn, ==, 0xfedcba);
            g_assert_cmphex(q.ext, ==, p.ext);
            if (p.ext & RNIC_ROCE_EXT_RETH) {
                g_assert_cmpmem(&q.reth, sizeof(q.reth), &p.reth,
                                sizeof(p.reth));
            }
            if (p.ext & RNIC_ROCE_EXT_FETH) {
                g_assert_cmpuint(q.feth.sel, ==, 1);
                g_assert_cmpuint(q.feth.plt, ==, 3);
            }
            if (p.ext & RNIC_ROCE_EXT_AETH) {
                g_assert_cmphex(q.aeth.syndrome, ==, p.aeth.syndrome);
                g_assert_cmphex(q.aeth.msn, ==, p.aeth.msn);
            }
            if (p.ext & RNIC_ROCE_EXT_ATOMIC_ETH) {
                g_assert_cmphex(q.atomic_eth.va, ==, p.atomic_eth.va);
                g_assert_cmphex(q.atomic_eth.rkey, ==, p.atomic_eth.rkey);
                g_assert_cmphex(q.atomic_eth.swap_add, ==,
                                p.atomic_eth.swap_add);
                g_assert_cmphex(q.atomic_eth.compare, ==, p.atomic_eth.compare);
            }
            if (p.ext & RNIC_ROCE_EXT_ATOMIC_ACK_ETH) {
                g_assert_cmphex(q.atomic_ack_eth.orig, ==,
                                p.atomic_ack_eth.orig);
            }
            if (p.ext & RNIC_ROCE_EXT_IMMDT) {
                /* the ImmDt on the wire is the WQE's bytes, in order */
                g_assert_cmphex(q.immdt, ==, p.immdt);
                g_assert_cmphex(d.immdt, ==, 0x01020304);
            }
            if (p.ext & RNIC_ROCE_EXT_IETH) {
                g_assert_cmphex(q.ieth.rkey, ==, p.ieth.rkey);
            }
            if (p.ext & RNIC_ROCE_EXT_DETH) {
                g_assert_cmphex(q.deth.qkey, ==, p.deth.qkey);
                g_assert_cmphex(q.deth.src_qp, ==, p.deth.src_qp);
            }
            g_assert_cmpuint(q.payload.len, ==, p.payload.len);
            if (p.payload.len) {
                g_assert_cmpmem(q.payload.data, q.payload.len, data,
                                p.payload.len);
            }
        }
    }
}

/* IPv4 to IPv6 cannot be framed. */
static void test_adapter_mixed(void)
{
    RnicPacket p;
    RnicRoceHdr h;

    make_packet(&p, RNIC_ROCE_RC_ACKNOWLEDGE, false, 0, NULL, 0);
    p.net.dgid[0] = 0xfd;
    g_assert_false(rnic_wire_hdr_from_packet(&p, &h));
}

/* ---------------------------------------------------------------------- */
/* Two engines on one wire                                                */
/* ---------------------------------------------------------------------- */

#define NODE_BUF    (2u << 20)

typedef struct Node {
    TestHost *h;
    uint8_t mac[6];
    uint32_t ctx[2];            /* VLAN 0 and VLAN 100 */
    uint32_t pd[2];
    uint64_t buf[2];            /* NODE_BUF each, registered in pd[i] */
    uint32_t mr[2];
    TvCq *cq;
} Node;

typedef struct Wire {
    Node n[2];
    GRand *rand;
    /* fault rates (per frame, exclusive), as fractions */
    double drop, dup, reorder, corrupt;
    bool blackhole;             /* every frame from A is lost */
    GPtrArray *held[2];         /* reordered frames waiting for node i */
    /* what the wire did, per destination node */
    unsigned delivered[2], dropped[2], duplicated[2], reordered[2];
    unsigned corrupted[2];
} Wire;

static void node_init(Node *n, uint8_t host)
{
    RnicEngineConfig cfg;
    int i;

    rnic_engine_config_defaults(&cfg);
    cfg.mac[5] = host;
    n->h = test_host_new(&cfg);
    memcpy(n->mac, cfg.mac, 6);
    tv_enable(n->h, 6);
    n->ctx[0] = tv_net_ctx(n->h, 0);
    n->ctx[1] = tv_net_ctx(n->h, 100);
    tv_gid(n->h, 0, n->ctx[0], host);
    tv_gid(n->h, 1, n->ctx[1], host);
    for (i = 0; i < 2; i++) {
        n->pd[i] = tv_pd(n->h, n->ctx[i], 0);
        n->buf[i] = test_alloc(n->h, NODE_BUF, 4096);
        n->mr[i] = tv_reg_mr(n->h, n->pd[i], n->buf[i], NODE_BUF,
                             TV_ACCESS_ALL, 0, NULL);
    }
    n->cq = tv_cq(n->h, 12, RNIC_HANDLE_NONE, 0);
}

static void wire_init(Wire *w)
{
    memset(w, 0, sizeof(*w));
    node_init(&w->n[0], 1);
    node_init(&w->n[1], 2);
    w->rand = g_rand_new_with_seed(0x5eed);
    w->held[0] = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref);
    w->held[1] = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref);
}

static void wire_fini(Wire *w)
{
    int i;

    for (i = 0; i < 2; i++) {
        g_free(w->n[i].cq);
        test_host_free(w->n[i].h);
        g_ptr_array_free(w->held[i], TRUE);
    }
    g_rand_free(w->rand);
}

static void deliver(Wire *w, int to, GByteArray *f)
{
    struct iovec iov = { .iov_base = f->data, .iov_len = f->len };

    g_assert_true(rnic_engine_receive(w->n[to].h->engine, &iov, 1));
    w->delivered[to]++;
}

/* Flip one byte the ICRC covers (BTH from the P_Key on; not byte 4). */
static void corrupt(Wire *w, GByteArray *f)
{
    RnicRoceHdr h;
    uint32_t lo, hi, off;

    g_assert_cmpint(rnic_roce_decode(f->data, f->len, &h), ==, RNIC_ROCE_OK);
    lo = h.bth_offset + 5;
    hi = h.frame_len;
    off = g_rand_int_range(w->rand, lo, hi);
    f->data[off] ^= 1u << g_rand_int_range(w->rand, 0, 8);
}

/* Send one frame towards node 'to' through the faults. */
static void wire_send(Wire *w, int to, GByteArray *f)
{
    double r = g_rand_double(w->rand);
    guint i;

    if (w->blackhole && to == 1) {
        w->dropped[to]++;
        return;
    }
    if (r < w->drop) {
        w->dropped[to]++;
        return;
    }
    r -= w->drop;
    if (r < w->corrupt) {
        corrupt(w, f);
        w->corrupted[to]++;
        deliver(w, to, f);
        return;
    }
    r -= w->corrupt;
    if (r < w->dup) {
        w->duplicated[to]++;
        deliver(w, to, f);
        deliver(w, to, f);
        return;
    }
    r -= w->dup;
    if (r < w->reorder) {
        w->reordered[to]++;
        g_ptr_array_add(w->held[to], g_byte_array_ref(f));
        return;
    }
    deliver(w, to, f);
    /* frames held back arrive after this later one */
    for (i = 0; i < w->held[to]->len; i++) {
        deliver(w, to, g_ptr_array_index(w->held[to], i));
    }
    g_ptr_array_set_size(w->held[to], 0);
}

/* Move frames both ways until the wire is quiet. */
static void wire_pump(Wire *w)
{
    int rounds = 0;
    bool moved;

    do {
        int i;

        moved = false;
        for (i = 0; i < 2; i++) {
            GPtrArray *out = test_host_take_frames(w->n[i].h);
            guint k;

            if (!out) {
                continue;
            }
            for (k = 0; k < out->len; k++) {
                wire_send(w, 1 - i, g_ptr_array_index(out, k));
            }
            g_ptr_array_free(out, TRUE);
            moved = true;
        }
        if (!moved) {
            /* nothing else coming: held frames arrive late */
            for (i = 0; i < 2; i++) {
                guint k;

                for (k = 0; k < w->held[i]->len; k++) {
                    deliver(w, i, g_ptr_array_index(w->held[i], k));
                    moved = true;
                }
                g_ptr_array_set_size(w->held[i], 0);
            }
        }
        g_assert_cmpint(++rounds, <, 1000000);
    } while (moved);
}

/* Advance both clocks by 'ns' (firing retransmission timers). */
static void wire_tick(Wire *w, uint64_t ns)
{
    test_host_advance(w->n[0].h, ns);
    test_host_advance(w->n[1].h, ns);
    wire_pump(w);
}

/* Collect 'n' CQEs of node i's CQ, ticking the clock while waiting. */
static void wire_wait(Wire *w, int i, struct rnic_cqe *out, int n)
{
    int got = 0, ticks = 0;

    wire_pump(w);
    while (got < n) {
        got += tv_poll(w->n[i].h, w->n[i].cq, out + got, n - got);
        if (got < n) {
            g_assert_cmpint(++ticks, <, 200000);
            wire_tick(w, 100000);
        }
    }
}

static struct rnic_cqe wire_wait_one(Wire *w, int i)
{
    struct rnic_cqe c;

    wire_wait(w, i, &c, 1);
    return c;
}

typedef struct QpPair {
    TvQp *a, *b;
} QpPair;

static void rc_connect(Wire *w, int i, TvQp *qp, int ctx, uint32_t dqpn,
                       uint8_t mtu, uint8_t timeout, uint8_t retry,
                       uint8_t rnr_retry)
{
    Node *n = &w->n[i], *peer = &w->n[1 - i];
    TvRcPath p = {
        .sgid_index = ctx,      /* GID i is in context i */
        .dest_qpn = dqpn,
        .psn = 0xfffff0,        /* PSNs wrap during the tests */
        .mtu = mtu,
        .timeout = timeout,
        .retry_cnt = retry,
        .rnr_retry = rnr_retry,
        .rd_atomic = 16,
        .access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
                  RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC,
    };

    tv_gid_bytes(p.dgid, peer->ctx[ctx], i == 0 ? 2 : 1);
    memcpy(p.dmac, peer->mac, 6);
    tv_rc_connect_path(n->h, qp, &p);
}

/* RC QPs a (node 0) <-> b (node 1) in context 'ctx'. */
static QpPair rc_pair(Wire *w, int ctx, uint8_t mtu, uint8_t timeout,
                      uint8_t retry, uint8_t rnr_retry)
{
    QpPair p;

    p.a = tv_qp(w->n[0].h, RNIC_QPT_RC, w->n[0].pd[ctx], w->n[0].cq,
                w->n[0].cq, NULL, 8, 0);
    p.b = tv_qp(w->n[1].h, RNIC_QPT_RC, w->n[1].pd[ctx], w->n[1].cq,
                w->n[1].cq, NULL, 8, 0);
    rc_connect(w, 0, p.a, ctx, p.b->qpn, mtu, timeout, retry, rnr_retry);
    rc_connect(w, 1, p.b, ctx, p.a->qpn, mtu, timeout, retry, rnr_retry);
    return p;
}

static void qp_pair_free(QpPair *p)
{
    g_free(p->a);
    g_free(p->b);
}

static void fill(TestHost *h, uint64_t addr, uint32_t len, uint32_t seed)
{
    uint8_t *p = test_ptr(h, addr);
    uint32_t i;

    for (i = 0; i < len; i++) {
        p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
    }
}

static void expect(const struct rnic_cqe *c, uint64_t wr_id, uint8_t opcode,
                   uint32_t len)
{
    g_assert_cmphex(c->wr_id, ==, wr_id);
    g_assert_cmpuint(c->status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c->opcode, ==, opcode);
    g_assert_cmpuint(c->byte_len, ==, len);
}

/* Every verb across the wire in context 'ctx', data verified. */
static void do_verbs(int ctx, uint8_t mtu, bool map)
{
    Wire w;
    QpPair p;
    Node *a, *b;
    struct rnic_sq_wqe q;
    struct rnic_sge s, r;
    struct rnic_cqe c;
    uint64_t *v;
    GByteArray *first;
    const uint32_t len = 10000;     /* several packets at every MTU */

    wire_init(&w);
    a = &w.n[0];
    b = &w.n[1];
    a->h->map_disabled = b->h->map_disabled = !map;
    p = rc_pair(&w, ctx, mtu, 10, 7, 7);

    /* SEND with immediate, multi-packet */
    fill(a->h, a->buf[ctx], len, 1);
    s = tv_sge(a->buf[ctx], len, a->mr[ctx]);
    r = tv_sge(b->buf[ctx] + 100000, len + 10, b->mr[ctx]);
    tv_post_recv(b->h, p.b, 0x100, &r, 1);
    q = tv_wqe(1, RNIC_WR_SEND_IMM, 1);
    q.imm_or_inv = g_htonl(0x11223344);
    tv_post_send(a->h, p.a, &q, &s, NULL);
    /* the first frame on the wire: tagged with the context's VLAN */
    test_host_run(a->h);
    g_assert_cmpuint(a->h->frames->len, >, 0);
    first = g_ptr_array_index(a->h->frames, 0);
    if (ctx) {
        g_assert_cmphex(first->data[12] << 8 | first->data[13], ==, 0x8100);
        g_assert_cmpuint((first->data[14] << 8 | first->data[15]) & 0xfff,
                         ==, 100);
    } else {
        g_assert_cmphex(first->data[12] << 8 | first->data[13], ==, 0x0800);
    }
    g_assert_cmpmem(first->data, 6, b->mac, 6);
    g_assert_cmpmem(first->data + 6, 6, a->mac, 6);
    c = wire_wait_one(&w, 1);
    expect(&c, 0x100, RNIC_WC_RECV, len);
    g_assert_true(c.flags & RNIC_CQE_WITH_IMM);
    g_assert_cmphex(c.imm_or_inv, ==, g_htonl(0x11223344));
    g_assert_cmpmem(test_ptr(b->h, b->buf[ctx] + 100000), len,
                    test_ptr(a->h, a->buf[ctx]), len);
    c = wire_wait_one(&w, 0);
    expect(&c, 1, RNIC_WC_SEND, len);

    /* RDMA WRITE, then WRITE with immediate */
    fill(a->h, a->buf[ctx] + 20000, len, 2);
    s = tv_sge(a->buf[ctx] + 20000, len, a->mr[ctx]);
    q = tv_wqe(2, RNIC_WR_RDMA_WRITE, 1);
    q.rdma.remote_addr = b->buf[ctx] + 200000;
    q.rdma.rkey = b->mr[ctx];
    tv_post_send(a->h, p.a, &q, &s, NULL);
    c = wire_wait_one(&w, 0);
    expect(&c, 2, RNIC_WC_RDMA_WRITE, len);
    g_assert_cmpmem(test_ptr(b->h, b->buf[ctx] + 200000), len,
                    test_ptr(a->h, a->buf[ctx] + 20000), len);
    tv_post_recv(b->h, p.b, 0x101, NULL, 0);
    q = tv_wqe(3, RNIC_WR_RDMA_WRITE_IMM, 1);
    q.rdma.remote_addr = b->buf[ctx] + 300000;
    q.rdma.rkey = b->mr[ctx];
    q.imm_or_inv = g_htonl(0xabcd);
    tv_post_send(a->h, p.a, &q, &s, NULL);
    c = wire_wait_one(&w, 1);
    expect(&c, 0x101, RNIC_WC_RECV_RDMA_WITH_IMM, len);
    g_assert_cmphex(c.imm_or_inv, ==, g_htonl(0xabcd));
    g_assert_cmpmem(test_ptr(b->h, b->buf[ctx] + 300000), len,
                    test_ptr(a->h, a->buf[ctx] + 20000), len);
    c = wire_wait_one(&w, 0);
    expect(&c, 3, RNIC_WC_RDMA_WRITE, len);

    /* RDMA READ */
    fill(b->h, b->buf[ctx] + 400000, len, 3);
    r = tv_sge(a->buf[ctx] + 40000, len, a->mr[ctx]);
    q = tv_wqe(4, RNIC_WR_RDMA_READ, 1);
    q.rdma.remote_addr = b->buf[ctx] + 400000;
    q.rdma.rkey = b->mr[ctx];
    tv_post_send(a->h, p.a, &q, &r, NULL);
    c = wire_wait_one(&w, 0);
    expect(&c, 4, RNIC_WC_RDMA_READ, len);
    g_assert_cmpmem(test_ptr(a->h, a->buf[ctx] + 40000), len,
                    test_ptr(b->h, b->buf[ctx] + 400000), len);

    /* atomics on a counter in B */
    v = test_ptr(b->h, b->buf[ctx] + 500000);
    *v = GUINT64_TO_LE(40);
    r = tv_sge(a->buf[ctx] + 60000, 8, a->mr[ctx]);
    q = tv_wqe(5, RNIC_WR_ATOMIC_FETCH_ADD, 1);
    q.atomic.remote_addr = b->buf[ctx] + 500000;
    q.atomic.rkey = b->mr[ctx];
    q.atomic.compare_add = 2;
    tv_post_send(a->h, p.a, &q, &r, NULL);
    c = wire_wait_one(&w, 0);
    expect(&c, 5, RNIC_WC_FETCH_ADD, 8);
    g_assert_cmpuint(*(uint64_t *)test_ptr(a->h, a->buf[ctx] + 60000), ==, 40);
    g_assert_cmpuint(GUINT64_FROM_LE(*v), ==, 42);
    q = tv_wqe(6, RNIC_WR_ATOMIC_CMP_SWP, 1);
    q.atomic.remote_addr = b->buf[ctx] + 500000;
    q.atomic.rkey = b->mr[ctx];
    q.atomic.compare_add = 42;
    q.atomic.swap = 7;
    tv_post_send(a->h, p.a, &q, &r, NULL);
    c = wire_wait_one(&w, 0);
    expect(&c, 6, RNIC_WC_COMP_SWAP, 8);
    g_assert_cmpuint(*(uint64_t *)test_ptr(a->h, a->buf[ctx] + 60000), ==, 42);
    g_assert_cmpuint(GUINT64_FROM_LE(*v), ==, 7);

    /* inline SEND the other way round */
    r = tv_sge(a->buf[ctx] + 70000, 100, a->mr[ctx]);
    tv_post_recv(a->h, p.a, 0x200, &r, 1);
    q = tv_wqe(7, RNIC_WR_SEND, 0);
    q.flags |= RNIC_WQE_INLINE;
    q.inline_len = 37;
    tv_post_send(b->h, p.b, &q, NULL, "inline data across the RoCEv2 wire!!");
    c = wire_wait_one(&w, 0);
    expect(&c, 0x200, RNIC_WC_RECV, 37);
    g_assert_cmpmem(test_ptr(a->h, a->buf[ctx] + 70000), 37,
                    "inline data across the RoCEv2 wire!!", 37);
    c = wire_wait_one(&w, 1);
    expect(&c, 7, RNIC_WC_SEND, 37);

    g_assert_cmpuint(rnic_engine_stat(a->h->engine, RNIC_STAT_RX_DROPPED), ==,
                     0);
    g_assert_cmpuint(rnic_engine_stat(b->h->engine, RNIC_STAT_RX_DROPPED), ==,
                     0);
    g_assert_cmpuint(rnic_engine_stat(a->h->engine, RNIC_STAT_TX_DROPPED), ==,
                     0);
    g_assert_cmpuint(rnic_engine_stat(a->h->engine, RNIC_STAT_RETRANSMITS), ==,
                     0);
    g_assert_cmpuint(rnic_engine_stat(a->h->engine, RNIC_STAT_TX_FRAMES), ==,
                     w.delivered[1]);
    g_assert_cmpuint(rnic_engine_stat(b->h->engine, RNIC_STAT_RX_FRAMES), ==,
                     w.delivered[1]);
    g_assert_cmpuint(rnic_engine_stat(b->h->engine, RNIC_STAT_ETH_RX_FRAMES),
                     ==, 0);
    g_assert_cmpuint(a->h->maps, ==, 0);
    qp_pair_free(&p);
    wire_fini(&w);
}

static void test_verbs(void)
{
    do_verbs(0, RNIC_MTU_1024, true);
    do_verbs(0, RNIC_MTU_256, true);
    do_verbs(0, RNIC_MTU_4096, true);
    do_verbs(0, RNIC_MTU_1024, false);
}

static void test_verbs_vlan(void)
{
    do_verbs(1, RNIC_MTU_1024, true);
    do_verbs(1, RNIC_MTU_4096, false);
}

/* IPv6 GIDs: the frames are IPv6, the transport does not care. */
static void test_ipv6(void)
{
    static const uint8_t ga[16] = { 0xfd, 0x00, 0, 0, 0, 0, 0, 0,
                                    0, 0, 0, 0, 0, 0, 0, 1 };
    static const uint8_t gb[16] = { 0xfd, 0x00, 0, 0, 0, 0, 0, 0,
                                    0, 0, 0, 0, 0, 0, 0, 2 };
    Wire w;
    TvQp *qa, *qb;
    struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_ADD_GID };
    struct rnic_qp_attr at;
    struct rnic_sq_wqe q;
    struct rnic_sge s;
    struct rnic_cqe c;
    RnicRoceHdr h;
    GByteArray *f;
    int i;

    wire_init(&w);
    for (i = 0; i < 2; i++) {
        memcpy(cmd.gid.gid, i ? gb : ga, 16);
        cmd.gid.index = 5;
        cmd.gid.net_ctx = w.n[i].ctx[0];
        tv_cmd_ok(w.n[i].h, &cmd);
    }
    qa = tv_qp(w.n[0].h, RNIC_QPT_RC, w.n[0].pd[0], w.n[0].cq, w.n[0].cq,
               NULL, 6, 0);
    qb = tv_qp(w.n[1].h, RNIC_QPT_RC, w.n[1].pd[0], w.n[1].cq, w.n[1].cq,
               NULL, 6, 0);
    rc_connect(&w, 0, qa, 0, qb->qpn, RNIC_MTU_1024, 10, 7, 7);
    rc_connect(&w, 1, qb, 0, qa->qpn, RNIC_MTU_1024, 10, 7, 7);
    /* re-path both QPs onto the IPv6 GIDs (SQD -> SQD may change the AV) */
    for (i = 0; i < 2; i++) {
        TvQp *qp = i ? qb : qa;

        memset(&at, 0, sizeof(at));
        at.qp_state = RNIC_QPS_SQD;
        g_assert_cmpuint(tv_modify(w.n[i].h, qp, &at, RNIC_QP_STATE), ==,
                         RNIC_ST_OK);
        at.av.sgid_index = 5;
        memcpy(at.av.dgid, i ? ga : gb, 16);
        memcpy(at.av.dmac, w.n[1 - i].mac, 6);
        g_assert_cmpuint(tv_modify(w.n[i].h, qp, &at, RNIC_QP_AV), ==,
                         RNIC_ST_OK);
        at.qp_state = RNIC_QPS_RTS;
        g_assert_cmpuint(tv_modify(w.n[i].h, qp, &at, RNIC_QP_STATE), ==,
                         RNIC_ST_OK);
    }
    fill(w.n[0].h, w.n[0].buf[0], 3000, 9);
    s = tv_sge(w.n[0].buf[0], 3000, w.n[0].mr[0]);
    q = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    q.rdma.remote_addr = w.n[1].buf[0] + 8192;
    q.rdma.rkey = w.n[1].mr[0];
    tv_post_send(w.n[0].h, qa, &q, &s, NULL);
    test_host_run(w.n[0].h);
    f = g_ptr_array_index(w.n[0].h->frames, 0);
    g_assert_cmpint(rnic_roce_decode(f->data, f->len, &h), ==, RNIC_ROCE_OK);
    g_assert_true(h.ipv6);
    g_assert_cmpmem(h.sgid, 16, ga, 16);
    g_assert_cmpmem(h.dgid, 16, gb, 16);
    c = wire_wait_one(&w, 0);
    expect(&c, 1, RNIC_WC_RDMA_WRITE, 3000);
    g_assert_cmpmem(test_ptr(w.n[1].h, w.n[1].buf[0] + 8192), 3000,
                    test_ptr(w.n[0].h, w.n[0].buf[0]), 3000);
    g_free(qa);
    g_free(qb);
    wire_fini(&w);
}

/* UD between the nodes, and MADs to QP1 of the right network context. */
static void test_ud_gsi(void)
{
    Wire w;
    Node *a, *b;
    TvQp *ua, *ub, *gsi0, *gsi1;
    struct rnic_sq_wqe q;
    struct rnic_sge s, r;
    struct rnic_cqe c;
    RnicRoceHdr h;
    GByteArray *f;
    uint8_t *grh;

    wire_init(&w);
    a = &w.n[0];
    b = &w.n[1];
    ua = tv_qp(a->h, RNIC_QPT_UD, a->pd[0], a->cq, a->cq, NULL, 5, 0);
    ub = tv_qp(b->h, RNIC_QPT_UD, b->pd[0], b->cq, b->cq, NULL, 5, 0);
    tv_ud_ready(a->h, ua, 0x1234);
    tv_ud_ready(b->h, ub, 0x1234);

    /* UD SEND with immediate: the GRH area holds the received IPv4 header */
    fill(a->h, a->buf[0], 500, 4);
    s = tv_sge(a->buf[0], 500, a->mr[0]);
    r = tv_sge(b->buf[0], 1000, b->mr[0]);
    tv_post_recv(b->h, ub, 0x300, &r, 1);
    q = tv_wqe(1, RNIC_WR_SEND_IMM, 1);
    q.imm_or_inv = g_htonl(99);
    q.ud.remote_qpn = ub->qpn;
    q.ud.remote_qkey = 0x1234;
    q.ud.av.sgid_index = 0;
    tv_gid_bytes(q.ud.av.dgid, b->ctx[0], 2);
    memcpy(q.ud.av.dmac, b->mac, 6);
    tv_post_send(a->h, ua, &q, &s, NULL);
    test_host_run(a->h);
    f = g_byte_array_ref(g_ptr_array_index(a->h->frames, 0));
    g_assert_cmpint(rnic_roce_decode(f->data, f->len, &h), ==, RNIC_ROCE_OK);
    c = wire_wait_one(&w, 0);
    expect(&c, 1, RNIC_WC_SEND, 500);
    c = wire_wait_one(&w, 1);
    expect(&c, 0x300, RNIC_WC_RECV, 540);
    g_assert_true(c.flags & RNIC_CQE_GRH);
    g_assert_true(c.flags & RNIC_CQE_IPV4);
    g_assert_true(c.flags & RNIC_CQE_WITH_IMM);
    g_assert_cmphex(c.imm_or_inv, ==, g_htonl(99));
    g_assert_cmpuint(c.src_qp, ==, ua->qpn);
    g_assert_cmpmem(c.smac, 6, a->mac, 6);
    grh = test_ptr(b->h, b->buf[0]);
    /* 20 zero bytes, then the IPv4 header exactly as it came */
    g_assert_cmpuint(grh[0] | grh[5] | grh[19], ==, 0);
    g_assert_cmpmem(grh + 20, 20, f->data + h.l3_offset, 20);
    g_assert_cmpmem(grh + 40, 500, test_ptr(a->h, a->buf[0]), 500);
    g_byte_array_unref(f);

    /* wrong Q_Key: dropped by the receiver, the receive stays posted */
    q.wr_id = 2;
    q.ud.remote_qkey = 0x4321;
    tv_post_send(a->h, ua, &q, &s, NULL);
    c = wire_wait_one(&w, 0);
    expect(&c, 2, RNIC_WC_SEND, 500);
    tv_post_recv(b->h, ub, 0x301, &r, 1);
    g_assert_cmpint(tv_poll(b->h, b->cq, &c, 1), ==, 0);

    /* QP1 of each context: a MAD lands on the one of the frame's VLAN */
    gsi0 = tv_qp(b->h, RNIC_QPT_GSI, b->pd[0], b->cq, b->cq, NULL, 4, 0);
    gsi1 = tv_qp(b->h, RNIC_QPT_GSI, b->pd[1], b->cq, b->cq, NULL, 4, 0);
    g_assert_cmpuint(gsi0->qpn, ==, 1);
    g_assert_cmpuint(gsi1->qpn, ==, 1);
    tv_ud_ready(b->h, gsi0, RNIC_ROCE_GSI_QKEY);
    tv_ud_ready(b->h, gsi1, RNIC_ROCE_GSI_QKEY);
    r = tv_sge(b->buf[0] + 4096, 512, b->mr[0]);
    tv_post_recv(b->h, gsi0, 0x400, &r, 1);
    r = tv_sge(b->buf[1] + 4096, 512, b->mr[1]);
    tv_post_recv(b->h, gsi1, 0x401, &r, 1);
    {
        TvQp *ua1 = tv_qp(a->h, RNIC_QPT_UD, a->pd[1], a->cq, a->cq, NULL, 4,
                          0);

        tv_ud_ready(a->h, ua1, RNIC_ROCE_GSI_QKEY);
        s = tv_sge(a->buf[1], 256, a->mr[1]);
        fill(a->h, a->buf[1], 256, 5);
        q = tv_wqe(3, RNIC_WR_SEND, 1);
        q.ud.remote_qpn = 1;
        q.ud.remote_qkey = RNIC_ROCE_GSI_QKEY;
        q.ud.av.sgid_index = 1;
        tv_gid_bytes(q.ud.av.dgid, b->ctx[1], 2);
        memcpy(q.ud.av.dmac, b->mac, 6);
        tv_post_send(a->h, ua1, &q, &s, NULL);
        c = wire_wait_one(&w, 0);
        expect(&c, 3, RNIC_WC_SEND, 256);
        c = wire_wait_one(&w, 1);
        expect(&c, 0x401, RNIC_WC_RECV, 296);
        g_assert_cmpuint(c.qp_num, ==, 1);
        g_assert_cmpuint(c.qp_handle, ==, gsi1->handle);
        g_assert_true(c.flags & RNIC_CQE_VLAN);
        g_assert_cmpuint(c.vlan_id, ==, 100);
        g_assert_cmpmem(test_ptr(b->h, b->buf[1] + 4096 + 40), 256,
                        test_ptr(a->h, a->buf[1]), 256);
        g_free(ua1);
    }
    g_assert_cmpint(tv_poll(b->h, b->cq, &c, 1), ==, 0);
    g_free(gsi0);
    g_free(gsi1);
    g_free(ua);
    g_free(ub);
    wire_fini(&w);
}

/*
 * RC over a lossy wire: hundreds of WRITE/READ/SEND/atomic/ATOMIC WRITE/
 * FLUSH WQEs, multi-packet, complete exactly once, in order, with the data
 * right (a duplicate ATOMIC WRITE replayed, never executed again, else a
 * late one would undo a later value); every corrupted frame is caught by
 * the ICRC.
 */
#define LOSSY_KINDS 7
static void do_lossy(double drop, double dup, double reorder, double corr,
                     uint8_t mtu, unsigned nops)
{
    Wire w;
    QpPair p;
    Node *a, *b;
    uint64_t sum = 0, cas = 0, aw = 0;
    unsigned k, posted = 0, done = 0, recvd = 0;
    const unsigned window = 32;
    uint64_t *ctr, *cas_word, *aw_word;
    GArray *sends = g_array_new(FALSE, TRUE, sizeof(uint32_t));

    wire_init(&w);
    w.drop = drop;
    w.dup = dup;
    w.reorder = reorder;
    w.corrupt = corr;
    a = &w.n[0];
    b = &w.n[1];
    p = rc_pair(&w, 0, mtu, 8, 7, 7);
    ctr = test_ptr(b->h, b->buf[0] + NODE_BUF - 16);
    cas_word = test_ptr(b->h, b->buf[0] + NODE_BUF - 8);
    aw_word = test_ptr(b->h, b->buf[0] + NODE_BUF - 24);
    *aw_word = 0;
    fill(a->h, a->buf[0], NODE_BUF / 2, 11);
    fill(b->h, b->buf[0], NODE_BUF / 2, 12);

    while (done < nops) {
        struct rnic_cqe c[64];
        int n, i;

        /* keep 'window' WQEs in flight */
        while (posted < nops && posted - done < window) {
            uint32_t len = 1 + (posted * 2654435761u) % 5000;
            uint64_t off = (uint64_t)(posted % 64) * 8192;
            struct rnic_sq_wqe q;
            struct rnic_sge s, r;

            k = posted;
            switch (k % LOSSY_KINDS) {
            case 0:         /* WRITE A[off] -> B[1 MiB + off] */
                s = tv_sge(a->buf[0] + off, len, a->mr[0]);
                q = tv_wqe(k, RNIC_WR_RDMA_WRITE, 1);
                q.rdma.remote_addr = b->buf[0] + NODE_BUF / 2 + off;
                q.rdma.rkey = b->mr[0];
                tv_write_send(a->h, p.a, &q, &s, NULL);
                break;
            case 1:         /* READ B[off] -> A[1 MiB + off] */
                r = tv_sge(a->buf[0] + NODE_BUF / 2 + off, len, a->mr[0]);
                q = tv_wqe(k, RNIC_WR_RDMA_READ, 1);
                q.rdma.remote_addr = b->buf[0] + off;
                q.rdma.rkey = b->mr[0];
                tv_write_send(a->h, p.a, &q, &r, NULL);
                break;
            case 2:         /* SEND A[off] -> a receive in B */
                s = tv_sge(a->buf[0] + off, len, a->mr[0]);
                r = tv_sge(b->buf[0] + NODE_BUF / 2 + 600000 +
                           (k % 32) * 8192, 8192, b->mr[0]);
                tv_post_recv(b->h, p.b, k, &r, 1);
                q = tv_wqe(k, RNIC_WR_SEND, 1);
                tv_write_send(a->h, p.a, &q, &s, NULL);
                g_array_append_val(sends, k);
                break;
            case 3:         /* FETCH_ADD k on B's counter */
                r = tv_sge(a->buf[0] + NODE_BUF / 2 + 900000 + (k % 64) * 8,
                           8, a->mr[0]);
                q = tv_wqe(k, RNIC_WR_ATOMIC_FETCH_ADD, 1);
                q.atomic.remote_addr = b->buf[0] + NODE_BUF - 16;
                q.atomic.rkey = b->mr[0];
                q.atomic.compare_add = k;
                tv_write_send(a->h, p.a, &q, &r, NULL);
                break;
            case 5:         /* ATOMIC WRITE k to B's word */
                q = tv_wqe(k, RNIC_WR_ATOMIC_WRITE, 0);
                q.atomic_write.remote_addr = b->buf[0] + NODE_BUF - 24;
                q.atomic_write.rkey = b->mr[0];
                aw = GUINT64_TO_LE(k);
                memcpy(q.atomic_write.data, &aw, 8);
                aw = k;
                tv_write_send(a->h, p.a, &q, NULL, NULL);
                break;
            case 6:         /* FLUSH the range the last WRITE placed */
                q = tv_wqe(k, RNIC_WR_FLUSH, 0);
                q.flush.remote_addr = b->buf[0] + NODE_BUF / 2 +
                                      (uint64_t)((k - 6) % 64) * 8192;
                q.flush.rkey = b->mr[0];
                q.flush.length = len;
                q.flush.type = RNIC_FLUSH_GLOBAL;
                q.flush.level = k % 2 ? RNIC_FLUSH_MR : RNIC_FLUSH_RANGE;
                tv_write_send(a->h, p.a, &q, NULL, NULL);
                break;
            default:        /* CMP_SWP: k-1 -> k, succeeds only in order */
                r = tv_sge(a->buf[0] + NODE_BUF / 2 + 901000 + (k % 64) * 8,
                           8, a->mr[0]);
                q = tv_wqe(k, RNIC_WR_ATOMIC_CMP_SWP, 1);
                q.atomic.remote_addr = b->buf[0] + NODE_BUF - 8;
                q.atomic.rkey = b->mr[0];
                q.atomic.compare_add = cas;
                q.atomic.swap = k;
                cas = k;
                tv_write_send(a->h, p.a, &q, &r, NULL);
                break;
            }
            posted++;
        }
        tv_ring_sq(a->h, p.a);
        wire_pump(&w);
        n = tv_poll(a->h, a->cq, c, G_N_ELEMENTS(c));
        for (i = 0; i < n; i++) {
            uint32_t len, kk = done;
            uint64_t off = (uint64_t)(kk % 64) * 8192;
            uint64_t got;

            /* exactly once, in order, successful */
            g_assert_cmpuint(c[i].wr_id, ==, kk);
            g_assert_cmpuint(c[i].status, ==, RNIC_WC_SUCCESS);
            len = 1 + (kk * 2654435761u) % 5000;
            switch (kk % LOSSY_KINDS) {
            case 0:
                g_assert_cmpmem(test_ptr(b->h, b->buf[0] + NODE_BUF / 2 + off),
                                len, test_ptr(a->h, a->buf[0] + off), len);
                break;
            case 1:
                g_assert_cmpmem(test_ptr(a->h, a->buf[0] + NODE_BUF / 2 + off),
                                len, test_ptr(b->h, b->buf[0] + off), len);
                break;
            case 3:
                got = *(uint64_t *)test_ptr(a->h, a->buf[0] + NODE_BUF / 2 +
                                            900000 + (kk % 64) * 8);
                g_assert_cmpuint(GUINT64_FROM_LE(got), ==, sum);
                sum += kk;
                break;
            case 4:
                got = *(uint64_t *)test_ptr(a->h, a->buf[0] + NODE_BUF / 2 +
                                            901000 + (kk % 64) * 8);
                /* the original value: the previous CMP_SWP's swap */
                g_assert_cmpuint(GUINT64_FROM_LE(got), ==,
                                 kk >= 4 + LOSSY_KINDS ? kk - LOSSY_KINDS :
                                 0);
                break;
            case 5:
                g_assert_cmpuint(c[i].opcode, ==, RNIC_WC_ATOMIC_WRITE);
                break;
            case 6:
                g_assert_cmpuint(c[i].opcode, ==, RNIC_WC_FLUSH);
                break;
            }
            done++;
        }
        /* B's receives: in order, the right bytes */
        n = tv_poll(b->h, b->cq, c, G_N_ELEMENTS(c));
        for (i = 0; i < n; i++) {
            uint32_t kk = g_array_index(sends, uint32_t, recvd);
            uint32_t len = 1 + (kk * 2654435761u) % 5000;
            uint64_t off = (uint64_t)(kk % 64) * 8192;

            expect(&c[i], kk, RNIC_WC_RECV, len);
            g_assert_cmpmem(test_ptr(b->h, b->buf[0] + NODE_BUF / 2 + 600000 +
                                     (kk % 32) * 8192), len,
                            test_ptr(a->h, a->buf[0] + off), len);
            recvd++;
        }
        if (!n) {
            wire_tick(&w, 200000);
        }
    }
    g_assert_cmpuint(recvd, ==, sends->len);
    g_assert_cmpuint(GUINT64_FROM_LE(*ctr), ==, sum);
    g_assert_cmpuint(GUINT64_FROM_LE(*cas_word), ==, cas);
    g_assert_cmpuint(GUINT64_FROM_LE(*aw_word), ==, aw);
    /* every corrupted frame was rejected by the ICRC, nothing else */
    g_assert_cmpuint(rnic_engine_stat(b->h->engine, RNIC_STAT_RX_ERR_ICRC), ==,
                     w.corrupted[1]);
    g_assert_cmpuint(rnic_engine_stat(a->h->engine, RNIC_STAT_RX_ERR_ICRC), ==,
                     w.corrupted[0]);
    if (g_test_verbose()) {
        int i;

        for (i = 0; i < 2; i++) {
            g_printerr("to %c: %u delivered, %u dropped, %u duplicated, "
                       "%u reordered, %u corrupted; retransmits %"
                       G_GUINT64_FORMAT ", rx dropped %" G_GUINT64_FORMAT "\n",
                       'A' + i, w.delivered[i], w.dropped[i],
                       w.duplicated[i], w.reordered[i], w.corrupted[i],
                       rnic_engine_stat(w.n[1 - i].h->engine,
                                        RNIC_STAT_RETRANSMITS),
                       rnic_engine_stat(w.n[i].h->engine,
                                        RNIC_STAT_RX_DROPPED));
        }
    }
    if (drop > 0) {
        g_assert_cmpuint(rnic_engine_stat(a->h->engine, RNIC_STAT_RETRANSMITS),
                         >, 0);
    }
    g_array_free(sends, TRUE);
    qp_pair_free(&p);
    wire_fini(&w);
}

static void test_lossy(void)
{
    do_lossy(0, 0, 0, 0, RNIC_MTU_1024, 200);
    do_lossy(0.05, 0.02, 0.05, 0.02, RNIC_MTU_1024, 500);
    do_lossy(0.15, 0.05, 0.10, 0.05, RNIC_MTU_1024, 300);
    do_lossy(0.10, 0.05, 0.05, 0.05, RNIC_MTU_256, 300);
    do_lossy(0.10, 0.05, 0.05, 0.05, RNIC_MTU_4096, 300);
}

/* No more than 512 PSNs in flight ahead of the oldest unacknowledged. */
static void test_window(void)
{
    Wire w;
    QpPair p;
    struct rnic_sq_wqe q;
    struct rnic_sge s, r;
    struct rnic_cqe c;

    wire_init(&w);
    p = rc_pair(&w, 0, RNIC_MTU_1024, 10, 7, 7);
    fill(w.n[0].h, w.n[0].buf[0], 1u << 20, 3);
    s = tv_sge(w.n[0].buf[0], 1u << 20, w.n[0].mr[0]);
    q = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    q.rdma.remote_addr = w.n[1].buf[0];
    q.rdma.rkey = w.n[1].mr[0];
    tv_post_send(w.n[0].h, p.a, &q, &s, NULL);
    test_host_run(w.n[0].h);
    g_assert_cmpuint(w.n[0].h->frames->len, ==, 512);
    /* a READ takes its response PSNs: the WQE behind it waits */
    r = tv_sge(w.n[0].buf[0] + (1u << 20), 200 * 1024, w.n[0].mr[0]);
    q = tv_wqe(2, RNIC_WR_RDMA_READ, 1);
    q.rdma.remote_addr = w.n[1].buf[0];
    q.rdma.rkey = w.n[1].mr[0];
    tv_post_send(w.n[0].h, p.a, &q, &r, NULL);
    q = tv_wqe(3, RNIC_WR_RDMA_WRITE, 1);
    q.rdma.remote_addr = w.n[1].buf[0];
    q.rdma.rkey = w.n[1].mr[0];
    s.length = 100;
    tv_post_send(w.n[0].h, p.a, &q, &s, NULL);
    c = wire_wait_one(&w, 0);
    expect(&c, 1, RNIC_WC_RDMA_WRITE, 1u << 20);
    c = wire_wait_one(&w, 0);
    expect(&c, 2, RNIC_WC_RDMA_READ, 200 * 1024);
    c = wire_wait_one(&w, 0);
    expect(&c, 3, RNIC_WC_RDMA_WRITE, 100);
    g_assert_cmpmem(test_ptr(w.n[1].h, w.n[1].buf[0]), 1u << 20,
                    test_ptr(w.n[0].h, w.n[0].buf[0]), 1u << 20);
    g_assert_cmpuint(rnic_engine_stat(w.n[0].h->engine, RNIC_STAT_RETRANSMITS),
                     ==, 0);
    qp_pair_free(&p);
    wire_fini(&w);
}

/* The peer is gone: RETRY_EXC_ERR after retry_cnt retransmissions. */
static void test_retry_exceeded(void)
{
    Wire w;
    QpPair p;
    struct rnic_sq_wqe q;
    struct rnic_sge s;
    struct rnic_cqe c;

    wire_init(&w);
    p = rc_pair(&w, 0, RNIC_MTU_1024, 8, 3, 7);
    w.blackhole = true;
    s = tv_sge(w.n[0].buf[0], 5000, w.n[0].mr[0]);
    q = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    q.rdma.remote_addr = w.n[1].buf[0];
    q.rdma.rkey = w.n[1].mr[0];
    tv_post_send(w.n[0].h, p.a, &q, &s, NULL);
    q.wr_id = 2;
    tv_post_send(w.n[0].h, p.a, &q, &s, NULL);
    c = wire_wait_one(&w, 0);
    g_assert_cmpuint(c.wr_id, ==, 1);
    g_assert_cmpuint(c.status, ==, RNIC_WC_RETRY_EXC_ERR);
    c = wire_wait_one(&w, 0);
    g_assert_cmpuint(c.wr_id, ==, 2);
    g_assert_cmpuint(c.status, ==, RNIC_WC_WR_FLUSH_ERR);
    /* go-back-N: 1 + 3 transmissions of the 5 + 5 packets of both WQEs */
    g_assert_cmpuint(w.dropped[1], ==, (1 + 3) * (5 + 5));
    g_assert_cmpuint(rnic_engine_stat(w.n[0].h->engine, RNIC_STAT_RETRANSMITS),
                     ==, 3);
    qp_pair_free(&p);
    wire_fini(&w);
}

/* No receive at the peer: RNR NAKs, then RNR_RETRY_EXC_ERR. */
static void test_rnr_exceeded(void)
{
    Wire w;
    QpPair p;
    struct rnic_sq_wqe q;
    struct rnic_sge s;
    struct rnic_cqe c;

    wire_init(&w);
    p = rc_pair(&w, 0, RNIC_MTU_1024, 8, 7, 2);
    s = tv_sge(w.n[0].buf[0], 100, w.n[0].mr[0]);
    q = tv_wqe(1, RNIC_WR_SEND, 1);
    tv_post_send(w.n[0].h, p.a, &q, &s, NULL);
    c = wire_wait_one(&w, 0);
    g_assert_cmpuint(c.wr_id, ==, 1);
    g_assert_cmpuint(c.status, ==, RNIC_WC_RNR_RETRY_EXC_ERR);
    /* the first try and two retries reached B */
    g_assert_cmpuint(w.delivered[1], ==, 3);
    qp_pair_free(&p);
    wire_fini(&w);
}

/* ---------------------------------------------------------------------- */
/* Receive classification and drops                                       */
/* ---------------------------------------------------------------------- */

typedef struct RxFix {
    Wire w;
    QpPair p;
    RnicRoceHdr h;              /* a valid WRITE_ONLY from A to B's QP */
    uint8_t payload[64];
} RxFix;

static void rx_init(RxFix *f)
{
    Node *a, *b;
    RnicPacket pkt;

    wire_init(&f->w);
    a = &f->w.n[0];
    b = &f->w.n[1];
    f->p = rc_pair(&f->w, 0, RNIC_MTU_1024, 8, 7, 7);
    memset(f->payload, 0x77, sizeof(f->payload));
    make_packet(&pkt, RNIC_ROCE_RC_RDMA_WRITE_ONLY, false, 0, f->payload,
                sizeof(f->payload));
    memcpy(pkt.net.smac, a->mac, 6);
    memcpy(pkt.net.dmac, b->mac, 6);
    tv_gid_bytes(pkt.net.sgid, a->ctx[0], 1);
    tv_gid_bytes(pkt.net.dgid, b->ctx[0], 2);
    pkt.dest_qp = f->p.b->qpn;
    pkt.psn = 0xfffff0;
    pkt.reth.va = b->buf[0] + 4096;
    pkt.reth.rkey = b->mr[0];
    pkt.reth.dma_len = sizeof(f->payload);
    g_assert_true(rnic_wire_hdr_from_packet(&pkt, &f->h));
    f->h.payload = f->payload;
}

static void rx_fini(RxFix *f)
{
    qp_pair_free(&f->p);
    wire_fini(&f->w);
}

static uint64_t bstat(RxFix *f, unsigned s)
{
    return rnic_engine_stat(f->w.n[1].h->engine, s);
}

/* Encode h (optionally with a tweak of the bytes) and give it to B. */
static bool rx_send(RxFix *f, const RnicRoceHdr *h, size_t trunc)
{
    uint8_t frame[2048];
    struct iovec iov[2];
    size_t len;

    g_assert_cmpint(rnic_roce_encode_linear(h, frame, sizeof(frame), &len),
                    ==, RNIC_ROCE_OK);
    if (trunc) {
        len = trunc;
    }
    /* in two pieces: the receive path gathers them */
    iov[0].iov_base = frame;
    iov[0].iov_len = MIN(len, 30);
    iov[1].iov_base = frame + iov[0].iov_len;
    iov[1].iov_len = len - iov[0].iov_len;
    return rnic_engine_receive(f->w.n[1].h->engine, iov, 2);
}

static void test_rx_drops(void)
{
    RxFix f;
    RnicRoceHdr h;
    uint8_t *target;
    uint64_t eth0;

    rx_init(&f);
    target = test_ptr(f.w.n[1].h, f.w.n[1].buf[0] + 4096);
    eth0 = bstat(&f, RNIC_STAT_ETH_RX_DISABLED);

    /* not for us: another MAC, another IP, another port -> Ethernet */
    h = f.h;
    h.dmac[5] ^= 0x40;
    g_assert_true(rx_send(&f, &h, 0));
    h = f.h;
    h.dgid[15] = 99;
    g_assert_true(rx_send(&f, &h, 0));
    g_assert_cmpuint(bstat(&f, RNIC_STAT_RX_FRAMES), ==, 0);
    g_assert_cmpuint(bstat(&f, RNIC_STAT_ETH_RX_DISABLED), ==, eth0 + 2);

    /* truncated in the BTH, in the RETH, before the ICRC */
    g_assert_true(rx_send(&f, &f.h, 14 + 20 + 8 + 6));
    g_assert_true(rx_send(&f, &f.h, 14 + 20 + 8 + 12 + 8));
    g_assert_true(rx_send(&f, &f.h, 14 + 20 + 8 + 12 + 16 + 64 + 2));
    g_assert_cmpuint(bstat(&f, RNIC_STAT_RX_ERR_HEADER), ==, 3);
    /* P_Key of another partition */
    h = f.h;
    h.pkey = 0x8001;
    rx_send(&f, &h, 0);
    g_assert_cmpuint(bstat(&f, RNIC_STAT_RX_ERR_PKEY), ==, 1);
    /* a VLAN without network context */
    h = f.h;
    h.vlan_present = true;
    h.vlan_id = 77;
    rx_send(&f, &h, 0);
    g_assert_cmpuint(bstat(&f, RNIC_STAT_RX_ERR_NET), ==, 1);
    /* B's GID of context 0, tagged with VLAN 100 (context 1) */
    h = f.h;
    h.vlan_present = true;
    h.vlan_id = 100;
    rx_send(&f, &h, 0);
    g_assert_cmpuint(bstat(&f, RNIC_STAT_RX_ERR_GID), ==, 1);
    /* no such QP */
    h = f.h;
    h.dest_qp = 0x4242;
    rx_send(&f, &h, 0);
    g_assert_cmpuint(bstat(&f, RNIC_STAT_RX_ERR_QPN), ==, 1);
    /* RC from someone else than the QP's peer */
    h = f.h;
    h.sgid[15] = 3;
    rx_send(&f, &h, 0);
    g_assert_cmpuint(bstat(&f, RNIC_STAT_RX_ERR_ADDR), ==, 1);
    /* UD opcode to an RC QP; a UC opcode; a CNP */
    h = f.h;
    h.opcode = RNIC_ROCE_UD_SEND_ONLY;
    rx_send(&f, &h, 0);
    h = f.h;
    h.opcode = RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_UC,
                                RNIC_ROCE_OP_RDMA_WRITE_ONLY);
    rx_send(&f, &h, 0);
    h = f.h;
    h.opcode = RNIC_ROCE_OPCODE_CNP;
    h.payload_len = 0;
    rx_send(&f, &h, 0);
    g_assert_cmpuint(bstat(&f, RNIC_STAT_RX_ERR_OPCODE), ==, 3);
    /* nothing reached memory */
    g_assert_cmpuint(target[0], ==, 0);
    g_assert_cmpuint(bstat(&f, RNIC_STAT_RX_DROPPED), ==, 3 + 1 + 1 + 1 + 1 +
                     1 + 3);
    g_assert_cmpuint(bstat(&f, RNIC_STAT_RX_FRAMES), ==, 11);
    g_assert_cmpuint(f.w.n[1].h->frames->len, ==, 0);

    /* the valid frame itself is executed and acknowledged */
    rx_send(&f, &f.h, 0);
    g_assert_cmpmem(target, 64, f.payload, 64);
    test_host_run(f.w.n[1].h);
    g_assert_cmpuint(f.w.n[1].h->frames->len, ==, 1);
    rx_fini(&f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/wire/adapter", test_adapter);
    g_test_add_func("/rnic/wire/adapter-mixed", test_adapter_mixed);
    g_test_add_func("/rnic/wire/verbs", test_verbs);
    g_test_add_func("/rnic/wire/verbs-vlan", test_verbs_vlan);
    g_test_add_func("/rnic/wire/ipv6", test_ipv6);
    g_test_add_func("/rnic/wire/ud-gsi", test_ud_gsi);
    g_test_add_func("/rnic/wire/lossy", test_lossy);
    g_test_add_func("/rnic/wire/window", test_window);
    g_test_add_func("/rnic/wire/retry-exceeded", test_retry_exceeded);
    g_test_add_func("/rnic/wire/rnr-exceeded", test_rnr_exceeded);
    g_test_add_func("/rnic/wire/rx-drops", test_rx_drops);
    return g_test_run();
}
