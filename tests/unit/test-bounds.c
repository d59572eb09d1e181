/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: every call into the engine does a bounded amount of
 * work, whatever the guest queued: commands, page-list entries and DMA
 * bytes per admin run. (Packets per receive call and per run after a
 * READ stream and a PSN gap: test-transport resp-read-gap-bounded.) And
 * what the guest makes the host allocate stays within the host memory
 * budget (memory-budget-mib).
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"

#define AQ_LOG2     12
#define AQ_ENTRIES  (1u << AQ_LOG2)
#define MAX_PAGES   (1u << 20)          /* RNIC_MR_MAX_PAGES */
#define RUN_CMDS    64                  /* commands per admin run */

/*
 * Fill the whole admin queue with copies of 'cmd' and ring it once.
 * Returns the index of the first (the queue is idle, its completions
 * consumed).
 */
static uint32_t fill_admin_queue(TestHost *h, struct rnic_admin_cmd *cmd)
{
    uint32_t i, first = h->aq_tail;

    for (i = 0; i < AQ_ENTRIES; i++) {
        uint32_t slot = (first + i) & (AQ_ENTRIES - 1);

        cmd->cmd_id = ++h->next_cmd_id;
        memcpy(test_ptr(h, h->aq + (uint64_t)slot * sizeof(*cmd)), cmd,
               sizeof(*cmd));
    }
    h->aq_tail += AQ_ENTRIES;
    g_assert_cmpint(test_reg_write(h, RNIC_REG_AQ_TAIL, h->aq_tail), ==,
                    RNIC_ACCESS_OK);
    return first;
}

static const struct rnic_admin_cqe *admin_cqe(TestHost *h, uint32_t i)
{
    i &= AQ_ENTRIES - 1;
    return test_ptr(h, h->acq + (uint64_t)i * sizeof(struct rnic_admin_cqe));
}

/*
 * A REG_MR of 'npages' 4 KiB pages: a list at 'pbl' (levels 1), or the
 * contiguous region at 'pbl' (levels 0, npages 1).
 */
static struct rnic_admin_cmd reg_mr_cmd(uint32_t pd, uint64_t pbl,
                                        uint32_t npages, uint8_t levels)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_REG_MR };

    c.mr.iova = levels ? 0 : pbl;
    c.mr.length = (uint64_t)npages << 12;
    c.mr.pbl_addr = pbl;
    c.mr.pd = pd;
    c.mr.npages = npages;
    c.mr.access = RNIC_ACCESS_LOCAL_WRITE;
    c.mr.page_shift = 12;
    c.mr.levels = levels;
    c.mr.key = TV_MR_KEY;
    return c;
}

/* One engine run; returns the admin commands it completed. */
static uint32_t run_once(TestHost *h, uint64_t *read_bytes)
{
    uint32_t head = test_reg_read(h, RNIC_REG_AQ_HEAD);
    uint64_t before = h->dma_read_bytes;

    h->scheduled = false;
    rnic_engine_run(h->engine);
    *read_bytes = h->dma_read_bytes - before;
    return test_reg_read(h, RNIC_REG_AQ_HEAD) - head;
}

/*
 * F5: 4,096 REG_MRs of 2^20-entry page lists whose last entry is
 * misaligned, one AQ_TAIL write. Each run reads at most about one maximal
 * page list (8 MiB) more than its budget and completes a bounded number
 * of commands; the rest waits for the next run, which is asked for.
 */
static void test_admin_maximal_registrations(void)
{
    TestHost *h = test_host_new_sized(NULL, 96u << 20);
    struct rnic_admin_cmd c;
    uint64_t pbl, *pages, bytes;
    uint32_t ctx, pd, i, n, first, total = 0;

    tv_enable(h, AQ_LOG2);
    ctx = tv_net_ctx(h, 0);
    pd = tv_pd(h, ctx, 0);
    pbl = test_alloc(h, 8ull * MAX_PAGES, 4096);
    pages = test_ptr(h, pbl);
    for (i = 0; i < MAX_PAGES; i++) {
        pages[i] = 0x100000;
    }
    pages[MAX_PAGES - 1] |= 1;
    c = reg_mr_cmd(pd, pbl, MAX_PAGES, 1);
    first = fill_admin_queue(h, &c);
    for (i = 0; i < 4; i++) {
        n = run_once(h, &bytes);
        g_assert_cmpuint(n, >=, 1);
        g_assert_cmpuint(n, <=, 2);
        g_assert_cmpuint(bytes, <=, 2 * 8ull * MAX_PAGES + RUN_CMDS * 64);
        g_assert_true(h->scheduled);        /* the rest: next run */
        total += n;
    }
    for (i = 0; i < total; i++) {
        g_assert_cmpuint(admin_cqe(h, first + i)->status, ==,
                         RNIC_ST_BAD_PARAM);
    }
    test_host_free(h);
}

