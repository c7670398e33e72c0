//! Choosing each call's algorithm (docs/spec/algorithm-selection.md):
//! the job's profile where it measured the job's very geometry, else
//! `shared` on one host, else the cheapest by the cost model in p and n
//! ([`crate::cost`]: its parameters fitted to the profile's points of
//! every geometry, or built in); monitoring of the chosen algorithms, and
//! removal of algorithms that failed. An algorithm through shared memory
//! is never chosen for members on several hosts. Pure code apart from reading the profile
//! file named by [`PROFILE_ENV`]: [`Selector`] chooses from a profile,
//! and a Comm's `Selection` (its choices, observations, forced and
//! injected algorithms, remembered choices) is driven by the Comm.

use std::collections::HashSet;

use onesided_fabric::fnv::FastMap;

use crate::algorithm::{Algorithm, Allreduce, Alltoall, Collective, Reduce, ReduceScatter};
use crate::cost::{self, Params};
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

/// The built-in choice for a group of `ranks` across hosts without a
/// profile: the cheapest by its cost formula under the built-in network
/// parameters ([`cost::Params::NETWORK`]); a non-commutative reduction
/// keeps the rank order.
pub fn default_algorithm(
    collective: Collective,
    bytes: u64,
    commutative: bool,
    ranks: u32,
) -> Algorithm {
    let candidates: Vec<Algorithm> = Algorithm::all(collective)
        .iter()
        .copied()
        .filter(|a| commutative || !reorders(*a))
        .collect();
    cost::cheapest(&candidates, ranks, bytes, &Params::NETWORK)
        .unwrap_or_else(|| Algorithm::shared(collective))
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
            | Algorithm::ReduceScatter(ReduceScatter::Ring | ReduceScatter::RecursiveHalving)
    )
}

/// The selection state of one process.
#[derive(Debug, Clone)]
pub struct Selector {
    /// The profile's entries of this very geometry (and what monitoring
    /// adds).
    profile: Profile,
    /// The cost model's parameters: fitted to the profile's points of
    /// every geometry of this kind (one host or several), else built in.
    params: Params,
    geometry: Geometry,
    failed: HashSet<Algorithm>,
}

impl Selector {
    /// A selector for `geometry` from `profile` (`None`: the built-in
    /// model only).
    pub fn new(profile: Option<&Profile>, geometry: Geometry) -> Selector {
        let one_host = geometry.ranks_per_host >= geometry.ranks;
        let same_kind = |g: Geometry| (g.ranks_per_host >= g.ranks) == one_host;
        let fitted =
            profile.and_then(|p| cost::fit(p.entries().iter().filter(|e| same_kind(e.geometry))));
        let builtin = if one_host {
            Params::HOST
        } else {
            Params::NETWORK
        };
        Selector {
            profile: profile
                .map(|p| p.for_geometry(geometry))
                .unwrap_or_default(),
            params: fitted.unwrap_or(builtin),
            geometry,
            failed: HashSet::new(),
        }
    }

