//! The PMI-1 client.

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use super::wire::{Message, WireError};
use crate::error::{Error, Result};

/// A connection to the process manager, or none in singleton mode.
///
/// Started under a PMI-1 process manager, the environment carries either
/// `PMI_FD` (an inherited socket; Hydra and `osrun`) with `PMI_RANK` and
/// `PMI_SIZE`, or `PMI_PORT` (`host:port`) with `PMI_ID`. With neither, the
/// process is a singleton: rank 0 of 1, with a private key-value space.
///
/// The usual order is [`Pmi::put`] of this process's keys, [`Pmi::barrier`],
/// then [`Pmi::get`] of the others' (PMI-1 makes puts visible at the barrier).
pub struct Pmi {
    connection: Option<Connection>,
    rank: u32,
    size: u32,
    kvsname: String,
    universe_size: u32,
    appnum: i32,
    spawned: bool,
    singleton_kvs: HashMap<String, String>,
    /// Commands sent to the process manager so far.
    requests: u64,
}

struct Connection {
    reader: BufReader<Box<dyn Read + Send>>,
    writer: Box<dyn Write + Send>,
}

/// Set by `osrun --standby` in the processes it starts ahead of a spawn:
/// such a process opens its endpoint, then waits on `PMI_FD` for its rank
/// and size ([`ASSIGN`]), or for the connection to close (it is not
/// needed: [`Error::Dismissed`]).
pub const STANDBY_ENV: &str = "ONESIDED_STANDBY";

/// The command by which `osrun` hands a standby process to a spawn, with
/// `rank` and `size` in the spawned group (not a PMI-1 command: only
/// `osrun` sends it, only to the processes it started with
/// [`STANDBY_ENV`]).
pub const ASSIGN: &str = "onesided-assign";

/// What to start with [`Pmi::spawn`].
#[derive(Debug, Clone, Default)]
pub struct SpawnRequest {
    /// Number of processes.
    pub count: u32,
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Keys put into the new processes' key-value space before they start.
    pub preput: Vec<(String, String)>,
}

impl Pmi {
    /// Connects to the process manager named by the environment (or becomes a
    /// singleton) and performs the PMI-1 handshake.
    ///
    /// # Errors
    /// [`Error::BadEnv`] for a malformed `PMI_*` variable, [`Error::Io`] when
    /// the connection fails, [`Error::Pmi`] or [`Error::PmiRefused`] when the
    /// handshake does; [`Error::Dismissed`] for a standby process
    /// ([`STANDBY_ENV`]) whose connection closed before a spawn took it.
    pub fn from_env() -> Result<Pmi> {
        let spawned = std::env::var("PMI_SPAWNED").is_ok_and(|v| v == "1");
        let mut pmi = if let Ok(fd) = std::env::var("PMI_FD") {
            let raw: RawFd = fd.trim().parse().map_err(|_| Error::BadEnv {
                name: "PMI_FD",
                value: fd.as_str().into(),
                why: "not a file descriptor number",
            })?;
            let stream = socket_from_fd(raw, &fd)?;
            let reader = stream
                .try_clone()
                .map_err(|e| Error::io("PMI_FD: cloning the socket", e))?;
            if std::env::var_os(STANDBY_ENV).is_some() {
                let mut pmi = Pmi::connected(Box::new(reader), Box::new(stream), 0, 0, true);
                pmi.assignment()?;
                pmi
            } else {
                let rank = env_num("PMI_RANK")?;
                let size = env_num("PMI_SIZE")?;
                Pmi::connected(Box::new(reader), Box::new(stream), rank, size, spawned)
            }
        } else if let Ok(port) = std::env::var("PMI_PORT") {
            let stream = TcpStream::connect(port.as_str())
                .map_err(|e| Error::io(format!("PMI_PORT: connecting to {port}"), e))?;
            let reader = stream
                .try_clone()
                .map_err(|e| Error::io("PMI_PORT: cloning the socket", e))?;
            let mut pmi = Pmi::connected(Box::new(reader), Box::new(stream), 0, 1, spawned);
            pmi.port_handshake()?;
            pmi
        } else {
            return Ok(Pmi {
                connection: None,
                rank: 0,
                size: 1,
                kvsname: "singleton_kvs".into(),
                universe_size: 1,
                appnum: 0,
                spawned: false,
                singleton_kvs: HashMap::new(),
                requests: 0,
            });
        };
        pmi.handshake()?;
        Ok(pmi)
    }

    fn connected(
        reader: Box<dyn Read + Send>,
        writer: Box<dyn Write + Send>,
        rank: u32,
        size: u32,
        spawned: bool,
    ) -> Pmi {
        Pmi {
            connection: Some(Connection {
                reader: BufReader::new(reader),
                writer,
            }),
            rank,
            size,
            kvsname: String::new(),
            universe_size: size,
            appnum: 0,
            spawned,
            singleton_kvs: HashMap::new(),
            requests: 0,
        }
    }

