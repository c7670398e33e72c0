//! 32 ranks over `tcp`, every rank a host of its own: the protocols send
//! what their crate docs state as a function of p (exact counts from the
//! endpoints' counters), the data they move is right, and a job of that
//! size grows, shrinks and survives a killed worker. Not timed.

use std::collections::HashMap;

use onesided_bench::model::{scale_messages, Count, SCALE_OPS};
use onesided_tests::{serial, Osrun};

/// ceil(log2 n).
fn log2(n: u32) -> u64 {
    u64::from(32 - (n - 1).leading_zeros())
}

/// One `op` line of `scale-check`: its name and its numeric fields.
struct Line {
    op: String,
    fields: HashMap<String, u64>,
}

fn lines(stdout: &str) -> Vec<Line> {
    (stdout.lines())
        .filter_map(|l| l.strip_prefix("op "))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let fields = (words[1..].chunks(2))
                .filter_map(|kv| Some((kv[0].to_string(), kv.get(1)?.parse::<f64>().ok()? as u64)))
                .collect();
            Line {
                op: words[0].to_string(),
                fields,
            }
        })
        .collect()
}

/// The largest `field` of operation `op` over the ranks, and how many
/// ranks reported it.
fn max_of(lines: &[Line], op: &str, field: &str) -> (u64, usize) {
    let of: Vec<u64> = (lines.iter())
        .filter(|l| l.op == op)
        .map(|l| l.fields[field])
        .collect();
    (of.iter().copied().max().unwrap_or(0), of.len())
}

/// The messages each rank had sent before it finalized (`total
/// before_finalize rank R messages M ...`), by rank.
fn lines_before(stdout: &str) -> HashMap<u64, u64> {
    (stdout.lines())
        .filter_map(|l| l.strip_prefix("total before_finalize "))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let field = |k: &str| {
                (words.chunks(2))
                    .find(|kv| kv[0] == k)
                    .and_then(|kv| kv.get(1)?.parse().ok())
            };
            Some((field("rank")?, field("messages")?))
        })
        .collect()
}

#[test]
fn protocols_send_what_they_state_in_p_at_32_ranks() {
    let _serial = serial();
    let mut memory = Vec::new();
    for n in [2u32, 8, 32] {
        let out = Osrun::new(n, "tcp", "scale-check")
            .host_per_rank(true)
            .env("ONESIDED_STATS", "1")
            .run();
        out.assert_success();
        assert_eq!(out.count("scale ok"), n as usize, "{out}");
        let lines = lines(&out.stdout);
        let log = log2(n);
        let messages = |op: &str| {
            let (max, ranks) = max_of(&lines, op, "messages");
            assert_eq!(ranks, n as usize, "{op}: a line per rank\n{out}");
            max
        };
        // Every operation the model counts (onesided-model), exactly
        // where the design states an exact count, else within its bound.
        for op in SCALE_OPS
            .iter()
            .filter(|op| !["join_init", "finalize_after_growth"].contains(op))
        {
            let want = scale_messages(op, n).expect("the model counts it");
            let got = messages(op);
            assert!(
                want.admits(got),
                "{op} at {n}: {got} messages, the model says {want:?}"
            );
        }
        // Start: the allgather's rounds; partners' keys only.
        assert_eq!(messages("init"), log, "init");
        assert!(
            max_of(&lines, "init", "pmi").0 <= 2 * log + 8,
            "init PMI requests"
        );
        // Windows: at most 4 description pushes and the release barrier.
        for op in ["window_create_free", "allocate_free"] {
            let m = messages(op);
            assert!(m >= log && m <= 2 * log + 4, "{op} at {n}: {m}");
        }
        assert!(messages("window_first_over_exposure") <= 4);
        assert_eq!(messages("window_recreate_free"), 0, "re-create");
        // attach and detach push to at most 4 members each.
        assert!(messages("dynamic_attach_detach") <= log + 16);
        // Epochs: lock words are atomics, not messages.
        assert_eq!(messages("lock_all_get_unlock_all"), 0);
        assert_eq!(messages("lock_exclusive_contended"), 0);
        // Barriers and a small allreduce: ceil(log2 p) rounds.
        assert_eq!(messages("ibarrier"), log);
        for op in ["barrier", "allreduce_8"] {
            assert!(messages(op) <= log + 1, "{op} at {n}");
        }
        // The reducer idle for a second: a ping per 100 ms to the ring
        // successor, whatever p (the master used to ping every worker).
        let idle = messages("reducer_idle_1s");
        assert!(idle <= 12, "idle reducer at {n}: {idle}\n{out}");
        // A reduction: O(p) messages at the master, O(log p) per worker.
        let (master, workers) = lines
            .iter()
            .filter(|l| l.op == "reduce_1mib")
            .partition::<Vec<&Line>, _>(|l| l.fields["rank"] == 0);
        assert!(
            master[0].fields["messages"] <= 4 * u64::from(n),
            "reduce at the master, {n}"
        );
        for w in workers {
            assert!(
                w.fields["messages"] <= 6 * log + 8,
                "reduce at a worker, {n}"
            );
        }
        // With every service served (the reducer's too).
        memory.push(max_of(&lines, "reducer_idle_1s", "receive_memory").0);
        // A growth by one: down the tree and back up, ceil(log2 p) + 1
        // at most per old process (the root also welcomes the new one);
        // the new process tells the root only.
        assert!(messages("spawn_join_1") <= log + 1, "spawn at {n}\n{out}");
        assert_eq!(max_of(&lines, "join_init", "messages"), (1, 1), "join");
        assert_eq!(scale_messages("join_init", n), Some(Count::Exact(1)));
        // finalize after the growth: ceil(log2 (p + 1)) notices each, the
        // counters at exit minus those before.
        let exit = out.stats();
        assert_eq!(exit.len(), n as usize + 1, "counters at exit\n{out}");
        for (rank, at_exit) in exit.iter().enumerate() {
            let before = (lines_before(&out.stdout).get(&(rank as u64)).copied())
                .unwrap_or_else(|| panic!("rank {rank}: no counters before finalize\n{out}"));
            let sent = at_exit.get("messages") - before;
            let want = scale_messages("finalize_after_growth", n).expect("counted");
            assert!(
                want.admits(sent),
                "finalize at rank {rank} of {}: {sent}",
                n + 1
            );
        }
    }
    assert!(
        memory.iter().all(|&m| m == memory[0]),
        "standing receives hold the same memory at 2, 8 and 32: {memory:?}"
    );
}

#[test]
fn a_32_rank_job_grows_shrinks_and_survives_a_killed_worker() {
    let _serial = serial();
    for method in ["col", "rma_lock_all"] {
        let out = Osrun::new(32, "tcp", "mam-check")
            .host_per_rank(true)
            .args(&[method, "33", "32"])
            .run();
        out.assert_success();
        assert_eq!(out.count("mam ok"), 32, "{method}: {out}");
    }
    let dir = std::env::temp_dir().join(format!("onesided-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("replica directory");
    let out = Osrun::new(32, "tcp", "reduce-check")
        .host_per_rank(true)
        .ft()
        .args(&["die", "task", "1000"])
        .env("ONESIDED_REDUCE_DIR", dir.to_str().expect("utf-8 path"))
        .run();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.code(), 128 + 9, "rank 1 was killed: {out}");
    assert_eq!(out.count("reduce ok"), 31, "{out}");
}
