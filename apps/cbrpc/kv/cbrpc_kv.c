// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * cbrpc-kv: a small key-value store over libcbrpc, and its command-line
 * client. A put passes the value by reference (the server pulls it from the
 * client's heap with RDMA READ); a get names an object of the client's heap
 * and the server writes the value into it (RDMA WRITE). Keys travel inline.
 *
 *   cbrpc-kv server [-d DEV] [-a ADDR] [-p PORT]
 *   cbrpc-kv [-d DEV] [-a ADDR] [-p PORT] put KEY VALUE
 *   cbrpc-kv [-d DEV] [-a ADDR] [-p PORT] put-file KEY FILE
 *   cbrpc-kv [-d DEV] [-a ADDR] [-p PORT] get KEY
 *   cbrpc-kv [-d DEV] [-a ADDR] [-p PORT] del KEY
 *   cbrpc-kv [-d DEV] [-a ADDR] [-p PORT] check N
 *   cbrpc-kv [-d DEV] [-a ADDR] [-p PORT] shutdown
 *
 * get prints the value to stdout; check puts N keys with values of 1 B to
 * 256 KiB, reads each back, compares, deletes half and checks they are gone;
 * shutdown makes the server exit.
 * Exit status: 0, 1 on a failed call (the reason on stderr), 3 if the key
 * does not exist.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbrpc.h"

enum { KV_PUT = 1, KV_GET, KV_DEL, KV_SHUTDOWN };
enum { KV_NOTFOUND = 1, KV_TOOSMALL = 2 };	/* application statuses */

#define MAX_KEY 255
#define MAX_VALUE (16u << 20)
#define BUCKETS 4096

/* ------------------------------------------------------------------ server */

struct item {
	struct item *next;
	char *key;
	size_t len;
	uint8_t *value;
};

static struct item *table[BUCKETS];
static struct cbrpc_server *server;

static unsigned int bucket(const char *key)
{
	unsigned int h = 2166136261u;

	for (; *key; key++)
		h = (h ^ (uint8_t)*key) * 16777619u;
	return h % BUCKETS;
}

static struct item **lookup(const char *key)
{
	struct item **p = &table[bucket(key)];

	while (*p && strcmp((*p)->key, key))
		p = &(*p)->next;
	return p;
}

/* The key of a request: its inline data, 1..MAX_KEY bytes, no NUL. */
static int req_key(struct cbrpc_req *req, char *key)
{
	size_t len;
	const char *in = cbrpc_req_inline(req, &len);

	if (!len || len > MAX_KEY || memchr(in, 0, len))
		return -CBRPC_EINVAL;
	memcpy(key, in, len);
	key[len] = 0;
	return 0;
}

static int kv_put(struct cbrpc_req *req, const char *key)
{
	struct cbrpc_handle h;
	struct item **p, *it;
	const void *data;
	uint8_t *copy;
	int ret;

	if (cbrpc_req_handle(req, 0, &h) || h.length > MAX_VALUE)
		return -CBRPC_EINVAL;
	ret = cbrpc_deref(req, &h, 0, h.length, &data);
	if (ret)
		return ret;
	copy = malloc(h.length);
	if (!copy)
		return -CBRPC_ENOMEM;
	memcpy(copy, data, h.length);
	p = lookup(key);
	if (!*p) {
		it = calloc(1, sizeof(*it));
		if (!it || !(it->key = strdup(key))) {
			free(it);
			free(copy);
			return -CBRPC_ENOMEM;
		}
		*p = it;
	}
	free((*p)->value);
	(*p)->value = copy;
	(*p)->len = h.length;
	return 0;
}

static int kv_get(struct cbrpc_req *req, const char *key)
{
	struct item *it = *lookup(key);
	struct cbrpc_handle h;
	uint64_t len;
	int ret;

	if (cbrpc_req_handle(req, 0, &h))
		return -CBRPC_EINVAL;
	if (!it)
		return KV_NOTFOUND;
	len = it->len;
	ret = cbrpc_reply_inline(req, &len, sizeof(len));
	if (ret)
		return ret;
	if (len > h.length)
		return KV_TOOSMALL;	/* the reply says how much is needed */
	return len ? cbrpc_write(req, &h, 0, it->value, len) : 0;
}

static int kv_handler(struct cbrpc_req *req, void *arg)
{
	char key[MAX_KEY + 1];
	struct item **p, *it;
	int ret = req_key(req, key);

	(void)arg;
	if (cbrpc_req_op(req) == KV_SHUTDOWN) {
		cbrpc_server_stop(server);
		return 0;
	}
	if (ret)
		return ret;
	switch (cbrpc_req_op(req)) {
	case KV_PUT:
		return kv_put(req, key);
	case KV_GET:
		return kv_get(req, key);
	case KV_DEL:
		p = lookup(key);
		if (!*p)
			return KV_NOTFOUND;
		it = *p;
		*p = it->next;
		free(it->key);
		free(it->value);
		free(it);
		return 0;
	default:
		return -CBRPC_ENOOP;
	}
}

static void on_term(int sig)
{
	(void)sig;
	cbrpc_server_stop(server);
}

static int serve(const char *dev, const char *addr, const char *port)
{
	struct cbrpc_ctx *ctx;
	int ret = cbrpc_ctx_create(dev, &ctx);

	if (!ret)
		ret = cbrpc_server_create(ctx, addr, port, NULL, kv_handler, NULL, &server);
	if (ret) {
		fprintf(stderr, "cbrpc-kv server: %s\n", cbrpc_strerror(ret));
		return 1;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	printf("cbrpc-kv: listening on port %d\n", cbrpc_server_port(server));
	fflush(stdout);
	ret = cbrpc_server_run(server, -1);
	cbrpc_server_destroy(server);
	cbrpc_ctx_destroy(ctx);
	return ret ? 1 : 0;
}

/* ------------------------------------------------------------------ client */

struct client {
	struct cbrpc_ctx *ctx;
	struct cbrpc_heap *heap;
	struct cbrpc_session *s;
	struct cbrpc_result res;
};

static int kv_call(struct client *c, uint32_t op, const char *key, struct cbrpc_handle *h)
{
	struct cbrpc_call_args a = { .op = op, .nhandles = h ? 1 : 0, .handles = h,
				     .inline_data = key, .inline_len = strlen(key) };
	int ret = cbrpc_call(c->s, &a, &c->res, 30000);

	return ret ? ret : c->res.status;
}

/* put: VALUE goes into the heap, the server pulls it */
static int put(struct client *c, const char *key, const void *value, size_t len)
{
	struct cbrpc_handle h;
	void *p;
	int ret = cbrpc_alloc(c->heap, len ? len : 1, CBRPC_H_READ, &h, &p);

	if (ret)
		return ret;
	memcpy(p, value, len);
	h.length = len ? len : 1;
	if (!len)	/* an empty value still needs an object: one byte, length 0 */
		ret = -CBRPC_EINVAL;
	else
		ret = kv_call(c, KV_PUT, key, &h);
	cbrpc_free(c->heap, &h);
	return ret;
}

/* get: the server writes the value into an object of ours; *VALUE is a copy */
static int get(struct client *c, const char *key, uint8_t **value, size_t *len)
{
	size_t size = 4096;

	for (int tries = 0; tries < 3; tries++) {
		struct cbrpc_handle h;
		uint64_t need = 0;
		void *p;
		int ret = cbrpc_alloc(c->heap, size, CBRPC_H_WRITE, &h, &p);

		if (ret)
			return ret;
		ret = kv_call(c, KV_GET, key, &h);
		if (c->res.inline_len == sizeof(need))
			memcpy(&need, c->res.inline_data, sizeof(need));
		if (ret == 0 && need <= size) {
			*value = malloc(need ? need : 1);
			if (*value)
				memcpy(*value, p, need);
			*len = need;
			cbrpc_free(c->heap, &h);
			return *value ? 0 : -CBRPC_ENOMEM;
		}
		cbrpc_free(c->heap, &h);
		if (ret != KV_TOOSMALL || need > MAX_VALUE)
			return ret ? ret : -CBRPC_EPROTO;
		size = need;
	}
	return -CBRPC_EPROTO;
}

static int report(const char *what, int ret)
{
	if (ret == KV_NOTFOUND) {
		fprintf(stderr, "cbrpc-kv: %s: no such key\n", what);
		return 3;
	}
	if (ret) {
		fprintf(stderr, "cbrpc-kv: %s: %s (%d)\n", what,
			ret < 0 ? cbrpc_strerror(ret) : "application status", ret);
		return 1;
	}
	return 0;
}

static int check(struct client *c, int n)
{
	size_t max = 256 * 1024;
	uint8_t *buf = malloc(max), *back;
	char key[32];
	size_t len;
	int ret, bad = 0;

	if (!buf)
		return report("check", -CBRPC_ENOMEM);
	for (int i = 0; i < n; i++) {
		len = i % 7 == 0 ? max - (size_t)i : (size_t)(i * 37 % 5000) + 1;
		for (size_t k = 0; k < len; k++)
			buf[k] = (uint8_t)(i * 31 + k * 7);
		snprintf(key, sizeof(key), "key-%d", i);
		ret = put(c, key, buf, len);
		if (ret)
			return report("check put", ret);
	}
	for (int i = 0; i < n; i++) {
		size_t want = i % 7 == 0 ? max - (size_t)i : (size_t)(i * 37 % 5000) + 1;

		snprintf(key, sizeof(key), "key-%d", i);
		ret = get(c, key, &back, &len);
		if (ret)
			return report("check get", ret);
		if (len != want)
			bad++;
		for (size_t k = 0; k < len && k < want; k++)
			if (back[k] != (uint8_t)(i * 31 + k * 7)) {
				bad++;
				break;
			}
		free(back);
	}
	for (int i = 0; i < n; i += 2) {
		snprintf(key, sizeof(key), "key-%d", i);
		ret = kv_call(c, KV_DEL, key, NULL);
		if (ret)
			return report("check del", ret);
	}
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		ret = get(c, key, &back, &len);
		if (i % 2 == 0 ? ret != KV_NOTFOUND : ret != 0)
			bad++;
		if (!ret)
			free(back);
	}
	free(buf);
	printf("kv-check: %d keys, %d mismatches\n", n, bad);
	return bad ? 1 : 0;
}

static int usage(const char *argv0)
{
	fprintf(stderr, "usage: %s server [-d DEV] [-a ADDR] [-p PORT]\n"
		"       %s [-d DEV] [-a ADDR] [-p PORT] put KEY VALUE | put-file KEY FILE |"
		" get KEY | del KEY | check N | shutdown\n", argv0, argv0);
	return 2;
}

static int read_file(const char *path, uint8_t **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 65536, n = 0, k;
	uint8_t *p = malloc(cap);

	if (!f || !p) {
		if (f)
			fclose(f);
		free(p);
		return -1;
	}
	while ((k = fread(p + n, 1, cap - n, f)) > 0) {
		n += k;
		if (n == cap) {
			uint8_t *q = cap * 2 <= MAX_VALUE ? realloc(p, cap * 2) : NULL;

			if (!q) {
				fclose(f);
				free(p);
				return -1;
			}
			p = q;
			cap *= 2;
		}
	}
	fclose(f);
	*data = p;
	*len = n;
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *addr = NULL, *port = "7480";
	struct client c = { 0 };
	bool is_server = false;
	int i = 1, ret;

	if (i < argc && !strcmp(argv[i], "server")) {
		is_server = true;
		i++;
	}
	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (!strcmp(argv[i], "-d"))
			dev = argv[i + 1];
		else if (!strcmp(argv[i], "-a"))
			addr = argv[i + 1];
		else if (!strcmp(argv[i], "-p"))
			port = argv[i + 1];
		else
			return usage(argv[0]);
	}
	if (is_server)
		return i == argc ? serve(dev, addr, port) : usage(argv[0]);
	if (i >= argc || !addr)
		return usage(argv[0]);
	ret = cbrpc_ctx_create(dev, &c.ctx);
	if (!ret)
		ret = cbrpc_heap_create(c.ctx, 1 << 20, 4 << 20, &c.heap);
	if (!ret)
		ret = cbrpc_connect(c.ctx, addr, port, NULL, &c.s);
	if (ret)
		return report("connect", ret);
	if (!strcmp(argv[i], "put") && argc - i == 3) {
		ret = report("put", put(&c, argv[i + 1], argv[i + 2], strlen(argv[i + 2])));
	} else if (!strcmp(argv[i], "put-file") && argc - i == 3) {
		uint8_t *data;
		size_t len;

		if (read_file(argv[i + 2], &data, &len)) {
			fprintf(stderr, "cbrpc-kv: cannot read %s\n", argv[i + 2]);
			ret = 1;
		} else {
			ret = report("put", put(&c, argv[i + 1], data, len));
			free(data);
		}
	} else if (!strcmp(argv[i], "get") && argc - i == 2) {
		uint8_t *value;
		size_t len;

		ret = report("get", get(&c, argv[i + 1], &value, &len));
		if (!ret) {
			fwrite(value, 1, len, stdout);
			free(value);
		}
	} else if (!strcmp(argv[i], "del") && argc - i == 2) {
		ret = report("del", kv_call(&c, KV_DEL, argv[i + 1], NULL));
	} else if (!strcmp(argv[i], "shutdown") && argc - i == 1) {
		ret = report("shutdown", kv_call(&c, KV_SHUTDOWN, "", NULL));
	} else if (!strcmp(argv[i], "check") && argc - i == 2) {
		ret = check(&c, atoi(argv[i + 1]));
	} else {
		ret = usage(argv[0]);
	}
	cbrpc_ctx_destroy(c.ctx);
	return ret;
}
