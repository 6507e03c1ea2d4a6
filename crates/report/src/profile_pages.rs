//! Self-contained HTML pages for profiles: the flame graph (`keisoku
//! flame`), the differential flame graph (`keisoku diff`) and the
//! subsecond heat map (`keisoku scope`). Flame and scope pages embed the
//! profile JSON (see docs/profile-json.md) in its compact in-page form
//! (`embed`), so a 1,000,000-sample page draws in well under a second; diff
//! pages embed it as is. The browser code in
//! `web/src/pages/{flame,diff,scope}.ts` draws it.

use crate::embed::{self, PreviewFor};
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
    // The preview is the tree as the page opens: not inverted, idle shown.
    let preview = (!view.invert).then_some(PreviewFor { hide_idle: false });
    render_profile(
        title,
        "flame",
        profile_json,
        &view_json.to_string(),
        preview,
    )
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
    // The flame graph below the heat map paints from the preview; the heat
    // map needs every sample time, so it follows once the columns are read.
    let preview = Some(PreviewFor {
        hide_idle: !view.idle,
    });
    render_profile(
        title,
        "scope",
        profile_json,
        &view_json.to_string(),
        preview,
    )
}

/// A page of one profile: compact when the JSON is a well-formed v1
/// profile, as is otherwise (the UI then names what is wrong).
fn render_profile(
    title: &str,
    entry: &str,
    profile_json: &str,
    view_json: &str,
    preview: Option<PreviewFor>,
) -> Result<String, ReportError> {
    match embed::compact(profile_json, preview) {
        Some(c) => {
            let data = wrap(title, &c.header, view_json);
            assets::page_with_tail(title, entry, &data, &c.tail)
                .ok_or_else(|| ReportError::MissingPage(entry.to_string()))
        }
        None => render(title, entry, &wrap(title, profile_json, view_json)),
    }
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

    /// A compact column's encoding and text.
    fn column<'a>(html: &'a str, id: &str) -> (&'a str, &'a str) {
        let open = format!("<script type=\"text/plain\" id=\"keisoku-col-{id}\" data-enc=\"");
        let start = html.find(&open).map(|i| i + open.len()).unwrap();
        let enc_end = start + html[start..].find('"').unwrap();
        let text_start = enc_end + "\">".len();
        let end = text_start + html[text_start..].find("</script>").unwrap();
        (&html[start..enc_end], &html[text_start..end])
    }

    /// Every script element ends where it should: as many ends as starts.
    fn scripts_balanced(html: &str) -> bool {
        html.matches("<script").count() == html.matches("</script>").count()
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
        assert_eq!(data["profile"]["encoding"], "compact-1");
        assert_eq!(data["profile"]["node_count"], 2);
        assert!(
            data["profile"]["preview"].is_null(),
            "small profiles need none"
        );
        let (enc, frames) = column(&html, "frames");
        assert_eq!(enc, "json");
        // The page escapes "</" as "<\/", which JSON reads back as "</".
        let frames: serde_json::Value = serde_json::from_str(frames).unwrap();
        assert_eq!(frames["name"][1], "</script>work");
        assert_eq!(column(&html, "sample-node"), ("varint", "110"));
        assert!(scripts_balanced(&html), "data cannot end a script early");
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
        assert_eq!(data["profile"]["time_unit_ns"], 1_000_000);
        // 0, 10, 1500 ms in 1 ms steps: deltas 0, 10, 1490 as zigzag varints.
        assert_eq!(column(&html, "sample-time").1, "0DTm2");
        assert!(scripts_balanced(&html));
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
    fn malformed_profiles_are_embedded_as_is_for_the_ui_to_report() {
        let bad = PROFILE.replace("\"parent\":[-1,0]", "\"parent\":[-1,5]");
        let html = flame_page("bad", &bad).unwrap();
        assert_eq!(embedded(&html)["profile"]["nodes"]["parent"][1], 5);
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
