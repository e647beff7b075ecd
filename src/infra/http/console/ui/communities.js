// Per community, its figures summed over the nodes that serve it.
import { addInto, pairs } from './format.js'
import { html } from './html.js'

const STATES = ['ACTIVE', 'SUSPECT', 'ZOMBIE']

function byCommunity(nodes) {
  const all = new Map()
  for (const { status, gone } of nodes) {
    if (gone) continue
    for (const c of status.communities) {
      const row = all.get(c.id) ?? { id: c.id, connections: 0, subscriptions: 0, agents: {}, kinds: {}, refusals: {} }
      row.connections += c.connections
      row.subscriptions += c.subscriptions
      addInto(row.agents, c.agents)
      addInto(row.kinds, c.eventsPerSecondByKind)
      addInto(row.refusals, c.refusalsPerSecondByReason)
      all.set(c.id, row)
    }
  }
  return [...all.values()].sort((a, b) => a.id.localeCompare(b.id))
}

export function Communities({ snapshot }) {
  const rows = byCommunity(snapshot?.nodes ?? [])
  return html`<section data-testid="view-communities">
    <table>
      <caption>Communities (summed over the live nodes)</caption>
      <thead><tr>
        <th scope="col">community</th><th scope="col">connections</th><th scope="col">subscriptions</th>
        ${STATES.map((s) => html`<th scope="col">${s.toLowerCase()}</th>`)}
        <th scope="col">events/s by kind</th><th scope="col">refusals/s by reason</th>
      </tr></thead>
      <tbody>
        ${rows.map(
          (r) => html`<tr key=${r.id} data-testid="community-row" data-community=${r.id}>
            <th scope="row">${r.id}</th><td>${r.connections}</td><td>${r.subscriptions}</td>
            ${STATES.map((s) => html`<td class=${`state-${s}`}>${r.agents[s] ?? 0}</td>`)}
            <td>${pairs(r.kinds)}</td><td>${pairs(r.refusals)}</td>
          </tr>`,
        )}
        ${rows.length === 0 && html`<tr><td colspan="8" class="muted">no community</td></tr>`}
      </tbody>
    </table>
  </section>`
}
