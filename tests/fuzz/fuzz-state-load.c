/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: arbitrary bytes as an incoming migration — the
 * configuration record (rnic_engine_check_config) and the state image
 * (rnic_engine_load). The destination trusts nothing in them. Besides "no
 * crash, no out-of-bounds access, no leak" it checks:
 *  - an accepted image saves to one that loads again, and that round trip
 *    reaches a fixed point (save(load(save(load(x))))) == save(load(x))
 *    after the first normalisation, statistics aside): nothing is lost or
 *    invented;
 *  - invariants across sections hold in the loaded engine: every QP has
 *    its PD and CQs, a connected RC QP has a network context unless it
 *    serves every network;
 *  - the loaded engine runs (work, timers, a few rounds) and renders its
 *    tables;
 *  - no call into the engine does more work than the bound of its kind
 *    (rnic_engine_call_overruns of both engines after every step: the
 *    post-load resume is a run), the largest figures per call kind
 *    printed at exit (fuzz-common.h).
 *
 * The mutator knows the image's layout (magic u32, version u32, sections
 * { u16 tag, u16 flags, u32 length, payload }): it drops, duplicates and
 * moves sections, mutates inside one payload and fixes its length, and
 * splices sections of another input (LLVMFuzzerCustomCrossOver).
 *
 * Seeds (fuzz-common.h), written in LLVMFuzzerInitialize: the images and
 * the configuration record of devices with objects of every kind (QPs in
 * each state with work outstanding, MRs, fast-reg MRs, mapped STags, SRQs,
 * EQs, CQs, multi-network PDs with bound RC QPs):
 *   ./fuzz-state-load corpus -max_total_time=60
 */
#include "rnic-engine-int.h"
#include "fuzz-common.h"
#include "rnic-test-verbs.h"

#define FUZZ_RAM (8u << 20)

/*
 * Small tables (the seeds' devices and the destination alike): a load
 * resets the engine first, and that walks every table slot.
 */
static void fuzz_config(RnicEngineConfig *cfg)
{
    rnic_engine_config_defaults(cfg);
    cfg->max_qp = 128;
    cfg->max_cq = 128;
    cfg->max_mr = 512;
    cfg->max_pd = 64;
    cfg->max_srq = 32;
}

/*
 * On top of the busy device: a multi-network PD (ABI 1.1) with an MR and a
 * fast-reg MR, bound to context 'ctx' by two RC QPs, and a UD QP of it in
 * every context (image sections 12 and 13).
 */
static void write_multi_net_seed(const char *dir, TestHost *h, uint32_t ctx,
                                 GByteArray *b)
{
    uint32_t mpd = tv_pd(h, RNIC_PD_MULTI_NET, 0);
    TvCq *cq = tv_cq(h, 4, RNIC_HANDLE_NONE, 0);
    uint64_t buf = test_alloc(h, 8192, 4096);
    uint8_t ga[16], gb[16];
    TvQp *x, *y;

    tv_gid(h, 5, ctx, 4);
    tv_gid_bytes(ga, ctx, 3);
    tv_gid_bytes(gb, ctx, 4);
    tv_reg_mr(h, mpd, buf, 8192, TV_ACCESS_ALL, 0, NULL);
    tv_alloc_mr(h, mpd, 2, 9);
    x = tv_qp(h, RNIC_QPT_RC, mpd, cq, cq, NULL, 2, 0);
    y = tv_qp(h, RNIC_QPT_RC, mpd, cq, cq, NULL, 2, 0);
    tv_rc_connect(h, x, 4, gb, y->qpn);
    tv_rc_connect(h, y, 5, ga, x->qpn);
    g_free(tv_qp(h, RNIC_QPT_UD, mpd, cq, cq, NULL, 2, 0));
    g_byte_array_set_size(b, 0);
    rnic_engine_save(h->engine, b);
    fuzz_write_seed_bytes(dir, b);  /* multi-net */
    g_free(x);
    g_free(y);
    g_free(cq);
}

