import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { makeKeys, type SignedEvent } from '../support/events'
import { signEventFast } from '../support/fast-sign'
import type { TestRelay } from '../support/relay'
import { client, nowSeconds, publish } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'
import type { Frame, TestClient } from '../support/ws-client'

/**
 * NIP-01's promise to a subscriber, under concurrent writes: the stored page up to EOSE, then the live feed,
 * with no event falling between the two and none delivered twice. One publisher streams EVENTS events
 * pipelined while SUBSCRIBERS connections each send a REQ at a different point of the stream (after a further
 * tenth of the OKs); every event the relay acknowledged must reach every subscriber (page ∪ live), each with
 * exactly one EOSE, and none of them twice.
 *
 * The "twice" tests guard a race, on one node and across nodes: an event committed but not yet fanned out
 * when a REQ's query ran is in that REQ's page and may then arrive live as well (embedded: its Saved waits in
 * the community's mailbox behind the Subscribe; cluster: it reaches node B over Redis after B's page).
 * test/faults/slow-read.test.ts reproduces the one-node case on cue.
 */

const EVENTS = 300
const SUBSCRIBERS = 10
/** events sent and not yet acknowledged at most: keeps the stream going while the REQs arrive */
const WINDOW = 20
/** generous: 300 events to store and fan out to 10 readers on a loaded machine */
const DUE_MS = 30_000
const SUB = 'gap'

const idOf = (f: Frame) => (f[2] as NostrEvent).id
const sorted = (ids: string[]) => [...ids].sort()
const okIds = (c: TestClient) => c.frames.filter((f) => f[0] === 'OK' && f[2] === true).map((f) => f[1] as string)

interface Reader {
  c: TestClient
  /** events the publisher had been told were stored when this reader sent its REQ: its page must have them */
  storedBeforeReq: string[]
}

/** Sends event i once event i - WINDOW is acknowledged: pipelined, never more than WINDOW ahead. */
async function stream(pub: TestClient, events: SignedEvent[], oks: Promise<Frame>[]): Promise<void> {
  for (let i = 0; i < events.length; i++) {
    if (i >= WINDOW) await oks[i - WINDOW]
    pub.sendRaw(`["EVENT",${events[i]!.raw}]`)
  }
}

/** Each reader sends its REQ after a further EVENTS / SUBSCRIBERS OKs: staggered across the stream. */
async function subscribeDuring(pub: TestClient, readers: TestClient[], oks: Promise<Frame>[], since: number): Promise<Reader[]> {
  const out: Reader[] = []
  for (const [i, c] of readers.entries()) {
    await oks[Math.floor((i * EVENTS) / SUBSCRIBERS)]
    out.push({ c, storedBeforeReq: okIds(pub) })
    // room for every event of the stream: a page is never cut short by its limit
    c.send(['REQ', SUB, { kinds: [1], since, limit: EVENTS }])
  }
  return out
}

/** What one reader received under SUB: its page (up to EOSE) and its live feed (after), as event ids. */
interface Received {
  eoses: number
  /** verbs other than EVENT and EOSE (a CLOSED would end the subscription) */
  others: string[]
  page: string[]
  live: string[]
  storedBeforeReq: string[]
}

interface Run {
  /** every event the relay acknowledged (OK true): the stream, then the fence */
  acked: string[]
  /** the event published once every reader had the whole stream */
  fence: string
  readers: Received[]
}

/**
 * Streams the events through `writeNode` with the readers on `readNode` (the same node, or another node of
 * one cluster), and waits until every reader has every acknowledged event, then the fence.
 */
