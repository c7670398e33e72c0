//! Links the library with the standard ABI's SONAME, `libmpi_abi.so.1`,
//! and leaves `libmpi_abi.so.1` beside `libmpi_abi.so` in the target
//! directory (a link), where the dynamic linker of a program built
//! against the ABI looks for it.

use std::path::PathBuf;

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi_abi.so.1");
    println!("cargo:rerun-if-changed=build.rs");
    // OUT_DIR is <target>/<profile>/build/<package>-<hash>/out.
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let Some(profile_dir) = out.ancestors().nth(3) else {
        return;
    };
    let link = profile_dir.join("libmpi_abi.so.1");
    if std::fs::read_link(&link).is_err() {
        let _ = std::fs::remove_file(&link);
        // Dangling until the library is linked, right after this script.
        if let Err(e) = std::os::unix::fs::symlink("libmpi_abi.so", &link) {
            println!("cargo:warning=cannot link {}: {e}", link.display());
        }
    }
}
