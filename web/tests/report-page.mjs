// The report page of a Run JSON for browser tests: through the real binary
// (`keisoku report RUN.json`) when it has `report`, else through the same
// template crates/report uses.
import { join } from 'node:path';
import { binSupports, runBin, scratch, templatePage, write } from './helpers/browser.mjs';

/** Writes the report of `run` under test-artifacts/NAME/ and returns its path. */
export function reportPage(name, run) {
  const dir = scratch(name);
  const html = join(dir, `${name}.html`);
  if (binSupports('report')) {
    const json = write(join(dir, `${name}.json`), JSON.stringify(run));
    runBin(['report', json, '-o', html]);
  } else {
    write(html, templatePage('report', 'report', JSON.stringify({ served: false, range_ms: null, run })));
  }
  return html;
}
