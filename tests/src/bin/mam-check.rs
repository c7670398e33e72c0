//! The rank program of the malleability tests: `mam-check METHOD
//! COUNTS...` registers distributed and replicated, constant and
//! variable data of `u8`, `u32`, `f64` and a 24-byte struct (lengths not
//! divisible by the process counts, and one shorter than them), then
//! reconfigures the job to each of COUNTS in turn by METHOD (`col`,
//! `rma_lock`, `rma_lock_all`), growing (the processes it spawns run
//! `mam-check METHOD join=G COUNTS...` and join the G-th reconfiguration;
//! with `mam-check METHOD from=N COUNTS...`, N the launch size, they run
//! the job's own command line, as `osrun --standby` processes do, and
//! find G from the first reconfiguration from the sources' count to the
//! new group's) and shrinking, checking every element after each one against the
//! serial distribution. The strategy comes from `ONESIDED_MAM_STRATEGY`
//! (blocking by default): under a background one, the program iterates
//! (reading its constant data) while checkpoints say the reconfiguration
//! is pending, and prints how many iterations it made. Variable data
//! changes before each reconfiguration, so the check sees its latest
//! values. Retired
//! processes print `rank R: retired`, leave the job and exit 0; the last
//! targets print `rank R: mam ok`. `mam-check misuse` checks the errors:
//! registrations that differ, a target count of 0, a second
//! reconfiguration asked for before the first ran, growing beyond the
//! universe (run it under `osrun --universe N+1`). `mam-check victim`
//! (under `osrun --ft`): rank 1 dies while the data moves; the others'
//! checkpoints fail naming it. Exits non-zero naming
//! the rank and the check otherwise.

#![forbid(unsafe_code)]

use onesided::prelude::*;
use onesided_mam::block::block;
use onesided_mam::{Config, Data, Layout, Mam, Method, Moves, Status, Wait};
use onesided_tests::rank::{check, fail, must};

/// A 24-byte element.
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Cell {
    at: u64,
    value: f64,
    tag: u32,
    generation: u32,
}

/// Global lengths of the distributed arrays.
const BYTES: u64 = 100_003;
const WORDS: u64 = 3;
const FLOATS: u64 = (1 << 16) + 5;
const CELLS: u64 = 77;

type Result<T> = std::result::Result<T, onesided_mam::Error>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let world = must(0, "init", World::init());
    let me = world.rank();
    // For the harness's checks of what the job leaves behind.
    println!("pid {me} {}", std::process::id());
    if std::env::var_os(onesided_fabric::pmi::STANDBY_ENV).is_some() {
        println!("{me}: started ahead");
    }
    let retired = match args.first().map(String::as_str) {
        Some("misuse") => {
            must(me, "misuse", misuse(&world));
            false
        }
        Some("victim") => {
            must(me, "victim", victim(&world));
            false
        }
        Some(method) => {
            let method: Method = must(me, "method", method.parse());
            let mut rest = &args[1..];
            let joined = (rest.first())
                .and_then(|a| a.strip_prefix("join="))
                .map(|g| must(me, "join=G", g.parse::<usize>()));
            if joined.is_some() {
                rest = &rest[1..];
            }
            let from = (rest.first())
                .and_then(|a| a.strip_prefix("from="))
                .map(|n| must(me, "from=N", n.parse::<u32>()));
            if from.is_some() {
                rest = &rest[1..];
            }
            let counts: Vec<u32> = (rest.iter())
                .map(|c| must(me, "count", c.parse::<u32>()))
                .collect();
            let plan = Plan {
                method,
                counts,
                joined,
                from,
            };
            must(me, "reconfigure", reconfigure(&world, &plan))
        }
        None => fail(me, "usage: mam-check METHOD [join=G] COUNTS... | misuse"),
    };
    if retired {
        must(me, "leave", world.leave());
        println!("rank {me}: retired");
    } else {
        must(me, "finalize", world.finalize());
        println!("rank {me}: mam ok");
    }
}

/// What to do: the method, the process counts in turn, and the
/// reconfiguration this process joins (spawned by it), if any.
struct Plan {
    method: Method,
    counts: Vec<u32>,
    joined: Option<usize>,
    /// The launch size, when spawned processes run the job's command line.
    from: Option<u32>,
}

fn byte(i: u64) -> u8 {
    (i % 251) as u8
}

fn word(i: u64, generation: u32) -> u32 {
    (i as u32).wrapping_mul(2_654_435_761) ^ generation
}

fn float(i: u64) -> f64 {
    i as f64 * 0.5 - 7.0
}

fn cell(i: u64, generation: u32) -> Cell {
    Cell {
        at: i,
        value: i as f64 / 3.0,
        tag: (i * 7) as u32,
        generation,
    }
}

/// Block `me` of `n` of a `len`-element array, made by `f`.
fn local<T>(len: u64, n: u32, me: u32, f: impl Fn(u64) -> T) -> Vec<T> {
    block(len, n, me).map(f).collect()
}

