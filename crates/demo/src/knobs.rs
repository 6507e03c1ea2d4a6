//! The knobs: each one switches a piece of the bid server between the naive
//! code of a real case from the field notes and its tuned fix.

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::DemoError;

/// One knob's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Setting {
    /// The code from the field notes' case, before its fix.
    Naive,
    /// The fix.
    #[default]
    Tuned,
}

impl Setting {
    /// True for [`Setting::Naive`].
    pub fn is_naive(self) -> bool {
        self == Setting::Naive
    }

    /// True for [`Setting::Tuned`].
    pub fn is_tuned(self) -> bool {
        self == Setting::Tuned
    }

    fn parse(text: &str) -> Option<Setting> {
        match text {
            "naive" => Some(Setting::Naive),
            "tuned" => Some(Setting::Tuned),
            _ => None,
        }
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Setting::Naive => "naive",
            Setting::Tuned => "tuned",
        })
    }
}

/// Every knob of the demo target. Field names serialise exactly as the
/// knob names users type (`json-cache`, `sync-log-rollover`...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Knobs {
    /// Cache backend answers as JSON text parsed on every hit (naive) or as parsed objects.
    pub json_cache: Setting,
    /// Compile the domain regex and the timestamp format per request (naive) or once.
    pub formatter: Setting,
    /// Build the bidder service, reading its config file, per request (naive) or once.
    pub per_request_init: Setting,
    /// Log synchronously under one lock and roll by copying (naive) or queue and roll by rename.
    pub sync_log_rollover: Setting,
    /// One event-loop worker thread (naive) or one per core.
    pub single_worker: Setting,
    /// A new TCP connection per backend call (naive) or a keep-alive pool.
    pub no_keepalive: Setting,
    /// Post each bid event to the slow external logger in the request path (naive) or queue and batch.
    pub sync_external_call: Setting,
    /// Workers free to migrate between cores (naive) or pinned with sched_setaffinity.
    pub unpinned: Setting,
}

impl Knobs {
    /// Knob names, in the order of issue 7 and the docs.
    pub const NAMES: [&'static str; 8] = [
        "json-cache",
        "formatter",
        "per-request-init",
        "sync-log-rollover",
        "single-worker",
        "no-keepalive",
        "sync-external-call",
        "unpinned",
    ];

    /// Every knob naive.
    pub fn all_naive() -> Knobs {
        let n = Setting::Naive;
        Knobs {
            json_cache: n,
            formatter: n,
            per_request_init: n,
            sync_log_rollover: n,
            single_worker: n,
            no_keepalive: n,
            sync_external_call: n,
            unpinned: n,
        }
    }

    /// Every knob tuned.
    pub fn all_tuned() -> Knobs {
        Knobs::default()
    }

    /// Only the knob `name` naive, all others tuned.
    pub fn only(name: &str) -> Result<Knobs, DemoError> {
        let mut knobs = Knobs::all_tuned();
        knobs.set(name, Setting::Naive)?;
        Ok(knobs)
    }

    /// Sets one knob by name.
    pub fn set(&mut self, name: &str, setting: Setting) -> Result<(), DemoError> {
        let slot = self
            .slot(name)
            .ok_or_else(|| DemoError::UnknownKnob(name.to_string()))?;
        *slot = setting;
        Ok(())
    }

    /// One knob's setting by name.
    pub fn get(&self, name: &str) -> Result<Setting, DemoError> {
        let mut copy = *self;
        copy.slot(name)
            .map(|s| *s)
            .ok_or_else(|| DemoError::UnknownKnob(name.to_string()))
    }

