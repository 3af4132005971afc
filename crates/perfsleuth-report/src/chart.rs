//! The one chart kit, for the HTML report and `--plot`: distributions (box
//! and strip), progressions in run order, changes with their intervals
//! against a noise band, series, the memory ladder, sparklines and the scale
//! chart ([`scaling`]). Hand-written SVG: every element carries a class, not
//! a colour, so the one stylesheet ([`CHART_CSS`](crate::markup::CHART_CSS))
//! gives light and dark themes (and [`standalone`] inlines it for a lone
//! `.svg`); every chart has a `<title>`, and the page puts a table beside it.
//! Ticks fall at 1-2-5 steps ([`ticks`]) and read as [`tick_label`] writes
//! them; text goes through [`escape`](crate::markup::escape).
//!
//! Output is deterministic and never holds `NaN` or `inf`: non-finite
//! values are left out. Lanes with more than [`MAX_DRAWN`] samples are
//! thinned for drawing only (every k-th in order, the smallest and largest
//! kept); the statistics drawn (quartiles, median, its interval) come from
//! every sample.

use crate::markup::{escape, trim_zeros};
use perfsleuth_model::quantity::MISSING;
use std::fmt::Write as _;

mod usl;

pub use usl::{ScaleChart, ScalePoint, scaling};

/// Samples drawn per lane at most; the rest are thinned out of the picture.
pub const MAX_DRAWN: usize = 400;

const WIDTH: f64 = 760.0;
const LEFT: f64 = 190.0;
const RIGHT: f64 = 740.0;
const TOP: f64 = 44.0;
const LANE: f64 = 46.0;
const AXIS_ROOM: f64 = 46.0;

/// A coordinate of these charts: one decimal is finer than a pixel.
fn n(v: f64) -> String {
    crate::markup::coord(v, 1)
}

/// The 1-2-5 step that divides `range` into at most about `target`
/// intervals (1 where the range is empty or not finite).
pub fn nice_step(range: f64, target: f64) -> f64 {
    let raw = range / target.max(1.0);
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// The multiples of `step` within `lo..=hi` (a little tolerance at both
/// ends), snapped to the step's decimals so 0.6000000000000001 prints as
/// 0.6; none where the range is not finite or would need over 1 000.
pub fn ticks_with_step(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite() && step.is_finite() && step > 0.0 && hi >= lo) {
        return Vec::new();
    }
    let first = (lo / step - 1e-9).ceil();
    let last = (hi / step + 1e-9).floor();
    if !(last - first).is_finite() || last - first > 1000.0 {
        return Vec::new();
    }
    let decimals = (-step.log10().floor()).clamp(0.0, 300.0) as i32;
    let scale = 10f64.powi(decimals);
    let mut out = Vec::new();
    let mut k = first;
    while k <= last {
        let t = (k * step * scale).round() / scale;
        out.push(if t == 0.0 { 0.0 } else { t });
        k += 1.0;
    }
    out
}

/// Ticks at 1-2-5 steps covering `lo..hi`, at most about `target` of them
/// (`lo` alone where the range is empty).
pub fn ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    ticks_with_step(lo, hi, nice_step(hi - lo, target as f64))
}

/// A label without the trailing zeros of its leading number: "10 ms", not
/// "10.000 ms"; "1.5e-5", not "1.50e-5".
fn tidy(label: &str) -> String {
    let (num, rest) =
        match label.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+')) {
            Some(i) => label.split_at(i),
            None => (label, ""),
        };
    format!("{}{rest}", trim_zeros(num))
}

/// The one text of an axis tick on every chart: `fmt`'s text of `v` (a
/// duration, a percentage, an SI number), its number's trailing zeros
/// dropped, because tick values are round.
pub(crate) fn tick_label(fmt: &dyn Fn(f64) -> String, v: f64) -> String {
    tidy(&fmt(v))
}

