//! The rank program of the collectives integration tests:
//! `coll-check`. Runs every collective over the whole job and over a
//! sub-group, blocking and nonblocking, small and large (so that the
//! defaults pick different algorithms; `ONESIDED_PROFILE` picks others),
//! with uneven and zero counts, and checks every element against what the
//! rank can compute itself; then agrees on what monitoring measured and
//! runs them again. Prints `rank R: collectives ok (ALGORITHMS)` (those
//! the whole job's calls chose) and, on odd ranks, `rank R: odd ranks ok
//! (ALGORITHMS)` for the sub-group.
//! `coll-check every` first forces every algorithm of every collective in
//! turn.

#![forbid(unsafe_code)]

use std::process::exit;

use onesided_collectives::algorithm::{Allgather, Alltoall, Bcast};
use onesided_collectives::{Algorithm, Builtin, Collective, Comm, Op};
use onesided_fabric::World;
use onesided_rma::{Group, Request};
use onesided_tests::rank::{check, die_when_told, must};

/// Element `i` of rank `r`'s contribution.
fn value(r: u32, i: usize) -> i64 {
    (i as i64 * 7 + i64::from(r) * 13) % 101 - 50
}

/// `collective:algorithm` of what `comm` chooses for a call moving
/// `bytes` per rank, a sum of `i64`s when `sums`.
fn chosen(comm: &Comm, collective: Collective, sums: bool, bytes: u64) -> String {
    let me = comm.rank();
    let algorithm = match sums {
        true => comm.algorithm::<i64>(collective, bytes as usize / 8, Some(&Op::SUM)),
        false => comm.algorithm::<u8>(collective, bytes as usize, None),
    };
    let algorithm = must(me, "choose", algorithm);
    format!("{}:{algorithm}", collective.name())
}

/// Rank `me`'s block of a v-collective of `counts`, and every rank's
/// blocks one after the other.
fn blocks(me: u32, counts: &[usize]) -> (Vec<i64>, Vec<i64>) {
    let mine = (0..counts[me as usize]).map(|i| value(me, i)).collect();
    let concat = (0..counts.len() as u32)
        .flat_map(|r| (0..counts[r as usize]).map(move |i| value(r, i)))
        .collect();
    (mine, concat)
}

