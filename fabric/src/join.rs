//! Processes that join a running job (the expansion of a malleable job):
//! the job's processes reserve the next ranks, one of them (the root)
//! asks the launcher to start the new processes (PMI-1 `spawn`) and hands
//! them every rank's address and place as preput keys; each new process
//! connects and tells the root its own address (a `JOIN` notice). The
//! root passes the new places down a binomial tree of the old processes
//! ([`crate::binomial`], over the members the root counts live, which the
//! notice names so that every process draws the same tree); each adds
//! them, passes them on, and answers its sender once its subtree knows
//! them; the root then welcomes the new processes. Per old process:
//! at most ceil(log2 p) notices sent, one answer, ceil(log2 p) rounds down
//! and up; per new process: one notice sent, one received. A failed
//! spawn goes down the same tree. No old process re-initialises; nothing
//! goes through an intercommunicator. The messages are one control
//! service of the fabric's own; their texts are encoded and parsed here
//! (pure).

use std::sync::{Arc, Mutex};

use crate::endpoint::Endpoint;
use crate::error::{Error, Result};
use crate::liveness::Process;

/// The fabric's service of join notices (the range 0x0001-0x00ff is the
/// fabric's own).
pub(crate) const JOIN: u16 = 0x0001;

/// Preput key of a spawn: `FIRST:COUNT`, the new processes' job ranks
/// (PMI values hold no blanks).
pub const JOIN_KEY: &str = "onesided-join";

/// Preput key of job rank `rank`'s address and place, for new processes:
/// `HEXNAME:HOST:PROCESS:BOARD` (empty for a rank that has left).
pub(crate) fn rank_key(rank: u32) -> String {
    format!("onesided-rank-{rank}")
}

/// A rank's address and place, as new processes learn it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Place {
    pub name: Vec<u8>,
    pub host: u64,
    pub board: String,
    /// Its process ([`Process`]), when known.
    pub process: Option<Process>,
}

impl Place {
    /// `HEXNAME:HOST:PROCESS:BOARD` (PROCESS empty when unknown).
    pub(crate) fn encode(&self) -> String {
        format!(
            "{}:{:016x}:{}:{}",
            crate::world::hex_encode(&self.name),
            self.host,
            self.process.map(|p| p.encode()).unwrap_or_default(),
            self.board
        )
    }

    /// Parses [`Place::encode`]'s text; `None` when malformed.
    pub(crate) fn parse(text: &str) -> Option<Place> {
        let mut fields = text.splitn(4, ':');
        let name = crate::world::hex_decode(fields.next()?)?;
        let host = u64::from_str_radix(fields.next()?, 16).ok()?;
        let process = match fields.next()? {
            "" => None,
            text => Some(Process::parse(text)?),
        };
        let board = fields.next()?.to_string();
        (!name.is_empty()).then_some(Place {
            name,
            host,
            board,
            process,
        })
    }
}

/// What a join notice says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Notice {
    /// A new process: its place (its rank is the sender's).
    Join(Place),
    /// Every old process knows the new one now (from the root).
    Welcome,
    /// The spawn of the ranks from `first` succeeded: some of their
    /// places (by rank), for the old processes other than `excluded`
    /// (dead, left or never joined, in the root's view).
    Spawn {
        first: u32,
        excluded: Vec<u32>,
        places: Vec<(u32, Place)>,
    },
    /// The spawn of the ranks from `first` failed: why.
    SpawnFailed {
        first: u32,
        excluded: Vec<u32>,
        why: String,
    },
    /// The sender's subtree knows the ranks from `first`.
    Known(u32),
    /// The sender is leaving the job ([`crate::World::leave`]).
    Bye,
    /// The sender has reached this round of the finalizing barrier of a
    /// job whose membership changed (a dissemination barrier over the
    /// live ranks).
    Finalize(u32),
}

impl Notice {
    pub(crate) fn encode(&self) -> Vec<u8> {
        match self {
            Notice::Join(place) => format!("join {}", place.encode()),
            Notice::Welcome => "welcome".into(),
            Notice::Spawn {
                first,
                excluded,
                places,
            } => {
                let places: Vec<String> = (places.iter())
                    .map(|(r, p)| format!(" {r}={}", p.encode()))
                    .collect();
                format!("spawn {first} {}{}", ranks(excluded), places.concat())
            }
            Notice::SpawnFailed {
                first,
                excluded,
                why,
            } => format!("spawnfailed {first} {} {why}", ranks(excluded)),
            Notice::Known(first) => format!("known {first}"),
            Notice::Bye => "bye".into(),
            Notice::Finalize(round) => format!("finalize {round}"),
        }
        .into_bytes()
    }

