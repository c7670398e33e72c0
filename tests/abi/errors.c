/* Error classes of the MPI standard ABI with MPI_ERRORS_RETURN: an
 * invalid handle (communicator, datatype, operation, group), rank, count, tag, root, an access outside a window, an access
 * outside any epoch, a bad lock type, a bad assertion; each call returns
 * the class the standard names and changes nothing (the window's memory
 * and the buffers stay as they were). With the argument "fatal", rank 0
 * sends to a rank that does not exist under the default handler: the job
 * ends. Prints "No Errors" at rank 0.
 *
 * MPICH's library leaves some of these unchecked (an access past a
 * window's end writes past it; a bad lock type or assertion is
 * MPI_ERR_ARG): those calls are made and checked on onesided's library
 * only (ONESIDED_EXPECT), known by MPI_Get_library_version. */
#include "check.h"
#include <string.h>

/* The class of error code `rc`. */
static int class_of(int rc)
{
    int class = -1;
    MPI_Error_class(rc, &class);
    return class;
}

#define EXPECT(call, want)                                                      \
    do {                                                                        \
        int c_ = class_of(call);                                                \
        CHECK(c_ == (want), "%s: class %d, not %d (%s)", #call, c_, want, #want); \
    } while (0)

/* Whether the library is onesided's. */
static int onesided = 0;

#define ONESIDED_EXPECT(call, want) \
    do {                            \
        if (onesided)               \
            EXPECT(call, want);     \
    } while (0)

int main(int argc, char **argv)
{
    int n = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc > 1 && strcmp(argv[1], "fatal") == 0) {
        int v = 0;
        if (me == 0)
            MPI_Send(&v, 1, MPI_INT, n + 5, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        printf("returned from a fatal error\n");
        MPI_Finalize();
        return 0;
    }
    char library[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(library, &len);
    onesided = strncmp(library, "onesided", 8) == 0;
    if (me == 0)
        printf("checks of onesided's library: %s\n", onesided ? "yes" : "no");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int v[4] = {1, 2, 3, 4}, w[4] = {9, 9, 9, 9};

    /* Point-to-point and collectives. */
    EXPECT(MPI_Send(v, 4, MPI_INT, n, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Send(v, -2, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Send(v, 4, MPI_INT, 0, -9, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT(MPI_Send(v, 4, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Send(v, 4, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Bcast(w, 4, MPI_INT, n, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT(MPI_Bcast(w, 4, MPI_INT, -1, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT(MPI_Allreduce(v, w, 4, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP);
    for (int i = 0; i < 4; i++)
        CHECK(w[i] == 9, "a failed call wrote w[%d] = %d", i, w[i]);
    MPI_Group g;
    EXPECT(MPI_Group_incl(MPI_GROUP_NULL, 0, NULL, &g), MPI_ERR_GROUP);
    int size = -1;
    EXPECT(MPI_Comm_size(MPI_COMM_NULL, &size), MPI_ERR_COMM);
    CHECK(size == -1, "a failed Comm_size wrote %d", size);

    /* Windows: 4 longs each, errors returned on the window. */
    long *base = NULL;
    MPI_Win win;
    MPI_Win_allocate(4 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int i = 0; i < 4; i++)
        base[i] = 70 + i;
    MPI_Barrier(MPI_COMM_WORLD);
    long data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int right = (me + 1) % n;
    /* Outside any epoch. */
    EXPECT(MPI_Put(data, 1, MPI_LONG, right, 0, 1, MPI_LONG, win), MPI_ERR_RMA_SYNC);
    EXPECT(MPI_Win_unlock(right, win), MPI_ERR_RMA_SYNC);
    ONESIDED_EXPECT(MPI_Win_lock(12345, right, 0, win), MPI_ERR_LOCKTYPE);
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, n + 2, 0, win), MPI_ERR_RANK);
    ONESIDED_EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, right, 0x7ff00000, win), MPI_ERR_ASSERT);
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    /* Past the window's end, and to a rank that does not exist. */
    ONESIDED_EXPECT(MPI_Put(data, 8, MPI_LONG, right, 0, 8, MPI_LONG, win), MPI_ERR_RMA_RANGE);
    ONESIDED_EXPECT(MPI_Put(data, 1, MPI_LONG, right, 4, 1, MPI_LONG, win), MPI_ERR_RMA_RANGE);
    ONESIDED_EXPECT(MPI_Get(data, 2, MPI_LONG, right, 3, 2, MPI_LONG, win), MPI_ERR_RMA_RANGE);
    EXPECT(MPI_Put(data, 1, MPI_LONG, n + 1, 0, 1, MPI_LONG, win), MPI_ERR_RANK);
    EXPECT(MPI_Put(data, 1, MPI_DATATYPE_NULL, right, 0, 1, MPI_LONG, win), MPI_ERR_TYPE);
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC);
    MPI_Win_unlock(right, win);
    for (int i = 0; i < 8; i++)
        CHECK(data[i] == i + 1, "a failed get wrote data[%d] = %ld", i, data[i]);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++)
        CHECK(base[i] == 70 + i, "a failed put wrote base[%d] = %ld", i, base[i]);
    MPI_Win_free(&win);

    report_errors();
    MPI_Finalize();
    return 0;
}
