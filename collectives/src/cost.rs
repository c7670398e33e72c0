//! What each algorithm costs as a function of the process count `p` and
//! the message size `n` (bytes per rank, as [`crate::select`] counts
//! them: the whole vector of `bcast`, `reduce` and `allreduce`, a rank's
//! block of `gather`, `scatter`, `allgather` and `reduce_scatter`, a
//! pair's block of `alltoall`), in the alpha-beta-gamma model with an
//! injection overhead: along the slowest rank's path, `rounds` latencies
//! (alpha), `bytes` sent or received one after the other (beta), `combined`
//! bytes reduced (gamma) and `injections`, messages a rank handles beyond
//! one a round (o). Pure code.
//!
//! [`fit`] takes the parameters from a profile's measured points (every
//! geometry: the formulas carry the geometry), [`Params::NETWORK`] and
//! [`Params::HOST`] are the built-in ones, and [`cheapest`] is what
//! selection picks where the profile has not measured the job's very
//! geometry. The algorithms through shared memory have no formula: they
//! run on one host only, where they are the default.

use crate::algorithm::{
    Algorithm, Allgather, Allreduce, Alltoall, Barrier, Bcast, Gather, Reduce, ReduceScatter,
    Scatter,
};
use crate::profile::Entry;
use crate::schedule::algorithms::LINEAR_WINDOW;

/// The model's parameters, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// Per round: a message's latency.
    pub alpha: f64,
    /// Per byte moved.
    pub beta: f64,
    /// Per byte combined.
    pub gamma: f64,
    /// Per message a rank handles beyond one a round.
    pub o: f64,
}

impl Params {
    /// Built-in parameters across hosts: 2 us latency, 10 GB/s, combining
    /// at 5 GB/s, 0.5 us a message (an HPC network's order of magnitude).
    pub const NETWORK: Params = Params {
        alpha: 2.0,
        beta: 1.0e-4,
        gamma: 2.0e-4,
        o: 0.5,
    };

    /// Built-in parameters on one host through the provider (not shared
    /// memory): 1 us latency, 5 GB/s (a copy through the provider),
    /// combining at 5 GB/s, 0.3 us a message.
    pub const HOST: Params = Params {
        alpha: 1.0,
        beta: 2.0e-4,
        gamma: 2.0e-4,
        o: 0.3,
    };

    fn as_array(self) -> [f64; 4] {
        [self.alpha, self.beta, self.gamma, self.o]
    }
}

/// An algorithm's cost on its slowest rank's path.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Cost {
    /// Rounds, each a latency.
    pub rounds: f64,
    /// Bytes sent or received one after the other.
    pub bytes: f64,
    /// Bytes combined.
    pub combined: f64,
    /// Messages handled beyond one a round.
    pub injections: f64,
}

impl Cost {
    /// Its time in microseconds under `params`.
    pub fn time(&self, params: &Params) -> f64 {
        let [a, b, g, o] = params.as_array();
        self.rounds * a + self.bytes * b + self.combined * g + self.injections * o
    }

    fn as_array(self) -> [f64; 4] {
        [self.rounds, self.bytes, self.combined, self.injections]
    }
}

/// ceil(log2 p).
fn log2_ceil(p: u32) -> f64 {
    f64::from(p.max(1).next_power_of_two().trailing_zeros())
}

/// The fold of the recursive-doubling family: log2 of the largest power
/// of two at most `p`, and 1 when `p` is not one (a round in, a round
/// out).
fn fold(p: u32) -> (f64, f64) {
    let p = p.max(1);
    let low = 31 - p.leading_zeros();
    (f64::from(low), f64::from(u8::from(!p.is_power_of_two())))
}

