//! onesided-rma: remote memory access windows (not built yet).
//!
//! This crate will hold windows that are cheap to create (`create`, `allocate`,
//! `create_dynamic`), with persistent registrations and remote descriptors cached
//! per peer, an on-node shared-memory fast path, passive-target epochs
//! (lock/lock_all/flush) and active-target `fence`, `put`/`get`/`rput`/`rget`
//! and atomics on `bytemuck::Pod` elements, requests and `ibarrier`.
//! See `shared/DESIGN.md`, section rma/.
