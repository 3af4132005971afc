//! `memory`: the latency ladder. For each working-set size from 4 KiB to
//! several times the last-level cache, one pointer per 64-byte line is linked
//! into a single random cycle (Sattolo's shuffle), so every load depends on
//! the previous one and no prefetcher can guess the next line. The buffer is
//! allocated once for the largest size (with `try_reserve`), aligned to
//! 2 MiB and offered to transparent huge pages so that TLB misses stay out
//! of the cache plateaus where the kernel (and, in a VM, the host) allows
//! it; every line is written while linking, and each size is chased once
//! before it is timed. A second, TLB ladder (one line per 4 KiB page) shows
//! where address translation starts to cost, so a TLB step is not taken for
//! a cache step.

use crate::ladder::{self, LadderAnalysis, LadderPoint};
use crate::timing::{self, Plan, measurement};
use crate::{CacheSizes, ProbeError, ProbeOptions, ProbeResult};
use std::time::Duration;

const LINE: usize = 64;
const HUGE: usize = 2 << 20;
const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// LLC size assumed when the fingerprint has none.
const FALLBACK_LLC: u64 = 32 * MIB;
/// The largest ladder buffer, by the time it takes (see `run`).
const LADDER_MAX: u64 = 1024 * MIB;
/// The same in quick mode.
const QUICK_LADDER_MAX: u64 = 512 * MIB;

/// A buffer of untouched, 2 MiB-aligned memory.
pub(crate) struct Buffer {
    storage: Vec<u8>,
    offset: usize,
    len: usize,
}

impl Buffer {
    /// Reserves `len` bytes (plus alignment slack) without touching them;
    /// with `huge`, asks for transparent huge pages.
    pub(crate) fn reserve(len: usize, huge: bool) -> Result<Buffer, ProbeError> {
        let mut storage: Vec<u8> = Vec::new();
        storage
            .try_reserve_exact(len + HUGE)
            .map_err(|source| ProbeError::Allocate {
                bytes: len as u64,
                source,
            })?;
        let base = storage.as_mut_ptr() as usize;
        let offset = base.next_multiple_of(HUGE) - base;
        if huge {
            // SAFETY: the range lies inside our own allocation; madvise only
            // changes how the kernel backs it. Failure is harmless.
            unsafe {
                libc::madvise(
                    storage.as_mut_ptr().add(offset).cast(),
                    len,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
        Ok(Buffer {
            storage,
            offset,
            len,
        })
    }

    pub(crate) fn ptr(&mut self) -> *mut u8 {
        // SAFETY: offset < HUGE and the capacity is len + HUGE.
        unsafe { self.storage.as_mut_ptr().add(self.offset) }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// KiB of this buffer backed by huge pages, from /proc/self/smaps.
    pub(crate) fn huge_kib(&mut self) -> Option<u64> {
        let addr = self.ptr() as usize;
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some((a, b)) = first.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = a <= addr && addr < b;
                    continue;
                }
            }
            if inside && let Some(rest) = line.strip_prefix("AnonHugePages:") {
                return rest.trim().trim_end_matches("kB").trim().parse().ok();
            }
        }
        None
    }
}

/// Reserves the largest buffer the machine gives, halving from `want` down
/// to `floor`; the messages say what was refused.
pub(crate) fn reserve_largest(
    want: u64,
    floor: u64,
    huge: bool,
    cap: Option<u64>,
    what: &str,
    messages: &mut Vec<String>,
) -> Option<Buffer> {
    let mut size = want;
    if let Some(cap) = cap
        && size > cap
    {
        while size > cap && size > floor {
            size /= 2;
        }
        messages.push(format!(
            "{what}: {} would exceed the memory limit of {}; continuing with {}",
            fmt_bytes(want),
            fmt_bytes(cap),
            fmt_bytes(size)
        ));
    }
    loop {
        match Buffer::reserve(size as usize, huge) {
            Ok(b) => return Some(b),
            Err(e) if size / 2 >= floor => {
                messages.push(format!(
                    "{what}: {e}; continuing with {}",
                    fmt_bytes(size / 2)
                ));
                size /= 2;
            }
            Err(e) => {
                messages.push(format!("{what}: {e}; skipped"));
                return None;
            }
        }
    }
}

/// Memory the probes may take: the caller's cap, and half of MemAvailable.
pub(crate) fn memory_cap(opts: &ProbeOptions) -> Option<u64> {
    let avail = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024 / 2)
    });
    match (opts.max_buffer, avail) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Links lines `0..lines` of `base` into one random cycle; returns its start.
