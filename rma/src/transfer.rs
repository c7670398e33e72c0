//! Request-based operations ([`crate::Epoch::rget`],
//! [`crate::Epoch::rput`], and the forms that own their buffer,
//! [`crate::Epoch::rget_owned`] and [`crate::Epoch::rput_owned`]): a
//! transfer in flight, shared between its request and its window (so that
//! `flush`, `unlock`, `fence` and `free` can complete it), and the requests
//! themselves.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use onesided_fabric::progress::Backoff;
use onesided_fabric::Transfer;

use crate::request::Request;
use onesided_fabric::Endpoint;

use crate::Error;

/// A transfer to a target, and its outcome once completed.
pub(crate) struct Inflight {
    target: u32,
    state: Mutex<State>,
}

enum State {
    Running(Transfer),
    /// Completed; the outcome waits for its request.
    Done(Result<Transfer, Error>),
    /// The request has taken the outcome.
    Taken,
}

impl Inflight {
    pub(crate) fn new(target: u32, transfer: Transfer) -> Inflight {
        Inflight {
            target,
            state: Mutex::new(State::Running(transfer)),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        crate::lock_state(&self.state)
    }

    pub(crate) fn target(&self) -> u32 {
        self.target
    }

    pub(crate) fn is_done(&self) -> bool {
        !matches!(*self.state(), State::Running(_))
    }

    /// Tests the transfer once, keeping its outcome.
    pub(crate) fn test(&self) {
        self.step(false);
    }

    /// Whether it completed with an error not taken yet.
    pub(crate) fn failed(&self) -> bool {
        matches!(*self.state(), State::Done(Err(_)))
    }

    /// Tests the transfer once (`wait`: waits for it), keeping its outcome.
    fn step(&self, wait: bool) {
        let mut state = self.state();
        let State::Running(transfer) = &mut *state else {
            return;
        };
        let outcome = if wait {
            transfer.wait().map(|()| true)
        } else {
            transfer.test()
        };
        match outcome {
            Ok(false) => {}
            Ok(true) | Err(_) => {
                let State::Running(transfer) = std::mem::replace(&mut *state, State::Taken) else {
                    return;
                };
                *state = State::Done(outcome.map(|_| transfer).map_err(Error::from));
            }
        }
    }

    /// Waits for the transfer (when running) and keeps its outcome;
    /// whether it succeeded (or its outcome was taken already).
    pub(crate) fn finish(&self) -> bool {
        self.step(true);
        !matches!(&*self.state(), State::Done(Err(_)))
    }

    /// Tests once; the outcome, the first time it is there.
    pub(crate) fn take(&self) -> Option<Result<Transfer, Error>> {
        self.step(false);
        let mut state = self.state();
        if let State::Done(_) = &*state {
            if let State::Done(outcome) = std::mem::replace(&mut *state, State::Taken) {
                return Some(outcome);
            }
        }
        None
    }
}

/// A request-based read ([`crate::Epoch::rget`]): the bytes reach the
/// caller's buffer when it completes. It borrows its window for `'w`
/// (which may not be freed meanwhile) through the window's endpoint.
///
/// ```
/// use onesided_rma::{wait_all, Assert, Group, RemoteAccess, Rma};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let world = onesided_fabric::World::init()?; // one rank without a launcher
/// let rma = Rma::new(world.endpoint())?;
/// let window = rma.allocate(&Group::world(world.size()), 64, RemoteAccess::ReadWrite)?;
/// window.write_local(0, &[1u32; 16])?;
/// let epoch = window.lock_all(Assert::empty())?;
/// let (mut a, mut b) = ([0u32; 8], [0u32; 8]);
/// let mut ra = epoch.rget(0, 0, &mut a)?;
/// let mut rb = epoch.rget(0, 32, &mut b)?;
/// wait_all(&mut [&mut ra, &mut rb])?;
/// drop((ra, rb));
/// assert_eq!((a, b), ([1; 8], [1; 8]));
/// epoch.unlock()?;
/// window.free()?;
/// # drop(rma);
/// # world.finalize()?;
/// # Ok(())
/// # }
/// ```
pub struct Rget<'w, 'b> {
    ep: &'w Endpoint,
    /// `None`: completed (copied already, or finished).
    inflight: Option<Arc<Inflight>>,
    buf: &'b mut [u8],
}

impl<'w, 'b> Rget<'w, 'b> {
    pub(crate) fn new(
        ep: &'w Endpoint,
        inflight: Option<Arc<Inflight>>,
        buf: &'b mut [u8],
    ) -> Rget<'w, 'b> {
        Rget { ep, inflight, buf }
    }
}

impl Request for Rget<'_, '_> {
    type Error = Error;

