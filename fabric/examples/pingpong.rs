//! Latency of tagged messages (half round trip) and RMA reads between ranks
//! 0 and 1, through onesided's endpoint and through a raw libfabric loop on
//! the same endpoint (`onesided_fabric::raw`), alternating A B A B within
//! one run. Each operation is timed on its own; the table shows the median
//! per operation (with min and max) and the ratio of the medians
//! (onesided / raw: 1.00 means no overhead). Every read is checked.
//!
//! `osrun -n 2 [--provider tcp] target/release/examples/pingpong [ROUNDS]`

use std::time::{Duration, Instant};

use onesided_fabric::{raw, Access, Endpoint, RemoteMemory, Result, World};

const SIZES: [usize; 4] = [8, 4096, 65536, 1 << 20];
const TAG_DESCRIPTOR: u64 = 1;
const TAG_PING: u64 = 2;
const TAG_PHASE: u64 = 3;

fn pattern(i: usize) -> u8 {
    ((i * 7 + 3) % 251) as u8
}

fn iterations(size: usize) -> usize {
    ((16 << 20) / size).clamp(32, 1000)
}

/// Times of single operations, in microseconds.
#[derive(Default)]
struct Samples(Vec<f64>);

impl Samples {
    fn add(&mut self, times: &[Duration], per: f64) {
        self.0
            .extend(times.iter().map(|t| t.as_secs_f64() * 1e6 / per));
    }

    fn stats(&mut self) -> (f64, f64, f64) {
        self.0.sort_by(|a, b| a.total_cmp(b));
        let v = &self.0;
        (v[0], v[v.len() / 2], v[v.len() - 1])
    }
}

/// Message round trips through the endpoint.
fn endpoint_pingpong(ep: &Endpoint, buf: &mut [u8], iters: usize) -> Result<Vec<Duration>> {
    let peer = 1 - ep.rank();
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let start = Instant::now();
        if ep.rank() == 0 {
            ep.send(peer, TAG_PING, buf)?;
            ep.recv(Some(peer), TAG_PING, buf)?;
        } else {
            ep.recv(Some(peer), TAG_PING, buf)?;
            ep.send(peer, TAG_PING, buf)?;
        }
        times.push(start.elapsed());
    }
    Ok(times)
}

/// Message round trips through the raw loop.
fn raw_pingpong(ep: &Endpoint, buf: &mut [u8], iters: usize) -> Result<Vec<Duration>> {
    // SAFETY: no other operation of ep is in flight during a raw loop (both
    // ranks run the same sequence), the peer is in the same loop, and buf
    // outlives ep.
    unsafe { raw::tagged_pingpong(ep, 1 - ep.rank(), TAG_PING, buf, iters, ep.rank() == 0) }
}

/// Reads through the endpoint, each checked.
fn endpoint_reads(
    ep: &Endpoint,
    remote: &RemoteMemory,
    buf: &mut [u8],
    iters: usize,
) -> Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let start = Instant::now();
        ep.read(1, remote, 0, buf)?;
        times.push(start.elapsed());
    }
    check_read(buf);
    Ok(times)
}

fn check_read(buf: &[u8]) {
    for i in [0, buf.len() / 2, buf.len() - 1] {
        if buf[i] != pattern(i) {
            eprintln!(
                "pingpong: read wrong data at byte {i}: {} != {}",
                buf[i],
                pattern(i)
            );
            std::process::exit(1);
        }
    }
}

/// A page-aligned block, so the endpoint's reads land on the same alignment
/// as the raw loop's (registered, page-aligned) buffer: misaligned copies are
/// several times slower here (docs/measurements.md).
#[derive(Clone, Copy)]
#[repr(C, align(4096))]
struct Page([u8; 4096]);

fn page_bytes(pages: &mut [Page]) -> &mut [u8] {
    // SAFETY: Page is repr(C) around a byte array with no padding (its size
    // equals its alignment), so the pages are one contiguous, initialised
    // byte buffer borrowed mutably for the returned slice's lifetime.
    unsafe { std::slice::from_raw_parts_mut(pages.as_mut_ptr().cast::<u8>(), pages.len() * 4096) }
}

