/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: arbitrary bytes as a frame from the segment into a
 * live engine (rnic_engine_receive: classification, decode, the wire's
 * checks, the RC responder/requester, UD and QP1 receives). The engine
 * has two network contexts (VLAN 0, VLAN 9), an RC QP connected to a peer
 * GID, a UC QP connected to the same peer, a UD QP (in the multicast
 * group 224.1.2.3), a GSI QP, a registered page between two unregistered
 * guard pages, and a memory window whose middle page is a region of kind
 * SCM allowing every storage semantic (the window's other pages guards).
 *
 * Before each input the RC QP is connected again (RESET .. RTS, SQ PSN
 * 100) and has requests outstanding toward the peer, so that the peer's
 * answers reach the requester: an RDMA READ of 1 KiB (four response
 * packets at the 256-byte path MTU, PSNs 100..103), a FETCH_ADD (104) and
 * a SEND of 768 bytes (three packets, 105..107).
 *
 * The input is one or more frames separated by FRAME_SEP (at most
 * MAX_FRAMES), received one after the other with the engine's work done
 * between them; the clock moves on after the last. A frame that fails
 * only on its ICRC gets its ICRC fixed, so that mutations reach the
 * transport. Checks: no crash, no sanitizer report, the guard pages never
 * written, the engine never gets stuck, and no call into the engine does
 * more work than the bound of its kind (rnic_engine_call_overruns after
 * every frame and its work, the connection set up again and the timers;
 * the largest figures per call kind printed at exit, fuzz-common.h).
 *
 * Seeds (fuzz-common.h): valid frames to every QP and answer sequences
 * to the outstanding requests:
 *   ./fuzz-wire-rx corpus -max_total_time=60
 */
#include "rnic-engine-int.h"
#include "fuzz-common.h"
#include "rnic-test-verbs.h"
#include "rnic-roce.h"

#define PEER_QPN    0x77
#define PEER_UC_QPN 0x78
#define GUARD       0xa5
#define FRAME_SEP   "\xfeRNX"
#define SEP_LEN     4
#define MAX_FRAMES  16

/* The outstanding requests (see above): lengths and first PSNs. */
#define PSN0        100
#define READ_LEN    1024
#define SEND_LEN    768
#define READ_PSN    PSN0
#define ATOMIC_PSN  (PSN0 + READ_LEN / 256)
#define SEND_PSN    (ATOMIC_PSN + 1)
#define LAST_PSN    (SEND_PSN + SEND_LEN / 256 - 1)

static TestHost *h;
static TvQp *rc, *uc, *ud, *gsi;
static TvCq *cq;
static uint32_t ctx0, ctx9, pd0, pd9, mr, mr9, scm;
static uint64_t region;         /* guard | registered page | guard */
static uint64_t region9;        /* a page of context 9 (QP1's receives) */
static uint8_t peer_gid[16];
/* ::ffff:224.1.2.3, which the UD QP joined, and ::ffff:224.9.9.9 */
static const uint8_t group[16] = {
    [10] = 0xff, [11] = 0xff, [12] = 224, [13] = 1, [14] = 2, [15] = 3,
};
static const uint8_t no_group[16] = {
    [10] = 0xff, [11] = 0xff, [12] = 224, [13] = 9, [14] = 9, [15] = 9,
};

/* The RC QP from any state to RTS again, its rings empty. */
static void rc_connect(void)
{
    struct rnic_qp_attr a = { .qp_state = RNIC_QPS_RESET };
    TvRcPath p = {
        .dest_qpn = PEER_QPN,
        .psn = PSN0,
        .mtu = RNIC_MTU_256,
        .timeout = 1,
        .retry_cnt = 1,
        .rnr_retry = 1,
        .rd_atomic = 4,
        .access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
                  RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC,
    };

    tv_modify(h, rc, &a, RNIC_QP_STATE);
    rc->sq_prod = rc->rq_prod = 0;
    memcpy(p.dgid, peer_gid, 16);
    tv_rc_connect_path(h, rc, &p);
}

/* The UC QP, unless it is in RTS, from RESET to RTS again. */
static void uc_restart(void)
{
    struct rnic_qp_attr a = { .qp_state = RNIC_QPS_RESET };
    TvRcPath p = {
        .dest_qpn = PEER_UC_QPN,
        .psn = PSN0,
        .mtu = RNIC_MTU_256,
        .access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE,
    };

    if (rnic_qp_lookup(h->engine, uc->handle)->state == RNIC_QPS_RTS) {
        return;
    }
    tv_modify(h, uc, &a, RNIC_QP_STATE);
    uc->sq_prod = uc->rq_prod = 0;
    memcpy(p.dgid, peer_gid, 16);
    tv_rc_connect_path(h, uc, &p);
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
    tv_modify(h, qp, &a, RNIC_QP_STATE);
    qp->sq_prod = qp->rq_prod = 0;
    tv_ud_ready(h, qp, qkey);
}

static void setup(void)
{
    RnicEngineConfig cfg;

    rnic_engine_config_defaults(&cfg);
    cfg.scm_pages = 4;
    cfg.scm_persistent = 1;
    h = test_host_new_sized(&cfg, 8u << 20);
    memset(h->scm, GUARD, h->scm_size);
    tv_enable(h, 6);
    /* one staging buffer for every MODIFY_QP (no leak per input) */
    h->modify_attr = test_alloc(h, sizeof(struct rnic_qp_attr), 64);
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
    mr = tv_reg_mr(h, pd0, region + 4096, 4096, TV_ACCESS_ALL, 0, NULL);
    region9 = test_alloc(h, 4096, 4096);
    mr9 = tv_reg_mr(h, pd9, region9, 4096, TV_ACCESS_ALL, 0, NULL);
    scm = tv_reg_scm(h, pd0, 0, 4096, 4096,
                     TV_ACCESS_ALL | RNIC_ACCESS_FLUSH_PERSISTENT,
                     (1u << RNIC_SCM_SEM_COUNT) - 1, 0x05, NULL);
    rc = tv_qp(h, RNIC_QPT_RC, pd0, cq, cq, NULL, 4, 0);
    uc = tv_qp(h, RNIC_QPT_UC, pd0, cq, cq, NULL, 4, 0);
    ud = tv_qp(h, RNIC_QPT_UD, pd0, cq, cq, NULL, 4, 0);
    gsi = tv_qp(h, RNIC_QPT_GSI, pd9, cq, cq, NULL, 4, 0);
    rc_connect();
    uc_restart();
    tv_ud_ready(h, ud, 0x1234);
    tv_ud_ready(h, gsi, RNIC_ROCE_GSI_QKEY);
    {
        struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ATTACH_MCAST };

        memcpy(c.mcast.gid, group, 16);
        c.mcast.qp = ud->handle;
        tv_cmd_ok(h, &c);
    }
}

