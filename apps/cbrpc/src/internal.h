// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* Internal structures of the cbrpc library shared by its source files. */
#ifndef CBRPC_INTERNAL_H
#define CBRPC_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "cbrpc.h"
#include "wire.h"

#define CBRPC_EXPORT __attribute__((visibility("default")))

/* --- util.c ----------------------------------------------------------------- */

/* A map from nonzero 64-bit keys to pointers (open addressing). */
struct cbrpc_map {
	uint64_t *keys;
	void **vals;
	size_t cap;	/* a power of two, or 0 */
	size_t count;
};

int cbrpc_map_put(struct cbrpc_map *m, uint64_t key, void *val);
void *cbrpc_map_get(const struct cbrpc_map *m, uint64_t key);
void *cbrpc_map_del(struct cbrpc_map *m, uint64_t key);
void cbrpc_map_free(struct cbrpc_map *m);
/* Iterate: for (size_t i = 0; cbrpc_map_next(m, &i, &key, &val);) */
bool cbrpc_map_next(const struct cbrpc_map *m, size_t *pos, uint64_t *key, void **val);

/* A line on stderr when $CBRPC_DEBUG is set: why a connection failed. */
void cbrpc_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int64_t cbrpc_now_ms(void);
int64_t cbrpc_now_us(void);
/* When a spin of SPIN_US within a wait of MS ends (cbrpc_now_us() time). */
int64_t cbrpc_spin_end(int spin_us, int ms);
/* Milliseconds left until DEADLINE (-1: none), at least 0. */
int cbrpc_left_ms(int64_t deadline);
int64_t cbrpc_deadline(int timeout_ms);
/* poll() on fds, EINTR retried; returns poll()'s result. */
int cbrpc_poll_fds(int *fds, short *revents, int n, int timeout_ms);
int cbrpc_set_nonblock(int fd);
/* Resolve host/port with rdma_getaddrinfo. */
int cbrpc_getaddr(const char *host, const char *port, bool passive,
		  struct rdma_addrinfo **res);

/* --- ctx.c / heap.c ----------------------------------------------------------- */

struct cbrpc_block {
	struct cbrpc_block *prev, *next;	/* in the region, by address */
	struct cbrpc_region *region;
	uint64_t addr;
	uint64_t size;		/* bytes of the block */
	uint64_t length;	/* bytes asked for (used blocks) */
	uint64_t version;
	bool used;
};

struct cbrpc_region {
	struct cbrpc_region *next;	/* in the heap */
	struct cbrpc_heap *heap;
	uint32_t id;
	void *base;
	size_t length;
	struct ibv_mr *mr;
	struct cbrpc_block *blocks;	/* every block, by address */
};

struct cbrpc_heap {
	struct cbrpc_heap *next;	/* in the context */
	struct cbrpc_ctx *ctx;
	struct cbrpc_region *regions;
	size_t grow;
	bool private;		/* local only: never announced, no remote access */
};

struct cbrpc_ctx {
	struct ibv_context *verbs;
	struct ibv_context **devices;	/* rdma_get_devices() */
	struct ibv_pd *pd;
	struct ibv_device_attr dev_attr;
	uint64_t id;
	pthread_mutex_t lock;		/* everything below, heaps and blocks */
	uint64_t next_version;
	uint32_t next_region;
	struct cbrpc_heap *heaps;
	struct cbrpc_session *sessions;
	struct cbrpc_map objects;	/* block start address -> used block */
};

int cbrpc_heap_create_private(struct cbrpc_ctx *ctx, size_t size, struct cbrpc_heap **heap);
/* Allocate/free in a private heap: returns the block or NULL. Takes ctx->lock. */
struct cbrpc_block *cbrpc_heap_get(struct cbrpc_heap *heap, size_t length);
void cbrpc_heap_put(struct cbrpc_heap *heap, struct cbrpc_block *b);
/* ctx->lock held: the used block HANDLE names (start or inside), or NULL. */
struct cbrpc_block *cbrpc_find_block(struct cbrpc_ctx *ctx, const struct cbrpc_handle *h);
/* ctx->lock held: announce every public region to SESSION. */
int cbrpc_announce_all(struct cbrpc_ctx *ctx, struct cbrpc_session *s);

/* --- session.c / call.c (client side) ------------------------------------------ */

