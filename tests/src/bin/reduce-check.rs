//! The rank program of the reduction tests.
//!
//! `reduce-check results LEN`: for every root, one reduction of LEN `f64`
//! (a sum), then 8 at once (sums, minimums, maximums of `f64`, `i32`,
//! `u64`, and a user-defined body on a 16-byte struct); every root checks
//! its result against a serial reduction of the same data. While its
//! data is contributed, each process checks that its replica file is
//! mode 0600.
//!
//! `reduce-check die POINT LEN` (under `osrun --ft`, 3 or more ranks):
//! one reduction of LEN `f64` to root 0, rank 1 failing at the spec's
//! failure POINT. The ranks call `reduce` in an order that puts rank 1
//! there: rank 1 and rank 2 first, 20 or 100 ms apart (the first of two
//! non-root workers gets their task), the others 400 ms later.
//! - `assigned` (failure 1): rank 1 first, killed once its data is
//!   contributed; its task goes to a dead rank.
//! - `task`, `fetched` (failure 2): rank 1 first, killed on its task's
//!   arrival, or after its fetch.
//! - `provided` (failure 3): rank 2 first, rank 1 killed once its data
//!   is contributed; rank 2's fetch from it fails.
//! - `hang`: as `assigned`, but stopped (SIGSTOP; a timer kills it 3 s
//!   later): only its silence tells.
//!
//! The survivors check the result.
//!
//! Prints `rank R: reduce ok` at the end; exits non-zero naming the rank
//! and the check otherwise.

#![forbid(unsafe_code)]

use onesided::prelude::*;
use onesided_reduce::{Config, Max, Min, Point, ReduceFuture, Reducer, ReducerBody, Sum};
use onesided_tests::rank::{check, fail, must};

/// A user-defined element: a range that combining widens.
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Span {
    lo: i64,
    hi: i64,
}

/// The user-defined body: the hull of the ranges.
struct Hull;

impl ReducerBody for Hull {
    type Element = Span;

    fn combine(&self, into: &mut [Span], other: &[Span]) {
        for (a, b) in into.iter_mut().zip(other) {
            a.lo = a.lo.min(b.lo);
            a.hi = a.hi.max(b.hi);
        }
    }
}

/// Element `i` of rank `r`'s data, as a number exact in `f64` sums.
fn value(r: u32, i: usize) -> i64 {
    ((r as usize * 7919 + i * 31) % 1009) as i64 - 500
}

fn data_f64(r: u32, len: usize) -> Vec<f64> {
    (0..len).map(|i| value(r, i) as f64 * 0.5).collect()
}

fn data_i32(r: u32, len: usize) -> Vec<i32> {
    (0..len).map(|i| value(r, i) as i32).collect()
}

fn data_u64(r: u32, len: usize) -> Vec<u64> {
    (0..len).map(|i| (value(r, i) + 500) as u64 * 3).collect()
}

fn data_span(r: u32, len: usize) -> Vec<Span> {
    (0..len)
        .map(|i| Span {
            lo: value(r, i),
            hi: value(r, i) + i64::from(r),
        })
        .collect()
}

/// The serial reduction of every rank's data.
fn serial<T: Copy>(n: u32, data: impl Fn(u32) -> Vec<T>, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut acc = data(0);
    for r in 1..n {
        for (a, b) in acc.iter_mut().zip(data(r)) {
            *a = f(*a, b);
        }
    }
    acc
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let world = must(0, "init", World::init());
    let me = world.rank();
    println!("pid {me} {}", std::process::id());
    let rma = must(me, "rma", Rma::new(world.endpoint()));
    let group = Group::world(world.size());
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    let len = |i: usize| must(me, "LEN", arg(i).parse::<usize>());
    match arg(0) {
        "results" => results(&world, &rma, &group, len(1)),
        "die" => die(&world, &rma, &group, arg(1), len(2)),
        _ => fail(me, "usage: reduce-check results LEN | die POINT LEN"),
    }
    println!("rank {me}: reduce ok");
    drop(rma);
    must(me, "finalize", world.finalize());
}

fn config(world: &World) -> Config {
    must(world.rank(), "config", Config::from_env())
}

/// Checks the root's result against the serial reduction.
fn expect<T: bytemuck::Pod + PartialEq + std::fmt::Debug>(
    me: u32,
    root: u32,
    what: &str,
    future: ReduceFuture<T>,
    serial: impl FnOnce() -> Vec<T>,
) {
    let got = must(me, what, future.get());
    match (me == root, got) {
        (true, Some(got)) => {
            let want = serial();
            let bad = (got.iter().zip(&want)).position(|(a, b)| a != b);
            check(me, got.len() == want.len() && bad.is_none(), || {
                format!("{what} to root {root}: element {bad:?} differs")
            });
        }
        (false, None) => {}
        (true, None) => fail(me, &format!("{what}: no result at the root")),
        (false, Some(_)) => fail(me, &format!("{what}: a result off the root")),
    }
}

