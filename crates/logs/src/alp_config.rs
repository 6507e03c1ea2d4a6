//! alp's configuration file (`--config FILE`, YAML): every key alp v1.0.21
//! reads, with alp's spelling. The caller applies a key only where its
//! flag was not given: flags win over the file, the file over defaults.
//!
//! As with alp (viper), keys are case-insensitive and a key left empty
//! (`sort:` with no value, as in alp's example config) is unset; lists
//! (`matching_groups`, `percentiles`, `count.keys`) may also be written as
//! one comma-separated string. Unlike alp, a key it does not know is
//! refused with its name: a misspelt key would otherwise be silently
//! without effect.

use crate::error::{Error, Result};
use serde::Deserialize;
use serde_yaml::Value;
use std::path::Path;

/// The settings of an alp config file; `None` is a key absent or empty.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlpConfig {
    /// The access log (`--file`).
    pub file: Option<String>,
    /// `--dump`.
    pub dump: Option<String>,
    /// `--load`.
    pub load: Option<String>,
    /// `--sort`.
    pub sort: Option<String>,
    /// `-r`.
    pub reverse: Option<bool>,
    /// `-q`.
    pub query_string: Option<bool>,
    /// `--qs-ignore-values`.
    pub query_string_ignore_values: Option<bool>,
    /// `--decode-uri`.
    pub decode_uri: Option<bool>,
    /// `--format`.
    pub format: Option<String>,
    /// `--noheaders`.
    pub noheaders: Option<bool>,
    /// `--show-footers`.
    pub show_footers: Option<bool>,
    /// `--limit`.
    pub limit: Option<usize>,
    /// `-m`, one expression per item.
    #[serde(deserialize_with = "list")]
    pub matching_groups: Option<Vec<String>>,
    /// `-f`.
    pub filters: Option<String>,
    /// `--pos`.
    pub pos_file: Option<String>,
    /// `--nosave-pos`.
    pub nosave_pos: Option<bool>,
    /// `--location`.
    pub location: Option<String>,
    /// `-o`.
    pub output: Option<String>,
    /// `--percentiles`.
    #[serde(deserialize_with = "list")]
    pub percentiles: Option<Vec<String>>,
    /// `--page` (html pagination).
    pub pagination_limit: Option<usize>,
    /// The LTSV labels.
    pub ltsv: Option<LtsvConfig>,
    /// The JSON keys.
    pub json: Option<JsonConfig>,
    /// The regexp pattern and group names.
    pub regexp: Option<RegexpConfig>,
    /// alp's pcap settings: the server of `keisoku logs pcap`.
    pub pcap: Option<PcapConfig>,
    /// `count --keys`.
    pub count: Option<CountConfig>,
    /// `topN --sort` and `-r`.
    #[serde(rename = "topn")]
    pub top_n: Option<TopNConfig>,
}

/// `ltsv:` keys.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LtsvConfig {
    /// `--apptime-label`.
    pub apptime_label: Option<String>,
    /// `--reqtime-label`.
    pub reqtime_label: Option<String>,
    /// `--status-label`.
    pub status_label: Option<String>,
    /// `--size-label`.
    pub size_label: Option<String>,
    /// `--method-label`.
    pub method_label: Option<String>,
    /// `--uri-label`.
    pub uri_label: Option<String>,
    /// `--time-label`.
    pub time_label: Option<String>,
}

/// `json:` keys.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JsonConfig {
    /// `--uri-key`.
    pub uri_key: Option<String>,
    /// `--method-key`.
    pub method_key: Option<String>,
    /// `--time-key`.
    pub time_key: Option<String>,
    /// `--restime-key`.
    pub response_time_key: Option<String>,
    /// `--reqtime-key`.
    pub request_time_key: Option<String>,
    /// `--body-bytes-key`.
    pub body_bytes_key: Option<String>,
    /// `--status-key`.
    pub status_key: Option<String>,
}

/// `regexp:` keys.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RegexpConfig {
    /// `--pattern`.
    pub pattern: Option<String>,
    /// `--uri-subexp`.
    pub uri_subexp: Option<String>,
    /// `--method-subexp`.
    pub method_subexp: Option<String>,
    /// `--time-subexp`.
    pub time_subexp: Option<String>,
    /// `--restime-subexp`.
    pub response_time_subexp: Option<String>,
    /// `--reqtime-subexp`.
    pub request_time_subexp: Option<String>,
    /// `--body-bytes-subexp`.
    pub body_bytes_subexp: Option<String>,
    /// `--status-subexp`.
    pub status_subexp: Option<String>,
}

/// `pcap:` keys: the server of `keisoku logs pcap` when its flags are not given.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PcapConfig {
    /// Server addresses.
    #[serde(deserialize_with = "list")]
    pub server_ips: Option<Vec<String>>,
    /// Server port.
    pub server_port: Option<u16>,
}