/// The cost of `algorithm` on `p` ranks and `n` bytes; `None` for one
/// through shared memory.
pub fn cost(algorithm: Algorithm, p: u32, n: u64) -> Option<Cost> {
    let p = p.max(1);
    let (pf, nf) = (f64::from(p), n as f64);
    let (l, (l2, f)) = (log2_ceil(p), fold(p));
    let part = nf * (pf - 1.0) / pf;
    let p2 = 2f64.powf(l2);
    let part2 = nf * (p2 - 1.0) / p2;
    let c = |rounds: f64, bytes: f64, combined: f64, injections: f64| Cost {
        rounds,
        bytes,
        combined,
        injections,
    };
    let others = pf - 1.0;
    // Linear algorithms post at most LINEAR_WINDOW peers a round.
    let windows = (others / f64::from(LINEAR_WINDOW)).ceil().max(1.0);
    Some(match algorithm {
        Algorithm::Barrier(Barrier::Dissemination) => c(l, 0.0, 0.0, 0.0),
        Algorithm::Bcast(Bcast::Binomial) => c(l, l * nf, 0.0, 0.0),
        Algorithm::Bcast(Bcast::Linear) => {
            c(windows, others * nf, 0.0, (others - windows).max(0.0))
        }
        Algorithm::Bcast(Bcast::ScatterAllgather) => {
            c(pf, 2.0 * part, 0.0, (others - 1.0).max(0.0))
        }
        Algorithm::Bcast(Bcast::ScatterDoubling) => {
            c(l + l2 + 2.0 * f, 2.0 * part + f * nf, 0.0, 0.0)
        }
        Algorithm::Reduce(Reduce::Binomial) => c(l, l * nf, l * nf, 0.0),
        Algorithm::Reduce(Reduce::ReduceScatterGather) => c(
            l2 + f + 1.0,
            part2 + f * nf + part2,
            part2 + f * nf,
            (p2 - 2.0).max(0.0),
        ),
        Algorithm::Reduce(Reduce::Linear) => c(
            windows,
            others * nf,
            others * nf,
            (others - windows).max(0.0),
        ),
        Algorithm::Allreduce(Allreduce::RecursiveDoubling) => {
            c(l2 + 2.0 * f, (l2 + 2.0 * f) * nf, (l2 + f) * nf, 0.0)
        }
        Algorithm::Allreduce(Allreduce::Rabenseifner) => c(
            2.0 * l2 + 2.0 * f,
            2.0 * part2 + 2.0 * f * nf,
            part2 + f * nf,
            0.0,
        ),
        Algorithm::Allreduce(Allreduce::Ring) => c(2.0 * others, 2.0 * part, part, 0.0),
        Algorithm::Gather(Gather::Binomial) | Algorithm::Scatter(Scatter::Binomial) => {
            c(l, others * nf, 0.0, 0.0)
        }
        Algorithm::Gather(Gather::Linear) | Algorithm::Scatter(Scatter::Linear) => {
            c(windows, others * nf, 0.0, (others - windows).max(0.0))
        }
        Algorithm::Allgather(Allgather::RecursiveDoubling) => {
            c(l2 + 2.0 * f, others * nf + f * pf * nf, 0.0, 0.0)
        }
        Algorithm::Allgather(Allgather::Bruck) => c(l, others * nf, 0.0, 0.0),
        Algorithm::Allgather(Allgather::Ring) => c(others, others * nf, 0.0, 0.0),
        Algorithm::Alltoall(Alltoall::Pairwise) => c(others, others * nf, 0.0, 0.0),
        Algorithm::Alltoall(Alltoall::Linear) => {
            c(windows, others * nf, 0.0, 2.0 * (others - windows).max(0.0))
        }
        // A window, a pairwise exchange of where each block lies, the
        // gets in one epoch, and the free's barrier.
        Algorithm::Alltoall(Alltoall::OneSided) => c(others + 1.0 + l, others * nf, 0.0, others),
        Algorithm::Alltoall(Alltoall::Bruck) => c(l, l * (pf / 2.0).ceil() * nf, 0.0, 0.0),
        Algorithm::ReduceScatter(ReduceScatter::Pairwise | ReduceScatter::Ring) => {
            c(others, others * nf, others * nf, 0.0)
        }
        Algorithm::ReduceScatter(ReduceScatter::RecursiveHalving) => c(
            l2 + 2.0 * f,
            (p2 - 1.0) / p2 * pf * nf + f * pf * nf + f * nf,
            (p2 - 1.0) / p2 * pf * nf + f * pf * nf,
            0.0,
        ),
        Algorithm::Barrier(Barrier::Shared)
        | Algorithm::Bcast(Bcast::Shared)
        | Algorithm::Reduce(Reduce::Shared)
        | Algorithm::Allreduce(Allreduce::Shared)
        | Algorithm::Gather(Gather::Shared)
        | Algorithm::Scatter(Scatter::Shared)
        | Algorithm::Allgather(Allgather::Shared)
        | Algorithm::Alltoall(Alltoall::Shared)
        | Algorithm::ReduceScatter(ReduceScatter::Shared) => return None,
    })
}

