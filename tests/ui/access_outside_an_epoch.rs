// An access needs an epoch: get is a method of the epoch guard, not of
// the window.
use onesided::prelude::*;

fn read(window: &Window) -> Result<u64, onesided::Error> {
    let mut value = [0u64];
    window.get(0, 0, &mut value)?;
    Ok(value[0])
}

fn main() {}
