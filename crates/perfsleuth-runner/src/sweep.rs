//! The measuring loop of `perfsleuth scale`: every level of one parameter,
//! in rounds that start one level later each time, with the throughput read
//! from each run and the machine's CPU time sampled around it.

use crate::check::check;
use crate::error::Role;
use crate::error::{RunError, Stop};
use crate::schedule::Planned;
use crate::spawn::Spawn;
use crate::{Progress, Sink};
use perfsleuth_measure::{CommandId, CpuTimes, IoConfig, Tolerate};
use perfsleuth_model::scale_keys::{CPU_BUSY_PREFIX, CPU_KEYS, CPU_TICKS, THROUGHPUT, WORK};
use perfsleuth_model::schema::ThroughputMethod;
use perfsleuth_model::{Benchmark, Environment, Sample};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How throughput is obtained from a run.
#[derive(Debug, Clone)]
pub enum Throughput {
    /// Fixed total work per run.
    Work(f64),
    /// Work per thread: total = units × N.
    WorkPerThread(f64),
    /// First capture group of the last matching stdout line (and the pattern as given).
    Regex(regex_lite::Regex, String),
    /// A field of a JSON line on stdout.
    Json(String),
}

impl Throughput {
    /// Whether the command's stdout must be captured.
    pub fn reads_stdout(&self) -> bool {
        matches!(self, Throughput::Regex(..) | Throughput::Json(_))
    }

    /// The method as stored in the run's options.
    pub fn describe(&self) -> ThroughputMethod {
        match self {
            Throughput::Work(w) => ThroughputMethod::Work(*w),
            Throughput::WorkPerThread(w) => ThroughputMethod::WorkPerThread(*w),
            Throughput::Regex(_, src) => ThroughputMethod::Regex(src.clone()),
            Throughput::Json(f) => ThroughputMethod::JsonField(f.clone()),
        }
    }
}

/// One concurrency level being measured.
#[derive(Debug)]
pub struct Level {
    /// The value as given, e.g. `4`.
    pub text: String,
    /// The value as a number.
    pub n: f64,
    /// What it runs.
    pub plan: Planned,
    id: CommandId,
    samples: Vec<Sample>,
    facts: Environment,
}

impl Level {
    /// Its command's handle in the spawner (lock tracing attributes runs by it).
    pub fn id(&self) -> CommandId {
        self.id
    }

    /// The timed samples so far.
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    /// The level as a benchmark of the model (its parameters are the swept
    /// one's value), with or without its samples.
    pub fn to_benchmark(&self, with_samples: bool) -> Benchmark {
        let samples: &[Sample] = if with_samples { &self.samples } else { &[] };
        self.plan.to_benchmark(&self.facts, samples, None)
    }
}

/// Prepares one command per level (`planned` and `values` pair up).
pub fn prepare_levels(
    spawner: &mut impl Spawn,
    planned: Vec<Planned>,
    values: &[(String, f64)],
    io: &IoConfig,
    shell: bool,
) -> Result<Vec<Level>, RunError> {
    let mut binaries: HashMap<PathBuf, Environment> = HashMap::new();
    planned
        .into_iter()
        .zip(values)
        .map(|(p, (text, n))| {
            let id = spawner
                .prepare(&p.argv, io)
                .map_err(|source| RunError::Measure {
                    what: "command".into(),
                    source,
                })?;
            let facts = match p.program(shell) {
                Some(path) => binaries
                    .entry(path.clone())
                    .or_insert_with(|| perfsleuth_env::binary_facts(&path))
                    .clone(),
                None => Environment::default(),
            };
            Ok(Level {
                text: text.clone(),
                n: *n,
                plan: p,
                id,
                samples: Vec::new(),
                facts,
            })
        })
        .collect()
}

/// The sweep's settings.
#[derive(Debug, Clone, Copy)]
pub struct Sweep<'a> {
    /// How throughput is read.
    pub method: &'a Throughput,
    /// The parameter swept, e.g. `threads`.
    pub param: &'a str,
    /// Where the command's stdout is captured (when the method reads it).
    pub stdout: &'a Path,
    /// Untimed rounds first.
    pub warmup: u32,
    /// Timed rounds.
    pub runs: u32,
}

