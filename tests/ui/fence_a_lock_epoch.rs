// A lock epoch has no fences: `fence` exists only on a fence epoch.
use onesided::prelude::*;

fn misuse(window: &Window) -> Result<(), onesided::Error> {
    let mut epoch = window.lock_all(Assert::empty())?;
    epoch.fence(Assert::empty())?;
    epoch.unlock()?;
    Ok(())
}

fn main() {}
