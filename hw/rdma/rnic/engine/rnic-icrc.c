/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * CRC-32 and the RoCEv2 invariant CRC (IBTA Annex A17.3.3).
 *
 * CRC-32 here is the reflected IEEE 802.3 CRC with zlib's conventions
 * (initial and final inversion, chainable), which is also what rxe gets:
 * it runs crc32_le() from seed ~0 and inverts the result. Two engines:
 * slicing-by-8 tables (portable), and on x86-64 with PCLMULQDQ a 4 x 128-bit
 * carry-less multiply fold with a Barrett reduction (Gopal et al., "Fast
 * CRC Computation for Generic Polynomials Using PCLMULQDQ Instruction",
 * Intel 2009) for every buffer of 16 bytes or more.
 */
#include <string.h>
#include <glib.h>

#include "rnic-roce.h"

#define CRC32_POLY_REFLECTED    0xedb88320u

static uint32_t crc_table[8][256];

static uint32_t (*crc32_fold)(uint32_t reg, const uint8_t *p, size_t len);

static inline uint32_t ld_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* Table CRC over the raw (not inverted) register. */
static uint32_t crc32_slice8(uint32_t reg, const uint8_t *p, size_t len)
{
    while (len && ((uintptr_t)p & 7)) {
        reg = crc_table[0][(reg ^ *p++) & 0xff] ^ (reg >> 8);
        len--;
    }
    while (len >= 8) {
        uint32_t lo = reg ^ ld_le32(p);
        uint32_t hi = ld_le32(p + 4);

        reg = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
              crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
              crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
              crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--) {
        reg = crc_table[0][(reg ^ *p++) & 0xff] ^ (reg >> 8);
    }
    return reg;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define HAVE_CRC32_PCLMUL 1

/*
 * Fold constants for the reflected polynomial 0x1db710641: x^(k) mod P for
 * the distances 4 x 128 bits (K1, K2) and 128 bits (K3, K4), bit-reflected
 * and pre-shifted as the carry-less products of reflected operands need;
 * K5 folds 64 bits into 32, and P' (mu) with P is the Barrett reduction to
 * the final 32-bit remainder (the constants of zlib's and Linux's
 * PCLMULQDQ CRC-32).
 */
#define CRC32_K1    0x154442bd4ull
#define CRC32_K2    0x1c6e41596ull
#define CRC32_K3    0x1751997d0ull
#define CRC32_K4    0x0ccaa009eull
#define CRC32_K5    0x163cd6124ull
#define CRC32_P     0x1db710641ull
#define CRC32_MU    0x1f7011641ull

__attribute__((target("pclmul")))
static inline __m128i fold128(__m128i x, __m128i k, __m128i next)
{
    __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);

    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/*
 * Whole 16-byte blocks by folding (four lanes while 64 bytes remain), the
 * 128-bit remainder reduced to 32 bits by K5 and Barrett, then the last
 * 0-15 bytes by table. No table lookups for the blocks: in a busy QEMU the
 * tables are often out of the L1 cache, where a fold is not. len >= 16.
 */
__attribute__((target("pclmul")))
static uint32_t crc32_pclmul(uint32_t reg, const uint8_t *p, size_t len)
{
    const __m128i k34 = _mm_set_epi64x(CRC32_K4, CRC32_K3);
    const __m128i mask32 = _mm_setr_epi32(~0, 0, ~0, 0);
    __m128i x0, x1, x2, x3, t;

    x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p),
                       _mm_cvtsi32_si128((int)reg));
    if (len >= 64) {
        const __m128i k12 = _mm_set_epi64x(CRC32_K2, CRC32_K1);

        x1 = _mm_loadu_si128((const __m128i *)(p + 16));
        x2 = _mm_loadu_si128((const __m128i *)(p + 32));
        x3 = _mm_loadu_si128((const __m128i *)(p + 48));
        p += 64;
        len -= 64;
        while (len >= 64) {
            x0 = fold128(x0, k12, _mm_loadu_si128((const __m128i *)p));
            x1 = fold128(x1, k12, _mm_loadu_si128((const __m128i *)(p + 16)));
            x2 = fold128(x2, k12, _mm_loadu_si128((const __m128i *)(p + 32)));
            x3 = fold128(x3, k12, _mm_loadu_si128((const __m128i *)(p + 48)));
            p += 64;
            len -= 64;
        }
        x0 = fold128(x0, k34, x1);
        x0 = fold128(x0, k34, x2);
        x0 = fold128(x0, k34, x3);
    } else {
        p += 16;
        len -= 16;
    }
    while (len >= 16) {
        x0 = fold128(x0, k34, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        len -= 16;
    }

    /* 128 -> 64 bits (K4), 64 -> 32 bits (K5) */
    t = _mm_clmulepi64_si128(x0, k34, 0x10);
    x0 = _mm_xor_si128(_mm_srli_si128(x0, 8), t);
    t = _mm_srli_si128(x0, 4);
    x0 = _mm_clmulepi64_si128(_mm_and_si128(x0, mask32),
                              _mm_set_epi64x(0, CRC32_K5), 0x00);
    x0 = _mm_xor_si128(x0, t);
    /* Barrett: 64 -> 32 bits */
    t = _mm_clmulepi64_si128(_mm_and_si128(x0, mask32),
                             _mm_set_epi64x(CRC32_MU, CRC32_P), 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32),
                             _mm_set_epi64x(CRC32_MU, CRC32_P), 0x00);
    x0 = _mm_xor_si128(x0, t);
    reg = (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(x0, 4));
    return len ? crc32_slice8(reg, p, len) : reg;
}
#endif

