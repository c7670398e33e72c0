//! sam: the malleability study's synthetic application, a Conjugate
//! Gradient on a 2-D 5-point Laplacian (ELL, [`onesided_bench::sam`])
//! that reconfigures from NS to NT processes while it iterates, run as
//! `osrun -n NS sam FILE.toml` (processes spawned to grow the job run
//! it again and join).
//!
//! An iteration: a local SpMV over the process's rows, an allgatherv of
//! the direction vector and two allreduces (`p . q`, `r . r`). The
//! matrix (values and columns, a row of 5 each) and x, r, p are
//! block-distributed by rows; the iteration number and `r . r` are a
//! replicated parameter block. At iteration `before` the processes ask
//! the engine for NT processes and keep iterating while checkpoints say
//! the move is pending, at most `overlap` iterations (then they wait).
//! Rank 0 prints one JSON line: spawn time, T_redis (its background and
//! end-of-cycle parts), the iteration time before, during (with the
//! checkpoint that follows each) and after,
//! omega, N_it, and the residual norm beside a serial run's (they must
//! agree to 1e-9 relative, else the exit status is 1). A bad file: one
//! line naming it, the line and the key, and exit status 2.

use std::time::{Duration, Instant};

use onesided_bench::sam::{self, Columns, Run, Values};
use onesided_collectives::{Comm, Op};
use onesided_fabric::World;
use onesided_mam::block::block;
use onesided_mam::{Config, Data, Mam, Status, Wait};
use onesided_rma::Rma;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The registered arrays.
struct Arrays {
    values: Data<Values>,
    columns: Data<Columns>,
    x: Data<f64>,
    r: Data<f64>,
    p: Data<f64>,
    /// The iteration done and `r . r`.
    params: Data<f64>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file] = args.as_slice() else {
        eprintln!("usage: sam FILE.toml");
        std::process::exit(2)
    };
    let run = sam::load(std::path::Path::new(file)).unwrap_or_else(|e| {
        eprintln!("sam: {e}");
        std::process::exit(2)
    });
    if let Err(e) = start(&run) {
        eprintln!("sam: {e}");
        std::process::exit(1)
    }
}

fn start(run: &Run) -> Result<()> {
    let world = World::init()?;
    let joined = world.launch().spawned;
    if !joined && world.rank() == 0 {
        let (version, path) = onesided_fabric::libfabric_loaded();
        println!("loaded libfabric {version} {path}");
    }
    if !joined && world.size() != run.config.ns {
        return Err(format!(
            "the file says ns = {}, the job has {} processes",
            run.config.ns,
            world.size()
        )
        .into());
    }
    let status = solve(&world, run)?;
    match status {
        Status::Retired => world.leave()?,
        _ => world.finalize()?,
    }
    Ok(())
}

/// Registers the problem's arrays (a joining process's blocks are
/// empty: it receives them).
fn register(mam: &mut Mam, run: &Run) -> Result<Arrays> {
    fn add<T: bytemuck::Pod + Send + Sync>(
        mam: &mut Mam,
        kind: sam::Kind,
        len: u64,
        local: Vec<T>,
    ) -> Result<Data<T>> {
        let (layout, moves) = kind.registration(len);
        Ok(mam.add(local, layout, moves)?)
    }
    let rows = run.rows();
    let mine = block(rows, mam.sources(), mam.rank());
    let (values, columns) = sam::matrix(run.config.grid, mine.clone());
    let len = (mine.end - mine.start) as usize;
    let a = &run.config.arrays;
    Ok(Arrays {
        values: add(mam, a.values, rows, values)?,
        columns: add(mam, a.columns, rows, columns)?,
        x: add(mam, a.x, rows, vec![0.0; len])?,
        r: add(mam, a.r, rows, vec![1.0; len])?,
        p: add(mam, a.p, rows, vec![1.0; len])?,
        params: add(mam, a.params, 2, vec![0.0, rows as f64])?,
    })
}

/// Buffers an iteration reuses: the whole direction, `q = A p` and a
/// copy of the local residual.
#[derive(Default)]
struct Scratch {
    whole: Vec<f64>,
    q: Vec<f64>,
    r: Vec<f64>,
}

