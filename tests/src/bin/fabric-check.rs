//! The rank program of the fabric integration tests: `fabric-check MODE`.
//! Every mode checks what it moves and exits non-zero with a message naming
//! the rank and the check on any failure. Each rank first prints
//! `pid RANK PID`, so the tests can check that nothing is left behind.
//!
//! Modes: `rma` (reads, writes, atomics, tagged messages and every misuse
//! error), `passive` (rank 0 computes without calling the library while the
//! others read and increment its memory; `passive busy`: while telling the
//! endpoint it is busy, as collectives through shared memory do, for 20
//! rounds), `victim` (rank 1 is SIGKILLed while rank 0 reads from it),
//! `spawn` (rank 0 spawns two more processes), `abort`, `sleep SECS`.

#![forbid(unsafe_code)]

use std::process::exit;
use std::time::{Duration, Instant};

use onesided_fabric::{Access, Endpoint, Error, MemoryRegion, RemoteMemory, World};

use onesided_tests::rank::{check, die_when_told, fail, must, pattern};

const TAG_DESC: u64 = 10;
const TAG_WRITTEN: u64 = 11;
const TAG_ANY: u64 = 20;
const TAG_DIRECT: u64 = 21;
const TAG_TRUNC: u64 = 30;
const TAG_GO: u64 = 40;

/// Sends `regions`' descriptors to every other rank and returns everyone's.
fn exchange(ep: &Endpoint, regions: &[&MemoryRegion]) -> Vec<Vec<RemoteMemory>> {
    let me = ep.rank();
    let mut bytes = Vec::new();
    for r in regions {
        bytes.extend_from_slice(&r.remote().to_bytes());
    }
    for peer in (0..ep.size()).filter(|&p| p != me) {
        must(me, "sending descriptors", ep.send(peer, TAG_DESC, &bytes));
    }
    (0..ep.size())
        .map(|peer| {
            if peer == me {
                return regions.iter().map(|r| r.remote()).collect();
            }
            let mut buf = vec![0u8; bytes.len()];
            let got = must(
                me,
                "receiving descriptors",
                ep.recv(Some(peer), TAG_DESC, &mut buf),
            );
            check(me, got.len == buf.len(), || {
                format!("descriptor message of {} bytes", got.len)
            });
            buf.chunks(RemoteMemory::ENCODED_LEN)
                .map(|c| must(me, "decoding a descriptor", RemoteMemory::from_bytes(c)))
                .collect()
        })
        .collect()
}

const LEN: usize = 3 * 4096 + 13;
const ROUNDS: u64 = 100;

