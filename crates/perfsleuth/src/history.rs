//! `perfsleuth runs` and `perfsleuth show`: reading the stored history.

use crate::cli::{RunsArgs, RunsMode, ShowArgs};
use crate::error::Fail;
use crate::output::{self, AnyStore, open_existing_store};
use crate::term::emit;
use perfsleuth_model::Mode;
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::schema::{Document, RunFilter, RunListing, RunsDoc, to_json_pretty};
use perfsleuth_report::{Align, Exporter, JsonExporter, column_widths, table_rows};
use perfsleuth_store::{LIST_PAGE, StoreError};
use perfsleuth_summary::analyze;

/// Lists stored runs, newest first, a page at a time: the first lines
/// come at once and memory stays flat however many runs are stored.
pub fn runs(args: RunsArgs) -> Result<i32, Fail> {
    let mut store = open_existing_store(args.store.store.as_deref())?;
    let filter = RunFilter {
        bench: args.bench.clone(),
        branch: args.branch.clone(),
        mode: args.mode.map(|m| match m {
            RunsMode::Walltime => Mode::Walltime,
            RunsMode::Simulation => Mode::Simulation,
            RunsMode::Probe => Mode::Probe,
        }),
        since: args.since.as_deref().map(since).transpose()?,
        machine: args.machine.clone(),
    };
    let filtered = !filter.is_empty();
    // A limit beyond the store lists it all (0 is refused by the parser).
    let mut left = args.limit.map_or(usize::MAX, |n| n as usize);
    let mut out = if args.json {
        Listing::json()?
    } else {
        Listing::Table { widths: None }
    };
    let mut before: Option<i64> = None;
    let mut reconnects = 0;
    while left > 0 && !crate::term::stdout_done() {
        // Filters apply before the limit: the newest N that pass them.
        let want = left.min(LIST_PAGE);
        let list = match store.list_runs_matching(&filter, before, want) {
            Ok(list) => list,
            // A page is one read and the next starts after the last run
            // listed: after a database restart the listing goes on from
            // there on a new connection, nothing missed, nothing twice.
            Err(lost @ StoreError::Lost { .. }) if reconnects < RECONNECTS => {
                reconnects += 1;
                store = reopen(args.store.store.as_deref(), lost, before)?;
                continue;
            }
            Err(e) => return Err(Fail::from(e)),
        };
        let done = list.len() < want;
        before = list.last().map(|r| r.id);
        left -= list.len();
        out.page(&list)?;
        if done {
            break;
        }
    }
    if out.finish()? {
        return Ok(0);
    }
    let text = if filtered {
        format!(
            "No stored run in {} matches the filters.\n",
            store.location().display()
        )
    } else {
        let mut text = format!("No runs stored in {} yet.\n", store.location().display());
        // A team server's store keeps its runs in projects: say where they are.
        let elsewhere: Vec<String> = store
            .projects()
            .unwrap_or_default()
            .into_iter()
            .filter(|p| p.runs > 0 && p.name != store.project())
            .map(|p| format!("{} ({} runs)", p.name, p.runs))
            .collect();
        if !elsewhere.is_empty() {
            text.push_str(&format!(
                "Its projects hold runs: {}; read one with PERFSLEUTH_STORE_PROJECT=NAME.\n",
                elsewhere.join(", ")
            ));
        }
        text
    };
    emit(&text, false);
    Ok(0)
}

/// How many times one listing connects again after losing its connection.
const RECONNECTS: u32 = 3;

/// Waits between attempts to connect again: about 8 s in all, what a
/// database server's restart takes.
const RECONNECT_WAITS_MS: [u64; 5] = [250, 500, 1000, 2000, 4000];

/// A new connection to the store after `lost`, said on stderr; `lost`
/// itself when none can be made.
fn reopen(url: Option<&str>, lost: StoreError, after: Option<i64>) -> Result<AnyStore, Fail> {
    for wait in RECONNECT_WAITS_MS {
        std::thread::sleep(std::time::Duration::from_millis(wait));
        if let Ok(store) = open_existing_store(url) {
            let from = after.map_or("the start".to_string(), |id| format!("run {id}"));
            eprintln!(
                "note: {}; connected again, the listing goes on after {from}",
                lost.to_string()
                    .split(" (hint: ")
                    .next()
                    .unwrap_or_default()
            );
            return Ok(store);
        }
    }
    Err(Fail::from(lost))
}

/// `runs`'s output while its pages arrive.
enum Listing {
    /// The `perfsleuth/runs` document, written a run at a time: the
    /// empty document cut where its runs go, and whether one is written.
    Json {
        head: String,
        tail: String,
        first: bool,
    },
    /// The table, whose columns keep the first page's widths.
    Table { widths: Option<Vec<usize>> },
}

