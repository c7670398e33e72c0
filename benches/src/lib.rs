//! onesided-bench: side-by-side benchmarks against MPICH (not built yet).
//!
//! This crate will hold the `onesided-bench` program (suites `window`, `get`,
//! `put`, `atomic`, `ibarrier`, `collectives`), its MPICH peers in C under
//! `benches/mpich/`, and the tables, JSON lines and SVG plots described in
//! `shared/BENCHMARKS.md`. Today the latency benchmark of the fabric layer is
//! the `pingpong` example of onesided-fabric, and the first MPICH peer
//! (`benches/mpich/window.c`: window creation, MPI_Get latency, ibarrier)
//! builds with `benches/mpich/build.sh`, which installs MPICH 5.0.2 from
//! PyPI into `target/mpich-venv` when missing.
pub mod report;