/* The requests of the header comment, posted on the freshly connected QP. */
static void post_requests(void)
{
    struct rnic_sq_wqe w;
    struct rnic_sge s;

    w = tv_wqe(1, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = 0x100000;
    w.rdma.rkey = 0x4242;
    s = tv_sge(region + 4096, READ_LEN, mr);
    tv_write_send(h, rc, &w, &s, NULL);
    w = tv_wqe(2, RNIC_WR_ATOMIC_FETCH_ADD, 1);
    w.atomic.remote_addr = 0x200000;
    w.atomic.rkey = 0x4242;
    w.atomic.compare_add = 1;
    s = tv_sge(region + 4096 + 2048, 8, mr);
    tv_write_send(h, rc, &w, &s, NULL);
    w = tv_wqe(3, RNIC_WR_SEND, 1);
    s = tv_sge(region + 4096, SEND_LEN, mr);
    tv_write_send(h, rc, &w, &s, NULL);
    CHECK(tv_ring_sq(h, rc) == 0);
    test_host_run(h);
    CHECK(rnic_qp_lookup(h->engine, rc->handle)->req_psn == LAST_PSN + 1);
}

/* A frame from the peer to our RC QP (or, for UD opcodes, the UD QPs). */
static void peer_hdr(RnicRoceHdr *hd, uint8_t op, uint32_t psn)
{
    memset(hd, 0, sizeof(*hd));
    memcpy(hd->dmac, h->cfg.mac, 6);
    hd->smac[0] = 0x52;
    hd->smac[5] = 2;
    memcpy(hd->sgid, peer_gid, 16);
    tv_gid_bytes(hd->dgid, ctx0, 1);
    hd->hop_limit = 64;
    hd->udp_sport = 0xc000;
    hd->opcode = op;
    hd->pkey = 0xffff;
    hd->dest_qp = rc->qpn;
    hd->ack_req = true;
    hd->psn = psn;
}

/* Append the encoded frame of 'hd' (and a separator when not first). */
static void add_frame(GByteArray *b, const RnicRoceHdr *hd)
{
    uint8_t f[9000];
    size_t len;

    CHECK(rnic_roce_encode_linear(hd, f, sizeof(f), &len) == RNIC_ROCE_OK);
    if (b->len) {
        g_byte_array_append(b, (const guint8 *)FRAME_SEP, SEP_LEN);
    }
    g_byte_array_append(b, f, len);
}

static void flush_seed(const char *dir, GByteArray *b)
{
    fuzz_write_seed_bytes(dir, b);
    g_byte_array_set_size(b, 0);
}

/* Requests from the peer to each QP: the responder, UD and QP1 receives. */
static void write_request_seeds(const char *dir, GByteArray *b)
{
    static const uint8_t ops[] = {
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
        0x0b, 0x0c, 0x0d, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x1c, 0x1d,
        0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a,
        0x2b, 0x64, 0x65,
    };
    static uint8_t payload[256];
    RnicRoceHdr hd;
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(ops); i++) {
        bool udop = ops[i] >= 0x64, ucop = ops[i] >= 0x20 && !udop;
        uint8_t pos = ops[i] & 0x1f;

        peer_hdr(&hd, ops[i], PSN0);
        hd.dest_qp = udop ? (i & 1 ? 1 : ud->qpn) : ucop ? uc->qpn : rc->qpn;
        hd.reth.va = region + 4096;
        hd.reth.rkey = mr;
        hd.reth.dma_len = 256;
        hd.atomic_eth.va = region + 4096;
        hd.atomic_eth.rkey = mr;
        hd.deth.qkey = hd.dest_qp == 1 ? RNIC_ROCE_GSI_QKEY : 0x1234;
        if (hd.dest_qp == 1) {
            hd.vlan_present = true;
            hd.vlan_id = 9;
            tv_gid_bytes(hd.dgid, ctx9, 1);
        }
        if (rnic_roce_op_info(ops[i])->flags & RNIC_ROCE_OPF_PAYLOAD) {
            hd.payload = payload;
            hd.payload_len = pos == 0x00 || pos == 0x01 ||
                             pos == 0x06 || pos == 0x07 ? 256 : 100;
        }
        if (ops[i] == RNIC_ROCE_RC_ATOMIC_WRITE) {
            hd.payload_len = hd.reth.dma_len = 8;
        }
        hd.feth.plt = RNIC_FLUSH_GLOBAL;
        add_frame(b, &hd);
        flush_seed(dir, b);
    }
}

