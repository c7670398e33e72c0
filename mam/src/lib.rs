//! onesided-mam: redistribution for malleable jobs (not built yet).
//!
//! This crate will hold the engine of `shared/spec/malleable-redistribution.md`:
//! registered data, block distribution arithmetic from NS to NT processes, the
//! COL / RMA1 / RMA2 methods, the blocking, background-thread, nonblocking and
//! wait-targets strategies, and Merge process management through the launcher.

#![forbid(unsafe_code)]
