//! The master's scheduler of one reduction (the spec's queue Q and
//! scheduler S, with its recovery steps), pure: events in, actions out,
//! no I/O, so that it is tested as event sequences.
//!
//! Events: a worker contributed its data ([`Schedule::contributed`]), a
//! task is done ([`Schedule::done`]), an original was loaded again
//! ([`Schedule::reloaded`]), a task's fetch failed
//! ([`Schedule::aborted`]), a rank died ([`Schedule::died`]), a
//! replica became durable ([`Schedule::replicated`]). Actions: give a task,
//! have a rank reload an original, have a rank's original replicated
//! again, the end (finished or failed).

use std::collections::VecDeque;
use std::time::Duration;

use crate::path::Path;

/// A partial result: where it lives and what it combines (the spec's
/// reduction message (W_i, P_i)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The worker holding it.
    pub holder: u32,
    /// Its buffer there (a displacement in the holder's dynamic window).
    pub disp: u64,
    /// The ranks whose original data it combines.
    pub path: Path,
    /// Reloaded from an original after a failure (the spec's
    /// fault-tolerant mark).
    pub recovered: bool,
}

/// A reduction task: `into`'s holder fetches `from` and combines it into
/// `into`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Its number in this reduction (from 1).
    pub number: u64,
    pub into: Line,
    pub from: Line,
}

/// What the master does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send `task` to `task.into.holder`.
    Assign(Task),
    /// Have `holder` load rank `rank`'s original data (its own, or the
    /// replica it keeps) and report it as a recovered line.
    Reload { holder: u32, rank: u32 },
    /// Have `owner` replicate its original data on `holder`, its replica's
    /// holder having died.
    Replicate { owner: u32, holder: u32 },
    /// The result is at the root, in its buffer at `disp`: tell every
    /// live member.
    Finished { disp: u64 },
    /// The reduction cannot finish: tell every live member.
    Failed(Failure),
}

/// Why a reduction failed, naming the rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The root died: the result has nowhere to go.
    RootDied(u32),
    /// The rank died before its data was contributed (before its call
    /// returned, or alone on its host before its line arrived): its data
    /// exists nowhere within reach.
    DiedBeforeContributing(u32),
    /// The rank died and no copy of its data is left: its replica not
    /// durable (or its holder dead too), its file out of reach or not
    /// written yet.
    DataLost(u32),
    /// The rank could not store its data (a full or unwritable disk).
    Withdrew(u32),
    /// The master died (seen by the workers).
    MasterDied(u32),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::RootDied(r) => write!(f, "the root, rank {r}, died"),
            Failure::DiedBeforeContributing(r) => {
                write!(f, "rank {r} died before its data was contributed")
            }
            Failure::DataLost(r) => write!(f, "rank {r} died and no copy of its data is left"),
            Failure::Withdrew(r) => write!(f, "rank {r} could not store its data"),
            Failure::MasterDied(r) => write!(f, "the master, rank {r}, died"),
        }
    }
}

/// The performance counter: each worker's time for its last task (the
/// spec's per-process counter), shared by the master's reductions.
#[derive(Debug, Clone, Default)]
pub struct Perf {
    last: Vec<Option<Duration>>,
}

impl Perf {
    /// Notes that `worker`'s last task took `took`.
    pub fn record(&mut self, worker: u32, took: Duration) {
        let w = worker as usize;
        if self.last.len() <= w {
            self.last.resize(w + 1, None);
        }
        self.last[w] = Some(took);
    }

    /// `worker`'s last task time (zero before its first: untried workers
    /// count as fast).
    pub fn last(&self, worker: u32) -> Duration {
        (self.last.get(worker as usize).copied().flatten()).unwrap_or_default()
    }
}

/// Where a reduction stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Open,
    Finished,
    Failed(Failure),
}

/// One reduction's queue and scheduler on the master.
#[derive(Debug, Clone)]
pub struct Schedule {
    size: u32,
    root: u32,
    queue: VecDeque<Line>,
    running: Vec<Task>,
    tasks: u64,
    dead: Vec<bool>,
    /// The host of each rank.
    hosts: Vec<u64>,
    /// Ranks whose data was contributed (their first line arrived).
    contributed: Path,
    /// Ranks that died before their first line arrived, read back from
    /// their file (written before their call returned, so the line may
    /// just not have come).
    unannounced: Path,
    /// Where each rank's original is durable besides the rank itself.
    replica: Vec<Option<u32>>,
    /// Reloads asked for and not reported yet: (holder, rank).
    reloading: Vec<(u32, u32)>,
    state: State,
}

