//! Virtualisation and containers: which hypervisor (if any) the CPU reports,
//! the DMI system identity (cloud instance types show there), whether we run
//! in a container, and the cgroup limits that throttle CPU and memory.

use crate::Source;
use crate::error::{EnvError, Record, Unknown};
use crate::kernel::{clean, line, short, unexpected};
use crate::process::{cpu_list, parse_cpu_list};
use perfsleuth_model::{Environment, ImpactClass};

/// The fixed keys this reader always sets.
#[cfg(test)]
pub(crate) const KEYS: &[&str] = &[
    "virt.hypervisor",
    "virt.dmi.vendor",
    "virt.dmi.product",
    "virt.container",
    "cgroup.version",
    "cgroup.path",
    "cgroup.cpu.max",
    "cgroup.cpu.quota",
    "cgroup.cpuset",
    "cgroup.memory.max",
    "cgroup.cpu.nr_throttled",
    "cgroup.cpu.throttled_usec",
];

/// Where cgroup file systems are mounted (v2 directly, v1 one per controller).
const CGROUP_MOUNT: &str = "/sys/fs/cgroup";

/// Captures the virtualisation, container and cgroup facts.
pub fn capture(src: &Source, env: &mut Environment) {
    use ImpactClass::*;
    let dmi_vendor = line(src, "/sys/class/dmi/id/sys_vendor");
    let dmi_product = line(src, "/sys/class/dmi/id/product_name");
    env.record(
        "virt.hypervisor",
        hypervisor(src, dmi_vendor.as_deref().ok(), dmi_product.as_deref().ok()),
        Identity,
    );
    env.record("virt.dmi.vendor", dmi_vendor, Identity);
    env.record("virt.dmi.product", dmi_product, Identity);
    env.set("virt.container", container(src), Performance);
    cgroup(src, env);
}

/// The hypervisor: cpuid's vendor leaf when the hypervisor bit is set, else
/// `/sys/hypervisor/type`, else a guess from DMI.
fn hypervisor(
    src: &Source,
    dmi_vendor: Option<&str>,
    dmi_product: Option<&str>,
) -> Result<String, Unknown> {
    let sys_type = line(src, "/sys/hypervisor/type")
        .ok()
        .map(|t| match t.as_str() {
            "xen" => "Xen".to_string(),
            other => other.to_string(),
        });
    let from_dmi = dmi_vendor.and_then(|v| dmi_hypervisor(v, dmi_product.unwrap_or("")));
    let bit = src.cpuid(1, 0).map(|r| r[2] & (1 << 31) != 0);
    match bit {
        // Xen PV guests do not see the bit but do have /sys/hypervisor.
        Ok(false) => Ok(sys_type.unwrap_or_else(|| "none".to_string())),
        Ok(true) => {
            let vendor = src
                .cpuid(0x4000_0000, 0)
                .map(|r| crate::cpuid::vendor_string(r, [1, 2, 3]))
                .ok()
                .filter(|v| !v.is_empty());
            vendor
                .map(|v| cpuid_hypervisor(&v))
                .or(sys_type)
                .or(from_dmi)
                .ok_or_else(|| "the CPU reports a hypervisor, but neither cpuid 0x40000000, /sys/hypervisor/type nor DMI names it".into())
        }
        Err(reason) => sys_type.or(from_dmi).ok_or_else(|| {
            format!("no cpuid ({reason}), no /sys/hypervisor/type, no hypervisor in DMI").into()
        }),
    }
}

/// Names a hypervisor vendor signature of cpuid leaf 0x40000000.
fn cpuid_hypervisor(vendor: &str) -> String {
    match vendor {
        "KVMKVMKVM" | "Linux KVM Hv" => "KVM",
        "VMwareVMware" => "VMware",
        "Microsoft Hv" => "Hyper-V",
        "XenVMMXenVMM" => "Xen",
        "TCGTCGTCGTCG" => "QEMU TCG",
        "VBoxVBoxVBox" => "VirtualBox",
        "bhyve bhyve" => "bhyve",
        "ACRNACRNACRN" => "ACRN",
        "QNXQVMBSQG" => "QNX",
        "lrpepyh  vr" | "prl hyperv" => "Parallels",
        "Jailhouse" => "Jailhouse",
        "SRESRESRESRE" => "SRE",
        "EVMMEVMMEVMM" => "EVMM",
        other => return format!("unrecognised ({})", clean(other)),
    }
    .to_string()
}