fn rma(world: &mut World) {
    let ep = world.endpoint();
    let (me, n) = (ep.rank(), ep.size());
    println!("rank {me}: mr_mode {:?}", ep.granted().mr_mode());
    let data = must(
        me,
        "register",
        ep.register(LEN, Access::REMOTE_READ | Access::REMOTE_WRITE),
    );
    let counters = must(
        me,
        "register",
        ep.register(64, Access::REMOTE_READ | Access::REMOTE_WRITE),
    );
    let read_only = must(me, "register", ep.register(64, Access::REMOTE_READ));
    let mine: Vec<u8> = (0..LEN).map(|i| pattern(me, i)).collect();
    must(me, "fill", data.write_bytes(0, &mine));
    let remotes = exchange(ep, &[&data, &counters, &read_only]);
    must(me, "barrier", world.barrier());
    let ep = world.endpoint();
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;

    // Reads of odd sizes and offsets, whole region, last byte.
    for (offset, len) in [
        (0, 1),
        (1, 7),
        (4093, 4099),
        (0, LEN),
        (LEN - 1, 1),
        (100, 0),
    ] {
        let mut buf = vec![0u8; len];
        must(
            me,
            "read",
            ep.read(right, &remotes[right as usize][0], offset as u64, &mut buf),
        );
        for (i, b) in buf.iter().enumerate() {
            check(me, *b == pattern(right, offset + i), || {
                format!(
                    "read from rank {right} at {offset}+{i}: {b} != {}",
                    pattern(right, offset + i)
                )
            });
        }
    }

    // A delivered write, verified by the target; a plain write, read back.
    let payload: Vec<u8> = (0..5000).map(|i| pattern(me + 100, i)).collect();
    must(
        me,
        "write_delivered",
        ep.write_delivered(right, &remotes[right as usize][0], 777, &payload),
    );
    must(me, "notify", ep.send(right, TAG_WRITTEN, &[]));
    must(me, "written", ep.recv(Some(left), TAG_WRITTEN, &mut []));
    let mut got = vec![0u8; 5000];
    must(me, "local read", data.read_bytes(777, &mut got));
    check(
        me,
        got.iter()
            .enumerate()
            .all(|(i, b)| *b == pattern(left + 100, i)),
        || format!("bytes 777..5777 written by rank {left} are wrong"),
    );
    let plain = [0xA5u8; 11];
    must(
        me,
        "write",
        ep.write(right, &remotes[right as usize][0], LEN as u64 - 11, &plain),
    );
    let start = Instant::now();
    loop {
        let mut back = [0u8; 11];
        must(
            me,
            "read back",
            ep.read(
                right,
                &remotes[right as usize][0],
                LEN as u64 - 11,
                &mut back,
            ),
        );
        if back == plain {
            break;
        }
        check(me, start.elapsed() < Duration::from_secs(10), || {
            "plain write never arrived".into()
        });
    }

    // Atomics on rank 0's counters: fetch-add on word 0, compare-swap
    // increments on word 1.
    let target = &remotes[0][1];
    let mut seen = Vec::new();
    for _ in 0..ROUNDS {
        seen.push(must(me, "fetch_add", ep.fetch_add(0, target, 0, 1)));
        let mut guess = 0;
        loop {
            let prev = must(
                me,
                "compare_swap",
                ep.compare_swap(0, target, 8, guess, guess + 1),
            );
            if prev == guess {
                break;
            }
            guess = prev;
        }
    }
    check(me, seen.windows(2).all(|w| w[0] < w[1]), || {
        "fetch_add results not increasing".into()
    });

    // Tagged messages: from every rank to every rank, received from any
    // source, then from a named source.
    for peer in (0..n).filter(|&p| p != me) {
        let msg: Vec<u8> = (0..1000 + me as usize).map(|i| pattern(me, i)).collect();
        must(me, "send", ep.send(peer, TAG_ANY, &msg));
    }
    let mut senders = Vec::new();
    for _ in 1..n {
        let mut buf = vec![0u8; 2000];
        let got = must(me, "recv any", ep.recv(None, TAG_ANY, &mut buf));
        check(
            me,
            got.tag == TAG_ANY && got.len == 1000 + got.from as usize,
            || format!("got {got:?}"),
        );
        check(
            me,
            (0..got.len).all(|i| buf[i] == pattern(got.from, i)),
            || format!("message from {} corrupt", got.from),
        );
        senders.push(got.from);
    }
    senders.sort_unstable();
    check(
        me,
        senders == (0..n).filter(|&p| p != me).collect::<Vec<_>>(),
        || format!("senders {senders:?}"),
    );
    for peer in (0..n).rev().filter(|&p| p != me) {
        must(me, "send", ep.send(peer, TAG_DIRECT, &[me as u8; 3]));
    }
    for peer in (0..n).filter(|&p| p != me) {
        let mut buf = [0u8; 3];
        let got = must(me, "recv from", ep.recv(Some(peer), TAG_DIRECT, &mut buf));
        check(me, got.from == peer && buf == [peer as u8; 3], || {
            format!("expected rank {peer}, got {got:?} {buf:?}")
        });
    }

    misuse(me, n, ep, &remotes, &data, &mine);
    must(me, "barrier", world.barrier());
    if me == 0 {
        let expect = ROUNDS * u64::from(n);
        let words = [0, 8].map(|o| {
            must(me, "counter", counters.atomic_u64(o)).load(std::sync::atomic::Ordering::SeqCst)
        });
        check(me, words == [expect, expect], || {
            format!("counters {words:?}, expected {expect} each")
        });
    }
    println!("rank {me}: rma ok");
}

