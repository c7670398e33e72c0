//! Two hosts for real: each rank in a network namespace of its own, the
//! two joined by a veth pair (`169.254.77.1` and `.2`, link-local: the
//! traffic never leaves the pair), launched by `osrun` through
//! `ip netns exec`, over `tcp` on the pair's interface (`FI_TCP_IFACE`).
//! RMA, atomics and every collective must move the right bytes. Making
//! namespaces needs root and `ip` (iproute2); where they cannot be made
//! the test says so and skips.

use std::process::Command;
use std::time::Duration;

use onesided_tests::{binary, run, serial};

/// The interface name of the veth pair's end in each namespace.
const IFACE: &str = "onesided0";

/// Two network namespaces joined by a veth pair, removed on drop.
struct Hosts {
    prefix: String,
}

/// Runs `ip ARGS`; a message naming the command when it fails.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Hosts {
    /// Makes namespaces `PREFIX-0` and `PREFIX-1` with the pair's ends,
    /// addressed and up.
    fn make() -> Result<Hosts, String> {
        let id = std::process::id();
        let hosts = Hosts {
            prefix: format!("onesided-{id}"),
        };
        let (a, b) = (format!("os{id}a"), format!("os{id}b"));
        ip(&["netns", "add", &hosts.namespace(0)])?;
        ip(&["netns", "add", &hosts.namespace(1)])?;
        ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])?;
        for (rank, end) in [(0, &a), (1, &b)] {
            let ns = hosts.namespace(rank);
            ip(&["link", "set", end, "netns", &ns])?;
            ip(&["-n", &ns, "link", "set", end, "name", IFACE])?;
            let address = format!("169.254.77.{}/24", rank + 1);
            ip(&["-n", &ns, "addr", "add", &address, "dev", IFACE])?;
            ip(&["-n", &ns, "link", "set", IFACE, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(hosts)
    }

    fn namespace(&self, rank: u32) -> String {
        format!("{}-{rank}", self.prefix)
    }

    /// `osrun -n 2 --provider tcp PROGRAM ARGS`, each rank in its
    /// namespace, every rank its own host.
    fn osrun(&self, program: &str, args: &[&str]) -> Command {
        let mut command = Command::new(binary("osrun"));
        command
            .args(["-n", "2", "--provider", "tcp", "--timeout", "60"])
            .args(["sh", "-c"])
            .arg(format!(
                "exec ip netns exec {}-$PMI_RANK \"$0\" \"$@\"",
                self.prefix
            ))
            .arg(binary(program))
            .args(args)
            .env("FI_TCP_IFACE", IFACE)
            .env("ONESIDED_HOST", "node{rank}")
            .env("ONESIDED_TIMEOUT", "20");
        command
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // Removing a namespace removes the pair's end in it, and so the pair.
        for rank in 0..2 {
            let _ = ip(&["netns", "del", &self.namespace(rank)]);
        }
    }
}

#[test]
fn ranks_on_two_network_namespaces_move_the_right_bytes() {
    let _serial = serial();
    let hosts = match Hosts::make() {
        Ok(hosts) => hosts,
        Err(e) => {
            println!("skipped: network namespaces cannot be made here ({e})");
            return;
        }
    };
    let rma = run(
        hosts.osrun("rma-check", &["typed"]),
        Duration::from_secs(90),
    );
    rma.assert_success();
    assert_eq!(rma.count("typed ok"), 2, "{rma}");
    let windows = run(
        hosts.osrun("rma-check", &["create"]),
        Duration::from_secs(90),
    );
    windows.assert_success();
    assert_eq!(windows.count("create ok"), 2, "{windows}");
    let collectives = run(hosts.osrun("coll-check", &[]), Duration::from_secs(90));
    collectives.assert_success();
    assert_eq!(collectives.count("collectives ok"), 2, "{collectives}");
    // Each namespace reaches the other only over the pair (its loopback
    // is its own): the bytes crossed it.
    println!("two namespaces over {IFACE}: rma, atomics and collectives ok");
}