/* 4,096 NOPs: at most RUN_CMDS per run, and every one completes. */
static void test_admin_full_queue_of_nops(void)
{
    TestHost *h = test_host_new(NULL);
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_NOP };
    uint32_t n, total = 0, runs = 0, i;
    uint64_t bytes;

    tv_enable(h, AQ_LOG2);
    fill_admin_queue(h, &c);
    while (h->scheduled) {
        n = run_once(h, &bytes);
        g_assert_cmpuint(n, <=, RUN_CMDS);
        g_assert_cmpuint(bytes, <=, RUN_CMDS * sizeof(c));
        total += n;
        runs++;
    }
    g_assert_cmpuint(total, ==, AQ_ENTRIES);
    g_assert_cmpuint(runs, >=, AQ_ENTRIES / RUN_CMDS);
    for (i = 0; i < AQ_ENTRIES; i++) {
        g_assert_cmpuint(admin_cqe(h, i)->status, ==, RNIC_ST_OK);
    }
    test_host_free(h);
}

/* A raw CREATE_QP (RC, the same rings for every QP); its status. */
static uint8_t create_qp(TestHost *h, uint32_t pd, TvCq *cq, uint64_t ring,
                         uint32_t log, uint32_t *handle)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_CREATE_QP };
    struct rnic_admin_cqe r;

    c.qp.sq_addr = ring;
    c.qp.rq_addr = ring;
    c.qp.pd = pd;
    c.qp.send_cq = cq->handle;
    c.qp.recv_cq = cq->handle;
    c.qp.srq = RNIC_HANDLE_NONE;
    c.qp.qp_type = RNIC_QPT_RC;
    c.qp.sq_log_size = log;
    c.qp.rq_log_size = log;
    c.qp.sq_wqe_shift = 7;
    c.qp.rq_wqe_shift = 6;
    r = tv_cmd(h, &c);
    *handle = r.result0;
    return r.status;
}

static void destroy(TestHost *h, uint8_t opcode, uint32_t handle)
{
    struct rnic_admin_cmd c = { .opcode = opcode };

    c.destroy.handle = handle;
    tv_cmd_ok(h, &c);
}

/* REG_MR of 'npages' 4 KiB pages, all naming 'page'; its status. */
static uint8_t reg_mr_pages(TestHost *h, uint32_t pd, uint64_t pbl,
                            uint64_t page, uint32_t npages, uint32_t *stag)
{
    struct rnic_admin_cmd c = reg_mr_cmd(pd, pbl, npages, 1);
    struct rnic_admin_cqe r;
    uint64_t *pages = test_ptr(h, pbl);
    uint32_t i;

    for (i = 0; i < npages; i++) {
        pages[i] = page;
    }
    r = tv_cmd(h, &c);
    *stag = r.result0;
    return r.status;
}

static void reset_device(TestHost *h)
{
    g_assert_cmpint(test_reg_write(h, RNIC_REG_DEV_CTRL, RNIC_CTRL_RESET), ==,
                    RNIC_ACCESS_OK);
    h->aq = 0;
}

/*
 * Host memory budget of 16 MiB: QPs with 4,096-slot send queues until the
 * device says NO_RESOURCES (long before max-qps); page lists of 2^20
 * entries (8 MiB each) until it does. The account never passes the
 * budget, every object gives back exactly what it took, and a reset
 * leaves nothing.
 */
