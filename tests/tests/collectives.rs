//! Multi-process tests of onesided-collectives over real providers
//! (`coll-check`): every collective, blocking and nonblocking, world and a
//! sub-group, with the built-in defaults, with a profile that picks the
//! other algorithms, and with a malformed profile (one warning, defaults).

use onesided_tests::{serial, Osrun};

fn expect_ok(n: u32, provider: &str, env: &[(&str, &str)]) -> String {
    let mut run = Osrun::new(n, provider, "coll-check");
    for (k, v) in env {
        run = run.env(k, v);
    }
    let out = run.run();
    out.assert_success();
    assert_eq!(
        out.count("collectives ok"),
        n as usize,
        "{provider} n {n}: {out}"
    );
    // Every rank chose the same algorithms.
    let mut chosen = out
        .stdout
        .lines()
        .filter_map(|l| l.split_once("collectives ok ").map(|(_, a)| a));
    let first = chosen.next().unwrap_or_default();
    assert!(chosen.all(|a| a == first), "choices differ: {out}");
    out.to_string()
}

/// Asserts that the ranks' output names every one of `algorithms`.
fn assert_used(out: &onesided_tests::Outcome, algorithms: &[&str]) {
    for a in algorithms {
        assert!(out.stdout.contains(a), "{a} not used: {out}");
    }
}

#[test]
fn every_collective_is_right_with_the_defaults() {
    let _serial = serial();
    // One host: blocking calls go through shared memory.
    for (provider, n) in [("shm", 1), ("shm", 3), ("shm", 4), ("tcp", 3)] {
        let out = expect_ok(n, provider, &[]);
        assert!(out.contains("allreduce:shared"), "{out}");
    }
    // Without cross-memory reads: every piece through shared memory.
    let out = expect_ok(4, "shm", &[("ONESIDED_CMA", "off")]);
    assert!(out.contains("alltoall:shared"), "{out}");
    // A host per rank: the defaults by size.
    let out = expect_ok(3, "tcp", &[("ONESIDED_HOST", "node{rank}")]);
    assert!(
        out.contains("allreduce:recursive_doubling") && out.contains("allreduce:ring"),
        "{out}"
    );
    assert!(!out.contains("collectives ok (allgather:shared"), "{out}");
}

#[test]
fn every_algorithm_is_right_over_the_fabric() {
    let _serial = serial();
    for (provider, n, hosts) in [("shm", 3, false), ("shm", 4, false), ("tcp", 3, true)] {
        let mut run = Osrun::new(n, provider, "coll-check").arg("every");
        // Every rank its own host: the one-sided algorithm's windows
        // go through the provider.
        run = run.host_per_rank(hosts);
        let out = run.run();
        out.assert_success();
        assert_eq!(
            out.count("collectives ok"),
            n as usize,
            "{provider} n {n}: {out}"
        );
        assert_used(
            &out,
            &[
                "bruck",
                "linear",
                "pairwise",
                "scatter_allgather",
                "ring",
                "binomial",
                "alltoall:onesided",
                "alltoall:bruck",
                "bcast:scatter_doubling",
                "reduce_scatter:recursive_halving",
            ],
        );
    }
}

#[test]
fn a_profile_picks_the_other_algorithms() {
    let _serial = serial();
    let file = std::env::temp_dir().join(format!("onesided-force-{}.profile", std::process::id()));
    // Entries for the two geometries the jobs run at (a profile applies
    // where it measured; elsewhere the cost model chooses).
    let mut text = String::from("onesided-profile 1\n");
    for n in [4, 3] {
        text += &format!(
            "bcast linear {n} {n} bytes 8 0.1
reduce linear {n} {n} i64 8 0.1
allreduce ring {n} {n} i64 8 0.1
allgather bruck {n} {n} bytes 8 0.1
alltoall pairwise {n} {n} bytes 8 0.1
reduce_scatter ring {n} {n} i64 8 0.1
"
        );
    }
    std::fs::write(&file, text).unwrap();
    let path = file.to_string_lossy().into_owned();
    for (provider, n) in [("shm", 4), ("tcp", 3)] {
        let out = expect_ok(n, provider, &[("ONESIDED_PROFILE", &path)]);
        assert!(out.contains("bruck") && out.contains("linear"), "{out}");
    }
    std::fs::remove_file(&file).unwrap();
}

#[test]
fn a_malformed_profile_warns_once_per_process_and_the_defaults_run() {
    let _serial = serial();
    let file = std::env::temp_dir().join(format!("onesided-bad-{}.profile", std::process::id()));
    std::fs::write(&file, "onesided-profile 1\nbcast linear 4\n").unwrap();
    let out = Osrun::new(2, "shm", "coll-check")
        .env("ONESIDED_PROFILE", &file.to_string_lossy())
        .run();
    out.assert_success();
    assert_eq!(out.count("collectives ok"), 2, "{out}");
    assert_eq!(
        out.stderr.matches("line 2: expected 7 fields").count(),
        2,
        "one warning per process: {out}"
    );
    std::fs::remove_file(&file).unwrap();
}

