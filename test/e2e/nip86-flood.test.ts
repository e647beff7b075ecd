import { Agent, request } from 'node:http'
import { describe, expect, it } from 'vitest'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys } from '../support/events'
import { labelledMetric } from '../support/metrics'
import { authorizationOf, managementUrl, nip98Event, rpc } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import { client, fresh, publish } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

const FLOOD = 5_000
const API_PER_IP = { ratePerSecond: 2, burst: 20 }
const EVENTS = 200

/** One NIP-86 call with a well-formed NIP-98 header whose signature is wrong (the id still matches). */
function forgedCall(r: TestRelay): { body: string; authorization: string } {
  const body = rpc('supportedmethods')
  const event = nip98Event(makeKeys(), managementUrl(r), body)
  const last = event.sig.slice(-1)
  return { body, authorization: authorizationOf({ ...event, sig: event.sig.slice(0, -1) + (last === '0' ? '1' : '0') }) }
}

interface Answer {
  status: number
  retryAfter?: string
  error?: string
}

function post(r: TestRelay, agent: Agent, call: { body: string; authorization: string }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: r.port,
        path: '/',
        method: 'POST',
        agent,
        headers: {
          Host: `127.0.0.1:${r.port}`,
          'Content-Type': 'application/nostr+json+rpc',
          'Content-Length': String(Buffer.byteLength(call.body)),
          Authorization: call.authorization,
        },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (d: string) => {
          text += d
        })
        res.on('end', () => {
          const retryAfter = res.headers['retry-after']
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
            error: JSON.parse(text).error,
          })
        })
      },
    )
    req.on('error', reject)
    req.end(call.body)
  })
}

/** `n` requests, at most `concurrency` in flight (a client with a pool of keep-alive sockets). */
async function flood(r: TestRelay, n: number, concurrency: number): Promise<Answer[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
  const call = forgedCall(r)
  const answers: Answer[] = []
  let sent = 0
  const worker = async () => {
    while (sent < n) {
      sent++
      answers.push(await post(r, agent, call))
    }
  }
  try {
    await Promise.all(Array.from({ length: concurrency }, worker))
  } finally {
    agent.destroy()
  }
  return answers
}

/** Publishes `count` events one after the other (or until `until` settles, at least `count`); OK latencies in ms. */
async function publishTimed(r: TestRelay, count: number, until?: Promise<unknown>): Promise<{ latenciesMs: number[]; accepted: number }> {
  const c = await client(r)
  const keys = makeKeys()
  let done = until === undefined
  void until?.finally(() => {
    done = true
  })
  const latenciesMs: number[] = []
  let accepted = 0
  while (latenciesMs.length < count || !done) {
    const e = fresh(keys)
    const t0 = performance.now()
    const ok = await publish(c, e)
    latenciesMs.push(performance.now() - t0)
    if (ok.accepted) accepted++
  }
  c.close()
  return { latenciesMs, accepted }
}

const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN
}

describe('a flood of forged NIP-86 calls from one IP', () => {
  const relays = useRelays()

  it('is refused with 429 past the per-IP burst before any signature check, while a publisher’s events are all accepted', async () => {
    const r = await relays.start({ rateLimits: { apiPerIp: API_PER_IP } })
    const baseline = await publishTimed(r, EVENTS)

    const started = performance.now()
    const flooding = flood(r, FLOOD, 64)
    const during = await publishTimed(r, EVENTS, flooding)
    const answers = await flooding
    const elapsedSeconds = (performance.now() - started) / 1000

    const statuses = new Map<number, number>()
    for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1)
    const refused = answers.filter((a) => a.status === 429)
    const checked = answers.filter((a) => a.status === 401)
    // what the bucket can have let through in the time the flood took (its burst, then its rate)
    const admissible = API_PER_IP.burst + Math.ceil(API_PER_IP.ratePerSecond * elapsedSeconds) + 1
    expect([...statuses.keys()].sort()).toEqual([401, 429])
    expect(checked.length).toBeLessThanOrEqual(admissible)
    expect(checked.length).toBeGreaterThanOrEqual(API_PER_IP.burst)
    expect(refused.length).toBe(FLOOD - checked.length)
    expect(refused.every((a) => prefixOf(a.error ?? '') === 'rate-limited' && /^\d+$/.test(a.retryAfter ?? ''))).toBe(true)
    expect(checked.every((a) => prefixOf(a.error ?? '') === 'invalid')).toBe(true)

    // the verifier pool saw exactly the admitted ones, every one a bad signature
    expect(await labelledMetric(r, 'apiary_nip86_signature_checks_total', { verdict: 'bad-sig' })).toBe(checked.length)
    expect(await labelledMetric(r, 'apiary_nip86_signature_checks_total', {})).toBe(checked.length)

    expect(baseline.accepted).toBe(baseline.latenciesMs.length)
    expect(during.accepted).toBe(during.latenciesMs.length)

    // figures for the record, not a threshold (machine-dependent)
    const figures = (xs: number[]) =>
      `p50 ${percentile(xs, 50).toFixed(2)} ms, p99 ${percentile(xs, 99).toFixed(2)} ms (n=${xs.length}, ${(xs.reduce((a, b) => a + b, 0) / 1000).toFixed(2)} s)`
    console.info(
      `nip86 flood: ${FLOOD} forged calls in ${elapsedSeconds.toFixed(2)} s, ${refused.length} answered 429, ${checked.length} signature checks; ` +
        `publisher OK without flood ${figures(baseline.latenciesMs)}; during flood ${figures(during.latenciesMs)}`,
    )
  })
})