/// Every misuse returns its error, posts nothing and changes nothing.
fn misuse(
    me: u32,
    n: u32,
    ep: &Endpoint,
    remotes: &[Vec<RemoteMemory>],
    data: &MemoryRegion,
    mine: &[u8],
) {
    let right = (me + 1) % n;
    let remote = &remotes[right as usize][0];
    let mut buf = vec![0u8; 16];
    let e = ep
        .read(right, remote, LEN as u64 - 8, &mut buf)
        .unwrap_err();
    check(me, matches!(e, Error::OutOfRange { .. }), || {
        format!("read past the end gave {e}")
    });
    check(
        me,
        e.to_string() == format!("read: bytes {}..{} are outside 0..{LEN}", LEN - 8, LEN + 8),
        || e.to_string(),
    );
    let e = ep.write(right, remote, u64::MAX, &buf).unwrap_err();
    check(me, matches!(e, Error::OutOfRange { .. }), || {
        format!("write at u64::MAX gave {e}")
    });
    let e = ep.read(n, remote, 0, &mut buf).unwrap_err();
    check(
        me,
        matches!(e, Error::InvalidRank { rank, size } if rank == n && size == n),
        || format!("rank {n} gave {e}"),
    );
    let e = ep
        .send(right, onesided_fabric::MAX_TAG + 1, &buf)
        .unwrap_err();
    check(me, matches!(e, Error::OutOfRange { .. }), || {
        format!("huge tag gave {e}")
    });
    let e = ep.fetch_add(right, remote, 3, 1).unwrap_err();
    check(me, matches!(e, Error::Misaligned { offset: 3, .. }), || {
        format!("misaligned atomic gave {e}")
    });
    // A message larger than the receive buffer: an error naming the sender.
    // Not on tcp: libfabric 1.17's tcp;ofi_rxm reports the truncation but
    // may then drop the connection to the sender (measured: one run in
    // three), which would fail the checks that follow.
    let truncation = ep.granted().provider() != onesided_fabric::Provider::Tcp;
    if !truncation {
    } else if me == 0 {
        must(me, "send", ep.send(1, TAG_TRUNC, &[7u8; 100]));
    } else if me == 1 {
        let mut small = [0u8; 10];
        let e = ep.recv(Some(0), TAG_TRUNC, &mut small).unwrap_err();
        check(
            me,
            matches!(
                e,
                Error::Truncated {
                    rank: 0,
                    capacity: 10,
                    ..
                }
            ),
            || format!("truncated recv gave {e}"),
        );
    }
    // Nothing changed: this rank's region holds its pattern outside the
    // bytes the left neighbour wrote.
    let mut now = vec![0u8; 777];
    must(me, "local read", data.read_bytes(0, &mut now));
    check(me, now == mine[..777], || "a misuse changed memory".into());
    // A region registered for reads only: writes and atomics to it are
    // refused before anything is posted.
    let ro = &remotes[right as usize][2];
    let e = ep.write_delivered(right, ro, 0, &[1u8; 8]).unwrap_err();
    check(
        me,
        matches!(e, Error::NotPermitted { rank, .. } if rank == right),
        || format!("write to a read-only region gave {e}"),
    );
    let e = ep.fetch_add(right, ro, 0, 1).unwrap_err();
    check(me, matches!(e, Error::NotPermitted { .. }), || {
        format!("atomic on a read-only region gave {e}")
    });
    let mut back = [0u8; 8];
    must(
        me,
        "read of a read-only region",
        ep.read(right, ro, 0, &mut back),
    );
    check(me, back == [0u8; 8], || "a read-only region changed".into());
}