    /// Standby mode: waits for `osrun` to hand this process to a spawn
    /// (`cmd=onesided-assign rank=R size=S`).
    fn assignment(&mut self) -> Result<()> {
        let connection = self.connection.as_mut().ok_or(WireError::Closed {
            partial: String::new(),
        })?;
        let Some(assign) = Message::read_from(&mut connection.reader)? else {
            return Err(Error::Dismissed);
        };
        if assign.command != ASSIGN {
            return Err(WireError::UnknownCommand {
                command: format!("{} (expected {ASSIGN})", assign.command),
            }
            .into());
        }
        self.rank = assign.require_num("rank")?;
        self.size = assign.require_num("size")?;
        Ok(())
    }

    /// `PMI_PORT` mode: introduce ourselves with `PMI_ID`, learn rank and size.
    fn port_handshake(&mut self) -> Result<()> {
        let id = env_num("PMI_ID")?;
        self.send(&Message::new("initack").with("pmiid", id))?;
        self.receive("initack")?;
        for _ in 0..3 {
            let set = self.receive("set")?;
            if let Some(size) = set.get("size") {
                self.size = parse_field(&set, "size", size)?;
            } else if let Some(rank) = set.get("rank") {
                self.rank = parse_field(&set, "rank", rank)?;
            }
        }
        Ok(())
    }

    fn handshake(&mut self) -> Result<()> {
        self.request(
            Message::new("init")
                .with("pmi_version", 1)
                .with("pmi_subversion", 1),
            "response_to_init",
        )?;
        let kvs = self.request(Message::new("get_my_kvsname"), "my_kvsname")?;
        self.kvsname = kvs.require("kvsname")?.to_string();
        let universe = self.request(Message::new("get_universe_size"), "universe_size")?;
        // Hydra answers -1 when it does not know; the job size is the floor.
        let universe: i64 = universe.require_num("size")?;
        self.universe_size = u32::try_from(universe).unwrap_or(0).max(self.size);
        let appnum = self.request(Message::new("get_appnum"), "appnum")?;
        self.appnum = appnum.require_num("appnum")?;
        Ok(())
    }

    /// This process's rank in its job.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of processes in the job.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The name of the job's key-value space.
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// The universe size the process manager reports.
    pub fn universe_size(&self) -> u32 {
        self.universe_size
    }

    /// The application number (which command of an MPMD launch).
    pub fn appnum(&self) -> i32 {
        self.appnum
    }

    /// Whether this process was started by a `spawn` of a running job.
    pub fn spawned(&self) -> bool {
        self.spawned
    }

    /// Whether a process manager is connected (false for a singleton).
    pub fn is_connected(&self) -> bool {
        self.connection.is_some()
    }

    /// Stores `key=value` in the job's key-value space.
    ///
    /// # Errors
    /// [`Error::Pmi`] when the key or value cannot travel (a space, a newline,
    /// over the limits), [`Error::PmiRefused`] when the server refuses it.
    pub fn put(&mut self, key: &str, value: &str) -> Result<()> {
        let message = Message::new("put")
            .with("kvsname", &self.kvsname)
            .with("key", key)
            .with("value", value);
        message.format()?;
        if self.connection.is_none() {
            self.singleton_kvs.insert(key.into(), value.into());
            return Ok(());
        }
        self.request(message, "put_result").map(drop)
    }

    /// Reads `key` from the job's key-value space.
    ///
    /// # Errors
    /// [`Error::PmiRefused`] when the key is not there.
    pub fn get(&mut self, key: &str) -> Result<String> {
        let kvsname = self.kvsname.clone();
        self.get_from(&kvsname, key)
    }

    /// Reads `key` from the key-value space `kvsname` (another job's, after a
    /// spawn).
    ///
    /// # Errors
    /// [`Error::PmiRefused`] when the key is not there.
    pub fn get_from(&mut self, kvsname: &str, key: &str) -> Result<String> {
        if self.connection.is_none() {
            return self
                .singleton_kvs
                .get(key)
                .cloned()
                .ok_or_else(|| Error::PmiRefused {
                    command: "get".into(),
                    rc: -1,
                    message: format!("key {key} not found").into(),
                });
        }
        let reply = self.request(
            Message::new("get")
                .with("kvsname", kvsname)
                .with("key", key),
            "get_result",
        )?;
        Ok(reply.require("value")?.to_string())
    }

    /// Waits until every process of the job has entered the barrier.
    ///
    /// # Errors
    /// [`Error::Pmi`] when the connection fails.
    pub fn barrier(&mut self) -> Result<()> {
        if self.connection.is_none() {
            return Ok(());
        }
        self.request(Message::new("barrier_in"), "barrier_out")
            .map(drop)
    }

    /// Starts `request.count` more processes as a new job (PMI-1 `spawn`).
    ///
    /// # Errors
    /// [`Error::PmiRefused`] when the process manager refuses or cannot start
    /// them; [`Error::Pmi`] for a singleton, which has no process manager.
    pub fn spawn(&mut self, request: &SpawnRequest) -> Result<()> {
        let mut message = Message::new_multiline("spawn")
            .with("nprocs", request.count)
            .with("execname", &request.program)
            .with("totspawns", 1)
            .with("spawnssofar", 1)
            .with("argcnt", request.args.len());
        for (i, arg) in request.args.iter().enumerate() {
            message = message.with(&format!("arg{}", i + 1), arg);
        }
        message = message.with("preput_num", request.preput.len());
        for (i, (key, value)) in request.preput.iter().enumerate() {
            message = message
                .with(&format!("preput_key_{i}"), key)
                .with(&format!("preput_val_{i}"), value);
        }
        message = message.with("info_num", 0);
        if self.connection.is_none() {
            return Err(Error::PmiRefused {
                command: "spawn".into(),
                rc: -1,
                message: "a singleton has no process manager to spawn with".into(),
            });
        }
        self.request(message, "spawn_result").map(drop)
    }

