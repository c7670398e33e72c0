#!/usr/bin/env bash
# Regenerates src/bindings.rs and shim/shim.c from the installed libfabric
# headers. Needs libclang (Debian: libclang-dev) and libfabric-dev. The output
# is deterministic: commit it, and a normal build needs neither libclang nor
# this script.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cargo run --release --quiet --manifest-path "$here/gen/Cargo.toml" \
    --target-dir "$here/../../target/fabric-sys-gen" -- "$here"
# The generated shim includes the header by absolute path; make it relative.
sed -i 's|#include ".*/shim/wrapper.h"|#include "wrapper.h"|' "$here/shim/shim.c"
echo "regenerated $here/src/bindings.rs and $here/shim/shim.c"
