/* Windows of the MPI standard ABI over the program's memory
 * (MPI_Win_create): fence and passive-target epochs, put, get,
 * accumulate, fetch_and_op and compare_and_swap landing in the program's
 * own buffer, attributes, a member exposing nothing, and the memory freed
 * right after MPI_Win_free; generalized active target synchronization
 * (post, start, complete, wait, test); shared-memory windows; dynamic
 * windows with memory attached and detached. Every result is
 * checked element by element; prints "No Errors" at rank 0. */
#include "check.h"
#include <stdlib.h>
#include <string.h>

#define N 32

int main(int argc, char **argv)
{
    int n = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (me + 1) % n, left = (me + n - 1) % n;

    /* The program's memory: N ints, displacement unit 4. */
    int *mem = malloc(sizeof(int) * N);
    for (int i = 0; i < N; i++)
        mem[i] = -1;
    MPI_Win win;
    MPI_Win_create(mem, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);

    void *attr = NULL;
    int flag = 0;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &attr, &flag);
    CHECK(flag && attr == mem, "base attribute %p, not %p", attr, (void *)mem);
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &attr, &flag);
    CHECK(flag && *(int *)attr == MPI_WIN_FLAVOR_CREATE, "flavor %d", *(int *)attr);
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &attr, &flag);
    CHECK(flag && *(MPI_Aint *)attr == N * (MPI_Aint)sizeof(int), "size %ld", (long)*(MPI_Aint *)attr);

    /* Fence: each rank puts N/2 ints into its right neighbour's second
     * half; the neighbour reads them in its own buffer. */
    int out[N];
    for (int i = 0; i < N; i++)
        out[i] = 1000 * me + i;
    MPI_Win_fence(0, win);
    MPI_Put(out, N / 2, MPI_INT, right, N / 2, N / 2, MPI_INT, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < N / 2; i++) {
        CHECK(mem[i] == -1, "fence put wrote [%d] = %d", i, mem[i]);
        CHECK(mem[N / 2 + i] == 1000 * left + i, "fence put [%d] = %d", N / 2 + i, mem[N / 2 + i]);
    }

    /* Passive target: every rank adds to rank 0's [0] with accumulate and
     * fetch_and_op, and swaps [1] from -1 once. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        mem[0] = 0;
        mem[1] = -1;
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int one = 1, old = -5, mine = me, compare = -1, got = -5;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win);
    MPI_Fetch_and_op(&one, &old, MPI_INT, 0, 0, MPI_SUM, win);
    MPI_Compare_and_swap(&mine, &compare, &got, MPI_INT, 0, 1, win);
    MPI_Win_unlock(0, win);
    CHECK(old >= 1 && old < 2 * n, "fetch_and_op saw %d", old);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        CHECK(mem[0] == 2 * n, "accumulated %d, not %d", mem[0], 2 * n);
        CHECK(mem[1] >= 0 && mem[1] < n, "compare_and_swap left %d", mem[1]);
        MPI_Win_unlock(0, win);
    }

    /* Get the left neighbour's second half (what its own left put). */
    int back[N / 2];
    MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win);
    MPI_Get(back, N / 2, MPI_INT, left, N / 2, N / 2, MPI_INT, win);
    MPI_Win_unlock(left, win);
    int left2 = (left + n - 1) % n;
    for (int i = 0; i < N / 2; i++)
        CHECK(back[i] == 1000 * left2 + i, "get [%d] = %d", i, back[i]);
    MPI_Win_free(&win);
    /* The memory is the program's again. */
    free(mem);
    CHECK(win == MPI_WIN_NULL, "freed window is not null");

    /* Rank 0 exposes nothing; the others are reached. */
    int *small = me == 0 ? NULL : malloc(sizeof(int) * 4);
    MPI_Win_create(small, me == 0 ? 0 : 4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    if (me == 0)
        for (int p = 1; p < n; p++) {
            int v[4] = {p, p + 1, p + 2, p + 3};
            MPI_Put(v, 4, MPI_INT, p, 0, 4, MPI_INT, win);
        }
    MPI_Win_fence(0, win);
    if (me != 0)
        for (int i = 0; i < 4; i++)
            CHECK(small[i] == me + i, "put to a member [%d] = %d", i, small[i]);
    MPI_Win_free(&win);
    free(small);

    /* Post/start/complete/wait around the ring: each rank exposes to its
     * left neighbour and accesses its right one, three epochs (the last
     * closed by Win_test). */
    {
        MPI_Group world, from_left, to_right;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_incl(world, 1, &left, &from_left);
        MPI_Group_incl(world, 1, &right, &to_right);
        long *wbase = NULL;
        MPI_Win_allocate(8 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &wbase, &win);
        for (int epoch = 0; epoch < 3; epoch++) {
            long v[8];
            for (int i = 0; i < 8; i++)
                v[i] = 100 * me + 10 * epoch + i;
            MPI_Win_post(from_left, 0, win);
            MPI_Win_start(to_right, 0, win);
            MPI_Put(v, 8, MPI_LONG, right, 0, 8, MPI_LONG, win);
            MPI_Win_complete(win);
            if (epoch < 2) {
                MPI_Win_wait(win);
            } else {
                int done = 0;
                while (!done)
                    MPI_Win_test(win, &done);
            }
            for (int i = 0; i < 8; i++)
                CHECK(wbase[i] == 100 * left + 10 * epoch + i, "pscw epoch %d [%d] = %ld", epoch, i, wbase[i]);
            /* Nobody writes the next epoch's data before this check. */
            MPI_Barrier(MPI_COMM_WORLD);
        }
        MPI_Win_free(&win);
        MPI_Group_free(&from_left);
        MPI_Group_free(&to_right);
        MPI_Group_free(&world);
    }

    /* A shared-memory window over the ranks of this host: rank r of
     * the node holds r + 1 longs; each stores into its own part, then
     * loads every other part through MPI_Win_shared_query's address. */
    {
        MPI_Comm node;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
        int nme = 0, nn = 0;
        MPI_Comm_rank(node, &nme);
        MPI_Comm_size(node, &nn);
        long *part = NULL;
        MPI_Win_allocate_shared((nme + 1) * sizeof(long), sizeof(long), MPI_INFO_NULL, node, &part, &win);
        MPI_Win_lock_all(0, win);
        for (int i = 0; i <= nme; i++)
            part[i] = 1000 * nme + i;
        MPI_Win_sync(win);
        MPI_Barrier(node);
        MPI_Win_sync(win);
        for (int q = 0; q < nn; q++) {
            MPI_Aint qsize = -1;
            int qunit = -1;
            long *qbase = NULL;
            MPI_Win_shared_query(win, q, &qsize, &qunit, &qbase);
            CHECK(qsize == (q + 1) * (MPI_Aint)sizeof(long) && qunit == sizeof(long), "shared_query %d: %ld %d", q, (long)qsize, qunit);
            for (int i = 0; i <= q && qbase; i++)
                CHECK(qbase[i] == 1000 * q + i, "shared part %d [%d] = %ld", q, i, qbase[i]);
        }
        MPI_Aint size0 = -1;
        int unit0 = -1;
        long *base0 = NULL;
        MPI_Win_shared_query(win, MPI_PROC_NULL, &size0, &unit0, &base0);
        CHECK(size0 == (MPI_Aint)sizeof(long) && base0 && base0[0] == 0, "shared_query of MPI_PROC_NULL");
        MPI_Win_unlock_all(win);
        MPI_Win_free(&win);
        MPI_Comm_free(&node);
    }

    /* A dynamic window: each rank attaches 8 longs, tells the others its
     * address, and its right neighbour puts into them; then a second
     * attachment, accessed after the first was. */
    {
        MPI_Win dyn;
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn);
        long *first = malloc(8 * sizeof(long)), *second = malloc(4 * sizeof(long));
        for (int i = 0; i < 8; i++)
            first[i] = -1;
        MPI_Win_attach(dyn, first, 8 * sizeof(long));
        MPI_Aint mine_at, *addrs = malloc(sizeof(MPI_Aint) * n);
        MPI_Get_address(first, &mine_at);
        MPI_Allgather(&mine_at, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
        long v[8];
        for (int i = 0; i < 8; i++)
            v[i] = 10 * me + i;
        MPI_Win_lock_all(0, dyn);
        MPI_Put(v, 8, MPI_LONG, right, addrs[right], 8, MPI_LONG, dyn);
        MPI_Win_flush(right, dyn);
        MPI_Win_unlock_all(dyn);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < 8; i++)
            CHECK(first[i] == 10 * left + i, "dynamic put [%d] = %ld", i, first[i]);
        for (int i = 0; i < 4; i++)
            second[i] = 100 * me + i;
        MPI_Win_attach(dyn, second, 4 * sizeof(long));
        MPI_Get_address(second, &mine_at);
        MPI_Allgather(&mine_at, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
        long two[2] = {0, 0};
        MPI_Win_lock(MPI_LOCK_SHARED, left, 0, dyn);
        MPI_Get(two, 2, MPI_LONG, left, addrs[left] + 2 * sizeof(long), 2, MPI_LONG, dyn);
        MPI_Win_unlock(left, dyn);
        CHECK(two[0] == 100 * left + 2 && two[1] == 100 * left + 3, "dynamic get %ld %ld", two[0], two[1]);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_detach(dyn, first);
        MPI_Win_detach(dyn, second);
        MPI_Win_free(&dyn);
        free(first);
        free(second);
        free(addrs);
    }

    report_errors();
    MPI_Finalize();
    return 0;
}