impl Sweep<'_> {
    /// Warmup rounds, then timed rounds; each round visits every level,
    /// starting one level later than the round before, so slow drift
    /// (thermal, other tenants) spreads over all levels instead of biasing
    /// the last ones. Every timed sample goes to `sink` as it is measured.
    pub fn measure(
        &self,
        spawner: &mut impl Spawn,
        sink: &mut impl Sink,
        levels: &mut [Level],
    ) -> Result<(), Stop> {
        let k = levels.len();
        let mut state = State {
            started: Instant::now(),
            total_runs: (u64::from(self.runs) + u64::from(self.warmup)) * k as u64,
            done_runs: 0,
        };
        for round in 0..self.warmup.saturating_add(self.runs) {
            for j in 0..k {
                let i = (j + round as usize) % k;
                let timed = round >= self.warmup;
                let iteration = if timed { round - self.warmup } else { round };
                self.one(
                    spawner,
                    sink,
                    &mut state,
                    i,
                    &mut levels[i],
                    iteration,
                    timed,
                )?;
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn one(
        &self,
        spawner: &mut impl Spawn,
        sink: &mut impl Sink,
        state: &mut State,
        index: usize,
        l: &mut Level,
        iteration: u32,
        timed: bool,
    ) -> Result<(), Stop> {
        state.show(sink, self.param, l, timed);
        if self.method.reads_stdout() {
            std::fs::File::create(self.stdout).map_err(|source| RunError::Scratch {
                what: "cannot reset the capture file",
                path: self.stdout.to_path_buf(),
                source,
            })?;
        }
        let before = CpuTimes::read().ok();
        if timed {
            spawner.note_timed(iteration);
        }
        let outcome = spawner
            .run_once(l.id, iteration)
            .map_err(|source| RunError::Measure {
                what: "command".into(),
                source,
            })?;
        let after = CpuTimes::read().ok();
        let label = || format!("command `{}` ({}={})", l.plan.command, self.param, l.text);
        let role = if timed { Role::Timed } else { Role::Untimed };
        let mut sample = check(&Tolerate::Nothing, spawner, l.id, label, role, outcome)?;
        state.done_runs += 1;
        let wall_s = sample.wall_ns as f64 / 1e9;
        let x = self.throughput(l, wall_s)?;
        if !timed {
            return Ok(());
        }
        sample.iteration = iteration;
        sample.counters.insert(THROUGHPUT.into(), x);
        sample.counters.insert(WORK.into(), x * wall_s);
        if let Some(usage) = before.zip(after).and_then(|(b, a)| b.usage_until(&a)) {
            sample.counters.insert(CPU_TICKS.into(), usage.ticks as f64);
            let t = usage.total;
            for (key, v) in CPU_KEYS
                .iter()
                .zip([t.user, t.system, t.idle, t.iowait, t.steal])
            {
                sample.counters.insert((*key).into(), v);
            }
            for (cpu, shares) in usage.per_cpu {
                sample
                    .counters
                    .insert(format!("{CPU_BUSY_PREFIX}{cpu}"), shares.busy());
            }
        }
        sink.sample(index, &sample).map_err(RunError::Sink)?;
        l.samples.push(sample);
        Ok(())
    }

    /// Throughput of the run just finished, or why it cannot be had.
    fn throughput(&self, l: &Level, wall_s: f64) -> Result<f64, RunError> {
        let at = || format!("{}={}", self.param, l.text);
        let x = match self.method {
            Throughput::Work(w) => w / wall_s,
            Throughput::WorkPerThread(w) => w * l.n / wall_s,
            Throughput::Regex(re, src) => last_value(self.stdout, |line| regex_value(re, line))?
                .map_err(|excerpt| RunError::NoThroughput {
                    message: format!(
                        "--throughput-regex '{src}' matched no number in the output at {}",
                        at()
                    ),
                    expected: "check the pattern against the program's output; the first capture group must be a number",
                    excerpt,
                })?,
            Throughput::Json(field) => last_value(self.stdout, |line| json_value(field, line))?
                .map_err(|excerpt| RunError::NoThroughput {
                    message: format!(
                        "no JSON line with a numeric field `{field}` in the output at {}",
                        at()
                    ),
                    expected: "the program must print one JSON object per line, e.g. {\"ops_per_sec\": 12345}",
                    excerpt,
                })?,
        };
        if !(x.is_finite() && x > 0.0) {
            return Err(RunError::BadThroughput { at: at(), value: x });
        }
        Ok(x)
    }
}

/// Progress of the sweep.
struct State {
    started: Instant,
    total_runs: u64,
    done_runs: u64,
}

impl State {
    fn show(&self, sink: &mut impl Sink, param: &str, l: &Level, timed: bool) {
        let elapsed = self.started.elapsed();
        let fraction = self.done_runs as f64 / self.total_runs.max(1) as f64;
        let eta = if self.done_runs == 0 {
            Duration::ZERO
        } else {
            elapsed.mul_f64((1.0 - fraction) / fraction.max(1e-9))
        };
        let phase = format!(
            "{} {param}={}",
            if timed { "Measuring" } else { "Warming up" },
            l.text
        );
        sink.progress(&Progress {
            phase: &phase,
            fraction,
            runs: self.done_runs,
            elapsed,
            eta,
            per_benchmark: &[],
        });
    }
}

/// Longest output line looked at; longer ones are skipped, so memory stays
/// bounded whatever the program prints.
const MAX_LINE: usize = 1 << 20;

/// Calls `visit` on each line of the file at `path`, last line first, until
/// it returns true. The file is read backwards in blocks: the last matching
/// line of 500 MB of output is found without reading it all, in memory
/// bounded by [`MAX_LINE`].
fn rev_lines(path: &Path, mut visit: impl FnMut(&str) -> bool) -> Result<(), RunError> {
    use std::io::{Read, Seek, SeekFrom};
    let fail = |source| RunError::Scratch {
        what: "cannot read the command's output from",
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(fail)?;
    let mut pos = file.seek(SeekFrom::End(0)).map_err(fail)?;
    let mut block = vec![0u8; 64 * 1024];
    // The end of the line being assembled (bytes after the newline last seen).
    let mut carry: Vec<u8> = Vec::new();
    let mut overlong = false;
    let mut emit = |line: &[u8], overlong: bool| -> bool {
        !overlong && line.len() <= MAX_LINE && visit(&String::from_utf8_lossy(line))
    };
    while pos > 0 {
        let n = pos.min(block.len() as u64) as usize;
        pos -= n as u64;
        file.seek(SeekFrom::Start(pos)).map_err(fail)?;
        file.read_exact(&mut block[..n]).map_err(fail)?;
        let mut end = n;
        while let Some(i) = block[..end].iter().rposition(|&b| b == b'\n') {
            let mut line = block[i + 1..end].to_vec();
            line.extend_from_slice(&carry);
            if emit(&line, overlong) {
                return Ok(());
            }
            carry.clear();
            overlong = false;
            end = i;
        }
        if !overlong {
            if end + carry.len() > MAX_LINE {
                overlong = true;
                carry.clear();
            } else {
                let mut joined = block[..end].to_vec();
                joined.extend_from_slice(&carry);
                carry = joined;
            }
        }
    }
    emit(&carry, overlong);
    Ok(())
}

/// The number in the last output line `value` finds one in, and, when
/// none does, the last lines for the error.
fn last_value(
    path: &Path,
    value: impl Fn(&str) -> Option<f64>,
) -> Result<Result<f64, Vec<String>>, RunError> {
    let mut found = None;
    rev_lines(path, |line| {
        found = value(line);
        found.is_some()
    })?;
    if let Some(x) = found {
        return Ok(Ok(x));
    }
    let mut last = Vec::new();
    rev_lines(path, |line| {
        if !line.trim().is_empty() {
            last.push(line.chars().take(200).collect::<String>());
        }
        last.len() == 3
    })?;
    if last.is_empty() {
        return Ok(Err(vec![
            "the command printed nothing on stdout".to_string(),
        ]));
    }
    let mut out = vec!["its last stdout lines:".to_string()];
    out.extend(last.into_iter().rev().map(|l| format!("  {l}")));
    Ok(Err(out))
}

/// The number in the first capture group (or the whole match) of a line.
fn regex_value(re: &regex_lite::Regex, line: &str) -> Option<f64> {
    let caps = re.captures(line)?;
    let m = caps.get(1).or_else(|| caps.get(0))?;
    m.as_str().trim().replace('_', "").parse::<f64>().ok()
}

/// The numeric `field` (dotted path) of a JSON object line.
fn json_value(field: &str, line: &str) -> Option<f64> {
    let line = line.trim();
    if !line.starts_with('{') {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    let mut v = &value;
    for part in field.split('.') {
        v = v.get(part)?;
    }
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{Collect, FakeSpawner, exit, ok};

    /// `text` in a scratch file, and the value `last_value` finds in it.
    fn scan(text: &[u8], value: impl Fn(&str) -> Option<f64>) -> Result<f64, Vec<String>> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "perfsleuth-sweep-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, text).unwrap();
        let found = last_value(&path, value).unwrap();
        std::fs::remove_file(&path).unwrap();
        found
    }

    #[test]
    fn throughput_is_read_from_the_last_matching_line_or_json_object() {
        let re = regex_lite::Regex::new(r"ops/s: ([0-9.]+)").expect("re");
        let rx = |t: &str| scan(t.as_bytes(), |l| regex_value(&re, l));
        assert_eq!(
            rx("warming up\nops/s: 10.5\nops/s: 12000.25\ndone\n"),
            Ok(12000.25)
        );
        assert_eq!(rx("ops/s: 7"), Ok(7.0), "a last line without a newline");
        assert_eq!(
            rx("a\n\nb\nc\nnothing here\n"),
            Err(vec![
                "its last stdout lines:".to_string(),
                "  b".into(),
                "  c".into(),
                "  nothing here".into()
            ])
        );
        assert_eq!(
            rx(""),
            Err(vec!["the command printed nothing on stdout".to_string()])
        );
        let whole = regex_lite::Regex::new(r"[0-9]+").expect("re");
        assert_eq!(scan(b"rate 42 ops", |l| regex_value(&whole, l)), Ok(42.0));

        let json =
            "{\"ops_per_sec\": 10}\nnoise\n{\"stats\": {\"rate\": \"3.5\"}, \"ops_per_sec\": 20}\n";
        let js = |field: &str, t: &str| scan(t.as_bytes(), |l| json_value(field, l)).ok();
        assert_eq!(js("ops_per_sec", json), Some(20.0));
        assert_eq!(js("stats.rate", json), Some(3.5));
        assert_eq!(js("missing", json), None);
        assert_eq!(js("ops_per_sec", "{broken"), None);
    }

    #[test]
    fn lines_across_blocks_and_overlong_lines_are_handled_in_bounded_memory() {
        let re = regex_lite::Regex::new(r"^rate ([0-9]+)$").expect("re");
        // Lines straddling the 64 KiB blocks, the answer far from the end.
        let mut text = Vec::new();
        for i in 0..50_000 {
            text.extend_from_slice(format!("rate {i}\n").as_bytes());
        }
        for _ in 0..30_000 {
            text.extend_from_slice(b"filler line of no interest\n");
        }
        assert_eq!(scan(&text, |l| regex_value(&re, l)), Ok(49_999.0));
        // A line longer than MAX_LINE is skipped, not assembled in memory.
        let mut text = b"rate 5\n".to_vec();
        text.extend(std::iter::repeat_n(b'9', MAX_LINE * 2 + 17));
        text.extend_from_slice(b"\nrate\n");
        let whole = regex_lite::Regex::new(r"[0-9]+").expect("re");
        assert_eq!(scan(&text, |l| regex_value(&whole, l)), Ok(5.0));
    }

    fn levels(sp: &mut FakeSpawner, names: &[&str]) -> Vec<Level> {
        let planned = names
            .iter()
            .map(|n| Planned {
                name: n.to_string(),
                command: n.to_string(),
                argv: vec![n.to_string()],
                ..Planned::default()
            })
            .collect();
        let values: Vec<(String, f64)> = (1..=names.len())
            .map(|i| (i.to_string(), i as f64))
            .collect();
        prepare_levels(sp, planned, &values, &IoConfig::default(), false).expect("levels")
    }

    #[test]
    fn rounds_rotate_the_starting_level_and_warmups_are_untimed() {
        let mut sp = FakeSpawner::new(|_, _| ok(1_000_000));
        let mut lv = levels(&mut sp, &["a", "b", "c"]);
        let method = Throughput::WorkPerThread(1000.0);
        let sweep = Sweep {
            method: &method,
            param: "n",
            stdout: Path::new("/nonexistent"),
            warmup: 1,
            runs: 2,
        };
        let mut sink = Collect::default();
        sweep.measure(&mut sp, &mut sink, &mut lv).expect("sweep");
        // run_once keeps stderr, so every run logs as untimed here; the order is the point.
        let order: Vec<String> = sp
            .log
            .iter()
            .map(|r| format!("{}{}", r.program, r.iteration))
            .collect();
        assert_eq!(
            order,
            ["a0", "b0", "c0", "b0", "c0", "a0", "c1", "a1", "b1"]
        );
        assert_eq!(sink.samples.len(), 6, "warmups are not samples");
        // Throughput = work per thread × N / wall: level 3 does 3000 units in 1 ms.
        let c = &lv[2].samples()[0];
        assert_eq!(c.counters[THROUGHPUT], 3_000_000.0);
        assert!(lv[2].to_benchmark(false).samples.is_empty());
    }

    #[test]
    fn a_failing_level_stops_the_sweep() {
        let mut sp = FakeSpawner::new(|p, _| if p == "b" { exit(2) } else { ok(10) });
        let mut lv = levels(&mut sp, &["a", "b"]);
        let method = Throughput::Work(1.0);
        let sweep = Sweep {
            method: &method,
            param: "n",
            stdout: Path::new("/nonexistent"),
            warmup: 0,
            runs: 3,
        };
        let err = sweep
            .measure(&mut sp, &mut Collect::default(), &mut lv)
            .expect_err("b fails");
        assert!(
            matches!(&err, Stop::Failed(RunError::CommandFailed { label, .. }) if label == "command `b` (n=2)"),
            "{err:?}"
        );
    }
}
