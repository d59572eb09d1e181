/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the RoCEv2 wire qtests (rnic-wire-*-test.c) share: QEMU instances
 * with an rnic each on one Ethernet segment, RC connections between them,
 * data patterns, and a raw peer (the test itself on a unix datagram
 * socket of a VM's segment, crafting and reading frames).
 *
 * Timers run on QEMU's virtual clock, which the waits step on every
 * instance alive.
 */
#ifndef QTEST_RNIC_WIRE_H
#define QTEST_RNIC_WIRE_H

#include <sys/un.h>
#include "libqos/libqos-pc.h"
#include "rnic-verbs.h"
#include "rnic-roce.h"

#define WV_BUF          (8u << 20)  /* registered buffer per VM */
#define WV_CQ_LOG       12
#define WV_WAIT_US      (60 * G_USEC_PER_SEC)
#define WV_STEP_NS      20000       /* virtual time per wait round */

typedef struct WVm {
    QOSState *qs;
    QTestState *qts;
    QRnic d;
    uint8_t mac[6];
    uint8_t host;               /* GIDs ::ffff:10.<vlan>.0.<host> */
    uint32_t vlan[2];           /* of the two network contexts */
    uint32_t ctx[2];
    uint32_t pd[2];
    TvCq *cq;                   /* every QP's send and receive CQ */
    uint64_t buf;               /* WV_BUF bytes, registered in both PDs */
    uint32_t mr[2];
} WVm;

typedef struct WvPath {
    uint8_t mtu;
    uint8_t timeout;
    uint8_t retry;
    uint8_t rnr_retry;
} WvPath;

extern const WvPath path_1k, path_4k;

typedef struct WvPair {
    TvQp *a, *b;
} WvPair;

/* A directory for the sockets (and captures) of one segment. */
typedef struct Seg {
    char *dir;
} Seg;

/*
 * Map the rnic at 'devfn' of machine 'qs' (MAC 52:54:00:77:00:<host>) and
 * create its objects: network contexts for VLAN 0 and 'vlan1' with a GID
 * each (index = context), a PD each, one CQ, a buffer registered in both.
 */
WVm *wv_attach(QOSState *qs, int devfn, uint8_t host, uint32_t vlan1);
/* Boot a pc machine whose rnic (04.0) is on '-netdev <netdev>,id=n0'. */
WVm *wv_boot(uint8_t host, const char *netdev, const char *extra,
             uint32_t vlan1);
/* Quit the VM and free it. */
void wv_quit(WVm *vm);
/* Free it and stop stepping its clock; its machine is left alone. */
void wv_forget(WVm *vm);
/* Advance every VM's virtual clock (retransmission and RNR timers). */
void wv_tick(uint64_t ns);
/* The next CQE of vm's CQ (every clock stepped while waiting). */
struct rnic_cqe wv_wait(WVm *vm);
/* The next CQE must be a successful one with these values. */
struct rnic_cqe wv_expect(WVm *vm, uint64_t wr_id, uint8_t opcode,
                          uint32_t len);
/* vm's GID in context 'ci'. */
void wv_gid(uint8_t gid[16], WVm *vm, int ci);
/* RESET -> RTS of an RC QP of context 'ci' towards 'peer''s QPN 'dqpn'. */
void wv_rc_connect(WVm *vm, TvQp *qp, int ci, WVm *peer, uint32_t dqpn,
                   const WvPath *p);
/* Two RC QPs of context 'ci' (2^log entries) connected, a in A, b in B. */
WvPair wv_rc_pair(WVm *a, WVm *b, int ci, const WvPath *p, int log);
void wv_pair_free(WvPair *p);
/* The test data: a pattern that depends on 'seed' and the offset. */
void wv_pattern(uint8_t *p, size_t len, uint32_t seed);
/* Fill guest [addr, addr + len) of 'vm' with pattern 'seed'. */
void wv_fill(WVm *vm, uint64_t addr, size_t len, uint32_t seed);
/* Guest memory of 'vm' must hold pattern 'seed'. */
void wv_check(WVm *vm, uint64_t addr, size_t len, uint32_t seed);
/* Error counters of the wire: all zero on a clean segment. */
void wv_assert_clean(WVm *vm);

void seg_init(Seg *s);
/* A path in the segment's directory (the caller frees it). */
char *seg_path(Seg *s, const char *name);
/* Remove the directory and what is in it. */
void seg_free(Seg *s);
/* '-netdev stream' over a unix socket: A listens, B connects. */
void boot_stream_pair(Seg *s, WVm **a, WVm **b, const char *extra_a);

/* The raw peer: the test as host 99 (QPN 0x99) on A's segment. */
#define PEER_HOST       99
#define PEER_QPN        0x99
#define GUARD           0xa5
#define RQ_PSN          0xfffff0

typedef struct Raw {
    Seg seg;
    WVm *a;
    int fd;                     /* the test's socket on A's segment */
    struct sockaddr_un a_addr;
    uint8_t mac[6];
    uint64_t region;            /* guard page | target page | guard page */
    uint32_t mr;                /* the target page, in context 0 */
    uint64_t region5;           /* a page registered in context 5 */
    uint32_t mr5;
    uint32_t ctx5, pd5;
} Raw;

/*
 * Boot A on '-netdev dgram' towards the test's socket; register a page
 * between two guard pages (context 0) and a page of another context
 * (VLAN 5).
 */
void raw_init(Raw *t);
void raw_free(Raw *t);
/* An RC QP of A (context 0) connected to the test, peer QPN 'pqpn'. */
TvQp *raw_qp(Raw *t, uint32_t pqpn);
/* A valid RDMA WRITE_ONLY from the test to A's 'qp' at PSN 'psn'. */
RnicRoceHdr raw_write(Raw *t, TvQp *qp, uint32_t psn, uint64_t va,
                      uint32_t rkey, const uint8_t *data, uint32_t len);
/* The frame of 'h' in 'frame'; its length. */
size_t raw_encode(const RnicRoceHdr *h, uint8_t *frame, size_t size);
void raw_send_bytes(Raw *t, const uint8_t *frame, size_t len);

#endif /* QTEST_RNIC_WIRE_H */
