//! `osrun`'s command line.

use std::time::Duration;

use crate::provider::Provider;

/// The usage text.
pub const USAGE: &str = "usage: osrun -n N [--provider shm|tcp|sockets|verbs] [--timeout SECS] [--ft] PROGRAM [ARGS...]";

/// What `osrun` was asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Number of processes.
    pub processes: u32,
    /// Provider to hand the ranks (`ONESIDED_PROVIDER`), if given.
    pub provider: Option<Provider>,
    /// Wall-clock limit of the whole job.
    pub timeout: Option<Duration>,
    /// Fault-tolerant mode: a dead rank is reported to the others instead of
    /// ending the job.
    pub fault_tolerant: bool,
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
}

/// Parses `osrun`'s arguments (without the program name). Options end at
/// the first argument that is not one (or after `--`).
///
/// # Errors
/// One line saying what is wrong, for `osrun: ` to prefix. `Ok(None)` means
/// `--help` was asked for.
pub fn parse(args: &[String]) -> Result<Option<Options>, String> {
    let mut processes = None;
    let mut provider = None;
    let mut timeout = None;
    let mut fault_tolerant = false;
    let mut rest = args.iter();
    let program = loop {
        let Some(arg) = rest.next() else {
            return Err("no program given".into());
        };
        let mut value = |name: &str| {
            rest.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "-n" | "-np" | "--np" => {
                let text = value(arg)?;
                let n: u32 = text
                    .parse()
                    .map_err(|_| format!("{arg} takes a number of processes, not {text:?}"))?;
                if n == 0 {
                    return Err(format!("{arg} must be at least 1 (got 0)"));
                }
                processes = Some(n);
            }
            "--provider" => {
                let text = value(arg)?;
                provider = Some(text.parse::<Provider>().map_err(|e| e.to_string())?);
            }
            "--timeout" => {
                let text = value(arg)?;
                timeout = Some(crate::progress::timeout_from_secs(&text).ok_or_else(|| {
                    format!("--timeout takes a positive number of seconds (at most a year), not {text:?}")
                })?);
            }
            "--ft" => fault_tolerant = true,
            "--" => break rest.next().cloned().ok_or("no program given")?,
            other if other.starts_with('-') => return Err(format!("unknown option {other:?}")),
            other => break other.to_string(),
        }
    };
    Ok(Some(Options {
        processes: processes.ok_or("-n N is required")?,
        provider,
        timeout,
        fault_tolerant,
        program,
        args: rest.cloned().collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(line: &str) -> Result<Option<Options>, String> {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse(&args)
    }

    #[test]
    fn parses_a_full_command_line() {
        let o = parse_str("-n 4 --provider tcp --timeout 2.5 --ft ./prog -x --y 3")
            .unwrap()
            .unwrap();
        assert_eq!(o.processes, 4);
        assert_eq!(o.provider, Some(Provider::Tcp));
        assert_eq!(o.timeout, Some(Duration::from_millis(2500)));
        assert!(o.fault_tolerant);
        assert_eq!(o.program, "./prog");
        assert_eq!(o.args, vec!["-x", "--y", "3"]);
    }

    #[test]
    fn program_options_after_double_dash() {
        let o = parse_str("-n 1 -- -weird").unwrap().unwrap();
        assert_eq!(o.program, "-weird");
    }

    #[test]
    fn bad_input_gives_one_clear_message() {
        assert_eq!(
            parse_str("-n 0 prog").unwrap_err(),
            "-n must be at least 1 (got 0)"
        );
        assert_eq!(parse_str("-n 2").unwrap_err(), "no program given");
        assert_eq!(parse_str("prog").unwrap_err(), "-n N is required");
        assert_eq!(
            parse_str("-n x prog").unwrap_err(),
            "-n takes a number of processes, not \"x\""
        );
        assert_eq!(
            parse_str("-n 2 --provider psm9 prog").unwrap_err(),
            "unknown provider \"psm9\" (known: shm, tcp, sockets, verbs)"
        );
        assert_eq!(
            parse_str("-n 2 --timeout -1 prog").unwrap_err(),
            "--timeout takes a positive number of seconds (at most a year), not \"-1\""
        );
        assert!(parse_str("-n 2 --timeout 1e20 prog").is_err());
        assert_eq!(
            parse_str("-n 2 --bogus prog").unwrap_err(),
            "unknown option \"--bogus\""
        );
        assert_eq!(parse_str("-n").unwrap_err(), "-n needs a value");
        assert_eq!(parse_str("--help").unwrap(), None);
    }
}