    /// The finding ids (docs/findings.md) that name knob `name`'s problem
    /// when it is naive: the ground truth `keisoku demo` and the findings
    /// tests check the rules against. Empty for an unknown name.
    pub fn finding_ids(name: &str) -> &'static [&'static str] {
        match name {
            "json-cache" => &["hot-code.json-parse"],
            // The regex compile is what the profile shows; a visible format
            // parse counts too.
            "formatter" => &["hot-code.regex-compile", "hot-code.formatter"],
            "per-request-init" => &["hot-code.config-load", "hot-code.file-open"],
            "sync-log-rollover" => &["stalls"],
            "single-worker" => &["single-core"],
            "no-keepalive" => &["connection-churn"],
            "sync-external-call" => &["blocking-wait"],
            "unpinned" => &["scheduler-churn"],
            _ => &[],
        }
    }

    /// Names of the knobs that are naive.
    pub fn naive_names(&self) -> Vec<&'static str> {
        Knobs::NAMES
            .into_iter()
            .filter(|n| self.get(n).is_ok_and(Setting::is_naive))
            .collect()
    }

    /// Parses `name=naive|tuned` pairs separated by commas, starting from all
    /// tuned; `all=naive` or `all=tuned` sets every knob. Empty text is all tuned.
    pub fn parse_list(text: &str) -> Result<Knobs, DemoError> {
        let mut knobs = Knobs::all_tuned();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = item.split_once('=').ok_or_else(|| {
                DemoError::BadKnobList(format!("`{item}` is not NAME=naive|tuned"))
            })?;
            let setting = Setting::parse(value.trim()).ok_or_else(|| {
                DemoError::BadKnobList(format!("`{value}` in `{item}` is neither naive nor tuned"))
            })?;
            if name.trim() == "all" {
                knobs = if setting.is_naive() {
                    Knobs::all_naive()
                } else {
                    Knobs::all_tuned()
                };
            } else {
                knobs.set(name.trim(), setting)?;
            }
        }
        Ok(knobs)
    }

    fn slot(&mut self, name: &str) -> Option<&mut Setting> {
        Some(match name {
            "json-cache" => &mut self.json_cache,
            "formatter" => &mut self.formatter,
            "per-request-init" => &mut self.per_request_init,
            "sync-log-rollover" => &mut self.sync_log_rollover,
            "single-worker" => &mut self.single_worker,
            "no-keepalive" => &mut self.no_keepalive,
            "sync-external-call" => &mut self.sync_external_call,
            "unpinned" => &mut self.unpinned,
            _ => return None,
        })
    }
}

/// Formats as the list [`Knobs::parse_list`] reads back.
impl fmt::Display for Knobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, name) in Knobs::NAMES.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let setting = self.get(name).map_err(|_| fmt::Error)?;
            write!(f, "{name}={setting}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sets_one_knob_naive() {
        for name in Knobs::NAMES {
            let knobs = Knobs::only(name).unwrap();
            assert_eq!(knobs.naive_names(), vec![name]);
        }
        assert!(Knobs::only("nope").is_err());
    }

    #[test]
    fn list_round_trips_and_rejects_bad_items() {
        let knobs = Knobs::parse_list("json-cache=naive, unpinned=naive").unwrap();
        assert_eq!(knobs.naive_names(), vec!["json-cache", "unpinned"]);
        assert_eq!(Knobs::parse_list(&knobs.to_string()).unwrap(), knobs);
        assert_eq!(Knobs::parse_list("all=naive").unwrap(), Knobs::all_naive());
        assert_eq!(Knobs::parse_list("").unwrap(), Knobs::all_tuned());
        assert!(Knobs::parse_list("json-cache").is_err());
        assert!(Knobs::parse_list("json-cache=slow").is_err());
        assert!(Knobs::parse_list("jsoncache=naive").is_err());
    }

    #[test]
    fn serde_uses_the_issue_names() {
        let json = serde_json::to_value(Knobs::all_naive()).unwrap();
        let obj = json.as_object().unwrap();
        let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        for name in Knobs::NAMES {
            assert!(keys.contains(&name), "{name} missing from {keys:?}");
            assert_eq!(obj[name], "naive");
        }
        let back: Knobs = serde_json::from_value(json).unwrap();
        assert_eq!(back, Knobs::all_naive());
    }

    #[test]
    fn every_knob_names_its_findings() {
        for name in Knobs::NAMES {
            assert!(!Knobs::finding_ids(name).is_empty(), "{name}");
        }
        assert!(Knobs::finding_ids("nope").is_empty());
    }
}
