/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the libFuzzer targets: a check that aborts (libFuzzer
 * reports it as a crash, with the input), byte order, the ICRC of a frame
 * made right, and the seed writers' output.
 *
 * Seeds are written from LLVMFuzzerInitialize into the corpus directory
 * given on the command line (the first argument that is not an option and
 * names a directory), or into $RNIC_FUZZ_SEEDS when that is set; an empty
 * $RNIC_FUZZ_SEEDS writes none. File names are the SHA-1 of the contents,
 * as libFuzzer names the inputs it keeps.
 *
 * Targets that drive an engine (rnic-engine.h included before this file)
 * also get the check of the per-call work bound (docs/spec.md §8):
 * fuzz_calls_check() after every step aborts when a call into the engine
 * did more than its kind's bound (rnic_engine_call_overruns), naming the
 * call kind, the figure, its value and the bound; fuzz_calls_note() after
 * every input (and before an engine is freed) keeps the largest figure
 * each kind of call reached in this process, printed as a table to stderr
 * at exit, on SIGINT/SIGTERM, every FUZZ_CALLS_EVERY inputs and, the run
 * going on, after a SIGUSR1 (fuzz_calls_init(), from
 * LLVMFuzzerInitialize).
 */
#ifndef RNIC_FUZZ_COMMON_H
#define RNIC_FUZZ_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>
#include "rnic-roce.h"

#define CHECK(cond) do { \
        if (!(cond)) { \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
                    __LINE__, #cond); \
            abort(); \
        } \
    } while (0)

/*
 * Checks of large areas in functions marked FUZZ_NO_COVERAGE: their
 * comparisons are no coverage feedback and their loads of the fuzzer's
 * own buffers need no address checks, they are only cost.
 */
#define FUZZ_NO_COVERAGE __attribute__((no_sanitize("coverage", "address")))

/* Does [p, p + len) hold only 'byte'? */
static FUZZ_NO_COVERAGE inline bool fuzz_all_bytes(const uint8_t *p,
                                                   size_t len, uint8_t byte)
{
    uint64_t w = 0x0101010101010101ull * byte, x;
    size_t i = 0;

    for (; i + 8 <= len; i += 8) {
        memcpy(&x, p + i, 8);
        if (x != w) {
            return false;
        }
    }
    for (; i < len; i++) {
        if (p[i] != byte) {
            return false;
        }
    }
    return true;
}

static inline uint16_t fuzz_ld_be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t fuzz_ld_le32(const uint8_t *p)
{
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void fuzz_st_le32(uint8_t *p, uint32_t v)
{
    p[0] = v;
    p[1] = v >> 8;
    p[2] = v >> 16;
    p[3] = v >> 24;
}

/*
 * A frame of 'len' bytes that is fine but for its ICRC gets the right one
 * (so that mutations reach past the ICRC check); any other is left alone.
 */
static inline void fuzz_fix_icrc(uint8_t *f, size_t len)
{
    RnicRoceHdr hd;
    size_t ip_len;
    uint8_t *ip;

    if (rnic_roce_decode(f, len, &hd) != RNIC_ROCE_ERR_ICRC) {
        return;
    }
    ip = f + hd.l3_offset;
    ip_len = hd.ipv6 ? RNIC_ROCE_IPV6_HLEN + fuzz_ld_be16(ip + 4) :
             fuzz_ld_be16(ip + 2);
    fuzz_st_le32(ip + ip_len - RNIC_ROCE_ICRC_LEN,
                 rnic_roce_icrc(ip, hd.ipv6, ip_len - RNIC_ROCE_ICRC_LEN));
}

/* Where LLVMFuzzerInitialize writes its seeds, or NULL for nowhere. */
static inline const char *fuzz_seed_dir(int argc, char **argv)
{
    const char *env = getenv("RNIC_FUZZ_SEEDS");
    int i;

    if (env) {
        return *env ? env : NULL;
    }
    for (i = 1; i < argc; i++) {
        if (argv[i][0] != '-') {
            return g_file_test(argv[i], G_FILE_TEST_IS_DIR) ? argv[i] : NULL;
        }
    }
    return NULL;
}

static inline void fuzz_write_seed(const char *dir, const void *data,
                                   size_t len)
{
    char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA1, data, len);
    char *path = g_build_filename(dir, sum, NULL);

    if (!g_file_set_contents(path, data, len, NULL)) {
        fprintf(stderr, "cannot write seed %s\n", path);
    }
    g_free(path);
    g_free(sum);
}

static inline void fuzz_write_seed_bytes(const char *dir, const GByteArray *b)
{
    fuzz_write_seed(dir, b->data, b->len);
}

/* LLVMFuzzerInitialize's seeds: write_seeds(dir) if there is a 'dir'. */
static inline void fuzz_seeds(int argc, char **argv,
                              void (*write_seeds)(const char *dir))
{
    const char *dir = fuzz_seed_dir(argc, argv);

    if (dir) {
        write_seeds(dir);
    }
}

#ifdef RNIC_ENGINE_H
#include <signal.h>
#include <unistd.h>