    pub(crate) fn parse(body: &[u8]) -> Option<Notice> {
        let text = std::str::from_utf8(body).ok()?;
        let (word, rest) = text.split_once(' ').unwrap_or((text, ""));
        match word {
            "join" => Place::parse(rest).map(Notice::Join),
            "welcome" => Some(Notice::Welcome),
            "spawn" => {
                let mut words = rest.split(' ');
                let first = words.next()?.parse().ok()?;
                let excluded = parse_ranks(words.next()?)?;
                let places = words
                    .map(|w| {
                        let (r, p) = w.split_once('=')?;
                        Some((r.parse().ok()?, Place::parse(p)?))
                    })
                    .collect::<Option<_>>()?;
                Some(Notice::Spawn {
                    first,
                    excluded,
                    places,
                })
            }
            "spawnfailed" => {
                let mut words = rest.splitn(3, ' ');
                Some(Notice::SpawnFailed {
                    first: words.next()?.parse().ok()?,
                    excluded: parse_ranks(words.next()?)?,
                    why: words.next().unwrap_or_default().to_string(),
                })
            }
            "known" => rest.parse().ok().map(Notice::Known),
            "bye" => Some(Notice::Bye),
            "finalize" => rest.parse().ok().map(Notice::Finalize),
            _ => None,
        }
    }
}

