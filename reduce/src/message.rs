//! The control messages of a reduction, and their wire form: small
//! notices of the endpoint's control plane (reduction data never travels
//! in them). Pure.
//!
//! Each starts with its kind (one byte), the reduction's id (u64) and
//! round (u32: how many times the members called `reduce` with that id
//! before), then its fields, little-endian.

use std::time::Duration;

use crate::schedule::Failure;

/// A reduction instance: its id and round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub id: u64,
    pub round: u32,
}

/// What members tell each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    // To the master.
    /// A worker's own data is contributed: in its buffer at `disp`
    /// (and, past the root, in a file on its host; its replica, on
    /// another host, follows: [`Message::Replicated`]).
    Contributed { key: Key, root: u32, disp: u64 },
    /// Task `number` is done (in `took`).
    Done {
        key: Key,
        number: u64,
        took: Duration,
    },
    /// Task `number`'s fetch failed.
    Aborted { key: Key, number: u64 },
    /// Rank `rank`'s original is loaded again, in the sender's buffer at
    /// `disp`.
    Reloaded { key: Key, rank: u32, disp: u64 },
    /// The sender keeps `owner`'s original, durable (its replica).
    Replicated { key: Key, owner: u32 },
    /// The sender cannot take part (it could not store its data).
    Withdrawn { key: Key, root: u32 },
    /// The sender's predecessor on the ring of live members (see
    /// the ring module) went silent or ended.
    Suspect { rank: u32 },
    // To workers.
    /// Fetch `from_holder`'s buffer at `from_disp` into yours at
    /// `into_disp`; `from_original`: that buffer holds its holder's
    /// original data (no task combined into it), so that it can serve as
    /// the holder's replica.
    Task {
        key: Key,
        number: u64,
        into_disp: u64,
        from_holder: u32,
        from_disp: u64,
        from_original: bool,
    },
    /// Load rank `rank`'s original (yours, or the replica you keep).
    Reload { key: Key, rank: u32 },
    /// Replicate your original on `holder`.
    Replicate { key: Key, holder: u32 },
    /// The result is at the root, in its buffer at `disp`.
    Finished { key: Key, disp: u64 },
    /// The reduction failed.
    Failed { key: Key, failure: Failure },
    /// The sender is alive (from its predecessor on the ring).
    Ping,
    /// Rank `rank` failed (the master's broadcast).
    Dead { rank: u32 },
    // Between workers.
    /// Keep a replica of the sender's original (`len` bytes), in its
    /// buffer at `disp`.
    Store { key: Key, disp: u64, len: u64 },
    /// Your replica is durable here (`ok`), or could not be stored.
    Stored { key: Key, ok: bool },
}

/// A message that does not parse: what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

impl Message {
    /// Its wire form.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        match self {
            Message::Contributed { key, root, disp } => {
                w.head(1, key).u32(*root).u64(*disp);
            }
            Message::Done { key, number, took } => {
                w.head(2, key).u64(*number).u64(took.as_nanos() as u64);
            }
            Message::Aborted { key, number } => {
                w.head(3, key).u64(*number);
            }
            Message::Reloaded { key, rank, disp } => {
                w.head(4, key).u32(*rank).u64(*disp);
            }
            Message::Replicated { key, owner } => {
                w.head(5, key).u32(*owner);
            }
            Message::Withdrawn { key, root } => {
                w.head(6, key).u32(*root);
            }
            Message::Suspect { rank } => {
                w.head(7, &Key { id: 0, round: 0 }).u32(*rank);
            }
            Message::Task {
                key,
                number,
                into_disp,
                from_holder,
                from_disp,
                from_original,
            } => {
                w.head(8, key).u64(*number).u64(*into_disp);
                w.u32(*from_holder).u64(*from_disp);
                w.u32(u32::from(*from_original));
            }
            Message::Reload { key, rank } => {
                w.head(9, key).u32(*rank);
            }
            Message::Replicate { key, holder } => {
                w.head(10, key).u32(*holder);
            }
            Message::Finished { key, disp } => {
                w.head(11, key).u64(*disp);
            }
            Message::Failed { key, failure } => {
                let (kind, rank) = match failure {
                    Failure::RootDied(r) => (0, r),
                    Failure::DiedBeforeContributing(r) => (1, r),
                    Failure::DataLost(r) => (2, r),
                    Failure::Withdrew(r) => (3, r),
                    Failure::MasterDied(r) => (4, r),
                };
                w.head(12, key).u32(kind).u32(*rank);
            }
            Message::Ping => {
                w.head(13, &Key { id: 0, round: 0 });
            }
            Message::Dead { rank } => {
                w.head(16, &Key { id: 0, round: 0 }).u32(*rank);
            }
            Message::Store { key, disp, len } => {
                w.head(14, key).u64(*disp).u64(*len);
            }
            Message::Stored { key, ok } => {
                w.head(15, key).u32(u32::from(*ok));
            }
        }
        w.0
    }

    /// The message of `bytes`.
    ///
    /// # Errors
    /// [`Malformed`], saying what: an unknown kind, a short or long
    /// message, a bad field.
    pub fn decode(bytes: &[u8]) -> Result<Message, Malformed> {
        let mut r = Reader { bytes, at: 0 };
        let kind = r.u8()?;
        let key = Key {
            id: r.u64()?,
            round: r.u32()?,
        };
        let m = match kind {
            1 => Message::Contributed {
                key,
                root: r.u32()?,
                disp: r.u64()?,
            },
            2 => Message::Done {
                key,
                number: r.u64()?,
                took: Duration::from_nanos(r.u64()?),
            },
            3 => Message::Aborted {
                key,
                number: r.u64()?,
            },
            4 => Message::Reloaded {
                key,
                rank: r.u32()?,
                disp: r.u64()?,
            },
            5 => Message::Replicated {
                key,
                owner: r.u32()?,
            },
            6 => Message::Withdrawn {
                key,
                root: r.u32()?,
            },
            7 => Message::Suspect { rank: r.u32()? },
            8 => Message::Task {
                key,
                number: r.u64()?,
                into_disp: r.u64()?,
                from_holder: r.u32()?,
                from_disp: r.u64()?,
                from_original: r.u32()? != 0,
            },
            9 => Message::Reload {
                key,
                rank: r.u32()?,
            },
            10 => Message::Replicate {
                key,
                holder: r.u32()?,
            },
            11 => Message::Finished {
                key,
                disp: r.u64()?,
            },
            12 => {
                let (kind, rank) = (r.u32()?, r.u32()?);
                let failure = match kind {
                    0 => Failure::RootDied(rank),
                    1 => Failure::DiedBeforeContributing(rank),
                    2 => Failure::DataLost(rank),
                    3 => Failure::Withdrew(rank),
                    4 => Failure::MasterDied(rank),
                    k => return Err(Malformed(format!("unknown failure kind {k}"))),
                };
                Message::Failed { key, failure }
            }
            13 => Message::Ping,
            16 => Message::Dead { rank: r.u32()? },
            14 => Message::Store {
                key,
                disp: r.u64()?,
                len: r.u64()?,
            },
            15 => Message::Stored {
                key,
                ok: match r.u32()? {
                    0 => false,
                    1 => true,
                    v => return Err(Malformed(format!("stored flag {v}, not 0 or 1"))),
                },
            },
            k => return Err(Malformed(format!("unknown message kind {k}"))),
        };
        match r.at == bytes.len() {
            true => Ok(m),
            false => Err(Malformed(format!(
                "{} bytes after a message of kind {kind}",
                bytes.len() - r.at
            ))),
        }
    }
}

