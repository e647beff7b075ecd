import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MAX_FRAME_PAYLOAD_BYTES } from '../../../src/protocols/mesh/frames'
import {
  createMembershipView,
  type Delta,
  type Digest,
  type GossipMessage,
  MAX_ENDPOINT_CHARS,
  MAX_GOSSIP_MEMBERS,
  type MemberState,
  type MembershipView,
  parseGossip,
} from '../../../src/protocols/mesh/gossip'
import { prefixOf } from '../../../src/protocols/reasons'

/** Runtime id number n: 64 lowercase hex digits. */
const rt = (n: number) => n.toString(16).padStart(64, '0')

/** The state runtime n publishes at `version`; as in the mesh, a (runtime, version) pair names one state. */
const state = (n: number, version: number, over: Partial<MemberState> = {}): MemberState => ({
  runtime: rt(n),
  endpoint: `ws://10.0.${n >> 8}.${n & 255}:7447`,
  version,
  draining: false,
  load: (n * 7 + version) % 100,
  ...over,
})

const viewOf = (self: MemberState, ...known: MemberState[]) => {
  const v = createMembershipView(self)
  v.merge(known)
  return v
}

/** What a message looks like after the wire: JSON both ways, then our own parser, which must accept it. */
function wire<M extends GossipMessage>(msg: M): M {
  const parsed = parseGossip(JSON.parse(JSON.stringify(msg)))
  if (!parsed.ok) throw new Error(`our own gossip was refused: ${parsed.error}`)
  return parsed.value as M
}

/** One exchange, a initiating: digest, delta with wants, answer. */
function exchange(a: MembershipView, b: MembershipView) {
  const digest = wire(a.digest())
  const reply = wire(b.deltaFor(digest))
  a.merge(reply.states)
  const answer = wire(a.answer(reply.want))
  b.merge(answer.states)
  return { digest, reply, answer }
}

const runtimesOf = (states: readonly MemberState[]) => states.map((s) => s.runtime).sort()

describe('one gossip exchange between two nodes', () => {
  it('brings both views to the same members, each at its highest version, in three messages', () => {
    const a = viewOf(state(1, 0), state(3, 5))
    const b = viewOf(state(2, 0), state(3, 2), state(4, 3))
    const { reply, answer } = exchange(a, b)
    // b sends what a lacks (itself, 4) but not its older copy of 3, and wants a's self and a's newer 3
    expect(runtimesOf(reply.states)).toEqual([rt(2), rt(4)])
    expect([...reply.want].sort()).toEqual([rt(1), rt(3)])
    expect(runtimesOf(answer.states)).toEqual([rt(1), rt(3)])
    expect(answer.want).toEqual([])
    expect(a.members()).toEqual(b.members())
    expect(a.members().map((s) => [s.runtime, s.version])).toEqual([
      [rt(1), 0],
      [rt(2), 0],
      [rt(3), 5],
      [rt(4), 3],
    ])
  })

  it('sends two empty deltas once the views agree: only changed states travel', () => {
    const a = viewOf(state(1, 0), state(3, 5))
    const b = viewOf(state(2, 0))
    exchange(a, b)
    const again = exchange(a, b)
    expect([again.reply.states, again.reply.want, again.answer.states]).toEqual([[], [], []])
  })

  it('carries exactly the one state that changed since the last exchange', () => {
    const a = viewOf(state(1, 0), state(3, 5), state(4, 1))
    const b = viewOf(state(2, 0))
    exchange(a, b)
    a.bumpSelf({ load: 42 })
    const { reply, answer } = exchange(a, b)
    expect(reply.states).toEqual([])
    expect(reply.want).toEqual([rt(1)])
    expect(answer.states).toEqual([{ ...state(1, 0), version: 1, load: 42 }])
  })

  it('keeps a digest entry near 75 bytes of JSON, far below a full state', () => {
    const self = state(0, 100_000)
    const full = viewOf(self, ...Array.from({ length: MAX_GOSSIP_MEMBERS - 1 }, (_, i) => state(i + 1, 100_000 + i)))
    const digestBytes = JSON.stringify(full.digest()).length
    const statesBytes = JSON.stringify(full.members()).length
    expect(digestBytes / MAX_GOSSIP_MEMBERS).toBeLessThan(80)
    expect(digestBytes).toBeLessThan(80 * 1024)
    expect(statesBytes).toBeGreaterThan(2 * digestBytes)
  })

  it('fits the largest delta a full view can send into one mesh frame', () => {
    const huge = (n: number): MemberState =>
      state(n, Number.MAX_SAFE_INTEGER, { endpoint: `ws://${'h'.repeat(MAX_ENDPOINT_CHARS - 5)}`, load: Number.MAX_SAFE_INTEGER })
    const delta: Delta = {
      type: 'delta',
      from: rt(0),
      states: Array.from({ length: MAX_GOSSIP_MEMBERS }, (_, i) => huge(i)),
      want: Array.from({ length: MAX_GOSSIP_MEMBERS }, (_, i) => rt(i)),
    }
    expect(parseGossip(delta).ok).toBe(true)
    expect(new TextEncoder().encode(JSON.stringify(delta)).length).toBeLessThanOrEqual(MAX_FRAME_PAYLOAD_BYTES)
  })
})

