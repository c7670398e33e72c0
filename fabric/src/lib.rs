//! onesided-fabric: the libfabric layer of onesided.
//!
//! - [`Provider`] and [`MrMode`]: which libfabric provider, and the memory
//!   registration rules it imposes (all honoured).
//! - [`Endpoint`]: one reliable-datagram endpoint per process with tagged
//!   messages, RMA reads and writes (with remote completion on request;
//!   blocking, or as [`Transfer`]s over buffers the endpoint owns), typed
//!   atomics ([`atomic`]; the provider's, or applied by the target where it
//!   has none or on `tcp`, see [`Atomics`]) and [`MemoryRegion`]s, every
//!   error a value naming the call or the peer.
//! - [`progress`]: progress on every call plus an optional background thread
//!   that never steals a core; [`Endpoint::backoff`] is the one waiting
//!   discipline of the process.
//! - [`control`]: small request/reply services and notices answered by the
//!   progress engine ([`Endpoint::serve`], [`Endpoint::call`],
//!   [`Endpoint::notify`]).
//! - [`mapping`]: mapped memory, anonymous or named shared memory that
//!   processes on one host map to copy instead of using the provider.
//! - [`pmi`]: a PMI-1 client, so programs start under MPICH's `mpiexec`
//!   (Hydra), Slurm through it, or onesided's own `osrun`.
//! - [`cma`] and [`uncached`]: cross-memory reads and copies whose stores
//!   bypass the cache, for the large copies of on-host collectives;
//!   [`pages`]: fresh memory faulted in at once before a large copy.
//! - [`liveness`]: whether a peer's process on this machine has ended,
//!   checked before posting to it once failures are tolerated.
//! - [`stats`]: what an endpoint has sent and posted, by kind, for tests
//!   that assert each protocol's cost in p and for `ONESIDED_STATS=1`.
//! - [`World`]: the bootstrap tying them together.
//!
//! `osrun`, the launcher, is the crate beside this one (`fabric/launcher`,
//! onesided-launcher), which alone depends on a command-line parser.
//!
//! Environment variables read: `ONESIDED_PROVIDER` (`shm`, `tcp`, `sockets`,
//! `verbs`; else `FI_PROVIDER`; else `shm`), `ONESIDED_MR_MODE`,
//! `ONESIDED_PROGRESS`, `ONESIDED_TIMEOUT`, `ONESIDED_ATOMICS` (see
//! [`EndpointConfig::from_env`]),
//! `ONESIDED_CMA` ([`cma::CMA_ENV`]), the `PMI_*` variables and
//! [`world::EVENT_FD_ENV`].
//!
//! All `unsafe` code of onesided lives in this crate and in `fabric-sys`.

#![warn(missing_docs)]

pub mod atomic;
mod atomic_service;
pub mod binomial;
pub mod bootstrap;
pub mod cma;
pub mod control;
pub mod cpu_time;
pub mod dissemination;
mod endpoint;
mod error;
pub mod fnv;
mod handles;
pub mod join;
pub mod liveness;
pub mod mapping;
mod matching;
mod memory;
pub mod pages;
mod peers;
pub mod pmi;
pub mod priority;
pub mod progress;
mod provider;
pub mod raw;
mod slots;
pub mod spin;
pub mod stats;
pub mod uncached;
pub mod world;

pub use atomic::{AtomicOp, Datatype};
pub use endpoint::{
    Endpoint, EndpointConfig, Granted, Incoming, Ranks, Received, Transfer, MAX_RANKS,
};
pub use error::{Error, Result};
pub use mapping::Mapping;
pub use matching::MAX_TAG;
pub use memory::{Access, MemoryRegion, RemoteMemory};
pub use progress::ProgressMode;
pub use provider::{libfabric_loaded, Atomics, MrMode, Provider};
pub use stats::{Stats, Traffic};
pub use world::{FinalizeError, Launch, Spawner, World};
