#!/usr/bin/env bash
# Installs MPICH 5.0.2 from PyPI into target/mpich-venv when missing: the
# benchmarks' peer, and the standard ABI's reference (mpicc_abi,
# libmpi_abi.so.1, mpi_abi.h) for the ABI tests. Prints the venv's path.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$root/target/mpich-venv"
if [ ! -x "$venv/bin/mpicc_abi" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet mpich==5.0.2
fi
echo "$venv"
