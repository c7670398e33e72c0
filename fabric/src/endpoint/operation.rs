//! What a posted operation is: its name in errors, its line in the
//! counters ([`crate::stats`]), and whether it enters the peer's side.

/// The kinds of operation the endpoint posts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    /// A tagged message of the application.
    Send,
    /// A control-plane request or notice for a service.
    Control(u16),
    /// A receive.
    Recv,
    /// An RMA read.
    Read,
    /// An RMA write, complete when sent.
    Write,
    /// An RMA write, complete in the target's memory.
    WriteDelivered,
    /// An atomic whose previous value is not wanted.
    Atomic,
    /// An atomic that returns the previous value.
    FetchAtomic,
    /// A compare-and-swap.
    CompareSwap,
}

impl Operation {
    /// Its name in errors.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Send => "send",
            Operation::Control(_) => "control message",
            Operation::Recv => "recv",
            Operation::Read => "read",
            Operation::Write => "write",
            Operation::WriteDelivered => "write_delivered",
            Operation::Atomic => "atomic",
            Operation::FetchAtomic => "fetch atomic",
            Operation::CompareSwap => "compare_swap",
        }
    }

    /// Whether it enters the peer's side (its memory or its queues), which
    /// a process that ended may have left locked; a receive only matches
    /// what arrives.
    pub fn reaches_peer(self) -> bool {
        self != Operation::Recv
    }
}
