/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: arbitrary bytes as a frame from the segment into a
 * live engine (rnic_engine_receive: classification, decode, the wire's
 * checks, the RC responder/requester, UD and QP1 receives). The engine
 * has two network contexts (VLAN 0, VLAN 9), an RC QP connected to a peer
 * GID, a UD QP, a GSI QP and a registered page between two unregistered
 * guard pages. A frame that fails only on its ICRC gets its ICRC fixed, so
 * that mutations reach the transport. Checks: no crash, no sanitizer
 * report, the guard pages never written, the engine never gets stuck.
 *
 * Seeds: with RNIC_FUZZ_SEEDS=DIR set, valid frames to every QP are
 * written into DIR first:
 *   RNIC_FUZZ_SEEDS=corpus ./fuzz-wire-rx corpus -max_total_time=60
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"
#include "rnic-roce.h"

#define CHECK(cond) do { \
        if (!(cond)) { \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
                    __LINE__, #cond); \
            abort(); \
        } \
    } while (0)

#define PEER_QPN    0x77
#define GUARD       0xa5

static TestHost *h;
static TvQp *rc, *ud, *gsi;
static TvCq *cq;
static uint32_t ctx0, ctx9, pd0, pd9, mr, mr9;
static uint64_t region;         /* guard | registered page | guard */
static uint64_t region9;        /* a page of context 9 (QP1's receives) */
static uint8_t peer_gid[16];
static uint64_t attr_addr;      /* MODIFY_QP input, reused (no leak) */

static uint8_t modify(TvQp *qp, struct rnic_qp_attr *a, uint32_t mask)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_MODIFY_QP };

    memcpy(test_ptr(h, attr_addr), a, sizeof(*a));
    c.modify_qp.attr_addr = attr_addr;
    c.modify_qp.qp = qp->handle;
    c.modify_qp.attr_mask = mask;
    return tv_cmd(h, &c).status;
}

