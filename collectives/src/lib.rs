//! onesided-collectives: native collectives (not built yet).
//!
//! This crate will hold groups, blocking and nonblocking collectives (barrier,
//! bcast, reduce, allreduce, gather(v), scatter(v), allgather(v), alltoall(v),
//! reduce_scatter) with several algorithms each, and the selection of an
//! algorithm per call from a measured performance profile
//! (`shared/spec/algorithm-selection.md`).
