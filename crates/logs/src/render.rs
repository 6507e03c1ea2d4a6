//! Route tables in alp's output formats: table, markdown, tsv, csv, json
//! and html, with alp's columns, headers and number formatting (`%.3f`).

use crate::stats::RouteStats;
use crate::uri::decode_for_display;
use std::fmt::Write as _;

/// Where rendered text goes: kept in a string, or written through to a
/// writer in 64 KiB pieces, so printing a million-row table never holds
/// the whole text (hundreds of MB) in memory.
pub struct Out<'w> {
    buf: String,
    to: Option<&'w mut dyn std::io::Write>,
    /// The first write that failed; later text is dropped.
    failed: Option<std::io::Error>,
}

/// How much text [`Out`] gathers before writing it through.
const SPILL: usize = 1 << 16;

impl<'w> Out<'w> {
    /// Text kept in memory, taken with [`Out::into_string`].
    pub fn string() -> Out<'static> {
        Out {
            buf: String::new(),
            to: None,
            failed: None,
        }
    }

    /// Text written through to `to`; [`Out::finish`] writes the rest.
    pub fn writer(to: &'w mut dyn std::io::Write) -> Out<'w> {
        Out {
            buf: String::with_capacity(SPILL * 2),
            to: Some(to),
            failed: None,
        }
    }

    /// Appends `s`.
    pub fn push_str(&mut self, s: &str) {
        self.buf.push_str(s);
        if self.buf.len() >= SPILL {
            self.spill();
        }
    }

    /// Appends `c`.
    pub fn push(&mut self, c: char) {
        self.buf.push(c);
        if self.buf.len() >= SPILL {
            self.spill();
        }
    }

    fn spill(&mut self) {
        let Some(to) = self.to.as_mut() else {
            return;
        };
        if self.failed.is_none() {
            if let Err(e) = to.write_all(self.buf.as_bytes()) {
                self.failed = Some(e);
            }
        }
        self.buf.clear();
    }

    /// The text kept (everything, for [`Out::string`]).
    pub fn into_string(self) -> String {
        self.buf
    }

    /// Writes what is left through and reports the first failed write.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.spill();
        if let Some(to) = self.to.as_mut() {
            if self.failed.is_none() {
                if let Err(e) = to.flush() {
                    self.failed = Some(e);
                }
            }
        }
        match self.failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl std::fmt::Write for Out<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

/// One output column.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// Requests.
    Count,
    /// Requests of a status class (1..=5).
    Status(u8),
    /// Method.
    Method,
    /// Route.
    Uri,
    /// Response time minimum (alp's arithmetic).
    Min,
    /// Response time maximum.
    Max,
    /// Response time sum.
    Sum,
    /// Response time mean.
    Avg,
    /// Response time percentile.
    P(u32),
    /// Response time standard deviation.
    Stddev,
    /// Body size minimum.
    MinBody,
    /// Body size maximum.
    MaxBody,
    /// Body size sum.
    SumBody,
    /// Body size mean.
    AvgBody,
}

impl Column {
    /// alp's keyword (`-o` name and JSON key).
    pub fn keyword(&self) -> String {
        match self {
            Column::Count => "count".into(),
            Column::Status(c) => format!("{c}xx"),
            Column::Method => "method".into(),
            Column::Uri => "uri".into(),
            Column::Min => "min".into(),
            Column::Max => "max".into(),
            Column::Sum => "sum".into(),
            Column::Avg => "avg".into(),
            Column::P(p) => format!("p{p}"),
            Column::Stddev => "stddev".into(),
            Column::MinBody => "min_body".into(),
            Column::MaxBody => "max_body".into(),
            Column::SumBody => "sum_body".into(),
            Column::AvgBody => "avg_body".into(),
        }
    }

    /// alp's header text.
    pub fn header(&self) -> String {
        match self {
            Column::Count => "Count".into(),
            Column::Status(c) => format!("{c}xx"),
            Column::Method => "Method".into(),
            Column::Uri => "Uri".into(),
            Column::Min => "Min".into(),
            Column::Max => "Max".into(),
            Column::Sum => "Sum".into(),
            Column::Avg => "Avg".into(),
            Column::P(p) => format!("P{p}"),
            Column::Stddev => "Stddev".into(),
            Column::MinBody => "Min(Body)".into(),
            Column::MaxBody => "Max(Body)".into(),
            Column::SumBody => "Sum(Body)".into(),
            Column::AvgBody => "Avg(Body)".into(),
        }
    }

