//! The dissemination barrier's schedule, as plain arithmetic: in round `r`
//! of a group of `n`, member `me` signals `(me + 2^r) % n` and waits for
//! `(me - 2^r) % n`; `rounds(n)` rounds in all.
//!
//! Pure arithmetic, shared by the layers' barriers: `World::finalize`
//! after a membership change, onesided-rma's `ibarrier` and releases.

/// Rounds for `n` members: ceil(log2 n).
pub fn rounds(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        32 - (n - 1).leading_zeros()
    }
}

/// (whom to signal, whom to wait for) in `round`.
pub fn partners(me: u32, n: u32, round: u32) -> (u32, u32) {
    let step = (1u64 << round) % u64::from(n);
    let (me, n) = (u64::from(me), u64::from(n));
    (((me + step) % n) as u32, ((me + n - step) % n) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dissemination_rounds_and_partners() {
        assert_eq!(
            [1, 2, 3, 4, 5, 7, 8, 9].map(rounds),
            [0, 1, 2, 2, 3, 3, 3, 4]
        );
        assert_eq!(partners(0, 5, 0), (1, 4));
        assert_eq!(partners(3, 5, 2), (2, 4));
        // Every member hears, transitively, from every other: simulate who
        // knows about whom after all rounds.
        for n in 1..=9u32 {
            let mut knows: Vec<u64> = (0..n).map(|m| 1 << m).collect();
            for round in 0..rounds(n) {
                let before = knows.clone();
                for me in 0..n {
                    let (_, from) = partners(me, n, round);
                    knows[me as usize] |= before[from as usize];
                }
            }
            assert!(knows.iter().all(|k| *k == (1 << n) - 1), "n = {n}");
        }
    }
}