/* An RC QP of 'pd' moved from RESET up to 'state' toward 'remote'. */
static TvQp *rc_in_state(TestHost *h, uint32_t pd, TvCq *cq, TvSrq *srq,
                         uint8_t state, const uint8_t remote[16])
{
    TvQp *qp = tv_qp(h, RNIC_QPT_RC, pd, cq, cq, srq, 3, 0);
    TvRcPath p = {
        .dest_qpn = 0x99,
        .psn = 5,
        .mtu = RNIC_MTU_1024,
        .rd_atomic = 4,
        .access = TV_ACCESS_ALL & ~RNIC_ACCESS_MW_BIND,
        .state = state,
    };
    struct rnic_qp_attr a = {
        .qp_state = state, .port_num = 1, .qp_access_flags = p.access,
    };

    memcpy(p.dgid, remote, 16);
    if (state == RNIC_QPS_INIT || state == RNIC_QPS_RTR) {
        tv_rc_connect_path(h, qp, &p);
    } else {
        tv_rc_connect(h, qp, 0, remote, 0x99);
        if (state != RNIC_QPS_RTS) {
            CHECK(tv_modify(h, qp, &a, RNIC_QP_STATE) == RNIC_ST_OK);
        }
    }
    return qp;
}

/* A READ, an atomic and a SEND of 3000 bytes on 'qp' (a remote peer). */
static void post_outstanding(TestHost *h, TvQp *qp, uint64_t buf, uint32_t mr)
{
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_RDMA_READ, 1);
    struct rnic_sge s = tv_sge(buf, 4096, mr);

    w.rdma.remote_addr = 0x10000;
    w.rdma.rkey = 0x777;
    tv_write_send(h, qp, &w, &s, NULL);
    w = tv_wqe(2, RNIC_WR_ATOMIC_CMP_SWP, 1);
    w.atomic.remote_addr = 0x20000;
    w.atomic.rkey = 0x777;
    w.atomic.swap = 5;
    s = tv_sge(buf + 4096, 8, mr);
    tv_write_send(h, qp, &w, &s, NULL);
    w = tv_wqe(3, RNIC_WR_SEND, 1);
    s = tv_sge(buf, 3000, mr);
    tv_write_send(h, qp, &w, &s, NULL);
    CHECK(tv_ring_sq(h, qp) == 0);
}

/*
 * Mapped STags (kind MAPPED): one registered by REG_MR over three pieces
 * of bufa, one fast-registered in the interleaved form (table inline), one
 * allocated and never registered.
 */
static void write_mapped(TestHost *h, TvPair *p)
{
    struct rnic_map_seg seg[3] = { 0 };
    struct rnic_sq_wqe w;
    uint32_t i, mk;

    for (i = 0; i < 3; i++) {
        seg[i].addr = p->bufa + 5000 * i + 17;
        seg[i].length = 300 + i;
        seg[i].lkey = p->mra;
    }
    tv_reg_mapped(h, p->pd, 0x9000000, 903, seg, 3, 1,
                  TV_ACCESS_ALL & ~RNIC_ACCESS_MW_BIND, 0x51, NULL);
    mk = tv_alloc_mapped(h, p->pd, 4, 0x52);
    tv_alloc_mapped(h, p->pd, 4, 0x53);
    /* two 8-byte words interleaved, 16 times */
    memset(seg, 0, sizeof(seg));
    seg[0].addr = p->bufa + 65536 + 8;
    seg[0].length = 8;
    seg[0].skip = 8;
    seg[0].lkey = p->mra;
    seg[1].addr = p->bufa + 65536;
    seg[1].length = 8;
    seg[1].skip = 8;
    seg[1].lkey = p->mra;
    w = tv_map_reg_wqe(90, mk, 0xa000000, 256, 2, 16,
                       RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ);
    w.flags |= RNIC_WQE_INLINE;
    w.inline_len = 2 * sizeof(*seg);
    tv_post_send(h, p->a, &w, NULL, seg);
}

