//! The scale chart: throughput against concurrency with the Universal
//! Scalability Law fit, for the scale section of the report and `scale
//! --plot` (through [`standalone`](crate::chart::standalone)).
//!
//! Painted like the other charts: every element carries a class, and
//! [`CHART_CSS`](crate::markup::CHART_CSS) (its `svg.usl-chart` rules) gives
//! the colours, strokes and type sizes, light and dark. Output is
//! deterministic (fixed float precision, no maps), never contains `NaN` or
//! `inf` (non-finite inputs are skipped), and every line series is clipped to
//! the plot area by explicit segment intersection, so no coordinate lies
//! outside it.

use crate::chart::{nice_step, si_number, tick_label, ticks_with_step};
use crate::markup::{coord, escape_line};
use std::fmt::Write as _;

/// One measured concurrency level.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ScalePoint {
    /// Concurrency level N.
    pub n: f64,
    /// Median throughput at N.
    pub median: f64,
    /// Lower end of the error bar (e.g. 95 % CI or minimum).
    pub low: f64,
    /// Upper end of the error bar (e.g. 95 % CI or maximum).
    pub high: f64,
}

/// Everything the scaling chart shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScaleChart {
    /// Title above the chart.
    pub title: String,
    /// X axis label, e.g. "concurrency N (threads)".
    pub x_label: String,
    /// Y axis label, e.g. "throughput X(N) (ops/s)".
    pub y_label: String,
    /// Measured points with error bars.
    pub points: Vec<ScalePoint>,
    /// The fitted curve sampled densely (may be empty: no fit).
    pub fitted: Vec<(f64, f64)>,
    /// Legend text of the fitted curve.
    pub fit_label: String,
    /// Ideal linear scaling `y = slope·n`, drawn dashed.
    pub linear_slope: Option<f64>,
    /// Amdahl ceiling γ/α, a dotted horizontal line; drawn only when it lies
    /// within 3× the data's maximum.
    pub ceiling: Option<f64>,
    /// `(N*, X(N*))`, marked and labelled "N* = …" when inside the x range.
    pub peak: Option<(f64, f64)>,
    /// Lines under the chart (diagnosis), may be empty.
    pub notes: Vec<String>,
}

const WIDTH: f64 = 800.0;
const MIN_HEIGHT: f64 = 500.0;
const PLOT_LEFT: f64 = 80.0;
const PLOT_RIGHT: f64 = 770.0;
const PLOT_TOP: f64 = 50.0;
const PLOT_BOTTOM: f64 = 360.0;
const LEGEND_TOP: f64 = 418.0;
const LEGEND_ROW: f64 = 20.0;
const NOTE_LINE: f64 = 18.0;
/// Characters per note line before wrapping (13 px sans-serif ≈ 7 px/char).
const NOTE_WRAP: usize = 105;
/// Target tick counts; the 1-2-5 step gives at most this many intervals.
const X_TICKS: f64 = 10.0;
const Y_TICKS: f64 = 8.0;
/// The linear-scaling line may raise the y axis to at most this multiple of
/// the data's maximum; beyond that it is clipped so the data stays readable.
const LINEAR_CAP: f64 = 1.5;
/// The ceiling is drawn only when at most this multiple of the data's maximum.
const CEILING_CAP: f64 = 3.0;
/// The x axis extends at least this factor past the largest N.
const X_MARGIN: f64 = 1.03;
/// Headroom above the highest value shown.
const HEADROOM: f64 = 1.05;

/// Largest magnitude accepted from the input: beyond it, sums and the
/// headroom factor could overflow to infinity, so such values are skipped
/// like non-finite ones.
const MAX_ABS: f64 = 1e300;

/// Whether an input value is finite and small enough to compute with.
fn usable(v: f64) -> bool {
    v.is_finite() && v.abs() <= MAX_ABS
}

/// A measured point with finite, ordered error bar ends.
#[derive(Debug, Clone, Copy)]
struct Point {
    n: f64,
    median: f64,
    low: f64,
    high: f64,
}

/// Linear map from a data interval to a pixel interval.
#[derive(Debug, Clone, Copy)]
struct Axis {
    lo: f64,
    hi: f64,
    px_lo: f64,
    px_hi: f64,
}

impl Axis {
    fn map(&self, v: f64) -> f64 {
        self.px_lo + (v - self.lo) / (self.hi - self.lo) * (self.px_hi - self.px_lo)
    }
}

/// A legend entry: the glyph follows the kind.
enum Legend {
    Measured,
    Fit(String),
    Linear,
    Ceiling(String),
    Peak(String),
}

impl Legend {
    fn text(&self) -> &str {
        match self {
            Legend::Measured => "measured median (error bar)",
            Legend::Linear => "ideal linear scaling",
            Legend::Fit(s) | Legend::Ceiling(s) | Legend::Peak(s) => s,
        }
    }
}

