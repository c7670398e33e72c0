// A fence epoch ends with its last fence (`end`), not `unlock`.
use onesided::prelude::*;

fn misuse(window: &Window) -> Result<(), onesided::Error> {
    let epoch = window.fence(Assert::NOPRECEDE)?;
    epoch.unlock()?;
    Ok(())
}

fn main() {}
