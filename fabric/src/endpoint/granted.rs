//! What the provider granted an endpoint ([`Granted`]): its name,
//! registration modes, orderings, inject size, progress, and who applies
//! atomics; fixed when the endpoint opens.

use super::*;

/// What the provider granted an endpoint, fixed when it opened
/// ([`Endpoint::granted`]).
#[derive(Debug, Clone)]
pub struct Granted {
    pub(crate) provider: Provider,
    /// The bits the provider granted, which the endpoint honours.
    pub(crate) mr_mode: MrMode,
    pub(crate) inject_size: usize,
    pub(crate) source_match: SourceMatch,
    /// Bytes of a key this endpoint's registrations may have.
    pub(crate) key_size: usize,
    pub(crate) auto_progress: bool,
    pub(crate) send_after_atomic: bool,
    pub(crate) write_after_write: bool,
    pub(crate) atomics: Atomics,
    pub(crate) provider_name: String,
}

impl Endpoint {
    /// What the provider granted this endpoint.
    pub fn granted(&self) -> &Granted {
        &self.inner.shared.granted
    }
}

impl Granted {
    /// The provider in use.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The `mr_mode` bits the provider granted, which the endpoint honours.
    pub fn mr_mode(&self) -> MrMode {
        self.mr_mode
    }

    /// Whether a receiver may hold several unexpected messages larger
    /// than the inject size at once: not on libfabric < 1.19's `shm`,
    /// which can hang then (ofiwg/libfabric issue 9143, reproduced here
    /// with four ranks); callers there keep such exchanges in flight one
    /// at a time.
    pub fn queues_large_unexpected(&self) -> bool {
        self.source_match.queues_large_unexpected
    }

    /// Whether a message to a peer is processed there after every atomic
    /// posted to it before (`FI_ORDER_SAW`, transmit and receive): then a
    /// notice may follow an atomic still in flight (as a lock release)
    /// without waiting for it.
    pub fn orders_send_after_atomic(&self) -> bool {
        self.send_after_atomic
    }

    /// libfabric's name of the provider it was given: `tcp` (libfabric
    /// 2.x's native RDM endpoint) or `tcp;ofi_rxm` for [`Provider::Tcp`].
    pub fn provider_name(&self) -> &str {
        &self.provider_name
    }

    /// Who applies the endpoint's atomics: the provider, or the target's
    /// progress engine ([`Atomics::Software`]).
    pub fn atomics(&self) -> Atomics {
        self.atomics
    }

    /// Whether an RMA write to a peer is processed there after every write
    /// posted to it before (`FI_ORDER_WAW`, transmit and receive): then a
    /// [`Endpoint::write_delivered`] completes [`Endpoint::write_injected`]'s
    /// writes before it.
    pub fn orders_write_after_write(&self) -> bool {
        self.write_after_write
    }

    /// The most bytes a send or write may carry without a completion
    /// ([`Endpoint::write_injected`]): the provider's inject size.
    pub fn inject_size(&self) -> usize {
        self.inject_size
    }

    /// Whether the provider moves data without calls into it (tcp with
    /// `FI_PROGRESS_AUTO`).
    pub fn auto_progress(&self) -> bool {
        self.auto_progress
    }
}
