import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { makeKeys, type SignedEvent } from '../support/events'
import { signEventFast } from '../support/fast-sign'
import { labelledMetric } from '../support/metrics'
import { useRelays, withGenerousRates } from '../support/relay-fixtures'
import { GENEROUS_ENV, startRelayProcess } from '../support/relay-process'
import { connect, type Frame, type TestClient } from '../support/ws-client'

/**
 * Reads one client cannot turn into an outage (docs/architecture.md §6.4): a burst of REQs with long driving
 * lists, against a real relay process on the SQLite defaults, leaves its RSS and another client's latency
 * alone; a REQ or COUNT that would examine too many rows is stopped, answered and counted.
 */

const MiB = 2 ** 20

/** kind-1 events, each with one `t` value of `values` (round robin) and, every third, `t` "common" */
function taggedEvents(n: number, values: number): SignedEvent[] {
  const keys = makeKeys()
  const now = Math.floor(Date.now() / 1000)
  return Array.from({ length: n }, (_, i) =>
    signEventFast(keys, {
      kind: 1,
      created_at: now - (i % 600),
      content: `${i}`,
      tags: [['t', `v${i % values}`], ...(i % 3 === 0 ? [['t', 'common']] : [])],
    }),
  )
}

async function publishPipelined(pub: TestClient, events: SignedEvent[]): Promise<number> {
  const ids = new Set(events.map((e) => e.event.id))
  for (const e of events) pub.sendRaw(`["EVENT",${e.raw}]`)
  let answered = 0
  let accepted = 0
  await pub.next((f) => {
    if (f[0] !== 'OK' || !ids.has(f[1] as string)) return false
    if (f[2] === true) accepted++
    return ++answered === ids.size
  }, 60_000)
  return accepted
}

const answerOf = (c: TestClient, subId: string, timeoutMs = 30_000): Promise<Frame> =>
  c.next((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED' || f[0] === 'COUNT') && f[1] === subId, timeoutMs)

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * 0.99) - 1]!

interface Burst {
  /** the relay's RSS before the burst and its peak during it, MiB */
  rssMiB: { before: number; peak: number }
  /** the other client's one-row REQs, each sent after the previous one's answer: ms, and what ended each */
  latencies: number[]
  seen: string[]
  /** the frame that ended each of the burst's REQs (EOSE or CLOSED), or ['gone'] when the socket closed first */
  answers: Frame[]
  node: { port: number }
}

/**
 * 50 REQs of `filters` from one socket against a real relay process on the SQLite defaults, holding 3,000
 * events, while another client sends 60 one-row REQs one after another; `check` runs on what was seen.
 */
async function underBurst(filters: object[], label: string, check: (b: Burst) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'apiary-read-burst-'))
  const relay = await startRelayProcess(['--port', '0', '--data-dir', dir], GENEROUS_ENV)
  const pid = relay.proc.pid ?? 0
  const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024
  const node = { port: Number(new URL(relay.url).port) }
  let sampler: ReturnType<typeof setInterval> | undefined
  try {
    const pub = await connect(relay.url)
    const events = taggedEvents(3_000, 1_000)
    expect(await publishPipelined(pub, events)).toBe(events.length)
    const other = await connect(relay.url)
    const attacker = await connect(relay.url)
    // warm-up: the readers' connections and page caches, so what is measured is the burst
    for (let i = 0; i < 5; i++) {
      other.send(['REQ', `warm${i}`, { '#t': ['v1', 'v2'], limit: 5 }])
      await answerOf(other, `warm${i}`)
    }
    const rssBefore = rss()
    let rssPeak = rssBefore
    sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, rss())
    }, 25)

    for (let i = 0; i < 50; i++) attacker.send(['REQ', `burst${i}`, ...filters])
    const gone = attacker.closed.then((): Frame => ['gone'])
    const answers = Promise.all(Array.from({ length: 50 }, (_, i) => Promise.race([answerOf(attacker, `burst${i}`, 120_000), gone])))

    const latencies: number[] = []
    const seen: string[] = []
    const target = events[0]!.event.id
    for (let i = 0; i < 60; i++) {
      const started = performance.now()
      other.send(['REQ', `one${i}`, { ids: [target] }])
      seen.push(String((await answerOf(other, `one${i}`))[0]))
      latencies.push(performance.now() - started)
      other.send(['CLOSE', `one${i}`])
    }
    const ended = await answers
    clearInterval(sampler)
    const counts = new Map<string, number>()
    for (const f of ended) counts.set(`${f[0]} ${f[2] ?? ''}`.trim(), (counts.get(`${f[0]} ${f[2] ?? ''}`.trim()) ?? 0) + 1)
    console.log(
      `${label}: RSS ${Math.round(rssBefore / MiB)} -> peak ${Math.round(rssPeak / MiB)} MiB; other client p99 ${p99(latencies).toFixed(1)} ms, saw ${[...new Set(seen)].join('/')}; burst answered ${[...counts].map(([k, n]) => `${n} × ${k}`).join(', ')}`,
    )
    await check({ rssMiB: { before: rssBefore / MiB, peak: rssPeak / MiB }, latencies, seen, answers: ended, node })
  } finally {
    clearInterval(sampler)
    relay.proc.kill('SIGKILL')
    await relay.exited
    rmSync(dir, { recursive: true, force: true })
  }
}

