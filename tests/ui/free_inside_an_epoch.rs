// An open epoch borrows its window: the window cannot be freed under it.
use onesided::prelude::*;

fn inside(window: Window) -> Result<(), onesided::Error> {
    let epoch = window.lock_all(Assert::empty())?;
    window.free()?;
    Ok(epoch.unlock()?)
}

fn main() {}
