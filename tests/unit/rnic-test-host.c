/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fake host for engine unit tests (see rnic-test-host.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rnic-test-host.h"

/*
 * Host bytes of DMA range [addr, addr + len): guest RAM, or the memory
 * window at RNIC_SCM_DMA_BASE; NULL outside both.
 */
static uint8_t *th_mem(TestHost *h, uint64_t addr, uint64_t len)
{
    if (addr >= RNIC_SCM_DMA_BASE) {
        addr -= RNIC_SCM_DMA_BASE;
        if (addr > h->scm_size || len > h->scm_size - addr) {
            return NULL;
        }
        return h->scm + addr;
    }
    if (addr > h->ram_size || len > h->ram_size - addr) {
        return NULL;
    }
    return h->ram + addr;
}

static int th_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    TestHost *h = opaque;
    uint8_t *p = th_mem(h, addr, len);

    if (!p) {
        return -1;
    }
    h->dma_read_bytes += len;
    memcpy(buf, p, len);
    return 0;
}

static int th_dma_write(void *opaque, uint64_t addr, const void *buf, size_t len)
{
    TestHost *h = opaque;
    uint8_t *p = th_mem(h, addr, len);

    if (!p) {
        return -1;
    }
    h->dma_write_bytes += len;
    memcpy(p, buf, len);
    return 0;
}

/* The window's durable image follows what the engine persists. */
static void th_persist(void *opaque, uint64_t off, uint64_t len)
{
    TestHost *h = opaque;

    g_assert_cmpuint(off, <=, h->scm_size);
    g_assert_cmpuint(len, <=, h->scm_size - off);
    h->persists++;
    if (h->persist_hook) {
        h->persist_hook(h, off, len);
        return;
    }
    memcpy(h->scm_durable + off, h->scm + off, len);
}

static void th_raise_irq(void *opaque, unsigned vector)
{
    TestHost *h = opaque;

    g_assert_cmpuint(vector, <, TEST_MAX_VECTORS);
    h->irqs[vector]++;
    if (h->irq_writes_ctrl) {
        uint32_t status;

        rnic_engine_reg_write(h->engine, RNIC_REG_DEV_CTRL, h->irq_writes_ctrl);
        rnic_engine_reg_read(h->engine, RNIC_REG_DEV_STATUS, &status);
        h->ready_after_irq_write = status & RNIC_STATUS_READY;
    }
}

static void th_transmit(void *opaque, const struct iovec *iov, int iovcnt)
{
    TestHost *h = opaque;
    GByteArray *f = g_byte_array_new();
    int i;

    for (i = 0; i < iovcnt; i++) {
        g_byte_array_append(f, iov[i].iov_base, iov[i].iov_len);
    }
    g_ptr_array_add(h->frames, f);
}

static void th_schedule(void *opaque)
{
    TestHost *h = opaque;

    h->scheduled = true;
}

static bool th_run_now(void *opaque)
{
    TestHost *h = opaque;

    return h->run_now;
}

static void th_timer_arm(void *opaque, uint64_t deadline_ns)
{
    TestHost *h = opaque;

    h->timer_deadline = deadline_ns;
}

static uint64_t th_clock_ns(void *opaque)
{
    TestHost *h = opaque;

    return h->now_ns;
}

static bool th_event_enabled(void *opaque, RnicEvent ev)
{
    TestHost *h = opaque;

    if (h->events_off) {
        return false;
    }
    return rnic_event_class(ev) != RNIC_EVC_TRACE || h->trace ||
           g_test_verbose();
}

static void th_event(void *opaque, RnicEvent ev, const RnicEventArgs *a)
{
    TestHost *h = opaque;
    char *msg = rnic_event_describe(ev, a);

    if (rnic_event_class(ev) == RNIC_EVC_UB) {
        h->guest_errors++;
    }
    if (g_test_verbose()) {
        g_printerr("rnic: %s\n", msg);
    }
    g_ptr_array_add(h->log, msg);
}

