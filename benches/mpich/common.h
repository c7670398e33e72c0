/* What the MPICH peers of onesided-bench share: result lines, repetition
 * counts, the command line's SCALE, usage errors. */
#ifndef ONESIDED_BENCH_COMMON_H
#define ONESIDED_BENCH_COMMON_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Rank 0 prints `SUITE CASE BYTES MEDIAN_US MIN_US MAX_US` for the n times t
 * (seconds; sorted here). */
static void report(int rank, const char *suite, const char *name, long bytes, double *t, int n) {
    if (rank != 0) return;
    qsort(t, n, sizeof *t, cmp);
    printf("%s %s %ld %.3f %.3f %.3f\n", suite, name, bytes, t[n / 2] * 1e6, t[0] * 1e6, t[n - 1] * 1e6);
    fflush(stdout);
}

/* base repetitions times scale, at least floor. */
static int scaled_reps(double scale, long base, int floor) {
    int n = (int)(base * scale + 0.5);
    return n < floor ? floor : n;
}

static int warmup(int reps) { return reps / 10 < 2 ? 2 : reps / 10; }

/* SCALE from argv[2] (default 1.0); 0 when it is not a number > 0. */
static int parse_scale(int argc, char **argv, double *scale) {
    char *end = NULL;
    *scale = argc > 2 ? strtod(argv[2], &end) : 1.0;
    return !(argc > 2 && (*end != '\0' || end == argv[2] || !(*scale > 0)));
}

/* A bad command line: the reason and `usage` on rank 0, then exit code 2
 * (MPICH 5.0.2's MPI_Abort has been seen to return). */
static void bad_usage(int rank, const char *prog, int scale_ok, int argc, char **argv, const char *usage) {
    if (rank == 0) {
        if (!scale_ok)
            fprintf(stderr, "%s: bad scale '%s' (want a number > 0)\n", prog, argv[2]);
        else
            fprintf(stderr, "%s: unknown suite '%s'\n", prog, argc > 1 ? argv[1] : "");
        fprintf(stderr, "usage: %s\n", usage);
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

#endif