fn link(base: *mut u8, lines: usize, rng: &mut perfsleuth_stats::Rng) -> *const u8 {
    link_with(base, lines, rng, |i| i * LINE)
}

/// Links `n` slots, slot `i` at byte offset `offset(i)` of `base` (each
/// within the buffer, 8-byte aligned, all distinct), into one random cycle
/// (Sattolo's algorithm: uniformly random, a single cycle); returns its start.
fn link_with(
    base: *mut u8,
    n: usize,
    rng: &mut perfsleuth_stats::Rng,
    offset: impl Fn(usize) -> usize,
) -> *const u8 {
    let mut order: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = rng.below(i);
        order.swap(i, j);
    }
    for k in 0..n {
        let from = offset(order[k] as usize);
        let to = offset(order[(k + 1) % n] as usize);
        // SAFETY: the caller keeps every offset inside the buffer.
        unsafe {
            let next = base.add(to) as usize;
            (base.add(from) as *mut usize).write(next);
        }
    }
    // SAFETY: as above.
    unsafe { base.add(offset(order[0] as usize)) }
}

/// Follows the chain `hops` times.
#[inline(never)]
fn chase(mut p: *const u8, hops: u64) -> *const u8 {
    macro_rules! hop {
        () => {
            // SAFETY: every line of the chain holds the address of another line of it.
            p = unsafe { *(p as *const *const u8) }
        };
    }
    for _ in 0..hops / 8 {
        hop!();
        hop!();
        hop!();
        hop!();
        hop!();
        hop!();
        hop!();
        hop!();
    }
    for _ in 0..hops % 8 {
        hop!();
    }
    p
}

/// Measures the ladder: one point per size (ns per load, median of samples).
fn measure_ladder(
    buf: &mut Buffer,
    sizes: &[u64],
    plan: Plan,
    llc: u64,
    intr: &mut timing::Interruptions,
) -> Vec<LadderPoint> {
    let base = buf.ptr();
    let mut rng = perfsleuth_stats::Rng::new(0x001a_dde4);
    let mut measure = |size: u64, intr: &mut timing::Interruptions| {
        let lines = (size as usize / LINE).max(2);
        let mut p = link(base, lines, &mut rng);
        // Warm: a full round fills the caches that can hold the set.
        let warm = if size <= 2 * llc {
            lines as u64
        } else {
            (lines as u64).min(1 << 18)
        };
        p = chase(p, warm);
        let hops = timing::iterations_for(plan.sample, |n| {
            p = chase(p, n);
        })
        .max(1000);
        let mut per_hop = Vec::with_capacity(plan.samples);
        for _ in 0..plan.samples {
            let ns = timing::time_clean(intr, || p = chase(p, hops));
            per_hop.push(ns / hops as f64);
        }
        std::hint::black_box(p);
        let s = timing::summarize(&per_hop).expect("samples");
        LadderPoint {
            size,
            ns: s.median,
            spread: s.spread,
        }
    };
    let mut points: Vec<LadderPoint> = sizes.iter().map(|&s| measure(s, intr)).collect();
    // A neighbour thrashing a shared cache for a moment leaves noisy points,
    // or points slower than larger sizes (latency never falls with size):
    // measure those again, twice at most, and keep the quieter result (noise
    // only ever adds latency).
    for _ in 0..2 {
        let n = points.len();
        let mut later_min = f64::INFINITY;
        let mut suspect = vec![false; n];
        for i in (0..n).rev() {
            suspect[i] =
                points[i].spread > timing::STABLE_SPREAD || points[i].ns > 1.25 * later_min;
            later_min = later_min.min(points[i].ns);
        }
        if !suspect.iter().any(|&s| s) {
            break;
        }
        for i in (0..n).filter(|&i| suspect[i]) {
            let again = measure(points[i].size, intr);
            if again.ns < points[i].ns {
                points[i] = again;
            }
        }
    }
    points
}

const PAGE: usize = 4096;

