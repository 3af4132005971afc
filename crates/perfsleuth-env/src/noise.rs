//! How busy the machine was when the run started: recorded so that a noisy
//! result can be explained later, never judged (all context).

use crate::Source;
use crate::error::{Record, Unknown};
use crate::kernel::unexpected;
use perfsleuth_model::{Environment, ImpactClass};

/// The fixed keys this reader always sets.
#[cfg(test)]
pub(crate) const KEYS: &[&str] = &[
    "noise.loadavg",
    "noise.runnable",
    "noise.steal_pct",
    "noise.iowait_pct",
    "noise.psi.cpu.some_avg10",
    "noise.uptime_s",
];

/// Captures the noise facts.
pub fn capture(src: &Source, env: &mut Environment) {
    use ImpactClass::Context;
    env.record("noise.loadavg", loadavg(src), Context);
    let stat = src.read("/proc/stat").map_err(Unknown::from);
    env.record(
        "noise.runnable",
        stat.clone().and_then(|t| {
            stat_field(&t, "procs_running").ok_or_else(|| "no procs_running in /proc/stat".into())
        }),
        Context,
    );
    let shares = stat.and_then(|t| cpu_shares(&t));
    env.record("noise.steal_pct", shares.clone().map(|s| s.0), Context);
    env.record("noise.iowait_pct", shares.map(|s| s.1), Context);
    env.record("noise.psi.cpu.some_avg10", psi_some_avg10(src), Context);
    env.record("noise.uptime_s", uptime(src), Context);
}

/// The machine's busy-ness counters at one instant; [`NoiseSnapshot::since`]
/// turns two of them into what happened in between. The facts captured at
/// start are averages over a past the run did not see (steal since boot,
/// CPU pressure over the last 10 s, which remembers the build that just
/// finished); these judge the run itself.
#[derive(Debug, Clone)]
pub struct NoiseSnapshot {
    at: std::time::Instant,
    /// The aggregate `cpu` line of /proc/stat (user … steal), in ticks.
    cpu: Option<[u64; 8]>,
    /// `total=` of the `some` line of /proc/pressure/cpu, in µs.
    psi_some_us: Option<u64>,
}

impl NoiseSnapshot {
    /// Reads the counters now.
    pub fn take(src: &Source) -> NoiseSnapshot {
        let cpu = src.read("/proc/stat").ok().and_then(|t| cpu_ticks(&t).ok());
        let psi_some_us = src
            .read("/proc/pressure/cpu")
            .ok()
            .and_then(|t| psi_some_total(&t));
        NoiseSnapshot {
            at: std::time::Instant::now(),
            cpu,
            psi_some_us,
        }
    }

    /// Records `noise.run.*`: the hypervisor's steal, the iowait and the CPU
    /// pressure between this snapshot and now, as percentages of that time.
    /// A counter that could not be read at either end is left out.
    pub fn since(&self, src: &Source, env: &mut Environment) {
        use ImpactClass::Context;
        let now = NoiseSnapshot::take(src);
        let secs = now.at.duration_since(self.at).as_secs_f64();
        env.set("noise.run.seconds", format!("{secs:.1}"), Context);
        if let (Some(a), Some(b)) = (self.cpu, now.cpu) {
            let d: Vec<f64> = a
                .iter()
                .zip(&b)
                .map(|(x, y)| y.saturating_sub(*x) as f64)
                .collect();
            let total: f64 = d.iter().sum();
            if total > 0.0 {
                env.set(
                    "noise.run.steal_pct",
                    format!("{:.1}", d[7] * 100.0 / total),
                    Context,
                );
                env.set(
                    "noise.run.iowait_pct",
                    format!("{:.1}", d[4] * 100.0 / total),
                    Context,
                );
            }
        }
        if let (Some(a), Some(b)) = (self.psi_some_us, now.psi_some_us) {
            if secs > 0.0 {
                let pct = b.saturating_sub(a) as f64 / (secs * 1e6) * 100.0;
                env.set(
                    "noise.run.psi.cpu.some_pct",
                    format!("{:.1}", pct.min(100.0)),
                    Context,
                );
            }
        }
    }
}

