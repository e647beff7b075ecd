// Relay processes (`apiary start`) with the mesh on, sharing one Redis and one PostgreSQL: the cluster the mesh
// fault tests inject faults into, and what each node says about itself (/mesh/status, /metrics).
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type MeshStatus, parseMeshStatus } from '../../src/protocols/mesh/status'
import { makeKeys } from './events'
import { httpGet } from './http'
import { operatorGetHeader } from './nip86-client'
import { freePort } from './redis-server'
import { GENEROUS_ENV, type RelayProcess, startRelayProcess } from './relay-process'

export interface MeshNode {
  process: RelayProcess
  url: string
  /** its HTTP (and WebSocket) port */
  port: number
  meshPort: number
  dataDir: string
}

export interface MeshCluster {
  community: string
  host: string
  env: Record<string, string>
  nodes: MeshNode[]
  start(extraEnv?: Record<string, string>): Promise<MeshNode>
  close(): Promise<void>
}

/** `n` nodes serving one fresh community; `env` adds settings (a private Redis, lease timings). */
export async function startMeshCluster(
  n: number,
  base: { redisUrl: string; databaseUrl: string; env?: Record<string, string> },
): Promise<MeshCluster> {
  const community = `m-${randomBytes(5).toString('hex')}`
  const host = '127.0.0.1'
  const env: Record<string, string> = {
    ...GENEROUS_ENV,
    APIARY_REDIS_URL: base.redisUrl,
    APIARY_DATABASE_URL: base.databaseUrl,
    APIARY_RELAY_SECRET_KEY: randomBytes(32).toString('hex'),
    APIARY_COMMUNITIES: JSON.stringify([{ id: community, hosts: [`${community}.test`] }]),
    APIARY_MESH: 'on',
    APIARY_OPERATOR_PUBKEYS: JSON.stringify([MESH_OPERATOR.pubkey]),
    APIARY_VERIFY_THREADS: '1',
    ...base.env,
  }
  const nodes: MeshNode[] = []
  const cluster: MeshCluster = {
    community,
    host,
    env,
    nodes,
    async start(extraEnv = {}) {
      const meshPort = Number(extraEnv.APIARY_MESH_PORT ?? (await freePort()))
      const dataDir = mkdtempSync(join(tmpdir(), 'apiary-mesh-'))
      const process = await startRelayProcess(['--port', '0', '--data-dir', dataDir], {
        ...env,
        APIARY_MESH_PORT: String(meshPort),
        ...extraEnv,
      })
      const node = { process, url: process.url, port: Number(new URL(process.url).port), meshPort, dataDir }
      nodes.push(node)
      return node
    },
    async close() {
      await Promise.all(
        nodes.map(async (node) => {
          if (node.process.proc.exitCode === null && node.process.proc.signalCode === null) {
            node.process.proc.kill('SIGCONT')
            node.process.proc.kill('SIGKILL')
            await node.process.exited
          }
          rmSync(node.dataDir, { recursive: true, force: true })
        }),
      )
    },
  }
  for (let i = 0; i < n; i++) await cluster.start()
  return cluster
}

/** The operator whose NIP-98 the nodes' /mesh/status asks for (its detail names private channels). */
const MESH_OPERATOR = makeKeys()

/**
 * What the node says about itself on /mesh/status (2 s at most: a stopped process never answers). `aheadSeconds`:
 * how far the node's wall clock runs ahead, so the NIP-98 token is dated by its clock.
 */
export async function meshStatus(node: MeshNode, aheadSeconds = 0): Promise<MeshStatus> {
  const createdAt = Math.floor(Date.now() / 1000) + aheadSeconds
  const auth = operatorGetHeader(MESH_OPERATOR, `http://127.0.0.1:${node.port}/mesh/status`, createdAt)
  const { body } = await httpGet(node, '/mesh/status', { Authorization: auth }, 2_000)
  const parsed = parseMeshStatus(JSON.parse(body))
  if (!parsed.ok) throw new Error(parsed.error)
  return parsed.value
}
