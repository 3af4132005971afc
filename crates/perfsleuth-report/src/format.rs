//! Human formatting of durations, sizes, counts, ratios and p-values: the
//! one set every renderer (run summary, compare, scale) uses.
//!
//! Units are explicit types so a renderer can choose one unit for a group of
//! numbers (a benchmark, a table column) and print them all in it: mixed units
//! in one column make values hard to compare at a glance.

use perfsleuth_model::Metric;

/// A display unit for durations measured in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
}

impl TimeUnit {
    /// The unit that shows `ns` best. Thresholds sit just below the next
    /// power of 1000 so values never print as "1000.0 µs" after rounding.
    pub(crate) fn for_ns(ns: f64) -> TimeUnit {
        let a = ns.abs();
        if a.is_nan() || a < 999.5 {
            TimeUnit::Ns
        } else if a < 999_950.0 {
            TimeUnit::Us
        } else if a < 999_999_500.0 {
            TimeUnit::Ms
        } else {
            TimeUnit::S
        }
    }

    /// The suffix printed after numbers.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            TimeUnit::Ns => "ns",
            TimeUnit::Us => "µs",
            TimeUnit::Ms => "ms",
            TimeUnit::S => "s",
        }
    }

    /// Nanoseconds per unit.
    fn scale(self) -> f64 {
        match self {
            TimeUnit::Ns => 1.0,
            TimeUnit::Us => 1e3,
            TimeUnit::Ms => 1e6,
            TimeUnit::S => 1e9,
        }
    }

    /// Decimals that keep roughly the resolution a process timer has at
    /// that scale, without printing meaningless digits.
    fn decimals(self) -> usize {
        match self {
            TimeUnit::Ns => 0,
            TimeUnit::Us => 1,
            TimeUnit::Ms | TimeUnit::S => 3,
        }
    }

    /// `ns` in this unit, without the suffix ("12.345").
    pub(crate) fn number(self, ns: f64) -> String {
        format_fixed(ns / self.scale(), self.decimals())
    }

    /// `ns` in this unit with the suffix ("12.345 ms").
    pub(crate) fn format(self, ns: f64) -> String {
        if !ns.is_finite() {
            return "n/a".to_string();
        }
        format!("{} {}", self.number(ns), self.symbol())
    }
}

/// A display unit for sizes in bytes (binary prefixes, as `ps`/`top` use).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ByteUnit {
    B,
    KiB,
    MiB,
    GiB,
    TiB,
}

impl ByteUnit {
    /// The unit that shows `bytes` best, with the same rounding care as
    /// [`TimeUnit::for_ns`].
    pub(crate) fn for_bytes(bytes: f64) -> ByteUnit {
        const K: f64 = 1024.0;
        let a = bytes.abs();
        if a.is_nan() || a < 1023.5 {
            ByteUnit::B
        } else if a < 1023.95 * K {
            ByteUnit::KiB
        } else if a < 1023.95 * K * K {
            ByteUnit::MiB
        } else if a < 1023.95 * K * K * K {
            ByteUnit::GiB
        } else {
            ByteUnit::TiB
        }
    }

    /// The suffix printed after numbers.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            ByteUnit::B => "B",
            ByteUnit::KiB => "KiB",
            ByteUnit::MiB => "MiB",
            ByteUnit::GiB => "GiB",
            ByteUnit::TiB => "TiB",
        }
    }

    /// Bytes per unit.
    fn scale(self) -> f64 {
        match self {
            ByteUnit::B => 1.0,
            ByteUnit::KiB => 1024.0,
            ByteUnit::MiB => 1024.0 * 1024.0,
            ByteUnit::GiB => 1024.0 * 1024.0 * 1024.0,
            ByteUnit::TiB => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        }
    }

    /// `bytes` in this unit, without the suffix ("12.4").
    pub(crate) fn number(self, bytes: f64) -> String {
        let decimals = if self == ByteUnit::B { 0 } else { 1 };
        format_fixed(bytes / self.scale(), decimals)
    }

    /// `bytes` in this unit with the suffix ("12.4 MiB").
    pub(crate) fn format(self, bytes: f64) -> String {
        if !bytes.is_finite() {
            return "n/a".to_string();
        }
        format!("{} {}", self.number(bytes), self.symbol())
    }
}

/// A raw metric value in that metric's unit.
pub fn format_metric(metric: Metric, x: f64) -> String {
    match metric.unit() {
        "ns" => format_duration_ns(x),
        "bytes" => format_bytes(x),
        "per_s" => format!("{}/s", format_si(x)),
        _ => format_count(x),
    }
}

