/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtests of RoCEv2 on the wire: several QEMU instances, each with an rnic,
 * on one Ethernet segment through QEMU's network backends.
 *
 *  two-vms      '-netdev stream' over a unix socket: every verb across the
 *               wire (RC in an untagged and a VLAN context, fast-register +
 *               SEND with invalidate, UD with the GRH, QP1), data verified
 *  three-vms    '-netdev socket,mcast=…' (a hub): A talks RC and UD to B
 *               and C at the same time; each drops the others' frames
 *  capture      '-object filter-dump': tshark decodes the frames as RoCE
 *               with the expected opcodes (skipped without tshark)
 *  faults       a relay (rnic-relay.c) between two '-netdev dgram' peers
 *               drops, duplicates, reorders and corrupts frames; RC traffic
 *               completes exactly once, in order, data verified; every
 *               corrupted frame is rejected by the ICRC. Rates: default
 *               drop 5 %, dup 2 %, reorder 5 %, corrupt 3 %, or
 *               RNIC_WIRE_FAULTS="drop=0.15,dup=0.05,reorder=0.1,corrupt=0.05";
 *               operations: 250 or RNIC_WIRE_FAULT_OPS (at most 340)
 *  retry-exceeded, rnr-exceeded   the error completions, no hang
 *  malformed    the test itself is the peer (a unix datagram socket) and
 *               sends crafted frames: each is dropped with its reason
 *               counted or NAKed (the NAK checked on the wire), memory
 *               outside the registered region never touched
 *  hub          two rnics of one VM on QEMU's internal hub
 *  perf         (-m perf) WRITE/SEND throughput and small-message latency
 *               between two QEMU processes (docs/benchmarks.md);
 *               RNIC_PERF_SECS per measurement (default 2)
 *
 * Plain GTest cases registered from the rnic-qos-test binary: they boot
 * their own machines. Timers run on QEMU's virtual clock, which the tests
 * step on every instance while they wait.
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include <sys/un.h>
#include <poll.h>
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci-pc.h"
#include "qemu/module.h"
#include "qemu/bswap.h"
#include "rnic-qos.h"
#include "rnic-verbs.h"
#include "rnic-relay.h"
#include "rnic-roce.h"

#define WV_BUF          (8u << 20)  /* registered buffer per VM */
#define WV_CQ_LOG       12
#define WV_WAIT_US      (60 * G_USEC_PER_SEC)
#define WV_STEP_NS      20000       /* virtual time per wait round */

/* ---------------------------------------------------------------------- */
/* VMs                                                                    */
/* ---------------------------------------------------------------------- */

typedef struct WVm {
    QOSState *qs;
    QTestState *qts;
    QRnic d;
    uint8_t mac[6];
    uint8_t host;               /* GIDs ::ffff:10.<vlan>.0.<host> */
    uint32_t vlan[2];           /* of the two network contexts */
    uint32_t ctx[2];
    uint32_t pd[2];
    TvCq *cq;                   /* every QP's send and receive CQ */
    uint64_t buf;               /* WV_BUF bytes, registered in both PDs */
    uint32_t mr[2];
} WVm;

/* Every VM alive: the waits step all their clocks. */
static GPtrArray *wv_all;

typedef struct WvPath {
    uint8_t mtu;
    uint8_t timeout;
    uint8_t retry;
    uint8_t rnr_retry;
} WvPath;

static const WvPath path_1k = { RNIC_MTU_1024, 12, 7, 7 };
static const WvPath path_4k = { RNIC_MTU_4096, 12, 7, 7 };

static void wv_mac(uint8_t *mac, uint8_t host)
{
    static const uint8_t base[6] = { 0x52, 0x54, 0x00, 0x77, 0x00, 0x00 };

    memcpy(mac, base, 6);
    mac[5] = host;
}

/*
 * Map the rnic at 'devfn' of machine 'qs' (MAC 52:54:00:77:00:<host>) and
 * create its objects: network contexts for VLAN 0 and 'vlan1' with a GID
 * each (index = context), a PD each, one CQ, a buffer registered in both.
 */
static WVm *wv_attach(QOSState *qs, int devfn, uint8_t host, uint32_t vlan1)
{
    WVm *vm = g_new0(WVm, 1);
    QRnic *d = &vm->d;
    int i;

    vm->host = host;
    wv_mac(vm->mac, host);
    vm->qs = qs;
    vm->qts = qs->qts;
    rnic_attach(d, qs->pcibus, devfn, &qs->alloc);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_MAGIC), ==, RNIC_MAGIC);

    vm->vlan[0] = 0;
    vm->vlan[1] = vlan1;
    for (i = 0; i < 2; i++) {
        vm->ctx[i] = tv_net_ctx(d, vm->vlan[i]);
        qv_gid(d, i, vm->ctx[i], vm->vlan[i], host);
        vm->pd[i] = tv_pd(d, vm->ctx[i], 0);
    }
    vm->cq = tv_cq(d, WV_CQ_LOG, RNIC_HANDLE_NONE, 0);
    vm->buf = qv_alloc(d, WV_BUF, 4096);
    for (i = 0; i < 2; i++) {
        vm->mr[i] = tv_reg_mr(d, vm->pd[i], vm->buf, WV_BUF,
                              RNIC_ACCESS_ALL, 0, NULL);
    }
    if (!wv_all) {
        wv_all = g_ptr_array_new();
    }
    g_ptr_array_add(wv_all, vm);
    return vm;
}

/* Boot a pc machine whose rnic (04.0) is on '-netdev <netdev>,id=n0'. */
static WVm *wv_boot(uint8_t host, const char *netdev, const char *extra,
                    uint32_t vlan1)
{
    QOSState *qs = qtest_pc_boot("-M pc -m 512 -netdev %s,id=n0 -device rnic,"
                                 "netdev=n0,addr=04.0,mac=52:54:00:77:00:%02x "
                                 "%s", netdev, host, extra ? extra : "");

    return wv_attach(qs, QPCI_DEVFN(4, 0), host, vlan1);
}

static void wv_quit(WVm *vm)
{
    g_ptr_array_remove(wv_all, vm);
    qtest_shutdown(vm->qs);
    g_free(vm->cq);
    g_free(vm);
}

/* Advance every VM's virtual clock (retransmission and RNR timers). */
static void wv_tick(uint64_t ns)
{
    guint i;

    for (i = 0; i < wv_all->len; i++) {
        WVm *vm = g_ptr_array_index(wv_all, i);

        qtest_clock_step(vm->qts, ns);
    }
}

static struct rnic_cqe wv_wait(WVm *vm)
{
    gint64 end = g_get_monotonic_time() + WV_WAIT_US;
    struct rnic_cqe c;

    while (!tv_poll(&vm->d, vm->cq, &c, 1)) {
        g_assert(g_get_monotonic_time() < end);
        wv_tick(WV_STEP_NS);
    }
    return c;
}

/* The next CQE must be a successful one with these values. */
static struct rnic_cqe wv_expect(WVm *vm, uint64_t wr_id, uint8_t opcode,
                                 uint32_t len)
{
    struct rnic_cqe c = wv_wait(vm);

    g_assert_cmphex(c.wr_id, ==, wr_id);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, opcode);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, len);
    return c;
}

static void wv_gid(uint8_t gid[16], WVm *vm, int ci)
{
    qv_gid_bytes(gid, vm->vlan[ci], vm->host);
}

/* RESET -> RTS of an RC QP of context 'ci' towards 'peer''s QPN 'dqpn'. */
static void wv_rc_connect(WVm *vm, TvQp *qp, int ci, WVm *peer, uint32_t dqpn,
                          const WvPath *p)
{
    TvRcPath rp = {
        .sgid_index = ci,
        .dest_qpn = dqpn,
        .psn = 0xfffff0,        /* PSNs wrap in every test */
        .mtu = p->mtu,
        .timeout = p->timeout,
        .retry_cnt = p->retry,
        .rnr_retry = p->rnr_retry,
        .rd_atomic = 16,
        .access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
                  RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC,
    };

    wv_gid(rp.dgid, peer, ci);
    memcpy(rp.dmac, peer->mac, 6);
    tv_rc_connect_path(&vm->d, qp, &rp);
}

typedef struct WvPair {
    TvQp *a, *b;
} WvPair;

static WvPair wv_rc_pair(WVm *a, WVm *b, int ci, const WvPath *p, int log)
{
    WvPair r;

    r.a = tv_qp(&a->d, RNIC_QPT_RC, a->pd[ci], a->cq, a->cq, NULL, log, 0);
    r.b = tv_qp(&b->d, RNIC_QPT_RC, b->pd[ci], b->cq, b->cq, NULL, log, 0);
    wv_rc_connect(a, r.a, ci, b, r.b->qpn, p);
    wv_rc_connect(b, r.b, ci, a, r.a->qpn, p);
    return r;
}

static void wv_pair_free(WvPair *p)
{
    g_free(p->a);
    g_free(p->b);
}

static void pattern(uint8_t *p, size_t len, uint32_t seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
    }
}

/* Fill guest [addr, addr + len) of 'vm' with pattern 'seed'. */
static void wv_fill(WVm *vm, uint64_t addr, size_t len, uint32_t seed)
{
    g_autofree uint8_t *p = g_malloc(len);

    pattern(p, len, seed);
    qtest_bufwrite(vm->qts, addr, p, len);
}

/* Guest memory of 'vm' must hold pattern 'seed'. */
static void wv_check(WVm *vm, uint64_t addr, size_t len, uint32_t seed)
{
    g_autofree uint8_t *want = g_malloc(len);
    g_autofree uint8_t *got = g_malloc(len);

    pattern(want, len, seed);
    qtest_bufread(vm->qts, addr, got, len);
    g_assert_cmpmem(got, len, want, len);
}

/* Error counters of the wire: all zero on a clean segment. */
static void wv_assert_clean(WVm *vm)
{
    unsigned s;

    for (s = RNIC_STAT_RX_ERR_HEADER; s <= RNIC_STAT_RX_ERR_OPCODE; s++) {
        g_assert_cmpuint(tv_stat(&vm->d, s), ==, 0);
    }
    g_assert_cmpuint(tv_stat(&vm->d, RNIC_STAT_RX_DROPPED), ==, 0);
    g_assert_cmpuint(tv_stat(&vm->d, RNIC_STAT_TX_DROPPED), ==, 0);
}

typedef struct Seg {
    char *dir;
} Seg;

static void seg_init(Seg *s)
{
    s->dir = g_dir_make_tmp("rnic-wire-XXXXXX", NULL);
    g_assert(s->dir);
}

static char *seg_path(Seg *s, const char *name)
{
    return g_strdup_printf("%s/%s", s->dir, name);
}

static void seg_free(Seg *s)
{
    rnic_tmpdir_remove(s->dir);
    g_free(s->dir);
}

/* '-netdev stream' over a unix socket: A listens, B connects. */
static void boot_stream_pair(Seg *s, WVm **a, WVm **b, const char *extra_a)
{
    g_autofree char *sock = seg_path(s, "stream.sock");
    g_autofree char *na = g_strdup_printf("stream,server=on,addr.type=unix,"
                                          "addr.path=%s", sock);
    g_autofree char *nb = g_strdup_printf("stream,server=off,addr.type=unix,"
                                          "addr.path=%s", sock);

    *a = wv_boot(1, na, extra_a, 100);
    *b = wv_boot(2, nb, NULL, 100);
}

/* ---------------------------------------------------------------------- */
/* Every verb across the wire                                             */
/* ---------------------------------------------------------------------- */

