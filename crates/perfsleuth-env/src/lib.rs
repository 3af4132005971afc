//! Environment fingerprint capture. Facts are dotted keys with an impact
//! class (see `docs/ENVIRONMENT.md` for every key). Every reader takes a
//! [`Source`]: the live machine, or a fixture tree of another machine (with
//! its CPUID dump), so tests run against real file formats of other machines.
//! A fact that cannot be read is `unknown` with the reason; nothing panics.

mod binary;
mod capacity;
mod check;
mod cpu;
pub mod cpuid;
mod diff;
mod error;
mod kernel;
mod libc_info;
mod memory;
mod noise;
pub mod portable;
mod process;
mod source;
mod tools;
mod virt;

pub use binary::{BINARY_KEYS, binary_facts, cpuid_sites};
pub use capacity::{CpuCapacity, cpu_capacity};
pub use check::{Finding, Severity, check, has_problems, unjudgeable};
pub use diff::{Change, diff, significant, why};
pub use error::{CpuidError, ElfError, EnvError, Unknown};
pub use noise::NoiseSnapshot;
pub use source::Source;
pub use tools::CounterAvailability;

use perfsleuth_model::{Environment, ImpactClass};

/// Captures the whole fingerprint of the machine (or tree) `src` describes.
pub fn capture(src: &Source, counters: Option<&CounterAvailability>) -> Environment {
    let mut env = Environment::default();
    cpu::capture(src, &mut env);
    memory::capture(src, &mut env);
    kernel::capture(src, &mut env);
    libc_info::capture(src, &mut env);
    virt::capture(src, &mut env);
    process::capture(src, &mut env);
    noise::capture(src, &mut env);
    tools::capture(src, counters, &mut env);
    os::capture(src, &mut env);
    env
}

mod os {
    use super::*;
    use crate::error::{Record, Unknown};

    /// OS name, architecture and host name.
    pub fn capture(src: &Source, env: &mut Environment) {
        let os_release = src
            .read("/etc/os-release")
            .or_else(|_| src.read("/usr/lib/os-release"))
            .map_err(Unknown::from);
        env.record(
            "os.name",
            os_release.and_then(|t| {
                field(&t, "PRETTY_NAME").ok_or_else(|| "os-release has no PRETTY_NAME".into())
            }),
            ImpactClass::Identity,
        );
        env.record(
            "os.arch",
            if src.is_live() {
                Ok(std::env::consts::ARCH.to_string())
            } else {
                Err("not recorded in the tree".to_string())
            },
            ImpactClass::Identity,
        );
        env.record(
            "host.name",
            src.read_line("/proc/sys/kernel/hostname"),
            ImpactClass::Context,
        );
    }

    /// A field of `/etc/os-release`, unquoted.
    fn field(text: &str, key: &str) -> Option<String> {
        text.lines().find_map(|line| {
            let (k, v) = line.split_once('=')?;
            (k.trim() == key).then(|| v.trim().trim_matches('"').trim_matches('\'').to_string())
        })
    }
}