    /// Tells the process manager that this process is done with PMI.
    ///
    /// # Errors
    /// [`Error::Pmi`] when the connection fails.
    pub fn finalize(mut self) -> Result<()> {
        if self.connection.is_none() {
            return Ok(());
        }
        self.request(Message::new("finalize"), "finalize_ack")
            .map(drop)
    }

    /// Asks the process manager to end the job with `code`; returns once the
    /// request is sent (the process manager then kills the job).
    ///
    /// # Errors
    /// [`Error::Pmi`] when the message cannot be sent.
    pub fn abort(&mut self, code: i32, reason: &str) -> Result<()> {
        let reason: String = reason
            .chars()
            .map(|c| if c.is_whitespace() { '_' } else { c })
            .take(200)
            .collect();
        self.send(
            &Message::new("abort")
                .with("exitcode", code)
                .with("message", reason),
        )
    }

    /// Commands sent to the process manager so far (the handshake's
    /// included): what [`crate::World::stats`] reports as PMI requests.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    fn send(&mut self, message: &Message) -> Result<()> {
        let line = message.format()?;
        self.requests += 1;
        let connection = self.connection.as_mut().ok_or(WireError::Closed {
            partial: String::new(),
        })?;
        connection
            .writer
            .write_all(line.as_bytes())
            .and_then(|()| connection.writer.flush())
            .map_err(|e| Error::io(format!("PMI: sending {}", message.command), e))
    }

    fn receive(&mut self, expect: &str) -> Result<Message> {
        let connection = self.connection.as_mut().ok_or(WireError::Closed {
            partial: String::new(),
        })?;
        let reply = Message::read_from(&mut connection.reader)?.ok_or(WireError::Closed {
            partial: String::new(),
        })?;
        if reply.command != expect {
            return Err(WireError::UnknownCommand {
                command: format!("{} (expected {expect})", reply.command),
            }
            .into());
        }
        Ok(reply)
    }

    fn request(&mut self, message: Message, expect: &str) -> Result<Message> {
        self.send(&message)?;
        let reply = self.receive(expect)?;
        let rc: i32 = match reply.get("rc") {
            Some(rc) => parse_field(&reply, "rc", rc)?,
            None => 0,
        };
        if rc != 0 {
            return Err(Error::PmiRefused {
                command: message.command.into(),
                rc,
                message: reply
                    .get("msg")
                    .or(reply.get("errmsg"))
                    .unwrap_or("")
                    .into(),
            });
        }
        Ok(reply)
    }
}

fn parse_field<T: std::str::FromStr>(message: &Message, field: &str, value: &str) -> Result<T> {
    value.parse().map_err(|_| {
        WireError::BadValue {
            command: message.command.clone(),
            field: field.into(),
            value: value.into(),
        }
        .into()
    })
}

fn env_num(name: &'static str) -> Result<u32> {
    let value = std::env::var(name).map_err(|_| Error::BadEnv {
        name,
        value: "".into(),
        why: "missing (required with PMI_FD or PMI_PORT)",
    })?;
    value.trim().parse().map_err(|_| Error::BadEnv {
        name,
        value: value.into(),
        why: "not a non-negative number",
    })
}

/// Whether this process has taken the inherited PMI socket already.
static PMI_FD_TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Takes ownership of the inherited PMI socket after checking that it is one
/// and that no earlier connection in this process took it.
fn socket_from_fd(raw: RawFd, text: &str) -> Result<UnixStream> {
    if PMI_FD_TAKEN.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return Err(Error::BadEnv {
            name: "PMI_FD",
            value: text.into(),
            why: "already taken by an earlier connection of this process (one per process)",
        });
    }
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes into the provided stat buffer and only reads the
    // descriptor number; an invalid descriptor yields -1.
    let ok = raw >= 0 && unsafe { libc::fstat(raw, stat.as_mut_ptr()) } == 0;
    // SAFETY: fstat returned 0, so it initialised the buffer.
    if !ok || unsafe { stat.assume_init() }.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(Error::BadEnv {
            name: "PMI_FD",
            value: text.into(),
            why: "not an open socket inherited from the process manager",
        });
    }
    // SAFETY: the descriptor is open, is a socket, and PMI_FD hands it to this
    // process to own; PMI_FD_TAKEN makes this the only owner in the process.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: F_SETFD on an owned, open descriptor; keeps it from leaking
    // into programs this process starts.
    unsafe { libc::fcntl(raw, libc::F_SETFD, libc::FD_CLOEXEC) };
    Ok(UnixStream::from(fd))
}