    /// Parses one `-o` keyword.
    pub fn parse(k: &str) -> Option<Column> {
        Some(match k {
            "count" => Column::Count,
            "1xx" => Column::Status(1),
            "2xx" => Column::Status(2),
            "3xx" => Column::Status(3),
            "4xx" => Column::Status(4),
            "5xx" => Column::Status(5),
            "method" => Column::Method,
            "uri" => Column::Uri,
            "min" => Column::Min,
            "max" => Column::Max,
            "sum" => Column::Sum,
            "avg" => Column::Avg,
            "stddev" => Column::Stddev,
            "min_body" => Column::MinBody,
            "max_body" => Column::MaxBody,
            "sum_body" => Column::SumBody,
            "avg_body" => Column::AvgBody,
            p => Column::P(p.strip_prefix('p')?.parse().ok().filter(|v| *v <= 100)?),
        })
    }

    /// alp's default columns for the given percentiles.
    pub fn all(percentiles: &[u32]) -> Vec<Column> {
        let mut v = vec![Column::Count];
        v.extend((1..=5).map(Column::Status));
        v.extend([
            Column::Method,
            Column::Uri,
            Column::Min,
            Column::Max,
            Column::Sum,
            Column::Avg,
        ]);
        v.extend(percentiles.iter().map(|&p| Column::P(p)));
        v.extend([
            Column::Stddev,
            Column::MinBody,
            Column::MaxBody,
            Column::SumBody,
            Column::AvgBody,
        ]);
        v
    }

    /// Parses `-o`: `all` or comma-separated keywords. Unknown keywords are
    /// returned as the error, comma-joined like alp's message.
    pub fn parse_list(spec: &str, percentiles: &[u32]) -> Result<Vec<Column>, String> {
        let keys: Vec<&str> = spec.split(',').map(str::trim).collect();
        if keys.contains(&"all") {
            return Ok(Column::all(percentiles));
        }
        let bad: Vec<&str> = keys
            .iter()
            .copied()
            .filter(|k| Column::parse(k).is_none())
            .collect();
        if !bad.is_empty() {
            return Err(bad.join(","));
        }
        Ok(keys.iter().filter_map(|k| Column::parse(k)).collect())
    }

    /// Whether the column is computed from response times.
    pub fn needs_time(&self) -> bool {
        matches!(
            self,
            Column::Min | Column::Max | Column::Sum | Column::Avg | Column::P(_) | Column::Stddev
        )
    }

    fn is_text(&self) -> bool {
        matches!(self, Column::Method | Column::Uri)
    }
}

/// alp's number format (`%.3f`).
pub fn fmt3(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        format!("{v:.3}")
    }
}

fn signed3(v: f64) -> String {
    if v >= 0.0 {
        format!("+{}", fmt3(v))
    } else {
        fmt3(v)
    }
}

fn signed_int(v: i128) -> String {
    if v >= 0 {
        format!("+{v}")
    } else {
        v.to_string()
    }
}

/// Rendering options.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// Columns in order.
    pub columns: Vec<Column>,
    /// No header line (tsv, csv).
    pub no_headers: bool,
    /// Totals line (table, markdown).
    pub show_footers: bool,
    /// Show URIs percent-decoded.
    pub decode_uri: bool,
    /// Print the stddev alp prints when no percentile has sorted a route's
    /// times before its stddev column is computed (no percentile column to
    /// its left, no percentile sort): squared deviations in line order.
    pub stddev_in_line_order: bool,
    /// The log has no response times: every time column prints `-`.
    pub absent_times: bool,
}

impl RenderOptions {
    /// Whether alp computes the stddev column on times still in line order:
    /// it sums over its times slice as it stands, and only a percentile (a
    /// column printed before it in the row, or the sort) sorts that slice.
    pub fn alp_stddev_in_line_order(columns: &[Column], sort: SortKey) -> bool {
        if matches!(sort, SortKey::P(_)) {
            return false;
        }
        match columns.iter().position(|c| *c == Column::Stddev) {
            Some(at) => !columns[..at].iter().any(|c| matches!(c, Column::P(_))),
            None => false,
        }
    }
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// ASCII table (alp's default).
    Table,
    /// Markdown table.
    Markdown,
    /// Tab-separated.
    Tsv,
    /// Comma-separated.
    Csv,
    /// JSON array of rows, first row the keywords (alp's layout).
    Json,
    /// A standalone HTML page with a sortable table.
    Html,
}

