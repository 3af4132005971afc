//! The control plane: loading and attaching the kernel programs
//! (`bpf/locks.bpf.c`), draining the ring buffer while the runs go on, and
//! reading the in-kernel aggregates at the end.

use crate::LockError;
use aya::maps::{Array, HashMap, MapData, RingBuf};
use aya::programs::RawTracePoint;
use aya::{Btf, Ebpf, EbpfLoader};
use perfsleuth_unwind::Maps;
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The compiled kernel side (`bpf/build.sh` rebuilds it; the `bpf_object`
/// test checks it matches the source where clang is installed).
static OBJECT: &[u8] = aya::include_bytes_aligned!("../bpf/locks.bpf.o");

/// The programs and the raw tracepoints they attach to.
pub const PROGRAMS: [(&str, &str); 5] = [
    ("psl_fork", "sched_process_fork"),
    ("psl_proc_exit", "sched_process_exit"),
    ("psl_sys_enter", "sys_enter"),
    ("psl_sys_exit", "sys_exit"),
    ("psl_switch", "sched_switch"),
];

/// Indices of the kernel's `stats` array (the enum in locks.bpf.c).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stat {
    // 0 (waits timed) and 3 (samples sent) are counted per benchmark from
    // the aggregates instead.
    WaitDrops = 1,
    StackFails = 2,
    SampleDrops = 4,
    Switches,
    OffCpuDrops,
    Processes,
    ProcessDrops,
}

/// Size of a sample's fixed header before the stack bytes.
const SAMPLE_HEADER: usize = 4 * 4 + 8 * 6;

/// One stack sample from the kernel, with the memory map of its process
/// read while the process was still there.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    pub seq: u32,
    pub tgid: u32,
    pub uaddr: u64,
    pub stack_id: i64,
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
    /// The value the futex was expected to hold (a thread id for a join).
    pub val: u32,
    /// The waiting thread.
    pub tid: u32,
    pub stack: Vec<u8>,
    pub maps: Option<Arc<Maps>>,
}

impl Sample {
    fn parse(b: &[u8]) -> Option<Sample> {
        let u32_at = |i: usize| Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?));
        let u64_at = |i: usize| Some(u64::from_ne_bytes(b.get(i..i + 8)?.try_into().ok()?));
        let len = (u32_at(12)? as usize).min(b.len().saturating_sub(SAMPLE_HEADER));
        Some(Sample {
            seq: u32_at(0)?,
            tgid: u32_at(4)?,
            uaddr: u64_at(16)?,
            stack_id: u64_at(24)? as i64,
            ip: u64_at(32)?,
            sp: u64_at(40)?,
            bp: u64_at(48)?,
            val: u64_at(56)? as u32,
            tid: u32_at(8)?,
            stack: b.get(SAMPLE_HEADER..SAMPLE_HEADER + len)?.to_vec(),
            maps: None,
        })
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct WaitKey {
    uaddr: u64,
    stack: i64,
    seq: u32,
    pad: u32,
}
// SAFETY: plain integers, the layout of `struct key` in locks.bpf.c.
unsafe impl aya::Pod for WaitKey {}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct WaitVal {
    wait_ns: u64,
    count: u64,
}
// SAFETY: plain integers, the layout of `struct val`.
unsafe impl aya::Pod for WaitVal {}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct ThreadKey {
    seq: u32,
    tid: u32,
}
// SAFETY: plain integers, the layout of `struct tkey`.
unsafe impl aya::Pod for ThreadKey {}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct ThreadVal {
    blocked_ns: u64,
    preempted_ns: u64,
}
// SAFETY: plain integers, the layout of `struct tval`.
unsafe impl aya::Pod for ThreadVal {}

/// One (run, futex address, stack) aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct WaitAt {
    pub seq: u32,
    pub uaddr: u64,
    pub stack_id: i64,
}

