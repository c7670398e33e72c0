/* MPICH peer of sam (benches/src/bin/sam.rs): the same Conjugate Gradient
 * on a 2-D 5-point Laplacian (ELL, 5 entries a row; per iteration a local
 * SpMV, an allgatherv of the direction and two allreduces) that goes from
 * NS to NT processes while it iterates, written with MPI as the study did:
 *   malleable GRID BEFORE OVERLAP ITERATIONS NT METHOD STRATEGY
 * under `mpiexec -n NS`. METHOD: col (MPI_Alltoallv; MPI_Ialltoallv in the
 * background), rma_lock (MPI_Win_create, a lock per source, MPI_Get,
 * MPI_Win_free) or rma_lock_all (one MPI_Win_lock_all epoch). STRATEGY:
 * blocking, thread (a pthread under MPI_THREAD_MULTIPLE runs the blocking
 * method on a duplicate of the merged communicator), nonblocking (the
 * nonblocking calls tested between iterations) or wait_targets (the
 * study's Wait Targets: completion is an MPI_Ibarrier tested between
 * iterations). Merge process management: a growth spawns NT - NS processes
 * (MPI_Comm_spawn of this program) and merges them
 * (MPI_Intercomm_merge); a shrink keeps the first NT and splits them off
 * (MPI_Comm_split). The matrix moves by METHOD and STRATEGY (it is
 * constant); x, r, p move by METHOD blocking at the end; the iteration and
 * r.r by MPI_Bcast. Sources iterate while the move is pending, at most
 * OVERLAP iterations, agreeing on its end by an allreduce each iteration
 * (as MaM's checkpoints do). Rank 0 prints the JSON line sam prints and
 * exits 1 unless the residual agrees with a serial run's to 1e-9.
 * Built by benches/mpich/build.sh with MPICH 5.0.2's mpicc. */
#include "common.h"
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define ROW 5

enum method { COL, RMA_LOCK, RMA_LOCK_ALL };
enum strategy { BLOCKING, THREAD, NONBLOCKING, WAIT_TARGETS };

/* The block of `len` elements of rank `i` of `parts` (onesided-mam's). */
static void block(long len, int parts, int i, long *start, long *count) {
    if (i >= parts) {
        *start = 0, *count = 0;
        return;
    }
    long q = len / parts, r = len % parts;
    *start = i * q + (i < r ? i : r);
    *count = q + (i < r);
}

/* Rows [start, start + count) of the matrix of an n x n grid. */
static void matrix(long n, long start, long count, double *values, int *columns) {
    for (long k = 0; k < count; k++) {
        long i = start + k, x = i % n, y = i / n;
        double *v = values + k * ROW;
        int *c = columns + k * ROW;
        for (int e = 0; e < ROW; e++) v[e] = 0.0, c[e] = (int)i;
        v[0] = 4.0;
        long nb[4] = {x > 0 ? i - 1 : -1, x + 1 < n ? i + 1 : -1, y > 0 ? i - n : -1,
                      y + 1 < n ? i + n : -1};
        for (int e = 0; e < 4; e++)
            if (nb[e] >= 0) v[e + 1] = -1.0, c[e + 1] = (int)nb[e];
    }
}

static void spmv(long rows, const double *values, const int *columns, const double *p, double *q) {
    for (long k = 0; k < rows; k++) {
        double s = 0.0;
        for (int e = 0; e < ROW; e++) s += values[k * ROW + e] * p[columns[k * ROW + e]];
        q[k] = s;
    }
}

static double dot(long len, const double *a, const double *b) {
    double s = 0.0;
    for (long i = 0; i < len; i++) s += a[i] * b[i];
    return s;
}

/* The process's part of the problem. */
struct state {
    long n, rows, mine; /* grid side, rows, local rows */
    double *values, *x, *r, *p, *q, *whole;
    int *columns;
    double it, rr; /* the replicated parameters */
};