/// A relative change (0.031) as a signed percentage: "+3.1%", "-12%".
/// One decimal below 100 % so small real changes do not print as "0%".
pub fn format_change(change: f64) -> String {
    if !change.is_finite() {
        return "n/a".to_string();
    }
    let pct = change * 100.0;
    let text = if pct.abs() < 99.95 {
        format_fixed(pct, 1)
    } else {
        format_fixed(pct, 0)
    };
    if text.starts_with('-') || text.chars().all(|c| c == '0' || c == '.') {
        // "0.0%" reads better unsigned; negatives already carry their sign.
        if text.starts_with('-') {
            format!("{text}%")
        } else {
            format!("±{text}%")
        }
    } else {
        format!("+{text}%")
    }
}

/// `s` cut to `max` characters, an ellipsis where it was cut.
pub fn shortened(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// `s` with its first letter upper-case.
pub fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Fixed-point text of `x`; "n/a" for NaN or infinities, and never "-0.0"
/// (a rounded tiny negative value would otherwise look like a sign error).
pub fn format_fixed(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return "n/a".to_string();
    }
    let s = format!("{x:.decimals$}");
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

/// A duration given in nanoseconds, in the unit that suits it:
/// "850 ns", "12.3 µs", "1.234 ms", "2.500 s".
pub fn format_duration_ns(ns: f64) -> String {
    TimeUnit::for_ns(ns).format(ns)
}

/// A size given in bytes, with binary prefixes: "512 B", "12.4 MiB".
pub fn format_bytes(b: f64) -> String {
    ByteUnit::for_bytes(b).format(b)
}

/// A size (a cache, a buffer) in binary units, whole where it is within 0.05
/// of a whole number of its unit ("32 KiB", "1.5 MiB"): the same units as
/// [`format_bytes`], for sizes that are powers of two and read better plain.
pub fn format_size(b: f64) -> String {
    if !b.is_finite() {
        return "n/a".to_string();
    }
    let unit = ByteUnit::for_bytes(b);
    let v = b / unit.scale();
    if unit == ByteUnit::B || (v - v.round()).abs() < 0.05 {
        format!("{v:.0} {}", unit.symbol())
    } else {
        format!("{v:.1} {}", unit.symbol())
    }
}

/// A count or rate with a decimal SI prefix and three significant digits:
/// "950", "12.3k", "4.56M", "1.20G"; "n/a" when not finite.
pub fn format_si(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_string();
    }
    let a = v.abs();
    let (scale, prefix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        // Thresholds just below 1000 of the unit, so 999.96k prints as 1.00M.
        .find(|(s, _)| a >= s * 0.999_5)
        .unwrap_or((1.0, ""));
    let x = v / scale;
    let decimals = match x.abs() {
        x if x >= 99.95 => 0,
        x if x >= 9.995 => 1,
        _ if scale == 1.0 && v.fract() == 0.0 => 0,
        // Below 1, keep three significant digits: 0.250, 0.00423.
        x if x < 0.9995 => (2 - x.log10().floor() as i32).clamp(2, 12) as usize,
        _ => 2,
    };
    format!("{x:.decimals$}{prefix}")
}

/// A value with an SI prefix glued to its unit: "230 Mops/s", "3.63 Gops/s",
/// "950 ops/s"; "n/a" when not finite.
pub fn format_si_unit(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return "n/a".to_string();
    }
    let text = format_si(v);
    // format_si ends in at most one prefix letter; split it off so the
    // space goes between number and unit, not between prefix and unit.
    match text.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => format!("{} {c}{unit}", &text[..i]),
        _ => format!("{text} {unit}"),
    }
}

/// A count: whole numbers as integers, anything else with one decimal
/// (a median of an even number of samples can fall between two counts).
pub fn format_count(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 {
        format_fixed(x, 0)
    } else {
        format_fixed(x, 1)
    }
}

/// A short duration with one decimal, for secondary numbers (user/system
/// CPU time) where three decimals would only add noise: "10.1 ms".
pub(crate) fn format_duration_short(ns: f64) -> String {
    TimeUnit::for_ns(ns).format_short(ns)
}

impl TimeUnit {
    /// `ns` in this unit with one decimal (none for ns) and the suffix ("1.2 ms").
    pub(crate) fn format_short(self, ns: f64) -> String {
        if !ns.is_finite() {
            return "n/a".to_string();
        }
        let decimals = if self == TimeUnit::Ns { 0 } else { 1 };
        format!(
            "{} {}",
            format_fixed(ns / self.scale(), decimals),
            self.symbol()
        )
    }
}

/// Decimals for a ratio: two, or two significant digits below 0.1 so a
/// candidate thousands of times faster does not print as "0.00".
pub(crate) fn ratio_decimals(r: f64) -> usize {
    let a = r.abs();
    if a.is_finite() && a > 0.0 && a < 0.1 {
        ((-a.log10()).floor() as usize + 2).min(12)
    } else {
        2
    }
}