/// The TLB ladder: one line per 4 KiB page (at a random line of the page,
/// so lines spread over the cache sets) for 16 to 8192 pages. The data is
/// only 64 bytes per page (512 KiB at most), so it stays in L1/L2 while the pages outgrow the
/// TLBs: the latency above the dense ladder's at the same data size is the
/// cost of address translation (a page walk, nested in a VM whose host maps
/// guest memory with small pages, whatever the guest's own page size).
fn measure_tlb(buf: &mut Buffer, plan: Plan, intr: &mut timing::Interruptions) -> Vec<LadderPoint> {
    let base = buf.ptr();
    let max_pages = (buf.len() / PAGE).min(8192);
    let mut rng = perfsleuth_stats::Rng::new(0x71b);
    let line_of: Vec<u8> = (0..max_pages)
        .map(|_| rng.below(PAGE / LINE) as u8)
        .collect();
    let mut points = Vec::new();
    let mut pages = 16;
    while pages <= max_pages {
        let mut p = link_with(base, pages, &mut rng, |i| {
            i * PAGE + line_of[i] as usize * LINE
        });
        p = chase(p, 4 * pages as u64);
        let hops = timing::iterations_for(plan.sample, |n| {
            p = chase(p, n);
        })
        .max(1000);
        let per_hop: Vec<f64> = (0..plan.samples)
            .map(|_| timing::time_clean(intr, || p = chase(p, hops)) / hops as f64)
            .collect();
        std::hint::black_box(p);
        let s = timing::summarize(&per_hop).expect("samples");
        points.push(LadderPoint {
            size: (pages * PAGE) as u64,
            ns: s.median,
            spread: s.spread,
        });
        pages *= 2;
    }
    points
}

pub(crate) fn run(opts: &ProbeOptions, ctx: &mut crate::Ctx) -> Vec<ProbeResult> {
    let (factor, plan, llc_mult) = if opts.quick {
        (
            2.0,
            Plan {
                sample: Duration::from_micros(300),
                samples: 7,
            },
            4,
        )
    } else {
        (
            2f64.sqrt(),
            Plan {
                sample: Duration::from_micros(500),
                samples: 15,
            },
            8,
        )
    };
    let llc = match opts.caches.l3.or(opts.caches.l2) {
        Some(l) => l,
        None => {
            ctx.messages.push(format!(
                "no cache sizes from the fingerprint: assuming a {} last-level cache",
                fmt_bytes(FALLBACK_LLC)
            ));
            FALLBACK_LLC
        }
    };
    // Time grows with the buffer (linking and chasing it): capped, so a
    // 260 MiB L3 does not make the suite take half a minute (measured on a
    // 105 MiB L3: 840 MiB took 3.6 s, 420 MiB in quick mode 1.1 s).
    let time_cap = if opts.quick {
        QUICK_LADDER_MAX
    } else {
        LADDER_MAX
    };
    let want = (llc * llc_mult).clamp(16 * MIB, time_cap);
    let cap = memory_cap(opts);
    let Some(mut buf) = reserve_largest(want, MIB, true, cap, "memory ladder", &mut ctx.messages)
    else {
        return Vec::new();
    };
    let max = buf.len() as u64;
    if max < 4 * llc {
        let why = if want == time_cap && max >= want {
            " (capped to keep the probe short)"
        } else {
            ""
        };
        ctx.messages.push(format!(
            "memory ladder: stopped at {}{why}, under 4× the last-level cache ({}), before DRAM: the DRAM latency includes cache hits",
            fmt_bytes(max),
            fmt_bytes(llc)
        ));
    }
    let mut sizes = ladder::sizes(4 * KIB, max, factor);
    sizes.retain(|&s| s <= max);
    let points = measure_ladder(&mut buf, &sizes, plan, llc, &mut ctx.intr);
    let tlb = measure_tlb(&mut buf, plan, &mut ctx.intr);
    let huge = buf.huge_kib().map(|k| (k * 1024, max));
    if let Some((h, _)) = huge
        && h < max / 2
    {
        ctx.messages.push(format!(
            "memory ladder: only {} of {} on huge pages: TLB misses add to the latency of large sizes",
            fmt_bytes(h),
            fmt_bytes(max)
        ));
    }
    drop(buf);
    let ghz = ctx.ghz();
    let mut out = report(&points, &opts.caches, huge, factor, ghz, &mut ctx.messages);
    out.extend(report_tlb(&points, &tlb, &out, ghz, &mut ctx.messages));
    out
}

