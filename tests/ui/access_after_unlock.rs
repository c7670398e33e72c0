// unlock consumes the epoch guard: no access through it afterwards.
use onesided::prelude::*;

fn after(window: &Window) -> Result<(), onesided::Error> {
    let epoch = window.lock_all(Assert::empty())?;
    epoch.unlock()?;
    epoch.put(0, 0, &[1u8])?;
    Ok(())
}

fn main() {}
