//! The model of onesided at scale (`onesided-model`): per process, the
//! messages and time of every operation of `onesided-bench scale` and of
//! every collective at a few sizes, for p = 2 to 16384, beside what
//! MPICH's documented choices cost on the same network. Pure.
//!
//! Messages come from the protocols' stated costs in p
//! (`docs/design.md`, "Cost in p": [`scale_messages`], exact where the design
//! states them exactly, else a bound) and, for collectives, from the pure
//! schedules themselves (the most any rank sends). Times come from the
//! alpha-beta-gamma model of `onesided_collectives::cost` under a
//! [`Network`]: given in a file (`benches/models/*.toml`), fitted to a
//! profile of `onesided-tune`, or built in.

use onesided_collectives::algorithm::{
    Allgather, Allreduce, Alltoall, Barrier, Bcast, Gather, Reduce, ReduceScatter, Scatter,
};
use onesided_collectives::cost::{self, Cost, Params};
use onesided_collectives::profile::Entry;
use onesided_collectives::schedule::algorithms;
use onesided_collectives::select::default_algorithm;
use onesided_collectives::{Algorithm, Collective, Profile};

/// A network's parameters and where they come from.
#[derive(Debug, Clone, PartialEq)]
pub struct Network {
    /// Its name.
    pub name: String,
    /// Where the figures come from.
    pub source: String,
    /// The model's parameters.
    pub params: Params,
}

/// The file form of a [`Network`] (`benches/models/*.toml`).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NetworkFile {
    name: String,
    source: String,
    latency_us: f64,
    bandwidth_gb_s: f64,
    reduce_gb_s: f64,
    overhead_us: f64,
}

impl Network {
    /// The built-in parameters across hosts.
    pub fn builtin() -> Network {
        Network {
            name: "built-in".into(),
            source: "onesided_collectives::cost::Params::NETWORK".into(),
            params: Params::NETWORK,
        }
    }

    /// A network from its file's text.
    ///
    /// # Errors
    /// What is malformed or not positive, in words.
    pub fn parse(text: &str) -> Result<Network, String> {
        let f: NetworkFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let all = [f.latency_us, f.bandwidth_gb_s, f.reduce_gb_s, f.overhead_us];
        if all.iter().any(|v| !v.is_finite() || *v < 0.0)
            || f.bandwidth_gb_s == 0.0
            || f.reduce_gb_s == 0.0
        {
            return Err("every figure must be a positive number".into());
        }
        // GB/s to microseconds a byte: 1e9 bytes a second.
        Ok(Network {
            name: f.name,
            source: f.source,
            params: Params {
                alpha: f.latency_us,
                beta: 1e-3 / f.bandwidth_gb_s,
                gamma: 1e-3 / f.reduce_gb_s,
                o: f.overhead_us,
            },
        })
    }
}

/// A message count: as the design states it, exactly or as a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// Exactly this many.
    Exact(u64),
    /// At most this many.
    AtMost(u64),
}

impl Count {
    /// The number.
    pub fn value(self) -> u64 {
        match self {
            Count::Exact(v) | Count::AtMost(v) => v,
        }
    }

    /// Whether `measured` agrees: equal to an exact count, within a bound.
    pub fn admits(self, measured: u64) -> bool {
        match self {
            Count::Exact(v) => measured == v,
            Count::AtMost(v) => measured <= v,
        }
    }
}

/// ceil(log2 p).
pub fn log2_ceil(p: u32) -> u64 {
    u64::from(p.max(1).next_power_of_two().trailing_zeros())
}

/// What a rank sends in one of `onesided-bench scale`'s operations, the
/// most of any rank, as a function of p, with every rank a host of its
/// own (the provider path; on one host the windows' pushes vanish).
pub fn scale_messages(op: &str, p: u32) -> Option<Count> {
    let l = log2_ceil(p);
    let most = |a: Algorithm| Count::Exact(collective_messages(a, p, 8));
    Some(match op {
        // The start's allgather of addresses: ceil(log2 p) rounds.
        "init" => Count::Exact(l),
        // At most 4 description pushes, and the release's barrier.
        "window_create_free" | "allocate_free" => Count::AtMost(2 * l + 4),
        "window_first_over_exposure" => Count::AtMost(4),
        "window_recreate_free" => Count::Exact(0),
        "dynamic_attach_detach" => Count::AtMost(l + 16),
        // Lock words are atomics, not messages.
        "lock_all_get_unlock_all" | "lock_exclusive_contended" => Count::Exact(0),
        "ibarrier" => Count::Exact(l),
        "barrier" => most(chosen(Collective::Barrier, p, 0)),
        "allreduce_8" => most(chosen(Collective::Allreduce, p, 8)),
        "bcast_8" => most(chosen(Collective::Bcast, p, 8)),
        "allgather_8" => most(chosen(Collective::Allgather, p, 8)),
        // Blocks for the two neighbours only (one at 2 ranks): pairwise,
        // nothing sent for the empty ones.
        "alltoallv_neighbours" => Count::Exact(u64::from(p.min(3) - 1)),
        // A ping a period (100 ms) to the ring successor.
        "reducer_idle_1s" => Count::AtMost(12),
        "spawn_join_1" => Count::AtMost(l + 1),
        "join_init" => Count::Exact(1),
        "finalize_after_growth" => Count::Exact(log2_ceil(p + 1)),
        _ => return None,
    })
}

