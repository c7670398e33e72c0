//! Choosing each call's algorithm (docs/spec/algorithm-selection.md):
//! the job's profile filtered to its geometry, built-in defaults by size
//! where it has nothing, monitoring of the chosen algorithms, and removal
//! of algorithms that failed. Pure code apart from reading the profile
//! file named by [`PROFILE_ENV`].

use std::collections::HashSet;

use crate::algorithm::{
    Algorithm, Allgather, Allreduce, Alltoall, Barrier, Bcast, Collective, Gather, Reduce,
    ReduceScatter, Scatter,
};
use crate::profile::{Geometry, Profile};

/// Environment variable naming the profile file to load at init.
pub const PROFILE_ENV: &str = "ONESIDED_PROFILE";

/// Environment variable naming algorithms that fail whenever a call
/// chooses them, on every rank (`allreduce:ring,bcast:binomial`): fault
/// injection, to see a job complete its calls with the next best
/// algorithms. Unknown names are ignored.
pub const FAULT_ENV: &str = "ONESIDED_FAULT";

/// The algorithms named by [`FAULT_ENV`].
pub(crate) fn faults_from_env() -> HashSet<Algorithm> {
    let text = std::env::var(FAULT_ENV).unwrap_or_default();
    text.split(',')
        .filter_map(|item| {
            let (c, a) = item.trim().split_once(':')?;
            Algorithm::parse(Collective::from_name(c)?, a)
        })
        .collect()
}

/// Messages this large (bytes per rank) or larger are "large" for the
/// built-in defaults.
pub const LARGE: u64 = 64 * 1024;

/// Allreduces of this many bytes or more (1 MiB) go around the ring,
/// smaller ones by recursive doubling: the ring's two rounds a member
/// cost more than they save below it (figures: docs/measurements.md,
/// "Ring allreduces and scattered broadcasts (across hosts)").
pub const ALLREDUCE_RING_FROM: u64 = 1 << 20;

/// Groups this large or larger broadcast large messages by scatter and
/// allgather, smaller ones along the binomial tree (MPICH's
/// `MPIR_CVAR_BCAST_MIN_PROCS`): with few members the tree's one message
/// a member beats two rounds (figures: docs/measurements.md, "Ring
/// allreduces and scattered broadcasts (across hosts)").
pub const BCAST_SCATTER_FROM: u32 = 8;

/// The built-in choice without a profile for a group of `ranks`:
/// latency-bound algorithms for small messages, bandwidth-bound ones for
/// large (as MPICH's defaults do); a non-commutative reduction keeps the
/// rank order.
pub fn default_algorithm(
    collective: Collective,
    bytes: u64,
    commutative: bool,
    ranks: u32,
) -> Algorithm {
    let large = bytes >= LARGE;
    match collective {
        Collective::Barrier => Barrier::Dissemination.into(),
        Collective::Bcast if large && ranks >= BCAST_SCATTER_FROM => Bcast::ScatterAllgather.into(),
        Collective::Bcast => Bcast::Binomial.into(),
        // reduce_scatter_gather moves less data but measured slower here
        // (2 ranks: 256 KiB 0.36 ms vs 0.06 ms): a profile may pick it.
        Collective::Reduce => Reduce::Binomial.into(),
        Collective::Allreduce if bytes >= ALLREDUCE_RING_FROM && commutative => {
            Allreduce::Ring.into()
        }
        Collective::Allreduce => Allreduce::RecursiveDoubling.into(),
        Collective::Gather if large => Gather::Linear.into(),
        Collective::Gather => Gather::Binomial.into(),
        Collective::Scatter if large => Scatter::Linear.into(),
        Collective::Scatter => Scatter::Binomial.into(),
        Collective::Allgather if large => Allgather::Ring.into(),
        Collective::Allgather => Allgather::RecursiveDoubling.into(),
        Collective::Alltoall if large => Alltoall::Pairwise.into(),
        Collective::Alltoall => Alltoall::Linear.into(),
        Collective::ReduceScatter if large && commutative => ReduceScatter::Ring.into(),
        Collective::ReduceScatter => ReduceScatter::Pairwise.into(),
    }
}

/// Algorithms only blocking calls run: the one-sided alltoall (by RMA
/// get; there is no nonblocking one).
pub fn blocking_only(algorithm: Algorithm) -> bool {
    algorithm == Alltoall::OneSided.into()
}

/// Algorithms that combine operands out of rank order (chosen only for
/// commutative operations).
pub fn reorders(algorithm: Algorithm) -> bool {
    matches!(
        algorithm,
        Algorithm::Allreduce(Allreduce::Ring | Allreduce::Rabenseifner)
            | Algorithm::Reduce(Reduce::ReduceScatterGather)
            | Algorithm::ReduceScatter(ReduceScatter::Ring)
    )
}

