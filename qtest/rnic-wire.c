/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The machines, connections and raw peer of the RoCEv2 wire qtests (see
 * rnic-wire.h).
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include <sys/un.h>
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci-pc.h"
#include "qemu/bswap.h"
#include "rnic-wire.h"

/* Every VM alive: the waits step all their clocks. */
static GPtrArray *wv_all;

const WvPath path_1k = { RNIC_MTU_1024, 12, 7, 7 };
const WvPath path_4k = { RNIC_MTU_4096, 12, 7, 7 };

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
WVm *wv_attach(QOSState *qs, int devfn, uint8_t host, uint32_t vlan1)
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
                              TV_ACCESS_ALL, 0, NULL);
    }
    if (!wv_all) {
        wv_all = g_ptr_array_new();
    }
    g_ptr_array_add(wv_all, vm);
    return vm;
}

/* Boot a pc machine whose rnic (04.0) is on '-netdev <netdev>,id=n0'. */
WVm *wv_boot(uint8_t host, const char *netdev, const char *extra,
             uint32_t vlan1)
{
    QOSState *qs = qtest_pc_boot("-M pc -m 512 -netdev %s,id=n0 -device rnic,"
                                 "netdev=n0,addr=04.0,mac=52:54:00:77:00:%02x "
                                 "%s", netdev, host, extra ? extra : "");

    return wv_attach(qs, QPCI_DEVFN(4, 0), host, vlan1);
}

void wv_forget(WVm *vm)
{
    g_ptr_array_remove(wv_all, vm);
    g_free(vm->cq);
    g_free(vm);
}

void wv_quit(WVm *vm)
{
    QOSState *qs = vm->qs;

    wv_forget(vm);
    qtest_shutdown(qs);
}

/* Advance every VM's virtual clock (retransmission and RNR timers). */
void wv_tick(uint64_t ns)
{
    guint i;

    for (i = 0; i < wv_all->len; i++) {
        WVm *vm = g_ptr_array_index(wv_all, i);

        qtest_clock_step(vm->qts, ns);
    }
}

struct rnic_cqe wv_wait(WVm *vm)
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
struct rnic_cqe wv_expect(WVm *vm, uint64_t wr_id, uint8_t opcode,
                          uint32_t len)
{
    struct rnic_cqe c = wv_wait(vm);

    g_assert_cmphex(c.wr_id, ==, wr_id);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, opcode);
    g_assert_cmpuint(le32_to_cpu(c.byte_len), ==, len);
    return c;
}

void wv_gid(uint8_t gid[16], WVm *vm, int ci)
{
    qv_gid_bytes(gid, vm->vlan[ci], vm->host);
}

/* RESET -> RTS of an RC QP of context 'ci' towards 'peer''s QPN 'dqpn'. */
void wv_rc_connect(WVm *vm, TvQp *qp, int ci, WVm *peer, uint32_t dqpn,
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

WvPair wv_rc_pair(WVm *a, WVm *b, int ci, const WvPath *p, int log)
{
    WvPair r;

    r.a = tv_qp(&a->d, RNIC_QPT_RC, a->pd[ci], a->cq, a->cq, NULL, log, 0);
    r.b = tv_qp(&b->d, RNIC_QPT_RC, b->pd[ci], b->cq, b->cq, NULL, log, 0);
    wv_rc_connect(a, r.a, ci, b, r.b->qpn, p);
    wv_rc_connect(b, r.b, ci, a, r.a->qpn, p);
    return r;
}

void wv_pair_free(WvPair *p)
{
    g_free(p->a);
    g_free(p->b);
}

void wv_pattern(uint8_t *p, size_t len, uint32_t seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
    }
}

/* Fill guest [addr, addr + len) of 'vm' with pattern 'seed'. */
void wv_fill(WVm *vm, uint64_t addr, size_t len, uint32_t seed)
{
    g_autofree uint8_t *p = g_malloc(len);

    wv_pattern(p, len, seed);
    qtest_bufwrite(vm->qts, addr, p, len);
}