/// Turns a measured ladder into measurements: latency per level, the sizes
/// where latency steps up (next to the fingerprint's), and the ladder itself.
pub(crate) fn report(
    points: &[LadderPoint],
    caches: &CacheSizes,
    huge: Option<(u64, u64)>,
    factor: f64,
    ghz: Option<f64>,
    messages: &mut Vec<String>,
) -> Vec<ProbeResult> {
    let ladder = Ladder {
        points,
        analysis: ladder::analyze(points),
        factor,
        ghz,
    };
    let known: Vec<(&str, u64)> = [("l1", caches.l1d), ("l2", caches.l2), ("l3", caches.l3)]
        .into_iter()
        .filter_map(|(n, s)| s.map(|s| (n, s)))
        .collect();
    let mut out = if known.is_empty() {
        messages.push("cache sizes unknown: levels are named by their order".to_string());
        ladder.unnamed_levels()
    } else {
        ladder.named_levels(&known, huge, messages)
    };
    out.extend(ladder.points());
    out
}

/// A measured ladder and what its measurements are reported with.
struct Ladder<'a> {
    points: &'a [LadderPoint],
    analysis: LadderAnalysis,
    factor: f64,
    ghz: Option<f64>,
}

impl Ladder<'_> {
    /// A level's latency (a headline measurement).
    fn latency(&self, name: &str, ns: f64, spread: f64, note: Option<String>) -> ProbeResult {
        let s = timing::Summary {
            median: ns,
            spread,
            min: ns,
            max: ns,
            n: usize::MAX,
        };
        let mut m = measurement("memory", name, &s, "ns", true, self.ghz);
        m.headline = true;
        m.note = note;
        m
    }

    /// Without the fingerprint's cache sizes: the levels by their order,
    /// the last one DRAM.
    fn unnamed_levels(&self) -> Vec<ProbeResult> {
        let mut out = Vec::new();
        let last = self.analysis.plateaus.len() - 1;
        for (k, p) in self.analysis.plateaus.iter().enumerate() {
            let name = if k == last && k > 0 {
                "dram_latency".to_string()
            } else {
                format!("l{}_latency", k + 1)
            };
            out.push(self.latency(&name, p.level_ns, p.spread, None));
        }
        for (k, s) in self.analysis.steps.iter().enumerate() {
            out.push(size_measurement(
                &format!("l{}_size", k + 1),
                s.size,
                self.points,
                self.factor,
                false,
                None,
            ));
        }
        out
    }

    /// With the fingerprint's cache sizes (`known`): each cache's size and
    /// latency, DRAM's latency, and a message per step no cache explains.
    fn named_levels(
        &self,
        known: &[(&str, u64)],
        huge: Option<(u64, u64)>,
        messages: &mut Vec<String>,
    ) -> Vec<ProbeResult> {
        let mut out = Vec::new();
        let assignment = self.assign_steps(known);
        let mut prev_size = 0u64;
        for (&(name, size), assigned) in known.iter().zip(&assignment) {
            match *assigned {
                Some(k) => out.extend(self.matched_level(name, size, k, messages)),
                None => out.extend(self.unmatched_level(name, size, prev_size, messages)),
            }
            prev_size = size;
        }
        let huge_note = huge
            .map(|(h, total)| format!("; {} of {} on huge pages", fmt_bytes(h), fmt_bytes(total)))
            .unwrap_or_default();
        out.extend(self.dram_latency(assignment.last().copied().flatten(), &huge_note));
        for (k, s) in self.analysis.steps.iter().enumerate() {
            if !assignment.contains(&Some(k)) {
                messages.push(format!(
                    "memory ladder: latency also steps up after {} (×{:.1}), which matches no cache of the fingerprint (TLB reach, page walks, or a shared cache)",
                    fmt_bytes(s.size),
                    s.rise
                ));
            }
        }
        out
    }

    /// Which step belongs to which cache: in order when there are as many
    /// steps as caches (the ladder then has exactly the expected shape),
    /// else the nearest step within 3 octaves, in ascending order.
    fn assign_steps(&self, known: &[(&str, u64)]) -> Vec<Option<usize>> {
        let steps = &self.analysis.steps;
        if steps.len() == known.len() {
            return (0..known.len()).map(Some).collect();
        }
        let mut last: Option<usize> = None;
        known
            .iter()
            .map(|&(_, size)| {
                let best = steps
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| last.is_none_or(|l| *k > l))
                    .map(|(k, s)| (k, ladder::steps_apart(s.size, size, 2.0)))
                    .filter(|&(_, d)| d <= 3.0)
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|(k, _)| k);
                if best.is_some() {
                    last = best;
                }
                best
            })
            .collect()
    }

    /// Cache `name` (the fingerprint's `size`) at step `k`: its size, next
    /// to the fingerprint's, and its plateau's latency.
    fn matched_level(
        &self,
        name: &str,
        size: u64,
        k: usize,
        messages: &mut Vec<String>,
    ) -> [ProbeResult; 2] {
        let step = &self.analysis.steps[k];
        let apart = ladder::steps_apart(step.size, size, self.factor);
        let note = format!(
            "latency steps up after {} (×{:.1} by {}); the fingerprint's {} is {}: {}",
            fmt_bytes(step.size),
            step.rise,
            fmt_bytes(step.next_size),
            name.to_uppercase(),
            fmt_bytes(size),
            if apart < 0.01 {
                "the same size".to_string()
            } else {
                format!("{apart:.1} ladder step(s) apart")
            }
        );
        let shortfall = apart > 1.01 && step.size < size;
        if shortfall {
            messages.push(format!(
                "memory ladder: the {} behaves like {} where the fingerprint says {}: a shared cache gives this thread less (other cores, or other tenants of a VM host, use it too)",
                name.to_uppercase(),
                fmt_bytes(step.size),
                fmt_bytes(size)
            ));
        } else if apart > 1.01 {
            messages.push(format!(
                "memory ladder: the {} behaves like {} where the fingerprint says {}",
                name.to_uppercase(),
                fmt_bytes(step.size),
                fmt_bytes(size)
            ));
        }
        let p = &self.analysis.plateaus[k];
        [
            size_measurement(
                &format!("{name}_size"),
                step.size,
                self.points,
                self.factor,
                shortfall,
                Some(note),
            ),
            self.latency(
                &format!("{name}_latency"),
                p.level_ns,
                p.spread,
                Some(format!(
                    "plateau {}..{}",
                    fmt_bytes(self.points[p.first].size),
                    fmt_bytes(self.points[p.last].size)
                )),
            ),
        ]
    }

    /// Cache `name` (the fingerprint's `size`, the cache below it
    /// `prev_size`) without a step of its own: the latency in the middle of
    /// its range.
    fn unmatched_level(
        &self,
        name: &str,
        size: u64,
        prev_size: u64,
        messages: &mut Vec<String>,
    ) -> Option<ProbeResult> {
        messages.push(format!(
            "memory ladder: no latency step near the fingerprint's {} size ({})",
            name.to_uppercase(),
            fmt_bytes(size)
        ));
        let mid = ((prev_size.max(4 * KIB) as f64) * size as f64).sqrt();
        let pt = self.points.iter().min_by(|a, b| {
            ladder::steps_apart(a.size, mid as u64, 2.0)
                .total_cmp(&ladder::steps_apart(b.size, mid as u64, 2.0))
        })?;
        Some(self.latency(
            &format!("{name}_latency"),
            pt.ns,
            pt.spread,
            Some(format!(
                "no step detected; latency at {}",
                fmt_bytes(pt.size)
            )),
        ))
    }

    /// DRAM: the last plateau, when it lies beyond the last-level cache's
    /// step (`llc_step`), else the largest size's latency.
    fn dram_latency(&self, llc_step: Option<usize>, huge_note: &str) -> Option<ProbeResult> {
        let last = self.analysis.plateaus.len() - 1;
        match (llc_step, self.points.last()) {
            (Some(k), _) if k < last => {
                let p = &self.analysis.plateaus[last];
                Some(self.latency(
                    "dram_latency",
                    p.level_ns,
                    p.spread,
                    Some(format!(
                        "plateau {}..{}{}",
                        fmt_bytes(self.points[p.first].size),
                        fmt_bytes(self.points[p.last].size),
                        huge_note
                    )),
                ))
            }
            (_, Some(pt)) => Some(self.latency(
                "dram_latency",
                pt.ns,
                pt.spread,
                Some(format!(
                    "no plateau beyond the last-level cache; latency at {} (may include cache hits){}",
                    fmt_bytes(pt.size),
                    huge_note
                )),
            )),
            (_, None) => None,
        }
    }

    /// The ladder itself, one measurement per size.
    fn points(&self) -> Vec<ProbeResult> {
        self.points
            .iter()
            .map(|p| {
                let s = timing::Summary::point(p.ns, p.spread);
                measurement(
                    "memory",
                    &format!("ladder_{}", p.size),
                    &s,
                    "ns",
                    true,
                    self.ghz,
                )
            })
            .collect()
    }
}

