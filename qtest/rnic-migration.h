/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the live-migration qtests (rnic-migration-*-test.c) share: QEMU
 * instances ('-M pc', the rnic at 04.0) driven by the qtest verbs driver
 * (rnic-verbs.h), migrations between them over unix sockets in one
 * temporary directory, and a loopback pair with traffic to check.
 */
#ifndef QTEST_RNIC_MIGRATION_H
#define QTEST_RNIC_MIGRATION_H

#include "libqos/libqos-malloc.h"
#include "qobject/qdict.h"
#include "rnic-verbs.h"

#define MIG_DEVICE      "-M pc -device rnic,id=rnic0,addr=04.0"
#define VEC_ASYNC       1
#define VEC_COMP        2
#define BUF_SIZE        (64 * 1024)
#define ALL_RIGHTS      (RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE | \
                         RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC)
#define WAIT_US         (10 * G_USEC_PER_SEC)

/* One QEMU instance with the rnic; its driver state migrates with it. */
typedef struct MigVm {
    QTestState *qts;
    QPCIBus *bus;
    QRnic d;
    char *args;                 /* command line without -incoming */
    /* guest memory bookkeeping: moves with the VM (the RAM migrates) */
    QGuestAllocator *alloc;
    char *uri;                  /* an incoming migration's */
} MigVm;

/* The directory of this test's sockets and logs (made on first use). */
const char *mig_tmpdir(void);
/* A new path in it, "<what>-<n>" (the caller frees it). */
char *mig_path(const char *what);
/* Remove the directory and what is in it. */
void mig_cleanup_dir(void);

/* Start QEMU with 'args', attach the rnic, route vectors 0-2. */
MigVm *mig_boot(const char *args);
/* Quit and free the VM. */
void mig_free(MigVm *vm);
/* mig_free and mig_cleanup_dir. */
void mig_done(MigVm *vm);

/* query-migrate's status (and, if asked for, its error-desc). */
char *mig_status(QTestState *qts, char **error_desc);
/* Wait for one of the final states; returns it. */
char *mig_wait_final(QTestState *qts);
void mig_wait_status(QTestState *qts, const char *want);
/* query-status's status. */
char *mig_run_state(QTestState *qts);
void mig_assert_run_state(QTestState *qts, const char *want);

/*
 * A destination for 'src', started with the same command line plus
 * 'dst_extra' and -incoming on a new socket.
 */
MigVm *mig_start_dest(MigVm *src, const char *dst_extra);
/*
 * Migrate 'src' to 'dst'; 'running': the source runs, wait for the
 * destination to resume; otherwise it stays paused after the incoming
 * migration. The source is quit and the driver state moves over; with
 * 'src_info', the source's final query-migrate.
 */
MigVm *mig_complete(MigVm *src, MigVm *dst, bool running, QDict **src_info);
/* mig_start_dest and mig_complete. */
MigVm *mig_migrate_info(MigVm *src, const char *dst_extra, bool running,
                        QDict **src_info);
MigVm *mig_migrate(MigVm *src, const char *dst_extra, bool running);

/* The device's mapping tables and QPs as the monitor shows them. */
char *mig_tables(MigVm *vm);

/*
 * A loopback pair (TvPair): an async EQ on VEC_ASYNC, the pair's own EQ
 * (for the CQs) on VEC_COMP.
 */
void mig_pair_init(QRnic *d, TvPair *p);
/* RDMA WRITE, READ and a SEND through the pair, data checked. */
void mig_pair_traffic(QRnic *d, TvPair *p, uint8_t seed);

#endif /* QTEST_RNIC_MIGRATION_H */
