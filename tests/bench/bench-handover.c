/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host's floor under a latency round trip between two QEMUs: how long
 * it takes to hand one byte from a thread to another thread that sleeps in
 * ppoll() on a unix stream socket, as a QEMU main loop sleeps on its
 * '-netdev stream' socket. Two shapes:
 *
 *   ping-pong   two threads, each sleeping in ppoll() until the other's
 *               byte arrives (both ends block: no busy thread anywhere)
 *   read-lat    the shape of an ib_read_lat round trip between two rnic
 *               guests: a requester that busy-polls (the client's vCPU
 *               polling its CQ) writes a byte (its doorbell sends the READ
 *               request), a responder wakes and writes a byte on (the
 *               server's main loop answers), a completer wakes and sets a
 *               flag in memory (the client's main loop writes the CQE),
 *               which the requester sees
 *
 * Nothing else: no QEMU, no guest, no RDMA. Whatever a round trip of two
 * rnic guests takes beyond 'read-lat' is QEMU's, the device's and the
 * guest's. Prints the median, 10th and 90th percentile of each.
 *
 * Not a test: build with 'meson compile -C build/project', run
 * build/project/tests/bench/bench-handover [--rounds=N]
 */
#define _GNU_SOURCE     /* ppoll */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct Relay {
    int in;                 /* wait for a byte here ... */
    int out;                /* ... and write it on here, or */
    atomic_uint *flag;      /* ... count it here (out < 0) */
} Relay;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* One byte from 'in', after ppoll() as a main loop waits; false at EOF. */
static int wait_byte(int in)
{
    struct pollfd p = { .fd = in, .events = POLLIN };
    char c;

    if (ppoll(&p, 1, NULL, NULL) < 0) {
        return 0;
    }
    return read(in, &c, 1) == 1;
}

static void *relay(void *opaque)
{
    Relay *r = opaque;
    char c = 0;

    while (wait_byte(r->in)) {
        if (r->out >= 0) {
            if (write(r->out, &c, 1) != 1) {
                break;
            }
        } else {
            atomic_fetch_add_explicit(r->flag, 1, memory_order_release);
        }
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static void report(const char *name, uint64_t *rtt, int n)
{
    qsort(rtt, n, sizeof(*rtt), cmp_u64);
    printf("%-10s median %6.1f us   p10 %6.1f us   p90 %6.1f us   (%d rounds)\n",
           name, rtt[n / 2] / 1e3, rtt[n / 10] / 1e3, rtt[n * 9 / 10] / 1e3, n);
}

static int socket_pair(int sv[2])
{
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
        perror("socketpair");
        return -1;
    }
    return 0;
}

/* Two sleeping ends: the caller is one, a relay thread echoes. */
static int ping_pong(uint64_t *rtt, int n)
{
    int a[2], b[2];
    pthread_t t;
    Relay echo;
    char c = 0;

    if (socket_pair(a) || socket_pair(b)) {
        return -1;
    }
    echo = (Relay){ .in = a[1], .out = b[0] };
    pthread_create(&t, NULL, relay, &echo);
    for (int i = 0; i < n; i++) {
        uint64_t t0 = now_ns();

        if (write(a[0], &c, 1) != 1 || !wait_byte(b[1])) {
            return -1;
        }
        rtt[i] = now_ns() - t0;
    }
    close(a[0]);
    pthread_join(t, NULL);
    close(a[1]);
    close(b[0]);
    close(b[1]);
    return 0;
}

/* A busy-polling requester, two sleeping relays, a flag in memory. */
static int read_lat(uint64_t *rtt, int n)
{
    int a[2], b[2];
    pthread_t t1, t2;
    atomic_uint flag = 0;
    Relay responder, completer;
    char c = 0;

    if (socket_pair(a) || socket_pair(b)) {
        return -1;
    }
    responder = (Relay){ .in = a[1], .out = b[0] };
    completer = (Relay){ .in = b[1], .out = -1, .flag = &flag };
    pthread_create(&t1, NULL, relay, &responder);
    pthread_create(&t2, NULL, relay, &completer);
    for (int i = 0; i < n; i++) {
        unsigned seen = atomic_load_explicit(&flag, memory_order_acquire);
        uint64_t t0 = now_ns();

        if (write(a[0], &c, 1) != 1) {
            return -1;
        }
        while (atomic_load_explicit(&flag, memory_order_acquire) == seen) {
            /* busy-poll, as the guest polls its CQ */
        }
        rtt[i] = now_ns() - t0;
    }
    close(a[0]);
    pthread_join(t1, NULL);
    close(b[0]);
    pthread_join(t2, NULL);
    close(a[1]);
    close(b[1]);
    return 0;
}

int main(int argc, char **argv)
{
    int n = 20000;
    uint64_t *rtt;

    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--rounds=", 9) && atoi(argv[i] + 9) >= 10) {
            n = atoi(argv[i] + 9);
        } else {
            fprintf(stderr, "usage: %s [--rounds=N (>= 10)]\n", argv[0]);
            return 2;
        }
    }
    rtt = calloc(n, sizeof(*rtt));
    if (!rtt) {
        return 1;
    }
    if (ping_pong(rtt, n) < 0) {
        return 1;
    }
    report("ping-pong", rtt, n);
    if (read_lat(rtt, n) < 0) {
        return 1;
    }
    report("read-lat", rtt, n);
    free(rtt);
    return 0;
}