/* One CG iteration over comm (size, block of `rows` over it). */
static void iterate(struct state *s, MPI_Comm comm) {
    int size;
    MPI_Comm_size(comm, &size);
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    for (int i = 0; i < size; i++) {
        long start, count;
        block(s->rows, size, i, &start, &count);
        counts[i] = (int)count, displs[i] = (int)start;
    }
    MPI_Allgatherv(s->p, (int)s->mine, MPI_DOUBLE, s->whole, counts, displs, MPI_DOUBLE, comm);
    spmv(s->mine, s->values, s->columns, s->whole, s->q);
    double local = dot(s->mine, s->p, s->q), pq;
    MPI_Allreduce(&local, &pq, 1, MPI_DOUBLE, MPI_SUM, comm);
    double alpha = s->rr / pq;
    for (long i = 0; i < s->mine; i++) s->x[i] += alpha * s->p[i], s->r[i] -= alpha * s->q[i];
    local = dot(s->mine, s->r, s->r);
    double next;
    MPI_Allreduce(&local, &next, 1, MPI_DOUBLE, MPI_SUM, comm);
    for (long i = 0; i < s->mine; i++) s->p[i] = s->r[i] + next / s->rr * s->p[i];
    s->rr = next, s->it += 1;
    free(counts), free(displs);
}

static double serial(long n, int iterations) {
    struct state s = {.n = n, .rows = n * n, .mine = n * n, .rr = (double)(n * n)};
    long len = s.rows;
    s.values = malloc(len * ROW * sizeof(double)), s.columns = malloc(len * ROW * sizeof(int));
    s.x = calloc(len, sizeof(double)), s.r = malloc(len * sizeof(double));
    s.p = malloc(len * sizeof(double)), s.q = malloc(len * sizeof(double));
    matrix(n, 0, len, s.values, s.columns);
    for (long i = 0; i < len; i++) s.r[i] = s.p[i] = 1.0;
    for (int k = 0; k < iterations; k++) {
        spmv(len, s.values, s.columns, s.p, s.q);
        double alpha = s.rr / dot(len, s.p, s.q);
        for (long i = 0; i < len; i++) s.x[i] += alpha * s.p[i], s.r[i] -= alpha * s.q[i];
        double next = dot(len, s.r, s.r);
        for (long i = 0; i < len; i++) s.p[i] = s.r[i] + next / s.rr * s.p[i];
        s.rr = next;
    }
    return sqrt(s.rr);
}

/* One array's move from the sources' blocks to the targets' over the
 * merged communicator: `width` elements of `type` a row. */
struct move {
    void *from, *to;
    int width;
    MPI_Datatype type;
    size_t size; /* bytes of an element */
    /* In flight. */
    MPI_Win win;
    MPI_Request *requests;
    int nrequests;
    int *sc, *sd, *rc, *rd; /* alltoallv counts and displacements */
};

/* Where this process stands. */
struct plan {
    MPI_Comm merged;
    int m, size, ns, nt; /* rank in merged, its size */
    long rows, src_start, src_count, dst_start, dst_count;
    enum method method;
};

static void col_counts(const struct plan *pl, struct move *mv) {
    mv->sc = calloc(pl->size, sizeof(int)), mv->sd = calloc(pl->size, sizeof(int));
    mv->rc = calloc(pl->size, sizeof(int)), mv->rd = calloc(pl->size, sizeof(int));
    for (int o = 0; o < pl->size; o++) {
        long ts, tc, ss, scount;
        block(pl->rows, pl->nt, o, &ts, &tc);
        long lo = ts > pl->src_start ? ts : pl->src_start;
        long hi = ts + tc < pl->src_start + pl->src_count ? ts + tc : pl->src_start + pl->src_count;
        if (hi > lo) mv->sc[o] = (int)((hi - lo) * mv->width), mv->sd[o] = (int)((lo - pl->src_start) * mv->width);
        block(pl->rows, pl->ns, o, &ss, &scount);
        lo = ss > pl->dst_start ? ss : pl->dst_start;
        hi = ss + scount < pl->dst_start + pl->dst_count ? ss + scount : pl->dst_start + pl->dst_count;
        if (hi > lo) mv->rc[o] = (int)((hi - lo) * mv->width), mv->rd[o] = (int)((lo - pl->dst_start) * mv->width);
    }
}

