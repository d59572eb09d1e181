/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The test verbs driver (tests/common/rnic-verbs-driver.h) over the real
 * device: rings in qtest guest memory, BAR0 registers and BAR2 doorbells
 * through libqos, the virtual clock stepped while waiting.
 */
#ifndef QTEST_RNIC_VERBS_H
#define QTEST_RNIC_VERBS_H

#include "rnic-qos.h"

typedef QRnic RvDev;
#include "rnic-verbs-driver.h"

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TvPair, tv_pair_fini)

/*
 * A loopback pair (TvPair, buffers of 'buf_size') on a reset device, MSI-X
 * vectors 0-2 routed: every object of an earlier pair is gone.
 */
void qv_loop_init(TvPair *l, QRnic *d, uint32_t buf_size);

/* A new empty temporary file (g_file_open_tmp 'tmpl'); g_free the path. */
char *qv_tmp_file(const char *tmpl);

/* Guest memory aligned to 'align' (power of two), zeroed. */
uint64_t qv_alloc(QRnic *d, uint64_t size, uint64_t align);

/* GID ::ffff:10.<vlan>.0.<host>. */
static inline void qv_gid_bytes(uint8_t gid[16], uint32_t vlan, uint8_t host)
{
    tv_gid_v4(gid, vlan, 0, host);
}

/* The GID qv_gid_bytes(vlan, host) at 'index' in 'ctx'. */
static inline void qv_gid(QRnic *d, uint32_t index, uint32_t ctx,
                          uint32_t vlan, uint8_t host)
{
    uint8_t gid[16];

    qv_gid_bytes(gid, vlan, host);
    tv_add_gid(d, index, ctx, gid);
}

#endif /* QTEST_RNIC_VERBS_H */