/*
 * UC messages of several packets to the UC QP: a SEND with its middle
 * packet lost and the next SEND whole; a WRITE with a gap, then one whole.
 */
static void write_uc_seeds(const char *dir, GByteArray *b)
{
    static const uint8_t seq[][2] = {   /* opcode, PSN offset */
        { RNIC_ROCE_UC_SEND_FIRST, 0 }, { RNIC_ROCE_UC_SEND_LAST, 2 },
        { RNIC_ROCE_UC_SEND_FIRST, 3 }, { RNIC_ROCE_UC_SEND_MIDDLE, 4 },
        { RNIC_ROCE_UC_SEND_LAST_WITH_IMMEDIATE, 5 },
        { RNIC_ROCE_UC_RDMA_WRITE_FIRST, 6 }, { RNIC_ROCE_UC_RDMA_WRITE_LAST, 8 },
        { RNIC_ROCE_UC_RDMA_WRITE_FIRST, 9 },
        { RNIC_ROCE_UC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 10 },
    };
    static uint8_t payload[256];
    RnicRoceHdr hd;
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(seq); i++) {
        uint16_t flags = rnic_roce_op_info(seq[i][0])->flags;

        peer_hdr(&hd, seq[i][0], PSN0 + seq[i][1]);
        hd.dest_qp = uc->qpn;
        hd.reth.va = region + 4096;
        hd.reth.rkey = mr;
        hd.reth.dma_len = 256 + 100;    /* a FIRST and a LAST */
        hd.payload = payload;
        hd.payload_len = flags & RNIC_ROCE_OPF_LAST ? 100 : 256;
        add_frame(b, &hd);
    }
    flush_seed(dir, b);
}

