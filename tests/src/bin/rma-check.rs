//! The rank program of the RMA integration tests: `rma-check MODE`. Every
//! mode checks what it moves and exits non-zero with a message naming the
//! rank and the check on any failure. Each rank first prints `pid RANK
//! PID`, so the tests can check that nothing is left behind.
//!
//! Modes: `window` (allocated windows: bytes at odd offsets, lock
//! contention, misuse), `active` (ibarrier, fence, compare-and-swap
//! contention), `window-victim` (rank 1 dies while rank 0 holds a lock on
//! it), `create` (exposures, re-created windows, read-only exposures),
//! `dynamic` (attach/detach), `typed` (accumulate, fetch_and_op,
//! compare_and_swap on every element type, contention), `requests`
//! (rget/rput, flush, request sets), `misuse` (every checked error leaves
//! target memory unchanged), `guarded` (an outsider's writes with guessed
//! keys complete none and change nothing). Run with `ONESIDED_HOST=node{rank}` to take
//! the multi-host (provider) paths on one machine.

#![forbid(unsafe_code)]

use std::process::exit;
use std::time::{Duration, Instant};

use onesided_fabric::World;
use onesided_rma::{
    Assert, Element, Error as RmaError, Group, LockKind, Op, RemoteAccess, Request, Rma,
};
use onesided_tests::rank::{check, die_when_told, fail, must, pattern};

const ROUNDS: u64 = 100;
const TAG_GO: u64 = 40;

/// This rank, the job size, and RMA state on the world's endpoint.
fn rma_setup(world: &World) -> (u32, u32, Rma) {
    let ep = world.endpoint();
    let (me, n) = (ep.rank(), ep.size());
    (me, n, must(me, "rma", Rma::new(ep)))
}

fn barrier(me: u32, rma: &Rma, group: &Group) {
    must(
        me,
        "barrier",
        rma.ibarrier(group).and_then(|mut b| b.wait()),
    );
}

/// Bytes `offset..offset + len` of `rank`'s pattern.
fn bytes_of(rank: u32, offset: usize, len: usize) -> Vec<u8> {
    (offset..offset + len).map(|i| pattern(rank, i)).collect()
}

/// Windows over exposed memory: every rank exposes an odd length filled
/// with its pattern, reads every other rank's at odd offsets and lengths,
/// writes typed elements into its right neighbour; a second window over
/// the same exposures sees the first one's writes (the memory persists);
/// a read-only exposure refuses writes and atomics and leaves its bytes
/// alone.
fn create(world: &World) {
    let (me, n, rma) = rma_setup(world);
    let group = Group::world(n);
    let len = |r: u32| 4096 * 3 + 13 * r as usize + 1;
    let x = must(
        me,
        "expose",
        rma.expose(&group, len(me), RemoteAccess::ReadWrite),
    );
    must(me, "fill", x.write(0, &bytes_of(me, 0, len(me))));
    check(me, x.len() == len(me), || "exposure length".into());
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    {
        let w = rma.create(&x);
        let all = must(me, "lock_all", w.lock_all(Assert::empty()));
        for target in 0..n {
            for (offset, count) in [
                (0usize, 1usize),
                (1, 4095),
                (4097, 5000),
                (len(target) - 7, 7),
            ] {
                let mut got = vec![0u8; count];
                must(me, "get", all.get(target, offset as u64, &mut got));
                check(me, got == bytes_of(target, offset, count), || {
                    format!("get {offset}+{count} from {target}")
                });
            }
        }
        // Everyone has read before anyone writes.
        barrier(me, &rma, &group);
        // Three u16 and five f64 at odd (but element-aligned) offsets.
        must(me, "put u16", all.put(right, 2, &[me as u16 + 1, 7, 9]));
        let doubles: Vec<f64> = (0..5).map(|i| f64::from(me) + 0.5 * f64::from(i)).collect();
        must(me, "put f64", all.put(right, 8 * 101, &doubles));
        must(me, "unlock_all", all.unlock());
        barrier(me, &rma, &group);
        must(me, "free", w.free());
    }
    // A window again over the same memory: no message to create, and the
    // bytes written through the first are there.
    let w = rma.create(&x);
    {
        let epoch = must(me, "lock", w.lock(me, LockKind::Shared, Assert::empty()));
        let mut words = [0u16; 3];
        must(me, "get own u16", epoch.get(me, 2, &mut words));
        check(me, words == [left as u16 + 1, 7, 9], || {
            format!("u16 {words:?}")
        });
        let mut doubles = [0f64; 5];
        must(me, "get own f64", epoch.get(me, 8 * 101, &mut doubles));
        let want: Vec<f64> = (0..5)
            .map(|i| f64::from(left) + 0.5 * f64::from(i))
            .collect();
        check(me, doubles[..] == want[..], || format!("f64 {doubles:?}"));
        must(me, "unlock", epoch.unlock());
    }
    barrier(me, &rma, &group);
    must(me, "free", w.free());
    // Two windows at once over the same exposure, freed newest first.
    let (w1, w2) = (rma.create(&x), rma.create(&x));
    {
        let all = must(me, "lock_all", w1.lock_all(Assert::empty()));
        let mut b = [0u8; 4];
        must(me, "get through the older", all.get(right, 20, &mut b));
        check(me, b[..] == bytes_of(right, 20, 4)[..], || {
            "two windows".into()
        });
        must(me, "unlock_all", all.unlock());
    }
    must(me, "free newer", w2.free());
    must(me, "free older", w1.free());
    drop(x);

    // Read-only exposures: readable, never written.
    let ro = must(me, "expose", rma.expose(&group, 64, RemoteAccess::ReadOnly));
    must(me, "fill", ro.write(0, &bytes_of(me, 0, 64)));
    let w = rma.create(&ro);
    barrier(me, &rma, &group);
    let all = must(me, "lock_all", w.lock_all(Assert::empty()));
    let mut got = [0u8; 64];
    must(me, "get read-only", all.get(right, 0, &mut got));
    check(me, got[..] == bytes_of(right, 0, 64)[..], || {
        "read-only get".into()
    });
    let refused = [
        all.put(right, 0, &[0u8; 8]).err(),
        all.rput(right, 8, &[0u8; 8]).err(),
        all.accumulate(right, 16, &[1u64], Op::SUM).err(),
        all.compare_and_swap(right, 24, 0u64, 1).err(),
    ];
    for e in &refused {
        let ok = matches!(
            e,
            Some(RmaError::Fabric(
                onesided_fabric::Error::NotPermitted { .. }
            ))
        );
        check(me, ok, || {
            format!("write to a read-only exposure gave {e:?}")
        });
    }
    must(me, "unlock_all", all.unlock());
    barrier(me, &rma, &group);
    must(me, "read own", ro.read(0, &mut got));
    check(me, got[..] == bytes_of(me, 0, 64)[..], || {
        "read-only bytes changed".into()
    });
    must(me, "free", w.free());
    println!("rank {me}: create ok");
}

