/* The environment, communicators, groups, error classes and collectives of
 * the MPI standard ABI, checked element by element. Built once with
 * mpicc_abi; passes on MPICH's libmpi_abi.so.1 and on onesided's. Prints
 * "No Errors" at rank 0 when every rank passed. */
#include "check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void environment(void)
{
    int flag = 0, version = 0, subversion = 0, len = 0, provided = -1;
    char name[MPI_MAX_PROCESSOR_NAME], library[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Initialized(&flag);
    CHECK(flag == 1, "MPI_Initialized gave %d", flag);
    MPI_Finalized(&flag);
    CHECK(flag == 0, "MPI_Finalized gave %d", flag);
    MPI_Get_version(&version, &subversion);
    CHECK(version >= 4, "version %d.%d", version, subversion);
    MPI_Get_processor_name(name, &len);
    CHECK(len > 0 && (int)strlen(name) == len, "processor name '%s' of %d", name, len);
    MPI_Get_library_version(library, &len);
    CHECK(len > 0, "library version of length %d", len);
    MPI_Query_thread(&provided);
    CHECK(provided == MPI_THREAD_SINGLE, "thread level %d", provided);
    MPI_Is_thread_main(&flag);
    CHECK(flag == 1, "MPI_Is_thread_main gave %d", flag);
    double t0 = MPI_Wtime(), t1 = MPI_Wtime();
    CHECK(t1 >= t0 && MPI_Wtick() > 0.0, "Wtime %g then %g", t0, t1);
    int size = 0;
    MPI_Type_size(MPI_DOUBLE, &size);
    CHECK(size == 8, "MPI_DOUBLE of %d bytes", size);
    MPI_Type_size(MPI_2INT, &size);
    CHECK(size == 8, "MPI_2INT of %d bytes", size);
    MPI_Aint lb = -1, extent = -1;
    MPI_Type_get_extent(MPI_INT, &lb, &extent);
    CHECK(lb == 0 && extent == 4, "MPI_INT: lb %ld extent %ld", (long)lb, (long)extent);
    int *tag_ub = NULL;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    CHECK(flag && *tag_ub >= 32767, "MPI_TAG_UB");
    MPI_Info info, copy;
    char value[MPI_MAX_INFO_VAL + 1], key[MPI_MAX_INFO_KEY + 1];
    int nkeys = 0, vlen = 0, buflen = 0;
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "false");
    MPI_Info_set(info, "alpha", "1");
    MPI_Info_set(info, "no_locks", "true");
    MPI_Info_get_nkeys(info, &nkeys);
    CHECK(nkeys == 2, "info of %d keys", nkeys);
    MPI_Info_get_nthkey(info, 1, key);
    CHECK(strcmp(key, "alpha") == 0, "second key '%s'", key);
    MPI_Info_dup(info, &copy);
    MPI_Info_delete(info, "alpha");
    MPI_Info_get_valuelen(copy, "no_locks", &vlen, &flag);
    CHECK(flag && vlen == 4, "valuelen %d flag %d", vlen, flag);
    buflen = (int)sizeof value;
    MPI_Info_get_string(copy, "no_locks", &buflen, value, &flag);
    CHECK(flag && buflen == 5 && strcmp(value, "true") == 0, "get_string '%s' of %d", value, buflen);
    MPI_Info_get_nkeys(info, &nkeys);
    CHECK(nkeys == 1, "after delete: %d keys", nkeys);
    buflen = (int)sizeof value;
    MPI_Info_get_string(info, "alpha", &buflen, value, &flag);
    CHECK(!flag, "a deleted key is found");
    MPI_Info_free(&info);
    MPI_Info_free(&copy);
    CHECK(info == MPI_INFO_NULL && copy == MPI_INFO_NULL, "freed info is not null");
    void *mem = NULL;
    MPI_Alloc_mem(1024, MPI_INFO_NULL, &mem);
    CHECK(mem != NULL, "MPI_Alloc_mem");
    memset(mem, 1, 1024);
    MPI_Free_mem(mem);
}