/// The operations of `onesided-bench scale` the model counts.
pub const SCALE_OPS: [&str; 18] = [
    "init",
    "window_create_free",
    "allocate_free",
    "window_first_over_exposure",
    "window_recreate_free",
    "dynamic_attach_detach",
    "lock_all_get_unlock_all",
    "lock_exclusive_contended",
    "ibarrier",
    "barrier",
    "allreduce_8",
    "bcast_8",
    "allgather_8",
    "alltoallv_neighbours",
    "reducer_idle_1s",
    "spawn_join_1",
    "join_init",
    "finalize_after_growth",
];

/// The time of a scale operation at p under `params`: its rounds of
/// small messages (a window's release is not waited for: its creation
/// and free cost its pushes' injections), and MPICH's counterpart where
/// it has one (a window: an allgather of the members' descriptions and a
/// barrier at free; barriers and a small allreduce as MPICH chooses).
pub fn scale_time(op: &str, p: u32, params: &Params) -> Option<(f64, Option<f64>)> {
    let l = log2_ceil(p) as f64;
    let a = params.alpha;
    let time = |alg: Algorithm, n: u64| cost::cost(alg, p, n).map_or(0.0, |c| c.time(params));
    let mpich = |c: Collective, n: u64| time(mpich_choice(c, p, n), n);
    // A collective as each side chooses it.
    let both = |c: Collective, n: u64| (time(chosen(c, p, n), n), Some(mpich(c, n)));
    let window = || mpich(Collective::Allgather, 32) + mpich(Collective::Barrier, 0);
    Some(match op {
        "init" => (l * a, None),
        "window_create_free" | "allocate_free" => (
            f64::from(p.saturating_sub(1).min(4)) * params.o,
            Some(window()),
        ),
        "window_recreate_free" => (0.0, Some(window())),
        "ibarrier" => (l * a, Some(mpich(Collective::Barrier, 0))),
        "barrier" => both(Collective::Barrier, 0),
        "allreduce_8" => both(Collective::Allreduce, 8),
        "bcast_8" => both(Collective::Bcast, 8),
        "allgather_8" => both(Collective::Allgather, 8),
        "spawn_join_1" => (2.0 * l * a, None),
        "finalize_after_growth" => (
            log2_ceil(p + 1) as f64 * a,
            Some(mpich(Collective::Barrier, 0)),
        ),
        _ => return None,
    })
}

/// onesided's choice without a profile across hosts.
pub fn chosen(collective: Collective, p: u32, bytes: u64) -> Algorithm {
    default_algorithm(collective, bytes, true, p)
}

/// The most messages any rank of `p` sends in `algorithm` on `bytes` per
/// rank (every rank's schedule up to 64 ranks; beyond, ranks 0, 1, p/2
/// and p - 1, which the algorithms' symmetry makes the extremes).
pub fn collective_messages(algorithm: Algorithm, p: u32, bytes: u64) -> u64 {
    let ranks: Vec<u32> = if p <= 64 {
        (0..p).collect()
    } else {
        vec![0, 1, p / 2, p - 1]
    };
    if algorithm == Alltoall::OneSided.into() {
        // Its pairwise exchange of where the blocks lie, and the free's
        // barrier; the data moves by RMA reads, no message.
        return u64::from(p - 1) + log2_ceil(p);
    }
    let count = bytes.max(1) as usize;
    (ranks.into_iter())
        .filter_map(|me| algorithms::uniform(algorithm, p, me, count))
        .map(|s| s.messages().filter(|m| m.3).count() as u64)
        .max()
        .unwrap_or(0)
}

