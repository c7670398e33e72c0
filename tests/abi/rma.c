/* Windows and RMA of the MPI standard ABI: MPI_Win_allocate, fence and
 * passive-target epochs, put, get, accumulate, get_accumulate,
 * fetch_and_op and compare_and_swap with displacement units, flushes,
 * attributes, names, and the error classes of misuse. Every result is
 * checked element by element; prints "No Errors" at rank 0. */
#include "check.h"
#include <stdio.h>
#include <string.h>

#define N 16

int main(int argc, char **argv)
{
    int n = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (me + 1) % n, left = (me + n - 1) % n;

    /* A window of N longs, displacement unit 8. */
    long *base = NULL;
    MPI_Win win;
    MPI_Win_allocate(N * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    CHECK(base != NULL, "no base pointer");
    for (int i = 0; i < N; i++)
        base[i] = -1;

    void *attr = NULL;
    int flag = 0;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &attr, &flag);
    CHECK(flag && attr == base, "MPI_WIN_BASE %p, not %p", attr, (void *)base);
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &attr, &flag);
    CHECK(flag && *(MPI_Aint *)attr == N * (MPI_Aint)sizeof(long), "MPI_WIN_SIZE");
    MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &attr, &flag);
    CHECK(flag && *(int *)attr == (int)sizeof(long), "MPI_WIN_DISP_UNIT");
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &attr, &flag);
    CHECK(flag && *(int *)attr == MPI_WIN_FLAVOR_ALLOCATE, "MPI_WIN_CREATE_FLAVOR");
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &attr, &flag);
    CHECK(flag && *(int *)attr == MPI_WIN_UNIFIED, "MPI_WIN_MODEL");
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0;
    MPI_Win_set_name(win, "ring");
    MPI_Win_get_name(win, name, &len);
    CHECK(len == 4 && strcmp(name, "ring") == 0, "name '%s'", name);
    MPI_Group group;
    int gsize = 0;
    MPI_Win_get_group(win, &group);
    MPI_Group_size(group, &gsize);
    CHECK(gsize == n, "window group of %d", gsize);
    MPI_Group_free(&group);

    /* Fence: put to the right neighbour's elements 0..3. */
    long mine[4] = {100L * me, 100L * me + 1, 100L * me + 2, 100L * me + 3};
    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    MPI_Put(mine, 4, MPI_LONG, right, 0, 4, MPI_LONG, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < 4; i++)
        CHECK(base[i] == 100L * left + i, "fence put [%d] = %ld", i, base[i]);
    /* Get the right neighbour's elements 0..3 (what its left, me, put). */
    long got[4] = {0};
    MPI_Get(got, 4, MPI_LONG, right, 0, 4, MPI_LONG, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    for (int i = 0; i < 4; i++)
        CHECK(got[i] == 100L * me + i, "fence get [%d] = %ld", i, got[i]);

    /* Exclusive lock: element 4 of the left neighbour, written whole. */
    MPI_Barrier(MPI_COMM_WORLD);
    long value = 7000 + me;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, left, 0, win);
    MPI_Put(&value, 1, MPI_LONG, left, 4, 1, MPI_LONG, win);
    MPI_Win_unlock(left, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win);
    CHECK(base[4] == 7000 + right, "lock put: %ld", base[4]);
    MPI_Win_unlock(me, win);

    /* Accumulate into rank 0's element 5 from everyone; fetch_and_op on
     * element 6; compare_and_swap on element 7 (one winner). */
    if (me == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        base[5] = 0;
        base[6] = 0;
        base[7] = -5;
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    long one = me + 1, previous = -1, swapped = 0, mine_id = me;
    MPI_Accumulate(&one, 1, MPI_LONG, 0, 5, 1, MPI_LONG, MPI_SUM, win);
    MPI_Fetch_and_op(&one, &previous, MPI_LONG, 0, 6, MPI_SUM, win);
    long expect = -5;
    MPI_Compare_and_swap(&mine_id, &expect, &swapped, MPI_LONG, 0, 7, win);
    MPI_Win_flush(0, win);
    CHECK(previous >= 0 && previous <= (long)n * (n + 1) / 2 - one, "fetch_and_op gave %ld", previous);
    MPI_Win_unlock_all(win);
    int won = swapped == -5, winners = 0;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(winners == 1, "%d ranks won the compare_and_swap", winners);
    if (me == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        long sum = (long)n * (n + 1) / 2;
        CHECK(base[5] == sum && base[6] == sum, "accumulate %ld, fetch_and_op total %ld", base[5], base[6]);
        CHECK(base[7] >= 0 && base[7] < n, "compare_and_swap left %ld", base[7]);
        MPI_Win_unlock(0, win);
    }

    /* Get_accumulate of 3 ints at once (byte offsets of unit 8: disp 9). */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    if (me == 0) {
        long zero[3] = {0, 0, 0};
        MPI_Put(zero, 3, MPI_LONG, right, 9, 3, MPI_LONG, win);
        MPI_Win_flush_all(win);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    long add[3] = {1, 10, 100}, before[3] = {-1, -1, -1};
    MPI_Get_accumulate(add, 3, MPI_LONG, before, 3, MPI_LONG, 1 % n, 9, 3, MPI_LONG, MPI_SUM, win);
    MPI_Win_flush_local(1 % n, win);
    MPI_Win_unlock_all(win);
    for (int i = 0; i < 3; i++)
        CHECK(before[i] % add[i] == 0 && before[i] >= 0, "get_accumulate [%d] = %ld", i, before[i]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 1 % n) {
        MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win);
        CHECK(base[9] == n && base[10] == 10L * n && base[11] == 100L * n,
              "get_accumulate totals %ld %ld %ld", base[9], base[10], base[11]);
        MPI_Win_unlock(me, win);
    }

    /* Request-based RMA under lock_all: this rank writes the right
     * neighbour's element 12 and reads it back; everyone adds 1 to rank
     * 0's element 13 (untouched so far: -1). */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Request rq[3];
    long rv = 9000 + me, rg = -1, one_more = 1;
    MPI_Win_lock_all(0, win);
    MPI_Rput(&rv, 1, MPI_LONG, right, 12, 1, MPI_LONG, win, &rq[0]);
    MPI_Raccumulate(&one_more, 1, MPI_LONG, 0, 13, 1, MPI_LONG, MPI_SUM, win, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    MPI_Win_flush_all(win);
    MPI_Rget(&rg, 1, MPI_LONG, right, 12, 1, MPI_LONG, win, &rq[2]);
    MPI_Wait(&rq[2], MPI_STATUS_IGNORE);
    MPI_Win_unlock_all(win);
    CHECK(rg == 9000 + me, "rget gave %ld", rg);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        CHECK(base[13] == n - 1, "raccumulate total %ld", base[13]);
        MPI_Win_unlock(0, win);
    }

    /* Misuse, returned. */
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int code, class = 0;
    code = MPI_Put(&value, 1, MPI_LONG, right, 0, 1, MPI_LONG, win);
    MPI_Error_class(code, &class);
    CHECK(class == MPI_ERR_RMA_SYNC, "put outside an epoch: class %d", class);
    code = MPI_Win_unlock(right, win);
    MPI_Error_class(code, &class);
    CHECK(class == MPI_ERR_RMA_SYNC, "unlock of no lock: class %d", class);
    code = MPI_Win_lock(12345, right, 0, win);
    MPI_Error_class(code, &class);
    /* The standard's class; MPICH gives MPI_ERR_ARG. */
    CHECK(class == MPI_ERR_LOCKTYPE || class == MPI_ERR_ARG, "bad lock type: class %d", class);
    MPI_Win_lock_all(0, win);
    code = MPI_Put(&value, 1, MPI_LONG, n + 2, 0, 1, MPI_LONG, win);
    MPI_Error_class(code, &class);
    CHECK(class == MPI_ERR_RANK, "rank out of range: class %d", class);
    /* MPICH does not check the range (the put would write past the
     * window), so only onesided's library is asked. */
    char library[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(library, &len);
    if (strncmp(library, "onesided", 8) == 0) {
        code = MPI_Put(&value, 1, MPI_LONG, right, N, 1, MPI_LONG, win);
        MPI_Error_class(code, &class);
        CHECK(class == MPI_ERR_RMA_RANGE, "put past the end: class %d", class);
    }
    MPI_Win_unlock_all(win);

    MPI_Win_free(&win);
    CHECK(win == MPI_WIN_NULL, "freed window is not null");
    report_errors();
    MPI_Finalize();
    return 0;
}
