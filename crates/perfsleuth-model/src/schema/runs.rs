//! The list of stored runs.

use crate::GitInfo;
use crate::Mode;
use crate::RunStatus;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

/// `perfsleuth/runs`: the stored runs, newest first (`runs --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunsDoc {
    /// Always `"perfsleuth/runs"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The runs.
    pub runs: Vec<RunListing>,
}
document!(RunsDoc, "perfsleuth/runs", crate::SCHEMA_VERSION);

/// One row of `perfsleuth runs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunListing {
    /// Store id.
    pub id: i64,
    /// The run's UUID, the same in every store it was copied to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// End time; `None` while running or after a crash.
    pub ended_at: Option<String>,
    /// Lifecycle state.
    pub status: RunStatus,
    /// Measurement mode.
    pub mode: Mode,
    /// Source-control state at start.
    pub git: Option<GitInfo>,
    /// Benchmark names in display order.
    pub benchmarks: Vec<String>,
    /// Number of samples over all benchmarks.
    pub samples: u64,
    /// The `cpu.model` fact.
    pub cpu_model: Option<String>,
    /// The `host.name` fact.
    pub host: Option<String>,
    /// Hash of the identity facts: runs with equal hashes ran on comparable machines.
    pub comparability: String,
    /// Probes with stored results (`perfsleuth probe` runs), in the order measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<String>,
}

/// Which runs a listing keeps: `perfsleuth runs`' filters and the team
/// server's `runs?` query, one rule for both. Empty: every run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFilter {
    /// Only runs with a benchmark whose name contains this text.
    pub bench: Option<String>,
    /// Only runs made on this git branch.
    pub branch: Option<String>,
    /// Only runs of this mode.
    pub mode: Option<Mode>,
    /// Only runs started at or after this RFC 3339 time.
    pub since: Option<String>,
    /// Only runs on this machine class: its comparability hash or a
    /// prefix of it (the 12 characters `runs` shows).
    pub machine: Option<String>,
}

impl RunFilter {
    /// Whether the filter keeps every run.
    pub fn is_empty(&self) -> bool {
        *self == RunFilter::default()
    }

    /// Whether `r` passes every filter given.
    pub fn keeps(&self, r: &RunListing) -> bool {
        let bench = self
            .bench
            .as_deref()
            .is_none_or(|t| r.benchmarks.iter().any(|b| b.contains(t)));
        let branch = self.branch.as_deref().is_none_or(|b| {
            r.git
                .as_ref()
                .and_then(|g| g.branch.as_deref())
                .is_some_and(|g| g == b)
        });
        let mode = self.mode.is_none_or(|m| r.mode == m);
        let recent = self
            .since
            .as_deref()
            .is_none_or(|s| r.started_at.as_str() >= s);
        let machine = self
            .machine
            .as_deref()
            .is_none_or(|m| r.comparability.starts_with(m));
        bench && branch && mode && recent && machine
    }
}

/// A run measured for a bisection, with its place in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BisectionRun {
    /// The step (1 = the confirmation of the ends).
    pub step: u64,
    /// `confirm`, `split` or `verify`.
    pub kind: String,
    /// The run.
    pub run: RunListing,
}

/// A bisection whose runs are stored: the range and how many runs it measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BisectionListing {
    /// The bisection's id (`perfsleuth/bisect`'s `id`).
    pub id: String,
    /// The range's older end (full hash).
    pub baseline: Option<String>,
    /// The range's newer end (full hash).
    pub candidate: Option<String>,
    /// Runs stored for it.
    pub runs: u64,
    /// When its first stored run started.
    pub started_at: String,
    /// When its last stored run started.
    pub last_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(
        branch: &str,
        mode: Mode,
        started_at: &str,
        hash: &str,
        benches: &[&str],
    ) -> RunListing {
        RunListing {
            id: 1,
            uuid: None,
            started_at: started_at.into(),
            ended_at: None,
            status: RunStatus::Complete,
            mode,
            git: Some(GitInfo {
                commit: "0".repeat(40),
                branch: Some(branch.into()),
                dirty: false,
            }),
            benchmarks: benches.iter().map(|b| b.to_string()).collect(),
            samples: 10,
            cpu_model: None,
            host: None,
            comparability: hash.into(),
            probes: Vec::new(),
        }
    }

    #[test]
    fn a_run_filter_keeps_a_run_only_when_every_given_filter_does() {
        let r = listing(
            "main",
            Mode::Walltime,
            "2026-12-07T08:00:00Z",
            "abcdef123456",
            &["parse", "render"],
        );
        assert!(RunFilter::default().is_empty());
        assert!(RunFilter::default().keeps(&r));
        let only = |set: &dyn Fn(&mut RunFilter)| {
            let mut f = RunFilter::default();
            set(&mut f);
            f.keeps(&r)
        };
        type Set<'a> = &'a dyn Fn(&mut RunFilter);
        let cases: [(Set, bool); 9] = [
            (&|f| f.bench = Some("end".into()), true),
            (&|f| f.bench = Some("save".into()), false),
            (&|f| f.branch = Some("main".into()), true),
            (&|f| f.branch = Some("mai".into()), false),
            (&|f| f.mode = Some(Mode::Simulation), false),
            (&|f| f.since = Some("2026-12-07".into()), true),
            (&|f| f.since = Some("2026-12-08".into()), false),
            (&|f| f.machine = Some("abcd".into()), true),
            (&|f| f.machine = Some("bcde".into()), false),
        ];
        for (i, (set, want)) in cases.iter().enumerate() {
            assert_eq!(only(*set), *want, "case {i}");
        }
        // Every filter at once, one of them failing.
        let all = RunFilter {
            bench: Some("parse".into()),
            branch: Some("main".into()),
            mode: Some(Mode::Walltime),
            since: Some("2026-12-01".into()),
            machine: Some("ffff".into()),
        };
        assert!(!all.keeps(&r));
        let mut detached = r.clone();
        detached.git = None;
        assert!(
            !RunFilter {
                branch: Some("main".into()),
                ..Default::default()
            }
            .keeps(&detached)
        );
    }
}