/* The RC verbs from A to B on a pair of context 'ci', data checked. */
static void rc_verbs(WVm *a, WVm *b, int ci, const WvPath *path)
{
    WvPair p = wv_rc_pair(a, b, ci, path, 6);
    const uint32_t len = 10000;
    struct rnic_sq_wqe w;
    struct rnic_sge s[2], r;
    struct rnic_cqe c;
    uint64_t v;
    uint32_t fr, stag, mr = a->mr[ci], rmr = b->mr[ci];
    uint64_t region;

    /*
     * RDMA WRITE, several packets (also the first frames: a stream peer
     * connects asynchronously, RC retransmits whatever went nowhere)
     */
    wv_fill(a, a->buf, len, 1);
    s[0] = tv_sge(a->buf, len, mr);
    w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = b->buf + 0x100000;
    w.rdma.rkey = rmr;
    tv_post_send(&a->d, p.a, &w, s, NULL);
    wv_expect(a, 1, RNIC_WC_RDMA_WRITE, len);
    wv_check(b, b->buf + 0x100000, len, 1);

    /* WRITE with immediate: consumes a receive at B */
    tv_post_recv(&b->d, p.b, 0x201, NULL, 0);
    w = tv_wqe(2, RNIC_WR_RDMA_WRITE_IMM, 1);
    w.rdma.remote_addr = b->buf + 0x110000;
    w.rdma.rkey = rmr;
    w.imm_or_inv = cpu_to_be32(0xfeedf00d);
    tv_post_send(&a->d, p.a, &w, s, NULL);
    wv_expect(a, 2, RNIC_WC_RDMA_WRITE, len);
    c = wv_expect(b, 0x201, RNIC_WC_RECV_RDMA_WITH_IMM, len);
    g_assert_true(c.flags & RNIC_CQE_WITH_IMM);
    g_assert_cmphex(c.imm_or_inv, ==, cpu_to_be32(0xfeedf00d));
    wv_check(b, b->buf + 0x110000, len, 1);

    /* SEND from two SGEs, SEND with immediate */
    wv_fill(a, a->buf + 0x20000, 3000, 2);
    s[1] = tv_sge(a->buf + 0x20000, 3000, mr);
    r = tv_sge(b->buf + 0x120000, 20000, rmr);
    tv_post_recv(&b->d, p.b, 0x202, &r, 1);
    w = tv_wqe(3, RNIC_WR_SEND, 2);
    tv_post_send(&a->d, p.a, &w, s, NULL);
    wv_expect(a, 3, RNIC_WC_SEND, len + 3000);
    wv_expect(b, 0x202, RNIC_WC_RECV, len + 3000);
    wv_check(b, b->buf + 0x120000, len, 1);
    wv_check(b, b->buf + 0x120000 + len, 3000, 2);
    r = tv_sge(b->buf + 0x130000, 4096, rmr);
    tv_post_recv(&b->d, p.b, 0x203, &r, 1);
    w = tv_wqe(4, RNIC_WR_SEND_IMM, 1);
    w.imm_or_inv = cpu_to_be32(0x01020304);
    s[0].length = cpu_to_le32(777);
    tv_post_send(&a->d, p.a, &w, s, NULL);
    wv_expect(a, 4, RNIC_WC_SEND, 777);
    c = wv_expect(b, 0x203, RNIC_WC_RECV, 777);
    g_assert_cmphex(c.imm_or_inv, ==, cpu_to_be32(0x01020304));
    wv_check(b, b->buf + 0x130000, 777, 1);

    /* inline SEND the other way */
    r = tv_sge(a->buf + 0x140000, 100, mr);
    tv_post_recv(&a->d, p.a, 0x101, &r, 1);
    w = tv_wqe(5, RNIC_WR_SEND, 0);
    w.flags |= RNIC_WQE_INLINE;
    w.inline_len = cpu_to_le32(41);
    tv_post_send(&b->d, p.b, &w, NULL,
                 "RoCEv2 from B to A, inline, 41 bytes!!!!");
    wv_expect(b, 5, RNIC_WC_SEND, 41);
    wv_expect(a, 0x101, RNIC_WC_RECV, 41);
    {
        char got[41];

        qtest_memread(a->qts, a->buf + 0x140000, got, 41);
        g_assert_cmpmem(got, 41, "RoCEv2 from B to A, inline, 41 bytes!!!!",
                        41);
    }

    /* RDMA READ */
    wv_fill(b, b->buf + 0x150000, len, 3);
    r = tv_sge(a->buf + 0x150000, len, mr);
    w = tv_wqe(6, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = b->buf + 0x150000;
    w.rdma.rkey = rmr;
    tv_post_send(&a->d, p.a, &w, &r, NULL);
    wv_expect(a, 6, RNIC_WC_RDMA_READ, len);
    wv_check(a, a->buf + 0x150000, len, 3);

    /* atomics on a word of B */
    qtest_writeq(b->qts, b->buf + 0x160000, 1000);
    r = tv_sge(a->buf + 0x160000, 8, mr);
    w = tv_wqe(7, RNIC_WR_ATOMIC_FETCH_ADD, 1);
    w.atomic.remote_addr = b->buf + 0x160000;
    w.atomic.rkey = rmr;
    w.atomic.compare_add = 24;
    tv_post_send(&a->d, p.a, &w, &r, NULL);
    wv_expect(a, 7, RNIC_WC_FETCH_ADD, 8);
    g_assert_cmpuint(qtest_readq(a->qts, a->buf + 0x160000), ==, 1000);
    w = tv_wqe(8, RNIC_WR_ATOMIC_CMP_SWP, 1);
    w.atomic.remote_addr = b->buf + 0x160000;
    w.atomic.rkey = rmr;
    w.atomic.compare_add = 1024;
    w.atomic.swap = 0xabcdef;
    tv_post_send(&a->d, p.a, &w, &r, NULL);
    wv_expect(a, 8, RNIC_WC_COMP_SWAP, 8);
    g_assert_cmpuint(qtest_readq(a->qts, a->buf + 0x160000), ==, 1024);
    v = qtest_readq(b->qts, b->buf + 0x160000);
    g_assert_cmphex(v, ==, 0xabcdef);

    /* fast-register at B, WRITE through it, SEND with invalidate */
    fr = tv_alloc_mr(&b->d, b->pd[ci], 4, 0x01);
    region = qv_alloc(&b->d, 8192, 4096);
    stag = RNIC_STAG(RNIC_STAG_INDEX(fr), 0x42);
    w = tv_fast_reg_wqe(&b->d, 0x210, stag, 0x7000000, region, 2,
                        RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
    tv_post_send(&b->d, p.b, &w, NULL, NULL);
    wv_expect(b, 0x210, RNIC_WC_REG_MR, 0);
    s[0] = tv_sge(a->buf, 300, mr);
    w = tv_wqe(9, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = 0x7000000 + 4000;
    w.rdma.rkey = stag;
    tv_post_send(&a->d, p.a, &w, s, NULL);
    wv_expect(a, 9, RNIC_WC_RDMA_WRITE, 300);
    wv_check(b, region + 4000, 300, 1);
    tv_post_recv(&b->d, p.b, 0x211, NULL, 0);
    w = tv_wqe(10, RNIC_WR_SEND_INV, 0);
    w.imm_or_inv = cpu_to_le32(stag);
    tv_post_send(&a->d, p.a, &w, NULL, NULL);
    wv_expect(a, 10, RNIC_WC_SEND, 0);
    c = wv_expect(b, 0x211, RNIC_WC_RECV, 0);
    g_assert_true(c.flags & RNIC_CQE_WITH_INV);
    g_assert_cmphex(le32_to_cpu(c.imm_or_inv), ==, stag);
    /* the invalidated rkey is refused: NAK, both QPs to error */
    w = tv_wqe(11, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = 0x7000000;
    w.rdma.rkey = stag;
    tv_post_send(&a->d, p.a, &w, s, NULL);
    c = wv_wait(a);
    g_assert_cmpuint(c.wr_id, ==, 11);
    g_assert_cmpuint(c.status, ==, RNIC_WC_REM_ACCESS_ERR);
    wv_pair_free(&p);
}

/* UD from A to B with the GRH, and a MAD to B's QP1 of context 'ci'. */
static void ud_verbs(WVm *a, WVm *b)
{
    TvQp *ua = tv_qp(&a->d, RNIC_QPT_UD, a->pd[0], a->cq, a->cq, NULL, 4, 0);
    TvQp *ub = tv_qp(&b->d, RNIC_QPT_UD, b->pd[0], b->cq, b->cq, NULL, 4, 0);
    TvQp *ua1 = tv_qp(&a->d, RNIC_QPT_UD, a->pd[1], a->cq, a->cq, NULL, 4, 0);
    TvQp *gsi = tv_qp(&b->d, RNIC_QPT_GSI, b->pd[1], b->cq, b->cq, NULL, 4, 0);
    struct rnic_sq_wqe w;
    struct rnic_sge s, r;
    struct rnic_cqe c;
    uint8_t grh[40], gid[16];

    tv_ud_ready(&a->d, ua, 0x5555);
    tv_ud_ready(&b->d, ub, 0x5555);
    tv_ud_ready(&a->d, ua1, 0x80010000);
    tv_ud_ready(&b->d, gsi, 0x80010000);
    g_assert_cmpuint(gsi->qpn, ==, 1);

    wv_fill(a, a->buf + 0x200000, 900, 4);
    s = tv_sge(a->buf + 0x200000, 900, a->mr[0]);
    r = tv_sge(b->buf + 0x200000, 2048, b->mr[0]);
    tv_post_recv(&b->d, ub, 0x301, &r, 1);
    w = tv_wqe(20, RNIC_WR_SEND_IMM, 1);
    w.imm_or_inv = cpu_to_be32(0x11);
    w.ud.remote_qpn = cpu_to_le32(ub->qpn);
    w.ud.remote_qkey = cpu_to_le32(0x5555);
    w.ud.av.sgid_index = 0;
    wv_gid(w.ud.av.dgid, b, 0);
    memcpy(w.ud.av.dmac, b->mac, 6);
    tv_post_send(&a->d, ua, &w, &s, NULL);
    wv_expect(a, 20, RNIC_WC_SEND, 900);
    c = wv_expect(b, 0x301, RNIC_WC_RECV, 940);
    g_assert_true(c.flags & RNIC_CQE_GRH);
    g_assert_true(c.flags & RNIC_CQE_IPV4);
    g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, ua->qpn);
    g_assert_cmpmem(c.smac, 6, a->mac, 6);
    qtest_memread(b->qts, b->buf + 0x200000, grh, 40);
    /* IPv4: 20 zero bytes, then the header with A's and B's addresses */
    g_assert_cmpuint(grh[20], ==, 0x45);
    g_assert_cmpuint(grh[29], ==, 17);
    wv_gid(gid, a, 0);
    g_assert_cmpmem(grh + 32, 4, gid + 12, 4);
    wv_gid(gid, b, 0);
    g_assert_cmpmem(grh + 36, 4, gid + 12, 4);
    wv_check(b, b->buf + 0x200000 + 40, 900, 4);

    /* a MAD to QP1 of B's VLAN context */
    r = tv_sge(b->buf + 0x210000, 512, b->mr[1]);
    tv_post_recv(&b->d, gsi, 0x302, &r, 1);
    s = tv_sge(a->buf + 0x200000, 256, a->mr[1]);
    w = tv_wqe(21, RNIC_WR_SEND, 1);
    w.ud.remote_qpn = cpu_to_le32(1);
    w.ud.remote_qkey = cpu_to_le32(0x80010000);
    w.ud.av.sgid_index = 1;
    wv_gid(w.ud.av.dgid, b, 1);
    memcpy(w.ud.av.dmac, b->mac, 6);
    tv_post_send(&a->d, ua1, &w, &s, NULL);
    wv_expect(a, 21, RNIC_WC_SEND, 256);
    c = wv_expect(b, 0x302, RNIC_WC_RECV, 296);
    g_assert_cmpuint(le32_to_cpu(c.qp_num), ==, 1);
    g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, ua1->qpn);
    g_assert_true(c.flags & RNIC_CQE_VLAN);
    g_assert_cmpuint(le16_to_cpu(c.vlan_id), ==, b->vlan[1]);
    wv_check(b, b->buf + 0x210000 + 40, 256, 4);
    g_free(ua);
    g_free(ub);
    g_free(ua1);
    g_free(gsi);
}

static void test_two_vms(void)
{
    Seg seg;
    WVm *a, *b;

    seg_init(&seg);
    boot_stream_pair(&seg, &a, &b, NULL);
    rc_verbs(a, b, 0, &path_1k);        /* untagged */
    rc_verbs(a, b, 1, &path_4k);        /* 802.1Q VLAN 100 */
    ud_verbs(a, b);
    /* only the NAKed WRITEs' frames were refused (by the responder) */
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_RX_ERR_ICRC), ==, 0);
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_RX_ERR_HEADER), ==, 0);
    g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_RX_ERR_ICRC), ==, 0);
    g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_TX_DROPPED), ==, 0);
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_RX_FRAMES), >, 40);
    /* RoCE never reached the Ethernet function's rings */
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_ETH_RX_DISABLED), ==, 0);
    wv_quit(a);
    wv_quit(b);
    seg_free(&seg);
}

