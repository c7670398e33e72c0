#!/usr/bin/env bash
# The test suite: unit tests, doc tests, and multi-process tests over the
# shm, tcp and sockets providers launched by osrun, by MPICH's
# mpiexec.hydra and by a one-node Slurm it starts (scripts/slurm.sh; as
# root, else those tests skip, saying so), and C programs of the MPI
# standard ABI on MPICH's library and on onesided's (MPICH 5.0.2 from
# PyPI, in target/mpich-venv). Ends with one line totalling every test
# binary's results.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
source scripts/slurm.sh
scripts/mpich-venv.sh >/dev/null
cargo build --release --workspace --lib --bins --examples
log=$(mktemp)
trap 'rm -f "$log"; slurm_stop' EXIT
slurm_start
status=0
cargo test --release --workspace "$@" 2>&1 | tee "$log" || status=$?
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