#[test]
fn onesided_tune_writes_a_profile_the_library_uses() {
    let _serial = serial();
    let file = std::env::temp_dir().join(format!("onesided-tuned-{}.profile", std::process::id()));
    let mut tune = std::process::Command::new(onesided_tests::binary("onesided-tune"));
    tune.args([
        "--np",
        "3",
        "--provider",
        "shm",
        "--scale",
        "0.05",
        "--max-bytes",
        "4096",
        "--check",
        "--out",
    ])
    .arg(&file);
    let out = onesided_tests::run(tune, std::time::Duration::from_secs(120));
    out.assert_success();
    // The check job ran with the profile and reported every point.
    out.assert_stdout_has("the tuned choice is within 5% of the best at");
    assert!(
        out.stdout.contains("allreduce") && out.stdout.contains("tuned_choice"),
        "{out}"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let profile = onesided_collectives::Profile::parse(&text, "tuned").unwrap();
    // Every algorithm of every collective was measured.
    for c in onesided_collectives::Collective::ALL {
        for a in onesided_collectives::Algorithm::all(c) {
            assert!(
                profile
                    .entries()
                    .iter()
                    .any(|e| e.collective == c && e.algorithm == a.name()),
                "{c:?} {a} missing"
            );
        }
    }
    let used = expect_ok(3, "shm", &[("ONESIDED_PROFILE", &file.to_string_lossy())]);
    assert!(!used.contains("warning"), "{used}");
    std::fs::remove_file(&file).unwrap();
}

#[test]
fn onesided_tune_nolocal_profiles_a_rank_per_host() {
    let _serial = serial();
    let file =
        std::env::temp_dir().join(format!("onesided-nolocal-{}.profile", std::process::id()));
    let mut tune = std::process::Command::new(onesided_tests::binary("onesided-tune"));
    tune.args(["--np", "2", "--provider", "tcp", "--nolocal"])
        .args(["--scale", "0.05", "--max-bytes", "512", "--out"])
        .arg(&file);
    let out = onesided_tests::run(tune, std::time::Duration::from_secs(120));
    out.assert_success();
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    let profile = onesided_collectives::Profile::parse(&text, "tuned").unwrap();
    assert!(!profile.entries().is_empty(), "{text}");
    for e in profile.entries() {
        assert_eq!(e.geometry.ranks_per_host, 1, "{text}");
        // Shared memory runs only when every member is on one host.
        assert_ne!(e.algorithm, "shared", "{text}");
    }
}

#[test]
fn calls_complete_with_the_next_best_when_an_algorithm_fails() {
    let _serial = serial();
    // The defaults' choices fail on every rank: each call falls back to
    // the next algorithm, which is never the failed one again.
    let faults = "bcast:shared,bcast:binomial,allreduce:shared,allreduce:recursive_doubling,\
                  allgather:shared,allgather:recursive_doubling,alltoall:shared,\
                  alltoall:pairwise,alltoall:nonesuch,reduce:shared,reduce:binomial,\
                  reduce_scatter:shared,reduce_scatter:pairwise";
    for (provider, n) in [("shm", 3), ("tcp", 2)] {
        let out = Osrun::new(n, provider, "coll-check")
            .env("ONESIDED_FAULT", faults)
            .run();
        out.assert_success();
        assert_eq!(out.count("collectives ok"), n as usize, "{out}");
        for failed in faults.split(',') {
            assert!(!out.stdout.contains(failed), "{failed} chosen: {out}");
        }
        // Each collective ran with an algorithm left (the cost model's
        // cheapest of them).
        for c in [
            "bcast",
            "allreduce",
            "allgather",
            "alltoall",
            "reduce",
            "reduce_scatter",
        ] {
            let collective = onesided_collectives::Collective::from_name(c).unwrap();
            let left = onesided_collectives::Algorithm::all(collective)
                .iter()
                .map(|a| format!("{c}:{}", a.name()))
                .filter(|name| !faults.split(',').any(|f| f == name));
            let used: Vec<String> = left
                .filter(|name| out.stdout.contains(name.as_str()))
                .collect();
            assert!(!used.is_empty(), "{c}: no algorithm left ran: {out}");
        }
    }
}

#[test]
fn a_dead_rank_fails_the_collectives_naming_it() {
    let _serial = serial();
    // Shared memory (one host) and messages (a host per rank).
    for (provider, one_host) in [("shm", true), ("tcp", false)] {
        let mut run = Osrun::new(3, provider, "coll-check").ft().arg("victim");
        run = run.host_per_rank(!one_host);
        let out = run.run();
        assert_eq!(out.code(), 128 + 9, "{out}");
        for r in [0, 2] {
            out.assert_stdout_has(&format!("rank {r}: got an error naming rank 1"));
        }
    }
}

/// 3 ranks, and 4, where a binomial broadcast relays.
#[test]
fn counts_that_do_not_match_give_an_error_naming_the_member() {
    let _serial = serial();
    for n in [3, 4] {
        let out = Osrun::new(n, "shm", "coll-check").arg("mismatch").run();
        out.assert_success();
        for r in 1..n {
            out.assert_stdout_has(&format!("rank {r}: bcast mismatch: "));
            out.assert_stdout_has(&format!("rank {r}: linear bcast mismatch: "));
            out.assert_stdout_has(&format!("rank {r}: binomial bcast mismatch: "));
            out.assert_stdout_has(&format!("rank {r}: large bcast mismatch: "));
            out.assert_stdout_has(&format!("rank {r}: abandoned bcast: "));
        }
        for r in 0..n {
            out.assert_stdout_has(&format!("rank {r}: allreduce mismatch: "));
            out.assert_stdout_has(&format!("rank {r}: large allreduce mismatch: "));
            out.assert_stdout_has(&format!("rank {r}: large allgatherv mismatch: "));
            out.assert_stdout_has(&format!("rank {r}: mismatch ok"));
        }
        // Only the member that receives fewer elements than it expects
        // fails, whatever the algorithm.
        for algorithm in ["shared", "onesided", "pairwise", "linear"] {
            out.assert_stdout_has(&format!("rank 1: {algorithm} alltoallv mismatch: "));
        }
    }
}
