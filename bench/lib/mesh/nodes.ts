// The processes of the mesh scenario: `apiary start` from the built package (bin/apiary.js → dist/, copied
// once per run: snapshotPackage), as an operator runs it, with the mesh on, all sharing one fresh PostgreSQL
// database, the shared Redis, one relay key and one community. Not the IPC relay child: the scenario signals
// the real process (SIGKILL, SIGTERM's drain) and reads its `/mesh/status`, nothing else.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { copyFileSync, cpSync, createWriteStream, mkdirSync, rmSync, type WriteStream } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { type MeshStatus, operatorGetAuthorization } from '../../internal'
import { knobs } from '../../knobs'
import { createBenchDatabase } from '../cluster-backends'
import { BENCH_DATA_DIR } from '../fixtures'

const repo = (f: string) => fileURLToPath(new URL(`../../../${f}`, import.meta.url))

/**
 * Budgets high enough that one client sending back to back never meets a rate limit (as the test suite's
 * relay processes have them; the bench does not import test code).
 */
const GENEROUS_ENV: Record<string, string> = {
  APIARY_RATE_LIMITS_HUMAN_EVENTS_RATE_PER_SECOND: '100000',
  APIARY_RATE_LIMITS_HUMAN_EVENTS_BURST: '100000',
  APIARY_RATE_LIMITS_HUMAN_REQS_RATE_PER_SECOND: '100000',
  APIARY_RATE_LIMITS_HUMAN_REQS_BURST: '100000',
  APIARY_RATE_LIMITS_CONNECTIONS_PER_IP_RATE_PER_SECOND: '100000',
  APIARY_RATE_LIMITS_CONNECTIONS_PER_IP_BURST: '100000',
  APIARY_RATE_LIMITS_AUTH_PER_IP_RATE_PER_SECOND: '100000',
  APIARY_RATE_LIMITS_AUTH_PER_IP_BURST: '100000',
  APIARY_LIMITS_MAX_PENDING_UPGRADES_PER_IP: '100000',
}

export interface MeshNode {
  name: string
  url: string
  proc: ChildProcess
  /** performance.now() when the process was spawned / printed that it listens */
  spawnedAt: number
  listeningAt: number
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** the runtime id, once /mesh/status was read (its registry record is deleted at the end) */
  runtime?: string
}

export interface MeshCluster {
  community: string
  /** the community's host name; clients send `Host: <host>:<port>` */
  host: string
  /** every node started, live or not */
  started: MeshNode[]
  /** spawn one more node; resolves once it listens */
  start(): Promise<MeshNode>
  status(node: MeshNode): Promise<MeshStatus>
  /** polls until each of `nodes` lists `nodes.length - 1` connected peers; the time it took from `since` */
  waitLinked(nodes: MeshNode[], since: number, timeoutMs?: number): Promise<number>
  close(): Promise<void>
}

export const isAlive = (n: MeshNode) => n.proc.exitCode === null && n.proc.signalCode === null

const POLL_MS = 50