/// The cheapest of `candidates` on `p` ranks and `n` bytes under
/// `params` (those with a formula; the first of equals).
pub fn cheapest(candidates: &[Algorithm], p: u32, n: u64, params: &Params) -> Option<Algorithm> {
    let mut best: Option<(Algorithm, f64)> = None;
    for &a in candidates {
        if let Some(t) = cost(a, p, n).map(|c| c.time(params)) {
            if best.is_none_or(|(_, b)| t < b) {
                best = Some((a, t));
            }
        }
    }
    best.map(|(a, _)| a)
}

/// The parameters that fit `entries` best (least squares of the
/// relative errors, every parameter at least 0); `None` when they do
/// not determine them (fewer points than parameters that matter, or no
/// fit better than nothing).
pub fn fit<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Option<Params> {
    // Rows: the cost's terms over the time (relative errors).
    let rows: Vec<[f64; 4]> = entries
        .into_iter()
        .filter(|e| e.us > 0.0)
        .filter_map(|e| {
            let a = Algorithm::parse(e.collective, &e.algorithm)?;
            let c = cost(a, e.geometry.ranks, e.bytes)?.as_array();
            Some(c.map(|x| x / e.us))
        })
        .collect();
    if rows.len() < 2 {
        return None;
    }
    // Every subset of parameters left free (the others 0): the feasible
    // solution with the least residual is the non-negative least-squares
    // one (four parameters: sixteen subsets).
    let mut best: Option<([f64; 4], f64)> = None;
    for mask in 1u32..16 {
        let free: Vec<usize> = (0..4).filter(|i| mask & (1 << i) != 0).collect();
        let Some(x) = solve(&rows, &free) else {
            continue;
        };
        if x.iter().any(|&v| v < 0.0) {
            continue;
        }
        let mut full = [0.0; 4];
        for (&i, &v) in free.iter().zip(&x) {
            full[i] = v;
        }
        let residual: f64 = rows
            .iter()
            .map(|r| {
                let pred: f64 = r.iter().zip(&full).map(|(a, b)| a * b).sum();
                (pred - 1.0).powi(2)
            })
            .sum();
        if best.is_none_or(|(_, b)| residual < b) {
            best = Some((full, residual));
        }
    }
    let ([alpha, beta, gamma, o], residual) = best?;
    // No better than predicting nothing: the points do not fit the model.
    (residual < rows.len() as f64).then_some(Params {
        alpha,
        beta,
        gamma,
        o,
    })
}

