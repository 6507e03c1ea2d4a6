// `keisoku serve`'s home page: every run in the store, newest first; open
// one, or tick two and compare them.
import '../common/base.css';
import '../report/report.css';
import { h, pageData, showFatal } from '../common/dom';
import { installKeys } from '../common/keyboard';
import { fmtValue } from '../charts/units';

interface Listing { id: string; name: string; started_unix_ms: number; duration_ms: number; target: string; status: string; rps: number | null; p99_ms: number | null; tags: Record<string, string> }

const app = document.getElementById('app') as HTMLElement;
try {
  const { runs } = pageData<{ runs: Listing[] }>();
  const filter = h('input', { type: 'search', placeholder: 'filter runs (name, id, target, tag)', 'aria-label': 'filter runs' });
  const gate = h('input', { type: 'text', placeholder: "gate, e.g. p99>+10%,rps<-5%", 'aria-label': 'regression gate' });
  const compareBtn = h('button', { type: 'button', disabled: true, text: 'compare the two ticked runs' });
  const hint = h('span', { class: 'ks-muted', text: 'tick two runs: the first ticked is the baseline (A)' });
  app.append(
    h('header', { class: 'ks-page-head' }, h('h1', { text: 'keisoku runs' }), h('span', { class: 'ks-muted', text: `${runs.length} run${runs.length === 1 ? '' : 's'} in the store` })),
    h('div', { class: 'ks-toolbar' }, filter, compareBtn, gate, hint),
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
  const tbody = h('tbody');
  const fmtDate = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, '');
  for (const r of runs) {
    const box = h('input', { type: 'checkbox', 'aria-label': `pick ${r.id} to compare`, value: r.id });
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
    const tags = Object.entries(r.tags ?? {}).map(([k, v]) => `${k}=${v}`).join(' ');
    const row = h('tr', { 'data-run': r.id, 'data-text': `${r.id} ${r.name} ${r.target} ${tags}`.toLowerCase() },
      h('td', { class: 'ks-name' }, box),
      h('td', { class: 'ks-name' }, h('a', { href: `/runs/${encodeURIComponent(r.id)}`, text: r.id })),
      h('td', { class: 'ks-name', text: r.name }),
      h('td', { text: fmtDate(r.started_unix_ms) }),
      h('td', { text: fmtValue(r.duration_ms, 'ms') }),
      h('td', { class: 'ks-name', text: r.target }),
      h('td', { class: r.status === 'complete' ? '' : 'ks-bad', text: r.status }),
      h('td', { text: fmtValue(r.rps, 'req/s') }),
      h('td', { text: fmtValue(r.p99_ms, 'ms') }),
      h('td', { class: 'ks-name ks-muted', text: tags }));
    tbody.append(row);
  }
  if (!runs.length) tbody.append(h('tr', {}, h('td', { class: 'ks-name ks-muted', colspan: 10, text: 'No runs yet: record one with keisoku run --target URL' })));
  app.append(h('table', { class: 'ks-table ks-runs' },
    h('thead', {}, h('tr', {}, ...['', 'id', 'name', 'started (UTC)', 'duration', 'target', 'status', 'rps', 'p99', 'tags'].map((t, i) => h('th', { class: i < 3 || i === 5 || i === 9 ? 'ks-name' : '', text: t })))),
    tbody));
  filter.addEventListener('input', () => {
    const q = filter.value.trim().toLowerCase();
    tbody.querySelectorAll<HTMLElement>('tr[data-run]').forEach((tr) => (tr.style.display = !q || (tr.dataset.text ?? '').includes(q) ? '' : 'none'));
  });
  installKeys({ search: () => filter.focus(), reset: () => { filter.value = ''; filter.dispatchEvent(new Event('input')); } });
} catch (e) {
  showFatal(app, e);
}
