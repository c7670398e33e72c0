/* Packing and datatype introspection of the MPI standard ABI: MPI_Pack
 * and MPI_Unpack of predefined and non-contiguous datatypes at moving
 * positions, MPI_Pack_size, MPI_PACKED data received by a derived
 * datatype and the other way round; MPI_Type_get_envelope and
 * MPI_Type_get_contents of predefined (NAMED), contiguous, vector,
 * hvector, indexed, struct, subarray, resized and dup datatypes, the
 * contents' datatypes usable after the original is freed. Every value is
 * checked; prints "No Errors" at rank 0. */
#include "check.h"
#include <string.h>

/* The envelope of t: counts and combiner as given. */
static void envelope_is(MPI_Datatype t, int ni, int na, int nd, int combiner, const char *what)
{
    int i = -1, a = -1, d = -1, c = -1;
    MPI_Type_get_envelope(t, &i, &a, &d, &c);
    CHECK(i == ni && a == na && d == nd && c == combiner, "%s envelope: %d %d %d %d", what, i, a, d, c);
}

int main(int argc, char **argv)
{
    int n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);

    /* Every other int of 8, as a vector. */
    MPI_Datatype evens;
    MPI_Type_vector(4, 1, 2, MPI_INT, &evens);
    MPI_Type_commit(&evens);

    /* Pack: a double, then the even ints, then two shorts. */
    {
        double d = 2.5 + me;
        int ints[8];
        short two[2] = {7, -7};
        for (int i = 0; i < 8; i++)
            ints[i] = 10 * me + i;
        int size = -1, total = 0, s;
        MPI_Pack_size(1, MPI_DOUBLE, MPI_COMM_WORLD, &s);
        total += s;
        MPI_Pack_size(1, evens, MPI_COMM_WORLD, &s);
        CHECK(s >= 4 * (int)sizeof(int), "pack_size of the vector: %d", s);
        total += s;
        MPI_Pack_size(2, MPI_SHORT, MPI_COMM_WORLD, &s);
        total += s;
        char buf[256];
        int pos = 0;
        MPI_Pack(&d, 1, MPI_DOUBLE, buf, sizeof(buf), &pos, MPI_COMM_WORLD);
        MPI_Pack(ints, 1, evens, buf, sizeof(buf), &pos, MPI_COMM_WORLD);
        MPI_Pack(two, 2, MPI_SHORT, buf, sizeof(buf), &pos, MPI_COMM_WORLD);
        size = pos;
        CHECK(size <= total && size >= (int)(sizeof(double) + 4 * sizeof(int) + 2 * sizeof(short)),
              "packed %d bytes, pack_size says %d", size, total);
        /* Unpack the same in order; the ints into the odd places. */
        double d2 = 0;
        int back[8];
        short two2[2] = {0, 0};
        for (int i = 0; i < 8; i++)
            back[i] = -1;
        pos = 0;
        MPI_Unpack(buf, size, &pos, &d2, 1, MPI_DOUBLE, MPI_COMM_WORLD);
        MPI_Unpack(buf, size, &pos, back + 1, 1, evens, MPI_COMM_WORLD);
        MPI_Unpack(buf, size, &pos, two2, 2, MPI_SHORT, MPI_COMM_WORLD);
        CHECK(pos == size, "unpacked to %d of %d", pos, size);
        CHECK(d2 == d && two2[0] == 7 && two2[1] == -7, "unpacked %g %d %d", d2, two2[0], two2[1]);
        for (int i = 0; i < 8; i++)
            CHECK(back[i] == (i % 2 ? 10 * me + i - 1 : -1), "unpacked int %d: %d", i, back[i]);

        /* Packed data to the right neighbour, received by the vector;
         * the vector's data from the left, received as packed bytes. */
        int right = (me + 1) % n, left = (me + n - 1) % n;
        int got[8];
        for (int i = 0; i < 8; i++)
            got[i] = -1;
        pos = 0;
        MPI_Pack(ints, 1, evens, buf, sizeof(buf), &pos, MPI_COMM_WORLD);
        MPI_Sendrecv(buf, pos, MPI_PACKED, right, 5, got, 1, evens, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 8; i++)
            CHECK(got[i] == (i % 2 ? -1 : 10 * left + i), "packed to a vector, int %d: %d", i, got[i]);
        char in[64];
        int count = -1;
        MPI_Status st;
        MPI_Sendrecv(ints, 1, evens, right, 6, in, sizeof(in), MPI_PACKED, left, 6, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_PACKED, &count);
        int vals[4];
        pos = 0;
        MPI_Unpack(in, count, &pos, vals, 4, MPI_INT, MPI_COMM_WORLD);
        for (int i = 0; i < 4; i++)
            CHECK(vals[i] == 10 * left + 2 * i, "a vector to packed, int %d: %d", i, vals[i]);
    }

    /* Envelopes and contents. */
    envelope_is(MPI_INT, 0, 0, 0, MPI_COMBINER_NAMED, "MPI_INT");
    envelope_is(MPI_DOUBLE_INT, 0, 0, 0, MPI_COMBINER_NAMED, "MPI_DOUBLE_INT");
    envelope_is(evens, 3, 0, 1, MPI_COMBINER_VECTOR, "vector");
    {
        int ints[3];
        MPI_Aint addrs[1];
        MPI_Datatype types[1];
        MPI_Type_get_contents(evens, 3, 0, 1, ints, addrs, types);
        CHECK(ints[0] == 4 && ints[1] == 1 && ints[2] == 2 && types[0] == MPI_INT,
              "vector contents: %d %d %d", ints[0], ints[1], ints[2]);
    }
    {
        MPI_Datatype c, hv, ix, rs, dp, sa;
        MPI_Type_contiguous(3, MPI_DOUBLE, &c);
        MPI_Type_create_hvector(2, 3, 40, MPI_SHORT, &hv);
        int bl[2] = {2, 1}, dl[2] = {0, 5};
        MPI_Type_indexed(2, bl, dl, MPI_FLOAT, &ix);
        MPI_Type_create_resized(MPI_INT, -4, 16, &rs);
        MPI_Type_dup(MPI_CHAR, &dp);
        int sizes[2] = {6, 7}, subs[2] = {2, 3}, starts[2] = {1, 4};
        MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_INT, &sa);
        envelope_is(c, 1, 0, 1, MPI_COMBINER_CONTIGUOUS, "contiguous");
        envelope_is(hv, 2, 1, 1, MPI_COMBINER_HVECTOR, "hvector");
        envelope_is(ix, 5, 0, 1, MPI_COMBINER_INDEXED, "indexed");
        envelope_is(rs, 0, 2, 1, MPI_COMBINER_RESIZED, "resized");
        envelope_is(dp, 0, 0, 1, MPI_COMBINER_DUP, "dup");
        envelope_is(sa, 8, 0, 1, MPI_COMBINER_SUBARRAY, "subarray");
        int ints[8];
        MPI_Aint addrs[2];
        MPI_Datatype types[1];
        MPI_Type_get_contents(hv, 2, 1, 1, ints, addrs, types);
        CHECK(ints[0] == 2 && ints[1] == 3 && addrs[0] == 40 && types[0] == MPI_SHORT, "hvector contents");
        MPI_Type_get_contents(ix, 5, 0, 1, ints, addrs, types);
        CHECK(ints[0] == 2 && ints[1] == 2 && ints[2] == 1 && ints[3] == 0 && ints[4] == 5 && types[0] == MPI_FLOAT,
              "indexed contents: %d %d %d %d %d", ints[0], ints[1], ints[2], ints[3], ints[4]);
        MPI_Type_get_contents(rs, 0, 2, 1, ints, addrs, types);
        CHECK(addrs[0] == -4 && addrs[1] == 16 && types[0] == MPI_INT, "resized contents");
        MPI_Type_get_contents(sa, 8, 0, 1, ints, addrs, types);
        int want[8] = {2, 6, 7, 2, 3, 1, 4, MPI_ORDER_FORTRAN};
        for (int i = 0; i < 8; i++)
            CHECK(ints[i] == want[i], "subarray contents %d: %d", i, ints[i]);

        /* A struct of a double and the vector: its contents give back a
         * vector of the same shape, usable after the original is freed. */
        int sbl[2] = {1, 1};
        MPI_Aint sdl[2] = {0, 8};
        MPI_Datatype sty[2] = {MPI_DOUBLE, evens}, st;
        MPI_Type_create_struct(2, sbl, sdl, sty, &st);
        MPI_Type_free(&evens);
        envelope_is(st, 3, 2, 2, MPI_COMBINER_STRUCT, "struct");
        MPI_Datatype parts[2];
        MPI_Aint at[2];
        MPI_Type_get_contents(st, 3, 2, 2, ints, at, parts);
        CHECK(ints[0] == 2 && ints[1] == 1 && ints[2] == 1 && at[0] == 0 && at[1] == 8 && parts[0] == MPI_DOUBLE,
              "struct contents");
        envelope_is(parts[1], 3, 0, 1, MPI_COMBINER_VECTOR, "the struct's vector");
        int vsize = -1;
        MPI_Aint lb = -1, extent = -1;
        MPI_Type_size(parts[1], &vsize);
        MPI_Type_get_extent(parts[1], &lb, &extent);
        CHECK(vsize == 4 * (int)sizeof(int) && lb == 0 && extent == 7 * (MPI_Aint)sizeof(int),
              "the struct's vector: size %d extent %ld", vsize, (long)extent);
        MPI_Type_free(&parts[1]);
        MPI_Type_free(&st);
        MPI_Type_free(&c);
        MPI_Type_free(&hv);
        MPI_Type_free(&ix);
        MPI_Type_free(&rs);
        MPI_Type_free(&dp);
        MPI_Type_free(&sa);
    }

    report_errors();
    MPI_Finalize();
    return 0;
}
