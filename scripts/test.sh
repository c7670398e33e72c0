#!/usr/bin/env bash
# The test suite: unit tests, and multi-process tests over the shm, tcp and
# sockets providers launched by osrun and by MPICH's mpiexec.hydra. Ends
# with one line totalling every test binary's results.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release --workspace --bins --examples
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cargo test --release --workspace "$@" 2>&1 | tee "$log" || status=$?
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