/// A number without unit at three significant digits with an SI prefix, in
/// e-notation below 0.001, the missing value when not finite: "7", "2.50",
/// "200k", "1.23M", "1.50e-5" ([`tick_label`] trims them). Unlike
/// `format_si`, it reaches P and E and never prints a long run of zeros.
pub(crate) fn si_number(v: f64) -> String {
    if !v.is_finite() {
        return MISSING.to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let a = v.abs();
    if a < 1e-3 {
        return format!("{v:.2e}");
    }
    const PREFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    let mut exp3 = if a >= 1000.0 {
        ((a.log10() / 3.0).floor() as usize).min(PREFIXES.len() - 1)
    } else {
        0
    };
    loop {
        let scaled = v / 1000f64.powi(exp3 as i32);
        let digits = scaled.abs().log10().floor();
        let decimals = (2.0 - digits).clamp(0.0, 6.0) as usize;
        let s = format!("{scaled:.decimals$}");
        let rounded: f64 = s.parse().unwrap_or(scaled);
        if rounded.abs() >= 1000.0 && exp3 + 1 < PREFIXES.len() {
            exp3 += 1;
            continue;
        }
        return format!("{s}{}", PREFIXES[exp3]);
    }
}

/// A map from data to pixels: linear, or logarithmic (then `lo` and `hi`
/// are the log10 of the range's ends).
#[derive(Debug, Clone, Copy)]
struct Scale {
    lo: f64,
    hi: f64,
    px_lo: f64,
    px_hi: f64,
    log: bool,
}

impl Scale {
    fn new(lo: f64, hi: f64, px_lo: f64, px_hi: f64) -> Scale {
        let (lo, hi) = if hi > lo {
            (lo, hi)
        } else {
            let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.05 };
            (lo - pad, hi + pad)
        };
        Scale {
            lo,
            hi,
            px_lo,
            px_hi,
            log: false,
        }
    }

    /// A log10 scale over `lo..hi` (both above 0), 3 % of the span padded
    /// on each side.
    fn log(lo: f64, hi: f64, px_lo: f64, px_hi: f64) -> Scale {
        let (a, b) = (lo.log10(), hi.log10());
        let pad = (b - a) * 0.03;
        Scale {
            log: true,
            ..Scale::new(a - pad, b + pad, px_lo, px_hi)
        }
    }

    fn at(&self, v: f64) -> f64 {
        let v = if self.log { v.log10() } else { v };
        self.px_lo + (v - self.lo) / (self.hi - self.lo) * (self.px_hi - self.px_lo)
    }

    /// Where the ticks go, in data values: 1-2-5 steps, on a log scale
    /// 1, 2 and 5 of each decade.
    fn ticks(&self, target: usize) -> Vec<f64> {
        if self.log {
            decade_ticks(self.lo, self.hi)
        } else {
            ticks(self.lo, self.hi, target)
        }
    }
}

/// 1, 2 and 5 times each power of ten whose log10 lies in `lo..=hi`.
fn decade_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    if !(lo.is_finite() && hi.is_finite()) {
        return out;
    }
    let mut d = lo.floor() as i32;
    while f64::from(d) <= hi {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(d);
            if (lo..=hi).contains(&v.log10()) {
                out.push(v);
            }
        }
        d += 1;
    }
    out
}

/// Lanes whose values span more than this factor get a log axis: on a
/// linear one, a 1 ms benchmark beside a 150 ms one is a smudge at zero.
const LOG_SPAN: f64 = 20.0;

/// `lo..hi` with a little room on both sides.
fn padded(lo: f64, hi: f64) -> (f64, f64) {
    // A constant (an exact count) gets ±2 % around it, so its ticks read.
    if (hi - lo).abs() <= hi.abs().max(lo.abs()) * 1e-9 {
        let pad = if hi == 0.0 { 1.0 } else { hi.abs() * 0.02 };
        return (lo - pad, hi + pad);
    }
    let span = (hi - lo).abs();
    (lo - span * 0.04, hi + span * 0.04)
}

fn open(height: f64, title: &str, desc: &str) -> String {
    format!(
        r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img"><title>{t}</title><desc>{d}</desc><text class="title" x="{x}" y="22">{t}</text>"#,
        w = n(WIDTH),
        h = n(height),
        t = escape(title),
        d = escape(desc),
        x = n(LEFT),
    )
}

/// The x axis at `y` with ticks and their labels, and grid lines up to `top`.
fn x_axis(out: &mut String, s: &Scale, y: f64, top: f64, fmt: &dyn Fn(f64) -> String, label: &str) {
    x_axis_at(out, s, y, top, fmt, label, &s.ticks(6));
}

fn x_axis_at(
    out: &mut String,
    s: &Scale,
    y: f64,
    top: f64,
    fmt: &dyn Fn(f64) -> String,
    label: &str,
    at: &[f64],
) {
    for &t in at {
        let x = s.at(t);
        let _ = write!(
            out,
            r#"<line class="grid" x1="{x}" y1="{top}" x2="{x}" y2="{y}"/><text class="tick" x="{x}" y="{ty}" text-anchor="middle">{l}</text>"#,
            x = n(x),
            top = n(top),
            y = n(y),
            ty = n(y + 16.0),
            l = escape(&tick_label(fmt, t)),
        );
    }
    let _ = write!(
        out,
        r#"<line class="axis" x1="{l}" y1="{y}" x2="{r}" y2="{y}"/><text class="label" x="{c}" y="{ly}" text-anchor="middle">{t}</text>"#,
        l = n(s.px_lo),
        r = n(s.px_hi),
        y = n(y),
        c = n((s.px_lo + s.px_hi) / 2.0),
        ly = n(y + 36.0),
        t = escape(label),
    );
}

