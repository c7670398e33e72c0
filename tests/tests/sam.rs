//! Multi-process tests of `sam`, the malleability study's Conjugate
//! Gradient: it grows (2 -> 3) and shrinks (3 -> 2) while it iterates,
//! on shm and tcp, by each method, and its residual equals a serial
//! run's (sam checks it and fails otherwise); bad files give one error
//! naming the file, line and key, and exit status 2.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use onesided_tests::{binary, run, serial, Osrun};

/// A directory of configuration files for test `test`, removed when
/// dropped.
struct Files(PathBuf);

impl Files {
    fn new(test: &str) -> Files {
        let dir = std::env::temp_dir().join(format!("onesided-sam-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("test directory");
        Files(dir)
    }

    /// Writes `text` to file `name`: its path.
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("test file");
        path
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn config(ns: u32, nt: u32, method: &str, strategy: &str) -> String {
    format!(
        "grid = 24\nbefore = 4\noverlap = 8\niterations = 30\nns = {ns}\nnt = {nt}\n\
         method = \"{method}\"\nstrategy = \"{strategy}\"\n"
    )
}

#[test]
fn the_residual_equals_a_serial_run_after_growing_and_shrinking() {
    let _serial = serial();
    let files = Files::new("runs");
    for provider in ["shm", "tcp"] {
        for method in ["col", "rma_lock", "rma_lock_all"] {
            for (ns, nt, strategy) in [(2, 3, "nonblocking"), (3, 2, "wait_targets")] {
                let what = format!("{provider} {ns}->{nt} {method} {strategy}");
                let path = files.write("run.toml", &config(ns, nt, method, strategy));
                let out = Osrun::new(ns, provider, "sam")
                    .arg(path.to_str().expect("utf-8 path"))
                    .run();
                out.assert_success();
                assert_eq!(out.count("\"residual\""), 1, "{what}: {out}");
                out.assert_stdout_has(&format!("\"ns\":{ns}"));
                out.assert_stdout_has(&format!("\"nt\":{nt}"));
            }
        }
    }
}

#[test]
fn bad_files_give_one_error_and_status_2() {
    let files = Files::new("bad");
    let good = config(2, 3, "col", "blocking");
    let cases = [
        (
            "incomplete.toml",
            good.replace("nt = 3\n", ""),
            "missing field `nt`",
        ),
        (
            "malformed.toml",
            good.replace("grid = 24", "grid = twenty"),
            "line 1",
        ),
        ("unknown.toml", format!("{good}colour = 1\n"), "`colour`"),
        (
            "zero.toml",
            good.replace("nt = 3", "nt = 0"),
            "key `nt`: at least 1",
        ),
        (
            "method.toml",
            good.replace("\"col\"", "\"psm9\""),
            "key `method`",
        ),
    ];
    for (name, text, says) in cases {
        let path = files.write(name, &text);
        let mut command = Command::new(binary("sam"));
        command.arg(&path);
        let out = run(command, Duration::from_secs(30));
        assert_eq!(out.code(), 2, "{name}: {out}");
        let line = out.stderr.trim();
        assert_eq!(line.lines().count(), 1, "{name}: {out}");
        assert!(line.contains(&path.display().to_string()), "{name}: {out}");
        assert!(line.contains(says), "{name}: wants {says:?}: {out}");
    }
    let missing = Command::new(binary("sam"))
        .arg("/nonexistent/sam.toml")
        .output()
        .expect("sam runs");
    assert_eq!(missing.status.code(), Some(2));
}
