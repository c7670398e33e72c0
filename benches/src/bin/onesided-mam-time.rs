//! onesided-mam-time: times reconfigurations of a malleable job, run
//! under a launcher (`osrun -n NS onesided-mam-time --to NT`): a
//! block-distributed constant array of `--len` `f64` (2^22 by default)
//! moves from NS to NT processes by `--method` with `--strategy`;
//! processes spawned to grow the job run this program again and join.
//! Under a background strategy the job iterates (1 ms of work a step)
//! while checkpoints say the move is pending, and the iteration time
//! during it over the time without (omega) is reported. Rank 0 prints
//! one line: `NS -> NT METHOD STRATEGY spawn_ms redistribution_ms
//! iterations omega`. Until `onesided-bench malleable` runs this side by
//! side with an MPICH peer (the next issue), this is how the engine's
//! times are measured.

use std::time::{Duration, Instant};

use clap::Parser;
use onesided_fabric::World;
use onesided_mam::block::block;
use onesided_mam::{Config, Layout, Mam, Method, Moves, Status, Strategy, Wait};
use onesided_rma::Rma;

/// Times one reconfiguration of a malleable job.
#[derive(Parser, Debug)]
#[command(name = "onesided-mam-time")]
struct Args {
    /// Processes after the reconfiguration.
    #[arg(long)]
    to: u32,
    /// Elements of the distributed array.
    #[arg(long, default_value_t = 1 << 22)]
    len: u64,
    /// col, rma_lock or rma_lock_all.
    #[arg(long, default_value = "rma_lock_all")]
    method: Method,
    /// blocking, thread, nonblocking or wait_targets.
    #[arg(long, default_value = "blocking")]
    strategy: Strategy,
    /// Iterations before the reconfiguration (the job's processes start
    /// meanwhile, and `osrun --standby` processes get ready).
    #[arg(long, default_value_t = 1000)]
    before: u32,
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// One step of the application: 1 ms of work.
fn iterate() -> Duration {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < Duration::from_millis(1) {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    start.elapsed()
}

fn main() -> Result<()> {
    let args = Args::parse();
    let world = World::init()?;
    let status = run(&world, &args)?;
    match status {
        Status::Retired => world.leave()?,
        _ => world.finalize()?,
    }
    Ok(())
}

fn run(world: &World, args: &Args) -> Result<Status> {
    let rma = Rma::new(world.endpoint())?;
    let mut mam = Mam::init(world, &rma)?;
    let local: Vec<f64> = block(args.len, mam.sources(), mam.rank())
        .map(|i| i as f64)
        .collect();
    mam.add(
        local,
        Layout::Distributed { len: args.len },
        Moves::Constant,
    )?;
    let joined = world.pmi().spawned();
    let ns = mam.sources();
    // The iteration time without a reconfiguration.
    let alone: Duration = (0..5).map(|_| iterate()).sum::<Duration>() / 5;
    if !joined {
        for _ in 0..args.before {
            iterate();
        }
        mam.reconfigure(Config {
            method: args.method,
            strategy: args.strategy,
            ..Config::new(args.to)
        })?;
    }
    let (mut iterations, mut during) = (0u32, Duration::ZERO);
    let mut status = mam.checkpoint(Wait::Check)?;
    while status == Status::Pending {
        during += iterate();
        iterations += 1;
        status = mam.checkpoint(Wait::Check)?;
    }
    let (_, most) = mam.times();
    if mam.rank() == 0 && status == Status::Completed {
        let omega = match iterations {
            0 => 1.0,
            n => (during / n).as_secs_f64() / alone.as_secs_f64(),
        };
        println!(
            "{ns} -> {} {} {} spawn {:.1} ms redistribution {:.1} ms iterations {iterations} omega {omega:.2}",
            args.to,
            args.method,
            args.strategy,
            most.spawn * 1e3,
            (most.background + most.end) * 1e3,
        );
    }
    drop(mam);
    drop(rma);
    Ok(status)
}
