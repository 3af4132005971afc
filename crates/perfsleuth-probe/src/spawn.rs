//! `spawn`: the cost of starting and reaping a trivial process, two ways:
//! `true` through std's `Command` (posix_spawn, then exec and the dynamic
//! loader: what running any command costs), and `fork` + `_exit` + `waitpid`
//! (the kernel's process creation alone, no exec).

use crate::timing::{self, measurement};
use crate::{ProbeError, ProbeOptions, ProbeResult};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The `true` program on PATH (or /bin/true).
fn find_true() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("true"))
        .chain([PathBuf::from("/bin/true"), PathBuf::from("/usr/bin/true")])
        .find(|p| p.is_file())
}

fn fork_wait() -> Result<f64, ProbeError> {
    let t = Instant::now();
    // SAFETY: the child calls only _exit, which is async-signal-safe, so
    // forking a multi-threaded process is sound here.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(ProbeError::last_os("fork"));
    }
    if pid == 0 {
        // SAFETY: child side: leave at once.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
    if rc != pid {
        return Err(ProbeError::last_os("waitpid"));
    }
    Ok(timing::ns_since(t))
}

pub(crate) fn run(opts: &ProbeOptions, ctx: &mut crate::Ctx) -> Vec<ProbeResult> {
    let n = if opts.quick { 25 } else { 300 };
    let warm = 3;
    let mut out = Vec::new();
    match find_true() {
        None => ctx
            .messages
            .push("spawn: no `true` program on PATH or in /bin; spawn_true skipped".into()),
        Some(prog) => {
            let mut cmd = Command::new(&prog);
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let mut v = Vec::with_capacity(n);
            let mut failure = None;
            for i in 0..n + warm {
                let t = Instant::now();
                match cmd.status() {
                    Ok(st) if st.success() => {
                        if i >= warm {
                            v.push(timing::ns_since(t));
                        }
                    }
                    Ok(st) => {
                        failure = Some(format!("{} exited with {st}", prog.display()));
                        break;
                    }
                    Err(e) => {
                        failure = Some(format!("cannot run {}: {e}", prog.display()));
                        break;
                    }
                }
            }
            if let Some(f) = failure {
                ctx.messages.push(format!("spawn: {f}; spawn_true skipped"));
            } else if let Some(s) = timing::summarize(&v) {
                let mut m = measurement("spawn", "spawn_true", &s, "ns", true, None);
                m.headline = true;
                m.note = Some(format!("posix_spawn + exec + wait of {}", prog.display()));
                out.push(m);
            }
        }
    }
    let mut v = Vec::with_capacity(n);
    for i in 0..n + warm {
        match fork_wait() {
            Ok(ns) if i >= warm => v.push(ns),
            Ok(_) => {}
            Err(e) => {
                ctx.messages.push(format!("spawn: {e}; fork_wait skipped"));
                v.clear();
                break;
            }
        }
    }
    if let Some(s) = timing::summarize(&v) {
        let mut m = measurement("spawn", "fork_wait", &s, "ns", true, None);
        m.headline = true;
        m.note = Some("fork + _exit + waitpid, no exec".into());
        out.push(m);
    }
    out
}