static void test_mem_budget(void)
{
    RnicEngineConfig cfg;
    TestHost *h;
    TvCq *cq;
    uint32_t ctx, pd, handles[1024], n, i, stag[4], nmr;
    uint64_t budget = 16u << 20, ring, pbl, page, before, base;

    rnic_engine_config_defaults(&cfg);
    cfg.mem_budget_mib = 16;
    h = test_host_new_sized(&cfg, 96u << 20);
    g_assert_cmpuint(rnic_engine_mem_used(h->engine), ==, 0);
    tv_enable(h, 6);
    ctx = tv_net_ctx(h, 0);
    g_assert_cmpuint(rnic_engine_mem_used(h->engine), >=,
                     rnic_mrt_bytes(&cfg));
    pd = tv_pd(h, ctx, 0);
    cq = tv_cq(h, 6, RNIC_HANDLE_NONE, 0);
    ring = test_alloc(h, 4096u << 7, 4096);

    base = rnic_engine_mem_used(h->engine);
    for (n = 0; n < G_N_ELEMENTS(handles); n++) {
        before = rnic_engine_mem_used(h->engine);
        if (create_qp(h, pd, cq, ring, 12, &handles[n]) != RNIC_ST_OK) {
            g_assert_cmpuint(rnic_engine_mem_used(h->engine), ==, before);
            break;
        }
        g_assert_cmpuint(rnic_engine_mem_used(h->engine), >,
                         before + 4096 * sizeof(RnicSqSlot));
        g_assert_cmpuint(rnic_engine_mem_used(h->engine), <=, budget);
    }
    g_assert_cmpuint(n, >=, 16);
    g_assert_cmpuint(n, <, cfg.max_qp);
    g_assert_cmpuint(tv_cmd(h, &(struct rnic_admin_cmd) {
        .opcode = RNIC_CMD_NOP }).status, ==, RNIC_ST_OK);
    for (i = 0; i < n; i++) {
        destroy(h, RNIC_CMD_DESTROY_QP, handles[i]);
    }
    g_assert_cmpuint(rnic_engine_mem_used(h->engine), ==, base);

    pbl = test_alloc(h, 8ull * MAX_PAGES, 4096);
    page = test_alloc(h, 4096, 4096);
    for (nmr = 0; nmr < G_N_ELEMENTS(stag); nmr++) {
        if (reg_mr_pages(h, pd, pbl, page, MAX_PAGES, &stag[nmr]) !=
            RNIC_ST_OK) {
            break;
        }
        g_assert_cmpuint(rnic_engine_mem_used(h->engine), <=, budget);
    }
    g_assert_cmpuint(nmr, ==, 1);       /* 8 MiB fit once in 16 */
    g_assert_cmpuint(reg_mr_pages(h, pd, pbl, page, 1000, &stag[1]), ==,
                     RNIC_ST_OK);
    destroy(h, RNIC_CMD_DEREG_MR, stag[0]);
    g_assert_cmpuint(reg_mr_pages(h, pd, pbl, page, MAX_PAGES, &stag[0]), ==,
                     RNIC_ST_OK);
    reset_device(h);
    g_assert_cmpuint(rnic_engine_mem_used(h->engine), ==, 0);
    g_free(cq);
    test_host_free(h);
}

/*
 * Every table filled to its limit (small limits), one object more of each
 * refused; the account stays within the budget, and after a reset it is
 * zero again and the STag index users are all gone (a multi-network
 * registration finds a free index).
 */
static void test_mem_tables_full(void)
{
    RnicEngineConfig cfg;
    TestHost *h;
    TvCq *cqs[8];
    uint32_t ctxs[2], pds[4], handle, i, stag;
    uint64_t ring, pbl, page, budget;
    struct rnic_admin_cmd c;
    uint32_t round;

    rnic_engine_config_defaults(&cfg);
    cfg.max_net_ctx = 2;
    cfg.max_pd = 4;
    cfg.max_cq = 8;
    cfg.max_eq = 4;
    cfg.max_srq = 4;
    cfg.max_qp = 8;
    cfg.max_mr = 32;
    cfg.mem_budget_mib = 16;
    budget = 16u << 20;
    h = test_host_new(&cfg);
    for (round = 0; round < 2; round++) {
        tv_enable(h, 6);
        ring = test_alloc(h, 64u << 7, 4096);
        pbl = test_alloc(h, 8 * 16, 8);
        page = test_alloc(h, 4096, 4096);
        for (i = 0; i < 2; i++) {
            ctxs[i] = tv_net_ctx(h, 10 + i);
        }
        c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_CREATE_NET_CTX };
        c.net_ctx.net_id = 12;
        c.net_ctx.net_type = RNIC_NET_VLAN;
        g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_NO_RESOURCES);
        pds[0] = tv_pd(h, RNIC_PD_MULTI_NET, 0);
        for (i = 1; i < 4; i++) {
            pds[i] = tv_pd(h, ctxs[i & 1], 0);
        }
        c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_ALLOC_PD };
        c.pd.net_ctx = ctxs[0];
        g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_NO_RESOURCES);
        for (i = 0; i < 4; i++) {
            tv_eq(h, 4, 1, 0, NULL);
        }
        for (i = 0; i < 8; i++) {
            cqs[i] = tv_cq(h, 4, RNIC_HANDLE_NONE, 0);
        }
        for (i = 0; i < 4; i++) {
            g_free(tv_srq(h, pds[1], 4, 0, 0));
        }
        for (i = 0; i < 8; i++) {
            g_assert_cmpuint(create_qp(h, pds[1 + i % 3], cqs[i], ring, 6,
                                       &handle), ==, RNIC_ST_OK);
        }
        g_assert_cmpuint(create_qp(h, pds[1], cqs[0], ring, 6, &handle), ==,
                         RNIC_ST_NO_RESOURCES);
        /* max-mrs per table: the two contexts' and the multi-network one */
        for (i = 0; i < 3 * 32; i++) {
            g_assert_cmpuint(reg_mr_pages(h, pds[i % 3], pbl, page, 16,
                                          &stag), ==, RNIC_ST_OK);
        }
        for (i = 0; i < 3; i++) {
            g_assert_cmpuint(reg_mr_pages(h, pds[i], pbl, page, 16, &stag),
                             ==, RNIC_ST_NO_RESOURCES);
        }
        g_assert_cmpuint(rnic_engine_mem_used(h->engine), >, 0);
        g_assert_cmpuint(rnic_engine_mem_used(h->engine), <=, budget);
        reset_device(h);
        g_assert_cmpuint(rnic_engine_mem_used(h->engine), ==, 0);
        for (i = 0; i < rnic_mrt_bytes(&cfg) / sizeof(void *) / 2; i++) {
            g_assert_cmpuint(h->engine->mrt_users[i], ==, 0);
        }
        for (i = 0; i < 8; i++) {
            g_free(cqs[i]);
        }
    }
    test_host_free(h);
}

