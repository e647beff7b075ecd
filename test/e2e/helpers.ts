import { randomBytes } from 'node:crypto'
import { request } from 'node:http'
import { afterAll, afterEach, beforeAll } from 'vitest'
import type { ConfigInput } from '../../src/infra/config'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { prefixOf } from '../../src/protocols/reasons'
import type { RelayOptions } from '../../src/relay/relay'
import { type EventTemplate, type SignedEvent, signEvent, type TestKeys, toRaw } from '../support/events'
import { createTestDatabase, type TestDatabase } from '../support/postgres'
import { startTestRelay, type TestRelay } from '../support/relay'
import { connect, type Frame, type TestClient } from '../support/ws-client'

/**
 * Shared plumbing for the e2e suite: every relay a test starts is closed after it, clients connect with an
 * optional Host header, and the few client-side moves every file repeats (publish, REQ, AUTH) read as one line.
 */

/** Budgets high enough that only rate-limit.test.ts ever meets a rate limit. */
const GENEROUS = { ratePerSecond: 100_000, burst: 100_000 }
const GENEROUS_TIER = { events: GENEROUS, reqs: GENEROUS }

/**
 * Also the per-IP limits every test client shares (all connect from 127.0.0.1, and in cluster mode the
 * per-IP keys are global in the one Redis every test file uses): only the tests of those limits meet them.
 */
export function withGenerousRates(overrides: ConfigInput): ConfigInput {
  return {
    ...overrides,
    rateLimits: { human: GENEROUS_TIER, connectionsPerIp: GENEROUS, apiPerIp: GENEROUS, ...overrides.rateLimits },
    limits: { maxConnectionsPerIp: GENEROUS.burst, ...overrides.limits },
  }
}

/** Registers an afterEach that closes every relay started through the returned `start`. */
export function useRelays() {
  const open: TestRelay[] = []
  afterEach(async () => {
    await Promise.all(open.splice(0).map((r) => r.close()))
  })
  return {
    async start(overrides: ConfigInput = {}, dataDir?: string, opts: RelayOptions = {}): Promise<TestRelay> {
      const r = await startTestRelay(withGenerousRates(overrides), dataDir, opts)
      open.push(r)
      return r
    },
    /** forget a relay the test closed itself (e.g. to restart on the same data directory) */
    forget(r: TestRelay) {
      const i = open.indexOf(r)
      if (i >= 0) open.splice(i, 1)
    },
  }
}

/** A client of the `default` community, or of another community when `host` is a name (port is added). */
export const client = (r: TestRelay, host?: string): Promise<TestClient> => connect(r.url, host ? { host: `${host}:${r.port}` } : {})

/** The NIP-42 relay URL a client connected with `host` must name. */
export const relayUrlOf = (r: TestRelay, host = '127.0.0.1') => `ws://${host}:${r.port}`

export const nowSeconds = () => Math.floor(Date.now() / 1000)

export type Ok = { accepted: boolean; message: string; prefix: string | undefined }

const toOk = (f: Frame): Ok => ({
  accepted: f[2] as boolean,
  message: f[3] as string,
  prefix: prefixOf(f[3] as string),
})

/** Send an EVENT (the raw wire form) and wait for its OK. */
export async function publish(c: TestClient, e: SignedEvent | NostrEvent): Promise<Ok> {
  const ev = 'raw' in e ? e.event : e
  c.sendRaw(`["EVENT",${'raw' in e ? e.raw : toRaw(e)}]`)
  return toOk(await c.ok(ev.id))
}

let contentCounter = 0
/** signEvent with a unique content unless one is given, so two calls never make the same event by accident. */
export const fresh = (keys: TestKeys, t: EventTemplate = {}): SignedEvent =>
  signEvent(keys, { ...t, content: t.content ?? `note ${++contentCounter} ${Math.random()}` })

/** Sign (unique content unless given) and publish; throws unless the relay answers OK true. */
export async function publishNew(c: TestClient, keys: TestKeys, t: EventTemplate = {}): Promise<SignedEvent> {
  const e = fresh(keys, t)
  const ok = await publish(c, e)
  if (!ok.accepted) throw new Error(`expected OK true for ${e.event.id}, got ${ok.message}`)
  return e
}

let subCounter = 0
export const newSubId = (label = 'sub') => `${label}-${++subCounter}`

/** REQ and the stored events up to EOSE (ids in order). */
export async function reqEvents(c: TestClient, filters: object[], subId = newSubId()): Promise<NostrEvent[]> {
  c.send(['REQ', subId, ...filters])
  const frames = await c.collect(subId)
  return frames.map((f) => f[2] as NostrEvent)
}