/// MPICH's documented choice of algorithm (its defaults, `MPIR_CVAR_*`
/// of MPICH 4 and 5) for `bytes` per rank at `p`, in onesided's terms.
pub fn mpich_choice(collective: Collective, p: u32, bytes: u64) -> Algorithm {
    let pow2 = p.is_power_of_two();
    match collective {
        Collective::Barrier => Barrier::Dissemination.into(),
        // BCAST_SHORT_MSG_SIZE 12288, BCAST_MIN_PROCS 8, LONG 524288.
        Collective::Bcast if bytes < 12288 || p < 8 => Bcast::Binomial.into(),
        Collective::Bcast if bytes < 524_288 && pow2 => Bcast::ScatterDoubling.into(),
        Collective::Bcast => Bcast::ScatterAllgather.into(),
        // REDUCE_SHORT_MSG_SIZE 2048.
        Collective::Reduce if bytes <= 2048 => Reduce::Binomial.into(),
        Collective::Reduce => Reduce::ReduceScatterGather.into(),
        // ALLREDUCE_SHORT_MSG_SIZE 2048.
        Collective::Allreduce if bytes <= 2048 => Allreduce::RecursiveDoubling.into(),
        Collective::Allreduce => Allreduce::Rabenseifner.into(),
        Collective::Gather => Gather::Binomial.into(),
        Collective::Scatter => Scatter::Binomial.into(),
        // ALLGATHER_SHORT_MSG_SIZE 81920, LONG 524288 (of the total).
        Collective::Allgather => {
            let total = bytes * u64::from(p);
            if total < 524_288 && pow2 {
                Allgather::RecursiveDoubling.into()
            } else if total < 81920 {
                Allgather::Bruck.into()
            } else {
                Allgather::Ring.into()
            }
        }
        // ALLTOALL_SHORT_MSG_SIZE 256, MIN_PROCS 8, MEDIUM 32768.
        Collective::Alltoall if bytes <= 256 && p >= 8 => Alltoall::Bruck.into(),
        Collective::Alltoall if bytes <= 32768 => Alltoall::Linear.into(),
        Collective::Alltoall => Alltoall::Pairwise.into(),
        // REDUCE_SCATTER_COMMUTATIVE_LONG_MSG_SIZE 524288 (of the total).
        Collective::ReduceScatter if bytes * u64::from(p) < 524_288 => {
            ReduceScatter::RecursiveHalving.into()
        }
        Collective::ReduceScatter => ReduceScatter::Pairwise.into(),
    }
}

/// One collective at one size and p: onesided's choice and MPICH's.
/// (onesided's is the cheapest of its algorithms by the same formulas:
/// within 1.1x of its best, and no slower than MPICH's, by construction.)
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The collective.
    pub collective: Collective,
    /// Processes.
    pub p: u32,
    /// Bytes per rank.
    pub bytes: u64,
    /// onesided's choice, its time and messages.
    pub ours: (Algorithm, f64, u64),
    /// MPICH's choice and its time.
    pub mpich: (Algorithm, f64),
}

/// The model at one point (onesided choosing by `params`, as a job
/// without a profile of this geometry does).
pub fn point(collective: Collective, p: u32, bytes: u64, params: &Params) -> Point {
    let time =
        |a: Algorithm| cost::cost(a, p, bytes).map_or(f64::INFINITY, |c: Cost| c.time(params));
    let candidates: Vec<Algorithm> = Algorithm::all(collective)
        .iter()
        .copied()
        .filter(|a| !a.is_shared())
        .collect();
    let ours = cost::cheapest(&candidates, p, bytes, params).unwrap_or(candidates[0]);
    let mpich = mpich_choice(collective, p, bytes);
    Point {
        collective,
        p,
        bytes,
        ours: (ours, time(ours), collective_messages(ours, p, bytes)),
        mpich: (mpich, time(mpich)),
    }
}

/// The sizes the model tables: 8 B, 64 KiB and 1 MiB per rank.
pub const SIZES: [u64; 3] = [8, 64 << 10, 1 << 20];

/// p = 2, 4, ... up to `max` (a power of two at most 2^16).
pub fn counts(max: u32) -> Vec<u32> {
    (1..=16)
        .map(|k| 1u32 << k)
        .take_while(|&p| p <= max)
        .collect()
}

/// One measured point of a profile beside the model: the fastest
/// algorithm measured, the model's choice among those measured and what
/// it measured, and the model's time for that choice.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The collective.
    pub collective: Collective,
    /// Bytes per rank.
    pub bytes: u64,
    /// The fastest measured, and its time.
    pub best: (String, f64),
    /// The model's choice, its measured time and its predicted time.
    pub chosen: (Algorithm, f64, f64),
}

