//! The master: every reduction's schedule, the performance counter and
//! who is dead; messages in, messages out (to group ranks). Pure.

use std::collections::{HashMap, HashSet};

use crate::message::{Key, Message};
use crate::path::Path;
use crate::schedule::{Action, Failure, Line, Perf, Schedule};

/// Messages to send: (group rank, message).
pub type Out = Vec<(u32, Message)>;

/// The master's state over a group.
#[derive(Debug)]
pub struct Master {
    size: u32,
    /// The host of each group rank (a dead rank's data is read from its
    /// host's disk until its replica is durable).
    hosts: Vec<u64>,
    schedules: HashMap<Key, Schedule>,
    /// Reductions that ended: late messages about them are dropped.
    closed: HashSet<Key>,
    /// Replicas reported before their reduction's first contribution
    /// (owner, holder): applied when it opens.
    early: HashMap<Key, Vec<(u32, u32)>>,
    perf: Perf,
    dead: Vec<bool>,
}

impl Master {
    /// The master of a group whose rank `r` lives on host `hosts[r]`.
    pub fn new(hosts: Vec<u64>) -> Master {
        let size = hosts.len() as u32;
        Master {
            size,
            hosts,
            schedules: HashMap::new(),
            closed: HashSet::new(),
            early: HashMap::new(),
            perf: Perf::default(),
            dead: vec![false; size as usize],
        }
    }

    /// Whether group rank `rank` is known dead.
    pub fn is_dead(&self, rank: u32) -> bool {
        self.dead.get(rank as usize).copied().unwrap_or(true)
    }

    /// Reductions under way.
    pub fn open(&self) -> usize {
        self.schedules.len()
    }

    /// A message from group rank `from`.
    pub fn on(&mut self, from: u32, message: Message) -> Out {
        if self.is_dead(from) {
            return Vec::new();
        }
        let (key, actions) = match message {
            Message::Contributed { key, root, .. } | Message::Withdrawn { key, root } => {
                let opened = schedule(
                    &mut self.schedules,
                    &self.closed,
                    &self.dead,
                    &self.hosts,
                    key,
                    root,
                );
                let Some((s, mut first)) = opened else {
                    return Vec::new();
                };
                for (owner, holder) in self.early.remove(&key).unwrap_or_default() {
                    s.replicated(owner, holder);
                }
                first.extend(match message {
                    Message::Contributed { disp, .. } => {
                        let line = Line {
                            holder: from,
                            disp,
                            path: Path::single(from),
                            recovered: false,
                        };
                        s.contributed(line, &self.perf)
                    }
                    _ => s.withdrawn(from),
                });
                (key, first)
            }
            Message::Done { key, number, took } => match self.schedules.get_mut(&key) {
                Some(s) => (key, s.done(number, took, &mut self.perf)),
                None => return Vec::new(),
            },
            Message::Aborted { key, number } => match self.schedules.get_mut(&key) {
                Some(s) => (key, s.aborted(number, &self.perf)),
                None => return Vec::new(),
            },
            Message::Reloaded { key, rank, disp } => match self.schedules.get_mut(&key) {
                Some(s) => (key, s.reloaded(from, rank, disp, &self.perf)),
                None => return Vec::new(),
            },
            Message::Failed {
                key,
                failure: Failure::DataLost(rank),
            } => match self.schedules.get_mut(&key) {
                Some(s) => (key, s.lost(rank)),
                None => return Vec::new(),
            },
            Message::Replicated { key, owner } => {
                match self.schedules.get_mut(&key) {
                    Some(s) => s.replicated(owner, from),
                    None if !self.closed.contains(&key) => {
                        self.early.entry(key).or_default().push((owner, from));
                    }
                    None => {}
                }
                return Vec::new();
            }
            _ => return Vec::new(),
        };
        self.out(key, actions)
    }

