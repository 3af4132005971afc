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

mod allocs;
pub mod chart;
mod csv;
pub mod export;
mod format;
pub mod html;
mod hyperfine;
mod json;
pub mod junit;
mod locks;
mod markdown;
mod markup;
pub mod probe;
mod simulation;
mod stacks;
pub mod style;
mod terminal;

#[cfg(doc)]
use perfsleuth_model::Run;
pub use perfsleuth_summary::{
    BenchmarkReport, CONFIDENCE, Comparison, RunReport, SortOrder, enough_runs,
};

pub use allocs::{alloc_folded, allocs_events, allocs_headline};
pub use csv::export_csv;
pub use export::{
    CsvExporter, ExportError, ExportFormat, Exporter, HyperfineExporter, JsonExporter,
    MarkdownExporter, TableExporter,
};
pub use format::{
    Align, TimeUnit, capitalised, column_widths, format_bytes, format_change, format_count,
    format_duration_ns, format_fixed, format_metric, format_p, format_p_value, format_si,
    format_si_unit, format_size, pad_left, pad_right, shortened, table, table_rows, width,
};
pub use hyperfine::export_hyperfine;
pub use json::export_json;
pub use locks::{lock_events, lock_headline, lock_losses};
pub use markdown::{TableDialect, render_markdown, render_table};
pub use perfsleuth_model::schema::{HyperfineDoc, HyperfineResult};
pub use perfsleuth_stats::{Interval, RatioEstimate, Summary};
pub use simulation::{render_simulation, render_simulation_markdown};
pub use stacks::{
    diff_flame_svg, flame_svg, flame_unit, folded, folded_per_run, in_samples, rounded_share,
    shares_moved, stacks_events, stacks_headline, svg_img,
};
pub use style::Style;
pub use terminal::render_terminal;

#[cfg(test)]
pub(crate) use perfsleuth_summary::testutil;