/// A hypervisor named by DMI, for trees without a cpuid dump.
fn dmi_hypervisor(vendor: &str, product: &str) -> Option<String> {
    let v = vendor.to_ascii_lowercase();
    let p = product.to_ascii_lowercase();
    Some(
        if v.starts_with("qemu") || p.starts_with("kvm") || p.contains("kvm") {
            "KVM"
        } else if v.starts_with("vmware") {
            "VMware"
        } else if v.starts_with("microsoft") && p.contains("virtual") {
            "Hyper-V"
        } else if v.starts_with("xen") {
            "Xen"
        } else if v.starts_with("innotek") {
            "VirtualBox"
        } else if v.starts_with("amazon ec2") || v.starts_with("google") {
            // Nitro and Google Compute Engine are both KVM-based.
            "KVM"
        } else if v.starts_with("parallels") {
            "Parallels"
        } else {
            return None;
        }
        .to_string(),
    )
}

/// The container runtime, or `none`. Kubernetes first: its pods may also
/// carry a runtime's marker, and the orchestrator says more.
fn container(src: &Source) -> String {
    let init_cgroup = src.read("/proc/1/cgroup").unwrap_or_default();
    let self_cgroup = src.read("/proc/self/cgroup").unwrap_or_default();
    if src.env_var("KUBERNETES_SERVICE_HOST").is_some()
        || init_cgroup.contains("kubepods")
        || self_cgroup.contains("kubepods")
    {
        return "kubernetes".into();
    }
    if src.exists("/.dockerenv") {
        return "docker".into();
    }
    if src.exists("/run/.containerenv") {
        return "podman".into();
    }
    // systemd's convention: the manager of a container writes its name here
    // and into init's `container=` variable.
    if let Ok(name) = line(src, "/run/systemd/container") {
        return container_name(&name);
    }
    // Through Source::read, like every other file: a tree is never left.
    if let Ok(text) = src.read("/proc/1/environ") {
        for entry in text.as_bytes().split(|b| *b == 0) {
            if let Some(v) = entry.strip_prefix(b"container=") {
                let v = String::from_utf8_lossy(v);
                if !v.trim().is_empty() {
                    return container_name(&v);
                }
            }
        }
    }
    for text in [&init_cgroup, &self_cgroup] {
        if text.contains("/docker/") || text.contains("/docker-") {
            return "docker".into();
        }
        if text.contains("libpod") {
            return "podman".into();
        }
        if text.contains("/lxc/") || text.contains("lxc.payload") {
            return "lxc".into();
        }
    }
    "none".into()
}

/// A container manager's self-reported name, normalised.
fn container_name(raw: &str) -> String {
    let name: String = clean(raw)
        .to_ascii_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(32)
        .collect();
    match name.as_str() {
        "lxc-libvirt" => "lxc".into(),
        "oci" => "docker".into(),
        "" => "unrecognised".into(),
        _ => name,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// One line of `/proc/self/cgroup`: `id:controllers:path`.
struct CgroupLine {
    id: String,
    controllers: Vec<String>,
    path: String,
}

fn parse_cgroup_lines(text: &str) -> Vec<CgroupLine> {
    text.lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let id = parts.next()?.trim().to_string();
            let controllers = parts
                .next()?
                .split(',')
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect();
            let path = clean(parts.next()?);
            path.starts_with('/').then_some(CgroupLine {
                id,
                controllers,
                path,
            })
        })
        .collect()
}