/// The model against `profile`'s points of one geometry (the first
/// entry's; `f64` and `bytes` elements): at each point, which algorithm
/// the model picks among those measured there under `params`, how it did
/// against the fastest, and the predicted time against the measured one.
pub fn check(profile: &Profile, params: &Params) -> Vec<Checked> {
    let Some(first) = profile.entries().first() else {
        return Vec::new();
    };
    let geometry = first.geometry;
    let here: Vec<&Entry> = (profile.entries().iter())
        .filter(|e| e.geometry == geometry && (e.element == "f64" || e.element == "bytes"))
        .collect();
    let mut keys: Vec<(Collective, u64)> = here.iter().map(|e| (e.collective, e.bytes)).collect();
    keys.sort();
    keys.dedup();
    let p = geometry.ranks;
    keys.into_iter()
        .filter_map(|(c, bytes)| {
            let points: Vec<&&Entry> = (here.iter())
                .filter(|e| e.collective == c && e.bytes == bytes)
                .collect();
            let best = points.iter().min_by(|a, b| a.us.total_cmp(&b.us))?;
            let measured = |a: Algorithm| {
                points
                    .iter()
                    .find(|e| e.algorithm == a.name())
                    .map(|e| e.us)
            };
            let candidates: Vec<Algorithm> = (points.iter())
                .filter_map(|e| Algorithm::parse(c, &e.algorithm))
                .filter(|a| !a.is_shared())
                .collect();
            let chosen = cost::cheapest(&candidates, p, bytes, params)?;
            let predicted = cost::cost(chosen, p, bytes)?.time(params);
            Some(Checked {
                collective: c,
                bytes,
                best: (best.algorithm.clone(), best.us),
                chosen: (chosen, measured(chosen)?, predicted),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checking_a_profile_names_the_measured_best_and_the_models_choice() {
        let text = "onesided-profile 1
allreduce recursive_doubling 4 1 f64 8 10.0
allreduce ring 4 1 f64 8 30.0
allreduce recursive_doubling 4 1 f64 1048576 900.0
allreduce ring 4 1 f64 1048576 400.0
bcast binomial 8 1 bytes 8 1.0
";
        let profile = Profile::parse(text, "p").unwrap();
        let got = check(&profile, &Params::NETWORK);
        assert_eq!(got.len(), 2, "the first entry's geometry only");
        assert_eq!(got[0].best, ("recursive_doubling".to_string(), 10.0));
        assert_eq!(got[0].chosen.0, Allreduce::RecursiveDoubling.into());
        assert_eq!(got[0].chosen.1, 10.0);
        assert_eq!(
            got[1].chosen.0,
            Allreduce::Ring.into(),
            "the cheaper of the two measured"
        );
    }

    #[test]
    fn a_network_file_reads_as_parameters() {
        let net = Network::parse(
            "name = \"x\"\nsource = \"y\"\nlatency_us = 1.0\nbandwidth_gb_s = 25.0\nreduce_gb_s = 10.0\noverhead_us = 0.1\n",
        )
        .unwrap();
        assert_eq!(net.params.alpha, 1.0);
        assert!((net.params.beta - 4e-5).abs() < 1e-12);
        assert!(Network::parse("name = \"x\"").is_err());
        let shipped = include_str!("../models/hdr-infiniband.toml");
        assert!(Network::parse(shipped).is_ok());
    }

    #[test]
    fn small_collectives_send_a_logarithmic_number_of_messages() {
        for p in [2u32, 32, 64, 1024, 16384] {
            let l = log2_ceil(p);
            for c in [
                Collective::Barrier,
                Collective::Bcast,
                Collective::Allreduce,
                Collective::Allgather,
            ] {
                let m = collective_messages(chosen(c, p, 8), p, 8);
                assert!(m <= l + 1, "{c:?} at {p}: {m}");
            }
        }
        // An alltoallv with blocks for two neighbours: the schedules send
        // nothing for empty blocks (checked in onesided-collectives).
        assert_eq!(scale_messages("ibarrier", 32), Some(Count::Exact(5)));
        assert_eq!(
            scale_messages("finalize_after_growth", 32),
            Some(Count::Exact(6))
        );
    }

    #[test]
    fn at_scale_windows_cost_less_than_mpichs_allgather_and_barrier() {
        let hdr = Network::parse(include_str!("../models/hdr-infiniband.toml")).unwrap();
        for p in counts(16384) {
            // A window costs its (at most 4) pushes' injections against
            // MPICH's allgather and barrier of 2 ceil(log2 p) rounds: 10x
            // from 16 ranks on (6.7x at 4, 7.5x at 8 with these figures).
            let (ours, theirs) = scale_time("window_create_free", p, &hdr.params).unwrap();
            let want = if p >= 16 { 10.0 } else { 5.0 };
            assert!(theirs.unwrap() >= want * ours, "window at {p}");
        }
    }
}
