// Relay processes (`apiary start`) with the mesh on, sharing one Redis and one PostgreSQL: the cluster the mesh
// fault tests inject faults into, and what each node says about itself (/mesh/status, /metrics).
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type MeshStatus, parseMeshStatus } from '../../src/protocols/mesh/status'
import { freePort } from './redis-server'
import { GENEROUS_ENV, type RelayProcess, startRelayProcess } from './relay-process'

export interface MeshNode {
  process: RelayProcess
  url: string
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
      const node = { process, url: process.url, meshPort, dataDir }
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

export function httpGetJson(url: string, path: string, timeoutMs = 2_000): Promise<{ status: number; json: unknown }> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path, method: 'GET', timeout: timeoutMs }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => {
        body += d
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: body ? (JSON.parse(body) as unknown) : undefined }))
    })
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end()
  })
}

export async function meshStatus(node: MeshNode): Promise<MeshStatus> {
  const { json } = await httpGetJson(node.url, '/mesh/status')
  const parsed = parseMeshStatus(json)
  if (!parsed.ok) throw new Error(parsed.error)
  return parsed.value
}

/** The value of one Prometheus counter (summed over labels, or one label set when `labels` is given). */
export async function counter(node: MeshNode, name: string, labels = ''): Promise<number> {
  const { hostname, port } = new URL(node.url)
  const text: string = await new Promise((resolve, reject) => {
    request({ host: hostname, port, path: '/metrics', method: 'GET' }, (res) => {
      let body = ''
      res.on('data', (d: Buffer) => {
        body += d.toString()
      })
      res.on('end', () => resolve(body))
    })
      .on('error', reject)
      .end()
  })
  let sum = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue
    if (labels && !line.includes(labels)) continue
    const value = Number(line.slice(line.lastIndexOf(' ') + 1))
    if (Number.isFinite(value)) sum += value
  }
  return sum
}

/** Polls until `holds` (every 100 ms, at most `ms`); the last value either way. */
export async function until<T>(probe: () => Promise<T>, holds: (v: T) => boolean, ms: number): Promise<T> {
  const deadline = performance.now() + ms
  for (;;) {
    const v = await probe().catch(() => undefined)
    if (v !== undefined && holds(v)) return v
    if (performance.now() > deadline) {
      if (v === undefined) throw new Error('probe kept failing')
      return v
    }
    await new Promise((r) => setTimeout(r, 100))
  }
}