export const idsOf = (events: { id: string }[]) => events.map((e) => e.id)

/** The CLOSED or EOSE answer to a REQ, whichever comes first. */
export async function reqAnswer(c: TestClient, subId: string, filters: object[]): Promise<Frame> {
  c.send(['REQ', subId, ...filters])
  return c.next((f) => (f[0] === 'CLOSED' || f[0] === 'EOSE') && f[1] === subId)
}

/** COUNT → the number, or the CLOSED frame when refused. */
export async function count(c: TestClient, filters: object[], subId = newSubId('count')): Promise<number | Frame> {
  c.send(['COUNT', subId, ...filters])
  const f = await c.next((x) => (x[0] === 'COUNT' || x[0] === 'CLOSED') && x[1] === subId)
  return f[0] === 'COUNT' ? (f[2] as { count: number }).count : f
}

export function authEvent(keys: TestKeys, challenge: string, relayUrl: string, opts: { created_at?: number } = {}): SignedEvent {
  return signEvent(keys, {
    kind: 22242,
    created_at: opts.created_at,
    tags: [
      ['relay', relayUrl],
      ['challenge', challenge],
    ],
  })
}

/** This connection's NIP-42 challenge; unlike TestClient.challenge() it can be read any number of times. */
export async function challengeOf(c: TestClient): Promise<string> {
  const seen = c.frames.find((f) => f[0] === 'AUTH')
  return (seen ?? (await c.next((f) => f[0] === 'AUTH')))[1] as string
}

/** Send AUTH for `keys` with this connection's challenge; resolves with the OK. */
export async function auth(
  c: TestClient,
  keys: TestKeys,
  relayUrl: string,
  opts: { created_at?: number; challenge?: string } = {},
): Promise<Ok> {
  const challenge = opts.challenge ?? (await challengeOf(c))
  const e = authEvent(keys, challenge, relayUrl, opts)
  c.send(['AUTH', e.event])
  return toOk(await c.ok(e.event.id))
}

export interface HttpAnswer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** GET with a chosen Host header (fetch can't set one). */
export function httpGet(r: TestRelay, path: string, headers: Record<string, string> = {}): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: r.port, path, method: 'GET', headers }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => {
        body += d
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** The value of one Prometheus sample (sum over label sets), 0 when absent. */
export async function metric(r: TestRelay, name: string): Promise<number> {
  const { body } = await httpGet(r, '/metrics')
  let sum = 0
  for (const line of body.split('\n')) {
    if (line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line)
    if (m && m[1] === name) sum += Number(m[3])
  }
  return sum
}

/**
 * Runs `fn` until it starts and ends within one wall-clock second, so a created_at computed in it is the
 * relay's "now" too (the relay has one-second resolution and no injectable clock).
 */
export async function inOneSecond<T>(fn: (now: number) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const start = nowSeconds()
    const out = await fn(start)
    if (nowSeconds() === start || attempt >= 4) return out
  }
}

/** The shared Redis the cluster tests use (each test keeps to its own community id, so its own keys). */
export const REDIS_URL = 'redis://127.0.0.1:6379'

/**
 * A cluster for a test file: one PostgreSQL database of the file's own (dropped after it), one relay key all
 * its nodes share (they verify each other's control messages with it), Redis at REDIS_URL unless `extra`
 * says otherwise. `nodes(n)` starts n nodes serving a fresh community, so its Redis keys are its own too.
 */
export function useCluster(relays: ReturnType<typeof useRelays>) {
  let db: TestDatabase | undefined
  const relaySecretKey = randomBytes(32).toString('hex')
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => {
    await db?.drop()
  })
  const databaseUrl = () => {
    if (!db) throw new Error('useCluster: the database is created in beforeAll')
    return db.url
  }
  return {
    relaySecretKey,
    databaseUrl,
    async nodes(n: number, extra: ConfigInput = {}) {
      const id = `c-${randomBytes(5).toString('hex')}`
      const host = `${id}.test`
      const config: ConfigInput = {
        redisUrl: REDIS_URL,
        databaseUrl: databaseUrl(),
        relaySecretKey,
        communities: [{ id, hosts: [host] }],
        ...extra,
      }
      const started: TestRelay[] = []
      for (let i = 0; i < n; i++) started.push(await relays.start(config))
      return { id, host, nodes: started }
    },
  }
}

/** Polls `probe` every 100 ms until `holds` or `ms` pass; resolves with its last value (for the test to assert). */
export async function eventually<T>(probe: () => Promise<T>, holds: (v: T) => boolean, ms = 5_000): Promise<T> {
  const deadline = performance.now() + ms
  let v = await probe()
  while (!holds(v) && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100))
    v = await probe()
  }
  return v
}
