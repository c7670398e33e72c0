//! onesided-bench: side-by-side benchmarks against MPICH.
//!
//! The `onesided-bench` program (`src/bin/onesided-bench.rs`) runs the
//! suites `window`, `get`, `put`, `atomic` and `ibarrier` on onesided
//! ([`suites`], under `osrun`) and on an MPICH peer written in C
//! (`benches/mpich/rma.c`, built by `benches/mpich/build.sh` with MPICH
//! 5.0.2 from PyPI into `target/mpich-venv`), alternating the two, and
//! prints a table, JSON lines and SVG plots ([`report`]); [`driver`] holds
//! its command line and the arithmetic of rounds.
//!
//! Decisions: both sides run the same cases with the same sizes,
//! repetition counts and checks; onesided uses allocated windows for
//! `get`/`put`/`atomic` (its created windows take the same paths), the
//! peer reports the faster of its created and allocated windows; times are
//! medians per side over rounds of per-run medians; onesided runs on the
//! system's libfabric and MPICH on the one in its wheel.
#![warn(missing_docs)]

pub mod driver;
pub mod report;
pub mod suites;