/* Two rnics of one VM on QEMU's internal hub: delivery within a process. */
static void test_hub(void)
{
    QOSState *qs = qtest_pc_boot("-M pc -m 512 "
        "-netdev hubport,id=p0,hubid=0 -netdev hubport,id=p1,hubid=0 "
        "-device rnic,netdev=p0,addr=04.0,mac=52:54:00:77:00:01 "
        "-device rnic,netdev=p1,addr=05.0,mac=52:54:00:77:00:02");
    WVm *a = wv_attach(qs, QPCI_DEVFN(4, 0), 1, 100);
    WVm *b = wv_attach(qs, QPCI_DEVFN(5, 0), 2, 100);

    rc_verbs(a, b, 0, &path_1k);
    rc_verbs(b, a, 1, &path_4k);
    ud_verbs(a, b);
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_RX_ERR_ICRC), ==, 0);
    g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_TX_DROPPED), ==, 0);
    g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_RX_FRAMES), >, 20);
    g_ptr_array_remove(wv_all, a);
    g_ptr_array_remove(wv_all, b);
    qtest_shutdown(qs);
    g_free(a->cq);
    g_free(b->cq);
    g_free(a);
    g_free(b);
}

/* ---------------------------------------------------------------------- */
/* Three VMs on one segment                                               */
/* ---------------------------------------------------------------------- */

static void test_three_vms(void)
{
    guint32 r = g_random_int();
    g_autofree char *nd = g_strdup_printf("socket,mcast=239.255.%u.%u:%u,"
                                          "localaddr=127.0.0.1",
                                          (r >> 8) & 0xff, (r & 0xff) | 1,
                                          20000 + (r >> 16) % 20000);
    WVm *vm[3];
    WvPair p[2];
    TvQp *ud[3];
    struct rnic_sq_wqe w;
    struct rnic_sge s, rs;
    int i, j;
    const uint32_t len = 64 * 1024;

    for (i = 0; i < 3; i++) {
        vm[i] = wv_boot(i + 1, nd, NULL, 100);
    }
    /* A to B and A to C at the same time: WRITE, READ, SEND each */
    for (i = 0; i < 2; i++) {
        WVm *peer = vm[i + 1];

        p[i] = wv_rc_pair(vm[0], peer, 0, &path_4k, 6);
        wv_fill(vm[0], vm[0]->buf + i * 0x100000, len, 10 + i);
        wv_fill(peer, peer->buf + 0x200000, len, 20 + i);
        rs = tv_sge(peer->buf + 0x300000, len, peer->mr[0]);
        tv_post_recv(&peer->d, p[i].b, 0x500 + i, &rs, 1);
    }
    for (i = 0; i < 2; i++) {
        WVm *peer = vm[i + 1];

        s = tv_sge(vm[0]->buf + i * 0x100000, len, vm[0]->mr[0]);
        w = tv_wqe(0x10 + i, RNIC_WR_RDMA_WRITE, 1);
        w.rdma.remote_addr = peer->buf + 0x100000;
        w.rdma.rkey = peer->mr[0];
        tv_post_send(&vm[0]->d, p[i].a, &w, &s, NULL);
        w = tv_wqe(0x20 + i, RNIC_WR_SEND, 1);
        tv_post_send(&vm[0]->d, p[i].a, &w, &s, NULL);
        rs = tv_sge(vm[0]->buf + 0x400000 + i * 0x100000, len, vm[0]->mr[0]);
        w = tv_wqe(0x30 + i, RNIC_WR_RDMA_READ, 1);
        w.rdma.remote_addr = peer->buf + 0x200000;
        w.rdma.rkey = peer->mr[0];
        tv_post_send(&vm[0]->d, p[i].a, &w, &rs, NULL);
    }
    /* UD from A to both */
    for (i = 0; i < 3; i++) {
        ud[i] = tv_qp(&vm[i]->d, RNIC_QPT_UD, vm[i]->pd[0], vm[i]->cq,
                      vm[i]->cq, NULL, 4, 0);
        tv_ud_ready(&vm[i]->d, ud[i], 0x77);
    }
    for (i = 1; i < 3; i++) {
        rs = tv_sge(vm[i]->buf + 0x600000, 2048, vm[i]->mr[0]);
        tv_post_recv(&vm[i]->d, ud[i], 0x600 + i, &rs, 1);
    }
    for (i = 1; i < 3; i++) {
        s = tv_sge(vm[0]->buf, 1000, vm[0]->mr[0]);
        w = tv_wqe(0x40 + i, RNIC_WR_SEND, 1);
        w.ud.remote_qpn = cpu_to_le32(ud[i]->qpn);
        w.ud.remote_qkey = cpu_to_le32(0x77);
        wv_gid(w.ud.av.dgid, vm[i], 0);
        memcpy(w.ud.av.dmac, vm[i]->mac, 6);
        tv_post_send(&vm[0]->d, ud[0], &w, &s, NULL);
    }

    /* A: per QP in order; the two QPs' completions interleave */
    {
        uint64_t next[2] = { 0x10, 0x11 };
        bool ud_done[3] = { false };
        int n;

        for (n = 0; n < 8; n++) {
            struct rnic_cqe c = wv_wait(vm[0]);
            uint64_t id = c.wr_id;

            g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
            if (id >= 0x40) {
                ud_done[id - 0x40] = true;
                continue;
            }
            i = id & 1;
            g_assert_cmphex(id, ==, next[i]);
            next[i] += 0x10;
        }
        g_assert_true(ud_done[1] && ud_done[2]);
        g_assert_cmphex(next[0], ==, 0x40);
        g_assert_cmphex(next[1], ==, 0x41);
    }
    for (i = 0; i < 2; i++) {
        WVm *peer = vm[i + 1];
        struct rnic_cqe c[2];

        c[0] = wv_wait(peer);
        c[1] = wv_wait(peer);
        if (c[0].wr_id > c[1].wr_id) {
            struct rnic_cqe t = c[0];

            c[0] = c[1];
            c[1] = t;
        }
        g_assert_cmphex(c[0].wr_id, ==, 0x500 + i);
        g_assert_cmpuint(le32_to_cpu(c[0].byte_len), ==, len);
        g_assert_cmphex(c[1].wr_id, ==, 0x600 + i + 1);
        g_assert_cmpuint(le32_to_cpu(c[1].byte_len), ==, 1040);
        wv_check(peer, peer->buf + 0x100000, len, 10 + i);
        wv_check(peer, peer->buf + 0x300000, len, 10 + i);
        wv_check(peer, peer->buf + 0x600000 + 40, 1000, 10);
        wv_check(vm[0], vm[0]->buf + 0x400000 + i * 0x100000, len, 20 + i);
    }
    /* each saw the others' frames on the hub and left them alone */
    for (i = 0; i < 3; i++) {
        wv_assert_clean(vm[i]);
        g_assert_cmpuint(tv_stat(&vm[i]->d, RNIC_STAT_ETH_RX_DISABLED), >, 0);
    }
    for (i = 0; i < 2; i++) {
        wv_pair_free(&p[i]);
    }
    for (j = 0; j < 3; j++) {
        g_free(ud[j]);
        wv_quit(vm[j]);
    }
}

/* ---------------------------------------------------------------------- */
/* Capture                                                                */
/* ---------------------------------------------------------------------- */