fn run(world: &World, buf: &mut [u8], rounds: usize) -> Result<()> {
    let ep = world.endpoint();
    let rank = ep.rank();
    let max = SIZES[SIZES.len() - 1];
    // Rank 1 exposes a region for reads and sends rank 0 its descriptor.
    let region = ep.register(max, Access::REMOTE_READ)?;
    let remote = if rank == 1 {
        let bytes: Vec<u8> = (0..max).map(pattern).collect();
        region.write_bytes(0, &bytes)?;
        ep.send(0, TAG_DESCRIPTOR, &region.remote().to_bytes())?;
        region.remote()
    } else {
        let mut bytes = [0u8; RemoteMemory::ENCODED_LEN];
        ep.recv(Some(1), TAG_DESCRIPTOR, &mut bytes)?;
        RemoteMemory::from_bytes(&bytes)?
    };
    if rank == 0 {
        println!(
            "provider {}, {rounds} rounds alternating, per operation in us",
            ep.granted().provider()
        );
        println!(
            "{:<8} {:>8} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
            "op", "bytes", "onesided_us", "min", "max", "raw_us", "min", "max", "ratio"
        );
    }
    for size in SIZES {
        let iters = iterations(size);
        let (mut ours, mut floor) = (Samples::default(), Samples::default());
        // Warm up both paths, then alternate, swapping the order each round.
        raw_pingpong(ep, &mut buf[..size], iters / 4 + 1)?;
        endpoint_pingpong(ep, &mut buf[..size], iters / 4 + 1)?;
        for round in 0..rounds {
            for phase in 0..2 {
                if (phase == 0) == (round % 2 == 0) {
                    floor.add(&raw_pingpong(ep, &mut buf[..size], iters)?, 2.0);
                } else {
                    ours.add(&endpoint_pingpong(ep, &mut buf[..size], iters)?, 2.0);
                }
            }
        }
        report(rank, "message", size, ours, floor);

        // Reads: each timed phase is its own wait at the target, so both
        // find it equally awake. Round 0 warms up.
        let (mut ours, mut floor) = (Samples::default(), Samples::default());
        for round in 0..=rounds {
            for phase in 0..2 {
                if rank == 0 {
                    if (phase == 0) == (round % 2 == 0) {
                        // SAFETY: no other operation of ep is in flight (both
                        // ranks run the same sequence); rank 1 waits in a
                        // receive, which makes progress; buf outlives ep.
                        let times =
                            unsafe { raw::read_loop(ep, 1, &remote, &mut buf[..size], iters) }?;
                        if round > 0 {
                            floor.add(&times, 1.0);
                        }
                    } else {
                        let times = endpoint_reads(ep, &remote, &mut buf[..size], iters)?;
                        if round > 0 {
                            ours.add(&times, 1.0);
                        }
                    }
                    ep.send(1, TAG_PHASE, &[])?;
                } else {
                    // The target serves the reads while it waits.
                    ep.recv(Some(0), TAG_PHASE, &mut [])?;
                }
            }
        }
        report(rank, "read", size, ours, floor);
    }
    Ok(())
}

fn report(rank: u32, op: &str, size: usize, mut ours: Samples, mut floor: Samples) {
    if rank != 0 {
        return;
    }
    let (o_min, o_med, o_max) = ours.stats();
    let (r_min, r_med, r_max) = floor.stats();
    println!(
        "{op:<8} {size:>8} {o_med:>12.2} {o_min:>9.2} {o_max:>9.2} {r_med:>9.2} {r_min:>9.2} {r_max:>9.2} {:>7.2}",
        o_med / r_med
    );
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(6)
        .max(1);
    // Declared before the world so that it outlives the endpoint (the raw
    // loops' safety contract).
    let mut pages = vec![Page([0; 4096]); SIZES[SIZES.len() - 1] / 4096];
    let world = World::init().unwrap_or_else(|e| {
        eprintln!("pingpong: {e}");
        std::process::exit(1);
    });
    if world.size() < 2 {
        eprintln!("pingpong: needs at least 2 ranks (osrun -n 2 ...)");
        std::process::exit(2);
    }
    let result = if world.rank() < 2 {
        run(&world, page_bytes(&mut pages), rounds)
    } else {
        Ok(())
    };
    if let Err(e) = result.and_then(|()| Ok(world.finalize()?)) {
        eprintln!("pingpong: {e}");
        std::process::exit(1);
    }
}