/// The eight counters of the aggregate `cpu` line of /proc/stat (user
/// nice system idle iowait irq softirq steal).
fn cpu_ticks(text: &str) -> Result<[u64; 8], Unknown> {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("cpu"))
        .ok_or("no cpu line in /proc/stat")?;
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|v| v.parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| unexpected("/proc/stat", line))?;
    let n = values.len();
    values
        .try_into()
        .map_err(|_| format!("the cpu line of /proc/stat has {n} fields, expected 8").into())
}

/// `total=` (µs) of the `some` line of /proc/pressure/cpu.
fn psi_some_total(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// The three load averages of `/proc/loadavg` ("0.52 0.58 0.59").
fn loadavg(src: &Source) -> Result<String, Unknown> {
    let path = "/proc/loadavg";
    let text = src.read(path)?;
    let fields: Vec<&str> = text.split_whitespace().take(3).collect();
    if fields.len() == 3
        && fields
            .iter()
            .all(|f| f.parse::<f64>().is_ok_and(|v| v.is_finite() && v >= 0.0))
    {
        Ok(fields.join(" "))
    } else {
        Err(unexpected(path, &text))
    }
}

/// A `name value` line of `/proc/stat` whose value is a number.
fn stat_field(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let mut parts = l.split_whitespace();
        (parts.next() == Some(name))
            .then(|| parts.next()?.parse::<u64>().ok().map(|n| n.to_string()))?
    })
}

/// Steal and iowait as percentages of all CPU time since boot, from the
/// aggregate `cpu` line (user nice system idle iowait irq softirq steal;
/// guest time is already inside user, so it is not added again).
fn cpu_shares(text: &str) -> Result<(String, String), Unknown> {
    let values = cpu_ticks(text)?;
    // f64 sums: absurd counters must not overflow.
    let total: f64 = values.iter().map(|v| *v as f64).sum();
    if total <= 0.0 {
        return Err("the cpu line of /proc/stat counts no time".into());
    }
    let pct = |v: u64| format!("{:.1}", v as f64 * 100.0 / total);
    Ok((pct(values[7]), pct(values[4])))
}

/// `avg10` of the `some` line of `/proc/pressure/cpu`.
fn psi_some_avg10(src: &Source) -> Result<String, Unknown> {
    let path = "/proc/pressure/cpu";
    let text = src.read(path)?;
    let some = text
        .lines()
        .find(|l| l.starts_with("some "))
        .ok_or_else(|| format!("no `some` line in {path}"))?;
    some.split_whitespace()
        .find_map(|f| f.strip_prefix("avg10="))
        .filter(|v| v.parse::<f64>().is_ok_and(|x| x.is_finite() && x >= 0.0))
        .map(str::to_string)
        .ok_or_else(|| unexpected(path, some))
}