/// Many dots as one path of zero-length strokes with round caps: a sample
/// costs about 14 bytes instead of a `<circle>`'s 45, which keeps a report
/// of 100 benchmarks × 1 000 samples under 2 MB. One `M x y h0` per dot.
fn dots_path(out: &mut String, class: &str, dots: &[(f64, f64)]) {
    if dots.is_empty() {
        return;
    }
    let _ = write!(out, r#"<path class="{class}" d=""#);
    for (x, y) in dots {
        let _ = write!(out, "M{} {}h0", n(*x), n(*y));
    }
    out.push_str(r#""/>"#);
}

/// The y axis: grid lines with their labels at 1-2-5 ticks, and the
/// axis label turned along it.
fn y_axis(out: &mut String, y: &Scale, bottom: f64, fmt: &dyn Fn(f64) -> String, label: &str) {
    for t in y.ticks(5) {
        let _ = write!(
            out,
            r#"<line class="grid" x1="{l}" y1="{p}" x2="{r}" y2="{p}"/><text class="tick" x="{tx}" y="{ty}" text-anchor="end">{v}</text>"#,
            l = n(LEFT),
            r = n(RIGHT),
            p = n(y.at(t)),
            tx = n(LEFT - 6.0),
            ty = n(y.at(t) + 4.0),
            v = escape(&tick_label(fmt, t)),
        );
    }
    let _ = write!(
        out,
        r#"<text class="label" x="{x}" y="{y}" text-anchor="middle" transform="rotate(-90 {x} {y})">{t}</text>"#,
        x = n(LEFT - 70.0),
        y = n((TOP + bottom) / 2.0),
        t = escape(label),
    );
}

/// Indices of `len` samples to draw: all, or every k-th with the first and
/// last of `order` (the smallest and largest when sorted) kept.
pub fn thinned(len: usize) -> Vec<usize> {
    if len <= MAX_DRAWN {
        return (0..len).collect();
    }
    let step = len as f64 / (MAX_DRAWN - 1) as f64;
    let mut out: Vec<usize> = (0..MAX_DRAWN - 1)
        .map(|i| (i as f64 * step) as usize)
        .collect();
    out.push(len - 1);
    out.dedup();
    out
}

/// One lane of a distribution chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    /// Its label (a benchmark name).
    pub label: String,
    /// Every sample, in run order.
    pub values: Vec<f64>,
    /// The median's confidence interval, drawn as a band.
    pub median_ci: Option<(f64, f64)>,
}

/// Box (quartiles, whiskers at 1.5 IQR), median, its interval and every
/// sample as a strip, one lane per benchmark on a shared axis.
pub fn distribution(
    title: &str,
    axis_label: &str,
    fmt: &dyn Fn(f64) -> String,
    lanes: &[Lane],
) -> String {
    let finite = |v: &[f64]| -> Vec<f64> {
        let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        s.sort_by(f64::total_cmp);
        s
    };
    let all: Vec<f64> = lanes.iter().flat_map(|l| finite(&l.values)).collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let s = if lo > 0.0 && hi / lo > LOG_SPAN {
        Scale::log(lo, hi, LEFT, RIGHT)
    } else if lo.is_finite() {
        let (lo, hi) = padded(lo, hi);
        Scale::new(lo, hi, LEFT, RIGHT)
    } else {
        Scale::new(0.0, 1.0, LEFT, RIGHT)
    };
    let axis_label = if s.log {
        format!("{axis_label} (log scale)")
    } else {
        axis_label.to_string()
    };
    let height = TOP + LANE * lanes.len().max(1) as f64 + AXIS_ROOM;
    let bottom = TOP + LANE * lanes.len().max(1) as f64;
    let mut desc = String::new();
    let mut body = String::new();
    for (i, lane) in lanes.iter().enumerate() {
        let sorted = finite(&lane.values);
        let mid = TOP + LANE * i as f64 + LANE / 2.0;
        let _ = write!(
            body,
            r#"<text class="lane" x="{x}" y="{y}" text-anchor="end">{l}</text>"#,
            x = n(LEFT - 10.0),
            y = n(mid + 4.0),
            l = escape(&crate::shortened(&lane.label, 26)),
        );
        let q = |p: f64| perfsleuth_stats::percentile(&sorted, p);
        let (Some(q1), Some(med), Some(q3)) = (q(25.0), q(50.0), q(75.0)) else {
            let _ = write!(desc, "{}: no samples. ", lane.label);
            continue;
        };
        let iqr = q3 - q1;
        let wlo = sorted
            .iter()
            .copied()
            .find(|v| *v >= q1 - 1.5 * iqr)
            .unwrap_or(q1);
        let whi = sorted
            .iter()
            .rev()
            .copied()
            .find(|v| *v <= q3 + 1.5 * iqr)
            .unwrap_or(q3);
        let _ = write!(
            desc,
            "{}: median {}, quartiles {} to {}, {} samples. ",
            lane.label,
            fmt(med),
            fmt(q1),
            fmt(q3),
            sorted.len()
        );
        if let Some((a, b)) = lane.median_ci
            && a.is_finite()
            && b.is_finite()
        {
            let _ = write!(
                body,
                r#"<rect class="ci" x="{x}" y="{y}" width="{w}" height="{h}"><title>median 95% CI {a} … {b}</title></rect>"#,
                x = n(s.at(a)),
                y = n(mid - 17.0),
                w = n((s.at(b) - s.at(a)).max(1.0)),
                h = n(34.0),
                a = escape(&fmt(a)),
                b = escape(&fmt(b)),
            );
        }
        let _ = write!(
            body,
            r#"<line class="whisker" x1="{a}" y1="{y}" x2="{b}" y2="{y}"/><rect class="box" x="{x}" y="{by}" width="{w}" height="14"><title>quartiles {q1} … {q3}</title></rect><line class="median" x1="{m}" y1="{my1}" x2="{m}" y2="{my2}"><title>median {mt}</title></line>"#,
            a = n(s.at(wlo)),
            b = n(s.at(whi)),
            y = n(mid - 8.0),
            x = n(s.at(q1)),
            by = n(mid - 15.0),
            w = n((s.at(q3) - s.at(q1)).max(1.0)),
            q1 = escape(&fmt(q1)),
            q3 = escape(&fmt(q3)),
            m = n(s.at(med)),
            my1 = n(mid - 17.0),
            my2 = n(mid + 1.0),
            mt = escape(&fmt(med)),
        );
        // The strip: every sample (thinned when many), jittered in a fixed pattern.
        let values: Vec<f64> = lane
            .values
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        let mut order: Vec<usize> = (0..values.len()).collect();
        order.sort_by(|a, b| values[*a].total_cmp(&values[*b]));
        let dots: Vec<(f64, f64)> = thinned(order.len())
            .into_iter()
            .enumerate()
            .map(|(k, idx)| {
                let jitter = ((k * 7919) % 13) as f64 - 6.0;
                (s.at(values[order[idx]]), mid + 11.0 + jitter * 0.8)
            })
            .collect();
        dots_path(&mut body, "pts", &dots);
    }
    let mut out = open(height, title, desc.trim_end());
    x_axis(&mut out, &s, bottom, TOP, fmt, &axis_label);
    out.push_str(&body);
    out.push_str("</svg>");
    out
}

/// Samples in run order (x: the sample's index, y: its value), coloured by
/// round, with the rounds' boundaries marked.
pub fn progression(
    title: &str,
    axis_label: &str,
    fmt: &dyn Fn(f64) -> String,
    values: &[f64],
    rounds: &[u32],
) -> String {
    const HEIGHT: f64 = 260.0;
    let bottom = HEIGHT - AXIS_ROOM - 10.0;
    let ys: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() {
        padded(lo, hi)
    } else {
        (0.0, 1.0)
    };
    let x = Scale::new(0.0, values.len().max(2) as f64 - 1.0, LEFT, RIGHT);
    let y = Scale::new(lo, hi, bottom, TOP);
    let rounds_seen = rounds.iter().copied().max().map_or(1, |m| m + 1);
    let desc = format!(
        "{} samples in run order over {} round{}, from {} to {}.",
        ys.len(),
        rounds_seen,
        if rounds_seen == 1 { "" } else { "s" },
        if lo.is_finite() {
            fmt(lo)
        } else {
            MISSING.into()
        },
        if hi.is_finite() {
            fmt(hi)
        } else {
            MISSING.into()
        },
    );
    let mut out = open(HEIGHT, title, &desc);
    y_axis(&mut out, &y, bottom, fmt, axis_label);
    // Whole samples only: no tick between two of them.
    let mut whole: Vec<f64> = ticks(x.lo, x.hi, 6)
        .into_iter()
        .filter(|t| t.fract() == 0.0)
        .collect();
    whole.dedup();
    x_axis_at(
        &mut out,
        &x,
        bottom,
        TOP,
        &|v| format!("{}", v.round() as i64 + 1),
        "sample, in run order",
        &whole,
    );
    // Round boundaries.
    for i in 1..rounds.len() {
        if rounds[i] != rounds[i - 1] {
            let px = x.at(i as f64 - 0.5);
            let _ = write!(
                out,
                r#"<line class="round" x1="{x}" y1="{t}" x2="{x}" y2="{b}"/><text class="tick" x="{tx}" y="{ty}">r{r}</text>"#,
                x = n(px),
                t = n(TOP),
                b = n(bottom),
                tx = n(px + 3.0),
                ty = n(TOP + 10.0),
                r = rounds[i] + 1,
            );
        }
    }
    // Alternate rounds in alternate colours.
    let mut dots: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
    for i in thinned(values.len()) {
        let v = values[i];
        if !v.is_finite() {
            continue;
        }
        let round = rounds.get(i).copied().unwrap_or(0) as usize;
        dots[round % 2].push((x.at(i as f64), y.at(v)));
    }
    dots_path(&mut out, "pts", &dots[0]);
    dots_path(&mut out, "pts r1", &dots[1]);
    out.push_str("</svg>");
    out
}

/// One change with its interval, for [`changes`].
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// What changed (a benchmark and metric).
    pub label: String,
    /// The relative change (candidate / baseline − 1).
    pub change: f64,
    /// Its interval.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// The noise band (±, relative) a change must leave.
    pub band: f64,
    /// The verdict, as its CSS class (`regressed`, `improved`, …).
    pub verdict: String,
}

