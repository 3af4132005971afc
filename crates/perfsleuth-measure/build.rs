//! Builds the allocation recorder (`src/alloc/recorder.c`), the shared
//! library `--profile=alloc` preloads into benchmarked commands, with the C
//! compiler the `cc` crate finds (the one that builds the bundled SQLite);
//! `alloc.rs` embeds it. Elsewhere than Linux there is none: an empty file,
//! and `--profile=alloc` says it is not supported.

use std::path::PathBuf;

fn main() {
    let src = "src/alloc/recorder.c";
    println!("cargo:rerun-if-changed={src}");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("perfsleuth-alloc.so");
    let target = std::env::var("TARGET").unwrap_or_default();
    if !target.contains("linux") {
        std::fs::write(&out, b"").expect("OUT_DIR is writable");
        return;
    }
    let compiler = cc::Build::new().opt_level(2).get_compiler();
    let status = compiler
        .to_command()
        .args(["-shared", "-fPIC", "-fvisibility=hidden", "-Wall", "-o"])
        .arg(&out)
        .arg(src)
        .args(["-ldl", "-lm", "-pthread"])
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler for {src}: {e}"));
    assert!(status.success(), "the C compiler failed on {src}");
}
