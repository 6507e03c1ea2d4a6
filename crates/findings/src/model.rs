//! What a finding is: the shape of the Run JSON's `findings` array, which
//! the report (web/src/report/findings.ts) renders.

use serde::{Deserialize, Serialize};

/// How much a finding matters. `Info` describes the run (where the knee
/// is, what is hot) without claiming something is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A problem that costs a large share of throughput or latency.
    High,
    /// A problem worth a look.
    Warning,
    /// A description, not a problem.
    Info,
}

impl Severity {
    /// The word shown to users and stored in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::High => "high",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// A frame named as evidence, with its share of the server's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameShare {
    /// Function name as the profile has it.
    pub name: String,
    /// Module (binary or library), "" when unknown.
    #[serde(default)]
    pub module: String,
    /// Share of the server's samples (0-1) in which the frame is on the
    /// stack (inclusive) or at the top (for self-time findings).
    pub share: f64,
}

/// What a finding rests on: where to look in the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// Measured facts, one sentence each.
    #[serde(default)]
    pub text: Vec<String>,
    /// Series that show it (names as in docs/run-json.md).
    #[serde(default)]
    pub series: Vec<String>,
    /// Time range on the run's clock, ms.
    #[serde(default)]
    pub range_ms: Option<[f64; 2]>,
    /// Phase indexes (the run's `phases[].index`).
    #[serde(default)]
    pub phases: Vec<u32>,
    /// Frames with their share of samples.
    #[serde(default)]
    pub frames: Vec<FrameShare>,
}

/// One finding: what is wrong, the evidence, the impact and what to try.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable id: the rule, plus a qualifier when a rule reports several
    /// things (`hot-code.json-parse`).
    pub id: String,
    /// The rule that produced it (`saturation`, `hot-code`, ...).
    pub rule: String,
    /// What is wrong, in one line.
    pub title: String,
    /// How much it matters.
    pub severity: Severity,
    /// Ranking score, 0-100: higher first.
    pub score: f64,
    /// The finding in a sentence or two.
    pub summary: String,
    /// Estimated cost.
    pub impact: String,
    /// What to try.
    pub suggestion: String,
    /// Where it shows.
    pub evidence: Evidence,
}

impl Finding {
    /// True unless the finding only describes the run.
    pub fn is_problem(&self) -> bool {
        self.severity != Severity::Info
    }

    /// The JSON object stored with the run.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// Reads a stored finding back; `None` for objects of another shape
    /// (written by a different version), which callers skip.
    pub fn from_json(v: &serde_json::Value) -> Option<Finding> {
        serde_json::from_value(v.clone()).ok()
    }
}
