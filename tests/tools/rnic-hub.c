// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * rnic-hub: a learning Ethernet switch for QEMU's "-netdev stream" clients.
 *
 * Several QEMUs connect to one unix stream socket as
 *   -netdev stream,id=n0,server=off,addr.type=unix,addr.path=SOCK
 * and form one Ethernet segment. Unlike a point-to-point stream or dgram
 * netdev, a migration destination (A') can join the segment next to its
 * source (A): the switch learns source MACs per port, forwards known
 * unicast to its port, floods broadcast, multicast and unknown unicast, and
 * moves a MAC to another port as soon as a frame from it arrives there
 * (the RARP / gratuitous frames a NIC announces after the switchover).
 *
 * QEMU's stream framing: a 4-byte big-endian length, then the frame.
 *
 * A port whose QEMU does not read (a stopped VM) gets its frames queued up
 * to a limit, then dropped, as a switch port with a full queue does; a
 * disconnected port forgets its MACs (for forwarding: a MAC that shows up
 * again on another port is logged as moved, with its silence).
 *
 * Usage: rnic-hub [-v] [-q BYTES] SOCKET
 *   -v        log every learned / moved MAC (stderr)
 *   -q BYTES  per-port output queue limit (default 8 MiB)
 * Logs port connects and disconnects and MAC moves (with the time since
 * the MAC's last frame on its old port) on stderr with a CLOCK_MONOTONIC
 * timestamp in seconds; on SIGUSR1 or SIGTERM prints per-port statistics
 * ("hub: port N frames-in=.. frames-out=.. dropped=.."), SIGTERM then exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#define MAX_PORTS   32
#define MAX_MACS    256
#define MAX_FRAME   (64 * 1024 + 64)
#define IN_BUF      (256 * 1024)

struct port {
    int fd;                     /* -1: free */
    unsigned id;                /* connection number, for the log */
    uint8_t in[IN_BUF];
    size_t in_len;
    uint8_t *out;
    size_t out_len, out_cap;
    uint64_t frames_in, frames_out, dropped;
};

struct mac_entry {
    uint8_t mac[6];
    int port;                   /* -1: free; -2: its port is gone */
    double last;                /* when a frame from it last came in */
};

static struct port ports[MAX_PORTS];
static struct mac_entry macs[MAX_MACS];
static size_t queue_limit = 8 << 20;
static bool verbose;
static volatile sig_atomic_t want_stats, want_exit;
static unsigned next_id;
static uint64_t flooded, unknown_dropped;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

#define LOG(...)                                                  \
    do {                                                          \
        fprintf(stderr, "hub: %.6f ", now_s());                   \
        fprintf(stderr, __VA_ARGS__);                             \
        fputc('\n', stderr);                                      \
    } while (0)

static const char *mac_str(const uint8_t *m)
{
    static char s[18];

    snprintf(s, sizeof(s), "%02x:%02x:%02x:%02x:%02x:%02x",
             m[0], m[1], m[2], m[3], m[4], m[5]);
    return s;
}

static void print_stats(void)
{
    for (int i = 0; i < MAX_PORTS; i++) {
        if (ports[i].fd < 0) {
            continue;
        }
        LOG("port %u frames-in=%llu frames-out=%llu dropped=%llu queued=%zu",
            ports[i].id, (unsigned long long)ports[i].frames_in,
            (unsigned long long)ports[i].frames_out,
            (unsigned long long)ports[i].dropped, ports[i].out_len);
    }
    LOG("flooded=%llu", (unsigned long long)flooded);
}

static int mac_lookup(const uint8_t *mac)
{
    for (int i = 0; i < MAX_MACS; i++) {
        if (macs[i].port >= 0 && !memcmp(macs[i].mac, mac, 6)) {
            return i;
        }
    }
    return -1;
}

static void mac_learn(const uint8_t *mac, int port)
{
    double now = now_s();
    int i;

    if (mac[0] & 1) {
        return;                 /* a multicast source is bogus: ignore */
    }
    for (i = 0; i < MAX_MACS; i++) {
        if (macs[i].port == -1 || memcmp(macs[i].mac, mac, 6)) {
            continue;
        }
        if (macs[i].port != port) {
            /* silence: its last frame on the old port to this one */
            char old[16] = "gone";

            if (macs[i].port >= 0) {
                snprintf(old, sizeof(old), "%u", ports[macs[i].port].id);
            }
            LOG("mac %s moved port %s -> %u after %.1f ms of silence",
                mac_str(mac), old, ports[port].id, (now - macs[i].last) * 1e3);
            macs[i].port = port;
        }
        macs[i].last = now;
        return;
    }
    for (i = 0; i < MAX_MACS; i++) {
        if (macs[i].port == -1) {
            memcpy(macs[i].mac, mac, 6);
            macs[i].port = port;
            macs[i].last = now;
            if (verbose) {
                LOG("mac %s learned on port %u", mac_str(mac), ports[port].id);
            }
            return;
        }
    }
}

static void port_close(int p)
{
    LOG("port %u disconnected (frames-in=%llu frames-out=%llu dropped=%llu)",
        ports[p].id, (unsigned long long)ports[p].frames_in,
        (unsigned long long)ports[p].frames_out,
        (unsigned long long)ports[p].dropped);
    close(ports[p].fd);
    ports[p].fd = -1;
    free(ports[p].out);
    ports[p].out = NULL;
    ports[p].out_len = ports[p].out_cap = 0;
    ports[p].in_len = 0;
    for (int i = 0; i < MAX_MACS; i++) {
        if (macs[i].port == p) {
            macs[i].port = -2;  /* not forwarded to; remembered for the log */
        }
    }
}

/* Queue one frame (with its length header) for port p, or drop it. */
static void port_queue(int p, const uint8_t *frame, uint32_t len)
{
    struct port *o = &ports[p];
    size_t need = o->out_len + 4 + len;

    if (need > queue_limit) {
        o->dropped++;
        return;
    }
    if (need > o->out_cap) {
        size_t cap = o->out_cap ? o->out_cap : 65536;
        uint8_t *n;

        while (cap < need) {
            cap *= 2;
        }
        n = realloc(o->out, cap);
        if (!n) {
            o->dropped++;
            return;
        }
        o->out = n;
        o->out_cap = cap;
    }
    o->out[o->out_len++] = len >> 24;
    o->out[o->out_len++] = len >> 16;
    o->out[o->out_len++] = len >> 8;
    o->out[o->out_len++] = len;
    memcpy(o->out + o->out_len, frame, len);
    o->out_len += len;
    o->frames_out++;
}

static void forward(int from, const uint8_t *frame, uint32_t len)
{
    int entry;

    ports[from].frames_in++;
    if (len < 14) {
        ports[from].dropped++;
        return;
    }
    mac_learn(frame + 6, from);
    entry = (frame[0] & 1) ? -1 : mac_lookup(frame);
    if (entry >= 0) {
        if (macs[entry].port != from) {
            port_queue(macs[entry].port, frame, len);
        } else {
            unknown_dropped++;  /* destination on the port it came from */
        }
        return;
    }
    flooded++;
    for (int p = 0; p < MAX_PORTS; p++) {
        if (p != from && ports[p].fd >= 0) {
            port_queue(p, frame, len);
        }
    }
}

/* Read what port p sent and forward every complete frame. */
static bool port_read(int p)
{
    struct port *s = &ports[p];
    ssize_t n = read(s->fd, s->in + s->in_len, sizeof(s->in) - s->in_len);
    size_t off = 0;

    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return true;
    }
    if (n <= 0) {
        return false;
    }
    s->in_len += n;
    while (s->in_len - off >= 4) {
        uint32_t len = (uint32_t)s->in[off] << 24 | s->in[off + 1] << 16 |
                       s->in[off + 2] << 8 | s->in[off + 3];

        if (len > MAX_FRAME) {
            LOG("port %u: frame length %u, disconnecting", s->id, len);
            return false;
        }
        if (s->in_len - off < 4 + len) {
            break;
        }
        forward(p, s->in + off + 4, len);
        off += 4 + len;
    }
    memmove(s->in, s->in + off, s->in_len - off);
    s->in_len -= off;
    return true;
}

static bool port_write(int p)
{
    struct port *o = &ports[p];
    ssize_t n = write(o->fd, o->out, o->out_len);

    if (n < 0) {
        return errno == EINTR || errno == EAGAIN;
    }
    memmove(o->out, o->out + n, o->out_len - n);
    o->out_len -= n;
    return true;
}

static void on_signal(int sig)
{
    if (sig == SIGUSR1) {
        want_stats = 1;
    } else {
        want_exit = 1;
    }
}

int main(int argc, char **argv)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    struct sigaction sa = { .sa_handler = on_signal };
    int opt, lfd;

    while ((opt = getopt(argc, argv, "vq:")) != -1) {
        switch (opt) {
        case 'v':
            verbose = true;
            break;
        case 'q':
            queue_limit = strtoull(optarg, NULL, 0);
            break;
        default:
            fprintf(stderr, "usage: %s [-v] [-q BYTES] SOCKET\n", argv[0]);
            return 2;
        }
    }
    if (optind != argc - 1 || strlen(argv[optind]) >= sizeof(addr.sun_path)) {
        fprintf(stderr, "usage: %s [-v] [-q BYTES] SOCKET\n", argv[0]);
        return 2;
    }
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < MAX_PORTS; i++) {
        ports[i].fd = -1;
    }
    for (int i = 0; i < MAX_MACS; i++) {
        macs[i].port = -1;
    }

    strcpy(addr.sun_path, argv[optind]);
    unlink(addr.sun_path);
    lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
        listen(lfd, 16) < 0) {
        perror("rnic-hub: socket");
        return 1;
    }
    LOG("listening on %s", addr.sun_path);

    while (!want_exit) {
        struct pollfd pfd[MAX_PORTS + 1];
        int map[MAX_PORTS + 1], n = 0;

        if (want_stats) {
            want_stats = 0;
            print_stats();
        }
        pfd[n].fd = lfd;
        pfd[n].events = POLLIN;
        map[n++] = -1;
        for (int p = 0; p < MAX_PORTS; p++) {
            if (ports[p].fd >= 0) {
                pfd[n].fd = ports[p].fd;
                pfd[n].events = POLLIN | (ports[p].out_len ? POLLOUT : 0);
                map[n++] = p;
            }
        }
        if (poll(pfd, n, 1000) < 0) {
            if (errno == EINTR) {
                continue;
            }
            perror("rnic-hub: poll");
            return 1;
        }
        if (pfd[0].revents & POLLIN) {
            int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            int p;

            for (p = 0; fd >= 0 && p < MAX_PORTS && ports[p].fd >= 0; p++) {
                /* find a free port */
            }
            if (fd >= 0 && p == MAX_PORTS) {
                LOG("no free port, refusing a connection");
                close(fd);
            } else if (fd >= 0) {
                memset(&ports[p], 0, offsetof(struct port, in));
                ports[p].fd = fd;
                ports[p].id = next_id++;
                ports[p].in_len = ports[p].out_len = ports[p].out_cap = 0;
                ports[p].out = NULL;
                ports[p].frames_in = ports[p].frames_out = ports[p].dropped = 0;
                LOG("port %u connected", ports[p].id);
            }
        }
        for (int i = 1; i < n; i++) {
            int p = map[i];

            if (ports[p].fd < 0) {
                continue;
            }
            if ((pfd[i].revents & POLLOUT) && !port_write(p)) {
                port_close(p);
                continue;
            }
            if ((pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) && !port_read(p)) {
                port_close(p);
            }
        }
    }
    print_stats();
    unlink(addr.sun_path);
    return 0;
}
