/* Datatypes of the MPI standard ABI: sizes, extents, true extents and
 * names of predefined and derived ones (contiguous, vector, hvector,
 * indexed, hindexed, indexed_block, struct, subarray, resized, dup);
 * point-to-point with derived datatypes on both sides (a matrix column
 * received as a row, an array of structs, a subarray halo, in place by
 * Sendrecv_replace, Probe and Get_count); contiguous derived datatypes
 * in collectives, and non-contiguous ones in Bcast, Gather(v),
 * Scatter(v), Allgather(v), Alltoall(v), their nonblocking forms, Put,
 * Get, Accumulate and Get_accumulate. Every element is checked; prints
 * "No Errors" at rank 0. */
#include "check.h"
#include <string.h>

struct particle {
    double x[3];
    int id;
    char tag;
};

static void extent_is(MPI_Datatype t, MPI_Aint lb, MPI_Aint extent, const char *what)
{
    MPI_Aint l = -1, e = -1;
    MPI_Type_get_extent(t, &l, &e);
    CHECK(l == lb && e == extent, "%s: lb %ld extent %ld, not %ld %ld", what, (long)l, (long)e, (long)lb, (long)extent);
}

static void size_is(MPI_Datatype t, int size, const char *what)
{
    int s = -1;
    MPI_Type_size(t, &s);
    CHECK(s == size, "%s: size %d, not %d", what, s, size);
}

