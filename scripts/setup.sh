#!/usr/bin/env bash
# Installs what onesided needs to build and test on Debian 12: libfabric's
# headers, pkg-config and a C compiler (for fabric-sys), MPICH's Hydra
# launcher (for the PMI compatibility test), kill(1) and unshare(1), ip(8)
# (iproute2: the two-host test's network namespaces), and python3-venv
# (the benchmarks install MPICH 5.0.2 from PyPI into a venv under
# target/). Run as root it installs what is missing; otherwise it names
# what to install.
# Sourced by scripts/main.sh and scripts/test.sh.
set -euo pipefail

packages=(libfabric-dev pkg-config gcc libc6-dev mpich procps util-linux iproute2 python3-venv)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "onesided: installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "onesided: missing packages: ${missing[*]}" >&2
        echo "onesided: install them with: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi
if ! command -v cargo >/dev/null; then
    echo "onesided: cargo not found: install a Rust toolchain (1.87 or newer, e.g. with rustup)" >&2
    exit 1
fi
