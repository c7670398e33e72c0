//! The one error type of the facade.

/// Everything that can fail in onesided: each layer's own error, whole
/// (every variant keeps what failed, the rank, the window, the range).
/// A fabric error reaches the caller as [`Error::Fabric`] whichever
/// layer it came through, and each layer's own error as its variant
/// (a collective's waited for through a [`crate::Request`] included: its
/// requests fail with the collectives' error), so one `match` finds, say,
/// a dead peer (below). The conversions are `From`s, downward only: no layer
/// carries an upper one's error.
///
/// ```
/// use onesided::{fabric, Error};
///
/// fn dead_rank(e: &Error) -> Option<u32> {
///     match e {
///         Error::Fabric(fabric::Error::PeerDead { rank, .. }) => Some(*rank),
///         _ => None,
///     }
/// }
/// let e = Error::from(onesided::rma::Error::Fabric(fabric::Error::PeerDead {
///     op: "window get",
///     rank: 3,
/// }));
/// assert_eq!(dead_rank(&e), Some(3));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The fabric layer: libfabric calls, peers dead or late, PMI,
    /// bootstrap, configuration.
    #[error(transparent)]
    Fabric(onesided_fabric::Error),
    /// Windows, epochs and requests: out of range, wrong rank, epoch
    /// misuse, assertions.
    #[error(transparent)]
    Rma(onesided_rma::Error),
    /// Collectives: mismatched calls, operations, late members, profiles.
    #[error(transparent)]
    Collective(onesided_collectives::Error),
    /// Malleability: reconfigurations and registered data.
    #[error(transparent)]
    Mam(onesided_mam::Error),
    /// The master/worker reduction: failed ranks, replicas, misuse.
    #[error(transparent)]
    Reduce(onesided_reduce::Error),
}

impl From<onesided_reduce::Error> for Error {
    fn from(e: onesided_reduce::Error) -> Error {
        match e {
            onesided_reduce::Error::Fabric(f) => Error::Fabric(f),
            onesided_reduce::Error::Rma(r) => Error::from(r),
            other => Error::Reduce(other),
        }
    }
}

impl From<onesided_mam::Error> for Error {
    fn from(e: onesided_mam::Error) -> Error {
        match e {
            onesided_mam::Error::Fabric(f) => Error::Fabric(f),
            onesided_mam::Error::Rma(r) => Error::from(r),
            onesided_mam::Error::Collective(c) => Error::from(c),
            other => Error::Mam(other),
        }
    }
}

/// A refused finalize loses its `World` here: match on
/// [`onesided_fabric::FinalizeError`] to keep it.
impl From<onesided_fabric::FinalizeError> for Error {
    fn from(e: onesided_fabric::FinalizeError) -> Error {
        Error::Fabric(e.into())
    }
}

impl From<onesided_fabric::Error> for Error {
    fn from(e: onesided_fabric::Error) -> Error {
        Error::Fabric(e)
    }
}

impl From<onesided_rma::Error> for Error {
    fn from(e: onesided_rma::Error) -> Error {
        match e {
            onesided_rma::Error::Fabric(f) => Error::Fabric(f),
            other => Error::Rma(other),
        }
    }
}

impl From<onesided_collectives::Error> for Error {
    fn from(e: onesided_collectives::Error) -> Error {
        match e {
            onesided_collectives::Error::Fabric(f) => Error::Fabric(f),
            onesided_collectives::Error::Rma(r) => Error::from(r),
            other => Error::Collective(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layer_s_error_arrives_whole() {
        let dead = || onesided_fabric::Error::PeerDead { op: "get", rank: 2 };
        let through_rma = Error::from(onesided_rma::Error::Fabric(dead()));
        assert!(matches!(
            through_rma,
            Error::Fabric(onesided_fabric::Error::PeerDead { rank: 2, .. })
        ));
        let range = onesided_rma::Error::OutOfRange {
            what: "window get",
            target: 1,
            window: 7,
            offset: 10,
            len: 8,
            size: 12,
        };
        assert!(matches!(
            Error::from(range),
            Error::Rma(onesided_rma::Error::OutOfRange {
                target: 1,
                window: 7,
                offset: 10,
                ..
            })
        ));
        let late = onesided_collectives::Error::Late {
            rank: 3,
            waited: std::time::Duration::from_secs(1),
        };
        assert!(matches!(
            Error::from(late),
            Error::Collective(onesided_collectives::Error::Late { rank: 3, .. })
        ));
        let nested = onesided_collectives::Error::Rma(onesided_rma::Error::Fabric(dead()));
        assert!(matches!(Error::from(nested), Error::Fabric(_)));
        let reduced = onesided_reduce::Error::Rma(onesided_rma::Error::Fabric(dead()));
        assert!(matches!(Error::from(reduced), Error::Fabric(_)));
    }
}
