//! What windows cost: allocate+free of 1 MiB, the first access to a peer
//! (one descriptor round trip), get latency (lock_all nocheck + get) and
//! ibarrier + wait, as medians over repetitions on rank 0. The MPICH peer of the same cases
//! is `benches/mpich/window.c`.
//!
//! `osrun -n 2 target/release/examples/window_cost [REPS]`

use std::time::{Duration, Instant};

use onesided_fabric::{Endpoint, World};
use onesided_rma::{Group, Request, Rma};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}

/// A barrier through rank 0 with tagged messages (fast, unlike the PMI
/// barrier through the launcher; collectives come with their own crate).
fn barrier(ep: &Endpoint) -> onesided_fabric::Result<()> {
    const TAG: u64 = 9;
    if ep.rank() == 0 {
        for _ in 1..ep.size() {
            ep.recv(None, TAG, &mut [])?;
        }
        for r in 1..ep.size() {
            ep.send(r, TAG, &[])?;
        }
    } else {
        ep.send(0, TAG, &[])?;
        ep.recv(Some(0), TAG, &mut [])?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(50);
    let world = World::init()?;
    let ep = world.endpoint();
    let rma = Rma::new(ep)?;
    let group = Group::world(world.size());
    let target = (world.rank() + 1) % world.size();
    let mut create_free = Vec::new();
    let mut first_access = Vec::new();
    for _ in 0..reps {
        barrier(ep)?;
        let start = Instant::now();
        let win = rma.allocate(&group, 1 << 20)?;
        win.free()?;
        create_free.push(start.elapsed());
        let win = rma.allocate(&group, 1 << 20)?;
        barrier(ep)?;
        let all = win.lock_all(true)?;
        let mut b = [0u8; 8];
        let start = Instant::now();
        win.get(target, 0, &mut b)?;
        first_access.push(start.elapsed());
        all.unlock()?;
        win.free()?;
    }
    let win = rma.allocate(&group, 4 << 20)?;
    barrier(ep)?;
    let mut gets = Vec::new();
    let mut big_gets = Vec::new();
    {
        let all = win.lock_all(true)?;
        let mut buf = vec![0u8; 8];
        win.get(target, 0, &mut buf)?;
        for _ in 0..1000 {
            let start = Instant::now();
            win.get(target, 0, &mut buf)?;
            gets.push(start.elapsed());
        }
        let mut big = vec![0u8; 2 << 20];
        for _ in 0..50 {
            let start = Instant::now();
            win.get(target, 0, &mut big)?;
            big_gets.push(start.elapsed());
        }
        all.unlock()?;
    }
    win.free()?;
    let mut barriers = Vec::new();
    for _ in 0..1000 {
        let start = Instant::now();
        rma.ibarrier(&group)?.wait()?;
        barriers.push(start.elapsed());
    }
    if world.rank() == 0 {
        println!("window allocate_free 1048576 {:.3} us", median(create_free));
        println!("window first_access 8 {:.3} us", median(first_access));
        println!("get lock_all_nocheck 8 {:.3} us", median(gets));
        println!("get lock_all_nocheck 2097152 {:.3} us", median(big_gets));
        println!("ibarrier ibarrier_wait 0 {:.3} us", median(barriers));
    }
    drop(rma);
    world.finalize()?;
    Ok(())
}