/// `chart` as an inline `<svg>`, for a page or [`standalone`](crate::chart::standalone).
pub fn scaling(chart: &ScaleChart) -> String {
    let points = sanitize_points(&chart.points);
    let notes = wrap_notes(&chart.notes);
    if points.is_empty() {
        return no_data(chart, &notes);
    }
    let fitted = sanitize_curve(&chart.fitted);
    let f = frame(chart, &points, &fitted);
    let (legend, peak_label) = legend_of(chart, &fitted, &f);
    let rows = legend_rows(&legend);
    let legend_bottom = LEGEND_TOP + 12.0 + rows.len() as f64 * LEGEND_ROW;
    let height = layout_height(legend_bottom, notes.len());

    let mut out = String::new();
    header(&mut out, height, &chart.title);
    write_grid(&mut out, &f);
    write_axis_labels(&mut out, chart);
    write_references(&mut out, &f, &fitted);
    write_points(&mut out, &points, &f);
    if let (Some((px, py)), Some(label)) = (f.peak, &peak_label) {
        write_peak(&mut out, &f, (px, py), label);
    }
    write_legend(&mut out, &legend, &rows);
    write_notes(&mut out, legend_bottom, &notes);
    out.push_str("</svg>");
    out
}

/// The plot area's frame.
fn plot_frame(out: &mut String) {
    let _ = writeln!(
        out,
        r#"<rect class="frame" x="{}" y="{}" width="{}" height="{}"/>"#,
        c(PLOT_LEFT),
        c(PLOT_TOP),
        c(PLOT_RIGHT - PLOT_LEFT),
        c(PLOT_BOTTOM - PLOT_TOP)
    );
}

/// The chart of no point: the frame, "no data" and the notes.
fn no_data(chart: &ScaleChart, notes: &[String]) -> String {
    let mut out = String::new();
    let height = layout_height(PLOT_BOTTOM + 40.0, notes.len());
    header(&mut out, height, &chart.title);
    plot_frame(&mut out);
    let _ = writeln!(
        out,
        r#"<text class="empty" x="{}" y="{}" text-anchor="middle">no data</text>"#,
        c((PLOT_LEFT + PLOT_RIGHT) / 2.0),
        c((PLOT_TOP + PLOT_BOTTOM) / 2.0)
    );
    write_notes(&mut out, PLOT_BOTTOM + 40.0, notes);
    out.push_str("</svg>");
    out
}

/// Where everything goes: the axes (0 to a little above all shown), their
/// tick steps, and the reference values worth drawing within them.
struct Frame {
    x_axis: Axis,
    y_axis: Axis,
    x_step: f64,
    y_step: f64,
    x_hi: f64,
    y_lo: f64,
    y_hi: f64,
    peak: Option<(f64, f64)>,
    ceiling: Option<f64>,
    linear: Option<f64>,
}

/// The frame of `points` and the `fitted` curve.
fn frame(chart: &ScaleChart, points: &[Point], fitted: &[(f64, f64)]) -> Frame {
    // X axis: 0 to the largest N shown, rounded up to a tick.
    let x_max = points
        .iter()
        .map(|p| p.n)
        .chain(fitted.iter().map(|p| p.0))
        .fold(0.0, f64::max);
    let x_max = if x_max > 0.0 { x_max } else { 1.0 };
    let mut x_step = nice_step(x_max, X_TICKS);
    if x_max >= 1.0 {
        x_step = x_step.max(1.0);
    }
    // Keep a small margin so markers at the largest N are not cut by the frame.
    let x_hi = ((x_max / x_step).ceil() * x_step).max(x_max * X_MARGIN);
    let x_axis = Axis {
        lo: 0.0,
        hi: x_hi,
        px_lo: PLOT_LEFT,
        px_hi: PLOT_RIGHT,
    };

    // Y axis: 0 (or the lowest error bar) to a little above everything shown.
    let peak = chart
        .peak
        .filter(|&(x, y)| usable(x) && usable(y) && (0.0..=x_hi).contains(&x));
    let mut base = points
        .iter()
        .map(|p| p.high)
        .chain(
            fitted
                .iter()
                .filter(|p| (0.0..=x_hi).contains(&p.0))
                .map(|p| p.1),
        )
        .chain(peak.map(|p| p.1))
        .fold(0.0, f64::max);
    if !(base > 0.0 && base.is_finite()) {
        base = 1.0;
    }
    let y_min = points.iter().map(|p| p.low).fold(0.0, f64::min);
    let ceiling = chart
        .ceiling
        .filter(|&v| usable(v) && v > y_min && v <= CEILING_CAP * base);
    let linear = chart.linear_slope.filter(|&s| usable(s));
    let mut top = base.max(ceiling.unwrap_or(0.0));
    if let Some(s) = linear {
        let at_max = s * x_max;
        if usable(at_max) {
            top = top.max(at_max.min(LINEAR_CAP * base));
        }
    }
    let top = top * HEADROOM;
    let y_step = nice_step(top - y_min, Y_TICKS);
    let y_hi = ((top / y_step).ceil() * y_step).max(top);
    let y_lo = ((y_min / y_step).floor() * y_step).min(y_min);
    let y_axis = Axis {
        lo: y_lo,
        hi: y_hi,
        px_lo: PLOT_BOTTOM,
        px_hi: PLOT_TOP,
    };
    Frame {
        x_axis,
        y_axis,
        x_step,
        y_step,
        x_hi,
        y_lo,
        y_hi,
        peak,
        ceiling,
        linear,
    }
}