/// The selection state of one process.
#[derive(Debug, Clone)]
pub struct Selector {
    profile: Profile,
    geometry: Geometry,
    failed: HashSet<Algorithm>,
}

impl Selector {
    /// A selector for `geometry` from `profile` (filtered to the
    /// geometry; `None`: built-in defaults only).
    pub fn new(profile: Option<&Profile>, geometry: Geometry) -> Selector {
        Selector {
            profile: profile
                .map(|p| p.for_geometry(geometry))
                .unwrap_or_default(),
            geometry,
            failed: HashSet::new(),
        }
    }

    /// A selector from the profile file named by [`PROFILE_ENV`], if set.
    /// A file that cannot be read or parsed gives one warning (naming the
    /// file and line) and the built-in defaults.
    pub fn from_env(geometry: Geometry) -> (Selector, Option<String>) {
        let Ok(file) = std::env::var(PROFILE_ENV) else {
            return (Selector::new(None, geometry), None);
        };
        match std::fs::read_to_string(&file) {
            Err(e) => (
                Selector::new(None, geometry),
                Some(format!(
                    "onesided: profile {file}: {e}; using the built-in defaults"
                )),
            ),
            Ok(text) => match Profile::parse(&text, &file) {
                Ok(profile) => (Selector::new(Some(&profile), geometry), None),
                Err(e) => (
                    Selector::new(None, geometry),
                    Some(format!("onesided: {e}; using the built-in defaults")),
                ),
            },
        }
    }

    /// The profile in use (filtered, with what monitoring added).
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The algorithm for a call of `collective` on `bytes` per rank of
    /// `element`: the profile's fastest estimate among the algorithms that
    /// have not failed (and keep the rank order when the operation is not
    /// commutative; run nonblocking when the call is), else the built-in
    /// default (`shared` when every member is on one host), else the first
    /// such algorithm. `None` when none is left.
    pub fn choose(
        &self,
        collective: Collective,
        element: &str,
        bytes: u64,
        commutative: bool,
        blocking: bool,
    ) -> Option<Algorithm> {
        let usable: Vec<Algorithm> = self
            .usable(collective, blocking)
            .filter(|a| commutative || !reorders(*a))
            .collect();
        if let Some(best) = self.profile.choose(element, bytes, &usable) {
            return Some(best);
        }
        let one_host = self.geometry.ranks_per_host >= self.geometry.ranks;
        let default = if one_host {
            Algorithm::shared(collective)
        } else {
            default_algorithm(collective, bytes, commutative, self.geometry.ranks)
        };
        if usable.contains(&default) {
            return Some(default);
        }
        usable.first().copied()
    }