describe('merging gossip into a view', () => {
  it.each([
    ['a lower version', 4],
    ['the same version', 5],
  ])('never lets %s replace the copy it holds', (_, version) => {
    const v = viewOf(state(1, 0), state(2, 5, { load: 11 }))
    expect(v.merge([state(2, version, { load: 99, draining: true })])).toEqual([])
    expect(v.get(rt(2))).toEqual(state(2, 5, { load: 11 }))
  })

  it('replaces a copy with a strictly higher version and reports the runtime once per merge', () => {
    const v = viewOf(state(1, 0), state(2, 5))
    expect(v.merge([state(2, 6), state(2, 7), state(2, 6), state(3, 0)])).toEqual([rt(2), rt(3)])
    expect(v.get(rt(2))?.version).toBe(7)
  })

  it('never overwrites our own entry, whatever version a peer claims for it', () => {
    const v = viewOf(state(1, 3, { load: 5 }))
    const before = v.self()
    expect(v.merge([state(1, 1_000, { draining: true, endpoint: 'ws://evil:1' })])).toEqual([])
    expect(v.self()).toEqual(before)
    const digest: Digest = { type: 'digest', from: rt(2), entries: [[rt(1), 1_000]] }
    expect(v.deltaFor(digest).want).toEqual([])
  })

  it('hands out entries frozen, so a caller cannot fork the view by mutating one', () => {
    const v = viewOf(state(1, 0), state(2, 0))
    expect(() => {
      ;(v.get(rt(2)) as { load: number }).load = 1
    }).toThrow(TypeError)
    expect(v.get(rt(2))?.load).toBe(state(2, 0).load)
  })

  it('keeps a removed node out until it shows a version newer than the one removed', () => {
    const v = viewOf(state(1, 0), state(2, 5))
    expect(v.remove(rt(2))).toBe(true)
    expect(v.remove(rt(2))).toBe(false)
    expect(v.remove(rt(1))).toBe(false)
    const stale: Digest = { type: 'digest', from: rt(3), entries: [[rt(2), 5]] }
    expect(v.deltaFor(stale).want).toEqual([])
    expect(v.merge([state(2, 5)])).toEqual([])
    expect(v.get(rt(2))).toBeUndefined()
    expect(v.merge([state(2, 6)])).toEqual([rt(2)])
    expect(v.get(rt(2))?.version).toBe(6)
  })
})

describe('bumping our own state', () => {
  it('increments the version by one and applies only the change given', () => {
    const v = viewOf(state(1, 7, { load: 3 }))
    expect(v.bumpSelf()).toEqual(state(1, 8, { load: 3 }))
    expect(v.bumpSelf({ draining: true })).toEqual(state(1, 9, { load: 3, draining: true }))
    expect(v.self().version).toBe(9)
    expect(v.digest().entries).toEqual([[rt(1), 9]])
  })

  it('spreads the change to a node that never talks to us, through a common peer', () => {
    const [a, b, c] = [viewOf(state(1, 0)), viewOf(state(2, 0)), viewOf(state(3, 0))]
    exchange(a, b)
    exchange(b, c)
    a.bumpSelf({ draining: true })
    expect(c.get(rt(1))?.draining).toBe(false)
    exchange(a, b)
    exchange(c, b)
    expect(c.get(rt(1))).toEqual(a.self())
    expect(c.get(rt(1))?.draining).toBe(true)
  })

  it('throws on an invalid own state: that is our bug, not a peer input', () => {
    expect(() => createMembershipView(state(1, 0, { runtime: 'A'.repeat(64) }))).toThrow(RangeError)
    const v = viewOf(state(1, 0))
    expect(() => v.bumpSelf({ endpoint: 'http://x' })).toThrow(RangeError)
    expect(v.self().version).toBe(0)
  })
})