struct Handles {
    bytes: Data<u8>,
    words: Data<u32>,
    floats: Data<f64>,
    cells: Data<Cell>,
    params: Data<u64>,
    state: Data<f64>,
}

/// Registers the data (a process that joins holds none yet: its blocks
/// are empty), in the same order everywhere.
fn register(mam: &mut Mam) -> Result<Handles> {
    let (n, r) = (mam.sources(), mam.rank());
    let distributed = |len| Layout::Distributed { len };
    Ok(Handles {
        bytes: mam.add(
            local(BYTES, n, r, byte),
            distributed(BYTES),
            Moves::Constant,
        )?,
        words: mam.add(
            local(WORDS, n, r, |i| word(i, 0)),
            distributed(WORDS),
            Moves::Variable,
        )?,
        floats: mam.add(
            local(FLOATS, n, r, float),
            distributed(FLOATS),
            Moves::Constant,
        )?,
        cells: mam.add(
            local(CELLS, n, r, |i| cell(i, 0)),
            distributed(CELLS),
            Moves::Variable,
        )?,
        params: mam.add(vec![11u64, 22, 33], Layout::Replicated, Moves::Constant)?,
        state: mam.add(vec![0.0f64; 2], Layout::Replicated, Moves::Variable)?,
    })
}

/// The application's last iteration before reconfiguration `generation`
/// changes the variable data.
fn iterate(mam: &mut Mam, h: &Handles, generation: u32) -> Result<()> {
    let start = block(WORDS, mam.sources(), mam.rank()).start;
    for (k, v) in mam.get_mut(h.words)?.iter_mut().enumerate() {
        *v = word(start + k as u64, generation);
    }
    for c in mam.get_mut(h.cells)?.iter_mut() {
        c.generation = generation;
    }
    mam.get_mut(h.state)?
        .copy_from_slice(&[f64::from(generation), -1.0]);
    Ok(())
}

/// Checks every element after reconfiguration `generation` to `nt`.
fn verify(mam: &Mam, h: &Handles, generation: u32, what: &str) -> Result<()> {
    let (me, nt, r) = (mam.rank(), mam.group().size(), mam.rank());
    let expect = |data: &str, ok: bool| check(me, ok, || format!("{data} after {what}"));
    expect("bytes", mam.get(h.bytes)? == local(BYTES, nt, r, byte));
    let words = local(WORDS, nt, r, |i| word(i, generation));
    expect("words", mam.get(h.words)? == words);
    expect("floats", mam.get(h.floats)? == local(FLOATS, nt, r, float));
    let cells = local(CELLS, nt, r, |i| cell(i, generation));
    expect("cells", mam.get(h.cells)? == cells);
    expect("params", mam.get(h.params)? == [11, 22, 33]);
    expect("state", mam.get(h.state)? == [f64::from(generation), -1.0]);
    Ok(())
}

/// Registers the data, then reconfigures to each count; whether this
/// process was retired.
fn reconfigure(world: &World, plan: &Plan) -> Result<bool> {
    let me = world.rank();
    let rma = Rma::new(world.endpoint())?;
    let mut mam = Mam::init(world, &rma)?;
    let h = register(&mut mam)?;
    let joined = match (plan.joined, plan.from) {
        (None, Some(n)) if world.launch().spawned => {
            let (ns, nt) = (mam.sources(), mam.group().size());
            let prev = |g: usize| if g == 0 { n } else { plan.counts[g - 1] };
            let g = (0..plan.counts.len()).find(|&g| prev(g) == ns && plan.counts[g] == nt);
            Some(g.unwrap_or_else(|| fail(me, &format!("no reconfiguration {ns} -> {nt}"))))
        }
        (joined, _) => joined,
    };
    let plan = Plan {
        joined,
        counts: plan.counts.clone(),
        ..*plan
    };
    if plan.joined.is_none() {
        let status = mam.checkpoint(Wait::Test)?;
        check(me, status == Status::NotStarted, || {
            format!("a checkpoint without a reconfiguration gave {status:?}")
        });
    }
    let exe = std::env::current_exe().map_err(|e| onesided_mam::Error::State(e.to_string()))?;
    for (g, &nt) in plan
        .counts
        .iter()
        .enumerate()
        .skip(plan.joined.unwrap_or(0))
    {
        let generation = g as u32 + 1;
        let size = mam.sources();
        if plan.joined != Some(g) {
            iterate(&mut mam, &h, generation)?;
            if plan.from.is_none() {
                let mut args = vec![plan.method.to_string(), format!("join={g}")];
                args.extend(plan.counts.iter().map(u32::to_string));
                mam.set_program(exe.to_string_lossy(), args);
            }
            mam.reconfigure(Config {
                method: plan.method,
                ..Config::new(nt).from_env()?
            })?;
        }
        // The application iterates while the constant data moves.
        let mut iterations = 0u32;
        let mut status = mam.checkpoint(Wait::Test)?;
        while status == Status::Pending {
            let sum: u64 = mam.get(h.bytes)?.iter().map(|&b| u64::from(b)).sum();
            std::hint::black_box(sum);
            check(me, mam.get_mut(h.floats).is_err(), || {
                "constant data could change while it moved".into()
            });
            iterations += 1;
            std::thread::sleep(std::time::Duration::from_millis(1));
            status = mam.checkpoint(Wait::Test)?;
        }
        if plan.joined != Some(g) && iterations > 0 {
            println!("rank {me}: {iterations} iterations during {size} -> {nt}");
        }
        let onesided_mam::LastTimes { mine, most } = mam.times();
        let what = format!("{size} -> {nt} ({})", plan.method);
        match status {
            Status::Retired => {
                println!(
                    "rank {me}: {what} retired (total {:.3} ms)",
                    mine.total * 1e3
                );
                drop(mam);
                drop(rma);
                return Ok(true);
            }
            Status::Completed => {}
            other => fail(me, &format!("{what}: checkpoint gave {other:?}")),
        }
        check(me, mam.group().size() == nt, || {
            format!("a group of {} after {what}", mam.group().size())
        });
        verify(&mam, &h, generation, &what)?;
        if mam.rank() == 0 {
            println!(
                "{what}: spawn {:.3} ms, total {:.3} ms (constant {:.3}, variable {:.3})",
                most.spawn * 1e3,
                most.total * 1e3,
                most.background * 1e3,
                most.end * 1e3
            );
        }
    }
    drop(mam);
    drop(rma);
    Ok(false)
}

