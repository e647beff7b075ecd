/**
 * docs/grafana-dashboard.json, written by `npm run docs`: the console's views over Prometheus, for operators who
 * already scrape `/metrics`. Rows follow the console (overview, agents, refusals, mesh, console); a test checks
 * that every metric a query names is one the relay registers, so a renamed metric cannot leave a blank panel.
 */
import {
  layOut,
  ON_INSTANCES,
  type PanelSpec,
  quantile,
  query,
  type RowSpec,
  rateBy,
  stat,
  templateVariables,
  timeseries,
} from './grafana-panels.js'

const F = ON_INSTANCES
/** the supervision events docs/operating.md says deserve an alert */
const SUPERVISION_ALARMS = 'crashed|gave-up|overflow|escalated|degraded'

const overview: PanelSpec[] = [
  stat('Nodes', 'nodes scraped that export apiary_connections_active', 'none', `count(apiary_connections_active{${F}})`),
  stat('Connections', 'WebSocket connections open on the chosen nodes', 'none', `sum(apiary_connections_active{${F}})`),
  stat('Events accepted', 'events answered OK true', 'reqps', rateBy('apiary_events_accepted_total', [])),
  stat(
    'Actors gave up',
    'supervision gave-up events in the time range: an actor stopped restarting, and /health/ready names it',
    'none',
    `sum(increase(apiary_supervision_events_total{${F}, type="gave-up"}[$__range]))`,
    { redAt: 1 },
  ),
  timeseries('Connections open', 'WebSocket connections open, by node', 'none', [
    query(`sum by (instance) (apiary_connections_active{${F}})`, '{{instance}}'),
  ]),
  timeseries('Connections accepted', 'new WebSocket connections per second, by node', 'cps', [
    query(rateBy('apiary_connections_total', ['instance']), '{{instance}}'),
  ]),
  timeseries('Events', 'EVENT messages received, answered OK true and OK false', 'reqps', [
    query(rateBy('apiary_events_received_total', []), 'received'),
    query(rateBy('apiary_events_accepted_total', []), 'accepted'),
    query(rateBy('apiary_events_rejected_total', []), 'rejected'),
  ]),
  timeseries('Events rejected by reason', 'OK false by reason prefix (duplicate is usually a client re-sending)', 'reqps', [
    query(rateBy('apiary_events_rejected_total', ['reason']), '{{reason}}'),
  ]),
  timeseries('Fan-out deliveries', 'live EVENT frames queued to subscribers, by node', 'ops', [
    query(rateBy('apiary_fanout_deliveries_total', ['instance']), '{{instance}}'),
  ]),
  timeseries('Lost and lagged', 'events, orders and cache drops a community could not take, and subscriptions closed for a gap', 'ops', [
    query(rateBy('apiary_fanout_lag_total', []), 'fan-out lag'),
    query(rateBy('apiary_conn_control_lag_total', []), 'conn-control lag'),
    query(rateBy('apiary_cache_invalidation_lag_total', []), 'cache-invalidation lag'),
    query(rateBy('apiary_subscriptions_lost_total', []), 'subscriptions lost'),
    query(rateBy('apiary_lags_acted_on_total', ['stream']), 'acted on: {{stream}}'),
  ]),
  timeseries('Store p99', '99th percentile of a save (start to commit) and of a REQ page query', 's', [
    query(quantile(0.99, 'apiary_store_seconds', ['op']), '{{op}}'),
  ]),
  timeseries('Store reads', 'reads waiting for a SQLite read worker, and reads stopped at their budget', 'none', [
    query(`sum by (instance) (apiary_store_reads_waiting{${F}})`, 'waiting {{instance}}'),
    query(rateBy('apiary_store_read_budget_exceeded_total', []), 'over budget /s'),
    query(rateBy('apiary_store_writer_restarts_total', []), 'writer restarts /s'),
  ]),
  timeseries('Supervision events', 'actor lifecycle events by type', 'ops', [
    query(rateBy('apiary_supervision_events_total', ['type']), '{{type}}'),
  ]),
  timeseries('Restarts and alarms', 'restarts, and the supervision events that deserve an alert, by actor kind', 'none', [
    query(`sum by (kind) (increase(apiary_supervision_events_total{${F}, type="restarted"}[$__rate_interval]))`, 'restarted {{kind}}'),
    query(
      `sum by (type, kind) (increase(apiary_supervision_events_total{${F}, type=~"${SUPERVISION_ALARMS}"}[$__rate_interval]))`,
      '{{type}} {{kind}}',
    ),
  ]),
  timeseries('CPU', 'process CPU, 1 = one core', 'percentunit', [
    query(`rate(process_cpu_seconds_total{${F}}[$__rate_interval])`, '{{instance}}'),
  ]),
  timeseries('Memory (RSS)', 'resident set size of the process', 'bytes', [query(`process_resident_memory_bytes{${F}}`, '{{instance}}')]),
  timeseries('Event-loop delay p99', 'the loop holds every connection: a rise here delays every client of the node', 's', [
    query(`nodejs_eventloop_lag_p99_seconds{${F}}`, '{{instance}}'),
  ]),
  timeseries('GC pauses over 10 ms', 'garbage collections that paused the loop for more than 10 ms, per second', 'ops', [
    query(
      `sum by (instance) (rate(nodejs_gc_duration_seconds_count{${F}}[$__rate_interval])) - sum by (instance) (rate(nodejs_gc_duration_seconds_bucket{${F}, le="0.01"}[$__rate_interval]))`,
      '{{instance}}',
    ),
  ]),
]

