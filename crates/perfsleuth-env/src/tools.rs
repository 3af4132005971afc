//! Facts `env check` needs about the measuring tools: hardware counters,
//! valgrind, and the power supply.

use crate::Source;
use perfsleuth_model::{Environment, ImpactClass};

/// Captures power source, counter availability and valgrind presence.
pub fn capture(src: &Source, env: &mut Environment) {
    env.set_read("power.source", power_source(src), ImpactClass::Performance);
    env.set_read(
        "perf.hw_counters",
        if src.is_live() {
            Ok(hw_counters())
        } else {
            Err("not recorded in the tree".into())
        },
        ImpactClass::Context,
    );
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

/// Opens (and closes) an instructions counter for this process, user space
/// only, to learn whether hardware counters work here.
fn hw_counters() -> String {
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
    const PERF_TYPE_HARDWARE: u32 = 0;
    const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
    const DISABLED: u64 = 1;
    const EXCLUDE_KERNEL: u64 = 1 << 5;
    const EXCLUDE_HV: u64 = 1 << 6;
    let attr = Attr {
        kind: PERF_TYPE_HARDWARE,
        size: std::mem::size_of::<Attr>() as u32,
        config: PERF_COUNT_HW_INSTRUCTIONS,
        sample_period: 0,
        sample_type: 0,
        read_format: 0,
        flags: DISABLED | EXCLUDE_KERNEL | EXCLUDE_HV,
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
        Some(libc::EACCES) | Some(libc::EPERM) => {
            "not permitted (kernel.perf_event_paranoid; try sysctl kernel.perf_event_paranoid=1)"
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
    fn live_counter_probe_answers_one_way_or_the_other() {
        let answer = hw_counters();
        assert!(
            answer == "available"
                || answer.starts_with("not")
                || answer.contains("perf_event_open"),
            "{answer}"
        );
    }
}
