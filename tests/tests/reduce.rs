//! Multi-process tests of onesided-reduce under `osrun`, on shm and tcp:
//! results equal a serial reduction for 1 to 7 ranks, every root, one
//! and eight reductions at once, built-in and user-defined bodies; a
//! worker that fails at each of the spec's failure points (killed, or
//! stopped) is recovered, across hosts from its replica; replicas are private and gone afterwards; an
//! unwritable replica directory is one clear error.

use std::path::PathBuf;

use onesided_tests::{alive, serial, shm_files_of, Osrun, Outcome};

/// A fresh replica directory for one run.
fn replica_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "onesided-reduce-test-{}-{what}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("replica dir");
    dir
}

/// Nothing of the job is left: processes, shared memory, replicas.
fn assert_clean(out: &Outcome, what: &str, dir: &PathBuf) {
    for &pid in &out.pids {
        assert!(!alive(pid), "{what}: process {pid} outlived the job");
        assert!(shm_files_of(pid).is_empty(), "{what}: files of {pid} left");
    }
    let left: Vec<_> = walk(dir);
    assert!(left.is_empty(), "{what}: replicas left: {left:?}");
    std::fs::remove_dir_all(dir).expect("remove the replica dir");
}

/// The files under `dir`.
fn walk(dir: &PathBuf) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        match e.path().is_dir() {
            true => files.extend(walk(&e.path())),
            false => files.push(e.path()),
        }
    }
    files
}

#[test]
fn results_equal_a_serial_reduction_for_every_root() {
    let _serial = serial();
    for (provider, most) in [("shm", 7), ("tcp", 4)] {
        for n in 1..=most {
            let what = format!("{provider} {n} ranks");
            let dir = replica_dir(&format!("{provider}-{n}"));
            let out = Osrun::new(n, provider, "reduce-check")
                .args(&["results", "1000"])
                .env("ONESIDED_REDUCE_DIR", dir.to_str().unwrap())
                .run();
            out.assert_success();
            assert_eq!(out.count("reduce ok"), n as usize, "{what}: {out}");
            assert_clean(&out, &what, &dir);
        }
    }
}

#[test]
fn a_worker_failing_at_each_failure_point_is_recovered() {
    let _serial = serial();
    for provider in ["shm", "tcp"] {
        for point in [
            "returned", "assigned", "task", "fetched", "provided", "hang",
        ] {
            let what = format!("{provider} rank 1 failing at {point}");
            let dir = replica_dir(&format!("{provider}-{point}"));
            let out = Osrun::new(3, provider, "reduce-check")
                .ft()
                .args(&["die", point, "1000"])
                .env("ONESIDED_REDUCE_DIR", dir.to_str().unwrap())
                .run();
            assert_eq!(out.code(), 128 + 9, "{what}: {out}");
            for r in [0, 2] {
                out.assert_stdout_has(&format!("rank {r}: reduce ok"));
            }
            assert_clean(&out, &what, &dir);
        }
    }
}

#[test]
fn across_hosts_a_dead_worker_is_recovered_from_its_replica() {
    let _serial = serial();
    // Each rank its own host: rank 1's file is out of the survivors'
    // reach, so its share comes from its replica on rank 2 (synced long
    // before rank 1 is given a task, 100 ms after the others started).
    let what = "tcp, a host per rank, rank 1 failing at task";
    let dir = replica_dir("hosts-task");
    let out = Osrun::new(3, "tcp", "reduce-check")
        .ft()
        .args(&["die", "task", "1000"])
        .env("ONESIDED_REDUCE_DIR", dir.to_str().unwrap())
        .env("ONESIDED_HOST", "node{rank}")
        .run();
    assert_eq!(out.code(), 128 + 9, "{what}: {out}");
    for r in [0, 2] {
        out.assert_stdout_has(&format!("rank {r}: reduce ok"));
    }
    assert_clean(&out, what, &dir);
}

#[test]
fn an_unwritable_replica_directory_is_one_clear_error() {
    let _serial = serial();
    let out = Osrun::new(2, "shm", "reduce-check")
        .args(&["results", "10"])
        .env("ONESIDED_REDUCE_DIR", "/proc/onesided-no-such-dir")
        .run();
    assert_eq!(out.code(), 1, "{out}");
    out.assert_stderr_has("FAILED: reducer: replica /proc/onesided-no-such-dir/");
}