static void test_capture(void)
{
    Seg seg;
    WVm *a, *b;
    WvPair p;
    g_autofree char *pcap = NULL, *extra = NULL, *out = NULL, *err = NULL;
    g_autofree char *tshark = g_find_program_in_path("tshark");
    struct rnic_sq_wqe w;
    struct rnic_sge s, r;
    int status;
    static const char *const want[] = {
        "6", "7", "8", "10", "11", "12", "13", "14", "15", "16", "17", "18",
        "19", "20", "4", "3", "0", "100",
    };
    gchar **lines;
    GHashTable *seen = g_hash_table_new_full(g_str_hash, g_str_equal,
                                             g_free, NULL);
    unsigned i, roce = 0;

    if (!tshark) {
        g_test_skip("tshark not installed: capture not decoded");
        return;
    }
    seg_init(&seg);
    pcap = seg_path(&seg, "a.pcap");
    extra = g_strdup_printf("-object filter-dump,id=f0,netdev=n0,file=%s",
                            pcap);
    boot_stream_pair(&seg, &a, &b, extra);
    p = wv_rc_pair(a, b, 0, &path_1k, 6);
    wv_fill(a, a->buf, 8192, 5);
    s = tv_sge(a->buf, 3000, a->mr[0]);
    /*
     * WRITE_FIRST/MIDDLE/LAST, WRITE_ONLY_IMM, READ request/responses
     * FIRST/MIDDLE/LAST and ONLY, atomics, SEND_FIRST/LAST_IMM, UD
     */
    w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = b->buf;
    w.rdma.rkey = b->mr[0];
    tv_post_send(&a->d, p.a, &w, &s, NULL);
    wv_expect(a, 1, RNIC_WC_RDMA_WRITE, 3000);
    s.length = cpu_to_le32(100);
    w.wr_id = 10;
    tv_post_send(&a->d, p.a, &w, &s, NULL);
    wv_expect(a, 10, RNIC_WC_RDMA_WRITE, 100);
    s.length = cpu_to_le32(3000);
    tv_post_recv(&b->d, p.b, 2, NULL, 0);
    w = tv_wqe(2, RNIC_WR_RDMA_WRITE_IMM, 0);
    w.rdma.remote_addr = b->buf;
    w.rdma.rkey = b->mr[0];
    tv_post_send(&a->d, p.a, &w, NULL, NULL);
    wv_expect(a, 2, RNIC_WC_RDMA_WRITE, 0);
    wv_expect(b, 2, RNIC_WC_RECV_RDMA_WITH_IMM, 0);
    r = tv_sge(a->buf + 0x10000, 3000, a->mr[0]);
    w = tv_wqe(3, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = b->buf;
    w.rdma.rkey = b->mr[0];
    tv_post_send(&a->d, p.a, &w, &r, NULL);
    wv_expect(a, 3, RNIC_WC_RDMA_READ, 3000);
    r.length = cpu_to_le32(100);
    w.wr_id = 4;
    tv_post_send(&a->d, p.a, &w, &r, NULL);
    wv_expect(a, 4, RNIC_WC_RDMA_READ, 100);
    r = tv_sge(a->buf + 0x20000, 8, a->mr[0]);
    w = tv_wqe(5, RNIC_WR_ATOMIC_FETCH_ADD, 1);
    w.atomic.remote_addr = b->buf + 0x30000;
    w.atomic.rkey = b->mr[0];
    tv_post_send(&a->d, p.a, &w, &r, NULL);
    wv_expect(a, 5, RNIC_WC_FETCH_ADD, 8);
    w.opcode = RNIC_WR_ATOMIC_CMP_SWP;
    w.wr_id = 6;
    tv_post_send(&a->d, p.a, &w, &r, NULL);
    wv_expect(a, 6, RNIC_WC_COMP_SWAP, 8);
    r = tv_sge(b->buf + 0x40000, 4096, b->mr[0]);
    tv_post_recv(&b->d, p.b, 7, &r, 1);
    w = tv_wqe(7, RNIC_WR_SEND_IMM, 1);
    tv_post_send(&a->d, p.a, &w, &s, NULL);
    wv_expect(a, 7, RNIC_WC_SEND, 3000);
    wv_expect(b, 7, RNIC_WC_RECV, 3000);
    tv_post_recv(&b->d, p.b, 8, &r, 1);
    s.length = cpu_to_le32(500);
    w = tv_wqe(8, RNIC_WR_SEND, 1);
    tv_post_send(&a->d, p.a, &w, &s, NULL);
    wv_expect(a, 8, RNIC_WC_SEND, 500);
    wv_expect(b, 8, RNIC_WC_RECV, 500);
    {
        TvQp *ua = tv_qp(&a->d, RNIC_QPT_UD, a->pd[0], a->cq, a->cq,
                         NULL, 4, 0);
        TvQp *ub = tv_qp(&b->d, RNIC_QPT_UD, b->pd[0], b->cq, b->cq,
                         NULL, 4, 0);

        tv_ud_ready(&a->d, ua, 9);
        tv_ud_ready(&b->d, ub, 9);
        tv_post_recv(&b->d, ub, 9, &r, 1);
        w = tv_wqe(9, RNIC_WR_SEND, 1);
        w.ud.remote_qpn = cpu_to_le32(ub->qpn);
        w.ud.remote_qkey = cpu_to_le32(9);
        wv_gid(w.ud.av.dgid, b, 0);
        memcpy(w.ud.av.dmac, b->mac, 6);
        tv_post_send(&a->d, ua, &w, &s, NULL);
        wv_expect(a, 9, RNIC_WC_SEND, 500);
        wv_expect(b, 9, RNIC_WC_RECV, 540);
        g_free(ua);
        g_free(ub);
    }
    wv_pair_free(&p);
    wv_quit(a);                 /* closes the capture */
    wv_quit(b);

    {
        g_autofree char *cmd = g_strdup_printf(
            "%s -r %s -o ip.check_checksum:TRUE --disable-protocol rpcordma "
            "-T fields -e frame.protocols -e infiniband.bth.opcode "
            "-e _ws.malformed -e ip.checksum.status", tshark, pcap);

        g_assert_true(g_spawn_command_line_sync(cmd, &out, &err, &status,
                                                NULL));
        g_assert_cmpint(status, ==, 0);
    }
    lines = g_strsplit(out, "\n", 0);
    for (i = 0; lines[i]; i++) {
        gchar **f = g_strsplit(lines[i], "\t", 0);

        if (f[0] && strstr(f[0], ":udp:infiniband")) {
            roce++;
            g_assert_nonnull(f[1]);
            g_hash_table_add(seen, g_strdup(f[1]));
            /* not malformed, IPv4 header checksum good (status 1) */
            g_assert_true(!f[2] || !*f[2]);
            g_assert_true(f[3] && !strcmp(f[3], "1"));
        }
        g_strfreev(f);
    }
    g_strfreev(lines);
    if (g_test_verbose()) {
        g_printerr("%u RoCE frames captured\n", roce);
    }
    g_assert_cmpuint(roce, >=, 20);
    for (i = 0; i < G_N_ELEMENTS(want); i++) {
        if (!g_hash_table_contains(seen, want[i])) {
            g_error("opcode %s not in the capture", want[i]);
        }
    }
    g_hash_table_destroy(seen);
    seg_free(&seg);
}

/* ---------------------------------------------------------------------- */
/* Faults on the wire                                                     */
/* ---------------------------------------------------------------------- */

typedef struct Lossy {
    Seg seg;
    WVm *a, *b;
    RnicRelay *relay;
} Lossy;

static void lossy_boot(Lossy *l, uint32_t seed)
{
    g_autofree char *pa = NULL, *pb = NULL, *na = NULL, *nb = NULL;

    seg_init(&l->seg);
    pa = seg_path(&l->seg, "a.sock");
    pb = seg_path(&l->seg, "b.sock");
    l->relay = rnic_relay_new(l->seg.dir, pa, pb, seed);
    na = g_strdup_printf("dgram,local.type=unix,local.path=%s,"
                         "remote.type=unix,remote.path=%s", pa,
                         rnic_relay_path(l->relay, 0));
    nb = g_strdup_printf("dgram,local.type=unix,local.path=%s,"
                         "remote.type=unix,remote.path=%s", pb,
                         rnic_relay_path(l->relay, 1));
    l->a = wv_boot(1, na, NULL, 100);
    l->b = wv_boot(2, nb, NULL, 100);
}

static void lossy_free(Lossy *l)
{
    if (l->a) {
        wv_quit(l->a);
    }
    if (l->b) {
        wv_quit(l->b);
    }
    rnic_relay_free(l->relay);
    seg_free(&l->seg);
}

/* Wait until the relay has seen no frame for 100 ms (wire quiet). */
static void lossy_settle(Lossy *l)
{
    RnicRelayStats s0, s1;
    unsigned last = ~0u;

    for (;;) {
        rnic_relay_get_stats(l->relay, 0, &s0);
        rnic_relay_get_stats(l->relay, 1, &s1);
        if (s0.frames + s1.frames == last) {
            return;
        }
        last = s0.frames + s1.frames;
        g_usleep(100000);
    }
}

/* Layout of the fault test in each VM's buffer (op k, 8 KiB slots). */
#define F_SLOT          8192u
#define F_SRC(k)        ((uint64_t)(k) * F_SLOT)                /* A, B */
#define F_DST(n, k)     ((uint64_t)(n) * F_SLOT + F_SLOT * (k)) /* A, B */
#define F_RES(n, k)     ((uint64_t)(n) * 2 * F_SLOT + 8 * (k))  /* A */
#define F_CTR(n)        ((uint64_t)(n) * 2 * F_SLOT)            /* B */

static uint32_t f_len(unsigned k)
{
    return 1 + (k * 2654435761u) % 8000;
}

static void test_faults(void)
{
    RnicRelayFaults f = { .drop = 0.05, .dup = 0.02, .reorder = 0.05,
                          .corrupt = 0.03 };
    const char *nops_env = g_getenv("RNIC_WIRE_FAULT_OPS");
    unsigned nops = nops_env ? atoi(nops_env) : 250;
    const unsigned window = 16;
    Lossy l;
    WvPair p;
    WVm *a, *b;
    unsigned posted = 0, done = 0, recvd = 0, k;
    uint64_t sum = 0, cas = 0;
    GArray *sends = g_array_new(FALSE, TRUE, sizeof(unsigned));
    RnicRelayStats st[2];
    g_autofree uint8_t *got = NULL, *want = NULL;
    WvPath path = { RNIC_MTU_1024, 10, 7, 7 };
    gint64 t0;

    g_assert_cmpuint(nops, <=, WV_BUF / (3 * F_SLOT) - 1);
    rnic_relay_faults_from_env("RNIC_WIRE_FAULTS", &f);
    lossy_boot(&l, 0x5eed);
    a = l.a;
    b = l.b;
    p = wv_rc_pair(a, b, 0, &path, 8);
    /* sources: A's slots (WRITE, SEND), B's slots (READ) */
    wv_fill(a, a->buf, (size_t)nops * F_SLOT, 1);
    wv_fill(b, b->buf, (size_t)nops * F_SLOT, 2);
    qtest_memset(b->qts, b->buf + F_CTR(nops), 0, 16);
    rnic_relay_set_faults(l.relay, RNIC_RELAY_A_TO_B, &f);
    rnic_relay_set_faults(l.relay, RNIC_RELAY_B_TO_A, &f);
    t0 = g_get_monotonic_time();

    while (done < nops) {
        struct rnic_cqe c;
        bool idle = true;

        while (posted < nops && posted - done < window) {
            struct rnic_sq_wqe w;
            struct rnic_sge s, r;

            k = posted++;
            switch (k % 5) {
            case 0:         /* WRITE A.src[k] -> B.dst[k] */
                s = tv_sge(a->buf + F_SRC(k), f_len(k), a->mr[0]);
                w = tv_wqe(k, RNIC_WR_RDMA_WRITE, 1);
                w.rdma.remote_addr = b->buf + F_DST(nops, k);
                w.rdma.rkey = b->mr[0];
                tv_post_send(&a->d, p.a, &w, &s, NULL);
                break;
            case 1:         /* READ B.src[k] -> A.dst[k] */
                r = tv_sge(a->buf + F_DST(nops, k), f_len(k), a->mr[0]);
                w = tv_wqe(k, RNIC_WR_RDMA_READ, 1);
                w.rdma.remote_addr = b->buf + F_SRC(k);
                w.rdma.rkey = b->mr[0];
                tv_post_send(&a->d, p.a, &w, &r, NULL);
                break;
            case 2:         /* SEND A.src[k] -> a receive at B.dst[k] */
                r = tv_sge(b->buf + F_DST(nops, k), F_SLOT, b->mr[0]);
                tv_post_recv(&b->d, p.b, k, &r, 1);
                s = tv_sge(a->buf + F_SRC(k), f_len(k), a->mr[0]);
                w = tv_wqe(k, RNIC_WR_SEND, 1);
                tv_post_send(&a->d, p.a, &w, &s, NULL);
                g_array_append_val(sends, k);
                break;
            case 3:         /* FETCH_ADD k */
                r = tv_sge(a->buf + F_RES(nops, k), 8, a->mr[0]);
                w = tv_wqe(k, RNIC_WR_ATOMIC_FETCH_ADD, 1);
                w.atomic.remote_addr = b->buf + F_CTR(nops);
                w.atomic.rkey = b->mr[0];
                w.atomic.compare_add = k;
                tv_post_send(&a->d, p.a, &w, &r, NULL);
                break;
            default:        /* CMP_SWP previous -> k: only in order */
                r = tv_sge(a->buf + F_RES(nops, k), 8, a->mr[0]);
                w = tv_wqe(k, RNIC_WR_ATOMIC_CMP_SWP, 1);
                w.atomic.remote_addr = b->buf + F_CTR(nops) + 8;
                w.atomic.rkey = b->mr[0];
                w.atomic.compare_add = cas;
                w.atomic.swap = k;
                cas = k;
                tv_post_send(&a->d, p.a, &w, &r, NULL);
                break;
            }
        }
        while (tv_poll(&a->d, a->cq, &c, 1)) {
            /* exactly once, in order */
            g_assert_cmpuint(c.wr_id, ==, done);
            if (c.status != RNIC_WC_SUCCESS) {
                g_error("op %u completed with status %u", done, c.status);
            }
            if (done % 5 == 3) {
                g_assert_cmpuint(qtest_readq(a->qts, a->buf +
                                             F_RES(nops, done)), ==, sum);
                sum += done;
            } else if (done % 5 == 4) {
                g_assert_cmpuint(qtest_readq(a->qts, a->buf +
                                             F_RES(nops, done)), ==,
                                 done >= 9 ? done - 5 : 0);
            }
            done++;
            idle = false;
        }
        while (tv_poll(&b->d, b->cq, &c, 1)) {
            unsigned kk = g_array_index(sends, unsigned, recvd);

            g_assert_cmpuint(c.wr_id, ==, kk);
            g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
            g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, f_len(kk));
            recvd++;
            idle = false;
        }
        if (idle) {
            g_assert(g_get_monotonic_time() < t0 + 5 * WV_WAIT_US);
            wv_tick(WV_STEP_NS * 5);
        }
    }
    g_assert_cmpuint(recvd, ==, sends->len);

    /* the data, in bulk */
    got = g_malloc((size_t)nops * F_SLOT);
    want = g_malloc((size_t)nops * F_SLOT);
    qtest_bufread(b->qts, b->buf + F_DST(nops, 0), got,
                  (size_t)nops * F_SLOT);
    pattern(want, (size_t)nops * F_SLOT, 1);
    for (k = 0; k < nops; k++) {
        if (k % 5 == 0 || k % 5 == 2) {     /* WRITE, SEND into B */
            g_assert_cmpmem(got + F_SLOT * k, f_len(k), want + F_SLOT * k,
                            f_len(k));
        }
    }
    qtest_bufread(a->qts, a->buf + F_DST(nops, 0), got,
                  (size_t)nops * F_SLOT);
    pattern(want, (size_t)nops * F_SLOT, 2);
    for (k = 0; k < nops; k++) {
        if (k % 5 == 1) {                   /* READ into A */
            g_assert_cmpmem(got + F_SLOT * k, f_len(k), want + F_SLOT * k,
                            f_len(k));
        }
    }
    g_assert_cmpuint(qtest_readq(b->qts, b->buf + F_CTR(nops)), ==, sum);
    g_assert_cmpuint(qtest_readq(b->qts, b->buf + F_CTR(nops) + 8), ==, cas);

    /* every corrupted frame was caught by the ICRC, and only those */
    lossy_settle(&l);
    rnic_relay_get_stats(l.relay, RNIC_RELAY_A_TO_B, &st[0]);
    rnic_relay_get_stats(l.relay, RNIC_RELAY_B_TO_A, &st[1]);
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_RX_ERR_ICRC), ==,
                     st[0].corrupted);
    g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_RX_ERR_ICRC), ==,
                     st[1].corrupted);
    /*
     * A receiver QEMU that does not read for a second (a loaded host, a
     * sanitizer build) costs the relay a frame: one more loss to recover,
     * reported below, not an error.
     */
    if (f.drop > 0 || f.corrupt > 0) {
        g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_RETRANSMITS), >, 0);
    }
    g_test_message("faults drop %.3f dup %.3f reorder %.3f corrupt %.3f, "
                   "%u ops in %.1f s; A->B %u frames (%u dropped, %u dup, "
                   "%u reordered, %u corrupted), B->A %u (%u, %u, %u, %u); "
                   "not delivered %u; A retransmits %" PRIu64
                   ", ICRC rejects A %" PRIu64 " B %" PRIu64,
                   f.drop, f.dup, f.reorder, f.corrupt, nops,
                   (g_get_monotonic_time() - t0) / 1e6, st[0].frames,
                   st[0].dropped, st[0].duplicated, st[0].reordered,
                   st[0].corrupted, st[1].frames, st[1].dropped,
                   st[1].duplicated, st[1].reordered, st[1].corrupted,
                   st[0].failed + st[1].failed,
                   tv_stat(&a->d, RNIC_STAT_RETRANSMITS),
                   tv_stat(&a->d, RNIC_STAT_RX_ERR_ICRC),
                   tv_stat(&b->d, RNIC_STAT_RX_ERR_ICRC));
    g_array_free(sends, TRUE);
    wv_pair_free(&p);
    lossy_free(&l);
}