/// Dynamic windows: two attachments per rank (shared memory and plain),
/// displacements known without messages, gets and puts into both, an
/// access to a detached attachment refused.
fn dynamic(world: &World) {
    use onesided_fabric::Access;
    let (me, n, rma) = rma_setup(world);
    let ep = world.endpoint();
    let group = Group::world(n);
    let right = (me + 1) % n;
    let w = must(me, "create_dynamic", rma.create_dynamic(&group));
    check(me, w.is_empty(), || {
        "a dynamic window has no memory of its own".into()
    });
    let rw = Access::REMOTE_READ | Access::REMOTE_WRITE;
    let a = must(me, "register", ep.register_shared(5000, rw));
    let b = must(me, "register", ep.register(3000, rw));
    must(me, "fill", a.write_bytes(0, &bytes_of(me, 0, 5000)));
    must(me, "fill", b.write_bytes(0, &bytes_of(me + 100, 0, 3000)));
    let (a, b) = (std::sync::Arc::new(a), std::sync::Arc::new(b));
    let da = must(me, "attach", w.attach(a.clone()));
    let db = must(me, "attach", w.attach(b.clone()));
    check(me, da == 1 << 40 && db == 2 << 40, || {
        format!("displacements {da:#x} {db:#x}")
    });
    barrier(me, &rma, &group);
    let all = must(me, "lock_all", w.lock_all(Assert::empty()));
    let mut got = vec![0u8; 999];
    must(me, "get a", all.get(right, da + 4001, &mut got));
    check(me, got == bytes_of(right, 4001, 999), || {
        "get from attachment a".into()
    });
    must(me, "get b", all.get(right, db + 1, &mut got));
    check(me, got == bytes_of(right + 100, 1, 999), || {
        "get from attachment b".into()
    });
    must(me, "put b", all.put(right, db + 2990, &[me as u8; 10]));
    let across = all.get(right, da + 4990, &mut [0u8; 20]);
    check(
        me,
        matches!(across, Err(RmaError::OutOfRange { .. })),
        || format!("a get past an attachment's end gave {across:?}"),
    );
    let nowhere = all.get(right, 3 << 40, &mut [0u8; 1]);
    check(
        me,
        matches!(nowhere, Err(RmaError::OutOfRange { .. })),
        || format!("a get where nothing is attached gave {nowhere:?}"),
    );
    must(me, "unlock_all", all.unlock());
    barrier(me, &rma, &group);
    // The owner reads its attached memory through its own handle.
    let mut head = [0u8; 4];
    must(me, "read attached", a.read_bytes(0, &mut head));
    check(me, head[..] == bytes_of(me, 0, 4)[..], || {
        "read a while attached".into()
    });
    let b = must(me, "detach", w.detach(db));
    let mut tail = [0u8; 10];
    must(me, "read", b.read_bytes(2990, &mut tail));
    check(me, tail == [((me + n - 1) % n) as u8; 10], || {
        format!("put into b: {tail:?}")
    });
    check(me, w.detach(db).is_err(), || "detached twice".into());
    barrier(me, &rma, &group);
    let all = must(me, "lock_all", w.lock_all(Assert::empty()));
    let gone = all.get(right, db, &mut [0u8; 1]);
    check(me, matches!(gone, Err(RmaError::OutOfRange { .. })), || {
        format!("a get from a detached attachment gave {gone:?}")
    });
    must(me, "unlock_all", all.unlock());
    barrier(me, &rma, &group);
    let detached = must(me, "detach", w.detach(da));
    check(me, std::sync::Arc::ptr_eq(&a, &detached), || {
        "detach gave another region".into()
    });
    drop((a, b, detached));
    must(me, "free", w.free());
    println!("rank {me}: dynamic ok");
}