impl OutputFormat {
    /// Parses alp's format names (`md` too).
    pub fn parse(s: &str) -> Option<OutputFormat> {
        Some(match s {
            "table" => OutputFormat::Table,
            "markdown" | "md" => OutputFormat::Markdown,
            "tsv" => OutputFormat::Tsv,
            "csv" => OutputFormat::Csv,
            "json" => OutputFormat::Json,
            "html" => OutputFormat::Html,
            _ => return None,
        })
    }
}

fn cell(c: &Column, r: &RouteStats, quote_uri: bool, decode: bool) -> String {
    cell_with(c, r, quote_uri, decode, false)
}

fn cell_with(
    c: &Column,
    r: &RouteStats,
    quote_uri: bool,
    decode: bool,
    stddev_in_line_order: bool,
) -> String {
    match c {
        Column::Count => r.count.to_string(),
        Column::Status(k) => r.status[(*k - 1) as usize].to_string(),
        Column::Method => r.method.clone(),
        Column::Uri => {
            if quote_uri && r.uri.contains(',') {
                format!("\"{}\"", r.uri)
            } else if decode {
                decode_for_display(&r.uri)
            } else {
                r.uri.clone()
            }
        }
        Column::Min => fmt3(r.time.min),
        Column::Max => fmt3(r.time.max),
        Column::Sum => fmt3(r.time.sum),
        Column::Avg => fmt3(r.avg()),
        Column::P(p) => fmt3(r.percentile(f64::from(*p))),
        Column::Stddev if stddev_in_line_order => fmt3(r.stddev_line_order()),
        Column::Stddev => fmt3(r.stddev()),
        Column::MinBody => fmt3(r.body.min),
        Column::MaxBody => fmt3(r.body.max),
        Column::SumBody => fmt3(r.body.sum),
        Column::AvgBody => fmt3(r.body.avg()),
    }
}

fn with_diff(val: String, diff: String) -> String {
    if diff == "+0" || diff == "+0.000" {
        val
    } else {
        format!("{val} ({diff})")
    }
}

fn diff_cell(c: &Column, from: &RouteStats, to: &RouteStats, decode: bool) -> String {
    let now = cell(c, to, false, decode);
    let d = |a: f64, b: f64| signed3(b - a);
    let diff = match c {
        Column::Method | Column::Uri => return now,
        Column::Count => signed_int(i128::from(to.count) - i128::from(from.count)),
        Column::Status(k) => {
            let i = (*k - 1) as usize;
            signed_int(i128::from(to.status[i]) - i128::from(from.status[i]))
        }
        Column::Min => d(from.time.min, to.time.min),
        Column::Max => d(from.time.max, to.time.max),
        Column::Sum => d(from.time.sum, to.time.sum),
        Column::Avg => d(from.avg(), to.avg()),
        Column::P(p) => d(from.percentile(f64::from(*p)), to.percentile(f64::from(*p))),
        Column::Stddev => d(from.stddev(), to.stddev()),
        Column::MinBody => d(from.body.min, to.body.min),
        Column::MaxBody => d(from.body.max, to.body.max),
        Column::SumBody => d(from.body.sum, to.body.sum),
        Column::AvgBody => d(from.body.avg(), to.body.avg()),
    };
    with_diff(now, diff)
}

/// The cells of `routes` (already sorted), one row at a time in a reused
/// buffer, so a table of a million routes never holds its cells all at
/// once; with `from`, each cell of a route also present there carries
/// alp's `value (+diff)`.
struct Rows<'a> {
    routes: &'a [RouteStats],
    /// `from`'s routes by (method, route), the first of each.
    before: Option<std::collections::HashMap<(&'a str, &'a str), &'a RouteStats>>,
    opts: &'a RenderOptions,
    quote_uri: bool,
}

