//! `osrun -n N [--provider NAME] [--timeout SECS] [--ft] [--mpi] PROGRAM [ARGS...]`:
//! starts N processes of PROGRAM on this host and serves them PMI-1. See
//! the crate docs of onesided-launcher.

#![forbid(unsafe_code)]

use onesided_launcher::{args, janitor, job};

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    // osrun's own janitor (launcher::janitor), started by osrun itself.
    if argv.first().map(String::as_str) == Some(janitor::JANITOR_FLAG) {
        std::process::exit(janitor::run());
    }
    let options = args::parse(&argv).unwrap_or_else(|e| e.exit());
    std::process::exit(job::run(&options));
}
