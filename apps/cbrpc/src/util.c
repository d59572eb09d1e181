// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Small helpers: a 64-bit key map, time, poll, error names, addresses. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static size_t map_slot(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return key & (cap - 1);
}

static int map_grow(struct cbrpc_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 16;
	uint64_t *keys = calloc(cap, sizeof(*keys));
	void **vals = calloc(cap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return cbrpc_err(CBRPC_ENOMEM);
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = map_slot(m->keys[i], cap);

		while (keys[j])
			j = (j + 1) & (cap - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

int cbrpc_map_put(struct cbrpc_map *m, uint64_t key, void *val)
{
	if (!key)
		return cbrpc_err(CBRPC_EINVAL);
	if ((m->count + 1) * 4 > m->cap * 3) {
		int ret = map_grow(m);

		if (ret)
			return ret;
	}
	size_t i = map_slot(key, m->cap);

	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	if (!m->keys[i])
		m->count++;
	m->keys[i] = key;
	m->vals[i] = val;
	return 0;
}

void *cbrpc_map_get(const struct cbrpc_map *m, uint64_t key)
{
	if (!m->cap || !key)
		return NULL;
	for (size_t i = map_slot(key, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return m->vals[i];
	return NULL;
}

void *cbrpc_map_del(struct cbrpc_map *m, uint64_t key)
{
	size_t i, j;
	void *val;

	if (!m->cap || !key)
		return NULL;
	for (i = map_slot(key, m->cap); m->keys[i] != key; i = (i + 1) & (m->cap - 1))
		if (!m->keys[i])
			return NULL;
	val = m->vals[i];
	m->keys[i] = 0;
	m->count--;
	/* backward-shift deletion keeps probe chains whole without tombstones */
	for (j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
		size_t home = map_slot(m->keys[j], m->cap);

		if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			m->keys[j] = 0;
			i = j;
		}
	}
	return val;
}

bool cbrpc_map_next(const struct cbrpc_map *m, size_t *pos, uint64_t *key, void **val)
{
	for (; *pos < m->cap; (*pos)++) {
		if (m->keys[*pos]) {
			*key = m->keys[*pos];
			*val = m->vals[*pos];
			(*pos)++;
			return true;
		}
	}
	return false;
}

void cbrpc_map_free(struct cbrpc_map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

void cbrpc_debug(const char *fmt, ...)
{
	static int on = -1;
	va_list ap;

	if (on < 0)
		on = getenv("CBRPC_DEBUG") != NULL;
	if (!on)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "cbrpc[%d]: ", (int)getpid());
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int64_t cbrpc_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t cbrpc_now_ms(void)
{
	return cbrpc_now_us() / 1000;
}

int64_t cbrpc_spin_end(int spin_us, int ms)
{
	int64_t bound = (int64_t)ms * 1000;

	return cbrpc_now_us() + (spin_us < bound ? spin_us : bound);
}

int64_t cbrpc_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : cbrpc_now_ms() + timeout_ms;
}

int cbrpc_left_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - cbrpc_now_ms();
	return left < 0 ? 0 : (left > 1000000 ? 1000000 : (int)left);
}

int cbrpc_poll_fds(int *fds, short *revents, int n, int timeout_ms)
{
	struct pollfd p[4];
	int ret;

	for (int i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	do
		ret = poll(p, n, timeout_ms);
	while (ret < 0 && errno == EINTR);
	for (int i = 0; i < n; i++)
		revents[i] = ret > 0 ? p[i].revents : 0;
	return ret;
}

int cbrpc_set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return cbrpc_err(CBRPC_EDEVICE);
	return 0;
}

int cbrpc_getaddr(const char *host, const char *port, bool passive,
		  struct rdma_addrinfo **res)
{
	struct rdma_addrinfo hints = {
		.ai_flags = passive ? RAI_PASSIVE : 0,
		.ai_port_space = RDMA_PS_TCP,
	};

	if (!port || (!host && !passive))
		return cbrpc_err(CBRPC_EINVAL);
	if (rdma_getaddrinfo(host, port, &hints, res))
		return cbrpc_err(CBRPC_EINVAL);
	return 0;
}

CBRPC_EXPORT const char *cbrpc_strerror(int err)
{
	static const char *const names[] = {
		[CBRPC_OK] = "success",
		[CBRPC_EINVAL] = "CBRPC_EINVAL: invalid argument",
		[CBRPC_ENOMEM] = "CBRPC_ENOMEM: out of memory",
		[CBRPC_EDEVICE] = "CBRPC_EDEVICE: a verbs or RDMA-CM call failed",
		[CBRPC_ECONNREFUSED] = "CBRPC_ECONNREFUSED: connection refused or unreachable",
		[CBRPC_EDISCONNECTED] = "CBRPC_EDISCONNECTED: the peer disconnected",
		[CBRPC_ETIMEDOUT] = "CBRPC_ETIMEDOUT: timed out",
		[CBRPC_EBUSY] = "CBRPC_EBUSY: busy",
		[CBRPC_EBOUNDS] = "CBRPC_EBOUNDS: handle outside its heap region",
		[CBRPC_ERANGE] = "CBRPC_ERANGE: range outside the handle",
		[CBRPC_ESTALE] = "CBRPC_ESTALE: stale handle version",
		[CBRPC_EPERM] = "CBRPC_EPERM: access not granted by the handle",
		[CBRPC_ENOHEAP] = "CBRPC_ENOHEAP: heap region unknown or withdrawn",
		[CBRPC_ENOGRANT] = "CBRPC_ENOGRANT: the handle's owner has no session here",
		[CBRPC_EPROTO] = "CBRPC_EPROTO: malformed message",
		[CBRPC_EREMOTE] = "CBRPC_EREMOTE: remote access error",
		[CBRPC_ECANCELED] = "CBRPC_ECANCELED: canceled",
		[CBRPC_E2BIG] = "CBRPC_E2BIG: too many handles or too much data",
		[CBRPC_ENOOP] = "CBRPC_ENOOP: no such operation",
	};
	int code = err < 0 ? -err : err;

	if (err > 0)
		return "application status";
	if ((size_t)code < sizeof(names) / sizeof(names[0]) && names[code])
		return names[code];
	return "unknown cbrpc error";
}
