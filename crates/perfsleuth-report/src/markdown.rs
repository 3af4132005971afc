//! The summary table (`--export-markdown`, `--export-asciidoc`, `--export-orgmode`).

use crate::RunReport;
use crate::format::{ByteUnit, TimeUnit, ratio_decimals};
use crate::terminal::status_notice;
use perfsleuth_model::Run;
use perfsleuth_model::quantity::MISSING;
use std::fmt::Write as _;

/// The syntaxes the summary table is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableDialect {
    /// GitHub-flavoured Markdown (`--export-markdown`).
    Markdown,
    /// AsciiDoc (`--export-asciidoc`).
    AsciiDoc,
    /// Emacs Org mode (`--export-orgmode`).
    OrgMode,
}

/// Markdown summary table (GitHub-flavoured), for `--export-markdown`.
pub fn render_markdown(run: &Run, report: &RunReport) -> String {
    render_table(run, report, TableDialect::Markdown)
}

/// The summary table in `dialect`.
///
/// Times and memory each use one unit for the whole table (the one that
/// suits the reference's median, or the report's `time_unit`), so a column
/// can be read top to bottom. "Relative" is the median-time ratio to the
/// reference, with the larger distance from the ratio to a bound of its 95%
/// bootstrap CI after "±", so `ratio ± value` always covers the interval.
/// Rows follow the report's order.
pub fn render_table(run: &Run, report: &RunReport, dialect: TableDialect) -> String {
    let mut out = String::new();
    if let Some(notice) = status_notice(run) {
        let _ = match dialect {
            TableDialect::Markdown => writeln!(out, "*{notice}*\n"),
            TableDialect::AsciiDoc => writeln!(out, "_{notice}_\n"),
            TableDialect::OrgMode => writeln!(out, "/{notice}/\n"),
        };
    }
    // Units follow the reference (as hyperfine follows the first command),
    // since every other row is read relative to it.
    let reference = report
        .benchmarks
        .get(report.reference)
        .filter(|b| b.wall.is_some())
        .or_else(|| report.benchmarks.iter().find(|b| b.wall.is_some()));
    let time_unit = report.time_unit.unwrap_or_else(|| {
        reference
            .and_then(|b| b.wall.as_ref())
            .map_or(TimeUnit::Ms, |s| TimeUnit::for_ns(s.median))
    });
    let rss_unit = reference
        .and_then(|b| b.peak_rss.as_ref())
        .filter(|s| s.max > 0.0)
        .map_or(ByteUnit::MiB, |s| ByteUnit::for_bytes(s.median));
    let (t, m) = (time_unit.symbol(), rss_unit.symbol());
    let header = [
        "Command".to_string(),
        format!("Median [{t}]"),
        format!("Mean [{t}]"),
        format!("Min [{t}]"),
        format!("Max [{t}]"),
        format!("Peak RSS [{m}]"),
        "Relative".to_string(),
    ];
    let mut rows = Vec::new();
    for &i in &report.order {
        let Some(b) = report.benchmarks.get(i) else {
            continue;
        };
        let name = match dialect {
            TableDialect::Markdown => code_span(&b.name),
            TableDialect::AsciiDoc => format!("`{}`", b.name.replace('|', "\\|")),
            TableDialect::OrgMode => format!("={}=", b.name.replace('|', "\\vert{}")),
        };
        let Some(wall) = &b.wall else {
            let mut row = vec![name, "no samples".to_string()];
            row.extend(std::iter::repeat_n(MISSING.to_string(), 5));
            rows.push(row);
            continue;
        };
        let rss = b
            .peak_rss
            .as_ref()
            .filter(|s| s.max > 0.0)
            .map_or_else(|| MISSING.to_string(), |s| rss_unit.number(s.median));
        let relative = if i == report.reference {
            "1.00".to_string()
        } else {
            report
                .comparisons
                .iter()
                .find(|c| c.index == i)
                .and_then(|c| c.time.as_ref())
                .map_or_else(
                    || MISSING.to_string(),
                    |e| {
                        let half = (e.ratio - e.ci.lo).max(e.ci.hi - e.ratio).max(0.0);
                        let d = ratio_decimals(e.ratio);
                        format!("{:.d$} ± {:.d$}", e.ratio, half)
                    },
                )
        };
        rows.push(vec![
            name,
            time_unit.number(wall.median),
            format!(
                "{} ± {}",
                time_unit.number(wall.mean),
                time_unit.number(wall.stddev)
            ),
            time_unit.number(wall.min),
            time_unit.number(wall.max),
            rss,
            relative,
        ]);
    }
    match dialect {
        TableDialect::Markdown => {
            let _ = writeln!(out, "| {} |", header.join(" | "));
            out.push_str("|:---|---:|---:|---:|---:|---:|---:|\n");
            for row in &rows {
                let _ = writeln!(out, "| {} |", row.join(" | "));
            }
        }
        TableDialect::AsciiDoc => {
            out.push_str("[cols=\"<,>,>,>,>,>,>\"]\n|===\n");
            let _ = writeln!(out, "| {}", header.join(" | "));
            for row in &rows {
                let _ = writeln!(out, "\n| {}", row.join(" | "));
            }
            out.push_str("|===\n");
        }
        TableDialect::OrgMode => {
            let _ = writeln!(out, "| {} |", header.join(" | "));
            out.push_str("|--+--+--+--+--+--+--|\n");
            for row in &rows {
                let _ = writeln!(out, "| {} |", row.join(" | "));
            }
        }
    }
    out
}