static void communicators(int n)
{
    MPI_Comm dup, half, self_dup;
    int rank = -1, size = -1, result = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_rank(dup, &rank);
    MPI_Comm_size(dup, &size);
    CHECK(rank == me && size == n, "dup: rank %d size %d", rank, size);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &result);
    CHECK(result == MPI_CONGRUENT, "compare world and dup: %d", result);
    MPI_Comm_compare(dup, dup, &result);
    CHECK(result == MPI_IDENT, "compare dup and dup: %d", result);
    MPI_Comm_dup(MPI_COMM_SELF, &self_dup);
    MPI_Comm_size(self_dup, &size);
    CHECK(size == 1, "self: size %d", size);
    char cname[MPI_MAX_OBJECT_NAME];
    int clen = 0;
    MPI_Comm_get_name(MPI_COMM_WORLD, cname, &clen);
    CHECK(strcmp(cname, "MPI_COMM_WORLD") == 0 && clen == 14, "world's name '%s'", cname);
    MPI_Comm_set_name(self_dup, "mine");
    MPI_Comm_get_name(self_dup, cname, &clen);
    CHECK(strcmp(cname, "mine") == 0 && clen == 4, "name '%s'", cname);
    MPI_Comm_free(&self_dup);
    CHECK(self_dup == MPI_COMM_NULL, "freed self dup is not null");

    /* Two halves by parity, ranked in reverse. */
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, n - me, &half);
    MPI_Comm_rank(half, &rank);
    MPI_Comm_size(half, &size);
    int want_size = (n + 1 - me % 2) / 2;
    int want_rank = (want_size - 1) - me / 2;
    CHECK(size == want_size && rank == want_rank, "split: rank %d of %d, not %d of %d",
          rank, size, want_rank, want_size);
    int sum = 0;
    MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, half);
    int want = 0;
    for (int r = me % 2; r < n; r += 2)
        want += r;
    CHECK(sum == want, "allreduce over a half: %d, not %d", sum, want);

    MPI_Group world_group, odd;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    int gsize = 0, grank = -1;
    MPI_Group_size(world_group, &gsize);
    MPI_Group_rank(world_group, &grank);
    CHECK(gsize == n && grank == me, "world group: %d of %d", grank, gsize);
    int ranks[2] = {n - 1, 0};
    MPI_Group_incl(world_group, n > 1 ? 2 : 1, ranks, &odd);
    int back[2] = {-1, -1};
    MPI_Group_translate_ranks(odd, n > 1 ? 2 : 1, (int[]){0, 1}, world_group, back);
    CHECK(back[0] == n - 1 && (n == 1 || back[1] == 0), "translate: %d %d", back[0], back[1]);
    MPI_Group_free(&odd);

    /* Set operations and comparisons of groups. */
    MPI_Group evens, lows, both, either, rest;
    int gcmp = 0, zero = 0;
    MPI_Group_excl(world_group, n / 2, (int[]){1, 3, 5, 7, 9, 11, 13, 15}, &evens);
    MPI_Group_size(evens, &gsize);
    CHECK(gsize == (n + 1) / 2, "excl: %d members", gsize);
    MPI_Group_incl(world_group, 1, &zero, &lows);
    MPI_Group_intersection(evens, lows, &both);
    MPI_Group_size(both, &gsize);
    CHECK(gsize == 1, "intersection: %d members", gsize);
    MPI_Group_union(lows, evens, &either);
    MPI_Group_compare(either, evens, &gcmp);
    CHECK(gcmp == MPI_IDENT, "union of a subset: %d", gcmp);
    MPI_Group_difference(evens, lows, &rest);
    MPI_Group_size(rest, &gsize);
    CHECK(gsize == (n + 1) / 2 - 1, "difference: %d members", gsize);

    /* A communicator of the even ranks (collective over the world), and
     * one of rank 0 and the last (by its members alone). */
    MPI_Comm even_comm, ends;
    MPI_Comm_create(MPI_COMM_WORLD, evens, &even_comm);
    if (me % 2 == 0) {
        int esize = 0, erank = -1;
        MPI_Comm_size(even_comm, &esize);
        MPI_Comm_rank(even_comm, &erank);
        CHECK(esize == (n + 1) / 2 && erank == me / 2, "even comm: %d of %d", erank, esize);
        MPI_Comm_free(&even_comm);
    } else {
        CHECK(even_comm == MPI_COMM_NULL, "an odd rank got the even comm");
    }
    if (me == 0 || me == n - 1) {
        MPI_Group ends_group;
        int ranks2[2] = {0, n - 1};
        MPI_Group_incl(world_group, n > 1 ? 2 : 1, ranks2, &ends_group);
        MPI_Comm_create_group(MPI_COMM_WORLD, ends_group, 7, &ends);
        int total = 0;
        MPI_Allreduce(&me, &total, 1, MPI_INT, MPI_SUM, ends);
        CHECK(total == (n > 1 ? n - 1 : 0), "create_group allreduce %d", total);
        MPI_Comm_free(&ends);
        MPI_Group_free(&ends_group);
    }
    MPI_Group_free(&evens);
    MPI_Group_free(&lows);
    MPI_Group_free(&both);
    MPI_Group_free(&either);
    MPI_Group_free(&rest);
    MPI_Group_free(&world_group);

    /* The ranks of this host, ranked in reverse. */
    MPI_Comm host;
    int hsize = 0, hrank = -1, ones = 0, inter = 1;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, n - me, MPI_INFO_NULL, &host);
    MPI_Comm_size(host, &hsize);
    MPI_Comm_rank(host, &hrank);
    MPI_Allreduce((int[]){1}, &ones, 1, MPI_INT, MPI_SUM, host);
    CHECK(hsize >= 1 && ones == hsize && hrank >= 0 && hrank < hsize, "host comm: %d of %d", hrank, hsize);
    MPI_Comm_test_inter(host, &inter);
    CHECK(inter == 0, "an intercommunicator");
    MPI_Comm_free(&host);

    /* Error classes, returned on a communicator of its own. */
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    MPI_Errhandler handler;
    MPI_Comm_get_errhandler(dup, &handler);
    CHECK(handler == MPI_ERRORS_RETURN, "errhandler not returned");
    int code = 0, class = 0, x = 1, len = 0;
    char text[MPI_MAX_ERROR_STRING];
    code = MPI_Bcast(&x, 1, MPI_INT, n + 3, dup);
    MPI_Error_class(code, &class);
    CHECK(class == MPI_ERR_ROOT, "root out of range: class %d", class);
    code = MPI_Bcast(&x, -1, MPI_INT, 0, dup);
    MPI_Error_class(code, &class);
    CHECK(class == MPI_ERR_COUNT, "negative count: class %d", class);
    code = MPI_Bcast(&x, 1, MPI_DATATYPE_NULL, 0, dup);
    MPI_Error_class(code, &class);
    CHECK(class == MPI_ERR_TYPE, "null datatype: class %d", class);
    code = MPI_Allreduce(&x, &class, 1, MPI_INT, MPI_OP_NULL, dup);
    MPI_Error_class(code, &class);
    CHECK(class == MPI_ERR_OP, "null op: class %d", class);
    MPI_Error_string(code, text, &len);
    CHECK(len > 0 && (int)strlen(text) == len, "error string of length %d", len);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
}