/*
 * On top of everything: a second EQ with an armed CQ, an SRQ with
 * receives, RC QPs toward a remote peer in every state (RTS and SQD with
 * requests outstanding, one on the SRQ), a UD QP with receives, a valid
 * and an invalid fast-reg MR.
 */
static void write_zoo_seed(const char *dir, TvPair *p, GByteArray *b)
{
    static const uint8_t states[] = {
        RNIC_QPS_INIT, RNIC_QPS_RTR, RNIC_QPS_RTS, RNIC_QPS_RTS,
        RNIC_QPS_SQD, RNIC_QPS_ERR,
    };
    TestHost *h = p->d;
    uint32_t eq = tv_eq(h, 4, 2, 0, NULL), stag, i;
    TvCq *cq = tv_cq(h, 5, eq, 0);
    TvSrq *srq = tv_srq(h, p->pd, 3, 2, 0);
    uint64_t buf = test_alloc(h, 16384, 4096), pbl = test_alloc(h, 32, 8);
    uint64_t *pages = test_ptr(h, pbl);
    struct rnic_sge s = tv_sge(buf, 2048, p->mra);
    struct rnic_sq_wqe w;
    uint8_t remote[16];
    TvQp *qp;

    tv_gid_v4(remote, 0, 0, 200);
    tv_cq_arm(h, cq, RNIC_DB_ARM_NEXT);
    s = tv_sge(p->bufa, 2048, p->mra);
    for (i = 0; i < 4; i++) {
        tv_post_srq(h, srq, 40 + i, &s, 1);
    }
    for (i = 0; i < G_N_ELEMENTS(states); i++) {
        qp = rc_in_state(h, p->pd, cq, i == 3 ? srq : NULL, states[i],
                         remote);
        if (qp->srq == RNIC_HANDLE_NONE) {
            tv_post_recv(h, qp, 50 + i, &s, 1);
        }
        if (states[i] >= RNIC_QPS_RTS) {
            post_outstanding(h, qp, p->bufa, p->mra);
        }
        g_free(qp);
    }
    qp = tv_qp(h, RNIC_QPT_UD, p->pd, cq, cq, NULL, 3, 0);
    tv_ud_ready(h, qp, 0x1234);
    tv_post_recv(h, qp, 60, &s, 1);
    {
        /* in a multicast group: ::ffff:224.0.0.9 */
        struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ATTACH_MCAST };

        c.mcast.gid[10] = c.mcast.gid[11] = 0xff;
        c.mcast.gid[12] = 224;
        c.mcast.gid[15] = 9;
        c.mcast.qp = qp->handle;
        tv_cmd_ok(h, &c);
    }
    g_free(qp);
    /* memory windows: a type 1 and a type 2B bound by a, a 2B free */
    for (i = 0; i < 3; i++) {
        uint32_t mw = tv_alloc_mw(h, p->pd, i ? RNIC_MW_TYPE_2 : RNIC_MW_TYPE_1,
                                  0x30 + i);

        if (i < 2) {
            w = tv_bind_wqe(80 + i, mw, (mw & ~0xffu) | 0x40, p->mra,
                            p->bufa + 4096 * i, 4096,
                            RNIC_ACCESS_REMOTE_READ |
                            RNIC_ACCESS_REMOTE_WRITE);
            tv_post_send(h, p->a, &w, NULL, NULL);
        }
    }

    stag = tv_alloc_mr(h, p->pd, 4, 0x21);
    tv_alloc_mr(h, p->pd, 4, 0x22);
    for (i = 0; i < 4; i++) {
        pages[i] = buf + 4096 * i;
    }
    w = tv_wqe(70, RNIC_WR_REG_MR, 0);
    w.reg.iova = 0x7000000;
    w.reg.length = 16384;
    w.reg.pbl_addr = pbl;
    w.reg.stag = stag;
    w.reg.access = TV_ACCESS_ALL;
    w.reg.npages = 4;
    w.reg.page_shift = 12;
    tv_post_send(h, p->a, &w, NULL, NULL);
    write_mapped(h, p);
    test_host_run(h);
    g_byte_array_set_size(b, 0);
    rnic_engine_save(h->engine, b);
    fuzz_write_seed_bytes(dir, b);  /* zoo */
    g_free(cq);
    g_free(srq);
}

