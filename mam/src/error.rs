//! The one error type of onesided-mam.

/// Everything that can fail in onesided-mam.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration that cannot run: what is wrong.
    #[error("bad reconfiguration: {0}")]
    Config(String),
    /// A registration that does not fit (a block of the wrong length) or
    /// differs across processes: which data, which process, how.
    #[error("data {data}: {what}")]
    Registration {
        /// The data's index, in registration order.
        data: usize,
        /// What is wrong (naming the process where it differs).
        what: String,
    },
    /// A call the engine's state does not allow now.
    #[error("{0}")]
    State(String),
    /// The window layer failed (or a group could not be made).
    #[error(transparent)]
    Rma(#[from] onesided_rma::Error),
    /// A collective failed.
    #[error(transparent)]
    Collective(#[from] onesided_collectives::Error),
    /// The fabric failed.
    #[error(transparent)]
    Fabric(#[from] onesided_fabric::Error),
}
