//! [`ReduceFuture`]: a reduction under way, as the caller holds it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crate::buffer::{elements, Buffer};
use crate::message::Key;
use crate::reducer::ReducerState;
use crate::worker::{Outcome, Worker};
use crate::Error;

/// A reduction under way: poll it ([`ReduceFuture::is_done`]) while
/// computing, wait for it ([`ReduceFuture::get`]), or `.await` it.
pub struct ReduceFuture<T> {
    shared: Arc<ReducerState>,
    key: Key,
    taken: bool,
    /// The root's result, given by its copy when the reduction ends.
    result: Arc<Mutex<Option<Vec<T>>>>,
}

impl<T> ReduceFuture<T> {
    /// The future of reduction `key`, whose root's copy leaves its result
    /// in `result`.
    pub(crate) fn new(
        shared: Arc<ReducerState>,
        key: Key,
        result: Arc<Mutex<Option<Vec<T>>>>,
    ) -> ReduceFuture<T> {
        ReduceFuture {
            shared,
            key,
            taken: false,
            result,
        }
    }
}

impl<T: bytemuck::Pod> ReduceFuture<T> {
    /// Its id.
    pub fn id(&self) -> u64 {
        self.key.id
    }

    /// Whether it ended: `Ok(true)` when it finished.
    ///
    /// # Errors
    /// [`Error::Failed`] naming the rank that failed and how.
    pub fn is_done(&self) -> Result<bool, Error> {
        let local = self.shared.lock();
        match local.reductions.get(&self.key).map(|r| r.outcome) {
            Some(Outcome::Running) => Ok(false),
            Some(Outcome::Failed(failure)) => Err(Error::Failed {
                id: self.key.id,
                failure,
            }),
            _ => Ok(true),
        }
    }

    /// Waits for the end: the result at the root (`Some`), `None`
    /// elsewhere. Bounded: a failed process is detected within the
    /// detection's `dead_after`.
    ///
    /// # Errors
    /// [`Error::Failed`] naming the rank that failed and how.
    pub fn get(mut self) -> Result<Option<Vec<T>>, Error> {
        let s = Arc::clone(&self.shared);
        let key = self.key;
        s.wait(|local| !local.running(key));
        loop {
            if let Some(outcome) = self.take(&mut s.lock()) {
                return outcome;
            }
            s.wait(|local| !local.running(key));
        }
    }

    /// The outcome, taken out of `local` once the reduction ended; `None`
    /// while it runs.
    fn take(&mut self, local: &mut Worker) -> Option<Result<Option<Vec<T>>, Error>> {
        let gone = || Error::Usage(format!("reduction {}: its state is gone", self.key.id));
        let Some(r) = local.reductions.get(&self.key) else {
            return Some(Err(gone()));
        };
        let outcome = r.outcome;
        if outcome == Outcome::Running {
            return None;
        }
        let mut r = local.reductions.remove(&self.key)?;
        self.taken = true;
        Some(match outcome {
            Outcome::Running => Err(gone()),
            Outcome::Failed(failure) => Err(Error::Failed {
                id: self.key.id,
                failure,
            }),
            Outcome::Finished(disp) => match (r.root == self.shared.me)
                .then(|| r.lines.remove(&disp))
                .flatten()
            {
                None => Ok(None),
                // The root's own copy goes to `result` whole; a line
                // recovered elsewhere comes as bytes.
                Some(line) => match line.release() {
                    Some(bytes) => Ok(Some(elements(bytes.bytes()))),
                    None => (self.result.lock().unwrap_or_else(|p| p.into_inner()).take())
                        .map(Some)
                        .ok_or_else(gone),
                },
            },
        })
    }
}

/// Awaiting a reduction: the same outcome as [`ReduceFuture::get`],
/// woken when the reducer's handlers and threads change its state (they
/// run on the endpoint's background progress thread and the reducer's own
/// threads, so no executor needs to poll for progress).
impl<T: bytemuck::Pod> Future for ReduceFuture<T> {
    type Output = Result<Option<Vec<T>>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if this.taken {
            return Poll::Ready(Err(Error::Usage(format!(
                "reduction {}: polled after it returned",
                this.key.id
            ))));
        }
        let shared = Arc::clone(&this.shared);
        let mut local = shared.lock();
        match this.take(&mut local) {
            Some(outcome) => Poll::Ready(outcome),
            None => {
                // Registered under the state's lock: a change after it
                // wakes this task.
                let mut wakers = shared.wakers.lock().unwrap_or_else(|p| p.into_inner());
                if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    wakers.push(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

impl<T> Drop for ReduceFuture<T> {
    /// A future dropped before its end leaves the reduction to finish
    /// without a reader: its state goes when it ends.
    fn drop(&mut self) {
        if self.taken {
            return;
        }
        self.shared.lock().abandon(self.key);
    }
}
