// The last fence (`end`) consumes the fence epoch's guard: no access
// through it afterwards.
use onesided::prelude::*;

fn after(window: &Window) -> Result<(), onesided::Error> {
    let epoch = window.fence(Assert::NOPRECEDE)?;
    epoch.end(Assert::empty())?;
    epoch.put(0, 0, &[1u8])?;
    Ok(())
}

fn main() {}
