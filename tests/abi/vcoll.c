/* The v forms of the collectives and Reduce_scatter(_block) of the MPI
 * standard ABI, with blocks of different sizes at displacements that
 * leave gaps, and in place; each element checked. Prints "No Errors" at
 * rank 0. */
#include "check.h"
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int n = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* Rank r has r + 1 elements; blocks placed in reverse order, one
     * element apart. */
    int *counts = malloc(sizeof(int) * n), *displs = malloc(sizeof(int) * n);
    int span = 0;
    for (int r = n - 1; r >= 0; r--) {
        counts[r] = r + 1;
        displs[r] = span;
        span += r + 2;
    }
    int *mine = malloc(sizeof(int) * (me + 1));
    for (int i = 0; i <= me; i++)
        mine[i] = 100 * me + i;
    int *all = malloc(sizeof(int) * span);

    /* Gatherv to the last rank. */
    for (int i = 0; i < span; i++)
        all[i] = -7;
    MPI_Gatherv(mine, me + 1, MPI_INT, all, counts, displs, MPI_INT, n - 1, MPI_COMM_WORLD);
    if (me == n - 1)
        for (int r = 0; r < n; r++) {
            for (int i = 0; i <= r; i++)
                CHECK(all[displs[r] + i] == 100 * r + i, "gatherv %d.%d = %d", r, i, all[displs[r] + i]);
            CHECK(all[displs[r] + r + 1] == -7, "gatherv wrote the gap after %d", r);
        }

    /* Allgatherv, and in place. */
    for (int i = 0; i < span; i++)
        all[i] = -7;
    MPI_Allgatherv(mine, me + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < n; r++)
        for (int i = 0; i <= r; i++)
            CHECK(all[displs[r] + i] == 100 * r + i, "allgatherv %d.%d", r, i);
    for (int i = 0; i < span; i++)
        all[i] = -7;
    for (int i = 0; i <= me; i++)
        all[displs[me] + i] = 5000 + i;
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < n; r++)
        for (int i = 0; i <= r; i++)
            CHECK(all[displs[r] + i] == 5000 + i, "allgatherv in place %d.%d", r, i);

    /* Scatterv from rank 0. */
    for (int r = 0; r < n; r++)
        for (int i = 0; i <= r; i++)
            all[displs[r] + i] = 7000 + 10 * r + i;
    int *got = malloc(sizeof(int) * (me + 1));
    MPI_Scatterv(all, counts, displs, MPI_INT, got, me + 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i <= me; i++)
        CHECK(got[i] == 7000 + 10 * me + i, "scatterv [%d] = %d", i, got[i]);

    /* Alltoallv: rank r sends p + 1 doubles to rank p, packed; receives
     * r + 1 from each, with gaps. */
    int *sc = malloc(sizeof(int) * n), *sd = malloc(sizeof(int) * n);
    int *rc = malloc(sizeof(int) * n), *rd = malloc(sizeof(int) * n);
    int stotal = 0, rtotal = 0;
    for (int p = 0; p < n; p++) {
        sc[p] = p + 1;
        sd[p] = stotal;
        stotal += p + 1;
        rc[p] = me + 1;
        rd[p] = rtotal;
        rtotal += me + 2;
    }
    double *sb = malloc(sizeof(double) * stotal), *rb = malloc(sizeof(double) * rtotal);
    for (int p = 0; p < n; p++)
        for (int i = 0; i <= p; i++)
            sb[sd[p] + i] = 1000.0 * me + 10 * p + i;
    for (int i = 0; i < rtotal; i++)
        rb[i] = -1;
    MPI_Alltoallv(sb, sc, sd, MPI_DOUBLE, rb, rc, rd, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int p = 0; p < n; p++) {
        for (int i = 0; i <= me; i++)
            CHECK(rb[rd[p] + i] == 1000.0 * p + 10 * me + i, "alltoallv from %d [%d] = %g", p, i, rb[rd[p] + i]);
        CHECK(rb[rd[p] + me + 1] == -1, "alltoallv wrote the gap after %d", p);
    }

    /* Reduce_scatter: rank r gets r + 1 sums; Reduce_scatter_block: 2. */
    int total = n * (n + 1) / 2;
    long *in = malloc(sizeof(long) * total), out[64];
    for (int i = 0; i < total; i++)
        in[i] = me + i;
    int *rcounts = malloc(sizeof(int) * n);
    for (int r = 0; r < n; r++)
        rcounts[r] = r + 1;
    MPI_Reduce_scatter(in, out, rcounts, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int start = me * (me + 1) / 2;
    for (int i = 0; i <= me; i++)
        CHECK(out[i] == (long)n * (n - 1) / 2 + (long)n * (start + i), "reduce_scatter [%d] = %ld", i, out[i]);
    long blk[128];
    for (int i = 0; i < 2 * n; i++)
        blk[i] = i * (me + 1);
    long blk_out[2];
    MPI_Reduce_scatter_block(blk, blk_out, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < 2; i++)
        CHECK(blk_out[i] == (long)(2 * me + i) * n, "reduce_scatter_block [%d] = %ld", i, blk_out[i]);

    report_errors();
    MPI_Finalize();
    return 0;
}