const GOODBYES = `sum(rate(apiary_agent_departures_total{${F}, cause="goodbye"}[5m])) / sum(rate(apiary_agent_departures_total{${F}}[5m]))`

const agents: PanelSpec[] = [
  stat('Agents active', 'agent connections heartbeating on time', 'none', `sum(apiary_agent_connections{${F}, state="ACTIVE"})`),
  stat(
    'Agents suspect or zombie',
    'agent connections late with their heartbeat (SUSPECT) or past their lease with the socket open (ZOMBIE)',
    'none',
    `sum(apiary_agent_connections{${F}, state=~"SUSPECT|ZOMBIE"})`,
    { redAt: 1 },
  ),
  stat(
    'Goodbye ratio',
    'departures that said goodbye, over the last 5 minutes; a fleet leaving without goodbye lowers it',
    'percentunit',
    GOODBYES,
  ),
  stat('Agents with a lease', 'agents with a live presence lease and an announcement', 'none', `sum(apiary_agents{${F}, state="live"})`),
  timeseries(
    'Agent connections by state',
    'ACTIVE, SUSPECT and ZOMBIE agent connections',
    'none',
    [query(`sum by (state) (apiary_agent_connections{${F}})`, '{{state}}')],
    {
      stacked: true,
    },
  ),
  timeseries('Agent connections by community', 'the 10 communities with the most agent connections', 'none', [
    query(`topk(10, sum by (community) (apiary_agent_connections{${F}}))`, '{{community}}'),
  ]),
  timeseries('Heartbeat age', 'time since an agent connection last heartbeat, p50 and p99', 's', [
    query(quantile(0.5, 'apiary_agent_heartbeat_age_seconds'), 'p50'),
    query(quantile(0.99, 'apiary_agent_heartbeat_age_seconds'), 'p99'),
  ]),
  timeseries('Departures by cause', 'agent connections closed: goodbye, lease lapsed, socket closed, reaped', 'ops', [
    query(rateBy('apiary_agent_departures_total', ['cause']), '{{cause}}'),
  ]),
  timeseries('Goodbye ratio', 'departures that said goodbye, over 5 minutes', 'percentunit', [query(GOODBYES, 'goodbye')], { max: 1 }),
  timeseries('Leases and goodbyes', 'presence leases that lapsed, and goodbyes answered', 'ops', [
    query(rateBy('apiary_agent_leases_expired_total', []), 'leases expired'),
    query(rateBy('apiary_agent_byes_total', []), 'goodbyes'),
  ]),
  timeseries('Handshake', 'from WebSocket open to the first AUTH answered OK true', 's', [
    query(quantile(0.5, 'apiary_handshake_seconds'), 'p50'),
    query(quantile(0.99, 'apiary_handshake_seconds'), 'p99'),
  ]),
  timeseries(
    'AUTH shaped, refused, rejected',
    'AUTHs spread out in a reconnect storm, refused for a connection limit, or answered OK false',
    'ops',
    [
      query(rateBy('apiary_auth_shaped_total', []), 'shaped'),
      query(rateBy('apiary_auth_refused_total', ['reason']), 'refused: {{reason}}'),
      query(rateBy('apiary_auth_rejected_total', ['prefix']), 'rejected: {{prefix}}'),
    ],
  ),
]

