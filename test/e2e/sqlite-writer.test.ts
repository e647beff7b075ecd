import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openSqliteEventStore } from '../../src/infra/store/sqlite/sqlite-event-store'
import { makeKeys, signEvent } from '../support/events'
import { eventually } from '../support/eventually'
import { metric } from '../support/metrics'
import { startTestRelay, type TestRelay } from '../support/relay'
import { connect } from '../support/ws-client'

describe('the SQLite writer thread, seen from a client', () => {
  let relay: TestRelay | undefined
  const dir = mkdtempSync(join(tmpdir(), 'apiary-writer-e2e-'))
  afterEach(async () => {
    await relay?.close()
    relay = undefined
    rmSync(dir, { recursive: true, force: true })
  })

  it('answers the batch a dying writer held with OK false "error:", stores the next events, and counts the restart', async () => {
    const store = openSqliteEventStore({ file: join(dir, 'events.sqlite'), groupCommitMaxEvents: 100, groupCommitMaxDelayMs: 0 })
    relay = await startTestRelay({}, dir, { eventStore: store })
    const alice = makeKeys()
    const c = await connect(relay.url)
    const first = signEvent(alice, { content: 'first' })
    c.send(['EVENT', first.event])
    expect(await c.ok(first.event.id)).toEqual(['OK', first.event.id, true, ''])
    expect(await metric(relay, 'apiary_store_writer_thread')).toBe(1)

    store.crashWriterOnNextCommitForTest()
    const lost = signEvent(alice, { content: 'lost' })
    c.send(['EVENT', lost.event])
    const refused = await c.ok(lost.event.id)
    expect(refused[2]).toBe(false)
    expect(refused[3]).toMatch(/^error: /)

    // the same connection goes on: the resend is stored (it never committed), and so is a new event
    const next = signEvent(alice, { content: 'next' })
    for (const e of [lost, next]) {
      c.send(['EVENT', e.event])
      expect((await c.ok(e.event.id))[2]).toBe(true)
    }
    c.send(['REQ', 'all', { authors: [alice.pubkey] }])
    const page = await c.collect('all')
    expect(page.map((f) => (f[2] as { content: string }).content).sort()).toEqual(['first', 'lost', 'next'])
    expect(await metric(relay, 'apiary_store_writer_restarts_total')).toBe(1)
    expect(await metric(relay, 'apiary_store_writer_thread')).toBe(1)
  })

  it('shows the durability in force and where reads ran in its metrics', async () => {
    for (const [durability, synchronous] of [
      ['process', 1],
      ['power', 2],
    ] as const) {
      relay = await startTestRelay({ store: { durability } }, mkdtempSync(join(tmpdir(), 'apiary-durability-')))
      // the writer thread reports its connection's pragma once it has opened it
      const r = relay
      await eventually(
        () => metric(r, 'apiary_store_synchronous'),
        (n) => n === synchronous,
        `apiary_store_synchronous ${synchronous}`,
      )
      const c = await connect(relay.url)
      let n = 0
      // one id is one candidate row: answered on the event loop once the read workers are up (before, every
      // read is the main thread's anyway), never moved to a worker
      await eventually(
        async () => {
          c.send(['REQ', `one-${++n}`, { ids: ['0'.repeat(64)] }])
          await c.collect(`one-${n}`)
          return metric(r, 'apiary_store_reads_inline_total')
        },
        (inline) => inline >= 1,
        'a read answered on the event loop',
      )
      expect(await metric(relay, 'apiary_store_reads_moved_to_worker_total')).toBe(0)
      c.close()
      await relay.close()
      relay = undefined
    }
  })
})
