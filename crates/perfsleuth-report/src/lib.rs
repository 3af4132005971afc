//! Renderers for perfsleuth: the terminal summary, a Markdown table, the
//! versioned JSON export and CSV (behind [`Exporter`]), with the one colour
//! module ([`style`]) and the one set of formatters every renderer uses.
//!
//! This crate only turns a [`Run`] into text or JSON values. It never
//! measures, judges, stores or prints, so the CLI decides where output goes
//! and the renderers can be tested with hand-built runs.
//! `perfsleuth_summary::analyze` computes every statistic once; each
//! renderer reads the same [`RunReport`], so the terminal, Markdown and JSON
//! can never disagree about a number.

#![forbid(unsafe_code)]

pub mod chart;
mod csv;
pub mod export;
mod format;
pub mod html;
mod hyperfine;
mod json;
mod locks;
mod markdown;
mod markup;
pub mod probe;
mod simulation;
pub mod style;
pub mod svg;
mod terminal;

#[cfg(doc)]
use perfsleuth_model::Run;
pub use perfsleuth_summary::{
    BenchmarkReport, CONFIDENCE, Comparison, RunReport, SortOrder, enough_runs,
};

pub use csv::export_csv;
pub use export::{
    CsvExporter, ExportError, ExportFormat, Exporter, HyperfineExporter, JsonExporter,
    MarkdownExporter, TableExporter,
};
pub use format::{
    Align, TimeUnit, capitalised, format_bytes, format_change, format_count, format_duration_ns,
    format_fixed, format_metric, format_p, format_p_value, format_si, format_si_unit, format_size,
    pad_left, pad_right, shortened, table, width,
};
pub use hyperfine::export_hyperfine;
pub use json::export_json;
pub use locks::{lock_events, lock_headline, lock_losses};
pub use markdown::{TableDialect, render_markdown, render_table};
pub use perfsleuth_model::schema::{HyperfineDoc, HyperfineResult};
pub use perfsleuth_stats::{Interval, RatioEstimate, Summary};
pub use simulation::{render_simulation, render_simulation_markdown};
pub use style::Style;
pub use terminal::render_terminal;

#[cfg(test)]
pub(crate) mod testutil {
    //! Hand-built runs shared by the renderer tests.

    use perfsleuth_model::{Benchmark, Environment, ImpactClass, Mode, Run, RunStatus, Sample};

    /// A successful sample with the given wall time and peak RSS; user and
    /// system time are fixed fractions so summaries are easy to predict.
    pub fn sample(iteration: u32, wall_ns: u64, rss: u64) -> Sample {
        Sample {
            iteration,
            round: 0,
            wall_ns,
            wall_exact_ns: None,
            user_ns: wall_ns * 8 / 10,
            sys_ns: wall_ns / 10,
            peak_rss_bytes: rss,
            minor_faults: 100 + u64::from(iteration),
            major_faults: 0,
            voluntary_cs: 2,
            involuntary_cs: 1,
            exit_code: Some(0),
            signal: None,
            counters: Default::default(),
        }
    }

    /// A benchmark whose samples have the given wall times and a constant RSS.
    pub fn bench(name: &str, walls: &[u64], rss: u64) -> Benchmark {
        Benchmark {
            locks: None,
            name: name.to_string(),
            command: name.to_string(),
            argv: name.split(' ').map(str::to_string).collect(),
            parameters: Default::default(),
            facts: Default::default(),
            samples: walls
                .iter()
                .enumerate()
                .map(|(i, &w)| sample(i as u32, w, rss))
                .collect(),
            profile: None,
            summaries: Vec::new(),
        }
    }

    /// A complete run holding `benchmarks`.
    pub fn run(benchmarks: Vec<Benchmark>) -> Run {
        let mut environment = Environment::default();
        environment.set("cpu.model", "Test CPU @ 3.0GHz", ImpactClass::Identity);
        environment.set("cpu.governor", "performance", ImpactClass::Performance);
        Run {
            id: Some(12),
            uuid: None,
            started_at: "2024-02-29T12:34:56.123Z".to_string(),
            ended_at: Some("2024-02-29T12:35:06.456Z".to_string()),
            status: RunStatus::Complete,
            tool_version: "0.1.0".to_string(),
            git: None,
            mode: Mode::Walltime,
            options: serde_json::json!({"warmup": 3}),
            environment,
            benchmarks,
            probes: Vec::new(),
        }
    }

    /// `n` wall times spread evenly around `center_ns` by +-`spread_ns`, in a
    /// shuffled order so medians do not depend on input order.
    pub fn spread(n: usize, center_ns: u64, spread_ns: u64) -> Vec<u64> {
        (0..n)
            .map(|i| {
                let k = (i * 7) % n;
                let offset = if n > 1 {
                    (2 * spread_ns * k as u64) / (n as u64 - 1)
                } else {
                    spread_ns
                };
                center_ns - spread_ns + offset
            })
            .collect()
    }
}