/* A one-page contiguous REG_MR (no page list); its status. */
static uint8_t reg_mr_small(TestHost *h, uint32_t pd, uint64_t page,
                            uint32_t *stag)
{
    struct rnic_admin_cmd c = reg_mr_cmd(pd, page, 1, 0);
    struct rnic_admin_cqe r;

    r = tv_cmd(h, &c);
    *stag = r.result0;
    return r.status;
}

/*
 * F7: sixteen network contexts with full mapping tables (1,024 MRs each
 * over 4,096 indexes) leave few indexes unused in every table; then the
 * multi-network PD registers until it is refused. Each registration checks
 * at most 64 random indexes and the 64 words of the unused-index bitmap
 * (before: every index times every context, 65,536 lookups here).
 */
static void test_mnet_index_space(void)
{
    RnicEngineConfig cfg;
    TestHost *h;
    uint32_t ctx, pd, mpd, c, i, stag, n = 0;
    uint64_t page, before;
    uint8_t st;

    rnic_engine_config_defaults(&cfg);
    cfg.max_mr = 1024;                  /* 4,096 indexes */
    h = test_host_new(&cfg);
    tv_enable(h, 6);
    page = test_alloc(h, 4096, 4096);
    for (c = 0; c < 16; c++) {
        ctx = tv_net_ctx(h, 100 + c);
        pd = tv_pd(h, ctx, 0);
        for (i = 0; i < 1024; i++) {
            before = h->engine->mrt_checks;
            g_assert_cmpuint(reg_mr_small(h, pd, page, &stag), ==,
                             RNIC_ST_OK);
            g_assert_cmpuint(h->engine->mrt_checks - before, <=, 64);
        }
    }
    mpd = tv_pd(h, RNIC_PD_MULTI_NET, 0);
    do {
        before = h->engine->mrt_checks;
        st = reg_mr_small(h, mpd, page, &stag);
        g_assert_cmpuint(h->engine->mrt_checks - before, <=, 64 + 4096 / 64);
        n += st == RNIC_ST_OK;
    } while (st == RNIC_ST_OK);
    g_assert_cmpuint(st, ==, RNIC_ST_NO_RESOURCES);
    /* every index had an entry somewhere: the refusal was right */
    for (i = 1; i < 4096; i++) {
        g_assert_cmpuint(h->engine->mrt_users[i], >, 0);
    }
    g_test_message("%u multi-network MRs fitted", n);
    test_host_free(h);
}

static void count_frame(void *opaque, const RnicPacket *pkt)
{
    (*(uint64_t *)opaque)++;
}

/*
 * After a state load every connected RC QP prompts its peer (a NAK at the
 * expected PSN). With 600 of them the first run sends at most 256, the
 * rest follows in later runs, and every peer is prompted once.
 */
