/* MPI_THREAD_MULTIPLE: two threads do RMA, each on a window of its own,
 * while a third does point-to-point (small and large messages around
 * the ring) and collectives on a communicator of its own; every result
 * is checked. Prints "No Errors" at rank 0. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 200
#define LARGE 40000
#define N 8

static int me = 0, n = 0;
static int errors[3];

struct rma_job {
    int id;
    MPI_Win win;
    long *base;
};

static void *rma_thread(void *arg)
{
    struct rma_job *job = arg;
    int right = (me + 1) % n;
    for (int r = 0; r < ROUNDS; r++) {
        long data[N], back[N];
        for (int i = 0; i < N; i++)
            data[i] = 1000000L * job->id + 1000L * me + r * N + i;
        /* Only this rank writes the right neighbour's elements (its
         * left neighbour is this rank), so they read back as written. */
        MPI_Win_lock(MPI_LOCK_SHARED, right, 0, job->win);
        MPI_Put(data, N, MPI_LONG, right, 0, N, MPI_LONG, job->win);
        MPI_Win_flush(right, job->win);
        MPI_Get(back, N, MPI_LONG, right, 0, N, MPI_LONG, job->win);
        MPI_Win_unlock(right, job->win);
        for (int i = 0; i < N; i++)
            if (back[i] != data[i]) {
                errors[job->id]++;
                break;
            }
    }
    return NULL;
}

struct coll_job {
    MPI_Comm comm;
};

static void *coll_thread(void *arg)
{
    struct coll_job *job = arg;
    int right = (me + 1) % n, left = (me + n - 1) % n;
    int *big = malloc(sizeof(int) * LARGE), *got = malloc(sizeof(int) * LARGE);
    for (int r = 0; r < ROUNDS; r++) {
        /* Point-to-point: a small message every round, a large one
         * every tenth, around the ring. */
        int len = r % 10 == 0 ? LARGE : 4;
        for (int i = 0; i < len; i++) {
            big[i] = 7 * me + 3 * r + i;
            got[i] = -1;
        }
        MPI_Request reqs[2];
        MPI_Irecv(got, len, MPI_INT, left, r, job->comm, &reqs[0]);
        MPI_Isend(big, len, MPI_INT, right, r, job->comm, &reqs[1]);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        for (int i = 0; i < len; i++)
            if (got[i] != 7 * left + 3 * r + i) {
                errors[2]++;
                break;
            }
        int in[2] = {me + r, 1}, out[2] = {0, 0};
        MPI_Allreduce(in, out, 2, MPI_INT, MPI_SUM, job->comm);
        if (out[0] != n * (n - 1) / 2 + n * r || out[1] != n)
            errors[2]++;
    }
    free(big);
    free(got);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (provided != MPI_THREAD_MULTIPLE) {
        if (me == 0)
            printf("thread level %d\n", provided);
        MPI_Finalize();
        return 1;
    }
    struct rma_job jobs[2];
    MPI_Comm comms[3];
    for (int j = 0; j < 3; j++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[j]);
    for (int j = 0; j < 2; j++) {
        jobs[j].id = j;
        MPI_Win_allocate(N * sizeof(long), sizeof(long), MPI_INFO_NULL, comms[j], &jobs[j].base, &jobs[j].win);
    }
    struct coll_job coll = {comms[2]};
    pthread_t threads[3];
    pthread_create(&threads[0], NULL, rma_thread, &jobs[0]);
    pthread_create(&threads[1], NULL, rma_thread, &jobs[1]);
    pthread_create(&threads[2], NULL, coll_thread, &coll);
    for (int t = 0; t < 3; t++)
        pthread_join(threads[t], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    /* What the left neighbour wrote last, in each window. */
    int left = (me + n - 1) % n;
    for (int j = 0; j < 2; j++) {
        MPI_Win_lock(MPI_LOCK_SHARED, me, 0, jobs[j].win);
        for (int i = 0; i < N; i++)
            if (jobs[j].base[i] != 1000000L * j + 1000L * left + (ROUNDS - 1) * N + i)
                errors[j]++;
        MPI_Win_unlock(me, jobs[j].win);
        MPI_Win_free(&jobs[j].win);
    }
    for (int j = 0; j < 3; j++)
        MPI_Comm_free(&comms[j]);
    int mine = errors[0] + errors[1] + errors[2], total = 0;
    if (mine)
        fprintf(stderr, "rank %d: errors %d %d %d\n", me, errors[0], errors[1], errors[2]);
    MPI_Reduce(&mine, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0) {
        if (total == 0)
            printf("No Errors\n");
        else
            printf("Found %d errors\n", total);
    }
    MPI_Finalize();
    return 0;
}
