//! The PMI-1 server of `osrun`, as a pure state machine: messages in,
//! actions out, no I/O. `job` wires it to sockets and processes.

use std::collections::HashMap;

use onesided_fabric::pmi::wire::{Message, KEY_MAX, KVSNAME_MAX, VALUE_MAX};

/// Identifies one connected process.
pub type ClientId = usize;

/// A request to start processes, from a `spawn` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnCommand {
    /// Number of processes.
    pub count: u32,
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Keys to put into the new job's key-value space before it starts.
    pub preput: Vec<(String, String)>,
}

/// What the server asks its I/O loop to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send this message to this client.
    Reply(ClientId, Message),
    /// Start these processes as one new group, then call
    /// [`PmiServer::spawn_done`] for `client`.
    Spawn {
        /// Who asked.
        client: ClientId,
        /// What to start.
        commands: Vec<SpawnCommand>,
    },
    /// `client` asked to end the job.
    Abort {
        /// Who asked.
        client: ClientId,
        /// The exit code it asked for.
        code: i32,
        /// Its message.
        message: String,
    },
}

#[derive(Debug)]
struct Group {
    kvsname: String,
    kvs: HashMap<String, String>,
    /// Members still taking part in barriers (not finalized, not gone).
    live: u32,
    barrier: Vec<ClientId>,
}

#[derive(Debug)]
struct Client {
    group: usize,
    finalized: bool,
}

/// The key-value spaces, barriers and spawns of one `osrun` job. Each group
/// of processes started together (the job, then each spawn) has its own
/// key-value space and barrier.
#[derive(Debug)]
pub struct PmiServer {
    job_id: String,
    universe_size: u32,
    /// Spawns beyond the universe size are refused.
    limited: bool,
    groups: Vec<Group>,
    clients: HashMap<ClientId, Client>,
    spawning: HashMap<ClientId, Vec<SpawnCommand>>,
}

fn text(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect()
}

fn error_reply(command: &str, message: &str) -> Message {
    Message::new(command)
        .with("rc", -1)
        .with("msg", text(message))
}

impl PmiServer {
    /// A server for job `job_id` (used in KVS names) of `universe_size`.
    pub fn new(job_id: &str, universe_size: u32) -> PmiServer {
        PmiServer {
            job_id: text(job_id),
            universe_size,
            limited: false,
            groups: Vec::new(),
            clients: HashMap::new(),
            spawning: HashMap::new(),
        }
    }

    /// Refuses spawns that would make more processes live at once than
    /// the universe size (`osrun --universe`).
    pub fn limit(&mut self) {
        self.limited = true;
    }

    /// Opens a group of `size` processes with its key-value space, holding
    /// `preput`; returns the group's index.
    pub fn add_group(&mut self, size: u32, preput: &[(String, String)]) -> usize {
        let index = self.groups.len();
        self.groups.push(Group {
            kvsname: format!("kvs_{}_{}", self.job_id, index),
            kvs: preput.iter().cloned().collect(),
            live: size,
            barrier: Vec::new(),
        });
        index
    }

    /// The KVS name of group `group`.
    pub fn kvsname(&self, group: usize) -> Option<&str> {
        self.groups.get(group).map(|g| g.kvsname.as_str())
    }

    /// Records that `client` is a member of `group`.
    pub fn add_client(&mut self, client: ClientId, group: usize) {
        self.clients.insert(
            client,
            Client {
                group,
                finalized: false,
            },
        );
    }

    /// Handles one message from `client`.
    pub fn handle(&mut self, client: ClientId, message: &Message) -> Vec<Action> {
        let Some(member) = self.clients.get(&client) else {
            return vec![Action::Reply(
                client,
                error_reply("error", "unknown client"),
            )];
        };
        let group = member.group;
        let reply = |m: Message| vec![Action::Reply(client, m)];
        match message.command.as_str() {
            "init" => {
                let version = message.get("pmi_version").unwrap_or("");
                if version != "1" {
                    return reply(
                        error_reply(
                            "response_to_init",
                            &format!("PMI version {version} is not supported, only 1"),
                        )
                        .with("pmi_version", 1)
                        .with("pmi_subversion", 1),
                    );
                }
                reply(
                    Message::new("response_to_init")
                        .with("pmi_version", 1)
                        .with("pmi_subversion", 1)
                        .with("rc", 0),
                )
            }
            "get_maxes" => reply(
                Message::new("maxes")
                    .with("kvsname_max", KVSNAME_MAX)
                    .with("keylen_max", KEY_MAX)
                    .with("vallen_max", VALUE_MAX)
                    .with("rc", 0),
            ),
            "get_appnum" => reply(Message::new("appnum").with("appnum", 0).with("rc", 0)),
            "get_my_kvsname" => reply(
                Message::new("my_kvsname")
                    .with("kvsname", &self.groups[group].kvsname)
                    .with("rc", 0),
            ),
            "get_universe_size" => reply(
                Message::new("universe_size")
                    .with("size", self.universe_size)
                    .with("rc", 0),
            ),
            "put" => reply(self.put(group, message)),
            "get" => reply(self.get(message)),
            "barrier_in" => self.barrier_in(group, client),
            "finalize" => {
                let mut actions = self.leave(client);
                actions.push(Action::Reply(
                    client,
                    Message::new("finalize_ack").with("rc", 0),
                ));
                actions
            }
            "abort" => vec![Action::Abort {
                client,
                code: message
                    .get("exitcode")
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(1),
                message: message.get("message").unwrap_or("").to_string(),
            }],
            "spawn" if message.multiline => self.spawn(client, message),
            other => reply(error_reply("error", &format!("unknown command {other}"))),
        }
    }