impl<'a> Rows<'a> {
    fn new(
        routes: &'a [RouteStats],
        from: Option<&'a [RouteStats]>,
        opts: &'a RenderOptions,
        quote_uri: bool,
    ) -> Rows<'a> {
        let before = from.map(|f| {
            let mut m = std::collections::HashMap::with_capacity(f.len());
            for x in f {
                m.entry((x.method.as_str(), x.uri.as_str())).or_insert(x);
            }
            m
        });
        Rows {
            routes,
            before,
            opts,
            quote_uri,
        }
    }

    /// Calls `f` with every row's cells in order.
    fn each(&self, f: &mut dyn FnMut(&[String])) {
        let mut cells: Vec<String> = Vec::with_capacity(self.opts.columns.len());
        for r in self.routes {
            let before = self
                .before
                .as_ref()
                .and_then(|m| m.get(&(r.method.as_str(), r.uri.as_str())).copied());
            cells.clear();
            cells.extend(self.opts.columns.iter().map(|c| match before {
                Some(b) => diff_cell(c, b, r, self.opts.decode_uri),
                None if self.opts.absent_times && c.needs_time() => "-".into(),
                None => cell_with(
                    c,
                    r,
                    self.quote_uri,
                    self.opts.decode_uri,
                    self.opts.stddev_in_line_order,
                ),
            }));
            f(&cells);
        }
    }
}

fn totals(routes: &[RouteStats]) -> (u64, [u64; 5]) {
    let mut n = 0;
    let mut s = [0u64; 5];
    for r in routes {
        n += r.count;
        for (a, b) in s.iter_mut().zip(r.status) {
            *a += b;
        }
    }
    (n, s)
}

fn footer(routes: &[RouteStats], from: Option<&[RouteStats]>, opts: &RenderOptions) -> Vec<String> {
    let (n, s) = totals(routes);
    let before = from.map(totals);
    opts.columns
        .iter()
        .map(|c| {
            let (now, was) = match c {
                Column::Count => (n, before.map(|b| b.0)),
                Column::Status(k) => (s[(*k - 1) as usize], before.map(|b| b.1[(*k - 1) as usize])),
                _ => return String::new(),
            };
            match was {
                // alp's footer writes a fall with a second minus ("536 (--13)").
                Some(w) => {
                    let change = i128::from(now) - i128::from(w);
                    let diff = if change >= 0 {
                        format!("+{change}")
                    } else {
                        format!("-{change}")
                    };
                    with_diff(now.to_string(), diff)
                }
                None => now.to_string(),
            }
        })
        .collect()
}

/// Terminal columns of `s` (East Asian wide characters count two), the
/// width alp's table writer pads to: by chars, a decoded CJK path
/// misaligned every column after it.
pub(crate) fn width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

fn pad(s: &str, w: usize) -> String {
    let mut o = s.to_string();
    o.push_str(&" ".repeat(w.saturating_sub(width(s))));
    o
}

fn center(s: &str, w: usize) -> String {
    let gap = w.saturating_sub(width(s));
    let left = gap / 2;
    format!("{}{}{}", " ".repeat(left), s, " ".repeat(gap - left))
}

/// Rows a grid is drawn from, visited once to measure and once to write:
/// route rows formatted on the fly, or rows already built (the slowest
/// requests).
pub(crate) trait GridRows {
    /// Calls `f` with every row's cells in order.
    fn each(&self, f: &mut dyn FnMut(&[String]));
}

impl GridRows for Rows<'_> {
    fn each(&self, f: &mut dyn FnMut(&[String])) {
        Rows::each(self, f)
    }
}

impl GridRows for Vec<Vec<String>> {
    fn each(&self, f: &mut dyn FnMut(&[String])) {
        for row in self {
            f(row);
        }
    }
}