/// Whole seconds since boot, from `/proc/uptime`.
fn uptime(src: &Source) -> Result<String, Unknown> {
    let path = "/proc/uptime";
    let text = src.read(path)?;
    let first = text.split_whitespace().next().unwrap_or("");
    match first.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..1e15).contains(&v) => Ok(format!("{}", v.floor() as u64)),
        _ => Err(unexpected(path, first)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::testutil::*;

    #[test]
    fn noise_over_an_interval_is_the_counters_difference() {
        let t = TempTree::new("noise-run");
        t.write("/proc/stat", "cpu  100 0 100 700 0 0 0 100 0 0\n")
            .write(
                "/proc/pressure/cpu",
                "some avg10=90.00 avg60=50.00 avg300=10.00 total=1000000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
            );
        let src = t.source();
        let start = NoiseSnapshot::take(&src);
        // 1000 ticks later: 50 stolen, 100 waiting for I/O; 0.2 s of CPU pressure.
        t.write("/proc/stat", "cpu  400 0 200 1150 100 0 0 150 0 0\n")
            .write(
                "/proc/pressure/cpu",
                "some avg10=95.00 avg60=50.00 avg300=10.00 total=1200000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
            );
        let mut env = Environment::default();
        start.since(&src, &mut env);
        assert_eq!(env.get("noise.run.steal_pct"), Some("5.0"));
        assert_eq!(env.get("noise.run.iowait_pct"), Some("10.0"));
        // The pressure is a share of the wall time between the snapshots,
        // whatever the start-time avg10 (95 %, the build before) said.
        let pct: f64 = env
            .get("noise.run.psi.cpu.some_pct")
            .unwrap()
            .parse()
            .unwrap();
        assert!(pct > 0.0 && pct <= 100.0, "{pct}");
        // Nothing readable: nothing claimed.
        let empty = TempTree::new("noise-run-empty");
        let src = empty.source();
        let mut env = Environment::default();
        NoiseSnapshot::take(&src).since(&src, &mut env);
        assert_eq!(env.get("noise.run.steal_pct"), None);
        assert_eq!(env.get("noise.run.psi.cpu.some_pct"), None);
    }

    #[test]
    fn reads_real_formats() {
        let t = TempTree::new("noise");
        t.write("/proc/loadavg", "0.57 0.82 0.57 2/93 18625\n")
            .write(
                "/proc/stat",
                "cpu  55733 0 21464 236969 1182 0 216 3000 0 0\ncpu0 27483 0 10203 119745 347 0 43 12 0 0\nintr 1 2 3\nctxt 123\nbtime 1700000000\nprocesses 18625\nprocs_running 3\nprocs_blocked 0\n",
            )
            .write("/proc/pressure/cpu", "some avg10=2.18 avg60=2.75 avg300=4.86 total=63238825\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
            .write("/proc/uptime", "1586.31 2369.70\n");
        let mut env = Environment::default();
        capture(&t.source(), &mut env);
        assert_eq!(env.get("noise.loadavg"), Some("0.57 0.82 0.57"));
        assert_eq!(env.get("noise.runnable"), Some("3"));
        // 3000 / 318559 and 1182 / 318559.
        assert_eq!(env.get("noise.steal_pct"), Some("0.9"));
        assert_eq!(env.get("noise.iowait_pct"), Some("0.4"));
        assert_eq!(env.get("noise.psi.cpu.some_avg10"), Some("2.18"));
        assert_eq!(env.get("noise.uptime_s"), Some("1586"));
        assert!(env.facts.values().all(|f| f.class == ImpactClass::Context));
    }

    #[test]
    fn missing_and_absurd_values_are_unknown() {
        let t = TempTree::new("noise-absurd");
        t.write(
            "/proc/stat",
            "cpu  0 0 0 0 0 0 0 0\nprocs_running 99999999999999999999999\n",
        )
        .write("/proc/uptime", "1e400 0\n")
        .write("/proc/loadavg", "NaN 1 2\n");
        let mut env = Environment::default();
        capture(&t.source(), &mut env);
        assert_keys(&env, KEYS);
        for k in KEYS {
            assert_eq!(env.get(k), Some("unknown"), "{k}");
            assert!(env.facts[*k].reason.is_some());
        }
        t.write(
            "/proc/stat",
            "cpu  18446744073709551615 18446744073709551615 0 0 0 0 0 18446744073709551615\n",
        );
        let mut env = Environment::default();
        capture(&t.source(), &mut env);
        assert_eq!(env.get("noise.steal_pct"), Some("33.3"));
    }

    #[test]
    fn garbage_everywhere_does_not_panic() {
        for seed in 0..8u64 {
            let t = TempTree::new("noise-garbage");
            fill(&t, |i| {
                random_bytes(seed * 7 + i as u64, (seed as usize * 311 + i * 17) % 2000)
            });
            let mut env = Environment::default();
            capture(&t.source(), &mut env);
            assert_keys(&env, KEYS);
        }
    }

    #[test]
    fn live_noise() {
        if !have("/proc/stat") {
            return;
        }
        let mut env = Environment::default();
        capture(&Source::live(), &mut env);
        assert_keys(&env, KEYS);
        assert_ne!(env.get("noise.loadavg"), Some("unknown"));
    }
}
