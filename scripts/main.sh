#!/usr/bin/env bash
# The main job on the embedded default (one host, shm provider, 2 ranks):
# builds everything, then runs every onesided-bench suite (window, get,
# put, atomic, ibarrier, collectives) side by side with MPICH 5.0.2
# (installed from PyPI into target/mpich-venv on first use), 11 rounds of
# the two taking turns (about 3 minutes). Prints the table; JSON lines go
# to target/report/2-shm.json, SVG plots to target/report/. Extra
# arguments go to onesided-bench (e.g. --rounds 3).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release --workspace --lib --bins --examples
mkdir -p target/report
exec target/release/onesided-bench all --np 2 --provider shm --peer mpich \
    --json target/report/2-shm.json "$@"