/// Least squares of `rows · x = 1` over the columns `free`; `None` when
/// singular.
fn solve(rows: &[[f64; 4]], free: &[usize]) -> Option<Vec<f64>> {
    let k = free.len();
    // Normal equations, scaled by each column's norm for conditioning.
    let norm: Vec<f64> = free
        .iter()
        .map(|&j| rows.iter().map(|r| r[j] * r[j]).sum::<f64>().sqrt())
        .collect();
    if norm.iter().any(|&v| v == 0.0 || !v.is_finite()) {
        return None;
    }
    let mut m = vec![vec![0.0; k + 1]; k];
    for r in rows {
        for a in 0..k {
            let ra = r[free[a]] / norm[a];
            for b in 0..k {
                m[a][b] += ra * r[free[b]] / norm[b];
            }
            m[a][k] += ra;
        }
    }
    // Gaussian elimination with partial pivoting.
    for col in 0..k {
        let pivot = (col..k).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, pivot);
        let pivot_row = m[col].clone();
        for (row, r) in m.iter_mut().enumerate() {
            if row != col {
                let factor = r[col] / pivot_row[col];
                for (x, p) in r.iter_mut().zip(&pivot_row).skip(col) {
                    *x -= factor * p;
                }
            }
        }
    }
    Some((0..k).map(|i| m[i][k] / m[i][i] / norm[i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Collective;
    use crate::profile::Geometry;

    #[test]
    fn formulas_grow_as_their_algorithms_do() {
        let rd = Algorithm::Allreduce(Allreduce::RecursiveDoubling);
        let ring = Algorithm::Allreduce(Allreduce::Ring);
        // Rounds: logarithmic against linear.
        assert_eq!(cost(rd, 1024, 8).unwrap().rounds, 10.0);
        assert_eq!(cost(ring, 1024, 8).unwrap().rounds, 2046.0);
        assert_eq!(cost(rd, 1000, 8).unwrap().rounds, 11.0, "fold in and out");
        // Bytes: the ring moves 2 n (p-1)/p.
        let c = cost(ring, 4, 1 << 20).unwrap();
        assert_eq!(c.bytes, 1.5 * f64::from(1 << 20));
        assert!(cost(Algorithm::Allreduce(Allreduce::Shared), 4, 8).is_none());
        for collective in Collective::ALL {
            for &a in Algorithm::all(collective) {
                for p in [1, 2, 3, 7, 64, 16384] {
                    let Some(c) = cost(a, p, 4096) else {
                        assert!(a.is_shared(), "{a}");
                        continue;
                    };
                    let all = [c.rounds, c.bytes, c.combined, c.injections];
                    assert!(all.iter().all(|v| v.is_finite() && *v >= 0.0), "{a} {p}");
                }
            }
        }
    }

    #[test]
    fn the_cheapest_follows_size_and_count() {
        let all = Algorithm::all(Collective::Allreduce);
        let net = Params::NETWORK;
        let pick = |p, n| cheapest(all, p, n, &net).unwrap();
        assert_eq!(pick(4, 8), Allreduce::RecursiveDoubling.into());
        assert_eq!(pick(16384, 8), Allreduce::RecursiveDoubling.into());
        assert_eq!(pick(64, 8 << 20), Allreduce::Rabenseifner.into());
        // At 16k ranks the ring's 32766 rounds lose even at 1 MiB.
        assert_ne!(pick(16384, 1 << 20), Allreduce::Ring.into());
    }

    #[test]
    fn fitting_recovers_the_parameters_of_its_points() {
        let truth = Params {
            alpha: 3.0,
            beta: 2.0e-4,
            gamma: 1.0e-4,
            o: 0.25,
        };
        let mut entries = Vec::new();
        for collective in [
            Collective::Allreduce,
            Collective::Bcast,
            Collective::Alltoall,
        ] {
            for &a in Algorithm::all(collective) {
                for ranks in [2, 4, 8] {
                    for bytes in [8u64, 4096, 1 << 20] {
                        let Some(c) = cost(a, ranks, bytes) else {
                            continue;
                        };
                        entries.push(Entry {
                            collective,
                            algorithm: a.name().to_string(),
                            geometry: Geometry {
                                ranks,
                                ranks_per_host: 1,
                            },
                            element: "f64".into(),
                            bytes,
                            us: c.time(&truth),
                        });
                    }
                }
            }
        }
        let got = fit(&entries).unwrap();
        for (g, t) in got.as_array().iter().zip(truth.as_array()) {
            assert!((g - t).abs() <= 1e-6 * t.max(1e-9) + 1e-12, "{got:?}");
        }
        assert_eq!(fit(&entries[..1]), None);
    }
}
