// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rnic_unplug_watch: a verbs application as the RDMA core expects one to
 * behave when its device goes away (hot-unplug, driver unbind): it runs
 * RDMA traffic, polls its CQ and watches the context's asynchronous events;
 * on IBV_EVENT_DEVICE_FATAL it stops, releases everything and exits with an
 * error of its own.
 *
 *   rnic_unplug_watch [-d DEV] [-g GID_INDEX] [-t SECONDS]
 *
 * Two RC QPs of this process, connected to each other through the device's
 * loopback (port 1's IPv4-mapped RoCE v2 GID unless -g), keep -w (4) RDMA
 * WRITEs of 4 KiB in flight, each completion posting the next one.
 * Completions are waited for on a completion channel, together with the
 * async event fd (poll(), both non-blocking: no busy polling on TCG).
 *
 * Prints
 *   watch: traffic running (qpn A -> B)      after the first 64 completions
 *   watch: ops=N                              every second
 *   watch: async event <name>                 every asynchronous event
 *   watch: completion error <status> ...      (the first few)
 *   watch: DEVICE_FATAL after N ops: releasing
 *   watch: destroy qp/cq/mr/pd/channel: <errno or ok>, close: ...
 *   watch: exit 3 (device removed)
 * Exit status: 3 once the device is gone (DEVICE_FATAL seen and every
 * resource released), 1 on any other failure, including -t SECONDS
 * (default 300) without DEVICE_FATAL; never 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define MSG_LEN		4096
#define SLOTS		16
#define CQ_DEPTH	64

static unsigned long long ops;

static void die(const char *what) __attribute__((noreturn));

static void die(const char *what)
{
	printf("watch: %s: %s\nwatch: exit 1\n", what, strerror(errno));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		die("fcntl O_NONBLOCK");
}

static int find_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	union ibv_gid g;
	int i;

	for (i = 0; i < 16 && !ibv_query_gid(ctx, 1, i, &g); i++)
		if (g.raw[10] == 0xff && g.raw[11] == 0xff) {
			*gid = g;
			return i;
		}
	errno = ENOENT;
	die("no IPv4-mapped GID on port 1 (an IPv4 address on the netdev?)");
}

/* RESET -> INIT -> RTR (to qpn on gid) -> RTS */
static void connect_qp(struct ibv_qp *qp, uint32_t dest_qpn, int gid_index,
		       const union ibv_gid *gid)
{
	struct ibv_port_attr port;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE,
	};

	if (ibv_query_port(qp->context, 1, &port))
		die("ibv_query_port");
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify QP to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = port.active_mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify QP to RTR");
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify QP to RTS");
}