/* The rows of source `s`'s block this process reads: [lo, hi). */
static int reads(const struct plan *pl, int s, long *ss, long *lo, long *hi) {
    long scount;
    block(pl->rows, pl->ns, s, ss, &scount);
    *lo = *ss > pl->dst_start ? *ss : pl->dst_start;
    *hi = *ss + scount < pl->dst_start + pl->dst_count ? *ss + scount : pl->dst_start + pl->dst_count;
    return pl->dst_count > 0 && *hi > *lo;
}

/* Closes the move's access epochs (RMA). */
static void unlock(const struct plan *pl, struct move *mv) {
    long ss, lo, hi;
    if (pl->method == RMA_LOCK_ALL) MPI_Win_unlock_all(mv->win);
    if (pl->method == RMA_LOCK)
        for (int s = 0; s < pl->ns; s++)
            if (reads(pl, s, &ss, &lo, &hi)) MPI_Win_unlock(s, mv->win);
}

/* Starts the move over comm: posts its nonblocking calls
 * (`nonblocking`: MPI_Ialltoallv, or MPI_Rget under the locks) or runs
 * it (MPI_Alltoallv, or MPI_Get and the unlocks). RMA targets read each
 * intersecting source (the study's Algorithm 1); the window stays until
 * move_free. */
static void move_start(const struct plan *pl, struct move *mv, MPI_Comm comm, int nonblocking) {
    mv->nrequests = 0;
    mv->requests = malloc((pl->ns + 1) * sizeof(MPI_Request));
    if (pl->method == COL) {
        col_counts(pl, mv);
        if (nonblocking)
            MPI_Ialltoallv(mv->from, mv->sc, mv->sd, mv->type, mv->to, mv->rc, mv->rd, mv->type, comm,
                           &mv->requests[mv->nrequests++]);
        else
            MPI_Alltoallv(mv->from, mv->sc, mv->sd, mv->type, mv->to, mv->rc, mv->rd, mv->type, comm);
        return;
    }
    MPI_Win_create(mv->from, (MPI_Aint)(pl->src_count * mv->width * mv->size), (int)mv->size,
                   MPI_INFO_NULL, comm, &mv->win);
    if (pl->method == RMA_LOCK_ALL) MPI_Win_lock_all(MPI_MODE_NOCHECK, mv->win);
    long ss, lo, hi;
    for (int s = 0; s < pl->ns; s++) {
        if (!reads(pl, s, &ss, &lo, &hi)) continue;
        if (pl->method == RMA_LOCK) MPI_Win_lock(MPI_LOCK_SHARED, s, MPI_MODE_NOCHECK, mv->win);
        char *at = (char *)mv->to + (lo - pl->dst_start) * mv->width * mv->size;
        int count = (int)((hi - lo) * mv->width);
        MPI_Aint disp = (MPI_Aint)((lo - ss) * mv->width);
        if (nonblocking)
            MPI_Rget(at, count, mv->type, s, disp, count, mv->type, mv->win, &mv->requests[mv->nrequests++]);
        else
            MPI_Get(at, count, mv->type, s, disp, count, mv->type, mv->win);
    }
    if (!nonblocking) unlock(pl, mv);
}

/* Whether the move's posted calls have completed (tests them). */
static int move_test(struct move *mv) {
    int done = 1;
    if (mv->nrequests > 0) MPI_Testall(mv->nrequests, mv->requests, &done, MPI_STATUSES_IGNORE);
    return done;
}

