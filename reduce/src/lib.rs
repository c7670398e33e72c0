//! onesided-reduce: master/worker reduction (being built).
//!
//! This crate will hold the reduction of `shared/spec/distributed-reduction.md`:
//! user-defined reducer bodies, futures (`is_done`, `get`), concurrent
//! reductions by id, performance-aware pairing, one-sided data fetch between
//! workers, ping-based failure detection, on-disk replicas and recovery.
//! Built so far: reduction paths ([`path`]) and the master's scheduler
//! with its recovery steps ([`schedule`]), pure.

#![forbid(unsafe_code)]

pub mod path;
pub mod schedule;
