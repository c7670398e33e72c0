//! Schedules: a collective algorithm as plain data, the same on every
//! rank's side of the wire. A [`Schedule`] is a list of rounds; a round
//! first makes its local copies, then sends its slices (what they hold at
//! that moment), then receives (and combines) in the order listed. A send
//! from `a` to `b` in round `r` matches the receive from `a` at `b` in round
//! `r` (in order, when there are several). Executors run them over the
//! fabric; [`simulate`] runs them in memory, which is how every algorithm
//! is tested against a serial reference for every group size.
//!
//! Slices count elements, not bytes.

pub mod algorithms;

use crate::op::{Op, Reduce, Reducible};

/// Which buffer of a rank a slice lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buf {
    /// The caller's input (read only).
    Input,
    /// The caller's output.
    Output,
    /// Scratch memory of [`Schedule::scratch`] elements.
    Scratch,
}

/// `len` elements at `at` of `buf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    /// The buffer.
    pub buf: Buf,
    /// First element.
    pub at: usize,
    /// Elements.
    pub len: usize,
}

impl Slice {
    /// `len` elements at `at` of `buf`.
    pub fn new(buf: Buf, at: usize, len: usize) -> Slice {
        Slice { buf, at, len }
    }
}

/// One step of a round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Copy `from` to `to` (first in the round).
    Copy {
        /// Source.
        from: Slice,
        /// Destination.
        to: Slice,
    },
    /// Send `data` to group rank `to`.
    Send {
        /// Destination rank.
        to: u32,
        /// What to send.
        data: Slice,
    },
    /// Receive from group rank `from` into `into`.
    Recv {
        /// Source rank.
        from: u32,
        /// Where it lands.
        into: Slice,
    },
    /// Receive from `from` and combine into `into`: `into = received op
    /// into` when `received_first` (the sender's ranks come first in rank
    /// order), else `into = into op received`.
    RecvReduce {
        /// Source rank.
        from: u32,
        /// What it combines into.
        into: Slice,
        /// Whether the received data is the left operand.
        received_first: bool,
    },
    /// Combine locally, in the receive phase: `into = into op from`.
    Reduce {
        /// The right operand.
        from: Slice,
        /// The left operand and result.
        into: Slice,
    },
}

/// A rank's part of a collective.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schedule {
    /// Elements of scratch memory it needs.
    pub scratch: usize,
    /// Its rounds (rank-independent numbering: a rank with nothing to do
    /// in a round has an empty one).
    pub rounds: Vec<Vec<Action>>,
}

impl Schedule {
    /// A schedule of `rounds` empty rounds.
    pub fn with_rounds(rounds: usize) -> Schedule {
        Schedule {
            scratch: 0,
            rounds: vec![Vec::new(); rounds],
        }
    }

    /// Appends `action` to round `round` (adding rounds as needed).
    pub fn push(&mut self, round: usize, action: Action) {
        if self.rounds.len() <= round {
            self.rounds.resize(round + 1, Vec::new());
        }
        self.rounds[round].push(action);
    }

    /// Appends a message of data to round `round`, unless it holds no
    /// element: both sides know every block's length, so neither posts
    /// one (an alltoallv or allgatherv with empty blocks sends nothing for
    /// them). Messages that synchronize (a barrier's) go by [`Schedule::push`].
    pub fn push_data(&mut self, round: usize, action: Action) {
        let empty = match &action {
            Action::Send { data, .. } => data.len == 0,
            Action::Recv { into, .. } | Action::RecvReduce { into, .. } => into.len == 0,
            _ => false,
        };
        if !empty {
            self.push(round, action);
        }
    }

    /// Every send and receive, with its round: (round, peer, elements,
    /// sending).
    pub fn messages(&self) -> impl Iterator<Item = (usize, u32, usize, bool)> + '_ {
        self.rounds.iter().enumerate().flat_map(|(r, actions)| {
            actions.iter().filter_map(move |a| match a {
                Action::Send { to, data } => Some((r, *to, data.len, true)),
                Action::Recv { from, into } | Action::RecvReduce { from, into, .. } => {
                    Some((r, *from, into.len, false))
                }
                _ => None,
            })
        })
    }
}

/// One rank's buffers in [`simulate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Buffers<T> {
    /// Input.
    pub input: Vec<T>,
    /// Output.
    pub output: Vec<T>,
    /// Scratch.
    pub scratch: Vec<T>,
}

