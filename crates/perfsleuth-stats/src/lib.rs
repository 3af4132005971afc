//! Pure statistics for perfsleuth: descriptive summaries, distribution-free
//! confidence intervals, bootstrap ratios and changes, the rank test,
//! false discovery rate control and the compare verdict rule.
//!
//! Everything here is deterministic math on slices: no I/O, no global state,
//! no dependencies. Functions that cannot give a meaningful answer for their
//! input (empty slices, NaN, invalid confidence levels) return `None` instead
//! of panicking, because the inputs come straight from measurements.

#![forbid(unsafe_code)]

mod assess;
mod binomial;
mod bootstrap;
mod changepoint;
mod describe;
mod exact;
mod fdr;
mod mann_whitney;
mod normal;
mod paired;
mod rng;
mod sequential;
mod summary;
mod usl;
mod verdict;

pub use assess::{Estimate, RESAMPLES, SEED, estimate, expanded_confidence};
pub use binomial::median_ci_rank;
pub use bootstrap::{
    MedianShift, RatioEstimate, RelativeChange, bootstrap_median_ratio, bootstrap_median_shift,
    bootstrap_relative_change, bootstrap_relative_change_runs,
};
pub use changepoint::{
    ChangeOptions, ChangePoint, DEFAULT_MAX_P, DEFAULT_WINDOW, FLOOR_SIGMAS, change_points,
    noise_floor, relative_noise, t_two_sided_p,
};
pub use describe::{
    DEFAULT_CONFIDENCE, Interval, MODIFIED_Z_THRESHOLD, Summary, mad, median, median_ci,
    modified_z_outliers, percentile, relative_median_ci_halfwidth, summarize,
};
pub use exact::EXACT_MAX;
pub use fdr::{benjamini_hochberg, bh_adjusted, holm_adjusted};
pub use mann_whitney::{EXACT_MAX_TOTAL, MannWhitney, mann_whitney_u};
pub use normal::{erfc, normal_cdf, normal_quantile, t_quantile};
pub use paired::{MIN_PAIRS, PairedEstimate, estimate_pairs};
pub use rng::Rng;
pub use sequential::{LOOK_GROWTH, look_alpha, look_for_rounds, look_rounds};
pub use summary::{MeanSd, welch_relative_change};
pub use usl::{
    UslError, UslFit, UslModel, UslPoint, fit_usl, fit_usl_capped, usl_efficiency, usl_throughput,
};
pub use verdict::{
    Direction, Evidence, Verdict, VerdictRule, decide, samples_to_narrow, smallest_p, verdict,
};

/// Rejects confidence levels outside the open interval (0, 1), NaN included.
fn valid_confidence(confidence: f64) -> bool {
    confidence > 0.0 && confidence < 1.0
}
