//! Overlap: the main thread computes while an `iallreduce` is in flight,
//! and a helper thread, given a window of its own, reads the right
//! neighbour's part with `rget`s meanwhile.
//!
//! `osrun -n 4 target/release/examples/nonblocking` prints, on every rank,
//! `rank R: iallreduce ok after K compute steps, helper checked 50 rgets`.

use onesided::prelude::*;

/// Elements of each rank's window and of the reduction.
const LEN: usize = 4096;

fn main() -> Result<(), onesided::Error> {
    let world = World::init()?;
    overlap(&world)?;
    Ok(world.finalize()?)
}

/// Element `i` of rank `rank`'s window.
fn value(rank: u32, i: usize) -> u64 {
    u64::from(rank) << 32 | i as u64
}

fn overlap(world: &World) -> Result<(), onesided::Error> {
    let (me, n) = (world.rank(), world.size());
    let group = Group::world(n);
    let rma = Rma::new(world.endpoint())?;
    let comm = Comm::new(&rma, group.clone())?;
    // The helper's window, over a group of its own (so that its objects
    // never mix with the main thread's), made here and moved to it.
    let window = rma.allocate(&group.tagged(1), 8 * LEN, RemoteAccess::ReadOnly)?;
    let mine: Vec<u64> = (0..LEN).map(|i| value(me, i)).collect();
    window.write_local(0, &mine)?;
    comm.barrier()?; // every window is filled
    let helper = std::thread::spawn(move || -> Result<usize, onesided::Error> {
        let right = (me + 1) % n;
        let epoch = window.lock_all(Assert::empty())?;
        let mut theirs = vec![0u64; LEN];
        for _ in 0..50 {
            theirs.fill(0);
            epoch.rget(right, 0, &mut theirs)?.wait()?;
            if (0..LEN).any(|i| theirs[i] != value(right, i)) {
                panic!("rank {me}: wrong bytes from rank {right}");
            }
        }
        epoch.unlock()?;
        Ok(50)
    });
    // The main thread: a reduction in flight while it computes.
    let input = vec![f64::from(me) + 1.0; LEN];
    let mut request = comm.iallreduce(input, vec![0.0; LEN], Op::SUM)?;
    let (mut steps, mut acc) = (0u64, 0.0f64);
    while !request.test()? {
        acc += (0..1000).map(|k| f64::from(k).sqrt()).sum::<f64>();
        steps += 1;
    }
    let sum = request.into_buffers()?.output;
    let want = f64::from(n) * f64::from(n + 1) / 2.0;
    assert!(sum.iter().all(|&s| s == want), "rank {me}: wrong sum");
    let reads = helper.join().expect("the helper thread panicked")?;
    println!(
        "rank {me}: iallreduce ok after {steps} compute steps, helper checked {reads} rgets{}",
        if acc < 0.0 { "?" } else { "" }
    );
    Ok(())
}
