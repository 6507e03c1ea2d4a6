// `keisoku serve`'s home page: every run in the store, newest first. Per run
// name a trend of p99, throughput and errors across its runs (a team that
// measures every deploy sees which one moved), the SLO verdict of each run,
// sortable columns, grouping by name, delete with a confirmation, and
// ticking two runs to compare them.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import '../common/base.css';
import '../report/report.css';
import '../charts/charts.css';
import './serve.css';
import { clear, h, pageData, showFatal } from '../common/dom';
import { installKeys } from '../common/keyboard';
import { fmtValue } from '../charts/units';
import { axisColors, seriesColor } from '../charts/theme';

interface Listing {
  id: string;
  name: string;
  started_unix_ms: number;
  duration_ms: number;
  target: string;
  status: string;
  rps: number | null;
  p99_ms: number | null;
  tags: Record<string, string>;
  requests?: number | null;
  errors?: number | null;
  error_rate_pct?: number | null;
  slo_pass?: boolean | null;
  slo_failed?: string[];
}

/** A column: how to show it and what to sort it by. */
interface Column {
  key: string;
  label: string;
  name?: boolean;
  sort?: (r: Listing) => number | string | null;
  cell: (r: Listing) => HTMLTableCellElement;
}

/** One drawn trend chart, for tests and for redrawing. */
interface Trend {
  name: string;
  metric: string;
  runs: string[];
  /** The x-axis label of each run (its commit tag when it has one). */
  labels: string[];
  plot: uPlot;
}

const app = document.getElementById('app') as HTMLElement;
const fmtDate = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, '');
const tagText = (r: Listing): string => Object.entries(r.tags ?? {}).map(([k, v]) => `${k}=${v}`).join(' ');

/** The label of a run on a trend's x axis: its commit (or version, or
 * deploy) tag when it has one, else its start time. */
function runLabel(r: Listing): string {
  for (const k of ['commit', 'version', 'deploy', 'release', 'build']) {
    const v = r.tags?.[k];
    if (v) return `${k === 'commit' ? '' : `${k}=`}${v.length > 12 ? v.slice(0, 12) : v}`;
  }
  return fmtDate(r.started_unix_ms).slice(5, 16);
}

function sloCell(r: Listing): HTMLTableCellElement {
  if (r.slo_pass === true) return h('td', { class: 'ks-slo' }, h('span', { class: 'ks-badge ks-badge-pass', text: 'pass' }));
  if (r.slo_pass === false) {
    const failed = (r.slo_failed ?? []).join(', ');
    return h('td', { class: 'ks-slo', title: failed ? `failed: ${failed}` : 'failed' }, h('span', { class: 'ks-badge ks-badge-fail', text: 'fail' }));
  }
  return h('td', { class: 'ks-slo ks-muted', title: 'no SLO given (run --slo)', text: '—' });
}

function errorsCell(r: Listing): HTMLTableCellElement {
  if (r.errors === null || r.errors === undefined) return h('td', { class: 'ks-muted', text: '—' });
  const pct = r.error_rate_pct ?? 0;
  const text = r.errors === 0 ? '0' : `${fmtValue(r.errors, '')} (${pct < 0.1 ? pct.toFixed(2) : pct.toFixed(1)}%)`;
  return h('td', { class: r.errors > 0 ? 'ks-bad' : '', title: 'transport errors plus HTTP 5xx', text });
}

