//! Links libfabric (found with pkg-config, else `-lfabric`) and compiles the C
//! shim that exposes libfabric's `static inline` calls.

fn main() {
    println!("cargo:rerun-if-changed=shim/shim.c");
    println!("cargo:rerun-if-changed=shim/wrapper.h");
    let mut build = cc::Build::new();
    match pkg_config::Config::new()
        .atleast_version("1.17")
        .probe("libfabric")
    {
        Ok(lib) => {
            for dir in &lib.include_paths {
                build.include(dir);
            }
        }
        Err(err) => {
            if !std::path::Path::new("/usr/include/rdma/fabric.h").exists() {
                panic!(
                    "libfabric (>= 1.17) was not found: {err}\n\
                     install it (Debian/Ubuntu: apt-get install libfabric-dev pkg-config)"
                );
            }
            println!("cargo:rustc-link-lib=fabric");
        }
    }
    build
        .include("shim")
        .file("shim/shim.c")
        .warnings(false)
        .compile("fabric_shim");
}