    fn put(&mut self, group: usize, message: &Message) -> Message {
        let (Some(kvsname), Some(key), Some(value)) = (
            message.get("kvsname"),
            message.get("key"),
            message.get("value"),
        ) else {
            return error_reply("put_result", "put needs kvsname, key and value");
        };
        let group = &mut self.groups[group];
        if kvsname != group.kvsname {
            return error_reply(
                "put_result",
                &format!("kvs {kvsname} is not this process's own"),
            );
        }
        if key.len() > KEY_MAX || value.len() > VALUE_MAX {
            return error_reply(
                "put_result",
                &format!("key {key} or its value exceeds the limits"),
            );
        }
        match group.kvs.get(key) {
            Some(old) if old != value => error_reply("put_result", &format!("duplicate key {key}")),
            _ => {
                group.kvs.insert(key.to_string(), value.to_string());
                Message::new("put_result").with("rc", 0)
            }
        }
    }

    fn get(&self, message: &Message) -> Message {
        let (Some(kvsname), Some(key)) = (message.get("kvsname"), message.get("key")) else {
            return error_reply("get_result", "get needs kvsname and key");
        };
        let Some(group) = self.groups.iter().find(|g| g.kvsname == kvsname) else {
            return error_reply("get_result", &format!("no kvs named {kvsname}"));
        };
        match group.kvs.get(key) {
            Some(value) => Message::new("get_result")
                .with("rc", 0)
                .with("value", value),
            None => {
                error_reply("get_result", &format!("key {key} not found")).with("value", "unknown")
            }
        }
    }

    fn barrier_in(&mut self, group: usize, client: ClientId) -> Vec<Action> {
        if self.clients.get(&client).is_some_and(|c| c.finalized) {
            return vec![Action::Reply(
                client,
                error_reply("barrier_out", "barrier after finalize"),
            )];
        }
        let g = &mut self.groups[group];
        if !g.barrier.contains(&client) {
            g.barrier.push(client);
        }
        self.release_barrier(group)
    }

    fn release_barrier(&mut self, group: usize) -> Vec<Action> {
        let g = &mut self.groups[group];
        if g.barrier.is_empty() || (g.barrier.len() as u32) < g.live {
            return Vec::new();
        }
        g.barrier
            .drain(..)
            .map(|c| Action::Reply(c, Message::new("barrier_out").with("rc", 0)))
            .collect()
    }

    /// `client` no longer takes part (finalized, or its process is gone):
    /// barriers complete among the others.
    fn leave(&mut self, client: ClientId) -> Vec<Action> {
        let Some(member) = self.clients.get_mut(&client) else {
            return Vec::new();
        };
        if member.finalized {
            return Vec::new();
        }
        member.finalized = true;
        let group = member.group;
        let g = &mut self.groups[group];
        g.live = g.live.saturating_sub(1);
        g.barrier.retain(|&c| c != client);
        self.release_barrier(group)
    }

    /// Takes `missing` members out of `group` that will never join (their
    /// processes could not be started): barriers complete without them.
    pub fn shrink_group(&mut self, group: usize, missing: u32) -> Vec<Action> {
        let Some(g) = self.groups.get_mut(group) else {
            return Vec::new();
        };
        g.live = g.live.saturating_sub(missing);
        self.release_barrier(group)
    }

    /// Forgets `client`, whose process has exited or closed its connection.
    pub fn remove_client(&mut self, client: ClientId) -> Vec<Action> {
        let actions = self.leave(client);
        self.clients.remove(&client);
        self.spawning.remove(&client);
        actions
    }