static void crc32_init(void)
{
    static gsize done;

    if (g_once_init_enter(&done)) {
        for (unsigned i = 0; i < 256; i++) {
            uint32_t c = i;

            for (int b = 0; b < 8; b++) {
                c = (c >> 1) ^ ((c & 1) ? CRC32_POLY_REFLECTED : 0);
            }
            crc_table[0][i] = c;
        }
        for (unsigned i = 0; i < 256; i++) {
            for (int t = 1; t < 8; t++) {
                uint32_t c = crc_table[t - 1][i];

                crc_table[t][i] = (c >> 8) ^ crc_table[0][c & 0xff];
            }
        }
        crc32_fold = crc32_slice8;
#ifdef HAVE_CRC32_PCLMUL
        __builtin_cpu_init();
        if (__builtin_cpu_supports("pclmul")) {
            crc32_fold = crc32_pclmul;
        }
#endif
        g_once_init_leave(&done, 1);
    }
}

uint32_t rnic_crc32_table(uint32_t crc, const void *buf, size_t len)
{
    crc32_init();
    return ~crc32_slice8(~crc, buf, len);
}

uint32_t rnic_crc32(uint32_t crc, const void *buf, size_t len)
{
    crc32_init();
    /* Below one 16-byte block the fold has nothing to fold. */
    if (len < 16) {
        return ~crc32_slice8(~crc, buf, len);
    }
    return ~crc32_fold(~crc, buf, len);
}

/*
 * The masked headers go through the CRC in one buffer that starts with the
 * 8 bytes of 1s standing for the LRH; with IPv4 (20 + 8 + 12 bytes of IP,
 * UDP and BTH) that is three 16-byte blocks for the fold, and a RETH makes
 * it four.
 */
#define ICRC_LRH_LEN    8

uint32_t rnic_roce_icrc_hdr(const uint8_t *ip, bool ipv6, size_t len)
{
    uint8_t buf[ICRC_LRH_LEN + RNIC_ROCE_IPV6_HLEN + RNIC_ROCE_UDP_HLEN +
                RNIC_ROCE_TRANSPORT_HDR_MAX + 15];
    uint8_t *ps = buf + ICRC_LRH_LEN;
    size_t ip_hlen = ipv6 ? RNIC_ROCE_IPV6_HLEN : RNIC_ROCE_IPV4_HLEN;
    uint8_t *udp = ps + ip_hlen;
    uint8_t *bth = udp + RNIC_ROCE_UDP_HLEN;

    g_assert(len >= ip_hlen + RNIC_ROCE_UDP_HLEN + RNIC_ROCE_BTH_LEN &&
             len <= sizeof(buf) - ICRC_LRH_LEN);
    memset(buf, 0xff, ICRC_LRH_LEN);
    memcpy(ps, ip, len);
    if (ipv6) {
        ps[0] |= 0x0f;      /* traffic class, high nibble */
        ps[1] = 0xff;       /* traffic class low nibble, flow label */
        ps[2] = 0xff;
        ps[3] = 0xff;
        ps[7] = 0xff;       /* hop limit */
    } else {
        ps[1] = 0xff;       /* TOS */
        ps[8] = 0xff;       /* TTL */
        ps[10] = 0xff;      /* header checksum */
        ps[11] = 0xff;
    }
    udp[6] = 0xff;          /* UDP checksum */
    udp[7] = 0xff;
    bth[4] = 0xff;          /* FECN, BECN, resv6 */
    return rnic_crc32(0, buf, ICRC_LRH_LEN + len);
}

uint32_t rnic_roce_icrc(const uint8_t *ip, bool ipv6, size_t ip_len)
{
    size_t fixed = (ipv6 ? RNIC_ROCE_IPV6_HLEN : RNIC_ROCE_IPV4_HLEN) +
                   RNIC_ROCE_UDP_HLEN + RNIC_ROCE_BTH_LEN;
    /* the masked part rounded up to whole 16-byte blocks of the CRC */
    size_t hdr = fixed + (-(ICRC_LRH_LEN + fixed) & 15);

    g_assert(ip_len >= fixed);
    hdr = MIN(hdr, ip_len);
    return rnic_crc32(rnic_roce_icrc_hdr(ip, ipv6, hdr), ip + hdr,
                      ip_len - hdr);
}

uint32_t rnic_roce_icrc_rxe_flush(uint32_t icrc, const uint8_t *bth, size_t tlen)
{
    g_assert(tlen >= RNIC_ROCE_ICRC_LEN);
    return rnic_crc32(icrc, bth, tlen - RNIC_ROCE_ICRC_LEN);
}