/// Every rank accumulates into rank 0 with every op on every element type
/// (counts that are not multiples of anything), then checks the results
/// against a serial computation; fetch_and_op and compare_and_swap under
/// contention reach exact totals.
fn typed(world: &World) {
    let (me, n, rma) = rma_setup(world);
    let group = Group::world(n);
    let w = must(
        me,
        "allocate",
        rma.allocate(&group, 4096, RemoteAccess::ReadWrite),
    );
    must(me, "zero", w.write_local(0, &[0u8; 4096]));
    barrier(me, &rma, &group);
    let all = must(me, "lock_all", w.lock_all(Assert::empty()));
    // Slots (byte offsets) on rank 0, 64 bytes each.
    fn contribute<T: Element + std::fmt::Debug>(
        me: u32,
        epoch: &onesided_rma::Epoch,
        slot: u64,
        values: &[T],
        op: Op<T>,
    ) {
        must(me, "accumulate", epoch.accumulate(0, slot * 64, values, op));
    }
    let r = me as i64;
    contribute(me, &all, 0, &[r + 1, -r, 3], Op::SUM);
    contribute(me, &all, 1, &[(r as i32) - 2, 5, 7, 11, 13], Op::MIN);
    contribute(me, &all, 2, &[(me as u8).wrapping_mul(100), 1], Op::SUM);
    contribute(me, &all, 3, &[f64::from(me) * 0.25, -1.5], Op::MAX);
    contribute(me, &all, 4, &[f32::from(me as u8) + 0.5], Op::SUM);
    contribute(me, &all, 5, &[me as u16 + 1; 3], Op::MAX);
    if me == 1 % n {
        contribute(me, &all, 6, &[-7i8, 9], Op::REPLACE);
    }
    // Contention: n ranks x ROUNDS fetch-adds of u32 and CAS increments of
    // an i16.
    let mut seen = Vec::new();
    for _ in 0..ROUNDS {
        seen.push(must(
            me,
            "fetch_and_op",
            all.fetch_and_op(0, 8 * 64, 1u32, Op::SUM),
        ));
        let mut guess = 0i16;
        loop {
            let prev = must(me, "cas", all.compare_and_swap(0, 9 * 64, guess, guess + 1));
            if prev == guess {
                break;
            }
            guess = prev;
        }
    }
    check(me, seen.windows(2).all(|p| p[0] < p[1]), || {
        format!("fetch_and_op results not increasing: {seen:?}")
    });
    must(me, "flush", all.flush(0));
    must(me, "unlock_all", all.unlock());
    barrier(me, &rma, &group);
    if me == 0 {
        let nn = i64::from(n);
        let all = must(me, "lock_all", w.lock_all(Assert::empty()));
        let mut i64s = [0i64; 3];
        must(me, "get", all.get(0, 0, &mut i64s));
        let sum_r: i64 = (0..nn).sum();
        check(me, i64s == [sum_r + nn, -sum_r, 3 * nn], || {
            format!("i64 sum {i64s:?}")
        });
        let mut i32s = [0i32; 5];
        must(me, "get", all.get(0, 64, &mut i32s));
        check(me, i32s == [-2, 0, 0, 0, 0], || format!("i32 min {i32s:?}"));
        let mut u8s = [0u8; 2];
        must(me, "get", all.get(0, 128, &mut u8s));
        let want = (0..n).fold(0u8, |a, r| a.wrapping_add((r as u8).wrapping_mul(100)));
        check(me, u8s == [want, n as u8], || {
            format!("u8 wrapping sum {u8s:?}")
        });
        let mut f64s = [0f64; 2];
        must(me, "get", all.get(0, 192, &mut f64s));
        check(me, f64s == [f64::from(n - 1) * 0.25, 0.0], || {
            format!("f64 max {f64s:?}")
        });
        let f = must(me, "read f32", all.fetch_and_op(0, 256, 0f32, Op::NO_OP));
        let want: f32 = (0..n).map(|r| r as f32 + 0.5).sum();
        check(me, f == want, || format!("f32 sum {f}"));
        let mut u16s = [0u16; 3];
        must(me, "get", all.get(0, 320, &mut u16s));
        check(me, u16s == [n as u16; 3], || format!("u16 max {u16s:?}"));
        let mut i8s = [0i8; 2];
        must(me, "get", all.get(0, 384, &mut i8s));
        check(me, i8s == [-7, 9], || format!("i8 replace {i8s:?}"));
        let count = must(me, "read", all.fetch_and_op(0, 8 * 64, 0u32, Op::NO_OP));
        let cas = must(me, "read", all.fetch_and_op(0, 9 * 64, 0i16, Op::NO_OP));
        let total = ROUNDS * u64::from(n);
        check(me, u64::from(count) == total && cas as u64 == total, || {
            format!("contention totals {count} {cas}, expected {total}")
        });
        must(me, "unlock_all", all.unlock());
    }
    barrier(me, &rma, &group);
    must(me, "free", w.free());
    println!("rank {me}: typed ok");
}