    fn spawn(&mut self, client: ClientId, message: &Message) -> Vec<Action> {
        let command = match parse_spawn(message) {
            Ok(c) => c,
            Err(e) => {
                self.spawning.remove(&client);
                return vec![Action::Reply(client, error_reply("spawn_result", &e))];
            }
        };
        let total: u32 = message
            .get("totspawns")
            .and_then(|t| t.parse().ok())
            .unwrap_or(1);
        let so_far: u32 = message
            .get("spawnssofar")
            .and_then(|t| t.parse().ok())
            .unwrap_or(1);
        let pending = self.spawning.entry(client).or_default();
        pending.push(command);
        if so_far < total {
            return Vec::new();
        }
        let commands = self.spawning.remove(&client).unwrap_or_default();
        let live: u32 = self.groups.iter().map(|g| g.live).sum();
        let wanted: u32 = commands.iter().map(|c| c.count).sum();
        if self.limited && live.saturating_add(wanted) > self.universe_size {
            let why = format!(
                "spawn of {wanted} processes beside {live} live ones exceeds the universe size {}",
                self.universe_size
            );
            return vec![Action::Reply(client, error_reply("spawn_result", &why))];
        }
        vec![Action::Spawn { client, commands }]
    }

    /// The answer to a spawn the I/O loop has carried out (or failed to).
    pub fn spawn_done(&self, client: ClientId, result: Result<(), String>) -> Action {
        Action::Reply(
            client,
            match result {
                Ok(()) => Message::new("spawn_result").with("rc", 0),
                Err(e) => error_reply("spawn_result", &e),
            },
        )
    }
}