/* Waits for a nonblocking move's calls and closes its epochs. */
static void move_wait(const struct plan *pl, struct move *mv) {
    MPI_Waitall(mv->nrequests, mv->requests, MPI_STATUSES_IGNORE);
    if (pl->method != COL) unlock(pl, mv);
    mv->nrequests = 0;
}

/* Frees the move's window (collective; RMA) or its counts (col). */
static void move_free(const struct plan *pl, struct move *mv) {
    if (pl->method != COL) MPI_Win_free(&mv->win);
    else free(mv->sc), free(mv->sd), free(mv->rc), free(mv->rd);
    free(mv->requests);
}

/* The helper thread of `thread`: the matrix's blocking move. */
struct helper {
    const struct plan *pl;
    struct move *moves;
    MPI_Comm comm;
    atomic_int done;
};

static void *helper_main(void *arg) {
    struct helper *h = arg;
    for (int k = 0; k < 2; k++) {
        move_start(h->pl, &h->moves[k], h->comm, 0);
        move_free(h->pl, &h->moves[k]);
    }
    atomic_store(&h->done, 1);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: malleable GRID BEFORE OVERLAP ITERATIONS NT METHOD STRATEGY\n");
        return 2;
    }
    long n = atol(argv[1]);
    int before = atoi(argv[2]), overlap = atoi(argv[3]), iterations = atoi(argv[4]), nt = atoi(argv[5]);
    enum method method = !strcmp(argv[6], "col") ? COL : !strcmp(argv[6], "rma_lock") ? RMA_LOCK
                         : !strcmp(argv[6], "rma_lock_all")                        ? RMA_LOCK_ALL
                                                                                   : -1;
    enum strategy strategy = !strcmp(argv[7], "blocking") ? BLOCKING : !strcmp(argv[7], "thread") ? THREAD
                             : !strcmp(argv[7], "nonblocking")                                   ? NONBLOCKING
                             : !strcmp(argv[7], "wait_targets")                                  ? WAIT_TARGETS
                                                                                                 : -1;
    if (n < 2 || nt < 1 || before < 1 || before >= iterations || (int)method < 0 || (int)strategy < 0) {
        fprintf(stderr, "malleable: bad arguments\n");
        return 2;
    }
    int provided;
    MPI_Init_thread(&argc, &argv, strategy == THREAD ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    if (strategy == THREAD && provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "malleable: no MPI_THREAD_MULTIPLE\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    int joined = parent != MPI_COMM_NULL, ns, rank;
    if (joined) MPI_Comm_remote_size(parent, &ns);
    else MPI_Comm_size(MPI_COMM_WORLD, &ns);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (!joined) print_loaded(rank);

    struct state s = {.n = n, .rows = n * n, .rr = (double)(n * n)};
    struct plan pl = {.rows = s.rows, .ns = ns, .nt = nt, .method = method};
    /* The sources' blocks (empty on a joined process). */
    block(s.rows, ns, joined ? ns : rank, &pl.src_start, &pl.src_count);
    s.mine = pl.src_count;
    s.values = malloc((s.mine * ROW + 1) * sizeof(double)), s.columns = malloc((s.mine * ROW + 1) * sizeof(int));
    s.x = calloc(s.mine + 1, sizeof(double)), s.r = malloc((s.mine + 1) * sizeof(double));
    s.p = malloc((s.mine + 1) * sizeof(double)), s.q = malloc((s.mine + 1) * sizeof(double));
    s.whole = malloc(s.rows * sizeof(double));
    matrix(n, pl.src_start, s.mine, s.values, s.columns);
    for (long i = 0; i < s.mine; i++) s.r[i] = s.p[i] = 1.0;

    double t_before = 0, t_during = 0, t0;
    int n_it = 0;
    if (!joined) {
        /* The iteration time without a move: the later half of the
         * iterations before (the first ones touch their pages first). */
        for (int k = 0; k < before; k++) {
            t0 = MPI_Wtime();
            iterate(&s, MPI_COMM_WORLD);
            if (k >= before / 2) t_before += MPI_Wtime() - t0;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* Process management: spawn and merge, or keep the first NT. */
    double t_spawn = MPI_Wtime();
    if (joined) {
        MPI_Intercomm_merge(parent, 1, &pl.merged);
    } else if (nt > ns) {
        MPI_Comm inter;
        MPI_Comm_spawn(argv[0], argv + 1, nt - ns, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                       MPI_ERRCODES_IGNORE);
        MPI_Intercomm_merge(inter, 0, &pl.merged);
        MPI_Comm_free(&inter);
    } else {
        MPI_Comm_dup(MPI_COMM_WORLD, &pl.merged);
    }
    t_spawn = MPI_Wtime() - t_spawn;
    MPI_Comm_rank(pl.merged, &pl.m);
    MPI_Comm_size(pl.merged, &pl.size);
    block(s.rows, nt, pl.m, &pl.dst_start, &pl.dst_count);
    int source = pl.m < ns;
    double *values = malloc((pl.dst_count * ROW + 1) * sizeof(double));
    int *columns = malloc((pl.dst_count * ROW + 1) * sizeof(int));
    struct move moves[5] = {
        {.from = s.values, .to = values, .width = ROW, .type = MPI_DOUBLE, .size = sizeof(double)},
        {.from = s.columns, .to = columns, .width = ROW, .type = MPI_INT, .size = sizeof(int)},
    };
    /* The matrix's move, by strategy; sources iterate meanwhile. */
    double t_redis = MPI_Wtime();
    struct helper h = {.pl = &pl, .moves = moves};
    pthread_t thread;
    MPI_Request barrier = MPI_REQUEST_NULL;
    if (strategy == BLOCKING) {
        for (int k = 0; k < 2; k++) {
            move_start(&pl, &moves[k], pl.merged, 0);
            move_free(&pl, &moves[k]);
        }
    } else {
        if (strategy == THREAD) {
            MPI_Comm_dup(pl.merged, &h.comm);
            pthread_create(&thread, NULL, helper_main, &h);
        } else {
            for (int k = 0; k < 2; k++) move_start(&pl, &moves[k], pl.merged, 1);
        }
        /* Sources iterate until all of them see the end (one allreduce an
         * iteration), or the budget is spent. Under Wait Targets a process
         * enters the barrier once its own reads are done, and the end is
         * the barrier's. */
        int all = 0, passed = 0;
        /* An iteration meanwhile counts with the test and agreement
         * before it, as sam counts its checkpoint. */
        while (source) {
            t0 = MPI_Wtime();
            int mine;
            if (strategy == THREAD) {
                mine = atomic_load(&h.done);
            } else {
                mine = move_test(&moves[0]) && move_test(&moves[1]);
                if (strategy == WAIT_TARGETS) {
                    if (mine && !passed) {
                        if (barrier == MPI_REQUEST_NULL) MPI_Ibarrier(pl.merged, &barrier);
                        MPI_Test(&barrier, &passed, MPI_STATUS_IGNORE);
                    }
                    mine = passed;
                }
            }
            MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            if (all || n_it >= overlap || before + n_it >= iterations) break;
            iterate(&s, MPI_COMM_WORLD);
            t_during += MPI_Wtime() - t0;
            n_it++;
        }
        if (strategy == THREAD) {
            pthread_join(thread, NULL);
            MPI_Comm_free(&h.comm);
        } else {
            for (int k = 0; k < 2; k++) move_wait(&pl, &moves[k]);
            /* Under Wait Targets every process passes the barrier once
             * (a source that saw it end has passed it). */
            if (strategy == WAIT_TARGETS && !passed) {
                if (barrier == MPI_REQUEST_NULL) MPI_Ibarrier(pl.merged, &barrier);
                MPI_Wait(&barrier, MPI_STATUS_IGNORE);
            }
            for (int k = 0; k < 2; k++) move_free(&pl, &moves[k]);
        }
    }
    double t_background = MPI_Wtime() - t_redis;
    /* The end of the cycle: x, r, p blocking, the parameters by broadcast. */
    double t_end = MPI_Wtime();
    double *x = malloc((pl.dst_count + 1) * sizeof(double)), *r = malloc((pl.dst_count + 1) * sizeof(double));
    double *p = malloc((pl.dst_count + 1) * sizeof(double));
    double *from[3] = {s.x, s.r, s.p}, *to[3] = {x, r, p};
    for (int k = 0; k < 3; k++) {
        moves[2 + k] = (struct move){.from = from[k], .to = to[k], .width = 1, .type = MPI_DOUBLE, .size = sizeof(double)};
        move_start(&pl, &moves[2 + k], pl.merged, 0);
        move_free(&pl, &moves[2 + k]);
    }
    double params[2] = {s.it, s.rr};
    MPI_Bcast(params, 2, MPI_DOUBLE, 0, pl.merged);
    t_end = MPI_Wtime() - t_end;
    t_redis = MPI_Wtime() - t_redis;
    /* The targets go on alone; the others retire. */
    MPI_Comm app;
    MPI_Comm_split(pl.merged, pl.m < nt ? 0 : MPI_UNDEFINED, pl.m, &app);
    if (app == MPI_COMM_NULL) {
        MPI_Comm_free(&pl.merged);
        MPI_Finalize();
        return 0;
    }
    s.mine = pl.dst_count, s.values = values, s.columns = columns, s.x = x, s.r = r, s.p = p;
    free(s.q), s.q = malloc((s.mine + 1) * sizeof(double));
    s.it = params[0], s.rr = params[1];
    int done = (int)s.it;
    t0 = MPI_Wtime();
    for (int k = done; k < iterations; k++) iterate(&s, app);
    double t_after = MPI_Wtime() - t0;
    /* The most over the targets (joined ones did not iterate meanwhile). */
    double it_during = n_it ? t_during * 1e3 / n_it : 0.0, it_before = before ? t_before * 1e3 / (before - before / 2) : 0.0;
    double mine[5] = {n_it, n_it ? it_during / it_before : 0.0, it_during, t_spawn, t_redis}, most[5];
    MPI_Allreduce(mine, most, 5, MPI_DOUBLE, MPI_MAX, app);
    int me;
    MPI_Comm_rank(app, &me);
    int status = 0;
    if (me == 0) {
        double residual = sqrt(s.rr), reference = serial(n, iterations);
        printf("{\"ns\":%d,\"nt\":%d,\"method\":\"%s\",\"strategy\":\"%s\",\"rows\":%ld,"
               "\"spawn_ms\":%.6f,\"redis_ms\":%.6f,\"redis_background_ms\":%.6f,\"redis_end_ms\":%.6f,"
               "\"it_before_ms\":%.6f,\"it_during_ms\":%.6f,\"it_after_ms\":%.6f,\"omega\":%.6f,"
               "\"n_it\":%.0f,\"residual\":%.17g,\"reference\":%.17g}\n",
               ns, nt, argv[6], argv[7], s.rows, most[3] * 1e3, most[4] * 1e3, t_background * 1e3, t_end * 1e3,
               it_before, most[2], iterations > done ? t_after * 1e3 / (iterations - done) : 0.0,
               most[0] > 0 ? most[1] : 1.0, most[0], residual, reference);
        fflush(stdout);
        if (fabs(residual - reference) > 1e-9 * fmax(fabs(residual), fabs(reference))) {
            fprintf(stderr, "malleable: residual %g differs from the serial run's %g\n", residual, reference);
            status = 1;
        }
    }
    MPI_Comm_free(&app);
    MPI_Comm_free(&pl.merged);
    MPI_Finalize();
    return status;
}