impl Schedule {
    /// A reduction whose result goes to `root`, over a group whose rank
    /// `r` lives on host `hosts[r]`.
    pub fn new(root: u32, hosts: Vec<u64>) -> Schedule {
        let size = hosts.len() as u32;
        Schedule {
            size,
            root,
            queue: VecDeque::new(),
            running: Vec::new(),
            tasks: 0,
            dead: vec![false; size as usize],
            hosts,
            contributed: Path::default(),
            unannounced: Path::default(),
            replica: vec![None; size as usize],
            reloading: Vec::new(),
            state: State::Open,
        }
    }

    /// Where it stands.
    pub fn state(&self) -> State {
        self.state
    }

    /// Whether `rank` is known dead.
    pub fn is_dead(&self, rank: u32) -> bool {
        self.dead.get(rank as usize).copied().unwrap_or(true)
    }

    /// Rank `line.holder` contributed its own data (`line`): it is in a
    /// file on its host too, and durable elsewhere once
    /// [`Schedule::replicated`].
    pub fn contributed(&mut self, line: Line, perf: &Perf) -> Vec<Action> {
        if self.state != State::Open || self.is_dead(line.holder) {
            return Vec::new();
        }
        for r in line.path.ranks() {
            self.contributed.insert(r);
        }
        self.queue.push_back(line);
        self.pair(perf)
    }

    /// Task `number` is done, in `took`: its holder's line now holds both
    /// paths.
    pub fn done(&mut self, number: u64, took: Duration, perf: &mut Perf) -> Vec<Action> {
        let Some(i) = self.running.iter().position(|t| t.number == number) else {
            return Vec::new();
        };
        let task = self.running.remove(i);
        if self.state != State::Open || self.is_dead(task.into.holder) {
            return Vec::new();
        }
        perf.record(task.into.holder, took);
        self.queue.push_back(Line {
            path: task.into.path.union(&task.from.path),
            recovered: false,
            ..task.into
        });
        self.pair(perf)
    }

    /// `holder` loaded rank `rank`'s original again, into its buffer at
    /// `disp`.
    pub fn reloaded(&mut self, holder: u32, rank: u32, disp: u64, perf: &Perf) -> Vec<Action> {
        let Some(i) = self.reloading.iter().position(|&r| r == (holder, rank)) else {
            return Vec::new();
        };
        self.reloading.remove(i);
        if self.state != State::Open || self.is_dead(holder) {
            return Vec::new();
        }
        self.queue.push_back(Line {
            holder,
            disp,
            path: Path::single(rank),
            recovered: true,
        });
        self.pair(perf)
    }

    /// Task `number`'s fetch failed (its provider died): its `into` line
    /// goes back to the queue unchanged and the provider's path is
    /// rebuilt from originals (the spec's failure 3).
    pub fn aborted(&mut self, number: u64, perf: &Perf) -> Vec<Action> {
        let Some(i) = self.running.iter().position(|t| t.number == number) else {
            return Vec::new();
        };
        let task = self.running.remove(i);
        let mut actions = self.died(task.from.holder, perf);
        if self.state != State::Open {
            return actions;
        }
        let lost_path = task.from.path;
        self.queue.push_back(task.into);
        actions.extend(self.singles(&lost_path));
        actions.extend(self.pair(perf));
        actions
    }