struct cbrpc_call {
	struct cbrpc_session *session;
	unsigned int slot;
	uint32_t id;
	bool done;
	bool abandoned;
	int err;			/* CBRPC_E* of the call itself (not the status) */
	unsigned int nhandles;
	struct cbrpc_handle handles[CBRPC_MAX_HANDLES];
	struct cbrpc_result result;
};

struct cbrpc_session {
	struct cbrpc_session *next;	/* in the context */
	struct cbrpc_ctx *ctx;
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;			/* depth receive, then depth send buffers */
	unsigned int depth;
	size_t max_inline;		/* request inline bytes */
	size_t send_size;		/* bytes of a send buffer: cbrpc_req_size() */
	int timeout_ms;
	pthread_mutex_t lock;		/* everything below */
	pthread_cond_t cond;
	bool progress_busy;		/* a thread is in poll() for the session */
	int dead;			/* 0, or why the session ended (CBRPC_E*) */
	uint32_t gen;
	struct cbrpc_call **slots;	/* depth entries; NULL: free */
	unsigned int outstanding;
	int keepalive_ms;		/* <= 0: no probes */
	int spin_us;			/* poll the CQ this long before poll() */
	uint64_t ka_addr;		/* the server's keepalive word */
	uint32_t ka_rkey;
	bool ka_inflight;		/* a probe READ is posted */
	int64_t last_alive;		/* last reply or probe answered (ms) */
};

/* session->lock held; send a message of LEN bytes already in the call's send
 * buffer. */
int cbrpc_session_send(struct cbrpc_session *s, struct cbrpc_call *c, size_t len);
uint8_t *cbrpc_session_sendbuf(struct cbrpc_session *s, unsigned int slot);
/* Take a slot for a new call (session->lock held). */
int cbrpc_slot_take(struct cbrpc_session *s, struct cbrpc_call *c);
/* Wait for C to complete (session->lock held on entry and exit). */
int cbrpc_session_wait(struct cbrpc_session *s, struct cbrpc_call *c, int64_t deadline);
/* Send a HEAP_ADD or HEAP_DEL of N regions and wait for its reply. */
int cbrpc_session_control(struct cbrpc_session *s, uint8_t type,
			  const struct cbrpc_wire_region *regions, unsigned int n,
			  int timeout_ms);
/* Close S's connection (no free): outstanding calls end with ERR. */
void cbrpc_session_kill(struct cbrpc_session *s, int err);
/* session->lock held */
void cbrpc_session_fail(struct cbrpc_session *s, int err);

/* --- server.c / deref.c --------------------------------------------------------- */

struct cbrpc_sregion {		/* a region the owner announced */
	uint64_t addr, length;
	uint32_t rkey, id;
	unsigned int inflight;	/* READs/WRITEs posted into it */
	bool withdrawn;
	bool ack_pending;	/* HEAP_DEL waits for inflight == 0 */
	uint32_t ack_call_id;
};

struct cbrpc_centry {		/* cached object (region, addr, length) */
	struct cbrpc_centry *next_same;	/* same addr, other region/length */
	struct cbrpc_centry *lru_prev, *lru_next;
	struct cbrpc_ssession *sess;
	uint32_t region;
	uint64_t addr, length, version;
	struct cbrpc_block *buf;	/* in the server's private cache heap, or NULL */
	uint8_t *valid;			/* bitmap of pulled granules */
	bool complete;			/* every granule pulled */
	unsigned int pins;
	bool doomed;			/* drop when unpinned */
};

#define CBRPC_GRANULE 256
#define CBRPC_MAX_REGIONS 4096	/* announced regions per server session */

enum cbrpc_sstate { SS_FREE, SS_CONNECTING, SS_ACTIVE, SS_DEAD };

struct cbrpc_ssession {
	struct cbrpc_server *srv;
	unsigned int slot;
	uint32_t gen;
	enum cbrpc_sstate state;
	unsigned int uses;		/* handler or wait using it: no teardown */
	struct rdma_cm_id *id;
	uint64_t owner;
	unsigned int depth;
	size_t recv_size;		/* bytes of a receive buffer: cbrpc_req_size() */
	size_t max_inline;		/* request inline bytes agreed at connect */
	struct ibv_mr *mr;
	uint8_t *buf;			/* depth receive, then 2 * depth send buffers */
	struct cbrpc_map regions;	/* id + 1 -> struct cbrpc_sregion */
	struct cbrpc_map cache;		/* addr -> struct cbrpc_centry list */
};

