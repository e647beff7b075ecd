import { afterEach, describe, expect, it } from 'vitest'
import type { ConsoleSnapshot } from '../../../src/protocols/console'
import { type ConsoleServer, newSigner, openStream, type SseReader, signedIn, startConsoleServer } from '../../support/console-server'
import { createFakeConsoleSource, type FakeConsoleSource } from '../../support/console-source'

const operator = newSigner()
const admin = newSigner()
let server: ConsoleServer | undefined
const readers: SseReader[] = []
afterEach(async () => {
  for (const r of readers.splice(0)) r.close()
  await server?.close()
  server = undefined
})

async function start(opts: Parameters<typeof startConsoleServer>[1] = {}): Promise<{ s: ConsoleServer; source: FakeConsoleSource }> {
  const source = createFakeConsoleSource({ 'st-alpha': [admin.pubkey], 'st-beta': [] }, [operator.pubkey])
  server = await startConsoleServer(source, opts)
  return { s: server, source }
}

async function stream(s: ConsoleServer, cookie: string, query: string) {
  const r = await openStream(s.origin, cookie, query)
  readers.push(r)
  return r
}

const snapshotOf = async (r: SseReader): Promise<ConsoleSnapshot> => {
  const e = await r.next()
  expect(e.event).toBe('snapshot')
  return JSON.parse(e.data) as ConsoleSnapshot
}

describe('the console live stream', () => {
  it('sends a snapshot at once and another a second later; the charts in full first, then only new points', async () => {
    const { s, source } = await start()
    const { cookie } = await signedIn(s.origin, operator)
    const r = await stream(s, cookie, 'view=overview')
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('text/event-stream')
    expect(r.headers.get('content-security-policy')).toContain("default-src 'none'")
    const first = await snapshotOf(r)
    expect(first.nodes.map((n) => n.status.node)).toEqual(['n1', 'n2'])
    expect(first.samples?.n1).toHaveLength(3)
    source.sampleRows.n1?.push({ ...(source.sampleRows.n1[0] as NonNullable<(typeof source.sampleRows.n1)[0]>), atMs: 9_000 })
    const second = await snapshotOf(r)
    expect(second.atMs - first.atMs).toBeGreaterThanOrEqual(900)
    expect(second.samples?.n1?.map((p) => p.atMs)).toEqual([9_000])
    expect(second.samples?.n2).toEqual([])
  })

  it('shows an admin only their community: its node figures, hot connections and agents, and no mesh', async () => {
    const { s } = await start()
    const { cookie } = await signedIn(s.origin, admin)
    const hot = await snapshotOf(await stream(s, cookie, 'view=hot'))
    for (const n of hot.nodes) {
      expect(n.status.communities.map((c) => c.id)).toEqual(['st-alpha'])
      expect(n.status.mesh).toBeUndefined()
    }
    expect(hot.hot?.rows.length).toBeGreaterThan(0)
    expect(hot.hot?.rows.every((h) => h.community === 'st-alpha')).toBe(true)
    const agents = await snapshotOf(await stream(s, cookie, 'view=agents'))
    expect(agents.agents?.rows.map((a) => a.community)).toEqual(['st-alpha', 'st-alpha', 'st-alpha'])
    const mesh = await snapshotOf(await stream(s, cookie, 'view=mesh'))
    expect(mesh.mesh).toBeUndefined()
    const other = await openStream(s.origin, cookie, 'view=agents&community=st-beta')
    expect(other.status).toBe(403)
  })

  it('pages and filters agents, asks the nodes to publish them, and refuses a page over 500', async () => {
    const { s, source } = await start()
    const { cookie } = await signedIn(s.origin, operator)
    const page = await snapshotOf(await stream(s, cookie, 'view=agents&state=SUSPECT&offset=0&limit=1'))
    expect(page.agents?.total).toBe(2)
    expect(page.agents?.rows).toHaveLength(1)
    expect(page.agents?.rows[0]?.state).toBe('SUSPECT')
    expect(source.watched).toBeGreaterThan(0)
    const tooMany = await openStream(s.origin, cookie, 'view=agents&limit=501')
    expect(tooMany.status).toBe(400)
    expect(await snapshotOf(await stream(s, cookie, 'view=agents&limit=500'))).toBeDefined()
  })

  it('sends supervision events in full first, then only those published since', async () => {
    const { s, source } = await start()
    source.addSupervision('n1', { atMs: 1, type: 'crashed', path: 'community/st-alpha', supervisor: 'root', detail: 'Error: boom' })
    source.addSupervision('n2', { atMs: 2, type: 'restarted', path: 'community/st-beta', supervisor: 'root', detail: '' })
    const { cookie } = await signedIn(s.origin, operator)
    const r = await stream(s, cookie, 'view=supervision')
    expect((await snapshotOf(r)).supervision?.map((x) => x.type)).toEqual(['crashed', 'restarted'])
    source.addSupervision('n1', { atMs: 3, type: 'gave-up', path: 'community/st-alpha', supervisor: 'root', detail: '' })
    expect((await snapshotOf(r)).supervision?.map((x) => [x.node, x.seq, x.type])).toEqual([['n1', 2, 'gave-up']])
  })

  it('answers 429 "rate-limited:" past 4 streams per sign-in and past the per-node cap', async () => {
    const { s } = await start({ streamLimits: { intervalMs: 1_000, maxPerSession: 4, maxPerNode: 6 } })
    const { cookie } = await signedIn(s.origin, operator)
    for (let i = 0; i < 4; i++) expect((await stream(s, cookie, 'view=overview')).status).toBe(200)
    const fifth = await openStream(s.origin, cookie, 'view=overview')
    expect(fifth.status).toBe(429)
    const other = await signedIn(s.origin, operator)
    for (let i = 0; i < 2; i++) expect((await stream(s, other.cookie, 'view=overview')).status).toBe(200)
    const seventh = await openStream(s.origin, other.cookie, 'view=overview')
    expect(seventh.status).toBe(429)
  })

  it('ends the stream with "expired" when the session ends', async () => {
    let clock = Date.now()
    const { s } = await start({ sessionTtlSeconds: 60, nowMs: () => clock })
    const { cookie } = await signedIn(s.origin, operator)
    const r = await stream(s, cookie, 'view=overview')
    await snapshotOf(r)
    clock += 60_000
    expect((await r.next()).event).toBe('expired')
    await expect(r.next()).rejects.toThrow('stream ended')
  })

  it('answers 401 to a stream without a session', async () => {
    const { s } = await start()
    const r = await openStream(s.origin, '', 'view=overview')
    expect(r.status).toBe(401)
  })
})