/// The table or markdown grid (also used for the slowest requests), padded
/// by terminal columns: a first pass over the rows measures the
/// column widths, a second formats them again and writes them.
pub(crate) fn render_grid(
    out: &mut Out,
    headers: &[String],
    body: &dyn GridRows,
    foot: Option<&[String]>,
    markdown: bool,
) {
    let mut widths: Vec<usize> = headers.iter().map(|h| width(h)).collect();
    body.each(&mut |row| {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell_width(c));
        }
    });
    if let Some(f) = foot {
        for (w, c) in widths.iter_mut().zip(f) {
            *w = (*w).max(width(c));
        }
    }
    let border = {
        let mut s = String::from("+");
        for w in &widths {
            s.push_str(&"-".repeat(w + 2));
            s.push('+');
        }
        s
    };
    let line = |cells: &[String], centered: bool| {
        let mut s = String::from("|");
        for (w, c) in widths.iter().zip(cells) {
            let _ = write!(
                s,
                " {} |",
                if centered { center(c, *w) } else { pad(c, *w) }
            );
        }
        s
    };
    let upper: Vec<String> = headers.iter().map(|h| h.to_uppercase()).collect();
    if markdown {
        out.push_str(&line(&upper, true));
        out.push('\n');
        let mut s = String::from("|");
        for w in &widths {
            s.push_str(&"-".repeat(w + 2));
            s.push('|');
        }
        out.push_str(&s);
        out.push('\n');
        body.each(&mut |r| {
            for l in wrapped(r) {
                out.push_str(&line(&l, false));
                out.push('\n');
            }
        });
        if let Some(f) = foot {
            out.push_str(&line(f, false));
            out.push('\n');
        }
        return;
    }
    out.push_str(&border);
    out.push('\n');
    out.push_str(&line(&upper, true));
    out.push('\n');
    out.push_str(&border);
    out.push('\n');
    body.each(&mut |r| {
        for l in wrapped(r) {
            out.push_str(&line(&l, false));
            out.push('\n');
        }
    });
    if let Some(f) = foot {
        out.push_str(&border);
        out.push('\n');
        // tablewriter's footer: filled cells framed, empty cells blank.
        let mut s = String::from("|");
        for (w, c) in widths.iter().zip(f) {
            if c.is_empty() {
                s.push_str(&" ".repeat(w + 3));
            } else {
                let _ = write!(s, " {} |", pad(&c.to_uppercase(), *w));
            }
        }
        let total = width(&border);
        let mut s: String = s.chars().take(total).collect();
        let have = width(&s);
        s.push_str(&" ".repeat(total - have));
        out.push_str(&s);
        out.push('\n');
    }
    out.push_str(&border);
    out.push('\n');
}

/// Widest cell alp's table writer (tablewriter) keeps on one line; a
/// wider one with spaces is wrapped at them, in table and markdown alike.
const WRAP_AT: usize = 30;

/// The columns a cell takes: a wrapped cell takes the wrap limit (raised to
/// its widest word) however short its lines, as in alp.
fn cell_width(c: &str) -> usize {
    let w = width(c);
    if w > WRAP_AT && c.contains([' ', '\n']) {
        c.split([' ', '\n']).map(width).fold(WRAP_AT, usize::max)
    } else {
        w
    }
}

/// `row` as the lines alp prints for it: each cell wider than [`WRAP_AT`]
/// broken at spaces, the row as tall as its tallest cell. A row without
/// such a cell is itself (no copy).
fn wrapped(row: &[String]) -> Vec<std::borrow::Cow<'_, [String]>> {
    use std::borrow::Cow;
    if !row
        .iter()
        .any(|c| c.contains([' ', '\n']) && width(c) > WRAP_AT)
    {
        return vec![Cow::Borrowed(row)];
    }
    let cells: Vec<Vec<String>> = row
        .iter()
        .map(|c| {
            if c.contains([' ', '\n']) && width(c) > WRAP_AT {
                wrap(c, WRAP_AT)
            } else {
                vec![c.clone()]
            }
        })
        .collect();
    let height = cells.iter().map(Vec::len).max().unwrap_or(1);
    (0..height)
        .map(|i| {
            Cow::Owned(
                cells
                    .iter()
                    .map(|c| c.get(i).cloned().unwrap_or_default())
                    .collect(),
            )
        })
        .collect()
}