/// Request-based operations: rget/rput of odd sizes completed by test
/// loops, by wait_all, by flush and by unlock; wait_any.
fn requests(world: &World) {
    let (me, n, rma) = rma_setup(world);
    let group = Group::world(n);
    const LEN: usize = 70_000;
    let w = must(
        me,
        "allocate",
        rma.allocate(&group, 2 * LEN, RemoteAccess::ReadWrite),
    );
    must(me, "fill", w.write_local(0, &bytes_of(me, 0, LEN)));
    must(me, "zero", w.write_local(LEN, &vec![0u8; LEN]));
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    barrier(me, &rma, &group);
    let sizes = [1usize, 4095, 65_537];
    {
        let all = must(me, "lock_all", w.lock_all(Assert::empty()));
        // Tested until done.
        let mut buf = vec![0u8; 4095];
        {
            let mut r = must(me, "rget", all.rget(right, 17, &mut buf));
            let start = Instant::now();
            while !must(me, "test", r.test()) {
                check(me, start.elapsed() < Duration::from_secs(30), || {
                    "rget never completed".into()
                });
                std::thread::yield_now();
            }
        }
        check(me, buf == bytes_of(right, 17, 4095), || {
            "tested rget".into()
        });
        // A set waited for together.
        let mut bufs: Vec<Vec<u8>> = sizes.iter().map(|&s| vec![0u8; s]).collect();
        {
            let mut set = Vec::new();
            for (b, off) in bufs.iter_mut().zip([0u64, 3, 101]) {
                set.push(must(me, "rget", all.rget(right, off, b)));
            }
            must(me, "wait_all", onesided_rma::wait_all(&mut set));
        }
        for ((b, off), s) in bufs.iter().zip([0usize, 3, 101]).zip(sizes) {
            check(me, *b == bytes_of(right, off, s), || {
                format!("rget of {s} at {off}")
            });
        }
        // Puts into the right neighbour's upper half, completed by flush;
        // wait_any then finds them complete.
        // The largest goes from a buffer the request owns.
        let mut puts = Vec::new();
        let mut at = LEN;
        for s in &sizes[..2] {
            puts.push(must(
                me,
                "rput",
                all.rput(right, at as u64, &bytes_of(me, at, *s)),
            ));
            at += s;
        }
        let data = bytes_of(me, at, sizes[2]).into_boxed_slice();
        let mut owned_put = must(me, "rput_owned", all.rput_owned(right, at as u64, data));
        must(me, "flush", all.flush(right));
        let first = must(me, "wait_any", onesided_rma::wait_any(&mut puts));
        check(me, first.is_some(), || "wait_any found none".into());
        must(me, "wait_all", onesided_rma::wait_all(&mut puts));
        drop(puts);
        must(me, "wait", owned_put.wait());
        let back = owned_put.take_buffer();
        check(
            me,
            back.as_deref() == Some(&bytes_of(me, at, sizes[2])[..]),
            || "rput_owned gives its buffer back".into(),
        );
        // Reads straight into buffers the requests own, handed back once
        // complete (and once only).
        let mut gets: Vec<_> = (sizes.iter().zip([0u64, 3, 101]))
            .map(|(&s, off)| {
                let buf = vec![0u8; s].into_boxed_slice();
                must(me, "rget_owned", all.rget_owned(right, off, buf))
            })
            .collect();
        must(me, "wait_all", onesided_rma::wait_all(&mut gets));
        for ((r, off), s) in gets.iter_mut().zip([0usize, 3, 101]).zip(sizes) {
            let got = r.take_buffer();
            check(
                me,
                got.as_deref() == Some(&bytes_of(right, off, s)[..]),
                || format!("rget_owned of {s} at {off}"),
            );
            check(me, r.take_buffer().is_none(), || {
                "a buffer taken twice".into()
            });
        }
        must(me, "unlock_all", all.unlock());
    }
    // A request outliving its epoch: unlock completed it.
    let mut late = vec![0u8; 1000];
    {
        let epoch = must(me, "lock", w.lock(right, LockKind::Shared, Assert::empty()));
        let mut r = must(me, "rget", epoch.rget(right, 5, &mut late));
        must(me, "unlock", epoch.unlock());
        check(me, must(me, "test", r.test()), || {
            "rget not complete after unlock".into()
        });
    }
    check(me, late == bytes_of(right, 5, 1000), || {
        "rget completed by unlock".into()
    });
    barrier(me, &rma, &group);
    let mut upper = vec![0u8; sizes.iter().sum()];
    must(me, "read", w.read_local(LEN, &mut upper));
    check(me, upper == bytes_of(left, LEN, upper.len()), || {
        "rput bytes".into()
    });
    barrier(me, &rma, &group);
    must(me, "free", w.free());
    println!("rank {me}: requests ok");
}

