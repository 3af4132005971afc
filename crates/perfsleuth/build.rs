//! Records the commit and profile the binary was built from, for `--version`.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "unknown commit".to_string());
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=PERFSLEUTH_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=PERFSLEUTH_BUILD_PROFILE={profile}");
    // A new commit (HEAD moves, or the branch it names does) rebuilds the
    // string; --git-path finds both in a worktree too.
    let git_path = |p: &str| {
        Command::new("git")
            .args(["rev-parse", "--git-path", p])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let branch = Command::new("git")
        .args(["symbolic-ref", "-q", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    // packed-refs too: after `git pack-refs` a new commit moves only it.
    for p in ["HEAD".to_string(), "packed-refs".to_string()]
        .into_iter()
        .chain(branch)
    {
        if let Some(path) = git_path(&p).filter(|p| std::path::Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
