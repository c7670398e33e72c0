//! Multi-process tests of onesided-mam under `osrun` (shm, tcp, and tcp
//! with a host per rank): jobs that shrink (and keep their size) by each
//! method, every element checked by `mam-check` after each
//! reconfiguration; retired processes leave and exit 0 while the job
//! goes on; misuse gives the same error on every process.

use onesided_tests::{alive, serial, shm_files_of, Osrun};

/// Runs `mam-check METHOD COUNTS` on `n` processes of `provider` and
/// checks that the last count's processes finished and the others
/// retired, and that no process left shared memory behind.
fn reconfigure(provider: &str, hosts: bool, n: u32, method: &str, counts: &[u32]) {
    let mut run = Osrun::new(n, provider, "mam-check").arg(method);
    for c in counts {
        run = run.arg(&c.to_string());
    }
    if hosts {
        run = run.env("ONESIDED_HOST", "node{rank}");
    }
    let out = run.run();
    out.assert_success();
    let last = counts.last().copied().unwrap_or(n) as usize;
    let what = format!("{provider} {n} -> {counts:?} {method}");
    assert_eq!(out.count("mam ok"), last, "{what}: {out}");
    let retired = out
        .stdout
        .lines()
        .filter(|l| l.ends_with(": retired"))
        .count();
    assert_eq!(retired, n as usize - last, "{what}: {out}");
    assert_eq!(out.pids.len(), n as usize, "{what}: {out}");
    for &pid in &out.pids {
        assert!(!alive(pid), "{what}: process {pid} outlived the job");
        assert!(shm_files_of(pid).is_empty(), "{what}: files of {pid} left");
    }
}

#[test]
fn shrinking_jobs_move_every_element_by_each_method() {
    let _serial = serial();
    for (provider, hosts) in [("shm", false), ("tcp", false), ("tcp", true)] {
        for method in ["col", "rma_lock", "rma_lock_all"] {
            // (4,4), (4,3), (3,1); (4,2), (2,2), (2,1); (3,2); (4,1).
            reconfigure(provider, hosts, 4, method, &[4, 3, 1]);
            reconfigure(provider, hosts, 4, method, &[2, 2, 1]);
            reconfigure(provider, hosts, 3, method, &[2]);
            reconfigure(provider, hosts, 4, method, &[1]);
        }
    }
}

#[test]
fn misuse_gives_the_same_error_everywhere_and_changes_nothing() {
    let _serial = serial();
    let out = Osrun::new(3, "shm", "mam-check").arg("misuse").run();
    out.assert_success();
    assert_eq!(out.count("mam ok"), 3, "{out}");
    assert_eq!(
        out.count("mismatch: data 0: global length 10 at rank 0, 12 at rank 1"),
        3,
        "{out}"
    );
    assert_eq!(out.count("a target count of 0"), 3, "{out}");
    assert_eq!(out.count("4 targets from 3 processes"), 3, "{out}");
}
