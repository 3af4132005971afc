//! Gunther's Universal Scalability Law, X(N) = γN / (1 + α(N−1) + βN(N−1)),
//! fitted by bounded nonlinear least squares (α ≥ 0, β ≥ 0, γ > 0).
//!
//! The solver is a hand-written Levenberg–Marquardt on at most three
//! parameters. Bounds are never enforced by clamping inside the solver: the
//! unconstrained fit is tried first and, when it leaves the feasible region,
//! the reduced models on the boundary (α = 0; β = 0, Amdahl's law; α = β = 0,
//! linear) are refitted properly and the best feasible one is kept.

use std::fmt;

/// One measurement: concurrency N and the throughput X(N) measured at it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UslPoint {
    /// Concurrency (threads, clients, processors, load).
    pub n: f64,
    /// Throughput measured at that concurrency.
    pub x: f64,
}

/// Which model the fit finally used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UslModel {
    /// Full USL (α or β may still sit on the bound 0 when the other does not).
    Usl,
    /// Amdahl's law: β = 0.
    Amdahl,
    /// Linear scaling: α = β = 0.
    Linear,
}

/// Result of [`fit_usl`].
#[derive(Debug, Clone, PartialEq)]
pub struct UslFit {
    /// Contention (serialisation) coefficient α ≥ 0.
    pub alpha: f64,
    /// Coherency (crosstalk) coefficient β ≥ 0.
    pub beta: f64,
    /// Throughput at N = 1 (the single-unit rate) γ > 0.
    pub gamma: f64,
    /// Standard error of α (0 when fixed by the model, NaN when singular).
    pub alpha_se: f64,
    /// Standard error of β (0 when fixed by the model, NaN when singular).
    pub beta_se: f64,
    /// Standard error of γ (NaN when singular).
    pub gamma_se: f64,
    /// Residual standard error sqrt(RSS / (n − p)), p = free parameters used.
    pub residual_se: f64,
    /// Model finally used.
    pub model: UslModel,
    /// Concurrency of peak throughput N* = sqrt((1 − α) / β), when β > 0.
    pub n_star: Option<f64>,
    /// Fitted throughput at N*, when N* exists.
    pub x_at_n_star: Option<f64>,
    /// Asymptotic Amdahl ceiling γ / α, when α > 0.
    pub amdahl_ceiling: Option<f64>,
    /// CPUs the work could run on, when the fit accounted for
    /// oversubscription (see [`fit_usl_capped`]).
    pub capacity: Option<f64>,
}

impl UslFit {
    /// Fitted throughput at concurrency `n`, honouring the capacity.
    pub fn throughput(&self, n: f64) -> f64 {
        capped_throughput(self.alpha, self.beta, self.gamma, n, self.cap())
    }

    /// Efficiency X(N) / (N · X(1)) of the fitted curve.
    pub fn efficiency(&self, n: f64) -> f64 {
        self.throughput(n) / (n * self.throughput(1.0))
    }

    /// Where the fitted curve peaks, (N, X): N* when it lies within the
    /// capacity, else the capacity itself; None when the curve never turns.
    pub fn peak(&self) -> Option<(f64, f64)> {
        let n = match (self.n_star, self.capacity) {
            (Some(star), Some(cap)) => star.min(cap),
            (Some(star), None) => star,
            (None, Some(cap)) => cap,
            (None, None) => return None,
        };
        Some((n, self.throughput(n)))
    }

    fn cap(&self) -> f64 {
        self.capacity.unwrap_or(f64::INFINITY)
    }
}

/// Capacity-limited USL: γ·min(N, C) / (1 + α(N−1) + βN(N−1)).
fn capped_throughput(alpha: f64, beta: f64, gamma: f64, n: f64, cap: f64) -> f64 {
    gamma * n.min(cap) / (1.0 + alpha * (n - 1.0) + beta * n * (n - 1.0))
}

/// Why a USL fit was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UslError {
    /// Fewer than 4 points (the count given).
    TooFewPoints(usize),
    /// A concurrency or throughput is NaN or infinite.
    NonFinite,
    /// A concurrency or throughput is zero or negative.
    NonPositive,
    /// The solver did not converge.
    NoConvergence,
}

impl fmt::Display for UslError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UslError::TooFewPoints(n) => write!(
                f,
                "too few points for a scalability fit: {n} given, at least {MIN_POINTS} needed"
            ),
            UslError::NonFinite => {
                write!(
                    f,
                    "concurrency and throughput must be finite numbers (found NaN or infinity)"
                )
            }
            UslError::NonPositive => {
                write!(f, "concurrency and throughput must be greater than zero")
            }
            UslError::NoConvergence => {
                write!(f, "the scalability fit did not converge")
            }
        }
    }
}

impl std::error::Error for UslError {}

