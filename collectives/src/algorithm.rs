//! The collectives and the algorithms of each, as enums: one enum per
//! collective ([`Bcast`], [`Allreduce`], ...), so a plan is built by an
//! exhaustive match on its own collective's algorithms, and [`Algorithm`],
//! any of them, for what selection and monitoring handle alike. Names are
//! those of profiles (docs/spec/algorithm-selection.md); a name this
//! library does not have parses to `None` and is never chosen.

use std::fmt;

/// A collective operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Collective {
    /// `barrier`
    Barrier,
    /// `bcast`
    Bcast,
    /// `reduce`
    Reduce,
    /// `allreduce`
    Allreduce,
    /// `gather` (and `gatherv`)
    Gather,
    /// `scatter` (and `scatterv`)
    Scatter,
    /// `allgather` (and `allgatherv`)
    Allgather,
    /// `alltoall` (and `alltoallv`)
    Alltoall,
    /// `reduce_scatter`
    ReduceScatter,
}

impl Collective {
    /// Every collective.
    pub const ALL: [Collective; 9] = [
        Collective::Barrier,
        Collective::Bcast,
        Collective::Reduce,
        Collective::Allreduce,
        Collective::Gather,
        Collective::Scatter,
        Collective::Allgather,
        Collective::Alltoall,
        Collective::ReduceScatter,
    ];

    /// Its name in profiles.
    pub fn name(self) -> &'static str {
        match self {
            Collective::Barrier => "barrier",
            Collective::Bcast => "bcast",
            Collective::Reduce => "reduce",
            Collective::Allreduce => "allreduce",
            Collective::Gather => "gather",
            Collective::Scatter => "scatter",
            Collective::Allgather => "allgather",
            Collective::Alltoall => "alltoall",
            Collective::ReduceScatter => "reduce_scatter",
        }
    }

    /// The collective named `name` (the `v` variants share their
    /// collective's entries).
    pub fn from_name(name: &str) -> Option<Collective> {
        let base = match name {
            "gatherv" => "gather",
            "scatterv" => "scatter",
            "allgatherv" => "allgather",
            "alltoallv" => "alltoall",
            other => other,
        };
        Collective::ALL.into_iter().find(|c| c.name() == base)
    }
}

/// The algorithms of one collective: an enum of this module.
pub trait Algorithms: Copy + Eq + Into<Algorithm> + fmt::Debug + 'static {
    /// Their collective.
    const COLLECTIVE: Collective;
    /// Through shared memory (every member on one host).
    const SHARED: Self;
    /// Every one, the built-in default for small messages first, as
    /// [`Algorithm`]s.
    const ALL: &'static [Algorithm];
    /// `algorithm` when it is one of these.
    fn of(algorithm: Algorithm) -> Option<Self>;
}

macro_rules! algorithms {
    ($(
        $(#[$doc:meta])*
        $name:ident {
            $($(#[$vdoc:meta])* $variant:ident = $text:literal,)*
        }
    )*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            pub enum $name {
                $($(#[$vdoc])* $variant,)*
            }

            impl $name {
                /// Its name in profiles.
                pub fn name(self) -> &'static str {
                    match self {
                        $($name::$variant => $text,)*
                    }
                }
            }

            impl From<$name> for Algorithm {
                fn from(a: $name) -> Algorithm {
                    Algorithm::$name(a)
                }
            }

            impl Algorithms for $name {
                const COLLECTIVE: Collective = Collective::$name;
                const SHARED: $name = $name::Shared;
                const ALL: &'static [Algorithm] = &[$(Algorithm::$name($name::$variant),)*];
                fn of(algorithm: Algorithm) -> Option<$name> {
                    match algorithm {
                        Algorithm::$name(a) => Some(a),
                        _ => None,
                    }
                }
            }
        )*

        /// An algorithm of any collective.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Algorithm {
            $(
                #[doc = concat!("An algorithm of `", stringify!($name), "`.")]
                $name($name),
            )*
        }

        impl Algorithm {
            /// Its collective.
            pub fn collective(self) -> Collective {
                match self {
                    $(Algorithm::$name(_) => Collective::$name,)*
                }
            }

            /// Its name in profiles.
            pub fn name(self) -> &'static str {
                match self {
                    $(Algorithm::$name(a) => a.name(),)*
                }
            }

            /// Whether it runs through shared memory.
            pub fn is_shared(self) -> bool {
                match self {
                    $(Algorithm::$name(a) => a == $name::Shared,)*
                }
            }

            /// The algorithm of `collective` through shared memory.
            pub fn shared(collective: Collective) -> Algorithm {
                match collective {
                    $(Collective::$name => Algorithm::$name($name::Shared),)*
                }
            }

            /// Every algorithm of `collective`, the built-in default for
            /// small messages first.
            pub fn all(collective: Collective) -> &'static [Algorithm] {
                match collective {
                    $(Collective::$name => <$name as Algorithms>::ALL,)*
                }
            }
        }
    };
}

