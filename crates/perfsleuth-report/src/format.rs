//! Human formatting for the renderers: the quantities' text comes from
//! [`perfsleuth_model::quantity`] (re-exported here, the one set every
//! renderer and the engine's messages use); this module adds the layout —
//! shortening, padding by display width, tables.

pub use perfsleuth_model::quantity::*;

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
    table_rows(rows, &column_widths(rows), align)
}

/// The width of each column of `rows`: its widest cell.
pub fn column_widths(rows: &[Vec<String>]) -> Vec<usize> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| width(s))
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// `rows` laid out as [`table`] lays them, at `widths` (a column of a
/// streamed table keeps the widths of its first part; a wider cell later
/// only shifts its own row).
pub fn table_rows(
    rows: &[Vec<String>],
    widths: &[usize],
    align: impl Fn(usize) -> Align,
) -> String {
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| {
                let w = widths.get(c).copied().unwrap_or(0);
                match align(c) {
                    Align::Left => pad_right(s, w),
                    Align::Right => pad_left(s, w),
                }
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
        assert_eq!(format_duration_ns(f64::NAN), "–");
        assert_eq!(format_duration_ns(f64::INFINITY), "–");
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
        assert_eq!(format_bytes(f64::NAN), "–");
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
        assert_eq!(format_ratio_min(f64::NAN, 2), "–×");
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
        assert_eq!(format_fixed(f64::NAN, 1), "–");
        assert_eq!(format_level(0.95), "95%");
        assert_eq!(format_level(0.975), "97.5%");
        assert_eq!(format_level(1.0 - 0.05 / 8.0), "99.38%");
        assert_eq!(format_count(7.0), "7");
        assert_eq!(format_count(7.5), "7.5");
        assert_eq!(format_count(f64::NAN), "–");
        assert_eq!(format_p_value(0.0004), "<0.001");
        assert_eq!(format_p_value(0.0042), "0.004");
        assert_eq!(format_p_value(0.213), "0.21");
        assert_eq!(format_p_value(f64::NAN), "–");
        assert_eq!(format_p(f64::NAN), "p = –");
        assert_eq!(format_si_unit(2.3e8, "ops/s"), "230 Mops/s");
        assert_eq!(format_si_unit(3.634e9, "ops/s"), "3.63 Gops/s");
        assert_eq!(format_si_unit(950.0, "ops/s"), "950 ops/s");
        assert_eq!(format_si_unit(999_960.0, "ops/s"), "1.00 Mops/s");
        assert_eq!(format_si_unit(f64::INFINITY, "ops/s"), "–");
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
        assert_eq!(format_si(f64::NAN), "–");
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
