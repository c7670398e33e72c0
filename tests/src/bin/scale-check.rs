//! The rank program of the scale tests: `scale-check`. Runs each
//! operation whose cost in p the crates state, checks what it moved
//! element by element, and prints one line per operation with what this
//! rank sent for it (its endpoint's counters, `World::stats`, before and
//! after) and how long it took:
//!
//! `op NAME rank R messages M bytes B operations O pmi P receive_memory V
//! us T tagged G control SERVICE:COUNT,...`
//!
//! Operations are separated by the process manager's barrier, which
//! sends nothing over the fabric. Run it with every rank a host of its
//! own (`ONESIDED_HOST=node{rank}`) to count the provider paths. The
//! reducer's replicas go to `ONESIDED_REDUCE_DIR` (default the system's
//! temporary directory).
//!
//! Last, the job grows by one process of this program (`spawn_join_1`;
//! the new process reports its start as `join_init`) and finalizes.
//! `World::finalize` consumes the counters, so for it each process
//! prints them before (`total before_finalize rank R messages M bytes B
//! pmi P`) and its time after (`op finalize_after_growth rank R us T`);
//! run with `ONESIDED_STATS=1`, the counters at exit on standard error
//! give what it sent. It needs a launcher that spawns (`osrun`).

#![forbid(unsafe_code)]

use std::time::Instant;

use onesided_collectives::Comm;
use onesided_fabric::pmi::SpawnRequest;
use onesided_fabric::{Access, Stats, World};
use onesided_reduce::{Config, Reducer, Sum};
use onesided_rma::{Assert, Group, LockKind, Op, RemoteAccess, Request, Rma};
use onesided_tests::rank::{check, must};

/// Prints `name`'s line: the counters since `before`, the time since `start`.
fn report(world: &World, name: &str, before: &Stats, start: Instant) {
    let d = world.stats().since(before);
    let services: Vec<String> = (d.control.iter())
        .map(|(s, t)| format!("{s:#06x}:{}", t.count))
        .collect();
    println!(
        "op {name} rank {} messages {} bytes {} operations {} pmi {} receive_memory {} us {:.1} tagged {} control {}",
        world.rank(),
        d.messages(),
        d.message_bytes(),
        d.operations(),
        d.pmi_requests,
        d.receive_memory,
        start.elapsed().as_secs_f64() * 1e6,
        d.tagged.count,
        services.join(","),
    );
}

/// Runs `op` between two process-manager barriers and reports it.
fn measure(world: &World, name: &str, op: impl FnOnce()) {
    let me = world.rank();
    must(me, "barrier", world.barrier());
    let before = world.stats();
    let start = Instant::now();
    op();
    report(world, name, &before, start);
}

/// Finalizes, with the counters before and the time after (see the
/// crate docs).
fn finalize_measured(world: World) {
    let me = world.rank();
    let d = world.stats();
    println!(
        "total before_finalize rank {me} messages {} bytes {} pmi {}",
        d.messages(),
        d.message_bytes(),
        d.pmi_requests
    );
    let start = Instant::now();
    must(me, "finalize", world.finalize());
    println!(
        "op finalize_after_growth rank {me} us {:.1}",
        start.elapsed().as_secs_f64() * 1e6
    );
}

