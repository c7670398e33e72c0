/* MPICH peer of onesided-bench's collectives suite: MPI's own collectives,
 * measured the way an MPI user measures them.
 *   collectives collectives [SCALE]
 * SCALE (default 1.0) multiplies every repetition count (at least 3 reps).
 * Cases, on doubles, at 8 B - 32 MiB per rank (barrier: 0 B only):
 * barrier, bcast (root 0), reduce (sum to root 0), allreduce (sum),
 * allgather, alltoallv (equal counts; the size is per pair, and only up to
 * 2 MiB: 32 MiB per pair would need 2 * N * 32 MiB per rank) and iallreduce
 * (sum, then MPI_Wait). Reps per size: 16 MiB / size, clamped to 3 - 200
 * (barrier: 1000), times SCALE. Warm-up reps (10%, at least 2), each after
 * a barrier, are untimed but give the first margin: twice the slowest, plus
 * 20 us. Timed reps start from a common instant, as ReproMPI times
 * collectives (window-based): before each rep the ranks agree on the latest
 * of their clocks (an allreduce on the host's real-time clock,
 * CLOCK_REALTIME, which every process reads alike); the rep starts one
 * margin after it, and its time is the slowest rank's end minus that
 * instant. A barrier lets ranks go at different moments (MPICH's lets rank 0
 * go 0.1-0.2 us ahead), which each rank's own interval would hide or count.
 * A rep some rank reached after its start is dropped (all are kept if every
 * one is), and the next margin grows to twice the old one plus the lateness,
 * up to 1 s (MAX_MARGIN_NS): ranks outnumbering the cores come late by a time
 * slice, and with a fixed cadence one late rep made the next ones late too,
 * so that only those that caught up were kept, or, every one late, each
 * counted the backlog. Where the slowest warm-up took 1 ms or more
 * (WINDOWED_UNDER_NS), such skew does not matter and margins would double
 * the run: each rep then starts after a barrier and takes the
 * slowest rank's own interval. Rank 0 prints one line per case and size:
 *   collectives CASE BYTES MEDIAN_US MIN_US MAX_US
 * Every rep's result is checked on every rank that gets one (every element
 * up to 4 KiB per block, above that every 97th and the last, which are
 * poisoned before the rep): a wrong one aborts with exit 1.
 * Built by benches/mpich/build.sh with MPICH 5.0.2's mpicc. */
#include "common.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const long SIZES[] = {8, 64, 512, 4096, 32768, 262144, 2097152, 33554432};
static const long REPS_BYTES = 16L << 20; /* reps per size: REPS_BYTES / size */
static const long ALLTOALLV_MAX = 2L << 20;
static const long DENSE_MAX = 4096; /* blocks up to this are checked whole */
static const double POISON = -1.0;  /* never an expected value */

enum { BARRIER, BCAST, REDUCE, ALLREDUCE, ALLGATHER, ALLTOALLV, IALLREDUCE };
static const char *const CASES[] = {"barrier", "bcast", "reduce", "allreduce", "allgather", "alltoallv", "iallreduce"};

typedef struct {
    const char *suite;
    int rank, size;
    double scale;
} Bench;

/* Element i of rank r's input (reduce, allreduce, iallreduce, allgather). */
static double input(int r, long i) { return (double)((i % 1000) + r); }

/* Element i of the sum of every rank's input over n ranks. */
static double reduced(int n, long i) { return (double)n * (double)(i % 1000) + (double)n * (n - 1) / 2; }

/* Element i of the root's buffer in bcast rep rep. */
static double bcast_value(long rep, long i) { return (double)(rep * 1000 + i % 1000); }

/* Element i of the alltoallv block rank a sends to rank b. */
static double pair(int a, int b, long i) { return (double)(a * 7 + b * 3 + (i % 100)); }

static int scaled(const Bench *b, long base) { return scaled_reps(b->scale, base, 3); }

/* Nanoseconds of the host's real-time clock. */
static int64_t wall_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t max_all(int64_t v) {
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    return v;
}

static const int64_t WINDOWED_UNDER_NS = 1000000;

/* The longest margin between the ranks' agreement and a rep's start. */
static const int64_t MAX_MARGIN_NS = 1000000000;

/* How long before a rep's start a rank sleeps instead of polling the clock
 * (it wakes half of that before the start): more than any first margin, so
 * that only margins grown after late reps are slept through (see
 * SLEEP_ABOVE_NS in benches/src/suites.rs). */
static const int64_t SLEEP_ABOVE_NS = 2100000; /* 2 * WINDOWED_UNDER_NS + 100 us */

/* The timed reps' start instants (see the top of this file). */
typedef struct {
    int64_t margin, lateness; /* lateness: how late this rank came to the last rep */
    int windowed;             /* else: each rep after a barrier */
    int yielding;             /* more ranks than cores: wait yielding */
} Windows;

