/* MPICH peer of onesided-bench: the same suites (window, get, put, atomic,
 * ibarrier), measured the way an MPI user measures them.
 *   rma SUITE [SCALE]
 * SCALE (default 1.0) multiplies every repetition count (at least 5 reps).
 * Every rank is an origin at once: rank r targets (r + 1) % N and is written
 * by (r + N - 1) % N. Warm-up reps (10%, at least 2) are untimed; times are
 * MPI_Wtime on rank 0, which prints one line per case:
 *   SUITE CASE BYTES MEDIAN_US MIN_US MAX_US
 * get, put and atomic run every case on a created and an allocated window
 * and print the faster (by median); which one won goes to stderr.
 * Every value read or written is checked: a wrong one aborts with exit 1.
 * Built by benches/mpich/build.sh with MPICH 5.0.2's mpicc. */
#include "common.h"
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NBUF = 8 };                           /* ops per bandwidth rep */
static const long WINDOW_BYTES = 1L << 20;   /* window suite */
static const long XFER_WIN = 8L << 20;       /* get and put windows */
static const long XFER_MAX = 4L << 20;       /* largest get / put */
static const long ATOMIC_WIN = 64;
static const char *const FLAVOURS[2] = {"created", "allocated"};

typedef struct {
    const char *suite;
    int rank, size, target, source;
    double scale;
} Bench;

static double median(double *t, int n) {
    qsort(t, n, sizeof *t, cmp);
    return t[n / 2];
}

static unsigned char pattern(int rank, long i) { return (unsigned char)((i * 31 + rank * 17 + 5) % 251); }

static int scaled(const Bench *b, long base) { return scaled_reps(b->scale, base, 5); }

static void fail(const Bench *b, const char *name, const char *what, double expected, double found) {
    fprintf(stderr, "rma: %s %s: rank %d %s expected %.17g found %.17g\n", b->suite, name, b->rank, what,
            expected, found);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* MPICH 5.0.2's MPI_Abort sometimes returns */
}

/* Aborts unless got[i] == pattern(owner, disp + i) for every i < n. */
static void check_bytes(const Bench *b, const char *name, const char *what, const unsigned char *got, long n,
                        int owner, long disp) {
    for (long i = 0; i < n; i++)
        if (got[i] != pattern(owner, disp + i)) {
            char where[256];
            snprintf(where, sizeof where, "%s, byte %ld", what, disp + i);
            fail(b, name, where, pattern(owner, disp + i), got[i]);
        }
}

/* ---- window: the cost of a usable window ---------------------------- */

enum { CREATE_FREE, CREATE_FREE_BARE, ALLOCATE_FREE, ATTACH_DETACH, RECREATE_FREE };
static const char *const WINDOW_CASES[] = {"create_free", "create_free_bare", "allocate_free", "attach_detach",
                                           "recreate_free"};

/* Gets 8 bytes at disp from the target, where its byte 64 lies, and checks them. */
static void get_checked(const Bench *b, const char *name, MPI_Win w, MPI_Aint disp) {
    unsigned char got[8];
    MPI_Win_lock_all(0, w);
    MPI_Get(got, 8, MPI_BYTE, b->target, disp, 8, MPI_BYTE, w);
    MPI_Win_unlock_all(w);
    check_bytes(b, name, "get from the target", got, 8, b->target, 64);
}