    /// The algorithms of `collective` that have not failed (and run
    /// nonblocking unless `blocking`), in [`Algorithm::all`] order.
    fn usable(
        &self,
        collective: Collective,
        blocking: bool,
    ) -> impl Iterator<Item = Algorithm> + '_ {
        Algorithm::all(collective)
            .iter()
            .copied()
            .filter(move |a| !self.failed.contains(a))
            .filter(move |a| blocking || !blocking_only(*a))
    }

    /// For calls whose sizes differ per rank, which cannot choose by size:
    /// `shared` when every member is on one host, else the first algorithm
    /// of `collective` that has not failed (and runs nonblocking unless
    /// `blocking`).
    pub fn first(&self, collective: Collective, blocking: bool) -> Option<Algorithm> {
        let one_host = self.geometry.ranks_per_host >= self.geometry.ranks;
        let shared = self.usable(collective, blocking).find(|a| a.is_shared());
        shared
            .filter(|_| one_host)
            .or_else(|| self.usable(collective, blocking).next())
    }

    /// The algorithms that failed here.
    pub fn failures(&self) -> impl Iterator<Item = Algorithm> + '_ {
        self.failed.iter().copied()
    }

    /// Monitoring: a call of `algorithm` took `us` microseconds.
    pub fn observe(&mut self, algorithm: Algorithm, element: &str, bytes: u64, us: f64) {
        self.profile.record(
            algorithm.collective(),
            algorithm.name(),
            self.geometry,
            element,
            bytes,
            us,
        );
    }

    /// `algorithm` failed during a call: it is never chosen again (its
    /// entries leave the profile); the call goes on with
    /// [`Selector::choose`]'s next answer.
    pub fn failed(&mut self, algorithm: Algorithm) {
        self.profile
            .remove(algorithm.collective(), algorithm.name());
        self.failed.insert(algorithm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two hosts: the defaults by size apply.
    fn g() -> Geometry {
        Geometry {
            ranks: 4,
            ranks_per_host: 2,
        }
    }

    #[test]
    fn defaults_by_size_and_commutativity() {
        let s = Selector::new(None, g());
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 8, true, false),
            Some(Allreduce::RecursiveDoubling.into())
        );
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 1 << 20, true, false),
            Some(Allreduce::Ring.into())
        );
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 1 << 20, false, false),
            Some(Allreduce::RecursiveDoubling.into())
        );
        assert_eq!(
            s.choose(Collective::Bcast, "bytes", 1 << 20, true, false),
            Some(Bcast::Binomial.into()),
            "4 ranks"
        );
        let eight = Selector::new(
            None,
            Geometry {
                ranks: 8,
                ranks_per_host: 2,
            },
        );
        assert_eq!(
            eight.choose(Collective::Bcast, "bytes", 1 << 20, true, false),
            Some(Bcast::ScatterAllgather.into())
        );
        // On one host, calls go through shared memory.
        let one_host = Selector::new(
            None,
            Geometry {
                ranks: 4,
                ranks_per_host: 4,
            },
        );
        for blocking in [true, false] {
            assert_eq!(
                one_host.choose(Collective::Allreduce, "f64", 8, false, blocking),
                Some(Allreduce::Shared.into())
            );
        }
        for c in Collective::ALL {
            for bytes in [0, 8, LARGE, 1 << 25] {
                for (commutative, ranks) in [(true, 2), (false, 2), (true, 8), (false, 16)] {
                    let d = default_algorithm(c, bytes, commutative, ranks);
                    assert_eq!(d.collective(), c, "{d}");
                    assert!(commutative || !reorders(d), "{d}");
                }
            }
        }
    }

    #[test]
    fn the_profile_decides_and_failures_fall_back() {
        let text = "onesided-profile 1
allreduce ring 4 4 f64 8 1.0
allreduce recursive_doubling 4 4 f64 8 2.0
allreduce hypercube 4 4 f64 0 0.5
";
        // (An algorithm this library does not have is never chosen.)
        let p = Profile::parse(text, "p").unwrap();
        let mut s = Selector::new(Some(&p), g());
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 8, true, false),
            Some(Allreduce::Ring.into())
        );
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 8, false, false),
            Some(Allreduce::RecursiveDoubling.into()),
            "ring reorders"
        );
        s.failed(Allreduce::Ring.into());
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 8, true, false),
            Some(Allreduce::RecursiveDoubling.into())
        );
        s.failed(Allreduce::RecursiveDoubling.into());
        s.failed(Allreduce::Rabenseifner.into());
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 8, true, true),
            Some(Allreduce::Shared.into())
        );
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 8, true, false),
            Some(Allreduce::Shared.into()),
        );
        let q = Profile::parse(
            "onesided-profile 1\nalltoall onesided 4 2 bytes 8 0.1\n",
            "q",
        )
        .unwrap();
        let fastest = Selector::new(Some(&q), g());
        assert_eq!(
            fastest.choose(Collective::Alltoall, "bytes", 8, true, true),
            Some(Alltoall::OneSided.into())
        );
        assert_eq!(
            fastest.choose(Collective::Alltoall, "bytes", 8, true, false),
            Some(Alltoall::Linear.into()),
            "no nonblocking one-sided alltoall"
        );
        s.failed(Allreduce::Shared.into());
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 8, true, false),
            None,
            "all failed"
        );
        // Monitoring moves the choice.
        let mut s = Selector::new(Some(&p), g());
        for _ in 0..20 {
            s.observe(Allreduce::Ring.into(), "f64", 8, 10.0);
        }
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 8, true, false),
            Some(Allreduce::RecursiveDoubling.into())
        );
    }

    #[test]
    fn a_bad_profile_file_warns_once_and_uses_defaults() {
        let dir = std::env::temp_dir().join(format!("onesided-select-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("bad.profile");
        std::fs::write(&bad, "onesided-profile 1\nallreduce ring 4 4\n").unwrap();
        // The environment is process-wide: only this test touches the
        // variable; it sets, reads and restores it.
        let old = std::env::var(PROFILE_ENV).ok();
        std::env::set_var(PROFILE_ENV, &bad);
        let (s, warning) = Selector::from_env(g());
        let warning = warning.unwrap();
        assert!(warning.contains("bad.profile line 2"), "{warning}");
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 8, true, false),
            Some(Allreduce::RecursiveDoubling.into())
        );
        std::env::set_var(PROFILE_ENV, dir.join("missing.profile"));
        assert!(Selector::from_env(g())
            .1
            .unwrap()
            .contains("missing.profile"));
        match old {
            Some(v) => std::env::set_var(PROFILE_ENV, v),
            None => std::env::remove_var(PROFILE_ENV),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
