//! The PMI client's `PMI_PORT` mode (a process manager reached over TCP, as
//! older Hydra and some Slurm setups do), served here by onesided's own
//! PMI-1 server state machine over a loopback socket.

use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

use onesided_fabric::pmi::Message;
use onesided_launcher::server::{Action, PmiServer};
use onesided_tests::{binary, serial};

#[test]
fn a_process_joins_through_pmi_port() {
    let _serial = serial();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().expect("address").port();
    let child = Command::new(binary("examples/hello"))
        .env("PMI_PORT", format!("127.0.0.1:{port}"))
        .env("PMI_ID", "0")
        .env_remove("PMI_FD")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start hello");
    let (stream, _) = listener.accept().expect("the client connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::new(stream);
    let mut server = PmiServer::new("port-test", 1);
    let group = server.add_group(1, &[]);
    server.add_client(0, group);
    let mut commands = Vec::new();
    while let Some(message) = Message::read_from(&mut reader).expect("well-formed PMI") {
        commands.push(message.command.clone());
        if message.command == "initack" {
            assert_eq!(message.get("pmiid"), Some("0"));
            writer
                .write_all(b"cmd=initack\ncmd=set size=1\ncmd=set rank=0\ncmd=set debug=0\n")
                .expect("answer initack");
            continue;
        }
        for action in server.handle(0, &message) {
            let Action::Reply(_, reply) = action else {
                panic!("unexpected action for {message:?}");
            };
            writer
                .write_all(reply.format().expect("formats").as_bytes())
                .expect("reply");
        }
        if message.command == "finalize" {
            break;
        }
    }
    let out = child.wait_with_output().expect("hello ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "rank 0 of 1 on shm\n");
    assert_eq!(commands.first().map(String::as_str), Some("initack"));
    for expected in ["init", "get_my_kvsname", "put", "barrier_in", "finalize"] {
        assert!(
            commands.iter().any(|c| c == expected),
            "no {expected} in {commands:?}"
        );
    }
    // A job of one has no start-up partners: it reads no key.
    assert!(!commands.iter().any(|c| c == "get"), "{commands:?}");
}