static void test_prompt_after_load(void)
{
    TestHost *h = test_host_new(NULL), *dst;
    GByteArray *img = g_byte_array_new();
    uint32_t ctx, pd, i, runs = 0;
    uint64_t frames = 0, before;
    uint8_t remote[16];
    TvCq *cq;
    char *err = NULL;

    tv_enable(h, 6);
    ctx = tv_net_ctx(h, 0);
    tv_gid(h, 0, ctx, 1);
    tv_gid_bytes(remote, ctx, 200);
    pd = tv_pd(h, ctx, 0);
    cq = tv_cq(h, 6, RNIC_HANDLE_NONE, 0);
    for (i = 0; i < 600; i++) {
        TvQp *qp = tv_qp(h, RNIC_QPT_RC, pd, cq, cq, NULL, 1, 0);

        tv_rc_connect(h, qp, 0, remote, 0x100 + i);
        g_free(qp);
    }
    rnic_engine_save(h->engine, img);
    dst = test_host_new(NULL);
    memcpy(dst->ram, h->ram, h->ram_size);
    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    dst->engine->wire_tap = count_frame;
    dst->engine->wire_tap_opaque = &frames;
    while (dst->scheduled) {
        dst->scheduled = false;
        before = frames;
        rnic_engine_run(dst->engine);
        g_assert_cmpuint(frames - before, <=, 256);
        runs++;
    }
    g_assert_cmpuint(frames, ==, 600);
    g_assert_cmpuint(runs, >=, 3);
    g_byte_array_unref(img);
    g_free(cq);
    test_host_free(dst);
    test_host_free(h);
}

/*
 * A QP with 4,096 posted receives goes to ERR inside one timer call (a
 * SEND to a peer that never answers, retry count 0): that call flushes a
 * bounded part (256 WQEs, about as many CQE writes), the rest follows in
 * the next runs, and every WQE completes exactly once.
 */
static void test_flush_bounded(void)
{
    TestHost *h = test_host_new(NULL);
    uint32_t pd, mr, i;
    uint8_t remote[16];
    uint64_t buf, before;
    struct rnic_sge s;
    struct rnic_sq_wqe w;
    struct rnic_cqe cqe;
    TvCq *cq;
    TvQp *qp;
    unsigned recv_flushed = 0, send_failed = 0;

    pd = tv_kernel_pd(h, 13, &cq, remote);
    qp = tv_qp(h, RNIC_QPT_RC, pd, cq, cq, NULL, 12, 0);
    tv_retry_cnt = 0;
    tv_rc_connect(h, qp, 0, remote, 0x99);
    tv_retry_cnt = 7;
    buf = test_alloc(h, 4096, 4096);
    mr = tv_reg_mr(h, pd, buf, 4096, TV_ACCESS_ALL, 0, NULL);
    s = tv_sge(buf, 64, mr);
    for (i = 0; i < 4096; i++) {
        tv_write_recv(h, qp, 1000 + i, &s, 1);
    }
    g_assert_cmpint(tv_ring_rq(h, qp), ==, 0);
    w = tv_wqe(1, RNIC_WR_SEND, 1);
    tv_post_send(h, qp, &w, &s, NULL);
    g_assert_cmpuint(h->timer_deadline, !=, UINT64_MAX);
    h->now_ns = h->timer_deadline;
    h->timer_deadline = UINT64_MAX;
    before = h->dma_write_bytes;
    rnic_engine_timer_expired(h->engine);
    g_assert_cmpuint(h->dma_write_bytes - before, <=,
                     (256 + 2) * sizeof(struct rnic_cqe));
    g_assert_true(h->scheduled);
    test_host_run(h);
    while (tv_poll(h, cq, &cqe, 1) == 1) {
        if (cqe.wr_id == 1) {
            g_assert_cmpuint(cqe.status, ==, RNIC_WC_RETRY_EXC_ERR);
            send_failed++;
        } else {
            g_assert_cmpuint(cqe.wr_id, ==, 1000 + recv_flushed);
            g_assert_cmpuint(cqe.status, ==, RNIC_WC_WR_FLUSH_ERR);
            recv_flushed++;
        }
    }
    g_assert_cmpuint(send_failed, ==, 1);
    g_assert_cmpuint(recv_flushed, ==, 4096);
    g_free(cq);
    g_free(qp);
    test_host_free(h);
}

/* A completion is in 'cq' now (read without running the engine). */
static bool cqe_ready(TestHost *h, TvCq *cq)
{
    uint32_t mask = (1u << cq->log) - 1;
    struct rnic_cqe c;

    memcpy(&c, test_ptr(h, cq->ring + (uint64_t)(cq->cons & mask) *
                        sizeof(c)), sizeof(c));
    return (c.owner & 1) == (((cq->cons >> cq->log) & 1) ^ 1);
}

/* Runs, one at a time, until 'cq' has a completion; how many it took. */
static unsigned run_until_cqe(TestHost *h, TvCq *cq)
{
    unsigned runs = 0;

    while (!cqe_ready(h, cq)) {
        g_assert_true(h->scheduled);
        h->scheduled = false;
        rnic_engine_run(h->engine);
        g_assert_cmpuint(++runs, <, 100000);
    }
    return runs;
}