/// The legend's entries in drawing order, and the peak's label.
fn legend_of(
    chart: &ScaleChart,
    fitted: &[(f64, f64)],
    f: &Frame,
) -> (Vec<Legend>, Option<String>) {
    let (linear, ceiling, peak) = (f.linear, f.ceiling, f.peak);
    // Legend entries, in drawing order.
    let mut legend = vec![Legend::Measured];
    if fitted.len() >= 2 {
        let label = if chart.fit_label.trim().is_empty() {
            "fit".to_string()
        } else {
            chart.fit_label.clone()
        };
        legend.push(Legend::Fit(label));
    }
    if linear.is_some() {
        legend.push(Legend::Linear);
    }
    if let Some(v) = ceiling {
        legend.push(Legend::Ceiling(format!(
            "Amdahl ceiling γ/α = {}",
            axis_label(v)
        )));
    }
    let peak_label = peak.map(|(x, _)| format!("N* = {}", format_n(x)));
    if let Some(label) = &peak_label {
        legend.push(Legend::Peak(format!("peak {label}")));
    }
    (legend, peak_label)
}

/// The grid, the ticks with their labels, and the plot's frame.
fn write_grid(out: &mut String, f: &Frame) {
    let (x_axis, y_axis) = (f.x_axis, f.y_axis);
    out.push_str("<g>\n");
    for t in ticks_with_step(f.y_lo, f.y_hi, f.y_step) {
        let y = y_axis.map(t);
        thin_line(out, (PLOT_LEFT, y), (PLOT_RIGHT, y), "grid");
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            c(PLOT_LEFT - 8.0),
            c(y + 4.0),
            text(&axis_label(t))
        );
    }
    for t in ticks_with_step(0.0, f.x_hi, f.x_step) {
        let x = x_axis.map(t);
        thin_line(out, (x, PLOT_TOP), (x, PLOT_BOTTOM), "grid");
        thin_line(out, (x, PLOT_BOTTOM), (x, PLOT_BOTTOM + 5.0), "axis");
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            c(x),
            c(PLOT_BOTTOM + 19.0),
            text(&axis_label(t))
        );
    }
    out.push_str("</g>\n");
    plot_frame(out);
}

/// The axes' labels.
fn write_axis_labels(out: &mut String, chart: &ScaleChart) {
    let _ = writeln!(
        out,
        r#"<text class="label" x="{}" y="{}" text-anchor="middle">{}</text>"#,
        c((PLOT_LEFT + PLOT_RIGHT) / 2.0),
        c(PLOT_BOTTOM + 42.0),
        text(&chart.x_label)
    );
    let (ly_x, ly_y) = (20.0, (PLOT_TOP + PLOT_BOTTOM) / 2.0);
    let _ = writeln!(
        out,
        r#"<text class="label" x="{0}" y="{1}" transform="rotate(-90 {0} {1})" text-anchor="middle">{2}</text>"#,
        c(ly_x),
        c(ly_y),
        text(&chart.y_label)
    );
}

/// The reference lines, behind the data: the ceiling, linear scaling, the fit.
fn write_references(out: &mut String, f: &Frame, fitted: &[(f64, f64)]) {
    let (x_axis, y_axis, x_hi) = (f.x_axis, f.y_axis, f.x_hi);
    // Reference lines, behind the data.
    if let Some(v) = f.ceiling {
        let y = y_axis.map(v);
        let _ = writeln!(
            out,
            r#"<line class="ceiling" x1="{}" y1="{}" x2="{}" y2="{}"/>"#,
            c(PLOT_LEFT),
            c(y),
            c(PLOT_RIGHT),
            c(y)
        );
    }
    if let Some(s) = f.linear {
        let line = [(0.0, 0.0), (x_hi, s * x_hi)];
        write_series(out, &line, x_axis, y_axis, "linear");
    }
    if fitted.len() >= 2 {
        write_series(out, fitted, x_axis, y_axis, "fit");
    }
}

/// The measured points with their error bars.
fn write_points(out: &mut String, points: &[Point], f: &Frame) {
    let (x_axis, y_axis) = (f.x_axis, f.y_axis);
    // Measured points with error bars.
    for p in points {
        let x = x_axis.map(p.n);
        let (ym, yl, yh) = (y_axis.map(p.median), y_axis.map(p.low), y_axis.map(p.high));
        if !(x.is_finite() && ym.is_finite() && yl.is_finite() && yh.is_finite()) {
            continue;
        }
        out.push_str("<g class=\"errorbar\">\n");
        if (yl - yh).abs() >= 0.5 {
            let _ = writeln!(
                out,
                r#"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>"#,
                c(x),
                c(yl),
                c(yh)
            );
            for y in [yl, yh] {
                let _ = writeln!(
                    out,
                    r#"<line x1="{}" y1="{2}" x2="{}" y2="{2}"/>"#,
                    c(x - 5.0),
                    c(x + 5.0),
                    c(y)
                );
            }
        }
        let _ = writeln!(
            out,
            r#"<circle class="dot" cx="{}" cy="{}" r="4"/>"#,
            c(x),
            c(ym)
        );
        out.push_str("</g>\n");
    }
}

/// The peak's marker and its label.
fn write_peak(out: &mut String, f: &Frame, (px, py): (f64, f64), label: &str) {
    let (x_axis, y_axis) = (f.x_axis, f.y_axis);
    let (x, y) = (x_axis.map(px), y_axis.map(py));
    let _ = writeln!(
        out,
        r#"<line class="peak" x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>"#,
        c(x),
        c(y),
        c(PLOT_BOTTOM)
    );
    let _ = writeln!(
        out,
        r#"<polygon class="peak" points="{}"/>"#,
        diamond(x, y, 7.0)
    );
    let (tx, anchor) = if x > PLOT_RIGHT - 90.0 {
        (x - 10.0, "end")
    } else {
        (x + 10.0, "start")
    };
    let ty = if y < PLOT_TOP + 20.0 {
        y + 18.0
    } else {
        y - 10.0
    };
    let _ = writeln!(
        out,
        r#"<text class="peak-label" x="{}" y="{}" text-anchor="{anchor}">{}</text>"#,
        c(tx),
        c(ty),
        text(label)
    );
}

