import { join } from 'node:path'
import postgres from 'postgres'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { makeKeys } from '../support/events'
import { eventually } from '../support/eventually'
import { checkRun, StateRecorder, Writer } from '../support/mesh-checker'
import { type MeshCluster, type MeshNode, meshStatus, startMeshCluster } from '../support/mesh-cluster'
import { metric } from '../support/metrics'
import { createTestDatabase, type TestDatabase } from '../support/postgres'
import { type PrivateRedis, startPrivateRedis } from '../support/redis-server'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy'
import { connect } from '../support/ws-client'

/**
 * The relay mesh under faults (issue 12): three `apiary start` processes with the mesh on, one private Redis
 * (so it can be restarted) and one PostgreSQL. Writers on every node change the same channel while a fault is
 * injected; the checker (test/support/mesh-checker.ts) then proves that no acknowledged change was lost, that the final
 * state equals the rows, and that no generation had two writers. The lease is the issue's: 6 s, renewed
 * every 2 s.
 */
let db: TestDatabase
let redis: PrivateRedis
let sql: postgres.Sql
let cluster: MeshCluster | undefined
const proxies: TcpProxy[] = []
beforeAll(async () => {
  db = await createTestDatabase()
  redis = await startPrivateRedis()
  sql = postgres(db.url, { max: 2, onnotice: () => {} })
})
afterEach(async () => {
  await cluster?.close()
  cluster = undefined
  for (const p of proxies.splice(0)) await p.close()
})
afterAll(async () => {
  await sql?.end()
  await redis?.stop()
  await db?.drop()
})

const CHANNEL = 'hive'

async function linked(c: MeshCluster) {
  for (const node of c.nodes) {
    await eventually(
      () => meshStatus(node),
      (s) => s.peers.filter((p) => p.connected).length === c.nodes.length - 1,
      'every node linked to the others',
      { timeoutMs: 20_000, intervalMs: 100 },
    )
  }
}

/** A channel created through node 0, its owner's index, and a recorder of its state on every node. */
async function setup(c: MeshCluster) {
  await linked(c)
  const admin = makeKeys()
  const first = new Writer(c.nodes[0]!, 0, c, admin, CHANNEL, 0)
  const created = await createChannel(c, c.nodes[0]!, admin)
  expect(created).toBe(true)
  void first
  const recorders = await Promise.all(
    c.nodes.map(async (node) => {
      const r = new StateRecorder()
      await r.start(node, c, CHANNEL)
      return r
    }),
  )
  return { admin, recorders, owner: await ownerIndex(c) }
}

async function createChannel(c: MeshCluster, node: MeshNode, admin: ReturnType<typeof makeKeys>): Promise<boolean> {
  const client = await connect(node.url, { host: `${c.community}.test:${new URL(node.url).port}` })
  const { signEvent } = await import('../support/events')
  const e = signEvent(admin, { kind: 9007, tags: [['h', CHANNEL]] })
  client.sendRaw(`["EVENT",${e.raw}]`)
  const ok = await client.next((f) => f[0] === 'OK' && f[1] === e.event.id, 20_000)
  client.close()
  return ok[2] === true
}

async function ownerIndex(c: MeshCluster, among = c.nodes): Promise<number> {
  const statuses = await Promise.all(among.map((n) => meshStatus(n).catch(() => undefined)))
  return among === c.nodes
    ? statuses.findIndex((s) => s?.sessions.some((x) => x.session === `channel:${CHANNEL}` && x.local))
    : c.nodes.indexOf(among[statuses.findIndex((s) => s?.sessions.some((x) => x.session === `channel:${CHANNEL}` && x.local))]!)
}

/** The channel's member rows (admins included), straight from PostgreSQL. */
async function rows(c: MeshCluster): Promise<Set<string>> {
  const found = await sql`SELECT pubkey FROM channel_members WHERE community = ${c.community} AND channel = ${CHANNEL}`
  return new Set(found.map((r) => r.pubkey as string))
}