#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn head(&mut self, kind: u8, key: &Key) -> &mut Writer {
        self.0.push(kind);
        self.u64(key.id).u32(key.round)
    }

    fn u32(&mut self, v: u32) -> &mut Writer {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    fn u64(&mut self, v: u64) -> &mut Writer {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], Malformed> {
        let end = self.at + N;
        let got = (self.bytes.get(self.at..end)).ok_or_else(|| {
            Malformed(format!(
                "a message of {} bytes ends inside a field at byte {}",
                self.bytes.len(),
                self.at
            ))
        })?;
        self.at = end;
        Ok(got.try_into().unwrap_or([0; N]))
    }

    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_le_bytes(self.take()?))
    }

    fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_le_bytes(self.take()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips_and_bad_ones_are_named() {
        let key = Key { id: 9, round: 2 };
        let all = [
            Message::Contributed {
                key,
                root: 1,
                disp: 1 << 40,
            },
            Message::Contributed {
                key,
                root: 0,
                disp: 0,
            },
            Message::Done {
                key,
                number: 3,
                took: Duration::from_micros(17),
            },
            Message::Aborted { key, number: 4 },
            Message::Reloaded {
                key,
                rank: 3,
                disp: 5,
            },
            Message::Replicated { key, owner: 1 },
            Message::Withdrawn { key, root: 1 },
            Message::Suspect { rank: 3 },
            Message::Task {
                key,
                number: 1,
                into_disp: 2,
                from_holder: 3,
                from_disp: 4,
                from_original: true,
            },
            Message::Reload { key, rank: 6 },
            Message::Replicate { key, holder: 0 },
            Message::Finished { key, disp: 8 },
            Message::Failed {
                key,
                failure: Failure::DataLost(3),
            },
            Message::Failed {
                key,
                failure: Failure::MasterDied(0),
            },
            Message::Ping,
            Message::Dead { rank: 2 },
            Message::Store {
                key,
                disp: 7,
                len: 64,
            },
            Message::Stored { key, ok: false },
        ];
        for m in all {
            assert_eq!(Message::decode(&m.encode()), Ok(m.clone()), "{m:?}");
            let bytes = m.encode();
            assert!(Message::decode(&bytes[..bytes.len() - 1]).is_err());
            let mut long = bytes.clone();
            long.push(0);
            assert!(Message::decode(&long).unwrap_err().0.contains("after"));
        }
        assert!(Message::decode(&[99; 13])
            .unwrap_err()
            .0
            .contains("kind 99"));
        assert!(Message::decode(&[]).is_err());
        let mut bad = Message::Stored { key, ok: true }.encode();
        bad[13] = 5;
        assert!(Message::decode(&bad)
            .unwrap_err()
            .0
            .contains("stored flag 5"));
    }
}
