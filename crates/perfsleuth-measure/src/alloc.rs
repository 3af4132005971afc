//! Allocation profiles (`--profile=alloc`, docs/PROFILES.md, "Allocations"):
//! the recorder library (`alloc/recorder.c`, built by `build.rs` and
//! embedded here) is preloaded into each benchmarked command with
//! `LD_PRELOAD`; every process of a run writes one file at its exit into its
//! command's directory; [`Recorder::collect`] reads them back, puts each
//! process in its run (the processes the spawner started, in the order they
//! started, and their descendants), names the sampled stacks with the
//! profiler's symbolizer and the process's own memory map, and makes one
//! [`AllocProfile`] of the timed runs.

use perfsleuth_model::{AllocProfile, AllocStack, ProfileFrame};
use perfsleuth_unwind::{Maps, Symbolizer};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The recorder library, built for this machine.
const LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/perfsleuth-alloc.so"));

/// The environment variable naming the directory a process's file goes to.
pub const DIR_VAR: &str = "PERFSLEUTH_ALLOC_DIR";

/// The largest recorder file read (a process's memory map and stacks).
const MAX_FILE: u64 = 64 << 20;

/// Why allocations cannot be recorded.
#[derive(Debug, thiserror::Error)]
pub enum AllocError {
    /// No recorder for this system.
    #[error("allocation profiles are recorded on Linux only")]
    Unsupported,
    /// The recorder's directory or library could not be written.
    #[error("cannot prepare the allocation recorder in {0}: {1}")]
    Prepare(PathBuf, std::io::Error),
    /// [`Recorder::collect`] was given a directory another recorder made.
    #[error("{} is not this session's", .0.display())]
    NotThisSession(PathBuf),
    /// Fewer runs wrote records than ran: the command's allocations went
    /// past the recorder.
    #[error(
        "{wrote} of the {runs} runs wrote allocation records (a static binary, an allocator under names of its own, or a process that ended without exit(): _exit, a signal)"
    )]
    RunsUnrecorded {
        /// Runs that wrote records.
        wrote: usize,
        /// Runs the command had.
        runs: usize,
    },
    /// More processes than runs started from the spawner.
    #[error(
        "{wrote} processes wrote allocation records as runs of its {runs} (records of another command's)"
    )]
    ForeignRecords {
        /// Processes that wrote records as runs.
        wrote: usize,
        /// Runs the command had.
        runs: usize,
    },
    /// The command's record directory could not be listed.
    #[error("cannot read the allocation records in {}: {source}", dir.display())]
    ReadDir {
        /// The directory.
        dir: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A record file could not be read.
    #[error("{}: {source}", path.display())]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file named as a record is not one (a directory, or too large).
    #[error("{}: not a recorder file", .0.display())]
    NotAFile(PathBuf),
    /// A record file is damaged.
    #[error("{}: {source}", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong in it.
        source: RecordError,
    },
}

/// What is wrong in a recorder file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The first line is not the recorder's header.
    #[error("not a perfsleuth allocation record")]
    NotARecord,
    /// A line's value does not parse.
    #[error("bad {0} line")]
    BadLine(String),
    /// A stack line's return address is not hexadecimal.
    #[error("bad address")]
    BadAddress,
    /// A line the recorder does not write.
    #[error("unknown line `{0}`")]
    UnknownLine(String),
}

/// The recorder of one session: a private directory holding the library
/// and, per benchmarked command, the files of its runs' processes.
#[derive(Debug)]
pub struct Recorder {
    dir: PathBuf,
    library: PathBuf,
    sample_bytes: u64,
    /// Commands given a directory so far.
    commands: std::cell::Cell<usize>,
}

impl Recorder {
    /// Makes the session's directory (under the system's temporary
    /// directory, readable by its owner only) and writes the library there;
    /// the recorder samples a stack every `sample_bytes` bytes allocated,
    /// on average.
    pub fn new(sample_bytes: u64) -> Result<Recorder, AllocError> {
        if LIBRARY.is_empty() {
            return Err(AllocError::Unsupported);
        }
        let base = std::env::temp_dir();
        let mut n = 0u32;
        let dir = loop {
            let dir = base.join(format!("perfsleuth-alloc-{}-{n}", std::process::id()));
            match std::fs::create_dir(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
                Err(e) => return Err(AllocError::Prepare(dir, e)),
            }
        };
        use std::os::unix::fs::PermissionsExt as _;
        let prepare = |e| AllocError::Prepare(dir.clone(), e);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(prepare)?;
        let library = dir.join("perfsleuth-alloc.so");
        std::fs::write(&library, LIBRARY).map_err(prepare)?;
        Ok(Recorder {
            dir,
            library,
            sample_bytes: sample_bytes.max(1),
            commands: std::cell::Cell::new(0),
        })
    }