/* The windows after warm-up reps whose longest took longest ns here. */
static Windows windows(int64_t longest) {
    Windows w;
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    longest = max_all(longest);
    w.margin = 2 * longest + 20000;
    w.lateness = 0;
    w.windowed = longest < WINDOWED_UNDER_NS;
    w.yielding = n > sysconf(_SC_NPROCESSORS_ONLN);
    return w;
}

/* Waits for the next rep's start (into *start); whether this rank came late. */
static int wait_start(Windows *w, int64_t *start) {
    if (!w->windowed) {
        MPI_Barrier(MPI_COMM_WORLD);
        *start = wall_ns();
        return 0;
    }
    int64_t agreed[2] = {wall_ns(), w->lateness};
    MPI_Allreduce(MPI_IN_PLACE, agreed, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (agreed[1] > 0) {
        w->margin = 2 * w->margin + agreed[1];
        if (w->margin > MAX_MARGIN_NS) w->margin = MAX_MARGIN_NS;
    }
    *start = agreed[0] + w->margin;
    int64_t now = wall_ns();
    w->lateness = now > *start ? now - *start : 0;
    /* A long margin (grown after late reps) is slept through but for its
     * last half millisecond: polling all of it would take the cores from
     * ranks still on their way. */
    int64_t left = *start - now;
    if (left > SLEEP_ABOVE_NS) {
        int64_t ns = left - SLEEP_ABOVE_NS / 2;
        struct timespec d = {ns / 1000000000, ns % 1000000000};
        nanosleep(&d, NULL);
    }
    while (wall_ns() < *start)
        if (w->yielding) sched_yield();
    return w->lateness > 0;
}

/* From mine (per rep: ns from its start to this rank's end, then reps late
 * flags), the kept reps' slowest times into t (seconds); how many. */
static int slowest(int64_t *mine, int reps, double *t) {
    MPI_Allreduce(MPI_IN_PLACE, mine, 2 * reps, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    int kept = 0;
    for (int i = 0; i < reps; i++)
        if (!mine[reps + i]) t[kept++] = mine[i] * 1e-9;
    if (kept == 0)
        for (int i = 0; i < reps; i++) t[kept++] = mine[i] * 1e-9;
    return kept;
}

static void fail(const Bench *b, const char *name, long bytes, const char *what, double expected, double found) {
    fprintf(stderr, "collectives: %s %s %ld: rank %d %s expected %.17g found %.17g\n", b->suite, name, bytes,
            b->rank, what, expected, found);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* MPICH 5.0.2's MPI_Abort has been seen to return */
}

/* The checked index after i in a block of count elements: every one up to
 * DENSE_MAX bytes, above that every 97th and the last. */
static long next_checked(long i, long count) {
    if (count * (long)sizeof(double) <= DENSE_MAX || i == count - 1) return i + 1;
    return i + 97 < count ? i + 97 : count - 1;
}

static void poison(double *block, long count) {
    for (long i = 0; i < count; i = next_checked(i, count)) block[i] = POISON;
}

/* What element i of a result block of case c should hold: p is the bcast
 * rep, the rank count (sums), the owner (allgather) or the sender
 * (alltoallv, to the receiver q). */
static double expected(int c, long p, int q, long i) {
    switch (c) {
    case BCAST: return bcast_value(p, i);
    case ALLGATHER: return input((int)p, i);
    case ALLTOALLV: return pair((int)p, q, i);
    default: return reduced((int)p, i);
    }
}

/* Aborts unless got[i] == expected(c, p, q, i) at every checked i < count;
 * block < 0: the result is one block. */
static void check(const Bench *b, int c, long bytes, long rep, int block, const double *got, long count, long p,
                  int q) {
    for (long i = 0; i < count; i = next_checked(i, count)) {
        double want = expected(c, p, q, i);
        if (got[i] != want) {
            char what[128];
            if (block < 0)
                snprintf(what, sizeof what, "rep %ld, index %ld", rep, i);
            else
                snprintf(what, sizeof what, "rep %ld, block of rank %d, index %ld", rep, block, i);
            fail(b, CASES[c], bytes, what, want, got[i]);
        }
    }
}

/* Case c at bytes per rank (per pair: alltoallv; barrier: 0), checked,
 * after warm warm-up reps; times into t; how many. */
static int coll_case(const Bench *b, int c, long bytes, double *t, int reps, int warm) {
    int n = b->size, me = b->rank, count = (int)(bytes / (long)sizeof(double));
    long blocks = c == ALLGATHER || c == ALLTOALLV ? n : 1;
    /* (+1: a barrier's 0 elements must not read as out of memory) */
    double *send = malloc(sizeof(double) * count * (c == ALLTOALLV ? n : 1) + 1);
    double *recv = malloc(sizeof(double) * count * blocks + 1);
    int *counts = malloc(sizeof(int) * n), *displs = malloc(sizeof(int) * n);
    int64_t *mine = malloc(sizeof(int64_t) * 2 * reps), longest = 0, start = 0;
    Windows w = {0, 0, 0, 0};
    if (!send || !recv || !counts || !displs || !mine) {
        fprintf(stderr, "collectives: %s %s %ld: rank %d out of memory\n", b->suite, CASES[c], bytes, me);
        MPI_Abort(MPI_COMM_WORLD, 1);
        exit(1);
    }
    for (int r = 0; r < n; r++) {
        counts[r] = count;
        displs[r] = r * count;
    }
    if (c == ALLTOALLV)
        for (int r = 0; r < n; r++)
            for (long i = 0; i < count; i++) send[(long)r * count + i] = pair(me, r, i);
    else if (c != BCAST)
        for (long i = 0; i < count; i++) send[i] = input(me, i);
    for (int i = -warm; i < reps; i++) {
        long rep = i + warm;
        if (c == BCAST && me == 0)
            for (long k = 0; k < count; k++) recv[k] = bcast_value(rep, k);
        else if (c != BCAST && (c != REDUCE || me == 0))
            for (long k = 0; k < blocks; k++) poison(recv + k * count, count);
        if (i < 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            start = wall_ns();
        } else {
            if (i == 0) w = windows(longest);
            mine[reps + i] = wait_start(&w, &start);
        }
        if (c == BARRIER)
            MPI_Barrier(MPI_COMM_WORLD);
        else if (c == BCAST)
            MPI_Bcast(recv, count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        else if (c == REDUCE)
            MPI_Reduce(send, recv, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        else if (c == ALLREDUCE)
            MPI_Allreduce(send, recv, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else if (c == ALLGATHER)
            MPI_Allgather(send, count, MPI_DOUBLE, recv, count, MPI_DOUBLE, MPI_COMM_WORLD);
        else if (c == ALLTOALLV)
            MPI_Alltoallv(send, counts, displs, MPI_DOUBLE, recv, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
        else {
            MPI_Request q;
            MPI_Iallreduce(send, recv, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
        int64_t took = wall_ns() - start;
        if (i < 0 && took > longest) longest = took;
        if (i >= 0) mine[i] = took;
        if (c == BCAST)
            check(b, c, bytes, rep, -1, recv, count, rep, 0);
        else if (c == ALLGATHER || c == ALLTOALLV)
            for (int r = 0; r < n; r++) check(b, c, bytes, rep, r, recv + (long)r * count, count, r, me);
        else if (c != REDUCE || me == 0)
            check(b, c, bytes, rep, -1, recv, count, n, 0);
    }
    int kept = slowest(mine, reps, t);
    free(mine);
    free(displs);
    free(counts);
    free(recv);
    free(send);
    return kept;
}

static void collectives_suite(const Bench *b) {
    /* The scale shrinks the timed reps only; a tenth of the unscaled
     * count warms up (as onesided's collective_reps). */
    int reps = scaled(b, 1000);
    double *t = malloc(sizeof(double) * (reps > scaled(b, 200) ? reps : scaled(b, 200)));
    report(b->rank, b->suite, CASES[BARRIER], 0, t, coll_case(b, BARRIER, 0, t, reps, warmup(1000)));
    /* Size by size, in onesided's order (turns pair case k with case k). */
    static const int ORDER[] = {BCAST, REDUCE, ALLREDUCE, IALLREDUCE, ALLGATHER, ALLTOALLV};
    for (size_t s = 0; s < sizeof SIZES / sizeof *SIZES; s++)
        for (size_t o = 0; o < sizeof ORDER / sizeof *ORDER; o++) {
            int c = ORDER[o];
            long bytes = SIZES[s], base_reps = REPS_BYTES / bytes;
            if (c == ALLTOALLV && bytes > ALLTOALLV_MAX) continue;
            base_reps = base_reps < 3 ? 3 : base_reps > 200 ? 200 : base_reps;
            reps = scaled(b, base_reps);
            report(b->rank, b->suite, CASES[c], bytes, t, coll_case(b, c, bytes, t, reps, warmup((int)base_reps)));
        }
    free(t);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    Bench b;
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    print_loaded(b.rank);
    turns_open(b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.size);
    b.suite = argc > 1 ? argv[1] : "";
    int ok = parse_scale(argc, argv, &b.scale);
    if (ok && strcmp(b.suite, "collectives") == 0)
        collectives_suite(&b);
    else
        bad_usage(b.rank, "collectives", ok, argc, argv, "collectives collectives [SCALE]");
    MPI_Finalize();
    return 0;
}