/* An idle device and a busy one (objects of every kind, traffic done). */
static void write_seeds(const char *dir)
{
    GByteArray *b = g_byte_array_new();
    RnicEngineConfig cfg;
    struct rnic_sq_wqe w;
    struct rnic_sge s, r;
    TestHost *h;
    TvPair *p;
    uint32_t ctx2;
    int i;

    fuzz_config(&cfg);
    p = tv_pair_new(&cfg);
    h = p->d;

    rnic_engine_save_config(h->engine, b);
    fuzz_write_seed_bytes(dir, b);  /* config */
    g_byte_array_set_size(b, 0);
    rnic_engine_save(h->engine, b);
    fuzz_write_seed_bytes(dir, b);  /* pair */

    ctx2 = tv_net_ctx(h, 12);
    tv_gid(h, 4, ctx2, 3);
    tv_pd(h, ctx2, tv_uctx(h));
    g_free(tv_srq(h, p->pd, 4, 1, 0));
    for (i = 0; i < 3; i++) {
        tv_reg_mr(h, p->pd, p->bufa + 4096 * i, 8192, TV_ACCESS_ALL, 0,
                  NULL);
    }
    for (i = 0; i < 3; i++) {
        r = tv_sge(p->bufb, 3000, p->mrb);
        tv_post_recv(h, p->b, 10 + i, &r, 1);
        s = tv_sge(p->bufa, 3000, p->mra);
        w = tv_wqe(i, RNIC_WR_SEND, 1);
        tv_post_send(h, p->a, &w, &s, NULL);
    }
    /* a SEND without a receive: RNR wait, a timer armed */
    tv_post_send(h, p->a, &w, &s, NULL);
    test_host_run(h);
    g_byte_array_set_size(b, 0);
    rnic_engine_save(h->engine, b);
    fuzz_write_seed_bytes(dir, b);  /* busy */
    write_multi_net_seed(dir, h, ctx2, b);
    write_zoo_seed(dir, p, b);
    g_byte_array_unref(b);
    tv_pair_free(p);
}

static GByteArray *save(TestHost *h)
{
    GByteArray *b = g_byte_array_new();

    rnic_engine_save(h->engine, b);
    return b;
}

/*
 * The statistics (section 2) may move with a load (an RC QP with a remote
 * peer resuming counts a retransmission): blank them for the comparison.
 */
static void blank_statistics(GByteArray *x)
{
    size_t pos = 8;

    while (pos + 8 <= x->len) {
        uint16_t tag = x->data[pos] | x->data[pos + 1] << 8;
        uint32_t len = x->data[pos + 4] | x->data[pos + 5] << 8 |
                       x->data[pos + 6] << 16 | (uint32_t)x->data[pos + 7] << 24;

        if (len > x->len - pos - 8) {
            return;
        }
        if (tag == 2) {
            memset(x->data + pos + 8, 0, len);
        }
        pos += 8 + len;
    }
}