/// Every checked error names what it should and changes nothing at the
/// target: out of range (partly and wholly), wrong rank, outside an epoch,
/// misaligned atomics, epochs that cannot nest, free inside an epoch.
fn misuse(world: &World) {
    let (me, n, rma) = rma_setup(world);
    let group = Group::world(n);
    const LEN: usize = 1000;
    let w = must(
        me,
        "allocate",
        rma.allocate(&group, LEN, RemoteAccess::ReadWrite),
    );
    must(me, "fill", w.write_local(0, &bytes_of(me, 0, LEN)));
    let right = (me + 1) % n;
    barrier(me, &rma, &group);
    // (An access outside any epoch does not compile: the accesses are the
    // epoch guard's.) A lock epoch reaches its own target alone.
    if right != me {
        let only = must(me, "lock", w.lock(me, LockKind::Shared, Assert::empty()));
        let outside = only.put(right, 0, &[0u8; 8]);
        check(
            me,
            matches!(outside, Err(RmaError::NoEpoch { target }) if target == right),
            || format!("put outside the epoch's target gave {outside:?}"),
        );
        check(
            me,
            matches!(only.flush(right), Err(RmaError::NoEpoch { .. })),
            || "flush outside the epoch's target".into(),
        );
        must(me, "unlock", only.unlock());
    }
    // Outside its own part: the same error as a peer's access gets.
    let local = w.write_local(LEN - 4, &[0u8; 8]).err();
    check(
        me,
        matches!(local, Some(RmaError::OutOfRange { target, offset, len: 8, .. })
            if target == me && offset == LEN as u64 - 4),
        || format!("a local write outside the part gave {local:?}"),
    );
    let bad = w.lock_all(Assert::NOSUCCEED).err();
    check(
        me,
        matches!(bad, Some(RmaError::BadAssert { call: "lock_all", given }) if given == Assert::NOSUCCEED),
        || format!("lock_all asserting NOSUCCEED gave {bad:?}"),
    );
    let all = must(me, "lock_all", w.lock_all(Assert::empty()));
    let e = all.put(right, LEN as u64 - 4, &[0u8; 8]).unwrap_err();
    let text = e.to_string();
    check(
        me,
        matches!(e, RmaError::OutOfRange { target, offset, len: 8, size, .. }
            if target == right && offset == LEN as u64 - 4 && size == LEN as u64)
            && text.contains(&format!("group rank {right}"))
            && text.contains("window"),
        || format!("partial overlap gave {text}"),
    );
    check(
        me,
        matches!(
            all.rput(right, u64::MAX - 2, &[0u8; 8]),
            Err(RmaError::OutOfRange { .. })
        ),
        || "offset overflow".into(),
    );
    check(
        me,
        matches!(
            all.get(right, 2 * LEN as u64, &mut [0u8; 1]),
            Err(RmaError::OutOfRange { .. })
        ),
        || "get beyond".into(),
    );
    check(
        me,
        matches!(all.get(n, 0, &mut [0u8; 1]), Err(RmaError::NotInGroup { rank, size }) if rank == n && size == n),
        || "bad rank".into(),
    );
    let mis = all.fetch_and_op(right, 4, 1u64, Op::SUM);
    check(
        me,
        matches!(
            mis,
            Err(RmaError::Fabric(onesided_fabric::Error::Misaligned { .. }))
        ),
        || format!("misaligned atomic gave {mis:?}"),
    );
    let product = all.accumulate(right, 0, &[2u64], Op::PROD);
    check(
        me,
        matches!(product, Err(RmaError::UnsupportedOp { .. })),
        || format!("a product in an atomic gave {product:?}"),
    );
    check(
        me,
        matches!(
            all.accumulate(right, 2, &[1i32], Op::SUM),
            Err(RmaError::Fabric(onesided_fabric::Error::Misaligned { .. }))
        ),
        || "misaligned accumulate".into(),
    );
    check(
        me,
        matches!(
            w.lock(right, LockKind::Exclusive, Assert::empty()),
            Err(RmaError::EpochConflict(_))
        ),
        || "lock inside lock_all".into(),
    );
    check(
        me,
        matches!(w.fence(Assert::empty()), Err(RmaError::EpochConflict(_))),
        || "fence inside lock_all".into(),
    );
    must(me, "unlock_all", all.unlock());
    let epoch = must(me, "lock", w.lock(right, LockKind::Shared, Assert::empty()));
    check(
        me,
        matches!(
            w.lock(right, LockKind::Shared, Assert::empty()),
            Err(RmaError::AlreadyLocked { .. })
        ),
        || "double lock".into(),
    );
    check(
        me,
        matches!(w.lock_all(Assert::empty()), Err(RmaError::EpochConflict(_))),
        || "lock_all inside lock".into(),
    );
    must(me, "unlock", epoch.unlock());
    barrier(me, &rma, &group);
    let mut mine = vec![0u8; LEN];
    must(me, "read", w.read_local(0, &mut mine));
    check(me, mine == bytes_of(me, 0, LEN), || {
        "a refused operation changed target memory".into()
    });
    // (Unlock without lock, free inside an epoch and use after free do not
    // compile: an epoch is a guard borrowing its window, free consumes it.)
    must(me, "free", w.free());
    // One Rma per endpoint: a second one would restart the numbering of
    // windows and barriers that peers (and the board) remember.
    drop(rma);
    let again = Rma::new(world.endpoint());
    check(me, matches!(again, Err(RmaError::EpochConflict(_))), || {
        format!("a second Rma on the endpoint gave {:?}", again.err())
    });
    println!("rank {me}: misuse ok");
}
/// Windows over the whole job: bytes moved under lock_all, an exclusive-lock
/// counter and a shared-lock fetch-add counter under contention, misuse
/// errors, free, and a second window after it.
fn window(world: &mut World) {
    use onesided_rma::{Error as RmaError, Group, LockKind};
    const INCREMENTS: u64 = 50;
    let (me, n, rma) = rma_setup(world);
    let group = Group::world(n);
    let len = |r: u32| 1000 + 13 * r as usize;
    let win = must(
        me,
        "allocate",
        rma.allocate(&group, len(me), RemoteAccess::ReadWrite),
    );
    let mine: Vec<u8> = (0..len(me)).map(|i| pattern(me, i)).collect();
    must(me, "fill", win.write_local(0, &mine));
    must(me, "zero the counters", win.write_local(0, &[0u8; 16]));
    let right = (me + 1) % n;
    let mut buf = vec![0u8; 64];
    must(me, "barrier", world.barrier());

    // Bytes: reads at odd offsets and lengths, a put into the right
    // neighbour (bytes 100..107), all in one lock_all epoch.
    let all = must(me, "lock_all", win.lock_all(Assert::NOCHECK));
    for (offset, count) in [(16usize, 1usize), (17, 63), (999 - 16, 17)] {
        let mut got = vec![0u8; count];
        must(me, "get", all.get(right, offset as u64, &mut got));
        check(
            me,
            got.iter()
                .enumerate()
                .all(|(i, b)| *b == pattern(right, offset + i)),
            || format!("get {offset}+{count} from {right}"),
        );
    }
    must(me, "put", all.put(right, 100, &[me as u8 + 1; 7]));
    let e = all
        .get(right, len(right) as u64 - 3, &mut buf[..8])
        .unwrap_err();
    check(me, matches!(e, RmaError::OutOfRange { .. }), || {
        format!("get past the end gave {e}")
    });
    check(
        me,
        matches!(all.get(n, 0, &mut buf), Err(RmaError::NotInGroup { .. })),
        || "bad target".into(),
    );
    check(
        me,
        matches!(
            win.lock(right, LockKind::Shared, Assert::empty()),
            Err(RmaError::EpochConflict(_))
        ),
        || "lock inside lock_all".into(),
    );
    must(me, "unlock_all", all.unlock());
    must(me, "barrier", world.barrier());
    let left = (me + n - 1) % n;
    let mut put = [0u8; 7];
    must(me, "read", win.read_local(100, &mut put));
    check(me, put == [left as u8 + 1; 7], || {
        format!("bytes put by rank {left}: {put:?}")
    });

    // Contention on rank 0: an exclusive read-modify-write counter at 0
    // and a shared-lock fetch-add counter at 8.
    for _ in 0..INCREMENTS {
        let epoch = must(
            me,
            "lock",
            win.lock(0, LockKind::Exclusive, Assert::empty()),
        );
        let mut word = [0u8; 8];
        must(me, "get", epoch.get(0, 0, &mut word));
        let next = u64::from_le_bytes(word) + 1;
        must(me, "put", epoch.put(0, 0, &next.to_le_bytes()));
        must(me, "unlock", epoch.unlock());
        let epoch = must(me, "lock", win.lock(0, LockKind::Shared, Assert::empty()));
        must(
            me,
            "fetch_add",
            epoch.fetch_and_op(0, 8, 1u64, onesided_rma::Op::SUM),
        );
        check(
            me,
            matches!(
                win.lock(0, LockKind::Shared, Assert::empty()),
                Err(RmaError::AlreadyLocked { .. })
            ),
            || "double lock".into(),
        );
        must(me, "unlock", epoch.unlock());
        // A lock_all epoch holds rank 0's shared lock from its first
        // access on: no exclusive writer changes the counter meanwhile.
        let all = must(me, "lock_all", win.lock_all(Assert::empty()));
        let (mut first, mut again) = ([0u8; 8], [0u8; 8]);
        must(me, "get", all.get(0, 0, &mut first));
        for _ in 0..20 {
            std::thread::yield_now();
            must(me, "get", all.get(0, 0, &mut again));
            check(me, first == again, || {
                format!("the counter moved in a lock_all epoch: {first:?} {again:?}")
            });
        }
        must(me, "unlock_all", all.unlock());
    }
    must(me, "barrier", world.barrier());
    if me == 0 {
        let mut words = [0u8; 16];
        must(me, "read", win.read_local(0, &mut words));
        let exclusive = u64::from_le_bytes(words[..8].try_into().unwrap_or_default());
        let shared = u64::from_le_bytes(words[8..].try_into().unwrap_or_default());
        let expect = INCREMENTS * u64::from(n);
        check(me, exclusive == expect && shared == expect, || {
            format!("counters {exclusive} {shared}, expected {expect}")
        });
    }
    must(me, "free", win.free());
    // A second window after the first is gone.
    let again = must(
        me,
        "allocate",
        rma.allocate(&group, 8, RemoteAccess::ReadWrite),
    );
    must(
        me,
        "write",
        again.write_local(0, &(u64::from(me) * 3).to_le_bytes()),
    );
    must(me, "barrier", world.barrier());
    {
        let all = must(me, "lock_all", again.lock_all(Assert::empty()));
        let mut word = [0u8; 8];
        must(me, "get", all.get(right, 0, &mut word));
        check(me, u64::from_le_bytes(word) == u64::from(right) * 3, || {
            "second window".into()
        });
        must(me, "unlock_all", all.unlock());
    }
    must(me, "free", again.free());
    println!("rank {me}: window ok");
}