/// The reductions a run checks: `builtins`, then the non-commutative
/// "first" (keeps its left operand: the result is rank 0's input only when
/// every member combines in rank order), except in a fault run, which
/// removes the rank-ordered algorithms a non-commutative call needs.
fn ops(builtins: &[(&'static str, Builtin)]) -> Vec<(&'static str, Op<i64>)> {
    let mut ops: Vec<_> = builtins
        .iter()
        .map(|&(name, b)| (name, Op::Builtin(b)))
        .collect();
    if std::env::var_os(onesided_collectives::select::FAULT_ENV).is_none() {
        ops.push(("first", Op::user(|_: &mut [i64], _: &[i64]| {}, false)));
    }
    ops
}

/// Checks an allreduce and a reduce (to rank 1, or 0 alone) of `input`
/// with each of `builtins` and "first" (see `ops`) against the serial
/// reference.
fn reductions(comm: &Comm, tag: &str, input: &[i64], builtins: &[(&'static str, Builtin)]) {
    let (me, n, count) = (comm.rank(), comm.group().size(), input.len());
    for (name, op) in ops(builtins) {
        let want = |i: usize| {
            let all = (0..n).map(|r| value(r, i));
            match name {
                "sum" => all.sum::<i64>(),
                "max" => all.max().unwrap_or(0),
                _ => value(0, i),
            }
        };
        let mut out = vec![0i64; count];
        must(me, "allreduce", comm.allreduce(input, &mut out, op.clone()));
        check(
            me,
            out.iter().enumerate().all(|(i, v)| *v == want(i)),
            || format!("{tag} allreduce {name} {count}"),
        );
        let root = (n - 1).min(1);
        let mut out = vec![0i64; if me == root { count } else { 0 }];
        must(me, "reduce", comm.reduce(root, input, &mut out, op.clone()));
        check(
            me,
            out.iter().enumerate().all(|(i, v)| *v == want(i)),
            || format!("{tag} reduce {name} {count}"),
        );
    }
}

fn run(comm: &Comm, tag: &str) -> Vec<String> {
    let (me, n) = (comm.rank(), comm.group().size());
    let mut used = Vec::new();
    must(me, "barrier", comm.barrier());
    // Counts: none, inline in a shared-memory header's first line (3) and
    // reaching into its second (12), a cell, pieces, more than a slot.
    for count in [0usize, 3, 12, 1000, 20_000, 140_000] {
        let bytes = (count * 8) as u64;
        // bcast from every root.
        for root in 0..n {
            let mut buf: Vec<i64> = if me == root {
                (0..count).map(|i| value(root, i)).collect()
            } else {
                vec![0; count]
            };
            must(me, "bcast", comm.bcast(root, &mut buf));
            check(
                me,
                buf.iter().enumerate().all(|(i, v)| *v == value(root, i)),
                || format!("{tag} bcast {count} from {root}"),
            );
        }
        used.push(chosen(comm, Collective::Bcast, false, bytes));
        // reduce and allreduce: sum, max, "first" (see `ops`).
        let input: Vec<i64> = (0..count).map(|i| value(me, i)).collect();
        reductions(
            comm,
            tag,
            &input,
            &[("sum", Builtin::Sum), ("max", Builtin::Max)],
        );
        used.push(chosen(comm, Collective::Allreduce, true, bytes));
        // Nonblocking allreduce, bcast, barrier, reduce (max, to the last
        // rank) and allgatherv (uneven counts) overlapped.
        let mut b = vec![0i64; count.min(5)];
        if me == 0 {
            b.iter_mut().enumerate().for_each(|(i, v)| *v = value(0, i));
        }
        let last = n - 1;
        let counts: Vec<usize> = (0..n).map(|r| count / 7 + r as usize).collect();
        let total: usize = counts.iter().sum();
        let (sum, b, max, all) = {
            let sum_op = Op::SUM;
            let max_op = Op::MAX;
            let handed = (input.clone(), vec![0i64; count]);
            let mut r1 = must(
                me,
                "iallreduce",
                comm.iallreduce(handed.0, handed.1, sum_op.clone()),
            );
            let mut r2 = must(me, "ibcast", comm.ibcast(0, b));
            let mut r3 = must(me, "ibarrier", comm.ibarrier());
            let out = vec![0i64; if me == last { count } else { 0 }];
            let mut r4 = must(
                me,
                "ireduce",
                comm.ireduce(last, input.clone(), out, max_op.clone()),
            );
            let mine = (0..counts[me as usize]).map(|i| value(me, i)).collect();
            let r5 = comm.iallgatherv(mine, vec![0i64; total], &counts);
            let mut r5 = must(me, "iallgatherv", r5);
            // The application computes between tests...
            let mut work = 0u64;
            for i in 0..200u64 {
                work = work.wrapping_add(i * i);
                if i % 50 == 0 {
                    must(me, "test iallreduce", r1.test());
                }
            }
            std::hint::black_box(work);
            // ...then waits on its requests, in an order that differs
            // between ranks: waiting on one advances the others.
            if me % 2 == 0 {
                must(me, &format!("wait iallgatherv {count}"), r5.wait());
                must(me, &format!("wait iallreduce {count}"), r1.wait());
                must(me, &format!("wait ibarrier {count}"), r3.wait());
                must(me, &format!("wait ibcast {count}"), r2.wait());
            } else {
                must(me, &format!("wait ireduce {count}"), r4.wait());
                must(me, &format!("wait ibarrier {count}"), r3.wait());
                must(me, &format!("wait ibcast {count}"), r2.wait());
                must(me, &format!("wait iallreduce {count}"), r1.wait());
            }
            let sum = must(me, "buffers", r1.into_buffers());
            check(me, sum.input == input, || format!("{tag} iallreduce input"));
            (
                sum.output,
                must(me, "buffers", r2.into_buffers()).output,
                must(me, "buffers", r4.into_buffers()).output,
                must(me, "buffers", r5.into_buffers()).output,
            )
        };
        check(
            me,
            max.iter()
                .enumerate()
                .all(|(i, v)| Some(*v) == (0..n).map(|r| value(r, i)).max()),
            || format!("{tag} ireduce {count}"),
        );
        let mut at = 0;
        for (r, &c) in counts.iter().enumerate() {
            let want = (0..c).map(|i| value(r as u32, i));
            check(me, all[at..at + c].iter().copied().eq(want), || {
                format!("{tag} iallgatherv {count} block {r}")
            });
            at += c;
        }
        check(
            me,
            sum.iter()
                .enumerate()
                .all(|(i, v)| *v == (0..n).map(|r| value(r, i)).sum::<i64>()),
            || format!("{tag} iallreduce {count}"),
        );
        check(
            me,
            b.iter().enumerate().all(|(i, v)| *v == value(0, i)),
            || format!("{tag} ibcast"),
        );
        // Blocking calls made with a run in flight (even ranks: through
        // the executor) and without (odd ranks: at once) meet alike.
        let mut c = vec![0i64; count.min(5)];
        if me == 0 {
            c.iter_mut()
                .enumerate()
                .for_each(|(i, v)| *v = value(0, i) + 1);
        }
        let mut small = vec![0i64; count.min(5)];
        let sum_op = Op::SUM;
        let mut pending = must(me, "ibarrier", comm.ibarrier());
        if me % 2 == 1 {
            must(me, "wait", pending.wait());
        }
        must(me, "bcast", comm.bcast(0, &mut c));
        let part = &input[..count.min(5)];
        must(
            me,
            "allreduce",
            comm.allreduce(part, &mut small, sum_op.clone()),
        );
        must(me, "wait", pending.wait());
        check(
            me,
            c.iter().enumerate().all(|(i, v)| *v == value(0, i) + 1)
                && small
                    .iter()
                    .enumerate()
                    .all(|(i, v)| *v == (0..n).map(|r| value(r, i)).sum::<i64>()),
            || format!("{tag} blocking calls with a run in flight"),
        );
    }
    // Large reductions, blocking and nonblocking: 16 MiB per member and a
    // little more (2 members split an allreduce from 4 MiB, a reduce to
    // one root from 16 MiB), not a whole number of chunks.
    let count = (16 << 20) / 8 + 77;
    let input: Vec<i64> = (0..count).map(|i| value(me, i)).collect();
    reductions(comm, tag, &input, &[("sum", Builtin::Sum)]);
    let sum = |i: usize| (0..n).map(|r| value(r, i)).sum::<i64>();
    let sum_op = Op::SUM;
    let pending = must(
        me,
        "iallreduce",
        comm.iallreduce(input, vec![0i64; count], sum_op.clone()),
    );
    let out = must(me, "buffers", pending.into_buffers()).output;
    check(
        me,
        out.iter().enumerate().all(|(i, v)| *v == sum(i)),
        || format!("{tag} iallreduce {count}"),
    );
    // v-collectives with uneven and zero counts.
    let counts: Vec<usize> = (0..n).map(|r| ((r * 3) % 4) as usize).collect();
    let (mine, concat) = blocks(me, &counts);
    let mut all = vec![0i64; concat.len()];
    must(me, "allgatherv", comm.allgatherv(&mine, &mut all, &counts));
    check(me, all == concat, || format!("{tag} allgatherv"));
    // A large allgatherv, uneven: 32 MiB of output or more (shared goes
    // in turns of its blocks there).
    let large: Vec<usize> = (0..n)
        .map(|r| (4_200_000 / n as usize) + r as usize * 1001)
        .collect();
    let block: Vec<i64> = (0..large[me as usize]).map(|i| value(me, i)).collect();
    let mut gathered = vec![0i64; large.iter().sum()];
    must(
        me,
        "allgatherv",
        comm.allgatherv(&block, &mut gathered, &large),
    );
    let mut at = 0;
    for (r, &c) in large.iter().enumerate() {
        check(
            me,
            gathered[at..at + c]
                .iter()
                .enumerate()
                .all(|(i, v)| *v == value(r as u32, i)),
            || format!("{tag} allgatherv large, block {r}"),
        );
        at += c;
    }
    used.push(chosen(
        comm,
        Collective::Allgather,
        false,
        // What the call chooses by: the average block, the same everywhere.
        (concat.len() * 8 / n as usize) as u64,
    ));
    // gatherv and scatterv from every root: small with a zero count, then
    // large (pieces lent where the host allows) with a zero count and
    // without (every block lent whole).
    for (scale, plus) in [(1, 0), (20_000, 0), (20_000, 1)] {
        let counts: Vec<usize> = (0..n as usize)
            .map(|r| (r * 3 % 4 + plus) * scale)
            .collect();
        let (mine, concat) = blocks(me, &counts);
        for root in 0..n {
            let mut gathered = vec![0i64; if me == root { concat.len() } else { 0 }];
            must(
                me,
                "gatherv",
                comm.gatherv(root, &mine, &mut gathered, &counts),
            );
            check(me, me != root || gathered == concat, || {
                format!("{tag} gatherv {counts:?} to {root}")
            });
            let src = if me == root {
                concat.clone()
            } else {
                Vec::new()
            };
            let mut part = vec![0i64; counts[me as usize]];
            must(
                me,
                "scatterv",
                comm.scatterv(root, &src, &mut part, &counts),
            );
            check(me, part == mine, || {
                format!("{tag} scatterv {counts:?} from {root}")
            });
        }
    }
    // alltoallv: rank a sends ((a + b) % 3) * scale elements to b: small
    // (inputs inline beside the counts), middling (in the cell; lent from
    // 64 KiB where the ranks have a core each) and large (lent where the
    // host allows, else in pieces after the first step).
    for scale in [1usize, 2_000, 20_000] {
        let sends: Vec<usize> = (0..n).map(|b| (me + b) as usize % 3 * scale).collect();
        let recvs: Vec<usize> = (0..n).map(|a| (a + me) as usize % 3 * scale).collect();
        let input: Vec<i64> = (0..n)
            .flat_map(|b| (0..sends[b as usize]).map(move |i| value(me, (b as usize) << 20 | i)))
            .collect();
        let mut output = vec![0i64; recvs.iter().sum()];
        must(
            me,
            "alltoallv",
            comm.alltoallv(&input, &sends, &mut output, &recvs),
        );
        let want: Vec<i64> = (0..n)
            .flat_map(|a| (0..recvs[a as usize]).map(move |i| value(a, (me as usize) << 20 | i)))
            .collect();
        check(me, output == want, || format!("{tag} alltoallv x{scale}"));
        // The same, nonblocking, tested between steps of computation.
        let run = comm.ialltoallv(input, &sends, vec![0i64; want.len()], &recvs);
        let mut run = must(me, "ialltoallv", run);
        while !must(me, "test ialltoallv", run.test()) {
            std::hint::black_box((0..1000u64).sum::<u64>());
        }
        let output = must(me, "buffers", run.into_buffers()).output;
        check(me, output == want, || format!("{tag} ialltoallv x{scale}"));
    }
    // alltoall with equal counts (its algorithm chosen by size), small and
    // larger than a shared-memory slot.
    for count in [3usize, 50_000] {
        let input: Vec<i64> = (0..n)
            .flat_map(|b| (0..count).map(move |i| value(me, 10 * b as usize + i)))
            .collect();
        let mut output = vec![0i64; count * n as usize];
        must(me, "alltoall", comm.alltoall(&input, &mut output, count));
        let want: Vec<i64> = (0..n)
            .flat_map(|a| (0..count).map(move |i| value(a, 10 * me as usize + i)))
            .collect();
        check(me, output == want, || format!("{tag} alltoall {count}"));
    }
    used.push(chosen(comm, Collective::Alltoall, false, 24));
    used.push(chosen(comm, Collective::ReduceScatter, true, 8));
    used.push(chosen(comm, Collective::Reduce, true, 8));
    // reduce_scatter of blocks of `counts`, small and large (lent whole
    // where the host allows), rank 0's block empty in the large one; sum
    // and "first" (see `ops`).
    let large: Vec<usize> = (0..n)
        .map(|r| ((r * 3) % 4) as usize * 20_000 + r as usize)
        .collect();
    for counts in [counts, large] {
        let total: usize = counts.iter().sum();
        let input: Vec<i64> = (0..total).map(|i| value(me, i)).collect();
        let at: usize = counts[..me as usize].iter().sum();
        for (name, op) in ops(&[("sum", Builtin::Sum)]) {
            let mut block = vec![0i64; counts[me as usize]];
            must(
                me,
                "reduce_scatter",
                comm.reduce_scatter(&input, &mut block, &counts, op.clone()),
            );
            let want = |i: usize| match name {
                "sum" => (0..n).map(|r| value(r, at + i)).sum::<i64>(),
                _ => value(0, at + i),
            };
            check(
                me,
                block.iter().enumerate().all(|(i, v)| *v == want(i)),
                || format!("{tag} reduce_scatter {name} {total}"),
            );
        }
    }
    must(me, "barrier", comm.barrier());
    used
}

/// `coll-check mismatch` (one host: shared memory): members that pass
/// counts that do not match get an error naming the member that differs,
/// not its stale bytes, and the Comm goes on: a broadcast where the root
/// has 10 elements and the others 20, in shared memory and then with the
/// linear and binomial (message) algorithms forced; one of 8192 and 16384
/// (the root takes 32 steps, the others fail at their first); allreduces
/// where rank 1 has 5 and the others 3, then 300000 and 100000; a large
/// allgatherv whose last member's counts differ (the same total); an
/// alltoallv whose counts only rank 1 finds wrong, by each algorithm
/// ([`alltoallv_mismatch`]); two nonblocking allreduces dropped
/// unfinished everywhere, the later one first; then a right allreduce; a
/// broadcast its root gave up ([`abandoned_bcast`]); and no algorithm
/// counted as failed for any of it. The caller then drops the Comm and
/// finalizes, as a program ends: a rank that exited at once took its
/// memory with it while a peer that had not read it yet still needed it.
fn mismatch(comm: &Comm, truncates: bool) {
    let (me, n) = (comm.rank(), comm.group().size());
    let mut buf = vec![7i64; if me == 0 { 10 } else { 20 }];
    // A binomial broadcast's relays (from 4 ranks) forward nothing once
    // they got too little, so their children fail too, naming them.
    for (algorithm, name, says) in [
        (None, "bcast", "group rank 0 passed 80 bytes"),
        (
            Some(Bcast::Linear),
            "linear bcast",
            "group rank 0 sent 80 bytes",
        ),
        (
            Some(Bcast::Binomial),
            "binomial bcast",
            "bytes where this member expects 160",
        ),
    ] {
        match algorithm {
            Some(a) => comm.force(a),
            None => comm.unforce(Collective::Bcast),
        }
        match comm.bcast(0, &mut buf) {
            Ok(()) => check(me, me == 0, || format!("a mismatched {name} succeeded")),
            Err(e) => {
                let text = e.to_string();
                check(me, text.contains(says), || format!("{name}: {text}"));
                println!("rank {me}: {name} mismatch: {text}");
            }
        }
    }
    // Too much fails as too little does, a caller's mistake, not the
    // algorithm's, through pooled buffers (small) and for messages that
    // land straight in the members' buffers (large); a right call follows.
    // Too much only where the provider gets over it (`truncates`).
    comm.force(Bcast::Linear);
    let too_much = (
        16384,
        8192,
        "sent more than the 65536 bytes this member expects",
    );
    let too_little = (
        8192,
        16384,
        "sent 65536 bytes where this member expects 131072",
    );
    let too_much_small = (20, 10, "sent more than the 80 bytes this member expects");
    let cases = [
        Some(too_little),
        truncates.then_some(too_much),
        truncates.then_some(too_much_small),
    ];
    for (root, others, says) in cases.into_iter().flatten() {
        let mut big = vec![7i64; if me == 0 { root } else { others }];
        match comm.bcast(0, &mut big) {
            Ok(()) => check(me, me == 0, || "a mismatched linear bcast succeeded".into()),
            Err(e) => {
                let text = e.to_string();
                check(me, text.contains(says), || format!("linear bcast: {text}"));
                println!("rank {me}: linear bcast {root}/{others} mismatch: {text}");
            }
        }
    }
    let mut big = vec![i64::from(me); 16384];
    must(me, "bcast", comm.bcast(0, &mut big));
    check(me, big.iter().all(|v| *v == 0), || {
        "bcast after a direct mismatch".into()
    });
    comm.unforce(Collective::Bcast);
    // Larger: the root's call takes 32 steps, the others' would take 64
    // (they fail at the first); the calls after meet again.
    let mut large = vec![7i64; if me == 0 { 8192 } else { 16384 }];
    match comm.bcast(0, &mut large) {
        Ok(()) => check(me, me == 0, || "a mismatched large bcast succeeded".into()),
        Err(e) => {
            let text = e.to_string();
            let says = "group rank 0 passed 65536 bytes";
            check(me, text.contains(says), || format!("large bcast: {text}"));
            println!("rank {me}: large bcast mismatch: {text}");
        }
    }
    let sum = Op::SUM;
    for (what, small, large) in [("allreduce", 3, 5), ("large allreduce", 100_000, 300_000)] {
        let input = vec![1i64; if me == 1 { large } else { small }];
        let mut out = vec![0i64; input.len()];
        match comm.allreduce(&input, &mut out, sum.clone()) {
            Ok(()) => check(me, false, || format!("a mismatched {what} succeeded")),
            Err(e) => {
                let text = e.to_string();
                let differs = if me == 1 {
                    format!("passed {} bytes", small * 8)
                } else {
                    format!("group rank 1 passed {}", large * 8)
                };
                check(me, text.contains(&differs), || format!("{what}: {text}"));
                println!("rank {me}: {what} mismatch: {text}");
            }
        }
    }
    // A large allgatherv (32 MiB of output or more: shared memory writes
    // each block into the peers' outputs) where the last member's counts
    // differ but add up to the same total: every member fails before
    // writing anything, and a right one follows.
    comm.force(Allgather::Shared);
    let even = 4_200_000 / n as usize;
    let mut counts = vec![even; n as usize];
    if me == n - 1 {
        counts[0] += 1000;
        counts[me as usize] -= 1000;
    }
    let (mine, concat) = blocks(me, &counts);
    let mut all = vec![0i64; concat.len()];
    match comm.allgatherv(&mine, &mut all, &counts) {
        Ok(()) => check(me, false, || {
            "a mismatched large allgatherv succeeded".into()
        }),
        Err(e) => {
            let text = e.to_string();
            let differs = if me == n - 1 {
                format!("group rank 0 passed {}", even * 8)
            } else {
                format!("group rank {} passed {}", n - 1, (even - 1000) * 8)
            };
            check(me, text.contains(&differs), || {
                format!("large allgatherv: {text}")
            });
            println!("rank {me}: large allgatherv mismatch: {text}");
        }
    }
    let counts = vec![even; n as usize];
    let (mine, concat) = blocks(me, &counts);
    must(me, "allgatherv", comm.allgatherv(&mine, &mut all, &counts));
    check(me, all == concat, || "allgatherv after a mismatch".into());
    comm.unforce(Collective::Allgather);
    alltoallv_mismatch(comm);
    // Nonblocking calls dropped unfinished on every member, the later
    // one first: the calls after them go on.
    let start = |len: usize| comm.iallreduce(vec![1i64; len], vec![0; len], sum.clone());
    let first = must(me, "iallreduce", start(200_000));
    let second = must(me, "iallreduce", start(300_000));
    drop(second);
    drop(first);
    let mut total = [0i64];
    must(
        me,
        "allreduce",
        comm.allreduce(&[1i64], &mut total, sum.clone()),
    );
    check(me, total[0] == i64::from(n), || format!("after: {total:?}"));
    abandoned_bcast(comm);
    // The caller's mistakes are not the algorithms' failures.
    let failed: Vec<String> = (comm.observed().failures())
        .map(|a| format!("{} {a}", a.collective().name()))
        .collect();
    check(me, failed.is_empty(), || {
        format!("failed algorithms: {failed:?}")
    });
    println!("rank {me}: mismatch ok");
}

/// A broadcast its root gave up before publishing (a nonblocking call
/// dropped while its barrier was in flight), then eight broadcasts of
/// the same size, which the root publishes without waiting for its
/// readers: the eighth goes in the cell of the one given up. The readers'
/// call fails naming the root, instead of returning the eighth's data as
/// its own; each later broadcast brings its own value.
fn abandoned_bcast(comm: &Comm) {
    let me = comm.rank();
    if me != 0 {
        // The root's barrier cannot end before the readers start theirs,
        // so its broadcast waits its turn and is dropped unpublished.
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let first = must(me, "ibarrier", comm.ibarrier());
    let value = |v: i64| vec![if me == 0 { v } else { 0 }; 8];
    let dropped = must(me, "ibcast", comm.ibcast(0, value(2)));
    if me == 0 {
        drop(dropped);
        must(me, "ibarrier", first.into_buffers());
    } else {
        must(me, "ibarrier", first.into_buffers());
        match dropped.into_buffers() {
            Ok(b) => check(me, false, || {
                format!("a broadcast its root gave up brought {:?}", b.output)
            }),
            Err(e) => {
                let text = e.to_string();
                check(me, text.contains("group rank 0 gave the call up"), || {
                    format!("abandoned ibcast: {text}")
                });
                println!("rank {me}: abandoned bcast: {text}");
            }
        }
    }
    for v in 3..11i64 {
        let mut buf = value(v);
        must(me, "bcast", comm.bcast(0, &mut buf));
        check(me, buf == [v; 8], || format!("bcast {v} after: {buf:?}"));
    }
}

/// An alltoallv where rank 1 expects more elements from rank 0 than rank
/// 0 sends (800 KB per pair: in shared memory every input is lent beside
/// its counts), by each algorithm: rank 1 fails naming rank 0 and
/// overwrites its input at once, as its caller may; the others must still
/// get what rank 1 sent, in time; a right alltoallv follows. (Expecting
/// fewer would be a truncation, which the providers do not all report:
/// see the `run` module of onesided-collectives.)
fn alltoallv_mismatch(comm: &Comm) {
    const PER: usize = 100_000;
    let (me, n) = (comm.rank(), comm.group().size() as usize);
    if n < 2 {
        return;
    }
    let sends = vec![PER; n];
    let want = |r: usize, i: usize| value(r as u32, me as usize * PER + i);
    let mut recvs = sends.clone();
    if me == 1 {
        recvs[0] += 1000;
    }
    for algorithm in [
        Alltoall::Shared,
        Alltoall::OneSided,
        Alltoall::Pairwise,
        Alltoall::Linear,
    ] {
        let algorithm = Algorithm::from(algorithm);
        comm.force(algorithm);
        let mut input: Vec<i64> = (0..n * PER).map(|i| value(me, i)).collect();
        let mut short = vec![0i64; recvs.iter().sum()];
        match comm.alltoallv(&input, &sends, &mut short, &recvs) {
            Ok(()) => check(me, me != 1, || {
                format!("a mismatched {algorithm} alltoallv succeeded")
            }),
            Err(e) => {
                input.fill(i64::MIN);
                let text = e.to_string();
                check(me, me == 1 && text.contains("group rank 0"), || {
                    format!("{algorithm} alltoallv: {text}")
                });
                println!("rank {me}: {algorithm} alltoallv mismatch: {text}");
            }
        }
        if me != 1 {
            let from1 = &short[PER..2 * PER];
            check(
                me,
                from1.iter().enumerate().all(|(i, v)| *v == want(1, i)),
                || format!("{algorithm}: what rank 1 sent beside the counts it failed on"),
            );
        }
        let input: Vec<i64> = (0..n * PER).map(|i| value(me, i)).collect();
        let mut output = vec![0i64; n * PER];
        must(
            me,
            "alltoallv",
            comm.alltoallv(&input, &sends, &mut output, &sends),
        );
        let right = (0..n * PER).all(|k| output[k] == want(k / PER, k % PER));
        check(me, right, || {
            format!("{algorithm} alltoallv after a mismatch")
        });
    }
    comm.unforce(Collective::Alltoall);
}

/// `coll-check victim` (under `osrun --ft`): rank 1 dies when rank 0
/// tells it; the others' next collectives fail with an error naming it
/// (within the endpoint's timeout at worst) instead of hanging.
fn victim(comm: &Comm, ep: &onesided_fabric::Endpoint) -> ! {
    const GO: u64 = 41;
    let me = comm.rank();
    must(me, "barrier", comm.barrier());
    match me {
        1 => die_when_told(me, ep, 0, GO),
        0 => must(me, "go", ep.send(1, GO, &[])),
        _ => {}
    }
    let start = std::time::Instant::now();
    let sum = Op::SUM;
    let error = loop {
        let mut out = [0i64; 4];
        if let Err(e) = comm.allreduce(&[1i64; 4], &mut out, sum.clone()) {
            break e;
        }
    };
    let text = error.to_string();
    check(me, text.contains("rank 1"), || {
        format!("the error does not name rank 1: {text}")
    });
    println!(
        "rank {me}: got an error naming rank 1 after {} ms: {text}",
        start.elapsed().as_millis()
    );
    exit(0)
}

fn main() {
    let world = World::init().unwrap_or_else(|e| {
        eprintln!("coll-check: {e}");
        exit(1)
    });
    let (me, n) = (world.rank(), world.size());
    println!("pid {me} {}", std::process::id());
    let ep = world.endpoint();
    let rma = must(me, "rma", onesided_rma::Rma::new(ep));
    let comm = must(me, "comm", Comm::new(&rma, Group::world(n)));
    match std::env::args().nth(1).as_deref() {
        Some("victim") => victim(&comm, ep),
        Some("mismatch") => {
            // libfabric before 1.19 does not get over a truncated receive:
            // its shm never completes a large one, and its tcp;ofi_rxm
            // loses the next large message after a small one.
            let (version, _) = onesided_fabric::libfabric_loaded();
            let version: Vec<u32> = (version.split('.'))
                .map(|p| p.parse().unwrap_or(0))
                .collect();
            mismatch(&comm, version >= vec![1, 19]);
            drop(comm);
            drop(rma);
            return finalize(world);
        }
        _ => {}
    }
    let mut used = Vec::new();
    if std::env::args().nth(1).as_deref() == Some("every") {
        // Every algorithm of every collective, forced in turn.
        let most = Collective::ALL
            .iter()
            .map(|c| Algorithm::all(*c).len())
            .max()
            .unwrap_or(0);
        for i in 0..most {
            for c in Collective::ALL {
                let algs = Algorithm::all(c);
                let a = algs[i % algs.len()];
                // Shared memory needs every rank on one host.
                let g = comm.geometry();
                if !a.is_shared() || g.ranks_per_host == g.ranks {
                    comm.force(a);
                } else {
                    comm.unforce(c);
                }
            }
            used.extend(run(&comm, "forced"));
        }
        for c in Collective::ALL {
            comm.unforce(c);
        }
    }
    used.extend(run(&comm, "world"));
    // Agreement on what monitoring measured: the ranks' choices change
    // together (rank 0's measurements), and the calls stay right.
    must(me, "agree", comm.agree());
    used.extend(run(&comm, "agreed"));
    // A second Comm over the same group: its messages never mix with the
    // first's, even with calls of both in flight at once.
    let twin = must(me, "comm", Comm::new(&rma, Group::world(n)));
    {
        let (x, y): (Vec<i64>, Vec<i64>) = (
            (0..9).map(|i| value(me, i)).collect(),
            (0..9).map(|i| -value(me, i)).collect(),
        );
        let sum = Op::SUM;
        let (a, b) = {
            let ra = must(
                me,
                "iallreduce",
                comm.iallreduce(x, vec![0; 9], sum.clone()),
            );
            let rb = must(
                me,
                "iallreduce",
                twin.iallreduce(y, vec![0; 9], sum.clone()),
            );
            let mut both = [ra, rb];
            must(me, "wait_all", onesided_rma::wait_all(&mut both));
            let [ra, rb] = both;
            let a = must(me, "buffers", ra.into_buffers()).output;
            (a, must(me, "buffers", rb.into_buffers()).output)
        };
        let want: Vec<i64> = (0..9).map(|i| (0..n).map(|r| value(r, i)).sum()).collect();
        check(
            me,
            a == want && b.iter().zip(&want).all(|(b, w)| *b == -w),
            || format!("twin comms: {a:?} {b:?}"),
        );
    }
    // A sub-group of the odd ranks, in reverse order (its own numbering).
    let odd: Vec<u32> = (0..n).filter(|r| r % 2 == 1).rev().collect();
    if !odd.is_empty() {
        let group = must(me, "group", Group::new(odd));
        if group.contains(me) {
            let sub = must(me, "comm", Comm::new(&rma, group));
            let mut odd = run(&sub, "odd");
            odd.sort_unstable();
            odd.dedup();
            println!("rank {me}: odd ranks ok ({})", odd.join(" "));
        }
    }
    used.sort_unstable();
    used.dedup();
    println!("rank {me}: collectives ok ({})", used.join(" "));
    drop((twin, comm));
    drop(rma);
    finalize(world);
}

/// Finalizes `world` (after every rank's Comms and windows are dropped);
/// exits 1 when that fails.
fn finalize(world: World) {
    if let Err(e) = world.finalize() {
        eprintln!("coll-check: finalize: {e}");
        exit(1);
    }
}
