//! Multi-process tests of the user-facing crate: its examples under
//! `osrun` (shm, tcp, and tcp with a host per rank), under MPICH's Hydra
//! and under a real Slurm, and handles used from several threads at once
//! (`threads-check`), and nonblocking calls `.await`ed (`await-check`).

use std::time::Duration;

use onesided_tests::{binary, hydra, run, serial, srun, Osrun};

/// What `window_get` prints on every one of `n` ranks.
fn window_get_lines(n: u32) -> Vec<String> {
    let sum: u32 = (0..n).map(|r| 10 * r).sum();
    (0..n)
        .map(|r| {
            format!(
                "rank {r}: right neighbour {}, sum {sum}",
                10 * ((r + 1) % n)
            )
        })
        .collect()
}

/// Checks `out` for the examples' lines of `n` ranks.
fn assert_examples(example: &str, n: u32, out: &onesided_tests::Outcome) {
    out.assert_success();
    match example {
        "window_get" => {
            for line in window_get_lines(n) {
                out.assert_stdout_has(&format!("{line}\n"));
            }
        }
        _ => {
            assert_eq!(out.count("iallreduce ok"), n as usize, "{out}");
            assert_eq!(out.count("helper checked 50 rgets"), n as usize, "{out}");
        }
    }
}

#[test]
fn the_examples_print_what_they_compute_under_osrun() {
    let _serial = serial();
    for example in ["window_get", "nonblocking"] {
        for (provider, n, hosts) in [
            ("shm", 1, false),
            ("shm", 4, false),
            ("tcp", 2, false),
            ("tcp", 4, true),
        ] {
            let mut run = Osrun::new(n, provider, &format!("examples/{example}"));
            run = run.host_per_rank(hosts);
            assert_examples(example, n, &run.run());
        }
    }
}

#[test]
fn the_examples_run_under_mpich_hydra() {
    let _serial = serial();
    for example in ["window_get", "nonblocking"] {
        for provider in ["shm", "tcp"] {
            let mut command = hydra();
            command
                .args(["-n", "3", "-genv", "ONESIDED_PROVIDER", provider])
                .args(["-genv", "FI_TCP_IFACE", "lo"])
                .arg(binary(&format!("examples/{example}")));
            assert_examples(example, 3, &run(command, Duration::from_secs(90)));
        }
    }
}

#[test]
fn the_examples_run_under_slurm() {
    let _serial = serial();
    let Some(_) = srun(1) else {
        // scripts/slurm.sh said why on the test script's output.
        eprintln!("SKIPPED: no Slurm cluster was started (ONESIDED_SLURM is not 1)");
        return;
    };
    for example in ["window_get", "nonblocking"] {
        for provider in ["shm", "tcp"] {
            let mut command = srun(3).expect("Slurm");
            command
                .env("ONESIDED_PROVIDER", provider)
                .env("FI_TCP_IFACE", "lo")
                .arg(binary(&format!("examples/{example}")));
            assert_examples(example, 3, &run(command, Duration::from_secs(120)));
        }
    }
}

#[test]
fn the_malleable_example_grows_and_shrinks_its_job() {
    let _serial = serial();
    for provider in ["shm", "tcp"] {
        let out = Osrun::new(2, provider, "examples/malleable").run();
        out.assert_success();
        out.assert_stdout_has("rank 0: 1000000 elements checked");
        assert_eq!(out.count(": retired"), 3, "{provider}: {out}");
        assert_eq!(out.count("2 -> 4: spawn"), 1, "{provider}: {out}");
    }
}

#[test]
fn helper_threads_rget_while_the_main_thread_reduces() {
    let _serial = serial();
    for (provider, n, hosts) in [
        ("shm", 2, false),
        ("shm", 4, false),
        ("tcp", 2, false),
        ("tcp", 4, true),
    ] {
        let mut run = Osrun::new(n, provider, "threads-check");
        run = run.host_per_rank(hosts);
        let out = run.run();
        out.assert_success();
        assert_eq!(
            out.count("threads ok"),
            n as usize,
            "{provider} n {n}: {out}"
        );
    }
}

#[test]
fn collectives_and_reductions_are_awaited_on_a_minimal_executor() {
    let _serial = serial();
    for (provider, n, hosts) in [("shm", 3, false), ("tcp", 2, true)] {
        // The reducers, dropped as soon as the reduction returned, leave
        // no replica files behind.
        let dir = std::env::temp_dir().join(format!(
            "onesided-await-test-{}-{provider}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("replica dir");
        let mut run = Osrun::new(n, provider, "await-check")
            .env("ONESIDED_REDUCE_DIR", dir.to_str().unwrap_or_default());
        run = run.host_per_rank(hosts);
        let out = run.run();
        let left: Vec<_> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        out.assert_success();
        assert_eq!(out.count("await ok"), n as usize, "{provider} n {n}: {out}");
        assert!(left.is_empty(), "{provider}: replica files left: {left:?}");
    }
}
