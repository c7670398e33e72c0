//! The PMI-1 "simple" wire protocol: parsing and formatting, without I/O.
//!
//! A message is one line of space-separated `key=value` fields whose first
//! field is `cmd=NAME` (`cmd=put kvsname=kvs_1 key=a value=b`). The one
//! exception is `spawn`, which travels as `mcmd=spawn` followed by one
//! `key=value` line per field and a closing `endcmd` line; its values may hold
//! spaces. Values of one-line messages cannot hold spaces, newlines or `=` in
//! keys: [`Message::format`] refuses them instead of sending a line the peer
//! would misread.

use std::io::BufRead;

/// Longest line accepted from a peer, in bytes (Hydra's limit is 1024 for a
/// value; a line carries a key and a few fields more).
pub const MAX_LINE: usize = 4096;

/// Longest key this implementation hands out in `get_maxes`.
pub const KEY_MAX: usize = 64;
/// Longest value this implementation hands out in `get_maxes`.
pub const VALUE_MAX: usize = 1024;
/// Longest KVS name this implementation hands out in `get_maxes`.
pub const KVSNAME_MAX: usize = 256;

/// What went wrong while speaking PMI.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// A line was empty.
    #[error("PMI: empty line")]
    Empty,
    /// A line is longer than [`MAX_LINE`].
    #[error("PMI: line of {len} bytes exceeds the limit of {max}")]
    LineTooLong {
        /// Bytes received before giving up.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A line is not valid UTF-8.
    #[error("PMI: line is not valid UTF-8")]
    NotUtf8,
    /// A field has no `=`.
    #[error("PMI: field {field:?} in line {line:?} is not key=value")]
    BadField {
        /// The offending field.
        field: String,
        /// The whole line.
        line: String,
    },
    /// The first field is not `cmd=` or `mcmd=`.
    #[error("PMI: line {line:?} does not start with cmd= or mcmd=")]
    NoCommand {
        /// The whole line.
        line: String,
    },
    /// A required field is missing.
    #[error("PMI: command {command:?} lacks field {field:?}")]
    MissingField {
        /// The command.
        command: String,
        /// The missing field.
        field: String,
    },
    /// A field's value has the wrong form (a number expected, say).
    #[error("PMI: command {command:?} field {field:?} has bad value {value:?}")]
    BadValue {
        /// The command.
        command: String,
        /// The field.
        field: String,
        /// The value received.
        value: String,
    },
    /// A key or value cannot be sent on a one-line message.
    #[error("PMI: {what} {text:?} cannot be sent: {why}")]
    Unsendable {
        /// `key` or `value`.
        what: &'static str,
        /// The text refused.
        text: String,
        /// Why.
        why: &'static str,
    },
    /// The peer closed the connection, possibly in the middle of a line.
    #[error("PMI: connection closed by peer{}", if partial.is_empty() { String::new() } else { format!(" in the middle of line {partial:?}") })]
    Closed {
        /// What had arrived of the unfinished line.
        partial: String,
    },
    /// An unknown command.
    #[error("PMI: unknown command {command:?}")]
    UnknownCommand {
        /// The command received.
        command: String,
    },
    /// An I/O error on the PMI connection.
    #[error("PMI: I/O error: {0}")]
    Io(String),
}

/// One PMI message: a command and its fields, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The command (`init`, `put`, `spawn`, ...).
    pub command: String,
    /// The fields after the command, in the order they came.
    pub fields: Vec<(String, String)>,
    /// Whether the message travels in the multi-line `mcmd=` form.
    pub multiline: bool,
}

impl Message {
    /// A one-line message with no fields yet.
    pub fn new(command: &str) -> Message {
        Message {
            command: command.to_string(),
            fields: Vec::new(),
            multiline: false,
        }
    }

    /// A multi-line (`mcmd=`) message with no fields yet.
    pub fn new_multiline(command: &str) -> Message {
        Message {
            multiline: true,
            ..Message::new(command)
        }
    }

    /// Adds a field and returns the message.
    pub fn with(mut self, key: &str, value: impl ToString) -> Message {
        self.fields.push((key.to_string(), value.to_string()));
        self
    }

    /// The value of the first field named `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value of field `key`.
    ///
    /// # Errors
    /// [`WireError::MissingField`] when the message has no such field.
    pub fn require(&self, key: &str) -> Result<&str, WireError> {
        self.get(key).ok_or_else(|| WireError::MissingField {
            command: self.command.clone(),
            field: key.to_string(),
        })
    }

    /// The value of field `key` as a number.
    ///
    /// # Errors
    /// [`WireError::MissingField`] or [`WireError::BadValue`].
    pub fn require_num<T: std::str::FromStr>(&self, key: &str) -> Result<T, WireError> {
        let value = self.require(key)?;
        value.parse().map_err(|_| WireError::BadValue {
            command: self.command.clone(),
            field: key.to_string(),
            value: value.to_string(),
        })
    }