static void *th_dma_map(void *opaque, uint64_t addr, uint64_t *len,
                        bool is_write)
{
    TestHost *h = opaque;
    uint64_t limit = addr >= RNIC_SCM_DMA_BASE ?
                     RNIC_SCM_DMA_BASE + h->scm_size : h->ram_size;
    uint8_t *p;

    if (h->map_disabled || addr >= limit) {
        return NULL;
    }
    *len = MIN(*len, limit - addr);
    p = th_mem(h, addr, *len);
    if (is_write) {
        h->dma_write_bytes += *len;
    } else {
        h->dma_read_bytes += *len;
    }
    h->maps++;
    return p;
}

static void th_dma_unmap(void *opaque, void *ptr, uint64_t len, bool is_write,
                         uint64_t access_len)
{
    TestHost *h = opaque;

    g_assert_cmpuint(h->maps, >, 0);
    h->maps--;
}

static void th_rx_ready(void *opaque)
{
    TestHost *h = opaque;

    h->rx_ready++;
}

static const RnicHostOps test_host_ops = {
    .dma_read = th_dma_read,
    .dma_write = th_dma_write,
    .raise_irq = th_raise_irq,
    .transmit = th_transmit,
    .schedule = th_schedule,
    .run_now = th_run_now,
    .timer_arm = th_timer_arm,
    .clock_ns = th_clock_ns,
    .event = th_event,
    .event_enabled = th_event_enabled,
    .rx_ready = th_rx_ready,
    .dma_map = th_dma_map,
    .dma_unmap = th_dma_unmap,
    .persist = th_persist,
};

TestHost *test_host_new(const RnicEngineConfig *cfg)
{
    return test_host_new_sized(cfg, TEST_RAM_SIZE);
}

TestHost *test_host_new_sized(const RnicEngineConfig *cfg, uint64_t ram_size)
{
    TestHost *h = g_new0(TestHost, 1);

    if (cfg) {
        h->cfg = *cfg;
    } else {
        rnic_engine_config_defaults(&h->cfg);
    }
    h->ram_size = ram_size;
    h->ram = g_malloc0(h->ram_size);
    h->alloc_next = 0x10000;    /* keep address 0 unused */
    h->timer_deadline = UINT64_MAX;
    h->now_ns = 1000000000ull;
    h->frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_byte_array_unref);
    h->log = g_ptr_array_new_with_free_func(g_free);
    h->scm_size = (uint64_t)h->cfg.scm_pages << 12;
    h->scm = g_malloc0(h->scm_size);
    h->scm_durable = g_malloc0(h->scm_size);
    h->engine = rnic_engine_new(&h->cfg, &test_host_ops, h);
    /* the suites run once with the WQE translation cache off as well */
    if (!g_strcmp0(g_getenv("RNIC_WQE_CACHE"), "off")) {
        rnic_engine_set_wqe_cache(h->engine, false);
    }
    return h;
}

/*
 * The most one call of each kind did over every host this process freed;
 * printed at exit when RNIC_CALL_TABLE is set (the per-call table
 * from the unit tests).
 */
static RnicCallWork call_max_all[RNIC_CALL_COUNT];

static void call_table_print(void)
{
    unsigned c;

    for (c = 0; c < RNIC_CALL_COUNT; c++) {
        const RnicCallWork *m = &call_max_all[c];

        fprintf(stderr, "call-max %-14s wqes %" PRIu64 " frames %" PRIu64
                " entries %" PRIu64 " dma_bytes %" PRIu64 " persist_bytes %"
                PRIu64 "\n", rnic_call_name(c), m->wqes, m->frames,
                m->entries, m->dma_bytes, m->persist_bytes);
    }
}

