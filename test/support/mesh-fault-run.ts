// One mesh fault run: a channel created on a three-node cluster, a recorder of its state on every node,
// writers on every node before, during and after a fault, and the checker's verdict over all they saw. The waits
// are on what the nodes show (/mesh/status, /metrics) and on what the writers were answered.
import type postgres from 'postgres'
import { expect } from 'vitest'
import type { MeshStatus } from '../../src/protocols/mesh/status'
import { makeKeys, signEvent, type TestKeys } from './events'
import { eventually } from './eventually'
import { checkRun, StateRecorder, Writer } from './mesh-checker'
import { type MeshCluster, type MeshNode, meshStatus } from './mesh-cluster'
import { metric } from './metrics'
import { connect } from './ws-client'

export const CHANNEL = 'hive'
/** Changes each writer has had acknowledged before the fault, and each one still running after it. */
const ACKED_BEFORE = 5
const ACKED_AFTER = 10
export const LEASES_LOST = 'apiary_mesh_leases_lost_total'

export const sessionOf = (s: MeshStatus) => s.sessions.find((x) => x.session === `channel:${CHANNEL}`)
/** whether `s` is the node that owns the channel, under a generation above `generation` */
export const ownsAbove = (s: MeshStatus, generation: number) =>
  s.sessions.some((x) => x.session === `channel:${CHANNEL}` && x.local && x.generation > generation)

export async function linked(c: MeshCluster) {
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
export async function setupChannel(c: MeshCluster) {
  await linked(c)
  const admin = makeKeys()
  const created = await createChannel(c, c.nodes[0]!, admin)
  expect(created).toBe(true)
  const recorders = await Promise.all(
    c.nodes.map(async (node) => {
      const r = new StateRecorder()
      await r.start(node, c, CHANNEL)
      return r
    }),
  )
  return { admin, recorders, owner: await ownerIndex(c) }
}

async function createChannel(c: MeshCluster, node: MeshNode, admin: TestKeys): Promise<boolean> {
  const client = await connect(node.url, { host: `${c.community}.test:${new URL(node.url).port}` })
  const e = signEvent(admin, { kind: 9007, tags: [['h', CHANNEL]] })
  client.sendRaw(`["EVENT",${e.raw}]`)
  const ok = await client.next((f) => f[0] === 'OK' && f[1] === e.event.id, 20_000)
  client.close()
  return ok[2] === true
}

async function ownerIndex(c: MeshCluster): Promise<number> {
  const statuses = await Promise.all(c.nodes.map((n) => meshStatus(n).catch(() => undefined)))
  return statuses.findIndex((s) => s?.sessions.some((x) => x.session === `channel:${CHANNEL}` && x.local))
}

/** Every node's /mesh/status (for a wait that any of them may satisfy) */
export const statusesOf = (nodes: MeshNode[]) => Promise.all(nodes.map(meshStatus))

/** The apiary_mesh_leases_lost_total of every node, summed */
export const leasesLost = async (c: MeshCluster) =>
  (await Promise.all(c.nodes.map((n) => metric(n, LEASES_LOST)))).reduce((a, b) => a + b, 0)

/** The channel's member rows (admins included), straight from PostgreSQL. */
async function rows(c: MeshCluster, sql: postgres.Sql): Promise<Set<string>> {
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

/** Until every writer still running has had `n` changes acknowledged since `sinceMs`. */
const acknowledged = (writers: Writer[], sinceMs: number, n: number, when: string) =>
  eventually(() => writers.every((w) => w.gone || w.acknowledgedSince(sinceMs) >= n), `${n} changes acknowledged per writer ${when}`, {
    timeoutMs: 30_000,
    intervalMs: 50,
  })

/**
 * A writer on every node runs while `fault` runs (with `pauseMs` between its changes); then the checker's
 * verdict over what they saw, with the member rows read through `sql`.
 */
export async function underFault(
  c: MeshCluster,
  sql: postgres.Sql,
  { admin, recorders }: { admin: TestKeys; recorders: StateRecorder[] },
  fault: (writers: Writer[]) => Promise<void>,
  pauseMs?: number,
) {
  const writers = c.nodes.map((node, i) => new Writer(node, i, c, admin, CHANNEL))
  const running = writers.map((w) => w.run(pauseMs))
  // the checker needs changes acknowledged on every node before the fault, and on every node still up after it
  await acknowledged(writers, 0, ACKED_BEFORE, 'before the fault')
  await fault(writers)
  await acknowledged(writers, performance.now(), ACKED_AFTER, 'after the fault')
  for (const w of writers) w.stop()
  await Promise.all(running)
  const memberRows = await rows(c, sql)
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