/** Once quiet: the latest 39002 every node serves, read until it matches the rows (the owner may defer it). */
async function final39002(c: MeshCluster, node: MeshNode, want: Set<string>): Promise<Set<string>> {
  const client = await connect(node.url, { host: `${c.community}.test:${new URL(node.url).port}` })
  try {
    let probe = 0
    return await eventually(
      async () => {
        const subId = `final-${++probe}`
        client.send(['REQ', subId, { kinds: [39002], '#d': [CHANNEL] }])
        const frames = await client.collect(subId)
        client.send(['CLOSE', subId])
        const e = frames[0]?.[2] as { tags: string[][] } | undefined
        return new Set((e?.tags ?? []).filter((t) => t[0] === 'p').map((t) => t[1] ?? ''))
      },
      (got) => got.size === want.size && [...want].every((p) => got.has(p)),
      'a 39002 listing exactly the member rows',
      { timeoutMs: 15_000, intervalMs: 100 },
    )
  } finally {
    client.close()
  }
}

/** Writers on `nodes` run while `fault` runs; then the checker's verdict over what they saw. */
async function underFault(
  c: MeshCluster,
  admin: ReturnType<typeof makeKeys>,
  recorders: StateRecorder[],
  writerNodes: number[],
  fault: () => Promise<void>,
  pauseMs?: number,
) {
  const writers = writerNodes.map((i) => new Writer(c.nodes[i]!, i, c, admin, CHANNEL))
  const running = writers.map((w) => w.run(pauseMs))
  await new Promise((r) => setTimeout(r, 1_500))
  await fault()
  await new Promise((r) => setTimeout(r, 2_000))
  for (const w of writers) w.stop()
  await Promise.all(running)
  const memberRows = await rows(c)
  const live = c.nodes.find((n) => n.process.proc.exitCode === null && n.process.proc.signalCode === null)!
  const final = await final39002(c, live, memberRows)
  memberRows.delete(admin.pubkey)
  for (const r of recorders) r.close()
  return {
    writers,
    problems: checkRun(writers, memberRows, final, admin.pubkey, recorders),
    acked: writers.flatMap((w) => w.ops).filter((o) => o.answer === 'ok').length,
  }
}

