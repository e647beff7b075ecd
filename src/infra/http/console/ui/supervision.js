// The supervision events of every node as they happen, newest first, filtered here (the stream keeps the
// last 1,000 of them).
import { clock, shortNode } from './format.js'
import { html } from './html.js'
import { useState } from './vendor/hooks.mjs'

const TYPES = ['crashed', 'backoff', 'restarted', 'gave-up', 'lagged', 'stopped', 'overflow', 'escalated', 'degraded']

export function Supervision({ rows }) {
  const [type, setType] = useState('')
  const [path, setPath] = useState('')
  const shown = rows.filter((r) => (!type || r.type === type) && (!path || r.path.includes(path)))
  return html`<section data-testid="view-supervision">
    <form class="filters" onSubmit=${(e) => e.preventDefault()}>
      <label>type
        <select data-testid="supervision-type-filter" value=${type} onChange=${(e) => setType(e.target.value)}>
          <option value="">any</option>
          ${TYPES.map((t) => html`<option value=${t}>${t}</option>`)}
        </select>
      </label>
      <label>path contains
        <input data-testid="supervision-path-filter" value=${path} onInput=${(e) => setPath(e.target.value)} />
      </label>
    </form>
    <table>
      <caption>Supervision events, newest first (${shown.length} of ${rows.length})</caption>
      <thead><tr>
        <th scope="col">time</th><th scope="col">node</th><th scope="col">type</th><th scope="col">actor path</th>
        <th scope="col">supervisor</th><th scope="col">detail</th>
      </tr></thead>
      <tbody>
        ${shown.map(
          (r) => html`<tr key=${`${r.node}/${r.seq}`} data-testid="supervision-row" data-type=${r.type}>
            <td>${clock(r.atMs)}</td><td title=${r.node}>${shortNode(r.node)}</td><td><span class=${`sup sup-${r.type}`}>${r.type}</span></td>
            <td><code>${r.path}</code></td><td><code>${r.supervisor}</code></td><td>${r.detail}</td>
          </tr>`,
        )}
        ${shown.length === 0 && html`<tr><td colspan="6" class="muted">nothing yet</td></tr>`}
      </tbody>
    </table>
  </section>`
}