/// Fewest points [`fit_usl`] accepts.
const MIN_POINTS: usize = 4;
/// Iteration cap of the Levenberg–Marquardt loop.
const MAX_ITER: usize = 5000;

/// USL throughput γN / (1 + α(N−1) + βN(N−1)).
pub fn usl_throughput(alpha: f64, beta: f64, gamma: f64, n: f64) -> f64 {
    gamma * n / (1.0 + alpha * (n - 1.0) + beta * n * (n - 1.0))
}

/// Efficiency X(N) / (N · X(1)) of the fitted curve.
pub fn usl_efficiency(fit: &UslFit, n: f64) -> f64 {
    fit.efficiency(n)
}

/// Free parameters of a (possibly reduced) model, in order α, β, γ.
#[derive(Clone, Copy)]
struct Spec {
    free: [bool; 3],
}

/// Outcome of one least-squares fit of one model.
struct Solved {
    theta: [f64; 3],
    rss: f64,
    se: [f64; 3],
    p: usize,
}

/// Fits the USL to the points by bounded least squares (α, β ≥ 0, γ > 0).
/// Refuses fewer than 4 points; callers should warn below 6.
pub fn fit_usl(points: &[UslPoint]) -> Result<UslFit, UslError> {
    fit(points, f64::INFINITY)
}

/// Fits the USL when the work could use at most `capacity` CPUs: beyond
/// them, N threads share C CPUs, so the ideal term γN becomes γ·min(N, C)
/// while the contention and coherency penalties still grow with N. A
/// perfectly parallel program oversubscribed on C CPUs then plateaus at γC
/// with α = β = 0, instead of being mistaken for coherency loss. With
/// `capacity` at or above every measured N this is exactly [`fit_usl`].
pub fn fit_usl_capped(points: &[UslPoint], capacity: f64) -> Result<UslFit, UslError> {
    if !(capacity.is_finite() && capacity >= 1.0) {
        return Err(UslError::NonPositive);
    }
    let max_n = points.iter().map(|p| p.n).fold(0.0, f64::max);
    if max_n <= capacity {
        return fit(points, f64::INFINITY);
    }
    fit(points, capacity)
}

fn fit(points: &[UslPoint], cap: f64) -> Result<UslFit, UslError> {
    if points.len() < MIN_POINTS {
        return Err(UslError::TooFewPoints(points.len()));
    }
    if points.iter().any(|p| !p.n.is_finite() || !p.x.is_finite()) {
        return Err(UslError::NonFinite);
    }
    if points.iter().any(|p| p.n <= 0.0 || p.x <= 0.0) {
        return Err(UslError::NonPositive);
    }

    let gamma0 = start_gamma(points, cap);
    let (a0, b0) = start_alpha_beta(points, gamma0, cap);

    let (solved, model) = best_feasible(points, gamma0, [a0, b0, gamma0], cap)?;
    Ok(finish(solved, model, points.len(), cap))
}

/// Best feasible fit among the full model (started at `start`) and the
/// reduced models on the bounds: α = β = 0, β = 0 (Amdahl) and α = 0. Models
/// are tried simplest first and a more complex one must lower the RSS by
/// more than rounding noise, so exactly linear or Amdahl data is not
/// reported with coefficients of 1e-17.
fn best_feasible(
    points: &[UslPoint],
    gamma0: f64,
    start: [f64; 3],
    cap: f64,
) -> Result<(Solved, UslModel), UslError> {
    let scale: f64 = points.iter().map(|p| p.x * p.x).sum();
    let full = levenberg_marquardt(
        points,
        Spec {
            free: [true, true, true],
        },
        start,
        cap,
    )?;
    let alpha0 = single_start(points, gamma0, cap, |n| n - 1.0);
    let amdahl = levenberg_marquardt(
        points,
        Spec {
            free: [true, false, true],
        },
        [alpha0, 0.0, gamma0],
        cap,
    );
    let beta0 = single_start(points, gamma0, cap, |n| n * (n - 1.0));
    let coherency = levenberg_marquardt(
        points,
        Spec {
            free: [false, true, true],
        },
        [0.0, beta0, gamma0],
        cap,
    );
    let mut best = (linear_fit(points, cap), UslModel::Linear);
    let candidates = [
        (amdahl, UslModel::Amdahl),
        (coherency, UslModel::Usl),
        (Ok(full), UslModel::Usl),
    ];
    for (cand, model) in candidates {
        // A reduced model that fails to converge is simply not a candidate.
        let Ok(cand) = cand else { continue };
        let feasible = cand.theta[0] >= 0.0 && cand.theta[1] >= 0.0 && cand.theta[2] > 0.0;
        if !feasible {
            continue;
        }
        let margin = if best.0.p < cand.p {
            1e-9 * best.0.rss + 1e-18 * scale
        } else {
            0.0
        };
        if cand.rss < best.0.rss - margin {
            best = (cand, model);
        }
    }
    Ok(best)
}