/** A fresh database and community; `logDir` gets each node's stdout and stderr (warn and above). */
export async function openMeshCluster(dataDir: (label: string) => string, logDir: string): Promise<MeshCluster> {
  const pkg = snapshotPackage()
  const db = await createBenchDatabase().catch((error: unknown) => {
    rmSync(pkg, { recursive: true, force: true })
    throw error
  })
  const community = `bench-mesh-${randomBytes(5).toString('hex')}`
  const host = `${community}.test`
  // the relay key is an operator's: /mesh/status answers it alone (a NIP-98 GET)
  const relaySecretKey = randomBytes(32).toString('hex')
  const env: Record<string, string> = {
    ...Object.fromEntries(
      Object.entries(process.env).filter((e): e is [string, string] => !e[0].startsWith('APIARY_') && e[1] !== undefined),
    ),
    ...GENEROUS_ENV,
    APIARY_REDIS_URL: knobs.redisUrl,
    APIARY_DATABASE_URL: db.url,
    APIARY_RELAY_SECRET_KEY: relaySecretKey,
    APIARY_COMMUNITIES: JSON.stringify([{ id: community, hosts: [host] }]),
    APIARY_MESH: 'on',
    // any free port: a node advertises the port it bound (src/relay/mesh.ts)
    APIARY_MESH_PORT: '0',
    APIARY_LOG_LEVEL: 'warn',
  }
  mkdirSync(logDir, { recursive: true })
  const started: MeshNode[] = []
  /** every process spawned, listening or not yet: close() must not miss one still starting */
  const procs = new Set<ChildProcess>()
  const logs: WriteStream[] = []
  const running = (p: ChildProcess) => p.exitCode === null && p.signalCode === null
  // a bench that dies must not leave relays behind (under npm they also follow npm: src/cli/start.ts)
  const killAll = () => {
    for (const p of procs) if (running(p)) p.kill('SIGKILL')
    rmSync(pkg, { recursive: true, force: true })
  }
  process.on('exit', killAll)

  const cluster: MeshCluster = {
    community,
    host,
    started,
    start() {
      const name = `node${procs.size + 1}`
      const log = createWriteStream(join(logDir, `${name}.log`))
      logs.push(log)
      const spawnedAt = performance.now()
      const proc = spawn(process.execPath, [join(pkg, 'bin', 'apiary.js'), 'start', '--port', '0', '--data-dir', dataDir(name)], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      procs.add(proc)
      let out: string | undefined = ''
      let tail = ''
      proc.stderr?.on('data', (d: Buffer) => {
        log.write(d)
        tail = (tail + d.toString()).slice(-2_000)
      })
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        proc.once('exit', (code, signal) => resolve({ code, signal })),
      )
      return new Promise<MeshNode>((resolve, reject) => {
        const timer = setTimeout(() => {
          proc.kill('SIGKILL')
          reject(new Error(`${name} did not listen within 60 s: ${tail.slice(-300)}`))
        }, 60_000)
        proc.stdout?.on('data', (d: Buffer) => {
          log.write(d)
          if (out === undefined) return
          out += d.toString()
          const m = /apiary relay listening on (ws:\/\/\S+)/.exec(out)
          if (!m) return
          out = undefined
          clearTimeout(timer)
          const node: MeshNode = { name, url: m[1]!, proc, spawnedAt, listeningAt: performance.now(), exited }
          started.push(node)
          resolve(node)
        })
        void exited.then(({ code, signal }) => {
          clearTimeout(timer)
          reject(new Error(`${name} exited (${code ?? signal}) before listening: ${tail.slice(-300)}`))
        })
      })
    },
    async status(node) {
      const url = new URL('/mesh/status', node.url.replace(/^ws/, 'http'))
      const headers = { Authorization: operatorGetAuthorization(relaySecretKey, url.href) }
      const res = await fetch(url, { headers, signal: AbortSignal.timeout(2_000) })
      if (!res.ok) throw new Error(`${node.name} /mesh/status: HTTP ${res.status}`)
      const s = (await res.json()) as MeshStatus
      node.runtime = s.runtime
      return s
    },
    async waitLinked(nodes, since, timeoutMs = 60_000) {
      const deadline = performance.now() + timeoutMs
      for (;;) {
        const views = await Promise.all(nodes.map((n) => cluster.status(n).catch(() => undefined)))
        const now = performance.now()
        if (views.every((s) => s && s.peers.filter((p) => p.connected).length >= nodes.length - 1)) return now - since
        if (now > deadline) {
          const seen = views.map((s, i) => `${nodes[i]!.name}: ${s ? s.peers.filter((p) => p.connected).length : '?'}`).join(', ')
          throw new Error(`nodes not linked within ${timeoutMs / 1000} s (connected peers: ${seen})`)
        }
        await sleep(POLL_MS)
      }
    },
    async close() {
      await Promise.all(
        [...procs].filter(running).map(async (p) => {
          const exited = new Promise((r) => p.once('exit', r))
          p.kill('SIGCONT')
          p.kill('SIGKILL')
          await exited
        }),
      )
      process.off('exit', killAll)
      for (const log of logs) log.end()
      const redis = new Redis(knobs.redisUrl, { lazyConnect: true, connectTimeout: 3_000, maxRetriesPerRequest: 1 })
      redis.on('error', () => {})
      try {
        await redis.connect()
        await unlinkMatching(redis, `apiary:{${community}}:*`)
        // a node killed with SIGKILL leaves its readiness record until it expires (45 s)
        const records = started.flatMap((n) => (n.runtime ? [`apiary:mesh:ready:${n.runtime}`] : []))
        if (records.length) await redis.unlink(...records)
      } catch {
        // clean-up is best effort: the keys are this run's own and the records expire
      } finally {
        redis.disconnect()
        rmSync(pkg, { recursive: true, force: true })
        await db.drop()
      }
    },
  }
  return cluster
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * A copy of the built package (bin/, dist/, package.json) for this run's nodes: `npm run build` and the test
 * suite's set-up replace dist/ (remove, then rename) whenever src/ changed, and a node started in that window
 * fails (a worker's .mjs missing), or runs other code than its peers. Inside the repository, so that the
 * copy resolves the repository's node_modules.
 */
function snapshotPackage(): string {
  const dir = join(BENCH_DATA_DIR, `mesh-package-${process.pid}`)
  rmSync(dir, { recursive: true, force: true })
  cpSync(repo('dist'), join(dir, 'dist'), { recursive: true })
  cpSync(repo('bin'), join(dir, 'bin'), { recursive: true })
  copyFileSync(repo('package.json'), join(dir, 'package.json'))
  return dir
}

/** UNLINK every key matching `pattern` (bounded SCAN, never FLUSHALL: the server is shared). */
async function unlinkMatching(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0'
  for (let i = 0; i < 100_000; i++) {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1_000)
    if (keys.length) await redis.unlink(...keys)
    cursor = next
    if (cursor === '0') return
  }
}
