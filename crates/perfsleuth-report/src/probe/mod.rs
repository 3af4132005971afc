//! Probe results as text, documents and HTML: what `probe`, `probe diff`,
//! `show` and the report print about the machine probes, apart from the
//! probes themselves so the runner that measures them links no renderer.

pub mod html;
mod text;

pub use text::{
    ProbeSide, change_text, clock_line, compare_notes, diff_document, fmt_value, probe_document,
    render_diff, render_probe, render_report, render_stored,
};
