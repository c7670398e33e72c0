//! onesided-mam-time: times reconfigurations of a malleable job, run
//! under a launcher (`osrun -n NS onesided-mam-time --to NT`): a
//! block-distributed constant array of `--len` `f64` (2^22 by default)
//! moves from NS to NT processes by `--method` with `--strategy`;
//! processes spawned to grow the job run this program again and join.
//! An iteration is a fixed amount of work (about 1 ms), an allreduce
//! and a checkpoint; under a background strategy the job's processes
//! iterate while checkpoints say the move is pending (joining ones wait:
//! they have no data yet), and omega is the iteration time meanwhile
//! over the time without (the most over the targets, as the
//! iterations). Rank 0 prints `loaded libfabric VERSION PATH`, then
//! `NS -> NT METHOD STRATEGY spawn X ms redistribution Y ms iterations N
//! omega W`. `onesided-bench malleable`
//! runs it for every pair, method and strategy.

use std::time::{Duration, Instant};

use clap::Parser;
use onesided_collectives::{Comm, Op};
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
    /// Iterations before the reconfiguration: their mean time is the
    /// iteration time without one (the job's processes start meanwhile,
    /// and `osrun --standby` processes get ready).
    #[arg(long, default_value_t = 1000)]
    before: u32,
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// One step of the application over `app` (the processes that hold the
/// data): a fixed amount of work (about 1 ms here, alone on a core), then
/// an allreduce of one number, as a bulk-synchronous application's step
/// ends (a solver's dot product), so that every process's step takes the
/// job's time: where processes outnumber the cores, the scheduler gives
/// them unequal shares for a while, and steps that did not wait for each
/// other would time those shares. Fixed work rather than 1 ms of the
/// clock: a step that lost its core takes longer, as a real one does.
fn iterate(app: &Comm) -> Result<()> {
    let mut x = 0u64;
    for _ in 0..WORK {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    let mut sum = [0u64];
    app.allreduce(&[x & 1], &mut sum, Op::SUM)?;
    Ok(())
}

/// Multiply-adds of [`iterate`] (a dependent chain: about 1 ms on this
/// kind of machine).
const WORK: u32 = 1 << 20;

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
    let joined = world.launch().spawned;
    // The application's own communicator, over the processes it runs on
    // until the reconfiguration ends (joining processes make none: Comms
    // over one group are made in the same order on each of its members).
    let app = match joined {
        true => None,
        false => Some(Comm::new(&rma, mam.group().clone())?),
    };
    let ns = mam.sources();
    // An iteration: its work and a checkpoint. Its time without a
    // reconfiguration is the mean of the iterations before it (the job's
    // processes start meanwhile, and `osrun --standby` processes get
    // ready): a few would measure the scheduler's noise when processes
    // outnumber the cores. Joining processes do not iterate: their first
    // checkpoint is the reconfiguration's.
    let mut alone = Duration::ZERO;
    if !joined {
        let start = Instant::now();
        for _ in 0..args.before {
            iterate(app.as_ref().ok_or("no application Comm")?)?;
            mam.checkpoint(Wait::Test)?;
        }
        alone = start.elapsed() / args.before.max(1);
        // Every process starts the reconfiguration together, so that none
        // counts another's lateness as its own time.
        mam.comm().barrier()?;
        mam.reconfigure(Config {
            method: args.method,
            strategy: args.strategy,
            ..Config::new(args.to)
        })?;
    }
    // Iterations while the move is pending (not the one whose checkpoint
    // ends the reconfiguration: it carries the end of the cycle). Joining
    // processes have no data to iterate on yet: they wait.
    let (mut iterations, mut during) = (0u32, Duration::ZERO);
    let mut status = match joined {
        true => mam.checkpoint(Wait::Block)?,
        false => mam.checkpoint(Wait::Test)?,
    };
    while status == Status::Pending {
        let start = Instant::now();
        iterate(app.as_ref().ok_or("no application Comm")?)?;
        status = mam.checkpoint(Wait::Test)?;
        if status == Status::Pending {
            during += start.elapsed();
            iterations += 1;
        }
    }
    if status != Status::Completed {
        return Ok(status);
    }
    let most = mam.times().most;
    let omega = match iterations {
        0 => 1.0,
        n => (during / n).as_secs_f64() / alone.as_secs_f64(),
    };
    // The most over the targets (retired processes have left).
    let mut worst = [0.0f64; 2];
    let comm = mam.comm();
    comm.allreduce(&[omega, f64::from(iterations)], &mut worst, Op::MAX)?;
    let [omega, iterations] = worst;
    if mam.rank() == 0 {
        let (version, path) = onesided_fabric::libfabric_loaded();
        println!("loaded libfabric {version} {path}");
        println!(
            "{ns} -> {} {} {} spawn {:.1} ms redistribution {:.1} ms iterations {iterations} omega {omega:.2}",
            args.to,
            args.method,
            args.strategy,
            most.spawn * 1e3,
            most.redistribution * 1e3,
        );
    }
    drop((app, mam, rma));
    Ok(status)
}