describe('parsing gossip from a peer', () => {
  const digestOf = (entries: unknown[]) => ({ type: 'digest', from: rt(1), entries })
  const deltaOf = (over: Record<string, unknown> = {}) => ({ type: 'delta', from: rt(1), states: [state(2, 0)], want: [rt(3)], ...over })
  const entries = (n: number) => Array.from({ length: n }, (_, i) => [rt(i), i])

  it('accepts what our own view sends', () => {
    const v = viewOf(state(1, 0), state(2, 4))
    const digest = v.digest()
    expect(parseGossip(digest)).toEqual({ ok: true, value: digest })
    const delta = v.deltaFor({ type: 'digest', from: rt(9), entries: [[rt(5), 1]] })
    expect(parseGossip(delta)).toEqual({ ok: true, value: delta })
  })

  it.each<[string, unknown]>([
    ['an uppercase runtime in a digest entry', digestOf([['A'.repeat(64), 1]])],
    ['an uppercase sender', { ...digestOf([]), from: 'A'.repeat(64) }],
    ['a 63-digit runtime', digestOf([['a'.repeat(63), 1]])],
    ['a negative version', digestOf([[rt(2), -1]])],
    ['a fractional version', digestOf([[rt(2), 1.5]])],
    ['a version beyond the safe integers', digestOf([[rt(2), 2 ** 53]])],
    ['an entry with a third element', digestOf([[rt(2), 1, 'x']])],
    ['1025 digest entries', digestOf(entries(MAX_GOSSIP_MEMBERS + 1))],
    ['1025 states', deltaOf({ states: Array.from({ length: MAX_GOSSIP_MEMBERS + 1 }, (_, i) => state(i, 0)) })],
    ['1025 wants', deltaOf({ want: Array.from({ length: MAX_GOSSIP_MEMBERS + 1 }, (_, i) => rt(i)) })],
    ['an http endpoint', deltaOf({ states: [state(2, 0, { endpoint: 'http://10.0.0.2:7447' })] })],
    ['an endpoint without a host', deltaOf({ states: [state(2, 0, { endpoint: 'ws://' })] })],
    ['an endpoint one char over the limit', deltaOf({ states: [state(2, 0, { endpoint: `ws://${'h'.repeat(MAX_ENDPOINT_CHARS - 4)}` })] })],
    ['a negative load', deltaOf({ states: [state(2, 0, { load: -1 })] })],
    ['a non-boolean draining', deltaOf({ states: [{ ...state(2, 0), draining: 'no' }] })],
    ['an unknown field in a state', deltaOf({ states: [{ ...state(2, 0), weight: 1 }] })],
    ['an unknown field in the message', { ...digestOf([]), extra: true }],
    ['an unknown message type', { type: 'ping', from: rt(1) }],
    ['a delta without want', { type: 'delta', from: rt(1), states: [] }],
    ['null', null],
    ['an array', [digestOf([])]],
    ['a string', 'digest'],
  ])('refuses %s with "invalid:"', (_, input) => {
    const r = parseGossip(input)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(prefixOf(r.error)).toBe('invalid')
  })

  it.each<[string, unknown]>([
    ['1024 digest entries', digestOf(entries(MAX_GOSSIP_MEMBERS))],
    ['1024 states', deltaOf({ states: Array.from({ length: MAX_GOSSIP_MEMBERS }, (_, i) => state(i, 0)) })],
    ['1024 wants', deltaOf({ want: Array.from({ length: MAX_GOSSIP_MEMBERS }, (_, i) => rt(i)) })],
    ['an endpoint of exactly 512 chars', deltaOf({ states: [state(2, 0, { endpoint: `ws://${'h'.repeat(MAX_ENDPOINT_CHARS - 5)}` })] })],
    ['the largest safe version', digestOf([[rt(2), Number.MAX_SAFE_INTEGER]])],
    ['a wss endpoint with a path', deltaOf({ states: [state(2, 0, { endpoint: 'wss://relay.example/mesh' })] })],
  ])('accepts %s, at the limit', (_, input) => {
    expect(parseGossip(input).ok).toBe(true)
  })

  it('never throws on arbitrary JSON, and refuses anything but a well-formed message', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
        const r = parseGossip(value)
        expect(r.ok || prefixOf(r.error) === 'invalid').toBe(true)
      }),
    )
  })
})

describe('the member cap', () => {
  const filled = () => viewOf(state(0, 0), ...Array.from({ length: MAX_GOSSIP_MEMBERS - 1 }, (_, i) => state(i + 1, 0)))

  it('holds exactly MAX_GOSSIP_MEMBERS members, ourselves included, without dropping any', () => {
    const v = filled()
    expect(v.members()).toHaveLength(MAX_GOSSIP_MEMBERS)
    expect(v.droppedOverCap).toBe(0)
  })

  it('skips and counts a new runtime beyond the cap, yet still applies newer versions of members it holds', () => {
    const v = filled()
    expect(v.merge([state(MAX_GOSSIP_MEMBERS, 0), state(5, 1)])).toEqual([rt(5)])
    expect(v.members()).toHaveLength(MAX_GOSSIP_MEMBERS)
    expect(v.get(rt(MAX_GOSSIP_MEMBERS))).toBeUndefined()
    expect(v.droppedOverCap).toBe(1)
    expect(v.get(rt(5))?.version).toBe(1)
  })

  it('makes room again once the caller removes a member', () => {
    const v = filled()
    v.remove(rt(5))
    expect(v.merge([state(MAX_GOSSIP_MEMBERS, 0)])).toEqual([rt(MAX_GOSSIP_MEMBERS)])
    expect(v.droppedOverCap).toBe(0)
  })
})