/// `text` broken at spaces into lines of at most `limit` columns (raised to
/// the widest word), with the least raggedness: the sum over lines but the
/// last of (limit - width)², a line over the limit costing 100,000 more,
/// the earliest break winning a tie. This is the rule alp's table library
/// applies, so the same cells break at the same spaces.
fn wrap(text: &str, limit: usize) -> Vec<String> {
    let text = text.replace('\n', " ");
    let words: Vec<&str> = text.split(' ').collect();
    let widths: Vec<i64> = words.iter().map(|w| width(w) as i64).collect();
    let limit = widths.iter().copied().fold(limit as i64, i64::max);
    let n = words.len();
    // span(i, j): width of words i..=j joined by single spaces.
    let mut starts = vec![0i64; n + 1];
    for (k, w) in widths.iter().enumerate() {
        starts[k + 1] = starts[k] + w;
    }
    let span = |i: usize, j: usize| starts[j + 1] - starts[i] + (j - i) as i64;
    let mut cost = vec![i64::MAX; n + 1];
    let mut next = vec![n; n + 1];
    cost[n] = 0;
    for i in (0..n).rev() {
        if span(i, n - 1) <= limit {
            cost[i] = 0;
            next[i] = n;
            continue;
        }
        for j in i + 1..n {
            let d = limit - span(i, j - 1);
            let mut c = d.saturating_mul(d).saturating_add(cost[j]);
            if span(i, j - 1) > limit {
                c = c.saturating_add(100_000);
            }
            if c < cost[i] {
                cost[i] = c;
                next[i] = j;
            }
        }
    }
    let mut lines = Vec::new();
    let mut i = 0;
    while i < n {
        let j = next[i].max(i + 1);
        lines.push(words[i..j].join(" "));
        i = j;
    }
    lines
}

/// A cell as alp's JSON output has it: a number when it reads as one.
pub(crate) fn json_value(cell: &str) -> serde_json::Value {
    if let Ok(i) = cell.parse::<i64>() {
        return serde_json::Value::from(i);
    }
    let numeric = !cell.is_empty()
        && cell
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
        && cell.bytes().any(|b| b.is_ascii_digit());
    if numeric {
        if let Ok(f) = cell.parse::<f64>() {
            // Go's encoder prints integral floats without a fraction ("512").
            if f.fract() == 0.0 && f.abs() < 1e15 {
                return serde_json::Value::from(f as i64);
            }
            if let Some(n) = serde_json::Number::from_f64(f) {
                return serde_json::Value::Number(n);
            }
        }
    }
    serde_json::Value::String(cell.to_string())
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The JSON output's value: an array of rows, the first the column
/// keywords (alp's layout), so a caller can put it in a larger document
/// without rendering and parsing it back.
pub fn json_rows(
    routes: &[RouteStats],
    from: Option<&[RouteStats]>,
    opts: &RenderOptions,
) -> serde_json::Value {
    let mut all = vec![serde_json::Value::Array(
        opts.columns
            .iter()
            .map(|c| serde_json::Value::String(c.keyword()))
            .collect(),
    )];
    Rows::new(routes, from, opts, from.is_none()).each(&mut |r| {
        all.push(serde_json::Value::Array(
            r.iter().map(|c| json_value(c)).collect(),
        ));
    });
    serde_json::Value::Array(all)
}

/// Appends [`json_rows`]'s text (what `serde_json` prints for it) to
/// `out`, one row at a time: the value of a million rows would hold every
/// cell at once, several times the size of its text.
pub fn write_json_rows(
    out: &mut Out,
    routes: &[RouteStats],
    from: Option<&[RouteStats]>,
    opts: &RenderOptions,
) {
    let head = serde_json::Value::Array(
        opts.columns
            .iter()
            .map(|c| serde_json::Value::String(c.keyword()))
            .collect(),
    );
    out.push('[');
    out.push_str(&head.to_string());
    Rows::new(routes, from, opts, from.is_none()).each(&mut |r| {
        out.push_str(",[");
        for (i, c) in r.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&json_value(c).to_string());
        }
        out.push(']');
    });
    out.push(']');
}

/// Renders `routes` (in the order given) as `format`. With `from`, the
/// output is alp's diff view: every value of a route also present in
/// `from` is followed by its change, e.g. `0.120 (+0.020)`.
pub fn render(
    routes: &[RouteStats],
    from: Option<&[RouteStats]>,
    format: OutputFormat,
    opts: &RenderOptions,
) -> String {
    let mut out = Out::string();
    render_into(&mut out, routes, from, format, opts);
    out.into_string()
}

