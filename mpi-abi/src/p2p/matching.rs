//! MPI's matching, with no I/O: which posted receive a message goes to,
//! in the order MPI fixes.
//!
//! - A communicator keeps its posted receives and its unexpected
//!   messages in arrival order ([`Matcher`]). A message goes to the
//!   first posted receive whose source and tag it matches (either may be
//!   a wildcard); a receive takes the first unexpected message it
//!   matches. Both queues are searched front to back, so two messages
//!   from one sender that both match a receive are received in the order
//!   they were sent (MPI's non-overtaking rule), and two matching
//!   receives are satisfied in the order they were posted.
//! - The header messages from one sender are handed to the matcher in
//!   the order the sender numbered them ([`InOrder`]), whatever order the
//!   provider delivered them in.

use std::collections::{BTreeMap, VecDeque};

/// What a receive or probe asks for: a source and a tag, `None` for
/// `MPI_ANY_SOURCE` and `MPI_ANY_TAG`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pattern {
    pub source: Option<u32>,
    pub tag: Option<i32>,
}

/// Who sent a message and with which tag (the communicator's rank).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Envelope {
    pub source: u32,
    pub tag: i32,
}

impl Pattern {
    /// Whether a message with `envelope` matches.
    pub fn matches(&self, envelope: Envelope) -> bool {
        self.source.is_none_or(|s| s == envelope.source)
            && self.tag.is_none_or(|t| t == envelope.tag)
    }
}

/// The posted receives (keys `R`) and unexpected messages (bodies `M`) of
/// one communicator.
#[derive(Debug)]
pub(crate) struct Matcher<R, M> {
    posted: VecDeque<(Pattern, R)>,
    unexpected: VecDeque<(Envelope, M)>,
}

impl<R, M> Default for Matcher<R, M> {
    fn default() -> Self {
        Matcher {
            posted: VecDeque::new(),
            unexpected: VecDeque::new(),
        }
    }
}

impl<R: PartialEq, M> Matcher<R, M> {
    /// A receive `key` for `pattern`: the first unexpected message it
    /// matches (taken), or `None` when it waits, posted.
    pub fn post(&mut self, pattern: Pattern, key: R) -> Option<(Envelope, M)> {
        match self
            .unexpected
            .iter()
            .position(|(e, _)| pattern.matches(*e))
        {
            Some(i) => self.unexpected.remove(i),
            None => {
                self.posted.push_back((pattern, key));
                None
            }
        }
    }

    /// A message with `envelope` arrived: the first posted receive it
    /// matches, which is no longer posted; `None` when it matches none,
    /// and the caller [`keep`](Matcher::keep)s it.
    pub fn arrive(&mut self, envelope: Envelope) -> Option<R> {
        let i = self.posted.iter().position(|(p, _)| p.matches(envelope))?;
        self.posted.remove(i).map(|(_, key)| key)
    }

    /// Keeps a message no receive matched, after those kept before.
    pub fn keep(&mut self, envelope: Envelope, body: M) {
        self.unexpected.push_back((envelope, body));
    }

    /// The first unexpected message `pattern` matches (`MPI_Probe`),
    /// left where it is.
    pub fn probe(&self, pattern: Pattern) -> Option<(Envelope, &M)> {
        (self.unexpected.iter())
            .find(|(e, _)| pattern.matches(*e))
            .map(|(e, m)| (*e, m))
    }

    /// Takes the first unexpected message `pattern` matches
    /// (`MPI_Mprobe`): no receive will match it any more.
    pub fn take_first(&mut self, pattern: Pattern) -> Option<(Envelope, M)> {
        let i = self
            .unexpected
            .iter()
            .position(|(e, _)| pattern.matches(*e))?;
        self.unexpected.remove(i)
    }

    /// Withdraws posted receive `key` (`MPI_Cancel`); whether it was
    /// still posted.
    pub fn cancel(&mut self, key: &R) -> bool {
        match self.posted.iter().position(|(_, k)| k == key) {
            Some(i) => self.posted.remove(i).is_some(),
            None => false,
        }
    }

    /// Whether nothing is posted and nothing waits.
    pub fn is_empty(&self) -> bool {
        self.posted.is_empty() && self.unexpected.is_empty()
    }
}

/// One sender's numbered items, handed on in their numbers' order.
#[derive(Debug)]
pub(crate) struct InOrder<T> {
    next: u64,
    held: BTreeMap<u64, T>,
}

impl<T> Default for InOrder<T> {
    fn default() -> Self {
        InOrder {
            next: 0,
            held: BTreeMap::new(),
        }
    }
}