/// A nonblocking barrier (every member's value is visible to all after
/// it), fence epochs, and compare-and-swap counting under contention.
fn active(world: &World) {
    use onesided_rma::{Group, Request};
    let (me, n, rma) = rma_setup(world);
    let group = Group::world(n);
    let win = must(
        me,
        "allocate",
        rma.allocate(&group, 8 * n as usize + 16, RemoteAccess::ReadWrite),
    );
    must(
        me,
        "zero",
        win.write_local(0, &vec![0u8; 8 * n as usize + 16]),
    );
    // Stagger the arrivals, then barrier: once it completes, every member
    // has written its slot.
    std::thread::sleep(Duration::from_millis(30 * u64::from(me)));
    must(
        me,
        "slot",
        win.write_local(16, &(u64::from(me) + 100).to_le_bytes()),
    );
    let mut barrier = must(me, "ibarrier", rma.ibarrier(&group));
    let mut tests = 0u64;
    while !must(me, "test", barrier.test()) {
        tests += 1;
        std::thread::sleep(Duration::from_micros(50));
    }
    let all = must(me, "lock_all", win.lock_all(Assert::NOCHECK));
    for r in 0..n {
        let mut word = [0u8; 8];
        must(me, "get", all.get(r, 16, &mut word));
        check(me, u64::from_le_bytes(word) == u64::from(r) + 100, || {
            format!("rank {r}'s slot not written before the barrier completed")
        });
    }
    // Compare-and-swap increments of rank 0's counter.
    for _ in 0..ROUNDS {
        let mut guess = 0;
        loop {
            let prev = must(me, "cas", all.compare_and_swap(0, 0, guess, guess + 1));
            if prev == guess {
                break;
            }
            guess = prev;
        }
    }
    must(me, "unlock_all", all.unlock());
    // Fence epochs: put into the right neighbour's slot 8, read own after.
    let right = (me + 1) % n;
    let mut fenced = must(me, "fence", win.fence(Assert::NOPRECEDE));
    must(
        me,
        "put",
        fenced.put(right, 8, &(u64::from(me) + 1).to_le_bytes()),
    );
    // NOSUCCEED is the last fence's, `end`: refused here, nothing changes.
    let bad = fenced.fence(Assert::NOSUCCEED).err();
    check(
        me,
        matches!(bad, Some(RmaError::BadAssert { given, .. }) if given == Assert::NOSUCCEED),
        || format!("fence asserting NOSUCCEED on an open epoch gave {bad:?}"),
    );
    must(me, "fence", fenced.fence(Assert::empty()));
    must(me, "end", fenced.end(Assert::empty()));
    let bad = win.fence(Assert::NOSUCCEED).err();
    check(
        me,
        matches!(bad, Some(RmaError::BadAssert { given, .. }) if given == Assert::NOSUCCEED),
        || format!("a fence opening no epoch gave {bad:?}"),
    );
    let mut word = [0u8; 8];
    must(me, "read", win.read_local(8, &mut word));
    let left = (me + n - 1) % n;
    check(me, u64::from_le_bytes(word) == u64::from(left) + 1, || {
        "fence put".into()
    });
    must(
        me,
        "barrier",
        rma.ibarrier(&group).and_then(|mut b| b.wait()),
    );
    if me == 0 {
        must(me, "read", win.read_local(0, &mut word));
        check(
            me,
            u64::from_le_bytes(word) == ROUNDS * u64::from(n),
            || format!("cas counter {}", u64::from_le_bytes(word)),
        );
    }
    must(me, "free", win.free());
    println!("rank {me}: active ok ({tests} barrier tests)");
}

