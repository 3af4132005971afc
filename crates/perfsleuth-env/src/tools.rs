//! Facts `env check` needs about the measuring tools: hardware and software
//! counters, tracepoints, valgrind, and the power supply.

use crate::Source;
use perfsleuth_model::{Environment, ImpactClass};

/// Captures power source, counter availability and valgrind presence.
pub fn capture(src: &Source, env: &mut Environment) {
    env.set_read("power.source", power_source(src), ImpactClass::Performance);
    type Probe = fn() -> String;
    let probes: [(&str, Probe); 3] = [
        ("perf.hw_counters", hw_counters),
        ("perf.sw_counters", sw_counters),
        ("perf.tracepoints", tracepoints),
    ];
    for (key, probe) in probes {
        env.set_read(
            key,
            if src.is_live() {
                Ok(probe())
            } else {
                Err("not recorded in the tree".into())
            },
            ImpactClass::Context,
        );
    }
    env.set_read(
        "tools.valgrind",
        find_on_path(src, "valgrind"),
        ImpactClass::Context,
    );
}

/// `ac`, `battery`, or `none` (no power supply: a server or a VM).
fn power_source(src: &Source) -> Result<String, String> {
    let Ok(supplies) = src.list_dir("/sys/class/power_supply") else {
        return Ok("none".into());
    };
    let mut battery = false;
    for name in supplies {
        let base = format!("/sys/class/power_supply/{name}");
        let kind = src.read_line(&format!("{base}/type")).unwrap_or_default();
        let online = src.read_line(&format!("{base}/online")).unwrap_or_default();
        match kind.as_str() {
            "Mains" if online == "1" => return Ok("ac".into()),
            "Battery" => battery = true,
            _ => {}
        }
    }
    Ok(if battery { "battery" } else { "none" }.into())
}

fn find_on_path(src: &Source, program: &str) -> Result<String, String> {
    let path = src
        .env_var("PATH")
        .ok_or_else(|| "PATH is not set".to_string())?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| src.path(&p.to_string_lossy()).is_file())
        .map(|p| p.display().to_string())
        .ok_or_else(|| format!("{program} not found on PATH"))
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_TYPE_TRACEPOINT: u32 = 2;

/// Opens (and closes) an instructions counter for this process, user space
/// only, to learn whether hardware counters work here.
fn hw_counters() -> String {
    const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
    perf_probe(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, true)
}

/// Opens (and closes) a context-switch counter for this process, kernel mode
/// included (that is where context switches happen; `perf_event_paranoid`
/// ≥ 2 forbids it without CAP_PERFMON).
fn sw_counters() -> String {
    const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;
    perf_probe(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, false)
}

/// Whether the `syscalls:sys_enter_futex` tracepoint can be counted: its id
/// is readable in tracefs (which is never mounted here) and it opens.
fn tracepoints() -> String {
    const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
    let mut denied = None;
    for dir in TRACEFS {
        match std::fs::metadata(format!("{dir}/events")) {
            Ok(m) if m.is_dir() => {
                let id_file = format!("{dir}/events/syscalls/sys_enter_futex/id");
                return match std::fs::read_to_string(&id_file) {
                    Ok(text) => match text.trim().parse() {
                        Ok(id) => perf_probe(PERF_TYPE_TRACEPOINT, id, false),
                        Err(_) => format!("unexpected tracepoint id in {id_file}"),
                    },
                    Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                        format!("tracefs not readable at {dir} (permission denied)")
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        "no syscalls:sys_enter_futex tracepoint (kernel without CONFIG_FTRACE_SYSCALLS)"
                            .into()
                    }
                    Err(e) => format!("cannot read {id_file}: {e}"),
                };
            }
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                denied.get_or_insert(dir);
            }
            _ => {}
        }
    }
    match denied {
        Some(dir) => format!("tracefs not readable at {dir} (permission denied)"),
        None => format!("tracefs not mounted at {}", TRACEFS.join(" or ")),
    }
}

