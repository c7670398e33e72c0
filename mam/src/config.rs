//! How a reconfiguration runs: the target count, the method that moves
//! the data and the strategy that runs it, from code or from the
//! `ONESIDED_MAM_*` environment variables. Pure apart from reading the
//! environment.

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// Environment variable: the target count (`ONESIDED_MAM_TARGETS=3`).
pub const TARGETS_ENV: &str = "ONESIDED_MAM_TARGETS";
/// Environment variable: the method (`col`, `rma_lock`, `rma_lock_all`).
pub const METHOD_ENV: &str = "ONESIDED_MAM_METHOD";
/// Environment variable: the strategy (`blocking`, `thread`,
/// `nonblocking`, `wait_targets`).
pub const STRATEGY_ENV: &str = "ONESIDED_MAM_STRATEGY";

/// How the data moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Method {
    /// One alltoallv over the merged group (the baseline).
    Col,
    /// Each target locks each source it reads from, gets, unlocks.
    RmaLock,
    /// Each target reads every source in one `lock_all` epoch.
    #[default]
    RmaLockAll,
}

/// How the constant data's move runs while the application goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Strategy {
    /// The checkpoint moves everything before it returns.
    #[default]
    Blocking,
    /// A helper thread moves the constant data; checkpoints poll it.
    Thread,
    /// Nonblocking operations, advanced at each checkpoint.
    NonBlocking,
    /// As `NonBlocking`; sources learn that every target finished reading
    /// (the spec's Wait Targets).
    WaitTargets,
}

macro_rules! names {
    ($t:ty, $what:literal, $($v:ident = $n:literal),*) => {
        impl $t {
            /// Its name (as in the environment variable).
            pub fn name(self) -> &'static str {
                match self { $(<$t>::$v => $n,)* }
            }
        }

        impl FromStr for $t {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self, Error> {
                match s.trim().to_ascii_lowercase().as_str() {
                    $($n => Ok(<$t>::$v),)*
                    other => Err(Error::Config(format!(
                        concat!("unknown ", $what, " {:?} (one of: {})"),
                        other,
                        [$($n),*].join(", ")
                    ))),
                }
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

names!(
    Method,
    "method",
    Col = "col",
    RmaLock = "rma_lock",
    RmaLockAll = "rma_lock_all"
);
names!(
    Strategy,
    "strategy",
    Blocking = "blocking",
    Thread = "thread",
    NonBlocking = "nonblocking",
    WaitTargets = "wait_targets"
);

/// A reconfiguration's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Processes after the reconfiguration (at least 1).
    pub targets: u32,
    /// How the data moves.
    pub method: Method,
    /// How the constant data's move runs.
    pub strategy: Strategy,
}

impl Config {
    /// A reconfiguration to `targets` processes with the default method
    /// and strategy.
    pub fn new(targets: u32) -> Config {
        Config {
            targets,
            method: Method::default(),
            strategy: Strategy::default(),
        }
    }

    /// `self` with what the `ONESIDED_MAM_*` variables set.
    ///
    /// # Errors
    /// [`Error::Config`] naming the variable and its bad value.
    pub fn from_env(self) -> Result<Config, Error> {
        self.with(|name| std::env::var(name).ok())
    }

    /// `self` with what `var` gives for the `ONESIDED_MAM_*` names.
    fn with(self, var: impl Fn(&str) -> Option<String>) -> Result<Config, Error> {
        let mut c = self;
        let bad = |name: &str, e: Error| Error::Config(format!("{name}: {e}"));
        if let Some(v) = var(TARGETS_ENV) {
            c.targets = v.trim().parse().map_err(|_| {
                Error::Config(format!("{TARGETS_ENV}: {v:?} is not a process count"))
            })?;
        }
        if let Some(v) = var(METHOD_ENV) {
            c.method = v.parse().map_err(|e| bad(METHOD_ENV, e))?;
        }
        if let Some(v) = var(STRATEGY_ENV) {
            c.strategy = v.parse().map_err(|e| bad(STRATEGY_ENV, e))?;
        }
        c.check()?;
        Ok(c)
    }

    /// Checks it.
    ///
    /// # Errors
    /// [`Error::Config`] for a target count of 0.
    pub fn check(&self) -> Result<(), Error> {
        if self.targets == 0 {
            return Err(Error::Config(
                "a target count of 0 (a job keeps at least one process)".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_bad_ones_say_what_they_were() {
        for m in [Method::Col, Method::RmaLock, Method::RmaLockAll] {
            assert_eq!(m.name().parse::<Method>().unwrap(), m);
        }
        for s in [
            Strategy::Blocking,
            Strategy::Thread,
            Strategy::NonBlocking,
            Strategy::WaitTargets,
        ] {
            assert_eq!(s.to_string().parse::<Strategy>().unwrap(), s);
        }
        assert_eq!(" RMA_LOCK ".parse::<Method>().unwrap(), Method::RmaLock);
        let e = "p2p".parse::<Method>().unwrap_err().to_string();
        assert!(e.contains("\"p2p\"") && e.contains("rma_lock_all"), "{e}");
    }

    #[test]
    fn the_environment_overrides_and_is_checked() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let c = Config::new(2)
            .with(env(&[(TARGETS_ENV, "3"), (METHOD_ENV, "col")]))
            .unwrap();
        assert_eq!(
            (c.targets, c.method, c.strategy),
            (3, Method::Col, Strategy::Blocking)
        );
        let e = Config::new(2)
            .with(env(&[(TARGETS_ENV, "0")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("target count of 0"), "{e}");
        let e = Config::new(2)
            .with(env(&[(TARGETS_ENV, "-1")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains(TARGETS_ENV) && e.contains("\"-1\""), "{e}");
        let e = Config::new(2)
            .with(env(&[(STRATEGY_ENV, "later")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains(STRATEGY_ENV) && e.contains("later"), "{e}");
        assert!(Config::new(0).check().is_err());
    }
}