/// `s` as an inline code span that survives a GFM table cell: pipes are
/// escaped (the table parser splits on them even inside code), newlines
/// become spaces, and the fence is longer than any backtick run inside.
fn code_span(s: &str) -> String {
    if s.is_empty() {
        return String::new();
    }
    let s = s.replace(['\n', '\r'], " ").replace('|', "\\|");
    let mut longest = 0;
    let mut current = 0;
    for c in s.chars() {
        current = if c == '`' { current + 1 } else { 0 };
        longest = longest.max(current);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use perfsleuth_summary::analyze;

    #[test]
    fn asciidoc_and_orgmode_tables_follow_the_sort_and_the_unit() {
        let r = run(vec![
            bench("slow", &spread(20, 12_000_000, 100_000), 8 << 20),
            bench("fast", &spread(20, 10_000_000, 100_000), 8 << 20),
        ]);
        let mut report = analyze(&r, None);
        report.sort(crate::SortOrder::MeanTime);
        report.time_unit = Some(TimeUnit::S);
        let adoc = render_table(&r, &report, TableDialect::AsciiDoc);
        assert_eq!(
            adoc,
            "[cols=\"<,>,>,>,>,>,>\"]\n|===\n\
             | Command | Median [s] | Mean [s] | Min [s] | Max [s] | Peak RSS [MiB] | Relative\n\
             \n| `fast` | 0.010 | 0.010 ± 0.000 | 0.010 | 0.010 | 8.0 | 0.83 ± 0.00\n\
             \n| `slow` | 0.012 | 0.012 ± 0.000 | 0.012 | 0.012 | 8.0 | 1.00\n|===\n"
        );
        let org = render_table(&r, &report, TableDialect::OrgMode);
        let lines: Vec<&str> = org.lines().collect();
        assert_eq!(lines[1], "|--+--+--+--+--+--+--|");
        assert!(lines[2].starts_with("| =fast= | 0.010 |"), "{org}");
        assert!(lines[3].starts_with("| =slow= | 0.012 |"), "{org}");
    }

    #[test]
    fn table_is_exact() {
        let r = run(vec![
            bench(
                "./janet-x64 words.janet",
                &spread(20, 10_000_000, 100_000),
                8 << 20,
            ),
            bench(
                "./janet-x32 words.janet",
                &spread(20, 12_000_000, 100_000),
                6 << 20,
            ),
            bench("never ran", &[], 0),
        ]);
        let text = render_markdown(&r, &analyze(&r, None));
        let expected = "\
| Command | Median [ms] | Mean [ms] | Min [ms] | Max [ms] | Peak RSS [MiB] | Relative |
|:---|---:|---:|---:|---:|---:|---:|
| `./janet-x64 words.janet` | 10.000 | 10.000 ± 0.062 | 9.900 | 10.100 | 8.0 | 1.00 |
| `./janet-x32 words.janet` | 12.000 | 12.000 ± 0.062 | 11.900 | 12.100 | 6.0 | 1.20 ± 0.00 |
| `never ran` | no samples | – | – | – | – | – |
";
        assert_eq!(text, expected);
    }

    #[test]
    fn units_are_chosen_once_per_table() {
        let r = run(vec![
            bench("fast", &[50_000; 3], 900),
            bench("slow", &[2_000_000_000; 3], 3 << 30),
        ]);
        let text = render_markdown(&r, &analyze(&r, Some(1)));
        assert!(text.starts_with(
            "| Command | Median [s] | Mean [s] | Min [s] | Max [s] | Peak RSS [GiB] |"
        ));
        // A ratio far below 1 keeps two significant digits.
        assert!(
            text.contains(
                "| `fast` | 0.000 | 0.000 ± 0.000 | 0.000 | 0.000 | 0.0 | 0.000025 ± 0.000000 |"
            ),
            "{text}"
        );
        assert!(text.contains("| `slow` | 2.000 | 2.000 ± 0.000 | 2.000 | 2.000 | 3.0 | 1.00 |"));
        let text = render_markdown(&r, &analyze(&r, None));
        assert!(text.starts_with("| Command | Median [µs] |"), "{text}");
        assert!(text.contains("| `slow` | 2000000.0 |"));
        assert!(text.contains("| 3221225472 | 40000.00 ± 0.00 |"), "{text}");
    }

    #[test]
    fn awkward_names_stay_inside_their_cell() {
        assert_eq!(code_span("a|b"), "`a\\|b`");
        assert_eq!(code_span("echo `date`"), "`` echo `date` ``");
        assert_eq!(code_span("x``y"), "```x``y```");
        assert_eq!(code_span("line\nbreak"), "`line break`");
        let mut r = run(vec![]);
        r.status = perfsleuth_model::RunStatus::Interrupted;
        let text = render_markdown(&r, &analyze(&r, None));
        assert!(text.starts_with(
            "*Run 12 was interrupted: summary of the 0 samples taken.*\n\n| Command |"
        ));
    }
}