fn main() {
    let start = Instant::now();
    let world = must(0, "init", World::init());
    let (me, n) = (world.rank(), world.size());
    println!("pid {me} {}", std::process::id());
    if world.launch().spawned {
        // The process of the growth: its start, then the finalize.
        report(&world, "join_init", &Stats::default(), start);
        return finalize_measured(world);
    }
    if me == 0 {
        let (version, path) = onesided_fabric::libfabric_loaded();
        println!("loaded libfabric {version} {path}");
    }
    report(&world, "init", &Stats::default(), start);
    let rma = must(me, "rma", Rma::new(world.endpoint()));
    let group = Group::world(n);
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    // A window over a fresh exposure, each rank reading its right
    // neighbour, freed; then this rank's releases settle.
    let value = |r: u32, round: u64| u64::from(r) * 1000 + round;
    measure(&world, "window_create_free", || {
        let exposure = must(me, "expose", rma.expose(&group, 8, RemoteAccess::ReadOnly));
        must(me, "write", exposure.write(0, &[value(me, 1)]));
        let window = rma.create(&exposure);
        let epoch = must(me, "lock_all", window.lock_all(Assert::empty()));
        let mut got = [0u64];
        must(me, "get", epoch.get(right, 0, &mut got));
        must(me, "unlock_all", epoch.unlock());
        check(me, got == [value(right, 1)], || {
            format!("window get {got:?}")
        });
        must(me, "free", window.free());
        drop(exposure);
        must(me, "settle", rma.settle_releases());
    });
    // Re-creating windows over one exposure: the second costs nothing.
    let exposure = must(me, "expose", rma.expose(&group, 8, RemoteAccess::ReadOnly));
    must(me, "write", exposure.write(0, &[value(me, 2)]));
    let once = |name: &str| {
        measure(&world, name, || {
            let window = rma.create(&exposure);
            let epoch = must(me, "lock_all", window.lock_all(Assert::empty()));
            let mut got = [0u64];
            must(me, "get", epoch.get(right, 0, &mut got));
            must(me, "unlock_all", epoch.unlock());
            check(me, got == [value(right, 2)], || {
                format!("re-created get {got:?}")
            });
            must(me, "free", window.free());
        });
    };
    once("window_first_over_exposure");
    once("window_recreate_free");
    measure(&world, "allocate_free", || {
        let window = must(
            me,
            "allocate",
            rma.allocate(&group, 8, RemoteAccess::ReadOnly),
        );
        must(me, "write", window.write_local(0, &[value(me, 3)]));
        must(me, "free", window.free());
        must(me, "settle", rma.settle_releases());
    });
    measure(&world, "dynamic_attach_detach", || {
        let window = must(me, "create_dynamic", rma.create_dynamic(&group));
        let rw = Access::REMOTE_READ | Access::REMOTE_WRITE;
        let region = must(me, "register", world.endpoint().register(64, rw));
        must(
            me,
            "fill",
            region.write_bytes(0, &value(me, 4).to_le_bytes()),
        );
        let region = std::sync::Arc::new(region);
        let disp = must(me, "attach", window.attach(region));
        // Attached everywhere before anyone accesses (as MPI requires).
        must(me, "barrier", world.barrier());
        let epoch = must(me, "lock_all", window.lock_all(Assert::empty()));
        let mut got = [0u64];
        must(me, "get", epoch.get(right, disp, &mut got));
        must(me, "unlock_all", epoch.unlock());
        check(me, got == [value(right, 4)], || {
            format!("dynamic get {got:?}")
        });
        must(me, "barrier", world.barrier());
        must(me, "detach", window.detach(disp));
        must(me, "free", window.free());
        must(me, "settle", rma.settle_releases());
    });
    // Epochs on a window made beforehand: lock_all with one get from the
    // left neighbour, and an exclusive lock on rank 0 that every rank
    // contends for, incrementing a counter there.
    let window = must(
        me,
        "allocate",
        rma.allocate(&group, 16, RemoteAccess::ReadWrite),
    );
    must(me, "write", window.write_local(0, &[value(me, 5), 0]));
    measure(&world, "warm", || {
        let epoch = must(me, "lock_all", window.lock_all(Assert::empty()));
        let mut got = [0u64];
        for r in [left, right, 0] {
            must(me, "get", epoch.get(r, 0, &mut got));
        }
        must(me, "unlock_all", epoch.unlock());
    });
    measure(&world, "lock_all_get_unlock_all", || {
        let epoch = must(me, "lock_all", window.lock_all(Assert::empty()));
        let mut got = [0u64];
        must(me, "get", epoch.get(left, 0, &mut got));
        must(me, "unlock_all", epoch.unlock());
        check(me, got == [value(left, 5)], || {
            format!("lock_all get {got:?}")
        });
    });
    measure(&world, "lock_exclusive_contended", || {
        let epoch = must(
            me,
            "lock",
            window.lock(0, LockKind::Exclusive, Assert::empty()),
        );
        let mut count = [0u64];
        must(me, "get", epoch.get(0, 8, &mut count));
        must(me, "put", epoch.put(0, 8, &[count[0] + 1]));
        must(me, "unlock", epoch.unlock());
    });
    must(me, "barrier", world.barrier());
    if me == 0 {
        let mut count = [0u64];
        must(me, "read", window.read_local(8, &mut count));
        check(me, count == [u64::from(n)], || {
            format!("exclusive increments {count:?}")
        });
        let epoch = must(
            me,
            "lock",
            window.lock(0, LockKind::Shared, Assert::empty()),
        );
        let mut old = [0u64];
        must(me, "read", epoch.get(0, 8, &mut old));
        let prev = must(me, "fetch", epoch.fetch_and_op(0, 8, 0u64, Op::NO_OP));
        must(me, "unlock", epoch.unlock());
        check(me, prev == old[0], || "atomic read".into());
    }
    measure(&world, "ibarrier", || {
        must(
            me,
            "ibarrier",
            rma.ibarrier(&group).and_then(|mut b| b.wait()),
        );
    });
    let comm = must(me, "comm", Comm::new(&rma, group.clone()));
    measure(&world, "barrier", || must(me, "barrier", comm.barrier()));
    measure(&world, "allreduce_8", || {
        let mut sum = [0u64];
        must(
            me,
            "allreduce",
            comm.allreduce(&[u64::from(me)], &mut sum, Op::SUM),
        );
        check(me, sum == [u64::from(n) * u64::from(n - 1) / 2], || {
            format!("sum {sum:?}")
        });
    });
    measure(&world, "bcast_8", || {
        let mut v = [if me == 0 { 42u64 } else { 0 }];
        must(me, "bcast", comm.bcast(0, &mut v));
        check(me, v == [42], || format!("bcast {v:?}"));
    });
    measure(&world, "allgather_8", || {
        let mut all = vec![0u64; n as usize];
        let ones = vec![1; n as usize];
        must(
            me,
            "allgather",
            comm.allgatherv(&[u64::from(me)], &mut all, &ones),
        );
        let right = all.iter().enumerate().all(|(r, v)| *v == r as u64);
        check(me, right, || format!("allgather {all:?}"));
    });
    // An alltoallv whose blocks go to the two neighbours only: nothing is
    // sent for the empty ones.
    measure(&world, "alltoallv_neighbours", || {
        let (left, right) = ((me + n - 1) % n, (me + 1) % n);
        let mut counts = vec![0usize; n as usize];
        counts[left as usize] = 1;
        counts[right as usize] = 1;
        let input: Vec<u64> = counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(r, _)| u64::from(me) * 1000 + r as u64)
            .collect();
        let mut output = vec![0u64; input.len()];
        must(
            me,
            "alltoallv",
            comm.alltoallv(&input, &counts, &mut output, &counts),
        );
        let from: Vec<u64> = (0..n)
            .filter(|r| counts[*r as usize] > 0)
            .map(|r| u64::from(r) * 1000 + u64::from(me))
            .collect();
        check(me, output == from, || format!("alltoallv {output:?}"));
    });
    // The reduction: one of 1 MiB of f64 to rank 0, then the reducer
    // idle for a second (its liveness traffic).
    let config = must(me, "config", Config::from_env());
    let reducer = must(me, "reducer", Reducer::new(&world, &rma, &group, config));
    let len = (1 << 20) / 8;
    measure(&world, "reduce_1mib", || {
        let data: Vec<f64> = (0..len).map(|i| f64::from(me) + i as f64).collect();
        let future = must(me, "reduce", reducer.reduce(0, &data, Sum::default(), 1));
        let got = must(me, "get", future.get());
        if me == 0 {
            let got = got.unwrap_or_default();
            let base = f64::from(n) * f64::from(n - 1) / 2.0;
            let right = (got.len() == len)
                && (got.iter().enumerate()).all(|(i, v)| *v == base + f64::from(n) * i as f64);
            check(me, right, || "the reduction's sum".into());
        }
    });
    // The reduction's replicas are written and acknowledged in the
    // background meanwhile: a second for them first.
    std::thread::sleep(std::time::Duration::from_secs(1));
    measure(&world, "reducer_idle_1s", || {
        std::thread::sleep(std::time::Duration::from_secs(1))
    });
    drop(reducer);
    must(me, "free", window.free());
    drop((comm, exposure, rma));
    let program = must(
        me,
        "exe",
        std::env::current_exe().map_err(|e| e.to_string()),
    );
    measure(&world, "spawn_join_1", || {
        let request = SpawnRequest {
            count: 1,
            program: program.display().to_string(),
            args: Vec::new(),
            preput: Vec::new(),
        };
        let new = must(me, "spawn", world.spawn(0, &request));
        check(me, new == (n..n + 1), || format!("spawned ranks {new:?}"));
    });
    println!("rank {me}: scale ok");
    finalize_measured(world);
}
