/* The abi suite of onesided-bench: one MPI program of the standard ABI,
 * built once with mpicc_abi, run on MPICH's libmpi_abi.so.1 and on
 * onesided's (osrun --mpi): RMA latency under lock and lock_all + flush
 * and fence, window allocate + free, collectives small and large,
 * send/recv latency and bandwidth. Rank 0 reaches rank 1 (itself alone).
 * Usage: abi abi [SCALE]. */
#include "common.h"

#include <string.h>

#define LARGE (64 * 1024)

typedef struct {
    int rank, size, target;
    double scale;
    MPI_Win win;
    long *base;
    char *buf;
} Bench;

static int reps_of(const Bench *b, long base) { return scaled_reps(b->scale, base, 5); }

static void check(const Bench *b, int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "abi: rank %d: %s\n", b->rank, what);
        exit(1);
    }
}

/* Times reps of one RMA case at rank 0 (the others wait at the barrier
 * in report). */
typedef void (*Op)(const Bench *b, long bytes, int i);

static void op_put_lock(const Bench *b, long bytes, int i) {
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, b->target, 0, b->win);
    MPI_Put(b->buf, (int)bytes, MPI_BYTE, b->target, i % 8, (int)bytes, MPI_BYTE, b->win);
    MPI_Win_unlock(b->target, b->win);
}

static void op_get_lock(const Bench *b, long bytes, int i) {
    MPI_Win_lock(MPI_LOCK_SHARED, b->target, 0, b->win);
    MPI_Get(b->buf, (int)bytes, MPI_BYTE, b->target, i % 8, (int)bytes, MPI_BYTE, b->win);
    MPI_Win_unlock(b->target, b->win);
}

static void op_acc_lock(const Bench *b, long bytes, int i) {
    (void)bytes;
    long one = 1;
    MPI_Win_lock(MPI_LOCK_SHARED, b->target, 0, b->win);
    MPI_Accumulate(&one, 1, MPI_LONG, b->target, (i % 8) * 8, 1, MPI_LONG, MPI_SUM, b->win);
    MPI_Win_unlock(b->target, b->win);
}

static void op_put_flush(const Bench *b, long bytes, int i) {
    MPI_Put(b->buf, (int)bytes, MPI_BYTE, b->target, i % 8, (int)bytes, MPI_BYTE, b->win);
    MPI_Win_flush(b->target, b->win);
}

static void op_get_flush(const Bench *b, long bytes, int i) {
    MPI_Get(b->buf, (int)bytes, MPI_BYTE, b->target, i % 8, (int)bytes, MPI_BYTE, b->win);
    MPI_Win_flush(b->target, b->win);
}

static void op_fop_flush(const Bench *b, long bytes, int i) {
    (void)bytes;
    long one = 1, old = 0;
    MPI_Fetch_and_op(&one, &old, MPI_LONG, b->target, (i % 8) * 8, MPI_SUM, b->win);
    MPI_Win_flush(b->target, b->win);
}

static void op_cas_flush(const Bench *b, long bytes, int i) {
    (void)bytes;
    long mine = i, compare = i - 1, old = 0;
    MPI_Compare_and_swap(&mine, &compare, &old, MPI_LONG, b->target, 0, b->win);
    MPI_Win_flush(b->target, b->win);
}

static void timed(const Bench *b, const char *name, long bytes, Op op, int lock_all, int base_reps) {
    int reps = reps_of(b, base_reps), warm = warmup(reps);
    double *t = malloc(sizeof(double) * reps);
    if (b->rank == 0) {
        if (lock_all) MPI_Win_lock_all(0, b->win);
        for (int i = 0; i < warm + reps; i++) {
            double start = MPI_Wtime();
            op(b, bytes, i);
            if (i >= warm) t[i - warm] = MPI_Wtime() - start;
        }
        if (lock_all) MPI_Win_unlock_all(b->win);
    }
    report(b->rank, "abi", name, bytes, t, reps);
    free(t);
}

