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

#endif /* RNIC_FUZZ_COMMON_H */
