//! Processes that join a running job (the expansion of a malleable job):
//! the job's processes reserve the next ranks, one of them asks the
//! launcher to start the new processes (PMI-1 `spawn`) and hands them
//! every rank's address and place as preput keys; each new process
//! connects, tells every old process its own address (a `JOIN` notice to
//! the reserved rank), and is welcomed by each once it is known there.
//! No old process re-initialises; nothing goes through an
//! intercommunicator. The messages are one control service of the
//! fabric's own; their texts are encoded and parsed here (pure).

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
    /// An old process knows the new one now.
    Welcome,
    /// The root's spawn succeeded.
    Spawned,
    /// The root's spawn failed: why.
    Failed(String),
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
            Notice::Spawned => "spawned".into(),
            Notice::Failed(why) => format!("failed {why}"),
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
            "spawned" => Some(Notice::Spawned),
            "failed" => Some(Notice::Failed(rest.to_string())),
            "bye" => Some(Notice::Bye),
            "finalize" => rest.parse().ok().map(Notice::Finalize),
            _ => None,
        }
    }
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
        let mut backoff = ep.backoff();
        loop {
            ep.progress();
            {
                let mut inbox = self.0.lock().unwrap_or_else(|p| p.into_inner());
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
            }
            let missing = from.iter().find(|r| !got.iter().any(|(g, _)| g == *r));
            let Some(&rank) = missing else {
                return Ok(got);
            };
            if ep.is_dead(rank) {
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
            Notice::Spawned,
            Notice::Failed("no such program: x y".into()),
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
        assert_eq!(Place::parse(""), None);
        assert_eq!(Place::parse("01:2:"), None);
        let no_board = Place::parse("01:2::").unwrap();
        assert_eq!(no_board.board, "");
        assert_eq!(no_board.process, None);
    }
}