type Topology = (i: number, n: number) => number[]
const fullMesh: Topology = (i, n) => Array.from({ length: n }, (_, j) => j).filter((j) => j !== i)
const ringOnly: Topology = (i, n) => [...new Set([(i + n - 1) % n, (i + 1) % n])].sort((x, y) => x - y)

/**
 * A round: every node starts one exchange with each of its peers, in node order then peer order.
 * 'sequential' runs the exchanges one after another, so a round can relay what an earlier exchange of the
 * same round brought; 'lockstep' computes every message from the views as they were when the round began,
 * as when all nodes' 2 s timers fire together, so news moves at most one exchange per round.
 */
function roundsToConverge(n: number, topology: Topology, schedule: 'sequential' | 'lockstep', maxRounds = 50): number {
  // ring start: each node knows itself and its successor
  const views = Array.from({ length: n }, (_, i) => viewOf(state(i, 0), state((i + 1) % n, 0)))
  const pairs = views.flatMap((_, a) => topology(a, n).map((b) => [a, b] as const))
  for (let round = 1; round <= maxRounds; round++) {
    if (schedule === 'sequential') for (const [a, b] of pairs) exchange(views[a]!, views[b]!)
    else {
      const replies = pairs.map(([a, b]) => views[b]!.deltaFor(views[a]!.digest()))
      const answers = pairs.map(([a], k) => views[a]!.answer(replies[k]!.want))
      pairs.forEach(([a, b], k) => {
        views[a]!.merge(replies[k]!.states)
        views[b]!.merge(answers[k]!.states)
      })
    }
    const first = JSON.stringify(views[0]!.members())
    if (views[0]!.members().length === n && views.every((v) => JSON.stringify(v.members()) === first)) return round
  }
  throw new Error(`no convergence within ${maxRounds} rounds`)
}

describe('convergence of a mesh started as a ring of acquaintances', () => {
  // Full mesh: every pair exchanges directly each round, and the union of the ring start views is every
  // node, so one round suffices even when all messages of the round are built from the starting views.
  it.each([3, 10])('converges a full mesh of %i nodes in 1 round, sequential or lock-step', (n) => {
    expect(roundsToConverge(n, fullMesh, 'sequential')).toBe(1)
    expect(roundsToConverge(n, fullMesh, 'lockstep')).toBe(1)
  })

  // Ring links only, lock-step: after r rounds node i holds the starting views of nodes i−r … i+r, i.e.
  // members i−r … i+r+1, which is all n once 2r + 2 ≥ n: ceil((n − 2) / 2) rounds, 1 for 3 nodes, 4 for 10.
  // Sequentially, exchanges in node order carry news forward within the round: 1 and 2 rounds.
  it.each([
    [3, 1, 1],
    [10, 4, 2],
  ])('spreads transitively over ring links only: %i nodes in %i lock-step rounds, %i sequential', (n, lockstep, sequential) => {
    expect(roundsToConverge(n, ringOnly, 'lockstep')).toBe(lockstep)
    expect(roundsToConverge(n, ringOnly, 'sequential')).toBe(sequential)
  })
})

describe('merge as a join', () => {
  // a small pool of runtimes and versions so that the same runtime recurs at several versions
  const arbStates = fc.array(
    fc.tuple(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 0, max: 20 })).map(([n, v]) => state(n, v)),
    { maxLength: 40 },
  )

  it('depends only on the set of states merged, not on their order, batching or repetition', () => {
    fc.assert(
      fc.property(
        arbStates.chain((states) =>
          fc.tuple(fc.constant(states), fc.shuffledSubarray(states, { minLength: states.length }), fc.integer({ min: 1, max: 5 })),
        ),
        ([states, shuffled, batch]) => {
          const inOrder = viewOf(state(0, 0))
          inOrder.merge(states)
          const reordered = viewOf(state(0, 0))
          for (let i = 0; i < shuffled.length; i += batch) reordered.merge(shuffled.slice(i, i + batch))
          // idempotent: merging everything again changes nothing
          expect(reordered.merge(states)).toEqual([])
          expect(reordered.members()).toEqual(inOrder.members())
          // and both equal the dumb reference: per runtime, the highest version seen
          const best = new Map<string, MemberState>()
          for (const s of [state(0, 0), ...states]) if ((best.get(s.runtime)?.version ?? -1) < s.version) best.set(s.runtime, s)
          expect(inOrder.members()).toEqual([...best.values()].sort((a, b) => a.runtime.localeCompare(b.runtime)))
        },
      ),
    )
  })
})