describe('the relay mesh under faults (three processes)', () => {
  it('takes over a channel after kill -9 of its owner, under a higher generation, and loses no acknowledged change', async () => {
    cluster = await startMeshCluster(3, { redisUrl: redis.url, databaseUrl: db.url })
    const c = cluster
    const { admin, recorders, owner } = await setup(c)
    expect(owner).toBeGreaterThanOrEqual(0)
    const others = [0, 1, 2].filter((i) => i !== owner)
    const before = (await meshStatus(c.nodes[owner]!)).sessions.find((s) => s.session === `channel:${CHANNEL}`)
    let killedAt = 0
    let suspectedAfterMs = Infinity
    const killedRuntime = (await meshStatus(c.nodes[owner]!)).runtime
    const run = await underFault(c, admin, recorders, [0, 1, 2], async () => {
      killedAt = performance.now()
      c.nodes[owner]!.process.proc.kill('SIGKILL')
      await c.nodes[owner]!.process.exited
      // both survivors name the dead node suspect (phi accrual), within 6 s of the kill
      for (const i of others) {
        await eventually(
          () => meshStatus(c.nodes[i]!),
          (s) => s.peers.some((p) => p.runtime === killedRuntime && p.suspect),
          'both survivors naming the killed node suspect',
          { timeoutMs: 10_000, intervalMs: 100 },
        )
      }
      suspectedAfterMs = performance.now() - killedAt
      // the next owner answers within TTL + a retry
      await eventually(
        () => meshStatus(c.nodes[others[0]!]!),
        (s) => s.sessions.some((x) => x.session === `channel:${CHANNEL}` && x.generation > (before?.generation ?? 0)),
        'a survivor owning the channel under a higher generation',
        { timeoutMs: 15_000, intervalMs: 100 },
      )
    })
    const takeoverMs = performance.now() - killedAt
    expect(run.problems).toEqual([])
    expect(run.acked).toBeGreaterThan(10)
    const after = (await meshStatus(c.nodes[others[0]!]!)).sessions.find((s) => s.session === `channel:${CHANNEL}`)
    expect(after?.generation).toBeGreaterThan(before?.generation ?? Infinity)
    expect(after?.owner).not.toBe(before?.owner)
    // an acknowledged change after the kill exists: the survivors went on
    expect(run.writers.filter((w) => w.index !== owner).some((w) => w.ops.some((o) => o.answer === 'ok' && o.atMs > killedAt + 1))).toBe(
      true,
    )
    expect(takeoverMs).toBeLessThan(20_000)
    expect(suspectedAfterMs).toBeLessThan(6_000)
  }, 90_000)

  it('refuses everything a SIGSTOPped owner sends after it wakes past its lease: it writes nothing, gives the session up and counts the lost lease', async () => {
    cluster = await startMeshCluster(3, { redisUrl: redis.url, databaseUrl: db.url })
    const c = cluster
    const { admin, recorders, owner } = await setup(c)
    const stale = c.nodes[owner]!
    // Writers without a pause keep work at the owner (three changes in flight, one applied at a time), so it is
    // likely stopped with work in hand. Whether any of it reaches the owner before it learns its lease is gone is
    // a race (two CI runs counted no fence refusal), so the refusals are counted in the session actor's own test
    // (test/actors/mesh/session-actor.test.ts); here what must hold every time: nothing stale written, one owner.
    const run = await underFault(
      c,
      admin,
      recorders,
      [0, 1, 2],
      async () => {
        stale.process.proc.kill('SIGSTOP')
        await new Promise((r) => setTimeout(r, 8_000)) // > the 6 s lease
        stale.process.proc.kill('SIGCONT')
        await eventually(
          () => meshStatus(stale),
          (s) => !s.sessions.some((x) => x.session === `channel:${CHANNEL}` && x.local),
          'the woken owner giving the session up',
          { timeoutMs: 10_000, intervalMs: 100 },
        )
      },
      0,
    )
    expect(run.problems).toEqual([])
    const owners = new Set(
      (await Promise.all(c.nodes.map(meshStatus))).flatMap((s) => s.sessions.filter((x) => x.local).map(() => s.runtime)),
    )
    expect(owners.size).toBeLessThanOrEqual(1)
    // the woken owner learnt it had lost the lease (a refused renewal, or its own write fenced off), and counted it
    expect(await metric(stale, 'apiary_mesh_leases_lost_total')).toBeGreaterThan(0)
  }, 90_000)

  it('changes no owner and suspects no peer when a node stalls for 2 s', async () => {
    cluster = await startMeshCluster(3, { redisUrl: redis.url, databaseUrl: db.url })
    const c = cluster
    const { admin, recorders, owner } = await setup(c)
    const before = (await meshStatus(c.nodes[owner]!)).sessions.find((s) => s.session === `channel:${CHANNEL}`)
    const stalled = c.nodes[owner]!
    let suspectedByStalled = false
    const run = await underFault(c, admin, recorders, [0, 1, 2], async () => {
      stalled.process.proc.kill('SIGSTOP')
      await new Promise((r) => setTimeout(r, 2_000))
      stalled.process.proc.kill('SIGCONT')
      for (let i = 0; i < 10; i++) {
        const s = await meshStatus(stalled)
        if (s.peers.some((p) => p.suspect)) suspectedByStalled = true
        await new Promise((r) => setTimeout(r, 200))
      }
    })
    expect(run.problems).toEqual([])
    expect(suspectedByStalled).toBe(false)
    const after = (await meshStatus(c.nodes[owner]!)).sessions.find((s) => s.session === `channel:${CHANNEL}`)
    expect([after?.owner, after?.generation, after?.local]).toEqual([before?.owner, before?.generation, true])
  }, 90_000)

  it('keeps one owner per generation across a Redis restart that loses every lease and counter', async () => {
    cluster = await startMeshCluster(3, { redisUrl: redis.url, databaseUrl: db.url })
    const c = cluster
    const { admin, recorders } = await setup(c)
    const generations: number[] = []
    const run = await underFault(c, admin, recorders, [0, 1, 2], async () => {
      generations.push((await meshStatus(c.nodes[0]!)).sessions.find((s) => s.session === `channel:${CHANNEL}`)?.generation ?? 0)
      await redis.kill()
      await new Promise((r) => setTimeout(r, 1_000))
      await redis.restart()
      await new Promise((r) => setTimeout(r, 8_000))
    })
    expect(run.problems).toEqual([])
    // writes went on after the restart, under generations above every one stored before it
    const stored = await sql`SELECT generation FROM mesh_sessions WHERE community = ${c.community} AND session = ${`channel:${CHANNEL}`}`
    expect(Number(stored[0]?.generation)).toBeGreaterThanOrEqual(generations[0] ?? 1)
    expect(run.acked).toBeGreaterThan(10)
  }, 90_000)

  it('refuses nothing it acknowledged when the tunnel to the owner is cut and restored', async () => {
    // every node advertises a proxy in front of its mesh port: cutting one proxy cuts the tunnels dialed to it
    cluster = await startMeshCluster(0, { redisUrl: redis.url, databaseUrl: db.url })
    const c = cluster
    const { freePort } = await import('../support/redis-server')
    for (let i = 0; i < 3; i++) {
      const meshPort = await freePort()
      const proxy = await startTcpProxy(meshPort)
      proxies.push(proxy)
      await c.start({ APIARY_MESH_PORT: String(meshPort), APIARY_MESH_ADVERTISED_ADDRESS: `127.0.0.1:${proxy.port}` })
    }
    const { admin, recorders, owner } = await setup(c)
    const run = await underFault(c, admin, recorders, [0, 1, 2], async () => {
      proxies[owner]!.cut()
      await new Promise((r) => setTimeout(r, 4_000))
      proxies[owner]!.restore()
      await new Promise((r) => setTimeout(r, 6_000))
    })
    expect(run.problems).toEqual([])
    expect(run.acked).toBeGreaterThan(10)
  }, 90_000)

  it('keeps its owner and loses nothing when the owner’s wall clock steps an hour forward', async () => {
    // every node preloads a clock that SIGUSR2 steps; only the owner is signalled
    const stepper = join(process.cwd(), 'test', 'support', 'clock-step.cjs')
    cluster = await startMeshCluster(3, { redisUrl: redis.url, databaseUrl: db.url, env: { NODE_OPTIONS: `--require ${stepper}` } })
    const c = cluster
    const { admin, recorders, owner } = await setup(c)
    const stepped = c.nodes[owner]!
    const before = (await meshStatus(stepped)).sessions.find((s) => s.session === `channel:${CHANNEL}`)
    const run = await underFault(c, admin, recorders, [0, 1, 2], async () => {
      stepped.process.proc.kill('SIGUSR2')
      // three renewals and a registry reconcile on the stepped clock
      await new Promise((r) => setTimeout(r, 6_000))
    })
    expect(run.problems).toEqual([])
    expect(run.acked).toBeGreaterThan(10)
    expect(stepped.process.proc.exitCode).toBe(null)
    const after = (await meshStatus(stepped)).sessions.find((s) => s.session === `channel:${CHANNEL}`)
    expect([after?.owner, after?.generation, after?.local]).toEqual([before?.owner, before?.generation, true])
    // its state events are dated by its clock: an hour ahead, and still strictly after every earlier version
    const latest = recorders[0]!.versions.filter((v) => v.kind === 39002).at(-1)
    expect(latest?.created_at).toBeGreaterThan(Math.floor(Date.now() / 1000) + 3_000)
  }, 90_000)
})
