import { bytesToHex } from '@noble/hashes/utils.js'
import { afterEach, describe, expect, it } from 'vitest'
import { type BacklogDeps, MAX_BACKLOG_PAGES, pageBacklog, type QueryLimits, tallyEvent, toTally } from '../../../src/client/agent/backlog'
import { toProbe } from '../../../src/client/agent/relay-info'
import type { WireFilter } from '../../../src/client/agent/subscriptions'
import { AgentClient } from '../../../src/client/index'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { prefixOf } from '../../../src/protocols/reasons'
import { makeKeys, type TestKeys } from '../../support/events'
import { eventually } from '../../support/eventually'
import { fresh, nowSeconds, publish } from '../../support/relay-client'
import { useRelays } from '../../support/relay-fixtures'
import { connect } from '../../support/ws-client'

const agents: AgentClient[] = []
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.stop()))
})

// small limits keep the test fast: 250 events are 1 page of 20, then pages of 50
const SMALL_LIMITS = { limits: { defaultLimit: 20, maxLimit: 50 } }

/** `count` kind-1 notes by `keys`, seven per second from `fromSeconds` on: ties straddle every page boundary */
async function store(url: string, keys: TestKeys, count: number, fromSeconds: number): Promise<string[]> {
  const c = await connect(url)
  const ids: string[] = []
  for (let i = 0; i < count; i++) {
    const e = fresh(keys, { kind: 1, created_at: fromSeconds + Math.floor(i / 7) })
    const ok = await publish(c, e)
    if (!ok.accepted) throw new Error(`not stored: ${ok.message}`)
    ids.push(e.event.id)
  }
  c.close()
  return ids
}

function newAgent(url: string) {
  const agent = new AgentClient({
    relays: [url],
    secretKey: bytesToHex(makeKeys().secretKey),
    capabilities: [],
    reconnect: { minMs: 100, maxMs: 400 },
  })
  agents.push(agent)
  return agent
}

describe('a subscription whose backlog is larger than the relay’s default limit', { timeout: 30_000 }, () => {
  const relays = useRelays()

  it('delivers all 250 events stored while the agent was disconnected, each once, after the reconnect', async () => {
    const { relay: r, proxy } = await relays.startBehindProxy(SMALL_LIMITS)
    const author = makeKeys()
    const agent = newAgent(`ws://127.0.0.1:${proxy.port}`)
    await agent.start()
    const delivered: NostrEvent[] = []
    agent.subscribe([{ kinds: [1], authors: [author.pubkey] }], (e) => delivered.push(e))
    const [first] = await store(r.url, author, 1, nowSeconds())
    await eventually(() => delivered.length === 1, 'the live event', { timeoutMs: 5000 })

    proxy.cut()
    await eventually(() => agent.state !== 'ACTIVE', 'the agent to notice the cut', { timeoutMs: 5000 })
    // within the resume's 60 s overlap: every one of them is asked for by the resumed REQ
    const gap = await store(r.url, author, 250, nowSeconds() - 40)
    proxy.restore()
    await eventually(() => agent.state === 'ACTIVE', 'ACTIVE again', { timeoutMs: 10_000 })
    await eventually(() => delivered.length >= 251, 'all 251 events', { timeoutMs: 10_000 })
    // time for a duplicate to show up
    await new Promise((res) => setTimeout(res, 300))
    expect(delivered.map((e) => e.id).sort()).toEqual([first!, ...gap].sort())
  })

  it('delivers everything since the application’s own `since` when its filter has no limit', async () => {
    const r = await relays.start(SMALL_LIMITS)
    const author = makeKeys()
    const stored = await store(r.url, author, 120, nowSeconds() - 30)
    const agent = newAgent(r.url)
    await agent.start()
    const delivered: string[] = []
    agent.subscribe([{ kinds: [1], authors: [author.pubkey], since: nowSeconds() - 60 }], (e) => delivered.push(e.id))
    await eventually(() => delivered.length >= 120, 'all 120 events', { timeoutMs: 10_000 })
    await new Promise((res) => setTimeout(res, 300))
    expect(delivered.sort()).toEqual([...stored].sort())
  })

  it('keeps to the application’s `limit` on the first REQ: it asked for the newest N only', async () => {
    const r = await relays.start(SMALL_LIMITS)
    const author = makeKeys()
    await store(r.url, author, 30, nowSeconds() - 30)
    const agent = newAgent(r.url)
    await agent.start()
    const delivered: string[] = []
    agent.subscribe([{ kinds: [1], authors: [author.pubkey], since: nowSeconds() - 60, limit: 10 }], (e) => delivered.push(e.id))
    await new Promise((res) => setTimeout(res, 800))
    expect(delivered).toHaveLength(10)
  })
})

// --- the pager alone, against a dumb in-memory relay --------------------------------------------------------

/** stored events newest first, `limit` at most (NIP-01: since and until inclusive), as a relay answers */
function dumbRelay(events: NostrEvent[], queries: WireFilter[]): BacklogDeps['query'] {
  return async ([f]) => {
    queries.push(f!)
    return events
      .filter((e) => e.created_at >= (f!.since ?? 0) && e.created_at <= ((f!.until as number | undefined) ?? Infinity))
      .sort((a, b) => b.created_at - a.created_at)
      .slice(0, f!.limit)
  }
}