/// `victim` (under `osrun --ft`): a shrink of every process to one, its
/// constant data moving in the background, during which rank 1 (a
/// source) is killed; the others' checkpoints fail naming it.
fn victim(world: &World) -> Result<()> {
    let me = world.rank();
    let rma = Rma::new(world.endpoint())?;
    let mut mam = Mam::init(world, &rma)?;
    register(&mut mam)?;
    mam.reconfigure(Config {
        method: Method::RmaLockAll,
        strategy: onesided_mam::Strategy::NonBlocking,
        ..Config::new(1)
    })?;
    let mut status = Ok(Status::Pending);
    while matches!(status, Ok(Status::Pending)) {
        if me == 1 {
            // SIGKILL, as a node failure would.
            let pid = std::process::id().to_string();
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid])
                .status();
            std::thread::sleep(std::time::Duration::from_secs(30));
        }
        status = mam.checkpoint(Wait::Test);
    }
    match status {
        Err(e) if e.to_string().contains("rank 1") => {
            println!("rank {me}: got an error naming rank 1: {e}")
        }
        other => fail(me, &format!("a dead source gave {other:?}")),
    }
    drop(mam);
    drop(rma);
    Ok(())
}

/// Misuse gives errors on every process and changes nothing.
fn misuse(world: &World) -> Result<()> {
    let (me, n) = (world.rank(), world.size());
    let rma = Rma::new(world.endpoint())?;
    let mut mam = Mam::init(world, &rma)?;
    let wrong = mam.add(
        vec![1u8; 4],
        Layout::Distributed {
            len: 5 * u64::from(n),
        },
        Moves::Constant,
    );
    check(me, wrong.is_err(), || format!("a wrong block: {wrong:?}"));
    // Rank 1 registers a different global length.
    let len = if me == 1 { 12 } else { 10 };
    mam.add(
        local(len, n, me, byte),
        Layout::Distributed { len },
        Moves::Constant,
    )?;
    let e = mam.reconfigure(Config::new(0)).err().map(|e| e.to_string());
    check(me, e.is_some(), || "reconfigure(0) was accepted".into());
    println!("rank {me}: reconfigure(0): {}", e.unwrap_or_default());
    mam.reconfigure(Config::new(1))?;
    let e = mam.reconfigure(Config::new(2)).err().map(|e| e.to_string());
    check(me, e.is_some(), || {
        "a second reconfiguration was accepted".into()
    });
    println!("rank {me}: again: {}", e.unwrap_or_default());
    match mam.checkpoint(Wait::Block) {
        Err(e @ onesided_mam::Error::Registration { .. }) => {
            let text = e.to_string();
            let named = text.contains("global length 10 at rank 0, 12 at rank 1");
            check(me, named, || text.clone());
            println!("rank {me}: mismatch: {text}");
        }
        other => fail(me, &format!("differing registrations gave {other:?}")),
    }
    check(me, mam.group().size() == n, || "the group changed".into());
    // Beyond the universe (the test runs `osrun --universe N+1`): the
    // spawn fails on every process, and the job goes on as it was.
    mam.reconfigure(Config::new(n + 2))?;
    match mam.checkpoint(Wait::Block) {
        Err(onesided_mam::Error::Fabric(onesided_fabric::Error::SpawnFailed(why))) => {
            println!("rank {me}: spawn failed: {why}")
        }
        other => fail(me, &format!("a spawn beyond the universe gave {other:?}")),
    }
    check(me, mam.group().size() == n, || "the group changed".into());
    drop(mam);
    drop(rma);
    Ok(())
}