/// Rank 1 dies while rank 0 holds an exclusive lock on it and reads from
/// it: rank 0's next operations fail naming rank 1, within a bounded time.
fn window_victim(world: &World) {
    use onesided_rma::{Group, LockKind, Request};
    let (me, n, rma) = rma_setup(world);
    let ep = world.endpoint();
    let group = Group::world(n);
    let win = must(
        me,
        "allocate",
        rma.allocate(&group, 64, RemoteAccess::ReadWrite),
    );
    must(
        me,
        "barrier",
        rma.ibarrier(&group).and_then(|mut b| b.wait()),
    );
    match me {
        1 => die_when_told(me, ep, 0, TAG_GO),
        0 => {
            let epoch = must(
                me,
                "lock",
                win.lock(1, LockKind::Exclusive, Assert::empty()),
            );
            let mut buf = [0u8; 8];
            must(me, "get before the kill", epoch.get(1, 0, &mut buf));
            must(me, "go", ep.send(1, TAG_GO, &[]));
            let start = Instant::now();
            let error = loop {
                if let Err(e) = epoch.get(1, 0, &mut buf) {
                    break e;
                }
                check(me, start.elapsed() < Duration::from_secs(30), || {
                    "gets from a dead rank keep succeeding".into()
                });
                std::thread::sleep(Duration::from_millis(1));
            };
            let names_rank_1 =
                matches!(&error, onesided_rma::Error::Fabric(e) if e.rank() == Some(1));
            check(me, names_rank_1, || {
                format!("the error does not name rank 1: {error}")
            });
            let unlock = epoch.unlock();
            check(me, unlock.is_err(), || {
                "unlocking a dead rank succeeded".into()
            });
            println!(
                "rank 0: got an error naming rank 1 after {} ms: {error}",
                start.elapsed().as_millis()
            );
        }
        _ => {}
    }
}

