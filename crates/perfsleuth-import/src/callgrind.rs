//! A plain `callgrind.out` file (valgrind's callgrind, or any tool writing
//! its format): one simulation-mode benchmark, named by the file's `cmd:`
//! line, with one sample of its event totals (Ir, cache misses, estimated
//! cycles when the cache simulation was on) and the per-function profile.
//! Parsed by the same parser simulation mode uses.

use crate::callgrind_format as callgrind;
use crate::{Format, ImportError, Imported};
use perfsleuth_model::{Benchmark, Sample};

/// Whether the text reads as callgrind's format: its `# callgrind format`
/// first line, or an `events:` line in a file a callgrind `creator:` wrote.
pub(crate) fn looks_like(text: &str) -> bool {
    let mut lines = text.lines();
    if lines
        .next()
        .is_some_and(|l| l.trim() == "# callgrind format")
    {
        return true;
    }
    let head: Vec<&str> = text.lines().take(40).collect();
    head.iter().any(|l| l.starts_with("creator: callgrind"))
        && head.iter().any(|l| l.starts_with("events:"))
}

pub(crate) fn parse(text: &str) -> Result<Imported, ImportError> {
    let profile = callgrind::parse_reader(text.as_bytes(), "input").map_err(|e| {
        ImportError::new(
            if e.line == 0 {
                String::new()
            } else {
                format!("line {}", e.line)
            },
            format!("not callgrind output: {}", e.message),
            "give a callgrind.out file as valgrind wrote it (whole)",
        )
    })?;
    if profile.totals.iter().all(|t| *t == 0) {
        return Err(ImportError::new(
            "",
            "every event total is 0: nothing was collected",
            "check the run that wrote it (a --toggle-collect that never matched?)",
        ));
    }
    let name = profile
        .commands
        .first()
        .cloned()
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| "callgrind".to_string());
    let sample = Sample {
        exit_code: Some(0),
        counters: callgrind::counters(&profile),
        ..Sample::default()
    };
    let mut notes = Vec::new();
    if callgrind::estimated_cycles(&profile).is_none() {
        notes.push(
            "no cache simulation in the file (valgrind --cache-sim=yes): Ir only, no estimated cycles"
                .to_string(),
        );
    }
    let bench = Benchmark {
        command: name.clone(),
        name,
        samples: vec![sample],
        profile: Some(Box::new(profile)),
        ..Benchmark::default()
    };
    let mut imported = Imported::of(Format::Callgrind, vec![bench]);
    imported.notes = notes;
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\ncmd: ./prog 10\n\
events: Ir\nfl=a.c\nfn=main\n1 100\nfn=work\n2 900\ntotals: 1000\n";

    #[test]
    fn totals_become_one_sample_and_the_profile_is_kept() {
        assert!(looks_like(OUT));
        let i = crate::parse(Format::Callgrind, OUT).unwrap();
        assert_eq!(i.mode(), perfsleuth_model::Mode::Simulation);
        let b = &i.benchmarks[0];
        assert_eq!(b.name, "./prog 10");
        assert_eq!(b.samples[0].counters["Ir"], 1000.0);
        assert_eq!(b.profile.as_ref().unwrap().functions.len(), 2);
        assert!(i.notes[0].contains("no cache simulation"));
    }

    #[test]
    fn broken_files_say_the_line() {
        let e = crate::parse(
            Format::Callgrind,
            "# callgrind format\nevents: Ir\nfn=x\n1 zz\n",
        )
        .unwrap_err();
        assert!(e.at.starts_with("line "), "{e:?}");
        let zero = "# callgrind format\nevents: Ir\nfn=x\n1 0\n";
        assert!(
            crate::parse(Format::Callgrind, zero)
                .unwrap_err()
                .message
                .contains("0")
        );
    }
}
