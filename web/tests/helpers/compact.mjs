// An independent reader of the compact in-page profile form
// (docs/profile-json.md, "In HTML pages"): turns a page's header and
// columns back into profile JSON v1, so tests can compare what a page
// draws with the data it carries without trusting the page's own decoder.

const BASE = 48;

/** Text varints (five bits a character, low first, +32 = more follow). */
export function varints(text) {
  const out = [];
  let v = 0;
  let mul = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i) - BASE;
    if (c < 0 || c > 63) throw new Error(`bad varint character at ${i}`);
    v += (c & 31) * mul;
    if (c >= 32) mul *= 32;
    else {
      out.push(v);
      v = 0;
      mul = 1;
    }
  }
  if (mul !== 1) throw new Error('varint column ends inside a value');
  return out;
}

/** The `<script type="text/plain" id="keisoku-col-ID">` columns of a page. */
export function columns(html) {
  const cols = new Map();
  const re = /<script type="text\/plain" id="keisoku-col-([a-z-]+)" data-enc="([a-z-]+)">([^<]*(?:<(?!\/script>)[^<]*)*)<\/script>/g;
  for (const m of html.matchAll(re)) cols.set(m[1], { enc: m[2], text: m[3].replaceAll('<\\/', '</') });
  return cols;
}

function nums(col) {
  return col.enc === 'json' ? JSON.parse(col.text) : varints(col.text);
}

/** Profile JSON v1 from a compact header and the page's HTML. */
export function decodeCompactPage(header, html) {
  const cols = columns(html);
  const col = (id) => {
    const c = cols.get(id);
    if (!c) throw new Error(`page has no column ${id}`);
    return c;
  };
  const frames = JSON.parse(col('frames').text);
  const parent = varints(col('node-parent').text).map((d, i) => i - d);
  let samples = null;
  let counts = null;
  if (header.sample_count !== null) {
    let time = null;
    if (header.has.time) {
      const c = col('sample-time');
      if (c.enc === 'json') time = JSON.parse(c.text);
      else {
        let sum = 0;
        time = varints(c.text).map((z) => {
          sum += z % 2 === 0 ? z / 2 : -(z + 1) / 2;
          return (sum * header.time_unit_ns) / 1e6;
        });
      }
    }
    samples = {
      node: varints(col('sample-node').text),
      weight: header.has.weight ? nums(col('sample-weight')) : null,
      time_ms: time,
      thread: header.has.thread ? varints(col('sample-thread').text) : null,
    };
  } else counts = nums(col('counts'));
  return {
    version: 1,
    title: header.title,
    unit: header.unit,
    kinds: header.kinds,
    frames: { name: frames.name, module: varints(col('frame-module').text).map((m) => frames.modules[m]), kind: varints(col('frame-kind').text) },
    nodes: { parent, frame: varints(col('node-frame').text) },
    threads: header.threads,
    samples,
    counts,
    start_unix_ns: header.start_unix_ns,
    duration_ms: header.duration_ms,
  };
}