/** `n` filters of `width` `#t` values each, windows a hundred values apart over v0..v999, a page of 500 each */
const wideFilters = (n: number, width: number) =>
  Array.from({ length: n }, (_, f) => ({
    '#t': Array.from({ length: width }, (_, i) => `v${(f * 100 + i) % 1_000}`),
    limit: 500,
  }))

describe('a burst of REQs with long driving lists from one socket', () => {
  it("past limits.maxReqValues (10 filters × 1,000 values): each refused before any read; RSS growth under 64 MiB, another client's one-row REQ served, p99 under a second", async () => {
    await underBurst(wideFilters(10, 1_000), 'read burst past the cap', async (b) => {
      // past the cap: refused before any read, with the standard prefix, and counted
      expect(b.answers.every((f) => f[0] === 'CLOSED' && /^invalid: too many values/.test(f[2] as string))).toBe(true)
      expect(await labelledMetric(b.node, 'apiary_reads_refused_total', { reason: 'values' })).toBe(50)
      // the other client is served throughout
      expect(b.seen.every((f) => f === 'EOSE')).toBe(true)
      expect(b.rssMiB.peak - b.rssMiB.before).toBeLessThan(64)
      // An idle machine serves it within 100 ms; on a loaded test machine the relay still parses the burst's
      // frames on its event loop, so the bound is wider, and still fails a read queue behind the burst.
      expect(p99(b.latencies)).toBeLessThan(1_000)
    })
  }, 180_000)

  it("at limits.maxReqValues (10 filters × 250 values): each read or stopped at its budget; RSS bounded, another client's one-row REQ still served", async () => {
    await underBurst(wideFilters(10, 250), 'read burst at the cap', async (b) => {
      // at the cap nothing is refused for its values: each is read, its page served or, past its read budget
      // (time spent waiting for a worker included), CLOSED with the standard prefix
      expect(await labelledMetric(b.node, 'apiary_reads_refused_total', { reason: 'values' })).toBe(0)
      const served = b.answers.filter((f) => f[0] === 'EOSE').length
      const stopped = b.answers.filter((f) => f[0] === 'CLOSED' && /^error: query too expensive: /.test(f[2] as string)).length
      expect(served).toBeGreaterThan(0)
      expect(served + stopped).toBe(50)
      expect(b.seen.every((f) => f === 'EOSE')).toBe(true)
      // Each page served is up to 10 × 500 events, and the heap and the readers' threads take them and their
      // garbage in before the GC catches up: the bound fails growth with the number of REQs (docs/performance.md
      // has the figures), not the relay's working set.
      expect(b.rssMiB.peak - b.rssMiB.before).toBeLessThan(256)
      // the burst holds at most 4 of the community's 16 read places and the other client's REQ takes the next
      // free one: the bound fails a client left waiting behind the whole burst, not a slow machine
      expect(p99(b.latencies)).toBeLessThan(5_000)
    })
  }, 240_000)
})

