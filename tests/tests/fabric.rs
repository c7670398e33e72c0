//! Multi-process tests of onesided-fabric and osrun over real providers.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use onesided_tests::{alive, binary, hydra, run, run_stderr_closed, serial, shm_files, Osrun};

const PROVIDERS: [&str; 2] = ["shm", "tcp"];

#[test]
fn hello_prints_one_line_per_rank_on_every_provider() {
    let _serial = serial();
    for provider in ["shm", "tcp", "sockets"] {
        let out = Osrun::new(3, provider, "examples/hello").run();
        out.assert_success();
        for rank in 0..3 {
            out.assert_stdout_has(&format!("rank {rank} of 3 on {provider}\n"));
        }
        assert_eq!(out.stdout.lines().count(), 3, "{out}");
    }
}

#[test]
fn start_up_costs_log_p_and_receives_the_same_memory_at_any_size() {
    let _serial = serial();
    let mut memory = Vec::new();
    for n in [2u32, 8, 13] {
        let out = Osrun::new(n, "tcp", "examples/hello")
            .host_per_rank(true)
            .env("ONESIDED_STATS", "1")
            .run();
        out.assert_success();
        let stats = out.stats();
        assert_eq!(stats.len(), n as usize, "{out}");
        for s in &stats {
            // The join service alone, its pool of receives from any rank.
            assert_eq!(s.get("standing_receives"), 4, "{s:?}");
            assert_eq!(s.get("av_entries"), u64::from(n), "{s:?}");
            // The start-up's allgather: ceil(log2 n) messages, and at
            // most 2 ceil(log2 n) PMI gets besides 7 other requests
            // (handshake 3, put, barrier, finalize's barrier, finalize).
            let log = 32 - (n - 1).leading_zeros();
            assert_eq!(s.get("messages"), u64::from(log), "{s:?}");
            assert!(s.get("pmi_requests") <= u64::from(2 * log + 7), "{s:?}");
            memory.push(s.get("receive_memory"));
        }
    }
    assert!(
        memory.iter().all(|&m| m == memory[0] && m > 0),
        "{memory:?}"
    );
}

#[test]
fn rma_atomics_and_messages_move_the_right_bytes() {
    let _serial = serial();
    for (provider, n) in [("shm", 4), ("tcp", 4), ("sockets", 3)] {
        let out = Osrun::new(n, provider, "fabric-check").arg("rma").run();
        out.assert_success();
        assert_eq!(out.count("rma ok"), n as usize, "{provider}: {out}");
    }
}

#[test]
fn verbs_style_registration_runs_on_shm_and_tcp() {
    let _serial = serial();
    for (provider, mode) in [
        ("shm", "MrMode(LOCAL | VIRT_ADDR | ALLOCATED | PROV_KEY)"),
        ("tcp", "MrMode(LOCAL | ALLOCATED | PROV_KEY)"),
    ] {
        let out = Osrun::new(2, provider, "fabric-check")
            .arg("rma")
            .env("ONESIDED_MR_MODE", "verbs")
            .run();
        out.assert_success();
        assert_eq!(out.count(&format!("mr_mode {mode}")), 2, "{out}");
        assert_eq!(out.count("rma ok"), 2, "{out}");
    }
}

#[test]
fn queued_unexpected_messages_all_arrive() {
    let _serial = serial();
    for provider in ["shm", "tcp", "sockets"] {
        let out = Osrun::new(4, provider, "fabric-check")
            .arg("unexpected")
            .run();
        out.assert_success();
        assert_eq!(out.count("unexpected ok"), 4, "{provider}: {out}");
    }
}

#[test]
fn a_computing_target_serves_reads_and_atomics() {
    let _serial = serial();
    for provider in PROVIDERS {
        let out = Osrun::new(4, provider, "fabric-check").arg("passive").run();
        out.assert_success();
        out.assert_stdout_has("rank 0: served 300 increments while computing");
    }
}

#[test]
fn a_computing_target_answers_control_calls() {
    let _serial = serial();
    for provider in ["shm", "tcp", "sockets"] {
        let out = Osrun::new(4, provider, "fabric-check").arg("control").run();
        out.assert_success();
        out.assert_stdout_has("rank 0: answered 300 calls while computing");
        assert_eq!(out.count("control ok"), 4, "{provider}: {out}");
    }
}

