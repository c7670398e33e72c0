// free consumes the window: it cannot be used afterwards.
use onesided::prelude::*;

fn twice(window: Window) -> Result<(), onesided::Error> {
    window.free()?;
    let epoch = window.lock_all(Assert::empty())?;
    Ok(epoch.unlock()?)
}

fn main() {}
