/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The lossy wire of the rnic qtests (see rnic-relay.h): one thread, two
 * unix datagram sockets, poll().
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include <sys/un.h>
#include <poll.h>
#include "rnic-roce.h"
#include "rnic-relay.h"

/* A frame held back for reordering goes out at the latest after this. */
#define RELAY_HOLD_MS   2

struct RnicRelay {
    int fd[2];                  /* fd[0] faces A, fd[1] faces B */
    char *path[2];              /* their addresses */
    struct sockaddr_un peer[2]; /* A's and B's own sockets */
    GThread *thread;
    GMutex lock;                /* faults, stats, blackhole */
    RnicRelayFaults faults[2];
    RnicRelayStats stats[2];
    bool blackhole[2];
    bool stop;
    GRand *rand;                /* relay thread only */
    /* frame held back per direction (reorder) */
    uint8_t held[2][65536];
    uint8_t rxbuf[2][65536];
    size_t held_len[2];
    gint64 held_since[2];
};

static int relay_socket(const char *path)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    struct timeval tv = { .tv_sec = 1 };
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

    g_assert(fd >= 0);
    g_assert(strlen(path) < sizeof(a.sun_path));
    strcpy(a.sun_path, path);
    unlink(path);
    g_assert(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    /* a receiver that stopped reading must not block the relay forever */
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    return fd;
}

/*
 * Send towards side 'to' (0: A, 1: B), from the socket facing it; false
 * when the frame could not be delivered (counted as failed: a loss).
 */
static bool relay_out(RnicRelay *r, int dir, const uint8_t *buf, size_t len)
{
    int to = dir == RNIC_RELAY_A_TO_B ? 1 : 0;
    ssize_t n;

    do {
        n = sendto(r->fd[to], buf, len, 0, (struct sockaddr *)&r->peer[to],
                   sizeof(r->peer[to]));
    } while (n < 0 && errno == EINTR);
    g_mutex_lock(&r->lock);
    if (n == (ssize_t)len) {
        r->stats[dir].forwarded++;
    } else {
        r->stats[dir].failed++;
    }
    g_mutex_unlock(&r->lock);
    return n == (ssize_t)len;
}

static void relay_flush_held(RnicRelay *r, int dir)
{
    if (r->held_len[dir]) {
        relay_out(r, dir, r->held[dir], r->held_len[dir]);
        r->held_len[dir] = 0;
    }
}

/*
 * Flip one bit the ICRC covers: the BTH from its P_Key on (not byte 4,
 * which the ICRC masks), the extension headers, payload, pad, ICRC.
 */
static bool relay_corrupt(RnicRelay *r, uint8_t *buf, size_t len)
{
    RnicRoceHdr h;
    uint32_t lo, off;

    if (rnic_roce_decode(buf, len, &h) != RNIC_ROCE_OK) {
        return false;
    }
    lo = h.bth_offset + 5;
    off = g_rand_int_range(r->rand, lo, h.frame_len);
    buf[off] ^= 1u << g_rand_int_range(r->rand, 0, 8);
    return true;
}

static void relay_frame(RnicRelay *r, int dir, uint8_t *buf, size_t len)
{
    RnicRelayFaults f;
    bool blackhole;
    double x;

    g_mutex_lock(&r->lock);
    f = r->faults[dir];
    blackhole = r->blackhole[dir];
    r->stats[dir].frames++;
    g_mutex_unlock(&r->lock);

    x = g_rand_double(r->rand);
    if (blackhole || x < f.drop) {
        g_mutex_lock(&r->lock);
        r->stats[dir].dropped++;
        g_mutex_unlock(&r->lock);
        return;
    }
    x -= f.drop;
    if (x < f.corrupt && relay_corrupt(r, buf, len)) {
        /* only a corrupted frame the receiver got can count against its ICRC */
        if (relay_out(r, dir, buf, len)) {
            g_mutex_lock(&r->lock);
            r->stats[dir].corrupted++;
            g_mutex_unlock(&r->lock);
        }
        relay_flush_held(r, dir);
        return;
    }
    x -= f.corrupt;
    if (x < f.dup) {
        g_mutex_lock(&r->lock);
        r->stats[dir].duplicated++;
        g_mutex_unlock(&r->lock);
        relay_out(r, dir, buf, len);
        relay_out(r, dir, buf, len);
        relay_flush_held(r, dir);
        return;
    }
    x -= f.dup;
    if (x < f.reorder && !r->held_len[dir]) {
        g_mutex_lock(&r->lock);
        r->stats[dir].reordered++;
        g_mutex_unlock(&r->lock);
        memcpy(r->held[dir], buf, len);
        r->held_len[dir] = len;
        r->held_since[dir] = g_get_monotonic_time();
        return;
    }
    relay_out(r, dir, buf, len);
    relay_flush_held(r, dir);   /* the held frame arrives after this one */
}