/* The most one call of kind 'call' did so far. */
static RnicCallWork call_max(TestHost *h, RnicCall call)
{
    RnicCallWork m;

    rnic_engine_call_max(h->engine, call, &m);
    return m;
}

#define FR_PAGES        32768           /* RNIC_MR_MAX_FAST_REG_PAGES */
#define PHASE_ENTRIES   (1u << 18)      /* rnic_phase_budget.entries */
#define PHASE_PERSIST   (16u << 20)     /* rnic_phase_budget.persist_bytes */
#define SCM_CHUNK       (16u << 20)     /* RNIC_SCM_CHUNK */

/*
 * Local work requests are charged (issue 40, G1): a send queue full of
 * fast-registers of 32768 pages and local invalidations, rung once with
 * the doorbell's work done inline (as QEMU does in the vCPU's MMIO exit):
 * that call starts one turn (64 WQEs) and reads at most the phase's budget
 * of page-list entries plus one list; each run after it a bounded part;
 * every WQE completes, in order. Before, the one doorbell ran all 4096
 * WQEs: 2048 lists of 256 KiB, 512 MiB read.
 */
static void test_local_wr_flood(void)
{
    TestHost *h = test_host_new(NULL);
    uint32_t pd, stag, i, runs = 0;
    uint8_t remote[16];
    struct rnic_sq_wqe fr, inv;
    struct rnic_cqe cqe;
    RnicCallWork m;
    TvCq *cq;
    TvQp *qp;

    pd = tv_kernel_pd(h, 13, &cq, remote);
    qp = tv_qp(h, RNIC_QPT_RC, pd, cq, cq, NULL, 12, 0);
    tv_rc_connect(h, qp, 0, remote, 0x99);
    stag = tv_alloc_mr(h, pd, FR_PAGES, 0x10);
    fr = tv_fast_reg_wqe(h, 0, stag, 0x40000000, 0x100000, FR_PAGES,
                         RNIC_ACCESS_LOCAL_WRITE);
    inv = tv_wqe(0, RNIC_WR_LOCAL_INV, 0);
    inv.imm_or_inv = stag;
    for (i = 0; i < 4096; i++) {
        struct rnic_sq_wqe *w = i & 1 ? &inv : &fr;

        w->wr_id = i;
        tv_write_send(h, qp, w, NULL, NULL);
    }
    h->run_now = true;
    g_assert_cmpint(tv_ring_sq(h, qp), ==, 0);
    h->run_now = false;
    m = call_max(h, RNIC_CALL_DOORBELL);
    g_assert_cmpuint(m.wqes, <=, 64);
    g_assert_cmpuint(m.entries, <=, PHASE_ENTRIES + FR_PAGES);
    g_assert_true(h->scheduled);
    while (h->scheduled) {
        h->scheduled = false;
        rnic_engine_run(h->engine);
        runs++;
    }
    m = call_max(h, RNIC_CALL_RUN);
    g_assert_cmpuint(m.entries, <=, PHASE_ENTRIES + FR_PAGES);
    /* 2048 lists of 32768 entries, 2^18 + one list per run at most */
    g_assert_cmpuint(runs, >=, 2048u * FR_PAGES / (PHASE_ENTRIES + FR_PAGES));
    for (i = 0; i < 4096; i++) {
        g_assert_cmpint(tv_poll(h, cq, &cqe, 1), ==, 1);
        g_assert_cmpuint(cqe.wr_id, ==, i);
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
    }
    g_assert_cmpint(tv_poll(h, cq, &cqe, 1), ==, 0);
    g_free(cq);
    g_free(qp);
    test_host_free(h);
}

/*
 * A registration refused for want of memory forces one compaction of the
 * registration log, not one per refused work request (issue 40, G1): with
 * the budget full of page lists, fast-registers on four QPs fail with
 * LOC_PROT_ERR; the log is compacted for the first only (it has not grown
 * since).
 */
