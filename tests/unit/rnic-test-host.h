/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A fake host for engine unit tests: guest RAM as a byte array, interrupt
 * counters, a manual clock, a frame log. Tests drive the engine through
 * registers, doorbells and guest memory exactly as a guest would.
 */
#ifndef RNIC_TEST_HOST_H
#define RNIC_TEST_HOST_H

#include "rnic-engine.h"

#define TEST_RAM_SIZE   (64u << 20)
#define TEST_MAX_VECTORS 64

typedef struct TestHost {
    RnicEngine *engine;
    RnicEngineConfig cfg;
    uint8_t *ram;               /* guest RAM, guest address 0 .. size */
    uint64_t ram_size;
    uint64_t alloc_next;        /* bump allocator over ram */
    unsigned irqs[TEST_MAX_VECTORS];
    /*
     * An MSI aimed at BAR0: raise_irq writes this to DEV_CTRL from inside
     * the engine call (0: off), and notes whether the device was still
     * ready right after that write.
     */
    uint32_t irq_writes_ctrl;
    bool ready_after_irq_write;
    bool scheduled;
    bool run_now;               /* RnicHostOps.run_now answers this */
    uint64_t now_ns;
    uint64_t timer_deadline;
    GPtrArray *frames;          /* GByteArray per transmitted frame */
    unsigned rx_ready;          /* RnicHostOps.rx_ready calls */
    bool map_disabled;          /* dma_map refuses: the engine bounces */
    unsigned maps;              /* dma_map mappings not yet unmapped */
    GPtrArray *log;             /* char * per event (rnic_event_describe) */
    unsigned guest_errors;      /* events of class UB */
    /*
     * Which events RnicHostOps.event_enabled wants: the errors and the
     * guest's mistakes; with 'trace' (or --verbose) normal operation too,
     * as QEMU with its trace points on; with 'events_off' none.
     */
    bool trace;
    bool events_off;
    uint64_t dma_read_bytes;    /* bytes the engine read and wrote, */
    uint64_t dma_write_bytes;   /* dma_map included (its full length) */
    /* admin queue state of the test verbs driver (rnic-test-verbs.h) */
    uint64_t aq, acq;
    uint32_t aq_log2, aq_tail, acq_head;
    uint16_t next_cmd_id;
    uint64_t modify_attr;       /* tv_modify's staging buffer, 0: none */
    /*
     * The memory window (cfg.scm_pages): its bytes, and its durable image,
     * which follows what the engine persists; test_host_power_cut() makes
     * the window what power loss would leave of it.
     */
    uint8_t *scm;
    uint8_t *scm_durable;
    uint64_t scm_size;
    unsigned persists;          /* RnicHostOps.persist calls */
    /* benchmarks: persist by this instead of the durable image */
    void (*persist_hook)(struct TestHost *h, uint64_t off, uint64_t len);
} TestHost;

TestHost *test_host_new(const RnicEngineConfig *cfg);  /* NULL: defaults */
TestHost *test_host_new_sized(const RnicEngineConfig *cfg, uint64_t ram_size);
void test_host_free(TestHost *h);

/* Guest RAM helpers. */
uint64_t test_alloc(TestHost *h, uint64_t size, uint64_t align);
void *test_ptr(TestHost *h, uint64_t addr);
/* Window byte 'off' (cfg.scm_pages). */
void *test_scm_ptr(TestHost *h, uint64_t off);
/*
 * What a migration carries besides the device state: guest RAM, the
 * window (and its durable image), the test driver's admin queue state.
 */
void test_host_copy_guest(TestHost *dst, const TestHost *src);
/* Power loss: the window keeps only what was persisted. */
void test_host_power_cut(TestHost *h);

/* Run the engine until it stops asking to be scheduled. */
void test_host_run(TestHost *h);
/*
 * Run the engine and take the frames it transmitted (GByteArray each), or
 * NULL when there are none; h->frames starts again empty.
 */
GPtrArray *test_host_take_frames(TestHost *h);
/* Move the clock forward, firing the engine timer when due. */
void test_host_advance(TestHost *h, uint64_t ns);

uint32_t test_reg_read(TestHost *h, uint32_t offset);
RnicAccessResult test_reg_write(TestHost *h, uint32_t offset, uint32_t value);

#endif /* RNIC_TEST_HOST_H */