impl Listing {
    /// The JSON listing: what `to_json_pretty` writes for the document,
    /// its runs one by one between the text before and after them.
    fn json() -> Result<Listing, Fail> {
        let empty = json_text(&RunsDoc {
            schema: RunsDoc::SCHEMA.to_string(),
            schema_version: RunsDoc::VERSION,
            runs: Vec::new(),
        })?;
        let slot = "\"runs\": []";
        let at = empty
            .find(slot)
            .ok_or_else(|| Fail::usage("cannot lay out the runs document", "please report this"))?;
        Ok(Listing::Json {
            head: format!("{}\"runs\": [\n", &empty[..at]),
            tail: format!("\n  ]{}", &empty[at + slot.len()..]),
            first: true,
        })
    }

    /// Writes one page of runs.
    fn page(&mut self, list: &[RunListing]) -> Result<(), Fail> {
        if list.is_empty() {
            return Ok(());
        }
        match self {
            Listing::Json { head, first, .. } => {
                let mut text = String::new();
                for r in list {
                    text.push_str(if *first { head } else { ",\n" });
                    *first = false;
                    let one = json_text(r)?;
                    // Indented as the document's `runs` array holds it.
                    let lines: Vec<String> =
                        one.trim_end().lines().map(|l| format!("    {l}")).collect();
                    text.push_str(&lines.join("\n"));
                }
                emit(&text, false);
            }
            Listing::Table { widths } => {
                let mut rows = Vec::with_capacity(list.len() + 1);
                if widths.is_none() {
                    rows.push(HEADER.map(String::from).to_vec());
                }
                rows.extend(list.iter().map(table_row));
                let w = widths.get_or_insert_with(|| column_widths(&rows));
                emit(&table_rows(&rows, w, |_| Align::Left), false);
            }
        }
        Ok(())
    }

    /// Ends the output; false when no run was written (nothing is, then).
    fn finish(self) -> Result<bool, Fail> {
        match self {
            Listing::Json { head, tail, first } => {
                // No run: the whole empty document, as it always was.
                let text = if first {
                    format!("{}{}", head.trim_end(), tail.trim_start())
                } else {
                    tail
                };
                emit(&text, false);
                Ok(true)
            }
            Listing::Table { widths } => Ok(widths.is_some()),
        }
    }
}

/// `value` as `to_json_pretty` writes it, or the usage error it never is.
fn json_text<T: serde::Serialize>(value: &T) -> Result<String, Fail> {
    to_json_pretty(value)
        .map_err(|e| Fail::usage(format!("cannot serialise JSON: {e}"), "please report this"))
}

/// The `runs` table's header.
const HEADER: [&str; 9] = [
    "ID",
    "STARTED",
    "STATUS",
    "MODE",
    "SAMPLES",
    "COMMIT",
    "ENV",
    "CPU",
    "BENCHMARKS",
];

/// One run's row of the `runs` table.
fn table_row(r: &RunListing) -> Vec<String> {
    let commit = r.git.as_ref().map_or(MISSING.to_string(), |g| {
        format!(
            "{}{}",
            perfsleuth_model::short_commit(&g.commit),
            if g.dirty { "+" } else { "" }
        )
    });
    let benches = match r.benchmarks.len() {
        // A probe run measured the machine, not commands: name its probes.
        0 if !r.probes.is_empty() => r.probes.join(", "),
        0 => MISSING.to_string(),
        1 => truncate(&r.benchmarks[0], NAME_WIDTH),
        n => format!(
            "{} (+{} more)",
            truncate(&r.benchmarks[0], NAME_WIDTH),
            n - 1
        ),
    };
    let samples = if r.mode == perfsleuth_model::Mode::Probe {
        MISSING.to_string()
    } else {
        r.samples.to_string()
    };
    vec![
        r.id.to_string(),
        started_text(&r.started_at),
        r.status.to_string(),
        r.mode.as_str().to_string(),
        samples,
        commit,
        r.comparability.clone(),
        r.cpu_model.clone().unwrap_or_else(|| MISSING.into()),
        benches,
    ]
}

/// The widest a benchmark name is shown in the `runs` table: a table is for
/// scanning; `show` and `--json` have the whole name.
const NAME_WIDTH: usize = 40;

/// `s` cut to `width` columns, with "…" where it was cut.
fn truncate(s: &str, width: usize) -> String {
    if perfsleuth_report::width(s) <= width {
        return s.to_string();
    }
    let mut out = String::new();
    for c in s.chars() {
        if perfsleuth_report::width(&out) + perfsleuth_report::width(&c.to_string()) > width - 1 {
            break;
        }
        out.push(c);
    }
    out.push('…');
    out
}

