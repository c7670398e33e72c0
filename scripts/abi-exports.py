#!/usr/bin/env python3
"""Writes mpi-abi/src/unsupported.rs: an export for every function of the
standard ABI header (MPICH's mpi_abi.h in target/mpich-venv) that the
crate does not implement. Run after implementing a function:
    python3 scripts/abi-exports.py
"""
import pathlib, re, sys

root = pathlib.Path(__file__).resolve().parent.parent
header = root / "target/mpich-venv/include/mpi_abi.h"
src = root / "mpi-abi/src"
out = src / "unsupported.rs"

text = header.read_text()
names = sorted(set(re.findall(r"^\w[\w ]*?\**\s*\b(MPI_[A-Za-z0-9_]+)\(", text, re.M)))
implemented = set()
for f in src.rglob("*.rs"):
    if f.name == "unsupported.rs":
        continue
    body = f.read_text()
    implemented |= set(re.findall(r"\bfn (MPI_[A-Za-z0-9_]+)\b", body))
    implemented |= set(re.findall(r"\b(MPI_[A-Za-z0-9_]+) / PMPI_", body))
missing = [n for n in names if n not in implemented]
bad = [n for n in missing if not re.search(r"^int " + n + r"\(", text, re.M)]
if bad:
    sys.exit("functions not returning int must be implemented: " + ", ".join(bad))
lines = [
    "//! The functions of the standard ABI onesided does not implement",
    "//! (written by `scripts/abi-exports.py` from the ABI header): each",
    "//! raises `MPI_ERR_UNSUPPORTED_OPERATION` on `MPI_COMM_WORLD`'s error",
    "//! handler and says once that it is not supported. They all return",
    "//! `int`; their arguments are ignored (the C calling convention lets",
    "//! the callee ignore what the caller passes).",
    "",
    "use std::ffi::c_int;",
    "",
    "use crate::errors::unsupported;",
    "",
    "macro_rules! unsupported {",
    "    ($($name:ident / $pname:ident,)*) => {$(",
    "        /// Not supported: raises `MPI_ERR_UNSUPPORTED_OPERATION`.",
    "        #[no_mangle]",
    "        pub extern \"C\" fn $pname() -> c_int {",
    "            unsupported(stringify!($name))",
    "        }",
    "",
    "        /// Not supported: raises `MPI_ERR_UNSUPPORTED_OPERATION`.",
    "        #[no_mangle]",
    "        pub extern \"C\" fn $name() -> c_int {",
    "            unsupported(stringify!($name))",
    "        }",
    "    )*};",
    "}",
    "",
    "unsupported! {",
]
lines += [f"    {n} / P{n}," for n in missing]
lines += ["}", ""]
out.write_text("\n".join(lines))
print(f"{len(names)} functions, {len(implemented & set(names))} implemented, {len(missing)} unsupported")
