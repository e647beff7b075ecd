// Every node of the cluster as a card (ready or degraded and why, gone once it stopped publishing) with its
// charts of the last 10 minutes.
import { Chart } from './chart.js'
import { bytes, duration, pairs, rate } from './format.js'
import { html } from './html.js'

const MIB = 1024 * 1024

const CHARTS = [
  {
    title: 'events/s',
    series: [
      { label: 'in', value: (p) => p.eventsInPerSecond },
      { label: 'out', value: (p) => p.eventsOutPerSecond },
    ],
  },
  { title: 'connections', series: [{ label: 'connections', value: (p) => p.connections }] },
  { title: 'CPU % of a core', series: [{ label: 'cpu', value: (p) => p.cpuPercent }] },
  { title: 'RSS MiB', series: [{ label: 'rss', value: (p) => p.rssBytes / MIB }] },
  { title: 'loop delay p99 ms', series: [{ label: 'p99', value: (p) => p.loopDelayP99Ms }] },
]

function health({ status, gone }) {
  if (gone) return html`<span class="badge gone">gone</span>`
  if (status.ready) return html`<span class="badge ok">ready</span>`
  return html`<span class="badge bad">degraded</span>`
}

function NodeCard({ view, points, nowMs }) {
  const s = view.status
  return html`<article class=${`card node${view.gone ? ' is-gone' : ''}`} data-testid="node-card" data-node=${s.node}>
    <header>
      <h2>${s.node}</h2>
      ${health(view)}
    </header>
    ${!s.ready && s.degraded.length > 0 && html`<p class="why">${s.degraded.join(', ')}</p>`}
    ${view.gone && html`<p class="why">last heard ${duration(nowMs - s.publishedAtMs)} ago</p>`}
    <dl class="figures">
      <dt>uptime</dt><dd>${duration(s.publishedAtMs - s.startedAtMs)}</dd>
      <dt>connections</dt><dd>${s.connections}</dd>
      <dt>subscriptions</dt><dd>${s.subscriptions}</dd>
      <dt>events/s in · out</dt><dd>${rate(s.eventsInPerSecond)} · ${rate(s.eventsOutPerSecond)}</dd>
      <dt>refusals/s</dt><dd>${pairs(s.refusalsPerSecondByPrefix)}</dd>
      <dt>loop delay p99</dt><dd>${rate(s.loopDelayP99Ms)} ms</dd>
      <dt>GC pauses ≥ 10 ms</dt><dd>${s.gcPauses.count}${s.gcPauses.count > 0 ? ` (max ${rate(s.gcPauses.maxMs)} ms)` : ''}</dd>
      <dt>RSS</dt><dd>${bytes(s.rssBytes)}</dd>
      <dt>CPU</dt><dd>${rate(s.cpuPercent)} %</dd>
    </dl>
    ${
      points.length > 0 &&
      html`<div class="charts">
      ${CHARTS.map((c) => html`<${Chart} key=${c.title} title=${c.title} series=${c.series} points=${points} />`)}
    </div>`
    }
  </article>`
}

export function Overview({ snapshot, samples }) {
  const nodes = snapshot?.nodes ?? []
  if (nodes.length === 0) return html`<p class="muted">No node has published its status yet.</p>`
  return html`<section class="nodes" data-testid="view-overview">
    ${nodes.map((v) => html`<${NodeCard} key=${v.status.node} view=${v} points=${samples[v.status.node] ?? []} nowMs=${snapshot.atMs} />`)}
  </section>`
}