fn parse_spawn(message: &Message) -> Result<SpawnCommand, String> {
    let number = |key: &str| -> Result<u32, String> {
        message
            .get(key)
            .unwrap_or("0")
            .parse()
            .map_err(|_| format!("spawn: {key} is not a number"))
    };
    let count = number("nprocs")?;
    if count == 0 {
        return Err("spawn: nprocs must be at least 1".into());
    }
    let program = message
        .get("execname")
        .filter(|p| !p.is_empty())
        .ok_or("spawn: execname missing")?
        .to_string();
    let args = (1..=number("argcnt")?)
        .map(|i| {
            message
                .get(&format!("arg{i}"))
                .map(String::from)
                .ok_or_else(|| format!("spawn: arg{i} missing"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let preput = (0..number("preput_num")?)
        .map(|i| {
            let key = message.get(&format!("preput_key_{i}"));
            let value = message.get(&format!("preput_val_{i}"));
            match (key, value) {
                (Some(k), Some(v)) => Ok((k.to_string(), v.to_string())),
                _ => Err(format!("spawn: preput pair {i} missing")),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SpawnCommand {
        count,
        program,
        args,
        preput,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(line: &str) -> Message {
        Message::parse_line(line).unwrap()
    }

    fn replies(actions: &[Action]) -> Vec<(ClientId, String)> {
        actions
            .iter()
            .map(|a| match a {
                Action::Reply(c, m) => (*c, m.format().unwrap().trim_end().to_string()),
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    fn server(n: usize) -> PmiServer {
        let mut s = PmiServer::new("7", n as u32);
        let g = s.add_group(n as u32, &[]);
        for c in 0..n {
            s.add_client(c, g);
        }
        s
    }

    #[test]
    fn handshake_answers() {
        let mut s = server(2);
        assert_eq!(
            replies(&s.handle(0, &msg("cmd=init pmi_version=1 pmi_subversion=1"))),
            vec![(
                0,
                "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".into()
            )]
        );
        assert_eq!(
            replies(&s.handle(1, &msg("cmd=get_my_kvsname"))),
            vec![(1, "cmd=my_kvsname kvsname=kvs_7_0 rc=0".into())]
        );
        assert_eq!(
            replies(&s.handle(1, &msg("cmd=get_universe_size"))),
            vec![(1, "cmd=universe_size size=2 rc=0".into())]
        );
        let bad = replies(&s.handle(0, &msg("cmd=init pmi_version=2 pmi_subversion=0")));
        assert!(bad[0].1.contains("rc=-1"));
    }

    #[test]
    fn spawns_beyond_a_limited_universe_are_refused() {
        let spawn = |n: u32| {
            Message::new_multiline("spawn")
                .with("nprocs", n)
                .with("execname", "p")
                .with("argcnt", 0)
                .with("preput_num", 0)
        };
        let mut s = server(2);
        s.universe_size = 3;
        assert!(matches!(s.handle(0, &spawn(2))[..], [Action::Spawn { .. }]));
        s.limit();
        let refused = replies(&s.handle(0, &spawn(2)));
        assert!(
            refused[0].1.contains("exceeds_the_universe_size_3"),
            "{refused:?}"
        );
        assert!(matches!(s.handle(0, &spawn(1))[..], [Action::Spawn { .. }]));
    }

    #[test]
    fn put_barrier_get() {
        let mut s = server(2);
        assert_eq!(
            replies(&s.handle(0, &msg("cmd=put kvsname=kvs_7_0 key=a value=1"))),
            vec![(0, "cmd=put_result rc=0".into())]
        );
        assert!(s.handle(0, &msg("cmd=barrier_in")).is_empty());
        let out = replies(&s.handle(1, &msg("cmd=barrier_in")));
        assert_eq!(out.len(), 2);
        assert_eq!(
            replies(&s.handle(1, &msg("cmd=get kvsname=kvs_7_0 key=a"))),
            vec![(1, "cmd=get_result rc=0 value=1".into())]
        );
        let missing = replies(&s.handle(1, &msg("cmd=get kvsname=kvs_7_0 key=b")));
        assert!(missing[0]
            .1
            .starts_with("cmd=get_result rc=-1 msg=key_b_not_found"));
    }

    #[test]
    fn refuses_foreign_kvs_and_duplicates() {
        let mut s = server(1);
        let foreign = replies(&s.handle(0, &msg("cmd=put kvsname=other key=a value=1")));
        assert!(foreign[0].1.contains("rc=-1"));
        s.handle(0, &msg("cmd=put kvsname=kvs_7_0 key=a value=1"));
        let dup = replies(&s.handle(0, &msg("cmd=put kvsname=kvs_7_0 key=a value=2")));
        assert!(dup[0].1.contains("duplicate_key_a"));
        let same = replies(&s.handle(0, &msg("cmd=put kvsname=kvs_7_0 key=a value=1")));
        assert!(same[0].1.contains("rc=0"));
    }

    #[test]
    fn unknown_commands_and_clients_get_errors() {
        let mut s = server(1);
        let out = replies(&s.handle(0, &msg("cmd=frobnicate")));
        assert_eq!(
            out,
            vec![(0, "cmd=error rc=-1 msg=unknown_command_frobnicate".into())]
        );
        let out = replies(&s.handle(9, &msg("cmd=init pmi_version=1")));
        assert!(out[0].1.contains("unknown_client"));
    }

    #[test]
    fn barrier_completes_among_survivors() {
        let mut s = server(3);
        assert!(s.handle(0, &msg("cmd=barrier_in")).is_empty());
        assert!(s.handle(1, &msg("cmd=barrier_in")).is_empty());
        let out = replies(&s.remove_client(2));
        assert_eq!(out.len(), 2);
        // Finalized processes leave barriers too, and cannot enter them.
        s.handle(0, &msg("cmd=finalize"));
        assert_eq!(replies(&s.handle(1, &msg("cmd=barrier_in"))).len(), 1);
        let late = replies(&s.handle(0, &msg("cmd=barrier_in")));
        assert!(late[0].1.contains("rc=-1"), "{late:?}");
        // Members that never started do not hold a barrier up.
        let mut t = server(3);
        assert!(t.handle(0, &msg("cmd=barrier_in")).is_empty());
        assert_eq!(replies(&t.shrink_group(0, 2)).len(), 1);
    }

    #[test]
    fn spawn_is_parsed_and_acknowledged() {
        let mut s = server(1);
        let spawn = Message::new_multiline("spawn")
            .with("nprocs", 2)
            .with("execname", "/bin/prog")
            .with("totspawns", 1)
            .with("spawnssofar", 1)
            .with("argcnt", 2)
            .with("arg1", "a b")
            .with("arg2", "c")
            .with("preput_num", 1)
            .with("preput_key_0", "parent")
            .with("preput_val_0", "kvs_7_0")
            .with("info_num", 0);
        let out = s.handle(0, &spawn);
        assert_eq!(
            out,
            vec![Action::Spawn {
                client: 0,
                commands: vec![SpawnCommand {
                    count: 2,
                    program: "/bin/prog".into(),
                    args: vec!["a b".into(), "c".into()],
                    preput: vec![("parent".into(), "kvs_7_0".into())],
                }]
            }]
        );
        let g = s.add_group(2, &[("parent".into(), "kvs_7_0".into())]);
        assert_eq!(s.kvsname(g), Some("kvs_7_1"));
        s.add_client(5, g);
        assert_eq!(
            replies(&s.handle(5, &msg("cmd=get kvsname=kvs_7_1 key=parent"))),
            vec![(5, "cmd=get_result rc=0 value=kvs_7_0".into())]
        );
        let bad = s.handle(0, &Message::new_multiline("spawn").with("nprocs", 0));
        assert!(replies(&bad)[0].1.contains("nprocs_must_be_at_least_1"));
    }

    #[test]
    fn abort_is_passed_up() {
        let mut s = server(1);
        assert_eq!(
            s.handle(0, &msg("cmd=abort exitcode=3 message=boom")),
            vec![Action::Abort {
                client: 0,
                code: 3,
                message: "boom".into()
            }]
        );
    }
}