#define FUZZ_CALLS_EVERY    1000000     /* inputs between two tables */

static const char *const fuzz_call_figures[] = {
    "WQEs", "frames", "entries", "DMA bytes", "persisted bytes",
};

static inline void fuzz_call_figs(const RnicCallWork *w, uint64_t v[5])
{
    v[0] = w->wqes;
    v[1] = w->frames;
    v[2] = w->entries;
    v[3] = w->dma_bytes;
    v[4] = w->persist_bytes;
}

/* The largest figure per call kind over the process, and its inputs. */
static RnicCallWork fuzz_calls_seen[RNIC_CALL_COUNT];
static uint64_t fuzz_calls_inputs;
static const char *fuzz_calls_target = "?";

static inline void fuzz_calls_table(const char *why)
{
    unsigned c, i;

    fprintf(stderr, "%s: work per engine call, the most one call did in "
            "%" G_GUINT64_FORMAT " inputs (%s), against the bound:\n",
            fuzz_calls_target, fuzz_calls_inputs, why);
    fprintf(stderr, "  %-15s %-16s %14s %14s\n", "call", "figure", "max",
            "bound");
    for (c = 0; c < RNIC_CALL_COUNT; c++) {
        uint64_t v[5], b[5];

        fuzz_call_figs(&fuzz_calls_seen[c], v);
        fuzz_call_figs(rnic_engine_call_bound(c), b);
        for (i = 0; i < 5; i++) {
            fprintf(stderr, "  %-15s %-16s %14" G_GUINT64_FORMAT
                    " %14" G_GUINT64_FORMAT "%s\n", rnic_call_name(c),
                    fuzz_call_figures[i], v[i], b[i],
                    v[i] > b[i] ? "  OVER" : "");
        }
    }
}

static inline void fuzz_calls_at_exit(void)
{
    fuzz_calls_table("at exit");
}

/* SIGUSR1: the table after the current input. */
static volatile sig_atomic_t fuzz_calls_asked;

static inline void fuzz_calls_on_usr1(int sig)
{
    fuzz_calls_asked = 1;
}

static inline void fuzz_calls_on_signal(int sig)
{
    /* not async-signal-safe, but the process ends here */
    fuzz_calls_table(sig == SIGINT ? "SIGINT" : "SIGTERM");
    _exit(128 + sig);
}

/*
 * From LLVMFuzzerInitialize: the table at exit and on SIGINT/SIGTERM
 * (libFuzzer keeps a handler it finds installed; it would _Exit on these
 * without running atexit handlers).
 */
static inline void fuzz_calls_init(const char *target)
{
    struct sigaction end = { .sa_handler = fuzz_calls_on_signal };
    struct sigaction usr1 = { .sa_handler = fuzz_calls_on_usr1 };

    fuzz_calls_target = target;
    atexit(fuzz_calls_at_exit);
    sigaction(SIGINT, &end, NULL);
    sigaction(SIGTERM, &end, NULL);
    sigaction(SIGUSR1, &usr1, NULL);
}

/* Keep the largest figures engine 'e' has seen so far. */
static inline void fuzz_calls_note(const RnicEngine *e)
{
    unsigned c;

    for (c = 0; c < RNIC_CALL_COUNT; c++) {
        RnicCallWork m;

        rnic_engine_call_max(e, c, &m);
        rnic_call_work_max(&fuzz_calls_seen[c], &m);
    }
}

/* After every input: its maxima noted, the table every so often. */
static inline void fuzz_calls_input_done(const RnicEngine *e)
{
    fuzz_calls_note(e);
    if (++fuzz_calls_inputs % FUZZ_CALLS_EVERY == 0 || fuzz_calls_asked) {
        fuzz_calls_asked = 0;
        fuzz_calls_table("so far");
    }
}

/*
 * After every step: abort when a call did more than its bound. The
 * figures over their bound are named from the engine's maxima (which
 * hold the overrunning call's values: a later call may only raise them).
 */
static inline void fuzz_calls_check(const RnicEngine *e, const char *where)
{
    unsigned c, i;

    if (!rnic_engine_call_overruns(e)) {
        return;
    }
    for (c = 0; c < RNIC_CALL_COUNT; c++) {
        uint64_t v[5], b[5];
        RnicCallWork m;

        rnic_engine_call_max(e, c, &m);
        fuzz_call_figs(&m, v);
        fuzz_call_figs(rnic_engine_call_bound(c), b);
        for (i = 0; i < 5; i++) {
            if (v[i] > b[i]) {
                fprintf(stderr, "call bound exceeded (%s): a %s call did "
                        "%" G_GUINT64_FORMAT " %s, its bound is %"
                        G_GUINT64_FORMAT "\n", where, rnic_call_name(c),
                        v[i], fuzz_call_figures[i], b[i]);
            }
        }
    }
    fprintf(stderr, "call bound exceeded (%s): %" G_GUINT64_FORMAT
            " call(s) over their bound\n", where,
            rnic_engine_call_overruns(e));
    fuzz_calls_note(e);
    abort();
}
#endif /* RNIC_ENGINE_H */

#endif /* RNIC_FUZZ_COMMON_H */