/// The cgroup facts: version, path, CPU quota, cpuset, memory limit, throttling.
fn cgroup(src: &Source, env: &mut Environment) {
    use ImpactClass::*;
    let lines = src
        .read("/proc/self/cgroup")
        .map(|t| parse_cgroup_lines(&t))
        .map_err(Unknown::from);
    let version = if src.exists(&format!("{CGROUP_MOUNT}/cgroup.controllers")) {
        Ok(Version::V2)
    } else if src.exists(&format!("{CGROUP_MOUNT}/cpu/cpu.cfs_quota_us"))
        || src.exists(&format!("{CGROUP_MOUNT}/cpu,cpuacct"))
        || lines
            .as_ref()
            .is_ok_and(|l| l.iter().any(|c| c.id != "0" && !c.controllers.is_empty()))
    {
        // Hybrid hierarchies (v2 under /sys/fs/cgroup/unified) count as v1:
        // the CPU and memory controllers are the v1 ones there.
        Ok(Version::V1)
    } else {
        Err(format!(
            "neither {CGROUP_MOUNT}/cgroup.controllers (v2) nor v1 controllers found"
        ))
    };
    env.record(
        "cgroup.version",
        version
            .clone()
            .map(|v| if v == Version::V2 { "v2" } else { "v1" }.to_string()),
        Performance,
    );

    // The path of a controller's hierarchy (the unified one for v2).
    let path_of = |controller: &str| -> Result<String, Unknown> {
        let lines = lines.as_ref().map_err(|e| e.clone())?;
        let wanted = |l: &&CgroupLine| match version {
            Ok(Version::V1) => l.controllers.iter().any(|c| c == controller),
            _ => l.id == "0" && l.controllers.is_empty(),
        };
        let unified = |l: &&CgroupLine| l.id == "0" && l.controllers.is_empty();
        lines
            .iter()
            .find(wanted)
            .or_else(|| lines.iter().find(unified))
            .map(|l| l.path.clone())
            .ok_or_else(|| "no usable line in /proc/self/cgroup".into())
    };
    env.record("cgroup.path", path_of("cpu"), Context);

    let Ok(version) = version else {
        let reason = Unknown::from("cgroup version unknown");
        for k in [
            "cgroup.cpu.max",
            "cgroup.cpu.quota",
            "cgroup.cpuset",
            "cgroup.memory.max",
            "cgroup.cpu.nr_throttled",
            "cgroup.cpu.throttled_usec",
        ] {
            let class = if k.contains("throttled") {
                Context
            } else {
                Performance
            };
            env.record(k, Err(reason.clone()), class);
        }
        return;
    };
    // A path we cannot use (unreadable file, garbage) starts the search at
    // the mount root, which is what containers see as their own cgroup.
    let cpu_path = path_of("cpu").unwrap_or_default();
    let (cpu_max, stat_dir) = match version {
        Version::V2 => match find_up(src, CGROUP_MOUNT, &cpu_path, "cpu.max") {
            Some((dir, text)) => (Ok(clean(&text)), Some(dir)),
            // The root cgroup has no cpu.max, and a cgroup without the cpu
            // controller has no limit of its own: unlimited.
            None => (Ok("max".to_string()), None),
        },
        Version::V1 => {
            let mount = v1_mount(src, "cpu");
            match find_up(src, &mount, &cpu_path, "cpu.cfs_quota_us") {
                Some((dir, quota)) => {
                    let period = src.read_line(&format!("{dir}/cpu.cfs_period_us"));
                    (v1_cpu_max(&dir, &quota, period), Some(dir))
                }
                None => (
                    Err(format!("no cpu.cfs_quota_us under {mount}").into()),
                    None,
                ),
            }
        }
    };
    env.record(
        "cgroup.cpu.quota",
        cpu_max.clone().and_then(|m| quota(&m)),
        Performance,
    );
    env.record("cgroup.cpu.max", cpu_max.clone(), Performance);

    let cpuset = match version {
        Version::V2 => find_up(src, CGROUP_MOUNT, &cpu_path, "cpuset.cpus.effective")
            .map(|(d, t)| (format!("{d}/cpuset.cpus.effective"), t)),
        Version::V1 => {
            let mount = v1_mount(src, "cpuset");
            let p = path_of("cpuset").unwrap_or_default();
            find_up(src, &mount, &p, "cpuset.effective_cpus")
                .map(|(d, t)| (format!("{d}/cpuset.effective_cpus"), t))
                .or_else(|| {
                    find_up(src, &mount, &p, "cpuset.cpus")
                        .map(|(d, t)| (format!("{d}/cpuset.cpus"), t))
                })
        }
    };
    env.record(
        "cgroup.cpuset",
        match cpuset {
            Some((file, text)) => parse_cpu_list(&text)
                .map(|c| cpu_list(&c))
                .map_err(|e| format!("{file}: {e}")),
            None => Err("no cpuset file in the process's cgroup or its parents".into()),
        },
        Performance,
    );

    let memory = match version {
        Version::V2 => match find_up(src, CGROUP_MOUNT, &cpu_path, "memory.max") {
            Some((dir, text)) => bytes_or_max(&format!("{dir}/memory.max"), &text),
            None => Ok("max".to_string()),
        },
        Version::V1 => {
            let mount = v1_mount(src, "memory");
            let p = path_of("memory").unwrap_or_default();
            match find_up(src, &mount, &p, "memory.limit_in_bytes") {
                Some((dir, text)) => bytes_or_max(&format!("{dir}/memory.limit_in_bytes"), &text),
                None => Err(format!("no memory.limit_in_bytes under {mount}").into()),
            }
        }
    };
    env.record("cgroup.memory.max", memory, Performance);

    let (throttled, usec) = throttling(
        src,
        version,
        stat_dir.as_deref(),
        &cpu_path,
        cpu_max.as_deref().ok(),
    );
    env.record("cgroup.cpu.nr_throttled", throttled, Context);
    env.record("cgroup.cpu.throttled_usec", usec, Context);
}

