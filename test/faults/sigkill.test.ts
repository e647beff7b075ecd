import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeKeys, type SignedEvent, signEvent } from '../support/events'
import { signEventFast } from '../support/fast-sign'
import { createTestDatabase, type TestDatabase } from '../support/postgres'
import { type PrivateRedis, startPrivateRedis } from '../support/redis-server'
import { GENEROUS_ENV as GENEROUS_RATES_ENV, type RelayProcess, startRelayProcess } from '../support/relay-process'
import { connect, type TestClient } from '../support/ws-client'

/**
 * kill -9 in the middle of a burst: no graceful close, no flush, whatever the process held in memory is
 * gone. The promise that must survive is the NIP-01 one: OK true is sent only after commit (architecture §7), so
 * every event a client saw OK true for is served after a restart on the same data. The relay is the real
 * `apiary start` process (compiled dist/), killed for real. test/e2e/process.test.ts covers SIGTERM/SIGINT.
 */

const BURST = 2_000
/** OK-true answers the client has seen when the kill is sent */
const KILL_AFTER_ACKS = 300

/** Limits high enough for one client to pipeline the whole burst and read it back in one REQ. */
const GENEROUS_ENV: Record<string, string> = {
  ...GENEROUS_RATES_ENV,
  APIARY_LIMITS_MAX_LIMIT: String(BURST + 100),
}

interface Killed {
  /** ids answered OK true before the process died */
  acknowledged: string[]
  refused: string[]
  signal: NodeJS.Signals | null
  closeCode: number
}

/** Pipelines the whole burst without waiting, and SIGKILLs the relay from inside the handler of the Nth OK true. */
async function burstAndKill(relay: RelayProcess, events: SignedEvent[]): Promise<Killed> {
  const c = await connect(relay.url)
  let acks = 0
  c.ws.on('message', (data) => {
    const f = JSON.parse(data.toString()) as unknown[]
    if (f[0] === 'OK' && f[2] === true && ++acks === KILL_AFTER_ACKS) relay.proc.kill('SIGKILL')
  })
  for (const e of events) c.sendRaw(`["EVENT",${e.raw}]`)
  const [{ signal }, closed] = await Promise.all([relay.exited, c.closed])
  const oks = c.frames.filter((f) => f[0] === 'OK')
  return {
    acknowledged: oks.filter((f) => f[2] === true).map((f) => f[1] as string),
    refused: oks.filter((f) => f[2] === false).map((f) => `${f[1]}: ${f[3]}`),
    signal,
    closeCode: closed.code,
  }
}

async function storedIds(c: TestClient, pubkey: string): Promise<Set<string>> {
  c.send(['REQ', 'all', { authors: [pubkey], limit: BURST + 100 }])
  return new Set((await c.collect('all')).map((f) => (f[2] as { id: string }).id))
}

/**
 * A burst shaped like the ingest corpus (bench/corpus.ts), from one author so one REQ reads it back: notes with
 * tags, reactions, and every twentieth-or-so a profile (kind 0), a contact list (kind 3, 5–200 `p` tags) or an
 * article (kind 30023, five `d` values). created_at ascends, so each replaceable or addressable version replaces
 * the one before it.
 */
function corpusMix(keys: ReturnType<typeof makeKeys>, count: number): SignedEvent[] {
  const base = Math.floor(Date.now() / 1000) - count - 10
  const pubkeyOf = (i: number) => i.toString(16).padStart(64, '0')
  const out: SignedEvent[] = []
  for (let i = 0; i < count; i++) {
    const created_at = base + i
    const slot = i % 20
    let template: Parameters<typeof signEventFast>[1]
    if (slot < 14)
      template = {
        kind: 1,
        tags: [
          ['t', `topic${i % 7}`],
          ['p', pubkeyOf(i % 50)],
        ],
        content: `mix ${i} ${'lorem ipsum '.repeat(1 + (i % 40))}`,
      }
    else if (slot < 17)
      template = {
        kind: 7,
        tags: [
          ['e', out[i - 1]!.event.id],
          ['p', pubkeyOf(i % 50)],
        ],
        content: '+',
      }
    else if (slot === 17) template = { kind: 0, content: JSON.stringify({ name: `mix ${i}` }) }
    else if (slot === 18) template = { kind: 3, tags: Array.from({ length: 5 + (i % 196) }, (_, k) => ['p', pubkeyOf(k)]) }
    else
      template = {
        kind: 30_023,
        tags: [
          ['d', `article-${i % 5}`],
          ['t', 'mix'],
        ],
        content: `article ${i}`,
      }
    out.push(signEventFast(keys, { ...template, created_at }))
  }
  return out
}

/** The replaceable or addressable key of an event of the mix, undefined for a regular one. */
function addressOf(e: SignedEvent): string | undefined {
  const { kind, tags } = e.event
  if (kind === 0 || kind === 3) return `${kind}:`
  if (kind === 30_023) return `${kind}:${tags.find((t) => t[0] === 'd')?.[1] ?? ''}`
  return undefined
}

/**
 * Acknowledged ids that are not stored and not explained: a version is allowed to be gone only when a newer
 * version of its address (acknowledged or not: the kill may come between a commit and its OK) is stored.
 */