    /// `rank` died: every line it held is rebuilt from originals (the
    /// spec's failures 1 and 2 for a task it was given, and lines it
    /// waited with in the queue); tasks it was providing wait for their
    /// fetch's outcome; replicas it held are made again elsewhere.
    pub fn died(&mut self, rank: u32, perf: &Perf) -> Vec<Action> {
        if self.is_dead(rank) {
            return Vec::new();
        }
        self.dead[rank as usize] = true;
        if self.state != State::Open {
            return Vec::new();
        }
        if rank == self.root {
            return self.fail(Failure::RootDied(rank));
        }
        let mut lost = Vec::new();
        if !self.contributed.contains(rank) {
            // Its data is in a file on its host and a replica on another
            // if its call returned: whoever has one reloads it, else says
            // it is lost ([`Schedule::lost`]).
            if self.copy_of(rank).is_none() {
                return self.fail(Failure::DiedBeforeContributing(rank));
            }
            self.contributed.insert(rank);
            self.unannounced.insert(rank);
            lost.push(Path::single(rank));
        }
        let mut back = Vec::new();
        let mut kept = Vec::new();
        for t in std::mem::take(&mut self.running) {
            if t.into.holder != rank {
                // Its provider may be `rank`: the fetch either got through
                // (a line comes) or fails ([`Schedule::aborted`]).
                kept.push(t);
                continue;
            }
            // Failures 1 and 2: the provider's line is intact, unless it
            // was the dead rank's too.
            lost.push(t.into.path);
            match t.from.holder == rank {
                true => lost.push(t.from.path),
                false => back.push(t.from),
            }
        }
        self.running = kept;
        self.queue.retain(|l| {
            if l.holder == rank {
                lost.push(l.path.clone());
            }
            l.holder != rank
        });
        let mut actions = Vec::new();
        // Reloads it was doing: from the other copy.
        let reloads: Vec<(u32, u32)> = (self.reloading.iter())
            .filter(|&&(holder, _)| holder == rank)
            .copied()
            .collect();
        self.reloading.retain(|&(holder, _)| holder != rank);
        for (_, r) in reloads {
            lost.push(Path::single(r));
        }
        // Replicas it held: made again on the next live rank.
        for owner in 0..self.size {
            if self.replica[owner as usize] == Some(rank) {
                self.replica[owner as usize] = None;
                if !self.is_dead(owner) {
                    if let Some(holder) = replica_holder(owner, &self.hosts, |r| self.is_dead(r)) {
                        actions.push(Action::Replicate { owner, holder });
                    }
                }
            }
        }
        self.queue.extend(back);
        for path in lost {
            actions.extend(self.singles(&path));
            if self.state != State::Open {
                return actions;
            }
        }
        actions.extend(self.pair(perf));
        actions
    }

    /// `rank` cannot take part (it could not store its data).
    pub fn withdrawn(&mut self, rank: u32) -> Vec<Action> {
        match self.state {
            State::Open => self.fail(Failure::Withdrew(rank)),
            _ => Vec::new(),
        }
    }

    /// Rank `rank`'s data could not be loaded again: the reduction fails
    /// (when it died before its call returned, saying so).
    pub fn lost(&mut self, rank: u32) -> Vec<Action> {
        match (self.state, self.unannounced.contains(rank)) {
            (State::Open, true) => self.fail(Failure::DiedBeforeContributing(rank)),
            (State::Open, false) => self.fail(Failure::DataLost(rank)),
            _ => Vec::new(),
        }
    }

    /// `owner`'s original is durable on `holder` again.
    pub fn replicated(&mut self, owner: u32, holder: u32) {
        if let Some(slot) = self.replica.get_mut(owner as usize) {
            if !self.dead.get(holder as usize).copied().unwrap_or(true) {
                *slot = Some(holder);
            }
        }
    }

    /// Who can load dead rank `rank`'s original: its replica's holder
    /// when known, else a live rank on its host (from its file), else
    /// the rank its replica goes to by [`replica_holder`] (it may not have
    /// it yet: it then says the data is lost).
    fn copy_of(&self, rank: u32) -> Option<u32> {
        let host = self.hosts[rank as usize];
        (self.replica[rank as usize].filter(|&h| !self.is_dead(h)))
            .or_else(|| {
                (0..self.size).find(|&r| !self.is_dead(r) && self.hosts[r as usize] == host)
            })
            .or_else(|| replica_holder(rank, &self.hosts, |r| self.is_dead(r)))
    }

    /// The reloads that rebuild `path`: each rank's original from the
    /// rank itself when it lives, else from a copy
    /// ([`Schedule::copy_of`]; the spec's step 3: single, fault-tolerant
    /// lines).
    fn singles(&mut self, path: &Path) -> Vec<Action> {
        let mut actions = Vec::new();
        for rank in path.ranks() {
            let holder = match self.is_dead(rank) {
                false => Some(rank),
                true => self.copy_of(rank),
            };
            match holder {
                Some(holder) => {
                    self.reloading.push((holder, rank));
                    actions.push(Action::Reload { holder, rank });
                }
                None => return self.fail(Failure::DataLost(rank)),
            }
        }
        actions
    }

