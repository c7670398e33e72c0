#!/usr/bin/env bash
# Builds the MPICH peers of onesided-bench with MPICH 5.0.2 (ch4, OFI netmod,
# its own libfabric 2.x), installed from PyPI into target/mpich-venv when
# missing. Output: target/mpich/<peer>.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=$("$root/scripts/mpich-venv.sh")
mkdir -p "$root/target/mpich"
built=()
for src in "$root"/benches/mpich/*.c; do
    name=$(basename "$src" .c)
    # abi.c is built against the standard ABI: the one binary runs on
    # MPICH's libmpi_abi.so.1 and on onesided's.
    compiler=mpicc
    [ "$name" = abi ] && compiler=mpicc_abi
    "$venv/bin/$compiler" -O2 -o "$root/target/mpich/$name" "$src" -lm -lpthread
    built+=("$name")
done
echo "built: ${built[*]}"
echo "run:   $venv/bin/mpiexec -n 2 -genv MPIR_CVAR_CH4_NETMOD ofi -genv FI_PROVIDER shm $root/target/mpich/rma window"
