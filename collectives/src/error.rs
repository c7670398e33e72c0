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
    /// A malformed profile.
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
}