static int post_write(struct ibv_qp *qp, struct ibv_mr *mr, uint8_t *buf,
		      unsigned int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf + slot * MSG_LEN,
		.length = MSG_LEN,
		.lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = slot,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {
			.remote_addr = (uintptr_t)buf + (SLOTS + slot) * MSG_LEN,
			.rkey = mr->rkey,
		},
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static const char *result(int ret)
{
	return ret ? strerror(ret) : "ok";
}

int main(int argc, char **argv)
{
	const char *dev_name = NULL;
	int gid_index = -1, window = 4, opt, ret, errors = 0;
	double limit = 300, start, last_print, traffic_at = 0;
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_comp_channel *channel;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qa, *qb;
	union ibv_gid gid;
	uint8_t *buf;
	bool fatal = false;
	unsigned int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:g:t:w:")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 't': limit = atof(optarg); break;
		case 'w': window = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-d DEV] [-g GID_INDEX] [-t SECONDS] [-w N]\n",
				argv[0]);
			return 1;
		}
	}
	if (window < 1 || window > SLOTS)
		window = 4;

	list = ibv_get_device_list(NULL);
	if (!list)
		die("ibv_get_device_list");
	for (i = 0; list[i]; i++)
		if (!dev_name || !strcmp(ibv_get_device_name(list[i]), dev_name))
			break;
	if (!list[i]) {
		errno = ENODEV;
		die("no such RDMA device");
	}
	ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("ibv_open_device");
	printf("watch: device %s\n", ibv_get_device_name(list[i]));
	ibv_free_device_list(list);
	if (gid_index < 0)
		gid_index = find_gid(ctx, &gid);
	else if (ibv_query_gid(ctx, 1, gid_index, &gid))
		die("ibv_query_gid");

	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd");
	buf = aligned_alloc(4096, 2 * SLOTS * MSG_LEN);
	if (!buf)
		die("aligned_alloc");
	memset(buf, 0x5a, 2 * SLOTS * MSG_LEN);
	mr = ibv_reg_mr(pd, buf, 2 * SLOTS * MSG_LEN, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	channel = ibv_create_comp_channel(ctx);
	if (!channel)
		die("ibv_create_comp_channel");
	cq = ibv_create_cq(ctx, CQ_DEPTH, NULL, channel, 0);
	if (!cq)
		die("ibv_create_cq");
	{
		struct ibv_qp_init_attr init = {
			.send_cq = cq,
			.recv_cq = cq,
			.qp_type = IBV_QPT_RC,
			.sq_sig_all = 0,
			.cap = { .max_send_wr = SLOTS, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qa = ibv_create_qp(pd, &init);
		qb = ibv_create_qp(pd, &init);
		if (!qa || !qb)
			die("ibv_create_qp");
	}
	connect_qp(qa, qb->qp_num, gid_index, &gid);
	connect_qp(qb, qa->qp_num, gid_index, &gid);
	set_nonblock(channel->fd);
	set_nonblock(ctx->async_fd);
	if (ibv_req_notify_cq(cq, 0))
		die("ibv_req_notify_cq");
	for (i = 0; i < (unsigned int)window; i++)
		if ((ret = post_write(qa, mr, buf, i))) {
			errno = ret;
			die("ibv_post_send");
		}

	start = last_print = now();
	while (!fatal) {
		struct pollfd fds[2] = {
			{ .fd = ctx->async_fd, .events = POLLIN },
			{ .fd = channel->fd, .events = POLLIN },
		};
		struct ibv_async_event ev;
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		struct ibv_wc wc[16];
		int n;

		if (now() - start > limit) {
			printf("watch: no DEVICE_FATAL in %.0f s\nwatch: exit 1\n", limit);
			return 1;
		}
		if (now() - last_print >= 1) {
			printf("watch: ops=%llu\n", ops);
			last_print = now();
		}
		n = poll(fds, 2, 1000);
		if (n < 0 && errno != EINTR)
			die("poll");
		if (fds[0].revents) {
			while (!ibv_get_async_event(ctx, &ev)) {
				printf("watch: async event %s\n",
				       ibv_event_type_str(ev.event_type));
				if (ev.event_type == IBV_EVENT_DEVICE_FATAL)
					fatal = true;
				ibv_ack_async_event(&ev);
			}
			if (errno != EAGAIN && !fatal) {
				/* the file is dead without the event: report it */
				printf("watch: ibv_get_async_event: %s\n",
				       strerror(errno));
			}
			if (fatal)
				break;
		}
		if (!fds[1].revents)
			continue;
		while (!ibv_get_cq_event(channel, &ev_cq, &ev_ctx))
			ibv_ack_cq_events(ev_cq, 1);
		if (ibv_req_notify_cq(cq, 0)) {
			printf("watch: ibv_req_notify_cq: %s\n", strerror(errno));
			continue;	/* the async event tells why */
		}
		while ((n = ibv_poll_cq(cq, 16, wc)) > 0) {
			int k;

			for (k = 0; k < n; k++) {
				if (wc[k].status != IBV_WC_SUCCESS) {
					if (errors++ < 4)
						printf("watch: completion error %s (wr %" PRIu64 ")\n",
						       ibv_wc_status_str(wc[k].status),
						       wc[k].wr_id);
					continue;
				}
				ops++;
				if (ops == 64 && !traffic_at) {
					traffic_at = now();
					printf("watch: traffic running (qpn %u -> %u)\n",
					       qa->qp_num, qb->qp_num);
				}
				ret = post_write(qa, mr, buf, wc[k].wr_id % SLOTS);
				if (ret && errors++ < 4)
					printf("watch: ibv_post_send: %s\n", strerror(ret));
			}
		}
		if (n < 0 && errors++ < 4)
			printf("watch: ibv_poll_cq: %d\n", n);
	}

	/* the device is gone: release everything, report what the calls said */
	printf("watch: DEVICE_FATAL after %llu ops: releasing\n", ops);
	printf("watch: destroy qp %s, %s\n", result(ibv_destroy_qp(qa)),
	       result(ibv_destroy_qp(qb)));
	printf("watch: destroy cq %s\n", result(ibv_destroy_cq(cq)));
	printf("watch: destroy channel %s\n",
	       result(ibv_destroy_comp_channel(channel)));
	printf("watch: dereg mr %s\n", result(ibv_dereg_mr(mr)));
	printf("watch: dealloc pd %s\n", result(ibv_dealloc_pd(pd)));
	printf("watch: close device %s\n", result(ibv_close_device(ctx)));
	free(buf);
	printf("watch: exit 3 (device removed)\n");
	return 3;
}