impl<T: Reducible> Buffers<T> {
    fn slice(&self, s: Slice) -> Result<&[T], String> {
        let buf = match s.buf {
            Buf::Input => &self.input,
            Buf::Output => &self.output,
            Buf::Scratch => &self.scratch,
        };
        buf.get(s.at..s.at + s.len)
            .ok_or_else(|| format!("{s:?} outside a buffer of {}", buf.len()))
    }

    fn slice_mut(&mut self, s: Slice) -> Result<&mut [T], String> {
        let buf = match s.buf {
            Buf::Input => return Err(format!("{s:?}: the input is read only")),
            Buf::Output => &mut self.output,
            Buf::Scratch => &mut self.scratch,
        };
        let len = buf.len();
        buf.get_mut(s.at..s.at + s.len)
            .ok_or_else(|| format!("{s:?} outside a buffer of {len}"))
    }
}

/// Runs `schedules` (one per group rank) over `buffers` in memory, round
/// by round, as the executors do over the fabric.
///
/// # Errors
/// A message naming the rank and round when a receive has no matching
/// send, lengths differ, a send is never received, or a slice lies outside
/// its buffer.
pub fn simulate<T: Reducible>(
    schedules: &[Schedule],
    buffers: &mut [Buffers<T>],
    op: &Op<T>,
) -> Result<(), String> {
    use std::collections::{HashMap, VecDeque};
    let n = schedules.len();
    for (b, s) in buffers.iter_mut().zip(schedules) {
        b.scratch = vec![T::zeroed(); s.scratch];
    }
    let rounds = schedules.iter().map(|s| s.rounds.len()).max().unwrap_or(0);
    for r in 0..rounds {
        let mut mail: HashMap<(usize, usize), VecDeque<Vec<T>>> = HashMap::new();
        for (me, s) in schedules.iter().enumerate() {
            let Some(actions) = s.rounds.get(r) else {
                continue;
            };
            let b = &mut buffers[me];
            for a in actions {
                if let Action::Copy { from, to } = a {
                    if from.len != to.len {
                        return Err(format!("rank {me} round {r}: copy of {from:?} to {to:?}"));
                    }
                    let data = b.slice(*from)?.to_vec();
                    b.slice_mut(*to)?.copy_from_slice(&data);
                }
            }
            for a in actions {
                if let Action::Send { to, data } = a {
                    if *to as usize >= n {
                        return Err(format!("rank {me} round {r}: send to {to} of {n}"));
                    }
                    let data = b.slice(*data)?.to_vec();
                    mail.entry((me, *to as usize)).or_default().push_back(data);
                }
            }
        }
        for (me, s) in schedules.iter().enumerate() {
            let Some(actions) = s.rounds.get(r) else {
                continue;
            };
            let b = &mut buffers[me];
            for a in actions {
                let (from, into, reduce) = match a {
                    Action::Recv { from, into } => (*from, *into, None),
                    Action::RecvReduce {
                        from,
                        into,
                        received_first,
                    } => (*from, *into, Some(*received_first)),
                    Action::Reduce { from, into } => {
                        let right = b.slice(*from)?.to_vec();
                        op.apply(b.slice_mut(*into)?, &right);
                        continue;
                    }
                    _ => continue,
                };
                let data = mail
                    .get_mut(&(from as usize, me))
                    .and_then(VecDeque::pop_front)
                    .ok_or_else(|| format!("rank {me} round {r}: nothing from {from}"))?;
                if data.len() != into.len {
                    return Err(format!(
                        "rank {me} round {r}: {} elements from {from}, expected {}",
                        data.len(),
                        into.len
                    ));
                }
                let dest = b.slice_mut(into)?;
                match reduce {
                    None => dest.copy_from_slice(&data),
                    Some(false) => op.apply(dest, &data),
                    Some(true) => {
                        let mut left = data;
                        op.apply(&mut left, dest);
                        dest.copy_from_slice(&left);
                    }
                }
            }
        }
        if let Some(((a, b), _)) = mail.iter().find(|(_, q)| !q.is_empty()) {
            return Err(format!(
                "round {r}: a message from {a} to {b} was never received"
            ));
        }
    }
    Ok(())
}
