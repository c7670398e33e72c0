//! Requests: operations in flight, completed by `test` (which makes
//! progress) or `wait` (which makes progress and backs off instead of
//! spinning), one at a time or in sets.

use onesided_fabric::progress::{Backoff, DEFAULT_MAX_SLEEP};

use crate::Error;

/// An operation in flight: an `rget` or `rput`, a barrier, a nonblocking
/// collective. Each layer's requests fail with that layer's error
/// ([`Request::Error`]: this crate's for RMA requests and barriers, the
/// collectives' for their runs), which converts from this crate's (a
/// timeout, a fabric error). Sets of different kinds with one error type
/// wait together as `&mut dyn Request<Error = E>` ([`wait_all`],
/// [`wait_any`], [`test_all`]); [`Request::err_into`] gives requests of
/// different layers one error type (the facade's, say).
///
/// ```
/// use onesided_rma::{wait_all, Group, Request, Rma};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let world = onesided_fabric::World::init()?; // one rank without a launcher
/// let rma = Rma::new(world.endpoint())?;
/// let group = Group::world(world.size());
/// let mut first = rma.ibarrier(&group)?;
/// let mut second = rma.ibarrier(&group)?;
/// let mut set: [&mut dyn Request<Error = onesided_rma::Error>; 2] = [&mut first, &mut second];
/// wait_all(&mut set)?;
/// # drop((first, second, rma));
/// # world.finalize()?;
/// # Ok(())
/// # }
/// ```
pub trait Request {
    /// What the operation fails with: its layer's error.
    type Error: From<Error>;

    /// Makes progress; whether the operation has completed.
    ///
    /// # Errors
    /// The operation's error (a dead peer, a timeout, ...).
    fn test(&mut self) -> Result<bool, Self::Error>;

    /// How long a wait on this request may last before it gives up.
    fn timeout(&self) -> std::time::Duration;

    /// The waiting discipline for this request (its endpoint's, for
    /// requests on an endpoint; otherwise [`Backoff::new`]'s, which spins
    /// as a rank with a core of its own does).
    fn backoff(&self) -> Backoff {
        Backoff::new(DEFAULT_MAX_SLEEP)
    }

    /// Waits until the operation completes, backing off (spin, yield,
    /// then sleep) between tests.
    ///
    /// # Errors
    /// As [`Request::test`], or a timeout after [`Request::timeout`].
    fn wait(&mut self) -> Result<(), Self::Error> {
        // Most waits find the operation done: the backoff (an endpoint's
        // holds a reference to it) is made only for one that waits.
        if self.test()? {
            return Ok(());
        }
        let mut backoff = self.backoff();
        while !self.test()? {
            if backoff.pause() > self.timeout() {
                return Err(Error::RequestTimeout(self.timeout()).into());
            }
        }
        Ok(())
    }

    /// This request, failing with `E` (which its errors convert into):
    /// for sets that mix layers' requests.
    fn err_into<E: From<Self::Error> + From<Error>>(self) -> ErrInto<Self, E>
    where
        Self: Sized,
    {
        ErrInto {
            request: self,
            error: std::marker::PhantomData,
        }
    }
}

/// A request whose errors convert into `E` ([`Request::err_into`]).
pub struct ErrInto<R, E> {
    request: R,
    error: std::marker::PhantomData<fn() -> E>,
}

impl<R, E> ErrInto<R, E> {
    /// The request itself (to take its buffers, say).
    pub fn into_inner(self) -> R {
        self.request
    }
}

impl<R: Request, E: From<R::Error> + From<Error>> Request for ErrInto<R, E> {
    type Error = E;

    fn test(&mut self) -> Result<bool, E> {
        Ok(self.request.test()?)
    }

    fn timeout(&self) -> std::time::Duration {
        self.request.timeout()
    }

    fn backoff(&self) -> Backoff {
        self.request.backoff()
    }

    fn wait(&mut self) -> Result<(), E> {
        Ok(self.request.wait()?)
    }
}

/// A request borrowed: sets of different kinds of requests are slices of
/// `&mut dyn Request`.
impl<R: Request + ?Sized> Request for &mut R {
    type Error = R::Error;

    fn test(&mut self) -> Result<bool, R::Error> {
        (**self).test()
    }

    fn timeout(&self) -> std::time::Duration {
        (**self).timeout()
    }

    fn backoff(&self) -> Backoff {
        (**self).backoff()
    }

