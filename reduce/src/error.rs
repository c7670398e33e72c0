//! The reduction's errors.

use crate::schedule::Failure;

/// What went wrong in a reduction.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A call that cannot run: what is wrong.
    #[error("bad reduction: {0}")]
    Usage(String),
    /// The reduction could not finish: which rank failed and how.
    #[error("reduction {id} failed: {failure}")]
    Failed {
        /// The reduction's id.
        id: u64,
        /// The rank that failed, and how.
        failure: Failure,
    },
    /// Storing or reading a replica failed: the file and the reason.
    #[error("replica {path}: {source}")]
    Replica {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The one-sided layer failed.
    #[error(transparent)]
    Rma(#[from] onesided_rma::Error),
    /// The fabric failed.
    #[error(transparent)]
    Fabric(#[from] onesided_fabric::Error),
}
