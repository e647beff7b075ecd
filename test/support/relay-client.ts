// What a NIP-01/NIP-42 client does, one line each for the tests: connect (optionally naming a community by
// Host), publish and wait for the OK, REQ up to EOSE, COUNT, AUTH. Frames are read through ws-client.ts.
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { prefixOf } from '../../src/protocols/reasons'
import { type EventTemplate, type SignedEvent, signEvent, type TestKeys, toRaw } from './events'
import { eventually } from './eventually'
import type { TestRelay } from './relay'
import { connect, type Frame, type TestClient } from './ws-client'

/** A client of the `default` community, or of another community when `host` is a name (port is added). */
export const client = (r: TestRelay, host?: string): Promise<TestClient> => connect(r.url, host ? { host: `${host}:${r.port}` } : {})

/** Connects until the relay refuses `host` with HTTP 404, i.e. once it no longer serves that community (at most 5 s). */
export async function until404(r: TestRelay, host: string): Promise<boolean> {
  const refused = async () => {
    try {
      ;(await client(r, host)).close()
      return false
    } catch (error) {
      if (String(error).includes('HTTP 404')) return true
      throw error
    }
  }
  return eventually(refused, (is404) => is404, `HTTP 404 for ${host}`, { timeoutMs: 5_000, intervalMs: 50 })
}

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