    fn fail(&mut self, why: Failure) -> Vec<Action> {
        self.state = State::Failed(why);
        vec![Action::Failed(why)]
    }

    /// Pairs queued lines in arrival order (steps 3 and 4).
    fn pair(&mut self, perf: &Perf) -> Vec<Action> {
        let mut actions = Vec::new();
        while self.state == State::Open {
            if let Some(front) = self.queue.front() {
                if front.path.is_full(self.size) && front.holder == self.root {
                    actions.push(Action::Finished { disp: front.disp });
                    self.queue.clear();
                    self.state = State::Finished;
                    break;
                }
            }
            if self.queue.len() < 2 {
                break;
            }
            let (a, b) = match (self.queue.pop_front(), self.queue.pop_front()) {
                (Some(a), Some(b)) => (a, b),
                _ => break,
            };
            let (into, from) = match self.takes_task(&a, &b, perf) {
                true => (a, b),
                false => (b, a),
            };
            self.tasks += 1;
            let task = Task {
                number: self.tasks,
                into,
                from,
            };
            self.running.push(task.clone());
            actions.push(Action::Assign(task));
        }
        actions
    }

    /// Whether `a` (which arrived first) takes the task rather than `b`:
    /// the root's line; else a recovered line; else the holder whose last
    /// task was faster (the first on a tie).
    fn takes_task(&self, a: &Line, b: &Line, perf: &Perf) -> bool {
        let root = |l: &Line| l.holder == self.root;
        if root(a) != root(b) {
            return root(a);
        }
        if a.recovered != b.recovered {
            return a.recovered;
        }
        perf.last(a.holder) <= perf.last(b.holder)
    }
}

