//! The bundled UI (see `build.rs`) and helpers to inline it into pages.

include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// The contents of a bundled file such as `flame.js`, if the bundle has it.
pub fn asset(name: &str) -> Option<&'static str> {
    ASSETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, body)| *body)
}

/// Makes JavaScript source safe to place inside an inline `<script>`
/// element: a literal `</script` (or `<!--`) would otherwise end it early.
/// For JSON use [`escape_json_in_script`]: `<\!--` is not a JSON escape.
pub fn escape_inline_script(text: &str) -> String {
    text.replace("</", "<\\/").replace("<!--", "<\\!--")
}

/// Makes JSON text safe inside any `<script>` element whatever its strings
/// hold (`</script>`, `<!--`, `<script`, U+2028/2029): `<`, `>` and `&`
/// become `\u003c`, `\u003e` and `\u0026`, which JSON reads back as the
/// same characters. They can only occur inside JSON strings, where a
/// `\uXXXX` escape is always valid, so the value is unchanged.
pub fn escape_json_in_script(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + json.len() / 64);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            _ => out.push(c),
        }
    }
    out
}

/// A self-contained HTML page: the page's bundled script and stylesheet
/// inlined, plus `data` (JSON) available to the script as
/// `document.getElementById("keisoku-data").textContent`.
pub fn page(title: &str, entry: &str, data_json: &str) -> Option<String> {
    page_with_tail(title, entry, data_json, "")
}

/// [`page`] with `tail` (HTML, already escaped) placed after the page
/// script: bulky data the script reads once the document is parsed, so it
/// can draw before the browser has read it.
pub fn page_with_tail(title: &str, entry: &str, data_json: &str, tail: &str) -> Option<String> {
    let js = asset(&format!("{entry}.js"))?;
    let css = asset(&format!("{entry}.css")).unwrap_or("");
    Some(format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"color-scheme\" content=\"light dark\">\
<meta name=\"keisoku-idle-frames\" content=\"{idle}\">\
<title>{title}</title><style>{css}</style></head>\n<body><div id=\"app\"></div>\n\
<script type=\"application/json\" id=\"keisoku-data\">{data}</script>\n\
<script>{js}</script>\n{tail}</body></html>\n",
        idle = idle_frames_attr(),
        title = html_escape(title),
        css = css.replace("</style", "<\\/style"),
        data = escape_json_in_script(data_json),
        js = escape_inline_script(js),
    ))
}

/// keisoku's idle-frame list, space-separated (no name has a space), for
/// the pages' flame graphs and heat maps (web/src/flame/profile.ts reads it
/// from the page's `keisoku-idle-frames` meta element).
fn idle_frames_attr() -> String {
    html_escape(&keisoku_common::IDLE_FRAMES.join(" "))
}

/// Escapes text for HTML element content and attribute values.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_carries_the_one_idle_frame_list() {
        let page = page("t", "hello", "{}").expect("the hello page");
        let want = format!(
            "<meta name=\"keisoku-idle-frames\" content=\"{}\">",
            keisoku_common::IDLE_FRAMES.join(" ")
        );
        assert!(page.contains(&want));
    }

    #[test]
    fn bundle_contains_pages() {
        assert!(asset("hello.js").is_some_and(|js| js.contains("keisoku")));
    }

    #[test]
    fn inline_data_cannot_close_the_script() {
        let html = page("t", "hello", r#"{"x":"</script><b>"}"#).unwrap();
        assert_eq!(html.matches("</script>").count(), 2);
    }

    #[test]
    fn any_text_in_page_data_reads_back_unchanged() {
        let hostile = "<!--x </script><script>alert(1)</script> a&b \u{2028}\u{2029} \\ \"";
        let data = serde_json::json!({ "name": hostile, "tags": { hostile: hostile } }).to_string();
        let html = page("t", "hello", &data).unwrap();
        let start = html.find("id=\"keisoku-data\">").unwrap() + "id=\"keisoku-data\">".len();
        let end = start + html[start..].find("</script>").unwrap();
        let inline = &html[start..end];
        for bad in ["<", ">", "\u{2028}", "\u{2029}"] {
            assert!(!inline.contains(bad), "{bad:?} left raw in {inline}");
        }
        let back: serde_json::Value = serde_json::from_str(inline).unwrap();
        assert_eq!(back["name"], hostile);
        assert_eq!(back["tags"][hostile], hostile);
        assert_eq!(
            html.matches("<script").count(),
            html.matches("</script>").count()
        );
    }
}
