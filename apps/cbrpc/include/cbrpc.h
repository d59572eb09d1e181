// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * cbrpc — remote procedure calls with call-by-reference semantics over RDMA.
 *
 * MODEL
 *   A client context (struct cbrpc_ctx) owns one protection domain on one
 *   RDMA device and any number of session heaps: memory registered for
 *   remote access, with an allocator over it. An object allocated in a heap
 *   is named by a handle (struct cbrpc_handle): the owner's context id, the
 *   registered address and length, the rkey, and a version. A call passes
 *   handles, not data; the server pulls the ranges it needs with RDMA READ,
 *   on demand, and writes results straight into the client's heap with RDMA
 *   WRITE. Pulled data is cached per session by (handle, version): an object
 *   that did not change since the server last read it is not transferred
 *   again. The client says "changed" with cbrpc_mark_changed(), which gives
 *   the object a new version. A server may forward a handle it received to
 *   another server (a chained call); that server reads the client's memory
 *   directly, over its own session with the client.
 *
 *   Small arguments travel inline, by value, in the request and the reply
 *   (up to CBRPC_INLINE_MAX bytes each).
 *
 * THREAD MODEL
 *   Client side: caller-driven progress. There is no library thread. A
 *   thread waiting in cbrpc_call_wait() (or cbrpc_call()) polls the
 *   session's completion queue and connection events; completions of other
 *   threads' calls found on the way are recorded for them. Every client
 *   function (context, heap, session, call) may be called from any thread;
 *   sessions and heaps are protected by their own locks. Several calls may
 *   be outstanding per session (up to the session's depth).
 *
 *   Server side: one thread per server. The thread that calls
 *   cbrpc_server_run() accepts connections, receives requests of all the
 *   server's sessions, and runs the handler for one request at a time, in
 *   arrival order. Inside the handler, cbrpc_deref() and cbrpc_write()
 *   block that thread until their RDMA operations complete (bounded by
 *   the server's op timeout); requests arriving meanwhile are queued, heap
 *   announcements and withdrawals and disconnections are handled at once.
 *   A handler may itself be a client of another server (chained calls),
 *   through a session of the server's context or of another; the server's
 *   other sessions wait meanwhile. cbrpc_server_stop() is the only server
 *   function that may be called from another thread (or a signal handler).
 *
 * ERRORS
 *   Every function returning int returns 0 (or a non-negative count) on
 *   success and a negative CBRPC_E* code on failure; cbrpc_strerror() names
 *   it. A remote handler's status travels back to the caller unchanged:
 *   handlers return 0, a positive application status, or a negative
 *   CBRPC_E* code (typically the one cbrpc_deref() gave them).
 *
 * BOUNDS
 *   The server never issues a READ or WRITE outside what a handle grants:
 *   the handle must lie inside a heap region the owner announced to that
 *   server over the session (base, length and rkey as the owner registered
 *   them), the range must lie inside the handle, and the handle's access
 *   flags must allow the operation. These checks are made before anything
 *   is posted. They are the library's: a peer that holds a region's rkey
 *   and speaks verbs itself can reach the whole region (docs/cbrpc.md,
 *   "Trust model").
 */
#ifndef CBRPC_H
#define CBRPC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes (returned negated, e.g. -CBRPC_ETIMEDOUT). */
enum cbrpc_error {
	CBRPC_OK = 0,
	CBRPC_EINVAL = 1,	/* bad argument */
	CBRPC_ENOMEM = 2,	/* out of memory (host or heap) */
	CBRPC_EDEVICE = 3,	/* a verbs or RDMA-CM call failed locally */
	CBRPC_ECONNREFUSED = 4,	/* the server rejected or is unreachable */
	CBRPC_EDISCONNECTED = 5,/* the peer disconnected or died */
	CBRPC_ETIMEDOUT = 6,	/* a bounded wait ran out */
	CBRPC_EBUSY = 7,	/* no free call slot / object still in use */
	CBRPC_EBOUNDS = 8,	/* handle outside its heap region */
	CBRPC_ERANGE = 9,	/* range outside the handle */
	CBRPC_ESTALE = 10,	/* handle version older than the object's */
	CBRPC_EPERM = 11,	/* access flags forbid it (read/write/forward) */
	CBRPC_ENOHEAP = 12,	/* heap region unknown or withdrawn */
	CBRPC_ENOGRANT = 13,	/* forwarded handle: its owner has no session here */
	CBRPC_EPROTO = 14,	/* malformed message from the peer */
	CBRPC_EREMOTE = 15,	/* remote access error: the session is dead */
	CBRPC_ECANCELED = 16,	/* the call was canceled (session closed) */
	CBRPC_E2BIG = 17,	/* too many handles or too much inline data */
	CBRPC_ENOOP = 18,	/* the server has no such operation */
};

/* Limits of one call. */
#define CBRPC_MAX_HANDLES 16	/* handles per call */
#define CBRPC_INLINE_MAX 2048	/* inline bytes per reply, and per request by default */
#define CBRPC_VALUE_MAX (16u << 20)	/* largest max_inline of a session */
#define CBRPC_SPIN_US 0		/* spin_us's default: sleep at once (docs/cbrpc.md) */

/* Handle access flags, chosen by the object's owner. */
#define CBRPC_H_READ	0x1u	/* a server may read (cbrpc_deref) */
#define CBRPC_H_WRITE	0x2u	/* a server may write (cbrpc_write) */
#define CBRPC_H_FORWARD	0x4u	/* a server may forward it to another server */

/*
 * A handle: what a call passes instead of the data. A plain value; copy it
 * freely. Fields are read-only for users: the library checks them against
 * the owner's announced heap regions, so a forged handle gains nothing.
 */
struct cbrpc_handle {
	uint64_t owner;		/* id of the owning context */
	uint64_t addr;		/* registered address of the first byte */
	uint64_t length;	/* bytes */
	uint64_t version;	/* changes with every cbrpc_mark_changed() */
	uint32_t rkey;		/* of the heap region holding it */
	uint32_t region;	/* id of that region in the owner's context */
	uint32_t flags;		/* CBRPC_H_* */
	uint32_t reserved;	/* 0 */
};

struct cbrpc_ctx;
struct cbrpc_heap;
struct cbrpc_session;
struct cbrpc_call;
struct cbrpc_server;
struct cbrpc_req;

/*
 * const char *cbrpc_strerror(int err);
 *   The name and meaning of ERR: 0, a negative CBRPC_E* code, or a positive
 *   application status (the string "application status"). Thread-safe; the
 *   string is static.
 */
const char *cbrpc_strerror(int err);

/* ------------------------------------------------------------------ context */

/*
 * int cbrpc_ctx_create(const char *device, struct cbrpc_ctx **ctx);
 *   Open a context on the RDMA device named DEVICE (e.g. "rnic0", "rxe0"),
 *   or on the first device RDMA-CM lists when DEVICE is NULL: a protection
 *   domain and a fresh random context id (the owner field of its handles).
 *   Sessions of this context must reach their peers through that device.
 *   Errors: CBRPC_EINVAL (no such device), CBRPC_EDEVICE, CBRPC_ENOMEM.
 *   Thread-safe.
 *
 * void cbrpc_ctx_destroy(struct cbrpc_ctx *ctx);
 *   Close every session and heap of CTX (sessions first, so no peer can
 *   reach the heaps afterwards), then the context. Servers created on CTX
 *   must have been destroyed before. NULL is ignored. No other thread may
 *   use CTX or its objects during or after the call.
 *
 * uint64_t cbrpc_ctx_id(const struct cbrpc_ctx *ctx);
 *   The context id. Thread-safe.
 */
int cbrpc_ctx_create(const char *device, struct cbrpc_ctx **ctx);
void cbrpc_ctx_destroy(struct cbrpc_ctx *ctx);
uint64_t cbrpc_ctx_id(const struct cbrpc_ctx *ctx);

/* -------------------------------------------------------------------- heaps */

/*
 * int cbrpc_heap_create(struct cbrpc_ctx *ctx, size_t size, size_t grow,
 *                       struct cbrpc_heap **heap);
 *   Create a session heap: SIZE bytes (rounded up to the page size)
 *   registered for local write and remote read and write. When an
 *   allocation does not fit, the heap grows by registering another region
 *   of max(GROW, the allocation) bytes; GROW 0 means "never grow". Every
 *   region is announced to every session of the context (existing and
 *   future) before it is used; a server refuses handles into regions it was
 *   not told about.
 *   Errors: CBRPC_EINVAL, CBRPC_ENOMEM, CBRPC_EDEVICE (registration failed),
 *   CBRPC_ETIMEDOUT / CBRPC_EDISCONNECTED (a session did not acknowledge
 *   the announcement; that session is closed, the heap is created).
 *   Thread-safe.
 *
 * int cbrpc_heap_destroy(struct cbrpc_heap *heap, int timeout_ms);
 *   Withdraw every region of HEAP from every session, then deregister and
 *   free it. A server acknowledges a withdrawal only once none of its
 *   READs or WRITEs into the region is in flight, and refuses the region's
 *   handles afterwards (calls still using them get CBRPC_ENOHEAP). A
 *   session that does not acknowledge within TIMEOUT_MS (negative: the
 *   session's own timeout) is disconnected before the memory is deregistered, so no
 *   peer ever reads freed memory. Handles into HEAP are invalid afterwards.
 *   Returns 0, or CBRPC_ETIMEDOUT / CBRPC_EDISCONNECTED if some session had
 *   to be closed (the heap is destroyed in every case). Thread-safe, but no
 *   thread may use HEAP or its memory during or after the call.
 *
 * int cbrpc_alloc(struct cbrpc_heap *heap, size_t length, uint32_t flags,
 *                 struct cbrpc_handle *handle, void **ptr);
 *   Allocate LENGTH bytes (> 0) in HEAP, growing it if needed; fill HANDLE
 *   (access FLAGS, CBRPC_H_*, at least one of READ and WRITE) and *PTR (the
 *   local address, 64-byte aligned; the memory is zeroed). The object gets
 *   a new version. Growth announces the new region to every session and
 *   waits for their acknowledgements (bounded by each session's timeout).
 *   Errors: CBRPC_EINVAL, CBRPC_ENOMEM (does not fit and cannot grow),
 *   CBRPC_EDEVICE (registration failed). A session that does not
 *   acknowledge a new region is closed; the allocation still succeeds.
 *   Thread-safe.
 *
 * int cbrpc_free(struct cbrpc_heap *heap, const struct cbrpc_handle *handle);
 *   Return the object to HEAP. The memory may be reused at once, with a
 *   higher version, so a server's cache never confuses the two.
 *   Errors: CBRPC_EINVAL (not an object of HEAP). Thread-safe.
 *
 * void *cbrpc_handle_ptr(struct cbrpc_heap *heap,
 *                        const struct cbrpc_handle *handle);
 *   The local address of HANDLE's first byte, or NULL if HANDLE does not
 *   lie in HEAP. Thread-safe.
 *
 * int cbrpc_mark_changed(struct cbrpc_heap *heap, struct cbrpc_handle *handle);
 *   Declare that the object's contents changed: it gets a new version,
 *   stored in the object's record and in *HANDLE. Every copy of the
 *   handle made before is stale from now on (cbrpc_call_start() refuses
 *   it, a server that saw the new version refuses the old one with
 *   CBRPC_ESTALE), and the next dereference of the new handle reads the
 *   memory again. Data changed without this call may be served from a
 *   server's cache. Errors: CBRPC_EINVAL. Thread-safe.
 *
 * int cbrpc_handle_slice(const struct cbrpc_handle *handle, uint64_t offset,
 *                        uint64_t length, uint32_t flags,
 *                        struct cbrpc_handle *slice);
 *   A handle to LENGTH bytes at OFFSET inside HANDLE with access FLAGS, a
 *   subset of HANDLE's (a client may grant less than it owns, e.g. forward
 *   only a part). The slice has HANDLE's version.
 *   Errors: CBRPC_ERANGE, CBRPC_EPERM (more flags than HANDLE has).
 *   Thread-safe.
 */
int cbrpc_heap_create(struct cbrpc_ctx *ctx, size_t size, size_t grow,
		      struct cbrpc_heap **heap);
int cbrpc_heap_destroy(struct cbrpc_heap *heap, int timeout_ms);
int cbrpc_alloc(struct cbrpc_heap *heap, size_t length, uint32_t flags,
		struct cbrpc_handle *handle, void **ptr);
int cbrpc_free(struct cbrpc_heap *heap, const struct cbrpc_handle *handle);
void *cbrpc_handle_ptr(struct cbrpc_heap *heap,
		       const struct cbrpc_handle *handle);
int cbrpc_mark_changed(struct cbrpc_heap *heap, struct cbrpc_handle *handle);
int cbrpc_handle_slice(const struct cbrpc_handle *handle, uint64_t offset,
		       uint64_t length, uint32_t flags,
		       struct cbrpc_handle *slice);

/* ----------------------------------------------------------------- sessions */

struct cbrpc_session_attr {
	unsigned int depth;	/* outstanding calls, 1..64 (0: 16) */
	int timeout_ms;		/* connect and announcement timeout (0: 15000) */
	int keepalive_ms;	/* probe an idle server this often (0: 1000, <0: never) */
	size_t max_inline;	/* request inline bytes, up to CBRPC_VALUE_MAX
				 * (0: CBRPC_INLINE_MAX); the server must allow it */
	int spin_us;		/* a waiting caller polls the completion queue
				 * this long before it sleeps (0: CBRPC_SPIN_US,
				 * <0: never) */
};

/*
 * int cbrpc_connect(struct cbrpc_ctx *ctx, const char *host, const char *port,
 *                   const struct cbrpc_session_attr *attr,
 *                   struct cbrpc_session **session);
 *   Connect to the cbrpc server at HOST:PORT over RDMA-CM (ATTR may be
 *   NULL), then announce every heap region of CTX to it. The route must go
 *   through CTX's device. While calls are outstanding and the server has
 *   sent nothing for KEEPALIVE_MS, a waiting caller probes the server's
 *   machine with an 8-byte RDMA READ of a word the server exposes for it:
 *   a machine that vanished without a disconnect (powered off, cut off)
 *   makes the READ fail once the transport's retries run out, and the
 *   calls end with CBRPC_EDISCONNECTED instead of waiting forever.
 *   MAX_INLINE above CBRPC_INLINE_MAX makes a session for arguments passed
 *   by value: requests may carry that many inline bytes, and the server
 *   keeps DEPTH receive buffers of that size for the session (it refuses
 *   the connection if MAX_INLINE is above its own max_inline).
 *   Errors: CBRPC_EINVAL (bad address, or another device, MAX_INLINE above
 *   CBRPC_VALUE_MAX), CBRPC_ECONNREFUSED (rejected, no listener, unreachable), CBRPC_ETIMEDOUT, CBRPC_EDEVICE,
 *   CBRPC_ENOMEM. Thread-safe.
 *
 * int cbrpc_disconnect(struct cbrpc_session *session);
 *   Close SESSION: calls still outstanding complete with CBRPC_ECANCELED
 *   (their struct cbrpc_call must still be freed with cbrpc_call_free()).
 *   The server sees the disconnection and gives up requests of the session
 *   (a dereference in progress fails). Returns 0. NULL is ignored. No other
 *   thread may use SESSION during or after the call.
 *
 * int cbrpc_session_alive(struct cbrpc_session *session);
 *   1 while the connection stands, 0 once it was lost. Thread-safe.
 */
int cbrpc_connect(struct cbrpc_ctx *ctx, const char *host, const char *port,
		  const struct cbrpc_session_attr *attr,
		  struct cbrpc_session **session);
int cbrpc_disconnect(struct cbrpc_session *session);
int cbrpc_session_alive(struct cbrpc_session *session);

/* -------------------------------------------------------------------- calls */

struct cbrpc_call_args {
	uint32_t op;				/* the server's operation */
	unsigned int nhandles;			/* 0..CBRPC_MAX_HANDLES */
	const struct cbrpc_handle *handles;	/* in, out or in-out */
	const void *inline_data;		/* by value, may be NULL */
	size_t inline_len;			/* 0..CBRPC_INLINE_MAX */
};

struct cbrpc_result {
	int status;		/* the handler's status (or a CBRPC_E* code) */
	uint32_t written;	/* bit i: the server wrote into handle i */
	size_t inline_len;	/* bytes of reply inline data */
	uint8_t inline_data[CBRPC_INLINE_MAX];
};

/*
 * int cbrpc_call_start(struct cbrpc_session *session,
 *                      const struct cbrpc_call_args *args,
 *                      struct cbrpc_call **call);
 *   Send a request and return at once with *CALL outstanding. Each handle
 *   must be current: its version equal to its object's record if the object
 *   lives in a heap of this context (CBRPC_ESTALE otherwise); handles of
 *   other owners (received and forwarded) are passed unchecked and checked
 *   by the server. The inline data (up to the session's max_inline bytes)
 *   is copied into the request; the objects are not.
 *   Errors: CBRPC_EINVAL, CBRPC_E2BIG, CBRPC_ESTALE, CBRPC_EBUSY (DEPTH
 *   calls outstanding), CBRPC_EDISCONNECTED, CBRPC_EDEVICE. Thread-safe.
 *
 * int cbrpc_call_wait(struct cbrpc_call *call, int timeout_ms,
 *                     struct cbrpc_result *result);
 *   Wait up to TIMEOUT_MS (negative: forever, 0: just poll) for CALL's
 *   reply and fill *RESULT. Returns 0 when the reply came (the handler's
 *   status is result->status: 0, an application status or a CBRPC_E* code
 *   the server gave), or CBRPC_ETIMEDOUT (CALL stays outstanding: wait
 *   again or free it), CBRPC_EDISCONNECTED (the server died or closed the
 *   session), CBRPC_ECANCELED. Objects the server wrote into (written bit
 *   i) get a new version before this returns; the caller's handle array
 *   is not touched: copies of those handles are stale now, and
 *   cbrpc_handle_refresh() gives a handle the new version. Thread-safe;
 *   only one thread may wait for a given call.
 *
 * void cbrpc_call_free(struct cbrpc_call *call);
 *   Release CALL. If its reply has not come yet, the call slot stays taken
 *   until it does (or the session ends) and the reply is dropped. NULL is
 *   ignored. Thread-safe.
 *
 * int cbrpc_call(struct cbrpc_session *session,
 *                const struct cbrpc_call_args *args,
 *                struct cbrpc_result *result, int timeout_ms);
 *   cbrpc_call_start(), cbrpc_call_wait(), cbrpc_call_free(). Same errors.
 *
 * int cbrpc_handle_refresh(struct cbrpc_heap *heap, struct cbrpc_handle *handle);
 *   Copy the current version of *HANDLE's object into *HANDLE (after a
 *   server wrote into it). Errors: CBRPC_EINVAL. Thread-safe.
 */
int cbrpc_call_start(struct cbrpc_session *session,
		     const struct cbrpc_call_args *args,
		     struct cbrpc_call **call);
int cbrpc_call_wait(struct cbrpc_call *call, int timeout_ms,
		    struct cbrpc_result *result);
void cbrpc_call_free(struct cbrpc_call *call);
int cbrpc_call(struct cbrpc_session *session,
	       const struct cbrpc_call_args *args,
	       struct cbrpc_result *result, int timeout_ms);
int cbrpc_handle_refresh(struct cbrpc_heap *heap, struct cbrpc_handle *handle);

/* ------------------------------------------------------------------- server */

/*
 * The handler: called by cbrpc_server_run()'s thread for each request, with
 * the request (valid until the handler returns) and the ARG given to
 * cbrpc_server_create(). It returns the status the caller gets in
 * result->status.
 */
typedef int (*cbrpc_handler_fn)(struct cbrpc_req *req, void *arg);

struct cbrpc_server_attr {
	unsigned int max_sessions;	/* 1..256 (0: 16) */
	unsigned int depth;		/* largest session depth accepted, 1..64 (0: 16) */
	size_t cache_bytes;		/* READ cache per server (0: 16 MiB) */
	int op_timeout_ms;		/* bound of one READ/WRITE (0: 5000) */
	size_t max_inline;		/* largest request inline a session may ask
					 * for, up to CBRPC_VALUE_MAX (0: CBRPC_INLINE_MAX) */
	int spin_us;			/* an idle server polls its completion queue
					 * this long before it sleeps (0: CBRPC_SPIN_US,
					 * <0: never) */
};

struct cbrpc_server_stats {
	uint64_t sessions;	/* sessions accepted */
	uint64_t requests;	/* handlers run */
	uint64_t reads;		/* RDMA READs posted */
	uint64_t read_bytes;	/* bytes they carried */
	uint64_t cache_hits;	/* dereferences served without a READ */
	uint64_t writes;	/* RDMA WRITEs posted */
	uint64_t write_bytes;
	uint64_t refused;	/* dereferences/writes refused before posting */
	int last_error;		/* last negative code of a deref/write, or 0 */
};

/*
 * int cbrpc_server_create(struct cbrpc_ctx *ctx, const char *host,
 *                         const char *port,
 *                         const struct cbrpc_server_attr *attr,
 *                         cbrpc_handler_fn handler, void *arg,
 *                         struct cbrpc_server **server);
 *   Listen on HOST:PORT (HOST NULL: every address of CTX's device) with
 *   CTX's device and protection domain (ATTR may be NULL). A session
 *   asking for a max_inline above ATTR's is rejected; the server's memory
 *   for receive buffers is at most max_sessions * depth * (max_inline + 3
 *   KiB). Nothing runs
 *   until cbrpc_server_run() is called. Errors: CBRPC_EINVAL (bad address,
 *   another device, port in use), CBRPC_EDEVICE, CBRPC_ENOMEM.
 *   Thread-safe.
 *
 * int cbrpc_server_run(struct cbrpc_server *server, int timeout_ms);
 *   Serve: accept and close sessions, run handlers, until
 *   cbrpc_server_stop() is called or TIMEOUT_MS passed (negative:
 *   forever). Returns 0, or a CBRPC_E* code if the server itself failed
 *   (a failing session is closed and does not stop the server). Call it
 *   from one thread at a time.
 *
 * void cbrpc_server_stop(struct cbrpc_server *server);
 *   Make cbrpc_server_run() return soon. Async-signal-safe, thread-safe.
 *
 * void cbrpc_server_destroy(struct cbrpc_server *server);
 *   Close every session and the listener. Not while cbrpc_server_run()
 *   runs. NULL is ignored.
 *
 * void cbrpc_server_get_stats(struct cbrpc_server *server,
 *                             struct cbrpc_server_stats *stats);
 *   The counters; from the server thread (e.g. in a handler).
 *
 * int cbrpc_server_port(struct cbrpc_server *server);
 *   The TCP-space port the listener is bound to (useful with port "0").
 */
int cbrpc_server_create(struct cbrpc_ctx *ctx, const char *host,
			const char *port, const struct cbrpc_server_attr *attr,
			cbrpc_handler_fn handler, void *arg,
			struct cbrpc_server **server);
int cbrpc_server_run(struct cbrpc_server *server, int timeout_ms);
void cbrpc_server_stop(struct cbrpc_server *server);
void cbrpc_server_destroy(struct cbrpc_server *server);
void cbrpc_server_get_stats(struct cbrpc_server *server,
			    struct cbrpc_server_stats *stats);
int cbrpc_server_port(struct cbrpc_server *server);

/*
 * Inside a handler (server thread only; REQ valid until the handler
 * returns):
 *
 * uint32_t cbrpc_req_op(const struct cbrpc_req *req);
 *   The operation the caller asked for.
 *
 * const void *cbrpc_req_inline(const struct cbrpc_req *req, size_t *len);
 *   The request's inline data and its length (*LEN 0: none), in the
 *   session's receive buffer (not copied; valid until the handler returns).
 *
 * unsigned int cbrpc_req_nhandles(const struct cbrpc_req *req);
 * int cbrpc_req_handle(const struct cbrpc_req *req, unsigned int index,
 *                      struct cbrpc_handle *handle);
 *   The number of handles, and handle INDEX (CBRPC_EINVAL past the last).
 *
 * uint64_t cbrpc_req_caller(const struct cbrpc_req *req);
 *   The context id of the caller.
 *
 * int cbrpc_deref(struct cbrpc_req *req, const struct cbrpc_handle *handle,
 *                 uint64_t offset, size_t length, const void **data);
 *   Make LENGTH bytes at OFFSET of HANDLE's object available at *DATA
 *   (valid until the handler returns). HANDLE is one of the request's
 *   handles, or a handle of a third party forwarded to this server (a
 *   chained call): then its owner must have a session with this server
 *   and the handle must carry CBRPC_H_FORWARD. Bytes already pulled at this
 *   version in the session come from the cache; the others are pulled by
 *   RDMA READ (whole 256-byte granules, never beyond the handle), and the
 *   thread waits for them. An object larger than half the cache is not
 *   cached: the range itself is read each time (CBRPC_E2BIG if the range
 *   is larger than half the cache).
 *   Errors (nothing is read in any of them): CBRPC_EINVAL, CBRPC_ERANGE
 *   (beyond the handle), CBRPC_EPERM (no CBRPC_H_READ, or forwarded without
 *   CBRPC_H_FORWARD), CBRPC_ENOGRANT (the owner has no session here),
 *   CBRPC_ENOHEAP (region not announced or withdrawn), CBRPC_EBOUNDS
 *   (handle outside its region, or rkey not the region's), CBRPC_ESTALE
 *   (a newer version of the object was seen in this session), CBRPC_ENOMEM
 *   (cache full of pinned data), CBRPC_E2BIG; and after posting: CBRPC_ETIMEDOUT,
 *   CBRPC_EDISCONNECTED (the owner's session ended), CBRPC_EREMOTE (the
 *   owner's device refused the READ; that session is closed).
 *
 * int cbrpc_write(struct cbrpc_req *req, const struct cbrpc_handle *handle,
 *                 uint64_t offset, const void *data, size_t length);
 *   Write LENGTH bytes of DATA at OFFSET into HANDLE's object by RDMA WRITE
 *   and wait for it; the handle needs CBRPC_H_WRITE (forwarded ones
 *   CBRPC_H_FORWARD too). The caller learns which of its handles were
 *   written (cbrpc_result.written) and their objects get new versions.
 *   Errors: those of cbrpc_deref(), CBRPC_E2BIG (LENGTH over the
 *   cache size).
 *
 * int cbrpc_req_forward(const struct cbrpc_req *req, unsigned int index,
 *                       struct cbrpc_handle *handle);
 *   Handle INDEX, checked to be forwardable (CBRPC_H_FORWARD), for passing
 *   to another server in a call of the handler's own. Errors: CBRPC_EINVAL,
 *   CBRPC_EPERM.
 *
 * void cbrpc_req_mark_written(struct cbrpc_req *req, unsigned int index);
 *   Report handle INDEX as written (e.g. by the next server of a chained
 *   call) in the reply.
 *
 * int cbrpc_reply_inline(struct cbrpc_req *req, const void *data, size_t len);
 *   Set the reply's inline data (copied). Errors: CBRPC_E2BIG.
 */
uint32_t cbrpc_req_op(const struct cbrpc_req *req);
const void *cbrpc_req_inline(const struct cbrpc_req *req, size_t *len);
unsigned int cbrpc_req_nhandles(const struct cbrpc_req *req);
int cbrpc_req_handle(const struct cbrpc_req *req, unsigned int index,
		     struct cbrpc_handle *handle);
uint64_t cbrpc_req_caller(const struct cbrpc_req *req);
int cbrpc_deref(struct cbrpc_req *req, const struct cbrpc_handle *handle,
		uint64_t offset, size_t length, const void **data);
int cbrpc_write(struct cbrpc_req *req, const struct cbrpc_handle *handle,
		uint64_t offset, const void *data, size_t length);
int cbrpc_req_forward(const struct cbrpc_req *req, unsigned int index,
		      struct cbrpc_handle *handle);
void cbrpc_req_mark_written(struct cbrpc_req *req, unsigned int index);
int cbrpc_reply_inline(struct cbrpc_req *req, const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* CBRPC_H */
