//! A malleable job: a block-distributed vector of 10^6 `f64` (`x[i] =
//! i`) and a replicated parameter grow from 2 processes to 4 (two are
//! spawned and join) and then shrink to 1 (three retire and exit),
//! checking every element after each step.
//!
//! `osrun -n 2 target/release/examples/malleable` prints each step's
//! times on its rank 0, `rank R: retired` on the processes that leave and
//! `rank 0: 1000000 elements checked` at the end.

use onesided::mam::block::block;
use onesided::mam::{Config, Layout, Mam, Method, Moves, Status, Wait};
use onesided::prelude::*;

const LEN: u64 = 1_000_000;

fn main() -> Result<(), onesided::Error> {
    let world = World::init()?;
    let me = world.rank();
    match reconfigure(&world)? {
        Status::Retired => {
            println!("rank {me}: retired");
            Ok(world.leave()?)
        }
        _ => Ok(world.finalize()?),
    }
}

fn reconfigure(world: &World) -> Result<Status, onesided::Error> {
    let rma = Rma::new(world.endpoint())?;
    let mut mam = Mam::init(world, &rma)?;
    // A process spawned by the first step holds nothing yet: its block
    // among the sources is empty, and it receives the parameter.
    let mine: Vec<f64> = block(LEN, mam.sources(), mam.rank())
        .map(|i| i as f64)
        .collect();
    let x = mam.add(mine, Layout::Distributed { len: LEN }, Moves::Variable)?;
    let parameter = mam.add(vec![0.5f64, 2.0], Layout::Replicated, Moves::Constant)?;
    let joined = world.launch().spawned;
    let steps = [4u32, 1];
    for (k, &targets) in steps.iter().enumerate() {
        if !(joined && k == 0) {
            mam.set_program(
                std::env::current_exe()
                    .map_or_else(|_| String::new(), |p| p.to_string_lossy().into()),
                Vec::new(),
            );
            mam.reconfigure(Config {
                method: Method::RmaLockAll,
                ..Config::new(targets)
            })?;
        }
        let before = mam.sources();
        let status = mam.checkpoint(Wait::Block)?;
        if status == Status::Retired {
            return Ok(status);
        }
        let ok = mam.get(x)?
            == block(LEN, targets, mam.rank())
                .map(|i| i as f64)
                .collect::<Vec<_>>()
            && mam.get(parameter)? == [0.5, 2.0];
        if !ok {
            return Err(onesided::Error::Mam(onesided::mam::Error::State(format!(
                "rank {}: wrong data after {before} -> {targets}",
                mam.rank()
            ))));
        }
        let most = mam.times().most;
        if mam.rank() == 0 {
            println!(
                "{before} -> {targets}: spawn {:.1} ms, redistribution {:.1} ms, total {:.1} ms",
                most.spawn * 1e3,
                most.redistribution * 1e3,
                most.total * 1e3
            );
        }
    }
    if mam.rank() == 0 {
        println!("rank 0: {LEN} elements checked");
    }
    Ok(Status::Completed)
}