static void test_refused_fast_reg_compacts_once(void)
{
    RnicEngineConfig cfg;
    TestHost *h;
    uint32_t pd, stag[8], i, n = 0;
    uint8_t remote[16];
    struct rnic_sq_wqe fr;
    struct rnic_cqe cqe;
    GArray *log = NULL;
    unsigned compactions = 0;
    TvCq *cq;
    TvQp *qp[5];

    rnic_engine_config_defaults(&cfg);
    cfg.max_mr = 1024;
    cfg.mem_budget_mib = 2;
    h = test_host_new(&cfg);
    pd = tv_kernel_pd(h, 8, &cq, remote);
    for (i = 0; i < 5; i++) {
        qp[i] = tv_qp(h, RNIC_QPT_RC, pd, cq, cq, NULL, 4, 0);
        tv_rc_connect(h, qp[i], 0, remote, 0x99 + i);
    }
    /* fast-registers of 256 KiB page lists until one is refused */
    for (i = 0; i < G_N_ELEMENTS(stag); i++) {
        stag[i] = tv_alloc_mr(h, pd, FR_PAGES, 0x10);
        fr = tv_fast_reg_wqe(h, i, stag[i], 0x40000000, 0x100000, FR_PAGES,
                             RNIC_ACCESS_LOCAL_WRITE);
        tv_post_send(h, qp[0], &fr, NULL, NULL);
        g_assert_cmpint(tv_poll(h, cq, &cqe, 1), ==, 1);
        if (cqe.status != RNIC_WC_SUCCESS) {
            g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_PROT_ERR);
            break;
        }
        n++;
    }
    g_assert_cmpuint(n, >=, 1);
    g_assert_cmpuint(n, <, G_N_ELEMENTS(stag));
    log = h->engine->reglog;
    /* the same on four more QPs: refused, the log left as it is */
    for (i = 1; i < 5; i++) {
        fr = tv_fast_reg_wqe(h, 100 + i, stag[n], 0x40000000, 0x100000,
                             FR_PAGES, RNIC_ACCESS_LOCAL_WRITE);
        tv_post_send(h, qp[i], &fr, NULL, NULL);
        g_assert_cmpint(tv_poll(h, cq, &cqe, 1), ==, 1);
        g_assert_cmpuint(cqe.wr_id, ==, 100 + i);
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_PROT_ERR);
        compactions += h->engine->reglog != log;
        log = h->engine->reglog;
    }
    g_assert_cmpuint(compactions, ==, 0);
    g_free(cq);
    for (i = 0; i < 5; i++) {
        g_free(qp[i]);
    }
    test_host_free(h);
}

/* A loopback pair with a persistent window of 'pages' pages. */
static TvPair *window_pair(uint32_t pages)
{
    RnicEngineConfig cfg;

    rnic_engine_config_defaults(&cfg);
    cfg.scm_pages = pages;
    cfg.scm_persistent = true;
    return tv_pair_new(&cfg);
}

#define WIN_PAGES   32768               /* 128 MiB */
#define WIN_BYTES   ((uint64_t)WIN_PAGES << 12)
#define READ_BYTES  (48u << 20)         /* a DURABLE READ into guest RAM */
#define SEM_ALL     ((1u << RNIC_SCM_SEM_COUNT) - 1)

/* b's region over the whole window, every right and semantic. */
static uint32_t window_region(TvPair *p)
{
    return tv_reg_scm(p->d, p->pd, 0, 0, WIN_BYTES,
                      TV_ACCESS_ALL | RNIC_ACCESS_FLUSH_PERSISTENT, SEM_ALL,
                      RNIC_SCM_SEM_PLAIN << RNIC_SCM_KEY_SEM_SHIFT, NULL);
}

/* CPU stores all over the window that nothing persisted yet. */
static void window_dirty(TvPair *p)
{
    memset(p->d->scm, 0x5c, WIN_BYTES);
    g_assert_cmpint(memcmp(p->d->scm, p->d->scm_durable, WIN_BYTES), !=, 0);
}

/*
 * What a request asks to persist is done in chunks across engine calls
 * and what answers it leaves after the last one (issue 40, G2): 'w' (a
 * FLUSH, a DURABLE READ or a MGMT write asking to persist [0, len) of the
 * window) is posted on a; runs go one at a time until a's completion;
 * then [0, len) is durable, no call persisted more than a phase's budget
 * and a chunk, and it took a run per chunk.
 */
static void window_request(TvPair *p, const struct rnic_sq_wqe *w,
                           const struct rnic_sge *s, uint64_t len)
{
    TestHost *h = p->d;
    unsigned persists = h->persists, runs;
    struct rnic_cqe cqe;
    RnicCall c;

    window_dirty(p);
    tv_write_send(h, p->a, w, s, NULL);
    g_assert_cmpint(tv_ring_sq(h, p->a), ==, 0);
    runs = run_until_cqe(h, p->cqa);
    g_assert_cmpint(memcmp(h->scm, h->scm_durable, len), ==, 0);
    g_assert_cmpuint(h->persists - persists, >=, len / SCM_CHUNK);
    g_assert_cmpuint(runs, >=, len / SCM_CHUNK - 1);
    /* one QP's persist goes on in one phase of a call at most */
    for (c = 0; c < RNIC_CALL_COUNT; c++) {
        g_assert_cmpuint(call_max(h, c).persist_bytes, <=,
                         PHASE_PERSIST + SCM_CHUNK);
    }
    cqe = tv_poll_one(h, p->cqa);
    g_assert_cmpuint(cqe.wr_id, ==, w->wr_id);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
}

