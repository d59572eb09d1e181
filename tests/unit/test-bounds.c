/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: every call into the engine does a bounded amount of
 * work, whatever the guest queued: commands, page-list entries and DMA
 * bytes per admin run. (Packets per receive call and per run after a
 * READ stream and a PSN gap: test-transport resp-read-gap-bounded.)
 */
#include <string.h>
#include "rnic-test-verbs.h"

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
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_REG_MR };
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
    c.mr.iova = 0;
    c.mr.length = (uint64_t)MAX_PAGES << 12;
    c.mr.pbl_addr = pbl;
    c.mr.pd = pd;
    c.mr.npages = MAX_PAGES;
    c.mr.access = RNIC_ACCESS_LOCAL_WRITE;
    c.mr.page_shift = 12;
    c.mr.levels = 1;
    c.mr.key = TV_MR_KEY;
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

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/bounds/admin-maximal-registrations",
                    test_admin_maximal_registrations);
    g_test_add_func("/rnic/bounds/admin-full-queue-of-nops",
                    test_admin_full_queue_of_nops);
    return g_test_run();
}
