//! `intruder HEXNAME KEYS OFFSETS...`: a process outside any job that opens
//! its own `tcp` endpoint, inserts the address HEXNAME (a rank's endpoint
//! name in hex) and writes 8 bytes of 0xff with every key below KEYS at
//! each of OFFSETS (in offset addressing, as `tcp` uses), each to be
//! delivered into the target's memory (`FI_DELIVERY_COMPLETE`). Prints
//! `intruder: N of M writes completed` and exits 0; a write that completes
//! is a registration outsiders can write to.

#![forbid(unsafe_code)]

use std::process::exit;
use std::time::Duration;

use onesided_fabric::{Access, Endpoint, EndpointConfig, ProgressMode, Provider, RemoteMemory};

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        eprintln!("usage: intruder HEXNAME KEYS OFFSETS...");
        exit(2)
    };
    let victim = args
        .first()
        .and_then(|h| hex_decode(h))
        .unwrap_or_else(|| usage());
    let keys: u64 = args
        .get(1)
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| usage());
    let offsets: Vec<u64> = args[2..].iter().filter_map(|o| o.parse().ok()).collect();
    if offsets.is_empty() {
        usage();
    }
    let config = EndpointConfig {
        provider: Provider::Tcp,
        progress: ProgressMode::Manual,
        timeout: Duration::from_secs(5),
        ..EndpointConfig::default()
    };
    let fail = |what: &str, e: onesided_fabric::Error| -> ! {
        eprintln!("intruder: {what}: {e}");
        exit(1)
    };
    let mut ep = Endpoint::open(&config).unwrap_or_else(|e| fail("open", e));
    let me = ep.name().unwrap_or_else(|e| fail("name", e));
    ep.connect(0, &[me, victim])
        .unwrap_or_else(|e| fail("connect", e));
    let (mut completed, mut tried) = (0u64, 0u64);
    for key in 0..keys {
        for &offset in &offsets {
            let remote = RemoteMemory {
                base: 0,
                key,
                len: offset + 8,
                access: Access::REMOTE_WRITE,
            };
            tried += 1;
            if ep.write_delivered(1, &remote, offset, &[0xff; 8]).is_ok() {
                completed += 1;
                println!("intruder: key {key} offset {offset} completed");
            }
        }
    }
    println!("intruder: {completed} of {tried} writes completed");
}
