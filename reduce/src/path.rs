//! Reduction paths: the set of group ranks whose original data a partial
//! result already combines (the spec's P_i), as bits.

/// A set of group ranks, as bits (rank `r` is bit `r % 64` of word
/// `r / 64`).
#[derive(Debug, Clone, Default)]
pub struct Path {
    words: Vec<u64>,
}

impl PartialEq for Path {
    fn eq(&self, other: &Path) -> bool {
        self.words() == other.words()
    }
}

impl Eq for Path {}

impl Path {
    /// The path of one rank's original data.
    pub fn single(rank: u32) -> Path {
        let mut path = Path::default();
        path.insert(rank);
        path
    }

    /// Adds `rank`.
    pub fn insert(&mut self, rank: u32) {
        let (word, bit) = (rank as usize / 64, rank % 64);
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << bit;
    }

    /// Whether it holds `rank`.
    pub fn contains(&self, rank: u32) -> bool {
        let (word, bit) = (rank as usize / 64, rank % 64);
        self.words.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }

    /// The ranks of both.
    pub fn union(&self, other: &Path) -> Path {
        let n = self.words.len().max(other.words.len());
        let at = |p: &Path, i: usize| p.words.get(i).copied().unwrap_or(0);
        Path {
            words: (0..n).map(|i| at(self, i) | at(other, i)).collect(),
        }
    }

    /// Whether the two share a rank (a path combined twice would count
    /// its data twice).
    pub fn overlaps(&self, other: &Path) -> bool {
        (self.words.iter().zip(&other.words)).any(|(a, b)| a & b != 0)
    }

    /// How many ranks it holds.
    pub fn len(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// Whether it holds no rank.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether it holds every rank of a group of `size`.
    pub fn is_full(&self, size: u32) -> bool {
        self.len() == size && (0..size).all(|r| self.contains(r))
    }

    /// Its ranks, in order.
    pub fn ranks(&self) -> impl Iterator<Item = u32> + '_ {
        (self.words.iter().enumerate()).flat_map(|(i, &w)| {
            (0..64)
                .filter(move |b| w & (1 << b) != 0)
                .map(move |b| (i * 64 + b) as u32)
        })
    }

    /// Its words, for the wire (trailing zero words left off).
    pub fn words(&self) -> &[u64] {
        let used = self
            .words
            .iter()
            .rposition(|&w| w != 0)
            .map_or(0, |i| i + 1);
        &self.words[..used]
    }

    /// The path of these words.
    pub fn from_words(words: Vec<u64>) -> Path {
        Path { words }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_sets_of_ranks() {
        let mut a = Path::single(3);
        a.insert(70);
        assert!(a.contains(3) && a.contains(70) && !a.contains(4));
        assert_eq!(a.ranks().collect::<Vec<_>>(), vec![3, 70]);
        let b = Path::single(4);
        assert!(!a.overlaps(&b));
        let u = a.union(&b);
        assert_eq!(u.len(), 3);
        assert!(u.overlaps(&b));
        assert!(!u.is_full(71));
        let full = (0..5).fold(Path::default(), |p, r| p.union(&Path::single(r)));
        assert!(full.is_full(5) && !full.is_full(6));
        assert_eq!(Path::from_words(a.words().to_vec()), a);
        let padded = Path::from_words(vec![1, 0, 0]);
        assert_eq!(padded.words(), &[1]);
        assert_eq!(padded, Path::single(0));
        assert!(Path::default().is_empty());
    }
}