/*
 * Requests to the window's region through every semantic of its key: a
 * WRITE, a READ, FLUSH (persistence, whole region), ATOMIC WRITE, a fetch
 * and add; a management request (PERSIST) through every key too.
 */
static void write_scm_seeds(const char *dir, GByteArray *b)
{
    static const uint8_t ops[] = {
        RNIC_ROCE_RC_RDMA_WRITE_ONLY, RNIC_ROCE_RC_RDMA_READ_REQUEST,
        RNIC_ROCE_RC_FLUSH, RNIC_ROCE_RC_ATOMIC_WRITE,
        RNIC_ROCE_RC_FETCH_ADD, RNIC_ROCE_RC_RDMA_WRITE_ONLY,
    };
    struct rnic_scm_mgmt m = {
        .op = RNIC_SCM_MGMT_PERSIST, .offset = 8, .length = 100,
    };
    static uint8_t payload[64];
    RnicRoceHdr hd;
    unsigned i, sem;

    for (sem = 0; sem < 8; sem++) {
        for (i = 0; i < G_N_ELEMENTS(ops); i++) {
            bool mgmt = i == G_N_ELEMENTS(ops) - 1;

            peer_hdr(&hd, ops[i], PSN0);
            hd.dest_qp = rc->qpn;
            hd.reth.va = mgmt ? 0 : 64;
            hd.reth.rkey = RNIC_SCM_STAG(scm, sem);
            hd.reth.dma_len = ops[i] == RNIC_ROCE_RC_ATOMIC_WRITE ? 8 :
                              mgmt ? sizeof(m) : 64;
            hd.atomic_eth.va = 64;
            hd.atomic_eth.rkey = hd.reth.rkey;
            hd.feth.plt = RNIC_FLUSH_PERSISTENT;
            hd.feth.sel = RNIC_FLUSH_MR;
            if (rnic_roce_op_info(ops[i])->flags & RNIC_ROCE_OPF_PAYLOAD) {
                hd.payload = mgmt ? (const uint8_t *)&m : payload;
                hd.payload_len = hd.reth.dma_len;
            }
            add_frame(b, &hd);
            flush_seed(dir, b);
        }
    }
}

/* An acknowledgement (syndrome: RNIC_ROCE_AETH_*) of 'psn'. */
static void add_ack(GByteArray *b, uint32_t psn, uint8_t syndrome,
                    uint32_t msn)
{
    RnicRoceHdr hd;

    peer_hdr(&hd, RNIC_ROCE_RC_ACKNOWLEDGE, psn);
    hd.ack_req = false;
    hd.aeth.syndrome = syndrome;
    hd.aeth.msn = msn;
    add_frame(b, &hd);
}

/* READ response packets [first, last] of the outstanding READ. */
static void add_read_resp(GByteArray *b, unsigned first, unsigned last)
{
    static uint8_t payload[256];
    unsigned n = READ_LEN / 256, i;
    RnicRoceHdr hd;

    for (i = first; i <= last && i < n; i++) {
        uint8_t op = n == 1 ? RNIC_ROCE_RC_RDMA_READ_RESPONSE_ONLY :
                     i == 0 ? RNIC_ROCE_RC_RDMA_READ_RESPONSE_FIRST :
                     i == n - 1 ? RNIC_ROCE_RC_RDMA_READ_RESPONSE_LAST :
                     RNIC_ROCE_RC_RDMA_READ_RESPONSE_MIDDLE;

        peer_hdr(&hd, op, READ_PSN + i);
        hd.ack_req = false;
        hd.aeth.syndrome = RNIC_ROCE_AETH_CREDIT_INVALID;
        hd.aeth.msn = 1;
        memset(payload, i + 1, sizeof(payload));
        hd.payload = payload;
        hd.payload_len = 256;
        add_frame(b, &hd);
    }
}