/// A ratio as a multiplier with at least `decimals` decimals: "1.03×".
pub(crate) fn format_ratio_min(r: f64, decimals: usize) -> String {
    format!("{}×", format_fixed(r, ratio_decimals(r).max(decimals)))
}

/// A p-value with as many digits as carry meaning, for a table cell:
/// "0.21", "0.004", "<0.001"; "n/a" when not finite.
pub fn format_p_value(p: f64) -> String {
    if !p.is_finite() {
        "n/a".to_string()
    } else if p < 0.001 {
        "<0.001".to_string()
    } else if p < 0.01 {
        format!("{p:.3}")
    } else {
        format!("{p:.2}")
    }
}

/// A p-value in a sentence, with its relation: "p = 0.21", "p < 0.001".
pub fn format_p(p: f64) -> String {
    match format_p_value(p).strip_prefix('<') {
        Some(bound) => format!("p < {bound}"),
        None => format!("p = {}", format_p_value(p)),
    }
}

/// A relative change in percent of `ratio` (1.25 → "25%"), with one decimal
/// below 10% so small but real differences do not print as "0%" or "3%".
pub(crate) fn format_percent(ratio: f64) -> String {
    let pct = ((ratio - 1.0) * 100.0).abs();
    if !pct.is_finite() {
        "n/a".to_string()
    } else if pct < 0.05 {
        "<0.1%".to_string()
    } else if pct < 9.95 {
        format!("{pct:.1}%")
    } else {
        format!("{pct:.0}%")
    }
}

/// Columns a terminal uses to show `s` (Unicode display width): "µ", "±" and
/// "…" take one, CJK ideographs two, combining marks none, so tables with
/// such names still line up. Escape codes are not discounted: pad, then paint.
pub fn width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// `s` right-aligned in `w` visible columns.
pub fn pad_left(s: &str, w: usize) -> String {
    format!("{}{s}", " ".repeat(w.saturating_sub(width(s))))
}

/// `s` left-aligned in `w` visible columns.
pub fn pad_right(s: &str, w: usize) -> String {
    format!("{s}{}", " ".repeat(w.saturating_sub(width(s))))
}

/// How a column of [`table`] is aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
}

