//! What every HTML and SVG piece shares: escaping, coordinates and the one
//! stylesheet of the charts. Below both `chart` and `html`, so neither needs
//! the other for these.

/// Text for HTML and SVG: `& < > " '` escaped, and the characters XML 1.0
/// forbids (controls other than tab and line breaks, U+FFFE, U+FFFF)
/// dropped, so a hostile benchmark name cannot make a document unreadable.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// [`escape`]d text on one line, for an SVG `<text>`: a renderer deletes a
/// line break inside it, joining the words either side (a `[[bench]]`
/// command may span lines).
pub fn escape_line(s: &str) -> String {
    escape(&s.replace(['\t', '\n', '\r'], " "))
}

/// A number's text without the trailing zeros of its decimals, nor the
/// point when none is left: "2.50" → "2.5", "10.0" → "10", "100" → "100".
pub fn trim_zeros(num: &str) -> &str {
    if num.contains('.') {
        num.trim_end_matches('0').trim_end_matches('.')
    } else {
        num
    }
}

/// A coordinate or length as SVG wants it: at most `decimals` decimals,
/// trailing zeros dropped, never `NaN`, `inf` or `-0`.
pub fn coord(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return "0".to_string();
    }
    let s = format!("{v:.decimals$}");
    let s = trim_zeros(&s);
    if s == "-0" || s.is_empty() {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// The one stylesheet of every chart: colours, strokes and type by class.
/// The page's `<style>` holds it, and [`standalone`](crate::chart::standalone)
/// inlines it in a lone `.svg`. The Okabe–Ito palette (distinguishable under
/// the common colour-vision deficiencies) and its dark counterpart; the
/// scale chart (`svg.usl-chart`) draws its fit in `--reg`'s vermilion and
/// linear scaling in `--imp`'s green, the ceiling in `--c3`.
pub const CHART_CSS: &str = r#"
svg.chart{--fg:#222;--muted:#666;--grid:#e4e4e4;--bg:#fff;--edge:#bbb;--c1:#0072B2;--c2:#E69F00;--c3:#CC79A7;--reg:#D55E00;--imp:#009E73;--none:#777;--band:rgba(0,114,178,.12);font-family:system-ui,-apple-system,"Segoe UI",sans-serif;background:var(--bg)}
@media (prefers-color-scheme:dark){svg.chart{--fg:#e8e8e8;--muted:#aaa;--grid:#3a3a3a;--bg:#1b1b1b;--edge:#555;--c1:#56B4E9;--c2:#F0E442;--c3:#E8A5CC;--reg:#FF8C4A;--imp:#3FD1A6;--none:#999;--band:rgba(86,180,233,.18)}}
svg.chart text{fill:var(--fg);font-size:12px}
svg.chart .title{font-size:15px;font-weight:600}
svg.chart .tick{fill:var(--muted);font-size:11px}
svg.chart .label{fill:var(--muted)}
svg.chart .grid{stroke:var(--grid);stroke-width:1}
svg.chart .axis,svg.chart .zero{stroke:var(--muted);stroke-width:1}
svg.chart .round{stroke:var(--muted);stroke-dasharray:3 3}
svg.chart .box{fill:var(--band);stroke:var(--c1);stroke-width:1.5}
svg.chart .whisker{stroke:var(--c1);stroke-width:1.5}
svg.chart .median{stroke:var(--fg);stroke-width:2.5}
svg.chart .ci{fill:var(--c2);opacity:.35}
svg.chart .pt{fill:var(--c1);opacity:.6}
svg.chart .pts{fill:none;stroke:var(--c1);stroke-width:4;stroke-linecap:round;opacity:.6}
svg.chart .pts.r1{stroke:var(--c2)}
svg.chart .band{fill:var(--band)}
svg.chart .changepoint{stroke:var(--reg);stroke-width:2;stroke-dasharray:6 3}
svg.chart .line{fill:none;stroke:var(--c1);stroke-width:1.5}
svg.chart .marker{fill:var(--c2);stroke:var(--fg);stroke-width:.5}
svg.chart .ci-line{stroke-width:3;stroke:var(--none)}
svg.chart .change{fill:var(--none)}
svg.chart .v-regressed .ci-line{stroke:var(--reg)} svg.chart .v-regressed .change{fill:var(--reg)}
svg.chart .v-improved .ci-line{stroke:var(--imp)} svg.chart .v-improved .change{fill:var(--imp)}
svg.usl-chart{font-family:sans-serif}
svg.usl-chart .bg{fill:var(--bg)}
svg.usl-chart .title{font-size:18px;font-weight:bold}
svg.usl-chart .label,svg.usl-chart .notes text{fill:var(--fg);font-size:13px}
svg.usl-chart .empty{font-size:20px}
svg.usl-chart .frame{fill:none;stroke:var(--muted);stroke-width:1}
svg.usl-chart .legend rect{fill:var(--bg);stroke:var(--edge);stroke-width:1}
svg.usl-chart .fit,svg.usl-chart .linear,svg.usl-chart .ceiling{fill:none;stroke-width:2}
svg.usl-chart .fit{stroke:var(--reg)}
svg.usl-chart .linear{stroke:var(--imp);stroke-dasharray:8 5}
svg.usl-chart .ceiling{stroke:var(--c3);stroke-dasharray:2 4}
svg.usl-chart .errorbar,svg.usl-chart .bar{stroke:var(--c1);stroke-width:1.5}
svg.usl-chart .dot{fill:var(--c1)}
svg.usl-chart .errorbar .dot{stroke:var(--bg);stroke-width:1}
svg.usl-chart line.peak{stroke:var(--muted);stroke-width:1;stroke-dasharray:2 3}
svg.usl-chart polygon.peak{fill:var(--c2);stroke:var(--fg);stroke-width:1}
svg.usl-chart .peak-label{font-weight:bold}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_text_is_valid_xml_whatever_the_name_holds() {
        // A benchmark named with a control character made the HTML report's
        // inline SVG charts unreadable as XML (the scale chart's own escape
        // dropped them; this one did not).
        assert_eq!(
            escape("a\u{1}<b>\u{FFFF}&'\"\tc\u{1b}"),
            "a&lt;b&gt;&amp;&#39;&quot;\tc"
        );
    }

    #[test]
    fn coordinates_have_no_trailing_zeros_and_no_negative_zero() {
        assert_eq!(coord(12.0, 2), "12");
        assert_eq!(coord(12.50, 2), "12.5");
        assert_eq!(coord(-0.001, 2), "0");
        assert_eq!(coord(1234.567, 1), "1234.6");
        assert_eq!(coord(f64::NAN, 1), "0");
        assert_eq!(coord(40.0, 0), "40");
    }
}