function lostOf(acknowledged: string[], stored: Set<string>, burst: SignedEvent[]): string[] {
  const byId = new Map(burst.map((e) => [e.event.id, e]))
  const newestStored = new Map<string, number>()
  for (const e of burst) {
    const a = addressOf(e)
    if (a !== undefined && stored.has(e.event.id)) newestStored.set(a, Math.max(newestStored.get(a) ?? 0, e.event.created_at))
  }
  return acknowledged.filter((id) => {
    if (stored.has(id)) return false
    const e = byId.get(id)!
    const a = addressOf(e)
    return a === undefined || (newestStored.get(a) ?? 0) <= e.event.created_at
  })
}

describe('a relay killed with SIGKILL mid-burst', { timeout: 90_000 }, () => {
  const keys = makeKeys()
  const mixAuthor = makeKeys()
  let events: SignedEvent[] = []
  let mix: SignedEvent[] = []
  const cleanups: (() => Promise<void> | void)[] = []
  beforeAll(() => {
    events = Array.from({ length: BURST }, (_, i) => signEventFast(keys, { content: `burst ${i} ${randomBytes(4).toString('hex')}` }))
    mix = corpusMix(mixAuthor, BURST)
  })
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })

  const dataDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'apiary-faults-kill-'))
    cleanups.push(() => rmSync(d, { recursive: true, force: true }))
    return d
  }

  /** the whole check for one backend: burst, kill, restart on the same data, read back, write again */
  async function killAndRestart(env: Record<string, string>, burst = events, author = keys) {
    const dir = dataDir()
    const first = await startRelayProcess(['--port', '0', '--data-dir', dir], { ...GENEROUS_ENV, ...env })
    const killed = await burstAndKill(first, burst)
    expect(killed.signal).toBe('SIGKILL')
    // abnormal closure: no close frame, the peer just vanished
    expect(killed.closeCode).toBe(1006)
    expect(killed.refused).toEqual([])
    expect(killed.acknowledged.length).toBeGreaterThanOrEqual(KILL_AFTER_ACKS)
    // it died mid-burst: part of the burst was never answered
    expect(killed.acknowledged.length).toBeLessThan(BURST)

    const second = await startRelayProcess(['--port', '0', '--data-dir', dir], { ...GENEROUS_ENV, ...env })
    try {
      const c = await connect(second.url)
      const stored = await storedIds(c, author.pubkey)
      expect(lostOf(killed.acknowledged, stored, burst)).toEqual([])
      // and nothing it did not receive: what is stored is a subset of the burst
      const sent = new Set(burst.map((e) => e.event.id))
      expect([...stored].filter((id) => !sent.has(id))).toEqual([])
      // it serves again: a new write is accepted and read back
      const after = signEvent(author, { content: 'after the kill' })
      c.sendRaw(`["EVENT",${after.raw}]`)
      expect((await c.ok(after.event.id))[2]).toBe(true)
      expect((await storedIds(c, author.pubkey)).has(after.event.id)).toBe(true)
      // resending the burst is idempotent: what was stored answers duplicate, the rest is stored now; a version
      // a newer one replaced answers "duplicate:" with OK false
      const resent = burst.slice(0, KILL_AFTER_ACKS)
      for (const e of resent) c.sendRaw(`["EVENT",${e.raw}]`)
      const answers = await Promise.all(resent.map((e) => c.ok(e.event.id)))
      const replaced = new Set(resent.filter((e) => addressOf(e) !== undefined).map((e) => e.event.id))
      expect(answers.filter((f) => f[2] !== true && !(replaced.has(f[1] as string) && String(f[3]).startsWith('duplicate:')))).toEqual([])
      c.close()
      return { acknowledged: killed.acknowledged.length, stored: stored.size }
    } finally {
      second.proc.kill('SIGTERM')
      await second.exited
    }
  }

  it('serves every event that got OK true before the kill, after a restart on the same SQLite data directory', async () => {
    const { acknowledged, stored } = await killAndRestart({})
    expect(stored).toBeGreaterThanOrEqual(acknowledged)
  })

  it('loses no acknowledged event of a corpus-like mix (replaceable versions, contact lists), on SQLite', async () => {
    const { acknowledged } = await killAndRestart({}, mix, mixAuthor)
    expect(acknowledged).toBeGreaterThanOrEqual(KILL_AFTER_ACKS)
  })

  describe('in cluster mode', () => {
    let db: TestDatabase
    let redis: PrivateRedis
    beforeAll(async () => {
      db = await createTestDatabase()
      redis = await startPrivateRedis()
    })
    afterAll(async () => {
      await redis?.stop()
      await db?.drop()
    })

    it('serves every event that got OK true before the kill, after a restart on the same PostgreSQL database and relay key', async () => {
      const { acknowledged, stored } = await killAndRestart({
        APIARY_REDIS_URL: redis.url,
        APIARY_DATABASE_URL: db.url,
        APIARY_RELAY_SECRET_KEY: randomBytes(32).toString('hex'),
      })
      expect(stored).toBeGreaterThanOrEqual(acknowledged)
    })

    it('loses no acknowledged event of a corpus-like mix (replaceable versions, contact lists), on PostgreSQL', async () => {
      const { acknowledged } = await killAndRestart(
        { APIARY_REDIS_URL: redis.url, APIARY_DATABASE_URL: db.url, APIARY_RELAY_SECRET_KEY: randomBytes(32).toString('hex') },
        mix,
        mixAuthor,
      )
      expect(acknowledged).toBeGreaterThanOrEqual(KILL_AFTER_ACKS)
    })
  })
})