/// The mount point of a v1 controller: `/sys/fs/cgroup/cpu` is often a link
/// to `cpu,cpuacct`, and some systems only have the combined name.
fn v1_mount(src: &Source, controller: &str) -> String {
    let plain = format!("{CGROUP_MOUNT}/{controller}");
    if src.exists(&plain) {
        return plain;
    }
    let combined = match controller {
        "cpu" => "cpu,cpuacct",
        "cpuacct" => "cpu,cpuacct",
        other => other,
    };
    format!("{CGROUP_MOUNT}/{combined}")
}

/// The first of the cgroup directory and its parents (up to the mount) that
/// has `file`, with its content: a container sees its own cgroup as `/`
/// while `/proc/self/cgroup` may name the host's path, and limits often sit
/// on a parent slice.
fn find_up(src: &Source, mount: &str, path: &str, file: &str) -> Option<(String, String)> {
    let mut parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") {
        // Never leave the mount, whatever a damaged file says.
        parts.clear();
    }
    loop {
        let dir = if parts.is_empty() {
            mount.to_string()
        } else {
            format!("{mount}/{}", parts.join("/"))
        };
        if let Ok(text) = src.read(&format!("{dir}/{file}")) {
            return Some((dir, text));
        }
        parts.pop()?;
    }
}

/// v1's quota and period in v2's `cpu.max` syntax (`max 100000`, `50000 100000`).
fn v1_cpu_max(dir: &str, quota: &str, period: Result<String, EnvError>) -> Result<String, Unknown> {
    let q: i64 = quota
        .trim()
        .parse()
        .map_err(|_| unexpected(&format!("{dir}/cpu.cfs_quota_us"), quota))?;
    let period = period?;
    let p: u64 = period
        .trim()
        .parse()
        .map_err(|_| unexpected(&format!("{dir}/cpu.cfs_period_us"), &period))?;
    Ok(if q < 0 {
        format!("max {p}")
    } else {
        format!("{q} {p}")
    })
}

/// The quota of a `cpu.max` value in CPUs (`0.5 CPU`), or `none`.
fn quota(cpu_max: &str) -> Result<String, Unknown> {
    let mut parts = cpu_max.split_whitespace();
    let q = parts.next().unwrap_or("");
    if q == "max" {
        return Ok("none".into());
    }
    let bad = || format!("cannot read a quota from cpu.max {:?}", short(cpu_max));
    let q: u64 = q.parse().map_err(|_| bad())?;
    let p: u64 = parts
        .next()
        .unwrap_or("100000")
        .parse()
        .map_err(|_| bad())?;
    if p == 0 {
        return Err(bad().into());
    }
    let cpus = format!("{:.2}", q as f64 / p as f64);
    let cpus = cpus.trim_end_matches('0').trim_end_matches('.');
    Ok(format!("{cpus} CPU"))
}

/// A memory limit as bytes, or `max`; v1's "unlimited" is a huge page-aligned
/// number (9223372036854771712), written `max` too.
fn bytes_or_max(file: &str, text: &str) -> Result<String, Unknown> {
    let t = text.trim();
    if t == "max" {
        return Ok("max".into());
    }
    match t.parse::<u64>() {
        Ok(n) if n >= 1 << 62 => Ok("max".into()),
        Ok(n) => Ok(n.to_string()),
        Err(_) => Err(unexpected(file, t)),
    }
}