/// Where an item stands against those handed on ([`InOrder::arrive`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// It is next: hand it on now (it counts as handed on).
    Now,
    /// One before it is missing: [`InOrder::hold`] it.
    Later,
    /// Its number was handed on before: drop it.
    Stale,
}

impl<T> InOrder<T> {
    /// Item number `seq` arrived: whether it is next.
    pub fn arrive(&mut self, seq: u64) -> Turn {
        match seq.cmp(&self.next) {
            std::cmp::Ordering::Equal => {
                self.next += 1;
                Turn::Now
            }
            std::cmp::Ordering::Greater => Turn::Later,
            std::cmp::Ordering::Less => Turn::Stale,
        }
    }

    /// Holds item `seq` until those before it are handed on.
    pub fn hold(&mut self, seq: u64, item: T) {
        self.held.insert(seq, item);
    }

    /// The held item that is next now, if any (it counts as handed on).
    pub fn next_ready(&mut self) -> Option<T> {
        let item = self.held.remove(&self.next)?;
        self.next += 1;
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(source: Option<u32>, tag: Option<i32>) -> Pattern {
        Pattern { source, tag }
    }

    fn env(source: u32, tag: i32) -> Envelope {
        Envelope { source, tag }
    }

    #[test]
    fn wildcards_match_any_source_or_tag() {
        assert!(pattern(None, None).matches(env(3, 7)));
        assert!(pattern(Some(3), None).matches(env(3, 7)));
        assert!(!pattern(Some(2), None).matches(env(3, 7)));
        assert!(pattern(None, Some(7)).matches(env(3, 7)));
        assert!(!pattern(None, Some(8)).matches(env(3, 7)));
    }

    #[test]
    fn messages_from_one_sender_are_received_in_order() {
        let mut m = Matcher::<u32, &str>::default();
        assert!(m.arrive(env(1, 5)).is_none());
        m.keep(env(1, 5), "first");
        assert!(m.arrive(env(1, 5)).is_none());
        m.keep(env(1, 5), "second");
        assert_eq!(
            m.post(pattern(Some(1), Some(5)), 0),
            Some((env(1, 5), "first"))
        );
        assert_eq!(m.post(pattern(None, None), 1), Some((env(1, 5), "second")));
        assert!(m.is_empty());
    }

    #[test]
    fn receives_are_satisfied_in_posting_order() {
        let mut m = Matcher::<u32, &str>::default();
        assert!(m.post(pattern(None, Some(5)), 10).is_none());
        assert!(m.post(pattern(Some(2), Some(5)), 11).is_none());
        // Both receives match: the first posted takes it.
        assert_eq!(m.arrive(env(2, 5)), Some(10));
        assert_eq!(m.arrive(env(2, 5)), Some(11));
        assert_eq!(m.arrive(env(2, 5)), None);
    }

    #[test]
    fn a_tag_receive_skips_other_tags() {
        let mut m = Matcher::<u32, &str>::default();
        m.keep(env(0, 1), "one");
        m.keep(env(0, 2), "two");
        assert_eq!(
            m.post(pattern(Some(0), Some(2)), 0),
            Some((env(0, 2), "two"))
        );
        assert_eq!(m.probe(pattern(None, None)), Some((env(0, 1), &"one")));
        assert_eq!(m.probe(pattern(None, Some(3))), None);
        // A matched probe takes it: a receive no longer sees it.
        assert_eq!(m.take_first(pattern(None, None)), Some((env(0, 1), "one")));
        assert_eq!(m.post(pattern(Some(0), Some(1)), 9), None);
    }

    #[test]
    fn a_cancelled_receive_takes_nothing() {
        let mut m = Matcher::<u32, &str>::default();
        assert!(m.post(pattern(None, None), 4).is_none());
        assert!(m.cancel(&4));
        assert!(!m.cancel(&4));
        assert!(m.arrive(env(0, 0)).is_none());
        m.keep(env(0, 0), "x");
        assert_eq!(m.probe(pattern(None, None)), Some((env(0, 0), &"x")));
    }

    #[test]
    fn numbered_items_come_out_in_order() {
        let mut o = InOrder::default();
        assert_eq!(o.arrive(1), Turn::Later);
        o.hold(1, 'b');
        assert_eq!(o.arrive(2), Turn::Later);
        o.hold(2, 'c');
        assert_eq!(o.next_ready(), None);
        assert_eq!(o.arrive(0), Turn::Now);
        assert_eq!(o.next_ready(), Some('b'));
        assert_eq!(o.next_ready(), Some('c'));
        assert_eq!(o.next_ready(), None);
        assert_eq!(o.arrive(3), Turn::Now);
        assert_eq!(o.arrive(1), Turn::Stale);
    }
}
