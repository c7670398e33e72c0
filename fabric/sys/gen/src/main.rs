//! Generates `src/bindings.rs` and `shim/shim.c` of fabric-sys from the
//! libfabric headers (`rdma/*.h`). Run through `../regen.sh`.

use bindgen::callbacks::{IntKind, ParseCallbacks};
use std::path::PathBuf;

/// Types libfabric's flag macros as `u64`, so they OR together with the
/// `u64` fields (`caps`, `mode`, `flags`) without casts. Error codes stay
/// `i32`/`u32` as bindgen picks them.
#[derive(Debug)]
struct FlagTypes;

impl ParseCallbacks for FlagTypes {
    fn int_macro(&self, name: &str, _value: i64) -> Option<IntKind> {
        let is_flag = name.starts_with("FI_")
            && !name.starts_with("FI_E")
            && !name.starts_with("FI_MAJOR")
            && !name.starts_with("FI_MINOR")
            && !name.starts_with("FI_NAME_MAX")
            && !name.starts_with("FI_PATH_MAX");
        if is_flag {
            Some(IntKind::U64)
        } else {
            None
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::args().nth(1).expect("usage: fabric-sys-gen SYS_CRATE_DIR"));
    let header = root.join("shim/wrapper.h");
    let bindings = bindgen::Builder::default()
        .header(header.to_str().expect("utf-8 path"))
        .allowlist_function("fi_.*")
        .allowlist_type("fi_.*|fid.*")
        .allowlist_var("FI_.*")
        .blocklist_function("fi_rx_size_left|fi_tx_size_left")
        .prepend_enum_name(false)
        .parse_callbacks(Box::new(FlagTypes))
        .wrap_static_fns(true)
        .wrap_static_fns_path(root.join("shim/shim"))
        .wrap_static_fns_suffix("_onesided_shim")
        .derive_default(true)
        .layout_tests(true)
        .generate()
        .expect("bindgen failed");
    let out = root.join("src/bindings.rs");
    bindings.write_to_file(&out).expect("write bindings.rs");
    let text = std::fs::read_to_string(&out).expect("read bindings.rs");
    std::fs::write(&out, with_safety_comments(&text)).expect("write bindings.rs");
}

/// The one kind of `unsafe` block bindgen writes here (the zeroing
/// `Default` of a C struct or union) with the `// SAFETY:` line the
/// project requires of every unsafe block.
fn with_safety_comments(text: &str) -> String {
    const ZEROING: &str = "        let mut s = ::std::mem::MaybeUninit::<Self>::uninit();\n        unsafe {";
    const SAFETY: &str = "        let mut s = ::std::mem::MaybeUninit::<Self>::uninit();\n        \
        // SAFETY: the type is a C struct or union of integers, pointers and\n        \
        // arrays of them, for which all-zero bytes are a valid value.\n        unsafe {";
    text.replace(ZEROING, SAFETY)
}