#[test]
fn a_target_busy_in_calls_that_do_not_poll_still_serves_reads_and_atomics() {
    // The background thread then polls every 10 ms only (shm: tcp and
    // sockets block on the completion queue instead of sleeping).
    let _serial = serial();
    let out = Osrun::new(2, "shm", "fabric-check")
        .arg("passive")
        .arg("busy")
        .run();
    out.assert_success();
    out.assert_stdout_has("rank 0: served 20 increments while busy");
}

#[test]
fn without_the_progress_thread_a_computing_shm_target_serves_nothing() {
    // The control for the test above: it can fail.
    let _serial = serial();
    let out = Osrun::new(2, "shm", "fabric-check")
        .arg("passive")
        .env("ONESIDED_PROGRESS", "manual")
        .env("ONESIDED_TIMEOUT", "2")
        .run();
    assert!(!out.status.success(), "{out}");
    out.assert_stderr_has("did not complete within 2s");
}

#[test]
fn four_waiting_ranks_on_two_cores_do_not_spin() {
    let _serial = serial();
    for provider in PROVIDERS {
        let out = Osrun::new(4, provider, "fabric-check")
            .arg("idle")
            .arg("2")
            .run();
        out.assert_success();
        assert_eq!(out.count("of a core while waiting"), 3, "{out}");
    }
}

#[test]
fn with_ft_the_survivor_gets_an_error_naming_the_dead_rank() {
    let _serial = serial();
    for provider in PROVIDERS {
        let out = Osrun::new(2, provider, "fabric-check")
            .ft()
            .arg("victim")
            .run();
        assert_eq!(out.code(), 128 + 9, "{out}");
        out.assert_stdout_has("rank 0: survivor got an error naming rank 1");
        out.assert_stderr_has("was killed by signal 9");
        out.assert_stderr_has("--ft: telling the survivors that rank 1 died");
    }
}

#[test]
fn with_ft_a_send_to_a_killed_rank_fails_before_the_launcher_tells() {
    let _serial = serial();
    for provider in PROVIDERS {
        let out = Osrun::new(2, provider, "fabric-check")
            .ft()
            .arg("sudden")
            .run();
        assert_eq!(out.code(), 128 + 9, "{out}");
        out.assert_stdout_has("rank 0: a send to rank 1, killed, failed before the launcher");
    }
}

#[test]
fn without_ft_a_dead_rank_ends_the_job() {
    let _serial = serial();
    for provider in PROVIDERS {
        let out = Osrun::new(2, provider, "fabric-check").arg("victim").run();
        assert_ne!(out.code(), 0, "{out}");
        out.assert_stderr_has("rank 1 (pid");
        out.assert_stderr_has("killing the job");
        assert_eq!(out.pids.len(), 2, "{out}");
    }
}

#[test]
fn spawn_starts_processes_into_the_running_job() {
    let _serial = serial();
    let out = Osrun::new(2, "shm", "fabric-check").arg("spawn").run();
    out.assert_success();
    out.assert_stdout_has("rank 0: spawned 2");
    out.assert_stdout_has("child 0 of 2: hello-from-the-parent");
    out.assert_stdout_has("child 1 of 2: hello-from-the-parent");
    assert_eq!(out.pids.len(), 4, "{out}");
}

#[test]
fn spawned_processes_join_the_running_job() {
    let _serial = serial();
    for (provider, n, hosts) in [("shm", 2, false), ("tcp", 2, false), ("tcp", 3, true)] {
        let mut run = Osrun::new(n, provider, "fabric-check").arg("grow");
        run = run.host_per_rank(hosts);
        let out = run.run();
        out.assert_success();
        let size = n + 2;
        for r in 0..n {
            out.assert_stdout_has(&format!("rank {r}: ranks {n}..{size} joined"));
        }
        for r in 0..size {
            let others: Vec<u32> = (0..size).filter(|&o| o != r).collect();
            out.assert_stdout_has(&format!("rank {r} of {size}: exchanged with {others:?}"));
        }
        assert_eq!(out.pids.len(), size as usize, "{provider}: {out}");
    }
}

