//! onesided-reduce-time: times onesided-reduce's reductions, run under a
//! launcher (`osrun -n P onesided-reduce-time`): `--reps` reductions of
//! `--len` `f64` (a sum to rank 0), each started together after a
//! barrier, `--ids` of them at once; with `--slow RANK:FACTOR`, that
//! rank computes FACTOR times 1 ms before each start (the others 1 ms),
//! so that it arrives late, pinned to the last core (where the
//! benchmark runs a CPU hog). Rank 0 prints `reduce P ranks LEN f64 ids
//! K median X ms mean Z ms min Y ms master in M/s B B/s out M/s B B/s`,
//! timing from the barrier to its result (the master's control traffic
//! over the whole run), and checks every result against the serial sum.
//!
//! With `--trial`, one reduction for a kill trial (under `osrun --ft`):
//! rank 1 prints `armed PID` once its reduce call returned (its data is
//! in; the benchmark kills it from then on) and waits to be killed; rank
//! 0 prints `trial right`, `trial wrong ...` or `trial failed ERROR`.

use std::time::{Duration, Instant};

use clap::Parser;
use onesided_collectives::Comm;
use onesided_fabric::World;
use onesided_reduce::{Config, Reducer, Sum};
use onesided_rma::{Group, Rma};

/// Times reductions.
#[derive(Parser, Debug)]
#[command(name = "onesided-reduce-time")]
struct Args {
    /// Elements (`f64`) per reduction.
    #[arg(long, default_value_t = 1 << 22)]
    len: usize,
    /// Timed repetitions (after one untimed).
    #[arg(long, default_value_t = 9)]
    reps: usize,
    /// Reductions in flight at once.
    #[arg(long, default_value_t = 1)]
    ids: u64,
    /// RANK:FACTOR: that rank computes FACTOR times longer before each.
    #[arg(long)]
    slow: Option<String>,
    /// One reduction for a kill trial (rank 1 is to be killed).
    #[arg(long)]
    trial: bool,
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Element `i` of rank `r`'s data.
fn value(r: u32, i: usize) -> f64 {
    ((i % 1000) as u32 + r) as f64
}

/// The first element of `sum` (of `n` ranks' data) that is not the
/// serial sum, if any.
fn wrong(sum: &[f64], n: u32) -> Option<(usize, f64)> {
    let n = f64::from(n);
    (sum.iter().copied().enumerate())
        .find(|&(i, s)| s != n * (i % 1000) as f64 + n * (n - 1.0) / 2.0)
}

/// Pins this process (its threads, and those it starts) to the last core,
/// where the benchmark runs its CPU hog.
fn pin_to_last_core() -> Result<()> {
    let last = std::thread::available_parallelism().map_or(1, |n| n.get()) - 1;
    let status = std::process::Command::new("taskset")
        .args([
            "-a",
            "-c",
            "-p",
            &last.to_string(),
            &std::process::id().to_string(),
        ])
        .stdout(std::process::Stdio::null())
        .status()?;
    match status.success() {
        true => Ok(()),
        false => Err(format!("taskset: {status}").into()),
    }
}

/// Busy work for `d` (the application's computation).
fn compute(d: Duration) {
    let end = Instant::now() + d;
    let mut x = 0u64;
    while Instant::now() < end {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let world = World::init()?;
    let (me, n) = (world.rank(), world.size());
    let rma = Rma::new(world.endpoint())?;
    let group = Group::world(n);
    let comm = Comm::new(&rma, group.clone())?;
    let reducer = Reducer::new(&world, &rma, &group, Config::from_env()?)?;
    if me == 0 {
        let (version, path) = onesided_fabric::libfabric_loaded();
        println!("loaded libfabric {version} {path}");
    }
    let slow = match &args.slow {
        Some(s) => {
            let (r, f) = s.split_once(':').ok_or("--slow RANK:FACTOR")?;
            Some((r.parse::<u32>()?, f.parse::<u32>()?))
        }
        None => None,
    };
    let work = match slow {
        Some((r, f)) if r == me => {
            pin_to_last_core()?;
            Duration::from_millis(u64::from(f))
        }
        _ => Duration::from_millis(1),
    };
    let data: Vec<f64> = (0..args.len).map(|i| value(me, i)).collect();
    if args.trial {
        comm.barrier()?;
        let future = reducer.reduce(0, &data, Sum::default(), 0)?;
        if me == 1 {
            println!("armed {}", std::process::id());
            std::io::Write::flush(&mut std::io::stdout())?;
        }
        let got = future.get();
        if me == 1 {
            std::thread::sleep(Duration::from_secs(30));
        }
        if me == 0 {
            match got {
                Ok(Some(sum)) => match wrong(&sum, n) {
                    None => println!("trial right"),
                    Some((i, s)) => println!("trial wrong: element {i} is {s}"),
                },
                Ok(None) => println!("trial wrong: no result at the root"),
                Err(e) => println!("trial failed: {e}"),
            }
        }
        drop(reducer);
        drop((comm, rma));
        world.finalize()?;
        return Ok(());
    }
    let mut times = Vec::new();
    let started = Instant::now();
    for rep in 0..=args.reps {
        comm.barrier()?;
        let begun = Instant::now();
        compute(work);
        let futures = (0..args.ids)
            .map(|id| reducer.reduce(0, &data, Sum::default(), id))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        for f in futures {
            if let Some(sum) = f.get()? {
                if let Some((i, s)) = wrong(&sum, n) {
                    return Err(format!("rep {rep}: element {i} is {s}").into());
                }
            }
        }
        if rep > 0 {
            times.push(begun.elapsed().as_secs_f64() * 1e3);
        }
    }
    let load = reducer.master_load();
    let lasted = started.elapsed().as_secs_f64();
    drop(reducer);
    if let Some(load) = load {
        times.sort_by(f64::total_cmp);
        println!(
            "reduce {n} ranks {} f64 ids {} median {:.2} ms mean {:.2} ms min {:.2} ms master in {:.0}/s {:.0} B/s out {:.0}/s {:.0} B/s",
            args.len,
            args.ids,
            times[times.len() / 2],
            times.iter().sum::<f64>() / times.len() as f64,
            times[0],
            load.messages_in as f64 / lasted,
            load.bytes_in as f64 / lasted,
            load.messages_out as f64 / lasted,
            load.bytes_out as f64 / lasted,
        );
    }
    drop((comm, rma));
    world.finalize()?;
    Ok(())
}