/// Keeps points with a finite, non-negative N and a finite median; missing
/// or inverted error bar ends collapse onto the median.
fn sanitize_points(points: &[ScalePoint]) -> Vec<Point> {
    points
        .iter()
        .filter(|p| usable(p.n) && p.n >= 0.0 && usable(p.median))
        .map(|p| Point {
            n: p.n,
            median: p.median,
            low: if usable(p.low) {
                p.low.min(p.median)
            } else {
                p.median
            },
            high: if usable(p.high) {
                p.high.max(p.median)
            } else {
                p.median
            },
        })
        .collect()
}

/// Finite samples of the fitted curve, in increasing x.
fn sanitize_curve(curve: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = curve
        .iter()
        .copied()
        .filter(|&(x, y)| usable(x) && usable(y))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// Document height: the content's bottom plus the note lines, at least
/// [`MIN_HEIGHT`].
fn layout_height(content_bottom: f64, note_lines: usize) -> f64 {
    let notes = if note_lines == 0 {
        0.0
    } else {
        10.0 + note_lines as f64 * NOTE_LINE
    };
    (content_bottom + notes + 14.0).max(MIN_HEIGHT).ceil()
}

/// The `<svg>` element's opening, the title and the background.
fn header(out: &mut String, height: f64, title: &str) {
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{0}" height="{1}" viewBox="0 0 {0} {1}" class="chart usl-chart">"#,
        c(WIDTH),
        c(height)
    );
    let _ = writeln!(out, "<title>{}</title>", text(title));
    let _ = writeln!(
        out,
        r#"<rect class="bg" x="0" y="0" width="{}" height="{}"/>"#,
        c(WIDTH),
        c(height)
    );
    let _ = writeln!(
        out,
        r#"<text class="title" x="{}" y="30" text-anchor="middle">{}</text>"#,
        c(WIDTH / 2.0),
        text(title)
    );
}

/// Draws a data-space polyline clipped to the plot area, as one
/// `<polyline>` per visible run of segments.
fn write_series(out: &mut String, data: &[(f64, f64)], x_axis: Axis, y_axis: Axis, class: &str) {
    let px: Vec<Option<(f64, f64)>> = data
        .iter()
        .map(|&(x, y)| {
            let p = (x_axis.map(x), y_axis.map(y));
            (p.0.is_finite() && p.1.is_finite()).then_some(p)
        })
        .collect();
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    for w in px.windows(2) {
        let clipped = match (w[0], w[1]) {
            (Some(a), Some(b)) => clip_segment(a, b),
            _ => None,
        };
        match clipped {
            Some((a, b)) => {
                let joins = current
                    .last()
                    .is_some_and(|l| (l.0 - a.0).abs() < 1e-6 && (l.1 - a.1).abs() < 1e-6);
                if !joins {
                    if current.len() >= 2 {
                        runs.push(std::mem::take(&mut current));
                    }
                    current.clear();
                    current.push(a);
                }
                current.push(b);
            }
            None => {
                if current.len() >= 2 {
                    runs.push(std::mem::take(&mut current));
                }
                current.clear();
            }
        }
    }
    if current.len() >= 2 {
        runs.push(current);
    }
    for run in runs {
        let pts: Vec<String> = run
            .iter()
            .map(|&(x, y)| format!("{},{}", c(x), c(y)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline class="{class}" points="{}"/>"#,
            pts.join(" ")
        );
    }
}

/// Liang–Barsky clipping of the pixel segment `a`–`b` to the plot area.
/// Returns the visible part, or `None` when nothing is visible.
fn clip_segment(a: (f64, f64), b: (f64, f64)) -> Option<((f64, f64), (f64, f64))> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    if !(dx.is_finite() && dy.is_finite()) {
        return None;
    }
    let mut t0 = 0.0_f64;
    let mut t1 = 1.0_f64;
    for (p, q) in [
        (-dx, a.0 - PLOT_LEFT),
        (dx, PLOT_RIGHT - a.0),
        (-dy, a.1 - PLOT_TOP),
        (dy, PLOT_BOTTOM - a.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let r = q / p;
            if p < 0.0 {
                t0 = t0.max(r);
            } else {
                t1 = t1.min(r);
            }
        }
    }
    if t0 > t1 {
        return None;
    }
    // Clamp away floating-point error at the boundary.
    let at = |t: f64| {
        (
            (a.0 + t * dx).clamp(PLOT_LEFT, PLOT_RIGHT),
            (a.1 + t * dy).clamp(PLOT_TOP, PLOT_BOTTOM),
        )
    };
    Some((at(t0), at(t1)))
}

