//! Runs of a side that failed and were run again: a peer that crashes
//! now and then (MPICH's shared-memory address exchange once segfaulted
//! in `MPI_Init` after pids wrapped) neither ends a suite nor hides. A
//! failed run is run again at most [`MAX`] times; each retry is counted by
//! side with the first failure's reason, and shown under the table and in
//! the JSON. A check that failed ("... expected X found Y") is a wrong
//! result, and a run past its timeout ("did not end in", "did not finish
//! in time") would cost the timeout again: neither is retried. Pure: the
//! runs are closures.

use std::collections::BTreeMap;

/// Retries of one run, at most.
pub const MAX: u32 = 2;

/// The retries of a suite, by side.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Retries {
    by_side: BTreeMap<String, (u32, String)>,
}

impl Retries {
    /// Runs `attempt` until it succeeds, at most [`MAX`] + 1 times,
    /// counting each retry for `side` (empty: the failure's first word,
    /// for runs of both sides at once); the last failure, or a check's, is
    /// returned as it is.
    ///
    /// # Errors
    /// `attempt`'s error when every try failed or a check failed.
    pub fn run<T, E: std::fmt::Display>(
        &mut self,
        side: &str,
        mut attempt: impl FnMut() -> Result<T, E>,
    ) -> Result<T, E> {
        let mut tries = 0;
        loop {
            match attempt() {
                Ok(t) => return Ok(t),
                Err(e) if tries < MAX && retried(&e.to_string()) => {
                    tries += 1;
                    let reason = e.to_string();
                    let side = match side {
                        "" => reason.split([':', ' ']).next().unwrap_or_default(),
                        side => side,
                    };
                    eprintln!("onesided-bench: warning: {side}: {reason}; running it again");
                    let entry = (self.by_side.entry(side.to_string()))
                        .or_insert_with(|| (0, first_line(&reason)));
                    entry.0 += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Retries so far of `side`.
    pub fn of(&self, side: &str) -> u32 {
        self.by_side.get(side).map_or(0, |(n, _)| *n)
    }

    /// `retried: SIDE N (first: REASON); ...`, or none when nothing was.
    pub fn line(&self) -> Option<String> {
        let parts: Vec<String> = (self.by_side.iter())
            .map(|(side, (n, why))| format!("{side} {n} (first: {why})"))
            .collect();
        (!parts.is_empty()).then(|| format!("retried: {}", parts.join("; ")))
    }

    /// Each side's count and first reason.
    pub fn sides(&self) -> impl Iterator<Item = (&str, u32, &str)> {
        (self.by_side.iter()).map(|(s, (n, why))| (s.as_str(), *n, why.as_str()))
    }
}

/// Whether a run that failed with `error` is run again: not a check that
/// failed (a wrong result), nor a run past its timeout.
fn retried(error: &str) -> bool {
    let check = error.contains(" expected ") && error.contains(" found ");
    !check && !error.contains("did not end in") && !error.contains("did not finish in time")
}

/// The first line of `text`, at most 160 characters.
fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(160)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_run_is_retried_twice_counted_and_shown() {
        let mut r = Retries::default();
        assert_eq!(r.line(), None);
        let mut calls = 0;
        let got = r.run("mpich", || {
            calls += 1;
            match calls {
                1 => Err("exited with status 11\nmore".to_string()),
                _ => Ok(7),
            }
        });
        assert_eq!((got, calls), (Ok(7), 2));
        let mut calls = 0;
        let got: Result<(), String> = r.run("mpich", || {
            calls += 1;
            Err(format!("crash {calls}"))
        });
        assert_eq!(
            (got, calls),
            (Err("crash 3".to_string()), 3),
            "twice at most"
        );
        assert_eq!(r.of("mpich"), 3);
        assert_eq!(r.of("onesided"), 0);
        assert_eq!(
            r.line().as_deref(),
            Some("retried: mpich 3 (first: exited with status 11)")
        );
        let mut calls = 0;
        let got: Result<(), String> = r.run("onesided", || {
            calls += 1;
            Err("rank 1: sum expected 3 found 4".into())
        });
        assert!(got.is_err());
        assert_eq!((calls, r.of("onesided")), (1, 0), "a check is not retried");
        let got: Result<(), String> = r.run("MPICH", || Err("did not end in 300s: ...".into()));
        assert!(got.is_err());
        assert_eq!(r.of("MPICH"), 0, "nor a timeout");
    }
}