static gpointer relay_thread(gpointer opaque)
{
    RnicRelay *r = opaque;

    for (;;) {
        struct pollfd p[2] = {
            { .fd = r->fd[0], .events = POLLIN },
            { .fd = r->fd[1], .events = POLLIN },
        };
        int i, timeout = 50;

        g_mutex_lock(&r->lock);
        if (r->stop) {
            g_mutex_unlock(&r->lock);
            break;
        }
        g_mutex_unlock(&r->lock);
        for (i = 0; i < 2; i++) {
            if (r->held_len[i]) {
                gint64 age = (g_get_monotonic_time() - r->held_since[i]) / 1000;

                if (age >= RELAY_HOLD_MS) {
                    relay_flush_held(r, i);
                } else {
                    timeout = MIN(timeout, RELAY_HOLD_MS - (int)age);
                }
            }
        }
        if (poll(p, 2, timeout) <= 0) {
            continue;
        }
        for (i = 0; i < 2; i++) {
            ssize_t n;

            if (!(p[i].revents & POLLIN)) {
                continue;
            }
            n = recv(r->fd[i], r->rxbuf[i], sizeof(r->rxbuf[i]),
                     MSG_DONTWAIT);
            if (n > 0) {
                /* from A (fd 0): towards B; from B (fd 1): towards A */
                relay_frame(r, i == 0 ? RNIC_RELAY_A_TO_B : RNIC_RELAY_B_TO_A,
                            r->rxbuf[i], n);
            }
        }
    }
    return NULL;
}

RnicRelay *rnic_relay_new(const char *dir, const char *a_path,
                          const char *b_path, uint32_t seed)
{
    RnicRelay *r = g_new0(RnicRelay, 1);
    int i;

    g_mutex_init(&r->lock);
    r->rand = g_rand_new_with_seed(seed);
    for (i = 0; i < 2; i++) {
        const char *peer = i ? b_path : a_path;

        r->path[i] = g_strdup_printf("%s/relay-%c.sock", dir, 'a' + i);
        r->fd[i] = relay_socket(r->path[i]);
        r->peer[i].sun_family = AF_UNIX;
        g_assert(strlen(peer) < sizeof(r->peer[i].sun_path));
        strcpy(r->peer[i].sun_path, peer);
    }
    r->thread = g_thread_new("rnic-relay", relay_thread, r);
    return r;
}

const char *rnic_relay_path(RnicRelay *r, int side)
{
    return r->path[side];
}

void rnic_relay_set_faults(RnicRelay *r, int dir, const RnicRelayFaults *f)
{
    g_mutex_lock(&r->lock);
    r->faults[dir] = *f;
    g_mutex_unlock(&r->lock);
}

void rnic_relay_set_blackhole(RnicRelay *r, int dir, bool on)
{
    g_mutex_lock(&r->lock);
    r->blackhole[dir] = on;
    g_mutex_unlock(&r->lock);
}

void rnic_relay_get_stats(RnicRelay *r, int dir, RnicRelayStats *out)
{
    g_mutex_lock(&r->lock);
    *out = r->stats[dir];
    g_mutex_unlock(&r->lock);
}

void rnic_relay_free(RnicRelay *r)
{
    int i;

    g_mutex_lock(&r->lock);
    r->stop = true;
    g_mutex_unlock(&r->lock);
    g_thread_join(r->thread);
    for (i = 0; i < 2; i++) {
        close(r->fd[i]);
        unlink(r->path[i]);
        g_free(r->path[i]);
    }
    g_rand_free(r->rand);
    g_mutex_clear(&r->lock);
    g_free(r);
}

void rnic_relay_faults_from_env(const char *name, RnicRelayFaults *f)
{
    const char *v = g_getenv(name);
    g_auto(GStrv) parts = NULL;
    int i;

    if (!v) {
        return;
    }
    parts = g_strsplit(v, ",", 0);
    for (i = 0; parts[i]; i++) {
        g_auto(GStrv) kv = g_strsplit(parts[i], "=", 2);
        double x;

        if (!kv[0] || !kv[1]) {
            continue;
        }
        x = g_ascii_strtod(kv[1], NULL);
        if (!strcmp(kv[0], "drop")) {
            f->drop = x;
        } else if (!strcmp(kv[0], "dup")) {
            f->dup = x;
        } else if (!strcmp(kv[0], "reorder")) {
            f->reorder = x;
        } else if (!strcmp(kv[0], "corrupt")) {
            f->corrupt = x;
        }
    }
}
