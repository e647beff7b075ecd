// The messages between the agents scenario and its load processes (bench/lib/agents/shards.ts ↔
// bench/processes/agent-shard.ts), one request type per step of a phase, and what each answers.
import type { LoopDelay } from '../loop-delay'

export type ShardRequest =
  /** localAddress: the local IP this shard's agents connect from (the system's choice when absent) */
  | { type: 'Create'; url: string; first: number; count: number; localAddress?: string }
  | { type: 'StartInWaves'; waveSize: number; spacingMs: number }
  | { type: 'Probe'; url: string; count: number; intervalMs: number; localAddress?: string }
  | { type: 'MeasureStart' }
  | { type: 'MeasureStop' }
  | { type: 'Subscribe'; count: number; filter: Record<string, unknown> }
  | { type: 'Publish'; publishers: number; content: string }
  | { type: 'PublishOutage'; count: number; content: string }
  | { type: 'Status' }
  | { type: 'ActiveSince'; sinceEpochMs: number }
  | { type: 'RecordCauses'; on: boolean }
  | { type: 'Ledger' }
  | { type: 'Deliveries' }
  | { type: 'StopAll' }

/** per agent, in ms: start() → ACTIVE; DISCOVERED → ACTIVE; DISCOVERED → AUTHENTICATED; AUTHENTICATED → ACTIVE */
export interface HandshakeSamples {
  startToActive: number[]
  socketToActive: number[]
  auth: number[]
  register: number[]
}

/** this process over one measured span: event-loop delay and CPU (all threads) in cores */
export interface ShardLoad {
  loopDelay: LoopDelay
  cores: number
}

export interface ShardReplies {
  Create: null
  /** all of this shard's agents, and those of the second half of its waves */
  StartInWaves: { all: HandshakeSamples; secondHalf: HandshakeSamples }
  Probe: { samples: HandshakeSamples; load: ShardLoad }
  MeasureStart: null
  MeasureStop: ShardLoad
  Subscribe: null
  Publish: null
  /** how many of the outage publishes did not resolve queued: true */
  PublishOutage: number
  Status: { agents: number; active: number; closed: number; reconnects: number; queued: number; lastActiveEpochMs: number }
  /** per agent ACTIVE (again) after `sinceEpochMs`: how long after it */
  ActiveSince: number[]
  RecordCauses: Record<string, number>
  Ledger: { acked: string[]; queued: string[]; createdAt: [string, number][]; refused: Record<string, number> }
  Deliveries: { subscriber: number; lastActiveEpochMs: number; seen: [string, number][] }[]
  StopAll: null
}

export type ShardMessage = { id: number; req: ShardRequest }
export type ShardAnswer = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string }