/* The peer is gone: RETRY_EXC_ERR after retry_cnt retransmissions. */
static void test_retry_exceeded(void)
{
    WvPath path = { RNIC_MTU_1024, 10, 3, 7 };
    Lossy l;
    WvPair p;
    struct rnic_sq_wqe w;
    struct rnic_sge s;
    struct rnic_cqe c;
    RnicRelayStats st;

    lossy_boot(&l, 1);
    p = wv_rc_pair(l.a, l.b, 0, &path, 4);
    s = tv_sge(l.a->buf, 2000, l.a->mr[0]);
    w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = l.b->buf;
    w.rdma.rkey = l.b->mr[0];
    tv_post_send(&l.a->d, p.a, &w, &s, NULL);
    wv_expect(l.a, 1, RNIC_WC_RDMA_WRITE, 2000);
    /* B's process exits */
    wv_quit(l.b);
    l.b = NULL;
    w.wr_id = 2;
    tv_post_send(&l.a->d, p.a, &w, &s, NULL);
    w.wr_id = 3;
    tv_post_send(&l.a->d, p.a, &w, &s, NULL);
    c = wv_wait(l.a);
    g_assert_cmpuint(c.wr_id, ==, 2);
    g_assert_cmpuint(c.status, ==, RNIC_WC_RETRY_EXC_ERR);
    c = wv_wait(l.a);
    g_assert_cmpuint(c.wr_id, ==, 3);
    g_assert_cmpuint(c.status, ==, RNIC_WC_WR_FLUSH_ERR);
    g_assert_cmpuint(tv_stat(&l.a->d, RNIC_STAT_RETRANSMITS), ==, 3);
    /* 1 + 3 transmissions of the 2 + 2 packets, none arrived */
    lossy_settle(&l);
    rnic_relay_get_stats(l.relay, RNIC_RELAY_A_TO_B, &st);
    g_assert_cmpuint(st.failed, ==, 4 * 4);
    g_free(p.a);
    g_free(p.b);
    lossy_free(&l);
}

/* No receive posted at the peer: RNR NAKs, then RNR_RETRY_EXC_ERR. */
static void test_rnr_exceeded(void)
{
    WvPath path = { RNIC_MTU_1024, 10, 7, 2 };
    Lossy l;
    WvPair p;
    struct rnic_sq_wqe w;
    struct rnic_sge s;
    struct rnic_cqe c;
    RnicRelayStats st;

    lossy_boot(&l, 2);
    p = wv_rc_pair(l.a, l.b, 0, &path, 4);
    s = tv_sge(l.a->buf, 100, l.a->mr[0]);
    w = tv_wqe(1, RNIC_WR_SEND, 1);
    tv_post_send(&l.a->d, p.a, &w, &s, NULL);
    c = wv_wait(l.a);
    g_assert_cmpuint(c.wr_id, ==, 1);
    g_assert_cmpuint(c.status, ==, RNIC_WC_RNR_RETRY_EXC_ERR);
    lossy_settle(&l);
    rnic_relay_get_stats(l.relay, RNIC_RELAY_B_TO_A, &st);
    g_assert_cmpuint(st.frames, ==, 3);     /* three RNR NAKs */
    rnic_relay_get_stats(l.relay, RNIC_RELAY_A_TO_B, &st);
    g_assert_cmpuint(st.frames, ==, 3);     /* the SEND and two retries */
    g_assert_cmpuint(tv_stat(&l.b->d, RNIC_STAT_RX_DROPPED), ==, 0);
    wv_pair_free(&p);
    lossy_free(&l);
}

/* ---------------------------------------------------------------------- */
/* Malformed frames from a raw peer                                       */
/* ---------------------------------------------------------------------- */

#define PEER_HOST       99
#define PEER_QPN        0x99
#define GUARD           0xa5
#define RQ_PSN          0xfffff0

typedef struct Raw {
    Seg seg;
    WVm *a;
    int fd;                     /* the test's socket on A's segment */
    struct sockaddr_un a_addr;
    uint8_t mac[6];
    uint64_t region;            /* guard page | target page | guard page */
    uint32_t mr;                /* the target page, in context 0 */
    uint64_t region5;           /* a page registered in context 5 */
    uint32_t mr5;
    uint32_t ctx5, pd5;
} Raw;

static void raw_init(Raw *t)
{
    g_autofree char *pa = NULL, *pt = NULL, *nd = NULL;
    struct sockaddr_un me = { .sun_family = AF_UNIX };
    QRnic *d;

    seg_init(&t->seg);
    pa = seg_path(&t->seg, "a.sock");
    pt = seg_path(&t->seg, "t.sock");
    t->fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    g_assert(t->fd >= 0);
    strcpy(me.sun_path, pt);
    g_assert(bind(t->fd, (struct sockaddr *)&me, sizeof(me)) == 0);
    t->a_addr.sun_family = AF_UNIX;
    strcpy(t->a_addr.sun_path, pa);
    nd = g_strdup_printf("dgram,local.type=unix,local.path=%s,"
                         "remote.type=unix,remote.path=%s", pa, pt);
    t->a = wv_boot(1, nd, NULL, 100);
    wv_mac(t->mac, PEER_HOST);
    d = &t->a->d;
    /* the registered page between two unregistered guard pages */
    t->region = qv_alloc(d, 3 * 4096, 4096);
    qtest_memset(t->a->qts, t->region, GUARD, 3 * 4096);
    qtest_memset(t->a->qts, t->region + 4096, 0, 4096);
    t->mr = tv_reg_mr(d, t->a->pd[0], t->region + 4096, 4096,
                      RNIC_ACCESS_ALL, 0, NULL);
    /* another network context (VLAN 5) with its own region and GID */
    t->ctx5 = tv_net_ctx(d, 5);
    qv_gid(d, 2, t->ctx5, 5, 1);
    t->pd5 = tv_pd(d, t->ctx5, 0);
    t->region5 = qv_alloc(d, 4096, 4096);
    qtest_memset(t->a->qts, t->region5, 0x5c, 4096);
    t->mr5 = tv_reg_mr(d, t->pd5, t->region5, 4096, RNIC_ACCESS_ALL, 0, NULL);
}

static void raw_free(Raw *t)
{
    close(t->fd);
    wv_quit(t->a);
    seg_free(&t->seg);
}

/* An RC QP of A (context 0) connected to the test, peer QPN 'pqpn'. */
static TvQp *raw_qp(Raw *t, uint32_t pqpn)
{
    WVm peer = { .host = PEER_HOST };
    TvQp *qp = tv_qp(&t->a->d, RNIC_QPT_RC, t->a->pd[0], t->a->cq, t->a->cq,
                     NULL, 4, 0);

    memcpy(peer.mac, t->mac, 6);
    wv_rc_connect(t->a, qp, 0, &peer, pqpn, &path_1k);
    return qp;
}

