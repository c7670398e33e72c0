/* Operations of the MPI standard ABI: MPI_MAXLOC and MPI_MINLOC on the
 * pair types, and the program's own operations (MPI_Op_create), one
 * commutative and one not (2x2 matrix products, whose result depends on
 * the rank order), through Allreduce, Reduce and Iallreduce; Scan and
 * Exscan with predefined and both kinds of the program's operations; a
 * program's non-commutative operation on a non-contiguous derived
 * datatype by Allreduce, Reduce, Scan, Exscan, Reduce_scatter_block,
 * and Iallreduce and Ireduce outstanding together (completed in either
 * order, and in opposite orders on different ranks).
 * Prints "No Errors" at rank 0. */
#include "check.h"
#include <stdlib.h>

struct double_int { double value; int index; };
struct two_int { int value; int index; };

/* inout = in op inout: the larger magnitude. */
static void absmax(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    double *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        if ((a[i] < 0 ? -a[i] : a[i]) > (b[i] < 0 ? -b[i] : b[i]))
            b[i] = a[i];
}

/* inout = in x inout, for 2x2 integer matrices (4 ints each). */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    int *a = in, *b = inout;
    for (int m = 0; m < *len / 4; m++, a += 4, b += 4) {
        int c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                    a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
        for (int i = 0; i < 4; i++)
            b[i] = c[i];
    }
}

/* inout = in x inout for 2x2 int matrices laid out as the datatype
 * "gapped" (rows of 2 ints, 3 ints apart): *len matrices. */
static void matmul_gapped(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    int *a = in, *b = inout;
    for (int m = 0; m < *len; m++, a += 5, b += 5) {
        int c[4] = {a[0] * b[0] + a[1] * b[3], a[0] * b[1] + a[1] * b[4],
                    a[3] * b[0] + a[4] * b[3], a[3] * b[1] + a[4] * b[4]};
        b[0] = c[0];
        b[1] = c[1];
        b[3] = c[2];
        b[4] = c[3];
    }
}

