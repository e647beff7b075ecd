// Where a relay's CPU goes, per unit of work: its threads by role (read from /proc, so for any relay: Apiary
// names its workers, strfry names its thread pools), and Apiary's event loop split by a CPU profile's samples
// into the parts of the write path. The roles are coarse on purpose, so the two relays' rows line up.
import { readFileSync } from 'node:fs'
import type { RelayName } from './relay-types'

export type Role = 'connection thread' | 'verify' | 'store' | 'fan-out threads' | 'read threads' | 'other threads'
export const ROLES: readonly Role[] = ['connection thread', 'verify', 'store', 'fan-out threads', 'read threads', 'other threads']

/**
 * Apiary: the event loop is the connection thread (parse, admission, fan-out and socket I/O all run there).
 * strfry: its Websocket thread reads and writes frames; its Ingesters parse and verify; Writer and Validator
 * store; ReqMonitors match live events; ReqWorkers serve queries.
 */
function roleOf(relay: RelayName, name: string, isMain: boolean): Role {
  if (relay === 'strfry') {
    if (/^Websocket/.test(name)) return 'connection thread'
    if (/^Ingester/.test(name)) return 'verify'
    if (/^(Writer|Validator)/.test(name)) return 'store'
    if (/^ReqMonitor/.test(name)) return 'fan-out threads'
    if (/^ReqWorker/.test(name)) return 'read threads'
    return 'other threads'
  }
  if (isMain) return 'connection thread'
  if (name === 'apiary-verify') return 'verify'
  if (name === 'apiary-writer' || name === 'apiary-ckpt') return 'store'
  if (name === 'apiary-reader') return 'read threads'
  // V8's platform threads (GC, compiler), libuv's pool, the loader thread
  return 'other threads'
}

/** µs per unit of work by role, from the CPU seconds each thread (by tid) used over a window. */
export function cpuByRole(
  relay: RelayName,
  pid: number,
  secondsByThread: ReadonlyMap<number, { name: string; seconds: number }>,
  units: number,
): Record<Role, number> {
  const out = Object.fromEntries(ROLES.map((r) => [r, 0])) as Record<Role, number>
  for (const [tid, t] of secondsByThread) out[roleOf(relay, t.name, tid === pid)] += t.seconds
  for (const r of ROLES) out[r] = units > 0 ? Math.round((out[r] * 1e6) / units) : Number.NaN
  return out
}

export type MainPart =
  | 'parse'
  | 'admission'
  | 'hand-off to threads'
  | 'store (event loop side)'
  | 'fan-out'
  | 'socket I/O'
  | 'GC'
  | 'actors and the rest'
export const MAIN_PARTS: readonly MainPart[] = [
  'parse',
  'admission',
  'hand-off to threads',
  'store (event loop side)',
  'fan-out',
  'socket I/O',
  'GC',
  'actors and the rest',
]

// by the script a sample's function lives in (paths in the built package and in node's internals), first match
const PART_OF: readonly [RegExp, MainPart][] = [
  [/protocols\/nip01\/|^RegExp: \^\[0-9a-f\]/, 'parse'],
  [/relay\/admission|infra\/gates\/|actors\/principal\/|rate-limit|ban-lookup|recent-ids|ip-address/, 'admission'],
  // the verifier pool and the SQLite writer: building their messages and posting them to their threads
  [/^postMessage$|internal\/worker|messageport|infra\/verify\/|sqlite-writer|group-commit/, 'hand-off to threads'],
  [/infra\/store\//, 'store (event loop side)'],
  [/subscription-index|live-feed|community-fanout|fan-?out/, 'fan-out'],
  [
    /ws\/lib\/|infra\/ws\/|node:net|stream_base_commons|internal\/streams|node:buffer|^writev$|^writeUtf8String$|^writeBuffer$/,
    'socket I/O',
  ],
  [/^\(garbage collector\)$/, 'GC'],
]

const NOT_THE_RELAYS = new Set(['(idle)', '(program)', '(root)', 'dispatch'])

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string }
}

/**
 * The event loop's busy samples of a V8 CPU profile (`.cpuprofile`), as shares (0..1) by part of the write path.
 * Each sample goes to the part of the function it was taken in (self time). V8 samples the thread's wall time:
 * a thread preempted inside a call (a postMessage that wakes a worker on a busy core) is charged for the wait.
 */
export function mainThreadShares(profileFile: string): Record<MainPart, number> {
  const profile = JSON.parse(readFileSync(profileFile, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }
  const partOfNode = new Map<number, MainPart | undefined>()
  for (const n of profile.nodes) {
    const { functionName, url } = n.callFrame
    // idle time, and the profiler's own work (its inspector session's native dispatch), are not the relay's
    if (NOT_THE_RELAYS.has(functionName) && url === '') partOfNode.set(n.id, undefined)
    else partOfNode.set(n.id, PART_OF.find(([re]) => re.test(url) || re.test(functionName))?.[1] ?? 'actors and the rest')
  }
  const us = Object.fromEntries(MAIN_PARTS.map((p) => [p, 0])) as Record<MainPart, number>
  let busy = 0
  profile.samples.forEach((id, i) => {
    const part = partOfNode.get(id)
    if (!part) return
    const d = profile.timeDeltas[i] ?? 0
    us[part] += d
    busy += d
  })
  for (const p of MAIN_PARTS) us[p] = busy > 0 ? Math.round((us[p] / busy) * 1000) / 1000 : Number.NaN
  return us
}
