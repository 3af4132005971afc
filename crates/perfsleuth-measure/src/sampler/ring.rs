//! The perf ring buffers: mapped once per CPU, read by the reader thread,
//! records taken apart by their type.

use crate::sampler::DRAIN_EVERY;
use crate::sampler::ORDER_MARGIN_NS;
use crate::sampler::RECORD_SAMPLE;
use crate::sampler::SamplerError;
use crate::sampler::collect::Collected;
use crate::sampler::collect::KernelSymbols;
use crate::sampler::collect::State;
use crate::sampler::monotonic_ns;
use std::os::fd::AsRawFd;
use std::os::fd::OwnedFd;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;

/// The mapped ring buffer of the event.
pub(crate) struct Ring {
    pub(crate) event: OwnedFd,
    /// The context-switch event writing into this ring (a wall profile).
    pub(crate) switches: Option<OwnedFd>,
    pub(crate) base: *mut u8,
    pub(crate) len: usize,
    pub(crate) data_offset: usize,
    pub(crate) data_size: usize,
}

// SAFETY: the mapping is owned by the Ring and only used by the one thread
// that holds it (it is moved into the reader once).
unsafe impl Send for Ring {}

impl Ring {
    pub(crate) fn map(event: OwnedFd, bytes: usize) -> Result<Ring, SamplerError> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|&p| p > 0)
            .unwrap_or(4096);
        let data = bytes;
        let len = page + data;
        // SAFETY: maps `len` bytes of the perf event's buffer, shared; the
        // kernel checks the size (1 + 2^n pages) and the lock limit.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                event.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let err = std::io::Error::last_os_error();
            return Err(SamplerError::Map(format!(
                "{err} ({} KiB a CPU; perf_event_mlock_kb and RLIMIT_MEMLOCK limit it)",
                data >> 10
            )));
        }
        let base = base.cast::<u8>();
        // SAFETY: the first page is the kernel's perf_event_mmap_page;
        // data_offset and data_size are at 1040 and 1048.
        let (off, size) = unsafe {
            (
                std::ptr::read_volatile(base.add(1040).cast::<u64>()),
                std::ptr::read_volatile(base.add(1048).cast::<u64>()),
            )
        };
        let (data_offset, data_size) = if size == 0 {
            (page, data)
        } else {
            (off as usize, size as usize)
        };
        Ok(Ring {
            event,
            switches: None,
            base,
            len,
            data_offset,
            data_size,
        })
    }

    pub(crate) fn head(&self) -> u64 {
        // SAFETY: data_head at offset 1024 of the control page, written by the
        // kernel; the acquire pairs with its write of the records.
        let head = unsafe { &*self.base.add(1024).cast::<std::sync::atomic::AtomicU64>() };
        head.load(Ordering::Acquire)
    }

    pub(crate) fn set_tail(&self, tail: u64) {
        // SAFETY: data_tail at offset 1032, ours to write; release so the
        // kernel sees the records read before it reuses the space.
        let t = unsafe { &*self.base.add(1032).cast::<std::sync::atomic::AtomicU64>() };
        t.store(tail, Ordering::Release);
    }

    pub(crate) fn tail(&self) -> u64 {
        // SAFETY: as in set_tail.
        let t = unsafe { &*self.base.add(1032).cast::<std::sync::atomic::AtomicU64>() };
        t.load(Ordering::Relaxed)
    }

    /// Copies `len` bytes at ring position `pos`, wrapping around the end.
    pub(crate) fn copy(&self, pos: u64, len: usize, out: &mut Vec<u8>) {
        out.clear();
        let start = (pos % self.data_size as u64) as usize;
        let first = len.min(self.data_size - start);
        // SAFETY: both ranges lie inside the data area of the mapping.
        unsafe {
            let data = self.base.add(self.data_offset);
            out.extend_from_slice(std::slice::from_raw_parts(data.add(start), first));
            out.extend_from_slice(std::slice::from_raw_parts(data, len - first));
        }
    }

    /// Takes every complete record up to the head, with its time.
    pub(crate) fn drain(&self, pending: &mut Vec<(u64, Vec<u8>)>) {
        let head = self.head();
        let mut tail = self.tail();
        let mut header = Vec::with_capacity(8);
        while tail + 8 <= head {
            self.copy(tail, 8, &mut header);
            let size = u16::from_ne_bytes([header[6], header[7]]) as u64;
            if size < 8 || tail + size > head {
                break;
            }
            let mut record = Vec::with_capacity(size as usize);
            self.copy(tail, size as usize, &mut record);
            pending.push((record_time(&record), record));
            tail += size;
        }
        self.set_tail(tail);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `map` mapped.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// The reader thread: drain, order, count; sleep until a ring is half full
/// or [`DRAIN_EVERY`] has passed.
pub(crate) fn read(
    rings: Vec<Ring>,
    period_ns: u64,
    kernel: Option<KernelSymbols>,
    stop: &AtomicBool,
) -> Collected {
    let mut state = State {
        events: rings.iter().map(|r| r.event.as_raw_fd()).collect(),
        nominal_ns: period_ns,
        rng: monotonic_ns() | 1,
        kernel,
        ..State::default()
    };
    let mut pending: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut fds: Vec<libc::pollfd> = rings
        .iter()
        .map(|r| libc::pollfd {
            fd: r.event.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        // Checked before draining, so what was written before the stop is read.
        let stopping = stop.load(Ordering::Acquire);
        // Every record older than this is in its ring by now: a record is
        // written when its event happens; the margin covers a virtual CPU
        // paused between the two.
        let cutoff = monotonic_ns().saturating_sub(ORDER_MARGIN_NS);
        for ring in &rings {
            ring.drain(&mut pending);
        }
        pending.sort_by_key(|(t, _)| *t);
        let ready = if stopping {
            pending.len()
        } else {
            pending.partition_point(|(t, _)| *t < cutoff)
        };
        for (_, record) in pending.drain(..ready) {
            state.record(&record);
        }
        if stopping {
            break;
        }
        for f in &mut fds {
            f.revents = 0;
        }
        // SAFETY: valid pollfds; a bounded timeout.
        unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                DRAIN_EVERY.as_millis() as libc::c_int,
            )
        };
    }
    state.collected
}

/// A record's time: a sample's own field, else the trailing `sample_id`'s
/// (`sample_id_all`: pid/tid, then time, last in the record).
pub(crate) fn record_time(r: &[u8]) -> u64 {
    match u32_at(r, 0) {
        Some(RECORD_SAMPLE) => u64_at(r, 24),
        _ => r.len().checked_sub(8).and_then(|i| u64_at(r, i)),
    }
    .unwrap_or(0)
}

pub(crate) fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

pub(crate) fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(i..i + 8)?.try_into().ok()?))
}

/// The NUL-terminated string at `i`.
pub(crate) fn c_str(b: &[u8], i: usize) -> Option<String> {
    let rest = b.get(i..)?;
    let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}