/// Messages queued unexpected at the receiver, several from each sender
/// with one tag, then received from any source and from named sources
/// (libfabric 1.17's shm loses such messages when they are matched through
/// ignore bits; see onesided_fabric's matching module).
fn unexpected(world: &World) {
    let ep = world.endpoint();
    let (me, n) = (ep.rank(), ep.size());
    for round in 0..10u64 {
        let tag = 50 + round;
        for peer in (0..n).filter(|&p| p != me) {
            for copy in 0..3u8 {
                must(me, "send", ep.send(peer, tag, &[me as u8, copy]));
            }
        }
        let mut got = Vec::new();
        for k in 0..3 * (n - 1) {
            let mut buf = [0u8; 2];
            let from = if round % 2 == 0 {
                None
            } else {
                Some(
                    (0..n)
                        .filter(|&p| p != me)
                        .nth((k / 3) as usize)
                        .unwrap_or(0),
                )
            };
            let r = must(me, "recv", ep.recv(from, tag, &mut buf));
            check(
                me,
                r.tag == tag && r.len == 2 && buf[0] as u32 == r.from,
                || format!("round {round}: got {r:?} {buf:?}"),
            );
            got.push((r.from, buf[1]));
        }
        got.sort_unstable();
        let want: Vec<(u32, u8)> = (0..n)
            .filter(|&p| p != me)
            .flat_map(|p| (0..3u8).map(move |c| (p, c)))
            .collect();
        check(me, got == want, || {
            format!("round {round}: received {got:?}")
        });
    }
    println!("rank {me}: unexpected ok");
}

/// CPU time of this process (all threads) so far, from /proc/self/stat
/// (utime + stime, in the kernel's fixed 100 Hz user ticks).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<u64> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // After the command name: state is field 3; utime and stime are 14, 15.
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// Rank 0 sleeps outside the library while every other rank waits for its
/// message (from rank 0, or from any rank): the waiting ranks must not burn
/// their cores (4 ranks share 2 here). Each prints and checks the share of a
/// core it used while waiting.
fn idle(world: &World, secs: f64, any_source: bool) {
    let ep = world.endpoint();
    let (me, n) = (ep.rank(), ep.size());
    if me == 0 {
        std::thread::sleep(Duration::from_secs_f64(secs));
        for peer in 1..n {
            must(me, "send", ep.send(peer, 60, &[1]));
        }
        return;
    }
    let (wall, cpu) = (Instant::now(), cpu_time());
    let from = if any_source { None } else { Some(0) };
    must(me, "recv", ep.recv(from, 60, &mut [0u8]));
    let share = (cpu_time() - cpu).as_secs_f64() / wall.elapsed().as_secs_f64();
    println!(
        "rank {me}: used {:.1}% of a core while waiting {:.2} s",
        share * 100.0,
        wall.elapsed().as_secs_f64()
    );
    check(me, share < 0.25, || {
        format!("waiting used {:.0}% of a core: a spin storm", share * 100.0)
    });
}

/// Computes without calling the library until `count()` reaches `goal`
/// (failing after 20 s); returns the computed value.
fn compute_until(me: u32, what: &str, count: impl Fn() -> u64, goal: u64) -> f64 {
    let start = Instant::now();
    let mut x = 1.0f64;
    while count() < goal {
        for i in 0..10_000 {
            x = (x * 1.000_001 + f64::from(i)).sqrt();
        }
        if start.elapsed() > Duration::from_secs(20) {
            fail(
                me,
                &format!("{what}: {} of {goal} while computing", count()),
            );
        }
    }
    x
}

