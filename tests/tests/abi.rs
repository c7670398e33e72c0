//! The MPI standard ABI (`libmpi_abi.so.1`): C programs of `tests/abi/`,
//! built once with MPICH's `mpicc_abi`, pass on MPICH's library (under
//! its `mpiexec`), which shows the programs right, and on onesided's
//! (under `osrun --mpi` on shm, on tcp with every rank its own host, and
//! under Hydra), `MPI_THREAD_MULTIPLE` included; and the library exports
//! every function of the ABI.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use onesided_tests::{hydra, run, serial, target_dir, Osrun, Outcome};

/// The MPICH wheel's venv (scripts/mpich-venv.sh installs it).
fn venv() -> PathBuf {
    let venv = target_dir().join("../mpich-venv");
    assert!(
        venv.join("bin/mpicc_abi").exists(),
        "MPICH 5.0.2's venv is missing: run scripts/mpich-venv.sh (scripts/test.sh does)"
    );
    venv
}

/// The C programs that check results and print `No Errors` on both
/// libraries.
const CHECKED: &[&str] = &[
    "env_coll",
    "vcoll",
    "ops",
    "rma",
    "nonblocking",
    "threads",
    "p2p",
    "windows",
    "errors",
    "datatypes",
    "packing",
];

/// The C programs, built into `target/<profile>/abi/` once per run.
fn programs() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let sources = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("abi");
        let out = target_dir().join("abi");
        std::fs::create_dir_all(&out).expect("target/<profile>/abi");
        for name in CHECKED.iter().chain(&["unsupported"]) {
            let status = Command::new(venv().join("bin/mpicc_abi"))
                .args(["-O2", "-Wall", "-Werror", "-pthread", "-o"])
                .arg(out.join(name))
                .arg(sources.join(format!("{name}.c")))
                .status()
                .expect("mpicc_abi runs");
            assert!(status.success(), "mpicc_abi {name}.c failed");
        }
    });
}

fn assert_no_errors(what: &str, out: &Outcome) {
    out.assert_success();
    assert_eq!(out.count("No Errors"), 1, "{what}: {out}");
}

/// MPICH's own launcher and library (the binary's RUNPATH names the venv).
fn on_mpich(processes: u32, program: &str) -> Outcome {
    let mut command = Command::new(venv().join("bin/mpiexec"));
    command
        .args(["-n", &processes.to_string()])
        .arg(target_dir().join("abi").join(program))
        .env_remove("LD_LIBRARY_PATH");
    run(command, Duration::from_secs(90))
}

#[test]
fn c_programs_pass_on_mpich_and_on_onesided() {
    let _serial = serial();
    programs();
    for program in CHECKED {
        assert_no_errors(&format!("{program} on MPICH"), &on_mpich(3, program));
        let path = format!("abi/{program}");
        for (n, provider, hosts) in [(3, "shm", false), (1, "shm", false), (4, "tcp", true)] {
            let out = Osrun::new(n, provider, &path)
                .mpi()
                .host_per_rank(hosts)
                .run();
            assert_no_errors(&format!("{program}, {n} ranks on {provider}"), &out);
        }
        let mut command = hydra();
        command
            .args(["-n", "2", "-genv", "LD_LIBRARY_PATH"])
            .arg(target_dir())
            .arg(target_dir().join(&path));
        let out = run(command, Duration::from_secs(90));
        assert_no_errors(&format!("{program} under Hydra"), &out);
    }
    // The verbs-style registration path (point-to-point registers the
    // program's buffers for each large message).
    for program in ["rma", "p2p", "windows"] {
        let path = format!("abi/{program}");
        let out = (Osrun::new(2, "tcp", &path).mpi().host_per_rank(true))
            .env("ONESIDED_MR_MODE", "verbs")
            .run();
        assert_no_errors(&format!("{program} with verbs registration"), &out);
    }
}

#[test]
fn an_unsupported_function_raises_its_class_and_says_so_once() {
    let _serial = serial();
    programs();
    let out = Osrun::new(1, "shm", "abi/unsupported")
        .mpi()
        .arg("return")
        .run();
    out.assert_success();
    // MPI_ERR_UNSUPPORTED_OPERATION.
    assert_eq!(out.count("class 55"), 2, "{out}");
    assert_eq!(
        out.stderr
            .matches("onesided: MPI_Pack_external_size is not supported")
            .count(),
        1,
        "{out}"
    );
    let out = Osrun::new(1, "shm", "abi/unsupported")
        .mpi()
        .arg("fatal")
        .run();
    assert_ne!(out.code(), 0, "{out}");
    assert_eq!(out.count("class"), 0, "the fatal handler returned: {out}");
    assert!(
        out.stderr
            .contains("onesided: MPI_Pack_external_size: MPI_Pack_external_size is not supported"),
        "{out}"
    );
}

#[test]
fn errors_return_their_class_or_end_the_job_with_one_line() {
    let _serial = serial();
    programs();
    // The checks MPICH's library leaves out run on onesided's.
    let out = Osrun::new(3, "shm", "abi/errors").mpi().run();
    assert_no_errors("errors", &out);
    assert_eq!(out.count("checks of onesided's library: yes"), 1, "{out}");
    let out = Osrun::new(2, "shm", "abi/errors").mpi().arg("fatal").run();
    assert_ne!(out.code(), 0, "{out}");
    assert_eq!(out.count("returned from a fatal error"), 0, "{out}");
    assert!(
        out.stderr
            .contains("onesided: MPI_Send: rank 7 of 2 ranks (invalid rank)"),
        "{out}"
    );
}

#[test]
fn every_function_of_the_abi_header_is_exported_twice() {
    let header = std::fs::read_to_string(venv().join("include/mpi_abi.h")).expect("mpi_abi.h");
    let library = target_dir().join("libmpi_abi.so.1");
    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&library)
        .output()
        .expect("nm runs");
    let symbols: std::collections::HashSet<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_owned))
        .collect();
    let mut functions = 0;
    for line in header.lines() {
        let Some(name) = line
            .split('(')
            .next()
            .and_then(|head| head.split_whitespace().last())
            .map(|n| n.trim_start_matches('*'))
            .filter(|n| n.starts_with("MPI_") && line.trim_end().ends_with(");"))
        else {
            continue;
        };
        functions += 1;
        assert!(symbols.contains(name), "{name} is not exported");
        assert!(
            symbols.contains(&format!("P{name}")),
            "P{name} is not exported"
        );
    }
    assert!(
        functions > 600,
        "only {functions} functions found in mpi_abi.h"
    );
    let soname = Command::new("readelf")
        .arg("-d")
        .arg(&library)
        .output()
        .expect("readelf");
    let dynamic = String::from_utf8_lossy(&soname.stdout);
    assert!(dynamic.contains("[libmpi_abi.so.1]"), "{dynamic}");
}
