/* MPICH peer of onesided-reduce-time: MPI_Reduce (one at a time) or
 * MPI_Ireduce (IDS at once), measured the same way.
 *   reduce LEN REPS IDS [SLOW_RANK SLOW_FACTOR]
 * REPS reductions of LEN doubles (a sum to rank 0) after one untimed, each
 * started after a barrier and 1 ms of computation (SLOW_FACTOR ms on
 * SLOW_RANK, which then arrives late, pinned to the last core where the
 * benchmark runs a CPU hog); IDS > 1 starts that many
 * MPI_Ireduce at once and waits for all. Rank 0 times from the barrier to
 * its results, checks every element against the serial sum, and prints
 *   reduce P ranks LEN f64 ids IDS median X ms mean Z ms min Y ms
 * Built by benches/mpich/build.sh with MPICH 5.0.2's mpicc. */
#include "common.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static double value(int r, long i) { return (double)((i % 1000) + r); }

/* Busy work for ms milliseconds (the application's computation). */
static void compute(double ms) {
    double end = MPI_Wtime() + ms / 1e3;
    volatile unsigned long x = 0;
    while (MPI_Wtime() < end)
        for (int k = 0; k < 1000; k++) x = x * 6364136223846793005UL + 1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) {
        if (rank == 0) fprintf(stderr, "usage: reduce LEN REPS IDS [SLOW_RANK SLOW_FACTOR]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long len = atol(argv[1]);
    int reps = atoi(argv[2]), ids = atoi(argv[3]);
    int slow_rank = argc > 5 ? atoi(argv[4]) : -1;
    double work = (argc > 5 && rank == slow_rank) ? atof(argv[5]) : 1.0;
    if (len < 1 || reps < 1 || ids < 1) MPI_Abort(MPI_COMM_WORLD, 2);
    if (rank == slow_rank) {
        /* The same pinning as onesided's side: every thread, by taskset. */
        char cmd[128];
        snprintf(cmd, sizeof cmd, "taskset -a -c -p %ld %d > /dev/null", sysconf(_SC_NPROCESSORS_ONLN) - 1, (int)getpid());
        if (system(cmd) != 0) MPI_Abort(MPI_COMM_WORLD, 4);
    }
    double *data = malloc(len * sizeof(double));
    double *out = malloc((size_t)ids * len * sizeof(double));
    double *times = malloc(reps * sizeof(double));
    MPI_Request *req = malloc(ids * sizeof(MPI_Request));
    if (!data || !out || !times || !req) MPI_Abort(MPI_COMM_WORLD, 3);
    for (long i = 0; i < len; i++) data[i] = value(rank, i);
    print_loaded(rank);
    for (int rep = 0; rep <= reps; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double begun = MPI_Wtime();
        compute(work);
        if (ids == 1)
            MPI_Reduce(data, out, (int)len, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        else {
            for (int k = 0; k < ids; k++)
                MPI_Ireduce(data, out + (size_t)k * len, (int)len, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &req[k]);
            MPI_Waitall(ids, req, MPI_STATUSES_IGNORE);
        }
        if (rank == 0) {
            double n = size;
            for (long k = 0; k < (long)ids * len; k++) {
                long i = k % len;
                if (out[k] != n * (double)(i % 1000) + n * (n - 1) / 2) {
                    fprintf(stderr, "reduce: rep %d element %ld is %g\n", rep, i, out[k]);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            }
            if (rep > 0) times[rep - 1] = (MPI_Wtime() - begun) * 1e3;
        }
    }
    if (rank == 0) {
        qsort(times, reps, sizeof(double), cmp);
        double sum = 0;
        for (int k = 0; k < reps; k++) sum += times[k];
        printf("reduce %d ranks %ld f64 ids %d median %.2f ms mean %.2f ms min %.2f ms\n", size, len, ids, times[reps / 2], sum / reps, times[0]);
    }
    free(data);
    free(out);
    free(times);
    free(req);
    MPI_Finalize();
    return 0;
}