static void window_rep(const Bench *b, int c, unsigned char *buf, MPI_Win dynamic, MPI_Aint *addr) {
    const char *name = WINDOW_CASES[c];
    MPI_Win w;
    if (c == CREATE_FREE || c == RECREATE_FREE) {
        MPI_Win_create(buf, WINDOW_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        get_checked(b, name, w, 64);
        MPI_Win_free(&w);
    } else if (c == CREATE_FREE_BARE) {
        MPI_Win_create(buf, WINDOW_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        MPI_Win_free(&w);
    } else if (c == ALLOCATE_FREE) {
        unsigned char *base;
        MPI_Win_allocate(WINDOW_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
        /* Stores to window memory become visible to peers through
         * MPI_Win_sync inside an epoch, then the barrier (unified model). */
        MPI_Win_lock_all(0, w);
        for (long i = 0; i < 128; i++) base[i] = pattern(b->rank, i);
        MPI_Win_sync(w);
        MPI_Barrier(MPI_COMM_WORLD);
        unsigned char got[8];
        MPI_Get(got, 8, MPI_BYTE, b->target, 64, 8, MPI_BYTE, w);
        MPI_Win_unlock_all(w);
        check_bytes(b, name, "get from the target", got, 8, b->target, 64);
        MPI_Win_free(&w);
    } else {
        MPI_Aint mine;
        MPI_Win_attach(dynamic, buf, WINDOW_BYTES);
        MPI_Get_address(buf, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, addr, 1, MPI_AINT, MPI_COMM_WORLD);
        get_checked(b, name, dynamic, MPI_Aint_add(addr[b->target], 64));
        MPI_Barrier(MPI_COMM_WORLD); /* nobody detaches while a peer reads */
        MPI_Win_detach(dynamic, buf);
    }
}

static void window_suite(const Bench *b) {
    int reps = scaled(b, 200), warm = warmup(reps);
    double *t = malloc(sizeof(double) * reps);
    MPI_Aint *addr = malloc(sizeof(MPI_Aint) * b->size);
    unsigned char *buf = malloc(WINDOW_BYTES);
    for (long i = 0; i < WINDOW_BYTES; i++) buf[i] = pattern(b->rank, i);
    for (int c = CREATE_FREE; c <= RECREATE_FREE; c++) {
        MPI_Win dynamic = MPI_WIN_NULL;
        if (c == ATTACH_DETACH) MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dynamic);
        for (int i = -warm; i < reps; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double s = MPI_Wtime();
            window_rep(b, c, buf, dynamic, addr);
            if (i >= 0) t[i] = MPI_Wtime() - s;
        }
        if (c == ATTACH_DETACH) MPI_Win_free(&dynamic);
        report(b->rank, b->suite, WINDOW_CASES[c], WINDOW_BYTES, t, reps);
    }
    free(buf);
    free(addr);
    free(t);
}

/* ---- get and put: latency and bandwidth ----------------------------- */

/* LOCK_ALL_FLUSH_LOCAL (put only): completion at the origin, beside
 * LOCK_ALL_FLUSH's completion at the target. */
enum { LOCK_ALL_FLUSH, LOCK_UNLOCK, BANDWIDTH, LOCK_ALL_FLUSH_LOCAL };
static const char *const XFER_CASES[] = {"lock_all_flush", "lock_unlock", "bandwidth", "lock_all_flush_local"};

/* Displacement of op k in a rep of bytes-sized ops. */
static long xfer_disp(int k, long bytes) { return (k * bytes) % (XFER_WIN - bytes + 1); }

/* Runs warm + reps reps of case c on w into t (microseconds per op). */
static void xfer_run(const Bench *b, int put, int c, MPI_Win w, long bytes, unsigned char **local, double *t,
                     int reps) {
    int ops = c == BANDWIDTH ? NBUF : 1, warm = warmup(reps), to = b->target;
    MPI_Barrier(MPI_COMM_WORLD);
    if (c != LOCK_UNLOCK) MPI_Win_lock_all(0, w);
    for (int i = -warm; i < reps; i++) {
        double s = MPI_Wtime();
        if (c == LOCK_UNLOCK) MPI_Win_lock(MPI_LOCK_SHARED, to, 0, w);
        for (int k = 0; k < ops; k++) {
            MPI_Aint disp = xfer_disp(k, bytes);
            if (put)
                MPI_Put(local[k], (int)bytes, MPI_BYTE, to, disp, (int)bytes, MPI_BYTE, w);
            else
                MPI_Get(local[k], (int)bytes, MPI_BYTE, to, disp, (int)bytes, MPI_BYTE, w);
        }
        if (c == LOCK_UNLOCK)
            MPI_Win_unlock(to, w);
        else if (c == LOCK_ALL_FLUSH_LOCAL)
            MPI_Win_flush_local(to, w);
        else
            MPI_Win_flush(to, w);
        if (i >= 0) t[i] = (MPI_Wtime() - s) / ops;
    }
    if (c != LOCK_UNLOCK) MPI_Win_unlock_all(w);
}

/* One case at one size on one window flavour, checked; returns the median. */
static double xfer_case(const Bench *b, int put, int c, int f, MPI_Win w, unsigned char *base, long bytes,
                        unsigned char **local, double *t, int reps) {
    const char *name = XFER_CASES[c];
    int ops = c == BANDWIDTH ? NBUF : 1;
    char what[128];
    for (int k = 0; k < ops; k++) {
        long disp = xfer_disp(k, bytes);
        if (put)
            for (long i = 0; i < bytes; i++) local[k][i] = pattern(b->rank, disp + i);
        else
            memset(local[k], 0xff, bytes); /* never a pattern byte */
    }
    if (put) { /* zero the own window; the barrier in xfer_run follows */
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, b->rank, 0, w);
        memset(base, 0, XFER_WIN);
        MPI_Win_unlock(b->rank, w);
    }
    xfer_run(b, put, c, w, bytes, local, t, reps);
    if (put) {
        MPI_Barrier(MPI_COMM_WORLD); /* every put to me has completed */
        MPI_Win_lock(MPI_LOCK_SHARED, b->rank, 0, w);
        for (int k = 0; k < ops; k++) {
            snprintf(what, sizeof what, "own window after rank %d's put of %ld B (%s window, op %d)", b->source,
                     bytes, FLAVOURS[f], k);
            long disp = xfer_disp(k, bytes);
            check_bytes(b, name, what, base + disp, bytes, b->source, disp);
        }
        MPI_Win_unlock(b->rank, w);
    } else {
        for (int k = 0; k < ops; k++) {
            snprintf(what, sizeof what, "get of %ld B from rank %d (%s window, buffer %d)", bytes, b->target,
                     FLAVOURS[f], k);
            check_bytes(b, name, what, local[k], bytes, b->target, xfer_disp(k, bytes));
        }
    }
    return median(t, reps);
}

static void xfer_suite(const Bench *b, int put) {
    static const long sizes[] = {8, 64, 512, 4096, 32768, 262144, 1048576, 4194304};
    MPI_Win win[2];
    unsigned char *base[2], *local[NBUF];
    double *t[2];
    base[0] = malloc(XFER_WIN);
    if (!put)
        for (long i = 0; i < XFER_WIN; i++) base[0][i] = pattern(b->rank, i);
    MPI_Win_create(base[0], XFER_WIN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win[0]);
    MPI_Win_allocate(XFER_WIN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base[1], &win[1]);
    if (!put) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, b->rank, 0, win[1]);
        for (long i = 0; i < XFER_WIN; i++) base[1][i] = pattern(b->rank, i);
        MPI_Win_unlock(b->rank, win[1]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < NBUF; k++) local[k] = malloc(XFER_MAX);
    for (int f = 0; f < 2; f++) t[f] = malloc(sizeof(double) * scaled(b, 1000));
    for (int c = LOCK_ALL_FLUSH; c <= (put ? LOCK_ALL_FLUSH_LOCAL : BANDWIDTH); c++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            long bytes = sizes[s], base_reps = (64L << 20) / bytes;
            int reps = scaled(b, base_reps < 20 ? 20 : base_reps > 1000 ? 1000 : base_reps);
            double med[2];
            for (int f = 0; f < 2; f++) med[f] = xfer_case(b, put, c, f, win[f], base[f], bytes, local, t[f], reps);
            int best = med[1] < med[0];
            report(b->rank, b->suite, XFER_CASES[c], bytes, t[best], reps);
            if (b->rank == 0) fprintf(stderr, "rma: %s %s %ld: %s\n", b->suite, XFER_CASES[c], bytes, FLAVOURS[best]);
        }
    for (int f = 0; f < 2; f++) {
        MPI_Win_free(&win[f]);
        free(t[f]);
    }
    for (int k = 0; k < NBUF; k++) free(local[k]);
    free(base[0]);
}

