// Every target the bench checks, in one table: which scenario's figure, the bound, and its direction. A
// target without a group holds for that figure in every group of its scenario. `of` makes the bound a
// multiple of the row's baseline column or of the verifier pool's ceiling measured in the same run.
import type { Figure } from './lib/scenario'
import { PACED_GROUP, SATURATION_GROUP } from './scenarios/fanout'
import { PACED_GROUP as JOBS_PACED_GROUP, SATURATION_GROUP as JOBS_SATURATION_GROUP } from './scenarios/jobs'

export interface Target {
  scenario: string
  group?: string
  figure: string
  direction: 'at least' | 'at most'
  bound: number
  of?: { what: 'baseline'; name: string } | { what: 'strfry' } | { what: 'ceiling' }
}

const baseline = { what: 'baseline', name: 'baseline' } as const
const ceiling = { what: 'ceiling' } as const
const strfry = { what: 'strfry' } as const
const atMost = (scenario: string, figure: string, bound: number, group?: string): Target => ({
  scenario,
  figure,
  direction: 'at most',
  bound,
  ...(group ? { group } : {}),
})
const STORMS = ['storm', 'storm, maxConcurrentAuth 32']

export const TARGETS: readonly Target[] = [
  // docs/jobs.md: on this 2-core machine, one node, 100 agents
  { scenario: 'jobs', group: JOBS_SATURATION_GROUP, figure: 'jobs completed', direction: 'at least', bound: 1_000 },
  atMost('jobs', 'assignment p99', 25, JOBS_PACED_GROUP),
  ...['ingest-pinned', 'ingest-closed', 'ingest-pipelined'].flatMap((s) => [
    atMost(s, 'relay CPU per accepted event', 350),
    atMost(s, 'event-loop delay p99', 20),
  ]),
  {
    scenario: 'ingest-pinned',
    group: '4×16, relay pinned to one core',
    figure: 'accepted',
    direction: 'at least',
    bound: 20,
    of: baseline,
  },
  { scenario: 'ingest-pipelined', group: '4×16', figure: 'accepted', direction: 'at least', bound: 0.5, of: ceiling },
  { scenario: 'ingest-pipelined', group: '4×200', figure: 'accepted', direction: 'at least', bound: 0.7, of: ceiling },
  atMost('ingest-pipelined', 'OK latency p99', 50, 'open loop at half the higher rate'),
  atMost('store', 'commit + checkpoint CPU per event', 60),
  { scenario: 'fanout', group: SATURATION_GROUP, figure: 'deliveries', direction: 'at least', bound: 100_000 },
  { scenario: 'fanout', group: SATURATION_GROUP, figure: 'deliveries', direction: 'at least', bound: 3, of: baseline },
  atMost('req', 'sequential p99', 10),
  { scenario: 'req', figure: 'concurrent queries', direction: 'at least', bound: 2, of: baseline },
  atMost('ingest-with-reads', 'event-loop delay p99', 20),
  // against strfry, in the same run: a relay people pick for speed is the anchor
  { scenario: 'ingest-pinned', group: '4×16, relay pinned to one core', figure: 'accepted', direction: 'at least', bound: 1.5, of: strfry },
  {
    scenario: 'ingest-pinned',
    group: '4×16 pinned, Apiary durable to power loss',
    figure: 'accepted',
    direction: 'at least',
    bound: 1,
    of: strfry,
  },
  { scenario: 'fanout', group: SATURATION_GROUP, figure: 'deliveries', direction: 'at least', bound: 1, of: strfry },
  { scenario: 'fanout', group: PACED_GROUP, figure: 'publish→delivery p99', direction: 'at most', bound: 1, of: strfry },
  { scenario: 'req', figure: 'concurrent queries', direction: 'at least', bound: 1, of: strfry },
  { scenario: 'req', figure: 'concurrent p99', direction: 'at most', bound: 1.5, of: strfry },
  atMost('req', 'concurrent p99', 10),
  atMost('req-burst', 'REQs refused (CLOSED)', 0),
  atMost('req-burst', 'REQ → EOSE p99', 50),
  atMost('req-burst', 'heap+external per connection, REQ open', 16),
  atMost('idle-memory', 'heap+external per connection', 16),
  atMost('agents', 'agents not ACTIVE at the end', 0),
  atMost('agents', 'steady handshake start→ACTIVE p99', 25),
  // MiB: 20,000 agents on one node within 1.5 GiB
  atMost('agents', 'relay RSS', 1_536),
  atMost('agents', 'traffic duplicates delivered', 0),
  atMost('agents', 'traffic deliveries missing', 0),
  ...STORMS.flatMap((storm) => [
    atMost('agents', 'restart → all ACTIVE', 60, storm),
    atMost('agents', 'queued publishes lost', 0, storm),
    atMost('agents', 'duplicates delivered', 0, storm),
    atMost('agents', 'deliveries missing', 0, storm),
  ]),
  // the console's bars: what one open console adds to the relay's CPU, and a page updated at least once a second
  atMost('console', 'added by the console, agents view', 2),
  atMost('console', 'snapshot interval p99', 1_000),
  atMost('console', 'snapshot interval max', 1_000),
  {
    scenario: 'ingest-pg',
    group: 'PostgreSQL + Redis vs SQLite',
    figure: 'accepted',
    direction: 'at least',
    bound: 0.9,
    of: { what: 'baseline', name: 'SQLite' },
  },
  {
    scenario: 'ingest-pg',
    group: 'kind 9 vs kind 1, both on PostgreSQL',
    figure: 'accepted',
    direction: 'at least',
    bound: 0.8,
    of: { what: 'baseline', name: 'kind 1' },
  },
  atMost('mesh', 'takeover after kill -9 p99', 10),
  atMost('mesh', 'kill -9 trials without a takeover', 0),
  atMost('mesh', 'hand-over on SIGTERM p99', 1),
  atMost('mesh', 'SIGTERM trials without a hand-over', 0),
]

export const targetsOf = (scenario: string, f: Figure) =>
  TARGETS.filter((t) => t.scenario === scenario && t.figure === f.figure && (t.group === undefined || t.group === f.group))

/** The bound in the row's unit, or undefined when what it is relative to was not measured. */
function boundOf(t: Target, f: Figure, ceilingPerSec: number | undefined): number | undefined {
  if (!t.of) return t.bound
  const base = t.of.what === 'ceiling' ? ceilingPerSec : t.of.what === 'strfry' ? f.strfry : f.baseline
  return typeof base === 'number' ? t.bound * base : undefined
}

export function targetText(t: Target, ceilingPerSec: number | undefined, unit: string): string {
  const sign = t.direction === 'at least' ? '≥' : '≤'
  if (t.of?.what === 'baseline') return `${sign} ${t.bound}× ${t.of.name}`
  if (t.of?.what === 'strfry') return `${sign} ${t.bound}× strfry`
  if (t.of?.what === 'ceiling') return `${sign} ${t.bound * 100}% of ceiling ${ceilingPerSec ?? '?'}`
  return `${sign} ${t.bound.toLocaleString('en-US')}${unit === 'count' ? '' : ` ${unit}`}`
}

/** Whether the row's Apiary figure meets `t`; false when it or its reference is not a number. */
export function meets(t: Target, f: Figure, ceilingPerSec: number | undefined): boolean {
  const bound = boundOf(t, f, ceilingPerSec)
  if (typeof f.apiary !== 'number' || bound === undefined) return false
  return t.direction === 'at least' ? f.apiary >= bound : f.apiary <= bound
}
