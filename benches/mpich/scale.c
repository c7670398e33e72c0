/* MPICH's side of onesided-bench's scale suite: the operations of
 * onesided's scale-check (tests/src/bin/scale-check.rs) as MPI programs
 * write them, each once between two MPI_Barrier calls, every rank
 * printing `op NAME rank R us T`. Checks what it moves and exits 1 with
 * "... expected X found Y" otherwise.
 *
 * The job then grows by one process of this program (spawn_join_1:
 * MPI_Comm_spawn and MPI_Intercomm_merge; the new process reports its
 * start, join_init, as the merge returns) and finalizes
 * (finalize_after_growth, timed around MPI_Finalize).
 *
 * MPI has no window over memory exposed before: window_create_free and
 * window_recreate_free are both MPI_Win_create over the same buffer,
 * with one MPI_Get from the right neighbour under lock_all, and
 * MPI_Win_free. A dynamic window's origin learns its target's address
 * by an MPI_Allgather (inside the operation, as programs do). */
#include "common.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

static int me, n;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void report_op(const char *name, double start) {
    printf("op %s rank %d us %.1f\n", name, me, now_us() - start);
    fflush(stdout);
}

static void expect(const char *what, uint64_t want, uint64_t got) {
    if (want != got) {
        fprintf(stderr, "scale rank %d: %s expected %llu found %llu\n", me, what,
                (unsigned long long)want, (unsigned long long)got);
        exit(1);
    }
}

static uint64_t value(int rank, int round) { return (uint64_t)rank * 1000 + round; }

/* A window over `mem`, one get from the right neighbour, freed. */
static void create_get_free(uint64_t *mem, int round) {
    MPI_Win win;
    uint64_t got = 0;
    int right = (me + 1) % n;
    MPI_Win_create(mem, 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);
    MPI_Get(&got, 1, MPI_UINT64_T, right, 0, 1, MPI_UINT64_T, win);
    MPI_Win_unlock_all(win);
    expect("window get", value(right, round), got);
    MPI_Win_free(&win);
}

/* Times MPI_Finalize. */
static void finalize_measured(void) {
    double start = now_us();
    MPI_Finalize();
    report_op("finalize_after_growth", start);
}

int main(int argc, char **argv) {
    double start = now_us();
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        /* The process of the growth. */
        MPI_Comm grown;
        MPI_Intercomm_merge(parent, 1, &grown);
        MPI_Comm_rank(grown, &me);
        report_op("join_init", start);
        finalize_measured();
        return 0;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    print_loaded(me);
    report_op("init", start);
    int right = (me + 1) % n, left = (me + n - 1) % n;
    static uint64_t fresh, exposed;
    uint64_t got = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    start = now_us();
    fresh = value(me, 1);
    create_get_free(&fresh, 1);
    report_op("window_create_free", start);

    exposed = value(me, 2);
    MPI_Barrier(MPI_COMM_WORLD);
    start = now_us();
    create_get_free(&exposed, 2);
    report_op("window_first_over_exposure", start);
    MPI_Barrier(MPI_COMM_WORLD);
    start = now_us();
    create_get_free(&exposed, 2);
    report_op("window_recreate_free", start);

    MPI_Barrier(MPI_COMM_WORLD);
    start = now_us();
    {
        MPI_Win win;
        uint64_t *base;
        MPI_Win_allocate(8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        *base = value(me, 3);
        MPI_Win_free(&win);
    }
    report_op("allocate_free", start);

    MPI_Barrier(MPI_COMM_WORLD);
    start = now_us();
    {
        MPI_Win win;
        static uint64_t attached;
        MPI_Aint mine, *all = malloc(sizeof(MPI_Aint) * n);
        attached = value(me, 4);
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_attach(win, &attached, 8);
        MPI_Get_address(&attached, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
        MPI_Win_lock_all(0, win);
        MPI_Get(&got, 1, MPI_UINT64_T, right, all[right], 1, MPI_UINT64_T, win);
        MPI_Win_unlock_all(win);
        expect("dynamic get", value(right, 4), got);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_detach(win, &attached);
        MPI_Win_free(&win);
        free(all);
    }
    report_op("dynamic_attach_detach", start);

    MPI_Win win;
    uint64_t *part;
    MPI_Win_allocate(16, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &part, &win);
    part[0] = value(me, 5);
    part[1] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    start = now_us();
    MPI_Win_lock_all(0, win);
    int warm[3] = {left, right, 0};
    for (int i = 0; i < 3; i++)
        MPI_Get(&got, 1, MPI_UINT64_T, warm[i], 0, 1, MPI_UINT64_T, win);
    MPI_Win_unlock_all(win);
    report_op("warm", start);

    MPI_Barrier(MPI_COMM_WORLD);
    start = now_us();
    MPI_Win_lock_all(0, win);
    MPI_Get(&got, 1, MPI_UINT64_T, left, 0, 1, MPI_UINT64_T, win);
    MPI_Win_unlock_all(win);
    report_op("lock_all_get_unlock_all", start);
    expect("lock_all get", value(left, 5), got);

    MPI_Barrier(MPI_COMM_WORLD);
    start = now_us();
    {
        uint64_t count = 0, one;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Get(&count, 1, MPI_UINT64_T, 0, 1, 1, MPI_UINT64_T, win);
        MPI_Win_flush(0, win);
        one = count + 1;
        MPI_Put(&one, 1, MPI_UINT64_T, 0, 1, 1, MPI_UINT64_T, win);
        MPI_Win_unlock(0, win);
    }
    report_op("lock_exclusive_contended", start);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Get(&got, 1, MPI_UINT64_T, 0, 1, 1, MPI_UINT64_T, win);
        MPI_Win_unlock(0, win);
        expect("exclusive increments", (uint64_t)n, got);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    start = now_us();
    {
        MPI_Request req;
        MPI_Ibarrier(MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    report_op("ibarrier", start);

    MPI_Barrier(MPI_COMM_WORLD);
    start = now_us();
    MPI_Barrier(MPI_COMM_WORLD);
    report_op("barrier", start);

    MPI_Barrier(MPI_COMM_WORLD);
    start = now_us();
    {
        uint64_t mine = (uint64_t)me, sum = 0;
        MPI_Allreduce(&mine, &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        expect("allreduce", (uint64_t)n * (n - 1) / 2, sum);
    }
    report_op("allreduce_8", start);

    MPI_Win_free(&win);

    MPI_Barrier(MPI_COMM_WORLD);
    start = now_us();
    {
        MPI_Comm inter, grown;
        int size = 0;
        MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                       MPI_ERRCODES_IGNORE);
        MPI_Intercomm_merge(inter, 0, &grown);
        MPI_Comm_size(grown, &size);
        expect("grown size", (uint64_t)n + 1, (uint64_t)size);
    }
    report_op("spawn_join_1", start);
    finalize_measured();
    return 0;
}