static void ud_ready(TvQp *qp, uint32_t qkey)
{
    struct rnic_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = RNIC_QPS_INIT;
    a.port_num = 1;
    a.qkey = qkey;
    CHECK(modify(qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_QKEY |
                 (qp->type == RNIC_QPT_UD ? RNIC_QP_PORT : 0)) == RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTR;
    CHECK(modify(qp, &a, RNIC_QP_STATE) == RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTS;
    CHECK(modify(qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN) == RNIC_ST_OK);
}

static void rc_connect(void)
{
    struct rnic_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = RNIC_QPS_RESET;
    modify(rc, &a, RNIC_QP_STATE);
    rc->sq_prod = rc->rq_prod = 0;
    a.qp_state = RNIC_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
                        RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC;
    CHECK(modify(rc, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX |
                    RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS) == RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTR;
    a.path_mtu = RNIC_MTU_256;
    a.dest_qp_num = PEER_QPN;
    a.rq_psn = 100;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 1;
    memcpy(a.av.dgid, peer_gid, 16);
    CHECK(modify(rc, &a, RNIC_QP_STATE | RNIC_QP_AV |
                    RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN |
                    RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER) ==
          RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTS;
    a.timeout = 1;
    a.retry_cnt = 1;
    a.rnr_retry = 1;
    a.sq_psn = 100;
    a.max_rd_atomic = 4;
    CHECK(modify(rc, &a, RNIC_QP_STATE | RNIC_QP_TIMEOUT |
                    RNIC_QP_RETRY_CNT | RNIC_QP_RNR_RETRY | RNIC_QP_SQ_PSN |
                    RNIC_QP_MAX_QP_RD_ATOMIC) == RNIC_ST_OK);
}

/* Receives posted so that SENDs and UD datagrams have somewhere to go. */
static void post_recvs(TvQp *qp, uint64_t addr, uint32_t key)
{
    struct rnic_sge s = tv_sge(addr, 4096, key);

    while (qp->rq_prod - rnic_qp_lookup(h->engine, qp->handle)->rq_cons < 8) {
        tv_post_recv(h, qp, 1, &s, 1);
    }
}

/* A UD/GSI QP that went to an error state starts over. */
static void ud_restart(TvQp *qp, uint32_t qkey)
{
    struct rnic_qp_attr a;

    if (rnic_qp_lookup(h->engine, qp->handle)->state == RNIC_QPS_RTS) {
        return;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = RNIC_QPS_RESET;
    modify(qp, &a, RNIC_QP_STATE);
    qp->sq_prod = qp->rq_prod = 0;
    ud_ready(qp, qkey);
}

static void setup(void)
{
    RnicEngineConfig cfg;

    rnic_engine_config_defaults(&cfg);
    h = test_host_new_sized(&cfg, 8u << 20);
    tv_enable(h, 6);
    attr_addr = test_alloc(h, sizeof(struct rnic_qp_attr), 64);
    ctx0 = tv_net_ctx(h, 0);
    ctx9 = tv_net_ctx(h, 9);
    tv_gid(h, 0, ctx0, 1);
    tv_gid(h, 1, ctx9, 1);
    tv_gid_bytes(peer_gid, ctx0, 2);
    pd0 = tv_pd(h, ctx0, 0);
    pd9 = tv_pd(h, ctx9, 0);
    cq = tv_cq(h, 12, RNIC_HANDLE_NONE, 0);
    region = test_alloc(h, 3 * 4096, 4096);
    memset(test_ptr(h, region), GUARD, 3 * 4096);
    mr = tv_reg_mr(h, pd0, region + 4096, 4096, RNIC_ACCESS_ALL, 0, NULL);
    region9 = test_alloc(h, 4096, 4096);
    mr9 = tv_reg_mr(h, pd9, region9, 4096, RNIC_ACCESS_ALL, 0, NULL);
    rc = tv_qp(h, RNIC_QPT_RC, pd0, cq, cq, NULL, 4, 0);
    ud = tv_qp(h, RNIC_QPT_UD, pd0, cq, cq, NULL, 4, 0);
    gsi = tv_qp(h, RNIC_QPT_GSI, pd9, cq, cq, NULL, 4, 0);
    rc_connect();
    ud_ready(ud, 0x1234);
    ud_ready(gsi, RNIC_GSI_QKEY);
}

static uint16_t ld_be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* A frame that is fine but for its ICRC: write the right one. */
static void fix_icrc(uint8_t *f, size_t len)
{
    RnicRoceHdr hd;
    size_t ip_len;
    uint8_t *ip;
    uint32_t crc;

    if (rnic_roce_decode(f, len, &hd) != RNIC_ROCE_ERR_ICRC) {
        return;
    }
    ip = f + hd.l3_offset;
    ip_len = hd.ipv6 ? RNIC_ROCE_IPV6_HLEN + ld_be16(ip + 4) : ld_be16(ip + 2);
    crc = rnic_roce_icrc(ip, hd.ipv6, ip_len - RNIC_ROCE_ICRC_LEN);
    ip += ip_len - RNIC_ROCE_ICRC_LEN;
    ip[0] = crc;
    ip[1] = crc >> 8;
    ip[2] = crc >> 16;
    ip[3] = crc >> 24;
}

static void write_seed(const char *dir, int n, const RnicRoceHdr *hd)
{
    uint8_t f[9000];
    size_t len;
    char *path;
    FILE *fp;

    CHECK(rnic_roce_encode_linear(hd, f, sizeof(f), &len) == RNIC_ROCE_OK);
    path = g_strdup_printf("%s/seed-%02d", dir, n);
    fp = fopen(path, "wb");
    if (fp) {
        fwrite(f, 1, len, fp);
        fclose(fp);
    }
    g_free(path);
}

static void write_seeds(const char *dir)
{
    static const uint8_t ops[] = {
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
        0x0b, 0x0c, 0x0d, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x64, 0x65,
    };
    static uint8_t payload[256];
    RnicRoceHdr hd;
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(ops); i++) {
        bool udop = ops[i] >= 0x64;

        memset(&hd, 0, sizeof(hd));
        memcpy(hd.dmac, h->cfg.mac, 6);
        hd.smac[0] = 0x52;
        hd.smac[5] = 2;
        memcpy(hd.sgid, peer_gid, 16);
        tv_gid_bytes(hd.dgid, ctx0, 1);
        hd.hop_limit = 64;
        hd.udp_sport = 0xc000;
        hd.opcode = ops[i];
        hd.pkey = 0xffff;
        hd.dest_qp = udop ? (i & 1 ? 1 : ud->qpn) : rc->qpn;
        hd.ack_req = true;
        hd.psn = 100;
        hd.reth.va = region + 4096;
        hd.reth.rkey = mr;
        hd.reth.dma_len = 256;
        hd.atomic_eth.va = region + 4096;
        hd.atomic_eth.rkey = mr;
        hd.deth.qkey = hd.dest_qp == 1 ? RNIC_GSI_QKEY : 0x1234;
        if (hd.dest_qp == 1) {
            hd.vlan_present = true;
            hd.vlan_id = 9;
            tv_gid_bytes(hd.dgid, ctx9, 1);
        }
        if (rnic_roce_op_info(ops[i])->flags & RNIC_ROCE_OPF_PAYLOAD) {
            hd.payload = payload;
            hd.payload_len = ops[i] == 0x00 || ops[i] == 0x01 ||
                             ops[i] == 0x06 || ops[i] == 0x07 ? 256 : 100;
        }
        write_seed(dir, i, &hd);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("RNIC_FUZZ_SEEDS");

    setup();
    if (dir) {
        write_seeds(dir);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t frame[RNIC_ETH_MAX_FRAME];
    struct rnic_cqe c[64];
    struct iovec iov;
    uint8_t *g;
    unsigned i;

    if (size > sizeof(frame)) {
        return 0;
    }
    memcpy(frame, data, size);
    fix_icrc(frame, size);
    iov.iov_base = frame;
    iov.iov_len = size;
    CHECK(rnic_engine_receive(h->engine, &iov, 1));
    test_host_advance(h, 100000);       /* timers: retransmit, RNR */
    g_ptr_array_set_size(h->frames, 0); /* answers go nowhere */
    g_ptr_array_set_size(h->log, 0);
    while (tv_poll(h, cq, c, 64) > 0) {
        ;
    }
    g = test_ptr(h, region);
    for (i = 0; i < 4096; i++) {
        CHECK(g[i] == GUARD && g[8192 + i] == GUARD);
    }
    if (rnic_qp_lookup(h->engine, rc->handle)->state != RNIC_QPS_RTS) {
        rc_connect();
    }
    ud_restart(ud, 0x1234);
    ud_restart(gsi, RNIC_GSI_QKEY);
    post_recvs(rc, region + 4096, mr);
    post_recvs(ud, region + 4096, mr);
    post_recvs(gsi, region9, mr9);
    return 0;
}
