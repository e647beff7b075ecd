/**
 * Membership gossip of the mesh, digest/delta anti-entropy as in Scuttlebutt (van Renesse et al., "Efficient
 * Reconciliation and Flow Control for Anti-Entropy Protocols") and Cassandra's SYN / ACK / ACK2. Pure: the
 * caller owns the 2 s timer, the control stream, the registry and the clock.
 *
 * Each node holds a view: one MemberState per runtime it knows. A node writes only its own entry and bumps
 * its version on every change and every heartbeat; every other entry is a copy, replaced only by a strictly
 * higher version of the same runtime. As only the owner writes, a (runtime, version) pair names exactly one
 * state, so merging is a per-runtime max of version: commutative, associative and idempotent. Views converge
 * whatever order gossip arrives in, and a repeated or reordered message is harmless.
 *
 * One exchange, A the initiator, B the peer:
 *   1. A → B  digest  [runtime, version] for every member A knows
 *   2. B → A  delta   the states B holds newer than A's digest (or A lacks them), and `want`: the runtimes whose
 *                     version in A's digest is newer than B's copy (or B lacks them)
 *   3. A → B  delta   the states B wanted; want = []
 * Why a digest first: a digest entry is ~75 bytes of JSON (64 hex digits and a version), a full state ~150.
 * Sending whole views every 2 s to every peer would be N states per peer; with digests a state travels only
 * to a peer that lacks that version, and a settled mesh sends two empty deltas per exchange.
 *
 * Input comes from peers, so parseGossip bounds every list at MAX_GOSSIP_MEMBERS and the view caps itself at
 * the same number: a merge that would add a runtime beyond it skips that runtime and counts it in
 * `droppedOverCap` (a metric for the caller), while newer versions of runtimes already held still apply.
 */
import { z } from 'zod'
import { HEX64_PATTERN } from '../ids.js'
import { reason } from '../reasons.js'
import { err, ok, type Result } from '../result.js'

/**
 * Members a view holds, and entries/states/wants a message may carry. A mesh of one relay is a handful of
 * nodes; 1024 is far above any deployment we plan, keeps a digest under 80 KB, and keeps even a worst-case
 * delta (1024 states with 512-char endpoints plus 1024 wants, ~770 KB) inside one 1 MiB mesh frame.
 */
export const MAX_GOSSIP_MEMBERS = 1024
/** Same bound as a readiness record's endpoint. */
export const MAX_ENDPOINT_CHARS = 512

const runtimeSchema = z.string().regex(HEX64_PATTERN)
const versionSchema = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)

const memberStateSchema = z.strictObject({
  runtime: runtimeSchema,
  endpoint: z
    .string()
    .max(MAX_ENDPOINT_CHARS)
    .regex(/^wss?:\/\/[^\s/]+(\/\S*)?$/),
  version: versionSchema,
  draining: z.boolean(),
  /** open client connections: a routing hint, never a decision */
  load: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
})

const digestSchema = z.strictObject({
  type: z.literal('digest'),
  from: runtimeSchema,
  entries: z.array(z.tuple([runtimeSchema, versionSchema])).max(MAX_GOSSIP_MEMBERS),
})

const deltaSchema = z.strictObject({
  type: z.literal('delta'),
  from: runtimeSchema,
  states: z.array(memberStateSchema).max(MAX_GOSSIP_MEMBERS),
  want: z.array(runtimeSchema).max(MAX_GOSSIP_MEMBERS),
})

const gossipSchema = z.discriminatedUnion('type', [digestSchema, deltaSchema])

export type MemberState = z.infer<typeof memberStateSchema>
export type Digest = z.infer<typeof digestSchema>
export type Delta = z.infer<typeof deltaSchema>
export type GossipMessage = Digest | Delta
/** What the owner may change about itself; the version is always the view's to bump. */
export type MemberChange = Partial<Pick<MemberState, 'endpoint' | 'draining' | 'load'>>

/** A gossip message from a peer (already JSON-decoded), accepted only if every field is in bounds. */
export function parseGossip(json: unknown): Result<GossipMessage> {
  const parsed = gossipSchema.safeParse(json)
  if (parsed.success) return ok(parsed.data)
  const where = parsed.error.issues[0]?.path.join('.') || 'message'
  return err(reason('invalid', `malformed gossip at ${where}`))
}

