import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { consoleOf } from '../../src/relay/relay'
import { makeKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { openFailingSqliteStore } from '../support/failing-event-store'
import type { TestRelay } from '../support/relay'
import { auth, client, fresh, publish, relayUrlOf } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'
import { connect } from '../support/ws-client'

// fast publications, so a node shows up (and turns gone) within a second or two
const STATUS_INTERVAL_MS = 250

const sourceOf = (r: TestRelay) => {
  const source = consoleOf(r.relay)
  if (!source) throw new Error('relay not listening')
  return source
}

describe("a node's status and hot connections", () => {
  const relays = useRelays()

  it('lists a client flooding frames first among the hot connections, with its pubkey and IP', async () => {
    const r = await relays.start({ console: { statusIntervalMs: STATUS_INTERVAL_MS } })
    const flooder = await client(r)
    const quiet = await client(r)
    const keys = makeKeys()
    expect((await auth(flooder, keys, relayUrlOf(r))).accepted).toBe(true)
    expect((await auth(quiet, makeKeys(), relayUrlOf(r))).accepted).toBe(true)
    const flood = setInterval(() => {
      for (let i = 0; i < 20; i++) flooder.send(['CLOSE', `s${i}`])
    }, 10)
    try {
      const top = await eventually(
        () => sourceOf(r).hot('inFramesPerSecond', 'all'),
        (rows) => rows[0]?.pubkeys[0] === keys.pubkey && rows[0].inFramesPerSecond > 100,
        'the flooder first in the hot list',
      )
      expect(top[0]).toMatchObject({ ip: '127.0.0.1', community: 'default', node: sourceOf(r).node })
      expect(top.length).toBeLessThanOrEqual(20)
    } finally {
      clearInterval(flood)
    }
  })

  it("publishes the node's connections, accepted events by kind and readiness on its board", async () => {
    const r = await relays.start({ console: { statusIntervalMs: STATUS_INTERVAL_MS } })
    const c = await client(r)
    const keys = makeKeys()
    await auth(c, keys, relayUrlOf(r))
    const views = await eventually(
      async () => {
        await publish(c, fresh(keys, { kind: 1, content: 'counted' }))
        return sourceOf(r).nodes()
      },
      // connections are tallied by the hot-connections pass, once a second
      (v) =>
        (v[0]?.status.communities.find((x) => x.id === 'default')?.eventsPerSecondByKind['1'] ?? 0) > 0 && v[0]?.status.connections === 1,
      'kind 1 events and the connection counted in the status',
    )
    expect(views).toHaveLength(1)
    expect(views[0]).toMatchObject({ gone: false, status: { ready: true, degraded: [], connections: 1 } })
    expect(views[0]!.status.eventsInPerSecond).toBeGreaterThan(0)
    expect(views[0]!.status.rssBytes).toBeGreaterThan(0)
    expect(sourceOf(r).samples(0)[sourceOf(r).node]!.length).toBeGreaterThan(0)
  })
})

describe("a node's supervision events on its status", () => {
  const relays = useRelays()

  it('shows a community that crashed within 2 s, and a REQ refused with CLOSED "invalid:" among the refusals', async () => {
    const faults = openFailingSqliteStore(join(mkdtempSync(join(tmpdir(), 'apiary-console-')), 'events.sqlite'))
    const r = await relays.start({ console: { statusIntervalMs: STATUS_INTERVAL_MS } }, undefined, { eventStore: faults.store })
    const c = await connect(r.url)
    faults.failNext('query', 1)
    c.send(['REQ', 'broken', { kinds: [1] }])
    expect(String((await c.next((f) => f[0] === 'CLOSED' && f[1] === 'broken'))[2])).toMatch(/^error: /)
    c.send(['REQ', 'malformed', { kinds: 'x' }])
    expect(String((await c.next((f) => f[0] === 'CLOSED' && f[1] === 'malformed'))[2])).toMatch(/^invalid: /)
    const crashedAtMs = Date.now()
    // a rate lasts one interval: remember having seen it
    let refusedSeen = false
    const views = await eventually(
      () => {
        const v = sourceOf(r).nodes()
        refusedSeen ||= (v[0]?.status.refusalsPerSecondByPrefix.invalid ?? 0) > 0
        return v
      },
      (v) => refusedSeen && v[0]?.status.supervision.some((row) => row.type === 'crashed' && row.path === 'community/default') === true,
      'the crash and the refusal on the board',
      { timeoutMs: 2_000 },
    )
    const crash = views[0]!.status.supervision.find((row) => row.type === 'crashed')!
    expect(crash).toMatchObject({ node: sourceOf(r).node, supervisor: 'root/community' })
    expect(crash.atMs).toBeGreaterThanOrEqual(crashedAtMs - 1_000)
    expect(crash.detail).toContain('StoreError')
  })
})

describe('the status board of a cluster', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)

  it("lists every node on each node's board, and a stopped node as gone", async () => {
    const {
      nodes: [a, b],
    } = await cluster.nodes(2, { console: { statusIntervalMs: STATUS_INTERVAL_MS } })
    const ids = [sourceOf(a!).node, sourceOf(b!).node].sort()
    for (const r of [a!, b!])
      await eventually(
        () =>
          sourceOf(r)
            .nodes()
            .map((v) => v.status.node),
        (nodes) => ids.every((id) => nodes.includes(id)),
        'both nodes on the board',
      )
    const bId = sourceOf(b!).node
    await b!.close()
    const seen = await eventually(
      () => sourceOf(a!).nodes(),
      (v) => v.find((x) => x.status.node === bId)?.gone === true,
      'the stopped node shown as gone',
    )
    expect(seen.find((x) => x.status.node === sourceOf(a!).node)?.gone).toBe(false)
  })
})