#[test]
fn a_spawn_that_cannot_start_fails_everywhere_and_the_job_goes_on_growing() {
    let _serial = serial();
    let out = Osrun::new(3, "shm", "fabric-check")
        .arg("grow-missing")
        .run();
    out.assert_success();
    assert_eq!(
        out.count("spawn failed: PMI server refused spawn"),
        3,
        "{out}"
    );
    // Ranks 3 and 4 were reserved for the failed spawn; 5 and 6 joined.
    let live = [0, 1, 2, 5, 6];
    for r in live {
        let others: Vec<u32> = live.into_iter().filter(|&o| o != r).collect();
        out.assert_stdout_has(&format!("rank {r} of 7: exchanged with {others:?}"));
    }
}

#[test]
fn abort_ends_the_job_with_its_code() {
    let _serial = serial();
    let out = Osrun::new(2, "shm", "fabric-check").arg("abort").run();
    assert_eq!(out.code(), 3, "{out}");
    out.assert_stderr_has("called abort (exit code 3)");
}

#[test]
fn osrun_whose_standard_error_is_gone_still_ends_the_job_and_cleans_up() {
    let _serial = serial();
    // Nobody reads what osrun says about the abort. `run_stderr_closed`
    // checks the ranks that printed their pid; one killed before it did
    // is covered by what /dev/shm holds before and after.
    let before = shm_files();
    let mut command = Command::new(binary("osrun"));
    command
        .args(["-n", "2", "--provider", "shm", "--timeout", "60"])
        .arg(binary("fabric-check"))
        .arg("abort");
    let out = run_stderr_closed(command, Duration::from_secs(60));
    assert_eq!(out.code(), 3, "{out}");
    let left: Vec<String> = shm_files()
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    assert!(left.is_empty(), "left in /dev/shm: {left:?}\n{out}");
}

#[test]
fn timeout_kills_the_job() {
    let _serial = serial();
    let mut command = Command::new(binary("osrun"));
    command
        .args(["-n", "2", "--timeout", "1"])
        .arg(binary("fabric-check"))
        .args(["sleep", "30"]);
    let start = Instant::now();
    let out = run(command, Duration::from_secs(30));
    assert_eq!(out.code(), 124, "{out}");
    assert!(start.elapsed() < Duration::from_secs(25), "{out}");
    out.assert_stderr_has("did not finish within --timeout");
}

/// One `osrun` run with bad input: one clear line on stderr, non-zero exit,
/// nothing started.
fn bad_input(args: &[&str], expect: &str) {
    let mut command = Command::new(binary("osrun"));
    command.args(args);
    let out = run(command, Duration::from_secs(10));
    assert_ne!(out.code(), 0, "{out}");
    assert_eq!(out.stderr.lines().count(), 1, "{out}");
    out.assert_stderr_has(expect);
    assert!(out.stdout.is_empty(), "{out}");
}

/// Runs `osrun` with bad flags: clap's error naming `expect`, status 2.
fn bad_flags(args: &[&str], expect: &str) {
    let mut command = Command::new(binary("osrun"));
    command.args(args);
    let out = run(command, Duration::from_secs(10));
    assert_eq!(out.code(), 2, "{out}");
    assert!(out.stderr.starts_with("error: "), "{out}");
    out.assert_stderr_has(expect);
    assert!(out.stdout.is_empty(), "{out}");
}

#[test]
fn bad_command_lines_give_one_clear_error() {
    let _serial = serial();
    let check = binary("fabric-check");
    let check = check.to_str().unwrap_or_default();
    bad_flags(&["-n", "0", check], "invalid value '0' for '--np <N>'");
    bad_flags(&["-n", "2"], "<PROGRAM>");
    bad_flags(
        &["-n", "2", "--bogus", check],
        "unexpected argument '--bogus'",
    );
    bad_flags(
        &["-n", "2", "--provider", "psm9", check],
        "unknown provider \"psm9\"",
    );
    for flag in ["--help", "--version"] {
        let mut command = Command::new(binary("osrun"));
        command.arg(flag);
        let out = run(command, Duration::from_secs(10));
        out.assert_success();
        out.assert_stdout_has("osrun");
    }
    bad_input(
        &["-n", "2", "/no/such/program"],
        "osrun: program \"/no/such/program\" not found",
    );
    bad_input(
        &["-n", "2", "no-such-program-anywhere"],
        "not found on PATH",
    );
}