try {
  const data = pageData<{ runs: Listing[]; token: string }>();
  let runs = data.runs;
  const token = data.token;

  const filter = h('input', { type: 'search', placeholder: 'filter runs (name, id, target, tag)', 'aria-label': 'filter runs' });
  const group = h('input', { type: 'checkbox', 'aria-label': 'group runs by name' });
  group.checked = true;
  const gate = h('input', { type: 'text', placeholder: 'gate, e.g. p99>+10%,rps<-5%', 'aria-label': 'regression gate' });
  const compareBtn = h('button', { type: 'button', disabled: true, text: 'compare the two ticked runs' });
  const hint = h('span', { class: 'ks-muted', text: 'tick two runs: the first ticked is the baseline (A)' });
  const status = h('p', { class: 'ks-status', role: 'status' });
  const count = h('span', { class: 'ks-muted' });
  const trends = h('section', { id: 'trends', class: 'ks-trends', 'aria-label': 'trends per run name' });
  app.append(
    h('header', { class: 'ks-page-head' }, h('h1', { text: 'keisoku runs' }), count),
    trends,
    h('div', { class: 'ks-toolbar' }, filter, h('label', {}, group, 'group by name'), compareBtn, gate, hint),
    status,
  );

  const picked: string[] = [];
  const update = (): void => {
    compareBtn.disabled = picked.length !== 2;
    hint.textContent = picked.length === 2 ? `A = ${picked[0]}, B = ${picked[1]}` : 'tick two runs: the first ticked is the baseline (A)';
  };
  compareBtn.addEventListener('click', () => {
    if (picked.length !== 2) return;
    const q = new URLSearchParams({ a: picked[0], b: picked[1] });
    if (gate.value.trim()) q.set('gate', gate.value.trim());
    location.href = `/compare?${q}`;
  });

  // Confirmation before anything is deleted; nothing happens on Cancel or Esc.
  const confirmText = h('p');
  const confirmBtn = h('button', { type: 'button', class: 'ks-danger', text: 'delete' });
  const cancelBtn = h('button', { type: 'button', text: 'cancel' });
  const dialog = h('dialog', { class: 'ks-confirm', 'aria-label': 'confirm delete' }, confirmText, h('div', { class: 'ks-toolbar' }, cancelBtn, confirmBtn));
  app.append(dialog);
  let pending: Listing | null = null;
  cancelBtn.addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => (pending = null));
  confirmBtn.addEventListener('click', async () => {
    const r = pending;
    dialog.close();
    if (!r) return;
    try {
      const resp = await fetch(`/api/runs/${encodeURIComponent(r.id)}`, { method: 'DELETE', headers: { 'X-Keisoku-Token': token } });
      const text = (await resp.text()).trim();
      if (!resp.ok) {
        status.textContent = `not deleted: ${text}`;
        status.className = 'ks-status ks-bad';
        return;
      }
      runs = runs.filter((x) => x.id !== r.id);
      const i = picked.indexOf(r.id);
      if (i >= 0) picked.splice(i, 1);
      update();
      status.textContent = `deleted ${r.id}${r.name ? ` (${r.name})` : ''}`;
      status.className = 'ks-status';
      render();
    } catch (e) {
      status.textContent = `not deleted: ${String(e)}`;
      status.className = 'ks-status ks-bad';
    }
  });
  const askDelete = (r: Listing): void => {
    pending = r;
    confirmText.textContent = `Delete run ${r.id}${r.name ? ` (${r.name})` : ''} and everything recorded with it? This cannot be undone.`;
    dialog.showModal();
    cancelBtn.focus();
  };

  const columns: Column[] = [
    { key: 'pick', label: '', cell: (r) => {
      const box = h('input', { type: 'checkbox', 'aria-label': `pick ${r.id} to compare`, value: r.id });
      box.checked = picked.includes(r.id);
      box.addEventListener('change', () => {
        const i = picked.indexOf(r.id);
        if (box.checked && i < 0) picked.push(r.id);
        if (!box.checked && i >= 0) picked.splice(i, 1);
        // More than two ticked: the oldest pick gives way.
        while (picked.length > 2) {
          const drop = picked.shift();
          const other = tbody.querySelector<HTMLInputElement>(`input[value="${CSS.escape(drop ?? '')}"]`);
          if (other) other.checked = false;
        }
        update();
      });
      return h('td', { class: 'ks-name' }, box);
    } },
    { key: 'id', label: 'id', name: true, sort: (r) => r.id, cell: (r) => h('td', { class: 'ks-name' }, h('a', { href: `/runs/${encodeURIComponent(r.id)}`, text: r.id })) },
    { key: 'name', label: 'name', name: true, sort: (r) => r.name, cell: (r) => h('td', { class: 'ks-name', title: r.name, text: r.name }) },
    { key: 'started', label: 'started (UTC)', sort: (r) => r.started_unix_ms, cell: (r) => h('td', { text: fmtDate(r.started_unix_ms) }) },
    { key: 'duration', label: 'duration', sort: (r) => r.duration_ms, cell: (r) => h('td', { text: fmtValue(r.duration_ms, 'ms') }) },
    { key: 'status', label: 'status', name: true, sort: (r) => r.status, cell: (r) => h('td', { class: `ks-name ${r.status === 'complete' ? '' : 'ks-bad'}`, text: r.status }) },
    { key: 'slo', label: 'SLO', name: true, sort: (r) => (r.slo_pass === true ? 1 : r.slo_pass === false ? 0 : null), cell: sloCell },
    { key: 'rps', label: 'rps', sort: (r) => r.rps, cell: (r) => h('td', { text: fmtValue(r.rps, 'req/s') }) },
    { key: 'p99', label: 'p99', sort: (r) => r.p99_ms, cell: (r) => h('td', { text: fmtValue(r.p99_ms, 'ms') }) },
    { key: 'errors', label: 'errors', sort: (r) => r.error_rate_pct ?? null, cell: errorsCell },
    { key: 'target', label: 'target', name: true, sort: (r) => r.target, cell: (r) => h('td', { class: 'ks-name ks-target', title: r.target, text: r.target }) },
    { key: 'tags', label: 'tags', name: true, sort: tagText, cell: (r) => h('td', { class: 'ks-name ks-muted ks-tags', title: tagText(r), text: tagText(r) }) },
    { key: 'delete', label: '', cell: (r) => {
      const b = h('button', { type: 'button', class: 'ks-delete', 'aria-label': `delete ${r.id}`, text: 'delete' });
      if (r.status === 'running') {
        b.disabled = true;
        b.title = 'still recording';
      }
      b.addEventListener('click', (ev) => {
        ev.stopPropagation();
        askDelete(r);
      });
      return h('td', {}, b);
    } },
  ];

  let sortKey = 'started';
  let sortDir: 1 | -1 = -1;
  const headRow = h('tr');
  for (const c of columns) {
    const th = h('th', { class: c.name ? 'ks-name' : '', 'data-col': c.key, text: c.label, scope: 'col' });
    if (c.sort) {
      th.tabIndex = 0;
      const toggle = (): void => {
        if (sortKey === c.key) sortDir = sortDir === 1 ? -1 : 1;
        else {
          sortKey = c.key;
          sortDir = c.name ? 1 : -1;
        }
        render();
      };
      th.addEventListener('click', toggle);
      th.addEventListener('keydown', (ev) => {
        if (ev.key === 'Enter' || ev.key === ' ') {
          ev.preventDefault();
          toggle();
        }
      });
    } else {
      th.style.cursor = 'default';
    }
    headRow.append(th);
  }
  const tbody = h('tbody');
  const table = h('table', { class: 'ks-table ks-runs' }, h('thead', {}, headRow), tbody);
  app.append(h('div', { class: 'ks-scroll' }, table));

  /** Nulls last whatever the direction: a run without load has no p99. */
  const compare = (a: Listing, b: Listing): number => {
    const col = columns.find((c) => c.key === sortKey);
    const va = col?.sort?.(a) ?? null;
    const vb = col?.sort?.(b) ?? null;
    if (va === null && vb === null) return b.started_unix_ms - a.started_unix_ms;
    if (va === null) return 1;
    if (vb === null) return -1;
    const d = typeof va === 'number' && typeof vb === 'number' ? va - vb : String(va).localeCompare(String(vb));
    return d === 0 ? b.started_unix_ms - a.started_unix_ms : d * sortDir;
  };

  const drawn: Trend[] = [];
  const drawTrends = (): void => {
    for (const t of drawn) t.plot.destroy();
    drawn.length = 0;
    clear(trends);
    const byName = new Map<string, Listing[]>();
    for (const r of runs) {
      if (r.rps === null && r.p99_ms === null) continue;
      const key = r.name || '(unnamed)';
      byName.set(key, [...(byName.get(key) ?? []), r]);
    }
    const named = [...byName.entries()].filter(([, rs]) => rs.length >= 2);
    if (!named.length) {
      trends.append(h('p', { class: 'ks-muted', text: 'Trends appear once a run name has two runs with load (keisoku run --name NAME --tag commit=SHA).' }));
      return;
    }
    trends.append(h('h2', { text: 'Trends per run name' }));
    // Three across on a desktop, two on a tablet, one filling a phone.
    const avail = app.clientWidth || window.innerWidth;
    const across = avail >= 900 ? 3 : avail >= 560 ? 2 : 1;
    // Room for the page's padding, the gaps between charts and their borders.
    const width = Math.max(240, Math.min(440, Math.floor((avail - 48) / across) - 20));
    const colors = axisColors();
    for (const [name, rs] of named) {
      const series = [...rs].sort((a, b) => a.started_unix_ms - b.started_unix_ms);
      const xs = series.map((r) => r.started_unix_ms / 1000);
      const labels = new Map(series.map((r, i) => [xs[i], runLabel(r)]));
      const box = h('div', { class: 'ks-trend-charts' });
      trends.append(h('figure', { class: 'ks-trend', 'data-name': name }, h('figcaption', {}, h('strong', { text: name }), h('span', { class: 'ks-muted', text: ` ${series.length} runs` })), box));
      const metrics: [string, string, string, (r: Listing) => number | null][] = [
        ['p99', 'p99 latency', 'ms', (r) => r.p99_ms],
        ['rps', 'throughput', 'req/s', (r) => r.rps],
        ['errors', 'errors (transport + 5xx)', '%', (r) => r.error_rate_pct ?? null],
      ];
      metrics.forEach(([key, title, unit, pick], i) => {
        const cell = h('div', { class: 'ks-chart ks-trend-chart', 'data-metric': key }, h('div', { class: 'ks-chart-title', text: title }));
        box.append(cell);
        const ys = series.map((r) => {
          const v = pick(r);
          return typeof v === 'number' && Number.isFinite(v) ? v : null;
        });
        const plot = new uPlot({
          width,
          height: 170,
          legend: { show: false },
          cursor: { y: false, points: { size: 8 } },
          scales: { x: { time: false, range: (_u, lo, hi) => (lo === hi ? [lo - 60, hi + 60] : [lo - (hi - lo) * 0.04, hi + (hi - lo) * 0.04]) }, y: { range: (_u, _lo, hi) => [0, hi > 0 ? hi * 1.15 : 1] } },
          series: [
            {},
            { label: title, stroke: seriesColor(i), width: 2, spanGaps: true, points: { show: true, size: 7, fill: seriesColor(i) } },
          ],
          axes: [
            {
              stroke: colors.stroke,
              grid: { show: false },
              ticks: { stroke: colors.grid },
              splits: () => xs,
              values: (_u, splits) => splits.map((s, k) => (splits.length > 6 && k % Math.ceil(splits.length / 6) !== 0 ? '' : labels.get(s) ?? '')),
              rotate: 0,
              size: 30,
            },
            { stroke: colors.stroke, grid: { stroke: colors.grid, width: 1 }, size: 78, values: (_u, splits) => splits.map((v) => fmtValue(v, unit)) },
          ],
        }, [xs, ys], cell);
        // Hovering a point names the run.
        plot.over.title = series.map((r) => `${runLabel(r)}: ${fmtValue(pick(r), unit, true)}`).join('\n');
        drawn.push({ name, metric: key, runs: series.map((r) => r.id), labels: series.map(runLabel), plot });
      });
    }
  };

  const render = (): void => {
    count.textContent = `${runs.length} run${runs.length === 1 ? '' : 's'} in the store`;
    for (const th of headRow.querySelectorAll<HTMLElement>('th')) {
      const on = th.dataset.col === sortKey;
      if (on) th.setAttribute('aria-sort', sortDir === 1 ? 'ascending' : 'descending');
      else th.removeAttribute('aria-sort');
      th.classList.toggle('ks-sorted', on);
    }
    clear(tbody);
    const rows = [...runs].sort(compare);
    const addRow = (r: Listing): void => {
      const tr = h('tr', { 'data-run': r.id, 'data-name': r.name, 'data-text': `${r.id} ${r.name} ${r.target} ${tagText(r)}`.toLowerCase() });
      for (const c of columns) tr.append(c.cell(r));
      tbody.append(tr);
    };
    if (group.checked) {
      // Groups in the order of their first run under the current sort.
      const groups = new Map<string, Listing[]>();
      for (const r of rows) groups.set(r.name, [...(groups.get(r.name) ?? []), r]);
      for (const [name, rs] of groups) {
        tbody.append(h('tr', { class: 'ks-group', 'data-group': name }, h('th', { class: 'ks-name', colspan: columns.length, scope: 'rowgroup', text: `${name || '(unnamed)'} · ${rs.length} run${rs.length === 1 ? '' : 's'}` })));
        rs.forEach(addRow);
      }
    } else {
      rows.forEach(addRow);
    }
    if (!runs.length) tbody.append(h('tr', {}, h('td', { class: 'ks-name ks-muted', colspan: columns.length, text: 'No runs yet: record one with keisoku run --target URL' })));
    applyFilter();
    drawTrends();
  };
  const applyFilter = (): void => {
    const q = filter.value.trim().toLowerCase();
    tbody.querySelectorAll<HTMLElement>('tr[data-run]').forEach((tr) => (tr.style.display = !q || (tr.dataset.text ?? '').includes(q) ? '' : 'none'));
  };
  filter.addEventListener('input', applyFilter);
  group.addEventListener('change', render);
  render();
  (window as unknown as { keisoku: unknown }).keisoku = { trends: drawn, runs: () => runs };
  installKeys({ search: () => filter.focus(), reset: () => { filter.value = ''; filter.dispatchEvent(new Event('input')); } });
} catch (e) {
  showFatal(app, e);
}
