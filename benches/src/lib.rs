//! onesided-bench: side-by-side benchmarks against MPICH.
//!
//! The `onesided-bench` program (`src/bin/onesided-bench/`) runs the
//! suites `window`, `get`, `put`, `atomic`, `ibarrier` and `collectives`
//! on onesided ([`suites`], under `osrun`) and on MPICH peers written in C
//! (`benches/mpich/rma.c` and `collectives.c`, built by
//! `benches/mpich/build.sh` with MPICH
//! 5.0.2 from PyPI into `target/mpich-venv`), started together each round
//! and taking turns case by case ([`turns`]), and prints a table, JSON
//! lines and SVG plots ([`report`]); [`driver`] holds its command line and
//! the arithmetic of rounds. `onesided-tune` (`src/bin/onesided-tune.rs`)
//! measures the collectives' algorithms into a performance profile.
//! The `abi` suite ([`abi`]) runs one C program of the MPI standard ABI
//! on MPICH's library and on onesided's; not part of `all`.
//! The `malleable` suite ([`malleable`]) runs the malleability study:
//! `sam` jobs that grow and shrink beside the same application written
//! with MPI, and draws the study's figures; it is not part of `all` (a
//! round takes minutes). `onesided-mam-time` times one reconfiguration
//! of one array (the measurements in `docs/measurements.md`). The `reduce`
//! suite ([`reduce`]) runs `onesided-reduce-time` jobs against
//! `benches/mpich/reduce.c`, then kill trials; it is not part of `all`
//! either (a run takes many minutes). The `scale` suite ([`scale`]) runs
//! `scale-check` (of onesided-tests) and `benches/mpich/scale.c` at 2, 4,
//! ... up to `--np` processes: messages, PMI requests and memory per rank
//! and time of each operation whose cost in p the crates state, with the
//! fitted growth; not part of `all` either. `onesided-model`
//! (`src/bin/onesided-model.rs`, pure side in [`model`]) predicts the
//! scale suite's messages and times and every collective's at p = 2 to
//! 16384 beside MPICH's documented choices, on a network of a file
//! (`models/hdr-infiniband.toml`), fitted to a profile, or built in. A side's failed run is run
//! again, twice at most, and counted ([`retries`]). `sam` (`src/bin/sam.rs`, pure
//! side in [`sam`]) is the malleability study's synthetic application:
//! a Conjugate Gradient that reconfigures while it iterates;
//! `benches/mpich/malleable.c` is the same application written with MPI
//! as the study did (alltoallv, windows created per move, spawn + merge).
//!
//! Dependencies (tools, not libraries): `clap` (the command lines),
//! `serde`/`serde_json` (the JSON rows), `toml` (`sam`'s configuration
//! files), `bytemuck` (the bound of data `sam` registers), `plotters` with its SVG backend
//! alone (the plots; text goes into the SVG as text, so no font crate).
//!
//! Decisions: both sides run the same cases with the same sizes,
//! repetition counts and checks; onesided uses allocated windows for
//! `get`/`put`/`atomic` (its created windows take the same paths), the
//! peer reports the faster of its created and allocated windows; times are
//! medians per side over rounds of per-run medians, and the speedup is the
//! median of the rounds' ratios (pair by pair); onesided runs on the
//! system's libfabric and MPICH on the one in its wheel. Collectives are
//! timed window-based from a common start (see `windowed` in [`suites`]).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod abi;
pub mod driver;
pub mod malleable;
pub mod model;
pub mod reduce;
pub mod report;
pub mod retries;
pub mod sam;
pub mod scale;
pub mod suites;
pub mod turns;
