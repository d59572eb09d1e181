// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rnic_mpi_check: the MPI operations middleware tests run, with their
 * results checked, and the figures issue 24 asks for.
 *
 *   ping-pong between ranks 0 and 1: 8 B latency (half the round trip)
 *   and 1 MiB bandwidth, every byte of every message checked;
 *   MPI_Allreduce (sum) of a vector whose elements depend on rank and
 *   index, each element checked against its closed form;
 *   MPI_Alltoall, each block naming its sender and receiver, checked.
 *
 * Rank 0 prints one line:
 *   MPI-RESULT ranks=N lat8_us=F bw1m_mbs=F allreduce=ok|bad alltoall=ok|bad
 * Exit status 0 only when every check passed on every rank.
 *
 * Usage: mpirun ... rnic_mpi_check [iterations (default 1000)]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (1 << 20)
#define BIG_ITERS 20
#define VEC 65536

static uint8_t pattern(int iter, size_t i)
{
	return (uint8_t)(iter * 131 + i * 7 + (i >> 9));
}

static int pingpong(MPI_Comm comm, int rank, int iters, double *lat_us,
		    double *bw_mbs)
{
	uint8_t *buf = malloc(BIG);
	int peer = 1 - rank, bad = 0, it;
	size_t i;
	double t;

	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	memset(buf, 0, 8);
	MPI_Barrier(comm);
	t = MPI_Wtime();
	for (it = 0; it < iters; it++) {
		if (rank == 0) {
			memset(buf, it & 0xff, 8);
			MPI_Send(buf, 8, MPI_BYTE, peer, 1, comm);
			MPI_Recv(buf, 8, MPI_BYTE, peer, 1, comm,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, 8, MPI_BYTE, peer, 1, comm,
				 MPI_STATUS_IGNORE);
			MPI_Send(buf, 8, MPI_BYTE, peer, 1, comm);
		}
		for (i = 0; i < 8; i++)
			bad += buf[i] != (it & 0xff);
	}
	*lat_us = (MPI_Wtime() - t) * 1e6 / iters / 2;

	MPI_Barrier(comm);
	t = MPI_Wtime();
	for (it = 0; it < BIG_ITERS; it++) {
		if (rank == 0) {
			for (i = 0; i < BIG; i++)
				buf[i] = pattern(it, i);
			MPI_Send(buf, BIG, MPI_BYTE, peer, 2, comm);
		} else {
			memset(buf, 0, BIG);
			MPI_Recv(buf, BIG, MPI_BYTE, peer, 2, comm,
				 MPI_STATUS_IGNORE);
			for (i = 0; i < BIG; i++)
				bad += buf[i] != pattern(it, i);
		}
	}
	/* the last message has arrived when the receiver says so */
	if (rank == 0)
		MPI_Recv(buf, 1, MPI_BYTE, peer, 3, comm,
			 MPI_STATUS_IGNORE);
	else
		MPI_Send(buf, 1, MPI_BYTE, peer, 3, comm);
	*bw_mbs = (double)BIG * BIG_ITERS / (MPI_Wtime() - t) / 1e6;
	free(buf);
	if (bad)
		fprintf(stderr, "rank %d: ping-pong: %d bytes wrong\n", rank, bad);
	return bad;
}

static int allreduce(int rank, int ranks)
{
	int64_t *in = malloc(VEC * sizeof(*in)), *out = malloc(VEC * sizeof(*out));
	int bad = 0, i;

	if (!in || !out)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (i = 0; i < VEC; i++)
		in[i] = (int64_t)(rank + 1) * i + rank;
	MPI_Allreduce(in, out, VEC, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	/* sum over r of (r + 1) * i + r */
	for (i = 0; i < VEC; i++)
		bad += out[i] != (int64_t)ranks * (ranks + 1) / 2 * i +
				 (int64_t)ranks * (ranks - 1) / 2;
	free(in);
	free(out);
	if (bad)
		fprintf(stderr, "rank %d: allreduce: %d elements wrong\n", rank, bad);
	return bad;
}

static int alltoall(int rank, int ranks)
{
	const int block = 4096;	/* int32 per block */
	int32_t *send = malloc((size_t)ranks * block * sizeof(*send));
	int32_t *recv = malloc((size_t)ranks * block * sizeof(*recv));
	int bad = 0, r, i;

	if (!send || !recv)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (r = 0; r < ranks; r++)
		for (i = 0; i < block; i++)
			send[r * block + i] = rank << 24 | r << 16 | i;
	memset(recv, 0xff, (size_t)ranks * block * sizeof(*recv));
	MPI_Alltoall(send, block, MPI_INT32_T, recv, block, MPI_INT32_T,
		     MPI_COMM_WORLD);
	for (r = 0; r < ranks; r++)
		for (i = 0; i < block; i++)
			bad += recv[r * block + i] != (r << 24 | rank << 16 | i);
	free(send);
	free(recv);
	if (bad)
		fprintf(stderr, "rank %d: alltoall: %d elements wrong\n", rank, bad);
	return bad;
}

int main(int argc, char **argv)
{
	int rank, ranks, iters = argc > 1 ? atoi(argv[1]) : 1000;
	int bad_pp = 0, bad_ar, bad_aa, bad[3], all[3];
	double lat = 0, bw = 0;
	MPI_Comm pair;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	if (iters < 1)
		iters = 1;
	/* the ping-pong is between ranks 0 and 1 alone */
	MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
	if (pair != MPI_COMM_NULL) {
		if (ranks >= 2)
			bad_pp = pingpong(pair, rank, iters, &lat, &bw);
		MPI_Comm_free(&pair);
	}
	bad_ar = allreduce(rank, ranks);
	bad_aa = alltoall(rank, ranks);
	bad[0] = bad_pp;
	bad[1] = bad_ar;
	bad[2] = bad_aa;
	MPI_Reduce(bad, all, 3, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("MPI-RESULT ranks=%d lat8_us=%.1f bw1m_mbs=%.1f pingpong=%s "
		       "allreduce=%s alltoall=%s\n", ranks, lat, bw,
		       all[0] ? "bad" : "ok", all[1] ? "bad" : "ok",
		       all[2] ? "bad" : "ok");
	MPI_Finalize();
	return rank == 0 && (all[0] || all[1] || all[2]) ? 1 : 0;
}
