//! The one error type of onesided-collectives.

/// Everything that can fail in onesided-collectives.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A reduction that does not apply to the element type.
    #[error("reduction {op} does not apply to {element} elements")]
    BadOp {
        /// The operation.
        op: String,
        /// The element type.
        element: &'static str,
    },
    /// A call the ranks cannot agree on, or that does not fit its
    /// buffers: what is wrong.
    #[error("bad collective call: {0}")]
    BadCall(String),
    /// Every algorithm of a collective has failed here.
    #[error("no algorithm of {0} is left (all failed)")]
    NoAlgorithm(&'static str),
    /// A collective waited longer than the endpoint's timeout for a
    /// member (hung, or not making the call).
    #[error("rank {rank} did not take its part within {waited:?}")]
    Late {
        /// The member waited for (its rank in the job).
        rank: u32,
        /// How long this process waited.
        waited: std::time::Duration,
    },
    /// A nonblocking call tested again after it failed (the first test
    /// returned its error, whole).
    #[error("the call failed earlier: {0}")]
    Failed(String),
    /// The window layer (requests, waiting) failed.
    #[error(transparent)]
    Rma(onesided_rma::Error),
    /// The fabric failed.
    #[error(transparent)]
    Fabric(#[from] onesided_fabric::Error),
    /// A malformed profile.
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
}

impl From<onesided_rma::Error> for Error {
    /// A fabric error stays one, whichever layer saw it.
    fn from(e: onesided_rma::Error) -> Error {
        match e {
            onesided_rma::Error::Fabric(f) => Error::Fabric(f),
            other => Error::Rma(other),
        }
    }
}

impl Error {
    /// An alltoallv whose group rank `from` sends `sent` elements to
    /// group rank `to`, which expects `expects`.
    pub(crate) fn sends(from: usize, sent: u64, to: u32, expects: usize) -> Error {
        Error::BadCall(format!(
            "group rank {from} sends {sent} elements to rank {to}, which expects {expects}"
        ))
    }
}
