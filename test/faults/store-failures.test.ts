import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { filter, firstValueFrom, ReplaySubject } from 'rxjs'
import { describe, expect, it } from 'vitest'
import type { SupervisionEvent } from '../../src/actors/kernel'
import { prefixOf } from '../../src/protocols/reasons'
import { createRelay, type Relay } from '../../src/relay/relay'
import { makeKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { type FailingEventStore, openFailingSqliteStore } from '../support/failing-event-store'
import { operatorGetHeader } from '../support/nip86-client'
import { count, fresh, idsOf, publish, reqEvents } from '../support/relay-client'
import { withGenerousRates } from '../support/relay-fixtures'
import { connect, type Frame, type TestClient } from '../support/ws-client'

/**
 * A community whose EventStore fails (a working fake: the real SQLite store with faults injected). A query
 * that throws crashes the community actor (the client hears CLOSED "error:" first); a permanent actor gives
 * up after more than 5 failures within 60 s (src/actors/kernel/policy.ts defaultPolicy). A permanent actor that
 * gave up is respawned by its kind supervisor and /health/ready reports it until it is back
 * (docs/architecture.md §4.5): the last four tests are that behaviour.
 */

const COMMUNITY = 'community/default'
/** the give-up budget of a permanent actor: maxRestarts (5) + 1 failures within windowMs */
const FAILURES_TO_GIVE_UP = 6
/** a community that gave up is back within 10 s (defaultPolicy.respawn starts at 2 s, jittered) */
const RESPAWN_DUE_MS = 10_000

interface Harness {
  relay: Relay
  url: string
  port: number
  store: FailingEventStore
  /** every supervision event of the community from the start, replayed to late readers */
  supervision: ReplaySubject<SupervisionEvent>
  close(): Promise<void>
}

const OPERATOR = makeKeys()

async function startHarness(): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'apiary-faults-store-'))
  const store = openFailingSqliteStore(join(dir, 'events.sqlite'))
  const relay = createRelay(
    withGenerousRates({
      port: 0,
      host: '127.0.0.1',
      dataDir: dir,
      logLevel: 'silent',
      verifyThreads: 1,
      operatorPubkeys: [OPERATOR.pubkey],
    }),
    {
      eventStore: store.store,
    },
  )
  const supervision = new ReplaySubject<SupervisionEvent>()
  relay.supervision$.pipe(filter((e) => 'path' in e && e.path === COMMUNITY)).subscribe(supervision)
  const url = await relay.listen()
  return {
    relay,
    url,
    port: Number(new URL(url).port),
    store,
    supervision,
    async close() {
      await relay.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The harness for one test, closed after it whatever happens (the tests below run concurrently). */
async function withHarness(body: (h: Harness) => Promise<void>): Promise<void> {
  const h = await startHarness()
  try {
    await body(h)
  } finally {
    await h.close()
  }
}

const closedWith = (c: TestClient, subId: string, timeoutMs = 10_000) =>
  c.next((f) => (f[0] === 'CLOSED' || f[0] === 'EOSE') && f[1] === subId, timeoutMs)

/**
 * Makes every query fail and sends REQs until the community gives up; the store is healthy again afterwards,
 * so only the give-up is left to recover from. Resolves with each REQ's answer.
 */
async function driveToGiveUp(h: Harness, c: TestClient): Promise<Frame[]> {
  h.store.failNext('query', 1_000)
  const gaveUp = firstValueFrom(h.supervision.pipe(filter((e) => e.type === 'gave-up')))
  const subs = Array.from({ length: FAILURES_TO_GIVE_UP }, (_, i) => `doomed-${i}`)
  // queued behind the crash: each is handled after a restart and crashes it again
  for (const s of subs) c.send(['REQ', s, { kinds: [1] }])
  const answers = await Promise.all(subs.map((s) => closedWith(c, s)))
  await gaveUp
  h.store.failNext('query', 0)
  return answers
}

/** the answer to one REQ on `c` within `ms`, or 'silence' */
async function reqWithin(c: TestClient, subId: string, ms: number): Promise<Frame | 'silence'> {
  c.send(['REQ', subId, { kinds: [1] }])
  return closedWith(c, subId, ms).catch(() => 'silence' as const)
}

describe('a community whose store fails, below the give-up budget', () => {
  it('answers OK false "error:" to each failed save and CLOSED "error:" to each failed REQ and COUNT, then serves again, with live subscribers kept', async () => {
    await withHarness(async (h) => {
      const keys = makeKeys()
      const live = await connect(h.url)
      await reqEvents(live, [{ authors: [keys.pubkey] }], 'live')
      const c = await connect(h.url)

      h.store.failNext('save', 3)
      const failed = [fresh(keys), fresh(keys), fresh(keys)]
      for (const e of failed) expect(await publish(c, e)).toMatchObject({ accepted: false, prefix: 'error' })
      const stored = fresh(keys)
      expect((await publish(c, stored)).accepted).toBe(true)

      h.store.failNext('query', 2)
      for (const s of ['q1', 'q2']) {
        c.send(['REQ', s, { authors: [keys.pubkey] }])
        const answer = await closedWith(c, s)
        expect(answer[0]).toBe('CLOSED')
        expect(prefixOf(String(answer[2]))).toBe('error')
      }
      h.store.failNext('count', 1)
      const counted = await count(c, [{ authors: [keys.pubkey] }])
      expect(Array.isArray(counted) && prefixOf(String(counted[2]))).toBe('error')

      // the store answers again: a failed save was not stored, and sending it again stores it
      expect(idsOf(await reqEvents(c, [{ authors: [keys.pubkey] }]))).toEqual([stored.event.id])
      expect(await count(c, [{ authors: [keys.pubkey] }])).toBe(1)
      expect(await publish(c, failed[0]!)).toEqual({ accepted: true, message: '', prefix: undefined })
      // the subscriber from before the crashes gets what was accepted, and nothing that was refused
      await live.next((f) => f[0] === 'EVENT' && (f[2] as { id: string }).id === failed[0]!.event.id)
      const liveIds = live.frames.filter((f) => f[0] === 'EVENT' && f[1] === 'live').map((f) => (f[2] as { id: string }).id)
      expect(liveIds).toEqual([stored.event.id, failed[0]!.event.id])

      const seen: SupervisionEvent[] = []
      h.supervision.subscribe((e) => seen.push(e))
      expect(seen.filter((e) => e.type === 'crashed')).toHaveLength(3)
      expect(seen.some((e) => e.type === 'gave-up')).toBe(false)
    })
  })
})

describe.concurrent('a community driven past its give-up budget', () => {
  it('answers every REQ that crashed it with CLOSED "error:", reports gave-up, and refuses EVENTs with OK false "error:" while it is down', async () => {
    await withHarness(async (h) => {
      const c = await connect(h.url)
      const answers = await driveToGiveUp(h, c)
      for (const a of answers) {
        expect(a[0]).toBe('CLOSED')
        expect(prefixOf(String(a[2]))).toBe('error')
      }
      const e = fresh(makeKeys())
      expect(await publish(c, e)).toMatchObject({ accepted: false, prefix: 'error' })
    })
  }, 30_000)

  // The Subscribe is a tell (src/actors/connection/connection-actor.ts onReq) whose `false` must be answered:
  // otherwise a REQ on an open connection to a community that gave up (down, not stopped) gets no answer at
  // all, no EOSE and no CLOSED.
  it('answers a REQ with CLOSED "error:" while the community is down, never with silence', async () => {
    await withHarness(async (h) => {
      const c = await connect(h.url)
      await driveToGiveUp(h, c)
      const answer = await reqWithin(c, 'while-down', 3_000)
      expect(answer).not.toBe('silence')
      if (answer !== 'silence') {
        expect(answer[0]).toBe('CLOSED')
        expect(prefixOf(String(answer[2]))).toBe('error')
      }
    })
  }, 30_000)

  // A community that is down keeps its ref (src/relay/gateway.ts onUpgrade): answered like an unknown host,
  // its own host would be refused with HTTP 404 "Not Found".
  it('does not refuse new connections to a community that is down as an unknown host (404)', async () => {
    await withHarness(async (h) => {
      await driveToGiveUp(h, await connect(h.url))
      const outcome = await connect(h.url).then(
        (c) => {
          c.close()
          return 'open'
        },
        (error: Error) => error.message,
      )
      expect(outcome).not.toBe('HTTP 404')
    })
  }, 30_000)

  // A permanent actor that gave up goes down and is respawned (src/actors/kernel): stopped for good, the
  // community would never serve again, on old or new connections, until the process restarted.
  it('respawns the community within ~10 s after it gave up, and serves REQ and EVENT again on connections old and new', async () => {
    await withHarness(async (h) => {
      const old = await connect(h.url)
      await driveToGiveUp(h, old)
      const keys = makeKeys()
      const served = await eventually(
        async () => {
          const c = await connect(h.url).catch(() => undefined)
          if (!c) return false
          const answer = await reqWithin(c, `probe-${Math.random()}`, 500)
          c.close()
          return answer !== 'silence' && answer[0] === 'EOSE'
        },
        (ok) => ok,
        'a REQ on a new connection answered with EOSE',
        { timeoutMs: RESPAWN_DUE_MS, intervalMs: 100 },
      )
      expect(served).toBe(true)
      const fresh1 = await connect(h.url)
      const e = fresh(keys)
      expect((await publish(fresh1, e)).accepted).toBe(true)
      expect(idsOf(await reqEvents(fresh1, [{ ids: [e.event.id] }]))).toEqual([e.event.id])
      // a connection opened before the give-up is served by the new activation too
      const again = await reqWithin(old, 'old-after', 2_000)
      expect(again !== 'silence' && again[0]).toBe('EOSE')
      expect((await publish(old, fresh(keys))).accepted).toBe(true)
    })
  }, 40_000)

  // Readiness names the kernel's unhealthy paths, not only the store's ping: otherwise, with the community
  // down, /health/ready would answer 200 and a load balancer would keep sending clients to it.
  it('reports the community on /health/ready (503, JSON naming community/default) while it is down, and 200 once it is back', async () => {
    await withHarness(async (h) => {
      // what is degraded is an operator's to read (NIP-98); a probe without it learns ready or not
      const ready = async () => {
        const url = `http://127.0.0.1:${h.port}/health/ready`
        const res = await fetch(url, { headers: { Authorization: operatorGetHeader(OPERATOR, url) } })
        return { status: res.status, body: await res.text() }
      }
      expect((await ready()).status).toBe(200)
      await driveToGiveUp(h, await connect(h.url))
      const down = await ready()
      expect(down.status).toBe(503)
      expect(JSON.stringify(JSON.parse(down.body))).toContain(COMMUNITY)
      const back = await eventually(ready, (r) => r.status === 200, 'the relay ready again', {
        timeoutMs: RESPAWN_DUE_MS + 2_000,
        intervalMs: 100,
      })
      expect(back.status).toBe(200)
      expect(back.body).not.toContain(COMMUNITY)
    })
  }, 40_000)
})