/// What the kernel summed, read once at the end.
#[derive(Debug, Default)]
pub(crate) struct Aggregates {
    /// (wait ns, count) per (run, address, stack).
    pub waits: BTreeMap<WaitAt, (u64, u64)>,
    /// (blocked ns, preempted ns) per (run, thread).
    pub off_cpu: BTreeMap<(u32, u32), (u64, u64)>,
    /// The `stats` array.
    pub stats: [u64; 9],
    /// Runs the kernel saw start (processes the spawner forked).
    pub runs: u32,
    pub samples: Vec<Sample>,
}

/// The loaded, attached programs and the thread draining their ring buffer.
pub(crate) struct Loaded {
    ebpf: Ebpf,
    /// An eventfd the reader blocks on with the ring buffer: written to stop it.
    stop: Arc<OwnedFd>,
    drain: Option<JoinHandle<Vec<Sample>>>,
}

impl Loaded {
    /// Loads and attaches everything, with `root` (the spawner) as the
    /// process whose children are followed.
    pub fn start(root: u32) -> Result<Loaded, LockError> {
        let btf = Btf::from_sys_fs().map_err(|e| LockError::NoBtf(e.to_string()))?;
        let mut ebpf = EbpfLoader::new()
            .btf(Some(&btf))
            .load(OBJECT)
            .map_err(|e| refused(&e))?;
        for (name, tracepoint) in PROGRAMS {
            let program: &mut RawTracePoint = ebpf
                .program_mut(name)
                .ok_or_else(|| LockError::Load(format!("program {name} missing from the object")))?
                .try_into()
                .map_err(|e| refused(&e))?;
            program.load().map_err(|e| refused(&e))?;
            program.attach(tracepoint).map_err(|e| refused(&e))?;
        }
        {
            let map = ebpf.map_mut("roots").ok_or_else(|| missing("roots"))?;
            let mut roots: HashMap<_, u32, u8> =
                HashMap::try_from(map).map_err(|e| LockError::Load(crate::chain(&e)))?;
            roots
                .insert(root, 1, 0)
                .map_err(|e| LockError::Load(crate::chain(&e)))?;
        }
        let ring = RingBuf::try_from(ebpf.take_map("samples").ok_or_else(|| missing("samples"))?)
            .map_err(|e| LockError::Load(crate::chain(&e)))?;
        // SAFETY: eventfd has no memory preconditions; the result is checked.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if raw < 0 {
            return Err(LockError::Load(format!(
                "cannot create an eventfd: {}",
                std::io::Error::last_os_error()
            )));
        }
        // SAFETY: a new descriptor, owned only here.
        let stop = Arc::new(unsafe { OwnedFd::from_raw_fd(raw) });
        let flag = Arc::clone(&stop);
        let drain = std::thread::Builder::new()
            .name("perfsleuth-locks".into())
            .spawn(move || drain(ring, &flag))
            .map_err(|e| LockError::Load(format!("cannot start the ring-buffer reader: {e}")))?;
        Ok(Loaded {
            ebpf,
            stop,
            drain: Some(drain),
        })
    }

    /// Stops the reader, reads the aggregates; dropping `self` afterwards
    /// detaches the programs and frees the maps.
    pub fn finish(mut self) -> Result<Aggregates, LockError> {
        wake(&self.stop);
        let samples = self
            .drain
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let mut out = Aggregates {
            samples,
            ..Aggregates::default()
        };
        let read = |e: aya::maps::MapError| LockError::Read(crate::chain(&e));
        let waits: HashMap<_, WaitKey, WaitVal> =
            HashMap::try_from(self.ebpf.map("waits").ok_or_else(|| missing("waits"))?)
                .map_err(read)?;
        for (k, v) in waits.iter().filter_map(Result::ok) {
            // Entries are created when a wait starts; one still in progress
            // when a run ended has no count.
            if v.count > 0 {
                let at = WaitAt {
                    seq: k.seq,
                    uaddr: k.uaddr,
                    stack_id: k.stack,
                };
                out.waits.insert(at, (v.wait_ns, v.count));
            }
        }
        let off: HashMap<_, ThreadKey, ThreadVal> =
            HashMap::try_from(self.ebpf.map("offcpu").ok_or_else(|| missing("offcpu"))?)
                .map_err(read)?;
        for (k, v) in off.iter().filter_map(Result::ok) {
            out.off_cpu
                .insert((k.seq, k.tid), (v.blocked_ns, v.preempted_ns));
        }
        let seq: Array<_, u32> = Array::try_from(
            self.ebpf
                .map("next_seq")
                .ok_or_else(|| missing("next_seq"))?,
        )
        .map_err(read)?;
        out.runs = seq.get(&0, 0).unwrap_or(0);
        let stats: Array<_, u64> =
            Array::try_from(self.ebpf.map("stats").ok_or_else(|| missing("stats"))?)
                .map_err(read)?;
        for (i, slot) in out.stats.iter_mut().enumerate() {
            *slot = stats.get(&(i as u32), 0).unwrap_or(0);
        }
        Ok(out)
    }
}