/// Sorted `ranks` as runs, `1-3,5,9-12`, or `-` for none (the ranks a
/// job lost accumulate in runs: those that left, a failed spawn's).
fn ranks(ranks: &[u32]) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &r in ranks {
        match runs.last_mut() {
            Some((_, end)) if end.checked_add(1) == Some(r) => *end = r,
            _ => runs.push((r, r)),
        }
    }
    match runs.is_empty() {
        true => "-".into(),
        false => (runs.iter())
            .map(|&(a, b)| match a == b {
                true => a.to_string(),
                false => format!("{a}-{b}"),
            })
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// Parses [`ranks`]' text.
fn parse_ranks(text: &str) -> Option<Vec<u32>> {
    if text == "-" {
        return Some(Vec::new());
    }
    let mut out = Vec::new();
    for run in text.split(',') {
        let (a, b) = run.split_once('-').unwrap_or((run, run));
        let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
        if b < a || b - a > crate::MAX_RANKS {
            return None;
        }
        out.extend(a..=b);
    }
    Some(out)
}

/// The places of `places` in [`Notice::Spawn`] notices that each fit in a
/// control message (one at least, even with no place).
pub(crate) fn spawn_notices(first: u32, excluded: &[u32], places: &[(u32, Place)]) -> Vec<Notice> {
    let head = format!("spawn {first} {}", ranks(excluded)).len();
    let mut notices = Vec::new();
    let (mut chunk, mut len) = (Vec::new(), head);
    for (r, place) in places {
        let more = format!(" {r}={}", place.encode()).len();
        if !chunk.is_empty() && len + more > crate::control::MAX_REQUEST {
            notices.push(std::mem::take(&mut chunk));
            len = head;
        }
        chunk.push((*r, place.clone()));
        len += more;
    }
    notices.push(chunk);
    (notices.into_iter())
        .map(|places| Notice::Spawn {
            first,
            excluded: excluded.to_vec(),
            places,
        })
        .collect()
}

/// The join notices received, by sender, as the service records them
/// (its handler runs in the progress engine and must not call the
/// endpoint).
#[derive(Clone, Default)]
pub(crate) struct Inbox(Arc<Mutex<Vec<(u32, Notice)>>>);

impl Inbox {
    /// Serves the join service on `ep` into this inbox.
    pub(crate) fn serve(&self, ep: &Endpoint) -> Result<()> {
        let inbox = Arc::clone(&self.0);
        ep.serve(JOIN, move |from, body, _| {
            if let Some(notice) = Notice::parse(body) {
                inbox
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((from, notice));
            }
            Vec::new()
        })
    }

    /// Waits until `pick` has taken a notice from each of `from` (ranks),
    /// within the endpoint's timeout; the others stay.
    ///
    /// # Errors
    /// [`Error::PeerDead`] when one of them dies; [`Error::Timeout`] naming
    /// the first not heard from.
    pub(crate) fn wait<T>(
        &self,
        ep: &Endpoint,
        op: &'static str,
        from: &[u32],
        mut pick: impl FnMut(u32, &Notice) -> Option<T>,
    ) -> Result<Vec<(u32, T)>> {
        let mut got: Vec<(u32, T)> = Vec::with_capacity(from.len());
        self.until(ep, op, |inbox| {
            inbox.retain(|(rank, notice)| {
                let wanted = from.contains(rank) && !got.iter().any(|(r, _)| r == rank);
                match wanted.then(|| pick(*rank, notice)).flatten() {
                    Some(t) => {
                        got.push((*rank, t));
                        false
                    }
                    None => true,
                }
            });
            match from.iter().find(|r| !got.iter().any(|(g, _)| g == *r)) {
                Some(&rank) => Err(rank),
                None => Ok(std::mem::take(&mut got)),
            }
        })
    }

    /// Waits for the first notice from any sender that `pick` takes,
    /// within the endpoint's timeout; the others stay.
    ///
    /// # Errors
    /// [`Error::PeerDead`] when `watch` (the expected sender) dies;
    /// [`Error::Timeout`] naming it.
    pub(crate) fn wait_any<T>(
        &self,
        ep: &Endpoint,
        op: &'static str,
        watch: u32,
        mut pick: impl FnMut(u32, &Notice) -> Option<T>,
    ) -> Result<(u32, T)> {
        self.until(ep, op, |inbox| {
            let found = (inbox.iter().enumerate())
                .find_map(|(i, (rank, notice))| Some((i, *rank, pick(*rank, notice)?)));
            let (i, rank, t) = found.ok_or(watch)?;
            inbox.remove(i);
            Ok((rank, t))
        })
    }

    /// Makes progress until `look` finds what it waits for in the inbox
    /// (`Err(rank)`: still waiting for `rank`), within the endpoint's
    /// timeout.
    fn until<T>(
        &self,
        ep: &Endpoint,
        op: &'static str,
        mut look: impl FnMut(&mut Vec<(u32, Notice)>) -> std::result::Result<T, u32>,
    ) -> Result<T> {
        let mut backoff = ep.backoff();
        loop {
            ep.progress();
            let rank = match look(&mut self.0.lock().unwrap_or_else(|p| p.into_inner())) {
                Ok(t) => return Ok(t),
                Err(rank) => rank,
            };
            if ep.ranks().is_dead(rank) {
                return Err(Error::PeerDead { op, rank });
            }
            if backoff.pause() > ep.timeout() {
                return Err(Error::Timeout {
                    op,
                    rank,
                    after: ep.timeout(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_parse_back() {
        let place = Place {
            name: vec![0, 1, 0xab],
            host: 0x1234,
            board: "/onesided-board-7".into(),
            process: Some(Process {
                machine: 5,
                namespace: 6,
                pid: 7,
                start: 8,
            }),
        };
        assert_eq!(
            place.encode(),
            "0001ab:0000000000001234:0000000000000005.6.7.8:/onesided-board-7"
        );
        let unknown = Place {
            process: None,
            ..place.clone()
        };
        for n in [
            Notice::Join(place.clone()),
            Notice::Join(unknown),
            Notice::Welcome,
            Notice::Spawn {
                first: 4,
                excluded: vec![],
                places: vec![(4, place.clone()), (5, place.clone())],
            },
            Notice::Spawn {
                first: 4,
                excluded: vec![1, 3],
                places: vec![],
            },
            Notice::SpawnFailed {
                first: 9,
                excluded: vec![2],
                why: "no such program: x y".into(),
            },
            Notice::SpawnFailed {
                first: 900,
                excluded: (3..700).chain([702, 704, 705]).collect(),
                why: String::new(),
            },
            Notice::Known(7),
            Notice::Bye,
            Notice::Finalize(0),
            Notice::Finalize(23),
        ] {
            assert_eq!(Notice::parse(&n.encode()), Some(n));
        }
        assert_eq!(Notice::parse(b"join zz:1::b"), None);
        assert_eq!(Notice::parse(b"join :1::b"), None);
        assert_eq!(Notice::parse(b"join 01:1:x:b"), None);
        assert_eq!(Notice::parse(b"hello"), None);
        assert_eq!(Notice::parse(b"finalize x"), None);
        assert_eq!(Notice::parse(b"spawn 4 1,x"), None);
        assert_eq!(Notice::parse(b"spawn 4 - 5"), None);
        assert_eq!(Notice::parse(b"spawn 4 5-3"), None);
        assert_eq!(ranks(&(3..700).collect::<Vec<_>>()), "3-699");
        // Many places travel in notices that each fit a control message.
        let many: Vec<(u32, Place)> = (0..100).map(|r| (r, place.clone())).collect();
        let notices = spawn_notices(0, &[3], &many);
        assert!(notices.len() > 1);
        let mut back = Vec::new();
        for n in &notices {
            let bytes = n.encode();
            assert!(bytes.len() <= crate::control::MAX_REQUEST);
            match Notice::parse(&bytes) {
                Some(Notice::Spawn { places, .. }) => back.extend(places),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(back, many);
        assert_eq!(spawn_notices(0, &[], &[]).len(), 1);
        assert_eq!(Place::parse(""), None);
        assert_eq!(Place::parse("01:2:"), None);
        let no_board = Place::parse("01:2::").unwrap();
        assert_eq!(no_board.board, "");
        assert_eq!(no_board.process, None);
    }
}
