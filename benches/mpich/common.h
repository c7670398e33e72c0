/* What the MPICH peers of onesided-bench share: result lines, turns,
 * repetition counts, the command line's SCALE, usage errors. */
#ifndef ONESIDED_BENCH_COMMON_H
#define ONESIDED_BENCH_COMMON_H

/* dladdr and RTLD_DEFAULT; included first by every peer. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* This rank's ends of its side's turn FIFOs (benches/src/turns.rs): -1
 * without ONESIDED_BENCH_TURNS. */
static int turn_go = -1, turn_done = -1;

/* Ends this rank's turn (a byte into PATH.done), waits for its next (a byte
 * from PATH.go.RANK), blocked in the read, then spins for 10 ms, as
 * onesided's side does (benches/src/turns.rs: a process woken from a pipe
 * lands on its waker's core, and Linux spreads spinning processes over the
 * idle cores within a few ticks); a driver that is gone ends the run. */
static void turn_pass(void) {
    char token = 1;
    ssize_t got;
    if (turn_go < 0) return;
    if (write(turn_done, &token, 1) != 1) got = 0;
    else
        while ((got = read(turn_go, &token, 1)) < 0 && errno == EINTR) {
        }
    if (got != 1) {
        fprintf(stderr, "onesided-bench peer: the driver's turns ended\n");
        exit(1);
    }
    double settle = MPI_Wtime() + 0.010;
    while (MPI_Wtime() < settle) {
    }
}

/* Rank 0 says what it runs on, as onesided's side does: `loaded mpich
 * VERSION` and `loaded libfabric MAJOR.MINOR PATH` (the libfabric MPICH
 * loaded, found by its fi_version symbol). */
static void print_loaded(int rank) {
    if (rank != 0) return;
#ifdef MPICH_VERSION
    printf("loaded mpich %s\n", MPICH_VERSION);
#endif
    unsigned (*version)(void) = (unsigned (*)(void))dlsym(RTLD_DEFAULT, "fi_version");
    Dl_info info;
    if (version && dladdr((void *)version, &info) && info.dli_fname) {
        unsigned v = version();
        printf("loaded libfabric %u.%u %s\n", v >> 16, v & 0xffff, info.dli_fname);
    }
    fflush(stdout);
}

/* Opens rank's FIFOs of those ONESIDED_BENCH_TURNS names (PATH.go.RANK,
 * PATH.done), says this rank is ready and waits for its first turn (nothing
 * without the variable). */
static void turns_open(int rank) {
    const char *path = getenv("ONESIDED_BENCH_TURNS");
    char name[4096];
    if (!path) return;
    snprintf(name, sizeof name, "%s.go.%d", path, rank);
    turn_go = open(name, O_RDONLY);
    snprintf(name, sizeof name, "%s.done", path);
    turn_done = open(name, O_WRONLY);
    if (turn_go < 0 || turn_done < 0) {
        perror("onesided-bench peer: turn FIFOs");
        exit(1);
    }
    turn_pass();
}

/* Rank 0 prints `SUITE CASE BYTES MEDIAN_US MIN_US MAX_US` for the n times t
 * (seconds; sorted here); then, under turns, every rank ends its turn after
 * a barrier: a rank waiting for its turn is outside MPI, and a peer whose
 * passive-target operations need its progress would wait forever. */
static void report(int rank, const char *suite, const char *name, long bytes, double *t, int n) {
    if (rank == 0) {
        qsort(t, n, sizeof *t, cmp);
        printf("%s %s %ld %.3f %.3f %.3f\n", suite, name, bytes, t[n / 2] * 1e6, t[0] * 1e6, t[n - 1] * 1e6);
        fflush(stdout);
    }
    if (turn_go < 0) return;
    MPI_Barrier(MPI_COMM_WORLD);
    turn_pass();
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