/// A change as an axis tick: "+20 %", "0 %", "-5 %".
fn percent_tick(v: f64) -> String {
    let p = 100.0 * v;
    if p.abs() < 1e-9 {
        "0%".into()
    } else {
        let digits = if p.abs() < 10.0 && p.fract().abs() > 1e-9 {
            1
        } else {
            0
        };
        format!("{:+.*}%", digits, p)
    }
}

/// Each change as a point with its interval against its shaded noise band
/// around zero, coloured by verdict.
pub fn changes(title: &str, rows: &[Change]) -> String {
    let fin = |v: f64| if v.is_finite() { Some(v) } else { None };
    let mut lo: f64 = -0.02;
    let mut hi: f64 = 0.02;
    for r in rows {
        for v in [fin(r.low), fin(r.high), fin(r.band), fin(-r.band)]
            .into_iter()
            .flatten()
        {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    let (lo, hi) = padded(lo, hi);
    let s = Scale::new(lo, hi, LEFT, RIGHT);
    let bottom = TOP + LANE * rows.len().max(1) as f64;
    let height = bottom + AXIS_ROOM;
    let pct = |v: f64| crate::format_change(v);
    let mut desc = String::new();
    let mut body = String::new();
    let zero = s.at(0.0);
    let _ = write!(
        body,
        r#"<line class="zero" x1="{x}" y1="{t}" x2="{x}" y2="{b}"/>"#,
        x = n(zero),
        t = n(TOP),
        b = n(bottom),
    );
    for (i, r) in rows.iter().enumerate() {
        let mid = TOP + LANE * i as f64 + LANE / 2.0;
        let _ = write!(
            body,
            r#"<text class="lane" x="{x}" y="{y}" text-anchor="end">{l}</text>"#,
            x = n(LEFT - 10.0),
            y = n(mid + 4.0),
            l = escape(&crate::shortened(&r.label, 26)),
        );
        if r.band.is_finite() && r.band > 0.0 {
            let _ = write!(
                body,
                r#"<rect class="band" x="{x}" y="{y}" width="{w}" height="26"><title>noise band ±{b}</title></rect>"#,
                x = n(s.at(-r.band)),
                y = n(mid - 13.0),
                w = n(s.at(r.band) - s.at(-r.band)),
                b = escape(pct(r.band).trim_start_matches('+')),
            );
        }
        let _ = write!(
            desc,
            "{}: {} [{} … {}], {}. ",
            r.label,
            pct(r.change),
            pct(r.low),
            pct(r.high),
            r.verdict
        );
        if let (Some(a), Some(b), Some(c)) = (fin(r.low), fin(r.high), fin(r.change)) {
            let class = r.verdict.replace(' ', "-");
            let _ = write!(
                body,
                r#"<g class="v-{class}"><line class="ci-line" x1="{a}" y1="{y}" x2="{b}" y2="{y}"/><circle class="change" cx="{c}" cy="{y}" r="5"><title>{t}</title></circle></g>"#,
                a = n(s.at(a)),
                b = n(s.at(b)),
                c = n(s.at(c)),
                y = n(mid),
                t = escape(&format!(
                    "{} {} [{} … {}]",
                    r.verdict,
                    pct(c),
                    pct(a),
                    pct(b)
                )),
            );
        }
    }
    let mut out = open(height, title, desc.trim_end());
    x_axis(
        &mut out,
        &s,
        bottom,
        TOP,
        &percent_tick,
        "change (candidate / baseline − 1), 95% interval; shaded: noise band",
    );
    out.push_str(&body);
    out.push_str("</svg>");
    out
}

/// One point of a history series.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesPoint {
    /// Its value (the run's median).
    pub value: f64,
    /// Its interval, when known.
    pub ci: Option<(f64, f64)>,
    /// What it is (a run id, a commit).
    pub label: String,
}

/// A series in run or commit order: each point with its interval, the
/// change points as vertical lines (between `i - 1` and `i`), and markers
/// where the environment changed (triangles on the x axis, with what changed
/// in their title).
pub fn series(
    title: &str,
    axis_label: &str,
    fmt: &dyn Fn(f64) -> String,
    points: &[SeriesPoint],
    change_points: &[usize],
    markers: &[(usize, String)],
) -> String {
    const HEIGHT: f64 = 280.0;
    let bottom = HEIGHT - AXIS_ROOM - 10.0;
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for p in points {
        for v in [Some(p.value), p.ci.map(|c| c.0), p.ci.map(|c| c.1)]
            .into_iter()
            .flatten()
        {
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    let (lo, hi) = if lo.is_finite() {
        padded(lo, hi)
    } else {
        (0.0, 1.0)
    };
    let x = Scale::new(-0.5, points.len().max(1) as f64 - 0.5, LEFT, RIGHT);
    let y = Scale::new(lo, hi, bottom, TOP);
    let desc = format!(
        "{} points; {} change point{}; {} environment change{}.",
        points.len(),
        change_points.len(),
        if change_points.len() == 1 { "" } else { "s" },
        markers.len(),
        if markers.len() == 1 { "" } else { "s" },
    );
    let mut out = open(HEIGHT, title, &desc);
    y_axis(&mut out, &y, bottom, fmt, axis_label);
    let mut at: Vec<f64> = ticks(0.0, points.len().max(1) as f64 - 1.0, 6)
        .into_iter()
        .filter(|t| t.fract() == 0.0)
        .collect();
    at.dedup();
    let label_of = |v: f64| {
        points
            .get(v.round().max(0.0) as usize)
            .map_or(String::new(), |p| crate::shortened(&p.label, 12))
    };
    x_axis_at(
        &mut out,
        &x,
        bottom,
        TOP,
        &label_of,
        "run, oldest first",
        &at,
    );
    for &i in change_points {
        let px = x.at(i as f64 - 0.5);
        let _ = write!(
            out,
            r#"<line class="changepoint" x1="{x}" y1="{t}" x2="{x}" y2="{b}"><title>change point before {l}</title></line>"#,
            x = n(px),
            t = n(TOP),
            b = n(bottom),
            l = escape(&points.get(i).map_or(String::new(), |p| p.label.clone())),
        );
    }
    for (i, what) in markers {
        let px = x.at(*i as f64);
        let _ = write!(
            out,
            r#"<path class="marker" d="M{a} {b} L{c} {b} L{x} {t} Z"><title>{w}</title></path>"#,
            a = n(px - 6.0),
            c = n(px + 6.0),
            x = n(px),
            b = n(bottom),
            t = n(bottom - 10.0),
            w = escape(what),
        );
    }
    for (i, p) in points.iter().enumerate() {
        if !p.value.is_finite() {
            continue;
        }
        let px = x.at(i as f64);
        if let Some((a, b)) = p.ci
            && a.is_finite()
            && b.is_finite()
        {
            let _ = write!(
                out,
                r#"<line class="whisker" x1="{x}" y1="{a}" x2="{x}" y2="{b}"/>"#,
                x = n(px),
                a = n(y.at(a)),
                b = n(y.at(b)),
            );
        }
        let _ = write!(
            out,
            r#"<circle class="pt" cx="{x}" cy="{y}" r="3"><title>{l}: {v}</title></circle>"#,
            x = n(px),
            y = n(y.at(p.value)),
            l = escape(&p.label),
            v = escape(&fmt(p.value)),
        );
    }
    out.push_str("</svg>");
    out
}

/// The memory ladder: latency (log scale) against working-set size (log
/// scale, a tick per ×4), with vertical marks at sizes: the steps the
/// probe found (solid) and the caches the fingerprint lists (dashed).
pub fn ladder(
    title: &str,
    points: &[(f64, f64)],
    marks: &[(f64, String, bool)],
    size_fmt: &dyn Fn(f64) -> String,
) -> String {
    const HEIGHT: f64 = 320.0;
    let bottom = HEIGHT - AXIS_ROOM - 10.0;
    let pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(s, v)| *s > 0.0 && *v > 0.0 && s.is_finite() && v.is_finite())
        .collect();
    let (mut xlo, mut xhi, mut ylo, mut yhi) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for (s, v) in &pts {
        xlo = xlo.min(s.log2());
        xhi = xhi.max(s.log2());
        ylo = ylo.min(v.log10());
        yhi = yhi.max(v.log10());
    }
    if !xlo.is_finite() {
        (xlo, xhi, ylo, yhi) = (12.0, 30.0, 0.0, 2.0);
    }
    let x = Scale::new(xlo - 0.3, xhi + 0.3, LEFT, RIGHT);
    // Whole decades of latency, on a log scale.
    let y = Scale {
        log: true,
        ..Scale::new(
            ylo.floor().min(ylo - 0.1),
            yhi.ceil().max(yhi + 0.1),
            bottom,
            TOP,
        )
    };
    let desc = format!(
        "{} sizes from {} to {}; latency {} to {} ns.",
        pts.len(),
        size_fmt(2f64.powf(xlo)),
        size_fmt(2f64.powf(xhi)),
        tidy(&format!("{:.2}", 10f64.powf(ylo))),
        tidy(&format!("{:.1}", 10f64.powf(yhi))),
    );
    let mut out = open(HEIGHT, title, &desc);
    y_axis(
        &mut out,
        &y,
        bottom,
        &|v| format!("{} ns", tidy(&format!("{v:.2}"))),
        "latency per dependent load (log)",
    );
    let at: Vec<f64> = ((x.lo.ceil() as i64)..=(x.hi.floor() as i64))
        .filter(|k| k % 2 == 0)
        .map(|k| k as f64)
        .collect();
    x_axis_at(
        &mut out,
        &x,
        bottom,
        TOP,
        &|v| size_fmt(2f64.powf(v)),
        "working set (log)",
        &at,
    );
    for (size, label, fingerprint) in marks {
        if *size <= 0.0 || !size.is_finite() {
            continue;
        }
        let px = x.at(size.log2());
        if !(LEFT..=RIGHT).contains(&px) {
            continue;
        }
        let _ = write!(
            out,
            r#"<line class="{c}" x1="{x}" y1="{t}" x2="{x}" y2="{b}"><title>{l}</title></line><text class="tick" x="{tx}" y="{ty}">{l}</text>"#,
            c = if *fingerprint { "round" } else { "changepoint" },
            x = n(px),
            t = n(TOP),
            b = n(bottom),
            tx = n(px + 3.0),
            ty = n(if *fingerprint { TOP + 10.0 } else { TOP + 24.0 }),
            l = escape(label),
        );
    }
    let mut path = String::new();
    for (i, (s, v)) in pts.iter().enumerate() {
        let _ = write!(
            path,
            "{}{} {}",
            if i == 0 { "M" } else { " L" },
            n(x.at(s.log2())),
            n(y.at(*v))
        );
    }
    if !path.is_empty() {
        let _ = write!(out, r#"<path class="line" d="{path}"/>"#);
    }
    for (s, v) in &pts {
        let _ = write!(
            out,
            r#"<circle class="pt" cx="{x}" cy="{y}" r="2.5"><title>{s}: {v} ns</title></circle>"#,
            x = n(x.at(s.log2())),
            y = n(y.at(*v)),
            s = escape(&size_fmt(*s)),
            v = tidy(&format!("{v:.2}")),
        );
    }
    out.push_str("</svg>");
    out
}

/// A trend line small enough for a table cell (the dashboard's benchmark
/// list): the values in order, scaled between their smallest and largest,
/// the last one dotted; `label` is its accessible name.
pub fn sparkline(label: &str, values: &[f64]) -> String {
    const W: f64 = 120.0;
    const H: f64 = 24.0;
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let mut out = format!(
        "<svg class=\"chart spark\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\">",
        escape(label)
    );
    if let (Some(lo), Some(hi)) = (
        finite.iter().copied().reduce(f64::min),
        finite.iter().copied().reduce(f64::max),
    ) {
        let span = if hi > lo { hi - lo } else { 1.0 };
        let x = |i: usize| {
            if finite.len() > 1 {
                2.0 + (W - 4.0) * i as f64 / (finite.len() - 1) as f64
            } else {
                W / 2.0
            }
        };
        let y = |v: f64| H - 3.0 - (H - 6.0) * (v - lo) / span;
        let pts: Vec<String> = finite
            .iter()
            .enumerate()
            .map(|(i, &v)| format!("{},{}", n(x(i)), n(y(v))))
            .collect();
        let _ = write!(
            out,
            "<polyline class=\"line\" points=\"{}\"/>",
            pts.join(" ")
        );
        let last = finite.len() - 1;
        let _ = write!(
            out,
            "<circle class=\"pt\" cx=\"{}\" cy=\"{}\" r=\"2.5\"/>",
            n(x(last)),
            n(y(finite[last]))
        );
    }
    out.push_str("</svg>");
    out
}

/// A chart as a file of its own (`--plot`): the report's stylesheet (light
/// theme, dark under `prefers-color-scheme`) inlined.
pub fn standalone(svg: &str) -> String {
    let css = format!("<style>{}</style>", crate::markup::CHART_CSS);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    match svg.find("<title>") {
        Some(i) => {
            out.push_str(&svg[..i]);
            out.push_str(&css);
            out.push_str(&svg[i..]);
        }
        None => out.push_str(svg),
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = ticks(0.13, 0.91, 4);
        assert_eq!(t, vec![0.2, 0.4, 0.6, 0.8]);
        assert_eq!(ticks(5.0, 5.0, 4), vec![5.0]);
        assert_eq!(ticks(f64::NAN, 1.0, 4).len(), 1);
    }

    #[test]
    fn ticks_fall_at_1_2_5_steps() {
        assert_eq!(
            ticks(0.0, 7.3, 8),
            vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
        );
        assert_eq!(ticks(0.0, 0.9, 8).len(), 5); // step 0.2
        assert_eq!(nice_step(64.0, 10.0), 10.0);
        assert_eq!(nice_step(30.0, 10.0), 5.0);
        assert_eq!(nice_step(13.0, 10.0), 2.0);
        assert_eq!(ticks(-5.0, 5.0, 5), vec![-4.0, -2.0, 0.0, 2.0, 4.0]);
    }

    #[test]
    fn si_tick_labels_have_three_digits_and_no_trailing_zeros() {
        let si = |v: f64| tick_label(&si_number, v);
        assert_eq!(si(0.0), "0");
        assert_eq!(si(7.0), "7");
        assert_eq!(si(2.5), "2.5");
        assert_eq!(si(0.3 * 1.0000000000000002), "0.3");
        assert_eq!(si(1234.0), "1.23k");
        assert_eq!(si(3.4e6), "3.4M");
        assert_eq!(si(999_999.0), "1M");
        assert_eq!(si(-2e9), "-2G");
        assert_eq!(si(1.5e-5), "1.5e-5");
        assert_eq!(si(-2e-4), "-2e-4");
        assert_eq!(si(f64::NAN), "–");
    }

    #[test]
    fn tick_labels_lose_their_trailing_zeros_only() {
        assert_eq!(tidy("10.000 ms"), "10 ms");
        assert_eq!(tidy("2.500 s"), "2.5 s");
        assert_eq!(tidy("100 ns"), "100 ns");
        assert_eq!(tidy("+20 %"), "+20 %");
        assert_eq!(tidy("1479161"), "1479161");
    }

    #[test]
    fn thinning_keeps_the_ends_and_at_most_the_limit() {
        assert_eq!(thinned(3), vec![0, 1, 2]);
        let t = thinned(100_000);
        assert!(t.len() <= MAX_DRAWN);
        assert_eq!(t.first(), Some(&0));
        assert_eq!(t.last(), Some(&99_999));
    }

    #[test]
    fn lanes_far_apart_get_a_log_axis_with_decade_ticks() {
        let lane = |label: &str, centre: f64| Lane {
            label: label.into(),
            values: (0..20).map(|i| centre * (1.0 + i as f64 / 100.0)).collect(),
            median_ci: None,
        };
        let fmt = |v: f64| format!("{v} ms");
        let far = distribution("t", "wall", &fmt, &[lane("a", 1.5), lane("b", 150.0)]);
        assert!(far.contains("wall (log scale)"));
        let ticks: Vec<&str> = far
            .split(r#"text-anchor="middle">"#)
            .skip(1)
            .map(|t| &t[..t.find('<').unwrap()])
            .collect();
        for t in ["2 ms", "5 ms", "10 ms", "20 ms", "50 ms", "100 ms"] {
            assert!(ticks.contains(&t), "{t} not in {ticks:?}");
        }
        // Both lanes' medians are well inside the plot, not squashed at an end.
        let medians: Vec<f64> = far
            .split(r#"<line class="median" x1=""#)
            .skip(1)
            .map(|t| t[..t.find('"').unwrap()].parse().unwrap())
            .collect();
        assert_eq!(medians.len(), 2);
        assert!(
            medians[1] - medians[0] > (RIGHT - LEFT) * 0.8,
            "{medians:?}"
        );
        let near = distribution("t", "wall", &fmt, &[lane("a", 100.0), lane("b", 150.0)]);
        assert!(!near.contains("log scale"));
    }

    #[test]
    fn charts_hold_no_nan_and_one_point_per_drawn_sample() {
        let lane = Lane {
            label: "a <b>".into(),
            values: vec![1.0, 2.0, f64::NAN, 3.0, 2.5],
            median_ci: Some((2.0, 2.5)),
        };
        let svg = distribution("t", "time", &|v| format!("{v:.1}"), &[lane]);
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        assert_eq!(svg.matches("h0").count(), 4);
        assert!(svg.contains("a &lt;b&gt;"));
        let p = progression(
            "p",
            "ms",
            &|v| format!("{v}"),
            &[1.0, 2.0, 3.0, 4.0],
            &[0, 0, 1, 1],
        );
        assert_eq!(p.matches("h0").count(), 4);
        assert_eq!(p.matches(r#"class="pts r1""#).count(), 1);
        assert_eq!(p.matches(r#"class="round""#).count(), 1);
        let c = changes(
            "c",
            &[Change {
                label: "x".into(),
                change: 0.1,
                low: 0.05,
                high: 0.15,
                band: 0.02,
                verdict: "regressed".into(),
            }],
        );
        assert!(c.contains("v-regressed") && c.contains(r#"class="band""#));
    }
}
