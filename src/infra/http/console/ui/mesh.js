// The mesh as each node sees it: its peers' failure detection and the sessions it owns or knows.
import { duration, rate, shortKey } from './format.js'
import { html } from './html.js'

function NodeMesh({ mesh }) {
  return html`<article class="card" data-testid="mesh-node" data-node=${mesh.node}>
    <header><h2>${mesh.node}</h2><span class="muted">runtime ${mesh.runtime}</span></header>
    <p>fence refusals ${mesh.fenceRefusals} · leases lost ${mesh.leasesLost}</p>
    <table>
      <caption>Peers</caption>
      <thead><tr><th scope="col">runtime</th><th scope="col">endpoint</th><th scope="col">phi</th><th scope="col">link</th></tr></thead>
      <tbody>
        ${mesh.peers.map(
          (p) => html`<tr key=${p.runtime}>
            <td>${p.runtime}</td><td>${p.endpoint}</td><td>${rate(p.phi)}</td>
            <td>${p.connected ? html`<span class="badge ok">connected</span>` : html`<span class="badge gone">down</span>`}
              ${p.suspect && html` <span class="badge bad">suspect</span>`}</td>
          </tr>`,
        )}
      </tbody>
    </table>
    <table>
      <caption>Sessions</caption>
      <thead><tr><th scope="col">community</th><th scope="col">session</th><th scope="col">owner</th><th scope="col">generation</th><th scope="col">lease remaining</th></tr></thead>
      <tbody>
        ${mesh.sessions.map(
          (s) => html`<tr key=${`${s.community}/${s.session}`}>
            <td>${s.community}</td><td><code title=${s.session}>${shortKey(s.session)}</code></td>
            <td>${s.owner}${s.local ? ' (here)' : ''}</td><td>${s.generation}</td>
            <td>${s.leaseRemainingMs === undefined ? '–' : duration(s.leaseRemainingMs)}</td>
          </tr>`,
        )}
      </tbody>
    </table>
  </article>`
}

export function Mesh({ snapshot }) {
  const meshes = snapshot?.mesh ?? []
  return html`<section data-testid="view-mesh">
    ${meshes.length === 0 ? html`<p class="muted" data-testid="mesh-off">mesh off</p>` : meshes.map((m) => html`<${NodeMesh} key=${m.node} mesh=${m} />`)}
  </section>`
}