static void add_atomic_ack(GByteArray *b, uint32_t psn)
{
    RnicRoceHdr hd;

    peer_hdr(&hd, RNIC_ROCE_RC_ATOMIC_ACKNOWLEDGE, psn);
    hd.ack_req = false;
    hd.aeth.syndrome = RNIC_ROCE_AETH_CREDIT_INVALID;
    hd.aeth.msn = 2;
    hd.atomic_ack_eth.orig = 0x1122334455667788ull;
    add_frame(b, &hd);
}

/* The peer's answers to the outstanding requests, right and wrong. */
static void write_response_seeds(const char *dir, GByteArray *b)
{
    const uint8_t nak = RNIC_ROCE_AETH_NAK;

    /* everything answered in order */
    add_read_resp(b, 0, 3);
    add_atomic_ack(b, ATOMIC_PSN);
    add_ack(b, LAST_PSN, RNIC_ROCE_AETH_CREDIT_INVALID, 3);
    flush_seed(dir, b);
    /* a coalesced ACK of all: the READ responses were lost */
    add_ack(b, LAST_PSN, RNIC_ROCE_AETH_CREDIT_INVALID, 3);
    flush_seed(dir, b);
    /* READ responses out of order, duplicated, then the rest */
    add_read_resp(b, 0, 0);
    add_read_resp(b, 2, 3);
    add_read_resp(b, 0, 1);
    add_read_resp(b, 1, 3);
    add_atomic_ack(b, ATOMIC_PSN);
    add_atomic_ack(b, ATOMIC_PSN);
    flush_seed(dir, b);
    /* sequence error NAK at the READ, at the SEND's middle packet */
    add_ack(b, READ_PSN, nak | RNIC_ROCE_NAK_PSN_SEQ_ERR, 0);
    flush_seed(dir, b);
    add_read_resp(b, 0, 3);
    add_atomic_ack(b, ATOMIC_PSN);
    add_ack(b, SEND_PSN + 1, nak | RNIC_ROCE_NAK_PSN_SEQ_ERR, 2);
    flush_seed(dir, b);
    /* RNR NAK of the SEND, then its ACK */
    add_read_resp(b, 0, 3);
    add_atomic_ack(b, ATOMIC_PSN);
    add_ack(b, SEND_PSN, RNIC_ROCE_AETH_RNR_NAK | 1, 2);
    add_ack(b, LAST_PSN, RNIC_ROCE_AETH_CREDIT_INVALID, 3);
    flush_seed(dir, b);
    /* fatal NAKs: remote access (the atomic), invalid request (READ) */
    add_read_resp(b, 0, 3);
    add_ack(b, ATOMIC_PSN, nak | RNIC_ROCE_NAK_REMOTE_ACCESS, 1);
    flush_seed(dir, b);
    add_ack(b, READ_PSN, nak | RNIC_ROCE_NAK_INVALID_REQ, 0);
    add_ack(b, READ_PSN, nak | RNIC_ROCE_NAK_REMOTE_OP, 0);
    flush_seed(dir, b);
    /* an atomic ACK where a READ response is due, an ACK beyond the end */
    add_atomic_ack(b, READ_PSN);
    add_ack(b, LAST_PSN + 5, RNIC_ROCE_AETH_CREDIT_INVALID, 9);
    flush_seed(dir, b);
}

/*
 * UD SENDs to multicast groups: to the one the UD QP joined (QPN
 * 0xffffff, its Ethernet address 01:00:5e:01:02:03), to one nobody
 * joined, and to the joined one but not to QPN 0xffffff (dropped).
 */