fn results(world: &World, rma: &Rma, group: &Group, len: usize) {
    let me = world.rank();
    let n = world.size();
    let reducer = must(
        me,
        "reducer",
        Reducer::new(world, rma, group, config(world)),
    );
    let replicas = std::env::var("ONESIDED_REDUCE_DIR").ok();
    for root in 0..n {
        let one = must(
            me,
            "reduce",
            reducer.reduce(root, &data_f64(me, len), Sum::default(), 0),
        );
        if let Some(dir) = &replicas {
            check_private(me, dir);
        }
        expect(me, root, "sum", one, || {
            serial(n, |r| data_f64(r, len), |a, b| a + b)
        });
        // Eight at once, of four kinds.
        let mut sums = Vec::new();
        let mut mins = Vec::new();
        let mut maxs = Vec::new();
        let mut hulls = Vec::new();
        for id in 1..=8u64 {
            let (d, v) = (&data_f64(me, len), &data_span(me, len));
            match id % 4 {
                0 => sums.push(must(
                    me,
                    "reduce",
                    reducer.reduce(root, d, Sum::default(), id),
                )),
                1 => mins.push(must(
                    me,
                    "reduce",
                    reducer.reduce(root, &data_i32(me, len), Min::default(), id),
                )),
                2 => maxs.push(must(
                    me,
                    "reduce",
                    reducer.reduce(root, &data_u64(me, len), Max::default(), id),
                )),
                _ => hulls.push(must(me, "reduce", reducer.reduce(root, v, Hull, id))),
            }
        }
        for f in sums {
            expect(me, root, "sum", f, || {
                serial(n, |r| data_f64(r, len), |a, b| a + b)
            });
        }
        for f in mins {
            expect(me, root, "min", f, || {
                serial(n, |r| data_i32(r, len), i32::min)
            });
        }
        for f in maxs {
            expect(me, root, "max", f, || {
                serial(n, |r| data_u64(r, len), u64::max)
            });
        }
        for f in hulls {
            let hull = |a: Span, b: Span| Span {
                lo: a.lo.min(b.lo),
                hi: a.hi.max(b.hi),
            };
            expect(me, root, "hull", f, || {
                serial(n, |r| data_span(r, len), hull)
            });
        }
    }
}

/// Every replica file this process can see is mode 0600.
fn check_private(me: u32, dir: &str) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(jobs) = std::fs::read_dir(dir) else {
        return;
    };
    for job in jobs.flatten() {
        for file in std::fs::read_dir(job.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(meta) = file.metadata() {
                let mode = meta.permissions().mode() & 0o777;
                check(me, mode == 0o600, || {
                    format!("replica {} has mode {mode:o}", file.path().display())
                });
            }
        }
    }
}

/// SIGKILLs this process.
fn kill_self() {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &std::process::id().to_string()])
        .status();
    std::thread::sleep(std::time::Duration::from_secs(30));
}

/// SIGSTOPs this process, a timer SIGKILLing it 3 s later.
fn hang_self() {
    let pid = std::process::id().to_string();
    let _ = std::process::Command::new("sh")
        .args(["-c", &format!("sleep 3; kill -KILL {pid}")])
        .spawn();
    let _ = std::process::Command::new("kill")
        .args(["-STOP", &pid])
        .status();
    std::thread::sleep(std::time::Duration::from_secs(30));
}

fn die(world: &World, rma: &Rma, group: &Group, point: &str, len: usize) {
    let me = world.rank();
    let n = world.size();
    let mut config = config(world);
    let (inject, rank_1_first, apart) = match point {
        "returned" => ((Point::Returned, kill_self as fn()), true, 20),
        "assigned" => ((Point::Contributed, kill_self as fn()), true, 20),
        "task" => ((Point::Task, kill_self as fn()), true, 100),
        "fetched" => ((Point::Fetched, kill_self as fn()), true, 100),
        "provided" => ((Point::Contributed, kill_self as fn()), false, 20),
        "hang" => ((Point::Contributed, hang_self as fn()), true, 20),
        _ => fail(me, &format!("unknown point {point:?}")),
    };
    if me == 1 {
        config.inject = Some(inject);
    }
    let reducer = must(me, "reducer", Reducer::new(world, rma, group, config));
    let ms = |m| std::time::Duration::from_millis(m);
    // Every reducer serves before anyone reduces.
    must(me, "barrier", world.barrier());
    let delay = match (me, rank_1_first) {
        (1, true) | (2, false) => ms(0),
        (1, false) | (2, true) => ms(apart),
        _ => ms(400),
    };
    std::thread::sleep(delay);
    let future = must(
        me,
        "reduce",
        reducer.reduce(0, &data_f64(me, len), Sum::default(), 7),
    );
    expect(me, 0, "sum", future, || {
        serial(n, |r| data_f64(r, len), |a, b| a + b)
    });
}