#[test]
fn an_unknown_provider_in_the_environment_is_one_error_per_rank() {
    let _serial = serial();
    let mut command = Command::new(binary("osrun"));
    command
        .args(["-n", "2"])
        .arg(binary("examples/hello"))
        .env("ONESIDED_PROVIDER", "psm9");
    let out = run(command, Duration::from_secs(30));
    assert_ne!(out.code(), 0, "{out}");
    out.assert_stderr_has("hello: unknown provider \"psm9\"");
}

#[test]
fn missing_libfabric_gives_one_clear_line() {
    let _serial = serial();
    // Hide libfabric in a private mount namespace (needs root, as in CI).
    let lib = [
        "/usr/lib/x86_64-linux-gnu/libfabric.so.1",
        "/lib/x86_64-linux-gnu/libfabric.so.1",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists())
    .expect("libfabric.so.1 installed");
    let probe = Command::new("unshare")
        .args(["--mount", "true"])
        .stderr(Stdio::null())
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("skipped: unshare --mount needs root (CI runs as root)");
        return;
    }
    let script = format!(
        "mount --bind /dev/null {lib} && mount --bind /dev/null $(readlink -f {lib}) && exec {} -n 2 {}",
        binary("osrun").display(),
        binary("examples/hello").display()
    );
    let mut command = Command::new("unshare");
    command.args(["--mount", "sh", "-c", &script]);
    let out = run(command, Duration::from_secs(20));
    assert_eq!(out.code(), 1, "{out}");
    assert_eq!(out.stderr.lines().count(), 1, "{out}");
    out.assert_stderr_has("osrun: libfabric is not usable");
    assert!(out.stdout.is_empty(), "{out}");
}