    /// Parses one line (without its newline) of the one-line form.
    ///
    /// # Errors
    /// [`WireError::Empty`], [`WireError::NoCommand`], [`WireError::BadField`].
    pub fn parse_line(line: &str) -> Result<Message, WireError> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let mut tokens = line.split(' ').filter(|t| !t.is_empty());
        let first = tokens.next().ok_or(WireError::Empty)?;
        let command = first
            .strip_prefix("cmd=")
            .filter(|c| !c.is_empty())
            .ok_or_else(|| WireError::NoCommand {
                line: line.to_string(),
            })?;
        let mut message = Message::new(command);
        for token in tokens {
            let (key, value) = split_field(token, line)?;
            message.fields.push((key.to_string(), value.to_string()));
        }
        Ok(message)
    }

    /// Formats the message for the wire, newline(s) included.
    ///
    /// # Errors
    /// [`WireError::Unsendable`] when a key is empty or holds a space, `=` or
    /// newline, or a one-line value holds a space or newline, or a value is
    /// longer than [`VALUE_MAX`].
    pub fn format(&self) -> Result<String, WireError> {
        let mut out = String::new();
        let (lead, sep) = if self.multiline {
            ("mcmd=", '\n')
        } else {
            ("cmd=", ' ')
        };
        check_key(&self.command)?;
        out.push_str(lead);
        out.push_str(&self.command);
        for (key, value) in &self.fields {
            check_key(key)?;
            check_value(value, self.multiline)?;
            out.push(sep);
            out.push_str(key);
            out.push('=');
            out.push_str(value);
        }
        if self.multiline {
            out.push_str("\nendcmd");
        }
        out.push('\n');
        Ok(out)
    }

    /// Reads one message (either form) from `reader`.
    ///
    /// Returns `Ok(None)` when the peer closed the connection cleanly between
    /// messages.
    ///
    /// # Errors
    /// Any [`WireError`]: a line too long, not UTF-8, malformed, or a
    /// connection closed in the middle of a message ([`WireError::Closed`]).
    pub fn read_from(reader: &mut impl BufRead) -> Result<Option<Message>, WireError> {
        let first = match read_line(reader)? {
            Line::Eof => return Ok(None),
            Line::Partial(partial) => return Err(WireError::Closed { partial }),
            Line::Full(line) => line,
        };
        let Some(command) = first.strip_prefix("mcmd=") else {
            return Message::parse_line(&first).map(Some);
        };
        let mut message = Message::new_multiline(command.trim_end_matches('\r'));
        loop {
            let line = match read_line(reader)? {
                Line::Full(line) => line,
                Line::Eof => {
                    return Err(WireError::Closed {
                        partial: format!("mcmd={}", message.command),
                    })
                }
                Line::Partial(partial) => return Err(WireError::Closed { partial }),
            };
            let line = line.trim_end_matches('\r');
            if line == "endcmd" {
                return Ok(Some(message));
            }
            let (key, value) = split_field(line, line)?;
            message.fields.push((key.to_string(), value.to_string()));
        }
    }
}

fn split_field<'a>(token: &'a str, line: &str) -> Result<(&'a str, &'a str), WireError> {
    match token.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key, value)),
        _ => Err(WireError::BadField {
            field: token.to_string(),
            line: line.to_string(),
        }),
    }
}

fn check_key(key: &str) -> Result<(), WireError> {
    let why = if key.is_empty() {
        Some("it is empty")
    } else if key.len() > KEY_MAX {
        Some("it is longer than the key limit")
    } else if key.contains([' ', '=', '\n', '\r']) {
        Some("it holds a space, '=' or a newline")
    } else {
        None
    };
    match why {
        Some(why) => Err(WireError::Unsendable {
            what: "key",
            text: key.to_string(),
            why,
        }),
        None => Ok(()),
    }
}

fn check_value(value: &str, multiline: bool) -> Result<(), WireError> {
    let why = if value.len() > VALUE_MAX {
        Some("it is longer than the value limit")
    } else if value.contains(['\n', '\r']) {
        Some("it holds a newline")
    } else if !multiline && value.contains(' ') {
        Some("it holds a space")
    } else {
        None
    };
    match why {
        Some(why) => Err(WireError::Unsendable {
            what: "value",
            text: value.to_string(),
            why,
        }),
        None => Ok(()),
    }
}

enum Line {
    Full(String),
    Partial(String),
    Eof,
}

