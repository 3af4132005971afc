//! The committed `bpf/locks.bpf.o` is what `bpf/build.sh` makes of
//! `bpf/locks.bpf.c`: rebuilt with clang where it is installed (.ci/run
//! installs it; `clang` in PERFSLEUTH_TEST_REQUIRE makes a skip a failure),
//! byte for byte.

use std::process::Command;

#[test]
fn the_committed_object_is_built_from_the_committed_source() {
    if !perfsleuth_testkit::tools_present(
        "the_committed_object_is_built_from_the_committed_source",
        &["clang"],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("locks.bpf.o");
    let root = env!("CARGO_MANIFEST_DIR");
    let built = Command::new("sh")
        .arg(format!("{root}/bpf/build.sh"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "bpf/build.sh: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let fresh = std::fs::read(&out).unwrap();
    let committed = std::fs::read(format!("{root}/bpf/locks.bpf.o")).unwrap();
    assert!(
        fresh == committed,
        "bpf/locks.bpf.o is stale: run crates/perfsleuth-locks/bpf/build.sh and commit the object ({} vs {} bytes)",
        fresh.len(),
        committed.len()
    );
}
