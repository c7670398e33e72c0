//! fabric-sys: raw bindings to libfabric, API 1.x as Debian 12 ships it (1.17)
//! and newer.
//!
//! `bindings.rs` is bindgen's output over the headers listed in
//! `shim/wrapper.h`, committed so that a build needs only a C compiler,
//! pkg-config and `libfabric-dev` (no libclang). libfabric's data-path calls
//! (`fi_read`, `fi_write`, `fi_cq_read`, `fi_atomic`, `fi_mr_reg`, ...) are
//! `static inline` in C; `shim/shim.c` wraps each one in a real function
//! (suffix `_onesided_shim`) and the bindings link to those under the
//! original names. `regen.sh` regenerates both files from the installed
//! headers. Flag macros (`FI_*`) are typed `u64` so they combine with the
//! `caps`, `mode` and `flags` fields.
//!
//! The struct layouts are guarded by bindgen's compile-time layout
//! assertions (in `bindings.rs`): a header whose structs differ fails the
//! build. Dependencies: `cc` compiles the shim; `pkg-config` (the crate)
//! finds libfabric's include and link flags the way distributions install
//! them, falling back to `-lfabric`.
//!
//! This crate is unsafe to use by nature; `onesided-fabric` is the safe layer.

#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code,
    clippy::all,
    missing_docs,
    rustdoc::all
)]

include!("bindings.rs");

/// `FI_VERSION(major, minor)` from `rdma/fabric.h` (a function-like macro that
/// bindgen drops).
pub const fn fi_version_of(major: u32, minor: u32) -> u32 {
    (major << 16) | minor
}

/// The API version onesided asks for: 1.17, the oldest it supports.
pub const ONESIDED_FI_VERSION: u32 = fi_version_of(1, 17);

/// `FI_ADDR_UNSPEC` (`((uint64_t) -1)`, a cast macro bindgen drops).
pub const FI_ADDR_UNSPEC: fi_addr_t = u64::MAX;
/// `FI_ADDR_NOTAVAIL` (`((uint64_t) -1)`).
pub const FI_ADDR_NOTAVAIL: fi_addr_t = u64::MAX;
/// `FI_KEY_NOTAVAIL` (`((uint64_t) -1)`).
pub const FI_KEY_NOTAVAIL: u64 = u64::MAX;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_reports_a_supported_version() {
        // SAFETY: fi_version takes no arguments and only returns a constant.
        let v = unsafe { fi_version() };
        assert!(
            v >= ONESIDED_FI_VERSION,
            "libfabric {:#x} is older than 1.17",
            v
        );
    }

    #[test]
    fn shim_calls_reach_libfabric() {
        // fi_allocinfo is static inline: this goes through the C shim.
        // SAFETY: fi_allocinfo returns a fresh, zeroed fi_info (or null);
        // fi_freeinfo releases it exactly once.
        unsafe {
            let info = fi_allocinfo();
            assert!(!info.is_null());
            assert!(!(*info).ep_attr.is_null());
            fi_freeinfo(info);
        }
    }

    #[test]
    fn flags_are_u64_and_combine() {
        let caps: u64 = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_REMOTE_READ;
        assert_eq!(caps & FI_RMA, FI_RMA);
        assert_eq!(FI_ADDR_UNSPEC, !0u64);
    }
}