/// Opens (and closes) one disabled counter on this process: `available`, or
/// why not.
fn perf_probe(kind: u32, config: u64, user_only: bool) -> String {
    // perf_event_attr as of PERF_ATTR_SIZE_VER5 (112 bytes); fields beyond
    // `flags` stay zero.
    #[repr(C)]
    struct Attr {
        kind: u32,
        size: u32,
        config: u64,
        sample_period: u64,
        sample_type: u64,
        read_format: u64,
        flags: u64,
        rest: [u64; 7],
    }
    const DISABLED: u64 = 1;
    const EXCLUDE_KERNEL: u64 = 1 << 5;
    const EXCLUDE_HV: u64 = 1 << 6;
    let attr = Attr {
        kind,
        size: std::mem::size_of::<Attr>() as u32,
        config,
        sample_period: 0,
        sample_type: 0,
        read_format: 0,
        flags: DISABLED
            | if user_only {
                EXCLUDE_KERNEL | EXCLUDE_HV
            } else {
                0
            },
        rest: [0; 7],
    };
    // SAFETY: a valid, fully initialised attr; pid 0 / cpu -1 = this process on any CPU.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const Attr,
            0,
            -1,
            -1,
            0,
        )
    };
    if fd >= 0 {
        // SAFETY: closing the descriptor we just opened.
        unsafe { libc::close(fd as libc::c_int) };
        return "available".into();
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => {
            "not supported by this CPU or hypervisor".into()
        }
        Some(libc::EACCES) | Some(libc::EPERM) if user_only => {
            "not permitted (kernel.perf_event_paranoid; try sysctl kernel.perf_event_paranoid=1)"
                .into()
        }
        Some(libc::EACCES) | Some(libc::EPERM) => {
            "not permitted in kernel mode (kernel.perf_event_paranoid ≥ 2 without CAP_PERFMON; try sysctl kernel.perf_event_paranoid=1)"
                .into()
        }
        Some(libc::ENOSYS) => "the kernel has no perf_event_open".into(),
        _ => format!("perf_event_open failed: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_supplies_in_a_tree() {
        let dir = std::env::temp_dir().join(format!("perfsleuth-power-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let bat = dir.join("sys/class/power_supply/BAT0");
        let ac = dir.join("sys/class/power_supply/AC");
        std::fs::create_dir_all(&bat).unwrap();
        std::fs::create_dir_all(&ac).unwrap();
        std::fs::write(bat.join("type"), "Battery\n").unwrap();
        std::fs::write(ac.join("type"), "Mains\n").unwrap();
        std::fs::write(ac.join("online"), "0\n").unwrap();
        let src = Source::root(&dir);
        assert_eq!(power_source(&src).unwrap(), "battery");
        std::fs::write(ac.join("online"), "1\n").unwrap();
        assert_eq!(power_source(&src).unwrap(), "ac");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            power_source(&Source::root("/nonexistent-root")).unwrap(),
            "none"
        );
    }

    #[test]
    fn live_counter_probes_answer_one_way_or_the_other() {
        for answer in [hw_counters(), sw_counters()] {
            assert!(
                answer == "available"
                    || answer.starts_with("not")
                    || answer.contains("perf_event_open"),
                "{answer}"
            );
        }
        let answer = tracepoints();
        assert!(
            answer == "available"
                || answer.contains("tracefs")
                || answer.contains("tracepoint")
                || answer.starts_with("not")
                || answer.contains("perf_event_open"),
            "{answer}"
        );
    }

    #[test]
    fn a_tree_is_not_probed() {
        let mut env = Environment::default();
        capture(&Source::root("/nonexistent-root"), &mut env);
        for key in ["perf.hw_counters", "perf.sw_counters", "perf.tracepoints"] {
            let fact = &env.facts[key];
            assert_eq!(fact.value, perfsleuth_model::UNKNOWN, "{key}");
            assert_eq!(fact.reason.as_deref(), Some("not recorded in the tree"));
        }
    }
}
