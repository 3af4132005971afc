//! `--export-junit`: a comparison as JUnit test cases, one per benchmark
//! and metric. A case fails where the gate (`--fail-on regressed`) fails:
//! a gating metric that regressed, and a benchmark the candidate lost
//! unless `--allow-missing`. Everything else passes with its verdict line.

use crate::format::{change_with_ci, p_value, value};
use crate::render::factor_line;
use crate::{Comparison, Row};
use perfsleuth_model::schema::VerdictLabel;
use perfsleuth_report::junit::{Case, Outcome, render};

/// The comparison as a JUnit document named `suite` (`perfsleuth ab`).
pub fn render_junit(
    c: &Comparison,
    suite: &str,
    allow_missing: bool,
) -> Result<String, perfsleuth_report::junit::JunitError> {
    render("perfsleuth", suite, &junit_cases(c, allow_missing))
}

/// The test cases of [`render_junit`], in the comparison's order.
fn junit_cases(c: &Comparison, allow_missing: bool) -> Vec<Case> {
    let mut cases: Vec<Case> = c.rows.iter().map(|r| row_case(c, r)).collect();
    for key in &c.unpaired_baseline {
        let message = format!("`{key}` is in {} but not in {}", c.baseline, c.candidate);
        let outcome = if allow_missing {
            Outcome::Skipped { message }
        } else {
            Outcome::Failed {
                kind: "missing".into(),
                message,
                detail: "the gate fails on a benchmark the candidate lost; \
                         --allow-missing lets it pass"
                    .into(),
            }
        };
        cases.push(bare_case(key, outcome));
    }
    for key in &c.unpaired_candidate {
        let message = format!(
            "`{key}` is new in {}: nothing to judge it against",
            c.candidate
        );
        cases.push(bare_case(key, Outcome::Skipped { message }));
    }
    if c.rows.is_empty() && !allow_missing {
        cases.push(Case {
            name: "benchmarks in common".into(),
            classname: "perfsleuth".into(),
            outcome: Outcome::Failed {
                kind: "nothing shared".into(),
                message: format!("{} and {} share no benchmark", c.baseline, c.candidate),
                detail: String::new(),
            },
            output: String::new(),
            seconds: None,
            properties: Vec::new(),
        });
    }
    cases
}

fn bare_case(key: &str, outcome: Outcome) -> Case {
    Case {
        name: key.to_string(),
        classname: key.to_string(),
        outcome,
        output: String::new(),
        seconds: None,
        properties: Vec::new(),
    }
}

/// "wall: 1.200 ms → 1.344 ms +12.0% [+9.1% … +15.2%] regressed (p = 0.002)".
fn verdict_line(r: &Row) -> String {
    let mut line = format!(
        "{}: {} → {} {} {} (p = {})",
        r.metric.name(),
        value(r.metric, r.baseline_median),
        value(r.metric, r.candidate_median),
        change_with_ci(r.change.as_ref()),
        r.verdict.as_str(),
        p_value(r.p_adjusted.or(r.p_value)),
    );
    if !r.gating {
        line.push_str("; does not gate");
    }
    line
}

fn row_case(c: &Comparison, r: &Row) -> Case {
    let mut output = verdict_line(r);
    for n in &r.notes {
        output.push_str(&format!("\nnote: {n}"));
    }
    let outcome = if r.gating && r.verdict == VerdictLabel::Regressed {
        Outcome::Failed {
            kind: r.verdict.as_str().into(),
            message: factor_line(c, r).unwrap_or_else(|| verdict_line(r)),
            detail: format!("{output}\n{} against {}", c.candidate, c.baseline),
        }
    } else {
        Outcome::Passed
    };
    let number = |x: f64| {
        if x.is_finite() {
            format!("{x}")
        } else {
            String::new()
        }
    };
    let mut properties = vec![
        ("verdict".to_string(), r.verdict.as_str().to_string()),
        ("gating".to_string(), r.gating.to_string()),
        ("unit".to_string(), r.metric.unit().to_string()),
        ("baseline_median".to_string(), number(r.baseline_median)),
        ("candidate_median".to_string(), number(r.candidate_median)),
    ];
    if let Some(ch) = &r.change {
        properties.push(("change".into(), number(ch.change)));
        properties.push(("change_ci_low".into(), number(ch.ci.lo)));
        properties.push(("change_ci_high".into(), number(ch.ci.hi)));
    }
    if let Some(p) = r.p_adjusted.or(r.p_value) {
        properties.push(("p_value".into(), number(p)));
    }
    Case {
        name: format!("{} · {}", r.key(), r.metric.name()),
        classname: r.key(),
        outcome,
        output,
        seconds: (r.metric.unit() == "ns").then(|| r.candidate_median / 1e9),
        properties,
    }
}
