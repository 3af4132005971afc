//! The spawner side: the forked process that serves the requests, sets up
//! the commands and times each run around spawn and `wait4`.

use crate::MeasureError;
use crate::counters::CounterConfig;
use crate::counters::CounterSelection;
use crate::counters::CounterStatus;
use crate::counters::Counters;
use crate::exec::Executor;
use crate::exec::IoConfig;
use crate::exec::Outcome;
use crate::exec::OutputTarget;
use crate::exec::Tolerate;
use crate::spawner::RUN_CAPTURE;
use crate::spawner::RUN_FORCE;
use crate::spawner::protocol_error;
use crate::spawner::wire::Reader;
use crate::spawner::wire::encode_error;
use crate::spawner::wire::encode_outcome;
use crate::spawner::wire::put_bytes;
use crate::spawner::wire::put_u32;
use crate::spawner::{REP_OK, REQ_COUNTERS, REQ_RESUME, REQ_RUN, REQ_SETUP};
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Which stderr capture file a command is prepared with.
pub(crate) enum Capture {
    /// None: its stderr is inherited.
    None,
    /// A new file (the first command that keeps stderr), by its path.
    New((File, PathBuf)),
    /// The file the spawner already holds.
    Shared,
}

pub(crate) fn serve(requests: File, mut replies: File) -> i32 {
    // Buffered: a run request's length and body come in one read, with
    // the next request the parent queued, not two reads per iteration.
    let mut requests = std::io::BufReader::with_capacity(4096, requests);
    let mut executors: HashMap<u32, Executor> = HashMap::new();
    let mut capture: Option<Arc<File>> = None;
    let mut counters: Option<Counters> = None;
    // After a failure the parent stops measuring; runs it had already queued
    // (it keeps one ahead) must not execute, so they are answered `Skipped`.
    let mut halted = false;
    loop {
        let mut len = [0u8; 4];
        if read_full(&mut requests, &mut len).is_err() {
            return 0;
        }
        let mut msg = vec![0u8; u32::from_le_bytes(len) as usize];
        if read_full(&mut requests, &mut msg).is_err() {
            return 0;
        }
        let reply = handle(
            &msg,
            &mut executors,
            &mut capture,
            &mut counters,
            &mut halted,
        );
        let mut framed = Vec::with_capacity(reply.len() + 4);
        put_u32(&mut framed, reply.len() as u32);
        framed.extend_from_slice(&reply);
        if replies.write_all(&framed).is_err() {
            return 1;
        }
    }
}