    /// Group rank `rank` died: every open reduction recovers or fails.
    pub fn died(&mut self, rank: u32) -> Out {
        if self.is_dead(rank) {
            return Vec::new();
        }
        self.dead[rank as usize] = true;
        let mut keys: Vec<Key> = self.schedules.keys().copied().collect();
        keys.sort();
        let mut out = Vec::new();
        for key in keys {
            let actions = match self.schedules.get_mut(&key) {
                Some(s) => s.died(rank, &self.perf),
                None => continue,
            };
            out.extend(self.out(key, actions));
        }
        out
    }

    /// Group rank `rank` was reported lost (by the member watching it,
    /// see the ring module) or seen dead: as [`Master::died`], and every
    /// other live worker is told, once.
    pub fn suspected(&mut self, rank: u32) -> Out {
        if self.is_dead(rank) {
            return Vec::new();
        }
        let mut out = self.died(rank);
        out.extend(
            (1..self.size)
                .filter(|&t| !self.is_dead(t))
                .map(|t| (t, Message::Dead { rank })),
        );
        out
    }

    /// The messages of `actions` of reduction `key`; an ended reduction
    /// is closed.
    fn out(&mut self, key: Key, actions: Vec<Action>) -> Out {
        let mut out = Vec::new();
        // Only an end speaks to every live member: O(p) then, O(1) else.
        for action in actions {
            match action {
                Action::Assign(t) => out.push((
                    t.into.holder,
                    Message::Task {
                        key,
                        number: t.number,
                        into_disp: t.into.disp,
                        from_holder: t.from.holder,
                        from_disp: t.from.disp,
                        from_original: t.from.path == Path::single(t.from.holder),
                    },
                )),
                Action::Reload { holder, rank } => {
                    out.push((holder, Message::Reload { key, rank }))
                }
                Action::Replicate { owner, holder } => {
                    out.push((owner, Message::Replicate { key, holder }))
                }
                Action::Finished { disp } => {
                    out.extend(
                        self.live()
                            .into_iter()
                            .map(|r| (r, Message::Finished { key, disp })),
                    );
                    self.close(key);
                }
                Action::Failed(failure) => {
                    out.extend(
                        self.live()
                            .into_iter()
                            .map(|r| (r, Message::Failed { key, failure })),
                    );
                    self.close(key);
                }
            }
        }
        out
    }

    fn live(&self) -> Vec<u32> {
        (0..self.size).filter(|&r| !self.is_dead(r)).collect()
    }

    fn close(&mut self, key: Key) {
        self.schedules.remove(&key);
        self.early.remove(&key);
        self.closed.insert(key);
    }
}

