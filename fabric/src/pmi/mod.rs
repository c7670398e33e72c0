//! PMI-1 bootstrap: the "simple" wire protocol spoken by MPICH's Hydra
//! (`mpiexec`), Slurm through it, and `osrun`.
//!
//! [`wire`] parses and formats messages without I/O; [`Pmi`] is the client a
//! process uses to learn its rank and exchange endpoint names.

mod client;
pub mod wire;

pub use client::{Pmi, SpawnRequest, ASSIGN, STANDBY_ENV};
pub use wire::{Message, WireError};