static void call_table_merge(RnicEngine *e)
{
    static bool registered;
    unsigned c;

    if (!getenv("RNIC_CALL_TABLE")) {
        return;
    }
    if (!registered) {
        registered = true;
        atexit(call_table_print);
    }
    for (c = 0; c < RNIC_CALL_COUNT; c++) {
        RnicCallWork m;

        rnic_engine_call_max(e, c, &m);
        rnic_call_work_max(&call_max_all[c], &m);
    }
}

void test_host_free(TestHost *h)
{
    guint i;

    /* every call of the test stayed within its bound (docs/spec.md §8) */
    if (rnic_engine_call_overruns(h->engine)) {
        for (i = 0; i < h->log->len; i++) {
            if (strstr(g_ptr_array_index(h->log, i), "call_bound")) {
                g_printerr("%s\n", (char *)g_ptr_array_index(h->log, i));
            }
        }
    }
    g_assert_cmpuint(rnic_engine_call_overruns(h->engine), ==, 0);
    call_table_merge(h->engine);
    rnic_engine_free(h->engine);
    g_ptr_array_free(h->frames, TRUE);
    g_ptr_array_free(h->log, TRUE);
    g_free(h->ram);
    g_free(h->scm);
    g_free(h->scm_durable);
    g_free(h);
}

void *test_scm_ptr(TestHost *h, uint64_t off)
{
    g_assert_cmpuint(off, <, h->scm_size);
    return h->scm + off;
}

void test_host_copy_guest(TestHost *dst, const TestHost *src)
{
    g_assert_cmpuint(dst->ram_size, ==, src->ram_size);
    g_assert_cmpuint(dst->scm_size, ==, src->scm_size);
    memcpy(dst->ram, src->ram, src->ram_size);
    if (src->scm_size) {
        memcpy(dst->scm, src->scm, src->scm_size);
        memcpy(dst->scm_durable, src->scm_durable, src->scm_size);
    }
    dst->aq = src->aq;
    dst->acq = src->acq;
    dst->aq_log2 = src->aq_log2;
    dst->aq_tail = src->aq_tail;
    dst->acq_head = src->acq_head;
    dst->next_cmd_id = src->next_cmd_id;
    dst->alloc_next = src->alloc_next;
}

void test_host_power_cut(TestHost *h)
{
    g_assert_cmpuint(h->scm_size, >, 0);
    memcpy(h->scm, h->scm_durable, h->scm_size);
}

uint64_t test_alloc(TestHost *h, uint64_t size, uint64_t align)
{
    uint64_t a = (h->alloc_next + align - 1) & ~(align - 1);

    g_assert_cmpuint(a + size, <=, h->ram_size);
    h->alloc_next = a + size;
    memset(h->ram + a, 0, size);
    return a;
}

void *test_ptr(TestHost *h, uint64_t addr)
{
    g_assert_cmpuint(addr, <, h->ram_size);
    return h->ram + addr;
}

void test_host_run(TestHost *h)
{
    int rounds = 0;

    while (h->scheduled) {
        h->scheduled = false;
        rnic_engine_run(h->engine);
        g_assert_cmpint(++rounds, <, 100000);
    }
}

GPtrArray *test_host_take_frames(TestHost *h)
{
    GPtrArray *out;

    test_host_run(h);
    if (!h->frames->len) {
        return NULL;
    }
    out = h->frames;
    h->frames = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref);
    return out;
}

void test_host_advance(TestHost *h, uint64_t ns)
{
    h->now_ns += ns;
    if (h->timer_deadline != UINT64_MAX && h->now_ns >= h->timer_deadline) {
        h->timer_deadline = UINT64_MAX;
        rnic_engine_timer_expired(h->engine);
    }
    test_host_run(h);
}

uint32_t test_reg_read(TestHost *h, uint32_t offset)
{
    uint32_t v;

    rnic_engine_reg_read(h->engine, offset, &v);
    return v;
}

RnicAccessResult test_reg_write(TestHost *h, uint32_t offset, uint32_t value)
{
    return rnic_engine_reg_write(h->engine, offset, value);
}
