/* What the ABI test programs share: failed checks counted and named
 * with the rank and line, and the one line rank 0 prints at the end. */
#ifndef ONESIDED_ABI_CHECK_H
#define ONESIDED_ABI_CHECK_H

#include <mpi.h>
#include <stdio.h>

static int errors = 0;
static int me = 0;

#define CHECK(cond, ...)                                        \
    do {                                                        \
        if (!(cond)) {                                          \
            errors++;                                           \
            fprintf(stderr, "rank %d: line %d: ", me, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                       \
            fprintf(stderr, "\n");                              \
        }                                                       \
    } while (0)

/* Sums every rank's failed checks: rank 0 prints "No Errors", or how
 * many there were. */
static void report_errors(void)
{
    int total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0) {
        if (total == 0)
            printf("No Errors\n");
        else
            printf("Found %d errors\n", total);
    }
}

#endif