/// Derived quantities of the chosen fit.
fn finish(s: Solved, model: UslModel, n_points: usize, cap: f64) -> UslFit {
    let [alpha, beta, gamma] = s.theta;
    let residual_se = (s.rss / (n_points - s.p) as f64).sqrt();
    let n_star = if beta > 0.0 {
        Some(((1.0 - alpha) / beta).sqrt()).filter(|v| v.is_finite())
    } else {
        None
    };
    UslFit {
        alpha,
        beta,
        gamma,
        alpha_se: s.se[0],
        beta_se: s.se[1],
        gamma_se: s.se[2],
        residual_se,
        model,
        n_star,
        x_at_n_star: n_star.map(|n| capped_throughput(alpha, beta, gamma, n, cap)),
        amdahl_ceiling: if alpha > 0.0 {
            Some(gamma / alpha)
        } else {
            None
        },
        capacity: cap.is_finite().then_some(cap),
    }
}

/// γ start: X(1) when N = 1 was measured, else X(N_min) / N_min.
fn start_gamma(points: &[UslPoint], cap: f64) -> f64 {
    let mut min = points[0];
    for p in points {
        if p.n < min.n {
            min = *p;
        }
    }
    min.x / min.n.min(cap)
}

/// α, β start: least squares of N/C − 1 on (N−1) and N(N−1), C = X/γ,
/// without intercept, clamped to ≥ 0.
fn start_alpha_beta(points: &[UslPoint], gamma: f64, cap: f64) -> (f64, f64) {
    let (mut s11, mut s12, mut s22, mut t1, mut t2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for p in points {
        let y = p.n.min(cap) * gamma / p.x - 1.0;
        let u = p.n - 1.0;
        let v = p.n * (p.n - 1.0);
        s11 += u * u;
        s12 += u * v;
        s22 += v * v;
        t1 += u * y;
        t2 += v * y;
    }
    let det = s11 * s22 - s12 * s12;
    let (a, b) = if det.abs() > 1e-12 * (s11 * s22).abs() && det.is_finite() {
        ((t1 * s22 - t2 * s12) / det, (t2 * s11 - t1 * s12) / det)
    } else {
        (0.0, 0.0)
    };
    let clamp = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
    (clamp(a), clamp(b))
}

/// Start for a single coefficient: least squares of N/C − 1 on `reg(N)`.
fn single_start(points: &[UslPoint], gamma: f64, cap: f64, reg: impl Fn(f64) -> f64) -> f64 {
    let (mut s, mut t) = (0.0, 0.0);
    for p in points {
        let u = reg(p.n);
        s += u * u;
        t += u * (p.n.min(cap) * gamma / p.x - 1.0);
    }
    let v = t / s;
    if v.is_finite() && v > 0.0 { v } else { 0.0 }
}

/// Closed-form linear fit X = γ·min(N, C).
fn linear_fit(points: &[UslPoint], cap: f64) -> Solved {
    let snn: f64 = points.iter().map(|p| p.n.min(cap).powi(2)).sum();
    let snx: f64 = points.iter().map(|p| p.n.min(cap) * p.x).sum();
    let gamma = snx / snn;
    let rss: f64 = points
        .iter()
        .map(|p| (p.x - gamma * p.n.min(cap)).powi(2))
        .sum();
    let s2 = rss / (points.len() - 1) as f64;
    Solved {
        theta: [0.0, 0.0, gamma],
        rss,
        se: [0.0, 0.0, (s2 / snn).sqrt()],
        p: 1,
    }
}

/// Residual sum of squares, or None when some denominator is not positive
/// (the curve has a pole inside the data) or γ ≤ 0.
fn rss_at(points: &[UslPoint], t: &[f64; 3], cap: f64) -> Option<f64> {
    if t[2].is_nan() || t[2] <= 0.0 {
        return None;
    }
    let mut rss = 0.0;
    for p in points {
        let d = 1.0 + t[0] * (p.n - 1.0) + t[1] * p.n * (p.n - 1.0);
        if d.is_nan() || d <= 0.0 {
            return None;
        }
        let r = p.x - t[2] * p.n.min(cap) / d;
        rss += r * r;
    }
    rss.is_finite().then_some(rss)
}

/// Normal equations JᵀJ and Jᵀr over the free parameters (k × k, k ≤ 3).
fn normal_equations(
    points: &[UslPoint],
    t: &[f64; 3],
    idx: &[usize],
    cap: f64,
) -> ([[f64; 3]; 3], [f64; 3]) {
    let mut a = [[0.0; 3]; 3];
    let mut g = [0.0; 3];
    for p in points {
        let n = p.n;
        let d = 1.0 + t[0] * (n - 1.0) + t[1] * n * (n - 1.0);
        let f = t[2] * n.min(cap) / d;
        let full = [-f * (n - 1.0) / d, -f * n * (n - 1.0) / d, n.min(cap) / d];
        let r = p.x - f;
        for (i, &pi) in idx.iter().enumerate() {
            g[i] += full[pi] * r;
            for (j, &pj) in idx.iter().enumerate() {
                a[i][j] += full[pi] * full[pj];
            }
        }
    }
    (a, g)
}

/// Levenberg–Marquardt with Marquardt's diagonal scaling on the free
/// parameters of `spec`, starting from `start` (fixed entries stay as given).
fn levenberg_marquardt(
    points: &[UslPoint],
    spec: Spec,
    start: [f64; 3],
    cap: f64,
) -> Result<Solved, UslError> {
    let idx: Vec<usize> = (0..3).filter(|i| spec.free[*i]).collect();
    let k = idx.len();
    let mut theta = start;
    let mut rss = rss_at(points, &theta, cap).ok_or(UslError::NoConvergence)?;
    let mut lambda = 1e-3;
    let mut converged = false;
    for _ in 0..MAX_ITER {
        let (a, g) = normal_equations(points, &theta, &idx, cap);
        let mut improved = false;
        while lambda < 1e20 {
            let mut m = a;
            for (i, row) in m.iter_mut().enumerate().take(k) {
                row[i] += lambda * a[i][i].max(f64::MIN_POSITIVE);
            }
            let Some(step) = solve(&m, &g, k) else {
                lambda *= 10.0;
                continue;
            };
            let mut trial = theta;
            for (i, &pi) in idx.iter().enumerate() {
                trial[pi] += step[i];
            }
            match rss_at(points, &trial, cap) {
                Some(new) if new <= rss => {
                    let small_step = idx
                        .iter()
                        .enumerate()
                        .all(|(i, &pi)| step[i].abs() <= 1e-12 * (theta[pi].abs() + 1e-12));
                    let small_gain = rss - new <= 1e-15 * rss;
                    theta = trial;
                    rss = new;
                    lambda = (lambda / 10.0).max(1e-12);
                    improved = true;
                    if small_step || small_gain {
                        converged = true;
                    }
                    break;
                }
                _ => lambda *= 10.0,
            }
        }
        if converged || !improved {
            // No step of any size lowers the RSS: a (local) minimum.
            converged = true;
            break;
        }
    }
    if !converged || !rss.is_finite() {
        return Err(UslError::NoConvergence);
    }
    let (a, _) = normal_equations(points, &theta, &idx, cap);
    let p = k;
    let s2 = rss / (points.len() - p) as f64;
    let mut se = [0.0; 3];
    match invert(&a, k) {
        Some(inv) => {
            for (i, &pi) in idx.iter().enumerate() {
                se[pi] = (inv[i][i] * s2).sqrt();
            }
        }
        None => {
            for &pi in &idx {
                se[pi] = f64::NAN;
            }
        }
    }
    Ok(Solved { theta, rss, se, p })
}

/// Solves the k × k system `a x = b` (k ≤ 3) via the scaled inverse.
fn solve(a: &[[f64; 3]; 3], b: &[f64; 3], k: usize) -> Option<[f64; 3]> {
    let inv = invert(a, k)?;
    let mut x = [0.0; 3];
    for i in 0..k {
        x[i] = (0..k).map(|j| inv[i][j] * b[j]).sum();
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// Inverse of the symmetric positive k × k matrix `a` (k ≤ 3): scaled to unit
/// diagonal (the parameters differ by many orders of magnitude), then
/// Gauss–Jordan with partial pivoting. None when singular.
fn invert(a: &[[f64; 3]; 3], k: usize) -> Option<[[f64; 3]; 3]> {
    let mut s = [0.0; 3];
    for i in 0..k {
        if !a[i][i].is_finite() || a[i][i] <= 0.0 {
            return None;
        }
        s[i] = 1.0 / a[i][i].sqrt();
    }
    let mut m = [[0.0; 3]; 3];
    let mut inv = [[0.0; 3]; 3];
    for i in 0..k {
        for j in 0..k {
            m[i][j] = a[i][j] * s[i] * s[j];
        }
        inv[i][i] = 1.0;
    }
    for col in 0..k {
        let pivot = (col..k).max_by(|&x, &y| m[x][col].abs().total_cmp(&m[y][col].abs()))?;
        if m[pivot][col].is_nan() || m[pivot][col].abs() <= 1e-14 {
            return None;
        }
        m.swap(col, pivot);
        inv.swap(col, pivot);
        let d = m[col][col];
        for j in 0..k {
            m[col][j] /= d;
            inv[col][j] /= d;
        }
        for r in 0..k {
            if r != col {
                let f = m[r][col];
                for j in 0..k {
                    m[r][j] -= f * m[col][j];
                    inv[r][j] -= f * inv[col][j];
                }
            }
        }
    }
    let mut out = [[0.0; 3]; 3];
    for i in 0..k {
        for j in 0..k {
            out[i][j] = inv[i][j] * s[i] * s[j];
        }
    }
    out.iter().flatten().all(|v| v.is_finite()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(n: &[f64], x: &[f64]) -> Vec<UslPoint> {
        n.iter().zip(x).map(|(&n, &x)| UslPoint { n, x }).collect()
    }

    fn close(actual: f64, expected: f64, rel: f64) {
        assert!(
            ((actual - expected) / expected).abs() <= rel,
            "{actual} vs expected {expected} (rel tol {rel})"
        );
    }

    /// Deterministic multiplicative wobble in [-amp, amp], no RNG needed.
    fn wobble(i: usize, amp: f64) -> f64 {
        1.0 + amp * ((i as f64) * 2.399_963).sin()
    }

    fn synthetic(alpha: f64, beta: f64, gamma: f64, ns: &[f64], amp: f64) -> Vec<UslPoint> {
        ns.iter()
            .enumerate()
            .map(|(i, &n)| UslPoint {
                n,
                x: usl_throughput(alpha, beta, gamma, n) * wobble(i, amp),
            })
            .collect()
    }

    /// usl4j ModelTest (github.com/codahale/usl4j, src/test/.../ModelTest.java):
    /// the Cisco benchmark from Baron Schwartz, "Practical Scalability
    /// Analysis with the Universal Scalability Law", and the book's fitted
    /// sigma, kappa, lambda, N_max and X_max.
    #[test]
    fn usl4j_cisco_reference() {
        let x = [
            955.16, 1878.91, 2688.01, 3548.68, 4315.54, 5130.43, 5931.37, 6531.08, 7219.8, 7867.61,
            8278.71, 8646.7, 9047.84, 9426.55, 9645.37, 9897.24, 10097.6, 10240.5, 10532.39,
            10798.52, 11151.43, 11518.63, 11806.0, 12089.37, 12075.41, 12177.29, 12211.41,
            12158.93, 12155.27, 12118.04, 12140.4, 12074.39,
        ];
        let n: Vec<f64> = (1..=32).map(f64::from).collect();
        let fit = fit_usl(&pts(&n, &x)).expect("fit");
        assert_eq!(fit.model, UslModel::Usl);
        close(fit.alpha, 0.02671591, 1e-3);
        close(fit.beta, 7.690945e-4, 1e-3);
        close(fit.gamma, 995.6486, 1e-3);
        // The book rounds N_max to 35 and X_max to 12341.
        close(fit.n_star.expect("n_star"), 35.0, 0.02);
        close(fit.x_at_n_star.expect("x*"), 12341.0, 1e-3);
        // usl4j's throughputAtConcurrency(20).
        close(
            usl_throughput(fit.alpha, fit.beta, fit.gamma, 20.0),
            11063.633137626028,
            1e-4,
        );
    }

    /// R package `usl` (github.com/smoeding/usl), tests/confint.Rout.save:
    /// `usl(throughput ~ processors, raytracer)` gives alpha 0.0578, beta
    /// 0.0000, gamma 21.8488 — the bound on beta is active (Amdahl).
    /// Data: the `raytracer` dataset (Gunther, Guerrilla Capacity Planning).
    #[test]
    fn r_usl_raytracer_reference() {
        let n = [
            1.0, 4.0, 8.0, 12.0, 16.0, 20.0, 24.0, 28.0, 32.0, 48.0, 64.0,
        ];
        let x = [
            20.0, 78.0, 130.0, 170.0, 190.0, 200.0, 210.0, 230.0, 260.0, 280.0, 310.0,
        ];
        let fit = fit_usl(&pts(&n, &x)).expect("fit");
        assert_eq!(fit.model, UslModel::Amdahl);
        assert_eq!(fit.beta, 0.0);
        assert_eq!(fit.beta_se, 0.0);
        close(fit.alpha, 0.0578, 1e-3);
        close(fit.gamma, 21.8488, 1e-3);
        // Tighter: scipy.optimize.curve_fit of Amdahl's law on the same data
        // (computed for this test, scipy 1.17.1).
        close(fit.alpha, 0.057770781095657, 1e-6);
        close(fit.gamma, 21.848842949559494, 1e-6);
        close(fit.alpha_se, 0.005257978830501825, 1e-4);
        close(fit.gamma_se, 1.257778676872562, 1e-4);
        close(fit.residual_se, 8.801753611569056, 1e-6);
        assert_eq!(fit.n_star, None);
        close(
            fit.amdahl_ceiling.expect("ceiling"),
            21.848842949559494 / 0.057770781095657,
            1e-5,
        );
    }

    /// R package `usl`, `specsdm91` dataset (SPEC SDM91, Sun SPARCcenter
    /// 2000). tests/fitted.Rout.save prints fitted values 90 1078 1541 1850
    /// 1879 1822 1646 (3 digits) and tests/peak-scalability.Rout.save gives
    /// peak scalability 97 (2 digits); the package does not print the
    /// coefficients to 0.1 %, so those are checked against
    /// scipy.optimize.curve_fit on the same data (computed for this test,
    /// scipy 1.17.1).
    #[test]
    fn r_usl_specsdm91_reference() {
        let n = [1.0, 18.0, 36.0, 72.0, 108.0, 144.0, 216.0];
        let x = [64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775.0, 1702.2];
        let fit = fit_usl(&pts(&n, &x)).expect("fit");
        assert_eq!(fit.model, UslModel::Usl);
        let r_fitted = [90.0, 1078.0, 1541.0, 1850.0, 1879.0, 1822.0, 1646.0];
        for (&ni, &want) in n.iter().zip(&r_fitted) {
            let got = usl_throughput(fit.alpha, fit.beta, fit.gamma, ni);
            assert!((got - want).abs() <= 0.5, "N={ni}: {got} vs R {want}");
        }
        assert_eq!(fit.n_star.map(f64::round), Some(97.0));
        // scipy.optimize.curve_fit values:
        close(fit.alpha, 0.027728475709956176, 1e-4);
        close(fit.beta, 0.00010436548276142526, 1e-4);
        close(fit.gamma, 89.99523305185035, 1e-4);
        close(fit.alpha_se, 0.009121732247606004, 1e-3);
        close(fit.beta_se, 1.9875270564254176e-05, 1e-3);
        close(fit.gamma_se, 14.213489964457766, 1e-3);
        close(fit.residual_se, 82.84582002738193, 1e-5);
    }

    /// R package `usl`, tests/coef.Rout.save: this data gives alpha 0.02,
    /// beta 0.02, gamma 1.00 (3 significant digits).
    #[test]
    fn r_usl_coef_reference() {
        let n = [1.0, 2.0, 4.0, 6.0, 8.0, 10.0];
        let x = [1.0, 1.8868, 3.0769, 3.5294, 3.5398, 3.3557];
        let fit = fit_usl(&pts(&n, &x)).expect("fit");
        assert_eq!(fit.model, UslModel::Usl);
        close(fit.alpha, 0.02, 1e-3);
        close(fit.beta, 0.02, 1e-3);
        close(fit.gamma, 1.0, 1e-3);
    }

    #[test]
    fn recovers_known_parameters() {
        let ns = [1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0];
        let fit = fit_usl(&synthetic(0.05, 0.0004, 250.0, &ns, 0.0)).expect("fit");
        assert_eq!(fit.model, UslModel::Usl);
        close(fit.alpha, 0.05, 1e-6);
        close(fit.beta, 0.0004, 1e-6);
        close(fit.gamma, 250.0, 1e-6);
        assert!(fit.residual_se < 1e-6);

        // Without N = 1 and unsorted, with 1 % noise: still close.
        let ns = [32.0, 2.0, 16.0, 4.0, 64.0, 8.0, 24.0, 48.0];
        let fit = fit_usl(&synthetic(0.05, 0.0004, 250.0, &ns, 0.01)).expect("fit");
        assert_eq!(fit.model, UslModel::Usl);
        close(fit.alpha, 0.05, 0.2);
        close(fit.beta, 0.0004, 0.2);
        close(fit.gamma, 250.0, 0.05);
        assert!(fit.alpha_se > 0.0 && fit.beta_se > 0.0 && fit.gamma_se > 0.0);
    }

    #[test]
    fn linear_data_gives_linear_model() {
        let ns = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0];
        let fit = fit_usl(&synthetic(0.0, 0.0, 42.0, &ns, 0.0)).expect("fit");
        assert_eq!(fit.model, UslModel::Linear);
        assert_eq!((fit.alpha, fit.beta), (0.0, 0.0));
        close(fit.gamma, 42.0, 1e-12);
        assert_eq!(fit.n_star, None);
        assert_eq!(fit.amdahl_ceiling, None);
        close(usl_efficiency(&fit, 8.0), 1.0, 1e-12);
    }

    #[test]
    fn noisy_amdahl_data_gives_amdahl_not_negative_beta() {
        // Amdahl's law (alpha 0.1, beta 0) with +-2 % noise chosen so that the
        // unconstrained least-squares beta is slightly negative (scipy
        // curve_fit: -1.845e-4).
        let ns = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0];
        let noise = [1.01, 0.99, 1.005, 0.99, 1.0, 1.02];
        let pts: Vec<UslPoint> = ns
            .iter()
            .zip(noise)
            .map(|(&n, w)| UslPoint {
                n,
                x: usl_throughput(0.1, 0.0, 50.0, n) * w,
            })
            .collect();
        let free = Spec {
            free: [true, true, true],
        };
        let unconstrained =
            levenberg_marquardt(&pts, free, [0.1, 0.0, 50.0], f64::INFINITY).expect("lm");
        assert!(unconstrained.theta[1] < 0.0);
        close(unconstrained.theta[1], -1.84547126e-4, 1e-3);
        let fit = fit_usl(&pts).expect("fit");
        assert_eq!(fit.model, UslModel::Amdahl);
        assert_eq!(fit.beta, 0.0);
        assert_eq!(fit.beta_se, 0.0);
        close(fit.alpha, 0.1, 0.1);
        close(fit.gamma, 50.0, 0.05);
        assert_eq!(fit.n_star, None);
        close(
            fit.amdahl_ceiling.expect("ceiling"),
            fit.gamma / fit.alpha,
            1e-12,
        );
    }

    #[test]
    fn coherency_only_data_pins_alpha_to_zero() {
        // alpha 0, beta 0.01 with noise: the fit may not report alpha < 0.
        let ns = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0];
        let fit = fit_usl(&synthetic(0.0, 0.01, 10.0, &ns, 0.02)).expect("fit");
        assert!(fit.alpha >= 0.0 && fit.beta > 0.0);
        close(fit.beta, 0.01, 0.3);
        assert!(fit.n_star.is_some());
    }

    #[test]
    fn retrograde_data_gives_peak() {
        let ns = [1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 48.0];
        let fit = fit_usl(&synthetic(0.02, 0.002, 100.0, &ns, 0.0)).expect("fit");
        assert_eq!(fit.model, UslModel::Usl);
        let n_star = fit.n_star.expect("n_star");
        close(n_star, (0.98f64 / 0.002).sqrt(), 1e-6);
        let x_star = fit.x_at_n_star.expect("x*");
        close(x_star, usl_throughput(0.02, 0.002, 100.0, n_star), 1e-6);
        assert!(x_star > usl_throughput(fit.alpha, fit.beta, fit.gamma, 48.0));
        assert!(x_star > usl_throughput(fit.alpha, fit.beta, fit.gamma, 16.0));
        close(usl_efficiency(&fit, 1.0), 1.0, 1e-12);
        assert!(usl_efficiency(&fit, 48.0) < usl_efficiency(&fit, 8.0));
    }

    #[test]
    fn throughput_and_efficiency_formulas() {
        close(
            usl_throughput(0.1, 0.01, 10.0, 5.0),
            50.0 / (1.0 + 0.4 + 0.2),
            1e-15,
        );
        close(usl_throughput(0.3, 0.2, 7.0, 1.0), 7.0, 1e-15);
        let fit = UslFit {
            alpha: 0.1,
            beta: 0.01,
            gamma: 10.0,
            alpha_se: 0.0,
            beta_se: 0.0,
            gamma_se: 0.0,
            residual_se: 0.0,
            model: UslModel::Usl,
            n_star: None,
            x_at_n_star: None,
            amdahl_ceiling: None,
            capacity: None,
        };
        close(usl_efficiency(&fit, 5.0), 1.0 / 1.6, 1e-15);
    }

    #[test]
    fn refuses_bad_input() {
        let three = pts(&[1.0, 2.0, 4.0], &[1.0, 2.0, 3.0]);
        assert_eq!(fit_usl(&three), Err(UslError::TooFewPoints(3)));
        assert_eq!(fit_usl(&[]), Err(UslError::TooFewPoints(0)));
        let nan = pts(&[1.0, 2.0, 4.0, 8.0], &[1.0, f64::NAN, 3.0, 4.0]);
        assert_eq!(fit_usl(&nan), Err(UslError::NonFinite));
        let inf = pts(&[1.0, f64::INFINITY, 4.0, 8.0], &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(fit_usl(&inf), Err(UslError::NonFinite));
        let zero = pts(&[1.0, 2.0, 4.0, 8.0], &[1.0, 0.0, 3.0, 4.0]);
        assert_eq!(fit_usl(&zero), Err(UslError::NonPositive));
        let neg = pts(&[-1.0, 2.0, 4.0, 8.0], &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(fit_usl(&neg), Err(UslError::NonPositive));
        assert!(UslError::TooFewPoints(3).to_string().contains("3 given"));
        assert!(UslError::NonFinite.to_string().contains("finite"));
        assert!(
            UslError::NonPositive
                .to_string()
                .contains("greater than zero")
        );
        assert!(UslError::NoConvergence.to_string().contains("converge"));
    }

    #[test]
    fn falling_data_stays_feasible() {
        // Throughput that drops from the start: whatever model wins, the
        // coefficients respect the bounds and the fit is finite.
        let ns = [1.0, 2.0, 4.0, 8.0, 16.0];
        let x = [100.0, 90.0, 70.0, 40.0, 20.0];
        let fit = fit_usl(&pts(&ns, &x)).expect("fit");
        assert!(fit.alpha >= 0.0 && fit.beta >= 0.0 && fit.gamma > 0.0);
        assert!(fit.residual_se.is_finite());
    }

    #[test]
    fn random_curves_always_fit_within_bounds() {
        let mut rng = crate::Rng::new(6);
        let grids: [&[f64]; 3] = [
            &[1.0, 2.0, 4.0, 8.0],
            &[1.0, 2.0, 3.0, 4.0, 6.0, 8.0],
            &[2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0],
        ];
        for case in 0..300 {
            let alpha = if case % 3 == 0 {
                0.0
            } else {
                rng.next_f64() * 0.3
            };
            let beta = if case % 4 == 0 {
                0.0
            } else {
                rng.next_f64() * 0.01
            };
            let gamma = 1.0 + rng.next_f64() * 1000.0;
            let grid = grids[case % grids.len()];
            let pts: Vec<UslPoint> = grid
                .iter()
                .map(|&n| UslPoint {
                    n,
                    x: usl_throughput(alpha, beta, gamma, n)
                        * (1.0 + 0.05 * (rng.next_f64() - 0.5)),
                })
                .collect();
            let fit = fit_usl(&pts).unwrap_or_else(|e| panic!("case {case}: {e}"));
            assert!(
                fit.alpha >= 0.0 && fit.beta >= 0.0 && fit.gamma > 0.0,
                "case {case}"
            );
            assert!(fit.residual_se.is_finite(), "case {case}");
            let expect_model = match (fit.alpha > 0.0, fit.beta > 0.0) {
                (_, true) => UslModel::Usl,
                (true, false) => UslModel::Amdahl,
                (false, false) => UslModel::Linear,
            };
            assert_eq!(fit.model, expect_model, "case {case}");
        }
    }

    fn capped(alpha: f64, beta: f64, gamma: f64, cap: f64, ns: &[f64], amp: f64) -> Vec<UslPoint> {
        ns.iter()
            .enumerate()
            .map(|(i, &n)| UslPoint {
                n,
                x: capped_throughput(alpha, beta, gamma, n, cap) * wobble(i, amp),
            })
            .collect()
    }

    #[test]
    fn oversubscribed_parallel_work_is_not_mistaken_for_coherency() {
        // Perfect scaling on 2 CPUs, measured up to 8 threads: a plateau.
        let ns = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0];
        let pts = capped(0.0, 0.0, 100.0, 2.0, &ns, 0.01);
        let plain = fit_usl(&pts).expect("fit");
        assert!(plain.beta > 0.0, "the plain USL reads the plateau as β > 0");
        assert!(plain.beta > 0.01, "{plain:?}");
        let fit = fit_usl_capped(&pts, 2.0).expect("fit");
        // What noise leaves of β is within its standard error.
        assert!(fit.beta <= 2.0 * fit.beta_se, "{fit:?}");
        assert!(fit.alpha <= 2.0 * fit.alpha_se, "{fit:?}");
        assert_eq!(fit.capacity, Some(2.0));
        close(fit.gamma, 100.0, 0.01);
        close(fit.throughput(8.0), 200.0, 0.02);
        let exact = fit_usl_capped(&capped(0.0, 0.0, 100.0, 2.0, &ns, 0.0), 2.0).expect("fit");
        assert_eq!(exact.model, UslModel::Linear, "{exact:?}");
        assert_eq!(exact.peak().map(|p| p.0), Some(2.0));
    }

    #[test]
    fn oversubscribed_contention_still_fits_coherency() {
        let ns = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0];
        let pts = capped(0.1, 0.05, 100.0, 2.0, &ns, 0.0);
        let fit = fit_usl_capped(&pts, 2.0).expect("fit");
        close(fit.alpha, 0.1, 1e-4);
        close(fit.beta, 0.05, 1e-4);
        close(fit.gamma, 100.0, 1e-4);
        // N* = sqrt(0.9 / 0.05) ≈ 4.24 lies past the 2 CPUs: the peak is at 2.
        assert_eq!(fit.peak().map(|p| p.0), Some(2.0));
    }

    #[test]
    fn capacity_above_every_n_is_the_plain_fit() {
        let ns = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0];
        let pts = synthetic(0.03, 0.0005, 500.0, &ns, 0.01);
        let plain = fit_usl(&pts).expect("fit");
        let capped = fit_usl_capped(&pts, 64.0).expect("fit");
        assert_eq!(plain, capped);
        assert_eq!(capped.capacity, None);
        assert!(fit_usl_capped(&pts, 0.5).is_err());
        assert!(fit_usl_capped(&pts, f64::NAN).is_err());
    }
}
