//! Self-contained HTML pages for profiles: the flame graph (`keisoku
//! flame`), the differential flame graph (`keisoku diff`) and the
//! subsecond heat map (`keisoku scope`). The profile JSON (see
//! docs/profile-json.md) is embedded as is; the browser code in
//! `web/src/pages/{flame,diff,scope}.ts` draws it.

use crate::{assets, ReportError};

/// How a flame graph page opens.
#[derive(Debug, Clone, Default)]
pub struct FlameView {
    /// A regex to search for as soon as the page opens (`--search`).
    pub search: Option<String>,
    /// Root at the top instead of the bottom.
    pub icicle: bool,
    /// Leaf-first stacks, when the JSON itself was not inverted.
    pub invert: bool,
}

/// Options of a heat map page.
#[derive(Debug, Clone)]
pub struct ScopeView {
    /// Cells per second (FlameScope's default is 50).
    pub rows: u32,
    /// Count samples in idle frames (`--idle`).
    pub idle: bool,
}

impl Default for ScopeView {
    fn default() -> Self {
        ScopeView {
            rows: 50,
            idle: false,
        }
    }
}

/// A flame graph page for one profile (profile JSON, version 1).
pub fn flame_page(title: &str, profile_json: &str) -> Result<String, ReportError> {
    flame_page_with(title, profile_json, &FlameView::default())
}

/// A flame graph page that opens with `view` applied.
pub fn flame_page_with(
    title: &str,
    profile_json: &str,
    view: &FlameView,
) -> Result<String, ReportError> {
    let view_json = serde_json::json!({
        "search": view.search,
        "icicle": view.icicle,
        "invert": view.invert,
    });
    let data = wrap(title, profile_json, &view_json.to_string());
    render(title, "flame", &data)
}

/// A differential flame graph page (differential profile JSON, see
/// docs/profile-json.md).
pub fn diff_page(title: &str, diff_json: &str) -> Result<String, ReportError> {
    let data = format!(
        "{{\"title\":{},\"diff\":{}}}",
        json_string(title),
        diff_json.trim()
    );
    render(title, "diff", &data)
}

/// A subsecond heat map page; needs a profile with per-sample times.
pub fn scope_page(
    title: &str,
    profile_json: &str,
    view: &ScopeView,
) -> Result<String, ReportError> {
    let view_json = serde_json::json!({ "rows": view.rows.clamp(1, 1000), "idle": view.idle });
    let data = wrap(title, profile_json, &view_json.to_string());
    render(title, "scope", &data)
}

/// `{"title": .., "view": .., "profile": <profile_json>}` without
/// re-serialising the (possibly large) profile.
fn wrap(title: &str, profile_json: &str, view_json: &str) -> String {
    let body = profile_json.trim();
    let mut out = String::with_capacity(body.len() + title.len() + view_json.len() + 40);
    out.push_str("{\"title\":");
    out.push_str(&json_string(title));
    out.push_str(",\"view\":");
    out.push_str(view_json);
    out.push_str(",\"profile\":");
    out.push_str(body);
    out.push('}');
    out
}

fn json_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

fn render(title: &str, entry: &str, data: &str) -> Result<String, ReportError> {
    assets::page(title, entry, data).ok_or_else(|| ReportError::MissingPage(entry.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROFILE: &str = r#"{"version":1,"title":"t","unit":"samples",
        "kinds":["kernel","native","jit","interpreted","inlined","unknown"],
        "frames":{"name":["main","</script>work"],"module":["a",""],"kind":[1,1]},
        "nodes":{"parent":[-1,0],"frame":[0,1]},
        "threads":[{"pid":1,"tid":1,"comm":"a"}],
        "samples":{"node":[1,1,0],"weight":null,"time_ms":[0.0,10.0,1500.0],"thread":[0,0,0]},
        "counts":null,"start_unix_ns":null,"duration_ms":1500.0}"#;

    fn embedded(html: &str) -> serde_json::Value {
        let start = html
            .find("id=\"keisoku-data\">")
            .map(|i| i + "id=\"keisoku-data\">".len())
            .unwrap();
        let end = start + html[start..].find("</script>").unwrap();
        // The page escapes "</" as "<\/", which JSON reads back as "</".
        serde_json::from_str(&html[start..end]).unwrap()
    }

    #[test]
    fn flame_page_embeds_profile_view_and_bundle() {
        let view = FlameView {
            search: Some("^work$".into()),
            icicle: true,
            invert: false,
        };
        let html = flame_page_with("my <title>", PROFILE, &view).unwrap();
        assert!(html.contains("<title>my &lt;title&gt;</title>"));
        assert!(html.contains(assets::asset("flame.js").unwrap_or("missing bundle")));
        let data = embedded(&html);
        assert_eq!(data["title"], "my <title>");
        assert_eq!(data["view"]["search"], "^work$");
        assert_eq!(data["view"]["icicle"], true);
        assert_eq!(data["profile"]["frames"]["name"][1], "</script>work");
        assert_eq!(
            html.matches("</script>").count(),
            2,
            "data cannot end the script early"
        );
    }

    #[test]
    fn scope_page_carries_rows_and_idle() {
        let html = scope_page(
            "s",
            PROFILE,
            &ScopeView {
                rows: 20,
                idle: true,
            },
        )
        .unwrap();
        assert!(html.contains(assets::asset("scope.js").unwrap_or("missing bundle")));
        let data = embedded(&html);
        assert_eq!(data["view"]["rows"], 20);
        assert_eq!(data["view"]["idle"], true);
        assert_eq!(data["profile"]["samples"]["time_ms"][2], 1500.0);
    }

    #[test]
    fn scope_rows_are_clamped() {
        let html = scope_page(
            "s",
            PROFILE,
            &ScopeView {
                rows: 0,
                idle: false,
            },
        )
        .unwrap();
        assert_eq!(embedded(&html)["view"]["rows"], 1);
    }

    #[test]
    fn diff_page_embeds_both_sides() {
        let diff = format!(
            r#"{{"version":1,"mode":"normalized","before":{PROFILE},"after":{PROFILE},"table":[]}}"#
        );
        let html = diff_page("d", &diff).unwrap();
        assert!(html.contains(assets::asset("diff.js").unwrap_or("missing bundle")));
        let data = embedded(&html);
        assert_eq!(data["diff"]["mode"], "normalized");
        assert_eq!(data["diff"]["after"]["nodes"]["parent"][1], 0);
    }
}