/// [`render`] into `out` (a string, or a writer the text goes through to).
pub fn render_into(
    out: &mut Out,
    routes: &[RouteStats],
    from: Option<&[RouteStats]>,
    format: OutputFormat,
    opts: &RenderOptions,
) {
    let headers: Vec<String> = opts.columns.iter().map(Column::header).collect();
    match format {
        OutputFormat::Table | OutputFormat::Markdown => {
            let body = Rows::new(routes, from, opts, false);
            let foot = opts.show_footers.then(|| footer(routes, from, opts));
            render_grid(
                out,
                &headers,
                &body,
                foot.as_deref(),
                format == OutputFormat::Markdown,
            )
        }
        OutputFormat::Tsv | OutputFormat::Csv => {
            let sep = if format == OutputFormat::Tsv {
                "\t"
            } else {
                ","
            };
            if !opts.no_headers {
                out.push_str(&headers.join(sep));
                out.push('\n');
            }
            Rows::new(
                routes,
                from,
                opts,
                format == OutputFormat::Csv && from.is_none(),
            )
            .each(&mut |r| {
                for (i, c) in r.iter().enumerate() {
                    if i > 0 {
                        out.push_str(sep);
                    }
                    out.push_str(c);
                }
                out.push('\n');
            });
        }
        OutputFormat::Json => {
            write_json_rows(out, routes, from, opts);
            out.push('\n');
        }
        OutputFormat::Html => {
            let body = Rows::new(routes, from, opts, false);
            let s = out;
            s.push_str(HTML_HEAD);
            s.push_str("<table id=\"routes\"><thead><tr>");
            for (i, h) in headers.iter().enumerate() {
                let _ = write!(s, "<th data-col=\"{i}\">{}</th>", html_escape(h));
            }
            s.push_str("</tr></thead><tbody>\n");
            body.each(&mut |r| {
                s.push_str("<tr>");
                for (c, v) in opts.columns.iter().zip(r) {
                    // Numbers are the default cell (right-aligned by the
                    // style): a class on each would add 10 bytes a cell, a
                    // fifth of a million-row page.
                    if c.is_text() {
                        let _ = write!(s, "<td class=\"t\">{}</td>", html_escape(v));
                    } else {
                        let _ = write!(s, "<td>{}</td>", html_escape(v));
                    }
                }
                s.push_str("</tr>\n");
            });
            s.push_str("</tbody></table>\n");
            s.push_str(HTML_TAIL);
        }
    }
}

