import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { SupervisionEvent } from '../../src/actors/kernel'
import type { EventStore } from '../../src/infra/store/event-store'
import { StoreError } from '../../src/infra/store/event-store'
import { openSqliteEventStore } from '../../src/infra/store/sqlite/sqlite-event-store'
import { createRelay, type Relay } from '../../src/relay/relay'
import { makeKeys, signEvent } from '../support/events'
import { eventually } from '../support/eventually'
import { connect } from '../support/ws-client'

/** A real SQLite store whose next `failQueries` queries fail as if the disk had gone away. */
function storeFailingQueries(file: string) {
  const inner = openSqliteEventStore({ file, groupCommitMaxEvents: 100, groupCommitMaxDelayMs: 0 })
  const control = { failQueries: 0 }
  const store: EventStore = {
    save: (c, e, r) => inner.save(c, e, r),
    query: (c, f, o) => (control.failQueries-- > 0 ? Promise.reject(new StoreError('disk gone')) : inner.query(c, f, o)),
    count: (c, f, o) => inner.count(c, f, o),
    deleteEvents: (c, ids) => inner.deleteEvents(c, ids),
    ping: () => inner.ping(),
    close: () => inner.close(),
  }
  return { store, control }
}

describe('the supervision tree of a running node', () => {
  let relay: Relay | undefined
  afterEach(async () => {
    await relay?.close()
    relay = undefined
  })

  it('starts the node-level actors under root/node and names each event’s level', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'apiary-tree-'))
    const events: SupervisionEvent[] = []
    relay = createRelay({ port: 0, host: '127.0.0.1', dataDir: dir, logLevel: 'silent', verifyThreads: 1 })
    relay.supervision$.subscribe((e) => events.push(e))
    await relay.listen()
    const levels = new Map(events.flatMap((e) => (e.type === 'started' ? [[e.path, e.supervisor] as const] : [])))
    expect(levels.get('node/verifier')).toBe('root/node/verifier')
    expect(levels.get('node/store-writer')).toBe('root/node/store-writer')
    expect(levels.get('community/default')).toBe('root/community')
  })
})

describe('community supervision', () => {
  let relay: Relay | undefined
  afterEach(async () => {
    await relay?.close()
    relay = undefined
  })

  it('answers CLOSED "error:" on a store fault, restarts the community with backoff, and keeps live subscribers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'apiary-sup-'))
    const { store, control } = storeFailingQueries(join(dir, 'events.sqlite'))
    const events: SupervisionEvent[] = []
    relay = createRelay({ port: 0, host: '127.0.0.1', dataDir: dir, logLevel: 'silent', verifyThreads: 1 }, { eventStore: store })
    relay.supervision$.subscribe((e) => events.push(e))
    const url = await relay.listen()

    const live = await connect(url)
    live.send(['REQ', 'live', { kinds: [1] }])
    await live.next((f) => f[0] === 'EOSE' && f[1] === 'live')

    control.failQueries = 1
    const c = await connect(url)
    c.send(['REQ', 'broken', { kinds: [1] }])
    const closed = await c.next((f) => f[0] === 'CLOSED' && f[1] === 'broken')
    expect(String(closed[2])).toMatch(/^error: /)

    const restarted = () => events.some((e) => e.type === 'restarted' && e.path === 'community/default')
    await eventually(restarted, 'community/default restarted')
    expect(events.find((e) => e.type === 'crashed' && e.path === 'community/default')).toBeDefined()
    expect(events.find((e) => e.type === 'backoff' && e.path === 'community/default')).toBeDefined()

    const keys = makeKeys()
    const { event } = signEvent(keys, { kind: 1, content: 'after the restart' })
    c.send(['EVENT', event])
    expect((await c.ok(event.id))[2]).toBe(true)
    const delivered = await live.next((f) => f[0] === 'EVENT' && f[1] === 'live')
    expect((delivered[2] as { id: string }).id).toBe(event.id)
    live.close()
    c.close()
  })
})
