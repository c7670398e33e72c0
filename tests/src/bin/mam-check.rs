//! The rank program of the malleability tests: `mam-check METHOD
//! COUNTS...` registers distributed and replicated, constant and
//! variable data of `u8`, `u32`, `f64` and a 24-byte struct (lengths not
//! divisible by the process counts, and one shorter than them), then
//! reconfigures the job to each of COUNTS in turn by METHOD (`col`,
//! `rma_lock`, `rma_lock_all`), checking every element after each one
//! against the serial distribution. Variable data changes before each
//! reconfiguration, so the check sees its latest values. Retired
//! processes print `rank R: retired`, leave the job and exit 0; the last
//! targets print `rank R: mam ok`. `mam-check misuse` checks the errors:
//! registrations that differ, a target count of 0, growing. Exits non-zero
//! naming the rank and the check otherwise.

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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let world = must(0, "init", World::init());
    let me = world.rank();
    // For the harness's checks of what the job leaves behind.
    println!("pid {me} {}", std::process::id());
    let retired = match args.first().map(String::as_str) {
        Some("misuse") => {
            must(me, "misuse", misuse(&world));
            false
        }
        Some(method) => {
            let method: Method = must(me, "method", method.parse());
            let counts: Vec<u32> = (args[1..].iter())
                .map(|c| must(me, "count", c.parse::<u32>()))
                .collect();
            must(me, "reconfigure", reconfigure(&world, method, &counts))
        }
        None => fail(me, "usage: mam-check METHOD COUNTS... | misuse"),
    };
    if retired {
        must(me, "leave", world.leave());
        println!("rank {me}: retired");
    } else {
        must(me, "finalize", world.finalize());
        println!("rank {me}: mam ok");
    }
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

/// This process's block of `len` elements among `n`, made by `f`.
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

/// Registers the data, then reconfigures to each count; whether this
/// process was retired.
fn reconfigure(world: &World, method: Method, counts: &[u32]) -> Result<bool, onesided_mam::Error> {
    let (me, n) = (world.rank(), world.size());
    let rma = Rma::new(world.endpoint())?;
    let mut mam = Mam::new(&rma, Group::world(n))?;
    let h = Handles {
        bytes: mam.add(
            local(BYTES, n, me, byte),
            Layout::Distributed { len: BYTES },
            Moves::Constant,
        )?,
        words: mam.add(
            local(WORDS, n, me, |i| word(i, 0)),
            Layout::Distributed { len: WORDS },
            Moves::Variable,
        )?,
        floats: mam.add(
            local(FLOATS, n, me, float),
            Layout::Distributed { len: FLOATS },
            Moves::Constant,
        )?,
        cells: mam.add(
            local(CELLS, n, me, |i| cell(i, 0)),
            Layout::Distributed { len: CELLS },
            Moves::Variable,
        )?,
        params: mam.add(vec![11u64, 22, 33], Layout::Replicated, Moves::Constant)?,
        state: mam.add(vec![0.0f64; 2], Layout::Replicated, Moves::Variable)?,
    };
    check(
        me,
        mam.checkpoint(Wait::Check)? == Status::NotStarted,
        || "a checkpoint without a reconfiguration started one".into(),
    );
    for (g, &nt) in counts.iter().enumerate() {
        let generation = g as u32 + 1;
        // The application's last iteration changes the variable data.
        let (size, rank) = (mam.group().size(), mam.rank());
        for (k, v) in mam.get_mut(h.words)?.iter_mut().enumerate() {
            *v = word(block(WORDS, size, rank).start + k as u64, generation);
        }
        for c in mam.get_mut(h.cells)?.iter_mut() {
            c.generation = generation;
        }
        mam.get_mut(h.state)?
            .copy_from_slice(&[f64::from(generation), -1.0]);
        let config = Config {
            targets: nt,
            method,
            ..Config::new(nt)
        };
        mam.reconfigure(config)?;
        let status = mam.checkpoint(Wait::Wait)?;
        let (t, most) = mam.times();
        match status {
            Status::Retired => {
                println!(
                    "rank {me}: {size} -> {nt} retired (total {:.3} ms)",
                    t.total * 1e3
                );
                drop(mam);
                drop(rma);
                return Ok(true);
            }
            Status::Completed => {}
            other => fail(me, &format!("checkpoint gave {other:?}")),
        }
        let r = mam.rank();
        check(me, mam.group().size() == nt, || {
            format!("a group of {} after {size} -> {nt}", mam.group().size())
        });
        let expect = |what: &str, ok: bool| {
            check(me, ok, || format!("{what} after {size} -> {nt} ({method})"));
        };
        expect("bytes", mam.get(h.bytes)? == local(BYTES, nt, r, byte));
        expect(
            "words",
            mam.get(h.words)? == local(WORDS, nt, r, |i| word(i, generation)),
        );
        expect("floats", mam.get(h.floats)? == local(FLOATS, nt, r, float));
        expect(
            "cells",
            mam.get(h.cells)? == local(CELLS, nt, r, |i| cell(i, generation)),
        );
        expect("params", mam.get(h.params)? == [11, 22, 33]);
        expect("state", mam.get(h.state)? == [f64::from(generation), -1.0]);
        if r == 0 {
            println!(
                "{size} -> {nt} {method}: redistribution {:.3} ms (constant {:.3}, variable {:.3})",
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

/// Misuse gives errors on every process and changes nothing.
fn misuse(world: &World) -> Result<(), onesided_mam::Error> {
    let (me, n) = (world.rank(), world.size());
    let rma = Rma::new(world.endpoint())?;
    let mut mam = Mam::new(&rma, Group::world(n))?;
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
    for bad in [0, n + 1] {
        let e = mam.reconfigure(Config::new(bad));
        check(me, e.is_err(), || {
            format!("reconfigure({bad}) was accepted")
        });
        println!(
            "rank {me}: reconfigure({bad}): {}",
            e.err().map(|e| e.to_string()).unwrap_or_default()
        );
    }
    mam.reconfigure(Config::new(1))?;
    match mam.checkpoint(Wait::Wait) {
        Err(e @ onesided_mam::Error::Registration { .. }) => {
            let text = e.to_string();
            check(
                me,
                text.contains("global length 10 at rank 0, 12 at rank 1"),
                || text.clone(),
            );
            println!("rank {me}: mismatch: {text}");
        }
        other => fail(me, &format!("differing registrations gave {other:?}")),
    }
    check(me, mam.group().size() == n, || "the group changed".into());
    drop(mam);
    drop(rma);
    Ok(())
}