struct cbrpc_pending {
	unsigned int slot;
	uint32_t gen;
	bool ack;		/* a deferred control reply, not a request */
	unsigned int idx;	/* request: its receive buffer */
	uint32_t len;		/* request: its length */
	uint32_t call_id;	/* ack */
	int status;		/* ack */
};

struct cbrpc_req {
	struct cbrpc_server *srv;
	struct cbrpc_ssession *sess;
	uint32_t op;
	uint32_t call_id;
	unsigned int nhandles;
	struct cbrpc_handle handles[CBRPC_MAX_HANDLES];
	unsigned int recv_idx;		/* the receive buffer holding the request */
	size_t inline_len;
	const uint8_t *inline_data;	/* in that buffer */
	uint32_t written;
	size_t reply_len;
	uint8_t reply[CBRPC_INLINE_MAX];
	struct cbrpc_centry *pinned[64];
	unsigned int npinned;
	struct cbrpc_block *temps[16];	/* uncached reads of the request */
	unsigned int ntemps;
};

struct cbrpc_server {
	struct cbrpc_ctx *ctx;
	struct rdma_event_channel *ech;
	struct rdma_cm_id *listen;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	int wake[2];			/* pipe: cbrpc_server_stop() */
	uint64_t *ka_word;		/* what clients READ to see the machine lives */
	struct ibv_mr *ka_mr;
	volatile int stop;
	cbrpc_handler_fn handler;
	void *arg;
	unsigned int max_sessions, depth;
	size_t max_inline;
	int op_timeout_ms;
	int spin_us;				/* poll the CQ this long before poll() */
	size_t cache_bytes, cache_used;
	unsigned int cache_entries;		/* records, with data or not */
	struct cbrpc_heap *cache_heap;
	struct cbrpc_centry *lru_head, *lru_tail;	/* head: most recent */
	struct cbrpc_ssession *sessions;	/* max_sessions */
	struct cbrpc_pending *queue;		/* FIFO of requests */
	unsigned int q_head, q_len, q_cap;
	int64_t cm_polled_ms;			/* cbrpc_server_poll's last CM look */
	uint32_t op_seq;			/* RDMA ops of the current wait */
	unsigned int op_left;
	int op_err;
	struct cbrpc_server_stats stats;
	struct cbrpc_req req;
};

/* wr_id of server work requests */
#define WR_KIND_RECV 1u
#define WR_KIND_SEND 2u
#define WR_KIND_OP 3u
static inline uint64_t cbrpc_wr_id(unsigned int kind, unsigned int slot, uint32_t gen,
				   unsigned int idx)
{
	return ((uint64_t)gen << 32) | ((uint64_t)(slot & 0xfff) << 20) |
	       ((uint64_t)kind << 16) | (idx & 0xffff);
}

/* Handle what arrived (withdrawals, disconnections) without waiting. */
void cbrpc_server_poll(struct cbrpc_server *srv);
/* Progress until the current RDMA ops are done or DEADLINE passes. */
int cbrpc_server_wait_ops(struct cbrpc_server *srv, struct cbrpc_ssession *target,
			  int64_t deadline);
/* Make SESS dead (disconnect); torn down once unused. */
void cbrpc_ssession_fail(struct cbrpc_ssession *sess, int err);
struct cbrpc_ssession *cbrpc_server_find_owner(struct cbrpc_server *srv, uint64_t owner);
/* A region withdrawn while busy: acknowledge it once idle. */
void cbrpc_sregion_idle(struct cbrpc_ssession *sess, struct cbrpc_sregion *r);
int cbrpc_server_send_rep(struct cbrpc_ssession *sess, uint32_t call_id, int status,
			  uint32_t written, const void *data, size_t len);

/* deref.c: the cache */
void cbrpc_cache_seen(struct cbrpc_ssession *sess, const struct cbrpc_handle *h);
void cbrpc_cache_drop_region(struct cbrpc_ssession *sess, uint32_t region);
void cbrpc_cache_drop_session(struct cbrpc_ssession *sess);
void cbrpc_req_release(struct cbrpc_req *req);

static inline int cbrpc_err(int code) { return -code; }

#endif /* CBRPC_INTERNAL_H */
