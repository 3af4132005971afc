//! Series measured elsewhere, for `perfsleuth history fit FILE.csv`: a
//! header row, then one row per point; columns whose cells are numbers are
//! series, the others labels (a commit, a date). Otava's CSV files read as
//! they are.

/// A line of the file that could not be used.
pub use perfsleuth_model::input::LineError as CsvError;
use perfsleuth_model::input::{csv_cells as cells, csv_number, csv_separator};

/// The series of a CSV file.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvSeries {
    /// Each row's label (the `commit` column, else the first text column).
    pub labels: Option<Vec<String>>,
    /// Value columns by name, in file order.
    pub columns: Vec<(String, Vec<f64>)>,
}

/// Reads the file's text; `only` keeps one value column by name.
pub fn read_csv(text: &str, only: Option<&str>) -> Result<CsvSeries, CsvError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let Some((_, header)) = lines.next() else {
        return Err(CsvError {
            line: 0,
            message: "the file is empty".into(),
        });
    };
    let mut lines = lines.peekable();
    let sep = csv_separator(header, lines.peek().map(|(_, l)| *l), ',');
    let names = cells(header, sep);
    if names.iter().all(|n| csv_number(n, sep).is_some()) {
        return Err(CsvError {
            line: 1,
            message:
                "the first row holds numbers: history fit needs a header row naming the columns"
                    .into(),
        });
    }
    let rows: Vec<(usize, Vec<String>)> = lines.map(|(n, l)| (n, cells(l, sep))).collect();
    for (n, r) in &rows {
        if r.len() != names.len() {
            return Err(CsvError {
                line: *n,
                message: format!("{} cells, the header has {}", r.len(), names.len()),
            });
        }
    }
    if rows.is_empty() {
        return Err(CsvError {
            line: 0,
            message: "no rows after the header".into(),
        });
    }
    // A column is numeric when most of its cells are numbers; then every
    // cell must be one (a text cell there is a mistake to name, not a label).
    let numeric: Vec<bool> = (0..names.len())
        .map(|c| {
            let ok = rows
                .iter()
                .filter(|(_, r)| csv_number(&r[c], sep).is_some())
                .count();
            ok * 2 > rows.len()
        })
        .collect();
    let mut columns = Vec::new();
    for (c, name) in names.iter().enumerate() {
        if !numeric[c] || only.is_some_and(|o| o != name) {
            continue;
        }
        let mut values = Vec::with_capacity(rows.len());
        for (n, r) in &rows {
            let cell = &r[c];
            let v = csv_number(cell, sep).filter(|v| v.is_finite());
            let Some(v) = v else {
                let what = if cell.is_empty() {
                    "is missing".to_string()
                } else {
                    format!("is {cell:?}, not a finite number")
                };
                return Err(CsvError {
                    line: *n,
                    message: format!(
                        "`{name}` {what}: every row needs a value (leave the row out, or fill it as you see fit)"
                    ),
                });
            };
            values.push(v);
        }
        columns.push((name.clone(), values));
    }
    if let Some(o) = only
        && columns.is_empty()
    {
        let numeric_names: Vec<&str> = names
            .iter()
            .zip(&numeric)
            .filter(|(_, n)| **n)
            .map(|(s, _)| s.as_str())
            .collect();
        return Err(CsvError {
            line: 0,
            message: format!(
                "no numeric column `{o}` (numeric columns: {})",
                if numeric_names.is_empty() {
                    "none".to_string()
                } else {
                    numeric_names.join(", ")
                }
            ),
        });
    }
    if columns.is_empty() {
        return Err(CsvError {
            line: 0,
            message: "no column of numbers: history fit needs at least one value column".into(),
        });
    }
    let label_col = names
        .iter()
        .position(|n| n.eq_ignore_ascii_case("commit"))
        .filter(|c| !numeric[*c])
        .or_else(|| numeric.iter().position(|n| !n));
    let labels = label_col.map(|c| rows.iter().map(|(_, r)| r[c].clone()).collect());
    Ok(CsvSeries { labels, columns })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OTAVA: &str = "time,commit,metric1,metric2
2026.01.01 3:00:00 +0100,aaa0,154023,10.43
2026.01.02 3:00:00 +0100,aaa1,138455,10.23
";

    #[test]
    fn labels_and_columns() {
        let s = read_csv(OTAVA, None).unwrap();
        assert_eq!(
            s.labels.as_deref(),
            Some(&["aaa0".to_string(), "aaa1".to_string()][..])
        );
        assert_eq!(s.columns[0].0, "metric1");
        assert_eq!(s.columns[1].1, [10.43, 10.23]);
        let one = read_csv(OTAVA, Some("metric2")).unwrap();
        assert_eq!(one.columns.len(), 1);
        let e = read_csv(OTAVA, Some("metric3")).unwrap_err();
        assert!(e.message.contains("metric1, metric2"), "{e}");
    }

    #[test]
    fn quoted_cells_and_a_single_value_column() {
        let s = read_csv("label,v\n\"a, b\",1\n\"c\"\"d\",2\n", None).unwrap();
        assert_eq!(s.labels.unwrap(), ["a, b", "c\"d"]);
        let s = read_csv("v\n1\n2\n", None).unwrap();
        assert!(s.labels.is_none());
        assert_eq!(s.columns[0].1, [1.0, 2.0]);
    }

    #[test]
    fn control_characters_in_names_and_labels_never_reach_the_terminal() {
        let s = read_csv("label,\u{1b}]0;owned\u{7}v\na\u{1b}[2J,1\nb,2\n", None).unwrap();
        assert_eq!(s.columns[0].0, "\u{FFFD}]0;owned\u{FFFD}v");
        assert_eq!(s.labels.unwrap()[0], "a\u{FFFD}[2J");
    }

    #[test]
    fn bad_files_are_named_by_line() {
        let e = read_csv("", None).unwrap_err();
        assert_eq!(e.line, 0);
        let e = read_csv("a,b\n1,2\n3,x\n4,5\n", None).unwrap_err();
        assert_eq!((e.line, e.message.contains("\"x\"")), (3, true), "{e}");
        let e = read_csv("a,b\n1,2\n3,NaN\n4,5\n", None).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        let e = read_csv("a,b\n1,2\n3,\n4,5\n", None).unwrap_err();
        assert!(e.message.contains("missing"), "{e}");
        let e = read_csv("name\nx\ny\n", None).unwrap_err();
        assert!(e.message.contains("no column of numbers"), "{e}");
        let e = read_csv("1,2\n3,4\n", None).unwrap_err();
        assert!(e.message.contains("header"), "{e}");
        let e = read_csv("a,b\n1\n", None).unwrap_err();
        assert_eq!(e.line, 2);
    }
}
