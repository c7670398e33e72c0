/* Nonblocking collectives of the MPI standard ABI and their requests:
 * Ibarrier, Ibcast, Iallreduce (in place too), Ireduce, Iallgather and
 * Ialltoall, Iallgatherv and Ialltoallv (blocks at displacements of
 * their own), completed by Wait, Test, Waitall, Waitany and Testall;
 * each result checked element by element. Prints "No Errors" at rank 0. */
#include "check.h"
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int n = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Status status;

    /* Ibarrier completed by Test. */
    MPI_Request r = MPI_REQUEST_NULL;
    int flag = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &r);
    while (!flag)
        MPI_Test(&r, &flag, &status);
    CHECK(r == MPI_REQUEST_NULL, "tested request not freed");
    /* A null request completes at once. */
    MPI_Wait(&r, MPI_STATUS_IGNORE);

    /* Ibcast and Iallreduce in flight together, completed by Waitall. */
    double d[6];
    for (int i = 0; i < 6; i++)
        d[i] = me == 0 ? 1.5 * i : -1;
    long in[3] = {me, 2L * me, 1}, out[3] = {0, 0, 0};
    MPI_Request two[2];
    MPI_Ibcast(d, 6, MPI_DOUBLE, 0, MPI_COMM_WORLD, &two[0]);
    MPI_Iallreduce(in, out, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &two[1]);
    MPI_Waitall(2, two, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 6; i++)
        CHECK(d[i] == 1.5 * i, "ibcast [%d] = %g", i, d[i]);
    long s = (long)n * (n - 1) / 2;
    CHECK(out[0] == s && out[1] == 2 * s && out[2] == n, "iallreduce %ld %ld %ld", out[0], out[1], out[2]);
    CHECK(two[0] == MPI_REQUEST_NULL && two[1] == MPI_REQUEST_NULL, "waitall left requests");

    /* Iallreduce in place (max), Ireduce to the last rank (min), by Waitany. */
    int mx[2] = {me, -me}, mn = 100 - me, mn_out = -1, index = -1, done = 0;
    MPI_Request any[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Iallreduce(MPI_IN_PLACE, mx, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &any[0]);
    MPI_Ireduce(&mn, &mn_out, 1, MPI_INT, MPI_MIN, n - 1, MPI_COMM_WORLD, &any[2]);
    while (done < 2) {
        MPI_Waitany(3, any, &index, &status);
        CHECK(index == 0 || index == 2, "waitany index %d", index);
        done++;
    }
    MPI_Waitany(3, any, &index, &status);
    CHECK(index == MPI_UNDEFINED, "waitany of null requests gave %d", index);
    CHECK(mx[0] == n - 1 && mx[1] == 0, "in place max %d %d", mx[0], mx[1]);
    if (me == n - 1)
        CHECK(mn_out == 100 - (n - 1), "ireduce min %d", mn_out);

    /* Iallgather and Ialltoall, by Testall. */
    int *all = malloc(sizeof(int) * 2 * n), *recv = malloc(sizeof(int) * n), *send = malloc(sizeof(int) * n);
    int mine[2] = {me, me * me};
    for (int p = 0; p < n; p++)
        send[p] = 100 * me + p;
    MPI_Request reqs[2];
    MPI_Iallgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD, &reqs[0]);
    MPI_Ialltoall(send, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD, &reqs[1]);
    flag = 0;
    while (!flag)
        MPI_Testall(2, reqs, &flag, MPI_STATUSES_IGNORE);
    for (int p = 0; p < n; p++) {
        CHECK(all[2 * p] == p && all[2 * p + 1] == p * p, "iallgather block %d", p);
        CHECK(recv[p] == 100 * p + me, "ialltoall from %d: %d", p, recv[p]);
    }
    free(all);
    free(recv);
    free(send);

    /* Iallgatherv: rank p gives p + 1 ints, placed in reverse rank order
     * with a gap of one; Ialltoallv: rank p sends q + 1 ints to rank q,
     * received in reverse order. */
    {
        int *counts = malloc(sizeof(int) * n), *displs = malloc(sizeof(int) * n), total = 0;
        for (int p = n - 1; p >= 0; p--) {
            counts[p] = p + 1;
            displs[p] = total;
            total += p + 2;
        }
        int *mine = malloc(sizeof(int) * (me + 1)), *gathered = malloc(sizeof(int) * total);
        for (int i = 0; i <= me; i++)
            mine[i] = 1000 * me + i;
        for (int i = 0; i < total; i++)
            gathered[i] = -1;
        MPI_Request rv[2];
        MPI_Iallgatherv(mine, me + 1, MPI_INT, gathered, counts, displs, MPI_INT, MPI_COMM_WORLD, &rv[0]);

        int *scounts = malloc(sizeof(int) * n), *sdispls = malloc(sizeof(int) * n);
        int *rcounts = malloc(sizeof(int) * n), *rdispls = malloc(sizeof(int) * n);
        int stotal = 0, rtotal = 0;
        for (int q = 0; q < n; q++) {
            scounts[q] = q + 1;
            sdispls[q] = stotal;
            stotal += q + 1;
        }
        for (int q = n - 1; q >= 0; q--) {
            rcounts[q] = me + 1;
            rdispls[q] = rtotal;
            rtotal += me + 1;
        }
        int *out = malloc(sizeof(int) * stotal), *in = malloc(sizeof(int) * rtotal);
        for (int q = 0; q < n; q++)
            for (int i = 0; i <= q; i++)
                out[sdispls[q] + i] = 100 * me + 10 * q + i;
        MPI_Ialltoallv(out, scounts, sdispls, MPI_INT, in, rcounts, rdispls, MPI_INT, MPI_COMM_WORLD, &rv[1]);
        MPI_Waitall(2, rv, MPI_STATUSES_IGNORE);
        for (int p = 0; p < n; p++) {
            for (int i = 0; i <= p; i++)
                CHECK(gathered[displs[p] + i] == 1000 * p + i, "iallgatherv block %d [%d]", p, i);
            CHECK(gathered[displs[p] + p + 1] == -1, "iallgatherv wrote the gap after %d", p);
            for (int i = 0; i <= me; i++)
                CHECK(in[rdispls[p] + i] == 100 * p + 10 * me + i, "ialltoallv from %d [%d]", p, i);
        }
        free(counts);
        free(displs);
        free(mine);
        free(gathered);
        free(scounts);
        free(sdispls);
        free(rcounts);
        free(rdispls);
        free(out);
        free(in);
    }

    report_errors();
    MPI_Finalize();
    return 0;
}