/* ---- atomic: one counter per target, one origin per counter ---------- */

enum { FETCH_AND_OP, COMPARE_AND_SWAP, ACCUMULATE };
static const char *const ATOMIC_CASES[] = {"fetch_and_op_sum_u64", "compare_and_swap_u64", "accumulate_sum_f64"};

/* Case c on one window flavour, checked; returns the median. */
static double atomic_case(const Bench *b, int c, int f, MPI_Win w, const unsigned char *base, double *t, int reps) {
    const char *name = ATOMIC_CASES[c];
    int warm = warmup(reps);
    char what[128];
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, w);
    for (int i = -warm; i < reps; i++) {
        uint64_t one = 1, expected = (uint64_t)(i + warm), next = expected + 1, old = UINT64_MAX;
        double add = 1.0;
        double s = MPI_Wtime();
        if (c == FETCH_AND_OP)
            MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, b->target, 0, MPI_SUM, w);
        else if (c == COMPARE_AND_SWAP)
            MPI_Compare_and_swap(&next, &expected, &old, MPI_UINT64_T, b->target, 8, w);
        else
            MPI_Accumulate(&add, 1, MPI_DOUBLE, b->target, 16, 1, MPI_DOUBLE, MPI_SUM, w);
        MPI_Win_flush(b->target, w);
        if (i >= 0) t[i] = MPI_Wtime() - s;
        if (c != ACCUMULATE && old != expected) {
            snprintf(what, sizeof what, "rep %d on rank %d's %s window returned", i + warm, b->target, FLAVOURS[f]);
            fail(b, name, what, (double)expected, (double)old);
        }
    }
    MPI_Win_unlock_all(w);
    MPI_Barrier(MPI_COMM_WORLD); /* my source's ops have completed */
    uint64_t count;
    double sum;
    MPI_Win_lock(MPI_LOCK_SHARED, b->rank, 0, w);
    memcpy(&count, base + (c == FETCH_AND_OP ? 0 : 8), sizeof count);
    memcpy(&sum, base + 16, sizeof sum);
    MPI_Win_unlock(b->rank, w);
    double found = c == ACCUMULATE ? sum : (double)count;
    if (found != (double)(reps + warm)) {
        snprintf(what, sizeof what, "own counter in the %s window", FLAVOURS[f]);
        fail(b, name, what, reps + warm, found);
    }
    return median(t, reps);
}

