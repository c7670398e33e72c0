//! How threads wait on an endpoint: blocking on the completion queue's
//! wait object (a [`WaitObject`] for [`Backoff`]s), and the background
//! progress thread.
//!
//! [`Backoff`]: crate::progress::Backoff

use std::os::fd::{AsRawFd, FromRawFd};
use std::ptr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::EndpointState;
use crate::progress::WaitObject;

/// How often the background thread checks whether an application that was
/// making progress itself has stopped doing so. Waking more often costs the
/// application's own latency (figures: docs/measurements.md, "Active
/// checks"); it bounds how soon the thread takes over once the application
/// turns to computing.
const ACTIVE_CHECK_INTERVAL: Duration = Duration::from_millis(10);
/// How long the application and the completion queue stay quiet before
/// the background thread sleeps up to [`IDLE_SLEEP`] at a time instead of
/// the endpoint's `max_sleep`.
const IDLE_AFTER: Duration = Duration::from_millis(100);
/// The background thread's longest sleep once all is quiet: 100 wake-ups
/// a second instead of 2000. Each wake-up takes a core for a moment, and
/// where ranks outnumber cores it hands the core to whichever process the
/// scheduler picks next: the idle processes of one job sped up another
/// job's busy-polling collectives many times over (figures:
/// docs/measurements.md, "Idle sleep"). The price: a peer's operation that
/// needs this process's progress, after 100 ms in which nothing happened
/// here, waits up to 10 ms.
const IDLE_SLEEP: Duration = Duration::from_millis(10);
/// How long the background thread blocks on the completion queue's wait
/// object at a time (it looks for the endpoint's end in between).
const BLOCK_FOR: Duration = Duration::from_millis(50);

impl WaitObject for EndpointState {
    /// Reads the completion queue; when it is empty and `fi_trywait` says
    /// the wait object will signal the next event, blocks on its file
    /// descriptor for at most `max` (without one, sleeps `max`).
    fn block(&self, max: Duration) {
        let Some(fd) = self.cq_fd else {
            return std::thread::sleep(max);
        };
        // The caller makes progress itself: the background thread stays
        // out of its way.
        self.note_app_progress();
        let may_block = {
            let mut core = self.lock();
            core.poll() == 0 && core.handles.try_wait()
        };
        if may_block {
            wait_readable(&[fd], max);
        }
    }
}

/// An eventfd as a file (written to wake whoever polls it); none if the
/// system refuses one.
pub(super) fn event_file() -> Option<std::fs::File> {
    // SAFETY: eventfd takes no pointers; a negative result is an error.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    // SAFETY: fd is a new descriptor owned by nothing else.
    (fd >= 0).then(|| unsafe { std::fs::File::from_raw_fd(fd) })
}

/// Blocks until one of `fds` (at most two; negative ones are ignored) is
/// readable or `max` has passed.
fn wait_readable(fds: &[i32], max: Duration) {
    let mut pfds = [-1, -1].map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    for (pfd, &fd) in pfds.iter_mut().zip(fds) {
        pfd.fd = fd;
    }
    let timeout = libc::timespec {
        tv_sec: max.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: max.subsec_nanos() as libc::c_long,
    };
    // SAFETY: pfds holds two valid pollfds (ppoll skips a negative fd)
    // and timeout is a valid timespec; the fds are the CQ's and the
    // endpoint's stop eventfd, which outlive every waiter (the endpoint's
    // handles close after its background thread is joined, and waiters
    // borrow or hold the endpoint's shared state).
    unsafe { libc::ppoll(pfds.as_mut_ptr(), 2, &timeout, ptr::null()) };
}

/// The background thread's pause of `d`: ends early when the endpoint
/// ends.
fn nap(shared: &EndpointState, d: Duration) {
    match &shared.stop_wake {
        Some(wake) => wait_readable(&[wake.as_raw_fd()], d),
        None => std::thread::sleep(d),
    }
}

/// The background progress thread: polls when the application does not,
/// blocking on the completion queue's file descriptor where there is one and
/// sleeping in doubling steps (up to the endpoint's `max_sleep`,
/// `ACTIVE_CHECK_INTERVAL` while the application is busy in calls that do
/// not poll: [`crate::Endpoint::note_busy`], or [`IDLE_SLEEP`] once nothing
/// happened for [`IDLE_AFTER`]) otherwise. It never spins: it runs beside
/// the application's own threads.
pub(super) fn background_progress(shared: &EndpointState) {
    const FIRST_SLEEP: Duration = Duration::from_micros(4);
    // Precise short sleeps: the default 50 us timer slack would stretch them.
    // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
    let mut sleep = FIRST_SLEEP;
    let mut seen = shared.app_progress.load(Ordering::Relaxed);
    let mut seen_busy = shared.app_busy.load(Ordering::Relaxed);
    // Since when neither the application nor the queue did anything.
    let mut quiet_since = Instant::now();
    while !shared.stop.load(Ordering::Acquire) {
        let now = shared.app_progress.load(Ordering::Relaxed);
        if now != seen {
            // The application is making progress itself: stay out of its way.
            seen = now;
            (sleep, quiet_since) = (FIRST_SLEEP, Instant::now());
            nap(shared, ACTIVE_CHECK_INTERVAL);
            continue;
        }
        let busy = shared.app_busy.load(Ordering::Relaxed);
        let app_busy = busy != seen_busy;
        seen_busy = busy;
        if app_busy {
            (sleep, quiet_since) = (FIRST_SLEEP, Instant::now());
        }
        let (found, may_block) = {
            let mut core = shared.lock();
            let found = core.poll();
            let may_block = found == 0 && shared.cq_fd.is_some() && core.handles.try_wait();
            (found, may_block)
        };
        // Awaited futures look again after every pass (what they await
        // may move through shared memory, which the queue does not see).
        let awaited = shared.wake_tasks();
        if found > 0 {
            (sleep, quiet_since) = (FIRST_SLEEP, Instant::now());
        } else if let (true, false, Some(fd)) = (may_block, awaited, shared.cq_fd) {
            let wake = shared.stop_wake.as_ref().map_or(-1, |w| w.as_raw_fd());
            wait_readable(&[fd, wake], BLOCK_FOR);
        } else if app_busy {
            // Busy, not polling: poll now and then only.
            nap(shared, ACTIVE_CHECK_INTERVAL);
        } else {
            nap(shared, sleep);
            let longest = match quiet_since.elapsed() >= IDLE_AFTER && !awaited {
                true => shared.max_sleep.max(IDLE_SLEEP),
                false => shared.max_sleep,
            };
            sleep = (sleep * 2).min(longest);
        }
    }
}