const eventsAt = (seconds: number[]): NostrEvent[] => {
  const keys = makeKeys()
  return seconds.map((s) => fresh(keys, { kind: 1, created_at: s }).event)
}

/** what the resumed REQ's stored part (its newest `first`) tallies to */
function firstPageOf(events: NostrEvent[], filter: WireFilter, first: number) {
  const tally = toTally(filter)
  const page = [...events].sort((a, b) => b.created_at - a.created_at).slice(0, first)
  for (const e of page) tallyEvent([tally], e)
  return { tally, page }
}

async function runPager(events: NostrEvent[], limits: QueryLimits, first: number, pagesLeft = MAX_BACKLOG_PAGES) {
  const filter = { kinds: [1], since: 1000 }
  const { tally, page } = firstPageOf(events, filter, first)
  const got = new Set(page.map((e) => e.id))
  const queries: WireFilter[] = []
  const outcome = await pageBacklog(
    tally,
    limits,
    { pagesLeft },
    { query: dumbRelay(events, queries), deliver: (e) => got.add(e.id), isCurrent: () => true },
  )
  return { outcome, got, queries }
}

describe('paging a backlog', () => {
  it('fetches older pages until one is not full, with until = the oldest so far and limit = max_limit', async () => {
    const events = eventsAt(Array.from({ length: 130 }, (_, i) => 1000 + i))
    const { outcome, got, queries } = await runPager(events, { defaultLimit: 20, maxLimit: 50 }, 20)
    expect(outcome).toEqual({ ok: true, value: undefined })
    expect(got.size).toBe(130)
    expect(queries.map((q) => [q.until, q.limit])).toEqual([
      [1110, 50],
      [1061, 50],
      [1012, 50],
    ])
  })

  it('loses no event of a second that straddles a page boundary (until is inclusive)', async () => {
    const events = eventsAt(Array.from({ length: 100 }, (_, i) => 1000 + Math.floor(i / 7)))
    const { outcome, got } = await runPager(events, { defaultLimit: 20, maxLimit: 50 }, 20)
    expect(outcome).toMatchObject({ ok: true })
    expect(got.size).toBe(100)
  })

  it('stops after a page that is not full without asking again', async () => {
    const events = eventsAt(Array.from({ length: 20 }, (_, i) => 1000 + i))
    const { queries } = await runPager(events, { defaultLimit: 20, maxLimit: 50 }, 20)
    expect(queries).toHaveLength(1)
    const short = eventsAt(Array.from({ length: 19 }, (_, i) => 1000 + i))
    expect((await runPager(short, { defaultLimit: 20, maxLimit: 50 }, 20)).queries).toHaveLength(0)
  })

  it('pages a relay that advertises no limits until a page brings nothing older', async () => {
    const events = eventsAt(Array.from({ length: 130 }, (_, i) => 1000 + i))
    const { outcome, got } = await runPager(events, {}, 100)
    expect(outcome).toMatchObject({ ok: true })
    expect(got.size).toBe(130)
  })

  it('answers "error:" when the backlog needs more pages than the bound, at the bound and not before', async () => {
    // 20, then 49 new a page (each re-fetches its boundary second): the fourth page, not full, ends it
    const events = eventsAt(Array.from({ length: 215 }, (_, i) => 1000 + i))
    expect((await runPager(events, { defaultLimit: 20, maxLimit: 50 }, 20, 4)).outcome).toMatchObject({ ok: true })
    const over = await runPager(events, { defaultLimit: 20, maxLimit: 50 }, 20, 3)
    expect(over.outcome).toMatchObject({ ok: false })
    expect(prefixOf((over.outcome as { error: string }).error)).toBe('error')
    expect(over.queries).toHaveLength(3)
  })

  it('answers "error:" for more events in one second than a page holds, instead of looping', async () => {
    const events = eventsAt(Array.from({ length: 80 }, () => 1000))
    const { outcome, queries } = await runPager(events, { defaultLimit: 20, maxLimit: 50 }, 20)
    expect(outcome).toMatchObject({ ok: false })
    expect(queries).toHaveLength(1)
  })
})

describe('the page sizes a relay advertises', () => {
  it('are read from NIP-11 `limitation`, and left out when absent or not a positive integer', () => {
    const doc = (limitation: unknown) => ({ supported_nips: [1, 42], limitation })
    expect(toProbe('ws://r', doc({ default_limit: 20, max_limit: 50 }))).toMatchObject({ defaultLimit: 20, maxLimit: 50 })
    const none = toProbe('ws://r', doc({ default_limit: 0, max_limit: 'many' }))
    expect(none).not.toHaveProperty('defaultLimit')
    expect(none).not.toHaveProperty('maxLimit')
    expect(toProbe('ws://r', { supported_nips: [1, 42] })).not.toHaveProperty('maxLimit')
  })
})