/// The TLB ladder against the dense one: the translation cost per load at
/// each span is the TLB ladder's latency minus the dense ladder's at the
/// same data size (64 bytes per page). Its steps are the TLBs' reach.
pub(crate) fn report_tlb(
    dense: &[LadderPoint],
    tlb: &[LadderPoint],
    so_far: &[ProbeResult],
    ghz: Option<f64>,
    messages: &mut Vec<String>,
) -> Vec<ProbeResult> {
    let mut out = Vec::new();
    let Some(base) = dense.first().map(|p| p.ns) else {
        return out;
    };
    let dense_at = |size: u64| {
        dense
            .iter()
            .min_by(|a, b| {
                ladder::steps_apart(a.size, size, 2.0)
                    .total_cmp(&ladder::steps_apart(b.size, size, 2.0))
            })
            .map(|p| p.ns)
            .unwrap_or(base)
    };
    // Translation cost, offset by the L1 latency so the step analysis sees
    // ratios of a positive latency.
    let extra: Vec<LadderPoint> = tlb
        .iter()
        .map(|p| LadderPoint {
            size: p.size,
            ns: (p.ns - dense_at(p.size / (PAGE / LINE) as u64)).max(0.0) + base,
            spread: p.spread,
        })
        .collect();
    let a = ladder::analyze(&extra);
    if let Some(step) = a.steps.last() {
        let mut m = size_measurement("tlb_reach", step.size, &extra, 2.0, false, None);
        m.note = Some(format!(
            "loads spread over more than {} of 4 KiB pages pay page walks{}",
            fmt_bytes(step.size),
            if a.steps.len() > 1 {
                format!(" (first TLB level reaches {})", fmt_bytes(a.steps[0].size))
            } else {
                String::new()
            }
        ));
        out.push(m);
        for s in so_far
            .iter()
            .filter(|m| m.metric.ends_with("_size") && m.unit == "bytes")
        {
            let apart = ladder::steps_apart(s.value as u64, step.size, 2.0);
            if apart <= 1.0 && s.metric != "l1_size" {
                messages.push(format!(
                    "memory ladder: the {} step ({}) is close to the TLB reach ({}): beyond it every load also pays a page walk",
                    s.metric.trim_end_matches("_size").to_uppercase(),
                    fmt_bytes(s.value as u64),
                    fmt_bytes(step.size)
                ));
            }
        }
    }
    if let (Some(last), Some(p)) = (extra.last(), tlb.last()) {
        let walk = last.ns - base;
        let mut m = measurement(
            "memory",
            "page_walk",
            &timing::Summary::point(walk.max(0.0), p.spread),
            "ns",
            true,
            ghz,
        );
        m.headline = true;
        m.note = Some(format!(
            "extra latency per load with one line in each of {} pages",
            p.size / PAGE as u64
        ));
        if walk > 0.0 {
            out.push(m);
        }
    }
    for p in tlb {
        out.push(measurement(
            "memory",
            &format!("tlb_{}", p.size),
            &timing::Summary::point(p.ns, p.spread),
            "ns",
            true,
            ghz,
        ));
    }
    out
}

