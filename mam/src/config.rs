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

/// What a joining process learns of the reconfiguration it joins, from a
/// preput key of its spawn: the source count, the configuration and the
/// old group's members (job ranks). Text without blanks (PMI values
/// hold none): `NS:NT:METHOD:STRATEGY:R0,R1,...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Handoff {
    pub sources: u32,
    pub config: Config,
    pub members: Vec<u32>,
}

/// The preput key of a [`Handoff`].
pub(crate) const HANDOFF_KEY: &str = "onesided-mam";

impl Handoff {
    pub(crate) fn encode(&self) -> String {
        let members: Vec<String> = self.members.iter().map(u32::to_string).collect();
        format!(
            "{}:{}:{}:{}:{}",
            self.sources,
            self.config.targets,
            self.config.method,
            self.config.strategy,
            members.join(",")
        )
    }

    /// Parses [`Handoff::encode`]'s text.
    ///
    /// # Errors
    /// [`Error::Config`] naming the key and what is malformed.
    pub(crate) fn parse(text: &str) -> Result<Handoff, Error> {
        let bad = |what: &str| Error::Config(format!("{HANDOFF_KEY} {text:?}: {what}"));
        let fields: Vec<&str> = text.split(':').collect();
        let [ns, nt, method, strategy, members] = fields[..] else {
            return Err(bad("not NS:NT:METHOD:STRATEGY:MEMBERS"));
        };
        let count = |s: &str| s.parse::<u32>().map_err(|_| bad("a count is not a number"));
        let members = (members.split(','))
            .map(|m| m.parse::<u32>().map_err(|_| bad("a member is not a rank")))
            .collect::<Result<Vec<u32>, Error>>()?;
        let handoff = Handoff {
            sources: count(ns)?,
            config: Config {
                targets: count(nt)?,
                method: method.parse()?,
                strategy: strategy.parse()?,
            },
            members,
        };
        handoff.config.check()?;
        if handoff.sources == 0 || handoff.members.len() != handoff.sources as usize {
            return Err(bad("the members are not the sources"));
        }
        Ok(handoff)
    }
}

#[cfg(test)]
mod handoff_tests {
    use super::*;

    #[test]
    fn a_handoff_parses_back_and_bad_ones_are_named() {
        let h = Handoff {
            sources: 2,
            config: Config {
                targets: 4,
                method: Method::RmaLock,
                strategy: Strategy::Blocking,
            },
            members: vec![0, 3],
        };
        assert_eq!(h.encode(), "2:4:rma_lock:blocking:0,3");
        assert_eq!(Handoff::parse(&h.encode()).unwrap(), h);
        for bad in [
            "",
            "2:4:rma_lock:blocking:0",
            "2:4:p2p:blocking:0,3",
            "2:x:col:blocking:0,1",
            "2:0:col:blocking:0,1",
        ] {
            let e = Handoff::parse(bad).unwrap_err().to_string();
            assert!(e.contains("bad reconfiguration"), "{bad}: {e}");
        }
    }
}