static void test_flush_whole_window(void)
{
    TvPair *p = window_pair(WIN_PAGES);
    uint32_t stag = window_region(p);
    struct rnic_sq_wqe w = tv_flush_wqe(7, 0, stag, 0, RNIC_FLUSH_PERSISTENT,
                                        RNIC_FLUSH_MR);

    window_request(p, &w, NULL, WIN_BYTES);
    tv_pair_free(p);
}

static void test_durable_read_window(void)
{
    TvPair *p = window_pair(WIN_PAGES);
    uint32_t stag = window_region(p);
    uint64_t sink = test_alloc(p->d, READ_BYTES, 4096);
    uint32_t mr = tv_reg_mr(p->d, p->pd, sink, READ_BYTES, TV_ACCESS_ALL, 0,
                            NULL);
    struct rnic_sq_wqe w = tv_wqe(8, RNIC_WR_RDMA_READ, 1);
    struct rnic_sge s = tv_sge(sink, READ_BYTES, mr);

    w.rdma.remote_addr = 0;
    w.rdma.rkey = RNIC_SCM_STAG(stag, RNIC_SCM_SEM_DURABLE);
    window_request(p, &w, &s, READ_BYTES);
    g_assert_cmpint(memcmp(test_ptr(p->d, sink), p->d->scm, READ_BYTES), ==,
                    0);
    tv_pair_free(p);
}

static void test_mgmt_persist_window(void)
{
    TvPair *p = window_pair(WIN_PAGES);
    uint32_t stag = window_region(p);
    struct rnic_scm_mgmt *m = test_ptr(p->d, p->bufa);
    struct rnic_sq_wqe w = tv_wqe(9, RNIC_WR_RDMA_WRITE, 1);
    struct rnic_sge s = tv_sge(p->bufa, sizeof(*m), p->mra);

    memset(m, 0, sizeof(*m));
    m->op = RNIC_SCM_MGMT_PERSIST;
    m->length = WIN_BYTES;
    w.rdma.remote_addr = 0;
    w.rdma.rkey = RNIC_SCM_STAG(stag, RNIC_SCM_SEM_MGMT);
    window_request(p, &w, &s, WIN_BYTES);
    tv_pair_free(p);
}

/*
 * SCM_PERSIST is charged by the bytes it persists (issue 40, G3): of the
 * whole window, it is done over several admin runs (the command stays at
 * the head of the queue), none persisting more than a phase's budget and
 * a chunk; its completion comes after the last chunk.
 */
static void test_scm_persist_cmd_window(void)
{
    TvPair *p = window_pair(WIN_PAGES);
    TestHost *h = p->d;
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_SCM_PERSIST };
    unsigned persists = h->persists;

    window_dirty(p);
    c.scm.offset = 0;
    c.scm.length = WIN_BYTES;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_OK);
    g_assert_cmpint(memcmp(h->scm, h->scm_durable, WIN_BYTES), ==, 0);
    g_assert_cmpuint(h->persists - persists, >=, WIN_BYTES / SCM_CHUNK);
    g_assert_cmpuint(call_max(h, RNIC_CALL_RUN).persist_bytes, <=,
                     PHASE_PERSIST + SCM_CHUNK);
    tv_pair_free(p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/bounds/admin-maximal-registrations",
                    test_admin_maximal_registrations);
    g_test_add_func("/rnic/bounds/admin-full-queue-of-nops",
                    test_admin_full_queue_of_nops);
    g_test_add_func("/rnic/bounds/mem-budget", test_mem_budget);
    g_test_add_func("/rnic/bounds/mem-tables-full", test_mem_tables_full);
    g_test_add_func("/rnic/bounds/mnet-index-space", test_mnet_index_space);
    g_test_add_func("/rnic/bounds/prompt-after-load", test_prompt_after_load);
    g_test_add_func("/rnic/bounds/flush-bounded", test_flush_bounded);
    g_test_add_func("/rnic/bounds/local-wr-flood", test_local_wr_flood);
    g_test_add_func("/rnic/bounds/refused-fast-reg-compacts-once",
                    test_refused_fast_reg_compacts_once);
    g_test_add_func("/rnic/bounds/flush-whole-window",
                    test_flush_whole_window);
    g_test_add_func("/rnic/bounds/durable-read-window",
                    test_durable_read_window);
    g_test_add_func("/rnic/bounds/mgmt-persist-window",
                    test_mgmt_persist_window);
    g_test_add_func("/rnic/bounds/scm-persist-cmd-window",
                    test_scm_persist_cmd_window);
    return g_test_run();
}