/// A size where latency steps up. Its `spread` is the ladder's resolution
/// (factor − 1: the step can only be placed on a ladder size), so a move by
/// one ladder step is never called significant; it is `stable` when the
/// ladder points on both sides of the step were, and `shortfall` (a shared
/// cache that gave this thread less than its size) did not occur.
fn size_measurement(
    metric: &str,
    size: u64,
    points: &[LadderPoint],
    factor: f64,
    shortfall: bool,
    note: Option<String>,
) -> ProbeResult {
    let i = points.iter().position(|p| p.size == size);
    let neighbours_stable = i.is_some_and(|i| {
        points[i..(i + 2).min(points.len())]
            .iter()
            .all(|p| p.spread <= timing::STABLE_SPREAD)
    });
    ProbeResult {
        probe: "memory".into(),
        metric: metric.into(),
        value: size as f64,
        unit: "bytes".into(),
        lower_is_better: false,
        cycles: None,
        spread: factor - 1.0,
        stable: neighbours_stable && !shortfall,
        headline: true,
        note,
    }
}

/// Bytes in binary units, e.g. "32 KiB", "1.5 MiB" (the one size formatter,
/// [`perfsleuth_model::quantity::format_size`]).
pub fn fmt_bytes(b: u64) -> String {
    perfsleuth_model::quantity::format_size(b as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_is_one_cycle_over_every_line() {
        let mut buf = Buffer::reserve(64 * 1024, false).unwrap();
        let base = buf.ptr();
        let lines = 1000;
        let mut rng = perfsleuth_stats::Rng::new(1);
        let start = link(base, lines, &mut rng);
        let mut seen = vec![false; lines];
        let mut p = start;
        for _ in 0..lines {
            let idx = (p as usize - base as usize) / LINE;
            assert!(!seen[idx], "line {idx} visited twice");
            seen[idx] = true;
            p = chase(p, 1);
        }
        assert_eq!(p, start);
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn a_cap_smaller_than_the_ladder_shrinks_it_with_a_message() {
        let mut msgs = Vec::new();
        let b = reserve_largest(
            64 * MIB,
            MIB,
            false,
            Some(20 * MIB),
            "memory ladder",
            &mut msgs,
        )
        .unwrap();
        assert_eq!(b.len() as u64, 16 * MIB);
        assert!(
            msgs[0].contains("64 MiB") && msgs[0].contains("16 MiB"),
            "{msgs:?}"
        );
        // An allocation the allocator refuses (beyond the address space).
        let mut msgs = Vec::new();
        assert!(Buffer::reserve(usize::MAX / 2, false).is_err());
        let b = reserve_largest(1 << 62, 1 << 61, false, None, "bandwidth", &mut msgs);
        assert!(b.is_none());
        assert!(
            msgs.iter().all(|m| m.contains("cannot allocate")),
            "{msgs:?}"
        );
    }

    #[test]
    fn report_names_levels_after_the_fingerprint() {
        let caches = CacheSizes {
            l1d: Some(32 * KIB),
            l2: Some(MIB),
            l3: Some(32 * MIB),
        };
        let lat = |s: u64| {
            if s <= 32 * KIB {
                1.0
            } else if s <= MIB {
                3.5
            } else if s <= 32 * MIB {
                12.0
            } else {
                90.0
            }
        };
        let points: Vec<LadderPoint> = ladder::sizes(4 * KIB, 128 * MIB, 2.0)
            .into_iter()
            .map(|size| LadderPoint {
                size,
                ns: lat(size),
                spread: 0.02,
            })
            .collect();
        let mut msgs = Vec::new();
        let ms = report(&points, &caches, None, 2.0, Some(3.0), &mut msgs);
        let get = |m: &str| {
            ms.iter()
                .find(|x| x.metric == m)
                .unwrap_or_else(|| panic!("{m}: {ms:#?}"))
        };
        assert_eq!(get("l1_size").value, (32 * KIB) as f64);
        assert_eq!(get("l2_size").value, MIB as f64);
        assert_eq!(get("l3_size").value, (32 * MIB) as f64);
        assert_eq!(get("l1_latency").value, 1.0);
        assert_eq!(get("l2_latency").cycles, Some(10.5));
        assert_eq!(get("dram_latency").value, 90.0);
        assert!(
            get("l2_size")
                .note
                .as_ref()
                .unwrap()
                .contains("the same size")
        );
        assert!(msgs.is_empty(), "{msgs:?}");
        assert!(ms.iter().any(|m| m.metric == "ladder_4096"));
        // Without a fingerprint: named by order.
        let mut msgs = Vec::new();
        let ms = report(&points, &CacheSizes::default(), None, 2.0, None, &mut msgs);
        assert!(
            ms.iter()
                .any(|m| m.metric == "dram_latency" && m.value == 90.0)
        );
        assert!(ms.iter().any(|m| m.metric == "l3_size"));
        assert!(msgs[0].contains("unknown"));
    }

    #[test]
    fn bytes_format() {
        assert_eq!(fmt_bytes(32 * KIB), "32 KiB");
        assert_eq!(fmt_bytes(1536 * KIB), "1.5 MiB");
        // The unit every other byte count in perfsleuth uses.
        assert_eq!(fmt_bytes(100), "100 B");
        assert_eq!(fmt_bytes(45 * KIB + 256), "45.2 KiB");
    }
}
