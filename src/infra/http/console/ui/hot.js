// The cluster's 20 busiest connections over the last 10 s, by the ranking chosen.
import { bytes, rate, shortKey, shortNode } from './format.js'
import { html } from './html.js'

const RANKINGS = [
  ['inFramesPerSecond', 'frames in/s'],
  ['inBytesPerSecond', 'bytes in/s'],
  ['outBytesPerSecond', 'bytes out/s'],
]

export function Hot({ snapshot, query, setQuery }) {
  const rows = snapshot?.hot?.rows ?? []
  return html`<section data-testid="view-hot">
    <label class="filters">ranked by
      <select data-testid="hot-ranking" value=${query.ranking ?? 'inFramesPerSecond'} onChange=${(e) => setQuery({ ...query, ranking: e.target.value })}>
        ${RANKINGS.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
      </select>
    </label>
    <table>
      <caption>Hot connections (top 20, last 10 s)</caption>
      <thead><tr>
        <th scope="col">node</th><th scope="col">connection</th><th scope="col">community</th><th scope="col">pubkeys</th>
        <th scope="col">IP</th><th scope="col">subs</th><th scope="col">agent</th>
        <th scope="col">frames in/s</th><th scope="col">in/s</th><th scope="col">out/s</th>
      </tr></thead>
      <tbody>
        ${rows.map(
          (r) => html`<tr key=${`${r.node}/${r.conn}`} data-testid="hot-row">
            <td title=${r.node}>${shortNode(r.node)}</td><td>${r.conn}</td><td>${r.community}</td>
            <td>${r.pubkeys.map((k) => html`<code title=${k}>${shortKey(k)}</code> `)}</td>
            <td>${r.ip}</td><td>${r.subscriptions}</td>
            <td>${r.agentState ? html`<span class=${`state state-${r.agentState}`}>${r.agentState}</span>` : '–'}</td>
            <td>${rate(r.inFramesPerSecond)}</td><td>${bytes(r.inBytesPerSecond)}</td><td>${bytes(r.outBytesPerSecond)}</td>
          </tr>`,
        )}
        ${rows.length === 0 && html`<tr><td colspan="10" class="muted">no traffic</td></tr>`}
      </tbody>
    </table>
  </section>`
}
