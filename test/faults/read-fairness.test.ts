import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { DEFAULT_COMMUNITY } from '../../src/relay/relay'
import { makeKeys } from '../support/events'
import { signEventFast } from '../support/fast-sign'
import { useRelays } from '../support/relay-fixtures'
import { connect, type Frame, type TestClient } from '../support/ws-client'

/**
 * The node's readers are shared by its communities (docs/architecture.md §9): one community's clients keeping
 * every read worker busy with slow reads that stay within their budget leave another community's one-row REQ
 * waiting for at most about one of those reads, not behind all of them.
 */

const BETA = { id: 'beta', hosts: ['beta.test'] }
const COMMON_ROWS = 150_000
/** REQs community A keeps in flight: every read it may have running (ReadSlots), a queue behind both workers */
const A_READS = 16

/** rows tagged `t` "common" written straight into the store's file, as a large community's history */
function insertCommonRows(dataDir: string, community: string, n: number): void {
  const db = new Database(join(dataDir, 'apiary.sqlite'))
  try {
    const event = db.prepare(
      'INSERT INTO events (community, id, pubkey, kind, created_at, d_tag, expires_at, raw) VALUES (?, ?, ?, 1, ?, NULL, NULL, ?)',
    )
    const tag = db.prepare("INSERT INTO tags (community, name, value, kind, created_at, event_seq) VALUES (?, 't', 'common', 1, ?, ?)")
    const pubkey = randomBytes(32).toString('hex')
    const now = Math.floor(Date.now() / 1000)
    db.transaction(() => {
      for (let i = 0; i < n; i++) {
        const id = randomBytes(32).toString('hex')
        const createdAt = now - i
        const raw = JSON.stringify({
          id,
          pubkey,
          created_at: createdAt,
          kind: 1,
          tags: [['t', 'common']],
          content: '',
          sig: '0'.repeat(128),
        })
        const { lastInsertRowid } = event.run(community, id, pubkey, createdAt, raw)
        tag.run(community, createdAt, lastInsertRowid)
      }
    })()
  } finally {
    db.close()
  }
}

/** the probe: "common" drives and no row has any of 17 random `p` values, so every "common" row is read */
const slowFilter = () => ({ '#t': ['common'], '#p': Array.from({ length: 17 }, () => randomBytes(32).toString('hex')) })

const answerOf = (c: TestClient, subId: string, timeoutMs = 30_000): Promise<Frame> =>
  c.next((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === subId, timeoutMs)

/** keeps `n` slow REQs in flight on `c`: each answered one is closed and sent again */
function keepReading(c: TestClient, n: number): { answered: () => number; stop: () => void } {
  let answered = 0
  let stopped = false
  let next = 0
  const send = () => c.send(['REQ', `slow${next++}`, slowFilter()])
  c.ws.on('message', (data) => {
    const f = JSON.parse(data.toString()) as Frame
    if ((f[0] !== 'EOSE' && f[0] !== 'CLOSED') || !String(f[1]).startsWith('slow')) return
    answered++
    if (f[0] === 'EOSE') c.send(['CLOSE', f[1]])
    if (!stopped) send()
  })
  for (let i = 0; i < n; i++) send()
  return { answered: () => answered, stop: () => (stopped = true) }
}

describe("one community's slow reads on every read worker", () => {
  const relays = useRelays()

  it("leave another community's one-row REQ waiting for about one of them, not for their whole queue", async () => {
    // reads of a few hundred ms are within these budgets: what is measured is the queue, not a budget stop
    const r = await relays.start({
      communities: [DEFAULT_COMMUNITY, BETA],
      limits: { maxRowsExamined: 100_000_000, readBudgetMs: 20_000 },
      store: { readWorkers: 2, queryTimeoutMs: 30_000 },
    })
    insertCommonRows(r.dataDir, DEFAULT_COMMUNITY.id, COMMON_ROWS)
    const b = await connect(r.url, { host: 'beta.test' })
    const note = signEventFast(makeKeys(), { kind: 1, created_at: Math.floor(Date.now() / 1000), content: 'beta', tags: [] })
    b.sendRaw(`["EVENT",${note.raw}]`)
    expect((await b.ok(note.event.id))[2]).toBe(true)

    // one of A's reads alone: what a read of B may fairly wait for
    const a = await Promise.all(Array.from({ length: 4 }, () => connect(r.url)))
    let started = performance.now()
    a[0]!.send(['REQ', 'alone', slowFilter()])
    expect((await answerOf(a[0]!, 'alone'))[0]).toBe('EOSE')
    const aloneMs = performance.now() - started

    const loads = a.map((c) => keepReading(c, A_READS / a.length))
    try {
      // once one of A's reads was answered, both workers are busy and the rest of A's reads wait for them
      await a[0]!.next((f) => f[0] === 'EOSE' && String(f[1]).startsWith('slow'), 60_000)
      const waits: number[] = []
      for (let i = 0; i < 5; i++) {
        started = performance.now()
        b.send(['REQ', `one${i}`, { ids: [note.event.id] }])
        expect((await answerOf(b, `one${i}`, 60_000))[0]).toBe('EOSE')
        waits.push(performance.now() - started)
        b.send(['CLOSE', `one${i}`])
      }
      const worst = Math.max(...waits)
      console.log(
        `read fairness: one slow read of A alone ${aloneMs.toFixed(0)} ms; B's one-row REQ under A's load ${waits.map((w) => w.toFixed(0)).join(', ')} ms (worst ${worst.toFixed(0)}); A answered ${loads.reduce((n, l) => n + l.answered(), 0)}`,
      )
      // the load was real: each of A's reads took long enough that a queue of them is seconds
      expect(aloneMs).toBeGreaterThan(100)
      // served at the next worker that frees: at most one of A's reads, plus a margin for a loaded machine;
      // behind A's queue (14 reads on 2 workers) it would be about seven of them
      expect(worst).toBeLessThan(2 * aloneMs + 300)
    } finally {
      for (const l of loads) l.stop()
    }
  }, 180_000)
})
