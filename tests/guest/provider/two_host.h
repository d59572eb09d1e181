/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What the two-host test programs of this directory (rnic_migrate_verify.c,
 * rnic_placement.c) share: their common options, the test pattern, the
 * device with port 1's IPv4-mapped GID, the TCP rendezvous that exchanges
 * QPN, PSN, GID and region, and an RC QP connected by hand.
 * Static functions for one program each (build-provider.sh builds every .c
 * here as a program of its own); the program defines die(), which prints
 * its failure in the program's format and exits.
 */
#ifndef TWO_HOST_H
#define TWO_HOST_H

#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* The options of both ends (the program gives port its default). */
static const char *dev_name, *host;
static int gid_index = -1, port;
static bool server;

/* -s | -c HOST, -d DEV, -g GID_INDEX, -p PORT; false: not one of them. */
static bool two_host_option(int opt, const char *arg)
{
	switch (opt) {
	case 's': server = true; return true;
	case 'c': host = arg; return true;
	case 'd': dev_name = arg; return true;
	case 'g': gid_index = atoi(arg); return true;
	case 'p': port = atoi(arg); return true;
	default: return false;
	}
}

/* pattern(seq): 8 bytes of seq, then an xorshift stream seeded by seq */
static void fill(uint8_t *p, uint32_t len, uint64_t seq)
{
	uint64_t x = seq * 0x9e3779b97f4a7c15ull + 1;
	uint32_t i;

	memcpy(p, &seq, len < 8 ? len : 8);
	for (i = 8; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

/*
 * Open device 'name' (NULL: the first), take port 1's GID *gid_index (< 0:
 * the IPv4-mapped RoCE v2 one, its index stored), a PD and a completion
 * channel.
 */
static void open_verbs(const char *name, int *gid_index,
		       struct ibv_context **ctx, union ibv_gid *gid,
		       struct ibv_pd **pd, struct ibv_comp_channel **channel)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	union ibv_gid g;
	int i;

	if (!list || !list[0])
		die("no RDMA device");
	for (i = 0; list[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (!list[i])
		die("no device %s", name);
	*ctx = ibv_open_device(list[i]);
	if (!*ctx)
		die("ibv_open_device: %s", strerror(errno));
	ibv_free_device_list(list);
	for (i = 0; *gid_index < 0 && i < 16 &&
		    !ibv_query_gid(*ctx, 1, i, &g); i++)
		if (g.raw[10] == 0xff && g.raw[11] == 0xff)
			*gid_index = i;
	if (*gid_index < 0)
		die("no IPv4-mapped GID");
	if (ibv_query_gid(*ctx, 1, *gid_index, gid))
		die("ibv_query_gid %d", *gid_index);
	*pd = ibv_alloc_pd(*ctx);
	*channel = ibv_create_comp_channel(*ctx);
	if (!*pd || !*channel)
		die("PD / channel: %s", strerror(errno));
}

/* Client: connect to host:port; the server may not listen yet (a minute). */
static int tcp_connect_retry(const char *host, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM }, *ai;
	char service[16];
	int fd, one = 1, tries;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &ai))
		die("cannot resolve %s", host);
	for (tries = 0;; tries++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		close(fd);
		if (tries > 600)
			die("connect %s:%d: %s", host, port, strerror(errno));
		usleep(100000);
	}
	freeaddrinfo(ai);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Server: one connection on port; "<who>: listening on <port>" first. */
static int tcp_accept_one(int port, const char *who)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd, lfd, one = 1;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1))
		die("listen on %d: %s", port, strerror(errno));
	printf("%s: listening on %d\n", who, port);
	fflush(stdout);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		die("accept: %s", strerror(errno));
	close(lfd);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* The peer's end of an RC connection, as exchanged over TCP. */
struct rc_dest {
	uint32_t qpn, psn;
	const uint8_t *gid;	/* 16 bytes */
};

/*
 * RESET -> INIT (access) -> RTR (to dest, path MTU the port's active MTU
 * (1024 on a 1500-byte link, 4096 on jumbo frames; both hosts alike), 4 responder
 * resources) -> RTS (sq_psn, local ACK timeout 4.096 us << timeout,
 * retry_cnt and rnr_retry 7, 4 outstanding READ/atomic).
 */
static void rc_connect(struct ibv_qp *qp, int gid_index, int access,
		       uint32_t sq_psn, const struct rc_dest *dest, int timeout)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = access,
	};
	struct ibv_port_attr port;

	if (ibv_query_port(qp->context, 1, &port))
		die("query port 1: %s", strerror(errno));
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("INIT (access %#x): %s", access, strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = port.active_mtu;
	a.dest_qp_num = dest->qpn;
	a.rq_psn = dest->psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, dest->gid, 16);
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS: %s", strerror(errno));
}

#endif /* TWO_HOST_H */