async function streamWhileSubscribing(writeNode: TestRelay, readNode: TestRelay, host?: string): Promise<Run> {
  const keys = makeKeys()
  const since = nowSeconds()
  const events = Array.from({ length: EVENTS }, (_, i) => signEventFast(keys, { content: `gap ${i}` }))
  const pub = await client(writeNode, host)
  const readers = await Promise.all(Array.from({ length: SUBSCRIBERS }, () => client(readNode, host)))
  const oks = events.map((e) => pub.next((f) => f[0] === 'OK' && f[1] === e.event.id, DUE_MS))
  const [, subscribed] = await Promise.all([stream(pub, events, oks), subscribeDuring(pub, readers, oks, since)])
  expect((await Promise.all(oks)).map((f) => f[2])).toEqual(Array<boolean>(EVENTS).fill(true))
  const streamed = events.map((e) => e.event.id)
  // an event that never comes is reported below, by reader and id, rather than as this wait's timeout
  await Promise.allSettled(
    subscribed.flatMap(({ c }) => streamed.map((id) => c.next((f) => f[0] === 'EVENT' && f[1] === SUB && idOf(f) === id, DUE_MS))),
  )
  // Stored once every page was served, so it can only come live, and after whatever the relay queued for
  // these readers before it (one node fans out in commit order; node B takes node A's events in order)
  const fence = signEventFast(keys, { content: 'gap fence' })
  expect((await publish(pub, fence)).accepted).toBe(true)

  const received: Received[] = []
  for (const { c, storedBeforeReq } of subscribed) {
    await c.next((f) => f[0] === 'EVENT' && f[1] === SUB && idOf(f) === fence.event.id, DUE_MS)
    const frames = c.frames.filter((f) => f[1] === SUB)
    const eose = frames.findIndex((f) => f[0] === 'EOSE')
    received.push({
      eoses: frames.filter((f) => f[0] === 'EOSE').length,
      others: frames.filter((f) => f[0] !== 'EVENT' && f[0] !== 'EOSE').map((f) => f[0]),
      page: frames.slice(0, eose).map(idOf),
      live: frames.slice(eose + 1).map(idOf),
      storedBeforeReq,
    })
  }
  return { acked: [...streamed, fence.event.id], fence: fence.event.id, readers: received }
}

/** Every acknowledged event reached every reader, in its page or live after its one EOSE. */
function expectNoGap({ acked, fence, readers }: Run): void {
  let liveOnly = 0
  for (const [i, r] of readers.entries()) {
    expect(r.eoses, `reader ${i}: EOSE`).toBe(1)
    expect(r.others, `reader ${i}: only EVENT and EOSE`).toEqual([])
    expect(sorted([...new Set([...r.page, ...r.live])]), `reader ${i}: page ∪ live`).toEqual(sorted(acked))
    expect(r.page, `reader ${i}: page has what was stored before its REQ`).toEqual(expect.arrayContaining(r.storedBeforeReq))
    expect(r.live.at(-1), `reader ${i}: the fence came live, last`).toBe(fence)
    const paged = new Set(r.page)
    liveOnly += r.live.filter((id) => id !== fence && !paged.has(id)).length
  }
  // the REQs landed while the stream was still going: some of it reached readers live only
  expect(liveOnly, 'streamed events that reached a reader live, not in its page').toBeGreaterThan(0)
}

/** Events a reader received more than once, each with where it came ("page+live": in the page, then live again). */
function duplicatesOf(r: Received): string[] {
  const seen = new Map<string, string[]>()
  for (const [where, ids] of [
    ['page', r.page],
    ['live', r.live],
  ] as const)
    for (const id of ids) seen.set(id, [...(seen.get(id) ?? []), where])
  return [...seen].filter(([, w]) => w.length > 1).map(([id, w]) => `${id.slice(0, 8)} ${w.join('+')}`)
}

function expectNoDuplicate({ readers }: Run): void {
  for (const [i, r] of readers.entries()) expect(duplicatesOf(r), `reader ${i}: events received twice`).toEqual([])
}

describe('a subscription opened while events are being written (no gap between page and live feed)', () => {
  const relays = useRelays()

  it('gives each of 10 readers, subscribing at staggered points of a 300-event stream, every acknowledged event (page or live) and one EOSE', async () => {
    const r = await relays.start()
    expectNoGap(await streamWhileSubscribing(r, r))
  }, 60_000)

  it('delivers none of those events twice to a reader (in its page and again live)', async () => {
    const r = await relays.start()
    const run = await streamWhileSubscribing(r, r)
    expectNoGap(run)
    expectNoDuplicate(run)
  }, 60_000)
})

describe('a subscription on one node opened while events are written on another (cluster)', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)
  const twoNodes = async () => {
    const { host, nodes } = await cluster.nodes(2)
    return { host, a: nodes[0]!, b: nodes[1]! }
  }

  it('gives each of 10 readers on node B every event acknowledged on node A (page or live) and one EOSE', async () => {
    const { host, a, b } = await twoNodes()
    expectNoGap(await streamWhileSubscribing(a, b, host))
  }, 60_000)

  it('delivers none of those events twice to a reader on node B (in its page and again live)', async () => {
    const { host, a, b } = await twoNodes()
    const run = await streamWhileSubscribing(a, b, host)
    expectNoGap(run)
    expectNoDuplicate(run)
  }, 60_000)
})