/// Rank 0 serves a control service and then computes without calling the
/// library; the others call it (small and large replies), and rank 0 stops
/// computing once every call was answered.
fn control(world: &mut World) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    const SERVICE: u16 = 7;
    let ep = world.endpoint();
    let (me, n) = (ep.rank(), ep.size());
    let answered = Arc::new(AtomicU64::new(0));
    if me == 0 {
        let count = Arc::clone(&answered);
        must(
            me,
            "serve",
            ep.serve(SERVICE, move |from, request, _| {
                count.fetch_add(1, Ordering::SeqCst);
                // Reply: the request's length as 8 bytes, then as many bytes of
                // the caller's pattern.
                let want = u64::from_le_bytes(request.try_into().unwrap_or([0; 8])) as usize;
                let mut reply = (want as u64).to_le_bytes().to_vec();
                reply.extend((0..want).map(|i| pattern(from, i)));
                reply
            }),
        );
    }
    must(me, "barrier", world.barrier());
    let ep = world.endpoint();
    let expect = ROUNDS * u64::from(n - 1);
    if me == 0 {
        let x = compute_until(
            me,
            "answered calls",
            || answered.load(Ordering::SeqCst),
            expect,
        );
        println!("rank 0: answered {expect} calls while computing ({x:.3})");
    } else {
        let mut reply = vec![0u8; 8 + 20_000];
        for round in 0..ROUNDS {
            let want = if round % 10 == 0 { 20_000u64 } else { round };
            let len = must(
                me,
                "call",
                ep.call(0, SERVICE, &want.to_le_bytes(), &mut reply),
            );
            check(me, len == 8 + want as usize, || {
                format!("reply of {len} bytes for {want}")
            });
            check(
                me,
                reply[8..len]
                    .iter()
                    .enumerate()
                    .all(|(i, b)| *b == pattern(me, i)),
                || "reply bytes wrong".into(),
            );
        }
    }
    must(me, "barrier", world.barrier());
    println!("rank {me}: control ok");
}

fn passive(world: &mut World, busy: bool) {
    // Busy, the background thread polls every 10 ms: fewer rounds.
    let rounds = if busy { 20 } else { ROUNDS };
    let ep = world.endpoint();
    let (me, n) = (ep.rank(), ep.size());
    let region = must(
        me,
        "register",
        ep.register(LEN, Access::REMOTE_READ | Access::REMOTE_WRITE),
    );
    must(
        me,
        "fill",
        region.write_bytes(64, &(64..LEN).map(|i| pattern(0, i)).collect::<Vec<_>>()),
    );
    let remotes = exchange(ep, &[&region]);
    let expect = rounds * u64::from(n - 1);
    if me == 0 {
        // Compute without calling the library until the others' increments
        // have all arrived: only the background thread serves them.
        let counter = must(me, "counter", region.atomic_u64(0));
        let served = || {
            if busy {
                ep.note_busy();
            }
            counter.load(std::sync::atomic::Ordering::SeqCst)
        };
        let x = compute_until(me, "increments", served, expect);
        let how = if busy { "busy" } else { "computing" };
        println!("rank 0: served {expect} increments while {how} ({x:.3})");
    } else {
        let remote = &remotes[0][0];
        for _ in 0..rounds {
            let mut buf = vec![0u8; LEN - 64];
            must(me, "read", ep.read(0, remote, 64, &mut buf));
            check(
                me,
                buf.iter()
                    .enumerate()
                    .all(|(i, b)| *b == pattern(0, i + 64)),
                || "read wrong data".into(),
            );
            must(me, "fetch_add", ep.fetch_add(0, remote, 0, 1));
        }
    }
    must(me, "barrier", world.barrier());
    println!("rank {me}: passive ok");
}