static void collectives(int n)
{
    MPI_Barrier(MPI_COMM_WORLD);

    /* Bcast of doubles from the last rank. */
    double d[5];
    for (int i = 0; i < 5; i++)
        d[i] = me == n - 1 ? 0.5 * i + 7 : -1;
    MPI_Bcast(d, 5, MPI_DOUBLE, n - 1, MPI_COMM_WORLD);
    for (int i = 0; i < 5; i++)
        CHECK(d[i] == 0.5 * i + 7, "bcast [%d] = %g", i, d[i]);

    /* Allreduce of several types and operations, and in place. */
    long in[4] = {me, me * 2 + 1, -me, 1L << me % 20}, out[4];
    MPI_Allreduce(in, out, 4, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    long s = 0, s2 = 0, bits = 0;
    for (int r = 0; r < n; r++) {
        s += r;
        s2 += r * 2 + 1;
        bits += 1L << r % 20;
    }
    CHECK(out[0] == s && out[1] == s2 && out[2] == -s, "allreduce long sum %ld %ld %ld", out[0], out[1], out[2]);
    int mx = me * 3 % 7, got = -1;
    MPI_Allreduce(&mx, &got, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int want = 0;
    for (int r = 0; r < n; r++)
        want = r * 3 % 7 > want ? r * 3 % 7 : want;
    CHECK(got == want, "allreduce max %d, not %d", got, want);
    unsigned band = 0xffu & ~(1u << me % 8), band_out = 0;
    MPI_Allreduce(&band, &band_out, 1, MPI_UNSIGNED, MPI_BAND, MPI_COMM_WORLD);
    unsigned band_want = 0xffu;
    for (int r = 0; r < n; r++)
        band_want &= ~(1u << r % 8);
    CHECK(band_out == band_want, "allreduce band %x, not %x", band_out, band_want);
    int lor = me == n - 1, lor_out = 0;
    MPI_Allreduce(&lor, &lor_out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    CHECK(lor_out == 1, "allreduce lor %d", lor_out);
    double prod[2] = {2.0, me + 1.0};
    MPI_Allreduce(MPI_IN_PLACE, prod, 2, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD);
    double fact = 1;
    for (int r = 1; r <= n; r++)
        fact *= r;
    CHECK(prod[0] == (double)(1L << n) && prod[1] == fact, "in place prod %g %g", prod[0], prod[1]);

    /* Reduce to rank n / 2 of floats, min. */
    float f = 10.0f - me, fmin = -1;
    MPI_Reduce(&f, &fmin, 1, MPI_FLOAT, MPI_MIN, n / 2, MPI_COMM_WORLD);
    if (me == n / 2)
        CHECK(fmin == 10.0f - (n - 1), "reduce min %g", fmin);

    /* Allgather of 3 ints per rank, and in place. */
    int *all = malloc(sizeof(int) * 3 * n);
    int mine[3] = {me, me * me, -me};
    MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < n; r++)
        CHECK(all[3 * r] == r && all[3 * r + 1] == r * r && all[3 * r + 2] == -r, "allgather block %d", r);
    for (int i = 0; i < 3 * n; i++)
        all[i] = i / 3 == me ? 100 + me : -1;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 3, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < 3 * n; i++)
        CHECK(all[i] == 100 + i / 3, "allgather in place [%d] = %d", i, all[i]);

    /* Alltoall of 2 shorts per pair. */
    short *send = malloc(sizeof(short) * 2 * n), *recv = malloc(sizeof(short) * 2 * n);
    for (int r = 0; r < n; r++) {
        send[2 * r] = (short)(100 * me + r);
        send[2 * r + 1] = (short)-(100 * me + r);
    }
    MPI_Alltoall(send, 2, MPI_SHORT, recv, 2, MPI_SHORT, MPI_COMM_WORLD);
    for (int r = 0; r < n; r++)
        CHECK(recv[2 * r] == 100 * r + me && recv[2 * r + 1] == -(100 * r + me), "alltoall from %d", r);

    /* Gather to the last rank, scatter from rank 0. */
    long long ll = 1000 + me, *gathered = malloc(sizeof(long long) * n);
    MPI_Gather(&ll, 1, MPI_LONG_LONG, gathered, 1, MPI_LONG_LONG, n - 1, MPI_COMM_WORLD);
    if (me == n - 1)
        for (int r = 0; r < n; r++)
            CHECK(gathered[r] == 1000 + r, "gather [%d] = %lld", r, gathered[r]);
    for (int r = 0; r < n; r++)
        gathered[r] = 5000 + r;
    long long one = -1;
    MPI_Scatter(gathered, 1, MPI_LONG_LONG, &one, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    CHECK(one == 5000 + me, "scatter gave %lld", one);
    free(all);
    free(send);
    free(recv);
    free(gathered);
}

int main(int argc, char **argv)
{
    int n = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    environment();
    communicators(n);
    collectives(n);
    report_errors();
    MPI_Finalize();
    return 0;
}
