//! onesided-reduce: master/worker reduction (not built yet).
//!
//! This crate will hold the reduction of `shared/spec/distributed-reduction.md`:
//! user-defined reducer bodies, futures (`is_done`, `get`), concurrent
//! reductions by id, performance-aware pairing, one-sided data fetch between
//! workers, ping-based failure detection, on-disk replicas and recovery.

#![forbid(unsafe_code)]