/// Reduction `key`'s schedule, opened at its first message with the
/// deaths known so far (and what they make it do); None once it ended or
/// for a root outside the group.
fn schedule<'a>(
    schedules: &'a mut HashMap<Key, Schedule>,
    closed: &HashSet<Key>,
    dead: &[bool],
    hosts: &[u64],
    key: Key,
    root: u32,
) -> Option<(&'a mut Schedule, Vec<Action>)> {
    let size = dead.len() as u32;
    if closed.contains(&key) || root >= size {
        return None;
    }
    let mut first = Vec::new();
    let s = schedules.entry(key).or_insert_with(|| {
        let mut s = Schedule::new(root, hosts.to_vec());
        for r in (0..size).filter(|&r| dead[r as usize]) {
            first.extend(s.died(r, &Perf::default()));
        }
        s
    });
    Some((s, first))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn messages_drive_schedules_to_their_end_and_late_ones_are_dropped() {
        let key = Key { id: 1, round: 0 };
        let mut m = Master::new(vec![0; 2]);
        let c = |disp| Message::Contributed { key, root: 1, disp };
        assert!(m.on(0, c(10)).is_empty());
        let out = m.on(1, c(20));
        assert_eq!(
            out,
            vec![(
                1,
                Message::Task {
                    key,
                    number: 1,
                    into_disp: 20,
                    from_holder: 0,
                    from_disp: 10,
                    from_original: true,
                }
            )]
        );
        let done = Message::Done {
            key,
            number: 1,
            took: Duration::ZERO,
        };
        let out = m.on(1, done.clone());
        assert_eq!(out.len(), 2, "finished, told to both: {out:?}");
        assert!(out
            .iter()
            .all(|(_, m)| *m == Message::Finished { key, disp: 20 }));
        assert_eq!(m.open(), 0);
        assert!(m.on(1, done).is_empty());
        assert!(m.on(0, c(10)).is_empty(), "closed");
    }

    #[test]
    fn a_death_fails_or_recovers_and_later_reductions_know_it() {
        // Each rank on its own host: a dead rank's file is out of reach.
        let mut m = Master::new(vec![0, 1, 2]);
        let key = Key { id: 2, round: 0 };
        m.on(
            1,
            Message::Contributed {
                key,
                root: 0,
                disp: 1,
            },
        );
        m.on(2, Message::Replicated { key, owner: 1 });
        let out = m.died(0);
        assert!(out.iter().all(|(r, msg)| *r != 0
            && *msg
                == Message::Failed {
                    key,
                    failure: Failure::RootDied(0)
                }));
        assert_eq!(out.len(), 2);
        let later = Key { id: 2, round: 1 };
        let out = m.on(
            1,
            Message::Contributed {
                key: later,
                root: 1,
                disp: 1,
            },
        );
        // 0 may have died after its call returned: 1, where its replica
        // goes, looks for it.
        assert!(out.contains(&(
            1,
            Message::Reload {
                key: later,
                rank: 0
            }
        )));
        let out = m.on(
            1,
            Message::Failed {
                key: later,
                failure: Failure::DataLost(0),
            },
        );
        assert!(out.iter().any(|(_, msg)| *msg
            == Message::Failed {
                key: later,
                failure: Failure::DiedBeforeContributing(0)
            }));
        assert!(m.on(0, Message::Ping).is_empty(), "the dead are not heard");
        let mut m = Master::new(vec![0; 3]);
        let w = Key { id: 3, round: 0 };
        let out = m.on(2, Message::Withdrawn { key: w, root: 1 });
        assert!(out.contains(&(
            1,
            Message::Failed {
                key: w,
                failure: Failure::Withdrew(2)
            }
        )));
    }

    #[test]
    fn a_suspect_is_counted_dead_once_and_told_to_the_live_workers() {
        let mut m = Master::new(vec![0; 5]);
        m.died(4);
        let out = m.suspected(2);
        let told: Vec<u32> = (out.iter())
            .filter(|(_, msg)| *msg == Message::Dead { rank: 2 })
            .map(|(to, _)| *to)
            .collect();
        assert_eq!(told, vec![1, 3]);
        assert!(m.suspected(2).is_empty(), "once");
    }

    #[test]
    fn a_replica_counts_where_its_holder_says_it_is() {
        // Each rank on its own host: only the replica can serve. The
        // holder's report may come first.
        let mut m = Master::new(vec![0, 1, 2, 3]);
        let key = Key { id: 5, round: 0 };
        m.on(3, Message::Replicated { key, owner: 1 });
        let c = Message::Contributed {
            key,
            root: 0,
            disp: 1,
        };
        m.on(1, c);
        let out = m.died(1);
        assert!(
            out.contains(&(3, Message::Reload { key, rank: 1 })),
            "{out:?}"
        );
        let mut m = Master::new(vec![0, 1, 2]);
        let key = Key { id: 4, round: 0 };
        let c = Message::Contributed {
            key,
            root: 0,
            disp: 1,
        };
        m.on(1, c);
        m.on(2, Message::Replicated { key, owner: 1 });
        let out = m.died(1);
        assert!(
            out.contains(&(2, Message::Reload { key, rank: 1 })),
            "{out:?}"
        );
    }
}
