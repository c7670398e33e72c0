//! The `abi` suite: one MPI program of the standard ABI
//! (`benches/mpich/abi.c`, built once with `mpicc_abi`), run on MPICH's
//! `libmpi_abi.so.1` under its `mpiexec` and on onesided's under `osrun
//! --mpi`, taking turns case by case as the other suites do: RMA latency
//! under lock, lock_all + flush and fence, window allocate + free,
//! collectives small and large, send/recv latency and bandwidth. The
//! same binary on both sides, so the rows compare the libraries alone.
//! Not part of `all`.

/// The suite's name.
pub const SUITE: &str = "abi";
