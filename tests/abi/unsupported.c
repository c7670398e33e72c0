/* A function onesided does not implement (MPI_Pack_external_size):
 * with MPI_ERRORS_RETURN on MPI_COMM_WORLD ("return") the call
 * returns MPI_ERR_UNSUPPORTED_OPERATION, twice, and the library says so
 * once; with the default handler ("fatal") the job ends. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Aint x = 0;
    int class = -1;
    MPI_Init(&argc, &argv);
    if (argc > 1 && strcmp(argv[1], "return") == 0)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 0; i < 2; i++) {
        int code = MPI_Pack_external_size("external32", 1, MPI_INT, &x);
        MPI_Error_class(code, &class);
        printf("class %d\n", class);
    }
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
