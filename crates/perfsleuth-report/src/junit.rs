//! JUnit XML, the test-results format GitLab, Jenkins and Azure Pipelines
//! show in a merge request: `compare`, `ab` and `history --check` write one
//! test case per benchmark and metric (`--export-junit`), `bisect` one per
//! commit of its range. The XML is
//! written by `quick-junit` (nextest's), which also drops the characters
//! XML cannot carry (a benchmark name is user text).

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

/// One test case: a benchmark's metric, judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The test's name ("sort · wall").
    pub name: String,
    /// What groups it (the benchmark).
    pub classname: String,
    /// Passed, failed (the gate) or skipped (not judged).
    pub outcome: Outcome,
    /// The verdict line and notes, shown beside the test.
    pub output: String,
    /// The candidate's median time, when the metric is a time.
    pub seconds: Option<f64>,
    /// The numbers behind the verdict, as name and value.
    pub properties: Vec<(String, String)>,
}

/// How a [`Case`] ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Nothing gated it.
    Passed,
    /// The gate fails on it: `kind` is the verdict ("regressed"),
    /// `message` one line, `detail` the numbers.
    Failed {
        /// The failure's type attribute.
        kind: String,
        /// One line: what failed.
        message: String,
        /// The numbers and notes.
        detail: String,
    },
    /// Not judged (a benchmark one side lacks, where that does not fail).
    Skipped {
        /// Why.
        message: String,
    },
}

/// Why a JUnit document could not be written (quick-junit's own error).
pub use quick_junit::SerializeError as JunitError;

/// The JUnit document of one suite of `cases`.
pub fn render(report: &str, suite: &str, cases: &[Case]) -> Result<String, JunitError> {
    let mut s = TestSuite::new(suite);
    for c in cases {
        let status = match &c.outcome {
            Outcome::Passed => TestCaseStatus::success(),
            Outcome::Failed {
                kind,
                message,
                detail,
            } => {
                let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
                st.set_type(kind.as_str())
                    .set_message(message.as_str())
                    .set_description(detail.as_str());
                st
            }
            Outcome::Skipped { message } => {
                let mut st = TestCaseStatus::skipped();
                st.set_message(message.as_str());
                st
            }
        };
        let mut case = TestCase::new(c.name.as_str(), status);
        case.set_classname(c.classname.as_str());
        if let Some(t) = c.seconds.filter(|t| t.is_finite() && *t >= 0.0) {
            case.set_time(Duration::from_secs_f64(t.min(1e9)));
        }
        if !c.output.is_empty() {
            case.set_system_out(c.output.as_str());
        }
        case.add_properties(
            c.properties
                .iter()
                .map(|(k, v)| Property::new(k.as_str(), v.as_str())),
        );
        s.add_test_case(case);
    }
    let mut r = Report::new(report);
    r.add_test_suite(s);
    r.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_become_testcases_with_their_outcome_and_clean_text() {
        let cases = vec![
            Case {
                name: "sort \u{1b}[31m· wall".into(),
                classname: "sort".into(),
                outcome: Outcome::Failed {
                    kind: "regressed".into(),
                    message: "wall +12.0% <&>".into(),
                    detail: "p = 0.001\u{7}".into(),
                },
                output: String::new(),
                seconds: Some(0.25),
                properties: vec![("change".into(), "0.12".into())],
            },
            Case {
                name: "gone · wall".into(),
                classname: "gone".into(),
                outcome: Outcome::Skipped {
                    message: "only in the baseline".into(),
                },
                output: "x".into(),
                seconds: Some(f64::NAN),
                properties: vec![],
            },
        ];
        let xml = render("perfsleuth", "compare", &cases).unwrap();
        assert!(xml.contains(r#"tests="2""#), "{xml}");
        assert!(xml.contains(r#"failures="1""#), "{xml}");
        assert!(xml.contains(r#"skipped="1""#), "{xml}");
        assert!(xml.contains(r#"name="sort · wall""#), "{xml}");
        assert!(xml.contains("wall +12.0% &lt;&amp;&gt;"), "{xml}");
        assert!(!xml.contains('\u{7}') && !xml.contains('\u{1b}'), "{xml}");
        assert!(xml.contains(r#"time="0.250""#), "{xml}");
    }
}
