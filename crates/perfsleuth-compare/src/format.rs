//! The compare renderers' cells: values in their metric's unit, relative
//! changes with their CI and p-values, built on `perfsleuth_report`'s
//! formatters so compare prints numbers exactly as the run summary does.

use perfsleuth_model::quantity::MISSING;
use perfsleuth_stats::RelativeChange;

pub(crate) use perfsleuth_report::{format_change as percent, format_metric as value};

/// The change with its CI: "+3.1% [+2.0% … +4.2%]"; "+3.1% (exact)" for
/// deterministic counts (no resampling, a zero-width interval); "–"
/// without one.
pub(crate) fn change_with_ci(change: Option<&RelativeChange>) -> String {
    match change {
        Some(c) if c.resamples == 0 && c.ci.lo == c.ci.hi => {
            format!("{} (exact)", percent(c.change))
        }
        Some(c) => format!(
            "{} [{} … {}]",
            percent(c.change),
            percent(c.ci.lo),
            percent(c.ci.hi)
        ),
        None => MISSING.to_string(),
    }
}

/// A p-value with as many digits as carry meaning: "0.21", "0.004",
/// "<0.001"; "–" when there is none.
pub(crate) fn p_value(p: Option<f64>) -> String {
    p.filter(|p| p.is_finite())
        .map_or_else(|| MISSING.to_string(), perfsleuth_report::format_p_value)
}

pub(crate) use perfsleuth_report::{pad_left, pad_right, width};

#[cfg(test)]
mod tests {
    use super::*;
    use perfsleuth_model::Metric;
    use perfsleuth_stats::Interval;

    #[test]
    fn units() {
        assert_eq!(value(Metric::Wall, 850.0), "850 ns");
        assert_eq!(value(Metric::Wall, f64::NAN), "–");
        assert_eq!(value(Metric::PeakRss, 12.4 * 1024.0 * 1024.0), "12.4 MiB");
        assert_eq!(value(Metric::MinorFaults, 7.5), "7.5");
        assert_eq!(value(Metric::PeakRss, 4096.0), "4.0 KiB");
        assert_eq!(value(Metric::Wall, 12_300_000.0), "12.300 ms");
    }

    #[test]
    fn changes_and_p() {
        assert_eq!(percent(0.031), "+3.1%");
        assert_eq!(percent(-0.12), "-12.0%");
        assert_eq!(percent(0.0), "±0.0%");
        assert_eq!(percent(-0.000_01), "±0.0%");
        assert_eq!(percent(2.5), "+250%");
        let c = RelativeChange {
            change: 0.031,
            ci: Interval {
                lo: 0.02,
                hi: 0.042,
            },
            resamples: 10,
        };
        assert_eq!(change_with_ci(Some(&c)), "+3.1% [+2.0% … +4.2%]");
        assert_eq!(change_with_ci(None), "–");
        assert_eq!(p_value(Some(0.0004)), "<0.001");
        assert_eq!(p_value(Some(0.0042)), "0.004");
        assert_eq!(p_value(Some(0.213)), "0.21");
        assert_eq!(p_value(None), "–");
        assert_eq!(p_value(Some(f64::NAN)), "–");
    }
}