    /// The environment a benchmarked command runs with: the library
    /// preloaded before any the command's own environment preloads
    /// (`preload`, its `LD_PRELOAD` if any), and a directory of its own for
    /// its processes' records ([`DIR_VAR`]; [`dir_of_env`] finds it again).
    pub fn env_for(
        &self,
        preload: Option<&str>,
    ) -> Result<Vec<(String, Option<String>)>, AllocError> {
        let command = self.commands.get();
        self.commands.set(command + 1);
        let dir = self.dir.join(command.to_string());
        std::fs::create_dir_all(&dir).map_err(|e| AllocError::Prepare(dir.clone(), e))?;
        let mut libs = self.library.display().to_string();
        if let Some(p) = preload.filter(|p| !p.trim().is_empty()) {
            libs.push(':');
            libs.push_str(p);
        }
        Ok(vec![
            ("LD_PRELOAD".into(), Some(libs)),
            (DIR_VAR.into(), Some(dir.display().to_string())),
            (
                "PERFSLEUTH_ALLOC_SAMPLE_BYTES".into(),
                Some(self.sample_bytes.to_string()),
            ),
        ])
    }

    /// The allocation profile of a command's timed runs, from its records
    /// in `dir` (its [`DIR_VAR`]). `runs`: the command's runs in the order
    /// the spawner (process `spawner`) started them, each `Some(iteration)`
    /// when timed (`None`: a warmup). `Err` says why there is none (a run
    /// whose processes wrote nothing: a static binary, one that ended
    /// without `exit`, or was killed).
    pub fn collect(
        &self,
        dir: &Path,
        spawner: u32,
        runs: &[Option<u32>],
    ) -> Result<AllocProfile, AllocError> {
        if !dir.starts_with(&self.dir) {
            return Err(AllocError::NotThisSession(dir.to_path_buf()));
        }
        let mut records = read_dir(dir)?;
        records.sort_by_key(|r| (r.start_ns, r.pid));
        // The run of each process: a root (the spawner's child) starts
        // one; a process belongs to its parent's run.
        let mut run_of: HashMap<u32, usize> = HashMap::new();
        let mut roots = 0usize;
        let mut of_record = Vec::with_capacity(records.len());
        for r in &records {
            let run = if r.ppid == spawner {
                roots += 1;
                Some(roots - 1)
            } else {
                run_of.get(&r.ppid).copied()
            };
            if let Some(run) = run {
                run_of.insert(r.pid, run);
            }
            of_record.push(run);
        }
        if roots < runs.len() {
            return Err(AllocError::RunsUnrecorded {
                wrote: roots,
                runs: runs.len(),
            });
        }
        if roots > runs.len() {
            return Err(AllocError::ForeignRecords {
                wrote: roots,
                runs: runs.len(),
            });
        }
        let timed: Vec<(usize, u32)> = runs
            .iter()
            .enumerate()
            .filter_map(|(i, it)| Some((i, (*it)?)))
            .collect();
        let n = timed.len();
        let slot: HashMap<usize, usize> = timed
            .iter()
            .enumerate()
            .map(|(k, (i, _))| (*i, k))
            .collect();
        let mut profile = AllocProfile {
            iterations: timed.iter().map(|(_, it)| *it).collect(),
            allocations: vec![0; n],
            bytes: vec![0; n],
            frees: vec![0; n],
            peak_live: vec![0; n],
            ..AllocProfile::default()
        };
        let mut symbolizer = Symbolizer::default();
        let mut frame_ids: HashMap<ProfileFrame, u32> = HashMap::new();
        let mut stack_ids: HashMap<Vec<u32>, usize> = HashMap::new();
        for (r, run) in records.iter().zip(&of_record) {
            let Some(k) = run.and_then(|run| slot.get(&run).copied()) else {
                continue;
            };
            profile.sample_bytes = r.sample_bytes;
            profile.dropped += r.dropped;
            profile.allocations[k] += r.allocs;
            profile.bytes[k] += r.bytes;
            profile.frees[k] += r.frees;
            // Processes of a run live side by side or one after another: the
            // highest of their peaks is what is known for sure.
            profile.peak_live[k] = profile.peak_live[k].max(r.peak_live);
            let maps = Maps::parse(&r.maps);
            for s in &r.stacks {
                let mut frames = symbolizer.name_return_addresses(&s.pcs, &maps);
                frames.reverse();
                let ids: Vec<u32> = frames
                    .into_iter()
                    .map(|f| {
                        let frame = ProfileFrame {
                            function: f.function,
                            module: f.file,
                            inlined: f.inlined,
                        };
                        let next = frame_ids.len() as u32;
                        *frame_ids.entry(frame.clone()).or_insert_with(|| {
                            profile.frames.push(frame);
                            next
                        })
                    })
                    .collect();
                let at = *stack_ids.entry(ids.clone()).or_insert_with(|| {
                    profile.stacks.push(AllocStack {
                        frames: ids,
                        samples: vec![0; n],
                        count: vec![0.0; n],
                        bytes: vec![0.0; n],
                        at_peak: vec![0.0; n],
                    });
                    profile.stacks.len() - 1
                });
                let st = &mut profile.stacks[at];
                st.samples[k] += s.samples;
                st.count[k] += s.count;
                st.bytes[k] += s.bytes;
                st.at_peak[k] += s.at_peak;
            }
        }
        Ok(profile)
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The record directory a command's environment names (see
/// [`Recorder::env_for`]).
pub fn dir_of_env(env: &[(String, Option<String>)]) -> Option<PathBuf> {
    env.iter()
        .rev()
        .find(|(k, _)| k == DIR_VAR)
        .and_then(|(_, v)| v.as_deref())
        .map(PathBuf::from)
}

/// One process's record.
#[derive(Debug, Default, PartialEq)]
struct Record {
    pid: u32,
    ppid: u32,
    start_ns: u64,
    allocs: u64,
    bytes: u64,
    frees: u64,
    peak_live: u64,
    sample_bytes: u64,
    dropped: u64,
    stacks: Vec<Sampled>,
    maps: String,
}

/// A sampled stack of a process: its return addresses, innermost first.
#[derive(Debug, Default, PartialEq)]
struct Sampled {
    samples: u32,
    count: f64,
    bytes: f64,
    at_peak: f64,
    pcs: Vec<u64>,
}

/// Every record in `dir` (the files of one command's processes).
fn read_dir(dir: &Path) -> Result<Vec<Record>, AllocError> {
    let entries = std::fs::read_dir(dir).map_err(|source| AllocError::ReadDir {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "alloc") {
            continue;
        }
        let unreadable = |source| AllocError::ReadFile {
            path: path.clone(),
            source,
        };
        let meta = e.metadata().map_err(unreadable)?;
        if !meta.is_file() || meta.len() > MAX_FILE {
            return Err(AllocError::NotAFile(path));
        }
        let text = std::fs::read_to_string(&path).map_err(unreadable)?;
        match parse(&text) {
            Ok(record) => out.push(record),
            Err(source) => return Err(AllocError::Damaged { path, source }),
        }
    }
    Ok(out)
}

/// Parses a recorder file (`alloc/recorder.c`'s `report`).
fn parse(text: &str) -> Result<Record, RecordError> {
    let mut lines = text.lines();
    if lines.next() != Some("perfsleuth-alloc 1") {
        return Err(RecordError::NotARecord);
    }
    let mut r = Record::default();
    let num = |v: Option<&str>, what: &str| -> Result<u64, RecordError> {
        v.and_then(|v| v.parse().ok())
            .ok_or_else(|| RecordError::BadLine(what.to_string()))
    };
    let float = |v: Option<&str>| -> Result<f64, RecordError> {
        v.and_then(|v| v.parse::<f64>().ok())
            .filter(|f| f.is_finite() && *f >= 0.0)
            .ok_or_else(|| RecordError::BadLine("stack".to_string()))
    };
    for line in lines.by_ref() {
        let mut w = line.split(' ');
        let key = w.next().unwrap_or_default();
        match key {
            "maps" => break,
            "pid" => r.pid = num(w.next(), key)? as u32,
            "ppid" => r.ppid = num(w.next(), key)? as u32,
            "start_ns" => r.start_ns = num(w.next(), key)?,
            "allocs" => r.allocs = num(w.next(), key)?,
            "bytes" => r.bytes = num(w.next(), key)?,
            "frees" => r.frees = num(w.next(), key)?,
            "peak_live" => r.peak_live = num(w.next(), key)?,
            "sample_bytes" => r.sample_bytes = num(w.next(), key)?,
            "dropped" => r.dropped = num(w.next(), key)?,
            "stack" => {
                let samples = num(w.next(), key)? as u32;
                let (count, bytes, at_peak) =
                    (float(w.next())?, float(w.next())?, float(w.next())?);
                let pcs = w
                    .map(|pc| u64::from_str_radix(pc, 16).map_err(|_| RecordError::BadAddress))
                    .collect::<Result<Vec<u64>, RecordError>>()?;
                r.stacks.push(Sampled {
                    samples,
                    count,
                    bytes,
                    at_peak,
                    pcs,
                });
            }
            _ => return Err(RecordError::UnknownLine(key.to_string())),
        }
    }
    r.maps = lines.collect::<Vec<_>>().join("\n");
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_parses_and_a_damaged_one_is_refused() {
        let text = "perfsleuth-alloc 1\npid 7\nppid 3\nstart_ns 99\nallocs 10\nbytes 1000\nfrees 9\npeak_live 512\nsample_bytes 524288\ndropped 0\nstack 2 4.000 400.000 100.000 401000 400ff0\nmaps\n00400000-00401000 r-xp 00000000 08:01 1 /bin/x\n";
        let r = parse(text).unwrap();
        assert_eq!(
            (r.pid, r.ppid, r.allocs, r.bytes, r.peak_live),
            (7, 3, 10, 1000, 512)
        );
        assert_eq!(r.stacks[0].pcs, vec![0x401000, 0x400ff0]);
        assert!(r.maps.contains("/bin/x"));
        assert!(parse("perfsleuth-alloc 2\n").is_err());
        assert!(parse("perfsleuth-alloc 1\nallocs many\n").is_err());
        assert!(parse("perfsleuth-alloc 1\nstack 1 NaN 1 1 10\n").is_err());
        assert!(parse("perfsleuth-alloc 1\nwhat 1\n").is_err());
    }
}