static void atomic_suite(const Bench *b) {
    int reps = scaled(b, 1000);
    MPI_Win win[2];
    unsigned char *base[2];
    double *t[2];
    base[0] = malloc(ATOMIC_WIN);
    MPI_Win_create(base[0], ATOMIC_WIN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win[0]);
    MPI_Win_allocate(ATOMIC_WIN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base[1], &win[1]);
    for (int f = 0; f < 2; f++) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, b->rank, 0, win[f]);
        memset(base[f], 0, ATOMIC_WIN);
        MPI_Win_unlock(b->rank, win[f]);
        t[f] = malloc(sizeof(double) * reps);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int c = FETCH_AND_OP; c <= ACCUMULATE; c++) {
        double med[2];
        for (int f = 0; f < 2; f++) med[f] = atomic_case(b, c, f, win[f], base[f], t[f], reps);
        int best = med[1] < med[0];
        report(b->rank, b->suite, ATOMIC_CASES[c], 8, t[best], reps);
        if (b->rank == 0) fprintf(stderr, "rma: %s %s 8: %s\n", b->suite, ATOMIC_CASES[c], FLAVOURS[best]);
    }
    for (int f = 0; f < 2; f++) {
        MPI_Win_free(&win[f]);
        free(t[f]);
    }
    free(base[0]);
}

/* ---- ibarrier -------------------------------------------------------- */

static void ibarrier_suite(const Bench *b) {
    int reps = scaled(b, 1000), warm = warmup(reps);
    double *t = malloc(sizeof(double) * reps);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = -warm; i < reps; i++) {
        MPI_Request q;
        double s = MPI_Wtime();
        MPI_Ibarrier(MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (i >= 0) t[i] = MPI_Wtime() - s;
    }
    report(b->rank, b->suite, "ibarrier_wait", 0, t, reps);
    free(t);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    Bench b;
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    print_loaded(b.rank);
    turns_open(b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.size);
    b.target = (b.rank + 1) % b.size;
    b.source = (b.rank + b.size - 1) % b.size;
    b.suite = argc > 1 ? argv[1] : "";
    int ok = parse_scale(argc, argv, &b.scale);
    if (ok && strcmp(b.suite, "window") == 0)
        window_suite(&b);
    else if (ok && strcmp(b.suite, "get") == 0)
        xfer_suite(&b, 0);
    else if (ok && strcmp(b.suite, "put") == 0)
        xfer_suite(&b, 1);
    else if (ok && strcmp(b.suite, "atomic") == 0)
        atomic_suite(&b);
    else if (ok && strcmp(b.suite, "ibarrier") == 0)
        ibarrier_suite(&b);
    else
        bad_usage(b.rank, "rma", ok, argc, argv, "rma window|get|put|atomic|ibarrier [SCALE]");
    MPI_Finalize();
    return 0;
}
