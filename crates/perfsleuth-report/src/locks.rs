//! The lock-wait section (`run --locks`, `scale --locks`): one headline per
//! benchmark naming the lock, the other sites, and what the tracer lost.

use crate::format::{format_count, format_duration_ns};
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::{LockReport, LockSite};

/// Sites listed in the headline; the rest are summed.
const NAMED: usize = 3;

/// "`hot_add` (two.c:27) ← `worker`, mutex `hot`".
fn site_text(s: &LockSite) -> String {
    let mut t = format!("`{}` ({})", s.function, s.location);
    if let Some(c) = &s.caller {
        t.push_str(&format!(" ← `{c}`"));
        // A bare closure name says little without its place.
        if let Some(l) = s.caller_location.as_ref().filter(|_| c.starts_with('{')) {
            t.push_str(&format!(" ({l})"));
        }
    }
    if let Some(o) = &s.object {
        t.push_str(&format!(", {} `{o}`", s.kind));
    }
    t
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return MISSING.into();
    }
    perfsleuth_model::quantity::format_share(part as f64 / whole as f64, 0)
}

/// A wait time, per run where there were several runs.
fn per_run(ns: u64, runs: u32) -> String {
    if runs > 1 {
        format!("{} a run", format_duration_ns(ns as f64 / runs as f64))
    } else {
        format_duration_ns(ns as f64)
    }
}

/// The headline: "lock wait: 1.82 s (87 % of the threads' off-CPU time)
/// on 1 futex: 100% at `counter_add` (contention.c:23) ← `worker`".
pub fn lock_headline(r: &LockReport) -> String {
    let locks: Vec<&LockSite> = r.locks().collect();
    if locks.is_empty() {
        let mut t = "no lock waits".to_string();
        if r.other_waits > 0 {
            t.push_str(&format!(
                " (other futex waits, joins and condition variables: {})",
                per_run(r.other_wait_ns, r.runs)
            ));
        }
        return t;
    }
    let share = r
        .lock_share_of_off_cpu()
        .map(|s| {
            // More threads than CPUs: say where the rest of the time went.
            let base = r.off_cpu_ns().saturating_sub(r.other_wait_ns);
            let cpu = if r.preempted_ns > r.lock_wait_ns {
                format!(
                    "; {} of it waiting for a CPU",
                    percent(r.preempted_ns.min(base), base)
                )
            } else {
                String::new()
            };
            format!(" ({:.0}% of the threads' off-CPU time{cpu})", s * 100.0)
        })
        .unwrap_or_default();
    let futexes = match r.futexes {
        1 => "1 futex".to_string(),
        n => format!("{n} futexes"),
    };
    let mut named: Vec<String> = locks
        .iter()
        .take(NAMED)
        .map(|s| format!("{} at {}", percent(s.wait_ns, r.lock_wait_ns), site_text(s)))
        .collect();
    if locks.len() > NAMED {
        let rest: u64 = locks[NAMED..].iter().map(|s| s.wait_ns).sum();
        named.push(format!(
            "{} at {} other sites",
            percent(rest, r.lock_wait_ns),
            locks.len() - NAMED
        ));
    }
    format!(
        "lock wait: {}{share} on {futexes}: {}",
        per_run(r.lock_wait_ns, r.runs),
        named.join("; ")
    )
}

/// What the tracer saw and lost, always shown with the report: a loss is
/// never silent.
pub fn lock_events(r: &LockReport) -> String {
    let e = &r.events;
    let mut t = format!(
        "{} futex waits traced over {} runs, {} stack samples, {}",
        format_count(e.waits as f64),
        r.runs,
        format_count(e.samples as f64),
        lock_losses(r)
    );
    if e.stack_failures > 0 {
        t.push_str(&format!(
            "; {} kernel stack walks failed (those waits are grouped without a stack)",
            e.stack_failures
        ));
    }
    if e.unresolved_samples > 0 {
        t.push_str(&format!(
            "; {} samples not symbolised (the process was gone before its memory map was read, or its files were)",
            e.unresolved_samples
        ));
    }
    t
}

/// "none lost", or what the whole trace lost and why.
pub fn lock_losses(r: &LockReport) -> String {
    let e = &r.events;
    if r.lost_anything() {
        format!(
            "lost in the whole trace: {} waits, {} samples, {} processes, {} off-CPU intervals (kernel maps or ring buffer full)",
            e.dropped_waits, e.dropped_samples, e.dropped_processes, e.dropped_switches
        )
    } else {
        "none lost".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfsleuth_model::LockEvents;

    fn site(kind: &str, function: &str, wait_ns: u64) -> LockSite {
        LockSite {
            kind: kind.into(),
            function: function.into(),
            location: "two.c:7".into(),
            caller: Some("worker".into()),
            wait_ns,
            waits: 1,
            ..LockSite::default()
        }
    }

    #[test]
    fn the_headline_names_the_locks_by_share() {
        let r = LockReport {
            runs: 1,
            lock_wait_ns: 1_000_000_000,
            lock_waits: 10,
            other_wait_ns: 100_000_000,
            blocked_ns: 1_200_000_000,
            futexes: 2,
            sites: vec![
                site("mutex", "hot_add", 900_000_000),
                site("mutex", "cold_add", 100_000_000),
                site("join", "main", 100_000_000),
            ],
            events: LockEvents {
                waits: 11,
                ..LockEvents::default()
            },
            ..LockReport::default()
        };
        assert_eq!(
            lock_headline(&r),
            "lock wait: 1.000 s (91% of the threads' off-CPU time) on 2 futexes: \
             90% at `hot_add` (two.c:7) ← `worker`; 10% at `cold_add` (two.c:7) ← `worker`"
        );
        assert!(
            lock_events(&r).ends_with("none lost"),
            "{}",
            lock_events(&r)
        );
    }

    #[test]
    fn the_html_section_escapes_names_and_lists_every_site() {
        let r = LockReport {
            runs: 2,
            lock_wait_ns: 4_000,
            futexes: 1,
            sites: vec![
                LockSite {
                    stack: vec!["<T as Lock>::take (a.rs:3)".into()],
                    ..site("mutex", "<T as Lock>::take", 4_000)
                },
                site("join", "main", 1_000),
            ],
            ..LockReport::default()
        };
        let html = crate::html::lock_section(&r);
        assert!(html.contains("<td>&lt;T as Lock&gt;::take</td>"), "{html}");
        assert!(
            html.contains("<td>100%</td>") && html.contains("<td>–</td>"),
            "{html}"
        );
        assert!(html.contains("<td>2.0 µs</td>"), "per run: {html}");
        assert!(!html.contains("<T as"), "unescaped: {html}");
    }

    #[test]
    fn no_lock_waits_and_losses_are_said() {
        let mut r = LockReport {
            runs: 2,
            other_wait_ns: 4_000_000,
            other_waits: 2,
            sites: vec![site("join", "main", 4_000_000)],
            ..LockReport::default()
        };
        r.events.dropped_samples = 3;
        assert!(
            lock_headline(&r).starts_with("no lock waits (other futex waits"),
            "{}",
            lock_headline(&r)
        );
        assert!(
            lock_events(&r).contains("lost in the whole trace: 0 waits, 3 samples"),
            "{}",
            lock_events(&r)
        );
    }
}