/// Groups legend entries into rows that fit the plot width (flow layout).
fn legend_rows(legend: &[Legend]) -> Vec<Vec<usize>> {
    let avail = PLOT_RIGHT - PLOT_LEFT - 20.0;
    let mut rows: Vec<Vec<usize>> = Vec::new();
    let mut used = 0.0;
    for (i, e) in legend.iter().enumerate() {
        let w = legend_width(e);
        if rows
            .last()
            .is_none_or(|r| !r.is_empty() && used + w > avail)
        {
            rows.push(Vec::new());
            used = 0.0;
        }
        if let Some(r) = rows.last_mut() {
            r.push(i);
        }
        used += w;
    }
    rows
}

/// Estimated width of a legend entry: glyph, gap, text at 12 px, spacing.
fn legend_width(e: &Legend) -> f64 {
    30.0 + 6.8 * e.text().chars().count() as f64 + 24.0
}

fn write_legend(out: &mut String, legend: &[Legend], rows: &[Vec<usize>]) {
    let height = 12.0 + rows.len() as f64 * LEGEND_ROW;
    out.push_str("<g class=\"legend\">\n");
    let _ = writeln!(
        out,
        r#"<rect x="{}" y="{}" width="{}" height="{}" rx="3"/>"#,
        c(PLOT_LEFT),
        c(LEGEND_TOP),
        c(PLOT_RIGHT - PLOT_LEFT),
        c(height)
    );
    for (r, row) in rows.iter().enumerate() {
        let cy = LEGEND_TOP + 6.0 + LEGEND_ROW * (r as f64 + 0.5);
        let mut x = PLOT_LEFT + 10.0;
        for &i in row {
            let e = &legend[i];
            let (x0, x1, xm) = (x, x + 24.0, x + 12.0);
            match e {
                Legend::Measured => {
                    let _ = writeln!(
                        out,
                        r#"<line class="bar" x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>"#,
                        c(xm),
                        c(cy - 7.0),
                        c(cy + 7.0)
                    );
                    let _ = writeln!(
                        out,
                        r#"<circle class="dot" cx="{}" cy="{}" r="4"/>"#,
                        c(xm),
                        c(cy)
                    );
                }
                Legend::Fit(_) => line_glyph(out, x0, x1, cy, "fit"),
                Legend::Linear => line_glyph(out, x0, x1, cy, "linear"),
                Legend::Ceiling(_) => line_glyph(out, x0, x1, cy, "ceiling"),
                Legend::Peak(_) => {
                    let _ = writeln!(
                        out,
                        r#"<polygon class="peak" points="{}"/>"#,
                        diamond(xm, cy, 6.0)
                    );
                }
            }
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}">{}</text>"#,
                c(x + 30.0),
                c(cy + 4.0),
                text(e.text())
            );
            x += legend_width(e);
        }
    }
    out.push_str("</g>\n");
}

/// A legend's line, drawn as the series of `class` is.
fn line_glyph(out: &mut String, x0: f64, x1: f64, y: f64, class: &str) {
    let _ = writeln!(
        out,
        r#"<line class="{class}" x1="{}" y1="{2}" x2="{}" y2="{2}"/>"#,
        c(x0),
        c(x1),
        c(y)
    );
}

/// A one-pixel line from `a` to `b` (grid lines and tick marks).
fn thin_line(out: &mut String, a: (f64, f64), b: (f64, f64), class: &str) {
    let _ = writeln!(
        out,
        r#"<line class="{class}" x1="{}" y1="{}" x2="{}" y2="{}"/>"#,
        c(a.0),
        c(a.1),
        c(b.0),
        c(b.1)
    );
}

fn diamond(x: f64, y: f64, r: f64) -> String {
    format!(
        "{},{} {},{} {},{} {},{}",
        c(x),
        c(y - r),
        c(x + r),
        c(y),
        c(x),
        c(y + r),
        c(x - r),
        c(y)
    )
}

fn write_notes(out: &mut String, top: f64, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    out.push_str("<g class=\"notes\">\n");
    for (i, line) in notes.iter().enumerate() {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}">{}</text>"#,
            c(PLOT_LEFT),
            c(top + 10.0 + NOTE_LINE * (i as f64 + 0.75)),
            text(line)
        );
    }
    out.push_str("</g>\n");
}

/// Splits notes into display lines of at most [`NOTE_WRAP`] characters at
/// word boundaries (a longer word gets a line of its own).
fn wrap_notes(notes: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    for note in notes {
        for para in note.lines() {
            let mut line = String::new();
            for word in para.split_whitespace() {
                let fits = line.chars().count() + 1 + word.chars().count() <= NOTE_WRAP;
                if !line.is_empty() && !fits {
                    lines.push(std::mem::take(&mut line));
                }
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(word);
            }
            lines.push(line);
        }
    }
    lines
}

/// Text of the scale chart.
fn text(s: &str) -> String {
    escape_line(s)
}

/// A coordinate of the scale chart, at 0.01 px.
fn c(v: f64) -> String {
    debug_assert!(v.is_finite(), "non-finite coordinate");
    coord(v, 2)
}

/// An axis or marker label: the kit's tick label of an SI number (`7`,
/// `2.5`, `200k`, `1.23M`, `1.5e-5`).
fn axis_label(v: f64) -> String {
    tick_label(&si_number, v)
}