fn victim(world: &mut World) {
    let ep = world.endpoint();
    let me = ep.rank();
    let region = must(me, "register", ep.register(4096, Access::REMOTE_READ));
    let remotes = exchange(ep, &[&region]);
    match me {
        1 => die_when_told(me, ep, 0, TAG_GO),
        0 => {
            let mut buf = [0u8; 64];
            for _ in 0..100 {
                must(
                    me,
                    "read before the kill",
                    ep.read(1, &remotes[1][0], 0, &mut buf),
                );
            }
            must(me, "go", ep.send(1, TAG_GO, &[]));
            let start = Instant::now();
            let error = loop {
                if let Err(e) = ep.read(1, &remotes[1][0], 0, &mut buf) {
                    break e;
                }
                check(me, start.elapsed() < Duration::from_secs(30), || {
                    "reads from a dead rank keep succeeding".into()
                });
            };
            let ms = start.elapsed().as_millis();
            check(me, error.rank() == Some(1), || {
                format!("the error does not name rank 1: {error}")
            });
            println!("rank 0: survivor got an error naming rank 1 after {ms} ms: {error}");
            println!("rank 0: dead ranks {:?}", ep.ranks().dead_ranks());
        }
        _ => {}
    }
}

/// Rank 0 stops the launcher (its parent), kills rank 1 while it waits,
/// and sends to it as soon as the kernel has ended it: the launcher can
/// tell no one yet, so the send must fail from what the endpoint sees
/// of the process itself (a process killed inside the provider may have
/// left a lock held that a send to it would spin on forever).
fn sudden(world: &mut World) {
    let ep = world.endpoint();
    let me = ep.rank();
    if me == 1 {
        must(
            me,
            "send pid",
            ep.send(0, TAG_GO, &std::process::id().to_le_bytes()),
        );
        // Killed meanwhile: nothing is sent on this tag.
        let _ = ep.recv(Some(0), TAG_DESC, &mut []);
        fail(me, "still alive after rank 0 killed it");
    }
    if me != 0 {
        return;
    }
    let mut pid = [0u8; 4];
    must(me, "recv pid", ep.recv(Some(1), TAG_GO, &mut pid));
    let pid = u32::from_le_bytes(pid).to_string();
    let launcher = std::os::unix::process::parent_id().to_string();
    let kill = |signal: &str, pid: &str| {
        let _ = std::process::Command::new("kill")
            .args([signal, pid])
            .status();
    };
    kill("-STOP", &launcher);
    kill("-KILL", &pid);
    // A zombie, its other threads gone, until the stopped launcher reaps it.
    let start = Instant::now();
    let ended = loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, Iterator::count);
        if stat
            .rsplit_once(')')
            .is_some_and(|(_, f)| f.trim_start().starts_with('Z'))
            && threads == 1
        {
            break true;
        }
        if start.elapsed() > Duration::from_secs(10) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let sent = ep.send(1, TAG_GO, &[0u8; 64]);
    kill("-CONT", &launcher);
    check(me, ended, || "rank 1 outlived SIGKILL".into());
    let error = match sent {
        Ok(()) => fail(me, "a send to rank 1, killed, succeeded"),
        Err(e) => e,
    };
    check(me, error.rank() == Some(1), || {
        format!("the error does not name rank 1: {error}")
    });
    println!("rank 0: a send to rank 1, killed, failed before the launcher could tell: {error}");
}

fn spawn(world: &mut World) {
    let me = world.rank();
    let kvs = world.launch().kvsname;
    if me == 0 {
        must(
            me,
            "put",
            world.kvs_put("greeting", "hello-from-the-parent"),
        );
    }
    must(me, "barrier", world.barrier());
    if me == 0 {
        let program = std::env::current_exe().unwrap_or_else(|e| fail(me, &e.to_string()));
        let request = onesided_fabric::pmi::SpawnRequest {
            count: 2,
            program: program.to_string_lossy().into_owned(),
            args: vec!["child".into()],
            preput: vec![("parent-kvs".into(), kvs)],
        };
        must(me, "spawn", world.spawn_job(&request));
        println!("rank 0: spawned 2");
    }
}