/// Windows that outsiders must not write: every rank exposes 64 KiB of its
/// pattern and allocates a window of 64 KiB more, and reads its
/// neighbour's (so every registration is in use). Rank 0 then gathers the
/// ranks' endpoint addresses and runs the `intruder` program (beside this
/// one: a process outside the job, with an endpoint of its own) against
/// each, with keys 0-4095 at offsets 0 and 64 KiB - 8: none of its writes
/// may complete (the others wait in a barrier meanwhile: run with an
/// `ONESIDED_TIMEOUT` of a minute). Then every byte must still be its pattern, and an
/// exclusive lock, a put and an unlock on the neighbour must work (the
/// lock words are intact).
fn guarded(world: &World) {
    const LEN: usize = 64 << 10;
    const TAG_NAME: u64 = 41;
    let (me, n, rma) = rma_setup(world);
    let ep = world.endpoint();
    let group = Group::world(n);
    let right = (me + 1) % n;
    let x = must(
        me,
        "expose",
        rma.expose(&group, LEN, RemoteAccess::ReadWrite),
    );
    must(me, "fill", x.write(0, &bytes_of(me, 0, LEN)));
    let created = rma.create(&x);
    let allocated = must(
        me,
        "allocate",
        rma.allocate(&group, LEN, RemoteAccess::ReadWrite),
    );
    must(me, "fill", allocated.write_local(0, &bytes_of(me, 0, LEN)));
    barrier(me, &rma, &group);
    for w in [&created, &allocated] {
        let epoch = must(me, "lock_all", w.lock_all(Assert::empty()));
        let mut got = vec![0u8; 64];
        must(me, "get", epoch.get(right, 0, &mut got));
        check(me, got == bytes_of(right, 0, 64), || "get before".into());
        must(me, "unlock_all", epoch.unlock());
    }
    let name = must(me, "name", ep.name());
    if me != 0 {
        must(me, "send name", ep.send(0, TAG_NAME, &name));
    } else {
        let intruder = must(me, "own path", std::env::current_exe()).with_file_name("intruder");
        for r in 0..n {
            let mut theirs = vec![0u8; 256];
            let name = match r {
                0 => name.clone(),
                _ => {
                    let got = must(me, "name", ep.recv(Some(r), TAG_NAME, &mut theirs));
                    theirs[..got.len].to_vec()
                }
            };
            let hex: String = name.iter().map(|b| format!("{b:02x}")).collect();
            let out = must(
                me,
                "run the intruder",
                std::process::Command::new(&intruder)
                    .args([hex.as_str(), "4096", "0", "65528"])
                    .output(),
            );
            let text = String::from_utf8_lossy(&out.stdout);
            check(me, out.status.success(), || {
                format!("intruder: {}{}", text, String::from_utf8_lossy(&out.stderr))
            });
            check(
                me,
                text.contains("intruder: 0 of 8192 writes completed"),
                || format!("the intruder's writes into rank {r} completed:\n{text}"),
            );
            println!("rank 0: into rank {r}, {}", text.trim());
        }
    }
    barrier(me, &rma, &group);
    let mut mine = vec![0u8; LEN];
    must(me, "read", x.read(0, &mut mine));
    check(me, mine == bytes_of(me, 0, LEN), || {
        "exposure changed".into()
    });
    must(me, "read", allocated.read_local(0, &mut mine));
    check(me, mine == bytes_of(me, 0, LEN), || "window changed".into());
    barrier(me, &rma, &group);
    for w in [&created, &allocated] {
        let epoch = must(
            me,
            "lock",
            w.lock(right, LockKind::Exclusive, Assert::empty()),
        );
        must(me, "put", epoch.put(right, 0, &bytes_of(right, 0, 8)));
        must(me, "unlock", epoch.unlock());
    }
    barrier(me, &rma, &group);
    must(me, "free", created.free());
    must(me, "free", allocated.free());
    println!("rank {me}: guarded ok");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("");
    let mut world = World::init().unwrap_or_else(|e| {
        eprintln!("rma-check: {e}");
        exit(1)
    });
    println!("pid {} {}", world.rank(), std::process::id());
    match mode {
        "window" => window(&mut world),
        "active" => active(&world),
        "window-victim" => window_victim(&world),
        "create" => create(&world),
        "dynamic" => dynamic(&world),
        "typed" => typed(&world),
        "requests" => requests(&world),
        "misuse" => misuse(&world),
        "guarded" => guarded(&world),
        other => fail(world.rank(), &format!("unknown mode {other:?}")),
    }
    if mode != "window-victim" {
        if let Err(e) = world.finalize() {
            eprintln!("rma-check: finalize: {e}");
            exit(1);
        }
    }
}
