// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The wire protocol between cbrpc library instances (docs/cbrpc.md "Wire
 * protocol"). Every message is one SEND on the session's RC QP: a request
 * of at most cbrpc_req_size(the session's max_inline) bytes, any other
 * message of at most CBRPC_MSG_SIZE bytes; all fields little-endian.
 *
 *   client -> server: REQ (a call), HEAP_ADD, HEAP_DEL (announcements)
 *   server -> client: REP (exactly one per client message)
 *
 * Flow control: the server posts DEPTH receives per session; the client has
 * at most DEPTH messages unanswered, so a SEND always finds a receive.
 */
#ifndef CBRPC_WIRE_H
#define CBRPC_WIRE_H

#include <endian.h>
#include <stdint.h>

#include "cbrpc.h"

#define CBRPC_WIRE_MAGIC 0x31525043u	/* "CPR1" little-endian */
#define CBRPC_CONN_MAGIC 0x4e435043u	/* "CPCN" */
#define CBRPC_WIRE_VERSION 2

enum cbrpc_msg_type {
	CBRPC_MSG_REQ = 1,
	CBRPC_MSG_REP = 2,
	CBRPC_MSG_HEAP_ADD = 3,
	CBRPC_MSG_HEAP_DEL = 4,
};

/* RDMA-CM private data of the connect request (fits the 56 bytes of RC). */
struct cbrpc_wire_conn {
	uint32_t magic;
	uint16_t version;
	uint16_t depth;		/* the client's outstanding messages */
	uint64_t owner;		/* the client's context id */
	uint32_t max_inline;	/* the largest request inline data it will send */
} __attribute__((packed));

/* RDMA-CM private data of the accept: where the client may READ 8 bytes to
 * learn that the server's machine is still there (keepalive). */
struct cbrpc_wire_accept {
	uint32_t magic;		/* CBRPC_CONN_MAGIC */
	uint16_t version;
	uint16_t reserved;
	uint64_t ka_addr;
	uint32_t ka_rkey;
} __attribute__((packed));

struct cbrpc_wire_hdr {
	uint32_t magic;
	uint8_t type;
	uint8_t nhandles;	/* REQ: handles; HEAP_*: regions */
	uint16_t reserved;
	uint32_t call_id;	/* echoed by REP */
	uint32_t op;		/* REQ: operation */
	int32_t status;		/* REP */
	uint32_t written;	/* REP: bit mask of written handles */
	uint32_t inline_len;	/* REQ/REP: inline bytes after the handles */
} __attribute__((packed));

struct cbrpc_wire_handle {
	uint64_t owner;
	uint64_t addr;
	uint64_t length;
	uint64_t version;
	uint32_t rkey;
	uint32_t region;
	uint32_t flags;
	uint32_t reserved;
} __attribute__((packed));

/* One announced region (HEAP_ADD; HEAP_DEL uses id only). */
struct cbrpc_wire_region {
	uint64_t addr;
	uint64_t length;
	uint32_t rkey;
	uint32_t id;
} __attribute__((packed));

/* Replies and control messages; requests up to the session's request size. */
#define CBRPC_MSG_SIZE 4096

/* The receive buffer a request of up to MAX_INLINE inline bytes needs. */
static inline size_t cbrpc_req_size(size_t max_inline)
{
	size_t n = sizeof(struct cbrpc_wire_hdr) +
		   CBRPC_MAX_HANDLES * sizeof(struct cbrpc_wire_handle) + max_inline;

	n = (n + 63) & ~(size_t)63;
	return n < CBRPC_MSG_SIZE ? CBRPC_MSG_SIZE : n;
}
#define CBRPC_MAX_REGIONS_PER_MSG \
	((CBRPC_MSG_SIZE - sizeof(struct cbrpc_wire_hdr)) / sizeof(struct cbrpc_wire_region))

_Static_assert(sizeof(struct cbrpc_wire_conn) <= 56, "RC private data is 56 bytes");
_Static_assert(sizeof(struct cbrpc_wire_hdr) +
	       CBRPC_MAX_HANDLES * sizeof(struct cbrpc_wire_handle) +
	       CBRPC_INLINE_MAX <= CBRPC_MSG_SIZE, "a full request fits a message");

static inline void cbrpc_handle_to_wire(struct cbrpc_wire_handle *w,
					const struct cbrpc_handle *h)
{
	w->owner = htole64(h->owner);
	w->addr = htole64(h->addr);
	w->length = htole64(h->length);
	w->version = htole64(h->version);
	w->rkey = htole32(h->rkey);
	w->region = htole32(h->region);
	w->flags = htole32(h->flags);
	w->reserved = 0;
}

static inline void cbrpc_handle_from_wire(struct cbrpc_handle *h,
					  const struct cbrpc_wire_handle *w)
{
	h->owner = le64toh(w->owner);
	h->addr = le64toh(w->addr);
	h->length = le64toh(w->length);
	h->version = le64toh(w->version);
	h->rkey = le32toh(w->rkey);
	h->region = le32toh(w->region);
	h->flags = le32toh(w->flags);
	h->reserved = 0;
}

#endif /* CBRPC_WIRE_H */