/// `--since`: a UTC date or time (`2026-11-30`, `2026-11-30T12:00:00Z`) or a
/// duration back from now with its unit (`2h`, `3d`), as the RFC 3339 text
/// runs are stored with (which sorts as it reads). Anything else is refused:
/// a bare `2026` would otherwise be 2026 seconds ago.
pub(crate) fn since(text: &str) -> Result<String, Fail> {
    let t = text.trim();
    let hint = "give a UTC date (2026-11-30, 2026-11-30T12:00:00Z) or a duration back from now with its unit (2h, 3d)";
    let bad = |why: &str| Fail::usage(format!("--since `{text}`: {why}"), hint);
    let digits = |s: &str, lo: u32, hi: u32| {
        s.len() >= 2
            && s.bytes().all(|b| b.is_ascii_digit())
            && s.parse::<u32>().is_ok_and(|v| (lo..=hi).contains(&v))
    };
    if t.len() >= 10 && t.as_bytes().get(4) == Some(&b'-') {
        let (date, rest) = t.split_at(10);
        let parts: Vec<&str> = date.split('-').collect();
        let ok_date = parts.len() == 3
            && parts[0].len() == 4
            && digits(parts[0], 1970, 9999)
            && digits(parts[1], 1, 12)
            && digits(parts[2], 1, 31);
        if !ok_date {
            return Err(bad("not a date (YYYY-MM-DD)"));
        }
        // The day must exist in its month: 2026-02-30 is no date.
        let (year, month, day): (u32, u32, u32) = (
            parts[0].parse().unwrap_or(0),
            parts[1].parse().unwrap_or(0),
            parts[2].parse().unwrap_or(0),
        );
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let days = match month {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        if day > days {
            return Err(bad(&format!("month {month} of {year} has {days} days")));
        }
        let time = rest.trim_start_matches(['T', ' ']).trim_end_matches('Z');
        if rest.is_empty() {
            return Ok(date.to_string());
        }
        let hms: Vec<&str> = time.split(':').collect();
        let ok_time = (2..=3).contains(&hms.len())
            && digits(hms[0], 0, 23)
            && digits(hms[1], 0, 59)
            && hms.get(2).is_none_or(|s| digits(s, 0, 60));
        if !ok_time {
            return Err(bad(
                "not a UTC time (THH:MM[:SS][Z]; runs are stored in UTC, so give no offset)",
            ));
        }
        return Ok(format!("{date}T{}", hms.join(":")));
    }
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(bad("a number without a unit"));
    }
    let ago = crate::parse::duration(t).map_err(|e| bad(&e))?;
    let then = std::time::SystemTime::now()
        .checked_sub(ago)
        .unwrap_or(std::time::UNIX_EPOCH);
    Ok(perfsleuth_model::rfc3339(then))
}

/// Prints one stored run like `perfsleuth run` printed it.
/// A stored start time (RFC 3339) as `runs` and `show` print it, to the
/// second: "2026-12-05 00:12:33".
fn started_text(rfc3339: &str) -> String {
    let t = rfc3339.replace('T', " ");
    t.get(..19).unwrap_or(&t).to_string()
}

/// Which stored run `show` shows: its id, when it started, where in git
/// and how it was measured ("Run 12 · 2026-12-05 00:12:33 · main @
/// 3f2a9c01b7de · walltime · complete").
fn run_line(run: &perfsleuth_model::Run) -> String {
    let started = started_text(&run.started_at);
    let git = run.git.as_ref().map_or("no git".to_string(), |g| {
        format!(
            "{}{}{}",
            g.branch
                .as_deref()
                .map_or(String::new(), |b| format!("{b} @ ")),
            perfsleuth_model::short_commit(&g.commit),
            if g.dirty {
                " (uncommitted changes)"
            } else {
                ""
            }
        )
    });
    format!(
        "Run {} · {started} · {git} · {} · {}",
        run.id.map_or(MISSING.to_string(), |id| id.to_string()),
        run.mode.as_str(),
        run.status.as_str()
    )
}

pub fn show(args: ShowArgs) -> Result<i32, Fail> {
    let store = open_existing_store(args.store.store.as_deref())?;
    let id = store.resolve_run(&args.run).map_err(Fail::from)?;
    let run = store.load_run(id).map_err(Fail::from)?.ok_or_else(|| {
        Fail::usage(
            format!("run {id} not found in {}", store.location().display()),
            "list the stored runs with `perfsleuth runs`",
        )
    })?;
    let reference = output::resolve_reference(
        args.reference.as_deref(),
        run.benchmarks.iter().map(|b| b.name.as_str()),
    )?;
    // On stderr: stdout stays the summary `run` printed, byte for byte.
    if !args.json {
        emit(&format!("{}\n\n", run_line(&run)), true);
    }
    if args.json {
        let text = JsonExporter
            .export(&run, &analyze(&run, reference))
            .map_err(|e| Fail::usage(e.to_string(), "please report this"))?;
        emit(&text, false);
    } else if run.mode == perfsleuth_model::Mode::Probe {
        // Probe results, not a wall-time summary of benchmarks it does not have.
        crate::probe::print_stored(&run, args.all, args.color);
    } else if let Some(analysis) = perfsleuth_scale::analysis_of(&run) {
        // A sweep reads as its table; per-level wall-time blocks would bury it.
        let what = run.benchmarks.first().map_or("", |b| b.name.as_str());
        emit(
            &format!(
                "Scale sweep `{what}` over {} ({}, {} level{}):\n\n",
                analysis.parameter,
                run.status.as_str(),
                analysis.points.len(),
                if analysis.points.len() == 1 { "" } else { "s" }
            ),
            false,
        );
        emit(
            &perfsleuth_scale::render_terminal(
                &analysis,
                crate::term::use_color(args.color, false),
            ),
            false,
        );
    } else {
        output::print_summary(&run, reference, &output::View::plain(args.color), false);
    }
    Ok(0)
}