impl Drop for Loaded {
    fn drop(&mut self) {
        wake(&self.stop);
        if let Some(h) = self.drain.take() {
            let _ = h.join();
        }
    }
}

/// The kernel's refusal as one line: EPERM is a matter of privileges, and
/// of a verifier log (hundreds of lines) the first and last lines say why.
fn refused(e: &dyn std::error::Error) -> LockError {
    let text = crate::chain(e);
    let lower = text.to_ascii_lowercase();
    if lower.contains("operation not permitted") || lower.contains("permission denied") {
        return LockError::NotPermitted;
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut one = match lines.as_slice() {
        [] => String::new(),
        [only] => (*only).to_string(),
        [first, .., last] => format!("{first} … {last} ({} lines of verifier log)", lines.len()),
    };
    if one.chars().count() > 400 {
        one = one.chars().take(400).collect::<String>() + "…";
    }
    LockError::Load(one)
}

fn missing(map: &str) -> LockError {
    LockError::Load(format!("map {map} missing from the object"))
}

/// Stops the reader: its poll wakes on the eventfd.
fn wake(stop: &OwnedFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a valid u64 to an eventfd we own.
    unsafe { libc::write(stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
}

/// Reads samples as they come, and each new process's memory map at once:
/// the process is normally still blocked in the wait that produced the
/// sample. Between samples the thread sleeps in poll, on the ring buffer
/// and the stop eventfd, so it never wakes during the runs for nothing.
fn drain(mut ring: RingBuf<MapData>, stop: &OwnedFd) -> Vec<Sample> {
    let mut samples = Vec::new();
    let mut maps: std::collections::HashMap<(u32, u32), Arc<Maps>> =
        std::collections::HashMap::new();
    let mut fds = [
        libc::pollfd {
            fd: ring.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // Checked before draining, so what arrived before the stop is read.
        let stopping = fds[1].revents & libc::POLLIN != 0;
        while let Some(item) = ring.next() {
            if let Some(mut s) = Sample::parse(&item) {
                // Keyed by run too: a later run may reuse the pid.
                let key = (s.seq, s.tgid);
                s.maps = match maps.get(&key) {
                    Some(m) if m.covers(s.ip) => Some(Arc::clone(m)),
                    _ => Maps::read(s.tgid).map(Arc::new).inspect(|m| {
                        maps.insert(key, Arc::clone(m));
                    }),
                };
                samples.push(s);
            }
        }
        if stopping {
            return samples;
        }
        for f in &mut fds {
            f.revents = 0;
        }
        // SAFETY: two valid pollfds; no timeout, the eventfd ends the wait.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if rc < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            // Poll itself failed: read what is there and stop.
            fds[1].revents = libc::POLLIN;
        }
    }
}
