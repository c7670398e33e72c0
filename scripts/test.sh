#!/usr/bin/env bash
# The test suite: unit tests, and multi-process tests over the shm, tcp and
# sockets providers launched by osrun and by MPICH's mpiexec.hydra.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release --workspace --bins --examples
exec cargo test --release --workspace "$@"
