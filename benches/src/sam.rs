//! `sam`'s pure side: its configuration (a TOML file), the problem (a
//! 2-D 5-point Laplacian in ELL storage) and the Conjugate Gradient's
//! local steps, tested without processes.
//!
//! The matrix of an `n` x `n` grid has `n * n` rows of 5 entries each:
//! 4 on the diagonal and -1 for each neighbour inside the grid (a
//! neighbour outside is an entry 0 at the row's own column, so every row
//! has 5). The right-hand side is all ones and the first guess zero.

use std::path::Path;

use onesided_mam::{Layout, Method, Moves, Strategy};
use serde::Deserialize;

/// Entries of a row.
pub const ROW: usize = 5;

/// A row's values and its columns (ELL).
pub type Values = [f64; ROW];
/// A row's columns.
pub type Columns = [u32; ROW];

/// What a run does, as the TOML file says it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Grid points per side: `grid * grid` rows.
    pub grid: u32,
    /// Iterations before the reconfiguration starts.
    pub before: u32,
    /// Iterations at most while it is pending (the overlap budget); once
    /// spent, the process waits for the end.
    pub overlap: u32,
    /// Iterations in all.
    pub iterations: u32,
    /// Processes before the reconfiguration (the launch size).
    pub ns: u32,
    /// Processes after it.
    pub nt: u32,
    /// `col`, `rma_lock` or `rma_lock_all`.
    pub method: String,
    /// `blocking`, `thread`, `nonblocking` or `wait_targets`.
    pub strategy: String,
    /// How each array is registered.
    #[serde(default)]
    pub arrays: Arrays,
}

/// How each array is registered: `constant` (distributed, may move in
/// the background), `variable` (distributed, moves at the end) or
/// `replicated` (the whole on every process, moves at the end).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arrays {
    /// The matrix's values.
    #[serde(default = "constant")]
    pub values: Kind,
    /// Its column indices.
    #[serde(default = "constant")]
    pub columns: Kind,
    /// The solution.
    #[serde(default = "variable")]
    pub x: Kind,
    /// The residual.
    #[serde(default = "variable")]
    pub r: Kind,
    /// The direction.
    #[serde(default = "variable")]
    pub p: Kind,
    /// The parameter block: the iteration and `r . r`.
    #[serde(default = "replicated")]
    pub params: Kind,
}

impl Default for Arrays {
    fn default() -> Arrays {
        Arrays {
            values: Kind::Constant,
            columns: Kind::Constant,
            x: Kind::Variable,
            r: Kind::Variable,
            p: Kind::Variable,
            params: Kind::Replicated,
        }
    }
}

fn constant() -> Kind {
    Kind::Constant
}
fn variable() -> Kind {
    Kind::Variable
}
fn replicated() -> Kind {
    Kind::Replicated
}

/// How an array is registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Distributed, never modified: it may move in the background.
    Constant,
    /// Distributed, modified every iteration: it moves at the end.
    Variable,
    /// The whole on every process, modified: it moves at the end.
    Replicated,
}

impl Kind {
    /// The engine's layout and moves for an array of `len` elements.
    pub fn registration(self, len: u64) -> (Layout, Moves) {
        match self {
            Kind::Constant => (Layout::Distributed { len }, Moves::Constant),
            Kind::Variable => (Layout::Distributed { len }, Moves::Variable),
            Kind::Replicated => (Layout::Replicated, Moves::Variable),
        }
    }
}

/// A configuration checked: its method and strategy parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The file's settings.
    pub config: Config,
    /// Its method.
    pub method: Method,
    /// Its strategy.
    pub strategy: Strategy,
}

impl Run {
    /// Rows of the matrix.
    pub fn rows(&self) -> u64 {
        u64::from(self.config.grid) * u64::from(self.config.grid)
    }
}

