// The agent connections, one page at a time: the relay filters and pages, so 10,000 agents cost the page no
// more than the 100 it shows.
import { clock, duration, rate, shortKey, shortNode } from './format.js'
import { html } from './html.js'
import { useState } from './vendor/hooks.mjs'

const STATES = ['ACTIVE', 'SUSPECT', 'ZOMBIE']
export const AGENTS_PAGE_SIZE = 100

function CopyKey({ pubkey }) {
  const [copied, setCopied] = useState(false)
  const copy = () =>
    navigator.clipboard?.writeText(pubkey).then(
      () => setCopied(true),
      () => setCopied(false),
    )
  return html`<span class="key" title=${pubkey}>
    <code>${shortKey(pubkey)}</code>
    <button type="button" class="link" onClick=${copy} aria-label=${`copy ${pubkey}`}>${copied ? 'copied' : 'copy'}</button>
  </span>`
}

function Filters({ query, setQuery }) {
  const [capability, setCapability] = useState(query.capability ?? '')
  const apply = (e) => {
    e.preventDefault()
    setQuery({ ...query, capability: capability.trim() || undefined, offset: 0 })
  }
  return html`<form class="filters" onSubmit=${apply}>
    <label>state
      <select data-testid="agent-state-filter" value=${query.state ?? ''}
        onChange=${(e) => setQuery({ ...query, state: e.target.value || undefined, offset: 0 })}>
        <option value="">any</option>
        ${STATES.map((s) => html`<option value=${s}>${s}</option>`)}
      </select>
    </label>
    <label>capability
      <input data-testid="agent-capability-filter" value=${capability} onInput=${(e) => setCapability(e.target.value)} />
    </label>
    <button type="submit">filter</button>
  </form>`
}

function Pager({ total, query, setQuery }) {
  const offset = query.offset ?? 0
  const last = Math.min(total, offset + AGENTS_PAGE_SIZE)
  return html`<nav class="pager" aria-label="agent pages">
    <button type="button" disabled=${offset === 0} onClick=${() => setQuery({ ...query, offset: Math.max(0, offset - AGENTS_PAGE_SIZE) })}>previous</button>
    <span data-testid="agent-range">${total === 0 ? 0 : offset + 1}–${last} of ${total}</span>
    <button type="button" disabled=${last >= total} onClick=${() => setQuery({ ...query, offset: offset + AGENTS_PAGE_SIZE })}>next</button>
  </nav>`
}

function AgentRow({ row }) {
  return html`<tr class=${row.flagged ? 'flagged' : ''} data-testid="agent-row" data-pubkey=${row.pubkey} data-state=${row.state}>
    <td><${CopyKey} pubkey=${row.pubkey} /></td>
    <td>${row.capabilities.join(', ') || '–'}</td>
    <td><span class=${`state state-${row.state}`}>${row.state}</span>${row.flagged && html` <span class="badge bad" title="ACTIVE, yet its last heartbeat is older than its lease">flagged</span>`}</td>
    <td>${duration(row.heartbeatAgeMs)}</td>
    <td>${duration(row.leaseRemainingMs)}</td>
    <td>${row.load === undefined ? '–' : rate(row.load)}</td>
    <td title=${row.node}>${shortNode(row.node)}</td>
    <td>${row.community}</td>
    <td>${clock(row.connectedSinceMs)}</td>
  </tr>`
}

export function Agents({ snapshot, query, setQuery }) {
  const page = snapshot?.agents ?? { total: 0, offset: 0, rows: [] }
  return html`<section data-testid="view-agents">
    <${Filters} query=${query} setQuery=${setQuery} />
    <${Pager} total=${page.total} query=${query} setQuery=${setQuery} />
    <table>
      <caption>Agent connections</caption>
      <thead><tr>
        <th scope="col">pubkey</th><th scope="col">capabilities</th><th scope="col">state</th>
        <th scope="col">heartbeat age</th><th scope="col">lease remaining</th><th scope="col">load</th>
        <th scope="col">node</th><th scope="col">community</th><th scope="col">connected since</th>
      </tr></thead>
      <tbody>
        ${page.rows.map((r) => html`<${AgentRow} key=${`${r.node}/${r.conn}`} row=${r} />`)}
        ${page.rows.length === 0 && html`<tr><td colspan="9" class="muted">no agent connection</td></tr>`}
      </tbody>
    </table>
  </section>`
}