fn child(world: &mut World) {
    let me = world.rank();
    check(me, world.launch().spawned, || "PMI_SPAWNED not set".into());
    let parent = must(me, "preput", world.kvs_get("parent-kvs"));
    let greeting = must(me, "parent's kvs", world.kvs_get_from(&parent, "greeting"));
    // The children talk to each other through their own endpoints.
    let ep = world.endpoint();
    let peer = 1 - me;
    must(me, "send", ep.send(peer, 1, &[me as u8]));
    let mut buf = [9u8];
    must(me, "recv", ep.recv(Some(peer), 1, &mut buf));
    check(me, buf[0] == peer as u8, || "child message".into());
    println!("child {me} of {}: {greeting}", world.size());
}

/// `grow`: every rank spawns two processes that join the job as ranks
/// n and n + 1 (`grown`); then every rank of the grown job exchanges a
/// message with every other. `grow-missing`: the spawn of a program that
/// does not exist fails on every rank, and the job goes on: a second
/// spawn (its ranks after the ones the failed spawn reserved) joins.
fn grow(world: &World, missing: bool) {
    let me = world.rank();
    let request = |program: std::path::PathBuf| onesided_fabric::pmi::SpawnRequest {
        count: 2,
        program: program.to_string_lossy().into_owned(),
        args: vec!["grown".into()],
        preput: vec![("greeting".into(), "welcome".into())],
    };
    if missing {
        match world.spawn(0, &request("/nonexistent/onesided-program".into())) {
            Err(onesided_fabric::Error::SpawnFailed(why)) => {
                println!("rank {me}: spawn failed: {why}")
            }
            other => fail(me, &format!("a spawn of a missing program gave {other:?}")),
        }
    }
    let exe = std::env::current_exe().unwrap_or_else(|e| fail(me, &e.to_string()));
    let ranks = must(me, "spawn", world.spawn(0, &request(exe)));
    println!("rank {me}: ranks {ranks:?} joined");
    greet_all(world);
}

/// Every rank sends its rank to every other live one and checks what
/// arrives.
fn greet_all(world: &World) {
    let ep = world.endpoint();
    let me = ep.rank();
    let live = ep.ranks().live_ranks();
    for &r in &live {
        must(me, "send", ep.send(r, 7, &me.to_le_bytes()));
    }
    for &r in &live {
        let mut buf = [0u8; 4];
        must(me, "recv", ep.recv(Some(r), 7, &mut buf));
        check(me, u32::from_le_bytes(buf) == r, || {
            format!("from {r}: {buf:?}")
        });
    }
    println!("rank {me} of {}: exchanged with {live:?}", ep.size());
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("");
    let mut world = World::init().unwrap_or_else(|e| {
        eprintln!("fabric-check: {e}");
        exit(1)
    });
    println!("pid {} {}", world.rank(), std::process::id());
    match mode {
        "rma" => rma(&mut world),
        "passive" => passive(&mut world, args.get(1).map(String::as_str) == Some("busy")),
        "victim" => victim(&mut world),
        "sudden" => sudden(&mut world),
        "spawn" => spawn(&mut world),
        "child" => child(&mut world),
        "grow" => grow(&world, false),
        "grow-missing" => grow(&world, true),
        "grown" => {
            let greeting = must(world.rank(), "preput", world.kvs_get("greeting"));
            check(world.rank(), greeting == "welcome", || greeting.clone());
            greet_all(&world)
        }
        "abort" => {
            must(world.rank(), "abort", world.abort(3, "asked to abort"));
            std::thread::sleep(Duration::from_secs(30));
        }
        "unexpected" => unexpected(&world),
        "control" => control(&mut world),
        "idle" | "idle-any" => idle(
            &world,
            args.get(1).and_then(|s| s.parse().ok()).unwrap_or(2.0),
            mode == "idle-any",
        ),
        "sleep" => {
            let secs: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1.0);
            std::thread::sleep(Duration::from_secs_f64(secs));
        }
        other => fail(world.rank(), &format!("unknown mode {other:?}")),
    }
    if mode != "victim" && mode != "sudden" {
        if let Err(e) = world.finalize() {
            eprintln!("fabric-check: finalize: {e}");
            exit(1);
        }
    }
}