/* A valid RDMA WRITE_ONLY from the test to A's 'qp' at PSN 'psn'. */
static RnicRoceHdr raw_write(Raw *t, TvQp *qp, uint32_t psn, uint64_t va,
                             uint32_t rkey, const uint8_t *data, uint32_t len)
{
    RnicRoceHdr h;

    memset(&h, 0, sizeof(h));
    memcpy(h.dmac, t->a->mac, 6);
    memcpy(h.smac, t->mac, 6);
    qv_gid_bytes(h.sgid, 0, PEER_HOST);
    qv_gid_bytes(h.dgid, 0, t->a->host);
    h.hop_limit = 64;
    h.udp_sport = 0xc099;
    h.opcode = RNIC_ROCE_OP_RDMA_WRITE_ONLY;
    h.pkey = 0xffff;
    h.dest_qp = qp ? qp->qpn : 0;
    h.ack_req = true;
    h.psn = psn;
    h.reth.va = va;
    h.reth.rkey = rkey;
    h.reth.dma_len = len;
    h.payload = data;
    h.payload_len = len;
    return h;
}

static size_t raw_encode(const RnicRoceHdr *h, uint8_t *frame, size_t size)
{
    size_t len;

    g_assert_cmpint(rnic_roce_encode_linear(h, frame, size, &len), ==,
                    RNIC_ROCE_OK);
    return len;
}

static void raw_send_bytes(Raw *t, const uint8_t *frame, size_t len)
{
    g_assert_cmpint(sendto(t->fd, frame, len, 0,
                           (struct sockaddr *)&t->a_addr,
                           sizeof(t->a_addr)), ==, len);
}

static void raw_send(Raw *t, const RnicRoceHdr *h)
{
    uint8_t frame[9000];

    raw_send_bytes(t, frame, raw_encode(h, frame, sizeof(frame)));
}

/* The next frame A sends, decoded (false: none within 'ms'). */
static bool raw_recv(Raw *t, RnicRoceHdr *h, int ms)
{
    static uint8_t frame[65536];
    struct pollfd p = { .fd = t->fd, .events = POLLIN };
    ssize_t n;

    /* A answers from its main loop; a qtest round trip lets it run */
    qtest_clock_step(t->a->qts, 1);
    if (poll(&p, 1, ms) <= 0) {
        return false;
    }
    n = recv(t->fd, frame, sizeof(frame), 0);
    g_assert_cmpint(n, >, 0);
    g_assert_cmpint(rnic_roce_decode(frame, n, h), ==, RNIC_ROCE_OK);
    return true;
}

static void raw_drain(Raw *t)
{
    RnicRoceHdr h;

    while (raw_recv(t, &h, 20)) {
        ;
    }
}

/* Counters of A before a case; raw_delta checks what changed. */
typedef struct Snap {
    uint64_t s[RNIC_STAT_COUNT];
} Snap;

static void snap(Raw *t, Snap *sn)
{
    unsigned i;

    qtest_clock_step(t->a->qts, 1);     /* A has read the socket */
    g_usleep(20000);
    for (i = 0; i < RNIC_STAT_COUNT; i++) {
        sn->s[i] = tv_stat(&t->a->d, i);
    }
}

/*
 * Since 'before': counter 'which' went up by 'n' (RX_DROPPED with it
 * when it is a drop reason), every other error counter stayed.
 */
static void raw_delta(Raw *t, const Snap *before, unsigned which, unsigned n)
{
    Snap now;
    unsigned i;

    snap(t, &now);
    for (i = RNIC_STAT_RX_ERR_HEADER; i <= RNIC_STAT_RX_ERR_OPCODE; i++) {
        g_assert_cmpuint(now.s[i] - before->s[i], ==, i == which ? n : 0);
    }
    if (which >= RNIC_STAT_RX_ERR_HEADER) {
        g_assert_cmpuint(now.s[RNIC_STAT_RX_DROPPED] -
                         before->s[RNIC_STAT_RX_DROPPED], ==, n);
    } else if (which == RNIC_STAT_RX_DROPPED) {
        g_assert_cmpuint(now.s[RNIC_STAT_RX_DROPPED] -
                         before->s[RNIC_STAT_RX_DROPPED], ==, n);
    } else {
        g_assert_cmpuint(now.s[RNIC_STAT_RX_DROPPED], ==,
                         before->s[RNIC_STAT_RX_DROPPED]);
    }
}

/* A's answer must be an ACK/NAK with this syndrome and PSN, to the peer. */
static void raw_expect_aeth(Raw *t, uint8_t syndrome, uint32_t psn)
{
    RnicRoceHdr h;

    g_assert_true(raw_recv(t, &h, 2000));
    g_assert_cmphex(h.opcode, ==, RNIC_ROCE_OP_ACKNOWLEDGE);
    g_assert_cmphex(h.aeth.syndrome, ==, syndrome);
    g_assert_cmphex(h.psn, ==, psn);
    g_assert_cmphex(h.dest_qp, ==, PEER_QPN);
    g_assert_cmpmem(h.dmac, 6, t->mac, 6);
    g_assert_cmpmem(h.smac, 6, t->a->mac, 6);
}

static void raw_no_answer(Raw *t)
{
    RnicRoceHdr h;

    g_assert_false(raw_recv(t, &h, 50));
}

/* Guard pages intact, the registered page as expected. */
static void raw_check_memory(Raw *t, const uint8_t *target)
{
    uint8_t got[3 * 4096], want[4096];

    qtest_bufread(t->a->qts, t->region, got, sizeof(got));
    memset(want, GUARD, sizeof(want));
    g_assert_cmpmem(got, 4096, want, 4096);
    g_assert_cmpmem(got + 8192, 4096, want, 4096);
    g_assert_cmpmem(got + 4096, 4096, target, 4096);
    qtest_bufread(t->a->qts, t->region5, got, 4096);
    memset(want, 0x5c, sizeof(want));
    g_assert_cmpmem(got, 4096, want, 4096);
}

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v;
}

/* Recompute an IPv4 header checksum after editing the header. */
static void ipv4_csum(uint8_t *ip)
{
    uint32_t sum = 0;
    int i;

    put_be16(ip + 10, 0);
    for (i = 0; i < 20; i += 2) {
        sum += ip[i] << 8 | ip[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    put_be16(ip + 10, ~sum);
}

/*
 * The frames the device drops, each counted under its reason. Frame 'i'
 * (of 'frames') of a case is the valid WRITE with its header edited by
 * 'hdr', then encoded, then its bytes edited by 'bytes' (which returns
 * the length to send); either edit may be NULL.
 */
typedef struct RawDrop {
    const char *name;
    void (*hdr)(RnicRoceHdr *h, unsigned i);
    size_t (*bytes)(uint8_t *f, size_t len, unsigned i);
    unsigned frames;
    unsigned stat;              /* goes up by 'frames' (RX_DROPPED too) */
} RawDrop;

/* In the BTH, in the RETH, before the end of the ICRC. */
static size_t drop_truncated(uint8_t *f, size_t len, unsigned i)
{
    const size_t cut[] = { 14 + 20 + 8 + 6, 14 + 20 + 8 + 12 + 10, len - 2 };

    return cut[i];
}

/*
 * IPv4 total length beyond the frame, UDP length short, UDP length not a
 * multiple of 4 for the payload (pad), bad IPv4 header checksum, IPv4
 * options.
 */
static size_t drop_lengths(uint8_t *f, size_t len, unsigned i)
{
    switch (i) {
    case 0:
        put_be16(f + 14 + 2, len - 14 + 40);
        ipv4_csum(f + 14);
        return len;
    case 1:
        put_be16(f + 14 + 20 + 4, (f[14 + 20 + 4] << 8 | f[14 + 20 + 5]) - 8);
        return len;
    case 2:
        put_be16(f + 14 + 2, (f[16] << 8 | f[17]) - 2);
        put_be16(f + 14 + 20 + 4, (f[14 + 20 + 4] << 8 | f[14 + 20 + 5]) - 2);
        ipv4_csum(f + 14);
        return len;
    case 3:
        f[14 + 10] ^= 0x55;
        return len;
    default:
        memmove(f + 14 + 24, f + 14 + 20, len - 14 - 20);
        memset(f + 14 + 20, 1, 4);                  /* 4 NOP options */
        f[14] = 0x46;
        put_be16(f + 14 + 2, (f[16] << 8 | f[17]) + 4);
        ipv4_csum(f + 14);
        return len + 4;
    }
}

static size_t drop_icrc(uint8_t *f, size_t len, unsigned i)
{
    f[len - 10] ^= 0x01;
    return len;
}

static void drop_qpn(RnicRoceHdr *h, unsigned i)
{
    h->dest_qp = 0x777;
}

static void drop_net(RnicRoceHdr *h, unsigned i)
{
    h->vlan_present = true;
    h->vlan_id = 7;
}

static void drop_gid(RnicRoceHdr *h, unsigned i)
{
    h->vlan_present = true;
    h->vlan_id = 5;
}

static void drop_pkey(RnicRoceHdr *h, unsigned i)
{
    h->pkey = 0x1234;
}

static void drop_addr(RnicRoceHdr *h, unsigned i)
{
    h->sgid[15] = PEER_HOST - 1;
}

/* A UD opcode to an RC QP, a UC opcode, a CNP. */
static void drop_opcode(RnicRoceHdr *h, unsigned i)
{
    static const uint8_t op[] = {
        RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_UD, RNIC_ROCE_OP_SEND_ONLY),
        RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_UC, RNIC_ROCE_OP_RDMA_WRITE_ONLY),
        RNIC_ROCE_OPCODE_CNP,
    };

    h->opcode = op[i];
    if (h->opcode == RNIC_ROCE_OPCODE_CNP) {
        h->payload_len = 0;
    }
}

static const RawDrop raw_drops[] = {
    { "truncated", NULL, drop_truncated, 3, RNIC_STAT_RX_ERR_HEADER },
    { "bad lengths", NULL, drop_lengths, 5, RNIC_STAT_RX_ERR_HEADER },
    { "ICRC", NULL, drop_icrc, 1, RNIC_STAT_RX_ERR_ICRC },
    { "no such QPN", drop_qpn, NULL, 1, RNIC_STAT_RX_ERR_QPN },
    { "a VLAN without network context", drop_net, NULL, 1,
      RNIC_STAT_RX_ERR_NET },
    { "VLAN 5 (a context) to the GID of context 0", drop_gid, NULL, 1,
      RNIC_STAT_RX_ERR_GID },
    { "another P_Key", drop_pkey, NULL, 1, RNIC_STAT_RX_ERR_PKEY },
    { "not from the QP's peer", drop_addr, NULL, 1, RNIC_STAT_RX_ERR_ADDR },
    { "UD opcode to an RC QP, UC opcode, CNP", drop_opcode, NULL, 3,
      RNIC_STAT_RX_ERR_OPCODE },
};

/* Each case of raw_drops from the valid WRITE 'v': no answer, its count. */
static void raw_walk_dropped(Raw *t, const RnicRoceHdr *v)
{
    uint8_t frame[9000];
    unsigned c, i;
    Snap sn;

    for (c = 0; c < G_N_ELEMENTS(raw_drops); c++) {
        const RawDrop *r = &raw_drops[c];

        g_test_message("malformed: %s", r->name);
        snap(t, &sn);
        for (i = 0; i < r->frames; i++) {
            RnicRoceHdr h = *v;
            size_t len;

            if (r->hdr) {
                r->hdr(&h, i);
            }
            len = raw_encode(&h, frame, sizeof(frame));
            if (r->bytes) {
                len = r->bytes(frame, len, i);
            }
            raw_send_bytes(t, frame, len);
        }
        raw_no_answer(t);
        raw_delta(t, &sn, r->stat, r->frames);
    }
}