pub(crate) fn read_full(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<()> {
    // read_exact retries EINTR itself, which is what the spawner wants.
    file.read_exact(buf)
}

pub(crate) fn handle(
    msg: &[u8],
    executors: &mut HashMap<u32, Executor>,
    capture: &mut Option<Arc<File>>,
    counters: &mut Option<Counters>,
    halted: &mut bool,
) -> Vec<u8> {
    let mut r = Reader(msg);
    let result = match r.u8() {
        Some(REQ_SETUP) => setup(&mut r, executors, capture).map(|()| vec![REP_OK]),
        Some(REQ_COUNTERS) => open_counters(&mut r, counters),
        Some(REQ_RESUME) => {
            *halted = false;
            Ok(vec![REP_OK])
        }
        Some(REQ_RUN) => match (r.u32(), r.u32(), r.u8()) {
            (Some(_), Some(_), Some(flags)) if *halted && flags & RUN_FORCE == 0 => {
                Ok(encode_outcome(&Outcome::Skipped))
            }
            (Some(id), Some(iteration), Some(flags)) => match executors.get_mut(&id) {
                Some(ex) => match counters.as_mut() {
                    Some(c) => ex.run_counted(iteration, flags & RUN_CAPTURE != 0, c),
                    None => ex.run(iteration, flags & RUN_CAPTURE != 0),
                }
                .map(|o| {
                    if flags & RUN_FORCE == 0 {
                        *halted = o.halts(ex.tolerate());
                    }
                    encode_outcome(&o)
                }),
                None => Err(protocol_error("unknown command id")),
            },
            _ => Err(protocol_error("malformed run request")),
        },
        _ => Err(protocol_error("unknown request")),
    };
    result.unwrap_or_else(|e| encode_error(&e))
}

pub(crate) fn open_counters(
    r: &mut Reader<'_>,
    counters: &mut Option<Counters>,
) -> Result<Vec<u8>, MeasureError> {
    let bad = || protocol_error("malformed counters request");
    let selection = match r.u8().ok_or_else(bad)? {
        0 => CounterSelection::None,
        1 => CounterSelection::Software,
        _ => CounterSelection::All,
    };
    let include_kernel = r.u8().ok_or_else(bad)? != 0;
    let tracepoints = r.u8().ok_or_else(bad)? != 0;
    let tracefs = r.opt_path().ok_or_else(bad)?;
    // Close the old ones first: they would otherwise keep counting.
    *counters = None;
    let (opened, status) = Counters::open(&CounterConfig {
        selection,
        include_kernel,
        tracepoints,
        tracefs,
    });
    *counters = (!opened.is_empty()).then_some(opened);
    let mut v = vec![REP_OK];
    put_u32(&mut v, status.opened.len() as u32);
    for k in &status.opened {
        put_bytes(&mut v, k.as_bytes());
    }
    put_u32(&mut v, status.unavailable.len() as u32);
    for (k, why) in &status.unavailable {
        put_bytes(&mut v, k.as_bytes());
        put_bytes(&mut v, why.as_bytes());
    }
    Ok(v)
}

pub(crate) fn decode_status(body: &[u8]) -> Option<CounterStatus> {
    let mut r = Reader(body);
    let text = |r: &mut Reader<'_>| Some(String::from_utf8_lossy(r.bytes()?).into_owned());
    let mut status = CounterStatus::default();
    for _ in 0..r.u32()? {
        status.opened.push(text(&mut r)?);
    }
    for _ in 0..r.u32()? {
        let key = text(&mut r)?;
        status.unavailable.push((key, text(&mut r)?));
    }
    Some(status)
}

pub(crate) fn setup(
    r: &mut Reader<'_>,
    executors: &mut HashMap<u32, Executor>,
    shared: &mut Option<Arc<File>>,
) -> Result<(), MeasureError> {
    let bad = || protocol_error("malformed setup request");
    let id = r.u32().ok_or_else(bad)?;
    let timeout_ns = r.u64().ok_or_else(bad)?;
    let output = match r.u8().ok_or_else(bad)? {
        0 => OutputTarget::Null,
        1 => OutputTarget::Inherit,
        2 => OutputTarget::File(r.path().ok_or_else(bad)?),
        3 => OutputTarget::Pipe,
        _ => return Err(bad()),
    };
    let input = r.opt_path().ok_or_else(bad)?;
    let capture = match r.u8().ok_or_else(bad)? {
        0 => None,
        1 => {
            let path = r.path().ok_or_else(bad)?;
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|source| MeasureError::File { path, source })?;
            *shared = Some(Arc::new(file));
            shared.clone()
        }
        2 => Some(
            shared
                .clone()
                .ok_or_else(|| protocol_error("no shared stderr capture file yet"))?,
        ),
        _ => return Err(bad()),
    };
    let tolerate = match r.u8().ok_or_else(bad)? {
        0 => Tolerate::Nothing,
        1 => Tolerate::Everything,
        _ => {
            let n = r.u32().ok_or_else(bad)?;
            let mut codes = Vec::with_capacity(n.min(256) as usize);
            for _ in 0..n {
                codes.push(r.i32().ok_or_else(bad)?);
            }
            Tolerate::ExitCodes(codes)
        }
    };
    let disable_aslr = r.u8().ok_or_else(bad)? != 0;
    let cwd = r.opt_path().ok_or_else(bad)?;
    let cpus = match r.u8().ok_or_else(bad)? {
        0 => None,
        _ => {
            let n = r.u32().ok_or_else(bad)?;
            let mut cpus = Vec::with_capacity(n.min(4096) as usize);
            for _ in 0..n {
                cpus.push(r.u32().ok_or_else(bad)? as usize);
            }
            Some(cpus)
        }
    };
    let thp_disable = r.u8().ok_or_else(bad)? != 0;
    let numa_node = match r.u8().ok_or_else(bad)? {
        0 => None,
        _ => Some(r.u32().ok_or_else(bad)? as usize),
    };
    let nice = match r.u8().ok_or_else(bad)? {
        0 => None,
        _ => Some(r.i32().ok_or_else(bad)?),
    };
    let policy = match r.u8().ok_or_else(bad)? {
        0 => None,
        1 => Some(crate::Policy::Other),
        2 => Some(crate::Policy::Batch),
        3 => Some(crate::Policy::Idle),
        _ => return Err(bad()),
    };
    let vars = r.u32().ok_or_else(bad)?;
    let mut env = Vec::with_capacity(vars.min(256) as usize);
    for _ in 0..vars {
        let key = String::from_utf8_lossy(r.bytes().ok_or_else(bad)?).into_owned();
        let value = match r.u8().ok_or_else(bad)? {
            0 => None,
            _ => Some(String::from_utf8_lossy(r.bytes().ok_or_else(bad)?).into_owned()),
        };
        env.push((key, value));
    }
    let io = IoConfig {
        output,
        input,
        timeout: (timeout_ns > 0).then(|| Duration::from_nanos(timeout_ns)),
        tolerate,
        disable_aslr,
        cwd,
        env,
        settings: crate::ChildSettings {
            cpus,
            thp_disable,
            nice,
            policy,
            numa_node,
        },
    };
    let argc = r.u32().ok_or_else(bad)?;
    let mut argv = Vec::with_capacity(argc.min(4096) as usize);
    for _ in 0..argc {
        argv.push(String::from_utf8_lossy(r.bytes().ok_or_else(bad)?).into_owned());
    }
    executors.insert(id, Executor::with_capture(&argv, &io, capture)?);
    Ok(())
}