/// One CG iteration over `comm` (the processes holding the arrays).
fn iterate(mam: &mut Mam, comm: &Comm, arrays: &Arrays, rows: u64, s: &mut Scratch) -> Result<()> {
    let (size, me) = (comm.group().size(), comm.rank());
    let counts: Vec<usize> = (0..size)
        .map(|i| {
            let b = block(rows, size, i);
            (b.end - b.start) as usize
        })
        .collect();
    s.whole.resize(rows as usize, 0.0);
    comm.allgatherv(mam.get(arrays.p)?, &mut s.whole, &counts)?;
    // This process's p, as gathered.
    let at = block(rows, size, me).start as usize;
    let p = &s.whole[at..at + counts[me as usize]];
    s.q.resize(p.len(), 0.0);
    sam::spmv(
        mam.get(arrays.values)?,
        mam.get(arrays.columns)?,
        &s.whole,
        &mut s.q,
    );
    let mut sum = [0.0];
    comm.allreduce(&[sam::dot(p, &s.q)], &mut sum, Op::SUM)?;
    let rr = mam.get(arrays.params)?[1];
    let alpha = rr / sum[0];
    sam::axpy(alpha, p, mam.get_mut(arrays.x)?);
    let r = mam.get_mut(arrays.r)?;
    sam::axpy(-alpha, &s.q, r);
    let local = sam::dot(r, r);
    s.r.clear();
    s.r.extend_from_slice(r);
    comm.allreduce(&[local], &mut sum, Op::SUM)?;
    sam::direction(sum[0] / rr, &s.r, mam.get_mut(arrays.p)?);
    let params = mam.get_mut(arrays.params)?;
    params[0] += 1.0;
    params[1] = sum[0];
    Ok(())
}

/// How many of `before` iterations are timed: the later half.
fn timed_before(before: u32) -> u32 {
    before - before / 2
}

/// Mean of a duration over `n` iterations, in ms.
fn per(total: Duration, n: u32) -> f64 {
    total.as_secs_f64() * 1e3 / f64::from(n.max(1))
}

fn solve(world: &World, run: &Run) -> Result<Status> {
    let c = &run.config;
    let rows = run.rows();
    let rma = Rma::new(world.endpoint())?;
    let mut mam = Mam::init(world, &rma)?;
    let arrays = register(&mut mam, run)?;
    let joined = world.launch().spawned;
    let ns = mam.sources();
    let mut before = Duration::ZERO;
    let (mut n_it, mut during) = (0u32, Duration::ZERO);
    let mut status = Status::Pending;
    let mut scratch = Scratch::default();
    if !joined {
        let app = Comm::new(&rma, mam.group().clone())?;
        // The iteration time without a move: the later half of the
        // iterations before (the first ones touch their pages first).
        for k in 0..c.before {
            let start = Instant::now();
            iterate(&mut mam, &app, &arrays, rows, &mut scratch)?;
            if k >= c.before / 2 {
                before += start.elapsed();
            }
        }
        mam.comm().barrier()?;
        mam.reconfigure(Config {
            method: run.method,
            strategy: run.strategy,
            ..Config::new(c.nt)
        })?;
        status = mam.checkpoint(Wait::Test)?;
        // An iteration meanwhile counts with its checkpoint: the work a
        // checkpoint does slows the application down as much.
        while status == Status::Pending && n_it < c.overlap && c.before + n_it < c.iterations {
            let start = Instant::now();
            iterate(&mut mam, &app, &arrays, rows, &mut scratch)?;
            status = mam.checkpoint(Wait::Test)?;
            during += start.elapsed();
            n_it += 1;
        }
    }
    if status == Status::Pending {
        status = mam.checkpoint(Wait::Block)?;
    }
    if status != Status::Completed {
        return Ok(status);
    }
    let most = mam.times().most;
    // The rest on the targets, from the iteration the parameters say.
    let done = mam.get(arrays.params)?[0] as u32;
    let start = Instant::now();
    // Made in the same order on every target, the joined ones too.
    let comm = Comm::new(&rma, mam.group().clone())?;
    for _ in done..c.iterations {
        iterate(&mut mam, &comm, &arrays, rows, &mut scratch)?;
    }
    let after = start.elapsed();
    let residual = mam.get(arrays.params)?[1].sqrt();
    // The most over the targets (retired processes have left; joined
    // ones did not iterate meanwhile).
    let it_during = per(during, n_it);
    let omega = match n_it {
        0 => 0.0,
        _ => it_during / per(before, timed_before(c.before)),
    };
    let mut worst = [0.0f64; 3];
    comm.allreduce(&[f64::from(n_it), omega, it_during], &mut worst, Op::MAX)?;
    let [n_it, omega, it_during] = worst;
    // No iteration overlapped: nothing slowed down.
    let omega = if n_it == 0.0 { 1.0 } else { omega };
    if mam.rank() == 0 {
        let reference = sam::serial(c.grid, c.iterations);
        let it_before = per(before, timed_before(c.before));
        let it_after = per(after, c.iterations - done);
        let line = serde_json::json!({
            "ns": ns,
            "nt": c.nt,
            "method": run.method.to_string(),
            "strategy": run.strategy.to_string(),
            "rows": rows,
            "spawn_ms": most.spawn * 1e3,
            "redis_ms": most.redistribution * 1e3,
            "redis_background_ms": most.background * 1e3,
            "redis_end_ms": most.end * 1e3,
            "it_before_ms": it_before,
            "it_during_ms": it_during,
            "it_after_ms": it_after,
            "omega": omega,
            "n_it": n_it as u32,
            "residual": residual,
            "reference": reference,
        });
        println!("{line}");
        if !sam::agree(residual, reference) {
            return Err(format!(
                "residual {residual:e} differs from the serial run's {reference:e}"
            )
            .into());
        }
    }
    drop((comm, mam, rma));
    Ok(status)
}