int main(int argc, char **argv)
{
    int n = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);

    /* MAXLOC of doubles: the largest value is on two ranks (the lower
     * rank wins); MINLOC of ints to rank 0. */
    struct double_int d = {(double)(me % 3), me}, dout = {-1, -1};
    MPI_Allreduce(&d, &dout, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    int want_value = n >= 3 ? 2 : n - 1;
    CHECK(dout.value == want_value && dout.index == want_value, "maxloc (%g, %d)", dout.value, dout.index);
    struct two_int t[2] = {{10 - me, me}, {me / 2, me}}, tout[2];
    MPI_Reduce(t, tout, 2, MPI_2INT, MPI_MINLOC, 0, MPI_COMM_WORLD);
    if (me == 0) {
        CHECK(tout[0].value == 10 - (n - 1) && tout[0].index == n - 1, "minloc [0] (%d, %d)", tout[0].value, tout[0].index);
        CHECK(tout[1].value == 0 && tout[1].index == 0, "minloc [1] (%d, %d)", tout[1].value, tout[1].index);
    }

    /* A commutative operation of the program's. */
    MPI_Op op;
    int commute = -1;
    MPI_Op_create(absmax, 1, &op);
    MPI_Op_commutative(op, &commute);
    CHECK(commute == 1, "commutative %d", commute);
    double v[2] = {me % 2 ? -(double)me : (double)me, 1.0}, vout[2];
    MPI_Allreduce(v, vout, 2, MPI_DOUBLE, op, MPI_COMM_WORLD);
    double big = (n - 1) % 2 ? -(double)(n - 1) : (double)(n - 1);
    CHECK(vout[0] == big && vout[1] == 1.0, "absmax %g %g", vout[0], vout[1]);
    MPI_Op_free(&op);
    CHECK(op == MPI_OP_NULL, "a freed op is not null");

    /* A non-commutative one: the product M0 x M1 x ... in rank order,
     * M_r = [[1, r], [0, 1]] x [[1, 0], [r % 2, 1]]. */
    MPI_Op prod;
    MPI_Op_create(matmul, 0, &prod);
    int m[4] = {1 + me * (me % 2), me, me % 2, 1}, mout[4], want[4] = {1, 0, 0, 1};
    for (int r = 0; r < n; r++) {
        int mr[4] = {1 + r * (r % 2), r, r % 2, 1};
        int c[4] = {want[0] * mr[0] + want[1] * mr[2], want[0] * mr[1] + want[1] * mr[3],
                    want[2] * mr[0] + want[3] * mr[2], want[2] * mr[1] + want[3] * mr[3]};
        for (int i = 0; i < 4; i++)
            want[i] = c[i];
    }
    MPI_Allreduce(m, mout, 4, MPI_INT, prod, MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++)
        CHECK(mout[i] == want[i], "ordered product [%d] = %d, not %d", i, mout[i], want[i]);
    MPI_Request r;
    for (int i = 0; i < 4; i++)
        mout[i] = 0;
    MPI_Iallreduce(m, mout, 4, MPI_INT, prod, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    for (int i = 0; i < 4; i++)
        CHECK(mout[i] == want[i], "iallreduce ordered product [%d] = %d", i, mout[i]);
    MPI_Op_commutative(prod, &commute);
    CHECK(commute == 0, "non-commutative reported %d", commute);

    /* Scan and Exscan: sums of ranks and the ordered product up to each
     * rank (Exscan leaves rank 0's buffer as it was). */
    {
        int want_scan[4] = {1, 0, 0, 1}, want_ex[4] = {1, 0, 0, 1};
        for (int q = 0; q <= me; q++) {
            int mq[4] = {1 + q * (q % 2), q, q % 2, 1};
            if (q == me)
                for (int i = 0; i < 4; i++)
                    want_ex[i] = want_scan[i];
            int c[4] = {want_scan[0] * mq[0] + want_scan[1] * mq[2], want_scan[0] * mq[1] + want_scan[1] * mq[3],
                        want_scan[2] * mq[0] + want_scan[3] * mq[2], want_scan[2] * mq[1] + want_scan[3] * mq[3]};
            for (int i = 0; i < 4; i++)
                want_scan[i] = c[i];
        }
        MPI_Scan(m, mout, 4, MPI_INT, prod, MPI_COMM_WORLD);
        for (int i = 0; i < 4; i++)
            CHECK(mout[i] == want_scan[i], "scan product [%d] = %d, not %d", i, mout[i], want_scan[i]);
        for (int i = 0; i < 4; i++)
            mout[i] = -7;
        MPI_Exscan(m, mout, 4, MPI_INT, prod, MPI_COMM_WORLD);
        for (int i = 0; i < 4 && me > 0; i++)
            CHECK(mout[i] == want_ex[i], "exscan product [%d] = %d, not %d", i, mout[i], want_ex[i]);
        for (int i = 0; i < 4 && me == 0; i++)
            CHECK(mout[i] == -7, "exscan changed rank 0's buffer");
        long sums[3] = {me, 1, 2L * me}, got[3];
        MPI_Scan(sums, got, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        long s = (long)me * (me + 1) / 2;
        CHECK(got[0] == s && got[1] == me + 1 && got[2] == 2 * s, "scan sum %ld %ld %ld", got[0], got[1], got[2]);
        MPI_Exscan(MPI_IN_PLACE, sums, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        long e = (long)me * (me - 1) / 2;
        if (me > 0)
            CHECK(sums[0] == e && sums[1] == me && sums[2] == 2 * e, "exscan in place %ld %ld %ld", sums[0], sums[1], sums[2]);
        double x = me + 0.5, mx = 0;
        MPI_Scan(&x, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        CHECK(mx == me + 0.5, "scan max %g", mx);
    }
    MPI_Op_free(&prod);

    /* A non-commutative operation of the program's on a derived,
     * non-contiguous datatype: 2x2 matrices whose rows are 3 ints apart
     * (the gap untouched), two of them, by Allreduce and Reduce. */
    {
        MPI_Datatype gapped;
        MPI_Type_vector(2, 2, 3, MPI_INT, &gapped);
        MPI_Type_commit(&gapped);
        MPI_Op gprod;
        MPI_Op_create(matmul_gapped, 0, &gprod);
        int gm[10], gout[10], want2[4] = {1, 0, 0, 1};
        for (int k = 0; k < 2; k++) {
            int *g = gm + 5 * k;
            g[0] = 1 + me * (me % 2); g[1] = me; g[2] = -7; g[3] = me % 2; g[4] = 1;
        }
        for (int r = 0; r < n; r++) {
            int mr[4] = {1 + r * (r % 2), r, r % 2, 1};
            int c[4] = {want2[0] * mr[0] + want2[1] * mr[2], want2[0] * mr[1] + want2[1] * mr[3],
                        want2[2] * mr[0] + want2[3] * mr[2], want2[2] * mr[1] + want2[3] * mr[3]};
            for (int i = 0; i < 4; i++)
                want2[i] = c[i];
        }
        for (int i = 0; i < 10; i++)
            gout[i] = -9;
        MPI_Allreduce(gm, gout, 2, gapped, gprod, MPI_COMM_WORLD);
        for (int k = 0; k < 2; k++) {
            int *g = gout + 5 * k;
            CHECK(g[0] == want2[0] && g[1] == want2[1] && g[3] == want2[2] && g[4] == want2[3],
                  "gapped allreduce %d: %d %d %d %d", k, g[0], g[1], g[3], g[4]);
            CHECK(g[2] == -9, "gapped allreduce wrote the gap: %d", g[2]);
        }
        for (int i = 0; i < 10; i++)
            gout[i] = -9;
        MPI_Reduce(gm, gout, 2, gapped, gprod, n - 1, MPI_COMM_WORLD);
        if (me == n - 1)
            for (int k = 0; k < 2; k++) {
                int *g = gout + 5 * k;
                CHECK(g[0] == want2[0] && g[1] == want2[1] && g[3] == want2[2] && g[4] == want2[3],
                      "gapped reduce %d: %d %d %d %d", k, g[0], g[1], g[3], g[4]);
            }
        /* Scan and Exscan of the same: the product up to each rank. */
        int upto[4] = {1, 0, 0, 1}, below[4] = {1, 0, 0, 1};
        for (int q = 0; q <= me; q++) {
            int mq[4] = {1 + q * (q % 2), q, q % 2, 1};
            if (q == me)
                for (int i = 0; i < 4; i++)
                    below[i] = upto[i];
            int c[4] = {upto[0] * mq[0] + upto[1] * mq[2], upto[0] * mq[1] + upto[1] * mq[3],
                        upto[2] * mq[0] + upto[3] * mq[2], upto[2] * mq[1] + upto[3] * mq[3]};
            for (int i = 0; i < 4; i++)
                upto[i] = c[i];
        }
        for (int i = 0; i < 10; i++)
            gout[i] = -9;
        MPI_Scan(gm, gout, 2, gapped, gprod, MPI_COMM_WORLD);
        for (int k = 0; k < 2; k++) {
            int *g = gout + 5 * k;
            CHECK(g[0] == upto[0] && g[1] == upto[1] && g[3] == upto[2] && g[4] == upto[3] && g[2] == -9,
                  "gapped scan %d: %d %d %d %d", k, g[0], g[1], g[3], g[4]);
        }
        for (int i = 0; i < 10; i++)
            gout[i] = -9;
        MPI_Exscan(gm, gout, 2, gapped, gprod, MPI_COMM_WORLD);
        for (int k = 0; k < 2 && me > 0; k++) {
            int *g = gout + 5 * k;
            CHECK(g[0] == below[0] && g[1] == below[1] && g[3] == below[2] && g[4] == below[3],
                  "gapped exscan %d: %d %d %d %d", k, g[0], g[1], g[3], g[4]);
        }
        /* Reduce_scatter_block of the same: one matrix to each rank, of
         * n matrices each rank gives (its own, n times). */
        int *many = malloc(sizeof(int) * 5 * n), mineblk[5] = {-9, -9, -9, -9, -9};
        for (int k = 0; k < n; k++)
            for (int i = 0; i < 5; i++)
                many[5 * k + i] = gm[i];
        MPI_Reduce_scatter_block(many, mineblk, 1, gapped, gprod, MPI_COMM_WORLD);
        CHECK(mineblk[0] == want2[0] && mineblk[1] == want2[1] && mineblk[3] == want2[2] && mineblk[4] == want2[3] && mineblk[2] == -9,
              "gapped reduce_scatter_block: %d %d %d %d", mineblk[0], mineblk[1], mineblk[3], mineblk[4]);
        free(many);
        /* Iallreduce and Ireduce of the same, outstanding together and
         * completed in the other order. */
        int gout2[10];
        for (int i = 0; i < 10; i++)
            gout[i] = gout2[i] = -9;
        MPI_Request rq[2];
        MPI_Iallreduce(gm, gout, 2, gapped, gprod, MPI_COMM_WORLD, &rq[0]);
        MPI_Ireduce(gm, gout2, 2, gapped, gprod, 0, MPI_COMM_WORLD, &rq[1]);
        MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        for (int k = 0; k < 2; k++) {
            int *g = gout + 5 * k, *h = gout2 + 5 * k;
            CHECK(g[0] == want2[0] && g[1] == want2[1] && g[3] == want2[2] && g[4] == want2[3] && g[2] == -9,
                  "gapped iallreduce %d: %d %d %d %d", k, g[0], g[1], g[3], g[4]);
            if (me == 0)
                CHECK(h[0] == want2[0] && h[1] == want2[1] && h[3] == want2[2] && h[4] == want2[3] && h[2] == -9,
                      "gapped ireduce %d: %d %d %d %d", k, h[0], h[1], h[3], h[4]);
        }
        /* Two outstanding together, completed in opposite orders by ranks
         * 0-1 and 2-3 (at 4 ranks, rank 2 forwards rank 3's part to rank
         * 0): each rank's wait must move the other on. */
        for (int i = 0; i < 10; i++)
            gout[i] = gout2[i] = -9;
        MPI_Iallreduce(gm, gout, 2, gapped, gprod, MPI_COMM_WORLD, &rq[0]);
        MPI_Iallreduce(gm, gout2, 2, gapped, gprod, MPI_COMM_WORLD, &rq[1]);
        MPI_Wait(&rq[(me / 2) % 2], MPI_STATUS_IGNORE);
        MPI_Wait(&rq[1 - (me / 2) % 2], MPI_STATUS_IGNORE);
        for (int k = 0; k < 2; k++) {
            int *g = gout + 5 * k, *h = gout2 + 5 * k;
            CHECK(g[0] == want2[0] && g[1] == want2[1] && g[3] == want2[2] && g[4] == want2[3] && g[2] == -9,
                  "crossed iallreduce %d: %d %d %d %d", k, g[0], g[1], g[3], g[4]);
            CHECK(h[0] == want2[0] && h[1] == want2[1] && h[3] == want2[2] && h[4] == want2[3] && h[2] == -9,
                  "crossed iallreduce %d: %d %d %d %d", k, h[0], h[1], h[3], h[4]);
        }
        MPI_Op_free(&gprod);
        MPI_Type_free(&gapped);
    }

    report_errors();
    MPI_Finalize();
    return 0;
}
