//! `osrun -n N [--provider NAME] [--timeout SECS] [--ft] PROGRAM [ARGS...]`:
//! starts N processes of PROGRAM on this host and serves them PMI-1. See
//! `onesided_fabric::launcher`.

#![forbid(unsafe_code)]

use onesided_fabric::launcher::{args, janitor, job};

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    // osrun's own janitor (launcher::janitor), started by osrun itself.
    if argv.first().map(String::as_str) == Some(janitor::JANITOR_FLAG) {
        std::process::exit(janitor::run());
    }
    let options = match args::parse(&argv) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{}", args::USAGE);
            return;
        }
        Err(e) => {
            eprintln!("osrun: {e} (osrun --help shows the usage)");
            std::process::exit(2);
        }
    };
    std::process::exit(job::run(&options));
}