/// Formats N* for its label: one decimal below 1000, SI above.
fn format_n(v: f64) -> String {
    if v.abs() < 999.95 {
        format!("{v:.1}")
    } else {
        axis_label(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markup::CHART_CSS;

    /// A small well-formedness check: declaration and comments skipped,
    /// tags matched on a stack, attributes `name="value"` with unique names,
    /// no raw `<` in values, only known entities, one root element.
    fn check_xml(s: &str) -> Result<(), String> {
        fn check_entities(t: &str) -> Result<(), String> {
            let mut rest = t;
            while let Some(i) = rest.find('&') {
                let after = &rest[i + 1..];
                let end = after.find(';').ok_or_else(|| format!("bare & in {t:?}"))?;
                let name = &after[..end];
                let ok = matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
                    || name
                        .strip_prefix("#x")
                        .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
                    || name
                        .strip_prefix('#')
                        .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
                if !ok {
                    return Err(format!("bad entity &{name};"));
                }
                rest = &after[end + 1..];
            }
            if t.contains('>') {
                return Err(format!("raw > in {t:?}"));
            }
            Ok(())
        }
        fn is_name(n: &str) -> bool {
            !n.is_empty()
                && n.chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '-' | '.'))
        }

        let mut stack: Vec<&str> = Vec::new();
        let mut roots = 0;
        let mut i = 0;
        while i < s.len() {
            let rest = &s[i..];
            if rest.starts_with("<?") {
                let end = rest.find("?>").ok_or("unterminated <?")?;
                i += end + 2;
            } else if rest.starts_with("<!--") {
                let end = rest.find("-->").ok_or("unterminated comment")?;
                i += end + 3;
            } else if rest.starts_with('<') {
                let end = rest.find('>').ok_or("unterminated tag")?;
                let inner = &rest[1..end];
                if let Some(name) = inner.strip_prefix('/') {
                    let open = stack.pop().ok_or(format!("stray </{name}>"))?;
                    if open != name.trim() {
                        return Err(format!("<{open}> closed by </{name}>"));
                    }
                } else {
                    let self_closing = inner.ends_with('/');
                    let body = inner.strip_suffix('/').unwrap_or(inner);
                    let name_end = body.find(char::is_whitespace).unwrap_or(body.len());
                    let name = &body[..name_end];
                    if !is_name(name) {
                        return Err(format!("bad tag name {name:?}"));
                    }
                    let mut attrs = body[name_end..].trim_start();
                    let mut seen: Vec<&str> = Vec::new();
                    while !attrs.is_empty() {
                        let eq = attrs
                            .find('=')
                            .ok_or(format!("attr without = in <{name}>"))?;
                        let an = &attrs[..eq];
                        if !is_name(an) || seen.contains(&an) {
                            return Err(format!("bad or duplicate attribute {an:?}"));
                        }
                        seen.push(an);
                        let v = attrs[eq + 1..]
                            .strip_prefix('"')
                            .ok_or(format!("unquoted attribute {an}"))?;
                        let close = v.find('"').ok_or("unterminated attribute")?;
                        let value = &v[..close];
                        if value.contains('<') {
                            return Err(format!("< in attribute {an}"));
                        }
                        check_entities(value)?;
                        let after = &v[close + 1..];
                        if !after.is_empty() && !after.starts_with(char::is_whitespace) {
                            return Err(format!("no space after attribute {an}"));
                        }
                        attrs = after.trim_start();
                    }
                    if stack.is_empty() {
                        roots += 1;
                    }
                    if !self_closing {
                        stack.push(name);
                    }
                }
                i += end + 1;
            } else {
                let end = rest.find('<').unwrap_or(rest.len());
                let text = &rest[..end];
                if stack.is_empty() && !text.trim().is_empty() {
                    return Err(format!("text outside root: {text:?}"));
                }
                check_entities(text)?;
                i += end;
            }
        }
        if let Some(open) = stack.pop() {
            return Err(format!("unclosed <{open}>"));
        }
        if roots != 1 {
            return Err(format!("{roots} root elements"));
        }
        Ok(())
    }

    fn usl(n: f64) -> f64 {
        let (a, b, g) = (0.05, 0.002, 1.2e6);
        g * n / (1.0 + a * (n - 1.0) + b * n * (n - 1.0))
    }

    fn sample_chart() -> ScaleChart {
        let ns = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0];
        ScaleChart {
            title: "scaling of kv-put".into(),
            x_label: "concurrency N (threads)".into(),
            y_label: "throughput X(N) (ops/s)".into(),
            points: ns
                .iter()
                .map(|&n| {
                    let m = usl(n);
                    ScalePoint {
                        n,
                        median: m,
                        low: m * 0.95,
                        high: m * 1.05,
                    }
                })
                .collect(),
            fitted: (0..=320)
                .map(|i| i as f64 / 10.0)
                .map(|n| (n, usl(n)))
                .collect(),
            fit_label: "USL fit: α=0.05 β=0.002 γ=1.2e6".into(),
            linear_slope: Some(1.2e6),
            ceiling: Some(1.2e6 / 0.05),
            peak: Some((21.8, usl(21.8))),
            notes: vec!["contention α=5 % and coherency β=0.2 % limit scaling past N≈22".into()],
        }
    }

    /// All coordinates of every `<polyline>` (the clipped data series).
    fn polyline_coords(svg: &str) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        for part in svg.split("<polyline ").skip(1) {
            let pts = part.split("points=\"").nth(1).unwrap();
            let pts = &pts[..pts.find('"').unwrap()];
            for pair in pts.split_whitespace() {
                let (x, y) = pair.split_once(',').unwrap();
                out.push((x.parse().unwrap(), y.parse().unwrap()));
            }
        }
        out
    }

    #[test]
    fn svg_output_is_well_formed_xml() {
        let svg = scaling(&sample_chart());
        check_xml(&svg).unwrap();
        assert!(svg.contains(r#"xmlns="http://www.w3.org/2000/svg""#));
        assert!(svg.contains(r#"viewBox="0 0 800 "#));
        assert!(svg.contains(r#"class="chart usl-chart""#));
        assert!(svg.contains("N* = 21.8"));
        assert!(svg.contains("contention"));
        assert!(svg.contains("class=\"fit\""));
        assert!(svg.contains("class=\"linear\""));
        assert!(svg.contains("class=\"ceiling\""));
    }

    #[test]
    fn the_stylesheet_paints_every_class_and_the_chart_no_colour_of_its_own() {
        let mut chart = sample_chart();
        let drawn = scaling(&chart);
        chart.points.clear();
        let empty = scaling(&chart);
        for svg in [&drawn, &empty] {
            for attr in [" fill=", " stroke=", " stroke-", " font-", "<style"] {
                assert!(!svg.contains(attr), "{attr} in {svg}");
            }
            for part in svg.split(" class=\"").skip(1) {
                for class in part[..part.find('"').unwrap()].split(' ') {
                    let styled = CHART_CSS.match_indices(&format!(".{class}")).any(|(i, m)| {
                        CHART_CSS[i + m.len()..].starts_with([' ', ',', '{', '>', '.'])
                    });
                    assert!(styled, "class {class} has no rule in CHART_CSS");
                }
            }
        }
    }

    #[test]
    fn svg_checker_rejects_malformed_xml() {
        assert!(check_xml("<svg><g></svg>").is_err());
        assert!(check_xml("<svg a=b/>").is_err());
        assert!(check_xml("<svg>a & b</svg>").is_err());
        assert!(check_xml("<svg/><svg/>").is_err());
        assert!(check_xml(r#"<svg a="1" a="2"/>"#).is_err());
        assert!(check_xml(r#"<?xml version="1.0"?><svg a="&lt;"><g/>x &amp; y</svg>"#).is_ok());
    }

    #[test]
    fn svg_has_one_error_bar_group_per_point() {
        let chart = sample_chart();
        let svg = scaling(&chart);
        assert_eq!(
            svg.matches("class=\"errorbar\"").count(),
            chart.points.len()
        );
        // Each group has the bar and two caps.
        let group = svg.split("class=\"errorbar\"").nth(1).unwrap();
        let group = &group[..group.find("</g>").unwrap()];
        assert_eq!(group.matches("<line ").count(), 3);
        assert_eq!(group.matches("<circle ").count(), 1);
    }

    #[test]
    fn svg_escapes_text() {
        let mut chart = sample_chart();
        chart.title = "a <&> \"b\"\n'c'".into();
        chart.x_label = "<x>".into();
        chart.fit_label = "fit & more".into();
        chart.notes = vec!["note </svg> & \u{1} end".into()];
        let svg = scaling(&chart);
        check_xml(&svg).unwrap();
        assert!(svg.contains("a &lt;&amp;&gt; &quot;b&quot; &#39;c&#39;"));
        assert!(svg.contains("&lt;x&gt;"));
        assert!(svg.contains("fit &amp; more"));
        assert!(svg.contains("note &lt;/svg&gt; &amp;  end"));
        assert!(!svg.contains("<&>"));
    }

    #[test]
    fn svg_never_emits_nan_or_inf() {
        let nan = f64::NAN;
        let inf = f64::INFINITY;
        let chart = ScaleChart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            points: vec![
                ScalePoint {
                    n: 1.0,
                    median: 10.0,
                    low: nan,
                    high: inf,
                },
                ScalePoint {
                    n: nan,
                    median: 10.0,
                    low: 9.0,
                    high: 11.0,
                },
                ScalePoint {
                    n: 2.0,
                    median: nan,
                    low: 9.0,
                    high: 11.0,
                },
                ScalePoint {
                    n: 4.0,
                    median: 30.0,
                    low: -inf,
                    high: 35.0,
                },
                ScalePoint {
                    n: inf,
                    median: 30.0,
                    low: 20.0,
                    high: 35.0,
                },
            ],
            fitted: vec![
                (0.0, 0.0),
                (1.0, nan),
                (2.0, 20.0),
                (nan, 3.0),
                (3.0, inf),
                (4.0, 31.0),
            ],
            fit_label: "f".into(),
            linear_slope: Some(nan),
            ceiling: Some(inf),
            peak: Some((nan, 3.0)),
            notes: vec![],
        };
        let svg = scaling(&chart);
        check_xml(&svg).unwrap();
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        assert_eq!(svg.matches("class=\"errorbar\"").count(), 2);

        // Extreme but finite values and infinite options.
        let chart = ScaleChart {
            points: vec![ScalePoint {
                n: 1e300,
                median: 1e300,
                low: -1e300,
                high: f64::MAX,
            }],
            fitted: vec![(0.0, f64::MAX), (f64::MAX, f64::MIN)],
            linear_slope: Some(f64::MAX),
            ceiling: Some(f64::MAX),
            peak: Some((inf, inf)),
            ..chart
        };
        let svg = scaling(&chart);
        check_xml(&svg).unwrap();
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");

        // All points invalid: a "no data" chart.
        let chart = ScaleChart {
            points: vec![ScalePoint {
                n: nan,
                median: nan,
                low: nan,
                high: nan,
            }],
            ..chart
        };
        let svg = scaling(&chart);
        check_xml(&svg).unwrap();
        assert!(svg.contains(">no data<"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    }

    #[test]
    fn svg_empty_points_say_no_data() {
        let chart = ScaleChart {
            title: "empty".into(),
            notes: vec!["nothing measured".into()],
            ..ScaleChart::default()
        };
        let svg = scaling(&chart);
        check_xml(&svg).unwrap();
        assert!(svg.contains(">no data<"));
        assert!(svg.contains("nothing measured"));
        assert!(!svg.contains("errorbar"));
    }

    #[test]
    fn svg_ticks_of_the_kit_get_si_labels() {
        let t = crate::chart::ticks(0.0, 1.23e6, 8);
        assert_eq!(t, vec![0.0, 2e5, 4e5, 6e5, 8e5, 1e6, 1.2e6]);
        let labels: Vec<String> = t.iter().map(|&v| axis_label(v)).collect();
        assert_eq!(labels, ["0", "200k", "400k", "600k", "800k", "1M", "1.2M"]);
    }

    #[test]
    fn peak_labels_have_one_decimal_then_si() {
        assert_eq!(format_n(4.33), "4.3");
        assert_eq!(format_n(1234.0), "1.23k");
    }

    #[test]
    fn svg_x_axis_uses_integer_ticks_for_small_n() {
        let chart = ScaleChart {
            points: (1..=3)
                .map(|n| ScalePoint {
                    n: n as f64,
                    median: 1.0,
                    low: 1.0,
                    high: 1.0,
                })
                .collect(),
            ..ScaleChart::default()
        };
        let svg = scaling(&chart);
        check_xml(&svg).unwrap();
        // x tick labels sit at PLOT_BOTTOM + 19.
        let labels: Vec<&str> = svg
            .split("y=\"379\" text-anchor=\"middle\">")
            .skip(1)
            .map(|s| &s[..s.find('<').unwrap()])
            .collect();
        assert_eq!(labels, ["0", "1", "2", "3"]);
    }

    #[test]
    fn svg_clipping_keeps_series_inside_plot_area() {
        let mut chart = sample_chart();
        // A steep linear line, a fit that shoots above and below the plot.
        chart.linear_slope = Some(1e9);
        chart.fitted = vec![
            (-5.0, 1e6),
            (0.0, 0.0),
            (5.0, 1e12),
            (10.0, -1e12),
            (15.0, 5e6),
            (20.0, 6e6),
            (1e9, 1e6),
        ];
        let svg = scaling(&chart);
        check_xml(&svg).unwrap();
        let coords = polyline_coords(&svg);
        assert!(svg.contains("class=\"linear\"") && svg.contains("class=\"fit\""));
        assert!(coords.len() >= 6);
        for (x, y) in coords {
            assert!((PLOT_LEFT..=PLOT_RIGHT).contains(&x), "x {x} outside");
            assert!((PLOT_TOP..=PLOT_BOTTOM).contains(&y), "y {y} outside");
        }
    }

    #[test]
    fn svg_clip_segment_intersects_edges() {
        // Fully inside: unchanged.
        let a = (100.0, 100.0);
        let b = (200.0, 200.0);
        assert_eq!(clip_segment(a, b), Some((a, b)));
        // Crossing the top edge.
        let (p, q) = clip_segment((100.0, 200.0), (100.0, -100.0)).unwrap();
        assert_eq!(p, (100.0, 200.0));
        assert_eq!(q, (100.0, PLOT_TOP));
        // Entirely outside.
        assert_eq!(clip_segment((0.0, 0.0), (10.0, 10.0)), None);
        // Passing through diagonally: both ends on the border.
        let (p, q) = clip_segment((0.0, 400.0), (800.0, 0.0)).unwrap();
        for (x, y) in [p, q] {
            assert!((PLOT_LEFT..=PLOT_RIGHT).contains(&x));
            assert!((PLOT_TOP..=PLOT_BOTTOM).contains(&y));
        }
    }

    #[test]
    fn svg_ceiling_far_above_data_is_not_drawn() {
        let mut chart = sample_chart();
        chart.ceiling = Some(1e12);
        let svg = scaling(&chart);
        assert!(!svg.contains("class=\"ceiling\""));
        assert!(!svg.contains("Amdahl ceiling"));
    }

    #[test]
    fn svg_output_is_deterministic() {
        let chart = sample_chart();
        let a = scaling(&chart);
        let b = scaling(&chart.clone());
        assert_eq!(a, b);
        assert!(!a.contains("NaN") && !a.contains("inf"));
    }

    #[test]
    fn svg_height_grows_with_notes() {
        let mut chart = sample_chart();
        chart.notes = (0..10).map(|i| format!("note {i}")).collect();
        let svg = scaling(&chart);
        check_xml(&svg).unwrap();
        let h: f64 = svg
            .split("height=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap()
            .parse()
            .unwrap();
        assert!(h > MIN_HEIGHT);
        let long = vec!["word ".repeat(60)];
        assert!(wrap_notes(&long).len() >= 3);
        assert!(
            wrap_notes(&long)
                .iter()
                .all(|l| l.chars().count() <= NOTE_WRAP)
        );
    }
}
