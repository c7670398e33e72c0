//! `osrun`'s command line, parsed by `clap`.

use std::time::Duration;

use clap::Parser;
use onesided_fabric::Provider;

/// osrun: starts N processes of PROGRAM on this host and serves them PMI-1
/// (the same programs run under MPICH's mpiexec and Slurm's srun).
#[derive(Debug, Clone, PartialEq, Parser)]
#[command(name = "osrun", version)]
pub struct Options {
    /// Number of processes.
    #[arg(short = 'n', long = "np", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub processes: u32,
    /// Provider the ranks use (ONESIDED_PROVIDER): shm, tcp, sockets or verbs.
    #[arg(long, value_name = "NAME", value_parser = parse_provider)]
    pub provider: Option<Provider>,
    /// Wall-clock limit of the whole job, in seconds (exit status 124 when
    /// it expires).
    #[arg(long, value_name = "SECS", value_parser = parse_timeout, allow_negative_numbers = true)]
    pub timeout: Option<Duration>,
    /// The universe size: at most N processes live at once, so that a
    /// spawn beyond it fails (default: the launch size is reported, and
    /// spawns are not limited).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub universe: Option<u32>,
    /// Processes of PROGRAM started ahead, waiting for spawns: a spawn of
    /// PROGRAM with the job's arguments takes them instead of starting
    /// new ones (they have paid libfabric's start), and they are replaced.
    /// Unused ones exit when the job ends.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub standby: u32,
    /// Fault-tolerant mode: a dead rank is reported to the others instead
    /// of ending the job. The ranks use tcp unless a provider is named
    /// (here, or by ONESIDED_PROVIDER or FI_PROVIDER): a rank killed inside
    /// libfabric 1.17's shm provider can leave a lock of a survivor's
    /// held, on which every later send to that survivor spins.
    #[arg(long = "ft")]
    pub fault_tolerant: bool,
    /// Runs an MPI program built against the standard ABI (`mpicc_abi`)
    /// on onesided: puts the directory of osrun, where the build leaves
    /// `libmpi_abi.so.1`, first on the ranks' LD_LIBRARY_PATH.
    #[arg(long = "mpi")]
    pub mpi: bool,
    /// The program.
    #[arg(value_name = "PROGRAM")]
    pub program: String,
    /// Its arguments.
    #[arg(
        value_name = "ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub args: Vec<String>,
}

impl Options {
    /// The provider the ranks are told to use (`ONESIDED_PROVIDER`), when
    /// `named_by_env` says whether osrun's environment names one: the one
    /// of `--provider`; else tcp under `--ft` with none named (see
    /// [`Options::fault_tolerant`]); else none (the ranks' default).
    pub fn rank_provider(&self, named_by_env: bool) -> Option<Provider> {
        match self.provider {
            Some(provider) => Some(provider),
            None if self.fault_tolerant && !named_by_env => Some(Provider::Tcp),
            None => None,
        }
    }
}

fn parse_provider(text: &str) -> Result<Provider, String> {
    text.parse::<Provider>().map_err(|e| e.to_string())
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    onesided_fabric::progress::timeout_from_secs(text)
        .ok_or_else(|| "a positive number of seconds (at most a year)".to_string())
}

/// Parses `osrun`'s arguments (without the program name).
///
/// # Errors
/// clap's error (which `Error::exit` prints, with exit status 2; `--help`
/// and `--version` come back as errors of their own kinds, status 0).
pub fn parse(args: &[String]) -> Result<Options, clap::Error> {
    Options::try_parse_from(std::iter::once("osrun".to_string()).chain(args.iter().cloned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(line: &str) -> Result<Options, clap::Error> {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse(&args)
    }

    #[test]
    fn parses_a_full_command_line() {
        let o = parse_str("-n 4 --provider tcp --timeout 2.5 --ft ./prog -x --y 3").unwrap();
        assert_eq!(o.processes, 4);
        assert_eq!(o.provider, Some(Provider::Tcp));
        assert_eq!(o.timeout, Some(Duration::from_millis(2500)));
        assert!(o.fault_tolerant);
        assert_eq!(o.program, "./prog");
        assert_eq!(o.args, vec!["-x", "--y", "3"]);
    }

    #[test]
    fn ft_runs_on_tcp_unless_a_provider_is_named() {
        let ft = parse_str("-n 2 --ft prog").unwrap();
        assert_eq!(ft.rank_provider(false), Some(Provider::Tcp));
        assert_eq!(ft.rank_provider(true), None);
        let named = parse_str("-n 2 --ft --provider shm prog").unwrap();
        assert_eq!(named.rank_provider(false), Some(Provider::Shm));
        let plain = parse_str("-n 2 prog").unwrap();
        assert_eq!(plain.rank_provider(false), None);
    }

    #[test]
    fn program_options_after_double_dash() {
        let o = parse_str("-n 1 -- -weird").unwrap();
        assert_eq!(o.program, "-weird");
    }

    #[test]
    fn bad_input_gives_one_clear_message() {
        use clap::error::ErrorKind;
        let kind = |line: &str| parse_str(line).map(drop).unwrap_err().kind();
        assert_eq!(kind("-n 0 prog"), ErrorKind::ValueValidation);
        assert_eq!(kind("-n 2"), ErrorKind::MissingRequiredArgument);
        assert_eq!(kind("prog"), ErrorKind::MissingRequiredArgument);
        assert_eq!(kind("-n x prog"), ErrorKind::ValueValidation);
        let unknown = parse_str("-n 2 --provider psm9 prog")
            .unwrap_err()
            .to_string();
        assert!(
            unknown.contains("unknown provider \"psm9\" (known: shm, tcp, sockets, verbs)"),
            "{unknown}"
        );
        let timeout = parse_str("-n 2 --timeout -1 prog").unwrap_err().to_string();
        assert!(
            timeout.contains("a positive number of seconds"),
            "{timeout}"
        );
        assert!(parse_str("-n 2 --timeout 1e20 prog").is_err());
        assert_eq!(kind("-n 2 --bogus prog"), ErrorKind::UnknownArgument);
        assert_eq!(kind("-n"), ErrorKind::InvalidValue);
        assert_eq!(kind("--help"), ErrorKind::DisplayHelp);
        assert_eq!(kind("--version"), ErrorKind::DisplayVersion);
    }
}
