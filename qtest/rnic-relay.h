/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A lossy wire for qtests: a relay thread between two QEMU instances, each
 * on '-netdev dgram' over unix sockets whose remote is one of the relay's
 * two sockets. Every frame is forwarded to the other side, or — at the
 * configured rates, one fault per frame at most — dropped, duplicated,
 * held back behind the next frame (reordered) or corrupted (one bit the
 * RoCEv2 ICRC covers is flipped, so that the receiver must reject it).
 * No QEMU change: QEMU only ever sees a unix datagram peer.
 */
#ifndef QTEST_RNIC_RELAY_H
#define QTEST_RNIC_RELAY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct RnicRelay RnicRelay;

/* Fault rates, each a probability per frame (their sum at most 1). */
typedef struct RnicRelayFaults {
    double drop;
    double dup;
    double reorder;
    double corrupt;
} RnicRelayFaults;

/* What the relay did in one direction. */
typedef struct RnicRelayStats {
    unsigned frames;            /* frames received from the sender */
    unsigned forwarded;         /* frames sent on (a duplicate counts 2) */
    unsigned dropped;           /* lost on purpose (faults, blackhole) */
    unsigned duplicated;
    unsigned reordered;
    unsigned corrupted;         /* delivered with a flipped bit */
    unsigned failed;            /* not delivered: the receiver was gone or
                                   did not read for 1 s (a loss) */
} RnicRelayStats;

enum {
    RNIC_RELAY_A_TO_B = 0,
    RNIC_RELAY_B_TO_A = 1,
};

/*
 * A relay in directory 'dir': A sends to rnic_relay_path(r, 0), B to
 * rnic_relay_path(r, 1); the relay delivers to 'a_path' / 'b_path' (the
 * local sockets of A and B). 'seed' makes a run reproducible.
 */
RnicRelay *rnic_relay_new(const char *dir, const char *a_path,
                          const char *b_path, uint32_t seed);
const char *rnic_relay_path(RnicRelay *r, int side);
void rnic_relay_set_faults(RnicRelay *r, int dir, const RnicRelayFaults *f);
/* Lose every frame of direction 'dir' (a cable pulled). */
void rnic_relay_set_blackhole(RnicRelay *r, int dir, bool on);
void rnic_relay_get_stats(RnicRelay *r, int dir, RnicRelayStats *out);
void rnic_relay_free(RnicRelay *r);

/*
 * Fault rates from the environment variable 'name' ("drop=0.05,dup=0.02,
 * reorder=0.05,corrupt=0.02"); fields not given keep *f's values.
 */
void rnic_relay_faults_from_env(const char *name, RnicRelayFaults *f);

#endif /* QTEST_RNIC_RELAY_H */