#[test]
fn a_process_not_started_by_osrun_cannot_join() {
    let _serial = serial();
    // osrun listens on nothing: its PMI sockets are socketpairs shared only
    // with the processes it started.
    let mut command = Command::new(binary("osrun"));
    command
        .args(["-n", "1", "--timeout", "30"])
        .arg(binary("fabric-check"))
        .args(["sleep", "3"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut osrun = command.spawn().expect("start osrun");
    std::thread::sleep(Duration::from_millis(1000));
    let inodes = socket_inodes(osrun.id());
    let listening = listening_inodes();
    let exposed: Vec<&String> = inodes.iter().filter(|i| listening.contains(i)).collect();
    // An outsider handed osrun's variables cannot reach it either.
    let outsider = Command::new(binary("examples/hello"))
        .env("PMI_FD", "0")
        .env("PMI_RANK", "0")
        .env("PMI_SIZE", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run the outsider");
    let status = osrun.wait().expect("osrun");
    assert!(!inodes.is_empty(), "osrun holds no sockets at all?");
    assert!(exposed.is_empty(), "osrun listens on sockets {exposed:?}");
    assert!(status.success());
    assert!(!outsider.status.success());
    let stderr = String::from_utf8_lossy(&outsider.stderr);
    assert!(
        stderr.contains("PMI_FD")
            && stderr.contains("not an open socket inherited from the process manager"),
        "{stderr}"
    );
    assert!(!alive(osrun.id()));
}

fn socket_inodes(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .filter_map(|l| {
                    let l = l.to_string_lossy().into_owned();
                    l.strip_prefix("socket:[")?
                        .strip_suffix(']')
                        .map(String::from)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Inodes of listening TCP sockets and Unix sockets accepting connections.
fn listening_inodes() -> Vec<String> {
    let mut out = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(table)
            .unwrap_or_default()
            .lines()
            .skip(1)
        {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.get(3) == Some(&"0A") {
                out.extend(f.get(9).map(|s| s.to_string()));
            }
        }
    }
    for line in std::fs::read_to_string("/proc/net/unix")
        .unwrap_or_default()
        .lines()
        .skip(1)
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        // Flags 00010000 is __SO_ACCEPTCON: a listening socket.
        if f.get(3) == Some(&"00010000") {
            out.extend(f.get(6).map(|s| s.to_string()));
        }
    }
    out
}

#[test]
fn the_same_binaries_run_under_mpich_hydra() {
    let _serial = serial();
    let mut hello = hydra();
    hello.args(["-n", "3"]).arg(binary("examples/hello"));
    let out = run(hello, Duration::from_secs(60));
    out.assert_success();
    for rank in 0..3 {
        out.assert_stdout_has(&format!("rank {rank} of 3 on shm\n"));
    }
    for provider in PROVIDERS {
        let mut rma = hydra();
        rma.args([
            "-n",
            "3",
            "-genv",
            "ONESIDED_PROVIDER",
            provider,
            "-genv",
            "FI_TCP_IFACE",
            "lo",
        ])
        .arg(binary("fabric-check"))
        .arg("rma");
        let out = run(rma, Duration::from_secs(60));
        out.assert_success();
        assert_eq!(out.count("rma ok"), 3, "{provider}: {out}");
    }
}

#[test]
fn pingpong_prints_its_table() {
    let _serial = serial();
    let out = Osrun::new(2, "shm", "examples/pingpong").arg("1").run();
    out.assert_success();
    out.assert_stdout_has("onesided_us");
    for op in ["message", "read"] {
        for size in ["8", "4096", "65536", "1048576"] {
            assert!(
                out.stdout
                    .lines()
                    .any(|l| l.starts_with(op) && l.split_whitespace().nth(1) == Some(size)),
                "no {op} {size} row:\n{out}"
            );
        }
    }
}

/// Starts `osrun -n 2` over shm with ranks that sleep 60 s; returns it and
/// the ranks' pids (once they reported them: their endpoints are open).
fn sleeping_job() -> (std::process::Child, Vec<u32>) {
    use std::io::{BufRead, BufReader};
    let mut osrun = Command::new(binary("osrun"))
        .args(["-n", "2", "--provider", "shm", "--timeout", "60"])
        .arg(binary("fabric-check"))
        .args(["sleep", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start osrun");
    let stdout = osrun.stdout.take().expect("piped");
    let pids: Vec<u32> = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| {
            l.strip_prefix("pid ")?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .take(2)
        .collect();
    (osrun, pids)
}

/// The ranks of `pids` still alive 10 s after `osrun` ended (then killed).
fn survivors(pids: &[u32]) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<u32> = pids.iter().copied().filter(|&p| alive(p)).collect();
    for &p in &left {
        onesided_tests::kill(i64::from(p));
    }
    left
}

#[test]
fn a_sigkilled_osrun_leaves_no_process_and_no_file() {
    let _serial = serial();
    let (mut osrun, pids) = sleeping_job();
    let leftovers = || -> Vec<String> {
        pids.iter()
            .flat_map(|&p| onesided_tests::shm_files_of(p))
            .collect()
    };
    let before = leftovers();
    onesided_tests::kill(i64::from(osrun.id()));
    let _ = osrun.wait();
    let left = survivors(&pids);
    // Its janitor removes the ranks' files once they are gone.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !leftovers().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let files = leftovers();
    for f in &files {
        let _ = std::fs::remove_file(format!("/dev/shm/{f}"));
    }
    assert_eq!(pids.len(), 2);
    assert!(!before.is_empty(), "the shm ranks had no files to leave");
    assert!(left.is_empty(), "ranks {left:?} outlived osrun");
    assert!(
        files.is_empty(),
        "a SIGKILLed osrun left {files:?} in /dev/shm"
    );
}

#[test]
fn sigterm_ends_the_job_and_cleans_up() {
    use std::io::Read;
    let _serial = serial();
    let (mut osrun, pids) = sleeping_job();
    let leftovers = |pids: &[u32]| -> Vec<String> {
        pids.iter()
            .flat_map(|&p| onesided_tests::shm_files_of(p))
            .collect()
    };
    let before = leftovers(&pids);
    let _ = Command::new("kill")
        .args(["-TERM", &osrun.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        match osrun.try_wait().expect("wait for osrun") {
            Some(status) => break Some(status),
            None if Instant::now() > deadline => break None,
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    if status.is_none() {
        onesided_tests::kill(i64::from(osrun.id()));
        let _ = osrun.wait();
    }
    let mut stderr = String::new();
    if let Some(mut e) = osrun.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    let left = survivors(&pids);
    let files = leftovers(&pids);
    for f in &files {
        let _ = std::fs::remove_file(format!("/dev/shm/{f}"));
    }
    assert_eq!(pids.len(), 2);
    assert!(!before.is_empty(), "the shm ranks had no files to clean up");
    assert_eq!(status.and_then(|s| s.code()), Some(128 + 15), "{stderr}");
    assert!(
        stderr.contains("received signal 15; killing the job"),
        "{stderr}"
    );
    assert!(left.is_empty(), "ranks {left:?} outlived osrun");
    assert!(files.is_empty(), "osrun left {files:?} in /dev/shm");
}