fn read_line(reader: &mut impl BufRead) -> Result<Line, WireError> {
    let mut buf = Vec::new();
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(WireError::Io(e.to_string())),
        };
        if available.is_empty() {
            if buf.is_empty() {
                return Ok(Line::Eof);
            }
            return Ok(Line::Partial(String::from_utf8_lossy(&buf).into_owned()));
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        if buf.len() + chunk.len() > MAX_LINE {
            return Err(WireError::LineTooLong {
                len: buf.len() + chunk.len(),
                max: MAX_LINE,
            });
        }
        buf.extend_from_slice(chunk);
        let consumed = done.unwrap_or(chunk.len());
        reader.consume(consumed);
        if done.is_some() {
            return String::from_utf8(buf)
                .map(Line::Full)
                .map_err(|_| WireError::NotUtf8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn read_all(input: &[u8]) -> Vec<Result<Option<Message>, WireError>> {
        let mut reader = Cursor::new(input.to_vec());
        let mut out = Vec::new();
        loop {
            let r = Message::read_from(&mut reader);
            let stop = !matches!(r, Ok(Some(_)));
            out.push(r);
            if stop {
                return out;
            }
        }
    }

    #[test]
    fn parses_one_line_message() {
        let m = Message::parse_line("cmd=put kvsname=kvs_1 key=a value=b=c").unwrap();
        assert_eq!(m.command, "put");
        assert_eq!(m.get("kvsname"), Some("kvs_1"));
        assert_eq!(m.get("value"), Some("b=c"));
        assert!(!m.multiline);
    }

    #[test]
    fn tolerates_extra_spaces_and_cr() {
        let m = Message::parse_line("cmd=get  kvsname=k   key=x \r").unwrap();
        assert_eq!(m.fields.len(), 2);
        assert_eq!(m.get("key"), Some("x"));
    }

    #[test]
    fn formats_and_round_trips() {
        let m = Message::new("put")
            .with("kvsname", "kvs_9")
            .with("key", "ep-3")
            .with("value", "0a0b");
        let line = m.format().unwrap();
        assert_eq!(line, "cmd=put kvsname=kvs_9 key=ep-3 value=0a0b\n");
        let back = Message::parse_line(line.trim_end()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn malformed_lines_are_errors() {
        assert_eq!(Message::parse_line(""), Err(WireError::Empty));
        assert_eq!(Message::parse_line("   "), Err(WireError::Empty));
        assert!(matches!(
            Message::parse_line("put key=a"),
            Err(WireError::NoCommand { .. })
        ));
        assert!(matches!(
            Message::parse_line("cmd= key=a"),
            Err(WireError::NoCommand { .. })
        ));
        assert!(matches!(
            Message::parse_line("cmd=put key"),
            Err(WireError::BadField { .. })
        ));
        assert!(matches!(
            Message::parse_line("cmd=put =v"),
            Err(WireError::BadField { .. })
        ));
    }

    #[test]
    fn values_with_spaces_or_too_long_are_refused() {
        let spaced = Message::new("put").with("value", "a b");
        assert!(matches!(
            spaced.format(),
            Err(WireError::Unsendable { what: "value", .. })
        ));
        let long = Message::new("put").with("value", "x".repeat(VALUE_MAX + 1));
        assert!(matches!(
            long.format(),
            Err(WireError::Unsendable { what: "value", .. })
        ));
        let key = Message::new("put").with("a=b", "v");
        assert!(matches!(
            key.format(),
            Err(WireError::Unsendable { what: "key", .. })
        ));
        let newline = Message::new("put").with("k", "a\nb");
        assert!(newline.format().is_err());
        // Spaces are fine in the multi-line form.
        let spawn = Message::new_multiline("spawn").with("arg1", "a b");
        assert_eq!(spawn.format().unwrap(), "mcmd=spawn\narg1=a b\nendcmd\n");
    }

    #[test]
    fn reads_both_forms_from_a_stream() {
        let input = b"cmd=init pmi_version=1 pmi_subversion=1\nmcmd=spawn\nnprocs=2\narg1=x y\nendcmd\ncmd=finalize\n";
        let got = read_all(input);
        assert_eq!(got.len(), 4);
        let spawn = got[1].clone().unwrap().unwrap();
        assert!(spawn.multiline);
        assert_eq!(spawn.command, "spawn");
        assert_eq!(spawn.get("arg1"), Some("x y"));
        assert_eq!(got[3], Ok(None));
    }

    #[test]
    fn peer_closing_mid_line_is_reported() {
        let got = read_all(b"cmd=barrier_in\ncmd=put key=");
        assert_eq!(
            got[1],
            Err(WireError::Closed {
                partial: "cmd=put key=".into()
            })
        );
        let got = read_all(b"mcmd=spawn\nnprocs=1\n");
        assert!(matches!(got[0], Err(WireError::Closed { .. })));
    }

    #[test]
    fn over_long_and_binary_lines_are_errors() {
        let mut long = b"cmd=put value=".to_vec();
        long.extend(std::iter::repeat_n(b'x', MAX_LINE));
        long.push(b'\n');
        assert!(matches!(
            read_all(&long)[0],
            Err(WireError::LineTooLong { .. })
        ));
        assert_eq!(read_all(b"cmd=\xff\xfe\n")[0], Err(WireError::NotUtf8));
    }

    #[test]
    fn numbers_are_checked() {
        let m = Message::parse_line("cmd=set rank=x size=4").unwrap();
        assert_eq!(m.require_num::<u32>("size"), Ok(4));
        assert!(matches!(
            m.require_num::<u32>("rank"),
            Err(WireError::BadValue { .. })
        ));
        assert!(matches!(
            m.require_num::<u32>("debug"),
            Err(WireError::MissingField { .. })
        ));
    }
}
