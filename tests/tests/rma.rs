//! Multi-process tests of onesided-rma over real providers (`rma-check`
//! modes), on one host (shared-memory paths) and with every rank its own
//! host (`ONESIDED_HOST=node{rank}`: provider paths), on shm and tcp;
//! across hosts on tcp with the target's atomics (its default) and with
//! the provider's (`ONESIDED_ATOMICS=native`).

use onesided_tests::{serial, Osrun};

/// (provider, one host?, `ONESIDED_ATOMICS`) combinations every window
/// test runs on.
const SETUPS: [(&str, bool, &str); 5] = [
    ("shm", true, ""),
    ("shm", false, ""),
    ("tcp", true, ""),
    ("tcp", false, ""),
    ("tcp", false, "native"),
];

/// `rma-check` in one setup.
fn osrun(n: u32, (provider, one_host, atomics): (&str, bool, &str)) -> Osrun {
    Osrun::new(n, provider, "rma-check")
        .host_per_rank(!one_host)
        .env("ONESIDED_ATOMICS", atomics)
}

/// Runs `rma-check MODE` on `n` ranks in every setup and expects `n`
/// "MODE ok" lines.
fn run_everywhere(mode: &str, n: u32) {
    let _serial = serial();
    for setup in SETUPS {
        let out = osrun(n, setup).arg(mode).run();
        out.assert_success();
        assert_eq!(
            out.count(&format!("{mode} ok")),
            n as usize,
            "{setup:?}: {out}"
        );
    }
}

#[test]
fn allocated_windows_move_bytes_and_keep_locks_exclusive() {
    run_everywhere("window", 4);
}

#[test]
fn ibarrier_fence_and_compare_and_swap_synchronise_the_group() {
    run_everywhere("active", 4);
}

#[test]
fn windows_over_exposed_memory_persist_and_read_only_ones_refuse_writes() {
    run_everywhere("create", 3);
}

#[test]
fn dynamic_windows_attach_and_detach() {
    run_everywhere("dynamic", 3);
}

#[test]
fn typed_atomics_compute_what_a_serial_reference_computes() {
    run_everywhere("typed", 4);
}

#[test]
fn request_based_operations_complete_by_test_wait_flush_and_unlock() {
    run_everywhere("requests", 2);
}

#[test]
fn every_misuse_is_an_error_and_changes_nothing() {
    run_everywhere("misuse", 2);
}

#[test]
fn a_rank_dying_under_a_window_lock_gives_errors_naming_it() {
    let _serial = serial();
    for setup in SETUPS {
        let out = osrun(3, setup).ft().arg("window-victim").run();
        assert_eq!(out.code(), 128 + 9, "{setup:?}: {out}");
        out.assert_stdout_has("rank 0: got an error naming rank 1");
    }
}

#[test]
fn the_benchmark_rank_side_checks_every_value_it_moves() {
    // onesided-bench's own side, short: every suite's checks pass.
    let _serial = serial();
    for provider in ["shm", "tcp"] {
        for suite in ["window", "get", "put", "atomic", "ibarrier"] {
            let out = Osrun::new(2, provider, "onesided-bench")
                .arg("--rank")
                .arg(suite)
                .arg("0.02")
                .run();
            out.assert_success();
            assert!(
                out.stdout
                    .lines()
                    .any(|l| l.starts_with(&format!("{suite} "))),
                "{provider} {suite}: {out}"
            );
        }
    }
}

#[test]
fn an_outsider_guessing_registration_keys_completes_no_write() {
    let _serial = serial();
    let out = Osrun::new(2, "tcp", "rma-check")
        .arg("guarded")
        .env("ONESIDED_HOST", "node{rank}")
        .env("ONESIDED_TIMEOUT", "50")
        .run();
    out.assert_success();
    assert_eq!(out.count("writes completed"), 2, "{out}");
    assert_eq!(out.count("guarded ok"), 2, "{out}");
}