int main(int argc, char **argv)
{
    int n = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (me + 1) % n, left = (me + n - 1) % n;
    MPI_Status status;

    /* Names, sizes and extents. */
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0;
    MPI_Type_get_name(MPI_INT, name, &len);
    CHECK(strcmp(name, "MPI_INT") == 0 && len == 7, "name of MPI_INT: %s", name);
    MPI_Type_get_name(MPI_DOUBLE, name, &len);
    CHECK(strcmp(name, "MPI_DOUBLE") == 0, "name of MPI_DOUBLE: %s", name);
    extent_is(MPI_DOUBLE, 0, 8, "double");

    MPI_Datatype three, column, hcol, idx, hidx, blocks, sub, resized, dup, part;
    MPI_Type_contiguous(3, MPI_DOUBLE, &three);
    size_is(three, 24, "contiguous");
    extent_is(three, 0, 24, "contiguous");
    /* A column of a 4x5 int matrix. */
    MPI_Type_vector(4, 1, 5, MPI_INT, &column);
    size_is(column, 16, "vector");
    extent_is(column, 0, (3 * 5 + 1) * 4, "vector");
    MPI_Type_create_hvector(2, 2, 40, MPI_INT, &hcol);
    size_is(hcol, 16, "hvector");
    extent_is(hcol, 0, 48, "hvector");
    int lens[3] = {2, 1, 3}, displs[3] = {5, 0, 10};
    MPI_Type_indexed(3, lens, displs, MPI_INT, &idx);
    size_is(idx, 24, "indexed");
    extent_is(idx, 0, 52, "indexed");
    MPI_Aint hdispls[2] = {4, 20};
    int hlens[2] = {1, 2};
    MPI_Type_create_hindexed(2, hlens, hdispls, MPI_SHORT, &hidx);
    size_is(hidx, 6, "hindexed");
    extent_is(hidx, 4, 20, "hindexed");
    int bdispls[3] = {0, 3, 7};
    MPI_Type_create_indexed_block(3, 2, bdispls, MPI_INT, &blocks);
    size_is(blocks, 24, "indexed_block");
    extent_is(blocks, 0, 36, "indexed_block");
    int sizes[2] = {6, 6}, subsizes[2] = {2, 3}, starts[2] = {1, 2};
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &sub);
    size_is(sub, 24, "subarray");
    extent_is(sub, 0, 144, "subarray");
    MPI_Type_create_resized(MPI_INT, -4, 16, &resized);
    extent_is(resized, -4, 16, "resized");
    MPI_Aint tlb = -1, text = -1;
    MPI_Type_get_true_extent(resized, &tlb, &text);
    CHECK(tlb == 0 && text == 4, "resized true extent %ld %ld", (long)tlb, (long)text);
    MPI_Type_dup(column, &dup);
    size_is(dup, 16, "dup");
    MPI_Type_set_name(dup, "my column");
    MPI_Type_get_name(dup, name, &len);
    CHECK(strcmp(name, "my column") == 0, "set name: %s", name);

    /* A struct of the particle's fields, its extent the C struct's. */
    struct particle ps[4];
    int plens[3] = {3, 1, 1};
    MPI_Aint pdispls[3], pbase;
    MPI_Datatype ptypes[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR};
    MPI_Get_address(&ps[0], &pbase);
    MPI_Get_address(&ps[0].x, &pdispls[0]);
    MPI_Get_address(&ps[0].id, &pdispls[1]);
    MPI_Get_address(&ps[0].tag, &pdispls[2]);
    for (int i = 0; i < 3; i++)
        pdispls[i] -= pbase;
    MPI_Type_create_struct(3, plens, pdispls, ptypes, &part);
    size_is(part, 29, "struct");
    MPI_Datatype particle;
    MPI_Type_create_resized(part, 0, sizeof(struct particle), &particle);
    extent_is(particle, 0, sizeof(struct particle), "resized struct");

    MPI_Datatype all[] = {three, column, hcol, idx, hidx, blocks, sub, dup, particle};
    for (int i = 0; i < 9; i++)
        MPI_Type_commit(&all[i]);
    three = all[0], column = all[1], sub = all[6], particle = all[8];

    /* A column of a 4x5 matrix to the right, received as 4 ints. */
    int m[4][5], row[4] = {-1, -1, -1, -1};
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 5; c++)
            m[r][c] = 100 * me + 10 * r + c;
    MPI_Sendrecv(&m[0][2], 1, column, right, 1, row, 4, MPI_INT, left, 1, MPI_COMM_WORLD, &status);
    for (int r = 0; r < 4; r++)
        CHECK(row[r] == 100 * left + 10 * r + 2, "column as row [%d] = %d", r, row[r]);
    int count = -1;
    MPI_Get_count(&status, MPI_INT, &count);
    CHECK(count == 4, "count of the column %d", count);
    /* And 4 ints into a column of another matrix; the rest untouched. */
    int into[4][5];
    memset(into, 0xff, sizeof into);
    int line[4] = {me, me + 1, me + 2, me + 3};
    MPI_Sendrecv(line, 4, MPI_INT, right, 2, &into[0][3], 1, column, left, 2, MPI_COMM_WORLD, &status);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 5; c++)
            CHECK(into[r][c] == (c == 3 ? left + r : -1), "row into column [%d][%d] = %d", r, c, into[r][c]);
    MPI_Get_count(&status, column, &count);
    CHECK(count == 1, "count of columns %d", count);

    /* Particles, large enough for the rendezvous path, in and out. */
    struct particle big[2000], got[2000];
    for (int i = 0; i < 2000; i++) {
        for (int k = 0; k < 3; k++)
            big[i].x[k] = me + i + 0.25 * k;
        big[i].id = 7 * me + i;
        big[i].tag = (char)('a' + (i % 26));
        memset(&got[i], 0, sizeof got[i]);
    }
    MPI_Request reqs[2];
    MPI_Irecv(got, 2000, particle, left, 3, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(big, 2000, particle, right, 3, MPI_COMM_WORLD, &reqs[1]);
    MPI_Status sts[2];
    MPI_Waitall(2, reqs, sts);
    int elements = -1;
    MPI_Get_elements(&sts[0], particle, &elements);
    CHECK(elements == 5 * 2000, "elements of 2000 particles: %d", elements);
    MPI_Get_count(&sts[0], particle, &count);
    CHECK(count == 2000, "count of particles: %d", count);
    int bad = 0;
    for (int i = 0; i < 2000; i++)
        bad += got[i].x[0] != left + i || got[i].x[2] != left + i + 0.5 || got[i].id != 7 * left + i || got[i].tag != 'a' + (i % 26);
    CHECK(bad == 0, "%d particles wrong", bad);

    /* A subarray halo: the 2x3 block at (1, 2) of a 6x6 grid. */
    int grid[6][6], halo[6][6];
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 6; c++) {
            grid[r][c] = 1000 * me + 10 * r + c;
            halo[r][c] = -7;
        }
    MPI_Sendrecv(grid, 1, sub, right, 4, halo, 1, sub, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 6; c++) {
            int inside = r >= 1 && r < 3 && c >= 2 && c < 5;
            CHECK(halo[r][c] == (inside ? 1000 * left + 10 * r + c : -7), "halo [%d][%d] = %d", r, c, halo[r][c]);
        }

    /* A column in place, by Sendrecv_replace; then Probe its count. */
    MPI_Sendrecv_replace(&m[0][4], 1, column, right, 5, left, 5, MPI_COMM_WORLD, &status);
    for (int r = 0; r < 4; r++)
        CHECK(m[r][4] == 100 * left + 10 * r + 4 && m[r][3] == 100 * me + 10 * r + 3, "replace [%d]", r);
    /* Columns one int apart: the column resized to one int's extent. */
    MPI_Datatype columns;
    MPI_Type_create_resized(column, 0, sizeof(int), &columns);
    MPI_Type_commit(&columns);
    MPI_Request r6;
    MPI_Isend(&m[0][0], 2, columns, right, 6, MPI_COMM_WORLD, &r6);
    MPI_Probe(left, 6, MPI_COMM_WORLD, &status);
    MPI_Get_count(&status, columns, &count);
    CHECK(count == 2, "probed count of columns %d", count);
    MPI_Get_count(&status, MPI_INT, &count);
    CHECK(count == 8, "probed count of ints %d", count);
    int eight[8];
    MPI_Recv(eight, 8, MPI_INT, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&r6, MPI_STATUS_IGNORE);
    for (int k = 0; k < 8; k++)
        CHECK(eight[k] == 100 * left + 10 * (k % 4) + k / 4, "two columns [%d] = %d", k, eight[k]);
    MPI_Type_free(&columns);

    /* Contiguous derived datatypes in collectives. */
    double triples[2][3];
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++)
            triples[i][k] = me == 0 ? 10 * i + k : -1;
    MPI_Bcast(triples, 2, three, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++)
            CHECK(triples[i][k] == 10 * i + k, "bcast of triples [%d][%d]", i, k);
    double mine[3] = {me, me + 0.5, -me}, gathered[64][3];
    MPI_Allgather(mine, 1, three, gathered, 1, three, MPI_COMM_WORLD);
    for (int p = 0; p < n && p < 64; p++)
        CHECK(gathered[p][0] == p && gathered[p][1] == p + 0.5 && gathered[p][2] == -p, "allgather of triples from %d", p);

    /* Non-contiguous datatypes in collectives: a column broadcast, columns
     * gathered into rows and scattered back, an allgather and an alltoall
     * of columns one int apart. */
    {
        int mat[4][5];
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 5; c++)
                mat[r][c] = me == 0 ? 10 * r + c : -1;
        MPI_Bcast(&mat[0][1], 1, column, 0, MPI_COMM_WORLD);
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 5; c++)
                CHECK(mat[r][c] == (c == 1 || me == 0 ? 10 * r + c : -1), "bcast of a column [%d][%d] = %d", r, c, mat[r][c]);
        int rows[64][4];
        for (int r = 0; r < 4; r++)
            mat[r][2] = 100 * me + r;
        MPI_Gather(&mat[0][2], 1, column, rows, 4, MPI_INT, 0, MPI_COMM_WORLD);
        for (int p = 0; me == 0 && p < n && p < 64; p++)
            for (int r = 0; r < 4; r++)
                CHECK(rows[p][r] == 100 * p + r, "gather of columns [%d][%d] = %d", p, r, rows[p][r]);
        for (int p = 0; me == 0 && p < n && p < 64; p++)
            for (int r = 0; r < 4; r++)
                rows[p][r] = 1000 + 10 * p + r;
        MPI_Scatter(rows, 4, MPI_INT, &mat[0][3], 1, column, 0, MPI_COMM_WORLD);
        for (int r = 0; r < 4; r++)
            CHECK(mat[r][3] == 1000 + 10 * me + r, "scatter into a column [%d] = %d", r, mat[r][3]);
        MPI_Datatype cols;
        MPI_Type_create_resized(column, 0, sizeof(int), &cols);
        MPI_Type_commit(&cols);
        if (n <= 5) {
            /* Rank p's column p of a 4x5 matrix, gathered into every
             * rank's columns 0..n-1. */
            int mine[4][5], allm[4][5];
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < 5; c++) {
                    mine[r][c] = 100 * me + 10 * r + c;
                    allm[r][c] = -1;
                }
            MPI_Allgather(&mine[0][me], 1, cols, allm, 1, cols, MPI_COMM_WORLD);
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < 5; c++)
                    CHECK(allm[r][c] == (c < n ? 100 * c + 10 * r + c : -1), "allgather of columns [%d][%d] = %d", r, c, allm[r][c]);
            /* Column q goes to rank q, and arrives as column me... of rank q's. */
            MPI_Alltoall(mine, 1, cols, allm, 1, cols, MPI_COMM_WORLD);
            for (int r = 0; r < 4; r++)
                for (int q = 0; q < n; q++)
                    CHECK(allm[r][q] == 100 * q + 10 * r + me, "alltoall of columns [%d][%d] = %d", r, q, allm[r][q]);
        }
        /* The v forms: columns gathered at the root in reverse rank
         * order (counted there in pairs of ints while the others send
         * ints), scattered back as columns, gathered everywhere and
         * exchanged, one int apart. */
        if (n <= 5) {
            MPI_Datatype pairs;
            MPI_Type_contiguous(2, MPI_INT, &pairs);
            MPI_Type_commit(&pairs);
            int col[4][5], rowsv[5][4], counts[5], displs[5];
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < 5; c++)
                    col[r][c] = 100 * me + 10 * r + c;
            for (int p = 0; p < n; p++) {
                counts[p] = 2;
                displs[p] = 2 * (n - 1 - p);
            }
            MPI_Gatherv(&col[0][1], 1, column, rowsv, counts, displs, pairs, 0, MPI_COMM_WORLD);
            for (int p = 0; me == 0 && p < n; p++)
                for (int r = 0; r < 4; r++)
                    CHECK(rowsv[n - 1 - p][r] == 100 * p + 10 * r + 1, "gatherv of columns [%d][%d] = %d", p, r, rowsv[n - 1 - p][r]);
            int back[4] = {-1, -1, -1, -1}, ones[5], at[5];
            for (int p = 0; p < n; p++) {
                ones[p] = 1;
                at[p] = n - 1 - p;
            }
            /* Column n-1-p of the root's 4x5 matrix goes to rank p. */
            MPI_Scatterv(col, ones, at, cols, back, 4, MPI_INT, 0, MPI_COMM_WORLD);
            for (int r = 0; r < 4; r++)
                CHECK(back[r] == 10 * r + (n - 1 - me), "scatterv of columns [%d] = %d", r, back[r]);
            int allv[4][5];
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < 5; c++)
                    allv[r][c] = -1;
            MPI_Allgatherv(&col[0][me], 1, cols, allv, ones, at, cols, MPI_COMM_WORLD);
            for (int r = 0; r < 4; r++)
                for (int p = 0; p < n; p++)
                    CHECK(allv[r][n - 1 - p] == 100 * p + 10 * r + p, "allgatherv of columns [%d][%d] = %d", r, n - 1 - p, allv[r][n - 1 - p]);
            int sd[5], rd[5];
            for (int q = 0; q < n; q++) {
                sd[q] = q;
                rd[q] = n - 1 - q;
            }
            MPI_Alltoallv(col, ones, sd, cols, allv, ones, rd, cols, MPI_COMM_WORLD);
            for (int r = 0; r < 4; r++)
                for (int q = 0; q < n; q++)
                    CHECK(allv[r][n - 1 - q] == 100 * q + 10 * r + me, "alltoallv of columns [%d][%d] = %d", r, n - 1 - q, allv[r][n - 1 - q]);
            MPI_Type_free(&pairs);

            /* The nonblocking forms: a column broadcast, columns gathered
             * and exchanged, completed by Waitall. */
            int bc[4][5], ag[4][5], aa[4][5];
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < 5; c++) {
                    bc[r][c] = me == 0 ? 7 * r + c : -1;
                    ag[r][c] = aa[r][c] = -1;
                }
            MPI_Request nb[3];
            MPI_Ibcast(&bc[0][4], 1, column, 0, MPI_COMM_WORLD, &nb[0]);
            MPI_Iallgather(&col[0][me], 1, cols, ag, 1, cols, MPI_COMM_WORLD, &nb[1]);
            MPI_Ialltoall(col, 1, cols, aa, 1, cols, MPI_COMM_WORLD, &nb[2]);
            MPI_Waitall(3, nb, MPI_STATUSES_IGNORE);
            for (int r = 0; r < 4; r++) {
                for (int c = 0; c < 5; c++)
                    CHECK(bc[r][c] == (c == 4 || me == 0 ? 7 * r + c : -1), "ibcast of a column [%d][%d] = %d", r, c, bc[r][c]);
                for (int q = 0; q < n; q++) {
                    CHECK(ag[r][q] == 100 * q + 10 * r + q, "iallgather of columns [%d][%d] = %d", r, q, ag[r][q]);
                    CHECK(aa[r][q] == 100 * q + 10 * r + me, "ialltoall of columns [%d][%d] = %d", r, q, aa[r][q]);
                }
            }
        }
        MPI_Type_free(&cols);
    }

    /* An accumulate of a contiguous derived datatype of longs (MPI
     * defines predefined operations on derived datatypes in accumulates
     * only, not in reductions). */
    {
        long *acc = NULL;
        MPI_Win aw;
        MPI_Win_allocate(4 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &acc, &aw);
        for (int i = 0; i < 4; i++)
            acc[i] = 0;
        MPI_Datatype longs;
        MPI_Type_contiguous(4, MPI_LONG, &longs);
        MPI_Type_commit(&longs);
        long add[4] = {1, 2, 3, me};
        MPI_Win_fence(0, aw);
        MPI_Accumulate(add, 1, longs, 0, 0, 1, longs, MPI_SUM, aw);
        MPI_Win_fence(0, aw);
        if (me == 0)
            for (int i = 0; i < 4; i++)
                CHECK(acc[i] == (i < 3 ? (long)n * (i + 1) : (long)n * (n - 1) / 2), "accumulate of longs [%d] = %ld", i, acc[i]);
        /* Every other long of rank 0's window, from two contiguous ones. */
        MPI_Datatype every_other;
        MPI_Type_vector(2, 1, 2, MPI_LONG, &every_other);
        MPI_Type_commit(&every_other);
        long two[2] = {100, 1000L * (me + 1)};
        MPI_Win_fence(0, aw);
        MPI_Accumulate(two, 2, MPI_LONG, 0, 0, 1, every_other, MPI_SUM, aw);
        MPI_Win_fence(0, aw);
        if (me == 0) {
            long s1 = (long)n * (n + 1) / 2 * 1000;
            CHECK(acc[0] == n + 100L * n && acc[2] == 3L * n + s1, "every other long: %ld %ld", acc[0], acc[2]);
            CHECK(acc[1] == 2L * n && acc[3] == (long)n * (n - 1) / 2, "between them: %ld %ld", acc[1], acc[3]);
        }
        /* Get_accumulate through the same gapped type at the target and
         * in the result: the last rank adds, then every rank reads. */
        long a0 = n + 100L * n, a2 = 3L * n + (long)n * (n + 1) / 2 * 1000;
        long add2[2] = {5, 7}, old[4] = {-1, -1, -1, -1}, now[4] = {-1, -1, -1, -1};
        MPI_Win_fence(0, aw);
        if (me == n - 1)
            MPI_Get_accumulate(add2, 2, MPI_LONG, old, 1, every_other, 0, 0, 1, every_other, MPI_SUM, aw);
        MPI_Win_fence(0, aw);
        MPI_Get_accumulate(NULL, 0, MPI_LONG, now, 1, every_other, 0, 0, 1, every_other, MPI_NO_OP, aw);
        MPI_Win_fence(0, aw);
        if (me == n - 1)
            CHECK(old[0] == a0 && old[2] == a2 && old[1] == -1 && old[3] == -1,
                  "get_accumulate old: %ld %ld %ld %ld", old[0], old[1], old[2], old[3]);
        CHECK(now[0] == a0 + 5 && now[2] == a2 + 7 && now[1] == -1 && now[3] == -1,
              "get_accumulate now: %ld %ld %ld %ld", now[0], now[1], now[2], now[3]);
        MPI_Type_free(&every_other);
        MPI_Win_free(&aw);
        MPI_Type_free(&longs);
    }

    /* Non-contiguous datatypes in RMA: a window of a 4x5 int matrix;
     * four ints put into the right neighbour's column 2, its column 4 put
     * from a column here into its row 0, its column 1 read as ints. */
    {
        int *wm = NULL;
        MPI_Win win;
        MPI_Win_allocate(20 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &wm, &win);
        for (int k = 0; k < 20; k++)
            wm[k] = 1000 * me + k;
        int src[4][5], four[4] = {7 * me, 7 * me + 1, 7 * me + 2, 7 * me + 3};
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 5; c++)
                src[r][c] = 100 * me + 10 * r + c;
        MPI_Win_fence(0, win);
        MPI_Put(four, 4, MPI_INT, right, 2, 1, column, win);
        MPI_Put(&src[0][4], 1, column, right, 0, 4, MPI_INT, win);
        MPI_Win_fence(0, win);
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 5; c++) {
                int want = 1000 * me + 5 * r + c;
                if (c == 2)
                    want = 7 * left + r;
                if (r == 0 && c < 4)
                    want = 100 * left + 10 * c + 4;
                CHECK(wm[5 * r + c] == want, "put with datatypes [%d][%d] = %d, not %d", r, c, wm[5 * r + c], want);
            }
        int got4[4] = {-1, -1, -1, -1};
        MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win);
        MPI_Get(got4, 4, MPI_INT, left, 1, 1, column, win);
        MPI_Win_unlock(left, win);
        int left2 = (left + n - 1) % n;
        for (int r = 0; r < 4; r++) {
            int want = r == 0 ? 100 * left2 + 10 * 1 + 4 : 1000 * left + 5 * r + 1;
            CHECK(got4[r] == want, "get of a column [%d] = %d, not %d", r, got4[r], want);
        }
        MPI_Win_free(&win);
    }

    for (int i = 0; i < 9; i++)
        MPI_Type_free(&all[i]);
    CHECK(all[0] == MPI_DATATYPE_NULL, "a freed datatype is not null");
    MPI_Type_free(&part);
    MPI_Type_free(&resized);

    report_errors();
    MPI_Finalize();
    return 0;
}
