//! The run's export formats behind one trait (hyperfine's `src/export/`
//! shape): the binary asks each requested [`ExportFormat`] for its
//! [`Exporter`] and writes what it returns, so a new format is a new
//! implementation here and one `--export-*` option, not a new code path.
//!
//! Each exporter is a thin wrapper over its format's own file (`json.rs`,
//! `csv.rs`, `markdown.rs`, `simulation.rs`), which keep the rendering.

use crate::RunReport;
use perfsleuth_model::{Mode, Run};
use std::fmt;

/// Why a document could not be produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportError {
    /// The format that failed ("json").
    pub format: &'static str,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot write the {} export: {}",
            self.format, self.message
        )
    }
}

impl std::error::Error for ExportError {}

/// One output format of a run.
pub trait Exporter {
    /// The format's short name, as in `--export-NAME`.
    fn name(&self) -> &'static str;

    /// The whole document for `run`, ending in a newline. `report` must come
    /// from [`crate::analyze`] on the same run, so every format agrees.
    fn export(&self, run: &Run, report: &RunReport) -> Result<String, ExportError>;
}

/// The versioned JSON document (`schema: perfsleuth/run`, docs/SCHEMA.md).
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn name(&self) -> &'static str {
        "json"
    }

    fn export(&self, run: &Run, report: &RunReport) -> Result<String, ExportError> {
        let doc = crate::json::export_json(run, report);
        perfsleuth_model::schema::to_json_pretty(&doc).map_err(|e| ExportError {
            format: self.name(),
            message: e.to_string(),
        })
    }
}

/// One CSV row per sample.
#[derive(Debug, Clone, Copy, Default)]
pub struct CsvExporter;

impl Exporter for CsvExporter {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn export(&self, run: &Run, _report: &RunReport) -> Result<String, ExportError> {
        Ok(crate::csv::export_csv(run))
    }
}

/// The summary as a Markdown table; counts, not valgrind's times, for a
/// simulation run.
#[derive(Debug, Clone, Copy, Default)]
pub struct MarkdownExporter;

impl Exporter for MarkdownExporter {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn export(&self, run: &Run, report: &RunReport) -> Result<String, ExportError> {
        Ok(if run.mode == Mode::Simulation {
            crate::simulation::render_simulation_markdown(run)
        } else {
            crate::markdown::render_markdown(run, report)
        })
    }
}

/// The summary as an AsciiDoc or Org-mode table (hyperfine's
/// `--export-asciidoc`, `--export-orgmode`).
#[derive(Debug, Clone, Copy)]
pub struct TableExporter(pub crate::TableDialect);

impl Exporter for TableExporter {
    fn name(&self) -> &'static str {
        match self.0 {
            crate::TableDialect::Markdown => "markdown",
            crate::TableDialect::AsciiDoc => "asciidoc",
            crate::TableDialect::OrgMode => "orgmode",
        }
    }

    fn export(&self, run: &Run, report: &RunReport) -> Result<String, ExportError> {
        Ok(crate::markdown::render_table(run, report, self.0))
    }
}

/// hyperfine's JSON shape, for hyperfine's scripts.
#[derive(Debug, Clone, Copy, Default)]
pub struct HyperfineExporter;

impl Exporter for HyperfineExporter {
    fn name(&self) -> &'static str {
        "hyperfine"
    }

    fn export(&self, run: &Run, _report: &RunReport) -> Result<String, ExportError> {
        let doc = crate::hyperfine::export_hyperfine(run);
        serde_json::to_string_pretty(&doc)
            .map(|mut s| {
                s.push('\n');
                s
            })
            .map_err(|e| ExportError {
                format: self.name(),
                message: e.to_string(),
            })
    }
}

/// The sampled stacks of the profiled benchmarks, folded (`--export-folded`).
#[derive(Debug, Clone, Copy, Default)]
pub struct FoldedExporter;

impl Exporter for FoldedExporter {
    fn name(&self) -> &'static str {
        "folded"
    }

    fn export(&self, run: &Run, _report: &RunReport) -> Result<String, ExportError> {
        if run.benchmarks.iter().all(|b| b.stacks.is_none()) {
            return Err(ExportError {
                format: self.name(),
                message: "no benchmark of the run has a profile (see the notes)".into(),
            });
        }
        Ok(crate::stacks::folded(run))
    }
}

/// The formats a run can be exported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExportFormat {
    /// [`JsonExporter`].
    Json,
    /// [`CsvExporter`].
    Csv,
    /// [`MarkdownExporter`].
    Markdown,
    /// [`TableExporter`] in AsciiDoc.
    AsciiDoc,
    /// [`TableExporter`] in Org mode.
    OrgMode,
    /// [`HyperfineExporter`].
    Hyperfine,
    /// [`FoldedExporter`].
    Folded,
}

impl ExportFormat {
    /// Every format, in the order the exports are written.
    pub const ALL: [ExportFormat; 7] = [
        ExportFormat::Json,
        ExportFormat::Csv,
        ExportFormat::Markdown,
        ExportFormat::AsciiDoc,
        ExportFormat::OrgMode,
        ExportFormat::Hyperfine,
        ExportFormat::Folded,
    ];

    /// The exporter that writes this format.
    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            ExportFormat::Json => &JsonExporter,
            ExportFormat::Csv => &CsvExporter,
            ExportFormat::Markdown => &MarkdownExporter,
            ExportFormat::AsciiDoc => &TableExporter(crate::TableDialect::AsciiDoc),
            ExportFormat::OrgMode => &TableExporter(crate::TableDialect::OrgMode),
            ExportFormat::Hyperfine => &HyperfineExporter,
            ExportFormat::Folded => &FoldedExporter,
        }
    }

    /// The format's short name ("json").
    pub fn name(self) -> &'static str {
        self.exporter().name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{bench, run};
    use perfsleuth_summary::analyze;

    #[test]
    fn each_format_wraps_its_renderer() {
        let r = run(vec![bench("a", &[10, 20, 30], 1024)]);
        let rep = analyze(&r, None);
        let json = JsonExporter.export(&r, &rep).unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
        let doc = serde_json::to_value(crate::json::export_json(&r, &rep)).unwrap();
        assert_eq!(parsed, doc);
        assert!(json.ends_with("}\n"));
        assert_eq!(
            CsvExporter.export(&r, &rep).unwrap(),
            crate::csv::export_csv(&r)
        );
        assert_eq!(
            MarkdownExporter.export(&r, &rep).unwrap(),
            crate::markdown::render_markdown(&r, &rep)
        );
    }

    #[test]
    fn markdown_of_a_simulation_shows_counts() {
        let mut r = run(vec![bench("a", &[10, 20], 0)]);
        r.mode = Mode::Simulation;
        let rep = analyze(&r, None);
        assert_eq!(
            MarkdownExporter.export(&r, &rep).unwrap(),
            crate::simulation::render_simulation_markdown(&r)
        );
    }

    #[test]
    fn formats_name_their_exporters() {
        let names: Vec<&str> = ExportFormat::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(
            names,
            [
                "json",
                "csv",
                "markdown",
                "asciidoc",
                "orgmode",
                "hyperfine",
                "folded"
            ]
        );
    }
}