/* Where two images first differ: section tag and offset in it. */
static void report_difference(const GByteArray *x, const GByteArray *y)
{
    size_t n = MIN(x->len, y->len), i, pos = 8;

    for (i = 0; i < n && x->data[i] == y->data[i]; i++) {
        continue;
    }
    while (pos + 8 <= x->len) {
        uint16_t tag = x->data[pos] | x->data[pos + 1] << 8;
        uint32_t len = x->data[pos + 4] | x->data[pos + 5] << 8 |
                       x->data[pos + 6] << 16 | (uint32_t)x->data[pos + 7] << 24;

        if (i < pos + 8 + len) {
            fprintf(stderr, "images differ at byte %zu (lengths %u, %u): "
                    "section %u, offset %zu\n", i, x->len, y->len, tag,
                    i - pos - 8);
            return;
        }
        pos += 8 + len;
    }
    fprintf(stderr, "images differ at byte %zu (lengths %u, %u)\n", i,
            x->len, y->len);
}

/*
 * Guest memory the engine wrote (dma_write, dma_map for writing) since
 * the last input: only that is cleared for the next, not all FUZZ_RAM.
 * The wrappers sit between the engine and the test host's callbacks.
 */
static const RnicHostOps *host_ops;
static RnicHostOps fuzz_ops;
static uint64_t dirty_lo = UINT64_MAX, dirty_hi;

static void note_dirty(uint64_t addr, uint64_t len)
{
    if (addr < FUZZ_RAM) {
        dirty_lo = MIN(dirty_lo, addr);
        dirty_hi = MAX(dirty_hi, MIN(addr + MIN(len, FUZZ_RAM), FUZZ_RAM));
    }
}

static int fuzz_dma_write(void *opaque, uint64_t addr, const void *buf,
                          size_t len)
{
    note_dirty(addr, len);
    return host_ops->dma_write(opaque, addr, buf, len);
}

static void *fuzz_dma_map(void *opaque, uint64_t addr, uint64_t *len,
                          bool is_write)
{
    if (is_write) {
        note_dirty(addr, *len);
    }
    return host_ops->dma_map(opaque, addr, len, is_write);
}

static TestHost *fuzz_host(void)
{
    RnicEngineConfig cfg;
    TestHost *h;

    fuzz_config(&cfg);
    h = test_host_new_sized(&cfg, FUZZ_RAM);

    host_ops = h->engine->ops;
    fuzz_ops = *host_ops;
    fuzz_ops.dma_write = fuzz_dma_write;
    fuzz_ops.dma_map = fuzz_dma_map;
    h->engine->ops = &fuzz_ops;
    return h;
}

static TestHost *a, *b;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_calls_init("fuzz-state-load");
    fuzz_seeds(*argc, *argv, write_seeds);
    a = fuzz_host();
    b = fuzz_host();
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Section-aware mutator                                                  */
/* ---------------------------------------------------------------------- */

#define IMG_HDR     8           /* magic, version */
#define SEC_HDR     8           /* tag, flags, length */
#define MAX_SECS    256

typedef struct Sec {
    const uint8_t *p;           /* its header */
    size_t len;                 /* header + payload */
} Sec;

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                               unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t s1,
                                 const uint8_t *d2, size_t s2, uint8_t *out,
                                 size_t max_out, unsigned int seed);

/*
 * Split an image into sections; bytes after the last whole one are a
 * last pseudo-section (*tail). Returns the number of sections, or -1 when
 * there is not even a header.
 */
static int parse_image(const uint8_t *d, size_t size, Sec *secs, Sec *tail)
{
    size_t pos = IMG_HDR;
    int n = 0;

    if (size < IMG_HDR) {
        return -1;
    }
    while (n < MAX_SECS && size - pos >= SEC_HDR &&
           fuzz_ld_le32(d + pos + 4) <= size - pos - SEC_HDR) {
        secs[n].p = d + pos;
        secs[n].len = SEC_HDR + fuzz_ld_le32(d + pos + 4);
        pos += secs[n++].len;
    }
    tail->p = d + pos;
    tail->len = size - pos;
    return n;
}