/// Rows as columns two spaces apart, each padded to its widest cell in
/// visible characters; lines carry no trailing blanks.
pub fn table(rows: &[Vec<String>], align: impl Fn(usize) -> Align) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| width(s))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| match align(c) {
                Align::Left => pad_right(s, widths[c]),
                Align::Right => pad_left(s, widths[c]),
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(format_duration_ns(0.0), "0 ns");
        assert_eq!(format_duration_ns(850.0), "850 ns");
        assert_eq!(format_duration_ns(12_345.0), "12.3 µs");
        assert_eq!(format_duration_ns(1_234_000.0), "1.234 ms");
        assert_eq!(format_duration_ns(12_345_000.0), "12.345 ms");
        assert_eq!(format_duration_ns(2_500_000_000.0), "2.500 s");
        assert_eq!(format_duration_ns(3_600e9), "3600.000 s");
    }

    #[test]
    fn durations_never_print_a_thousand_of_a_unit() {
        assert_eq!(format_duration_ns(999.4), "999 ns");
        assert_eq!(format_duration_ns(999.6), "1.0 µs");
        assert_eq!(format_duration_ns(999_960.0), "1.000 ms");
        assert_eq!(format_duration_ns(999_999_600.0), "1.000 s");
    }

    #[test]
    fn odd_durations_do_not_panic() {
        assert_eq!(format_duration_ns(f64::NAN), "n/a");
        assert_eq!(format_duration_ns(f64::INFINITY), "n/a");
        assert_eq!(format_duration_ns(-1_500_000.0), "-1.500 ms");
        assert_eq!(format_duration_ns(-0.0001), "0 ns");
    }

    #[test]
    fn bytes_use_binary_prefixes() {
        assert_eq!(format_bytes(0.0), "0 B");
        assert_eq!(format_bytes(512.0), "512 B");
        assert_eq!(format_bytes(1536.0), "1.5 KiB");
        assert_eq!(format_bytes(13_002_342.0), "12.4 MiB");
        assert_eq!(format_bytes(6.2 * 1024.0 * 1024.0), "6.2 MiB");
        assert_eq!(format_bytes(3.0 * 1024.0 * 1024.0 * 1024.0), "3.0 GiB");
        assert_eq!(format_bytes(1024.0 * 1024.0 - 1.0), "1.0 MiB");
        assert_eq!(format_bytes(f64::NAN), "n/a");
    }

    #[test]
    fn short_durations_and_ratios() {
        assert_eq!(format_duration_short(10_123_456.0), "10.1 ms");
        assert_eq!(format_duration_short(2_000_000.0), "2.0 ms");
        assert_eq!(format_duration_short(0.0), "0 ns");
        assert_eq!(format_ratio_min(1.0349, 2), "1.03×");
        assert_eq!(format_ratio_min(0.0, 2), "0.00×");
        assert_eq!(format_ratio_min(0.073, 2), "0.073×");
        assert_eq!(format_ratio_min(7.3e-5, 2), "0.000073×");
        assert_eq!(format_ratio_min(f64::NAN, 2), "n/a×");
        assert_eq!(format_p(0.2134), "p = 0.21");
        assert_eq!(format_p(0.0042), "p = 0.004");
        assert_eq!(format_p(0.00001), "p < 0.001");
        assert_eq!(format_percent(0.78), "22%");
        assert_eq!(format_percent(1.032), "3.2%");
        assert_eq!(format_percent(1.0001), "<0.1%");
    }

    #[test]
    fn counts_p_values_and_si_units() {
        assert_eq!(format_fixed(-0.0001, 2), "0.00");
        assert_eq!(format_fixed(f64::NAN, 1), "n/a");
        assert_eq!(format_count(7.0), "7");
        assert_eq!(format_count(7.5), "7.5");
        assert_eq!(format_count(f64::NAN), "n/a");
        assert_eq!(format_p_value(0.0004), "<0.001");
        assert_eq!(format_p_value(0.0042), "0.004");
        assert_eq!(format_p_value(0.213), "0.21");
        assert_eq!(format_p_value(f64::NAN), "n/a");
        assert_eq!(format_p(f64::NAN), "p = n/a");
        assert_eq!(format_si_unit(2.3e8, "ops/s"), "230 Mops/s");
        assert_eq!(format_si_unit(3.634e9, "ops/s"), "3.63 Gops/s");
        assert_eq!(format_si_unit(950.0, "ops/s"), "950 ops/s");
        assert_eq!(format_si_unit(999_960.0, "ops/s"), "1.00 Mops/s");
        assert_eq!(format_si_unit(f64::INFINITY, "ops/s"), "n/a");
    }

    #[test]
    fn padding_counts_display_columns_not_bytes() {
        assert_eq!(pad_left("1.0 µs", 8), "  1.0 µs");
        assert_eq!(pad_right("±", 3), "±  ");
        assert_eq!(pad_left("toolong", 3), "toolong");
        // Wide ideographs take two columns each, a combining accent none.
        assert_eq!(width("排序"), 4);
        assert_eq!(pad_right("排序", 6), "排序  ");
        assert_eq!(width("e\u{301}"), 1);
    }

    #[test]
    fn tables_with_wide_names_line_up() {
        let rows = vec![
            vec!["benchmark".to_string(), "median".to_string()],
            vec!["排序/大".to_string(), "1.5 µs".to_string()],
            vec!["naïve…".to_string(), "12 µs".to_string()],
            vec!["x ± y".to_string(), "3.000 ms".to_string()],
        ];
        let t = table(&rows, |c| if c == 1 { Align::Right } else { Align::Left });
        assert_eq!(
            t,
            "benchmark    median\n\
             排序/大      1.5 µs\n\
             naïve…        12 µs\n\
             x ± y      3.000 ms\n"
        );
        // Every line ends in the same terminal column.
        let ends: Vec<usize> = t.lines().map(width).collect();
        assert!(ends.iter().all(|&e| e == ends[0]), "{ends:?}\n{t}");
    }

    #[test]
    fn si_prefixes_keep_three_significant_digits() {
        assert_eq!(format_si(950.0), "950");
        assert_eq!(format_si(7.0), "7");
        assert_eq!(format_si(0.25), "0.250");
        assert_eq!(format_si(0.004_234), "0.00423");
        assert_eq!(format_si(0.0), "0");
        assert_eq!(format_si(12_345.0), "12.3k");
        assert_eq!(format_si(4_560_000.0), "4.56M");
        assert_eq!(format_si(999_960.0), "1.00M");
        assert_eq!(format_si(1.2e9), "1.20G");
        assert_eq!(format_si(-3_400.0), "-3.40k");
        assert_eq!(format_si(f64::NAN), "n/a");
    }

    #[test]
    fn tables_pad_by_visible_width_and_trim() {
        let rows = vec![
            vec!["a".to_string(), "1.5 µs".to_string(), "x".to_string()],
            vec!["long".to_string(), "12 µs".to_string(), "".to_string()],
        ];
        let t = table(&rows, |c| if c == 1 { Align::Right } else { Align::Left });
        assert_eq!(t, "a     1.5 µs  x\nlong   12 µs\n");
    }
}