/// Reads and checks the configuration in `path`.
///
/// # Errors
/// One line naming the file and what is wrong: unreadable; malformed,
/// incomplete or unknown keys (with toml's line and key); a value out of
/// range (the key named).
pub fn load(path: &Path) -> Result<Run, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses and checks a configuration's text.
///
/// # Errors
/// As [`load`], without the file's name.
pub fn parse(text: &str) -> Result<Run, String> {
    let config: Config = toml::from_str(text).map_err(|e| one_line(&e.to_string()))?;
    fn bad<T>(key: &str, why: &str) -> Result<T, String> {
        Err(format!("key `{key}`: {why}"))
    }
    if config.grid < 2 {
        return bad("grid", "at least 2 points per side");
    }
    if config.before == 0 || config.before >= config.iterations {
        return bad(
            "before",
            "at least 1 (omega's reference) and below `iterations`",
        );
    }
    if config.ns == 0 {
        return bad("ns", "at least 1 process");
    }
    if config.nt == 0 {
        return bad("nt", "at least 1 process");
    }
    for (key, rows) in [("ns", config.ns), ("nt", config.nt)] {
        if u64::from(rows) > u64::from(config.grid) * u64::from(config.grid) {
            return bad(key, "more processes than rows");
        }
    }
    let method: Method = (config.method.parse()).or_else(|e| bad("method", &format!("{e}")))?;
    let strategy: Strategy =
        (config.strategy.parse()).or_else(|e| bad("strategy", &format!("{e}")))?;
    let a = &config.arrays;
    for (key, kind) in [("arrays.x", a.x), ("arrays.r", a.r), ("arrays.p", a.p)] {
        if kind != Kind::Variable {
            return bad(key, "changes every iteration: it must be `variable`");
        }
    }
    for (key, kind) in [("arrays.values", a.values), ("arrays.columns", a.columns)] {
        if kind == Kind::Replicated {
            return bad(key, "is distributed by rows: `constant` or `variable`");
        }
    }
    if a.params != Kind::Replicated {
        return bad(
            "arrays.params",
            "is the same everywhere: it must be `replicated`",
        );
    }
    Ok(Run {
        config,
        method,
        strategy,
    })
}

/// toml's message on one line (it spans several: the place, the
/// quoted source line with a caret under it, and what is wrong).
fn one_line(text: &str) -> String {
    let quoted = |l: &str| {
        l.split_once('|')
            .is_some_and(|(n, _)| n.trim().chars().all(|c| c.is_ascii_digit()))
    };
    let lines: Vec<&str> = (text.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty() && !quoted(l))
        .collect();
    lines.join(": ")
}

/// Rows `rows` of the matrix of an `n` x `n` grid.
pub fn matrix(n: u32, rows: std::ops::Range<u64>) -> (Vec<Values>, Vec<Columns>) {
    let n = u64::from(n);
    rows.map(|i| {
        let (x, y) = (i % n, i / n);
        let mut values = [0.0; ROW];
        let mut columns = [i as u32; ROW];
        values[0] = 4.0;
        let neighbours = [
            (x > 0).then(|| i - 1),
            (x + 1 < n).then(|| i + 1),
            (y > 0).then(|| i - n),
            (y + 1 < n).then(|| i + n),
        ];
        for (k, j) in neighbours.into_iter().enumerate() {
            if let Some(j) = j {
                values[k + 1] = -1.0;
                columns[k + 1] = j as u32;
            }
        }
        (values, columns)
    })
    .unzip()
}

/// `q = A p` for the local rows (`values`, `columns`), `p` whole.
pub fn spmv(values: &[Values], columns: &[Columns], p: &[f64], q: &mut [f64]) {
    for ((v, c), q) in values.iter().zip(columns).zip(q.iter_mut()) {
        *q = (0..ROW).map(|k| v[k] * p[c[k] as usize]).sum();
    }
}

/// `a . b`.
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The residual norm of `iterations` of CG on one process (the check of
/// a distributed run).
pub fn serial(n: u32, iterations: u32) -> f64 {
    let rows = u64::from(n) * u64::from(n);
    let (values, columns) = matrix(n, 0..rows);
    let len = rows as usize;
    let (mut x, mut r, mut p, mut q) = (
        vec![0.0; len],
        vec![1.0; len],
        vec![1.0; len],
        vec![0.0; len],
    );
    let mut rr = dot(&r, &r);
    for _ in 0..iterations {
        spmv(&values, &columns, &p, &mut q);
        let alpha = rr / dot(&p, &q);
        axpy(alpha, &p, &mut x);
        axpy(-alpha, &q, &mut r);
        let next = dot(&r, &r);
        direction(next / rr, &r, &mut p);
        rr = next;
    }
    rr.sqrt()
}

/// `y += alpha x`.
pub fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += alpha * x;
    }
}