/// Where rank `owner`'s replica goes: the first live rank after it
/// (cyclically) on another host (`hosts[r]` is rank r's); none when every
/// live rank shares its host (its file there serves them all). Workers
/// and the master apply the same rule.
pub fn replica_holder(owner: u32, hosts: &[u64], dead: impl Fn(u32) -> bool) -> Option<u32> {
    let size = hosts.len() as u32;
    let host = hosts.get(owner as usize)?;
    (1..size)
        .map(|k| (owner + k) % size)
        .find(|&r| !dead(r) && hosts[r as usize] != *host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(holder: u32, path: &[u32]) -> Line {
        Line {
            holder,
            disp: u64::from(holder) << 40,
            path: path
                .iter()
                .fold(Path::default(), |p, &r| p.union(&Path::single(r))),
            recovered: false,
        }
    }

    fn assigned(actions: &[Action]) -> Vec<Task> {
        (actions.iter())
            .filter_map(|a| match a {
                Action::Assign(t) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn lines_pair_in_arrival_order_and_the_root_keeps_the_result() {
        let mut perf = Perf::default();
        let mut s = Schedule::new(0, vec![0; 4]);
        let ms = Duration::from_millis;
        s.replicated(2, 3);
        assert!(s.contributed(line(2, &[2]), &perf).is_empty());
        s.replicated(3, 0);
        let a = assigned(&s.contributed(line(3, &[3]), &perf));
        assert_eq!(a.len(), 1);
        assert_eq!(
            (a[0].into.holder, a[0].from.holder),
            (2, 3),
            "the first on a tie"
        );
        // The root takes any task it is in, though it came second.
        s.replicated(1, 2);
        let b = assigned(&s.contributed(line(1, &[1]), &perf));
        assert!(b.is_empty());
        s.replicated(0, 1);
        let b = assigned(&s.contributed(line(0, &[0]), &perf));
        assert_eq!((b[0].into.holder, b[0].from.holder), (0, 1));
        let c = assigned(&s.done(1, ms(5), &mut perf));
        assert!(c.is_empty());
        let c = assigned(&s.done(2, ms(9), &mut perf));
        assert_eq!((c[0].into.holder, c[0].from.holder), (0, 2));
        let end = s.done(3, ms(1), &mut perf);
        assert_eq!(end, vec![Action::Finished { disp: 0 }]);
        assert_eq!(s.state(), State::Finished);
        assert_eq!(perf.last(2), ms(5));
    }

    #[test]
    fn the_faster_worker_takes_the_task() {
        let mut perf = Perf::default();
        perf.record(1, Duration::from_millis(8));
        perf.record(2, Duration::from_millis(2));
        let mut s = Schedule::new(0, vec![0; 3]);
        s.replicated(1, 2);
        s.contributed(line(1, &[1]), &perf);
        s.replicated(2, 0);
        let t = assigned(&s.contributed(line(2, &[2]), &perf));
        assert_eq!(t[0].into.holder, 2);
        // A recovered line takes it before speed counts.
        let mut r = Schedule::new(0, vec![0; 3]);
        r.replicated(2, 0);
        r.contributed(line(2, &[2]), &perf);
        r.reloading.push((1, 1));
        let t = assigned(&r.reloaded(1, 1, 0, &perf));
        assert_eq!(t[0].into.holder, 1);
        assert!(t[0].into.recovered);
    }

    #[test]
    fn one_rank_finishes_at_once() {
        let mut s = Schedule::new(0, vec![0; 1]);
        let a = s.contributed(line(0, &[0]), &Perf::default());
        assert_eq!(a, vec![Action::Finished { disp: 0 }]);
    }

    /// 4 ranks, root 0; 1 and 2 paired (1 takes the task).
    fn started() -> (Schedule, Perf, Task) {
        let perf = Perf::default();
        let mut s = Schedule::new(0, vec![0; 4]);
        s.replicated(1, 2);
        s.contributed(line(1, &[1]), &perf);
        s.replicated(2, 3);
        let t = assigned(&s.contributed(line(2, &[2]), &perf));
        s.replicated(3, 0);
        s.contributed(line(3, &[3]), &perf);
        (s, perf, t[0].clone())
    }

    #[test]
    fn failures_1_and_2_requeue_the_provider_and_reload_the_lost_path() {
        let (mut s, perf, t) = started();
        assert_eq!((t.into.holder, t.from.holder), (1, 2));
        // The task's holder dies (given the task, or while running it).
        let a = s.died(1, &perf);
        // 2's line is back and pairs with 3 (which waited); 1's data is
        // reloaded from its replica on 2.
        assert!(a.contains(&Action::Reload { holder: 2, rank: 1 }));
        let t2 = assigned(&a);
        assert_eq!(t2.len(), 1);
        assert_eq!(
            t2[0].from.path.union(&t2[0].into.path),
            line(0, &[2, 3]).path
        );
        // A task to a dead rank is never given: its reload is.
        let a = s.reloaded(2, 1, 7, &perf);
        assert!(assigned(&a).is_empty(), "one line waits: {a:?}");
        assert_eq!(s.queue.len(), 1);
    }

    #[test]
    fn failure_3_waits_for_the_fetch_then_requeues_the_fetcher() {
        let (mut s, mut perf, t) = started();
        // The provider, 2, dies while 1 fetches from it.
        let a = s.died(2, &perf);
        assert!(assigned(&a).is_empty());
        assert!(!a.iter().any(|a| matches!(a, Action::Reload { .. })));
        // The fetch failed: 1's line is back, 2's original comes from its
        // replica's holder, 3.
        let a = s.aborted(t.number, &perf);
        assert!(a.contains(&Action::Reload { holder: 3, rank: 2 }));
        let paired = assigned(&a);
        assert_eq!(paired.len(), 1, "1's line pairs with 3's");
        // Had the fetch got through, its line would have counted instead.
        let (mut s, _, t) = started();
        s.died(2, &perf);
        let a = s.done(t.number, Duration::ZERO, &mut perf);
        assert_eq!(assigned(&a).len(), 1);
        assert!(!a.iter().any(|a| matches!(a, Action::Reload { .. })));
    }

    #[test]
    fn deaths_that_cannot_be_recovered_fail_naming_the_rank() {
        let perf = Perf::default();
        let (mut s, _, _) = started();
        assert_eq!(s.died(0, &perf), vec![Action::Failed(Failure::RootDied(0))]);
        assert!(s.died(3, &perf).is_empty(), "failed already");
        // Alone on its host, 2 dies before contributing: its replica's
        // holder looks for it, and has none (2's call had not returned).
        let mut s = Schedule::new(0, vec![0, 0, 1]);
        assert_eq!(
            s.died(2, &perf),
            vec![Action::Reload { holder: 0, rank: 2 }]
        );
        assert_eq!(
            s.lost(2),
            vec![Action::Failed(Failure::DiedBeforeContributing(2))]
        );
        // With a live rank on its host, its file is looked for; none
        // there means it died before its call returned.
        let mut s = Schedule::new(0, vec![0; 3]);
        assert_eq!(
            s.died(2, &perf),
            vec![Action::Reload { holder: 0, rank: 2 }]
        );
        assert_eq!(
            s.lost(2),
            vec![Action::Failed(Failure::DiedBeforeContributing(2))]
        );
        // 1 and its replica's holder 2 both die while 1's line waits,
        // each on its own host.
        let perf = Perf::default();
        let mut s = Schedule::new(0, vec![0, 1, 2]);
        s.replicated(1, 2);
        s.contributed(line(1, &[1]), &perf);
        s.replicated(2, 0);
        s.contributed(line(2, &[2]), &perf);
        let a = s.died(2, &perf);
        assert!(a.contains(&Action::Replicate {
            owner: 1,
            holder: 0
        }));
        // 0 is asked for a replica it does not have yet.
        assert_eq!(
            s.died(1, &perf).last(),
            Some(&Action::Reload { holder: 0, rank: 1 })
        );
        assert_eq!(s.lost(1), vec![Action::Failed(Failure::DataLost(1))]);
        // Replicated again in time, it is recovered.
        let mut s = Schedule::new(0, vec![0, 1, 2]);
        s.replicated(1, 2);
        s.contributed(line(1, &[1]), &perf);
        s.replicated(2, 0);
        s.contributed(line(2, &[2]), &perf);
        s.died(2, &perf);
        s.replicated(1, 0);
        assert!(s
            .died(1, &perf)
            .contains(&Action::Reload { holder: 0, rank: 1 }));
    }

    #[test]
    fn a_dead_rank_without_a_replica_is_read_on_its_host() {
        let perf = Perf::default();
        // Hosts: 0 and 2 on one, 1 on another, 3 on a third.
        let hosts = vec![7, 8, 7, 9];
        // 2's line waits in the queue when 2 dies: its file is read by 0,
        // on its host, its replica not durable yet.
        let mut s = Schedule::new(0, hosts.clone());
        s.contributed(line(2, &[2]), &perf);
        let a = s.died(2, &perf);
        assert_eq!(a, vec![Action::Reload { holder: 0, rank: 2 }]);
        // 1 dies with its host: only its replica can serve, on 2 (the
        // next rank on another host), which says whether it has it.
        let mut s = Schedule::new(0, hosts);
        s.contributed(line(1, &[1]), &perf);
        assert_eq!(
            s.died(1, &perf),
            vec![Action::Reload { holder: 2, rank: 1 }]
        );
        assert_eq!(s.lost(1), vec![Action::Failed(Failure::DataLost(1))]);
    }

    #[test]
    fn a_replica_goes_to_the_next_live_rank_on_another_host() {
        let hosts = [7, 7, 8, 7, 9];
        let none = |_| false;
        assert_eq!(replica_holder(0, &hosts, none), Some(2));
        assert_eq!(replica_holder(2, &hosts, none), Some(3));
        assert_eq!(replica_holder(4, &hosts, none), Some(0));
        assert_eq!(replica_holder(1, &hosts, |r| r == 2), Some(4));
        assert_eq!(replica_holder(1, &hosts, |r| r == 2 || r == 4), None);
        assert_eq!(replica_holder(0, &[3; 4], none), None, "one host");
        assert_eq!(replica_holder(5, &hosts, none), None, "outside");
    }

    /// A tiny deterministic generator (xorshift) for the simulation.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Runs a reduction of `size` ranks to the end: workers report in a
    /// random order, tasks finish in a random order, `victim` dies after
    /// `when` events. Each line's data is simulated as a count per rank;
    /// returns the final state, the root's counts, and how many reloads
    /// and aborted fetches the recovery took.
    fn simulate(
        size: u32,
        root: u32,
        victim: Option<(u32, usize)>,
        seed: u64,
    ) -> (State, Vec<u32>, [usize; 2]) {
        let mut rng = Rng(seed | 1);
        let mut perf = Perf::default();
        let mut s = Schedule::new(root, vec![0; size as usize]);
        // Data per (holder, disp): counts per rank.
        let mut data: std::collections::HashMap<(u32, u64), Vec<u32>> = Default::default();
        let unit = |r: u32| (0..size).map(|k| u32::from(k == r)).collect::<Vec<_>>();
        let mut pending: Vec<Event> = (0..size).map(Event::Contribute).collect();
        let mut dead = vec![false; size as usize];
        let mut next_disp = 1u64;
        let mut events = 0;
        let mut result = None;
        let mut recovery = [0, 0];
        #[derive(Debug)]
        enum Event {
            Contribute(u32),
            Run(Task),
            Reload(u32, u32),
            Replicate(u32),
        }
        while s.state() == State::Open && !pending.is_empty() {
            if let Some((v, when)) = victim {
                if events >= when && !dead[v as usize] && s.contributed.contains(v) {
                    dead[v as usize] = true;
                    let actions = s.died(v, &perf);
                    pending.extend(to_events(actions));
                }
            }
            events += 1;
            let ev = pending.remove(rng.below(pending.len() as u64) as usize);
            let actions = match ev {
                Event::Contribute(r) if !dead[r as usize] => {
                    data.insert((r, 0), unit(r));
                    let l = Line {
                        holder: r,
                        disp: 0,
                        path: Path::single(r),
                        recovered: false,
                    };
                    pending.push(Event::Replicate(r));
                    s.contributed(l, &perf)
                }
                Event::Run(t) if !dead[t.into.holder as usize] => {
                    if dead[t.from.holder as usize] {
                        recovery[1] += 1;
                        s.aborted(t.number, &perf)
                    } else {
                        let from = data[&(t.from.holder, t.from.disp)].clone();
                        let into = data.get_mut(&(t.into.holder, t.into.disp)).expect("into");
                        into.iter_mut().zip(&from).for_each(|(a, b)| *a += b);
                        let took = Duration::from_micros(rng.below(100));
                        s.done(t.number, took, &mut perf)
                    }
                }
                Event::Reload(holder, rank) if !dead[holder as usize] => {
                    recovery[0] += 1;
                    let disp = match holder == rank {
                        true => 0,
                        false => {
                            next_disp += 1;
                            next_disp
                        }
                    };
                    data.insert((holder, disp), unit(rank));
                    s.reloaded(holder, rank, disp, &perf)
                }
                Event::Replicate(r) if !dead[r as usize] => {
                    s.replicated(r, (r + 1) % size);
                    Vec::new()
                }
                _ => Vec::new(),
            };
            result = result.or(actions.iter().find_map(|a| match a {
                Action::Finished { disp } => Some(*disp),
                _ => None,
            }));
            pending.extend(to_events(actions));
        }
        fn to_events(actions: Vec<Action>) -> Vec<Event> {
            (actions.into_iter())
                .filter_map(|a| match a {
                    Action::Assign(t) => Some(Event::Run(t)),
                    Action::Reload { holder, rank } => Some(Event::Reload(holder, rank)),
                    _ => None,
                })
                .collect()
        }
        let result = result.and_then(|disp| data.get(&(root, disp)).cloned());
        (s.state(), result.unwrap_or_default(), recovery)
    }

    #[test]
    fn every_single_failure_of_a_worker_that_contributed_is_recovered() {
        let mut recovered = [0, 0];
        for size in 1..=7u32 {
            for root in 0..size {
                for seed in 1..40u64 {
                    let (state, counts, _) = simulate(size, root, None, seed);
                    assert_eq!(state, State::Finished, "p {size} root {root} seed {seed}");
                    assert!(counts.iter().all(|&c| c == 1), "{counts:?}");
                    if size < 2 {
                        continue;
                    }
                    let victim = (root + 1 + (seed as u32) % (size - 1)) % size;
                    let when = size as usize + (seed as usize % (3 * size as usize));
                    let (state, counts, [reloads, aborts]) =
                        simulate(size, root, Some((victim, when)), seed);
                    recovered[0] += reloads;
                    recovered[1] += aborts;
                    assert_eq!(
                        state,
                        State::Finished,
                        "p {size} root {root} victim {victim} at {when} seed {seed}"
                    );
                    assert!(
                        counts.iter().all(|&c| c == 1),
                        "every rank counted once: {counts:?} (p {size} root {root} victim {victim} at {when} seed {seed})"
                    );
                }
            }
        }
        // The deaths came at every point: reloads and failed fetches both.
        assert!(recovered[0] > 100 && recovered[1] > 50, "{recovered:?}");
    }
}
