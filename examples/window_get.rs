//! Each rank reads its right neighbour's value through a window under
//! `lock_all`, then the ranks sum what they read with an allreduce.
//!
//! `osrun -n 4 target/release/examples/window_get` prints, on every rank,
//! `rank R: right neighbour V, sum S` with S = 10 * (0 + 1 + ... + n-1).

use onesided::prelude::*;

fn main() -> Result<(), onesided::Error> {
    let world = World::init()?;
    neighbours(&world)?;
    Ok(world.finalize()?)
}

fn neighbours(world: &World) -> Result<(), onesided::Error> {
    let (me, n) = (world.rank(), world.size());
    let group = Group::world(n);
    let rma = Rma::new(world.endpoint())?;
    let window = rma.allocate(&group, 8, RemoteAccess::ReadOnly)?;
    window.write_local(0, &[u64::from(me) * 10])?;
    rma.ibarrier(&group)?.wait()?; // every value is written
    let epoch = window.lock_all(Assert::empty())?;
    let mut right = [0u64];
    epoch.get((me + 1) % n, 0, &mut right)?;
    epoch.unlock()?;
    let comm = Comm::new(&rma, group)?;
    let mut sum = [0u64];
    comm.allreduce(&right, &mut sum, Op::SUM)?;
    println!("rank {me}: right neighbour {}, sum {}", right[0], sum[0]);
    Ok(())
}
