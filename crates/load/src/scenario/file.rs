//! The scenario file as written (YAML), before anything is resolved: its
//! shape, checked key by key, so an unknown key or a value of the wrong
//! type is refused with the file's line, never ignored.

use serde::Deserialize;

/// A whole scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Where relative step URLs point (else the command line's URL).
    pub base: Option<String>,
    /// Headers of every step (a step's own replace one of the same name).
    #[serde(default)]
    pub headers: Option<serde_yaml::Mapping>,
    /// Steps each virtual user runs once, before its first iteration.
    #[serde(default)]
    pub once: Vec<StepFile>,
    /// The iteration: steps run in order, again and again.
    pub steps: Vec<StepFile>,
}

/// One step as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepFile {
    /// The step's name: its route in every result.
    pub name: String,
    /// HTTP method; GET, or POST with a body.
    pub method: Option<String>,
    /// Relative to the base URL, or absolute.
    pub url: String,
    /// Request headers.
    pub headers: Option<serde_yaml::Mapping>,
    /// Request body (templates allowed).
    pub body: Option<String>,
    /// What the response must satisfy.
    #[serde(default)]
    pub checks: Option<ChecksFile>,
    /// Values taken from the response for later steps.
    #[serde(default)]
    pub extract: Vec<ExtractFile>,
    /// Pause after the step: `500ms` or `200ms..1s`.
    pub think: Option<String>,
}

/// One status or several.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// `status: 200`
    One(u16),
    /// `status: [200, 201]`
    Many(Vec<u16>),
}

/// The checks of a step.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChecksFile {
    /// The status must be one of these.
    pub status: Option<OneOrMany>,
    /// The body must contain this text.
    pub body_contains: Option<String>,
    /// JSON path checks on the body.
    #[serde(default)]
    pub json: Vec<JsonCheckFile>,
}

/// A JSON path check: `equals` a value, or `exists` (true or false).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JsonCheckFile {
    /// `$.a.b[0]`.
    pub path: String,
    /// The value found must equal this.
    pub equals: Option<serde_yaml::Value>,
    /// The path must (true) or must not (false) lead to a value.
    pub exists: Option<bool>,
}

/// One extraction: exactly one of `json`, `header`, `regex`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtractFile {
    /// The variable's name, used as `{{var.NAME}}`.
    pub var: String,
    /// A JSON path into the body; strings are taken as they are, other
    /// values as their JSON text.
    pub json: Option<String>,
    /// A response header's value.
    pub header: Option<String>,
    /// A regular expression on the body with exactly one group.
    pub regex: Option<String>,
}

/// Parses the YAML text; the error carries the line serde_yaml reports
/// (`steps[0]: unknown field `chekcs`, expected one of ...`).
pub fn parse(text: &str) -> Result<ScenarioFile, (usize, String)> {
    serde_yaml::from_str::<ScenarioFile>(text).map_err(|e| {
        let line = e.location().map_or(1, |l| l.line());
        let msg = e.to_string();
        let msg = match msg.find(" at line ") {
            Some(i) => msg[..i].to_string(),
            None => msg,
        };
        (line, msg)
    })
}

/// The 1-based line of the first `key:` at or after the line that names
/// step `step` (`name: STEP`), for errors found after parsing, when
/// serde no longer knows where a value came from. Falls back to the
/// step's own line, then to line 1.
pub fn line_of(text: &str, step: Option<&str>, key: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let start = step
        .and_then(|s| {
            lines.iter().position(|l| {
                let t = l.trim_start().trim_start_matches('-').trim();
                t.strip_prefix("name:").is_some_and(|v| {
                    let v = v.trim();
                    v == s || v.trim_matches(|c| c == '"' || c == '\'') == s
                })
            })
        })
        .unwrap_or(0);
    let want = format!("{key}:");
    lines
        .iter()
        .enumerate()
        .skip(start)
        .find(|(_, l)| {
            let t = l.trim_start().trim_start_matches('-').trim_start();
            t.starts_with(&want)
        })
        .map_or(start + 1, |(i, _)| i + 1)
}

/// The 1-based line of the `n`-th (from 0) `name: STEP` line, for a name
/// given twice.
pub fn line_of_nth(text: &str, step: &str, n: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim_start().trim_start_matches('-').trim();
            t.strip_prefix("name:")
                .is_some_and(|v| v.trim().trim_matches(|c| c == '"' || c == '\'') == step)
        })
        .nth(n)
        .map_or(1, |(i, _)| i + 1)
}