const HTML_HEAD: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>keisoku logs</title>
<style>
body{font:13px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse}th,td{padding:3px 8px;border-bottom:1px solid #ddd;white-space:nowrap}
th{cursor:pointer;background:#f4f4f4;position:sticky;top:0}td{text-align:right;font-variant-numeric:tabular-nums}td.t{text-align:left}
tr:hover td{background:#fafae0}
</style></head><body>
<h1>Routes</h1><p>Click a header to sort.</p>
"#;

const HTML_TAIL: &str = r#"<script>
document.querySelectorAll('#routes th').forEach(function (th) {
  th.addEventListener('click', function () {
    var i = +th.dataset.col, tb = document.querySelector('#routes tbody');
    var asc = th.dataset.asc !== '1'; th.dataset.asc = asc ? '1' : '0';
    var rows = Array.prototype.slice.call(tb.rows);
    rows.sort(function (a, b) {
      var x = a.cells[i].textContent, y = b.cells[i].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : nx - ny;
      return asc ? c : -c;
    });
    rows.forEach(function (r) { tb.appendChild(r); });
  });
});
</script></body></html>
"#;

/// A sort order (alp's `--sort`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SortKey {
    /// Requests.
    Count,
    /// Route name.
    Uri,
    /// Method.
    Method,
    /// Max response time.
    Max,
    /// Min response time.
    Min,
    /// Mean response time.
    Avg,
    /// Total response time.
    Sum,
    /// Standard deviation.
    Stddev,
    /// A percentile.
    P(u32),
    /// Max body.
    MaxBody,
    /// Min body.
    MinBody,
    /// Mean body.
    AvgBody,
    /// Total body.
    SumBody,
}

impl SortKey {
    /// Parses alp's sort names.
    pub fn parse(s: &str) -> Option<SortKey> {
        Some(match s {
            "count" => SortKey::Count,
            "uri" => SortKey::Uri,
            "method" => SortKey::Method,
            "max" => SortKey::Max,
            "min" => SortKey::Min,
            "avg" => SortKey::Avg,
            "sum" => SortKey::Sum,
            "stddev" => SortKey::Stddev,
            "max-body" => SortKey::MaxBody,
            "min-body" => SortKey::MinBody,
            "avg-body" => SortKey::AvgBody,
            "sum-body" => SortKey::SumBody,
            p => SortKey::P(p.strip_prefix('p')?.parse().ok().filter(|v| *v <= 100)?),
        })
    }
}

/// Sorts routes like alp (ascending unless `reverse`), ties included: alp
/// calls Go's unstable `sort.Slice` with `<` (or `>` for `-r`) on the key,
/// and [`crate::gosort`] repeats its steps, so equal rows come out in alp's
/// order too.
pub fn sort_routes(routes: &mut [RouteStats], key: SortKey, reverse: bool) {
    let num = |r: &RouteStats| -> f64 {
        match key {
            SortKey::Count => r.count as f64,
            SortKey::Max => r.time.max,
            SortKey::Min => r.time.min,
            SortKey::Avg => r.avg(),
            SortKey::Sum => r.time.sum,
            SortKey::Stddev => r.stddev_line_order(),
            SortKey::P(p) => r.percentile(f64::from(p)),
            SortKey::MaxBody => r.body.max,
            SortKey::MinBody => r.body.min,
            SortKey::AvgBody => r.body.avg(),
            SortKey::SumBody => r.body.sum,
            SortKey::Uri | SortKey::Method => 0.0,
        }
    };
    // Keys computed once: a percentile or stddev per comparison is costly.
    let nums: Vec<f64> = routes.iter().map(num).collect();
    let perm = crate::gosort::permutation(routes.len(), |a, b| {
        // Go's `<` / `>` on floats and byte-wise on strings (NaN never less).
        let (x, y) = if reverse { (b, a) } else { (a, b) };
        match key {
            SortKey::Uri => routes[x].uri < routes[y].uri,
            SortKey::Method => routes[x].method < routes[y].method,
            _ => nums[x] < nums[y],
        }
    });
    crate::gosort::apply_permutation(routes, perm);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes(n: usize, shift: f64) -> Vec<RouteStats> {
        (0..n)
            .map(|i| {
                let mut r = RouteStats::new("GET".into(), format!("/a,{i}/\"x\"%20"));
                for k in 0..3 {
                    r.add(200 + 100 * k, 0.001 * (i + 1) as f64 + shift, 512.5);
                }
                r
            })
            .collect()
    }

    fn opts() -> RenderOptions {
        RenderOptions {
            columns: Column::all(&[90, 99]),
            no_headers: false,
            show_footers: true,
            decode_uri: true,
            stddev_in_line_order: false,
            absent_times: false,
        }
    }

    #[test]
    fn json_rows_written_row_by_row_are_the_value_serde_prints() {
        let (now, was) = (routes(5, 0.0), routes(3, 0.002));
        for from in [None, Some(was.as_slice())] {
            let mut text = Out::string();
            write_json_rows(&mut text, &now, from, &opts());
            assert_eq!(
                text.into_string(),
                json_rows(&now, from, &opts()).to_string()
            );
            // Through a writer, in pieces: the same text.
            let many = routes(3000, 0.0);
            let mut bytes = Vec::new();
            let mut out = Out::writer(&mut bytes);
            render_into(&mut out, &many, from, OutputFormat::Json, &opts());
            out.finish().unwrap();
            assert!(bytes.len() > 2 * SPILL);
            let whole = render(&many, from, OutputFormat::Json, &opts());
            assert_eq!(String::from_utf8(bytes).unwrap(), whole);
        }
    }

    #[test]
    fn a_diff_matches_routes_by_method_and_route() {
        let (now, was) = (routes(2, 0.0), routes(1, 0.5));
        let o = RenderOptions {
            columns: vec![Column::Uri, Column::Max],
            ..opts()
        };
        let text = render(&now, Some(&was), OutputFormat::Tsv, &o);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "/a,0/\"x\" \t0.001 (-0.500)");
        assert_eq!(lines[2], "/a,1/\"x\" \t0.002");
    }
}