/// `p = r + beta p`.
pub fn direction(beta: f64, r: &[f64], p: &mut [f64]) {
    for (p, r) in p.iter_mut().zip(r) {
        *p = r + beta * *p;
    }
}

/// Whether two residual norms agree to `1e-9` relative.
pub fn agree(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
grid = 16
before = 5
overlap = 10
iterations = 30
ns = 2
nt = 3
method = "rma_lock_all"
strategy = "nonblocking"
"#;

    #[test]
    fn a_good_file_parses_with_its_defaults() {
        let run = parse(GOOD).expect("good");
        assert_eq!(run.method, Method::RmaLockAll);
        assert_eq!(run.strategy, Strategy::NonBlocking);
        assert_eq!(run.config.arrays, Arrays::default());
        assert_eq!(run.rows(), 256);
    }

    #[test]
    fn bad_files_say_which_key_and_where() {
        let missing = parse(&GOOD.replace("nt = 3\n", "")).unwrap_err();
        assert!(missing.contains("nt"), "{missing}");
        let malformed = parse(&GOOD.replace("grid = 16", "grid = sixteen")).unwrap_err();
        assert!(malformed.contains("line 2"), "{malformed}");
        assert!(!malformed.contains('\n'), "{malformed}");
        let unknown = parse(&format!("{GOOD}colour = 1\n")).unwrap_err();
        assert!(unknown.contains("colour"), "{unknown}");
        let before = parse(&GOOD.replace("before = 5", "before = 0")).unwrap_err();
        assert!(before.starts_with("key `before`"), "{before}");
        let zero = parse(&GOOD.replace("nt = 3", "nt = 0")).unwrap_err();
        assert_eq!(zero, "key `nt`: at least 1 process");
        let method = parse(&GOOD.replace("rma_lock_all", "rma9")).unwrap_err();
        assert!(method.starts_with("key `method`"), "{method}");
        let constant_x = parse(&format!("{GOOD}[arrays]\nx = \"constant\"\n")).unwrap_err();
        assert!(constant_x.starts_with("key `arrays.x`"), "{constant_x}");
        let kind = parse(&format!("{GOOD}[arrays]\nvalues = \"solid\"\n")).unwrap_err();
        assert!(kind.contains("solid"), "{kind}");
    }

    #[test]
    fn the_matrix_is_the_5_point_laplacian() {
        let (values, columns) = matrix(3, 0..9);
        // The centre has four neighbours; a corner two.
        assert_eq!(values[4], [4.0, -1.0, -1.0, -1.0, -1.0]);
        assert_eq!(columns[4], [4, 3, 5, 1, 7]);
        assert_eq!(values[0], [4.0, 0.0, -1.0, 0.0, -1.0]);
        assert_eq!(columns[0], [0, 0, 1, 0, 3]);
        // Symmetric: A[i][j] == A[j][i].
        let at = |i: usize, j: u32| -> f64 {
            (0..ROW)
                .filter(|&k| columns[i][k] == j && values[i][k] != 0.0)
                .map(|k| values[i][k])
                .sum()
        };
        for i in 0..9 {
            for j in 0..9u32 {
                assert_eq!(at(i, j), at(j as usize, i as u32));
            }
        }
    }

    #[test]
    fn cg_converges_and_a_block_of_rows_is_the_whole_s_part() {
        // n = 8: CG ends within n*n steps in exact arithmetic; its
        // residual falls by far in a few dozen.
        assert!(serial(8, 40) < 1e-8 * serial(8, 0));
        let (all_v, all_c) = matrix(8, 0..64);
        let (v, c) = matrix(8, 20..30);
        assert_eq!((&all_v[20..30], &all_c[20..30]), (&v[..], &c[..]));
        let p: Vec<f64> = (0..64).map(f64::from).collect();
        let (mut whole, mut part) = (vec![0.0; 64], vec![0.0; 10]);
        spmv(&all_v, &all_c, &p, &mut whole);
        spmv(&v, &c, &p, &mut part);
        assert_eq!(&whole[20..30], &part[..]);
        assert!(agree(1.0, 1.0 + 1e-12) && !agree(1.0, 1.0 + 1e-6));
    }
}