static void test_malformed(void)
{
    Raw t;
    Snap sn;
    TvQp *qp;
    RnicRoceHdr h, v;
    uint8_t data[64], target[4096], frame[2048];
    uint64_t va;
    size_t len;
    uint32_t psn = RQ_PSN;
    GRand *rnd = g_rand_new_with_seed(42);
    unsigned i;

    raw_init(&t);
    qp = raw_qp(&t, PEER_QPN);
    va = t.region + 4096 + 100;
    memset(target, 0, sizeof(target));
    pattern(data, sizeof(data), 7);

    /* a good WRITE: placed, acknowledged */
    snap(&t, &sn);
    v = raw_write(&t, qp, psn, va, t.mr, data, sizeof(data));
    raw_send(&t, &v);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_ACK | RNIC_ROCE_AETH_CREDIT_INVALID,
                    psn);
    memcpy(target + 100, data, sizeof(data));
    raw_check_memory(&t, target);
    raw_delta(&t, &sn, RNIC_STAT_RX_FRAMES, 0);
    psn = (psn + 1) & RNIC_ROCE_PSN_MASK;
    v = raw_write(&t, qp, psn, va, t.mr, data, sizeof(data));

    /* the frames that are dropped, each for its reason */
    raw_walk_dropped(&t, &v);
    raw_check_memory(&t, target);

    /* a PSN ahead: one sequence-error NAK for the expected PSN */
    snap(&t, &sn);
    h = v;
    h.psn = (psn + 3) & RNIC_ROCE_PSN_MASK;
    raw_send(&t, &h);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_NAK | RNIC_ROCE_NAK_PSN_SEQ_ERR, psn);
    raw_send(&t, &h);
    raw_no_answer(&t);          /* one NAK per gap */
    /*
     * a duplicate (the first WRITE again, other data): re-acknowledged,
     * not executed again
     */
    h = raw_write(&t, qp, RQ_PSN, va, t.mr, target + 1000, sizeof(data));
    raw_send(&t, &h);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_ACK | RNIC_ROCE_AETH_CREDIT_INVALID,
                    RQ_PSN);
    raw_check_memory(&t, target);
    raw_delta(&t, &sn, RNIC_STAT_RX_FRAMES, 0);

    /* opcode out of sequence: WRITE_MIDDLE with no WRITE_FIRST */
    snap(&t, &sn);
    h = v;
    h.opcode = RNIC_ROCE_OP_RDMA_WRITE_MIDDLE;
    h.payload_len = 1024;
    h.payload = target;
    raw_send(&t, &h);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_NAK | RNIC_ROCE_NAK_INVALID_REQ, psn);
    /* the QP is in error now: the good frame is dropped */
    raw_send(&t, &v);
    raw_no_answer(&t);
    raw_check_memory(&t, target);
    raw_delta(&t, &sn, RNIC_STAT_RX_DROPPED, 1);
    g_free(qp);

    /* an rkey of context 5 on a QP of context 0: remote access NAK */
    qp = raw_qp(&t, PEER_QPN);
    snap(&t, &sn);
    psn = RQ_PSN;
    h = raw_write(&t, qp, psn, t.region5, t.mr5, data, sizeof(data));
    raw_send(&t, &h);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_NAK | RNIC_ROCE_NAK_REMOTE_ACCESS,
                    psn);
    raw_check_memory(&t, target);
    raw_delta(&t, &sn, RNIC_STAT_RX_FRAMES, 0);
    g_free(qp);

    /* beyond the region (32 bytes into the guard page) */
    qp = raw_qp(&t, PEER_QPN);
    h = raw_write(&t, qp, psn, t.region + 8192 - 32, t.mr, data,
                  sizeof(data));
    raw_send(&t, &h);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_NAK | RNIC_ROCE_NAK_REMOTE_ACCESS,
                    psn);
    raw_check_memory(&t, target);
    g_free(qp);
    /* a READ of the guard page below */
    qp = raw_qp(&t, PEER_QPN);
    h = raw_write(&t, qp, psn, t.region + 4096 - 8, t.mr, NULL, 0);
    h.opcode = RNIC_ROCE_OP_RDMA_READ_REQUEST;
    h.reth.dma_len = 64;
    raw_send(&t, &h);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_NAK | RNIC_ROCE_NAK_REMOTE_ACCESS,
                    psn);
    g_free(qp);

    /* random damage to good frames: whatever happens, nothing breaks */
    qp = raw_qp(&t, PEER_QPN);
    for (i = 0; i < 3000; i++) {
        uint32_t n, j;

        h = raw_write(&t, qp, (psn + g_rand_int_range(rnd, -2, 3)) &
                      RNIC_ROCE_PSN_MASK, va + g_rand_int_range(rnd, -200,
                                                                 4096),
                      g_rand_boolean(rnd) ? t.mr : t.mr5, data,
                      g_rand_int_range(rnd, 0, 64));
        do {
            h.opcode = g_rand_int_range(rnd, 0, 0x18);
        } while (!rnic_roce_op_info(h.opcode));
        if (!(rnic_roce_op_info(h.opcode)->flags & RNIC_ROCE_OPF_PAYLOAD)) {
            h.payload_len = 0;
        }
        len = raw_encode(&h, frame, sizeof(frame));
        n = g_rand_int_range(rnd, 0, 4);
        for (j = 0; j < n; j++) {
            frame[g_rand_int_range(rnd, 0, len)] ^=
                1u << g_rand_int_range(rnd, 0, 8);
        }
        if (g_rand_int_range(rnd, 0, 8) == 0) {
            len = g_rand_int_range(rnd, 1, len + 1);
        }
        raw_send_bytes(&t, frame, len);
        if (i % 64 == 63) {
            raw_drain(&t);
        }
    }
    raw_drain(&t);
    g_free(qp);
    /* still alive: a fresh QP gets its WRITE acknowledged */
    qp = raw_qp(&t, PEER_QPN);
    qtest_bufread(t.a->qts, t.region + 4096, target, 4096);
    h = raw_write(&t, qp, RQ_PSN, va, t.mr, data, sizeof(data));
    raw_send(&t, &h);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_ACK | RNIC_ROCE_AETH_CREDIT_INVALID,
                    RQ_PSN);
    memcpy(target + 100, data, sizeof(data));
    raw_check_memory(&t, target);
    g_free(qp);

    /* UD: Q_Key checked; a MAD reaches QP1 of the frame's VLAN only */
    {
        TvQp *ud = tv_qp(&t.a->d, RNIC_QPT_UD, t.a->pd[0], t.a->cq, t.a->cq,
                         NULL, 4, 0);
        TvQp *gsi = tv_qp(&t.a->d, RNIC_QPT_GSI, t.pd5, t.a->cq, t.a->cq,
                          NULL, 4, 0);
        struct rnic_sge r = tv_sge(t.region5, 512, t.mr5);
        struct rnic_cqe c;

        tv_ud_ready(&t.a->d, ud, 0x1111);
        tv_ud_ready(&t.a->d, gsi, 0x80010000);
        tv_post_recv(&t.a->d, gsi, 0x77, &r, 1);
        snap(&t, &sn);
        h = v;
        h.opcode = RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_UD,
                                    RNIC_ROCE_OP_SEND_ONLY);
        h.dest_qp = ud->qpn;
        h.deth.qkey = 0x2222;
        h.deth.src_qp = 0x1234;
        raw_send(&t, &h);       /* wrong Q_Key */
        raw_no_answer(&t);
        raw_delta(&t, &sn, RNIC_STAT_RX_DROPPED, 1);
        snap(&t, &sn);
        h.dest_qp = 1;          /* context 0 has no QP1 */
        h.deth.qkey = 0x80010000;
        raw_send(&t, &h);
        raw_no_answer(&t);
        raw_delta(&t, &sn, RNIC_STAT_RX_ERR_QPN, 1);
        h.vlan_present = true;  /* VLAN 5: to 10.5.0.1, QP1 */
        h.vlan_id = 5;
        qv_gid_bytes(h.dgid, 5, 1);
        qv_gid_bytes(h.sgid, 5, PEER_HOST);
        raw_send(&t, &h);
        c = wv_expect(t.a, 0x77, RNIC_WC_RECV, 40 + sizeof(data));
        g_assert_cmpuint(le32_to_cpu(c.qp_num), ==, 1);
        g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, 0x1234);
        g_assert_cmpuint(le16_to_cpu(c.vlan_id), ==, 5);
        g_assert_cmpmem(c.smac, 6, t.mac, 6);
        g_free(ud);
        g_free(gsi);
    }

    /* not RoCE for this device: left to the Ethernet function */
    snap(&t, &sn);
    h = v;
    h.dmac[5] ^= 0x80;          /* another MAC */
    raw_send(&t, &h);
    h = v;
    qv_gid_bytes(h.dgid, 0, 42);    /* another IP */
    raw_send(&t, &h);
    raw_no_answer(&t);
    raw_delta(&t, &sn, RNIC_STAT_RX_FRAMES, 0);
    g_assert_cmpuint(tv_stat(&t.a->d, RNIC_STAT_ETH_RX_DISABLED) -
                     sn.s[RNIC_STAT_ETH_RX_DISABLED], ==, 2);
    g_assert_cmphex(rnic_reg_read(&t.a->d, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
    g_rand_free(rnd);
    raw_free(&t);
}

/* ---------------------------------------------------------------------- */
/* Performance (-m perf)                                                  */
/* ---------------------------------------------------------------------- */

/*
 * Post 'n' WQEs (one slot each, from 'w', wr_id = index) in one memory
 * write and one doorbell; every 'sig'th is signaled.
 */
static void perf_post(WVm *vm, TvQp *qp, const struct rnic_sq_wqe *w,
                      const struct rnic_sge *s, unsigned n, unsigned sig)
{
    uint32_t stride = 1u << qp->sq_shift, mask = (1u << qp->sq_log) - 1;
    g_autofree uint8_t *buf = g_malloc0((size_t)n * stride);
    unsigned i, first = qp->sq_prod & mask, done = 0;

    for (i = 0; i < n; i++) {
        struct rnic_sq_wqe x = *w;

        x.wr_id = qp->sq_prod + i;
        x.flags = (x.wr_id % sig == sig - 1) ? RNIC_WQE_SIGNALED : 0;
        memcpy(buf + (size_t)i * stride, &x, sizeof(x));
        memcpy(buf + (size_t)i * stride + 64, s, sizeof(*s));
    }
    while (done < n) {
        unsigned k = MIN(n - done, mask + 1 - ((first + done) & mask));

        qtest_memwrite(vm->qts, qp->sq + ((uint64_t)((first + done) & mask)
                                          << qp->sq_shift),
                       buf + (size_t)done * stride, (size_t)k * stride);
        done += k;
    }
    qp->sq_prod += n;
    rnic_doorbell(&vm->d, 0, RNIC_DB_SQ,
                  rnic_db_value(qp->handle, 0, qp->sq_prod));
}

static void perf_post_recv(WVm *vm, TvQp *qp, const struct rnic_sge *s,
                           unsigned n)
{
    uint32_t stride = 1u << qp->rq_shift, mask = (1u << qp->rq_log) - 1;
    g_autofree uint8_t *buf = g_malloc0((size_t)n * stride);
    unsigned i, first = qp->rq_prod & mask, done = 0;

    for (i = 0; i < n; i++) {
        struct rnic_rq_wqe *r = (struct rnic_rq_wqe *)(buf + i * stride);

        r->wr_id = qp->rq_prod + i;
        r->num_sge = 1;
        memcpy(r + 1, s, sizeof(*s));
    }
    while (done < n) {
        unsigned k = MIN(n - done, mask + 1 - ((first + done) & mask));

        qtest_memwrite(vm->qts, qp->rq + ((uint64_t)((first + done) & mask)
                                          << qp->rq_shift),
                       buf + (size_t)done * stride, (size_t)k * stride);
        done += k;
    }
    qp->rq_prod += n;
    rnic_doorbell(&vm->d, 0, RNIC_DB_RQ,
                  rnic_db_value(qp->handle, 0, qp->rq_prod));
}

/* Consume every CQE there is (one read of the ring); returns the count. */
static unsigned perf_poll(WVm *vm, unsigned max)
{
    TvCq *cq = vm->cq;
    uint32_t mask = (1u << cq->log) - 1;
    struct rnic_cqe c[64];
    unsigned n = 0, got, i;

    while (n < max) {
        uint32_t slot = cq->cons & mask;
        unsigned k = MIN(MIN(64u, max - n), mask + 1 - slot);

        qtest_memread(vm->qts, cq->ring + slot * sizeof(c[0]), c,
                      k * sizeof(c[0]));
        for (got = 0, i = 0; i < k; i++) {
            if ((c[i].owner & 1) != ((((cq->cons + i) >> cq->log) & 1) ^ 1)) {
                break;
            }
            g_assert_cmpuint(c[i].status, ==, RNIC_WC_SUCCESS);
            got++;
        }
        cq->cons += got;
        n += got;
        if (got < k) {
            break;
        }
    }
    if (n) {
        rnic_doorbell(&vm->d, 0, RNIC_DB_CQ,
                      rnic_db_value(cq->handle, 0, cq->cons));
    }
    return n;
}

/* Receives B has posted and not consumed yet (left for the next run). */
static unsigned perf_recv_left;

/* Throughput of 'op' (WRITE or SEND) of 'size' bytes from A to B. */
static double perf_bw(WVm *a, WVm *b, WvPair *p, uint8_t op, uint32_t size,
                      double secs)
{
    const unsigned depth = 64, batch = 16, sig = 16;
    struct rnic_sq_wqe w = tv_wqe(0, op, 1);
    struct rnic_sge s = tv_sge(a->buf, size, a->mr[0]);
    /* receives fit any size (some may be left over from a smaller run) */
    struct rnic_sge r = tv_sge(b->buf, 1u << 20, b->mr[0]);
    unsigned inflight = 0, recv_posted = 0, recv_done = 0;
    uint64_t rtx0 = tv_stat(&a->d, RNIC_STAT_RETRANSMITS);
    uint64_t ops = 0;
    gint64 t0, end;

    w.rdma.remote_addr = b->buf;
    w.rdma.rkey = b->mr[0];
    if (op == RNIC_WR_SEND) {
        recv_posted = perf_recv_left;
        if (recv_posted < 128) {
            perf_post_recv(b, p->b, &r, 128 - recv_posted);
            recv_posted = 128;
        }
    }
    t0 = g_get_monotonic_time();
    end = t0 + secs * G_USEC_PER_SEC;
    while (g_get_monotonic_time() < end || inflight) {
        unsigned n;

        if (g_get_monotonic_time() < end && inflight + batch <= depth) {
            perf_post(a, p->a, &w, &s, batch, sig);
            inflight += batch;
        }
        n = perf_poll(a, inflight / sig) * sig;
        inflight -= n;
        ops += n;
        if (op == RNIC_WR_SEND) {
            n = perf_poll(b, recv_posted - recv_done);
            recv_done += n;
            if (recv_posted - recv_done < 96) {
                perf_post_recv(b, p->b, &r, 32);
                recv_posted += 32;
            }
        }
        if (!n && inflight == depth) {
            g_usleep(50);
        }
    }
    if (op == RNIC_WR_SEND) {
        while (recv_done < ops) {
            recv_done += perf_poll(b, ops - recv_done);
        }
        perf_recv_left = recv_posted - recv_done;
    }
    if (tv_stat(&a->d, RNIC_STAT_RETRANSMITS) != rtx0) {
        g_test_message("%u-byte %s: %" PRIu64 " retransmissions", size,
                       op == RNIC_WR_SEND ? "SEND" : "WRITE",
                       tv_stat(&a->d, RNIC_STAT_RETRANSMITS) - rtx0);
    }
    return ops * (double)size / ((g_get_monotonic_time() - t0) / 1e6);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Round trip of one small operation, driven by the test (median, us). */
static double perf_lat(WVm *a, WVm *b, WvPair *p, uint8_t op, unsigned iters)
{
    struct rnic_sq_wqe w = tv_wqe(0, op, 1);
    struct rnic_sge s = tv_sge(a->buf, 64, a->mr[0]);
    g_autofree double *t = g_new(double, iters);
    unsigned i;

    w.rdma.remote_addr = b->buf;
    w.rdma.rkey = b->mr[0];
    for (i = 0; i < iters; i++) {
        gint64 t0 = g_get_monotonic_time();

        perf_post(a, p->a, &w, &s, 1, 1);
        while (!perf_poll(a, 1)) {
            ;
        }
        t[i] = g_get_monotonic_time() - t0;
    }
    qsort(t, iters, sizeof(*t), cmp_double);
    return t[iters / 2];
}

/*
 * Round trip through one rnic without any driver in the loop: the test, a
 * raw peer on a unix datagram socket, sends a 64-byte RDMA WRITE (or READ
 * request) and waits for the ACK (or READ response). Median, in us.
 */
static double perf_raw_rtt(bool read, unsigned iters)
{
    Raw t;
    TvQp *qp;
    uint8_t data[64] = { 0 }, frame[256], rx[256];
    g_autofree double *d = g_new(double, iters);
    uint32_t psn = RQ_PSN;
    unsigned i;
    double med;

    raw_init(&t);
    qp = raw_qp(&t, PEER_QPN);
    for (i = 0; i < iters; i++) {
        RnicRoceHdr h = raw_write(&t, qp, psn, t.region + 4096, t.mr, data,
                                  read ? 0 : sizeof(data));
        struct pollfd p = { .fd = t.fd, .events = POLLIN };
        size_t len;
        gint64 t0;

        if (read) {
            h.opcode = RNIC_ROCE_OP_RDMA_READ_REQUEST;
            h.reth.dma_len = sizeof(data);
        }
        len = raw_encode(&h, frame, sizeof(frame));
        t0 = g_get_monotonic_time();
        raw_send_bytes(&t, frame, len);
        g_assert_cmpint(poll(&p, 1, 2000), ==, 1);
        g_assert_cmpint(recv(t.fd, rx, sizeof(rx), 0), >, 0);
        d[i] = g_get_monotonic_time() - t0;
        psn = (psn + 1) & RNIC_ROCE_PSN_MASK;
    }
    g_free(qp);
    raw_free(&t);
    qsort(d, iters, sizeof(*d), cmp_double);
    med = d[iters / 2];
    return med;
}

static void test_perf(void)
{
    static const uint32_t sizes[] = { 4096, 65536, 1u << 20 };
    Seg seg;
    WVm *a, *b;
    WvPair p;
    double secs = g_getenv("RNIC_PERF_SECS") ?
                  g_ascii_strtod(g_getenv("RNIC_PERF_SECS"), NULL) : 2.0;
    unsigned i;
    double lat_w, lat_r, lat_nop;
    gint64 t0;

    seg_init(&seg);
    boot_stream_pair(&seg, &a, &b, NULL);
    p = wv_rc_pair(a, b, 0, &path_4k, 8);
    /* connect (the stream peer attaches asynchronously) and warm up */
    perf_bw(a, b, &p, RNIC_WR_RDMA_WRITE, 4096, 0.2);
    for (i = 0; i < G_N_ELEMENTS(sizes); i++) {
        double bw = perf_bw(a, b, &p, RNIC_WR_RDMA_WRITE, sizes[i], secs);

        g_test_maximized_result(bw, "RDMA WRITE %7u B: %8.1f MB/s "
                                "(%.0f ops/s)", sizes[i], bw / 1e6,
                                bw / sizes[i]);
    }
    for (i = 0; i < G_N_ELEMENTS(sizes); i++) {
        double bw = perf_bw(a, b, &p, RNIC_WR_SEND, sizes[i], secs);

        g_test_maximized_result(bw, "SEND       %7u B: %8.1f MB/s "
                                "(%.0f ops/s)", sizes[i], bw / 1e6,
                                bw / sizes[i]);
    }
    lat_w = perf_lat(a, b, &p, RNIC_WR_RDMA_WRITE, 2000);
    lat_r = perf_lat(a, b, &p, RNIC_WR_RDMA_READ, 2000);
    /* what one empty poll of the CQ costs the driver (qtest round trip) */
    t0 = g_get_monotonic_time();
    for (i = 0; i < 2000; i++) {
        perf_poll(a, 1);
    }
    lat_nop = (g_get_monotonic_time() - t0) / 2000.0;
    g_test_minimized_result(lat_w, "RDMA WRITE 64 B round trip (post -> "
                            "CQE): %.1f us median", lat_w);
    g_test_minimized_result(lat_r, "RDMA READ  64 B round trip (post -> "
                            "CQE): %.1f us median", lat_r);
    g_test_minimized_result(lat_nop, "driver overhead: one CQ poll %.1f us, "
                            "one post ~%.1f us", lat_nop, 2 * lat_nop);
    lat_w = perf_raw_rtt(false, 5000);
    lat_r = perf_raw_rtt(true, 5000);
    g_test_minimized_result(lat_w, "raw peer <-> rnic, 64 B WRITE -> ACK: "
                            "%.1f us median", lat_w);
    g_test_minimized_result(lat_r, "raw peer <-> rnic, 64 B READ -> "
                            "response: %.1f us median", lat_r);
    g_test_message("A: TX frames %" PRIu64 ", RX frames %" PRIu64
                   ", retransmits %" PRIu64 ", TX dropped %" PRIu64,
                   tv_stat(&a->d, RNIC_STAT_TX_FRAMES),
                   tv_stat(&a->d, RNIC_STAT_RX_FRAMES),
                   tv_stat(&a->d, RNIC_STAT_RETRANSMITS),
                   tv_stat(&a->d, RNIC_STAT_TX_DROPPED));
    wv_pair_free(&p);
    wv_quit(a);
    wv_quit(b);
    seg_free(&seg);
}

static void rnic_wire_register_tests(void)
{
    /* plain tests next to the qos graph's: they boot their own machines */
    qtest_add_func("rnic-wire/two-vms", test_two_vms);
    qtest_add_func("rnic-wire/hub", test_hub);
    qtest_add_func("rnic-wire/three-vms", test_three_vms);
    qtest_add_func("rnic-wire/capture", test_capture);
    qtest_add_func("rnic-wire/faults", test_faults);
    qtest_add_func("rnic-wire/retry-exceeded", test_retry_exceeded);
    qtest_add_func("rnic-wire/rnr-exceeded", test_rnr_exceeded);
    qtest_add_func("rnic-wire/malformed", test_malformed);
    if (g_test_perf()) {
        qtest_add_func("rnic-wire/perf", test_perf);
    }
}

libqos_init(rnic_wire_register_tests);
