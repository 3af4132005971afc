//! The wire format between perfsleuth and its spawner: little-endian,
//! length-prefixed byte strings, errors and run outcomes.

use crate::MeasureError;
use crate::exec::Outcome;
use crate::spawner::REP_ERR;
use crate::spawner::REP_OK;
use crate::spawner::protocol_error;
use perfsleuth_model::Sample;
use std::path::Path;
use std::path::PathBuf;

pub(crate) fn put_u32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}

pub(crate) fn put_u64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}

pub(crate) fn put_bytes(v: &mut Vec<u8>, b: &[u8]) {
    put_u32(v, b.len() as u32);
    v.extend_from_slice(b);
}

pub(crate) fn put_path(v: &mut Vec<u8>, p: &Path) {
    use std::os::unix::ffi::OsStrExt;
    put_bytes(v, p.as_os_str().as_bytes());
}

pub(crate) fn put_opt_path(v: &mut Vec<u8>, p: Option<&Path>) {
    match p {
        Some(p) => {
            v.push(1);
            put_path(v, p);
        }
        None => v.push(0),
    }
}

pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
    }
    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
    }
    pub(crate) fn i32(&mut self) -> Option<i32> {
        self.take(4)
            .and_then(|b| b.try_into().ok())
            .map(i32::from_le_bytes)
    }
    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    pub(crate) fn path(&mut self) -> Option<PathBuf> {
        use std::os::unix::ffi::OsStrExt;
        self.bytes()
            .map(|b| PathBuf::from(std::ffi::OsStr::from_bytes(b)))
    }
    pub(crate) fn opt_path(&mut self) -> Option<Option<PathBuf>> {
        match self.u8()? {
            0 => Some(None),
            _ => self.path().map(Some),
        }
    }
}

pub(crate) fn encode_error(e: &MeasureError) -> Vec<u8> {
    let mut v = vec![REP_ERR];
    let (kind, text) = match e {
        MeasureError::NotFound(p) => (0, p.clone()),
        MeasureError::NotExecutable(p) => (1, p.display().to_string()),
        MeasureError::IsDirectory(p) => (4, p.display().to_string()),
        MeasureError::File { path, source } => (2, format!("{}\0{source}", path.display())),
        MeasureError::Spawn { program, source } => (5, format!("{program}\0{source}")),
        MeasureError::Setting(why) => (6, why.clone()),
        MeasureError::NotApplied(why) => (7, why.clone()),
        other => (3, other.to_string()),
    };
    v.push(kind);
    put_bytes(&mut v, text.as_bytes());
    v
}

pub(crate) fn decode_error(reply: &[u8]) -> Result<(), MeasureError> {
    let mut r = Reader(reply);
    match r.u8() {
        Some(REP_OK) => Ok(()),
        Some(REP_ERR) => {
            let kind = r.u8().unwrap_or(3);
            let text = String::from_utf8_lossy(r.bytes().unwrap_or_default()).into_owned();
            Err(match kind {
                0 => MeasureError::NotFound(text),
                1 => MeasureError::NotExecutable(PathBuf::from(text)),
                4 => MeasureError::IsDirectory(PathBuf::from(text)),
                5 => {
                    let (program, detail) = text.split_once('\0').unwrap_or((&text, ""));
                    MeasureError::Spawn {
                        program: program.to_string(),
                        source: std::io::Error::other(detail.to_string()),
                    }
                }
                2 => {
                    let (path, detail) = text.split_once('\0').unwrap_or((&text, ""));
                    MeasureError::File {
                        path: PathBuf::from(path),
                        source: std::io::Error::other(detail.to_string()),
                    }
                }
                6 => MeasureError::Setting(text),
                7 => MeasureError::NotApplied(text),
                _ => protocol_error(&text),
            })
        }
        _ => Err(protocol_error("malformed reply")),
    }
}

pub(crate) fn encode_outcome(o: &Outcome) -> Vec<u8> {
    let mut v = vec![REP_OK];
    let (tag, s) = match o {
        Outcome::Completed(s) => (0u8, Some(s)),
        Outcome::TimedOut(s) => (1, Some(s)),
        Outcome::Interrupted => (2, None),
        Outcome::Skipped => (3, None),
    };
    v.push(tag);
    if let Some(s) = s {
        put_u32(&mut v, s.iteration);
        for x in [
            s.wall_ns,
            s.user_ns,
            s.sys_ns,
            s.peak_rss_bytes,
            s.minor_faults,
            s.major_faults,
            s.voluntary_cs,
            s.involuntary_cs,
        ] {
            put_u64(&mut v, x);
        }
        for x in [s.exit_code, s.signal] {
            v.push(x.is_some() as u8);
            v.extend_from_slice(&x.unwrap_or(0).to_le_bytes());
        }
        put_u32(&mut v, s.counters.len() as u32);
        for (k, x) in &s.counters {
            put_bytes(&mut v, k.as_bytes());
            put_u64(&mut v, x.to_bits());
        }
    }
    v
}

pub(crate) fn decode_run_reply(reply: &[u8]) -> Result<Outcome, MeasureError> {
    decode_error(reply)?;
    decode_outcome(&reply[1..]).ok_or_else(|| protocol_error("malformed run reply"))
}

pub(crate) fn decode_outcome(body: &[u8]) -> Option<Outcome> {
    let mut r = Reader(body);
    let tag = r.u8()?;
    match tag {
        2 => return Some(Outcome::Interrupted),
        3 => return Some(Outcome::Skipped),
        _ => {}
    }
    let iteration = r.u32()?;
    let mut n = [0u64; 8];
    for x in &mut n {
        *x = r.u64()?;
    }
    let mut opt = || -> Option<Option<i32>> {
        let has = r.u8()?;
        let val = r.i32()?;
        Some((has != 0).then_some(val))
    };
    let (exit_code, signal) = (opt()?, opt()?);
    let mut counters = std::collections::BTreeMap::new();
    for _ in 0..r.u32()? {
        let key = String::from_utf8_lossy(r.bytes()?).into_owned();
        counters.insert(key, f64::from_bits(r.u64()?));
    }
    let s = Sample {
        iteration,
        round: 0,
        wall_ns: n[0],
        wall_exact_ns: None,
        user_ns: n[1],
        sys_ns: n[2],
        peak_rss_bytes: n[3],
        minor_faults: n[4],
        major_faults: n[5],
        voluntary_cs: n[6],
        involuntary_cs: n[7],
        exit_code,
        signal,
        counters,
    };
    Some(if tag == 1 {
        Outcome::TimedOut(s)
    } else {
        Outcome::Completed(s)
    })
}