algorithms! {
    /// The algorithms of `barrier`.
    Barrier {
        /// Rounds of doubling distance: ceil(log2 n) rounds.
        Dissemination = "dissemination",
        /// Through shared memory.
        Shared = "shared",
    }
    /// The algorithms of `bcast`.
    Bcast {
        /// Along a binomial tree.
        Binomial = "binomial",
        /// Scatter, then ring allgather (large messages, many ranks).
        ScatterAllgather = "scatter_allgather",
        /// Binomial scatter, then recursive-doubling allgather: about
        /// 2 log2 n rounds (large messages at any count).
        ScatterDoubling = "scatter_doubling",
        /// The root sends to every rank (32 a round).
        Linear = "linear",
        /// Through shared memory.
        Shared = "shared",
    }
    /// The algorithms of `reduce`.
    Reduce {
        /// Along a binomial tree.
        Binomial = "binomial",
        /// Reduce-scatter, then gather at the root (commutative only).
        ReduceScatterGather = "reduce_scatter_gather",
        /// The root receives from every rank (32 a round).
        Linear = "linear",
        /// Through shared memory.
        Shared = "shared",
    }
    /// The algorithms of `allreduce`.
    Allreduce {
        /// Pairwise exchanges of doubling distance.
        RecursiveDoubling = "recursive_doubling",
        /// Reduce-scatter by halving, allgather by doubling (commutative
        /// only).
        Rabenseifner = "rabenseifner",
        /// Reduce-scatter and allgather around a ring (commutative only).
        Ring = "ring",
        /// Through shared memory.
        Shared = "shared",
    }
    /// The algorithms of `gather(v)`.
    Gather {
        /// Along a binomial tree.
        Binomial = "binomial",
        /// The root receives from every rank (32 a round).
        Linear = "linear",
        /// Through shared memory.
        Shared = "shared",
    }
    /// The algorithms of `scatter(v)`.
    Scatter {
        /// Along a binomial tree.
        Binomial = "binomial",
        /// The root sends to every rank (32 a round).
        Linear = "linear",
        /// Through shared memory.
        Shared = "shared",
    }
    /// The algorithms of `allgather(v)`.
    Allgather {
        /// Exchanges of doubling distance.
        RecursiveDoubling = "recursive_doubling",
        /// Bruck's: ceil(log2 n) rounds of doubling blocks.
        Bruck = "bruck",
        /// Around a ring.
        Ring = "ring",
        /// Through shared memory.
        Shared = "shared",
    }
    /// The algorithms of `alltoall(v)`.
    Alltoall {
        /// One exchange partner a round.
        Pairwise = "pairwise",
        /// Everything posted at once (in windows of 32 peers each way).
        Linear = "linear",
        /// Bruck's: ceil(log2 n) rounds of about half the blocks, packed
        /// (every block the same size; an alltoallv goes pairwise).
        Bruck = "bruck",
        /// RMA get from windows over copies of the inputs (blocking only).
        OneSided = "onesided",
        /// Through shared memory.
        Shared = "shared",
    }
    /// The algorithms of `reduce_scatter`.
    ReduceScatter {
        /// One exchange partner a round.
        Pairwise = "pairwise",
        /// Around a ring (commutative only).
        Ring = "ring",
        /// Recursive halving: ceil(log2 n) + 1 rounds (commutative only).
        RecursiveHalving = "recursive_halving",
        /// Through shared memory.
        Shared = "shared",
    }
}

impl Algorithm {
    /// The algorithm of `collective` named `name`; `None` for a name it
    /// does not have.
    pub fn parse(collective: Collective, name: &str) -> Option<Algorithm> {
        Algorithm::all(collective)
            .iter()
            .copied()
            .find(|a| a.name() == name)
    }
}

/// Its name in profiles.
impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_belong_to_their_collective() {
        for c in Collective::ALL {
            let all = Algorithm::all(c);
            assert!(all.iter().any(|a| a.is_shared()), "{c:?}");
            for &a in all {
                assert_eq!(a.collective(), c);
                assert_eq!(Algorithm::parse(c, a.name()), Some(a));
            }
        }
        assert_eq!(Algorithm::parse(Collective::Allreduce, "hypercube"), None);
        assert_eq!(Algorithm::parse(Collective::Barrier, "ring"), None);
        assert_eq!(Bcast::of(Allreduce::Ring.into()), None);
        assert_eq!(Bcast::of(Bcast::Linear.into()), Some(Bcast::Linear));
        assert_eq!(Algorithm::from(Alltoall::OneSided).to_string(), "onesided");
    }
}