/// `count:` keys.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CountConfig {
    /// `--keys`.
    #[serde(deserialize_with = "list")]
    pub keys: Option<Vec<String>>,
}

/// `topN:` keys.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TopNConfig {
    /// `--sort` of `topN` (restime or bytes).
    pub sort: Option<String>,
    /// `-r` of `topN`.
    pub reverse: Option<bool>,
}

/// A list as alp's viper takes it: a YAML sequence of scalars, or one
/// comma-separated string.
fn list<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Vec<String>>, D::Error> {
    use serde::de::Error as _;
    let scalar = |v: &Value| -> std::result::Result<String, D::Error> {
        match v {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            other => Err(D::Error::custom(format!(
                "expected a string or number in the list, found {other:?}"
            ))),
        }
    };
    Ok(match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => None,
        Some(Value::Sequence(items)) => Some(
            items
                .iter()
                .map(scalar)
                .collect::<std::result::Result<_, _>>()?,
        ),
        Some(Value::String(s)) => Some(
            s.split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect(),
        ),
        Some(other) => Some(vec![scalar(&other)?]),
    })
}

/// Lower-cases every mapping key (viper's keys are case-insensitive) and
/// drops keys whose value is empty.
fn normalise(v: Value) -> Value {
    match v {
        Value::Mapping(m) => Value::Mapping(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    let k = match k {
                        Value::String(s) => Value::String(s.to_lowercase()),
                        other => other,
                    };
                    (k, normalise(v))
                })
                .collect(),
        ),
        other => other,
    }
}

impl AlpConfig {
    /// Parses the text of an alp config file.
    pub fn parse(text: &str) -> std::result::Result<AlpConfig, String> {
        let v: Value = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        match normalise(v) {
            Value::Null => Ok(AlpConfig::default()),
            v @ Value::Mapping(_) => serde_yaml::from_value(v).map_err(|e| e.to_string()),
            _ => Err("expected a mapping of alp's keys (file, sort, format, ltsv: ...)".into()),
        }
    }

    /// Reads and parses the config file at `path`.
    pub fn load(path: &Path) -> Result<AlpConfig> {
        let text = keisoku_common::limits::read_document(path, &keisoku_common::Limits::current())
            .map_err(|e| Error::Input(format!("--config {}: {e}", path.display())))?;
        AlpConfig::parse(&text)
            .map_err(|e| Error::Input(format!("--config {}: {e}", path.display())))
    }

    /// `matching_groups` as `-m` takes them (comma-separated).
    pub fn matching_groups_flag(&self) -> Option<String> {
        self.matching_groups.as_ref().map(|g| g.join(","))
    }

    /// `percentiles` as `--percentiles` takes them (comma-separated).
    pub fn percentiles_flag(&self) -> Option<String> {
        self.percentiles.as_ref().map(|p| p.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alps_example_config_with_every_key_empty_reads() {
        let text = "---\nfile:                       # string\nsort:\nreverse:\nmatching_groups:\npercentiles:\nltsv:\n  apptime_label: # apptime\njson:\n  uri_key:\nregexp:\n  pattern:\npcap:\n  server_ips:\n  server_port:\n";
        let c = AlpConfig::parse(text).unwrap();
        assert_eq!(c.file, None);
        assert_eq!(c.sort, None);
    }

    #[test]
    fn keys_lists_and_sections_read_as_alp_reads_them() {
        let text = "Sort: sum\nreverse: true\nmatching_groups:\n  - /users/[0-9]+\n  - /items/.+\npercentiles: [50, 99]\nlimit: 10\njson:\n  response_time_key: rt\ntopN:\n  sort: bytes\ncount:\n  keys: method,status\n";
        let c = AlpConfig::parse(text).unwrap();
        assert_eq!(c.sort.as_deref(), Some("sum"));
        assert_eq!(c.reverse, Some(true));
        assert_eq!(
            c.matching_groups_flag().as_deref(),
            Some("/users/[0-9]+,/items/.+")
        );
        assert_eq!(c.percentiles_flag().as_deref(), Some("50,99"));
        assert_eq!(c.limit, Some(10));
        assert_eq!(c.json.unwrap().response_time_key.as_deref(), Some("rt"));
        assert_eq!(c.top_n.unwrap().sort.as_deref(), Some("bytes"));
        assert_eq!(
            c.count.unwrap().keys,
            Some(vec!["method".to_string(), "status".to_string()])
        );
    }

    #[test]
    fn an_unknown_key_is_named() {
        let e = AlpConfig::parse("sortt: sum\n").unwrap_err();
        assert!(e.contains("sortt"), "{e}");
        assert!(AlpConfig::parse("- a\n").is_err());
        assert!(AlpConfig::parse("limit: many\n").is_err());
    }
}
