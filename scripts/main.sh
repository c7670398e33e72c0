#!/usr/bin/env bash
# The main job on the embedded default (one host, shm provider): builds
# everything and runs the pingpong benchmark on 2 ranks through osrun.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release --workspace --bins --examples
exec target/release/osrun -n 2 --timeout 300 target/release/examples/pingpong "$@"
