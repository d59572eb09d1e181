/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the host's unix stream socket costs per Ethernet frame, with the
 * framing and the system calls of QEMU's '-netdev stream' (net/stream.c):
 * the sender writes each frame as { 4-byte big-endian length, frame } in
 * one sendmsg(); the receiver reads into a 68 KiB stack buffer (which QEMU,
 * built with -ftrivial-auto-var-init=zero, clears on every read) and walks
 * the frames in it. Two threads, one per end, as the two QEMU processes'
 * threads are. No RDMA and no guest: the ceiling of the frame rate two
 * QEMUs can reach over this netdev on this machine, and the CPU each end
 * spends per frame.
 *
 * Not a test: build with 'meson compile -C build/project', run
 * build/project/tests/bench/bench-stream-socket [--time=ms] [--frame=bytes]
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#define NET_BUFSIZE (4096 + 65536)      /* QEMU's net/net.h */

typedef struct End {
    int fd;
    size_t frame;
    atomic_bool *stop;
    uint64_t frames;
    uint64_t cpu_ns;
} End;

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void *sender(void *opaque)
{
    End *s = opaque;
    uint8_t *frame = calloc(1, s->frame);
    uint32_t len = htonl(s->frame);
    struct iovec iov[2] = {
        { &len, sizeof(len) }, { frame, s->frame },
    };
    uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

    while (!atomic_load_explicit(s->stop, memory_order_relaxed)) {
        /* blocking, as if QEMU's net queue always had room */
        if (writev(s->fd, iov, 2) != (ssize_t)(sizeof(len) + s->frame)) {
            break;
        }
        s->frames++;
    }
    s->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
    shutdown(s->fd, SHUT_WR);
    free(frame);
    return NULL;
}

static void *receiver(void *opaque)
{
    End *r = opaque;
    uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    size_t have = 0;                    /* bytes of the current record */
    size_t want = 4;
    uint32_t len = 0;

    for (;;) {
        uint8_t buf[NET_BUFSIZE];
        ssize_t n;
        size_t i = 0;

        memset(buf, 0, sizeof(buf));    /* what auto-var-init=zero does */
        n = read(r->fd, buf, sizeof(buf));
        if (n <= 0) {
            break;
        }
        while (i < (size_t)n) {
            size_t take = want - have < n - i ? want - have : n - i;

            if (want == 4) {
                memcpy((uint8_t *)&len + have, buf + i, take);
            }
            have += take;
            i += take;
            if (have < want) {
                continue;
            }
            if (want == 4) {
                want = 4 + ntohl(len);
            } else {
                r->frames++;
                want = 4;
                have = 0;
            }
        }
    }
    r->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned ms = 3000;
    size_t frame = 1024 + 82;           /* a RoCEv2 WRITE, path MTU 1024 */
    atomic_bool stop = false;
    End s = { 0 }, r = { 0 };
    pthread_t ts, tr;
    uint64_t t0, wall;
    int fds[2];

    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--time=", 7)) {
            ms = atoi(argv[i] + 7);
        } else if (!strncmp(argv[i], "--frame=", 8)) {
            frame = strtoul(argv[i] + 8, NULL, 0);
        } else {
            fprintf(stderr, "usage: %s [--time=ms] [--frame=bytes]\n",
                    argv[0]);
            return 2;
        }
    }
    if (frame < 60 || frame > 65535) {
        fprintf(stderr, "--frame: 60 to 65535 bytes\n");
        return 2;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds)) {
        perror("socketpair");
        return 1;
    }
    s.fd = fds[0];
    r.fd = fds[1];
    s.frame = frame;
    s.stop = &stop;
    t0 = clock_ns(CLOCK_MONOTONIC);
    pthread_create(&tr, NULL, receiver, &r);
    pthread_create(&ts, NULL, sender, &s);
    usleep(ms * 1000);
    atomic_store(&stop, true);
    pthread_join(ts, NULL);
    pthread_join(tr, NULL);
    wall = clock_ns(CLOCK_MONOTONIC) - t0;
    printf("frame %zu B: %.0f k frames/s, %.1f MiB/s of frames; "
           "sender %.2f us CPU per frame (%.0f %% of a core), "
           "receiver %.2f us per frame (%.0f %%)\n",
           frame, r.frames * 1e6 / wall,
           r.frames * (double)frame * 1e9 / wall / (1 << 20),
           s.cpu_ns / 1e3 / (s.frames ? s.frames : 1), s.cpu_ns * 100.0 / wall,
           r.cpu_ns / 1e3 / (r.frames ? r.frames : 1), r.cpu_ns * 100.0 / wall);
    return s.frames == r.frames ? 0 : 1;
}