describe('the read budget', () => {
  const relays = useRelays()

  it('stops a REQ that would examine too many rows with CLOSED "error: query too expensive", and a COUNT without limit too, counted', async () => {
    const r = await relays.start(withGenerousRates({ limits: { maxRowsExamined: 2_000 } }))
    const pub = await connect(r.url)
    // 3,000 events, 1,000 of them tagged "common"
    const events = taggedEvents(3_000, 1_000)
    expect(await publishPipelined(pub, events)).toBe(events.length)
    const c = await connect(r.url)
    const random = () => Array.from({ length: 17 }, () => makeKeys().pubkey)
    // the probe: "common" drives (fewest values), and no row has any of the p values
    c.send(['REQ', 'probe', ...Array.from({ length: 10 }, () => ({ '#t': ['common'], '#p': random() }))])
    const probe = await answerOf(c, 'probe')
    expect(probe[0]).toBe('CLOSED')
    expect(probe[2]).toMatch(/^error: query too expensive: /)
    // every "common" row, three times over, without a limit
    c.send(['COUNT', 'all', { '#t': ['common'] }, { '#t': ['common'], kinds: [1] }, { '#t': ['common'], since: 0 }])
    const all = await answerOf(c, 'all')
    expect(all[0]).toBe('CLOSED')
    expect(all[2]).toMatch(/^error: query too expensive: /)
    expect(await labelledMetric(r, 'apiary_reads_refused_total', { reason: 'rows' })).toBe(2)
    // within the budget: answered, and the connection and the community go on
    c.send(['COUNT', 'one', { '#t': ['common'] }])
    expect(await answerOf(c, 'one')).toEqual(['COUNT', 'one', { count: 1_000 }])
    c.send(['REQ', 'page', { '#t': ['common'], limit: 10 }])
    expect((await answerOf(c, 'page'))[0]).toBe('EOSE')
  }, 120_000)

  it('refuses COUNTs queued behind a busy read worker at their time budget, not at store.queryTimeoutMs, counted as time', async () => {
    const readBudgetMs = 100
    const queryTimeoutMs = 1_000
    // rows far past the table's: time is what stops these reads, however fast the machine scans
    const limits = { readBudgetMs, maxRowsExamined: 100_000_000 }
    const r = await relays.start(withGenerousRates({ limits, store: { readWorkers: 1, queryTimeoutMs } }))
    // rows straight into the relay's file (a second connection, as WAL allows): counting them takes seconds
    const db = new Database(join(r.dataDir, 'apiary.sqlite'))
    db.prepare(
      `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT 200000)
       INSERT INTO events (community, id, pubkey, kind, created_at, raw)
       SELECT 'default', printf('%064x', x), printf('%064x', x % 1000), 1, 1700000000 - x, '{}' FROM n`,
    ).run()
    db.close()
    const c = await connect(r.url)
    // five unlimited filters over every row, each COUNT one read: one runs on the worker, the rest wait
    const heavy = [
      { kinds: [1] },
      { kinds: [1], since: 0 },
      { kinds: [1], until: 2_000_000_000 },
      { kinds: [1], since: 1 },
      { kinds: [1], since: 2 },
    ]
    const reads = 20
    const started = performance.now()
    for (let i = 0; i < reads; i++) c.send(['COUNT', `heavy${i}`, ...heavy])
    const answers = await Promise.all(Array.from({ length: reads }, (_, i) => answerOf(c, `heavy${i}`)))
    const ms = performance.now() - started
    console.log(`${reads} heavy COUNTs behind one read worker, ${readBudgetMs} ms budget: all answered after ${ms.toFixed(0)} ms`)
    for (const f of answers) {
      expect(f[0]).toBe('CLOSED')
      expect(f[2]).toMatch(/^error: query too expensive: /)
    }
    // each over its own time, waiting included: none left to wait out queryTimeoutMs, which is not counted so
    expect(await labelledMetric(r, 'apiary_reads_refused_total', { reason: 'time' })).toBe(reads)
    expect(ms).toBeLessThan(queryTimeoutMs)
    // the worker is free again: a light read is answered
    c.send(['COUNT', 'light', { ids: ['0'.repeat(64)] }])
    expect(await answerOf(c, 'light')).toEqual(['COUNT', 'light', { count: 0 }])
  }, 120_000)

  /** A relay holding 3,000 events (1,000 tagged "common"), a 2,000-row read budget, and a reader with 10 REQ tokens. */
  async function budgetedReader() {
    const reqs = { ratePerSecond: 0.001, burst: 10 }
    const events = { ratePerSecond: 100_000, burst: 100_000 }
    const r = await relays.start(withGenerousRates({ limits: { maxRowsExamined: 2_000 }, rateLimits: { human: { events, reqs } } }))
    const pub = await connect(r.url)
    const stored = taggedEvents(3_000, 1_000)
    expect(await publishPipelined(pub, stored)).toBe(stored.length)
    return { c: await connect(r.url), stored }
  }

  it("charges a read stopped over its budget to its principal's REQ budget, in proportion to the rows it examined", async () => {
    const { c, stored } = await budgetedReader()
    c.send(['REQ', 'probe', ...Array.from({ length: 10 }, () => ({ '#t': ['common'], '#p': [makeKeys().pubkey] }))])
    expect((await answerOf(c, 'probe'))[2]).toMatch(/^error: query too expensive: /)
    // the probe took its REQ token and, for its 2,001 rows, three more: 6 of the burst of 10 are left
    let served = 0
    for (let i = 0; i < 10; i++) {
      c.send(['REQ', `after${i}`, { ids: [stored[0]!.event.id] }])
      const f = await answerOf(c, `after${i}`)
      if (f[0] === 'EOSE') served++
      else expect(f[2]).toMatch(/^rate-limited: /)
    }
    expect(served).toBe(6)
  }, 120_000)

  it('charges a read over its budget from a bucket that holds less than its cost: it takes what is there', async () => {
    const { c, stored } = await budgetedReader()
    // 8 of the burst of 10 spent, then the probe takes the 9th and owes three more for its 2,001 rows
    for (let i = 0; i < 8; i++) {
      c.send(['REQ', `before${i}`, { ids: [stored[0]!.event.id] }])
      expect((await answerOf(c, `before${i}`))[0]).toBe('EOSE')
    }
    c.send(['REQ', 'probe', ...Array.from({ length: 10 }, () => ({ '#t': ['common'], '#p': [makeKeys().pubkey] }))])
    expect((await answerOf(c, 'probe'))[2]).toMatch(/^error: query too expensive: /)
    // the one token left goes to the charge: the next REQ finds the bucket empty
    c.send(['REQ', 'after', { ids: [stored[0]!.event.id] }])
    expect((await answerOf(c, 'after'))[2]).toMatch(/^rate-limited: /)
  }, 120_000)
})