/* Fence epochs of one put from rank 0: every rank times the fences. */
static void put_fence(const Bench *b, long bytes) {
    int reps = reps_of(b, 2000), warm = warmup(reps);
    double *t = malloc(sizeof(double) * reps);
    for (int i = 0; i < warm + reps; i++) {
        double start = MPI_Wtime();
        MPI_Win_fence(0, b->win);
        if (b->rank == 0) MPI_Put(b->buf, (int)bytes, MPI_BYTE, b->target, 0, (int)bytes, MPI_BYTE, b->win);
        MPI_Win_fence(0, b->win);
        if (i >= warm) t[i - warm] = MPI_Wtime() - start;
    }
    report(b->rank, "abi", "put_fence", bytes, t, reps);
    free(t);
}

static void allocate_free(const Bench *b) {
    int reps = reps_of(b, 2000), warm = warmup(reps);
    double *t = malloc(sizeof(double) * reps);
    for (int i = 0; i < warm + reps; i++) {
        void *base = NULL;
        MPI_Win w;
        double start = MPI_Wtime();
        MPI_Win_allocate(1 << 20, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
        MPI_Win_free(&w);
        if (i >= warm) t[i - warm] = MPI_Wtime() - start;
    }
    report(b->rank, "abi", "win_allocate_free", 1 << 20, t, reps);
    free(t);
}

/* Send/recv between ranks 0 and 1 (rank 0 alone: to itself, which
 * needs nonblocking sends). "latency": half a ping-pong of `bytes`;
 * "bandwidth": a window of WINDOW sends of `bytes` and a one-byte
 * answer, per message. Rank 1 checks the first and last byte it got. */
#define WINDOW 16

static void sendrecv(const Bench *b, int bandwidth, long bytes, int base_reps) {
    int reps = reps_of(b, base_reps), warm = warmup(reps), peer = b->target;
    double *t = malloc(sizeof(double) * reps);
    char *msg = malloc(bytes > 0 ? bytes : 1), *got = malloc((bytes > 0 ? bytes : 1) * WINDOW);
    memset(msg, 3, bytes > 0 ? bytes : 1);
    MPI_Request reqs[2 * WINDOW];
    char ack = 0;
    int sends = bandwidth ? WINDOW : 1;
    for (int i = 0; i < warm + reps && b->rank < 2; i++) {
        double start = MPI_Wtime();
        if (b->rank == 0) {
            for (int k = 0; k < sends; k++)
                MPI_Isend(msg, (int)bytes, MPI_BYTE, peer, k, MPI_COMM_WORLD, &reqs[k]);
            if (peer == 0)
                for (int k = 0; k < sends; k++)
                    MPI_Irecv(got + k * bytes, (int)bytes, MPI_BYTE, 0, k, MPI_COMM_WORLD, &reqs[sends + k]);
            MPI_Waitall(peer == 0 ? 2 * sends : sends, reqs, MPI_STATUSES_IGNORE);
            if (peer == 1 && bandwidth)
                MPI_Recv(&ack, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else if (peer == 1)
                MPI_Recv(got, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int k = 0; k < sends; k++)
                MPI_Irecv(got + k * bytes, (int)bytes, MPI_BYTE, 0, k, MPI_COMM_WORLD, &reqs[k]);
            MPI_Waitall(sends, reqs, MPI_STATUSES_IGNORE);
            check(b, bytes == 0 || (got[0] == 3 && got[sends * bytes - 1] == 3), "send/recv data");
            if (bandwidth)
                MPI_Send(&ack, 1, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            else
                MPI_Send(msg, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
        if (i >= warm) t[i - warm] = (MPI_Wtime() - start) / (bandwidth ? WINDOW : 2);
    }
    report(b->rank, "abi", bandwidth ? "send_bandwidth" : "sendrecv_latency", bytes, t, reps);
    free(t);
    free(msg);
    free(got);
}

/* Collectives: every rank times each call after a barrier. */
enum { BARRIER, BCAST, ALLREDUCE, ALLTOALL };

static void collective(const Bench *b, int which, const char *name, long bytes, int base_reps) {
    int reps = reps_of(b, base_reps), warm = warmup(reps), n = b->size;
    double *t = malloc(sizeof(double) * reps);
    long count = bytes / 8 > 0 ? bytes / 8 : 1;
    double *in = malloc(sizeof(double) * count * n), *out = malloc(sizeof(double) * count * n);
    for (long i = 0; i < count * n; i++) in[i] = b->rank + i;
    for (int i = 0; i < warm + reps; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        switch (which) {
        case BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
        case BCAST: MPI_Bcast(in, (int)count, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
        case ALLREDUCE: MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
        default: MPI_Alltoall(in, (int)count, MPI_DOUBLE, out, (int)count, MPI_DOUBLE, MPI_COMM_WORLD); break;
        }
        if (i >= warm) t[i - warm] = MPI_Wtime() - start;
    }
    if (which == ALLREDUCE) {
        double want = (double)n * (n - 1) / 2;
        check(b, out[0] == want, "allreduce result");
    }
    report(b->rank, "abi", name, which == BARRIER ? 0 : count * 8, t, reps);
    free(t);
    free(in);
    free(out);
}

int main(int argc, char **argv) {
    Bench b;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.size);
    int scale_ok = parse_scale(argc, argv, &b.scale);
    if (!scale_ok || argc < 2 || strcmp(argv[1], "abi") != 0)
        bad_usage(b.rank, "abi", scale_ok, argc, argv, "abi abi [SCALE]");
    b.target = b.size > 1 ? 1 : 0;
    print_loaded(b.rank);
    char library[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(library, &len);
    /* MPICH's says "MPICH Version:      5.0.2" first. */
    char version[64];
    if (b.rank == 0 && sscanf(library, "MPICH Version: %63s", version) == 1) {
        printf("loaded mpich %s\n", version);
        fflush(stdout);
    }
    b.buf = malloc(LARGE);
    memset(b.buf, 7, LARGE);
    MPI_Win_allocate(LARGE + 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &b.base, &b.win);
    memset(b.base, 0, LARGE + 64);
    MPI_Barrier(MPI_COMM_WORLD);
    turns_open(b.rank);
    timed(&b, "put_lock_unlock", 8, op_put_lock, 0, 5000);
    timed(&b, "get_lock_unlock", 8, op_get_lock, 0, 5000);
    timed(&b, "accumulate_lock_unlock", 8, op_acc_lock, 0, 5000);
    timed(&b, "put_lock_all_flush", 8, op_put_flush, 1, 10000);
    timed(&b, "put_lock_all_flush", LARGE, op_put_flush, 1, 1000);
    timed(&b, "get_lock_all_flush", 8, op_get_flush, 1, 10000);
    timed(&b, "get_lock_all_flush", LARGE, op_get_flush, 1, 1000);
    timed(&b, "fetch_and_op_flush", 8, op_fop_flush, 1, 10000);
    timed(&b, "compare_and_swap_flush", 8, op_cas_flush, 1, 10000);
    put_fence(&b, 8);
    allocate_free(&b);
    collective(&b, BARRIER, "barrier", 0, 10000);
    collective(&b, BCAST, "bcast", 8, 10000);
    collective(&b, BCAST, "bcast", 1 << 20, 200);
    collective(&b, ALLREDUCE, "allreduce", 8, 10000);
    collective(&b, ALLREDUCE, "allreduce", 1 << 20, 200);
    collective(&b, ALLTOALL, "alltoall", 8, 10000);
    collective(&b, ALLTOALL, "alltoall", LARGE, 1000);
    sendrecv(&b, 0, 8, 10000);
    sendrecv(&b, 0, LARGE, 1000);
    sendrecv(&b, 1, LARGE, 500);
    sendrecv(&b, 1, 1 << 20, 50);
    MPI_Win_free(&b.win);
    free(b.buf);
    MPI_Finalize();
    return 0;
}