    fn test(&mut self) -> Result<bool, Error> {
        let Some(inflight) = &self.inflight else {
            return Ok(true);
        };
        match inflight.take() {
            None => Ok(inflight.is_done()),
            Some(outcome) => {
                self.inflight = None;
                let transfer = outcome?;
                self.buf.copy_from_slice(transfer.data());
                Ok(true)
            }
        }
    }

    fn timeout(&self) -> Duration {
        self.ep.timeout()
    }

    fn backoff(&self) -> Backoff {
        self.ep.backoff()
    }
}

/// A request-based write ([`crate::Epoch::rput`]): complete when the
/// bytes are in the target's memory. It borrows its window for `'w`, as
/// [`Rget`] does.
pub struct Rput<'w> {
    ep: &'w Endpoint,
    inflight: Option<Arc<Inflight>>,
}

impl<'w> Rput<'w> {
    pub(crate) fn new(ep: &'w Endpoint, inflight: Option<Arc<Inflight>>) -> Rput<'w> {
        Rput { ep, inflight }
    }
}

impl Request for Rput<'_> {
    type Error = Error;

    fn test(&mut self) -> Result<bool, Error> {
        let Some(inflight) = &self.inflight else {
            return Ok(true);
        };
        match inflight.take() {
            None => Ok(inflight.is_done()),
            Some(outcome) => {
                self.inflight = None;
                outcome.map(|_| true)
            }
        }
    }

    fn timeout(&self) -> Duration {
        self.ep.timeout()
    }

    fn backoff(&self) -> Backoff {
        self.ep.backoff()
    }
}

/// A request-based read or write over a buffer it owns
/// ([`crate::Epoch::rget_owned`], [`crate::Epoch::rput_owned`]): the
/// provider moves the bytes straight between the buffer and the target,
/// with no copy, and the buffer comes back with [`Owned::take_buffer`] once
/// the request has completed. A borrowed buffer could not be lent so: a
/// request leaked with `mem::forget` would end the borrow while the
/// provider still writes. It borrows its window for `'w`, as [`Rget`]
/// does.
pub struct Owned<'w> {
    ep: &'w Endpoint,
    state: OwnedState,
}

enum OwnedState {
    Running(Arc<Inflight>),
    /// Completed: the buffer, until taken.
    Done(Option<Box<[u8]>>),
}

impl<'w> Owned<'w> {
    pub(crate) fn running(ep: &'w Endpoint, inflight: Arc<Inflight>) -> Owned<'w> {
        let state = OwnedState::Running(inflight);
        Owned { ep, state }
    }

    /// A request completed at once (through shared memory), holding `buffer`.
    pub(crate) fn done(ep: &'w Endpoint, buffer: Box<[u8]>) -> Owned<'w> {
        let state = OwnedState::Done(Some(buffer));
        Owned { ep, state }
    }

    /// The buffer (for a read: with the bytes read), once the request has
    /// completed; `None` before that, once taken, and after a failure (a
    /// failed transfer's buffer stays with the endpoint).
    pub fn take_buffer(&mut self) -> Option<Box<[u8]>> {
        match &mut self.state {
            OwnedState::Done(buffer) => buffer.take(),
            OwnedState::Running(_) => None,
        }
    }
}

impl Request for Owned<'_> {
    type Error = Error;

    fn test(&mut self) -> Result<bool, Error> {
        let OwnedState::Running(inflight) = &self.state else {
            return Ok(true);
        };
        match inflight.take() {
            None => Ok(inflight.is_done()),
            Some(Ok(mut transfer)) => {
                self.state = OwnedState::Done(transfer.take_buffer());
                Ok(true)
            }
            Some(Err(e)) => {
                self.state = OwnedState::Done(None);
                Err(e)
            }
        }
    }

    fn timeout(&self) -> Duration {
        self.ep.timeout()
    }

    fn backoff(&self) -> Backoff {
        self.ep.backoff()
    }
}
