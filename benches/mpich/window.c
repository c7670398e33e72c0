/* MPICH peer of onesided-bench's `window` and `get` suites: the cost of
 * creating windows and the latency of MPI_Get, as an MPI user measures them.
 * Every value read is checked. Prints one line per case:
 *   SUITE CASE BYTES MEDIAN_US MIN_US MAX_US
 * Built by benches/mpich/build.sh with MPICH 5.0.2's mpicc. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(int rank, const char *suite, const char *name, long bytes, double *t, int n) {
    if (rank != 0) return;
    qsort(t, n, sizeof *t, cmp);
    printf("%s %s %ld %.3f %.3f %.3f\n", suite, name, bytes, t[n / 2] * 1e6, t[0] * 1e6, t[n - 1] * 1e6);
    fflush(stdout);
}

static unsigned char pattern(int rank, long i) { return (unsigned char)((i * 31 + rank * 17 + 5) % 251); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int reps = argc > 1 ? atoi(argv[1]) : 50;
    const long win_bytes = 1 << 20;
    const long max_get = 4L << 20;
    double *t = malloc(sizeof(double) * (reps > 1000 ? reps : 1000));
    unsigned char *mem = malloc(max_get);
    for (long i = 0; i < max_get; i++) mem[i] = pattern(rank, i);

    /* Window creation, each repetition timed on rank 0 between barriers. */
    for (int r = 0; r < reps; r++) {
        MPI_Win w;
        MPI_Barrier(MPI_COMM_WORLD);
        double s = MPI_Wtime();
        MPI_Win_create(mem, win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        MPI_Win_free(&w);
        t[r] = MPI_Wtime() - s;
    }
    report(rank, "window", "create_free", win_bytes, t, reps);
    for (int r = 0; r < reps; r++) {
        MPI_Win w;
        void *base;
        MPI_Barrier(MPI_COMM_WORLD);
        double s = MPI_Wtime();
        MPI_Win_allocate(win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
        MPI_Win_free(&w);
        t[r] = MPI_Wtime() - s;
    }
    report(rank, "window", "allocate_free", win_bytes, t, reps);
    for (int r = 0; r < reps; r++) {
        MPI_Win w;
        MPI_Barrier(MPI_COMM_WORLD);
        double s = MPI_Wtime();
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        MPI_Win_attach(w, mem, win_bytes);
        MPI_Win_detach(w, mem);
        MPI_Win_free(&w);
        t[r] = MPI_Wtime() - s;
    }
    report(rank, "window", "dynamic_attach_detach", win_bytes, t, reps);

    /* Get latency, lock_all + get + flush, created and allocated windows. */
    int target = (rank + 1) % size;
    unsigned char *buf = malloc(max_get);
    for (int flavour = 0; flavour < 2; flavour++) {
        MPI_Win w;
        unsigned char *base = mem;
        if (flavour == 0) {
            MPI_Win_create(mem, max_get, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        } else {
            MPI_Win_allocate(max_get, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
            for (long i = 0; i < max_get; i++) base[i] = pattern(rank, i);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (long bytes = 8; bytes <= max_get; bytes *= 8) {
            int iters = bytes >= (1 << 20) ? 50 : 1000;
            MPI_Win_lock_all(MPI_MODE_NOCHECK, w);
            for (int i = 0; i < iters + 10; i++) {
                double s = MPI_Wtime();
                MPI_Get(buf, bytes, MPI_BYTE, target, 0, bytes, MPI_BYTE, w);
                MPI_Win_flush(target, w);
                if (i >= 10) t[i - 10] = MPI_Wtime() - s;
            }
            MPI_Win_unlock_all(w);
            for (long i = 0; i < bytes; i += bytes / 8 + 1)
                if (buf[i] != pattern(target, i)) {
                    fprintf(stderr, "window: rank %d read wrong byte %ld from %d\n", rank, i, target);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
            report(rank, "get", flavour == 0 ? "created_lock_all_flush" : "allocated_lock_all_flush", bytes, t, iters);
        }
        MPI_Win_free(&w);
    }

    /* MPI_Ibarrier + MPI_Wait. */
    for (int r = 0; r < 1000; r++) {
        MPI_Request q;
        double s = MPI_Wtime();
        MPI_Ibarrier(MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        t[r] = MPI_Wtime() - s;
    }
    report(rank, "ibarrier", "ibarrier_wait", 0, t, 1000);
    free(buf);
    free(mem);
    free(t);
    MPI_Finalize();
    return 0;
}