/* Header of 'hdr', then 'secs', then 'tail', into out; 0 if too big. */
static size_t build_image(const uint8_t *hdr, const Sec *secs, int n,
                          const Sec *tail, uint8_t *out, size_t max)
{
    size_t len = IMG_HDR;
    int i;

    for (i = 0; i < n; i++) {
        len += secs[i].len;
    }
    len += tail->len;
    if (len > max) {
        return 0;
    }
    memmove(out, hdr, IMG_HDR);
    len = IMG_HDR;
    for (i = 0; i < n; i++) {
        memcpy(out + len, secs[i].p, secs[i].len);
        len += secs[i].len;
    }
    memcpy(out + len, tail->p, tail->len);
    return len + tail->len;
}

/* Mutate the payload of 'sec' (in data) and fix its length. */
static size_t mutate_payload(uint8_t *data, size_t size, size_t max_size,
                             const Sec *sec)
{
    size_t off = sec->p - data, plen = sec->len - SEC_HDR;
    size_t rest = size - off - sec->len, cap = max_size - (size - plen);
    uint8_t *pl = g_malloc(cap + 1);
    size_t n;

    memcpy(pl, data + off + SEC_HDR, plen);
    n = MIN(LLVMFuzzerMutate(pl, plen, cap), cap);
    memmove(data + off + SEC_HDR + n, data + off + sec->len, rest);
    memcpy(data + off + SEC_HDR, pl, n);
    fuzz_st_le32(data + off + 4, n);
    g_free(pl);
    return size - plen + n;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                               unsigned int seed)
{
    static Sec secs[MAX_SECS + 1];
    GRand *r = g_rand_new_with_seed(seed);
    uint8_t *img = g_memdup2(data, size);
    size_t out = 0;
    Sec tail, t;
    int n = parse_image(img, size, secs, &tail), i, j;

    i = n > 0 ? g_rand_int_range(r, 0, n) : 0;
    j = n > 0 ? g_rand_int_range(r, 0, n) : 0;
    switch (n <= 0 ? 0 : g_rand_int_range(r, 0, 8)) {
    case 1:                     /* drop section i */
        memmove(&secs[i], &secs[i + 1], (n - i - 1) * sizeof(Sec));
        out = build_image(img, secs, n - 1, &tail, data, max_size);
        break;
    case 2:                     /* duplicate it at j */
        if (n < MAX_SECS) {
            t = secs[i];
            memmove(&secs[j + 1], &secs[j], (n - j) * sizeof(Sec));
            secs[j] = t;
            out = build_image(img, secs, n + 1, &tail, data, max_size);
        }
        break;
    case 3:                     /* move it to j */
        t = secs[i];
        memmove(&secs[i], &secs[i + 1], (n - i - 1) * sizeof(Sec));
        memmove(&secs[j + 1], &secs[j], (n - 1 - j) * sizeof(Sec));
        secs[j] = t;
        out = build_image(img, secs, n, &tail, data, max_size);
        break;
    case 4:                     /* flip the optional flag */
        data[secs[i].p - img + 2] ^= 1;
        out = size;
        break;
    case 5: case 6: case 7:     /* inside one payload */
        if (max_size >= size) {
            out = mutate_payload(data, size, max_size,
                                 &(Sec){ data + (secs[i].p - img),
                                         secs[i].len });
        }
        break;
    }
    g_free(img);
    g_rand_free(r);
    return out ? out : LLVMFuzzerMutate(data, size, max_size);
}

/*
 * Splice: the header and sections of d1, some replaced by sections of d2
 * (the one with the same tag when there is one), some of d2 inserted.
 */
