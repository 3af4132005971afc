//! Typed quantities and their text: durations, sizes, counts, rates,
//! changes and p-values, each printed one way whatever layer prints it (the
//! engine's messages, the renderers, the server), as hyperfine keeps
//! `FormatQuantity` beside its `Time` and `Information` units. Layout
//! (columns, tables, colour) stays with the renderers in `perfsleuth-report`.
//!
//! Units are explicit types so a renderer can choose one unit for a group of
//! numbers (a benchmark, a table column) and print them all in it: mixed units
//! in one column make values hard to compare at a glance.

use crate::Metric;

/// The text of a value that is not there (not measured, not finite, not
/// applicable): one spelling in every table, sentence and page.
pub const MISSING: &str = "–";

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
    pub fn for_ns(ns: f64) -> TimeUnit {
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
    pub fn symbol(self) -> &'static str {
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
    pub fn number(self, ns: f64) -> String {
        format_fixed(ns / self.scale(), self.decimals())
    }

    /// `ns` in this unit with the suffix ("12.345 ms").
    pub fn format(self, ns: f64) -> String {
        if !ns.is_finite() {
            return MISSING.to_string();
        }
        format!("{} {}", self.number(ns), self.symbol())
    }
}

/// A display unit for sizes in bytes (binary prefixes, as `ps`/`top` use).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteUnit {
    /// Bytes.
    B,
    /// 1024 bytes.
    KiB,
    /// 1024² bytes.
    MiB,
    /// 1024³ bytes.
    GiB,
    /// 1024⁴ bytes.
    TiB,
}

impl ByteUnit {
    /// The unit that shows `bytes` best, with the same rounding care as
    /// [`TimeUnit::for_ns`].
    pub fn for_bytes(bytes: f64) -> ByteUnit {
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
    pub fn symbol(self) -> &'static str {
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
    pub fn number(self, bytes: f64) -> String {
        let decimals = if self == ByteUnit::B { 0 } else { 1 };
        format_fixed(bytes / self.scale(), decimals)
    }

    /// `bytes` in this unit with the suffix ("12.4 MiB").
    pub fn format(self, bytes: f64) -> String {
        if !bytes.is_finite() {
            return MISSING.to_string();
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
        return MISSING.to_string();
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

/// A confidence level (0.975) as a percentage without trailing zeros:
/// "95%", "97.5%", "99.38%" (two decimals at most).
pub fn format_level(confidence: f64) -> String {
    let text = format_fixed(100.0 * confidence, 2);
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text}%")
}

/// Fixed-point text of `x`; "–" for NaN or infinities, and never "-0.0"
/// (a rounded tiny negative value would otherwise look like a sign error).
pub fn format_fixed(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return MISSING.to_string();
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
        return MISSING.to_string();
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
/// "950", "12.3k", "4.56M", "1.20G"; "–" when not finite.
pub fn format_si(v: f64) -> String {
    if !v.is_finite() {
        return MISSING.to_string();
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
/// "950 ops/s"; "–" when not finite.
pub fn format_si_unit(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return MISSING.to_string();
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
pub fn format_duration_short(ns: f64) -> String {
    TimeUnit::for_ns(ns).format_short(ns)
}

impl TimeUnit {
    /// `ns` in this unit with one decimal (none for ns) and the suffix ("1.2 ms").
    pub fn format_short(self, ns: f64) -> String {
        if !ns.is_finite() {
            return MISSING.to_string();
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
pub fn ratio_decimals(r: f64) -> usize {
    let a = r.abs();
    if a.is_finite() && a > 0.0 && a < 0.1 {
        ((-a.log10()).floor() as usize + 2).min(12)
    } else {
        2
    }
}

/// A ratio as a multiplier with at least `decimals` decimals: "1.03×".
pub fn format_ratio_min(r: f64, decimals: usize) -> String {
    format!("{}×", format_fixed(r, ratio_decimals(r).max(decimals)))
}

/// A p-value with as many digits as carry meaning, for a table cell:
/// "0.21", "0.004", "<0.001"; "–" when not finite.
pub fn format_p_value(p: f64) -> String {
    if !p.is_finite() {
        MISSING.to_string()
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

/// A share or level (0.25 → "25%") with `decimals` digits: the one text of
/// a percentage that is not a change (efficiency, a function's share of the
/// time, a miss rate); [`MISSING`] when not finite.
pub fn format_share(fraction: f64, decimals: usize) -> String {
    let pct = 100.0 * fraction;
    if !pct.is_finite() {
        return MISSING.to_string();
    }
    format!("{}%", format_fixed(pct, decimals))
}

/// A small relative difference with two significant digits ("0.0013%"),
/// never rounded to "0.000%" (a share of 0 is "0.0%").
pub fn format_relative(fraction: f64) -> String {
    let pct = 100.0 * fraction.abs();
    if !pct.is_finite() || pct == 0.0 {
        return format_share(fraction.abs(), 1);
    }
    // Two significant digits: as many decimals as bring it to 10 or more.
    let mut decimals = 1;
    while decimals < 12 && pct * 10f64.powi(decimals as i32) < 9.95 {
        decimals += 1;
    }
    format_share(fraction.abs(), decimals)
}

/// A relative change in percent of `ratio` (1.25 → "25%"), with one decimal
/// below 10% so small but real differences do not print as "0%" or "3%".
pub fn format_percent(ratio: f64) -> String {
    let pct = ((ratio - 1.0) * 100.0).abs();
    if !pct.is_finite() {
        MISSING.to_string()
    } else if pct < 0.05 {
        "<0.1%".to_string()
    } else if pct < 9.95 {
        format!("{pct:.1}%")
    } else {
        format!("{pct:.0}%")
    }
}