/// Throttled periods and time from `cpu.stat` (v2 `throttled_usec`, v1
/// `throttled_time` in ns). Without any CPU limit nothing can be throttled.
fn throttling(
    src: &Source,
    version: Version,
    stat_dir: Option<&str>,
    cpu_path: &str,
    cpu_max: Option<&str>,
) -> (Result<String, Unknown>, Result<String, Unknown>) {
    let stat = match stat_dir {
        Some(dir) => src
            .read(&format!("{dir}/cpu.stat"))
            .map(|t| (format!("{dir}/cpu.stat"), t))
            .map_err(Unknown::from),
        None => find_up(src, CGROUP_MOUNT, cpu_path, "cpu.stat")
            .map(|(d, t)| (format!("{d}/cpu.stat"), t))
            .ok_or_else(|| "no cpu.stat".into()),
    };
    let unlimited = cpu_max.is_some_and(|m| m.starts_with("max"));
    let field = |name: &str, scale: u64| -> Result<String, Unknown> {
        let (file, text) = stat.as_ref().map_err(|e| e.clone())?;
        let found = text.lines().find_map(|l| {
            let mut p = l.split_whitespace();
            (p.next() == Some(name)).then(|| {
                p.next().map(|v| {
                    v.parse::<u64>()
                        .map(|n| (n / scale).to_string())
                        .map_err(|_| unexpected(file, l))
                })
            })
        });
        match found.flatten() {
            Some(v) => v,
            None if unlimited => Ok("0".into()),
            None => Err(format!("no {name} in {file}").into()),
        }
    };
    let usec = match version {
        Version::V2 => field("throttled_usec", 1),
        Version::V1 => field("throttled_time", 1000),
    };
    (field("nr_throttled", 1), usec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::testutil::*;

    /// A `cpuid -r` dump: GenuineIntel leaf 0, leaf 1 with the hypervisor bit
    /// (ecx 0xfeda3203 has bit 31 set) and a KVM signature.
    const CPUID_KVM: &str = "CPU 0:\n   0x00000000 0x00: eax=0x00000010 ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n   0x00000001 0x00: eax=0x000606a6 ebx=0x00800800 ecx=0xfeda3203 edx=0x178bfbff\n   0x40000000 0x00: eax=0x40000001 ebx=0x4b4d564b ecx=0x564b4d56 edx=0x0000004d\n";
    const CPUID_METAL: &str = "CPU 0:\n   0x00000000 0x00: eax=0x00000010 ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n   0x00000001 0x00: eax=0x000606a6 ebx=0x00800800 ecx=0x7eda3203 edx=0x178bfbff\n";

    fn capture_tree(t: &TempTree) -> Environment {
        let mut env = Environment::default();
        capture(&t.source(), &mut env);
        assert_keys(&env, KEYS);
        env
    }

    #[test]
    fn kvm_guest_in_a_v2_container_with_a_half_cpu() {
        let t = TempTree::new("virt-v2");
        t.write("/cpuid.txt", CPUID_KVM)
            .write("/sys/class/dmi/id/sys_vendor", "Amazon EC2\n")
            .write("/sys/class/dmi/id/product_name", "c6i.large\n")
            .write("/.dockerenv", "")
            .write("/proc/self/cgroup", "0::/\n")
            .write("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n")
            .write("/sys/fs/cgroup/cpu.max", "50000 100000\n")
            .write("/sys/fs/cgroup/cpu.stat", "usage_usec 8335618\nuser_usec 6049331\nsystem_usec 2286287\nnr_periods 143\nnr_throttled 12\nthrottled_usec 400312\nnr_bursts 0\nburst_usec 0\n")
            .write("/sys/fs/cgroup/cpuset.cpus.effective", "0-1\n")
            .write("/sys/fs/cgroup/memory.max", "536870912\n");
        let env = capture_tree(&t);
        assert_eq!(env.get("virt.hypervisor"), Some("KVM"));
        assert_eq!(env.get("virt.dmi.vendor"), Some("Amazon EC2"));
        assert_eq!(env.get("virt.dmi.product"), Some("c6i.large"));
        assert_eq!(env.get("virt.container"), Some("docker"));
        assert_eq!(env.get("cgroup.version"), Some("v2"));
        assert_eq!(env.get("cgroup.path"), Some("/"));
        assert_eq!(env.get("cgroup.cpu.max"), Some("50000 100000"));
        assert_eq!(env.get("cgroup.cpu.quota"), Some("0.5 CPU"));
        assert_eq!(env.get("cgroup.cpuset"), Some("0-1"));
        assert_eq!(env.get("cgroup.memory.max"), Some("536870912"));
        assert_eq!(env.get("cgroup.cpu.nr_throttled"), Some("12"));
        assert_eq!(env.get("cgroup.cpu.throttled_usec"), Some("400312"));
    }

    #[test]
    fn v2_host_session_walks_up_to_the_limited_slice() {
        let t = TempTree::new("virt-v2-host");
        t.write("/cpuid.txt", CPUID_METAL)
            .write("/sys/class/dmi/id/sys_vendor", "Dell Inc.\n")
            .write("/sys/class/dmi/id/product_name", "PowerEdge R650\n")
            .write(
                "/proc/self/cgroup",
                "0::/user.slice/user-1000.slice/session-3.scope\n",
            )
            .write("/proc/1/cgroup", "0::/init.scope\n")
            .write(
                "/sys/fs/cgroup/cgroup.controllers",
                "cpuset cpu io memory pids\n",
            )
            .write("/sys/fs/cgroup/cpuset.cpus.effective", "0-15\n")
            .write("/sys/fs/cgroup/user.slice/cpu.max", "max 100000\n")
            .write(
                "/sys/fs/cgroup/user.slice/cpu.stat",
                "usage_usec 1\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
            )
            .write(
                "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/memory.max",
                "max\n",
            )
            .write(
                "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/cpu.stat",
                "usage_usec 1\n",
            );
        let env = capture_tree(&t);
        assert_eq!(env.get("virt.hypervisor"), Some("none"));
        assert_eq!(env.get("virt.container"), Some("none"));
        assert_eq!(
            env.get("cgroup.path"),
            Some("/user.slice/user-1000.slice/session-3.scope")
        );
        assert_eq!(env.get("cgroup.cpu.max"), Some("max 100000"));
        assert_eq!(env.get("cgroup.cpu.quota"), Some("none"));
        assert_eq!(env.get("cgroup.cpuset"), Some("0-15"));
        assert_eq!(env.get("cgroup.memory.max"), Some("max"));
        assert_eq!(env.get("cgroup.cpu.nr_throttled"), Some("0"));
    }

    #[test]
    fn v1_hierarchy_in_kubernetes() {
        let t = TempTree::new("virt-v1");
        let pod = "/kubepods/burstable/pod5f3c/0a1b2c";
        t.write(
            "/proc/self/cgroup",
            format!(
                "12:memory:{pod}\n4:cpu,cpuacct:{pod}\n3:cpuset:{pod}\n1:name=systemd:{pod}\n0::/\n"
            ),
        )
        .write(
            "/proc/self/environ",
            b"HOME=/root\0KUBERNETES_SERVICE_HOST=10.96.0.1\0".as_slice(),
        )
        .write("/sys/hypervisor/type", "xen\n")
        .write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
        .write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n")
        .write(
            &format!("/sys/fs/cgroup/cpu,cpuacct{pod}/cpu.cfs_quota_us"),
            "150000\n",
        )
        .write(
            &format!("/sys/fs/cgroup/cpu,cpuacct{pod}/cpu.cfs_period_us"),
            "100000\n",
        )
        .write(
            &format!("/sys/fs/cgroup/cpu,cpuacct{pod}/cpu.stat"),
            "nr_periods 345\nnr_throttled 7\nthrottled_time 123456789\n",
        )
        .write("/sys/fs/cgroup/cpuset/cpuset.effective_cpus", "0-7\n")
        .write(
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "9223372036854771712\n",
        );
        let env = capture_tree(&t);
        assert_eq!(
            env.get("virt.hypervisor"),
            Some("Xen"),
            "no cpuid dump: /sys/hypervisor/type"
        );
        assert_eq!(env.get("virt.container"), Some("kubernetes"));
        assert_eq!(env.get("virt.dmi.vendor"), Some("unknown"));
        assert_eq!(env.get("cgroup.version"), Some("v1"));
        assert_eq!(env.get("cgroup.path"), Some(pod));
        assert_eq!(env.get("cgroup.cpu.max"), Some("150000 100000"));
        assert_eq!(env.get("cgroup.cpu.quota"), Some("1.5 CPU"));
        assert_eq!(env.get("cgroup.cpuset"), Some("0-7"));
        assert_eq!(env.get("cgroup.memory.max"), Some("max"));
        assert_eq!(env.get("cgroup.cpu.nr_throttled"), Some("7"));
        assert_eq!(env.get("cgroup.cpu.throttled_usec"), Some("123456"));
    }

    #[test]
    fn nothing_known_gives_unknowns_with_reasons() {
        let t = TempTree::new("virt-empty");
        let env = capture_tree(&t);
        assert_eq!(env.get("virt.hypervisor"), Some("unknown"));
        assert!(
            env.facts["virt.hypervisor"]
                .reason
                .as_deref()
                .unwrap()
                .contains("cpuid")
        );
        assert_eq!(env.get("virt.container"), Some("none"));
        assert_eq!(env.get("cgroup.version"), Some("unknown"));
        assert_eq!(env.get("cgroup.cpu.quota"), Some("unknown"));
    }

    #[test]
    fn dotdot_in_a_cgroup_path_stays_inside_the_mount() {
        let t = TempTree::new("virt-dotdot");
        t.write("/proc/self/cgroup", "0::/../../../../etc\n")
            .write("/sys/fs/cgroup/cgroup.controllers", "cpu\n")
            .write("/sys/fs/cgroup/cpu.max", "200000 100000\n");
        let env = capture_tree(&t);
        assert_eq!(env.get("cgroup.cpu.quota"), Some("2 CPU"));
    }

    #[test]
    fn quota_formats() {
        assert_eq!(quota("50000 100000").unwrap(), "0.5 CPU");
        assert_eq!(quota("max 100000").unwrap(), "none");
        assert_eq!(quota("100000 100000").unwrap(), "1 CPU");
        assert_eq!(quota("33333 100000").unwrap(), "0.33 CPU");
        assert!(quota("1 0").is_err());
        assert!(quota("x").is_err());
        assert_eq!(cpuid_hypervisor("TCGTCGTCGTCG"), "QEMU TCG");
        assert_eq!(cpuid_hypervisor("Microsoft Hv"), "Hyper-V");
    }

    #[test]
    fn garbage_everywhere_does_not_panic() {
        for seed in 0..8u64 {
            let t = TempTree::new("virt-garbage");
            fill(&t, |i| {
                random_bytes(seed * 13 + i as u64, (seed as usize * 733 + i * 97) % 4000)
            });
            t.write("/proc/self/cgroup", random_bytes(seed, 300));
            let env = capture_tree(&t);
            assert!(env.facts.values().all(|f| !f.value.contains('\n')));
        }
        // Lines that look right with absurd values.
        let t = TempTree::new("virt-absurd");
        t.write("/proc/self/cgroup", "0::/a/b\n")
            .write("/sys/fs/cgroup/cgroup.controllers", "cpu\n")
            .write("/sys/fs/cgroup/a/cpu.max", "99999999999999999999999 1\n")
            .write(
                "/sys/fs/cgroup/a/cpu.stat",
                "nr_throttled -5\nthrottled_usec 1e99\n",
            )
            .write("/sys/fs/cgroup/cpuset.cpus.effective", "0-999999999\n")
            .write("/sys/fs/cgroup/a/b/memory.max", "-1\n");
        let env = capture_tree(&t);
        assert_eq!(env.get("cgroup.cpu.quota"), Some("unknown"));
        assert_eq!(env.get("cgroup.cpuset"), Some("unknown"));
        assert_eq!(env.get("cgroup.memory.max"), Some("unknown"));
        assert_eq!(env.get("cgroup.cpu.nr_throttled"), Some("unknown"));
    }

    #[test]
    fn live_virt() {
        let mut env = Environment::default();
        capture(&Source::live(), &mut env);
        assert_keys(&env, KEYS);
    }
}