    fn wait(&mut self) -> Result<(), R::Error> {
        (**self).wait()
    }
}

/// Tests every request once; whether all have completed.
///
/// # Errors
/// The first error of a request.
pub fn test_all<R: Request>(requests: &mut [R]) -> Result<bool, R::Error> {
    let mut all = true;
    for r in requests.iter_mut() {
        all &= r.test()?;
    }
    Ok(all)
}

/// Waits until every request has completed.
///
/// # Errors
/// The first error of a request, or a timeout.
pub fn wait_all<R: Request>(requests: &mut [R]) -> Result<(), R::Error> {
    wait_for(requests, |rs| Ok(test_all(rs)?.then_some(()))).map(drop)
}

/// Waits until one request has completed; returns its index (`None` for an
/// empty set).
///
/// # Errors
/// The first error of a request, or a timeout.
pub fn wait_any<R: Request>(requests: &mut [R]) -> Result<Option<usize>, R::Error> {
    if requests.is_empty() {
        return Ok(None);
    }
    wait_for(requests, |rs| {
        for (i, r) in rs.iter_mut().enumerate() {
            if r.test()? {
                return Ok(Some(i));
            }
        }
        Ok(None)
    })
}

/// Calls `done` until it yields a value, backing off between calls as the
/// first request does (its endpoint's discipline), for at most the longest
/// timeout of the requests.
fn wait_for<R: Request, T>(
    requests: &mut [R],
    mut done: impl FnMut(&mut [R]) -> Result<Option<T>, R::Error>,
) -> Result<Option<T>, R::Error> {
    let limit = requests
        .iter()
        .map(Request::timeout)
        .max()
        .unwrap_or_default();
    let mut backoff = requests
        .first()
        .map_or_else(|| Backoff::new(DEFAULT_MAX_SLEEP), Request::backoff);
    loop {
        if let Some(value) = done(requests)? {
            return Ok(Some(value));
        }
        if backoff.pause() > limit {
            return Err(Error::RequestTimeout(limit).into());
        }
    }
}

pub use onesided_fabric::dissemination;

#[cfg(test)]
mod tests {
    use super::*;

    struct Countdown(u32);

    impl Request for Countdown {
        type Error = Error;

        fn test(&mut self) -> Result<bool, Error> {
            self.0 = self.0.saturating_sub(1);
            Ok(self.0 == 0)
        }
        fn timeout(&self) -> std::time::Duration {
            std::time::Duration::from_secs(5)
        }
    }

    /// An upper layer's error, which this crate's converts into.
    #[derive(Debug, PartialEq)]
    enum Upper {
        Own,
        Below(String),
    }

    impl From<Error> for Upper {
        fn from(e: Error) -> Upper {
            Upper::Below(e.to_string())
        }
    }

    /// An upper layer's request: fails with its own error once `0` runs out.
    struct Failing(u32);

    impl Request for Failing {
        type Error = Upper;

        fn test(&mut self) -> Result<bool, Upper> {
            self.0 = self.0.saturating_sub(1);
            match self.0 {
                0 => Err(Upper::Own),
                _ => Ok(false),
            }
        }
        fn timeout(&self) -> std::time::Duration {
            std::time::Duration::from_secs(5)
        }
    }

    #[test]
    fn requests_of_two_layers_wait_together_with_one_error_type() {
        let mut mine = Countdown(2).err_into::<Upper>();
        let mut theirs = Failing(3);
        let mut set: [&mut dyn Request<Error = Upper>; 2] = [&mut mine, &mut theirs];
        // This crate's request completes; the upper one's error comes whole.
        assert_eq!(wait_all(&mut set), Err(Upper::Own));
        assert!(mine.test().unwrap());
        let mut late = Countdown(u32::MAX).err_into::<Upper>();
        let mut one: [&mut dyn Request<Error = Upper>; 1] = [&mut late];
        assert!(!test_all(&mut one).unwrap());
        assert_eq!(late.into_inner().0, u32::MAX - 1);
    }

    #[test]
    fn sets_of_requests_complete() {
        let mut set = [Countdown(3), Countdown(1), Countdown(5)];
        assert_eq!(wait_any(&mut set).unwrap(), Some(1));
        wait_all(&mut set).unwrap();
        assert!(test_all(&mut set).unwrap());
        assert_eq!(wait_any::<Countdown>(&mut []).unwrap(), None);
    }
}