/* Guest memory of 'vm' must hold pattern 'seed'. */
void wv_check(WVm *vm, uint64_t addr, size_t len, uint32_t seed)
{
    g_autofree uint8_t *want = g_malloc(len);
    g_autofree uint8_t *got = g_malloc(len);

    wv_pattern(want, len, seed);
    qtest_bufread(vm->qts, addr, got, len);
    g_assert_cmpmem(got, len, want, len);
}

/* Error counters of the wire: all zero on a clean segment. */
void wv_assert_clean(WVm *vm)
{
    unsigned s;

    for (s = RNIC_STAT_RX_ERR_HEADER; s <= RNIC_STAT_RX_ERR_OPCODE; s++) {
        g_assert_cmpuint(tv_stat(&vm->d, s), ==, 0);
    }
    g_assert_cmpuint(tv_stat(&vm->d, RNIC_STAT_RX_DROPPED), ==, 0);
    g_assert_cmpuint(tv_stat(&vm->d, RNIC_STAT_TX_DROPPED), ==, 0);
}

void seg_init(Seg *s)
{
    s->dir = g_dir_make_tmp("rnic-wire-XXXXXX", NULL);
    g_assert(s->dir);
}

char *seg_path(Seg *s, const char *name)
{
    return g_strdup_printf("%s/%s", s->dir, name);
}

void seg_free(Seg *s)
{
    rnic_tmpdir_remove(s->dir);
    g_free(s->dir);
}

/* '-netdev stream' over a unix socket: A listens, B connects. */
void boot_stream_pair(Seg *s, WVm **a, WVm **b, const char *extra_a)
{
    g_autofree char *sock = seg_path(s, "stream.sock");
    g_autofree char *na = g_strdup_printf("stream,server=on,addr.type=unix,"
                                          "addr.path=%s", sock);
    g_autofree char *nb = g_strdup_printf("stream,server=off,addr.type=unix,"
                                          "addr.path=%s", sock);

    *a = wv_boot(1, na, extra_a, 100);
    *b = wv_boot(2, nb, NULL, 100);
}

void raw_init(Raw *t)
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
                      TV_ACCESS_ALL, 0, NULL);
    /* another network context (VLAN 5) with its own region and GID */
    t->ctx5 = tv_net_ctx(d, 5);
    qv_gid(d, 2, t->ctx5, 5, 1);
    t->pd5 = tv_pd(d, t->ctx5, 0);
    t->region5 = qv_alloc(d, 4096, 4096);
    qtest_memset(t->a->qts, t->region5, 0x5c, 4096);
    t->mr5 = tv_reg_mr(d, t->pd5, t->region5, 4096, TV_ACCESS_ALL, 0, NULL);
}

void raw_free(Raw *t)
{
    close(t->fd);
    wv_quit(t->a);
    seg_free(&t->seg);
}

/* An RC QP of A (context 0) connected to the test, peer QPN 'pqpn'. */
TvQp *raw_qp(Raw *t, uint32_t pqpn)
{
    WVm peer = { .host = PEER_HOST };
    TvQp *qp = tv_qp(&t->a->d, RNIC_QPT_RC, t->a->pd[0], t->a->cq, t->a->cq,
                     NULL, 4, 0);

    memcpy(peer.mac, t->mac, 6);
    wv_rc_connect(t->a, qp, 0, &peer, pqpn, &path_1k);
    return qp;
}

/* A valid RDMA WRITE_ONLY from the test to A's 'qp' at PSN 'psn'. */
RnicRoceHdr raw_write(Raw *t, TvQp *qp, uint32_t psn, uint64_t va,
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

size_t raw_encode(const RnicRoceHdr *h, uint8_t *frame, size_t size)
{
    size_t len;

    g_assert_cmpint(rnic_roce_encode_linear(h, frame, size, &len), ==,
                    RNIC_ROCE_OK);
    return len;
}

void raw_send_bytes(Raw *t, const uint8_t *frame, size_t len)
{
    g_assert_cmpint(sendto(t->fd, frame, len, 0,
                           (struct sockaddr *)&t->a_addr,
                           sizeof(t->a_addr)), ==, len);
}