/** one timeseries of a counter's rate split by its label */
const byLabel = (title: string, description: string, metric: string, label: string, width = 8): PanelSpec =>
  timeseries(title, description, 'ops', [query(rateBy(metric, [label]), `{{${label}}}`)], { width })

const refusals: PanelSpec[] = [
  timeseries('Admission rejections', 'rate-limit and blocked-IP refusals, by budget and reason', 'ops', [
    query(rateBy('apiary_admission_rejections_total', ['type', 'reason']), '{{type}} {{reason}}'),
  ]),
  byLabel('Connections refused', 'upgrades refused before the WebSocket opened', 'apiary_connections_refused_total', 'reason'),
  byLabel('Slow HTTP closed', 'sockets closed before their first request arrived whole', 'apiary_http_connections_closed_total', 'reason'),
  byLabel('Reads refused', 'REQ/COUNT refused or stopped for their cost', 'apiary_reads_refused_total', 'reason'),
  timeseries('Slow consumers and pressure', 'sockets closed as slow consumers, paused for inbound bytes, NOTICEs sent', 'ops', [
    query(rateBy('apiary_slow_consumer_closes_total', []), 'slow consumer closes'),
    query(rateBy('apiary_inbound_pauses_total', []), 'inbound pauses'),
    query(rateBy('apiary_notices_total', []), 'notices'),
  ]),
  byLabel('Operator requests refused', 'requests for operator-only detail refused', 'apiary_operator_requests_refused_total', 'prefix'),
  byLabel('Control rejected', 'bus control payloads and remote events refused', 'apiary_control_rejected_total', 'reason'),
  byLabel(
    'Bus rejected',
    'Redis bus messages dropped before delivery (mac: not signed with the cluster key)',
    'apiary_bus_rejected_total',
    'reason',
  ),
  byLabel('NIP-86 signatures', 'NIP-98 signatures of NIP-86 calls checked, by verdict', 'apiary_nip86_signature_checks_total', 'verdict'),
  timeseries('Access lookups failed', 'live deliveries withheld because a membership lookup failed (fail closed)', 'ops', [
    query(rateBy('apiary_access_lookup_failures_total', []), 'failures'),
  ]),
]

const mesh: PanelSpec[] = [
  byLabel('Fence rejections', 'mesh session frames and writes refused by the fence', 'apiary_mesh_fence_rejections_total', 'reason', 6),
  byLabel('Leases lost', 'channels this node owned and lost without giving them up', 'apiary_mesh_leases_lost_total', 'reason', 6),
  byLabel(
    'Tunnels closed',
    'mesh tunnels ended; forged, replayed, reordered are frames that did not open',
    'apiary_mesh_tunnel_closed_total',
    'reason',
    6,
  ),
  byLabel('Hellos refused', 'mesh handshakes refused on the mesh port', 'apiary_mesh_hellos_refused_total', 'reason', 6),
  timeseries('Readiness records skipped', 'mesh readiness records skipped (malformed, expired, foreign, unsigned)', 'ops', [
    query(rateBy('apiary_mesh_registry_skipped_total', []), 'skipped'),
  ]),
]

const consoleRow: PanelSpec[] = [
  byLabel('Console sign-ins', 'sign-ins to the console, by outcome', 'apiary_console_sign_ins_total', 'outcome', 16),
  stat(
    'Sign-ins in range',
    'sign-ins to the console in the time range, by outcome',
    'none',
    `sum by (outcome) (increase(apiary_console_sign_ins_total{${F}}[$__range]))`,
    { width: 8, legend: '{{outcome}}' },
  ),
]

export const DASHBOARD_ROWS: RowSpec[] = [
  { title: 'Overview', panels: overview },
  { title: 'Agents', panels: agents },
  { title: 'Refusals and abuse', panels: refusals },
  { title: 'Mesh', panels: mesh },
  { title: 'Console', panels: consoleRow },
]

export function grafanaDashboard() {
  return {
    uid: 'apiary-relay',
    title: 'Apiary relay',
    description: 'The operator console of an Apiary relay, over its Prometheus metrics (docs/operating.md#grafana)',
    tags: ['apiary', 'nostr'],
    schemaVersion: 39,
    editable: true,
    graphTooltip: 1,
    refresh: '10s',
    time: { from: 'now-1h', to: 'now' },
    templating: { list: templateVariables() },
    panels: layOut(DASHBOARD_ROWS),
  }
}

/** The file's text, as `npm run docs` writes it and the test compares it. */
export const grafanaDashboardJson = () => `${JSON.stringify(grafanaDashboard(), null, 2)}\n`