export interface MembershipView {
  /** our own entry */
  self(): MemberState
  /** changes our own entry and bumps its version by one; also the heartbeat, with no change */
  bumpSelf(change?: MemberChange): MemberState
  /** step 1: every member we know, by runtime */
  digest(): Digest
  /** step 2: what the digest's sender lacks, and what we want from it */
  deltaFor(digest: Digest): Delta
  /** step 3: the states a peer asked for that we hold; unknown runtimes are skipped */
  answer(want: readonly string[]): Delta
  /** applies every state newer than ours; returns the runtimes whose entry changed, each once */
  merge(states: readonly MemberState[]): string[]
  /** every member including us, sorted by runtime */
  members(): MemberState[]
  get(runtime: string): MemberState | undefined
  /**
   * Forgets a runtime the caller knows is gone (its lease expired). Copies at or below the version we held are
   * refused afterwards, so peers that have not yet removed it cannot gossip it back; a node that was only
   * partitioned returns with its next heartbeat, which is a higher version. Returns false for us or an unknown runtime.
   */
  remove(runtime: string): boolean
  /** new runtimes skipped since creation because the view was full */
  readonly droppedOverCap: number
}

export function createMembershipView(initial: MemberState): MembershipView {
  const me = initial.runtime
  const view = new Map<string, MemberState>([[me, ownState(initial)]])
  // runtime → version held when removed; bounded like the view, oldest forgotten first
  const removedAt = new Map<string, number>()
  let droppedOverCap = 0

  const knownVersion = (runtime: string) => view.get(runtime)?.version ?? removedAt.get(runtime) ?? -1
  const members = () => [...view.values()].sort(byRuntime)

  return {
    self: () => view.get(me)!,
    bumpSelf(change = {}) {
      const current = view.get(me)!
      const next = ownState({
        runtime: me,
        endpoint: change.endpoint ?? current.endpoint,
        version: current.version + 1,
        draining: change.draining ?? current.draining,
        load: change.load ?? current.load,
      })
      view.set(me, next)
      return next
    },
    digest: () => ({ type: 'digest', from: me, entries: members().map((s) => [s.runtime, s.version]) }),
    deltaFor(digest) {
      const theirs = new Map<string, number>()
      for (const [runtime, version] of digest.entries) theirs.set(runtime, Math.max(version, theirs.get(runtime) ?? -1))
      const states = members().filter((s) => s.version > (theirs.get(s.runtime) ?? -1))
      // never ask for our own runtime: a higher copy of it can only be a bug or a forgery
      const want = [...theirs].filter(([runtime, version]) => runtime !== me && version > knownVersion(runtime)).map(([runtime]) => runtime)
      return { type: 'delta', from: me, states, want }
    },
    answer(want) {
      const states = [...new Set(want)].flatMap((runtime) => view.get(runtime) ?? [])
      return { type: 'delta', from: me, states, want: [] }
    },
    merge(states) {
      const changed = new Set<string>()
      for (const s of states) {
        // our entry has one writer, us; ignoring a forged higher copy keeps it ours (runtime ids are fresh per process)
        if (s.runtime === me || s.version <= knownVersion(s.runtime)) continue
        if (!view.has(s.runtime) && view.size >= MAX_GOSSIP_MEMBERS) {
          droppedOverCap++
          continue
        }
        view.set(s.runtime, frozenCopy(s))
        removedAt.delete(s.runtime)
        changed.add(s.runtime)
      }
      return [...changed]
    },
    members,
    get: (runtime) => view.get(runtime),
    remove(runtime) {
      const held = view.get(runtime)
      if (runtime === me || held === undefined) return false
      view.delete(runtime)
      removedAt.delete(runtime)
      removedAt.set(runtime, held.version)
      if (removedAt.size > MAX_GOSSIP_MEMBERS) removedAt.delete(removedAt.keys().next().value!)
      return true
    },
    get droppedOverCap() {
      return droppedOverCap
    },
  }
}

/** Our own state comes from config and our runtime key, so an invalid one is our bug: throw, as checkOptions does. */
function ownState(s: MemberState): MemberState {
  const checked = memberStateSchema.safeParse(s)
  if (!checked.success) throw new RangeError(`invalid own member state: ${checked.error.issues[0]?.message}`)
  return frozenCopy(checked.data)
}

/** Entries are shared with callers by reference; frozen, a caller that mutates one fails loudly instead of forking the view. */
function frozenCopy(s: MemberState): MemberState {
  return Object.freeze({ runtime: s.runtime, endpoint: s.endpoint, version: s.version, draining: s.draining, load: s.load })
}

const byRuntime = (a: MemberState, b: MemberState) => (a.runtime < b.runtime ? -1 : a.runtime > b.runtime ? 1 : 0)
