/*
 * mpi_bcast - the reference for bench/rdmc: Open MPI's MPI_Bcast from rank
 * 0 to the other ranks, timed the way rdmc_bench times RDMC: per size, one
 * warm-up broadcast, then reps broadcasts and a barrier (so the last one
 * has reached every rank); aggregate = bytes delivered to all receivers
 * per second, MB = 2^20 bytes.
 *
 * usage: mpirun -np N mpi_bcast [--sizes MiB,...] [--budget-mib N]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	double sizes[8] = { 1, 16, 64 };
	unsigned nsizes = 3, budget = 96;
	int rank, np;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--sizes") == 0) {
			char *save = NULL;

			nsizes = 0;
			for (char *t = strtok_r(argv[i + 1], ",", &save); t && nsizes < 8;
			     t = strtok_r(NULL, ",", &save))
				sizes[nsizes++] = strtod(t, NULL);
		} else if (strcmp(argv[i], "--budget-mib") == 0) {
			budget = (unsigned)strtoul(argv[i + 1], NULL, 0);
		}
	}
	for (unsigned s = 0; s < nsizes; s++) {
		size_t size = (size_t)(sizes[s] * 1048576);
		unsigned reps = (unsigned)(((size_t)budget << 20) / size);
		char *buf = malloc(size);
		double t0, t;

		reps = reps < 2 ? 2 : reps > 50 ? 50 : reps;
		memset(buf, rank, size);
		MPI_Bcast(buf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (unsigned j = 0; j < reps; j++)
			MPI_Bcast(buf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		t = MPI_Wtime() - t0;
		if (rank == 0)
			printf("RESULT receivers=%d size_mib=%g reps=%u ms_per_msg=%.2f "
			       "aggregate_MBps=%.2f\n", np - 1, sizes[s], reps,
			       t * 1e3 / reps, (double)(np - 1) * size * reps / t / 1048576.0);
		fflush(stdout);
		free(buf);
	}
	MPI_Finalize();
	return 0;
}
