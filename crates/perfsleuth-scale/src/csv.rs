//! Measurements made elsewhere, for `perfsleuth scale fit FILE.csv`: two
//! columns, concurrency and throughput (named `N`/`X`, or the first two
//! numeric columns when there is no header). Repeated N are repeated runs.

use crate::{Observation, RunObservation};
use std::collections::HashMap;
use std::collections::hash_map::Entry;

/// A line of the file that could not be used.
pub use perfsleuth_model::input::LineError as CsvError;
use perfsleuth_model::input::{csv_cells, csv_number, csv_separator};

const N_NAMES: [&str; 6] = ["n", "concurrency", "threads", "clients", "load", "size"];
const X_NAMES: [&str; 4] = ["x", "throughput", "tput", "rate"];

/// Parses the CSV text into observations, one per distinct N.
pub fn read_csv(text: &str) -> Result<Vec<Observation>, CsvError> {
    let mut columns: Option<(usize, usize)> = None;
    let mut obs: Vec<Observation> = Vec::new();
    // Index of each N's observation: a search through `obs` per row made
    // 100 000 levels take minutes.
    let mut level: HashMap<u64, usize> = HashMap::new();
    let mut rows = 0;
    // Spreadsheets write a byte-order mark before the header.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut content = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    let sep = match content.next() {
        Some(first) => csv_separator(first, content.next(), ' '),
        None => ' ',
    };
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let owned = csv_cells(line, sep);
        let cells: Vec<&str> = owned.iter().map(String::as_str).collect();
        let number = |s: &str| csv_number(s, sep).ok_or(());
        // With the decimal comma too: `1;2,5` is a data row, not a header.
        if columns.is_none() && cells.iter().any(|c| number(c).is_err()) {
            columns = Some(header(&cells).ok_or_else(|| CsvError {
                line: line_no,
                message: format!("no concurrency and throughput columns in the header {line:?}"),
            })?);
            continue;
        }
        let (nc, xc) = *columns.get_or_insert((0, 1));
        let cell = |c: usize, what: &str| -> Result<f64, CsvError> {
            let s = cells.get(c).ok_or_else(|| CsvError {
                line: line_no,
                message: format!("missing the {what} column"),
            })?;
            number(s).map_err(|_| CsvError {
                line: line_no,
                message: format!("{what} {s:?} is not a number"),
            })
        };
        let n = cell(nc, "concurrency")?;
        let x = cell(xc, "throughput")?;
        if !n.is_finite() || !x.is_finite() {
            return Err(CsvError {
                line: line_no,
                message: "values must be finite numbers".into(),
            });
        }
        if n <= 0.0 {
            return Err(CsvError {
                line: line_no,
                message: format!("concurrency must be positive, got {n}"),
            });
        }
        if x <= 0.0 {
            return Err(CsvError {
                line: line_no,
                message: format!("throughput must be positive, got {x}"),
            });
        }
        let run = RunObservation {
            throughput: x,
            ..Default::default()
        };
        // N is finite and positive here, so its bits identify it.
        match level.entry(n.to_bits()) {
            Entry::Occupied(i) => obs[*i.get()].runs.push(run),
            Entry::Vacant(slot) => {
                slot.insert(obs.len());
                obs.push(Observation {
                    n,
                    runs: vec![run],
                    locks: None,
                });
            }
        }
        rows += 1;
    }
    if rows == 0 {
        return Err(CsvError {
            line: 0,
            message: "no data rows (expected columns N,X)".into(),
        });
    }
    obs.sort_by(|a, b| a.n.total_cmp(&b.n));
    Ok(obs)
}

fn header(cells: &[&str]) -> Option<(usize, usize)> {
    let find = |names: &[&str]| {
        cells
            .iter()
            .position(|c| names.contains(&c.to_ascii_lowercase().as_str()))
    };
    Some((find(&N_NAMES)?, find(&X_NAMES)?))
}