    /// The cost model's parameters in use.
    pub fn params(&self) -> Params {
        self.params
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
    /// `element`, among those that have not failed (and keep the rank
    /// order when the operation is not commutative; run nonblocking when
    /// the call is; run through shared memory only when every member is
    /// on one host): the profile's fastest estimate where it measured this
    /// geometry, else `shared` on one host, else the cheapest by the cost
    /// model, else the first such algorithm. `None` when none is left.
    pub fn choose(
        &self,
        collective: Collective,
        element: &str,
        bytes: u64,
        commutative: bool,
        blocking: bool,
    ) -> Option<Algorithm> {
        let one_host = self.geometry.ranks_per_host >= self.geometry.ranks;
        let usable: Vec<Algorithm> = self
            .usable(collective, blocking)
            .filter(|a| commutative || !reorders(*a))
            .filter(|a| one_host || !a.is_shared())
            .collect();
        if let Some(best) = self.profile.choose(element, bytes, &usable) {
            return Some(best);
        }
        let shared = Algorithm::shared(collective);
        if one_host && usable.contains(&shared) {
            return Some(shared);
        }
        cost::cheapest(&usable, self.geometry.ranks, bytes, &self.params)
            .or_else(|| usable.first().copied())
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

/// What a call's algorithm is chosen by, and monitoring records it under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub(crate) collective: Collective,
    pub(crate) element: &'static str,
    /// Bytes per rank, the same on every rank.
    pub(crate) bytes: u64,
    pub(crate) commutative: bool,
    /// Chosen by size (else: the first algorithm, unless forced).
    pub(crate) by_size: bool,
    /// A blocking call (nonblocking ones run schedules only).
    pub(crate) blocking: bool,
}

impl Shape {
    /// The same, for a blocking call or not.
    pub(crate) fn blocking(self, blocking: bool) -> Shape {
        Shape { blocking, ..self }
    }

    /// A blocking call chosen by its `bytes` per rank of `element`.
    pub(crate) fn sized(
        collective: Collective,
        element: &'static str,
        bytes: u64,
        commutative: bool,
    ) -> Shape {
        Shape {
            collective,
            element,
            bytes,
            commutative,
            by_size: true,
            blocking: true,
        }
    }

    /// What a choice by size depends on. The element by its name's
    /// address and length: names are static strings, so those are one
    /// name (a name at two addresses only takes two entries), and hashing
    /// two words beats hashing text.
    fn key(self) -> ChoiceKey {
        let element = (self.element.as_ptr() as usize, self.element.len());
        let (c, b) = (self.collective, self.bytes);
        (c, element, b, self.commutative, self.blocking)
    }
}

/// What a choice by size depends on: collective, element, bytes,
/// commutative, blocking.
type ChoiceKey = (Collective, (usize, usize), u64, bool, bool);

/// Choices by size remembered at most (calls repeat few shapes).
const REMEMBERED: usize = 4096;

/// A Comm's selection, pure: the choices every rank makes alike (the
/// loaded [`Selector`] less the algorithms that failed at a call's start
/// everywhere), what this rank observed (monitoring, until
/// [`Selection::agreed`]), the algorithms forced and injected to fail, the
/// choices by size remembered, and the algorithm each collective last
/// started. The Comm drives it: [`Selection::pick`], then the plan, then
/// [`Selection::started`] or [`Selection::refused`].
#[derive(Debug, Clone)]
pub(crate) struct Selection {
    choices: Selector,
    observed: Selector,
    /// Algorithms made to fail ([`FAULT_ENV`]).
    faults: HashSet<Algorithm>,
    forced: [Option<Algorithm>; Collective::ALL.len()],
    /// The algorithm the last call of each collective started.
    ran: [Option<Algorithm>; Collective::ALL.len()],
    /// Choices by size made so far, and the last per collective.
    chosen: FastMap<ChoiceKey, Algorithm>,
    last: [Option<(ChoiceKey, Algorithm)>; Collective::ALL.len()],
}

impl Selection {
    /// Choosing by `choices`, with `faults` made to fail.
    pub(crate) fn new(choices: Selector, faults: HashSet<Algorithm>) -> Selection {
        Selection {
            observed: choices.clone(),
            choices,
            faults,
            forced: [None; Collective::ALL.len()],
            ran: [None; Collective::ALL.len()],
            chosen: FastMap::default(),
            last: [None; Collective::ALL.len()],
        }
    }

    /// The choices with this rank's observations folded in.
    pub(crate) fn observed(&self) -> &Selector {
        &self.observed
    }

    /// Forces `algorithm` on every later call of `collective` (`None`:
    /// chooses again).
    pub(crate) fn force(&mut self, collective: Collective, algorithm: Option<Algorithm>) {
        self.forced[collective as usize] = algorithm;
    }

    /// Whether calls of `collective` are forced.
    pub(crate) fn is_forced(&self, collective: Collective) -> bool {
        self.forced[collective as usize].is_some()
    }

    /// The algorithm a call of `shape` tries first: the forced one, unless
    /// it reorders a non-commutative reduction or is blocking only for a
    /// nonblocking call; else the choice by size or, where sizes differ
    /// per rank, the first algorithm left. `None` when none is left.
    pub(crate) fn pick(&mut self, shape: Shape) -> Option<Algorithm> {
        let c = shape.collective;
        match self.forced[c as usize] {
            Some(a)
                if (shape.commutative || !reorders(a)) && (shape.blocking || !blocking_only(a)) =>
            {
                Some(a)
            }
            _ if shape.by_size => self.by_size(shape),
            _ => self.choices.first(c, shape.blocking),
        }
    }

    /// The choice by size for `shape`, remembered until the choices
    /// change (a choice weighs every profile entry).
    fn by_size(&mut self, shape: Shape) -> Option<Algorithm> {
        let key = shape.key();
        let last = &mut self.last[shape.collective as usize];
        if let Some((k, a)) = *last {
            if k == key {
                return Some(a);
            }
        }
        if let Some(&a) = self.chosen.get(&key) {
            *last = Some((key, a));
            return Some(a);
        }
        let a = self.choices.choose(
            shape.collective,
            shape.element,
            shape.bytes,
            shape.commutative,
            shape.blocking,
        )?;
        if self.chosen.len() >= REMEMBERED {
            self.chosen.clear();
        }
        self.chosen.insert(key, a);
        *last = Some((key, a));
        Some(a)
    }

    /// Whether [`FAULT_ENV`] makes `algorithm` fail.
    pub(crate) fn injected(&self, algorithm: Algorithm) -> bool {
        !self.faults.is_empty() && self.faults.contains(&algorithm)
    }

    /// A call started `algorithm`.
    pub(crate) fn started(&mut self, algorithm: Algorithm) {
        self.ran[algorithm.collective() as usize] = Some(algorithm);
    }

    /// The algorithm the last call of `collective` started.
    pub(crate) fn last_started(&self, collective: Collective) -> Option<Algorithm> {
        self.ran[collective as usize]
    }

    /// `algorithm` failed at a call's start, as on every rank (its plan
    /// does not fit, it is injected, it needs what the Comm lacks): it
    /// leaves the choices and the call tries the next, unless it was
    /// forced (false: the call fails).
    pub(crate) fn refused(&mut self, algorithm: Algorithm) -> bool {
        if self.is_forced(algorithm.collective()) {
            return false;
        }
        self.choices.failed(algorithm);
        self.observed.failed(algorithm);
        self.forget();
        true
    }

    /// Monitoring: a call of `algorithm` on `shape` took `us`
    /// microseconds.
    pub(crate) fn observe(&mut self, shape: Shape, algorithm: Algorithm, us: f64) {
        (self.observed).observe(algorithm, shape.element, shape.bytes, us);
    }

    /// Monitoring: `algorithm` failed in flight on this rank; the choices
    /// change at the next agreement.
    pub(crate) fn failed(&mut self, algorithm: Algorithm) {
        self.observed.failed(algorithm);
    }

    /// The members agreed on `choices`: every call chooses by them.
    pub(crate) fn agreed(&mut self, choices: Selector) {
        self.observed = choices.clone();
        self.choices = choices;
        self.forget();
    }

    /// Forgets the remembered choices (the choices changed).
    fn forget(&mut self) {
        self.chosen.clear();
        self.last = [None; Collective::ALL.len()];
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
    fn without_a_profile_the_model_chooses_by_size_and_count() {
        let s = Selector::new(None, g());
        assert_eq!(s.params(), Params::NETWORK);
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 8, true, false),
            Some(Allreduce::RecursiveDoubling.into())
        );
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 1 << 20, true, false),
            Some(Allreduce::Rabenseifner.into())
        );
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 1 << 20, false, false),
            Some(Allreduce::RecursiveDoubling.into())
        );
        let at = |ranks| {
            let ranks_per_host = 1;
            Selector::new(
                None,
                Geometry {
                    ranks,
                    ranks_per_host,
                },
            )
        };
        // Scattered and gathered by doubling: 2 log2 p rounds, where the
        // ring's scatter_allgather takes p.
        let scattered = Some(crate::algorithm::Bcast::ScatterDoubling.into());
        let bcast = |ranks| at(ranks).choose(Collective::Bcast, "bytes", 1 << 20, true, false);
        assert_eq!(bcast(64), scattered);
        assert_eq!(bcast(16384), scattered);
        assert_eq!(
            at(64).choose(Collective::Bcast, "bytes", 8, true, false),
            Some(crate::algorithm::Bcast::Binomial.into())
        );
        assert_eq!(
            at(1000).choose(Collective::Allgather, "bytes", 8, true, false),
            Some(crate::algorithm::Allgather::Bruck.into())
        );
        // On one host, calls go through shared memory.
        let one_host = Selector::new(
            None,
            Geometry {
                ranks: 4,
                ranks_per_host: 4,
            },
        );
        assert_eq!(one_host.params(), Params::HOST);
        for blocking in [true, false] {
            assert_eq!(
                one_host.choose(Collective::Allreduce, "f64", 8, false, blocking),
                Some(Allreduce::Shared.into())
            );
        }
        for c in Collective::ALL {
            for bytes in [0, 8, 1 << 16, 1 << 25] {
                for (commutative, ranks) in [(true, 2), (false, 2), (true, 8), (false, 16384)] {
                    let d = default_algorithm(c, bytes, commutative, ranks);
                    assert_eq!(d.collective(), c, "{d}");
                    assert!(commutative || !reorders(d), "{d}");
                    assert!(!d.is_shared(), "{d}");
                }
            }
        }
    }

    #[test]
    fn a_geometry_not_measured_goes_by_the_model_fitted_to_the_profile() {
        // A one-host profile where shared wins: a job across hosts never
        // runs it, and takes its model from profiles across hosts only.
        let text = "onesided-profile 1
allreduce shared 4 4 f64 8 0.1
allreduce recursive_doubling 4 4 f64 8 50.0
";
        let p = Profile::parse(text, "p").unwrap();
        let s = Selector::new(Some(&p), g());
        assert_eq!(s.params(), Params::NETWORK, "no entry across hosts");
        assert_eq!(
            s.choose(Collective::Allreduce, "f64", 8, true, true),
            Some(Allreduce::RecursiveDoubling.into())
        );
        // Points across hosts at 2 and 4 ranks fix the parameters used at
        // 64: a latency of 100 us makes the ring's rounds cost.
        let mut text = String::from("onesided-profile 1\n");
        let slow = Params {
            alpha: 100.0,
            beta: 1.0e-3,
            gamma: 1.0e-3,
            o: 1.0,
        };
        for &a in Algorithm::all(Collective::Allreduce) {
            for ranks in [2, 4] {
                for bytes in [8u64, 65536, 1 << 20] {
                    if let Some(c) = cost::cost(a, ranks, bytes) {
                        let us = c.time(&slow);
                        text += &format!("allreduce {} {ranks} 1 f64 {bytes} {us}\n", a.name());
                    }
                }
            }
        }
        let p = Profile::parse(&text, "p").unwrap();
        let at = |ranks| {
            let geometry = Geometry {
                ranks,
                ranks_per_host: 1,
            };
            Selector::new(Some(&p), geometry)
        };
        let fitted = at(64).params();
        assert!((fitted.alpha - 100.0).abs() < 1e-6, "{fitted:?}");
        assert_eq!(
            at(64).choose(Collective::Allreduce, "f64", 1 << 20, true, true),
            cost::cheapest(Algorithm::all(Collective::Allreduce), 64, 1 << 20, &slow)
        );
    }

    #[test]
    fn the_profile_decides_and_failures_fall_back() {
        let text = "onesided-profile 1
allreduce ring 4 2 f64 8 1.0
allreduce recursive_doubling 4 2 f64 8 2.0
allreduce hypercube 4 2 f64 0 0.5
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
        // Shared memory does not reach another host: nothing is left.
        assert_eq!(s.choose(Collective::Allreduce, "f64", 8, true, true), None);
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

    fn allreduce(bytes: u64, commutative: bool, blocking: bool) -> Shape {
        let shape = Shape::sized(Collective::Allreduce, "f64", bytes, commutative);
        shape.blocking(blocking)
    }

    #[test]
    fn a_forced_algorithm_holds_where_it_keeps_the_call_correct() {
        let mut s = Selection::new(Selector::new(None, g()), HashSet::new());
        let ring = Algorithm::from(Allreduce::Ring);
        let doubling = Algorithm::from(Allreduce::RecursiveDoubling);
        assert_eq!(s.pick(allreduce(8, true, true)), Some(doubling));
        s.force(Collective::Allreduce, Some(ring));
        assert_eq!(s.pick(allreduce(8, true, true)), Some(ring));
        assert_eq!(
            s.pick(allreduce(8, false, true)),
            Some(doubling),
            "ring reorders"
        );
        // Forced, a failure at the start is the call's error.
        assert!(!s.refused(ring));
        assert_eq!(s.pick(allreduce(8, true, true)), Some(ring));
        s.force(Collective::Allreduce, None);
        assert_eq!(s.pick(allreduce(8, true, true)), Some(doubling));
        let one_sided = Algorithm::from(Alltoall::OneSided);
        s.force(Collective::Alltoall, Some(one_sided));
        let alltoall = Shape::sized(Collective::Alltoall, "bytes", 8, true);
        assert_eq!(s.pick(alltoall), Some(one_sided));
        assert_ne!(s.pick(alltoall.blocking(false)), Some(one_sided));
    }

    #[test]
    fn a_refused_algorithm_leaves_the_remembered_choices() {
        let mut s = Selection::new(Selector::new(None, g()), HashSet::new());
        let doubling = Algorithm::from(Allreduce::RecursiveDoubling);
        let shape = allreduce(8, true, true);
        assert_eq!(s.pick(shape), Some(doubling));
        assert_eq!(s.pick(shape), Some(doubling), "remembered");
        assert!(s.refused(doubling));
        let next = s.pick(shape).unwrap();
        assert_ne!(next, doubling);
        assert!(s.observed().failures().any(|a| a == doubling));
        s.started(next);
        assert_eq!(s.last_started(Collective::Allreduce), Some(next));
        assert_eq!(s.last_started(Collective::Bcast), None);
        // Sizes that differ per rank: the first left.
        let varying = Shape {
            by_size: false,
            ..Shape::sized(Collective::Allgather, "bytes", 0, true)
        };
        assert_eq!(
            s.pick(varying),
            Selector::new(None, g()).first(Collective::Allgather, true)
        );
    }

    #[test]
    fn observations_change_the_choices_only_when_agreed() {
        let text = "onesided-profile 1
allreduce ring 4 2 f64 8 1.0
allreduce recursive_doubling 4 2 f64 8 2.0
";
        let p = Profile::parse(text, "p").unwrap();
        let faults: HashSet<Algorithm> = [Allreduce::Rabenseifner.into()].into();
        let mut s = Selection::new(Selector::new(Some(&p), g()), faults);
        let ring = Algorithm::from(Allreduce::Ring);
        let doubling = Algorithm::from(Allreduce::RecursiveDoubling);
        assert!(s.injected(Allreduce::Rabenseifner.into()));
        assert!(!s.injected(ring));
        let shape = allreduce(8, true, true);
        assert_eq!(s.pick(shape), Some(ring));
        for _ in 0..20 {
            s.observe(shape, ring, 10.0);
        }
        s.failed(Allreduce::Shared.into());
        assert_eq!(s.pick(shape), Some(ring), "this rank's view alone");
        let observed = s.observed().clone();
        assert!(observed.failures().any(|a| a == Allreduce::Shared.into()));
        s.agreed(observed);
        assert_eq!(s.pick(shape), Some(doubling));
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