static void write_mcast_seeds(const char *dir, GByteArray *b)
{
    static uint8_t payload[64];
    RnicRoceHdr hd;
    unsigned i;

    for (i = 0; i < 3; i++) {
        const uint8_t *g = i == 1 ? no_group : group;

        peer_hdr(&hd, RNIC_ROCE_UD_SEND_ONLY, PSN0);
        memcpy(hd.dgid, g, 16);
        hd.dmac[0] = 0x01;
        hd.dmac[1] = 0x00;
        hd.dmac[2] = 0x5e;
        memcpy(hd.dmac + 3, g + 13, 3);
        hd.dest_qp = i == 2 ? ud->qpn : 0xffffff;
        hd.deth.qkey = 0x1234;
        hd.payload = payload;
        hd.payload_len = sizeof(payload);
        add_frame(b, &hd);
        flush_seed(dir, b);
    }
}

static void write_seeds(const char *dir)
{
    GByteArray *b = g_byte_array_new();

    write_request_seeds(dir, b);
    write_mcast_seeds(dir, b);
    write_uc_seeds(dir, b);
    write_scm_seeds(dir, b);
    write_response_seeds(dir, b);
    g_byte_array_unref(b);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_calls_init("fuzz-wire-rx");
    setup();
    fuzz_calls_check(h->engine, "setup");
    fuzz_seeds(*argc, *argv, write_seeds);
    return 0;
}

/* The next FRAME_SEP in [p, end), or end. */
static const uint8_t *find_sep(const uint8_t *p, const uint8_t *end)
{
    for (; end - p >= SEP_LEN; p++) {
        if (!memcmp(p, FRAME_SEP, SEP_LEN)) {
            return p;
        }
    }
    return end;
}

/* Receive one frame (its ICRC fixed first), then do the work it made. */
static void receive(const uint8_t *data, size_t size)
{
    static uint8_t frame[RNIC_ETH_MAX_FRAME];
    struct iovec iov;

    if (size > sizeof(frame)) {
        return;
    }
    memcpy(frame, data, size);
    fuzz_fix_icrc(frame, size);
    iov.iov_base = frame;
    iov.iov_len = size;
    CHECK(rnic_engine_receive(h->engine, &iov, 1));
    fuzz_calls_check(h->engine, "frame");
    test_host_run(h);
    fuzz_calls_check(h->engine, "run after a frame");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rnic_cqe c[64];
    const uint8_t *end = data + size, *sep;
    uint8_t *g;
    unsigned i;

    /* the same starting point for every input */
    rc_connect();
    post_recvs(rc, region + 4096, mr);
    post_requests();
    fuzz_calls_check(h->engine, "connect and post");
    g_ptr_array_set_size(h->frames, 0);
    for (i = 0; i < MAX_FRAMES && data <= end; i++) {
        sep = find_sep(data, end);
        receive(data, sep - data);
        data = sep + SEP_LEN;
    }
    test_host_advance(h, 100000);       /* timers: retransmit, RNR */
    fuzz_calls_check(h->engine, "timers");
    g_ptr_array_set_size(h->frames, 0); /* answers go nowhere */
    g_ptr_array_set_size(h->log, 0);
    while (tv_poll(h, cq, c, 64) > 0) {
        ;
    }
    g = test_ptr(h, region);
    CHECK(fuzz_all_bytes(g, 4096, GUARD));
    CHECK(fuzz_all_bytes(g + 8192, 4096, GUARD));
    CHECK(fuzz_all_bytes(h->scm, 4096, GUARD));
    CHECK(fuzz_all_bytes(h->scm + 8192, 8192, GUARD));
    uc_restart();
    ud_restart(ud, 0x1234);
    ud_restart(gsi, RNIC_ROCE_GSI_QKEY);
    post_recvs(uc, region + 4096, mr);
    post_recvs(ud, region + 4096, mr);
    post_recvs(gsi, region9, mr9);
    fuzz_calls_check(h->engine, "restart");
    fuzz_calls_input_done(h->engine);
    return 0;
}