size_t LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t s1,
                                 const uint8_t *d2, size_t s2, uint8_t *out,
                                 size_t max_out, unsigned int seed)
{
    static Sec x[MAX_SECS], y[MAX_SECS], z[MAX_SECS];
    GRand *r = g_rand_new_with_seed(seed);
    int nx = parse_image(d1, s1, x, &(Sec){ 0 });
    int ny = parse_image(d2, s2, y, &(Sec){ 0 });
    Sec none = { d1, 0 };
    int i, k, nz = 0;
    size_t len;

    if (nx < 0 || ny <= 0) {
        len = MIN(s1, max_out);
        memcpy(out, d1, len);
        g_rand_free(r);
        return len;
    }
    for (i = 0; i < nx && nz < MAX_SECS; i++) {
        switch (g_rand_int_range(r, 0, 4)) {
        case 0:                 /* d2's section of the same tag */
            z[nz] = x[i];
            for (k = 0; k < ny; k++) {
                if (!memcmp(y[k].p, x[i].p, 2)) {
                    z[nz] = y[k];
                    break;
                }
            }
            nz++;
            break;
        case 1:                 /* any of d2's, inserted */
            z[nz++] = y[g_rand_int_range(r, 0, ny)];
            if (nz < MAX_SECS) {
                z[nz++] = x[i];
            }
            break;
        default:
            z[nz++] = x[i];
        }
    }
    len = build_image(d1, z, nz, &none, out, max_out);
    g_rand_free(r);
    return len ? len : MIN(s1, max_out);
}

/* ---------------------------------------------------------------------- */
/* The target                                                             */
/* ---------------------------------------------------------------------- */

/* What must hold in any engine a load accepted. */
static void check_invariants(RnicEngine *e)
{
    uint32_t i;

    for (i = 0; i < e->qps.cap; i++) {
        RnicQp *qp = e->qps.slots[i];

        if (!qp) {
            continue;
        }
        CHECK(qp->pd && qp->scq && qp->rcq);
        if (qp->type == RNIC_QPT_RC && qp->state >= RNIC_QPS_RTR &&
            qp->state <= RNIC_QPS_SQE) {
            CHECK(qp->ctx || qp->all_nets);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GByteArray *img1, *img2, *img3;
    char *err = NULL, *tables;
    int i;

    if (dirty_lo < dirty_hi) {
        memset(a->ram + dirty_lo, 0, dirty_hi - dirty_lo);
    }
    dirty_lo = UINT64_MAX;
    dirty_hi = 0;
    g_ptr_array_set_size(a->frames, 0);
    g_ptr_array_set_size(a->log, 0);
    g_ptr_array_set_size(b->log, 0);

    if (!rnic_engine_check_config(a->engine, data, size, &err)) {
        CHECK(err);
    }
    g_free(err);
    err = NULL;

    if (!rnic_engine_load(a->engine, data, size, &err)) {
        CHECK(err);
        g_free(err);
        fuzz_calls_check(a->engine, "refused load");
        fuzz_calls_input_done(a->engine);
        return 0;
    }
    CHECK(!err);
    check_invariants(a->engine);
    /* round trip: whatever was accepted saves and loads again, exactly */
    img1 = save(a);
    CHECK(rnic_engine_load(b->engine, img1->data, img1->len, &err));
    img2 = save(b);
    CHECK(rnic_engine_load(a->engine, img2->data, img2->len, &err));
    img3 = save(a);
    blank_statistics(img2);
    blank_statistics(img3);
    if (img2->len != img3->len || memcmp(img2->data, img3->data, img2->len)) {
        report_difference(img2, img3);
        abort();
    }
    check_invariants(a->engine);
    tables = rnic_engine_describe_tables(a->engine);
    g_free(tables);
    /* and it runs: pending work, then the timers, a few rounds */
    for (i = 0; i < 4; i++) {
        a->scheduled = true;
        test_host_run(a);
        fuzz_calls_check(a->engine, "run after the load");
        test_host_advance(a, 500000000ull << i);
        fuzz_calls_check(a->engine, "timers after the load");
        g_ptr_array_set_size(a->frames, 0);
    }
    fuzz_calls_check(b->engine, "round trip");
    fuzz_calls_note(b->engine);
    fuzz_calls_input_done(a->engine);
    g_byte_array_unref(img1);
    g_byte_array_unref(img2);
    g_byte_array_unref(img3);
    return 0;
}
